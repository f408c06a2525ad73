#!/usr/bin/env bash
#
# No warehouse value, and no key, where a role reads that may not read the
# copy: a member of pg_read_all_stats, and a role with PUBLIC's privileges
# only, read everything they can while cycles fail and succeed in every way
# that names a row:
#
#   - a bad value under each on_bad_row policy ('fail', 'quarantine' over
#     and under max_bad_row_ratio, 'skip'), in a chunked first load with
#     helpers, a NULL key, a NULL cursor;
#   - a failing quality check ('error' and 'warn'), schema drift;
#   - verify() and repair() of a day the copy lost a row of, and verify()
#     meeting, in the caller's session, a key the copy cannot take under
#     'fail' (SQLite, whose keys verify pulls): the error, which the server
#     log receives with the statement, names the row's position only;
#
# and they look at the run log (every column), status, incidents,
# verifications, load_chunks, metrics(), the progress view and
# pg_stat_activity (polled while the cycles run), and LISTEN treble_sync.
# The key of every warehouse row holds a marker, and so does every value of
# one column: neither may appear there, nor in the destination's server
# log. The owner still finds the bad rows' keys and values, in the
# quarantine (also for 'fail': the failing row is kept there as the
# evidence of the failed run), which pg_read_all_stats does not read.

DB=sec_values
ROLES=(sec_vl_owner sec_vl_stats sec_vl_plain)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TMP=$(mktemp -d)
pollers=()
cleanup() {
    local p
    touch "$TMP/stop"
    for p in "${pollers[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
    finish
}
trap cleanup EXIT
setup_db

KEYMARK=KQ7305   # in every key
VALMARK=VZ4188   # in every value of column code
log=$TS_DIR/dest.log
log_start=$(wc -l <"$log")

admins_on_wh sec_vl_owner
sq -c "GRANT pg_read_all_stats TO sec_vl_stats" >/dev/null
whq <<SQL
DROP TABLE IF EXISTS sec_vl_orders, sec_vl_chunked;
CREATE TABLE sec_vl_orders (order_code text, code text, amount text, scheduled_at timestamp, synced_at timestamp);
INSERT INTO sec_vl_orders SELECT '$KEYMARK-' || g, '$VALMARK-' || g, g::text,
    timestamp '2026-11-27' + g * interval '1 hour', timestamp '2026-11-28 10:00' FROM generate_series(1, 40) g;
-- the bad value: not a number
UPDATE sec_vl_orders SET amount = '$VALMARK-bad' WHERE order_code = '$KEYMARK-21';
CREATE TABLE sec_vl_chunked (order_code text, amount text, synced_at timestamp);
INSERT INTO sec_vl_chunked SELECT '$KEYMARK-' || g, g::text, timestamp '2026-11-20' + g * interval '1 hour'
FROM generate_series(1, 200) g;
UPDATE sec_vl_chunked SET amount = '$VALMARK-bad' WHERE order_code = '$KEYMARK-150';
DROP TABLE IF EXISTS sec_vl_nokey;
CREATE TABLE sec_vl_nokey (id text, code text, synced_at timestamp);
INSERT INTO sec_vl_nokey VALUES ('$KEYMARK-1', '$VALMARK-1', '2026-11-28'), (NULL, '$VALMARK-2', '2026-11-28');
-- a value a tsvector cannot take, which its input function quotes under
-- SQLSTATE 42601 (not a data exception)
DROP TABLE IF EXISTS sec_vl_tsv;
CREATE TABLE sec_vl_tsv (id text, doc text, synced_at timestamp);
INSERT INTO sec_vl_tsv VALUES ('$KEYMARK-1', '$VALMARK-1 :::', '2026-11-28');
SQL

# --- the readers, in the background while the cycles run
# the listeners: one psql each, fed through a FIFO so that notifications
# are printed as the commands after them run
for r in sec_vl_stats sec_vl_plain; do
    mkfifo "$TMP/in_$r"
    psql -X -U "$r" -d "$DB" <"$TMP/in_$r" >"$TMP/notify_$r" 2>&1 &
    pollers+=($!)
