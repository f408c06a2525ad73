/*-------------------------------------------------------------------------
 *
 * register.c
 *	  add_table(), alter_table() and remove_table(): registering a
 *	  warehouse table for sync, changing a registration's options, and
 *	  unregistering it.
 *
 * Registration checks everything it can against the warehouse's own
 * metadata, so that an unknown table, key, cursor or event column is an
 * error now rather than at the first cycle, and creates the local copy if
 * it does not exist yet.  alter_table() checks a changed option as
 * add_table() does, and takes the table's cycle lock (lockwait.c),
 * refusing while a cycle holds it, so that no cycle runs under the change;
 * remove_table() does too, and drops the copy only when asked.
 *
 * The options themselves are regoption.c's: it reads the arguments of
 * add_table() and alter_table() by name and checks what needs no
 * warehouse; this file adds what needs the warehouse or the local table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "parser/parse_type.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"

#include "catalog.h"
#include "drift.h"
#include "history.h"
#include "lockwait.h"
#include "odbc.h"
#include "schema.h"
#include "recovery.h"
#include "regoption.h"
#include "version.h"
#include "security.h"

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
names_from_array(Datum arr, const char *argname)
{
	int			n;
	Datum	   *elems = ArgTextArray(arr, argname, &n);
	List	   *result = NIL;

	for (int i = 0; i < n; i++)
	{
		char	   *name;

		CHECK_FOR_INTERRUPTS();
		name = TextDatumGetCString(elems[i]);
		if (ListHasName(result, name))
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

/* The event column must hold dates or timestamps. */
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
 * The kind of a cursor column: timestamps (or dates), or integers that
 * only grow, such as an event id.
 */
static CursorKind
cursor_kind_of(RemoteColumn *col)
{
	switch (col->data_type)
	{
		case SQL_TYPE_TIMESTAMP:
		case SQL_TIMESTAMP:
		case SQL_TYPE_DATE:
		case SQL_DATE:
			return CURSOR_TIMESTAMP;
		case SQL_BIGINT:
		case SQL_INTEGER:
		case SQL_SMALLINT:
		case SQL_TINYINT:
			return CURSOR_INTEGER;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("cursor column \"%s\" must be a timestamp, a date or an integer, not %s",
							col->name, col->type_name)));
	}
	return CURSOR_NONE;			/* keep the compiler quiet */
}

/*
 * Checks against the warehouse's columns: the key, cursor and event
 * columns exist with usable types.  Sets the cursor's kind, and checks
 * cursor_overlap against it.
 */
static void
check_against_warehouse(TableConfig *cfg, RemoteTable *rt)
{
	ListCell   *lc;

	foreach(lc, cfg->key_columns)
		require_remote_column(rt, lfirst(lc), "key column");
	cfg->cursor_kind = CURSOR_NONE;
	if (cfg->cursor_column)
		cfg->cursor_kind = cursor_kind_of(require_remote_column(rt, cfg->cursor_column,
																"cursor column"));
	if (cfg->event_column)
		require_temporal(require_remote_column(rt, cfg->event_column, "event column"),
						 "event column");

	if (cfg->initial_chunk && cfg->cursor_kind == CURSOR_INTEGER)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("initial_chunk needs a timestamp cursor"),
				 errdetail("Cursor column \"%s\" holds integers.", cfg->cursor_column)));

	if (cfg->cursor_overlap)
	{
		bool		negative;

		if (cfg->cursor_kind == CURSOR_INTEGER)
		{
			char	   *end;
			int64		n;

			errno = 0;
			n = strtoi64(cfg->cursor_overlap, &end, 10);
			if (errno != 0 || end == cfg->cursor_overlap || *end != '\0')
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("cursor_overlap must be a number for integer cursor \"%s\", not \"%s\"",
								cfg->cursor_column, cfg->cursor_overlap)));
			negative = n < 0;
		}
		else
		{
			Interval   *overlap = RegOptionInterval(cfg->cursor_overlap, "cursor_overlap");

			RegOptionCheckInterval(overlap, "cursor_overlap", false);
			negative = RegIntervalNotPositive(overlap, false);
		}
		if (negative)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cursor_overlap must not be negative")));
	}
}

/*
 * Checks of an existing local table: it holds the synced columns with a
 * unique index on the key, and can take parallel chunks if asked to.
 */
