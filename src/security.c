/*-------------------------------------------------------------------------
 *
 * security.c
 *	  Who may start or change the work of a registration, and the identity
 *	  a cycle runs as.
 *
 * Every registration has an owner: the owner of its local table when it
 * was registered (treble_sync.tables.owner).  Only roles with the
 * privileges of that owner (the owner, its members, superusers) may
 * change the registration or start its cycles, and a cycle runs as the
 * owner whoever starts it, inside a security-restricted operation with
 * search_path pinned to pg_catalog, pg_temp: the model of REFRESH
 * MATERIALIZED VIEW, VACUUM and ANALYZE.  Triggers, defaults, constraints,
 * index expressions and the operators of key types on a copy therefore
 * never run with the privileges of whoever started the cycle (a
 * superuser, a pg_cron job), and nothing planted in a schema on the
 * caller's search_path is ever resolved by the extension's statements.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "localsql.h"
#include "security.h"
#include "treble_sync.h"

/*
 * Whether the current role has the privileges of a registration's (or a
 * group's) owner: what changing it or starting its cycles requires.
 */
bool
SecurityMayManage(Oid owner)
{
	return OidIsValid(owner) && has_privs_of_role(GetUserId(), owner);
}

/*
 * Whether the current role may start the cycles of a registration (and
 * verify or repair it): with the privileges of its owner, or with SELECT,
 * INSERT, UPDATE and DELETE on its copy, which the owner grants to a
 * scheduler role.  The cycle runs as the owner either way.
 */
bool
SecurityMayRun(TableConfig *cfg)
{
	const AclMode all = ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE;

	if (SecurityMayManage(cfg->owner))
		return true;
	return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(cfg->local_relid)) &&
		pg_class_aclmask(cfg->local_relid, GetUserId(), all, ACLMASK_ALL) == all;
}

/* Error unless the current role may start the cycles of a registration. */
void
SecurityRequireRun(TableConfig *cfg, const char *action)
{
	if (SecurityMayRun(cfg))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s table \"%s\"", action, cfg->name),
			 errdetail("Cycles of a table may be started by roles with the privileges of its owner, role \"%s\", or with SELECT, INSERT, UPDATE and DELETE on its local table.",
					   GetUserNameFromId(cfg->owner, true)),
			 errhint("The cycle runs as the owner whoever starts it.")));
}

/*
 * Error unless the current role may act on a registration or a group
 * owned by owner.  "action" and "kind" ("table", "group") complete
 * "permission denied to %s %s \"%s\"".
 */
void
SecurityRequireManage(Oid owner, const char *kind, const char *name, const char *action)
{
	if (SecurityMayManage(owner))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s %s \"%s\"", action, kind, name),
			 errdetail("Only roles with the privileges of its owner, role \"%s\", may do that.",
					   OidIsValid(owner) ? GetUserNameFromId(owner, true) : "?"),
			 errhint("Run it as that role or as a member of it.")));
}

/* The owner of a relation, or InvalidOid if it no longer exists. */
Oid
SecurityRelationOwner(Oid relid)
{
	Oid			relowner = InvalidOid;
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

	if (HeapTupleIsValid(tup))
	{
		relowner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
		ReleaseSysCache(tup);
	}
	return relowner;
}

/*
 * Error unless relation relid, if it exists, is owned by the registration's
 * owner: whoever owns it can plant a trigger, a row-level policy or an
 * index expression that would run with the privileges of the registration's
 * owner when the extension acts as that owner on it.  history says whether
 * it is the registration's history table or its local table (the copy).
 */
static void
require_owned(TableConfig *cfg, Oid relid, bool history)
{
	Oid			relowner = SecurityRelationOwner(relid);

	if (!OidIsValid(relowner) || relowner == cfg->owner)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("the %s of \"%s\" is owned by role \"%s\", not by the registration's owner \"%s\"",
					history ? "history table" : "local table", cfg->name,
					GetUserNameFromId(relowner, true), GetUserNameFromId(cfg->owner, true)),
			 errdetail("A cycle runs as the registration's owner, so the %s must be that role's.",
					   history ? "history table" : "copy"),
			 errhint("ALTER TABLE %s OWNER TO %s, or register the table again as its new owner.",
					 LocalTableName(relid),
					 quote_identifier(GetUserNameFromId(cfg->owner, true)))));
}

