#!/usr/bin/env bash
#
# Hostile text through MariaDB and ClickHouse, read as bytes: latin1 bytes
# 0x80-0x9F (cp1252 in MariaDB, five of them undefined), 4-byte characters,
# a value above 1 MB with a 4-byte character at its end, text keys that
# the key-only window check sends back; ClickHouse FixedString (exact
# width, shorter, a multi-byte character cut at the width), LowCardinality
# and long ClickHouse Strings read whole, at lengths around the read
# buffer's sizes.  Each value lands
# exactly as the warehouse's own conversion to UTF-8 gives it, or is a bad
# row; read ahead and by the worker.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced. Prints TAP.

set -u
DB=ts_attack_bytes
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
fresh_db

if [[ -n ${TS_MARIADB_PORT:-} ]]; then
    add_server m mariadb login
    my <<'SQL'
DROP TABLE IF EXISTS attack_texts;
CREATE TABLE attack_texts (k VARCHAR(40) PRIMARY KEY, note MEDIUMTEXT, l1 VARCHAR(40) CHARACTER SET latin1,
    happened_at DATETIME(6), synced_at DATETIME(6)) CHARACTER SET utf8mb4;
INSERT INTO attack_texts VALUES
 ('😀', 'emoji key', X'808182838D8F909D9FA0FF', NOW() - INTERVAL 1 HOUR, '2026-11-28 10:00:00'),
 ('€', 'euro key', X'80', NOW() - INTERVAL 1 HOUR, '2026-11-28 10:00:00'),
 ('big', CONCAT(REPEAT('y', 1100000), '😀'), 'x', NOW() - INTERVAL 1 HOUR, '2026-11-28 10:00:00'),
 ('ｆｕｌｌ', 'fullwidth key', NULL, NOW() - INTERVAL 1 HOUR, '2026-11-28 10:00:00');
SQL
    expected=$(my -N -e "SELECT k, COALESCE(HEX(CONVERT(l1 USING utf8mb4)), ''), LENGTH(note), HEX(RIGHT(note, 1)) FROM attack_texts ORDER BY HEX(k)" | tr '\t' '|')
    for ahead in on off; do
        t=my_$ahead
        q -c "SET client_min_messages = warning" \
          -c "SELECT name FROM treble_sync.add_table('attack_texts', 'm', key_columns => '{k}', event_column => 'happened_at', name => '$t', local_table => '$t')" >/dev/null
        check "mariadb, read_ahead $ahead: a first load" "success 4 0" \
            "$(q -F ' ' -c "SET treble_sync.read_ahead = $ahead" -c "SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('$t')")"
        check "mariadb, read_ahead $ahead: every value as MariaDB converts it to UTF-8" "$expected" \
            "$(q -c "SELECT k, upper(encode(convert_to(l1, 'UTF8'), 'hex')), octet_length(note), upper(encode(convert_to(right(note, 1), 'UTF8'), 'hex')) FROM $t ORDER BY encode(convert_to(k, 'UTF8'), 'hex')")"
    done
    # corrections with an older cursor: the key-only window check sends the
    # text keys back as parameters
    my -e "UPDATE attack_texts SET note = CONCAT(note, ' again'), synced_at = '2026-11-28 09:00:00' WHERE k <> 'big'"
    check "mariadb: corrections of 4-byte, euro and fullwidth keys pulled again by key" "success 3" \
        "$(q -F ' ' -c "SELECT status, rows_updated FROM treble_sync.sync_table('my_off')")"
    check "mariadb: they landed" "3" "$(q -c "SELECT count(*) FROM my_off WHERE note LIKE '% again'")"
    my -e "DELETE FROM attack_texts WHERE k = '😀'"
    check "mariadb: a 4-byte key deleted in the warehouse is deleted from the copy" "success 1" \
        "$(q -F ' ' -c "SELECT status, rows_deleted FROM treble_sync.sync_table('my_off')")"
    check "mariadb: the copy holds the other three" "3" "$(q -c "SELECT count(*) FROM my_off")"
    my -e "DROP TABLE IF EXISTS attack_texts"
fi

if [[ -n ${TS_CLICKHOUSE_PORT:-} ]]; then
    add_server c clickhouse
    ch <<'SQL'
