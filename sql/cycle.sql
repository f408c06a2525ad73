-- The cycle's five steps against an SQLite table without a primary key:
-- freeze the cut, pull the delta, upsert by key, refresh the hot window,
-- advance the watermark. A first load, corrections, the same key twice in
-- one pull, removals in the hot window, event dates crossing the window, a
-- late row, an empty rerun, a watermark that never moves back,
-- microseconds. After each cycle the copy is compared, value by value, with
-- the warehouse as sqlite3 reads it (not through the extension).
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

SELECT $$
CREATE TABLE fact_campaign_sends (deployment_id INTEGER, campaign TEXT, status TEXT,
    cost DECIMAL(10,2), scheduled_at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO fact_campaign_sends VALUES
    (1, 'spring', 'sent',   0.10, '2026-11-10 09:00:00', '2026-11-10 09:00:01'),
    (2, 'spring', 'queued', 0.20, '2026-11-18 09:00:00', '2026-11-18 09:00:00'),
    (3, 'autumn', 'sent',   0.30, '2026-11-19 00:00:00', '2026-11-19 10:00:00'),
    (4, 'autumn', 'sent',   0.40, '2026-11-20 11:00:00', '2026-11-20 12:00:00'),
    (5, 'autumn', 'queued', 0.50, '2026-11-19 07:00:00', '2026-11-19 08:00:00'),
    (5, 'autumn', 'sent',   0.55, '2026-11-19 07:00:00', '2026-11-19 09:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

SELECT name FROM treble_sync.add_table('fact_campaign_sends', 'wh',
    key_columns => '{deployment_id}', event_column => 'scheduled_at');
\d fact_campaign_sends

-- the warehouse's rows, loaded with \copy from sqlite3 before each
-- comparison; sends_diff() lists the rows in which the newest version of
-- each key and the copy differ (none: the copy is exact)
CREATE TABLE wh_sends (deployment_id bigint, campaign text, status text, cost numeric,
    scheduled_at timestamp, synced_at timestamp);
CREATE FUNCTION sends_diff() RETURNS TABLE (side text, row_text text) LANGUAGE sql AS $$
    WITH w AS (SELECT DISTINCT ON (deployment_id) * FROM wh_sends
               ORDER BY deployment_id, synced_at DESC),
         l AS (SELECT deployment_id, campaign, status, cost::numeric, scheduled_at, synced_at
               FROM fact_campaign_sends)
    (SELECT 'warehouse only', w::text FROM (SELECT * FROM w EXCEPT ALL SELECT * FROM l) w)
    UNION ALL
    (SELECT 'copy only', l::text FROM (SELECT * FROM l EXCEPT ALL SELECT * FROM w) l)
    ORDER BY 1, 2
$$;

-- cycle 1, the first sync: everything with synced_at <= T; key 5 twice, newest wins
SELECT status, watermark_from, watermark_to, hot_window_from, rows_pulled,
       rows_inserted, rows_updated, rows_deleted, error
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT * FROM fact_campaign_sends ORDER BY deployment_id;
TRUNCATE wh_sends;
\copy wh_sends FROM PROGRAM 'sqlite3 -batch -csv -noheader "$TS_REGRESS_WH" "SELECT * FROM fact_campaign_sends"' WITH (FORMAT csv)
SELECT * FROM sends_diff();
SELECT watermark FROM treble_sync.tables WHERE name = 'fact_campaign_sends';

-- changes in the warehouse
SELECT $$
-- a correction re-emits key 2 with a fresh synced_at
UPDATE fact_campaign_sends SET status = 'delivered', synced_at = '2026-11-21 08:00:00' WHERE deployment_id = 2;
-- a new row
INSERT INTO fact_campaign_sends VALUES (6, 'winter', 'queued', 0.60, '2026-11-21 07:00:00', '2026-11-21 07:30:00');
-- a removal inside the hot window
DELETE FROM fact_campaign_sends WHERE deployment_id = 3;
-- key 4's event date moves out of the window, key 1's moves in
UPDATE fact_campaign_sends SET scheduled_at = '2026-11-01 00:00:00', synced_at = '2026-11-21 09:00:00' WHERE deployment_id = 4;
UPDATE fact_campaign_sends SET scheduled_at = '2026-11-21 06:00:00', synced_at = '2026-11-21 06:00:00' WHERE deployment_id = 1;
-- a late row: visible only now, synced_at before the watermark, event in the window
INSERT INTO fact_campaign_sends VALUES (7, 'winter', 'sent', 0.70, '2026-11-20 05:00:00', '2026-11-20 06:00:00');
-- a key twice inside the window
INSERT INTO fact_campaign_sends VALUES
    (8, 'winter', 'queued', 0.80, '2026-11-21 05:00:00', '2026-11-21 05:00:00'),
    (8, 'winter', 'sent',   0.85, '2026-11-21 05:00:00', '2026-11-21 06:30:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

-- cycle 2: inserts 6, 7, 8; updates 1, 2, 4; deletes 3; key 5 unchanged
SELECT status, watermark_from, watermark_to, hot_window_from, rows_pulled,
       rows_inserted, rows_updated, rows_deleted, error
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT * FROM fact_campaign_sends ORDER BY deployment_id;
TRUNCATE wh_sends;
\copy wh_sends FROM PROGRAM 'sqlite3 -batch -csv -noheader "$TS_REGRESS_WH" "SELECT * FROM fact_campaign_sends"' WITH (FORMAT csv)
SELECT * FROM sends_diff();

-- cycle 3: nothing new: 'empty', nothing rewritten, watermark kept
SELECT xmin AS xmin_before FROM fact_campaign_sends WHERE deployment_id = 5 \gset
SELECT status, watermark_from, watermark_to, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT xmin = :'xmin_before' AS row_not_rewritten FROM fact_campaign_sends WHERE deployment_id = 5;

-- the newest row disappears: max(synced_at) falls below the watermark,
-- which stays where it was
SELECT $$ DELETE FROM fact_campaign_sends WHERE deployment_id = 4; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, watermark_from, watermark_to
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT watermark FROM treble_sync.tables WHERE name = 'fact_campaign_sends';

-- a row one microsecond past the watermark is not skipped
SELECT $$ INSERT INTO fact_campaign_sends VALUES
    (9, 'winter', 'sent', 0.90, '2026-11-01 00:00:00', '2026-11-21 09:00:00.000001'); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, watermark_from, watermark_to, rows_inserted
FROM treble_sync.sync_table('fact_campaign_sends');
-- key 4 was removed outside the window: it stays (removals propagate only
-- in the window), and is the only difference
TRUNCATE wh_sends;
\copy wh_sends FROM PROGRAM 'sqlite3 -batch -csv -noheader "$TS_REGRESS_WH" "SELECT * FROM fact_campaign_sends"' WITH (FORMAT csv)
SELECT * FROM sends_diff();

-- a cycle that fails changes nothing: the warehouse table goes away
SELECT md5(string_agg(t::text, '|' ORDER BY deployment_id)) AS copy_before
FROM fact_campaign_sends t \gset
SELECT $$ ALTER TABLE fact_campaign_sends RENAME TO fact_campaign_sends_away; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, error IS NOT NULL AS has_error FROM treble_sync.sync_table('fact_campaign_sends');
SELECT md5(string_agg(t::text, '|' ORDER BY deployment_id)) = :'copy_before' AS copy_unchanged
FROM fact_campaign_sends t;
SELECT watermark FROM treble_sync.tables WHERE name = 'fact_campaign_sends';
-- back again, with a change: the next cycle converges
SELECT $$ ALTER TABLE fact_campaign_sends_away RENAME TO fact_campaign_sends;
UPDATE fact_campaign_sends SET status = 'bounced', synced_at = '2026-11-21 10:00:00' WHERE deployment_id = 6; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT status, watermark_from, watermark_to, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT deployment_id, status FROM fact_campaign_sends WHERE deployment_id = 6;

-- the run log tells the story
SELECT table_name, status, rows_pulled, rows_inserted, rows_updated, rows_deleted,
       finished_at >= started_at AS timed
FROM treble_sync.runs WHERE table_name = 'fact_campaign_sends' ORDER BY run_id;
SELECT count(*) AS runs_left_running FROM treble_sync.runs WHERE status = 'running';

-- a warehouse table whose rows are all gone, with an integer cursor: verify
-- reports every day of the copy; the cycle refreshes the hot window at the
-- watermark, counted from the copy's latest event, and the watermark
-- stays; the row older than the window stays, and repair empties its day
SELECT $$
CREATE TABLE emptied (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, happened TIMESTAMP);
INSERT INTO emptied VALUES (1, 10, '2026-11-20 08:00:00'), (2, 11, '2026-11-19 09:00:00'),
                           (3, 12, '2026-10-01 00:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT name FROM treble_sync.add_table('emptied', 'wh', cursor_column => 'seq',
    event_column => 'happened', hot_window => '3 days', max_delete_ratio => 1);
SELECT status, rows_inserted, watermark_to FROM treble_sync.sync_table('emptied');
SELECT $$ DELETE FROM emptied; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
SELECT day, warehouse_rows, local_rows, warehouse_max_cursor, local_max_cursor, match
FROM treble_sync.verify('emptied');
SELECT status, rows_deleted, watermark_to, hot_window_from, cut, error FROM treble_sync.sync_table('emptied');
SELECT id FROM emptied ORDER BY id;
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('emptied');
SELECT day, match, repair_run_id IS NOT NULL AS repaired FROM treble_sync.verify('emptied', repair => true);
SELECT status, rows_deleted, watermark_to FROM treble_sync.runs
WHERE run_id = (SELECT max(run_id) FROM treble_sync.runs WHERE table_name = 'emptied');
SELECT count(*) AS rows_left FROM emptied;
SELECT count(*) AS days FROM treble_sync.verify('emptied');
SELECT cut, days, mismatched_days FROM treble_sync.verifications WHERE table_name = 'emptied'
ORDER BY verification_id;
SELECT treble_sync.remove_table('emptied');
DROP TABLE emptied;
