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
#     tables it may not start;
#   - a copy (or its history table) that changed hands: every entry point
#     that acts as the registration's owner on it (sync_table, resync,
#     rewind, verify, repair, explain_cycle, alter_table(keep_history),
#     remove_table, a cycle whose only work would be pruning history)
#     refuses with 42501 and says who owns it now, whoever calls it (the
#     owner, a superuser), and the statement triggers and the policy the new
#     owner planted never run as the registration's owner: the table they
#     copy the owner's private table into stays empty, even when the
#     change of owner commits while the entry point runs (rewind,
#     explain_cycle, a first load with a reader, which never connects), or
#     between two chunks of a first load;
#   - the code acts as a registration's owner only through src/security.c.

DB=sec_own
ROLES=(sec_own_a sec_own_b sec_own_sched sec_own_stranger sec_own_thief)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; finish' EXIT
setup_db

admins_on_wh sec_own_a sec_own_b
sq >/dev/null <<'SQL'
GRANT USAGE ON FOREIGN SERVER wh TO sec_own_stranger;
-- the scheduler: may run cycles, and acts for sec_own_a
GRANT EXECUTE ON FUNCTION treble_sync.sync_table(text), treble_sync.sync_all(name) TO sec_own_sched, sec_own_stranger;
GRANT sec_own_a TO sec_own_sched;
SQL
map_reader postgres wh >/dev/null
map_reader sec_own_stranger wh >/dev/null
# the warehouse tables: their columns, and rows two days old (a cycle
# started now sees them inside a hot window of 30 days)
OWN_COLS="id int PRIMARY KEY, v text, scheduled_at timestamp, synced_at timestamp"
OWN_OLD="SELECT i, 'v', date_trunc('hour', now() AT TIME ZONE 'UTC') - interval '2 days',
                date_trunc('hour', now() AT TIME ZONE 'UTC') - interval '2 days' FROM generate_series(1, 3) i"
for t in sec_own_t1 sec_own_t2 sec_own_t3 sec_own_t4 sec_own_su; do
    wh_table $t "$OWN_COLS" "VALUES (1, 'a', '2026-11-27', '2026-11-28'), (2, 'b', '2026-11-27', '2026-11-28')"
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

# --- a copy that changed hands
# sec_own_a keeps a private table; sec_own_thief gets a copy of sec_own_a's
# (ALTER TABLE ... OWNER TO, as REASSIGN OWNED would do), grants it back,
# and plants statement triggers and a row-level policy whose functions copy
# the private table into its loot, which anyone may insert into, and count
# each theft in a sequence, which a rollback does not undo: they can read
# it only when they run as sec_own_a.
sq -c "GRANT CREATE ON SCHEMA public TO sec_own_thief" >/dev/null
plant_thief sec_own sec_own_a sec_own_thief
# plant TABLE: what the thief does to a table it was given
plant() {
    as sec_own_thief >/dev/null <<SQL
GRANT ALL ON $1 TO sec_own_a;
CREATE TRIGGER sec_own_steal AFTER INSERT OR UPDATE OR DELETE ON $1
    FOR EACH STATEMENT EXECUTE FUNCTION public.sec_own_steal_t();
CREATE TRIGGER sec_own_steal_tr AFTER TRUNCATE ON $1
    FOR EACH STATEMENT EXECUTE FUNCTION public.sec_own_steal_t();
ALTER TABLE $1 ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_own_steal ON $1 USING (public.sec_own_steal()) WITH CHECK (public.sec_own_steal());
SQL
}
# handed NAME ROLE SQL WORD: refused with 42501, naming WORD, nothing stolen
handed() {
    refused "$1" "$2" "$3" 42501 "owned by" "$4"
    check "and nothing ran as the owner: the thief's loot is empty" 0 "$(looted sec_own)"
}
newer() {
    whq -c "UPDATE $1 SET v = v || 'x', synced_at = synced_at + interval '1 minute'"
}
# with_history T: the warehouse's table T (rows two days old), registered
# by sec_own_a keeping 30 days of history, synced, changed and synced
# again: its history holds a closed version of each row
with_history() {
    wh_table "$1" "$OWN_COLS" "$OWN_OLD"
    as sec_own_a -c "SET client_min_messages = warning" \
        -c "SELECT name FROM treble_sync.add_table('$1', 'wh', key_columns => '{id}', event_column => 'scheduled_at', keep_history => '30 days')" \
        -c "SELECT status FROM treble_sync.sync_table('$1')" >/dev/null
    newer "$1"
    as sec_own_a -c "SELECT status FROM treble_sync.sync_table('$1')" >/dev/null
}
with_history sec_own_h1
with_history sec_own_h3
wh_table sec_own_h2 "$OWN_COLS" "$OWN_OLD"
as sec_own_a -c "$(reg sec_own_h2)" -c "SELECT status FROM treble_sync.sync_table('sec_own_h2')" >/dev/null
check "three registrations of sec_own_a with rows" "3|3|3" \
    "$(sq -c "SELECT (SELECT count(*) FROM sec_own_h1) || '|' || (SELECT count(*) FROM sec_own_h2) || '|' || (SELECT count(*) FROM sec_own_h3)")"
