/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reading and writing the extension's own tables: treble_sync.tables
 *	  (configuration and watermarks), treble_sync.runs (the run log), the
 *	  chunks of first loads, the quarantine, the mask salts, quality checks
 *	  and their results, and verifications.
 *
 * Everyone may read the configuration (but a registration's watermark,
 * load_cut and history_from, warehouse-derived, which this file reads as
 * the extension owner); the logs are under row-level security; only the
 * extension owner may write them.  The
 * functions that write switch to the extension owner for the one statement
 * and back, so a cycle can record its run while all its data changes are
 * made with the caller's own privileges.  Every statement is schema
 * qualified and every value a parameter.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "storage/proc.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/lsyscache.h"

#include "catalog.h"
#include "lockwait.h"
#include "regoption.h"
#include "version.h"


static const char *CatalogCursorKindName(CursorKind kind);
static CursorKind CatalogParseCursorKind(const char *name);
static bool quarantine_row(const char *table_name, int64 run_id, const char *key,
						   const char *column, const char *raw, const char *reason,
						   const char *cursor_value, const char *row_digest, bool failed_run,
						   int64 *id);

/* Bytes of random salt per owner for masked columns. */
#define MASK_SALT_BYTES 32

/*
 * Who owns the extension: the role that may write its tables.  Looked up
 * once per transaction (an owner can change only through REASSIGN OWNED,
 * which a transaction in progress does not see half-done), not on every
 * catalog write.
 */
static Oid
extension_owner(void)
{
	static LocalTransactionId cached_lxid = InvalidLocalTransactionId;
	static Oid	cached_owner = InvalidOid;
	Oid			extoid;
	Oid			owner;

	if (cached_lxid == TS_MY_LXID && OidIsValid(cached_owner))
		return cached_owner;

	VersionLookupExtension(&extoid, &owner, NULL);
	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"treble_sync\" is not installed in this database")));
	cached_owner = owner;
	cached_lxid = TS_MY_LXID;
	return owner;
}

/* The role and security context to go back to after a catalog write. */
typedef struct CatalogUser
{
	Oid			userid;
	int			sec_context;
} CatalogUser;

/*
 * Act as the extension owner until CatalogRestoreUser: the one way into
 * the catalog's tables with the rights to write them, kept inside this
 * file so that no other file writes them.
 */
static CatalogUser
CatalogBecomeOwner(void)
{
	CatalogUser saved;
	Oid			owner = extension_owner();

	GetUserIdAndSecContext(&saved.userid, &saved.sec_context);
	SetUserIdAndSecContext(owner, saved.sec_context | SECURITY_LOCAL_USERID_CHANGE);
	return saved;
}

/* Back to the role CatalogBecomeOwner saved. */
static void
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
 * The integers of column 1 of the rows SPI_tuptable holds, as an integer
 * List in the memory context cxt.
 */
static List *
spi_int_column(MemoryContext cxt)
{
	List	   *ids = NIL;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		CHECK_FOR_INTERRUPTS();
		ids = lappend_int(ids, DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull)));
		MemoryContextSwitchTo(old);
	}
	return ids;
}

/*
 * Set statement parameter i to a text value, or to NULL for a NULL string:
 * most of the catalog's optional columns are text.
 */
static void
param_text(Datum *values, char *nulls, int i, const char *value)
{
	values[i] = value ? CStringGetTextDatum(value) : (Datum) 0;
	nulls[i] = value ? ' ' : 'n';
}

/*
 * Set statement parameter i to a Datum, or to NULL where isnull: for the
 * optional columns that are not text.
 */
static void
param_datum(Datum *values, char *nulls, int i, Datum value, bool isnull)
{
	values[i] = isnull ? (Datum) 0 : value;
	nulls[i] = isnull ? 'n' : ' ';
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

/*
 * Whether a catalog query with one parameter ($1 of sql, of the given type)
 * returns a row, as the current role, in an SPI connection of its own.
 * read_only as SPI_execute's: true reads under the caller's snapshot,
 * false takes a fresh one (and so sees what other sessions committed
 * since, as a caller that waits on them must).
 */
static bool
catalog_exists(const char *sql, Oid type, Datum value, bool read_only)
{
	int			rc;
	bool		found;

	SPI_connect();
	rc = SPI_execute_with_args(sql, 1, &type, &value, NULL, read_only, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "treble_sync catalog statement failed (SPI code %d): %s", rc, sql);
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

/*
 * Run one catalog statement that writes, as the extension owner, in an SPI
 * connection of its own.  Returns the number of rows it processed.
 */
static uint64
catalog_write(const char *sql, int nargs, Oid *types, Datum *values,
			  const char *nulls, int expected_rc)
{
	CatalogUser saved = CatalogBecomeOwner();
	uint64		processed;

	SPI_connect();
	catalog_exec(sql, nargs, types, values, nulls, expected_rc);
	processed = SPI_processed;
	SPI_finish();
	CatalogRestoreUser(saved);
	return processed;
}

/*
 * Delete a catalog row by its id ($1 of sql, of the given type), as the
 * extension owner: the one-parameter form of catalog_write.
 */
static void
catalog_delete_by_id(const char *sql, Oid type, Datum id)
{
	catalog_write(sql, 1, &type, &id, NULL, SPI_OK_DELETE);
}

/*
 * Run one catalog statement that writes and returns one row (a RETURNING
 * list of one column), as the extension owner, in an SPI connection of
 * its own; returns that column's value, copied into the caller's memory
 * context.
 */
static Datum
catalog_write_returning(const char *sql, int nargs, Oid *types, Datum *values,
						const char *nulls, int expected_rc)
{
	CatalogUser saved = CatalogBecomeOwner();
	Form_pg_attribute att;
	Datum		value;
	bool		isnull;

	SPI_connect();
	catalog_exec(sql, nargs, types, values, nulls, expected_rc);
	if (SPI_processed != 1)
		elog(ERROR, "treble_sync catalog statement returned " UINT64_FORMAT " rows, not one: %s",
			 SPI_processed, sql);
	att = TupleDescAttr(SPI_tuptable->tupdesc, 0);
	value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		value = SPI_datumTransfer(value, att->attbyval, att->attlen);
	SPI_finish();
	CatalogRestoreUser(saved);
	return value;
}

/*
 * The columns of treble_sync.tables that are no option of add_table() or
 * alter_table(), read first; then each option's column, in the order of
 * the options (regoption.c).
 */
static const char *table_select_fixed =
"SELECT table_id, server_name::pg_catalog.text, remote_schema, remote_table,"
" local_table::pg_catalog.oid, watermark, load_cut, cursor_kind, all_columns,"
" ARRAY(SELECT k FROM pg_catalog.jsonb_each_text(remote_columns) AS r(k, v) ORDER BY k),"
" ARRAY(SELECT v FROM pg_catalog.jsonb_each_text(remote_columns) AS r(k, v) ORDER BY k),"
" owner::pg_catalog.oid, history_table::pg_catalog.oid, history_from, revision";

/*
 * The columns of table_select_fixed, in its order (numbered from 1, as
 * SPI numbers them): keep the two in step.
 */
enum
{
	Anum_select_table_id = 1,
	Anum_select_server_name,
	Anum_select_remote_schema,
	Anum_select_remote_table,
	Anum_select_local_table,
	Anum_select_watermark,
	Anum_select_load_cut,
	Anum_select_cursor_kind,
	Anum_select_all_columns,
	Anum_select_remote_column_names,
	Anum_select_remote_column_signatures,
	Anum_select_owner,
	Anum_select_history_table,
	Anum_select_history_from,
	Anum_select_revision,
	Natts_select_fixed = Anum_select_revision
};

/* Is this option kept in a column of treble_sync.tables? */
static bool
option_in_catalog(const RegOption *opt)
{
	return opt->column != NULL && opt->field >= 0;
}

/* The SQL type an option's value is bound as, and read back as. */
static Oid
option_catalog_type(const RegOption *opt)
{
	switch (opt->type)
	{
		case REGOPT_BOOL:
			return BOOLOID;
		case REGOPT_INT:
		case REGOPT_SERVER_INT:
			return INT4OID;
		case REGOPT_REAL:
			return FLOAT4OID;
		case REGOPT_TEXT:
		case REGOPT_CHOICE:
			return TEXTOID;
		case REGOPT_INTERVAL:
			return INTERVALOID;
		case REGOPT_NAMES:
		case REGOPT_MASK:
			return TEXTARRAYOID;
		case REGOPT_OTHER:
			break;
	}
	elog(ERROR, "registration option \"%s\" is not kept in the catalog", opt->name);
	return InvalidOid;			/* keep the compiler quiet */
}

/*
 * What an option's column is read as: the column, or for a mask (a JSON
 * object of column names) its names.
 */
static char *
option_read_expr(const RegOption *opt)
{
	if (opt->type == REGOPT_MASK)
		return psprintf("ARRAY(SELECT pg_catalog.jsonb_object_keys(%s))", opt->column);
	return pstrdup(opt->column);
}

/*
 * What parameter paramno is written into an option's column as: itself,
 * or for a mask its columns made a JSON object.
 */
static char *
option_write_expr(const RegOption *opt, int paramno)
{
	if (opt->type == REGOPT_MASK)
		return psprintf("(SELECT pg_catalog.jsonb_object_agg(c, 'sha256') FROM pg_catalog.unnest($%d) c)",
						paramno);
	return psprintf("$%d", paramno);
}

/*
 * Set statement parameter i to an option's value in cfg: NULL for none
 * (and -1, the server's, of a server option).
 */
static void
param_option(const RegOption *opt, const TableConfig *cfg, Oid *types, Datum *values,
			 char *nulls, int i)
{
	types[i] = option_catalog_type(opt);
	switch (opt->type)
	{
		case REGOPT_BOOL:
			param_datum(values, nulls, i, BoolGetDatum(RegOptionField(cfg, opt, bool)), false);
			break;
		case REGOPT_INT:
			param_datum(values, nulls, i, Int32GetDatum(RegOptionField(cfg, opt, int)), false);
			break;
		case REGOPT_SERVER_INT:
			param_datum(values, nulls, i, Int32GetDatum(RegOptionField(cfg, opt, int)),
						RegOptionField(cfg, opt, int) < 0);
			break;
		case REGOPT_REAL:
			param_datum(values, nulls, i,
						Float4GetDatum((float4) RegOptionField(cfg, opt, double)), false);
			break;
		case REGOPT_TEXT:
			param_text(values, nulls, i, RegOptionField(cfg, opt, char *));
			break;
		case REGOPT_CHOICE:
			param_text(values, nulls, i, RegOptionChoiceName(opt->name, RegOptionField(cfg, opt, int)));
			break;
		case REGOPT_INTERVAL:
			param_datum(values, nulls, i, IntervalPGetDatum(RegOptionField(cfg, opt, Interval *)),
						RegOptionField(cfg, opt, Interval *) == NULL);
			break;
		case REGOPT_NAMES:
		case REGOPT_MASK:
			param_datum(values, nulls, i, text_array_from_list(RegOptionField(cfg, opt, List *)),
						false);
			break;
		case REGOPT_OTHER:
			(void) option_catalog_type(opt);	/* an error */
	}
}

/*
 * Set an option of cfg from its column as option_read_expr reads it, in
 * the current memory context (cfg's).
 */
static void
option_from_column(const RegOption *opt, TableConfig *cfg, Datum d, bool isnull)
{
	switch (opt->type)
	{
		case REGOPT_BOOL:
			RegOptionField(cfg, opt, bool) = !isnull && DatumGetBool(d);
			break;
		case REGOPT_INT:
			RegOptionField(cfg, opt, int) = isnull ? 0 : DatumGetInt32(d);
			break;
		case REGOPT_SERVER_INT:
			RegOptionField(cfg, opt, int) = isnull ? -1 : DatumGetInt32(d);
			break;
		case REGOPT_REAL:
			RegOptionField(cfg, opt, double) = isnull ? 0 : DatumGetFloat4(d);
			break;
		case REGOPT_TEXT:
			RegOptionField(cfg, opt, char *) = isnull ? NULL : TextDatumGetCString(d);
			break;
		case REGOPT_CHOICE:
			RegOptionField(cfg, opt, int) =
				RegOptionParseChoice(opt->name, isnull ? NULL : TextDatumGetCString(d));
			break;
		case REGOPT_INTERVAL:
			RegOptionField(cfg, opt, Interval *) = isnull ? NULL :
				DatumGetIntervalP(datumCopy(d, false, sizeof(Interval)));
			break;
		case REGOPT_NAMES:
		case REGOPT_MASK:
			RegOptionField(cfg, opt, List *) = isnull ? NIL : list_from_text_array(d);
			break;
		case REGOPT_OTHER:
			(void) option_catalog_type(opt);	/* an error */
	}
}

/* The SELECT of a registration: the fixed columns, then the options'. */
static char *
table_select(void)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, table_select_fixed);
	for (int i = 0; i < RegOptionCount(); i++)
		if (option_in_catalog(RegOptionAt(i)))
			appendStringInfo(&sql, ", %s", option_read_expr(RegOptionAt(i)));
	appendStringInfoString(&sql, " FROM treble_sync.tables");
	return sql.data;
}

