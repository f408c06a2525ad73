-- Cycles across sessions: overlap refused, the worker's process title,
-- cancelling the caller, terminating the worker.  A warehouse session holds
-- a lock on the warehouse table to keep a cycle in flight.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS treble_sync;
DROP SERVER IF EXISTS tapwh CASCADE;
DELETE FROM treble_sync.tables WHERE name = 'tap_sends';
DROP TABLE IF EXISTS tap_sends;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER tapwh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER tapwh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), $$
    DROP TABLE IF EXISTS tap_sends;
    CREATE TABLE tap_sends (deployment_id int, scheduled_at timestamp, synced_at timestamp);
    INSERT INTO tap_sends VALUES (1, '2026-11-28', '2026-11-28');
$$) \g /dev/null
SELECT name FROM treble_sync.add_table('tap_sends', 'tapwh', key_columns => '{deployment_id}',
                                       event_column => 'scheduled_at') \g /dev/null

-- the pid of the worker running a cycle of a table, once its 'running' run
-- row is committed (a signal before that stops the worker before it logs
-- a run), waiting up to 10 s
CREATE OR REPLACE FUNCTION pg_temp.worker_pid(tab text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    p int;
BEGIN
    FOR i IN 1..200 LOOP
        PERFORM pg_stat_clear_snapshot();
        SELECT pid INTO p FROM pg_stat_activity
        WHERE backend_type = 'treble_sync worker' AND query = 'treble_sync cycle of ' || tab;
        IF p IS NOT NULL AND EXISTS (SELECT 1 FROM treble_sync.runs r WHERE r.table_name = tab
                                     AND r.status = 'running' AND r.worker_pid = p) THEN
            RETURN p;
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN NULL;
END
$$;
-- wait up to 10 s for no worker of the table to remain
CREATE OR REPLACE FUNCTION pg_temp.workers_gone(tab text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..200 LOOP
        PERFORM pg_stat_clear_snapshot();
        IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'treble_sync worker'
                       AND query = 'treble_sync cycle of ' || tab) THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN false;
END
$$;

-- wait up to 30 s for a query to return true, looking every 10 ms: for a
-- state the test names, never for a length of time
CREATE OR REPLACE FUNCTION pg_temp.wait_until(query text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    done boolean;
BEGIN
    FOR i IN 1..3000 LOOP
        PERFORM pg_stat_clear_snapshot();
        EXECUTE query INTO done;
        IF done THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.01);
    END LOOP;
    RETURN false;
END
$$;
-- the cycle's statement waits for the warehouse's lock
CREATE OR REPLACE FUNCTION pg_temp.blocked_on_warehouse() RETURNS boolean LANGUAGE sql AS $$
    SELECT n > 0 FROM dblink(current_setting('treble_test.wh_libpq'),
        $q$SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'tap_sends'::regclass$q$) AS t(n bigint)
$$;

-- count the copy in a loop until the other session's query ends
CREATE OR REPLACE FUNCTION pg_temp.read_sums_while_busy(conn text)
RETURNS TABLE (n bigint, total bigint) LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        RETURN QUERY SELECT count(*), coalesce(sum(deployment_id), 0) FROM tap_sends;
        EXIT WHEN dblink_is_busy(conn) = 0;
        PERFORM pg_sleep(0.005);
    END LOOP;
END
$$;

SELECT dblink_connect('locker', current_setting('treble_test.wh_libpq')) \g /dev/null
SELECT dblink_connect('caller', format('dbname=%s host=%s port=%s user=%s', current_database(),
       split_part(current_setting('unix_socket_directories'), ',', 1),
       current_setting('port'), current_user)) \g /dev/null
RESET client_min_messages;

SELECT plan(24);

-- 1. a second cycle while one is in flight returns 'skipped' at once
SELECT dblink_exec('locker', 'BEGIN; LOCK TABLE tap_sends IN ACCESS EXCLUSIVE MODE') \g /dev/null
SELECT dblink_send_query('caller', $$SELECT status FROM treble_sync.sync_table('tap_sends')$$) \g /dev/null
SELECT pg_temp.worker_pid('tap_sends') AS wpid \gset
SELECT isnt(:'wpid'::text, ''::text, 'a worker runs the cycle');
SELECT ok(position('treble_sync' IN encode(pg_read_binary_file('/proc/' || :'wpid' || '/cmdline'), 'escape')) > 0,
          'the worker''s process title contains treble_sync');
SELECT is(status, 'skipped', 'an overlapping cycle of the same table is skipped')
FROM treble_sync.sync_table('tap_sends');
SELECT is(error, 'another cycle of this table is already running', 'the skipped run says why')
FROM treble_sync.runs WHERE table_name = 'tap_sends' ORDER BY run_id DESC LIMIT 1;
SELECT dblink_exec('locker', 'COMMIT') \g /dev/null
SELECT is(status, 'success', 'the first cycle completes once the warehouse answers')
FROM dblink_get_result('caller') AS t(status text);
SELECT dblink_get_result('caller') \g /dev/null

-- 1b. while it waits on the warehouse, any session sees its progress
SELECT dblink_exec('locker', 'BEGIN; LOCK TABLE tap_sends IN ACCESS EXCLUSIVE MODE') \g /dev/null
SELECT dblink_send_query('caller', $$SELECT status FROM treble_sync.sync_table('tap_sends')$$) \g /dev/null
SELECT pg_temp.worker_pid('tap_sends') AS wpid \gset
SELECT pg_temp.wait_until('SELECT pg_temp.blocked_on_warehouse()') \g /dev/null
SELECT is(table_name || ' / ' || phase || ' / ' || (worker_pid = :'wpid'::int)::text,
          'tap_sends / freezing the cut / true', 'the progress view shows the cycle in flight')
FROM treble_sync.progress;
SELECT ok(run_id = (SELECT max(run_id) FROM treble_sync.runs WHERE table_name = 'tap_sends')
          AND elapsed > interval '0', 'with its run id and elapsed time')
FROM treble_sync.progress;
SELECT dblink_exec('locker', 'COMMIT') \g /dev/null
SELECT * FROM dblink_get_result('caller') AS t(status text) \g /dev/null
SELECT dblink_get_result('caller') \g /dev/null
SELECT is(count(*), 0::bigint, 'and nothing once it is over') FROM treble_sync.progress;

-- 2. cancelling the waiting caller stops the worker; nothing is applied
SELECT dblink_exec(current_setting('treble_test.wh_libpq'),
       $$INSERT INTO tap_sends VALUES (2, '2026-11-29', '2026-11-29')$$) \g /dev/null
SELECT dblink_exec('locker', 'BEGIN; LOCK TABLE tap_sends IN ACCESS EXCLUSIVE MODE') \g /dev/null
SELECT dblink_send_query('caller', $$SELECT status FROM treble_sync.sync_table('tap_sends')$$) \g /dev/null
SELECT pg_temp.worker_pid('tap_sends') AS wpid \gset
SELECT ok(pg_cancel_backend(pid), 'cancel the caller')
FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
  AND query LIKE '%sync_table(''tap_sends'')%';
SET client_min_messages = warning;
SELECT * FROM dblink_get_result('caller', false) AS t(status text) \g /dev/null
RESET client_min_messages;
SELECT matches(dblink_error_message('caller'), 'canceling statement due to user request',
               'the caller reports the cancel');
SELECT dblink_get_result('caller', false) \g /dev/null
SELECT ok(pg_temp.workers_gone('tap_sends'), 'the worker stops while the warehouse still blocks it');
SELECT dblink_exec('locker', 'COMMIT') \g /dev/null
SELECT is(status || ': ' || split_part(error, ';', 1), 'failed: cancelled: the worker was terminated',
          'the run is logged as failed and cancelled')
FROM treble_sync.runs WHERE table_name = 'tap_sends' ORDER BY run_id DESC LIMIT 1;
SELECT is(count(*), 1::bigint, 'the cancelled cycle applied nothing') FROM tap_sends;

-- 3. terminating the worker mid-cycle rolls it back and logs it
SELECT dblink_exec('locker', 'BEGIN; LOCK TABLE tap_sends IN ACCESS EXCLUSIVE MODE') \g /dev/null
SELECT dblink_send_query('caller', $$SELECT status FROM treble_sync.sync_table('tap_sends')$$) \g /dev/null
SELECT pg_temp.worker_pid('tap_sends') AS wpid \gset
SELECT ok(pg_terminate_backend(:'wpid'::int), 'terminate the worker');
SELECT is(status, 'failed', 'the caller gets the failed run while the warehouse still blocks')
FROM dblink_get_result('caller') AS t(status text);
SELECT dblink_get_result('caller') \g /dev/null
SELECT dblink_exec('locker', 'COMMIT') \g /dev/null

-- 3b. cancelling the worker stops the remote query in flight
SELECT dblink_exec('locker', 'BEGIN; LOCK TABLE tap_sends IN ACCESS EXCLUSIVE MODE') \g /dev/null
SELECT dblink_send_query('caller', $$SELECT status FROM treble_sync.sync_table('tap_sends')$$) \g /dev/null
SELECT pg_temp.worker_pid('tap_sends') AS wpid \gset
SELECT pg_temp.wait_until('SELECT pg_temp.blocked_on_warehouse()') \g /dev/null
SELECT ok(pg_cancel_backend(:'wpid'::int), 'cancel the worker');
SELECT is(status, 'failed', 'the cancelled cycle fails while the warehouse still blocks')
FROM dblink_get_result('caller') AS t(status text);
SELECT dblink_get_result('caller') \g /dev/null
SELECT is(split_part(error, E'\n', 1), 'cancelled: canceling statement due to user request',
          'the run says it was cancelled')
FROM treble_sync.runs WHERE table_name = 'tap_sends' ORDER BY run_id DESC LIMIT 1;
SELECT dblink_exec('locker', 'COMMIT') \g /dev/null

-- 4. and the next cycle converges
SELECT is(status, 'success', 'the next cycle succeeds') FROM treble_sync.sync_table('tap_sends');
SELECT is(count(*), 2::bigint, 'the copy has both rows') FROM tap_sends;

-- 5. four sessions sync the same table at once: one runs, three are skipped
SELECT dblink_connect('c' || i, format('dbname=%s host=%s port=%s user=%s', current_database(),
       split_part(current_setting('unix_socket_directories'), ',', 1),
       current_setting('port'), current_user)) FROM generate_series(1, 4) i \g /dev/null
SELECT dblink_exec(current_setting('treble_test.wh_libpq'),
       $$INSERT INTO tap_sends VALUES (3, '2026-11-29', '2026-11-29 01:00')$$) \g /dev/null
SELECT dblink_exec('locker', 'BEGIN; LOCK TABLE tap_sends IN ACCESS EXCLUSIVE MODE') \g /dev/null
SELECT dblink_send_query('c' || i, $$SELECT status FROM treble_sync.sync_table('tap_sends')$$)
FROM generate_series(1, 4) i \g /dev/null
-- until the three that came second have their answer
SELECT pg_temp.wait_until($$SELECT count(*) = 3 FROM generate_series(1, 4) i WHERE dblink_is_busy('c' || i) = 0$$) \g /dev/null
SELECT dblink_exec('locker', 'COMMIT') \g /dev/null
SELECT is(array_agg(status ORDER BY status), ARRAY['skipped', 'skipped', 'skipped', 'success'],
          'four sessions at once: one cycle runs, three are skipped')
FROM generate_series(1, 4) i, LATERAL dblink_get_result('c' || i) AS t(status text);
SELECT dblink_disconnect('c' || i) FROM generate_series(1, 4) i \g /dev/null

-- 6. a reader counting and summing the copy during cycles sees the state
-- before a cycle or after it, never a mix
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), $$
    INSERT INTO tap_sends SELECT g, '2026-11-29', '2026-11-29 02:00' FROM generate_series(100, 20099) g
$$) \g /dev/null
SELECT dblink_send_query('caller', $$SELECT status FROM treble_sync.sync_table('tap_sends')$$) \g /dev/null
CREATE TEMP TABLE seen_sums AS SELECT * FROM pg_temp.read_sums_while_busy('caller');
SELECT is(status, 'success', 'the cycle under the reader succeeds')
FROM dblink_get_result('caller') AS t(status text);
SELECT dblink_get_result('caller') \g /dev/null
SELECT ok((SELECT count(*) FROM seen_sums) >= 2, 'the reader read the copy during the cycle');
SELECT ok((SELECT array_agg(DISTINCT n ORDER BY n) FROM seen_sums) <@ ARRAY[3, 20003]::bigint[],
          'the reader saw 3 rows or 20,003, nothing in between');


SELECT * FROM finish();
\set QUIET 1
SELECT dblink_disconnect('locker') \g /dev/null
SELECT dblink_disconnect('caller') \g /dev/null
