-- What a user meets on day one: a cycle blocked by its caller's own
-- transaction (stopped, with an error saying what to do) or by another
-- session (given up at treble_sync.lock_timeout, the blocker named), a
-- registration not committed yet, wrong passwords (never retried), a
-- missing SQLite file, an undefined DSN, mask on an existing table, and
-- honest status: rows_estimate, last_error, verify's order.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS treble_sync;
DROP SERVER IF EXISTS errwh, errmy, errlite, errdsn CASCADE;
DELETE FROM treble_sync.tables WHERE name IN ('err_sends', 'err_new', 'err_my', 'err_lite');
DELETE FROM treble_sync.runs WHERE table_name IN ('err_sends', 'err_new', 'err_my', 'err_lite');
DROP TABLE IF EXISTS err_sends, err_new, err_my, err_lite;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER errwh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L, max_retries %L)',
                   current_setting('treble_test.wh_odbc'), '3');
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER errwh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
    EXECUTE format('CREATE SERVER errlite FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L, max_retries %L)',
                   current_setting('treble_test.sqlite_odbc'), '3');
    EXECUTE 'CREATE USER MAPPING FOR CURRENT_USER SERVER errlite';
    EXECUTE 'CREATE SERVER errdsn FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn ''treble_sync_no_such_dsn'')';
    EXECUTE 'CREATE USER MAPPING FOR CURRENT_USER SERVER errdsn';
    IF coalesce(current_setting('treble_test.mariadb_odbc', true), '') <> '' THEN
        EXECUTE format('CREATE SERVER errmy FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L, max_retries %L)',
                       current_setting('treble_test.mariadb_odbc'), '3');
        EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER errmy OPTIONS (user %L, password %L)',
                       current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
    END IF;
END
$$;
SELECT dblink_exec(current_setting('treble_test.wh_libpq'), $$
    DROP TABLE IF EXISTS err_sends, err_new;
    CREATE TABLE err_sends (id int PRIMARY KEY, v text, day timestamp, synced_at timestamp);
    INSERT INTO err_sends SELECT i, 'v' || i, localtimestamp - (i % 5) * interval '1 day', '2026-11-28'
    FROM generate_series(1, 500) i;
    CREATE TABLE err_new (id int PRIMARY KEY, synced_at timestamp);
    INSERT INTO err_new VALUES (1, '2026-11-28');
$$) \g /dev/null
\! sqlite3 "$TS_SQLITE_DB" "DROP TABLE IF EXISTS err_lite; CREATE TABLE err_lite (id integer PRIMARY KEY, synced_at timestamp); INSERT INTO err_lite VALUES (1, '2026-11-28 00:00:00');"
\! [ -z "$TS_MARIADB_SOCK" ] || mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" -uroot wh -e "DROP TABLE IF EXISTS err_my; CREATE TABLE err_my (id int PRIMARY KEY, synced_at datetime); INSERT INTO err_my VALUES (1, '2026-11-28');"
SELECT name FROM treble_sync.add_table('err_sends', 'errwh', event_column => 'day') \g /dev/null
SELECT name FROM treble_sync.add_table('err_lite', 'errlite') \g /dev/null
SELECT dblink_connect('locker', format('dbname=%s host=%s port=%s user=%s', current_database(),
       split_part(current_setting('unix_socket_directories'), ',', 1),
       current_setting('port'), current_user)) \g /dev/null

-- the last run of a table, once its worker has recorded how it ended
CREATE OR REPLACE FUNCTION pg_temp.last_run(tab text) RETURNS treble_sync.runs LANGUAGE plpgsql AS $$
DECLARE
    r treble_sync.runs;
BEGIN
    FOR i IN 1..200 LOOP
        SELECT * INTO r FROM treble_sync.runs WHERE table_name = tab ORDER BY run_id DESC LIMIT 1;
        IF r.status <> 'running' THEN RETURN r; END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN r;
END
$$;
-- the warehouse corrects row 1, so the next cycle must update it in the copy
CREATE OR REPLACE FUNCTION pg_temp.correct_row_1() RETURNS void LANGUAGE sql AS $$
    SELECT dblink_exec(current_setting('treble_test.wh_libpq'),
        $q$UPDATE err_sends SET v = v || '+', synced_at = synced_at + interval '1 second' WHERE id = 1$q$);
$$;
CREATE OR REPLACE FUNCTION pg_temp.add_then_sync() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM treble_sync.add_table('err_new', 'errwh');
    RETURN (treble_sync.sync_table('err_new')).status;
END
$$;
CREATE OR REPLACE FUNCTION pg_temp.update_then_sync() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    UPDATE err_sends SET v = 'mine' WHERE id = 1;
    RETURN (treble_sync.sync_table('err_sends')).status;
END
$$;
RESET client_min_messages;

SELECT plan(22);
SET client_min_messages = warning;

-- 1. honest status after a first load
SELECT is(status, 'success', 'the first load succeeds') FROM treble_sync.sync_table('err_sends');
SELECT is(rows_estimate, 500::bigint, 'rows_estimate counts a freshly loaded copy')
FROM treble_sync.status WHERE table_name = 'err_sends';
SELECT is(array_agg(day), array_agg(day ORDER BY day), 'verify returns its days in order')
FROM treble_sync.verify('err_sends');

-- 2. a registration not committed yet
SELECT throws_ok('SELECT pg_temp.add_then_sync()', '55000',
                 'the registration of table "err_new" is not committed yet',
                 'add_table then sync_table in one transaction says the registration is not committed');
