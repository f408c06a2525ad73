/*-------------------------------------------------------------------------
 *
 * cycle.h
 *	  The steps of a sync cycle in every mode, run in the caller's
 *	  transaction (cycle.c).
 *
 * Needs no ODBC type: the connection is passed through opaque.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_CYCLE_H
#define TREBLE_SYNC_CYCLE_H

#include "postgres.h"

#include "treble_sync.h"
#include "foreign/foreign.h"

/* A statement of a cycle, as explain_cycle() shows it (CycleExplain()). */
typedef struct CycleStatement
{
	const char *side;			/* "remote" or "local" */
	const char *step;			/* the step that runs it */
	const char *sql;
} CycleStatement;

extern List *CycleExplain(TableConfig *cfg, OdbcConn *conn);
extern void CycleRun(TableConfig *cfg, OdbcConn *conn, CycleResult *result);
extern void CycleAnalyzeIfChanged(TableConfig *cfg, CycleResult *result);
extern void CycleRunFull(TableConfig *cfg, OdbcConn *conn, CycleResult *result);
extern void CycleRepairDay(TableConfig *cfg, OdbcConn *conn, Timestamp day,
						   CycleResult *result);
extern bool CycleFreezeCut(TableConfig *cfg, OdbcConn *conn, int64 *cut);
extern bool CycleCutOfCopy(TableConfig *cfg, int64 *cut);
extern List *CyclePlanChunks(TableConfig *cfg, OdbcConn *conn, Timestamp cut);
extern void CycleLoadChunk(TableConfig *cfg, OdbcConn *conn, Timestamp cut,
						   LoadChunk *chunk, CycleResult *result);
extern void CycleFinishLoad(TableConfig *cfg, OdbcConn *conn, Timestamp cut,
							CycleResult *result);
extern Timestamp CycleWindowBound(TableConfig *cfg, Timestamp cut);

#endif							/* TREBLE_SYNC_CYCLE_H */