/* Build a TableConfig from a row of table_select(), in the caller's context. */
static TableConfig *
table_from_tuple(HeapTuple tup, TupleDesc desc, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	TableConfig *cfg = palloc0(sizeof(TableConfig));
	bool		isnull;
	Datum		d;
	int			attno = Natts_select_fixed;

	cfg->table_id = DatumGetInt32(SPI_getbinval(tup, desc, Anum_select_table_id, &isnull));
	cfg->server_name = spi_text_or_null(tup, desc, Anum_select_server_name);
	cfg->remote_schema = spi_text_or_null(tup, desc, Anum_select_remote_schema);
	cfg->remote_table = spi_text_or_null(tup, desc, Anum_select_remote_table);
	cfg->local_relid = DatumGetObjectId(SPI_getbinval(tup, desc, Anum_select_local_table, &isnull));
	cfg->watermark = spi_text_or_null(tup, desc, Anum_select_watermark);
	cfg->load_cut = spi_text_or_null(tup, desc, Anum_select_load_cut);
	cfg->cursor_kind = CatalogParseCursorKind(spi_text_or_null(tup, desc, Anum_select_cursor_kind));
	cfg->all_columns = DatumGetBool(SPI_getbinval(tup, desc, Anum_select_all_columns, &isnull));
	cfg->owner = DatumGetObjectId(SPI_getbinval(tup, desc, Anum_select_owner, &isnull));
	d = SPI_getbinval(tup, desc, Anum_select_history_table, &isnull);
	cfg->history_relid = isnull ? InvalidOid : DatumGetObjectId(d);
	d = SPI_getbinval(tup, desc, Anum_select_history_from, &isnull);
	cfg->history_from = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
	cfg->revision = DatumGetInt64(SPI_getbinval(tup, desc, Anum_select_revision, &isnull));
	{
		List	   *names = list_from_text_array(SPI_getbinval(tup, desc, Anum_select_remote_column_names, &isnull));
		List	   *sigs = list_from_text_array(SPI_getbinval(tup, desc, Anum_select_remote_column_signatures, &isnull));
		ListCell   *n;
		ListCell   *g;

		forboth(n, names, g, sigs)
			cfg->remote_columns = lappend(cfg->remote_columns,
										  makeDefElem(lfirst(n), (Node *) makeString(lfirst(g)), -1));
	}
	for (int i = 0; i < RegOptionCount(); i++)
	{
		const RegOption *opt = RegOptionAt(i);

		if (!option_in_catalog(opt))
			continue;
		d = SPI_getbinval(tup, desc, ++attno, &isnull);
		option_from_column(opt, cfg, d, isnull);
	}
	Assert(attno == desc->natts);
	MemoryContextSwitchTo(old);
	return cfg;
}

/*
 * Read one registration matching "column = $1", or NULL.  The result is
 * allocated in the caller's memory context.  Read as the extension owner:
 * the watermark, load_cut and history_from columns are readable only by
 * those who may read the run log (through the status view), and the entry
 * points decide themselves, from the registration, who may act on it.
 */
static TableConfig *
lookup_table(const char *column, Oid type, Datum value)
{
	MemoryContext cxt = CurrentMemoryContext;
	TableConfig *cfg = NULL;
	CatalogUser saved = CatalogBecomeOwner();

	SPI_connect();
	catalog_exec(psprintf("%s WHERE %s OPERATOR(pg_catalog.=) $1", table_select(), column),
				 1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
		cfg = table_from_tuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, cxt);
	SPI_finish();
	CatalogRestoreUser(saved);
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

/*
 * The registration named by argument argno of an SQL function, which must
 * not be NULL (functions that take the name first are not STRICT, since
 * their other arguments may be NULL).
 */
TableConfig *
CatalogGetTableArg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name must not be NULL")));
	return CatalogGetTable(text_to_cstring(PG_GETARG_TEXT_PP(argno)), false);
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

/*
 * Was the registration inserted or changed by the current transaction
 * (add_table, alter_table, not committed yet)?  A worker runs in a
 * transaction of its own: it would not see the row, or would wait for
 * this transaction to release it.  Read as the extension owner: a system
 * column is not among the columns every role may read.
 */
bool
CatalogTableChangedHere(int32 table_id)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(table_id)};
	bool		here = false;
	CatalogUser saved = CatalogBecomeOwner();

	SPI_connect();
	catalog_exec("SELECT xmin FROM treble_sync.tables WHERE table_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		xmin = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		here = !isnull && TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin));
	}
	SPI_finish();
	CatalogRestoreUser(saved);
	return here;
}

/*
 * The enabled tables in no group whose cycles the current role may start
 * (as SecurityMayRun decides), in name order: what sync_all() runs one by
 * one (groups it runs whole, CatalogEnabledGroupIds).  The others are left
 * alone, without a run row or an event.
 */
List *
CatalogEnabledTableIds(const char *server)
{
	List	   *ids;
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {server ? CStringGetTextDatum(server) : (Datum) 0};
	char		nulls[1] = {server ? ' ' : 'n'};

	SPI_connect();
	catalog_exec("SELECT table_id FROM treble_sync.tables WHERE enabled"
				 " AND (pg_catalog.pg_has_role(owner::pg_catalog.oid, 'USAGE')"
				 "      OR (pg_catalog.has_table_privilege(local_table::pg_catalog.oid, 'SELECT')"
				 "          AND pg_catalog.has_table_privilege(local_table::pg_catalog.oid, 'INSERT')"
				 "          AND pg_catalog.has_table_privilege(local_table::pg_catalog.oid, 'UPDATE')"
				 "          AND pg_catalog.has_table_privilege(local_table::pg_catalog.oid, 'DELETE')))"
				 " AND ($1 IS NULL OR server_name::pg_catalog.text OPERATOR(pg_catalog.=) $1)"
				 " AND group_id IS NULL"	/* a group's members cycle together */
				 " ORDER BY name",
				 1, types, values, nulls, SPI_OK_SELECT);
	ids = spi_int_column(cxt);
	SPI_finish();
	return ids;
}

/*
 * Insert a run-log row ('running' or 'skipped') and return its run_id.
 */
int64
CatalogInsertRun(TableConfig *cfg, const char *status, Oid runner)
{
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, OIDOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(cfg->name);
	values[1] = CStringGetTextDatum(status);
	param_text(values, nulls, 2, cfg->watermark);
	values[3] = Int32GetDatum(MyProcPid);
	values[4] = ObjectIdGetDatum(runner);

	return DatumGetInt64(catalog_write_returning("INSERT INTO treble_sync.runs"
												 " (table_name, status, watermark_from, worker_pid, run_by, finished_at, error)"
												 " VALUES ($1, $2, $3, $4, $5,"
												 "  CASE WHEN $2 OPERATOR(pg_catalog.=) 'skipped' THEN pg_catalog.clock_timestamp() END,"
												 "  CASE WHEN $2 OPERATOR(pg_catalog.=) 'skipped'"
												 "   THEN 'another cycle of this table is already running' END)"
												 " RETURNING run_id",
												 5, types, values, nulls, SPI_OK_INSERT_RETURNING));
}

/*
 * Mark as failed the runs left 'running' by cycles that ended without
 * recording how (a crash, an immediate shutdown, or a primary that failed
 * over to this server, a promoted standby): those of the caller's table,
 * whose cycle lock the caller holds, and those of every table whose worker
 * (the run's worker_pid) is no longer a treble_sync worker here.  A cycle
 * records its outcome before its worker exits, and a row is tested only
 * if it was 'running' when the statement began and still is after its
 * worker was seen gone, so no live cycle's row is closed.  Called by every
 * cycle first: the first cycle of any table on a new primary closes them
 * all.  Returns how many it closed.  The worker is looked up by its pid
 * through pg_stat_get_activity(pid), the function under the
 * pg_stat_activity view: the same rows for that pid, without planning the
 * view's joins, which a worker's first statement would pay for every
 * cycle.  (A NULL pid would make the function return every backend: the
 * pid is compared as well, as the view was filtered.)
 */
