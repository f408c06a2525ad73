/*-------------------------------------------------------------------------
 *
 * stage.c
 *	  Streaming rows from the warehouse into a staging table.
 *
 * The staging table is a temporary table with exactly the synced columns
 * of the local copy (same types, same typmods), dropped at commit, so a
 * crash leaves nothing behind.  Rows go in through PostgreSQL's own COPY
 * machinery: the ODBC result is turned into COPY text on the fly by a
 * data-source callback, so type input, multi-insert batching and encoding
 * conversion are COPY's, and no value is ever spliced into SQL.  Memory
 * holds one batch at a time, whatever the size of the pull.
 *
 * A pull into an empty copy (StageTarget.copy_relid) copies each batch
 * into the copy itself, and only a batch the copy refuses goes to the
 * staging table, for cycle.c to merge.  Such a pull can be read by a
 * second process (readahead.c) while this one copies: the reader runs
 * the same statement and turns the rows into COPY text with the code
 * below, and sends each batch here; what COPY does with them is the same.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "commands/copy.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "attempt.h"
#include "catalog.h"
#include "deparse.h"
#include "fetch.h"
#include "odbc.h"
#include "progress.h"
#include "readahead.h"
#include "redact.h"
#include "schema.h"
#include "security.h"
#include "stage.h"
#include "wire.h"


/*
 * State of the COPY data-source callback.  COPY's callback takes no
 * argument, so it lives in a static; only one load runs per process.
 */
typedef struct StageFeed
{
	FetchBlock *block;
	int			block_rows;		/* rows in the current block */
	int			block_pos;		/* next row of it to hand out */
	TableConfig *cfg;
	CycleResult *result;
	int			ncols;
	bool	   *is_binary;		/* fetched as bytes, emitted as \x hex */
	bool	   *text_as_bytes;	/* text fetched as stored, checked as UTF-8 */
	FetchKind  *kind;			/* how each column arrives */
	bool		sqlite;			/* an SQLite warehouse (DEPARSE_INEXACT_REAL) */
	bool	   *is_masked;		/* stored as a salted SHA-256 hex */
	bytea	   *salt;			/* the mask salt, if any column is masked */
	pg_cryptohash_ctx *sha;		/* made once per load, reset per value */
	StringInfoData plain;		/* a masked value before hashing */
	bool	   *is_key;			/* a NULL here fails the cycle */
	int			check_col;		/* the cursor, read as text and checked; or -1 */
	int			check_event;	/* the event column, read as text, whose
								 * form makes a bad row; or -1 */
	int			cursor_col;		/* the cursor, for the quarantine; or -1 */
	char	  **names;
	FmgrInfo   *in_funcs;		/* the staging columns' input functions, */
	Oid		   *in_ioparams;	/* to find the value COPY rejected */
	int32	   *in_typmods;
	StringInfoData line;		/* the current row as a COPY text line */
	bool		eof;
	/* a batch of rows as COPY text, and the part of it COPY is reading */
	StringInfoData batch;
	int		   *offsets;		/* where each line starts; [nlines] = end */
	int			nlines;
	int			copy_pos;
	int			copy_end;
	int64		first_row;		/* pull row number of the batch's first line */
	int64		reported_rows;	/* rows and bytes already in the progress report */
	int64		reported_bytes;
	/* the batches come from a reader process, or go to the process reading */
	ReadAhead  *reader;
	int64		reader_rows;	/* rows_pulled and bytes_pulled before the */
	int64		reader_bytes;	/* reader's first, to which its counts add */
	ReadAheadSink *sink;
	/* the copy, when batches go straight into it (StageTarget.copy_relid) */
	Relation	copy_rel;
	ParseState *copy_pstate;
	List	   *copy_columns;	/* the synced columns: the copy may have more */
	/* bad rows to be quarantined, kept in one statement per batch */
	MemoryContext set_aside_cxt;
	QuarantineRow *set_aside;
	int			nset_aside;
	Size		set_aside_bytes;
} StageFeed;

/*
 * The most bad rows, and bytes of their raw values, held before they are
 * written to the quarantine in one statement.
 */
#define QUARANTINE_BATCH_ROWS 10000
#define QUARANTINE_BATCH_BYTES (64 * 1024 * 1024)

/* Rows between two progress updates. */
#define STAGE_PROGRESS_ROWS 4096

/*
 * Rows go to COPY in batches, so that a batch with a value the local type
 * rejects can be loaded again row by row to single the bad rows out.
 */
#define STAGE_BATCH_ROWS 10000
#define STAGE_BATCH_BYTES (8 * 1024 * 1024)

static StageFeed *feed = NULL;

/*
 * Why a value the warehouse sent is a bad row before COPY sees it: it
 * cannot be carried as it is, and changing it is not an option.
 */
typedef enum BadValue
{
	BAD_VALUE_NONE = -1,
	BAD_VALUE_UTF8,				/* text that is not UTF-8 */
	BAD_VALUE_NUL,				/* text with a NUL byte */
	BAD_VALUE_EVENT_FORM,		/* an event time SQLite cannot compare */
	BAD_VALUE_INEXACT_REAL		/* an SQLite REAL its text does not hold */
} BadValue;

static const char *const bad_value_reasons[] = {
	"text that is not valid UTF-8",
	"text with a NUL byte, which PostgreSQL text cannot hold",
	"a timestamp in a form that cannot be compared ('YYYY-MM-DD HH:MM:SS' is needed)",
	"a REAL that SQLite cannot write exactly (it writes 15 significant digits)"
};

static char *line_key(const char *line, int len);
static char *line_field(const char *line, int len, int col);
static void bad_row(const char *line, const char *column, const char *reason, bool null_key);
static void flush_set_aside(void);
static void load_around_bad_rows(Relation rel, ParseState *pstate, List *options);
static void send_null_key(int col);
static void send_bad_value(int col, BadValue why);
static bool receive_batch(void);

/*
 * Create the staging table for a cycle: the synced columns of the local
 * table, same types, no rows, no constraints, gone at commit.
 */
Oid
StageCreate(TableConfig *cfg)
{
	StringInfoData sql;
	ListCell   *lc;
	Oid			relid;
	char	   *local_schema = get_namespace_name(get_rel_namespace(cfg->local_relid));
	char	   *local_name = get_rel_name(cfg->local_relid);

	if (local_name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the local table of \"%s\" no longer exists", cfg->name),
				 errhint("Create it again, or register the table again with treble_sync.add_table().")));

	initStringInfo(&sql);
	appendStringInfoString(&sql, "CREATE TEMPORARY TABLE " STAGE_TABLE_NAME " ON COMMIT DROP AS SELECT ");
	foreach(lc, cfg->columns)
		appendStringInfo(&sql, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(lfirst(lc)));
	appendStringInfo(&sql, " FROM %s WITH NO DATA",
					 quote_qualified_identifier(local_schema, local_name));

	SPI_connect();
	SecurityCreateTempTable(sql.data);
	SPI_finish();
	CommandCounterIncrement();

	relid = get_relname_relid(STAGE_TABLE_NAME, LookupCreationNamespace("pg_temp"));
	if (!OidIsValid(relid))
		elog(ERROR, "staging table was not created");
	return relid;
}

/*
 * Drop the staging table before the transaction ends: the next member of
 * a group's cycle, in the same transaction, makes its own.
 */
