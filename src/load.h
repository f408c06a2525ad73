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

extern bool LoadBegin(TableConfig *cfg, OdbcConn *conn, Timestamp *cut, int *todo);
extern void LoadChunks(TableConfig *cfg, OdbcConn *conn, int64 run_id, Timestamp cut);
extern void LoadFinish(TableConfig *cfg, OdbcConn *conn, Timestamp cut, CycleResult *result);

#endif							/* TREBLE_SYNC_LOAD_H */
