/*-------------------------------------------------------------------------
 *
 * fetch.c
 *	  Reading remote results: whole blocks of rows for the bulk pull, and
 *	  single values for metadata and the cut.
 *
 * The bulk pull uses an ODBC block cursor: every column is bound to an
 * array of fixed-width slots (column-wise binding, SQL_ATTR_ROW_ARRAY_SIZE),
 * so one SQLFetch fills hundreds of rows and values are read straight from
 * the arrays, with no driver call per value.  Integers are bound in their
 * ODBC binary form, binary data as bytes, text the caller asks for as
 * stored as bytes too (FETCH_UTF8: SQLite's driver drops bytes that are
 * not UTF-8 on the way to UTF-16, and maps U+100000..U+10FFFF onto the
 * first plane; there every column but bytea is read so; through
 * psqlODBC's Unicode driver in a UTF-8 locale every column but bytea is
 * read as the server's text, SQL_C_CHAR, see OdbcCharIsUtf8()), and everything
 * else as UTF-16 text
 * (SQL_C_WCHAR): dates and times too, so that the copy's own input
 * functions read them (an ODBC timestamp structure has no era, no
 * infinity and four-digit years; see deparse.c for psqlODBC).  The
 * slots' width follows the
 * column's declared size within fixed limits, and the number of rows per
 * block follows from a fixed budget, so memory is the same whatever the
 * size of the pull.
 *
 * A value longer than its slot (a 140k-character text) is read again whole
 * with SQLSetPos and SQLGetData.  That needs SQL_GD_BLOCK and SQL_GD_BOUND
 * done right, which only psqlODBC does.  A driver whose declared column
 * sizes bound its values (MariaDB's) is read in blocks too when every
 * column's declared size fits a slot, slots then sized so that no value can
 * be cut.  Any other result is read one row at a time, every value through
 * SQLGetData, which is slower but complete.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "common/int.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"

#include "fetch.h"
#include "odbc.h"

/* Bytes of bound slots per block, all columns together. */
#define FETCH_BLOCK_BYTES (4 * 1024 * 1024)
/* Rows per block at most: beyond this, blocks bring nothing more. */
#define FETCH_MAX_ROWS 1000
/* Width of a text slot, in UTF-16 code units, terminator excluded. */
#define FETCH_MIN_TEXT_UNITS 32
#define FETCH_MAX_TEXT_UNITS 1024
/* Width of a binary slot, in bytes. */
#define FETCH_MIN_BINARY_BYTES 64
#define FETCH_MAX_BINARY_BYTES 8192
/* A slot sized from a declared size that holds every value, at most. */
#define FETCH_MAX_EXACT_BYTES 16384
/* First size of the buffer a long value is read into. */
#define FETCH_WHOLE_INITIAL 65536

/* One bound column: rows slots of width bytes, and their length indicators. */
typedef struct FetchColumn
{
	FetchKind	kind;
	SQLSMALLINT c_type;			/* the C type it is bound as */
	SQLLEN		width;			/* bytes per slot, terminator included */
	char	   *slots;
	SQLLEN	   *ind;
	bool		hex;			/* bytes that arrive as their hex (ClickHouse) */
} FetchColumn;

struct FetchBlock
{
	OdbcConn   *conn;
	SQLHSTMT	stmt;
	int			ncols;
	bool		bound;			/* false: one row at a time, by SQLGetData */
	bool		exact;			/* slots hold any value: no re-read needed */
	SQLULEN		max_rows;
	SQLULEN		nrows;			/* rows in the current block */
	SQLUSMALLINT *row_status;
	FetchColumn *cols;
	char	   *whole;			/* a value read whole with SQLGetData */
	size_t		whole_size;
};

/* Whether a column's declared size counts characters. */
static bool
is_character_type(SQLSMALLINT sql_type)
{
	switch (sql_type)
	{
		case SQL_CHAR:
		case SQL_VARCHAR:
		case SQL_LONGVARCHAR:
		case SQL_WCHAR:
		case SQL_WVARCHAR:
		case SQL_WLONGVARCHAR:
			return true;
		default:
			return false;
	}
}

/*
 * The slot width of a column, in bytes, from the size the driver declares
 * for it: wide enough for the usual value, bounded so that one column with
 * a huge declared size does not starve the block.
 */
