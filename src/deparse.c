/*-------------------------------------------------------------------------
 *
 * deparse.c
 *	  Every statement sent to the warehouse: the cut and other aggregates,
 *	  the count of NULL cursors, the pulls (delta, window, chunks, slices)
 *	  and their counts, the window's keys and the pulls by key, verify()'s per-day aggregates and keys, and
 *	  ClickHouse's column types.
 *
 * As in postgres_fdw's deparse.c, one file builds the remote SQL and the
 * callers execute it: they pass the registration and what to select, and
 * get the text with its parameters.  The SQL is the standard subset every
 * supported warehouse speaks; every value is a parameter, every
 * identifier quoted the warehouse's way (OdbcQuoteIdent).
 *
 * Remote comparisons use > and <= only: "col >= x" is sent as
 * "col > x - 1us" and "col < x" as "col <= x - 1us", the same rows at
 * microsecond precision.  A warehouse that compares timestamps as text
 * (SQLite) sorts a stored value that equals the bound but is written with
 * fewer fraction digits before it, which > and <= get right.  A
 * timestamp column compared with a parameter is written through
 * timestamp_operand() (ClickHouse: toDateTime64(col, 6), and a
 * DateTime64(7..9) cut to the microsecond as its values are read,
 * clickhouse_micro()).
 *
 * Dates and times cross the driver as text, never as ODBC structures: the
 * copy's own input functions read them (COPY), so a value the copy's type
 * cannot hold is a bad row, never a changed one.  psqlODBC rewrites date
 * and time values even when asked for text (it parses them into its own
 * structure, which has no era and no infinity), so from a PostgreSQL
 * warehouse they are selected CAST(col AS text) (remote_column()).
 *
 * A timestamp cursor is bounded by the warehouse's own clock: the cut is
 * the greatest cursor not later than the clock plus
 * treble_sync.cursor_max_lead (clock_limit()) that is a time (not
 * -infinity, not a zero date: append_is_time()), so that one row stamped
 * 'infinity' or in the year 2999 cannot become the watermark and stop
 * every later row.  Such rows are left out of every pull
 * (append_cut_bound()) and counted (DeparseCursorCounts()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "deparse.h"
#include "odbc.h"
#include "treble_sync.h"

/* A cursor value as a parameter of a remote query. */
OdbcParam
DeparseCursorParam(TableConfig *cfg, int64 value)
{
	OdbcParam	p = {cfg->cursor_kind == CURSOR_INTEGER ? ODBC_PARAM_INT64 : ODBC_PARAM_TIMESTAMP,
	value};

	return p;
}

/* The warehouse table, qualified and quoted. */
static char *
remote_table(TableConfig *cfg, OdbcConn *conn)
{
	return OdbcQualifiedName(conn, cfg->remote_schema, cfg->remote_table);
}

/*
 * A column, quoted, as a query over relation (the warehouse table's
 * qualified name, or a subquery's alias) names it.  SQLite reads a
 * double-quoted name that matches no column as a string literal, so a
 * column gone from the table, or one whose name its driver reported
 * altered (it drops the bytes of a name that are not UTF-8), would be
 * selected as its own name in every row and compared so, silently; a
 * qualified name is never read so, and fails.  Other warehouses get the
 * name alone.
 */
static char *
column_in(OdbcConn *conn, const char *relation, const char *column)
{
	char	   *q = OdbcQuoteIdent(conn, column);

	if (!OdbcDriverIs(conn, DRIVER_SQLITE))
		return q;
	return psprintf("%s.%s", relation, q);
}

/* A column of the warehouse table, quoted as column_in() says. */
static char *
column_ref(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	return column_in(conn, remote_table(cfg, conn), column);
}

/*
 * The type name recorded for a column of a ClickHouse warehouse
 * (TableRecordedSignature()), or NULL on another warehouse or if none was
 * recorded: ClickHouse's driver reports too little of a type for some to
 * be read as they are.
 */
