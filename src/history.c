/*-------------------------------------------------------------------------
 *
 * history.c
 *	  Versions of a copy, for registrations with keep_history.
 *
 * A copy that keeps history has a history table next to it, named
 * <copy>_history, owned by the copy's owner: the copy's columns, then
 * ts_valid_from and ts_valid_to (the cuts, on the warehouse's clock, from
 * which a version was in the copy and at which it stopped being there),
 * ts_opened_by and ts_closed_by (the runs that did it) and ts_rewound_by
 * (the rewind() that set a version aside).  A version is in the copy at
 * cut t when ts_valid_from <= t < ts_valid_to (or ts_valid_to is NULL),
 * and ts_rewound_by is NULL.
 *
 * Versions are recorded by the copy's own AFTER ... FOR EACH STATEMENT
 * triggers, with transition tables, whatever statement of a cycle made the
 * change: the cycle itself knows nothing of history.  A trigger records
 * only inside an attempt at a run (attempt.h gives it the cut and the run
 * id), and refuses changes made outside one, which would be in the copy
 * and not in its history.  A statement that changed no row writes
 * nothing, so neither does a cycle that changed nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "attempt.h"
#include "catalog.h"
#include "cursor.h"
#include "history.h"
#include "localsql.h"
#include "lockwait.h"
#include "odbc.h"
#include "recovery.h"
#include "version.h"
#include "security.h"


/* The columns a history table has besides the copy's. */
static const char *const history_columns[] = {
	"ts_valid_from", "ts_valid_to", "ts_opened_by", "ts_closed_by", "ts_rewound_by"
};

/*
 * The triggers on a copy that record its history: name, event, transition
 * tables (a trigger with transition tables fires for one event only).
 */
static const char *const history_triggers[][3] = {
	{"treble_sync_history_insert", "INSERT", "REFERENCING NEW TABLE AS treble_sync_new"},
	{"treble_sync_history_update", "UPDATE",
	"REFERENCING OLD TABLE AS treble_sync_old NEW TABLE AS treble_sync_new"},
	{"treble_sync_history_delete", "DELETE", "REFERENCING OLD TABLE AS treble_sync_old"},
	{"treble_sync_history_truncate", "TRUNCATE", ""}
};

/*
 * The copy rewind() is making equal to a past state (InvalidOid: none): its
 * history triggers stand aside, and only its.  A trigger of the copy's
 * owner that changes another copy keeping history meanwhile meets that
 * copy's rule, only its cycles change it, as any other statement does.
 */
static Oid	rewinding_relid = InvalidOid;

/*
 * The run for which this process has opened versions: a later change of
 * the same key in the same run replaces such a version instead of closing
 * it, and only then is it worth looking for one.
 */
static int64 opened_by_run = 0;

/* The copy's columns, in order; without generated ones if insertable. */
static List *
copy_columns(Oid relid, bool insertable)
{
	Relation	rel = table_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *names = NIL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || (insertable && att->attgenerated))
			continue;
		names = lappend(names, pstrdup(NameStr(att->attname)));
	}
	table_close(rel, AccessShareLock);
	return names;
}

/* The warehouse's time zone: its cuts are wall-clock times there. */
static const char *
warehouse_zone(TableConfig *cfg)
{
	return OdbcServerTimezone(GetForeignServerByName(cfg->server_name, false));
}

/* A cut as the catalog keeps it (warehouse wall-clock) as a point in time. */
static TimestampTz
cut_time(TableConfig *cfg, const char *cut)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamp_zone,
												   CStringGetTextDatum(warehouse_zone(cfg)),
												   TimestampGetDatum(CursorParseTimestamp(cut))));
}

/* A point in time as the catalog's text of a cut, on the warehouse's clock. */
static char *
cut_text(TableConfig *cfg, TimestampTz t)
{
	return CursorFormatTimestamp(DatumGetTimestamp(DirectFunctionCall2(timestamptz_zone,
																	  CStringGetTextDatum(warehouse_zone(cfg)),
																	  TimestampTzGetDatum(t))));
}

/* The name of a copy's history table: <copy>_history, in the copy's schema. */
static char *
history_name(TableConfig *cfg)
{
	char	   *relname = get_rel_name(cfg->local_relid);
	char	   *name;

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the local table of \"%s\" no longer exists", cfg->name),
				 errhint("Register the table again with treble_sync.add_table().")));
	name = psprintf("%s_history", relname);

	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the history table of \"%s\" would be named \"%s\", which is too long", cfg->name, name),
				 errhint("Rename the local table to at most %d characters.", NAMEDATALEN - 1 - 8)));
	return name;
}

