/*-------------------------------------------------------------------------
 *
 * group.h
 *	  Sync groups (group.c): what sync_table(), resync() and sync_all()
 *	  need to know of them.
 *
 * add_group(), alter_group(), remove_group() and sync_group() are
 * SQL-callable and need no declaration; a group's cycle is the worker's
 * (worker.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_GROUP_H
#define TREBLE_SYNC_GROUP_H

#include "postgres.h"

#include "treble_sync.h"

extern void GroupRefuseMember(TableConfig *cfg, const char *funcname);

#endif							/* TREBLE_SYNC_GROUP_H */
