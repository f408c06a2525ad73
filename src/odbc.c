/*-------------------------------------------------------------------------
 *
 * odbc.c
 *	  Everything that talks to the warehouse through unixODBC: connecting
 *	  with the server's options and the caller's user mapping, statements
 *	  with bound parameters, fetching values, and turning ODBC diagnostics
 *	  into PostgreSQL errors.
 *
 * ODBC handles live outside PostgreSQL's memory contexts.  A connection is
 * tied to the memory context it was opened in by a reset callback, so an
 * error anywhere (which resets the transaction's contexts) also closes the
 * connection: no handle outlives the work it was opened for.
 *
 * A cycle's worker can stop a remote call that is waiting on the warehouse:
 * see OdbcEnableCancel().
 *
 * All text crosses the driver manager as UTF-16 (the W entry points and
 * SQL_C_WCHAR), whatever the locale of the server process, and is converted
 * to and from UTF-8 here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odbc.h"
#include "option.h"
#include "redact.h"

#include <sqlucode.h>

struct OdbcConn
{
	SQLHENV		env;
	SQLHDBC		dbc;
	bool		connected;
	char	   *server_name;
	const char *sqlite_file;	/* an SQLite server's Database=, or NULL */
	char	   *password;		/* scrubbed from every message we raise */
	char		quote[8];		/* SQL_IDENTIFIER_QUOTE_CHAR; "" if none */
	char		escape[8];		/* SQL_SEARCH_PATTERN_ESCAPE; "" if none */
	char		driver_name[128];
	char		driver_version[32];	/* SQL_DRIVER_VER, "03.01.0015" */
	DriverFamily family;		/* DRIVER_UNKNOWN: a driver not known here */
	SQLUINTEGER getdata_ext;	/* SQL_GETDATA_EXTENSIONS */
	int			login_timeout;	/* seconds; 0: the driver's default */
	int			query_timeout;	/* seconds; 0: none */
	MemoryContextCallback on_reset;
};

/* "YYYY-MM-DD HH:MM:SS.ffffff" */
#define ODBC_TIMESTAMP_TEXT_LEN 26

/* Seconds to wait for a connection unless the server says otherwise. */
#define ODBC_DEFAULT_LOGIN_TIMEOUT 30

static void odbc_release(void *arg);
static char *odbc_get_info_string(OdbcConn *conn, SQLUSMALLINT info);
static void odbc_driver_connect(OdbcConn *conn, const char *connstr);
pg_noreturn static void odbc_report_error(OdbcConn *conn, SQLRETURN rc, SQLSMALLINT htype,
										 SQLHANDLE handle, const char *operation,
										 const char *sql);

/*
 * Append UTF-16 text to a UTF-8 StringInfo.  With copy_escape, the
 * characters COPY's text format gives a meaning to (backslash, newline,
 * carriage return, tab) are escaped, so a value can go straight into a
 * COPY line.  Runs once per pulled value: ASCII takes the short path.
 */
void
OdbcAppendUtf16(StringInfo buf, const SQLWCHAR *w, size_t n, bool copy_escape)
{
	char	   *out;

	/* at most 3 bytes per code unit: 2 for an escape, 3 in the BMP, 4 per pair */
	enlargeStringInfo(buf, (int) (n * 3));
	out = buf->data + buf->len;

	for (size_t i = 0; i < n; i++)
	{
		uint32		c = w[i];

		if (c < 0x80)
		{
			if (copy_escape && (c == '\\' || c == '\n' || c == '\r' || c == '\t'))
			{
				*out++ = '\\';
				*out++ = (c == '\\') ? '\\' : (c == '\n') ? 'n' : (c == '\r') ? 'r' : 't';
			}
			else
				*out++ = (char) c;
			continue;
		}
		if (c >= 0xD800 && c <= 0xDBFF)
		{
			if (i + 1 >= n || w[i + 1] < 0xDC00 || w[i + 1] > 0xDFFF)
				ereport(ERROR,
						(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
						 errmsg("invalid UTF-16 text received from the warehouse"),
						 errdetail("A high surrogate is not followed by a low surrogate.")));
			c = 0x10000 + ((c - 0xD800) << 10) + (w[++i] - 0xDC00);
		}
		else if (c >= 0xDC00 && c <= 0xDFFF)
			ereport(ERROR,
					(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
					 errmsg("invalid UTF-16 text received from the warehouse"),
					 errdetail("A low surrogate appears without a high surrogate.")));
		unicode_to_utf8((pg_wchar) c, (unsigned char *) out);
		out += pg_utf_mblen((unsigned char *) out);
	}
	buf->len = out - buf->data;
	buf->data[buf->len] = '\0';
}

/*
 * Convert driver UTF-16 to a palloc'd UTF-8 string.  nchars < 0 means
 * NUL-terminated.
 */
static char *
OdbcWideToUtf8(const SQLWCHAR *w, ssize_t nchars)
{
	StringInfoData buf;

	if (nchars < 0)
		for (nchars = 0; w[nchars] != 0; nchars++)
			;
	initStringInfo(&buf);
	OdbcAppendUtf16(&buf, w, nchars, false);
	return buf.data;
}

/*
 * Convert a UTF-8 string (statement text, identifiers, connection string)
 * to NUL-terminated UTF-16 for the W entry points.
 */
SQLWCHAR *
OdbcUtf8ToWide(const char *s, SQLINTEGER *nchars)
{
	size_t		len = strlen(s);
	SQLWCHAR   *w = palloc((len * 2 + 1) * sizeof(SQLWCHAR));
	const unsigned char *p = (const unsigned char *) s;
	const unsigned char *end = p + len;
	SQLINTEGER	n = 0;

	while (p < end)
	{
		int			l = pg_utf_mblen(p);
		pg_wchar	c;

		if (p + l > end || !pg_utf8_islegal(p, l))
			ereport(ERROR,
					(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
					 errmsg("invalid UTF-8 text in a statement for the warehouse")));
		c = utf8_to_unicode(p);
		if (c >= 0x10000)
		{
			c -= 0x10000;
			w[n++] = (SQLWCHAR) (0xD800 + (c >> 10));
			w[n++] = (SQLWCHAR) (0xDC00 + (c & 0x3FF));
		}
		else
			w[n++] = (SQLWCHAR) c;
		p += l;
	}
	w[n] = 0;
	if (nchars)
		*nchars = n;
	return w;
}

/* The driver's SQLSTATE as an error code, if it is one (five of [0-9A-Z]). */
static bool
odbc_sqlstate_as_errcode(const char *state, int *code)
{
	for (int i = 0; i < 5; i++)
		if (!((state[i] >= '0' && state[i] <= '9') || (state[i] >= 'A' && state[i] <= 'Z')))
			return false;
	if (state[5] != '\0')
		return false;
	*code = MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4]);
	return true;
}

/*
 * Map an ODBC SQLSTATE to the closest PostgreSQL error code, so that the
 * caller, a scheduler and the cycle runner's retry decision
 * (AttemptErrorIsTransient(), which reads nothing else) can tell a lost
 * connection from a bad statement.  The SQLSTATEs PostgreSQL's own clients
 * know are kept as the driver gave them: class 08 (the connection refused
 * or lost: ODBC's 08S01 too), class 28 (a refused login), class 53
 * (resources), 40001, 40P01, and 57P01-57P03 (the warehouse shut down,
 * crashed, or is starting), which psqlODBC passes on from the server.  A
 * driver's timeout is a cancel, 57014.
 */
