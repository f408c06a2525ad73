/*-------------------------------------------------------------------------
 *
 * option.c
 *	  The options of the treble_sync wrapper's servers and user mappings,
 *	  and who may set what.
 *
 * This file owns:
 *	- the option validator of the wrapper (which options exist, their values);
 *	- the rules of who may point the worker at what: a server owned by a
 *	  superuser may use any connection-string key but credentials; a server
 *	  owned by any other role may only name a driver registered with
 *	  unixODBC or a system DSN, of a driver family known here (not SQLite
 *	  or ClickHouse), with a short allow-list of keys per family, and reach
 *	  one host over TCP, judged as the driver reads its host and port and
 *	  appended last so that the driver uses it.  These rules are checked
 *	  in the validator (when the current user is not a superuser) and again
 *	  at every connect (when the server's owner is not a superuser, since a
 *	  server can change hands after it was validated);
 *	- the user-mapping options user, password and password_required, and
 *	  the check that a mapping of a role that is not a superuser carries a
 *	  password;
 *	- that no credential, dsn or value of such a role's connection string
 *	  holds a character from U+0100 up, which unixODBC, reading the wide
 *	  string one byte per character, could take for ; = / or its end;
 *	- the ODBC connection string built from all of that, each value quoted
 *	  the way the driver that parses it expects, so that a credential cannot
 *	  change the meaning of the string;
 *	- what treble_sync knows of each driver family (the settings that make
 *	  it stream), and scrubbing a password out of a driver's messages.
 *
 * Connecting and statements belong to odbc.c, which asks this file for the
 * connection string.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/syscache.h"

#include "option.h"

#include <sql.h>
#include <sqlext.h>
#include <odbcinst.h>

/* ------------------------------------------------------------------------
 * The options
 * ------------------------------------------------------------------------
 */
typedef struct ValidOption
{
	const char *name;
	Oid			context;		/* catalog the option may appear in */
} ValidOption;

static const ValidOption valid_options[] = {
	{"connection_string", ForeignServerRelationId},
	{"dsn", ForeignServerRelationId},
	{"timezone", ForeignServerRelationId},
	{"fetch_size", ForeignServerRelationId},
	{"slice_rows", ForeignServerRelationId},
	{"login_timeout", ForeignServerRelationId},
	{"query_timeout", ForeignServerRelationId},
	{"max_retries", ForeignServerRelationId},
	{"user", UserMappingRelationId},
	{"password", UserMappingRelationId},
	{"password_required", UserMappingRelationId},
	{NULL, InvalidOid}
};

/* ------------------------------------------------------------------------
 * What treble_sync knows of each driver family
 * ------------------------------------------------------------------------
 */

/* A setting a driver needs that it does not default to. */
typedef struct DriverSetting
{
	const char *keys;			/* "A|B": the user decided if the string has A or B */
	const char *value;			/* %d is the fetch size */
	bool		streaming;		/* only for connections that pull rows */
} DriverSetting;

/*
 * Where a driver connects to, as the driver itself decides it (only for the
 * families a server not owned by a superuser may use).  Each setting may
 * have several names, which the driver reads into one field, ignoring case,
 * the last one given winning; a DSN's entries are read first and every key
 * of the connection string overrides them.
 */
typedef struct DriverEndpoint
{
	const char *const *host;	/* its names; the first is the one appended */
	const char *const *port;
	const char *const *dsn_host;	/* odbc.ini entries read, the first set wins */
	const char *const *dsn_port;
	const char *const *dsn_refused; /* odbc.ini entries that choose a socket,
									 * a pipe or an options file */
	bool		localhost_socket;	/* its client library reads "localhost" as
									 * its Unix socket */
} DriverEndpoint;

typedef struct KnownDriver
{
	DriverFamily family;
	const char *name;			/* for messages */
	const char *library_prefixes[2];	/* the driver's file name starts with one */
	bool		braces;			/* honours ODBC's {...} quoting of values */
	DriverSetting settings[2];
	const char *const *allowed; /* keys a server not owned by a superuser may set */
	const DriverEndpoint *endpoint; /* with allowed: how it reads its endpoint */
} KnownDriver;

/*
 * Keys a server owned by a role that is not a superuser may use: where the
 * warehouse is (host, port, database), TLS mode, timeouts and how rows are
 * fetched.  Nothing that names a file, loads code, runs SQL at login,
 * writes a log or hands options to a lower layer (psqlODBC's pqopt and
 * ConnSettings, MariaDB's INITSTMT, PLUGIN_DIR, OPTION bits, SSL files).
 */
static const char *const psqlodbc_allowed[] = {
	"Driver", "DSN", "Server", "Servername", "Port", "Database", "SSLmode",
	"Fetch", "UseDeclareFetch", "ReadOnly", "KeepaliveTime", "KeepaliveInterval",
	NULL
};

static const char *const mysql_allowed[] = {
	"Driver", "DSN", "Server", "Port", "Database", "DB",
	"SSLVERIFY", "FORCETLS", "TLSVERSION", "SSLMODE", "SSL_MODE",
	"CONN_TIMEOUT", "READ_TIMEOUT", "WRITE_TIMEOUT", "READTIMEOUT", "WRITETIMEOUT",
	"NO_CACHE", "FORWARDONLY", "STREAMRS", "FORWARD_CURSOR", "CHARSET",
	NULL
};

/*
 * psqlODBC 13 (copyConnAttributes in its dlg_specific.c) reads Server and
 * Servername into one field and Port into another; from a DSN it reads
 * Servername and Port (getDSNinfo), and pqopt, whose libpq keywords could
 * name another host.  It hands the host to libpq as is: empty means libpq's
 * default socket directory, a path or a name starting with @ a Unix socket,
 * a comma a list of hosts (an empty entry of which is the socket again).
 */
static const char *const psqlodbc_host[] = {"Servername", "Server", NULL};
static const char *const psqlodbc_port[] = {"Port", NULL};
static const char *const psqlodbc_dsn_host[] = {"Servername", NULL};
static const char *const no_keys[] = {NULL};

static const DriverEndpoint psqlodbc_endpoint = {
	psqlodbc_host, psqlodbc_port, psqlodbc_dsn_host, psqlodbc_port, no_keys, false
};

/*
 * MariaDB Connector/ODBC 3.1 (DsnKeys in its ma_dsn.c) reads SERVER and its
 * alias SERVERNAME into one field, the last one winning; it connects over
 * TCP, "localhost" and an empty SERVER included, unless SOCKET (even empty)
 * or NamedPipe is set or an OPTION bit asks for a named pipe (8192) or
 * my.cnf (65536), which could name a socket.  MySQL Connector/ODBC takes
 * SERVER and its libmysqlclient reads "localhost" as its Unix socket.
 */
static const char *const mysql_host[] = {"SERVER", "SERVERNAME", NULL};
static const char *const mysql_port[] = {"PORT", NULL};
static const char *const mysql_dsn_refused[] = {
	"SOCKET", "NamedPipe", "NAMED_PIPE", "USE_MYCNF", "READ_OPTIONS_FROM_MYCNF", NULL
};

#define MYSQL_OPTION_NAMED_PIPE 8192
#define MYSQL_OPTION_USE_MYCNF	65536
#define MYSQL_OPTION_TRACE		4	/* MariaDB: MADB_OPT_FLAG_DEBUG */

static const DriverEndpoint mariadb_endpoint = {
	mysql_host, mysql_port, mysql_host, mysql_port, mysql_dsn_refused, false
};
static const DriverEndpoint mysql_endpoint = {
	mysql_host, mysql_port, mysql_host, mysql_port, mysql_dsn_refused, true
};

static const KnownDriver known_drivers[] = {
	/* a server-side cursor, fetch_size rows at a time */
	{DRIVER_PSQLODBC, "psqlODBC", {"psqlodbc", NULL}, true,
		{{"UseDeclareFetch", "1", true}, {"Fetch", "%d", true}},
	psqlodbc_allowed, &psqlodbc_endpoint},
	/* row by row (MariaDB Connector/ODBC 3.1.17 and later) */
	{DRIVER_MARIADB, "MariaDB Connector/ODBC", {"libmaodbc", "maodbc"}, true,
		{{"NO_CACHE|STREAMRS", "1", true}, {"FORWARDONLY", "1", true}},
	mysql_allowed, &mariadb_endpoint},
	{DRIVER_MYSQL, "MySQL Connector/ODBC", {"libmyodbc", "myodbc"}, true,
		{{"NO_CACHE", "1", true}, {"FORWARD_CURSOR", "1", true}},
	mysql_allowed, &mysql_endpoint},
	/*
	 * Step through the statement instead of reading it whole, and never
	 * create the warehouse file: a mistyped path is an error.  The SQLite
	 * driver does not honour braces, and opens files as the server's OS
	 * user: no allow-list, it is for superuser-owned servers only.
	 */
	{DRIVER_SQLITE, "SQLite ODBC", {"libsqlite", "sqlite"}, false,
		{{"StepAPI", "1", true}, {"NoCreat", "1", false}},
	NULL, NULL},

	/*
	 * The official ClickHouse ODBC driver (libclickhouseodbcw.so).  It
	 * streams by itself.  Its parser (readConnectionString in its
	 * driver/config/config.cpp, v1.1.10) takes {...} but ends a braced value
	 * at the first '}', with no doubled '}}': a value holding '}' cannot be
	 * given at all, so for our purposes it does not honour braces, and ; { }
	 * = are refused in credentials.  DriverLog=off: a debug build of the
	 * driver logs every call, connection string included, to a file in /tmp.
	 * Its keys include log and TLS files (DriverLogFile, CertificateFile,
	 * PrivateKeyFile, CALocation) and its Url names any host: no
	 * allow-list, it is for superuser-owned servers only.
	 */
	{DRIVER_CLICKHOUSE, "ClickHouse ODBC", {"libclickhouseodbc", "clickhouseodbc"}, false,
		{{"DriverLog", "off", false}, {NULL, NULL, false}},
	NULL, NULL},
};

