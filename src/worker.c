/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  Running one cycle in a dynamic background worker, and waiting for it.
 *
 * The calling session registers a worker, hands it the database, its
 * roles and the table through a small DSM segment, and waits for it to
 * exit.  The worker connects as the caller's session user; the cycle
 * itself runs as the registration's owner, inside a security-restricted
 * operation with search_path pinned (security.c), whoever called:
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
 * One process per cycle, exiting at the end: no ODBC state outlives a run.
 * SIGTERM (pg_terminate_backend, or the caller being cancelled) becomes a
 * query cancel, so the cycle rolls back through the same path as any error
 * and leaves a 'failed' row that says it was stopped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
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
#include "cycle.h"
#include "drift.h"
#include "history.h"
#include "load.h"
#include "lockwait.h"
#include "odbc.h"
#include "option.h"
#include "progress.h"
#include "security.h"
#include "stage.h"
#include "worker.h"

/* Distinguishes our cycle locks from users' advisory locks in pg_locks. */
#define CYCLE_LOCK_SPACE 0x54726231	/* "Trb1" */
#define CYCLE_LOCK_KIND 3		/* advisory locks use 1 and 2 */

/* What the caller hands the worker, and the run id it hands back. */
typedef struct WorkerSlot
{
	Oid			database_id;
	Oid			session_user_id;
	Oid			user_id;
	int32		table_id;		/* of a group's cycle: its first member */
	int32		group_id;		/* sync_group(): the group; 0 if none */
	bool		full;			/* resync(): pull everything, make the copy equal */
	Timestamp	repair_day;		/* repair(): the event day to refresh; 0 if none */
	int			freshness_alert;	/* the caller's settings, which the worker */
	int			run_retention;	/* takes over (a SET does not reach it otherwise) */
	int			lock_timeout;
	bool		read_ahead;
	int			cursor_max_lead;
	int64		run_id;			/* set by the worker once its run row exists
								 * (of a group: its group run) */
	bool		blocked_by_caller;	/* set by the caller before it stops the worker */
	char		blockers[LOCKWAIT_BLOCKERS_LEN];	/* who the worker last waited for */
	ProgressState progress;		/* the worker's progress, for NOTICEs */
} WorkerSlot;

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

/* maintenance_work_mem of a worker (the default is 64MB) */
#define WORKER_MAINTENANCE_WORK_MEM "16MB"

/* Seconds between two progress NOTICEs. */
#define PROGRESS_NOTICE_SECS 5

/* How often a caller with no free worker slot tries again. */
#define SLOT_RETRY_MS 200

static volatile sig_atomic_t got_sigterm = false;
static volatile sig_atomic_t got_sigint = false;

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
WorkerWasSignalled(void)
{
	return got_sigterm || got_sigint;
}

/*
 * Take a table's cycle lock until the end of the transaction, if no cycle
 * holds it: remove_table() must not pull a registration from under one.
 */
bool
WorkerTryLockTable(int32 table_id)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, CYCLE_LOCK_SPACE, (uint32) table_id,
						 CYCLE_LOCK_KIND);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/* If the waiting caller errors out or is terminated, stop its worker too. */
static void
terminate_worker_on_exit(int code, Datum arg)
{
	BackgroundWorkerHandle *handle = (BackgroundWorkerHandle *) DatumGetPointer(arg);

	TerminateBackgroundWorker(handle);
}

/* Report a worker's progress as a NOTICE. */
static void
notice_progress(ProgressState *p)
{
	double		secs = (double) (GetCurrentTimestamp() - p->started) / USECS_PER_SEC;

	if (p->run_id == 0)
		return;
	if (p->chunks > 0)
		ereport(NOTICE,
				(errmsg("treble_sync run %lld: %s, chunk %d of %d, " INT64_FORMAT " rows (" INT64_FORMAT " kB) read in %.0f s, %.0f rows/s",
						(long long) p->run_id, ProgressPhaseName(p->phase), p->chunk, p->chunks,
						p->rows, p->bytes / 1024, secs, secs > 0 ? p->rows / secs : 0)));
	else
		ereport(NOTICE,
				(errmsg("treble_sync run %lld: %s, " INT64_FORMAT " rows (" INT64_FORMAT " kB) read in %.0f s, %.0f rows/s",
						(long long) p->run_id, ProgressPhaseName(p->phase),
						p->rows, p->bytes / 1024, secs, secs > 0 ? p->rows / secs : 0)));
}

static void watch_lock_wait(int32 table_id, BackgroundWorkerHandle *handle, WorkerSlot *slot);

/*
 * Wait for a started worker to exit, on the latch (the postmaster sets it
 * when the worker's state changes), waking once a second to honour
 * interrupts and, with treble_sync.progress_notices, to report progress.
 */
static BgwHandleStatus
wait_for_worker(int32 table_id, BackgroundWorkerHandle *handle, WorkerSlot *slot)
{
	TimestampTz last_notice = GetCurrentTimestamp();

	for (;;)
	{
		pid_t		pid;
		BgwHandleStatus status = GetBackgroundWorkerPid(handle, &pid);

		if (status == BGWH_STOPPED || status == BGWH_POSTMASTER_DIED)
			return status;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		watch_lock_wait(table_id, handle, slot);

		if (treble_sync_progress_notices &&
			TimestampDifferenceExceeds(last_notice, GetCurrentTimestamp(),
									   PROGRESS_NOTICE_SECS * 1000))
		{
			ProgressState snapshot = slot->progress;

			notice_progress(&snapshot);
			last_notice = GetCurrentTimestamp();
		}
	}
}