static SQLLEN
slot_width(SQLSMALLINT sql_type, SQLULEN column_size, bool binary)
{
	SQLULEN		n;

	if (binary)
		return Max(Min(column_size, FETCH_MAX_BINARY_BYTES), FETCH_MIN_BINARY_BYTES);

	/*
	 * For character types the size is in characters; for numbers and dates
	 * it is a precision, and the text form adds a sign, a point, a zone.
	 */
	n = is_character_type(sql_type) ? column_size : column_size + 16;
	n = Max(Min(n, FETCH_MAX_TEXT_UNITS), FETCH_MIN_TEXT_UNITS);
	return (SQLLEN) ((n + 1) * sizeof(SQLWCHAR));
}

/*
 * The slot width, in bytes, that holds every value of a column whose
 * declared size bounds its values, or 0 if that is unknown or too wide to
 * bind.  Text sizes count characters, and a character beyond the Basic
 * Multilingual Plane takes two UTF-16 code units.
 */
static SQLLEN
exact_slot_width(SQLSMALLINT sql_type, SQLULEN column_size, bool binary)
{
	SQLULEN		bytes;

	if (column_size == 0)
		return 0;
	if (is_character_type(sql_type))
		bytes = binary ? column_size : (2 * column_size + 1) * sizeof(SQLWCHAR);
	else if (sql_type == SQL_DECIMAL || sql_type == SQL_NUMERIC ||
			 sql_type == SQL_TYPE_DATE || sql_type == SQL_TYPE_TIMESTAMP ||
			 sql_type == SQL_BIT)
	{
		/* digits, and a sign, a point, dashes or colons */
		bytes = binary ? column_size : (column_size + 16 + 1) * sizeof(SQLWCHAR);
	}
	else
	{
		/*
		 * Floats, times, binary strings: their text or bytes are not bounded
		 * by the declared size in a way to stake a value on (a too-narrow
		 * slot is cut without a word).
		 */
		return 0;
	}
	return bytes <= FETCH_MAX_EXACT_BYTES ? (SQLLEN) bytes : 0;
}

/*
 * Whether a result column is unsigned (MariaDB's BIGINT UNSIGNED holds
 * values beyond a signed 64-bit integer, so it travels as text).
 */
static bool
column_is_unsigned(OdbcConn *conn, SQLHSTMT stmt, int col)
{
	SQLLEN		is_unsigned = SQL_FALSE;
	SQLRETURN	rc = SQLColAttributeW(stmt, col, SQL_DESC_UNSIGNED, NULL, 0, NULL,
									  &is_unsigned);

	OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "describing a remote result");
	return is_unsigned == SQL_TRUE;
}

/* Set a statement attribute that takes an integer or a pointer. */
static void
set_stmt_attr(FetchBlock *b, SQLINTEGER attr, SQLPOINTER value, const char *operation)
{
	SQLRETURN	rc = SQLSetStmtAttr(b->stmt, attr, value, 0);

	OdbcCheck(b->conn, rc, SQL_HANDLE_STMT, b->stmt, operation);
}

/*
 * Prepare to read an executed statement's result in blocks.  is_binary
 * says which columns are read as bytes rather than text, and
 * text_as_bytes (NULL: none) which text columns are read as the bytes
 * the warehouse sends (the statement selected them so), for the caller to
 * check as UTF-8.
 */