static void
check_local_table(TableConfig *cfg)
{
	SchemaCheckLocalTable(cfg->local_relid, cfg->columns, cfg->key_columns);
	if (cfg->parallel > 1 && get_rel_relkind(cfg->local_relid) == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("parallel chunk loads need a local table that is not partitioned"),
				 errdetail("A partitioned table has no unique index on the key alone, which concurrent chunks rely on."),
				 errhint("Use parallel => 1: the chunks are then loaded one after another.")));
}

/* The server of a registration: ours, usable by the caller, with a mapping. */
static ForeignServer *
usable_server(const char *name, UserMapping **mapping)
{
	ForeignServer *server = GetForeignServerByName(name, false);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	AclResult	aclresult;

	if (strcmp(fdw->fdwname, TREBLE_SYNC_EXTENSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" does not use the treble_sync foreign-data wrapper",
						server->servername),
				 errhint("CREATE SERVER ... FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string '...').")));
	aclresult = object_aclcheck(ForeignServerRelationId, server->serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server->servername);
	*mapping = OdbcLookupUserMapping(GetUserId(), server);
	return server;
}

/* What the warehouse says a registration's table looks like. */
static RemoteTable *
describe_remote(TableConfig *cfg, bool default_key)
{
	UserMapping *mapping;
	ForeignServer *server = usable_server(cfg->server_name, &mapping);
	OdbcConn   *conn = OdbcConnect(server, mapping, cfg->login_timeout, cfg->query_timeout, true);
	RemoteTable *rt = SchemaDescribeRemote(conn, cfg->remote_schema, cfg->remote_table);

	cfg->server_name = server->servername;
	if (default_key)
	{
		cfg->key_columns = SchemaRemotePrimaryKey(conn, rt);
		if (cfg->key_columns == NIL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("warehouse table \"%s\" has no primary key",
							cfg->remote_schema ? psprintf("%s.%s", cfg->remote_schema, cfg->remote_table) :
							cfg->remote_table),
					 errhint("Name the business key: key_columns => '{deployment_id}'.")));
	}
	OdbcDisconnect(conn);
	return rt;
}

/*
 * Error unless the caller has the privileges of the registration's owner.
 * The registration remembers its owner, so this holds after the local
 * table was dropped too.
 */
static void
require_owner(TableConfig *cfg)
{
	SecurityRequireManage(cfg->owner, "table", cfg->name, "change the registration of");
}

/*
 * The columns a registration syncs, in warehouse order: all of them, or
 * those asked for plus the key, cursor and event columns, which a cycle
 * always needs.
 */
static List *
synced_columns(TableConfig *cfg, RemoteTable *rt, List *wanted)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, wanted)
		require_remote_column(rt, lfirst(lc), "column");
	foreach(lc, rt->columns)
	{
		char	   *name = ((RemoteColumn *) lfirst(lc))->name;

		if (wanted == NIL || ListHasName(wanted, name) ||
			ListHasName(cfg->key_columns, name) ||
			(cfg->cursor_column && strcmp(cfg->cursor_column, name) == 0) ||
			(cfg->event_column && strcmp(cfg->event_column, name) == 0))
			result = lappend(result, name);
	}
	return result;
}

/*
 * A per-column option given as a JSON object of column names and texts
 * (column_types, mask): DefElems (column, text), every column checked to be
 * a synced one.
 */
static List *
parse_column_map(TableConfig *cfg, Datum map, const char *option)
{
	List	   *result = NIL;
	Oid			argtypes[1] = {JSONBOID};
	Datum		values[1] = {map};
	MemoryContext cxt = CurrentMemoryContext;

	SPI_connect();
	if (SPI_execute_with_args("SELECT key, value FROM pg_catalog.jsonb_each_text($1)",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the %s option", option);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *column = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *value = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		MemoryContext old;

		if (!ListHasName(cfg->columns, column))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s names \"%s\", which is not a synced column", option, column)));
		if (value == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s gives nothing for column \"%s\"", option, column)));
		old = MemoryContextSwitchTo(cxt);
		result = lappend(result, makeDefElem(pstrdup(column), (Node *) makeString(pstrdup(value)), -1));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return result;
}

/*
 * column_types => '{"payload": "jsonb"}': the local type of some columns
 * of a table add_table creates.  Each type name is parsed as PostgreSQL
 * parses a type and written back in its canonical, schema-qualified form,
 * so nothing but that type's name reaches the CREATE TABLE, whatever the
 * search_path then.  Returns DefElems (column, type).
 */
