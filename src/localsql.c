/*-------------------------------------------------------------------------
 *
 * localsql.c
 *	  Every statement run on the copy and its history, as deparse.c builds
 *	  every statement sent to the warehouse: the pieces (the copy's quoted
 *	  name, column lists, the join on the key, the SET list of an upsert,
 *	  which version of a key is newer), the statements of a cycle, of the
 *	  history, of verify() and of the checks built from them, and running
 *	  them through SPI.
 *
 * Each statement is one function that builds it from named pieces with a
 * StringInfo, so that every statement names and compares things the same
 * way: identifiers quoted, operators by their schema (so that nothing on
 * the search_path can stand in for them), and every value a parameter
 * ($1, $2, ...), never part of the text.  Every statement run here is
 * logged at DEBUG1 ("treble_sync local SQL: ..."), and explain_cycle()
 * shows the same text (cycle.c's CycleExplain()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "localsql.h"

static const char *cursor_type(TableConfig *cfg);

/*
 * A local table's name, schema-qualified and quoted.  A registration
 * outlives its copy (and a copy its history table): a relation dropped
 * since is an error here, not a NULL name quoted.
 */
char *
LocalTableName(Oid relid)
{
	char	   *relname = get_rel_name(relid);
	char	   *nspname = relname ? get_namespace_name(get_rel_namespace(relid)) : NULL;

	if (relname == NULL || nspname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return quote_qualified_identifier(nspname, relname);
}

/* "a"."b" list of local column names, each prefixed with alias. */
char *
LocalColumnList(List *columns, const char *alias)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, columns)
		appendStringInfo(&buf, "%s%s%s%s", foreach_current_index(lc) ? ", " : "",
						 alias ? alias : "", alias ? "." : "",
						 quote_identifier(lfirst(lc)));
	return buf.data;
}

/*
 * OPERATOR(schema.name) comparing two values of a column of the copy: the
 * equality (TYPECACHE_EQ_OPR) or "greater than" (TYPECACHE_GT_OPR) of the
 * column type's default btree opclass, the one its unique index and ORDER
 * BY use, named by its own schema so that no operator on the search_path
 * can stand in for it.  For the built-in types that is pg_catalog's.  A
 * column the copy lacks gets pg_catalog's, and the statement then fails on
 * the missing column as before.
 */
char *
LocalColumnOperator(TableConfig *cfg, const char *column, int which)
{
	AttrNumber	attnum = get_attnum(cfg->local_relid, column);
	Oid			type;
	TypeCacheEntry *tc;
	Oid			opr;
	HeapTuple	tup;
	Form_pg_operator form;
	char	   *result;

	if (attnum == InvalidAttrNumber)
		return which == TYPECACHE_EQ_OPR ? "OPERATOR(pg_catalog.=)" : "OPERATOR(pg_catalog.>)";
	type = get_atttype(cfg->local_relid, attnum);
	tc = lookup_type_cache(type, which);
	opr = which == TYPECACHE_EQ_OPR ? tc->eq_opr : tc->gt_opr;
	if (!OidIsValid(opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("column \"%s\" of the copy of \"%s\" has type %s, which has no default %s",
						column, cfg->name, format_type_be(type),
						which == TYPECACHE_EQ_OPR ? "equality operator" : "ordering operator")));
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opr));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opr);
	form = (Form_pg_operator) GETSTRUCT(tup);
	result = psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(form->oprnamespace)),
					  NameStr(form->oprname));
	ReleaseSysCache(tup);
	return result;
}

/*
 * a.k1 = b.k1 AND a.k2 = b.k2 over the key columns, each = the equality of
 * the key column's type (see LocalColumnOperator()).
 */
char *
LocalKeyJoin(TableConfig *cfg, const char *a, const char *b)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, cfg->key_columns)
	{
		const char *k = quote_identifier(lfirst(lc));

		appendStringInfo(&buf, "%s%s.%s %s %s.%s",
						 foreach_current_index(lc) ? " AND " : "", a, k,
						 LocalColumnOperator(cfg, lfirst(lc), TYPECACHE_EQ_OPR), b, k);
	}
	return buf.data;
}

/*
 * "COALESCE(a.k, b.k) AS k, ..." for the key columns: the key of a row of
 * a full join of two relations on the key, whichever side has it.
 */
char *
LocalCoalescedColumns(List *columns, const char *a, const char *b)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, columns)
	{
		const char *k = quote_identifier(lfirst(lc));

		appendStringInfo(&buf, "%sCOALESCE(%s.%s, %s.%s) AS %s",
						 foreach_current_index(lc) ? ", " : "", a, k, b, k, k);
	}
	return buf.data;
}

/*
 * SQL that is true when version a of a key is newer than version b: a
 * greater cursor, then (on a tie, or without a cursor) a greater text of
 * the synced columns.  One rule for deduplication and both upserts, so the
 * outcome never depends on arrival order.
 */
char *
LocalNewerVersion(TableConfig *cfg, const char *a, const char *b)
{
	char	   *by_text = psprintf("ROW(%s)::pg_catalog.text OPERATOR(pg_catalog.>) ROW(%s)::pg_catalog.text",
								   LocalColumnList(cfg->columns, a),
								   LocalColumnList(cfg->columns, b));
	const char *cur;
	const char *gt;
	const char *eq;

	if (cfg->cursor_column == NULL)
		return by_text;
	cur = quote_identifier(cfg->cursor_column);
	gt = LocalColumnOperator(cfg, cfg->cursor_column, TYPECACHE_GT_OPR);
	eq = LocalColumnOperator(cfg, cfg->cursor_column, TYPECACHE_EQ_OPR);
	return psprintf("(%s.%s %s %s.%s OR (%s.%s %s %s.%s AND %s))",
					a, cur, gt, b, cur, a, cur, eq, b, cur, by_text);
}