/* Error unless the registration keeps history and its history table exists. */
static void
require_history(TableConfig *cfg)
{
	if (cfg->keep_history == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" keeps no history", cfg->name),
				 errhint("Keep it from now on with treble_sync.alter_table('%s', keep_history => '400 days').",
						 cfg->name)));
	if (get_rel_name(cfg->history_relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the history table of \"%s\" was dropped", cfg->name),
				 errhint("Turn history off and on again: treble_sync.alter_table('%s', keep_history => ''), then with the interval you want.",
						 cfg->name)));
}

/*
 * The oldest instant of which the history of a table is complete: when it
 * began to keep it, or now() - keep_history, whichever is later (versions
 * that closed before that may have been pruned).
 */
static TimestampTz
history_horizon(TableConfig *cfg)
{
	TimestampTz kept = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
															   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
															   IntervalPGetDatum(cfg->keep_history)));

	return Max(kept, cfg->history_from);
}

/* Error if the history of a table does not reach back to t. */
static void
require_within(TableConfig *cfg, TimestampTz t, const char *what)
{
	TimestampTz horizon = history_horizon(cfg);

	if (t < horizon)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of \"%s\" at %s is beyond its history", what, cfg->name,
						timestamptz_to_str(t)),
				 errdetail("The history of \"%s\" is complete from %s on (keep_history is %s).",
						   cfg->name, timestamptz_to_str(horizon),
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(cfg->keep_history))))));
}

/* Drop the history triggers of a copy, if the copy and they are there. */
static void
drop_triggers(TableConfig *cfg)
{
	char	   *copy;

	if (get_rel_name(cfg->local_relid) == NULL)
		return;
	copy = LocalTableName(cfg->local_relid);
	for (size_t i = 0; i < lengthof(history_triggers); i++)
		LocalRunSql(LocalHistoryTriggerSql(false, history_triggers[i][0], copy, NULL, NULL),
					0, NULL, NULL, SPI_OK_UTILITY);
}

/*
 * Make the history table of a copy and its triggers, as the copy's owner,
 * and record the copy's rows as versions valid from its watermark (or
 * from the beginning, before the first cycle).  Returns the table's oid.
 */
static Oid
create_history(TableConfig *cfg, TimestampTz from)
{
	char	   *name = history_name(cfg);
	Oid			nsp = get_rel_namespace(cfg->local_relid);
	char	   *copy = LocalTableName(cfg->local_relid);
	char	   *hist;
	char	   *cols = LocalColumnList(copy_columns(cfg->local_relid, false), NULL);
	Oid			relid;
	ListCell   *lc;

	for (size_t i = 0; i < lengthof(history_columns); i++)
		if (get_attnum(cfg->local_relid, history_columns[i]) != InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("the copy of \"%s\" has a column \"%s\", which its history table needs for itself",
							cfg->name, history_columns[i])));
	if (OidIsValid(get_relname_relid(name, nsp)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", name),
				 errdetail("It would be the history table of \"%s\".", cfg->name),
				 errhint("Drop or rename it, then try again.")));

	hist = quote_qualified_identifier(get_namespace_name(nsp), name);
	foreach(lc, LocalHistoryCreateSql(hist, copy, cfg->key_columns))
		LocalRunSql(lfirst(lc), 0, NULL, NULL, SPI_OK_UTILITY);
	LocalRunSql(LocalHistorySeedSql(hist, copy, cols),
				1, (Oid[]) {TIMESTAMPTZOID}, (Datum[]) {TimestampTzGetDatum(from)}, SPI_OK_INSERT);

	for (size_t i = 0; i < lengthof(history_triggers); i++)
		LocalRunSql(LocalHistoryTriggerSql(true, history_triggers[i][0], copy,
										   history_triggers[i][1], history_triggers[i][2]),
					0, NULL, NULL, SPI_OK_UTILITY);

	relid = get_relname_relid(name, nsp);
	CommandCounterIncrement();
	return relid;
}

