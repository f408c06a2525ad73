/*-------------------------------------------------------------------------
 *
 * launch.c
 *	  Starting the background workers of cycles and waiting for them, in
 *	  the calling session (sync_table(), resync(), repair(), sync_all(),
 *	  sync_group()).
 *
 * The calling session puts the cycles to run in a queue, in a DSM segment
 * (WorkerQueue, worker.h) with the database, its roles and its settings,
 * and registers up to max_parallel workers (waiting for a free slot up to
 * treble_sync.worker_start_timeout), which take the cycles one after
 * another, each in transactions of its own, until none is left; then it
 * waits for them to exit.  One cycle (sync_table()) is a queue of one.
 * While it waits it honours interrupts, reports a lone cycle's progress as
 * NOTICEs, and looks at whatever lock a worker waits for: one this session
 * holds would never be released.  A cycle whose worker exited without
 * recording its end gets its run failed here; cycles left in the queue by
 * workers that exited get workers of their own.
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
watch_lock_wait(BackgroundWorkerHandle *handle, WorkerSlot *slot)
{
	pid_t		pid;
	bool		mine;
	char		blockers[LOCKWAIT_BLOCKERS_LEN];
	int32		table_id = slot->table_id;

	if (table_id == 0 || GetBackgroundWorkerPid(handle, &pid) != BGWH_STARTED ||
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

/* The workers of one launch, and the queue they share. */
typedef struct Launch
{
	dsm_segment *seg;
	WorkerQueue *queue;
	WorkerSlot *slots;			/* one per worker */
	BackgroundWorkerHandle **handles;
	bool	   *running;
	bool	   *ever_started;
	uint32	   *taken_at_start; /* items taken when each worker last started */
	int			nworkers;
	int			active;
	int			started;		/* workers started in all */
} Launch;

/*
 * Put the cycles (tables, or groups with their first members) in a queue
 * for up to nworkers workers, with the caller's settings.
 */
static void
launch_create(Launch *l, List *table_ids, List *group_ids, int nworkers, bool full,
			  Timestamp repair_day)
{
	shm_toc_estimator e;
	shm_toc    *toc;
	int			n = list_length(table_ids);
	Size		queue_size;
	WorkerQueue *q;

	Assert(n > 0 && nworkers > 0 && (group_ids == NIL || list_length(group_ids) == n));
	nworkers = Min(nworkers, n);
	queue_size = add_size(offsetof(WorkerQueue, items), mul_size(n, sizeof(WorkerItem)));
	shm_toc_initialize_estimator(&e);
	shm_toc_estimate_chunk(&e, queue_size);
	shm_toc_estimate_chunk(&e, mul_size(nworkers, sizeof(WorkerSlot)));
	shm_toc_estimate_keys(&e, 2);
	memset(l, 0, sizeof(*l));
	l->seg = dsm_create(shm_toc_estimate(&e), 0);
	toc = shm_toc_create(WORKER_SLOT_MAGIC, dsm_segment_address(l->seg),
						 dsm_segment_map_length(l->seg));
	q = shm_toc_allocate(toc, queue_size);
	memset(q, 0, queue_size);
	q->database_id = MyDatabaseId;
	q->session_user_id = GetSessionUserId();
	q->user_id = GetUserId();
	q->full = full;
	q->repair_day = repair_day;
	q->freshness_alert = treble_sync_freshness_alert;
	q->run_retention = treble_sync_run_retention;
	q->lock_timeout = treble_sync_lock_timeout;
	q->read_ahead = treble_sync_read_ahead;
	q->cursor_max_lead = treble_sync_cursor_max_lead;
	strlcpy(q->test_pause_at, GetConfigOption(TESTHOOK_SETTING, false, false),
			sizeof(q->test_pause_at));
	q->nworkers = nworkers;
	q->nitems = n;
	pg_atomic_init_u32(&q->next, 0);
	pg_atomic_init_u32(&q->taken, 0);
	for (int i = 0; i < n; i++)
	{
		pg_atomic_init_u32(&q->items[i].state, WORKER_ITEM_QUEUED);
		q->items[i].table_id = list_nth_int(table_ids, i);
		q->items[i].group_id = group_ids ? list_nth_int(group_ids, i) : 0;
		Assert(q->items[i].table_id > 0);
	}
	shm_toc_insert(toc, WORKER_QUEUE_KEY, q);
	l->slots = shm_toc_allocate(toc, mul_size(nworkers, sizeof(WorkerSlot)));
	memset(l->slots, 0, mul_size(nworkers, sizeof(WorkerSlot)));
	shm_toc_insert(toc, WORKER_SLOTS_KEY, l->slots);
	l->queue = q;
	l->nworkers = nworkers;
	l->handles = palloc0(sizeof(BackgroundWorkerHandle *) * nworkers);
	l->running = palloc0(sizeof(bool) * nworkers);
	l->ever_started = palloc0(sizeof(bool) * nworkers);
	l->taken_at_start = palloc0(sizeof(uint32) * nworkers);
}

