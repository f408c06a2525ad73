/*-------------------------------------------------------------------------
 *
 * attempt.c
 *	  The state of one attempt at a cycle, begun and read by the worker,
 *	  noted by the modules that learn it (see attempt.h).
 *
 * One struct instead of a "last X" static in each module: a new attempt
 * starts from a zeroed struct in a fresh memory context, so nothing of an
 * earlier attempt can be left behind by a forgotten reset.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "attempt.h"

CycleAttempt *CurrentAttempt = NULL;

/*
 * Begin an attempt, forgetting the previous one.  Its state lives in a
 * child of parent, which must outlive the attempt's transactions.
 */
CycleAttempt *
AttemptBegin(MemoryContext parent)
{
	MemoryContext cxt;

	Assert(parent != NULL);
	AttemptEnd();
	cxt = AllocSetContextCreate(parent, "treble_sync attempt state",
								ALLOCSET_SMALL_SIZES);
	CurrentAttempt = MemoryContextAllocZero(cxt, sizeof(CycleAttempt));
	CurrentAttempt->cxt = cxt;
	return CurrentAttempt;
}

/* Forget the attempt and its state. */
void
AttemptEnd(void)
{
	if (CurrentAttempt == NULL)
		return;
	MemoryContextDelete(CurrentAttempt->cxt);
	CurrentAttempt = NULL;
}

/* A copy of a text in the attempt's memory, replacing *field. */
static void
note_text(char **field, const char *value)
{
	Assert(CurrentAttempt != NULL);
	if (*field)
		pfree(*field);
	*field = value ? MemoryContextStrdup(CurrentAttempt->cxt, value) : NULL;
}

/*
 * The run the attempt belongs to: the history of a copy records its
 * changes under it (history.c), and refuses changes made outside a run.
 */
void
AttemptNoteRun(int64 run_id)
{
	if (CurrentAttempt)
		CurrentAttempt->run_id = run_id;
}

/* The cut frozen: the run log keeps it even for a failed run. */
void
AttemptNoteCut(const char *cut)
{
	if (CurrentAttempt)
		note_text(&CurrentAttempt->cut, cut);
}

/* The schema drift seen: the run log keeps it even for a failed run. */
void
AttemptNoteDrift(const char *drift)
{
	if (CurrentAttempt)
		note_text(&CurrentAttempt->drift, drift);
}

/* Results of the checks that failed the cycle, recorded with the failure. */
void
AttemptNoteFailedChecks(const char *json)
{
	if (CurrentAttempt)
		note_text(&CurrentAttempt->failed_checks, json);
}

/*
 * Whether an attempt that failed with this error is worth another, decided
 * from its SQLSTATE alone, for every error a cycle meets: the warehouse's
 * (odbc.c gives each the SQLSTATE that says what it is), the reader's
 * (forwarded whole) and the copy's.  The cycle runner asks, and retries
 * only while the process was not cancelled or terminated itself (a cancel
 * is 57014 too).  docs/reliability.md lists the same table.
 *
 * Retried: what passes with time.
 *	- class 08: the connection was refused or lost (the driver's own
 *	  class-08 SQLSTATE; ClickHouse's network failures as 08001; a reader
 *	  that exited without a word, 08006);
 *	- 57014: a timeout (the driver's HYT00, HYT01, HY008, HY018, or
 *	  psqlODBC's server-side statement timeout);
 *	- 57P01, 57P02, 57P03: the warehouse shut down, crashed or is starting;
 *	- 40P01: a deadlock, whose victim this attempt was;
 *	- class 53: insufficient resources (disk full, out of memory, too many
 *	  connections), here or on the warehouse.
 * Not retried: everything else, and notably
 *	- class 28: the warehouse refused the login (a retry counts against its
 *	  lockout policy);
 *	- HV00N: a connection that cannot be made as configured (TLS and
 *	  certificates, a DSN or SQLite file missing, ClickHouse TLS settings);
 *	- 40001: the registration changed while the cycle ran (the next cycle
 *	  runs with the new one);
 *	- 55P03: a lock not had within treble_sync.lock_timeout;
 *	- 57000: a process of the cycle (its reader) was stopped.
 */
bool
AttemptErrorIsTransient(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_CONNECTION_EXCEPTION:	/* class 08 */
		case ERRCODE_INSUFFICIENT_RESOURCES:	/* class 53 */
			return true;
		default:
			break;
	}
	switch (sqlerrcode)
	{
		case ERRCODE_QUERY_CANCELED:
		case ERRCODE_ADMIN_SHUTDOWN:
		case ERRCODE_CRASH_SHUTDOWN:
		case ERRCODE_CANNOT_CONNECT_NOW:
		case ERRCODE_T_R_DEADLOCK_DETECTED:
			return true;
		default:
			return false;
	}
}

/* The chunk being loaded (NULL: none), for recording its failure. */
void
AttemptNoteChunk(const LoadChunk *chunk)
{
	if (CurrentAttempt == NULL)
		return;
	if (chunk)
		CurrentAttempt->chunk = *chunk;
	else
		memset(&CurrentAttempt->chunk, 0, sizeof(LoadChunk));
}

/*
 * The row that fails the cycle (on_bad_row 'fail'), for the worker to keep
 * in the quarantine with the failed run.  False outside an attempt (a
 * chunk helper's, or none): then nobody will keep it.
 */
bool
AttemptNoteBadRow(const char *key, const char *column, const char *raw,
				  const char *reason, const char *cursor)
{
	AttemptBadRow *row;

	Assert(reason != NULL);
	if (CurrentAttempt == NULL)
		return false;
	row = MemoryContextAllocZero(CurrentAttempt->cxt, sizeof(AttemptBadRow));
	note_text(&row->key, key);
	note_text(&row->column, column);
	note_text(&row->raw, raw);
	note_text(&row->reason, reason);
	note_text(&row->cursor, cursor);
	CurrentAttempt->bad_row = row;
	return true;
}
