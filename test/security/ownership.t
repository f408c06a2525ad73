#!/usr/bin/env bash
#
# Who may start what, and the legitimate set-ups.
#
#   - a superuser's server, the owner's own mapping and the owner's cycles
#     work: add_table, sync_table, alter_table, verify, resync, remove_table;
#   - a scheduler role (EXECUTE on sync_table and sync_all, member of the
#     owner role, no mapping of its own) runs the owner's cycles, with the
#     owner's mapping, and so does the reader of a first load it starts
#     (treble_sync.read_ahead, which any role may set);
#   - a role that is not a member of the owner starts the owner's cycles
#     only if the owner granted it SELECT, INSERT, UPDATE and DELETE on the
#     copy (a scheduler without membership); the cycle still runs as the
#     owner, with the owner's mapping, and SELECT alone is not enough;
#   - another admin cannot change, check, resync, verify, repair or remove
#     the owner's registration, even once the local table is dropped (the
#     owner still can);
#   - sync_all() by a role writes nothing (runs, incidents, NOTIFYs) for the
#     tables it may not start.

DB=sec_own
ROLES=(sec_own_a sec_own_b sec_own_sched sec_own_stranger)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; finish' EXIT
setup_db

su_server wh treble_test.wh_odbc >/dev/null
sq >/dev/null <<'SQL'
GRANT treble_sync_admin TO sec_own_a, sec_own_b;
GRANT CREATE ON SCHEMA public TO sec_own_a, sec_own_b;
GRANT USAGE ON FOREIGN SERVER wh TO sec_own_a, sec_own_b, sec_own_stranger;
-- the scheduler: may run cycles, and acts for sec_own_a
GRANT EXECUTE ON FUNCTION treble_sync.sync_table(text), treble_sync.sync_all(name) TO sec_own_sched, sec_own_stranger;
GRANT sec_own_a TO sec_own_sched;
SQL
map_reader postgres wh >/dev/null
map_reader sec_own_a wh >/dev/null
map_reader sec_own_b wh >/dev/null
map_reader sec_own_stranger wh >/dev/null
for t in sec_own_t1 sec_own_t2 sec_own_t3 sec_own_t4 sec_own_su; do
    whq -c "DROP TABLE IF EXISTS $t" \
        -c "CREATE TABLE $t (id int PRIMARY KEY, v text, scheduled_at timestamp, synced_at timestamp)" \
        -c "INSERT INTO $t VALUES (1, 'a', '2026-11-27', '2026-11-28'), (2, 'b', '2026-11-27', '2026-11-28')"
done
reg() { echo "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('$1', 'wh', key_columns => '{id}', event_column => 'scheduled_at')"; }

# --- the owner's own set-up
accepted "the owner registers a table on a superuser's server with its own mapping" sec_own_a "$(reg sec_own_t1)"
try sec_own_a "SELECT status, rows_inserted FROM treble_sync.sync_table('sec_own_t1')"
check "the owner's cycle succeeds" "success|2" "$OUT"
accepted "the owner alters its registration" sec_own_a "SELECT name FROM treble_sync.alter_table('sec_own_t1', hot_window => '2 days')"
accepted "the owner verifies its copy" sec_own_a "SELECT count(*) FROM treble_sync.verify('sec_own_t1', since => '2026-11-01')"
try sec_own_a "SELECT status IN ('success', 'empty') FROM treble_sync.resync('sec_own_t1')"
check "the owner resyncs its copy" t "$OUT"
as sec_own_a -c "$(reg sec_own_t3)" >/dev/null
as sec_own_b -c "$(reg sec_own_t2)" >/dev/null
sq -c "$(reg sec_own_su)" >/dev/null

# --- the scheduler, a member of the owner without a mapping of its own
whq -c "INSERT INTO sec_own_t1 VALUES (3, 'c', '2026-11-27', '2026-11-28 01:00')"
try sec_own_sched "SELECT status, rows_inserted FROM treble_sync.sync_table('sec_own_t1')"
check "a scheduler that is a member of the owner runs the owner's cycle (with the owner's mapping)" "success|1" "$OUT"
[[ $RC -ne 0 ]] && diag "$(head -n 2 <<<"$ERR")"

# a first load it starts is read by a reader, which connects with the
# owner's mapping too (the scheduler has none; a reader that could not
# connect would leave the load to the worker, which the log would not say)
as sec_own_a -c "$(reg sec_own_t4)" >/dev/null
sq -c "ALTER DATABASE $DB SET log_min_messages = debug1" >/dev/null
log_start=$(stat -c %s "$TS_DIR/dest.log")
try sec_own_sched "SET treble_sync.read_ahead = on; SELECT status, rows_inserted FROM treble_sync.sync_table('sec_own_t4')"
sq -c "ALTER DATABASE $DB RESET log_min_messages" >/dev/null
check "a first load the scheduler starts succeeds" "success|2" "$OUT"
check "its reader connected to the warehouse (with the owner's mapping: the scheduler has none)" 1 \
    "$(tail -c +$((log_start + 1)) "$TS_DIR/dest.log" | grep -c 'a reader of "sec_own_t4" is connected to the warehouse')"