static List *
parse_column_types(TableConfig *cfg, Datum types)
{
	List	   *result = parse_column_map(cfg, types, "column_types");
	ListCell   *lc;

	foreach(lc, result)
	{
		DefElem    *def = lfirst(lc);
		Oid			typid;
		int32		typmod;

		parseTypeString(strVal(def->arg), &typid, &typmod, false);
		/* qualified: the table is created with search_path pinned */
		def->arg = (Node *) makeString(format_type_extended(typid, typmod,
															FORMAT_TYPE_TYPEMOD_GIVEN |
															FORMAT_TYPE_FORCE_QUALIFY));
	}
	return result;
}

/*
 * mask => '{"user_phone": "sha256"}': columns stored as a salted SHA-256 of
 * their value.  Returns the column names.
 */
static List *
parse_mask(TableConfig *cfg, Datum mask)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, parse_column_map(cfg, mask, "mask"))
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(strVal(def->arg), "sha256") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("mask of column \"%s\" must be \"sha256\", not \"%s\"",
							def->defname, strVal(def->arg))));
		result = lappend(result, def->defname);
	}
	return result;
}

/* A masked column holds 64 hex characters: its local type must be text. */
static void
check_masked_columns(TableConfig *cfg)
{
	ListCell   *lc;

	foreach(lc, cfg->masked_columns)
	{
		char	   *column = lfirst(lc);
		Oid			type = get_atttype(cfg->local_relid, get_attnum(cfg->local_relid, column));

		if (type != TEXTOID && type != VARCHAROID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("masked column \"%s\" must be text in the local table, not %s",
							column, format_type_be(type)),
					 errhint("ALTER TABLE ... ALTER COLUMN %s TYPE text;", quote_identifier(column))));
	}
}

/*
 * keep_history of add_table and alter_table: how long versions are kept
 * after they closed, at least a day; '' is none (history off).
 */
static Interval *
keep_history_option(const RegArgs *args)
{
	char	   *value = RegArgText(args, "keep_history");
	Interval   *keep;

	if (value[0] == '\0')
		return NULL;
	keep = RegOptionInterval(value, "keep_history");
	RegOptionCheckInterval(keep, "keep_history", true);
	if (DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(keep),
										 DirectFunctionCall3(interval_in, CStringGetDatum("1 day"),
															 ObjectIdGetDatum(InvalidOid),
															 Int32GetDatum(-1)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keep_history must be at least 1 day"),
				 errhint("Pass '' to keep no history.")));
	return keep;
}

/*
 * add_table(remote_table, server, ...): the arguments are read by name, as
 * regoption.c describes them.
 */
PG_FUNCTION_INFO_V1(treble_sync_add_table);