/*
 * The TLS settings of each driver family a server not owned by a superuser
 * may use, under every name the driver reads them by (in a connection
 * string and in a DSN's entries alike):
 *
 *	- TLS_FILE: names a file (a CA, a CRL, a client certificate or key, a
 *	  fingerprint list).  Only a superuser's server may: the file is opened
 *	  as the database server's OS user.  (psqlODBC has no such key of its
 *	  own: libpq's sslrootcert, sslcert and sslkey go through pqopt, which
 *	  is off the allow-list altogether.)  Where a DBA puts a CA for such a role's
 *	  servers: a system DSN that names it (which the role names by DSN=),
 *	  or where the driver looks by default (docs/security.md).
 *	- TLS_LEVEL: how much is verified, its values listed weakest first; a
 *	  value not listed is refused (psqlODBC reads SSLmode by its first
 *	  letters, so a misspelling could mean anything).  Over a system DSN, a
 *	  connection string may keep or raise the DSN's level, never lower it:
 *	  the DSN is the administrator's, and the driver lets the connection
 *	  string's key win.
 *	- TLS_PINNED: which TLS versions or which certificate fingerprint; a
 *	  connection string may not change what the DSN sets.
 *
 * The ClickHouse driver's (SSLMode, CALocation, CertificateFile,
 * PrivateKeyFile) are not listed: only a superuser's server may use that
 * driver at all.
 */
typedef enum TlsKind
{
	TLS_FILE,
	TLS_LEVEL,
	TLS_PINNED
} TlsKind;

typedef struct TlsSetting
{
	DriverFamily family;
	TlsKind		kind;
	const char *names[3];		/* its names; NULL-terminated */
	const char *levels[7];		/* TLS_LEVEL: weakest first; NULL-terminated */
} TlsSetting;

static const TlsSetting tls_settings[] = {
	/* psqlODBC 13 (copyConnAttributes, getDSNinfo in its dlg_specific.c) */
	{DRIVER_PSQLODBC, TLS_LEVEL, {"SSLmode"},
	{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}},

	/* MariaDB Connector/ODBC 3.1 (DsnKeys in its ma_dsn.c) */
	{DRIVER_MARIADB, TLS_LEVEL, {"SSLVERIFY"}, {"0", "1"}},
	{DRIVER_MARIADB, TLS_LEVEL, {"FORCETLS"}, {"0", "1"}},
	{DRIVER_MARIADB, TLS_PINNED, {"TLSVERSION"}},
	{DRIVER_MARIADB, TLS_PINNED, {"TLSPEERFP", "SSLFP"}},
	{DRIVER_MARIADB, TLS_FILE, {"SSLCA"}},
	{DRIVER_MARIADB, TLS_FILE, {"SSLCAPATH"}},
	{DRIVER_MARIADB, TLS_FILE, {"SSLCERT"}},
	{DRIVER_MARIADB, TLS_FILE, {"SSLKEY"}},
	{DRIVER_MARIADB, TLS_FILE, {"SSLCRL"}},
	{DRIVER_MARIADB, TLS_FILE, {"SSLCRLPATH"}},
	{DRIVER_MARIADB, TLS_FILE, {"TLSPEERFPLIST", "SSLFPLIST"}},

	/* MySQL Connector/ODBC 8 */
	{DRIVER_MYSQL, TLS_LEVEL, {"SSLMODE", "SSL_MODE"},
	{"DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"}},
	{DRIVER_MYSQL, TLS_LEVEL, {"SSLVERIFY"}, {"0", "1"}},
	{DRIVER_MYSQL, TLS_FILE, {"SSLCA"}},
	{DRIVER_MYSQL, TLS_FILE, {"SSLCAPATH"}},
	{DRIVER_MYSQL, TLS_FILE, {"SSLCERT"}},
	{DRIVER_MYSQL, TLS_FILE, {"SSLKEY"}},
	{DRIVER_MYSQL, TLS_FILE, {"SSLCRL"}},
	{DRIVER_MYSQL, TLS_FILE, {"SSLCRLPATH"}},
	{DRIVER_MYSQL, TLS_FILE, {"RSAKEY"}},
};

/* The known driver of a family; NULL for DRIVER_UNKNOWN. */
static const KnownDriver *
known_driver(DriverFamily family)
{
	for (size_t i = 0; i < lengthof(known_drivers); i++)
		if (known_drivers[i].family == family)
			return &known_drivers[i];
	return NULL;
}

/*
 * The family of a driver from its library's file name (a path, or what
 * SQL_DRIVER_NAME reports once connected): the file is what runs, whatever
 * name it was registered under.
 */
DriverFamily
OptionDriverFamilyOfLibrary(const char *library)
{
	const char *base;

	if (library == NULL)
		return DRIVER_UNKNOWN;
	base = strrchr(library, '/');
	base = base ? base + 1 : library;
	for (size_t i = 0; i < lengthof(known_drivers); i++)
		for (size_t w = 0; w < lengthof(known_drivers[i].library_prefixes); w++)
		{
			const char *prefix = known_drivers[i].library_prefixes[w];

			if (prefix && pg_strncasecmp(base, prefix, strlen(prefix)) == 0)
				return known_drivers[i].family;
		}
	return DRIVER_UNKNOWN;
}

/* ------------------------------------------------------------------------
 * Reading a connection string
 * ------------------------------------------------------------------------
 */
/* the longest connection string read: SQLDriverConnect's SQLSMALLINT */
#define CONNSTR_MAX_BYTES 32767

typedef struct ConnKey
{
	char	   *key;			/* without surrounding spaces */
	char	   *value;			/* braces removed, "}}" undoubled */
	bool		braced;
} ConnKey;

/*
 * Split a connection string into its KEY=value parts the way ODBC reads
 * it: parts end at ';', a value starting with '{' runs to the '}' that is
 * not doubled.  A string that is not made of such parts is refused rather
 * than guessed at, since the driver manager and the driver could read it
 * differently from us.  Errors never show a value: a misplaced credential
 * could be in it.
 */
static List *
parse_connection_string(const char *connstr)
{
	List	   *result = NIL;
	const char *p = connstr;

	/*
	 * Any role may call the validator with any string: one of a few hundred
	 * kilobytes must not tie a backend up (vet_connection compares every key
	 * with every other).  ODBC gives a connection string's length as a
	 * SQLSMALLINT, so a longer one could never be used anyway.
	 */
	if (strlen(connstr) > CONNSTR_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a connection string may not be longer than %d bytes", CONNSTR_MAX_BYTES),
				 errdetail("ODBC passes the length of a connection string as a 16-bit number.")));

	while (*p)
	{
		const char *start;
		const char *kend;
		ConnKey    *ck;
		StringInfoData value;

		CHECK_FOR_INTERRUPTS();
		while (*p == ';' || *p == ' ')
			p++;
		if (*p == '\0')
			break;
		start = p;
		while (*p && *p != '=' && *p != ';')
			p++;
		if (*p != '=')
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_STRING_FORMAT),
					 errmsg("invalid connection string: a part is not of the form KEY=value"),
					 errhint("Separate KEY=value parts with semicolons; write a value holding ; { } or = as {value} with } doubled.")));
		kend = p;
		while (kend > start && kend[-1] == ' ')
			kend--;
		ck = palloc0(sizeof(ConnKey));
		ck->key = pnstrdup(start, kend - start);

		/*
		 * The driver manager finds the driver by the keys it reads itself
		 * and keeps a key's spaces as part of its name: "Driver =" names
		 * no driver there (it falls back to a [Default] data source),
		 * while this parse would judge the driver named.  Such a key must
		 * be written without spaces around it.
		 */
		if ((kend != p || (start > connstr && start[-1] == ' ')) &&
			(pg_strcasecmp(ck->key, "Driver") == 0 || pg_strcasecmp(ck->key, "DSN") == 0 ||
			 pg_strcasecmp(ck->key, "FILEDSN") == 0 || pg_strcasecmp(ck->key, "SAVEFILE") == 0))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_STRING_FORMAT),
					 errmsg("invalid connection string: key \"%s\" has spaces around it", ck->key),
					 errhint("Write the driver manager's keys (Driver, DSN) with no space before or after them.")));
		p++;
		initStringInfo(&value);
		if (*p == '{')
		{
			bool		closed = false;

			ck->braced = true;
			p++;
			while (*p)
			{
				if (*p == '}' && p[1] == '}')
				{
					appendStringInfoChar(&value, '}');
					p += 2;
				}
				else if (*p == '}')
				{
					p++;
					closed = true;
					break;
				}
				else
					appendStringInfoChar(&value, *p++);
			}
			while (*p == ' ')
				p++;
			if (!closed || (*p != '\0' && *p != ';'))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_STRING_FORMAT),
						 errmsg("invalid connection string: the braced value of key \"%s\" is not closed where it should be",
								ck->key),
						 errhint("Inside {...} double every }, and end the value with } followed by ; or the end of the string.")));
		}
		else
		{
			while (*p && *p != ';')
				appendStringInfoChar(&value, *p++);
		}
		ck->value = value.data;
		result = lappend(result, ck);
	}
	return result;
}

