#!/usr/bin/env bash
#
# Fault injection: a cycle is interrupted at a chosen moment, and the copy
# and the watermark must be exactly as before it, the run log must say what
# happened, and the next cycle must converge on its own.
#
#   a. the warehouse backend serving the pull is terminated mid-fetch
#   b. the warehouse cluster is stopped mid-fetch (fast shutdown), then
#      started again; with retries, a warehouse that comes back within the
#      retries lets the same run succeed, and one that stays down fails it
#      after the backoff
#   c. the worker is terminated after it merged the pull, before it
#      commits (held there by treble_sync.test_pause_at)
#   d. the destination is stopped with an immediate shutdown at the same
#      point, then started again
#   e. a statement error mid-apply: a local CHECK constraint that one
#      warehouse row violates
#
# Expects running clusters and their env file sourced (TS_*, PGHOST, PGPORT,
# PGUSER), as .ci/run provides; see .ci/clusters. Creates the database
# "faults" on the destination and the table fault_sends in the warehouse's
# database wh, both recreated on every run. Prints TAP; run with
#   prove -v test/reliability/faults.t

set -u

PSQL=$TS_PG_BIN/psql
DB=faults
TAB=fault_sends
ROWS=300000             # large enough for a pull of a couple of seconds
SERVER=faultwh
CYCLE_TIMEOUT=120       # seconds a cycle may take before it counts as hung

WORK=$(mktemp -d)
CALLER_PID=             # the background cycle's psql
CALLERS=()              # every one started, for the cleanup

# ---------------------------------------------------------------------------
# TAP

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # tap.sh, and holding a cycle at a phase
NTESTS=65
plan $NTESTS

# ---------------------------------------------------------------------------
# Clusters and sessions