static const char *
clickhouse_type(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	if (!OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
		return NULL;
	return TableRecordedSignature(cfg, column);
}

/*
 * Whether a column of a ClickHouse warehouse is a DateTime64 of 7 to 9
 * fraction digits, by its recorded type name.  treble_sync keeps
 * timestamps to the microsecond and cuts finer digits (docs/limits.md):
 * such a column is read, compared and aggregated as clickhouse_micro()
 * writes it, never as itself.  Its driver sends all nine digits, which
 * PostgreSQL's input rounds (.9999995 to the next second), and
 * toDateTime64(col, 6) alone cuts toward 1970, so up before 1970
 * (1969-12-31 23:59:59.9999995 becomes 1970-01-01 00:00:00): a value, the
 * cut and the filters read so would disagree, and a row whose cursor lies
 * within a microsecond of the cut could be skipped for ever.
 */
static bool
is_remote_sub_micro(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	const char *sig = clickhouse_type(cfg, conn, column);

	if (sig == NULL)
		return false;
	sig = DeparseClickHouseUnwrap(sig);
	return strncmp(sig, "DateTime64(", 11) == 0 && sig[11] >= '7' && sig[11] <= '9' &&
		(sig[12] == ')' || sig[12] == ',');
}

/*
 * A ClickHouse DateTime64(7..9) column cut to the microsecond, toward the
 * past: toStartOfMicrosecond() cuts the finer digits off every value
 * (before 1970 too), and the conversion to DateTime64(6) is then exact.
 * Both keep the column's zone, and both are monotonic, so ClickHouse still
 * prunes by the sorting key through them.
 */
static char *
clickhouse_micro(const char *quoted_column)
{
	return psprintf("toDateTime64(toStartOfMicrosecond(%s), 6)", quoted_column);
}

/*
 * A timestamp column of the warehouse table as the left side of a
 * comparison with a timestamp parameter ("col > ?", "col <= ?").
 * Timestamps go to ClickHouse as text (odbc.c binds them so), which
 * ClickHouse converts to the column's own type, and a DateTime column
 * (whole seconds) refuses text with a fraction: "Cannot convert string
 * '2026-11-25 23:59:59.999999' to type DateTime" (TYPE_MISMATCH), which
 * every window bound and "col >= x" sent as "col > x - 1us" has.  So there
 * the column is compared as toDateTime64(col, 6): the same instant (a
 * DateTime or DateTime64 keeps its zone, and the text is read in it), to
 * the microsecond, and ClickHouse still uses the table's sorting key
 * through it (the function is monotonic); a DateTime64(7..9) as
 * clickhouse_micro() cuts it, the value the copy holds.  Other warehouses
 * get the column as it is.
 */
static char *
timestamp_operand(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	char	   *quoted_column = column_ref(cfg, conn, column);

	if (is_remote_sub_micro(cfg, conn, column))
		return clickhouse_micro(quoted_column);
	if (OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
		return psprintf("toDateTime64(%s, 6)", quoted_column);
	return quoted_column;
}

/*
 * A timestamp column as an aggregate (MIN, MAX) takes it: a ClickHouse
 * DateTime64(7..9) as clickhouse_micro() cuts it, so that the cut and a
 * slice's bounds are values the copy and the filters know; any other as
 * it is.
 */
static char *
aggregate_operand(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	char	   *quoted_column = column_ref(cfg, conn, column);

	if (is_remote_sub_micro(cfg, conn, column))
		return clickhouse_micro(quoted_column);
	return quoted_column;
}

/*
 * The cursor column, quoted, as the left side of a comparison with a
 * cursor parameter (DeparseCursorParam()).
 */
static char *
cursor_operand(TableConfig *cfg, OdbcConn *conn)
{
	if (cfg->cursor_kind == CURSOR_INTEGER)
		return column_ref(cfg, conn, cfg->cursor_column);
	return timestamp_operand(cfg, conn, cfg->cursor_column);
}

/* Whether the table's cursor holds timestamps (or dates), not integers. */
static bool
cursor_is_timestamp(TableConfig *cfg)
{
	return cfg->cursor_column != NULL && cfg->cursor_kind == CURSOR_TIMESTAMP;
}

/* Whether a PostgreSQL type name is one of the date and time types. */
static bool
is_datetime_type_name(const char *name)
{
	static const char *const names[] = {"timestamp", "timestamptz", "date", "time",
	"timetz", "interval"};

	for (size_t i = 0; i < lengthof(names); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/*
 * Whether a column is a PostgreSQL warehouse's money, by the type recorded
 * at registration ("money ..."; psqlODBC names it so).  Its text depends
 * on the warehouse's lc_monetary ('$1,234.50'), so it is read as numeric:
 * the same amount, exactly, whatever the locale (schema.c maps it to a
 * local numeric).
 */
static bool
is_remote_money(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	ListCell   *lc;

	if (!OdbcDriverIs(conn, DRIVER_PSQLODBC))
		return false;
	foreach(lc, cfg->remote_columns)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, column) == 0)
			return pg_strncasecmp(strVal(def->arg), "money ", 6) == 0;
	}
	return false;
}

/*
 * Whether a column of a PostgreSQL warehouse is to be selected as text:
 * its recorded warehouse type is a date or time type, or the copy keeps it
 * in one (a domain over one is reported by its own name, but psqlODBC
 * still rewrites its values).  Any type's value can be cast to text.
 */
static bool
selected_as_text(TableConfig *cfg, const char *column)
{
	ListCell   *lc;
	AttrNumber	attnum;

	foreach(lc, cfg->remote_columns)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, column) == 0)
		{
			char	   *type = pstrdup(strVal(def->arg));
			char	   *space = strchr(type, ' ');

			if (space)
				*space = '\0';	/* "timestamp 26 6": the name first */
			if (is_datetime_type_name(type))
				return true;
			break;
		}
	}
	if (!OidIsValid(cfg->local_relid) ||
		(attnum = get_attnum(cfg->local_relid, column)) == InvalidAttrNumber)
		return false;
	switch (get_atttype(cfg->local_relid, attnum))
	{
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case DATEOID:
		case TIMEOID:
		case TIMETZOID:
		case INTERVALOID:
			return true;
		default:
			return false;
	}
}

/*
 * A ClickHouse type name without its Nullable(...) and LowCardinality(...)
 * wrappers, in either order: neither changes how a value is written.
 */
const char *
DeparseClickHouseUnwrap(const char *type_name)
{
	const char *t = type_name;

	for (;;)
	{
		if (strncmp(t, "Nullable(", 9) == 0)
			t += 9;
		else if (strncmp(t, "LowCardinality(", 15) == 0)
			t += 15;
		else
			return t;
	}
}

/*
 * Whether a column of a MariaDB or MySQL warehouse is a FLOAT (single
 * precision): its server writes such a value as text with 6 significant
 * digits (217341.4 as 217341), so it is selected as a DOUBLE instead,
 * which holds every float exactly and is written with all its digits;
 * PostgreSQL's real input rounds that text back to the same float.
 */
static bool
is_remote_single_float(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	const char *sig;

	if (!OdbcDriverIsMysql(conn) ||
		(sig = TableRecordedSignature(cfg, column)) == NULL)
		return false;
	return pg_strncasecmp(sig, "float", 5) == 0 && (sig[5] == ' ' || sig[5] == '\0');
}