/*
 * "c = alias.c, ..." over every synced column, key columns included: the
 * SET list of an upsert from alias (the staging row, or EXCLUDED).  A key
 * column is set too because a value equal under its type's equality may
 * still be written otherwise (numeric -1.50 and -1.5000, float8 0 and -0):
 * the rows are matched by that equality, and the copy must then hold the
 * warehouse's form, which is what its readers see and what verify()
 * compares.  Setting a key to an equal value moves no row in its unique
 * index, and an unchanged image still allows a HOT update.
 */
char *
LocalSetList(TableConfig *cfg, const char *alias)
{
	StringInfoData set;
	ListCell   *lc;

	initStringInfo(&set);
	foreach(lc, cfg->columns)
	{
		const char *c = lfirst(lc);

		appendStringInfo(&set, "%s%s = %s.%s", set.len ? ", " : "",
						 quote_identifier(c), alias, quote_identifier(c));
	}
	Assert(set.len > 0);
	return set.data;
}

/*
 * Run one statement on the copy (or its history) through SPI, connected,
 * with the current role's privileges; error unless it returns the SPI
 * code expected.  Returns the rows it processed.
 */
uint64
LocalRunSql(const char *sql, int nargs, Oid *types, Datum *values, int expected)
{
	return LocalRunSqlLimited(sql, nargs, types, values, expected, 0);
}

/*
 * Log a statement run on the copy at DEBUG1, in the stable form the
 * regression tests and explain_cycle() show: its text only, never a
 * parameter's value.  LocalRunSql() does it; a caller that runs a
 * statement otherwise (a prepared plan, parameters with NULLs) calls it.
 */
void
LocalLogSql(const char *sql)
{
	ereport(DEBUG1, (errmsg_internal("treble_sync local SQL: %s", sql)));
}

/*
 * LocalRunSql() returning at most limit rows (0: all).  Every statement a
 * cycle runs on the copy passes here, and is logged at DEBUG1 in a stable
 * form ("treble_sync local SQL: ..."), as the warehouse's are by odbc.c
 * ("treble_sync remote SQL: ..."): the text only, never a parameter's
 * value.
 */
uint64
LocalRunSqlLimited(const char *sql, int nargs, Oid *types, Datum *values, int expected,
				   long limit)
{
	int			rc;

	Assert(sql != NULL && limit >= 0);
	LocalLogSql(sql);
	rc = SPI_execute_with_args(sql, nargs, types, values, NULL, false, limit);
	if (rc != expected)
		elog(ERROR, "treble_sync statement failed (SPI code %d): %s", rc, sql);
	return SPI_processed;
}

/*
 * A key of the copy's type as the quarantine writes it (stage.c's
 * line_key(): the key columns' text, in the order of the synced columns,
 * ", " between), as an SQL expression over alias.  Exact for the integer
 * and text keys the key-only window check takes; for another type the text
 * may differ from the warehouse's, and a quarantined key is then pulled
 * again and not resolved, which costs a pull and loses nothing.
 */
char *
LocalQuarantineKey(TableConfig *cfg, const char *alias)
{
	StringInfoData expr;
	ListCell   *lc;

	initStringInfo(&expr);
	appendStringInfoString(&expr, "pg_catalog.concat_ws(', '");
	foreach(lc, cfg->columns)
		if (ListHasName(cfg->key_columns, lfirst(lc)))
			appendStringInfo(&expr, ", CAST(%s.%s AS pg_catalog.text)", alias,
							 quote_identifier(lfirst(lc)));
	appendStringInfoChar(&expr, ')');
	return expr.data;
}

/*
 * The statements a cycle runs on the copy, each built by one function
 * below from named pieces, so that a reader sees every statement whole in
 * one place, and explain_cycle() shows the same text the cycle runs.
 * Values are parameters ($1, $2, ...), never part of the text.
 */

/* One row if the copy holds any: count(*) of at most one row. */
char *
LocalCopyIsEmptySql(TableConfig *cfg)
{
	return psprintf("SELECT pg_catalog.count(*) FROM (SELECT 1 FROM %s LIMIT 1) e",
					LocalTableName(cfg->local_relid));
}

/*
 * The copy's newest cursor, as the catalog's text reads it (a timestamp in
 * the session's zone, the warehouse's during a cycle or verify), or NULL
 * if it has no row with one.
 */
char *
LocalNewestCursorSql(TableConfig *cfg)
{
	return psprintf("SELECT CAST(pg_catalog.max(CAST(t.%s AS %s)) AS pg_catalog.text) FROM %s t",
					quote_identifier(cfg->cursor_column), cursor_type(cfg),
					LocalTableName(cfg->local_relid));
}

/*
 * The latest event of the copy's rows whose cursor is at most $1 (text), as a
 * timestamp, or NULL: where an integer cursor's hot window is counted from
 * when the warehouse has no event left to count it from.
 */
char *
LocalNewestEventSql(TableConfig *cfg)
{
	return psprintf("SELECT CAST(pg_catalog.max(t.%s) AS pg_catalog.timestamp) FROM %s t"
					" WHERE CAST(t.%s AS %s) OPERATOR(pg_catalog.<=) CAST($1 AS %s)",
					quote_identifier(cfg->event_column), LocalTableName(cfg->local_relid),
					quote_identifier(cfg->cursor_column), cursor_type(cfg), cursor_type(cfg));
}

/*
 * The copy's rows, all of them or (in_window) those whose event lies in
 * [$1, $2): what the mass-delete guard weighs a deletion against.
 */
