/*-------------------------------------------------------------------------
 *
 * regoption.c
 *	  The options of a registration as data: one descriptor per argument
 *	  of add_table() and alter_table().
 *
 * This file owns:
 *	- reg_options[], the descriptors: each option's name (and its name in
 *	  alter_table(), where that differs), type, SQL type and add_table()'s
 *	  default, its column of treble_sync.tables and field of TableConfig,
 *	  its bounds or choices, whether alter_table() may change it, whether a
 *	  change drops the watermark or needs the table's cycle lock, and the
 *	  check it needs with other options;
 *	- reading a call's arguments by the names of the function's arguments
 *	  (not by position), so that add_table() and alter_table() read the
 *	  same option alike wherever it sits in their signatures;
 *	- the checks of the values that need no warehouse, written once for
 *	  both functions; interval options written with their unit;
 *	- the names of the values of the options that take one of a few.
 *
 * register.c reads the arguments through it and adds what needs the
 * warehouse or the local table; catalog.c builds the registration's
 * INSERT, UPDATE and SELECT from the descriptors; .ci/regoptions checks the
 * descriptors against the SQL signatures, the catalog's columns and
 * docs/functions.md.  A new option is one more descriptor here, its field
 * in TableConfig, its argument in the SQL signatures, its column and its
 * rows in docs/functions.md (CONTRIBUTING.md, "A new registration
 * option"); register.c and catalog.c need no change.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "regoption.h"

StaticAssertDecl(sizeof(SyncMode) == sizeof(int), "a choice is kept in an int-sized enum");
StaticAssertDecl(sizeof(DriftPolicy) == sizeof(int), "a choice is kept in an int-sized enum");
StaticAssertDecl(sizeof(BadRowPolicy) == sizeof(int), "a choice is kept in an int-sized enum");
StaticAssertDecl(sizeof(WindowCheck) == sizeof(int), "a choice is kept in an int-sized enum");

/* The catalog's names of the choices, in the order of their enums. */
static const char *const mode_names[] = {"upsert", "append", "snapshot", NULL};
static const char *const drift_names[] = {"halt", "auto_accept", "ignore", NULL};
static const char *const bad_row_names[] = {"fail", "quarantine", "skip", NULL};
static const char *const window_check_names[] = {"keys", "rows", NULL};

static void check_cursor_column(const TableConfig *cfg);
static void check_initial_chunk(const TableConfig *cfg);
static void check_parallel(const TableConfig *cfg);
static void check_cursor_overlap(const TableConfig *cfg);

#define FIELD(f) offsetof(TableConfig, f)
#define SERVER_HINT "NULL (or -1 in alter_table) uses the server's option."

/*
 * The options, in add_table()'s order of arguments; enabled, which only
 * alter_table() takes, last.  Their checks run in this order.
 */