/* The first part of a parsed connection string with this key, or NULL. */
static ConnKey *
find_key(List *keys, const char *key)
{
	ListCell   *lc;

	foreach(lc, keys)
	{
		ConnKey    *ck = lfirst(lc);

		if (pg_strcasecmp(ck->key, key) == 0)
			return ck;
	}
	return NULL;
}

/* Whether a key is one of a NULL-terminated list (case-insensitively). */
static bool
key_in(const char *key, const char *const *list)
{
	for (; list && *list; list++)
		if (pg_strcasecmp(key, *list) == 0)
			return true;
	return false;
}

/*
 * Whether every character of a value reaches the driver manager as itself.
 * The worker hands unixODBC a wide (UTF-16) connection string; to find
 * DRIVER, DSN and its own keys, unixODBC 2.3 keeps only the low byte of
 * each unit, and it does the same for a driver without wide functions
 * (psqlODBC ANSI, SQLite) once iconv runs out of room.  So U+013B reads as
 * ';' there, U+013D as '=', U+012F as '/' and U+0100 ends the string: a
 * value holding them adds keys (a DRIVER= that loads another library) that
 * no check here saw.  Characters below U+0100 are their own low byte.  The
 * text is UTF-8, where a byte from 0xC4 up starts a character from U+0100 up.
 */
static bool
narrows_safely(const char *value)
{
	for (const unsigned char *c = (const unsigned char *) value; *c; c++)
		if (*c >= 0xC4)
			return false;
	return true;
}

/*
 * Refuse a value unixODBC would not read as it is written (see
 * narrows_safely).  what names where the value comes from (option
 * "password", connection string key "Database"); the value is never shown:
 * it may be a password.
 */
static void
check_narrows_safely(const char *value, const char *what)
{
	if (!narrows_safely(value))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("the value of %s holds a character that cannot be given to unixODBC safely", what),
				 errdetail("unixODBC reads a connection string one byte per character: a character from U+0100 up can read as ; = / or the end of the string, and add keys."),
				 errhint("Use characters below U+0100 (ASCII and Latin-1) only.")));
}

/*
 * Whether a URL (or a URL's path) carries a credential: a userinfo part
 * (user[:password]@host, which the ClickHouse driver reads from its Url)
 * or a query parameter named user or password (which ClickHouse's HTTP
 * interface reads from the query string).
 */
static bool
url_has_credentials(const char *url)
{
	const char *scheme = strstr(url, "://");
	const char *query;

	if (scheme != NULL)
	{
		const char *authority = scheme + 3;
		size_t		len = strcspn(authority, "/?#");

		if (memchr(authority, '@', len) != NULL)
			return true;
	}
	query = strchr(url, '?');
	while (query != NULL)
	{
		const char *name = query + 1;
		size_t		len = strcspn(name, "=&#");

		if ((len == 4 && pg_strncasecmp(name, "user", 4) == 0) ||
			(len == 8 && pg_strncasecmp(name, "password", 8) == 0))
			return true;
		query = strchr(name, '&');
	}
	return false;
}

/*
 * Refuse credentials in a server's connection string: server options are
 * readable by every role (pg_foreign_server.srvoptions), so they belong in
 * a user mapping.  Applies to every server, superuser-owned or not.
 */
static void
check_no_credentials(List *keys)
{
	static const char *const credentials[] = {
		"UID", "PWD", "User", "Username", "Password", NULL
	};
	ListCell   *lc;

	foreach(lc, keys)
	{
		ConnKey    *ck = lfirst(lc);
		bool		bad = key_in(ck->key, credentials);

		if (!bad && pg_strcasecmp(ck->key, "pqopt") == 0)
		{
			char	   *lower = asc_tolower(ck->value, strlen(ck->value));

			bad = strstr(lower, "password") != NULL || strstr(lower, "passfile") != NULL;
		}
		if (!bad && (pg_strcasecmp(ck->key, "Url") == 0 || pg_strcasecmp(ck->key, "Path") == 0))
			bad = url_has_credentials(ck->value);
		if (bad)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("connection string key \"%s\" is not allowed in a server's options",
							ck->key),
					 errdetail("It carries a credential, and server options are readable by every role."),
					 errhint("Put the user name and password in a user mapping: CREATE USER MAPPING ... OPTIONS (user '...', password '...').")));
	}
}

/* ------------------------------------------------------------------------
 * unixODBC's registry: drivers and data sources
 * ------------------------------------------------------------------------
 */

/*
 * The library of a driver registered under this name in odbcinst.ini, or
 * NULL if there is no such driver.
 */
static char *
registered_driver_library(const char *name)
{
	char		lib[1024];
	int			n;

	n = SQLGetPrivateProfileString(name, "Driver", "", lib, sizeof(lib), "ODBCINST.INI");
	if (n <= 0 || lib[0] == '\0')
		return NULL;
	return pstrdup(lib);
}

/*
 * Whether a data source of this name is in the list SQLDataSources walks
 * from "first" (SQL_FETCH_FIRST_SYSTEM or SQL_FETCH_FIRST_USER).  No
 * ereport while the environment handle is held, so it is always freed (and
 * no CHECK_FOR_INTERRUPTS in the loop, for the same reason: the list is
 * short).
 */
static bool
data_source_exists(const char *dsn, SQLUSMALLINT first)
{
	SQLHENV		env = SQL_NULL_HENV;
	SQLCHAR		name[SQL_MAX_DSN_LENGTH + 1];
	SQLCHAR		desc[256];
	SQLSMALLINT nlen,
				dlen;
	SQLUSMALLINT direction = first;
	bool		found = false;

	if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &env)))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OUT_OF_MEMORY),
				 errmsg("could not allocate an ODBC environment handle")));
	SQLSetEnvAttr(env, SQL_ATTR_ODBC_VERSION, (SQLPOINTER) SQL_OV_ODBC3, 0);
	while (SQL_SUCCEEDED(SQLDataSources(env, direction, name, sizeof(name), &nlen,
										desc, sizeof(desc), &dlen)))
	{
		direction = SQL_FETCH_NEXT;
		if (pg_strcasecmp((char *) name, dsn) == 0)
		{
			found = true;
			break;
		}
	}
	SQLFreeHandle(SQL_HANDLE_ENV, env);
	return found;
}

/*
 * An entry of a data source, from the system odbc.ini only or from both
 * (as the driver manager and the drivers read it: the key ignoring case),
 * or NULL if it is missing or empty.
 */
static char *
data_source_entry(const char *dsn, const char *key, bool system_only)
{
	char		value[1024];
	int			n;

	SQLSetConfigMode(system_only ? ODBC_SYSTEM_DSN : ODBC_BOTH_DSN);
	n = SQLGetPrivateProfileString(dsn, key, "", value, sizeof(value), "ODBC.INI");
	SQLSetConfigMode(ODBC_BOTH_DSN);
	if (n <= 0 || value[0] == '\0')
		return NULL;
	return pstrdup(value);
}

/*
 * The Driver entry of a data source (a registered driver's name or a
 * library path), from the system odbc.ini only or from both, or NULL.
 */
static char *
data_source_driver(const char *dsn, bool system_only)
{
	return data_source_entry(dsn, "Driver", system_only);
}

/*
 * The Driver entry of a data source a superuser's server names, wherever
 * unixODBC finds it for the database server's OS user (as isql run as
 * that user would): its system odbc.ini, then the user odbc.ini of that
 * user's environment.  An undefined name is an error here, not the
 * driver manager's "not found" (or a fallback to a default data source):
 * who defines the server and who starts its cycles are often different
 * people, and a DSN a client defined in its own shell's $ODBCINI is never
 * seen by the server.
 */
