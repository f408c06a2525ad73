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
 * timestamp_operand() (ClickHouse: toDateTime64(col, 6)).
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
#include "schema.h"

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
 * A quoted timestamp column as the left side of a comparison with a
 * timestamp parameter ("col > ?", "col <= ?").  Timestamps go to ClickHouse
 * as text (odbc.c binds them so), which ClickHouse converts to the column's
 * own type, and a DateTime column (whole seconds) refuses text with a
 * fraction: "Cannot convert string '2026-11-25 23:59:59.999999' to type
 * DateTime" (TYPE_MISMATCH), which every window bound and "col >= x" sent
 * as "col > x - 1us" has.  So there the column is compared as
 * toDateTime64(col, 6): the same instant (a DateTime or DateTime64 keeps its
 * zone, and the text is read in it), to the microsecond, and ClickHouse
 * still uses the table's sorting key through it (the function is
 * monotonic).  Other warehouses get the column as it is.
 */
static char *
timestamp_operand(OdbcConn *conn, const char *quoted_column)
{
	if (OdbcDriverIsClickHouse(conn))
		return psprintf("toDateTime64(%s, 6)", quoted_column);
	return (char *) quoted_column;
}

/*
 * The cursor column, quoted, as the left side of a comparison with a
 * cursor parameter (DeparseCursorParam()).
 */
