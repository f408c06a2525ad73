#!/usr/bin/env bash
#
# A hot standby of the destination (pg_basebackup -R, .ci/clusters standby):
#
#   a. every entry point that starts or changes work fails at once there,
#      with SQLSTATE 25006 and a message that says to run it on the
#      primary; none waits for a worker, none starts one
#   b. the copy, the run log, status, progress and metrics() read there
#      tell what the standby has replayed: with replay paused, a cycle on
#      the primary is not there yet, and freshness there is older
#   c. a reader polling the standby while cycles run on the primary sees
#      each cycle whole: every row of one batch, the row count unchanged,
#      and the watermark of that same batch
#
# Creates the database "replica" on the destination and the table
# rep_sends in the warehouse, both recreated on every run. Prints TAP; run
# with  prove -v test/replica/standby.t

DB=replica
TAB=rep_sends
ROWS=20000
source "$(dirname "$0")/lib.sh"

# ---------------------------------------------------------------------------
# Setup: a warehouse table in batches (every row of batch k has v = k and
# synced_at = base + k hours; each batch also replaces the 50 lowest ids of
# the hot window by 50 new rows, so the count stays the same), its copy in
# sync.

wh >/dev/null <<SQL || { echo "Bail out! cannot create the warehouse table"; exit 1; }
SET client_min_messages = warning;
DROP TABLE IF EXISTS $TAB;
DROP FUNCTION IF EXISTS rep_batch(int);
CREATE TABLE $TAB (id bigint, scheduled_at timestamp, v int, payload text, synced_at timestamp);
INSERT INTO $TAB
SELECT g, timestamp '2026-11-29 12:00' - (g % 400) * interval '1 day', 0,
       md5('0:' || g), timestamp '2026-11-29 00:00'
FROM generate_series(1, $ROWS) g;
CREATE FUNCTION rep_batch(k int) RETURNS void LANGUAGE sql AS \$\$
    UPDATE $TAB SET v = k, payload = md5(k || ':' || id),
                    synced_at = timestamp '2026-11-29 00:00' + k * interval '1 hour';
    DELETE FROM $TAB WHERE id IN (SELECT id FROM $TAB WHERE scheduled_at >= '2026-11-29'
                                  ORDER BY id LIMIT 50);
    INSERT INTO $TAB
    SELECT 1000000 + k * 100 + g, timestamp '2026-11-29 06:00', k, 'new in batch ' || k,
           timestamp '2026-11-29 00:00' + k * interval '1 hour'
    FROM generate_series(1, 50) g;
\$\$;
SQL

setup_db
primary >/dev/null <<SQL || { echo "Bail out! cannot register $TAB"; exit 1; }
SELECT name FROM treble_sync.add_table('$TAB', 'repwh', key_columns => '{id}',
                                       event_column => 'scheduled_at');
SELECT check_id FROM treble_sync.add_check('$TAB', 'not_null', column_name => 'id');
SQL
check "the first cycle on the primary loads the copy" "success|$ROWS|" "$(cycle primary $TAB)"

make_standby
wait_replayed
check "the standby is in recovery" t "$(standby -c 'SELECT pg_is_in_recovery()')"

# ---------------------------------------------------------------------------
# a. Every entry point refuses at once on the standby.