/*
 * Error unless a partition or inheritance child of the copy (or of its
 * history table, for history) is owned by the registration's owner, for
 * the same reason as require_owned: the extension's writes to the parent
 * reach it, and run its triggers and index expressions as the owner.
 */
static void
require_child_owned(TableConfig *cfg, Oid child, Oid parent, bool history)
{
	Oid			relowner = SecurityRelationOwner(child);

	if (!OidIsValid(relowner) || relowner == cfg->owner)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("table %s, a partition or child of the %s of \"%s\", is owned by role \"%s\", not by the registration's owner \"%s\"",
					LocalTableName(child), history ? "history table" : "local table", cfg->name,
					GetUserNameFromId(relowner, true), GetUserNameFromId(cfg->owner, true)),
			 errdetail("A cycle writes into %s as the registration's owner, and the writes reach its partitions and children.",
					   LocalTableName(parent)),
			 errhint("ALTER TABLE %s OWNER TO %s, or detach it.",
					 LocalTableName(child),
					 quote_identifier(GetUserNameFromId(cfg->owner, true)))));
}

/*
 * The owner rule, checked where the owner is become: every relation of a
 * registration the extension acts on as its owner (the local table and,
 * while it keeps history, the history table) must still be that owner's.
 * Each is locked first, in a mode that ALTER TABLE ... OWNER TO and
 * REASSIGN OWNED (AccessExclusiveLock) wait for, so that the owner checked
 * is the owner until the end of the transaction, and only then read
 * (taking the lock accepts the invalidations of a change that committed
 * meanwhile).  With wait false (a reader, which its cycle's worker may
 * hold such a lock against while it waits for it) a lock that cannot be
 * had at once is not waited for: the relation is then held by a
 * transaction that blocks ALTER TABLE ... OWNER TO until it ends.  A
 * relation that no longer exists is left to the caller, which says so if
 * it needs it.
 */
static void
check_owned_locked(TableConfig *cfg, bool wait)
{
	Oid			relids[2];

	Assert(IsTransactionState());
	Assert(OidIsValid(cfg->owner));
	relids[0] = cfg->local_relid;	/* the copy, then its history table */
	relids[1] = cfg->keep_history != NULL ? cfg->history_relid : InvalidOid;
	for (size_t i = 0; i < lengthof(relids); i++)
	{
		List	   *tree;
		ListCell   *lc;

		if (!OidIsValid(relids[i]))
			continue;
		if (wait)
			LockRelationOid(relids[i], AccessShareLock);
		else if (!ConditionalLockRelationOid(relids[i], AccessShareLock))
			AcceptInvalidationMessages();
		require_owned(cfg, relids[i], i == 1);
		if (!OidIsValid(SecurityRelationOwner(relids[i])))
			continue;			/* dropped: left to the caller */

		/*
		 * Its partitions and inheritance children, at every level: the
		 * rows written into a partitioned copy are stored in them, and an
		 * UPDATE or DELETE of a parent reaches its children, so their
		 * triggers and index expressions run as the writer too.
		 * find_all_inheritors locks each (the relation itself first, held
		 * already); a reader takes each lock only if it is free at once.
		 */
		tree = find_all_inheritors(relids[i], wait ? AccessShareLock : NoLock, NULL);
		foreach(lc, tree)
		{
			Oid			child = lfirst_oid(lc);

			CHECK_FOR_INTERRUPTS();
			if (child == relids[i])
				continue;
			if (!wait && !ConditionalLockRelationOid(child, AccessShareLock))
				AcceptInvalidationMessages();
			require_child_owned(cfg, child, relids[i], i == 1);
		}
	}
}

