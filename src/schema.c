/*-------------------------------------------------------------------------
 *
 * schema.c
 *	  The shape of tables on both sides: the warehouse's column and key
 *	  metadata (SQLColumns, SQLPrimaryKeys), the mapping of ODBC types to
 *	  PostgreSQL types, creating the local copy, and checking that an
 *	  existing local table can hold the copy.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "utils/partcache.h"

#include "deparse.h"
#include "fetch.h"
#include "odbc.h"
#include "schema.h"

#include <sqlucode.h>

/* Read a text column of a catalog-function result row, or NULL. */
static char *
fetch_text(OdbcConn *conn, SQLHSTMT stmt, int col)
{
	StringInfoData buf;

	initStringInfo(&buf);
	return FetchGetText(conn, stmt, col, &buf) ? buf.data : NULL;
}

/* Read an integer column of a catalog-function result row (NULL as 0). */
static int64
fetch_int(OdbcConn *conn, SQLHSTMT stmt, int col, bool *isnull)
{
	int64		v = 0;
	bool		got = FetchGetInt(conn, stmt, col, &v);

	if (isnull)
		*isnull = !got;
	return v;
}

static void clickhouse_column_types(OdbcConn *conn, RemoteTable *rt, bool qualified);
static void sqlite_check_column_names(OdbcConn *conn, RemoteTable *rt);
static bool sqlite_name_beyond_bmp(const char *name, size_t len);

/*
 * Describe a warehouse table with SQLColumns.  Without a schema the driver
 * searches every schema it sees; more than one match is an error that asks
 * for a qualified name rather than a guess.
 */
RemoteTable *
SchemaDescribeRemote(OdbcConn *conn, const char *schema, const char *table)
{
	RemoteTable *rt = palloc0(sizeof(RemoteTable));
	SQLHSTMT	stmt = OdbcAllocStatement(conn);
	bool		clickhouse = OdbcDriverIs(conn, DRIVER_CLICKHOUSE);
	SQLWCHAR   *wschema = NULL;
	SQLWCHAR   *wtable;
	SQLRETURN	rc;
	List	   *rows = NIL;
	List	   *schemas = NIL;
	bool		exact_seen = false;
	ListCell   *lc;

	/*
	 * SQLite's driver cannot send such a name, not even to SQLColumns, which
	 * would then find no table: refuse it for what it is, before asking.
	 */
	if (OdbcDriverIs(conn, DRIVER_SQLITE) &&
		(sqlite_name_beyond_bmp(table, strlen(table)) ||
		 (schema && sqlite_name_beyond_bmp(schema, strlen(schema)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("warehouse table name \"%s%s%s\" holds a character beyond the Basic Multilingual Plane",
						schema ? schema : "", schema ? "." : "", table),
				 errdetail("The SQLite driver cannot send such a name in a statement."),
				 errhint("Register a view of the table under another name.")));

	if (schema)
		wschema = OdbcUtf8ToWide(OdbcEscapePattern(conn, schema), NULL);
	wtable = OdbcUtf8ToWide(OdbcEscapePattern(conn, table), NULL);

	/*
	 * ClickHouse's driver lists databases as catalogs, each with an empty
	 * schema: the "schema" of a remote_table 'db.table' is a catalog there,
	 * and rows are told apart by catalog.  Without one the driver searches
	 * the connection's database (Database=), the one an unqualified name
	 * reads.
	 */
	if (clickhouse)
		rc = SQLColumnsW(stmt, wschema, wschema ? SQL_NTS : 0, NULL, 0,
						 wtable, SQL_NTS, NULL, 0);
	else
		rc = SQLColumnsW(stmt, NULL, 0, wschema, wschema ? SQL_NTS : 0,
						 wtable, SQL_NTS, NULL, 0);
	OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "reading the warehouse's column metadata");

	while (FetchNextRow(conn, stmt))
	{
		RemoteColumn *col = palloc0(sizeof(RemoteColumn));
		char	   *tschema = fetch_text(conn, stmt, clickhouse ? 1 : 2);
		char	   *tname = fetch_text(conn, stmt, 3);
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		col->name = fetch_text(conn, stmt, 4);
		col->data_type = (SQLSMALLINT) fetch_int(conn, stmt, 5, NULL);
		col->type_name = fetch_text(conn, stmt, 6);
		col->column_size = (int32) fetch_int(conn, stmt, 7, NULL);
		col->decimal_digits = (int16) fetch_int(conn, stmt, 9, &isnull);
		col->decimal_digits_null = isnull;
		if (col->type_name == NULL)
			col->type_name = "";
		col->declared_affinity = OdbcDriverIs(conn, DRIVER_SQLITE);

		/* a pattern may match other databases: keep the one named */
		if (clickhouse && schema && !TextsEqual(tschema, schema))
			continue;
		/* a case-insensitive driver may also return near matches */
		if (tname && strcmp(tname, table) == 0)
			exact_seen = true;
		rows = lappend(rows, list_make3(col, tschema, tname));
	}
	OdbcFreeStatement(conn, stmt);

	foreach(lc, rows)
	{
		List	   *row = lfirst(lc);
		char	   *tschema = lsecond(row);
		char	   *tname = lthird(row);
		bool		known = false;
		ListCell   *sc;

		if (exact_seen && (tname == NULL || strcmp(tname, table) != 0))
			continue;
		foreach(sc, schemas)
			if (TextsEqual(lfirst(sc), tschema))
				known = true;
		if (!known)
			schemas = lappend(schemas, tschema);
		if (list_length(schemas) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_AMBIGUOUS_ALIAS),
					 errmsg("warehouse table \"%s\" exists in more than one schema", table),
					 errhint("Qualify it with its schema, for example '%s.%s'.",
							 tschema ? tschema : "schema", table)));
		rt->schema = tschema;
		rt->table = tname;
		rt->columns = lappend(rt->columns, linitial(row));
	}

	if (rt->columns == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
				 errmsg("warehouse table \"%s%s%s\" not found",
						schema ? schema : "", schema ? "." : "", table),
				 errhint("Check the name and its case, and that the warehouse user may read the table.")));
	if (clickhouse)
		clickhouse_column_types(conn, rt, schema != NULL);
	if (OdbcDriverIs(conn, DRIVER_SQLITE))
		sqlite_check_column_names(conn, rt);
	return rt;
}

