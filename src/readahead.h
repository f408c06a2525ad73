/*-------------------------------------------------------------------------
 *
 * readahead.h
 *	  A second process that reads a large pull from the warehouse while
 *	  the cycle's worker writes it (readahead.c).
 *
 * The cycle's worker starts the reader with a description of the pull
 * (stage.c writes it and reads it back in the reader), then receives the
 * reader's messages in order.  The segment, the queue and error
 * forwarding are here; the reader process is reader.c; what the messages
 * say is stage.c's business.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_READAHEAD_H
#define TREBLE_SYNC_READAHEAD_H

#include "postgres.h"

#include "treble_sync.h"

/* The cycle's side of a running reader, opaque outside readahead.c. */
typedef struct ReadAhead ReadAhead;

/* The reader's side: where it sends what it read. */
typedef struct ReadAheadSink ReadAheadSink;

/* The cycle's worker */
extern ReadAhead *ReadAheadStart(TableConfig *cfg, const char *pull, Size pull_len);
extern bool ReadAheadReceiveFirst(ReadAhead *reader, const char **data, Size *len);
extern void ReadAheadReceive(ReadAhead *reader, const char **data, Size *len);
extern void ReadAheadStop(ReadAhead *reader, bool finished);

/* What the reader is told besides the pull: who and what to read for. */
typedef struct ReadAheadRequest
{
	Oid			database_id;
	Oid			session_user_id;
	Oid			user_id;
	int32		table_id;
	Oid			owner;			/* the registration's, as the cycle knows it */
	int			lock_timeout;
} ReadAheadRequest;

/* The reader process (reader.c) */
extern PGDLLEXPORT void treble_sync_reader_main(Datum main_arg);
extern ReadAheadSink *ReadAheadAttach(Datum main_arg, ReadAheadRequest *request,
									  const char **pull, Size *pull_len);
extern void ReadAheadSend(ReadAheadSink *sink, const void *data, Size len);
pg_noreturn extern void ReadAheadFail(ReadAheadSink *sink, ErrorData *edata, bool stopped);
extern void ReadAheadDetach(ReadAheadSink *sink);

#endif							/* TREBLE_SYNC_READAHEAD_H */
