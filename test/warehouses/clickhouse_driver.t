#!/usr/bin/env bash
#
# What the ClickHouse ODBC driver does to query text, parameters and
# values, against the real driver and engine of .ci/clickhouse:
#   - text: values that its string handling changes (a space, 'NULL',
#     '\N', a leading U+FEFF, which it takes for a byte-order mark and drops)
#     land byte for byte, on a first load and in the key-only window
#     check, which sends keys back (a tab in a parameter broke the query,
#     ' ' and 'NULL' matched nothing): text crosses the driver as hex both
#     ways;
#   - names: table and column names holding a quote, an apostrophe, ?, @
#     or {fn ...}, which the driver rewrites inside backquotes, are refused
#     at add_table with a clear error, before anything is registered;
#   - nanoseconds: DateTime64(7..9) values are cut to the microsecond,
#     and the cursor's cut and filters compare the same cut values, so a
#     row whose cursor has a fraction finer than a microsecond is neither
#     lost nor pulled again.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced. Prints TAP.

set -u

DB=ts_clickhouse_driver
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ -z ${TS_CLICKHOUSE_PORT:-} ]]; then
    echo "1..0 # SKIP no ClickHouse warehouse"
    exit 0
fi

fresh_db
add_server c clickhouse

# ---------------------------------------------------------------------------
# text: every hostile text as a key and as a value, on a first load (read)
# and arriving late with an old cursor (found by the key-only window check,
# which pulls it by key: the keys go back to the warehouse as parameters)
HOSTILE="[' ', '  ', 'NULL', 'null', '\\\\N', '\\\\', '\\xEF\\xBB\\xBFbom', '\\xEF\\xBB\\xBF', 'tab\\there', '\\t',
  ' lead', 'trail ', '', 'nl\\nx', '\\r', 'back\\\\slash', 'a?b', '?', '@x', 'quo\\'te', 'dq\"x', '{fn now()}', '\$1', 'a,b']"
