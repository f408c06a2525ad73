/*-------------------------------------------------------------------------
 *
 * readahead.c
 *	  A second process that reads a large pull from the warehouse while
 *	  the cycle's worker writes it: the driver's work and the writes then
 *	  run on two cores instead of one after the other on one.
 *
 * A first load spends about half its time in the ODBC driver and in
 * turning values into COPY text, and half in COPY itself (parsing, heap,
 * indexes).  For a pull straight into an empty copy the cycle's worker
 * starts a reader: a background worker connected to the same database,
 * which reads the registration, becomes its owner inside a
 * security-restricted operation once the copy is checked to be still that
 * owner's (SecurityBeginReader), connects to the warehouse as the
 * cycle does (the owner's user mapping, the same checks), runs the
 * statement the cycle built, and sends its rows back as batches of COPY
 * text through a queue in dynamic shared memory.  The cycle's worker
 * copies each batch while the reader prepares the next.
 *
 * The reader writes nothing to the database and runs no SQL of anyone's:
 * it reads the registration and the user mapping, then only the
 * warehouse.  What it sends is checked and written by the cycle's worker
 * exactly as rows it had read itself.
 *
 * The segment is laid out with a table of contents (shm_toc) under a
 * magic number of its own: the request and the reader's flags, the pull's
 * description (wire.c's bytes), the queue of messages to the cycle's
 * worker, and a queue for the reader's error.  The reader sends its
 * protocol messages to the error queue (pq_redirect_to_shm_mq, as a
 * parallel worker or pg_cron's job worker does), so its error arrives
 * whole, with message, detail, hint, context and SQLSTATE, and the cycle's
 * worker raises it again (pq_parse_errornotice, ThrowErrorData).
 *
 * Either side stopping stops the other: an error in the reader is sent on
 * the error queue and raised by the cycle's worker as soon as it arrives;
 * the cycle's worker detaching the segment, whatever the reason (the end
 * of the pull, an error, a cancel, its exit), terminates a reader that
 * has not finished, through the segment's detach callback, and the
 * reader's next send fails.  With no worker slot free, or no second
 * warehouse connection to be had, the cycle's worker reads the pull
 * itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "libpq/pqmq.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "attempt.h"
#include "process.h"
#include "readahead.h"

/* The magic number of a reader's segment ("Trb2"). */
#define READ_AHEAD_MAGIC 0x54726232

/* The keys of the segment's table of contents. */
#define READ_AHEAD_KEY_SHARED	1	/* ReadAheadShared */
#define READ_AHEAD_KEY_PULL		2	/* the pull's description */
#define READ_AHEAD_KEY_QUEUE	3	/* the reader's messages */
#define READ_AHEAD_KEY_ERRORS	4	/* the reader's error */

/*
 * Room for rows in flight: about two batches of a 13-column table (a
 * batch is at most 10,000 rows or 8 MB).  A larger batch still goes
 * through, in pieces.
 */
#define READ_AHEAD_QUEUE_SIZE (4 * 1024 * 1024)

/*
 * Room for the reader's error.  A longer one still goes through, in
 * pieces: the cycle's worker reads the error queue while it waits.
 */
#define READ_AHEAD_ERROR_QUEUE_SIZE (16 * 1024)

/* What the reader needs besides the pull, and how it ended. */
typedef struct ReadAheadShared
{
	/* written by the cycle's worker before the reader starts */
	ReadAheadRequest request;
	Size		pull_len;		/* the length of the pull's description */
	/* written by the reader before it sends its error */
	bool		stopped;		/* it was cancelled or terminated */
} ReadAheadShared;

/*
 * The cycle's side of a reader.  It lives in TopMemoryContext and is freed
 * by the segment's detach callback, which also terminates a reader that
 * has not finished: however the worker leaves the pull (its end, an error
 * before or during it, a cancel, its own exit), no reader outlives it.
 */
struct ReadAhead
{
	dsm_segment *seg;
	ReadAheadShared *shared;
	shm_mq_handle *mqh;			/* the reader's messages */
	shm_mq_handle *errqh;		/* the reader's error */
	BackgroundWorkerHandle *handle;
	bool		finished;		/* it sent the pull's end: let it disconnect */
};