done
exec 7>"$TMP/in_sec_vl_stats" 8>"$TMP/in_sec_vl_plain"
echo "LISTEN treble_sync;" >&7
echo "LISTEN treble_sync;" >&8
# pg_stat_activity (the cycles' processes, and the sessions that call the
# extension: not this script's own statements, among them the owner's
# reads of the quarantine, whose text names the marker) and the progress
# view, polled by both roles
for r in sec_vl_stats sec_vl_plain; do
    (
        while [[ ! -e $TMP/stop ]]; do
            psql -X -At -U "$r" -d "$DB" \
                -c "SELECT concat_ws('|', application_name, query, backend_type) FROM pg_stat_activity
                    WHERE backend_type <> 'client backend'
                       OR (query LIKE '%treble_sync.%' AND query NOT LIKE '%treble_sync.quarantine%')" \
                -c "SELECT p::text FROM treble_sync.progress p" >>"$TMP/poll_$r" 2>&1
            echo "SELECT 1;" >&$([[ $r == sec_vl_stats ]] && echo 7 || echo 8)
            sleep 0.2
        done
    ) &
    pollers+=($!)
done

owner() { as sec_vl_owner -c "SET client_min_messages = warning" "$@" >/dev/null 2>>"$TMP/owner_errors"; }
last_status() {
    sq -c "SELECT status FROM treble_sync.runs WHERE table_name = '$1' ORDER BY run_id DESC LIMIT 1"
}
# ran NAME TABLE STATUS: the last run of TABLE ended with STATUS
ran() {
    local got
    got=$(last_status "$2")
    check "$1" "$3" "$got"
    [[ $got == "$3" ]] ||
        diag "$(sq -c "SELECT error FROM treble_sync.runs WHERE table_name = '$2' ORDER BY run_id DESC LIMIT 1")"
}