/* How many cycles the workers have taken from the queue. */
static uint32
launch_taken(Launch *l)
{
	return pg_atomic_read_u32(&l->queue->taken);
}

/*
 * Start worker w of a launch, waiting up to wait_ms for a free background
 * worker slot.  False if none came free.
 */
static bool
launch_start(Launch *l, int w, int wait_ms)
{
	BackgroundWorker bgw;
	WorkerItem *first = &l->queue->items[0];

	Assert(w >= 0 && w < l->nworkers && !l->running[w]);
	ProcessDescribe(&bgw, "treble_sync_worker_main",
					l->queue->nitems > 1 ? psprintf("treble_sync cycles of %d tables", l->queue->nitems) :
					first->group_id ? psprintf("treble_sync cycle of group id %d", first->group_id) :
					psprintf("treble_sync cycle of table id %d", first->table_id));
	bgw.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(l->seg));
	memcpy(bgw.bgw_extra, &w, sizeof(w));
	if (!register_worker_waiting(&bgw, &l->handles[w], wait_ms))
		return false;
	l->running[w] = true;
	l->ever_started[w] = true;
	l->taken_at_start[w] = launch_taken(l);
	l->active++;
	l->started++;
	return true;
}

/* If the caller stops waiting (an error, a cancel), stop its workers. */
static void
terminate_launch_on_exit(int code, Datum arg)
{
	Launch	   *l = (Launch *) DatumGetPointer(arg);

	for (int w = 0; w < l->nworkers; w++)
		if (l->running[w])
			TerminateBackgroundWorker(l->handles[w]);
}

/*
 * Start the workers and wait until the queue is done: a worker per slot
 * while cycles are left to take, the first one waiting up to
 * treble_sync.worker_start_timeout for a free background worker slot, the
 * others started as slots come free.  A worker that exited with cycles
 * left (it was terminated, or it handed back cycles needing ClickHouse TLS
 * settings its process cannot have) is started again if it took one since
 * it last started: one that takes none is not, so the wait ends.  With notices,
 * the progress of the lone worker is reported every PROGRESS_NOTICE_SECS.
 */
static void
launch_run(Launch *l, bool notices)
{
	TimestampTz last_notice = GetCurrentTimestamp();

	PG_ENSURE_ERROR_CLEANUP(terminate_launch_on_exit, PointerGetDatum(l));
	{
		for (;;)
		{
			uint32		taken = launch_taken(l);

			for (int w = 0; w < l->nworkers && taken < (uint32) l->queue->nitems; w++)
			{
				if (l->running[w] || l->active >= (int) (l->queue->nitems - taken))
					continue;
				if (l->ever_started[w] && l->taken_at_start[w] == taken)
					continue;
				if (!launch_start(l, w, l->active == 0 ? treble_sync_worker_start_timeout : 0))
					break;
			}
			if (l->active == 0)
				break;

			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 1000L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();

			for (int w = 0; w < l->nworkers; w++)
			{
				pid_t		pid;

				if (!l->running[w])
					continue;
				watch_lock_wait(l->handles[w], &l->slots[w]);
				switch (GetBackgroundWorkerPid(l->handles[w], &pid))
				{
					case BGWH_STOPPED:
						l->running[w] = false;
						l->active--;
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

			if (notices && treble_sync_progress_notices &&
				TimestampDifferenceExceeds(last_notice, GetCurrentTimestamp(),
										   PROGRESS_NOTICE_SECS * 1000))
			{
				ProgressState snapshot = l->slots[0].progress;

				notice_progress(&snapshot);
				last_notice = GetCurrentTimestamp();
			}
		}
	}
	PG_END_ENSURE_ERROR_CLEANUP(terminate_launch_on_exit, PointerGetDatum(l));
}

/*
 * After the workers exited: fail a table's run (or a group's) they left
 * 'running' (SIGKILL, a crash).
 */
static void
fail_left_running(WorkerItem *item)
{
	if (item->run_id == 0)
		return;
	if (item->group_id != 0)
		CatalogFailGroupRunIfRunning(item->run_id,
									 "the worker exited before finishing the group's cycle; nothing of it was applied");
	else if (CatalogRunIsRunning(item->run_id))
		CatalogFailRun(item->run_id, "the worker exited before finishing the cycle; nothing of it was applied");
}

/*
 * Run one cycle of a table (or of a group: table_id is its first member)
 * in a background worker and wait for it.  Returns the run id of its
 * run-log row (of a group: its group run, which every member's run row
 * names).
 */
static int64
launch_one(int32 table_id, int32 group_id, bool full, Timestamp repair_day)
{
	Launch		l;
	WorkerItem	item;

	require_committed_registration(table_id);
	launch_create(&l, list_make1_int(table_id), group_id ? list_make1_int(group_id) : NIL, 1,
				  full, repair_day);
	launch_run(&l, true);
	item.table_id = l.queue->items[0].table_id;
	item.group_id = l.queue->items[0].group_id;
	item.run_id = l.queue->items[0].run_id;
	dsm_detach(l.seg);
	if (l.started == 0)
	{
		if (group_id != 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("no background worker slot came free for the group's cycle within treble_sync.worker_start_timeout (%d ms)",
							treble_sync_worker_start_timeout),
					 errhint("Raise max_worker_processes, or run fewer cycles at once.")));
		return log_unstarted_run(table_id, treble_sync_worker_start_timeout);
	}
	fail_left_running(&item);
	if (item.run_id == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg(group_id ? "the treble_sync worker exited before starting the group's cycle" :
						"the treble_sync worker exited before starting the cycle"),
				 errhint("The server log has the worker's error.")));
	return item.run_id;
}