struct ReadAheadSink
{
	dsm_segment *seg;
	ReadAheadShared *shared;
	shm_mq_handle *mqh;
};

/* The segment's detach callback: see struct ReadAhead. */
static void
reader_detached(dsm_segment *seg, Datum arg)
{
	ReadAhead  *reader = (ReadAhead *) DatumGetPointer(arg);

	if (reader->handle)
	{
		if (!reader->finished)
			TerminateBackgroundWorker(reader->handle);
		pfree(reader->handle);
	}
	pfree(reader);
}

/*
 * Start a reader for a pull of cfg described by pull (wire.c's bytes).
 * NULL if no background worker slot is free: the caller reads the pull
 * itself.  The segment belongs to the current resource owner, so an
 * error or the end of the transaction detaches it, and that stops the
 * reader.
 */
ReadAhead *
ReadAheadStart(TableConfig *cfg, const char *pull, Size pull_len)
{
	ReadAhead  *reader = MemoryContextAllocZero(TopMemoryContext, sizeof(ReadAhead));
	BackgroundWorker bgw;
	shm_toc_estimator e;
	shm_toc    *toc;
	shm_mq	   *mq;
	shm_mq	   *errq;
	char	   *pull_space;
	MemoryContext old;
	bool		registered;

	Assert(pull != NULL && pull_len > 0);
	shm_toc_initialize_estimator(&e);
	shm_toc_estimate_chunk(&e, sizeof(ReadAheadShared));
	shm_toc_estimate_chunk(&e, pull_len);
	shm_toc_estimate_chunk(&e, READ_AHEAD_QUEUE_SIZE);
	shm_toc_estimate_chunk(&e, READ_AHEAD_ERROR_QUEUE_SIZE);
	shm_toc_estimate_keys(&e, 4);

	reader->seg = dsm_create(shm_toc_estimate(&e), 0);
	toc = shm_toc_create(READ_AHEAD_MAGIC, dsm_segment_address(reader->seg),
						 dsm_segment_map_length(reader->seg));

	reader->shared = shm_toc_allocate(toc, sizeof(ReadAheadShared));
	memset(reader->shared, 0, sizeof(ReadAheadShared));
	reader->shared->request.database_id = MyDatabaseId;
	reader->shared->request.session_user_id = GetSessionUserId();
	reader->shared->request.user_id = GetUserId();
	reader->shared->request.table_id = cfg->table_id;
	reader->shared->request.owner = cfg->owner;
	reader->shared->request.lock_timeout = treble_sync_lock_timeout;
	reader->shared->pull_len = pull_len;
	shm_toc_insert(toc, READ_AHEAD_KEY_SHARED, reader->shared);

	pull_space = shm_toc_allocate(toc, pull_len);
	memcpy(pull_space, pull, pull_len);
	shm_toc_insert(toc, READ_AHEAD_KEY_PULL, pull_space);

	mq = shm_mq_create(shm_toc_allocate(toc, READ_AHEAD_QUEUE_SIZE), READ_AHEAD_QUEUE_SIZE);
	shm_mq_set_receiver(mq, MyProc);
	shm_toc_insert(toc, READ_AHEAD_KEY_QUEUE, mq);
	errq = shm_mq_create(shm_toc_allocate(toc, READ_AHEAD_ERROR_QUEUE_SIZE),
						 READ_AHEAD_ERROR_QUEUE_SIZE);
	shm_mq_set_receiver(errq, MyProc);
	shm_toc_insert(toc, READ_AHEAD_KEY_ERRORS, errq);

	ProcessDescribe(&bgw, "treble_sync_reader_main",
					psprintf("treble_sync reader of table id %d", cfg->table_id));
	bgw.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(reader->seg));
	on_dsm_detach(reader->seg, reader_detached, PointerGetDatum(reader));
	old = MemoryContextSwitchTo(TopMemoryContext);	/* the handle, for the callback */
	registered = RegisterDynamicBackgroundWorker(&bgw, &reader->handle);
	MemoryContextSwitchTo(old);
	if (!registered)
	{
		ereport(DEBUG1,
				(errmsg_internal("no worker slot free for a reader of \"%s\": reading in the cycle's worker",
								 cfg->name)));
		reader->handle = NULL;
		dsm_detach(reader->seg);	/* frees reader */
		return NULL;
	}

	/* with the handle, a reader that dies before attaching closes the queues */
	reader->mqh = shm_mq_attach(mq, reader->seg, reader->handle);
	reader->errqh = shm_mq_attach(errq, reader->seg, reader->handle);
	return reader;
}