static const RegOption reg_options[] = {
	{.name = "remote_table", .type = REGOPT_OTHER, .argtype = TEXTOID,
	.flags = REGOPT_ADD | REGOPT_OWN_READ, .field = -1},
	{.name = "server", .type = REGOPT_OTHER, .argtype = NAMEOID,
	.flags = REGOPT_ADD | REGOPT_OWN_READ, .field = -1},
	{.name = "key_columns", .type = REGOPT_NAMES, .argtype = TEXTARRAYOID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_OWN_READ | REGOPT_CYCLE_LOCK,
	.column = "key_columns", .field = FIELD(key_columns)},
	{.name = "event_column", .type = REGOPT_TEXT, .argtype = TEXTOID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_NULLABLE | REGOPT_CYCLE_LOCK,
	.column = "event_column", .field = FIELD(event_column)},
	{.name = "cursor_column", .type = REGOPT_TEXT, .argtype = TEXTOID, .default_value = "'synced_at'",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_NULLABLE | REGOPT_RESETS | REGOPT_CYCLE_LOCK,
	.column = "cursor_column", .field = FIELD(cursor_column), .check = check_cursor_column},
	{.name = "hot_window", .type = REGOPT_INTERVAL, .argtype = TEXTOID, .default_value = "'3 days'",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_REQUIRED | REGOPT_CYCLE_LOCK,
		.column = "hot_window", .field = FIELD(hot_window), .min = 1,
	.hint = "Use '0 days' for no hot window."},
	{.name = "local_table", .type = REGOPT_OTHER, .argtype = TEXTOID, .default_value = "NULL",
	.flags = REGOPT_ADD | REGOPT_OWN_READ, .field = -1},
	{.name = "name", .alter_name = "new_name", .type = REGOPT_TEXT, .argtype = TEXTOID,
		.default_value = "NULL", .flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_OWN_READ | REGOPT_CYCLE_LOCK,
	.column = "name", .field = FIELD(name)},
	{.name = "initial_chunk", .type = REGOPT_INTERVAL, .argtype = TEXTOID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_NULLABLE | REGOPT_CYCLE_LOCK,
		.column = "initial_chunk", .field = FIELD(initial_chunk), .min = 1,
	.check = check_initial_chunk},
	{.name = "parallel", .type = REGOPT_INT, .argtype = INT4OID, .default_value = "1",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_CYCLE_LOCK,
		.column = "parallel", .field = FIELD(parallel), .min = 1, .max = 16,
	.check = check_parallel},
	{.name = "mode", .type = REGOPT_CHOICE, .argtype = TEXTOID, .default_value = "'upsert'",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_RESETS | REGOPT_CYCLE_LOCK,
	.column = "mode", .field = FIELD(mode), .choices = mode_names},
	{.name = "cursor_overlap", .type = REGOPT_TEXT, .argtype = TEXTOID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_NULLABLE | REGOPT_CYCLE_LOCK,
	.column = "cursor_overlap", .field = FIELD(cursor_overlap), .check = check_cursor_overlap},
	{.name = "login_timeout", .type = REGOPT_SERVER_INT, .argtype = INT4OID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_NULLABLE | REGOPT_CYCLE_LOCK,
		.column = "login_timeout", .field = FIELD(login_timeout), .min = 0, .max = 86400,
	.unit = " seconds", .hint = SERVER_HINT},
	{.name = "query_timeout", .type = REGOPT_SERVER_INT, .argtype = INT4OID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_NULLABLE | REGOPT_CYCLE_LOCK,
		.column = "query_timeout", .field = FIELD(query_timeout), .min = 0, .max = 86400,
	.unit = " seconds", .hint = SERVER_HINT},
	{.name = "max_retries", .type = REGOPT_SERVER_INT, .argtype = INT4OID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_NULLABLE | REGOPT_CYCLE_LOCK,
	.column = "max_retries", .field = FIELD(max_retries), .min = 0, .max = 10},
	{.name = "max_delete_ratio", .type = REGOPT_REAL, .argtype = FLOAT4OID, .default_value = "0.5",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_CYCLE_LOCK,
		.column = "max_delete_ratio", .field = FIELD(max_delete_ratio), .min = 0, .max = 1,
	.hint = "1 lets a cycle delete every row the warehouse no longer returns."},
	{.name = "columns", .type = REGOPT_NAMES, .argtype = TEXTARRAYOID, .default_value = "NULL",
	.flags = REGOPT_ADD | REGOPT_OWN_READ, .column = "columns", .field = FIELD(columns)},
	{.name = "column_types", .type = REGOPT_OTHER, .argtype = JSONBOID, .default_value = "NULL",
	.flags = REGOPT_ADD | REGOPT_OWN_READ, .field = -1},
	{.name = "mask", .type = REGOPT_MASK, .argtype = JSONBOID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_OWN_READ | REGOPT_RESETS | REGOPT_CYCLE_LOCK,
	.column = "mask", .field = FIELD(masked_columns)},
	{.name = "schema_drift", .type = REGOPT_CHOICE, .argtype = TEXTOID, .default_value = "'halt'",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_CYCLE_LOCK,
	.column = "schema_drift", .field = FIELD(schema_drift), .choices = drift_names},
	{.name = "on_bad_row", .type = REGOPT_CHOICE, .argtype = TEXTOID, .default_value = "'fail'",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_CYCLE_LOCK,
	.column = "on_bad_row", .field = FIELD(on_bad_row), .choices = bad_row_names},
	{.name = "max_bad_row_ratio", .type = REGOPT_REAL, .argtype = FLOAT4OID, .default_value = "0.02",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_CYCLE_LOCK,
	.column = "max_bad_row_ratio", .field = FIELD(max_bad_row_ratio), .min = 0, .max = 1},
	{.name = "hot_window_check", .type = REGOPT_CHOICE, .argtype = TEXTOID, .default_value = "'keys'",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_CYCLE_LOCK,
		.column = "hot_window_check", .field = FIELD(window_check), .choices = window_check_names,
	.hint = "'keys' compares the window's keys and cursors and re-pulls the rows that differ; 'rows' pulls every row of the window."},
	{.name = "keep_history", .type = REGOPT_INTERVAL, .argtype = TEXTOID, .default_value = "NULL",
		.flags = REGOPT_ADD | REGOPT_ALTER | REGOPT_NULLABLE | REGOPT_OWN_READ | REGOPT_OWN_WRITE |
		REGOPT_CYCLE_LOCK,
	.column = "keep_history", .field = FIELD(keep_history)},
	{.name = "enabled", .type = REGOPT_BOOL, .argtype = BOOLOID, .default_value = "true",
		.flags = REGOPT_ALTER | REGOPT_CYCLE_LOCK,
	.column = "enabled", .field = FIELD(enabled)},
};

