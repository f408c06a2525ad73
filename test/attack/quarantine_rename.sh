#!/usr/bin/env bash
# Probe: the quarantine is keyed by the registration's name.  After
# alter_table(new_name => ...) the quarantined key is no longer "known":
# the next cycle sets it aside again under the new name, and the old rows
# stay under the old name, unresolved, for a later registration of that
# name (same owner) to find.
# usage: bash test/attack/quarantine_rename.sh   (needs database "attack" with the extension)
source /work/wt/setup.sh attack2 >/dev/null; source $TS_CI_DIR/env
db=attack; dir=/tmp/ts_attack2/scratch/qr; rm -rf $dir; mkdir -p $dir; chmod 777 $dir
S() { sqlite3 -bail -batch $dir/wh.db "$1"; chmod 666 $dir/wh.db; }
S "CREATE TABLE qr (id INTEGER, code TEXT, happened_at TIMESTAMP, synced_at TIMESTAMP);
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 60)
INSERT INTO qr SELECT n, CASE WHEN n = 2 THEN 'much too long' ELSE 'c' END, datetime('now', '-1 hour'), '2026-11-28 10:00:00' FROM g;"
P="psql -X -q -d $db"
$P -c "DROP SERVER IF EXISTS qr CASCADE" -c "DROP TABLE IF EXISTS qr" -c "DELETE FROM treble_sync.quarantine WHERE table_name IN ('qr', 'qr2')" -c "CREATE SERVER qr FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string 'Driver={SQLite3};Database=$dir/wh.db')" -c "CREATE USER MAPPING FOR CURRENT_USER SERVER qr" \
  -c "CREATE TABLE qr (id int PRIMARY KEY, code varchar(5), happened_at timestamp, synced_at timestamp)" \
  -c "SELECT name FROM treble_sync.add_table('qr', 'qr', key_columns => '{id}', event_column => 'happened_at', local_table => 'qr', on_bad_row => 'quarantine')" >/dev/null 2>&1
C="SELECT status, rows_pulled, rows_bad, split_part(error, E'\n', 1) FROM treble_sync.sync_table"
$P -At -c "$C('qr')" -c "$C('qr')"
$P -At -c "SELECT name FROM treble_sync.alter_table('qr', new_name => 'qr2')"
$P -At -c "$C('qr2')" -c "$C('qr2')"
$P -At -c "SELECT table_name, key, times_seen, resolved_run_id IS NOT NULL FROM treble_sync.quarantine WHERE table_name IN ('qr', 'qr2') ORDER BY quarantine_id"
$P -c "SELECT treble_sync.remove_table('qr2', drop_local => true)" -c "DROP SERVER qr CASCADE" >/dev/null 2>&1
