#!/usr/bin/env bash
#
# Failover and switchover: a hot standby of the destination is promoted,
# and the next cycles on the new primary converge to the warehouse with
# nothing lost or duplicated.
#
#   a. switchover between cycles: the primary is shut down cleanly, the
#      standby promoted; pg_cron's scheduler, idle on the standby, starts
#      on the new primary
#   b. failover after a crash mid-cycle: every process of the primary is
#      killed (SIGKILL) while a cycle pulls 300,000 rows; the standby has
#      the run's 'running' row and is promoted; the first cycle there (of
#      another table) closes that run as interrupted, and the next cycle of
#      the table converges
#
# The destination is started again (crash recovery) when the script ends,
# whatever happened. Creates the database "replica_fo" on the destination
# and the tables fo_sends and fo_small in the warehouse, recreated on every
# run. Prints TAP; run with  prove -v test/replica/failover.t

DB=replica_fo
TAB=fo_sends
SMALL=fo_small
ROWS=300000             # a pull of a couple of seconds, to crash in
source "$(dirname "$0")/lib.sh"

# Runs left 'running' on a server (primary or standby).
left_running() { "$1" -c "SELECT count(*) FROM treble_sync.runs WHERE status = 'running'"; }

# The copy converged: it equals the warehouse, row for row, and the
# watermark is the warehouse's cut. (2 tests)
converged() {   # converged SERVER TABLE LABEL
    check "$3: the copy equals the warehouse, nothing lost or duplicated" \
        "$(fingerprint wh "$2")" "$(fingerprint "$1" "$2")"
    check "$3: the watermark is the warehouse's cut" "$(wh_cut "$2")" "$(watermark "$1" "$2")"
}

# Promote the standby and wait until it accepts writes.
promote() {
    pg_ctl_as promote -D "$STANDBY_PGDATA" -w -t 60 >/dev/null
    wait_for standby "SELECT 'primary' WHERE NOT pg_is_in_recovery()" 60
}

# ---------------------------------------------------------------------------
# Setup: two warehouse tables (no primary key), a change batch for each,
# their copies in sync.

wh >/dev/null <<SQL || { echo "Bail out! cannot create the warehouse tables"; exit 1; }
SET client_min_messages = warning;
DROP TABLE IF EXISTS $TAB, $SMALL;
DROP FUNCTION IF EXISTS fo_batch(text, int);
CREATE TABLE $TAB (id bigint, scheduled_at timestamp, payload text, synced_at timestamp);
INSERT INTO $TAB
SELECT g, timestamp '2026-11-29 12:00' - (g % 400) * interval '1 day',
       'b0:' || repeat(md5('0:' || g), 3), timestamp '2026-11-29 00:00'
