/*-------------------------------------------------------------------------
 *
 * history.h
 *	  Versions of a copy: the history table of a registration with
 *	  keep_history, the trigger that records every change a cycle makes,
 *	  retention, as_of()/changes() and rewind() (history.c).
 *
 * The cycle knows nothing of it: the copy's own statement triggers record
 * what changed, with the cut and the run of the attempt in progress
 * (attempt.h).  The worker calls HistoryAfterCycle() before it records a
 * run; register.c calls HistoryConfigure() and HistoryRemove().
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_HISTORY_H
#define TREBLE_SYNC_HISTORY_H

#include "postgres.h"

#include "treble_sync.h"

extern void HistoryConfigure(TableConfig *cfg, Interval *keep);
extern void HistoryRemove(TableConfig *cfg, bool drop_table);
extern void HistoryAfterCycle(TableConfig *cfg);
extern void HistoryCheckAlter(TableConfig *before, TableConfig *after);

#endif							/* TREBLE_SYNC_HISTORY_H */
