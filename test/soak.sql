-- Soak: 300 cycles of one table against a stream of small warehouse
-- changes (two new rows, one correction, and every fourth cycle a removal
-- inside the hot window).  Afterwards nothing has piled up: no staging
-- table, no worker, no warehouse connection, no open file of the
-- postmaster or of the calling backend, no memory mapping or memory of the
-- calling backend, no run row beyond the retention; every cycle succeeded
-- and the copy equals the warehouse.
-- -S cycles=N changes the number of cycles (300 by default, at least 20).
\set QUIET 1
\if :{?cycles}
\else
\set cycles 300
\endif
SET client_min_messages = warning;
SET datestyle = ISO;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS treble_sync;
DROP SERVER IF EXISTS soakwh CASCADE;
DELETE FROM treble_sync.tables WHERE name = 'soak_sends';
DELETE FROM treble_sync.runs WHERE table_name = 'soak_sends';
DROP TABLE IF EXISTS soak_sends;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER soakwh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER soakwh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SELECT dblink_connect('soakwh', current_setting('treble_test.wh_libpq')) \g /dev/null
SELECT dblink_exec('soakwh', $$
    SET datestyle = ISO;
    DROP TABLE IF EXISTS soak_sends;
    CREATE TABLE soak_sends (id int PRIMARY KEY, campaign text, cost numeric(10,2),
        scheduled_at timestamp, synced_at timestamp);
    INSERT INTO soak_sends
    SELECT g, 'c' || g, g / 10.0, timestamp '2026-11-03' + g * interval '37 minutes', '2026-11-05'
    FROM generate_series(1, 100) g;
$$) \g /dev/null
SELECT name FROM treble_sync.add_table('soak_sends', 'soakwh', event_column => 'scheduled_at',
                                       hot_window => '1 day', max_delete_ratio => 1) \g /dev/null
-- run rows older than a minute go at the end of each run
SET treble_sync.run_retention = '1min';

-- The outcome of the cycles is kept in settings of this session rather than
-- in a table, which would grow and open files of its own as it grows.
SET soak.cycles = 0;            -- cycles run
SET soak.ok = 0;                -- of which success or empty
SET soak.first_failure = '';    -- the first other outcome
SET soak.last_run = 0;          -- the run id of the last cycle
SET soak.run_id_repeats = 0;    -- cycles whose run id did not grow
CREATE TEMP TABLE soak_measure (at text, postmaster_fds int, backend_fds int, backend_maps int,
    backend_memory bigint, postmaster_rss_anon_kb bigint);

