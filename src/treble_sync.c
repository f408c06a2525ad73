/*-------------------------------------------------------------------------
 *
 * treble_sync.c
 *	  Module entry point of treble_sync.
 *
 * treble_sync keeps a faithful, always-fresh copy of warehouse tables in
 * this database.  Nothing needs shared_preload_libraries: every cycle runs
 * in a dynamic background worker started by the session that asked for it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/guc.h"

#include <limits.h>

#include "option.h"
#include "testhook.h"
#include "treble_sync.h"

TS_MODULE_MAGIC;

void		_PG_init(void);

/* treble_sync.progress_notices: sync_table() reports progress as NOTICEs */
bool		treble_sync_progress_notices = false;

/* treble_sync.max_parallel: cycles sync_all() runs at once */
int			treble_sync_max_parallel = 2;

/* treble_sync.freshness_alert (seconds): a copy older than this is stale */
int			treble_sync_freshness_alert = 90 * 60;

/* treble_sync.run_retention (minutes): run rows older than this go; -1 keeps them */
int			treble_sync_run_retention = 90 * 24 * 60;

/* treble_sync.verify_checksum: off makes verify() compare key lists */
bool		treble_sync_verify_checksum = true;

/* treble_sync.lock_timeout (ms): a cycle waits this long for a lock; 0 forever */
int			treble_sync_lock_timeout = 60 * 1000;

/*
 * treble_sync.cursor_max_lead (seconds): a timestamp cursor further than
 * this ahead of the warehouse's own clock is never a cut
 */
int			treble_sync_cursor_max_lead = 24 * 60 * 60;

/* treble_sync.window_advisor: cycles measure how late their changes are */
bool		treble_sync_window_advisor = true;

/* treble_sync.worker_start_timeout (ms): wait this long for a worker slot */
bool		treble_sync_read_ahead = true;
int			treble_sync_worker_start_timeout = 5 * 60 * 1000;

/*
 * Define the settings, and claim the GUC prefix so that a misspelt
 * treble_sync.* setting is an error rather than an ignored placeholder.
 */
void
_PG_init(void)
{
	DefineCustomBoolVariable("treble_sync.progress_notices",
							 "Report the progress of a running cycle as NOTICEs.",
							 "sync_table() and sync_all() then send one NOTICE every "
							 "5 seconds while a cycle runs.",
							 &treble_sync_progress_notices,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("treble_sync.max_parallel",
							"How many cycles sync_all() runs at once.",
							"Each runs in a background worker of its own "
							"(max_worker_processes).",
							&treble_sync_max_parallel,
							2, 1, 64,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("treble_sync.freshness_alert",
							"Age of a copy's watermark beyond which it is stale.",
							"Crossing it sends one NOTIFY treble_sync event, and "
							"getting fresh again another.",
							&treble_sync_freshness_alert,
							90 * 60, 1, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("treble_sync.run_retention",
							"How long rows of treble_sync.runs are kept.",
							"Older rows are deleted at the end of each run of "
							"their table; -1 keeps them all.",
							&treble_sync_run_retention,
							90 * 24 * 60, -1, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MIN,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("treble_sync.verify_checksum",
							 "Let verify() compare row checksums where the warehouse computes them.",
							 "Off, it compares the warehouse's keys, cursors and days with the "
							 "copy's, as it does with warehouses that cannot compute the checksum.",
							 &treble_sync_verify_checksum,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("treble_sync.lock_timeout",
							"How long a cycle waits for a lock before it fails.",
							"A cycle blocked this long by another session fails, and its "
							"run names the blocking process; 0 waits without limit.",
							&treble_sync_lock_timeout,
							60 * 1000, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("treble_sync.worker_start_timeout",
							"How long sync_table() waits for a free background worker slot.",
							"A cycle that finds none free for this long is logged as a "
							"failed run; 0 does not wait.",
							&treble_sync_worker_start_timeout,
							5 * 60 * 1000, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("treble_sync.read_ahead",
							 "Read a first load from the warehouse in a second worker.",
							 "A pull straight into an empty copy is then read by a second "
							 "background worker while the cycle's worker writes it, on two "
							 "cores; with no worker slot free the cycle reads it alone.",
							 &treble_sync_read_ahead,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Superusers only (or roles granted SET on it): a larger lead lets a
	 * row stamped far in the future become the cut of every table the
	 * cycles run, and the watermark then stops every later row.
	 */
	DefineCustomIntVariable("treble_sync.cursor_max_lead",
							"How far ahead of the warehouse's clock a timestamp cursor may be and still be part of a cut.",
							"Rows whose cursor is later than the warehouse's clock plus this, "
							"or not finite, are left out of the cut and the pull, and reported.",
							&treble_sync_cursor_max_lead,
							24 * 60 * 60, 0, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	/*
	 * Server-wide (postgresql.conf, ALTER SYSTEM): the advisor's figures
	 * and its 'late' incidents are the operator's, so no session turns
	 * them off for the cycles it starts.
	 */
	DefineCustomBoolVariable("treble_sync.window_advisor",
							 "Measure how late the corrections and removals of every cycle are.",
							 "The histogram behind window_advice() and the 'late' incidents.",
							 &treble_sync_window_advisor,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	TestHookDefineSetting();
	MarkGUCPrefixReserved(TREBLE_SYNC_EXTENSION);
}

/*
 * The elements of a text[] argument, for every function that takes one
 * (key and column lists, a check's columns, a group's tables).  Only a
 * one-dimensional array is a list: '{{id},{v}}' would otherwise be read
 * as a flat list nobody wrote.  A NULL element is refused, by name.
 */
Datum *
ArgTextArray(Datum array, const char *argname, int *n)
{
	ArrayType  *arr = DatumGetArrayTypeP(array);
	Datum	   *elems;
	bool	   *nulls;

	Assert(ARR_ELEMTYPE(arr) == TEXTOID);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", argname)));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	for (int i = 0; i < *n; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", argname)));
	return elems;
}

/*
 * The warehouse signature recorded for a column of a registration
 * (remote_columns, "type_name size digits": DriftSignature()), or NULL if
 * none was recorded: drift.c compares it with the warehouse's, deparse.c
 * selects and compares some types by it.
 */
const char *
TableRecordedSignature(TableConfig *cfg, const char *column)
{
	return OptionListString(cfg->remote_columns, column);
}
