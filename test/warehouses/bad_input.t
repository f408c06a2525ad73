#!/usr/bin/env bash
#
# Bad input fails loudly, against the SQLite warehouse (which keeps any
# value in any column, and compares timestamps as text):
#
#   text times  a cursor value in another text form than the one
#               treble_sync's bounds are written in (a 'T' between date and
#               time, a zone suffix) fails the cycle with an error naming
#               the column and the form found, and a hint giving the form
#               needed; as the table's latest value (the cut) and among the
#               rows of a pull; the watermark stays, and once the row is
#               fixed the next cycle converges
#   integers    a text value in an INTEGER cursor fails the cycle the same way
#   NULL cursor rows without a cursor are counted in the run
#               (rows_null_cursor) and named in its warnings
#   stamps      cursors no cut may take ('infinity', the year 9999) are left
#               out and named in the warnings, later rows still arrive; odd
#               text in a TIMESTAMP data column is a bad row
#   text bytes  (ClickHouse, when its warehouse runs) a String that is not
#               UTF-8, or holds a NUL, is a bad row naming the column, never
#               a changed value: 'a' 0xFF 'b' is not 'ab', under every
#               on_bad_row, read by the cycle's worker or by a reader
#               (SQLite's text bytes: sql/edge_values.sql)
#   MariaDB     (when its warehouse runs) a NUL in a utf8mb4 value is a bad
#               row, not a value cut at the NUL; a latin1 column lands as
#               its characters
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_*, PGHOST/PGPORT/PGUSER). Prints TAP.

set -u

DB=ts_bad_input
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
wh() { sqlite3 -batch "$TS_SQLITE_DB"; }
watermark() { q -c "SELECT coalesce(watermark, 'none') FROM treble_sync.tables WHERE name = '$1'"; }
sync() { q -F ' ' -c "SELECT status, rows_inserted, rows_updated FROM treble_sync.sync_table('$1')"; }

fresh_db
add_server w sqlite

HINT="HINT: Store timestamps as text in the form 'YYYY-MM-DD HH:MM:SS', with up to six fraction digits, as datetime() writes them."

# --- text times: the latest value in another form
wh <<'SQL'
DROP TABLE IF EXISTS times;
CREATE TABLE times (id INTEGER, note TEXT, synced_at TIMESTAMP);
INSERT INTO times VALUES (1, 'secret one', '2026-11-28 10:00:00');
SQL
q -c "SET client_min_messages = warning" \
  -c "SELECT name FROM treble_sync.add_table('times', 'w', key_columns => '{id}')" >/dev/null
check "a first sync in the right form succeeds" "success 1 0" "$(sync times)"
check "its watermark" "2026-11-28 10:00:00" "$(watermark times)"

wh <<'SQL'
INSERT INTO times VALUES (2, 'secret two', '2026-11-28T11:00:00Z');
SQL
out=$(q -c "SELECT status, error FROM treble_sync.sync_table('times')")
check "a cut in another form fails the cycle, naming the column, not the value" \
"failed|warehouse column \"synced_at\" of table \"times\" holds a timestamp in a form that cannot be compared
DETAIL: SQLite compares timestamps as text, and a value in another form than treble_sync's bounds sorts apart from them: rows would be skipped or the watermark would stop.
$HINT" "$out"
check "the error holds none of the row's other values" "0" \
    "$(q -c "SELECT count(*) FROM treble_sync.runs WHERE error LIKE '%secret%'")"
check "the watermark stays" "2026-11-28 10:00:00" "$(watermark times)"

# rows written later in the right form are not lost behind it
wh <<<"INSERT INTO times VALUES (3, 'three', '2026-11-28 12:00:00');"
check "while the value is there, every cycle fails" "failed" \
    "$(q -c "SELECT status FROM treble_sync.sync_table('times')")"
wh <<<"UPDATE times SET synced_at = '2026-11-28 11:00:00' WHERE id = 2;"
check "once the value is fixed, the next cycle takes every row" "success 2 0" "$(sync times)"
check "and the watermark moves on" "2026-11-28 12:00:00" "$(watermark times)"
check "the copy holds every row" "1,2,3" "$(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM times")"

# --- text times: a value in another form among the rows of a pull, not the latest
wh <<'SQL'
INSERT INTO times VALUES (4, 'four', '2026-11-28 13:00:00+00:00');
INSERT INTO times VALUES (5, 'five', '2026-11-29 09:00:00');
SQL
out=$(q -c "SELECT status, split_part(error, E'\n', 2) FROM treble_sync.sync_table('times')")
check "a value in another form inside a pull fails the cycle too" \
    "failed|DETAIL: SQLite compares timestamps as text, and a value in another form than treble_sync's bounds sorts apart from them: rows would be skipped or the watermark would stop." \
    "$out"