as sec_vl_owner >/dev/null <<SQL
SET client_min_messages = warning;
CREATE TABLE sec_vl_orders (order_code text PRIMARY KEY, code text, amount numeric(8,2),
    scheduled_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('sec_vl_orders', 'wh', key_columns => '{order_code}',
    event_column => 'scheduled_at', local_table => 'sec_vl_orders');
SELECT name FROM treble_sync.add_table('sec_vl_nokey', 'wh', key_columns => '{id}',
    local_table => 'sec_vl_nokey');
CREATE TABLE sec_vl_tsv (id text PRIMARY KEY, doc tsvector, synced_at timestamp);
SELECT name FROM treble_sync.add_table('sec_vl_tsv', 'wh', key_columns => '{id}', local_table => 'sec_vl_tsv');
CREATE TABLE sec_vl_chunked (order_code text PRIMARY KEY, amount numeric, synced_at timestamp);
SELECT name FROM treble_sync.add_table('sec_vl_chunked', 'wh', key_columns => '{order_code}',
    local_table => 'sec_vl_chunked', initial_chunk => '1 day', parallel => 3);
SQL

# 'fail': the bad row fails the cycle
owner -c "SELECT status FROM treble_sync.sync_table('sec_vl_orders')"
ran "on_bad_row 'fail': the cycle failed" sec_vl_orders failed
# a value an input function quotes in an error of another class than 22
# (tsvector's syntax error, 42601): the cycle fails, and the value is
# taken out of its error as out of a bad row's (the scans below)
owner -c "SELECT status FROM treble_sync.sync_table('sec_vl_tsv')"
ran "a tsvector's syntax error fails the cycle" sec_vl_tsv failed
# a chunked first load, with helpers, fails on a bad row in one chunk
owner -c "SELECT status FROM treble_sync.sync_table('sec_vl_chunked')"
ran "a chunked first load failed on the bad row" sec_vl_chunked failed
check "its error names the row by position, and its quarantine row" 1 \
    "$(sq -c "SELECT count(*) FROM treble_sync.runs WHERE table_name = 'sec_vl_chunked'
              AND error LIKE '%row % of the pull%quarantine_id %'")"
check "the chunk's bad row is kept in the quarantine, for its owner" 1 \
    "$(as sec_vl_owner -c "SELECT count(*) FROM treble_sync.quarantine WHERE table_name = 'sec_vl_chunked'
                             AND key = '$KEYMARK-150' AND raw_value = '$VALMARK-bad' AND failed_run")"
# a NULL key fails its cycle
owner -c "SELECT status FROM treble_sync.sync_table('sec_vl_nokey')"
ran "a NULL key: the cycle failed" sec_vl_nokey failed
# 'quarantine' over the ratio: fails
owner -c "SELECT name FROM treble_sync.alter_table('sec_vl_orders', on_bad_row => 'quarantine', max_bad_row_ratio => 0.01)" \
    -c "SELECT status FROM treble_sync.sync_table('sec_vl_orders')"
ran "on_bad_row 'quarantine' over max_bad_row_ratio: the cycle failed" sec_vl_orders failed
# 'skip' under the ratio
owner -c "SELECT name FROM treble_sync.alter_table('sec_vl_orders', on_bad_row => 'skip', max_bad_row_ratio => 0.5)" \
    -c "SELECT status FROM treble_sync.sync_table('sec_vl_orders')"
ran "on_bad_row 'skip': the cycle succeeded" sec_vl_orders success
# 'quarantine' under the ratio: the row is set aside, and a NULL cursor
whq -c "INSERT INTO sec_vl_orders VALUES ('$KEYMARK-99', '$VALMARK-99', '1', '2026-11-28 12:00', NULL)" \
    -c "UPDATE sec_vl_orders SET synced_at = '2026-11-28 11:00' WHERE order_code IS DISTINCT FROM '$KEYMARK-99'"
owner -c "SELECT name FROM treble_sync.alter_table('sec_vl_orders', on_bad_row => 'quarantine')" \
    -c "SELECT status FROM treble_sync.sync_table('sec_vl_orders')"
ran "on_bad_row 'quarantine': the cycle succeeded" sec_vl_orders success
owner -c "SELECT name FROM treble_sync.alter_table('sec_vl_nokey', on_bad_row => 'quarantine', max_bad_row_ratio => 0.9)" \
    -c "SELECT status FROM treble_sync.sync_table('sec_vl_nokey')"
# a failing 'error' check, then a 'warn' one
whq -c "UPDATE sec_vl_orders SET amount = '500', synced_at = '2026-11-28 12:00' WHERE order_code = '$KEYMARK-5'"
owner -c "SELECT check_id FROM treble_sync.add_check('sec_vl_orders', 'range', column_name => 'amount', max => 100, severity => 'error')" \
    -c "SELECT status FROM treble_sync.sync_table('sec_vl_orders')"
ran "a failing 'error' check failed the cycle" sec_vl_orders failed
owner -c "SELECT treble_sync.drop_check(check_id) FROM treble_sync.checks" \
    -c "SELECT check_id FROM treble_sync.add_check('sec_vl_orders', 'range', column_name => 'amount', max => 100, severity => 'warn')" \
    -c "SELECT check_id FROM treble_sync.add_check('sec_vl_orders', 'not_null', column_name => 'synced_at', severity => 'warn')" \
    -c "SELECT status FROM treble_sync.sync_table('sec_vl_orders')"
ran "a failing 'warn' check let the cycle succeed" sec_vl_orders success
# verify and repair a day the copy lost a row of
owner -c "SET treble_sync.allow_direct_writes = on" -c "DELETE FROM sec_vl_orders WHERE order_code = '$KEYMARK-3'" 2>/dev/null
sq -c "ALTER TABLE sec_vl_orders DISABLE TRIGGER USER" -c "DELETE FROM sec_vl_orders WHERE order_code = '$KEYMARK-3'" \
    -c "ALTER TABLE sec_vl_orders ENABLE TRIGGER USER" >/dev/null 2>&1
owner -c "SELECT count(*) FROM treble_sync.verify('sec_vl_orders', since => '2026-11-01')" \
    -c "SELECT count(*) FROM treble_sync.verify('sec_vl_orders', since => '2026-11-01', repair => true)" \
    -c "SELECT status FROM treble_sync.repair('sec_vl_orders', '2026-11-27')"
# verify in the caller's session meets a key the copy cannot take (under
# 'fail' an error there, which the server log receives too): SQLite, whose
# keys verify pulls
sqlite3 -batch "$TS_SQLITE_DB" "DROP TABLE IF EXISTS sec_vl_lite;
CREATE TABLE sec_vl_lite (order_code TEXT, amount TEXT, scheduled_at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO sec_vl_lite VALUES ('$KEYMARK-1', '$VALMARK-1', '2026-11-27 01:00:00', '2026-11-28 10:00:00'),
    ('$KEYMARK-10', '$VALMARK-10', '2026-11-27 02:00:00', '2026-11-28 10:00:00');"
sq >/dev/null <<'SQL'
DO $$ BEGIN EXECUTE format('CREATE SERVER lite FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)', current_setting('treble_test.sqlite_odbc')); END $$;
GRANT USAGE ON FOREIGN SERVER lite TO sec_vl_owner;
CREATE USER MAPPING FOR sec_vl_owner SERVER lite OPTIONS (password_required 'false');
SQL
as sec_vl_owner >/dev/null 2>"$TMP/lite.err" <<SQL
SET client_min_messages = warning;
CREATE TABLE sec_vl_lite (order_code varchar(8) PRIMARY KEY, amount text,
    scheduled_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('sec_vl_lite', 'lite', key_columns => '{order_code}',
    event_column => 'scheduled_at', local_table => 'sec_vl_lite',
    on_bad_row => 'quarantine', max_bad_row_ratio => 1);
SELECT status FROM treble_sync.sync_table('sec_vl_lite');
SELECT on_bad_row FROM treble_sync.alter_table('sec_vl_lite', on_bad_row => 'fail');
SQL
try sec_vl_owner "SELECT count(*) FROM treble_sync.verify('sec_vl_lite', since => '2026-11-01')"
check "verify under 'fail' meets a key the copy cannot take: an error naming the row's position, not its key" \
    "3 yes no" "$RC $([[ $ERR == *"of the pull"* ]] && echo yes || echo no) $(grep -qE -- "$KEYMARK|$VALMARK" <<<"$ERR" && echo yes || echo no)"
[[ $ERR == *"of the pull"* ]] || diag "$ERR $(cat "$TMP/lite.err")"

# drift: a column changes type in the warehouse
whq -c "ALTER TABLE sec_vl_orders ALTER COLUMN code TYPE varchar(40)" \
    -c "ALTER TABLE sec_vl_orders ADD COLUMN extra text DEFAULT '$VALMARK-x'"
owner -c "SELECT status FROM treble_sync.sync_table('sec_vl_orders')"
ran "drift failed the cycle" sec_vl_orders failed
sleep 0.5

# --- stop the pollers and listeners
touch "$TMP/stop"
sleep 0.5
echo "SELECT 1;" >&7
echo "SELECT 1;" >&8
echo '\q' >&7
echo '\q' >&8
exec 7>&- 8>&-
for p in "${pollers[@]}"; do wait "$p" 2>/dev/null; done
pollers=()

# --- the owner finds its bad rows
check "the owner reads the failing row of the 'fail' cycle, key and value, in the quarantine" 1 \
    "$(as sec_vl_owner -c "SELECT count(*) FROM treble_sync.quarantine q JOIN treble_sync.runs r ON r.run_id = q.run_id
                           WHERE q.table_name = 'sec_vl_orders' AND r.status = 'failed' AND q.key = '$KEYMARK-21'
                             AND q.raw_value = '$VALMARK-bad'
                             AND r.run_id = (SELECT min(run_id) FROM treble_sync.runs WHERE table_name = 'sec_vl_orders')")"
check "the 'fail' cycle's error sends its owner to the quarantine row" 1 \
    "$(as sec_vl_owner -c "SELECT count(*) FROM treble_sync.runs r WHERE r.table_name = 'sec_vl_orders'
                             AND r.run_id = (SELECT min(run_id) FROM treble_sync.runs WHERE table_name = 'sec_vl_orders')
                             AND r.error LIKE '%treble_sync.quarantine%'
                             AND r.error LIKE '%quarantine_id ' || (SELECT min(quarantine_id) FROM treble_sync.quarantine
                                                                    WHERE key = '$KEYMARK-21') || '%'
                             AND r.error LIKE '%row % of the pull%'")"
check "the owner reads the quarantined rows" yes \
    "$( (($(as sec_vl_owner -c "SELECT count(*) FROM treble_sync.quarantine WHERE key LIKE '$KEYMARK%'") > 0)) && echo yes || echo no)"

# --- what each reader reads
for r in sec_vl_stats sec_vl_plain; do
    : >"$TMP/read_$r"
    for q in "SELECT x::text FROM treble_sync.runs x" \
        "SELECT x::text FROM treble_sync.status x" \
        "SELECT x::text FROM treble_sync.incidents x" \
        "SELECT x::text FROM treble_sync.verifications x" \
        "SELECT x::text FROM treble_sync.load_chunks x" \
        "SELECT x::text FROM treble_sync.tables x" \
        "SELECT x::text FROM treble_sync.checks x" \
        "SELECT x::text FROM treble_sync.check_results x" \
        "SELECT x::text FROM treble_sync.quarantine x" \
        "SELECT treble_sync.metrics()"; do
        try "$r" "$q"
        printf '%s\n%s\n' "$OUT" "$ERR" >>"$TMP/read_$r"
    done
done
check "pg_read_all_stats reads the run log" yes \
    "$(grep -q 'sec_vl_orders' "$TMP/read_sec_vl_stats" && echo yes || echo no)"
check "pg_read_all_stats reads the failed runs' errors" yes \
    "$(grep -q 'bad row' "$TMP/read_sec_vl_stats" && echo yes || echo no)"
check "the pollers saw the cycles' workers" yes \
    "$(grep -q 'treble_sync cycle of' "$TMP/poll_sec_vl_stats" && echo yes || echo no)"
check "the listeners got notifications" yes \
    "$(grep -q 'Asynchronous notification' "$TMP/notify_sec_vl_stats" && echo yes || echo no)"

# nowhere KEYMARK/VALMARK: FILE WHAT
clean() {
    if grep -qE -- "$KEYMARK|$VALMARK" "$1"; then
        nok "no key and no value in $2"
        diag "$(grep -E -- "$KEYMARK|$VALMARK" "$1" | head -n 4)"
    else
        ok "no key and no value in $2"
    fi
}
for r in sec_vl_stats sec_vl_plain; do
    what=$([[ $r == sec_vl_stats ]] && echo "pg_read_all_stats" || echo "PUBLIC")
    clean "$TMP/read_$r" "what $what reads of the catalog, status and metrics()"
    clean "$TMP/notify_$r" "the notifications $what receives"
    clean "$TMP/poll_$r" "pg_stat_activity and the progress view as $what"
done
sed -n "$((log_start + 1)),\$p" "$log" >"$TMP/log"
check "the server log has the cycles' failures" yes \
    "$(grep -q 'treble_sync cycle of table "sec_vl_orders" failed' "$TMP/log" && echo yes || echo no)"
clean "$TMP/log" "the server log"
