/*-------------------------------------------------------------------------
 *
 * process.c
 *	  The plumbing every treble_sync background process shares (see
 *	  process.h): a database backend that is never restarted, whose SIGTERM
 *	  and SIGINT cancel what it runs and its remote call, connected as the
 *	  caller that started it, and connected to a warehouse as a table's
 *	  owner once the checks every cycle needs have passed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"

#include "localsql.h"
#include "odbc.h"
#include "process.h"
#include "security.h"
#include "version.h"

/* maintenance_work_mem of a worker (the default is 64MB) */
#define WORKER_MAINTENANCE_WORK_MEM "16MB"

static volatile sig_atomic_t got_sigterm = false;
static volatile sig_atomic_t got_sigint = false;

/* Let the terminate signal cancel the cycle, so it is logged as failed. */
static void
worker_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	if (!proc_exit_inprogress)
	{
		InterruptPending = true;
		QueryCancelPending = true;
	}
	SetLatch(MyLatch);
	OdbcCancelRemoteCall();
	errno = save_errno;
}

/* pg_cancel_backend: cancel as any backend does, and stop the remote call. */
static void
worker_sigint(SIGNAL_ARGS)
{
	got_sigint = true;
	StatementCancelHandler(postgres_signal_arg);
	OdbcCancelRemoteCall();
}

/*
 * Whether this process was cancelled or terminated (pg_cancel_backend,
 * pg_terminate_backend, its caller stopping it), as opposed to a cancel
 * that came of a timeout: a reader tells its cycle which it was.
 */
bool
ProcessWasSignalled(void)
{
	return got_sigterm || got_sigint;
}

/*
 * Whether this process was terminated (pg_terminate_backend, its caller
 * stopping it), which a run's error says apart from a cancel.
 */
bool
ProcessWasTerminated(void)
{
	return got_sigterm;
}

/*
 * What every treble_sync worker is: a database backend that is never
 * restarted, shown as backend_type "treble_sync worker", reporting to the
 * process that starts it.
 */
