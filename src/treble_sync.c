/*-------------------------------------------------------------------------
 *
 * treble_sync.c
 *	  Module entry point of treble_sync.
 *
 * treble_sync keeps a faithful, always-fresh copy of warehouse tables in
 * this database.  Nothing needs shared_preload_libraries: every cycle runs
 * in a dynamic background worker started by the session that asked for it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "treble_sync.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Claim the GUC prefix so that a misspelt treble_sync.* setting is an
 * error rather than a silently ignored placeholder.
 */
void
_PG_init(void)
{
	MarkGUCPrefixReserved(TREBLE_SYNC_EXTENSION);
}
