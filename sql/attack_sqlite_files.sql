-- SQLite warehouses whose names or file encoding the driver alters: a
-- column name that is not UTF-8 (the driver drops the bad byte, so the
-- registration would name a column the table does not have, which SQLite
-- would read as a string literal: every row would land as the column's
-- name), a column gone from the table, and a file stored as UTF-16 (whose text read as bytes is UTF-16
-- code units).  Each is refused or fails; no value lands changed.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db
\setenv TS_REGRESS_WH_DIR :wh_dir

-- a column named "a" 0xFF "b"
\! printf 'CREATE TABLE badname (id INTEGER PRIMARY KEY, "a\377b" TEXT, synced_at TIMESTAMP); INSERT INTO badname VALUES (1, %s, %s);' "'secret value'" "'2026-11-28 10:00:00'" | sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT name, columns FROM treble_sync.add_table('badname', 'wh', key_columns => '{id}');
SELECT count(*) FROM treble_sync.tables WHERE name = 'badname';
-- a column or a table named with a character beyond the Basic Multilingual
-- Plane, which the driver cannot send in a statement
SELECT $$ CREATE TABLE planes (id INTEGER PRIMARY KEY, "a😀b" TEXT, synced_at TIMESTAMP);
CREATE TABLE "t😀" (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT name FROM treble_sync.add_table('planes', 'wh', key_columns => '{id}');
SELECT name FROM treble_sync.add_table('t😀', 'wh', key_columns => '{id}', name => 't_plane');
-- and by a cycle, once a column was renamed so in the warehouse
SELECT $$ CREATE TABLE laterbad (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP);
INSERT INTO laterbad VALUES (1, 'kept', '2026-11-28 10:00:00'); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT name FROM treble_sync.add_table('laterbad', 'wh', key_columns => '{id}');
SELECT status, rows_pulled FROM treble_sync.sync_table('laterbad');
\! printf 'ALTER TABLE laterbad RENAME COLUMN v TO "v\377"; INSERT INTO laterbad VALUES (2, %s, %s);' "'secret value'" "'2026-11-28 11:00:00'" | sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, rows_pulled, rows_inserted, split_part(error, E'\n', 1) AS error
FROM treble_sync.sync_table('laterbad');
SELECT id, v FROM laterbad ORDER BY id;
SELECT treble_sync.remove_table('laterbad', drop_local => true);

-- a column that is gone from the table is an error too, not its name as text
SELECT $$ CREATE TABLE gone (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP);
INSERT INTO gone VALUES (1, 'kept', '2026-11-28 10:00:00'); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT name FROM treble_sync.add_table('gone', 'wh', key_columns => '{id}');
SELECT status, rows_pulled FROM treble_sync.sync_table('gone');
SELECT $$ ALTER TABLE gone RENAME COLUMN v TO w;
INSERT INTO gone VALUES (2, 'new', '2026-11-28 11:00:00'); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, rows_pulled, rows_inserted, split_part(error, E'\n', 1) AS error
FROM treble_sync.sync_table('gone');
SELECT id, v FROM gone ORDER BY id;
SELECT treble_sync.remove_table('gone', drop_local => true);

-- a file stored as UTF-16: refused at registration
\! sqlite3 -bail -batch "$TS_REGRESS_WH_DIR/u16.db" "PRAGMA encoding='UTF-16le'; CREATE TABLE u16 (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP); INSERT INTO u16 VALUES (1, '中你', '2026-11-28 10:00:00');" && chmod 644 "$TS_REGRESS_WH_DIR/u16.db"
\set conn 'Driver={SQLite3};Database=' :wh_dir /u16.db
CREATE SERVER u16 FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'conn');
CREATE USER MAPPING FOR CURRENT_USER SERVER u16;
CREATE TABLE u16 (id bigint PRIMARY KEY, v text, synced_at timestamp);
SELECT name FROM treble_sync.add_table('u16', 'u16', key_columns => '{id}', local_table => 'u16');
-- and by a cycle, when the file registered is replaced by a UTF-16 one
\! rm -f "$TS_REGRESS_WH_DIR/u16.db" && sqlite3 -bail -batch "$TS_REGRESS_WH_DIR/u16.db" "CREATE TABLE u16 (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP); INSERT INTO u16 VALUES (1, 'ascii', '2026-11-28 10:00:00');" && chmod 644 "$TS_REGRESS_WH_DIR/u16.db"
SELECT name FROM treble_sync.add_table('u16', 'u16', key_columns => '{id}', local_table => 'u16');
SELECT status, rows_pulled, rows_inserted FROM treble_sync.sync_table('u16');
\! rm -f "$TS_REGRESS_WH_DIR/u16.db" && sqlite3 -bail -batch "$TS_REGRESS_WH_DIR/u16.db" "PRAGMA encoding='UTF-16le'; CREATE TABLE u16 (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP); INSERT INTO u16 VALUES (1, '中你', '2026-11-28 11:00:00');" && chmod 644 "$TS_REGRESS_WH_DIR/u16.db"
SELECT status, rows_pulled, rows_updated, split_part(error, E'\n', 1) AS error
FROM treble_sync.sync_table('u16');
SELECT id, v FROM u16;
SELECT treble_sync.remove_table('u16');
DROP TABLE u16;
DROP SERVER u16 CASCADE;
\! rm -f "$TS_REGRESS_WH_DIR/u16.db"
