#!/usr/bin/env bash
#
# A first load straight into an empty copy is read from the warehouse by a
# second process (the reader) while the cycle's worker writes it
# (treble_sync.read_ahead, on by default). This checks that the reader is
# there and does the reading, that the copy it fills equals the warehouse,
# that a reader killed in the middle of the load fails the cycle cleanly
# (nothing applied, nothing left running) and the next cycle loads it all,
# that an error raised in the reader (a NULL key) fails the cycle with the
# reader's message and is not retried, that a NULL key under 'quarantine'
# is set aside by the cycle's worker as without a reader, that with
# read_ahead off no reader is started, that a reader the warehouse
# refuses a second connection leaves the load to the worker, and that the
# reader's statement timing out is retried like the worker's own, and
# that a reader's error longer than a kilobyte reaches the run row whole,
# with its CONTEXT.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER). Prints TAP.

DB=readahead
ROWS=300000
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The warehouse table's fingerprint and the copy's: row count and a sum of
# row hashes, the same on both sides when every value is.
FP="SELECT count(*) || ' ' || coalesce(sum(hashtext(id || '|' || coalesce(note, '-') || '|' || synced_at)), 0)"

# Poll pg_stat_activity of the destination for a reader of table $1 for up
# to $2 tenths of a second; print its pid, or nothing.
reader_pid() {
    local i
    for ((i = 0; i < $2; i++)); do
        pid=$(q -c "SELECT pid FROM pg_stat_activity
                    WHERE datname = current_database() AND query = 'treble_sync reader of $1'" 2>/dev/null)
        if [[ -n $pid ]]; then echo "$pid"; return; fi
        sleep 0.1
    done
}

echo "1..16"

setup_db
whq <<SQL
DROP TABLE IF EXISTS ra_sends, ra_nullkey CASCADE;
CREATE TABLE ra_sends (id bigint PRIMARY KEY, note text, synced_at timestamp NOT NULL);
INSERT INTO ra_sends
SELECT g, CASE WHEN g % 7 = 0 THEN NULL ELSE 'send ' || g || repeat(' x', g % 13) END,
       timestamp '2026-01-01' + g * interval '1 minute'
FROM generate_series(1, $ROWS) g;
CREATE INDEX ON ra_sends (synced_at);
-- a key that is NULL in the middle of a large pull (no primary key here)
CREATE TABLE ra_nullkey (id bigint, note text, synced_at timestamp NOT NULL);
INSERT INTO ra_nullkey SELECT CASE WHEN g = 150000 THEN NULL ELSE g END, 'n' || g,
                              timestamp '2026-01-01' + g * interval '1 minute'
FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE ra_sends, ra_nullkey;
SQL
WH_FP=$(whq -c "$FP FROM ra_sends")

register() {  # name, remote table, extra arguments
    q -c "SELECT name FROM treble_sync.add_table('public.$2', 'wh', name => '$1',
                 key_columns => '{id}', local_table => 'public.$1' $3)" >/dev/null
}
run_status() {  # the last run of table $1: status|rows_pulled|error
    q -c "SELECT status || '|' || rows_pulled || '|' || coalesce(error, '') FROM treble_sync.runs
          WHERE table_name = '$1' ORDER BY run_id DESC LIMIT 1"
}

# 1-3: a reader reads the first load, and the copy equals the warehouse
register ra_one ra_sends ""
q -c "SELECT status FROM treble_sync.sync_table('ra_one')" >"$TS_DIR/readahead.out" 2>&1 &
cycle=$!
pid=$(reader_pid ra_one 100)
wait "$cycle"
if [[ -n $pid ]]; then ok "a first load is read by a reader process (pid $pid)"; else nok "a first load is read by a reader process"; fi
check "the first load succeeds" "success" "$(cat "$TS_DIR/readahead.out")"
check "the copy equals the warehouse" "$WH_FP" "$(q -c "$FP FROM ra_one")"

