/*-------------------------------------------------------------------------
 *
 * checks.c
 *	  Quality checks: declaring them (add_check, drop_check), and running
 *	  them inside a cycle's transaction before it commits.
 *
 * The checks themselves are evaluated by treble_sync.run_checks() (SQL, in
 * the install script), as the role running the cycle.  This file records
 * their results in treble_sync.check_results and decides: a failing check
 * of severity 'error' fails the cycle, so the copy and the watermark stay
 * as they were (consumers see old but correct data), and its results are
 * recorded with the failed run; a failing 'warn' check is recorded and
 * the cycle commits with the warning in its run row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "attempt.h"
#include "catalog.h"
#include "checks.h"
#include "security.h"

/* Insert the results of a run (JSON from run_checks) as the extension owner. */
static void
record_results(int64 run_id, const char *table_name, const char *json)
{
	CatalogUser saved = CatalogBecomeOwner();
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3] = {Int64GetDatum(run_id), CStringGetTextDatum(table_name),
	CStringGetTextDatum(json)};

	SPI_connect();
	if (SPI_execute_with_args("INSERT INTO treble_sync.check_results"
							  " (run_id, check_id, table_name, kind, severity, passed, observed, failing_keys)"
							  " SELECT $1, x.check_id, $2, x.kind, x.severity, x.passed, x.observed, x.failing_keys"
							  " FROM pg_catalog.jsonb_to_recordset($3::pg_catalog.jsonb) AS x(check_id bigint,"
							  " kind pg_catalog.text, severity pg_catalog.text, passed boolean,"
							  " observed pg_catalog.text, failing_keys pg_catalog.text[])",
							  3, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the check results of run %lld", (long long) run_id);
	SPI_finish();
	CatalogRestoreUser(saved);
}

/*
 * Run the table's checks after the cycle applied its changes, in its
 * transaction.  Records the results; a failing 'error' check raises an
 * error naming it (the caller then records the results with the failed
 * run: ChecksRecordFailed), a failing 'warn' check goes to
 * result->warnings.
 */
void
ChecksRun(TableConfig *cfg, CycleResult *result)
{
	Oid			types[3] = {INT4OID, TEXTOID, INT8OID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	char	   *json;
	char	   *errors;
	char	   *warnings;

	values[0] = Int32GetDatum(cfg->table_id);
	values[1] = result->watermark_to ? CStringGetTextDatum(result->watermark_to) : (Datum) 0;
	nulls[1] = result->watermark_to ? ' ' : 'n';
	values[2] = Int64GetDatum(result->rows_inserted + result->rows_updated + result->rows_deleted);

	SPI_connect();
	if (SPI_execute_with_args("SELECT pg_catalog.jsonb_agg(r)::pg_catalog.text,"
							  " pg_catalog.string_agg(r.kind OPERATOR(pg_catalog.||) ' check ' OPERATOR(pg_catalog.||) r.check_id"
							  "  OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) r.observed, '; ')"
							  "  FILTER (WHERE NOT r.passed AND r.severity OPERATOR(pg_catalog.=) 'error'),"
							  " pg_catalog.string_agg(r.kind OPERATOR(pg_catalog.||) ' check ' OPERATOR(pg_catalog.||) r.check_id"
							  "  OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) r.observed, '; ')"
							  "  FILTER (WHERE NOT r.passed AND r.severity OPERATOR(pg_catalog.=) 'warn')"
							  " FROM treble_sync.run_checks($1, $2, $3) r",
							  3, types, values, nulls, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not run the checks of \"%s\"", cfg->name);
	json = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	errors = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	warnings = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
	json = json ? MemoryContextStrdup(CurTransactionContext, json) : NULL;
	errors = errors ? MemoryContextStrdup(CurTransactionContext, errors) : NULL;
	warnings = warnings ? MemoryContextStrdup(CurTransactionContext, warnings) : NULL;
	SPI_finish();

	if (json == NULL)
		return;					/* the table has no checks */
	if (errors)
	{
		AttemptNoteFailedChecks(json);	/* kept across the rollback */
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("quality check failed for \"%s\": %s", cfg->name, errors),
				 errdetail("Nothing of this cycle was applied: the copy and the watermark are as before."),
				 errhint("See treble_sync.check_results for the failing keys.")));
	}
	record_results(result->run_id, cfg->name, json);
	if (warnings)				/* after those the cycle itself gave */
		result->warnings = result->warnings ?
			psprintf("%s; %s", result->warnings, warnings) : warnings;
}

/*
 * After a cycle failed: record the results of the checks that failed it
 * (json, from the attempt; NULL if they did not), in the transaction that
 * records the failure.
 */
void
ChecksRecordFailed(int64 run_id, const char *table_name, const char *json)
{
	if (json != NULL)
		record_results(run_id, table_name, json);
}

/* Error unless a column exists in the local table. */
static void
require_local_column(TableConfig *cfg, const char *column)
{
	if (column == NULL || get_attnum(cfg->local_relid, column) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("the local table of \"%s\" has no column \"%s\"", cfg->name,
						column ? column : "(none)")));
}

