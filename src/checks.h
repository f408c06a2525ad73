/*-------------------------------------------------------------------------
 *
 * checks.h
 *	  Quality checks run inside a cycle before it commits (checks.c).
 *
 * add_check() and drop_check() are SQL-callable and need no declaration.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_CHECKS_H
#define TREBLE_SYNC_CHECKS_H

#include "postgres.h"

#include "treble_sync.h"

extern void ChecksRun(TableConfig *cfg, CycleResult *result);
extern void ChecksRecordFailed(int64 run_id, const char *table_name, const char *json);

#endif							/* TREBLE_SYNC_CHECKS_H */
