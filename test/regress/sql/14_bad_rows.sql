-- Rows the copy cannot take: fail (default) names table, row, column and
-- reason, and keeps the row in the quarantine; quarantine keeps them
-- aside and applies the rest; skip counts them; above max_bad_row_ratio
-- the whole cycle fails.
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

-- fail: the first bad row stops the cycle, and says where it is in the
-- pull; the row, key and value, is kept in the quarantine with the failed
-- run (the error names no key or value: pg_read_all_stats reads it)
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('orders');
SELECT split_part(error, E'\n', 2) = 'DETAIL: Nothing of this cycle was applied. The row is kept in treble_sync.quarantine, quarantine_id '
           || (SELECT max(quarantine_id) FROM treble_sync.quarantine) || '.' AS names_the_quarantine_row
FROM treble_sync.runs WHERE run_id = (SELECT max(run_id) FROM treble_sync.runs);
SELECT count(*) FROM orders;
SELECT q.key, q.column_name, q.raw_value, q.reason, q.failed_run, r.status
FROM treble_sync.quarantine q JOIN treble_sync.runs r USING (run_id);

-- quarantine: with a NULL key too, 3 bad rows of 103 is above 2%, so the
-- cycle still fails...
SELECT wh($$INSERT INTO orders VALUES (NULL, 'no key', 1, '2026-11-28 10:00')$$);
SELECT on_bad_row FROM treble_sync.alter_table('orders', on_bad_row => 'quarantine');
SELECT status, rows_bad, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('orders');
SELECT count(*) AS quarantined_by_failed_run FROM treble_sync.quarantine WHERE NOT failed_run;

-- ...and below the ratio the rest is applied, the bad rows set aside
SELECT max_bad_row_ratio FROM treble_sync.alter_table('orders', max_bad_row_ratio => 0.05);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('orders');
SELECT count(*), sum(amount) FROM orders;
-- (101 was first kept by the failed run; set aside now, it counted as new)
SELECT q.key, q.column_name, q.raw_value, q.reason, q.run_id = r.run_id AS this_run, q.failed_run
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

-- A row already quarantined does not count again: the key-only window
-- check sees its key missing from the copy, but the quarantine holds that
-- version (same key, same cursor), so it is neither pulled again nor
-- counted against max_bad_row_ratio, and a quiet cycle stays quiet.
SELECT wh($$
    DROP TABLE IF EXISTS events_q;
    CREATE TABLE events_q (id int PRIMARY KEY, code text, at timestamp, synced_at timestamp);
    INSERT INTO events_q SELECT g, 'c' || g, '2026-11-28 08:00', '2026-11-28 09:00'
    FROM generate_series(1, 10) g;
    INSERT INTO events_q VALUES (11, 'far too long', '2026-11-28 08:00', '2026-11-28 09:00');
$$);
CREATE TABLE events_q (id int PRIMARY KEY, code varchar(5), at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('events_q', 'wh', key_columns => '{id}',
    event_column => 'at', hot_window => '3 days', local_table => 'events_q',
    on_bad_row => 'quarantine', max_bad_row_ratio => 0.1);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('events_q');
SELECT wh($$INSERT INTO events_q VALUES (12, 'new', '2026-11-28 09:00', '2026-11-28 10:00')$$);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('events_q');
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('events_q');
SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name = 'events_q';
-- pulled again whole (a repair of its day), it is set aside again, seen
-- once more, and still not counted against the ratio
SELECT status, rows_pulled, rows_bad FROM treble_sync.repair('events_q', '2026-11-28');
SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name = 'events_q';
-- corrected in the warehouse, it lands; the quarantine row says when it was resolved
SELECT wh($$UPDATE events_q SET code = 'fixed', synced_at = '2026-11-28 11:00' WHERE id = 11$$);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('events_q');
SELECT code FROM events_q WHERE id = 11;
SELECT key, resolved_run_id = (SELECT max(run_id) FROM treble_sync.runs WHERE table_name = 'events_q')
       AS resolved_by_last_run
FROM treble_sync.quarantine WHERE table_name = 'events_q';
-- and verify finds the day equal
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('events_q');

-- a cycle whose every row is bad is not 'empty': it set rows aside
SELECT wh($$INSERT INTO events_q VALUES (13, 'too long again', '2026-11-28 12:00', '2026-11-28 12:00')$$);
SELECT max_bad_row_ratio FROM treble_sync.alter_table('events_q', max_bad_row_ratio => 1);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('events_q');

-- rows without a key are each their own quarantine row, however alike
SELECT wh($$ALTER TABLE events_q DROP CONSTRAINT events_q_pkey, ALTER COLUMN id DROP NOT NULL$$);
SELECT wh($$INSERT INTO events_q VALUES (NULL, 'n1', '2026-11-28 12:00', '2026-11-28 13:00'),
                                        (NULL, 'n2', '2026-11-28 12:00', '2026-11-28 13:00'),
                                        (NULL, 'n3', '2026-11-28 12:00', '2026-11-28 13:00')$$);
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('events_q');
SELECT count(*) AS null_key_rows, sum(times_seen) AS seen FROM treble_sync.quarantine
WHERE table_name = 'events_q' AND key IS NULL;
-- verify counts the warehouse's rows that have a key (a row without one
-- has no place in the copy: 13 rows, of which the copy lacks the
-- quarantined 13), and by keys follows on_bad_row: no bad-row error under
-- 'quarantine'
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('events_q');
SET treble_sync.verify_checksum = off;
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('events_q');
RESET treble_sync.verify_checksum;
-- the same rows without a key pulled again (their cursor moved) are the
-- same quarantine rows, and do not count against the ratio again
SELECT max_bad_row_ratio FROM treble_sync.alter_table('events_q', max_bad_row_ratio => 0);
SELECT wh($$UPDATE events_q SET synced_at = '2026-11-28 13:30' WHERE id IS NULL$$);
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('events_q');
SELECT count(*) AS null_key_rows, sum(times_seen) AS seen FROM treble_sync.quarantine
WHERE table_name = 'events_q' AND key IS NULL;
-- but a new bad row does
SELECT wh($$INSERT INTO events_q VALUES (NULL, 'n4', '2026-11-28 12:00', '2026-11-28 14:00')$$);
SELECT status, rows_pulled, rows_bad, split_part(error, E'\n', 1) AS error
FROM treble_sync.sync_table('events_q');
-- with 13 corrected, the day matches: the rows without a key, quarantined,
-- are not the copy's to hold
SELECT wh($$UPDATE events_q SET code = 'ok13', synced_at = '2026-11-28 15:00' WHERE id = 13;
            DELETE FROM events_q WHERE code = 'n4'$$);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('events_q');
