/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The cycle runner: the cycles of a queue in a dynamic background
 *	  worker, their transactions and retries, and the chunk helpers of a
 *	  first load.
 *
 * The calling session (launch.c) registers the workers, hands them the
 * database, its roles and the queue of tables through a DSM segment, and
 * waits for them to exit.  The worker connects as the caller's session user
 * (process.c); the cycle itself runs as the registration's owner, inside
 * a security-restricted operation with search_path pinned (security.c),
 * whoever called:
 *
 *	  tx 1: take the table's cycle lock (busy: log 'skipped' and stop);
 *			mark runs left 'running' by a dead worker as failed; log a
 *			'running' row and commit it, so a crash leaves a trace;
 *	  tx 2: connect to the warehouse and run the cycle (cycle.c); record
 *			the outcome and the new watermark, unless the registration
 *			changed since tx 1 (CatalogLockRegistration); commit;
 *	  on error: abort tx 2 (nothing of it remains) and record the failure.
 *
 * Every transaction a worker starts first sets the statement start time,
 * as a backend does for each statement: now() in catalog SQL is then the
 * time of that transaction, not of the worker's start, across retries and
 * the many transactions of a chunked load.  Errors raised during a cycle
 * name the table and the run in their CONTEXT.
 *
 * A worker takes the cycles of its caller's queue one after another
 * (sync_all() hands its tables to up to treble_sync.max_parallel workers;
 * sync_table() is a queue of one), each in transactions of its own, with
 * its own run row and retries: one cycle's failure does not touch the
 * next.  Between two cycles the worker drops its temporary objects, and it
 * keeps the warehouse connection of a cycle that committed for the next
 * cycle of the same owner, server and user mapping, with the same options
 * (process.c); a connection is closed after any error, and at exit.
 * A cycle that would reach a ClickHouse server with other TLS settings
 * than the worker's driver set up (once per process) is handed back to
 * the queue for a fresh worker (take_item).
 * SIGTERM (pg_terminate_backend, or the caller being cancelled) becomes a
 * query cancel, so the cycle rolls back through the same path as any error
 * and leaves a 'failed' row that says it was stopped; the worker then
 * exits, leaving the rest of the queue.  A cancel (pg_cancel_backend)
 * stops the cycle it interrupts, and the worker goes on with the next.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/shm_toc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/ps_status.h"
#include "utils/timestamp.h"
#include "utils/snapmgr.h"

#include "attempt.h"
#include "catalog.h"
#include "checks.h"
#include "cursor.h"
#include "cycle.h"
#include "drift.h"
#include "history.h"
#include "load.h"
#include "lockwait.h"
#include "odbc.h"
#include "option.h"
#include "process.h"
#include "progress.h"
#include "redact.h"
#include "security.h"
#include "stage.h"
#include "version.h"
#include "worker.h"

/*
 * The cycle a worker runs now, as it took it from its queue: a table's or
 * a group's, with the caller's role and what kind of cycle it is.
 */
typedef struct CycleJob
{
	int32		table_id;		/* of a group's cycle: its first member */
	int32		group_id;		/* 0: a table's cycle */
	Oid			user_id;		/* the caller's role, logged as run_by */
	bool		full;			/* resync() */
	Timestamp	repair_day;		/* repair(); 0 if not */
	int64		run_id;			/* once logged (of a group: its group run) */
	WorkerSlot *slot;			/* progress and lock waits, seen by the caller */
	WorkerItem *item;			/* where the caller finds the run id */
} CycleJob;

/* What a chunk helper gets, in bgw_extra. */
typedef struct HelperArgs
{
	Oid			database_id;
	Oid			session_user_id;
	Oid			user_id;
	int32		table_id;
	int64		run_id;
	int			lock_timeout;
} HelperArgs;

/*
 * Start a transaction with a snapshot.  A worker has no statements to set
 * the statement start time, so every transaction sets it: now() in catalog
 * SQL is then the time of that transaction, not of the worker's start.
 */
static void
start_transaction(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
}