/*
 * A cycle runs as the registration's owner: the local table must exist and
 * still be owned by that role, and so must the history table, or whoever
 * owns them now could plant a trigger that runs with the privileges of the
 * registration's owner.  Checked up front, without a lock, for a clear
 * error in the caller's session (sync_table, rewind, verify); what makes
 * the rule hold is the same check, under a lock, where the owner is become
 * (SecurityBecomeOwner, SecurityBeginCycle, SecurityBeginReader).
 */
void
SecurityCheckCopyOwner(TableConfig *cfg)
{
	if (!OidIsValid(SecurityRelationOwner(cfg->local_relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the local table of \"%s\" no longer exists", cfg->name),
				 errhint("Register the table again with treble_sync.add_table().")));
	require_owned(cfg, cfg->local_relid, false);
	if (cfg->keep_history != NULL && OidIsValid(cfg->history_relid))
		require_owned(cfg, cfg->history_relid, true);
	for (int i = 0; i < 2; i++)
	{
		Oid			parent = i == 0 ? cfg->local_relid
			: (cfg->keep_history != NULL ? cfg->history_relid : InvalidOid);
		ListCell   *lc;

		if (!OidIsValid(parent) || !OidIsValid(SecurityRelationOwner(parent)))
			continue;
		foreach(lc, find_all_inheritors(parent, NoLock, NULL))
			if (lfirst_oid(lc) != parent)
				require_child_owned(cfg, lfirst_oid(lc), parent, i == 1);
	}
}

/*
 * A relation the extension reads as the registration's owner that is not
 * the copy or its history table: a references check's table.  Whoever owns
 * it can put code on it that runs with the privileges of whoever reads it
 * (a row-level policy, a view's functions), so its owner must already have
 * the privileges of the registration's owner (be that role, a role it is
 * granted to, or a superuser): such a role's code gains nothing by running
 * as the owner.  The relation is locked first (AccessShareLock, which ALTER
 * TABLE ... OWNER TO waits for), so the owner checked stays its owner until
 * the end of the transaction.  Checked by add_check and again in every
 * cycle, since a table can change hands after the check was added.  A
 * relation that no longer exists is left to the caller.
 */
void
SecurityCheckReadAsOwner(TableConfig *cfg, Oid relid)
{
	Oid			relowner;

	Assert(IsTransactionState());
	Assert(OidIsValid(cfg->owner));
	LockRelationOid(relid, AccessShareLock);
	relowner = SecurityRelationOwner(relid);
	if (!OidIsValid(relowner) || relowner == cfg->owner ||
		has_privs_of_role(relowner, cfg->owner))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("the reference table %s of a check of \"%s\" is owned by role \"%s\", which does not have the privileges of the registration's owner \"%s\"",
					LocalTableName(relid), cfg->name,
					GetUserNameFromId(relowner, true), GetUserNameFromId(cfg->owner, true)),
			 errdetail("The check reads it as the registration's owner, so a policy or function its owner put on it would run as that role."),
			 errhint("ALTER TABLE %s OWNER TO %s, or reference a table of that role.",
					 LocalTableName(relid),
					 quote_identifier(GetUserNameFromId(cfg->owner, true)))));
}

/*
 * Settings that change what a statement of the extension means or what it
 * writes: how values are read and written as text (COPY text from the
 * warehouse, the catalog's texts, a trigger's), whether triggers fire and
 * row security applies, and what an error does.  A worker, a chunk helper
 * and a reader connect as the session user of whoever started the cycle,
 * and PostgreSQL applies that role's settings (ALTER ROLE ... SET, ALTER
 * ROLE ... IN DATABASE ... SET, ALTER DATABASE ... SET) to them; code that
 * acts as the owner in the caller's session runs with the caller's. Each
 * is pinned to the value the extension is written for, where the owner is
 * become.  TimeZone is not among them: a cycle and verify() take the
 * server option's zone (ProcessConnectWarehouse), and history.c converts
 * with that zone explicitly.  docs/security.md lists them.
 */
typedef struct PinnedSetting
{
	const char *name;
	const char *value;
} PinnedSetting;