void
StageDrop(void)
{
	Oid			relid = get_relname_relid(STAGE_TABLE_NAME, LookupCreationNamespace("pg_temp"));

	if (!OidIsValid(relid))
		return;
	SPI_connect();
	if (SPI_execute(LOCAL_DROP_STAGE, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not drop the staging table");
	SPI_finish();
	CommandCounterIncrement();
}

/* Append bytes to a COPY text line as PostgreSQL's hex bytea form. */
static void
append_copy_hex(StringInfo line, const unsigned char *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char	   *out;

	/* "\\x": the backslash itself is escaped in COPY text */
	enlargeStringInfo(line, (int) (len * 2 + 3));
	out = line->data + line->len;
	*out++ = '\\';
	*out++ = '\\';
	*out++ = 'x';
	for (size_t i = 0; i < len; i++)
	{
		*out++ = hex[p[i] >> 4];
		*out++ = hex[p[i] & 0xF];
	}
	line->len = out - line->data;
	line->data[line->len] = '\0';
}

/*
 * Append UTF-8 text to a COPY text line, escaping what COPY's text format
 * gives a meaning to (backslash, newline, carriage return, tab).
 */
static void
append_copy_text(StringInfo line, const char *p, size_t len)
{
	char	   *out;

	enlargeStringInfo(line, (int) (len * 2));
	out = line->data + line->len;
	for (size_t i = 0; i < len; i++)
	{
		char		c = p[i];

		if (c == '\\' || c == '\n' || c == '\r' || c == '\t')
		{
			*out++ = '\\';
			*out++ = (c == '\\') ? '\\' : (c == '\n') ? 'n' : (c == '\r') ? 'r' : 't';
		}
		else
			*out++ = c;
	}
	line->len = out - line->data;
	line->data[line->len] = '\0';
}

/*
 * Whether p is what deparse.c selects instead of an SQLite REAL whose text
 * does not hold it: DEPARSE_INEXACT_REAL, then that text (a number's).
 */
static bool
is_inexact_real(const char *p, size_t len)
{
	if (!feed->sqlite || len <= DEPARSE_INEXACT_REAL_LEN ||
		memcmp(p, DEPARSE_INEXACT_REAL, DEPARSE_INEXACT_REAL_LEN) != 0)
		return false;
	for (size_t i = DEPARSE_INEXACT_REAL_LEN; i < len; i++)
		if (!strchr("0123456789.e+-", p[i]) || p[i] == '\0')
			return false;
	return true;
}

/*
 * Whether text bytes can be carried exactly: UTF-8 (what COPY is told it
 * reads), and no NUL, which no PostgreSQL text value holds; and not an
 * SQLite REAL whose text would change it (is_inexact_real()).
 */
static BadValue
check_text_bytes(const char *p, size_t len)
{
	if (is_inexact_real(p, len))
		return BAD_VALUE_INEXACT_REAL;
	/* a NUL fails the check too: look for one only then, to say which */
	if (pg_verify_mbstr(PG_UTF8, p, (int) len, true))
		return BAD_VALUE_NONE;
	if (memchr(p, '\0', len) != NULL)
		return BAD_VALUE_NUL;
	return BAD_VALUE_UTF8;
}

/* Add the rows and bytes read since the last report to the progress. */
static void
report_progress(void)
{
	if (feed->sink)
		return;					/* a reader: the cycle's worker counts */
	ProgressAddRows(feed->result->rows_pulled - feed->reported_rows,
					feed->result->bytes_pulled - feed->reported_bytes);
	feed->reported_rows = feed->result->rows_pulled;
	feed->reported_bytes = feed->result->bytes_pulled;
}

/*
 * Append, instead of a value, the hex SHA-256 of the mask salt followed by
 * the value's text (its raw bytes for binary data).  The same value always
 * gives the same hash in one database, so joins on it still work; the
 * clear value goes nowhere.
 */
static void
append_masked(int col, const char *data, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	pg_cryptohash_ctx *ctx;
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	const char *text = data;
	size_t		text_len = len;

	resetStringInfo(&feed->plain);
	switch (feed->kind[col])
	{
		case FETCH_BINARY:
		case FETCH_UTF8:		/* checked as UTF-8 already */
			break;
		case FETCH_INT64:
			enlargeStringInfo(&feed->plain, MAXINT8LEN + 1);
			feed->plain.len = pg_lltoa(*(const SQLBIGINT *) data, feed->plain.data);
			text = feed->plain.data;
			text_len = feed->plain.len;
			break;
		case FETCH_TEXT:
			OdbcAppendUtf16(&feed->plain, (const SQLWCHAR *) data, len / sizeof(SQLWCHAR), false);
			text = feed->plain.data;
			text_len = feed->plain.len;
			break;
	}

	ctx = feed->sha;
	if (pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *) VARDATA_ANY(feed->salt),
							 VARSIZE_ANY_EXHDR(feed->salt)) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *) text, text_len) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
		elog(ERROR, "could not compute a SHA-256 hash: %s", pg_cryptohash_error(ctx));

	enlargeStringInfo(&feed->line, PG_SHA256_DIGEST_LENGTH * 2);
	for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
	{
		feed->line.data[feed->line.len++] = hex[digest[i] >> 4];
		feed->line.data[feed->line.len++] = hex[digest[i] & 0xF];
	}
	feed->line.data[feed->line.len] = '\0';
}

/*
 * on_bad_row 'fail' and a row (line, len) with a value that cannot be
 * carried in column col, the row-th of the pull: fail the cycle naming the
 * row's position, the column and the reason, never the key or the value
 * (the error goes to the run log and the server log, which roles read that
 * may not read the copy).  The row is noted in the attempt, for the worker
 * to keep in the quarantine with the failed run.
 */