/*
 * Whether a UTF-8 name holds a character beyond the Basic Multilingual
 * Plane (a 4-byte sequence), which SQLite's driver cannot take in a
 * statement: its conversion of the statement's UTF-16 breaks the pair of
 * surrogates, and the name no longer parses.
 */
static bool
sqlite_name_beyond_bmp(const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char) name[i] >= 0xF0)
			return true;
	return false;
}

/*
 * SQLite's driver reports names through its UTF-16 conversion, which drops
 * the bytes that are not UTF-8: a column "a" 0xFF "b" is reported as "ab",
 * a name the table does not have.  So the names are read again as the
 * bytes SQLite stores (pragma_table_info), and a table is refused whose
 * column names are not valid UTF-8 or not all reported as stored, or
 * whose names the driver cannot send (sqlite_name_beyond_bmp()).
 */
static void
sqlite_check_column_names(OdbcConn *conn, RemoteTable *rt)
{
	SQLHSTMT	stmt = OdbcAllocStatement(conn);
	OdbcParam	params[2] = {{ODBC_PARAM_TEXT, 0, rt->table}, {ODBC_PARAM_TEXT, 0, rt->schema}};
	bool		is_binary[1] = {true};
	FetchBlock *block;
	int			n;

	OdbcExecute(conn, stmt, rt->schema && rt->schema[0] ?
				"SELECT CAST(name AS BLOB) FROM pragma_table_info(?, ?)" :
				"SELECT CAST(name AS BLOB) FROM pragma_table_info(?)",
				rt->schema && rt->schema[0] ? 2 : 1, params);
	block = FetchBegin(conn, stmt, 1, is_binary, NULL);
	while ((n = FetchNextBlock(block)) > 0)
	{
		for (int row = 0; row < n; row++)
		{
			const char *data;
			size_t		len;
			char	   *name;
			ListCell   *lc;
			bool		reported = false;

			CHECK_FOR_INTERRUPTS();
			if (!FetchValue(block, row, 0, &data, &len))
				continue;
			if (len == 0 || memchr(data, '\0', len) != NULL ||
				!pg_verify_mbstr(PG_UTF8, data, (int) Min(len, (size_t) INT_MAX), true))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_COLUMN_NAME),
						 errmsg("warehouse table \"%s\" has a column whose name is not valid UTF-8",
								rt->table),
						 errdetail("The SQLite driver reports such a name with bytes dropped, a name the table does not have."),
						 errhint("Rename the column in the warehouse to a UTF-8 name.")));
			name = pnstrdup(data, len);
			if (sqlite_name_beyond_bmp(data, len))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_COLUMN_NAME),
						 errmsg("warehouse column \"%s\" of table \"%s\" holds a character beyond the Basic Multilingual Plane",
								name, rt->table),
						 errdetail("The SQLite driver cannot send such a name in a statement."),
						 errhint("Rename the column in the warehouse, or register a view that renames it.")));
			foreach(lc, rt->columns)
				if (strcmp(((RemoteColumn *) lfirst(lc))->name, name) == 0)
					reported = true;
			if (!reported)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_COLUMN_NAME),
						 errmsg("warehouse column \"%s\" of table \"%s\" is not reported under its own name by the driver",
								name, rt->table),
						 errhint("Rename the column in the warehouse.")));
			pfree(name);
		}
	}
	OdbcFreeStatement(conn, stmt);
}

