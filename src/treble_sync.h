/*-------------------------------------------------------------------------
 *
 * treble_sync.h
 *	  Declarations shared by the files of treble_sync.
 *
 * One file owns one responsibility: option.c the wrapper's options and
 * who may set what (see option.h), odbc.c talks to the warehouse,
 * catalog.c reads and writes the extension's tables, schema.c maps remote
 * metadata to local tables, stage.c streams rows into a staging table,
 * cycle.c runs the five steps, worker.c runs a cycle in a background worker,
 * sync.c and register.c are the SQL-callable entry points.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_H
#define TREBLE_SYNC_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "foreign/foreign.h"
#include "nodes/pg_list.h"
#include "utils/timestamp.h"

#include <sql.h>
#include <sqlext.h>

#define TREBLE_SYNC_EXTENSION "treble_sync"
#define TREBLE_SYNC_SCHEMA "treble_sync"

/* option.c: server and user-mapping options, the connection string */
#include "option.h"

/* ------------------------------------------------------------------------
 * A registered table, as read from treble_sync.tables.
 * ------------------------------------------------------------------------
 */
typedef enum SyncMode
{
	SYNC_UPSERT,				/* the five-step cycle */
	SYNC_APPEND,				/* insert rows past the watermark, rewrite nothing */
	SYNC_SNAPSHOT				/* pull everything, make the copy equal */
} SyncMode;

/*
 * What the cursor column holds.  Cursor values (the cut, the watermark)
 * are int64 either way: a Timestamp is one.
 */
typedef enum CursorKind
{
	CURSOR_NONE,				/* a snapshot table without a cursor */
	CURSOR_TIMESTAMP,
	CURSOR_INTEGER
} CursorKind;

/* What a cycle does with a row the local types reject. */
typedef enum BadRowPolicy
{
	BAD_ROW_FAIL,
	BAD_ROW_QUARANTINE,
	BAD_ROW_SKIP
} BadRowPolicy;

/* What a cycle does when the warehouse's columns changed. */
typedef enum DriftPolicy
{
	DRIFT_HALT,
	DRIFT_AUTO_ACCEPT,
	DRIFT_IGNORE
} DriftPolicy;

typedef struct TableConfig
{
	int32		table_id;
	char	   *name;			/* the name sync_table() takes */
	char	   *server_name;
	char	   *remote_schema;	/* NULL: the driver's default */
	char	   *remote_table;
	Oid			local_relid;
	Oid			owner;			/* who manages it; its cycles run as this role */
	List	   *key_columns;	/* of char *, in key order */
	List	   *columns;		/* of char *, every synced column */
	SyncMode	mode;
	CursorKind	cursor_kind;
	char	   *cursor_overlap;	/* an interval or a number, as text; NULL: none */
	char	   *cursor_column;	/* NULL only for a snapshot table */
	char	   *event_column;	/* NULL: no hot window */
	Interval   *hot_window;
	Interval   *initial_chunk;	/* NULL: the first sync is one transaction */
	int			parallel;		/* workers loading chunks at once */
	int			login_timeout;	/* seconds; -1: the server's */
	int			query_timeout;	/* seconds; -1: the server's */
	int			max_retries;	/* -1: the server's */
	double		max_delete_ratio;	/* mass-delete guard */
	List	   *masked_columns;	/* stored as a salted SHA-256 of their value */
	DriftPolicy schema_drift;
	BadRowPolicy on_bad_row;
	double		max_bad_row_ratio;
	bool		all_columns;	/* no explicit column list: new columns may join */
	List	   *remote_columns; /* DefElems: column -> DriftSignature() */
	List	   *absent_columns; /* set per cycle: synced, gone from the warehouse */
	bool		enabled;
	char	   *watermark;		/* NULL before the first successful cycle */
	char	   *load_cut;		/* T of a chunked first load in progress */
} TableConfig;

