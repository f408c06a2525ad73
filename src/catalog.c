/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reading and writing the extension's own tables: treble_sync.tables
 *	  (configuration and watermarks) and treble_sync.runs (the run log).
 *
 * Everyone may read them; only the extension owner may write them.  The
 * functions that write switch to the extension owner for the one statement
 * and back, so a cycle can record its run while all its data changes are
 * made with the caller's own privileges.  Every statement is schema
 * qualified and every value a parameter.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

#include "treble_sync.h"

/* Look up who owns the extension: the role that may write its tables. */
static Oid
extension_owner(void)
{
	Oid			owner;
	bool		isnull;

	SPI_connect();
	if (SPI_execute("SELECT extowner FROM pg_catalog.pg_extension"
					" WHERE extname OPERATOR(pg_catalog.=) 'treble_sync'",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"treble_sync\" is not installed in this database")));
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return owner;
}

/* Act as the extension owner until CatalogRestoreUser. */
CatalogUser
CatalogBecomeOwner(void)
{
	CatalogUser saved;
	Oid			owner = extension_owner();

	GetUserIdAndSecContext(&saved.userid, &saved.sec_context);
	SetUserIdAndSecContext(owner, saved.sec_context | SECURITY_LOCAL_USERID_CHANGE);
	return saved;
}

void
CatalogRestoreUser(CatalogUser saved)
{
	SetUserIdAndSecContext(saved.userid, saved.sec_context);
}

/* A text[] datum from a List of C strings. */
static Datum
text_array_from_list(List *items)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(items), 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, items)
		elems[i++] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(elems, i, TEXTOID, -1, false, TYPALIGN_INT));
}

/* A List of C strings from a text[] datum. */
static List *
list_from_text_array(Datum array)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *result = NIL;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			result = lappend(result, TextDatumGetCString(elems[i]));
	return result;
}

/* Copy a nullable text column of the current SPI row, or NULL. */
static char *
spi_text_or_null(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/*
 * Run one catalog statement with parameters.  Callers hold an SPI
 * connection; the result stays in SPI_tuptable.
 */
static void
catalog_exec(const char *sql, int nargs, Oid *types, Datum *values,
			 const char *nulls, int expected_rc)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (rc != expected_rc)
		elog(ERROR, "treble_sync catalog statement failed (SPI code %d): %s", rc, sql);
}

static const char *table_select =
"SELECT table_id, name, server_name::text, remote_schema, remote_table,"
" local_table::oid, key_columns, columns, cursor_column, event_column,"
" hot_window, enabled, watermark FROM treble_sync.tables";

/* Build a TableConfig from a row of table_select, in the caller's context. */
static TableConfig *
table_from_tuple(HeapTuple tup, TupleDesc desc, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	TableConfig *cfg = palloc0(sizeof(TableConfig));
	bool		isnull;

	cfg->table_id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	cfg->name = spi_text_or_null(tup, desc, 2);
	cfg->server_name = spi_text_or_null(tup, desc, 3);
	cfg->remote_schema = spi_text_or_null(tup, desc, 4);
	cfg->remote_table = spi_text_or_null(tup, desc, 5);
	cfg->local_relid = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
	cfg->key_columns = list_from_text_array(SPI_getbinval(tup, desc, 7, &isnull));
	cfg->columns = list_from_text_array(SPI_getbinval(tup, desc, 8, &isnull));
	cfg->cursor_column = spi_text_or_null(tup, desc, 9);
	cfg->event_column = spi_text_or_null(tup, desc, 10);
	cfg->hot_window = DatumGetIntervalP(datumCopy(SPI_getbinval(tup, desc, 11, &isnull),
												  false, sizeof(Interval)));
	cfg->enabled = DatumGetBool(SPI_getbinval(tup, desc, 12, &isnull));
	cfg->watermark = spi_text_or_null(tup, desc, 13);
	MemoryContextSwitchTo(old);
	return cfg;
}

/*
 * Read one registration matching "column = $1", or NULL.  The result is
 * allocated in the caller's memory context.
 */
static TableConfig *
lookup_table(const char *column, Oid type, Datum value)
{
	MemoryContext cxt = CurrentMemoryContext;
	TableConfig *cfg = NULL;

	SPI_connect();
	catalog_exec(psprintf("%s WHERE %s OPERATOR(pg_catalog.=) $1", table_select, column),
				 1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		cfg = table_from_tuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, cxt);
	SPI_finish();
	return cfg;
}

/*
 * Look a registered table up by the name sync_table() takes.  An unknown
 * name is an error with a hint, unless missing_ok.
 */