/*
 * ClickHouse's driver reports its own ODBC type for each column, which
 * loses what the local type needs: UInt16 and UInt64 come as signed
 * SMALLINT and BIGINT, and Bool, Date32, Enum8, Map and other types it does
 * not know as text.  So the column types are read from system.columns,
 * from the same database as SQLColumns' (the connection's own when the
 * name is not qualified), and each column gets ClickHouse's type name
 * ("Nullable(UInt64)"), mapped by clickhouse_local_type().
 */
static void
clickhouse_column_types(OdbcConn *conn, RemoteTable *rt, bool qualified)
{
	SQLHSTMT	stmt = OdbcAllocStatement(conn);

	OdbcExecute(conn, stmt,
				DeparseClickHouseColumnTypes(qualified ? rt->schema : NULL, rt->table),
				0, NULL);
	while (FetchNextRow(conn, stmt))
	{
		char	   *name = fetch_text(conn, stmt, 1);
		char	   *type = fetch_text(conn, stmt, 2);
		ListCell   *lc;

		CHECK_FOR_INTERRUPTS();
		foreach(lc, rt->columns)
		{
			RemoteColumn *col = lfirst(lc);

			if (name && type && strcmp(col->name, name) == 0)
			{
				col->type_name = type;
				col->clickhouse_type = true;
			}
		}
	}
	OdbcFreeStatement(conn, stmt);
}

/* Find a remote column by exact name, or NULL. */
RemoteColumn *
SchemaFindColumn(RemoteTable *rt, const char *name)
{
	ListCell   *lc;

	foreach(lc, rt->columns)
	{
		RemoteColumn *col = lfirst(lc);

		if (strcmp(col->name, name) == 0)
			return col;
	}
	return NULL;
}

/*
 * The warehouse table's primary key columns in key order (SQLPrimaryKeys),
 * or NIL if it has none.
 */
