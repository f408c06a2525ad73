-- verify() reports exactly the days that differ (rows deleted, altered or
-- added by hand, and old warehouse removals the hot window never sees),
-- moving aggregates only; repair() makes them equal again.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS visits_log;
    CREATE TABLE visits_log (visit_id int, page text, amount numeric, flag boolean,
        visited_at timestamp, synced_at timestamp);
    INSERT INTO visits_log SELECT g, 'p' || g, g * 1.5, g % 2 = 0,
        timestamp '2026-11-20' + (g % 8) * interval '1 day' + g * interval '1 minute',
        timestamp '2026-11-28 10:00'
    FROM generate_series(1, 80) g;
    -- an older version of key 1 on another day: the deduplicated view counts it once
    INSERT INTO visits_log VALUES (1, 'old', 0, false, '2026-11-20 05:00', '2026-11-27 10:00');
$$);
SELECT name FROM treble_sync.add_table('visits_log', 'wh', key_columns => '{visit_id}',
    event_column => 'visited_at', hot_window => '1 day');
SELECT status, rows_inserted FROM treble_sync.sync_table('visits_log');
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('visits_log') ORDER BY day;

-- damage four days by hand, and remove a row in the warehouse outside the window
DELETE FROM visits_log WHERE visit_id = 8;                                      -- 2026-11-20
UPDATE visits_log SET page = 'changed by hand' WHERE visit_id = 9;              -- 2026-11-21
INSERT INTO visits_log VALUES (1000, 'added by hand', 1, true, '2026-11-22 03:00', '2026-11-28 10:00');
SELECT wh($$DELETE FROM visits_log WHERE visit_id = 11$$);                      -- 2026-11-23
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('visits_log')
WHERE NOT match ORDER BY day;
SELECT day FROM treble_sync.verify('visits_log', since => '2026-11-22') WHERE NOT match ORDER BY day;
SELECT table_name, days, mismatched_days, checksum FROM treble_sync.verifications
ORDER BY verification_id DESC LIMIT 1;

-- repair one day, then the rest through verify
SELECT status, rows_inserted, rows_updated, rows_deleted, watermark_from = watermark_to AS same_watermark
FROM treble_sync.repair('visits_log', '2026-11-20');
SELECT day, match, repair_run_id IS NOT NULL AS repaired FROM treble_sync.verify('visits_log', repair => true)
WHERE NOT match ORDER BY day;
SELECT count(*) AS days_differing FROM treble_sync.verify('visits_log') WHERE NOT match;
SELECT * FROM wh_diff('SELECT DISTINCT ON (visit_id) * FROM visits_log ORDER BY visit_id, synced_at DESC',
                      'SELECT * FROM visits_log');

-- where the warehouse cannot compute the checksum, keys, cursors and days
-- are compared instead: a row deleted and another added on the same day
-- (same count) is still found
SET treble_sync.verify_checksum = off;
DELETE FROM visits_log WHERE visit_id = 12;                                     -- 2026-11-24
INSERT INTO visits_log VALUES (2000, 'added', 1, true, '2026-11-24 23:00', '2026-11-28 10:00');
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('visits_log') WHERE NOT match;
SELECT day, match, repair_run_id IS NOT NULL AS repaired FROM treble_sync.verify('visits_log', repair => true)
WHERE NOT match;
SELECT count(*) AS days_differing FROM treble_sync.verify('visits_log') WHERE NOT match;
SELECT checksum FROM treble_sync.verifications ORDER BY verification_id DESC LIMIT 1;
RESET treble_sync.verify_checksum;

-- equal values written another way: a numeric key and value rewritten
-- with another scale, a float's sign of zero, json's spacing.  The copy
-- takes the warehouse's exact form (what its readers see), so verify
-- matches once a cycle or a repair has brought it.  A timestamp written
-- with or without fraction digits, a boolean 't' or 'true', bytea in any
-- input form are one value with one output: nothing to bring.
SELECT wh($$
    DROP TABLE IF EXISTS rescaled;
    CREATE TABLE rescaled (k numeric PRIMARY KEY, amount numeric, f float8, j json,
        ts timestamp, flag boolean, b bytea, at timestamp, synced_at timestamp);
    INSERT INTO rescaled VALUES (-1.50, 2.0, 0, '{"a":1}', '2026-11-20 10:00:00', 't', '\x00ff',
                                 '2026-11-20 10:00', '2026-11-28 10:00'),
                                (7, 1, 1, '[]', '2026-11-20 11:00', false, 'a',
                                 '2026-11-20 11:00', '2026-11-28 10:00');
$$);
SELECT name FROM treble_sync.add_table('rescaled', 'wh', key_columns => '{k}',
    event_column => 'at', hot_window => '1 day');
SELECT status, rows_inserted FROM treble_sync.sync_table('rescaled');
-- rewritten in place (the cursor kept): only verify can see it
SELECT wh($$UPDATE rescaled SET k = -1.5000, amount = 2.000, f = '-0', j = '{"a": 1}',
            ts = '2026-11-20 10:00:00.000', flag = 'true', b = '\x00FF' WHERE k = -1.5$$);
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('rescaled') ORDER BY day;
SELECT status, rows_updated FROM treble_sync.repair('rescaled', '2026-11-20');
SELECT day, match FROM treble_sync.verify('rescaled') ORDER BY day;
SELECT * FROM wh_diff('SELECT * FROM rescaled', 'SELECT * FROM rescaled');
-- and a cycle brings a new scale of a key as it brings any other change
SELECT wh($$UPDATE rescaled SET k = 7.00, synced_at = '2026-11-28 11:00' WHERE k = 7$$);
SELECT status, rows_pulled, rows_updated FROM treble_sync.sync_table('rescaled');
SELECT * FROM wh_diff('SELECT * FROM rescaled', 'SELECT * FROM rescaled');
SELECT day, match FROM treble_sync.verify('rescaled') ORDER BY day;
-- the key-only window check too (a key moved to the window, rescaled, its cursor kept)
SELECT wh($$UPDATE rescaled SET at = '2026-11-28 09:00', synced_at = '2026-11-28 11:30' WHERE k = 7$$);
SELECT status FROM treble_sync.sync_table('rescaled');
SELECT wh($$UPDATE rescaled SET k = 7.000000 WHERE k = 7$$);
SELECT status, rows_updated FROM treble_sync.sync_table('rescaled');
SELECT * FROM wh_diff('SELECT * FROM rescaled', 'SELECT * FROM rescaled');