TableConfig *
CatalogGetTable(const char *name, bool missing_ok)
{
	TableConfig *cfg = lookup_table("name", TEXTOID, CStringGetTextDatum(name));

	if (cfg == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" is not registered with treble_sync", name),
				 errhint("Register it with treble_sync.add_table(), or list the registered ones with SELECT name FROM treble_sync.tables.")));
	return cfg;
}

/* Look a registration up by id, as a worker does; it must still exist. */
TableConfig *
CatalogGetTableById(int32 table_id)
{
	TableConfig *cfg = lookup_table("table_id", INT4OID, Int32GetDatum(table_id));

	if (cfg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table id %d is no longer registered with treble_sync", table_id)));
	return cfg;
}

/* The enabled tables, in name order: what sync_all() runs. */
List *
CatalogEnabledTableIds(void)
{
	List	   *ids = NIL;
	MemoryContext cxt = CurrentMemoryContext;

	SPI_connect();
	catalog_exec("SELECT table_id FROM treble_sync.tables WHERE enabled ORDER BY name",
				 0, NULL, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		ids = lappend_int(ids, DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc,
														   1, &isnull)));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return ids;
}

/*
 * Insert a run-log row ('running' or 'skipped') and return its run_id.
 */
int64
CatalogInsertRun(TableConfig *cfg, const char *status, Oid runner)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, OIDOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int64		run_id;

	values[0] = CStringGetTextDatum(cfg->name);
	values[1] = CStringGetTextDatum(status);
	if (cfg->watermark)
		values[2] = CStringGetTextDatum(cfg->watermark);
	else
		nulls[2] = 'n';
	values[3] = Int32GetDatum(MyProcPid);
	values[4] = ObjectIdGetDatum(runner);

	SPI_connect();
	catalog_exec("INSERT INTO treble_sync.runs"
				 " (table_name, status, watermark_from, worker_pid, run_by, finished_at, error)"
				 " VALUES ($1, $2, $3, $4, $5,"
				 "  CASE WHEN $2 OPERATOR(pg_catalog.=) 'skipped' THEN pg_catalog.clock_timestamp() END,"
				 "  CASE WHEN $2 OPERATOR(pg_catalog.=) 'skipped'"
				 "   THEN 'another cycle of this table is already running' END)"
				 " RETURNING run_id",
				 5, types, values, nulls, SPI_OK_INSERT_RETURNING);
	run_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										 1, &isnull));
	SPI_finish();
	CatalogRestoreUser(saved);
	return run_id;
}

/*
 * Mark as failed the runs of a table left 'running' by a worker that died
 * (crash, immediate shutdown).  Called while holding the table's cycle
 * lock, so no live cycle can own such a row.
 */
int
CatalogFailStaleRuns(TableConfig *cfg)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(cfg->name)};
	int			n;

	SPI_connect();
	catalog_exec("UPDATE treble_sync.runs SET status = 'failed',"
				 " finished_at = pg_catalog.clock_timestamp(),"
				 " error = 'interrupted: the process running this cycle ended before it finished (server crash or shutdown); nothing of it was applied'"
				 " WHERE table_name OPERATOR(pg_catalog.=) $1"
				 " AND status OPERATOR(pg_catalog.=) 'running'",
				 1, types, values, NULL, SPI_OK_UPDATE);
	n = (int) SPI_processed;
	SPI_finish();
	CatalogRestoreUser(saved);
	return n;
}

/* Record a finished cycle's outcome and figures. */
void
CatalogFinishRun(int64 run_id, CycleResult *r)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[10] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	INT8OID, INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		values[10];
	char		nulls[10] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(r->status);
	if (r->watermark_from)
		values[2] = CStringGetTextDatum(r->watermark_from);
	else
		nulls[2] = 'n';
	if (r->watermark_to)
		values[3] = CStringGetTextDatum(r->watermark_to);
	else
		nulls[3] = 'n';
	if (r->hot_window_from)
		values[4] = CStringGetTextDatum(r->hot_window_from);
	else
		nulls[4] = 'n';
	values[5] = Int64GetDatum(r->rows_pulled);
	values[6] = Int64GetDatum(r->rows_inserted);
	values[7] = Int64GetDatum(r->rows_updated);
	values[8] = Int64GetDatum(r->rows_deleted);
	values[9] = Int64GetDatum(r->bytes_pulled);

	SPI_connect();
	catalog_exec("UPDATE treble_sync.runs SET status = $2,"
				 " finished_at = pg_catalog.clock_timestamp(),"
				 " watermark_from = $3, watermark_to = $4, hot_window_from = $5,"
				 " rows_pulled = $6, rows_inserted = $7, rows_updated = $8,"
				 " rows_deleted = $9, bytes_pulled = $10"
				 " WHERE run_id OPERATOR(pg_catalog.=) $1",
				 10, types, values, nulls, SPI_OK_UPDATE);
	SPI_finish();
	CatalogRestoreUser(saved);
}