/*
 * What every treble_sync worker is: a database backend that is never
 * restarted, shown as backend_type "treble_sync worker", reporting to the
 * process that starts it.
 */
void
WorkerDescribe(BackgroundWorker *bgw, const char *function, const char *name)
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

/* A cycle's worker, as its caller tracks it. */
static int64 run_one(int32 table_id, bool full, Timestamp repair_day);

typedef struct WorkerRun
{
	int32		table_id;
	int32		group_id;		/* a group's cycle: table_id is its first member */
	dsm_segment *seg;
	WorkerSlot *slot;
	BackgroundWorkerHandle *handle;
	bool		running;
	int64		run_id;
} WorkerRun;

/*
 * While a caller waits for its worker: if the worker waits for a lock,
 * look at who holds it.  This session (an open transaction that changed
 * the copy, or locked it) would never release it while it waits for the
 * worker, and PostgreSQL's deadlock detector cannot see a wait for a
 * process to exit: stop the worker and say what to do.  Another session
 * is noted in the slot, for the run's error should the cycle give up at
 * treble_sync.lock_timeout.
 */
static void
watch_lock_wait(int32 table_id, BackgroundWorkerHandle *handle, WorkerSlot *slot)
{
	pid_t		pid;
	bool		mine;
	char		blockers[LOCKWAIT_BLOCKERS_LEN];

	if (GetBackgroundWorkerPid(handle, &pid) != BGWH_STARTED ||
		!LockWaitBlockers(pid, &mine, blockers, sizeof(blockers)))
		return;
	if (mine)
	{
		slot->blocked_by_caller = true;
		pg_memory_barrier();
		TerminateBackgroundWorker(handle);
		ereport(ERROR,
				(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
				 errmsg("the cycle of table \"%s\" waits for a lock that this transaction holds",
						CatalogGetTableById(table_id)->name),
				 errdetail("The cycle runs in another process, which would wait for this transaction to end while this transaction waits for the cycle. This transaction changed or locked the copy (or its registration)."),
				 errhint("Commit or roll back first: start the cycle in a transaction of its own.")));
	}
	if (blockers[0] != '\0' && strcmp(blockers, slot->blockers) != 0)
		strlcpy(slot->blockers, blockers, sizeof(slot->blockers));
}

/*
 * Register a background worker, waiting up to wait_ms for a free slot
 * (another cycle's, or any other worker's, to end): the postmaster tells
 * nobody when a slot frees, so try again every SLOT_RETRY_MS.  False if
 * none came free in time.
 */
static bool
register_worker_waiting(BackgroundWorker *bgw, BackgroundWorkerHandle **handle, int wait_ms)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);

	for (;;)
	{
		long		left;

		if (RegisterDynamicBackgroundWorker(bgw, handle))
			return true;
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);
		if (left <= 0)
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(left, SLOT_RETRY_MS), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * A cycle that could not start, for want of a worker slot: logged as a
 * failed run, in the caller's transaction, so that status, metrics() and
 * the NOTIFY events see the table miss its cycle.  Returns its run id.
 */
static int64
log_unstarted_run(int32 table_id, int waited_ms)
{
	TableConfig *cfg = CatalogGetTableById(table_id);
	int64		run_id = CatalogInsertRun(cfg, "running", GetUserId());
	char	   *hint = psprintf("Raise max_worker_processes (now %d), run fewer cycles at once, or raise treble_sync.worker_start_timeout.",
								max_worker_processes);

	CatalogFailRun(run_id,
				   psprintf("could not start: no background worker slot came free in %d ms (treble_sync.worker_start_timeout); the cycle did not run\nHINT: %s",
							waited_ms, hint));
	CatalogAfterRun(run_id);
	ereport(WARNING,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("could not start a treble_sync worker for table \"%s\" within %d ms",
					cfg->name, waited_ms),
			 errdetail("Every background worker slot stayed in use; run %lld is logged as failed.",
					   (long long) run_id),
			 errhint("%s", hint)));
	return run_id;
}

/*
 * The cycle's worker would run in a transaction of its own: refuse a
 * registration this transaction added or changed, which it would not see
 * (or would wait for).
 */
static void
require_committed_registration(int32 table_id)
{
	if (CatalogTableChangedHere(table_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the registration of table \"%s\" is not committed yet",
						CatalogGetTableById(table_id)->name),
				 errdetail("add_table() or alter_table() changed it in this transaction, and the cycle runs in another process, which cannot see that change."),
				 errhint("Commit the transaction, then start the cycle.")));
}

/*
 * Start the worker of one cycle (full: a resync), waiting up to wait_ms
 * for a free background worker slot.  False if none came free.
 */