void
ProcessDescribe(BackgroundWorker *bgw, const char *function, const char *name)
{
	memset(bgw, 0, sizeof(*bgw));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw->bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw->bgw_library_name, BGW_MAXLEN, "treble_sync");
	snprintf(bgw->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(bgw->bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(bgw->bgw_type, BGW_MAXLEN, "treble_sync worker");
	bgw->bgw_notify_pid = MyProcPid;
}

/*
 * Connect to the table's warehouse as the running role, in the worker's
 * long-lived memory (a chunked load commits many times on one connection).
 * Called in a transaction.
 */
OdbcConn *
ProcessConnectWarehouse(TableConfig *cfg, MemoryContext cxt)
{
	ForeignServer *server;
	UserMapping *mapping;
	MemoryContext old;
	OdbcConn   *conn;

	Assert(IsTransactionState());
	mapping = ProcessPrecheck(cfg, &server);

	/* zone-less warehouse timestamps are read in the warehouse's zone */
	SetConfigOption("TimeZone", OdbcServerTimezone(server), PGC_USERSET, PGC_S_SESSION);

	/*
	 * Keep the worker's memory flat whatever the pull: indexing the staging
	 * rows by key sorts them, and beyond this the sort spills to disk.
	 */
	SetConfigOption("maintenance_work_mem", WORKER_MAINTENANCE_WORK_MEM, PGC_USERSET,
					PGC_S_SESSION);

	/*
	 * A cycle must cost what it pulled, not the size of the copy: plan the
	 * joins of the staged rows with the copy as probes of the copy's key
	 * index, never as a hash or merge join that reads the whole copy (which
	 * the planner prefers for a large pull, and whenever the copy's
	 * statistics lag behind).  The staged rows have a key index too, so the
	 * window refresh probes them the same way.  JIT compilation only adds
	 * memory and start-up time to these statements.
	 */
	SetConfigOption("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("jit", "off", PGC_USERSET, PGC_S_SESSION);

	old = MemoryContextSwitchTo(cxt);
	conn = OdbcConnect(server, mapping, cfg->login_timeout, cfg->query_timeout, true);
	MemoryContextSwitchTo(old);
	return conn;
}

/*
 * The start of every treble_sync worker: SIGTERM and SIGINT cancel the
 * cycle and its remote call, which needs the cancel thread.
 */
void
ProcessStartSignals(void)
{
	pqsignal(SIGTERM, worker_sigterm);
	pqsignal(SIGINT, worker_sigint);
	OdbcEnableCancel();
	BackgroundWorkerUnblockSignals();
}

/*
 * treble_sync.lock_timeout of the caller, as this worker's lock_timeout
 * (and its own treble_sync.lock_timeout, which it hands to its helpers):
 * a cycle blocked by another session's lock gives up instead of waiting
 * for ever.
 */
void
ProcessSetLockTimeout(int ms)
{
	SetConfigOption("treble_sync.lock_timeout", psprintf("%d", ms), PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("lock_timeout", psprintf("%d", ms), PGC_USERSET, PGC_S_SESSION);
}

/*
 * Connect to the caller's database as its session user and, until the
 * cycle starts, act as the caller's current role (it may differ after SET
 * ROLE); the cycle itself runs as the table's owner.  The role settings
 * the connection applied that could change a cycle are pinned at once.
 */
void
ProcessConnect(Oid database_id, Oid session_user_id, Oid user_id)
{
	BackgroundWorkerInitializeConnectionByOid(database_id, session_user_id, 0);
	SecurityPinWorkerSettings();
	SetUserIdAndSecContext(user_id, 0);
}

/*
 * The start of a helper process (a chunk loader, a reader): signals, the
 * caller's database and roles, and the caller's lock timeout.
 */
void
ProcessInitHelper(Oid database_id, Oid session_user_id, Oid user_id, int lock_timeout)
{
	ProcessStartSignals();
	ProcessConnect(database_id, session_user_id, user_id);
	ProcessSetLockTimeout(lock_timeout);

	/* the catalog may have changed release since the cycle's worker started */
	StartTransactionCommand();
	VersionRequireCatalog("sync_table()");
	CommitTransactionCommand();
}

/*
 * Everything a cycle needs that the caller can check before starting it:
 * the local table exists and is still the registration owner's, the owner
 * (whom the cycle runs as) may read and write it and use the server, and
 * has a user mapping (or there is a PUBLIC one).  Run by sync_table() in
 * the caller, for a clear error, and again by the worker, which connects
 * with the user mapping returned: the owner's credentials, whoever
 * started the cycle.
 */
UserMapping *
ProcessPrecheck(TableConfig *cfg, ForeignServer **server_out)
{
	ForeignServer *server;
	AclResult	aclresult;
	char	   *relname;
	char	   *owner_name = GetUserNameFromId(cfg->owner, false);

	SecurityCheckCopyOwner(cfg);
	relname = get_rel_name(cfg->local_relid);

	if (pg_class_aclmask(cfg->local_relid, cfg->owner,
						 ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE, ACLMASK_ALL) !=
		(ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to sync into table %s", relname),
				 errdetail("A cycle runs as the table's owner, role \"%s\", which needs SELECT, INSERT, UPDATE and DELETE on it.",
						   owner_name),
				 errhint("GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %s;",
						 LocalTableName(cfg->local_relid),
						 quote_identifier(owner_name))));

	server = GetForeignServerByName(cfg->server_name, false);
	aclresult = object_aclcheck(ForeignServerRelationId, server->serverid, cfg->owner, ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for foreign server %s", server->servername),
				 errdetail("A cycle of \"%s\" runs as its owner, role \"%s\", which needs USAGE on the server.",
						   cfg->name, owner_name)));
	if (server_out)
		*server_out = server;
	return OdbcLookupUserMapping(cfg->owner, server);
}