int
CatalogFailStaleRuns(TableConfig *cfg)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(cfg->name)};

	return (int) catalog_write("UPDATE treble_sync.runs r SET status = 'failed',"
							  " finished_at = pg_catalog.clock_timestamp(),"
							  " error = 'interrupted: the process running this cycle ended before it finished (server crash, shutdown or failover); nothing of it was applied'"
							  " WHERE r.status OPERATOR(pg_catalog.=) 'running'"
							  " AND (r.table_name OPERATOR(pg_catalog.=) $1"
							  "  OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_get_activity(r.worker_pid) a"
							  "   WHERE a.pid OPERATOR(pg_catalog.=) r.worker_pid"
							  "   AND a.backend_type OPERATOR(pg_catalog.=) 'treble_sync worker'))",
							  1, types, values, NULL, SPI_OK_UPDATE);
}

/*
 * Record a finished cycle's outcome.  Its figures add to those the run
 * already has: the chunks of a chunked load record theirs as they commit.
 */
void
CatalogFinishRun(int64 run_id, CycleResult *r)
{
	Oid			types[12] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		values[12];
	char		nulls[12] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(r->status);
	param_text(values, nulls, 2, r->watermark_from);
	param_text(values, nulls, 3, r->watermark_to);
	param_text(values, nulls, 4, r->hot_window_from);
	values[5] = Int64GetDatum(r->rows_pulled);
	values[6] = Int64GetDatum(r->rows_inserted);
	values[7] = Int64GetDatum(r->rows_updated);
	values[8] = Int64GetDatum(r->rows_deleted);
	values[9] = Int64GetDatum(r->bytes_pulled);
	values[10] = Int64GetDatum(r->rows_bad);
	values[11] = Int64GetDatum(r->rows_null_cursor);

	catalog_write("UPDATE treble_sync.runs SET status = $2,"
				  " finished_at = pg_catalog.clock_timestamp(),"
				  " watermark_from = $3, watermark_to = $4, hot_window_from = $5,"
				  " rows_pulled = rows_pulled OPERATOR(pg_catalog.+) $6,"
				  " rows_inserted = rows_inserted OPERATOR(pg_catalog.+) $7,"
				  " rows_updated = rows_updated OPERATOR(pg_catalog.+) $8,"
				  " rows_deleted = rows_deleted OPERATOR(pg_catalog.+) $9,"
				  " bytes_pulled = bytes_pulled OPERATOR(pg_catalog.+) $10,"
				  " rows_bad = rows_bad OPERATOR(pg_catalog.+) $11,"
				  " rows_null_cursor = $12"
				  " WHERE run_id OPERATOR(pg_catalog.=) $1",
				  12, types, values, nulls, SPI_OK_UPDATE);
}

/* Record that a cycle failed, with the error text (which holds no secret). */
void
CatalogFailRun(int64 run_id, const char *error)
{
	catalog_write("UPDATE treble_sync.runs SET status = 'failed',"
				  " finished_at = pg_catalog.clock_timestamp(), error = $2"
				  " WHERE run_id OPERATOR(pg_catalog.=) $1"
				  " AND status OPERATOR(pg_catalog.=) 'running'",
				  2, (Oid[]) {INT8OID, TEXTOID},
				  (Datum[]) {Int64GetDatum(run_id), CStringGetTextDatum(error)},
				  NULL, SPI_OK_UPDATE);
}

/*
 * Set a table's watermark: a cycle advances it (the caller guarantees it
 * never goes back); only rewind() sets it back, or to NULL.
 */
void
CatalogSetWatermark(int32 table_id, const char *watermark)
{
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	values[0] = Int32GetDatum(table_id);
	param_text(values, nulls, 1, watermark);
	catalog_write("UPDATE treble_sync.tables SET watermark = $2"
				  " WHERE table_id OPERATOR(pg_catalog.=) $1",
				  2, (Oid[]) {INT4OID, TEXTOID}, values, nulls, SPI_OK_UPDATE);
}

/*
 * Mark a registration changed (rewind sets its watermark back): a cycle
 * that read it before will not commit (CatalogLockRegistration).
 */
void
CatalogBumpRevision(int32 table_id)
{
	Oid			type = INT4OID;
	Datum		id = Int32GetDatum(table_id);

	catalog_write("UPDATE treble_sync.tables SET revision = revision OPERATOR(pg_catalog.+) 1"
				  " WHERE table_id OPERATOR(pg_catalog.=) $1", 1, &type, &id, NULL, SPI_OK_UPDATE);
}

/*
 * In the transaction that records a cycle's outcome and watermark: lock
 * the registration row until commit and error out if it is gone, or was
 * changed since the cycle read it (its revision moved on).  alter_table,
 * remove_table and rewind refuse to run beside a cycle (they take its
 * cycle lock), so this only fires when the registration changed by a path
 * that does not, such as a trigger on the copy calling alter_table inside
 * the cycle: the cycle then applies nothing, and never commits a
 * watermark computed under the old registration.  Once locked, a change
 * that comes later waits for the cycle and is applied after it.
 */
void
CatalogLockRegistration(TableConfig *cfg)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(cfg->table_id)};
	bool		found;
	int64		revision = 0;

	Assert(IsTransactionState());
	SPI_connect();
	catalog_exec("SELECT revision FROM treble_sync.tables"
				 " WHERE table_id OPERATOR(pg_catalog.=) $1 FOR NO KEY UPDATE",
				 1, types, values, NULL, SPI_OK_SELECT);
	found = SPI_processed == 1;
	if (found)
	{
		bool		isnull;

		revision = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											   1, &isnull));
	}
	SPI_finish();
	CatalogRestoreUser(saved);

	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("table \"%s\" was unregistered while its cycle ran", cfg->name),
				 errdetail("Nothing of the cycle was applied.")));
	if (revision != cfg->revision)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("registration of \"%s\" changed while its cycle ran", cfg->name),
				 errdetail("Nothing of the cycle was applied."),
				 errhint("The next cycle runs with the new registration.")));
}

/*
 * Record whether a table keeps history (keep NULL: not), in which table,
 * and from which cut (history.c).
 */
void
CatalogSetHistory(int32 table_id, Interval *keep, Oid history_relid, TimestampTz from)
{
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = Int32GetDatum(table_id);
	param_datum(values, nulls, 1, IntervalPGetDatum(keep), keep == NULL);
	param_datum(values, nulls, 2, ObjectIdGetDatum(history_relid), !OidIsValid(history_relid));
	param_datum(values, nulls, 3, TimestampTzGetDatum(from), keep == NULL);
	catalog_write("UPDATE treble_sync.tables SET keep_history = $2,"
				  " history_table = $3::pg_catalog.regclass, history_from = $4"
				  " WHERE table_id OPERATOR(pg_catalog.=) $1",
				  4, (Oid[]) {INT4OID, INTERVALOID, OIDOID, TIMESTAMPTZOID}, values, nulls,
				  SPI_OK_UPDATE);
}

/* Is this run still marked 'running'? (its worker may have died) */
bool
CatalogRunIsRunning(int64 run_id)
{
	return catalog_exists("SELECT 1 FROM treble_sync.runs WHERE run_id OPERATOR(pg_catalog.=) $1"
						  " AND status OPERATOR(pg_catalog.=) 'running'",
						  INT8OID, Int64GetDatum(run_id), false);
}

/*
 * The whole run-log row, as a composite datum in the caller's context.
 * Read as the extension owner (past row-level security): the caller
 * started the run, so it may see how it ended.
 */
Datum
CatalogRunRow(int64 run_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};
	Datum		row;
	bool		isnull;
	CatalogUser saved = CatalogBecomeOwner();

	SPI_connect();
	catalog_exec("SELECT r FROM treble_sync.runs r WHERE run_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		elog(ERROR, "treble_sync run %lld not found", (long long) run_id);
	row = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	row = SPI_datumTransfer(row, false, -1);
	SPI_finish();
	CatalogRestoreUser(saved);
	return row;
}

/*
 * Add a run's whole run-log row (CatalogRunRow) to the result of a
 * set-returning function: the rows sync_all() and sync_group() return.
 */
void
CatalogPutRunRow(Tuplestorestate *store, int64 run_id)
{
	HeapTupleHeader row = DatumGetHeapTupleHeader(CatalogRunRow(run_id));
	HeapTupleData tuple;

	tuple.t_len = HeapTupleHeaderGetDatumLength(row);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = row;
	tuplestore_puttuple(store, &tuple);
}

/*
 * The registration's columns that are no option of add_table(), bound as
 * parameters $1 to $7 of its INSERT (regclass and regrole given as oids).
 */
#define INSERT_FIXED_COLUMNS \
	"server_name, remote_schema, remote_table, local_table, owner, cursor_kind, all_columns"
#define INSERT_FIXED_VALUES \
	"$1, $2, $3, $4::pg_catalog.regclass, $5::pg_catalog.regrole, $6, $7"
#define INSERT_NFIXED 7

/* The catalog's name of the kind of a cursor, or NULL without one. */
static const char *
cursor_kind_param(TableConfig *cfg)
{
	return cfg->cursor_column ? CatalogCursorKindName(cfg->cursor_kind) : NULL;
}

/*
 * Register a table: a row of treble_sync.tables with every option that
 * the catalog keeps (regoption.c) but those written on their own;
 * returns the new row.
 */
