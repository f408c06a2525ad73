/*-------------------------------------------------------------------------
 *
 * cycle.c
 *	  The five steps of a sync cycle, inside the caller's one transaction:
 *
 *	  1. freeze the cut T = max(cursor), read from the warehouse once;
 *	  2. pull the delta T_prev < cursor <= T;
 *	  3. upsert it by key (the latest cursor wins among repeats);
 *	  4. refresh the hot window: rows with event >= bound and cursor <= T,
 *	     bound = date_trunc('day', T) - hot_window, and make that slice of
 *	     the copy equal to it;
 *	  5. advance the watermark to greatest(T_prev, T).
 *
 * Steps 2 and 4 are one remote query, cursor <= T AND (cursor > T_prev OR
 * event >= bound), so each row crosses the network once.  Nothing here
 * reads a local clock: every bound derives from T, on both sides; T itself
 * is bounded by the warehouse's own clock (CycleFreezeCut()).
 *
 * The other modes reuse the steps: 'append' pulls past the watermark and
 * only inserts; 'snapshot' (and resync()) pulls everything up to T and
 * makes the whole copy equal to it.  The cursor holds timestamps or
 * integers; either way its values are int64 here (a Timestamp is one).
 *
 * The remote statements are built by deparse.c, the pieces of the local
 * ones by localsql.c; this file decides what to pull and how to apply it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/datetime.h"
#include "utils/formatting.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "advisor.h"
#include "attempt.h"
#include "catalog.h"
#include "cursor.h"
#include "cycle.h"
#include "deparse.h"
#include "fetch.h"
#include "localsql.h"
#include "odbc.h"
#include "option.h"
#include "progress.h"
#include "schema.h"
#include "security.h"
#include "stage.h"


static bool remote_aggregate(TableConfig *cfg, OdbcConn *conn, const char *agg,
							 const char *column, bool integer, bool bounded,
							 int64 cut, int64 *result);

/* What a pull is applied as. */
typedef enum ApplyKind
{
	APPLY_CYCLE,				/* upsert by key, versions guarded; then the window */
	APPLY_CONCURRENT,			/* a chunk that other workers load alongside */
	APPLY_APPEND,				/* insert new keys only */
	APPLY_FULL					/* everything pulled: upsert, delete what is gone */
} ApplyKind;

/* How the staged rows go into the copy. */
typedef enum UpsertKind
{
	UPSERT_VERSIONED,			/* a cycle: an older version never replaces a newer one outside the window */
	UPSERT_LATEST,				/* a full pull: the staged row is the truth */
	UPSERT_INSERT_ONLY			/* append: keys the copy has are left alone */
} UpsertKind;

/*
 * Where a cycle's delta starts: the watermark, less cursor_overlap, so
 * that rows which became visible in the warehouse after an earlier cut
 * (with a cursor at or below it) are pulled again and absorbed by the
 * upsert.  False when an integer overlap reaches below the smallest
 * bigint: no cursor lies below the start, so the delta has no lower
 * bound (cursor <= T).  A timestamp overlap past the oldest timestamp
 * fails in timestamp_mi_interval, loudly.
 */
static bool
delta_start(TableConfig *cfg, int64 prev, int64 *start)
{
	if (cfg->cursor_overlap == NULL)
	{
		*start = prev;
		return true;
	}
	if (cfg->cursor_kind == CURSOR_INTEGER)
	{
		int64		overlap = DatumGetInt64(DirectFunctionCall1(int8in,
																CStringGetDatum(cfg->cursor_overlap)));

		Assert(overlap >= 0);	/* add_table and alter_table refuse a negative one */
		return !pg_sub_s64_overflow(prev, overlap, start);
	}
	*start = DatumGetTimestamp(DirectFunctionCall2(timestamp_mi_interval, TimestampGetDatum(prev),
												   DirectFunctionCall3(interval_in,
																	   CStringGetDatum(cfg->cursor_overlap),
																	   ObjectIdGetDatum(InvalidOid),
																	   Int32GetDatum(-1))));
	return true;
}

/*
 * Step 1: T = max(cursor) on the warehouse.  False if the table is empty.
 * A timestamp cursor's T is the greatest among the rows stamped no later
 * than the warehouse's own clock plus treble_sync.cursor_max_lead, and
 * finite (deparse.c): one row stamped 'infinity' or in the year 2999 would
 * otherwise become the watermark, and no later row would ever be pulled.
 * count_cursors() reports the rows left out.
 */
bool
CycleFreezeCut(TableConfig *cfg, OdbcConn *conn, int64 *cut)
{
	OdbcParam	params[CUT_MAX_PARAMS];
	int			nparams = 0;
	char	   *sql = DeparseCut(cfg, conn, params, &nparams);
	SQLHSTMT	stmt = OdbcAllocStatement(conn);
	bool		found;

	Assert(nparams <= CUT_MAX_PARAMS);
	ProgressPhase(PROGRESS_PHASE_FREEZING);
	OdbcExecute(conn, stmt, sql, nparams, params);
	if (!FetchNextRow(conn, stmt))
		elog(ERROR, "warehouse returned no row for: %s", sql);
	if (cfg->cursor_kind == CURSOR_INTEGER)
		found = FetchGetIntOf(conn, stmt, 1, cfg->remote_table, cfg->cursor_column, cut);
	else
		found = FetchGetTimestampOf(conn, stmt, 1, cfg->remote_table, cfg->cursor_column, cut);
	OdbcFreeStatement(conn, stmt);
	if (found)
		AttemptNoteCut(CursorFormat(cfg, *cut));
	return found;
}

/*
 * Say that rows of the warehouse table are not synced, whose cursor is
 * NULL or, with ahead, beyond the warehouse's clock or not a time
 * (count_null_cursors): in a WARNING, and in the run's warnings.
 */
