#!/usr/bin/env bash
# Reproduction: a hot-window key whose new version is bad (too long for
# varchar(5)) loses its good version from the copy: rows_deleted 1,
# rows_bad 2 for one warehouse row, under quarantine and skip alike.
# With hot_window_check 'rows' too (rows_deleted 1, rows_bad 1).  Cause: the
# key-only check's window keys leave out rows past T_prev (the delta brings
# them), the delta's bad row is not staged, so its key is neither staged nor
# among the window's keys and the refresh takes it for gone (refresh_window,
# collect_gone_keys); with 'rows', the refresh deletes every window row not
# staged.  Without an event column the copy keeps its last good version.
# usage: bash test/attack/window_bad_version.sh quarantine|skip "much too long" [keys|rows]
#        (needs database "attack" with the extension)
# usage: qdel.sh POLICY BADVALUE
source /work/wt/setup.sh attack2 >/dev/null; source $TS_CI_DIR/env
db=attack; dir=/tmp/ts_attack2/scratch/qd; rm -rf $dir; mkdir -p $dir; chmod 777 $dir
S() { sqlite3 -bail -batch $dir/wh.db "$1"; chmod 666 $dir/wh.db; }
S "CREATE TABLE qd (id INTEGER, code TEXT, happened_at TIMESTAMP, synced_at TIMESTAMP);
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 60)
INSERT INTO qd SELECT n, 'c' || n, datetime('now', '-1 hour'), '2026-11-28 10:00:00' FROM g;"
P="psql -X -q -d $db -v ON_ERROR_STOP=0"
$P -c "DROP SERVER IF EXISTS qd CASCADE" -c "DROP TABLE IF EXISTS qd" -c "CREATE SERVER qd FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string 'Driver={SQLite3};Database=$dir/wh.db')" -c "CREATE USER MAPPING FOR CURRENT_USER SERVER qd" \
  -c "CREATE TABLE qd (id int PRIMARY KEY, code varchar(5), happened_at timestamp, synced_at timestamp)" \
  -c "SELECT name FROM treble_sync.add_table('qd', 'qd', key_columns => '{id}', event_column => 'happened_at', local_table => 'qd', on_bad_row => '$1', max_bad_row_ratio => 1, hot_window_check => '${3:-keys}')" >/dev/null 2>&1
C="SELECT status, rows_pulled, rows_updated, rows_deleted, rows_bad, split_part(error, E'\n', 1) FROM treble_sync.sync_table('qd')"
$P -c "$C"
S "UPDATE qd SET code = '$2', synced_at = '2026-11-28 12:00:00' WHERE id = 2;"
$P -c "$C" -c "SELECT id, code FROM qd WHERE id <= 3 ORDER BY id"
$P -c "$C" -c "SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name='qd'"
$P -c "SELECT treble_sync.remove_table('qd', drop_local => true)" -c "DROP SERVER qd CASCADE" >/dev/null 2>&1
