#!/usr/bin/env bash
#
# Logs are as private as the data, and masking holds between roles.
#
#   - a plain role (no grant) reads none of another role's runs (error),
#     status (last_error), check_results (failing_keys), quarantine
#     (raw_value), verifications, incidents, load_chunks;
#   - another treble_sync_admin member reads none of them either, in
#     particular not the quarantine of a table it does not own;
#   - the owner still reads its own;
#   - NOTIFY treble_sync payloads (LISTENed by the plain role) carry no
#     error text and no value;
#   - a wrong password holding } (psqlODBC and MariaDB) appears in no run
#     error, status or server log line, in any form: as is, with } doubled,
#     or any 5 characters of it;
#   - masking: the same value masked by two owners gives two hashes; by one
#     owner in two tables, one hash.

DB=sec_leaks
ROLES=(sec_lk_owner sec_lk_other sec_lk_plain)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; finish' EXIT
setup_db

VALUE=LEAKVALUE42
log=$TS_DIR/dest.log
log_start=$(wc -l <"$log")
MARIA_CS=$(sq -c "SELECT current_setting('treble_test.mariadb_odbc', true)")

admins_on_wh sec_lk_owner sec_lk_other
whq -c "DROP TABLE IF EXISTS sec_lk_orders, sec_lk_phones" \
    -c "CREATE TABLE sec_lk_orders (order_id int, code text, amount numeric, scheduled_at timestamp, synced_at timestamp)" \
    -c "INSERT INTO sec_lk_orders SELECT g, 'c' || g, g, timestamp '2026-11-27' + g * interval '1 hour', '2026-11-28 10:00' FROM generate_series(1, 20) g" \
    -c "INSERT INTO sec_lk_orders VALUES (21, '$VALUE', 1, '2026-11-28', '2026-11-28 10:00')" \
    -c "CREATE TABLE sec_lk_phones (id int PRIMARY KEY, phone text, synced_at timestamp)" \
    -c "INSERT INTO sec_lk_phones VALUES (1, '+15550100', '2026-11-28'), (2, '+15550101', '2026-11-28')"

