-- bench/dest.sql: setup of the destination database for bench/run.
-- Run by psql in a fresh database, with -v wh_port=<warehouse port>.
--
--   - treble_sync with the server "wh" (ODBC, psqlODBC), as in demo/run;
--   - postgres_fdw with the server "wh_pg" for the same warehouse, reached
--     the same way (TCP to 127.0.0.1, the reader login, SCRAM), and the
--     foreign tables in schema wh_fdw;
--   - helpers in schema bench: the copies' table definition, the fingerprint,
--     and the hand-written postgres_fdw cycle.

SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
CREATE EXTENSION postgres_fdw;

-- An error here would print the statement as context, password included.
\set SHOW_CONTEXT never
DO $$
BEGIN
    EXECUTE format('CREATE SERVER wh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'),
                   current_setting('treble_test.wh_password'));
END
$$;
-- fetch_size 10000: treble_sync's default, instead of postgres_fdw's 100,
-- so both pull through the network in the same batches.
CREATE SERVER wh_pg FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port :'wh_port', dbname 'wh', fetch_size '10000');
DO $$
BEGIN
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER wh_pg OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'),
                   current_setting('treble_test.wh_password'));
END
$$;
\set SHOW_CONTEXT errors

CREATE SCHEMA bench;
CREATE SCHEMA wh_fdw;

-- (Re)create the local table public.<name>: the warehouse's columns and
-- types, primary key on the key, index on the event column: what add_table
-- would create, but with the warehouse's exact numeric typmods. Every
-- method of the benchmark loads into this same definition. Autovacuum is
-- off so it never runs during a measurement; bench/run vacuums at fixed
-- points instead.
CREATE FUNCTION bench.create_copy(name text) RETURNS void
LANGUAGE plpgsql SET client_min_messages = warning AS $fn$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS public.%I', name);
    EXECUTE format($sql$
        CREATE TABLE public.%I (
            campaign_send_id bigint        NOT NULL PRIMARY KEY,
            campaign_id      bigint        NOT NULL,
            account_id       bigint        NOT NULL,
            user_id          bigint        NOT NULL,
            message_id       bigint,
            channel          text          NOT NULL,
            status           text          NOT NULL,
            subject          text,
            cost             numeric(12,4),
            revenue          numeric(12,4),
            scheduled_at     timestamptz   NOT NULL,
            created_at       timestamptz   NOT NULL,
            synced_at        timestamptz   NOT NULL
        ) WITH (autovacuum_enabled = false)$sql$, name);
    EXECUTE format('CREATE INDEX ON public.%I (scheduled_at)', name);
END
$fn$;

-- The foreign table wh_fdw.<tbl> for the warehouse's public.<tbl>, with
-- local statistics (ANALYZE samples the remote table) so that the planner
-- of the hand-written cycle estimates the delta and the window correctly.
CREATE FUNCTION bench.import_foreign(tbl text) RETURNS void
LANGUAGE plpgsql SET client_min_messages = warning AS $fn$
BEGIN
    EXECUTE format('DROP FOREIGN TABLE IF EXISTS wh_fdw.%I', tbl);
    EXECUTE format('IMPORT FOREIGN SCHEMA public LIMIT TO (%I) FROM SERVER wh_pg INTO wh_fdw', tbl);
    EXECUTE format('ANALYZE wh_fdw.%I', tbl);
END
$fn$;

-- Same as in bench/warehouse.sql: row count and sum of row-text hashes.
CREATE FUNCTION bench.fingerprint(tbl regclass) RETURNS text
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    fp text;
BEGIN
    EXECUTE format('SELECT count(*) || '' '' || coalesce(sum(hashtext(t::text)::bigint), 0) FROM %s AS t',
                   tbl) INTO fp;
    RETURN fp;
END
$fn$;

-- The watermark of each copy kept by the hand-written cycle.
CREATE TABLE bench.fdw_state (
    copy_table regclass PRIMARY KEY,
    watermark  timestamptz NOT NULL
);