/* One chunk of a chunked first load: lo <= column < hi. */
typedef struct LoadChunk
{
	int			chunk;			/* from 1 */
	Timestamp	lo;
	Timestamp	hi;
} LoadChunk;

/* What one cycle did, for the run log. */
typedef struct CycleResult
{
	const char *status;			/* "success" or "empty" */
	char	   *watermark_from;
	char	   *watermark_to;
	char	   *hot_window_from;
	int64		rows_pulled;
	int64		rows_inserted;
	int64		rows_updated;
	int64		rows_deleted;
	int64		bytes_pulled;
	char	   *drift;			/* schema drift seen, or NULL */
	int64		rows_bad;		/* rows set aside (quarantined or skipped) */
	int64		rows_null_cursor;	/* warehouse rows with a NULL cursor */
	char	   *warnings;		/* NULL cursors, failed 'warn' checks; or NULL */
	int64		run_id;			/* the run these figures belong to */
} CycleResult;

/* ------------------------------------------------------------------------
 * odbc.c
 * ------------------------------------------------------------------------
 */
typedef struct OdbcConn OdbcConn;

/* A parameter bound to a remote statement. */
typedef enum OdbcParamKind
{
	ODBC_PARAM_TIMESTAMP,		/* value is a Timestamp */
	ODBC_PARAM_INT64
} OdbcParamKind;

typedef struct OdbcParam
{
	OdbcParamKind kind;
	int64		value;
} OdbcParam;

/*
 * The last microsecond before ts: remote statements write "col >= ts" as
 * "col > TimestampJustBefore(ts)" (see pull_rows in cycle.c for why).
 */
static inline Timestamp
TimestampJustBefore(Timestamp ts)
{
	return ts - 1;
}

extern OdbcConn *OdbcConnect(ForeignServer *server, UserMapping *mapping,
							 int login_timeout, int query_timeout, bool streaming);
extern void OdbcDisconnect(OdbcConn *conn);
extern char *OdbcQuoteIdent(OdbcConn *conn, const char *ident);
extern char *OdbcQualifiedName(OdbcConn *conn, const char *schema, const char *table);
extern char *OdbcEscapePattern(OdbcConn *conn, const char *value);
extern SQLHSTMT OdbcAllocStatement(OdbcConn *conn);
extern void OdbcFreeStatement(OdbcConn *conn, SQLHSTMT stmt);
extern void OdbcExecute(OdbcConn *conn, SQLHSTMT stmt, const char *sql,
						int nparams, OdbcParam *params);
extern void OdbcCheck(OdbcConn *conn, SQLRETURN rc, SQLSMALLINT htype,
					  SQLHANDLE handle, const char *what);
extern void OdbcAppendUtf16(StringInfo buf, const SQLWCHAR *w, size_t n,
							bool copy_escape);
extern char *OdbcWideToUtf8(const SQLWCHAR *w, ssize_t nchars);
extern SQLWCHAR *OdbcUtf8ToWide(const char *s, SQLINTEGER *nchars);
extern const char *OdbcServerTimezone(ForeignServer *server);
extern UserMapping *OdbcLookupUserMapping(Oid userid, ForeignServer *server);
extern bool OdbcSupportsBlockGetData(OdbcConn *conn);
extern bool OdbcDriverIsPostgres(OdbcConn *conn);
extern bool OdbcDriverIsSqlite(OdbcConn *conn);
extern bool OdbcDriverIsClickHouse(OdbcConn *conn);
extern char *OdbcTimestampOperand(OdbcConn *conn, const char *quoted_column);
extern bool OdbcDriverStreams(OdbcConn *conn);
extern bool OdbcDeclaredSizesHold(OdbcConn *conn);
extern const char *OdbcDriverDescription(OdbcConn *conn);
extern bool OdbcLastErrorWasTransient(void);
extern void OdbcForgetLastError(void);
extern void OdbcEnableCancel(void);
extern void OdbcCancelRemoteCall(void);
extern void OdbcBeginRemoteCall(SQLHSTMT stmt);
extern void OdbcEndRemoteCall(void);