/* Commit a transaction begun by start_transaction(). */
static void
commit_transaction(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/*
 * Commit a chunked load's work so far and go on in a new transaction,
 * whose now() is the time it starts (a background worker has no
 * statements to set it): load.c's LoadCommitFunc.  The owner's
 * security-restricted context of the cycle may not outlive a transaction
 * (SecurityEndCycle): it is left before the commit and taken again in the
 * new transaction through the owner rule's choke point
 * (SecurityResumeCycle), which checks again, under a lock, that the copy
 * and its history table still belong to the owner: the commit released
 * the lock, and they may have changed hands in between.
 */
static void
commit_and_continue(TableConfig *cfg)
{
	Assert(IsTransactionState());
	SecurityEndCycle();
	commit_transaction();
	start_transaction();
	SecurityResumeCycle(cfg);
}

/* What the cycle's error context names. */
typedef struct CycleErrorContext
{
	const char *table_name;
	int64		run_id;
} CycleErrorContext;

/* The line the cycle's error context adds. */
static char *
cycle_context_line(const char *table_name, int64 run_id)
{
	return psprintf("treble_sync cycle of table \"%s\", run %lld",
					table_name, (long long) run_id);
}

/*
 * Error context callback: the table and run of the cycle being run, for
 * every message a cycle raises (in the server log, and in the errors of
 * the statements it runs).
 */
static void
cycle_error_callback(void *arg)
{
	CycleErrorContext *c = arg;

	if (c->table_name != NULL)
		errcontext("%s", cycle_context_line(c->table_name, c->run_id));
}

/*
 * The text kept in the run log for an error: message, detail, hint,
 * context.  The context line naming the cycle is left out: the run's row
 * holds its table and run id already.  It is the outermost context, so
 * the last line, and exactly the text cycle_context_line() makes.
 */
static char *
describe_error(ErrorData *edata, const char *table_name, int64 run_id)
{
	StringInfoData buf;
	char	   *context = edata->context;

	if (context != NULL)
	{
		char	   *line = cycle_context_line(table_name, run_id);
		size_t		clen = strlen(context);
		size_t		llen = strlen(line);

		if (clen == llen && strcmp(context, line) == 0)
			context = NULL;
		else if (clen > llen && strcmp(context + clen - llen, line) == 0 &&
				 context[clen - llen - 1] == '\n')
			context = pnstrdup(context, clen - llen - 1);
	}

	initStringInfo(&buf);
	if (ProcessWasTerminated())
		appendStringInfoString(&buf, "cancelled: the worker was terminated; ");
	else if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		appendStringInfoString(&buf, "cancelled: ");
	appendStringInfoString(&buf, edata->message ? edata->message : "unknown error");
	if (edata->detail)
		appendStringInfo(&buf, "\nDETAIL: %s", edata->detail);
	if (edata->hint)
		appendStringInfo(&buf, "\nHINT: %s", edata->hint);
	if (context)
		appendStringInfo(&buf, "\nCONTEXT: %s", context);
	return buf.data;
}

/*
 * Transaction 1: take the cycle lock and log the run.  Returns false when
 * another cycle of the table holds the lock (the run is logged 'skipped').
 */
static bool
begin_run(CycleJob *job, TableConfig **cfg_out, LOCKTAG *tag, MemoryContext cxt)
{
	TableConfig *cfg;
	bool		locked;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	MemoryContextSwitchTo(cxt);
	VersionRequireCatalog("sync_table()");

	/* lock first, then read the configuration: its watermark is current */
	LockWaitCycleTag(tag, job->table_id);
	locked = LockAcquire(tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;

	PushActiveSnapshot(GetTransactionSnapshot());
	cfg = CatalogGetTableById(job->table_id);
	*cfg_out = cfg;
	set_ps_display(cfg->name);

	if (locked)
	{
		CatalogFailStaleRuns(cfg);
		job->run_id = CatalogInsertRun(cfg, "running", job->user_id);
	}
	else
		job->run_id = CatalogInsertRun(cfg, "skipped", job->user_id);
	job->item->run_id = job->run_id;

	PopActiveSnapshot();
	CommitTransactionCommand();

	/*
	 * Shown in pg_stat_activity only now that the run row exists: whoever
	 * finds the worker there and terminates it gets a run logged as failed.
	 */
	pgstat_report_activity(STATE_RUNNING, psprintf("treble_sync cycle of %s", cfg->name));
	return locked;
}

/*
 * Begin the transaction of a cycle, or of a chunk helper's loads: the
 * registration read afresh into cxt (an attempt may change it, and may
 * span transactions), the owner's identity, progress reporting (copied to
 * progress, if given), the connection and the drift check, whose columns
 * the warehouse dropped are then pulled as NULL.  The caller has pushed
 * the error context, whose table name is set here.
 */
static OdbcConn *
begin_cycle(int32 table_id, int64 run_id, MemoryContext cxt, ProgressState *progress,
			CycleErrorContext *context, TableConfig **cfg_out, CycleResult *result)
{
	TableConfig *cfg;
	MemoryContext old;
	OdbcConn   *conn;

	start_transaction();
	old = MemoryContextSwitchTo(cxt);
	cfg = CatalogGetTableById(table_id);
	MemoryContextSwitchTo(old);
	context->table_name = cfg->name;
	*cfg_out = cfg;
	SecurityBeginCycle(cfg);
	ProgressStart(cfg->table_id, run_id, cfg->local_relid, progress);
	conn = ProcessConnectWarehouse(cfg, cxt);
	DriftCheck(cfg, conn, result);
	return conn;
}

/*
 * Commit what begin_cycle() began, and let go of the connection, which a
 * worker keeps for its next cycle of the same owner and mapping.
 */
static void
end_cycle(OdbcConn *conn, ErrorContextCallback *errcallback)
{
	Assert(IsTransactionState() && error_context_stack == errcallback);
	SecurityEndCycle();
	commit_transaction();
	ProgressEnd();
	ProcessReleaseWarehouse(conn, true);
	error_context_stack = errcallback->previous;
}

/*
 * Push the error context naming the table (once known) and the run;
 * PG_CATCH takes it off the stack again.
 */
static void
push_cycle_context(ErrorContextCallback *errcallback, CycleErrorContext *context,
				   const char *table_name, int64 run_id)
{
	context->table_name = table_name;
	context->run_id = run_id;
	errcallback->callback = cycle_error_callback;
	errcallback->arg = context;
	errcallback->previous = error_context_stack;
	error_context_stack = errcallback;
}

/*
 * In a PG_CATCH of a worker, with interrupts held: keep the error (in cxt),
 * roll the transaction back, drop a pending cancel (it has done its work)
 * and stop reporting progress.
 */
static ErrorData *
abort_after_error(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	QueryCancelPending = false;
	ProgressEnd();
	return edata;
}

/*
 * In the PG_CATCH of an attempt at a table's or a group's cycle: keep its
 * error (in cxt) and roll it back (abort_after_error), and let go of its
 * warehouse connection (NULL: none yet), which is in doubt after an error
 * and never kept.
 */
static ErrorData *
abort_attempt(MemoryContext cxt, OdbcConn *conn)
{
	ErrorData  *edata;

	HOLD_INTERRUPTS();
	edata = abort_after_error(cxt);
	if (conn)
		ProcessReleaseWarehouse(conn, false);
	RESUME_INTERRUPTS();
	return edata;
}

/* First wait before retrying a cycle; it doubles with every attempt. */
#define RETRY_FIRST_WAIT_MS 500

/*
 * Start n helper workers that load chunks of a table's first load along
 * with the calling worker; returns their handles.
 */
static List *
start_chunk_helpers(TableConfig *cfg, int64 run_id, int n)
{
	List	   *handles = NIL;
	HelperArgs	args;

	args.database_id = MyDatabaseId;
	args.session_user_id = GetSessionUserId();
	args.user_id = GetUserId();
	args.table_id = cfg->table_id;
	args.run_id = run_id;
	args.lock_timeout = treble_sync_lock_timeout;

	for (int i = 0; i < n; i++)
	{
		BackgroundWorker bgw;
		BackgroundWorkerHandle *handle;

		ProcessDescribe(&bgw, "treble_sync_chunk_worker_main",
						psprintf("treble_sync chunk loader of table id %d", cfg->table_id));
		memcpy(bgw.bgw_extra, &args, sizeof(args));

		/* fewer helpers than asked is fine: the chunks still all get loaded */
		if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
		{
			ereport(LOG,
					(errmsg("treble_sync could start only %d of %d chunk helpers for \"%s\"",
							i, n, cfg->name),
					 errhint("Raise max_worker_processes.")));
			break;
		}
		handles = lappend(handles, handle);
	}
	return handles;
}

/* Wait for the chunk helpers to exit. */
static void
wait_chunk_helpers(List *handles)
{
	ListCell   *lc;

	foreach(lc, handles)
	{
		CHECK_FOR_INTERRUPTS();
		if (WaitForBackgroundWorkerShutdown(lfirst(lc)) == BGWH_POSTMASTER_DIED)
			ereport(ERROR,
					(errcode(ERRCODE_ADMIN_SHUTDOWN),
					 errmsg("postmaster exited during a treble_sync load")));
	}
}

/* Stop the chunk helpers (the load failed or was cancelled). */
static void
stop_chunk_helpers(List *handles)
{
	ListCell   *lc;

	foreach(lc, handles)
		TerminateBackgroundWorker(lfirst(lc));
}

/*
 * The first sync of a table registered with initial_chunk (or its
 * resumption): plan the chunks, load them along with parallel - 1 helper
 * workers, then pull the rest (load.c).  Returns in a transaction holding
 * the last step, which the caller commits with the run's outcome.
 */
static void
run_load(TableConfig *cfg, OdbcConn *conn, int64 run_id, CycleResult *result)
{
	Timestamp	cut;
	int			todo;
	List	   *volatile helpers = NIL;

	result->status = "empty";
	if (!LoadBegin(cfg, conn, commit_and_continue, &cut, &todo))
		return;					/* the warehouse table has no rows yet */

	if (cfg->parallel > 1 && todo > 1)
	{
		/* the handles outlive the transactions of the chunks */
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		helpers = start_chunk_helpers(cfg, run_id, Min(cfg->parallel - 1, todo - 1));
		MemoryContextSwitchTo(old);
	}

	/*
	 * If this worker fails (or is cancelled, or terminated: that is a cancel
	 * here too), its helpers stop as well.  PG_TRY rather than
	 * PG_ENSURE_ERROR_CLEANUP: the first temporary table of the process
	 * registers an exit callback of its own inside the block.
	 */
	PG_TRY();
	{
		LoadChunks(cfg, conn, run_id, cut, commit_and_continue);
		if (helpers != NIL)
		{
			ProgressPhase(PROGRESS_PHASE_WAITING);
			wait_chunk_helpers(helpers);
			/* the chunks a helper gave back (an error that may pass) */
			LoadChunks(cfg, conn, run_id, cut, commit_and_continue);
		}
	}
	PG_CATCH();
	{
		stop_chunk_helpers(helpers);
		PG_RE_THROW();
	}
	PG_END_TRY();

	LoadFinish(cfg, conn, commit_and_continue, cut, result);
}

/*
 * One attempt at transaction 2: the cycle itself, committed with its
 * run-log row and watermark.  A chunked first load commits each chunk on
 * the way.  On error, returns the error with everything rolled back.
 */
static ErrorData *
attempt_cycle(CycleJob *job, TableConfig *run_cfg, MemoryContext cxt, int attempt)
{
	OdbcConn   *volatile conn = NULL;
	ErrorData  *volatile edata = NULL;
	MemoryContext attempt_cxt;
	CycleErrorContext context_arg;
	ErrorContextCallback errcallback;

	/* transaction 1 logged the run, and committed */
	Assert(job->run_id > 0 && !IsTransactionState());

	/* what the last attempt learnt is forgotten, all at once */
	AttemptBegin(cxt);
	AttemptNoteRun(job->run_id);

	/*
	 * Each attempt reads the registration afresh into memory of its own: the
	 * attempt may change it (drift, a repair) and may span transactions (a
	 * chunked load), and a failed attempt must leave nothing of it behind.
	 */
	attempt_cxt = AllocSetContextCreate(cxt, "treble_sync attempt", ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		CycleResult result;
		TableConfig *cfg;

		push_cycle_context(&errcallback, &context_arg, run_cfg->name, job->run_id);
		memset(&result, 0, sizeof(result));
		result.run_id = job->run_id;
		conn = begin_cycle(run_cfg->table_id, job->run_id, attempt_cxt, &job->slot->progress,
						   &context_arg, &cfg, &result);
		if (job->repair_day != 0)
			CycleRepairDay(cfg, conn, job->repair_day, &result);
		else if (job->full)
		{
			CycleRunFull(cfg, conn, &result);
			CatalogEndLoad(cfg->table_id);	/* a first load in progress is moot */
		}
		else if (cfg->watermark == NULL && (cfg->initial_chunk != NULL || cfg->load_cut != NULL))
			run_load(cfg, conn, job->run_id, &result);
		else
			CycleRun(cfg, conn, &result);
		ChecksRun(cfg, &result);	/* a failing 'error' check fails the cycle */
		CycleAnalyzeIfChanged(cfg, &result);
		HistoryAfterCycle(cfg);		/* retention */
		/* nothing computed under a registration changed since: see there */
		CatalogLockRegistration(run_cfg);
		CatalogFinishRun(job->run_id, &result);
		CatalogSetRunDetails(job->run_id, attempt, CurrentAttempt->cut, result.drift,
							 result.warnings);
		CatalogAfterRun(job->run_id);
		end_cycle(conn, &errcallback);
	}
	PG_CATCH();
	{
		edata = abort_attempt(cxt, conn);
	}
	PG_END_TRY();
	MemoryContextDelete(attempt_cxt);
	return edata;
}

/*
 * Events and pruning after a failed run, in a transaction of their own, so
 * that nothing there can lose the record of the failure.
 */
static void
after_failed_run(int64 run_id, MemoryContext cxt)
{
	PG_TRY();
	{
		start_transaction();
		CatalogAfterRun(run_id);
		commit_transaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(LOG,
				(errmsg("treble_sync could not record the events of run %lld: %s",
						(long long) run_id, edata->message)));
	}
	PG_END_TRY();
}

/*
 * After a cycle failed on a bad row (on_bad_row 'fail', noted in the
 * attempt by stage.c): keep the row in the quarantine with the failed run,
 * in a transaction of its own, and say in the error's detail which
 * quarantine row it is.  The error itself names the row only by its
 * position in the pull: it goes to the run log and the server log, which
 * roles read that may not read the copy.  Failing to keep the row is
 * logged (by SQLSTATE alone) and loses nothing else.
 */
static void
keep_bad_row(const char *table_name, int64 run_id, ErrorData *edata, MemoryContext cxt)
{
	AttemptBadRow *row = CurrentAttempt ? CurrentAttempt->bad_row : NULL;
	volatile int64 id = 0;

	if (row == NULL || row->key == NULL)
		return;
	PG_TRY();
	{
		start_transaction();
		id = CatalogQuarantineFailedRow(table_name, run_id, row->key, row->column, row->raw,
										row->reason, row->cursor);
		commit_transaction();
	}
	PG_CATCH();
	{
		ErrorData  *e;

		MemoryContextSwitchTo(cxt);
		e = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(LOG,
				(errmsg("treble_sync could not keep the bad row of run %lld in the quarantine (SQLSTATE %s)",
						(long long) run_id, unpack_sql_state(e->sqlerrcode))));
		FreeErrorData(e);
		id = 0;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	if (id > 0)
		edata->detail = edata->detail ?
			psprintf("%s The row is kept in treble_sync.quarantine, quarantine_id " INT64_FORMAT ".",
					 edata->detail, (int64) id) :
			psprintf("The row is kept in treble_sync.quarantine, quarantine_id " INT64_FORMAT ".",
					 (int64) id);
}

/*
 * How many times a table's cycle may be retried after a transient error:
 * its own setting, else its server's option, else 3.
 */
static int
max_retries_for(TableConfig *cfg)
{
	ForeignServer *server;
	int			n = DEFAULT_MAX_RETRIES;

	if (cfg->max_retries >= 0)
		return cfg->max_retries;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	server = GetForeignServerByName(cfg->server_name, true);
	if (server)
		n = FdwServerIntOption(server, "max_retries", DEFAULT_MAX_RETRIES);
	CommitTransactionCommand();
	return n;
}

/*
 * Sleep on the latch for ms milliseconds.  Other latch sets do not cut the
 * wait short; a cancel or termination does, and the next attempt then
 * reports it inside its transaction (raising it here, between
 * transactions, would lose the run's record).
 */
static void
wait_before_retry(long ms)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);

	for (;;)
	{
		long		left;

		ResetLatch(MyLatch);
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);
		if (left <= 0 || ProcessWasSignalled())
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
	}
}