List *
SchemaRemotePrimaryKey(OdbcConn *conn, RemoteTable *rt)
{
	SQLHSTMT	stmt = OdbcAllocStatement(conn);
	SQLWCHAR   *wschema = rt->schema ? OdbcUtf8ToWide(rt->schema, NULL) : NULL;
	SQLRETURN	rc;
	char	   *by_seq[INDEX_MAX_KEYS];
	int			nkeys = 0;
	List	   *result = NIL;

	/*
	 * ClickHouse has no unique key: its driver's SQLPrimaryKeys fails
	 * without a diagnostic, and a table's sorting key need not be unique
	 * (ReplacingMergeTree keeps several versions of a key until it merges).
	 */
	if (OdbcDriverIs(conn, DRIVER_CLICKHOUSE))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ClickHouse does not report a primary key for warehouse table \"%s%s%s\"",
						rt->schema ? rt->schema : "", rt->schema ? "." : "", rt->table),
				 errdetail("ClickHouse keys are not unique, and its ODBC driver has no SQLPrimaryKeys."),
				 errhint("Name the business key: key_columns => '{deployment_id}'.")));

	memset(by_seq, 0, sizeof(by_seq));
	rc = SQLPrimaryKeysW(stmt, NULL, 0, wschema, wschema ? SQL_NTS : 0,
						 OdbcUtf8ToWide(rt->table, NULL), SQL_NTS);
	OdbcCheck(conn, rc, SQL_HANDLE_STMT, stmt, "reading the warehouse's primary key");
	while (FetchNextRow(conn, stmt))
	{
		char	   *name = fetch_text(conn, stmt, 4);
		int64		seq = fetch_int(conn, stmt, 5, NULL);

		CHECK_FOR_INTERRUPTS();
		if (name && seq >= 1 && seq <= INDEX_MAX_KEYS)
		{
			by_seq[seq - 1] = name;
			nkeys = Max(nkeys, (int) seq);
		}
	}
	OdbcFreeStatement(conn, stmt);

	for (int i = 0; i < nkeys; i++)
		if (by_seq[i])
			result = lappend(result, by_seq[i]);
	return result;
}

/* Does the driver's type name contain this word (case-insensitively)? */
static bool
type_name_has(RemoteColumn *col, const char *word)
{
	char	   *lower = asc_tolower(col->type_name, strlen(col->type_name));

	return strstr(lower, word) != NULL;
}

/*
 * SQLite stores any value in any column: a declared type only gives the
 * column an affinity, and the driver's ODBC type code is a guess (INTEGER
 * is reported as 32 bits though it holds 64).  So the type follows the
 * declared name, by SQLite's own affinity rules after a few names whose
 * meaning is plain.
 */
static char *
local_type_for_affinity(RemoteColumn *col)
{
	static const struct
	{
		const char *word;
		const char *type;
	}			plain[] = {
		{"bool", "boolean"}, {"datetime", "timestamp"}, {"timestamp", "timestamp"},
		{"date", "pg_catalog.date"}, {"time", "time"}, {"uuid", "pg_catalog.uuid"}, {"json", "pg_catalog.text"},
		/* SQLite's rules, in its order */
		{"int", "bigint"}, {"char", "pg_catalog.text"}, {"clob", "pg_catalog.text"}, {"text", "pg_catalog.text"},
		{"blob", "pg_catalog.bytea"}, {"real", "double precision"}, {"floa", "double precision"},
		{"doub", "double precision"}, {"dec", "numeric"}, {"num", "numeric"},
	};

	for (size_t i = 0; i < lengthof(plain); i++)
		if (type_name_has(col, plain[i].word))
			return (char *) plain[i].type;
	return "pg_catalog.text";				/* no declared type: anything at all */
}

/*
 * The PostgreSQL type for a ClickHouse type name, as system.columns spells
 * it.  Nullable(T) and LowCardinality(T) are T (local columns allow NULL
 * anyway: the driver reports every column as NOT NULL, and the mapping
 * never relied on it).  Each lands exactly:
 *	- integers in the next wider type where the signed one of the same size
 *	  cannot hold them (UInt16 in integer, UInt32 in bigint, UInt64 and the
 *	  128/256-bit ones in numeric);
 *	- Decimal(P,S) in numeric, read as text (the driver reports scale 0);
 *	- Date and Date32 in date; DateTime and DateTime64(p), with or without
 *	  a zone, in timestamp, to the microsecond (DateTime64(7..9) is cut to
 *	  the microsecond, finer digits dropped: deparse.c's
 *	  clickhouse_micro(), docs/limits.md);
 *	- Bool in boolean, UUID in uuid;
 *	- String, FixedString, Enum8/16, IPv4/6, and the composite types Array,
 *	  Map and Tuple in text, in ClickHouse's own text form ([1,2],
 *	  {'k':1}), which is what its driver sends for them.
 */
