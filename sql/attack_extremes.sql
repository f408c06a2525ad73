-- Integer extremes in keys, in an integer cursor with an overlap, and odd
-- values of cursor_overlap and hot_window, through the SQLite warehouse:
-- each lands exactly, or is refused cleanly before anything changes.
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

-- keys at both ends of bigint, in the hot window: the key-only window
-- check sends them back as parameters
SELECT $$
CREATE TABLE x_keys (id INT PRIMARY KEY, v TEXT, happened_at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO x_keys VALUES (-9223372036854775808, 'min', datetime('now', '-1 hour'), '2026-11-28 10:00:00'),
    (9223372036854775807, 'max', datetime('now', '-1 hour'), '2026-11-28 10:00:00'),
    (0, 'zero', datetime('now', '-1 hour'), '2026-11-28 10:00:00');
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20)
INSERT INTO x_keys SELECT n, 'filler', datetime('now', '-1 hour'), '2026-11-28 10:00:00' FROM g;
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE x_keys (id bigint PRIMARY KEY, v text, happened_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('x_keys', 'wh', key_columns => '{id}', event_column => 'happened_at',
    local_table => 'x_keys');
SELECT status, rows_pulled, rows_inserted FROM cycle('x_keys');
-- a correction of each extreme with an older cursor
-- (late visibility): the window check pulls them again by key
SELECT $$ UPDATE x_keys SET v = v || ' again', synced_at = '2026-11-28 09:00:00' WHERE id IN (-9223372036854775808, 9223372036854775807); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, rows_pulled, rows_updated FROM cycle('x_keys');
SELECT id, v FROM x_keys WHERE v <> 'filler' ORDER BY id;
-- the extremes deleted: the window check deletes them from the copy
SELECT $$ DELETE FROM x_keys WHERE id IN (-9223372036854775808, 9223372036854775807); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, rows_deleted FROM cycle('x_keys');
SELECT id, v FROM x_keys WHERE v <> 'filler' ORDER BY id;

-- a key stored as a real in an INTEGER column (2^63 does not fit bigint)
SELECT $$ INSERT INTO x_keys VALUES (9223372036854775808, 'beyond', datetime('now', '-1 hour'), '2026-11-28 11:00:00'); SELECT typeof(id) FROM x_keys WHERE v = 'beyond'; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, rows_pulled, rows_inserted, rows_bad, error FROM cycle('x_keys');
SELECT id, v FROM x_keys WHERE v <> 'filler' ORDER BY id;
SELECT $$ DELETE FROM x_keys WHERE v = 'beyond'; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

-- cursor_overlap: odd values refused, extremes taken
SELECT $$
CREATE TABLE x_cur (id INTEGER PRIMARY KEY, v TEXT, cur INTEGER);
INSERT INTO x_cur VALUES (1, 'a', 9223372036854775806), (2, 'b', -9223372036854775808);
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE x_cur (id int PRIMARY KEY, v text, cur bigint);
SELECT name FROM treble_sync.add_table('x_cur', 'wh', key_columns => '{id}', cursor_column => 'cur',
    local_table => 'x_cur');
SELECT status, rows_pulled, watermark_to FROM cycle('x_cur');
SELECT treble_sync.alter_table('x_cur', cursor_overlap => '-1');
SELECT treble_sync.alter_table('x_cur', cursor_overlap => '9223372036854775808');
SELECT treble_sync.alter_table('x_cur', cursor_overlap => '-9223372036854775808');
SELECT treble_sync.alter_table('x_cur', cursor_overlap => '1e3');
SELECT treble_sync.alter_table('x_cur', cursor_overlap => '5 minutes');
SELECT treble_sync.alter_table('x_cur', cursor_overlap => ' 7 ');
SELECT treble_sync.alter_table('x_cur', cursor_overlap => '0x10');
SELECT cursor_overlap FROM treble_sync.tables WHERE name = 'x_cur';
SELECT cursor_overlap FROM treble_sync.alter_table('x_cur', cursor_overlap => '9223372036854775807');
SELECT $$ INSERT INTO x_cur VALUES (3, 'c', 9223372036854775807); UPDATE x_cur SET v = 'b2' WHERE id = 2; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, rows_pulled, watermark_to FROM cycle('x_cur');
SELECT * FROM x_cur ORDER BY id;
SELECT status, rows_pulled, watermark_to FROM cycle('x_cur');

-- hot_window: odd values refused
SELECT treble_sync.alter_table('x_keys', hot_window => '-1 day');
-- infinite intervals: 15 and 16 do not read them (invalid input syntax),
-- 17 on do and hot_window refuses them (too long, negative): refused on
-- every major, with a message that depends on it
DO $$
DECLARE
    v text;
BEGIN
    FOREACH v IN ARRAY ARRAY['infinity', '-infinity'] LOOP
        BEGIN
            PERFORM treble_sync.alter_table('x_keys', hot_window => v);
            RAISE NOTICE 'hot_window %: accepted', v;
        EXCEPTION WHEN invalid_datetime_format OR invalid_parameter_value THEN
            RAISE NOTICE 'hot_window %: refused', v;
        END;
    END LOOP;
END
$$;
SELECT treble_sync.alter_table('x_keys', hot_window => '178000000 years');
SELECT treble_sync.alter_table('x_keys', hot_window => '101 years');
SELECT treble_sync.alter_table('x_keys', hot_window => '1 day -2 hours');
SELECT treble_sync.alter_table('x_keys', hot_window => '1 mon -29 days');
SELECT treble_sync.alter_table('x_keys', hot_window => '0.5 seconds');
SELECT treble_sync.alter_table('x_keys', hot_window => '');
SELECT hot_window FROM treble_sync.alter_table('x_keys', hot_window => '100 years');
SELECT status, error FROM cycle('x_keys');
SELECT hot_window FROM treble_sync.alter_table('x_keys', hot_window => '0 days');
SELECT status, error FROM cycle('x_keys');
SELECT id, v FROM x_keys WHERE v <> 'filler' ORDER BY id;

SELECT treble_sync.remove_table('x_keys', drop_local => true);
SELECT treble_sync.remove_table('x_cur', drop_local => true);
DROP FUNCTION cycle(text);