static char *
defined_data_source_driver(const char *dsn)
{
	char	   *driver = data_source_driver(dsn, false);

	if (driver == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("data source \"%s\" is not defined", dsn),
				 errdetail("Data sources are read by the database server's OS user: from the system odbc.ini (\"odbcinst -j\" shows its path), then from that user's own ($ODBCINI in the server's environment, else ~/.odbc.ini). An odbc.ini named by ODBCINI in a client's shell is never read."),
				 errhint("Define the data source, with a Driver entry, in the system odbc.ini, or give the server a connection_string instead.")));
	return driver;
}

/*
 * The SQLite database file a server's connection_string names (its
 * Database key), or NULL (none, or it comes from a DSN).  Server options
 * are readable by every role, so naming this path in an error shows
 * nothing its reader could not see already; a path from a DSN is not
 * given out.
 */
const char *
OptionSqliteFile(ForeignServer *server)
{
	const char *connstr = FdwServerStringOption(server, "connection_string");
	ConnKey    *database;

	if (connstr == NULL)
		return NULL;
	database = find_key(parse_connection_string(connstr), "Database");
	return database ? database->value : NULL;
}

static DriverFamily resolve_family(List *keys, const char *dsn);

/*
 * The TLS settings a server gives the ClickHouse driver, as one string
 * ("SSLMode=...;CALocation=...;CertificateFile=...;PrivateKeyFile=..."),
 * or NULL if the driver will speak plain HTTP.  That driver (v1.1.10,
 * SSLInit in its connection.cpp) sets up TLS once per process, with the
 * settings of its first HTTPS connection, and keeps them for every later
 * one: odbc.c compares this string across the connections of a process
 * (and worker.c hands a cycle whose string differs to a fresh worker).
 * NULL too for a server whose driver is known to be another one.
 * It reads a DSN's entries first, then the connection string's keys; the
 * scheme is Proto's, else Url's, else https when SSLMode is set or the
 * port is 443 or 8443.  Paths are not secrets: server options are
 * readable by every role.
 */
char *
OptionClickHouseTlsSettings(ForeignServer *server)
{
	static const char *const tls_keys[] = {
		"SSLMode", "CALocation", "CertificateFile", "PrivateKeyFile"
	};
	const char *connstr = FdwServerStringOption(server, "connection_string");
	const char *dsn = FdwServerStringOption(server, "dsn");
	List	   *keys = connstr ? parse_connection_string(connstr) : NIL;
	ConnKey    *dsnkey = find_key(keys, "DSN");
	StringInfoData settings;
	const char *proto;
	const char *url;
	const char *port;
	bool		https;
	DriverFamily family;

	if (dsnkey)
		dsn = dsnkey->value;

	/* another driver's TLS is set up per connection */
	family = resolve_family(keys, dsn);
	if (family != DRIVER_UNKNOWN && family != DRIVER_CLICKHOUSE)
		return NULL;

	/* a key of the connection string, else the DSN's entry, else NULL */
#define CH_SETTING(name) 	(find_key(keys, (name)) ? find_key(keys, (name))->value : 	 dsn ? data_source_entry(dsn, (name), false) : NULL)

	proto = CH_SETTING("Proto");
	url = CH_SETTING("Url");
	port = CH_SETTING("Port");
	if (proto && proto[0] != '\0')
		https = pg_strcasecmp(proto, "https") == 0;
	else if (url && strchr(url, ':') != NULL)
		https = pg_strncasecmp(url, "https:", 6) == 0;
	else
	{
		const char *sslmode = CH_SETTING("SSLMode");

		https = (sslmode && sslmode[0] != '\0') ||
			(port && (strcmp(port, "443") == 0 || strcmp(port, "8443") == 0));
	}
	if (!https)
		return NULL;

	initStringInfo(&settings);
	for (size_t i = 0; i < lengthof(tls_keys); i++)
	{
		const char *value = CH_SETTING(tls_keys[i]);

		appendStringInfo(&settings, "%s%s=%s", i > 0 ? ";" : "", tls_keys[i],
						 value ? value : "");
	}
#undef CH_SETTING
	return settings.data;
}

/*
 * The family of a driver given by name (registered in odbcinst.ini) or by
 * path: the library that will be loaded decides.
 */
static DriverFamily
family_of_driver(const char *driver)
{
	if (driver == NULL)
		return DRIVER_UNKNOWN;
	if (strchr(driver, '/') == NULL)
	{
		char	   *lib = registered_driver_library(driver);

		if (lib != NULL)
			return OptionDriverFamilyOfLibrary(lib);
	}
	return OptionDriverFamilyOfLibrary(driver);
}

/*
 * The driver family a server's options lead to, without judging them (a
 * superuser-owned server): DRIVER_UNKNOWN if it cannot be told before
 * connecting.
 */
static DriverFamily
resolve_family(List *keys, const char *dsn)
{
	ConnKey    *driver = find_key(keys, "Driver");
	ConnKey    *dsnkey = find_key(keys, "DSN");

	if (driver)
		return family_of_driver(driver->value);
	if (dsnkey)
		dsn = dsnkey->value;
	if (dsn)
		return family_of_driver(defined_data_source_driver(dsn));
	return DRIVER_UNKNOWN;
}

/* ------------------------------------------------------------------------
 * Servers owned by a role that is not a superuser
 * ------------------------------------------------------------------------
 */

/*
 * errdetail for the vetting errors: at connect, which server and owner;
 * in the validator, the server being created or changed.
 */
static int
vet_detail(ForeignServer *server)
{
	if (server == NULL)
		return errdetail("Only a server owned by a superuser may use any connection string.");
	return errdetail("Server \"%s\" is owned by role \"%s\", which is not a superuser.",
					 server->servername, GetUserNameFromId(server->owner, false));
}

/*
 * Check a data source named by a server not owned by a superuser: it must
 * be a system DSN (defined by the machine's administrator), and not shadowed
 * by a user DSN of the same name (which the driver manager would prefer).
 * Returns its driver's family.
 */
static DriverFamily
vet_dsn(const char *dsn, ForeignServer *server)
{
	if (strchr(dsn, '/') != NULL ||
		!data_source_exists(dsn, SQL_FETCH_FIRST_SYSTEM) ||
		data_source_exists(dsn, SQL_FETCH_FIRST_USER))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("data source \"%s\" is not a system DSN", dsn),
				 vet_detail(server),
				 errhint("Name a data source defined in the system odbc.ini, or have a superuser create the server.")));
	return family_of_driver(data_source_driver(dsn, true));
}

/*
 * Whether a host is one name or address the driver reaches over TCP:
 * letters, digits and . - _ : only.  This leaves out what makes a driver
 * use a Unix socket or another host than the one judged: an empty value, a
 * path, libpq's @abstract sockets, a comma-separated list of hosts (whose
 * empty entries are the default socket), spaces a driver may trim.
 */
static bool
host_is_tcp(const char *host)
{
	if (host[0] == '\0' || host[0] == '-')
		return false;
	for (const char *c = host; *c; c++)
		if (!isalnum((unsigned char) *c) && *c != '.' && *c != '-' && *c != '_' && *c != ':')
			return false;
	return true;
}

/* Whether a port is a TCP port number: 1 to 65535, digits only. */
static bool
port_is_valid(const char *port)
{
	size_t		len = strlen(port);

	if (len == 0 || len > 5 || strspn(port, "0123456789") != len)
		return false;
	return atoi(port) >= 1 && atoi(port) <= 65535;
}

/*
 * The part of a parsed connection string that sets one of a driver's
 * settings (under any of its names), or NULL.  A setting given twice is
 * refused: the driver would take the last one, and a reader of the
 * server's options the first.
 */
static ConnKey *
setting_key(List *keys, const char *const *names, const char *what,
			const KnownDriver *known, ForeignServer *server)
{
	ConnKey    *found = NULL;
	ListCell   *lc;

	foreach(lc, keys)
	{
		ConnKey    *ck = lfirst(lc);

		if (!key_in(ck->key, names))
			continue;
		if (found != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("connection string keys \"%s\" and \"%s\" both set the %s",
							found->key, ck->key, what),
					 vet_detail(server),
					 errhint("%s reads them as one setting, the last one winning: give the %s once.",
							 known->name, what)));
		found = ck;
	}
	return found;
}

/*
 * Refuse a data source's entries that take a server not owned by a
 * superuser elsewhere than its host and port: a socket, a pipe, an options
 * file (MariaDB and MySQL), libpq keywords naming a host, port or service
 * (psqlODBC's pqopt).  The administrator's DSN may be meant for local use by
 * a superuser's server; such a role's server may not borrow it.
 */