# --- the owner's table: a failed run whose error names a bad value, then
# a quarantined value, a failing warn check and a verification
as sec_lk_owner >/dev/null <<SQL
SET client_min_messages = warning;
CREATE TABLE sec_lk_orders (order_id int PRIMARY KEY, code varchar(5), amount numeric(8,2),
    scheduled_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('sec_lk_orders', 'wh', key_columns => '{order_id}',
    event_column => 'scheduled_at', local_table => 'sec_lk_orders');
SQL

# the plain role listens while the cycle fails
psql -X -U sec_lk_plain -d "$DB" -c "LISTEN treble_sync" -c "SELECT pg_sleep(4)" -c "SELECT 1" \
    >"$TMP/notify.out" 2>&1 &
listener=$!
sleep 0.5
as sec_lk_owner -c "SELECT status FROM treble_sync.sync_table('sec_lk_orders')" >/dev/null
wait $listener
# the failed run names the bad row by its position, not its key (21); the
# owner finds the key in the quarantine
check "the first cycle failed on the bad row, naming its position and not its key" 1 \
    "$(as sec_lk_owner -c "SELECT count(*) FROM treble_sync.runs WHERE table_name = 'sec_lk_orders' AND status = 'failed'
                             AND error LIKE '%row % of the pull%' AND error NOT LIKE '%(21)%'")"
check "its owner finds the bad row's key in the quarantine" 1 \
    "$(as sec_lk_owner -c "SELECT count(*) FROM treble_sync.quarantine WHERE table_name = 'sec_lk_orders' AND key = '21' AND failed_run")"

as sec_lk_owner >/dev/null <<SQL
SET client_min_messages = warning;
SELECT name FROM treble_sync.alter_table('sec_lk_orders', on_bad_row => 'quarantine', max_bad_row_ratio => 0.5);
SELECT check_id FROM treble_sync.add_check('sec_lk_orders', 'range', column_name => 'amount', max => 10, severity => 'warn');
SELECT status FROM treble_sync.sync_table('sec_lk_orders');
SELECT count(*) FROM treble_sync.verify('sec_lk_orders', since => '2026-11-01');
SQL

# --- the notifications
payloads=$(grep -c 'Asynchronous notification "treble_sync"' "$TMP/notify.out")
if ((payloads > 0)); then
    ok "the plain role got the failure's notification"
else
    nok "the plain role got the failure's notification"
    diag "$(cat "$TMP/notify.out")"
fi
if grep -qE -- "$VALUE|\(21\)" "$TMP/notify.out" || grep -qE '"error" *: *"' "$TMP/notify.out"; then
    nok "NOTIFY payloads carry no error text and no value"
    diag "$(grep 'Asynchronous' "$TMP/notify.out" | head -n 2)"
else
    ok "NOTIFY payloads carry no error text and no value"
fi

# --- who reads what
# rows ROLE RELATION WHERE: rows the role sees, or "denied"
rows() {
    try "$1" "SELECT count(*) FROM treble_sync.$2 x WHERE $3"
    if ((RC != 0)); then echo denied; else echo "$OUT"; fi
}
private() { local r; r=$(rows "$@"); [[ $r == denied || $r == 0 ]] && echo private || echo "$r rows"; }
declare -A WHERE=(
    [runs]="x.table_name = 'sec_lk_orders'"
    [status]="x.table_name = 'sec_lk_orders'"
    [check_results]="x.table_name = 'sec_lk_orders'"
    [quarantine]="x.table_name = 'sec_lk_orders'"
    [verifications]="x.table_name = 'sec_lk_orders'"
    [incidents]="x.table_id = (SELECT table_id FROM treble_sync.tables WHERE name = 'sec_lk_orders')"
)
for rel in runs status check_results quarantine verifications incidents; do
    check "the owner reads its own $rel" yes \
        "$( (($(rows sec_lk_owner $rel "${WHERE[$rel]}") > 0)) 2>/dev/null && echo yes || echo no)"
done
for rel in runs status check_results quarantine verifications incidents; do
    check "a plain role reads none of another role's $rel" private "$(private sec_lk_plain $rel "${WHERE[$rel]}")"
done
for rel in runs status check_results quarantine verifications incidents; do
    check "another admin reads none of another role's $rel" private "$(private sec_lk_other $rel "${WHERE[$rel]}")"
done
check "a plain role reads no load_chunks" private "$(private sec_lk_plain load_chunks true)"
# the values themselves, wherever the plain role can look
try sec_lk_plain "SELECT concat((SELECT string_agg(error, '') FROM treble_sync.runs),
                               (SELECT string_agg(last_error, '') FROM treble_sync.status),
                               (SELECT string_agg(array_to_string(failing_keys, ','), '') FROM treble_sync.check_results))"
if [[ $OUT == *"$VALUE"* || $OUT == *"(21)"* ]]; then
    nok "the bad row's value and key are nowhere a plain role can read"
else
    ok "the bad row's value and key are nowhere a plain role can read"
fi

