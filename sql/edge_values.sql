-- Values at the edges of what a warehouse holds, through the SQLite
-- warehouse: integer cursors at both ends of bigint, pulled in slices and
-- with an overlap, must all land; text bytes that are not UTF-8, or hold a
-- NUL, are bad rows (never altered, never merged with another key); an
-- event value that SQLite cannot compare as a date and time is a bad row,
-- never loaded for repair to delete later; a REAL that SQLite's text of it
-- does not hold is a bad row.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

CREATE FUNCTION cycle(name text) RETURNS TABLE (status text, rows_pulled bigint, rows_inserted bigint,
    rows_updated bigint, rows_deleted bigint, rows_bad bigint, watermark_to text, error text)
LANGUAGE sql AS $$
    SELECT status, rows_pulled, rows_inserted, rows_updated, rows_deleted, rows_bad, watermark_to,
           split_part(error, E'\n', 1)
    FROM treble_sync.sync_table(name)
$$;

--
-- integer cursors at -2^63, -2^63 + 1, 0 and 2^63 - 1, pulled in slices of
-- one row (slice_rows), so that every slice boundary is at an extreme
--
SELECT $$
CREATE TABLE int_edges (id INTEGER PRIMARY KEY, v TEXT, cur INTEGER);
INSERT INTO int_edges VALUES (1, 'min', -9223372036854775808), (2, 'min+1', -9223372036854775807),
                             (3, 'zero', 0), (4, 'max', 9223372036854775807);
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
ALTER SERVER wh OPTIONS (ADD slice_rows '1');
CREATE TABLE int_edges (id int PRIMARY KEY, v text, cur bigint);
SELECT name FROM treble_sync.add_table('int_edges', 'wh', key_columns => '{id}',
    cursor_column => 'cur', local_table => 'int_edges');
SELECT * FROM cycle('int_edges');
SELECT * FROM int_edges ORDER BY id;
-- nothing new: nothing pulled, the watermark stays at 2^63 - 1
SELECT * FROM cycle('int_edges');
-- the widest overlap there is, from the greatest watermark there is: the
-- delta starts at 0 and takes the row at 2^63 - 1 again
SELECT name FROM treble_sync.alter_table('int_edges', cursor_overlap => '9223372036854775807');
SELECT $$ UPDATE int_edges SET v = 'max again' WHERE id = 4; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('int_edges');
SELECT * FROM int_edges ORDER BY id;

-- an overlap that reaches below -2^63: the delta takes every row up to the cut
SELECT $$
CREATE TABLE int_low (id INTEGER PRIMARY KEY, v TEXT, cur INTEGER);
INSERT INTO int_low VALUES (1, 'min', -9223372036854775808);
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE int_low (id int PRIMARY KEY, v text, cur bigint);
SELECT name FROM treble_sync.add_table('int_low', 'wh', key_columns => '{id}',
    cursor_column => 'cur', cursor_overlap => '10', local_table => 'int_low');
SELECT * FROM cycle('int_low');
SELECT $$
INSERT INTO int_low VALUES (2, 'min+8', -9223372036854775800), (3, 'min+9', -9223372036854775799);
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('int_low');
SELECT * FROM int_low ORDER BY id;
ALTER SERVER wh OPTIONS (DROP slice_rows);

--
-- text that is not UTF-8, or holds a NUL: a bad row naming the column,
-- never a changed value; 'a' 0xFF 'b' is not 'ab'
--
SELECT $$
CREATE TABLE texts (k TEXT PRIMARY KEY, note TEXT, n TEXT, synced_at TIMESTAMP);
INSERT INTO texts VALUES ('ab', 'plain', 'x', '2026-11-28 10:00:00'),
    (CAST(X'61FF62' AS TEXT), 'invalid key', 'x', '2026-11-28 10:00:00'),
    ('nul', CAST(X'610062' AS TEXT), 'x', '2026-11-28 10:00:00'),
    ('bad note', CAST(X'C328' AS TEXT), 'x', '2026-11-28 10:00:00'),
    ('multibyte', 'é€😀', 'x', '2026-11-28 10:00:00'),
    ('number', 'stored as a number', 5, '2026-11-28 10:00:00'),
    ('real', 'stored as a real', 1.5, '2026-11-28 10:00:00');
SELECT k, typeof(n) FROM texts WHERE k IN ('number', 'real');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE texts (k text PRIMARY KEY, note text, n text, synced_at timestamp);
SELECT name FROM treble_sync.add_table('texts', 'wh', key_columns => '{k}', local_table => 'texts');
-- fail (the default): the error names the column and the reason, not the value
SELECT * FROM cycle('texts');
SELECT count(*) FROM texts;
-- quarantine: the three set aside (their text in hex), the rest exactly as
-- stored
SELECT on_bad_row FROM treble_sync.alter_table('texts', on_bad_row => 'quarantine',
    max_bad_row_ratio => 1);