/* Record that a cycle failed, with the error text (which holds no secret). */
void
CatalogFailRun(int64 run_id, const char *error)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(run_id), CStringGetTextDatum(error)};

	SPI_connect();
	catalog_exec("UPDATE treble_sync.runs SET status = 'failed',"
				 " finished_at = pg_catalog.clock_timestamp(), error = $2"
				 " WHERE run_id OPERATOR(pg_catalog.=) $1"
				 " AND status OPERATOR(pg_catalog.=) 'running'",
				 2, types, values, NULL, SPI_OK_UPDATE);
	SPI_finish();
	CatalogRestoreUser(saved);
}

/* Advance a table's watermark (the caller guarantees it never goes back). */
void
CatalogSetWatermark(int32 table_id, const char *watermark)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(table_id), CStringGetTextDatum(watermark)};

	SPI_connect();
	catalog_exec("UPDATE treble_sync.tables SET watermark = $2"
				 " WHERE table_id OPERATOR(pg_catalog.=) $1",
				 2, types, values, NULL, SPI_OK_UPDATE);
	SPI_finish();
	CatalogRestoreUser(saved);
}

/* Is this run still marked 'running'? (its worker may have died) */
bool
CatalogRunIsRunning(int64 run_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};
	bool		running;

	SPI_connect();
	catalog_exec("SELECT 1 FROM treble_sync.runs WHERE run_id OPERATOR(pg_catalog.=) $1"
				 " AND status OPERATOR(pg_catalog.=) 'running'",
				 1, types, values, NULL, SPI_OK_SELECT);
	running = SPI_processed > 0;
	SPI_finish();
	return running;
}

/* The whole run-log row, as a composite datum in the caller's context. */
Datum
CatalogRunRow(int64 run_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};
	Datum		row;
	bool		isnull;

	SPI_connect();
	catalog_exec("SELECT r FROM treble_sync.runs r WHERE run_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		elog(ERROR, "treble_sync run %lld not found", (long long) run_id);
	row = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	row = SPI_datumTransfer(row, false, -1);
	SPI_finish();
	return row;
}

/* Register a table; returns the new treble_sync.tables row. */
Datum
CatalogInsertTable(TableConfig *cfg, Oid owner)
{
	CatalogUser saved;
	Oid			types[11] = {TEXTOID, NAMEOID, TEXTOID, TEXTOID, OIDOID,
		TEXTARRAYOID, TEXTARRAYOID, TEXTOID, TEXTOID, INTERVALOID, OIDOID};
	Datum		values[11];
	char		nulls[11];
	Datum		row;
	bool		isnull;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(cfg->name);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(cfg->server_name));
	if (cfg->remote_schema)
		values[2] = CStringGetTextDatum(cfg->remote_schema);
	else
		nulls[2] = 'n';
	values[3] = CStringGetTextDatum(cfg->remote_table);
	values[4] = ObjectIdGetDatum(cfg->local_relid);
	values[5] = text_array_from_list(cfg->key_columns);
	values[6] = text_array_from_list(cfg->columns);
	values[7] = CStringGetTextDatum(cfg->cursor_column);
	if (cfg->event_column)
		values[8] = CStringGetTextDatum(cfg->event_column);
	else
		nulls[8] = 'n';
	values[9] = IntervalPGetDatum(cfg->hot_window);
	values[10] = ObjectIdGetDatum(owner);

	saved = CatalogBecomeOwner();
	SPI_connect();
	catalog_exec("INSERT INTO treble_sync.tables AS t (name, server_name, remote_schema,"
				 " remote_table, local_table, key_columns, columns, cursor_column,"
				 " event_column, hot_window, owner)"
				 " VALUES ($1, $2, $3, $4, $5::pg_catalog.regclass, $6, $7, $8, $9, $10,"
				 " $11::pg_catalog.regrole)"
				 " RETURNING t",
				 11, types, values, nulls, SPI_OK_INSERT_RETURNING);
	row = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	row = SPI_datumTransfer(row, false, -1);
	SPI_finish();
	CatalogRestoreUser(saved);
	return row;
}

/* The name of the registration that syncs into this local table, or NULL. */
char *
CatalogTableUsingLocal(Oid relid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *name = NULL;
	MemoryContext cxt = CurrentMemoryContext;

	SPI_connect();
	catalog_exec("SELECT name FROM treble_sync.tables"
				 " WHERE local_table::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		name = spi_text_or_null(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return name;
}