/* ------------------------------------------------------------------------
 * fetch.c
 * ------------------------------------------------------------------------
 */
typedef struct FetchBlock FetchBlock;

/* How FetchValue hands out a column's values. */
typedef enum FetchKind
{
	FETCH_TEXT,					/* UTF-16 code units */
	FETCH_BINARY,				/* bytes */
	FETCH_INT64,				/* an SQLBIGINT */
	FETCH_TIMESTAMP				/* an SQL_TIMESTAMP_STRUCT */
} FetchKind;

extern FetchBlock *FetchBegin(OdbcConn *conn, SQLHSTMT stmt, int ncols,
							  const bool *is_binary);
extern FetchKind FetchColumnKind(FetchBlock *block, int col);
extern int	FetchNextBlock(FetchBlock *block);
extern bool FetchValue(FetchBlock *block, int row, int col, const char **data,
					   size_t *len);
extern bool FetchNextRow(OdbcConn *conn, SQLHSTMT stmt);
extern int	FetchResultColumns(OdbcConn *conn, SQLHSTMT stmt);
extern bool FetchGetText(OdbcConn *conn, SQLHSTMT stmt, int col, StringInfo buf);
extern bool FetchGetTimestamp(OdbcConn *conn, SQLHSTMT stmt, int col, Timestamp *result);
extern bool FetchGetInt(OdbcConn *conn, SQLHSTMT stmt, int col, int64 *result);
extern bool FetchGetTimestampOf(OdbcConn *conn, SQLHSTMT stmt, int col, const char *table,
								const char *column, Timestamp *result);
extern bool FetchGetIntOf(OdbcConn *conn, SQLHSTMT stmt, int col, const char *table,
						  const char *column, int64 *result);
extern void FetchCheckComparable(const char *text, bool integer, const char *table,
								 const char *column);

extern bool OdbcTimestampsAsText(OdbcConn *conn);

/* ------------------------------------------------------------------------
 * catalog.c
 * ------------------------------------------------------------------------
 */
typedef struct CatalogUser
{
	Oid			userid;
	int			sec_context;
} CatalogUser;

extern CatalogUser CatalogBecomeOwner(void);
extern void CatalogRestoreUser(CatalogUser saved);
extern TableConfig *CatalogGetTable(const char *name, bool missing_ok);
extern TableConfig *CatalogGetTableById(int32 table_id);
extern List *CatalogEnabledTableIds(const char *server);
extern int64 CatalogInsertRun(TableConfig *cfg, const char *status, Oid runner);
extern int	CatalogFailStaleRuns(TableConfig *cfg);
extern void CatalogFinishRun(int64 run_id, CycleResult *result);
extern void CatalogFailRun(int64 run_id, const char *error);
extern void CatalogSetWatermark(int32 table_id, const char *watermark);
extern bool CatalogRunIsRunning(int64 run_id);
extern Datum CatalogRunRow(int64 run_id);
extern Datum CatalogInsertTable(TableConfig *cfg, Oid owner);
extern char *CatalogTableUsingLocal(Oid relid);
extern void CatalogStartLoad(int32 table_id, const char *cut, List *chunks);
extern bool CatalogClaimChunk(int32 table_id, LoadChunk *chunk);
extern void CatalogFinishChunk(int32 table_id, int chunk, int64 run_id, CycleResult *r);
extern void CatalogChunkFailed(int32 table_id, int chunk, const char *error);
extern void CatalogLoadState(int32 table_id, int *chunks, int *done, char **first_error);
extern void CatalogEndLoad(int32 table_id);
extern const char *CatalogModeName(SyncMode mode);
extern SyncMode CatalogParseMode(const char *name);
extern const char *CatalogCursorKindName(CursorKind kind);
extern CursorKind CatalogParseCursorKind(const char *name);
extern Datum CatalogUpdateTable(TableConfig *cfg, bool reset);
extern void CatalogDeleteTable(int32 table_id);
extern void CatalogAfterRun(int64 run_id);
extern bytea *CatalogMaskSalt(Oid owner);
extern void CatalogSetRunDetails(int64 run_id, int attempts, const char *cut,
								 const char *drift, const char *warnings);
