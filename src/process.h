/*-------------------------------------------------------------------------
 *
 * process.h
 *	  What every treble_sync background process shares: its description,
 *	  its signals, connecting to the caller's database as the caller, and
 *	  connecting to a table's warehouse as the table's owner (process.c).
 *
 * The cycle's worker and its chunk helpers (worker.c) and the reader
 * (reader.c) start through here; the caller's side (launch.c) describes
 * the workers it registers here.  ProcessPrecheck() is also what
 * sync_table() and verify() check before they start anything.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_PROCESS_H
#define TREBLE_SYNC_PROCESS_H

#include "postgres.h"

#include "foreign/foreign.h"
#include "postmaster/bgworker.h"

#include "treble_sync.h"

extern void ProcessDescribe(BackgroundWorker *bgw, const char *function, const char *name);
extern void ProcessStartSignals(void);
extern bool ProcessWasSignalled(void);
extern bool ProcessWasTerminated(void);
extern void ProcessConnect(Oid database_id, Oid session_user_id, Oid user_id);
extern void ProcessSetLockTimeout(int ms);
extern void ProcessInitHelper(Oid database_id, Oid session_user_id, Oid user_id,
							  int lock_timeout);
extern UserMapping *ProcessPrecheck(TableConfig *cfg, ForeignServer **server_out);
extern OdbcConn *ProcessConnectWarehouse(TableConfig *cfg, MemoryContext cxt);
extern void ProcessReleaseWarehouse(OdbcConn *conn, bool ok);
extern void ProcessKeepConnections(void);
extern void ProcessForgetCancel(void);

#endif							/* TREBLE_SYNC_PROCESS_H */
