#!/usr/bin/env bash
# Reproduction: valid ClickHouse Strings longer than a bound slot, read
# whole with SQLGetData(SQL_C_BINARY) by read_whole() (src/fetch.c), come
# back wrong at some lengths: a value of exactly 65536 or 262144 bytes
# arrives with its last byte replaced by a NUL (the driver terminates
# binary data like a string when the value exactly fills the buffer), one
# of 65537 or 262145 bytes arrives as 196609 or 786433 bytes.  Because the
# buffer (b->whole) keeps its size from row to row, which lengths go wrong
# depends on the rows read before.  Each became a bad row "text with a NUL
# byte" here (under fail, the cycle fails on a valid value); no NUL-free
# corruption was seen, but nothing guarantees one cannot be.
# usage (clusters' env sourced): bash test/attack/clickhouse_long_string.sh DBNAME
db=${1:-postgres}
ch() { python3 "$(dirname "$0")/../warehouses/clickhouse_sql.py"; }
ch <<'SQL'
DROP TABLE IF EXISTS attack_probe;
CREATE TABLE attack_probe (k UInt32, s String, synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY k;
INSERT INTO attack_probe SELECT n, concat(repeat('y', n - 1), 'z'), '2026-11-28 10:00:00' FROM (SELECT arrayJoin(arrayConcat(range(65530, 65545), [98304, 131071, 131072, 131073, 196608, 262143, 262144, 262145, 300000, 400000, 524287, 524288, 524289, 600000, 700000, 800000, 900000, 999999])) AS n);
SQL
psql -X -q -d "$db" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS treble_sync;
DO $$ BEGIN EXECUTE format('CREATE SERVER attack_ch FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)', current_setting('treble_test.clickhouse_odbc')); END $$;
CREATE USER MAPPING FOR CURRENT_USER SERVER attack_ch;
SELECT name FROM treble_sync.add_table('attack_probe', 'attack_ch', key_columns => '{k}', on_bad_row => 'quarantine', max_bad_row_ratio => 1);
-- expected: 33 pulled, 0 bad; observed: 4 bad
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('attack_probe');
SELECT key AS length, (length(raw_value) / 2 - 1) AS bytes_received, reason FROM treble_sync.quarantine
WHERE table_name = 'attack_probe' ORDER BY key::int;
SELECT treble_sync.remove_table('attack_probe', drop_local => true);
DELETE FROM treble_sync.quarantine WHERE table_name = 'attack_probe';
DROP SERVER attack_ch CASCADE;
SQL
ch <<<"DROP TABLE IF EXISTS attack_probe"