FetchBlock *
FetchBegin(OdbcConn *conn, SQLHSTMT stmt, int ncols, const bool *is_binary,
		   const bool *text_as_bytes)
{
	FetchBlock *b = palloc0(sizeof(FetchBlock));
	SQLLEN		row_bytes = 0;

	b->conn = conn;
	b->stmt = stmt;
	b->ncols = ncols;
	b->cols = palloc0(sizeof(FetchColumn) * ncols);
	b->bound = OdbcSupportsBlockGetData(conn);
	b->exact = !b->bound && OdbcDeclaredSizesHold(conn);

	{
		int			got = FetchResultColumns(conn, stmt);

		if (got != ncols)
			elog(ERROR, "remote query returned %d columns, expected %d", got, ncols);
	}

	for (int i = 0; i < ncols; i++)
	{
		FetchColumn *c = &b->cols[i];
		SQLWCHAR	name[2];
		SQLSMALLINT name_len;
		SQLSMALLINT sql_type;
		SQLULEN		size;
		SQLSMALLINT digits;
		SQLSMALLINT nullable;
		SQLRETURN	rc;

		rc = SQLDescribeColW(stmt, i + 1, name, lengthof(name), &name_len,
							 &sql_type, &size, &digits, &nullable);
		OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "describing a remote result");
		if (!is_binary[i] && text_as_bytes && text_as_bytes[i] && OdbcCharIsUtf8(conn))
		{
			/*
			 * The server's text as sent, whatever the type (odbc.c): a slot
			 * of as many bytes as a UTF-16 one, terminator included.
			 */
			c->kind = FETCH_UTF8;
			c->c_type = SQL_C_CHAR;
			c->width = slot_width(sql_type, size, false);
		}
		else if (is_binary[i] || (text_as_bytes && text_as_bytes[i]))
		{
			c->kind = is_binary[i] ? FETCH_BINARY : FETCH_UTF8;
			c->c_type = SQL_C_BINARY;
			/* selected as hex(...): deparse.c's DeparseReadsHex() */
			c->hex = OdbcDriverIs(conn, DRIVER_CLICKHOUSE);
			c->width = slot_width(sql_type, size, true);
			if (b->exact && (c->width = exact_slot_width(sql_type, size, true)) == 0)
				b->exact = false;
			/* text sizes count characters: up to 4 bytes each in UTF-8 */
			if (b->exact && c->kind == FETCH_UTF8 &&
				(!is_character_type(sql_type) || size > FETCH_MAX_EXACT_BYTES / 4 ||
				 (c->width = exact_slot_width(sql_type, size * 4, true)) == 0))
				b->exact = false;
		}
		else if ((sql_type == SQL_BIGINT && !column_is_unsigned(conn, stmt, i + 1)) ||
				 sql_type == SQL_INTEGER || sql_type == SQL_SMALLINT || sql_type == SQL_TINYINT)
		{
			/* integers travel in binary: no text round trip */
			c->kind = FETCH_INT64;
			c->c_type = SQL_C_SBIGINT;
			c->width = sizeof(SQLBIGINT);
		}
		else
		{
			c->kind = FETCH_TEXT;
			c->c_type = SQL_C_WCHAR;
			c->width = slot_width(sql_type, size, false);
			if (b->exact && (c->width = exact_slot_width(sql_type, size, false)) == 0)
				b->exact = false;
		}
		row_bytes += c->width + sizeof(SQLLEN);
	}

	if (b->exact)
		b->bound = true;
	if (!b->bound)
	{
		/* read whole with SQLGetData: only text and bytes */
		for (int i = 0; i < ncols; i++)
		{
			bool		bytes = b->cols[i].kind == FETCH_BINARY || b->cols[i].kind == FETCH_UTF8;

			b->cols[i].kind = bytes ? b->cols[i].kind : FETCH_TEXT;
			if (!bytes)
				b->cols[i].c_type = SQL_C_WCHAR;
			else if (b->cols[i].c_type != SQL_C_CHAR)
				b->cols[i].c_type = SQL_C_BINARY;
		}
		b->max_rows = 1;
		return b;
	}

	b->max_rows = Max(Min(FETCH_BLOCK_BYTES / row_bytes, FETCH_MAX_ROWS), 1);
	b->row_status = palloc0(sizeof(SQLUSMALLINT) * b->max_rows);

	set_stmt_attr(b, SQL_ATTR_ROW_BIND_TYPE, (SQLPOINTER) SQL_BIND_BY_COLUMN,
				  "setting column-wise binding");
	set_stmt_attr(b, SQL_ATTR_ROW_ARRAY_SIZE, (SQLPOINTER) b->max_rows,
				  "setting the number of rows per block");
	set_stmt_attr(b, SQL_ATTR_ROW_STATUS_PTR, b->row_status, "binding the row status array");
	set_stmt_attr(b, SQL_ATTR_ROWS_FETCHED_PTR, &b->nrows, "binding the fetched-rows counter");

	for (int i = 0; i < ncols; i++)
	{
		FetchColumn *c = &b->cols[i];
		SQLRETURN	rc;

		c->slots = palloc(c->width * b->max_rows);
		c->ind = palloc(sizeof(SQLLEN) * b->max_rows);
		rc = SQLBindCol(stmt, i + 1, c->c_type, c->slots, c->width, c->ind);
		OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "binding a column of a remote result");
	}
	return b;
}

/* The bytes of the terminator the driver writes after a value of a C type. */
static size_t
terminator_len(SQLSMALLINT c_type)
{
	return c_type == SQL_C_WCHAR ? sizeof(SQLWCHAR) : c_type == SQL_C_CHAR ? 1 : 0;
}

/* How column col (from 0) of a block is handed out by FetchValue. */
FetchKind
FetchColumnKind(FetchBlock *b, int col)
{
	return b->cols[col].kind;
}

