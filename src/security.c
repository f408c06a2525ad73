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
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "localsql.h"
#include "security.h"
#include "treble_sync.h"

/*
 * Whether the current role has the privileges of a registration's owner:
 * what changing it or starting its cycles requires.
 */
static bool
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
 * Error unless the current role may act on a registration owned by owner.
 * "action" completes "permission denied to %s table \"%s\"".
 */
void
SecurityRequireManage(Oid owner, const char *table_name, const char *action)
{
	if (SecurityMayManage(owner))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s table \"%s\"", action, table_name),
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
 * A cycle runs as the registration's owner: the local table must still be
 * owned by that role, or whoever owns it now could plant a trigger that
 * runs with the privileges of the registration's owner.
 */
void
SecurityCheckCopyOwner(TableConfig *cfg)
{
	Oid			relowner = SecurityRelationOwner(cfg->local_relid);

	if (!OidIsValid(relowner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the local table of \"%s\" no longer exists", cfg->name),
				 errhint("Register the table again with treble_sync.add_table().")));
	if (relowner != cfg->owner)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the local table of \"%s\" is owned by role \"%s\", not by the registration's owner \"%s\"",
						cfg->name, GetUserNameFromId(relowner, true),
						GetUserNameFromId(cfg->owner, true)),
				 errdetail("A cycle runs as the registration's owner, so the copy must be that role's."),
				 errhint("ALTER TABLE %s OWNER TO %s, or register the table again as its new owner.",
						 LocalTableName(cfg->local_relid),
						 quote_identifier(GetUserNameFromId(cfg->owner, true)))));
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
 * Act as owner inside a security-restricted operation, with search_path
 * pinned, until SecurityRestore: verify() reads a copy this way in the
 * caller's session.  It makes no temporary table, so unlike a cycle
 * (SecurityBeginCycle) it needs no temporary namespace.  An error inside
 * unwinds both at transaction abort.
 */
void
SecurityBecomeOwner(Oid owner, SecurityState *state)
{
	GetUserIdAndSecContext(&state->saved_userid, &state->saved_sec_context);
	SetUserIdAndSecContext(owner, state->saved_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	state->guc_nestlevel = SecurityPinSearchPath();
}

void
SecurityRestore(SecurityState *state)
{
	SecurityUnpinSearchPath(state->guc_nestlevel);
	SetUserIdAndSecContext(state->saved_userid, state->saved_sec_context);
}

/*
 * In a worker, at the start of each attempt's transaction: act as the
 * registration's owner inside a security-restricted operation, with
 * search_path pinned, for the rest of the process.  The temporary
 * namespace (where the staging table lives) is made first, as the owner:
 * a restricted operation may not make it.  A transaction that aborts
 * returns to the identity it started with, so every attempt calls this.
 */
void
SecurityBeginCycle(Oid owner)
{
	Oid			temp_ns;
	Oid			temp_toast_ns;

	SetUserIdAndSecContext(owner, SECURITY_LOCAL_USERID_CHANGE);
	GetTempNamespaceState(&temp_ns, &temp_toast_ns);
	if (!OidIsValid(temp_ns))
		(void) LookupCreationNamespace("pg_temp");
	SetUserIdAndSecContext(owner, SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	SetConfigOption("search_path", SECURITY_SEARCH_PATH, PGC_USERSET, PGC_S_SESSION);
}

/*
 * In a first load's reader (readahead.c), before it reads anything: act
 * as the registration's owner inside a security-restricted operation,
 * with search_path pinned, as the cycle's worker does; a reader makes no
 * temporary table, so no temporary namespace is made for it.
 */
void
SecurityBeginReader(Oid owner)
{
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