/*
 * A cycle that failed on a lock says whose: the caller's own transaction
 * (the caller stopped it, and told its session why), or the blocking
 * sessions the caller saw, once treble_sync.lock_timeout ran out.  The
 * blockers are named as pg_stat_activity names them to every role
 * (lockwait.c).
 */
static void
explain_lock_failure(CycleJob *job, ErrorData *edata)
{
	pg_memory_barrier();
	if (job->slot->blocked_by_caller)
	{
		edata->message = "the session that started this cycle holds a lock the cycle needs (an open transaction that changed or locked the copy); nothing of it was applied";
		edata->detail = NULL;
		edata->hint = "Start the cycle in a transaction of its own.";
	}
	else if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
	{
		edata->message = psprintf("gave up waiting for a lock after treble_sync.lock_timeout (%d ms); nothing of the cycle was applied",
								  treble_sync_lock_timeout);
		edata->detail = job->slot->blockers[0] != '\0' ?
			psprintf("The cycle was waiting for %s.", pnstrdup(job->slot->blockers, sizeof(job->slot->blockers))) :
			NULL;
		edata->hint = "See what the blocking session does in pg_stat_activity and end its transaction, or raise treble_sync.lock_timeout.";
	}
}

/*
 * Entry point of a chunk helper: load chunks of the table's first load
 * until none is left.  A chunk that fails rolls back alone and records
 * why; the worker that started the helper reports it.
 */
