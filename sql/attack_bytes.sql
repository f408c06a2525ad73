-- Hostile text bytes through the SQLite warehouse, read as bytes and
-- checked as UTF-8: values around every slot size with a multi-byte
-- character cut across the boundary, 4-byte characters, overlong forms,
-- UTF-16 surrogates encoded in UTF-8, a BOM, a trailing NUL, a value above
-- 1 MB with one bad byte at its end, a bad byte in a key; read by the
-- read-ahead reader (a first load) and by the worker (read_ahead off, and
-- a later cycle).  Each value lands exactly or is a bad row.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

CREATE FUNCTION cycle(name text) RETURNS TABLE (status text, rows_pulled bigint, rows_inserted bigint,
    rows_updated bigint, rows_bad bigint, error text)
LANGUAGE sql AS $$
    SELECT status, rows_pulled, rows_inserted, rows_updated, rows_bad, split_part(error, E'\n', 1)
    FROM treble_sync.sync_table(name)
$$;

-- k 'x' then one 4-byte character, for k around each slot size, so that
-- the character straddles the slot's end at every offset
CREATE TABLE slot_lengths AS
SELECT DISTINCT k FROM unnest(ARRAY[32, 64, 255, 1024, 2048, 4096, 8192, 16384, 65536, 131072]) n,
     generate_series(n - 5, n + 1) k;
SELECT format($$CREATE TABLE slots (k INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP);
INSERT INTO slots SELECT value, printf('%%.*c', value, 'x') || '😀', '2026-11-28 10:00:00'
FROM json_each('%s');$$, json_agg(k)) FROM slot_lengths
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

CREATE TABLE slots (k int PRIMARY KEY, v text, synced_at timestamp);
CREATE TABLE slots_ra_off (k int PRIMARY KEY, v text, synced_at timestamp);
SELECT name FROM treble_sync.add_table('slots', 'wh', key_columns => '{k}', local_table => 'slots');
SELECT name FROM treble_sync.add_table('slots', 'wh', key_columns => '{k}', name => 'slots_ra_off',
    local_table => 'slots_ra_off');
-- the first load, read ahead (the default)
SELECT * FROM cycle('slots');
SET treble_sync.read_ahead = off;
SELECT * FROM cycle('slots_ra_off');
RESET treble_sync.read_ahead;
SELECT count(*) AS wrong FROM slot_lengths s
LEFT JOIN slots t ON t.k = s.k LEFT JOIN slots_ra_off o ON o.k = s.k
WHERE t.v IS DISTINCT FROM repeat('x', s.k) || '😀' OR o.v IS DISTINCT FROM repeat('x', s.k) || '😀';
-- a later cycle, read by the worker: every value again, 2 bytes short
SELECT $$ UPDATE slots SET v = substr(v, 2), synced_at = '2026-11-28 11:00:00'; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('slots');
SELECT count(*) AS wrong FROM slot_lengths s LEFT JOIN slots t ON t.k = s.k
WHERE t.v IS DISTINCT FROM repeat('x', s.k - 1) || '😀';