extern Datum CatalogSetRemoteColumns(TableConfig *cfg);
extern void CatalogQuarantine(TableConfig *cfg, int64 run_id, const char *key,
							  const char *column, const char *raw, const char *reason);
extern const char *CatalogBadRowName(BadRowPolicy policy);
extern BadRowPolicy CatalogParseBadRow(const char *name);
extern const char *CatalogDriftName(DriftPolicy policy);
extern DriftPolicy CatalogParseDrift(const char *name);

/* ------------------------------------------------------------------------
 * schema.c
 * ------------------------------------------------------------------------
 */
typedef struct RemoteColumn
{
	char	   *name;
	SQLSMALLINT data_type;		/* SQL_* type code */
	char	   *type_name;		/* the driver's own name for it */
	int32		column_size;
	int16		decimal_digits;
	bool		decimal_digits_null;
	bool		declared_affinity;	/* SQLite: the type name is all there is */
	bool		clickhouse_type;	/* type_name is ClickHouse's own (schema.c) */
} RemoteColumn;

typedef struct RemoteTable
{
	char	   *schema;			/* as the driver reports it; may be NULL */
	char	   *table;
	List	   *columns;		/* of RemoteColumn *, in ordinal order */
} RemoteTable;

extern RemoteTable *SchemaDescribeRemote(OdbcConn *conn, const char *schema,
										 const char *table);
extern List *SchemaRemotePrimaryKey(OdbcConn *conn, RemoteTable *rt);
extern RemoteColumn *SchemaFindColumn(RemoteTable *rt, const char *name);
extern bool SchemaListHasName(List *names, const char *name);
extern char *SchemaLocalTypeFor(RemoteColumn *col);
extern Oid	SchemaCreateLocalTable(const char *schema, const char *relname,
								   RemoteTable *rt, List *columns, List *key_columns,
								   const char *event_column, List *type_overrides);
extern void SchemaCheckLocalTable(Oid relid, List *columns, List *key_columns);

/* ------------------------------------------------------------------------
 * checks.c
 * ------------------------------------------------------------------------
 */
extern void ChecksRun(TableConfig *cfg, CycleResult *result);
extern void ChecksRecordFailed(int64 run_id, const char *table_name);
extern void ChecksForget(void);

/* ------------------------------------------------------------------------
 * drift.c
 * ------------------------------------------------------------------------
 */
extern char *DriftSignature(RemoteColumn *col);
extern void DriftCheck(TableConfig *cfg, OdbcConn *conn, CycleResult *result);
extern char *DriftLastSeen(void);
extern void DriftForget(void);

/* ------------------------------------------------------------------------
 * stage.c
 * ------------------------------------------------------------------------
 */
extern Oid	StageCreate(TableConfig *cfg);
extern void StageLoad(Oid stage_relid, TableConfig *cfg, OdbcConn *conn,
					  SQLHSTMT stmt, CycleResult *result);

/* ------------------------------------------------------------------------
 * cycle.c
 * ------------------------------------------------------------------------
 */
extern void CycleRun(TableConfig *cfg, OdbcConn *conn, CycleResult *result);
extern void CycleRunFull(TableConfig *cfg, OdbcConn *conn, CycleResult *result);
extern void CycleRepairDay(TableConfig *cfg, OdbcConn *conn, Timestamp day,
						   CycleResult *result);
