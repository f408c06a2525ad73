#!/usr/bin/env bash
# Reproduction: an SQLite column whose name is not UTF-8 ("a" 0xFF "b").
# The SQLite ODBC driver drops the byte when it reports the name, the
# registration records "ab", and the pull's SELECT "ab" names no column:
# SQLite then reads "ab" as a string literal, so every row lands with the
# text 'ab' in place of its value, and verify says the day matches.
# usage (after sourcing the clusters' env): bash test/attack/sqlite_column_name.sh DBNAME
set -e
db=${1:-postgres}
dir=$(mktemp -d /tmp/ts_colname_XXXXXX); chmod 755 "$dir"
printf 'CREATE TABLE badname (id INTEGER PRIMARY KEY, "a\377b" TEXT, synced_at TIMESTAMP); INSERT INTO badname VALUES (1, %s, %s);' \
    "'secret value'" "'2026-11-28 10:00:00'" | sqlite3 "$dir/wh.db"
chmod 644 "$dir/wh.db"
psql -X -d "$db" -v conn="Driver={SQLite3};Database=$dir/wh.db" <<'SQL'
CREATE EXTENSION IF NOT EXISTS treble_sync;
CREATE SERVER colname_wh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'conn');
CREATE USER MAPPING FOR CURRENT_USER SERVER colname_wh;
SELECT name, columns FROM treble_sync.add_table('badname', 'colname_wh', key_columns => '{id}');
SELECT status, rows_pulled FROM treble_sync.sync_table('badname');
-- expected: 'secret value' or a bad row / refusal; observed: 'ab'
SELECT * FROM badname;
SELECT day, match FROM treble_sync.verify('badname');
SELECT treble_sync.remove_table('badname', drop_local => true);
DROP SERVER colname_wh CASCADE;
SQL
rm -rf "$dir"