static void
warn_not_synced(TableConfig *cfg, CycleResult *result, int64 rows, bool ahead)
{
	char	   *which;
	char	   *text;

	Assert(rows > 0);
	which = ahead ?
		psprintf("a cursor \"%s\" beyond the warehouse's clock or not a time", cfg->cursor_column) :
		psprintf("a NULL cursor \"%s\"", cfg->cursor_column);
	text = psprintf(INT64_FORMAT " %s with %s %s not synced",
					rows, rows == 1 ? "row" : "rows", which, rows == 1 ? "is" : "are");
	ereport(WARNING,
			(errcode(ahead ? ERRCODE_DATETIME_VALUE_OUT_OF_RANGE : ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 ahead ?
			 errmsg("warehouse table \"%s\" has " INT64_FORMAT " rows whose cursor column \"%s\" is later than the warehouse's clock by more than treble_sync.cursor_max_lead, or not a time",
					cfg->remote_table, rows, cfg->cursor_column) :
			 errmsg("warehouse table \"%s\" has " INT64_FORMAT " rows with a NULL in cursor column \"%s\"",
					cfg->remote_table, rows, cfg->cursor_column),
			 ahead ?
			 errdetail("No cut takes them, and no cycle pulls them: one such row would otherwise become the watermark and stop every later row.") :
			 errdetail("No cycle pulls them: every pull takes the rows whose cursor is at most the cut."),
			 ahead ?
			 errhint("Give those rows their real time in the warehouse; they are pulled by the first cycle after that.") :
			 errhint("Give those rows a cursor value in the warehouse.")));
	result->warnings = result->warnings ? psprintf("%s; %s", result->warnings, text) : text;
}

/*
 * The cut of verify() and repair() when the warehouse table has no row a
 * cut may take (CycleFreezeCut() found none: its rows are all gone, or
 * never came): the watermark, up to which the copy holds what cycles
 * pulled, or for a copy without one (never loaded, or its watermark
 * dropped by alter_table) the copy's newest cursor.  Either way every row
 * the copy holds from cycles is compared with (and, by repair, made equal
 * to) the empty table.  False if there is neither: the copy has no row
 * with a cursor, and there is nothing to compare.  Reads the copy as the
 * caller's role (its owner).
 */
bool
CycleCutOfCopy(TableConfig *cfg, int64 *cut)
{
	if (cfg->watermark != NULL)
		*cut = CursorParse(cfg, cfg->watermark);
	else
	{
		char	   *newest;

		SPI_connect();
		if (SPI_execute(LocalNewestCursorSql(cfg), true, 1) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "could not read the newest cursor of the copy of \"%s\"", cfg->name);
		newest = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (newest == NULL)
		{
			SPI_finish();
			return false;
		}
		*cut = CursorParse(cfg, newest);
		SPI_finish();
	}
	AttemptNoteCut(CursorFormat(cfg, *cut));	/* the run log's cut, for repair */
	return true;
}

/*
 * Rows of the warehouse table that no cycle pulls: those whose cursor is
 * NULL (every pull takes cursor <= T), and those whose timestamp cursor no
 * cut may take (later than the warehouse's clock plus
 * treble_sync.cursor_max_lead, or no time: -infinity, a zero date).  The
 * first are counted in the run (rows_null_cursor); both are named in its
 * warnings and in a WARNING, every cycle, until the warehouse's rows are
 * fixed.
 */
static void
count_null_cursors(TableConfig *cfg, OdbcConn *conn, CycleResult *result)
{
	OdbcParam	params[CUT_MAX_PARAMS];
	int			nparams = 0;
	SQLHSTMT	stmt = OdbcAllocStatement(conn);
	char	   *sql;
	int64		rows = 0;
	int64		ahead = 0;

	sql = DeparseCursorCounts(cfg, conn, params, &nparams);
	Assert(nparams <= CUT_MAX_PARAMS);
	OdbcExecute(conn, stmt, sql, nparams, params);
	if (!FetchNextRow(conn, stmt))
		elog(ERROR, "warehouse returned no row for: %s", sql);
	(void) FetchGetInt(conn, stmt, 1, &rows);
	(void) FetchGetInt(conn, stmt, 2, &ahead);
	OdbcFreeStatement(conn, stmt);

	result->rows_null_cursor = rows;
	if (rows > 0)
		warn_not_synced(cfg, result, rows, false);
	if (ahead > 0)
		warn_not_synced(cfg, result, ahead, true);
}

/*
 * An aggregate (MIN, MAX) of a timestamp or integer column on the
 * warehouse, among the rows with cursor <= cut if bounded.  False if it is
 * NULL.
 */
static bool
remote_aggregate(TableConfig *cfg, OdbcConn *conn, const char *agg, const char *column,
				 bool integer, bool bounded, int64 cut, int64 *result)
{
	SQLHSTMT	stmt = OdbcAllocStatement(conn);
	OdbcParam	param = DeparseCursorParam(cfg, cut);
	char	   *sql;
	bool		found;

	sql = DeparseAggregate(cfg, conn, agg, column, integer, bounded);
	OdbcExecute(conn, stmt, sql, bounded ? 1 : 0, &param);
	if (!FetchNextRow(conn, stmt))
		elog(ERROR, "warehouse returned no row for: %s", sql);
	if (integer)
		found = FetchGetIntOf(conn, stmt, 1, cfg->remote_table, column, result);
	else
		found = FetchGetTimestampOf(conn, stmt, 1, cfg->remote_table, column, result);
	OdbcFreeStatement(conn, stmt);
	return found;
}

/*
 * The most rows one remote query may return through a driver that holds
 * a whole result in memory, unless the server's slice_rows says otherwise
 * (tens of MiB for rows of a few hundred bytes).
 */
#define DEFAULT_SLICE_ROWS 100000

/* Pull the rows of a pull (or of one slice of it) into the staging table. */
static void
pull_slice(TableConfig *cfg, OdbcConn *conn, StageTarget *target, PullSpec *spec,
		   PullSlice *slice, CycleResult *result)
{
	OdbcParam	params[PULL_MAX_PARAMS];
	int			nparams = 0;
	char	   *sql = DeparsePull(cfg, conn, spec, slice, params, &nparams);

	StagePull(target, cfg, conn, sql, nparams, params, result);
}

/*
 * How many rows a pull (or one slice of it) takes, and the smallest cursor
 * among them.  False if there are none.
 */
static bool
count_pull(TableConfig *cfg, OdbcConn *conn, PullSpec *spec, PullSlice *slice,
		   int64 *rows, int64 *min_cursor)
{
	OdbcParam	params[PULL_MAX_PARAMS];
	int			nparams = 0;
	char	   *sql = DeparsePullCount(cfg, conn, spec, slice, params, &nparams);
	SQLHSTMT	stmt = OdbcAllocStatement(conn);
	bool		found;

	OdbcExecute(conn, stmt, sql, nparams, params);
	if (!FetchNextRow(conn, stmt))
		elog(ERROR, "warehouse returned no row for: %s", sql);
	*rows = 0;
	(void) FetchGetInt(conn, stmt, 1, rows);
	if (cfg->cursor_kind == CURSOR_INTEGER)
		found = FetchGetIntOf(conn, stmt, 2, cfg->remote_table, cfg->cursor_column, min_cursor);
	else
		found = FetchGetTimestampOf(conn, stmt, 2, cfg->remote_table, cfg->cursor_column,
									min_cursor);
	OdbcFreeStatement(conn, stmt);
	return found && *rows > 0;
}

/*
 * Pull the slice lo < cursor <= hi (open_lo: lo <= cursor <= hi, lo being
 * the pull's smallest cursor, which may be the smallest bigint: no bound
 * lies below it), which holds about `rows` rows: whole if that is few
 * enough, else as its two halves.  A slice one cursor value wide is pulled
 * whole, however many rows share that value.  The width of a slice may
 * exceed a bigint (from -2^63 to 2^63 - 1): it is computed unsigned, where
 * hi >= lo makes it exact.
 */
static void
pull_in_slices(TableConfig *cfg, OdbcConn *conn, StageTarget *target, PullSpec *spec,
			   int64 lo, int64 hi, bool open_lo, int64 rows, int64 slice_rows, int *slices,
			   CycleResult *result)
{
	PullSlice	slice = {lo, hi, open_lo};
	uint64		width;
	int64		mid;
	int64		lower_rows;
	int64		ignored;

	CHECK_FOR_INTERRUPTS();
	Assert(hi >= lo);
	/* the cursor values in the slice, less one */
	width = (uint64) hi - (uint64) lo - (open_lo ? 0 : 1);
	if (rows <= slice_rows || width == 0)
	{
		if (rows > 0)
		{
			pull_slice(cfg, conn, target, spec, &slice, result);
			(*slices)++;
		}
		return;
	}
	/* lo <= mid < hi, with no signed overflow on the way */
	mid = (int64) ((uint64) lo + ((uint64) hi - (uint64) lo) / 2);
	Assert(mid >= lo && mid < hi);
	slice.hi = mid;
	if (!count_pull(cfg, conn, spec, &slice, &lower_rows, &ignored))
		lower_rows = 0;
	pull_in_slices(cfg, conn, target, spec, lo, mid, open_lo, lower_rows, slice_rows, slices,
				   result);
	pull_in_slices(cfg, conn, target, spec, mid, hi, false, Max(rows - lower_rows, 1),
				   slice_rows, slices, result);
}

/*
 * Steps 2 and 4, pulling: stream the rows of a pull into the staging
 * table with one remote query, every value bound as a parameter.
 *
 * A driver that cannot stream (OdbcDriverStreams) holds a whole result in
 * the worker's memory, so through it a pull of more than slice_rows rows
 * (a server option) is cut into slices of the cursor, halved until each
 * holds at most that many (counted on the warehouse first).  The slices
 * cover the pull's cursor range exactly once, so together they take the
 * same rows.
 */
static void
pull_rows(TableConfig *cfg, OdbcConn *conn, StageTarget *target, PullSpec *spec,
		  CycleResult *result)
{
	int64		slice_rows;
	int64		rows;
	int64		first;
	int			slices = 0;

	ProgressPhase(PROGRESS_PHASE_PULLING);

	slice_rows = FdwServerIntOption(GetForeignServerByName(cfg->server_name, false),
									"slice_rows", DEFAULT_SLICE_ROWS);
	if (!spec->have_cut || slice_rows == 0 || OdbcDriverStreams(conn))
	{
		pull_slice(cfg, conn, target, spec, NULL, result);
		return;
	}
	if (!count_pull(cfg, conn, spec, NULL, &rows, &first))
		return;					/* nothing to pull */
	if (rows <= slice_rows)
	{
		pull_slice(cfg, conn, target, spec, NULL, result);
		return;
	}
	/* from the smallest cursor itself: first - 1 may not exist */
	pull_in_slices(cfg, conn, target, spec, first, spec->cut, true, rows, slice_rows,
				   &slices, result);
	ereport(DEBUG1,
			(errmsg_internal("pulled " INT64_FORMAT " rows of \"%s\" in %d slices: ODBC driver %s cannot stream",
							 rows, cfg->name, slices, OdbcDriverDescription(conn))));
}

/* Run a data statement with the caller's privileges; returns rows affected. */
static uint64
run_sql(const char *sql, int nargs, Oid *types, Datum *values, int expected)
{
	return LocalRunSql(sql, nargs, types, values, expected);
}

/*
 * Run a data statement whose every input is bounded by the hot window or
 * by the pull (the copy read only through its event index, the staged
 * rows, the window's keys) with hash joins allowed, which the worker
 * otherwise turns off (see ProcessConnectWarehouse): matching tens of
 * thousands of window rows by hashing is cheaper than probing an index
 * for each.  The caller writes any probe of the copy by key as a subquery
 * the planner cannot turn into a join (OFFSET 0), so no hash table of the
 * whole copy can come of it.
 */
static uint64
run_sql_hashing(const char *sql, int nargs, Oid *types, Datum *values, int expected, long limit)
{
	int			nestlevel = NewGUCNestLevel();
	uint64		n;

	(void) set_config_option("enable_hashjoin", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	n = LocalRunSqlLimited(sql, nargs, types, values, expected, limit);
	AtEOXact_GUC(true, nestlevel);
	return n;
}

/* Share of a copy a cycle must change before it gathers the copy's statistics. */
#define ANALYZE_CHANGED_SHARE 0.1

/*
 * Gather the copy's statistics, in the cycle's transaction, when the cycle
 * changed a large share of it (a first load always: the copy's key index,
 * built on the empty table, left reltuples at 0).  Readers' plans and the
 * status view's rows_estimate then follow the copy at once, not at
 * autovacuum's next visit.  ANALYZE samples a bounded number of rows, so
 * its cost does not grow with the copy; it runs as the copy's owner,
 * inside the cycle's security-restricted operation, as autovacuum's does.
 */
void
CycleAnalyzeIfChanged(TableConfig *cfg, CycleResult *result)
{
	int64		changed = result->rows_inserted + result->rows_updated + result->rows_deleted;
	HeapTuple	tup;
	float4		reltuples;

	if (changed <= 0)
		return;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(cfg->local_relid));
	if (!HeapTupleIsValid(tup))
		return;
	reltuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	if (reltuples > 0 && changed < reltuples * ANALYZE_CHANGED_SHARE)
		return;

	SPI_connect();
	run_sql(LocalAnalyzeSql(cfg), 0, NULL, NULL,
			SPI_OK_UTILITY);
	SPI_finish();
	ProgressResume();			/* ANALYZE reported progress of its own */
}

/* Run a count(*) query with parameters, with the caller's privileges. */
static int64
count_sql_with(const char *sql, int nargs, Oid *types, Datum *values)
{
	bool		isnull;

	run_sql(sql, nargs, types, values, SPI_OK_SELECT);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* Run a count(*) query with the caller's privileges. */
static int64
count_sql(const char *sql)
{
	return count_sql_with(sql, 0, NULL, NULL);
}

/*
 * The mass-delete guard: a warehouse that answers empty or truncated (an
 * outage, a half-loaded table) must not wipe the copy.  If the refresh
 * just deleted more than max_delete_ratio of the slice it covered (the
 * rows it deleted plus those left), fail the cycle, which rolls the
 * deletion and everything else back.
 */
static void
guard_deletes(TableConfig *cfg, int64 deleted, int64 remaining, const char *slice)
{
	int64		total = deleted + remaining;

	if (total == 0 || (double) deleted <= cfg->max_delete_ratio * (double) total)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("refusing to delete " INT64_FORMAT " of the " INT64_FORMAT " rows of %s of \"%s\"",
					deleted, total, slice, cfg->name),
			 errdetail("max_delete_ratio is %g, and the warehouse's answer keeps " INT64_FORMAT " of them. Nothing of this cycle was applied.",
					   cfg->max_delete_ratio, remaining),
			 errhint("If the warehouse really removed them, allow it once with treble_sync.alter_table('%s', max_delete_ratio => 1), then set it back.",
					 cfg->name)));
}