static void
vet_dsn_endpoint(const KnownDriver *known, const char *dsn, ForeignServer *server)
{
	const char *refused = NULL;

	for (const char *const *k = known->endpoint->dsn_refused; *k && !refused; k++)
		if (data_source_entry(dsn, *k, true) != NULL)
			refused = *k;

	if (!refused && (known->family == DRIVER_MARIADB || known->family == DRIVER_MYSQL))
	{
		static const char *const option_keys[] = {"OPTIONS", "OPTION", NULL};

		for (const char *const *k = option_keys; *k && !refused; k++)
		{
			char	   *bits = data_source_entry(dsn, *k, true);

			if (bits && (strtoul(bits, NULL, 10) &
						 (MYSQL_OPTION_NAMED_PIPE | MYSQL_OPTION_USE_MYCNF)) != 0)
				refused = *k;
		}
	}

	if (!refused && known->family == DRIVER_PSQLODBC)
	{
		char	   *pqopt = data_source_entry(dsn, "pqopt", true);

		if (pqopt)
		{
			char	   *lower = asc_tolower(pqopt, strlen(pqopt));

			if (strstr(lower, "host") || strstr(lower, "port") || strstr(lower, "service"))
				refused = "pqopt";
		}
	}

	if (refused)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("entry \"%s\" of data source \"%s\" is not allowed on a server owned by a role that is not a superuser",
						refused, dsn),
				 vet_detail(server),
				 errhint("With it %s can connect through a local socket or pipe, or elsewhere than the data source's host and port; name a data source that gives only a host and a port.",
						 known->name)));
}

/*
 * Refuse a data source that turns on the trace of MariaDB Connector/ODBC
 * (or of MySQL's, whose bit 4 was its debug log).  The driver (3.1, always
 * built with its trace) then writes every call, statement and the
 * connection strings it is given to maodbc.log in the home directory of the
 * database server's OS user, and only bit 4 of OPTIONS (alias OPTION) sets
 * it.  As for psqlODBC's logs, only a superuser's connection string may
 * decide it: the driver reads a connection string's OPTIONS after the data
 * source's, so a superuser's server that gives OPTIONS is left alone (a
 * server of another role cannot give it).  The driver reads the data
 * source's OPTIONS only when the connection string set no option bit of its
 * own (FORWARDONLY=1, which the worker appends, hides it; FORWARDONLY=0
 * does not), which is no defence: the entry is judged, not the accident.
 * system_only: a server not owned by a superuser may only name a system
 * DSN, which is what the driver then reads.
 */
static void
check_dsn_trace(DriverFamily family, List *keys, const char *dsn, bool system_only,
				ForeignServer *server)
{
	static const char *const option_keys[] = {"OPTIONS", "OPTION", NULL};

	if (dsn == NULL || (family != DRIVER_MARIADB && family != DRIVER_MYSQL) ||
		find_key(keys, "OPTIONS") != NULL || find_key(keys, "OPTION") != NULL)
		return;
	for (const char *const *k = option_keys; *k; k++)
	{
		char	   *bits = data_source_entry(dsn, *k, system_only);

		if (bits && (strtoul(bits, NULL, 10) & MYSQL_OPTION_TRACE) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("entry \"%s\" of data source \"%s\" turns on the trace of %s",
							*k, dsn, known_driver(family)->name),
					 server ? errdetail("The driver would write every statement and the connection string to maodbc.log in the home directory of the database server's operating-system user (server \"%s\").",
										server->servername)
					 : errdetail("The driver would write every statement and the connection string to maodbc.log in the home directory of the database server's operating-system user."),
					 errhint("Clear bit 4 of %s in the data source; a server owned by a superuser may instead give OPTIONS in its connection string, which the driver reads after the data source.",
							 *k)));
	}
}

/*
 * Judge the endpoint a server not owned by a superuser makes the driver use,
 * read the way the driver reads it: a DSN's entries first (dsn is NULL for
 * a Driver= string), then the connection string's keys, every name of a
 * setting being one key.  It must be one host reached over TCP and, if
 * given, a port number.  *host and *port (NULL if no port is given) are
 * what OptionConnectionString appends last, so that the driver uses them
 * whatever else it read.
 */
static void
vet_endpoint(const KnownDriver *known, List *keys, const char *dsn,
			 ForeignServer *server, char **host, char **port)
{
	const DriverEndpoint *ep = known->endpoint;
	ConnKey    *hostkey;
	ConnKey    *portkey;
	char	   *h = NULL;
	char	   *p = NULL;

	Assert(ep != NULL);
	hostkey = setting_key(keys, ep->host, "host", known, server);
	portkey = setting_key(keys, ep->port, "port", known, server);

	if (dsn)
	{
		vet_dsn_endpoint(known, dsn, server);
		for (const char *const *k = ep->dsn_host; *k && h == NULL; k++)
			h = data_source_entry(dsn, *k, true);
		for (const char *const *k = ep->dsn_port; *k && p == NULL; k++)
			p = data_source_entry(dsn, *k, true);
	}
	if (hostkey)
		h = hostkey->value;
	if (portkey)
		p = portkey->value;

	if (h == NULL && dsn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("connection string key \"Server\" is required on a server owned by a role that is not a superuser"),
				 vet_detail(server),
				 errhint("Name the warehouse's host: Server=host.example.com.")));
	if (h == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("data source \"%s\" names no host in its \"%s\" entry", dsn, ep->dsn_host[0]),
				 vet_detail(server),
				 errhint("Without a host the driver connects through its local Unix socket, as the database server's operating-system user: name a data source that gives a host, or add %s=host to the connection string.",
						 ep->host[0])));
	if (!host_is_tcp(h) || (ep->localhost_socket && pg_strcasecmp(h, "localhost") == 0))
	{
		const char *hint = ep->localhost_socket
			? "An empty host, a path, a name starting with @, a list of hosts or localhost makes the driver use a local socket or another host; name one host reached over TCP, such as 127.0.0.1."
			: "An empty host, a path, a name starting with @ or a list of hosts makes the driver use a local socket or another host; name one host reached over TCP.";

		if (hostkey)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("the value of connection string key \"%s\" must be a host name or an IP address",
							hostkey->key),
					 vet_detail(server),
					 errhint("%s", hint)));
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("the host entry of data source \"%s\" must be a host name or an IP address", dsn),
				 vet_detail(server),
				 errhint("%s", hint)));
	}
	if (p && !port_is_valid(p))
	{
		if (portkey)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("the value of connection string key \"%s\" must be a port number",
							portkey->key),
					 vet_detail(server),
					 errhint("Give one TCP port, from 1 to 65535.")));
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("the port entry of data source \"%s\" must be a port number", dsn),
				 vet_detail(server),
				 errhint("Give one TCP port, from 1 to 65535.")));
	}
	if (host)
		*host = pstrdup(h);
	if (port)
		*port = p ? pstrdup(p) : NULL;
}

/* Whether a key is a TLS_FILE setting of any family (tls_settings). */
static bool
is_tls_file_key(const char *key)
{
	for (size_t i = 0; i < lengthof(tls_settings); i++)
		if (tls_settings[i].kind == TLS_FILE && key_in(key, tls_settings[i].names))
			return true;
	return false;
}

/* The position of a value among a TLS_LEVEL's levels, or -1. */
static int
tls_level(const TlsSetting *setting, const char *value)
{
	for (int i = 0; setting->levels[i] != NULL; i++)
		if (pg_strcasecmp(value, setting->levels[i]) == 0)
			return i;
	return -1;
}

/*
 * The value a system DSN gives a TLS setting, under any of its names, or
 * NULL.  psqlODBC also hands a DSN's pqopt to libpq, whose sslmode there
 * counts as the DSN's too.
 */
static char *
dsn_tls_value(const TlsSetting *setting, const char *dsn)
{
	char	   *value = NULL;

	for (const char *const *k = setting->names; *k && value == NULL; k++)
		value = data_source_entry(dsn, *k, true);
	if (value == NULL && setting->family == DRIVER_PSQLODBC &&
		setting->kind == TLS_LEVEL)
	{
		char	   *pqopt = data_source_entry(dsn, "pqopt", true);
		char	   *at = pqopt ? strstr(asc_tolower(pqopt, strlen(pqopt)), "sslmode=") : NULL;

		if (at)
		{
			at += strlen("sslmode=");
			value = pnstrdup(at, strcspn(at, " \t"));
		}
	}
	return value;
}

/*
 * Judge the TLS settings of a server not owned by a superuser (dsn is the
 * system DSN it names, or NULL): each level must be one its driver knows
 * and, over a DSN, no weaker than the DSN's, and what the DSN pins stays
 * as it is.  A role that may create servers must not be able to turn off
 * the verification the administrator's DSN asks for (SSLmode=disable,
 * SSLVERIFY=0 after DSN=...): the driver would take the connection
 * string's value.  TLS_FILE keys were refused before, with the others not
 * allowed.
 */