#define NUM_REG_OPTIONS ((int) lengthof(reg_options))

/* How many options there are: RegOptionAt() takes 0 to this, less one. */
int
RegOptionCount(void)
{
	return NUM_REG_OPTIONS;
}

/* The i-th option, for the catalog's statements. */
const RegOption *
RegOptionAt(int i)
{
	Assert(i >= 0 && i < NUM_REG_OPTIONS);
	return &reg_options[i];
}

/* The index of the option of this name (add_table()'s), or -1. */
static int
option_index(const char *name)
{
	for (int i = 0; i < NUM_REG_OPTIONS; i++)
		if (strcmp(reg_options[i].name, name) == 0)
			return i;
	return -1;
}

/* The index of the option of this name (add_table()'s); an unknown name is a bug. */
static int
known_index(const char *name)
{
	int			i = option_index(name);

	if (i < 0)
		elog(ERROR, "treble_sync has no registration option \"%s\"", name);
	return i;
}

/* The option of this name (add_table()'s). */
const RegOption *
RegOptionByName(const char *name)
{
	return &reg_options[known_index(name)];
}

/* An option's argument name in add_table() or alter_table(). */
static const char *
arg_name(const RegOption *opt, bool altering)
{
	return altering && opt->alter_name ? opt->alter_name : opt->name;
}

/*
 * For each option, the number of its argument in the function being
 * called, or -1: found by the names of the function's arguments in
 * pg_proc, once per call site (kept in fn_extra).  An argument that is no
 * option (but alter_table()'s first, the registration's name), an option
 * the function should take and does not, or an argument of another type
 * than its option's is a bug: the SQL signature and reg_options[] must
 * say the same.
 */
static const int16 *
argument_numbers(FunctionCallInfo fcinfo, bool altering)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	HeapTuple	tup;
	Oid		   *types;
	char	  **names;
	char	   *modes;
	int			nargs;
	int16	   *argno;
	bool	   *used;

	Assert(flinfo != NULL);
	if (flinfo->fn_extra != NULL)
		return flinfo->fn_extra;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(flinfo->fn_oid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", flinfo->fn_oid);
	nargs = get_func_arg_info(tup, &types, &names, &modes);
	ReleaseSysCache(tup);
	if (names == NULL)
		elog(ERROR, "function %u has no argument names", flinfo->fn_oid);

	argno = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(int16) * NUM_REG_OPTIONS);
	used = palloc0(sizeof(bool) * nargs);
	if (altering)
		used[0] = true;			/* the registration's name */
	for (int i = 0; i < NUM_REG_OPTIONS; i++)
	{
		const RegOption *opt = &reg_options[i];

		argno[i] = -1;
		if (!(opt->flags & (altering ? REGOPT_ALTER : REGOPT_ADD)))
			continue;
		for (int j = altering ? 1 : 0; j < nargs; j++)
			if (names[j] && strcmp(names[j], arg_name(opt, altering)) == 0)
				argno[i] = j;
		if (argno[i] < 0)
			elog(ERROR, "function %u has no argument \"%s\"", flinfo->fn_oid,
				 arg_name(opt, altering));
		if (types[argno[i]] != opt->argtype)
			elog(ERROR, "argument \"%s\" of function %u has type %u, not %u",
				 arg_name(opt, altering), flinfo->fn_oid, types[argno[i]], opt->argtype);
		used[argno[i]] = true;
	}
	for (int j = 0; j < nargs; j++)
		if (!used[j])
			elog(ERROR, "argument \"%s\" of function %u is no registration option",
				 names[j] ? names[j] : "", flinfo->fn_oid);
	flinfo->fn_extra = argno;
	return argno;
}