static int
odbc_sqlstate_to_errcode(const char *state)
{
	int			code;

	if ((strncmp(state, "08", 2) == 0 || strncmp(state, "28", 2) == 0 ||
		 strncmp(state, "53", 2) == 0 || strcmp(state, "40001") == 0 ||
		 strcmp(state, "40P01") == 0 || strcmp(state, "57P01") == 0 ||
		 strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0) &&
		odbc_sqlstate_as_errcode(state, &code))
		return code;
	if (strcmp(state, "42S02") == 0 || strcmp(state, "42P01") == 0)
		return ERRCODE_FDW_TABLE_NOT_FOUND;
	if (strcmp(state, "42S22") == 0 || strcmp(state, "42703") == 0)
		return ERRCODE_FDW_COLUMN_NAME_NOT_FOUND;
	if (strcmp(state, "HYT00") == 0 || strcmp(state, "HYT01") == 0)
		return ERRCODE_QUERY_CANCELED;
	if (strcmp(state, "HY008") == 0 || strcmp(state, "57014") == 0 ||
		strcmp(state, "HY018") == 0)
		return ERRCODE_QUERY_CANCELED;
	return ERRCODE_FDW_ERROR;
}

/* Whether a driver's message (or NULL) holds one of n strings. */
static bool
message_has_any(const char *msg, const char *const *strings, size_t n)
{
	if (msg == NULL)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strstr(msg, strings[i]) != NULL)
			return true;
	return false;
}

/*
 * ClickHouse's driver reports every failure as SQLSTATE HY000, a refused or
 * lost connection too, and it connects only when the first statement runs
 * (SQLDriverConnect checks nothing).  So for it, a network failure is told
 * by the message of its HTTP client (Poco): these are retried like class
 * 08, and reported as a connection failure.
 */
static bool
clickhouse_network_error(const char *msg)
{
	static const char *const network[] = {
		"Connection refused", "Connection reset", "Connection timed out",
		"Timeout", "No message received", "Net Exception", "Host not found",
		"Network is unreachable", "No route to host", "Broken pipe",
		"I/O error",
	};

	return message_has_any(msg, network, lengthof(network));
}

/*
 * ClickHouse reports a value it cannot take as HY000 too, with the name of
 * its error code in parentheses: "Cannot parse string 'abc' as Int32: ...
 * (CANNOT_PARSE_TEXT)".  These are the codes of such errors, which quote
 * the value.
 */
static bool
clickhouse_value_error(const char *msg)
{
	static const char *const value[] = {
		"(CANNOT_PARSE_", "(CANNOT_CONVERT_TYPE)", "(CANNOT_READ_ARRAY_FROM_TEXT)",
		"(VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE)", "(ARGUMENT_OUT_OF_BOUND)",
		"(INCORRECT_DATA)", "(DECIMAL_OVERFLOW)", "(TOO_LARGE_STRING_SIZE)",
		"(CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN)", "(BAD_ARGUMENTS)",
	};

	return message_has_any(msg, value, lengthof(value));
}

/*
 * Did the warehouse refuse the credentials?  SQLSTATE class 28 says so; but
 * psqlODBC reports libpq's refusal as 08001 ("FATAL:  password
 * authentication failed for user ..."), and ClickHouse's driver every
 * failure as HY000, so for those the message decides.  Retrying cannot
 * help (and would count against the warehouse's lockout policy), so such
 * a failure gets a class-28 SQLSTATE (odbc_authentication_errcode), which
 * is never retried.
 */
static bool
odbc_error_is_authentication(const char *state, const char *msg)
{
	static const char *const refused[] = {
		"authentication failed",	/* libpq (password, SCRAM, md5), ClickHouse */
		"Authentication failed",
		"no password supplied",	/* libpq: the warehouse asked for one */
		"Access denied for user",	/* MariaDB, MySQL (they send 28000) */
		"no pg_hba.conf entry",
	};

	if (strncmp(state, "28", 2) == 0)
		return true;
	if (msg == NULL ||
		(strncmp(state, "08", 2) != 0 && strcmp(state, "HY000") != 0))
		return false;
	for (size_t i = 0; i < lengthof(refused); i++)
		if (strstr(msg, refused[i]) != NULL)
			return true;
	return false;
}

/*
 * The SQLSTATE of a refused login: the driver's own if it is of class 28
 * (MariaDB's 28000), else 28P01 (invalid_password) when the message speaks
 * of a password (libpq's "password authentication failed", ClickHouse's
 * "password is incorrect"), else 28000 (invalid_authorization_specification:
 * "no pg_hba.conf entry").  Never the HV00N of a connection that cannot be
 * made, nor class 08: the cycle runner retries those, and must not this.
 */
static int
odbc_authentication_errcode(const char *state, const char *msg)
{
	int			code;

	if (strncmp(state, "28", 2) == 0 && odbc_sqlstate_as_errcode(state, &code))
		return code;
	if (msg && (strstr(msg, "password") != NULL || strstr(msg, "Password") != NULL))
		return ERRCODE_INVALID_PASSWORD;
	return ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION;
}

/*
 * Did the connection fail on TLS: a certificate that does not verify
 * (its chain, its host name, its dates), or one side requiring TLS that
 * the other does not speak?  psqlODBC reports these as 08001, like a
 * refused connection, and the other drivers as HY000; only the message
 * tells.  No retry makes a certificate verify, and a connection that asked
 * for verification must not go on without it: such a failure is HV00N,
 * which is never retried.  Only what names verification or the TLS requirement is
 * listed: a TLS connection that breaks (libpq's "SSL SYSCALL error: EOF
 * detected" when the warehouse goes down) stays a lost connection.
 */
static bool
odbc_error_is_tls(const char *msg)
{
	static const char *const tls[] = {
		"certificate verify failed",	/* OpenSSL, through libpq and Poco */
		"does not match host name",	/* libpq: server certificate for "x" ... */
		"server does not support SSL",	/* libpq, sslmode require or stronger */
		"Validation of SSL server certificate failed",	/* MariaDB Connector/C */
		"self-signed certificate", "self signed certificate",	/* OpenSSL */
		"unable to get local issuer certificate",
		"certificate has expired", "certificate is not yet valid",
		"Hostname mismatch", "hostname mismatch",
		"Certificate validation error", /* Poco: ClickHouse's driver */
		"The plain HTTP request was sent to HTTPS port",	/* nginx */
		"wrong version number", /* OpenSSL: TLS to a plain-text port */
		"insecure transport are prohibited",	/* require_secure_transport */
		"tlsv1 alert unknown ca", "sslv3 alert bad certificate",
	};

	return message_has_any(msg, tls, lengthof(tls));
}

/*
 * Raise an ERROR for a failed ODBC call, shaped like postgres_fdw's
 * pgfdw_report_error(): the driver's own message is the primary message
 * (the remote text, so errmsg_internal), with a PostgreSQL SQLSTATE mapped
 * from the driver's; the driver's SQLSTATE and further diagnostic records
 * go to DETAIL, and what we were doing (and the remote SQL, if any) to
 * CONTEXT.  Every piece of the
 * driver's text is scrubbed of the password, one record at a time (a cut
 * password ends its own message) and then as a whole.
 *
 * "operation" is a phrase for CONTEXT, such as "fetching rows from the
 * warehouse"; sql is the remote statement, or NULL.
 */
