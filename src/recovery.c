/*-------------------------------------------------------------------------
 *
 * recovery.c
 *	  Entry points that start or change work refuse to run on a standby.
 *
 * A hot standby accepts read-only sessions while it replays the primary's
 * WAL.  It cannot write the catalog, and a cycle's background worker
 * (BgWorkerStart_RecoveryFinished) would not start until the standby is
 * promoted: a caller waiting for it would wait for as long as recovery
 * lasts.  So every entry point that registers, changes, schedules, checks
 * or runs anything fails first, with the SQLSTATE PostgreSQL gives writes
 * during recovery (25006), and says to run it on the primary.  A server
 * leaves recovery only forwards (promotion), so a call that passed this
 * check never meets recovery again.  Reading (the copies, the run log,
 * status, progress, metrics()) needs no check: it works on a standby and
 * shows what the standby has replayed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "recovery.h"
#include "version.h"

/*
 * Error out if this server is a standby (in recovery); funcname is the
 * entry point, as the message names it, e.g. "sync_table()".
 */
void
RecoveryRequirePrimary(const char *funcname)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("treble_sync.%s cannot run on a standby server", funcname),
				 errdetail("This server is in recovery: it replays the primary's changes, "
						   "cannot write, and starts no treble_sync worker."),
				 errhint("Run it on the primary server; the copies, the run log, "
						 "treble_sync.status and treble_sync.metrics() can be read here.")));
}

/*
 * require_primary(funcname): the same check for the entry points written
 * in PL/pgSQL (schedule(), schedule_all(), unschedule()), and the check
 * that the catalog is this library's release (version.c).  It only tells
 * whether the server is in recovery, which pg_is_in_recovery() tells
 * anyone anyway, and the extension's version, which pg_extension tells
 * anyone.  STRICT: require_primary(NULL) checks nothing.
 */
PG_FUNCTION_INFO_V1(treble_sync_require_primary);

Datum
treble_sync_require_primary(PG_FUNCTION_ARGS)
{
	char	   *funcname;

	Assert(!PG_ARGISNULL(0));	/* STRICT */
	funcname = text_to_cstring(PG_GETARG_TEXT_PP(0));
	VersionRequireCatalog(funcname);
	RecoveryRequirePrimary(funcname);
	PG_RETURN_VOID();
}