/*
 * A value did not fit a slot sized from its column's declared size: the
 * driver broke its own declaration, and the value cannot be read again.
 */
static void
too_long_for_declared_size(FetchBlock *b)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_ERROR),
			 errmsg("warehouse returned a value longer than its column's declared size"),
			 errdetail("ODBC driver %s was read in blocks sized from the declared sizes.",
					   OdbcDriverDescription(b->conn))));
}

/* Fetch the next block; returns its number of rows, 0 at the end. */
int
FetchNextBlock(FetchBlock *b)
{
	SQLRETURN	rc;

	CHECK_FOR_INTERRUPTS();

	b->nrows = 0;
	OdbcBeginRemoteCall(b->conn, b->stmt);
	rc = SQLFetch(b->stmt);
	OdbcEndRemoteCall();
	if (rc == SQL_NO_DATA)
		return 0;
	/* SQL_SUCCESS_WITH_INFO: some value did not fit its slot (01004) */
	OdbcCheck(b->conn, rc, SQL_HANDLE_STMT, b->stmt, "fetching rows from the warehouse");

	if (!b->bound)
		return 1;

	for (SQLULEN r = 0; r < b->nrows; r++)
	{
		if (b->row_status[r] == SQL_ROW_ERROR)
			OdbcCheck(b->conn, SQL_ERROR, SQL_HANDLE_STMT, b->stmt,
					  "fetching a row from the warehouse");
		/* slots that were to hold any value: a cut one must not pass */
		if (b->exact && (rc == SQL_SUCCESS_WITH_INFO ||
						 b->row_status[r] == SQL_ROW_SUCCESS_WITH_INFO))
			too_long_for_declared_size(b);
	}
	return (int) b->nrows;
}

/*
 * Read one value whole into b->whole, for a driver whose SQLGetData
 * starts again from the value's first byte at every call instead of
 * returning the next part (ClickHouse's): it also ends SQL_C_BINARY data
 * with a NUL like a string, counts that terminator against the buffer
 * (01004 when the value exactly fills it) and always reports the value's
 * whole length.  So ask once, and if the value and its terminator did
 * not fit, grow the buffer to hold them and ask again from the start.
 */
static ssize_t
read_whole_restarting(FetchBlock *b, int col, SQLSMALLINT c_type)
{
	size_t		term = Max(terminator_len(c_type), 1);

	for (int attempt = 0;; attempt++)
	{
		SQLLEN		ind = 0;
		SQLRETURN	rc;
		size_t		need;

		CHECK_FOR_INTERRUPTS();
		OdbcBeginRemoteCall(b->conn, b->stmt);
		rc = SQLGetData(b->stmt, col + 1, c_type, b->whole, (SQLLEN) b->whole_size, &ind);
		OdbcEndRemoteCall();
		OdbcCheck(b->conn, rc, SQL_HANDLE_STMT, b->stmt, "reading a value from the warehouse");
		if (ind == SQL_NULL_DATA)
			return -1;
		if (ind < 0 || pg_add_size_overflow((size_t) ind, term, &need))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("warehouse returned a value of unknown length"),
					 errdetail("ODBC driver %s reported length %lld.",
							   OdbcDriverDescription(b->conn), (long long) ind)));
		if (need <= b->whole_size)
			return (ssize_t) ind;	/* the value and its terminator fitted */

		/* the buffer was sized from the reported length: it must not move */
		if (attempt > 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("warehouse returned a value longer than the length it reported"),
					 errdetail("ODBC driver %s reported a different length when asked again.",
							   OdbcDriverDescription(b->conn))));
		if (need > MaxAllocHugeSize)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("warehouse value of %lld bytes is too long to read",
							(long long) ind)));
		b->whole_size = Max(b->whole_size * 2, need);
		b->whole_size = Min(b->whole_size, MaxAllocHugeSize);
		b->whole = repalloc_huge(b->whole, b->whole_size);
	}
}

/*
 * Read one value whole with SQLGetData into b->whole, growing it as
 * needed.  Returns its length in bytes, or -1 for SQL NULL.  A driver
 * that follows the specification returns a long value in parts, each call
 * the next one, then SQL_NO_DATA.
 */