char *
LocalCountSql(TableConfig *cfg, bool in_window)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT pg_catalog.count(*) FROM %s t",
					 LocalTableName(cfg->local_relid));
	if (in_window)
	{
		const char *ev = quote_identifier(cfg->event_column);

		Assert(cfg->event_column != NULL);
		appendStringInfo(&sql, " WHERE t.%s OPERATOR(pg_catalog.>=) $1"
						 " AND t.%s OPERATOR(pg_catalog.<) $2", ev, ev);
	}
	return sql.data;
}

/* Gathering the copy's statistics. */
char *
LocalAnalyzeSql(TableConfig *cfg)
{
	return psprintf("ANALYZE %s", LocalTableName(cfg->local_relid));
}

/* An index of the staged rows by key. */
char *
LocalStageIndexSql(TableConfig *cfg)
{
	return psprintf("CREATE INDEX ON " STAGE_TABLE " (%s)",
					LocalColumnList(cfg->key_columns, NULL));
}

/* One row if a key is staged more than once. */
char *
LocalStageRepeatedKeySql(TableConfig *cfg)
{
	return psprintf("SELECT pg_catalog.count(*) FROM (SELECT 1"
					" FROM " STAGE_TABLE " GROUP BY %s"
					" HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1 LIMIT 1) d",
					LocalColumnList(cfg->key_columns, NULL));
}

/*
 * Deleting a staged row s when another staged row t of its key is newer
 * (LocalNewerVersion()), or the same text and later in the table.
 */
char *
LocalStageDedupSql(TableConfig *cfg)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "DELETE FROM " STAGE_TABLE " s WHERE EXISTS (SELECT 1 FROM " STAGE_TABLE " t");
	appendStringInfo(&sql, " WHERE %s", LocalKeyJoin(cfg, "t", "s"));
	appendStringInfoString(&sql, " AND t.ctid OPERATOR(pg_catalog.<>) s.ctid");
	appendStringInfo(&sql, " AND (%s", LocalNewerVersion(cfg, "t", "s"));
	appendStringInfo(&sql, " OR (ROW(%s)::pg_catalog.text OPERATOR(pg_catalog.=) ROW(%s)::pg_catalog.text",
					 LocalColumnList(cfg->columns, "t"), LocalColumnList(cfg->columns, "s"));
	appendStringInfoString(&sql, "  AND t.ctid OPERATOR(pg_catalog.>) s.ctid)))");
	return sql.data;
}

/*
 * The UPDATE of an upsert: the copy's rows t whose key is staged (s), and
 * whose image differs, take the staged values, as rule allows.  The
 * versioned and unconditional forms take the window's bounds as $1 and $2
 * (the unconditional one only so that both have the same parameters), and
 * read the staged rows in key order (OFFSET 0 keeps the order through the
 * join): a copy loaded in key order is then written page after page.
 */
char *
LocalUpsertUpdateSql(TableConfig *cfg, LocalUpdateRule rule)
{
	const char *qlocal = LocalTableName(cfg->local_relid);
	const char *set = LocalSetList(cfg, "s");
	const char *key_join = LocalKeyJoin(cfg, "t", "s");
	StringInfoData sql;

	initStringInfo(&sql);
	if (rule == LOCAL_UPDATE_NEWER)
	{
		appendStringInfo(&sql, "UPDATE %s t SET %s FROM " STAGE_TABLE " s", qlocal, set);
		appendStringInfo(&sql, " WHERE %s AND %s", key_join, LocalNewerVersion(cfg, "s", "t"));
		return sql.data;
	}
	appendStringInfo(&sql, "UPDATE %s t SET %s", qlocal, set);
	appendStringInfo(&sql, " FROM (SELECT * FROM " STAGE_TABLE " ORDER BY %s OFFSET 0) s",
					 LocalColumnList(cfg->key_columns, NULL));
	appendStringInfo(&sql, " WHERE %s", key_join);
	appendStringInfo(&sql, " AND NOT pg_catalog.record_image_eq(ROW(%s), ROW(%s))",
					 LocalColumnList(cfg->columns, "t"), LocalColumnList(cfg->columns, "s"));
	if (rule == LOCAL_UPDATE_VERSIONED && cfg->event_column)
	{
		const char *ev = quote_identifier(cfg->event_column);

		appendStringInfo(&sql, " AND (%s", LocalNewerVersion(cfg, "s", "t"));
		appendStringInfo(&sql, " OR (t.%s OPERATOR(pg_catalog.>=) $1 AND t.%s OPERATOR(pg_catalog.<) $2))",
						 ev, ev);
	}
	else
		appendStringInfoString(&sql, " AND $1 IS NOT NULL AND $2 IS NOT NULL");	/* uses both */
	return sql.data;
}

/*
 * The INSERT of an upsert, as rule says.  For the keys the copy lacks, the
 * unique index on the key says which those are (ON CONFLICT); a
 * partitioned copy's unique index also holds the partition key, so there
 * it takes an anti-join.  New keys go in in key order, so they mostly land
 * at the index's end.
 */
char *
LocalUpsertInsertSql(TableConfig *cfg, LocalInsertRule rule)
{
	const char *qlocal = LocalTableName(cfg->local_relid);
	const char *keys = LocalColumnList(cfg->key_columns, NULL);
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s AS t (%s)", qlocal, LocalColumnList(cfg->columns, NULL));
	appendStringInfo(&sql, " SELECT %s FROM " STAGE_TABLE " s", LocalColumnList(cfg->columns, "s"));
	if (rule == LOCAL_INSERT_ALL)
		return sql.data;
	if (rule == LOCAL_INSERT_ON_CONFLICT)
	{
		appendStringInfo(&sql, " ON CONFLICT (%s) DO NOTHING", keys);
		return sql.data;
	}
	if (get_rel_relkind(cfg->local_relid) == RELKIND_PARTITIONED_TABLE)
	{
		appendStringInfo(&sql, " WHERE NOT EXISTS (SELECT 1 FROM %s t WHERE %s)",
						 qlocal, LocalKeyJoin(cfg, "t", "s"));
		appendStringInfo(&sql, " ORDER BY %s", LocalColumnList(cfg->key_columns, "s"));
	}
	else
	{
		appendStringInfo(&sql, " ORDER BY %s", LocalColumnList(cfg->key_columns, "s"));
		appendStringInfo(&sql, " ON CONFLICT (%s) DO NOTHING", keys);
	}
	return sql.data;
}