static void
fail_on_bad_value(const char *line, int len, int col, BadValue why, int64 row)
{
	Assert(why > BAD_VALUE_NONE && why < (int) lengthof(bad_value_reasons));
	(void) AttemptNoteBadRow(line_key(line, len), feed->names[col],
							 feed->is_masked[col] ? "(masked)" : line_field(line, len, col),
							 bad_value_reasons[why],
							 feed->cursor_col >= 0 ? line_field(line, len, feed->cursor_col) : NULL);
	ereport(ERROR,
			(errcode(why == BAD_VALUE_EVENT_FORM ? ERRCODE_INVALID_DATETIME_FORMAT :
					 why == BAD_VALUE_INEXACT_REAL ? ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE :
					 ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
			 errmsg("bad row in warehouse table \"%s\": row " INT64_FORMAT " of the pull, column \"%s\": %s",
					feed->cfg->remote_table, row, feed->names[col], bad_value_reasons[why]),
			 errdetail("Nothing of this cycle was applied."),
			 errhint("Fix the row in the warehouse, or set on_bad_row => 'quarantine' with treble_sync.alter_table().")));
}

/*
 * The row in feed->line has a value that cannot be carried as it is, in
 * column col: on_bad_row 'fail' fails the cycle (fail_on_bad_value(), in
 * the cycle's worker, where the attempt that keeps the row is); otherwise
 * the row is set aside here, or in a reader by the cycle's worker.
 */
static void
set_aside_bad_value(int col, BadValue why)
{
	Assert(why > BAD_VALUE_NONE && why < (int) lengthof(bad_value_reasons));
	if (feed->sink)
		send_bad_value(col, why);	/* failed or set aside by the cycle's worker */
	else if (feed->cfg->on_bad_row == BAD_ROW_FAIL)
		fail_on_bad_value(feed->line.data, feed->line.len, col, why, feed->result->rows_pulled);
	else
		bad_row(feed->line.data, feed->names[col], bad_value_reasons[why], false);
}

/*
 * Turn the next warehouse row into feed->line, one COPY text line,
 * fetching a new block when the current one is used up.  Returns false at
 * the end of the result.  A row with a NULL key fails the cycle, or with
 * on_bad_row 'quarantine' or 'skip' is set aside and the next row taken;
 * so is a row with a value that cannot be carried as it is (BadValue).
 */
static bool
stage_next_row(void)
{
	int			row;
	int			null_key_col;
	int			bad_col;
	BadValue	bad_why;

next_row:
	CHECK_FOR_INTERRUPTS();

	if (feed->block_pos >= feed->block_rows)
	{
		report_progress();
		feed->block_rows = FetchNextBlock(feed->block);
		feed->block_pos = 0;
		if (feed->block_rows == 0)
			return false;
	}
	row = feed->block_pos++;
	null_key_col = -1;

	resetStringInfo(&feed->line);
	bad_col = -1;
	bad_why = BAD_VALUE_NONE;
	for (int i = 0; i < feed->ncols; i++)
	{
		const char *data;
		size_t		len;
		int			before;
		BadValue	why;

		if (i > 0)
			appendStringInfoChar(&feed->line, '\t');
		if (!FetchValue(feed->block, row, i, &data, &len))
		{
			/*
			 * A NULL key under 'quarantine' or 'skip': the rest of the row
			 * is read all the same, for the quarantine to tell it from
			 * other rows without a key.
			 */
			if (feed->is_key[i] && feed->cfg->on_bad_row != BAD_ROW_FAIL)
			{
				if (null_key_col < 0)
					null_key_col = i;
				appendBinaryStringInfo(&feed->line, "\\N", 2);
				continue;
			}
			if (feed->is_key[i])
				ereport(ERROR,
						(errcode(ERRCODE_NOT_NULL_VIOLATION),
						 errmsg("warehouse returned a NULL key in column \"%s\" of table \"%s\"",
								feed->names[i], feed->cfg->name),
						 errdetail("Row %lld of this pull; nothing of this cycle was applied.",
								   (long long) feed->result->rows_pulled + 1),
						 errhint("A key column must never be NULL: fix the row in the warehouse, or register the table with another key.")));
			appendBinaryStringInfo(&feed->line, "\\N", 2);
			continue;
		}
		before = feed->line.len;
		if (feed->kind[i] == FETCH_UTF8 &&
			(why = check_text_bytes(data, len)) != BAD_VALUE_NONE)
		{
			/*
			 * The row is set aside once whole: the value goes in as its
			 * bytes in hex (what the quarantine keeps), masked as a word.
			 */
			if (bad_col < 0)
			{
				bad_col = i;
				bad_why = why;
			}
			if (feed->is_masked[i])
				appendStringInfoString(&feed->line, "(masked)");
			else if (why == BAD_VALUE_INEXACT_REAL)
				append_copy_text(&feed->line, data + DEPARSE_INEXACT_REAL_LEN,
								 len - DEPARSE_INEXACT_REAL_LEN);	/* SQLite's text */
			else
				append_copy_hex(&feed->line, (const unsigned char *) data, len);
			feed->result->bytes_pulled += len;
			continue;
		}
		if (feed->is_masked[i])
		{
			append_masked(i, data, len);
			feed->result->bytes_pulled += feed->line.len - before;
			continue;
		}
		switch (feed->kind[i])
		{
			case FETCH_BINARY:
				append_copy_hex(&feed->line, (const unsigned char *) data, len);
				feed->result->bytes_pulled += len;
				continue;
			case FETCH_INT64:
				enlargeStringInfo(&feed->line, MAXINT8LEN + 1);
				feed->line.len += pg_lltoa(*(const SQLBIGINT *) data,
										   feed->line.data + feed->line.len);
				break;
			case FETCH_UTF8:
				append_copy_text(&feed->line, data, len);
				if (i == feed->check_col || i == feed->check_event)
				{
					/* checked UTF-8 without NUL above: as a C string */
					resetStringInfo(&feed->plain);
					appendBinaryStringInfo(&feed->plain, data, (int) len);
					if (i == feed->check_col)
						FetchCheckComparable(feed->plain.data,
											 feed->cfg->cursor_kind == CURSOR_INTEGER,
											 feed->cfg->remote_table, feed->names[i]);
					else if (bad_col < 0 && !FetchTimestampTextComparable(feed->plain.data))
					{
						bad_col = i;
						bad_why = BAD_VALUE_EVENT_FORM;
					}
				}
				break;
			case FETCH_TEXT:
				OdbcAppendUtf16(&feed->line, (const SQLWCHAR *) data,
								len / sizeof(SQLWCHAR), true);
				if (i == feed->check_col)
					FetchCheckComparable(feed->line.data + before,
										 feed->cfg->cursor_kind == CURSOR_INTEGER,
										 feed->cfg->remote_table, feed->names[i]);
				if (memchr(feed->line.data + before, '\0', feed->line.len - before) != NULL)
				{
					/* the NUL must not cut the line: in hex, as above */
					resetStringInfo(&feed->plain);
					OdbcAppendUtf16(&feed->plain, (const SQLWCHAR *) data,
									len / sizeof(SQLWCHAR), false);
					feed->line.len = before;
					append_copy_hex(&feed->line, (const unsigned char *) feed->plain.data,
									feed->plain.len);
					if (bad_col < 0)
					{
						bad_col = i;
						bad_why = BAD_VALUE_NUL;
					}
				}
				else if (bad_col < 0 && i == feed->check_event &&
						 !FetchTimestampTextComparable(feed->line.data + before))
				{
					bad_col = i;
					bad_why = BAD_VALUE_EVENT_FORM;
				}
				break;
		}
		feed->result->bytes_pulled += feed->line.len - before;
	}
	if (null_key_col >= 0)
	{
		feed->result->rows_pulled++;
		if (feed->sink)
			send_null_key(null_key_col);	/* set aside by the cycle's worker */
		else
			bad_row(feed->line.data, feed->names[null_key_col], "NULL key", true);
		goto next_row;
	}
	if (bad_col >= 0)
	{
		feed->result->rows_pulled++;
		set_aside_bad_value(bad_col, bad_why);
		goto next_row;
	}
	appendStringInfoChar(&feed->line, '\n');
	feed->result->rows_pulled++;
	if (feed->result->rows_pulled - feed->reported_rows >= STAGE_PROGRESS_ROWS)
		report_progress();
	return true;
}

/* COPY's data source: hand out the lines of the batch being copied. */
static int
stage_copy_source(void *outbuf, int minread, int maxread)
{
	int			n = Min(maxread, feed->copy_end - feed->copy_pos);

	memcpy(outbuf, feed->batch.data + feed->copy_pos, n);
	feed->copy_pos += n;
	return n;
}

/*
 * Collect the next batch of rows as COPY text.  Returns false when the
 * result has no more rows.
 */
static bool
fill_batch(void)
{
	if (feed->reader)
		return receive_batch();
	resetStringInfo(&feed->batch);
	feed->nlines = 0;
	feed->first_row = feed->result->rows_pulled + 1;
	while (!feed->eof && feed->nlines < STAGE_BATCH_ROWS && feed->batch.len < STAGE_BATCH_BYTES)
	{
		if (!stage_next_row())
		{
			feed->eof = true;
			break;
		}
		feed->offsets[feed->nlines++] = feed->batch.len;
		appendBinaryStringInfo(&feed->batch, feed->line.data, feed->line.len);
	}
	feed->offsets[feed->nlines] = feed->batch.len;
	return feed->nlines > 0;
}

/*
 * In the PG_CATCH of a subtransaction around COPY (or around the input
 * functions of a batch's values): keep the error, roll the subtransaction
 * back and return to cxt and owner.  A row the local types reject (a data
 * exception or a constraint) is returned for the caller to deal with; any
 * other error (a cancel, a terminate, a trigger's error) is raised again.
 * Either way without its context: what COPY or an input function added
 * there shows the row's values (COPY's line, JSON's "JSON data, line 1:
 * ..."); raised again, the error gets the context around the COPY anew.
 */
static ErrorData *
rollback_data_error(MemoryContext cxt, ResourceOwner owner)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	edata->context = NULL;
	if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_DATA_EXCEPTION &&
		ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION)
	{
		/*
		 * Not a bad row, but raised inside COPY all the same: an input
		 * function may quote the value under another class (tsvector's
		 * "syntax error in tsvector: "..."" is 42601, a reg* type's
		 * "relation "..." does not exist" 42P01), and so may its DETAIL.
		 */
		if (edata->message)
			edata->message = RedactQuoted(edata->message);
		if (edata->detail)
			edata->detail = RedactQuoted(edata->detail);
		ThrowErrorData(edata);
	}
	return edata;
}

