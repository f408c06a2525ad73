/*-------------------------------------------------------------------------
 *
 * stage.c
 *	  Streaming rows from the warehouse into a staging table.
 *
 * The staging table is a temporary table with exactly the synced columns
 * of the local copy (same types, same typmods), dropped at commit, so a
 * crash leaves nothing behind.  Rows go in through PostgreSQL's own COPY
 * machinery: the ODBC result is turned into COPY text on the fly by a
 * data-source callback, so type input, multi-insert batching and encoding
 * conversion are COPY's, and no value is ever spliced into SQL.  Memory
 * holds one row at a time, whatever the size of the pull.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/copy.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "treble_sync.h"

#define STAGE_TABLE_NAME "treble_sync_stage"

/*
 * State of the COPY data-source callback.  COPY's callback takes no
 * argument, so it lives in a static; only one load runs per process.
 */
typedef struct StageFeed
{
	OdbcConn   *conn;
	SQLHSTMT	stmt;
	TableConfig *cfg;
	CycleResult *result;
	int			ncols;
	bool	   *is_binary;		/* fetch as bytes, emit as \x hex */
	bool	   *is_key;			/* a NULL here fails the cycle */
	char	  **names;
	StringInfoData line;		/* the current row as a COPY text line */
	StringInfoData value;		/* scratch for one value */
	int			line_pos;		/* bytes of line already handed to COPY */
	bool		eof;
} StageFeed;

static StageFeed *feed = NULL;

/*
 * Create the staging table for a cycle: the synced columns of the local
 * table, same types, no rows, no constraints, gone at commit.
 */
Oid
StageCreate(TableConfig *cfg)
{
	StringInfoData sql;
	ListCell   *lc;
	Oid			relid;
	char	   *local_schema = get_namespace_name(get_rel_namespace(cfg->local_relid));
	char	   *local_name = get_rel_name(cfg->local_relid);

	if (local_name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the local table of \"%s\" no longer exists", cfg->name),
				 errhint("Create it again, or register the table again with treble_sync.add_table().")));

	initStringInfo(&sql);
	appendStringInfoString(&sql, "CREATE TEMPORARY TABLE " STAGE_TABLE_NAME " ON COMMIT DROP AS SELECT ");
	foreach(lc, cfg->columns)
		appendStringInfo(&sql, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(lfirst(lc)));
	appendStringInfo(&sql, " FROM %s WITH NO DATA",
					 quote_qualified_identifier(local_schema, local_name));

	SPI_connect();
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create the staging table: %s", sql.data);
	SPI_finish();
	CommandCounterIncrement();

	relid = get_relname_relid(STAGE_TABLE_NAME, LookupCreationNamespace("pg_temp"));
	if (!OidIsValid(relid))
		elog(ERROR, "staging table was not created");
	return relid;
}

/* Append a value to a COPY text line, escaping what COPY text requires. */
static void
append_copy_escaped(StringInfo line, const char *s, int len)
{
	for (int i = 0; i < len; i++)
	{
		char		c = s[i];

		switch (c)
		{
			case '\\':
				appendBinaryStringInfo(line, "\\\\", 2);
				break;
			case '\n':
				appendBinaryStringInfo(line, "\\n", 2);
				break;
			case '\r':
				appendBinaryStringInfo(line, "\\r", 2);
				break;
			case '\t':
				appendBinaryStringInfo(line, "\\t", 2);
				break;
			default:
				appendStringInfoChar(line, c);
		}
	}
}

/*
 * Fetch the next warehouse row into feed->line as one COPY text line.
 * Returns false at the end of the result.
 */