static bool
start_worker(WorkerRun *run, bool full, Timestamp repair_day, int wait_ms)
{
	BackgroundWorker bgw;

	run->seg = dsm_create(sizeof(WorkerSlot), 0);
	run->slot = dsm_segment_address(run->seg);
	memset(run->slot, 0, sizeof(WorkerSlot));
	run->slot->database_id = MyDatabaseId;
	run->slot->session_user_id = GetSessionUserId();
	run->slot->user_id = GetUserId();
	run->slot->table_id = run->table_id;
	run->slot->group_id = run->group_id;
	run->slot->full = full;
	run->slot->repair_day = repair_day;
	run->slot->freshness_alert = treble_sync_freshness_alert;
	run->slot->run_retention = treble_sync_run_retention;
	run->slot->lock_timeout = treble_sync_lock_timeout;
	run->slot->read_ahead = treble_sync_read_ahead;
	run->slot->cursor_max_lead = treble_sync_cursor_max_lead;

	WorkerDescribe(&bgw, "treble_sync_worker_main",
				   run->group_id ? psprintf("treble_sync cycle of group id %d", run->group_id) :
				   psprintf("treble_sync cycle of table id %d", run->table_id));
	bgw.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(run->seg));

	if (!register_worker_waiting(&bgw, &run->handle, wait_ms))
	{
		dsm_detach(run->seg);
		run->seg = NULL;
		return false;
	}
	run->running = true;
	return true;
}

/*
 * After a worker exited: collect its run id (0 if it never logged a run),
 * and fail its run if it could not record its end (SIGKILL, crash).
 */
static int64
finish_worker(WorkerRun *run)
{
	run->run_id = run->slot->run_id;
	run->running = false;
	dsm_detach(run->seg);
	run->seg = NULL;
	if (run->run_id != 0 && CatalogRunIsRunning(run->run_id))
		CatalogFailRun(run->run_id, "the worker exited before finishing the cycle; nothing of it was applied");
	return run->run_id;
}

/*
 * Run one cycle of a table in a background worker and wait for it (full:
 * resync the table).  Returns the run id of its run-log row.
 */
int64
WorkerRunCycle(int32 table_id, bool full)
{
	return run_one(table_id, full, 0);
}

/*
 * Run one cycle of a group (first_table_id is its first member) in a
 * background worker and wait for it.  Returns the group run's id; every
 * member's run row names it.
 */
int64
WorkerRunGroup(int32 group_id, int32 first_table_id)
{
	WorkerRun	run;
	BgwHandleStatus status;
	pid_t		pid;

	Assert(group_id > 0);
	memset(&run, 0, sizeof(run));
	run.table_id = first_table_id;
	run.group_id = group_id;
	require_committed_registration(first_table_id);
	if (!start_worker(&run, false, 0, treble_sync_worker_start_timeout))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no background worker slot came free for the group's cycle within treble_sync.worker_start_timeout (%d ms)",
						treble_sync_worker_start_timeout),
				 errhint("Raise max_worker_processes, or run fewer cycles at once.")));

	PG_ENSURE_ERROR_CLEANUP(terminate_worker_on_exit, PointerGetDatum(run.handle));
	{
		status = WaitForBackgroundWorkerStartup(run.handle, &pid);
		if (status == BGWH_STARTED)
			status = wait_for_worker(first_table_id, run.handle, run.slot);
	}
	PG_END_ENSURE_ERROR_CLEANUP(terminate_worker_on_exit, PointerGetDatum(run.handle));

	if (status == BGWH_POSTMASTER_DIED)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("postmaster exited during a treble_sync cycle")));
	run.run_id = run.slot->run_id;
	dsm_detach(run.seg);
	if (run.run_id == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the treble_sync worker exited before starting the group's cycle"),
				 errhint("The server log has the worker's error.")));
	CatalogFailGroupRunIfRunning(run.run_id,
								 "the worker exited before finishing the group's cycle; nothing of it was applied");
	return run.run_id;
}

/* Run repair(name, day) in a background worker and wait for it. */
int64
WorkerRunRepair(int32 table_id, Timestamp day)
{
	return run_one(table_id, false, day);
}

/*
 * Run one cycle (or a resync, or a repair) of a table in a background
 * worker and wait for it.  Returns the run id of its run-log row.
 */
static int64
run_one(int32 table_id, bool full, Timestamp repair_day)
{
	WorkerRun	run;
	BgwHandleStatus status;
	pid_t		pid;

	memset(&run, 0, sizeof(run));
	run.table_id = table_id;
	require_committed_registration(table_id);
	if (!start_worker(&run, full, repair_day, treble_sync_worker_start_timeout))
		return log_unstarted_run(table_id, treble_sync_worker_start_timeout);

	PG_ENSURE_ERROR_CLEANUP(terminate_worker_on_exit, PointerGetDatum(run.handle));
	{
		status = WaitForBackgroundWorkerStartup(run.handle, &pid);
		if (status == BGWH_STARTED)
			status = wait_for_worker(table_id, run.handle, run.slot);
	}
	PG_END_ENSURE_ERROR_CLEANUP(terminate_worker_on_exit, PointerGetDatum(run.handle));

	if (status == BGWH_POSTMASTER_DIED)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("postmaster exited during a treble_sync cycle")));
	if (finish_worker(&run) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the treble_sync worker exited before starting the cycle"),
				 errhint("The server log has the worker's error.")));
	return run.run_id;
}

/* The runs of WorkerRunCycles(), for the cleanup of an interrupted wait. */
typedef struct WorkerRunSet
{
	WorkerRun  *runs;
	int			n;
} WorkerRunSet;

