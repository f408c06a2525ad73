-- Every kind of warehouse table: an append-only stream with an integer
-- cursor, a snapshot table without a cursor, cursor_overlap absorbing a
-- late row, microsecond boundaries, idempotent reruns, resync, and
-- changing or removing a registration.
SET datestyle = ISO;

-- 1. append: an immutable event stream keyed and cursored by event_id
SELECT wh($$
    DROP TABLE IF EXISTS events;
    CREATE TABLE events (event_id bigint PRIMARY KEY, kind text, created_at timestamp);
    INSERT INTO events SELECT g, 'open', timestamp '2026-11-01' + g * interval '1 hour'
    FROM generate_series(1, 5) g;
$$);
SELECT name, mode, cursor_column, cursor_kind FROM treble_sync.add_table('events', 'wh',
    cursor_column => 'event_id', mode => 'append');
SELECT status, watermark_from, watermark_to, rows_pulled, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('events');
-- new events, and an old one rewritten in the warehouse: append never rewrites
SELECT wh($$
    INSERT INTO events VALUES (6, 'click', '2026-11-02'), (7, 'click', '2026-11-02 01:00');
    UPDATE events SET kind = 'rewritten' WHERE event_id = 1;
$$);
SELECT status, watermark_from, watermark_to, rows_pulled, rows_inserted, rows_updated
FROM treble_sync.sync_table('events');
SELECT * FROM events ORDER BY event_id;
-- nothing new: nothing written, an 'empty' run
SELECT status, watermark_from, watermark_to, rows_pulled FROM treble_sync.sync_table('events');

-- 2. cursor_overlap: a row that becomes visible late, with an id below the
-- watermark, is absorbed by the next cycle, and never duplicated
SELECT name, cursor_overlap FROM treble_sync.alter_table('events', cursor_overlap => '3');
SELECT wh($$INSERT INTO events VALUES (5000, 'far', '2026-11-03'), (6, 'click', '2026-11-02')
            ON CONFLICT (event_id) DO NOTHING$$);
SELECT status, watermark_to FROM treble_sync.sync_table('events');
SELECT wh($$INSERT INTO events VALUES (4998, 'late', '2026-11-03')$$);
SELECT status, watermark_from, watermark_to, rows_pulled, rows_inserted
FROM treble_sync.sync_table('events');
SELECT event_id, count(*) FROM events WHERE event_id >= 4990 GROUP BY 1 ORDER BY 1;

-- 3. snapshot: no cursor; rows gone from the warehouse leave the copy
SELECT wh($$
    DROP TABLE IF EXISTS plans;
    CREATE TABLE plans (plan_id int PRIMARY KEY, price numeric(8,2));
    INSERT INTO plans VALUES (1, 9.00), (2, 19.00), (3, 29.00);
$$);
SELECT name, mode, cursor_column FROM treble_sync.add_table('plans', 'wh', mode => 'snapshot',
    cursor_column => NULL);
SELECT status, watermark_to, rows_pulled, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('plans');
SELECT wh($$DELETE FROM plans WHERE plan_id = 2; UPDATE plans SET price = 31.00 WHERE plan_id = 3;
            INSERT INTO plans VALUES (4, 49.00)$$);
SELECT status, rows_pulled, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('plans');
SELECT * FROM plans ORDER BY plan_id;
SELECT status, rows_inserted, rows_updated, rows_deleted FROM treble_sync.sync_table('plans');

-- 4. microseconds: T is kept exactly, and a row 1 µs past it is not
-- skipped (a row written late at exactly T needs cursor_overlap)
SELECT wh($$
    DROP TABLE IF EXISTS ticks;
    CREATE TABLE ticks (tick_id int PRIMARY KEY, synced_at timestamp(6));
    INSERT INTO ticks VALUES (1, '2026-11-29 10:00:00.999999');
$$);
SELECT name FROM treble_sync.add_table('ticks', 'wh');
SELECT watermark_to FROM treble_sync.sync_table('ticks');
SELECT wh($$INSERT INTO ticks VALUES (2, '2026-11-29 10:00:01'), (3, '2026-11-29 10:00:00.999999')
            ON CONFLICT DO NOTHING$$);
SELECT status, watermark_to, rows_pulled, rows_inserted FROM treble_sync.sync_table('ticks');
SELECT * FROM ticks ORDER BY tick_id;

