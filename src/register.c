/*-------------------------------------------------------------------------
 *
 * register.c
 *	  add_table(): registering a warehouse table for sync.
 *
 * Registration checks everything it can against the warehouse's own
 * metadata, so that an unknown table, key, cursor or event column is an
 * error now rather than at the first cycle, and creates the local copy if
 * it does not exist yet.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "treble_sync.h"

#include <sqlucode.h>

/*
 * Split a warehouse table name into schema and table.  Parts may be
 * double-quoted (to hold dots or quotes, "" for a quote); case is kept as
 * written, since warehouses differ in how they fold it.
 */
static void
split_remote_name(const char *input, char **schema, char **table)
{
	List	   *parts = NIL;
	StringInfoData cur;
	const char *p = input;

	initStringInfo(&cur);
	while (*p)
	{
		if (*p == '"')
		{
			p++;
			while (*p && !(*p == '"' && p[1] != '"'))
			{
				if (*p == '"')
					p++;		/* "" inside quotes is one quote */
				appendStringInfoChar(&cur, *p++);
			}
			if (*p != '"')
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_NAME),
						 errmsg("unterminated quoted name in \"%s\"", input)));
			p++;
		}
		else if (*p == '.')
		{
			parts = lappend(parts, pstrdup(cur.data));
			resetStringInfo(&cur);
			p++;
		}
		else
			appendStringInfoChar(&cur, *p++);
	}
	parts = lappend(parts, pstrdup(cur.data));

	if (list_length(parts) > 2 || strlen(llast(parts)) == 0 ||
		(list_length(parts) == 2 && strlen(linitial(parts)) == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid warehouse table name \"%s\"", input),
				 errhint("Write table or schema.table; double-quote a part that contains a dot.")));
	*schema = list_length(parts) == 2 ? linitial(parts) : NULL;
	*table = llast(parts);
}

/* A List of C strings from a text[] argument, rejecting NULLs and repeats. */
static List *
names_from_array(ArrayType *arr, const char *argname)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *result = NIL;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *name;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", argname)));
		name = TextDatumGetCString(elems[i]);
		if (SchemaListHasName(result, name))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column \"%s\" appears twice in %s", name, argname)));
		result = lappend(result, name);
	}
	if (result == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must name at least one column", argname)));
	return result;
}

/* Error unless the warehouse table has this column. */
static RemoteColumn *
require_remote_column(RemoteTable *rt, const char *name, const char *role)
{
	RemoteColumn *col = SchemaFindColumn(rt, name);

	if (col == NULL)
	{
		StringInfoData names;
		ListCell   *lc;

		initStringInfo(&names);
		foreach(lc, rt->columns)
			appendStringInfo(&names, "%s%s", names.len ? ", " : "",
							 ((RemoteColumn *) lfirst(lc))->name);
		ereport(ERROR,
				(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
				 errmsg("%s \"%s\" is not a column of warehouse table \"%s\"",
						role, name, rt->table),
				 errdetail("Its columns are: %s.", names.data)));
	}
	return col;
}

/* The cursor and the event column must hold dates or timestamps. */
static void
require_temporal(RemoteColumn *col, const char *role)
{
	switch (col->data_type)
	{
		case SQL_TYPE_TIMESTAMP:
		case SQL_TIMESTAMP:
		case SQL_TYPE_DATE:
		case SQL_DATE:
			return;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s \"%s\" must be a timestamp or a date, not %s",
							role, col->name, col->type_name)));
	}
}

/*
 * add_table(remote_table, server, key_columns, event_column, cursor_column,
 *			 hot_window, local_table, name)
 */
PG_FUNCTION_INFO_V1(treble_sync_add_table);