-- One cycle: a few changes in the warehouse, with its clock 10 minutes
-- further on, then sync_table.  The removal takes a row written before this
-- cycle whose event lies in the window of the cut the cycle will freeze
-- (clock + 3 s, the correction's synced_at).
CREATE PROCEDURE pg_temp.step(i int) LANGUAGE plpgsql AS $$
DECLARE
    clock timestamp := timestamp '2026-11-05 00:00' + i * interval '10 minutes';
    run treble_sync.runs;
BEGIN
    PERFORM dblink_exec('soakwh', format($w$
        INSERT INTO soak_sends VALUES
            (%1$s, 'n' || %1$s, %1$s %% 997 / 10.0, %2$L::timestamp - (%1$s %% 40) * interval '1 hour',
             %2$L::timestamp + interval '1 second'),
            (%1$s + 1, 'n' || %1$s + 1, 0.5, %2$L::timestamp - (%1$s %% 37) * interval '1 hour',
             %2$L::timestamp + interval '2 seconds');
        UPDATE soak_sends SET cost = cost + 1, synced_at = %2$L::timestamp + interval '3 seconds'
        WHERE id = (SELECT id FROM soak_sends ORDER BY id
                    OFFSET %3$s %% (SELECT count(*) FROM soak_sends) LIMIT 1);
        %4$s
        $w$,
        1000 + 2 * i, clock, i * 37,
        CASE WHEN i % 4 = 0 THEN format(
            $d$DELETE FROM soak_sends WHERE id = (SELECT id FROM soak_sends
                 WHERE scheduled_at >= date_trunc('day', %1$L::timestamp) - interval '1 day'
                   AND synced_at < %1$L ORDER BY id LIMIT 1)$d$, clock) ELSE '' END));
    run := treble_sync.sync_table('soak_sends');
    PERFORM set_config('soak.cycles', (current_setting('soak.cycles')::int + 1)::text, false);
    IF run.status IN ('success', 'empty') THEN
        PERFORM set_config('soak.ok', (current_setting('soak.ok')::int + 1)::text, false);
    ELSIF current_setting('soak.first_failure') = '' THEN
        PERFORM set_config('soak.first_failure',
                           format('cycle %s, run %s: %s: %s', i, run.run_id, run.status, run.error), false);
    END IF;
    IF run.run_id IS NULL OR run.run_id <= current_setting('soak.last_run')::bigint THEN
        PERFORM set_config('soak.run_id_repeats', (current_setting('soak.run_id_repeats')::int + 1)::text, false);
    END IF;
    PERFORM set_config('soak.last_run', coalesce(run.run_id, 0)::text, false);
END
$$;

-- what might pile up, measured from this backend
CREATE FUNCTION pg_temp.measure(label text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    pm int := split_part(pg_read_file('postmaster.pid'), E'\n', 1)::int;
BEGIN
    INSERT INTO soak_measure SELECT label,
        (SELECT count(*) FROM pg_ls_dir('/proc/' || pm || '/fd')),
        (SELECT count(*) FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/fd')),
        (SELECT count(*) FROM regexp_split_to_table(rtrim(pg_read_file('/proc/' || pg_backend_pid() || '/maps'), E'\n'), E'\n')),
        (SELECT sum(total_bytes) FROM pg_backend_memory_contexts),
        (SELECT substring(pg_read_file('/proc/' || pm || '/status') FROM 'RssAnon:\s+(\d+) kB')::bigint);
END
$$;

-- how many connections the warehouse login has open, once the count is 0
-- or after 10 s (a backend needs a moment to go after its client)
CREATE FUNCTION pg_temp.reader_connections() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    FOR i IN 1..100 LOOP
        SELECT c INTO n FROM dblink('soakwh', format(
            'SELECT count(*) FROM pg_stat_activity WHERE usename = %L',
            current_setting('treble_test.wh_user'))) AS t(c bigint);
        EXIT WHEN n = 0;
        PERFORM pg_sleep(0.1);
    END LOOP;
    RETURN n;
END
$$;

-- treble_sync workers still running, once there are none or after 10 s
CREATE FUNCTION pg_temp.workers() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    FOR i IN 1..100 LOOP
        PERFORM pg_stat_clear_snapshot();
        SELECT count(*) INTO n FROM pg_stat_activity WHERE backend_type = 'treble_sync worker';
        EXIT WHEN n = 0;
        PERFORM pg_sleep(0.1);
    END LOOP;
    RETURN n;
END
$$;
RESET client_min_messages;

SELECT plan(14);

SELECT is(status, 'success', 'the first sync succeeds') FROM treble_sync.sync_table('soak_sends');

-- The postmaster is measured from the start.  The calling backend is
-- measured from the middle on: by then its caches are warm, and its open
-- files, which include the relation files PostgreSQL keeps open, cover
-- every relation the cycles touch.
SELECT pg_temp.measure('start') \g /dev/null

-- the first half
SELECT format('CALL pg_temp.step(%s)', i) FROM generate_series(1, :cycles / 2) i \gexec

-- the run rows so far are made an hour old; the next cycle prunes them
UPDATE treble_sync.runs SET started_at = now() - interval '1 hour', finished_at = now() - interval '1 hour'
WHERE table_name = 'soak_sends';
SELECT count(*) AS aged, max(run_id) AS aged_max FROM treble_sync.runs WHERE table_name = 'soak_sends' \gset
SELECT format('CALL pg_temp.step(%s)', :cycles / 2 + 1) \gexec
SELECT is((SELECT count(*) FROM treble_sync.runs WHERE table_name = 'soak_sends' AND run_id <= :aged_max),
          0::bigint, format('the next cycle prunes the %s run rows older than the retention', :aged));
SELECT pg_temp.workers() \g /dev/null
SELECT pg_temp.measure('middle') \g /dev/null

-- the second half
SELECT format('CALL pg_temp.step(%s)', i) FROM generate_series(:cycles / 2 + 2, :cycles) i \gexec
SELECT is(pg_temp.workers(), 0::bigint, 'no treble_sync worker is left running');
SELECT pg_temp.measure('end') \g /dev/null

SELECT is(current_setting('soak.ok') || ' of ' || current_setting('soak.cycles'),
          :cycles || ' of ' || :cycles, format('all %s cycles succeed', :cycles));
SELECT diag('the first that did not: ' || current_setting('soak.first_failure'))
WHERE current_setting('soak.first_failure') <> '';
SELECT is(current_setting('soak.run_id_repeats'), '0', 'each cycle has a run row of its own');
SELECT is(count(*), 0::bigint, 'no run row is left running')
FROM treble_sync.runs WHERE table_name = 'soak_sends' AND status = 'running';
SELECT is(count(*), 0::bigint, 'no run row is older than the retention')
FROM treble_sync.runs WHERE table_name = 'soak_sends'
  AND finished_at < (SELECT max(started_at) FROM treble_sync.runs WHERE table_name = 'soak_sends')
                    - interval '1 minute';
SELECT is(count(*), 0::bigint, 'no staging table is left') FROM pg_class WHERE relname = 'treble_sync_stage';
SELECT is(pg_temp.reader_connections(), 0::bigint, 'no warehouse connection is left open');

SELECT diag(format('%s: postmaster %s fds, %s kB RssAnon; backend %s fds, %s mappings, %s bytes in memory contexts',
                   at, postmaster_fds, postmaster_rss_anon_kb, backend_fds, backend_maps, backend_memory))
FROM soak_measure ORDER BY array_position('{start,middle,end}', at);
SELECT cmp_ok(e.postmaster_fds, '<=', s.postmaster_fds, 'the postmaster has no more open files than at the start')
FROM soak_measure s, soak_measure e WHERE s.at = 'start' AND e.at = 'end';
SELECT cmp_ok(e.backend_fds, '<=', m.backend_fds, 'the calling backend has no more open files than in the middle')
FROM soak_measure m, soak_measure e WHERE m.at = 'middle' AND e.at = 'end';
SELECT cmp_ok(e.backend_maps, '<=', m.backend_maps, 'nor more memory mappings (DSM segments)')
FROM soak_measure m, soak_measure e WHERE m.at = 'middle' AND e.at = 'end';
SELECT cmp_ok(e.backend_memory - m.backend_memory, '<', 1048576::bigint,
              'its memory contexts grow by less than 1 MB over the second half')
FROM soak_measure m, soak_measure e WHERE m.at = 'middle' AND e.at = 'end';

-- the copy is the warehouse
SELECT is((SELECT count(*) FROM (
              (SELECT x FROM dblink('soakwh', 'SELECT t::text FROM soak_sends t') AS r(x text)
               EXCEPT ALL SELECT t::text FROM soak_sends t)
              UNION ALL
              (SELECT t::text FROM soak_sends t
               EXCEPT ALL SELECT x FROM dblink('soakwh', 'SELECT t::text FROM soak_sends t') AS r(x text))) d),
          0::bigint, 'the copy equals the warehouse');

SELECT * FROM finish();
\set QUIET 1
SELECT dblink_disconnect('soakwh') \g /dev/null
