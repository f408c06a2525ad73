/*-------------------------------------------------------------------------
 *
 * process.c
 *	  The plumbing every treble_sync background process shares (see
 *	  process.h): a database backend that is never restarted, whose SIGTERM
 *	  and SIGINT cancel what it runs and its remote call, connected as the
 *	  caller that started it, and connected to a warehouse as a table's
 *	  owner once the checks every cycle needs have passed.
 *
 * A cycle's worker runs the cycles of a queue of tables, one after
 * another, and keeps the warehouse connection of a cycle that succeeded
 * for the next cycle that would open the very same one: the same owner
 * (the role the cycle runs as), the same server (and server owner), the
 * same user mapping and the same options of both.  Anything else opens a
 * connection of its own.  A connection is never kept after an error (its
 * state is not known), nor once the worker exits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

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
 * Between two cycles of a worker: a cancel (pg_cancel_backend) stopped the
 * cycle it was meant for, and not the next one.  A termination stays.
 */
void
ProcessForgetCancel(void)
{
	Assert(!IsTransactionState());
	got_sigint = false;
	if (!got_sigterm)
		QueryCancelPending = false;
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
 * The cycle stages its rows in temporary tables, as its owner.  PostgreSQL
 * checks the TEMPORARY privilege on the database only when a process makes
 * its first temporary table: a worker that ran a cycle of another owner
 * before has its temporary schema already, so the owner's privilege is
 * checked here, as it would be in a process of its own.
 */
static void
require_temp_privilege(TableConfig *cfg)
{
	Oid			temp_ns;
	Oid			temp_toast_ns;

	GetTempNamespaceState(&temp_ns, &temp_toast_ns);
	if (OidIsValid(temp_ns) &&
		object_aclcheck(DatabaseRelationId, MyDatabaseId, cfg->owner, ACL_CREATE_TEMP) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create temporary tables in database \"%s\"",
						get_database_name(MyDatabaseId)),
				 errdetail("A cycle of \"%s\" runs as its owner, role \"%s\", and stages the rows it pulls in temporary tables.",
						   cfg->name, GetUserNameFromId(cfg->owner, false))));
}

/* How many warehouse connections a worker keeps at most. */
#define MAX_KEPT_CONNECTIONS 8

/*
 * A warehouse connection kept between cycles, and what it was opened for:
 * it serves only a cycle that would open exactly the same connection.
 */
typedef struct KeptConnection
{
	Oid			owner;			/* the role the cycles run as */
	Oid			serverid;
	Oid			server_owner;	/* decides the endpoint checks (odbc.c) */
	Oid			umid;			/* the user mapping (the owner's or PUBLIC) */
	uint64		options;		/* hash of the server's and mapping's options */
	MemoryContext cxt;			/* holds conn: deleting it closes it */
	OdbcConn   *conn;
	bool		in_use;			/* a cycle has it now */
	uint64		last_used;
} KeptConnection;

static bool keep_connections = false;
static KeptConnection kept[MAX_KEPT_CONNECTIONS];
static int	nkept = 0;
static uint64 kept_clock = 0;

/*
 * A hash of a server's and a user mapping's options, names and values: a
 * kept connection opened before an ALTER SERVER or ALTER USER MAPPING
 * (another host, user or password) does not serve the cycles after it.
 */
static uint64
options_hash(ForeignServer *server, UserMapping *mapping)
{
	StringInfoData buf;
	ListCell   *lc;
	uint64		h;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%u", server->fdwid);
	foreach(lc, server->options)
	{
		DefElem    *d = lfirst(lc);

		appendStringInfoChar(&buf, '\0');	/* no option's text holds one */
		appendStringInfo(&buf, "s%s=%s", d->defname, defGetString(d));
	}
	foreach(lc, mapping->options)
	{
		DefElem    *d = lfirst(lc);

		appendStringInfoChar(&buf, '\0');
		appendStringInfo(&buf, "m%s=%s", d->defname, defGetString(d));
	}
	h = hash_bytes_extended((const unsigned char *) buf.data, buf.len, 0);
	/* the mapping's password was in there */
	memset(buf.data, 0, buf.len);
	pfree(buf.data);
	return h;
}

