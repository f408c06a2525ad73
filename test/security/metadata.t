#!/usr/bin/env bash
#
# Warehouse-derived metadata is as private as the run log: a table's
# watermark (the newest warehouse row's cursor), its first load's cut and
# its history's first cut are readable only by the roles that may read
# its run log (the owner's privileges, SELECT on the copy,
# pg_read_all_stats, pg_read_all_data), never by every role. A role with
# LOGIN and nothing else tries every way in: treble_sync.tables itself
# (the column, the whole row), the status view, metrics(),
# window_advice(), the run log, the advisor's histogram, incidents, group
# runs and LISTEN treble_sync (whose payload carried the copy's freshness,
# now minus the watermark). The roles that may read the log still see the
# watermark in status, and a scheduler and the owner still run cycles.

DB=sec_metadata
ROLES=(sec_md_owner sec_md_plain sec_md_stats sec_md_reader sec_md_sched)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TMP=$(mktemp -d)
listener=
cleanup() {
    [[ -n $listener ]] && { exec 7>&- ; wait "$listener" 2>/dev/null; }
    rm -rf "$TMP"
    finish
}
trap cleanup EXIT
setup_db

MARK='13:37:42'   # the time of day of the newest warehouse row

admins_on_wh sec_md_owner
sq >/dev/null <<'SQL'
GRANT pg_read_all_stats TO sec_md_stats;
GRANT EXECUTE ON FUNCTION treble_sync.sync_table(text) TO sec_md_sched;
SQL
whq <<SQL
DROP TABLE IF EXISTS sec_md_events;
CREATE TABLE sec_md_events (id int PRIMARY KEY, v text, happened_at timestamp, synced_at timestamp);
INSERT INTO sec_md_events SELECT g, 'v' || g, timestamp '2026-11-27' + g * interval '1 hour',
    timestamp '2026-11-28 10:00' FROM generate_series(1, 20) g;
UPDATE sec_md_events SET synced_at = '2026-11-28 $MARK.424242' WHERE id = 20;
SQL

# the listener: a psql fed through a FIFO, so that notifications are
# printed as the commands after them run
mkfifo "$TMP/in"
psql -X -U sec_md_plain -d "$DB" <"$TMP/in" >"$TMP/notify" 2>&1 &
listener=$!
exec 7>"$TMP/in"
echo "LISTEN treble_sync;" >&7

as sec_md_owner >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('sec_md_events', 'wh', key_columns => '{id}',
    cursor_column => 'synced_at', event_column => 'happened_at', keep_history => '7 days',
    hot_window => '1 hour');
SELECT status FROM treble_sync.sync_table('sec_md_events');
GRANT SELECT, INSERT, UPDATE, DELETE ON public.sec_md_events TO sec_md_sched;
GRANT SELECT ON public.sec_md_events TO sec_md_reader;
SQL
check "the owner's first cycle took the newest row's time as its watermark" \
    "2026-11-28 $MARK.424242" "$(sq -c "SELECT watermark FROM treble_sync.tables WHERE name = 'sec_md_events'")"
# a correction before the hot window, for the advisor's histogram
whq -c "UPDATE sec_md_events SET v = 'late', synced_at = '2026-11-28 $MARK.424242' WHERE id = 1"
accepted "a scheduler with the four table privileges still runs the cycle" sec_md_sched \
    "SELECT status FROM treble_sync.sync_table('sec_md_events')"
accepted "the owner still runs the cycle" sec_md_owner \
    "SELECT status FROM treble_sync.sync_table('sec_md_events')"
sleep 0.5
echo "SELECT 1;" >&7
echo '\q' >&7
exec 7>&-
wait "$listener" 2>/dev/null
listener=

# --- a role with LOGIN only
refused "LOGIN only: treble_sync.tables.watermark is not readable" sec_md_plain \
    "SELECT watermark FROM treble_sync.tables" 42501
refused "LOGIN only: nor load_cut" sec_md_plain \
    "SELECT load_cut FROM treble_sync.tables" 42501
