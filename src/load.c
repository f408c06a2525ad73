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
 *		 parallel => N, N - 1 helper workers claim chunks too;
 *	  3. when every chunk is in, pull the rest (the hot window, or what lies
 *		 after the last chunk, and NULLs) as a cycle would, refresh the
 *		 window and set the watermark to T, in one transaction.
 *
 * A load that stops (error, cancel, crash) keeps its finished chunks; the
 * next sync_table() resumes with the same T and the chunks not done.
 * Until step 3 commits the table has no watermark, so nothing else treats
 * the copy as complete.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "cycle.h"
#include "load.h"
#include "progress.h"
#include "worker.h"

/* The chunk this process is loading, for error reports; 0 if none. */
static LoadChunk current_chunk;
static int	current_chunks;

/*
 * Commit the work so far and go on in a new transaction, whose now() is
 * the time it starts (a background worker has no statements to set it).
 */
static void
next_transaction(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
}

/* Error context: which chunk failed. */
static void
chunk_error_context(void *arg)
{
	if (current_chunk.chunk > 0)
		errcontext("loading chunk %d of %d (%s to %s)",
				   current_chunk.chunk, current_chunks,
				   CycleFormatTimestamp(current_chunk.lo),
				   CycleFormatTimestamp(current_chunk.hi));
}

/* The chunk whose load failed in this process, or 0. */
int
LoadCurrentChunk(void)
{
	return current_chunk.chunk;
}

/*
 * Load chunks of the table until none is left to claim, each in its own
 * committed transaction.  Run by the cycle's worker and by its helpers.
 * Starts and ends inside a transaction.
 */
void
LoadChunks(TableConfig *cfg, OdbcConn *conn, int64 run_id, Timestamp cut)
{
	ErrorContextCallback errcallback;
	int			done;

	CatalogLoadState(cfg->table_id, &current_chunks, &done, NULL);

	errcallback.callback = chunk_error_context;
	errcallback.arg = NULL;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	for (;;)
	{
		CycleResult result;

		CHECK_FOR_INTERRUPTS();
		if (!CatalogClaimChunk(cfg->table_id, &current_chunk))
			break;
		ProgressChunk(current_chunk.chunk, current_chunks);
		memset(&result, 0, sizeof(result));
		CycleLoadChunk(cfg, conn, cut, &current_chunk, &result);
		CatalogFinishChunk(cfg->table_id, current_chunk.chunk, run_id, &result);
		ProgressPhase(PROGRESS_PHASE_COMMITTING);
		next_transaction();
	}

	error_context_stack = errcallback.previous;
	memset(&current_chunk, 0, sizeof(current_chunk));
	ProgressChunk(0, 0);
}

/*
 * Run the first sync of a table registered with initial_chunk (or resume
 * one), from inside the worker's transaction.  Returns in a transaction
 * holding the last step, which the caller commits with the run's outcome;
 * result has that step's figures (the chunks' are already in the run log).
 */
void
LoadRun(TableConfig *cfg, OdbcConn *conn, int64 run_id, CycleResult *result)
{
	Timestamp	cut;
	int			chunks;
	int			done;
	char	   *error;
	List	   *volatile helpers = NIL;

	result->status = "empty";
	if (cfg->load_cut == NULL)
	{
		if (!CycleFreezeCut(cfg, conn, &cut))
			return;				/* the warehouse table has no rows yet */
		CatalogStartLoad(cfg->table_id, CycleFormatTimestamp(cut),
						 CyclePlanChunks(cfg, conn, cut));
		next_transaction();
	}
	else
		cut = CycleParseTimestamp(cfg->load_cut);	/* resume at the same T */

	CatalogLoadState(cfg->table_id, &chunks, &done, NULL);
	if (cfg->parallel > 1 && chunks - done > 1)
	{
		/* the handles outlive the transactions of the chunks */
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		helpers = WorkerStartChunkHelpers(cfg, run_id, Min(cfg->parallel - 1, chunks - done - 1));
		MemoryContextSwitchTo(old);
	}

	/*
	 * If this worker fails (or is cancelled, or terminated: that is a cancel
	 * here too), its helpers stop as well.  PG_TRY rather than
	 * PG_ENSURE_ERROR_CLEANUP: the first temporary table of the process
	 * registers an exit callback of its own inside the block.
	 */
	PG_TRY();
	{
		LoadChunks(cfg, conn, run_id, cut);
		if (helpers != NIL)
		{
			ProgressPhase(PROGRESS_PHASE_WAITING);
			WorkerWaitChunkHelpers(helpers);
		}
	}
	PG_CATCH();
	{
		WorkerStopChunkHelpers(helpers);
		PG_RE_THROW();
	}
	PG_END_TRY();

	/* a fresh snapshot: the helpers' chunks committed after ours */
	next_transaction();
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
