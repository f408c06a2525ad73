-- What an operator relies on: pg_cron schedules that run by themselves,
-- one NOTIFY per incident (failing, recovered, stale, fresh) with no
-- secret in it, query and login timeouts, retries of transient failures,
-- and the pruning of old run rows.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS treble_sync;
CREATE EXTENSION IF NOT EXISTS pg_cron;
DROP SERVER IF EXISTS opswh, flaky CASCADE;
DELETE FROM treble_sync.tables WHERE name IN ('ops_t', 'ops_flaky');
DELETE FROM treble_sync.runs WHERE table_name IN ('ops_t', 'ops_flaky');
DROP TABLE IF EXISTS ops_t, ops_flaky;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER opswh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER opswh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
    EXECUTE format('CREATE SERVER flaky FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L, login_timeout %L, max_retries %L)',
                   current_setting('treble_test.wh_odbc'), '2', '0');
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER flaky OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), $$
    DROP TABLE IF EXISTS ops_t, ops_flaky;
    CREATE TABLE ops_t (id int PRIMARY KEY, synced_at timestamp);
    INSERT INTO ops_t VALUES (1, '2026-11-01');
    CREATE TABLE ops_flaky (id int PRIMARY KEY, synced_at timestamp);
$$) \g /dev/null
SELECT (treble_sync.add_table('ops_t', 'opswh')).name \g /dev/null
SELECT (treble_sync.add_table('ops_flaky', 'flaky')).name \g /dev/null
SELECT dblink_connect('listener', format('dbname=%s host=%s port=%s user=%s', current_database(),
       split_part(current_setting('unix_socket_directories'), ',', 1),
       current_setting('port'), current_user)) \g /dev/null
SELECT dblink_exec('listener', 'LISTEN treble_sync') \g /dev/null
SELECT dblink_connect('locker', current_setting('treble_test.wh_libpq')) \g /dev/null
SELECT dblink_connect('caller', format('dbname=%s host=%s port=%s user=%s', current_database(),
       split_part(current_setting('unix_socket_directories'), ',', 1),
       current_setting('port'), current_user)) \g /dev/null
-- the events received so far by the listener, as json
CREATE TEMP TABLE events (payload json);
CREATE OR REPLACE FUNCTION pg_temp.events(kind text) RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO events SELECT extra::json FROM dblink_get_notify('listener');
    SELECT count(*) FROM events WHERE payload->>'event' = kind AND payload->>'table' = 'ops_t';
$$;
RESET client_min_messages;

SELECT plan(18);

-- 1. schedules
SELECT ok(treble_sync.schedule('ops_t', '* * * * *') > 0, 'schedule() creates a pg_cron job');
SELECT is(schedule, '* * * * *', 'the status view shows the schedule')
FROM treble_sync.status WHERE table_name = 'ops_t';
SELECT throws_ok($$SELECT treble_sync.schedule('nope', '* * * * *')$$, '42704',
                 'table "nope" is not registered with treble_sync', 'an unknown table cannot be scheduled');
-- the job runs by itself within its minute
CREATE OR REPLACE FUNCTION pg_temp.wait_scheduled_run() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..150 LOOP
        IF EXISTS (SELECT 1 FROM treble_sync.runs WHERE table_name = 'ops_t' AND status = 'success') THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.5);
    END LOOP;
    RETURN false;
END
$$;
SELECT ok(pg_temp.wait_scheduled_run(), 'the scheduled job ran a cycle by itself');
SELECT is(treble_sync.unschedule('ops_t'), true, 'unschedule() removes the job');
SELECT is(count(*), 0::bigint, 'and it is gone') FROM treble_sync.schedules();
SELECT is(treble_sync.unschedule('ops_t'), false, 'unscheduling again says there was nothing');