# --- a wrong password holding }: scrubbed from errors and the log in any form
BAD_PW='Qx7}Vk9;Zw}}Jq{=Xy8'
SECRETS+=("$BAD_PW" "${BAD_PW//\}/\}\}}")
# every 5-character piece of the password and of its braced-escaped form
pieces() {
    local s form
    for form in "$BAD_PW" "${BAD_PW//\}/\}\}}"; do
        for ((i = 0; i + 5 <= ${#form}; i++)); do echo "${form:i:5}"; done
    done | sort -u
}
sq -c "CREATE SERVER wh_pw FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string '$(sq -c "SELECT current_setting('treble_test.wh_odbc')")', max_retries '0')" >/dev/null
servers=(wh_pw)
if [[ -n $MARIA_CS ]]; then
    sq -c "CREATE SERVER maria_pw FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string '$MARIA_CS', max_retries '0')" >/dev/null
    mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" -uroot wh \
        -e "DROP TABLE IF EXISTS sec_lk_phones; CREATE TABLE sec_lk_phones (id INT PRIMARY KEY, phone VARCHAR(20), synced_at DATETIME(6))"
    servers+=(maria_pw)
fi
for s in "${servers[@]}"; do
    sq -c "GRANT USAGE ON FOREIGN SERVER $s TO sec_lk_owner" >/dev/null
    # registered with the right password, then the mapping gets the wrong one
    map_reader sec_lk_owner "$s" >/dev/null
    as sec_lk_owner -c "SET client_min_messages = warning" \
        -c "SELECT name FROM treble_sync.add_table('sec_lk_phones', '$s', key_columns => '{id}', name => 'pw_$s', local_table => 'pw_$s')" >/dev/null
    psql -X -q -U sec_lk_owner -d "$DB" -v pw="$BAD_PW" -v srv="$s" >/dev/null <<'SQL'
ALTER USER MAPPING FOR CURRENT_USER SERVER :"srv" OPTIONS (SET password :'pw');
SQL
    as sec_lk_owner -c "SELECT status FROM treble_sync.sync_table('pw_$s')" >/dev/null 2>&1
    as sec_lk_owner -c "SELECT name FROM treble_sync.add_table('sec_lk_phones', '$s', key_columns => '{id}', name => 'pw2_$s', local_table => 'pw2_$s')" \
        >"$TMP/add_$s.out" 2>&1
done
check "the cycles with the wrong password failed" "${#servers[@]}" \
    "$(sq -c "SELECT count(*) FROM treble_sync.runs WHERE table_name LIKE 'pw\\_%' AND status = 'failed'")"
sq -c "SELECT coalesce(string_agg(error, E'\n'), '') FROM treble_sync.runs" >"$TMP/errors"
sq -c "SELECT coalesce(string_agg(last_error, E'\n'), '') FROM treble_sync.status" >>"$TMP/errors"
cat "$TMP"/add_*.out >>"$TMP/errors"
sed -n "$((log_start + 1)),\$p" "$log" >"$TMP/log"
for where in errors log; do
    found=0
    while IFS= read -r piece; do
        grep -qF -- "$piece" "$TMP/$where" && found=$((found + 1))
    done < <(pieces)
    what=$([[ $where == errors ]] && echo "run errors, status and add_table's errors" || echo "the server log")
    check "no piece of a wrong password holding } in $what" 0 "$found"
done

# --- masking: one salt per owner
for r in sec_lk_owner sec_lk_other; do
    as "$r" -c "SET client_min_messages = warning" -c "SELECT name FROM treble_sync.add_table('sec_lk_phones', 'wh', key_columns => '{id}', name => 'ph_$r', local_table => 'ph_$r', mask => '{\"phone\": \"sha256\"}')" \
        -c "SELECT status FROM treble_sync.sync_table('ph_$r')" >/dev/null
done
as sec_lk_owner -c "SET client_min_messages = warning" -c "SELECT name FROM treble_sync.add_table('sec_lk_phones', 'wh', key_columns => '{id}', name => 'ph_again', local_table => 'ph_again', mask => '{\"phone\": \"sha256\"}')" \
    -c "SELECT status FROM treble_sync.sync_table('ph_again')" >/dev/null
check "the same value masked by two owners gives two different hashes" "t t" \
    "$(sq -F ' ' -c "SELECT a.phone IS NOT NULL AND length(a.phone) = 64, a.phone <> b.phone FROM ph_sec_lk_owner a JOIN ph_sec_lk_other b USING (id) WHERE id = 1")"
check "the same value masked twice by one owner gives one hash (joins still work)" t \
    "$(sq -c "SELECT a.phone = b.phone FROM ph_sec_lk_owner a JOIN ph_again b USING (id) WHERE id = 1")"