ch <<SQL
DROP TABLE IF EXISTS drv_text_read;
DROP TABLE IF EXISTS drv_text_late;
CREATE TABLE drv_text_read (k String, v Nullable(String), a Array(String), happened_at DateTime64(6), synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY k;
CREATE TABLE drv_text_late (k String, v Nullable(String), a Array(String), happened_at DateTime64(6), synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY k;
INSERT INTO drv_text_read SELECT k, k, [k, 'x'], now64(6) - INTERVAL 1 HOUR, '2026-11-28 10:00:00' FROM (SELECT arrayJoin($HOSTILE) AS k);
INSERT INTO drv_text_read VALUES ('null value', NULL, [], now64(6) - INTERVAL 1 HOUR, '2026-11-28 10:00:00');
INSERT INTO drv_text_late VALUES ('seed', 'seed', [], now64(6) - INTERVAL 1 HOUR, '2026-11-28 10:00:00');
SQL
nhostile=$(ch <<<"SELECT length($HOSTILE)")
# the warehouse's rows, every text as the hex of its bytes
wh_rows() {
    ch <<<"SELECT lower(hex(k)), ifNull(lower(hex(v)), 'N'), lower(hex(toString(a))) FROM $1 ORDER BY hex(k)" | tr '\t' '|'
}
copy_rows() {
    q -c "SELECT encode(convert_to(k, 'UTF8'), 'hex'), coalesce(encode(convert_to(v, 'UTF8'), 'hex'), 'N'), encode(convert_to(a, 'UTF8'), 'hex') FROM $1 ORDER BY encode(convert_to(k, 'UTF8'), 'hex')"
}
add_text() {
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('$1', 'c', key_columns => '{k}', cursor_column => 'synced_at', event_column => 'happened_at', hot_window => '3 days', hot_window_check => 'keys', name => '$2', local_table => '$2', on_bad_row => 'quarantine', max_bad_row_ratio => 1)" >/dev/null
}
add_text drv_text_late drv_text_late
for ahead in on off; do
    t=drv_text_read_$ahead
    add_text drv_text_read $t
    check "text, read_ahead $ahead: a first load of $((nhostile + 1)) rows, none bad" "success $((nhostile + 1)) 0" \
        "$(q -F ' ' -c "SET treble_sync.read_ahead = $ahead" -c "SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('$t')")"
    check "text, read_ahead $ahead: every key and value byte for byte (a space, 'NULL', '\\N', a leading U+FEFF, a tab...)" \
        "$(wh_rows drv_text_read)" "$(copy_rows $t)"
done
check "text: the late table's first load" "success 1" \
    "$(q -F ' ' -c "SELECT status, rows_pulled FROM treble_sync.sync_table('drv_text_late')")"
ch <<SQL
INSERT INTO drv_text_late SELECT k, concat(k, '!'), [k], now64(6) - INTERVAL 2 HOUR, '2026-11-27 10:00:00' FROM (SELECT arrayJoin($HOSTILE) AS k);
SQL
check "text: rows that arrive late with an old cursor are pulled by key, every one" "success $nhostile 0" \
    "$(q -F ' ' -c "SELECT status, rows_inserted, rows_bad FROM treble_sync.sync_table('drv_text_late')")"
check "text: each late row lands byte for byte" "$(wh_rows drv_text_late)" "$(copy_rows drv_text_late)"
check "text: the next cycle finds nothing to do" "empty 0" \
    "$(q -F ' ' -c "SELECT status, rows_inserted + rows_updated + rows_deleted FROM treble_sync.sync_table('drv_text_late')")"
ch <<<"ALTER TABLE drv_text_late UPDATE v = concat(v, '?'), synced_at = '2026-11-29 10:00:00' WHERE k IN ('tab\\there', ' ', 'NULL')"
check "text: corrections of three hostile keys land" "success 3" \
    "$(q -F ' ' -c "SELECT status, rows_updated FROM treble_sync.sync_table('drv_text_late')")"
check "text: and the copy equals the warehouse" "$(wh_rows drv_text_late)" "$(copy_rows drv_text_late)"
ch <<<"DROP TABLE IF EXISTS drv_text_read; DROP TABLE IF EXISTS drv_text_late"

# ---------------------------------------------------------------------------
# names: tables and columns named with what the driver rewrites or scans
# (? and @name as parameters, " and ' as strings, inside backquotes too;
# {fn ...} anywhere; a backslash as an escape), each through a first load,
# a cycle with a new row and a correction, verify and a repair
chq() {  # a name as a ClickHouse backquoted identifier (for clickhouse_sql.py)
    python3 -c 'import sys; print("`" + sys.argv[1].replace("\\", "\\\\").replace("`", "\\`") + "`")' "$1"
}
i=0
for tname in 'quo"te' "apo'strophe" 'q?mark' '{fn now()}' '@at' 'back\slash' 'back`tick' "mix\"?'@{fn x}"; do
    i=$((i + 1))
    t=$(chq "$tname")
    k=$(chq "k$tname"); v=$(chq "v?$tname"); ev=$(chq "ev'$tname"); cur=$(chq "cur\"$tname")
    ch <<SQL
DROP TABLE IF EXISTS $t;
CREATE TABLE $t ($k String, $v Nullable(String), $ev DateTime64(6), $cur DateTime64(6)) ENGINE = MergeTree ORDER BY $k;
INSERT INTO $t VALUES ('a', 'one', now64(6) - INTERVAL 1 HOUR, '2026-11-28 10:00:00'), ('b?', 'two', now64(6) - INTERVAL 1 HOUR, '2026-11-28 10:00:00');
SQL
    # a remote name with a double quote is written quoted (a dot would part it)
    rname=$tname
    [[ $tname == *'"'* ]] && rname="\"${tname//\"/\"\"}\""
    out=$(q -v tname="$rname" -v ev="ev'$tname" -v cur="cur\"$tname" -v k="k$tname" 2>&1 <<'SQL'
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table(:'tname', 'c', key_columns => ARRAY[:'k'], cursor_column => :'cur',
    event_column => :'ev', hot_window => '3 days', hot_window_check => 'keys', name => 'n', local_table => 'n');
SQL
)
    check "names, $tname: add_table" "n" "$out"
    check "names, $tname: a first load" "success 2" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('n')" 2>&1)"
    ch <<SQL
INSERT INTO $t VALUES ('c', 'three', now64(6) - INTERVAL 1 HOUR, '2026-11-29 10:00:00');
INSERT INTO $t VALUES ('late', 'late', now64(6) - INTERVAL 1 HOUR, '2026-11-27 10:00:00');
ALTER TABLE $t UPDATE $v = 'one?', $cur = '2026-11-29 10:00:00' WHERE $k = 'a';
SQL
    check "names, $tname: a cycle: a new row, a late row (pulled by key), a correction" "success 2 1" \
        "$(q -F ' ' -c "SELECT status, rows_inserted, rows_updated FROM treble_sync.sync_table('n')" 2>&1)"
    check "names, $tname: the copy" "a|one?,b?|two,c|three,late|late" \
        "$(q -v k="k$tname" -v v="v?$tname" 2>&1 <<'SQL'
SELECT string_agg(concat_ws('|', n.:"k", n.:"v"), ',' ORDER BY n.:"k") FROM n;
SQL
)"
    check "names, $tname: verify finds every day matching" "0" \
        "$(q -c "SELECT count(*) FILTER (WHERE NOT match) FROM treble_sync.verify('n')" 2>&1)"
    check "names, $tname: a repair of today leaves the copy as it was" "empty 4" \
        "$(q -F ' ' -c "SELECT r.status, (SELECT count(*) FROM n) FROM treble_sync.repair('n', current_date) r" 2>&1)"
    q -c "SELECT treble_sync.remove_table('n', drop_local => true)" >/dev/null
    ch <<<"DROP TABLE IF EXISTS $t"
done

# ---------------------------------------------------------------------------
# nanoseconds: DateTime64(7..9) values, cursor and event columns are cut to
# the microsecond (the finer digits dropped, before 1970 too), the same way
# in the values, the cut, the filters and verify
ch <<'SQL'
DROP TABLE IF EXISTS drv_nanos;
CREATE TABLE drv_nanos (k Int64, v Nullable(DateTime64(9)), v7 DateTime64(7, 'UTC'), ev DateTime64(9), cur DateTime64(9)) ENGINE = MergeTree ORDER BY k;
INSERT INTO drv_nanos VALUES
    (1, '2026-11-28 10:00:00.999999999', '2026-11-28 23:59:59.9999999', now64(9) - INTERVAL 1 HOUR, '2026-11-28 10:00:00.000000900'),
    (2, '1969-12-31 23:59:59.999999500', '1969-12-31 23:59:59.9999995', now64(9) - INTERVAL 1 HOUR, '2026-11-28 09:00:00.000000100'),
    (3, '1900-01-01 00:00:00.000000999', '1900-01-01 00:00:00.0000009', now64(9) - INTERVAL 1 HOUR, '2026-11-28 09:00:00.999999999'),
    (4, NULL, '2026-11-28 10:00:00', now64(9) - INTERVAL 1 HOUR, '2026-11-28 09:00:00');
SQL
# the warehouse's rows with every time cut to six fraction digits, as text
wh_nanos() {
    ch <<<"SELECT k, ifNull(substring(toString(v), 1, 26), 'N'), substring(toString(v7), 1, 26), substring(toString(cur), 1, 26) FROM drv_nanos ORDER BY k" | tr '\t' '|'
}
copy_nanos() {
    q -c "SELECT k, coalesce(to_char(v, 'YYYY-MM-DD HH24:MI:SS.US'), 'N'), to_char(v7, 'YYYY-MM-DD HH24:MI:SS.US'), to_char(cur, 'YYYY-MM-DD HH24:MI:SS.US') FROM drv_nanos ORDER BY k"
}
q -c "SET client_min_messages = warning" \
  -c "SELECT name FROM treble_sync.add_table('drv_nanos', 'c', key_columns => '{k}', cursor_column => 'cur', event_column => 'ev', hot_window => '3 days', hot_window_check => 'keys', name => 'drv_nanos', local_table => 'drv_nanos')" >/dev/null
check "nanoseconds: a first load" "success 4 0" \
    "$(q -F ' ' -c "SELECT status, rows_inserted, rows_bad FROM treble_sync.sync_table('drv_nanos')")"
check "nanoseconds: every value cut to the microsecond, none rounded (.999999999 stays in its second and day; before 1970 too)" \
    "$(wh_nanos)" "$(copy_nanos)"
check "nanoseconds: the watermark is the greatest cursor cut, not rounded" "2026-11-28 10:00:00" \
    "$(q -c "SELECT watermark FROM treble_sync.tables WHERE name = 'drv_nanos'")"
check "nanoseconds: and the copy's greatest cursor is the watermark" "t" \
    "$(q -c "SELECT max(cur) = (SELECT watermark::timestamp FROM treble_sync.tables WHERE name = 'drv_nanos') FROM drv_nanos")"
ch <<'SQL'
INSERT INTO drv_nanos VALUES (5, '2026-11-28 10:00:00.0000012', '2026-11-28 10:00:00', now64(9) - INTERVAL 1 HOUR, '2026-11-28 10:00:00.000001200');
SQL
check "nanoseconds: a row stamped 1.2 microseconds after the cut is pulled by the next cycle" "success 1" \
    "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('drv_nanos')")"
check "nanoseconds: the copy equals the warehouse, cut" "$(wh_nanos)" "$(copy_nanos)"
check "nanoseconds: the next cycle has nothing to do" "empty 0" \
    "$(q -F ' ' -c "SELECT status, rows_inserted + rows_updated + rows_deleted FROM treble_sync.sync_table('drv_nanos')")"
check "nanoseconds: verify finds every day matching" "0" \
    "$(q -c "SELECT count(*) FILTER (WHERE NOT match) FROM treble_sync.verify('drv_nanos')" 2>&1)"
ch <<<"DROP TABLE IF EXISTS drv_nanos"

echo "1..$n"
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
exit $((failed > 0))
