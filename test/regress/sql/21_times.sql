-- Dates and times at their extremes (BC, ±infinity, years past 9999), each
-- carried exactly; and cursor stamps that cannot be a cut (infinity, far in
-- the future) left out and reported, so that later rows still arrive.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS extremes;
    CREATE TABLE extremes (id bigint PRIMARY KEY, ts timestamp(6), tstz timestamptz, d date,
        synced_at timestamp);
    INSERT INTO extremes VALUES
        (1, 'infinity', 'infinity', 'infinity', '2026-11-28'),
        (2, '-infinity', '-infinity', '-infinity', '2026-11-28'),
        (3, '0001-01-01 BC', '0001-01-01 00:00:00+00 BC', '0001-01-01 BC', '2026-11-28'),
        (4, '4713-01-01 BC', '4713-01-01 12:00:00+00 BC', '4713-01-01 BC', '2026-11-28'),
        (5, '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC', '4714-11-24 BC', '2026-11-28'),
        (6, '0044-03-15 12:30:00.250001 BC', '0044-03-15 12:30:00.250001+00 BC', '0044-03-15 BC',
         '2026-11-28'),
        (7, '10000-01-01', '10000-01-01 00:00:00+00', '10000-01-01', '2026-11-28'),
        (8, '294276-12-31 23:59:59.999999', '294276-12-31 23:59:59.999999+00', '5874897-12-31',
         '2026-11-28'),
        (9, '0001-01-01 00:00:00', '0001-01-01 00:00:00+00', '0001-01-01', '2026-11-28'),
        (10, '9999-12-31 23:59:59.999999', '2026-11-28 12:00:00-09:30', '9999-12-31', '2026-11-28');
$$);
SELECT name FROM treble_sync.add_table('extremes', 'wh');
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'extremes'::regclass AND attnum > 0 ORDER BY attnum;
SELECT status, rows_inserted, rows_bad, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('extremes');
-- value by value, timestamptz in UTC on both sides
SELECT * FROM wh_diff(
    $$SELECT id, ts, tstz AT TIME ZONE 'UTC', d, synced_at FROM extremes$$,
    $$SELECT id, ts, tstz AT TIME ZONE 'UTC', d, synced_at FROM extremes$$);
-- whatever the session's DateStyle and time zone
SET datestyle = 'SQL, DMY';
SET timezone = 'America/St_Johns';
SELECT wh($$UPDATE extremes SET synced_at = '2026-11-29', d = d - 1 WHERE id = 8$$);
SELECT status, rows_updated, rows_bad, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('extremes');
RESET timezone;
SET datestyle = ISO;
SELECT * FROM wh_diff(
    $$SELECT id, ts, tstz AT TIME ZONE 'UTC', d, synced_at FROM extremes$$,
    $$SELECT id, ts, tstz AT TIME ZONE 'UTC', d, synced_at FROM extremes$$);
-- chunked by an event date that holds them all: every row lands
SELECT name FROM treble_sync.add_table('extremes', 'wh', name => 'extremes_by_day',
    local_table => 'extremes_by_day', event_column => 'd', initial_chunk => '100 years');
SELECT status, rows_inserted, rows_bad, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('extremes_by_day');
SELECT * FROM wh_diff(
    $$SELECT id, ts, tstz AT TIME ZONE 'UTC', d, synced_at FROM extremes$$,
    $$SELECT id, ts, tstz AT TIME ZONE 'UTC', d, synced_at FROM extremes_by_day$$);
-- verify reads the same days on both sides, BC and infinities included
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('extremes_by_day') ORDER BY day;
SET treble_sync.verify_checksum = off;
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('extremes_by_day') ORDER BY day;
RESET treble_sync.verify_checksum;
SELECT treble_sync.remove_table('extremes_by_day', drop_local => true);
SELECT treble_sync.remove_table('extremes', drop_local => true);

-- One row stamped 'infinity' and one in the year 2999 must not become the
-- cut: every later correction and new row still arrives, and the run says
-- which rows were left out.
SELECT wh($$
    DROP TABLE IF EXISTS stamped;
    CREATE TABLE stamped (id bigint PRIMARY KEY, v text, synced_at timestamp);
    INSERT INTO stamped VALUES
        (1, 'a', localtimestamp - interval '2 hours'),
        (2, 'never', 'infinity'),
        (3, 'later', '2999-01-01'),
        (4, 'old', '-infinity');
$$);
SELECT name FROM treble_sync.add_table('stamped', 'wh');
SELECT status, rows_inserted, warnings, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('stamped');
SELECT id, v FROM stamped ORDER BY id;
SELECT watermark::timestamp < localtimestamp + interval '1 day' AS watermark_sane
FROM treble_sync.tables WHERE name = 'stamped';
SELECT wh($$
    UPDATE stamped SET v = 'a2', synced_at = localtimestamp - interval '1 hour' WHERE id = 1;
    INSERT INTO stamped VALUES (5, 'new', localtimestamp - interval '1 hour');
$$);
SELECT status, rows_inserted, rows_updated, warnings, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('stamped');
SELECT id, v FROM stamped ORDER BY id;
-- the stamps are fixed in the warehouse: the rows arrive
SELECT wh($$UPDATE stamped SET synced_at = localtimestamp WHERE id IN (2, 3, 4)$$);
SELECT status, rows_inserted, warnings, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('stamped');
SELECT * FROM wh_diff('SELECT id, v, synced_at FROM stamped', 'SELECT id, v, synced_at FROM stamped');
-- a timestamptz cursor likewise
SELECT wh($$
    DROP TABLE IF EXISTS stamped_tz;
    CREATE TABLE stamped_tz (id bigint PRIMARY KEY, synced_at timestamptz);
    INSERT INTO stamped_tz VALUES (1, now() - interval '1 hour'), (2, 'infinity'), (3, '-infinity'),
        (5, now() + interval '2 days');
$$);
SELECT name FROM treble_sync.add_table('stamped_tz', 'wh');
SELECT status, rows_inserted, warnings, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('stamped_tz');
SELECT wh($$INSERT INTO stamped_tz VALUES (4, now())$$);
SELECT status, rows_inserted, warnings, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('stamped_tz');
SELECT id FROM stamped_tz ORDER BY id;
-- the margin is a setting: a row two days ahead is pulled with three
SET treble_sync.cursor_max_lead = '3d';
SELECT status, rows_inserted, warnings, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('stamped_tz');
SELECT id FROM stamped_tz ORDER BY id;
RESET treble_sync.cursor_max_lead;
-- which only a superuser sets
CREATE ROLE regress_times_user;
SET ROLE regress_times_user;
SET treble_sync.cursor_max_lead = '3d';
RESET ROLE;
DROP ROLE regress_times_user;
SELECT treble_sync.remove_table('stamped_tz', drop_local => true);
SELECT treble_sync.remove_table('stamped', drop_local => true);
