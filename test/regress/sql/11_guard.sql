-- The mass-delete guard: a warehouse answering with an empty or truncated
-- window (an outage, a half-loaded table) must not wipe the copy.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS guarded;
    CREATE TABLE guarded (id int PRIMARY KEY, scheduled_at timestamp, synced_at timestamp);
    -- 5 old rows, 10 in the hot window
    INSERT INTO guarded SELECT g, '2026-10-01', '2026-10-01' FROM generate_series(1, 5) g;
    INSERT INTO guarded SELECT g, '2026-11-28', '2026-11-28 12:00' FROM generate_series(6, 15) g;
$$);
SELECT name, max_delete_ratio FROM treble_sync.add_table('guarded', 'wh', event_column => 'scheduled_at');
SELECT treble_sync.alter_table('guarded', max_delete_ratio => 1.5);
SELECT status, rows_inserted FROM treble_sync.sync_table('guarded');

-- the window comes back empty: refused, nothing applied
SELECT wh($$DELETE FROM guarded WHERE id >= 6; UPDATE guarded SET synced_at = '2026-11-28 13:00' WHERE id = 1$$);
SELECT status, split_part(error, E'\n', 1) AS error, split_part(error, E'\n', 2) AS detail
FROM treble_sync.sync_table('guarded');
SELECT count(*) AS rows_kept, max(synced_at) AS newest FROM guarded;
SELECT watermark FROM treble_sync.tables WHERE name = 'guarded';

-- a real small removal passes
SELECT wh($$INSERT INTO guarded SELECT g, '2026-11-28', '2026-11-28 14:00' FROM generate_series(6, 14) g$$);
SELECT status, rows_updated, rows_deleted FROM treble_sync.sync_table('guarded');

-- the owner allows the large one once
SELECT wh($$DELETE FROM guarded WHERE id >= 6$$);
SELECT max_delete_ratio FROM treble_sync.alter_table('guarded', max_delete_ratio => 1);
SELECT status, rows_deleted FROM treble_sync.sync_table('guarded');
SELECT count(*) FROM guarded;

-- resync and snapshot tables are guarded over the whole copy
SELECT max_delete_ratio FROM treble_sync.alter_table('guarded', max_delete_ratio => 0.5);
SELECT wh($$DELETE FROM guarded WHERE id <= 4$$);
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.resync('guarded');
SELECT count(*) FROM guarded;