static void
odbc_report_error(OdbcConn *conn, SQLRETURN rc, SQLSMALLINT htype, SQLHANDLE handle,
				  const char *operation, const char *sql)
{
	const char *password = conn ? conn->password : NULL;
	char	   *primary = NULL;
	StringInfoData detail;
	char		first_state[6] = "HY000";
	int			code;
	bool		authentication;
	bool		tls;
	bool		about_a_value = false;

	/* a call stopped by OdbcCancelRemoteCall(): report the cancel itself */
	CHECK_FOR_INTERRUPTS();

	initStringInfo(&detail);
	if (rc != SQL_INVALID_HANDLE)
	{
		for (SQLSMALLINT i = 1; i <= 10; i++)
		{
			SQLWCHAR	state[6];
			SQLWCHAR	msg[2048];
			SQLINTEGER	native;
			SQLSMALLINT msglen;
			char	   *state8;
			char	   *msg8;

			if (!SQL_SUCCEEDED(SQLGetDiagRecW(htype, handle, i, state, &native,
											  msg, lengthof(msg), &msglen)))
				break;
			state8 = OdbcWideToUtf8(state, 5);
			msg8 = OptionScrubSecret(OdbcWideToUtf8(msg, Min(msglen, (SQLSMALLINT) (lengthof(msg) - 1))),
									 password);

			/*
			 * A data exception (class 22, or ClickHouse's kind of it) is
			 * about a value, which the warehouse may quote: a view's failing
			 * cast, say.  The value is the warehouse's data, and errors are
			 * logged: what the messages quote is taken out.
			 */
			if (i == 1)
				about_a_value = strncmp(state8, "22", 2) == 0 ||
					(conn && OdbcDriverIs(conn, DRIVER_CLICKHOUSE) && clickhouse_value_error(msg8));
			if (about_a_value)
				msg8 = RedactQuoted(msg8);
			if (i == 1)
			{
				strlcpy(first_state, state8, sizeof(first_state));
				primary = pchomp(msg8);
				appendStringInfo(&detail, "The driver's SQLSTATE is %s.", state8);
				continue;
			}
			appendStringInfo(&detail, "\n%s (SQLSTATE %s)", msg8, state8);
		}
	}

	/*
	 * The SQLSTATE says what failed, and so whether the cycle runner tries
	 * again (AttemptErrorIsTransient()): a TLS failure is HV00N and a
	 * refused login class 28 (neither retried), whatever the driver said;
	 * ClickHouse's network failure, HY000 from its driver
	 * (clickhouse_network_error), is 08001, a connection failure, while
	 * DETAIL still gives the driver's own SQLSTATE.
	 */
	authentication = odbc_error_is_authentication(first_state, primary);
	tls = odbc_error_is_tls(primary) || odbc_error_is_tls(detail.data);
	if (tls)
		code = ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION;
	else if (authentication)
		code = odbc_authentication_errcode(first_state, primary);
	else if (conn && OdbcDriverIs(conn, DRIVER_CLICKHOUSE) && strcmp(first_state, "HY000") == 0 &&
			 clickhouse_network_error(primary))
		code = ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION;
	else
		code = odbc_sqlstate_to_errcode(first_state);
	ereport(ERROR,
			(errcode(code),
			 primary && primary[0] != '\0' ?
			 errmsg_internal("%s", OptionScrubSecret(primary, password)) :
			 rc == SQL_INVALID_HANDLE ?
			 errmsg("the ODBC driver manager reported an invalid handle") :
			 errmsg("the ODBC driver returned no diagnostics"),
			 detail.len > 0 ?
			 errdetail_internal("%s", OptionScrubSecret(detail.data, password)) : 0,
			 tls ?
			 errhint("This is a TLS or certificate problem, and it is not retried: the warehouse's certificate did not verify against the CA the connection names (or its host name is not the one connected to), or one side requires TLS and the other does not use it. See the TLS keys of each driver in docs/warehouses.md.") :
			 authentication ?
			 errhint("The warehouse refused the credentials of the user mapping; this is not retried. Check the mapping's user and password (ALTER USER MAPPING ... OPTIONS (SET password '...')); a warehouse that accepts only TLS may refuse a plain-text login the same way.") : 0,
			 errcontext("%s", operation),
			 sql ? errcontext("remote SQL command: %s", sql) : 0));
}

/*
 * Raise an ERROR carrying the driver's diagnostics if rc says the call
 * failed; operation says what was being done, for CONTEXT.
 */
void
OdbcCheck(OdbcConn *conn, SQLRETURN rc, SQLSMALLINT htype, SQLHANDLE handle,
		  const char *operation)
{
	if (SQL_SUCCEEDED(rc) || rc == SQL_NO_DATA)
		return;
	odbc_report_error(conn, rc, htype, handle, operation, NULL);
}

/*
 * The time zone in which the warehouse's zone-less timestamps are read
 * (server option "timezone", default UTC).
 */
const char *
OdbcServerTimezone(ForeignServer *server)
{
	const char *tz = FdwServerStringOption(server, "timezone");

	return tz ? tz : "UTC";
}

/*
 * Find the caller's user mapping (or the PUBLIC one) for a server, with an
 * error that says how to create it: credentials live only there.
 */
UserMapping *
OdbcLookupUserMapping(Oid userid, ForeignServer *server)
{
	if (!SearchSysCacheExists2(USERMAPPINGUSERSERVER,
							   ObjectIdGetDatum(userid),
							   ObjectIdGetDatum(server->serverid)) &&
		!SearchSysCacheExists2(USERMAPPINGUSERSERVER,
							   ObjectIdGetDatum(InvalidOid),
							   ObjectIdGetDatum(server->serverid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("user mapping not found for role \"%s\" on server \"%s\"",
						GetUserNameFromId(userid, false), server->servername),
				 errhint("Create one with CREATE USER MAPPING FOR %s SERVER %s OPTIONS (user '...', password '...').",
						 quote_identifier(GetUserNameFromId(userid, false)),
						 quote_identifier(server->servername))));
	return GetUserMapping(userid, server->serverid);
}

/*
 * After the SQLite driver failed to connect: if its database file is not
 * there (or cannot be reached), say so with its path, instead of the
 * driver's bare "connect failed".  The path is the server's option, which
 * every role may read.  HV00N, not retried: no retry brings the file back.
 */
static void
sqlite_check_file(OdbcConn *conn)
{
	struct stat st;

	if (stat(conn->sqlite_file, &st) == 0)
		return;
	if (errno == ENOENT || errno == ENOTDIR)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("SQLite database file \"%s\" does not exist", conn->sqlite_file),
				 errhint("The worker opens it as the database server's OS user: give the server's Database= the path of an existing file."),
				 errcontext("connecting to warehouse server \"%s\"", conn->server_name)));
	ereport(ERROR,
			(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
			 errmsg("could not access SQLite database file \"%s\": %m", conn->sqlite_file),
			 errhint("The worker opens it as the database server's OS user, who must be able to read it."),
			 errcontext("connecting to warehouse server \"%s\"", conn->server_name)));
}

/* Allocate the connection handle and connect with a full connection string. */
static void
odbc_driver_connect(OdbcConn *conn, const char *connstr)
{
	SQLRETURN	rc;
	SQLWCHAR   *wconn;

	rc = SQLAllocHandle(SQL_HANDLE_DBC, conn->env, &conn->dbc);
	OdbcCheck(conn, rc, SQL_HANDLE_ENV, conn->env, "allocating an ODBC connection handle");
	if (conn->login_timeout > 0)
	{
		rc = SQLSetConnectAttr(conn->dbc, SQL_ATTR_LOGIN_TIMEOUT,
							   (SQLPOINTER) (intptr_t) conn->login_timeout, 0);
		OdbcCheck(conn, rc, SQL_HANDLE_DBC, conn->dbc, "setting the login timeout");
	}

	wconn = OdbcUtf8ToWide(connstr, NULL);
	rc = SQLDriverConnectW(conn->dbc, NULL, wconn, SQL_NTS, NULL, 0, NULL,
						   SQL_DRIVER_NOPROMPT);
	/* the wide copy holds the password: wipe it at once */
	memset(wconn, 0, (strlen(connstr) * 2 + 1) * sizeof(SQLWCHAR));
	if (!SQL_SUCCEEDED(rc) && rc != SQL_NO_DATA)
	{
		if (conn->sqlite_file != NULL)
			sqlite_check_file(conn);
		odbc_report_error(conn, rc, SQL_HANDLE_DBC, conn->dbc,
						  psprintf("connecting to warehouse server \"%s\"", conn->server_name),
						  NULL);
	}
	conn->connected = true;
}