/*
 * COPY lines [from, to) of the batch into rel (the staging table, or the
 * copy with its synced columns named).  COPY runs guarded, so that no
 * message raised inside it carries the line it was at (redact.c); the
 * caller ends the guard if it fails.
 */
static void
copy_lines(Relation rel, ParseState *pstate, List *columns, List *options, int from, int to,
		   RedactCopyGuard *guard)
{
	CopyFromState cstate;

	feed->copy_pos = feed->offsets[from];
	feed->copy_end = feed->offsets[to];
	RedactCopyBegin(guard);
	cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, stage_copy_source, columns, options);
	ProgressResume();			/* COPY took the progress slots over */
	CopyFrom(cstate);
	EndCopyFrom(cstate);
	RedactCopyEnd(guard);
	ProgressResume();			/* and gave them up */
}

/*
 * COPY lines [from, to) in a subtransaction.  Returns NULL, or the error
 * of a value the local types reject (class 22 or 23), with nothing of the
 * lines loaded.  Any other error is raised.
 */
static ErrorData *
try_copy_lines(Relation rel, ParseState *pstate, List *columns, List *options, int from, int to)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;
	RedactCopyGuard guard;

	memset(&guard, 0, sizeof(guard));
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		copy_lines(rel, pstate, columns, options, from, to, &guard);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		RedactCopyEnd(&guard);
		edata = rollback_data_error(cxt, owner);
	}
	PG_END_TRY();
	return edata;
}

/*
 * The field of column col in a COPY text line, unescaped; NULL for \N.
 */
static char *
line_field(const char *line, int len, int col)
{
	StringInfoData out;
	int			i = 0;
	int			c = 0;

	while (c < col && i < len)
		if (line[i++] == '\t')
			c++;
	if (i + 2 <= len && line[i] == '\\' && line[i + 1] == 'N' &&
		(i + 2 == len || line[i + 2] == '\t' || line[i + 2] == '\n'))
		return NULL;
	initStringInfo(&out);
	for (; i < len && line[i] != '\t' && line[i] != '\n'; i++)
	{
		if (line[i] == '\\' && i + 1 < len)
		{
			char		e = line[++i];

			appendStringInfoChar(&out, e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
		}
		else
			appendStringInfoChar(&out, line[i]);
	}
	return out.data;
}

/*
 * Find the value the local types reject among lines [from, to) of the
 * batch, without reading any message text (which is in lc_messages'
 * language): convert the values ourselves as COPY does, line by line and
 * column by column, remembering which one is being converted.  COPY turns
 * a line from UTF-8 into the server encoding before it reads any value, so
 * each line's values are converted first, then given to their input
 * functions in column order.  All of it runs in one subtransaction, which
 * the first error ends.
 *
 * Returns true with *line (0-based in the batch) and *col set when some
 * value fails, and *message (unless NULL) set to the error's message;
 * false if all convert (the error was not about one value).  Errors other
 * than data errors (class 22 or 23) are raised.
 */
static bool
locate_bad_value(int from, int to, int *line, int *col, char **message)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int cur_line = -1;
	volatile int cur_col = -1;
	volatile bool found = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		char	  **values = palloc(sizeof(char *) * feed->ncols);

		for (int l = from; l < to; l++)
		{
			const char *text = feed->batch.data + feed->offsets[l];
			int			len = feed->offsets[l + 1] - feed->offsets[l];

			cur_line = l;
			for (int i = 0; i < feed->ncols; i++)
			{
				cur_col = i;
				values[i] = line_field(text, len, i);
				if (values[i] != NULL)
					values[i] = pg_any_to_server(values[i], strlen(values[i]), PG_UTF8);
			}
			for (int i = 0; i < feed->ncols; i++)
			{
				cur_col = i;
				(void) InputFunctionCall(&feed->in_funcs[i], values[i],
										 feed->in_ioparams[i], feed->in_typmods[i]);
			}
			CHECK_FOR_INTERRUPTS();
		}
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata = rollback_data_error(cxt, owner);

		if (message)
			*message = pstrdup(edata->message);
		FreeErrorData(edata);
		found = true;
	}
	PG_END_TRY();

	*line = cur_line;
	*col = cur_col;
	return found;
}

/* The key of a COPY text line, as "v1, v2" for the reports. */
static char *
line_key(const char *line, int len)
{
	StringInfoData key;

	initStringInfo(&key);
	for (int i = 0; i < feed->ncols; i++)
	{
		char	   *v;

		if (!feed->is_key[i])
			continue;
		v = line_field(line, len, i);
		appendStringInfo(&key, "%s%s", key.len ? ", " : "", v ? v : "NULL");
	}
	return key.data;
}

/* How many rows without a key of one digest a cycle met (row_digest()). */
typedef struct DigestCount
{
	uint8		digest[PG_SHA256_DIGEST_LENGTH];	/* the hash key */
	int64		seen;
} DigestCount;

/* Feed bytes into a SHA-256 context, or fail. */
static void
digest_update(pg_cryptohash_ctx *ctx, const void *data, size_t len)
{
	if (pg_cryptohash_update(ctx, (const uint8 *) data, len) < 0)
		elog(ERROR, "could not compute a SHA-256 hash: %s", pg_cryptohash_error(ctx));
}

/*
 * The hex SHA-256 that tells a row without a key from another in the
 * quarantine.  Such a row has nothing but its values to be known by: the
 * digest is that of its COPY text line without the cursor field, the same
 * however often its cursor moves (the same row met again, rewritten by
 * the warehouse, is the same quarantine row), and of how many rows of
 * those values the cycle met before it (the first one's digest is that of
 * its values alone, the n-th's that digest with n).  Two rows equal but
 * for their cursor, or in every value, are so two quarantine rows, and
 * the same rows met again by a later cycle (the hot window's rows, pulled
 * again by each cycle) have the same digests: a cycle pulls a row once.
 */
