/*-------------------------------------------------------------------------
 *
 * localsql.h
 *	  The SQL run on the local copy and its history, each statement built
 *	  in one place (localsql.c).  The remote counterpart is deparse.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_LOCALSQL_H
#define TREBLE_SYNC_LOCALSQL_H

#include "postgres.h"

#include "treble_sync.h"

/*
 * The staging table of a pull, a temporary table dropped at commit.  The
 * install script's run_checks() spells it out as pg_temp.treble_sync_stage.
 */
#define STAGE_TABLE_NAME "treble_sync_stage"
#define STAGE_TABLE "pg_temp." STAGE_TABLE_NAME

/* The hot window's keys and cursors, when hot_window_check is 'keys'. */
#define WINDOW_KEYS_NAME "treble_sync_window_keys"
#define WINDOW_KEYS_TABLE "pg_temp." WINDOW_KEYS_NAME

/* The statements on those tables that need no piece of a registration */
#define LOCAL_ANALYZE_STAGE "ANALYZE " STAGE_TABLE
#define LOCAL_DROP_STAGE "DROP TABLE " STAGE_TABLE
#define LOCAL_ANALYZE_WINDOW_KEYS "ANALYZE " WINDOW_KEYS_TABLE
#define LOCAL_DROP_WINDOW_KEYS "DROP TABLE " WINDOW_KEYS_TABLE

/* What an upsert's UPDATE may replace (see LocalUpsertUpdateSql()). */
typedef enum LocalUpdateRule
{
	LOCAL_UPDATE_ALWAYS,		/* the staged version is the truth */
	LOCAL_UPDATE_VERSIONED,		/* newer, or the copy's row lies in [$1, $2) */
	LOCAL_UPDATE_NEWER			/* only a newer version (no parameters) */
} LocalUpdateRule;

/* Which staged rows an upsert's INSERT writes (see LocalUpsertInsertSql()). */
typedef enum LocalInsertRule
{
	LOCAL_INSERT_ALL,			/* into an empty copy: every one */
	LOCAL_INSERT_NEW_KEYS,		/* those of keys the copy lacks, in key order */
	LOCAL_INSERT_ON_CONFLICT	/* the same, by the key index alone */
} LocalInsertRule;

/* Which copy rows of the window a refresh looks at (LocalRefreshWindowSql()). */
typedef enum LocalRefreshScope
{
	LOCAL_REFRESH_STAGED,		/* those no staged row of the window has */
	LOCAL_REFRESH_WINDOW_KEYS,	/* ... nor WINDOW_KEYS_TABLE */
	LOCAL_REFRESH_GONE_KEYS		/* only the one-column keys in $3 */
} LocalRefreshScope;

extern char *LocalTableName(Oid relid);
extern char *LocalColumnList(List *columns, const char *alias);
extern char *LocalColumnOperator(TableConfig *cfg, const char *column, int which);
extern char *LocalKeyJoin(TableConfig *cfg, const char *a, const char *b);
extern char *LocalCoalescedColumns(List *columns, const char *a, const char *b);
extern char *LocalNewerVersion(TableConfig *cfg, const char *a, const char *b);
extern char *LocalSetList(TableConfig *cfg, const char *alias);
extern char *LocalQuarantineKey(TableConfig *cfg, const char *alias);

extern char *LocalCopyIsEmptySql(TableConfig *cfg);
extern char *LocalCountSql(TableConfig *cfg, bool in_window);
extern char *LocalNewestCursorSql(TableConfig *cfg);
extern char *LocalNewestEventSql(TableConfig *cfg);
extern char *LocalAnalyzeSql(TableConfig *cfg);
extern char *LocalStageIndexSql(TableConfig *cfg);
extern char *LocalStageRepeatedKeySql(TableConfig *cfg);
extern char *LocalStageDedupSql(TableConfig *cfg);
extern char *LocalUpsertUpdateSql(TableConfig *cfg, LocalUpdateRule rule);
extern char *LocalUpsertInsertSql(TableConfig *cfg, LocalInsertRule rule);
extern char *LocalUpsertConcurrentSql(TableConfig *cfg);
extern char *LocalRefreshWindowSql(TableConfig *cfg, LocalRefreshScope scope);
extern char *LocalRefreshAllSql(TableConfig *cfg);
extern char *LocalWindowKeysCreateSql(TableConfig *cfg, List *key_columns);
extern char *LocalWindowDifferencesSql(TableConfig *cfg, bool quarantined);

extern List *LocalHistoryCreateSql(const char *hist, const char *copy, List *key_columns);
extern char *LocalHistorySeedSql(const char *hist, const char *copy, const char *columns);
extern char *LocalHistoryTriggerSql(bool create, const char *trigger, const char *copy,
									const char *event, const char *referencing);
extern char *LocalHistoryExpireSql(const char *hist, bool rewound);
extern char *LocalHistoryColumnSql(const char *hist, const char *column, const char *typname, bool add);
extern char *LocalHistoryCloseSql(TableConfig *cfg, const char *hist, const char *src, bool drop_own);
extern char *LocalHistoryRecordSql(const char *hist, const char *src, const char *columns);
extern char *LocalHistoryAsOfSql(const char *hist, const char *row);
extern char *LocalHistoryChangesSql(TableConfig *cfg, const char *hist, const char *row,
									const char *copy_type);
extern char *LocalHistoryLatestChangeSql(const char *hist);
extern List *LocalHistoryRewindSql(TableConfig *cfg, const char *hist, const char *copy,
								   const char *data, List *insertable);

extern char *LocalVerifyDaysSql(TableConfig *cfg, const char *daycol, const char *checksum,
								bool have_since);
extern char *LocalVerifyStagedDaysSql(TableConfig *cfg, const char *daycol);
extern char *LocalVerifyKeyDifferencesSql(TableConfig *cfg, const char *daycol, bool have_since);
extern const char *LocalChecksReferencedSql(void);
extern const char *LocalChecksRunSql(void);

extern void LocalLogSql(const char *sql);
extern uint64 LocalRunSql(const char *sql, int nargs, Oid *types, Datum *values, int expected);
extern uint64 LocalRunSqlLimited(const char *sql, int nargs, Oid *types, Datum *values,
								 int expected, long limit);

#endif							/* TREBLE_SYNC_LOCALSQL_H */