# 4-7: the reader killed in the middle of the load. A session holding a
# lock on the copy keeps the cycle's worker from writing, so the reader
# fills the queue between them and waits; it is killed there, and the
# worker, let go, receives what was queued, then the reader's end.
register ra_kill ra_sends ""
q -c "BEGIN" -c "LOCK TABLE public.ra_kill IN SHARE MODE" -c "SELECT pg_sleep(4)" -c "COMMIT" >/dev/null &
locker=$!
sleep 0.3
q -c "SELECT status FROM treble_sync.sync_table('ra_kill')" >"$TS_DIR/readahead.out" 2>&1 &
cycle=$!
pid=$(reader_pid ra_kill 30)
if [[ -n $pid ]]; then
    sleep 1
    q -c "SELECT pg_terminate_backend($pid)" >/dev/null
fi
wait "$locker"
wait "$cycle"
row=$(run_status ra_kill)
echo "# $(cat "$TS_DIR/readahead.out" | head -3)"
echo "# run: $row"
if [[ -n $pid && ${row%%|*} == failed && $row == *"the process reading from the warehouse was stopped before the end of the pull"* ]]; then
    ok "a reader killed mid-load fails the cycle, saying so"
else
    nok "a reader killed mid-load fails the cycle, saying so"
fi
check "nothing of the failed load is in the copy" 0 "$(q -c "SELECT count(*) FROM ra_kill")"
check "no reader or worker of it is left" 0 \
    "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'treble_sync worker'")"
q -c "SELECT status FROM treble_sync.sync_table('ra_kill')" >/dev/null 2>&1
check "the next cycle loads it all" "$WH_FP" "$(q -c "$FP FROM ra_kill")"

