/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  The cycle runner: the background worker that runs the cycles of a
 *	  queue of tables (or a resync, or a repair), each in its own
 *	  transactions, with its retries, and the helpers that load chunks of a
 *	  first load along with it (worker.c).
 *
 * Nothing calls worker.c: the caller's side (launch.c) registers its
 * entry points with the postmaster and hands it a WorkerQueue in a DSM
 * segment.  The runner is the only caller of a cycle's steps (CycleRun,
 * CycleRunFull, CycleRepairDay, CycleAnalyzeIfChanged), of load.c, and of
 * ChecksRun and HistoryAfterCycle, and the code that begins and ends a
 * cycle's transactions (load.c commits between a first load's chunks, on
 * the runner's behalf).  verify.c reads a cut and a window's bound
 * through cycle.c too (CycleFreezeCut, CycleWindowBound), in its caller's
 * transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_WORKER_H
#define TREBLE_SYNC_WORKER_H

#include "postgres.h"

#include "fmgr.h"
#include "port/atomics.h"
#include "utils/timestamp.h"

#include "lockwait.h"
#include "progress.h"
#include "testhook.h"
#include "treble_sync.h"

/*
 * The segment a caller hands its workers: a table of contents under a
 * magic number of its own ("Trb4"), with the queue (its settings and its
 * items) and one WorkerSlot per worker.  A worker's index among the slots
 * is in its bgw_extra.
 */
#define WORKER_SLOT_MAGIC 0x54726234
#define WORKER_QUEUE_KEY 1
#define WORKER_SLOTS_KEY 2

/*
 * Where an item of the queue is: not yet looked at (past next), taken by a
 * worker that runs (or ran) its cycle, or handed back by a worker that
 * could not run it (a ClickHouse server with other TLS settings than its
 * driver was set up with), for a worker that can.
 */
#define WORKER_ITEM_QUEUED 0
#define WORKER_ITEM_TAKEN 1
#define WORKER_ITEM_HANDED_BACK 2

/* One cycle to run: a table's, or a group's. */
typedef struct WorkerItem
{
	int32		table_id;		/* of a group's cycle: its first member */
	int32		group_id;		/* sync_group(): the group; 0 if none */
	int64		run_id;			/* set by the worker once its run row exists
								 * (of a group: its group run) */
	pg_atomic_uint32 state;		/* WORKER_ITEM_* */
} WorkerItem;

/*
 * What a worker reports to its caller about the cycle it runs now, and
 * what the caller tells it.
 */
typedef struct WorkerSlot
{
	int32		table_id;		/* the table whose cycle runs; 0 between cycles */
	bool		blocked_by_caller;	/* set by the caller before it stops the worker */
	char		blockers[LOCKWAIT_BLOCKERS_LEN];	/* who the worker last waited for */
	ProgressState progress;		/* the worker's progress, for NOTICEs */
} WorkerSlot;

/*
 * The cycles a caller hands its workers, which take them one after another
 * (pg_atomic_fetch_add on next, then the items handed back) until none is
 * left for them, and the caller's settings, the same for all of them.
 */
typedef struct WorkerQueue
{
	Oid			database_id;
	Oid			session_user_id;
	Oid			user_id;
	bool		full;			/* resync(): pull everything, make the copy equal */
	Timestamp	repair_day;		/* repair(): the event day to refresh; 0 if none */
	int			freshness_alert;	/* the caller's settings, which the worker */
	int			run_retention;	/* takes over (a SET does not reach it otherwise) */
	int			lock_timeout;
	bool		read_ahead;
	int			cursor_max_lead;
	char		test_pause_at[TESTHOOK_PHASE_LEN];	/* testhook.c */
	int			nworkers;		/* slots */
	int			nitems;
	pg_atomic_uint32 next;		/* the next item to look at; >= nitems: none */
	pg_atomic_uint32 taken;		/* items taken (WORKER_ITEM_TAKEN) */
	WorkerItem	items[FLEXIBLE_ARRAY_MEMBER];
} WorkerQueue;

extern PGDLLEXPORT void treble_sync_worker_main(Datum main_arg);
extern PGDLLEXPORT void treble_sync_chunk_worker_main(Datum main_arg);

#endif							/* TREBLE_SYNC_WORKER_H */
