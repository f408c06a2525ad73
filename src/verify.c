/*-------------------------------------------------------------------------
 *
 * verify.c
 *	  verify() and repair(): does the copy still match the warehouse, day
 *	  by day, and putting right the days that do not.
 *
 * verify() freezes a cut T and compares, per day of the event column (or
 * of the cursor, for a table without one), the warehouse's deduplicated
 * rows with cursor <= T and the copy's: the number of rows, the greatest
 * cursor, and where the warehouse can compute it an order-independent
 * checksum of the synced columns.  Only aggregates cross the network.
 * Where the warehouse table's primary key is not the key, the warehouse
 * side deduplicates with ROW_NUMBER() OVER (PARTITION BY key ORDER BY
 * cursor DESC), standard SQL.  The checksum, a sum of hashtext() of each
 * row's text, is computed only on PostgreSQL warehouses (psqlODBC), on the
 * columns whose text the two sides write alike.  Elsewhere the keys,
 * cursors and days of the warehouse's rows are pulled (not the rows) and
 * compared with the copy's.
 *
 * repair(name, day) re-pulls one day and makes it equal, in a worker,
 * logged as a run (cycle.c: CycleRepairDay).
 *
 * explain_cycle(name) lists the statements the table's next cycle would
 * send to the warehouse and run on the copy, and runs none of them
 * (cycle.c: CycleExplain).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "advisor.h"
#include "catalog.h"
#include "cursor.h"
#include "cycle.h"
#include "deparse.h"
#include "fetch.h"
#include "launch.h"
#include "localsql.h"
#include "odbc.h"
#include "process.h"
#include "recovery.h"
#include "version.h"
#include "schema.h"
#include "security.h"
#include "stage.h"


/* One day's aggregates, from one side. */
typedef struct DayAgg
{
	bool		null_day;
	DateADT		day;
	int64		rows;
	char	   *max_cursor;
	char	   *checksum;		/* NULL if not computed */
} DayAgg;

/* The warehouse's aggregates per day, at the cut, since a day if given. */
static List *
remote_days(TableConfig *cfg, OdbcConn *conn, const char *daycol, int64 cut,
			bool have_since, Timestamp since, bool with_checksum, bool keyed)
{
	OdbcParam	params[VERIFY_MAX_PARAMS];
	int			nparams = 0;
	char	   *sql = DeparseVerifyDays(cfg, conn, daycol, cut, have_since, since,
										with_checksum, keyed, params, &nparams);
	SQLHSTMT	stmt;
	List	   *days = NIL;

	stmt = OdbcAllocStatement(conn);
	OdbcExecute(conn, stmt, sql, nparams, params);
	while (FetchNextRow(conn, stmt))
	{
		DayAgg	   *a = palloc0(sizeof(DayAgg));
		Timestamp	ts;
		StringInfoData buf;

		a->null_day = !FetchGetDate(conn, stmt, 1, &a->day);
		FetchGetInt(conn, stmt, 2, &a->rows);
		if (cfg->cursor_kind == CURSOR_INTEGER)
		{
			int64		v;

			if (FetchGetInt(conn, stmt, 3, &v))
				a->max_cursor = psprintf(INT64_FORMAT, v);
		}
		else if (FetchGetTimestampOf(conn, stmt, 3, NULL, NULL, &ts))
			a->max_cursor = CursorFormatTimestamp(ts);
		if (with_checksum)
		{
			initStringInfo(&buf);
			if (FetchGetText(conn, stmt, 4, &buf))
				a->checksum = buf.data;
		}
		days = lappend(days, a);
	}
	OdbcFreeStatement(conn, stmt);
	return days;
}

/*
 * The rows of the last SPI query as DayAgg, allocated in cxt: the day,
 * then, as far as ncols reaches, the row count, the newest cursor (in the
 * catalog's text form) and the checksum.
 */