static char *
clickhouse_local_type(const char *type_name)
{
	static const struct
	{
		const char *prefix;
		const char *type;
	}			types[] = {
		{"UInt8", "smallint"}, {"UInt16", "integer"}, {"UInt32", "bigint"},
		{"UInt64", "numeric(20,0)"}, {"UInt128", "numeric(39,0)"}, {"UInt256", "numeric(78,0)"},
		{"Int8", "smallint"}, {"Int16", "smallint"}, {"Int32", "integer"}, {"Int64", "bigint"},
		{"Int128", "numeric(39,0)"}, {"Int256", "numeric(77,0)"},
		{"Float32", "real"}, {"Float64", "double precision"},
		{"Decimal", "numeric"}, {"Bool", "boolean"}, {"UUID", "pg_catalog.uuid"},
		{"Date32", "pg_catalog.date"}, {"DateTime", "timestamp"}, {"Date", "pg_catalog.date"},
	};
	const char *t = DeparseClickHouseUnwrap(type_name);

	for (size_t i = 0; i < lengthof(types); i++)
	{
		size_t		len = strlen(types[i].prefix);

		/* the whole name, or the name of a parametrised type ("Decimal(12, 4)") */
		if (strncmp(t, types[i].prefix, len) == 0 &&
			(t[len] == '\0' || t[len] == '(' || t[len] == ')' ||
			 (strcmp(types[i].prefix, "Decimal") == 0 && isdigit((unsigned char) t[len])) ||
			 (strcmp(types[i].prefix, "DateTime") == 0 && strncmp(t + len, "64", 2) == 0)))
			return (char *) types[i].type;
	}
	return "pg_catalog.text";
}

/*
 * A warehouse column's type as messages name it: the driver's type name,
 * or, where the driver gives none (an SQLite column declared without a
 * type), the ODBC SQL type it reports, by name and code.
 */
char *
SchemaRemoteTypeName(RemoteColumn *col)
{
	static const struct
	{
		SQLSMALLINT code;
		const char *name;
	}			codes[] = {
		{SQL_CHAR, "SQL_CHAR"}, {SQL_VARCHAR, "SQL_VARCHAR"}, {SQL_LONGVARCHAR, "SQL_LONGVARCHAR"},
		{SQL_WCHAR, "SQL_WCHAR"}, {SQL_WVARCHAR, "SQL_WVARCHAR"},
		{SQL_WLONGVARCHAR, "SQL_WLONGVARCHAR"}, {SQL_DECIMAL, "SQL_DECIMAL"},
		{SQL_NUMERIC, "SQL_NUMERIC"}, {SQL_SMALLINT, "SQL_SMALLINT"}, {SQL_INTEGER, "SQL_INTEGER"},
		{SQL_REAL, "SQL_REAL"}, {SQL_FLOAT, "SQL_FLOAT"}, {SQL_DOUBLE, "SQL_DOUBLE"},
		{SQL_BIT, "SQL_BIT"}, {SQL_TINYINT, "SQL_TINYINT"}, {SQL_BIGINT, "SQL_BIGINT"},
		{SQL_BINARY, "SQL_BINARY"}, {SQL_VARBINARY, "SQL_VARBINARY"},
		{SQL_LONGVARBINARY, "SQL_LONGVARBINARY"}, {SQL_TYPE_DATE, "SQL_TYPE_DATE"},
		{SQL_TYPE_TIME, "SQL_TYPE_TIME"}, {SQL_TYPE_TIMESTAMP, "SQL_TYPE_TIMESTAMP"},
		{SQL_DATE, "SQL_DATE"}, {SQL_TIME, "SQL_TIME"}, {SQL_TIMESTAMP, "SQL_TIMESTAMP"},
		{SQL_GUID, "SQL_GUID"}, {SQL_UNKNOWN_TYPE, "SQL_UNKNOWN_TYPE"},
	};

	if (col->type_name != NULL && col->type_name[0] != '\0')
		return col->type_name;
	for (size_t i = 0; i < lengthof(codes); i++)
		if (codes[i].code == col->data_type)
			return psprintf("no type name (ODBC %s, %d)", codes[i].name, (int) col->data_type);
	return psprintf("no type name (ODBC SQL type %d)", (int) col->data_type);
}

/*
 * The PostgreSQL type for a warehouse column, from its ODBC type code, with
 * the driver's type name as a tie-breaker where the code is too coarse
 * (time zones, uuid, unsigned integers).  Anything unknown is carried as
 * text, which loses nothing.
 */