/*
 * Step 3 preparation: index the staging rows by key, so that every later
 * join with them is a probe whatever the planner believes of the copy's
 * size (its statistics lag behind a large load), and refresh their
 * statistics.
 */
static void
index_stage(TableConfig *cfg)
{
	run_sql(LocalStageIndexSql(cfg), 0, NULL, NULL, SPI_OK_UTILITY);
	run_sql(LOCAL_ANALYZE_STAGE, 0, NULL, NULL, SPI_OK_UTILITY);
	ProgressResume();			/* both reported their own progress meanwhile */
}

/*
 * Step 3 preparation: keep one row per key in the staging table, the one
 * with the greatest cursor; exact ties are broken by the row's text so the
 * outcome never depends on arrival order.  Most pulls have no repeated
 * key, and finding that out is one aggregate over the keys.
 */
static void
dedup_stage(TableConfig *cfg)
{
	if (count_sql(LocalStageRepeatedKeySql(cfg)) == 0)
		return;

	/* delete s if another row t of its key is newer, or identical and later */
	run_sql(LocalStageDedupSql(cfg), 0, NULL, NULL, SPI_OK_DELETE);
}

/*
 * Step 3: upsert the staging rows into the copy by key: update the keys it
 * has, then insert the others.  (One MERGE would do the same, but could
 * not say how many rows it inserted without joining the two sides once
 * more.)  Rows identical to the copy (binary image equality) are not
 * rewritten, so an unchanged hot window costs no writes.
 *
 * With a hot window, an older version of a key can arrive only because its
 * own event date lies in the window while the key's newest version, already
 * in the copy, lies outside it and was not pulled again.  Such a version
 * never replaces a newer one outside the window.  (A newer copy row inside
 * the window would have been pulled again had it still existed, so there
 * the older version is the truth.)  A full pull has every key's latest
 * version, which is always the truth; append mode never updates.
 */
static void
upsert_stage(TableConfig *cfg, UpsertKind kind, Timestamp bound,
			 Timestamp bound_hi, CycleResult *result)
{
	bool		copy_was_empty;
	char	   *sql;
	Oid			types[2] = {TIMESTAMPOID, TIMESTAMPOID};
	Datum		values[2] = {TimestampGetDatum(bound), TimestampGetDatum(bound_hi)};

	/* a first load into an empty copy only inserts */
	copy_was_empty = count_sql(LocalCopyIsEmptySql(cfg)) == 0;

	if (LocalSetList(cfg, "s")[0] != '\0' && !copy_was_empty && kind != UPSERT_INSERT_ONLY)
	{
		sql = LocalUpsertUpdateSql(cfg, kind == UPSERT_VERSIONED ?
								   LOCAL_UPDATE_VERSIONED : LOCAL_UPDATE_ALWAYS);
		if (kind == UPSERT_VERSIONED && result->lateness != NULL)
		{
			/* how late each correction is: its cursor against its event */
			run_sql(AdvisorMeasuringSql(sql,
										psprintf("s.%s", quote_identifier(cfg->cursor_column)),
										psprintf("s.%s", quote_identifier(cfg->event_column)), 1),
					2, types, values, SPI_OK_SELECT);
			result->rows_updated = AdvisorCollect(&result->lateness->corrections);
		}
		else
			result->rows_updated = run_sql(sql, 2, types, values, SPI_OK_UPDATE);
	}

	/* the keys the copy has were just updated (or deliberately kept): the rest */
	sql = LocalUpsertInsertSql(cfg, copy_was_empty ? LOCAL_INSERT_ALL : LOCAL_INSERT_NEW_KEYS);
	result->rows_inserted = run_sql(sql, 0, NULL, NULL, SPI_OK_INSERT);
}

/*
 * Step 3 for the chunks of a first load, which may run in parallel
 * workers: one INSERT ... ON CONFLICT per chunk, which waits for a
 * concurrent insert of the same key instead of failing.  Between two
 * versions of a key the greater cursor wins, then the greater row text,
 * whichever chunk arrives first.  Counts every row written as inserted.
 */
static void
upsert_stage_concurrent(TableConfig *cfg, CycleResult *result)
{
	result->rows_inserted = run_sql(LocalUpsertConcurrentSql(cfg), 0, NULL, NULL, SPI_OK_INSERT);
}

/*
 * The keys of the rows this cycle set aside as bad (result->bad_keys), as
 * a text array in the quarantine's form: keys the warehouse has, whose
 * newest version the copy cannot take.  An empty array if none.
 */