/*
 * The upsert of a chunk of a first load, which other workers load beside:
 * one INSERT ... ON CONFLICT, which waits for a concurrent insert of the
 * same key instead of failing; the newer version wins.
 */
char *
LocalUpsertConcurrentSql(TableConfig *cfg)
{
	const char *set = LocalSetList(cfg, "EXCLUDED");
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s AS t (%s)", LocalTableName(cfg->local_relid),
					 LocalColumnList(cfg->columns, NULL));
	appendStringInfo(&sql, " SELECT %s FROM " STAGE_TABLE " s", LocalColumnList(cfg->columns, "s"));
	appendStringInfo(&sql, " ON CONFLICT (%s) DO ", LocalColumnList(cfg->key_columns, NULL));
	if (set[0] == '\0')
	{
		appendStringInfoString(&sql, "NOTHING");
		return sql.data;
	}
	appendStringInfo(&sql, "UPDATE SET %s", set);
	appendStringInfo(&sql, " WHERE NOT pg_catalog.record_image_eq(ROW(%s), ROW(%s))",
					 LocalColumnList(cfg->columns, "t"), LocalColumnList(cfg->columns, "EXCLUDED"));
	appendStringInfo(&sql, " AND %s", LocalNewerVersion(cfg, "EXCLUDED", "t"));
	return sql.data;
}

/*
 * The refresh of the hot window: delete the copy's rows t whose event lies
 * in [$1, $2) that no staged row of the window has, and whose key ($4, as
 * the quarantine writes keys) was not set aside as bad by this cycle; with
 * scope, also none of WINDOW_KEYS_TABLE, or only the keys in $3.
 */
char *
LocalRefreshWindowSql(TableConfig *cfg, LocalRefreshScope scope)
{
	const char *ev = quote_identifier(cfg->event_column);
	StringInfoData sql;

	Assert(cfg->event_column != NULL);
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s t WHERE ", LocalTableName(cfg->local_relid));
	if (scope == LOCAL_REFRESH_GONE_KEYS)
	{
		const char *key = linitial(cfg->key_columns);

		Assert(list_length(cfg->key_columns) == 1);
		appendStringInfo(&sql, "t.%s %s ANY ($3) AND ", quote_identifier(key),
						 LocalColumnOperator(cfg, key, TYPECACHE_EQ_OPR));
	}
	appendStringInfo(&sql, "t.%s OPERATOR(pg_catalog.>=) $1 AND t.%s OPERATOR(pg_catalog.<) $2", ev, ev);
	appendStringInfo(&sql, " AND NOT EXISTS (SELECT 1 FROM " STAGE_TABLE " s WHERE %s",
					 LocalKeyJoin(cfg, "t", "s"));
	appendStringInfo(&sql, " AND s.%s OPERATOR(pg_catalog.>=) $1 AND s.%s OPERATOR(pg_catalog.<) $2)",
					 ev, ev);
	appendStringInfo(&sql, " AND NOT %s OPERATOR(pg_catalog.=) ANY ($4)",
					 LocalQuarantineKey(cfg, "t"));
	if (scope == LOCAL_REFRESH_WINDOW_KEYS)
		appendStringInfo(&sql, " AND NOT EXISTS (SELECT 1 FROM " WINDOW_KEYS_TABLE " w WHERE %s)",
						 LocalKeyJoin(cfg, "t", "w"));
	return sql.data;
}

/* The refresh of a full pull: delete every copy row whose key is not staged. */
char *
LocalRefreshAllSql(TableConfig *cfg)
{
	return psprintf("DELETE FROM %s t WHERE NOT EXISTS (SELECT 1 FROM " STAGE_TABLE " s WHERE %s)",
					LocalTableName(cfg->local_relid), LocalKeyJoin(cfg, "t", "s"));
}

/* The table of the window's keys: columns shaped like the copy's, no rows. */
char *
LocalWindowKeysCreateSql(TableConfig *cfg, List *key_columns)
{
	return psprintf("CREATE TEMPORARY TABLE " WINDOW_KEYS_NAME " ON COMMIT DROP"
					" AS SELECT %s FROM %s WITH NO DATA",
					LocalColumnList(key_columns, NULL), LocalTableName(cfg->local_relid));
}

/*
 * The keys whose rows a key-only check of the hot window pulls whole (see
 * "Checking the hot window" in docs/design.md), and whether each is gone
 * from the warehouse's window: the window's keys w with their newest
 * cursor and the copy's window rows c, neither holding a key the delta
 * brought, matched by a full join.  A key on one side only, or with
 * another cursor on each, differs; a window key the copy holds outside
 * the window is probed by key (OFFSET 0 keeps it a probe), and differs
 * unless the copy's version is that one or newer.  $1, $2: the window;
 * $3: the quarantined versions ("key<newline>cursor", with quarantined);
 * $4: the keys this cycle set aside as bad.
 */
