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

/*
 * The staging table of a pull, a temporary table dropped at commit.  The
 * install script's run_checks() spells it out as pg_temp.treble_sync_stage.
 */
#define STAGE_TABLE_NAME "treble_sync_stage"
#define STAGE_TABLE "pg_temp." STAGE_TABLE_NAME

extern Oid	StageCreate(TableConfig *cfg);
extern void StageLoad(Oid stage_relid, TableConfig *cfg, OdbcConn *conn,
					  SQLHSTMT stmt, CycleResult *result);

#endif							/* TREBLE_SYNC_STAGE_H */
