/*-------------------------------------------------------------------------
 *
 * load.c
 *	  Chunked first loads: a large first sync in many short transactions
 *	  that can stop and resume, optionally in parallel workers.
 *
 * A table registered with initial_chunk is first synced as follows:
 *
 *	  1. freeze the cut T once, plan chunks of the event column (else the
 *		 cursor) from its smallest value to the hot window's bound, each
 *		 initial_chunk wide, and commit T and the chunks to the catalog
 *		 (treble_sync.tables.load_cut, treble_sync.load_chunks);
 *	  2. load the chunks, each in a transaction of its own that also marks
 *		 it done: rows with cursor <= T and lo <= column < hi.  With
 *		 parallel => N, N - 1 helper workers claim chunks too (worker.c
 *		 starts them: this file starts no process);
 *	  3. when every chunk is in, pull the rest (the hot window, or what lies
 *		 after the last chunk, and NULLs) as a cycle would, refresh the
 *		 window and set the watermark to T, in one transaction.
 *
 * A load that stops (error, cancel, crash) keeps its finished chunks; the
 * next sync_table() resumes with the same T and the chunks not done.
 * Until step 3 commits the table has no watermark, so nothing else treats
 * the copy as complete.
 *
 * This file begins and ends no transaction: where a load must commit (the
 * plan, each chunk, before the last step) it calls the cycle runner's
 * LoadCommitFunc, which commits and goes on in a new transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "attempt.h"
#include "catalog.h"
#include "cursor.h"
#include "cycle.h"
#include "load.h"
#include "progress.h"
#include "security.h"


/* What the error context of a chunk's load names. */
typedef struct ChunkContext
{
	LoadChunk	chunk;			/* chunk 0: none */
	int			chunks;
} ChunkContext;

/* Error context: which chunk failed. */
static void
chunk_error_context(void *arg)
{
	ChunkContext *c = arg;

	if (c->chunk.chunk > 0)
		errcontext("loading chunk %d of %d (%s to %s)",
				   c->chunk.chunk, c->chunks,
				   CursorFormatTimestamp(c->chunk.lo),
				   CursorFormatTimestamp(c->chunk.hi));
}

/*
 * Load chunks of the table until none is left to claim, each in its own
 * transaction, committed by commit.  Run by the cycle's worker and by its
 * helpers.  Starts and ends inside a transaction.  The chunk being loaded is noted
 * in the attempt, so that a helper can record which one failed.
 */
void
LoadChunks(TableConfig *cfg, OdbcConn *conn, int64 run_id, Timestamp cut,
		   LoadCommitFunc commit)
{
	ErrorContextCallback errcallback;
	ChunkContext current;
	int			done;

	memset(&current, 0, sizeof(current));
	CatalogLoadState(cfg->table_id, &current.chunks, &done, NULL);

	errcallback.callback = chunk_error_context;
	errcallback.arg = &current;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	for (;;)
	{
		CycleResult result;

		CHECK_FOR_INTERRUPTS();
		if (!CatalogClaimChunk(cfg->table_id, run_id, &current.chunk))
			break;
		AttemptNoteChunk(&current.chunk);	/* from its claim on, a failure is its */
		commit(cfg);			/* the claim holds even if the chunk fails */
		ProgressChunk(current.chunk.chunk, current.chunks);
		memset(&result, 0, sizeof(result));
		CycleLoadChunk(cfg, conn, cut, &current.chunk, &result);
		CatalogFinishChunk(cfg->table_id, current.chunk.chunk, run_id, &result);
		ProgressPhase(PROGRESS_PHASE_COMMITTING);
		commit(cfg);
		AttemptNoteChunk(NULL);	/* done: a failure from here is no chunk's */
	}

	error_context_stack = errcallback.previous;
	AttemptNoteChunk(NULL);
	ProgressChunk(0, 0);
}

/*
 * Begin the first sync of a table registered with initial_chunk, or resume
 * one, from inside the worker's transaction: freeze the cut and plan the
 * chunks (committed by commit), or take the cut of the load in progress.  Sets *cut
 * and *todo, the chunks not loaded yet; false if the warehouse table has
 * no rows yet.  The worker then loads the chunks (LoadChunks, with helpers
 * if it starts some) and ends with LoadFinish.
 */
bool
LoadBegin(TableConfig *cfg, OdbcConn *conn, LoadCommitFunc commit, Timestamp *cut, int *todo)
{
	int			chunks;
	int			done;

	if (cfg->load_cut == NULL)
	{
		if (!CycleFreezeCut(cfg, conn, cut))
			return false;
		CatalogStartLoad(cfg->table_id, CursorFormatTimestamp(*cut),
						 CyclePlanChunks(cfg, conn, *cut));
		commit(cfg);
	}
	else
	{
		*cut = CursorParseTimestamp(cfg->load_cut);	/* resume at the same T */
		/* what the last attempt claimed and did not load, claimed afresh */
		CatalogOpenChunks(cfg->table_id);
		commit(cfg);
	}

	CatalogLoadState(cfg->table_id, &chunks, &done, NULL);
	*todo = chunks - done;
	return true;
}

/*
 * The last step of a chunked first load, once this worker and its helpers
 * claimed every chunk: error if some failed, else pull the rest.  Returns
 * in a transaction holding that step, which the caller commits with the
 * run's outcome; result has that step's figures (the chunks' are already
 * in the run log).
 */
void
LoadFinish(TableConfig *cfg, OdbcConn *conn, LoadCommitFunc commit, Timestamp cut,
		   CycleResult *result)
{
	int			chunks;
	int			done;
	char	   *error;

	/* a fresh snapshot: the helpers' chunks committed after ours */
	commit(cfg);
	CatalogLoadState(cfg->table_id, &chunks, &done, &error);
	if (done < chunks)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("first load of \"%s\" stopped with %d of %d chunks loaded",
						cfg->name, done, chunks),
				 error ? errdetail("%s", error) : 0,
				 errhint("The loaded chunks are kept: run sync_table() again to load the rest.")));

	CycleFinishLoad(cfg, conn, cut, result);
	CatalogEndLoad(cfg->table_id);
	if (chunks > 0)
		result->status = "success";
}
