/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  Live progress of a cycle, readable from any session while it runs.
 *
 * A cycle runs in one transaction in a worker, so nothing it writes to the
 * catalog is visible before it ends.  Progress goes instead through
 * PostgreSQL's progress-reporting slots in the worker's backend status
 * (the ones behind pg_stat_progress_copy), which any session can read
 * without locks: the view treble_sync.progress reads them with
 * pg_stat_get_progress_info('COPY').  The command is COPY because the
 * cycle's pull is one: the staging load goes through COPY, which reports
 * its own counters in the first slots of the same array.  Ours live in the
 * upper slots, and a marker value tells them apart from an ordinary COPY.
 *
 * The same figures are copied into the worker's shared slot, if it has
 * one, so that the waiting caller can report them as NOTICEs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/progress.h"
#include "pgstat.h"
#include "utils/backend_progress.h"
#include "utils/timestamp.h"

#include "progress.h"
#include "testhook.h"

/*
 * Our slots: COPY uses 0-5.  The view in the install script reads them as
 * param11..param20 (SQL counts from 1); keep the two in step.
 */
#define PROGRESS_TABLE_ID	10
#define PROGRESS_RUN_ID		11
#define PROGRESS_PHASE		12
#define PROGRESS_CHUNK		13
#define PROGRESS_CHUNKS		14
#define PROGRESS_ROWS		15
#define PROGRESS_BYTES		16
#define PROGRESS_STARTED	17
#define PROGRESS_PHASE_AT	18
#define PROGRESS_MARKER		19
#define PROGRESS_NSLOTS		10

static ProgressState state;
static ProgressState *shared = NULL;
static bool active = false;

/* Write every slot: after a COPY began or ended, ours were wiped. */
static void
progress_publish(void)
{
	const int	index[PROGRESS_NSLOTS] = {
		PROGRESS_TABLE_ID, PROGRESS_RUN_ID, PROGRESS_PHASE, PROGRESS_CHUNK,
		PROGRESS_CHUNKS, PROGRESS_ROWS, PROGRESS_BYTES, PROGRESS_STARTED,
		PROGRESS_PHASE_AT, PROGRESS_MARKER
	};
	int64		value[PROGRESS_NSLOTS];

	if (!active)
		return;
	/* CREATE INDEX and ANALYZE of the staging rows report their own progress */
	if (MyBEEntry && MyBEEntry->st_progress_command != PROGRESS_COMMAND_COPY)
		pgstat_progress_start_command(PROGRESS_COMMAND_COPY, state.relid);
	value[0] = state.table_id;
	value[1] = state.run_id;
	value[2] = state.phase;
	value[3] = state.chunk;
	value[4] = state.chunks;
	value[5] = state.rows;
	value[6] = state.bytes;
	value[7] = state.started;
	value[8] = state.phase_at;
	value[9] = TREBLE_SYNC_MARKER;
	pgstat_progress_update_multi_param(PROGRESS_NSLOTS, index, value);
	if (shared)
		*shared = state;
}

/*
 * Start reporting the progress of a run.  copy_to, if not NULL, receives
 * a copy of every update (the worker's slot the caller reads).
 */
void
ProgressStart(int32 table_id, int64 run_id, Oid relid, ProgressState *copy_to)
{
	memset(&state, 0, sizeof(state));
	state.table_id = table_id;
	state.run_id = run_id;
	state.phase = PROGRESS_PHASE_CONNECTING;
	state.started = GetCurrentTimestamp();
	state.phase_at = state.started;
	state.relid = relid;
	shared = copy_to;
	active = true;
	pgstat_progress_start_command(PROGRESS_COMMAND_COPY, relid);
	progress_publish();
}

/*
 * Enter a phase; a test may hold the cycle there, once the view shows it
 * (treble_sync.test_pause_at).
 */
void
ProgressPhase(ProgressPhaseCode phase)
{
	state.phase = phase;
	state.phase_at = GetCurrentTimestamp();
	progress_publish();
	if (active)
		TestHookPause(ProgressPhaseName(phase), state.table_id);
}

/* Say which chunk of a chunked load is being loaded (0, 0: none). */
void
ProgressChunk(int chunk, int chunks)
{
	state.chunk = chunk;
	state.chunks = chunks;
	progress_publish();
}

/* Count rows and bytes read from the warehouse. */
void
ProgressAddRows(int64 rows, int64 bytes)
{
	state.rows += rows;
	state.bytes += bytes;
	progress_publish();
}

/*
 * Claim the progress slots again after a COPY (the staging load) began or
 * ended: each resets the whole array.
 */
void
ProgressResume(void)
{
	progress_publish();
}

/* The run is over: nothing more to show. */
void
ProgressEnd(void)
{
	if (!active)
		return;
	active = false;
	shared = NULL;
	pgstat_progress_end_command();
}

/* The name of a phase, as the view and the NOTICEs show it. */
const char *
ProgressPhaseName(ProgressPhaseCode phase)
{
	switch (phase)
	{
		case PROGRESS_PHASE_CONNECTING:
			return "connecting";
		case PROGRESS_PHASE_FREEZING:
			return "freezing the cut";
		case PROGRESS_PHASE_PLANNING:
			return "planning chunks";
		case PROGRESS_PHASE_PULLING:
			return "pulling";
		case PROGRESS_PHASE_MERGING:
			return "merging";
		case PROGRESS_PHASE_WINDOW:
			return "refreshing the hot window";
		case PROGRESS_PHASE_WAITING:
			return "waiting for chunk workers";
		case PROGRESS_PHASE_COMMITTING:
			return "committing";
	}
	return "unknown";
}
