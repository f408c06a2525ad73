/*-------------------------------------------------------------------------
 *
 * sync.c
 *	  sync_table(), sync_all() and resync(): the SQL entry points that run
 *	  cycles.
 *
 * They run in the caller's session, check what can be checked there (so
 * bad input is a clear error, not a failed run), start the cycle in a
 * background worker and return the run-log rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "catalog.h"
#include "launch.h"
#include "process.h"
#include "recovery.h"
#include "version.h"
#include "security.h"


/*
 * The caller reads the run row the worker committed: that needs a fresh
 * snapshot per statement, which REPEATABLE READ and SERIALIZABLE lack.
 */
static void
require_read_committed(const char *funcname)
{
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("%s cannot run in a REPEATABLE READ or SERIALIZABLE transaction", funcname),
				 errhint("Call it outside an explicit transaction, or in a READ COMMITTED one.")));
}

/*
 * Run one cycle (full: a resync) of the table registered as name, in a
 * worker, after the checks the caller can be told about directly; returns
 * its run-log row.
 */
static Datum
run_named(const char *name, const char *funcname, const char *action, bool full)
{
	TableConfig *cfg;

	VersionRequireCatalog(funcname);
	RecoveryRequirePrimary(funcname);
	require_read_committed(funcname);
	cfg = CatalogGetTable(name, false);
	SecurityRequireRun(cfg, action);
	CatalogRefuseGroupMember(cfg, funcname);
	(void) ProcessPrecheck(cfg, NULL);
	return CatalogRunRow(LaunchCycle(cfg->table_id, full));
}

/*
 * sync_table(name): run one cycle of a registered table and return its
 * run-log row.  STRICT: sync_table(NULL) runs nothing and returns NULL.
 */
PG_FUNCTION_INFO_V1(treble_sync_sync_table);

Datum
treble_sync_sync_table(PG_FUNCTION_ARGS)
{
	Assert(!PG_ARGISNULL(0));
	PG_RETURN_DATUM(run_named(text_to_cstring(PG_GETARG_TEXT_PP(0)), "sync_table()", "sync",
							  false));
}

/*
 * resync(name): pull the whole table again (up to a fresh cut) and make
 * the copy equal to it in one transaction; readers see the old rows until
 * it commits.  Returns the run-log row.  STRICT, as sync_table().
 */
PG_FUNCTION_INFO_V1(treble_sync_resync);

Datum
treble_sync_resync(PG_FUNCTION_ARGS)
{
	Assert(!PG_ARGISNULL(0));
	PG_RETURN_DATUM(run_named(text_to_cstring(PG_GETARG_TEXT_PP(0)), "resync()", "resync",
							  true));
}

/*
 * sync_all(server): one cycle of every enabled table the caller may sync
 * (it has the privileges of the table's owner), or of those of one server,
 * treble_sync.max_parallel at a time; then one cycle of every group with
 * an enabled member whose owner's privileges the caller has, group after
 * group (in one worker).  A table whose cycle fails is logged
 * as failed and the others go on; tables of other owners are left alone.
 * A NULL server is every server.
 */
PG_FUNCTION_INFO_V1(treble_sync_sync_all);

Datum
treble_sync_sync_all(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;
	List	   *ids;
	List	   *runs;
	List	   *groups;
	List	   *firsts;
	char	   *server = NULL;

	VersionRequireCatalog("sync_all()");
	RecoveryRequirePrimary("sync_all()");
	require_read_committed("sync_all()");
	if (!PG_ARGISNULL(0))
	{
		server = pstrdup(NameStr(*PG_GETARG_NAME(0)));
		(void) GetForeignServerByName(server, false);	/* a typo is an error */
	}
	InitMaterializedSRF(fcinfo, 0);
	ids = CatalogEnabledTableIds(server);
	runs = LaunchCycles(ids, treble_sync_max_parallel);
	/* then each group whole, one after another, in one worker */
	groups = NIL;
	firsts = NIL;
	foreach(lc, CatalogEnabledGroupIds(server))
	{
		int32		group_id = lfirst_int(lc);
		char	   *name = CatalogGroupName(group_id);
		int32		gid;
		Oid			owner;
		List	   *members;

		CHECK_FOR_INTERRUPTS();
		if (name == NULL || !CatalogGetGroup(name, &gid, &owner, &members) || members == NIL)
			continue;			/* removed, or emptied, meanwhile */
		if (CatalogTableChangedHere(linitial_int(members)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the registration of table \"%s\" is not committed yet",
							CatalogGetTableById(linitial_int(members))->name),
					 errdetail("add_table() or alter_table() changed it in this transaction, and the cycle runs in another process, which cannot see that change."),
					 errhint("Commit the transaction, then start the cycle.")));
		groups = lappend_int(groups, group_id);
		firsts = lappend_int(firsts, linitial_int(members));
	}
	foreach(lc, LaunchGroups(groups, firsts))
		runs = list_concat(runs, CatalogGroupRunRuns(*(int64 *) lfirst(lc)));
	foreach(lc, runs)
	{
		CHECK_FOR_INTERRUPTS();
		CatalogPutRunRow(rsinfo->setResult, *(int64 *) lfirst(lc));
	}
	return (Datum) 0;
}