# The entry points are the functions of the extension that PUBLIC may not
# run and treble_sync_admin may; each is called below, so a new one
# without a call here fails this test.
ENTRY_POINTS=(
    "add_table|SELECT treble_sync.add_table('other', 'repwh', key_columns => '{id}')"
    "alter_table|SELECT treble_sync.alter_table('$TAB', enabled => false)"
    "remove_table|SELECT treble_sync.remove_table('$TAB')"
    "sync_table|SELECT treble_sync.sync_table('$TAB')"
    "sync_all|SELECT treble_sync.sync_all()"
    "resync|SELECT treble_sync.resync('$TAB')"
    "schedule|SELECT treble_sync.schedule('$TAB', '* * * * *')"
    "schedule_all|SELECT treble_sync.schedule_all('* * * * *')"
    "unschedule|SELECT treble_sync.unschedule('$TAB')"
    "add_check|SELECT treble_sync.add_check('$TAB', 'not_null', column_name => 'v')"
    "drop_check|SELECT treble_sync.drop_check(1)"
    "verify|SELECT * FROM treble_sync.verify('$TAB')"
    "explain_cycle|SELECT * FROM treble_sync.explain_cycle('$TAB')"
    "repair|SELECT treble_sync.repair('$TAB', '2026-11-28')"
    "rewind|SELECT * FROM treble_sync.rewind('$TAB', '2026-11-28')"
    "add_group|SELECT treble_sync.add_group('g', '{$TAB}')"
    "alter_group|SELECT treble_sync.alter_group('g', '{$TAB}')"
    "remove_group|SELECT treble_sync.remove_group('g')"
    "sync_group|SELECT * FROM treble_sync.sync_group('g')"
    "schedule_group|SELECT treble_sync.schedule_group('g', '* * * * *')"
)
listed=$(printf '%s\n' "${ENTRY_POINTS[@]}" | cut -d'|' -f1 | sort | paste -sd' ')
check "the list covers every entry point treble_sync_admin is granted" "$listed" \
    "$(primary -c "SELECT string_agg(DISTINCT p.proname, ' ' ORDER BY p.proname) FROM pg_proc p
                   WHERE p.pronamespace = 'treble_sync'::regnamespace
                     AND NOT has_function_privilege('public', p.oid, 'EXECUTE')
                     AND has_function_privilege('treble_sync_admin', p.oid, 'EXECUTE')")"