static List *
days_from_spi(TableConfig *cfg, MemoryContext cxt, int ncols)
{
	List	   *days = NIL;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(cxt);
		DayAgg	   *a = palloc0(sizeof(DayAgg));
		bool		isnull;
		Datum		d = SPI_getbinval(tup, desc, 1, &isnull);

		CHECK_FOR_INTERRUPTS();
		a->null_day = isnull;
		if (!isnull)
			a->day = DatumGetDateADT(d);
		if (ncols >= 2)
			a->rows = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		if (ncols >= 3)
			a->max_cursor = SPI_getvalue(tup, desc, 3);
		if (a->max_cursor && cfg->cursor_kind != CURSOR_INTEGER)
			a->max_cursor = CursorFormatTimestamp(CursorParseTimestamp(a->max_cursor));
		if (ncols >= 4)
			a->checksum = SPI_getvalue(tup, desc, 4);
		days = lappend(days, a);
		MemoryContextSwitchTo(old);
	}
	return days;
}

/* The copy's aggregates per day, at the cut, since a day if given. */
static List *
local_days(TableConfig *cfg, const char *daycol, const char *cut, bool have_since,
		   Timestamp since, bool with_checksum)
{
	Oid			types[2] = {TEXTOID, TIMESTAMPOID};
	Datum		values[2] = {CStringGetTextDatum(cut), TimestampGetDatum(since)};
	List	   *days = NIL;
	MemoryContext cxt = CurrentMemoryContext;
	char	   *sql;

	sql = LocalVerifyDaysSql(cfg, daycol, with_checksum ? DeparseChecksum(cfg, NULL, false) : NULL,
							 have_since);
	LocalLogSql(sql);
	SPI_connect();
	{
		/* a scan of the whole copy: let it run in parallel */
		SPIPlanPtr	plan = SPI_prepare_cursor(sql, have_since ? 2 : 1, types,
											  CURSOR_OPT_PARALLEL_OK);

		if (plan == NULL ||
			SPI_execute_plan(plan, values, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not aggregate the copy of \"%s\"", cfg->name);
	}
	days = days_from_spi(cfg, cxt, 3 + (with_checksum ? 1 : 0));
	SPI_finish();
	return days;
}

/*
 * Where the warehouse cannot compute the checksum: pull the keys, cursors
 * and days of its deduplicated view (no other column) into the staging
 * table, take the warehouse's per-day figures from there, and list the
 * days where a key is missing on one side or has another cursor or day.
 */
static List *
remote_days_by_keys(TableConfig *cfg, OdbcConn *conn, const char *daycol, int64 cut,
					bool have_since, Timestamp since, bool keyed, List **bad_days)
{
	TableConfig vcfg = *cfg;
	CycleResult result;
	char	   *sql;
	OdbcParam	params[VERIFY_MAX_PARAMS];
	int			nparams = 0;
	SQLHSTMT	stmt;
	StageTarget target;
	Oid			types[2] = {TEXTOID, TIMESTAMPOID};
	Datum		values[2] = {CStringGetTextDatum(CursorFormat(cfg, cut)), TimestampGetDatum(since)};
	List	   *days = NIL;
	MemoryContext cxt = CurrentMemoryContext;

	vcfg.columns = list_copy(cfg->key_columns);
	vcfg.columns = lappend(vcfg.columns, cfg->cursor_column);
	if (!ListHasName(vcfg.columns, daycol))
		vcfg.columns = lappend(vcfg.columns, (char *) daycol);
	vcfg.masked_columns = NIL;
	vcfg.absent_columns = NIL;

	/*
	 * As the table's cycles do: under 'fail' a key or cursor the copy
	 * cannot take is an error; under 'quarantine' or 'skip' that row is
	 * left out of the warehouse's figures (the copy cannot hold it; the
	 * cycle that pulled it set it aside), and verify writes no quarantine
	 * and applies no ratio of its own.
	 */
	if (vcfg.on_bad_row != BAD_ROW_FAIL)
		vcfg.on_bad_row = BAD_ROW_SKIP;
	vcfg.max_bad_row_ratio = 1;
	memset(&target, 0, sizeof(target));
	target.stage_relid = StageCreate(&vcfg);

	sql = DeparseVerifyKeys(cfg, conn, vcfg.columns, daycol, cut, have_since, since, keyed,
							params, &nparams);

	memset(&result, 0, sizeof(result));
	stmt = OdbcAllocStatement(conn);
	OdbcExecute(conn, stmt, sql, nparams, params);
	StageLoad(&target, &vcfg, conn, stmt, &result);
	OdbcFreeStatement(conn, stmt);
	CommandCounterIncrement();	/* the rows just copied are to be read */

	SPI_connect();
	/* the warehouse's figures, from its keys */
	LocalRunSql(LocalVerifyStagedDaysSql(cfg, daycol), 0, NULL, NULL, SPI_OK_SELECT);
	days = days_from_spi(cfg, cxt, 3);
	/* the days where a key is missing, or has another cursor or day */
	LocalRunSql(LocalVerifyKeyDifferencesSql(cfg, daycol, have_since),
				have_since ? 2 : 1, types, values, SPI_OK_SELECT);
	*bad_days = days_from_spi(cfg, cxt, 1);
	SPI_execute(LOCAL_DROP_STAGE, false, 0);
	SPI_finish();
	return days;
}

/* Find a day's aggregates in a list, or NULL. */
static DayAgg *
find_day(List *days, DayAgg *key)
{
	ListCell   *lc;

	foreach(lc, days)
	{
		DayAgg	   *a = lfirst(lc);

		if (a->null_day == key->null_day && (a->null_day || a->day == key->day))
			return a;
	}
	return NULL;
}

/* Order of verify's rows: by day, the rows without a day last. */
static int
day_order(const ListCell *a, const ListCell *b)
{
	const DayAgg *x = lfirst(a);
	const DayAgg *y = lfirst(b);

	if (x->null_day || y->null_day)
		return (int) x->null_day - (int) y->null_day;
	return x->day < y->day ? -1 : x->day > y->day ? 1 : 0;
}

/*
 * verify(name, since, repair): one row per day, the warehouse's and the
 * copy's figures side by side; with repair, the mismatching days are
 * re-pulled, each in a run of its own.
 */
PG_FUNCTION_INFO_V1(treble_sync_verify);

Datum
treble_sync_verify(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TableConfig *cfg;
	ForeignServer *server;
	UserMapping *mapping;
	OdbcConn   *conn;
	const char *daycol;
	bool		have_since = !PG_ARGISNULL(1);
	bool		repair = !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);
	Timestamp	since = 0;
	int64		cut;
	char	   *cut_text;
	bool		with_checksum;
	List	   *bad_days = NIL;
	List	   *remote = NIL;
	List	   *local = NIL;
	bool		have_cut;
	List	   *all = NIL;
	List	   *different = NIL;	/* the days that differ, for the advisor */
	ListCell   *lc;
	int			mismatched = 0;
	int			nestlevel;
	SecurityState as_owner;

	VersionRequireCatalog("verify()");
	RecoveryRequirePrimary("verify()");
	cfg = CatalogGetTableArg(fcinfo, 0);
	daycol = cfg->event_column ? cfg->event_column :
		(cfg->cursor_kind == CURSOR_TIMESTAMP ? cfg->cursor_column : NULL);
	if (daycol == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("verify needs an event column or a timestamp cursor to count days by"),
				 errhint("Compare the copy with treble_sync.resync('%s') instead.", cfg->name)));
	if (have_since)
	{
		if (DATE_NOT_FINITE(PG_GETARG_DATEADT(1)))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("since must be a finite date"),
					 errhint("Pass NULL to verify every day.")));
		since = DatumGetTimestamp(DirectFunctionCall1(date_timestamp, PG_GETARG_DATUM(1)));
	}
	if (repair)
		CatalogRefuseGroupMember(cfg, "verify(repair => true)");
	if (repair && cfg->event_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("repair needs an event column"),
				 errhint("Use treble_sync.resync('%s') for a table without one.", cfg->name)));

	/*
	 * verify reads the copy and the warehouse as a cycle does: as the
	 * table's owner, with the owner's user mapping, inside a
	 * security-restricted operation, so nothing on the copy runs with the
	 * caller's privileges.
	 */
	SecurityRequireRun(cfg, "verify");
	mapping = ProcessPrecheck(cfg, &server);
	SecurityBecomeOwner(cfg, &as_owner);

	/* as a cycle reads them: zone-less warehouse times in the warehouse's zone */
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("TimeZone", OdbcServerTimezone(server), PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("DateStyle", "ISO", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);

	/* the answers are a row per day: no server-side cursor, so plans may be parallel */
	conn = OdbcConnect(server, mapping, cfg->login_timeout, cfg->query_timeout, false);
	with_checksum = OdbcDriverIs(conn, DRIVER_PSQLODBC) && treble_sync_verify_checksum;

	/*
	 * A warehouse table with no row a cut may take (its rows all gone) is
	 * compared at the copy's own cut, the watermark (CycleCutOfCopy()): the
	 * copy's rows are then days that differ, which repair empties.  With
	 * neither a cut nor a row in the copy there is nothing to compare.
	 */
	have_cut = CycleFreezeCut(cfg, conn, &cut) || CycleCutOfCopy(cfg, &cut);
	cut_text = have_cut ? CursorFormat(cfg, cut) : NULL;
	if (have_cut)
	{
		/*
		 * a primary key on the key: the warehouse has one row per key.
		 * ClickHouse has none to report (SchemaRemotePrimaryKey refuses it):
		 * its keys may repeat, so the newest version of each is taken.
		 */
		RemoteTable *rt = SchemaDescribeRemote(conn, cfg->remote_schema, cfg->remote_table);
		List	   *pk = OdbcDriverIs(conn, DRIVER_CLICKHOUSE) ? NIL : SchemaRemotePrimaryKey(conn, rt);
		bool		keyed = list_length(pk) == list_length(cfg->key_columns);
		ListCell   *k;

		foreach(k, pk)
			keyed &= ListHasName(cfg->key_columns, lfirst(k));
		if (with_checksum)
			remote = remote_days(cfg, conn, daycol, cut, have_since, since, true, keyed);
		else
			remote = remote_days_by_keys(cfg, conn, daycol, cut, have_since, since, keyed,
										 &bad_days);
	}
	OdbcDisconnect(conn);
	if (have_cut)
		local = local_days(cfg, daycol, cut_text, have_since, since, with_checksum);
	AtEOXact_GUC(false, nestlevel);	/* nothing set inside may outlive verify */
	SecurityRestore(&as_owner);

	/* every day either side has */
	all = list_copy(remote);
	foreach(lc, local)
		if (find_day(remote, lfirst(lc)) == NULL)
			all = lappend(all, lfirst(lc));
	list_sort(all, day_order);

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, all)
	{
		DayAgg	   *key = lfirst(lc);
		DayAgg	   *r = find_day(remote, key);
		DayAgg	   *l = find_day(local, key);
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};
		bool		match;

		CHECK_FOR_INTERRUPTS();
		match = r && l && r->rows == l->rows && TextsEqual(r->max_cursor, l->max_cursor) &&
			(!with_checksum || TextsEqual(r->checksum, l->checksum)) &&
			find_day(bad_days, key) == NULL;
		values[0] = DateADTGetDatum(key->day);
		nulls[0] = key->null_day;
		values[1] = Int64GetDatum(r ? r->rows : 0);
		values[2] = Int64GetDatum(l ? l->rows : 0);
		nulls[3] = !(r && r->max_cursor);
		if (!nulls[3])
			values[3] = CStringGetTextDatum(r->max_cursor);
		nulls[4] = !(l && l->max_cursor);
		if (!nulls[4])
			values[4] = CStringGetTextDatum(l->max_cursor);
		values[5] = BoolGetDatum(match);
		nulls[6] = true;
		if (!match)
		{
			mismatched++;
			if (!key->null_day)
				different = lappend_int(different, key->day);
			if (repair && !key->null_day)
			{
				values[6] = Int64GetDatum(LaunchRepair(cfg->table_id,
														  DatumGetTimestamp(DirectFunctionCall1(date_timestamp,
																								DateADTGetDatum(key->day)))));
				nulls[6] = false;
			}
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (!have_cut)
		return (Datum) 0;		/* nothing compared: no summary to keep */
	CatalogRecordVerification(cfg->name, cut_text, list_length(all), mismatched, with_checksum);
	if (AdvisorCovers(cfg))
		AdvisorRecordVerify(cfg, cut, CycleWindowBound(cfg, cut), different);
	return (Datum) 0;
}

