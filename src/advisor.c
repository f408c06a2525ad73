/*-------------------------------------------------------------------------
 *
 * advisor.c
 *	  The window advisor: how late do corrections really come?
 *
 * The hot window (hot_window, 3 days in the Treble guide) is a guess about
 * how late the warehouse corrects a row: a correction whose event date
 * lies before the window still reaches the copy through the delta, but a
 * removal there never does.  Every cycle of a table with an event column
 * and a timestamp cursor measures how late the changes it applies are:
 *
 *	- a correction (a staged row that replaced the copy's version of its
 *	  key) is its cursor minus its event time, synced_at - event;
 *	- a removal (a window row the refresh deleted) is the cut T minus its
 *	  event time: it left the warehouse at some point up to T.
 *
 * The measuring costs no extra pass over anything: the UPDATE that applies
 * the corrections and the DELETE that applies the removals return the two
 * times of each row they change, and one aggregate over that (a CTE around
 * the statement) puts them into buckets.  The histogram, a few rows per
 * table and day in treble_sync.lateness, is written in the cycle's own
 * transaction, so a failed cycle leaves no figures behind.  verify() adds
 * the days it finds different, by how long before its cut they lie.
 *
 * An event column of type date counts from the day's midnight, so a
 * same-day correction is up to 24 hours late.  A table with an integer
 * cursor has no time of change to measure: the advisor leaves it out.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/timestamp.h"

#include "advisor.h"
#include "catalog.h"

/*
 * The lower bound of each bucket after the first, in hours: hourly near
 * the start, then by half-days and days up to a week (where hot windows
 * are chosen), then coarser up to a year.  The first bucket holds the
 * changes under an hour late (and those stamped before their event time);
 * the last, those a year late or more.
 */
static const int bucket_from_hours[ADVISOR_BUCKETS] = {
	0, 1, 2, 3, 6, 12, 24, 36, 48, 60, 72, 96, 120, 144, 168, 240, 336, 504,
	720, 1440, 2160, 4320, 8760
};

/*
 * Whether the advisor measures this table's cycles: it needs a hot window
 * (mode upsert with an event column) and cursor values that are times,
 * and treble_sync.window_advisor on.
 */
bool
AdvisorCovers(TableConfig *cfg)
{
	return treble_sync_window_advisor && cfg->event_column != NULL &&
		cfg->mode == SYNC_UPSERT && cfg->cursor_kind == CURSOR_TIMESTAMP;
}

/*
 * The thresholds of width_bucket() in SQL: the lower bounds of every
 * bucket but the first, as a float8[] literal.
 */
static char *
bucket_thresholds(void)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "'{");
	for (int i = 1; i < ADVISOR_BUCKETS; i++)
		appendStringInfo(&buf, "%s%d", i > 1 ? "," : "", bucket_from_hours[i]);
	appendStringInfoString(&buf, "}'::pg_catalog.float8[]");
	return buf.data;
}

/*
 * Wrap a data-changing statement (an UPDATE or DELETE of the copy, without
 * RETURNING) so that it returns, instead of its rows, one row per bucket:
 * the bucket's number, the rows it changed in it, how many of those have
 * an event before $bound_param (the hot window's bound), and the greatest
 * lateness in hours.  Rows whose times are not finite (or NULL) count in
 * a bucket of their own, NULL, so the total is still every row changed.
 * cursor_expr and event_expr are SQL expressions over the statement's
 * rows (or parameters); both are read as timestamp without time zone in
 * the cycle's TimeZone, the warehouse's, as every bound of the cycle is.
 */
char *
AdvisorMeasuringSql(const char *dml, const char *cursor_expr, const char *event_expr,
					int bound_param)
{
	Assert(bound_param > 0);
	return psprintf("WITH changed AS (%s RETURNING (%s)::pg_catalog.timestamp AS c,"
					" (%s)::pg_catalog.timestamp AS e),"
					" timed AS (SELECT e, CASE WHEN pg_catalog.isfinite(c) AND pg_catalog.isfinite(e)"
					" THEN (pg_catalog.date_part('epoch', c) OPERATOR(pg_catalog.-) pg_catalog.date_part('epoch', e))"
					" OPERATOR(pg_catalog./) 3600 END AS hours FROM changed)"
					" SELECT pg_catalog.width_bucket(hours, %s) AS bucket,"
					" pg_catalog.count(*) AS n,"
					" pg_catalog.count(*) FILTER (WHERE e OPERATOR(pg_catalog.<) $%d) AS outside,"
					" pg_catalog.max(hours) AS max_hours"
					" FROM timed GROUP BY 1",
					dml, cursor_expr, event_expr, bucket_thresholds(), bound_param);
}

