/*-------------------------------------------------------------------------
 *
 * recovery.h
 *	  Refusing work on a standby (recovery.c).
 *
 * Every SQL entry point that starts or changes work calls
 * RecoveryRequirePrimary() first, the C ones directly and the PL/pgSQL
 * ones through treble_sync.require_primary(): a standby can neither write
 * nor start a cycle's background worker, so it must say so at once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_RECOVERY_H
#define TREBLE_SYNC_RECOVERY_H

#include "postgres.h"

extern void RecoveryRequirePrimary(const char *funcname);

#endif							/* TREBLE_SYNC_RECOVERY_H */