SELECT * FROM cycle('texts');
SELECT k, note, n, octet_length(note) AS note_bytes FROM texts ORDER BY k;
SELECT key, column_name, raw_value, reason FROM treble_sync.quarantine
WHERE table_name = 'texts' ORDER BY key;
-- skip
SELECT $$ UPDATE texts SET synced_at = '2026-11-28 11:00:00'; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT on_bad_row FROM treble_sync.alter_table('texts', on_bad_row => 'skip');
SELECT * FROM cycle('texts');
SELECT count(*) FROM texts;

--
-- an event value SQLite cannot compare as a date and time (a number in a
-- TIMESTAMP column): a bad row, and verify and repair agree with the cycle
--
SELECT $$
CREATE TABLE events (id INTEGER PRIMARY KEY, happened_at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO events VALUES (1, '2026-11-28 09:00:00', '2026-11-28 10:00:00'),
                          (2, 1764320400, '2026-11-28 10:00:00'),
                          (3, '2026-11-28T09:30:00', '2026-11-28 10:00:00'),
                          (4, NULL, '2026-11-28 10:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE events (id int PRIMARY KEY, happened_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('events', 'wh', key_columns => '{id}',
    event_column => 'happened_at', local_table => 'events');
SELECT * FROM cycle('events');
-- verify fails as the cycle does
SELECT day FROM treble_sync.verify('events');
SELECT on_bad_row FROM treble_sync.alter_table('events', on_bad_row => 'quarantine',
    max_bad_row_ratio => 1);
SELECT * FROM cycle('events');
SELECT * FROM events ORDER BY id;
SELECT key, column_name, raw_value, reason FROM treble_sync.quarantine
WHERE table_name = 'events' ORDER BY key;
-- verify agrees with the cycle, and a repair of the day leaves the copy as it is
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('events');
SELECT status, rows_pulled, rows_deleted, rows_bad
FROM treble_sync.repair('events', '2026-11-28');
SELECT * FROM events ORDER BY id;

--
-- REAL values: SQLite writes a double with 15 significant digits, the only
-- form its driver reads, so one that needs 16 or 17 (0.30000000000000004,
-- the largest double) is a bad row, never the nearby double its text reads
-- as; every double those 15 digits hold lands exactly, in a float, a
-- numeric or an integer column, infinities included; a text column takes
-- SQLite's text of it
--
SELECT $$
CREATE TABLE reals (k INTEGER PRIMARY KEY, x REAL, n NUMERIC, i INTEGER, t TEXT, synced_at TIMESTAMP);
INSERT INTO reals VALUES
 (1, 0.1, 0.1, 3.0, 0.1, '2026-11-28 10:00:00'),
 (2, 0.30000000000000004, 1, 1, 't', '2026-11-28 10:00:00'),
 (3, 1.7976931348623157e308, 1, 1, 't', '2026-11-28 10:00:00'),
 (4, 1.79769313486231e308, 1, 1, 't', '2026-11-28 10:00:00'),
 (5, 5e-324, 1, 1, 't', '2026-11-28 10:00:00'),
 (6, 2.2250738585072014e-308, 1, 1, 't', '2026-11-28 10:00:00'),
 (7, 1e999, -1e999, 1, 't', '2026-11-28 10:00:00'),
 (8, -1.5, 123456789012345.6, 1, 't', '2026-11-28 10:00:00'),
 (9, 1, 0.1, 9007199254740993.0, 't', '2026-11-28 10:00:00'),
 (10, 1, 1, 1, 0.30000000000000004, '2026-11-28 10:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE reals (k int PRIMARY KEY, x float8, n numeric, i float8, t text, synced_at timestamp);
SELECT name FROM treble_sync.add_table('reals', 'wh', key_columns => '{k}', local_table => 'reals',
    on_bad_row => 'quarantine', max_bad_row_ratio => 1);
SELECT * FROM cycle('reals');
SET extra_float_digits = 1;
SELECT * FROM reals ORDER BY k;
RESET extra_float_digits;
SELECT key, column_name, raw_value, reason FROM treble_sync.quarantine
WHERE table_name = 'reals' ORDER BY key::int;

SELECT treble_sync.remove_table('int_edges', drop_local => true);
SELECT treble_sync.remove_table('int_low', drop_local => true);
SELECT treble_sync.remove_table('texts', drop_local => true);
SELECT treble_sync.remove_table('events', drop_local => true);
SELECT treble_sync.remove_table('reals', drop_local => true);
DROP FUNCTION cycle(text);