Datum
CatalogInsertTable(TableConfig *cfg, Oid owner)
{
	int			n = RegOptionCount() + INSERT_NFIXED;
	Oid		   *types = palloc(sizeof(Oid) * n);
	Datum	   *values = palloc(sizeof(Datum) * n);
	char	   *nulls = palloc(sizeof(char) * n);
	StringInfoData columns;
	StringInfoData params;
	int			nargs = INSERT_NFIXED;

	memcpy(types, (Oid[INSERT_NFIXED]) {NAMEOID, TEXTOID, TEXTOID, OIDOID, OIDOID, TEXTOID, BOOLOID},
		   sizeof(Oid) * INSERT_NFIXED);
	param_datum(values, nulls, 0, DirectFunctionCall1(namein, CStringGetDatum(cfg->server_name)), false);
	param_text(values, nulls, 1, cfg->remote_schema);
	param_text(values, nulls, 2, cfg->remote_table);
	param_datum(values, nulls, 3, ObjectIdGetDatum(cfg->local_relid), false);
	param_datum(values, nulls, 4, ObjectIdGetDatum(owner), false);
	param_text(values, nulls, 5, cursor_kind_param(cfg));
	param_datum(values, nulls, 6, BoolGetDatum(cfg->all_columns), false);

	initStringInfo(&columns);
	initStringInfo(&params);
	appendStringInfoString(&columns, INSERT_FIXED_COLUMNS);
	appendStringInfoString(&params, INSERT_FIXED_VALUES);
	for (int i = 0; i < RegOptionCount(); i++)
	{
		const RegOption *opt = RegOptionAt(i);

		if (!option_in_catalog(opt) || (opt->flags & REGOPT_OWN_WRITE))
			continue;
		param_option(opt, cfg, types, values, nulls, nargs);
		appendStringInfo(&columns, ", %s", opt->column);
		appendStringInfo(&params, ", %s", option_write_expr(opt, ++nargs));
	}
	return catalog_write_returning(psprintf("INSERT INTO treble_sync.tables AS t (%s) VALUES (%s) RETURNING t",
											columns.data, params.data),
								   nargs, types, values, nulls, SPI_OK_INSERT_RETURNING);
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

/*
 * Begin a chunked first load: record its cut and its chunks, all to be
 * committed before any chunk is loaded.
 */
void
CatalogStartLoad(int32 table_id, const char *cut, List *chunks)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[4] = {INT4OID, INT4OID, TIMESTAMPOID, TIMESTAMPOID};
	Datum		values[4];
	ListCell   *lc;

	SPI_connect();
	values[0] = Int32GetDatum(table_id);
	values[1] = CStringGetTextDatum(cut);
	catalog_exec("UPDATE treble_sync.tables SET load_cut = $2"
				 " WHERE table_id OPERATOR(pg_catalog.=) $1",
				 2, (Oid[]) {INT4OID, TEXTOID}, values, NULL, SPI_OK_UPDATE);
	catalog_exec("DELETE FROM treble_sync.load_chunks WHERE table_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_DELETE);
	foreach(lc, chunks)
	{
		LoadChunk  *c = lfirst(lc);

		CHECK_FOR_INTERRUPTS();
		values[1] = Int32GetDatum(c->chunk);
		values[2] = TimestampGetDatum(c->lo);
		values[3] = TimestampGetDatum(c->hi);
		catalog_exec("INSERT INTO treble_sync.load_chunks (table_id, chunk, lo, hi)"
					 " VALUES ($1, $2, $3, $4)",
					 4, types, values, NULL, SPI_OK_INSERT);
	}
	SPI_finish();
	CatalogRestoreUser(saved);
}

/*
 * Claim the next chunk no worker of this attempt has claimed, for run_id:
 * the claim is marked in the chunk's row (its run_id), and the caller
 * commits it before it loads the chunk.  A chunk that fails is then
 * never claimed again in the same attempt, even in the moment between
 * the failure's rollback and the record of its error, so its bad row is
 * met (and kept in the quarantine) once; CatalogOpenChunks makes the
 * unloaded chunks claimable again when a later attempt or run resumes the
 * load.  SKIP LOCKED: two workers claiming at once take two chunks.
 */
bool
CatalogClaimChunk(int32 table_id, int64 run_id, LoadChunk *chunk)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[2] = {INT4OID, INT8OID};
	Datum		values[2] = {Int32GetDatum(table_id), Int64GetDatum(run_id)};
	bool		found;
	bool		isnull;

	Assert(run_id > 0);
	SPI_connect();
	/*
	 * The chunk is chosen by an uncorrelated subquery, run once: as the inner
	 * side of a join rescanned per row, it would pass over the row this
	 * statement just claimed and claim the next, and so every chunk.
	 */
	catalog_exec("UPDATE treble_sync.load_chunks SET run_id = $2"
				 " WHERE table_id OPERATOR(pg_catalog.=) $1 AND chunk OPERATOR(pg_catalog.=)"
				 "  (SELECT chunk FROM treble_sync.load_chunks"
				 "   WHERE table_id OPERATOR(pg_catalog.=) $1 AND NOT done AND run_id IS NULL"
				 "   ORDER BY chunk LIMIT 1 FOR UPDATE SKIP LOCKED)"
				 " RETURNING chunk, lo, hi",
				 2, types, values, NULL, SPI_OK_UPDATE_RETURNING);
	Assert(SPI_processed <= 1);
	found = SPI_processed == 1;
	if (found)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		chunk->chunk = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		chunk->lo = DatumGetTimestamp(SPI_getbinval(tup, desc, 2, &isnull));
		chunk->hi = DatumGetTimestamp(SPI_getbinval(tup, desc, 3, &isnull));
	}
	SPI_finish();
	CatalogRestoreUser(saved);
	return found;
}

/*
 * Make every chunk of a load in progress that is not loaded claimable
 * again, its claim and error forgotten: an attempt that resumes a load
 * (a later run, or a retry of this one) loads what the last one did not.
 */
void
CatalogOpenChunks(int32 table_id)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(table_id)};

	catalog_write("UPDATE treble_sync.load_chunks SET run_id = NULL, error = NULL"
				  " WHERE table_id OPERATOR(pg_catalog.=) $1 AND NOT done",
				  1, types, values, NULL, SPI_OK_UPDATE);
}

/* A chunk is in: mark it done and add its figures to the run. */
void
CatalogFinishChunk(int32 table_id, int chunk, int64 run_id, CycleResult *r)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[7] = {INT4OID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		values[7];

	values[0] = Int32GetDatum(table_id);
	values[1] = Int32GetDatum(chunk);
	values[2] = Int64GetDatum(run_id);
	values[3] = Int64GetDatum(r->rows_pulled);
	values[4] = Int64GetDatum(r->rows_inserted);
	values[5] = Int64GetDatum(r->rows_updated);
	values[6] = Int64GetDatum(r->bytes_pulled);

	SPI_connect();
	catalog_exec("UPDATE treble_sync.load_chunks SET done = true, run_id = $3,"
				 " rows_pulled = $4, rows_written = $5 OPERATOR(pg_catalog.+) $6,"
				 " finished_at = pg_catalog.clock_timestamp(), error = NULL"
				 " WHERE table_id OPERATOR(pg_catalog.=) $1 AND chunk OPERATOR(pg_catalog.=) $2",
				 7, types, values, NULL, SPI_OK_UPDATE);
	catalog_exec("UPDATE treble_sync.runs SET rows_pulled = rows_pulled OPERATOR(pg_catalog.+) $4,"
				 " rows_inserted = rows_inserted OPERATOR(pg_catalog.+) $5,"
				 " rows_updated = rows_updated OPERATOR(pg_catalog.+) $6,"
				 " bytes_pulled = bytes_pulled OPERATOR(pg_catalog.+) $7"
				 " WHERE run_id OPERATOR(pg_catalog.=) $3",
				 7, types, values, NULL, SPI_OK_UPDATE);
	SPI_finish();
	CatalogRestoreUser(saved);
}

/*
 * Record why a chunk could not be loaded (in a transaction of its own).
 * reopen: the failure may pass (a lost connection, a terminated helper),
 * so another worker of the attempt may claim the chunk again; otherwise
 * (a bad row) it stays claimed, and the attempt ends without it.
 */
void
CatalogChunkFailed(int32 table_id, int chunk, const char *error, bool reopen)
{
	Oid			types[4] = {INT4OID, INT4OID, TEXTOID, BOOLOID};
	Datum		values[4] = {Int32GetDatum(table_id), Int32GetDatum(chunk),
	CStringGetTextDatum(error), BoolGetDatum(reopen)};

	catalog_write("UPDATE treble_sync.load_chunks SET error = $3,"
				  " run_id = CASE WHEN $4 THEN NULL ELSE run_id END"
				  " WHERE table_id OPERATOR(pg_catalog.=) $1 AND chunk OPERATOR(pg_catalog.=) $2"
				  " AND NOT done",
				  4, types, values, NULL, SPI_OK_UPDATE);
}

/*
 * How far a chunked load is: its number of chunks, how many are done, and
 * the error of the first failed one (NULL if none).
 */
