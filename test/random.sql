-- Randomized differential test.  A warehouse table whose business key is
-- not a primary key is changed at random before each of 40 cycles: new
-- rows, corrections (in place, or as a second row of the same key), event
-- dates moving into and out of the hot window, NULL event dates, odd text
-- values, removals.  After every cycle the copy must equal the warehouse's
-- deduplicated view: per key, the row with the greatest synced_at (exact
-- ties broken by the greatest row text).
--
-- The changes stay within what treble_sync promises (docs/limits.md):
--   * the warehouse clock only moves forward: every write gets a synced_at
--     greater than any before it, so no row arrives late;
--   * a row is removed only if its event lies in the hot window of the
--     coming cycle (date_trunc('day', T) - 3 days, T = max(synced_at));
--   * a key's newest version is removed only when it is the key's only row
--     and the version the copy holds (the key's newest at the last cycle)
--     lies in that window too; older versions inside the window may be
--     removed at any time.  (A key moved into the window and removed
--     between two cycles is, to the copy, an old removal.)
--
-- The seed is printed as a diagnostic, which pg_prove shows.  To replay:
--   pg_prove -d tap -S seed=N test/random.sql
--   PGOPTIONS='-c treble_test.seed=N' pg_prove -d tap test/random.sql
-- -S cycles=N changes the number of cycles (40 by default).
\set QUIET 1
\if :{?seed}
\else
\set seed ''
\endif
\if :{?cycles}
\else
\set cycles 40
\endif
SET client_min_messages = warning;
SET datestyle = ISO;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS treble_sync;
DROP SERVER IF EXISTS rndwh CASCADE;
DELETE FROM treble_sync.tables WHERE name = 'rnd_sends';
DELETE FROM treble_sync.runs WHERE table_name = 'rnd_sends';
DROP TABLE IF EXISTS rnd_sends;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER rndwh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER rndwh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SELECT dblink_connect('rndwh', current_setting('treble_test.wh_libpq')) \g /dev/null
SELECT dblink_exec('rndwh', $$
    SET datestyle = ISO;
    DROP TABLE IF EXISTS rnd_sends;
    CREATE TABLE rnd_sends (id bigint NOT NULL, campaign text, status text, cost numeric(10,2),
        note text, scheduled_at timestamp, synced_at timestamp NOT NULL);
$$) \g /dev/null

-- the seed: psql variable seed, else the setting treble_test.seed, else a random one
SELECT coalesce(nullif(:'seed', ''), nullif(current_setting('treble_test.seed', true), ''),
                floor(random() * 1000000000)::bigint::text)::bigint AS seed \gset

-- The model: the same table, kept in this session, changed by the same
-- statements as the warehouse.  It is only used to choose the changes.
CREATE TEMP TABLE rnd_model (id bigint NOT NULL, campaign text, status text, cost numeric(10,2),
    note text, scheduled_at timestamp, synced_at timestamp NOT NULL);
CREATE INDEX ON rnd_model (id);
CREATE UNIQUE INDEX ON rnd_model (synced_at);
CREATE TEMP TABLE rnd_state (seed bigint, clock timestamp, next_id bigint);
INSERT INTO rnd_state VALUES (:seed, '2026-11-01 06:00:00', 1);
-- each key's newest event date as of the last cycle: what the copy holds
CREATE TEMP TABLE rnd_synced (id bigint PRIMARY KEY, scheduled_at timestamp);
-- every statement sent to the warehouse, by cycle; kind names the change
CREATE TEMP TABLE rnd_log (cycle int, seq int, kind text, stmt text);

-- a random integer in lo..hi, a random element of an array
CREATE FUNCTION pg_temp.rint(lo int, hi int) RETURNS int LANGUAGE sql AS $$
    SELECT lo + floor(random() * (hi - lo + 1))::int
$$;
CREATE FUNCTION pg_temp.pick(a text[]) RETURNS text LANGUAGE sql AS $$
    SELECT a[pg_temp.rint(1, cardinality(a))]
$$;
-- the next write time: the clock moves 1 to 120 seconds and some microseconds
CREATE FUNCTION pg_temp.tick() RETURNS timestamp LANGUAGE sql AS $$
    UPDATE rnd_state SET clock = clock + make_interval(secs => pg_temp.rint(1, 120))
                                       + pg_temp.rint(0, 999999) * interval '1 microsecond'
    RETURNING clock
$$;
-- the hot window's lower bound if the cut were the current clock
CREATE FUNCTION pg_temp.bound_now() RETURNS timestamp LANGUAGE sql AS $$
    SELECT date_trunc('day', clock) - interval '3 days' FROM rnd_state
$$;
-- an event date: kind 'any', 'in' (at or after the bound) or 'out' (before it)
CREATE FUNCTION pg_temp.event(kind text) RETURNS timestamp LANGUAGE plpgsql AS $$
DECLARE
    b timestamp := pg_temp.bound_now();
    c timestamp := (SELECT clock FROM rnd_state);
    r float8 := random();
BEGIN
    IF kind = 'in' THEN
        RETURN CASE WHEN r < 0.1 THEN b
                    ELSE date_trunc('second', b + random() * (c + interval '1 day' - b)) END;
    ELSIF kind = 'out' THEN
        RETURN CASE WHEN r < 0.1 THEN b - interval '1 microsecond'
                    WHEN r < 0.2 THEN NULL
                    ELSE date_trunc('minute', b - random() * interval '10 days') - interval '1 minute' END;
    END IF;
    RETURN CASE WHEN r < 0.04 THEN NULL
                WHEN r < 0.10 THEN b
                WHEN r < 0.13 THEN b - interval '1 microsecond'
                ELSE date_trunc('second', c - interval '6 days 12 hours' + random() * interval '8 days') END;
END
$$;
-- the values of a write, besides id, event and synced_at
CREATE FUNCTION pg_temp.vals(OUT campaign text, OUT status text, OUT cost numeric, OUT note text)
LANGUAGE plpgsql AS $$
BEGIN
    campaign := pg_temp.pick(ARRAY['spring', 'summer', 'autumn', 'winter', 'black friday', NULL]);
    status := pg_temp.pick(ARRAY['queued', 'sent', 'delivered', 'bounced', 'opened']);
    cost := CASE WHEN random() < 0.05 THEN NULL WHEN random() < 0.05 THEN -0.01
                 ELSE round((random() * 1000)::numeric, pg_temp.rint(0, 2)) END;
    note := CASE WHEN random() < 0.6 THEN pg_temp.pick(ARRAY[NULL, '', 'plain'])
                 ELSE pg_temp.pick(ARRAY[E'tab\there', E'line\nbreak', E'cr\rhere', E'back\\slash', E'\\N',
                                         'quote''s "dq"', 'ñandú ✓ 日本 🦤', 'comma, semi; {brace} =',
                                         repeat('long ✓ ', 300), ' lead and trail ']) END;
END
$$;
-- apply one statement to the model and log it for the warehouse; $T stands for the table
CREATE FUNCTION pg_temp.apply(cyc int, kind text, stmt text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE replace(stmt, '$T', 'pg_temp.rnd_model');
    INSERT INTO rnd_log SELECT cyc, coalesce(max(l.seq), 0) + 1, apply.kind, replace(apply.stmt, '$T', 'rnd_sends')
    FROM rnd_log l WHERE l.cycle = cyc;
END
$$;
-- write a row: a new one, or another version of key k
CREATE FUNCTION pg_temp.insert_row(cyc int, kind text, k bigint, ev timestamp) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v record := pg_temp.vals();
BEGIN
    PERFORM pg_temp.apply(cyc, kind, format('INSERT INTO $T VALUES (%s, %L, %L, %L, %L, %L, %L)',
                          k, v.campaign, v.status, v.cost, v.note, ev, pg_temp.tick()));
END
$$;
-- rewrite the row whose synced_at is s in place, with a new synced_at
CREATE FUNCTION pg_temp.update_row(cyc int, kind text, s timestamp, ev timestamp, keep_event boolean)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v record := pg_temp.vals();
BEGIN
    PERFORM pg_temp.apply(cyc, kind, format(
        'UPDATE $T SET status = %L, cost = %L, note = %L%s, synced_at = %L WHERE synced_at = %L',
        v.status, v.cost, v.note, CASE WHEN keep_event THEN '' ELSE format(', scheduled_at = %L', ev) END,
        pg_temp.tick(), s));
END
$$;

-- One batch of random changes to the model, logged for the warehouse.
-- Writes come first; removals last, chosen against the cut the coming
-- cycle will freeze (the greatest synced_at, which they never remove).
CREATE FUNCTION pg_temp.batch(cyc int, n_ops int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r float8;
    n_del int := 0;
    k bigint;
    s timestamp;
    t timestamp;
    b timestamp;
BEGIN
    -- the randomness of a batch depends only on the seed and the cycle
    PERFORM setseed(hashint8((SELECT seed FROM rnd_state) * 1000 + cyc) / 2147483648.0);
    UPDATE rnd_state SET clock = clock + interval '20 minutes' + random() * interval '6 hours';
    FOR i IN 1..n_ops LOOP
        r := random();
        IF r < 0.30 OR NOT EXISTS (SELECT 1 FROM rnd_model) THEN
            UPDATE rnd_state SET next_id = next_id + 1 RETURNING next_id - 1 INTO k;
            PERFORM pg_temp.insert_row(cyc, 'new key', k, pg_temp.event('any'));
        ELSIF r < 0.45 THEN
            -- a correction written as a second row of an existing key
            SELECT id INTO k FROM (SELECT DISTINCT id FROM rnd_model) d ORDER BY id
            OFFSET floor(random() * (SELECT count(DISTINCT id) FROM rnd_model)) LIMIT 1;
            PERFORM pg_temp.insert_row(cyc, 'second row', k,
                CASE WHEN random() < 0.5 THEN (SELECT scheduled_at FROM rnd_model WHERE id = k
                                               ORDER BY synced_at DESC LIMIT 1)
                     ELSE pg_temp.event('any') END);
        ELSIF r < 0.65 THEN
            -- a correction in place of any row, the newest or an older version
            SELECT synced_at INTO s FROM rnd_model ORDER BY synced_at
            OFFSET floor(random() * (SELECT count(*) FROM rnd_model)) LIMIT 1;
            PERFORM pg_temp.update_row(cyc, 'in place', s, pg_temp.event('any'), random() < 0.6);
        ELSIF r < 0.85 THEN
            -- a key's event date moves into the window (or out of it), in
            -- place or as a second row
            DECLARE
                into_window boolean := r < 0.75;
            BEGIN
                k := NULL;
                WITH c AS (SELECT n.id, n.synced_at
                           FROM (SELECT DISTINCT ON (id) id, scheduled_at, synced_at FROM rnd_model
                                 ORDER BY id, synced_at DESC) n
                           WHERE coalesce(n.scheduled_at >= pg_temp.bound_now(), false) <> into_window)
                SELECT c.id, c.synced_at INTO k, s FROM c
                ORDER BY c.id OFFSET floor(random() * (SELECT count(*) FROM c)) LIMIT 1;
                IF k IS NOT NULL THEN
                    IF random() < 0.5 THEN
                        PERFORM pg_temp.update_row(cyc, CASE WHEN into_window THEN 'moves in' ELSE 'moves out' END,
                                                   s, pg_temp.event(CASE WHEN into_window THEN 'in' ELSE 'out' END), false);
                    ELSE
                        PERFORM pg_temp.insert_row(cyc, CASE WHEN into_window THEN 'moves in (row)' ELSE 'moves out (row)' END,
                                                   k, pg_temp.event(CASE WHEN into_window THEN 'in' ELSE 'out' END));
                    END IF;
                END IF;
            END;
        ELSE
            n_del := n_del + 1;
        END IF;
    END LOOP;

    FOR i IN 1..n_del LOOP
        SELECT max(synced_at) INTO t FROM rnd_model;
        b := date_trunc('day', t) - interval '3 days';
        s := NULL;
        IF random() < 0.7 THEN
            -- a key with one row, in the window, whose row in the copy is
            -- in the window too (or which the copy does not have yet)
            WITH c AS (SELECT m.synced_at FROM rnd_model m
                       WHERE m.scheduled_at >= b AND m.synced_at < t
                         AND NOT EXISTS (SELECT 1 FROM rnd_model x WHERE x.id = m.id AND x.synced_at <> m.synced_at)
                         AND NOT EXISTS (SELECT 1 FROM rnd_synced y
                                         WHERE y.id = m.id AND NOT coalesce(y.scheduled_at >= b, false)))
            SELECT c.synced_at INTO s FROM c
            ORDER BY c.synced_at OFFSET floor(random() * (SELECT count(*) FROM c)) LIMIT 1;
            IF s IS NOT NULL THEN
                PERFORM pg_temp.apply(cyc, 'removal', format('DELETE FROM $T WHERE synced_at = %L', s));
            END IF;
        ELSE
            -- an older version of a key, in the window
            WITH c AS (SELECT m.synced_at FROM rnd_model m
                       WHERE m.scheduled_at >= b
                         AND EXISTS (SELECT 1 FROM rnd_model x WHERE x.id = m.id AND x.synced_at > m.synced_at))
            SELECT c.synced_at INTO s FROM c
            ORDER BY c.synced_at OFFSET floor(random() * (SELECT count(*) FROM c)) LIMIT 1;
            IF s IS NOT NULL THEN
                PERFORM pg_temp.apply(cyc, 'older version removed', format('DELETE FROM $T WHERE synced_at = %L', s));
            END IF;
        END IF;
    END LOOP;
END
$$;

-- record what the coming cycle will leave in the copy, and count the keys
-- across the window's edge: newest version outside the window (or with no
-- event date), an older version inside
CREATE TEMP TABLE rnd_cover (cycle int, edge_keys int, null_edge_keys int);
CREATE FUNCTION pg_temp.synced(cyc int) RETURNS void LANGUAGE sql AS $$
    DELETE FROM rnd_synced;
    INSERT INTO rnd_synced SELECT DISTINCT ON (id) id, scheduled_at FROM rnd_model
    ORDER BY id, synced_at DESC;
    INSERT INTO rnd_cover
    SELECT cyc, count(*), count(*) FILTER (WHERE n.scheduled_at IS NULL)
    FROM rnd_synced n, (SELECT date_trunc('day', max(synced_at)) - interval '3 days' AS b FROM rnd_model) w
    WHERE NOT coalesce(n.scheduled_at >= w.b, false)
      AND EXISTS (SELECT 1 FROM rnd_model m WHERE m.id = n.id AND m.scheduled_at >= w.b);
$$;

-- rows that differ between the warehouse's deduplicated view and a local
-- query, compared as row text in ISO style
CREATE FUNCTION pg_temp.diff(local_query text) RETURNS TABLE (side text, row_text text) LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        WITH r AS (SELECT x FROM dblink('rndwh', $r$
                       SELECT q::text FROM (SELECT DISTINCT ON (id) * FROM rnd_sends t
                                            ORDER BY id, synced_at DESC, t::text DESC) q$r$) AS t(x text)),
             l AS (SELECT q::text AS x FROM (%s) q)
        (SELECT 'warehouse only', x FROM (SELECT x FROM r EXCEPT ALL SELECT x FROM l) a)
        UNION ALL
        (SELECT 'copy only', x FROM (SELECT x FROM l EXCEPT ALL SELECT x FROM r) b)
        ORDER BY 1, 2$q$, local_query);
END
$$;

-- One cycle: a batch of changes to the warehouse, sync_table, and the
-- comparison.  Returns the TAP line, with diagnostics when it fails.
CREATE FUNCTION pg_temp.cycle(cyc int, n_ops int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    run treble_sync.runs;
    n int;
    got text;
    sql text;
    res text;
BEGIN
    PERFORM pg_temp.batch(cyc, n_ops);
    SELECT string_agg(stmt, E';\n' ORDER BY seq) INTO sql FROM rnd_log WHERE cycle = cyc;
    IF sql IS NOT NULL THEN
        PERFORM dblink_exec('rndwh', sql);
    END IF;
    PERFORM pg_temp.synced(cyc);
    run := treble_sync.sync_table('rnd_sends');
    SELECT count(*) INTO n FROM pg_temp.diff('SELECT * FROM rnd_sends');
    got := CASE WHEN run.status IN ('success', 'empty') THEN 'ok' ELSE run.status || ': ' || run.error END
           || '; ' || n || ' differing rows';
    res := is(got, 'ok; 0 differing rows',
              format('cycle %s (%s changes): the copy equals the warehouse', cyc,
                     (SELECT count(*) FROM rnd_log WHERE cycle = cyc)));
    IF got <> 'ok; 0 differing rows' THEN
        res := res || E'\n' || diag(format(E'seed %s, cycle %s, run %s: %s, cut %s, hot window from %s\n'
                                           'rows that differ (at most 20):\n%s\nthe changes of this cycle:\n%s',
            (SELECT seed FROM rnd_state), cyc, run.run_id, run.status, run.cut, run.hot_window_from,
            (SELECT string_agg(side || ': ' || row_text, E'\n')
             FROM (SELECT * FROM pg_temp.diff('SELECT * FROM rnd_sends') LIMIT 20) d),
            coalesce(sql, '(none)')));
    END IF;
    RETURN res;
END
$$;
RESET client_min_messages;

SELECT plan(:cycles + 3);
SELECT diag('seed ' || :seed || ' (replay with: pg_prove -S seed=' || :seed || ' test/random.sql)');

-- the first load: 150 changes, mostly new keys, some with several rows
SELECT pg_temp.batch(0, 150) \g /dev/null
SELECT dblink_exec('rndwh', string_agg(stmt, E';\n' ORDER BY seq)) FROM rnd_log WHERE cycle = 0 \g /dev/null
SELECT pg_temp.synced(0) \g /dev/null
-- (the mass-delete guard is tested elsewhere: random removals may take a
-- large share of a small window, so it is off here)
SELECT name FROM treble_sync.add_table('rnd_sends', 'rndwh', key_columns => '{id}',
                                       event_column => 'scheduled_at', hot_window => '3 days',
                                       max_delete_ratio => 1) \g /dev/null
SELECT is(status, 'success', 'the first sync succeeds') FROM treble_sync.sync_table('rnd_sends');
SELECT is((SELECT count(*) FROM pg_temp.diff('SELECT * FROM rnd_sends')), 0::bigint,
          'the first sync copies the warehouse''s deduplicated view');

-- the cycles; a batch has 0 to 14 changes
SELECT format('SELECT pg_temp.cycle(%s, %s)', c, (hashint8(:seed::bigint * 7919 + c) & 1023) % 15)
FROM generate_series(1, :cycles) c \gexec

-- the model the changes were chosen from is the warehouse itself
SELECT is((SELECT count(*) FROM (
              (SELECT x FROM dblink('rndwh', 'SELECT t::text FROM rnd_sends t') AS r(x text)
               EXCEPT ALL SELECT m::text FROM rnd_model m)
              UNION ALL
              (SELECT m::text FROM rnd_model m
               EXCEPT ALL SELECT x FROM dblink('rndwh', 'SELECT t::text FROM rnd_sends t') AS r(x text))) d),
          0::bigint, 'the test''s model of the warehouse is exact');
SELECT diag('changes made: ' || string_agg(kind || ' ' || n, ', ' ORDER BY kind))
FROM (SELECT kind, count(*) AS n FROM rnd_log WHERE cycle > 0 GROUP BY kind) k;
SELECT diag(format('keys across the window''s edge at the cycles: %s (%s of them with no event date), in %s of %s cycles',
                   sum(edge_keys), sum(null_edge_keys), count(*) FILTER (WHERE edge_keys > 0), count(*)))
FROM rnd_cover WHERE cycle > 0;
SELECT diag(format('warehouse: %s rows, %s keys, %s keys with several rows; runs: %s',
                   (SELECT count(*) FROM rnd_model), (SELECT count(DISTINCT id) FROM rnd_model),
                   (SELECT count(*) FROM (SELECT id FROM rnd_model GROUP BY id HAVING count(*) > 1) d),
                   (SELECT string_agg(status || ' ' || n, ', ' ORDER BY status)
                    FROM (SELECT status, count(*) AS n FROM treble_sync.runs
                          WHERE table_name = 'rnd_sends' GROUP BY status) s)));

SELECT * FROM finish();
\set QUIET 1
SELECT dblink_disconnect('rndwh') \g /dev/null
