/*-------------------------------------------------------------------------
 *
 * lockwait.h
 *	  Who keeps a cycle's worker waiting for a lock (lockwait.c).
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

/* Room for the blockers' description handed to the worker. */
#define LOCKWAIT_BLOCKERS_LEN 256

extern bool LockWaitBlockers(int worker_pid, bool *blocked_by_me, char *blockers,
							 size_t size);

#endif							/* TREBLE_SYNC_LOCKWAIT_H */