/*
 * Once connected on a server not owned by a superuser: the driver must be
 * of the family the server was vetted for, and report (SQL_SERVER_NAME) the
 * host that was vetted, the one appended last to its connection string.
 * A driver that read its keys otherwise than option.c does fails here,
 * before any statement runs, instead of copying from wherever it went.
 * Hosts are not secret: every role reads the server's options.
 */
static void
check_endpoint(OdbcConn *conn, ForeignServer *server, DriverFamily vetted)
{
	char	   *host = OptionVettedHost(server);
	char	   *reported;
	size_t		hlen;

	if (conn->family != vetted)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("the driver of server \"%s\" is not the one its options name", server->servername),
				 errdetail("Server \"%s\" is owned by a role that is not a superuser, and was vetted for another driver than \"%s\".",
						   server->servername, conn->driver_name),
				 errhint("Register the driver under its own library in odbcinst.ini.")));

	/*
	 * psqlODBC reports the host it gave libpq, MariaDB Connector/ODBC the
	 * host of its connection, MySQL Connector/ODBC its client library's
	 * "<host> via TCP/IP" (or "Localhost via UNIX socket").
	 */
	reported = odbc_get_info_string(conn, SQL_SERVER_NAME);
	hlen = strlen(host);
	if (pg_strcasecmp(reported, host) != 0 &&
		!(pg_strncasecmp(reported, host, hlen) == 0 &&
		  pg_strcasecmp(reported + hlen, " via TCP/IP") == 0))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("the driver of server \"%s\" connected to host \"%s\", not to the host \"%s\" its options name",
						server->servername, reported, host),
				 errdetail("Server \"%s\" is owned by a role that is not a superuser: it may reach only the host it names, over TCP.",
						   server->servername)));
}

/*
 * An SQLite file stores its text in one encoding, chosen when it was
 * created (PRAGMA encoding).  Text is read as its stored bytes and checked
 * as UTF-8 (OdbcTextAsBytes): a UTF-16 file's bytes are UTF-16 code units,
 * which can form valid UTF-8 of other characters ('中你' stored as 2D 4E
 * 60 4F reads as '-N`O'), and its column names pass through the driver's
 * own conversions.  Such a file is refused when connecting, before any
 * value is read.
 */
static void
sqlite_check_encoding(OdbcConn *conn)
{
	SQLHSTMT	stmt = OdbcAllocStatement(conn);
	SQLWCHAR	buf[32];		/* "UTF-16le" and the like */
	SQLLEN		ind = SQL_NULL_DATA;
	SQLRETURN	rc;
	char	   *encoding = "";

	/* one short value: read here, below fetch.c, which reads results */
	OdbcExecute(conn, stmt, "PRAGMA encoding", 0, NULL);
	rc = SQLFetch(stmt);
	if (rc != SQL_NO_DATA)
	{
		OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "reading the database file's encoding");
		rc = SQLGetData(stmt, 1, SQL_C_WCHAR, buf, sizeof(buf), &ind);
		OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "reading the database file's encoding");
		if (ind != SQL_NULL_DATA && ind >= 0)
			encoding = OdbcWideToUtf8(buf, Min((size_t) ind, sizeof(buf) - sizeof(SQLWCHAR)) /
									  sizeof(SQLWCHAR));
	}
	OdbcFreeStatement(conn, stmt);
	if (pg_strcasecmp(encoding, "UTF-8") != 0)
	{
			ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("SQLite database file of server \"%s\" stores its text as %s, not UTF-8",
						conn->server_name, encoding[0] ? encoding : "an unknown encoding"),
				 errdetail("treble_sync reads SQLite text as its stored bytes, which must be UTF-8."),
				 errhint("Copy the database into a new file, which SQLite creates as UTF-8 (for example: sqlite3 old.db .dump | sqlite3 new.db), and name that file in the server's Database=.")));
	}
}

/*
 * The TLS settings of the first HTTPS connection of this process through
 * the ClickHouse driver (OptionClickHouseTlsSettings), or NULL.
 */
static char *clickhouse_tls_settings = NULL;

/*
 * The ClickHouse driver sets up TLS once per process and keeps the CA,
 * mode and client certificate of its first HTTPS connection for every
 * later one (std::call_once in its connection.cpp): a second server
 * naming another CA, or asking for verification where the first did not,
 * would be reached with the first one's settings, unverified as far as
 * it is concerned.  Such a connection is refused instead, before its first
 * statement (the driver sends nothing over the network before one); the
 * settings of the first connection that got that far are the ones kept.
 */
static void
check_clickhouse_tls(OdbcConn *conn, ForeignServer *server)
{
	char	   *settings = OptionClickHouseTlsSettings(server);

	if (settings == NULL)
		return;
	if (clickhouse_tls_settings == NULL)
	{
		clickhouse_tls_settings = MemoryContextStrdup(TopMemoryContext, settings);
		return;
	}
	if (strcmp(settings, clickhouse_tls_settings) == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
			 errmsg("server \"%s\" names other TLS settings than the ClickHouse connection this process made first",
					server->servername),
			 errdetail("The ClickHouse ODBC driver sets up TLS once per process, with the SSLMode, CALocation, CertificateFile and PrivateKeyFile of its first HTTPS connection (here: %s), and would use them for this server too.",
					   clickhouse_tls_settings),
			 errhint("Connect to this server from another session. Cycles need not: a cycle worker leaves a cycle that needs other TLS settings to a fresh worker."),
			 errcontext("connecting to warehouse server \"%s\"", conn->server_name)));
}

/*
 * Whether this process has made an HTTPS connection through the ClickHouse
 * driver, which then keeps its TLS settings: until it has, any server fits.
 */
bool
OdbcClickHouseTlsSetUp(void)
{
	return clickhouse_tls_settings != NULL;
}

/*
 * Whether this process may connect to a server through the ClickHouse
 * driver with the TLS it has set up: true unless the process made an
 * HTTPS connection through that driver with other TLS settings than the
 * server's (check_clickhouse_tls would refuse the connection).  A cycle
 * worker asks before taking a cycle from its queue, and leaves a cycle
 * that would be refused to a fresh worker.
 */
bool
OdbcClickHouseTlsFits(ForeignServer *server)
{
	char	   *settings;

	if (clickhouse_tls_settings == NULL)
		return true;
	settings = OptionClickHouseTlsSettings(server);
	return settings == NULL || strcmp(settings, clickhouse_tls_settings) == 0;
}

/*
 * A table's timeouts (seconds; -1: its server's option), for a connection
 * opened for it or kept from an earlier cycle: a statement's query timeout
 * is set from it when the statement is made.
 */
void
OdbcSetTimeouts(OdbcConn *conn, ForeignServer *server, int login_timeout, int query_timeout)
{
	conn->login_timeout = login_timeout >= 0 ? login_timeout :
		FdwServerIntOption(server, "login_timeout", ODBC_DEFAULT_LOGIN_TIMEOUT);
	conn->query_timeout = query_timeout >= 0 ? query_timeout :
		FdwServerIntOption(server, "query_timeout", 0);
}