/*
 * Whether a column of a ClickHouse warehouse is a Decimal, by its recorded
 * type name, ClickHouse's own ("Decimal(9, 2)", "Nullable(Decimal(38,
 * 10))").  Its driver writes a Decimal's value without the trailing zeros
 * of its fraction (7700979.40 as 7700979.4), so such a column is selected
 * as toDecimalString() with the scale of its type, read from its type's
 * name where the query runs (clickhouse_decimal_text()): the driver reports
 * every scale as 0, and the recorded one is stale after a change accepted
 * under schema_drift 'ignore'.
 */
static bool
is_remote_decimal(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	const char *sig = clickhouse_type(cfg, conn, column);

	if (sig == NULL)
		return false;
	if (strncmp(sig, "Nullable(", 9) == 0)
		sig += 9;
	return strncmp(sig, "Decimal", 7) == 0;
}

/*
 * A ClickHouse Decimal column as text with every digit of its scale: the
 * scale is the last number of toTypeName(), a constant ("Decimal(9, 2)",
 * "Nullable(Decimal(9, 2))").  A column no longer a Decimal fails the
 * query rather than change a value.
 */
static char *
clickhouse_decimal_text(const char *quoted)
{
	return psprintf("toDecimalString(%s, toUInt8(extract(toTypeName(%s), '([0-9]+)[)]+$')))",
					quoted, quoted);
}

/*
 * A warehouse column as selected: quoted; money cast to numeric
 * (is_remote_money()); the date and time columns of a PostgreSQL
 * warehouse as their text (in the session's ISO style and time zone,
 * which odbc.c sets: a timestamptz keeps its offset), so that BC dates,
 * infinities and years past 9999 reach COPY as they are; a MariaDB FLOAT
 * as a DOUBLE (is_remote_single_float()); a ClickHouse Decimal as its
 * text with every digit of its scale (is_remote_decimal()), a ClickHouse
 * DateTime64(7..9) cut to the microsecond (is_remote_sub_micro()).
 */
static char *
remote_column(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	char	   *q = column_ref(cfg, conn, column);

	if (is_remote_money(cfg, conn, column))
		return psprintf("CAST(%s AS NUMERIC)", q);
	if (is_remote_single_float(cfg, conn, column))
		return psprintf("CAST(%s AS DOUBLE)", q);
	if (is_remote_decimal(cfg, conn, column))
		return clickhouse_decimal_text(q);
	if (is_remote_sub_micro(cfg, conn, column))
		return clickhouse_micro(q);
	if (OdbcDriverIs(conn, DRIVER_PSQLODBC) && selected_as_text(cfg, column))
		return psprintf("CAST(%s AS text)", q);
	return q;
}

/*
 * Whether a column's values are pulled as the bytes the warehouse sends
 * instead of through its driver's UTF-16 conversion (OdbcTextAsBytes
 * says which drivers alter text there): a copy column of a text type.
 * SQLite's are selected as CAST(col AS BLOB), which gives a text value's
 * bytes as stored and a number's text, untouched by its driver; the
 * others' as they are.  The bytes
 * are checked as UTF-8 before they reach COPY (stage.c).
 *
 * On SQLite that is every column but a bytea one, whatever its local
 * type: any column there can hold any text, and its driver's UTF-16
 * conversion changes text it should only carry (it drops bytes that are
 * not UTF-8, and maps U+100000..U+10FFFF onto U+0000..U+FFFF, so a date
 * '2024-01-0' || U+100031 would read as '2024-01-01'), while its integer
 * conversion (strtoll, base 0) reads '010' as 8 and 1.5 as 1.  As bytes,
 * every value reaches the copy's own input function as stored, or is a
 * bad row.
 */
bool
DeparseTextAsBytes(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	AttrNumber	attnum;
	Oid			type;
	char		category;
	bool		preferred;

	if (!OdbcTextAsBytes(conn))
		return false;
	attnum = get_attnum(cfg->local_relid, column);
	if (attnum == InvalidAttrNumber)
		return false;
	type = getBaseType(get_atttype(cfg->local_relid, attnum));
	if (OdbcDriverIs(conn, DRIVER_SQLITE))
		return type != BYTEAOID;
	get_type_category_preferred(type, &category, &preferred);
	return category == TYPCATEGORY_STRING || type == JSONOID || type == JSONBOID ||
		type == XMLOID;
}

/* Whether a column of the copy is of a text type (or a domain over one). */
static bool
local_is_text(TableConfig *cfg, const char *column)
{
	AttrNumber	attnum = get_attnum(cfg->local_relid, column);
	char		category;
	bool		preferred;

	if (attnum == InvalidAttrNumber)
		return false;
	get_type_category_preferred(getBaseType(get_atttype(cfg->local_relid, attnum)),
								&category, &preferred);
	return category == TYPCATEGORY_STRING;
}

/*
 * Whether a column's value crosses ClickHouse's driver as the hex of its
 * bytes (clickhouse_hex()): every column read as bytes there, text
 * (DeparseTextAsBytes()) and a copy column of type bytea (stage.c reads
 * those as bytes, fetch.c decodes both).  The driver's own string handling
 * changes text: it takes a leading U+FEFF for a byte-order mark and drops
 * it (a value that is only that becomes the empty string, and two keys one),
 * so nothing but [0-9A-F] is left for it to handle.
 */