# 8-9: an error in the reader reaches the cycle as the worker's own would
register ra_null ra_nullkey ""
q -c "SELECT status FROM treble_sync.sync_table('ra_null')" >/dev/null 2>&1
row=$(q -c "SELECT status || '|' || attempts || '|' || error FROM treble_sync.runs
            WHERE table_name = 'ra_null' ORDER BY run_id DESC LIMIT 1")
echo "# run: $(head -1 <<<"$row")"
if [[ $row == 'failed|1|warehouse returned a NULL key in column "id" of table "ra_null"'* ]]; then
    ok "a NULL key met by the reader fails the cycle with the reader's message, not retried"
else
    nok "a NULL key met by the reader fails the cycle with the reader's message, not retried"
fi
check "and nothing is applied" 0 "$(q -c "SELECT count(*) FROM ra_null")"

# 10-11: under 'quarantine' the cycle's worker sets the row aside
q -c "SELECT treble_sync.alter_table('ra_null', on_bad_row => 'quarantine')" >/dev/null
q -c "SELECT status FROM treble_sync.sync_table('ra_null')" >/dev/null 2>&1
# (the reader sends the row along: the quarantine tells it apart by its digest)
check "a NULL key from the reader is quarantined, the rest loaded" "$((ROWS - 1)) 1" \
    "$(q -c "SELECT (SELECT count(*) FROM ra_null) || ' ' || (SELECT count(*) FROM treble_sync.quarantine WHERE table_name = 'ra_null' AND key IS NULL AND row_digest ~ '^[0-9a-f]{64}$')")"
check "the run counts every row read and the bad one" "$ROWS 1" \
    "$(q -c "SELECT rows_pulled || ' ' || rows_bad FROM treble_sync.runs WHERE table_name = 'ra_null' ORDER BY run_id DESC LIMIT 1")"

# 12: read_ahead off: the cycle's worker reads alone
register ra_off ra_sends ""
PGOPTIONS='-c treble_sync.read_ahead=off' q -c "SELECT status FROM treble_sync.sync_table('ra_off')" >/dev/null 2>&1 &
cycle=$!
pid=$(reader_pid ra_off 30)
wait "$cycle"
if [[ -z $pid && $(q -c "$FP FROM ra_off") == "$WH_FP" ]]; then
    ok "with treble_sync.read_ahead off no reader starts, and the copy is the same"
else
    nok "with treble_sync.read_ahead off no reader starts, and the copy is the same"
fi

# 13: a reader the warehouse refuses a second connection leaves the pull
# to the cycle's worker, which loads it in the same attempt
whq -c "ALTER ROLE $TS_WH_USER CONNECTION LIMIT 1"
register ra_limit ra_sends ""
q -c "SELECT status FROM treble_sync.sync_table('ra_limit')" >/dev/null 2>&1
whq -c "ALTER ROLE $TS_WH_USER CONNECTION LIMIT -1"
row=$(q -c "SELECT status || ' ' || attempts FROM treble_sync.runs WHERE table_name = 'ra_limit' ORDER BY run_id DESC LIMIT 1")
if [[ $row == "success 1" && $(q -c "$FP FROM ra_limit") == "$WH_FP" ]]; then
    ok "a reader refused a connection leaves the load to the cycle's worker, in one attempt"
else
    nok "a reader refused a connection leaves the load to the cycle's worker, in one attempt"
    echo "#   run: $row"
fi

# 14: the reader's statement timing out is the warehouse's error: retried,
# as the worker's own would be. The warehouse table is locked for 3 s; the
# pull's query_timeout is 1 s, the retries wait 0.5, 1 and 2 s.
register ra_timeout ra_sends ", query_timeout => 1"
whq -c "BEGIN" -c "LOCK TABLE ra_sends IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null &
locker=$!
sleep 0.3
q -c "SELECT status FROM treble_sync.sync_table('ra_timeout')" >/dev/null 2>&1
wait "$locker"
row=$(q -c "SELECT status || ' ' || (attempts > 1) FROM treble_sync.runs WHERE table_name = 'ra_timeout' ORDER BY run_id DESC LIMIT 1")
if [[ $row == "success true" && $(q -c "$FP FROM ra_timeout") == "$WH_FP" ]]; then
    ok "a reader's statement timing out is retried, and the load then succeeds"
else
    nok "a reader's statement timing out is retried, and the load then succeeds"
    diag "run: $row, $(q -c "SELECT error FROM treble_sync.runs WHERE table_name = 'ra_timeout' ORDER BY run_id DESC LIMIT 1")"
fi


# 15-16: a long error of the reader reaches the run row whole. The
# warehouse's view fails in the middle of the pull with a message of about
# 1.4 kB (the warehouse's own words, no value in quotes; STABLE, so the
# cut and the counts leave it out; under the 2 kB at which the driver
# splits a message in two diagnostics), which the reader forwards to the
# cycle's worker: message and CONTEXT, not cut.
whq <<'SQL'
CREATE OR REPLACE FUNCTION ra_fail(id bigint, note text) RETURNS text LANGUAGE plpgsql STABLE AS $f$
BEGIN
    IF id = 150000 THEN
        RAISE EXCEPTION 'long reader error: % end-of-message',
            (SELECT string_agg('word' || g, ' ') FROM generate_series(1, 180) g);
    END IF;
    RETURN note;
END
$f$;
CREATE OR REPLACE VIEW ra_longerr AS SELECT id, ra_fail(id, note) AS note, synced_at FROM ra_sends;
SQL
register ra_long ra_longerr ", max_retries => 0"
q -c "SELECT status FROM treble_sync.sync_table('ra_long')" >/dev/null 2>&1
err=$(q -c "SELECT error FROM treble_sync.runs WHERE table_name = 'ra_long' ORDER BY run_id DESC LIMIT 1")
echo "# run error: ${#err} bytes: $(head -c 120 <<<"$err")..."
message=${err%%$'\nDETAIL: '*}
if [[ $message == *"long reader error: word1 word2 "*" word179 word180 end-of-message"* ]]; then
    ok "a reader's error message of 1.4 kB reaches the run row whole"
else
    nok "a reader's error message of 1.4 kB reaches the run row whole"
fi
if [[ $err == *$'\nCONTEXT: '* ]]; then
    ok "with the reader's CONTEXT"
else
    nok "with the reader's CONTEXT"
fi

finish