static const PinnedSetting pinned_settings[] =
{
	{"DateStyle", "ISO, MDY"},
	{"IntervalStyle", "postgres"},
	{"extra_float_digits", "1"},
	{"bytea_output", "hex"},
	{"lc_monetary", "C"},
	{"timezone_abbreviations", "Default"},
	{"xmloption", "content"},
	{"standard_conforming_strings", "on"},
	{"transform_null_equals", "off"},
	{"session_replication_role", "origin"},
	{"row_security", "on"},
	{"exit_on_error", "off"},
	{"array_nulls", "on"},
};

/*
 * What only a worker, a chunk helper or a reader pins, at its start: the
 * kind of transaction each of its transactions begins as (a cycle reads
 * the registration again under its lock, and writes), search_path until
 * SecurityBeginCycle pins it again, and statement_timeout, which a
 * background worker does not arm (query_timeout bounds the warehouse's
 * statements; the cycle's own last as long as its rows take).
 */
static const PinnedSetting pinned_worker_settings[] =
{
	{"default_transaction_isolation", "read committed"},
	{"default_transaction_read_only", "off"},
	{"default_transaction_deferrable", "off"},
	{"search_path", SECURITY_SEARCH_PATH},
	{"statement_timeout", "0"},
};

/*
 * In a worker, a chunk helper or a reader, once connected and before any
 * transaction: the role and database settings of the session user that
 * matter are replaced by the extension's (pinned_settings,
 * pinned_worker_settings), at the session level, above every role or
 * database setting.  lock_timeout is set from the caller's
 * treble_sync.lock_timeout by the worker itself.
 */
void
SecurityPinWorkerSettings(void)
{
	Assert(!IsTransactionState());
	for (size_t i = 0; i < lengthof(pinned_settings); i++)
		SetConfigOption(pinned_settings[i].name, pinned_settings[i].value,
						PGC_SUSET, PGC_S_SESSION);
	for (size_t i = 0; i < lengthof(pinned_worker_settings); i++)
		SetConfigOption(pinned_worker_settings[i].name, pinned_worker_settings[i].value,
						PGC_SUSET, PGC_S_SESSION);
}

/*
 * Pin pinned_settings at the current GUC nest level (the one
 * SecurityPinSearchPath made), undone with it.
 */