/*
 * Start reading the options of a call of add_table() (altering false) or
 * alter_table() (altering true).
 */
void
RegArgsInit(RegArgs *args, FunctionCallInfo fcinfo, bool altering)
{
	args->fcinfo = fcinfo;
	args->altering = altering;
	args->argno = argument_numbers(fcinfo, altering);
}

/* The argument number of an option in this call, or -1. */
static int
argno_of(const RegArgs *args, int option)
{
	Assert(option >= 0 && option < NUM_REG_OPTIONS);
	return args->argno[option];
}

/* Did the call give this option a value (not NULL)? */
static bool
given(const RegArgs *args, int option)
{
	int			argno = argno_of(args, option);

	return argno >= 0 && !args->fcinfo->args[argno].isnull;
}

/* Did the call give the option of this name a value (not NULL)? */
bool
RegArgGiven(const RegArgs *args, const char *name)
{
	return given(args, known_index(name));
}

/* The value the call gave an option; RegArgGiven() must be true. */
Datum
RegArgDatum(const RegArgs *args, const char *name)
{
	int			option = known_index(name);

	Assert(given(args, option));
	return args->fcinfo->args[argno_of(args, option)].value;
}

/* The value the call gave a text option, as a C string. */
char *
RegArgText(const RegArgs *args, const char *name)
{
	return TextDatumGetCString(RegArgDatum(args, name));
}

/*
 * Did the call give a value to any option whose flags include all of
 * these (0: to any option)?
 */
bool
RegArgsAnyGiven(const RegArgs *args, int flags)
{
	for (int i = 0; i < NUM_REG_OPTIONS; i++)
		if ((reg_options[i].flags & flags) == flags && given(args, i))
			return true;
	return false;
}

/* "'a', 'b' or 'c'": the choices of an option, for its message. */
static char *
choice_list(const char *const *choices)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; choices[i]; i++)
		appendStringInfo(&buf, "%s'%s'",
						 i == 0 ? "" : choices[i + 1] ? ", " : " or ", choices[i]);
	return buf.data;
}

/* The catalog's name of a choice option's value. */
const char *
RegOptionChoiceName(const char *option, int value)
{
	const RegOption *opt = RegOptionByName(option);
	int			n = 0;

	Assert(opt->type == REGOPT_CHOICE);
	while (opt->choices[n])
		n++;
	return value >= 0 && value < n ? opt->choices[value] : opt->choices[0];
}

/*
 * A choice option's value from its catalog name (NULL: the first, its
 * default), or an error naming the choices.
 */
int
RegOptionParseChoice(const char *option, const char *name)
{
	const RegOption *opt = RegOptionByName(option);

	Assert(opt->type == REGOPT_CHOICE);
	if (name == NULL)
		return 0;
	for (int i = 0; opt->choices[i]; i++)
		if (strcmp(name, opt->choices[i]) == 0)
			return i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s must be %s, not \"%s\"", option, choice_list(opt->choices), name),
			 opt->hint ? errhint("%s", opt->hint) : 0));
	return 0;					/* keep the compiler quiet */
}

/*
 * An interval option, given as text: a bare number ('3', '-1.5') is
 * refused, since interval input would read it as seconds, where days were
 * surely meant.  Zero needs no unit.  Anything else goes to interval input.
 */
