/*-------------------------------------------------------------------------
 *
 * localsql.c
 *	  Pieces of the SQL run on the copy: its quoted name, column lists, the
 *	  join on the key, the SET list of an upsert, which version of a key
 *	  is newer.
 *
 * Each piece is built once here so that every statement on the copy (the
 * cycle's upserts and refreshes, drift's ALTERs, verify()'s aggregates)
 * names and compares things the same way: operators by their schema, so
 * that nothing on the search_path can stand in for them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_operator.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "localsql.h"

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
	int			rc = SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0);

	if (rc != expected)
		elog(ERROR, "treble_sync statement failed (SPI code %d): %s", rc, sql);
	return SPI_processed;
}