static Datum
bad_keys_array(CycleResult *result)
{
	int			n = list_length(result->bad_keys);
	Datum	   *keys = palloc(sizeof(Datum) * Max(n, 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, result->bad_keys)
	{
		CHECK_FOR_INTERRUPTS();
		keys[i++] = CStringGetTextDatum(lfirst(lc));
	}
	Assert(i == n);
	return PointerGetDatum(construct_array(keys, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Step 4: remove from the copy's hot window every row the warehouse's
 * window (as pulled, cursor <= T) no longer has.  Runs after the upsert, so
 * a row whose event date moved out of the window has already moved in the
 * copy too and is left alone.  With by_keys, the window's keys the
 * warehouse still has are those of WINDOW_KEYS_TABLE as well as the staged
 * rows of the window; and when the comparison named every copy key gone
 * from the warehouse's window (gone, an array of the key's values: a
 * one-column key), only those are looked at.
 */
static void
refresh_window(TableConfig *cfg, Timestamp bound, Timestamp bound_hi,
			   bool by_keys, Datum gone, CycleResult *result)
{
	const char *ev = quote_identifier(cfg->event_column);
	Oid			types[5] = {TIMESTAMPOID, TIMESTAMPOID, INT4OID, TEXTARRAYOID, TIMESTAMPOID};
	Datum		values[5] = {TimestampGetDatum(bound), TimestampGetDatum(bound_hi),
		Int32GetDatum(0), bad_keys_array(result),
	TimestampGetDatum(result->lateness ? result->lateness->cut : 0)};
	char	   *sql;

	/*
	 * A copy row of the window that no staged row of the window has, and
	 * whose key was not set aside as bad by this cycle: the warehouse still
	 * has that key (its newest version is bad), so the copy keeps its last
	 * good version.  The keys compare as text, as the quarantine writes
	 * them (LocalQuarantineKey()).
	 */
	if (gone != (Datum) 0)
	{
		ArrayType  *keys = DatumGetArrayTypeP(gone);

		if (ArrayGetNItems(ARR_NDIM(keys), ARR_DIMS(keys)) == 0)
		{
			result->rows_deleted = 0;
			return;
		}
		types[2] = get_array_type(ARR_ELEMTYPE(keys));
		values[2] = gone;
		sql = LocalRefreshWindowSql(cfg, LOCAL_REFRESH_GONE_KEYS);
		if (result->lateness != NULL)
		{
			/* how late each removal is: the cut against its event */
			run_sql(AdvisorMeasuringSql(sql, "$5", psprintf("t.%s", ev), 1),
					5, types, values, SPI_OK_SELECT);
			result->rows_deleted = AdvisorCollect(&result->lateness->removals);
		}
		else
			result->rows_deleted = run_sql(sql, 4, types, values, SPI_OK_DELETE);
	}
	else
	{
		sql = LocalRefreshWindowSql(cfg, by_keys ? LOCAL_REFRESH_WINDOW_KEYS : LOCAL_REFRESH_STAGED);
		/* the copy's window, by its event index, against the staged rows and keys */
		if (result->lateness != NULL)
		{
			run_sql_hashing(AdvisorMeasuringSql(sql, "$5", psprintf("t.%s", ev), 1),
							5, types, values, SPI_OK_SELECT, 0);
			result->rows_deleted = AdvisorCollect(&result->lateness->removals);
		}
		else
			result->rows_deleted = run_sql_hashing(sql, 4, types, values, SPI_OK_DELETE, 0);
	}
	if (result->rows_deleted > 0)
		guard_deletes(cfg, result->rows_deleted,
					  count_sql_with(LocalCountSql(cfg, true), 2, types, values),
					  TIMESTAMP_NOT_FINITE(bound_hi) ? "the hot window" : "the day");
}

/*
 * The full-pull counterpart of step 4: remove every copy row whose key the
 * warehouse (as pulled, cursor <= T) no longer has.
 */
static void
refresh_all(TableConfig *cfg, CycleResult *result)
{
	result->rows_deleted = run_sql(LocalRefreshAllSql(cfg), 0, NULL, NULL, SPI_OK_DELETE);
	if (result->rows_deleted > 0)
		guard_deletes(cfg, result->rows_deleted, count_sql(LocalCountSql(cfg, false)),
					  "the copy");
}

/*
 * The lower bound of the hot window: date_trunc('day', T) - hot_window,
 * from the warehouse's clock, the same on both sides.
 */
Timestamp
CycleWindowBound(TableConfig *cfg, Timestamp cut)
{
	Datum		day = DirectFunctionCall2(timestamp_trunc, CStringGetTextDatum("day"),
										  TimestampGetDatum(cut));

	return DatumGetTimestamp(DirectFunctionCall2(timestamp_mi_interval, day,
												 IntervalPGetDatum(cfg->hot_window)));
}

/*
 * Whether a pull can go straight into the copy instead of through the
 * staging table: the copy is empty, so what the pull brings is all it will
 * hold and nothing in it needs refreshing, and a unique index on the key
 * makes a repeated key an error, which sends its batch to the staging
 * table to be merged (merge_refused).  Not for a chunk that other workers
 * load alongside, a partitioned copy (its unique index holds the
 * partition key too), a copy whose row-level security applies to its owner
 * (COPY would bypass the policies), or a table with checks that read the
 * pulled rows from the staging table.
 */
static bool
can_load_direct(TableConfig *cfg, ApplyKind kind)
{
	bool		empty;

	if (kind == APPLY_CONCURRENT ||
		get_rel_relkind(cfg->local_relid) != RELKIND_RELATION ||
		!SchemaHasKeyIndex(cfg->local_relid, cfg->key_columns) ||
		check_enable_rls(cfg->local_relid, InvalidOid, true) == RLS_ENABLED ||
		CatalogHasRowChecks(cfg->table_id))
		return false;
	SPI_connect();
	empty = count_sql(LocalCopyIsEmptySql(cfg)) == 0;
	SPI_finish();
	return empty;
}

/*
 * After a pull straight into an empty copy: apply the batches the copy
 * refused (a key it already held from an earlier batch, a key twice in the
 * batch, a value its types reject), which went to the staging table.  The
 * newer version of a key wins by the rule dedup_stage applies, so the
 * outcome is the same as through the staging table alone.  The copy held
 * nothing before the pull: every key counts once, as inserted.
 */
static void
merge_refused(TableConfig *cfg, CycleResult *result)
{
	index_stage(cfg);
	dedup_stage(cfg);
	if (LocalSetList(cfg, "s")[0] != '\0')
		run_sql(LocalUpsertUpdateSql(cfg, LOCAL_UPDATE_NEWER), 0, NULL, NULL, SPI_OK_UPDATE);
	result->rows_inserted += run_sql(LocalUpsertInsertSql(cfg, LOCAL_INSERT_ON_CONFLICT),
									 0, NULL, NULL, SPI_OK_INSERT);
}

/*
 * The most keys whose rows a key-only window check re-pulls by key; past
 * this the window's rows are pulled whole, as 'rows' does.
 */
#define WINDOW_REPULL_MAX_KEYS 10000

/*
 * Whether a key column's values can go back to the warehouse as bound
 * parameters that compare as the warehouse's own: an integer column as
 * SQL_BIGINT, a variable-length text column as text, judged by the local
 * type and the warehouse's type name as recorded.  Anything else (a
 * timestamp, a uuid, a number with a scale, char(n), a column given
 * another local type, a masked column, whose copy holds only a hash)
 * cannot.
 */
static bool
key_column_bindable(TableConfig *cfg, const char *column)
{
	Oid			type = get_atttype(cfg->local_relid, get_attnum(cfg->local_relid, column));
	const char *sig = NULL;
	char	   *lower;
	ListCell   *lc;

	if (ListHasName(cfg->masked_columns, column))
		return false;
	foreach(lc, cfg->remote_columns)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, column) == 0)
			sig = strVal(def->arg);
	}
	if (sig == NULL)
		return false;
	lower = asc_tolower(sig, strlen(sig));
	if (type == INT2OID || type == INT4OID || type == INT8OID)
		return strstr(lower, "int") != NULL && strstr(lower, "uint64") == NULL;
	/* variable-length text: not char(n) or FixedString, which pad */
	if (type == TEXTOID || type == VARCHAROID)
		return (strstr(lower, "varchar") != NULL || strstr(lower, "text") != NULL ||
				strstr(lower, "string") != NULL) && strstr(lower, "fixed") == NULL;
	return false;
}

/*
 * Whether this cycle checks its hot window by keys (hot_window_check
 * 'keys'): a cycle with a watermark and a window (a first cycle pulls
 * everything anyway), whose key columns can all be sent back as
 * parameters.  Otherwise the window's rows are pulled whole.
 */
static bool
window_by_keys(TableConfig *cfg, PullSpec *spec)
{
	ListCell   *lc;

	if (cfg->window_check != WINDOW_CHECK_KEYS || !spec->have_prev || !spec->have_window ||
		spec->range_column != NULL)
		return false;
	foreach(lc, cfg->key_columns)
		if (!key_column_bindable(cfg, lfirst(lc)))
			return false;
	return true;
}

/*
 * The registration as the key-only window check pulls it: the key columns
 * and the cursor, unmasked (window_by_keys() refuses masked keys).  A bad
 * key (NULL, or a value the local type rejects) fails the cycle as it
 * would in a full pull; under 'quarantine' or 'skip' it is passed over,
 * the row having been set aside (and counted against max_bad_row_ratio)
 * when it came whole.
 */
static TableConfig
window_keys_config(TableConfig *cfg)
{
	TableConfig kcfg = *cfg;

	kcfg.columns = list_copy(cfg->key_columns);
	if (!ListHasName(kcfg.columns, cfg->cursor_column))
		kcfg.columns = lappend(kcfg.columns, cfg->cursor_column);
	kcfg.masked_columns = NIL;
	kcfg.absent_columns = NIL;
	if (kcfg.on_bad_row != BAD_ROW_FAIL)
		kcfg.on_bad_row = BAD_ROW_SKIP;
	kcfg.max_bad_row_ratio = 1; /* they were counted when they came whole */
	return kcfg;
}

/*
 * Step 4 by keys, pulling: the key and cursor of every warehouse row with
 * event >= bound and cursor <= min(T, T_prev) (the rows past T_prev come
 * whole with the delta) into WINDOW_KEYS_TABLE, analyzed (the statements that read it hash it).
 */
static void
pull_window_keys(TableConfig *cfg, OdbcConn *conn, PullSpec *spec)
{
	TableConfig kcfg = window_keys_config(cfg);
	PullSpec	kspec = *spec;
	CycleResult kresult;
	StageTarget ktarget;
	Oid			relid;
	char	   *sql;

	kspec.have_prev = false;
	kspec.window_only = true;
	kspec.cut = Min(spec->cut, spec->prev);

	SPI_connect();
	sql = LocalWindowKeysCreateSql(cfg, kcfg.columns);
	LocalLogSql(sql);
	SecurityCreateTempTable(sql);
	SPI_finish();
	CommandCounterIncrement();
	relid = get_relname_relid(WINDOW_KEYS_NAME, LookupCreationNamespace("pg_temp"));
	if (!OidIsValid(relid))
		elog(ERROR, "window keys table was not created");

	memset(&kresult, 0, sizeof(kresult));
	memset(&ktarget, 0, sizeof(ktarget));
	ktarget.stage_relid = relid;
	pull_rows(&kcfg, conn, &ktarget, &kspec, &kresult);

	/*
	 * No index: every statement that reads the window's keys hashes them
	 * (run_sql_hashing); statistics size those hashes.
	 */
	SPI_connect();
	run_sql(LOCAL_ANALYZE_WINDOW_KEYS, 0, NULL, NULL, SPI_OK_UTILITY);
	SPI_finish();
	ProgressResume();
	ereport(DEBUG1,
			(errmsg_internal("checked " INT64_FORMAT " keys of the hot window of \"%s\"",
							 kresult.rows_pulled, cfg->name)));
}