-- 2. one event per incident
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), 'ALTER TABLE ops_t RENAME TO ops_t_away') \g /dev/null
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT is(pg_temp.events('failed'), 1::bigint, 'three failing cycles make one failed event');
SELECT is(consecutive_failures, 3::bigint, 'the status view counts the failures')
FROM treble_sync.status WHERE table_name = 'ops_t';
SELECT ok(treble_sync.metrics() LIKE '%treble_sync_runs_total{table="ops_t",status="failed"} 3%',
          'metrics() counts them too');
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), 'ALTER TABLE ops_t_away RENAME TO ops_t') \g /dev/null
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT is(pg_temp.events('recovered'), 1::bigint, 'the recovery makes one recovered event');
SET treble_sync.freshness_alert = '1s';
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT is(pg_temp.events('stale'), 1::bigint, 'an old watermark makes one stale event');
SET treble_sync.freshness_alert = '3650d';
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT is(pg_temp.events('fresh'), 1::bigint, 'and a larger limit one fresh event');
SELECT is(count(*), 0::bigint, 'no event carries the password')
FROM events WHERE payload::text LIKE '%' || current_setting('treble_test.wh_password') || '%';

-- 3. a query timeout, without and with retries
SELECT name FROM treble_sync.alter_table('ops_t', query_timeout => 1, max_retries => 0) \g /dev/null
SELECT dblink_exec('locker', 'BEGIN; LOCK TABLE ops_t IN ACCESS EXCLUSIVE MODE') \g /dev/null
SELECT is(status || ' after ' || attempts || ' attempt', 'failed after 1 attempt',
          'a warehouse that does not answer fails the cycle at the query timeout')
FROM treble_sync.sync_table('ops_t');
SELECT name FROM treble_sync.alter_table('ops_t', max_retries => 3) \g /dev/null
SELECT dblink_send_query('caller', $$SELECT status, attempts FROM treble_sync.sync_table('ops_t')$$) \g /dev/null
SELECT pg_sleep(1.6) \g /dev/null
SELECT dblink_exec('locker', 'COMMIT') \g /dev/null
SELECT is((status <> 'failed')::text || ', ' || (attempts > 1)::text, 'true, true',
          'a transient failure is retried until it succeeds')
FROM dblink_get_result('caller') AS t(status text, attempts int);
SELECT dblink_get_result('caller') \g /dev/null

-- 4. a warehouse that accepts connections and never answers: the login timeout
-- (its port and pid in files named after this psql, $PPID of its shells,
-- so that runs beside each other do not share them; waited for, not slept
-- on, since a busy machine may start perl late)
\! perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Listen => 5) or die; open(F, ">", "$ARGV[0].new"); print F $s->sockport; close F; rename("$ARGV[0].new", $ARGV[0]); open(F, ">", $ARGV[1]); print F $$; close F; while ($c = $s->accept) { push @keep, $c }' /tmp/treble_sync_silent_port.$PPID /tmp/treble_sync_silent_pid.$PPID >/dev/null 2>&1 &
\! for i in $(seq 1 300); do [ -s /tmp/treble_sync_silent_port.$PPID ] && break; sleep 0.1; done
\set silent_port `cat /tmp/treble_sync_silent_port.$PPID`
SELECT format('ALTER SERVER flaky OPTIONS (SET connection_string %L)',
              'Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=' || :'silent_port' || ';Database=wh')
\gexec
SELECT is(status, 'failed', 'a silent warehouse fails the cycle at the login timeout')
FROM treble_sync.sync_table('ops_flaky');
\! for i in $(seq 1 50); do [ -s /tmp/treble_sync_silent_pid.$PPID ] && break; sleep 0.1; done; kill $(cat /tmp/treble_sync_silent_pid.$PPID) 2>/dev/null; rm -f /tmp/treble_sync_silent_port.$PPID /tmp/treble_sync_silent_pid.$PPID

-- 5. retention: run rows older than treble_sync.run_retention go
UPDATE treble_sync.runs SET started_at = now() - interval '3 days', finished_at = now() - interval '3 days'
WHERE table_name = 'ops_t' AND run_id < (SELECT max(run_id) FROM treble_sync.runs WHERE table_name = 'ops_t');
SET treble_sync.run_retention = '2d';
SELECT status FROM treble_sync.sync_table('ops_t') \g /dev/null
SELECT is(count(*), 2::bigint, 'only the run rows within the retention remain')
FROM treble_sync.runs WHERE table_name = 'ops_t';

SELECT * FROM finish();
\set QUIET 1
SELECT dblink_disconnect('listener') \g /dev/null
SELECT dblink_disconnect('locker') \g /dev/null
SELECT dblink_disconnect('caller') \g /dev/null