static ssize_t
read_whole(FetchBlock *b, int col, SQLSMALLINT c_type)
{
	size_t		term = terminator_len(c_type);
	size_t		len = 0;

	if (b->whole == NULL)
	{
		b->whole_size = FETCH_WHOLE_INITIAL;
		b->whole = MemoryContextAlloc(GetMemoryChunkContext(b), b->whole_size);
	}

	if (OdbcDriverIs(b->conn, DRIVER_CLICKHOUSE))
		return read_whole_restarting(b, col, c_type);

	for (;;)
	{
		SQLLEN		ind = 0;
		SQLLEN		room = b->whole_size - len;
		SQLRETURN	rc;

		CHECK_FOR_INTERRUPTS();
		OdbcBeginRemoteCall(b->conn, b->stmt);
		rc = SQLGetData(b->stmt, col + 1, c_type, b->whole + len, room, &ind);
		OdbcEndRemoteCall();
		if (rc == SQL_NO_DATA)
			break;
		OdbcCheck(b->conn, rc, SQL_HANDLE_STMT, b->stmt, "reading a value from the warehouse");
		if (ind == SQL_NULL_DATA)
			return -1;
		if (ind != SQL_NO_TOTAL && (size_t) ind + term <= (size_t) room)
		{
			len += ind;			/* the rest fitted */
			break;
		}

		/* truncated: the buffer is full but for the terminator; grow it */
		len += room - term;
		if (ind == SQL_NO_TOTAL)
			b->whole_size *= 2;
		else
			b->whole_size = Max(b->whole_size * 2, len + (ind - (room - term)) + term);
		b->whole = repalloc_huge(b->whole, b->whole_size);
	}
	return (ssize_t) len;
}

/*
 * The bytes of a value that the warehouse sent as their hex (deparse.c's
 * DeparseReadsHex()), decoded in place (each byte is written at or before
 * the digits it comes from); returns their length.  Anything but pairs of
 * hex digits is an error, never a value.
 */
static ssize_t
decode_hex_in_place(FetchBlock *b, char *data, ssize_t len)
{
	static const int8 digit[256] = {
		['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
		['7'] = 8, ['8'] = 9, ['9'] = 10, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14,
		['E'] = 15, ['F'] = 16, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
		['f'] = 16,
	};

	Assert(len >= 0);
	if (len % 2 != 0)
		goto bad;
	for (ssize_t i = 0; i < len / 2; i++)
	{
		int			hi = digit[(unsigned char) data[2 * i]];
		int			lo = digit[(unsigned char) data[2 * i + 1]];

		if (hi == 0 || lo == 0)
			goto bad;
		data[i] = (char) (((hi - 1) << 4) | (lo - 1));
	}
	return len / 2;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_FDW_ERROR),
			 errmsg("warehouse returned a value that is not the hex of its bytes"),
			 errdetail("The value was selected as hex() through ODBC driver %s.",
					   OdbcDriverDescription(b->conn))));
	return -1;					/* not reached */
}

/*
 * The value of column col (from 0) of row row (from 0) of the current
 * block: UTF-16 text or bytes (FETCH_UTF8 too), and its length in bytes.  False for NULL.
 * The pointer is valid until the next call.
 */
bool
FetchValue(FetchBlock *b, int row, int col, const char **data, size_t *len)
{
	FetchColumn *c = &b->cols[col];
	SQLLEN		ind;
	ssize_t		n;

	if (b->bound)
	{
		SQLLEN		room = c->width - terminator_len(c->c_type);

		/* hex comes from ClickHouse only, which is read a row at a time */
		Assert(!c->hex);

		ind = c->ind[row];
		if (ind == SQL_NULL_DATA)
			return false;
		if (c->kind == FETCH_INT64)
		{
			*data = c->slots + (size_t) row * c->width;
			*len = c->width;
			return true;
		}
		if (ind != SQL_NO_TOTAL && ind <= room)
		{
			*data = c->slots + (size_t) row * c->width;
			*len = ind;
			return true;
		}

		/* longer than its slot, which was to hold any value */
		if (b->exact)
			too_long_for_declared_size(b);

		/* longer than its slot: position on the row and read it whole */
		if (b->max_rows > 1)
		{
			SQLRETURN	rc = SQLSetPos(b->stmt, row + 1, SQL_POSITION, SQL_LOCK_NO_CHANGE);

			OdbcCheck(b->conn, rc, SQL_HANDLE_STMT, b->stmt,
					  "positioning on a row to read a long value");
		}
	}

	n = read_whole(b, col, c->c_type);
	if (n < 0)
		return false;
	if (c->hex)
		n = decode_hex_in_place(b, b->whole, n);
	*data = b->whole;
	*len = n;
	return true;
}

