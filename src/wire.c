/*-------------------------------------------------------------------------
 *
 * wire.c
 *	  Encoding and decoding what a cycle's worker and its reader say to
 *	  each other (see wire.h).
 *
 * The bytes never leave the server: they go through a DSM segment between
 * two processes of the same library.  The version still guards against
 * two builds meeting, and every length read is checked against the bytes
 * there are (pq_getmsg* raise an error past the end).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "libpq/pqformat.h"

#include "wire.h"

/* The pull's description as bytes, for the reader's segment. */
void
WireEncodePull(StringInfo buf, const WirePull *pull)
{
	Assert(pull->ncols > 0 && pull->sql != NULL);
	Assert(pull->cursor_col >= -1 && pull->cursor_col < pull->ncols);
	Assert(pull->event_col >= -1 && pull->event_col < pull->ncols);

	initStringInfo(buf);
	pq_sendint32(buf, WIRE_VERSION);
	pq_sendint32(buf, pull->ncols);
	pq_sendint32(buf, pull->cursor_col);
	pq_sendint32(buf, pull->event_col);
	pq_sendint32(buf, pull->on_bad_row);
	pq_sendint32(buf, pull->cursor_kind);
	for (int i = 0; i < pull->ncols; i++)
	{
		pq_sendbyte(buf, pull->is_binary[i]);
		pq_sendbyte(buf, pull->text_as_bytes[i]);
		pq_sendbyte(buf, pull->is_key[i]);
		pq_sendbyte(buf, pull->is_masked[i]);
		pq_sendbytes(buf, pull->names[i], strlen(pull->names[i]) + 1);
	}
	pq_sendint32(buf, pull->salt ? (int32) VARSIZE_ANY_EXHDR(pull->salt) : -1);
	if (pull->salt)
		pq_sendbytes(buf, VARDATA_ANY(pull->salt), VARSIZE_ANY_EXHDR(pull->salt));
	pq_sendbytes(buf, pull->sql, strlen(pull->sql) + 1);
	pq_sendint32(buf, pull->nparams);
	for (int i = 0; i < pull->nparams; i++)
	{
		pq_sendint32(buf, pull->params[i].kind);
		pq_sendint64(buf, pull->params[i].value);
		pq_sendint32(buf, pull->params[i].text ? (int32) strlen(pull->params[i].text) : -1);
		if (pull->params[i].text)
			pq_sendbytes(buf, pull->params[i].text, strlen(pull->params[i].text) + 1);
	}
}

/*
 * Read a description WireEncodePull() wrote, into pull (its arrays in the
 * current memory context).  The salt's bytes are zeroed in data once
 * copied: the segment outlives this need.
 */
void
WireDecodePull(char *data, Size len, WirePull *pull)
{
	StringInfoData desc;
	int32		version;
	int32		salt_len;

	desc.data = data;
	desc.len = desc.maxlen = (int) len;
	desc.cursor = 0;

	version = pq_getmsgint(&desc, 4);
	if (version != WIRE_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the cycle's worker described its pull in version %d, this reader reads version %d",
						version, WIRE_VERSION),
				 errhint("The treble_sync library changed between the two processes; the next cycle runs with one library.")));
	memset(pull, 0, sizeof(WirePull));
	pull->ncols = pq_getmsgint(&desc, 4);
	pull->cursor_col = pq_getmsgint(&desc, 4);
	pull->event_col = pq_getmsgint(&desc, 4);
	pull->on_bad_row = (BadRowPolicy) pq_getmsgint(&desc, 4);
	pull->cursor_kind = (CursorKind) pq_getmsgint(&desc, 4);
	if (pull->ncols <= 0 || pull->ncols > MaxTupleAttributeNumber ||
		pull->cursor_col < -1 || pull->cursor_col >= pull->ncols ||
		pull->event_col < -1 || pull->event_col >= pull->ncols)
		elog(ERROR, "pull described with %d columns, cursor %d, event %d",
			 pull->ncols, pull->cursor_col, pull->event_col);
	pull->is_binary = palloc0(sizeof(bool) * pull->ncols);
	pull->text_as_bytes = palloc0(sizeof(bool) * pull->ncols);
	pull->is_key = palloc0(sizeof(bool) * pull->ncols);
	pull->is_masked = palloc0(sizeof(bool) * pull->ncols);
	pull->names = palloc0(sizeof(char *) * pull->ncols);
	for (int i = 0; i < pull->ncols; i++)
	{
		pull->is_binary[i] = pq_getmsgbyte(&desc);
		pull->text_as_bytes[i] = pq_getmsgbyte(&desc);
		pull->is_key[i] = pq_getmsgbyte(&desc);
		pull->is_masked[i] = pq_getmsgbyte(&desc);
		pull->names[i] = pstrdup(pq_getmsgrawstring(&desc));
	}
	salt_len = pq_getmsgint(&desc, 4);
	if (salt_len >= 0)
	{
		char	   *in_segment = unconstify(char *, pq_getmsgbytes(&desc, salt_len));

		pull->salt = palloc(VARHDRSZ + salt_len);
		SET_VARSIZE(pull->salt, VARHDRSZ + salt_len);
		memcpy(VARDATA(pull->salt), in_segment, salt_len);
		explicit_bzero(in_segment, salt_len);
	}
	pull->sql = pstrdup(pq_getmsgrawstring(&desc));
	pull->nparams = pq_getmsgint(&desc, 4);
	if (pull->nparams < 0 || pull->nparams > PG_UINT16_MAX)
		elog(ERROR, "pull described with %d parameters", pull->nparams);
	pull->params = palloc0(sizeof(OdbcParam) * Max(pull->nparams, 1));
	for (int i = 0; i < pull->nparams; i++)
	{
		pull->params[i].kind = (OdbcParamKind) pq_getmsgint(&desc, 4);
		pull->params[i].value = pq_getmsgint64(&desc);
		if ((int32) pq_getmsgint(&desc, 4) >= 0)
			pull->params[i].text = pstrdup(pq_getmsgrawstring(&desc));
	}
	pq_getmsgend(&desc);
}

/*
 * Begin a reader's message: its type, and the rows and bytes read so far
 * (a NULL-key row set aside counts as read).
 */
void
WireBeginMessage(StringInfo msg, char type, int64 rows, int64 bytes)
{
	Assert(type == WIRE_BATCH || type == WIRE_NULL_KEY || type == WIRE_BAD_VALUE ||
		   type == WIRE_END);
	resetStringInfo(msg);
	pq_sendbyte(msg, type);
	pq_sendint64(msg, rows);
	pq_sendint64(msg, bytes);
}

/* The type of a message WireBeginMessage() began, and its counts. */
char
WireReadHeader(StringInfo msg, int64 *rows, int64 *bytes)
{
	char		type = pq_getmsgbyte(msg);

	*rows = pq_getmsgint64(msg);
	*bytes = pq_getmsgint64(msg);
	return type;
}
