/*-------------------------------------------------------------------------
 *
 * deparse.h
 *	  Every statement sent to the warehouse, built in one place
 *	  (deparse.c), as postgres_fdw's deparse.c builds its remote SQL.
 *
 * Callers pass the registration and what to select and get the SQL text,
 * its parameters appended to an OdbcParam array; they execute it and read
 * the result.  Identifiers are quoted the warehouse's way (odbc.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_DEPARSE_H
#define TREBLE_SYNC_DEPARSE_H

#include "postgres.h"

#include "odbc.h"

/*
 * Which warehouse rows one pull takes.  Always cursor <= cut (unless the
 * table has no cursor), and:
 *	- a cycle: cursor > prev (the delta), or event >= bound (the window);
 *	  with hot_window_check 'keys', the delta alone, and the window's keys
 *	  and cursors apart (window_only, pulled through a registration narrowed
 *	  to those columns: pull_window_keys in cycle.c);
 *	- a chunk of a first load: lo <= column < hi (the first: column < hi,
 *	  whatever lies before the smallest finite value);
 *	- the rest of a first load: column >= lo, or column is NULL;
 *	- a full pull: nothing more.
 */
typedef struct PullSpec
{
	bool		have_cut;		/* false: a snapshot table without a cursor */
	int64		cut;
	bool		have_prev;
	int64		prev;
	bool		have_window;
	Timestamp	bound;
	Timestamp	bound_hi;		/* the slice's end; infinity for a window */
	const char *range_column;	/* NULL: a cycle */
	Timestamp	lo;
	Timestamp	hi;
	bool		open_ended;		/* the rest: no hi, and NULLs too */
	bool		open_below;		/* the first chunk: no lo, so column < hi */
	bool		window_only;	/* event >= bound, no delta */
} PullSpec;

/*
 * A part of a pull: lo < cursor <= hi; with open_lo, cursor <= hi alone
 * (the pull's first slice, from its smallest cursor lo, below which there
 * may be no bigint).
 */
typedef struct PullSlice
{
	int64		lo;
	int64		hi;
	bool		open_lo;
} PullSlice;

/* The most parameters of the cut's and the cursor counts' statements */
#define CUT_MAX_PARAMS 1

/* The most parameters of a pull: cut, slice (2), range or delta and window (2) */
#define PULL_MAX_PARAMS 5

/*
 * The most parameters of a pull by keys (the cut, then each key's values):
 * below every supported warehouse's limit (SQLite's was 999 before 3.32).
 */
#define KEY_PULL_MAX_PARAMS 501

/* The most parameters of a verification's query: cut, since */
#define VERIFY_MAX_PARAMS 2

/*
 * What an SQLite pull selects, followed by SQLite's text of the value,
 * instead of a REAL that text does not hold (more than 15 significant
 * digits): two bytes no number's text begins with, for stage.c to make
 * the row a bad row (DeparseTextAsBytes()).
 */
#define DEPARSE_INEXACT_REAL "\0\377"
#define DEPARSE_INEXACT_REAL_LEN 2

extern bool DeparseTextAsBytes(TableConfig *cfg, OdbcConn *conn, const char *column);
extern bool DeparseReadsHex(TableConfig *cfg, OdbcConn *conn, const char *column);
extern const char *DeparseTextPlaceholder(OdbcConn *conn);
extern const char *DeparseClickHouseUnwrap(const char *type_name);
extern OdbcParam DeparseCursorParam(TableConfig *cfg, int64 value);
extern char *DeparseCut(TableConfig *cfg, OdbcConn *conn, OdbcParam *params, int *nparams);
extern char *DeparseAggregate(TableConfig *cfg, OdbcConn *conn, const char *agg,
							  const char *column, bool integer, bool bounded);
extern char *DeparseCursorCounts(TableConfig *cfg, OdbcConn *conn, OdbcParam *params,
								 int *nparams);
extern char *DeparsePull(TableConfig *cfg, OdbcConn *conn, PullSpec *spec,
						 PullSlice *slice, OdbcParam *params, int *nparams);
extern char *DeparsePullCount(TableConfig *cfg, OdbcConn *conn, PullSpec *spec,
							  PullSlice *slice, OdbcParam *params, int *nparams);
extern char *DeparseKeyPull(TableConfig *cfg, OdbcConn *conn, int nkeys);
extern char *DeparseChecksum(TableConfig *cfg, OdbcConn *conn, bool remote);
extern char *DeparseVerifyDays(TableConfig *cfg, OdbcConn *conn, const char *daycol,
							   int64 cut, bool have_since, Timestamp since,
							   bool with_checksum, bool keyed, OdbcParam *params,
							   int *nparams);
extern char *DeparseVerifyKeys(TableConfig *cfg, OdbcConn *conn, List *columns,
							   const char *daycol, int64 cut, bool have_since,
							   Timestamp since, bool keyed, OdbcParam *params,
							   int *nparams);
extern char *DeparseClickHouseColumnTypes(const char *database, const char *table);

#endif							/* TREBLE_SYNC_DEPARSE_H */