/* Advance a single-row cursor; false at the end of the result. */
bool
FetchNextRow(OdbcConn *conn, SQLHSTMT stmt)
{
	SQLRETURN	rc;

	OdbcBeginRemoteCall(conn, stmt);
	rc = SQLFetch(stmt);
	OdbcEndRemoteCall();
	if (rc == SQL_NO_DATA)
		return false;
	OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "fetching rows from the warehouse");
	return true;
}

/* The number of columns of an executed statement's result. */
int
FetchResultColumns(OdbcConn *conn, SQLHSTMT stmt)
{
	SQLSMALLINT n;
	SQLRETURN	rc = SQLNumResultCols(stmt, &n);

	OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "describing a remote result");
	return n;
}

/*
 * Read column col (from 1) of the current row of a single-row cursor whole,
 * as c_type, into *data (palloc'd, for the caller to free).  Returns its
 * length in bytes, or -1 for SQL NULL.
 */
static ssize_t
read_single(OdbcConn *conn, SQLHSTMT stmt, int col, SQLSMALLINT c_type, char **data)
{
	FetchBlock	b;
	ssize_t		n;

	memset(&b, 0, sizeof(b));
	b.conn = conn;
	b.stmt = stmt;
	b.whole_size = 1024;
	b.whole = palloc(b.whole_size);
	n = read_whole(&b, col - 1, c_type);
	*data = b.whole;
	return n;
}

/*
 * Append column col (from 1) of the current row of a single-row cursor to
 * buf as UTF-8 text.  Returns false for SQL NULL.
 */
bool
FetchGetText(OdbcConn *conn, SQLHSTMT stmt, int col, StringInfo buf)
{
	char	   *data;
	ssize_t		n = read_single(conn, stmt, col, SQL_C_WCHAR, &data);

	if (n >= 0)
		OdbcAppendUtf16(buf, (const SQLWCHAR *) data, n / sizeof(SQLWCHAR), false);
	pfree(data);
	return n >= 0;
}

/*
 * Append column col (from 1) of the current row of a single-row cursor,
 * which the statement selected as BLOB, to buf as the UTF-8 text it holds:
 * SQLite's values read past its driver's UTF-16 conversion, which alters
 * them (deparse.c, DeparseTextAsBytes()).  Text that is not UTF-8 or holds
 * a NUL is an error naming the column (if given), never the value.
 * Returns false for SQL NULL.
 */
static bool
get_utf8(OdbcConn *conn, SQLHSTMT stmt, int col, const char *table, const char *column,
		 StringInfo buf)
{
	char	   *data;
	ssize_t		n = read_single(conn, stmt, col, SQL_C_BINARY, &data);

	if (n >= 0)
	{
		if (n > (ssize_t) INT_MAX || memchr(data, '\0', n) != NULL ||
			!pg_verify_mbstr(PG_UTF8, data, (int) n, true))
			ereport(ERROR,
					(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
					 column ?
					 errmsg("warehouse column \"%s\" of table \"%s\" holds a cursor value that is not valid UTF-8",
							column, table) :
					 errmsg("warehouse returned a cursor value that is not valid UTF-8"),
					 errdetail("A cursor value must be UTF-8 text without a NUL byte.")));
		appendBinaryStringInfo(buf, data, (int) n);
	}
	pfree(data);
	return n >= 0;
}

