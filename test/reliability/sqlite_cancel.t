#!/usr/bin/env bash
#
# A reader (or worker) stopped while the SQLite driver hands it a value
# must not crash the server. The driver's SQLCancel, on anything but
# Windows, also closes the statement (frees its result) without a lock:
# sent from the cancel thread while the main thread was inside SQLGetData,
# it freed the rows being copied, and the reader died of a segmentation
# fault (the value fuzzer met it twice in 2,000 tables: a first load under
# on_bad_row 'fail' whose worker fails on a bad row and terminates its
# reader). Here such a first load (the second row's REAL is one SQLite
# cannot write exactly; every row carries 500 bytes of text) runs again and
# again in three sessions at once; the server must stay the server it was,
# with no process terminated by a signal, and every run must fail with the
# bad row's error (or be skipped, its table's cycle running in another
# session). (Before the fix, this crashed the server within a minute
# on a busy 2-core machine; it is a race, so a pass is evidence, not proof.)
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER). Prints TAP.

DB=sqlite_cancel
ROUNDS=${TS_SQLITE_CANCEL_ROUNDS:-40}
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

F=$(dirname "${TS_SQLITE_DB:?}")/sqlite_cancel.sqlite
START=$(psql -X -At -d postgres -c "SELECT pg_postmaster_start_time()")
DEST_LOG=${TS_DIR:-${TS_CI_DIR:-}}/dest.log
LOG_FROM=$( [[ -f $DEST_LOG ]] && stat -c %s "$DEST_LOG" || echo 0)

echo "1..3"

rm -f "$F"
sqlite3 -batch -bail "$F" <<'SQL'
CREATE TABLE t (k TEXT, v REAL, pad TEXT, synced_at TIMESTAMP);
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 3000)
INSERT INTO t
SELECT 'k' || i, CASE WHEN i = 2 THEN 0.30000000000000004 ELSE 1.5 END, printf('%.500c', 'x'),
       datetime('2026-11-01', '+' || i || ' seconds')
  FROM g;
SQL
[[ $(id -u) == 0 ]] && chown postgres "$F"
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
q <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
CREATE SERVER sq FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string 'Driver={SQLite3};Database=$F');
CREATE USER MAPPING FOR CURRENT_USER SERVER sq;
SELECT name FROM treble_sync.add_table('t', 'sq', key_columns => '{k}', cursor_column => 'synced_at',
                                       on_bad_row => 'fail', name => 't', local_table => 't');
SQL

# one session's rounds: each run's status, one a line
rounds() {
    local i
    for ((i = 0; i < ROUNDS; i++)); do
        q -c "SELECT status FROM treble_sync.sync_table('t')" 2>&1 | head -n 1
    done
}
OUT=$(mktemp -d)
rounds >"$OUT/1" & rounds >"$OUT/2" & rounds >"$OUT/3" &
wait

now=$(psql -X -At -d postgres -c "SELECT pg_postmaster_start_time()" 2>&1)
signal=$( [[ -f $DEST_LOG ]] && tail -c +$((LOG_FROM + 1)) "$DEST_LOG" | grep -E -m 1 'terminated by signal|TRAP:')
check "$((3 * ROUNDS)) failing first loads in three sessions: the server never restarted" "$START" "$now"
check "no process was terminated by a signal" "" "$signal"
# (a session finding the table's cycle running in another is skipped)
check "every run failed on the bad row or was skipped" "" \
    "$(cat "$OUT"/* | grep -v -x -e failed -e skipped | sort | uniq -c | head -n 5)"
rm -rf "$OUT" "$F"
finish
