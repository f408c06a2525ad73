#!/usr/bin/env bash
#
# The core cycle against each warehouse the tests start: PostgreSQL through
# psqlODBC, MariaDB through MariaDB Connector/ODBC, and an SQLite file
# through the SQLite ODBC driver. The same scenarios run on each, and after
# every cycle the copy is compared with the warehouse value by value:
#
#   initial     first sync, with two versions of one key, unicode text and
#               timestamps with microseconds (and one written without any)
#   delta       corrections (same key, newer synced_at), a duplicate key in
#               the delta, new rows, a row exactly at the cut
#   removals    a row deleted in the hot window disappears; one at exactly
#               the window's bound is seen as inside it
#   empty       a rerun changes nothing and says so
#   failure     the table vanishes mid-life: the cycle fails, the copy and
#               the watermark stay as they were; the next one converges
#   verify      verify finds a day a row went missing from; repair fixes it
#   slices      the same table through a server with slice_rows '1': every
#               pull in slices of one cursor value (MariaDB, SQLite), with
#               the versions of a key in different slices; the copy equals
#               the warehouse after a first sync and after a delta
#   cancel      a cycle waiting on a warehouse lock is cancelled while the
#               lock is still held, and changes nothing
#   unreachable the warehouse server stopped (MariaDB) or its file unreadable
#               (SQLite): the cycle fails and changes nothing; once back,
#               the next one converges
#   time zones  a zone-less UTC column lands in a local timestamptz right,
#               whatever the session's zone, and another server zone shifts it
#   password    a wrong password (full of ; { } ' ") fails the cycle, and
#               appears in no error (MariaDB, PostgreSQL; ClickHouse, whose
#               reader logs in with a password of its own, with ' and ")
#   modes       append with an integer cursor (bound as SQL_BIGINT), and a
#               snapshot without any cursor, in which removals anywhere go
#   emptied     a warehouse table whose rows are all gone: verify reports
#               every day of the copy as differing, the cycle refreshes the
#               hot window at the watermark (under the mass-delete guard),
#               repair empties the day it is given, a snapshot's cycle and
#               resync the copy (under the guard too); a table never loaded
#               stays empty, and verify of it compares nothing
#   identifiers a table and columns whose names need quoting (a space, a
#               reserved word, both quote characters), each quoted with the
#               driver's own quote character
#   text times  SQLite: a number in a TIMESTAMP column fails the cycle with
#               an error that says which form timestamps need
#   no file     SQLite: a warehouse file that does not exist is an error,
#               and is not created
#   limits      MariaDB (read in blocks sized from the declared sizes):
#               values as long as their columns allow, in characters that
#               take two UTF-16 units, and BIGINT UNSIGNED at its maximum
#   zero dates  MariaDB: '0000-00-00' and '2026-02-00' as data are bad rows;
#               as a cursor, like a stamp in 2999, left out and reported
#   ci keys     MariaDB: keys equal under a case- and accent-insensitive
#               collation ('a', 'A', 'é', 'e', 'e ') are each their own key in
#               the copy, and verify and repair agree with the cycles
#   large pulls 150,000 rows over 300 days, loaded, then all corrected:
#               through a driver that cannot stream (MariaDB 3.1.15,
#               SQLite) both pulls go in slices of at most 100,000 rows,
#               and arrive whole
#
# The warehouse side is changed and read with each database's own client
# (psql, mariadb, sqlite3); only the extension goes through ODBC.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_*, PGHOST/PGPORT/PGUSER). Prints TAP.

set -u

# TS_WAREHOUSES="sqlite" runs one of them only. ClickHouse runs when
# .ci/clusters started its engine (TS_CLICKHOUSE_PORT; see
# docs/warehouses.md), and is reported missing otherwise.
read -r -a WAREHOUSES <<<"${TS_WAREHOUSES:-postgresql mariadb sqlite clickhouse}"
# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# the destination database of one warehouse
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "ts_$W" "$@"; }

# run SQL on the current warehouse $W with its own client
wh() {
    case $W in
        postgresql)
            PGOPTIONS="-c client_min_messages=warning" \
                psql -X -q -At -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@" ;;
        mariadb)
            mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" \
                -uroot -N -B wh ;;
        sqlite)
            sqlite3 -batch "$TS_SQLITE_DB" ;;
        clickhouse)
            python3 "$(dirname "$0")/clickhouse_sql.py" ;;
    esac
}

# each warehouse's spelling of the table (no primary key: versions repeat)
create_table() {
    case $W in
        postgresql) wh <<'SQL'
DROP TABLE IF EXISTS fact_sends;
CREATE TABLE fact_sends (send_id bigint NOT NULL, campaign text, amount numeric(12,4),
    scheduled_at timestamp(6), synced_at timestamp(6) NOT NULL);
SQL
            ;;
        mariadb) wh <<'SQL'
DROP TABLE IF EXISTS fact_sends;
CREATE TABLE fact_sends (send_id BIGINT NOT NULL, campaign VARCHAR(200), amount DECIMAL(12,4),
    scheduled_at DATETIME(6), synced_at DATETIME(6) NOT NULL);
SQL
            ;;
        sqlite) wh <<'SQL'
DROP TABLE IF EXISTS fact_sends;
CREATE TABLE fact_sends (send_id INTEGER NOT NULL, campaign VARCHAR(200), amount DECIMAL(12,4),
    scheduled_at TIMESTAMP, synced_at TIMESTAMP NOT NULL);
SQL
            ;;
        # and a table of the same name in another database, which must
        # never be read instead
        clickhouse) wh <<'SQL'
DROP TABLE IF EXISTS fact_sends;
CREATE TABLE fact_sends (send_id Int64, campaign Nullable(String), amount Nullable(Decimal(12,4)),
    scheduled_at Nullable(DateTime64(6)), synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY send_id;
CREATE DATABASE IF NOT EXISTS other;
DROP TABLE IF EXISTS other.fact_sends;
CREATE TABLE other.fact_sends (send_id Int64, decoy String, synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY send_id;
INSERT INTO other.fact_sends VALUES (1000, 'from the other database', '2026-11-29 11:59:59.999999');
SQL
            ;;
    esac
}

# The warehouse's rows as COPY text, newest version per key, timestamps to
# the microsecond; loaded into a typed table on the destination, so that
# 1.5 and 1.5000 or "10:00:00" and "10:00:00.000000" compare equal and
# nothing else does.
dump_warehouse() {
    case $W in
        postgresql)
            wh -c "COPY (SELECT send_id, campaign, amount,
                            to_char(scheduled_at, 'YYYY-MM-DD HH24:MI:SS.US'),
                            to_char(synced_at, 'YYYY-MM-DD HH24:MI:SS.US')
                       FROM fact_sends) TO STDOUT" ;;
        mariadb)
            # batch mode escapes \ tab newline as COPY does; NULL is NULL
            wh <<<"SELECT send_id, campaign, amount,
                          DATE_FORMAT(scheduled_at, '%Y-%m-%d %H:%i:%s.%f'),
                          DATE_FORMAT(synced_at, '%Y-%m-%d %H:%i:%s.%f')
                     FROM fact_sends" | sed 's/\(^\|\t\)NULL\($\|\t\)/\1\\N\2/g; s/\(^\|\t\)NULL\($\|\t\)/\1\\N\2/g' ;;
        sqlite)
            # the test data holds no tab, newline or backslash
            sqlite3 -batch -noheader -separator $'\t' -nullvalue '\N' "$TS_SQLITE_DB" \
                "SELECT send_id, campaign, amount, scheduled_at, synced_at FROM fact_sends" ;;
        clickhouse)
            # TSV escapes as COPY does; NULL is \N
            wh <<<"SELECT send_id, campaign, amount, toString(scheduled_at), toString(synced_at)
                     FROM fact_sends FORMAT TSV" ;;
    esac
}

# rows that differ between the warehouse (newest version of each key) and
# the copy; empty when the copy is exact
diff_copy() {
    local table=${1:-fact_sends}
    dump_warehouse >"$TMP/wh.tsv"
    q <<SQL
CREATE TEMP TABLE wh_rows (send_id bigint, campaign text, amount numeric,
    scheduled_at timestamp, synced_at timestamp);
\\copy wh_rows FROM '$TMP/wh.tsv'
WITH w AS (SELECT DISTINCT ON (send_id) * FROM wh_rows ORDER BY send_id, synced_at DESC),
     l AS (SELECT send_id, campaign, amount::numeric, scheduled_at::timestamp,
                  synced_at::timestamp FROM $table)
(SELECT 'warehouse only', w::text FROM (SELECT * FROM w EXCEPT ALL SELECT * FROM l) w)
UNION ALL
(SELECT 'copy only', l::text FROM (SELECT * FROM l EXCEPT ALL SELECT * FROM w) l)
ORDER BY 1, 2;
SQL
}

# check that the copy equals the warehouse, showing the differences if not
check_copy() {
    local out
    out=$(diff_copy "${2:-fact_sends}" 2>&1)
    if [[ -z $out ]]; then
        ok "$1"
    else
        nok "$1"
        echo "$out" | sed 's/^/#   /'
    fi
}

# sync and print "status inserted updated deleted pulled" (and, with
# TS_DEBUG set, the table's last error on stderr)
sync() {
    q -F ' ' -c "SELECT status, rows_inserted, rows_updated, rows_deleted, rows_pulled
                   FROM treble_sync.sync_table('${1:-fact_sends}')"
    [[ -n ${TS_DEBUG:-} ]] && q -c "SELECT last_error FROM treble_sync.status WHERE table_name = '${1:-fact_sends}'" >&2
}

watermark() { q -c "SELECT watermark FROM treble_sync.tables WHERE name = '${1:-fact_sends}'"; }
fingerprint() { q -c "SELECT md5(string_agg(t::text, '|' ORDER BY send_id)) FROM ${1:-fact_sends} t"; }

