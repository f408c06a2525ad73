#!/usr/bin/env bash
#
# pg_dump and pg_restore of a database with the extension in use, against
# the PostgreSQL warehouse:
#
#   - registrations (history on, a masked column, a check, a partitioned
#     copy) and cycles in a database, which is dumped (pg_dump -Fc) and
#     restored into a new database (pg_restore);
#   - the extension's configuration comes back as pg_extension_config_dump
#     arranges: every registration with its watermark, the checks, the mask
#     salt; the copies and history tables come back whole; the run log does
#     not (it is history, not configuration);
#   - a new registration and a new check in the restored database take ids
#     of their own (the identity sequences come back with the rows);
#   - after warehouse changes, the next cycle of every table in the restored
#     database succeeds and its copy equals the warehouse's row by row;
#     masked values hash as in the dumped database; as_of() answers there.
#
# Prints TAP.

set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export PGDATESTYLE=ISO

SRC=upgrade_dump_src
DST=upgrade_dump_dst
TMP=$(mktemp -d)
TABLES=(dp_sends dp_people dp_month)

echo "1..11"

cleanup() {
    "$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $SRC" -c "DROP DATABASE IF EXISTS $DST" >/dev/null 2>&1
    whq -c "DROP TABLE IF EXISTS $(IFS=,; echo "${TABLES[*]}"), dp_other" >/dev/null 2>&1
    rm -rf "$TMP"
}
[[ -n ${KEEP:-} ]] || trap cleanup EXIT

whq >/dev/null <<'SQL' || bail "the warehouse tables are made" "whq failed"
SET client_min_messages = warning;
DROP TABLE IF EXISTS dp_sends, dp_people, dp_month, dp_other;
CREATE TABLE dp_sends (send_id bigint PRIMARY KEY, status text, scheduled_at timestamp, synced_at timestamp);
INSERT INTO dp_sends SELECT g, 'queued', timestamp '2026-11-20' + g * interval '1 hour',
    timestamp '2026-11-20 00:30' + g * interval '1 hour' FROM generate_series(1, 150) g;
CREATE TABLE dp_people (person_id int PRIMARY KEY, email text, synced_at timestamp);
INSERT INTO dp_people SELECT g, 'p' || g || '@example.com', timestamp '2026-11-28 10:00' FROM generate_series(1, 10) g;
CREATE TABLE dp_month (send_id bigint PRIMARY KEY, status text, scheduled_at timestamp, synced_at timestamp);
INSERT INTO dp_month SELECT g, 'sent', timestamp '2026-10-01' + g * interval '1 day',
    timestamp '2026-10-01 01:00' + g * interval '1 day' FROM generate_series(0, 58) g;
CREATE TABLE dp_other (id int PRIMARY KEY, synced_at timestamp);
INSERT INTO dp_other VALUES (1, '2026-11-28 10:00');
GRANT SELECT ON dp_sends, dp_people, dp_month, dp_other TO reader;
SQL

"$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $SRC" -c "DROP DATABASE IF EXISTS $DST" \
    -c "CREATE DATABASE $SRC" -c "CREATE DATABASE $DST" >/dev/null 2>&1
out=$(qd "$SRC" 2>&1 <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER dpwh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER dpwh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
CREATE TABLE dp_month (send_id bigint, status text, scheduled_at timestamp, synced_at timestamp)
    PARTITION BY RANGE (scheduled_at);
CREATE TABLE dp_month_2026_10 PARTITION OF dp_month FOR VALUES FROM ('2026-10-01') TO ('2026-11-01');
CREATE TABLE dp_month_2026_11 PARTITION OF dp_month FOR VALUES FROM ('2026-11-01') TO ('2026-12-01');
CREATE TABLE dp_month_2026_12 PARTITION OF dp_month FOR VALUES FROM ('2026-12-01') TO ('2027-01-01');
ALTER TABLE dp_month ADD PRIMARY KEY (send_id, scheduled_at);
SELECT name FROM treble_sync.add_table('dp_sends', 'dpwh', key_columns => '{send_id}',
    event_column => 'scheduled_at', keep_history => '30 days');
SELECT name FROM treble_sync.add_table('dp_people', 'dpwh', key_columns => '{person_id}',
    mask => '{"email": "sha256"}');
SELECT name FROM treble_sync.add_table('dp_month', 'dpwh', key_columns => '{send_id}',
    event_column => 'scheduled_at');
SELECT kind FROM treble_sync.add_check('dp_sends', 'not_null', column_name => 'status');
SELECT string_agg(status, ' ' ORDER BY run_id) FROM (
    SELECT * FROM treble_sync.sync_table('dp_sends') UNION ALL
    SELECT * FROM treble_sync.sync_table('dp_people') UNION ALL
    SELECT * FROM treble_sync.sync_table('dp_month')) r;
SQL
)
[[ $out == $'dp_sends\ndp_people\ndp_month\nnot_null\nsuccess success success' ]] ||
    bail "registrations and first cycles in $SRC" "$out"