char *
LocalWindowDifferencesSql(TableConfig *cfg, bool quarantined)
{
	const char *qlocal = LocalTableName(cfg->local_relid);
	const char *keys = LocalColumnList(cfg->key_columns, NULL);
	const char *cur = quote_identifier(cfg->cursor_column);
	const char *ev = quote_identifier(cfg->event_column);
	const char *gt = LocalColumnOperator(cfg, cfg->cursor_column, TYPECACHE_GT_OPR);
	const char *eq = LocalColumnOperator(cfg, cfg->cursor_column, TYPECACHE_EQ_OPR);
	StringInfoData window_side;
	StringInfoData copy_side;
	StringInfoData sql;

	Assert(cfg->cursor_column != NULL && cfg->event_column != NULL);

	/* the window's keys, newest cursor each, without those the delta brought */
	initStringInfo(&window_side);
	appendStringInfo(&window_side, "SELECT %s, pg_catalog.max(%s) AS %s, true AS \"treble_sync hit\"",
					 keys, cur, cur);
	appendStringInfoString(&window_side, " FROM " WINDOW_KEYS_TABLE " w");
	appendStringInfo(&window_side, " WHERE NOT EXISTS (SELECT 1 FROM " STAGE_TABLE " s WHERE %s)",
					 LocalKeyJoin(cfg, "s", "w"));
	appendStringInfo(&window_side, " GROUP BY %s", keys);

	/* the copy's window rows, without those the delta brought or set aside */
	initStringInfo(&copy_side);
	appendStringInfo(&copy_side, "SELECT %s, t.%s, true AS \"treble_sync hit\" FROM %s t",
					 LocalColumnList(cfg->key_columns, "t"), cur, qlocal);
	appendStringInfo(&copy_side, " WHERE t.%s OPERATOR(pg_catalog.>=) $1 AND t.%s OPERATOR(pg_catalog.<) $2",
					 ev, ev);
	appendStringInfo(&copy_side, " AND NOT EXISTS (SELECT 1 FROM " STAGE_TABLE " s WHERE %s)",
					 LocalKeyJoin(cfg, "s", "t"));
	appendStringInfo(&copy_side, " AND NOT %s OPERATOR(pg_catalog.=) ANY ($4)",
					 LocalQuarantineKey(cfg, "t"));

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s, w.\"treble_sync hit\" IS NULL AS gone",
					 LocalCoalescedColumns(cfg->key_columns, "w", "c"));
	appendStringInfo(&sql, " FROM (%s) w FULL JOIN (%s) c", window_side.data, copy_side.data);
	appendStringInfo(&sql, " ON %s", LocalKeyJoin(cfg, "w", "c"));
	appendStringInfoString(&sql, " WHERE CASE WHEN w.\"treble_sync hit\" IS NULL THEN true");
	appendStringInfo(&sql, " WHEN c.\"treble_sync hit\" IS NOT NULL THEN NOT COALESCE(c.%s %s w.%s, false)",
					 cur, eq, cur);
	appendStringInfo(&sql, " ELSE NOT EXISTS (SELECT 1 FROM %s t WHERE %s", qlocal,
					 LocalKeyJoin(cfg, "t", "w"));
	appendStringInfo(&sql, " AND (t.%s %s w.%s OR t.%s %s w.%s) OFFSET 0) END",
					 cur, eq, cur, cur, gt, cur);

	if (quarantined)
	{
		/*
		 * A window key whose newest version the quarantine holds (same key,
		 * same cursor) is not pulled again.  The versions as
		 * "key<newline>cursor" (a key in COPY text has no raw newline),
		 * matched by = ANY over the array, which the planner hashes.
		 */
		char	   *version = psprintf("%s OPERATOR(pg_catalog.||) E'\\n' OPERATOR(pg_catalog.||) ",
									   LocalQuarantineKey(cfg, "w"));

		appendStringInfo(&sql, " AND NOT (w.\"treble_sync hit\" IS NOT NULL AND"
						 " (%sCAST(w.%s AS pg_catalog.text) OPERATOR(pg_catalog.=) ANY ($3)",
						 version, cur);
		if (cfg->cursor_kind != CURSOR_INTEGER)
			appendStringInfo(&sql, " OR %spg_catalog.to_char(w.%s, 'YYYY-MM-DD HH24:MI:SS.US')"
							 " OPERATOR(pg_catalog.=) ANY ($3)", version, cur);
		appendStringInfoString(&sql, "))");
	}
	return sql.data;
}

/*
 * The statements on a copy's history table (history.c): hist and copy are
 * the quoted names of the history table and of the copy, column lists are
 * LocalColumnList()'s.  The history's own columns are ts_valid_from,
 * ts_valid_to (cuts), ts_opened_by, ts_closed_by and ts_rewound_by (runs).
 */

/* The statements that make a history table beside its copy, in order. */
List *
LocalHistoryCreateSql(const char *hist, const char *copy, List *key_columns)
{
	List	   *sql = NIL;
	char	   *comment;

	sql = lappend(sql, psprintf("CREATE TABLE %s (LIKE %s)", hist, copy));
	sql = lappend(sql, psprintf("ALTER TABLE %s ADD COLUMN ts_valid_from pg_catalog.timestamptz NOT NULL,"
								" ADD COLUMN ts_valid_to pg_catalog.timestamptz,"
								" ADD COLUMN ts_opened_by pg_catalog.int8,"
								" ADD COLUMN ts_closed_by pg_catalog.int8,"
								" ADD COLUMN ts_rewound_by pg_catalog.int8", hist));
	sql = lappend(sql, psprintf("CREATE INDEX ON %s (%s)", hist, LocalColumnList(key_columns, NULL)));
	sql = lappend(sql, psprintf("CREATE INDEX ON %s (ts_valid_from)", hist));
	sql = lappend(sql, psprintf("CREATE INDEX ON %s (ts_valid_to)", hist));
	sql = lappend(sql, psprintf("CREATE INDEX ON %s (ts_valid_from) WHERE ts_rewound_by IS NOT NULL", hist));
	comment = psprintf("every version of the rows of %s kept by treble_sync:"
					   " valid from ts_valid_from to ts_valid_to (cuts), unless ts_rewound_by", copy);
	sql = lappend(sql, psprintf("COMMENT ON TABLE %s IS %s", hist, quote_literal_cstr(comment)));
	return sql;
}

