-- Several versions of one key on both sides of the hot window's bound:
-- the newest version always wins, also in later cycles.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS versions;
    CREATE TABLE versions (id bigint, status text, scheduled_at timestamp, synced_at timestamp);
    INSERT INTO versions VALUES (1, 'queued', '2026-11-28 09:00', '2026-11-28 09:00'),
                                (2, 'queued', '2026-11-28 09:00', '2026-11-28 09:00');
$$);
SELECT name FROM treble_sync.add_table('versions', 'wh', key_columns => '{id}', event_column => 'scheduled_at');
SELECT status, rows_inserted FROM treble_sync.sync_table('versions');

-- a newer version of key 1 whose event lies outside the window; the older
-- one stays in the warehouse, inside the window
SELECT wh($$ INSERT INTO versions VALUES (1, 'sent', '2026-11-01 09:00', '2026-11-28 10:00') $$);
SELECT status, rows_updated FROM treble_sync.sync_table('versions');
SELECT * FROM versions ORDER BY id;
-- the next cycles pull the older version again (its event is in the window)
-- but never put it back over the newer one
SELECT status, rows_updated FROM treble_sync.sync_table('versions');
SELECT status, rows_updated FROM treble_sync.sync_table('versions');
SELECT * FROM versions ORDER BY id;

-- the newest version of key 2 is inside the window and then removed: the
-- older version, still in the warehouse and in the window, comes back
SELECT wh($$ INSERT INTO versions VALUES (2, 'sent', '2026-11-28 11:00', '2026-11-28 11:00') $$);
SELECT status, rows_updated FROM treble_sync.sync_table('versions');
SELECT wh($$ DELETE FROM versions WHERE id = 2 AND status = 'sent' $$);
SELECT status, rows_updated, rows_deleted FROM treble_sync.sync_table('versions');
SELECT * FROM versions ORDER BY id;
SELECT * FROM wh_diff('SELECT DISTINCT ON (id) * FROM versions ORDER BY id, synced_at DESC',
                      'SELECT * FROM versions');

-- an exact cursor tie across the window edge: the greater row text wins,
-- whichever cycle it is (the first sync and the next agree)
SELECT wh($$
    DROP TABLE IF EXISTS tie;
    CREATE TABLE tie (id int, v text, scheduled_at timestamp, synced_at timestamp);
    INSERT INTO tie VALUES (1, 'b', '2026-11-01', '2026-11-10 10:00'),
                           (1, 'a', '2026-11-10', '2026-11-10 10:00'),
                           (2, 'x', '2026-11-10', '2026-11-10 11:00');
$$);
SELECT name FROM treble_sync.add_table('tie', 'wh', key_columns => '{id}', event_column => 'scheduled_at');
SELECT status, rows_inserted FROM treble_sync.sync_table('tie');
SELECT id, v FROM tie ORDER BY id;
SELECT status, rows_updated FROM treble_sync.sync_table('tie');
SELECT id, v FROM tie ORDER BY id;
