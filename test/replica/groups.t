#!/usr/bin/env bash
#
# Sync groups seen by readers: a fact table and its dimension, cycled as
# one group while the warehouse keeps writing, read by pollers on the
# destination and on a hot standby that join every fact row to its
# dimension row after every commit:
#
#   a. no reader, on the primary or on the standby, ever sees a fact row
#      whose dimension row is not there (the group commits once)
#   b. the same tables cycled one by one do show such a row (so the
#      pollers' query can see what a group prevents)
#   c. a member failing (an 'error' check) leaves both copies untouched
#
# Creates the database "rep_groups" on the destination and the tables
# grp_dim and grp_fact in the warehouse, recreated on every run. Prints
# TAP; run with  prove -v test/replica/groups.t

DB=rep_groups
source "$(dirname "$0")/lib.sh"

# Batch k writes 20 campaigns, then 3 sends for each a moment later (a
# send's campaign is always written first, as a warehouse loads
# dimensions before facts), and corrects the sends of batch k - 1.
wh >/dev/null <<'SQL' || { echo "Bail out! cannot create the warehouse tables"; exit 1; }
SET client_min_messages = warning;
DROP TABLE IF EXISTS grp_dim_t, grp_fact CASCADE;
DO $$ BEGIN DROP TABLE IF EXISTS grp_dim; EXCEPTION WHEN wrong_object_type THEN NULL; END $$;
DROP FUNCTION IF EXISTS grp_batch(int);
CREATE TABLE grp_dim_t (id int PRIMARY KEY, title text, created_at timestamp, synced_at timestamp);
-- every statement that reads the dimension takes 50 ms more: without one
-- snapshot for the group, a batch committed meanwhile would reach the
-- fact table's cut and not the dimension's. The sleep is an initplan, run
-- once per statement: as a subquery joined to the table, a plan could
-- rescan it for every row (a nested loop with the table outside, chosen
-- when the statistics make the table's rows look few), and a pull of a
-- few thousand rows then took minutes
CREATE VIEW grp_dim AS SELECT t.* FROM grp_dim_t t WHERE (SELECT true FROM pg_catalog.pg_sleep(0.05));
CREATE TABLE grp_fact (id int PRIMARY KEY, dim_id int, amount int, scheduled_at timestamp, synced_at timestamp);
CREATE FUNCTION grp_batch(k int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO grp_dim_t
    SELECT k * 100 + g, 'campaign ' || k || '/' || g, timestamp '2026-11-29 06:00', clock_timestamp()::timestamp
    FROM generate_series(1, 20) g;
    INSERT INTO grp_fact
    SELECT k * 1000 + g, k * 100 + 1 + g % 20, g, timestamp '2026-11-29 07:00', clock_timestamp()::timestamp
    FROM generate_series(1, 60) g;
    UPDATE grp_fact SET amount = amount + 1, synced_at = clock_timestamp()::timestamp
    WHERE id / 1000 = k - 1;
END
$$;
SELECT grp_batch(1);
SQL

setup_db
primary >/dev/null <<'SQL' || { echo "Bail out! cannot register the tables"; exit 1; }
SELECT name FROM treble_sync.add_table('grp_dim', 'repwh', key_columns => '{id}', event_column => 'created_at');
SELECT name FROM treble_sync.add_table('grp_fact', 'repwh', key_columns => '{id}', event_column => 'scheduled_at');
-- the dimension first: its cut is frozen before the fact table's, so only
-- one snapshot of the warehouse for both (OdbcBeginSnapshot) keeps a send
-- written in between from arriving without its campaign
SELECT name FROM treble_sync.add_group('campaigns', '{grp_dim, grp_fact}');
SQL
# What the runs of the group's tables say, and which of the database's
# backends are busy: shown when a cycle did not succeed.
explain_runs() {
    diag "$(primary <<'SQL'
SELECT 'group run ' || group_run_id || ' ' || status || ' ' || started_at::time || '..' || coalesce(finished_at::time::text, '') || ' ' || coalesce(error, '')
FROM treble_sync.group_runs ORDER BY group_run_id DESC LIMIT 12;
SELECT 'run ' || run_id || ' ' || table_name || ' ' || status || ' ' || started_at::time || '..' || coalesce(finished_at::time::text, '') || ' ' || coalesce(error, '')
FROM treble_sync.runs ORDER BY run_id DESC LIMIT 24;
SELECT 'backend ' || pid || ' ' || backend_type || ' ' || coalesce(state, '') || ' ' || coalesce(wait_event_type || ':' || wait_event, '') || ' ' || now() - query_start || ' ' || left(query, 120)
FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid();
SQL
)"
}
group_cycle() {
    timeout "$CYCLE_TIMEOUT" "$PSQL" -X -q -At -d "$DB" \
        -c "SELECT string_agg(status, ',' ORDER BY table_name) FROM treble_sync.sync_group('campaigns')" 2>&1
}
check "the group's first cycle loads both tables" "success,success" "$(group_cycle)"
make_standby

ORPHANS="SELECT count(*) FROM grp_fact f WHERE NOT EXISTS (SELECT 1 FROM grp_dim d WHERE d.id = f.dim_id);"

# Poll a server ($1: its port) into $2 until $WORK/polling goes.
poll() {
    while [[ -e $WORK/polling ]]; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do echo "$ORPHANS"; done
        sleep 0.02
    done | "$PSQL" -X -q -At -p "$1" -d "$DB" >"$2" 2>"$2.err"
}

# ---------------------------------------------------------------------------
# a. Cycles of the group while the warehouse writes batch after batch.

touch "$WORK/polling" "$WORK/writing"
poll "$PGPORT" "$WORK/primary.polls" &
poll_primary=$!
poll "$STANDBY_PORT" "$WORK/standby.polls" &
poll_standby=$!
(k=2; while [[ -e $WORK/writing ]]; do wh -c "SELECT grp_batch($k)" >/dev/null; k=$((k + 1)); sleep 0.02; done) &
writer=$!
cycles_ok=0
outcomes=()
for i in 1 2 3 4 5 6 7 8; do
    out=$(group_cycle)
    [[ $out == success,success ]] && cycles_ok=$((cycles_ok + 1))
    outcomes+=("$i: $out ($(date +%T))")
done
rm -f "$WORK/writing"
wait "$writer"
wait_replayed
sleep 0.3
rm -f "$WORK/polling"
wait "$poll_primary" "$poll_standby"
check "eight group cycles while the warehouse writes" 8 "$cycles_ok" || true
((cycles_ok == 8)) || { diag "$(printf '%s\n' "${outcomes[@]}")"; explain_runs; }
for side in primary standby; do
    check "the $side's poller had no error" "" "$(head -c 500 "$WORK/$side.polls.err")"
    diag "$(wc -l <"$WORK/$side.polls") reads on the $side"
    check "no read on the $side saw a send without its campaign" "0" \
        "$(sort -u "$WORK/$side.polls" | tr '\n' ' ' | sed 's/ $//')"
done
out=$(group_cycle)
check "a last cycle once the writes stopped" success,success "$out"
[[ $out == success,success ]] || explain_runs
for t in grp_fact grp_dim; do
    check "$t's copy equals the warehouse" "$(fingerprint wh "$t")" "$(fingerprint primary "$t")"
done

# ---------------------------------------------------------------------------
# b. The same tables one by one: the sends of a batch arrive before their
# campaigns.

primary -c "SELECT treble_sync.remove_group('campaigns')" >/dev/null
wh -c "SELECT grp_batch(900)" >/dev/null
check "alone, the fact table's cycle succeeds" success \
    "$(primary -c "SELECT status FROM treble_sync.sync_table('grp_fact')")"
check "and a reader sees its sends without their campaigns" 60 "$(primary -c "$ORPHANS")"
check "until the dimension's own cycle" "success 0" \
    "$(primary -c "SELECT status FROM treble_sync.sync_table('grp_dim')") $(primary -c "$ORPHANS")"

# ---------------------------------------------------------------------------
# c. One member failing applies nothing of either.

primary >/dev/null <<'SQL'
SELECT name FROM treble_sync.add_group('campaigns', '{grp_fact, grp_dim}');
SELECT kind FROM treble_sync.add_check('grp_dim', 'range', column_name => 'id', max => 95000);
SQL
wh -c "SELECT grp_batch(950)" >/dev/null
before="$(fingerprint primary grp_fact) $(fingerprint primary grp_dim)"
check "a failing check of the dimension fails the group's cycle" "failed,failed" "$(group_cycle)"
check "neither copy changed" "$before" "$(fingerprint primary grp_fact) $(fingerprint primary grp_dim)"
check "the group run says which table failed" t \
    "$(primary -c "SELECT status = 'failed' AND error LIKE 'table \"grp_dim\": quality check failed%'
                   FROM treble_sync.group_runs ORDER BY group_run_id DESC LIMIT 1")"
