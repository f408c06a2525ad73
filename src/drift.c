/*-------------------------------------------------------------------------
 *
 * drift.c
 *	  Schema drift: the warehouse table's columns compared, at the start of
 *	  every cycle, with those seen at registration, and what to do about it.
 *
 * At registration the warehouse's columns are recorded with their type, as
 * "type_name size digits" (treble_sync.tables.remote_columns).  Each cycle
 * describes the table again and compares:
 *
 *	  - a new column;
 *	  - a missing column (dropped or renamed in the warehouse);
 *	  - a changed column (another type, size or precision).
 *
 * schema_drift says what then happens: 'halt' (the default) fails the
 * cycle before anything is pulled, naming every difference; 'auto_accept'
 * adds new columns to the copy (nullable, filled from now on), keeps
 * missing ones and fills them with NULL, and applies type changes that
 * widen the local column, failing on any other; 'ignore' keeps syncing the
 * columns the copy has, missing ones as NULL.  The run log records what
 * was seen.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "nodes/makefuncs.h"
#include "parser/parse_type.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "attempt.h"
#include "catalog.h"
#include "drift.h"
#include "localsql.h"
#include "schema.h"

/* The signature recorded for a warehouse column. */
char *
DriftSignature(RemoteColumn *col)
{
	return psprintf("%s %d %d", col->type_name, col->column_size,
					col->decimal_digits_null ? -1 : col->decimal_digits);
}

/*
 * A column's signature as the drift report shows it: DriftSignature(), the
 * type named by SchemaRemoteTypeName() (never empty).
 */
static char *
shown_signature(RemoteColumn *col)
{
	return psprintf("%s %d %d", SchemaRemoteTypeName(col), col->column_size,
					col->decimal_digits_null ? -1 : col->decimal_digits);
}

/*
 * How wide a local type is within its family, for telling a widening from
 * any other change: 0 if it is in no family.
 */
static int
width_rank(Oid type, int *family)
{
	switch (type)
	{
		case INT2OID:
			*family = 1;
			return 1;
		case INT4OID:
			*family = 1;
			return 2;
		case INT8OID:
			*family = 1;
			return 3;
		case NUMERICOID:
			*family = 1;
			return 4;
		case FLOAT4OID:
			*family = 2;
			return 1;
		case FLOAT8OID:
			*family = 2;
			return 2;
		case TEXTOID:
			*family = 3;
			return 9;
		default:
			*family = 0;
			return 0;
	}
}

/*
 * A changed warehouse column under auto_accept: nothing to do if the local
 * column takes the new values already (text takes anything, a wider number
 * takes a narrower one), ALTER it if the new type is a wider one of the
 * same family, fail otherwise.
 */
static void
accept_changed_column(TableConfig *cfg, const char *qlocal, RemoteColumn *col)
{
	AttrNumber	attnum = get_attnum(cfg->local_relid, col->name);
	Oid			local_type = get_atttype(cfg->local_relid, attnum);
	char	   *new_type_name = SchemaLocalTypeFor(col);
	Oid			new_type;
	int32		typmod;
	int			local_family;
	int			new_family;
	int			local_rank;
	int			new_rank;

	parseTypeString(new_type_name, &new_type, &typmod, false);
	if (new_type == local_type || local_type == TEXTOID)
		return;
	local_rank = width_rank(local_type, &local_family);
	new_rank = width_rank(new_type, &new_family);
	if (local_family != 0 && local_family == new_family && new_rank > local_rank)
	{
		if (SPI_execute(psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s", qlocal,
								 quote_identifier(col->name), new_type_name),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not widen column \"%s\"", col->name);
		return;
	}
	if (local_family != 0 && local_family == new_family && new_rank <= local_rank)
		return;					/* narrower: the local column takes it */
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION),
			 errmsg("column \"%s\" of warehouse table \"%s\" changed to %s, which local type %s cannot take",
					col->name, cfg->remote_table, SchemaRemoteTypeName(col), format_type_be(local_type)),
			 errdetail("schema_drift 'auto_accept' applies only changes that widen the local column. Nothing of this cycle was applied."),
			 errhint("Change the local column yourself with ALTER TABLE, then run the cycle again.")));
}

/*
 * Compare the warehouse table's columns with those recorded, and act as
 * the table's schema_drift says.  Sets cfg->absent_columns (synced columns
 * the warehouse no longer has, pulled as NULL) and result->drift.  May
 * change the local table and the registration (auto_accept), in the
 * cycle's transaction.
 */