/*
 * add_table()/alter_table() with keep_history: start keeping history (a
 * history table and triggers), change how long it is kept, or (keep
 * NULL) stop: the triggers go, the history table stays, no longer
 * registered.  Runs as the copy's owner, who owns the history table.
 */
void
HistoryConfigure(TableConfig *cfg, Interval *keep)
{
	SecurityState state;
	Oid			relid = cfg->history_relid;
	TimestampTz from = cfg->history_from;

	if (keep != NULL && cfg->cursor_kind != CURSOR_TIMESTAMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("keep_history needs a timestamp cursor column"),
				 errdetail("Versions are valid from one cut to another, on the warehouse's clock; \"%s\" has %s.",
						   cfg->name, cfg->cursor_kind == CURSOR_NONE ? "no cursor" : "an integer cursor")));
	if (keep == NULL && cfg->keep_history == NULL)
		return;

	/* a new interval only: nothing is done as the owner */
	if (keep != NULL && cfg->keep_history != NULL)
	{
		CatalogSetHistory(cfg->table_id, keep, relid, from);
		cfg->keep_history = keep;
		return;
	}

	SecurityBecomeOwner(cfg, &state);
	SPI_connect();
	if (keep == NULL)
	{
		drop_triggers(cfg);
		relid = InvalidOid;
	}
	else if (cfg->keep_history == NULL)
	{
		from = cfg->watermark ? cut_time(cfg, cfg->watermark) : DT_NOBEGIN;
		relid = create_history(cfg, from);
	}
	SPI_finish();
	SecurityRestore(&state);

	CatalogSetHistory(cfg->table_id, keep, relid, from);
	cfg->keep_history = keep;
	cfg->history_relid = relid;
	cfg->history_from = from;
}

/*
 * alter_table(): a registration that keeps history keeps its key, by
 * which its versions are found.
 */
void
HistoryCheckAlter(TableConfig *before, TableConfig *after)
{
	ListCell   *lc;

	if (before->keep_history == NULL)
		return;
	if (list_length(before->key_columns) != list_length(after->key_columns))
		goto changed;
	foreach(lc, before->key_columns)
		if (strcmp(lfirst(lc), list_nth(after->key_columns, foreach_current_index(lc))) != 0)
			goto changed;
	return;
changed:
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the key of \"%s\" cannot change while it keeps history", before->name),
			 errhint("Stop keeping history first: treble_sync.alter_table('%s', keep_history => '').",
					 before->name)));
}

/*
 * remove_table(): the triggers go; with drop_table (drop_local) the
 * history table too, which takes its ownership, as DROP TABLE does.
 */
