#!/usr/bin/env bash
# Measure: a cycle of a hot window of N keys, B of them quarantined
# (unresolved, their key never in the copy), one new row per cycle.
# usage: bash test/attack/quarantine_cliff.sh N B   (needs database "attack")
source /work/wt/setup.sh attack2 >/dev/null; source $TS_CI_DIR/env
N=$1; B=$2
db=attack; dir=/tmp/ts_attack2/scratch/qc; rm -rf $dir; mkdir -p $dir; chmod 777 $dir
S() { sqlite3 -bail -batch $dir/wh.db "$1"; chmod 666 $dir/wh.db; }
S "CREATE TABLE qc (id INTEGER, code TEXT, happened_at TIMESTAMP, synced_at TIMESTAMP);
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $N)
INSERT INTO qc SELECT n, CASE WHEN n <= $B THEN 'too long' ELSE 'c' END, datetime('now', '-1 hour'), '2026-11-28 10:00:00' FROM g;"
P="psql -X -q -d $db"
$P -c "DROP SERVER IF EXISTS qc CASCADE" -c "DROP TABLE IF EXISTS qc" -c "CREATE SERVER qc FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string 'Driver={SQLite3};Database=$dir/wh.db')" -c "CREATE USER MAPPING FOR CURRENT_USER SERVER qc" \
  -c "CREATE TABLE qc (id int PRIMARY KEY, code varchar(5), happened_at timestamp, synced_at timestamp)" \
  -c "SELECT name FROM treble_sync.add_table('qc', 'qc', key_columns => '{id}', event_column => 'happened_at', local_table => 'qc', on_bad_row => 'quarantine', max_bad_row_ratio => 1)" >/dev/null 2>&1
C="SELECT status, rows_pulled, rows_bad, round(extract(epoch from finished_at - started_at)::numeric, 2) AS secs FROM treble_sync.sync_table('qc')"
$P -c "$C"
for i in 1 2 3; do
  S "INSERT INTO qc VALUES ($N + $i, 'n', datetime('now', '-1 hour'), '2026-11-28 11:0$i:00');"
  $P -At -c "$C"
done
$P -c "SELECT treble_sync.remove_table('qc', drop_local => true)" -c "DROP SERVER qc CASCADE" >/dev/null 2>&1