SELECT is(count(*), 0::bigint, 'and logs no run') FROM treble_sync.runs WHERE table_name = 'err_new';

-- 3. the caller's own transaction holds a row the cycle must change
SELECT pg_temp.correct_row_1() \g /dev/null
SELECT throws_ok('SELECT pg_temp.update_then_sync()', '40P01',
                 'the cycle of table "err_sends" waits for a lock that this transaction holds',
                 'sync_table in a transaction that changed the copy fails instead of hanging');
SELECT is(status, 'failed', 'its run is logged as failed') FROM pg_temp.last_run('err_sends');
SELECT ok(error LIKE '%the session that started this cycle holds a lock the cycle needs%',
          'and says the caller held the lock') FROM pg_temp.last_run('err_sends');

-- 4. another session holds it: the cycle gives up at treble_sync.lock_timeout
SELECT dblink_exec('locker', 'BEGIN') \g /dev/null
SELECT dblink_exec('locker', $$UPDATE err_sends SET v = 'theirs' WHERE id = 1$$) \g /dev/null
SET treble_sync.lock_timeout = '3s';
SELECT is(status, 'failed', 'a cycle blocked by another session fails at treble_sync.lock_timeout')
FROM treble_sync.sync_table('err_sends');
SELECT is(error ~ ('gave up waiting for a lock after treble_sync\.lock_timeout \(3000 ms\).*'
                   || 'DETAIL: The cycle was waiting for process '
                   || (SELECT pid FROM dblink('locker', 'SELECT pg_backend_pid()') AS t(pid int))
                   || ' \(role "' || current_user || '"\)'), true,
          'its run names the blocking process and its role')
FROM pg_temp.last_run('err_sends');
SELECT ok(error NOT LIKE '%theirs%', 'and nothing of its query, which only its own role may see')
FROM pg_temp.last_run('err_sends');
RESET treble_sync.lock_timeout;
SELECT dblink_exec('locker', 'ROLLBACK') \g /dev/null
SELECT is(status, 'success', 'once the blocker is gone the cycle succeeds') FROM treble_sync.sync_table('err_sends');
SELECT is(last_error, NULL, 'and status.last_error no longer shows the old error')
FROM treble_sync.status WHERE table_name = 'err_sends';

-- 5. a wrong password is not retried
ALTER USER MAPPING FOR CURRENT_USER SERVER errwh OPTIONS (SET password 'wrong');
SELECT is(status || ' after ' || attempts || ' attempt', 'failed after 1 attempt',
          'psqlODBC: a wrong password fails at once (08001 with an authentication message)')
FROM treble_sync.sync_table('err_sends');
SELECT ok(last_error LIKE '%password authentication failed%HINT: The warehouse refused the credentials%',
          'status.last_error shows the refusal while the table fails')
FROM treble_sync.status WHERE table_name = 'err_sends';
-- the refusal has an SQLSTATE of its own (class 28), which is what keeps
-- it from being retried: not HV00N, which a lost connection shared
SELECT throws_ok($$SELECT treble_sync.add_table('err_sends', 'errwh', name => 'err_refused')$$, '28P01',
                 NULL, 'psqlODBC: a refused password is SQLSTATE 28P01 (invalid_password)');
DO $$
BEGIN
    EXECUTE format('ALTER USER MAPPING FOR CURRENT_USER SERVER errwh OPTIONS (SET password %L)',
                   current_setting('treble_test.wh_password'));
END
$$;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = 'errmy') THEN
        PERFORM treble_sync.add_table('err_my', 'errmy');
        ALTER USER MAPPING FOR CURRENT_USER SERVER errmy OPTIONS (SET password 'wrong');
    END IF;
END
$$;
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = 'errmy')
            THEN skip('no MariaDB server was started', 3) ELSE
    collect_tap(is((SELECT status || ' after ' || attempts || ' attempt' FROM treble_sync.sync_table('err_my')),
                   'failed after 1 attempt', 'MariaDB: a wrong password fails at once (28000)'),
                ok((SELECT error LIKE '%Access denied for user%' FROM pg_temp.last_run('err_my')),
                   'with the driver''s message'),
                throws_ok($$SELECT treble_sync.add_table('err_my', 'errmy', name => 'err_my_refused')$$,
                          '28000', NULL, 'MariaDB: the refusal keeps its SQLSTATE 28000')) END;

-- 6. a missing SQLite file, an undefined DSN
ALTER SERVER errlite OPTIONS (SET connection_string 'Driver={SQLite3};Database=/nonexistent/treble_sync/wh.sqlite');
SELECT is(status || ' after ' || attempts || ' attempt', 'failed after 1 attempt',
          'a missing SQLite file fails the cycle at once')
FROM treble_sync.sync_table('err_lite');
SELECT ok(error LIKE 'SQLite database file "/nonexistent/treble_sync/wh.sqlite" does not exist%',
          'naming the path') FROM pg_temp.last_run('err_lite');
SELECT throws_ok($$SELECT treble_sync.add_table('err_lite', 'errdsn', name => 'err_dsn')$$, 'HV00N',
                 'data source "treble_sync_no_such_dsn" is not defined',
                 'a DSN defined nowhere the server reads is an error that says so');

SELECT * FROM finish();
\set QUIET 1
SELECT dblink_disconnect('locker') \g /dev/null