char *
SchemaLocalTypeFor(RemoteColumn *col)
{
	bool		is_unsigned = type_name_has(col, "unsigned");

	if (col->declared_affinity)
		return local_type_for_affinity(col);
	if (col->clickhouse_type)
		return clickhouse_local_type(col->type_name);

	/*
	 * psqlODBC reports money as SQL_FLOAT, in the warehouse's lc_monetary
	 * text ('$1,234.50'), which no float takes: it is pulled cast to
	 * numeric (deparse.c), exactly, and kept as numeric.
	 */
	if (pg_strcasecmp(col->type_name, "money") == 0)
		return "numeric";

	/* psqlODBC reports booleans as characters by default (BoolsAsChar) */
	if (pg_strcasecmp(col->type_name, "bool") == 0 ||
		pg_strcasecmp(col->type_name, "boolean") == 0)
		return "boolean";

	switch (col->data_type)
	{
		case SQL_BIT:
			return "boolean";
		case SQL_TINYINT:
		case SQL_SMALLINT:
			return is_unsigned && col->data_type == SQL_SMALLINT ? "integer" : "smallint";
		case SQL_INTEGER:
			return is_unsigned ? "bigint" : "integer";
		case SQL_BIGINT:
			return is_unsigned ? "numeric(20,0)" : "bigint";
		case SQL_DECIMAL:
		case SQL_NUMERIC:
			return "numeric";
		case SQL_REAL:
			return "real";
		case SQL_FLOAT:
		case SQL_DOUBLE:
			return "double precision";
		case SQL_TYPE_DATE:
		case SQL_DATE:
			return "pg_catalog.date";
		case SQL_TYPE_TIME:
		case SQL_TIME:
			return "time";
		case SQL_TYPE_TIMESTAMP:
		case SQL_TIMESTAMP:
			if (type_name_has(col, "timestamptz") || type_name_has(col, "with time zone") ||
				type_name_has(col, "offset"))
				return "timestamp with time zone";
			return "timestamp";
		case SQL_GUID:
			return "pg_catalog.uuid";
		case SQL_BINARY:
		case SQL_VARBINARY:
		case SQL_LONGVARBINARY:
			return "pg_catalog.bytea";
		default:
			if (type_name_has(col, "uuid"))
				return "pg_catalog.uuid";
			return "pg_catalog.text";
	}
}

/*
 * Create the local copy from the warehouse's metadata, owned by the caller:
 * the key becomes the primary key, and the event column gets an index so
 * the hot-window refresh reads only the recent slice.
 */
