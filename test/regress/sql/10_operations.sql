-- Watching the copies without pg_cron: the status view, metrics(), server
-- options for timeouts and retries, and a clear error for schedule().
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS watched;
    CREATE TABLE watched (id int PRIMARY KEY, "weird ""name""" text, synced_at timestamp);
    INSERT INTO watched VALUES (1, 'a', '2026-11-20 10:00'), (2, 'b', '2026-11-20 11:00');
$$);
SELECT name FROM treble_sync.add_table('watched', 'wh', name => 'watched "x"');

-- timeouts and retries are checked options of the server and of the table
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', query_timeout '-1');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', max_retries '11');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', login_timeout 'soon');
SELECT treble_sync.alter_table('watched "x"', max_retries => 11);
SELECT name, login_timeout, query_timeout, max_retries
FROM treble_sync.alter_table('watched "x"', query_timeout => 60, max_retries => 2);
SELECT name, query_timeout, max_retries
FROM treble_sync.alter_table('watched "x"', query_timeout => -1, max_retries => -1);

-- pg_cron is not installed in this database
SELECT treble_sync.schedule('watched "x"', '*/15 * * * *');
SELECT count(*) FROM treble_sync.schedules();

-- status and metrics after a success
SELECT status, attempts, cut FROM treble_sync.sync_table('watched "x"');
SELECT table_name, enabled, mode, schedule, last_status, watermark, lag, consecutive_failures,
       last_error, freshness_seconds > 0 AS has_freshness
FROM treble_sync.status WHERE table_name = 'watched "x"';
SELECT line FROM regexp_split_to_table(treble_sync.metrics(), E'\n') AS line
WHERE line LIKE '#%' OR line LIKE '%watched \\"x\\"%'
  AND line NOT LIKE 'treble_sync_freshness_seconds%' AND line NOT LIKE 'treble_sync_last_run%';

-- and after a failure: the warehouse table is gone
SELECT wh($$ALTER TABLE watched RENAME TO watched_gone$$);
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('watched "x"');
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('watched "x"');
SELECT last_status, consecutive_failures, split_part(last_error, E'\n', 1) AS last_error
FROM treble_sync.status WHERE table_name = 'watched "x"';
SELECT kind, closed_at IS NULL AS open FROM treble_sync.incidents i
JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'watched "x"' ORDER BY kind;
SELECT line FROM regexp_split_to_table(treble_sync.metrics(), E'\n') AS line
WHERE line LIKE 'treble_sync_runs_total{table="watched \\"x\\""%';
SELECT wh($$ALTER TABLE watched_gone RENAME TO watched$$);
SELECT status FROM treble_sync.sync_table('watched "x"');
SELECT kind, closed_at IS NULL AS open FROM treble_sync.incidents i
JOIN treble_sync.tables t USING (table_id) WHERE t.name = 'watched "x"' ORDER BY kind;
SELECT right(treble_sync.metrics(), 7) = E'\n# EOF\n' AS ends_with_eof;