/*
 * repair(name, day): re-pull one day and make it equal; returns the run
 * row.  STRICT: a NULL name or day repairs nothing and returns NULL.
 */
PG_FUNCTION_INFO_V1(treble_sync_repair);

Datum
treble_sync_repair(PG_FUNCTION_ARGS)
{
	TableConfig *cfg;

	Assert(!PG_ARGISNULL(0) && !PG_ARGISNULL(1));
	VersionRequireCatalog("repair()");
	RecoveryRequirePrimary("repair()");
	if (DATE_NOT_FINITE(PG_GETARG_DATEADT(1)))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("the day to repair must be a finite date")));
	cfg = CatalogGetTable(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	if (cfg->event_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("repair needs an event column"),
				 errhint("Use treble_sync.resync('%s') for a table without one.", cfg->name)));
	SecurityRequireRun(cfg, "repair");
	CatalogRefuseGroupMember(cfg, "repair()");
	(void) ProcessPrecheck(cfg, NULL);
	PG_RETURN_DATUM(CatalogRunRow(LaunchRepair(cfg->table_id,
												  DatumGetTimestamp(DirectFunctionCall1(date_timestamp,
																						PG_GETARG_DATUM(1))))));
}

/*
 * treble_sync.explain_cycle(name): the statements of the table's next
 * cycle, remote and local, as the cycle would build them (CycleExplain()),
 * one row each: side, step, statement.  Nothing is run: no statement is
 * sent to the warehouse (the connection, made as a cycle makes it, as the
 * owner with the owner's user mapping, is only asked for its driver's
 * quoting and abilities) and none is run on the copy.
 *
 * Who may call it: treble_sync_admin (EXECUTE is revoked from PUBLIC), and
 * of those only roles with the privileges of the registration's owner
 * (SecurityRequireManage), as for alter_table(): the statements name the
 * copy's and the warehouse's tables and columns, and the connection is the
 * owner's.  What a hostile caller could do with it: nothing it could not
 * do by running a cycle.  A statement's text holds no value (values are
 * parameters, shown as ? or $n) and no credential; the warehouse sees a
 * login and nothing else.
 */
PG_FUNCTION_INFO_V1(treble_sync_explain_cycle);

Datum
treble_sync_explain_cycle(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TableConfig *cfg;
	ForeignServer *server;
	UserMapping *mapping;
	OdbcConn   *conn;
	List	   *statements;
	ListCell   *lc;
	SecurityState as_owner;

	VersionRequireCatalog("explain_cycle()");
	RecoveryRequirePrimary("explain_cycle()");
	cfg = CatalogGetTableArg(fcinfo, 0);
	SecurityRequireManage(cfg->owner, "table", cfg->name, "explain the cycles of");
	mapping = ProcessPrecheck(cfg, &server);
	SecurityBecomeOwner(cfg, &as_owner);
	conn = OdbcConnect(server, mapping, cfg->login_timeout, cfg->query_timeout, false);
	statements = CycleExplain(cfg, conn);
	OdbcDisconnect(conn);
	SecurityRestore(&as_owner);

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, statements)
	{
		CycleStatement *st = lfirst(lc);
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		CHECK_FOR_INTERRUPTS();
		values[0] = CStringGetTextDatum(st->side);
		values[1] = CStringGetTextDatum(st->step);
		values[2] = CStringGetTextDatum(st->sql);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