/*
 * Run one cycle of a group (first_table_id is its first member) in a
 * background worker and wait for it.  Returns the group run's id; every
 * member's run row names it.
 */
int64
LaunchGroup(int32 group_id, int32 first_table_id)
{
	Assert(group_id > 0 && first_table_id > 0);
	return launch_one(first_table_id, group_id, false, 0);
}

/*
 * Run one cycle of a table in a background worker and wait for it (full:
 * resync the table).  Returns the run id of its run-log row.
 */
int64
LaunchCycle(int32 table_id, bool full)
{
	return launch_one(table_id, 0, full, 0);
}

/* Run repair(name, day) in a background worker and wait for it. */
int64
LaunchRepair(int32 table_id, Timestamp day)
{
	return launch_one(table_id, 0, false, day);
}

/*
 * Run the queued cycles of tables (or, with group_ids, of groups, whose
 * first members table_ids are), at most max_parallel at a time, in up to
 * max_parallel workers that each take one cycle after another; one
 * cycle's failure does not stop the others.  Returns the run ids, in the
 * order of table_ids, as a List of pointers to int64 (a cycle whose worker
 * never logged a run is left out, with a WARNING).
 */
static List *
launch_queue(List *table_ids, List *group_ids, int max_parallel)
{
	Launch		l;
	List	   *run_ids = NIL;
	int			n = list_length(table_ids);
	int64	   *ids;

	if (n == 0)
		return NIL;
	launch_create(&l, table_ids, group_ids, Max(max_parallel, 1), false, 0);
	launch_run(&l, false);
	ids = palloc0(sizeof(int64) * n);
	for (int i = 0; i < n; i++)
	{
		WorkerItem *item = &l.queue->items[i];

		if (pg_atomic_read_u32(&item->state) != WORKER_ITEM_TAKEN)
		{
			/* no worker took it: none could start, or none would go on */
			if (l.started == 0 && item->group_id == 0)
				ids[i] = log_unstarted_run(item->table_id, treble_sync_worker_start_timeout);
			else
				ereport(WARNING,
						(errmsg("no treble_sync worker ran the cycle of %s id %d",
								item->group_id ? "group" : "table",
								item->group_id ? item->group_id : item->table_id),
						 errhint("The server log has the workers' errors.")));
			continue;
		}
		fail_left_running(item);
		if (item->run_id == 0)
			ereport(WARNING,
					(errmsg("the treble_sync worker of %s id %d exited before starting its cycle",
							item->group_id ? "group" : "table",
							item->group_id ? item->group_id : item->table_id),
					 errhint("The server log has the worker's error.")));
		ids[i] = item->run_id;
	}
	dsm_detach(l.seg);
	for (int i = 0; i < n; i++)
		if (ids[i] != 0)
			run_ids = lappend(run_ids, &ids[i]);
	return run_ids;
}

/*
 * Run one cycle of each table, at most max_parallel at a time, in up to
 * max_parallel workers that take the tables one after another; one
 * table's failure does not stop the others.  Returns the run ids, in the
 * order of table_ids (a table whose worker never logged a run is left
 * out, with a WARNING).
 */
List *
LaunchCycles(List *table_ids, int max_parallel)
{
	List	   *ids = NIL;
	ListCell   *lc;

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
		ids = lappend_int(ids, table_id);
	}
	return launch_queue(ids, NIL, max_parallel);
}

/*
 * Run one cycle of each group (first_table_ids: their first members), one
 * group after another, in one worker.  Returns the group runs' ids, as
 * LaunchCycles() does.
 */
List *
LaunchGroups(List *group_ids, List *first_table_ids)
{
	Assert(list_length(group_ids) == list_length(first_table_ids));
	return launch_queue(first_table_ids, group_ids, 1);
}
