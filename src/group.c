/*-------------------------------------------------------------------------
 *
 * group.c
 *	  Sync groups: add_group(), alter_group(), remove_group() and
 *	  sync_group().
 *
 * A group is several registered tables cycled together: their cuts are
 * frozen together (on one snapshot of the warehouse where it has one),
 * every member is pulled and applied, and all of it commits once, so a
 * reader of the destination (or of a standby) sees every member at its
 * new cut or none.  One member's failure fails the group and applies
 * nothing.  The cycle itself is the worker's (worker.c, run_group); this
 * file checks and records what a group is.
 *
 * Who may use it: treble_sync_admin's functions, as add_table's.  A group
 * is made and changed only by a role that may manage every member (has
 * the privileges of their owner), and its members share that one owner
 * and one server: the group's cycle runs as that owner on one connection,
 * so no member can bring another role's identity or mapping into it.  A
 * group is cycled by a role that may start the cycle of every member.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "catalog.h"
#include "launch.h"
#include "lockwait.h"
#include "process.h"
#include "recovery.h"
#include "version.h"
#include "security.h"

/* The group's name argument: not NULL, not empty. */
static char *
group_name_arg(FunctionCallInfo fcinfo)
{
	char	   *name;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the group's name must not be NULL")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the group's name must not be empty")));
	/* it goes into every member's notifications, whose size is bounded */
	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the group's name must be shorter than %d bytes", NAMEDATALEN)));
	return name;
}

/*
 * Hold the cycle lock of each table (an integer List of table ids) to the
 * end of the transaction, or fail if a cycle of one runs: a running cycle
 * must not find its table moved into or out of a group under it.
 */
static void
lock_members(List *table_ids, const char *function)
{
	ListCell   *lc;

	foreach(lc, table_ids)
	{
		CHECK_FOR_INTERRUPTS();
		if (!LockWaitTryCycleLock(lfirst_int(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("a cycle of table id %d is running", lfirst_int(lc)),
					 errdetail("%s() does not change a group while a cycle of one of its tables runs.", function),
					 errhint("Wait for it to end, then try again.")));
	}
}

/* A group by name, or an error that says there is none. */
static void
require_group(const char *name, int32 *group_id, Oid *owner, List **members)
{
	if (!CatalogGetGroup(name, group_id, owner, members))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("group \"%s\" does not exist", name),
				 errhint("Make it with treble_sync.add_group(), or list the groups with SELECT name FROM treble_sync.groups.")));
}

/*
 * The group that alter_group() or remove_group() (funcname) changes, named
 * by the first argument: on a primary whose catalog is this release's, the
 * group must exist and the current role have the privileges of its owner
 * (action says what it is denied).  Returns its name; sets its id, owner
 * and members.
 */
static char *
group_to_change(FunctionCallInfo fcinfo, const char *funcname, const char *action,
				int32 *group_id, Oid *owner, List **members)
{
	char	   *name;

	VersionRequireCatalog(funcname);
	RecoveryRequirePrimary(funcname);
	name = group_name_arg(fcinfo);
	require_group(name, group_id, owner, members);
	SecurityRequireManage(*owner, "group", name, action);
	return name;
}

/*
 * The members named by the text[] argument argno, checked: registered,
 * each once, manageable by the current role, one owner and one server
 * among them, and in no group but group_id (0: a new group).  Returns
 * their table ids in order; sets *owner to theirs.
 */
static List *
member_ids(FunctionCallInfo fcinfo, int argno, int32 group_id, const char *group, Oid *owner)
{
	Datum	   *names;
	int			n;
	List	   *ids = NIL;
	TableConfig *first = NULL;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("tables must not be NULL")));
	names = ArgTextArray(PG_GETARG_DATUM(argno), "tables", &n);
	if (n < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a group needs at least one table")));
	for (int i = 0; i < n; i++)
	{
		TableConfig *cfg;
		char	   *in_group;

		CHECK_FOR_INTERRUPTS();
		cfg = CatalogGetTable(TextDatumGetCString(names[i]), false);
		SecurityRequireManage(cfg->owner, "table", cfg->name, "put into a group");
		if (list_member_int(ids, cfg->table_id))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("table \"%s\" is named twice", cfg->name)));
		in_group = CatalogTableGroup(cfg->table_id);
		if (in_group != NULL && strcmp(in_group, group) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("table \"%s\" belongs to group \"%s\" already", cfg->name, in_group),
					 errhint("A table belongs to one group at most; take it out with treble_sync.alter_group().")));
		if (first == NULL)
			first = cfg;
		else if (cfg->owner != first->owner)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tables \"%s\" and \"%s\" have different owners", first->name, cfg->name),
					 errdetail("A group's cycle runs as one role, the owner of every member.")));
		else if (strcmp(cfg->server_name, first->server_name) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tables \"%s\" and \"%s\" are on different servers", first->name, cfg->name),
					 errdetail("A group's cuts are frozen together on one connection to one warehouse.")));
		if (cfg->watermark == NULL && cfg->initial_chunk != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("table \"%s\" has a chunked first load to make", cfg->name),
					 errdetail("A chunked load commits chunk by chunk; a group commits once."),
					 errhint("Set its initial_chunk to NULL with treble_sync.alter_table(), or make the first load before it joins a group.")));
		ids = lappend_int(ids, cfg->table_id);
	}
	*owner = first->owner;
	(void) group_id;
	return ids;
}