void
HistoryRemove(TableConfig *cfg, bool drop_table)
{
	SecurityState state;
	char	   *relname;

	if (cfg->keep_history == NULL)
		return;
	SecurityBecomeOwner(cfg, &state);
	SPI_connect();
	drop_triggers(cfg);
	SPI_finish();
	SecurityRestore(&state);

	relname = get_rel_name(cfg->history_relid);
	if (drop_table && relname != NULL)
	{
		ObjectAddress obj;

		if (!object_ownercheck(RelationRelationId, cfg->history_relid, GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, relname);
		ObjectAddressSet(obj, RelationRelationId, cfg->history_relid);
		performDeletion(&obj, DROP_RESTRICT, 0);
	}
}

/*
 * The end of every run of a table that keeps history (a cycle, resync,
 * repair, rewind): prune the versions that closed before now() -
 * keep_history, and those set aside by a rewind that began before it.
 * Both are index scans, so a run that has nothing to prune writes nothing.
 */
void
HistoryAfterCycle(TableConfig *cfg)
{
	SecurityState state;
	char	   *hist;
	Datum		values[1];

	if (cfg->keep_history == NULL || get_rel_name(cfg->history_relid) == NULL)
		return;
	hist = LocalTableName(cfg->history_relid);
	values[0] = DirectFunctionCall2(timestamptz_mi_interval,
									TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
									IntervalPGetDatum(cfg->keep_history));
	SecurityBecomeOwner(cfg, &state);
	SPI_connect();
	LocalRunSql(LocalHistoryExpireSql(hist, false), 1, (Oid[]) {TIMESTAMPTZOID}, values, SPI_OK_DELETE);
	LocalRunSql(LocalHistoryExpireSql(hist, true), 1, (Oid[]) {TIMESTAMPTZOID}, values, SPI_OK_DELETE);
	SPI_finish();
	SecurityRestore(&state);
}

/*
 * Give the history table every column of the copy, with the copy's type:
 * schema drift (auto_accept) adds and widens the copy's columns, and the
 * history follows at the first change it records after that.
 */
static void
align_history(Relation copy, Oid hist_relid, const char *hist)
{
	TupleDesc	desc = RelationGetDescr(copy);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *col = NameStr(att->attname);
		AttrNumber	attnum;
		Oid			type;
		int32		typmod;
		Oid			coll;
		char	   *typname;

		if (att->attisdropped)
			continue;
		typname = format_type_extended(att->atttypid, att->atttypmod,
									   FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
		attnum = get_attnum(hist_relid, col);
		if (attnum == InvalidAttrNumber)
		{
			LocalRunSql(LocalHistoryColumnSql(hist, col, typname, true), 0, NULL, NULL, SPI_OK_UTILITY);
			continue;
		}
		get_atttypetypmodcoll(hist_relid, attnum, &type, &typmod, &coll);
		if (type != att->atttypid || typmod != att->atttypmod)
			LocalRunSql(LocalHistoryColumnSql(hist, col, typname, false), 0, NULL, NULL, SPI_OK_UTILITY);
	}
	CommandCounterIncrement();
}

/*
 * The cut at which the run in progress changes the copy, as a point in
 * time: the cut it froze (a chunk helper's is the load's), or the
 * watermark if the warehouse's newest cursor fell below it, so that
 * versions never close before they opened.
 */
static TimestampTz
run_cut(TableConfig *cfg)
{
	const char *cut = CurrentAttempt->cut ? CurrentAttempt->cut : cfg->load_cut;
	TimestampTz t;

	if (cut == NULL)
		elog(ERROR, "treble_sync changed the copy of \"%s\" before freezing a cut", cfg->name);
	t = cut_time(cfg, cut);
	if (cfg->watermark != NULL)
		t = Max(t, cut_time(cfg, cfg->watermark));
	return t;
}

/*
 * Close the open versions of the keys in transition table src (NULL: of
 * every key, after a TRUNCATE) at cut, by run.  A version this run opened
 * itself is an intermediate state, never seen by a reader: it is deleted.
 */
static void
close_versions(TableConfig *cfg, const char *hist, const char *src, Datum *values)
{
	Oid			types[2] = {TIMESTAMPTZOID, INT8OID};

	if (opened_by_run == DatumGetInt64(values[1]) || cfg->load_cut != NULL)
		LocalRunSql(LocalHistoryCloseSql(cfg, hist, src, true), 2, types, values, SPI_OK_DELETE);
	LocalRunSql(LocalHistoryCloseSql(cfg, hist, src, false), 2, types, values, SPI_OK_UPDATE);
}

/*
 * treble_sync.history_capture(): the statement trigger of a copy that
 * keeps history (AFTER INSERT, UPDATE, DELETE and TRUNCATE).
 */
PG_FUNCTION_INFO_V1(treble_sync_history_capture);

Datum
treble_sync_history_capture(PG_FUNCTION_ARGS)
{
	TriggerData *trig = (TriggerData *) fcinfo->context;
	Relation	rel;
	bool		truncate;
	int64		n_old;
	int64		n_new;
	char	   *name;
	TableConfig *cfg;
	char	   *hist;
	Datum		values[2];

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(trig->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(trig->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("treble_sync.history_capture() must be an AFTER ... FOR EACH STATEMENT trigger")));
	VersionRequireCatalog("history_capture()");
	rel = trig->tg_relation;
	Assert(rel != NULL);
	if (OidIsValid(rewinding_relid) && RelationGetRelid(rel) == rewinding_relid)
		return PointerGetDatum(NULL);
	truncate = TRIGGER_FIRED_BY_TRUNCATE(trig->tg_event);
	n_old = trig->tg_oldtable ? tuplestore_tuple_count(trig->tg_oldtable) : 0;
	n_new = trig->tg_newtable ? tuplestore_tuple_count(trig->tg_newtable) : 0;
	if (!truncate && n_old == 0 && n_new == 0)
		return PointerGetDatum(NULL);	/* nothing changed, nothing to write */

	name = CatalogTableUsingLocal(RelationGetRelid(rel));
	cfg = name ? CatalogGetTable(name, true) : NULL;
	if (cfg == NULL || cfg->keep_history == NULL)
		return PointerGetDatum(NULL);	/* no longer registered, or keeping history */
	if (CurrentAttempt == NULL || CurrentAttempt->run_id == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the copy of \"%s\" keeps history: only its cycles change it", cfg->name),
				 errdetail("A change made outside a cycle would be in the copy and not in its history."),
				 errhint("Change the warehouse and run a cycle, or go back to an earlier state with treble_sync.rewind(); treble_sync.alter_table('%s', keep_history => '') stops keeping history.",
						 cfg->name)));
	require_history(cfg);

	values[0] = TimestampTzGetDatum(run_cut(cfg));
	values[1] = Int64GetDatum(CurrentAttempt->run_id);
	hist = LocalTableName(cfg->history_relid);

	SPI_connect();
	if (SPI_register_trigger_data(trig) != SPI_OK_TD_REGISTER)
		elog(ERROR, "could not register the transition tables of the copy of \"%s\"", cfg->name);
	align_history(rel, cfg->history_relid, hist);
	if (truncate)
		close_versions(cfg, hist, NULL, values);
	else if (n_old > 0)
		close_versions(cfg, hist, "treble_sync_old", values);
	else
		close_versions(cfg, hist, "treble_sync_new", values);	/* none, unless the history was changed by hand */
	if (n_new > 0)
	{
		char	   *cols = LocalColumnList(copy_columns(RelationGetRelid(rel), false), NULL);

		LocalRunSql(LocalHistoryRecordSql(hist, "treble_sync_new", cols),
					2, (Oid[]) {TIMESTAMPTZOID, INT8OID}, values, SPI_OK_INSERT);
		opened_by_run = CurrentAttempt->run_id;
	}
	SPI_finish();
	return PointerGetDatum(NULL);
}

