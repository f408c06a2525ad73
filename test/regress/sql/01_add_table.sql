-- Registering tables: metadata from the warehouse, clear errors for bad input.
SET datestyle = ISO;
SELECT wh($$
    DROP SCHEMA IF EXISTS reg CASCADE;
    CREATE SCHEMA reg;
    CREATE TABLE reg.with_pk (message_id bigint PRIMARY KEY, body text, created_at timestamp, synced_at timestamp);
    CREATE TABLE reg.no_pk (session_id text, created_at timestamp, synced_at timestamp, n integer);
    CREATE TABLE reg."fact_x" (id int, synced_at timestamp);
    CREATE TABLE reg."factXx" (id int, synced_at timestamp);
$$);

-- the key defaults to the warehouse's primary key; the local table is created
SELECT name, remote_schema, remote_table, local_table, key_columns, columns, cursor_column,
       event_column, hot_window, enabled, watermark
FROM treble_sync.add_table('reg.with_pk', 'wh', event_column => 'created_at');
\d with_pk

-- no primary key and no key_columns
SELECT treble_sync.add_table('reg.no_pk', 'wh');
-- unknown table, unknown key / cursor / event columns, wrong cursor type
SELECT treble_sync.add_table('reg.missing', 'wh', key_columns => '{id}');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{sid}');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', cursor_column => 'updated_at');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', event_column => 'when');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{n}', cursor_column => 'session_id');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', event_column => 'n');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', cursor_column => NULL);
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', mode => 'replace');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', cursor_column => 'n', cursor_overlap => '1 hour');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', cursor_overlap => '-1 hour');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', cursor_column => 'n', initial_chunk => '1 day');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', mode => 'append', initial_chunk => '1 day');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id,session_id}');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', hot_window => '-1 day');
-- intervals carry units, and are neither mixed-sign, absurd nor under a second
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', hot_window => '3');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', hot_window => ' -2.5 ');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', hot_window => '1 day -2 hours');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', hot_window => '101 years');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', hot_window => '500 milliseconds');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', hot_window => 'soon');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', initial_chunk => '7');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', initial_chunk => '-7 days');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', initial_chunk => '1 month -1 day');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', initial_chunk => '1000 years');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', initial_chunk => '0.5 seconds');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', cursor_overlap => '3');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', cursor_overlap => '1 hour -5 minutes');
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', cursor_overlap => '200 years');
SELECT treble_sync.add_table('a.b.c', 'wh', key_columns => '{id}');
-- a server that is not a treble_sync server, and one that does not exist
CREATE FOREIGN DATA WRAPPER other_fdw;
CREATE SERVER other FOREIGN DATA WRAPPER other_fdw;
SELECT treble_sync.add_table('reg.no_pk', 'other', key_columns => '{session_id}');
SELECT treble_sync.add_table('reg.no_pk', 'nowhere', key_columns => '{session_id}');
DROP SERVER other;
DROP FOREIGN DATA WRAPPER other_fdw;
-- registered twice
SELECT treble_sync.add_table('reg.with_pk', 'wh');
-- "_" in a name is not a wildcard: fact_x does not also match factXx
SELECT name, columns FROM treble_sync.add_table('reg.fact_x', 'wh', key_columns => '{id}', local_table => 'reg_fact_x');

-- an existing local table must have the columns and a unique index on the key
CREATE SCHEMA local_side;
CREATE TABLE local_side.sessions (session_id text, created_at timestamp, synced_at timestamp);
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', local_table => 'local_side.sessions');
ALTER TABLE local_side.sessions ADD COLUMN n integer, ADD COLUMN extra text DEFAULT 'local';
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', local_table => 'local_side.sessions');
CREATE UNIQUE INDEX ON local_side.sessions (session_id);
SELECT name, local_table, key_columns, columns
FROM treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}',
                           event_column => 'created_at', local_table => 'local_side.sessions');
-- another registration into the same local table
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}',
                             local_table => 'local_side.sessions', name => 'sessions_again');

-- unknown name for sync_table
SELECT * FROM treble_sync.sync_table('nope');

-- a role without a user mapping
CREATE ROLE regress_nomap;
GRANT USAGE ON FOREIGN SERVER wh TO regress_nomap;
GRANT treble_sync_admin TO regress_nomap;
SET ROLE regress_nomap;
SELECT treble_sync.add_table('reg.no_pk', 'wh', key_columns => '{session_id}', name => 'nomap');
RESET ROLE;
REVOKE USAGE ON FOREIGN SERVER wh FROM regress_nomap;
DROP ROLE regress_nomap;

-- configuration is kept by pg_dump
SELECT extconfig::regclass[] FROM pg_extension WHERE extname = 'treble_sync';
