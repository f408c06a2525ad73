-- The window advisor: cycles measure how late the corrections and removals
-- they apply are (a histogram per table and day), window_advice() and the
-- status view report it, a correction before the hot window opens the
-- table's 'late' incident, and verify() adds the days it finds different.
-- The warehouse's lateness is known: every synced_at below is chosen.
SET datestyle = ISO;
SET intervalstyle = postgres;

SELECT wh($$
    DROP TABLE IF EXISTS lat;
    CREATE TABLE lat (id int PRIMARY KEY, note text, happened_at timestamp, synced_at timestamp);
    INSERT INTO lat SELECT g, 'n' || g, '2026-11-27 08:00', '2026-11-27 08:10' FROM generate_series(1, 40) g;
    INSERT INTO lat SELECT g, 'n' || g, '2026-11-20 08:00', '2026-11-20 09:00' FROM generate_series(41, 45) g;
$$);
CREATE TABLE lat (id int PRIMARY KEY, note text, happened_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('lat', 'wh', key_columns => '{id}', event_column => 'happened_at',
    hot_window => '3 days', local_table => 'lat');
-- a first load applies no correction: nothing measured
SELECT status, rows_inserted FROM treble_sync.sync_table('lat');
SELECT count(*) FROM treble_sync.lateness l JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'lat';

-- corrections 1.5 h, 30 h and 50 h late inside the window, and one 218 h
-- late whose event (2026-11-20) lies before the window (from 2026-11-26)
SELECT wh($$
    UPDATE lat SET note = 'c', synced_at = '2026-11-27 09:30' WHERE id BETWEEN 1 AND 10;
    UPDATE lat SET note = 'c', synced_at = '2026-11-28 14:00' WHERE id BETWEEN 11 AND 15;
    UPDATE lat SET note = 'c', synced_at = '2026-11-29 10:00' WHERE id IN (16, 17, 41);
$$);
SELECT status, rows_updated, hot_window_from FROM treble_sync.sync_table('lat');
SELECT rows_late_outside FROM treble_sync.runs WHERE table_name = 'lat' ORDER BY run_id DESC LIMIT 1;
SELECT kind, late_from_hours, late_to_hours, rows, outside_window, max_late
FROM treble_sync.lateness l JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'lat'
ORDER BY kind, late_from_hours;
SELECT kind, closed_at IS NULL AS open FROM treble_sync.incidents i JOIN treble_sync.tables t USING (table_id)
WHERE t.name = 'lat' AND kind = 'late';

-- two window rows removed (their event 52 h 5 min before the cut), one new
SELECT wh($$
    DELETE FROM lat WHERE id IN (39, 40);
    INSERT INTO lat VALUES (46, 'n46', '2026-11-29 12:00', '2026-11-29 12:05');
$$);
SELECT status, rows_inserted, rows_updated, rows_deleted FROM treble_sync.sync_table('lat');
SELECT kind, late_from_hours, rows, outside_window, max_late
FROM treble_sync.lateness l JOIN treble_sync.tables t USING (table_id)
WHERE t.name = 'lat' AND kind = 'removal';
-- no correction came before the window this time, but one did today: still open
SELECT rows_late_outside FROM treble_sync.runs WHERE table_name = 'lat' ORDER BY run_id DESC LIMIT 1;
SELECT kind, closed_at IS NULL AS open FROM treble_sync.incidents i JOIN treble_sync.tables t USING (table_id)
WHERE t.name = 'lat' AND kind = 'late';
SELECT * FROM wh_diff('SELECT * FROM lat', 'SELECT * FROM lat');

-- 20 changes: 10 in [1 h, 2 h) make p50 2 hours; p99 and p99.9 fall in
-- [168 h, 240 h), held at the latest seen (218 h); a 10-day window holds them
SELECT table_name, hot_window, corrections, removals, late_p50, late_p99, late_p999, late_max,
       outside_window, outside_share, verify_outside_days, advised_window
FROM treble_sync.window_advice('lat');
SELECT table_name, late_outside_window, advised_window FROM treble_sync.status WHERE table_name = 'lat';
-- a period that starts tomorrow has nothing
SELECT DISTINCT day = (now() AT TIME ZONE 'UTC')::date AS today_in_utc FROM treble_sync.lateness;
SELECT corrections, removals, late_p50, advised_window
FROM treble_sync.window_advice('lat', (now() AT TIME ZONE 'UTC')::date + 1);

-- a row of an old day removed in the warehouse: no cycle sees it; verify
-- finds the day different, before the window
SELECT wh($$DELETE FROM lat WHERE id = 45$$);
SELECT day, warehouse_rows, local_rows, match FROM treble_sync.verify('lat') WHERE NOT match;
SELECT kind, late_from_hours, rows, outside_window FROM treble_sync.lateness l
JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'lat' AND kind = 'verify';
SELECT verify_outside_days FROM treble_sync.window_advice('lat');

-- a failed cycle leaves no figures behind: the measuring statements run
-- in the cycle's transaction
SELECT sum(rows) AS rows_before FROM treble_sync.lateness l JOIN treble_sync.tables t USING (table_id)
WHERE t.name = 'lat' \gset
SELECT wh($$UPDATE lat SET note = 'd', synced_at = '2026-11-29 13:00' WHERE id = 1$$);
SELECT (treble_sync.add_check('lat', 'range', column_name => 'id', max => 0)).kind;
SELECT status FROM treble_sync.sync_table('lat');
SELECT sum(rows) = :rows_before AS unchanged FROM treble_sync.lateness l
JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'lat';
SELECT treble_sync.drop_check(check_id) FROM treble_sync.checks c JOIN treble_sync.tables t USING (table_id)
WHERE t.name = 'lat';

-- who may read it: the histogram is as private as the run log
CREATE ROLE lat_nobody;
SET ROLE lat_nobody;
SELECT count(*) FROM treble_sync.lateness;
SELECT count(*) FROM treble_sync.window_advice('lat');
INSERT INTO treble_sync.lateness VALUES (1, current_date, 'correction', 0, 1, 1, 0, '1 hour');
RESET ROLE;
DROP ROLE lat_nobody;

-- a table with an integer cursor is not measured, and not advised on
SELECT wh($$
    DROP TABLE IF EXISTS lat_int;
    CREATE TABLE lat_int (id int PRIMARY KEY, happened_at timestamp, version bigint);
    INSERT INTO lat_int VALUES (1, '2026-11-27 08:00', 1), (2, '2026-11-27 08:00', 1);
$$);
CREATE TABLE lat_int (id int PRIMARY KEY, happened_at timestamp, version bigint);
SELECT name FROM treble_sync.add_table('lat_int', 'wh', key_columns => '{id}', event_column => 'happened_at',
    cursor_column => 'version', local_table => 'lat_int');
SELECT status FROM treble_sync.sync_table('lat_int');
SELECT wh($$UPDATE lat_int SET version = 2 WHERE id = 1$$);
SELECT status, rows_updated FROM treble_sync.sync_table('lat_int');
SELECT count(*) FROM treble_sync.lateness l JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'lat_int';
SELECT table_name FROM treble_sync.window_advice() WHERE table_name LIKE 'lat%';

-- the histogram goes with its registration
SELECT table_id AS lat_id FROM treble_sync.tables WHERE name = 'lat' \gset
SELECT treble_sync.remove_table('lat_int', drop_local => true);
SELECT treble_sync.remove_table('lat', drop_local => true);
SELECT count(*) FROM treble_sync.lateness WHERE table_id = :lat_id;
