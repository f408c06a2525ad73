/*-------------------------------------------------------------------------
 *
 * cursor.h
 *	  Cursor values as the catalog keeps them: a warehouse timestamp or a
 *	  number, formatted and parsed (cursor.c).
 *
 * The watermark, a chunked load's cut and bounds, a run's hot window and
 * verify()'s newest cursor are all written and read here, so that every
 * text the catalog holds reads back as the value it was made of.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_CURSOR_H
#define TREBLE_SYNC_CURSOR_H

#include "postgres.h"

#include "treble_sync.h"

extern char *CursorFormatTimestamp(Timestamp ts);
extern Timestamp CursorParseTimestamp(const char *text);
extern char *CursorFormat(TableConfig *cfg, int64 value);
extern int64 CursorParse(TableConfig *cfg, const char *text);

#endif							/* TREBLE_SYNC_CURSOR_H */
