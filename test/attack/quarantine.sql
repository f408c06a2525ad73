-- Run by hand against the self-contained suite's setup (a reproduction, not
-- in REGRESS: its output shows two breaks, see the comments).
-- The quarantine under a hostile warehouse, through SQLite: a bad row
-- corrected then made bad again, a quarantined key deleted in the
-- warehouse (never copied, and copied before it went bad), rows without a
-- key that differ only in their cursor.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

CREATE FUNCTION cycle(name text) RETURNS TABLE (status text, rows_pulled bigint, rows_inserted bigint,
    rows_updated bigint, rows_deleted bigint, rows_bad bigint, error text)
LANGUAGE sql AS $$
    SELECT status, rows_pulled, rows_inserted, rows_updated, rows_deleted, rows_bad,
           split_part(error, E'\n', 1)
    FROM treble_sync.sync_table(name)
$$;

-- events of today, inside the hot window; cursors move by the hour
SELECT $$
CREATE TABLE q_orders (id INTEGER, code TEXT, happened_at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO q_orders VALUES (1, 'ok1', datetime('now', '-1 hour'), '2026-11-28 10:00:00'),
                            (2, 'too long 2', datetime('now', '-1 hour'), '2026-11-28 10:00:00'),
                            (3, 'ok3', datetime('now', '-1 hour'), '2026-11-28 10:00:00');
WITH RECURSIVE g(n) AS (SELECT 10 UNION ALL SELECT n + 1 FROM g WHERE n < 60)
INSERT INTO q_orders SELECT n, 'c' || n, datetime('now', '-1 hour'), '2026-11-28 10:00:00' FROM g;
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE q_orders (id int PRIMARY KEY, code varchar(5), happened_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('q_orders', 'wh', key_columns => '{id}',
    event_column => 'happened_at', local_table => 'q_orders', on_bad_row => 'quarantine',
    max_bad_row_ratio => 0.05);
SELECT * FROM cycle('q_orders');
SELECT id, code FROM q_orders WHERE id < 10 ORDER BY id;
-- quiet cycles: the quarantined key is not counted again
SELECT * FROM cycle('q_orders');
SELECT key, times_seen, resolved_run_id IS NOT NULL AS resolved FROM treble_sync.quarantine
WHERE table_name = 'q_orders' ORDER BY quarantine_id;

-- corrected: it lands, and its quarantine row is resolved
SELECT $$ UPDATE q_orders SET code = 'ok2', synced_at = '2026-11-28 11:00:00' WHERE id = 2; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('q_orders');
SELECT id, code FROM q_orders WHERE id < 10 ORDER BY id;
SELECT key, times_seen, resolved_run_id IS NOT NULL AS resolved FROM treble_sync.quarantine
WHERE table_name = 'q_orders' ORDER BY quarantine_id;
-- made bad again with the same value: set aside again, the copy keeps the
-- corrected version; and again with a new value
SELECT $$ UPDATE q_orders SET code = 'too long 2', synced_at = '2026-11-28 12:00:00' WHERE id = 2; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('q_orders');
SELECT rows_bad FROM treble_sync.runs WHERE table_name = 'q_orders'
ORDER BY run_id DESC LIMIT 1;
SELECT id, code FROM q_orders WHERE id < 10 ORDER BY id;
SELECT key, raw_value, times_seen, resolved_run_id IS NOT NULL AS resolved FROM treble_sync.quarantine
WHERE table_name = 'q_orders' ORDER BY quarantine_id;
SELECT * FROM cycle('q_orders');

-- key 3 goes bad (the copy keeps its last good version), then both bad
-- keys are deleted in the warehouse: the copy loses key 3 and key 2
SELECT $$ UPDATE q_orders SET code = 'too long 3', synced_at = '2026-11-28 13:00:00' WHERE id = 3; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('q_orders');
SELECT $$ DELETE FROM q_orders WHERE id IN (2, 3); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT * FROM cycle('q_orders');
SELECT id, code FROM q_orders WHERE id < 10 ORDER BY id;
SELECT * FROM cycle('q_orders');
SELECT key, times_seen, resolved_run_id IS NOT NULL AS resolved FROM treble_sync.quarantine
WHERE table_name = 'q_orders' ORDER BY quarantine_id;
SELECT day = current_date AS today, warehouse_rows, local_rows, match FROM treble_sync.verify('q_orders');

-- rows without a key, equal but for their cursor: two warehouse rows
SELECT $$
CREATE TABLE q_nokey (id INTEGER, code TEXT, synced_at TIMESTAMP);
INSERT INTO q_nokey VALUES (NULL, 'same', '2026-11-28 10:00:00'), (NULL, 'same', '2026-11-28 10:00:01'),
                           (1, 'one', '2026-11-28 10:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE q_nokey (id int PRIMARY KEY, code text, synced_at timestamp);
SELECT name FROM treble_sync.add_table('q_nokey', 'wh', key_columns => '{id}', local_table => 'q_nokey',
    on_bad_row => 'quarantine', max_bad_row_ratio => 1);
SELECT * FROM cycle('q_nokey');
SELECT key, row_digest IS NOT NULL AS has_digest, cursor_value, times_seen FROM treble_sync.quarantine
WHERE table_name = 'q_nokey' ORDER BY quarantine_id;

SELECT treble_sync.remove_table('q_orders', drop_local => true);
SELECT treble_sync.remove_table('q_nokey', drop_local => true);
DROP FUNCTION cycle(text);