# The rows of a scenario, in plain SQL every warehouse reads alike. Times
# derive from one anchor: the warehouse's "now" is 2026-11-29 12:00.
INITIAL="
INSERT INTO fact_sends VALUES (1, 'Zoë — 東京 🚀', 1.5, '2026-11-28 09:00:00.000001', '2026-11-29 10:00:00.000001');
INSERT INTO fact_sends VALUES (1, 'Zoë — 東京 🚀 (first version)', 1.25, '2026-11-28 09:00:00.000001', '2026-11-29 09:00:00.5');
INSERT INTO fact_sends VALUES (2, 'l''été “quoted”', 2, '2026-11-29 08:30:00.999999', '2026-11-29 10:00:00.000002');
INSERT INTO fact_sends VALUES (3, NULL, NULL, NULL, '2026-11-29 10:00:00');
INSERT INTO fact_sends VALUES (4, 'old', 4.0001, '2026-10-01 00:00:00', '2026-11-29 10:00:00.123456');
INSERT INTO fact_sends VALUES (5, 'at the edge', 5, '2026-11-26 11:00:00', '2026-11-29 11:00:00');
"

run_warehouse() {
    local out before_fp before_wm
    # the warehouse's quote character, for the few statements written here
    if [[ $W == mariadb || $W == clickhouse ]]; then Q='`'; else Q='"'; fi

    # a fresh destination database and a fresh warehouse table
    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ts_$W" \
        -c "CREATE DATABASE ts_$W" >/dev/null
    create_table
    q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
-- the warehouse, as read in UTC (the default) and as read in Tokyo
DO \$\$
DECLARE
    conn text := current_setting(CASE '$W' WHEN 'sqlite' THEN 'treble_test.sqlite_odbc'
                                           WHEN 'mariadb' THEN 'treble_test.mariadb_odbc'
                                           WHEN 'clickhouse' THEN 'treble_test.clickhouse_odbc'
                                           ELSE 'treble_test.wh_odbc' END);
    srv text;
BEGIN
    EXECUTE format('CREATE SERVER w FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)', conn);
    EXECUTE format('CREATE SERVER w_tokyo FOREIGN DATA WRAPPER treble_sync
                    OPTIONS (connection_string %L, timezone %L)', conn, 'Asia/Tokyo');
    -- a pull of more than one row goes in slices (through a driver that
    -- cannot stream)
    EXECUTE format('CREATE SERVER w_sliced FOREIGN DATA WRAPPER treble_sync
                    OPTIONS (connection_string %L, slice_rows %L)', conn, '1');
    FOREACH srv IN ARRAY ARRAY['w', 'w_tokyo', 'w_sliced'] LOOP
        -- a file takes no login; ClickHouse's reader has a password of its own
        IF '$W' = 'sqlite' THEN
            EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER %I', srv);
        ELSIF '$W' = 'clickhouse' THEN
            EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER %I OPTIONS (user %L, password %L)',
                           srv, '$TS_CLICKHOUSE_USER', '$TS_CLICKHOUSE_PASSWORD');
        ELSE
            EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER %I OPTIONS (user %L, password %L)',
                           srv, current_setting('treble_test.wh_user'),
                           current_setting('treble_test.wh_password'));
        END IF;
    END LOOP;
END
\$\$;
SQL
    wh <<<"$INITIAL"
    q -c "SELECT name FROM treble_sync.add_table('fact_sends', 'w', key_columns => '{send_id}',
                                                 event_column => 'scheduled_at')" >/dev/null

    # --- initial
    check "$W: the first sync succeeds" "success 5 0 0 6" "$(sync)"
    check_copy "$W: after the first sync the copy equals the warehouse (newest version of key 1)"
    check "$W: the watermark is the cut, to the microsecond" "2026-11-29 11:00:00" "$(watermark)"
    check "$W: unicode text arrives whole" "Zoë — 東京 🚀|l'été “quoted”" \
        "$(q -c "SELECT string_agg(campaign, '|' ORDER BY send_id) FROM fact_sends WHERE send_id IN (1, 2)")"
    check "$W: microseconds survive" "2026-11-28 09:00:00.000001|2026-11-29 08:30:00.999999|2026-11-29 10:00:00.000002" \
        "$(q -c "SELECT string_agg(t, '|' ORDER BY t) FROM (SELECT scheduled_at::text t FROM fact_sends WHERE send_id = 1
                  UNION ALL SELECT scheduled_at::text FROM fact_sends WHERE send_id = 2
                  UNION ALL SELECT synced_at::text FROM fact_sends WHERE send_id = 2) x")"

    # --- delta: corrections, a duplicate key, new rows, one a microsecond
    # after the cut and one exactly at the new cut
    wh <<'SQL'
UPDATE fact_sends SET campaign = 'corrected ✓', amount = 2.5, synced_at = '2026-11-29 11:30:00.000001' WHERE send_id = 2;
INSERT INTO fact_sends VALUES (4, 'old, corrected', 4.0002, '2026-10-01 00:00:00', '2026-11-29 11:30:00.000001');
INSERT INTO fact_sends VALUES (4, 'old, corrected twice', 4.0003, '2026-10-01 00:00:00', '2026-11-29 11:30:00.000002');
INSERT INTO fact_sends VALUES (6, 'new', 6, '2026-11-29 11:00:00', '2026-11-29 11:00:00.000001');
INSERT INTO fact_sends VALUES (7, 'new, at the cut', 7, '2026-11-29 11:45:00', '2026-11-29 12:00:00');
SQL
    out=$(sync)
    check "$W: the delta inserts 2 and updates 2 (pulling the delta and the window)" "success 2 2 0" "${out% *}"
    check_copy "$W: after the delta the copy equals the warehouse (key 4's newest of two versions)"
    check "$W: the watermark moves to the new cut" "2026-11-29 12:00:00" "$(watermark)"
    # the window advisor: key 2 corrected 2 h 59 min after its event, key 4
    # 1,427.5 h after (2026-10-01, before the window: the 'late' incident)
    check "$W: the advisor measures both corrections, one before the window" "2 0 1 2,720 t" \
        "$(q -F ' ' -c "SELECT a.corrections, a.removals, a.outside_window,
                               (SELECT string_agg(late_from_hours::text, ',' ORDER BY late_from_hours)
                                FROM treble_sync.lateness l JOIN treble_sync.tables t USING (table_id)
                                WHERE t.name = 'fact_sends'),
                               EXISTS (SELECT FROM treble_sync.incidents i JOIN treble_sync.tables t USING (table_id)
                                       WHERE t.name = 'fact_sends' AND i.kind = 'late' AND i.closed_at IS NULL)
                        FROM treble_sync.window_advice('fact_sends') a")"

    # --- removals in the hot window (bound: 2026-11-26 00:00, the day three
    # days before the cut's)
    wh <<'SQL'
DELETE FROM fact_sends WHERE send_id = 6;
INSERT INTO fact_sends VALUES (8, 'exactly at the bound', 8, '2026-11-26 00:00:00', '2026-11-29 12:00:00');
SQL
    out=$(sync)
    check "$W: a removal in the window is applied; a row at the bound is inside" "success 1 0 1" "${out% *}"
    check_copy "$W: after removals the copy equals the warehouse"
    wh <<<"DELETE FROM fact_sends WHERE send_id = 8;"
    check "$W: a row exactly at the window's bound is removed too" "success 0 0 1" "$(sync | cut -d' ' -f1-4)"
    check "$W: the advisor counts both removals, and advises a window for key 4's 60 days" "2 2 60 days" \
        "$(q -F ' ' -c "SELECT corrections, removals, advised_window FROM treble_sync.window_advice('fact_sends')")"
    check_copy "$W: and the copy equals the warehouse"

    # --- empty run
    before_fp=$(fingerprint)
    out=$(sync)
    check "$W: a rerun changes nothing and says so" "empty 0 0 0" "${out% *}"
    check "$W: the copy is byte for byte the same" "$before_fp" "$(fingerprint)"

    # --- failure and convergence
    before_wm=$(watermark)
    wh <<<"ALTER TABLE fact_sends RENAME TO fact_sends_away;"
    out=$(q -F ' ' -c "SELECT status, error IS NOT NULL FROM treble_sync.sync_table('fact_sends')" 2>&1)
    check "$W: a cycle without its warehouse table fails" "failed t" "$out"
    check "$W: the copy is unchanged" "$before_fp" "$(fingerprint)"
    check "$W: the watermark is unchanged" "$before_wm" "$(watermark)"
    wh <<'SQL'
ALTER TABLE fact_sends_away RENAME TO fact_sends;
UPDATE fact_sends SET campaign = 'late correction', synced_at = '2026-11-29 12:10:00.5'
 WHERE send_id = 1 AND synced_at = '2026-11-29 10:00:00.000001';
INSERT INTO fact_sends VALUES (9, 'after the failure', 9, '2026-11-29 12:05:00', '2026-11-29 12:10:00.5');
DELETE FROM fact_sends WHERE send_id = 7;
SQL
    out=$(sync)
    check "$W: the next cycle converges" "success 1 1 1" "${out% *}"
    check_copy "$W: after the failure the copy equals the warehouse"
    check "$W: no run is left running" "0" \
        "$(q -c "SELECT count(*) FROM treble_sync.runs WHERE status = 'running'")"

    # --- verify and repair (checksums on PostgreSQL, key lists elsewhere)
    check "$W: verify finds every day equal" "0" \
        "$(q -c "SELECT count(*) FILTER (WHERE NOT match) FROM treble_sync.verify('fact_sends')")"
    q -c "DELETE FROM fact_sends WHERE send_id = 9"
    check "$W: verify finds the day a row went missing from" "2026-11-29" \
        "$(q -c "SELECT string_agg(day::text, ',') FROM treble_sync.verify('fact_sends') WHERE NOT match")"
    q -c "SELECT count(*) FROM treble_sync.verify('fact_sends', repair => true)" >/dev/null
    check "$W: repair makes it equal again" "0" \
        "$(q -c "SELECT count(*) FILTER (WHERE NOT match) FROM treble_sync.verify('fact_sends')")"
    check_copy "$W: after the repair the copy equals the warehouse"

    sliced_pulls
    cancel_while_locked
    warehouse_unreachable
    wrong_password
    group_cycles

    # --- time zones: the same zone-less UTC column into a timestamptz,
    # read by a session in New York; then through a server in Tokyo
    q <<'SQL' >/dev/null