void
DriftCheck(TableConfig *cfg, OdbcConn *conn, CycleResult *result)
{
	RemoteTable *rt;
	StringInfoData report;
	List	   *new_columns = NIL;
	List	   *changed = NIL;
	List	   *missing = NIL;
	ListCell   *lc;
	char	   *qlocal;
	MemoryContext cfg_cxt;

	cfg->absent_columns = NIL;
	if (cfg->remote_columns == NIL)
		return;					/* nothing recorded to compare with */

	rt = SchemaDescribeRemote(conn, cfg->remote_schema, cfg->remote_table);

	/*
	 * What is kept in cfg lives as long as cfg: a chunked load commits, and
	 * frees transaction memory, long before it is done with it.
	 */
	cfg_cxt = MemoryContextSwitchTo(GetMemoryChunkContext(cfg));

	/* synced columns the warehouse does not have (now): pulled as NULL */
	foreach(lc, cfg->columns)
		if (SchemaFindColumn(rt, lfirst(lc)) == NULL)
			cfg->absent_columns = lappend(cfg->absent_columns, lfirst(lc));
	MemoryContextSwitchTo(cfg_cxt);

	initStringInfo(&report);
	foreach(lc, rt->columns)
	{
		RemoteColumn *col = lfirst(lc);
		const char *was = TableRecordedSignature(cfg, col->name);

		CHECK_FOR_INTERRUPTS();
		if (was == NULL)
		{
			new_columns = lappend(new_columns, col);
			appendStringInfo(&report, "%snew column \"%s\" (%s)", report.len ? "; " : "",
							 col->name, SchemaRemoteTypeName(col));
		}
		else if (strcmp(was, DriftSignature(col)) != 0)
		{
			changed = lappend(changed, col);
			appendStringInfo(&report, "%scolumn \"%s\" changed from %s to %s",
							 report.len ? "; " : "", col->name, was, shown_signature(col));
		}
	}
	foreach(lc, cfg->remote_columns)
	{
		DefElem    *def = lfirst(lc);

		if (SchemaFindColumn(rt, def->defname) == NULL)
		{
			missing = lappend(missing, def->defname);
			appendStringInfo(&report, "%smissing column \"%s\"", report.len ? "; " : "",
							 def->defname);
		}
	}
	if (report.len == 0)
		return;
	result->drift = report.data;
	AttemptNoteDrift(report.data);

	foreach(lc, missing)
	{
		char	   *name = lfirst(lc);

		if (ListHasName(cfg->key_columns, name) ||
			(cfg->cursor_column && strcmp(cfg->cursor_column, name) == 0) ||
			(cfg->event_column && strcmp(cfg->event_column, name) == 0) ||
			cfg->schema_drift == DRIFT_HALT)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION),
					 errmsg("warehouse table \"%s\" changed: %s", cfg->remote_table, report.data),
					 errdetail("%s Nothing of this cycle was applied.",
							   cfg->schema_drift == DRIFT_HALT ?
							   "schema_drift is 'halt'." :
							   "A key, cursor or event column is missing."),
					 errhint("Accept the change with treble_sync.alter_table('%s', schema_drift => 'auto_accept'), or register the table again.",
							 cfg->name)));
	}
	if (cfg->schema_drift == DRIFT_HALT)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION),
				 errmsg("warehouse table \"%s\" changed: %s", cfg->remote_table, report.data),
				 errdetail("schema_drift is 'halt'. Nothing of this cycle was applied."),
				 errhint("Accept the change with treble_sync.alter_table('%s', schema_drift => 'auto_accept'), or register the table again.",
						 cfg->name)));
	if (cfg->schema_drift == DRIFT_IGNORE)
		return;

	/* auto_accept: change the copy, then record what the warehouse has now */
	qlocal = LocalTableName(cfg->local_relid);
	SPI_connect();
	foreach(lc, changed)
	{
		RemoteColumn *col = lfirst(lc);

		if (ListHasName(cfg->columns, col->name))
			accept_changed_column(cfg, qlocal, col);
	}
	foreach(lc, new_columns)
	{
		RemoteColumn *col = lfirst(lc);
		MemoryContext old;

		if (!cfg->all_columns)
			continue;			/* an explicit column list stays as it is */
		if (get_attnum(cfg->local_relid, col->name) == InvalidAttrNumber &&
			SPI_execute(psprintf("ALTER TABLE %s ADD COLUMN %s %s", qlocal,
								 quote_identifier(col->name), SchemaLocalTypeFor(col)),
						false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not add column \"%s\"", col->name);
		old = MemoryContextSwitchTo(GetMemoryChunkContext(cfg));
		cfg->columns = lappend(cfg->columns, pstrdup(col->name));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	CommandCounterIncrement();

	cfg_cxt = MemoryContextSwitchTo(GetMemoryChunkContext(cfg));
	cfg->remote_columns = NIL;
	foreach(lc, rt->columns)
	{
		RemoteColumn *col = lfirst(lc);

		cfg->remote_columns = lappend(cfg->remote_columns,
									  makeDefElem(pstrdup(col->name),
												  (Node *) makeString(DriftSignature(col)), -1));
	}
	MemoryContextSwitchTo(cfg_cxt);
	CatalogSetRemoteColumns(cfg);
}