dest() { "$PSQL" -X -At -q -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
wh()   { "$PSQL" -X -At -q -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@"; }

# TS_AS_PG is empty or a command prefix such as "runuser -u postgres --".
pg_ctl_as() { $TS_AS_PG "$TS_PG_BIN/pg_ctl" "$@"; }

running() { pg_ctl_as status -D "$1" >/dev/null 2>&1; }

start_cluster() {   # start_cluster PGDATA LOG
    running "$1" || pg_ctl_as start -D "$1" -l "$2" -w -t 60 >/dev/null
}

# Whatever happened, leave both clusters running for the suites after this
# one, and no cycle of ours in flight.
cleanup() {
    local pid
    for pid in "${CALLERS[@]}"; do
        kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    start_cluster "$TS_WH_PGDATA" "$TS_DIR/wh.log" || echo "# could not restart the warehouse" >&2
    start_cluster "$TS_DEST_PGDATA" "$TS_DIR/dest.log" || echo "# could not restart the destination" >&2
    rm -rf "$WORK"
    if ((n != NTESTS)); then
        echo "# ran $n of $NTESTS tests" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Start a cycle in the background, the way a scheduler's session would, and
# wait (up to 10 s) until its session is connected. With a phase, the
# cycle waits as it enters it while hold_cycle's lock is held (lib.sh).
start_cycle() {     # start_cycle [PHASE]
    local pause=()
    [[ -n ${1:-} ]] && pause=(-c "SET treble_sync.test_pause_at = '$1'")
    PGAPPNAME=fault_caller "$PSQL" -X -At -q -d "$DB" "${pause[@]}" \
        -c "SELECT status FROM treble_sync.sync_table('$TAB')" >"$WORK/caller.out" 2>&1 &
    CALLER_PID=$!
    CALLERS+=("$CALLER_PID")
    wait_for "SELECT 'up' FROM pg_stat_activity WHERE application_name = 'fault_caller'" 10 >/dev/null
}

# Wait for the background cycle's caller; 1 if it is still running after
# CYCLE_TIMEOUT seconds (a hang), in which case it is left running.
wait_caller() {
    local deadline=$((SECONDS + CYCLE_TIMEOUT))
    while kill -0 "$CALLER_PID" 2>/dev/null; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
    wait "$CALLER_PID" 2>/dev/null
    return 0
}

# Evaluate a query (one text value) every 50 ms until it returns non-NULL;
# prints that value, or nothing after the timeout.
wait_for() {    # wait_for QUERY [TIMEOUT]
    dest -v q="$1" -v t="${2:-60}" <<<"SELECT wait_for(:'q', :t)"
}

# Wait until the cycle pulls and has read at least $1 rows; prints
# "run_id|rows_read|worker_pid", or nothing if the caller ended first.
wait_pulling() {
    wait_for "SELECT coalesce(
                  (SELECT run_id || '|' || rows_read || '|' || worker_pid FROM treble_sync.progress
                   WHERE table_name = '$TAB' AND phase = 'pulling' AND rows_read >= $1),
                  CASE WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'fault_caller')
                       THEN '' END)" 30
}

# The copy and the warehouse table, fingerprinted the same way on both sides.
FINGERPRINT="SET datestyle = ISO;
SELECT count(*) || ' ' || coalesce(md5(string_agg(t::text, ',' ORDER BY id)), '-') FROM $TAB t"
copy_fp() { dest <<<"$FINGERPRINT"; }
wh_fp()   { wh <<<"$FINGERPRINT"; }

watermark() { dest -c "SELECT coalesce(watermark, '<none>') FROM treble_sync.tables WHERE name = '$TAB'"; }
# The cut a successful cycle should reach: the warehouse's max(synced_at).
wh_cut()    { wh -c "SELECT to_char(max(synced_at), 'YYYY-MM-DD HH24:MI:SS') FROM $TAB"; }

# "status|first line of error" of a run
run_outcome() {
    dest -c "SELECT status || '|' || coalesce(split_part(error, E'\n', 1), '') FROM treble_sync.runs WHERE run_id = $1"
}
run_error() { dest -c "SELECT error FROM treble_sync.runs WHERE run_id = $1"; }

# Runs left 'running', workers, and warehouse sessions of the reader (given
# up to 2 s to notice that their client is gone).
leftovers() {
    local i readers
    for i in {1..20}; do
        readers=$(wh -c "SELECT count(*) FROM pg_stat_activity WHERE usename = '$TS_WH_USER'")
        [[ $readers == 0 ]] && break
        sleep 0.1
    done
    dest <<<"SELECT pg_stat_clear_snapshot();
             SELECT 'running runs: ' || (SELECT count(*) FROM treble_sync.runs WHERE status = 'running')
                 || ', workers: ' || (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'treble_sync worker')" \
        | tail -n 1
    echo "warehouse sessions: $readers"
}

# A change batch in the warehouse: every row gets a new payload and
# synced_at (so the pull and the merge cover the whole table), some rows in
# the hot window disappear and new ones arrive.
BATCH=0
change_batch() {
    BATCH=$((BATCH + 1))
    wh -c "SELECT fault_batch($BATCH)" >/dev/null
}

# Snapshot of the state before a faulty cycle.
before() {
    FP_BEFORE=$(copy_fp)
    WM_BEFORE=$(watermark)
}

# The checks after a failed cycle: the run says what happened, and neither
# the copy nor the watermark moved. (4 tests)
after_failure() {   # after_failure RUN_ID ERROR_REGEX LABEL
    local outcome
    outcome=$(run_outcome "$1")
    is "${outcome%%|*}" failed "$3: the run is logged as failed"
    like "$3: its error says what happened" "$2" "$(run_error "$1")"
    diag "run $1 error: $(run_error "$1")"
    is "$(copy_fp)" "$FP_BEFORE" "$3: the copy is exactly as before the cycle"
    is "$(watermark)" "$WM_BEFORE" "$3: the watermark is exactly as before the cycle"
}

# The next cycle, with the fault removed, converges. (4 tests)
converge() {    # converge LABEL
    local out status
    out=$(timeout "$CYCLE_TIMEOUT" "$PSQL" -X -At -d "$DB" \
        -c "SELECT status, attempts, rows_pulled, rows_inserted, rows_updated, rows_deleted, error
            FROM treble_sync.sync_table('$TAB')" 2>&1)
    status=${out%%|*}
    like "$1: the next cycle succeeds" '^(success|empty)$' "$status"
    diag "next cycle (status|attempts|pulled|inserted|updated|deleted|error): $out"
    is "$(copy_fp)" "$(wh_fp)" "$1: the copy equals the warehouse"
    is "$(watermark)" "$(wh_cut)" "$1: the watermark is the warehouse's cut"
    is "$(leftovers)" "running runs: 0, workers: 0
warehouse sessions: 0" "$1: no run, worker or warehouse session is left"
}

# ---------------------------------------------------------------------------
# Setup: the warehouse table, the database, a registered copy in sync.

"$PSQL" -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL || { echo "Bail out! cannot create database $DB"; exit 1; }
SET client_min_messages = warning;
DROP DATABASE IF EXISTS $DB WITH (FORCE);
CREATE DATABASE $DB;
SQL

wh >/dev/null <<SQL || { echo "Bail out! cannot create the warehouse table"; exit 1; }
SET client_min_messages = warning;
DROP TABLE IF EXISTS $TAB;
DROP FUNCTION IF EXISTS fault_batch(int);
-- no primary key, like the warehouse tables treble_sync is built for
CREATE TABLE $TAB (id bigint, scheduled_at timestamp, payload text, synced_at timestamp);
-- events over 400 days, the last four of them (id % 400 < 4) in the hot window
INSERT INTO $TAB
SELECT g, timestamp '2026-11-29 12:00' - (g % 400) * interval '1 day',
       'b0:' || repeat(md5('0:' || g), 3), timestamp '2026-11-29 00:00'
FROM generate_series(1, $ROWS) g;
CREATE FUNCTION fault_batch(k int) RETURNS void LANGUAGE sql AS \$\$
    UPDATE $TAB SET payload = 'b' || k || ':' || repeat(md5(k || ':' || id), 3),
                    synced_at = timestamp '2026-11-29 00:00' + k * interval '1 hour';
    DELETE FROM $TAB WHERE id % 400 = 0 AND (id / 400) % 20 = k;       -- hot window
    INSERT INTO $TAB
    SELECT 1000000 + k * 100 + g, timestamp '2026-11-28 06:00', 'new in batch ' || k,
           timestamp '2026-11-29 00:00' + k * interval '1 hour'
    FROM generate_series(1, 50) g;
\$\$;
VACUUM ANALYZE $TAB;
SQL

dest >/dev/null <<'SQL' || { echo "Bail out! cannot set up database faults"; exit 1; }
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
CREATE EXTENSION dblink;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER faultwh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER faultwh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
-- the first non-NULL value of a query, polled every 50 ms for up to timeout_s
CREATE FUNCTION wait_for(query text, timeout_s float8) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
    deadline timestamptz := clock_timestamp() + make_interval(secs => timeout_s);
BEGIN
    LOOP
        PERFORM pg_stat_clear_snapshot();
        EXECUTE query INTO r;
        IF r IS NOT NULL OR clock_timestamp() > deadline THEN
            RETURN r;
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;
SELECT name FROM treble_sync.add_table('fault_sends', 'faultwh', key_columns => '{id}',
                                       event_column => 'scheduled_at');
SQL

out=$(timeout "$CYCLE_TIMEOUT" "$PSQL" -X -At -d "$DB" \
    -c "SELECT status, rows_inserted FROM treble_sync.sync_table('$TAB')" 2>&1)
is "$out" "success|$ROWS" "the first cycle loads the copy"
is "$(copy_fp)" "$(wh_fp)" "the copy equals the warehouse"

# From here on a transient error fails the run instead of being retried.
dest -c "ALTER SERVER $SERVER OPTIONS (ADD max_retries '0')"

# ---------------------------------------------------------------------------
# a. The warehouse backend serving the pull is terminated mid-fetch.

change_batch
before
start_cycle
prog=$(wait_pulling 50000)
IFS='|' read -r run_id rows_read wpid <<<"$prog"
killed=$(wh -c "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE usename = '$TS_WH_USER' AND datname = 'wh' AND backend_type = 'client backend'")
diag "terminated $killed warehouse backend(s) of run ${run_id:-?} after $rows_read rows"
ok=1; [[ -n $prog && $killed -ge 1 && $rows_read -lt $ROWS ]] && ok=0
tap $ok "a: the reader's warehouse backend is terminated mid-fetch"
wait_caller
tap $? "a: the cycle ends"
diag "caller: $(cat "$WORK/caller.out")"
after_failure "${run_id:-0}" 'CONTEXT: ((fetching rows|reading a value) from the warehouse|running a statement on the warehouse)' "a"
converge "a"

# ---------------------------------------------------------------------------
# b. The warehouse cluster is stopped mid-fetch, and started again.

change_batch
before
start_cycle
prog=$(wait_pulling 50000)
IFS='|' read -r run_id rows_read wpid <<<"$prog"
pg_ctl_as stop -D "$TS_WH_PGDATA" -m fast -w >/dev/null
stopped=$?
diag "stopped the warehouse during run ${run_id:-?} after $rows_read rows"
ok=1; [[ -n $prog && $stopped == 0 && $rows_read -lt $ROWS ]] && ok=0
tap $ok "b: the warehouse is stopped mid-fetch"
wait_caller
tap $? "b: the cycle ends"
diag "caller: $(cat "$WORK/caller.out")"
after_failure "${run_id:-0}" 'CONTEXT: ((fetching rows|reading a value) from the warehouse|running a statement on the warehouse)' "b"
start_cluster "$TS_WH_PGDATA" "$TS_DIR/wh.log"
tap $? "b: the warehouse starts again"
converge "b"

# b2. With retries, a warehouse that comes back within them: the same run
# converges by itself.
dest -c "ALTER SERVER $SERVER OPTIONS (SET max_retries '3')"
change_batch
before
start_cycle
prog=$(wait_pulling 50000)
IFS='|' read -r run_id rows_read wpid <<<"$prog"
pg_ctl_as stop -D "$TS_WH_PGDATA" -m fast -w >/dev/null
start_cluster "$TS_WH_PGDATA" "$TS_DIR/wh.log"
ok=$?
diag "restarted the warehouse during run ${run_id:-?} after $rows_read rows"
[[ -n $prog && $rows_read -lt $ROWS ]] || ok=1
tap $ok "b2: the warehouse restarts mid-fetch, with max_retries 3"
wait_caller
is "$(cat "$WORK/caller.out")" success "b2: the run succeeds after a retry"
outcome=$(dest -c "SELECT attempts || '|' || coalesce(error, '') FROM treble_sync.runs WHERE run_id = ${run_id:-0}")
like "b2: the run took more than one attempt" '^[2-4]\|$' "$outcome"
is "$(copy_fp)" "$(wh_fp)" "b2: the copy equals the warehouse"
is "$(watermark)" "$(wh_cut)" "b2: the watermark is the warehouse's cut"

# b3. With retries, a warehouse that stays down: every attempt fails, after
# waiting 0.5 s, 1 s and 2 s between them.
before
pg_ctl_as stop -D "$TS_WH_PGDATA" -m fast -w >/dev/null
out=$(timeout "$CYCLE_TIMEOUT" "$PSQL" -X -At -d "$DB" \
    -c "SELECT run_id, status, attempts, round(extract(epoch FROM finished_at - started_at), 2)
        FROM treble_sync.sync_table('$TAB')" 2>&1)
IFS='|' read -r run_id status attempts secs <<<"$out"
start_cluster "$TS_WH_PGDATA" "$TS_DIR/wh.log"
is "$status after $attempts attempts" "failed after 4 attempts" "b3: a warehouse that stays down fails the run after max_retries 3"
diag "run ${run_id:-?} took $secs s"
ok=1; [[ $secs =~ ^[0-9.]+$ ]] && awk -v s="$secs" 'BEGIN { exit !(s >= 3.5) }' && ok=0
tap $ok "b3: the attempts are 0.5 s, 1 s and 2 s apart (the run takes at least 3.5 s)"
like "b3: its error says the warehouse cannot be reached" '^failed\|.*CONTEXT: connecting to warehouse server' \
    "$(run_outcome "${run_id:-0}")|$(run_error "${run_id:-0}")"
is "$(copy_fp)|$(watermark)" "$FP_BEFORE|$WM_BEFORE" "b3: the copy and the watermark are as before"
dest -c "ALTER SERVER $SERVER OPTIONS (SET max_retries '0')"

# ---------------------------------------------------------------------------
# c. The worker is terminated once it has merged the pull (every row of
# the copy is updated, uncommitted), held as it starts refreshing the hot
# window, before its watermark and its commit.

HELD='refreshing the hot window'
change_batch
before
hold_cycle "$TAB" && CALLERS+=("$HOLDER_PID")
start_cycle "$HELD"
prog=$(wait_held "$TAB" "$HELD")
IFS='|' read -r run_id wpid <<<"$prog"
tap "$([[ -n $prog ]]; echo $?)" "c: the cycle is held after its merge, at the phase '$HELD'"
killed=$(dest -c "SELECT pg_terminate_backend(${wpid:-0})")
diag "terminated worker ${wpid:-?} of run ${run_id:-?}, held at '$HELD'"
ok=1; [[ -n $prog && $killed == t ]] && ok=0
tap $ok "c: the worker is terminated after the pull and the merge, before its commit"
release_cycle
wait_caller
tap $? "c: the cycle ends"
diag "caller: $(cat "$WORK/caller.out")"
after_failure "${run_id:-0}" '^cancelled: the worker was terminated' "c"
converge "c"

# ---------------------------------------------------------------------------
# d. The destination is stopped with an immediate shutdown at the same
# point, and started again.

change_batch
before
hold_cycle "$TAB" && CALLERS+=("$HOLDER_PID")
start_cycle "$HELD"
prog=$(wait_held "$TAB" "$HELD")
IFS='|' read -r run_id wpid <<<"$prog"
pg_ctl_as stop -D "$TS_DEST_PGDATA" -m immediate -w >/dev/null
stopped=$?
diag "stopped the destination (immediate) during run ${run_id:-?}, held at '$HELD'"
ok=1; [[ -n $prog && $stopped == 0 ]] && ok=0
tap $ok "d: the destination is stopped (immediate) after the pull and the merge, before the commit"
release_cycle
wait_caller
tap $? "d: the waiting caller ends"
diag "caller: $(cat "$WORK/caller.out")"
start_cluster "$TS_DEST_PGDATA" "$TS_DIR/dest.log"
tap $? "d: the destination starts again"
is "$(run_outcome "${run_id:-0}")" "running|" "d: the interrupted run is still 'running' until the next cycle"
is "$(copy_fp)" "$FP_BEFORE" "d: the copy is exactly as before the cycle"
is "$(watermark)" "$WM_BEFORE" "d: the watermark is exactly as before the cycle"
converge "d"
outcome=$(run_outcome "${run_id:-0}")
is "${outcome%%|*}" failed "d: the next cycle marks the interrupted run as failed"
like "d: its error says it was interrupted" '^interrupted: ' "${outcome#*|}"
diag "run ${run_id:-?} error: $(run_error "${run_id:-0}")"

# ---------------------------------------------------------------------------
# e. A statement error mid-apply: one of the 300k rows the merge updates
# violates a local CHECK constraint.

dest -c "ALTER TABLE $TAB ADD CONSTRAINT no_poison CHECK (payload NOT LIKE 'poison%')"
change_batch
wh -c "UPDATE $TAB SET payload = 'poison' WHERE id = $((ROWS - 1))"
before
start_cycle
prog=$(wait_pulling 1)
IFS='|' read -r run_id rows_read wpid <<<"$prog"
tap $([[ -n $prog ]]; echo $?) "e: the cycle starts"
wait_caller
tap $? "e: the cycle ends"
diag "caller: $(cat "$WORK/caller.out")"
after_failure "${run_id:-0}" 'violates check constraint "no_poison"' "e"
dest -c "ALTER TABLE $TAB DROP CONSTRAINT no_poison"
converge "e"

# cleanup (EXIT trap) makes sure both clusters are running.
