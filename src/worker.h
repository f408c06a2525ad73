/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  Running cycles in background workers, and waiting for them (worker.c).
 *
 * The SQL entry points (sync.c, verify.c) start cycles only through here;
 * the worker is the only caller of cycle.c's and load.c's machinery.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_WORKER_H
#define TREBLE_SYNC_WORKER_H

#include "postgres.h"

#include "treble_sync.h"
#include "fmgr.h"
#include "postmaster/bgworker.h"

extern int64 WorkerRunCycle(int32 table_id, bool full);
extern int64 WorkerRunRepair(int32 table_id, Timestamp day);
extern int64 WorkerRunGroup(int32 group_id, int32 first_table_id);
extern List *WorkerRunCycles(List *table_ids, int max_parallel);
extern bool WorkerTryLockTable(int32 table_id);
extern void WorkerDescribe(BackgroundWorker *bgw, const char *function, const char *name);
extern void WorkerInitHelper(Oid database_id, Oid session_user_id, Oid user_id,
							 int lock_timeout);
extern OdbcConn *WorkerConnectWarehouse(TableConfig *cfg, MemoryContext cxt);
extern bool WorkerWasSignalled(void);

/*
 * Keeping warehouse values out of the errors and log lines of a cycle:
 * around each COPY (stage.c), and for every error stored or logged.
 */
typedef struct WorkerCopyGuard
{
	ErrorContextCallback *outer;	/* the error context stack COPY runs without */
	struct WorkerCopyGuard *previous;	/* a COPY this one runs inside, or NULL */
} WorkerCopyGuard;

extern void WorkerCopyBegin(WorkerCopyGuard *guard);
extern void WorkerCopyEnd(WorkerCopyGuard *guard);
extern void WorkerScrubError(ErrorData *edata);
extern char *WorkerRedactQuoted(const char *message);
extern PGDLLEXPORT void treble_sync_worker_main(Datum main_arg);
extern PGDLLEXPORT void treble_sync_chunk_worker_main(Datum main_arg);

#endif							/* TREBLE_SYNC_WORKER_H */
