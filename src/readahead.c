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
 * Either side stopping stops the other: an error in the reader is kept
 * in the segment and raised by the cycle's worker when the queue closes;
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

#include "attempt.h"
#include "miscadmin.h"
#include "process.h"
#include "readahead.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/shm_mq.h"
#include "mb/pg_wchar.h"
#include "utils/memutils.h"


/*
 * Room for rows in flight: about two batches of a 13-column table (a
 * batch is at most 10,000 rows or 8 MB).  A larger batch still goes
 * through, in pieces.
 */
#define READ_AHEAD_QUEUE_SIZE (4 * 1024 * 1024)

/* The segment's header: what the reader needs, and how it failed. */
typedef struct ReadAheadShared
{
	/* written by the cycle's worker before the reader starts */
	ReadAheadRequest request;
	Size		pull_len;		/* the pull's description follows the header */
	/* written by the reader before it detaches, if it fails */
	bool		failed;
	bool		stopped;		/* it was cancelled or terminated */
	bool		transient;		/* its error is worth another attempt */
	int			sqlerrcode;
	char		message[1024];
	char		detail[1024];
	char		hint[512];
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
	shm_mq_handle *mqh;
	BackgroundWorkerHandle *handle;
	bool		finished;		/* it sent the pull's end: let it disconnect */
};

struct ReadAheadSink
{
	dsm_segment *seg;
	ReadAheadShared *shared;
	shm_mq_handle *mqh;
};

/* Where the pull's description and the queue lie in the segment. */
static inline Size
pull_offset(void)
{
	return MAXALIGN(sizeof(ReadAheadShared));
}

static inline Size
queue_offset(Size pull_len)
{
	return pull_offset() + MAXALIGN(pull_len);
}

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
 * Start a reader for a pull of cfg described by pull (stage.c's bytes).
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
	shm_mq	   *mq;
	MemoryContext old;
	bool		registered;

	reader->seg = dsm_create(queue_offset(pull_len) + READ_AHEAD_QUEUE_SIZE, 0);
	reader->shared = dsm_segment_address(reader->seg);
	memset(reader->shared, 0, sizeof(ReadAheadShared));
	reader->shared->request.database_id = MyDatabaseId;
	reader->shared->request.session_user_id = GetSessionUserId();
	reader->shared->request.user_id = GetUserId();
	reader->shared->request.table_id = cfg->table_id;
	reader->shared->request.owner = cfg->owner;
	reader->shared->request.lock_timeout = treble_sync_lock_timeout;
	reader->shared->pull_len = pull_len;
	memcpy((char *) reader->shared + pull_offset(), pull, pull_len);

	mq = shm_mq_create((char *) reader->shared + queue_offset(pull_len), READ_AHEAD_QUEUE_SIZE);
	shm_mq_set_receiver(mq, MyProc);

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

	/* with the handle, a reader that dies before attaching closes the queue */
	reader->mqh = shm_mq_attach(mq, reader->seg, reader->handle);
	return reader;
}

/*
 * Wait on the latch, interruptibly, for the reader's next message, valid
 * until the next call; false if the queue closed instead.
 */
static bool
receive(ReadAhead *reader, const char **data, Size *len)
{
	void	   *p;

	if (shm_mq_receive(reader->mqh, len, &p, false) != SHM_MQ_SUCCESS)
		return false;
	*data = p;
	return true;
}

/*
 * The reader's first message, which it sends once it is connected to the
 * warehouse; false if it ended before (a second connection refused by a
 * connection limit, say).  The caller then reads the pull itself, and
 * meets any lasting failure as its own error, with its own retries; the
 * reader's is only logged at DEBUG1.
 */
bool
ReadAheadReceiveFirst(ReadAhead *reader, const char **data, Size *len)
{
	if (receive(reader, data, len))
		return true;
	pg_read_barrier();
	ereport(DEBUG1,
			(errmsg_internal("the reader did not start reading: %s",
							 reader->shared->failed ? reader->shared->message : "it exited")));
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
	ReadAheadShared *shared = reader->shared;

	if (receive(reader, data, len))
		return;

	pg_read_barrier();			/* the error was written before the detach */
	if (shared->failed && shared->stopped)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("the process reading from the warehouse was stopped before the end of the pull"),
				 errdetail("Nothing of this cycle was applied."),
				 errhint("A process of backend_type \"treble_sync worker\" whose query is \"treble_sync reader of ...\" is a cycle's reader: stopping it stops the cycle.")));
	if (shared->failed)
	{
		/* a warehouse's error: retried as if the worker had met it */
		AttemptNoteRemoteError(shared->transient);
		ereport(ERROR,
				(errcode(shared->sqlerrcode),
				 errmsg_internal("%s", shared->message),
				 shared->detail[0] ? errdetail_internal("%s", shared->detail) : 0,
				 shared->hint[0] ? errhint("%s", shared->hint) : 0));
	}
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
	if (shm_mq_send(sink->mqh, len, data, false, true) != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("the cycle stopped reading the pull")));
}

/* Copy src into dst of size bytes, cut on a character boundary. */
static void
clip_copy(char *dst, const char *src, Size size)
{
	int			len = strlen(src);

	if (len >= (int) size)
		len = pg_mbcliplen(src, len, size - 1);
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/*
 * In the reader: keep its error in the segment, for the cycle's worker to
 * raise: cut to the room there (on a character boundary: it ends up in the
 * run log), with whether it is worth another attempt, and whether the
 * reader itself was cancelled or terminated (a warehouse's timeout is a
 * cancel too, and is retried).  The caller has taken warehouse values out
 * of it (RedactError).
 */
void
ReadAheadFail(ReadAheadSink *sink, ErrorData *edata, bool stopped, bool transient)
{
	ReadAheadShared *shared = sink->shared;

	shared->stopped = stopped;
	shared->transient = transient;
	shared->sqlerrcode = edata->sqlerrcode;
	clip_copy(shared->message, edata->message ? edata->message : "unknown error",
			  sizeof(shared->message));
	clip_copy(shared->detail, edata->detail ? edata->detail : "", sizeof(shared->detail));
	clip_copy(shared->hint, edata->hint ? edata->hint : "", sizeof(shared->hint));
	pg_write_barrier();
	shared->failed = true;
}

/*
 * In the reader: attach to the segment its cycle's worker made, and find
 * there what to read; NULL if the worker is gone already.  The sink lives
 * in the current memory context.
 */
ReadAheadSink *
ReadAheadAttach(Datum main_arg, ReadAheadRequest *request, const char **pull, Size *pull_len)
{
	dsm_segment *seg = dsm_attach(DatumGetUInt32(main_arg));
	ReadAheadSink *sink;
	shm_mq	   *mq;

	if (seg == NULL)
		return NULL;
	sink = palloc0(sizeof(ReadAheadSink));
	sink->seg = seg;
	sink->shared = dsm_segment_address(seg);
	mq = (shm_mq *) ((char *) sink->shared + queue_offset(sink->shared->pull_len));
	shm_mq_set_sender(mq, MyProc);
	sink->mqh = shm_mq_attach(mq, seg, NULL);
	*request = sink->shared->request;
	*pull = (char *) sink->shared + pull_offset();
	*pull_len = sink->shared->pull_len;
	return sink;
}

/* In the reader, at its end: let go of the queue and the segment. */
void
ReadAheadDetach(ReadAheadSink *sink)
{
	shm_mq_detach(sink->mqh);
	dsm_detach(sink->seg);
}