/* The copy's rows as versions valid from $1. */
char *
LocalHistorySeedSql(const char *hist, const char *copy, const char *columns)
{
	return psprintf("INSERT INTO %s (%s, ts_valid_from) SELECT %s, $1 FROM %s",
					hist, columns, columns, copy);
}

/*
 * A statement trigger of a copy calling history_capture(), on event, with
 * the transition tables referencing names; or (create false) its DROP.
 */
char *
LocalHistoryTriggerSql(bool create, const char *trigger, const char *copy,
					   const char *event, const char *referencing)
{
	StringInfoData sql;

	initStringInfo(&sql);
	if (!create)
	{
		appendStringInfo(&sql, "DROP TRIGGER IF EXISTS %s ON %s", quote_identifier(trigger), copy);
		return sql.data;
	}
	appendStringInfo(&sql, "CREATE TRIGGER %s AFTER %s ON %s", quote_identifier(trigger), event, copy);
	appendStringInfo(&sql, " %s FOR EACH STATEMENT", referencing);
	appendStringInfoString(&sql, " EXECUTE FUNCTION treble_sync.history_capture()");
	return sql.data;
}

/*
 * Retention: the versions closed before $1, or (rewound) those set aside
 * by a rewind and opened before $1.
 */
char *
LocalHistoryExpireSql(const char *hist, bool rewound)
{
	if (rewound)
		return psprintf("DELETE FROM %s WHERE ts_rewound_by IS NOT NULL"
						" AND ts_valid_from OPERATOR(pg_catalog.<) $1", hist);
	return psprintf("DELETE FROM %s WHERE ts_valid_to OPERATOR(pg_catalog.<) $1", hist);
}

/*
 * A column of the copy that the history table lacks (add), or has with
 * another type; typname is the copy's type, schema-qualified.
 */
char *
LocalHistoryColumnSql(const char *hist, const char *column, const char *typname, bool add)
{
	const char *col = quote_identifier(column);

	if (add)
		return psprintf("ALTER TABLE %s ADD COLUMN %s %s", hist, col, typname);
	return psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s USING %s::%s", hist, col, typname,
					col, typname);
}

/*
 * "h.ctid = ANY (...)": the open versions in hist of the keys of the rows
 * of transition table src (and cond over them, as v), read key by key:
 * a LATERAL subquery that the planner can neither flatten nor push
 * conditions into (OFFSET 0) reads the versions of each changed key
 * through the history's key index alone, and the open ones are then
 * found by ctid.  Planned as a join, the planner (which has no statistics
 * of the transition table) would read every open version of the history
 * for each changed row.  ONLY: a ctid names a row of one table, not of a
 * table's children.
 */
static char *
history_open_versions_of(TableConfig *cfg, const char *hist, const char *src, const char *cond)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "h.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT v.ctid FROM %s o,", src);
	appendStringInfoString(&sql, " LATERAL (SELECT h2.ctid, h2.ts_valid_to, h2.ts_rewound_by, h2.ts_opened_by");
	appendStringInfo(&sql, " FROM ONLY %s h2 WHERE %s OFFSET 0) v", hist, LocalKeyJoin(cfg, "h2", "o"));
	appendStringInfo(&sql, " WHERE v.ts_valid_to IS NULL AND v.ts_rewound_by IS NULL%s))", cond);
	return sql.data;
}

/*
 * Closing the open versions of the keys in transition table src (NULL:
 * of every key) at cut $1 by run $2; or (drop_own) deleting those run $2
 * opened itself.  With src, the only condition is on ctid: a TID scan.
 */
char *
LocalHistoryCloseSql(TableConfig *cfg, const char *hist, const char *src, bool drop_own)
{
	const char *open = "h.ts_valid_to IS NULL AND h.ts_rewound_by IS NULL";
	const char *own = " AND v.ts_opened_by OPERATOR(pg_catalog.=) $2";
	StringInfoData sql;

	initStringInfo(&sql);
	if (drop_own)
		appendStringInfo(&sql, "DELETE FROM ONLY %s h WHERE ", hist);
	else
		appendStringInfo(&sql, "UPDATE ONLY %s h SET ts_valid_to = $1, ts_closed_by = $2 WHERE ", hist);
	if (src)
		appendStringInfoString(&sql, history_open_versions_of(cfg, hist, src, drop_own ? own : ""));
	else
	{
		appendStringInfoString(&sql, open);
		if (drop_own)
			appendStringInfoString(&sql, " AND h.ts_opened_by OPERATOR(pg_catalog.=) $2");
	}
	return sql.data;
}

/* The rows of transition table src as versions opened at $1 by run $2. */
char *
LocalHistoryRecordSql(const char *hist, const char *src, const char *columns)
{
	return psprintf("INSERT INTO %s (%s, ts_valid_from, ts_opened_by) SELECT %s, $1, $2 FROM %s",
					hist, columns, columns, quote_identifier(src));
}

/* The versions of history alias h that were in the copy at cut $param. */
static char *
history_valid_at(const char *h, int param)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "%s.ts_rewound_by IS NULL", h);
	appendStringInfo(&sql, " AND %s.ts_valid_from OPERATOR(pg_catalog.<=) $%d", h, param);
	appendStringInfo(&sql, " AND (%s.ts_valid_to IS NULL OR %s.ts_valid_to OPERATOR(pg_catalog.>) $%d)",
					 h, h, param);
	return sql.data;
}