FROM generate_series(1, $ROWS) g;
CREATE TABLE $SMALL (LIKE $TAB);
INSERT INTO $SMALL SELECT * FROM $TAB WHERE id <= 1000;
-- batch k: every row a new payload and synced_at, a few rows of the hot
-- window gone, 50 new ones
CREATE FUNCTION fo_batch(tab text, k int) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE format('UPDATE %I SET payload = %L || '':'' || repeat(md5(%s || '':'' || id), 3),
                               synced_at = timestamp ''2026-11-29 00:00'' + %s * interval ''1 hour''',
                   tab, 'b' || k, k, k);
    EXECUTE format('DELETE FROM %I WHERE id %% 400 = 0 AND (id / 400) %% 20 = %s', tab, k);
    EXECUTE format('INSERT INTO %I SELECT 1000000 + %s * 100 + g, timestamp ''2026-11-28 06:00'',
                           ''new in batch %s'', timestamp ''2026-11-29 00:00'' + %s * interval ''1 hour''
                    FROM generate_series(1, 50) g', tab, k, k, k);
END
\$\$;
VACUUM ANALYZE $TAB;
SQL

setup_db
primary >/dev/null <<SQL || { echo "Bail out! cannot register the tables"; exit 1; }
SELECT name FROM treble_sync.add_table('$TAB', 'repwh', key_columns => '{id}', event_column => 'scheduled_at');
SELECT name FROM treble_sync.add_table('$SMALL', 'repwh', key_columns => '{id}', event_column => 'scheduled_at');
-- a crash is not retried: the cycle on the new primary is a new run
ALTER SERVER repwh OPTIONS (ADD max_retries '0');
SQL
check "the first cycle loads $TAB" "success|$ROWS|" "$(cycle primary $TAB)"
check "the first cycle loads $SMALL" "success|1000|" "$(cycle primary $SMALL)"

# pg_cron's scheduler runs on the primary in cron.database_name ('tap', made
# here if the pgTAP suite has not made it).
if [[ -z $("$PSQL" -X -At -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'tap'") ]]; then
    "$PSQL" -X -q -d postgres -c 'CREATE DATABASE tap' >/dev/null
fi
CRON="SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cron launcher'"
cron_on_primary=$(wait_for primary "SELECT 1 WHERE ($CRON) > 0" 15)

# ---------------------------------------------------------------------------
# a. Switchover between cycles.

make_standby
wh -c "SELECT fo_batch('$SMALL', 1)" >/dev/null
check "a: a cycle on the primary" success "$(cycle primary $SMALL | cut -d'|' -f1)"
wait_replayed
if [[ -n $cron_on_primary ]]; then
    check "a: pg_cron's scheduler does not run on the standby" 0 "$(standby -c "$CRON")"
fi
pg_ctl_as stop -D "$TS_DEST_PGDATA" -m fast -w -t 60 >/dev/null
check "a: the standby is promoted" primary "$(promote)"
converged standby $SMALL "a: after promotion"
check "a: no run is left running" 0 "$(left_running standby)"
wm_promoted=$(watermark standby $SMALL)
wh -c "SELECT fo_batch('$SMALL', 2)" >/dev/null
check "a: the next cycle on the new primary succeeds" success "$(cycle standby $SMALL | cut -d'|' -f1)"
converged standby $SMALL "a: after the next cycle"
check "a: the next cycle went on from the watermark the standby had replayed" "success|$wm_promoted" \
    "$(standby -c "SELECT status || '|' || watermark_from FROM treble_sync.runs ORDER BY run_id DESC LIMIT 1")"
if [[ -n $cron_on_primary ]]; then
    check "a: pg_cron's scheduler starts on the new primary" 1 \
        "$(wait_for standby "SELECT 1 WHERE ($CRON) > 0" 30)"
else
    ok "a: pg_cron's scheduler starts on the new primary # skip no pg_cron scheduler on the destination"
fi
drop_standby
restart_dest || { echo "Bail out! cannot restart the destination"; exit 1; }

# ---------------------------------------------------------------------------
# b. Failover after the primary crashed in the middle of a cycle.

make_standby
fp_before=$(fingerprint primary $TAB)
wm_before=$(watermark primary $TAB)
wh -c "SELECT fo_batch('$TAB', 1)" >/dev/null
PGAPPNAME=fo_caller "$PSQL" -X -At -d "$DB" -c "SELECT status FROM treble_sync.sync_table('$TAB')" \
    >"$WORK/caller.out" 2>&1 &
caller=$!
pulling=$(wait_for primary "SELECT run_id FROM treble_sync.progress
                            WHERE table_name = '$TAB' AND phase = 'pulling' AND rows_read >= 50000" 60)
like "b: the cycle on the primary is pulling" '^[0-9]+$' "$pulling"
check "b: the standby has its 'running' row" "$pulling" \
    "$(wait_for standby "SELECT run_id FROM treble_sync.runs WHERE run_id = 0$pulling AND status = 'running'" 30)"
pm=$(head -n 1 "$TS_DEST_PGDATA/postmaster.pid")
kill -KILL "$pm" $(pgrep -P "$pm") 2>/dev/null
wait "$caller" 2>/dev/null
like "b: the primary's caller lost its connection" 'server closed the connection|terminating connection|connection to server' \
    "$(cat "$WORK/caller.out")"
check "b: the standby is promoted" primary "$(promote)"
check "b: the interrupted run is 'running' on the new primary" running \
    "$(standby -c "SELECT status FROM treble_sync.runs WHERE run_id = 0$pulling")"
check "b: the copy on the new primary is the one before the cycle" "$fp_before" "$(fingerprint standby $TAB)"
check "b: so is its watermark" "$wm_before" "$(watermark standby $TAB)"

# The first cycle on the new primary, of another table, closes the run.
check "b: a cycle of another table on the new primary" success "$(cycle standby $SMALL | cut -d'|' -f1)"
like "b: it closed the interrupted run as failed" '^failed\|interrupted: ' \
    "$(standby -c "SELECT status || '|' || error FROM treble_sync.runs WHERE run_id = 0$pulling")"
check "b: no run is left running" 0 "$(left_running standby)"
out=$(cycle standby $TAB)
check "b: the next cycle of the table on the new primary succeeds" success "${out%%|*}"
diag "next cycle (status|pulled|error): $out"
converged standby $TAB "b: after the next cycle"
check "b: no run is left running, and none failed but the interrupted one" "0|$pulling" \
    "$(standby -c "SELECT count(*) FILTER (WHERE status = 'running') || '|' || string_agg(run_id::text, ',') FILTER (WHERE status = 'failed')
                   FROM treble_sync.runs")"