/*
 * Open a connection to the warehouse.  The connection is closed when the
 * current memory context is reset or deleted, or by OdbcDisconnect.
 */
OdbcConn *
OdbcConnect(ForeignServer *server, UserMapping *mapping, int login_timeout,
			int query_timeout, bool streaming)
{
	OdbcConn   *conn = palloc0(sizeof(OdbcConn));
	SQLRETURN	rc;
	char	   *connstr;
	char	   *s;
	const char *password = OptionMappingPassword(mapping);
	DriverFamily guess;

	conn->server_name = pstrdup(server->servername);
	OdbcSetTimeouts(conn, server, login_timeout, query_timeout);
	if (password)
		conn->password = pstrdup(password);

	/*
	 * Every check of who may use what happens here, before the driver is
	 * loaded: option.c vets the server and the mapping and quotes the
	 * credentials for the driver.
	 */
	connstr = OptionConnectionString(server, mapping, DRIVER_UNKNOWN, streaming, &guess);
	if (guess == DRIVER_SQLITE)
		conn->sqlite_file = OptionSqliteFile(server);

	conn->on_reset.func = odbc_release;
	conn->on_reset.arg = conn;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &conn->on_reset);

	rc = SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &conn->env);
	if (!SQL_SUCCEEDED(rc))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OUT_OF_MEMORY),
				 errmsg("could not allocate an ODBC environment handle")));
	rc = SQLSetEnvAttr(conn->env, SQL_ATTR_ODBC_VERSION, (SQLPOINTER) SQL_OV_ODBC3, 0);
	OdbcCheck(conn, rc, SQL_HANDLE_ENV, conn->env, "requesting ODBC 3 behaviour");

	odbc_driver_connect(conn, connstr);

	s = odbc_get_info_string(conn, SQL_DRIVER_NAME);
	strlcpy(conn->driver_name, s, sizeof(conn->driver_name));
	s = odbc_get_info_string(conn, SQL_DRIVER_VER);
	strlcpy(conn->driver_version, s, sizeof(conn->driver_version));

	/*
	 * A DSN hides the driver behind a name, and a guess can be wrong: once
	 * the driver is known, make sure it has its settings.
	 */
	conn->family = OptionDriverFamilyOfLibrary(conn->driver_name);
	if (conn->family != DRIVER_UNKNOWN && conn->family != guess &&
		OptionSettingsMissing(server, conn->family, streaming))
	{
		memset(connstr, 0, strlen(connstr));
		SQLDisconnect(conn->dbc);
		SQLFreeHandle(SQL_HANDLE_DBC, conn->dbc);
		conn->connected = false;
		conn->dbc = SQL_NULL_HDBC;
		connstr = OptionConnectionString(server, mapping, conn->family, streaming, NULL);
		odbc_driver_connect(conn, connstr);
	}
	memset(connstr, 0, strlen(connstr));

	/*
	 * The ClickHouse driver reaches the warehouse only at the first
	 * statement, with the TLS set up by the first connection of the
	 * process: judge this one's settings now that the driver is known.
	 */
	if (conn->family == DRIVER_CLICKHOUSE)
		check_clickhouse_tls(conn, server);

	if (!superuser_arg(server->owner))
		check_endpoint(conn, server, guess);

	s = odbc_get_info_string(conn, SQL_IDENTIFIER_QUOTE_CHAR);
	if (strcmp(s, " ") == 0)
		s = "";
	strlcpy(conn->quote, s, sizeof(conn->quote));
	s = odbc_get_info_string(conn, SQL_SEARCH_PATTERN_ESCAPE);
	strlcpy(conn->escape, s, sizeof(conn->escape));
	rc = SQLGetInfoW(conn->dbc, SQL_GETDATA_EXTENSIONS, &conn->getdata_ext,
					 sizeof(conn->getdata_ext), NULL);
	if (!SQL_SUCCEEDED(rc))
		conn->getdata_ext = 0;

	/*
	 * A PostgreSQL warehouse sends a timestamptz as text in its session's
	 * time zone, and psqlODBC drops the offset when it fills a timestamp
	 * structure: with the warehouse's own default zone (a role's or the
	 * server's setting) the digits would be read here in the server
	 * option's zone, hours off.  The session takes the option's zone, the
	 * one treble_sync reads its timestamps in; zone-less timestamps do not
	 * change with it.  The zone goes as a bound parameter.  Date and time
	 * columns are pulled as their text (deparse.c): it is written in ISO
	 * style and the postgres interval style whatever the warehouse's
	 * defaults, which the copy's input functions read under any DateStyle,
	 * and a timestamptz's text carries its offset.
	 */
	if (OdbcDriverIs(conn, DRIVER_PSQLODBC))
	{
		OdbcParam	zone = {ODBC_PARAM_TEXT, 0, OdbcServerTimezone(server)};
		SQLHSTMT	stmt = OdbcAllocStatement(conn);

		OdbcExecute(conn, stmt,
					"SELECT pg_catalog.set_config('TimeZone', ?, false),"
					" pg_catalog.set_config('DateStyle', 'ISO', false),"
					" pg_catalog.set_config('IntervalStyle', 'postgres', false)", 1, &zone);
		OdbcFreeStatement(conn, stmt);
	}
	if (OdbcDriverIs(conn, DRIVER_SQLITE))
		sqlite_check_encoding(conn);

	return conn;
}

/* Read a string-valued SQLGetInfo item. */
static char *
odbc_get_info_string(OdbcConn *conn, SQLUSMALLINT info)
{
	SQLWCHAR	buf[256];
	SQLSMALLINT len = 0;
	SQLRETURN	rc;

	rc = SQLGetInfoW(conn->dbc, info, buf, sizeof(buf), &len);
	OdbcCheck(conn, rc, SQL_HANDLE_DBC, conn->dbc, "reading driver information");
	return OdbcWideToUtf8(buf, Min(len / (SQLSMALLINT) sizeof(SQLWCHAR), (SQLSMALLINT) lengthof(buf) - 1));
}

/* Memory-context reset callback: release the ODBC handles. */
static void
odbc_release(void *arg)
{
	OdbcConn   *conn = arg;

	if (conn->dbc != SQL_NULL_HDBC)
	{
		if (conn->connected)
			SQLDisconnect(conn->dbc);
		SQLFreeHandle(SQL_HANDLE_DBC, conn->dbc);
		conn->dbc = SQL_NULL_HDBC;
		conn->connected = false;
	}
	if (conn->env != SQL_NULL_HENV)
	{
		SQLFreeHandle(SQL_HANDLE_ENV, conn->env);
		conn->env = SQL_NULL_HENV;
	}
}

/* Close the connection now rather than when its memory context goes. */
void
OdbcDisconnect(OdbcConn *conn)
{
	odbc_release(conn);
}

/*
 * Whether a byte of a name or string literal must not reach ClickHouse's
 * driver as itself.  The driver rewrites a statement's text before sending
 * it, and knows neither backquoted identifiers nor every quote: it takes
 * each ? and @name outside '...' and "..." for a parameter (inside
 * backquotes too), a " or ' inside backquotes or inside the other quote
 * for the start or end of a string, which moves every later ?, and a
 * backslash as escaping the next byte; and it replaces {fn ...} and the
 * other ODBC escapes anywhere, in literals too (OdbcAllocStatement() turns
 * that off, SQL_ATTR_NOSCAN; the braces are escaped as well).  ClickHouse
 * reads \xHH in a backquoted identifier and in a string literal, so these
 * bytes go so (OdbcClickHouseEscape()) and the driver never sees them.
 */