/* Are the n bytes at p all ASCII digits? */
static bool
all_digits(const char *p, int n)
{
	for (int i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

/*
 * Whether text is a timestamp in the one form a warehouse that compares
 * timestamps as text (SQLite) orders as treble_sync's bounds are ordered:
 * YYYY-MM-DD, or YYYY-MM-DD HH:MM:SS with up to six fraction digits.  Any
 * other form (a 'T' between date and time, a zone, a number) sorts apart
 * from the bounds, so a pull would skip rows or a cut stop moving.
 */
bool
FetchTimestampTextComparable(const char *text)
{
	size_t		len = strlen(text);

	if (len < 10 || !all_digits(text, 4) || text[4] != '-' || !all_digits(text + 5, 2) ||
		text[7] != '-' || !all_digits(text + 8, 2))
		return false;
	if (len == 10)
		return true;
	if (len < 19 || text[10] != ' ' || !all_digits(text + 11, 2) || text[13] != ':' ||
		!all_digits(text + 14, 2) || text[16] != ':' || !all_digits(text + 17, 2))
		return false;
	if (len == 19)
		return true;
	return text[19] == '.' && len >= 21 && len <= 26 && all_digits(text + 20, len - 20);
}

/* Whether text is an integer as SQLite stores and orders one. */
static bool
integer_text_comparable(const char *text)
{
	const char *p = text + (text[0] == '-');

	return *p != '\0' && strlen(p) <= 19 && all_digits(p, strlen(p));
}

/*
 * Error unless a cursor (or event) value the warehouse returned as text
 * is in a form its comparisons order as treble_sync's bounds: with
 * integer, an integer, else a timestamp.  The error names the table and
 * the column, not the value: it goes to the run log and the server log,
 * which roles read that may not read the copy.
 */
void
FetchCheckComparable(const char *text, bool integer, const char *table, const char *column)
{
	if (integer ? integer_text_comparable(text) : FetchTimestampTextComparable(text))
		return;
	if (integer)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("warehouse column \"%s\" of table \"%s\" holds an integer in a form that cannot be compared",
						column, table),
				 errdetail("SQLite sorts text after every number: the cut would stop there."),
				 errhint("Store the column's values as integers.")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_DATETIME_FORMAT),
			 errmsg("warehouse column \"%s\" of table \"%s\" holds a timestamp in a form that cannot be compared",
					column, table),
			 errdetail("SQLite compares timestamps as text, and a value in another form than treble_sync's bounds sorts apart from them: rows would be skipped or the watermark would stop."),
			 errhint("Store timestamps as text in the form 'YYYY-MM-DD HH:MM:SS', with up to six fraction digits, as datetime() writes them.")));
}

/*
 * A timestamp (or date) the warehouse gave as text, read as timestamp
 * input reads it: ISO text under any DateStyle, a PostgreSQL warehouse's
 * BC years too.  The text's own zone, if any, is dropped: it is the
 * warehouse session's, the one zone-less timestamps are read in.  Not a
 * date and time (a MariaDB zero date, an SQLite value in another form), or
 * not finite: an error (which names the column, never the value), never a
 * value made up.  When the caller names the
 * column, a warehouse that compares timestamps as text (SQLite) must hold
 * them in the one form its comparisons order as the bounds.
 */
static Timestamp
parse_timestamp_text(OdbcConn *conn, const char *text, const char *table, const char *column)
{
	char		workbuf[MAXDATELEN + MAXDATEFIELDS];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	int			tz;
	struct pg_tm tm;
	fsec_t		fsec;
	Timestamp	result;

	if (column && OdbcTimestampsAsText(conn))
		FetchCheckComparable(text, false, table, column);
	if (ParseDateTime(text, workbuf, sizeof(workbuf), field, ftype, MAXDATEFIELDS, &nf) == 0 &&
		ts_DecodeDateTime(field, ftype, nf, &dtype, &tm, &fsec, &tz) == 0 &&
		(dtype == DTK_LATE || dtype == DTK_EARLY))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("warehouse returned a timestamp that is not finite"),
				 column ? errdetail("Read from column \"%s\" of warehouse table \"%s\".",
									column, table) : 0));
	if (ParseDateTime(text, workbuf, sizeof(workbuf), field, ftype, MAXDATEFIELDS, &nf) != 0 ||
		ts_DecodeDateTime(field, ftype, nf, &dtype, &tm, &fsec, &tz) != 0 ||
		dtype != DTK_DATE || tm2timestamp(&tm, fsec, NULL, &result) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_DATETIME_FORMAT),
				 errmsg("warehouse returned a timestamp that is not a date and time"),
				 column ? errdetail("Read from column \"%s\" of warehouse table \"%s\".",
									column, table) : 0,
				 OdbcTimestampsAsText(conn) ?
				 errhint("SQLite keeps timestamps as text: store them as 'YYYY-MM-DD HH:MM:SS', with up to six fraction digits.") : 0));
	Assert(!TIMESTAMP_NOT_FINITE(result));
	return result;
}

/*
 * Read a date (verify()'s days) as text, as date input reads it: ISO text
 * under any DateStyle, a PostgreSQL warehouse's BC dates and infinities
 * (selected as text: deparse.c), SQLite's timestamps (their date).  Not a
 * date (a MariaDB zero date): an error that does not quote the value.
 * Returns false for SQL NULL.
 */
