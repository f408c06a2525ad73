/*-------------------------------------------------------------------------
 *
 * lockwait.h
 *	  A table's cycle lock and quarantine lock, and who keeps a cycle's
 *	  worker waiting for a lock (lockwait.c).
 *
 * One cycle of a table runs at a time: its worker holds the table's cycle
 * lock, an advisory lock of a space of its own, which remove_table(),
 * alter_table() and rewind() also take so as not to change a registration
 * under a running cycle.
 *
 * The session waiting for a worker looks, while it waits, at what the
 * worker waits for: a lock this very session holds would never be
 * released (each would wait for the other, where PostgreSQL's deadlock
 * detector cannot see it), and a lock another session holds is named in
 * the run when the cycle gives up (treble_sync.lock_timeout).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_LOCKWAIT_H
#define TREBLE_SYNC_LOCKWAIT_H

#include "postgres.h"

#include "storage/lock.h"

/* Room for the blockers' description handed to the worker. */
#define LOCKWAIT_BLOCKERS_LEN 256

extern void LockWaitCycleTag(LOCKTAG *tag, int32 table_id);
extern bool LockWaitTryCycleLock(int32 table_id);
extern void LockWaitQuarantineLock(int32 table_id);
extern bool LockWaitBlockers(int worker_pid, bool *blocked_by_me, char *blockers,
							 size_t size);

#endif							/* TREBLE_SYNC_LOCKWAIT_H */