void
treble_sync_chunk_worker_main(Datum main_arg)
{
	HelperArgs	args;
	MemoryContext cxt;
	TableConfig *volatile cfg = NULL;
	CycleErrorContext context_arg;
	ErrorContextCallback errcallback;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	ProcessInitHelper(args.database_id, args.session_user_id, args.user_id, args.lock_timeout);
	cxt = AllocSetContextCreate(TopMemoryContext, "treble_sync chunk loader",
								ALLOCSET_DEFAULT_SIZES);
	AttemptBegin(cxt);			/* notes the chunk being loaded */
	AttemptNoteRun(args.run_id);

	PG_TRY();
	{
		OdbcConn   *conn;
		TableConfig *helper_cfg;
		CycleResult ignored;

		push_cycle_context(&errcallback, &context_arg, NULL, args.run_id);
		memset(&ignored, 0, sizeof(ignored));
		conn = begin_cycle(args.table_id, args.run_id, cxt, NULL, &context_arg,
						   &helper_cfg, &ignored);
		cfg = helper_cfg;
		set_ps_display(cfg->name);
		pgstat_report_activity(STATE_RUNNING, psprintf("treble_sync chunk loader of %s", cfg->name));
		if (cfg->load_cut != NULL)
			LoadChunks(cfg, conn, args.run_id, CursorParseTimestamp(cfg->load_cut),
					   commit_and_continue);
		end_cycle(conn, &errcallback);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		int			chunk;

		HOLD_INTERRUPTS();
		edata = abort_after_error(cxt);
		RedactError(edata);

		chunk = CurrentAttempt->chunk.chunk;
		if (cfg != NULL)
			keep_bad_row(cfg->name, args.run_id, edata, cxt);
		if (chunk > 0 && cfg != NULL)
		{
			start_transaction();
			CatalogChunkFailed(cfg->table_id, chunk,
							   describe_error(edata, cfg->name, args.run_id),
							   AttemptErrorIsTransient(edata->sqlerrcode));
			commit_transaction();
		}
		ereport(LOG,
				(errmsg("treble_sync chunk loader of table id %d failed: %s",
						args.table_id, edata->message ? edata->message : "unknown error")));
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
	proc_exit(0);
}

/* ------------------------------------------------------------------------
 * A group's cycle (sync_group): every member at one cut, in one commit
 * ------------------------------------------------------------------------
 */

/* A group's cycle in the worker: its members, their runs and locks. */
typedef struct GroupCycle
{
	char	   *name;
	int			n;				/* members */
	TableConfig **cfgs;			/* as read when the run was logged */
	int64	   *run_ids;
	LOCKTAG    *tags;
	int64		group_run_id;
} GroupCycle;

/*
 * Transaction 1 of a group's cycle: take every member's cycle lock (in
 * table_id order, as no other caller takes two), and log the group run
 * and a run per member.  Returns false when another cycle holds one of the
 * locks: every run is then logged 'skipped'.
 */
static bool
begin_group_run(CycleJob *job, GroupCycle *g, MemoryContext cxt)
{
	int32		group_id;
	Oid			owner;
	List	   *members;
	bool		locked = true;
	int			i = 0;
	ListCell   *lc;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	MemoryContextSwitchTo(cxt);
	VersionRequireCatalog("sync_group()");
	PushActiveSnapshot(GetTransactionSnapshot());
	g->name = CatalogGroupName(job->group_id);
	if (g->name == NULL || !CatalogGetGroup(g->name, &group_id, &owner, &members))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("treble_sync group %d no longer exists", job->group_id)));
	set_ps_display(g->name);
	g->n = list_length(members);
	g->cfgs = palloc0(sizeof(TableConfig *) * Max(g->n, 1));
	g->run_ids = palloc0(sizeof(int64) * Max(g->n, 1));
	g->tags = palloc0(sizeof(LOCKTAG) * Max(g->n, 1));
	foreach(lc, members)
	{
		CHECK_FOR_INTERRUPTS();
		LockWaitCycleTag(&g->tags[i], lfirst_int(lc));
		if (locked)
			locked = LockAcquire(&g->tags[i], ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;
		g->cfgs[i++] = CatalogGetTableById(lfirst_int(lc));
	}
	g->group_run_id = CatalogInsertGroupRun(g->name, locked ? "running" : "skipped", owner,
											job->user_id);
	job->run_id = g->group_run_id;
	job->item->run_id = job->run_id;
	for (i = 0; i < g->n; i++)
	{
		if (locked)
			CatalogFailStaleRuns(g->cfgs[i]);
		g->run_ids[i] = CatalogInsertRun(g->cfgs[i], locked ? "running" : "skipped", job->user_id);
		CatalogSetRunGroupRun(g->run_ids[i], g->group_run_id);
	}
	if (!locked)
		LockReleaseAll(USER_LOCKMETHOD, true);
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, psprintf("treble_sync cycle of group %s", g->name));
	return locked;
}