static void
vet_tls(const KnownDriver *known, List *keys, const char *dsn, ForeignServer *server)
{
	for (size_t i = 0; i < lengthof(tls_settings); i++)
	{
		const TlsSetting *setting = &tls_settings[i];
		ConnKey    *ck;
		char	   *dsn_value;

		if (setting->family != known->family || setting->kind == TLS_FILE)
			continue;
		ck = setting_key(keys, setting->names, "TLS setting", known, server);
		if (ck == NULL)
			continue;
		if (setting->kind == TLS_LEVEL && tls_level(setting, ck->value) < 0)
		{
			StringInfoData levels;

			initStringInfo(&levels);
			for (int l = 0; setting->levels[l] != NULL; l++)
				appendStringInfo(&levels, "%s%s", l > 0 ? ", " : "", setting->levels[l]);
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("the value of connection string key \"%s\" is not one %s knows",
							ck->key, known->name),
					 vet_detail(server),
					 errhint("Use one of: %s.", levels.data)));
		}
		dsn_value = dsn ? dsn_tls_value(setting, dsn) : NULL;
		if (dsn_value == NULL)
			continue;
		if (setting->kind == TLS_LEVEL
			? tls_level(setting, ck->value) < tls_level(setting, dsn_value) ||
			tls_level(setting, dsn_value) < 0
			: pg_strcasecmp(ck->value, dsn_value) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("connection string key \"%s\" would weaken the TLS settings of data source \"%s\"",
							ck->key, dsn),
					 vet_detail(server),
					 errhint("The data source sets %s=%s; a server owned by a role that is not a superuser may keep that or ask for more verification, not less.",
							 setting->names[0], dsn_value)));
	}
}

/* The keys a family allows, for a hint. */
static char *
allowed_key_names(const KnownDriver *known)
{
	StringInfoData names;

	initStringInfo(&names);
	for (const char *const *k = known->allowed; *k; k++)
		appendStringInfo(&names, "%s%s", names.len ? ", " : "", *k);
	return names.data;
}

/*
 * Vet the connection of a server whose owner is not a superuser (server is
 * NULL in the validator) and return its driver's family.  A role that may
 * create servers of the wrapper must not be able to make the worker open
 * files, load libraries, write logs or run statements as the server's OS
 * user, nor reach a Unix socket: only registered drivers of known families,
 * system DSNs, an allow-list of keys per family and one host over TCP pass.
 * *host and *port (when not NULL) are set to the endpoint vetted.
 */
static DriverFamily
vet_connection(List *keys, const char *dsn_option, ForeignServer *server,
			   char **host, char **port)
{
	ConnKey    *driver = find_key(keys, "Driver");
	ConnKey    *dsnkey = find_key(keys, "DSN");
	DriverFamily family;
	const KnownDriver *known;
	ListCell   *lc;
	ListCell   *lc2;

	/* every part on its own: one of each key, no control characters, no path */
	foreach(lc, keys)
	{
		ConnKey    *ck = lfirst(lc);

		CHECK_FOR_INTERRUPTS();
		foreach(lc2, keys)
		{
			ConnKey    *other = lfirst(lc2);

			if (other == ck)
				break;
			if (pg_strcasecmp(other->key, ck->key) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("connection string key \"%s\" appears more than once", ck->key),
						 vet_detail(server)));
		}
		check_narrows_safely(ck->value, psprintf("connection string key \"%s\"", ck->key));
		if (is_tls_file_key(ck->key))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("connection string key \"%s\" names a TLS file, which only a server owned by a superuser may do",
							ck->key),
					 vet_detail(server),
					 errhint("A CA file, certificate or key is opened as the database server's operating-system user. Name a system DSN in which the administrator gives the CA, or rely on the driver's default CA locations (see \"TLS\" in docs/security.md).")));
		for (const char *c = ck->value; *c; c++)
			if ((unsigned char) *c < 0x20 || *c == 0x7f || *c == '/')
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("the value of connection string key \"%s\" must not contain a path or control characters",
								ck->key),
						 vet_detail(server),
						 errhint("A server owned by a role that is not a superuser cannot name files or sockets.")));
	}

	if ((driver != NULL) + (dsnkey != NULL) + (dsn_option != NULL) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("a server owned by a role that is not a superuser must name exactly one of a Driver or a DSN"),
				 vet_detail(server),
				 errhint("Use Driver={name registered with unixODBC} or the name of a system DSN.")));

	if (driver)
	{
		if (registered_driver_library(driver->value) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("driver \"%s\" is not registered with unixODBC", driver->value),
					 vet_detail(server),
					 errhint("Name a driver of odbcinst.ini (odbcinst -q -d lists them), not a library path.")));
		family = family_of_driver(driver->value);
	}
	else
		family = vet_dsn(dsnkey ? dsnkey->value : dsn_option, server);

	known = known_driver(family);
	if (known == NULL || known->allowed == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 family == DRIVER_SQLITE
				 ? errmsg("the SQLite driver may only be used by a server owned by a superuser")
				 : family == DRIVER_CLICKHOUSE
				 ? errmsg("the ClickHouse driver may only be used by a server owned by a superuser")
				 : errmsg("a driver treble_sync does not know may only be used by a server owned by a superuser"),
				 vet_detail(server),
				 errhint("Have a superuser create the server: such a driver can open files as the database server's operating-system user.")));

	foreach(lc, keys)
	{
		ConnKey    *ck = lfirst(lc);

		if (!key_in(ck->key, known->allowed))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("connection string key \"%s\" is not allowed on a server owned by a role that is not a superuser",
							ck->key),
					 vet_detail(server),
					 errhint("Keys allowed for %s: %s.", known->name,
							 allowed_key_names(known))));

		/*
		 * Drivers do not all read braces alike: MariaDB Connector/ODBC
		 * 3.1.15 honours them only for keys it knows, and for another key
		 * reads on to the next ';' inside the braces, so a braced value
		 * could smuggle in a key the allow-list refuses.  Only the driver's
		 * name (checked against unixODBC's registry above) may be braced.
		 */
		if (pg_strcasecmp(ck->key, "Driver") != 0 &&
			(ck->braced || strpbrk(ck->value, "{};") != NULL))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("the value of connection string key \"%s\" must not be braced or contain braces or semicolons",
							ck->key),
					 vet_detail(server),
					 errhint("Drivers read braces differently; a server owned by a role that is not a superuser may brace only Driver.")));
	}

	vet_tls(known, keys, driver ? NULL : (dsnkey ? dsnkey->value : dsn_option), server);
	check_dsn_trace(family, keys, driver ? NULL : (dsnkey ? dsnkey->value : dsn_option),
					true, server);
	vet_endpoint(known, keys, driver ? NULL : (dsnkey ? dsnkey->value : dsn_option),
				 server, host, port);
	return family;
}

/* ------------------------------------------------------------------------
 * User mappings
 * ------------------------------------------------------------------------
 */

/* The password of a user mapping, or NULL. */
const char *
OptionMappingPassword(UserMapping *mapping)
{
	ListCell   *lc;

	foreach(lc, mapping->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "password") == 0)
			return defGetString(def);
	}
	return NULL;
}

/*
 * A mapping of a role that is not a superuser, or a PUBLIC mapping, must
 * carry a password unless a superuser set password_required 'false' in it:
 * otherwise a connection could ride on the OS user of the database server
 * (peer, trust or ident authentication on the warehouse side), as in
 * postgres_fdw.
 */
static void
check_password_required(UserMapping *mapping)
{
	bool		is_public = true;
	bool		required = true;
	const char *password = OptionMappingPassword(mapping);
	HeapTuple	tp;
	ListCell   *lc;

	tp = SearchSysCache1(USERMAPPINGOID, ObjectIdGetDatum(mapping->umid));
	if (HeapTupleIsValid(tp))
	{
		is_public = !OidIsValid(((Form_pg_user_mapping) GETSTRUCT(tp))->umuser);
		ReleaseSysCache(tp);
	}
	if (!is_public && superuser_arg(mapping->userid))
		return;

	foreach(lc, mapping->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "password_required") == 0)
			required = defGetBoolean(def);
	}
	if (!required || (password != NULL && password[0] != '\0'))
		return;

	ereport(ERROR,
			(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
			 errmsg("password is required"),
			 errdetail("A user mapping of a role that is not a superuser, or for PUBLIC, must carry a password."),
			 errhint("Target server's authentication method must be changed or password_required=false set in the user mapping attributes.")));
}

/* ------------------------------------------------------------------------
 * Building the connection string
 * ------------------------------------------------------------------------
 */

/*
 * Append KEY=value for a driver that honours ODBC braces.  A value holding
 * ; { } = or surrounding spaces is braced, with a closing brace doubled
 * inside; plain values stay unbraced, since some drivers keep braces of
 * some keys literally.
 */
