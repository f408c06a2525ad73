/*-------------------------------------------------------------------------
 *
 * load.h
 *	  Chunked first loads in many short transactions (load.c).
 *
 * Called only by the worker, which also starts the helpers that load
 * chunks alongside it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_LOAD_H
#define TREBLE_SYNC_LOAD_H

#include "postgres.h"

#include "treble_sync.h"

/*
 * Commit the work so far and go on in a new transaction: the cycle
 * runner's (worker.c), the only code that begins and ends a cycle's
 * transactions.  A chunked load calls it where it must commit.
 */
typedef void (*LoadCommitFunc) (TableConfig *cfg);

extern bool LoadBegin(TableConfig *cfg, OdbcConn *conn, LoadCommitFunc commit,
					  Timestamp *cut, int *todo);
extern void LoadChunks(TableConfig *cfg, OdbcConn *conn, int64 run_id, Timestamp cut,
					   LoadCommitFunc commit);
extern void LoadFinish(TableConfig *cfg, OdbcConn *conn, LoadCommitFunc commit,
					   Timestamp cut, CycleResult *result);

#endif							/* TREBLE_SYNC_LOAD_H */