static bool
clickhouse_must_escape(char c)
{
	return c == '?' || c == '@' || c == '\'' || c == '"' || c == '`' || c == '\\' ||
		c == '{' || c == '}';
}

/*
 * Append s to buf for ClickHouse inside backquotes or a string literal,
 * every byte of clickhouse_must_escape() as \xHH.
 */
void
OdbcClickHouseEscape(StringInfo buf, const char *s)
{
	for (const char *p = s; *p; p++)
	{
		if (clickhouse_must_escape(*p))
			appendStringInfo(buf, "\\x%02X", (unsigned char) *p);
		else
			appendStringInfoChar(buf, *p);
	}
}

/*
 * Quote an identifier for the warehouse with the quote character its
 * driver reports, doubling that character inside (ClickHouse: escaping
 * what its driver would rewrite, OdbcClickHouseEscape()).
 */
char *
OdbcQuoteIdent(OdbcConn *conn, const char *ident)
{
	StringInfoData buf;
	size_t		qlen = strlen(conn->quote);

	if (OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
	{
		initStringInfo(&buf);
		appendStringInfoChar(&buf, '`');
		OdbcClickHouseEscape(&buf, ident);
		appendStringInfoChar(&buf, '`');
		return buf.data;
	}
	if (qlen == 0)
		return pstrdup(ident);

	initStringInfo(&buf);
	appendStringInfoString(&buf, conn->quote);
	for (const char *p = ident; *p;)
	{
		if (strncmp(p, conn->quote, qlen) == 0)
		{
			appendStringInfoString(&buf, conn->quote);
			appendStringInfoString(&buf, conn->quote);
			p += qlen;
		}
		else
			appendStringInfoChar(&buf, *p++);
	}
	appendStringInfoString(&buf, conn->quote);
	return buf.data;
}

/* schema.table, each part quoted; no schema means the driver's default. */
char *
OdbcQualifiedName(OdbcConn *conn, const char *schema, const char *table)
{
	if (schema == NULL || schema[0] == '\0')
		return OdbcQuoteIdent(conn, table);
	return psprintf("%s.%s", OdbcQuoteIdent(conn, schema), OdbcQuoteIdent(conn, table));
}

/*
 * Escape the wildcards of a catalog-function pattern argument so that a
 * table named fact_sends does not also match factXsends.
 */
char *
OdbcEscapePattern(OdbcConn *conn, const char *value)
{
	StringInfoData buf;

	if (conn->escape[0] == '\0')
		return pstrdup(value);
	initStringInfo(&buf);
	for (const char *p = value; *p; p++)
	{
		if (*p == '_' || *p == '%' || strncmp(p, conn->escape, strlen(conn->escape)) == 0)
			appendStringInfoString(&buf, conn->escape);
		appendStringInfoChar(&buf, *p);
	}
	return buf.data;
}

SQLHSTMT
OdbcAllocStatement(OdbcConn *conn)
{
	SQLHSTMT	stmt;
	SQLRETURN	rc;

	rc = SQLAllocHandle(SQL_HANDLE_STMT, conn->dbc, &stmt);
	OdbcCheck(conn, rc, SQL_HANDLE_DBC, conn->dbc, "allocating an ODBC statement");
	if (OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
	{
		/*
		 * No ODBC escape is ever sent to ClickHouse, and its driver would
		 * rewrite {fn ...} wherever it stands, names and literals too, and
		 * in the statements its catalog functions build from a name.
		 */
		rc = SQLSetStmtAttr(stmt, SQL_ATTR_NOSCAN, (SQLPOINTER) SQL_NOSCAN_ON, 0);
		OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "turning off escape processing");
	}
	if (conn->query_timeout > 0)
	{
		rc = SQLSetStmtAttr(stmt, SQL_ATTR_QUERY_TIMEOUT,
							(SQLPOINTER) (intptr_t) conn->query_timeout, 0);
		OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "setting the query timeout");
	}
	return stmt;
}

void
OdbcFreeStatement(OdbcConn *conn, SQLHSTMT stmt)
{
	if (conn->dbc != SQL_NULL_HDBC)
		SQLFreeHandle(SQL_HANDLE_STMT, stmt);
}

/* Convert a PostgreSQL timestamp to the ODBC structure, to microseconds. */
static void
timestamp_to_odbc(Timestamp ts, SQL_TIMESTAMP_STRUCT *out)
{
	struct pg_tm tm;
	fsec_t		fsec;

	/*
	 * A cut is finite and within the warehouse's clock (deparse.c), and
	 * bounds derive from it; a year before 1 has no ODBC form.
	 */
	if (TIMESTAMP_NOT_FINITE(ts) || timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0 ||
		tm.tm_year < 1 || tm.tm_year > 9999)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for the warehouse"),
				 errdetail("A bound of a remote statement must lie between the years 1 and 9999.")));
	out->year = tm.tm_year;
	out->month = tm.tm_mon;
	out->day = tm.tm_mday;
	out->hour = tm.tm_hour;
	out->minute = tm.tm_min;
	out->second = tm.tm_sec;
	out->fraction = (SQLUINTEGER) fsec * 1000;	/* nanoseconds */
}

/*
 * A timestamp as the text a warehouse without a timestamp type compares
 * (SQLite): always six fraction digits, so that text order is time order
 * for stored values with at most six (a stored value equal to a bound but
 * written shorter sorts first, which is why the pulls use > and <= only).
 */
static void
format_timestamp_text(const SQL_TIMESTAMP_STRUCT *ts, char *out)
{
	if (ts->year < 1 || ts->year > 9999)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for the warehouse")));
	snprintf(out, ODBC_TIMESTAMP_TEXT_LEN + 1, "%04d-%02u-%02u %02u:%02u:%02u.%06u",
			 ts->year, ts->month, ts->day, ts->hour, ts->minute, ts->second,
			 (unsigned int) (ts->fraction / 1000));
}

/*
 * Whether timestamp parameters are bound as text "YYYY-MM-DD
 * HH:MM:SS.ffffff" rather than as ODBC timestamp structures:
 *	- SQLite (OdbcTimestampsAsText): it compares the stored text;
 *	- ClickHouse: its driver sends every bound timestamp as a query
 *	  parameter of type Nullable(DateTime), which has whole seconds.  A
 *	  structure with a fraction goes out with nine fraction digits and
 *	  ClickHouse refuses the query (BAD_QUERY_PARAMETER); one without loses
 *	  the microseconds, and a cut "synced_at <= T" cut to the second would
 *	  miss rows for ever.  A text parameter is a String, which ClickHouse
 *	  converts to the column's own type (DateTime64(6) keeps every
 *	  microsecond).  A DateTime column refuses text with a fraction
 *	  (TYPE_MISMATCH), so the columns compared are written
 *	  toDateTime64(col, 6): see deparse.c's timestamp_operand().
 */
static bool
odbc_bind_timestamps_as_text(OdbcConn *conn)
{
	return OdbcTimestampsAsText(conn) || OdbcDriverIs(conn, DRIVER_CLICKHOUSE);
}

/*
 * Run a statement with its parameters bound (never spliced into the text).
 * An error names the statement in its CONTEXT, as postgres_fdw's do; it
 * holds no secrets.  Every statement is logged at DEBUG1 in a stable form
 * ("treble_sync remote SQL: ..."), its text only, as localsql.c logs the
 * copy's.
 */
