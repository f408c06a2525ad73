/*-------------------------------------------------------------------------
 *
 * reader.c
 *	  The reader process: reads a pull from the warehouse while the
 *	  cycle's worker writes it (readahead.c has the why, the segment and
 *	  the queue; stage.c what is read and sent).
 *
 * It connects as the cycle's caller, reads the registration, becomes its
 * owner inside a security-restricted operation once the copy is checked
 * to be still that owner's (SecurityBeginReader), connects to the
 * warehouse as the cycle does (the owner's user mapping, the same
 * checks), and hands the pull to StageRead.  It writes nothing to the
 * database and runs no SQL of anyone's.  Its error, warehouse values
 * taken out, is sent whole to the cycle's worker, which raises it
 * (readahead.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "utils/memutils.h"
#include "utils/ps_status.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "attempt.h"
#include "catalog.h"
#include "odbc.h"
#include "process.h"
#include "readahead.h"
#include "redact.h"
#include "security.h"
#include "stage.h"

/*
 * Connect to the warehouse for the registration of request, as its cycle
 * does, in cxt; the registration as read is returned in *cfg_out.
 */
static OdbcConn *
reader_connect(ReadAheadRequest *request, MemoryContext cxt, TableConfig **cfg_out)
{
	TableConfig *cfg;
	OdbcConn   *conn;

	/* the registration and the user mapping, as the cycle read them */
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	MemoryContextSwitchTo(cxt);
	cfg = CatalogGetTableById(request->table_id);
	if (cfg->owner != request->owner)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the registration of \"%s\" changed owner during its cycle", cfg->name)));
	SecurityBeginReader(cfg);	/* before anything but the registration is read */
	set_ps_display(cfg->name);
	conn = ProcessConnectWarehouse(cfg, cxt);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	*cfg_out = cfg;
	return conn;
}

/*
 * Entry point of a reader: connect as the cycle does, read the pull the
 * segment describes, send it, and exit.
 */
void
treble_sync_reader_main(Datum main_arg)
{
	ReadAheadSink *sink;
	ReadAheadRequest request;
	const char *pull;
	Size		pull_len;
	MemoryContext cxt;
	ResourceOwner owner = ResourceOwnerCreate(NULL, "treble_sync reader");

	CurrentResourceOwner = owner;
	cxt = AllocSetContextCreate(TopMemoryContext, "treble_sync reader",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	sink = ReadAheadAttach(main_arg, &request, &pull, &pull_len);
	if (sink == NULL)
		proc_exit(0);			/* the cycle's worker is gone already */

	ProcessInitHelper(request.database_id, request.session_user_id, request.user_id,
					  request.lock_timeout);
	MemoryContextSwitchTo(cxt);
	AttemptBegin(cxt);			/* what the pull notes, as in the worker */

	PG_TRY();
	{
		TableConfig *cfg;
		OdbcConn   *conn = reader_connect(&request, cxt, &cfg);

		/* the commit left none: the mask's hash context needs one */
		CurrentResourceOwner = owner;
		pgstat_report_activity(STATE_RUNNING, psprintf("treble_sync reader of %s", cfg->name));

		StageRead(cfg, conn, pull, pull_len, sink);
		OdbcDisconnect(conn);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		RedactError(edata);		/* no warehouse value in what is handed on */
		/* sends it to the cycle's worker, and ends the process */
		ReadAheadFail(sink, edata, ProcessWasSignalled());
	}
	PG_END_TRY();

	ReadAheadDetach(sink);
	proc_exit(0);
}