SELECT name FROM treble_sync.add_table('fact_sends', 'w', key_columns => '{send_id}',
    event_column => 'scheduled_at', local_table => 'sends_tz', name => 'sends_tz',
    column_types => '{"scheduled_at": "timestamptz", "synced_at": "timestamptz"}');
SELECT name FROM treble_sync.add_table('fact_sends', 'w_tokyo', key_columns => '{send_id}',
    event_column => 'scheduled_at', local_table => 'sends_tokyo', name => 'sends_tokyo',
    column_types => '{"scheduled_at": "timestamptz"}');
SQL
    check "$W: a UTC column syncs into timestamptz" "success" "$(sync sends_tz | cut -d' ' -f1)"
    check "$W: and reads right in another session zone" "2026-11-29 03:30:00.999999-05" \
        "$(PGTZ=America/New_York q -c "SET datestyle = ISO" -c "SELECT scheduled_at FROM sends_tz WHERE send_id = 2")"
    check "$W: the same instant as the zone-less copy, in UTC" "0" \
        "$(q -c "SELECT count(*) FROM fact_sends f JOIN sends_tz z USING (send_id)
                 WHERE f.scheduled_at IS DISTINCT FROM (z.scheduled_at AT TIME ZONE 'UTC')
                    OR f.synced_at IS DISTINCT FROM (z.synced_at AT TIME ZONE 'UTC')")"
    check "$W: a server in Tokyo reads the same text nine hours earlier" "success 2026-11-28 23:30:00.999999+00" \
        "$(q -c "SELECT status FROM treble_sync.sync_table('sends_tokyo')" | tr -d '\n'; echo -n ' ';
           PGTZ=UTC q -c "SET datestyle = ISO" -c "SELECT scheduled_at FROM sends_tokyo WHERE send_id = 2")"
    out=$(sync sends_tz)
    check "$W: an unchanged timestamptz copy has an empty rerun" "empty 0 0 0" "${out% *}"

    odd_identifiers
    other_modes
    emptied_table
    [[ $W == sqlite ]] && timestamps_not_text
    [[ $W == mariadb ]] && values_at_their_limits
    [[ $W == mariadb ]] && zero_dates
    [[ $W == mariadb ]] && ci_keys
    [[ $W == sqlite ]] && missing_file
    [[ $W == clickhouse ]] && clickhouse_specifics
    [[ $W == postgresql ]] && session_time_zone
    large_first_load
}

# A PostgreSQL warehouse whose login has a time zone of its own (Tokyo)
# sends timestamptz as text in it, and psqlODBC drops the offset: the copy
# must still hold the same instants, through a server in UTC and through
# one in Tokyo.
session_time_zone() {
    wh <<SQL
DROP TABLE IF EXISTS zoned;
CREATE TABLE zoned (id int PRIMARY KEY, at timestamptz, synced_at timestamptz);
INSERT INTO zoned VALUES (1, '2026-11-29 12:00:00.5+00', '2026-11-29 12:00:00+00');
GRANT SELECT ON zoned TO $TS_WH_USER;
ALTER ROLE $TS_WH_USER SET TimeZone = 'Asia/Tokyo';
SQL
    q -c "SELECT name FROM treble_sync.add_table('zoned', 'w', local_table => 'zoned_utc', name => 'zoned_utc')" \
      -c "SELECT name FROM treble_sync.add_table('zoned', 'w_tokyo', local_table => 'zoned_tokyo', name => 'zoned_tokyo')" >/dev/null
    q -c "SELECT treble_sync.sync_table('zoned_utc')" -c "SELECT treble_sync.sync_table('zoned_tokyo')" >/dev/null
    wh <<<"INSERT INTO zoned VALUES (2, '2026-11-29 13:00:00+00', '2026-11-29 13:00:00+00');"
    q -c "SELECT treble_sync.sync_table('zoned_utc')" -c "SELECT treble_sync.sync_table('zoned_tokyo')" >/dev/null
    wh <<<"ALTER ROLE $TS_WH_USER RESET TimeZone;"
    check "$W: a login in Tokyo: timestamptz lands as the same instant, through servers in UTC and in Tokyo" \
        "1 2026-11-29 12:00:00.5+00 2026-11-29 12:00:00+00|2 2026-11-29 13:00:00+00 2026-11-29 13:00:00+00|1 2026-11-29 12:00:00.5+00 2026-11-29 12:00:00+00|2 2026-11-29 13:00:00+00 2026-11-29 13:00:00+00" \
        "$(q -c "SET TimeZone = 'UTC'" -c "SELECT string_agg(id || ' ' || at || ' ' || synced_at, '|' ORDER BY c, id)
                 FROM (SELECT 1 c, * FROM zoned_utc UNION ALL SELECT 2, * FROM zoned_tokyo) x")"
}

# ClickHouse as it really is: ReplacingMergeTree versions, microsecond
# edges of DateTime64(6) cursors, a table name in two databases, no
# primary keys, every type landing exactly, columns in other zones.
clickhouse_specifics() {
    local out

    # -- no primary key to read: a clear error that asks for key_columns
    out=$(q -c "SET client_min_messages = warning" \
            -c "SELECT treble_sync.add_table('fact_sends', 'w', name => 'nokey', local_table => 'nokey')" 2>&1 | head -n 1)
    check "$W: add_table without key_columns says to name the key" \
        'ERROR:  ClickHouse does not report a primary key for warehouse table "wh.fact_sends"' "$out"

    # -- the same name in two databases: remote_table names the database
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('other.fact_sends', 'w', key_columns => '{send_id}',
                local_table => 'other_sends', name => 'other_sends')" >/dev/null
    check "$W: 'other.fact_sends' reads the other database's table" "success 1" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('other_sends')")"
    check "$W: with its own columns and rows" "1000|from the other database" \
        "$(q -c "SELECT send_id || '|' || decoy FROM other_sends")"
    check "$W: and fact_sends never got the other database's row or column" "0 0" \
        "$(q -F ' ' -c "SELECT count(*) FILTER (WHERE send_id = 1000),
                               (SELECT count(*) FROM information_schema.columns
                                 WHERE table_name = 'fact_sends' AND column_name = 'decoy')
                          FROM fact_sends")"

    # -- ReplacingMergeTree(synced_at): versions of a key in separate parts
    # until a merge; the copy holds the newest, before and after FINAL
    wh <<'SQL'
DROP TABLE IF EXISTS rmt;
CREATE TABLE rmt (id UInt64, status String, scheduled_at DateTime, synced_at DateTime64(6))
    ENGINE = ReplacingMergeTree(synced_at) ORDER BY id;
INSERT INTO rmt VALUES (42, 'scheduled', '2026-11-28 10:00:00', '2026-11-29 10:00:00.000001');
INSERT INTO rmt VALUES (42, 'sent', '2026-11-28 10:00:00', '2026-11-29 10:00:00.000002');
INSERT INTO rmt VALUES (7, 'sent', '2026-11-28 09:00:00', '2026-11-29 09:00:00');
INSERT INTO rmt VALUES (7, 'sent', '2026-11-28 09:00:00', '2026-11-29 09:00:00');
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('rmt', 'w', key_columns => '{id}', event_column => 'scheduled_at')" >/dev/null
    check "$W: ReplacingMergeTree before a merge holds 4 rows of 2 keys" "4 2" \
        "$(wh <<<"SELECT count(), uniqExact(id) FROM rmt" | tr '\t' ' ')"
    check "$W: ReplacingMergeTree before a merge: the copy takes the newest version of each key" \
        "success 2|7 sent|42 sent" \
        "$(q -c "SELECT status || ' ' || rows_inserted FROM treble_sync.sync_table('rmt')" | tr -d '\n';
           echo -n '|'; q -c "SELECT string_agg(id || ' ' || status, '|' ORDER BY id) FROM rmt")"
    wh <<'SQL'
INSERT INTO rmt VALUES (42, 'bounced', '2026-11-28 10:00:00', '2026-11-29 11:00:00');
OPTIMIZE TABLE rmt FINAL;
SQL
    check "$W: after OPTIMIZE FINAL one row per key is left, the removed duplicate of key 7 too" "2" \
        "$(wh <<<"SELECT count() FROM rmt")"
    check "$W: after OPTIMIZE FINAL the copy equals SELECT ... FINAL" "success|7 sent|42 bounced" \
        "$(q -c "SELECT status FROM treble_sync.sync_table('rmt')" | tr -d '\n';
           echo -n '|'; q -c "SELECT string_agg(id || ' ' || status, '|' ORDER BY id) FROM rmt")"
    check "$W: FINAL in the warehouse agrees" "7 sent|42 bounced" \
        "$(wh <<<"SELECT arrayStringConcat(groupArray(concat(toString(id), ' ', status)), '|') FROM (SELECT * FROM rmt FINAL ORDER BY id)")"

    # -- DateTime64(6) cursors at the microsecond: a row exactly at the cut
    # is in; one 1 µs after it is the next cycle's; nothing at T_prev is
    # pulled twice; the window's bound is inside, 1 µs before it is not
    wh <<'SQL'