rewind_to() { echo "SELECT status FROM treble_sync.rewind('$1', (SELECT treble_sync.watermark_time(t) - interval '1 second' FROM treble_sync.tables t WHERE name = '$1'))"; }

# the copy of sec_own_h1 (which keeps history) changes hands
sq -c "ALTER TABLE public.sec_own_h1 OWNER TO sec_own_thief" >/dev/null
plant public.sec_own_h1
newer sec_own_h1
handed "a superuser's sync_table refuses a copy that changed hands" postgres \
    "SELECT status FROM treble_sync.sync_table('sec_own_h1')" sec_own_thief
handed "so does resync" postgres "SELECT status FROM treble_sync.resync('sec_own_h1')" sec_own_thief
handed "so does a superuser's rewind" postgres "$(rewind_to sec_own_h1)" sec_own_thief
handed "so does the owner's verify" sec_own_a \
    "SELECT count(*) FROM treble_sync.verify('sec_own_h1', since => current_date - 10)" sec_own_thief
handed "so does the owner's repair" sec_own_a \
    "SELECT status FROM treble_sync.repair('sec_own_h1', current_date - 2)" sec_own_thief
handed "so does the owner's explain_cycle() (it reads the copy as the owner: is it empty?)" sec_own_a \
    "SELECT count(*) FROM treble_sync.explain_cycle('sec_own_h1')" sec_own_thief
handed "so does alter_table(keep_history => '') (the history triggers are the owner's)" sec_own_a \
    "SELECT name FROM treble_sync.alter_table('sec_own_h1', keep_history => '')" sec_own_thief
handed "so does remove_table (it drops the history triggers as the owner)" sec_own_a \
    "SELECT treble_sync.remove_table('sec_own_h1')" sec_own_thief
check "the registration is still there, with its history" "1|30 days" \
    "$(sq -c "SELECT count(*) || '|' || string_agg(keep_history::text, ',') FROM treble_sync.tables WHERE name = 'sec_own_h1'")"

# the copy of sec_own_h2 (no history yet) changes hands, then history is asked for
sq -c "ALTER TABLE public.sec_own_h2 OWNER TO sec_own_thief" >/dev/null
plant public.sec_own_h2
handed "alter_table(keep_history) does not read a copy that changed hands as its owner" sec_own_a \
    "SELECT name FROM treble_sync.alter_table('sec_own_h2', keep_history => '30 days')" sec_own_thief
handed "nor a superuser's" postgres \
    "SELECT name FROM treble_sync.alter_table('sec_own_h2', keep_history => '30 days')" sec_own_thief
check "no history table was made" 0 "$(sq -c "SELECT count(*) FROM pg_class WHERE relname = 'sec_own_h2_history'")"

# the history table of sec_own_h3 changes hands (its copy stays sec_own_a's)
sq -c "ALTER TABLE public.sec_own_h3_history OWNER TO sec_own_thief" >/dev/null
plant public.sec_own_h3_history
newer sec_own_h3
handed "a superuser's sync_table refuses a history table that changed hands" postgres \
    "SELECT status FROM treble_sync.sync_table('sec_own_h3')" sec_own_h3_history