void
CatalogLoadState(int32 table_id, int *chunks, int *done, char **first_error)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(table_id)};
	MemoryContext cxt = CurrentMemoryContext;
	bool		isnull;

	SPI_connect();
	catalog_exec("SELECT pg_catalog.count(*)::integer,"
				 " (pg_catalog.count(*) FILTER (WHERE done))::integer,"
				 " (SELECT 'chunk ' OPERATOR(pg_catalog.||) chunk OPERATOR(pg_catalog.||) ': '"
				 "   OPERATOR(pg_catalog.||) error FROM treble_sync.load_chunks"
				 "  WHERE table_id OPERATOR(pg_catalog.=) $1 AND NOT done AND error IS NOT NULL"
				 "  ORDER BY chunk LIMIT 1)"
				 " FROM treble_sync.load_chunks WHERE table_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_SELECT);
	*chunks = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*done = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (first_error)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		*first_error = spi_text_or_null(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
}

/* The load is complete (in the transaction that sets the watermark). */
void
CatalogEndLoad(int32 table_id)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(table_id)};

	SPI_connect();
	catalog_exec("DELETE FROM treble_sync.load_chunks WHERE table_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_DELETE);
	catalog_exec("UPDATE treble_sync.tables SET load_cut = NULL"
				 " WHERE table_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_UPDATE);
	SPI_finish();
	CatalogRestoreUser(saved);
}

/* The catalog's name of a cursor kind, and back. */
static const char *
CatalogCursorKindName(CursorKind kind)
{
	return kind == CURSOR_INTEGER ? "integer" : "timestamp";
}

static CursorKind
CatalogParseCursorKind(const char *name)
{
	if (name == NULL)
		return CURSOR_NONE;
	return strcmp(name, "integer") == 0 ? CURSOR_INTEGER : CURSOR_TIMESTAMP;
}

/*
 * Write a changed registration back (alter_table): every option the
 * catalog keeps (regoption.c) but those written on their own, and the
 * cursor's kind.  With reset, the watermark and any first load in
 * progress are dropped: the next cycle is a first sync again.  A new name
 * takes the table's quarantine rows along.  Returns the new row.
 */
Datum
CatalogUpdateTable(TableConfig *cfg, bool reset)
{
	int			n = RegOptionCount() + 3;
	Oid		   *types = palloc(sizeof(Oid) * n);
	Datum	   *values = palloc(sizeof(Datum) * n);
	char	   *nulls = palloc(sizeof(char) * n);
	StringInfoData sql;
	int			nargs = 3;

	types[0] = INT4OID;
	param_datum(values, nulls, 0, Int32GetDatum(cfg->table_id), false);
	types[1] = BOOLOID;
	param_datum(values, nulls, 1, BoolGetDatum(reset), false);
	types[2] = TEXTOID;
	param_text(values, nulls, 2, cursor_kind_param(cfg));

	if (reset)
		catalog_delete_by_id("DELETE FROM treble_sync.load_chunks WHERE table_id OPERATOR(pg_catalog.=) $1",
							 INT4OID, Int32GetDatum(cfg->table_id));
	/* a new name: the quarantine, keyed by name and owner, follows it */
	catalog_write("UPDATE treble_sync.quarantine q SET table_name = $2"
				  " FROM treble_sync.tables t WHERE t.table_id OPERATOR(pg_catalog.=) $1"
				  " AND q.table_name OPERATOR(pg_catalog.=) t.name AND q.owner OPERATOR(pg_catalog.=) t.owner"
				  " AND t.name OPERATOR(pg_catalog.<>) $2",
				  2, (Oid[]) {INT4OID, TEXTOID},
				  (Datum[]) {Int32GetDatum(cfg->table_id), CStringGetTextDatum(cfg->name)},
				  NULL, SPI_OK_UPDATE);

	initStringInfo(&sql);
	appendStringInfoString(&sql, "UPDATE treble_sync.tables AS t SET cursor_kind = $3,"
						   " watermark = CASE WHEN $2 THEN NULL ELSE watermark END,"
						   " load_cut = CASE WHEN $2 THEN NULL ELSE load_cut END,"
						   " revision = revision OPERATOR(pg_catalog.+) 1");
	for (int i = 0; i < RegOptionCount(); i++)
	{
		const RegOption *opt = RegOptionAt(i);

		if (!option_in_catalog(opt) || (opt->flags & REGOPT_OWN_WRITE))
			continue;
		param_option(opt, cfg, types, values, nulls, nargs);
		appendStringInfo(&sql, ", %s = %s", opt->column, option_write_expr(opt, ++nargs));
	}
	appendStringInfoString(&sql, " WHERE table_id OPERATOR(pg_catalog.=) $1 RETURNING t");
	return catalog_write_returning(sql.data, nargs, types, values, nulls, SPI_OK_UPDATE_RETURNING);
}

/* Unregister a table (remove_table); its run log stays. */
void
CatalogDeleteTable(int32 table_id)
{
	catalog_delete_by_id("DELETE FROM treble_sync.tables WHERE table_id OPERATOR(pg_catalog.=) $1",
						 INT4OID, Int32GetDatum(table_id));
}

/*
 * What follows every run, in the transaction that records its outcome:
 * incidents and their NOTIFY events, and the pruning of old run rows
 * (treble_sync.after_run() in the install script).
 */
void
CatalogAfterRun(int64 run_id)
{
	Oid			types[2] = {INT8OID, INTERVALOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	values[0] = Int64GetDatum(run_id);
	if (treble_sync_run_retention >= 0)
		values[1] = DirectFunctionCall3(interval_in,
										CStringGetDatum(psprintf("%d minutes", treble_sync_run_retention)),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	else
		nulls[1] = 'n';

	catalog_write("SELECT treble_sync.after_run($1, $2)", 2, types, values, nulls, SPI_OK_SELECT);
}

/*
 * Record how many attempts a run took, the cut it froze and the schema
 * drift it saw, if any.
 */
void
CatalogSetRunDetails(int64 run_id, int attempts, const char *cut, const char *drift,
					 const char *warnings)
{
	Oid			types[5] = {INT8OID, INT4OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[5] = {Int64GetDatum(run_id), Int32GetDatum(attempts),
		cut ? CStringGetTextDatum(cut) : (Datum) 0,
		drift ? CStringGetTextDatum(drift) : (Datum) 0,
	warnings ? CStringGetTextDatum(warnings) : (Datum) 0};
	char		nulls[5] = {' ', ' ', cut ? ' ' : 'n', drift ? ' ' : 'n', warnings ? ' ' : 'n'};

	catalog_write("UPDATE treble_sync.runs SET attempts = $2, cut = coalesce($3, cut),"
				  " drift = coalesce($4, drift), warnings = $5"
				  " WHERE run_id OPERATOR(pg_catalog.=) $1",
				  5, types, values, nulls, SPI_OK_UPDATE);
}

/*
 * The salt of an owner's masked columns, made on first use: a salt per
 * owner, so that a role cannot recover another role's masked values by
 * masking candidate values of its own.  Read and written as the
 * extension's owner: nobody else reads it.
 */
bytea *
CatalogMaskSalt(Oid owner)
{
	CatalogUser saved = CatalogBecomeOwner();
	MemoryContext cxt = CurrentMemoryContext;
	bytea	   *salt = NULL;
	Oid			types[2] = {OIDOID, BYTEAOID};
	Datum		values[2];

	values[0] = ObjectIdGetDatum(owner);
	SPI_connect();
	for (int attempt = 0; salt == NULL && attempt < 2; attempt++)
	{
		CHECK_FOR_INTERRUPTS();
		catalog_exec("SELECT salt FROM treble_sync.mask_salt"
					 " WHERE owner OPERATOR(pg_catalog.=) $1::pg_catalog.regrole",
					 1, types, values, NULL, SPI_OK_SELECT);
		if (SPI_processed == 1)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
			MemoryContext old = MemoryContextSwitchTo(cxt);

			salt = DatumGetByteaPCopy(d);
			MemoryContextSwitchTo(old);
		}
		else
		{
			bytea	   *fresh = palloc(VARHDRSZ + MASK_SALT_BYTES);

			SET_VARSIZE(fresh, VARHDRSZ + MASK_SALT_BYTES);
			if (!pg_strong_random(VARDATA(fresh), MASK_SALT_BYTES))
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("could not generate a random mask salt")));
			values[1] = PointerGetDatum(fresh);
			catalog_exec("INSERT INTO treble_sync.mask_salt (owner, salt)"
						 " VALUES ($1::pg_catalog.regrole, $2) ON CONFLICT (owner) DO NOTHING",
						 2, types, values, NULL, SPI_OK_INSERT);
			CommandCounterIncrement();
		}
	}
	SPI_finish();
	CatalogRestoreUser(saved);
	if (salt == NULL)
		elog(ERROR, "could not read the mask salt of role %u", owner);
	return salt;
}

/*
 * Record the warehouse's columns (for drift checks) and the synced
 * columns of a registration.
 */
Datum
CatalogSetRemoteColumns(TableConfig *cfg)
{
	Oid			types[5] = {INT4OID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, BOOLOID};
	Datum		values[5];
	List	   *names = NIL;
	List	   *sigs = NIL;
	ListCell   *lc;

	foreach(lc, cfg->remote_columns)
	{
		DefElem    *def = lfirst(lc);

		names = lappend(names, def->defname);
		sigs = lappend(sigs, strVal(def->arg));
	}
	values[0] = Int32GetDatum(cfg->table_id);
	values[1] = text_array_from_list(names);
	values[2] = text_array_from_list(sigs);
	values[3] = text_array_from_list(cfg->columns);
	values[4] = BoolGetDatum(cfg->all_columns);

	return catalog_write_returning("UPDATE treble_sync.tables AS t SET columns = $4, all_columns = $5,"
								   " remote_columns = (SELECT pg_catalog.jsonb_object_agg(n, s)"
								   "  FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS x(n, s))"
								   " WHERE table_id OPERATOR(pg_catalog.=) $1 RETURNING t",
								   5, types, values, NULL, SPI_OK_UPDATE_RETURNING);
}

/*
 * A text array of one field of the rows, NULLs kept, for
 * CatalogQuarantine's unnest.
 */
static Datum
quarantine_field_array(const QuarantineRow *rows, int nrows, Size offset)
{
	Datum	   *values = palloc(sizeof(Datum) * Max(nrows, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(nrows, 1));
	int			dims[1] = {nrows};
	int			lbs[1] = {1};

	for (int i = 0; i < nrows; i++)
	{
		const char *v = *(const char *const *) ((const char *) &rows[i] + offset);

		nulls[i] = v == NULL;
		values[i] = v ? CStringGetTextDatum(v) : (Datum) 0;
	}
	return PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs, TEXTOID, -1, false,
											  TYPALIGN_INT));
}

/*
 * Keep rows the copy cannot take (on_bad_row 'quarantine'), a batch in one
 * statement: one row at a time, a first load with thousands of bad rows
 * paid a statement (and a scan of the table's quarantine) for each.  A
 * row the quarantine already holds (same table, key, column, raw value and
 * reason, and for a row without a key the same row_digest: the same bad
 * row pulled again) is not kept twice: its last_run_id, last_seen_at,
 * times_seen and cursor_value are updated instead, and it is no longer
 * resolved (nor a failed run's row) if it was; the same row twice in the
 * batch is one row seen twice.  Returns how many of the rows an earlier
 * run set aside first: the cycle does not count them against
 * max_bad_row_ratio again (a row only kept by a failed run counts).
 */