/*
 * "h.c1::type1, ..." (or "NULL::type" for a column the history table does
 * not have yet): the copy's columns, in its order and with its types, read
 * from history alias h.
 */
static char *
row_of_copy(TableConfig *cfg, const char *alias)
{
	Relation	rel = table_open(cfg->local_relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *col = NameStr(att->attname);
		char	   *typname;

		if (att->attisdropped)
			continue;
		typname = format_type_extended(att->atttypid, att->atttypmod,
									   FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
		if (get_attnum(cfg->history_relid, col) == InvalidAttrNumber)
			appendStringInfo(&buf, "%sNULL::%s", buf.len ? ", " : "", typname);
		else
			appendStringInfo(&buf, "%s%s.%s::%s", buf.len ? ", " : "", alias, quote_identifier(col), typname);
	}
	table_close(rel, AccessShareLock);
	return buf.data;
}

/*
 * treble_sync.history_query(copy regtype, kind text, from, to): the SQL
 * that as_of() ($1: the cut) and changes() ($1, $2: the two cuts) run in
 * the caller's session, with the caller's privileges, after checking that
 * the type is the row type of a copy that keeps history, that the caller
 * may read the copy, and that the history reaches back to the cuts.
 *
 * Any role may call it (as_of() and changes() are PUBLIC's), directly and
 * with any argument: CALLED ON NULL INPUT so that a NULL cut is an error
 * that says so rather than an empty answer, every argument is checked for
 * NULL before it is read, and a type that is no copy's row type (0, int4,
 * a dropped table's) is an error before anything else is looked at.
 */
PG_FUNCTION_INFO_V1(treble_sync_history_query);

Datum
treble_sync_history_query(PG_FUNCTION_ARGS)
{
	Oid			type;
	char	   *kind;
	bool		as_of;
	Oid			relid;
	char	   *name;
	TableConfig *cfg;
	AclResult	acl;
	TimestampTz from_cut;
	TimestampTz to_cut;
	char	   *hist;
	char	   *copy_type;
	char	   *sql;

	VersionRequireCatalog("history_query()");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("copy must not be NULL"),
				 errhint("Pass the row type of a copy, such as 'public.fact_campaign_sends'::regtype.")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kind must not be NULL"),
				 errhint("Pass 'as_of' or 'changes'.")));
	type = PG_GETARG_OID(0);
	if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(type)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type with OID %u does not exist", type),
				 errhint("Pass a NULL of the copy's row type, such as NULL::public.fact_campaign_sends.")));
	kind = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strcmp(kind, "as_of") == 0)
		as_of = true;
	else if (strcmp(kind, "changes") == 0)
		as_of = false;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kind must be 'as_of' or 'changes'")));

	relid = get_typ_typrelid(type);
	name = OidIsValid(relid) ? CatalogTableUsingLocal(relid) : NULL;
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("type %s is not the row type of a copy kept by treble_sync", format_type_be(type)),
				 errhint("Pass a NULL of the copy's row type, such as NULL::public.fact_campaign_sends.")));
	cfg = CatalogGetTable(name, false);
	require_history(cfg);
	Assert(OidIsValid(cfg->history_relid) && cfg->keep_history != NULL);
	acl = pg_class_aclcheck(cfg->local_relid, GetUserId(), ACL_SELECT);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_TABLE, get_rel_name(cfg->local_relid));
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the cuts of %s must not be NULL", kind)));
	from_cut = PG_GETARG_TIMESTAMPTZ(2);
	to_cut = PG_GETARG_TIMESTAMPTZ(3);
	require_within(cfg, from_cut, kind);
	if (to_cut < from_cut)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("changes of \"%s\" must go from an earlier cut to a later one", cfg->name)));

	hist = LocalTableName(cfg->history_relid);
	if (as_of)
		PG_RETURN_TEXT_P(cstring_to_text(LocalHistoryAsOfSql(hist, row_of_copy(cfg, "h"))));

	/*
	 * The keys with a version opened or closed between the cuts, each
	 * as it was at both: inserted, deleted, or updated if the two rows
	 * differ by binary image.
	 */
	copy_type = format_type_be_qualified(get_rel_type_id(cfg->local_relid));
	sql = LocalHistoryChangesSql(cfg, hist, row_of_copy(cfg, "h"), copy_type);
	PG_RETURN_TEXT_P(cstring_to_text(sql));
}