/*
 * as_of()'s query: the copy's rows at cut $1; row is the copy's columns
 * read from history alias h, with the copy's types.
 */
char *
LocalHistoryAsOfSql(const char *hist, const char *row)
{
	return psprintf("SELECT %s FROM %s h WHERE %s", row, hist, history_valid_at("h", 1));
}

/*
 * changes()'s query: the keys with a version opened or closed between
 * cuts $1 and $2, each as it was at both (rows of copy_type): inserted,
 * deleted, or updated if the two rows differ by binary image.
 */
char *
LocalHistoryChangesSql(TableConfig *cfg, const char *hist, const char *row, const char *copy_type)
{
	const char *keys = LocalColumnList(cfg->key_columns, "h");
	StringInfoData touched;
	StringInfoData sql;

	initStringInfo(&touched);
	appendStringInfo(&touched, "SELECT DISTINCT %s FROM %s h WHERE h.ts_rewound_by IS NULL", keys, hist);
	appendStringInfoString(&touched, " AND ((h.ts_valid_from OPERATOR(pg_catalog.>) $1"
						   " AND h.ts_valid_from OPERATOR(pg_catalog.<=) $2)");
	appendStringInfoString(&touched, " OR (h.ts_valid_to OPERATOR(pg_catalog.>) $1"
						   " AND h.ts_valid_to OPERATOR(pg_catalog.<=) $2))");

	initStringInfo(&sql);
	appendStringInfo(&sql, "WITH touched AS (%s),", touched.data);
	for (int at = 1; at <= 2; at++)
	{
		appendStringInfo(&sql, " %s AS (SELECT %s, ROW(%s)::%s AS r", at == 1 ? "a" : "b", keys, row, copy_type);
		appendStringInfo(&sql, " FROM %s h WHERE %s", hist, history_valid_at("h", at));
		appendStringInfo(&sql, " AND EXISTS (SELECT 1 FROM touched t WHERE %s))%s",
						 LocalKeyJoin(cfg, "t", "h"), at == 1 ? "," : "");
	}
	appendStringInfoString(&sql, " SELECT CASE WHEN a.r IS NULL THEN 'insert' WHEN b.r IS NULL THEN 'delete'"
						   " ELSE 'update' END, a.r, b.r");
	appendStringInfo(&sql, " FROM a FULL JOIN b ON %s", LocalKeyJoin(cfg, "a", "b"));
	appendStringInfoString(&sql, " WHERE a.r IS NULL OR b.r IS NULL OR NOT (a.r OPERATOR(pg_catalog.*=) b.r)");
	return sql.data;
}

/* The latest cut at or before $1 at which the history recorded a change. */
char *
LocalHistoryLatestChangeSql(const char *hist)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT GREATEST(");
	appendStringInfo(&sql, "(SELECT pg_catalog.max(ts_valid_from) FROM %s WHERE ts_rewound_by IS NULL"
					 " AND ts_valid_from OPERATOR(pg_catalog.<=) $1),", hist);
	appendStringInfo(&sql, "(SELECT pg_catalog.max(ts_valid_to) FROM %s WHERE ts_rewound_by IS NULL"
					 " AND ts_valid_to OPERATOR(pg_catalog.<=) $1))", hist);
	return sql.data;
}

/*
 * The steps of a rewind to cut $1 by run $2, in order (see history.c's
 * rewind_copy()): keep a set-aside copy of each version closed after $1
 * as it closed; set aside the versions opened after $1; open again those
 * closed after it; delete the copy's rows c of the keys set aside; insert
 * the open versions of those keys.  data: the history's copy columns;
 * insertable: the copy's columns an INSERT can write.
 */
List *
LocalHistoryRewindSql(TableConfig *cfg, const char *hist, const char *copy, const char *data,
					  List *insertable)
{
	List	   *sql = NIL;
	StringInfoData set_aside;
	StringInfoData step;

	initStringInfo(&step);
	appendStringInfo(&step, "INSERT INTO %s (%s, ts_valid_from, ts_valid_to, ts_opened_by, ts_closed_by,"
					 " ts_rewound_by)", hist, data);
	appendStringInfo(&step, " SELECT %s, ts_valid_from, ts_valid_to, ts_opened_by, ts_closed_by, $2", data);
	appendStringInfo(&step, " FROM %s WHERE ts_rewound_by IS NULL AND ts_valid_to OPERATOR(pg_catalog.>) $1"
					 " AND ts_valid_from OPERATOR(pg_catalog.<=) $1", hist);
	sql = lappend(sql, step.data);
	sql = lappend(sql, psprintf("UPDATE %s SET ts_rewound_by = $2 WHERE ts_rewound_by IS NULL"
								" AND ts_valid_from OPERATOR(pg_catalog.>) $1", hist));
	sql = lappend(sql, psprintf("UPDATE %s SET ts_valid_to = NULL, ts_closed_by = NULL"
								" WHERE ts_rewound_by IS NULL AND ts_valid_to OPERATOR(pg_catalog.>) $1", hist));

	initStringInfo(&set_aside);
	appendStringInfo(&set_aside, "EXISTS (SELECT 1 FROM %s r WHERE r.ts_rewound_by OPERATOR(pg_catalog.=) $2"
					 " AND %s)", hist, LocalKeyJoin(cfg, "r", "c"));
	sql = lappend(sql, psprintf("DELETE FROM %s c WHERE %s", copy, set_aside.data));
	initStringInfo(&step);
	appendStringInfo(&step, "INSERT INTO %s (%s)", copy, LocalColumnList(insertable, NULL));
	appendStringInfo(&step, " SELECT %s FROM %s c", LocalColumnList(insertable, "c"), hist);
	appendStringInfo(&step, " WHERE c.ts_valid_to IS NULL AND c.ts_rewound_by IS NULL AND %s", set_aside.data);
	sql = lappend(sql, step.data);
	return sql;
}

