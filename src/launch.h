/*-------------------------------------------------------------------------
 *
 * launch.h
 *	  The caller's side of a cycle: starting the worker that runs it,
 *	  waiting for it, and watching what it waits for (launch.c).
 *
 * The SQL entry points (sync.c, verify.c) start cycles only through here.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_LAUNCH_H
#define TREBLE_SYNC_LAUNCH_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/timestamp.h"

extern int64 LaunchCycle(int32 table_id, bool full);
extern int64 LaunchGroup(int32 group_id, int32 first_table_id);
extern int64 LaunchRepair(int32 table_id, Timestamp day);
extern List *LaunchCycles(List *table_ids, int max_parallel);
extern List *LaunchGroups(List *group_ids, List *first_table_ids);

#endif							/* TREBLE_SYNC_LAUNCH_H */
