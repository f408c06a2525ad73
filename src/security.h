/*-------------------------------------------------------------------------
 *
 * security.h
 *	  Who may start a cycle of a copy, and the identity a cycle runs as.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_SECURITY_H
#define TREBLE_SYNC_SECURITY_H

#include "postgres.h"

/* The search_path every statement of the extension runs with. */
#define SECURITY_SEARCH_PATH "pg_catalog, pg_temp"

/* What SecurityBecomeOwner saved, for SecurityRestore. */
typedef struct SecurityState
{
	Oid			saved_userid;
	int			saved_sec_context;
	int			guc_nestlevel;
} SecurityState;

struct TableConfig;

extern bool SecurityMayManage(Oid owner);
extern void SecurityRequireManage(Oid owner, const char *kind, const char *name,
								  const char *action);
extern bool SecurityMayRun(struct TableConfig *cfg);
extern void SecurityRequireRun(struct TableConfig *cfg, const char *action);
extern void SecurityCheckCopyOwner(struct TableConfig *cfg);
extern void SecurityCheckReadAsOwner(struct TableConfig *cfg, Oid relid);
extern Oid	SecurityRelationOwner(Oid relid);
extern void SecurityBecomeOwner(struct TableConfig *cfg, SecurityState *state);
extern void SecurityRestore(SecurityState *state);
extern void SecurityBeginCycle(struct TableConfig *cfg);
extern void SecurityEndCycle(void);
extern void SecurityResumeCycle(struct TableConfig *cfg);
extern void SecurityBeginReader(struct TableConfig *cfg);
extern void SecurityCreateTempTable(const char *sql);
extern int	SecurityPinSearchPath(void);
extern void SecurityPinWorkerSettings(void);
extern void SecurityUnpinSearchPath(int nestlevel);

#endif							/* TREBLE_SYNC_SECURITY_H */
