-- Chunked first loads: chunks planned at one cut T, each committed on its
-- own; a load that stops keeps its chunks and resumes at the same T; the
-- watermark is set only when the last step is in; parallel helpers.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS sends_history;
    CREATE TABLE sends_history (send_id bigint PRIMARY KEY, amount int,
        scheduled_at timestamp, synced_at timestamp);
    -- 300 rows over 30 days, 10 a day, synced one hour after they are scheduled
    INSERT INTO sends_history
    SELECT g, g % 100, timestamp '2026-10-30 00:00' + (g / 10) * interval '1 day' + (g % 10) * interval '1 hour',
           timestamp '2026-10-30 01:00' + (g / 10) * interval '1 day' + (g % 10) * interval '1 hour'
    FROM generate_series(0, 299) g;
    -- one row with no event date, and a duplicate key in two chunks (the newer wins)
    INSERT INTO sends_history VALUES (1000, 7, NULL, '2026-11-01 00:00');
    ALTER TABLE sends_history DROP CONSTRAINT sends_history_pkey;
    INSERT INTO sends_history VALUES (5, 55, '2026-11-20 00:00', '2026-11-20 00:00');
    -- a value the local table will refuse, in the third chunk (2026-11-13 to 11-20)
    UPDATE sends_history SET amount = 555 WHERE send_id = 150;
$$);
CREATE FUNCTION history_diff(local regclass) RETURNS TABLE (side text, row_text text)
LANGUAGE sql AS $$
    SELECT * FROM wh_diff(
        'SELECT DISTINCT ON (send_id) * FROM sends_history ORDER BY send_id, synced_at DESC',
        format('SELECT * FROM %s', local))
$$;

-- bad options
SELECT treble_sync.add_table('sends_history', 'wh', key_columns => '{send_id}',
    event_column => 'scheduled_at', initial_chunk => '0 days');
SELECT treble_sync.add_table('sends_history', 'wh', key_columns => '{send_id}',
    event_column => 'scheduled_at', initial_chunk => '7 days', parallel => 0);
SELECT treble_sync.add_table('sends_history', 'wh', key_columns => '{send_id}',
    event_column => 'scheduled_at', parallel => 2);

-- a local CHECK the warehouse breaks in the third chunk only
CREATE TABLE sends_history (send_id bigint PRIMARY KEY, amount int CHECK (amount <> 555),
    scheduled_at timestamp, synced_at timestamp);
SELECT name, initial_chunk, parallel FROM treble_sync.add_table('sends_history', 'wh',
    key_columns => '{send_id}', event_column => 'scheduled_at', initial_chunk => '7 days');

-- the first sync stops in chunk 3: chunks 1 and 2 stay, no watermark
SELECT status, rows_pulled, rows_inserted, watermark_to,
       split_part(error, E'\n', 1) AS error, error LIKE '%loading chunk 3 of 4%' AS names_chunk
FROM treble_sync.sync_table('sends_history');
SELECT chunk, lo, hi, done, rows_pulled, rows_written FROM treble_sync.load_chunks ORDER BY chunk;
SELECT count(*), min(scheduled_at), max(scheduled_at) FROM sends_history;
SELECT watermark IS NULL AS no_watermark, load_cut FROM treble_sync.tables WHERE name = 'sends_history';

-- meanwhile the warehouse moves on: a row written after T waits for the next cycle
SELECT wh($$INSERT INTO sends_history VALUES (2000, 1, '2026-11-28 00:00', '2026-11-29 00:00')$$);

-- fixed locally; the next sync resumes at chunk 3 with the same T
ALTER TABLE sends_history DROP CONSTRAINT sends_history_amount_check;
SELECT status, rows_pulled, rows_inserted, rows_updated, rows_deleted, watermark_from,
       watermark_to, hot_window_from, error
FROM treble_sync.sync_table('sends_history');
SELECT count(*) AS chunks_left FROM treble_sync.load_chunks;
SELECT watermark, load_cut FROM treble_sync.tables WHERE name = 'sends_history';
SELECT * FROM history_diff('sends_history') WHERE row_text NOT LIKE '(2000,%';
SELECT * FROM sends_history WHERE send_id IN (5, 1000, 2000) ORDER BY send_id;

-- the next cycle is an ordinary one
SELECT status, rows_inserted, watermark_to FROM treble_sync.sync_table('sends_history');
SELECT * FROM history_diff('sends_history');

-- parallel helpers load the same history into another table
SELECT name, parallel FROM treble_sync.add_table('sends_history', 'wh',
    key_columns => '{send_id}', event_column => 'scheduled_at', initial_chunk => '3 days',
    parallel => 3, local_table => 'sends_parallel', name => 'sends_parallel');
SELECT status, rows_pulled, rows_deleted, watermark_to, error
FROM treble_sync.sync_table('sends_parallel');
SELECT * FROM history_diff('sends_parallel');
SELECT count(*) AS chunks_left FROM treble_sync.load_chunks;

-- parallel helpers and a chunk with a value the copy cannot take (555 in
-- a numeric(2), in chunk 21 of the load, each of 1,440 rows): the failed chunk
-- is loaded once in the run (no other worker claims it again, even at the
-- moment its failure is rolled back), its bad row kept once in the
-- quarantine, whichever worker met it; the next sync loads what is left
SELECT wh($$
    DROP TABLE IF EXISTS sends_many;
    CREATE TABLE sends_many (send_id bigint, amount int, scheduled_at timestamp, synced_at timestamp);
    INSERT INTO sends_many SELECT g, g % 100, timestamp '2026-10-20' + g * interval '1 minute',
        timestamp '2026-10-20' + g * interval '1 minute' FROM generate_series(1, 54000) g;
    UPDATE sends_many SET amount = 555 WHERE send_id = 30000;
$$);
CREATE TABLE sends_failing (send_id bigint PRIMARY KEY, amount numeric(2),
    scheduled_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('sends_many', 'wh',
    key_columns => '{send_id}', event_column => 'scheduled_at', initial_chunk => '1 day',
    parallel => 3, local_table => 'sends_failing', name => 'sends_failing');
SELECT status FROM treble_sync.sync_table('sends_failing');
SELECT key, column_name, times_seen, failed_run FROM treble_sync.quarantine
WHERE table_name = 'sends_failing';
ALTER TABLE sends_failing ALTER amount TYPE int;
SELECT status FROM treble_sync.sync_table('sends_failing');
SELECT count(*) AS rows, count(*) FILTER (WHERE amount = 555) AS the_bad_one FROM sends_failing;
SELECT treble_sync.remove_table('sends_failing');
DELETE FROM treble_sync.quarantine WHERE table_name = 'sends_failing';
DROP TABLE sends_failing;

-- without an event column the cursor is the chunk column
SELECT name FROM treble_sync.add_table('sends_history', 'wh', key_columns => '{send_id}',
    initial_chunk => '10 days', local_table => 'sends_by_cursor', name => 'sends_by_cursor');
SELECT status, rows_pulled, watermark_to FROM treble_sync.sync_table('sends_by_cursor');
SELECT * FROM history_diff('sends_by_cursor');

-- nothing is running now
SELECT count(*) FROM treble_sync.progress;
