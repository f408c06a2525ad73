/*-------------------------------------------------------------------------
 *
 * testhook.h
 *	  Holding a cycle at a phase, for tests (testhook.c).
 *
 * Depends on nothing of treble_sync's: progress.c calls TestHookPause()
 * as a cycle enters each phase, and _PG_init() defines the setting.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_TESTHOOK_H
#define TREBLE_SYNC_TESTHOOK_H

#include "postgres.h"

/* Room for the setting's value in the caller's slot, and its name. */
#define TESTHOOK_PHASE_LEN 32
#define TESTHOOK_SETTING "treble_sync.test_pause_at"

extern void TestHookDefineSetting(void);
extern void TestHookPause(const char *phase, int32 table_id);

#endif							/* TREBLE_SYNC_TESTHOOK_H */
