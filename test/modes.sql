-- Across sessions: resync while another session reads the copy in a loop
-- (it sees the old rows or the new ones, never a mix or an empty table);
-- sync_all(server) running tables in parallel, one of them failing.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS treble_sync;
DROP SERVER IF EXISTS tapwh2 CASCADE;
DELETE FROM treble_sync.tables WHERE server_name = 'tapwh2';
DROP TABLE IF EXISTS tap_big, tap_a, tap_b, tap_gone;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER tapwh2 FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER tapwh2 OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), $$
    DROP TABLE IF EXISTS tap_big, tap_a, tap_b, tap_gone;
    CREATE TABLE tap_big (id int PRIMARY KEY, v text, synced_at timestamp);
    INSERT INTO tap_big SELECT g, repeat('x', 100), '2026-11-01' FROM generate_series(1, 100000) g;
    CREATE TABLE tap_a (id int PRIMARY KEY, synced_at timestamp);
    INSERT INTO tap_a VALUES (1, '2026-11-01');
    CREATE TABLE tap_b (id int PRIMARY KEY, synced_at timestamp);
    INSERT INTO tap_b VALUES (1, '2026-11-01');
    CREATE TABLE tap_gone (id int PRIMARY KEY, synced_at timestamp);
$$) \g /dev/null
SELECT (treble_sync.add_table(t, 'tapwh2')).name
FROM unnest('{tap_big,tap_a,tap_b,tap_gone}'::text[]) t \g /dev/null
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), 'DROP TABLE tap_gone') \g /dev/null
SELECT dblink_connect('locker', current_setting('treble_test.wh_libpq')) \g /dev/null
SELECT dblink_connect('caller', format('dbname=%s host=%s port=%s user=%s', current_database(),
       split_part(current_setting('unix_socket_directories'), ',', 1),
       current_setting('port'), current_user)) \g /dev/null

-- read the copy's count and sum in a loop until the other session's query ends
CREATE OR REPLACE FUNCTION pg_temp.read_while_busy(conn text, tab regclass)
RETURNS TABLE (n bigint, total bigint) LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        RETURN QUERY EXECUTE format('SELECT count(*), coalesce(sum(length(v)), 0) FROM %s', tab);
        EXIT WHEN dblink_is_busy(conn) = 0;
        PERFORM pg_sleep(0.01);
    END LOOP;
END
$$;
RESET client_min_messages;

SELECT plan(9);

-- 1. resync under a reader
SELECT is(status, 'success', 'the first sync loads 100,000 rows')
FROM treble_sync.sync_table('tap_big');
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), $$
    DELETE FROM tap_big WHERE id <= 30000;
    UPDATE tap_big SET v = repeat('y', 50) WHERE id > 90000;
$$) \g /dev/null
SELECT dblink_send_query('caller', $$SELECT status FROM treble_sync.resync('tap_big')$$) \g /dev/null
CREATE TEMP TABLE seen AS SELECT * FROM pg_temp.read_while_busy('caller', 'tap_big');
SELECT is(status, 'success', 'resync succeeds') FROM dblink_get_result('caller') AS t(status text);
SELECT dblink_get_result('caller') \g /dev/null
SELECT ok((SELECT count(*) FROM seen) >= 2, 'the reader read the copy during the resync');
SELECT is((SELECT array_agg(DISTINCT (n, total)::text ORDER BY (n, total)::text) FROM seen)
          <@ ARRAY['(100000,10000000)', '(70000,6500000)'], true,
          'the reader saw only the old state or the new one');
SELECT results_eq('SELECT count(*), sum(length(v)) FROM tap_big',
                  $$VALUES (70000::bigint, 6500000::bigint)$$, 'the copy is the warehouse''s');

-- 2. sync_all(server): one table blocked in the warehouse does not hold
-- the others back; a failing table does not stop them
SET treble_sync.max_parallel = 2;
SELECT dblink_exec('caller', 'SET treble_sync.max_parallel = 2') \g /dev/null
SELECT dblink_exec(current_setting('treble_test.wh_libpq'),
       $$INSERT INTO tap_a VALUES (2, '2026-11-02'); INSERT INTO tap_b VALUES (2, '2026-11-02')$$) \g /dev/null
SELECT dblink_exec('locker', 'BEGIN; LOCK TABLE tap_a IN ACCESS EXCLUSIVE MODE') \g /dev/null
SELECT dblink_send_query('caller', $$SELECT table_name, status FROM treble_sync.sync_all('tapwh2')$$) \g /dev/null
-- tap_a waits on the lock; the other worker goes through tap_b, tap_big and tap_gone
CREATE OR REPLACE FUNCTION pg_temp.wait_for_run(tab text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    s text;
BEGIN
    FOR i IN 1..400 LOOP
        SELECT status INTO s FROM treble_sync.runs WHERE table_name = tab
        AND started_at > now() - interval '1 minute' AND status <> 'running'
        ORDER BY run_id DESC LIMIT 1;
        IF s IS NOT NULL THEN RETURN s; END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN NULL;
END
$$;
SELECT is(pg_temp.wait_for_run('tap_b'), 'success', 'tap_b is synced while tap_a is blocked');
SELECT is(pg_temp.wait_for_run('tap_gone'), 'failed', 'tap_gone fails while tap_a is blocked');
SELECT dblink_exec('locker', 'COMMIT') \g /dev/null
SELECT results_eq($$SELECT table_name || ': ' || status FROM dblink_get_result('caller')
                      AS t(table_name text, status text)$$,
                  ARRAY['tap_a: success', 'tap_b: success', 'tap_big: empty', 'tap_gone: failed'],
                  'sync_all returns every table''s run, in name order');
SELECT dblink_get_result('caller') \g /dev/null
SELECT is(count(*), 2::bigint, 'tap_a has both rows') FROM tap_a;

SELECT * FROM finish();
\set QUIET 1
SELECT dblink_disconnect('locker') \g /dev/null
SELECT dblink_disconnect('caller') \g /dev/null