/* The history table's columns that hold the copy's values, in its order. */
static char *
data_columns(TableConfig *cfg, const char *alias)
{
	List	   *cols = NIL;
	ListCell   *lc;

	foreach(lc, copy_columns(cfg->history_relid, false))
	{
		bool		own = false;

		for (size_t i = 0; i < lengthof(history_columns); i++)
			own |= strcmp(lfirst(lc), history_columns[i]) == 0;
		if (!own)
			cols = lappend(cols, lfirst(lc));
	}
	return LocalColumnList(cols, alias);
}

/*
 * The watermark that goes with the state at `to`: the latest cut at or
 * before it at which the history recorded a change (cycles in between
 * changed nothing), else the cut history began at; NULL if none (the
 * next cycle is a first sync).  Pulling again from there re-applies the
 * warehouse's current truth.
 */
static char *
rewound_watermark(TableConfig *cfg, const char *hist, Datum *values)
{
	bool		isnull;
	Datum		latest;

	LocalRunSql(LocalHistoryLatestChangeSql(hist),
				 1, (Oid[]) {TIMESTAMPTZOID}, values, SPI_OK_SELECT);
	latest = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull && !TIMESTAMP_NOT_FINITE(DatumGetTimestampTz(latest)))
		return cut_text(cfg, Max(DatumGetTimestampTz(latest), cfg->history_from));
	if (!TIMESTAMP_NOT_FINITE(cfg->history_from))
		return cut_text(cfg, cfg->history_from);
	return NULL;
}

/*
 * Rewind the history of a copy to cut `to` and make the copy equal to it,
 * as the copy's owner: the versions opened after `to` are set aside
 * (ts_rewound_by), those closed after it are open again, and a set-aside
 * copy of each of these keeps how it had closed, for the audit.  Only the
 * keys of set-aside versions change in the copy.  Fills in the rows
 * deleted and inserted, and returns the new watermark.
 */
