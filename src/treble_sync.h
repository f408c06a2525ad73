/*-------------------------------------------------------------------------
 *
 * treble_sync.h
 *	  Declarations shared by the files of treble_sync.
 *
 * Shared here: the registration (TableConfig), what a cycle did
 * (CycleResult), a chunk of a first load, the settings, the opaque
 * warehouse connection and two general helpers.  Each module declares the
 * rest in its own header, which says what the module owns.  odbc.h is the
 * header that brings in the ODBC API; the headers of the files that talk
 * to the warehouse (fetch.h, deparse.h, stage.h) include it for its types,
 * and option.c includes the driver manager's own headers to look drivers
 * and data sources up in odbcinst.ini.
 *
 * Source layout (src/, one responsibility a file; docs/design.md has the
 * same map, and the layers .ci/modgraph checks: a file uses only files of
 * its own layer or below, and no two files use each other):
 *
 *	  entry      register.c     add_table(), alter_table(), remove_table()
 *	             sync.c         sync_table(), resync(), sync_all()
 *	             verify.c       verify() and repair()
 *	             group.c        sync groups: add_group() ... sync_group()
 *	  launch     launch.c/h     the caller's side: starting a cycle's worker, waiting
 *	  processes  worker.c/h     the cycle runner: transactions, retries, chunk helpers
 *	             reader.c       the reader process of a first load
 *	  steps      load.c/h       chunked first loads
 *	             history.c/h    versions of a copy: as_of, changes, rewind, retention
 *	             checks.c/h     quality checks, run before a cycle commits
 *	             drift.c/h      schema drift, checked at the start of each cycle
 *	  cycle      cycle.c/h      the steps of a cycle in every mode
 *	             advisor.c/h    the window advisor: how late corrections and removals are
 *	  pull       stage.c/h      the staging table, filled by COPY
 *	  queue      readahead.c/h  the reader's segment and queue
 *	             wire.c/h       what the worker and its reader say to each other
 *	  process    process.c/h    what every background process shares
 *	  remote     schema.c/h     remote metadata, and the local table made from it
 *	             deparse.c/h    every statement sent to the warehouse
 *	             fetch.c/h      reading remote results
 *	             odbc.c/h       connecting to the warehouse, statements, driver errors
 *	  local      catalog.c/h    reading and writing the extension's tables
 *	             localsql.c/h   pieces of the SQL run on the copy
 *	             security.c/h   who may do what, the identity a cycle runs as
 *	             progress.c/h   what a running cycle is doing
 *	             attempt.c/h    the state of one attempt at a cycle
 *	             lockwait.c/h   a table's cycle lock, and who blocks a worker
 *	             recovery.c/h   refusing work on a standby
 *	             version.c/h    refusing a catalog of another release
 *	  base       cursor.c/h     cursor values as the catalog keeps them
 *	             redact.c/h     warehouse values kept out of errors and logs
 *	             option.c/h     server and user-mapping options, the connection string
 *	             regoption.c/h  a registration's options as data, checked once
 *	             treble_sync.c  module entry point and settings
 *	             testhook.c/h   for tests: holding a cycle at a phase
 *	             compat.h       the server API of each PostgreSQL major (15 to 18)
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_H
#define TREBLE_SYNC_H

#include "postgres.h"

#include "compat.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "foreign/foreign.h"
#include "nodes/pg_list.h"
#include "utils/timestamp.h"

#define TREBLE_SYNC_EXTENSION "treble_sync"

/*
 * "Trb1": marks what is treble_sync's where others' things lie too: the
 * space of its cycle locks among advisory locks (lockwait.c), the progress
 * slot of a backend running a cycle (progress.c, and the install script's
 * progress view, which spells it 1416782385).
 */
#define TREBLE_SYNC_MARKER 0x54726231

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

/*
 * How a cycle checks the rows of its hot window that the delta did not
 * bring: by their keys and cursors, re-pulling only the keys whose newest
 * version differs (the default), or by pulling every column of every row.
 */
typedef enum WindowCheck
{
	WINDOW_CHECK_KEYS,
	WINDOW_CHECK_ROWS
} WindowCheck;

/* What a cycle does when the warehouse's columns changed. */
typedef enum DriftPolicy
{
	DRIFT_HALT,
	DRIFT_AUTO_ACCEPT,
	DRIFT_IGNORE
} DriftPolicy;

/*
 * Retries of a cycle when neither the registration nor its server says.
 * (The defaults of a registration's options are in regoption.c.)
 */
#define DEFAULT_MAX_RETRIES			3

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
	WindowCheck window_check;	/* hot_window_check */
	bool		all_columns;	/* no explicit column list: new columns may join */
	List	   *remote_columns; /* DefElems: column -> DriftSignature() */
	List	   *absent_columns; /* set per cycle: synced, gone from the warehouse */
	bool		enabled;
	char	   *watermark;		/* NULL before the first successful cycle */
	char	   *load_cut;		/* T of a chunked first load in progress */
	int64		revision;		/* bumped by alter_table and rewind */
	Interval   *keep_history;	/* NULL: no history (history.c) */
	Oid			history_relid;	/* the history table, while keeping history */
	TimestampTz history_from;	/* the cut history began at, or -infinity */
	/* set by a group's cycle, which freezes every member's cut first */
	bool		cut_frozen;		/* frozen_cut and cut_found hold step 1 */
	bool		cut_found;		/* false: no row with a cursor */
	int64		frozen_cut;
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
	int64		rows_bad_known; /* of those, already quarantined by an earlier
								 * run: not counted against max_bad_row_ratio */
	List	   *bad_keys;		/* keys (text, as the quarantine writes them)
								 * of the rows set aside, in
								 * TopTransactionContext: the warehouse still
								 * has them, the window refresh keeps them */
	struct HTAB *null_key_rows; /* how many rows without a key of each
								 * digest the cycle met, in
								 * TopTransactionContext (stage.c) */
	int64		rows_null_cursor;	/* warehouse rows with a NULL cursor */
	char	   *warnings;		/* NULL cursors, failed 'warn' checks; or NULL */
	int64		run_id;			/* the run these figures belong to */
	struct CycleLateness *lateness; /* what the window advisor measures,
									 * or NULL (advisor.h) */
	int64		rows_late_outside;	/* corrections whose event lay before
									 * the hot window */
} CycleResult;

/* Whether two texts, either of which may be NULL, are the same. */
static inline bool
TextsEqual(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Whether a List of C strings holds name. */
static inline bool
ListHasName(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/* The warehouse connection, opaque outside odbc.c (odbc.h) */
typedef struct OdbcConn OdbcConn;

/* ------------------------------------------------------------------------
 * Settings (treble_sync.c)
 * ------------------------------------------------------------------------
 */
extern bool treble_sync_progress_notices;
extern int	treble_sync_max_parallel;
extern int	treble_sync_freshness_alert;
extern int	treble_sync_run_retention;
extern bool treble_sync_verify_checksum;
extern int	treble_sync_lock_timeout;
extern int	treble_sync_worker_start_timeout;
extern bool treble_sync_read_ahead;
extern bool treble_sync_window_advisor;
extern int	treble_sync_cursor_max_lead;

/* ------------------------------------------------------------------------
 * Arguments, and a registration's recorded columns (treble_sync.c)
 * ------------------------------------------------------------------------
 */
extern Datum *ArgTextArray(Datum array, const char *argname, int *n);
extern const char *TableRecordedSignature(TableConfig *cfg, const char *column);

#endif							/* TREBLE_SYNC_H */
