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

#include "odbc.h"

extern Oid	StageCreate(TableConfig *cfg);
extern void StageLoad(Oid stage_relid, TableConfig *cfg, OdbcConn *conn,
					  SQLHSTMT stmt, CycleResult *result);

#endif							/* TREBLE_SYNC_STAGE_H */