DROP TABLE IF EXISTS attack_fixed;
CREATE TABLE attack_fixed (k String, f FixedString(3), lc LowCardinality(String), s String, synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY k;
INSERT INTO attack_fixed VALUES ('exact', '€', 'a', 'x', '2026-11-28 10:00:00'),
    ('short', 'ab', 'b', 'x', '2026-11-28 10:00:00'),
    ('cut', 'a\xE2\x82', 'c', 'x', '2026-11-28 10:00:00'),
    ('lc bad', 'abc', 'd\xFF', 'x', '2026-11-28 10:00:00'),
    ('good', 'abc', 'f', '😀', '2026-11-28 10:00:00');
SQL
    for ahead in on off; do
        t=ch_$ahead
        q -c "SET client_min_messages = warning" \
          -c "SELECT name FROM treble_sync.add_table('attack_fixed', 'c', key_columns => '{k}', name => '$t', local_table => '$t', on_bad_row => 'quarantine', max_bad_row_ratio => 1)" >/dev/null
        check "clickhouse, read_ahead $ahead: 5 pulled, 2 land, 3 bad" "success 5 2 3" \
            "$(q -F ' ' -c "SET treble_sync.read_ahead = $ahead" -c "SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('$t')")"
        check "clickhouse, read_ahead $ahead: the rest exactly" "exact|€|a|1|x,good|abc|f|1|😀" \
            "$(q -c "SELECT string_agg(concat_ws('|', k, f, lc, length(s), right(s, 1)), ',' ORDER BY k) FROM $t")"
        check "clickhouse, read_ahead $ahead: the bad rows" "cut|f|text that is not valid UTF-8,lc bad|lc|text that is not valid UTF-8,short|f|text with a NUL byte, which PostgreSQL text cannot hold" \
            "$(q -c "SELECT string_agg(concat_ws('|', key, column_name, reason), ',' ORDER BY key) FROM treble_sync.quarantine WHERE table_name = '$t'")"
    done
    ch <<<"DROP TABLE IF EXISTS attack_fixed"

    # long Strings read whole by SQLGetData, whose ClickHouse driver starts
    # every call again from the value's first byte and ends binary data with
    # a NUL like a string: lengths around the read buffer's sizes, a 4-byte
    # character at the end, rows of varying lengths in one pull (the buffer
    # is kept from row to row)
    ch <<'SQL'
DROP TABLE IF EXISTS attack_long;
CREATE TABLE attack_long (k UInt32, s String, synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY k;
INSERT INTO attack_long SELECT n, concat(repeat('y', n - 4), '😀'), '2026-11-28 10:00:00' FROM (SELECT arrayJoin(arrayConcat(range(32, 40), range(1020, 1030), range(65530, 65545), [98304, 131071, 131072, 131073, 196608, 262143, 262144, 262145, 300000, 524287, 524288, 524289, 1000003])) AS n);
INSERT INTO attack_long SELECT 2000000 + n, concat(repeat('y', n - 1), 'z'), '2026-11-28 10:00:00' FROM (SELECT arrayJoin([65535, 65536, 65537, 131072, 262144]) AS n);
SQL
    expected=$(ch <<<"SELECT count(), sum(length(s)), sum(endsWith(s, '😀') OR endsWith(s, 'z')) FROM attack_long" | tr '\t' ' ')
    for ahead in on off; do
        t=ch_long_$ahead
        q -c "SET client_min_messages = warning" \
          -c "SELECT name FROM treble_sync.add_table('attack_long', 'c', key_columns => '{k}', name => '$t', local_table => '$t', on_bad_row => 'quarantine', max_bad_row_ratio => 1)" >/dev/null
        check "clickhouse, read_ahead $ahead: long Strings of every length, none bad" "success 51 0" \
            "$(q -F ' ' -c "SET treble_sync.read_ahead = $ahead" -c "SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('$t')")"
        check "clickhouse, read_ahead $ahead: each long String exactly" "0" \
            "$(q -c "SELECT count(*) FROM $t WHERE octet_length(s) <> k % 2000000 OR s <> CASE WHEN k < 2000000 THEN repeat('y', (k - 4)::int) || '😀' ELSE repeat('y', (k % 2000000 - 1)::int) || 'z' END")"
        check "clickhouse, read_ahead $ahead: as many bytes as in the warehouse" "$expected" \
            "$(q -F ' ' -c "SELECT count(*), sum(octet_length(s)), count(*) FILTER (WHERE right(s, 1) IN ('😀', 'z')) FROM $t")"
    done
    ch <<<"DROP TABLE IF EXISTS attack_long"
fi

echo "1..$n"
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
exit $((failed > 0))