bool
FetchGetDate(OdbcConn *conn, SQLHSTMT stmt, int col, DateADT *result)
{
	StringInfoData text;
	char		workbuf[MAXDATELEN + MAXDATEFIELDS];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype = DTK_DATE;
	int			tz;
	struct pg_tm tm;
	fsec_t		fsec;
	bool		ok;

	initStringInfo(&text);
	if (!FetchGetText(conn, stmt, col, &text))
	{
		pfree(text.data);
		return false;
	}
	ok = ParseDateTime(text.data, workbuf, sizeof(workbuf), field, ftype, MAXDATEFIELDS,
					   &nf) == 0 &&
		ts_DecodeDateTime(field, ftype, nf, &dtype, &tm, &fsec, &tz) == 0;
	if (ok && dtype == DTK_LATE)
		DATE_NOEND(*result);
	else if (ok && dtype == DTK_EARLY)
		DATE_NOBEGIN(*result);
	else if (ok && dtype == DTK_DATE && IS_VALID_JULIAN(tm.tm_year, tm.tm_mon, tm.tm_mday))
	{
		*result = date2j(tm.tm_year, tm.tm_mon, tm.tm_mday) - POSTGRES_EPOCH_JDATE;
		ok = IS_VALID_DATE(*result);
	}
	else
		ok = false;
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_DATETIME_FORMAT),
				 errmsg("warehouse returned a day that is not a date")));
	pfree(text.data);
	return true;
}

/*
 * The text of a named warehouse column (a cut, a cursor or event
 * aggregate), palloc'd, or NULL for SQL NULL.  Where the warehouse
 * compares timestamps as text (SQLite) the statement selected it as BLOB
 * (deparse.c): its text as stored, checked as UTF-8 (get_utf8()).
 */
static char *
get_text_of(OdbcConn *conn, SQLHSTMT stmt, int col, const char *table, const char *column)
{
	StringInfoData text;

	initStringInfo(&text);
	if (OdbcTimestampsAsText(conn) ? get_utf8(conn, stmt, col, table, column, &text) :
		FetchGetText(conn, stmt, col, &text))
		return text.data;
	pfree(text.data);
	return NULL;
}

/*
 * Read a timestamp value of a named warehouse column (a cut, a cursor or
 * event aggregate) as text, parsed strictly (parse_timestamp_text()); a
 * PostgreSQL warehouse's is selected as text (deparse.c), so that psqlODBC
 * does not rewrite it.  Fractions finer than a microsecond are cut, never
 * rounded up: a cut must not move past a row it has not seen (a ClickHouse
 * DateTime64(7..9) arrives cut to the microsecond already, as its values
 * and filters take it: deparse.c's clickhouse_micro()).
 */
bool
FetchGetTimestampOf(OdbcConn *conn, SQLHSTMT stmt, int col, const char *table,
					const char *column, Timestamp *result)
{
	char	   *text = get_text_of(conn, stmt, col, table, column);
	char	   *point;

	if (text == NULL)
		return false;
	point = strchr(text, '.');
	if (point && !OdbcTimestampsAsText(conn))
	{
		char	   *end = point + 1;

		while (*end >= '0' && *end <= '9')
			end++;
		if (end - point > 7)	/* more than six digits: drop the rest */
			memmove(point + 7, end, strlen(end) + 1);
	}
	*result = parse_timestamp_text(conn, text, table, column);
	pfree(text);
	return true;
}

/* Read an integer column.  Returns false for SQL NULL. */
bool
FetchGetInt(OdbcConn *conn, SQLHSTMT stmt, int col, int64 *result)
{
	SQLBIGINT	v;
	SQLLEN		ind = 0;
	SQLRETURN	rc;

	rc = SQLGetData(stmt, col, SQL_C_SBIGINT, &v, sizeof(v), &ind);
	OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "reading an integer from the warehouse");
	if (ind == SQL_NULL_DATA)
		return false;
	*result = v;
	return true;
}

/*
 * Read an integer cursor value of a named warehouse column.  A warehouse
 * that keeps any value in any column (SQLite) is read as text and checked:
 * text sorts after every number there, so a cut would stop at it.
 * Returns false for SQL NULL.
 */
bool
FetchGetIntOf(OdbcConn *conn, SQLHSTMT stmt, int col, const char *table,
			  const char *column, int64 *result)
{
	char	   *text;

	if (!OdbcTimestampsAsText(conn))
		return FetchGetInt(conn, stmt, col, result);
	text = get_text_of(conn, stmt, col, table, column);
	if (text == NULL)
		return false;
	FetchCheckComparable(text, true, table, column);
	*result = pg_strtoint64(text);
	pfree(text);
	return true;
}