bool
DeparseReadsHex(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	AttrNumber	attnum;

	if (!OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
		return false;
	attnum = get_attnum(cfg->local_relid, column);
	if (attnum == InvalidAttrNumber)
		return false;
	return get_atttype(cfg->local_relid, attnum) == BYTEAOID ||
		DeparseTextAsBytes(cfg, conn, column);
}

/*
 * A ClickHouse column read as bytes (DeparseReadsHex()), as selected: the
 * hex of its bytes.  A String or FixedString has hex() of its own, which
 * keeps a FixedString's padding NULs (toString() and CAST drop them, and a
 * NUL is a bad row, not a value to cut silently); any other type (Enum,
 * Array, Map, Tuple, IPv4, a number given a text column...) as the hex of
 * its text form, toString(), which is what the driver sends for it.
 */
static char *
clickhouse_hex(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	const char *sig = TableRecordedSignature(cfg, column);
	const char *base = sig ? DeparseClickHouseUnwrap(sig) : "";
	char	   *selected = remote_column(cfg, conn, column);

	if ((strncmp(base, "String", 6) == 0 && (base[6] == '\0' || base[6] == ')' || base[6] == ' ')) ||
		strncmp(base, "FixedString(", 12) == 0)
		return psprintf("hex(%s)", selected);
	return psprintf("hex(toString(%s))", selected);
}

/*
 * A text parameter's placeholder in a query to the warehouse, the value
 * bound by OdbcExecute() (ODBC_PARAM_TEXT).  ClickHouse's driver sends a
 * bound value unescaped as a query parameter that the server reads in its
 * escaped text form: a tab ends the value (the query fails), and ' ' or
 * 'NULL' compare as something else.  So there the value goes as the hex of
 * its bytes (odbc.c) and is decoded by the warehouse, unhex(?).
 */
const char *
DeparseTextPlaceholder(OdbcConn *conn)
{
	return OdbcDriverIs(conn, DRIVER_CLICKHOUSE) ? "unhex(?)" : "?";
}

/*
 * The select list of a pull: the warehouse columns as remote_column()
 * selects them, a column of absent selected as NULL, and one whose text
 * is read as bytes (DeparseTextAsBytes) cast so (SQLite), or as hex
 * (ClickHouse: DeparseReadsHex()).  relation is what the
 * query selects from (column_in()): the warehouse table, or a subquery.
 */
static void
append_select_columns(StringInfo sql, TableConfig *cfg, OdbcConn *conn, const char *relation,
					  List *columns, List *absent)
{
	ListCell   *lc;

	foreach(lc, columns)
	{
		const char *col = lfirst(lc);

		if (foreach_current_index(lc) > 0)
			appendStringInfoString(sql, ", ");
		if (ListHasName(absent, col))
			appendStringInfoString(sql, "NULL");
		else if (OdbcDriverIs(conn, DRIVER_SQLITE) && DeparseTextAsBytes(cfg, conn, col) &&
				 local_is_text(cfg, col))
			appendStringInfo(sql, "CAST(%s AS BLOB)", column_in(conn, relation, col));
		else if (OdbcDriverIs(conn, DRIVER_SQLITE) && DeparseTextAsBytes(cfg, conn, col))
		{
			/*
			 * SQLite writes a REAL with 15 significant digits (its driver
			 * reads no other form): a finite one that this text does not
			 * give back is sent as DEPARSE_INEXACT_REAL and the text, a bad
			 * row (stage.c), never a nearby double.  A text column takes
			 * SQLite's text of a number as its value (docs/limits.md).
			 */
			const char *c = column_in(conn, relation, col);

			appendStringInfo(sql, "CASE WHEN typeof(%s) = 'real' AND %s - %s = 0"
							 " AND CAST(CAST(%s AS TEXT) AS REAL) <> %s"
							 " THEN CAST(X'00FF' || CAST(%s AS TEXT) AS BLOB)"
							 " ELSE CAST(%s AS BLOB) END",
							 c, c, c, c, c, c, c);
		}
		else if (OdbcDriverIs(conn, DRIVER_SQLITE))
			appendStringInfoString(sql, column_in(conn, relation, col));
		else if (DeparseReadsHex(cfg, conn, col))
			appendStringInfoString(sql, clickhouse_hex(cfg, conn, col));
		else
			appendStringInfoString(sql, remote_column(cfg, conn, col));
	}
}

/*
 * The latest timestamp a cut may take, as an SQL expression of the
 * warehouse's own clock with one parameter (clock_param()): now plus
 * treble_sync.cursor_max_lead.  The margin absorbs the difference between
 * the clock's zone and the zone the cursor's zone-less values were
 * written in (PostgreSQL compares in its session's zone, which odbc.c sets
 * to the server option's; MariaDB's NOW() is in its session's zone;
 * SQLite's datetime('now') is UTC, compared as text; ClickHouse compares
 * instants) and the clocks' drift.
 */
static const char *
clock_limit(OdbcConn *conn)
{
	if (OdbcDriverIs(conn, DRIVER_PSQLODBC))
		return "(statement_timestamp() + CAST(? AS double precision) * INTERVAL '1 second')";
	if (OdbcDriverIs(conn, DRIVER_SQLITE))
		return "datetime('now', ?)";
	if (OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
		return "(now64(6) + toIntervalSecond(?))";
	if (OdbcDriverIsMysql(conn))
		return "(NOW(6) + INTERVAL ? SECOND)";
	/* the ODBC escape, which other drivers translate */
	return "{fn TIMESTAMPADD(SQL_TSI_SECOND, ?, {fn NOW()})}";
}

/* The parameter of clock_limit(): the margin, in seconds. */
static OdbcParam
clock_param(OdbcConn *conn)
{
	if (OdbcDriverIs(conn, DRIVER_SQLITE))
		return (OdbcParam) {ODBC_PARAM_TEXT, 0,
		psprintf("+%d seconds", treble_sync_cursor_max_lead)};
	return (OdbcParam) {ODBC_PARAM_INT64, treble_sync_cursor_max_lead};
}

/*
 * " AND <the column holds a time>", where a warehouse's timestamp column
 * can hold something else that sorts before every time: PostgreSQL's
 * -infinity (its infinity is later than any clock anyway), MariaDB's and
 * MySQL's zero dates ('0000-00-00').  Nothing elsewhere.
 */
static void
append_is_time(StringInfo sql, OdbcConn *conn, const char *qcol)
{
	if (OdbcDriverIs(conn, DRIVER_PSQLODBC))
		appendStringInfo(sql, " AND isfinite(%s)", qcol);
	else if (OdbcDriverIsMysql(conn))
		appendStringInfo(sql, " AND %s >= '0001-01-01'", qcol);
}

/*
 * The condition on the cursor of every row a cut may take: not later than
 * clock_limit(), and a time (append_is_time()).
 */
static void
append_cut_candidate(StringInfo sql, TableConfig *cfg, OdbcConn *conn)
{
	appendStringInfo(sql, "%s <= %s", cursor_operand(cfg, conn), clock_limit(conn));
	append_is_time(sql, conn, column_ref(cfg, conn, cfg->cursor_column));
}

/*
 * "cursor <= ?", the bound of every statement read at a cut: a timestamp
 * cursor must also be a time (append_is_time()), so that a row stamped
 * '-infinity' or '0000-00-00', left out of the cut, is left out of the
 * pulls too.
 */
static void
append_cut_bound(StringInfo sql, TableConfig *cfg, OdbcConn *conn)
{
	appendStringInfo(sql, "%s <= ?", cursor_operand(cfg, conn));
	if (cursor_is_timestamp(cfg))
		append_is_time(sql, conn, column_ref(cfg, conn, cfg->cursor_column));
}

/*
 * An aggregate (MIN or MAX) of a column, as the value read: a PostgreSQL
 * warehouse's timestamp cast to text (fetch.c reads it so, BC and all).
 * ClickHouse's MIN and MAX of no rows are the type's default (1970-01-01
 * 00:00:00, 0) unless the column is Nullable: there they are written
 * minOrNull and maxOrNull, so that no rows is NULL as elsewhere, and never
 * a cut in 1970 whose hot window would take the whole table.  SQLite's
 * is cast to BLOB: FetchGetIntOf() and FetchGetTimestampOf() read it as
 * the bytes stored, not through its driver's UTF-16 conversion (see
 * DeparseTextAsBytes()).
 */
static char *
aggregate_expr(OdbcConn *conn, const char *agg, const char *qcol, bool integer)
{
	Assert(strcmp(agg, "MIN") == 0 || strcmp(agg, "MAX") == 0);
	if (OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
		return psprintf("%s(%s)", strcmp(agg, "MIN") == 0 ? "minOrNull" : "maxOrNull", qcol);
	if (!integer && OdbcDriverIs(conn, DRIVER_PSQLODBC))
		return psprintf("CAST(%s(%s) AS text)", agg, qcol);
	if (OdbcDriverIs(conn, DRIVER_SQLITE))
		return psprintf("CAST(%s(%s) AS BLOB)", agg, qcol);	/* read as bytes (fetch.c) */
	return psprintf("%s(%s)", agg, qcol);
}

/*
 * The cut: the greatest cursor, of a timestamp cursor among the rows
 * clock_limit() allows; its parameter (if any) appended to params.
 */
char *
DeparseCut(TableConfig *cfg, OdbcConn *conn, OdbcParam *params, int *nparams)
{
	StringInfoData sql;
	bool		integer = !cursor_is_timestamp(cfg);

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s FROM %s",
					 aggregate_expr(conn, "MAX", aggregate_operand(cfg, conn, cfg->cursor_column),
									integer),
					 remote_table(cfg, conn));
	if (!integer)
	{
		appendStringInfoString(&sql, " WHERE ");
		append_cut_candidate(&sql, cfg, conn);
		params[(*nparams)++] = clock_param(conn);
	}
	return sql.data;
}

/*
 * An aggregate (MIN, MAX) of an integer or timestamp column of the
 * warehouse table, among the rows with cursor <= ? if bounded (the cut,
 * DeparseCursorParam()).  A timestamp column's values that are no time
 * (append_is_time(): -infinity, zero dates) are left out, and so is
 * PostgreSQL's infinity: they are no day a first load's chunks or a window
 * could start at (the first chunk has no lower bound, and takes them).
 */
char *
DeparseAggregate(TableConfig *cfg, OdbcConn *conn, const char *agg, const char *column,
				 bool integer, bool bounded)
{
	StringInfoData sql;
	char	   *qcol = column_ref(cfg, conn, column);

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s FROM %s WHERE %s IS NOT NULL",
					 aggregate_expr(conn, agg, integer ? qcol : aggregate_operand(cfg, conn, column),
									integer),
					 remote_table(cfg, conn), qcol);
	if (bounded)
	{
		appendStringInfoString(&sql, " AND ");
		append_cut_bound(&sql, cfg, conn);
	}
	if (!integer)
		append_is_time(&sql, conn, qcol);
	return sql.data;
}

/*
 * Two counts of the warehouse rows no pull takes: those whose cursor is
 * NULL, and those of a timestamp cursor that no cut may take (later than
 * clock_limit(), or no time: append_is_time()).  Its parameter (if any)
 * appended to params.
 */
char *
DeparseCursorCounts(TableConfig *cfg, OdbcConn *conn, OdbcParam *params, int *nparams)
{
	StringInfoData sql;
	char	   *qcursor = column_ref(cfg, conn, cfg->cursor_column);

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT COUNT(*) - COUNT(%s), ", qcursor);
	if (cursor_is_timestamp(cfg))
	{
		appendStringInfo(&sql, "COUNT(CASE WHEN %s IS NOT NULL AND NOT (", qcursor);
		append_cut_candidate(&sql, cfg, conn);
		appendStringInfoString(&sql, ") THEN 1 END)");
		params[(*nparams)++] = clock_param(conn);
	}
	else
		appendStringInfoString(&sql, "0");
	appendStringInfo(&sql, " FROM %s", remote_table(cfg, conn));
	return sql.data;
}

/*
 * The WHERE clause of a pull, its parameters appended to params.  Always
 * cursor <= cut (unless the table has no cursor), and with a slice,
 * slice_lo < cursor <= slice_hi as well (cursor <= slice_hi for the first).  Only > and <= (see above).
 */
static void
append_pull_filter(StringInfo sql, OdbcParam *params, int *nparams, TableConfig *cfg,
				   OdbcConn *conn, PullSpec *spec, PullSlice *slice)
{
	char	   *qcursor = cfg->cursor_column ? cursor_operand(cfg, conn) : NULL;

	if (spec->have_cut)
	{
		appendStringInfoString(sql, " WHERE ");
		append_cut_bound(sql, cfg, conn);
		params[(*nparams)++] = DeparseCursorParam(cfg, spec->cut);
	}
	if (slice && slice->open_lo)
	{
		appendStringInfo(sql, " AND %s <= ?", qcursor);
		params[(*nparams)++] = DeparseCursorParam(cfg, slice->hi);
	}
	else if (slice)
	{
		appendStringInfo(sql, " AND %s > ? AND %s <= ?", qcursor, qcursor);
		params[(*nparams)++] = DeparseCursorParam(cfg, slice->lo);
		params[(*nparams)++] = DeparseCursorParam(cfg, slice->hi);
	}

	if (spec->range_column)
	{
		char	   *qcol = timestamp_operand(cfg, conn, spec->range_column);

		if (spec->open_ended)
			appendStringInfo(sql, " AND (%s > ? OR %s IS NULL)", qcol, qcol);
		else if (spec->open_below)
			appendStringInfo(sql, " AND %s <= ?", qcol);
		else
			appendStringInfo(sql, " AND %s > ? AND %s <= ?", qcol, qcol);
		if (!spec->open_below)
			params[(*nparams)++] = (OdbcParam) {ODBC_PARAM_TIMESTAMP, TimestampJustBefore(spec->lo)};
		if (!spec->open_ended)
			params[(*nparams)++] = (OdbcParam) {ODBC_PARAM_TIMESTAMP, TimestampJustBefore(spec->hi)};
	}
	else if (spec->window_only)
	{
		appendStringInfo(sql, " AND %s > ?",
						 timestamp_operand(cfg, conn, cfg->event_column));
		params[(*nparams)++] = (OdbcParam) {ODBC_PARAM_TIMESTAMP, TimestampJustBefore(spec->bound)};
	}
	else if (spec->have_prev && spec->have_window)
	{
		appendStringInfo(sql, " AND (%s > ? OR %s > ?)", qcursor,
						 timestamp_operand(cfg, conn, cfg->event_column));
		params[(*nparams)++] = DeparseCursorParam(cfg, spec->prev);
		params[(*nparams)++] = (OdbcParam) {ODBC_PARAM_TIMESTAMP, TimestampJustBefore(spec->bound)};
	}
	else if (spec->have_prev)
	{
		appendStringInfo(sql, " AND %s > ?", qcursor);
		params[(*nparams)++] = DeparseCursorParam(cfg, spec->prev);
	}
}

/*
 * The rows of a pull (or of one slice of it), in the order of the synced
 * columns, for the staging table.
 */
char *
DeparsePull(TableConfig *cfg, OdbcConn *conn, PullSpec *spec, PullSlice *slice,
			OdbcParam *params, int *nparams)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	append_select_columns(&sql, cfg, conn, remote_table(cfg, conn), cfg->columns,
						  cfg->absent_columns);
	appendStringInfo(&sql, " FROM %s", remote_table(cfg, conn));
	append_pull_filter(&sql, params, nparams, cfg, conn, spec, slice);
	return sql.data;
}