/*
 * A member read afresh for an attempt must still be what a group's cycle
 * needs: the group's members share one owner (the cycle runs as it,
 * once) and one server (one connection, one snapshot).
 */
static void
check_group_member(GroupCycle *g, TableConfig *cfg, TableConfig *first)
{
	if (cfg->owner != first->owner)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("table \"%s\" of group \"%s\" is not owned by the owner of table \"%s\"",
						cfg->name, g->name, first->name),
				 errhint("A group's tables share one owner; change the group with treble_sync.alter_group().")));
	if (strcmp(cfg->server_name, first->server_name) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("table \"%s\" of group \"%s\" is not on the server of table \"%s\"",
						cfg->name, g->name, first->name)));
	if (cfg->watermark == NULL && (cfg->initial_chunk != NULL || cfg->load_cut != NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" of group \"%s\" has a chunked first load to make",
						cfg->name, g->name),
				 errdetail("A chunked load commits chunk by chunk; a group commits once."),
				 errhint("Set its initial_chunk to NULL with treble_sync.alter_table().")));
}

/*
 * One attempt at a group's cycle: every member's cycle in one transaction
 * and on one warehouse connection, as the members' owner.  Every member's
 * cut is frozen first, in member order, on one snapshot of the warehouse
 * where it has one (OdbcBeginSnapshot); then each member is pulled and
 * applied, checked and logged; then all commit at once.  On error, returns
 * it and the index of the member at fault in *failed (-1: none).
 */
