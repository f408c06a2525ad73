/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  Reading and writing the extension's tables: registrations, the run
 *	  log, chunked loads, quarantine, the mask salt, quality checks and
 *	  their results, verifications (catalog.c).
 *
 * Every write runs as the extension's owner, and only catalog.c switches
 * to it; callers never spell a catalog table's SQL themselves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_CATALOG_H
#define TREBLE_SYNC_CATALOG_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/tuplestore.h"

#include "treble_sync.h"

/*
 * The settings of a quality check, in add_check()'s order of arguments
 * (its arguments 4 to 11): min and max (numeric), tolerance (real),
 * max_age (interval), ref_table (regclass), ref_column (text), last_n
 * (integer), within (real).
 */
typedef enum CheckSetting
{
	CHECK_MIN_VALUE,
	CHECK_MAX_VALUE,
	CHECK_TOLERANCE,
	CHECK_MAX_AGE,
	CHECK_REF_TABLE,
	CHECK_REF_COLUMN,
	CHECK_LAST_N,
	CHECK_WITHIN,
	CHECK_NSETTINGS
} CheckSetting;

extern TableConfig *CatalogGetTable(const char *name, bool missing_ok);
extern TableConfig *CatalogGetTableArg(FunctionCallInfo fcinfo, int argno);
extern TableConfig *CatalogGetTableById(int32 table_id);
extern bool CatalogTableChangedHere(int32 table_id);
extern List *CatalogEnabledTableIds(const char *server);
extern int64 CatalogInsertRun(TableConfig *cfg, const char *status, Oid runner);
extern int	CatalogFailStaleRuns(TableConfig *cfg);
extern void CatalogFinishRun(int64 run_id, CycleResult *result);
extern void CatalogFailRun(int64 run_id, const char *error);
extern void CatalogSetWatermark(int32 table_id, const char *watermark);
extern void CatalogBumpRevision(int32 table_id);
extern void CatalogLockRegistration(TableConfig *cfg);
extern void CatalogSetHistory(int32 table_id, Interval *keep, Oid history_relid,
							  TimestampTz from);
extern bool CatalogRunIsRunning(int64 run_id);
extern Datum CatalogRunRow(int64 run_id);
extern void CatalogPutRunRow(Tuplestorestate *store, int64 run_id);
extern Datum CatalogInsertTable(TableConfig *cfg, Oid owner);
extern char *CatalogTableUsingLocal(Oid relid);
extern void CatalogStartLoad(int32 table_id, const char *cut, List *chunks);
extern bool CatalogClaimChunk(int32 table_id, int64 run_id, LoadChunk *chunk);
extern void CatalogOpenChunks(int32 table_id);
extern void CatalogFinishChunk(int32 table_id, int chunk, int64 run_id, CycleResult *r);
extern void CatalogChunkFailed(int32 table_id, int chunk, const char *error, bool reopen);
extern void CatalogLoadState(int32 table_id, int *chunks, int *done, char **first_error);
extern void CatalogEndLoad(int32 table_id);
extern Datum CatalogUpdateTable(TableConfig *cfg, bool reset);
extern void CatalogDeleteTable(int32 table_id);
extern void CatalogAfterRun(int64 run_id);
extern bytea *CatalogMaskSalt(Oid owner);
extern void CatalogSetRunDetails(int64 run_id, int attempts, const char *cut,
								 const char *drift, const char *warnings);
extern Datum CatalogSetRemoteColumns(TableConfig *cfg);
/* A row set aside under on_bad_row 'quarantine', to be kept (CatalogQuarantine) */
typedef struct QuarantineRow
{
	const char *key;			/* or NULL: then row_digest */
	const char *column;
	const char *raw;
	const char *reason;
	const char *cursor_value;
	const char *row_digest;
} QuarantineRow;

extern int64 CatalogQuarantine(TableConfig *cfg, int64 run_id, const QuarantineRow *rows,
							   int nrows);
extern int64 CatalogQuarantineFailedRow(const char *table_name, int64 run_id, const char *key,
										const char *column, const char *raw, const char *reason,
										const char *cursor_value);
extern bool CatalogQuarantinedVersions(TableConfig *cfg, Datum *keys, Datum *versions);
extern void CatalogResolveQuarantine(TableConfig *cfg, int64 run_id, Datum keys);
extern void CatalogInsertCheckResults(int64 run_id, const char *table_name, const char *json);
extern Datum CatalogInsertCheck(int32 table_id, const char *kind, List *columns,
								const NullableDatum settings[CHECK_NSETTINGS],
								const char *severity);
extern bool CatalogCheckTable(int64 check_id, Oid *owner, char **name);
extern void CatalogDeleteCheck(int64 check_id);
extern bool CatalogHasRowChecks(int32 table_id);
extern void CatalogRecordVerification(const char *table_name, const char *cut, int days,
									  int mismatched, bool checksum);
extern void CatalogAddLateness(int32 table_id, const char *kind, int n,
							   const int32 *from_hours, const int32 *to_hours,
							   const int64 *rows, const int64 *outside, const double *max_hours);
extern void CatalogSetLateOutside(int64 run_id, int64 rows);
extern bool CatalogGetGroup(const char *name, int32 *group_id, Oid *owner, List **members);
extern char *CatalogTableGroup(int32 table_id);
extern char *CatalogGroupName(int32 group_id);
extern int32 CatalogInsertGroup(const char *name, Oid owner);
extern void CatalogSetGroupMembers(int32 group_id, List *table_ids);
extern void CatalogDeleteGroup(int32 group_id);
extern Datum CatalogGroupRow(int32 group_id);
extern int64 CatalogInsertGroupRun(const char *group_name, const char *status, Oid owner,
								   Oid runner);
extern void CatalogFinishGroupRun(int64 group_run_id, const char *status, const char *error);
extern void CatalogSetRunGroupRun(int64 run_id, int64 group_run_id);
extern List *CatalogGroupRunRuns(int64 group_run_id);
extern List *CatalogEnabledGroupIds(const char *server);
extern void CatalogFailGroupRunIfRunning(int64 group_run_id, const char *error);
extern void CatalogRefuseGroupMember(TableConfig *cfg, const char *funcname);

#endif							/* TREBLE_SYNC_CATALOG_H */
