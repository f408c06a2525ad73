/*-------------------------------------------------------------------------
 *
 * progress.h
 *	  What a running cycle is doing, published for treble_sync.progress
 *	  and for its caller's NOTICEs (progress.c).
 *
 * One state per process; the worker starts and ends it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_PROGRESS_H
#define TREBLE_SYNC_PROGRESS_H

#include "postgres.h"

#include "treble_sync.h"
#include "utils/timestamp.h"

/* Phases of a run; the view treble_sync.progress names them the same way. */
typedef enum ProgressPhaseCode
{
	PROGRESS_PHASE_CONNECTING = 1,
	PROGRESS_PHASE_FREEZING,
	PROGRESS_PHASE_PLANNING,
	PROGRESS_PHASE_PULLING,
	PROGRESS_PHASE_MERGING,
	PROGRESS_PHASE_WINDOW,
	PROGRESS_PHASE_WAITING,
	PROGRESS_PHASE_COMMITTING
} ProgressPhaseCode;

typedef struct ProgressState
{
	int32		table_id;
	int64		run_id;
	ProgressPhaseCode phase;
	int			chunk;			/* chunk being loaded, from 1; 0 if none */
	int			chunks;			/* chunks of the load; 0 if not chunked */
	int64		rows;			/* read from the warehouse by this process */
	int64		bytes;
	TimestampTz started;
	TimestampTz phase_at;
	Oid			relid;			/* the local table */
} ProgressState;

extern void ProgressStart(int32 table_id, int64 run_id, Oid relid, ProgressState *copy_to);
extern void ProgressPhase(ProgressPhaseCode phase);
extern void ProgressChunk(int chunk, int chunks);
extern void ProgressAddRows(int64 rows, int64 bytes);
extern void ProgressResume(void);
extern void ProgressEnd(void);
extern const char *ProgressPhaseName(ProgressPhaseCode phase);

#endif							/* TREBLE_SYNC_PROGRESS_H */
