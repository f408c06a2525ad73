-- A local copy partitioned by the event column: the upsert moves a row whose
-- event date changed partition, the hot-window refresh removes only what the
-- warehouse removed, and old partitions are left untouched.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS sends_by_month;
    CREATE TABLE sends_by_month (send_id bigint, status text,
        scheduled_at timestamp, synced_at timestamp);
    INSERT INTO sends_by_month
    SELECT g, 'sent', timestamp '2026-09-01' + g * interval '1 day',
           timestamp '2026-09-01 01:00' + g * interval '1 day'
    FROM generate_series(0, 88) g;   -- 2026-09-01 .. 2026-11-28
$$);
CREATE TABLE sends_by_month (send_id bigint, status text, scheduled_at timestamp,
    synced_at timestamp) PARTITION BY RANGE (scheduled_at);
CREATE TABLE sends_2026_09 PARTITION OF sends_by_month FOR VALUES FROM ('2026-09-01') TO ('2026-10-01');
CREATE TABLE sends_2026_10 PARTITION OF sends_by_month FOR VALUES FROM ('2026-10-01') TO ('2026-11-01');
CREATE TABLE sends_2026_11 PARTITION OF sends_by_month FOR VALUES FROM ('2026-11-01') TO ('2026-12-01');

-- the unique index must hold the partition key too
SELECT treble_sync.add_table('sends_by_month', 'wh', key_columns => '{send_id}',
    event_column => 'scheduled_at');
ALTER TABLE sends_by_month ADD PRIMARY KEY (send_id, scheduled_at);
SELECT treble_sync.add_table('sends_by_month', 'wh', key_columns => '{send_id}',
    event_column => 'scheduled_at', initial_chunk => '30 days', parallel => 2);
SELECT name FROM treble_sync.add_table('sends_by_month', 'wh', key_columns => '{send_id}',
    event_column => 'scheduled_at', initial_chunk => '30 days');

CREATE FUNCTION month_diff() RETURNS TABLE (side text, row_text text) LANGUAGE sql AS $$
    SELECT * FROM wh_diff('SELECT * FROM sends_by_month', 'SELECT * FROM sends_by_month')
$$;
SELECT status, rows_pulled, rows_inserted, watermark_to, hot_window_from
FROM treble_sync.sync_table('sends_by_month');
SELECT tableoid::regclass AS partition, count(*) FROM sends_by_month GROUP BY 1 ORDER BY 1;
SELECT * FROM month_diff();

-- a correction moves key 80 back into October; key 87 is removed in the window
SELECT wh($$
    UPDATE sends_by_month SET scheduled_at = '2026-10-15', synced_at = '2026-11-28 12:00'
    WHERE send_id = 80;
    DELETE FROM sends_by_month WHERE send_id = 87;
    INSERT INTO sends_by_month VALUES (89, 'queued', '2026-11-28 06:00', '2026-11-28 12:00');
$$);
SELECT pg_stat_force_next_flush();
CREATE TEMP TABLE before AS
SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables
WHERE relname IN ('sends_2026_09', 'sends_2026_10', 'sends_2026_11');
SELECT status, rows_pulled, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('sends_by_month');
SELECT * FROM month_diff();
SELECT tableoid::regclass AS partition, send_id, scheduled_at FROM sends_by_month
WHERE send_id IN (80, 87, 89) ORDER BY send_id;

-- the September partition was not written to
SELECT pg_sleep(0.2);
SELECT pg_stat_force_next_flush();
SELECT s.relname, s.n_tup_ins - b.n_tup_ins AS ins, s.n_tup_upd - b.n_tup_upd AS upd,
       s.n_tup_del - b.n_tup_del AS del
FROM pg_stat_user_tables s JOIN before b USING (relname) ORDER BY 1;