/*
 * add_group(name, tables): make the registered tables a group, cycled
 * together from now on (sync_group, schedule_group); sync_table() and
 * resync() refuse them one by one.  Returns the groups row.
 */
PG_FUNCTION_INFO_V1(treble_sync_add_group);

Datum
treble_sync_add_group(PG_FUNCTION_ARGS)
{
	char	   *name;
	int32		group_id;
	Oid			owner;
	List	   *ids;
	List	   *members;

	VersionRequireCatalog("add_group()");
	RecoveryRequirePrimary("add_group()");
	name = group_name_arg(fcinfo);
	if (CatalogGetGroup(name, &group_id, &owner, &members))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("group \"%s\" already exists", name)));
	ids = member_ids(fcinfo, 1, 0, name, &owner);
	lock_members(ids, "add_group");
	group_id = CatalogInsertGroup(name, owner);
	CatalogSetGroupMembers(group_id, ids);
	PG_RETURN_DATUM(CatalogGroupRow(group_id));
}

/*
 * alter_group(name, tables): the group's members become tables, in that
 * order; those left out cycle one by one again.  Needs the privileges of
 * the group's owner, and those of every new member's.
 */
PG_FUNCTION_INFO_V1(treble_sync_alter_group);

Datum
treble_sync_alter_group(PG_FUNCTION_ARGS)
{
	char	   *name;
	int32		group_id;
	Oid			owner;
	Oid			new_owner;
	List	   *members;
	List	   *ids;

	name = group_to_change(fcinfo, "alter_group()", "change", &group_id, &owner, &members);
	ids = member_ids(fcinfo, 1, group_id, name, &new_owner);
	lock_members(members, "alter_group");
	lock_members(ids, "alter_group");
	if (new_owner != owner)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the tables of group \"%s\" must be owned by its owner, role \"%s\"",
						name, GetUserNameFromId(owner, true))));
	CatalogSetGroupMembers(group_id, ids);
	PG_RETURN_DATUM(CatalogGroupRow(group_id));
}

/*
 * remove_group(name): dissolve a group; its tables stay registered, each
 * cycled alone again.  Its pg_cron job, if any, stays: unschedule it
 * (unschedule('group <name>')).
 */
PG_FUNCTION_INFO_V1(treble_sync_remove_group);

Datum
treble_sync_remove_group(PG_FUNCTION_ARGS)
{
	int32		group_id;
	Oid			owner;
	List	   *members;

	(void) group_to_change(fcinfo, "remove_group()", "remove", &group_id, &owner, &members);
	lock_members(members, "remove_group");
	CatalogDeleteGroup(group_id);
	PG_RETURN_VOID();
}

/*
 * sync_group(name): one cycle of every member, at one cut, committed once,
 * in a background worker; returns the members' run rows (each names the
 * group run, treble_sync.group_runs).  STRICT.
 */
PG_FUNCTION_INFO_V1(treble_sync_sync_group);

Datum
treble_sync_sync_group(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		group_id;
	Oid			owner;
	List	   *members;
	ListCell   *lc;

	VersionRequireCatalog("sync_group()");
	RecoveryRequirePrimary("sync_group()");
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("sync_group() cannot run in a REPEATABLE READ or SERIALIZABLE transaction"),
				 errhint("Call it outside an explicit transaction, or in a READ COMMITTED one.")));
	require_group(name, &group_id, &owner, &members);
	if (members == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group \"%s\" has no tables", name),
				 errhint("Give it some with treble_sync.alter_group(), or remove it.")));
	foreach(lc, members)
	{
		TableConfig *cfg = CatalogGetTableById(lfirst_int(lc));

		SecurityRequireRun(cfg, "sync");
		(void) ProcessPrecheck(cfg, NULL);
	}

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, CatalogGroupRunRuns(LaunchGroup(group_id, linitial_int(members))))
	{
		CHECK_FOR_INTERRUPTS();
		CatalogPutRunRow(rsinfo->setResult, *(int64 *) lfirst(lc));
	}
	return (Datum) 0;
}