Interval *
RegOptionInterval(const char *text, const char *name)
{
	bool		digits = false;
	bool		nonzero = false;
	bool		bare = true;
	bool		negative_part = false;
	bool		positive_part = false;
	char		prev = ' ';		/* the last character that is not a space */
	bool		minus = false;	/* prev is a '-' that is a sign */

	/*
	 * Mixed signs ('1 hour -5 minutes') are seen in the text: interval input
	 * folds hours and minutes into one field.  A '-' is a sign unless it
	 * follows a digit (as in an ISO 8601 date).
	 */
	for (const char *p = text; *p; p++)
	{
		if (*p >= '0' && *p <= '9' && !(prev >= '0' && prev <= '9') && prev != '.' && prev != ':')
		{
			if (minus)
				negative_part = true;
			else if (prev != '-')
				positive_part = true;
		}
		if (*p != ' ' && *p != '\t')
		{
			minus = *p == '-' && !(prev >= '0' && prev <= '9');
			prev = *p;
		}
	}
	if (negative_part && positive_part)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not mix positive and negative parts: \"%s\"", name, text),
				 errhint("Write it as one positive interval, such as '22 hours'.")));

	for (const char *p = text; *p; p++)
	{
		if (*p >= '0' && *p <= '9')
		{
			digits = true;
			nonzero |= *p != '0';
		}
		else if (!(*p == ' ' || *p == '\t' || *p == '+' || *p == '-' || *p == '.' || *p == '@'))
		{
			bare = false;
			break;
		}
	}
	if (bare && digits && nonzero)
	{
		char	   *number = pstrdup(text);
		char	   *start = number;

		while (*start == ' ' || *start == '\t' || *start == '@')
			start++;
		for (char *end = start + strlen(start); end > start && (end[-1] == ' ' || end[-1] == '\t');)
			*--end = '\0';
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"%s\" has no unit", name, text),
				 errdetail("A number without a unit would be read as seconds."),
				 errhint("Write the unit, for example '%s days'.", start)));
	}
	return DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(text),
												 ObjectIdGetDatum(InvalidOid),
												 Int32GetDatum(-1)));
}

/* An interval as interval output writes it, for messages. */
static char *
interval_text(Interval *value)
{
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(value)));
}

/* An interval constant, such as "1 second". */
static Datum
interval_const(const char *text)
{
	return DirectFunctionCall3(interval_in, CStringGetDatum(text),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/*
 * Error unless an interval option is sane: not mixing signs ('1 day -2
 * hours'), not negative, at most 100 years, and, unless zero, at least one
 * second (with min_second).  Zero itself is left to the caller.
 */
void
RegOptionCheckInterval(Interval *value, const char *name, bool min_second)
{
	bool		any_negative = value->month < 0 || value->day < 0 || value->time < 0;
	bool		any_positive = value->month > 0 || value->day > 0 || value->time > 0;

	if (any_negative && any_positive)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not mix positive and negative parts: \"%s\"",
						name, interval_text(value)),
				 errhint("Write it as one positive interval, such as '22 hours'.")));
	if (any_negative)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", name)));
	if (DatumGetBool(DirectFunctionCall2(interval_gt, IntervalPGetDatum(value),
										 interval_const("100 years"))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at most 100 years, not \"%s\"", name, interval_text(value))));
	if (min_second && any_positive &&
		DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(value),
										 interval_const("1 second"))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at least 1 second, not \"%s\"", name, interval_text(value)),
				 errhint("Write the unit, for example '3 days'.")));
}

/* Is this interval below zero (or, with or_zero, not above it)? */
bool
RegIntervalNotPositive(Interval *value, bool or_zero)
{
	return DatumGetBool(DirectFunctionCall2(or_zero ? interval_le : interval_lt,
											IntervalPGetDatum(value), interval_const("0")));
}

/* An option's value for "none": NULL, or -1 for the server's. */
static void
set_none(const RegOption *opt, TableConfig *cfg)
{
	switch (opt->type)
	{
		case REGOPT_SERVER_INT:
			RegOptionField(cfg, opt, int) = -1;
			break;
		case REGOPT_TEXT:
			RegOptionField(cfg, opt, char *) = NULL;
			break;
		case REGOPT_INTERVAL:
			RegOptionField(cfg, opt, Interval *) = NULL;
			break;
		default:
			elog(ERROR, "registration option \"%s\" has no value for none", opt->name);
	}
}

/* A SQL literal of default_value without its quotes. */
static char *
unquoted(const char *literal)
{
	size_t		len = strlen(literal);

	if (len >= 2 && literal[0] == '\'' && literal[len - 1] == '\'')
		return pnstrdup(literal + 1, len - 2);
	return pstrdup(literal);
}

/*
 * An option's default (default_value, a SQL literal), as the value of its
 * argument would be.
 */