static char *
row_digest(const char *line, int len)
{
	static const char hex[] = "0123456789abcdef";
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	char	   *out = palloc(PG_SHA256_DIGEST_LENGTH * 2 + 1);
	DigestCount *count;
	bool		found;

	if (pg_cryptohash_init(ctx) < 0)
		elog(ERROR, "could not compute a SHA-256 hash: %s", pg_cryptohash_error(ctx));
	for (int i = 0; i < feed->ncols; i++)
	{
		char	   *v;

		if (i == feed->cursor_col)
			continue;
		v = line_field(line, len, i);
		/* a NULL apart from any value: a tag, then the value and its NUL */
		digest_update(ctx, v ? "v" : "n", 1);
		if (v)
			digest_update(ctx, v, strlen(v) + 1);
	}
	if (pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
		elog(ERROR, "could not compute a SHA-256 hash: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);

	/* the how-manieth row of these values in this cycle */
	if (feed->result->null_key_rows == NULL)
	{
		HASHCTL		info;

		info.keysize = PG_SHA256_DIGEST_LENGTH;
		info.entrysize = sizeof(DigestCount);
		info.hcxt = TopTransactionContext;
		feed->result->null_key_rows = hash_create("treble_sync rows without a key", 64, &info,
												  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	count = hash_search(feed->result->null_key_rows, digest, HASH_ENTER, &found);
	count->seen = found ? count->seen + 1 : 1;
	Assert(count->seen >= 1);
	if (count->seen > 1)
	{
		char		nth[MAXINT8LEN + 2];

		snprintf(nth, sizeof(nth), "#" INT64_FORMAT, count->seen);
		ctx = pg_cryptohash_create(PG_SHA256);
		if (pg_cryptohash_init(ctx) < 0)
			elog(ERROR, "could not compute a SHA-256 hash: %s", pg_cryptohash_error(ctx));
		digest_update(ctx, count->digest, PG_SHA256_DIGEST_LENGTH);
		digest_update(ctx, nth, strlen(nth));
		if (pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
			elog(ERROR, "could not compute a SHA-256 hash: %s", pg_cryptohash_error(ctx));
		pg_cryptohash_free(ctx);
	}
	for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
	{
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 0xF];
	}
	out[PG_SHA256_DIGEST_LENGTH * 2] = '\0';
	return out;
}

/*
 * A row the staging table cannot take: with on_bad_row 'quarantine' it is
 * kept in treble_sync.quarantine (key, column, raw value, reason, cursor; a
 * masked value is not kept), with 'skip' only counted.  A row without a key
 * (null_key) is kept with a digest of its values instead (row_digest()).
 * A row an earlier run already quarantined is counted as rows_bad_known as
 * well: it does not count against max_bad_row_ratio again.
 */
static void
bad_row(const char *line, const char *column, const char *reason, bool null_key)
{
	int			len = strlen(line);
	char	   *key = NULL;
	char	   *raw = NULL;
	char	   *cursor = NULL;
	char	   *digest = NULL;

	Assert(line != NULL);
	feed->result->rows_bad++;
	if (!null_key)
	{
		/* the warehouse has this key: the window refresh must not drop it */
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		key = line_key(line, len);
		feed->result->bad_keys = lappend(feed->result->bad_keys, key);
		MemoryContextSwitchTo(old);
	}
	if (feed->cfg->on_bad_row != BAD_ROW_QUARANTINE)
		return;
	if (null_key)
		digest = row_digest(line, len);
	else
	{
		for (int i = 0; column && i < feed->ncols; i++)
			if (strcmp(feed->names[i], column) == 0)
				raw = feed->is_masked[i] ? pstrdup("(masked)") : line_field(line, len, i);
	}
	if (feed->cursor_col >= 0)
		cursor = line_field(line, len, feed->cursor_col);

	/* kept with the next batch (flush_set_aside()) */
	Assert(feed->set_aside_cxt != NULL);
	if (feed->nset_aside >= QUARANTINE_BATCH_ROWS ||
		feed->set_aside_bytes >= QUARANTINE_BATCH_BYTES)
		flush_set_aside();
	{
		MemoryContext old = MemoryContextSwitchTo(feed->set_aside_cxt);
		QuarantineRow *row;

		if (feed->set_aside == NULL)
			feed->set_aside = palloc(sizeof(QuarantineRow) * QUARANTINE_BATCH_ROWS);
		row = &feed->set_aside[feed->nset_aside++];
		row->key = key ? pstrdup(key) : NULL;
		row->column = column ? pstrdup(column) : NULL;
		row->raw = raw ? pstrdup(raw) : NULL;
		row->reason = pstrdup(reason);
		row->cursor_value = cursor ? pstrdup(cursor) : NULL;
		row->row_digest = digest ? pstrdup(digest) : NULL;
		feed->set_aside_bytes += (raw ? strlen(raw) : 0) + (key ? strlen(key) : 0);
		MemoryContextSwitchTo(old);
	}
}

/*
 * Write the bad rows held so far to the quarantine, in one statement, and
 * count those an earlier run had kept already (rows_bad_known).
 */
static void
flush_set_aside(void)
{
	int64		known;

	if (feed->nset_aside == 0)
		return;
	known = CatalogQuarantine(feed->cfg, feed->result->run_id, feed->set_aside,
							  feed->nset_aside);
	feed->result->rows_bad_known += known;
	feed->set_aside = NULL;
	feed->nset_aside = 0;
	feed->set_aside_bytes = 0;
	MemoryContextReset(feed->set_aside_cxt);
}

/*
 * Load lines [from, to) of a batch one line at a time, setting aside each
 * line the staging table refuses.
 */
static void
load_lines_one_by_one(Relation rel, ParseState *pstate, List *options, int from, int to)
{
	for (int l = from; l < to; l++)
	{
		ErrorData  *edata;
		int			bad_line;
		int			bad_col;

		edata = try_copy_lines(rel, pstate, NIL, options, l, l + 1);
		if (edata == NULL)
			continue;
		if (!locate_bad_value(l, l + 1, &bad_line, &bad_col, NULL))
			bad_col = -1;
		bad_row(pnstrdup(feed->batch.data + feed->offsets[l],
						 feed->offsets[l + 1] - feed->offsets[l]),
				bad_col >= 0 ? feed->names[bad_col] : NULL, edata->message, false);
		FreeErrorData(edata);
	}
}

/*
 * A batch the staging table refused, under 'quarantine' or 'skip': the
 * first value the local types reject is found by their input functions
 * (locate_bad_value(), no COPY), the lines before it are loaded by one
 * COPY and its line is set aside, and so on.  One COPY per line, as
 * before, cost milliseconds for each line of every batch that held a bad
 * value.  Lines refused for another reason (a constraint of the staging
 * table, an error no value's input shows) are loaded one by one.
 */
static void
load_around_bad_rows(Relation rel, ParseState *pstate, List *options)
{
	int			pos = 0;

	while (pos < feed->nlines)
	{
		int			bad_line;
		int			bad_col;
		char	   *message = NULL;
		int			end = feed->nlines;
		bool		found;
		ErrorData  *edata;

		CHECK_FOR_INTERRUPTS();
		found = locate_bad_value(pos, feed->nlines, &bad_line, &bad_col, &message);
		if (found)
		{
			Assert(bad_line >= pos && bad_line < feed->nlines);
			end = bad_line;
		}
		if (end > pos)
		{
			edata = try_copy_lines(rel, pstate, NIL, options, pos, end);
			if (edata != NULL)
			{
				FreeErrorData(edata);
				load_lines_one_by_one(rel, pstate, options, pos, end);
			}
		}
		if (!found)
			break;
		bad_row(pnstrdup(feed->batch.data + feed->offsets[bad_line],
						 feed->offsets[bad_line + 1] - feed->offsets[bad_line]),
				feed->names[bad_col], message, false);
		pos = bad_line + 1;
	}
}

/*
 * on_bad_row 'fail': COPY the whole batch; a value the local types reject
 * fails the cycle with an error that names the table, the row's position
 * in the pull, the column and the reason.  The batch is copied in a
 * subtransaction so that, when it fails, the bad line and column can be
 * found (locate_bad_value(), else line by line) before the error is raised.
 *
 * The error goes to the run log and the server log, which roles read that
 * may not read the copy (pg_read_all_stats): it names no key and no value.
 * The reason is PostgreSQL's message with the value taken out, and neither
 * its DETAIL nor COPY's context, which show the row, are kept.  The row
 * itself (key, column, raw value, reason as it was) is noted in the
 * attempt, for the worker to keep in the quarantine with the failed run,
 * where those who may read the copy find it.
 */
static void
copy_or_explain(Relation rel, ParseState *pstate, List *options)
{
	ErrorData  *edata;
	int			line = -1;
	int			col = -1;

	edata = try_copy_lines(rel, pstate, NIL, options, 0, feed->nlines);
	if (edata == NULL)
		return;

	if (!locate_bad_value(0, feed->nlines, &line, &col, NULL))
	{
		/* not one value's fault: the first line COPY rejects on its own */
		col = -1;
		line = -1;
		for (int l = 0; l < feed->nlines && line < 0; l++)
		{
			ErrorData  *e = try_copy_lines(rel, pstate, NIL, options, l, l + 1);

			if (e != NULL)
			{
				line = l;
				FreeErrorData(e);
			}
		}
	}
	if (line >= 0)
	{
		const char *text = feed->batch.data + feed->offsets[line];
		int			len = feed->offsets[line + 1] - feed->offsets[line];
		char	   *raw = NULL;

		if (col >= 0)
			raw = feed->is_masked[col] ? pstrdup("(masked)") : line_field(text, len, col);
		(void) AttemptNoteBadRow(line_key(text, len), col >= 0 ? feed->names[col] : NULL, raw,
								 edata->message ? edata->message : "unknown error",
								 feed->cursor_col >= 0 ? line_field(text, len, feed->cursor_col) : NULL);
	}
	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 line >= 0 ?
			 errmsg("bad row in warehouse table \"%s\": row " INT64_FORMAT " of the pull, column \"%s\": %s",
					feed->cfg->remote_table, feed->first_row + line,
					col >= 0 ? feed->names[col] : "unknown",
					RedactQuoted(edata->message ? edata->message : "unknown error")) :
			 errmsg("bad row in warehouse table \"%s\": %s",
					feed->cfg->remote_table,
					RedactQuoted(edata->message ? edata->message : "unknown error")),
			 errdetail("Nothing of this cycle was applied."),
			 errhint("Fix the row in the warehouse or the local column type, or set on_bad_row => 'quarantine' with treble_sync.alter_table().")));
}

/*
 * What a reader must know of a pull (wire.h), as bytes for its segment:
 * this load's columns and salt, the registration's on_bad_row and cursor
 * kind as this cycle read them, and the statement.
 */
static void
describe_pull(StringInfo buf, StageFeed *state, int cursor_col, int event_col, const char *sql,
			  int nparams, const OdbcParam *params)
{
	WirePull	pull;

	pull.ncols = state->ncols;
	pull.cursor_col = cursor_col;
	pull.event_col = event_col;
	pull.on_bad_row = state->cfg->on_bad_row;
	pull.cursor_kind = state->cfg->cursor_kind;
	pull.is_binary = state->is_binary;
	pull.text_as_bytes = state->text_as_bytes;
	pull.is_key = state->is_key;
	pull.is_masked = state->is_masked;
	pull.names = state->names;
	pull.salt = state->salt;
	pull.sql = sql;
	pull.nparams = nparams;
	pull.params = unconstify(OdbcParam *, params);
	WireEncodePull(buf, &pull);
}

/*
 * Begin a reader's message (wire.h): its type, and the rows and bytes read
 * so far (a NULL-key row set aside counts as read).
 */
static void
begin_message(StringInfo msg, char type)
{
	WireBeginMessage(msg, type, feed->result->rows_pulled, feed->result->bytes_pulled);
}

/*
 * In a reader: the row just read (feed->line) has a NULL key in column
 * col.  The line goes along, for the quarantine to tell the row apart.
 */
static void
send_null_key(int col)
{
	StringInfoData msg;

	initStringInfo(&msg);
	begin_message(&msg, WIRE_NULL_KEY);
	pq_sendint32(&msg, col);
	pq_sendint32(&msg, feed->line.len);
	pq_sendbytes(&msg, feed->line.data, feed->line.len);
	ReadAheadSend(feed->sink, msg.data, msg.len);
	pfree(msg.data);
}

/*
 * In a reader: the row in feed->line has a value that cannot be carried
 * in column col, for the worker to set aside.
 */
static void
send_bad_value(int col, BadValue why)
{
	StringInfoData msg;

	initStringInfo(&msg);
	begin_message(&msg, WIRE_BAD_VALUE);
	pq_sendint32(&msg, col);
	pq_sendint32(&msg, (int32) why);
	pq_sendbytes(&msg, feed->line.data, feed->line.len);
	ReadAheadSend(feed->sink, msg.data, msg.len);
	pfree(msg.data);
}

/*
 * In the cycle's worker: the reader's next batch into feed->batch, as
 * fill_batch() would have made it; false at the end of the pull.  A row
 * with a NULL key is set aside here, where the quarantine is written.
 */
static bool
receive_batch(void)
{
	for (;;)
	{
		const char *data;
		Size		len;
		StringInfoData msg;
		char		type;
		int64		rows;
		int64		bytes;

		CHECK_FOR_INTERRUPTS();
		Assert(feed != NULL && feed->reader != NULL);
		ReadAheadReceive(feed->reader, &data, &len);
		msg.data = unconstify(char *, data);
		msg.len = msg.maxlen = (int) len;
		msg.cursor = 0;
		type = WireReadHeader(&msg, &rows, &bytes);
		feed->result->rows_pulled = feed->reader_rows + rows;
		feed->result->bytes_pulled = feed->reader_bytes + bytes;
		switch (type)
		{
			case WIRE_NULL_KEY:
				{
					int			col = pq_getmsgint(&msg, 4);
					int			line_len = pq_getmsgint(&msg, 4);
					const char *line;

					if (col < 0 || col >= feed->ncols)
						elog(ERROR, "reader sent a column out of range: %d", col);
					line = pq_getmsgbytes(&msg, line_len);
					bad_row(pnstrdup(line, line_len), feed->names[col], "NULL key", true);
					break;
				}
			case WIRE_BAD_VALUE:
				{
					int			col = pq_getmsgint(&msg, 4);
					int			why = pq_getmsgint(&msg, 4);

					if (col < 0 || col >= feed->ncols ||
						why <= BAD_VALUE_NONE || why >= (int) lengthof(bad_value_reasons))
						elog(ERROR, "reader sent a bad value out of range: column %d, reason %d",
							 col, why);
					if (feed->cfg->on_bad_row == BAD_ROW_FAIL)
						fail_on_bad_value(pnstrdup(msg.data + msg.cursor, msg.len - msg.cursor),
										  msg.len - msg.cursor, col, why,
										  feed->result->rows_pulled);
					bad_row(pnstrdup(msg.data + msg.cursor, msg.len - msg.cursor),
							feed->names[col], bad_value_reasons[why], false);
					break;
				}
			case WIRE_END:
				report_progress();
				feed->eof = true;
				feed->nlines = 0;
				return false;
			case WIRE_BATCH:
				feed->first_row = feed->reader_rows + pq_getmsgint64(&msg);
				feed->nlines = pq_getmsgint(&msg, 4);
				if (feed->nlines <= 0 || feed->nlines > STAGE_BATCH_ROWS)
					elog(ERROR, "reader sent a batch of %d lines", feed->nlines);
				memcpy(feed->offsets, pq_getmsgbytes(&msg, sizeof(int) * (feed->nlines + 1)),
					   sizeof(int) * (feed->nlines + 1));
				resetStringInfo(&feed->batch);
				appendBinaryStringInfo(&feed->batch, msg.data + msg.cursor, msg.len - msg.cursor);
				if (feed->offsets[0] != 0 || feed->offsets[feed->nlines] != feed->batch.len)
					elog(ERROR, "reader sent a batch of %d bytes, announced %d",
						 feed->batch.len, feed->offsets[feed->nlines]);
				for (int i = 0; i < feed->nlines; i++)
					if (feed->offsets[i] >= feed->offsets[i + 1])
						elog(ERROR, "reader sent line %d out of order", i);
				report_progress();
				return true;
			default:
				elog(ERROR, "reader sent a message of unknown type %d", type);
		}
	}
}

/*
 * In the cycle's worker: whether the reader connected to the warehouse
 * (its first message); if not (no connection to be had, a second one
 * refused), the caller reads the pull itself.  Once connected, the reader
 * runs the statement: its failure there is the warehouse's answer to the
 * pull, raised here with the reader's SQLSTATE and retried as the
 * worker's own would be.
 */
static bool
reader_ready(ReadAhead *reader, TableConfig *cfg)
{
	const char *data;
	Size		len;

	if (!ReadAheadReceiveFirst(reader, &data, &len))
		return false;
	if (len != 1 || data[0] != WIRE_CONNECTED)
		elog(ERROR, "reader sent a message of type %d before connecting", len ? data[0] : -1);
	ereport(DEBUG1,
			(errmsg_internal("a reader of \"%s\" is connected to the warehouse", cfg->name)));
	ReadAheadReceive(reader, &data, &len);
	if (len != 1 || data[0] != WIRE_READY)
		elog(ERROR, "reader sent a message of type %d before starting", len ? data[0] : -1);
	return true;
}

/*
 * How each column of the pull is read, once the statement has run: its
 * fetch kind, and whether the cursor's text is checked.
 */
static void
begin_fetch(StageFeed *state, OdbcConn *conn, SQLHSTMT stmt, int cursor_col, int event_col)
{
	state->block = FetchBegin(conn, stmt, state->ncols, state->is_binary,
							  state->text_as_bytes);
	state->kind = palloc(sizeof(FetchKind) * state->ncols);
	state->check_col = -1;
	state->check_event = -1;
	state->sqlite = OdbcDriverIs(conn, DRIVER_SQLITE);
	for (int i = 0; i < state->ncols; i++)
	{
		state->kind[i] = FetchColumnKind(state->block, i);

		/*
		 * A warehouse that compares timestamps as text (SQLite) takes any
		 * value in any column: a cursor value in another form than the
		 * bounds' sorts apart from them, and fails the cycle.
		 */
		if (OdbcTimestampsAsText(conn) &&
			(state->kind[i] == FETCH_TEXT || state->kind[i] == FETCH_UTF8) &&
			!state->is_masked[i] && i == cursor_col)
			state->check_col = i;

		/*
		 * So does an event value, which the window and repair() compare
		 * with their bounds there: in another form it would fall outside
		 * every window and day, and a repair would delete it from the
		 * copy.  Such a row is a bad row.
		 */
		else if (OdbcTimestampsAsText(conn) &&
				 (state->kind[i] == FETCH_TEXT || state->kind[i] == FETCH_UTF8) &&
				 !state->is_masked[i] && i == event_col)
			state->check_event = i;
	}
	if (state->salt)
		state->sha = pg_cryptohash_create(PG_SHA256);
}

/*
 * Entry point of a reader's work (reader.c): run the pull described by
 * pull on conn, and send its rows as batches of COPY text, then the end.
 * Errors are raised here, for the reader to hand over.
 */
void
StageRead(TableConfig *cfg, OdbcConn *conn, const char *pull, Size pull_len, ReadAheadSink *sink)
{
	WirePull	desc;
	StringInfoData msg;
	StageFeed	state;
	CycleResult result;
	SQLHSTMT	stmt;

	Assert(feed == NULL);		/* one load at a time in a process */
	memset(&state, 0, sizeof(state));
	memset(&result, 0, sizeof(result));
	WireDecodePull(unconstify(char *, pull), pull_len, &desc);

	state.cfg = cfg;
	state.result = &result;
	state.sink = sink;
	state.ncols = desc.ncols;
	state.cursor_col = desc.cursor_col;
	cfg->on_bad_row = desc.on_bad_row;
	cfg->cursor_kind = desc.cursor_kind;
	state.is_binary = desc.is_binary;
	state.text_as_bytes = desc.text_as_bytes;
	state.is_key = desc.is_key;
	state.is_masked = desc.is_masked;
	state.names = desc.names;
	state.salt = desc.salt;

	initStringInfo(&msg);
	pq_sendbyte(&msg, WIRE_CONNECTED);
	ReadAheadSend(sink, msg.data, msg.len);
	stmt = OdbcAllocStatement(conn);
	OdbcExecute(conn, stmt, desc.sql, desc.nparams, desc.params);
	begin_fetch(&state, conn, stmt, desc.cursor_col, desc.event_col);
	resetStringInfo(&msg);
	pq_sendbyte(&msg, WIRE_READY);
	ReadAheadSend(sink, msg.data, msg.len);
	initStringInfo(&state.plain);
	initStringInfo(&state.line);
	initStringInfo(&state.batch);
	state.offsets = palloc(sizeof(int) * (STAGE_BATCH_ROWS + 1));

	feed = &state;
	PG_TRY();
	{
		while (fill_batch())
		{
			begin_message(&msg, WIRE_BATCH);
			pq_sendint64(&msg, feed->first_row);
			pq_sendint32(&msg, feed->nlines);
			pq_sendbytes(&msg, (const char *) feed->offsets, sizeof(int) * (feed->nlines + 1));
			pq_sendbytes(&msg, feed->batch.data, feed->batch.len);
			ReadAheadSend(sink, msg.data, msg.len);
		}
		begin_message(&msg, WIRE_END);
		ReadAheadSend(sink, msg.data, msg.len);
	}
	PG_FINALLY();
	{
		if (state.sha)
			pg_cryptohash_free(state.sha);
		feed = NULL;
	}
	PG_END_TRY();
	OdbcFreeStatement(conn, stmt);
}

/*
 * The fewest rows max_bad_row_ratio is applied to (docs/functions.md): at
 * the default ratio, a cycle may set aside 2 new bad rows however few it
 * pulled.
 */
#define BAD_ROW_RATIO_MIN_ROWS 100

/*
 * Load the rows of a remote statement into the staging table (or the
 * copy, target->copy_relid), counting rows and bytes into result: those
 * of stmt, already executed, or else of sql with its parameters, which
 * runs here or, with target->read_ahead and a worker slot free, in a
 * reader process.  Its buffers live in a memory context of their own,
 * gone when it returns: a pull in slices calls it once a slice.
 */
static void
stage_load(StageTarget *target, TableConfig *cfg, OdbcConn *conn, SQLHSTMT stmt,
		   const char *sql, int nparams, const OdbcParam *params, CycleResult *result)
{
	Oid			stage_relid = target->stage_relid;
	Relation	rel;
	ParseState *pstate;
	List	   *options;
	ListCell   *lc;
	StageFeed	state;
	int			i = 0;
	int			cursor_col = -1;
	int			event_col = -1;
	int64		new_bad;
	SQLHSTMT	volatile own_stmt = SQL_NULL_HSTMT;
	MemoryContext load_cxt = AllocSetContextCreate(CurrentMemoryContext,
												   "treble_sync stage load",
												   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old_cxt = MemoryContextSwitchTo(load_cxt);

	memset(&state, 0, sizeof(state));
	state.cfg = cfg;
	state.result = result;
	state.set_aside_cxt = AllocSetContextCreate(load_cxt, "treble_sync bad rows",
												ALLOCSET_DEFAULT_SIZES);
	state.ncols = list_length(cfg->columns);
	state.is_binary = palloc0(sizeof(bool) * state.ncols);
	state.text_as_bytes = palloc0(sizeof(bool) * state.ncols);
	state.is_key = palloc0(sizeof(bool) * state.ncols);
	state.is_masked = palloc0(sizeof(bool) * state.ncols);
	initStringInfo(&state.plain);
	state.names = palloc0(sizeof(char *) * state.ncols);
	initStringInfo(&state.line);

	foreach(lc, cfg->columns)
	{
		char	   *name = lfirst(lc);

		state.names[i] = name;
		state.is_key[i] = ListHasName(cfg->key_columns, name);
		state.is_masked[i] = ListHasName(cfg->masked_columns, name);
		if (state.is_masked[i] && state.salt == NULL)
			state.salt = CatalogMaskSalt(cfg->owner);
		state.is_binary[i] = get_atttype(stage_relid, i + 1) == BYTEAOID;
		/*
		 * as deparse.c selected it; through psqlODBC in a UTF-8 locale,
		 * every value as the server's text (OdbcCharIsUtf8())
		 */
		state.text_as_bytes[i] = !state.is_binary[i] &&
			!ListHasName(cfg->absent_columns, name) &&
			(DeparseTextAsBytes(cfg, conn, name) || OdbcCharIsUtf8(conn));
		if (cfg->cursor_column && strcmp(name, cfg->cursor_column) == 0)
			cursor_col = i;
		if (cfg->event_column && strcmp(name, cfg->event_column) == 0)
			event_col = i;
		i++;
	}
	state.cursor_col = cursor_col;

	if (stmt == SQL_NULL_HSTMT && target->read_ahead)
	{
		StringInfoData pull;

		describe_pull(&pull, &state, cursor_col, event_col, sql, nparams, params);
		state.reader = ReadAheadStart(cfg, pull.data, pull.len);
		state.reader_rows = result->rows_pulled;
		state.reader_bytes = result->bytes_pulled;
		if (state.reader && !reader_ready(state.reader, cfg))
		{
			ReadAheadStop(state.reader, false);
			state.reader = NULL;	/* read here, as without a reader */
		}
	}
	if (state.reader == NULL)
	{
		if (stmt == SQL_NULL_HSTMT)
		{
			own_stmt = stmt = OdbcAllocStatement(conn);
			OdbcExecute(conn, stmt, sql, nparams, unconstify(OdbcParam *, params));
		}
		begin_fetch(&state, conn, stmt, cursor_col, event_col);
	}

	rel = table_open(stage_relid, RowExclusiveLock);
	state.in_funcs = palloc(sizeof(FmgrInfo) * state.ncols);
	state.in_ioparams = palloc(sizeof(Oid) * state.ncols);
	state.in_typmods = palloc(sizeof(int32) * state.ncols);
	for (i = 0; i < state.ncols; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);
		Oid			func;

		getTypeInputInfo(att->atttypid, &func, &state.in_ioparams[i]);
		fmgr_info(func, &state.in_funcs[i]);
		state.in_typmods[i] = att->atttypmod;
	}
	pstate = make_parsestate(NULL);
	addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL, false, false);
	options = list_make1(makeDefElem("encoding", (Node *) makeString("UTF8"), -1));
	if (OidIsValid(target->copy_relid))
	{
		state.copy_rel = table_open(target->copy_relid, RowExclusiveLock);
		state.copy_pstate = make_parsestate(NULL);
		addRangeTableEntryForRelation(state.copy_pstate, state.copy_rel, RowExclusiveLock,
									  NULL, false, false);
		foreach(lc, cfg->columns)
			state.copy_columns = lappend(state.copy_columns, makeString(lfirst(lc)));
	}

	state.reported_rows = result->rows_pulled;
	state.reported_bytes = result->bytes_pulled;
	initStringInfo(&state.batch);
	state.offsets = palloc(sizeof(int) * (STAGE_BATCH_ROWS + 1));
	feed = &state;
	PG_TRY();
	{
		while (fill_batch())
		{
			ErrorData  *edata;

			if (feed->copy_rel != NULL)
			{
				/* straight into the copy; a batch it refuses goes to staging */
				edata = try_copy_lines(feed->copy_rel, feed->copy_pstate, feed->copy_columns,
									   options, 0, feed->nlines);
				if (edata == NULL)
				{
					target->direct_rows += feed->nlines;
					continue;
				}
				FreeErrorData(edata);
			}
			target->staged_rows += feed->nlines;
			if (cfg->on_bad_row == BAD_ROW_FAIL)
			{
				copy_or_explain(rel, pstate, options);
				continue;
			}
			if (try_copy_lines(rel, pstate, NIL, options, 0, feed->nlines) == NULL)
				continue;
			load_around_bad_rows(rel, pstate, options);
		}
		report_progress();
		flush_set_aside();
	}
	PG_FINALLY();
	{
		if (state.sha)
			pg_cryptohash_free(state.sha);
		ReadAheadStop(state.reader, state.eof);	/* at the end it exits alone */
		feed = NULL;
	}
	PG_END_TRY();
	if (own_stmt != SQL_NULL_HSTMT)
		OdbcFreeStatement(conn, own_stmt);

	/*
	 * The rows an earlier run quarantined already counted then.  A pull of
	 * fewer than BAD_ROW_RATIO_MIN_ROWS rows is judged as if it had that
	 * many: one bad row in a quiet hour is set aside, not "1 of 1" that
	 * stops the table (a failed cycle remembers nothing, so it would count
	 * again every cycle); a feed whose rows turn bad still stops it.
	 */
	Assert(result->rows_bad_known >= 0 && result->rows_bad_known <= result->rows_bad);
	new_bad = result->rows_bad - result->rows_bad_known;
	if (new_bad > 0 && cfg->on_bad_row != BAD_ROW_FAIL &&
		(double) new_bad > cfg->max_bad_row_ratio *
		(double) Max(result->rows_pulled, BAD_ROW_RATIO_MIN_ROWS))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("too many bad rows from warehouse table \"%s\": " INT64_FORMAT " of " INT64_FORMAT,
						cfg->remote_table, new_bad, result->rows_pulled),
				 errdetail("max_bad_row_ratio is %g. Nothing of this cycle was applied.",
						   cfg->max_bad_row_ratio),
				 errhint("Fix the rows in the warehouse or the local column types, or raise max_bad_row_ratio.")));

	free_parsestate(pstate);
	table_close(rel, NoLock);
	if (state.copy_rel != NULL)
	{
		free_parsestate(state.copy_pstate);
		table_close(state.copy_rel, NoLock);
	}
	MemoryContextSwitchTo(old_cxt);
	MemoryContextDelete(load_cxt);
}