/*
 * add_check(name, kind, column_name, columns, min, max, tolerance,
 *			 max_age, ref_table, ref_column, last_n, within, severity)
 */
PG_FUNCTION_INFO_V1(treble_sync_add_check);

Datum
treble_sync_add_check(PG_FUNCTION_ARGS)
{
	TableConfig *cfg;
	char	   *kind;
	char	   *severity;
	List	   *columns = NIL;
	ListCell   *lc;
	CatalogUser saved;
	Oid			types[12] = {INT4OID, TEXTOID, TEXTARRAYOID, NUMERICOID, NUMERICOID, FLOAT4OID,
		INTERVALOID, OIDOID, TEXTOID, INT4OID, FLOAT4OID, TEXTOID};
	Datum		values[12];
	char		nulls[12];
	Datum		row;
	bool		isnull;
	Datum	   *elems;
	bool	   *enulls;
	int			n;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name and kind are required")));
	cfg = CatalogGetTable(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	SecurityRequireManage(cfg->owner, cfg->name, "change the checks of");
	kind = text_to_cstring(PG_GETARG_TEXT_PP(1));
	severity = PG_ARGISNULL(12) ? "error" : text_to_cstring(PG_GETARG_TEXT_PP(12));
	if (strcmp(severity, "error") != 0 && strcmp(severity, "warn") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("severity must be 'error' or 'warn', not \"%s\"", severity)));

	if (!PG_ARGISNULL(2))
		columns = lappend(columns, text_to_cstring(PG_GETARG_TEXT_PP(2)));
	if (!PG_ARGISNULL(3))
	{
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(3), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &enulls, &n);
		for (int i = 0; i < n; i++)
			if (!enulls[i])
				columns = lappend(columns, TextDatumGetCString(elems[i]));
	}
	foreach(lc, columns)
		require_local_column(cfg, lfirst(lc));

	if (strcmp(kind, "freshness") == 0)
	{
		if (PG_ARGISNULL(7))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a freshness check needs max_age"),
					 errhint("For example max_age => '2 hours': the newest row may be at most that much older than the cut.")));
	}
	else if (strcmp(kind, "range") == 0 || strcmp(kind, "references") == 0)
	{
		if (list_length(columns) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a %s check needs one column_name", kind)));
		if (strcmp(kind, "range") == 0 && PG_ARGISNULL(4) && PG_ARGISNULL(5))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a range check needs min, max or both")));
		if (strcmp(kind, "references") == 0)
		{
			Oid			ref;

			if (PG_ARGISNULL(8) || PG_ARGISNULL(9))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("a references check needs ref_table and ref_column")));
			ref = PG_GETARG_OID(8);
			if (get_attnum(ref, text_to_cstring(PG_GETARG_TEXT_PP(9))) == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("table %s has no column \"%s\"", get_rel_name(ref),
								text_to_cstring(PG_GETARG_TEXT_PP(9)))));
			/* the check runs in the cycle, as the table's owner */
			if (pg_class_aclcheck(ref, cfg->owner, ACL_SELECT) != ACLCHECK_OK)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied for table %s", get_rel_name(ref)),
						 errdetail("Checks run in the cycle, as the owner of \"%s\", role \"%s\", which needs SELECT on it.",
								   cfg->name, GetUserNameFromId(cfg->owner, false))));
		}
	}
	else if (strcmp(kind, "unique") == 0 || strcmp(kind, "not_null") == 0)
	{
		if (columns == NIL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a %s check needs column_name or columns", kind)));
	}
	else if (strcmp(kind, "volume") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kind must be freshness, unique, range, not_null, references or volume, not \"%s\"",
						kind)));

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int32GetDatum(cfg->table_id);
	values[1] = CStringGetTextDatum(kind);
	if (columns != NIL)
	{
		Datum	   *arr = palloc(sizeof(Datum) * list_length(columns));
		int			i = 0;

		foreach(lc, columns)
			arr[i++] = CStringGetTextDatum(lfirst(lc));
		values[2] = PointerGetDatum(construct_array(arr, i, TEXTOID, -1, false, TYPALIGN_INT));
	}
	else
		nulls[2] = 'n';
	for (int a = 4; a <= 11; a++)
	{
		nulls[a - 1] = PG_ARGISNULL(a) ? 'n' : ' ';
		values[a - 1] = PG_ARGISNULL(a) ? (Datum) 0 : PG_GETARG_DATUM(a);
	}
	values[11] = CStringGetTextDatum(severity);
	if (nulls[5] == 'n')
	{
		nulls[5] = ' ';
		values[5] = Float4GetDatum(0);
	}
	if (nulls[9] == 'n')
	{
		nulls[9] = ' ';
		values[9] = Int32GetDatum(10);
	}
	if (nulls[10] == 'n')
	{
		nulls[10] = ' ';
		values[10] = Float4GetDatum(0.5);
	}

	saved = CatalogBecomeOwner();
	SPI_connect();
	if (SPI_execute_with_args("INSERT INTO treble_sync.checks AS c (table_id, kind, columns,"
							  " min_value, max_value, tolerance, max_age, ref_table, ref_column,"
							  " last_n, within, severity)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::pg_catalog.regclass, $9, $10, $11, $12)"
							  " RETURNING c",
							  12, types, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "could not add the check");
	row = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	row = SPI_datumTransfer(row, false, -1);
	SPI_finish();
	CatalogRestoreUser(saved);
	PG_RETURN_DATUM(row);
}

