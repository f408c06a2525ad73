/*-------------------------------------------------------------------------
 *
 * drift.h
 *	  Schema drift: the warehouse's columns compared with those seen at
 *	  registration, at the start of every cycle (drift.c).
 *
 * Needs no ODBC type: a RemoteColumn is only passed through.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_DRIFT_H
#define TREBLE_SYNC_DRIFT_H

#include "postgres.h"

#include "treble_sync.h"

struct RemoteColumn;

extern char *DriftSignature(struct RemoteColumn *col);
extern void DriftCheck(TableConfig *cfg, OdbcConn *conn, CycleResult *result);

#endif							/* TREBLE_SYNC_DRIFT_H */