DROP TABLE IF EXISTS edges;
CREATE TABLE edges (id Int64, ev DateTime64(6), synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY id;
INSERT INTO edges VALUES (1, '2026-11-29 09:00:00', '2026-11-29 10:00:00.999999'),
                         (2, '2026-11-29 09:00:00', '2026-11-29 10:00:01.000000');
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('edges', 'w', key_columns => '{id}')" >/dev/null
    check "$W: DateTime64(6): the first cut takes the row at the cut, to the microsecond" "success 2 2026-11-29 10:00:01" \
        "$(q -F ' ' -c "SELECT status, rows_pulled, watermark_to FROM treble_sync.sync_table('edges')")"
    wh <<'SQL'
INSERT INTO edges VALUES (3, '2026-11-29 09:00:00', '2026-11-29 10:00:01.000001');
SQL
    check "$W: DateTime64(6): a row 1 µs after the cut is pulled, the one at T_prev is not pulled again" \
        "success 1 1 2026-11-29 10:00:01.000001" \
        "$(q -F ' ' -c "SELECT status, rows_pulled, rows_inserted, watermark_to FROM treble_sync.sync_table('edges')")"
    check "$W: DateTime64(6): every row arrived, once, to the microsecond" \
        "1 2026-11-29 10:00:00.999999|2 2026-11-29 10:00:01|3 2026-11-29 10:00:01.000001" \
        "$(q -c "SELECT string_agg(id || ' ' || synced_at, '|' ORDER BY id) FROM edges")"
    # the hot window of fact_sends starts at 2026-11-26 00:00 (cut 2026-11-29 12:xx)
    wh <<'SQL'
INSERT INTO fact_sends VALUES (20, 'at the bound', 20, '2026-11-26 00:00:00', '2026-11-29 12:50:00');
INSERT INTO fact_sends VALUES (21, '1 µs before the bound', 21, '2026-11-25 23:59:59.999999', '2026-11-29 12:50:00');
SQL
    check "$W: DateTime64(6) window: both rows arrive" "success 2" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('fact_sends')")"
    wh <<<"DELETE FROM fact_sends WHERE send_id IN (20, 21);"
    check "$W: DateTime64(6) window: the removal at the bound is applied" "success 1" \
        "$(q -F ' ' -c "SELECT status, rows_deleted FROM treble_sync.sync_table('fact_sends')")"
    check "$W: DateTime64(6) window: the one 1 µs before the bound is outside it, and stays" "21" \
        "$(q -c "SELECT string_agg(send_id::text, ',') FROM fact_sends WHERE send_id IN (20, 21)")"
    q -c "DELETE FROM fact_sends WHERE send_id = 21"

    # -- every type, each value landing exactly
    wh <<'SQL'
DROP TABLE IF EXISTS types;
CREATE TABLE types (id UInt64, u8 UInt8, u16 UInt16, u32 UInt32, i8 Int8, i16 Int16, i32 Int32, i64 Int64,
    dec Decimal(18,6), f32 Float32, f64 Float64, s String, fs FixedString(3), lc LowCardinality(String),
    ns Nullable(String), e Enum8('low' = 1, 'high' = 2), d Date, d32 Date32, dt DateTime,
    dt3 DateTime64(3), dt6 DateTime64(6), dt9 DateTime64(9), uu UUID, arr Array(Int32), m Map(String, UInt8),
    b Bool, synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY id;
INSERT INTO types VALUES
 (18446744073709551615, 255, 65535, 4294967295, -128, -32768, -2147483648, -9223372036854775808,
  -123456789012.123456, 1.5, 0.1, 'tab	and \\ backslash', 'abc', 'lc', NULL, 'high', '2026-11-29', '2200-01-01',
  '2026-11-29 10:00:00', '2026-11-29 10:00:00.123', '2026-11-29 10:00:00.123456', '2026-11-29 10:00:00.123456789',
  '00000000-0000-0000-0000-000000000001', [1, -2], {'k': 1}, true, '2026-11-29 10:00:00'),
 (0, 0, 0, 0, 127, 32767, 2147483647, 9223372036854775807,
  0.000010, -0, -1e300, '', 'xyz', '', 'not null', 'low', '1970-01-01', '1900-01-01',
  '1970-01-01 00:00:00', '2026-11-29 10:00:00', '2026-11-29 10:00:00.000001', '2026-11-29 10:00:00.000000999',
  'ffffffff-ffff-ffff-ffff-ffffffffffff', [], {}, false, '2026-11-29 10:00:00');
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('types', 'w', key_columns => '{id}')" >/dev/null
    check "$W: every type: the sync" "success 2" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('types')")"
    check "$W: every type: the local types" \
        "id numeric(20,0)|u8 smallint|u16 integer|u32 bigint|i8 smallint|i16 smallint|i32 integer|i64 bigint|dec numeric|f32 real|f64 double precision|s text|fs text|lc text|ns text|e text|d date|d32 date|dt timestamp without time zone|dt3 timestamp without time zone|dt6 timestamp without time zone|dt9 timestamp without time zone|uu uuid|arr text|m text|b boolean|synced_at timestamp without time zone" \
        "$(q -c "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), '|' ORDER BY attnum)
                   FROM pg_attribute WHERE attrelid = 'types'::regclass AND attnum > 0 AND NOT attisdropped")"
    # a Decimal keeps the trailing zeros of its scale (0.000010); Float32
    # -0 arrives as -0; a tab arrives raw and a backslash doubled
    # in a record's text; DateTime64(9) is cut to the microsecond, never
    # rounded (.000000999 as .000000; see docs/limits.md)
    check "$W: every type: the values, exactly" \
        '(0,0,0,0,127,32767,2147483647,9223372036854775807,0.000010,-0,-1e+300,"",xyz,"","not null",low,1970-01-01,1900-01-01,"1970-01-01 00:00:00","2026-11-29 10:00:00","2026-11-29 10:00:00.000001","2026-11-29 10:00:00",ffffffff-ffff-ffff-ffff-ffffffffffff,[],{},f,"2026-11-29 10:00:00")|(18446744073709551615,255,65535,4294967295,-128,-32768,-2147483648,-9223372036854775808,-123456789012.123456,1.5,0.1,"tab'$'\t''and \\ backslash",abc,lc,,high,2026-11-29,2200-01-01,"2026-11-29 10:00:00","2026-11-29 10:00:00.123","2026-11-29 10:00:00.123456","2026-11-29 10:00:00.123456",00000000-0000-0000-0000-000000000001,"[1,-2]",{'"'"'k'"'"':1},t,"2026-11-29 10:00:00")' \
        "$(q -c "SELECT string_agg(t::text, '|' ORDER BY id) FROM types t")"

    # -- time zones: DateTime('UTC') into timestamptz; a column in Tokyo's
    # zone, whose text is Tokyo time, through the server in Tokyo
    wh <<'SQL'
DROP TABLE IF EXISTS zones;
CREATE TABLE zones (id Int64, at_utc DateTime('UTC'), at_tokyo DateTime64(6, 'Asia/Tokyo'), synced_at DateTime64(6, 'UTC'))
    ENGINE = MergeTree ORDER BY id;
INSERT INTO zones VALUES (1, '2026-11-29 10:00:00', toDateTime64('2026-11-29 10:00:00.5', 6, 'UTC'), '2026-11-29 10:00:00');
SQL
    q <<'SQL' >/dev/null
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('zones', 'w', key_columns => '{id}', columns => '{id,at_utc,synced_at}',
    column_types => '{"at_utc": "timestamptz"}');
SELECT name FROM treble_sync.add_table('zones', 'w_tokyo', key_columns => '{id}', columns => '{id,at_tokyo,synced_at}',
    local_table => 'zones_tokyo', name => 'zones_tokyo', cursor_column => NULL, mode => 'snapshot',
    column_types => '{"at_tokyo": "timestamptz"}');
SQL
    check "$W: DateTime('UTC') lands in timestamptz as the right instant" "success 2026-11-29 10:00:00+00" \
        "$(q -c "SELECT status FROM treble_sync.sync_table('zones')" | tr -d '\n'; echo -n ' ';
           PGTZ=UTC q -c "SET datestyle = ISO" -c "SELECT at_utc FROM zones")"
    check "$W: DateTime64(6, 'Asia/Tokyo') through a server in Tokyo lands as the same instant" \
        "success 2026-11-29 10:00:00.5+00" \
        "$(q -c "SELECT status FROM treble_sync.sync_table('zones_tokyo')" | tr -d '\n'; echo -n ' ';
           PGTZ=UTC q -c "SET datestyle = ISO" -c "SELECT at_tokyo FROM zones_tokyo")"
}