-- 5. idempotency: rerunning over the same window changes nothing, not a byte
SELECT wh($$
    DROP TABLE IF EXISTS visits;
    CREATE TABLE visits (visit_id int PRIMARY KEY, page text, visited_at timestamp, synced_at timestamp);
    INSERT INTO visits SELECT g, 'p' || g, timestamp '2026-11-27' + g * interval '1 hour',
                              timestamp '2026-11-27' + g * interval '1 hour'
    FROM generate_series(1, 40) g;
$$);
SELECT name FROM treble_sync.add_table('visits', 'wh', event_column => 'visited_at',
    hot_window => '0 days', cursor_overlap => '1 day');
SELECT status, rows_inserted FROM treble_sync.sync_table('visits');
CREATE TEMP TABLE visits_before AS SELECT ctid AS tid, xmin::text AS x, v.* FROM visits v;
SELECT status, rows_pulled > 0 AS pulled, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('visits');
SELECT count(*) AS rewritten FROM visits v JOIN visits_before b ON b.visit_id = v.visit_id
WHERE b.tid <> v.ctid OR b.x <> v.xmin::text;

-- 6. resync: the whole table again, equal to the warehouse, rows that the
-- hot window no longer covers included; indexes, grants and views stay
CREATE VIEW visit_pages AS SELECT page FROM visits;
GRANT SELECT ON visits TO PUBLIC;
SELECT wh($$DELETE FROM visits WHERE visit_id = 1; UPDATE visits SET page = 'old' WHERE visit_id = 2$$);
SELECT status, rows_deleted FROM treble_sync.sync_table('visits');   -- outside the window: stays
SELECT count(*) FROM visits WHERE visit_id IN (1, 2);
SELECT status, watermark_to, rows_pulled, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.resync('visits');
SELECT * FROM wh_diff('SELECT * FROM visits', 'SELECT * FROM visits');
SELECT count(*) FROM visit_pages;
SELECT has_table_privilege('public', 'visits', 'SELECT') AS still_granted;

-- 7. alter_table: checked like add_table; a new cursor starts over
SELECT treble_sync.alter_table('visits', event_column => 'nope');
SELECT treble_sync.alter_table('visits', mode => 'sideways');
SELECT treble_sync.alter_table('nope', enabled => false);
-- intervals carry units there too; '0' needs none, and clears initial_chunk
SELECT treble_sync.alter_table('visits', hot_window => '2');
SELECT treble_sync.alter_table('visits', hot_window => '-1 day');
SELECT treble_sync.alter_table('visits', hot_window => '2 days -1 second');
SELECT treble_sync.alter_table('visits', hot_window => '150 years');
SELECT treble_sync.alter_table('visits', hot_window => '0.2 seconds');
SELECT treble_sync.alter_table('visits', initial_chunk => '7');
SELECT treble_sync.alter_table('visits', initial_chunk => '-1 day');
SELECT treble_sync.alter_table('visits', initial_chunk => '7 days -1 hour');
SELECT treble_sync.alter_table('visits', initial_chunk => '100 years 1 day');
SELECT hot_window, initial_chunk FROM treble_sync.alter_table('visits', hot_window => '0', initial_chunk => '0');
SELECT name, enabled, hot_window, event_column, watermark IS NOT NULL AS kept
FROM treble_sync.alter_table('visits', enabled => false, hot_window => '1 day');
SELECT name, event_column, watermark IS NULL AS reset
FROM treble_sync.alter_table('visits', event_column => '', cursor_column => 'visited_at',
                             new_name => 'visits2');
SELECT status, rows_pulled, rows_inserted, rows_updated FROM treble_sync.sync_table('visits2');

-- 8. remove_table: the registration goes, the run log and (by default) the copy stay
SELECT treble_sync.remove_table('visits2');
SELECT count(*) AS registrations FROM treble_sync.tables WHERE name = 'visits2';
SELECT count(*) > 0 AS runs_kept FROM treble_sync.runs WHERE table_name = 'visits2';
SELECT count(*) FROM visits;
SELECT treble_sync.remove_table('plans', drop_local => true);
SELECT to_regclass('plans') IS NULL AS dropped;
SELECT treble_sync.remove_table('plans');