/*
 * Load the rows of an executed remote statement into the staging table
 * (or the copy): see stage_load().
 */
void
StageLoad(StageTarget *target, TableConfig *cfg, OdbcConn *conn, SQLHSTMT stmt,
		  CycleResult *result)
{
	stage_load(target, cfg, conn, stmt, NULL, 0, NULL, result);
}

/*
 * Run a remote statement and load its rows into the staging table (or
 * the copy), here or in a reader process: see stage_load().
 */
void
StagePull(StageTarget *target, TableConfig *cfg, OdbcConn *conn, const char *sql,
		  int nparams, const OdbcParam *params, CycleResult *result)
{
	stage_load(target, cfg, conn, SQL_NULL_HSTMT, sql, nparams, params, result);
}

/*
 * After a cycle's upsert: the unresolved quarantine rows whose key came
 * with a good row this time (staged, so applied unless the copy held a
 * newer version) are marked resolved by this run: under 'quarantine',
 * and under 'fail', whose failed cycles keep their bad row there too; only
 * if the table has such rows.  In an SPI connection.
 */
void
StageResolveQuarantine(TableConfig *cfg, int64 run_id)
{
	Datum		keys;
	Datum		cursors;
	Oid			types[1] = {TEXTARRAYOID};
	Datum		values[1];
	bool		isnull;
	Datum		found;
	int			nestlevel;

	if (cfg->on_bad_row == BAD_ROW_SKIP || run_id <= 0 ||
		!CatalogQuarantinedVersions(cfg, &keys, &cursors))
		return;
	values[0] = keys;

	/*
	 * The quarantined keys against the staged rows by a hash join (which
	 * the worker otherwise turns off): probing the staged rows for each
	 * key cost their product.
	 */
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("enable_hashjoin", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (SPI_execute_with_args(psprintf("SELECT pg_catalog.array_agg(q.k) FROM"
									   " (SELECT DISTINCT k FROM pg_catalog.unnest($1) k) q"
									   " WHERE EXISTS (SELECT 1 FROM " STAGE_TABLE " s"
									   "  WHERE %s OPERATOR(pg_catalog.=) q.k)",
									   LocalQuarantineKey(cfg, "s")),
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not look up the quarantined keys of \"%s\"", cfg->name);
	AtEOXact_GUC(true, nestlevel);
	found = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		CatalogResolveQuarantine(cfg, run_id, found);
}