static ErrorData *
attempt_group(CycleJob *job, GroupCycle *g, MemoryContext cxt, int attempt, int *failed)
{
	OdbcConn   *volatile conn = NULL;
	ErrorData  *volatile edata = NULL;
	volatile int current = -1;
	MemoryContext attempt_cxt;
	CycleErrorContext context_arg;
	ErrorContextCallback errcallback;

	AttemptBegin(cxt);
	attempt_cxt = AllocSetContextCreate(cxt, "treble_sync group attempt", ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		TableConfig **cfgs = MemoryContextAllocZero(attempt_cxt, sizeof(TableConfig *) * Max(g->n, 1));
		CycleResult *results = MemoryContextAllocZero(attempt_cxt, sizeof(CycleResult) * Max(g->n, 1));
		char	  **cuts = MemoryContextAllocZero(attempt_cxt, sizeof(char *) * Max(g->n, 1));
		bool		changed = false;
		MemoryContext old;

		push_cycle_context(&errcallback, &context_arg, NULL, g->group_run_id);
		start_transaction();
		old = MemoryContextSwitchTo(attempt_cxt);
		for (int i = 0; i < g->n; i++)
		{
			current = i;
			cfgs[i] = CatalogGetTableById(g->cfgs[i]->table_id);
			check_group_member(g, cfgs[i], cfgs[0]);
		}
		MemoryContextSwitchTo(old);

		/* as the owner, on one connection and one snapshot */
		current = 0;
		context_arg.table_name = cfgs[0]->name;
		context_arg.run_id = g->run_ids[0];
		SecurityBeginCycle(cfgs[0]);
		conn = ProcessConnectWarehouse(cfgs[0], cxt);
		(void) OdbcBeginSnapshot(conn);

		/* schema drift, and step 1 of every member, before any pull */
		for (int i = 0; i < g->n; i++)
		{
			current = i;
			context_arg.table_name = cfgs[i]->name;
			context_arg.run_id = g->run_ids[i];
			SecurityResumeCycle(cfgs[i]);
			results[i].run_id = g->run_ids[i];
			DriftCheck(cfgs[i], conn, &results[i]);
			if (cfgs[i]->cursor_kind != CURSOR_NONE)
			{
				CurrentAttempt->cut = NULL;
				cfgs[i]->cut_found = CycleFreezeCut(cfgs[i], conn, &cfgs[i]->frozen_cut);
				cfgs[i]->cut_frozen = true;
				cuts[i] = CurrentAttempt->cut ? MemoryContextStrdup(attempt_cxt, CurrentAttempt->cut) : NULL;
			}
		}

		/* steps 2 to 5 of every member, then its checks and its run row */
		for (int i = 0; i < g->n; i++)
		{
			TableConfig *cfg = cfgs[i];

			current = i;
			context_arg.table_name = cfg->name;
			context_arg.run_id = g->run_ids[i];
			AttemptNoteRun(g->run_ids[i]);
			SecurityResumeCycle(cfg);
			ProgressStart(cfg->table_id, g->run_ids[i], cfg->local_relid, &job->slot->progress);
			CycleRun(cfg, conn, &results[i]);
			ChecksRun(cfg, &results[i]);	/* a failing 'error' check fails the group */
			CycleAnalyzeIfChanged(cfg, &results[i]);
			HistoryAfterCycle(cfg);
			StageDrop();
			ProgressEnd();
			changed |= strcmp(results[i].status, "success") == 0;
		}

		/*
		 * Nothing computed under a registration changed since (by a later
		 * member's code too): every member's, once all are applied.
		 */
		for (int i = 0; i < g->n; i++)
		{
			current = i;
			context_arg.table_name = cfgs[i]->name;
			context_arg.run_id = g->run_ids[i];
			CatalogLockRegistration(g->cfgs[i]);
		}
		for (int i = 0; i < g->n; i++)
		{
			CatalogFinishRun(g->run_ids[i], &results[i]);
			CatalogSetRunDetails(g->run_ids[i], attempt, cuts[i], results[i].drift,
								 results[i].warnings);
		}
		current = -1;
		CatalogFinishGroupRun(g->group_run_id, changed ? "success" : "empty", NULL);
		for (int i = 0; i < g->n; i++)
			CatalogAfterRun(g->run_ids[i]);
		SecurityEndCycle();
		commit_transaction();
		/* its snapshot transaction is still open: not for another cycle */
		ProcessReleaseWarehouse(conn, false);
		error_context_stack = errcallback.previous;
	}
	PG_CATCH();
	{
		edata = abort_attempt(cxt, conn);
	}
	PG_END_TRY();
	*failed = current;
	MemoryContextDelete(attempt_cxt);
	return edata;
}

/*
 * What the retry loop runs: attempts at a table's cycle or a group's, and
 * the record of their failure once no attempt is left.
 */
typedef struct CycleRetries
{
	CycleJob   *job;
	MemoryContext cxt;
	const char *what;			/* table "x", group "x": for the log */
	TableConfig *cfg;			/* a table's cycle, or */
	GroupCycle *group;			/* a group's */
	int			failed;			/* of a group: the member at fault, or -1 */
} CycleRetries;

/* One attempt at the cycle; its error, with everything rolled back. */
static ErrorData *
attempt_once(CycleRetries *r, int attempt)
{
	if (r->group != NULL)
		return attempt_group(r->job, r->group, r->cxt, attempt, &r->failed);
	return attempt_cycle(r->job, r->cfg, r->cxt, attempt);
}

/* A failed run's row: its error, and what the attempt at fault noted. */
static void
fail_run_row(int64 run_id, const char *text, int attempt, bool at_fault)
{
	CatalogFailRun(run_id, text);
	CatalogSetRunDetails(run_id, attempt, at_fault ? CurrentAttempt->cut : NULL,
						 at_fault ? CurrentAttempt->drift : NULL, NULL);
}

/*
 * Record a failed cycle, in a transaction of its own: the table at fault
 * gets the error; of a group, every other member an error that names that
 * table, and the group run the error; then the events of every run, each
 * in a transaction of its own.
 */
static void
fail_cycle(CycleRetries *r, ErrorData *edata, int attempt)
{
	GroupCycle *g = r->group;
	const char *at;
	int64		at_run;
	char	   *text;

	if (g == NULL)
	{
		at = r->cfg->name;
		at_run = r->job->run_id;
	}
	else
	{
		at = r->failed >= 0 ? g->cfgs[r->failed]->name : NULL;
		at_run = r->failed >= 0 ? g->run_ids[r->failed] : 0;
	}
	explain_lock_failure(r->job, edata);
	RedactError(edata);
	if (at_run != 0)
		keep_bad_row(at, at_run, edata, r->cxt);
	text = describe_error(edata, at ? at : g->name, at_run);

	start_transaction();
	if (g == NULL)
		fail_run_row(at_run, text, attempt, true);
	else
	{
		for (int i = 0; i < g->n; i++)
		{
			CHECK_FOR_INTERRUPTS();
			fail_run_row(g->run_ids[i], i == r->failed ? text :
						 at ? psprintf("group \"%s\" failed at table \"%s\"; nothing of the group's cycle was applied",
									   g->name, at) :
						 psprintf("group \"%s\" failed: %s", g->name, text),
						 attempt, i == r->failed);
		}
	}
	if (at_run != 0)
		ChecksRecordFailed(at_run, at, CurrentAttempt->failed_checks);
	if (g != NULL)
		CatalogFinishGroupRun(g->group_run_id, "failed",
							  at ? psprintf("table \"%s\": %s", at, text) : text);
	commit_transaction();
	if (g == NULL)
		after_failed_run(at_run, r->cxt);
	else
		for (int i = 0; i < g->n; i++)
			after_failed_run(g->run_ids[i], r->cxt);

	ereport(LOG,
			(errmsg("treble_sync cycle of %s failed%s%s%s: %s", r->what,
					g && at ? " at table \"" : "", g && at ? at : "", g && at ? "\"" : "",
					edata->message ? edata->message : "unknown error"),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 edata->context ? errcontext("%s", edata->context) : 0));
}

