-- Registering tables of the SQLite warehouse, with the metadata read from
-- it and clear errors for bad input; then the first cycle.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

SELECT $$
CREATE TABLE messages (message_id INTEGER PRIMARY KEY, body TEXT, created_at TIMESTAMP,
                       synced_at TIMESTAMP);
INSERT INTO messages VALUES (1, 'hello', '2026-11-27 09:00:00', '2026-11-27 09:00:05');
INSERT INTO messages VALUES (2, 'Zoë — 東京 “quoted”', '2026-11-28 10:00:00.000001', '2026-11-28 10:00:00.5');
INSERT INTO messages VALUES (3, NULL, NULL, '2026-11-28 11:00:00');
CREATE TABLE sessions (session_id TEXT, created_at TIMESTAMP, synced_at TIMESTAMP, n INTEGER);
CREATE TABLE "fact_x" (id INTEGER, synced_at TIMESTAMP);
CREATE TABLE "factXx" (id INTEGER, synced_at TIMESTAMP);
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

-- the key defaults to the warehouse's primary key; the local table is created
SELECT name, remote_schema, remote_table, local_table, key_columns, columns, cursor_column,
       event_column, hot_window, enabled, watermark
FROM treble_sync.add_table('messages', 'wh', event_column => 'created_at');
\d messages

-- no primary key and no key_columns
SELECT treble_sync.add_table('sessions', 'wh');
-- unknown table, unknown key / cursor / event columns, wrong cursor and event types
SELECT treble_sync.add_table('missing', 'wh', key_columns => '{id}');
SELECT treble_sync.add_table('sessions', 'wh', key_columns => '{sid}');
SELECT treble_sync.add_table('sessions', 'wh', key_columns => '{session_id}', cursor_column => 'updated_at');
SELECT treble_sync.add_table('sessions', 'wh', key_columns => '{session_id}', event_column => 'when');
SELECT treble_sync.add_table('sessions', 'wh', key_columns => '{n}', cursor_column => 'session_id');
SELECT treble_sync.add_table('sessions', 'wh', key_columns => '{session_id}', event_column => 'n');
SELECT treble_sync.add_table('sessions', 'wh', key_columns => '{session_id,session_id}');
-- a server that is not a treble_sync server, and one that does not exist
CREATE FOREIGN DATA WRAPPER other_fdw;
CREATE SERVER other FOREIGN DATA WRAPPER other_fdw;
SELECT treble_sync.add_table('sessions', 'other', key_columns => '{session_id}');
SELECT treble_sync.add_table('sessions', 'nowhere', key_columns => '{session_id}');
DROP SERVER other;
DROP FOREIGN DATA WRAPPER other_fdw;
-- registered twice
SELECT treble_sync.add_table('messages', 'wh');
-- "_" in a name is not a wildcard: fact_x does not also match factXx
SELECT name, columns FROM treble_sync.add_table('fact_x', 'wh', key_columns => '{id}');

-- an existing local table must have the columns and a unique index on the key
CREATE SCHEMA local_side;
CREATE TABLE local_side.sessions (session_id text, created_at timestamp, synced_at timestamp);
SELECT treble_sync.add_table('sessions', 'wh', key_columns => '{session_id}', local_table => 'local_side.sessions');
ALTER TABLE local_side.sessions ADD COLUMN n integer, ADD COLUMN extra text DEFAULT 'local';
SELECT treble_sync.add_table('sessions', 'wh', key_columns => '{session_id}', local_table => 'local_side.sessions');
CREATE UNIQUE INDEX ON local_side.sessions (session_id);
SELECT name, local_table, key_columns, columns
FROM treble_sync.add_table('sessions', 'wh', key_columns => '{session_id}',
                           event_column => 'created_at', local_table => 'local_side.sessions');

-- unknown name for sync_table
SELECT * FROM treble_sync.sync_table('nope');

-- the first cycle: everything up to the newest synced_at, which becomes
-- the watermark; the hot window starts three days before its day
SELECT status, watermark_from, watermark_to, hot_window_from, rows_pulled,
       rows_inserted, rows_updated, rows_deleted, bytes_pulled > 0 AS bytes, error
FROM treble_sync.sync_table('messages');
SELECT * FROM messages ORDER BY message_id;
SELECT watermark FROM treble_sync.tables WHERE name = 'messages';

-- an empty warehouse table: the first cycle succeeds with nothing
SELECT status, rows_pulled, watermark_to FROM treble_sync.sync_table('sessions');
SELECT count(*) FROM local_side.sessions;

-- the run log and the status view
SELECT table_name, status, rows_pulled, rows_inserted, finished_at >= started_at AS timed,
       run_by = current_user::regrole AS run_by_me
FROM treble_sync.runs ORDER BY table_name, run_id;
SELECT table_name, last_status, watermark FROM treble_sync.status ORDER BY table_name;

-- configuration is kept by pg_dump
SELECT extconfig::regclass[] FROM pg_extension WHERE extname = 'treble_sync';