/*
 * A key value of the copy (or of the window's keys) as a parameter of a
 * pull by key: key_column_bindable() said which types come here.
 */
static OdbcParam
key_param(Datum value, Oid type)
{
	OdbcParam	p = {ODBC_PARAM_INT64, 0, NULL};

	switch (type)
	{
		case INT2OID:
			p.value = DatumGetInt16(value);
			break;
		case INT4OID:
			p.value = DatumGetInt32(value);
			break;
		case INT8OID:
			p.value = DatumGetInt64(value);
			break;
		default:
			p.kind = ODBC_PARAM_TEXT;
			p.text = TextDatumGetCString(value);
			break;
	}
	return p;
}

/*
 * Pull every version (cursor <= T) of the keys of the last SPI result, in
 * batches of at most KEY_PULL_MAX_PARAMS parameters, each key value a
 * bound parameter.
 */
static void
pull_by_keys(TableConfig *cfg, OdbcConn *conn, StageTarget *target, int64 cut,
			 SPITupleTable *keys, uint64 nkeys, CycleResult *result)
{
	int			nkc = list_length(cfg->key_columns);
	int			per_batch = (KEY_PULL_MAX_PARAMS - 1) / nkc;
	OdbcParam  *params = palloc(sizeof(OdbcParam) * KEY_PULL_MAX_PARAMS);
	Oid		   *types = palloc(sizeof(Oid) * nkc);
	MemoryContext batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "treble_sync key pull",
													ALLOCSET_DEFAULT_SIZES);

	for (int c = 0; c < nkc; c++)
		types[c] = SPI_gettypeid(keys->tupdesc, c + 1);
	for (uint64 first = 0; first < nkeys; first += per_batch)
	{
		int			n = (int) Min((uint64) per_batch, nkeys - first);
		int			nparams = 0;
		MemoryContext old = MemoryContextSwitchTo(batch_cxt);
		SQLHSTMT	stmt;

		CHECK_FOR_INTERRUPTS();
		params[nparams++] = DeparseCursorParam(cfg, cut);
		for (int i = 0; i < n; i++)
			for (int c = 0; c < nkc; c++)
			{
				bool		isnull;
				Datum		v = SPI_getbinval(keys->vals[first + i], keys->tupdesc, c + 1, &isnull);

				if (isnull)
					elog(ERROR, "NULL key among the keys to pull again");
				params[nparams++] = key_param(v, types[c]);
			}
		stmt = OdbcAllocStatement(conn);
		OdbcExecute(conn, stmt, DeparseKeyPull(cfg, conn, n), nparams, params);
		StageLoad(target, cfg, conn, stmt, result);
		OdbcFreeStatement(conn, stmt);
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch_cxt);
	}
	MemoryContextDelete(batch_cxt);
}

/*
 * The keys of the comparison's result (a one-column key, then "gone")
 * that the copy's window holds and the warehouse's no longer does, as an
 * array in cxt: the only rows the window refresh can then delete.
 */
static Datum
collect_gone_keys(SPITupleTable *rows, uint64 nrows, MemoryContext cxt)
{
	Oid			type = SPI_gettypeid(rows->tupdesc, 1);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	MemoryContext old = MemoryContextSwitchTo(cxt);
	Datum	   *keys = palloc(sizeof(Datum) * Max(nrows, 1));
	int			n = 0;
	Datum		array;

	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	for (uint64 i = 0; i < nrows; i++)
	{
		bool		isnull;

		Datum		key;

		CHECK_FOR_INTERRUPTS();
		if (!DatumGetBool(SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull)))
			continue;
		key = SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull);
		if (isnull)
			elog(ERROR, "NULL key among the keys to pull again");	/* as pull_by_keys */
		keys[n++] = datumCopy(key, typbyval, typlen);
	}
	array = PointerGetDatum(construct_array(keys, n, type, typlen, typbyval, typalign));
	MemoryContextSwitchTo(old);
	return array;
}

/*
 * Step 4 by keys, comparing: with the delta staged and the window's keys
 * and cursors in WINDOW_KEYS_TABLE, find the keys whose rows must come
 * whole, and pull them into the staging table by key:
 *	- a window key the delta did not bring whose newest cursor the copy
 *	  does not hold (a row the copy lacks, or an older or newer version);
 *	  a copy row that is newer and outside the window is left alone, as
 *	  the upsert would leave it;
 *	- a key of the copy's window that neither the window's keys nor the
 *	  delta have: its rows are gone from the window, but an older version
 *	  outside it may remain, and then replaces the copy's row (the refresh
 *	  deletes the key only if nothing comes back).
 * More than WINDOW_REPULL_MAX_KEYS of them: the window's rows are pulled
 * whole instead.  Returns whether it indexed the staging table, which it
 * does unless the delta staged nothing.
 */
static bool
pull_window_differences(TableConfig *cfg, OdbcConn *conn, StageTarget *target, PullSpec *spec,
						Timestamp bound, Timestamp bound_hi,
						Datum *gone, CycleResult *result)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[4] = {TIMESTAMPOID, TIMESTAMPOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		values[4] = {TimestampGetDatum(bound), TimestampGetDatum(bound_hi),
	(Datum) 0, bad_keys_array(result)};
	Datum		quarantined_keys;
	bool		quarantined;
	char	   *sql;
	uint64		nkeys;
	bool		indexed = target->staged_rows > 0;

	/*
	 * Comparing is merging work, as the indexing of the staged rows is.  An
	 * empty delta (an unchanged table) leaves nothing to index: the
	 * comparison reads no staged row.
	 */
	ProgressPhase(PROGRESS_PHASE_MERGING);
	SPI_connect();
	if (indexed)
		index_stage(cfg);
	/*
	 * One pass over each side: the window's keys with their newest cursor
	 * and the copy's window rows (by its event index), neither holding a
	 * key the delta brought, matched by a hash full join.  A key on one
	 * side only, or with another cursor on each, differs; a window key the
	 * copy holds outside the window is probed by key (OFFSET 0 keeps it a
	 * probe), and differs unless the copy's version is that one or newer.
	 * The keys are integers or text (window_by_keys), whose equality
	 * hashes, as a full join needs.
	 */
	quarantined = cfg->on_bad_row == BAD_ROW_QUARANTINE &&
		CatalogQuarantinedVersions(cfg, &quarantined_keys, &values[2]);
	if (!quarantined)
		values[2] = PointerGetDatum(construct_empty_array(TEXTOID));
	sql = LocalWindowDifferencesSql(cfg, quarantined);
	run_sql_hashing(sql, 4, types, values, SPI_OK_SELECT, WINDOW_REPULL_MAX_KEYS + 1);
	nkeys = SPI_processed;
	ereport(DEBUG1,
			(errmsg_internal("%s" UINT64_FORMAT " keys of the hot window of \"%s\" differ",
							 nkeys > WINDOW_REPULL_MAX_KEYS ? "more than " : "",
							 Min(nkeys, WINDOW_REPULL_MAX_KEYS), cfg->name)));
	if (nkeys > WINDOW_REPULL_MAX_KEYS)
	{
		/* too many to ask for by key: the window's rows, whole */
		PullSpec	wspec = *spec;

		wspec.have_prev = false;
		wspec.window_only = true;
		wspec.cut = Min(spec->cut, spec->prev);
		pull_rows(cfg, conn, target, &wspec, result);
	}
	else
	{
		if (gone && list_length(cfg->key_columns) == 1)
			*gone = collect_gone_keys(SPI_tuptable, nkeys, cxt);
		if (nkeys > 0)
		{
			/*
			 * Rows pulled again by key have cursors behind the watermark:
			 * a bad one among them was judged against max_bad_row_ratio
			 * when it first came, and under 'skip' nothing remembers it,
			 * so counting it again would stop the table for as long as it
			 * stays in the window.  Set aside again, it is still counted
			 * in rows_bad.
			 */
			TableConfig rcfg = *cfg;

			rcfg.max_bad_row_ratio = 1;
			ProgressPhase(PROGRESS_PHASE_PULLING);
			pull_by_keys(&rcfg, conn, target, spec->cut, SPI_tuptable, nkeys, result);
		}
	}
	SPI_finish();
	CommandCounterIncrement();	/* the rows just copied are to be read */
	return indexed;
}

/*
 * Whether a delta (T_prev < cursor <= T) may hold a row: not when the cut
 * is at or behind where it starts, as in a cycle of a table where nothing
 * changed since the last one (the cut is the watermark, and no
 * cursor_overlap reaches behind it).  Its remote statement, which could
 * only return no row, is then not sent.
 */
