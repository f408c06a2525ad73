#!/usr/bin/env bash
#
# treble_sync.progress_notices: while sync_table waits for a long cycle, it
# reports the cycle's progress as NOTICEs every 5 seconds; without the
# setting it stays quiet. The warehouse keeps the cycle waiting by holding
# a lock on the table for 6 seconds.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER). Prints TAP.

set -u

DB=notices
n=0
failed=0
ok()  { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
q()   { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
whq() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@"; }

echo "1..3"

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
q <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER wh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SQL
whq -c "DROP TABLE IF EXISTS slow_sends" \
    -c "CREATE TABLE slow_sends (id int PRIMARY KEY, synced_at timestamp)" \
    -c "INSERT INTO slow_sends VALUES (1, '2026-11-28')"
q -c "SELECT name FROM treble_sync.add_table('slow_sends', 'wh')" >/dev/null 2>&1

# hold the warehouse table for 6 s while a cycle runs
whq -c "BEGIN" -c "LOCK TABLE slow_sends IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(6)" -c "COMMIT" >/dev/null &
sleep 0.3
out=$(PGOPTIONS='-c treble_sync.progress_notices=on' \
      psql -X -At -d "$DB" -c "SELECT status FROM treble_sync.sync_table('slow_sends')" 2>&1)
wait
echo "$out" | sed 's/^/# /'
if grep -Eq '^NOTICE:  treble_sync run [0-9]+: freezing the cut, 0 rows \(0 kB\) read in [0-9]+ s' <<<"$out"; then
    ok "a waiting cycle reports its phase as a NOTICE"
else
    nok "a waiting cycle reports its phase as a NOTICE"
fi
if grep -q '^success$' <<<"$out"; then ok "and then succeeds"; else nok "and then succeeds"; fi

# without the setting, no NOTICE
whq -c "BEGIN" -c "LOCK TABLE slow_sends IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(6)" -c "COMMIT" >/dev/null &
sleep 0.3
out=$(psql -X -At -d "$DB" -c "SELECT status FROM treble_sync.sync_table('slow_sends')" 2>&1)
wait
if grep -q 'NOTICE' <<<"$out"; then nok "without the setting it stays quiet"; else ok "without the setting it stays quiet"; fi

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
exit $((failed > 0))