int64
CatalogQuarantine(TableConfig *cfg, int64 run_id, const QuarantineRow *rows, int nrows)
{
	CatalogUser saved;
	Oid			types[8] = {TEXTOID, INT8OID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		values[8];
	int64		known = 0;
	int			nestlevel;

	if (nrows == 0)
		return 0;
	for (int i = 0; i < nrows; i++)
		Assert((rows[i].key != NULL || rows[i].row_digest != NULL) && rows[i].reason != NULL);
	values[0] = CStringGetTextDatum(cfg->name);
	values[1] = Int64GetDatum(run_id);
	values[2] = quarantine_field_array(rows, nrows, offsetof(QuarantineRow, key));
	values[3] = quarantine_field_array(rows, nrows, offsetof(QuarantineRow, column));
	values[4] = quarantine_field_array(rows, nrows, offsetof(QuarantineRow, raw));
	values[5] = quarantine_field_array(rows, nrows, offsetof(QuarantineRow, reason));
	values[6] = quarantine_field_array(rows, nrows, offsetof(QuarantineRow, cursor_value));
	values[7] = quarantine_field_array(rows, nrows, offsetof(QuarantineRow, row_digest));

	/*
	 * A row's identity as one text ('k' and the key, or 'd' and the digest
	 * of a row without one) with its reason: the batch and the table's
	 * quarantine are matched by a hash join on them, the column and raw
	 * value compared after.  The oldest quarantine row of an identity is
	 * the one a row seen again updates.  Hash joins are allowed here (the
	 * cycle's worker turns them off): a nested loop costs the batch's rows
	 * times the quarantine's.
	 */
	saved = CatalogBecomeOwner();
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("enable_hashjoin", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	SPI_connect();
	catalog_exec("WITH b AS (SELECT u.key, u.column_name, u.raw_value, u.reason, u.row_digest,"
				 "   pg_catalog.count(*) AS seen, pg_catalog.min(u.n) AS first_n,"
				 "   (pg_catalog.array_agg(u.cursor_value ORDER BY u.n DESC))[1] AS cursor_value,"
				 "   COALESCE('k' OPERATOR(pg_catalog.||) u.key, 'd' OPERATOR(pg_catalog.||) u.row_digest) AS ident"
				 "  FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5),"
				 "   pg_catalog.unnest($6), pg_catalog.unnest($7), pg_catalog.unnest($8)) WITH ORDINALITY"
				 "   u(key, column_name, raw_value, reason, cursor_value, row_digest, n)"
				 "  GROUP BY u.key, u.column_name, u.raw_value, u.reason, u.row_digest),"
				 " q AS (SELECT DISTINCT ON (ident, q.reason, q.column_name, q.raw_value)"
				 "   q.quarantine_id, q.run_id, q.failed_run, q.reason, q.column_name, q.raw_value,"
				 "   COALESCE('k' OPERATOR(pg_catalog.||) q.key, 'd' OPERATOR(pg_catalog.||) q.row_digest) AS ident"
				 "  FROM treble_sync.quarantine q WHERE q.table_name OPERATOR(pg_catalog.=) $1"
				 "  AND q.owner OPERATOR(pg_catalog.=) (SELECT t.owner FROM treble_sync.tables t"
				 "      WHERE t.name OPERATOR(pg_catalog.=) $1)"
				 "  ORDER BY ident, q.reason, q.column_name, q.raw_value, q.quarantine_id),"
				 " m AS (SELECT b.*, q.quarantine_id, q.run_id AS first_run_id, q.failed_run AS was_failed"
				 "  FROM b LEFT JOIN q"
				 "  ON q.ident OPERATOR(pg_catalog.=) b.ident AND q.reason OPERATOR(pg_catalog.=) b.reason"
				 "  AND q.column_name IS NOT DISTINCT FROM b.column_name"
				 "  AND q.raw_value IS NOT DISTINCT FROM b.raw_value),"
				 " up AS (UPDATE treble_sync.quarantine q SET last_run_id = $2,"
				 "   last_seen_at = pg_catalog.clock_timestamp(),"
				 "   times_seen = q.times_seen OPERATOR(pg_catalog.+) m.seen,"
				 "   cursor_value = m.cursor_value, resolved_run_id = NULL, failed_run = false"
				 "  FROM m WHERE q.quarantine_id OPERATOR(pg_catalog.=) m.quarantine_id"
				 "  RETURNING CASE WHEN m.first_run_id OPERATOR(pg_catalog.<>) $2"
				 "   AND NOT m.was_failed THEN m.seen ELSE 0 END AS known),"
				 " ins AS (INSERT INTO treble_sync.quarantine (table_name, run_id, key, column_name,"
				 "   raw_value, reason, last_run_id, cursor_value, row_digest, times_seen, failed_run)"
				 "  SELECT $1, $2, m.key, m.column_name, m.raw_value, m.reason, $2, m.cursor_value,"
				 "   m.row_digest, m.seen, false FROM m WHERE m.quarantine_id IS NULL"
				 "  ORDER BY m.first_n)"
				 " SELECT CAST(COALESCE(pg_catalog.sum(known), 0) AS pg_catalog.int8) FROM up",
				 8, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		bool		isnull;

		known = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
	CatalogRestoreUser(saved);
	Assert(known >= 0 && known <= nrows);
	return known;
}

/*
 * Keep the row that failed a cycle under on_bad_row 'fail' (its key,
 * column, raw value and PostgreSQL's message), after the cycle rolled
 * back, with the failed run: the run's error names only the row's
 * position, and the quarantine, readable by those who may read the copy,
 * is where its owner finds the row.  Returns its quarantine_id.
 */
int64
CatalogQuarantineFailedRow(const char *table_name, int64 run_id, const char *key,
						   const char *column, const char *raw, const char *reason,
						   const char *cursor_value)
{
	int64		id = 0;

	Assert(key != NULL);
	(void) quarantine_row(table_name, run_id, key, column, raw, reason, cursor_value,
						  NULL, true, &id);
	return id;
}

/*
 * Keep one row for a table by name, failed_run telling whether the
 * row failed its run (on_bad_row 'fail') or was set aside; the
 * quarantine_id of the row kept (new or updated) into *id if id is not
 * NULL.  A row only kept as the evidence of a failed run was never set
 * aside: when a later cycle sets it aside, it counts against
 * max_bad_row_ratio as a new one.
 */
static bool
quarantine_row(const char *table_name, int64 run_id, const char *key, const char *column,
			   const char *raw, const char *reason, const char *cursor_value,
			   const char *row_digest, bool failed_run, int64 *id)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[9] = {TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	BOOLOID};
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		known = false;
	bool		isnull;

	Assert(key != NULL || row_digest != NULL);
	values[0] = CStringGetTextDatum(table_name);
	values[1] = Int64GetDatum(run_id);
	param_text(values, nulls, 2, key);
	param_text(values, nulls, 3, column);
	param_text(values, nulls, 4, raw);
	values[5] = CStringGetTextDatum(reason);
	param_text(values, nulls, 6, cursor_value);
	param_text(values, nulls, 7, row_digest);
	values[8] = BoolGetDatum(failed_run);

	SPI_connect();
	/*
	 * Two workers of one chunked load keeping a row that failed them at the
	 * same moment: the second waits for the first's commit (a transaction
	 * of its own, this statement and the next) and updates its row.
	 */
	catalog_exec("SELECT table_id FROM treble_sync.tables WHERE name OPERATOR(pg_catalog.=) $1",
				 1, types, values, nulls, SPI_OK_SELECT);
	if (SPI_processed == 1)
		LockWaitQuarantineLock(DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
														   SPI_tuptable->tupdesc, 1, &isnull)));
	/*
	 * The row to update is chosen once (MATERIALIZED): as the inner side of
	 * a join rescanned per row, the locking subquery would pass over the
	 * row this statement just updated and take the next of the same
	 * identity, if there is one.
	 */
	catalog_exec("WITH m AS MATERIALIZED"
				 " (SELECT quarantine_id, run_id AS first_run_id, failed_run AS was_failed"
				 "  FROM treble_sync.quarantine"
				 "  WHERE table_name OPERATOR(pg_catalog.=) $1"
				 "  AND owner OPERATOR(pg_catalog.=) (SELECT t.owner FROM treble_sync.tables t"
				 "      WHERE t.name OPERATOR(pg_catalog.=) $1)"
				 "  AND (key OPERATOR(pg_catalog.=) $3"
				 "   OR (key IS NULL AND $3 IS NULL AND row_digest OPERATOR(pg_catalog.=) $8))"
				 "  AND (column_name OPERATOR(pg_catalog.=) $4 OR (column_name IS NULL AND $4 IS NULL))"
				 "  AND (raw_value OPERATOR(pg_catalog.=) $5 OR (raw_value IS NULL AND $5 IS NULL))"
				 "  AND reason OPERATOR(pg_catalog.=) $6"
				 "  ORDER BY quarantine_id LIMIT 1 FOR UPDATE)"
				 " UPDATE treble_sync.quarantine q SET last_run_id = $2,"
				 " last_seen_at = pg_catalog.clock_timestamp(),"
				 " times_seen = q.times_seen OPERATOR(pg_catalog.+) 1,"
				 " cursor_value = $7, resolved_run_id = NULL, failed_run = $9"
				 " FROM m WHERE q.quarantine_id OPERATOR(pg_catalog.=) m.quarantine_id"
				 " RETURNING m.first_run_id OPERATOR(pg_catalog.<>) $2 AND NOT m.was_failed,"
				 " q.quarantine_id",
				 9, types, values, nulls, SPI_OK_UPDATE_RETURNING);
	if (SPI_processed > 0)
		known = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	else
		catalog_exec("INSERT INTO treble_sync.quarantine (table_name, run_id, key, column_name,"
					 " raw_value, reason, last_run_id, cursor_value, row_digest, failed_run)"
					 " VALUES ($1, $2, $3, $4, $5, $6, $2, $7, $8, $9) RETURNING quarantine_id",
					 9, types, values, nulls, SPI_OK_INSERT_RETURNING);
	if (id != NULL && SPI_processed > 0)
		*id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										  SPI_tuptable->tupdesc->natts, &isnull));
	SPI_finish();
	CatalogRestoreUser(saved);
	return known;
}

/*
 * The keys (as the quarantine writes them) of the unresolved quarantine
 * rows of a table with a key, and their versions, each as the key, a
 * newline and the cursor_value (rows without one left out), as two text
 * arrays in the caller's memory context; false if there are none.  Read as the extension owner: the cycle's role need not read the
 * quarantine.
 */
bool
CatalogQuarantinedVersions(TableConfig *cfg, Datum *keys, Datum *versions)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(cfg->name)};
	MemoryContext cxt = CurrentMemoryContext;
	bool		found = false;

	SPI_connect();
	catalog_exec("SELECT pg_catalog.array_agg(key), COALESCE(pg_catalog.array_agg("
				 "   key OPERATOR(pg_catalog.||) E'\\n' OPERATOR(pg_catalog.||) cursor_value)"
				 "   FILTER (WHERE cursor_value IS NOT NULL), '{}')"
				 " FROM treble_sync.quarantine WHERE table_name OPERATOR(pg_catalog.=) $1"
				 " AND owner OPERATOR(pg_catalog.=) (SELECT t.owner FROM treble_sync.tables t"
				 "     WHERE t.name OPERATOR(pg_catalog.=) $1)"
				 " AND resolved_run_id IS NULL AND key IS NOT NULL",
				 1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		k = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
		{
			Datum		c = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
			MemoryContext old = MemoryContextSwitchTo(cxt);

			*keys = PointerGetDatum(DatumGetArrayTypePCopy(k));
			*versions = PointerGetDatum(DatumGetArrayTypePCopy(c));
			MemoryContextSwitchTo(old);
			found = true;
		}
	}
	SPI_finish();
	CatalogRestoreUser(saved);
	return found;
}