static bool
delta_may_have_rows(PullSpec *delta)
{
	Assert(delta->have_cut && !delta->have_window);
	return !delta->have_prev || delta->cut > delta->prev;
}

/*
 * Pull one set of rows into staging and apply it to the copy: steps 2 to 4
 * for a cycle and for the last step of a chunked load, steps 2 and 3 for a
 * chunk.  With a window, the copy's rows from the bound on are made equal
 * to the warehouse's.  A pull into an empty copy (a first load, a resync
 * of an empty copy) is written straight into it where it can be
 * (can_load_direct): one write instead of two.
 */
static void
pull_and_apply(TableConfig *cfg, OdbcConn *conn, PullSpec *spec, ApplyKind kind,
			   CycleResult *result)
{
	StageTarget target;
	bool		by_keys = kind == APPLY_CYCLE && window_by_keys(cfg, spec);
	Datum		gone = (Datum) 0;	/* by_keys: the window's keys that are gone */
	int64		delta_rows = 0; /* by_keys: rows staged before the re-pull */
	Timestamp	bound = spec->have_window ? spec->bound : DT_NOEND;
	Timestamp	bound_hi = (spec->have_window && spec->bound_hi != 0) ? spec->bound_hi : DT_NOEND;
	bool		indexed = false;	/* by_keys: the staged rows have their index */

	memset(&target, 0, sizeof(target));
	if (by_keys)
	{
		PullSpec	delta = *spec;

		pull_window_keys(cfg, conn, spec);
		target.stage_relid = StageCreate(cfg);
		delta.have_window = false;	/* T_prev < cursor <= T */
		if (delta_may_have_rows(&delta))
			pull_rows(cfg, conn, &target, &delta, result);
		delta_rows = result->rows_pulled;
		indexed = pull_window_differences(cfg, conn, &target, spec, bound, bound_hi, &gone,
										  result);
	}
	else
	{
		target.stage_relid = StageCreate(cfg);
		if (can_load_direct(cfg, kind))
		{
			/* a first load: worth a second process that reads ahead */
			target.copy_relid = cfg->local_relid;
			target.read_ahead = treble_sync_read_ahead;
		}
		pull_rows(cfg, conn, &target, spec, result);
	}

	ProgressPhase(PROGRESS_PHASE_MERGING);
	SPI_connect();
	if (OidIsValid(target.copy_relid))
	{
		result->rows_inserted = target.direct_rows;
		if (target.staged_rows > 0)
			merge_refused(cfg, result);
		ereport(DEBUG1,
				(errmsg_internal("loaded " INT64_FORMAT " rows of \"%s\" straight into the copy, " INT64_FORMAT " through the staging table",
								 target.direct_rows, cfg->name, target.staged_rows)));
		SPI_finish();
		return;
	}
	/*
	 * Step 3.  By keys, nothing staged (an unchanged table: no delta, no
	 * window key that differs) leaves no key to merge, nothing to upsert and
	 * no quarantined key that a staged row resolves; the window's refresh
	 * still deletes the keys gone from it.
	 */
	if (!by_keys || target.staged_rows > 0)
	{
		if (!by_keys || !indexed)
			index_stage(cfg);	/* by keys: only the re-pull by key staged rows */
		else if (result->rows_pulled - delta_rows > delta_rows / 10)
		{
			/* pull_window_differences() indexed it; its rows grew much since */
			run_sql(LOCAL_ANALYZE_STAGE, 0, NULL, NULL, SPI_OK_UTILITY);
			ProgressResume();	/* ANALYZE reported its own progress */
		}
		dedup_stage(cfg);
		switch (kind)
		{
			case APPLY_CYCLE:
				upsert_stage(cfg, UPSERT_VERSIONED, bound, bound_hi, result);
				break;
			case APPLY_CONCURRENT:
				upsert_stage_concurrent(cfg, result);
				break;
			case APPLY_APPEND:
				upsert_stage(cfg, UPSERT_INSERT_ONLY, bound, bound_hi, result);
				break;
			case APPLY_FULL:
				upsert_stage(cfg, UPSERT_LATEST, bound, bound_hi, result);
				break;
		}
		StageResolveQuarantine(cfg, result->run_id);
	}
	if (kind == APPLY_FULL)
	{
		ProgressPhase(PROGRESS_PHASE_WINDOW);
		refresh_all(cfg, result);
	}
	else if (spec->have_window)
	{
		ProgressPhase(PROGRESS_PHASE_WINDOW);
		refresh_window(cfg, spec->bound, bound_hi, by_keys, gone, result);	/* step 4 */
	}
	if (by_keys)
		run_sql(LOCAL_DROP_WINDOW_KEYS, 0, NULL, NULL, SPI_OK_UTILITY);
	SPI_finish();
}

/*
 * Whether a run did anything: wrote the copy, or set bad rows aside (a
 * run whose every row was bad is not 'empty': it pulled rows and kept
 * them out).
 */
static bool
cycle_did_work(CycleResult *result)
{
	return result->rows_inserted + result->rows_updated + result->rows_deleted > 0 ||
		result->rows_bad > 0;
}

/*
 * Step 5, and the run's outcome: the watermark moves to T, never backwards.
 */
static void
advance_watermark(TableConfig *cfg, bool have_prev, int64 prev, int64 cut,
				  CycleResult *result)
{
	int64		next = (have_prev && prev > cut) ? prev : cut;

	ProgressPhase(PROGRESS_PHASE_COMMITTING);
	result->watermark_to = CursorFormat(cfg, next);
	CatalogSetWatermark(cfg->table_id, result->watermark_to);
	if (cycle_did_work(result))
		result->status = "success";
}

/*
 * The hot window's lower bound for a cut: from T itself for a timestamp
 * cursor, else from the latest event date the warehouse has at the cut.
 * False if there is no window.
 */
static bool
window_bound(TableConfig *cfg, OdbcConn *conn, int64 cut, Timestamp *bound)
{
	Timestamp	latest = cut;

	if (cfg->event_column == NULL || cfg->mode != SYNC_UPSERT)
		return false;
	if (cfg->cursor_kind == CURSOR_INTEGER &&
		!remote_aggregate(cfg, conn, "MAX", cfg->event_column, false, true, cut, &latest))
		return false;			/* no event dates at all: nothing to refresh */
	*bound = CycleWindowBound(cfg, latest);
	return true;
}

/*
 * The hot window's lower bound for a cycle whose warehouse table has no
 * row a cut may take, at the watermark: from the watermark itself for a
 * timestamp cursor (as window_bound() counts from T), else from the latest
 * event date of the copy's rows up to the watermark (the warehouse's
 * latest, when it last had rows).  False if there is no window.
 */
static bool
window_bound_of_copy(TableConfig *cfg, int64 watermark, Timestamp *bound)
{
	Timestamp	latest = watermark;

	if (cfg->event_column == NULL || cfg->mode != SYNC_UPSERT)
		return false;
	if (cfg->cursor_kind == CURSOR_INTEGER)
	{
		Oid			types[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(CursorFormat(cfg, watermark))};
		bool		isnull = true;

		SPI_connect();
		if (SPI_execute_with_args(LocalNewestEventSql(cfg), 1, types, values, NULL, true, 1) !=
			SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not read the latest event of the copy of \"%s\"", cfg->name);
		latest = DatumGetTimestamp(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
												 1, &isnull));
		SPI_finish();
		if (isnull || TIMESTAMP_NOT_FINITE(latest))
			return false;		/* no event dates at all: nothing to refresh */
	}
	*bound = CycleWindowBound(cfg, latest);
	return true;
}

/*
 * Step 1 of a cycle: the cut, frozen now, or already (a group's cycle
 * freezes every member's cut before it pulls any, CycleFreezeCut()).
 */
static bool
cut_of(TableConfig *cfg, OdbcConn *conn, int64 *cut)
{
	if (!cfg->cut_frozen)
		return CycleFreezeCut(cfg, conn, cut);
	*cut = cfg->frozen_cut;
	return cfg->cut_found;
}

/*
 * Run one cycle of the table's mode in the current transaction.  The
 * caller commits (steps 2-5 succeed together) or aborts (nothing of them
 * remains).
 */
