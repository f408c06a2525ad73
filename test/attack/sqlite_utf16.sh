#!/usr/bin/env bash
# Reproduction: an SQLite file whose encoding is UTF-16le.  docs/limits.md
# says its values would be bad rows, "none changed"; but CAST(v AS BLOB)
# gives UTF-16 code units, and text whose code units hold no NUL and form
# valid UTF-8 lands changed: '中你' (U+4E2D U+4F60: 2D 4E 60 4F) lands as
# '-N`O'.  (verify only reports the day because the ASCII row was bad.)
# usage (clusters' env sourced): bash test/attack/sqlite_utf16.sh DBNAME
set -e
db=${1:-postgres}
d=$(mktemp -d /tmp/ts_u16_XXXXXX); chmod 755 "$d"
sqlite3 "$d/wh.db" "PRAGMA encoding='UTF-16le'; CREATE TABLE u16 (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP);
INSERT INTO u16 VALUES (1, '中你', '2026-11-28 10:00:00');"
chmod 644 "$d/wh.db"
psql -X -d "$db" -v conn="Driver={SQLite3};Database=$d/wh.db" <<'SQL'
CREATE EXTENSION IF NOT EXISTS treble_sync;
CREATE SERVER u16 FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'conn');
CREATE USER MAPPING FOR CURRENT_USER SERVER u16;
SELECT name FROM treble_sync.add_table('u16', 'u16', key_columns => '{id}');
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('u16');
-- expected: '中你' or a bad row; observed: '-N`O', and verify matches
SELECT * FROM u16;
SELECT day, match FROM treble_sync.verify('u16');
SELECT treble_sync.remove_table('u16', drop_local => true);
DROP SERVER u16 CASCADE;
SQL
rm -rf "$d"