/*
 * Transaction 2 of a table's cycle (cfg) or a group's (g), with retries: a
 * cycle whose error's SQLSTATE says it may pass (AttemptErrorIsTransient():
 * a lost connection, a timeout..., of any member, for a group) is tried
 * again, after 0.5 s, 1 s, 2 s..., up to max_retries times (of a group:
 * its first member's); any other error, or a cancel, fails it at once.
 * The run log records the attempts, and a failure with its error.
 */
static void
run_with_retries(CycleJob *job, MemoryContext cxt, TableConfig *cfg, GroupCycle *g,
				 int max_retries)
{
	CycleRetries r;

	Assert((cfg == NULL) != (g == NULL));
	memset(&r, 0, sizeof(r));
	r.job = job;
	r.cxt = cxt;
	r.cfg = cfg;
	r.group = g;
	r.what = cfg ? psprintf("table \"%s\"", cfg->name) : psprintf("group \"%s\"", g->name);
	r.failed = -1;

	for (int attempt = 1;; attempt++)
	{
		long		wait_ms;
		ErrorData  *edata = attempt_once(&r, attempt);

		if (edata == NULL)
			return;
		/* rolled back, between transactions; the attempt's notes remain */
		Assert(!IsTransactionState() && CurrentAttempt != NULL);

		if (attempt > max_retries || ProcessWasSignalled() ||
			!AttemptErrorIsTransient(edata->sqlerrcode))
		{
			fail_cycle(&r, edata, attempt);
			return;
		}

		RedactError(edata);
		wait_ms = (long) RETRY_FIRST_WAIT_MS << Min(attempt - 1, 10);
		ereport(LOG,
				(errmsg("treble_sync cycle of %s failed on attempt %d of %d, retrying in %ld ms: %s",
						r.what, attempt, max_retries + 1, wait_ms,
						edata->message ? edata->message : "unknown error")));
		wait_before_retry(wait_ms);
		FreeErrorData(edata);
	}
}

/* Transaction 2 of a table's cycle, with its retries. */
static void
run_cycle(CycleJob *job, TableConfig *cfg, MemoryContext cxt)
{
	run_with_retries(job, cxt, cfg, NULL, max_retries_for(cfg));
}

/*
 * Transaction 2 of a group's cycle, with its retries: a transient error
 * tries the whole group again.
 */
static void
run_group(CycleJob *job, GroupCycle *g, MemoryContext cxt)
{
	if (g->n == 0)
	{
		start_transaction();
		CatalogFinishGroupRun(g->group_run_id, "empty", NULL);
		commit_transaction();
		return;
	}
	run_with_retries(job, cxt, NULL, g, max_retries_for(g->cfgs[0]));
}

/*
 * The caller's settings that matter in the worker, above the role and
 * database settings of the session user; at the worker's start and again
 * before each of its cycles (reset_between_cycles).
 */
static void
apply_caller_settings(WorkerQueue *queue)
{
	Assert(!IsTransactionState());
	SetConfigOption("treble_sync.freshness_alert", psprintf("%d", queue->freshness_alert),
					PGC_SUSET, PGC_S_SESSION);
	SetConfigOption("treble_sync.run_retention", psprintf("%d", queue->run_retention),
					PGC_SUSET, PGC_S_SESSION);
	ProcessSetLockTimeout(queue->lock_timeout);
	SetConfigOption("treble_sync.read_ahead", queue->read_ahead ? "on" : "off",
					PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("treble_sync.cursor_max_lead", psprintf("%d", queue->cursor_max_lead),
					PGC_SUSET, PGC_S_SESSION);
	SetConfigOption(TESTHOOK_SETTING, queue->test_pause_at, PGC_SUSET, PGC_S_SESSION);
}

/*
 * Before each cycle of a worker, as the owner it will run as: a cycle
 * starts as in a process of its own.  The temporary tables of the cycle
 * before (another owner's, maybe) are gone (they are dropped with their
 * transaction's end anyway), and the owner may create temporary tables in
 * this database, which PostgreSQL checks only when a process makes its
 * first one.  Every setting is put back as the worker started (RESET ALL,
 * then the pinned and the caller's settings): code of the cycle before,
 * another owner's (a trigger on its copy calling set_config(..., false)),
 * could have changed a session-level setting (TimeZone,
 * default_transaction_read_only, a custom one) that a commit keeps.
 * Session advisory locks are released after each cycle (run_item).
 */
static void
reset_between_cycles(WorkerQueue *queue)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	ResetTempTableNamespace();
	ResetAllOptions();
	CommitTransactionCommand();
	SecurityPinWorkerSettings();
	apply_caller_settings(queue);
}

/*
 * Run one cycle of the queue: a table's or a group's.  An error outside
 * the cycle's own transactions (its registration gone, the catalog of
 * another release) is logged and ends this cycle only: the caller fails
 * a run it left 'running', and the worker goes on with the next one.
 */