Oid
SchemaCreateLocalTable(const char *schema, const char *relname, RemoteTable *rt,
					   List *columns, List *key_columns, const char *event_column,
					   List *type_overrides)
{
	StringInfoData sql;
	char	   *qname;
	ListCell   *lc;
	bool		first = true;
	Oid			relid;

	qname = schema ? quote_qualified_identifier(schema, relname)
		: pstrdup(quote_identifier(relname));

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (", qname);
	foreach(lc, rt->columns)
	{
		RemoteColumn *col = lfirst(lc);
		const char *type = SchemaLocalTypeFor(col);
		ListCell   *lc2;

		if (!ListHasName(columns, col->name))
			continue;
		foreach(lc2, type_overrides)
		{
			DefElem    *def = lfirst(lc2);

			if (strcmp(def->defname, col->name) == 0)
				type = strVal(def->arg);
		}
		appendStringInfo(&sql, "%s%s %s", first ? "" : ", ",
						 quote_identifier(col->name), type);
		first = false;
	}
	appendStringInfoString(&sql, ", PRIMARY KEY (");
	first = true;
	foreach(lc, key_columns)
	{
		appendStringInfo(&sql, "%s%s", first ? "" : ", ", quote_identifier(lfirst(lc)));
		first = false;
	}
	appendStringInfoString(&sql, "))");

	SPI_connect();
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create the local table: %s", sql.data);
	if (event_column && !ListHasName(key_columns, event_column))
	{
		char	   *idx = psprintf("CREATE INDEX ON %s (%s)", qname,
								   quote_identifier(event_column));

		if (SPI_execute(idx, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not index the local table: %s", idx);
	}
	SPI_finish();
	CommandCounterIncrement();

	relid = RangeVarGetRelid(makeRangeVar(schema ? pstrdup(schema) : NULL,
										  pstrdup(relname), -1),
							 NoLock, false);
	return relid;
}

/*
 * Whether a table has a valid, immediate unique index on exactly the given
 * columns (in any order), with no predicate and no expression: the index
 * an upsert by key, and a first load straight into the copy, rely on.
 */
static bool
has_unique_index(Relation rel, const AttrNumber *keyatts, int nkeys)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index idx;
		bool		covers = true;

		if (!HeapTupleIsValid(tup))
			continue;
		idx = (Form_pg_index) GETSTRUCT(tup);
		if (idx->indisunique && idx->indimmediate && idx->indisvalid &&
			idx->indnkeyatts == nkeys &&
			heap_attisnull(tup, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
		{
			for (int k = 0; k < nkeys && covers; k++)
			{
				bool		in_index = false;

				for (int j = 0; j < nkeys; j++)
					if (idx->indkey.values[j] == keyatts[k])
						in_index = true;
				covers = in_index;
			}
			if (covers)
				found = true;
		}
		ReleaseSysCache(tup);
	}
	list_free(indexes);
	return found;
}

/*
 * Whether a local table has a unique index on the key alone, so that a
 * row whose key it already holds cannot go in a second time.
 */
bool
SchemaHasKeyIndex(Oid relid, List *key_columns)
{
	Relation	rel = table_open(relid, AccessShareLock);
	AttrNumber	keyatts[INDEX_MAX_KEYS];
	int			nkeys = 0;
	ListCell   *lc;
	bool		found;

	foreach(lc, key_columns)
	{
		keyatts[nkeys] = get_attnum(relid, lfirst(lc));
		if (keyatts[nkeys] == InvalidAttrNumber || ++nkeys == INDEX_MAX_KEYS)
		{
			table_close(rel, AccessShareLock);
			return false;
		}
	}
	found = has_unique_index(rel, keyatts, nkeys);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Check that an existing local table can hold the copy: every synced
 * column exists, and a unique index covers exactly the key, so that the
 * upsert by key is well defined.
 */
void
SchemaCheckLocalTable(Oid relid, List *columns, List *key_columns)
{
	Relation	rel = table_open(relid, AccessShareLock);
	ListCell   *lc;
	bool		found = false;
	int			nkeys = list_length(key_columns);
	AttrNumber	keyatts[INDEX_MAX_KEYS];
	int			i = 0;

	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel))));

	foreach(lc, columns)
	{
		const char *name = lfirst(lc);

		if (get_attnum(relid, name) == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("local table \"%s\" has no column \"%s\"",
							RelationGetRelationName(rel), name),
					 errhint("Add the column, or drop the table and let add_table create it.")));
	}

	foreach(lc, key_columns)
		keyatts[i++] = get_attnum(relid, lfirst(lc));

	/*
	 * A partitioned table's unique indexes must hold its partition key: there
	 * the key plus the partition key will do (the upsert still matches on
	 * the key alone, and moves a row whose event date changed partition).
	 */
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		PartitionKey pkey = RelationGetPartitionKey(rel);

		for (int p = 0; p < pkey->partnatts; p++)
		{
			bool		listed = false;

			if (pkey->partattrs[p] == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("local table \"%s\" is partitioned by an expression",
								RelationGetRelationName(rel)),
						 errhint("Partition it by a column, such as the event column.")));
			for (int k = 0; k < i; k++)
				listed |= keyatts[k] == pkey->partattrs[p];
			if (!listed && i < INDEX_MAX_KEYS)
				keyatts[i++] = pkey->partattrs[p];
		}
		nkeys = i;
	}

	found = has_unique_index(rel, keyatts, nkeys);

	if (!found)
	{
		StringInfoData keys;

		initStringInfo(&keys);
		for (int k = 0; k < nkeys; k++)
			appendStringInfo(&keys, "%s%s", keys.len ? ", " : "",
							 quote_identifier(get_attname(relid, keyatts[k], false)));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("local table \"%s\" has no unique index on the key (%s)",
						RelationGetRelationName(rel), keys.data),
				 errhint("CREATE UNIQUE INDEX ON %s (%s);",
						 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
													RelationGetRelationName(rel)),
						 keys.data)));
	}
	table_close(rel, AccessShareLock);
}