Datum
treble_sync_add_table(PG_FUNCTION_ARGS)
{
	int			search_path_level;
	Datum		result;
	TableConfig cfg;
	RegArgs		args;
	char	   *remote_input;
	RemoteTable *rt;
	ListCell   *lc;
	char	   *local_schema = NULL;
	char	   *local_name;
	char	   *other;
	List	   *type_overrides = NIL;

	VersionRequireCatalog("add_table()");
	RecoveryRequirePrimary("add_table()");
	memset(&cfg, 0, sizeof(cfg));
	RegArgsInit(&args, fcinfo, false);
	if (!RegArgGiven(&args, "remote_table") || !RegArgGiven(&args, "server"))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("remote_table and server are required")));
	RegOptionsRead(&args, &cfg);

	remote_input = RegArgText(&args, "remote_table");
	split_remote_name(remote_input, &cfg.remote_schema, &cfg.remote_table);
	cfg.name = RegArgGiven(&args, "name") ? RegArgText(&args, "name") : remote_input;
	cfg.server_name = NameStr(*DatumGetName(RegArgDatum(&args, "server")));
	RegOptionsCheck(&cfg);

	if (CatalogGetTable(cfg.name, true) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is already registered with treble_sync", cfg.name),
				 errhint("Pass name => '...' to register it again under another name.")));

	rt = describe_remote(&cfg, !RegArgGiven(&args, "key_columns"));
	if (RegArgGiven(&args, "key_columns"))
		cfg.key_columns = names_from_array(RegArgDatum(&args, "key_columns"),
										   "key_columns");
	check_against_warehouse(&cfg, rt);
	cfg.all_columns = !RegArgGiven(&args, "columns");
	cfg.columns = synced_columns(&cfg, rt, cfg.all_columns ? NIL :
								 names_from_array(RegArgDatum(&args, "columns"),
												  "columns"));
	if (RegArgGiven(&args, "column_types"))
		type_overrides = parse_column_types(&cfg, RegArgDatum(&args, "column_types"));
	if (RegArgGiven(&args, "mask"))
		cfg.masked_columns = parse_mask(&cfg, RegArgDatum(&args, "mask"));

	/* the local copy: create it, or check the one that is there */
	if (!RegArgGiven(&args, "local_table"))
		local_name = rt->table;
	else
	{
		List	   *names = ts_stringToQualifiedNameList(RegArgText(&args, "local_table"));
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
	if (!OidIsValid(cfg.local_relid) && local_schema == NULL)
		local_schema = get_namespace_name(RangeVarGetCreationNamespace(makeRangeVar(NULL, local_name, -1)));

	/*
	 * Every name the caller gave is resolved: from here on nothing planted
	 * in a schema of the caller's search_path may be picked up.
	 */
	search_path_level = SecurityPinSearchPath();

	if (OidIsValid(cfg.local_relid))
	{
		if (!object_ownercheck(RelationRelationId, cfg.local_relid, GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, local_name);
		cfg.owner = SecurityRelationOwner(cfg.local_relid);
		other = CatalogTableUsingLocal(cfg.local_relid);
		if (other)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("local table \"%s\" already receives table \"%s\"", local_name, other),
					 errhint("Give this registration its own local_table.")));
		if (type_overrides != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column_types applies only to a local table that add_table creates"),
					 errdetail("Local table \"%s\" exists already.", local_name),
					 errhint("Change the column types of the existing table with ALTER TABLE.")));
		check_local_table(&cfg);
	}
	else
	{
		/* a table add_table creates holds its masked columns as text */
		foreach(lc, cfg.masked_columns)
			type_overrides = lappend(type_overrides,
									 makeDefElem(lfirst(lc), (Node *) makeString("pg_catalog.text"), -1));
		cfg.local_relid = SchemaCreateLocalTable(local_schema, local_name, rt, cfg.columns,
												 cfg.key_columns, cfg.event_column,
												 type_overrides);
		cfg.owner = GetUserId();
	}
	check_masked_columns(&cfg);

	if (cfg.event_column == NULL && cfg.mode == SYNC_UPSERT)
		ereport(NOTICE,
				(errmsg("table \"%s\" has no event_column: rows removed in the warehouse will stay in the copy", cfg.name),
				 errhint("Pass event_column => 'scheduled_at' (or created_at) to refresh a hot window each cycle.")));

	/* what the warehouse's columns are now, for drift checks */
	foreach(lc, rt->columns)
	{
		RemoteColumn *col = lfirst(lc);

		cfg.remote_columns = lappend(cfg.remote_columns,
									 makeDefElem(col->name, (Node *) makeString(DriftSignature(col)), -1));
	}
	(void) CatalogInsertTable(&cfg, cfg.owner);
	cfg.table_id = CatalogGetTable(cfg.name, false)->table_id;
	if (RegArgGiven(&args, "keep_history"))
		HistoryConfigure(&cfg, keep_history_option(&args));
	result = CatalogSetRemoteColumns(&cfg);
	SecurityUnpinSearchPath(search_path_level);
	PG_RETURN_DATUM(result);
}

/*
 * Take the table's cycle lock until the end of the transaction, or error
 * out if a cycle of the table is running: a registration must not change
 * (or go) under a cycle that read it, which would commit its watermark
 * computed under the old one (the copy would keep values in clear after a
 * new mask, say, and no later cycle would rewrite them).  Refused rather
 * than waited for: a cycle can run for hours, and a caller waiting in a
 * transaction would hold whatever it took before.  While the lock is held,
 * a cycle that starts is logged 'skipped'.
 */
static void
require_no_cycle(TableConfig *cfg, const char *function)
{
	if (!LockWaitTryCycleLock(cfg->table_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("a cycle or another change of \"%s\" is running", cfg->name),
				 errdetail("%s() does not change a registration while its cycle, or another call that changes it, runs.", function),
				 errhint("Wait for it to end, or cancel it: SELECT pg_cancel_backend(worker_pid) FROM treble_sync.progress WHERE table_name = %s;",
						 quote_literal_cstr(cfg->name))));
}

/*
 * alter_table(name, ...): the options are read by name, as regoption.c
 * describes them; NULL leaves an option as it is.
 *
 * Changes options of a registration, checked as add_table checks them.  A
 * change of an option that says so (a new cursor column, mode or mask)
 * drops the watermark: the next cycle is a first sync again.  The server,
 * warehouse table and local table stay: for another of those, remove the
 * registration and add it again.
 */
PG_FUNCTION_INFO_V1(treble_sync_alter_table);