/*
 * The placeholder of a key value in a pull by key: cycle.c's key_param()
 * binds a key of an integer copy column as an integer, any other as text
 * (DeparseTextPlaceholder()).
 */
static const char *
key_placeholder(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	Oid			type = get_atttype(cfg->local_relid, get_attnum(cfg->local_relid, column));

	if (type == INT2OID || type == INT4OID || type == INT8OID)
		return "?";
	return DeparseTextPlaceholder(conn);
}

/*
 * Every version with cursor <= ? of nkeys keys, in the order of the synced
 * columns: the window's rows that hot_window_check 'keys' found to differ.
 * The key values are parameters after the cut, key by key in the order of
 * key_columns; "k IN (?, ...)" for one key column, else "(k1 = ? AND k2 =
 * ?) OR ..." (a text key's placeholder as key_placeholder() writes it).
 */
char *
DeparseKeyPull(TableConfig *cfg, OdbcConn *conn, int nkeys)
{
	StringInfoData sql;
	bool		single = list_length(cfg->key_columns) == 1;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	append_select_columns(&sql, cfg, conn, remote_table(cfg, conn), cfg->columns,
						  cfg->absent_columns);
	appendStringInfo(&sql, " FROM %s WHERE ", remote_table(cfg, conn));
	append_cut_bound(&sql, cfg, conn);
	appendStringInfoString(&sql, " AND ");
	if (single)
		appendStringInfo(&sql, "%s IN (", column_ref(cfg, conn, linitial(cfg->key_columns)));
	else
		appendStringInfoChar(&sql, '(');
	for (int i = 0; i < nkeys; i++)
	{
		ListCell   *lc;

		if (single)
		{
			appendStringInfo(&sql, "%s%s", i ? ", " : "",
							 key_placeholder(cfg, conn, linitial(cfg->key_columns)));
			continue;
		}
		appendStringInfoString(&sql, i ? " OR (" : "(");
		foreach(lc, cfg->key_columns)
			appendStringInfo(&sql, "%s%s = %s", foreach_current_index(lc) ? " AND " : "",
							 column_ref(cfg, conn, lfirst(lc)),
							 key_placeholder(cfg, conn, lfirst(lc)));
		appendStringInfoChar(&sql, ')');
	}
	appendStringInfoChar(&sql, ')');
	return sql.data;
}