# Mode append with an integer cursor, and mode snapshot without a cursor.
other_modes() {
    local t
    for t in events plans; do
        wh <<<"DROP TABLE IF EXISTS $t;"
    done
    wh <<'SQL'
CREATE TABLE events (event_id BIGINT NOT NULL, kind VARCHAR(20), at_time TIMESTAMP);
INSERT INTO events VALUES (1, 'open', '2026-11-29 10:00:00'), (2, 'click', '2026-11-29 10:00:01.5');
CREATE TABLE plans (plan_id INTEGER NOT NULL, name VARCHAR(20), price DECIMAL(8,2));
INSERT INTO plans VALUES (1, 'free', 0), (2, 'pro', 9.5), (3, 'team', 29);
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('events', 'w', key_columns => '{event_id}',
                cursor_column => 'event_id', mode => 'append')" \
      -c "SELECT name FROM treble_sync.add_table('plans', 'w', key_columns => '{plan_id}',
                cursor_column => NULL, mode => 'snapshot')" >/dev/null
    check "$W: append with an integer cursor: the first sync" "success 2 2" \
        "$(q -F ' ' -c "SELECT status, rows_inserted, watermark_to FROM treble_sync.sync_table('events')")"
    wh <<<"INSERT INTO events VALUES (3, 'open', '2026-11-29 10:00:02'), (4, 'bounce', '2026-11-29 10:00:03');"
    check "$W: append pulls only past the watermark" "success 2 2 4" \
        "$(q -F ' ' -c "SELECT status, rows_pulled, rows_inserted, watermark_to FROM treble_sync.sync_table('events')")"
    check "$W: and the events arrive whole" "1 open|2 click|3 open|4 bounce" \
        "$(q -c "SELECT string_agg(event_id || ' ' || kind, '|' ORDER BY event_id) FROM events")"
    check "$W: a snapshot without a cursor: the first sync" "success 3" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('plans')")"
    wh <<<"DELETE FROM plans WHERE plan_id = 1; UPDATE plans SET price = 12.5 WHERE plan_id = 2;"
    check "$W: a snapshot removes and updates anywhere" "success 1 1" \
        "$(q -F ' ' -c "SELECT status, rows_updated, rows_deleted FROM treble_sync.sync_table('plans')")"
    check "$W: and equals the warehouse" "2 pro 12.5|3 team 29" \
        "$(q -c "SELECT string_agg(plan_id || ' ' || name || ' ' || price::numeric::float8, '|' ORDER BY plan_id) FROM plans")"
}

# A warehouse table whose rows are all gone (no cursor, so no cut): the
# copy no longer equals it, and verify says so day by day instead of
# failing; the cycle refreshes the hot window at the watermark, under the
# mass-delete guard, by keys and by rows; repair empties the day it is
# given, under that guard too; a table registered on the empty table and never loaded stays
# empty, and verify of it returns no day.
emptied_table() {
    local t create
    case $W in
        postgresql) create="CREATE TABLE gone_rows (id bigint NOT NULL, note text, event_day timestamp(6), synced_at timestamp(6) NOT NULL);" ;;
        mariadb) create="CREATE TABLE gone_rows (id BIGINT NOT NULL, note VARCHAR(20), event_day DATETIME(6), synced_at DATETIME(6) NOT NULL);" ;;
        sqlite) create="CREATE TABLE gone_rows (id INTEGER NOT NULL, note VARCHAR(20), event_day TIMESTAMP, synced_at TIMESTAMP NOT NULL);" ;;
        clickhouse) create="CREATE TABLE gone_rows (id Int64, note Nullable(String), event_day Nullable(DateTime64(6)), synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY id;" ;;
    esac
    wh <<SQL
DROP TABLE IF EXISTS gone_rows;
$create
INSERT INTO gone_rows VALUES (1, 'today', '2026-11-29 08:00:00', '2026-11-29 10:00:00');
INSERT INTO gone_rows VALUES (2, 'yesterday', '2026-11-28 08:00:00', '2026-11-29 10:00:01');
INSERT INTO gone_rows VALUES (3, 'old', '2026-10-01 08:00:00', '2026-11-29 10:00:02');
SQL
    for t in keys rows; do
        q -c "SET client_min_messages = warning" \
          -c "SELECT name FROM treble_sync.add_table('gone_rows', 'w', key_columns => '{id}',
                event_column => 'event_day', hot_window => '3 days', hot_window_check => '$t',
                local_table => 'gone_$t', name => 'gone_$t')" >/dev/null
        check "$W: emptied ($t): the first sync" "success 3 0 0" "$(sync "gone_$t" | cut -d' ' -f1-4)"
    done
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('gone_rows', 'w', key_columns => '{id}',
            mode => 'snapshot', local_table => 'gone_snap', name => 'gone_snap')" >/dev/null
    check "$W: emptied (snapshot): the first sync" "success 3 0 0" "$(sync gone_snap | cut -d' ' -f1-4)"
    wh <<<"DELETE FROM gone_rows WHERE id > 0;"
    check "$W: verify of an emptied warehouse table reports every day of the copy" \
        "2026-10-01 0 1 f|2026-11-28 0 1 f|2026-11-29 0 1 f" \
        "$(q -F ' ' -c "SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('gone_keys')" 2>&1 | paste -sd '|')"
    check "$W: emptied: the mass-delete guard refuses to empty the hot window" \
        "failed|refusing to delete 2 of the 2 rows of the hot window of \"gone_keys\"|3" \
        "$(q -c "SELECT status || '|' || coalesce(split_part(error, E'\n', 1), '') FROM treble_sync.sync_table('gone_keys')" \
             -c "SELECT count(*) FROM gone_keys" 2>&1 | paste -sd '|')"
    check "$W: emptied: repair of a day is refused by the mass-delete guard too (the table may only look empty)" \
        "failed|refusing to delete|3" \
        "$(q -c "SELECT status || '|' || substr(coalesce(error, ''), 1, 18) FROM treble_sync.repair('gone_keys', '2026-11-29')" \
             -c "SELECT count(*) FROM gone_keys" 2>&1 | paste -sd '|')"
    for t in keys rows; do
        q -c "SELECT max_delete_ratio FROM treble_sync.alter_table('gone_$t', max_delete_ratio => 1)" >/dev/null
        check "$W: emptied ($t): the cycle removes the hot window's rows, the watermark stays" \
            "success 0 0 2|2026-11-29 10:00:02|2026-11-29 10:00:02|3" \
            "$(q -c "SELECT status || ' ' || rows_inserted || ' ' || rows_updated || ' ' || rows_deleted,
                            watermark_to, cut FROM treble_sync.sync_table('gone_$t')" \
                 -c "SELECT string_agg(id::text, ',') FROM gone_$t" | paste -sd '|')"
    done
    check "$W: emptied: a rerun changes nothing" "empty 0 0 0" "$(sync gone_keys | cut -d' ' -f1-4)"
    check "$W: emptied (snapshot): the mass-delete guard refuses to empty the copy" \
        "failed|refusing to delete 3 of the 3 rows of the copy of \"gone_snap\"|3" \
        "$(q -c "SELECT status || '|' || coalesce(split_part(error, E'\n', 1), '') FROM treble_sync.sync_table('gone_snap')" \
             -c "SELECT count(*) FROM gone_snap" 2>&1 | paste -sd '|')"
    q -c "SELECT max_delete_ratio FROM treble_sync.alter_table('gone_snap', max_delete_ratio => 1)" >/dev/null
    check "$W: emptied (snapshot): resync makes the copy empty, the watermark stays" \
        "success 0 0 3|2026-11-29 10:00:02|0" \
        "$(q -c "SELECT status || ' ' || rows_inserted || ' ' || rows_updated || ' ' || rows_deleted,
                        watermark_to FROM treble_sync.resync('gone_snap')" \
             -c "SELECT count(*) FROM gone_snap" 2>&1 | paste -sd '|')"
    check "$W: emptied: verify reports the old day the cycles keep" "2026-10-01 0 1 f" \
        "$(q -F ' ' -c "SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('gone_keys')" 2>&1 | paste -sd '|')"
    q -c "SELECT count(*) FROM treble_sync.verify('gone_keys', repair => true)" >/dev/null
    check "$W: emptied: verify's repair empties that day, and then no day differs" "0|0" \
        "$(q -c "SELECT count(*) FROM treble_sync.verify('gone_keys')" -c "SELECT count(*) FROM gone_keys" 2>&1 | paste -sd '|')"
    check "$W: emptied: repair of a day makes it empty, the watermark stays" "success 1 2026-11-29 10:00:02|0" \
        "$(q -c "SELECT status || ' ' || rows_deleted || ' ' || watermark_to FROM treble_sync.repair('gone_rows', '2026-10-01')" \
             -c "SELECT count(*) FROM gone_rows" 2>&1 | paste -sd '|')"
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('gone_rows', 'w', key_columns => '{id}',
            event_column => 'event_day', hot_window => '3 days', local_table => 'gone_never',
            name => 'gone_never')" >/dev/null
    check "$W: emptied: a table never loaded stays empty, without a watermark" "empty 0 0 0|none|0" \
        "$(q -c "SELECT status || ' ' || rows_inserted || ' ' || rows_updated || ' ' || rows_deleted FROM treble_sync.sync_table('gone_never')" \
             -c "SELECT coalesce(watermark, 'none') FROM treble_sync.tables WHERE name = 'gone_never'" \
             -c "SELECT count(*) FROM gone_never" 2>&1 | paste -sd '|')"
    check "$W: emptied: verify of it compares nothing" "0" \
        "$(q -c "SELECT count(*) FROM treble_sync.verify('gone_never')" 2>&1)"
    wh <<<"INSERT INTO gone_rows VALUES (4, 'back', '2026-11-29 09:00:00', '2026-11-29 11:00:00');"
    check "$W: emptied: rows that come back land" "success 1 0 0|success 1 0 0" \
        "$({ sync gone_keys; sync gone_never; } | cut -d' ' -f1-4 | paste -sd '|')"
}

# MariaDB is read in blocks, its slots sized from the declared sizes: a
# value as long as its column allows (in characters beyond the Basic
# Multilingual Plane, two UTF-16 units each) must arrive whole, and BIGINT
# UNSIGNED beyond a signed 64-bit integer too.
values_at_their_limits() {
    wh <<'SQL'
DROP TABLE IF EXISTS limits;
CREATE TABLE limits (id BIGINT UNSIGNED NOT NULL, short VARCHAR(2), code CHAR(3), amount DECIMAL(30,10),
                     f FLOAT, synced_at DATETIME(6));
INSERT INTO limits VALUES (18446744073709551615, '🚀🚀', 'abc', 12345678901234567890.0123456789, 217341.4,
                           '2026-11-29 10:00:00.000001'),
                          (1, '', NULL, -0.0000000001, 3.4028234e38, '2026-11-29 10:00:00.999999'),
                          (2, NULL, 'é', NULL, 1.4e-45, '2026-11-29 10:00:01');
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('limits', 'w', key_columns => '{id}')" >/dev/null
    check "$W: values at their declared limits: the sync" "success 3" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('limits')")"
    # a FLOAT with every digit of its float (its server's text has 6)
    check "$W: values at their declared limits arrive whole" \
        "(1,\"\",,-0.0000000001,3.4028235e+38,\"2026-11-29 10:00:00.999999\")|(2,,é,,1e-45,\"2026-11-29 10:00:01\")|(18446744073709551615,🚀🚀,abc,12345678901234567890.0123456789,217341.4,\"2026-11-29 10:00:00.000001\")" \
        "$(q -c "SELECT string_agg(t::text, '|' ORDER BY id) FROM limits t")"
}