static char *
rewind_copy(TableConfig *cfg, TimestampTz to, int64 run_id, CycleResult *result)
{
	char	   *hist = LocalTableName(cfg->history_relid);
	char	   *copy = LocalTableName(cfg->local_relid);
	char	   *data = data_columns(cfg, NULL);
	List	   *steps;
	char	   *watermark;
	Relation	rel;
	Oid			types[2] = {TIMESTAMPTZOID, INT8OID};
	Datum		values[2] = {TimestampTzGetDatum(to), Int64GetDatum(run_id)};

	rel = table_open(cfg->local_relid, AccessShareLock);
	align_history(rel, cfg->history_relid, hist);
	table_close(rel, AccessShareLock);

	watermark = rewound_watermark(cfg, hist, values);
	steps = LocalHistoryRewindSql(cfg, hist, copy, data, copy_columns(cfg->local_relid, true));
	Assert(list_length(steps) == 5);
	LocalRunSql(list_nth(steps, 0), 2, types, values, SPI_OK_INSERT);
	LocalRunSql(list_nth(steps, 1), 2, types, values, SPI_OK_UPDATE);
	LocalRunSql(list_nth(steps, 2), 2, types, values, SPI_OK_UPDATE);
	result->rows_deleted = LocalRunSql(list_nth(steps, 3), 2, types, values, SPI_OK_DELETE);
	result->rows_inserted = LocalRunSql(list_nth(steps, 4), 2, types, values, SPI_OK_INSERT);
	return watermark;
}

/*
 * treble_sync.rewind(name, to): make the copy equal to its state at cut
 * `to` and set the watermark back to it, in one transaction, logged as a
 * run.  Needs the privileges of the registration's owner, and refuses a
 * cut beyond the history or not before the watermark, and to run beside
 * a cycle of the table.
 */
PG_FUNCTION_INFO_V1(treble_sync_rewind);

Datum
treble_sync_rewind(PG_FUNCTION_ARGS)
{
	TableConfig *cfg;
	TimestampTz to;
	SecurityState state;
	CycleResult result;
	int64		run_id;
	MemoryContext caller_cxt;

	VersionRequireCatalog("rewind()");
	RecoveryRequirePrimary("rewind()");
	cfg = CatalogGetTableArg(fcinfo, 0);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the cut to rewind to must not be NULL")));
	to = PG_GETARG_TIMESTAMPTZ(1);
	SecurityRequireManage(cfg->owner, "table", cfg->name, "rewind");
	CatalogRefuseGroupMember(cfg, "rewind()");
	if (!LockWaitTryCycleLock(cfg->table_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("a cycle or another change of \"%s\" is running", cfg->name),
				 errhint("Wait for it to end, then rewind.")));
	/* read again under the lock: a cycle that just ended moved the watermark */
	cfg = CatalogGetTableById(cfg->table_id);
	/* it writes the copy as the owner: the copy must be there, and the owner's */
	SecurityCheckCopyOwner(cfg);
	require_history(cfg);
	Assert(OidIsValid(cfg->history_relid) && cfg->keep_history != NULL);
	require_within(cfg, to, "rewind");
	if (cfg->watermark == NULL || to >= cut_time(cfg, cfg->watermark))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot rewind \"%s\" to %s: it is not before the watermark", cfg->name,
						timestamptz_to_str(to)),
				 errdetail("The watermark is %s.", cfg->watermark ? cfg->watermark : "not set yet")));

	memset(&result, 0, sizeof(result));
	run_id = CatalogInsertRun(cfg, "running", GetUserId());
	result.status = "success";
	result.watermark_from = cfg->watermark;

	SecurityBecomeOwner(cfg, &state);
	caller_cxt = CurrentMemoryContext;
	SPI_connect();
	if (OidIsValid(rewinding_relid))	/* from a trigger of the copy being rewound */
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot rewind \"%s\" while another rewind is running in this session", cfg->name)));
	rewinding_relid = cfg->local_relid;
	PG_TRY();
	{
		char	   *watermark = rewind_copy(cfg, to, run_id, &result);

		/* made in SPI's memory, which SPI_finish() frees */
		result.watermark_to = watermark ? MemoryContextStrdup(caller_cxt, watermark) : NULL;
	}
	PG_FINALLY();
	{
		rewinding_relid = InvalidOid;
	}
	PG_END_TRY();
	SPI_finish();
	SecurityRestore(&state);

	CatalogSetWatermark(cfg->table_id, result.watermark_to);
	CatalogBumpRevision(cfg->table_id);	/* a cycle that read the old one fails */
	CatalogFinishRun(run_id, &result);
	CatalogSetRunDetails(run_id, 1, NULL, NULL,
						 psprintf("rewind to %s", timestamptz_to_str(to)));
	HistoryAfterCycle(cfg);
	CatalogAfterRun(run_id);
	PG_RETURN_DATUM(CatalogRunRow(run_id));
}
