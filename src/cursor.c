/*-------------------------------------------------------------------------
 *
 * cursor.c
 *	  Formatting and parsing cursor values as the catalog keeps them (see
 *	  cursor.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "cursor.h"

/*
 * Format a warehouse timestamp as the text kept in the catalog: ISO 8601,
 * microseconds, no zone (it is the warehouse's wall clock), independent of
 * the session's DateStyle.
 */
char *
CursorFormatTimestamp(Timestamp ts)
{
	struct pg_tm tm;
	fsec_t		fsec;
	char		buf[MAXDATELEN + 1];

	if (timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	EncodeDateTime(&tm, fsec, false, 0, NULL, USE_ISO_DATES, buf);
	return pstrdup(buf);
}

/* Parse a watermark written by CursorFormatTimestamp. */
Timestamp
CursorParseTimestamp(const char *text)
{
	return DatumGetTimestamp(DirectFunctionCall3(timestamp_in, CStringGetDatum(text),
												 ObjectIdGetDatum(InvalidOid),
												 Int32GetDatum(-1)));
}

/* The catalog text of a cursor value: a timestamp, or a number. */
char *
CursorFormat(TableConfig *cfg, int64 value)
{
	Assert(cfg->cursor_kind != CURSOR_NONE);
	if (cfg->cursor_kind == CURSOR_INTEGER)
		return psprintf(INT64_FORMAT, value);
	return CursorFormatTimestamp(value);
}

/* Parse a cursor value written by CursorFormat. */
int64
CursorParse(TableConfig *cfg, const char *text)
{
	Assert(cfg->cursor_kind != CURSOR_NONE && text != NULL);
	if (cfg->cursor_kind == CURSOR_INTEGER)
		return DatumGetInt64(DirectFunctionCall1(int8in, CStringGetDatum(text)));
	return CursorParseTimestamp(text);
}