refused "LOGIN only: nor history_from" sec_md_plain \
    "SELECT history_from FROM treble_sync.tables" 42501
refused "LOGIN only: nor the whole row" sec_md_plain \
    "SELECT t::text FROM treble_sync.tables t" 42501
refused "LOGIN only: nor SELECT *" sec_md_plain \
    "SELECT * FROM treble_sync.tables" 42501
check "LOGIN only: every column of treble_sync.tables is readable but these three" \
    "history_from,load_cut,watermark" \
    "$(as sec_md_plain -c "SELECT string_agg(attname, ',' ORDER BY attname) FROM pg_attribute
                           WHERE attrelid = 'treble_sync.tables'::regclass AND attnum > 0 AND NOT attisdropped
                             AND NOT has_column_privilege('treble_sync.tables'::regclass, attnum, 'SELECT')" 2>&1)"
accepted "LOGIN only: the configuration stays readable" sec_md_plain \
    "SELECT name, server_name, remote_table, key_columns, columns, cursor_column, owner
     FROM treble_sync.tables"
check "LOGIN only: the configuration names the registration" sec_md_events "${OUT%%|*}"

try sec_md_plain "
SELECT 'status', s::text FROM treble_sync.status s;
SELECT 'metrics', treble_sync.metrics();
SELECT 'advice', a::text FROM treble_sync.window_advice() a;
SELECT 'runs', r::text FROM treble_sync.runs r;
SELECT 'lateness', l::text FROM treble_sync.lateness l;
SELECT 'incidents', i::text FROM treble_sync.incidents i;
SELECT 'group_runs', g::text FROM treble_sync.group_runs g;
SELECT 'chunks', c::text FROM treble_sync.load_chunks c;
SELECT 'progress', p::text FROM treble_sync.progress p;"
check "LOGIN only: the catalog's views and functions read without an error" 0 "$RC"
[[ $RC == 0 ]] || diag "$ERR"
if [[ $OUT != *"$MARK"* && $OUT != *sec_md_events* && $OUT != *2026-11-28* ]]; then
    ok "LOGIN only: status, metrics(), window_advice() and the logs show nothing of the table"
else
    nok "LOGIN only: status, metrics(), window_advice() and the logs show nothing of the table"
    diag "$OUT"
fi
if grep -q '"table" *: *"sec_md_events"' "$TMP/notify" && ! grep -qi 'freshness' "$TMP/notify"; then
    ok "LOGIN only: a notification names the table but carries no freshness (now minus the watermark)"
else
    nok "LOGIN only: a notification names the table but carries no freshness (now minus the watermark)"
    diag "$(cat "$TMP/notify")"
fi

# --- the roles that may read the run log read the watermark
for r in sec_md_owner sec_md_stats sec_md_reader; do
    check "$r reads the watermark in status" "2026-11-28 $MARK.424242" \
        "$(as $r -c "SELECT watermark FROM treble_sync.status WHERE table_name = 'sec_md_events'" 2>&1)"
    check "$r reads the freshness in metrics()" 1 \
        "$(as $r -c "SELECT count(*) FROM regexp_split_to_table(treble_sync.metrics(), E'\n') l
                     WHERE l LIKE 'treble_sync_freshness_seconds{table=\"sec_md_events\"} %'" 2>&1)"
done
check "status shows the owner its consecutive failures and last status" "empty|0" \
    "$(as sec_md_owner -c "SELECT last_status || '|' || consecutive_failures FROM treble_sync.status" 2>&1)"
check "a scheduler, which may SELECT the copy, reads its status" 1 \
    "$(as sec_md_sched -c "SELECT count(*) FROM treble_sync.status WHERE watermark IS NOT NULL" 2>&1)"
check "a user's leaky function in a WHERE on status sees no other table's row" 0 \
    "$(as sec_md_plain 2>&1 <<'SQL'
CREATE FUNCTION pg_temp.leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $f$
BEGIN RAISE NOTICE 'leak %', $1; RETURN true; END $f$;
SET client_min_messages = notice;
SELECT count(*) FROM treble_sync.status WHERE pg_temp.leak(watermark);
SQL
)"
