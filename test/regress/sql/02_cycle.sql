-- The five-step cycle against a warehouse table without a primary key:
-- initial load, delta upsert with corrections, the same key twice in one
-- pull, removals in the hot window, event dates crossing the window, a late
-- row, an empty cycle, a watermark that never moves back, microseconds.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS fact_campaign_sends;
    CREATE TABLE fact_campaign_sends (deployment_id bigint, campaign text, status text,
        cost numeric(10,2), scheduled_at timestamp, synced_at timestamp);
    INSERT INTO fact_campaign_sends VALUES
        (1, 'spring', 'sent',      0.10, '2026-11-10 09:00', '2026-11-10 09:00:01'),
        (2, 'spring', 'queued',    0.20, '2026-11-18 09:00', '2026-11-18 09:00:00'),
        (3, 'autumn', 'sent',      0.30, '2026-11-19 00:00', '2026-11-19 10:00:00'),
        (4, 'autumn', 'sent',      0.40, '2026-11-20 11:00', '2026-11-20 12:00:00'),
        (5, 'autumn', 'queued',    0.50, '2026-11-19 07:00', '2026-11-19 08:00:00'),
        (5, 'autumn', 'sent',      0.55, '2026-11-19 07:00', '2026-11-19 09:00:00');
$$);

-- the deduplicated view of the warehouse the copy must equal
CREATE FUNCTION sends_diff() RETURNS TABLE (side text, row_text text) LANGUAGE sql AS $$
    SELECT * FROM wh_diff(
        'SELECT DISTINCT ON (deployment_id) * FROM fact_campaign_sends
         ORDER BY deployment_id, synced_at DESC',
        'SELECT * FROM fact_campaign_sends')
$$;

SELECT name FROM treble_sync.add_table('fact_campaign_sends', 'wh',
    key_columns => '{deployment_id}', event_column => 'scheduled_at');

-- cycle 1, the first sync: everything with synced_at <= T; key 5 twice, newest wins
SELECT status, watermark_from, watermark_to, hot_window_from, rows_pulled,
       rows_inserted, rows_updated, rows_deleted, bytes_pulled > 0 AS bytes, error
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT * FROM fact_campaign_sends ORDER BY deployment_id;
SELECT * FROM sends_diff();
SELECT watermark FROM treble_sync.tables WHERE name = 'fact_campaign_sends';

-- changes in the warehouse
SELECT wh($$
    -- a correction re-emits key 2 with a fresh synced_at
    UPDATE fact_campaign_sends SET status = 'delivered', synced_at = '2026-11-21 08:00' WHERE deployment_id = 2;
    -- a new row
    INSERT INTO fact_campaign_sends VALUES (6, 'winter', 'queued', 0.60, '2026-11-21 07:00', '2026-11-21 07:30');
    -- a removal inside the hot window
    DELETE FROM fact_campaign_sends WHERE deployment_id = 3;
    -- key 4's event date moves out of the window, key 1's moves in
    UPDATE fact_campaign_sends SET scheduled_at = '2026-11-01 00:00', synced_at = '2026-11-21 09:00' WHERE deployment_id = 4;
    UPDATE fact_campaign_sends SET scheduled_at = '2026-11-21 06:00', synced_at = '2026-11-21 06:00' WHERE deployment_id = 1;
    -- a late row: visible only now, synced_at before the watermark, event in the window
    INSERT INTO fact_campaign_sends VALUES (7, 'winter', 'sent', 0.70, '2026-11-20 05:00', '2026-11-20 06:00');
    -- a key twice inside the window
    INSERT INTO fact_campaign_sends VALUES
        (8, 'winter', 'queued', 0.80, '2026-11-21 05:00', '2026-11-21 05:00'),
        (8, 'winter', 'sent',   0.85, '2026-11-21 05:00', '2026-11-21 06:30');
$$);

-- cycle 2: inserts 6, 7, 8; updates 1, 2, 4; deletes 3; key 5 unchanged
SELECT status, watermark_from, watermark_to, hot_window_from, rows_pulled,
       rows_inserted, rows_updated, rows_deleted, error
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT * FROM fact_campaign_sends ORDER BY deployment_id;
SELECT * FROM sends_diff();

-- cycle 3: nothing new: 'empty', nothing rewritten, watermark kept
SELECT xmin AS xmin_before FROM fact_campaign_sends WHERE deployment_id = 5 \gset
SELECT status, watermark_from, watermark_to, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT xmin = :'xmin_before' AS row_not_rewritten FROM fact_campaign_sends WHERE deployment_id = 5;

-- the newest row disappears: max(synced_at) falls below the watermark,
-- which stays where it was
SELECT wh($$ DELETE FROM fact_campaign_sends WHERE deployment_id = 4 $$);
SELECT status, watermark_from, watermark_to
FROM treble_sync.sync_table('fact_campaign_sends');
SELECT watermark FROM treble_sync.tables WHERE name = 'fact_campaign_sends';

-- a row one microsecond past the watermark is not skipped
SELECT wh($$ INSERT INTO fact_campaign_sends VALUES
    (9, 'winter', 'sent', 0.90, '2026-11-01 00:00', '2026-11-21 09:00:00.000001') $$);
SELECT status, watermark_from, watermark_to, rows_inserted
FROM treble_sync.sync_table('fact_campaign_sends');
-- key 4 was removed outside the window: it stays (removals propagate only in the window)
SELECT * FROM sends_diff();

-- the run log tells the story
SELECT table_name, status, rows_pulled, rows_inserted, rows_updated, rows_deleted,
       finished_at >= started_at AS timed, run_by
FROM treble_sync.runs WHERE table_name = 'fact_campaign_sends' ORDER BY run_id;