void
CycleRun(TableConfig *cfg, OdbcConn *conn, CycleResult *result)
{
	PullSpec	spec;
	bool		found;

	if (cfg->mode == SYNC_SNAPSHOT)
	{
		CycleRunFull(cfg, conn, result);
		return;
	}

	memset(&spec, 0, sizeof(spec));
	result->watermark_from = cfg->watermark;
	result->watermark_to = cfg->watermark;
	result->status = "empty";
	spec.have_prev = cfg->watermark != NULL &&
		delta_start(cfg, CursorParse(cfg, cfg->watermark), &spec.prev);

	/* step 1: the cut, from the warehouse's clock, once */
	found = cut_of(cfg, conn, &spec.cut);
	count_null_cursors(cfg, conn, result);
	if (found)
		spec.have_window = window_bound(cfg, conn, spec.cut, &spec.bound);
	else
	{
		/*
		 * The warehouse table has no row with a cursor a cut may take: its
		 * rows are all gone (or never came).  A table never loaded has
		 * nothing to do.  A loaded one keeps the rows up to its watermark,
		 * and those in the hot window must go as any removal there goes:
		 * the cycle refreshes its window at the watermark as the cut (a
		 * delta and window that pull nothing), under the mass-delete guard,
		 * and the watermark stays.
		 */
		if (cfg->watermark == NULL)
			return;
		spec.cut = CursorParse(cfg, cfg->watermark);
		AttemptNoteCut(cfg->watermark);
		spec.have_window = window_bound_of_copy(cfg, spec.cut, &spec.bound);
		if (!spec.have_window)
			return;				/* no window: nothing to refresh */
	}
	spec.have_cut = true;

	if (spec.have_window)
		result->hot_window_from = CursorFormatTimestamp(spec.bound);
	if (spec.have_window && AdvisorCovers(cfg))
	{
		/* the window advisor measures what steps 3 and 4 change */
		result->lateness = palloc0(sizeof(CycleLateness));
		result->lateness->window_bound = spec.bound;
		result->lateness->cut = spec.cut;
	}

	/* steps 2 to 4 */
	pull_and_apply(cfg, conn, &spec, cfg->mode == SYNC_APPEND ? APPLY_APPEND : APPLY_CYCLE,
				   result);
	AdvisorRecord(cfg, result);
	/* step 5: from the watermark itself, not from the overlap's start */
	advance_watermark(cfg, cfg->watermark != NULL,
					  cfg->watermark ? CursorParse(cfg, cfg->watermark) : 0,
					  spec.cut, result);
}

/*
 * Pull the whole table (up to the cut T, if it has a cursor) and make the
 * copy equal to it, in the current transaction: a 'snapshot' table's
 * cycle, and resync() of any table.  Readers of the copy see the old rows
 * until the commit and the new ones after it; its indexes, grants and
 * dependent views are untouched, and only rows that differ are written.
 */
void
CycleRunFull(TableConfig *cfg, OdbcConn *conn, CycleResult *result)
{
	PullSpec	spec;

	memset(&spec, 0, sizeof(spec));
	result->watermark_from = cfg->watermark;
	result->watermark_to = NULL;
	result->status = "empty";

	if (cfg->cursor_kind != CURSOR_NONE)
	{
		bool		found = cut_of(cfg, conn, &spec.cut);

		count_null_cursors(cfg, conn, result);
		if (!found)
		{
			/*
			 * No row has a cursor a cut may take: a copy never loaded is
			 * kept as it is; a loaded one is made equal to the empty table
			 * at its watermark (under the mass-delete guard), as a table
			 * without a cursor is, and the watermark stays.
			 */
			result->watermark_to = cfg->watermark;
			if (cfg->watermark == NULL)
				return;
			spec.cut = CursorParse(cfg, cfg->watermark);
			AttemptNoteCut(cfg->watermark);
		}
		spec.have_cut = true;
	}

	pull_and_apply(cfg, conn, &spec, APPLY_FULL, result);
	if (spec.have_cut)
		advance_watermark(cfg, false, 0, spec.cut, result);
	else if (cycle_did_work(result))
		result->status = "success";
}

/*
 * The column a first load is chunked by: the event column, else the
 * cursor.  Chunks cover it up to CycleLoadEnd(); the rest of the rows
 * (from there on, and NULLs) are pulled with the watermark's step.
 */
static const char *
CycleChunkColumn(TableConfig *cfg)
{
	return cfg->event_column ? cfg->event_column : cfg->cursor_column;
}

/*
 * Where the chunks of a first load end: the hot window's bound (the last
 * step pulls the window as a cycle would and refreshes it), or without a
 * window the start of T's day.
 */
static Timestamp
CycleLoadEnd(TableConfig *cfg, Timestamp cut)
{
	if (cfg->event_column)
		return CycleWindowBound(cfg, cut);
	return DatumGetTimestamp(DirectFunctionCall2(timestamp_trunc, CStringGetTextDatum("day"),
												 TimestampGetDatum(cut)));
}

/* 0001-01-01 00:00:00, the earliest bound a remote statement can hold. */
static Timestamp
CycleFirstBound(void)
{
	struct pg_tm tm;
	Timestamp	result;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = 1;
	tm.tm_mon = 1;
	tm.tm_mday = 1;
	if (tm2timestamp(&tm, 0, NULL, &result) != 0)
		elog(ERROR, "could not compute the year 1");
	return result;
}

/*
 * Plan the chunks of a first load cut at T: from the day of the smallest
 * value of the chunk column to CycleLoadEnd(), initial_chunk apart.
 */
List *
CyclePlanChunks(TableConfig *cfg, OdbcConn *conn, Timestamp cut)
{
	Timestamp	first;
	Timestamp	end = CycleLoadEnd(cfg, cut);
	Timestamp	lo;
	List	   *chunks = NIL;

	ProgressPhase(PROGRESS_PHASE_PLANNING);
	if (!remote_aggregate(cfg, conn, "MIN", CycleChunkColumn(cfg), false, true, cut, &first))
		return NIL;
	lo = DatumGetTimestamp(DirectFunctionCall2(timestamp_trunc, CStringGetTextDatum("day"),
											   TimestampGetDatum(first)));

	/*
	 * The first chunk has no lower bound (CycleLoadChunk()): it takes every
	 * value before the year 1 (a PostgreSQL warehouse's BC dates, which no
	 * bound of a remote statement can name) and -infinity too.
	 */
	lo = Max(lo, CycleFirstBound());
	while (lo < end)
	{
		LoadChunk  *c = palloc(sizeof(LoadChunk));
		Timestamp	hi = DatumGetTimestamp(DirectFunctionCall2(timestamp_pl_interval,
															   TimestampGetDatum(lo),
															   IntervalPGetDatum(cfg->initial_chunk)));

		CHECK_FOR_INTERRUPTS();
		c->chunk = list_length(chunks) + 1;
		c->lo = lo;
		c->hi = Min(hi, end);
		chunks = lappend(chunks, c);
		lo = c->hi;
	}
	return chunks;
}

/*
 * Load one chunk of a first load cut at T, in the current transaction:
 * steps 2 and 3 for the rows with lo <= column < hi.
 */
void
CycleLoadChunk(TableConfig *cfg, OdbcConn *conn, Timestamp cut, LoadChunk *chunk,
			   CycleResult *result)
{
	PullSpec	spec;

	memset(&spec, 0, sizeof(spec));
	spec.have_cut = true;
	spec.cut = cut;
	spec.range_column = CycleChunkColumn(cfg);
	spec.lo = chunk->lo;
	spec.hi = chunk->hi;
	/* the first chunk takes everything before its end (CyclePlanChunks()) */
	spec.open_below = chunk->chunk == 1;
	/* a partitioned copy has no unique index on the key alone: one writer */
	pull_and_apply(cfg, conn, &spec,
				   get_rel_relkind(cfg->local_relid) == RELKIND_PARTITIONED_TABLE ?
				   APPLY_CYCLE : APPLY_CONCURRENT,
				   result);
}

/*
 * The last step of a chunked first load, once every chunk is in: pull the
 * rest (the hot window, or the rows after the last chunk, and NULLs),
 * refresh the window, and set the watermark to T, in the current
 * transaction.
 */
void
CycleFinishLoad(TableConfig *cfg, OdbcConn *conn, Timestamp cut, CycleResult *result)
{
	PullSpec	spec;

	memset(&spec, 0, sizeof(spec));
	result->status = "empty";
	spec.have_cut = true;
	spec.cut = cut;
	spec.range_column = CycleChunkColumn(cfg);
	spec.lo = CycleLoadEnd(cfg, cut);
	spec.open_ended = true;
	if (cfg->event_column)
	{
		spec.have_window = true;
		spec.bound = spec.lo;
		result->hot_window_from = CursorFormatTimestamp(spec.bound);
	}
	pull_and_apply(cfg, conn, &spec, APPLY_CYCLE, result);
	count_null_cursors(cfg, conn, result);
	advance_watermark(cfg, false, 0, cut, result);
}

/*
 * repair(name, day): pull the warehouse's rows of one event day (cursor <=
 * a fresh cut) and make that day of the copy equal to them, in the current
 * transaction.  The watermark stays; the mass-delete guard does not apply,
 * since removing rows added by hand is the point, unless the warehouse
 * table has no row a cut may take (see below).
 */
