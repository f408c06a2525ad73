/*-------------------------------------------------------------------------
 *
 * version.h
 *	  The library and the extension's catalog must be of one release
 *	  (version.c).
 *
 * Installing a release replaces the library at once for every new backend
 * and background worker, while each database's catalog stays as it was
 * until ALTER EXTENSION treble_sync UPDATE runs there.  Every SQL entry
 * point written in C calls VersionRequireCatalog() first (the PL/pgSQL
 * ones through treble_sync.require_primary()), and every background
 * worker before it reads or writes the catalog, so that a library never
 * runs its statements against the tables of another release.  (A worker
 * started by a session of another release is refused before that, by the
 * magic number of its shared memory segment.)
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_VERSION_H
#define TREBLE_SYNC_VERSION_H

#include "postgres.h"

/* The release this library is, and whose catalog it reads (the Makefile's EXTVERSION) */
#ifndef TREBLE_SYNC_VERSION
#error "TREBLE_SYNC_VERSION must be defined (the Makefile passes EXTVERSION)"
#endif

extern void VersionRequireCatalog(const char *funcname);
extern void VersionLookupExtension(Oid *extoid, Oid *owner, char **version);

#endif							/* TREBLE_SYNC_VERSION_H */