check "and nothing of it was applied" "1,2,3 2026-11-28 12:00:00" \
    "$(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM times") $(watermark times)"
wh <<<"UPDATE times SET synced_at = '2026-11-28 13:00:00.5' WHERE id = 4;"
check "fixed, it converges" "success 2 0" "$(sync times)"

# --- rows without a cursor are counted, in every run, and named in its warnings
wh <<<"INSERT INTO times VALUES (6, 'six', NULL), (7, 'seven', '2026-11-29 10:00:00');"
check "rows with a NULL cursor are counted and reported" \
    "success|1|1|1 row with a NULL cursor \"synced_at\" is not synced" \
    "$(q -c "SELECT status, rows_inserted, rows_null_cursor, warnings FROM treble_sync.sync_table('times')")"
check "and the row is not in the copy" "0" "$(q -c "SELECT count(*) FROM times WHERE id = 6")"

# --- stamps no cut may take: 'infinity' (sorts after every digit) and the
# year 9999 are left out and reported, every cycle, and rows stamped later
# still arrive; odd text in a data column is a bad row, not a changed value
wh <<'SQL'
DROP TABLE IF EXISTS stamps;
CREATE TABLE stamps (id INTEGER, at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO stamps VALUES (1, '2026-11-28 10:00:00', datetime('now', '-2 hours')),
    (2, '2026-11-28 10:00:00', 'infinity'), (3, '2026-11-28 10:00:00', '9999-12-31 23:59:59'),
    (4, 'not a date', datetime('now', '-2 hours'));
SQL
q -c "SET client_min_messages = warning" \
  -c "SELECT name FROM treble_sync.add_table('stamps', 'w', key_columns => '{id}', on_bad_row => 'skip', max_bad_row_ratio => 1)" >/dev/null
check "stamps beyond the clock are left out and reported; odd text is a bad row" \
    "success|1|1|2 rows with a cursor \"synced_at\" beyond the warehouse's clock or not a time are not synced" \
    "$(q -c "SELECT status, rows_inserted, rows_bad, warnings FROM treble_sync.sync_table('stamps')")"
wh <<<"INSERT INTO stamps VALUES (5, '2026-11-29 10:00:00', datetime('now', '-1 hour'));"
check "the next cycle still takes a later row" \
    "success|1|2 rows with a cursor \"synced_at\" beyond the warehouse's clock or not a time are not synced" \
    "$(q -c "SELECT status, rows_inserted, warnings FROM treble_sync.sync_table('stamps')")"
check "the copy holds the rows with a time" "1,5" \
    "$(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM stamps")"
check "and its watermark is not in the future" "t" \
    "$(q -c "SELECT watermark::timestamp < localtimestamp + interval '1 day' FROM treble_sync.tables WHERE name = 'stamps'")"

# --- a text value in an INTEGER cursor
wh <<'SQL'
DROP TABLE IF EXISTS events;
CREATE TABLE events (id INTEGER, event_no INTEGER);
INSERT INTO events VALUES (1, 1), (2, 2), (3, 'x3');
SQL
q -c "SET client_min_messages = warning" \
  -c "SELECT name FROM treble_sync.add_table('events', 'w', key_columns => '{id}', cursor_column => 'event_no', mode => 'append')" >/dev/null
out=$(q -c "SELECT status, split_part(error, E'\n', 1) FROM treble_sync.sync_table('events')")
check "text in an integer cursor fails the cycle" \
    "failed|warehouse column \"event_no\" of table \"events\" holds an integer in a form that cannot be compared" "$out"
wh <<<"UPDATE events SET event_no = 3 WHERE id = 3;"
check "fixed, it converges" "success 3 0" "$(sync events)"

# --- ClickHouse: String bytes that are not UTF-8, or a NUL
if [[ -n ${TS_CLICKHOUSE_PORT:-} ]]; then
    add_server c clickhouse
    ch <<'SQL'
