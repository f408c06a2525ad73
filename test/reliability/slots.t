#!/usr/bin/env bash
#
# Too few background worker slots: the destination is restarted with
# max_worker_processes = 8 (restored when the script exits, even after a
# failed check). Twenty-four sync_table calls at once all run their cycle,
# each waiting for a free slot (treble_sync.worker_start_timeout); and
# when the slots stay taken (cycles kept waiting by a lock on their
# copies), a call that finds none within its timeout returns a failed run
# that the status view, metrics() and the NOTIFY events see.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER). Prints TAP.

set -u

DB=slots
N=24
# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
q()   { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
lite() { $TS_AS_PG sqlite3 -batch "$TS_SQLITE_DB"; }
# stop and start again, logging to dest.log as before: later suites read it
restart_dest() {
    $TS_AS_PG "$TS_PG_BIN/pg_ctl" stop -D "$TS_DEST_PGDATA" -m fast -w -t 60 >/dev/null
    $TS_AS_PG "$TS_PG_BIN/pg_ctl" start -D "$TS_DEST_PGDATA" -l "$TS_DIR/dest.log" -w -t 60 >/dev/null
}
restore() {
    wait
    psql -X -q -d postgres -c "ALTER SYSTEM RESET max_worker_processes" >/dev/null 2>&1
    restart_dest
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
}
trap restore EXIT

echo "1..7"

psql -X -q -d postgres -c "ALTER SYSTEM SET max_worker_processes = 8" >/dev/null
restart_dest
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
{
    for i in $(seq 1 $N); do
        echo "DROP TABLE IF EXISTS slot_$i;"
        echo "CREATE TABLE slot_$i (id integer PRIMARY KEY, synced_at timestamp);"
        echo "INSERT INTO slot_$i VALUES (1, '2026-11-28 00:00:00');"
    done
} | lite
q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
SELECT format('CREATE SERVER lite FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
              current_setting('treble_test.sqlite_odbc')) \gexec
CREATE USER MAPPING FOR CURRENT_USER SERVER lite;
SELECT count(treble_sync.add_table('slot_' || i, 'lite')) FROM generate_series(1, $N) i \g /dev/null
SQL

# 1. twenty-four calls at once, with about six free slots: every one runs
out=$(mktemp -d)
for i in $(seq 1 $N); do
    q -c "SELECT status FROM treble_sync.sync_table('slot_$i')" >"$out/$i" 2>&1 &
done
wait
check "$N calls at once on too few worker slots all run their cycle" "$N success" \
    "$(cat "$out"/* | sort | uniq -c | sed 's/^ *//')"
check "and each left one run row" "$N" \
    "$(q -c "SELECT count(*) FROM treble_sync.runs WHERE status = 'success'")"

# 2. the slots stay taken: cycles of slot_1..12 wait for a lock on their copies
psql -X -q -At -d "$DB" >"$out/listener" 2>&1 <<'SQL' &
LISTEN treble_sync;
SELECT pg_sleep(12);
SELECT 'done';
SQL
locks=$(for i in $(seq 1 12); do printf 'LOCK TABLE slot_%d IN ACCESS EXCLUSIVE MODE;' "$i"; done)
q -c "BEGIN" -c "$locks" -c "SELECT pg_sleep(8)" -c "COMMIT" >/dev/null &
sleep 0.5
for i in $(seq 1 12); do
    PGOPTIONS="-c treble_sync.worker_start_timeout=2s" \
        q -c "SELECT status || ':' || coalesce(split_part(error, ':', 1), '') FROM treble_sync.sync_table('slot_$i')" \
        >"$out/blocked_$i" 2>&1 &
done
wait
cat "$out"/blocked_* | sort | uniq -c | sed 's/^/# /'
unstarted=$(grep -l '^failed:could not start$' "$out"/blocked_* | wc -l)
if (( unstarted > 0 && unstarted < 12 )); then
    ok "with every slot taken for longer than treble_sync.worker_start_timeout, $unstarted of 12 calls return a failed run"
else
    nok "with every slot taken for longer than treble_sync.worker_start_timeout, some of 12 calls return a failed run ($unstarted did)"
fi
check "the others waited for the lock and ran their cycle" "$((12 - unstarted))" \
    "$(grep -El '^(success|empty):$' "$out"/blocked_* | wc -l)"
check "the status view shows the missed cycles as failures" "$unstarted" \
    "$(q -c "SELECT count(*) FROM treble_sync.status WHERE last_status = 'failed' AND last_error LIKE 'could not start: no background worker slot came free in 2000 ms%'")"
check "metrics() counts them" "$unstarted" \
    "$(q -c "SELECT sum(split_part(l, ' ', 2)::int) FROM regexp_split_to_table(treble_sync.metrics(), E'\n') l WHERE l LIKE 'treble_sync_runs_total{%status=\"failed\"}%'")"
check "and a failed event was sent for each" "$unstarted" \
    "$(grep -c '"event" *: *"failed"' "$out/listener")"

rm -rf "$out"
exit $((failed > 0))
