/*-------------------------------------------------------------------------
 *
 * stage.h
 *	  The staging table: created per pull, filled from a remote result with
 *	  COPY, bad rows set aside (stage.c).
 *
 * stage.c owns the staging table's name; every statement that reads the
 * staging table names it through STAGE_TABLE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_STAGE_H
#define TREBLE_SYNC_STAGE_H

#include "postgres.h"

#include "localsql.h"
#include "odbc.h"

/*
 * Where the rows of a pull go.  With a copy, each batch is written straight
 * into it, and only a batch the copy refuses (a key it already holds, a
 * value its types reject) goes to the staging table, for the merge.
 */
typedef struct StageTarget
{
	Oid			stage_relid;	/* the staging table */
	Oid			copy_relid;		/* written first; InvalidOid: staging only */
	int64		direct_rows;	/* rows written straight into the copy */
	int64		staged_rows;	/* rows sent to the staging table */
	bool		read_ahead;		/* StagePull may read in a second process */
} StageTarget;

struct ReadAheadSink;

extern Oid	StageCreate(TableConfig *cfg);
extern void StageDrop(void);
extern void StageLoad(StageTarget *target, TableConfig *cfg, OdbcConn *conn,
					  SQLHSTMT stmt, CycleResult *result);
extern void StagePull(StageTarget *target, TableConfig *cfg, OdbcConn *conn,
					  const char *sql, int nparams, const OdbcParam *params,
					  CycleResult *result);
extern void StageRead(TableConfig *cfg, OdbcConn *conn, const char *pull, Size pull_len,
					  struct ReadAheadSink *sink);

extern void StageResolveQuarantine(TableConfig *cfg, int64 run_id);

#endif							/* TREBLE_SYNC_STAGE_H */
