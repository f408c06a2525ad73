/*-------------------------------------------------------------------------
 *
 * fetch.h
 *	  Reading a remote result: rows in blocks, and single values as text,
 *	  timestamps or integers (fetch.c).
 *
 * Values are checked to be comparable the way the warehouse compares
 * them before a cursor is trusted with one.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_FETCH_H
#define TREBLE_SYNC_FETCH_H

#include "postgres.h"

#include "utils/date.h"

#include "odbc.h"

typedef struct FetchBlock FetchBlock;

/* How FetchValue hands out a column's values. */
typedef enum FetchKind
{
	FETCH_TEXT,					/* UTF-16 code units */
	FETCH_BINARY,				/* bytes */
	FETCH_INT64,				/* an SQLBIGINT */
	FETCH_UTF8					/* text as the bytes the warehouse stores,
								 * not yet checked to be UTF-8 */
} FetchKind;

extern FetchBlock *FetchBegin(OdbcConn *conn, SQLHSTMT stmt, int ncols,
							  const bool *is_binary, const bool *text_as_bytes);
extern FetchKind FetchColumnKind(FetchBlock *block, int col);
extern int	FetchNextBlock(FetchBlock *block);
extern bool FetchValue(FetchBlock *block, int row, int col, const char **data,
					   size_t *len);
extern bool FetchNextRow(OdbcConn *conn, SQLHSTMT stmt);
extern int	FetchResultColumns(OdbcConn *conn, SQLHSTMT stmt);
extern bool FetchGetText(OdbcConn *conn, SQLHSTMT stmt, int col, StringInfo buf);
extern bool FetchGetDate(OdbcConn *conn, SQLHSTMT stmt, int col, DateADT *result);
extern bool FetchGetInt(OdbcConn *conn, SQLHSTMT stmt, int col, int64 *result);
extern bool FetchGetTimestampOf(OdbcConn *conn, SQLHSTMT stmt, int col, const char *table,
								const char *column, Timestamp *result);
extern bool FetchGetIntOf(OdbcConn *conn, SQLHSTMT stmt, int col, const char *table,
						  const char *column, int64 *result);
extern bool FetchTimestampTextComparable(const char *text);
extern void FetchCheckComparable(const char *text, bool integer, const char *table,
								 const char *column);

#endif							/* TREBLE_SYNC_FETCH_H */