static void
pin_settings_saved(void)
{
	for (size_t i = 0; i < lengthof(pinned_settings); i++)
		(void) set_config_option(pinned_settings[i].name, pinned_settings[i].value,
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Pin search_path to pg_catalog, pg_temp until SecurityUnpinSearchPath (or
 * the end of the transaction): user-given names are resolved before this.
 */
int
SecurityPinSearchPath(void)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", SECURITY_SEARCH_PATH, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return nestlevel;
}

/*
 * Undo the pin, and every setting changed since it: code that ran inside
 * (a copy's trigger or policy, as its owner) must not leave a session-level
 * setting behind in the caller's session, as REFRESH MATERIALIZED VIEW
 * does not.
 */
void
SecurityUnpinSearchPath(int nestlevel)
{
	AtEOXact_GUC(false, nestlevel);
}

/*
 * Act as the registration's owner on its copy inside a security-restricted
 * operation, with search_path pinned, until SecurityRestore: the one way
 * the caller's session does it (verify, rewind, history set-up, pruning and
 * removal).  The copy and its history table must still be the owner's, and
 * stay so until the end of the transaction (check_owned_locked).  It makes
 * no temporary table, so unlike a cycle (SecurityBeginCycle) it needs no
 * temporary namespace.  An error inside unwinds both at transaction abort.
 */
void
SecurityBecomeOwner(TableConfig *cfg, SecurityState *state)
{
	check_owned_locked(cfg, true);
	GetUserIdAndSecContext(&state->saved_userid, &state->saved_sec_context);
	SetUserIdAndSecContext(cfg->owner, state->saved_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	state->guc_nestlevel = SecurityPinSearchPath();
	pin_settings_saved();
}

void
SecurityRestore(SecurityState *state)
{
	SecurityUnpinSearchPath(state->guc_nestlevel);
	SetUserIdAndSecContext(state->saved_userid, state->saved_sec_context);
}

/* the identity a cycle's transaction started with (SecurityEndCycle) */
static Oid	cycle_saved_userid = InvalidOid;
static int	cycle_saved_sec_context = 0;

/*
 * In a worker (a cycle's, or a chunk helper), at the start of each
 * attempt's transaction: act as the registration's owner inside a
 * security-restricted operation, with search_path pinned, until
 * SecurityEndCycle just before the transaction commits, once the copy and
 * its history table are checked to be the owner's under a lock held to the
 * end of the transaction (check_owned_locked).  The temporary namespace
 * (where the staging table lives) is made first, as the owner: a
 * restricted operation may not make it.  A transaction that aborts returns
 * to the identity it started with, so every attempt calls this.
 */
void
SecurityBeginCycle(TableConfig *cfg)
{
	Oid			owner = cfg->owner;
	Oid			temp_ns;
	Oid			temp_toast_ns;

	check_owned_locked(cfg, true);
	GetUserIdAndSecContext(&cycle_saved_userid, &cycle_saved_sec_context);
	SetUserIdAndSecContext(owner, SECURITY_LOCAL_USERID_CHANGE);
	GetTempNamespaceState(&temp_ns, &temp_toast_ns);
	if (!OidIsValid(temp_ns))
		(void) LookupCreationNamespace("pg_temp");
	SetUserIdAndSecContext(owner, SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	SetConfigOption("search_path", SECURITY_SEARCH_PATH, PGC_USERSET, PGC_S_SESSION);
}

/*
 * In a worker whose cycle goes on in a new transaction after a commit (a
 * first load's chunks, load.c): become the owner again as
 * SecurityBeginCycle did, once the copy and its history table are checked
 * again, under a lock held to the end of the new transaction, to be the
 * owner's.  The commit released the lock of the last check.
 */
void
SecurityResumeCycle(TableConfig *cfg)
{
	Assert(OidIsValid(cycle_saved_userid));
	check_owned_locked(cfg, true);
	SetUserIdAndSecContext(cfg->owner, SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

/*
 * In a worker, just before the transaction of a SecurityBeginCycle
 * commits: give back the identity the transaction started with, as a
 * commit does not (an abort does).  A security-restricted context must not
 * outlive its transaction: the next one to start (the temporary namespace's
 * removal when the worker exits, at the latest) would begin inside it.
 */
void
SecurityEndCycle(void)
{
	Assert(OidIsValid(cycle_saved_userid));
	SetUserIdAndSecContext(cycle_saved_userid, cycle_saved_sec_context);
}

/*
 * In a first load's reader (reader.c), before it reads anything but the
 * registration: act as the registration's owner inside a
 * security-restricted operation, with search_path pinned, as the cycle's
 * worker does, once the copy and its history table are checked to be the
 * owner's (without waiting for a lock: the cycle's worker may hold one
 * that blocks the check's while it waits for this reader).  A reader makes
 * no temporary table, so no temporary namespace is made for it.
 */
void
SecurityBeginReader(TableConfig *cfg)
{
	Oid			owner = cfg->owner;

	check_owned_locked(cfg, false);
	SetUserIdAndSecContext(owner, SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	SetConfigOption("search_path", SECURITY_SEARCH_PATH, PGC_USERSET, PGC_S_SESSION);
}

/*
 * Run a CREATE TEMPORARY TABLE statement (through SPI, already connected)
 * as the current role but outside the security-restricted operation, which
 * forbids making temporary tables: as REFRESH MATERIALIZED VIEW
 * CONCURRENTLY makes its diff table.  The statement must run no user code
 * (a CREATE TABLE AS ... WITH NO DATA of plain columns does not).
 */
void
SecurityCreateTempTable(const char *sql)
{
	Oid			userid;
	int			sec_context;

	GetUserIdAndSecContext(&userid, &sec_context);
	SetUserIdAndSecContext(userid, sec_context & ~SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not run: %s", sql);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(userid, sec_context);
	}
	PG_END_TRY();
}
