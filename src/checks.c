/*-------------------------------------------------------------------------
 *
 * checks.c
 *	  Quality checks: declaring them (add_check, drop_check), and running
 *	  them inside a cycle's transaction before it commits.
 *
 * The checks themselves are evaluated by treble_sync.run_checks() (SQL, in
 * the install script), as the role running the cycle.  This file has
 * their results recorded in treble_sync.check_results and decides: a
 * failing check of severity 'error' fails the cycle, so the copy and the
 * watermark stay as they were (consumers see old but correct data), and
 * its results are recorded with the failed run; a failing 'warn' check is
 * recorded and the cycle commits with the warning in its run row.  The
 * catalog's rows (checks, results) are read and written by catalog.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "attempt.h"
#include "catalog.h"
#include "checks.h"
#include "localsql.h"
#include "recovery.h"
#include "version.h"
#include "security.h"

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

	/*
	 * The table's checks; the references checks' tables are read as the
	 * owner: who owns them?  A table with no checks (most) is done here,
	 * without running the checks' statement.
	 */
	LocalLogSql(LocalChecksReferencedSql());
	if (SPI_execute_with_args(LocalChecksReferencedSql(), 1, types, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the checks of \"%s\"", cfg->name);
	if (SPI_processed == 0)
	{
		SPI_finish();
		return;					/* the table has no checks */
	}
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		ref = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			SecurityCheckReadAsOwner(cfg, DatumGetObjectId(ref));
	}

	LocalLogSql(LocalChecksRunSql());
	if (SPI_execute_with_args(LocalChecksRunSql(),
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
	CatalogInsertCheckResults(result->run_id, cfg->name, json);
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
		CatalogInsertCheckResults(run_id, table_name, json);
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
	NullableDatum settings[CHECK_NSETTINGS];
	Datum	   *elems;
	int			n;

	VersionRequireCatalog("add_check()");
	RecoveryRequirePrimary("add_check()");
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name and kind are required")));
	cfg = CatalogGetTable(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	SecurityRequireManage(cfg->owner, "table", cfg->name, "change the checks of");
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
		elems = ArgTextArray(PG_GETARG_DATUM(3), "columns", &n);
		for (int i = 0; i < n; i++)
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
			char		relkind;

			if (PG_ARGISNULL(8) || PG_ARGISNULL(9))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("a references check needs ref_table and ref_column")));
			ref = PG_GETARG_OID(8);
			/* a regclass may hold any OID: of nothing, or of an index */
			relkind = get_rel_relkind(ref);
			if (relkind == '\0')
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_TABLE),
						 errmsg("relation with OID %u does not exist", ref)));
			if (!RELKIND_HAS_TABLE_AM(relkind) && relkind != RELKIND_VIEW &&
				relkind != RELKIND_FOREIGN_TABLE && relkind != RELKIND_PARTITIONED_TABLE)
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("ref_table %s is not a table, view or foreign table", get_rel_name(ref))));
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
			/* and no other role's code on it may run as the owner */
			SecurityCheckReadAsOwner(cfg, ref);
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

	/* the settings are arguments 4 to 11, in CheckSetting's order */
	for (int i = 0; i < CHECK_NSETTINGS; i++)
	{
		settings[i].isnull = PG_ARGISNULL(4 + i);
		settings[i].value = settings[i].isnull ? (Datum) 0 : PG_GETARG_DATUM(4 + i);
	}
	if (settings[CHECK_TOLERANCE].isnull)
		settings[CHECK_TOLERANCE] = (NullableDatum) {Float4GetDatum(0), false};
	if (settings[CHECK_LAST_N].isnull)
		settings[CHECK_LAST_N] = (NullableDatum) {Int32GetDatum(10), false};
	if (settings[CHECK_WITHIN].isnull)
		settings[CHECK_WITHIN] = (NullableDatum) {Float4GetDatum(0.5), false};

	PG_RETURN_DATUM(CatalogInsertCheck(cfg->table_id, kind, columns, settings, severity));
}

/*
 * drop_check(check_id): remove a check of a table the caller owns.  STRICT:
 * drop_check(NULL) drops nothing and returns NULL.
 */
PG_FUNCTION_INFO_V1(treble_sync_drop_check);

Datum
treble_sync_drop_check(PG_FUNCTION_ARGS)
{
	int64		check_id;
	Oid			owner;
	char	   *name;

	Assert(!PG_ARGISNULL(0));
	check_id = PG_GETARG_INT64(0);
	VersionRequireCatalog("drop_check()");
	RecoveryRequirePrimary("drop_check()");
	if (!CatalogCheckTable(check_id, &owner, &name))
		PG_RETURN_BOOL(false);
	SecurityRequireManage(owner, "table", name, "change the checks of");
	CatalogDeleteCheck(check_id);
	PG_RETURN_BOOL(true);
}