-- The hand-written postgres_fdw cycle, the obvious way to do what a
-- treble_sync cycle does, in one transaction (the function call's):
--   1. freeze the cut T = max(synced_at) of the warehouse;
--   2. MERGE the delta, watermark < synced_at <= T, into the copy by key;
--   3. replace the hot window: delete the copy's rows with
--      scheduled_at >= date_trunc('day', T) - 3 days, insert the
--      warehouse's rows of that window with synced_at <= T;
--   4. watermark = T.
-- Unlike treble_sync it assumes one row per key in the warehouse (true of
-- the benchmark's data; MERGE would fail otherwise), rewrites the whole
-- window every time, and reports no counts of real changes.
CREATE FUNCTION bench.fdw_cycle(copy_tbl regclass, src regclass,
                                OUT cut timestamptz, OUT merged bigint,
                                OUT window_deleted bigint, OUT window_inserted bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
    prev  timestamptz;
    bound timestamptz;
BEGIN
    SELECT watermark INTO STRICT prev FROM bench.fdw_state WHERE copy_table = copy_tbl FOR UPDATE;
    EXECUTE format('SELECT max(synced_at) FROM %s', src) INTO cut;
    bound := date_trunc('day', cut) - interval '3 days';

    EXECUTE format($sql$
        MERGE INTO %s AS t
        USING (SELECT * FROM %s WHERE synced_at > $1 AND synced_at <= $2) AS s
           ON t.campaign_send_id = s.campaign_send_id
        WHEN MATCHED THEN UPDATE SET
             campaign_id = s.campaign_id, account_id = s.account_id, user_id = s.user_id,
             message_id = s.message_id, channel = s.channel, status = s.status,
             subject = s.subject, cost = s.cost, revenue = s.revenue,
             scheduled_at = s.scheduled_at, created_at = s.created_at, synced_at = s.synced_at
        WHEN NOT MATCHED THEN INSERT VALUES
             (s.campaign_send_id, s.campaign_id, s.account_id, s.user_id, s.message_id,
              s.channel, s.status, s.subject, s.cost, s.revenue,
              s.scheduled_at, s.created_at, s.synced_at)$sql$, copy_tbl, src)
        USING prev, cut;
    GET DIAGNOSTICS merged = ROW_COUNT;

    EXECUTE format('DELETE FROM %s WHERE scheduled_at >= $1', copy_tbl) USING bound;
    GET DIAGNOSTICS window_deleted = ROW_COUNT;
    EXECUTE format('INSERT INTO %s SELECT * FROM %s WHERE scheduled_at >= $1 AND synced_at <= $2',
                   copy_tbl, src) USING bound, cut;
    GET DIAGNOSTICS window_inserted = ROW_COUNT;

    UPDATE bench.fdw_state SET watermark = greatest(prev, cut) WHERE copy_table = copy_tbl;
END
$fn$;

-- The floor of an incremental cycle: the local writes the cycle makes,
-- from staging tables that already hold what it pulled, by plain SQL.
-- bench.floor_stage (not timed) pulls through postgres_fdw, as of the
-- warehouse's cut T, what a treble_sync cycle of the copy pulls: the delta
-- (watermark < synced_at <= T, whole rows) into bench.floor_delta and the
-- keys of the hot window (scheduled_at >= date_trunc('day', T) - 3 days)
-- into bench.floor_keys, both analyzed. bench.floor_apply (timed), in one
-- transaction: the corrections (UPDATE of the keys the copy has), the new
-- rows (INSERT of the others), the window refresh (DELETE of the copy's
-- window rows whose key the warehouse no longer has), the watermark. The
-- copy's watermark is kept in bench.fdw_state.
CREATE FUNCTION bench.floor_stage(copy_tbl regclass, src regclass) RETURNS bigint
LANGUAGE plpgsql SET client_min_messages = warning AS $fn$
DECLARE
    prev  timestamptz;
    cut   timestamptz;
    staged bigint;
BEGIN
    SELECT watermark INTO STRICT prev FROM bench.fdw_state WHERE copy_table = copy_tbl;
    EXECUTE format('SELECT max(synced_at) FROM %s', src) INTO cut;
    DROP TABLE IF EXISTS bench.floor_delta, bench.floor_keys, bench.floor_cut;
    EXECUTE format('CREATE TABLE bench.floor_delta AS SELECT * FROM %s WHERE synced_at > $1 AND synced_at <= $2',
                   src) USING prev, cut;
    GET DIAGNOSTICS staged = ROW_COUNT;
    EXECUTE format('CREATE TABLE bench.floor_keys AS SELECT campaign_send_id FROM %s
                     WHERE scheduled_at >= $1 AND synced_at <= $2', src)
        USING date_trunc('day', cut) - interval '3 days', cut;
    CREATE TABLE bench.floor_cut AS SELECT cut;
    ANALYZE bench.floor_delta, bench.floor_keys;
    RETURN staged;
END
$fn$;

CREATE FUNCTION bench.floor_apply(copy_tbl regclass,
                                  OUT updated bigint, OUT inserted bigint, OUT deleted bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
    cut   timestamptz := (SELECT c.cut FROM bench.floor_cut c);
BEGIN
    EXECUTE format($sql$
        UPDATE %s AS t SET
             campaign_id = s.campaign_id, account_id = s.account_id, user_id = s.user_id,
             message_id = s.message_id, channel = s.channel, status = s.status,
             subject = s.subject, cost = s.cost, revenue = s.revenue,
             scheduled_at = s.scheduled_at, created_at = s.created_at, synced_at = s.synced_at
          FROM bench.floor_delta AS s
         WHERE t.campaign_send_id OPERATOR(pg_catalog.=) s.campaign_send_id$sql$, copy_tbl);
    GET DIAGNOSTICS updated = ROW_COUNT;
    EXECUTE format($sql$
        INSERT INTO %1$s SELECT s.* FROM bench.floor_delta AS s
         WHERE NOT EXISTS (SELECT FROM %1$s AS t
                            WHERE t.campaign_send_id OPERATOR(pg_catalog.=) s.campaign_send_id)$sql$, copy_tbl);
    GET DIAGNOSTICS inserted = ROW_COUNT;
    EXECUTE format($sql$
        DELETE FROM %s AS t
         WHERE t.scheduled_at >= $1
           AND NOT EXISTS (SELECT FROM bench.floor_keys AS k
                            WHERE k.campaign_send_id OPERATOR(pg_catalog.=) t.campaign_send_id)$sql$, copy_tbl)
        USING date_trunc('day', cut) - interval '3 days';
    GET DIAGNOSTICS deleted = ROW_COUNT;
    UPDATE bench.fdw_state SET watermark = greatest(watermark, cut) WHERE copy_table = copy_tbl;
END
$fn$;
