-- Quality checks inside the cycle: each kind passing and failing; a failing
-- 'error' check keeps the previous state (copy and watermark unchanged), a
-- failing 'warn' check commits with a warning.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS costs;
    CREATE TABLE costs (cost_id int PRIMARY KEY, campaign_id int, cost numeric, channel text,
        spent_at timestamp, synced_at timestamp);
    INSERT INTO costs SELECT g, g % 3, g, 'email', '2026-11-27', '2026-11-27 10:00'
    FROM generate_series(1, 20) g;
$$);
CREATE TABLE campaigns (campaign_id int PRIMARY KEY);
INSERT INTO campaigns VALUES (0), (1), (2);
SELECT name FROM treble_sync.add_table('costs', 'wh', event_column => 'spent_at');

-- bad declarations
SELECT treble_sync.add_check('costs', 'sometimes');
SELECT treble_sync.add_check('costs', 'range', column_name => 'cost');
SELECT treble_sync.add_check('costs', 'range', column_name => 'nope', min => 0);
SELECT treble_sync.add_check('costs', 'freshness');
SELECT treble_sync.add_check('costs', 'references', column_name => 'campaign_id');
SELECT treble_sync.add_check('costs', 'not_null', severity => 'fatal', column_name => 'cost');

-- one check of each kind
SELECT kind, columns, severity FROM treble_sync.add_check('costs', 'range', column_name => 'cost',
    min => 0, max => 100);
SELECT kind, columns FROM treble_sync.add_check('costs', 'not_null', columns => '{channel, cost}');
SELECT kind, columns FROM treble_sync.add_check('costs', 'unique', columns => '{cost}');
SELECT kind, ref_table FROM treble_sync.add_check('costs', 'references', column_name => 'campaign_id',
    ref_table => 'campaigns', ref_column => 'campaign_id');
SELECT kind, max_age FROM treble_sync.add_check('costs', 'freshness', max_age => '2 days');
SELECT kind, last_n, within, severity FROM treble_sync.add_check('costs', 'volume', last_n => 2,
    within => 0.5, severity => 'warn');

SELECT status, rows_inserted, warnings FROM treble_sync.sync_table('costs');
SELECT kind, passed, observed, failing_keys FROM treble_sync.check_results
WHERE run_id = (SELECT max(run_id) FROM treble_sync.runs WHERE table_name = 'costs') ORDER BY check_id;

-- each 'error' check failing keeps the old state
CREATE FUNCTION costs_state() RETURNS text LANGUAGE sql AS $$
    SELECT md5(string_agg(c::text, ',' ORDER BY cost_id)) || ' ' ||
           (SELECT watermark FROM treble_sync.tables WHERE name = 'costs') FROM costs c
$$;
CREATE TABLE state_before AS SELECT costs_state() AS s;
SELECT wh($$UPDATE costs SET cost = 500, synced_at = '2026-11-27 11:00' WHERE cost_id = 1$$);
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('costs');
SELECT costs_state() = s AS unchanged FROM state_before;
SELECT kind, passed, observed, failing_keys FROM treble_sync.check_results
WHERE run_id = (SELECT max(run_id) FROM treble_sync.runs WHERE table_name = 'costs') AND NOT passed;
SELECT wh($$UPDATE costs SET cost = 1, channel = NULL, synced_at = '2026-11-27 12:00' WHERE cost_id = 1$$);
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('costs');
SELECT costs_state() = s AS unchanged FROM state_before;
SELECT wh($$UPDATE costs SET channel = 'sms', campaign_id = 9, synced_at = '2026-11-27 13:00' WHERE cost_id = 1$$);
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('costs');
SELECT costs_state() = s AS unchanged FROM state_before;
SELECT wh($$UPDATE costs SET campaign_id = 1, cost = 1.5, synced_at = '2026-11-27 14:00' WHERE cost_id = 1$$);
SELECT status, error IS NULL AS ok FROM treble_sync.sync_table('costs');

-- freshness: the newest event more than 2 days before the cut
SELECT wh($$UPDATE costs SET spent_at = '2026-11-20', synced_at = '2026-11-29 10:00'$$);
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('costs');
SELECT wh($$UPDATE costs SET spent_at = '2026-11-28', synced_at = '2026-11-29 11:00'$$);

-- volume, a 'warn' check: far more changes than the mean commits with a warning
SELECT status, rows_updated, warnings FROM treble_sync.sync_table('costs');
SELECT wh($$INSERT INTO costs SELECT g, 1, g, 'email', '2026-11-28', '2026-11-29 12:00'
            FROM generate_series(21, 99) g$$);
SELECT status, rows_inserted, warnings FROM treble_sync.sync_table('costs');

-- unique: a value another key has already
SELECT wh($$UPDATE costs SET cost = 2, synced_at = '2026-11-29 13:00' WHERE cost_id = 3$$);
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('costs');
SELECT failing_keys FROM treble_sync.check_results
WHERE run_id = (SELECT max(run_id) FROM treble_sync.runs WHERE table_name = 'costs') AND NOT passed;
SELECT wh($$UPDATE costs SET cost = 3, synced_at = '2026-11-29 14:00' WHERE cost_id = 3$$);

-- drop_check
SELECT treble_sync.drop_check(check_id) FROM treble_sync.checks WHERE kind = 'volume';
SELECT treble_sync.drop_check(-1);
SELECT count(*) FROM treble_sync.checks c JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'costs';
