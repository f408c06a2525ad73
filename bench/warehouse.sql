-- bench/warehouse.sql: helpers that bench/run installs in the warehouse
-- (database wh, as its owner). They build a Treble-like fact table and
-- apply deterministic change batches to it.
--
-- Every timestamp derives from a fixed anchor (bench.anchor(), the
-- warehouse's "now"), so the data is the same on every run and on every
-- machine.
--
-- Shape of a table built with history_rows = H and rows_per_year = N:
--   campaign_send_id 1..H, one send every 365 days / N, the newest (id H)
--   scheduled exactly at the anchor. So the last N ids cover the year before
--   the anchor, whatever H is: a table with H = 4N has the same last year
--   (same ids, same values) plus three older years. Its hot window and its
--   change batches are therefore identical to those of the H = N table.

SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS bench;

-- The warehouse's "now".
CREATE OR REPLACE FUNCTION bench.anchor() RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$ SELECT timestamptz '2026-11-29 12:00:00+00' $$;

-- Drop and rebuild public.<tbl>. No primary key, as in the warehouse this
-- mimics, but the key is unique by construction and indexed (the change
-- batches update by key). synced_at and scheduled_at are indexed: they are
-- what a cycle filters on.
CREATE OR REPLACE PROCEDURE bench.build_sends(tbl text, history_rows bigint, rows_per_year bigint)
LANGUAGE plpgsql SET client_min_messages = warning AS $proc$
DECLARE
    step interval := make_interval(secs => 365 * 86400.0 / rows_per_year);
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS public.%I', tbl);
    EXECUTE format($sql$
        CREATE TABLE public.%I (
            campaign_send_id bigint        NOT NULL,
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
        ) WITH (autovacuum_enabled = false)$sql$, tbl);
    -- Autovacuum is off so that it never runs during a measurement;
    -- bench/run vacuums and analyzes at fixed points instead.

    -- synced_at: the hourly load after the send, at most the anchor.
    EXECUTE format($sql$
        INSERT INTO public.%I
        SELECT i,
               1000 + i / 2000,
               1 + i %% 97,
               1 + (i * 7919) %% 1000003,
               CASE WHEN i %% 50 <> 0 THEN 10000000000 + i END,
               (ARRAY['sms', 'sms', 'email', 'whatsapp', 'push', 'sms', 'email'])[1 + i %% 7],
               (ARRAY['delivered', 'delivered', 'delivered', 'opened', 'clicked', 'failed'])[1 + i %% 6],
               'Subject ' || md5(i::text),
               0.0050 + (i %% 37) * 0.0013,
               CASE WHEN i %% 9 = 0 THEN (i %% 1000) * 0.0125 ELSE 0 END,
               sched,
               sched - make_interval(hours => (i %% 72)::int),
               least(date_trunc('hour', sched) + interval '1 hour', bench.anchor())
        FROM generate_series(1::bigint, $1) AS i,
             LATERAL (SELECT bench.anchor() - ($1 - i) * $2 AS sched) AS s$sql$, tbl)
        USING history_rows, step;

    EXECUTE format('CREATE UNIQUE INDEX ON public.%I (campaign_send_id)', tbl);
    EXECUTE format('CREATE INDEX ON public.%I (synced_at)', tbl);
    EXECUTE format('CREATE INDEX ON public.%I (scheduled_at)', tbl);
END
$proc$;

-- Change batch number r (1, 2, ...) of public.<tbl>, like one warehouse
-- load: removals, corrections, new sends. Every changed row gets
-- synced_at = anchor + r * 10 minutes, so the cut T advances by exactly 10
-- minutes per batch and stays on the anchor's day for r < 72 (the hot window
-- keeps the same bounds). Returns what was actually changed, which is what a
-- correct cycle must report.
--
-- Which rows, with stride = rows_per_year / corrections and base = the id
-- before the last year:
--   corrections: ids base + k * stride + o, k = 0..corrections-1, with the
--     offset o = 1 + (r - 1) % (stride / 2): spread evenly over the last
--     year, so about 1% of them fall in the hot window and the rest come
--     through the delta. Status and cost change.
--   removals: the lowest ids scheduled in the last 3 days before the anchor
--     (inside the hot window, which starts at midnight 3 days before the
--     cut's day) whose offset is 0 or above stride / 2. Corrections never
--     use those offsets, so no batch removes a row another batch corrects.
--   new sends: ids after every existing one, scheduled within ~10 hours
--     before the batch's synced_at (inside the hot window).
CREATE OR REPLACE FUNCTION bench.apply_batch(tbl text, history_rows bigint, rows_per_year bigint,
                                             r int, new_rows int, corrections int, removals int,
                                             OUT inserted bigint, OUT updated bigint,
                                             OUT deleted bigint, OUT cut timestamptz)
LANGUAGE plpgsql AS $fn$
DECLARE
    ts     timestamptz := bench.anchor() + r * interval '10 minutes';
    stride bigint := rows_per_year / corrections;
    base   bigint := history_rows - rows_per_year;
    off    bigint := 1 + (r - 1) % (stride / 2);
BEGIN
    IF stride < 2 THEN
        RAISE EXCEPTION 'need at least 2 rows per year per correction';
    END IF;

    EXECUTE format($sql$
        DELETE FROM public.%1$I WHERE campaign_send_id IN (
            SELECT campaign_send_id FROM public.%1$I
             WHERE scheduled_at >= bench.anchor() - interval '3 days'
               AND campaign_send_id <= $1
               AND ((campaign_send_id - $2) %% $3 = 0 OR (campaign_send_id - $2) %% $3 > $3 / 2)
             ORDER BY campaign_send_id
             LIMIT $4)$sql$, tbl)
        USING history_rows, base, stride, removals;
    GET DIAGNOSTICS deleted = ROW_COUNT;

    EXECUTE format($sql$
        UPDATE public.%I AS t
           SET status = (ARRAY['bounced', 'delivered', 'opened', 'clicked'])[1 + $1 %% 4],
               cost = t.cost + 0.0100,
               synced_at = $2
          FROM generate_series(0, $3 - 1) AS k
         WHERE t.campaign_send_id = $4 + k * $5 + $6$sql$, tbl)
        USING r, ts, corrections, base, stride, off;
    GET DIAGNOSTICS updated = ROW_COUNT;

    EXECUTE format($sql$
        INSERT INTO public.%I
        SELECT i,
               5000 + $1,
               1 + i %% 97,
               1 + (i * 7919) %% 1000003,
               10000000000 + i,
               (ARRAY['sms', 'email', 'whatsapp'])[1 + i %% 3],
               'scheduled',
               'Subject ' || md5(i::text),
               0.0075,
               0,
               sched,
               sched - interval '1 hour',
               $2
        FROM generate_series(1, $3) AS j,
             LATERAL (SELECT $4 + ($1 - 1)::bigint * $3 + j AS i,
                             $2 - j * interval '7 seconds' AS sched) AS s$sql$, tbl)
        USING r, ts, new_rows, history_rows;
    GET DIAGNOSTICS inserted = ROW_COUNT;

    EXECUTE format('SELECT max(synced_at) FROM public.%I', tbl) INTO cut;
END
$fn$;

-- A cheap fingerprint of a table's content: row count and the sum of a
-- hash of each row's text. The destination defines the same function, so
-- equal fingerprints mean equal tables (to a 32-bit-per-row hash). Both
-- clusters run with TimeZone UTC and the default DateStyle, so the row
-- texts are comparable.
CREATE OR REPLACE FUNCTION bench.fingerprint(tbl regclass) RETURNS text
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    fp text;
BEGIN
    EXECUTE format('SELECT count(*) || '' '' || coalesce(sum(hashtext(t::text)::bigint), 0) FROM %s AS t',
                   tbl) INTO fp;
    RETURN fp;
END
$fn$;