void
OdbcExecute(OdbcConn *conn, SQLHSTMT stmt, const char *sql, int nparams,
			OdbcParam *params)
{
	SQL_TIMESTAMP_STRUCT *ts = palloc0(sizeof(SQL_TIMESTAMP_STRUCT) * Max(nparams, 1));
	SQLBIGINT  *ints = palloc0(sizeof(SQLBIGINT) * Max(nparams, 1));
	SQLLEN	   *ind = palloc0(sizeof(SQLLEN) * Max(nparams, 1));
	char	  (*texts)[ODBC_TIMESTAMP_TEXT_LEN + 1] = palloc0(sizeof(*texts) * Max(nparams, 1));
	SQLWCHAR   *wsql;
	SQLRETURN	rc;

	for (int i = 0; i < nparams; i++)
	{
		if (params[i].kind == ODBC_PARAM_TIMESTAMP && odbc_bind_timestamps_as_text(conn))
		{
			timestamp_to_odbc(params[i].value, &ts[i]);
			format_timestamp_text(&ts[i], texts[i]);
			ind[i] = SQL_NTS;
			rc = SQLBindParameter(stmt, i + 1, SQL_PARAM_INPUT, SQL_C_CHAR,
								  SQL_VARCHAR, ODBC_TIMESTAMP_TEXT_LEN, 0, texts[i],
								  sizeof(texts[i]), &ind[i]);
		}
		else if (params[i].kind == ODBC_PARAM_TIMESTAMP)
		{
			timestamp_to_odbc(params[i].value, &ts[i]);
			rc = SQLBindParameter(stmt, i + 1, SQL_PARAM_INPUT, SQL_C_TYPE_TIMESTAMP,
								  SQL_TYPE_TIMESTAMP, 26, 6, &ts[i], 0, &ind[i]);
		}
		else if (params[i].kind == ODBC_PARAM_TEXT && OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
		{
			/* as the hex of its bytes: see DeparseTextPlaceholder() */
			size_t		len = strlen(params[i].text);
			char	   *hex = palloc(len * 2 + 1);

			hex[hex_encode(params[i].text, len, hex)] = '\0';
			ind[i] = (SQLLEN) (len * 2);
			rc = SQLBindParameter(stmt, i + 1, SQL_PARAM_INPUT, SQL_C_CHAR,
								  SQL_VARCHAR, Max(len * 2, 1), 0, hex,
								  ind[i] + 1, &ind[i]);
		}
		else if (params[i].kind == ODBC_PARAM_TEXT)
		{
			SQLINTEGER	nchars;
			SQLWCHAR   *w = OdbcUtf8ToWide(params[i].text, &nchars);

			ind[i] = nchars * sizeof(SQLWCHAR);
			rc = SQLBindParameter(stmt, i + 1, SQL_PARAM_INPUT, SQL_C_WCHAR,
								  SQL_WVARCHAR, Max(nchars, 1), 0, w,
								  ind[i] + sizeof(SQLWCHAR), &ind[i]);
		}
		else
		{
			ints[i] = params[i].value;
			rc = SQLBindParameter(stmt, i + 1, SQL_PARAM_INPUT, SQL_C_SBIGINT,
								  SQL_BIGINT, 19, 0, &ints[i], 0, &ind[i]);
		}
		OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "binding a parameter of a remote query");
	}

	ereport(DEBUG1, (errmsg_internal("treble_sync remote SQL: %s", sql)));
	wsql = OdbcUtf8ToWide(sql, NULL);
	OdbcBeginRemoteCall(conn, stmt);
	rc = SQLExecDirectW(stmt, wsql, SQL_NTS);
	OdbcEndRemoteCall();
	if (!SQL_SUCCEEDED(rc) && rc != SQL_NO_DATA)
		odbc_report_error(conn, rc, SQL_HANDLE_STMT, stmt,
						  "running a statement on the warehouse", sql);
}

/*
 * Whether a value longer than its bound slot in a block can be read again
 * with SQLSetPos and SQLGetData, which fetch.c's block cursor relies on.
 * Drivers that claim it (SQL_GD_BLOCK and SQL_GD_BOUND) are not all right:
 * MariaDB Connector/ODBC 3.1 reports both, then returns another row's value
 * and loses its place; SQLite's driver rejects SQLSetPos.  So it is used
 * only with drivers seen to do it correctly; the others are read a row at
 * a time.
 */
bool
OdbcSupportsBlockGetData(OdbcConn *conn)
{
	if ((conn->getdata_ext & (SQL_GD_BLOCK | SQL_GD_BOUND)) != (SQL_GD_BLOCK | SQL_GD_BOUND))
		return false;
	return OdbcDriverIs(conn, DRIVER_PSQLODBC);
}

/* ------------------------------------------------------------------------
 * Cancelling a remote call
 *
 * A driver call waiting on the warehouse does not return to check
 * PostgreSQL's interrupt flags, and ODBC offers one way to stop it:
 * SQLCancel on the same statement from another thread.  So a worker runs
 * one small thread that does nothing else.  The signal handlers (SIGINT
 * for pg_cancel_backend, SIGTERM for pg_terminate_backend and for a caller
 * that stops waiting) write a byte to a pipe, which is async-signal-safe;
 * the thread wakes up and cancels the statement in flight, if any.  The
 * call then returns with an error, and the error path sees the interrupt.
 * The thread calls nothing of PostgreSQL's.
 * ------------------------------------------------------------------------
 */
static int	cancel_pipe[2] = {-1, -1};
static pthread_mutex_t cancel_lock = PTHREAD_MUTEX_INITIALIZER;
static SQLHSTMT cancel_target = SQL_NULL_HSTMT;