Datum
treble_sync_alter_table(PG_FUNCTION_ARGS)
{
	TableConfig *cfg;
	TableConfig before;
	RegArgs		args;
	RemoteTable *rt;
	ListCell   *lc;
	bool		reset;

	VersionRequireCatalog("alter_table()");
	RecoveryRequirePrimary("alter_table()");
	RegArgsInit(&args, fcinfo, true);
	cfg = CatalogGetTableArg(fcinfo, 0);
	require_owner(cfg);

	/*
	 * Every option says whether a change of it needs the cycle lock; a call
	 * that changes nothing takes it too, as a check that nothing runs.
	 */
	if (!RegArgsAnyGiven(&args, 0) || RegArgsAnyGiven(&args, REGOPT_CYCLE_LOCK))
		require_no_cycle(cfg, "alter_table");
	/* read again under the lock: a cycle that just ended may have changed it */
	cfg = CatalogGetTableById(cfg->table_id);
	before = *cfg;

	RegOptionsRead(&args, cfg);
	if (RegArgGiven(&args, "key_columns"))
		cfg->key_columns = names_from_array(RegArgDatum(&args, "key_columns"),
											"key_columns");
	if (RegArgGiven(&args, "mask"))
	{
		cfg->masked_columns = parse_mask(cfg, RegArgDatum(&args, "mask"));
		if (get_rel_name(cfg->local_relid) != NULL)
			check_masked_columns(cfg);
	}
	if (RegArgGiven(&args, "name"))
	{
		cfg->name = RegArgText(&args, "name");
		if (strcmp(cfg->name, before.name) != 0 && CatalogGetTable(cfg->name, true) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("table \"%s\" is already registered with treble_sync", cfg->name)));
	}
	RegOptionsCheck(cfg);

	/* names must still be warehouse columns of the synced set */
	rt = describe_remote(cfg, false);
	check_against_warehouse(cfg, rt);
	foreach(lc, list_concat(list_copy(cfg->key_columns),
							list_make2(cfg->cursor_column, cfg->event_column)))
	{
		char	   *col = lfirst(lc);

		if (col && !ListHasName(cfg->columns, col))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column \"%s\" is not synced into the local table of \"%s\"",
							col, cfg->name),
					 errhint("Remove the registration and add it again to sync new columns.")));
	}
	if (get_rel_name(cfg->local_relid) != NULL)
		check_local_table(cfg);

	/* a cursor of another kind reads the warehouse another way: start over */
	reset = RegOptionsReset(&before, cfg) || before.cursor_kind != cfg->cursor_kind;
	HistoryCheckAlter(&before, cfg);
	(void) CatalogUpdateTable(cfg, reset);
	if (RegArgGiven(&args, "keep_history"))
		HistoryConfigure(cfg, keep_history_option(&args));
	else if (cfg->keep_history != NULL)
		HistoryConfigure(cfg, cfg->keep_history);	/* checks the cursor still fits */
	PG_RETURN_DATUM(CatalogSetRemoteColumns(cfg));
}

/*
 * remove_table(name, drop_local): unregister a table.  Its run log stays;
 * with drop_local the local table is dropped too (RESTRICT: views on it
 * make that an error, and nothing is removed).  A NULL name or drop_local
 * is an error, not a silent no-op: the caller meant to remove something.
 */
PG_FUNCTION_INFO_V1(treble_sync_remove_table);

Datum
treble_sync_remove_table(PG_FUNCTION_ARGS)
{
	TableConfig *cfg;
	bool		drop_local;
	char	   *relname;

	VersionRequireCatalog("remove_table()");
	RecoveryRequirePrimary("remove_table()");
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("drop_local must not be NULL")));
	drop_local = PG_GETARG_BOOL(1);
	cfg = CatalogGetTableArg(fcinfo, 0);
	relname = get_rel_name(cfg->local_relid);

	require_owner(cfg);
	require_no_cycle(cfg, "remove_table");
	/* dropping the copy is DROP TABLE's own right: the table's ownership */
	if (drop_local && relname != NULL &&
		!object_ownercheck(RelationRelationId, cfg->local_relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, relname);
	HistoryRemove(cfg, drop_local);
	CatalogDeleteTable(cfg->table_id);
	if (drop_local && relname != NULL)
	{
		ObjectAddress obj;

		ObjectAddressSet(obj, RelationRelationId, cfg->local_relid);
		performDeletion(&obj, DROP_RESTRICT, 0);
	}
	PG_RETURN_VOID();
}
