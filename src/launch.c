/*-------------------------------------------------------------------------
 *
 * launch.c
 *	  Starting the background worker of a cycle and waiting for it, in the
 *	  calling session (sync_table(), resync(), repair(), sync_all()).
 *
 * The calling session registers a worker (waiting for a free slot up to
 * treble_sync.worker_start_timeout), hands it the database, its roles,
 * its settings and the table through a small DSM segment (WorkerSlot,
 * worker.h), and waits for it to exit.  While it waits it honours
 * interrupts, reports the worker's progress as NOTICEs, and looks at
 * whatever lock the worker waits for: one this session holds would never
 * be released.  A worker that exited without recording its end gets its
 * run failed here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shm_toc.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "launch.h"
#include "lockwait.h"
#include "process.h"
#include "progress.h"
#include "worker.h"

/* Seconds between two progress NOTICEs. */
#define PROGRESS_NOTICE_SECS 5

/* How often a caller with no free worker slot tries again. */
#define SLOT_RETRY_MS 200

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

	shm_toc_estimator e;
	shm_toc    *toc;

	Assert(!run->running && run->seg == NULL && run->table_id > 0);
	shm_toc_initialize_estimator(&e);
	shm_toc_estimate_chunk(&e, sizeof(WorkerSlot));
	shm_toc_estimate_keys(&e, 1);
	run->seg = dsm_create(shm_toc_estimate(&e), 0);
	toc = shm_toc_create(WORKER_SLOT_MAGIC, dsm_segment_address(run->seg),
						 dsm_segment_map_length(run->seg));
	run->slot = shm_toc_allocate(toc, sizeof(WorkerSlot));
	memset(run->slot, 0, sizeof(WorkerSlot));
	shm_toc_insert(toc, WORKER_SLOT_KEY, run->slot);
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
	strlcpy(run->slot->test_pause_at, GetConfigOption(TESTHOOK_SETTING, false, false),
			sizeof(run->slot->test_pause_at));

	ProcessDescribe(&bgw, "treble_sync_worker_main",
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
	Assert(run->running && run->seg != NULL);
	run->run_id = run->slot->run_id;
	run->running = false;
	dsm_detach(run->seg);
	run->seg = NULL;
	if (run->run_id != 0 && CatalogRunIsRunning(run->run_id))
		CatalogFailRun(run->run_id, "the worker exited before finishing the cycle; nothing of it was applied");
	return run->run_id;
}

/*
 * Run one cycle of a group (first_table_id is its first member) in a
 * background worker and wait for it.  Returns the group run's id; every
 * member's run row names it.
 */
int64
LaunchGroup(int32 group_id, int32 first_table_id)
{
	WorkerRun	run;
	BgwHandleStatus status;
	pid_t		pid;

	Assert(group_id > 0 && first_table_id > 0);
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
	run.running = false;
	dsm_detach(run.seg);
	run.seg = NULL;
	if (run.run_id == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the treble_sync worker exited before starting the group's cycle"),
				 errhint("The server log has the worker's error.")));
	CatalogFailGroupRunIfRunning(run.run_id,
								 "the worker exited before finishing the group's cycle; nothing of it was applied");
	return run.run_id;
}

/*
 * Run one cycle of a table in a background worker and wait for it (full:
 * resync the table).  Returns the run id of its run-log row.
 */
int64
LaunchCycle(int32 table_id, bool full)
{
	return run_one(table_id, full, 0);
}

/* Run repair(name, day) in a background worker and wait for it. */
int64
LaunchRepair(int32 table_id, Timestamp day)
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

/* The runs of LaunchCycles(), for the cleanup of an interrupted wait. */
typedef struct LaunchSet
{
	WorkerRun  *runs;
	int			n;
} LaunchSet;

/* If the caller of sync_all() stops waiting, stop the running workers. */
static void
terminate_workers_on_exit(int code, Datum arg)
{
	LaunchSet *set = (LaunchSet *) DatumGetPointer(arg);

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
LaunchCycles(List *table_ids, int max_parallel)
{
	LaunchSet set;
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