/*
 * The reader's error, if it sent one, into *edata (in the current memory
 * context).  nowait: only if it is there already; else wait for it or for
 * the reader's end.  Other protocol messages than an error are skipped:
 * the reader sends none but its error (client_min_messages is "error"
 * there).
 */
static bool
reader_error(ReadAhead *reader, bool nowait, ErrorData *edata)
{
	for (;;)
	{
		Size		len;
		void	   *data;
		StringInfoData msg;
		char		type;

		if (shm_mq_receive(reader->errqh, &len, &data, nowait) != SHM_MQ_SUCCESS)
			return false;
		initStringInfo(&msg);
		appendBinaryStringInfo(&msg, data, len);
		type = pq_getmsgbyte(&msg);
		if (type != 'E')
		{
			pfree(msg.data);
			continue;
		}
		memset(edata, 0, sizeof(ErrorData));
		pq_parse_errornotice(&msg, edata);
		pfree(msg.data);
		/* whatever the reader's level (a FATAL ended it), an ERROR here */
		edata->elevel = ERROR;
		return true;
	}
}

/*
 * Raise the reader's error in the cycle's worker: whole, as the reader
 * raised it (a warehouse's error is retried as if the worker had met it),
 * or, if the reader was cancelled or terminated, as that.
 */
pg_noreturn static void
raise_reader_error(ReadAhead *reader, ErrorData *edata)
{
	ReadAheadShared *shared = reader->shared;

	pg_read_barrier();			/* the flags were written before the error */
	if (shared->stopped)
		ereport(ERROR,
				(errcode(ERRCODE_OPERATOR_INTERVENTION),
				 errmsg("the process reading from the warehouse was stopped before the end of the pull"),
				 errdetail("Nothing of this cycle was applied."),
				 errhint("A process of backend_type \"treble_sync worker\" whose query is \"treble_sync reader of ...\" is a cycle's reader: stopping it stops the cycle.")));
	ThrowErrorData(edata);		/* its SQLSTATE says whether to retry */
	pg_unreachable();
}

/*
 * Wait on the latch, interruptibly, for the reader's next message, valid
 * until the next call; false if the queue closed instead.  An error the
 * reader sends meanwhile is put in *edata, and false returned at once:
 * the reader has stopped, whatever it queued before is moot.
 */
static bool
receive(ReadAhead *reader, const char **data, Size *len, ErrorData *edata, bool *failed)
{
	*failed = false;
	for (;;)
	{
		void	   *p;

		switch (shm_mq_receive(reader->mqh, len, &p, true))
		{
			case SHM_MQ_SUCCESS:
				*data = p;
				return true;
			case SHM_MQ_DETACHED:
				/* the reader ended: with an error, it is in its queue now */
				*failed = reader_error(reader, false, edata);
				return false;
			case SHM_MQ_WOULD_BLOCK:
				break;
		}
		if (reader_error(reader, true, edata))
		{
			*failed = true;
			return false;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, 0,
						 WAIT_EVENT_MESSAGE_QUEUE_RECEIVE);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The reader's first message, which it sends once it is connected to the
 * warehouse; false if it ended before (a second connection refused by a
 * connection limit, say).  The caller then reads the pull itself, and
 * meets any lasting failure as its own error, with its own retries; the
 * reader's is only logged at DEBUG1.  But a refusal of the owner rule
 * (42501: the copy, its history table or a partition changed hands) is
 * the cycle's error, raised here: the worker checked the same under a
 * lock it still holds, so the reader meeting it means that check failed,
 * and reading the pull as the owner anyway must not follow.
 */
bool
ReadAheadReceiveFirst(ReadAhead *reader, const char **data, Size *len)
{
	ErrorData	edata;
	bool		failed;

	if (receive(reader, data, len, &edata, &failed))
		return true;
	if (failed && edata.sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
		raise_reader_error(reader, &edata);
	ereport(DEBUG1,
			(errmsg_internal("the reader did not start reading: %s",
							 failed ? edata.message : "it exited")));
	return false;
}

/*
 * The reader's next message, valid until the next call.  The queue
 * closing before the pull's end message is an error: the reader's own,
 * raised here as it was raised there, or its unexpected end.
 */
void
ReadAheadReceive(ReadAhead *reader, const char **data, Size *len)
{
	ErrorData	edata;
	bool		failed;

	Assert(reader != NULL && reader->mqh != NULL);
	if (receive(reader, data, len, &edata, &failed))
		return;
	if (failed)
		raise_reader_error(reader, &edata);
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("the process reading from the warehouse exited before the end of the pull"),
			 errdetail("Nothing of this cycle was applied."),
			 errhint("See the server log for why it exited.")));
}

/*
 * Let go of the reader and detach from the segment, which stops the reader
 * unless finished says it sent the pull's end (it then disconnects from
 * the warehouse and exits by itself).  reader is freed.
 */
void
ReadAheadStop(ReadAhead *reader, bool finished)
{
	if (reader == NULL)
		return;
	reader->finished = finished;
	if (reader->mqh)
		shm_mq_detach(reader->mqh);
	if (reader->errqh)
		shm_mq_detach(reader->errqh);
	dsm_detach(reader->seg);
}

/*
 * In the reader: send one message, waiting while the queue is full.  The
 * cycle's worker having gone (its pull failed, or it exited), there is
 * nobody to read for: an error, which ends the reader.
 */
void
ReadAheadSend(ReadAheadSink *sink, const void *data, Size len)
{
	Assert(sink != NULL && sink->mqh != NULL && len > 0);
	if (shm_mq_send(sink->mqh, len, data, false, true) != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("the cycle stopped reading the pull")));
}