DROP TABLE IF EXISTS bad_input_texts;
CREATE TABLE bad_input_texts (k String, note Nullable(String), synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY k;
INSERT INTO bad_input_texts VALUES ('ab', 'plain', '2026-11-28 10:00:00'),
    ('a\xFFb', 'secret invalid key', '2026-11-28 10:00:00'), ('nul', 'secret\0nul', '2026-11-28 10:00:00'),
    ('bad note', 'secret \xC3\x28', '2026-11-28 10:00:00'), ('multibyte', 'é€😀', '2026-11-28 10:00:00');
SQL
    for ahead in on off; do
        t=ch_texts_$ahead
        q -c "SET client_min_messages = warning" \
          -c "SELECT name FROM treble_sync.add_table('bad_input_texts', 'c', key_columns => '{k}', name => '$t', local_table => '$t')" >/dev/null
        out=$(q -c "SET treble_sync.read_ahead = $ahead" \
                -c "SELECT status, regexp_replace(split_part(error, E'\n', 1), 'row [0-9]+ of', 'row N of') FROM treble_sync.sync_table('$t')")
        check "clickhouse, read_ahead $ahead: a key that is not UTF-8 fails the cycle, naming the row's position and the column" \
            'failed|bad row in warehouse table "bad_input_texts": row N of the pull, column "k": text that is not valid UTF-8' "$out"
        check "clickhouse, read_ahead $ahead: the error holds no value and no key" "0" \
            "$(q -c "SELECT count(*) FROM treble_sync.runs WHERE error LIKE '%secret%' OR error LIKE '%61ff62%'")"
        check "clickhouse, read_ahead $ahead: the failing row is kept in the quarantine, key in hex" "1" \
            "$(q -c "SELECT count(*) FROM treble_sync.quarantine WHERE table_name = '$t' AND key = '\x61ff62' AND failed_run")"
        q -c "SELECT on_bad_row FROM treble_sync.alter_table('$t', on_bad_row => 'quarantine', max_bad_row_ratio => 1)" >/dev/null
        check "clickhouse, read_ahead $ahead: quarantine: 5 pulled, 2 inserted, 3 bad" "success 5 2 3" \
            "$(q -F ' ' -c "SET treble_sync.read_ahead = $ahead" \
                 -c "SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('$t')")"
        check "clickhouse, read_ahead $ahead: the rest lands byte for byte" "6162:706c61696e,6d756c746962797465:c3a9e282acf09f9880" \
            "$(q -c "SELECT string_agg(encode(convert_to(k, 'UTF8'), 'hex') || ':' || encode(convert_to(note, 'UTF8'), 'hex'), ',' ORDER BY k) FROM $t")"
        check "clickhouse, read_ahead $ahead: the bad rows, in hex, with the column and the reason" \
            '\x61ff62|k|\x61ff62|text that is not valid UTF-8
bad note|note|\x73656372657420c328|text that is not valid UTF-8
nul|note|\x736563726574006e756c|text with a NUL byte, which PostgreSQL text cannot hold' \
            "$(q -c "SELECT key, column_name, raw_value, reason FROM treble_sync.quarantine WHERE table_name = '$t' ORDER BY key")"
    done
    ch <<<"DROP TABLE IF EXISTS bad_input_texts"
fi

# --- MariaDB: a NUL in a value; a latin1 column
if [[ -n ${TS_MARIADB_PORT:-} ]]; then
    add_server m mariadb login
    my <<'SQL'
DROP TABLE IF EXISTS bad_input_texts;
CREATE TABLE bad_input_texts (k VARCHAR(20) PRIMARY KEY, note VARCHAR(20), l1 VARCHAR(20) CHARACTER SET latin1,
    synced_at DATETIME(6)) CHARACTER SET utf8mb4;
INSERT INTO bad_input_texts VALUES ('ab', 'é€😀', X'FF', '2026-11-28 10:00:00'),
    ('nul', CONCAT('secret', CHAR(0), 'nul'), 'x', '2026-11-28 10:00:00');
SQL
    q -c "SET client_min_messages = warning" \
      -c "SELECT name FROM treble_sync.add_table('bad_input_texts', 'm', key_columns => '{k}', name => 'my_texts', local_table => 'my_texts', on_bad_row => 'quarantine', max_bad_row_ratio => 1)" >/dev/null
    check "mariadb: a value with a NUL is a bad row" "success 2 1 1" \
        "$(q -F ' ' -c "SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('my_texts')")"
    check "mariadb: the rest lands byte for byte, latin1 as its characters" "ab:c3a9e282acf09f9880:c3bf" \
        "$(q -c "SELECT string_agg(k || ':' || encode(convert_to(note, 'UTF8'), 'hex') || ':' || encode(convert_to(l1, 'UTF8'), 'hex'), ',') FROM my_texts")"
    check "mariadb: the bad row, in hex, with the column and the reason" \
        'nul|note|\x736563726574006e756c|text with a NUL byte, which PostgreSQL text cannot hold' \
        "$(q -c "SELECT key, column_name, raw_value, reason FROM treble_sync.quarantine WHERE table_name = 'my_texts'")"
    my <<<"DROP TABLE IF EXISTS bad_input_texts"
fi

echo "1..$n"
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
exit $((failed > 0))
