/*-------------------------------------------------------------------------
 *
 * fdw.c
 *	  The treble_sync foreign-data wrapper's option validator.
 *
 * A warehouse is a foreign server of this wrapper; nothing is scanned
 * through it.  The server carries how to reach the warehouse, the user
 * mapping carries the credentials, and nothing else is accepted, so a typo
 * in an option name fails at CREATE SERVER rather than at the first cycle.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "pgtime.h"
#include "utils/builtins.h"

#include "treble_sync.h"

typedef struct ValidOption
{
	const char *name;
	Oid			context;		/* catalog the option may appear in */
	const char *describes;		/* for the hint */
} ValidOption;

static const ValidOption valid_options[] = {
	{"connection_string", ForeignServerRelationId, "ODBC connection string without credentials"},
	{"dsn", ForeignServerRelationId, "ODBC data source name"},
	{"timezone", ForeignServerRelationId, "time zone of the warehouse's zone-less timestamps"},
	{"fetch_size", ForeignServerRelationId, "rows per round trip for drivers that need it"},
	{"slice_rows", ForeignServerRelationId, "most rows per query through a driver that cannot stream"},
	{"login_timeout", ForeignServerRelationId, "seconds to wait for a connection"},
	{"query_timeout", ForeignServerRelationId, "seconds to wait for a remote query"},
	{"max_retries", ForeignServerRelationId, "retries of a cycle after a transient error"},
	{"user", UserMappingRelationId, "warehouse user name"},
	{"password", UserMappingRelationId, "warehouse password"},
	{NULL, InvalidOid, NULL}
};

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

/* Check one option's value, beyond its name. */
static void
validate_option_value(DefElem *def)
{
	const char *value = defGetString(def);

	if (strcmp(def->defname, "connection_string") == 0)
	{
		if (OdbcConnectionStringHasKey(value, "PWD") ||
			OdbcConnectionStringHasKey(value, "Password") ||
			OdbcConnectionStringHasKey(value, "UID") ||
			OdbcConnectionStringHasKey(value, "User"))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("connection_string must not contain credentials"),
					 errhint("Put the user name and password in a user mapping: CREATE USER MAPPING ... OPTIONS (user '...', password '...').")));
	}
	else if (strcmp(def->defname, "timezone") == 0)
	{
		if (pg_tzset(value) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for option \"timezone\": \"%s\"", value),
					 errhint("Use a time zone name known to PostgreSQL, such as UTC or Europe/Madrid.")));
	}
	else if (strcmp(def->defname, "fetch_size") == 0)
		check_integer_option(def->defname, value, 1, 1000000);
	else if (strcmp(def->defname, "slice_rows") == 0)
		check_integer_option(def->defname, value, 0, 1000000000);
	else if (strcmp(def->defname, "login_timeout") == 0 ||
			 strcmp(def->defname, "query_timeout") == 0)
		check_integer_option(def->defname, value, 0, 86400);
	else if (strcmp(def->defname, "max_retries") == 0)
		check_integer_option(def->defname, value, 0, 10);
}

/* The value of a server option, or NULL if the server does not set it. */
const char *
FdwServerStringOption(ForeignServer *server, const char *name)
{
	ListCell   *lc;

	foreach(lc, server->options)
	{
		DefElem    *opt = lfirst(lc);

		if (strcmp(opt->defname, name) == 0)
			return defGetString(opt);
	}
	return NULL;
}

/*
 * The value of an integer server option, or def if the server does not
 * set it.
 */
int
FdwServerIntOption(ForeignServer *server, const char *name, int def)
{
	const char *value = FdwServerStringOption(server, name);

	return value ? atoi(value) : def;
}

/*
 * Validate the options of a server or user mapping of the wrapper.  The
 * wrapper itself takes none.
 */
PG_FUNCTION_INFO_V1(treble_sync_fdw_validator);

Datum
treble_sync_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			context = PG_GETARG_OID(1);
	ListCell   *lc;
	bool		has_connstr = false;
	bool		has_dsn = false;

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
			has_connstr = true;
		else if (strcmp(def->defname, "dsn") == 0)
			has_dsn = true;
	}

	if (has_connstr && has_dsn)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("options \"connection_string\" and \"dsn\" cannot be used together"),
				 errhint("Name the data source inside the connection string with DSN=... instead.")));

	PG_RETURN_VOID();
}