/*
 * Mark resolved, by run_id, the unresolved quarantine rows of a table
 * whose key is one of keys (a text array, in the quarantine's form) and
 * that this run did not set aside again: a good version of the key was
 * applied.
 */
void
CatalogResolveQuarantine(TableConfig *cfg, int64 run_id, Datum keys)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[3] = {TEXTOID, INT8OID, TEXTARRAYOID};
	Datum		values[3] = {CStringGetTextDatum(cfg->name), Int64GetDatum(run_id), keys};

	SPI_connect();
	catalog_exec("UPDATE treble_sync.quarantine SET resolved_run_id = $2"
				 " WHERE table_name OPERATOR(pg_catalog.=) $1"
				 " AND owner OPERATOR(pg_catalog.=) (SELECT t.owner FROM treble_sync.tables t"
				 "     WHERE t.name OPERATOR(pg_catalog.=) $1)"
				 " AND resolved_run_id IS NULL AND last_run_id OPERATOR(pg_catalog.<>) $2"
				 " AND key OPERATOR(pg_catalog.=) ANY ($3)",
				 3, types, values, NULL, SPI_OK_UPDATE);
	SPI_finish();
	CatalogRestoreUser(saved);
}

/*
 * Record the results of a run's quality checks (json: the rows of
 * treble_sync.run_checks(), as a JSON array) in treble_sync.check_results.
 */
void
CatalogInsertCheckResults(int64 run_id, const char *table_name, const char *json)
{
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3] = {Int64GetDatum(run_id), CStringGetTextDatum(table_name),
	CStringGetTextDatum(json)};

	catalog_write("INSERT INTO treble_sync.check_results"
				  " (run_id, check_id, table_name, kind, severity, passed, observed, failing_keys)"
				  " SELECT $1, x.check_id, $2, x.kind, x.severity, x.passed, x.observed, x.failing_keys"
				  " FROM pg_catalog.jsonb_to_recordset($3::pg_catalog.jsonb) AS x(check_id bigint,"
				  " kind pg_catalog.text, severity pg_catalog.text, passed boolean,"
				  " observed pg_catalog.text, failing_keys pg_catalog.text[])",
				  3, types, values, NULL, SPI_OK_INSERT);
}

/*
 * Declare a quality check of a registration (add_check, which has
 * validated it and filled in the defaults).  columns may be NIL; settings
 * are indexed by CheckSetting.  Returns the new treble_sync.checks row.
 */
Datum
CatalogInsertCheck(int32 table_id, const char *kind, List *columns,
				   const NullableDatum settings[CHECK_NSETTINGS], const char *severity)
{
	Oid			types[12] = {INT4OID, TEXTOID, TEXTARRAYOID, NUMERICOID, NUMERICOID, FLOAT4OID,
		INTERVALOID, OIDOID, TEXTOID, INT4OID, FLOAT4OID, TEXTOID};
	Datum		values[12];
	char		nulls[12];

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int32GetDatum(table_id);
	values[1] = CStringGetTextDatum(kind);
	param_datum(values, nulls, 2, columns ? text_array_from_list(columns) : (Datum) 0,
				columns == NIL);
	for (int i = 0; i < CHECK_NSETTINGS; i++)
		param_datum(values, nulls, 3 + i, settings[i].value, settings[i].isnull);
	values[11] = CStringGetTextDatum(severity);

	return catalog_write_returning("INSERT INTO treble_sync.checks AS c (table_id, kind, columns,"
								   " min_value, max_value, tolerance, max_age, ref_table, ref_column,"
								   " last_n, within, severity)"
								   " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::pg_catalog.regclass, $9, $10, $11, $12)"
								   " RETURNING c",
								   12, types, values, nulls, SPI_OK_INSERT_RETURNING);
}

/*
 * The registration a check belongs to: its owner and name (in the
 * caller's memory context), for drop_check's permission check.  False if
 * there is no such check.
 */
