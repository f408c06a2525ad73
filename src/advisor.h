/*-------------------------------------------------------------------------
 *
 * advisor.h
 *	  The window advisor (advisor.c): how late the corrections and removals
 *	  a cycle applies are, measured by the statements that apply them, kept
 *	  as a histogram per table and day.
 *
 * window_advice() is SQL-callable (SQL, in the install scripts) and needs
 * no declaration here.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_ADVISOR_H
#define TREBLE_SYNC_ADVISOR_H

#include "postgres.h"

#include "utils/timestamp.h"

#include "treble_sync.h"

/* The buckets of lateness, by their lower bound in hours (advisor.c) */
#define ADVISOR_BUCKETS 23

/* What a cycle measured, one kind of change (corrections or removals) */
typedef struct LatenessHistogram
{
	int64		rows[ADVISOR_BUCKETS];
	int64		outside[ADVISOR_BUCKETS];	/* event before the hot window */
	double		max_hours[ADVISOR_BUCKETS]; /* the latest in the bucket */
} LatenessHistogram;

/* A cycle's measurements: set up by CycleRun for a table the advisor covers */
typedef struct CycleLateness
{
	Timestamp	window_bound;	/* the hot window's lower bound at the cut */
	Timestamp	cut;			/* T */
	LatenessHistogram corrections;
	LatenessHistogram removals;
} CycleLateness;

extern bool AdvisorCovers(TableConfig *cfg);
extern char *AdvisorMeasuringSql(const char *dml, const char *cursor_expr,
								 const char *event_expr, int bound_param);
extern int64 AdvisorCollect(LatenessHistogram *h);
extern int64 AdvisorOutside(LatenessHistogram *h);
extern void AdvisorRecord(TableConfig *cfg, CycleResult *result);
extern void AdvisorRecordVerify(TableConfig *cfg, Timestamp cut, Timestamp bound, List *days);

#endif							/* TREBLE_SYNC_ADVISOR_H */