SELECT key, resolved_run_id IS NOT NULL AS resolved FROM treble_sync.quarantine
WHERE table_name = 'events_q' AND key IS NOT NULL ORDER BY key;
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('events_q');
SET treble_sync.verify_checksum = off;
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('events_q');
RESET treble_sync.verify_checksum;

-- money: carried exactly as numeric (the warehouse casts it, whatever its
-- lc_monetary), not as double precision with every value a bad row
SELECT wh($$
    DROP TABLE IF EXISTS priced;
    CREATE TABLE priced (id int PRIMARY KEY, price money, synced_at timestamp);
    INSERT INTO priced VALUES (1, '1234.50', '2026-11-28 10:00'), (2, '-0.01', '2026-11-28 10:00'),
                              (3, '92233720368547758.07', '2026-11-28 10:00'), (4, NULL, '2026-11-28 10:00');
$$);
SELECT name FROM treble_sync.add_table('priced', 'wh', event_column => 'synced_at');
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'priced'::regclass
AND attname = 'price';
SELECT status, rows_inserted, rows_bad FROM treble_sync.sync_table('priced');
SELECT * FROM wh_diff('SELECT id, price::numeric, synced_at FROM priced', 'SELECT * FROM priced');
SELECT day, match FROM treble_sync.verify('priced');
-- and verify by keys (without the checksum)
SET treble_sync.verify_checksum = off;
SELECT day, match FROM treble_sync.verify('priced');
RESET treble_sync.verify_checksum;

-- under 'skip' nothing remembers a bad row: the key-only window check
-- pulls its key again each cycle and sets it aside again, but a row the
-- window check pulls again was judged when it first came (its cursor is
-- behind the watermark), so it does not count against max_bad_row_ratio
SELECT wh($$
    DROP TABLE IF EXISTS events_s;
    CREATE TABLE events_s (id int PRIMARY KEY, code text, at timestamp, synced_at timestamp);
    INSERT INTO events_s SELECT g, 'c' || g, '2026-11-28 08:00', '2026-11-28 09:00'
    FROM generate_series(1, 10) g;
    INSERT INTO events_s VALUES (11, 'far too long', '2026-11-28 08:00', '2026-11-28 09:00');
$$);
CREATE TABLE events_s (id int PRIMARY KEY, code varchar(5), at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('events_s', 'wh', key_columns => '{id}',
    event_column => 'at', hot_window => '3 days', local_table => 'events_s',
    on_bad_row => 'skip', max_bad_row_ratio => 0.1);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('events_s');
SELECT wh($$INSERT INTO events_s VALUES (12, 'new', '2026-11-28 09:00', '2026-11-28 10:00')$$);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('events_s');
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('events_s');