/*
 * verify()'s statements on the copy (verify.c).  daycol is the day column
 * compared; $1 is the cut as text, cast to the cursor's type, and $2 (with
 * have_since) the first day compared.
 */

/* The cursor's SQL type, for the cast of the cut ($1). */
static const char *
cursor_type(TableConfig *cfg)
{
	return cfg->cursor_kind == CURSOR_INTEGER ? "bigint" : "timestamp";
}

/*
 * The copy's figures per day at the cut: its rows, its greatest cursor
 * and, with checksum (an expression over the copy's columns, deparse.c's),
 * their sum.
 */
char *
LocalVerifyDaysSql(TableConfig *cfg, const char *daycol, const char *checksum, bool have_since)
{
	const char *day = quote_identifier(daycol);
	const char *cur = quote_identifier(cfg->cursor_column);
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT CAST(%s AS pg_catalog.date), pg_catalog.count(*),"
					 " pg_catalog.max(%s)::pg_catalog.text", day, cur);
	if (checksum)
		appendStringInfo(&sql, ", pg_catalog.sum(%s)::pg_catalog.text", checksum);
	appendStringInfo(&sql, " FROM %s", LocalTableName(cfg->local_relid));
	appendStringInfo(&sql, " WHERE %s OPERATOR(pg_catalog.<=) CAST($1 AS %s)", cur, cursor_type(cfg));
	if (have_since)
		appendStringInfo(&sql, " AND %s OPERATOR(pg_catalog.>=) $2", day);
	appendStringInfoString(&sql, " GROUP BY 1");
	return sql.data;
}

/* The warehouse's figures per day, from its keys and cursors staged. */
char *
LocalVerifyStagedDaysSql(TableConfig *cfg, const char *daycol)
{
	return psprintf("SELECT CAST(%s AS pg_catalog.date), pg_catalog.count(*),"
					" pg_catalog.max(%s)::pg_catalog.text FROM " STAGE_TABLE " GROUP BY 1",
					quote_identifier(daycol), quote_identifier(cfg->cursor_column));
}

/*
 * The days where a key is on one side only (the staged warehouse keys s,
 * the copy's t at the cut), or has another cursor or day on each.
 */
char *
LocalVerifyKeyDifferencesSql(TableConfig *cfg, const char *daycol, bool have_since)
{
	const char *day = quote_identifier(daycol);
	const char *cur = quote_identifier(cfg->cursor_column);
	const char *qlocal = LocalTableName(cfg->local_relid);
	StringInfoData same;
	StringInfoData sql;

	/* t and s are the same version of a key: its cursor and day */
	initStringInfo(&same);
	appendStringInfo(&same, "%s AND t.%s OPERATOR(pg_catalog.=) s.%s", LocalKeyJoin(cfg, "t", "s"), cur, cur);
	appendStringInfo(&same, " AND (CAST(t.%s AS pg_catalog.date) OPERATOR(pg_catalog.=) CAST(s.%s AS pg_catalog.date)",
					 day, day);
	appendStringInfo(&same, " OR (t.%s IS NULL AND s.%s IS NULL))", day, day);

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT d FROM (SELECT CAST(s.%s AS pg_catalog.date) AS d FROM " STAGE_TABLE " s", day);
	appendStringInfo(&sql, " WHERE NOT EXISTS (SELECT 1 FROM %s t WHERE %s)", qlocal, same.data);
	appendStringInfo(&sql, " UNION SELECT CAST(t.%s AS pg_catalog.date) FROM %s t", day, qlocal);
	appendStringInfo(&sql, " WHERE t.%s OPERATOR(pg_catalog.<=) CAST($1 AS %s)", cur, cursor_type(cfg));
	if (have_since)
		appendStringInfo(&sql, " AND t.%s OPERATOR(pg_catalog.>=) $2", day);
	appendStringInfo(&sql, " AND NOT EXISTS (SELECT 1 FROM " STAGE_TABLE " s WHERE %s)) x", same.data);
	return sql.data;
}

/*
 * The quality checks' statements (checks.c): every check of table $1, as
 * the table a 'references' check reads (NULL for a check of another kind),
 * and every check of table $1 run on the cycle's result (watermark $2,
 * rows changed $3), summed up.
 */
const char *
LocalChecksReferencedSql(void)
{
	return "SELECT CASE WHEN c.kind OPERATOR(pg_catalog.=) 'references'"
		" THEN c.ref_table::pg_catalog.oid END FROM treble_sync.checks c"
		" WHERE c.table_id OPERATOR(pg_catalog.=) $1 ORDER BY c.check_id";
}

const char *
LocalChecksRunSql(void)
{
	return "SELECT pg_catalog.jsonb_agg(r)::pg_catalog.text,"
		" pg_catalog.string_agg(r.kind OPERATOR(pg_catalog.||) ' check ' OPERATOR(pg_catalog.||) r.check_id"
		"  OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) r.observed, '; ')"
		"  FILTER (WHERE NOT r.passed AND r.severity OPERATOR(pg_catalog.=) 'error'),"
		" pg_catalog.string_agg(r.kind OPERATOR(pg_catalog.||) ' check ' OPERATOR(pg_catalog.||) r.check_id"
		"  OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) r.observed, '; ')"
		"  FILTER (WHERE NOT r.passed AND r.severity OPERATOR(pg_catalog.=) 'warn')"
		" FROM treble_sync.run_checks($1, $2, $3) r";
}