handed "so does a superuser's rewind" postgres "$(rewind_to sec_own_h3)" sec_own_h3_history
handed "so does remove_table" sec_own_a "SELECT treble_sync.remove_table('sec_own_h3')" sec_own_h3_history

# give_during TABLE [triggers]: TABLE changes hands, and the thief's
# triggers and (unless "triggers") policy are planted, in a transaction
# that stays open for 3 seconds, in the background (giver: its pid);
# returns once it holds the table's lock, so that an entry point started
# then waits for the change to commit
give_during() {
    local policy="ALTER TABLE $1 ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_own_steal ON $1 USING (public.sec_own_steal()) WITH CHECK (public.sec_own_steal());"
    [[ ${2:-} == triggers ]] && policy=""
    psql -X -q -At -d "$DB" >/dev/null 2>&1 <<SQL &
BEGIN;
ALTER TABLE $1 OWNER TO sec_own_thief;
GRANT ALL ON $1 TO sec_own_a;
CREATE TRIGGER sec_own_steal AFTER INSERT OR UPDATE OR DELETE ON $1
    FOR EACH STATEMENT EXECUTE FUNCTION public.sec_own_steal_t();
CREATE TRIGGER sec_own_steal_tr AFTER TRUNCATE ON $1
    FOR EACH STATEMENT EXECUTE FUNCTION public.sec_own_steal_t();
$policy
SELECT pg_sleep(3);
COMMIT;
SQL
    giver=$!
    for _ in $(seq 1 100); do
        [[ $(sq -c "SELECT count(*) FROM pg_locks WHERE relation = '$1'::regclass AND mode = 'AccessExclusiveLock' AND granted") == 1 ]] && break
        sleep 0.1
    done
}

# a change of owner that commits while an entry point runs: the copy of
# sec_own_h4 (which keeps history) is given away, and the thief's trigger
# and policy planted, in a transaction that is still open when a superuser
# rewinds it; rewind waits for it, then sees the new owner and refuses
with_history sec_own_h4
give_during public.sec_own_h4
handed "a rewind during the change of owner waits for it, then refuses" postgres \
    "$(rewind_to sec_own_h4)" sec_own_thief
wait $giver

# a first load in chunks commits after each chunk, which releases the lock
# of its owner check: the copy of sec_own_c5 is given away (and the thief's
# trigger planted) in a transaction queued behind the cycle's lock, which
# gets it at the first commit of the load; the next chunk's transaction
# must check the owner again, and refuse, rather than write the copy as
# sec_own_a. The warehouse's rows come through a view that sleeps on each
# row, so the load is still running when the change of owner is queued.
whq >/dev/null <<'SQL'
DROP VIEW IF EXISTS sec_own_c5;
DROP TABLE IF EXISTS sec_own_c5_rows;
CREATE TABLE sec_own_c5_rows (id int PRIMARY KEY, v text, synced_at timestamp);
INSERT INTO sec_own_c5_rows SELECT i, 'v', timestamp '2026-11-20' + i * interval '1 day' FROM generate_series(1, 4) i;
CREATE OR REPLACE FUNCTION sec_own_slow(i int) RETURNS int LANGUAGE sql AS 'SELECT pg_sleep(0.4); SELECT i';
CREATE VIEW sec_own_c5 AS SELECT sec_own_slow(id) AS id, v, synced_at FROM sec_own_c5_rows;
GRANT SELECT ON sec_own_c5 TO PUBLIC;
SQL
as sec_own_a -c "SET client_min_messages = warning" \
    -c "CREATE TABLE public.sec_own_c5 (id int PRIMARY KEY, v text, synced_at timestamp)" \
    -c "SELECT name FROM treble_sync.add_table('sec_own_c5', 'wh', key_columns => '{id}', local_table => 'sec_own_c5', initial_chunk => '1 day', parallel => 1)" >/dev/null
