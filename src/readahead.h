/*-------------------------------------------------------------------------
 *
 * readahead.h
 *	  A second process that reads a large pull from the warehouse while
 *	  the cycle's worker writes it (readahead.c).
 *
 * The cycle's worker starts the reader with a description of the pull
 * (stage.c writes it and reads it back in the reader), then receives the
 * reader's messages in order.  Queue and error forwarding are here; what
 * the messages say is stage.c's business.
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

/* The reader process */
extern PGDLLEXPORT void treble_sync_reader_main(Datum main_arg);
extern void ReadAheadSend(ReadAheadSink *sink, const void *data, Size len);

#endif							/* TREBLE_SYNC_READAHEAD_H */
