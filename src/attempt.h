/*-------------------------------------------------------------------------
 *
 * attempt.h
 *	  The state of one attempt at a cycle: what the steps learn on the way
 *	  that the worker still needs after the attempt's transaction rolled
 *	  back (attempt.c).
 *
 * The worker begins an attempt before each try (and a chunk helper before
 * its one), which forgets everything of the previous one at once; the
 * modules note what they learn here, and the worker reads it when it
 * records the run.  Outside an attempt (an SQL function in a session)
 * nothing is noted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_ATTEMPT_H
#define TREBLE_SYNC_ATTEMPT_H

#include "postgres.h"

#include "treble_sync.h"

/*
 * The row that failed a cycle under on_bad_row 'fail', kept (in the
 * attempt's memory) for the quarantine: the run's error names only its
 * position, as its key and values may not go where the run log goes.
 */
typedef struct AttemptBadRow
{
	char	   *key;			/* as the quarantine writes it; NULL if none */
	char	   *column;			/* the column at fault, or NULL */
	char	   *raw;			/* its raw value, "(masked)", or NULL */
	char	   *reason;			/* PostgreSQL's message, as it was */
	char	   *cursor;			/* the row's cursor value, or NULL */
} AttemptBadRow;

typedef struct CycleAttempt
{
	MemoryContext cxt;			/* outlives the attempt's transactions */
	char	   *cut;			/* the cut frozen, as catalog text, or NULL */
	char	   *drift;			/* the schema drift seen, or NULL */
	char	   *failed_checks;	/* results (JSON) of checks that failed it */
	LoadChunk	chunk;			/* the chunk being loaded; chunk 0 if none */
	int64		run_id;			/* the run this attempt belongs to */
	AttemptBadRow *bad_row;		/* the row that failed it, or NULL */
} CycleAttempt;

/* The attempt under way in this process, or NULL. */
extern PGDLLIMPORT CycleAttempt *CurrentAttempt;

extern CycleAttempt *AttemptBegin(MemoryContext parent);
extern void AttemptEnd(void);
extern void AttemptNoteRun(int64 run_id);
extern void AttemptNoteCut(const char *cut);
extern void AttemptNoteDrift(const char *drift);
extern void AttemptNoteFailedChecks(const char *json);
extern bool AttemptErrorIsTransient(int sqlerrcode);
extern void AttemptNoteChunk(const LoadChunk *chunk);
extern bool AttemptNoteBadRow(const char *key, const char *column, const char *raw,
							  const char *reason, const char *cursor);

#endif							/* TREBLE_SYNC_ATTEMPT_H */
