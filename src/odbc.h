/*-------------------------------------------------------------------------
 *
 * odbc.h
 *	  The ODBC layer: connecting to a warehouse, statements and their
 *	  parameters, the driver's errors, cancelling a remote call (odbc.c).
 *
 * The header that brings in the ODBC API (<sql.h>, <sqlext.h>); files
 * that include it, or fetch.h, deparse.h or stage.h, which need its types,
 * talk to the warehouse.  option.c includes the driver manager's headers
 * itself, only to look drivers up in odbcinst.ini.  Which options make
 * the connection string is option.c's business, not this one's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_ODBC_H
#define TREBLE_SYNC_ODBC_H

#include "postgres.h"

#include "option.h"
#include "treble_sync.h"
#include "common/int.h"
#include "lib/stringinfo.h"
#include "foreign/foreign.h"
#include <sql.h>
#include <sqlext.h>

/* A parameter bound to a remote statement. */
typedef enum OdbcParamKind
{
	ODBC_PARAM_TIMESTAMP,		/* value is a Timestamp */
	ODBC_PARAM_INT64,
	ODBC_PARAM_TEXT				/* text is UTF-8, sent as UTF-16 */
} OdbcParamKind;

typedef struct OdbcParam
{
	OdbcParamKind kind;
	int64		value;
	const char *text;
} OdbcParam;

/*
 * The last microsecond before ts: remote statements write "col >= ts" as
 * "col > TimestampJustBefore(ts)" (see pull_rows in cycle.c for why).
 * There is none before the smallest int64 (-infinity's representation):
 * an error, never a bound that wrapped to the far future.
 */
static inline Timestamp
TimestampJustBefore(Timestamp ts)
{
	Timestamp	before;

	if (unlikely(pg_sub_s64_overflow(ts, 1, &before)))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range"),
				 errdetail("A bound of a remote query has no microsecond before it.")));
	return before;
}

extern bool OdbcClickHouseTlsSetUp(void);
extern bool OdbcClickHouseTlsFits(ForeignServer *server);
extern OdbcConn *OdbcConnect(ForeignServer *server, UserMapping *mapping,
							 int login_timeout, int query_timeout, bool streaming);
extern void OdbcDisconnect(OdbcConn *conn);
extern void OdbcSetTimeouts(OdbcConn *conn, ForeignServer *server, int login_timeout,
							int query_timeout);
extern char *OdbcQuoteIdent(OdbcConn *conn, const char *ident);
extern char *OdbcQualifiedName(OdbcConn *conn, const char *schema, const char *table);
extern char *OdbcEscapePattern(OdbcConn *conn, const char *value);
extern SQLHSTMT OdbcAllocStatement(OdbcConn *conn);
extern void OdbcFreeStatement(OdbcConn *conn, SQLHSTMT stmt);
extern void OdbcExecute(OdbcConn *conn, SQLHSTMT stmt, const char *sql,
						int nparams, OdbcParam *params);
extern void OdbcCheck(OdbcConn *conn, SQLRETURN rc, SQLSMALLINT htype,
					  SQLHANDLE handle, const char *operation);
extern void OdbcAppendUtf16(StringInfo buf, const SQLWCHAR *w, size_t n,
							bool copy_escape);
extern SQLWCHAR *OdbcUtf8ToWide(const char *s, SQLINTEGER *nchars);
extern const char *OdbcServerTimezone(ForeignServer *server);
extern UserMapping *OdbcLookupUserMapping(Oid userid, ForeignServer *server);
extern bool OdbcSupportsBlockGetData(OdbcConn *conn);
extern bool OdbcDriverIs(OdbcConn *conn, DriverFamily family);
extern bool OdbcBeginSnapshot(OdbcConn *conn);
extern bool OdbcDriverIsMysql(OdbcConn *conn);
extern void OdbcClickHouseEscape(StringInfo buf, const char *s);
extern bool OdbcTextAsBytes(OdbcConn *conn);
extern bool OdbcCharIsUtf8(OdbcConn *conn);
extern bool OdbcDriverStreams(OdbcConn *conn);
extern bool OdbcDeclaredSizesHold(OdbcConn *conn);
extern const char *OdbcDriverDescription(OdbcConn *conn);
extern void OdbcEnableCancel(void);
extern void OdbcCancelRemoteCall(void);
extern void OdbcBeginRemoteCall(OdbcConn *conn, SQLHSTMT stmt);
extern void OdbcEndRemoteCall(void);
extern bool OdbcTimestampsAsText(OdbcConn *conn);

#endif							/* TREBLE_SYNC_ODBC_H */