/* The cancel thread: wait for a request, cancel the call in flight. */
static void *
cancel_thread_main(void *arg)
{
	for (;;)
	{
		char		c;
		ssize_t		n = read(cancel_pipe[0], &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		pthread_mutex_lock(&cancel_lock);
		if (cancel_target != SQL_NULL_HSTMT)
			SQLCancel(cancel_target);
		pthread_mutex_unlock(&cancel_lock);
	}
}

/*
 * Start the cancel thread of this process.  Called once by a worker before
 * it connects; signals stay with the main thread.
 */
void
OdbcEnableCancel(void)
{
	sigset_t	all;
	sigset_t	saved;
	pthread_t	thread;
	int			err;

	if (cancel_pipe[0] >= 0)
		return;
	if (pipe(cancel_pipe) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create the cancel pipe: %m")));
	fcntl(cancel_pipe[1], F_SETFL, O_NONBLOCK);
	fcntl(cancel_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(cancel_pipe[1], F_SETFD, FD_CLOEXEC);

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	err = pthread_create(&thread, NULL, cancel_thread_main, NULL);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (err != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start the cancel thread: %s", strerror(err))));
	pthread_detach(thread);
}

/*
 * Ask the cancel thread to stop the remote call in flight.  Safe in a
 * signal handler; does nothing where OdbcEnableCancel() was not called.
 */
void
OdbcCancelRemoteCall(void)
{
	int			save_errno = errno;

	if (cancel_pipe[1] >= 0)
	{
		char		c = 'c';

		if (write(cancel_pipe[1], &c, 1) < 0)
		{
			/* the pipe is full: a request is pending already */
		}
	}
	errno = save_errno;
}

/*
 * Mark stmt of conn as the one a cancel stops, around a call that may wait
 * on the warehouse.  A cancel that arrived just before is honoured at once.
 *
 * Not the SQLite driver's: its SQLCancel, on anything but Windows, also
 * closes the statement (frees its result) without a lock, so from the
 * cancel thread it freed the rows SQLGetData was copying in the main
 * thread (a reader terminated by its worker died of a segmentation fault
 * there).  Its calls read a local file and return on their own; the
 * cancel is seen by the next CHECK_FOR_INTERRUPTS().
 */
void
OdbcBeginRemoteCall(OdbcConn *conn, SQLHSTMT stmt)
{
	if (cancel_pipe[0] < 0)
		return;
	Assert(conn != NULL);
	CHECK_FOR_INTERRUPTS();
	if (conn->family == DRIVER_SQLITE)
		return;
	pthread_mutex_lock(&cancel_lock);
	cancel_target = stmt;
	pthread_mutex_unlock(&cancel_lock);
}

/* The call returned: a cancel can no longer reach its statement. */
void
OdbcEndRemoteCall(void)
{
	if (cancel_pipe[0] < 0)
		return;
	pthread_mutex_lock(&cancel_lock);
	cancel_target = SQL_NULL_HSTMT;
	pthread_mutex_unlock(&cancel_lock);
}

/*
 * Whether the connection's driver is of a family (option.h): what the
 * warehouse is, for the SQL written for it and the way its values are
 * read.
 */
bool
OdbcDriverIs(OdbcConn *conn, DriverFamily family)
{
	return conn->family == family;
}

/*
 * Whether the driver can hand over a large result a part at a time, with
 * the settings option.c adds.  Two cannot:
 *	- MariaDB Connector/ODBC before 3.1.17 reads every result whole;
 *	- the SQLite driver steps through a statement only when it has no
 *	  parameters, and every pull has some.
 * Drivers not known here are taken to stream, as the ODBC drivers of
 * SQL Server, Snowflake and ClickHouse do.
 */
bool
OdbcDriverStreams(OdbcConn *conn)
{
	if (OdbcDriverIs(conn, DRIVER_SQLITE))
		return false;
	if (OdbcDriverIs(conn, DRIVER_MARIADB))
	{
		int			major = 0,
					minor = 0,
					patch = 0;

		if (sscanf(conn->driver_version, "%d.%d.%d", &major, &minor, &patch) != 3)
			return false;
		return major > 3 || (major == 3 && (minor > 1 || (minor == 1 && patch >= 17)));
	}
	return true;
}

/*
 * Whether a column's declared size bounds every value the driver returns
 * for it: MariaDB and MySQL enforce column lengths on the server.  SQLite
 * does not, and psqlODBC declares text as 8190 characters whatever it
 * holds.
 */
bool
OdbcDeclaredSizesHold(OdbcConn *conn)
{
	return OdbcDriverIsMysql(conn);
}

/* The driver's file name and version, for messages. */
const char *
OdbcDriverDescription(OdbcConn *conn)
{
	return psprintf("%s %s", conn->driver_name, conn->driver_version);
}

/*
 * Whether timestamps are read and bound as text on this connection.
 * SQLite has no timestamp type: it compares the stored text with the
 * parameter's text, and its driver writes a bound timestamp structure with
 * milliseconds only.  So timestamps go both ways as text there.
 */
bool
OdbcTimestampsAsText(OdbcConn *conn)
{
	return OdbcDriverIs(conn, DRIVER_SQLITE);
}

/* Whether the warehouse is MariaDB or MySQL, through either's driver. */
bool
OdbcDriverIsMysql(OdbcConn *conn)
{
	return OdbcDriverIs(conn, DRIVER_MARIADB) || OdbcDriverIs(conn, DRIVER_MYSQL);
}

/*
 * Whether text is read as the bytes the driver receives (SQL_C_BINARY),
 * to be checked as UTF-8, rather than as UTF-16, whose conversion in these
 * drivers changes values without a word: SQLite's drops bytes that are
 * not UTF-8 and cuts a value at a NUL, ClickHouse's puts U+FFFD in place
 * of bytes that are not UTF-8, MariaDB's (and MySQL's) cuts a value at a
 * NUL.  Their bytes are UTF-8: SQLite's stored text (in a UTF-8 file),
 * ClickHouse's String as stored, and MariaDB's in the connection's
 * character set, utf8mb4 for the Unicode driver.  psqlODBC's conversion
 * is exact, and PostgreSQL text holds neither.
 */
bool
OdbcTextAsBytes(OdbcConn *conn)
{
	return OdbcDriverIs(conn, DRIVER_SQLITE) || OdbcDriverIs(conn, DRIVER_CLICKHOUSE) ||
		OdbcDriverIs(conn, DRIVER_MARIADB) || OdbcDriverIs(conn, DRIVER_MYSQL);
}

/*
 * Whether every value of a pull can be read as the bytes the warehouse
 * sent, through the driver's SQL_C_CHAR, rather than as UTF-16 or a binary
 * integer: psqlODBC's Unicode driver (psqlodbcw), whose connection's
 * client_encoding is UTF8, when this process's LC_CTYPE is UTF-8 too.
 * There psqlODBC hands over the server's text unchanged (a text value is
 * converted to the locale's encoding only when that is not the client's,
 * and then through UTF-8 both ways), where UTF-16 costs it a conversion,
 * a buffer per value and a second conversion back here, and an integer a
 * strtoll() and a printing back.  The text is what the server's output
 * functions wrote, or a date or time cast to text (deparse.c), which
 * psqlODBC passes on as it does any text; the bytes are checked as UTF-8
 * (stage.c).  The ANSI driver's SQL_C_CHAR is in the database's encoding,
 * and in another locale text would be converted: both keep UTF-16.
 */
bool
OdbcCharIsUtf8(OdbcConn *conn)
{
	return OdbcDriverIs(conn, DRIVER_PSQLODBC) &&
		strstr(conn->driver_name, "psqlodbcw") != NULL &&
		pg_get_encoding_from_locale(NULL, false) == PG_UTF8;
}

/*
 * Make every later statement of this connection read one snapshot of the
 * warehouse, for a group's cycle: its members' cuts and pulls then see the
 * warehouse as it was at one moment.  PostgreSQL: one REPEATABLE READ,
 * READ ONLY transaction.  MariaDB/MySQL: START TRANSACTION WITH
 * CONSISTENT SNAPSHOT (InnoDB tables; other engines have no snapshot).
 * SQLite: one read transaction (the driver begins it at the first
 * statement once autocommit is off).  Returns false for a warehouse with
 * no transactions (ClickHouse): there the caller freezes the cuts one
 * after another before any pull.  The transaction ends with the
 * connection; nothing is written through it.
 */
bool
OdbcBeginSnapshot(OdbcConn *conn)
{
	SQLRETURN	rc;
	SQLHSTMT	stmt;

	if (OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
		return false;
	if (OdbcDriverIsMysql(conn))
	{
		stmt = OdbcAllocStatement(conn);
		OdbcExecute(conn, stmt, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", 0, NULL);
		OdbcFreeStatement(conn, stmt);
	}
	rc = SQLSetConnectAttr(conn->dbc, SQL_ATTR_AUTOCOMMIT, (SQLPOINTER) SQL_AUTOCOMMIT_OFF, 0);
	OdbcCheck(conn, rc, SQL_HANDLE_DBC, conn->dbc, "turning autocommit off for one snapshot");
	stmt = OdbcAllocStatement(conn);
	if (OdbcDriverIs(conn, DRIVER_PSQLODBC))
		OdbcExecute(conn, stmt, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", 0, NULL);
	else if (OdbcDriverIsMysql(conn))
		OdbcExecute(conn, stmt, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY", 0, NULL);
	else
		OdbcExecute(conn, stmt, "SELECT count(*) FROM sqlite_master", 0, NULL);	/* SQLite's read begins */
	OdbcFreeStatement(conn, stmt);
	return true;
}
