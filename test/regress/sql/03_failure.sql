-- A failed cycle changes nothing and the next one converges: the warehouse
-- stopped, a NULL key, an unreachable server.  Passwords never show.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS messages;
    CREATE TABLE messages (message_id text, body text, created_at timestamp, synced_at timestamp);
    INSERT INTO messages VALUES
        ('m1', 'hello', '2026-11-27 10:00', '2026-11-27 10:00'),
        ('m2', 'world', '2026-11-28 10:00', '2026-11-28 10:00');
$$);
SELECT name FROM treble_sync.add_table('messages', 'wh', key_columns => '{message_id}',
                                       event_column => 'created_at');
SELECT status, rows_inserted FROM treble_sync.sync_table('messages');

-- the warehouse changes, then stops before the next cycle
SELECT wh($$
    UPDATE messages SET body = 'hello again', synced_at = '2026-11-29 09:00' WHERE message_id = 'm1';
    DELETE FROM messages WHERE message_id = 'm2';
    INSERT INTO messages VALUES ('m3', 'new', '2026-11-29 08:00', '2026-11-29 08:00');
$$);
\! $TS_AS_PG $TS_PG_BIN/pg_ctl -D $TS_WH_PGDATA -m fast -w stop > /dev/null 2>&1
SELECT status, watermark_from, watermark_to, rows_inserted, rows_deleted,
       substring(error FROM E'\nCONTEXT: ([^\n]*)') AS context,
       error LIKE 'connection to server%Connection refused%' AS driver_message,
       position(current_setting('treble_test.wh_password') IN error) = 0 AS no_password
FROM treble_sync.sync_table('messages');
-- nothing changed: the copy and the watermark are as before
SELECT * FROM messages ORDER BY message_id;
SELECT watermark FROM treble_sync.tables WHERE name = 'messages';

-- the warehouse is back: the next cycle converges
\! $TS_AS_PG $TS_PG_BIN/pg_ctl -D $TS_WH_PGDATA -l $TS_DIR/wh.log -w start > /dev/null 2>&1
SELECT status, watermark_from, watermark_to, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('messages');
SELECT * FROM messages ORDER BY message_id;
SELECT * FROM wh_diff('SELECT * FROM messages', 'SELECT * FROM messages');

-- a NULL key fails the cycle naming table and column; nothing is applied
SELECT wh($$
    INSERT INTO messages VALUES (NULL, 'no key', '2026-11-29 10:00', '2026-11-29 10:00'),
                                ('m4', 'fine', '2026-11-29 10:00', '2026-11-29 10:00');
$$);
SELECT status, rows_inserted, error FROM treble_sync.sync_table('messages');
SELECT count(*) AS rows_in_copy FROM messages;
SELECT watermark FROM treble_sync.tables WHERE name = 'messages';
SELECT wh($$ DELETE FROM messages WHERE message_id IS NULL $$);
SELECT status, rows_inserted FROM treble_sync.sync_table('messages');

-- a warehouse that cannot be reached: a failed run with the driver's message,
-- the server named in its context
CREATE SERVER nowhere FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=1;Database=wh');
CREATE USER MAPPING FOR CURRENT_USER SERVER nowhere OPTIONS (user 'reader', password 'pa;ss}word');
UPDATE treble_sync.tables SET server_name = 'nowhere' WHERE name = 'messages';
SELECT status, substring(error FROM E'\nCONTEXT: ([^\n]*)') AS context,
       error LIKE 'connection to server%Connection refused%' AS driver_message,
       error NOT LIKE '%pa;ss}word%' AS no_password
FROM treble_sync.sync_table('messages');
UPDATE treble_sync.tables SET server_name = 'wh' WHERE name = 'messages';

-- the server log never shows a password either
SELECT count(*) AS password_in_server_log
FROM regexp_split_to_table(pg_read_file(current_setting('data_directory') || '/../dest.log'), E'\n') AS l
WHERE position(current_setting('treble_test.wh_password') IN l) > 0 OR l LIKE '%pa;ss}word%';