# MariaDB zero dates: as data a bad row, never a BC date or another day;
# as a cursor no time, left out of the cut and reported with the stamps
# beyond the warehouse's clock (the year 2999), while later rows arrive.
zero_dates() {
    wh <<'SQL'
SET SESSION sql_mode = '';
DROP TABLE IF EXISTS zeros;
CREATE TABLE zeros (id INT NOT NULL, at DATETIME(6), day DATE, synced_at DATETIME(6));
INSERT INTO zeros VALUES (1, '2026-11-28 12:34:56.789012', '2026-11-28', NOW(6) - INTERVAL 2 HOUR),
                         (2, '0000-00-00 00:00:00', '2026-11-28', NOW(6) - INTERVAL 2 HOUR),
                         (3, '2026-11-28 00:00:00', '2026-02-00', NOW(6) - INTERVAL 2 HOUR),
                         (4, '2026-11-28 00:00:00', '2026-11-28', '0000-00-00 00:00:00'),
                         (5, '2026-11-28 00:00:00', '2026-11-28', '2999-01-01 00:00:00'),
                         (6, '0001-01-01 00:00:00', '1000-01-01', NOW(6) - INTERVAL 2 HOUR);
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('zeros', 'w', key_columns => '{id}',
                                                on_bad_row => 'skip', max_bad_row_ratio => 1)" >/dev/null
    check "$W: zero dates are bad rows; zero and far-future cursors are left out and reported" \
        "success|2|2|2 rows with a cursor \"synced_at\" beyond the warehouse's clock or not a time are not synced" \
        "$(q -c "SELECT status, rows_inserted, rows_bad, warnings FROM treble_sync.sync_table('zeros')")"
    check "$W: the rows with dates land exactly" \
        "(1,\"2026-11-28 12:34:56.789012\",2026-11-28)|(6,\"0001-01-01 00:00:00\",1000-01-01)" \
        "$(q -c "SET datestyle = ISO" -c "SELECT string_agg((id, at, day)::text, '|' ORDER BY id) FROM zeros")"
    wh <<<"INSERT INTO zeros VALUES (7, NULL, NULL, NOW(6) - INTERVAL 1 HOUR);"
    check "$W: a later row still arrives" "success|1" \
        "$(q -c "SELECT status, rows_inserted FROM treble_sync.sync_table('zeros')")"
}

# MariaDB compares a text key in its column's collation, which for
# utf8mb4 is case- and accent-insensitive by default (utf8mb4_general_ci)
# and pads with spaces: 'a', 'A', 'é', 'e' and 'e ' are one key there and
# five in the copy. treble_sync compares keys as their bytes on both sides
# (the copy's text equality, and BINARY in the warehouse's statements), so
# the copy holds every spelling the warehouse holds, each as its own key,
# and verify and repair agree with the cycles: the days match after the
# first sync, after a spelling is removed and its day repaired, and after
# a spelling is rewritten in place.
ci_keys() {
    wh <<'SQL'
DROP TABLE IF EXISTS ci_keys;
CREATE TABLE ci_keys (k VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL, v INT,
    synced_at DATETIME(6)) DEFAULT CHARSET = utf8mb4;
INSERT INTO ci_keys VALUES ('a', 1, NOW(6) - INTERVAL 3 HOUR), ('A', 2, NOW(6) - INTERVAL 2 HOUR),
    ('é', 3, NOW(6) - INTERVAL 3 HOUR), ('e', 4, NOW(6) - INTERVAL 2 HOUR),
    ('e ', 5, NOW(6) - INTERVAL 2 HOUR), ('b', 6, NOW(6) - INTERVAL 2 HOUR);
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('ci_keys', 'w', key_columns => '{k}', event_column => 'synced_at')" >/dev/null
    check "$W: keys equal under a case- and accent-insensitive collation land as their own keys" \
        "success|6|A 2,a 1,b 6,e 4,e  5,é 3" \
        "$(q -c "SELECT status, rows_inserted FROM treble_sync.sync_table('ci_keys')" \
             -c "SELECT string_agg(k || ' ' || v, ',' ORDER BY k COLLATE \"C\") FROM ci_keys" | paste -sd '|')"
    check "$W: verify finds every day matching" "t|6" \
        "$(q -c "SELECT bool_and(match), sum(warehouse_rows) FROM treble_sync.verify('ci_keys')")"
    wh <<<"DELETE FROM ci_keys WHERE k = BINARY 'A'; UPDATE ci_keys SET k = 'É', synced_at = NOW(6) - INTERVAL 1 HOUR WHERE k = BINARY 'é';"
    q -c "SELECT treble_sync.repair('ci_keys', CAST(now() AS date))" \
      -c "SELECT treble_sync.repair('ci_keys', CAST(now() - interval '3 hours' AS date))" >/dev/null
    check "$W: repair converges on the spellings the warehouse holds" \
        "a 1,b 6,e 4,e  5,É 3|t|5" \
        "$(q -c "SELECT string_agg(k || ' ' || v, ',' ORDER BY k COLLATE \"C\") FROM ci_keys" \
             -c "SELECT bool_and(match), sum(warehouse_rows) FROM treble_sync.verify('ci_keys')" | paste -sd '|')"
}

# A warehouse file that is not there is an error, and is not created.
missing_file() {
    local out
    # in a directory the server processes may write to
    rm -f "$TS_DIR/missing.db"
    out=$(q -v conn="Driver={SQLite3};Database=$TS_DIR/missing.db" 2>&1 <<'SQL'
CREATE SERVER missing FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'conn');
CREATE USER MAPPING FOR CURRENT_USER SERVER missing;
SELECT treble_sync.add_table('fact_sends', 'missing', key_columns => '{send_id}', name => 'missing');
SQL
)
    check "$W: a warehouse file that is not there fails registration" \
        'CONTEXT:  connecting to warehouse server "missing"' "$(grep -m 1 '^CONTEXT:' <<<"$out")"
    check "$W: and is not created" "absent" "$([[ -e $TS_DIR/missing.db ]] && echo present || echo absent)"
}

# SQLite keeps any value in a TIMESTAMP column: a number there (Unix
# seconds) fails the cycle with an error that says which form is needed.
timestamps_not_text() {
    local out
    wh <<'SQL'
DROP TABLE IF EXISTS epochs;
CREATE TABLE epochs (id INTEGER, synced_at TIMESTAMP);
INSERT INTO epochs VALUES (1, 1764417600), (2, '2026-11-29 10:00:00');
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('epochs', 'w', key_columns => '{id}')" >/dev/null
    out=$(q -c "SELECT status, error FROM treble_sync.sync_table('epochs')")
    check "$W: a number in a TIMESTAMP column fails the cycle, saying which form is needed" \
        "failed|warehouse column \"synced_at\" of table \"epochs\" holds a timestamp in a form that cannot be compared
DETAIL: SQLite compares timestamps as text, and a value in another form than treble_sync's bounds sorts apart from them: rows would be skipped or the watermark would stop.
HINT: Store timestamps as text in the form 'YYYY-MM-DD HH:MM:SS', with up to six fraction digits, as datetime() writes them." \
        "$out"
    check "$W: and nothing of it was copied" "0" "$(q -c "SELECT count(*) FROM epochs")"
}

odd_identifiers() {
    case $W in
        postgresql|sqlite) wh <<'SQL'
DROP TABLE IF EXISTS "Send Log";
CREATE TABLE "Send Log" ("Send ID" bigint, "select" varchar(20), "we""ird`col" integer, "Synced At" timestamp);
INSERT INTO "Send Log" VALUES (1, 'a', 5, '2026-11-29 10:00:00.5');
SQL
            ;;
        mariadb) wh <<'SQL'
DROP TABLE IF EXISTS `Send Log`;
CREATE TABLE `Send Log` (`Send ID` BIGINT, `select` VARCHAR(20), `we"ird``col` INT, `Synced At` DATETIME(6));
INSERT INTO `Send Log` VALUES (1, 'a', 5, '2026-11-29 10:00:00.5');
SQL
            ;;
        # no " or ' in a name: the driver's scan for ? parameters takes
        # them for string quotes even inside backticks (docs/warehouses.md)
        clickhouse) wh <<'SQL'
DROP TABLE IF EXISTS `Send Log`;
CREATE TABLE `Send Log` (`Send ID` Int64, `select` String, `we``ird col` Int32, `Synced At` DateTime64(6))
    ENGINE = MergeTree ORDER BY `Send ID`;
INSERT INTO `Send Log` VALUES (1, 'a', 5, '2026-11-29 10:00:00.5');
SQL
            ;;
    esac
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('Send Log', 'w', key_columns => '{\"Send ID\"}',
                                                  cursor_column => 'Synced At')" >/dev/null
    check "$W: names that need quoting: the first sync" "success 1" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('Send Log')")"
    wh <<<"INSERT INTO ${Q}Send Log${Q} VALUES (2, 'b', 6, '2026-11-29 10:00:01');"
    check "$W: names that need quoting: a delta" "success 1" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('Send Log')")"
    check "$W: names that need quoting: every column arrives" \
        "(1,a,5,\"2026-11-29 10:00:00.5\")|(2,b,6,\"2026-11-29 10:00:01\")" \
        "$(q -c "SELECT string_agg(t::text, '|' ORDER BY \"Send ID\") FROM \"Send Log\" t")"
}