/*
 * How many rows a pull (or one slice of it) takes, and the smallest cursor
 * among them: what slicing a pull is planned from.
 */
char *
DeparsePullCount(TableConfig *cfg, OdbcConn *conn, PullSpec *spec, PullSlice *slice,
				 OdbcParam *params, int *nparams)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT COUNT(*), %s FROM %s",
					 aggregate_expr(conn, "MIN", aggregate_operand(cfg, conn, cfg->cursor_column),
									!cursor_is_timestamp(cfg)),
					 remote_table(cfg, conn));
	append_pull_filter(&sql, params, nparams, cfg, conn, spec, slice);
	return sql.data;
}

/*
 * The text a column contributes to a row's checksum, as an SQL expression
 * valid on both sides, or NULL if the two sides may write it differently
 * (floats, JSON made jsonb, char padding, a masked value, a chosen type).
 */
static char *
checksum_part(TableConfig *cfg, OdbcConn *conn, const char *column, const char *qcol,
			  bool remote)
{
	/* the local copy's side names pg_catalog's type, function and operator */
	const char *text = remote ? "TEXT" : "pg_catalog.text";
	Oid			type;
	int32		typmod;
	Oid			collation;
	ListCell   *lc;

	get_atttypetypmodcoll(cfg->local_relid, get_attnum(cfg->local_relid, column),
						  &type, &typmod, &collation);

	if (ListHasName(cfg->masked_columns, column))
		return NULL;
	if (remote && is_remote_money(cfg, conn, column))
		qcol = psprintf("CAST(%s AS NUMERIC)", qcol);	/* as pulled */
	foreach(lc, cfg->remote_columns)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, column) == 0 &&
			(strncmp(strVal(def->arg), "bpchar", 6) == 0 || strncmp(strVal(def->arg), "char", 4) == 0 ||
			 strncmp(strVal(def->arg), "float", 5) == 0 || strncmp(strVal(def->arg), "json", 4) == 0))
			return NULL;
	}
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case TEXTOID:
		case BOOLOID:
		case UUIDOID:
			return psprintf("COALESCE(CAST(%s AS %s), '~')", qcol, text);
		case NUMERICOID:
			return typmod < 0 ? psprintf("COALESCE(CAST(%s AS %s), '~')", qcol, text) : NULL;
		case TIMESTAMPOID:
			/* both sessions write timestamps in ISO style */
			return psprintf("COALESCE(CAST(%s AS %s), '~')", qcol, text);
		case TIMESTAMPTZOID:
			/* their zones may differ */
			return psprintf("COALESCE(CAST(EXTRACT(EPOCH FROM %s) AS %s), '~')", qcol, text);
		case DATEOID:
			/* both sessions write dates in ISO style (BC and infinity too) */
			return psprintf("COALESCE(CAST(%s AS %s), '~')", qcol, text);
		case BYTEAOID:
			return psprintf(remote ? "COALESCE(encode(%s, 'hex'), '~')" :
							"COALESCE(pg_catalog.encode(%s, 'hex'), '~')", qcol);
		default:
			return NULL;
	}
}