/*
 * Add the buckets a statement of AdvisorMeasuringSql returned (in
 * SPI_tuptable) to a histogram; returns the rows it changed, all of them.
 */
int64
AdvisorCollect(LatenessHistogram *h)
{
	int64		total = 0;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		null_bucket;
		bool		isnull;
		int32		bucket = DatumGetInt32(SPI_getbinval(tup, desc, 1, &null_bucket));
		int64		n = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		int64		outside = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		Datum		max_hours = SPI_getbinval(tup, desc, 4, &isnull);

		CHECK_FOR_INTERRUPTS();
		if (pg_add_s64_overflow(total, n, &total))
			elog(ERROR, "row count out of range");
		if (null_bucket)
			continue;			/* times that are not finite: not measured */
		Assert(bucket >= 0 && bucket < ADVISOR_BUCKETS);
		if (pg_add_s64_overflow(h->rows[bucket], n, &h->rows[bucket]) ||
			pg_add_s64_overflow(h->outside[bucket], outside, &h->outside[bucket]))
			elog(ERROR, "row count out of range");
		if (!isnull)
			h->max_hours[bucket] = Max(h->max_hours[bucket], DatumGetFloat8(max_hours));
	}
	return total;
}

/* The rows of a histogram whose event lay before the hot window. */
int64
AdvisorOutside(LatenessHistogram *h)
{
	int64		total = 0;

	for (int i = 0; i < ADVISOR_BUCKETS; i++)
		total += h->outside[i];
	return total;
}

/* Write one kind's non-empty buckets to treble_sync.lateness, at once. */
static void
record_histogram(int32 table_id, const char *kind, LatenessHistogram *h)
{
	int32		from[ADVISOR_BUCKETS];
	int32		to[ADVISOR_BUCKETS];
	int64		rows[ADVISOR_BUCKETS];
	int64		outside[ADVISOR_BUCKETS];
	double		max_hours[ADVISOR_BUCKETS];
	int			n = 0;

	for (int i = 0; i < ADVISOR_BUCKETS; i++)
	{
		if (h->rows[i] == 0)
			continue;
		from[n] = bucket_from_hours[i];
		to[n] = i + 1 < ADVISOR_BUCKETS ? bucket_from_hours[i + 1] : -1;
		rows[n] = h->rows[i];
		outside[n] = h->outside[i];
		max_hours[n] = h->max_hours[i];
		n++;
	}
	if (n > 0)
		CatalogAddLateness(table_id, kind, n, from, to, rows, outside, max_hours);
}

/*
 * Record what a cycle measured, in its transaction: the histogram rows,
 * and on the run row the corrections that landed before the hot window
 * (after_run() opens the table's 'late' incident on them).
 */
void
AdvisorRecord(TableConfig *cfg, CycleResult *result)
{
	CycleLateness *l = result->lateness;

	if (l == NULL)
		return;
	record_histogram(cfg->table_id, "correction", &l->corrections);
	record_histogram(cfg->table_id, "removal", &l->removals);
	result->rows_late_outside = AdvisorOutside(&l->corrections);
	if (result->rows_late_outside > 0)	/* the run row has 0 already */
		CatalogSetLateOutside(result->run_id, result->rows_late_outside);
}

/*
 * verify() found these days (an integer List of DateADT) different from
 * the warehouse at the cut: record each as one 'verify' change, as late as
 * the cut is after the day's start.  A difference on a day before the hot
 * window's bound (at that cut) is one the cycles cannot mend.
 */
void
AdvisorRecordVerify(TableConfig *cfg, Timestamp cut, Timestamp bound, List *days)
{
	LatenessHistogram h;
	ListCell   *lc;

	if (!AdvisorCovers(cfg) || days == NIL || TIMESTAMP_NOT_FINITE(cut))
		return;
	memset(&h, 0, sizeof(h));
	foreach(lc, days)
	{
		DateADT		day = (DateADT) lfirst_int(lc);
		Timestamp	start;
		double		hours;
		int			b = 0;
		int			overflow = 0;

		CHECK_FOR_INTERRUPTS();

		if (DATE_NOT_FINITE(day))
			continue;
		start = date2timestamp_opt_overflow(day, &overflow);
		if (overflow != 0)
			continue;			/* a day no timestamp reaches: not a lateness */
		hours = ((double) cut - (double) start) / (double) USECS_PER_HOUR;
		while (b + 1 < ADVISOR_BUCKETS && hours >= bucket_from_hours[b + 1])
			b++;
		h.rows[b]++;
		if (start < bound)
			h.outside[b]++;
		h.max_hours[b] = Max(h.max_hours[b], hours);
	}
	record_histogram(cfg->table_id, "verify", &h);
}