/* drop_check(check_id): remove a check of a table the caller owns. */
PG_FUNCTION_INFO_V1(treble_sync_drop_check);

Datum
treble_sync_drop_check(PG_FUNCTION_ARGS)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {PG_GETARG_DATUM(0)};
	Oid			owner = InvalidOid;
	char	   *name = NULL;
	bool		isnull;
	CatalogUser saved;
	bool		found;
	MemoryContext cxt = CurrentMemoryContext;

	SPI_connect();
	if (SPI_execute_with_args("SELECT t.owner::pg_catalog.oid, t.name FROM treble_sync.checks c"
							  " JOIN treble_sync.tables t ON t.table_id OPERATOR(pg_catalog.=) c.table_id"
							  " WHERE c.check_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look the check up");
	found = SPI_processed == 1;
	if (found)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	if (!found)
		PG_RETURN_BOOL(false);
	SecurityRequireManage(owner, name, "change the checks of");

	saved = CatalogBecomeOwner();
	SPI_connect();
	SPI_execute_with_args("DELETE FROM treble_sync.checks WHERE check_id OPERATOR(pg_catalog.=) $1",
						  1, types, values, NULL, false, 0);
	SPI_finish();
	CatalogRestoreUser(saved);
	PG_RETURN_BOOL(true);
}