as sec_own_a -c "SELECT status || '|' || coalesce(split_part(error, E'\n', 1), '') FROM treble_sync.sync_table('sec_own_c5')" \
    >"$TMP/c5_result" 2>&1 &
cycle=$!
for _ in $(seq 1 300); do
    [[ $(sq -c "SELECT count(*) FROM pg_locks WHERE relation = 'public.sec_own_c5'::regclass AND mode = 'AccessShareLock'
                AND granted AND pid <> pg_backend_pid()") -ge 1 ]] && break
    sleep 0.05
done
psql -X -q -At -d "$DB" >/dev/null 2>&1 <<'SQL' &
BEGIN;
ALTER TABLE public.sec_own_c5 OWNER TO sec_own_thief;
GRANT ALL ON public.sec_own_c5 TO sec_own_a;
CREATE TRIGGER sec_own_steal AFTER INSERT OR UPDATE OR DELETE ON public.sec_own_c5
    FOR EACH STATEMENT EXECUTE FUNCTION public.sec_own_steal_t();
COMMIT;
SQL
giver=$!
wait $cycle
wait $giver
check "a chunked first load whose copy changed hands between chunks fails, naming the new owner" \
    "failed|yes" "$(cut -d'|' -f1 <"$TMP/c5_result")|$(grep -q 'owned by role "sec_own_thief"' "$TMP/c5_result" && echo yes || echo no)"
[[ $(cut -d'|' -f1 <"$TMP/c5_result") == failed ]] || diag "$(cat "$TMP/c5_result")"
check "and its next chunk did not run as the owner: the thief's loot is empty" 0 "$(looted sec_own)"
sq -c "ALTER TABLE public.sec_own_c5 OWNER TO sec_own_a" -c "DROP TRIGGER sec_own_steal ON public.sec_own_c5" >/dev/null

# explain_cycle() during the change of owner: the caller's check, which
# takes no lock, still sees sec_own_a; becoming the owner waits for the
# change, then sees the thief and refuses before the copy is read
wh_table sec_own_e1 "$OWN_COLS" "$OWN_OLD"
as sec_own_a -c "$(reg sec_own_e1)" -c "SELECT status FROM treble_sync.sync_table('sec_own_e1')" >/dev/null
give_during public.sec_own_e1
handed "an explain_cycle() during the change of owner waits for it, then refuses" sec_own_a \
    "SELECT count(*) FROM treble_sync.explain_cycle('sec_own_e1')" sec_own_thief
wait $giver

# a first load's reader: the empty copy of sec_own_r1 changes hands while
# the scheduler starts its first load with a reader (read_ahead). The
# thief plants statement triggers only: a row-level policy that applies to
# the registration's owner would send the load through the staging table,
# without a reader. The caller's check still sees sec_own_a; the cycle's
# worker waits for the change and refuses; no reader connects to the
# warehouse as sec_own_a for a copy that is no longer its (the reader
# checks the owner again, SecurityBeginReader), and nothing runs as
# sec_own_a
wh_table sec_own_r1 "$OWN_COLS" "$OWN_OLD"
as sec_own_a -c "$(reg sec_own_r1)" >/dev/null
sq -c "ALTER DATABASE $DB SET log_min_messages = debug1" >/dev/null
log_start=$(stat -c %s "$TS_DIR/dest.log")
give_during public.sec_own_r1 triggers
try sec_own_sched "SET treble_sync.read_ahead = on;
    SELECT status || '|' || coalesce(split_part(error, E'\n', 1), '') FROM treble_sync.sync_table('sec_own_r1')"
wait $giver
sq -c "ALTER DATABASE $DB RESET log_min_messages" >/dev/null
check "a first load with a reader of an empty copy that changed hands fails, naming the new owner" "failed|yes" \
    "$(cut -d'|' -f1 <<<"$OUT")|$(grep -q 'owned by role "sec_own_thief"' <<<"$OUT$ERR" && echo yes || echo no)"
[[ $(cut -d'|' -f1 <<<"$OUT") == failed ]] || diag "$OUT $(head -n 3 <<<"$ERR")"
check "no reader of it connected to the warehouse" 0 \
    "$(tail -c +$((log_start + 1)) "$TS_DIR/dest.log" | grep -c 'a reader of "sec_own_r1" is connected to the warehouse')"
check "nothing ran as the owner: the thief's loot is empty" 0 "$(looted sec_own)"
check "and the copy is still empty" 0 "$(sq -c "SELECT count(*) FROM public.sec_own_r1")"

# the pruning of history alone: sec_own_p1 keeps versions that closed two
# days ago (the warehouse's clock), then a retention of one day; its
# history table changes hands, and a cycle that has nothing to copy, whose
# only write as the owner would be that pruning (a DELETE on the history
# table, which fires the thief's statement trigger), is refused
with_history sec_own_p1
closed() { sq -c "SELECT count(*) FROM public.sec_own_p1_history WHERE ts_valid_to IS NOT NULL"; }
check "sec_own_p1 keeps three closed versions" 3 "$(closed)"
as sec_own_a -c "SELECT name FROM treble_sync.alter_table('sec_own_p1', keep_history => '1 day')" >/dev/null
sq -c "ALTER TABLE public.sec_own_p1_history OWNER TO sec_own_thief" >/dev/null
plant public.sec_own_p1_history
handed "a cycle whose only work would be pruning history refuses a history table that changed hands" postgres \
    "SELECT status FROM treble_sync.sync_table('sec_own_p1')" sec_own_p1_history
handed "so does the owner's" sec_own_a "SELECT status FROM treble_sync.sync_table('sec_own_p1')" sec_own_p1_history
check "and the expired versions are still there" 3 "$(closed)"
# given back, the same cycle prunes them: what the refused ones would
# have done as the owner
sq -c "ALTER TABLE public.sec_own_p1_history OWNER TO sec_own_a" \
   -c "DROP TRIGGER sec_own_steal ON sec_own_p1_history" -c "DROP TRIGGER sec_own_steal_tr ON sec_own_p1_history" \
   -c "DROP POLICY sec_own_steal ON sec_own_p1_history" -c "ALTER TABLE sec_own_p1_history DISABLE ROW LEVEL SECURITY" >/dev/null
try postgres "SELECT status FROM treble_sync.sync_table('sec_own_p1')"
check "given back, a cycle with nothing to copy prunes the expired versions" "empty|0" "$OUT|$(closed)"

# given back, they work again
sq -c "ALTER TABLE public.sec_own_h1 OWNER TO sec_own_a" -c "ALTER TABLE public.sec_own_h3_history OWNER TO sec_own_a" \
   -c "DROP TRIGGER sec_own_steal ON sec_own_h1" -c "DROP TRIGGER sec_own_steal_tr ON sec_own_h1" \
   -c "DROP POLICY sec_own_steal ON sec_own_h1" -c "ALTER TABLE sec_own_h1 DISABLE ROW LEVEL SECURITY" \
   -c "DROP TRIGGER sec_own_steal ON sec_own_h3_history" -c "DROP TRIGGER sec_own_steal_tr ON sec_own_h3_history" \
   -c "DROP POLICY sec_own_steal ON sec_own_h3_history" -c "ALTER TABLE sec_own_h3_history DISABLE ROW LEVEL SECURITY" >/dev/null
newer sec_own_h1
newer sec_own_h3
try postgres "SELECT status FROM treble_sync.sync_table('sec_own_h1')"
check "given back to the registration's owner, the copy syncs again" success "$OUT"
try postgres "SELECT status FROM treble_sync.sync_table('sec_own_h3')"
check "and so does the copy whose history table is given back" success "$OUT"

# --- the one way to act as the owner: only security.c switches to a
# registration's owner (catalog.c becomes the extension's owner, process.c
# the caller's role), so an entry point added later goes through its check
src=$(dirname "${BASH_SOURCE[0]}")/../../src
check "only security.c, catalog.c and process.c change the current role" "catalog.c process.c security.c" \
    "$(grep -l 'SetUserIdAndSecContext\|SetCurrentRoleId\|SetSessionAuthorization' "$src"/*.c | xargs -n1 basename | sort | tr '\n' ' ' | sed 's/ $//')"
