#!/usr/bin/env bash
#
# treble_sync.progress_notices: while sync_table waits for a long cycle, it
# reports the cycle's progress as NOTICEs every 5 seconds; without the
# setting it stays quiet. The cycle is held as it freezes its cut
# (treble_sync.test_pause_at): until its first NOTICE comes, and then for
# 6 seconds without the setting.
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

PAUSE="SET treble_sync.test_pause_at = 'freezing the cut'"
SYNC="SELECT status FROM treble_sync.sync_table('slow_sends')"

# held at the cut until the caller's first NOTICE, then let go
hold_cycle slow_sends
: >"$TS_DIR/notices.out"    # there before tail opens it, whenever psql starts
PGOPTIONS='-c treble_sync.progress_notices=on' psql -X -At -q -d "$DB" -c "$PAUSE" -c "$SYNC" \
    >"$TS_DIR/notices.out" 2>&1 &
caller=$!
timeout 60 grep -q -m 1 '^NOTICE:' <(tail -n +1 -f --pid="$caller" "$TS_DIR/notices.out")
release_cycle
wait "$caller"
out=$(cat "$TS_DIR/notices.out")
echo "$out" | sed 's/^/# /'
if grep -Eq '^NOTICE:  treble_sync run [0-9]+: freezing the cut, 0 rows \(0 kB\) read in [0-9]+ s' <<<"$out"; then
    ok "a waiting cycle reports its phase as a NOTICE"
else
    nok "a waiting cycle reports its phase as a NOTICE"
fi
if grep -q '^success$' <<<"$out"; then ok "and then succeeds"; else nok "and then succeeds"; fi

# without the setting, no NOTICE in the 6 s it is held (a NOTICE comes
# every 5 s)
hold_cycle slow_sends
psql -X -At -q -d "$DB" -c "$PAUSE" -c "$SYNC" >"$TS_DIR/notices.out" 2>&1 &
caller=$!
[[ -n $(wait_held slow_sends 'freezing the cut') ]] && sleep 6
release_cycle
wait "$caller"
if grep -q 'NOTICE' "$TS_DIR/notices.out"; then nok "without the setting it stays quiet"; else ok "without the setting it stays quiet"; fi

finish