static void
append_braced(StringInfo buf, const char *key, const char *value)
{
	size_t		len = strlen(value);
	bool		needs_braces = strpbrk(value, ";{}=") != NULL ||
		(len > 0 && (value[0] == ' ' || value[len - 1] == ' '));

	if (buf->len > 0 && buf->data[buf->len - 1] != ';')
		appendStringInfoChar(buf, ';');
	appendStringInfo(buf, "%s=", key);
	if (!needs_braces)
	{
		appendStringInfoString(buf, value);
		return;
	}
	appendStringInfoChar(buf, '{');
	for (const char *p = value; *p; p++)
	{
		if (*p == '}')
			appendStringInfoChar(buf, '}');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '}');
}

/*
 * Append KEY=value from an option (a user mapping's credential, the dsn)
 * quoted for the driver family.  SQLite's driver and drivers not known here
 * do not honour braces, so a value that could end the part or start a new
 * one is refused instead: a password must not be able to add a key such
 * as LoadExt.  The error names the option, never its value.
 */
static void
append_option_value(StringInfo buf, const char *key, const char *value,
					DriverFamily family, const char *option, ForeignServer *server)
{
	const KnownDriver *known = known_driver(family);
	size_t		len = strlen(value);
	bool		unsafe;

	check_narrows_safely(value, psprintf("option \"%s\"", option));
	if (known && known->braces)
	{
		append_braced(buf, key, value);
		return;
	}
	unsafe = strpbrk(value, ";{}=") != NULL ||
		(len > 0 && (value[0] == ' ' || value[len - 1] == ' '));
	for (const char *c = value; *c && !unsafe; c++)
		if ((unsigned char) *c < 0x20 || *c == 0x7f)
			unsafe = true;
	if (unsafe)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("option \"%s\" of server \"%s\" holds characters its driver cannot be given safely",
						option, server->servername),
				 errdetail("%s does not honour ODBC braces, so ; { } =, control characters and leading or trailing spaces are refused.",
						   known ? known->name : "A driver treble_sync does not know"),
				 errhint("Change the value, or use a driver that honours braces (psqlODBC, MariaDB or MySQL Connector/ODBC).")));
	if (buf->len > 0 && buf->data[buf->len - 1] != ';')
		appendStringInfoChar(buf, ';');
	appendStringInfo(buf, "%s=%s", key, value);
}

/* Whether the user set a setting under any of its names. */
static bool
setting_chosen(const DriverSetting *setting, List *keys)
{
	char	   *names = pstrdup(setting->keys);
	char	   *save = NULL;

	for (char *key = strtok_r(names, "|", &save); key; key = strtok_r(NULL, "|", &save))
		if (find_key(keys, key) != NULL)
			return true;
	return false;
}

/* The parsed connection_string of a server; NIL if it has none. */
static List *
server_keys(ForeignServer *server)
{
	const char *connstr = FdwServerStringOption(server, "connection_string");

	return connstr ? parse_connection_string(connstr) : NIL;
}

/*
 * Whether the server's connection string lacks any of the settings the
 * driver family needs: after connecting, the driver is known for sure and
 * odbc.c reconnects if a guess missed them.
 */
bool
OptionSettingsMissing(ForeignServer *server, DriverFamily family, bool streaming)
{
	const KnownDriver *d = known_driver(family);
	List	   *keys;

	if (d == NULL)
		return false;
	keys = server_keys(server);
	for (size_t i = 0; i < lengthof(d->settings) && d->settings[i].keys; i++)
		if ((streaming || !d->settings[i].streaming) &&
			!setting_chosen(&d->settings[i], keys))
			return true;
	return false;
}

/*
 * The ODBC connection string for a server and user mapping, after every
 * check of who may use what: the server's connection_string (or DSN), the
 * mapping's credentials quoted for the driver, the driver's settings (the
 * streaming ones only for a connection that pulls rows) unless the user set
 * them, for psqlODBC CommLog=0;Debug=0 so the driver writes no log that
 * could hold the password, and for MariaDB NOLOCALINFILE=1.  family is the driver family if odbc.c already
 * knows it, DRIVER_UNKNOWN to find it from unixODBC's registry; *used is
 * set to the family the string was built for.  The caller wipes the result
 * after use: it holds the password.
 */
char *
OptionConnectionString(ForeignServer *server, UserMapping *mapping,
					   DriverFamily family, bool streaming, DriverFamily *used)
{
	StringInfoData buf;
	const char *connstr = FdwServerStringOption(server, "connection_string");
	const char *dsn = FdwServerStringOption(server, "dsn");
	const char *user = NULL;
	const char *password = OptionMappingPassword(mapping);
	int			fetch_size = FdwServerIntOption(server, "fetch_size",
												TREBLE_SYNC_DEFAULT_FETCH_SIZE);
	bool		superuser_owned = superuser_arg(server->owner);
	const KnownDriver *known;
	List	   *keys;
	DriverFamily resolved;
	char	   *vetted_host = NULL;
	char	   *vetted_port = NULL;
	ListCell   *lc;

	foreach(lc, mapping->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "user") == 0)
			user = defGetString(def);
	}

	if (connstr == NULL && dsn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("server \"%s\" has neither a connection_string nor a dsn option",
						server->servername),
				 errhint("ALTER SERVER %s OPTIONS (ADD connection_string 'Driver={...};Server=...').",
						 quote_identifier(server->servername))));

	check_password_required(mapping);
	keys = connstr ? parse_connection_string(connstr) : NIL;
	check_no_credentials(keys);
	if (superuser_owned)
	{
		ConnKey    *dsnkey = find_key(keys, "DSN");

		resolved = resolve_family(keys, dsn);
		if (find_key(keys, "Driver") == NULL)
			check_dsn_trace(resolved, keys, dsnkey ? dsnkey->value : dsn, false, server);
	}
	else
		resolved = vet_connection(keys, dsn, server, &vetted_host, &vetted_port);
	if (family == DRIVER_UNKNOWN)
		family = resolved;
	known = known_driver(family);

	initStringInfo(&buf);
	if (connstr)
		appendStringInfoString(&buf, connstr);
	else
		append_option_value(&buf, "DSN", dsn, family, "dsn", server);
	if (user)
		append_option_value(&buf, "UID", user, family, "user", server);
	if (password)
		append_option_value(&buf, "PWD", password, family, "password", server);

	for (size_t i = 0; known && i < lengthof(known->settings); i++)
	{
		const DriverSetting *setting = &known->settings[i];

		if (setting->keys == NULL || (setting->streaming && !streaming) ||
			setting_chosen(setting, keys))
			continue;
		if (buf.data[buf.len - 1] != ';')
			appendStringInfoChar(&buf, ';');
		appendStringInfo(&buf, "%.*s=", (int) strcspn(setting->keys, "|"), setting->keys);
		appendStringInfo(&buf, setting->value, fetch_size);
	}

	/* psqlODBC's logs (B3 and B2 are its short names for them) */
	if (family == DRIVER_PSQLODBC)
	{
		if (!(superuser_owned && (find_key(keys, "CommLog") || find_key(keys, "B3"))))
			appendStringInfoString(&buf, buf.data[buf.len - 1] == ';' ? "CommLog=0" : ";CommLog=0");
		if (!(superuser_owned && (find_key(keys, "Debug") || find_key(keys, "B2"))))
			appendStringInfoString(&buf, ";Debug=0");
	}

	/*
	 * MariaDB Connector/ODBC 3.1.16 and later set MYSQL_OPT_LOCAL_INFILE on
	 * unless told not to, and then a server that answers a SELECT with a
	 * LOCAL INFILE request gets any file the server's OS user can read.
	 * 3.1.15 (Debian 12) ignores the key; its client library refuses such
	 * a request for any statement that does not start with LOAD, and the
	 * cycle sends none.
	 */
	if (family == DRIVER_MARIADB &&
		!(superuser_owned && find_key(keys, "NOLOCALINFILE")))
		appendStringInfoString(&buf, buf.data[buf.len - 1] == ';' ? "NOLOCALINFILE=1" : ";NOLOCALINFILE=1");

	/*
	 * The endpoint that was vetted goes last, under the driver's own name
	 * for it: the driver takes the last value of a setting, so nothing read
	 * before (a DSN's entries, another spelling of the key, a key the driver
	 * reads differently from us) can take the connection elsewhere.  A
	 * driver of another family than the vetted one would read other keys:
	 * refused (odbc.c asks again once connected, naming the driver it found).
	 */
	if (!superuser_owned)
	{
		const DriverEndpoint *ep = known_driver(resolved)->endpoint;

		Assert(ep != NULL && vetted_host != NULL);
		if (family != resolved)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("the driver of server \"%s\" is not the one its options name", server->servername),
					 vet_detail(server),
					 errhint("Register the driver under its own library in odbcinst.ini.")));
		if (buf.data[buf.len - 1] != ';')
			appendStringInfoChar(&buf, ';');
		appendStringInfo(&buf, "%s=%s", ep->host[0], vetted_host);
		if (vetted_port)
			appendStringInfo(&buf, ";%s=%s", ep->port[0], vetted_port);
	}

	if (used)
		*used = family;
	return buf.data;
}