static Datum
default_datum(const RegOption *opt)
{
	char	   *value = unquoted(opt->default_value);

	switch (opt->type)
	{
		case REGOPT_BOOL:
			return BoolGetDatum(strcmp(value, "true") == 0);
		case REGOPT_INT:
		case REGOPT_SERVER_INT:
			return Int32GetDatum(pg_strtoint32(value));
		case REGOPT_REAL:
			return Float4GetDatum((float4) strtod(value, NULL));
		case REGOPT_TEXT:
		case REGOPT_INTERVAL:
		case REGOPT_CHOICE:
			return CStringGetTextDatum(value);
		default:
			elog(ERROR, "registration option \"%s\" has no default of its own", opt->name);
	}
	return (Datum) 0;			/* keep the compiler quiet */
}

/* Set an option from the value of its argument. */
static void
set_from_argument(const RegOption *opt, TableConfig *cfg, Datum value, bool altering)
{
	switch (opt->type)
	{
		case REGOPT_BOOL:
			RegOptionField(cfg, opt, bool) = DatumGetBool(value);
			break;
		case REGOPT_INT:
			RegOptionField(cfg, opt, int) = DatumGetInt32(value);
			break;
		case REGOPT_SERVER_INT:
			if (altering)		/* -1: back to the server's option */
				RegOptionField(cfg, opt, int) = Max(DatumGetInt32(value), -1);
			else if (DatumGetInt32(value) < 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s must not be negative", opt->name),
						 errhint("NULL uses the server's option.")));
			else
				RegOptionField(cfg, opt, int) = DatumGetInt32(value);
			break;
		case REGOPT_REAL:
			RegOptionField(cfg, opt, double) = DatumGetFloat4(value);
			break;
		case REGOPT_TEXT:
			{
				char	   *str = TextDatumGetCString(value);

				/* in alter_table, '' clears a text option */
				RegOptionField(cfg, opt, char *) = altering && str[0] == '\0' ? NULL : str;
				break;
			}
		case REGOPT_INTERVAL:
			{
				Interval   *interval = RegOptionInterval(TextDatumGetCString(value), opt->name);

				/* in alter_table, '0' clears an interval that may be none */
				if (altering && (opt->flags & REGOPT_NULLABLE) &&
					RegIntervalNotPositive(interval, true) &&
					!RegIntervalNotPositive(interval, false))
					interval = NULL;
				RegOptionField(cfg, opt, Interval *) = interval;
				break;
			}
		case REGOPT_CHOICE:
			RegOptionField(cfg, opt, int) =
				RegOptionParseChoice(opt->name, TextDatumGetCString(value));
			break;
		default:
			elog(ERROR, "registration option \"%s\" is read by its caller", opt->name);
	}
}

/*
 * Read the options the call gave into cfg, every one but those register.c
 * reads itself.  In add_table(), a NULL is an option's default, or none
 * where NULL is a value (a NULL cursor_column: no cursor), or an error
 * where the option is required; an option the function does not take
 * gets its default.  In alter_table(), a NULL leaves the option as it is.
 */
void
RegOptionsRead(const RegArgs *args, TableConfig *cfg)
{
	for (int i = 0; i < NUM_REG_OPTIONS; i++)
	{
		const RegOption *opt = &reg_options[i];
		int			argno = argno_of(args, i);

		if (opt->flags & REGOPT_OWN_READ)
			continue;
		Assert(opt->default_value != NULL);
		if (given(args, i))
			set_from_argument(opt, cfg, args->fcinfo->args[argno].value, args->altering);
		else if (args->altering)
			continue;
		else if (argno >= 0 && (opt->flags & REGOPT_REQUIRED))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not be NULL", opt->name),
					 opt->hint ? errhint("%s", opt->hint) : 0));
		else if ((argno >= 0 && (opt->flags & REGOPT_NULLABLE)) ||
				 strcmp(opt->default_value, "NULL") == 0)
			set_none(opt, cfg);
		else
			set_from_argument(opt, cfg, default_datum(opt), false);
	}
}

/* Error unless a number option lies within its bounds. */
static void
check_bounds(const RegOption *opt, const TableConfig *cfg)
{
	double		value;

	if (opt->type == REGOPT_REAL)
		value = RegOptionField(cfg, opt, double);
	else
	{
		value = RegOptionField(cfg, opt, int);
		if (opt->type == REGOPT_SERVER_INT && value == -1)
			return;				/* the server's */
	}
	/* written so that a NaN is out of bounds too */
	if (!(value >= opt->min && value <= opt->max))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between %g and %g%s", opt->name, opt->min, opt->max,
						opt->unit ? opt->unit : ""),
				 opt->hint ? errhint("%s", opt->hint) : 0));
}