/* If the caller of sync_all() stops waiting, stop the running workers. */
static void
terminate_workers_on_exit(int code, Datum arg)
{
	WorkerRunSet *set = (WorkerRunSet *) DatumGetPointer(arg);

	for (int i = 0; i < set->n; i++)
		if (set->runs[i].running)
			TerminateBackgroundWorker(set->runs[i].handle);
}

/*
 * Run one cycle of each table, at most max_parallel at a time, each in a
 * worker of its own; one table's failure does not stop the others.
 * Returns the run ids, in the order of table_ids (a table whose worker
 * never logged a run is left out, with a WARNING).
 */
List *
WorkerRunCycles(List *table_ids, int max_parallel)
{
	WorkerRunSet set;
	volatile int next = 0;
	volatile int active = 0;
	List	   *run_ids;
	ListCell   *lc;

	set.n = 0;
	set.runs = palloc0(sizeof(WorkerRun) * Max(list_length(table_ids), 1));
	foreach(lc, table_ids)
	{
		int32		table_id = lfirst_int(lc);

		/* as sync_table() would refuse it; the other tables go on */
		if (CatalogTableChangedHere(table_id))
		{
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("skipping table \"%s\": its registration is not committed yet",
							CatalogGetTableById(table_id)->name),
					 errhint("Commit the transaction that called add_table() or alter_table() first.")));
			continue;
		}
		set.runs[set.n++].table_id = table_id;
	}

	PG_ENSURE_ERROR_CLEANUP(terminate_workers_on_exit, PointerGetDatum(&set));
	{
		for (;;)
		{
			/* start what may start; with no slot free, wait for one */
			while (active < max_parallel && next < set.n)
			{
				/* with cycles of its own running, wait for one of them */
				int			wait_ms = active == 0 ? treble_sync_worker_start_timeout : 0;

				if (!start_worker(&set.runs[next], false, 0, wait_ms))
				{
					if (active > 0)
						break;
					set.runs[next].run_id = log_unstarted_run(set.runs[next].table_id, wait_ms);
					next++;
					continue;
				}
				next++;
				active++;
			}
			if (active == 0)
				break;

			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 1000L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();

			for (int i = 0; i < next; i++)
			{
				pid_t		pid;
				WorkerRun  *run = &set.runs[i];

				if (!run->running)
					continue;
				watch_lock_wait(run->table_id, run->handle, run->slot);
				switch (GetBackgroundWorkerPid(run->handle, &pid))
				{
					case BGWH_STOPPED:
						if (finish_worker(run) == 0)
							ereport(WARNING,
									(errmsg("the treble_sync worker of table id %d exited before starting its cycle",
											run->table_id),
									 errhint("The server log has the worker's error.")));
						active--;
						break;
					case BGWH_POSTMASTER_DIED:
						ereport(ERROR,
								(errcode(ERRCODE_ADMIN_SHUTDOWN),
								 errmsg("postmaster exited during treble_sync cycles")));
						break;
					default:
						break;
				}
			}
		}
	}
	PG_END_ENSURE_ERROR_CLEANUP(terminate_workers_on_exit, PointerGetDatum(&set));

	/* a List of pointers to the int64 run ids */
	run_ids = NIL;
	for (int i = 0; i < set.n; i++)
		if (set.runs[i].run_id != 0)
			run_ids = lappend(run_ids, &set.runs[i].run_id);
	return run_ids;
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
	if (got_sigterm)
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
 * Warehouse values in errors and log lines.  COPY adds to the context of
 * every message raised while it runs the line it is at, values included
 * ("COPY t, line 2979: "2979	secret..."), and the triggers, defaults and
 * input functions it runs add lines of their own.  A COPY of a cycle (or of
 * verify) therefore runs with an error context stack of its own, empty at
 * the start: whatever context a message raised inside it carries came from
 * COPY or from what COPY ran, and is dropped, while the lines of the cycle
 * around it (its table and run, its chunk) are added again.  An error is
 * caught around the COPY and raised again without that context (stage.c);
 * a message emitted while the COPY runs (a trigger's WARNING, a lock wait
 * logged by log_lock_waits, a FATAL) goes through the log hook below, which
 * every process installs on its first COPY.
 */
static WorkerCopyGuard *current_copy = NULL;
static emit_log_hook_type prev_emit_log_hook = NULL;
static bool copy_hook_installed = false;

/*
 * emit_log_hook: a message emitted while a COPY runs loses the context the
 * COPY gave it and gets the one around the outermost COPY.  The callbacks
 * append to this message, the one being emitted, as errfinish's would.
 */
static void
copy_emit_log_hook(ErrorData *edata)
{
	if (current_copy != NULL)
	{
		WorkerCopyGuard *outermost = current_copy;

		while (outermost->previous != NULL)
			outermost = outermost->previous;
		edata->context = NULL;
		for (ErrorContextCallback *cb = outermost->outer; cb != NULL; cb = cb->previous)
			cb->callback(cb->arg);
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * Before a COPY: run it on an empty error context stack (see above), until
 * WorkerCopyEnd(), which the caller also calls when the COPY fails.
 */
void
WorkerCopyBegin(WorkerCopyGuard *guard)
{
	if (!copy_hook_installed)
	{
		prev_emit_log_hook = emit_log_hook;
		emit_log_hook = copy_emit_log_hook;
		copy_hook_installed = true;
	}
	Assert(guard != current_copy);
	guard->outer = error_context_stack;
	guard->previous = current_copy;
	current_copy = guard;
	error_context_stack = NULL;
}

/*
 * After a COPY, or in the PG_CATCH around one: the error context stack as it
 * was.  Does nothing for a guard that is not the running COPY's (the error
 * came before WorkerCopyBegin() or after WorkerCopyEnd()).
 */
void
WorkerCopyEnd(WorkerCopyGuard *guard)
{
	if (current_copy != guard)
		return;
	error_context_stack = guard->outer;
	current_copy = guard->previous;
}

/*
 * Take warehouse values out of an error that is stored (the run log, a
 * chunk's error, a reader's error handed to its cycle) or logged.  The
 * DETAIL of PostgreSQL's constraint errors shows the row: "Failing row
 * contains (...)", "Key (...)=(...) already exists.".  They are the class
 * 23 errors that name their table, column, constraint or type in the
 * error's fields (errtablecol(), errtableconstraint(), errdomainconstraint()),
 * which the extension's own errors of that class never do; their message
 * names only the constraint and the table, and is kept.
 */
void
WorkerScrubError(ErrorData *edata)
{
	if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION &&
		(edata->table_name != NULL || edata->column_name != NULL ||
		 edata->constraint_name != NULL || edata->datatype_name != NULL))
	{
		edata->detail = NULL;
		edata->detail_log = NULL;
	}
}

/*
 * Quote marks of messages, in PostgreSQL's and drivers' languages: ASCII,
 * then in UTF-8 the guillemets, the curved quotes and the corner brackets.
 */
static const char *const quote_marks[] = {
	"\"", "'",
	"\xc2\xab", "\xc2\xbb",	/* << >> */
	"\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x9e",	/* curved double, low double */
	"\xe2\x80\x98", "\xe2\x80\x99",	/* curved single */
	"\xe3\x80\x8c", "\xe3\x80\x8d", "\xe3\x80\x8e", "\xe3\x80\x8f"	/* corner brackets */
};

/* The length of the quote mark at p, or 0. */
static int
quote_mark_at(const char *p)
{
	for (size_t i = 0; i < lengthof(quote_marks); i++)
	{
		int			len = strlen(quote_marks[i]);

		if (strncmp(p, quote_marks[i], len) == 0)
			return len;
	}
	return 0;
}

/*
 * A message about a value (PostgreSQL's "invalid input syntax for type
 * integer: "..."", a warehouse's "Incorrect integer value: '...'"), with
 * the value taken out: everything from its first quote mark to its last
 * becomes "...", or to the end if it has one only, so that neither a quote
 * mark inside the value nor a value cut short lets a piece of it through;
 * bytes shown as 0xNN (an invalid byte sequence) become 0x...  Names that
 * were quoted go with it.
 */
char *
WorkerRedactQuoted(const char *message)
{
	const char *first = NULL;
	const char *after_last = NULL;
	StringInfoData out;
	const char *p;

	for (p = message; *p != '\0';)
	{
		int			len = quote_mark_at(p);

		if (len == 0)
		{
			p++;
			continue;
		}
		if (first == NULL)
			first = p;
		else
			after_last = p + len;
		p += len;
	}

	initStringInfo(&out);
	if (first == NULL)
		appendStringInfoString(&out, message);
	else
	{
		appendBinaryStringInfo(&out, message, first - message);
		appendStringInfoString(&out, "\"...\"");
		if (after_last != NULL)
			appendStringInfoString(&out, after_last);
	}

	/* 0xNN... of a byte sequence: 0x.. */
	for (int i = 0; i + 2 < out.len; i++)
	{
		int			j = i + 2;

		if (out.data[i] != '0' || out.data[i + 1] != 'x' ||
			(i > 0 && isalnum((unsigned char) out.data[i - 1])))
			continue;
		while (j < out.len && isxdigit((unsigned char) out.data[j]))
			out.data[j++] = '.';
		i = j;
	}
	return out.data;
}

/*
 * Transaction 1: take the cycle lock and log the run.  Returns false when
 * another cycle of the table holds the lock (the run is logged 'skipped').
 */
static bool
begin_run(WorkerSlot *slot, TableConfig **cfg_out, LOCKTAG *tag, MemoryContext cxt)
{
	TableConfig *cfg;
	bool		locked;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	MemoryContextSwitchTo(cxt);

	/* lock first, then read the configuration: its watermark is current */
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, CYCLE_LOCK_SPACE, (uint32) slot->table_id,
						 CYCLE_LOCK_KIND);
	locked = LockAcquire(tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;

	PushActiveSnapshot(GetTransactionSnapshot());
	cfg = CatalogGetTableById(slot->table_id);
	*cfg_out = cfg;
	set_ps_display(cfg->name);

	if (locked)
	{
		CatalogFailStaleRuns(cfg);
		slot->run_id = CatalogInsertRun(cfg, "running", slot->user_id);
	}
	else
		slot->run_id = CatalogInsertRun(cfg, "skipped", slot->user_id);

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
 * Connect to the table's warehouse as the running role, in the worker's
 * long-lived memory (a chunked load commits many times on one connection).
 * Called in a transaction.
 */
OdbcConn *
WorkerConnectWarehouse(TableConfig *cfg, MemoryContext cxt)
{
	ForeignServer *server;
	UserMapping *mapping;
	MemoryContext old;
	OdbcConn   *conn;

	mapping = CyclePrecheck(cfg, &server);

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
	conn = WorkerConnectWarehouse(cfg, cxt);
	DriftCheck(cfg, conn, result);
	return conn;
}

/* Commit what begin_cycle() began, and let go of the connection. */
static void
end_cycle(OdbcConn *conn, ErrorContextCallback *errcallback)
{
	SecurityEndCycle();
	commit_transaction();
	ProgressEnd();
	OdbcDisconnect(conn);
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

		WorkerDescribe(&bgw, "treble_sync_chunk_worker_main",
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
	if (!LoadBegin(cfg, conn, &cut, &todo))
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
		LoadChunks(cfg, conn, run_id, cut);
		if (helpers != NIL)
		{
			ProgressPhase(PROGRESS_PHASE_WAITING);
			wait_chunk_helpers(helpers);
		}
	}
	PG_CATCH();
	{
		stop_chunk_helpers(helpers);
		PG_RE_THROW();
	}
	PG_END_TRY();

	LoadFinish(cfg, conn, cut, result);
}

/*
 * One attempt at transaction 2: the cycle itself, committed with its
 * run-log row and watermark.  A chunked first load commits each chunk on
 * the way.  On error, returns the error with everything rolled back.
 */
static ErrorData *
attempt_cycle(WorkerSlot *slot, TableConfig *run_cfg, MemoryContext cxt, int attempt)
{
	OdbcConn   *volatile conn = NULL;
	ErrorData  *volatile edata = NULL;
	MemoryContext attempt_cxt;
	CycleErrorContext context_arg;
	ErrorContextCallback errcallback;

	/* what the last attempt learnt is forgotten, all at once */
	AttemptBegin(cxt);
	AttemptNoteRun(slot->run_id);

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

		push_cycle_context(&errcallback, &context_arg, run_cfg->name, slot->run_id);
		memset(&result, 0, sizeof(result));
		result.run_id = slot->run_id;
		conn = begin_cycle(run_cfg->table_id, slot->run_id, attempt_cxt, &slot->progress,
						   &context_arg, &cfg, &result);
		if (slot->repair_day != 0)
			CycleRepairDay(cfg, conn, slot->repair_day, &result);
		else if (slot->full)
		{
			CycleRunFull(cfg, conn, &result);
			CatalogEndLoad(cfg->table_id);	/* a first load in progress is moot */
		}
		else if (cfg->watermark == NULL && (cfg->initial_chunk != NULL || cfg->load_cut != NULL))
			run_load(cfg, conn, slot->run_id, &result);
		else
			CycleRun(cfg, conn, &result);
		ChecksRun(cfg, &result);	/* a failing 'error' check fails the cycle */
		CycleAnalyzeIfChanged(cfg, &result);
		HistoryAfterCycle(cfg);		/* retention */
		/* nothing computed under a registration changed since: see there */
		CatalogLockRegistration(run_cfg);
		CatalogFinishRun(slot->run_id, &result);
		CatalogSetRunDetails(slot->run_id, attempt, CurrentAttempt->cut, result.drift,
							 result.warnings);
		CatalogAfterRun(slot->run_id);
		end_cycle(conn, &errcallback);
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		edata = abort_after_error(cxt);
		if (conn)
			OdbcDisconnect(conn);
		RESUME_INTERRUPTS();
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
		if (left <= 0 || got_sigterm || got_sigint)
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
explain_lock_failure(WorkerSlot *slot, ErrorData *edata)
{
	pg_memory_barrier();
	if (slot->blocked_by_caller)
	{
		edata->message = "the session that started this cycle holds a lock the cycle needs (an open transaction that changed or locked the copy); nothing of it was applied";
		edata->detail = NULL;
		edata->hint = "Start the cycle in a transaction of its own.";
	}
	else if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
	{
		edata->message = psprintf("gave up waiting for a lock after treble_sync.lock_timeout (%d ms); nothing of the cycle was applied",
								  treble_sync_lock_timeout);
		edata->detail = slot->blockers[0] != '\0' ?
			psprintf("The cycle was waiting for %s.", pnstrdup(slot->blockers, sizeof(slot->blockers))) :
			NULL;
		edata->hint = "See what the blocking session does in pg_stat_activity and end its transaction, or raise treble_sync.lock_timeout.";
	}
}

/*
 * Transaction 2, with retries: a cycle that fails on a lost connection or
 * a timeout is tried again, after 0.5 s, 1 s, 2 s..., up to max_retries
 * times; any other error, or a cancel, fails it at once.  The run log
 * records the attempts, and a failure with its error.
 */
static void
run_cycle(WorkerSlot *slot, TableConfig *cfg, MemoryContext cxt)
{
	int			max_retries = max_retries_for(cfg);
	ErrorData  *edata;

	for (int attempt = 1;; attempt++)
	{
		long		wait_ms;

		edata = attempt_cycle(slot, cfg, cxt, attempt);
		if (edata == NULL)
			return;

		if (attempt > max_retries || got_sigterm || got_sigint ||
			!CurrentAttempt->transient)
		{
			char	   *text;

			explain_lock_failure(slot, edata);
			WorkerScrubError(edata);
			keep_bad_row(cfg->name, slot->run_id, edata, cxt);
			text = describe_error(edata, cfg->name, slot->run_id);

			start_transaction();
			CatalogFailRun(slot->run_id, text);
			CatalogSetRunDetails(slot->run_id, attempt, CurrentAttempt->cut,
								 CurrentAttempt->drift, NULL);
			ChecksRecordFailed(slot->run_id, cfg->name, CurrentAttempt->failed_checks);
			commit_transaction();
			after_failed_run(slot->run_id, cxt);

			ereport(LOG,
					(errmsg("treble_sync cycle of table \"%s\" failed: %s",
							cfg->name, edata->message ? edata->message : "unknown error"),
					 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
					 edata->context ? errcontext("%s", edata->context) : 0));
			return;
		}

		WorkerScrubError(edata);
		wait_ms = (long) RETRY_FIRST_WAIT_MS << Min(attempt - 1, 10);
		ereport(LOG,
				(errmsg("treble_sync cycle of table \"%s\" failed on attempt %d of %d, retrying in %ld ms: %s",
						cfg->name, attempt, max_retries + 1, wait_ms,
						edata->message ? edata->message : "unknown error")));
		wait_before_retry(wait_ms);
		FreeErrorData(edata);
	}
}

/*
 * The start of every treble_sync worker: SIGTERM and SIGINT cancel the
 * cycle and its remote call, which needs the cancel thread.
 */
static void
worker_start_signals(void)
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
static void
set_lock_timeout(int ms)
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
static void
worker_connect(Oid database_id, Oid session_user_id, Oid user_id)
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
WorkerInitHelper(Oid database_id, Oid session_user_id, Oid user_id, int lock_timeout)
{
	worker_start_signals();
	worker_connect(database_id, session_user_id, user_id);
	set_lock_timeout(lock_timeout);
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
	WorkerInitHelper(args.database_id, args.session_user_id, args.user_id, args.lock_timeout);
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
			LoadChunks(cfg, conn, args.run_id, CycleParseTimestamp(cfg->load_cut));
		end_cycle(conn, &errcallback);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		int			chunk;

		HOLD_INTERRUPTS();
		edata = abort_after_error(cxt);
		WorkerScrubError(edata);

		chunk = CurrentAttempt->chunk.chunk;
		if (cfg != NULL)
			keep_bad_row(cfg->name, args.run_id, edata, cxt);
		if (chunk > 0 && cfg != NULL)
		{
			start_transaction();
			CatalogChunkFailed(cfg->table_id, chunk,
							   describe_error(edata, cfg->name, args.run_id));
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
begin_group_run(WorkerSlot *slot, GroupCycle *g, MemoryContext cxt)
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
	PushActiveSnapshot(GetTransactionSnapshot());
	g->name = CatalogGroupName(slot->group_id);
	if (g->name == NULL || !CatalogGetGroup(g->name, &group_id, &owner, &members))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("treble_sync group %d no longer exists", slot->group_id)));
	set_ps_display(g->name);
	g->n = list_length(members);
	g->cfgs = palloc0(sizeof(TableConfig *) * Max(g->n, 1));
	g->run_ids = palloc0(sizeof(int64) * Max(g->n, 1));
	g->tags = palloc0(sizeof(LOCKTAG) * Max(g->n, 1));
	foreach(lc, members)
	{
		CHECK_FOR_INTERRUPTS();
		SET_LOCKTAG_ADVISORY(g->tags[i], MyDatabaseId, CYCLE_LOCK_SPACE, (uint32) lfirst_int(lc),
							 CYCLE_LOCK_KIND);
		if (locked)
			locked = LockAcquire(&g->tags[i], ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;
		g->cfgs[i++] = CatalogGetTableById(lfirst_int(lc));
	}
	g->group_run_id = CatalogInsertGroupRun(g->name, locked ? "running" : "skipped", owner,
											slot->user_id);
	slot->run_id = g->group_run_id;
	for (i = 0; i < g->n; i++)
	{
		if (locked)
			CatalogFailStaleRuns(g->cfgs[i]);
		g->run_ids[i] = CatalogInsertRun(g->cfgs[i], locked ? "running" : "skipped", slot->user_id);
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
attempt_group(WorkerSlot *slot, GroupCycle *g, MemoryContext cxt, int attempt, int *failed)
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
		conn = WorkerConnectWarehouse(cfgs[0], cxt);
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
			ProgressStart(cfg->table_id, g->run_ids[i], cfg->local_relid, &slot->progress);
			CycleRun(cfg, conn, &results[i]);
			ChecksRun(cfg, &results[i]);	/* a failing 'error' check fails the group */
			CycleAnalyzeIfChanged(cfg, &results[i]);
			HistoryAfterCycle(cfg);
			StageDrop();
			CatalogLockRegistration(g->cfgs[i]);
			CatalogFinishRun(g->run_ids[i], &results[i]);
			CatalogSetRunDetails(g->run_ids[i], attempt, cuts[i], results[i].drift,
								 results[i].warnings);
			ProgressEnd();
			changed |= strcmp(results[i].status, "success") == 0;
		}
		current = -1;
		CatalogFinishGroupRun(g->group_run_id, changed ? "success" : "empty", NULL);
		for (int i = 0; i < g->n; i++)
			CatalogAfterRun(g->run_ids[i]);
		SecurityEndCycle();
		commit_transaction();
		OdbcDisconnect(conn);
		error_context_stack = errcallback.previous;
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		edata = abort_after_error(cxt);
		if (conn)
			OdbcDisconnect(conn);
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
	*failed = current;
	MemoryContextDelete(attempt_cxt);
	return edata;
}

/*
 * Record a failed group cycle, in a transaction of its own: the member at
 * fault gets the error as a cycle of its own would, every other member an
 * error that names it, the group run the member's error; then the events
 * of every member.
 */
static void
fail_group(WorkerSlot *slot, GroupCycle *g, ErrorData *edata, int failed, int attempt,
		   MemoryContext cxt)
{
	char	   *text;
	const char *at = failed >= 0 ? g->cfgs[failed]->name : NULL;

	explain_lock_failure(slot, edata);
	WorkerScrubError(edata);
	if (failed >= 0)
		keep_bad_row(at, g->run_ids[failed], edata, cxt);
	text = describe_error(edata, at ? at : g->name, failed >= 0 ? g->run_ids[failed] : 0);

	start_transaction();
	for (int i = 0; i < g->n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		CatalogFailRun(g->run_ids[i], i == failed ? text :
					   at ? psprintf("group \"%s\" failed at table \"%s\"; nothing of the group's cycle was applied",
									 g->name, at) :
					   psprintf("group \"%s\" failed: %s", g->name, text));
		CatalogSetRunDetails(g->run_ids[i], attempt, i == failed ? CurrentAttempt->cut : NULL,
							 i == failed ? CurrentAttempt->drift : NULL, NULL);
	}
	if (failed >= 0)
		ChecksRecordFailed(g->run_ids[failed], at, CurrentAttempt->failed_checks);
	CatalogFinishGroupRun(g->group_run_id, "failed",
						  at ? psprintf("table \"%s\": %s", at, text) : text);
	commit_transaction();
	for (int i = 0; i < g->n; i++)
		after_failed_run(g->run_ids[i], cxt);
	ereport(LOG,
			(errmsg("treble_sync cycle of group \"%s\" failed%s%s%s: %s", g->name,
					at ? " at table \"" : "", at ? at : "", at ? "\"" : "",
					edata->message ? edata->message : "unknown error")));
}

/*
 * Transaction 2 of a group's cycle, with retries as run_cycle() has: a
 * transient error (of any member) tries the whole group again, up to its
 * first member's max_retries.
 */
static void
run_group(WorkerSlot *slot, GroupCycle *g, MemoryContext cxt)
{
	int			max_retries;
	ErrorData  *edata;
	int			failed;

	if (g->n == 0)
	{
		start_transaction();
		CatalogFinishGroupRun(g->group_run_id, "empty", NULL);
		commit_transaction();
		return;
	}
	max_retries = max_retries_for(g->cfgs[0]);
	for (int attempt = 1;; attempt++)
	{
		long		wait_ms;

		edata = attempt_group(slot, g, cxt, attempt, &failed);
		if (edata == NULL)
			return;
		if (attempt > max_retries || got_sigterm || got_sigint || !CurrentAttempt->transient)
		{
			fail_group(slot, g, edata, failed, attempt, cxt);
			return;
		}
		WorkerScrubError(edata);
		wait_ms = (long) RETRY_FIRST_WAIT_MS << Min(attempt - 1, 10);
		ereport(LOG,
				(errmsg("treble_sync cycle of group \"%s\" failed on attempt %d of %d, retrying in %ld ms: %s",
						g->name, attempt, max_retries + 1, wait_ms,
						edata->message ? edata->message : "unknown error")));
		wait_before_retry(wait_ms);
		FreeErrorData(edata);
	}
}

/* Entry point of the worker process. */
void
treble_sync_worker_main(Datum main_arg)
{
	dsm_segment *seg;
	WorkerSlot *slot;
	TableConfig *cfg;
	LOCKTAG		tag;
	MemoryContext cxt;

	worker_start_signals();
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "treble_sync worker");
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("treble_sync worker could not attach to its caller's shared memory"),
				 errdetail("The caller stopped waiting before the worker started.")));
	slot = dsm_segment_address(seg);

	worker_connect(slot->database_id, slot->session_user_id, slot->user_id);
	cxt = AllocSetContextCreate(TopMemoryContext, "treble_sync cycle",
								ALLOCSET_DEFAULT_SIZES);

	/* the caller's settings that matter in the worker */
	SetConfigOption("treble_sync.freshness_alert", psprintf("%d", slot->freshness_alert),
					PGC_SUSET, PGC_S_SESSION);
	SetConfigOption("treble_sync.run_retention", psprintf("%d", slot->run_retention),
					PGC_SUSET, PGC_S_SESSION);
	set_lock_timeout(slot->lock_timeout);
	SetConfigOption("treble_sync.read_ahead", slot->read_ahead ? "on" : "off",
					PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("treble_sync.cursor_max_lead", psprintf("%d", slot->cursor_max_lead),
					PGC_SUSET, PGC_S_SESSION);

	if (slot->group_id != 0)
	{
		GroupCycle	g;

		memset(&g, 0, sizeof(g));
		if (begin_group_run(slot, &g, cxt))
		{
			run_group(slot, &g, cxt);
			LockReleaseAll(USER_LOCKMETHOD, true);
		}
	}
	else if (begin_run(slot, &cfg, &tag, cxt))
	{
		run_cycle(slot, cfg, cxt);
		LockRelease(&tag, ExclusiveLock, true);
	}

	dsm_detach(seg);
	proc_exit(0);
}