# --- a stranger: SELECT on the copy is not enough to start its cycles
sq -c "GRANT SELECT ON sec_own_t1 TO sec_own_stranger" >/dev/null
before=$(sq -c "SELECT count(*) FROM treble_sync.runs WHERE table_name = 'sec_own_t1'")
refused "a role with only SELECT on the copy cannot start its cycles" sec_own_stranger \
    "SELECT status FROM treble_sync.sync_table('sec_own_t1')" 42501
check "and no run is written for it" "$before" "$(sq -c "SELECT count(*) FROM treble_sync.runs WHERE table_name = 'sec_own_t1'")"
# with all of SELECT, INSERT, UPDATE, DELETE granted by the owner, it may:
# the cycle runs as the owner (run_by names who started it)
sq -c "GRANT INSERT, UPDATE, DELETE ON sec_own_t1 TO sec_own_stranger" >/dev/null
whq -c "INSERT INTO sec_own_t1 VALUES (4, 'd', '2026-11-27', '2026-11-28 02:00')"
try sec_own_stranger "SELECT status, rows_inserted, run_by, owner FROM treble_sync.sync_table('sec_own_t1')"
check "a role granted DML on the copy starts its cycle, which runs as the owner" "success|1|sec_own_stranger|sec_own_a" "$OUT"
sq -c "REVOKE ALL ON sec_own_t1 FROM sec_own_stranger" >/dev/null

# --- another admin and the owner's registration
for call in "alter_table('sec_own_t1', enabled => false)" \
            "add_check('sec_own_t1', 'not_null', columns => '{v}')" \
            "resync('sec_own_t1')" \
            "verify('sec_own_t1', since => '2026-11-01')" \
            "repair('sec_own_t1', '2026-11-27')" \
            "remove_table('sec_own_t1')"; do
    refused "another admin cannot ${call%%(*} the owner's table" sec_own_b "SELECT * FROM treble_sync.$call" 42501
done
check "the owner's registration is unchanged" "t|1" \
    "$(sq -c "SELECT enabled, (SELECT count(*) FROM treble_sync.tables WHERE name = 'sec_own_t1') FROM treble_sync.tables WHERE name = 'sec_own_t1'")"

# once the local table is dropped
as sec_own_a -c "DROP TABLE sec_own_t3" >/dev/null
refused "another admin cannot alter a registration whose local table was dropped" sec_own_b \
    "SELECT name FROM treble_sync.alter_table('sec_own_t3', enabled => false)" 42501
refused "another admin cannot remove a registration whose local table was dropped" sec_own_b \
    "SELECT treble_sync.remove_table('sec_own_t3')" 42501
check "the registration is still there, unchanged" "true" \
    "$(sq -c "SELECT coalesce(bool_and(enabled)::text, 'gone') FROM treble_sync.tables WHERE name = 'sec_own_t3'")"
accepted "its owner can remove it" sec_own_a "SELECT treble_sync.remove_table('sec_own_t3')"

# --- sync_all() of one role touches no other role's table
count_others() {
    sq -c "SELECT (SELECT count(*) FROM treble_sync.runs WHERE table_name IN ('sec_own_t1', 'sec_own_su'))
                  || '/' || (SELECT count(*) FROM treble_sync.incidents i JOIN treble_sync.tables t USING (table_id)
                             WHERE t.name IN ('sec_own_t1', 'sec_own_su'))"
}
before=$(count_others)
psql -X -d "$DB" -c "LISTEN treble_sync" -c "SELECT pg_sleep(3)" -c "SELECT 1" >"$TMP/notify.out" 2>&1 &
listener=$!
sleep 0.5
try sec_own_b "SELECT string_agg(table_name || '=' || status, ',' ORDER BY table_name) FROM treble_sync.sync_all()"
wait $listener
check "sync_all() by a role cycles only its own tables" "sec_own_t2=success" "$OUT"
check "and writes no run or incident for the others" "$before" "$(count_others)"
if grep -E 'sec_own_(t1|su)' "$TMP/notify.out" >/dev/null; then
    nok "and sends no notification for the others"
    diag "$(grep -E 'sec_own_(t1|su)' "$TMP/notify.out" | head -n 2)"
else
    ok "and sends no notification for the others"
fi
