/*-------------------------------------------------------------------------
 *
 * redact.h
 *	  Keeping warehouse values out of errors and log lines (redact.c).
 *
 * Around each COPY of a cycle or of verify() (stage.c), for every error a
 * cycle stores or logs (worker.c), hands on (reader.c) or gets from a
 * driver (odbc.c).  Depends on nothing of treble_sync's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_REDACT_H
#define TREBLE_SYNC_REDACT_H

#include "postgres.h"

/*
 * A COPY running on an error context stack of its own (RedactCopyBegin):
 * what the stack was, and the COPY this one runs inside, if any.
 */
typedef struct RedactCopyGuard
{
	ErrorContextCallback *outer;	/* the error context stack COPY runs without */
	struct RedactCopyGuard *previous;	/* a COPY this one runs inside, or NULL */
} RedactCopyGuard;

extern void RedactCopyBegin(RedactCopyGuard *guard);
extern void RedactCopyEnd(RedactCopyGuard *guard);
extern void RedactError(ErrorData *edata);
extern char *RedactQuoted(const char *message);

#endif							/* TREBLE_SYNC_REDACT_H */