/*
 * The host a server not owned by a superuser was vetted for, the one
 * OptionConnectionString appends last; NULL for a superuser's server.
 * odbc.c compares it with the host the driver says it connected to.
 */
char *
OptionVettedHost(ForeignServer *server)
{
	const char *connstr = FdwServerStringOption(server, "connection_string");
	char	   *host = NULL;

	if (superuser_arg(server->owner))
		return NULL;
	vet_connection(connstr ? parse_connection_string(connstr) : NIL,
				   FdwServerStringOption(server, "dsn"), server, &host, NULL);
	Assert(host != NULL);
	return host;
}

/* ------------------------------------------------------------------------
 * Scrubbing a password out of driver messages
 * ------------------------------------------------------------------------
 */

/*
 * Replace every form of the password a driver could echo: as is, with
 * closing braces doubled, braced, and a cut prefix (of at least 4
 * characters) ending the message or a line, as when a driver truncates
 * its message; then any value after PWD= or PASSWORD= up to ; or the end,
 * whatever it is (a driver may echo a password we do not know, such as
 * one it read from a DSN).  The message is one driver diagnostic.
 */
char *
OptionScrubSecret(const char *message, const char *secret)
{
	StringInfoData buf;
	StringInfoData out;
	const char *forms[3];
	int			nforms = 0;
	const char *p;

	initStringInfo(&buf);
	if (secret != NULL && secret[0] != '\0')
	{
		StringInfoData doubled;

		initStringInfo(&doubled);
		for (const char *c = secret; *c; c++)
		{
			if (*c == '}')
				appendStringInfoChar(&doubled, '}');
			appendStringInfoChar(&doubled, *c);
		}
		/* longest first */
		forms[nforms++] = psprintf("{%s}", doubled.data);
		if (strcmp(doubled.data, secret) != 0)
			forms[nforms++] = doubled.data;
		forms[nforms++] = secret;
	}

	for (p = message; *p;)
	{
		bool		replaced = false;
		size_t		line = strcspn(p, "\n");

		for (int f = 0; f < nforms && !replaced; f++)
		{
			size_t		flen = strlen(forms[f]);

			if (strncmp(p, forms[f], flen) == 0)
			{
				appendStringInfoString(&buf, "********");
				p += flen;
				replaced = true;
			}
			else if (line >= 4 && line < flen && strncmp(p, forms[f], line) == 0)
			{
				appendStringInfoString(&buf, "********");
				p += line;
				replaced = true;
			}
		}
		if (!replaced)
			appendStringInfoChar(&buf, *p++);
	}

	/* PWD=... and PASSWORD=..., whatever follows */
	initStringInfo(&out);
	for (p = buf.data; *p;)
	{
		size_t		klen = 0;

		if (pg_strncasecmp(p, "PWD=", 4) == 0)
			klen = 4;
		else if (pg_strncasecmp(p, "PASSWORD=", 9) == 0)
			klen = 9;
		if (klen == 0)
		{
			appendStringInfoChar(&out, *p++);
			continue;
		}
		appendBinaryStringInfo(&out, p, klen);
		p += klen;
		if (*p == '{')
		{
			/* a braced value may hold ';': skip to its closing brace */
			for (p++; *p; p++)
			{
				if (*p == '}' && p[1] == '}')
					p++;
				else if (*p == '}')
				{
					p++;
					break;
				}
			}
		}
		while (*p && *p != ';')
			p++;
		appendStringInfoString(&out, "********");
	}
	return out.data;
}

/* ------------------------------------------------------------------------
 * Reading server options
 * ------------------------------------------------------------------------
 */

/*
 * The value of the option named name in a list of options (DefElems: a
 * server's, or a registration's recorded columns), or NULL if the list
 * has none of that name.
 */
const char *
OptionListString(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *opt = lfirst(lc);

		if (strcmp(opt->defname, name) == 0)
			return defGetString(opt);
	}
	return NULL;
}

/* The value of a server option, or NULL if the server does not set it. */
const char *
FdwServerStringOption(ForeignServer *server, const char *name)
{
	return OptionListString(server->options, name);
}

/*
 * The value of an integer server option, or def if the server does not
 * set it (the validator made sure it is an integer).
 */
int
FdwServerIntOption(ForeignServer *server, const char *name, int def)
{
	const char *value = FdwServerStringOption(server, name);

	return value ? atoi(value) : def;
}

/* ------------------------------------------------------------------------
 * The validator
 * ------------------------------------------------------------------------
 */

/* The option names valid in a catalog, for an error hint. */
static char *
valid_option_names(Oid context)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (const ValidOption *opt = valid_options; opt->name; opt++)
	{
		if (opt->context != context)
			continue;
		if (buf.len > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, opt->name);
	}
	return buf.data;
}

/* An integer option must be an integer within [min, max]. */
static void
check_integer_option(const char *name, const char *value, long min, long max)
{
	char	   *end;
	long		n = strtol(value, &end, 10);

	if (*end != '\0' || end == value || n < min || n > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
				 errhint("Use an integer between %ld and %ld.", min, max)));
}

/*
 * Check one option's value, beyond its name, so that a mistake fails at
 * CREATE SERVER or CREATE USER MAPPING rather than at the first cycle.
 */
static void
validate_option_value(DefElem *def)
{
	const char *value = defGetString(def);

	if (strcmp(def->defname, "connection_string") == 0)
		check_no_credentials(parse_connection_string(value));
	else if (strcmp(def->defname, "timezone") == 0)
	{
		if (pg_tzset(value) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for option \"timezone\": \"%s\"", value),
					 errhint("Use a time zone name known to PostgreSQL, such as UTC or Europe/Madrid.")));
	}
	else if (strcmp(def->defname, "user") == 0 ||
			 strcmp(def->defname, "password") == 0 ||
			 strcmp(def->defname, "dsn") == 0)
		check_narrows_safely(value, psprintf("option \"%s\"", def->defname));
	else if (strcmp(def->defname, "fetch_size") == 0)
		check_integer_option(def->defname, value, 1, 1000000);
	else if (strcmp(def->defname, "slice_rows") == 0)
		check_integer_option(def->defname, value, 0, 1000000000);
	else if (strcmp(def->defname, "login_timeout") == 0 ||
			 strcmp(def->defname, "query_timeout") == 0)
		check_integer_option(def->defname, value, 0, 86400);
	else if (strcmp(def->defname, "max_retries") == 0)
		check_integer_option(def->defname, value, 0, 10);
	else if (strcmp(def->defname, "password_required") == 0)
	{
		/* like postgres_fdw: only a superuser may waive the password */
		if (!defGetBoolean(def) && !superuser())
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("password_required=false is superuser-only"),
					 errhint("User mappings with the password_required option set to false may only be created or modified by the superuser.")));
	}
}

/*
 * Validate the options of a server or user mapping of the wrapper (the
 * wrapper itself takes none).  A server created or changed by a role that
 * is not a superuser is vetted here as well as at every connect.
 *
 * Any role may call it directly, with any input: an element without "=",
 * an empty name or a context that is no catalog's (0 included) is an
 * unknown option, a NULL element is refused by untransformRelOptions(), an
 * option with no value by defGetString().  It only checks: it connects to
 * nothing and changes nothing.  It reads none of the extension's tables,
 * so it does not check that the catalog is this library's release
 * (version.c): a restore by pg_upgrade creates the servers while the
 * extension still has the old cluster's version.
 */
PG_FUNCTION_INFO_V1(treble_sync_fdw_validator);

Datum
treble_sync_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options;
	Oid			context;
	ListCell   *lc;
	const char *connstr = NULL;
	const char *dsn = NULL;

	Assert(!PG_ARGISNULL(0) && !PG_ARGISNULL(1));	/* STRICT */
	options = untransformRelOptions(PG_GETARG_DATUM(0));
	context = PG_GETARG_OID(1);
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);
		bool		known = false;

		for (const ValidOption *opt = valid_options; opt->name; opt++)
		{
			if (opt->context == context && strcmp(opt->name, def->defname) == 0)
				known = true;
		}
		if (!known)
		{
			char	   *names = valid_option_names(context);

			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\"", def->defname),
					 names[0] != '\0'
					 ? errhint("Valid options in this context are: %s.", names)
					 : errhint("There are no valid options in this context.")));
		}
		validate_option_value(def);
		if (strcmp(def->defname, "connection_string") == 0)
			connstr = defGetString(def);
		else if (strcmp(def->defname, "dsn") == 0)
			dsn = defGetString(def);
	}

	if (connstr && dsn)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("options \"connection_string\" and \"dsn\" cannot be used together"),
				 errhint("Name the data source inside the connection string with DSN=... instead.")));

	if (context == ForeignServerRelationId && !superuser() && (connstr || dsn))
		vet_connection(connstr ? parse_connection_string(connstr) : NIL, dsn, NULL, NULL, NULL);

	PG_RETURN_VOID();
}
