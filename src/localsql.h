/*-------------------------------------------------------------------------
 *
 * localsql.h
 *	  Pieces of the SQL run on the local copy, each built in one place
 *	  (localsql.c).  The remote counterpart is deparse.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_LOCALSQL_H
#define TREBLE_SYNC_LOCALSQL_H

#include "postgres.h"

#include "treble_sync.h"

extern char *LocalTableName(Oid relid);
extern char *LocalColumnList(List *columns, const char *alias);
extern char *LocalColumnOperator(TableConfig *cfg, const char *column, int which);
extern char *LocalKeyJoin(TableConfig *cfg, const char *a, const char *b);
extern char *LocalCoalescedColumns(List *columns, const char *a, const char *b);
extern char *LocalNewerVersion(TableConfig *cfg, const char *a, const char *b);
extern char *LocalSetList(TableConfig *cfg, const char *alias);
extern uint64 LocalRunSql(const char *sql, int nargs, Oid *types, Datum *values, int expected);

#endif							/* TREBLE_SYNC_LOCALSQL_H */