static bool
stage_next_row(void)
{
	CHECK_FOR_INTERRUPTS();

	if (!OdbcFetch(feed->conn, feed->stmt))
		return false;

	resetStringInfo(&feed->line);
	feed->line_pos = 0;
	for (int i = 0; i < feed->ncols; i++)
	{
		bool		notnull;

		resetStringInfo(&feed->value);
		if (feed->is_binary[i])
			notnull = OdbcGetBinaryHex(feed->conn, feed->stmt, i + 1, &feed->value);
		else
			notnull = OdbcGetText(feed->conn, feed->stmt, i + 1, &feed->value);

		if (i > 0)
			appendStringInfoChar(&feed->line, '\t');
		if (!notnull)
		{
			if (feed->is_key[i])
				ereport(ERROR,
						(errcode(ERRCODE_NOT_NULL_VIOLATION),
						 errmsg("warehouse returned a NULL key in column \"%s\" of table \"%s\"",
								feed->names[i], feed->cfg->name),
						 errdetail("Row %lld of this pull; nothing of this cycle was applied.",
								   (long long) feed->result->rows_pulled + 1),
						 errhint("A key column must never be NULL: fix the row in the warehouse, or register the table with another key.")));
			appendBinaryStringInfo(&feed->line, "\\N", 2);
			continue;
		}
		feed->result->bytes_pulled += feed->value.len;
		append_copy_escaped(&feed->line, feed->value.data, feed->value.len);
	}
	appendStringInfoChar(&feed->line, '\n');
	feed->result->rows_pulled++;
	return true;
}

/* COPY's data source: hand out the COPY text of the rows, in pieces. */
static int
stage_copy_source(void *outbuf, int minread, int maxread)
{
	int			copied = 0;

	while (copied < maxread)
	{
		int			n;

		if (feed->line_pos >= feed->line.len)
		{
			if (feed->eof || !stage_next_row())
			{
				feed->eof = true;
				break;
			}
		}
		n = Min(maxread - copied, feed->line.len - feed->line_pos);
		memcpy((char *) outbuf + copied, feed->line.data + feed->line_pos, n);
		copied += n;
		feed->line_pos += n;
	}
	return copied;
}

/*
 * Load the rows of an executed remote statement into the staging table,
 * counting rows and bytes into result.
 */
void
StageLoad(Oid stage_relid, TableConfig *cfg, OdbcConn *conn, SQLHSTMT stmt,
		  CycleResult *result)
{
	Relation	rel;
	ParseState *pstate;
	CopyFromState cstate;
	List	   *options;
	ListCell   *lc;
	StageFeed	state;
	int			i = 0;

	memset(&state, 0, sizeof(state));
	state.conn = conn;
	state.stmt = stmt;
	state.cfg = cfg;
	state.result = result;
	state.ncols = list_length(cfg->columns);
	state.is_binary = palloc0(sizeof(bool) * state.ncols);
	state.is_key = palloc0(sizeof(bool) * state.ncols);
	state.names = palloc0(sizeof(char *) * state.ncols);
	initStringInfo(&state.line);
	initStringInfo(&state.value);

	if (OdbcResultColumns(conn, stmt) != state.ncols)
		elog(ERROR, "remote query returned %d columns, expected %d",
			 OdbcResultColumns(conn, stmt), state.ncols);

	foreach(lc, cfg->columns)
	{
		char	   *name = lfirst(lc);

		state.names[i] = name;
		state.is_key[i] = SchemaListHasName(cfg->key_columns, name);
		state.is_binary[i] = get_atttype(stage_relid, i + 1) == BYTEAOID;
		i++;
	}

	rel = table_open(stage_relid, RowExclusiveLock);
	pstate = make_parsestate(NULL);
	addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL, false, false);
	options = list_make1(makeDefElem("encoding", (Node *) makeString("UTF8"), -1));

	feed = &state;
	PG_TRY();
	{
		cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, stage_copy_source,
							   NIL, options);
		CopyFrom(cstate);
		EndCopyFrom(cstate);
	}
	PG_FINALLY();
	{
		feed = NULL;
	}
	PG_END_TRY();

	free_parsestate(pstate);
	table_close(rel, NoLock);
}
