#!/usr/bin/env bash
# Reproduction: under on_bad_row 'quarantine' (default max_bad_row_ratio
# 0.02), one bad row arriving in a quiet table fails every cycle: it is
# "1 of 1", then "1 of 2"... of the rows pulled since the watermark, which
# stops; the failed cycle's quarantine row is rolled back, so the row is
# never "already quarantined" and is counted again each time.  The table
# stays stopped until 50 good rows arrive at once behind it.
# usage: bash test/attack/quiet_bad_row.sh   (needs database "attack" with the extension)
source /work/wt/setup.sh attack2 >/dev/null; source $TS_CI_DIR/env
db=attack; dir=/tmp/ts_attack2/scratch/qb; rm -rf $dir; mkdir -p $dir; chmod 777 $dir
S() { sqlite3 -bail -batch $dir/wh.db "$1"; chmod 666 $dir/wh.db; }
S "CREATE TABLE qb (id INTEGER, code TEXT, synced_at TIMESTAMP);
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100)
INSERT INTO qb SELECT n, 'c' || n, '2026-11-28 10:00:00' FROM g;"
P="psql -X -q -d $db"
$P -c "DROP SERVER IF EXISTS qb CASCADE" -c "DROP TABLE IF EXISTS qb" -c "CREATE SERVER qb FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string 'Driver={SQLite3};Database=$dir/wh.db')" -c "CREATE USER MAPPING FOR CURRENT_USER SERVER qb" \
  -c "CREATE TABLE qb (id int PRIMARY KEY, code varchar(5), synced_at timestamp)" \
  -c "SELECT name FROM treble_sync.add_table('qb', 'qb', key_columns => '{id}', local_table => 'qb', on_bad_row => 'quarantine')" >/dev/null 2>&1
C="SELECT status, rows_pulled, rows_bad, split_part(error, E'\n', 1) FROM treble_sync.sync_table('qb')"
$P -At -c "$C"
S "INSERT INTO qb VALUES (101, 'much too long', '2026-11-28 11:00:00');"
for i in 1 2 3 4; do
  $P -At -c "$C"
  S "INSERT INTO qb VALUES (20$i, 'ok', '2026-11-28 12:0$i:00');"
done
$P -At -c "SELECT count(*) AS quarantined FROM treble_sync.quarantine WHERE table_name = 'qb'"
$P -c "SELECT treble_sync.remove_table('qb', drop_local => true)" -c "DROP SERVER qb CASCADE" >/dev/null 2>&1
