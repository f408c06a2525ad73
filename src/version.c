/*-------------------------------------------------------------------------
 *
 * version.c
 *	  Refusing to run against the catalog of another release.
 *
 * The library is one file for the whole installation: installing a new
 * release (make install, the Debian package) gives every new backend and
 * background worker the new library at once, while the catalog of each
 * database (treble_sync.tables, runs, quarantine...) stays that of the
 * release it was created or last updated with, until ALTER EXTENSION
 * treble_sync UPDATE runs there.  Meanwhile the library's statements name
 * columns and functions the old catalog lacks, or lacks the meaning of:
 * run, they would fail half-way through a cycle, or worse, succeed and
 * write what the old catalog does not expect.  So every entry point
 * compares pg_extension.extversion with the release the library was built
 * as, first, and refuses with one clear error that says what to run.
 *
 * The check reads one row of pg_extension by its unique index, once per
 * transaction: a successful check is remembered until the transaction (or
 * the subtransaction it was made in) ends, so a trigger fired per row or a
 * function called per row of a query costs one lookup.  Within a
 * transaction the version can change only by ALTER EXTENSION, and a check
 * that passed stays true unless the extension is updated again (there is
 * no update path away from the library's own version) or that update is
 * rolled back to a savepoint, which forgets the check.
 *
 * The extension's own install and upgrade scripts never need the check:
 * while they run (creating_extension, for this extension) it passes, as
 * the catalog is then mid-way between two versions by design.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "treble_sync.h"
#include "version.h"

/* The check passed in the transaction under way (and its subtransaction) */
static bool catalog_checked = false;
static SubTransactionId checked_in_subxact = InvalidSubTransactionId;
static bool callbacks_registered = false;

/* Forget a check when its transaction ends, whichever way. */
static void
version_xact_callback(XactEvent event, void *arg)
{
	catalog_checked = false;
	checked_in_subxact = InvalidSubTransactionId;
}

/*
 * Forget a check made in a subtransaction that rolls back: the ALTER
 * EXTENSION UPDATE it may have seen goes with it.  A committed
 * subtransaction hands its check to its parent.
 */
static void
version_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	if (!catalog_checked || checked_in_subxact != mySubid)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		catalog_checked = false;
		checked_in_subxact = InvalidSubTransactionId;
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		checked_in_subxact = parentSubid;
}

/*
 * This database's treble_sync, as pg_extension has it: its oid and owner
 * (InvalidOid if it is not installed here) and, unless version is NULL,
 * its extversion, palloc'd (NULL if not installed).  The catalog checks
 * its release here, and catalog.c writes as its owner.
 */
void
VersionLookupExtension(Oid *extoid, Oid *owner, char **version)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	*extoid = InvalidOid;
	*owner = InvalidOid;
	if (version)
		*version = NULL;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum(TREBLE_SYNC_EXTENSION));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		Form_pg_extension ext = (Form_pg_extension) GETSTRUCT(tuple);
		Datum		datum;
		bool		isnull;

		*extoid = ext->oid;
		*owner = ext->extowner;
		datum = heap_getattr(tuple, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);
		if (version && !isnull)
			*version = text_to_cstring(DatumGetTextPP(datum));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/*
 * Parse "major.minor.patch" into three numbers; false if it is not one.
 * Only to tell an older catalog from a newer one in the hint.
 */
static bool
parse_version(const char *version, int parts[3])
{
	char		rest;

	return sscanf(version, "%d.%d.%d%c", &parts[0], &parts[1], &parts[2], &rest) == 3;
}

/*
 * Error out unless this database's treble_sync catalog is the release this
 * library was built as; funcname is the entry point, as the message names
 * it, e.g. "sync_table()".  Called in a transaction.
 */
void
VersionRequireCatalog(const char *funcname)
{
	Oid			extoid;
	Oid			owner;
	char	   *version;
	int			have[3];
	int			need[3];

	Assert(IsTransactionState());
	if (catalog_checked)
		return;
	if (!callbacks_registered)
	{
		RegisterXactCallback(version_xact_callback, NULL);
		RegisterSubXactCallback(version_subxact_callback, NULL);
		callbacks_registered = true;
	}

	VersionLookupExtension(&extoid, &owner, &version);
	if (version == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database", TREBLE_SYNC_EXTENSION),
				 errdetail("treble_sync.%s needs its catalog.", funcname)));

	/* the extension's own scripts: the catalog is mid-way, by design */
	if (creating_extension && CurrentExtensionObject == extoid)
		return;

	if (strcmp(version, TREBLE_SYNC_VERSION) != 0)
	{
		bool		older = parse_version(version, have) &&
			parse_version(TREBLE_SYNC_VERSION, need) &&
			(have[0] != need[0] ? have[0] < need[0] :
			 have[1] != need[1] ? have[1] < need[1] : have[2] < need[2]);

		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("treble_sync's catalog is version %s; this library needs %s",
						version, TREBLE_SYNC_VERSION),
				 errdetail("treble_sync.%s does not run against the catalog of another release.",
						   funcname),
				 older ?
				 errhint("Run ALTER EXTENSION treble_sync UPDATE in this database.") :
				 errhint("Install the files of treble_sync %s, whose catalog this database has.",
						 version)));
	}

	catalog_checked = true;
	checked_in_subxact = GetCurrentSubTransactionId();
}