static char *
cursor_operand(TableConfig *cfg, OdbcConn *conn)
{
	char	   *qcursor = OdbcQuoteIdent(conn, cfg->cursor_column);

	return cfg->cursor_kind == CURSOR_INTEGER ? qcursor : timestamp_operand(conn, qcursor);
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

	if (!OdbcDriverIsPostgres(conn))
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
 * A warehouse column as selected: quoted, and for money cast to numeric
 * (is_remote_money()).
 */
static char *
remote_column(TableConfig *cfg, OdbcConn *conn, const char *column)
{
	char	   *q = OdbcQuoteIdent(conn, column);

	return is_remote_money(cfg, conn, column) ? psprintf("CAST(%s AS NUMERIC)", q) : q;
}

/*
 * A comma-separated list of warehouse columns, as remote_column() selects
 * them; a column of absent (gone from the warehouse) is selected as NULL.
 */
static void
append_remote_columns(StringInfo sql, TableConfig *cfg, OdbcConn *conn, List *columns,
					  List *absent)
{
	ListCell   *lc;

	foreach(lc, columns)
		appendStringInfo(sql, "%s%s", foreach_current_index(lc) ? ", " : "",
						 SchemaListHasName(absent, lfirst(lc)) ? "NULL" :
						 remote_column(cfg, conn, lfirst(lc)));
}

/*
 * Whether a column's values are pulled as the bytes the warehouse sends
 * instead of through its driver's UTF-16 conversion (OdbcTextAsBytes
 * says which drivers alter text there): a copy column of a text type.
 * SQLite's are selected as CAST(col AS BLOB), which gives a text value's
 * bytes as stored and a number's text, untouched by its driver; the
 * others' as they are.  The bytes
 * are checked as UTF-8 before they reach COPY (stage.c).
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
	get_type_category_preferred(type, &category, &preferred);
	return category == TYPCATEGORY_STRING || type == JSONOID || type == JSONBOID ||
		type == XMLOID;
}

/*
 * The select list of a pull: the warehouse columns as remote_column()
 * selects them, a column of absent selected as NULL, and one whose text
 * is read as bytes (DeparseTextAsBytes) cast so.
 */
static void
append_select_columns(StringInfo sql, TableConfig *cfg, OdbcConn *conn, List *columns,
					  List *absent)
{
	ListCell   *lc;

	foreach(lc, columns)
	{
		const char *col = lfirst(lc);

		if (foreach_current_index(lc) > 0)
			appendStringInfoString(sql, ", ");
		if (SchemaListHasName(absent, col))
			appendStringInfoString(sql, "NULL");
		else if (OdbcDriverIsSqlite(conn) && DeparseTextAsBytes(cfg, conn, col))
			appendStringInfo(sql, "CAST(%s AS BLOB)", OdbcQuoteIdent(conn, col));
		else
			appendStringInfoString(sql, remote_column(cfg, conn, col));
	}
}

/*
 * An aggregate (MIN, MAX) of a column of the warehouse table, among the
 * rows with cursor <= ? if bounded (the cut, DeparseCursorParam()).
 */
char *
DeparseAggregate(TableConfig *cfg, OdbcConn *conn, const char *agg, const char *column,
				 bool bounded)
{
	char	   *sql = psprintf("SELECT %s(%s) FROM %s", agg, OdbcQuoteIdent(conn, column),
							   remote_table(cfg, conn));

	if (bounded)
		sql = psprintf("%s WHERE %s <= ?", sql, cursor_operand(cfg, conn));
	return sql;
}

/* The number of warehouse rows whose cursor is NULL, which no pull takes. */
char *
DeparseNullCursorCount(TableConfig *cfg, OdbcConn *conn)
{
	return psprintf("SELECT COUNT(*) FROM %s WHERE %s IS NULL", remote_table(cfg, conn),
					OdbcQuoteIdent(conn, cfg->cursor_column));
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
		appendStringInfo(sql, " WHERE %s <= ?", qcursor);
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
		char	   *qcol = timestamp_operand(conn, OdbcQuoteIdent(conn, spec->range_column));

		if (spec->open_ended)
			appendStringInfo(sql, " AND (%s > ? OR %s IS NULL)", qcol, qcol);
		else
			appendStringInfo(sql, " AND %s > ? AND %s <= ?", qcol, qcol);
		params[(*nparams)++] = (OdbcParam) {ODBC_PARAM_TIMESTAMP, TimestampJustBefore(spec->lo)};
		if (!spec->open_ended)
			params[(*nparams)++] = (OdbcParam) {ODBC_PARAM_TIMESTAMP, TimestampJustBefore(spec->hi)};
	}
	else if (spec->window_only)
	{
		appendStringInfo(sql, " AND %s > ?",
						 timestamp_operand(conn, OdbcQuoteIdent(conn, cfg->event_column)));
		params[(*nparams)++] = (OdbcParam) {ODBC_PARAM_TIMESTAMP, TimestampJustBefore(spec->bound)};
	}
	else if (spec->have_prev && spec->have_window)
	{
		appendStringInfo(sql, " AND (%s > ? OR %s > ?)", qcursor,
						 timestamp_operand(conn, OdbcQuoteIdent(conn, cfg->event_column)));
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
	if (spec->keys_only)
	{
		append_select_columns(&sql, cfg, conn, cfg->key_columns, NIL);
		appendStringInfo(&sql, ", %s", OdbcQuoteIdent(conn, cfg->cursor_column));
	}
	else
		append_select_columns(&sql, cfg, conn, cfg->columns, cfg->absent_columns);
	appendStringInfo(&sql, " FROM %s", remote_table(cfg, conn));
	append_pull_filter(&sql, params, nparams, cfg, conn, spec, slice);
	return sql.data;
}

/*
 * Every version with cursor <= ? of nkeys keys, in the order of the synced
 * columns: the window's rows that hot_window_check 'keys' found to differ.
 * The key values are parameters after the cut, key by key in the order of
 * key_columns; "k IN (?, ...)" for one key column, else "(k1 = ? AND k2 =
 * ?) OR ...".
 */
char *
DeparseKeyPull(TableConfig *cfg, OdbcConn *conn, int nkeys)
{
	StringInfoData sql;
	bool		single = list_length(cfg->key_columns) == 1;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	append_select_columns(&sql, cfg, conn, cfg->columns, cfg->absent_columns);
	appendStringInfo(&sql, " FROM %s WHERE %s <= ? AND ", remote_table(cfg, conn),
					 cursor_operand(cfg, conn));
	if (single)
		appendStringInfo(&sql, "%s IN (", OdbcQuoteIdent(conn, linitial(cfg->key_columns)));
	else
		appendStringInfoChar(&sql, '(');
	for (int i = 0; i < nkeys; i++)
	{
		ListCell   *lc;

		if (single)
		{
			appendStringInfoString(&sql, i ? ", ?" : "?");
			continue;
		}
		appendStringInfoString(&sql, i ? " OR (" : "(");
		foreach(lc, cfg->key_columns)
			appendStringInfo(&sql, "%s%s = ?", foreach_current_index(lc) ? " AND " : "",
							 OdbcQuoteIdent(conn, lfirst(lc)));
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
	appendStringInfo(&sql, "SELECT COUNT(*), MIN(%s) FROM %s",
					 OdbcQuoteIdent(conn, cfg->cursor_column), remote_table(cfg, conn));
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

	if (SchemaListHasName(cfg->masked_columns, column))
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
			return psprintf(remote ? "COALESCE(CAST(%s - DATE '2000-01-01' AS TEXT), '~')" :
							"COALESCE(CAST(%s OPERATOR(pg_catalog.-) pg_catalog.date '2000-01-01'"
							" AS pg_catalog.text), '~')", qcol);
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
		char	   *part = checksum_part(cfg, conn, col, remote ? OdbcQuoteIdent(conn, col) :
										 quote_identifier(col), remote);

		if (part)
			appendStringInfo(&parts, "%s%s", !parts.len ? "" : remote ? " || '|' || " :
							 " OPERATOR(pg_catalog.||) '|' OPERATOR(pg_catalog.||) ", part);
	}
	return psprintf(remote ? "CAST(hashtext(%s) AS BIGINT)" :
					"CAST(pg_catalog.hashtext(%s) AS BIGINT)", parts.data);
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
		append_remote_columns(sql, cfg, conn, cfg->key_columns, NIL);
		appendStringInfo(sql, " ORDER BY %s DESC) AS rn",
						 OdbcQuoteIdent(conn, cfg->cursor_column));
	}
	appendStringInfo(sql, " FROM %s WHERE %s <= ?",
					 OdbcQualifiedName(conn, cfg->remote_schema, cfg->remote_table),
					 cursor_operand(cfg, conn));
	params[nparams++] = DeparseCursorParam(cfg, cut);
	/* a row without a key has no place in the copy: a bad row, not compared */
	foreach(lc, cfg->key_columns)
		appendStringInfo(sql, " AND %s IS NOT NULL", OdbcQuoteIdent(conn, lfirst(lc)));
	if (have_since)
	{
		appendStringInfo(sql, " AND %s > ?",
						 timestamp_operand(conn, OdbcQuoteIdent(conn, daycol)));
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
	appendStringInfo(&sql, "SELECT CAST(d AS DATE), COUNT(*), MAX(c)%s FROM (SELECT %s AS d, %s AS c",
					 with_checksum ? ", SUM(h)" : "", OdbcQuoteIdent(conn, daycol),
					 OdbcQuoteIdent(conn, cfg->cursor_column));
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
	append_select_columns(&sql, cfg, conn, columns, NIL);
	appendStringInfoString(&sql, " FROM (SELECT ");
	foreach(lc, columns)
		appendStringInfo(&sql, "%s, ", OdbcQuoteIdent(conn, lfirst(lc)));
	*nparams = append_dedup_source(&sql, params, cfg, conn, daycol, cut, have_since, since,
								   keyed);
	return sql.data;
}

/* s as a ClickHouse string literal: quote and backslash escaped. */
static char *
clickhouse_literal(const char *s)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '\'');
	for (const char *p = s; *p; p++)
	{
		if (*p == '\'' || *p == '\\')
			appendStringInfoChar(&buf, '\\');
		appendStringInfoChar(&buf, *p);
	}
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