for entry in "${ENTRY_POINTS[@]}"; do
    fn=${entry%%|*}
    sql=${entry#*|}
    # 20 s: far under the suite's time, far over an immediate refusal
    err=$(timeout 20 "$PSQL" -X -q -At -v VERBOSITY=verbose -p "$STANDBY_PORT" -d "$DB" -c "$sql" 2>&1 >/dev/null)
    rc=$?
    if ((rc == 124)); then
        nok "$fn() on the standby answers at once"
        diag "still waiting after 20 s"
        continue
    fi
    like "$fn() on the standby fails with SQLSTATE 25006, naming itself and the primary" \
        "ERROR:  25006: treble_sync\.$fn\(\) cannot run on a standby server.*HINT:  Run it on the primary server" \
        "$(tr '\n' ' ' <<<"$err")"
done
check "no treble_sync worker was started or is waiting on the standby" "0|0" \
    "$(standby -c "SELECT count(*) FILTER (WHERE backend_type = 'treble_sync worker') || '|' ||
                          count(*) FILTER (WHERE wait_event = 'BgWorkerStartup')
                   FROM pg_stat_activity")"
check "require_primary() passes on the primary" "" "$(primary -c "SELECT treble_sync.require_primary('x()')")"

# ---------------------------------------------------------------------------
# b. Readers on the standby see what it replayed.

wait_replayed
check "the copy on the standby equals the primary's" "$(fingerprint primary $TAB)" "$(fingerprint standby $TAB)"
READ_RUNS="SELECT run_id || '|' || status || '|' || rows_pulled || '|' || coalesce(watermark_to, '') FROM treble_sync.runs ORDER BY run_id"
READ_STATUS="SELECT last_status || '|' || watermark || '|' || consecutive_failures FROM treble_sync.status WHERE table_name = '$TAB'"
READ_METRICS="SELECT line FROM regexp_split_to_table(treble_sync.metrics(), E'\n') line WHERE line ~ '^treble_sync_(runs|rows)_total'"
check "the run log on the standby equals the primary's" "$(primary -c "$READ_RUNS")" "$(standby -c "$READ_RUNS")"
check "status on the standby equals the primary's" "$(primary -c "$READ_STATUS")" "$(standby -c "$READ_STATUS")"
check "metrics() on the standby equals the primary's" "$(primary -c "$READ_METRICS")" "$(standby -c "$READ_METRICS")"
check "progress reads on the standby (no cycle runs there)" 0 "$(standby -c 'SELECT count(*) FROM treble_sync.progress')"

# Replay paused: a cycle on the primary is not on the standby yet, and the
# standby says its copy is older.
before_fp=$(fingerprint standby $TAB)
before_wm=$(watermark standby $TAB)
standby -c 'SELECT pg_wal_replay_pause()' >/dev/null
wh -c 'SELECT rep_batch(1)' >/dev/null
check "a cycle on the primary while the standby's replay is paused" success "$(cycle primary $TAB | cut -d'|' -f1)"
wait_replayed received    # the standby has the cycle's WAL, and keeps it unreplayed
check "the standby's copy is still the one before that cycle" "$before_fp" "$(fingerprint standby $TAB)"
check "the standby's watermark is still the one before that cycle" "$before_wm" "$(watermark standby $TAB)"
check "the standby's freshness is older than the primary's by the hour the cycle moved" t \
    "$(standby -c "SELECT freshness_seconds - $(primary -c "SELECT freshness_seconds FROM treble_sync.status WHERE table_name = '$TAB'") BETWEEN 3590 AND 3700
                   FROM treble_sync.status WHERE table_name = '$TAB'")"
check "the standby's metrics() count the runs it replayed" \
    "treble_sync_runs_total{table=\"$TAB\",status=\"success\"} 1" \
    "$(standby -c "$READ_METRICS" | grep 'status="success"')"
standby -c 'SELECT pg_wal_replay_resume()' >/dev/null
wait_replayed
check "after replay the standby's copy equals the warehouse" "$(fingerprint wh $TAB)" "$(fingerprint standby $TAB)"
check "after replay the standby's watermark is the warehouse's cut" "$(wh_cut $TAB)" "$(watermark standby $TAB)"
check "after replay status on the standby equals the primary's" "$(primary -c "$READ_STATUS")" "$(standby -c "$READ_STATUS")"

# ---------------------------------------------------------------------------
# c. A reader on the standby sees each cycle whole. It polls, in one
# session, the row count, the batches its rows come from, and whether the
# watermark is the newest synced_at of the copy: a half-applied cycle would
# show two batches, another count, or a watermark of another batch.

POLL="SELECT count(*) || ' ' || min(v) || ' ' || max(v) || ' ' ||
             (max(synced_at) = (SELECT watermark::timestamp FROM treble_sync.tables WHERE name = '$TAB'))
      FROM $TAB;"
touch "$WORK/polling"
while [[ -e $WORK/polling ]]; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do echo "$POLL"; done
    sleep 0.05
done | "$PSQL" -X -q -At -p "$STANDBY_PORT" -d "$DB" >"$WORK/polls" 2>"$WORK/polls.err" &
poller=$!
cycles_ok=0
for k in 2 3 4 5 6 7; do
    wh -c "SELECT rep_batch($k)" >/dev/null
    [[ $(cycle primary $TAB | cut -d'|' -f1) == success ]] && cycles_ok=$((cycles_ok + 1))
done
wait_replayed
sleep 0.5
rm -f "$WORK/polling"
wait "$poller"
check "six cycles on the primary while the reader polls the standby" 6 "$cycles_ok"
check "the reader's session had no error" "" "$(head -c 500 "$WORK/polls.err")"
polls=$(wc -l <"$WORK/polls")
batches=$(awk '{print $2}' "$WORK/polls" | sort -u | wc -l)
bad=$(awk -v n=$ROWS '$1 != n || $2 != $3 || $4 != "true"' "$WORK/polls" | sort | uniq -c | head -n 5)
diag "$polls reads on the standby, rows of $batches different batches seen"
check "every read on the standby saw one whole cycle (count, one batch, its watermark)" "" "$bad"
like "the reader saw several cycles come in" '^[3-9]$' "$batches"
check "the standby's copy equals the warehouse at the end" "$(fingerprint wh $TAB)" "$(fingerprint standby $TAB)"