ok "registrations (history, a mask, a check, a partitioned copy) and first cycles in $SRC"
whq -c "UPDATE dp_sends SET status = 'sent', synced_at = '2026-11-28 09:00' WHERE send_id % 10 = 0" >/dev/null
check "a second cycle in $SRC" success "$(qd "$SRC" -c "SELECT status FROM treble_sync.sync_table('dp_sends')")"
CUT=$(qd "$SRC" -c "SELECT treble_sync.watermark_time(t) FROM treble_sync.tables t WHERE name = 'dp_sends'")
qd "$SRC" -c "SELECT * FROM dp_sends ORDER BY send_id" >"$TMP/sends_at_cut"

# what pg_extension_config_dump keeps, and the copies
rows() {
    qd "$1" <<'SQL'
SELECT 'tables ' || (to_jsonb(t) - 'created_at')::text FROM treble_sync.tables t
UNION ALL SELECT 'checks ' || to_jsonb(c)::text FROM treble_sync.checks c
UNION ALL SELECT 'salt ' || encode(salt, 'hex') FROM treble_sync.mask_salt
UNION ALL SELECT 'dp_sends ' || to_jsonb(s)::text FROM dp_sends s
UNION ALL SELECT 'dp_sends_history ' || to_jsonb(h)::text FROM dp_sends_history h
UNION ALL SELECT 'dp_people ' || to_jsonb(p)::text FROM dp_people p
UNION ALL SELECT 'dp_month ' || tableoid::regclass || ' ' || to_jsonb(m)::text FROM dp_month m
ORDER BY 1
SQL
}
rows "$SRC" >"$TMP/rows_src" || bail "the rows of $SRC are read" "$(cat "$TMP/rows_src")"

if "$PG_BIN/pg_dump" -Fc -d "$SRC" -f "$TMP/dump" 2>"$TMP/dump.err" &&
    "$PG_BIN/pg_restore" --exit-on-error -d "$DST" "$TMP/dump" 2>"$TMP/restore.err"; then
    ok "pg_dump -Fc of $SRC, pg_restore into $DST"
else
    bail "pg_dump -Fc of $SRC, pg_restore into $DST" "$(cat "$TMP/dump.err" "$TMP/restore.err")"
fi
rows "$DST" >"$TMP/rows_dst" 2>&1
same "the registrations (watermarks included), checks, mask salt, copies and history come back" \
    "$TMP/rows_src" "$TMP/rows_dst"
check "the run log stays behind (history, not configuration)" 0 \
    "$(qd "$DST" -c "SELECT count(*) FROM treble_sync.runs")"
check "the restored extension is the current version" \
    "$(qd "$SRC" -c "SELECT extversion FROM pg_extension WHERE extname = 'treble_sync'")" \
    "$(qd "$DST" -c "SELECT extversion FROM pg_extension WHERE extname = 'treble_sync'")"
check "a new registration and a new check in $DST take ids of their own" "4|2" \
    "$(qd "$DST" -c "SET client_min_messages = warning" \
        -c "SELECT table_id FROM treble_sync.add_table('dp_other', 'dpwh', key_columns => '{id}')" \
        -c "SELECT check_id FROM treble_sync.add_check('dp_people', 'not_null', column_name => 'email')" 2>&1 | paste -sd '|')"

whq >/dev/null <<'SQL'
UPDATE dp_sends SET status = 'opened', synced_at = '2026-11-28 14:00' WHERE send_id % 15 = 1;
INSERT INTO dp_sends SELECT g, 'queued', timestamp '2026-11-25' + g * interval '1 minute',
    timestamp '2026-11-28 14:30' FROM generate_series(151, 160) g;
DELETE FROM dp_sends WHERE send_id IN (140, 145);
INSERT INTO dp_people VALUES (11, 'p1@example.com', '2026-11-28 12:00');
UPDATE dp_month SET status = 'opened', synced_at = '2026-11-29 09:00' WHERE send_id % 7 = 0;
SQL
check "the next cycles in $DST succeed" "success success success success" \
    "$(qd "$DST" -c "SELECT string_agg(status, ' ' ORDER BY run_id) FROM (
        SELECT * FROM treble_sync.sync_table('dp_sends') UNION ALL
        SELECT * FROM treble_sync.sync_table('dp_people') UNION ALL
        SELECT * FROM treble_sync.sync_table('dp_month') UNION ALL
        SELECT * FROM treble_sync.sync_table('dp_other')) r" 2>&1)"
diffs=""
for spec in "dp_sends|*|send_id" "dp_people|person_id, synced_at|person_id" "dp_month|*|send_id" "dp_other|*|id"; do
    IFS='|' read -r t cols key <<<"$spec"
    d=$(diff <(whq -c "SELECT $cols FROM $t ORDER BY $key" 2>&1) <(qd "$DST" -c "SELECT $cols FROM $t ORDER BY $key" 2>&1)) ||
        diffs+="$t:"$'\n'"$d"$'\n'
done
check "in $DST every copy equals its warehouse table, row by row" "" "$diffs"
check "a masked value hashes as in $SRC (the salt came back)" 1 \
    "$(qd "$DST" -c "SELECT count(DISTINCT email) FROM dp_people WHERE person_id IN (1, 11)")"
qd "$DST" -c "SELECT * FROM treble_sync.as_of(NULL::public.dp_sends, '$CUT') ORDER BY send_id" >"$TMP/sends_as_of" 2>&1
same "as_of() in $DST at a cut of $SRC gives the copy as it was then" "$TMP/sends_at_cut" "$TMP/sends_as_of"

exit $((failed > 0))