/*
 * In the reader: attach to the segment its cycle's worker made, find there
 * what to read, and send every error from now on to the error queue; NULL
 * if the worker is gone already.  The sink lives in the current memory
 * context.
 */
ReadAheadSink *
ReadAheadAttach(Datum main_arg, ReadAheadRequest *request, const char **pull, Size *pull_len)
{
	dsm_segment *seg = dsm_attach(DatumGetUInt32(main_arg));
	ReadAheadSink *sink;
	shm_toc    *toc;
	shm_mq	   *mq;
	shm_mq	   *errq;

	if (seg == NULL)
		return NULL;
	toc = shm_toc_attach(READ_AHEAD_MAGIC, dsm_segment_address(seg));
	if (toc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the shared memory segment of a treble_sync reader has a bad magic number")));
	sink = palloc0(sizeof(ReadAheadSink));
	sink->seg = seg;
	sink->shared = shm_toc_lookup(toc, READ_AHEAD_KEY_SHARED, false);

	errq = shm_toc_lookup(toc, READ_AHEAD_KEY_ERRORS, false);
	shm_mq_set_sender(errq, MyProc);
	pq_redirect_to_shm_mq(seg, shm_mq_attach(errq, seg, NULL));
	/* only the error goes there: nothing of a NOTICE fills the queue */
	SetConfigOption("client_min_messages", "error", PGC_SUSET, PGC_S_OVERRIDE);

	mq = shm_toc_lookup(toc, READ_AHEAD_KEY_QUEUE, false);
	shm_mq_set_sender(mq, MyProc);
	sink->mqh = shm_mq_attach(mq, seg, NULL);

	*request = sink->shared->request;
	*pull = shm_toc_lookup(toc, READ_AHEAD_KEY_PULL, false);
	*pull_len = sink->shared->pull_len;
	return sink;
}

/*
 * In the reader: its error, its values taken out (RedactError), raised
 * again to end the process, which sends it whole on the error queue, its
 * SQLSTATE with it (which decides whether the cycle is tried again); with
 * whether the reader itself was cancelled or terminated (a warehouse's
 * timeout is a cancel too, and is retried; a stopped reader is not).
 */
void
ReadAheadFail(ReadAheadSink *sink, ErrorData *edata, bool stopped)
{
	sink->shared->stopped = stopped;
	pg_write_barrier();
	edata->elevel = ERROR;
	ThrowErrorData(edata);
	pg_unreachable();
}

/* In the reader, at its end: let go of the queue and the segment. */
void
ReadAheadDetach(ReadAheadSink *sink)
{
	shm_mq_detach(sink->mqh);
	dsm_detach(sink->seg);
}
