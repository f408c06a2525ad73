/*-------------------------------------------------------------------------
 *
 * option.h
 *	  Server and user-mapping options of the treble_sync wrapper: which are
 *	  valid, who may set what, and the ODBC connection string built from
 *	  them (see option.c).
 *
 * Self-contained on purpose: odbc.c asks this module for a vetted
 * connection string and for what it knows of a driver; nothing here needs
 * the ODBC layer's internals.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_OPTION_H
#define TREBLE_SYNC_OPTION_H

#include "postgres.h"

#include "fmgr.h"
#include "foreign/foreign.h"

/* Default rows per round trip asked of drivers that would otherwise buffer all */
#define TREBLE_SYNC_DEFAULT_FETCH_SIZE 10000

/* The ODBC drivers treble_sync knows; each has its own rules. */
typedef enum DriverFamily
{
	DRIVER_UNKNOWN = 0,
	DRIVER_PSQLODBC,
	DRIVER_MARIADB,
	DRIVER_MYSQL,
	DRIVER_SQLITE,
	DRIVER_CLICKHOUSE			/* the official ClickHouse ODBC driver */
} DriverFamily;

extern Datum treble_sync_fdw_validator(PG_FUNCTION_ARGS);

extern const char *OptionListString(List *options, const char *name);
extern const char *FdwServerStringOption(ForeignServer *server, const char *name);
extern int	FdwServerIntOption(ForeignServer *server, const char *name, int def);

extern char *OptionConnectionString(ForeignServer *server, UserMapping *mapping,
									DriverFamily family, bool streaming,
									DriverFamily *used);
extern DriverFamily OptionDriverFamilyOfLibrary(const char *library);
extern char *OptionClickHouseTlsSettings(ForeignServer *server);
extern bool OptionSettingsMissing(ForeignServer *server, DriverFamily family,
								  bool streaming);
extern const char *OptionMappingPassword(UserMapping *mapping);
extern const char *OptionSqliteFile(ForeignServer *server);
extern char *OptionVettedHost(ForeignServer *server);
extern char *OptionScrubSecret(const char *message, const char *secret);

#endif							/* TREBLE_SYNC_OPTION_H */