/*
 * The checksum of a row, over the columns checksum_part() takes, as the
 * warehouse computes it (remote) or the copy does: the two must agree.
 */
char *
DeparseChecksum(TableConfig *cfg, OdbcConn *conn, bool remote)
{
	StringInfoData parts;
	ListCell   *lc;

	initStringInfo(&parts);
	foreach(lc, cfg->columns)
	{
		char	   *col = lfirst(lc);
		char	   *part = checksum_part(cfg, conn, col, remote ? column_ref(cfg, conn, col) :
										 quote_identifier(col), remote);

		if (part)
			appendStringInfo(&parts, "%s%s", !parts.len ? "" : remote ? " || '|' || " :
							 " OPERATOR(pg_catalog.||) '|' OPERATOR(pg_catalog.||) ", part);
	}
	return psprintf(remote ? "CAST(hashtext(%s) AS BIGINT)" :
					"CAST(pg_catalog.hashtext(%s) AS BIGINT)", parts.data);
}

/*
 * A key column as the warehouse's deduplication partitions by it: a key
 * the copy holds as text compares there as its bytes, as the copy's own
 * text equality does, never in the column's collation, which can make
 * different keys one (MariaDB's default utf8mb4_general_ci: 'a', 'A', 'e',
 * 'é' and 'e ' are equal there; SQLite's NOCASE; a nondeterministic
 * PostgreSQL collation).  Otherwise verify would count one key where the
 * copy, rightly, holds several, and no repair could make the days match.
 */