--
-- hostile byte sequences, one per row, in a column and in a key
--
SELECT $$
CREATE TABLE hostile (k TEXT PRIMARY KEY, v TEXT, synced_at TIMESTAMP);
INSERT INTO hostile VALUES
 ('emoji',        '😀🇫🇷👩‍👩‍👧', '2026-11-28 10:00:00'),
 ('max scalar',   CAST(X'F48FBFBF' AS TEXT), '2026-11-28 10:00:00'),
 ('above max',    CAST(X'F4908080' AS TEXT), '2026-11-28 10:00:00'),
 ('overlong /',   CAST(X'C0AF' AS TEXT), '2026-11-28 10:00:00'),
 ('overlong 3',   CAST(X'E080AF' AS TEXT), '2026-11-28 10:00:00'),
 ('overlong NUL', CAST(X'C080' AS TEXT), '2026-11-28 10:00:00'),
 ('surrogate',    CAST(X'EDA080' AS TEXT), '2026-11-28 10:00:00'),
 ('surrogates',   CAST(X'EDA0BDEDB880' AS TEXT), '2026-11-28 10:00:00'),
 ('bom',          CAST(X'EFBBBF61' AS TEXT), '2026-11-28 10:00:00'),
 ('lone cont',    CAST(X'80' AS TEXT), '2026-11-28 10:00:00'),
 ('cut 4-byte',   CAST(X'F09F98' AS TEXT), '2026-11-28 10:00:00'),
 ('nul last',     CAST(X'6100' AS TEXT), '2026-11-28 10:00:00'),
 ('nul only',     CAST(X'00' AS TEXT), '2026-11-28 10:00:00'),
 ('F5',           CAST(X'F5808080' AS TEXT), '2026-11-28 10:00:00'),
 ('empty',        '', '2026-11-28 10:00:00'),
 ('null',         NULL, '2026-11-28 10:00:00'),
 ('1MB bad end',  printf('%.*c', 1100000, 'y') || CAST(X'FF' AS TEXT), '2026-11-28 10:00:00'),
 ('1MB good',     printf('%.*c', 1100000, 'y') || '€', '2026-11-28 10:00:00'),
 (CAST(X'EFBBBF6B' AS TEXT), 'bom key', '2026-11-28 10:00:00'),
 (CAST(X'6BC0AF' AS TEXT), 'overlong key', '2026-11-28 10:00:00'),
 (CAST(X'6B2F' AS TEXT), 'the key the overlong one decodes to', '2026-11-28 10:00:00'),
 (CAST(X'6B00' AS TEXT), 'nul key', '2026-11-28 10:00:00'),
 ('k', 'the key a nul cut would leave', '2026-11-28 10:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE hostile (k text PRIMARY KEY, v text, synced_at timestamp);
SELECT name FROM treble_sync.add_table('hostile', 'wh', key_columns => '{k}', local_table => 'hostile',
    on_bad_row => 'quarantine', max_bad_row_ratio => 1);
SELECT * FROM cycle('hostile');
-- unaligned: the width psql gives a BOM or an emoji sequence changes
-- with its Unicode tables (18's differs from 15's); head shows the bytes
SELECT k, CASE WHEN length(v) > 100 THEN 'y*' || length(v) || right(v, 1) ELSE v END AS v,
       encode(convert_to(left(v, 8), 'UTF8'), 'hex') AS head
FROM hostile ORDER BY k COLLATE "C" \g (format=unaligned)
SELECT key, column_name, left(raw_value, 16) AS raw, length(raw_value) AS raw_len, reason
FROM treble_sync.quarantine WHERE table_name = 'hostile' ORDER BY key COLLATE "C";
-- the worker's path: the same rows again
SELECT $$ UPDATE hostile SET synced_at = '2026-11-28 11:00:00'; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('hostile');
SELECT count(*), sum(length(v)) FROM hostile;
SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name = 'hostile' ORDER BY key COLLATE "C";

--
-- characters of plane 16 (U+100000..U+10FFFF) in columns of every other
-- local type, and in a cursor: the driver's UTF-16 conversion maps them
-- onto U+0000..U+FFFF ('0' || U+100031 reads as '01'), so each is read as
-- its stored bytes: a value that is no date, number or time is a bad row,
-- and a cursor in no comparable form fails the cycle, never a value or a
-- cut made up.  Integers are read as stored too (1.5 is not 1), and the
-- copy's input function judges them: '0x1F' is a bad row on 15, while
-- PostgreSQL 16 on reads it as 31 itself (non-decimal integer input):
-- expected/attack_bytes_1.out is this file's output there.
--
SELECT $$
CREATE TABLE plane16 (k TEXT PRIMARY KEY, d DATE, n NUMERIC, i INTEGER, t TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO plane16 VALUES
 ('max ' || char(1114111), '2024-01-02', 1.5, 7, '2026-11-28 09:00:00', '2026-11-28 10:00:00'),
 ('max ' || char(65535),   '2024-01-02', 1.5, 7, '2026-11-28 09:00:00', '2026-11-28 10:00:00'),
 ('date',    '2024-01-0' || char(1048625), 1.5, 7, '2026-11-28 09:00:00', '2026-11-28 10:00:00'),
 ('number',  '2024-01-02', '1.' || char(1048629), 7, '2026-11-28 09:00:00', '2026-11-28 10:00:00'),
 ('integer', '2024-01-02', 1.5, '1' || char(1048624), '2026-11-28 09:00:00', '2026-11-28 10:00:00'),
 ('hex',     '2024-01-02', 1.5, '0x1F', '2026-11-28 09:00:00', '2026-11-28 10:00:00'),
 ('real',    '2024-01-02', 1.5, 1.5, '2026-11-28 09:00:00', '2026-11-28 10:00:00'),
 ('event',   '2024-01-02', 1.5, 7, '2026-11-28 09:00:0' || char(1048624), '2026-11-28 10:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE plane16 (k text PRIMARY KEY, d date, n numeric, i bigint, t timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('plane16', 'wh', key_columns => '{k}', local_table => 'plane16',
    cursor_column => 'synced_at', event_column => 't', on_bad_row => 'quarantine', max_bad_row_ratio => 1);
SELECT * FROM cycle('plane16');
SELECT encode(convert_to(k, 'UTF8'), 'hex') AS k, d, n, i, t, synced_at FROM plane16 ORDER BY k COLLATE "C";
SELECT key, column_name, reason FROM treble_sync.quarantine WHERE table_name = 'plane16'
ORDER BY key COLLATE "C";
SELECT watermark FROM treble_sync.tables WHERE name = 'plane16';
-- a cursor of that kind is the cut: the cycle fails, the watermark stays
SELECT $$ UPDATE plane16 SET synced_at = '2026-11-28 11:00:0' || char(1048624) WHERE k = 'max ' || char(65535); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('plane16');
SELECT watermark FROM treble_sync.tables WHERE name = 'plane16';
-- so does one whose bytes are not UTF-8, which the driver would drop
SELECT $$ UPDATE plane16 SET synced_at = CAST('2026-11-28 11:00:00' || X'FF' AS TEXT) WHERE k = 'max ' || char(65535); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('plane16');
SELECT watermark FROM treble_sync.tables WHERE name = 'plane16';

SELECT treble_sync.remove_table('slots', drop_local => true);
SELECT treble_sync.remove_table('slots_ra_off', drop_local => true);
SELECT treble_sync.remove_table('hostile', drop_local => true);
SELECT treble_sync.remove_table('plane16', drop_local => true);
DROP TABLE slot_lengths;
DROP FUNCTION cycle(text);