bool
CatalogCheckTable(int64 check_id, Oid *owner, char **name)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(check_id)};
	MemoryContext cxt = CurrentMemoryContext;
	bool		found;

	SPI_connect();
	if (SPI_execute_with_args("SELECT t.owner::pg_catalog.oid, t.name FROM treble_sync.checks c"
							  " JOIN treble_sync.tables t ON t.table_id OPERATOR(pg_catalog.=) c.table_id"
							  " WHERE c.check_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look the check up");
	found = SPI_processed == 1;
	if (found)
	{
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		*owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		*name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return found;
}

/*
 * Whether a table has checks that read the rows a cycle pulled (range,
 * not_null, references, unique: run_checks() reads them from the staging
 * table), as opposed to the copy's newest row or the run log.
 */
bool
CatalogHasRowChecks(int32 table_id)
{
	return catalog_exists("SELECT 1 FROM treble_sync.checks c"
						  " WHERE c.table_id OPERATOR(pg_catalog.=) $1"
						  " AND c.kind OPERATOR(pg_catalog.<>) ALL ('{freshness,volume}'::pg_catalog.text[])",
						  INT4OID, Int32GetDatum(table_id), true);
}

/* Remove a check (drop_check, which has checked the caller may). */
void
CatalogDeleteCheck(int64 check_id)
{
	catalog_delete_by_id("DELETE FROM treble_sync.checks WHERE check_id OPERATOR(pg_catalog.=) $1",
						 INT8OID, Int64GetDatum(check_id));
}

/*
 * Record a verification's outcome (verify()): the cut it compared at, how
 * many days it compared and how many did not match.
 */
void
CatalogRecordVerification(const char *table_name, const char *cut, int days,
						  int mismatched, bool checksum)
{
	Oid			types[5] = {TEXTOID, TEXTOID, INT4OID, INT4OID, BOOLOID};
	Datum		values[5] = {CStringGetTextDatum(table_name), CStringGetTextDatum(cut),
		Int32GetDatum(days), Int32GetDatum(mismatched), BoolGetDatum(checksum)};

	catalog_write("INSERT INTO treble_sync.verifications"
				  " (table_name, cut, days, mismatched_days, checksum) VALUES ($1, $2, $3, $4, $5)",
				  5, types, values, NULL, SPI_OK_INSERT);
}

/*
 * Add the n non-empty buckets of one kind of the window advisor's
 * histogram (advisor.c) to today's rows of the table's lateness, in one
 * statement: rows changed at least from_hours[i] late and less than
 * to_hours[i] (-1: no upper bound), how many of them before the hot
 * window, and the latest of them in hours (kept as an interval of at most
 * 100 years: a BC event is no finer a guide).
 */
void
CatalogAddLateness(int32 table_id, const char *kind, int n, const int32 *from_hours,
				   const int32 *to_hours, const int64 *rows, const int64 *outside,
				   const double *max_hours)
{
	Datum	   *d[5];
	Datum		values[7];

	Assert(n > 0);
	for (int k = 0; k < 5; k++)
		d[k] = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
	{
		Assert(rows[i] > 0 && outside[i] >= 0 && outside[i] <= rows[i]);
		d[0][i] = Int32GetDatum(from_hours[i]);
		d[1][i] = Int32GetDatum(to_hours[i]);
		d[2][i] = Int64GetDatum(rows[i]);
		d[3][i] = Int64GetDatum(outside[i]);
		d[4][i] = Float8GetDatum(max_hours[i]);
	}
	values[0] = Int32GetDatum(table_id);
	values[1] = CStringGetTextDatum(kind);
	values[2] = PointerGetDatum(construct_array(d[0], n, INT4OID, 4, true, TYPALIGN_INT));
	values[3] = PointerGetDatum(construct_array(d[1], n, INT4OID, 4, true, TYPALIGN_INT));
	values[4] = PointerGetDatum(construct_array(d[2], n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[5] = PointerGetDatum(construct_array(d[3], n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[6] = PointerGetDatum(construct_array(d[4], n, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	catalog_write("INSERT INTO treble_sync.lateness AS l"
				  " (table_id, day, kind, late_from_hours, late_to_hours, rows, outside_window, max_late)"
				  " SELECT $1, (pg_catalog.now() AT TIME ZONE 'UTC')::pg_catalog.date, $2, b.f,"
				  " NULLIF(b.t, -1), b.r, b.o,"
				  " pg_catalog.make_interval(secs => LEAST(b.m, 876000) OPERATOR(pg_catalog.*) 3600)"
				  " FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5),"
				  "                 pg_catalog.unnest($6), pg_catalog.unnest($7)) AS b(f, t, r, o, m)"
				  " ON CONFLICT (table_id, day, kind, late_from_hours) DO UPDATE"
				  " SET rows = l.rows OPERATOR(pg_catalog.+) EXCLUDED.rows,"
				  " outside_window = l.outside_window OPERATOR(pg_catalog.+) EXCLUDED.outside_window,"
				  " max_late = GREATEST(l.max_late, EXCLUDED.max_late)",
				  7, (Oid[]) {INT4OID, TEXTOID, INT4ARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
				  FLOAT8ARRAYOID}, values, NULL, SPI_OK_INSERT);
}

/*
 * Record on a run row how many corrections it applied whose event lay
 * before the hot window: after_run() opens the table's 'late' incident.
 */
void
CatalogSetLateOutside(int64 run_id, int64 rows)
{
	catalog_write("UPDATE treble_sync.runs SET rows_late_outside = $2"
				  " WHERE run_id OPERATOR(pg_catalog.=) $1",
				  2, (Oid[]) {INT8OID, INT8OID},
				  (Datum[]) {Int64GetDatum(run_id), Int64GetDatum(rows)},
				  NULL, SPI_OK_UPDATE);
}

/* ------------------------------------------------------------------------
 * Sync groups (group.c)
 * ------------------------------------------------------------------------
 */

/*
 * Look a group up by name: its id and owner, and its members' table ids
 * in the order their cuts are frozen.  False if there is no such group.
 * Read as the extension owner: groups are readable by everyone anyway.
 */
bool
CatalogGetGroup(const char *name, int32 *group_id, Oid *owner, List **members)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			type = TEXTOID;
	Datum		value = CStringGetTextDatum(name);
	bool		found;

	SPI_connect();
	catalog_exec("SELECT group_id, owner::pg_catalog.oid FROM treble_sync.groups"
				 " WHERE name OPERATOR(pg_catalog.=) $1", 1, &type, &value, NULL, SPI_OK_SELECT);
	found = SPI_processed == 1;
	if (found)
	{
		bool		isnull;

		*group_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		*owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		type = INT4OID;
		value = Int32GetDatum(*group_id);
		catalog_exec("SELECT table_id FROM treble_sync.tables WHERE group_id OPERATOR(pg_catalog.=) $1"
					 " ORDER BY group_position, table_id", 1, &type, &value, NULL, SPI_OK_SELECT);
		*members = spi_int_column(cxt);
	}
	SPI_finish();
	return found;
}

/*
 * The text in column 1 of the one row a catalog query with one integer
 * parameter ($1, an id) returns, in the caller's memory context, or NULL
 * when it returns no row.
 */
static char *
catalog_text_by_id(const char *sql, int32 id)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(id);
	char	   *text = NULL;

	SPI_connect();
	catalog_exec(sql, 1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		text = spi_text_or_null(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return text;
}

/*
 * The group a registration belongs to (its name, in the caller's memory
 * context), or NULL.
 */
char *
CatalogTableGroup(int32 table_id)
{
	return catalog_text_by_id("SELECT g.name FROM treble_sync.tables t JOIN treble_sync.groups g USING (group_id)"
							  " WHERE t.table_id OPERATOR(pg_catalog.=) $1", table_id);
}

/* Make a group, without members; returns its id. */
int32
CatalogInsertGroup(const char *name, Oid owner)
{
	return DatumGetInt32(catalog_write_returning("INSERT INTO treble_sync.groups (name, owner)"
												 " VALUES ($1, $2) RETURNING group_id", 2,
												 (Oid[]) {TEXTOID, OIDOID},
												 (Datum[]) {CStringGetTextDatum(name), ObjectIdGetDatum(owner)},
												 NULL, SPI_OK_INSERT_RETURNING));
}

/*
 * Make table_ids (an integer List) the members of a group, in that order;
 * the registrations that were members and are not any more leave it.
 */
void
CatalogSetGroupMembers(int32 group_id, List *table_ids)
{
	Datum	   *ids = palloc(sizeof(Datum) * Max(list_length(table_ids), 1));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, table_ids)
		ids[n++] = Int32GetDatum(lfirst_int(lc));
	catalog_write("UPDATE treble_sync.tables t SET group_id = m.g, group_position = m.pos"
				  " FROM (SELECT $1 AS g, x.id, x.pos FROM pg_catalog.unnest($2) WITH ORDINALITY x(id, pos)) m"
				  " WHERE t.table_id OPERATOR(pg_catalog.=) m.id",
				  2, (Oid[]) {INT4OID, INT4ARRAYOID},
				  (Datum[]) {Int32GetDatum(group_id),
				  PointerGetDatum(construct_array(ids, n, INT4OID, 4, true, TYPALIGN_INT))},
				  NULL, SPI_OK_UPDATE);
	catalog_write("UPDATE treble_sync.tables SET group_id = NULL, group_position = NULL"
				  " WHERE group_id OPERATOR(pg_catalog.=) $1"
				  " AND table_id OPERATOR(pg_catalog.<>) ALL ($2)",
				  2, (Oid[]) {INT4OID, INT4ARRAYOID},
				  (Datum[]) {Int32GetDatum(group_id),
				  PointerGetDatum(construct_array(ids, n, INT4OID, 4, true, TYPALIGN_INT))},
				  NULL, SPI_OK_UPDATE);
}

/* Dissolve a group: its members stay registered, in no group. */
void
CatalogDeleteGroup(int32 group_id)
{
	catalog_delete_by_id("DELETE FROM treble_sync.groups WHERE group_id OPERATOR(pg_catalog.=) $1",
						 INT4OID, Int32GetDatum(group_id));
}

/* The treble_sync.groups row of a group, as a composite datum. */
Datum
CatalogGroupRow(int32 group_id)
{
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(group_id);
	Datum		row;
	bool		isnull;

	SPI_connect();
	catalog_exec("SELECT g FROM treble_sync.groups g WHERE group_id OPERATOR(pg_catalog.=) $1",
				 1, &type, &value, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		elog(ERROR, "treble_sync group %d not found", group_id);
	row = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	row = SPI_datumTransfer(row, false, -1);
	SPI_finish();
	return row;
}

/* Log a group cycle ('running' or 'skipped'); returns its group_run_id. */
int64
CatalogInsertGroupRun(const char *group_name, const char *status, Oid owner, Oid runner)
{
	return DatumGetInt64(catalog_write_returning("INSERT INTO treble_sync.group_runs"
												 " (group_name, status, owner, run_by, finished_at, error)"
												 " VALUES ($1, $2, $3, $4,"
												 "  CASE WHEN $2 OPERATOR(pg_catalog.=) 'skipped' THEN pg_catalog.clock_timestamp() END,"
												 "  CASE WHEN $2 OPERATOR(pg_catalog.=) 'skipped'"
												 "   THEN 'a cycle of one of its tables is already running' END)"
												 " RETURNING group_run_id", 4,
												 (Oid[]) {TEXTOID, TEXTOID, OIDOID, OIDOID},
												 (Datum[]) {CStringGetTextDatum(group_name),
												 CStringGetTextDatum(status), ObjectIdGetDatum(owner),
												 ObjectIdGetDatum(runner)},
												 NULL, SPI_OK_INSERT_RETURNING));
}

/* Record how a group cycle ended; error is NULL unless it failed. */
void
CatalogFinishGroupRun(int64 group_run_id, const char *status, const char *error)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	values[0] = Int64GetDatum(group_run_id);
	values[1] = CStringGetTextDatum(status);
	param_text(values, nulls, 2, error);
	catalog_write("UPDATE treble_sync.group_runs SET status = $2, error = $3,"
				  " finished_at = pg_catalog.clock_timestamp()"
				  " WHERE group_run_id OPERATOR(pg_catalog.=) $1",
				  3, (Oid[]) {INT8OID, TEXTOID, TEXTOID}, values, nulls, SPI_OK_UPDATE);
}

/* Link a member's run row to its group's run. */
void
CatalogSetRunGroupRun(int64 run_id, int64 group_run_id)
{
	catalog_write("UPDATE treble_sync.runs SET group_run_id = $2 WHERE run_id OPERATOR(pg_catalog.=) $1",
				  2, (Oid[]) {INT8OID, INT8OID},
				  (Datum[]) {Int64GetDatum(run_id), Int64GetDatum(group_run_id)},
				  NULL, SPI_OK_UPDATE);
}

/*
 * The run ids of a group cycle's members, in the order the members were
 * cycled (an int64 List would do; run ids fit the List of pointers).
 */
List *
CatalogGroupRunRuns(int64 group_run_id)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			type = INT8OID;
	Datum		value = Int64GetDatum(group_run_id);
	List	   *ids = NIL;
	CatalogUser saved = CatalogBecomeOwner();

	SPI_connect();
	catalog_exec("SELECT run_id FROM treble_sync.runs WHERE group_run_id OPERATOR(pg_catalog.=) $1"
				 " ORDER BY run_id", 1, &type, &value, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(cxt);
		int64	   *id = palloc(sizeof(int64));

		*id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		ids = lappend(ids, id);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	CatalogRestoreUser(saved);
	return ids;
}

/*
 * The groups whose owner's privileges the caller has, whose every member
 * is enabled, of one server or of every server (NULL), by name: what
 * sync_all() cycles as groups.  A group with a disabled member is left
 * alone, as a disabled table is.
 */
List *
CatalogEnabledGroupIds(const char *server)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {server ? CStringGetTextDatum(server) : (Datum) 0};
	char		nulls[1] = {server ? ' ' : 'n'};
	List	   *ids;

	SPI_connect();
	catalog_exec("SELECT g.group_id FROM treble_sync.groups g"
				 " WHERE pg_catalog.pg_has_role(g.owner::pg_catalog.oid, 'USAGE')"
				 " AND EXISTS (SELECT 1 FROM treble_sync.tables t WHERE t.group_id OPERATOR(pg_catalog.=) g.group_id"
				 "             AND ($1 IS NULL OR t.server_name::pg_catalog.text OPERATOR(pg_catalog.=) $1))"
				 " AND NOT EXISTS (SELECT 1 FROM treble_sync.tables t"
				 "                 WHERE t.group_id OPERATOR(pg_catalog.=) g.group_id AND NOT t.enabled)"
				 " ORDER BY g.name", 1, types, values, nulls, SPI_OK_SELECT);
	ids = spi_int_column(cxt);
	SPI_finish();
	return ids;
}

/* A group's name, by id (in the caller's memory context), or NULL. */
char *
CatalogGroupName(int32 group_id)
{
	return catalog_text_by_id("SELECT name FROM treble_sync.groups WHERE group_id OPERATOR(pg_catalog.=) $1",
							  group_id);
}

/*
 * After a group's worker exited: fail its group run and its members' runs
 * if it could not record how it ended (SIGKILL, a crash).
 */
void
CatalogFailGroupRunIfRunning(int64 group_run_id, const char *error)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(group_run_id), CStringGetTextDatum(error)};

	catalog_write("UPDATE treble_sync.group_runs SET status = 'failed', error = $2,"
				  " finished_at = pg_catalog.clock_timestamp()"
				  " WHERE group_run_id OPERATOR(pg_catalog.=) $1 AND status OPERATOR(pg_catalog.=) 'running'",
				  2, types, values, NULL, SPI_OK_UPDATE);
	catalog_write("UPDATE treble_sync.runs SET status = 'failed', error = $2,"
				  " finished_at = pg_catalog.clock_timestamp()"
				  " WHERE group_run_id OPERATOR(pg_catalog.=) $1 AND status OPERATOR(pg_catalog.=) 'running'",
				  2, types, values, NULL, SPI_OK_UPDATE);
}

/*
 * For sync_table(), resync(), repair() and rewind(): a group's member is
 * cycled, repaired or rewound only with its group, or a reader could see
 * it at a cut its group's other members have not reached.
 */
void
CatalogRefuseGroupMember(TableConfig *cfg, const char *funcname)
{
	char	   *group = CatalogTableGroup(cfg->table_id);

	if (group != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" belongs to group \"%s\": %s cannot act on it alone",
						cfg->name, group, funcname),
				 errhint("Run treble_sync.sync_group(%s), or take the table out of the group with treble_sync.alter_group().",
						 quote_literal_cstr(group))));
}