extern bool CycleFreezeCut(TableConfig *cfg, OdbcConn *conn, int64 *cut);
extern char *CycleFormatCursor(TableConfig *cfg, int64 value);
extern char *CycleLastCut(void);
extern void CycleForgetCut(void);
extern int64 CycleParseCursor(TableConfig *cfg, const char *text);
extern Timestamp CycleWindowBound(TableConfig *cfg, Timestamp cut);
extern const char *CycleChunkColumn(TableConfig *cfg);
extern Timestamp CycleLoadEnd(TableConfig *cfg, Timestamp cut);
extern List *CyclePlanChunks(TableConfig *cfg, OdbcConn *conn, Timestamp cut);
extern void CycleLoadChunk(TableConfig *cfg, OdbcConn *conn, Timestamp cut,
						   LoadChunk *chunk, CycleResult *result);
extern void CycleFinishLoad(TableConfig *cfg, OdbcConn *conn, Timestamp cut,
							CycleResult *result);
extern UserMapping *CyclePrecheck(TableConfig *cfg, ForeignServer **server_out);
extern char *CycleFormatTimestamp(Timestamp ts);
extern Timestamp CycleParseTimestamp(const char *text);

/* ------------------------------------------------------------------------
 * progress.c
 * ------------------------------------------------------------------------
 */
/* Phases of a run; the view treble_sync.progress names them the same way. */
typedef enum ProgressPhaseCode
{
	PROGRESS_PHASE_CONNECTING = 1,
	PROGRESS_PHASE_FREEZING,
	PROGRESS_PHASE_PLANNING,
	PROGRESS_PHASE_PULLING,
	PROGRESS_PHASE_MERGING,
	PROGRESS_PHASE_WINDOW,
	PROGRESS_PHASE_WAITING,
	PROGRESS_PHASE_COMMITTING
} ProgressPhaseCode;

typedef struct ProgressState
{
	int32		table_id;
	int64		run_id;
	ProgressPhaseCode phase;
	int			chunk;			/* chunk being loaded, from 1; 0 if none */
	int			chunks;			/* chunks of the load; 0 if not chunked */
	int64		rows;			/* read from the warehouse by this process */
	int64		bytes;
	TimestampTz started;
	TimestampTz phase_at;
	Oid			relid;			/* the local table */
} ProgressState;

extern void ProgressStart(int32 table_id, int64 run_id, Oid relid, ProgressState *copy_to);
extern void ProgressPhase(ProgressPhaseCode phase);
extern void ProgressChunk(int chunk, int chunks);
extern void ProgressAddRows(int64 rows, int64 bytes);
extern void ProgressResume(void);
extern void ProgressEnd(void);
extern const char *ProgressPhaseName(ProgressPhaseCode phase);

/* ------------------------------------------------------------------------
 * treble_sync.c: settings
 * ------------------------------------------------------------------------
 */
extern bool treble_sync_progress_notices;
extern int	treble_sync_max_parallel;
extern int	treble_sync_freshness_alert;
extern int	treble_sync_run_retention;
extern bool treble_sync_verify_checksum;

/* ------------------------------------------------------------------------
 * worker.c
 * ------------------------------------------------------------------------
 */
extern int64 WorkerRunCycle(int32 table_id, bool full);
extern int64 WorkerRunRepair(int32 table_id, Timestamp day);
extern List *WorkerRunCycles(List *table_ids, int max_parallel);
extern bool WorkerTryLockTable(int32 table_id);
extern List *WorkerStartChunkHelpers(TableConfig *cfg, int64 run_id, int n);
extern void WorkerWaitChunkHelpers(List *handles);
extern void WorkerStopChunkHelpers(List *handles);
extern PGDLLEXPORT void treble_sync_worker_main(Datum main_arg);
extern PGDLLEXPORT void treble_sync_chunk_worker_main(Datum main_arg);

/* ------------------------------------------------------------------------
 * load.c
 * ------------------------------------------------------------------------
 */
extern void LoadRun(TableConfig *cfg, OdbcConn *conn, int64 run_id, CycleResult *result);
extern void LoadChunks(TableConfig *cfg, OdbcConn *conn, int64 run_id, Timestamp cut);
extern int	LoadCurrentChunk(void);

#endif							/* TREBLE_SYNC_H */
