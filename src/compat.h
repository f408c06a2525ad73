/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The PostgreSQL majors treble_sync builds against (15 to 18), in one
 *	  place.
 *
 * The code is written against the newest server API; what an older major
 * names differently is given that name here, under PG_VERSION_NUM guards,
 * so that no other file needs an #if on the server's version.  When a major
 * stops being supported, its block goes.
 *
 * What changed, major by major, for the calls treble_sync makes (checked
 * against each major's headers; README.md lists the majors):
 *
 *	  16  the per-class ownership and ACL checks (pg_class_ownercheck,
 *		  pg_foreign_server_aclcheck...) became object_ownercheck() and
 *		  object_aclcheck(), which take the catalog's OID;
 *		  stringToQualifiedNameList() takes an escontext (NULL: errors are
 *		  thrown, as before); DecodeDateTime() reports what was wrong in a
 *		  DateTimeErrorExtra (treble_sync only tests its result).
 *	  17  PGPROC's local transaction id moved into its vxid
 *		  (MyProc->vxid.lxid); the wait events are generated, and
 *		  WAIT_EVENT_MQ_RECEIVE is WAIT_EVENT_MESSAGE_QUEUE_RECEIVE;
 *		  utils/array.h and utils/wait_event.h are no longer pulled in by
 *		  the headers that included it (each file includes what it uses).
 *		  ResourceOwnerCreate, BeginCopyFrom,
 *		  BackgroundWorkerInitializeConnectionByOid and pgstat_progress_*
 *		  are as in 15.
 *	  18  pg_attribute_noreturn() (after a declaration) gave way to
 *		  pg_noreturn (before it); PG_MODULE_MAGIC_EXT (name and version
 *		  shown by pg_get_loaded_modules()) is used when the server has it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_COMPAT_H
#define TREBLE_SYNC_COMPAT_H

#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_namespace.h"
#include "fmgr.h"
#include "utils/acl.h"
#include "utils/datetime.h"
#include "utils/regproc.h"

#if PG_VERSION_NUM < 150000
#error "treble_sync needs PostgreSQL 15 or later"
#endif

/*
 * The module's magic block: from 18 on, with the name and version
 * pg_get_loaded_modules() shows (TREBLE_SYNC_VERSION comes from the
 * Makefile's EXTVERSION).
 */
#ifdef PG_MODULE_MAGIC_EXT
#define TS_MODULE_MAGIC \
	PG_MODULE_MAGIC_EXT(.name = "treble_sync", .version = TREBLE_SYNC_VERSION)
#else
#define TS_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/* 18's pg_noreturn, before a declaration; older majors had it after */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

#if PG_VERSION_NUM < 160000

/*
 * object_ownercheck(), as 16 has it, for the catalogs whose objects
 * treble_sync checks the ownership of.
 */
static inline bool
object_ownercheck(Oid classid, Oid objectid, Oid roleid)
{
	switch (classid)
	{
		case RelationRelationId:
			return pg_class_ownercheck(objectid, roleid);
		case ForeignServerRelationId:
			return pg_foreign_server_ownercheck(objectid, roleid);
		default:
			elog(ERROR, "object_ownercheck: unsupported catalog %u", classid);
	}
	pg_unreachable();
}

/*
 * object_aclcheck(), as 16 has it, for the catalogs whose objects
 * treble_sync checks privileges on.
 */
static inline AclResult
object_aclcheck(Oid classid, Oid objectid, Oid roleid, AclMode mode)
{
	switch (classid)
	{
		case ForeignServerRelationId:
			return pg_foreign_server_aclcheck(objectid, roleid, mode);
		case NamespaceRelationId:
			return pg_namespace_aclcheck(objectid, roleid, mode);
		case DatabaseRelationId:
			return pg_database_aclcheck(objectid, roleid, mode);
		default:
			elog(ERROR, "object_aclcheck: unsupported catalog %u", classid);
	}
	pg_unreachable();
}

/* 16 added the escontext argument; NULL throws, as 15 always does */
#define ts_stringToQualifiedNameList(string) \
	stringToQualifiedNameList(string)

#define ts_DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp) \
	DecodeDateTime((field), (ftype), (nf), (dtype), (tm), (fsec), (tzp))

#else							/* PG_VERSION_NUM >= 160000 */

#define ts_stringToQualifiedNameList(string) \
	stringToQualifiedNameList((string), NULL)

/*
 * DecodeDateTime() without the details of a failure, which the callers do
 * not report (they say the value is not a date and time, without quoting it).
 */
static inline int
ts_DecodeDateTime(char **field, int *ftype, int nf, int *dtype,
				  struct pg_tm *tm, fsec_t *fsec, int *tzp)
{
	DateTimeErrorExtra extra;

	memset(&extra, 0, sizeof(extra));
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp, &extra);
}

#endif							/* PG_VERSION_NUM < 160000 */

/* MyProc's local transaction id: in its vxid from 17 on (storage/proc.h) */
#if PG_VERSION_NUM >= 170000
#define TS_MY_LXID (MyProc->vxid.lxid)
#else
#define TS_MY_LXID (MyProc->lxid)
/* 17's generated name of a shm_mq receive wait (utils/wait_event.h) */
#define WAIT_EVENT_MESSAGE_QUEUE_RECEIVE WAIT_EVENT_MQ_RECEIVE
#endif

#endif							/* TREBLE_SYNC_COMPAT_H */
