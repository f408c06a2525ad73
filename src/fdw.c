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
	{
		char	   *end;
		long		n = strtol(value, &end, 10);

		if (*end != '\0' || end == value || n < 1 || n > 1000000)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for option \"fetch_size\": \"%s\"", value),
					 errhint("Use an integer between 1 and 1000000.")));
	}
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
