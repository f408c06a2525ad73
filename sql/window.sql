-- hot_window_check: 'keys' (the default) reads the key and cursor of the
-- hot window's rows and pulls whole only the keys that differ; 'rows' pulls
-- every row of the window.  The same SQLite table, a composite key of text
-- and integer, is kept by one registration of each, and both copies are
-- shown after each cycle: a removal, a new row, a key whose newest version
-- is deleted while an older one outside the window remains (which only
-- 'keys' gets right), and a correction written without a new cursor (which
-- only 'rows' sees).
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

SELECT $$
CREATE TABLE window_sends (account TEXT, id INTEGER, status TEXT, scheduled_at TIMESTAMP,
    synced_at TIMESTAMP);
INSERT INTO window_sends VALUES
    ('a', 1, 'sent',   '2026-11-20 09:00:00', '2026-11-20 10:00:00'),
    ('a', 2, 'old',    '2026-11-01 09:00:00', '2026-11-01 10:00:00'),
    ('a', 2, 'new',    '2026-11-19 09:00:00', '2026-11-19 10:00:00'),
    ('b', 3, 'sent',   '2026-11-19 12:00:00', '2026-11-19 13:00:00'),
    ('b', 4, 'sent',   '2026-11-02 12:00:00', '2026-11-02 13:00:00'),
    ('c''s', 5, 'none', NULL,                 '2026-11-20 11:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

-- a value other than 'keys' or 'rows' is refused
SELECT treble_sync.add_table('window_sends', 'wh', key_columns => '{account,id}',
    event_column => 'scheduled_at', local_table => 'w_keys', name => 'w_keys',
    hot_window_check => 'columns');
SELECT name, hot_window_check FROM treble_sync.add_table('window_sends', 'wh',
    key_columns => '{account,id}', event_column => 'scheduled_at',
    local_table => 'w_keys', name => 'w_keys');
SELECT name, hot_window_check FROM treble_sync.add_table('window_sends', 'wh',
    key_columns => '{account,id}', event_column => 'scheduled_at',
    local_table => 'w_rows', name => 'w_rows', hot_window_check => 'rows');
SELECT treble_sync.alter_table('w_rows', hot_window_check => 'all');
SELECT name, hot_window_check FROM treble_sync.alter_table('w_rows', hot_window_check => 'keys');
SELECT name, hot_window_check FROM treble_sync.alter_table('w_rows', hot_window_check => 'rows');

CREATE FUNCTION both_copies() RETURNS TABLE (copy text, account text, id bigint, status text,
    scheduled_at timestamp, synced_at timestamp) LANGUAGE sql AS $$
    SELECT 'keys', * FROM w_keys UNION ALL SELECT 'rows', * FROM w_rows ORDER BY 1, 2, 3
$$;
CREATE FUNCTION cycle(name text) RETURNS TABLE (status text, rows_pulled bigint, rows_inserted bigint,
    rows_updated bigint, rows_deleted bigint, error text) LANGUAGE sql AS $$
    SELECT status, rows_pulled, rows_inserted, rows_updated, rows_deleted, error
    FROM treble_sync.sync_table(name)
$$;

-- the first cycle pulls everything in both modes: key ('a', 2) is its newest version
SELECT * FROM cycle('w_keys');
SELECT * FROM cycle('w_rows');
SELECT * FROM both_copies();

-- nothing changed: 'keys' pulls no row, 'rows' the window's three
SELECT * FROM cycle('w_keys');
SELECT * FROM cycle('w_rows');

SELECT $$
-- a removal in the window, a new row in it
DELETE FROM window_sends WHERE account = 'b' AND id = 3;
INSERT INTO window_sends VALUES ('d', 6, 'queued', '2026-11-21 08:00:00', '2026-11-21 09:00:00');
-- the newest version of ('a', 2), in the window, is deleted; the older one, outside it, remains
DELETE FROM window_sends WHERE account = 'a' AND id = 2 AND status = 'new';
-- a correction of ('a', 1) that does not give it a new cursor
UPDATE window_sends SET status = 'bounced' WHERE account = 'a' AND id = 1;
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

-- 'keys': ('d', 6) comes with the delta, ('b', 3) is deleted, ('a', 2) is
-- pulled again by key and its older version replaces the deleted one; the
-- correction of ('a', 1) is not seen.  'rows': the correction is seen, and
-- ('a', 2) leaves the copy.
SELECT * FROM cycle('w_keys');
SELECT * FROM cycle('w_rows');
SELECT * FROM both_copies();

-- the next write of ('a', 1) reaches both
SELECT $$
UPDATE window_sends SET status = 'opened', synced_at = '2026-11-21 10:00:00' WHERE account = 'a' AND id = 1;
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('w_keys');
SELECT * FROM cycle('w_rows');
SELECT * FROM both_copies() WHERE account = 'a' AND id = 1;

-- a row the copy lacks, with a cursor below the watermark (it became
-- visible late): 'keys' finds its key in the window and pulls it
SELECT $$
INSERT INTO window_sends VALUES ('e', 7, 'late', '2026-11-20 07:00:00', '2026-11-20 08:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('w_keys');
SELECT * FROM both_copies() WHERE copy = 'keys' AND account = 'e';

-- the mass-delete guard holds: a window emptied in the warehouse fails the
-- cycle and changes nothing
SELECT $$
DELETE FROM window_sends WHERE scheduled_at >= '2026-11-18';
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('w_keys');
SELECT count(*) FROM w_keys;

-- a copy of one text key whose window holds a row with a NULL key (put
-- there by hand: a unique index allows it): the check fails the cycle with
-- an error, as a re-pull of such a key always did, and changes nothing
SELECT $$
CREATE TABLE one_key_sends (k TEXT, scheduled_at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO one_key_sends VALUES ('x', '2026-11-20 09:00:00', '2026-11-20 10:00:00'),
    ('y', '2026-11-20 09:30:00', '2026-11-20 10:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE w_one (k text UNIQUE, scheduled_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('one_key_sends', 'wh', key_columns => '{k}',
    event_column => 'scheduled_at', local_table => 'w_one', name => 'w_one');
SELECT * FROM cycle('w_one');
INSERT INTO w_one VALUES (NULL, '2026-11-20 09:45:00', '2026-11-20 10:00:00');
SELECT $$
INSERT INTO one_key_sends VALUES ('z', '2026-11-20 11:00:00', '2026-11-20 12:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('w_one');
SELECT * FROM w_one ORDER BY k;
DELETE FROM w_one WHERE k IS NULL;
SELECT * FROM cycle('w_one');
SELECT * FROM w_one ORDER BY k;

-- a removal alone: the cut stays the watermark, so the delta's statement
-- is not sent (it could return no row) and nothing is staged, but the
-- window's keys still show the key gone, and the cycle deletes it
SELECT $$
DELETE FROM one_key_sends WHERE k = 'y';
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('w_one');
SELECT * FROM w_one ORDER BY k;
-- with a cursor_overlap the delta starts behind the watermark: an
-- unchanged cycle pulls the overlap's rows again, and changes nothing
SELECT name, cursor_overlap FROM treble_sync.alter_table('w_one', cursor_overlap => '3 hours');
SELECT * FROM cycle('w_one');
SELECT * FROM w_one ORDER BY k;
SELECT treble_sync.remove_table('w_one', drop_local => true);

SELECT treble_sync.remove_table('w_keys', drop_local => true);
SELECT treble_sync.remove_table('w_rows', drop_local => true);
DROP FUNCTION both_copies();
DROP FUNCTION cycle(text);
