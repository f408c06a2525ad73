/*-------------------------------------------------------------------------
 *
 * testhook.c
 *	  Holding a cycle at a phase, for tests: treble_sync.test_pause_at.
 *
 * Set to a phase of the view treble_sync.progress, the setting makes the
 * worker of every cycle the session starts wait, as it enters that phase,
 * for the advisory lock pg_advisory_lock(table_id) takes on the table's
 * registration id: a test holds that lock in another session, starts the
 * cycle, sees the worker wait in pg_locks (or the phase in the progress
 * view), does what it tests against the paused cycle, and releases the
 * lock to let the cycle go on.  The wait is an ordinary lock wait: the
 * worker sleeps on its latch, answers cancel and terminate, counts
 * towards treble_sync.lock_timeout, and the deadlock detector sees it.
 *
 * Only superusers may set it (PGC_SUSET, and never in postgresql.conf): a
 * session with it set lets whoever takes that advisory lock hold its
 * cycles for up to treble_sync.lock_timeout.  The worker takes it over
 * from the caller through its slot, as the caller's other settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/guc.h"

#include "testhook.h"

/*
 * The phases a cycle can be held at, named as the view treble_sync.progress
 * names them (src/progress.c's ProgressPhaseName() and the view must agree).
 */
static const struct config_enum_entry pause_phases[] = {
	{"", 0, true},				/* none; hidden from the hint */
	{"freezing the cut", 1, false},
	{"planning chunks", 2, false},
	{"pulling", 3, false},
	{"merging", 4, false},
	{"refreshing the hot window", 5, false},
	{"waiting for chunk workers", 6, false},
	{"committing", 7, false},
	{NULL, 0, false}
};

/* treble_sync.test_pause_at: the index of its phase in pause_phases; 0 none */
static int	test_pause_at = 0;

/* Define treble_sync.test_pause_at; called once, by _PG_init(). */
void
TestHookDefineSetting(void)
{
	DefineCustomEnumVariable(TESTHOOK_SETTING,
							 "For tests: hold every cycle this session starts as it enters this phase.",
							 "The cycle's worker waits there until no other session holds "
							 "pg_advisory_lock(table_id) of the table; empty holds nothing.",
							 &test_pause_at,
							 0,
							 pause_phases,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							 NULL, NULL, NULL);
}

/*
 * A cycle of table table_id enters phase: if it is the phase of
 * treble_sync.test_pause_at, wait until the lock pg_advisory_lock(table_id)
 * takes is free.  A session lock, so that it works in and out of a
 * transaction; released at once, so that the next phase is not held.
 */
void
TestHookPause(const char *phase, int32 table_id)
{
	LOCKTAG		tag;

	Assert(phase != NULL);
	Assert(test_pause_at >= 0 && test_pause_at < (int) lengthof(pause_phases) - 1);
	if (test_pause_at == 0 || strcmp(pause_phases[test_pause_at].name, phase) != 0)
		return;
	Assert(table_id > 0);

	ereport(DEBUG1,
			(errmsg_internal("treble_sync.test_pause_at: the cycle of table id %d waits at phase \"%s\"",
							 table_id, phase)));
	/* the tag of pg_advisory_lock(bigint): high and low halves, field 1 */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, (uint32) table_id, 1);
	(void) LockAcquire(&tag, ShareLock, true, false);
	LockRelease(&tag, ShareLock, true);
}
