-- A key of the hot window whose newest version is bad: the copy keeps its
-- last good version (the warehouse still has the key), and the row is
-- counted once, not deleted as gone, under 'quarantine' and 'skip', with
-- either hot_window_check.
SET datestyle = ISO;

-- quarantine, keys
SELECT wh($$
    DROP TABLE IF EXISTS wbv;
    CREATE TABLE wbv (id int PRIMARY KEY, code text, happened_at timestamp, synced_at timestamp);
    INSERT INTO wbv SELECT g, 'c' || g, '2026-11-28 09:00', '2026-11-28 10:00'
    FROM generate_series(1, 60) g;
$$);
CREATE TABLE wbv (id int PRIMARY KEY, code varchar(5), happened_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('wbv', 'wh', key_columns => '{id}', event_column => 'happened_at',
    hot_window => '3 days', local_table => 'wbv', on_bad_row => 'quarantine',
    max_bad_row_ratio => 1, hot_window_check => 'keys');
SELECT status, rows_pulled FROM treble_sync.sync_table('wbv');
SELECT wh($$UPDATE wbv SET code = 'much too long', synced_at = '2026-11-28 12:00' WHERE id = 2$$);
SELECT status, rows_deleted, rows_bad, warnings FROM treble_sync.sync_table('wbv');
SELECT count(*), min(code) FILTER (WHERE id = 2) AS id_2 FROM wbv;
SELECT status, rows_deleted, rows_bad FROM treble_sync.sync_table('wbv');
SELECT count(*), min(code) FILTER (WHERE id = 2) AS id_2 FROM wbv;
SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name = 'wbv';
SELECT treble_sync.remove_table('wbv', drop_local => true);
DELETE FROM treble_sync.quarantine WHERE table_name = 'wbv';

-- quarantine, rows
SELECT wh($$
    DROP TABLE IF EXISTS wbv;
    CREATE TABLE wbv (id int PRIMARY KEY, code text, happened_at timestamp, synced_at timestamp);
    INSERT INTO wbv SELECT g, 'c' || g, '2026-11-28 09:00', '2026-11-28 10:00'
    FROM generate_series(1, 60) g;
$$);
CREATE TABLE wbv (id int PRIMARY KEY, code varchar(5), happened_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('wbv', 'wh', key_columns => '{id}', event_column => 'happened_at',
    hot_window => '3 days', local_table => 'wbv', on_bad_row => 'quarantine',
    max_bad_row_ratio => 1, hot_window_check => 'rows');
SELECT status, rows_pulled FROM treble_sync.sync_table('wbv');
SELECT wh($$UPDATE wbv SET code = 'much too long', synced_at = '2026-11-28 12:00' WHERE id = 2$$);
SELECT status, rows_deleted, rows_bad, warnings FROM treble_sync.sync_table('wbv');
SELECT count(*), min(code) FILTER (WHERE id = 2) AS id_2 FROM wbv;
SELECT status, rows_deleted, rows_bad FROM treble_sync.sync_table('wbv');
SELECT count(*), min(code) FILTER (WHERE id = 2) AS id_2 FROM wbv;
SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name = 'wbv';
SELECT treble_sync.remove_table('wbv', drop_local => true);
DELETE FROM treble_sync.quarantine WHERE table_name = 'wbv';

-- skip, keys
SELECT wh($$
    DROP TABLE IF EXISTS wbv;
    CREATE TABLE wbv (id int PRIMARY KEY, code text, happened_at timestamp, synced_at timestamp);
    INSERT INTO wbv SELECT g, 'c' || g, '2026-11-28 09:00', '2026-11-28 10:00'
    FROM generate_series(1, 60) g;
$$);
CREATE TABLE wbv (id int PRIMARY KEY, code varchar(5), happened_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('wbv', 'wh', key_columns => '{id}', event_column => 'happened_at',
    hot_window => '3 days', local_table => 'wbv', on_bad_row => 'skip',
    max_bad_row_ratio => 1, hot_window_check => 'keys');
SELECT status, rows_pulled FROM treble_sync.sync_table('wbv');
SELECT wh($$UPDATE wbv SET code = 'much too long', synced_at = '2026-11-28 12:00' WHERE id = 2$$);
SELECT status, rows_deleted, rows_bad, warnings FROM treble_sync.sync_table('wbv');
SELECT count(*), min(code) FILTER (WHERE id = 2) AS id_2 FROM wbv;
SELECT status, rows_deleted, rows_bad FROM treble_sync.sync_table('wbv');
SELECT count(*), min(code) FILTER (WHERE id = 2) AS id_2 FROM wbv;
SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name = 'wbv';
SELECT treble_sync.remove_table('wbv', drop_local => true);
DELETE FROM treble_sync.quarantine WHERE table_name = 'wbv';

-- skip, rows
SELECT wh($$
    DROP TABLE IF EXISTS wbv;
    CREATE TABLE wbv (id int PRIMARY KEY, code text, happened_at timestamp, synced_at timestamp);
    INSERT INTO wbv SELECT g, 'c' || g, '2026-11-28 09:00', '2026-11-28 10:00'
    FROM generate_series(1, 60) g;
$$);
CREATE TABLE wbv (id int PRIMARY KEY, code varchar(5), happened_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('wbv', 'wh', key_columns => '{id}', event_column => 'happened_at',
    hot_window => '3 days', local_table => 'wbv', on_bad_row => 'skip',
    max_bad_row_ratio => 1, hot_window_check => 'rows');
SELECT status, rows_pulled FROM treble_sync.sync_table('wbv');
SELECT wh($$UPDATE wbv SET code = 'much too long', synced_at = '2026-11-28 12:00' WHERE id = 2$$);
SELECT status, rows_deleted, rows_bad, warnings FROM treble_sync.sync_table('wbv');
SELECT count(*), min(code) FILTER (WHERE id = 2) AS id_2 FROM wbv;
SELECT status, rows_deleted, rows_bad FROM treble_sync.sync_table('wbv');
SELECT count(*), min(code) FILTER (WHERE id = 2) AS id_2 FROM wbv;
SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name = 'wbv';
SELECT treble_sync.remove_table('wbv', drop_local => true);
DELETE FROM treble_sync.quarantine WHERE table_name = 'wbv';
SELECT wh($$DROP TABLE wbv$$);

-- One bad row in a quiet table (default max_bad_row_ratio 0.02): a cycle
-- that pulls fewer than 100 rows is judged as if it had pulled 100, so up
-- to 2 new bad rows are set aside and the table goes on; a feed whose rows
-- turn bad still stops it.
SELECT wh($$
    DROP TABLE IF EXISTS qb;
    CREATE TABLE qb (id int, code text, synced_at timestamp);
    INSERT INTO qb SELECT g, 'c' || g, '2026-11-28 10:00' FROM generate_series(1, 100) g;
$$);
CREATE TABLE qb (id int PRIMARY KEY, code varchar(5), synced_at timestamp);
SELECT name, max_bad_row_ratio FROM treble_sync.add_table('qb', 'wh', key_columns => '{id}',
    local_table => 'qb', on_bad_row => 'quarantine');
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('qb');
SELECT wh($$INSERT INTO qb VALUES (101, 'much too long', '2026-11-28 11:00')$$);
SELECT status, rows_pulled, rows_bad, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('qb');
SELECT wh($$INSERT INTO qb VALUES (201, 'ok', '2026-11-28 12:00')$$);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('qb');
SELECT key, times_seen FROM treble_sync.quarantine WHERE table_name = 'qb';
-- three bad rows of four: a broken feed, stopped
SELECT wh($$INSERT INTO qb VALUES (301, 'much too long', '2026-11-28 13:00'),
                                  (302, 'much too long', '2026-11-28 13:00'),
                                  (303, 'much too long', '2026-11-28 13:00'),
                                  (304, 'ok', '2026-11-28 13:00')$$);
SELECT status, rows_pulled, rows_bad, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('qb');
SELECT count(*) FROM qb;
SELECT treble_sync.remove_table('qb', drop_local => true);
DELETE FROM treble_sync.quarantine WHERE table_name = 'qb';
SELECT wh($$DROP TABLE qb$$);

-- the quarantine follows a registration renamed by alter_table(new_name):
-- the rows it holds are still known, not set aside again as new
SELECT wh($$
    DROP TABLE IF EXISTS qr;
    CREATE TABLE qr (id int, code text, synced_at timestamp);
    INSERT INTO qr SELECT g, CASE WHEN g = 2 THEN 'much too long' ELSE 'c' END,
        '2026-11-28 10:00' FROM generate_series(1, 60) g;
$$);
CREATE TABLE qr (id int PRIMARY KEY, code varchar(5), synced_at timestamp);
SELECT name FROM treble_sync.add_table('qr', 'wh', key_columns => '{id}', local_table => 'qr',
    on_bad_row => 'quarantine');
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('qr');
SELECT name FROM treble_sync.alter_table('qr', new_name => 'qr2');
SELECT wh($$UPDATE qr SET synced_at = '2026-11-28 11:00' WHERE id = 2$$);
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('qr2');
SELECT table_name, key, times_seen FROM treble_sync.quarantine WHERE table_name IN ('qr', 'qr2');
SELECT treble_sync.remove_table('qr2', drop_local => true);
DELETE FROM treble_sync.quarantine WHERE table_name = 'qr2';
SELECT wh($$DROP TABLE qr$$);
