-- Rows the copy cannot take: fail (default) names table, key, column and
-- reason; quarantine keeps them aside and applies the rest; skip counts
-- them; above max_bad_row_ratio the whole cycle fails.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS orders;
    CREATE TABLE orders (order_id int, code text, amount numeric, synced_at timestamp);
    INSERT INTO orders SELECT g, 'c' || g, g, '2026-11-28 10:00' FROM generate_series(1, 100) g;
    INSERT INTO orders VALUES (101, 'too long a code', 1, '2026-11-28 10:00'),
                              (102, 'ok', 1e9, '2026-11-28 10:00');
$$);
-- the copy takes codes of 5 characters and amounts below 10^6
CREATE TABLE orders (order_id int PRIMARY KEY, code varchar(5), amount numeric(8,2),
    synced_at timestamp);
SELECT name, on_bad_row, max_bad_row_ratio FROM treble_sync.add_table('orders', 'wh',
    key_columns => '{order_id}', local_table => 'orders');
SELECT treble_sync.alter_table('orders', on_bad_row => 'sometimes');
SELECT treble_sync.alter_table('orders', max_bad_row_ratio => 2);

-- fail: the first bad row stops the cycle, and says which
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('orders');
SELECT count(*) FROM orders;

-- quarantine: with a NULL key too, 3 bad rows of 103 is above 2%, so the
-- cycle still fails...
SELECT wh($$INSERT INTO orders VALUES (NULL, 'no key', 1, '2026-11-28 10:00')$$);
SELECT on_bad_row FROM treble_sync.alter_table('orders', on_bad_row => 'quarantine');
SELECT status, rows_bad, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('orders');
SELECT count(*) AS quarantined_by_failed_run FROM treble_sync.quarantine;

-- ...and below the ratio the rest is applied, the bad rows set aside
SELECT max_bad_row_ratio FROM treble_sync.alter_table('orders', max_bad_row_ratio => 0.05);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('orders');
SELECT count(*), sum(amount) FROM orders;
SELECT q.key, q.column_name, q.raw_value, q.reason, q.run_id = r.run_id AS this_run
FROM treble_sync.quarantine q, LATERAL (SELECT max(run_id) AS run_id FROM treble_sync.runs
                                        WHERE table_name = 'orders') r
ORDER BY q.key NULLS FIRST;

-- the same bad rows pulled again are not kept twice: their last run and
-- count move instead
SELECT wh($$UPDATE orders SET synced_at = '2026-11-28 10:30' WHERE order_id > 100 OR order_id IS NULL$$);
SELECT max_bad_row_ratio FROM treble_sync.alter_table('orders', max_bad_row_ratio => 1);
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('orders');
SELECT q.key, q.column_name, q.times_seen, q.run_id < q.last_run_id AS first_run_kept,
       q.last_run_id = r.run_id AS seen_this_run, q.last_seen_at > q.quarantined_at AS seen_later
FROM treble_sync.quarantine q, LATERAL (SELECT max(run_id) AS run_id FROM treble_sync.runs
                                        WHERE table_name = 'orders') r
ORDER BY q.key NULLS FIRST;
-- a new bad value of a known key is a new row
SELECT wh($$UPDATE orders SET code = 'still too long', synced_at = '2026-11-28 10:45' WHERE order_id = 101$$);
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('orders');
SELECT key, raw_value, times_seen FROM treble_sync.quarantine WHERE key = '101' ORDER BY quarantine_id;

-- skip: counted, not kept
SELECT wh($$UPDATE orders SET synced_at = '2026-11-28 11:00' WHERE order_id > 100 OR order_id IS NULL$$);
SELECT on_bad_row FROM treble_sync.alter_table('orders', on_bad_row => 'skip', max_bad_row_ratio => 1);
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('orders');
SELECT count(*) AS quarantined FROM treble_sync.quarantine;

-- rows without a cursor: no cycle pulls them; every run counts them and
-- says so in its warnings
SELECT wh($$INSERT INTO orders VALUES (201, 'nc1', 1, NULL), (202, 'nc2', 1, NULL)$$);
SELECT status, rows_pulled, rows_null_cursor, warnings FROM treble_sync.sync_table('orders');
SELECT wh($$INSERT INTO orders VALUES (203, 'new', 1, '2026-11-28 12:00')$$);
SELECT status, rows_pulled, rows_null_cursor, warnings FROM treble_sync.sync_table('orders');
SELECT wh($$DELETE FROM orders WHERE synced_at IS NULL$$);
SELECT status, rows_null_cursor, warnings FROM treble_sync.sync_table('orders');

-- the quarantine is not for everyone: it holds warehouse data
CREATE ROLE regress_outsider;
SET ROLE regress_outsider;
SELECT count(*) FROM treble_sync.quarantine;
RESET ROLE;
DROP ROLE regress_outsider;