# The table again, through a server that slices every pull of more than one
# row, next to the copy made in one pull.
# A sync group of a campaigns table and a sends table on this warehouse:
# cycled together (both at once, or neither), never a send without its
# campaign in the copy, and a failing member applies nothing.
group_cycles() {
    local camp_types send_types
    case $W in
        clickhouse)
            camp_types="id Int64, title Nullable(String), created_at DateTime64(6), synced_at DateTime64(6)"
            send_types="id Int64, camp_id Nullable(Int64), scheduled_at DateTime64(6), synced_at DateTime64(6)" ;;
        mariadb)
            camp_types="id BIGINT NOT NULL, title VARCHAR(100), created_at DATETIME(6), synced_at DATETIME(6) NOT NULL"
            send_types="id BIGINT NOT NULL, camp_id BIGINT, scheduled_at DATETIME(6), synced_at DATETIME(6) NOT NULL" ;;
        *)
            camp_types="id BIGINT NOT NULL, title VARCHAR(100), created_at TIMESTAMP, synced_at TIMESTAMP NOT NULL"
            send_types="id BIGINT NOT NULL, camp_id BIGINT, scheduled_at TIMESTAMP, synced_at TIMESTAMP NOT NULL" ;;
    esac
    local engine=""
    [[ $W == clickhouse ]] && engine=" ENGINE = MergeTree ORDER BY id"
    wh <<SQL
DROP TABLE IF EXISTS g_camp;
DROP TABLE IF EXISTS g_send;
CREATE TABLE g_camp ($camp_types)$engine;
CREATE TABLE g_send ($send_types)$engine;
INSERT INTO g_camp VALUES (1, 'one', '2026-11-29 08:00:00', '2026-11-29 08:00:00');
INSERT INTO g_send VALUES (10, 1, '2026-11-29 08:30:00', '2026-11-29 08:30:00');
SQL
    q >/dev/null <<'SQL'
SELECT name FROM treble_sync.add_table('g_camp', 'w', key_columns => '{id}', event_column => 'created_at');
SELECT name FROM treble_sync.add_table('g_send', 'w', key_columns => '{id}', event_column => 'scheduled_at');
SELECT name FROM treble_sync.add_group('g', '{g_camp, g_send}');
SQL
    local orphans="SELECT count(*) FROM g_send s WHERE NOT EXISTS (SELECT 1 FROM g_camp c WHERE c.id = s.camp_id)"
    local counts="SELECT (SELECT count(*) FROM g_camp) || ' ' || (SELECT count(*) FROM g_send)"
    gsync() { q -c "SELECT string_agg(status, ',' ORDER BY table_name) FROM treble_sync.sync_group('g')"; }
    check "$W: a group's first cycle loads both tables" "success,success 1 1" "$(gsync) $(q -c "$counts")"
    wh <<'SQL'
INSERT INTO g_camp VALUES (2, 'two', '2026-11-29 09:00:00', '2026-11-29 09:00:00');
INSERT INTO g_send VALUES (20, 2, '2026-11-29 09:05:00', '2026-11-29 09:05:00');
INSERT INTO g_send VALUES (21, 2, '2026-11-29 09:06:00', '2026-11-29 09:06:00');
SQL
    check "$W: a campaign and its sends arrive in one group cycle" "success,success 2 3 0" \
        "$(gsync) $(q -c "$counts") $(q -c "$orphans")"
    check "$W: a member is not cycled alone" "55000" \
        "$(q -c "DO \$\$ BEGIN PERFORM treble_sync.sync_table('g_send'); EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', SQLSTATE; END \$\$" 2>&1 | sed 's/^NOTICE: *//')"
    q -c "SELECT kind FROM treble_sync.add_check('g_camp', 'range', column_name => 'id', max => 2)" >/dev/null
    wh <<'SQL'
INSERT INTO g_camp VALUES (3, 'three', '2026-11-29 10:00:00', '2026-11-29 10:00:00');
INSERT INTO g_send VALUES (30, 3, '2026-11-29 10:05:00', '2026-11-29 10:05:00');
SQL
    check "$W: a member's failing check fails the group and applies nothing" "failed,failed 2 3" \
        "$(gsync) $(q -c "$counts")"
    q -c "SELECT treble_sync.drop_check(check_id) FROM treble_sync.checks c JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'g_camp'" >/dev/null
    check "$W: the next group cycle applies both" "success,success 3 4 0" \
        "$(gsync) $(q -c "$counts") $(q -c "$orphans")"
}

sliced_pulls() {
    local log_start out
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('fact_sends', 'w_sliced', key_columns => '{send_id}',
                event_column => 'scheduled_at', local_table => 'sends_sliced', name => 'sends_sliced')" >/dev/null
    q -c "ALTER DATABASE ts_$W SET log_min_messages = debug1"
    log_start=$(stat -c %s "$TS_DIR/dest.log")
    check "$W: in slices: the first sync" "success" "$(q -c "SELECT status FROM treble_sync.sync_table('sends_sliced')")"
    check_copy "$W: in slices: the copy equals the warehouse" sends_sliced
    wh <<'SQL'
INSERT INTO fact_sends VALUES (11, 'sliced', 11, '2026-11-29 12:31:00', '2026-11-29 12:40:00.000001');
INSERT INTO fact_sends VALUES (11, 'sliced, again', 11.5, '2026-11-29 12:31:00', '2026-11-29 12:40:00.000002');
UPDATE fact_sends SET amount = 99, synced_at = '2026-11-29 12:40:00.000003' WHERE send_id = 3;
DELETE FROM fact_sends WHERE send_id = 9;
SQL
    out=$(q -F ' ' -c "SELECT status, rows_inserted, rows_updated, rows_deleted FROM treble_sync.sync_table('sends_sliced')")
    check "$W: in slices: a delta with two versions of a new key, a correction and a removal" "success 1 1 1" "$out"
    check_copy "$W: in slices: the copy equals the warehouse again" sends_sliced
    q -c "ALTER DATABASE ts_$W RESET log_min_messages"
    if [[ $W == postgresql || $W == clickhouse ]]; then
        check "$W: the driver streams: no slices" "0" \
            "$(tail -c +$((log_start + 1)) "$TS_DIR/dest.log" | grep -c 'rows of "sends_sliced" in')"
    else
        # the first sync, then the delta and the hot window's keys
        # (hot_window_check 'keys'), each a pull of its own
        check "$W: all three pulls went in slices" "3" \
            "$(tail -c +$((log_start + 1)) "$TS_DIR/dest.log" | grep -Ec 'rows of "sends_sliced" in [0-9]+ slices')"
    fi
    out=$(sync)
    check "$W: the copy made in one pull takes the same delta" "success 1 1 1" "${out% *}"
}

# Hold an exclusive lock on fact_sends until $TMP/release exists (at most
# 20 s), feeding each client its statements as it goes.
hold_lock() {
    local i
    case $W in
        postgresql) echo "BEGIN; LOCK TABLE fact_sends IN ACCESS EXCLUSIVE MODE;" ;;
        mariadb)    echo "LOCK TABLES fact_sends WRITE;" ;;
        # wait for readers, such as a worker of an earlier cycle that is
        # still closing its connection
        sqlite)     echo ".timeout 10000"; echo "BEGIN EXCLUSIVE;" ;;
    esac
    for ((i = 0; i < 200; i++)); do
        [[ -e $TMP/release ]] && break
        sleep 0.1
    done
    case $W in
        mariadb) echo "UNLOCK TABLES;" ;;
        *)       echo "COMMIT;" ;;
    esac
}

# Whether another session holds hold_lock's lock, asked of the warehouse.
lock_is_held() {
    case $W in
        postgresql)
            [[ $(wh -c "SELECT count(*) FROM pg_locks WHERE granted AND mode = 'AccessExclusiveLock'
                          AND relation = 'fact_sends'::regclass") == 1 ]] ;;
        mariadb)
            [[ -n $(wh <<<"SHOW OPEN TABLES FROM wh WHERE \`Table\` = 'fact_sends' AND In_use > 0") ]] ;;
        sqlite)
            ! sqlite3 -batch "$TS_SQLITE_DB" "SELECT count(*) FROM fact_sends" >/dev/null 2>&1 ;;
    esac
}