static void
run_item(WorkerQueue *queue, WorkerSlot *slot, WorkerItem *item, MemoryContext cxt)
{
	CycleJob	job;

	memset(&job, 0, sizeof(job));
	job.table_id = item->table_id;
	job.group_id = item->group_id;
	job.user_id = queue->user_id;
	job.full = queue->full;
	job.repair_day = queue->repair_day;
	job.slot = slot;
	job.item = item;
	slot->blockers[0] = '\0';
	slot->blocked_by_caller = false;
	memset(&slot->progress, 0, sizeof(slot->progress));
	pg_write_barrier();
	slot->table_id = item->table_id;

	PG_TRY();
	{
		if (job.group_id != 0)
		{
			GroupCycle	g;

			memset(&g, 0, sizeof(g));
			if (begin_group_run(&job, &g, cxt))
				run_group(&job, &g, cxt);
		}
		else
		{
			TableConfig *cfg;
			LOCKTAG		tag;

			if (begin_run(&job, &cfg, &tag, cxt))
				run_cycle(&job, cfg, cxt);
		}
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
	/* the cycle locks of the table, or of the group's members */
	LockReleaseAll(USER_LOCKMETHOD, true);
	AttemptEnd();
	slot->table_id = 0;
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Whether this worker may run an item's cycle: false if it reaches a
 * ClickHouse server with other TLS settings than this process's driver
 * was set up with (odbc.c), which only a fresh process can reach as it
 * asks.  An item whose table cannot be read here is left to run_item,
 * which logs why.
 */
static bool
item_fits(WorkerItem *item, MemoryContext cxt)
{
	MemoryContext old;
	volatile bool fits = true;

	if (!OdbcClickHouseTlsSetUp())
		return true;
	old = MemoryContextSwitchTo(cxt);
	start_transaction();
	PG_TRY();
	{
		TableConfig *cfg = CatalogGetTableById(item->table_id);
		ForeignServer *server = cfg ? GetForeignServerByName(cfg->server_name, true) : NULL;

		if (server != NULL)
			fits = OdbcClickHouseTlsFits(server);
		commit_transaction();
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		FlushErrorState();
		AbortCurrentTransaction();
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(cxt);
	return fits;
}

/* Mark an item taken by this worker. */
static int
take(WorkerQueue *queue, uint32 i)
{
	pg_atomic_write_u32(&queue->items[i].state, WORKER_ITEM_TAKEN);
	pg_atomic_fetch_add_u32(&queue->taken, 1);
	return (int) i;
}

/*
 * The index of the next cycle of the queue this worker runs, or -1 if none
 * is left for it: the next item not yet looked at, else one another worker
 * handed back.  An item this worker cannot run (item_fits) is handed back
 * for a fresh worker, which the caller starts when this one exits with
 * items left.  A fresh worker fits every item (its driver has set up
 * nothing yet), so each worker the caller starts takes one at least, and
 * the queue always drains.
 */
static int
take_item(WorkerQueue *queue, MemoryContext cxt)
{
	/*
	 * Both loops end within nitems steps.  No CHECK_FOR_INTERRUPTS here: a
	 * cancel between two cycles is forgotten, as the caller's loop does,
	 * and a termination is seen through ProcessWasTerminated.
	 */
	for (;;)
	{
		uint32		i;

		if (ProcessWasTerminated())
			return -1;
		i = pg_atomic_fetch_add_u32(&queue->next, 1);
		if (i >= (uint32) queue->nitems)
			break;
		if (item_fits(&queue->items[i], cxt))
			return take(queue, i);
		pg_atomic_write_u32(&queue->items[i].state, WORKER_ITEM_HANDED_BACK);
	}
	for (int i = 0; i < queue->nitems; i++)
	{
		uint32		expected = WORKER_ITEM_HANDED_BACK;

		if (ProcessWasTerminated())
			return -1;
		if (pg_atomic_read_u32(&queue->items[i].state) != WORKER_ITEM_HANDED_BACK ||
			!item_fits(&queue->items[i], cxt))
			continue;
		if (pg_atomic_compare_exchange_u32(&queue->items[i].state, &expected,
										   WORKER_ITEM_TAKEN))
		{
			pg_atomic_fetch_add_u32(&queue->taken, 1);
			return i;
		}
	}
	return -1;
}

/*
 * Entry point of the worker process: take the cycles of the caller's
 * queue one after another until none is left, each in transactions of its
 * own; keep the warehouse connections between them (process.c).  A
 * termination ends the cycle it interrupts (logged as failed) and the
 * worker; a cancel ends the cycle it interrupts only.
 */
void
treble_sync_worker_main(Datum main_arg)
{
	dsm_segment *seg;
	shm_toc    *toc;
	WorkerQueue *queue;
	WorkerSlot *slots;
	int			index;
	MemoryContext cxt;

	ProcessStartSignals();
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "treble_sync worker");
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("treble_sync worker could not attach to its caller's shared memory"),
				 errdetail("The caller stopped waiting before the worker started.")));
	toc = shm_toc_attach(WORKER_SLOT_MAGIC, dsm_segment_address(seg));
	if (toc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("treble_sync cycle worker was started by a session that runs another release of treble_sync"),
				 errdetail("Its shared memory segment has a bad magic number: this worker runs the library of treble_sync %s, "
						   "installed after the session loaded its own; it did nothing.", TREBLE_SYNC_VERSION),
				 errhint("Run ALTER EXTENSION treble_sync UPDATE in the session's database, then the call again from a new session.")));
	queue = shm_toc_lookup(toc, WORKER_QUEUE_KEY, false);
	slots = shm_toc_lookup(toc, WORKER_SLOTS_KEY, false);
	memcpy(&index, MyBgworkerEntry->bgw_extra, sizeof(index));
	Assert(index >= 0 && index < queue->nworkers && OidIsValid(queue->database_id));

	ProcessConnect(queue->database_id, queue->session_user_id, queue->user_id);
	cxt = AllocSetContextCreate(TopMemoryContext, "treble_sync cycle",
								ALLOCSET_DEFAULT_SIZES);

	apply_caller_settings(queue);
	ProcessKeepConnections();

	for (bool first = true;; first = false)
	{
		int			i;

		if (ProcessWasTerminated())
			break;
		ProcessForgetCancel();
		i = take_item(queue, cxt);
		if (i < 0)
			break;
		if (!first)
			reset_between_cycles(queue);
		run_item(queue, &slots[index], &queue->items[i], cxt);
		MemoryContextReset(cxt);
	}

	dsm_detach(seg);
	proc_exit(0);
}
