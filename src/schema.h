/*-------------------------------------------------------------------------
 *
 * schema.h
 *	  The warehouse table's metadata, and the local table made from it
 *	  (schema.c).
 *
 * RemoteColumn keeps the driver's SQL_* type code as a plain int16 (an
 * SQLSMALLINT): the files that read it against the codes include odbc.h,
 * the others need not see the ODBC API.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TREBLE_SYNC_SCHEMA_H
#define TREBLE_SYNC_SCHEMA_H

#include "postgres.h"

#include "treble_sync.h"

typedef struct RemoteColumn
{
	char	   *name;
	int16		data_type;		/* SQL_* type code (SQLSMALLINT) */
	char	   *type_name;		/* the driver's own name for it */
	int32		column_size;
	int16		decimal_digits;
	bool		decimal_digits_null;
	bool		declared_affinity;	/* SQLite: the type name is all there is */
	bool		clickhouse_type;	/* type_name is ClickHouse's own (schema.c) */
} RemoteColumn;

typedef struct RemoteTable
{
	char	   *schema;			/* as the driver reports it; may be NULL */
	char	   *table;
	List	   *columns;		/* of RemoteColumn *, in ordinal order */
} RemoteTable;

extern RemoteTable *SchemaDescribeRemote(OdbcConn *conn, const char *schema,
										 const char *table);
extern List *SchemaRemotePrimaryKey(OdbcConn *conn, RemoteTable *rt);
extern RemoteColumn *SchemaFindColumn(RemoteTable *rt, const char *name);
extern char *SchemaLocalTypeFor(RemoteColumn *col);
extern char *SchemaRemoteTypeName(RemoteColumn *col);
extern Oid	SchemaCreateLocalTable(const char *schema, const char *relname,
								   RemoteTable *rt, List *columns, List *key_columns,
								   const char *event_column, List *type_overrides);
extern void SchemaCheckLocalTable(Oid relid, List *columns, List *key_columns);
extern bool SchemaHasKeyIndex(Oid relid, List *key_columns);

#endif							/* TREBLE_SYNC_SCHEMA_H */