cancel_while_locked() {
    local fp wm status i
    [[ $W == clickhouse ]] && return 0     # ClickHouse has no locks to wait on
    fp=$(fingerprint)
    wm=$(watermark)
    rm -f "$TMP/release"
    hold_lock | wh >/dev/null &
    for ((i = 0; i < 100; i++)); do
        lock_is_held && break
        sleep 0.1
    done
    q -c "SET statement_timeout = '1s'" -c "SELECT treble_sync.sync_table('fact_sends')" >/dev/null 2>&1
    # the worker ends on its own once cancelled; give it up to 15 s, less
    # than the lock is held
    for ((i = 0; i < 150; i++)); do
        status=$(q -c "SELECT status || ' ' || coalesce(split_part(error, ':', 1), '(no error)')
                         FROM treble_sync.runs ORDER BY run_id DESC LIMIT 1")
        [[ $status == running* ]] || break
        sleep 0.1
    done
    check "$W: a cycle waiting on a warehouse lock is cancelled while the lock is held" \
        "failed cancelled" "$status"
    touch "$TMP/release"
    wait
    check "$W: the cancelled cycle changed nothing" "$fp $wm" "$(fingerprint) $(watermark)"
}

# The warehouse out of reach: MariaDB's server stopped, the SQLite file
# unreadable to the destination's server processes.
warehouse_unreachable() {
    local fp wm out i
    [[ $W == postgresql ]] && return 0     # test/reliability/faults.t does it
    fp=$(fingerprint)
    wm=$(watermark)
    case $W in
        mariadb) mariadb-admin --no-defaults -S "$TS_MARIADB_SOCK" -uroot shutdown ;;
        sqlite)  chmod 000 "$TS_SQLITE_DB" ;;
        clickhouse)
            kill -TERM "$(cat "$TS_DIR/clickhouse.pid")"
            for ((i = 0; i < 100; i++)); do
                curl -sf -m 1 "http://127.0.0.1:$TS_CLICKHOUSE_PORT/ping" >/dev/null 2>&1 || break
                sleep 0.1
            done ;;
    esac
    out=$(q -F ' ' -c "SELECT status, error IS NOT NULL FROM treble_sync.sync_table('fact_sends')" 2>&1)
    check "$W: a cycle with the warehouse out of reach fails" "failed t" "$out"
    check "$W: and changes nothing" "$fp $wm" "$(fingerprint) $(watermark)"
    if [[ $W == clickhouse ]]; then
        # the driver says HY000 for everything; a refused connection is
        # still a connection failure, retried like the other drivers' 08xxx
        check "$W: a refused connection is reported as a connection failure" \
            "t" "$(q -c "SELECT error LIKE '%Connection refused%' AND error LIKE '%The driver''s SQLSTATE is HY000%'
                         FROM treble_sync.runs ORDER BY run_id DESC LIMIT 1")"
    fi
    case $W in
        mariadb|clickhouse) "$(dirname "$0")/../../.ci/clusters" start "$TS_DIR" >/dev/null 2>&1 ;;
        sqlite)  chmod 644 "$TS_SQLITE_DB" ;;
    esac
    wh <<<"INSERT INTO fact_sends VALUES (10, 'back again', 10, '2026-11-29 12:20:00', '2026-11-29 12:30:00');"
    out=$(sync)
    check "$W: once it is back, the next cycle converges" "success 1 0 0" "${out% *}"
    check_copy "$W: and the copy equals the warehouse"
}

# A wrong password: the cycle fails, and the password is in no message.
wrong_password() {
    local bad='Wr0ng;{pa}}ss}=x'"'"'"' out
    [[ $W == sqlite ]] && return 0    # a file takes no login
    # ClickHouse's driver cannot carry ; { } = in a password (option.c refuses them)
    [[ $W == clickhouse ]] && bad='Wr0ng-pa55.word'"'"'"'
    q -v pw="$bad" <<<"ALTER USER MAPPING FOR CURRENT_USER SERVER w OPTIONS (SET password :'pw');"
    out=$(q -c "SET client_min_messages = debug1" \
            -c "SELECT status, error FROM treble_sync.sync_table('fact_sends')" 2>&1)
    check "$W: a wrong password fails the cycle" "failed" "$(q -c "SELECT status FROM treble_sync.runs
                                                                   ORDER BY run_id DESC LIMIT 1")"
    if [[ $out == *"$bad"* || $out == *"pa}}ss"* || $out == *"pa}ss"* ]]; then
        nok "$W: and the password appears in no message"
        echo "$out" | sed 's/^/#   /'
    else
        ok "$W: and the password appears in no message"
    fi
    if [[ $W == clickhouse ]]; then
        q -v pw="$TS_CLICKHOUSE_PASSWORD" <<<"ALTER USER MAPPING FOR CURRENT_USER SERVER w OPTIONS (SET password :'pw');"
    else
        q <<<"ALTER USER MAPPING FOR CURRENT_USER SERVER w OPTIONS (SET password '$(sed "s/'/''/g" <<<"$TS_WH_PASSWORD")');"
    fi
    check "$W: with the right one the next cycle works" "empty" \
        "$(q -c "SELECT status FROM treble_sync.sync_table('fact_sends')")"
}

# 150,000 rows, one every 172.8 s over 300 days up to 2026-11-29 12:00
large_first_load() {
    local expected_slices log_start
    case $W in
        postgresql) wh <<'SQL'
DROP TABLE IF EXISTS big_sends;
CREATE TABLE big_sends AS
SELECT i::bigint AS send_id, 'send ' || i AS campaign,
       timestamp '2026-11-29 12:00' - (150000 - i) * interval '172.8 seconds' AS scheduled_at,
       timestamp '2026-11-29 12:00' - (150000 - i) * interval '172.8 seconds' AS synced_at
  FROM generate_series(1, 150000) i;
SQL
            expected_slices="" ;;
        mariadb) wh <<'SQL'
DROP TABLE IF EXISTS big_sends;
CREATE TABLE big_sends (send_id BIGINT, campaign TEXT, scheduled_at DATETIME(6), synced_at DATETIME(6));
INSERT INTO big_sends
SELECT seq, CONCAT('send ', seq), t, t
  FROM (SELECT seq, TIMESTAMP'2026-11-29 12:00:00' - INTERVAL ((150000 - seq) * 172800000) MICROSECOND AS t
          FROM seq_1_to_150000) s;
SQL
            expected_slices=2 ;;
        clickhouse) wh <<'SQL'
DROP TABLE IF EXISTS big_sends;
CREATE TABLE big_sends (send_id Int64, campaign String, scheduled_at DateTime64(6), synced_at DateTime64(6))
    ENGINE = MergeTree ORDER BY send_id;
INSERT INTO big_sends
SELECT n, concat('send ', toString(n)), t, t
  FROM (SELECT number + 1 AS n,
               toDateTime64('2026-11-29 12:00:00', 6) - toIntervalMicrosecond((150000 - n) * 172800000) AS t
          FROM numbers(150000));
SQL
            expected_slices="" ;;
        sqlite) wh <<'SQL'
DROP TABLE IF EXISTS big_sends;
CREATE TABLE big_sends (send_id INTEGER, campaign TEXT, scheduled_at TIMESTAMP, synced_at TIMESTAMP);
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 150000)
INSERT INTO big_sends
SELECT n, 'send ' || n, t, t
  FROM (SELECT n, strftime('%Y-%m-%d %H:%M:%f', '2026-11-29 12:00:00',
                           '-' || ((150000 - n) * 172.8) || ' seconds') AS t FROM i);
SQL
            expected_slices=2 ;;
    esac
    q -c "SELECT name FROM treble_sync.add_table('big_sends', 'w', key_columns => '{send_id}',
                                                event_column => 'scheduled_at')" >/dev/null
    # the worker says in the log how it pulled
    q -c "ALTER DATABASE ts_$W SET log_min_messages = debug1"
    log_start=$(stat -c %s "$TS_DIR/dest.log")
    check "$W: a large first load succeeds" "success 150000" \
        "$(q -F ' ' -c "SELECT status, rows_inserted FROM treble_sync.sync_table('big_sends')")"
    check "$W: and arrives whole" "150000 11250075000 2026-11-29 12:00:00" \
        "$(q -F ' ' -c "SELECT count(*), sum(send_id), max(synced_at) FROM big_sends")"
    # every row corrected, a year later, each at its own time
    case $W in
        postgresql) wh <<<"UPDATE big_sends SET campaign = campaign || ' ✓', synced_at = synced_at + interval '1 year';" ;;
        mariadb)    wh <<<"UPDATE big_sends SET campaign = CONCAT(campaign, ' ✓'), synced_at = synced_at + INTERVAL 1 YEAR;" ;;
        sqlite)     wh <<<"UPDATE big_sends SET campaign = campaign || ' ✓', synced_at = strftime('%Y-%m-%d %H:%M:%f', synced_at, '+1 year');" ;;
        clickhouse) wh <<<"UPDATE big_sends SET campaign = concat(campaign, ' ✓'), synced_at = synced_at + INTERVAL 1 YEAR WHERE 1;" ;;
    esac
    # stamped up to a year ahead of the warehouse's clock: a cut takes them
    # only with treble_sync.cursor_max_lead raised past that
    check "$W: a delta of 150,000 corrections succeeds" "success 150000" \
        "$(q -F ' ' -c "SET treble_sync.cursor_max_lead = '3650d'" \
                    -c "SELECT status, rows_updated FROM treble_sync.sync_table('big_sends')")"
    check "$W: and arrives whole" "150000 2027-11-29 12:00:00" \
        "$(q -F ' ' -c "SELECT count(*) FILTER (WHERE campaign LIKE '% ✓'), max(synced_at) FROM big_sends")"
    q -c "ALTER DATABASE ts_$W RESET log_min_messages"
    if [[ -n $expected_slices ]]; then
        check "$W: both pulls went in slices" "2" \
            "$(tail -c +$((log_start + 1)) "$TS_DIR/dest.log" |
               grep -c "pulled 150000 rows of \"big_sends\" in $expected_slices slices")"
    else
        check "$W: the driver streams: no slices" "0" \
            "$(tail -c +$((log_start + 1)) "$TS_DIR/dest.log" | grep -c 'rows of "big_sends" in')"
    fi
}

for W in "${WAREHOUSES[@]}"; do
    if [[ $W == mariadb && -z ${TS_MARIADB_PORT:-} ]]; then
        nok "mariadb: no MariaDB warehouse was started (install mariadb-server)"
        continue
    fi
    if [[ $W == clickhouse && -z ${TS_CLICKHOUSE_PORT:-} ]]; then
        nok "clickhouse: no ClickHouse warehouse was started (run .ci/clickhouse setup as root; TS_WAREHOUSES='postgresql mariadb sqlite' leaves it out)"
        continue
    fi
    run_warehouse
done
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS ts_postgresql" -c "DROP DATABASE IF EXISTS ts_mariadb" \
    -c "DROP DATABASE IF EXISTS ts_sqlite" -c "DROP DATABASE IF EXISTS ts_clickhouse" >/dev/null
echo "1..$n"
exit $((failed > 0))
