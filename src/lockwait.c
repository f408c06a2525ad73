/*-------------------------------------------------------------------------
 *
 * lockwait.c
 *	  Who keeps a cycle's worker waiting for a lock (see lockwait.h).
 *
 * A blocker is described by what pg_stat_activity shows every role of
 * every session: its process id and its role.  Never its query, its
 * client address or its transaction's age, which only the blocker's own
 * role and pg_read_all_stats may see: the description goes into the run
 * log, whose readers are the copy's readers, not the blocker's peers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/fmgrprotos.h"
#include "utils/wait_event.h"

#include "lockwait.h"
#include "treble_sync.h"

/* Tell our locks from users' advisory locks in pg_locks. */
#define CYCLE_LOCK_KIND 3		/* advisory locks use 1 and 2 */
#define QUARANTINE_LOCK_KIND 4

/* The lock tag of a table's cycle lock. */
void
LockWaitCycleTag(LOCKTAG *tag, int32 table_id)
{
	Assert(table_id > 0);
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, TREBLE_SYNC_MARKER, (uint32) table_id,
						 CYCLE_LOCK_KIND);
}

/*
 * Take a table's cycle lock until the end of the transaction, if no cycle
 * holds it: remove_table() must not pull a registration from under one.
 */
bool
LockWaitTryCycleLock(int32 table_id)
{
	LOCKTAG		tag;

	LockWaitCycleTag(&tag, table_id);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Take a table's quarantine lock until the end of the transaction: the
 * workers of one chunked load keep the rows that failed them, each in a
 * short transaction of its own after its rollback, and two of them keeping
 * the same row must find each other's (the second updates the first's
 * quarantine row instead of adding one).  The statement after the lock
 * sees what the last holder committed.  Never taken by a transaction that
 * loads rows: it would hold the lock until its chunk commits.
 */
void
LockWaitQuarantineLock(int32 table_id)
{
	LOCKTAG		tag;

	Assert(table_id > 0);
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, TREBLE_SYNC_MARKER, (uint32) table_id,
						 QUARANTINE_LOCK_KIND);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Is the process worker_pid waiting for a heavyweight lock?  Read without
 * a lock: a torn read only delays the answer to the next look.
 */
static bool
waits_for_lock(int worker_pid)
{
	PGPROC	   *proc = BackendPidGetProc(worker_pid);

	return proc != NULL && (proc->wait_event_info & 0xFF000000) == PG_WAIT_LOCK;
}

/* One blocker as the run log names it: process id and role. */
static void
describe_blocker(StringInfo buf, int pid)
{
	PGPROC	   *proc = pid != 0 ? BackendPidGetProc(pid) : NULL;
	const char *role = proc && OidIsValid(proc->roleId) ?
		GetUserNameFromId(proc->roleId, true) : NULL;

	if (buf->len > 0)
		appendStringInfoString(buf, ", ");
	if (pid == 0)
		appendStringInfoString(buf, "a prepared transaction");
	else if (role)
		appendStringInfo(buf, "process %d (role \"%s\")", pid, role);
	else
		appendStringInfo(buf, "process %d", pid);
}

/*
 * If the worker worker_pid waits for a lock, set *blocked_by_me when this
 * session holds it, describe the other holders (and waiters ahead of it)
 * into blockers, and return true.  False if it waits for no lock.
 */
bool
LockWaitBlockers(int worker_pid, bool *blocked_by_me, char *blockers, size_t size)
{
	ArrayType  *pids;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	StringInfoData buf;

	*blocked_by_me = false;
	if (worker_pid == 0 || !waits_for_lock(worker_pid))
		return false;

	pids = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids,
												  Int32GetDatum(worker_pid)));
	deconstruct_array(pids, INT4OID, sizeof(int32), true, TYPALIGN_INT, &elems, &nulls, &n);
	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
	{
		int			pid = DatumGetInt32(elems[i]);

		if (pid == MyProcPid)
			*blocked_by_me = true;
		else
			describe_blocker(&buf, pid);
	}
	if (n > 0)
		strlcpy(blockers, buf.data, size);
	pfree(buf.data);
	return n > 0;
}
