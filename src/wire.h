/*-------------------------------------------------------------------------
 *
 * wire.h
 *	  What a cycle's worker and its reader say to each other: the pull's
 *	  description, and the messages the reader sends back (wire.c).
 *
 * One encoder and one decoder of each, here: stage.c fills and reads a
 * WirePull, the queue and the segment are readahead.c's.  The
 * description opens with WIRE_VERSION, which the decoder checks: a reader
 * loaded from another build of the library than its worker's (an upgrade
 * between the two starts) fails instead of misreading.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_WIRE_H
#define TREBLE_SYNC_WIRE_H

#include "postgres.h"

#include "lib/stringinfo.h"

#include "odbc.h"
#include "treble_sync.h"

/* Bumped whenever the description or a message changes. */
#define WIRE_VERSION 1

/*
 * What a reader must know of a pull: the columns (name, read as bytes,
 * key, masked), which one is the cursor and the event column, the
 * registration's on_bad_row and cursor kind as the cycle read them (the
 * reader reads the registration again, which may have been altered
 * since), the mask salt, and the statement with its parameters.
 */
typedef struct WirePull
{
	int			ncols;
	int			cursor_col;		/* or -1 */
	int			event_col;		/* or -1 */
	BadRowPolicy on_bad_row;
	CursorKind	cursor_kind;
	bool	   *is_binary;		/* [ncols] each: fetched as bytes */
	bool	   *text_as_bytes;	/* text fetched as stored, checked as UTF-8 */
	bool	   *is_key;
	bool	   *is_masked;
	char	  **names;
	bytea	   *salt;			/* the mask salt; NULL: none */
	const char *sql;
	int			nparams;
	OdbcParam  *params;
} WirePull;

extern void WireEncodePull(StringInfo buf, const WirePull *pull);
extern void WireDecodePull(char *data, Size len, WirePull *pull);

/*
 * The messages a reader sends, in this order: CONNECTED, READY (their type
 * alone), then BATCH, NULL_KEY and BAD_VALUE in any number, then END; each
 * of the last four opens with its type and the rows and bytes read so far
 * (WireBeginMessage, WireReadHeader).
 */
#define WIRE_CONNECTED 'C'		/* connected to the warehouse */
#define WIRE_READY 'R'			/* the statement runs: rows follow */
#define WIRE_BATCH 'B'			/* a batch of COPY text lines */
#define WIRE_NULL_KEY 'N'		/* a row with a NULL key, to set aside */
#define WIRE_BAD_VALUE 'V'		/* a row with a value that cannot be carried */
#define WIRE_END 'E'			/* the end of the pull */

extern void WireBeginMessage(StringInfo msg, char type, int64 rows, int64 bytes);
extern char WireReadHeader(StringInfo msg, int64 *rows, int64 *bytes);

#endif							/* TREBLE_SYNC_WIRE_H */