Datum
treble_sync_add_table(PG_FUNCTION_ARGS)
{
	TableConfig cfg;
	char	   *remote_input;
	ForeignServer *server;
	ForeignDataWrapper *fdw;
	UserMapping *mapping;
	AclResult	aclresult;
	OdbcConn   *conn;
	RemoteTable *rt;
	ListCell   *lc;
	char	   *local_schema = NULL;
	char	   *local_name;
	char	   *other;
	Datum		row;

	memset(&cfg, 0, sizeof(cfg));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("remote_table and server are required")));
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cursor_column must not be NULL"),
				 errhint("Name the warehouse column that marks when each row was written, such as synced_at.")));
	if (PG_ARGISNULL(5))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("hot_window must not be NULL"),
				 errhint("Use '0 days' for no hot window.")));

	remote_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	split_remote_name(remote_input, &cfg.remote_schema, &cfg.remote_table);
	cfg.name = PG_ARGISNULL(7) ? remote_input : text_to_cstring(PG_GETARG_TEXT_PP(7));
	cfg.cursor_column = text_to_cstring(PG_GETARG_TEXT_PP(4));
	cfg.event_column = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	cfg.hot_window = PG_GETARG_INTERVAL_P(5);
	cfg.initial_chunk = PG_ARGISNULL(8) ? NULL : PG_GETARG_INTERVAL_P(8);
	cfg.parallel = PG_ARGISNULL(9) ? 1 : PG_GETARG_INT32(9);
	cfg.enabled = true;

	if (cfg.initial_chunk &&
		DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(cfg.initial_chunk),
										 DirectFunctionCall3(interval_in,
															 CStringGetDatum("0"),
															 ObjectIdGetDatum(InvalidOid),
															 Int32GetDatum(-1)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("initial_chunk must be a positive interval"),
				 errhint("For example initial_chunk => '7 days'; NULL loads the first sync in one transaction.")));
	if (cfg.parallel < 1 || cfg.parallel > 16)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel must be between 1 and 16")));
	if (cfg.parallel > 1 && cfg.initial_chunk == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel needs initial_chunk"),
				 errdetail("Only the chunks of a chunked first load are loaded in parallel."),
				 errhint("Pass initial_chunk => '7 days' as well.")));

	if (DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(cfg.hot_window),
										 DirectFunctionCall3(interval_in,
															 CStringGetDatum("0"),
															 ObjectIdGetDatum(InvalidOid),
															 Int32GetDatum(-1)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hot_window must not be negative")));

	if (CatalogGetTable(cfg.name, true) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is already registered with treble_sync", cfg.name),
				 errhint("Pass name => '...' to register it again under another name.")));

	/* the server must be one of ours, usable by the caller, with a mapping */
	server = GetForeignServerByName(NameStr(*PG_GETARG_NAME(1)), false);
	fdw = GetForeignDataWrapper(server->fdwid);
	if (strcmp(fdw->fdwname, TREBLE_SYNC_EXTENSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" does not use the treble_sync foreign-data wrapper",
						server->servername),
				 errhint("CREATE SERVER ... FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string '...').")));
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server->servername);
	mapping = OdbcLookupUserMapping(GetUserId(), server);
	cfg.server_name = server->servername;

	/* what the warehouse says the table looks like */
	conn = OdbcConnect(server, mapping);
	rt = SchemaDescribeRemote(conn, cfg.remote_schema, cfg.remote_table);
	if (PG_ARGISNULL(2))
	{
		cfg.key_columns = SchemaRemotePrimaryKey(conn, rt);
		if (cfg.key_columns == NIL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("warehouse table \"%s\" has no primary key", remote_input),
					 errhint("Name the business key: key_columns => '{deployment_id}'.")));
	}
	else
		cfg.key_columns = names_from_array(PG_GETARG_ARRAYTYPE_P(2), "key_columns");
	OdbcDisconnect(conn);

	foreach(lc, cfg.key_columns)
		require_remote_column(rt, lfirst(lc), "key column");
	require_temporal(require_remote_column(rt, cfg.cursor_column, "cursor column"),
					 "cursor column");
	if (cfg.event_column)
		require_temporal(require_remote_column(rt, cfg.event_column, "event column"),
						 "event column");
	foreach(lc, rt->columns)
		cfg.columns = lappend(cfg.columns, ((RemoteColumn *) lfirst(lc))->name);

	/* the local copy: create it, or check the one that is there */
	if (PG_ARGISNULL(6))
		local_name = rt->table;
	else
	{
		List	   *names = stringToQualifiedNameList(text_to_cstring(PG_GETARG_TEXT_PP(6)));
		RangeVar   *rv = makeRangeVarFromNameList(names);

		if (rv->catalogname)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("local_table must not name a database")));
		local_schema = rv->schemaname;
		local_name = rv->relname;
	}
	cfg.local_relid = RangeVarGetRelid(makeRangeVar(local_schema, local_name, -1),
									   NoLock, true);
	if (OidIsValid(cfg.local_relid))
	{
		if (!pg_class_ownercheck(cfg.local_relid, GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, local_name);
		other = CatalogTableUsingLocal(cfg.local_relid);
		if (other)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("local table \"%s\" already receives table \"%s\"", local_name, other),
					 errhint("Give this registration its own local_table.")));
		SchemaCheckLocalTable(cfg.local_relid, cfg.columns, cfg.key_columns);
		if (cfg.parallel > 1 && get_rel_relkind(cfg.local_relid) == RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("parallel chunk loads need a local table that is not partitioned"),
					 errdetail("A partitioned table has no unique index on the key alone, which concurrent chunks rely on."),
					 errhint("Use parallel => 1: the chunks are then loaded one after another.")));
	}
	else
		cfg.local_relid = SchemaCreateLocalTable(local_schema, local_name, rt,
												 cfg.key_columns, cfg.event_column);

	if (cfg.event_column == NULL)
		ereport(NOTICE,
				(errmsg("table \"%s\" has no event_column: rows removed in the warehouse will stay in the copy", cfg.name),
				 errhint("Pass event_column => 'scheduled_at' (or created_at) to refresh a hot window each cycle.")));

	row = CatalogInsertTable(&cfg, GetUserId());
	PG_RETURN_DATUM(row);
}