/*
 * The checks of a registration's options that need no warehouse, the same
 * for add_table() and alter_table(): each option's bounds, then what it
 * needs of the others, option by option.  Options register.c reads itself
 * are checked there.
 */
void
RegOptionsCheck(const TableConfig *cfg)
{
	for (int i = 0; i < NUM_REG_OPTIONS; i++)
	{
		const RegOption *opt = &reg_options[i];

		if (opt->flags & REGOPT_OWN_READ)
			continue;
		switch (opt->type)
		{
			case REGOPT_INT:
			case REGOPT_SERVER_INT:
			case REGOPT_REAL:
				check_bounds(opt, cfg);
				break;
			case REGOPT_INTERVAL:
				if (RegOptionField(cfg, opt, Interval *) != NULL)
					RegOptionCheckInterval(RegOptionField(cfg, opt, Interval *), opt->name,
										   opt->min >= 1);
				break;
			default:
				break;
		}
		if (opt->check)
			opt->check(cfg);
	}
}

/* Do two lists hold the same names, in any order? */
static bool
same_names(List *a, List *b)
{
	ListCell   *lc;

	if (list_length(a) != list_length(b))
		return false;
	foreach(lc, a)
		if (!ListHasName(b, lfirst(lc)))
			return false;
	return true;
}

/*
 * Does the change from before to after drop the watermark: did an option
 * that says so change?  (A new mask must reach the rows already in the
 * copy; a new mode or cursor reads the warehouse another way.)
 */
bool
RegOptionsReset(const TableConfig *before, const TableConfig *after)
{
	for (int i = 0; i < NUM_REG_OPTIONS; i++)
	{
		const RegOption *opt = &reg_options[i];
		bool		same;

		if (!(opt->flags & REGOPT_RESETS))
			continue;
		switch (opt->type)
		{
			case REGOPT_TEXT:
				same = TextsEqual(RegOptionField(before, opt, char *),
								  RegOptionField(after, opt, char *));
				break;
			case REGOPT_INT:
			case REGOPT_CHOICE:
				same = RegOptionField(before, opt, int) == RegOptionField(after, opt, int);
				break;
			case REGOPT_NAMES:
			case REGOPT_MASK:
				same = same_names(RegOptionField(before, opt, List *),
								  RegOptionField(after, opt, List *));
				break;
			default:
				elog(ERROR, "a change of registration option \"%s\" cannot be compared", opt->name);
				same = true;	/* keep the compiler quiet */
		}
		if (!same)
			return true;
	}
	return false;
}

/* Only mode 'snapshot' works without a cursor column. */
static void
check_cursor_column(const TableConfig *cfg)
{
	if (cfg->mode != SYNC_SNAPSHOT && cfg->cursor_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cursor_column must not be NULL in mode '%s'",
						RegOptionChoiceName("mode", cfg->mode)),
				 errhint("Name the warehouse column that marks when each row was written, such as synced_at; only mode 'snapshot' works without one.")));
}

/* initial_chunk: a positive width, and chunked loads exist in mode upsert only. */
static void
check_initial_chunk(const TableConfig *cfg)
{
	if (cfg->initial_chunk && RegIntervalNotPositive(cfg->initial_chunk, true))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("initial_chunk must be a positive interval"),
				 errhint("For example initial_chunk => '7 days'; NULL loads the first sync in one transaction.")));
	if (cfg->initial_chunk && cfg->mode != SYNC_UPSERT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("initial_chunk works only in mode 'upsert'")));
}

/* Only the chunks of a chunked first load are loaded in parallel. */
static void
check_parallel(const TableConfig *cfg)
{
	if (cfg->parallel > 1 && cfg->initial_chunk == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel needs initial_chunk"),
				 errdetail("Only the chunks of a chunked first load are loaded in parallel."),
				 errhint("Pass initial_chunk => '7 days' as well.")));
}

/* An overlap is counted back from the cursor's watermark. */
static void
check_cursor_overlap(const TableConfig *cfg)
{
	if (cfg->cursor_overlap && cfg->cursor_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cursor_overlap needs a cursor_column")));
}
