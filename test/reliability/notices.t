#!/usr/bin/env bash
#
# treble_sync.progress_notices: while sync_table waits for a long cycle, it
# reports the cycle's progress as NOTICEs every 5 seconds; without the
# setting it stays quiet. The warehouse keeps the cycle waiting by holding
# a lock on the table for 6 seconds.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER). Prints TAP.

DB=notices
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

echo "1..3"

setup_db
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

finish