/* Close kept connection i and forget it. */
static void
forget_kept(int i)
{
	MemoryContext cxt = kept[i].cxt;

	Assert(i >= 0 && i < nkept);
	kept[i] = kept[--nkept];
	MemoryContextDelete(cxt);	/* closes the connection (odbc.c) */
}

/* At the worker's exit: close every kept connection. */
static void
close_kept_connections(int code, Datum arg)
{
	while (nkept > 0)
		forget_kept(nkept - 1);
}

/*
 * In a worker that keeps its connections: the one kept for this owner,
 * server and mapping as they are now, or a new one that will be kept, or
 * NULL (the process keeps none, or every place is taken by a connection
 * in use: the caller opens one of its own).
 */
static OdbcConn *
kept_connection(TableConfig *cfg, ForeignServer *server, UserMapping *mapping)
{
	uint64		options;
	int			i;
	int			lru = -1;
	MemoryContext cxt;
	MemoryContext old;

	if (!keep_connections)
		return NULL;
	options = options_hash(server, mapping);
	for (i = 0; i < nkept; i++)
	{
		KeptConnection *k = &kept[i];

		if (k->in_use || k->owner != cfg->owner || k->serverid != server->serverid ||
			k->server_owner != server->owner || k->umid != mapping->umid ||
			k->options != options)
			continue;
		k->in_use = true;
		OdbcSetTimeouts(k->conn, server, cfg->login_timeout, cfg->query_timeout);
		return k->conn;
	}

	/* none: make room, closing the least recently used idle one */
	if (nkept == MAX_KEPT_CONNECTIONS)
	{
		for (i = 0; i < nkept; i++)
			if (!kept[i].in_use && (lru < 0 || kept[i].last_used < kept[lru].last_used))
				lru = i;
		if (lru < 0)
			return NULL;
		forget_kept(lru);
	}

	cxt = AllocSetContextCreate(TopMemoryContext, "treble_sync kept connection",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		kept[nkept].conn = OdbcConnect(server, mapping, cfg->login_timeout,
									   cfg->query_timeout, true);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	kept[nkept].owner = cfg->owner;
	kept[nkept].serverid = server->serverid;
	kept[nkept].server_owner = server->owner;
	kept[nkept].umid = mapping->umid;
	kept[nkept].options = options;
	kept[nkept].cxt = cxt;
	kept[nkept].in_use = true;
	return kept[nkept++].conn;
}

/*
 * Connect to the table's warehouse as the running role, in the worker's
 * long-lived memory (a chunked load commits many times on one connection),
 * or hand out the connection kept for this owner and mapping.  Every check
 * and setting of a cycle is made each time, kept connection or not.
 * Called in a transaction; ProcessReleaseWarehouse() lets go of it.
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
	require_temp_privilege(cfg);

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

	conn = kept_connection(cfg, server, mapping);
	if (conn != NULL)
		return conn;
	old = MemoryContextSwitchTo(cxt);
	conn = OdbcConnect(server, mapping, cfg->login_timeout, cfg->query_timeout, true);
	MemoryContextSwitchTo(old);
	return conn;
}

/*
 * Let go of a connection ProcessConnectWarehouse() returned.  With ok (the
 * cycle committed, nothing of the connection's state is in doubt) a kept
 * connection waits for the next cycle of the same owner and mapping;
 * otherwise, and for any connection that is not kept, it is closed.
 */
void
ProcessReleaseWarehouse(OdbcConn *conn, bool ok)
{
	Assert(conn != NULL);
	for (int i = 0; i < nkept; i++)
	{
		if (kept[i].conn != conn)
			continue;
		Assert(kept[i].in_use);
		if (ok)
		{
			kept[i].in_use = false;
			kept[i].last_used = ++kept_clock;
		}
		else
			forget_kept(i);
		return;
	}
	OdbcDisconnect(conn);
}

/*
 * From now on, keep the warehouse connections of the cycles this process
 * runs, for the next ones (see the top of this file); they are closed when
 * the process exits.
 */
void
ProcessKeepConnections(void)
{
	if (keep_connections)
		return;
	keep_connections = true;
	on_proc_exit(close_kept_connections, (Datum) 0);
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