static char *
dedup_key_expr(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	char	   *expr = remote_column(cfg, conn, column);

	if (!local_is_text(cfg, column))
		return expr;
	if (OdbcDriverIsMysql(conn))
		return psprintf("CAST(%s AS BINARY)", expr);
	if (OdbcDriverIs(conn, DRIVER_SQLITE))
		return psprintf("%s COLLATE BINARY", expr);
	if (OdbcDriverIs(conn, DRIVER_PSQLODBC))
		return psprintf("CAST(%s AS text) COLLATE \"C\"", expr);
	return expr;				/* ClickHouse compares strings as bytes */
}

/*
 * The rest of a query over the warehouse's deduplicated rows: after the
 * caller's select list, "rn FROM <table> WHERE cursor <= ? AND key IS NOT
 * NULL [AND day >= ?]) x WHERE rn = 1", rn numbering each key's versions newest first (or 1 when
 * the table has one row per key).  Fills params; returns their number.
 */
static int
append_dedup_source(StringInfo sql, OdbcParam *params, TableConfig *cfg, OdbcConn *conn,
					const char *daycol, int64 cut, bool have_since, Timestamp since, bool keyed)
{
	int			nparams = 0;
	ListCell   *lc;

	if (keyed)
		appendStringInfoString(sql, "1 AS rn");	/* one row per key already */
	else
	{
		appendStringInfoString(sql, "ROW_NUMBER() OVER (PARTITION BY ");
		foreach(lc, cfg->key_columns)
			appendStringInfo(sql, "%s%s", foreach_current_index(lc) ? ", " : "",
							 dedup_key_expr(cfg, conn, lfirst(lc)));
		appendStringInfo(sql, " ORDER BY %s DESC) AS rn",
						 column_ref(cfg, conn, cfg->cursor_column));
	}
	appendStringInfo(sql, " FROM %s WHERE ",
					 OdbcQualifiedName(conn, cfg->remote_schema, cfg->remote_table));
	append_cut_bound(sql, cfg, conn);
	params[nparams++] = DeparseCursorParam(cfg, cut);
	/* a row without a key has no place in the copy: a bad row, not compared */
	foreach(lc, cfg->key_columns)
		appendStringInfo(sql, " AND %s IS NOT NULL", column_ref(cfg, conn, lfirst(lc)));
	if (have_since)
	{
		appendStringInfo(sql, " AND %s > ?",
						 timestamp_operand(cfg, conn, daycol));
		params[nparams++] = (OdbcParam) {ODBC_PARAM_TIMESTAMP, TimestampJustBefore(since)};
	}
	appendStringInfoString(sql, ") x WHERE rn = 1");
	return nparams;
}

/*
 * verify(): the warehouse's row count, greatest cursor and (with_checksum)
 * checksum per day of daycol, over its deduplicated rows at the cut, since
 * a day if given.
 */
char *
DeparseVerifyDays(TableConfig *cfg, OdbcConn *conn, const char *daycol, int64 cut,
				  bool have_since, Timestamp since, bool with_checksum, bool keyed,
				  OdbcParam *params, int *nparams)
{
	StringInfoData sql;

	initStringInfo(&sql);
	/* the day and the greatest cursor are read as text (fetch.c) */
	appendStringInfo(&sql, "SELECT %s, COUNT(*), %s%s FROM (SELECT %s AS d, %s AS c",
					 OdbcDriverIs(conn, DRIVER_PSQLODBC) ? "CAST(CAST(d AS DATE) AS text)" : "CAST(d AS DATE)",
					 aggregate_expr(conn, "MAX", "c", !cursor_is_timestamp(cfg)),
					 with_checksum ? ", SUM(h)" : "", column_ref(cfg, conn, daycol),
					 aggregate_operand(cfg, conn, cfg->cursor_column));
	if (with_checksum)
		appendStringInfo(&sql, ", %s AS h", DeparseChecksum(cfg, conn, true));
	appendStringInfoString(&sql, ", ");
	*nparams = append_dedup_source(&sql, params, cfg, conn, daycol, cut, have_since, since,
								   keyed);
	appendStringInfoString(&sql, " GROUP BY CAST(d AS DATE)");
	return sql.data;
}

/*
 * verify() where the warehouse cannot compute the checksum: the given
 * columns (keys, cursor, day) of its deduplicated rows at the cut, since a
 * day if given.
 */
char *
DeparseVerifyKeys(TableConfig *cfg, OdbcConn *conn, List *columns, const char *daycol,
				  int64 cut, bool have_since, Timestamp since, bool keyed,
				  OdbcParam *params, int *nparams)
{
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	append_select_columns(&sql, cfg, conn, OdbcQuoteIdent(conn, "x"), columns, NIL);
	appendStringInfoString(&sql, " FROM (SELECT ");
	foreach(lc, columns)
		appendStringInfo(&sql, "%s, ", column_ref(cfg, conn, lfirst(lc)));
	*nparams = append_dedup_source(&sql, params, cfg, conn, daycol, cut, have_since, since,
								   keyed);
	return sql.data;
}

/* s as a ClickHouse string literal, escaped as OdbcClickHouseEscape() says. */
static char *
clickhouse_literal(const char *s)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '\'');
	OdbcClickHouseEscape(&buf, s);
	appendStringInfoChar(&buf, '\'');
	return buf.data;
}

/*
 * ClickHouse: the name and ClickHouse type ("Nullable(UInt64)") of each
 * column of a table, from system.columns, in the database named or, with
 * none, the connection's own (schema.c maps them to local types).
 */
char *
DeparseClickHouseColumnTypes(const char *database, const char *table)
{
	return psprintf("SELECT name, type FROM system.columns WHERE database = %s AND table = %s",
					database ? clickhouse_literal(database) : "currentDatabase()",
					clickhouse_literal(table));
}