void
CycleRepairDay(TableConfig *cfg, OdbcConn *conn, Timestamp day, CycleResult *result)
{
	PullSpec	spec;
	bool		warehouse_empty = false;

	memset(&spec, 0, sizeof(spec));
	result->watermark_from = cfg->watermark;
	result->watermark_to = cfg->watermark;
	result->status = "empty";
	/* a warehouse table with no rows: its day is made empty (CycleCutOfCopy) */
	if (!CycleFreezeCut(cfg, conn, &spec.cut))
	{
		if (!CycleCutOfCopy(cfg, &spec.cut))
			return;
		warehouse_empty = true;
	}
	spec.have_cut = true;
	spec.range_column = cfg->event_column;
	spec.lo = day;
	spec.hi = DatumGetTimestamp(DirectFunctionCall2(timestamp_pl_interval, TimestampGetDatum(day),
													DirectFunctionCall3(interval_in,
																		CStringGetDatum("1 day"),
																		ObjectIdGetDatum(InvalidOid),
																		Int32GetDatum(-1))));
	spec.have_window = true;
	spec.bound = spec.lo;
	spec.bound_hi = spec.hi;
	result->hot_window_from = CursorFormatTimestamp(day);
	/*
	 * A warehouse table that answers with no row a cut may take may only
	 * look empty (a reload under way, shards down, every cursor NULL or
	 * ahead of its clock): emptying the day is then guarded by
	 * max_delete_ratio, as a cycle's deletions are.
	 */
	if (!warehouse_empty)
		cfg->max_delete_ratio = 1;
	pull_and_apply(cfg, conn, &spec, APPLY_CYCLE, result);
	if (cycle_did_work(result))
		result->status = "success";
}

/* One statement of CycleExplain(): which side runs it, at which step. */
static List *
explain_add(List *list, const char *side, const char *step, const char *sql)
{
	CycleStatement *s = palloc(sizeof(CycleStatement));

	s->side = side;
	s->step = step;
	s->sql = sql;
	return lappend(list, s);
}

/*
 * A pull as pull_rows() sends it: through a driver that cannot stream,
 * counted first (and then, if it holds more than slice_rows, the same
 * statements again per slice, with other bounds).
 */
static List *
explain_pull(List *out, TableConfig *cfg, OdbcConn *conn, PullSpec *spec, const char *step)
{
	OdbcParam	params[PULL_MAX_PARAMS];
	int			nparams = 0;

	if (spec->have_cut && !OdbcDriverStreams(conn) &&
		FdwServerIntOption(GetForeignServerByName(cfg->server_name, false),
						   "slice_rows", DEFAULT_SLICE_ROWS) != 0)
	{
		out = explain_add(out, "remote", psprintf("%s (count: the driver cannot stream)", step),
						  DeparsePullCount(cfg, conn, spec, NULL, params, &nparams));
		nparams = 0;
	}
	return explain_add(out, "remote", step, DeparsePull(cfg, conn, spec, NULL, params, &nparams));
}

/*
 * The statements the table's next cycle would send to the warehouse
 * ("remote") and run on the copy ("local"), in their order, built by the
 * same functions as the cycle's (deparse.c, localsql.c, advisor.c) and run
 * by none: explain_cycle().  What the cycle learns on the way decides a
 * few of them (whether a key came twice, whether the copy was empty,
 * whether keys differ, whether it changed much of the copy): those are
 * listed with the step named conditionally, and a pull by keys with one
 * key.  A snapshot table's cycle and resync() are the full pull's.  conn
 * is only read for the driver's quoting and abilities; nothing is sent on
 * it but what connecting sends; the copy is read only to know whether it
 * is empty (a first load goes straight into an empty copy).  Not shown: what connecting and the
 * schema drift check send (ODBC catalog calls), and the creation of the
 * staging table.
 */
List *
CycleExplain(TableConfig *cfg, OdbcConn *conn)
{
	List	   *out = NIL;
	PullSpec	spec;
	OdbcParam	params[PULL_MAX_PARAMS];
	int			nparams = 0;
	bool		full = cfg->mode == SYNC_SNAPSHOT;
	bool		by_keys;
	bool		measured;
	char	   *sql;
	const char *merge = "merge";
	const char *upsert = "upsert";

	memset(&spec, 0, sizeof(spec));
	spec.have_cut = cfg->cursor_kind != CURSOR_NONE;
	spec.have_prev = !full && cfg->watermark != NULL &&
		delta_start(cfg, CursorParse(cfg, cfg->watermark), &spec.prev);
	spec.have_window = !full && cfg->event_column != NULL && cfg->mode == SYNC_UPSERT;
	measured = spec.have_window && AdvisorCovers(cfg);
	if (spec.have_cut)
		out = explain_add(out, "remote", "cut", DeparseCut(cfg, conn, params, &nparams));
	if (!full && cfg->cursor_kind != CURSOR_NONE)
	{
		nparams = 0;
		out = explain_add(out, "remote", "null cursors",
						  DeparseCursorCounts(cfg, conn, params, &nparams));
	}
	by_keys = !full && window_by_keys(cfg, &spec);
	if (by_keys)
	{
		TableConfig kcfg = window_keys_config(cfg);
		PullSpec	kspec = spec;
		PullSpec	delta = spec;

		kspec.have_prev = false;
		kspec.window_only = true;
		out = explain_add(out, "local", "window keys", LocalWindowKeysCreateSql(cfg, kcfg.columns));
		out = explain_pull(out, &kcfg, conn, &kspec, "window keys");
		out = explain_add(out, "local", "window keys", LOCAL_ANALYZE_WINDOW_KEYS);
		delta.have_window = false;
		/* as pull_and_apply(): what an empty delta leaves out */
		merge = "merge (if rows were pulled)";
		upsert = "upsert (if rows were pulled)";
		out = explain_pull(out, cfg, conn, &delta, "pull (unless the cut is the watermark)");
		out = explain_add(out, "local", merge, LocalStageIndexSql(cfg));
		out = explain_add(out, "local", merge, LOCAL_ANALYZE_STAGE);
		out = explain_add(out, "local", "window differences",
						  LocalWindowDifferencesSql(cfg, cfg->on_bad_row == BAD_ROW_QUARANTINE));
		out = explain_add(out, "remote", "pull by keys (if keys differ)", DeparseKeyPull(cfg, conn, 1));
	}
	else if (can_load_direct(cfg, full ? APPLY_FULL : APPLY_CYCLE))
	{
		/* into the empty copy straight, as pull_and_apply() loads it */
		const char *refused = "merge (if the copy refused a batch)";

		out = explain_pull(out, cfg, conn, &spec, "pull (straight into the empty copy)");
		out = explain_add(out, "local", refused, LocalStageIndexSql(cfg));
		out = explain_add(out, "local", refused, LOCAL_ANALYZE_STAGE);
		out = explain_add(out, "local", refused, LocalStageRepeatedKeySql(cfg));
		out = explain_add(out, "local", refused, LocalStageDedupSql(cfg));
		if (LocalSetList(cfg, "s")[0] != '\0')
			out = explain_add(out, "local", refused, LocalUpsertUpdateSql(cfg, LOCAL_UPDATE_NEWER));
		out = explain_add(out, "local", refused, LocalUpsertInsertSql(cfg, LOCAL_INSERT_ON_CONFLICT));
		goto checks;
	}
	else
	{
		out = explain_pull(out, cfg, conn, &spec, "pull");
		out = explain_add(out, "local", "merge", LocalStageIndexSql(cfg));
		out = explain_add(out, "local", "merge", LOCAL_ANALYZE_STAGE);
	}
	out = explain_add(out, "local", merge, LocalStageRepeatedKeySql(cfg));
	out = explain_add(out, "local", "merge (if a key came twice)", LocalStageDedupSql(cfg));
	out = explain_add(out, "local", upsert, LocalCopyIsEmptySql(cfg));
	if (cfg->mode != SYNC_APPEND && LocalSetList(cfg, "s")[0] != '\0')
	{
		sql = LocalUpsertUpdateSql(cfg, full ? LOCAL_UPDATE_ALWAYS : LOCAL_UPDATE_VERSIONED);
		if (measured)			/* as upsert_stage() measures corrections */
			sql = AdvisorMeasuringSql(sql, psprintf("s.%s", quote_identifier(cfg->cursor_column)),
									  psprintf("s.%s", quote_identifier(cfg->event_column)), 1);
		out = explain_add(out, "local", "upsert (unless the copy is empty)", sql);
	}
	out = explain_add(out, "local", upsert, LocalUpsertInsertSql(cfg, LOCAL_INSERT_NEW_KEYS));
	if (full)
		out = explain_add(out, "local", "refresh", LocalRefreshAllSql(cfg));
	else if (spec.have_window)
	{
		/* with a one-column key, the comparison named the keys gone */
		bool		gone_keys = by_keys && list_length(cfg->key_columns) == 1;

		sql = LocalRefreshWindowSql(cfg, gone_keys ? LOCAL_REFRESH_GONE_KEYS :
									by_keys ? LOCAL_REFRESH_WINDOW_KEYS : LOCAL_REFRESH_STAGED);
		if (measured)			/* as refresh_window() measures removals */
			sql = AdvisorMeasuringSql(sql, "$5", psprintf("t.%s", quote_identifier(cfg->event_column)), 1);
		out = explain_add(out, "local", gone_keys ? "refresh (if keys are gone)" : "refresh", sql);
	}
	if (by_keys)
		out = explain_add(out, "local", "refresh", LOCAL_DROP_WINDOW_KEYS);
checks:
	out = explain_add(out, "local", "checks", LocalChecksReferencedSql());
	out = explain_add(out, "local", "checks (if the table has any)", LocalChecksRunSql());
	out = explain_add(out, "local", "analyze (if the cycle changed much of the copy)",
					  LocalAnalyzeSql(cfg));
	return out;
}
