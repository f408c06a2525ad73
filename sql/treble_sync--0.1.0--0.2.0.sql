-- treble_sync 0.1.0 -> 0.2.0: upgrade script.  What it changes for users is
-- in NEWS.md; the install script of 0.1.0 is frozen, and every catalog change
-- since is written here (CONTRIBUTING.md, "Releases").
\echo Use "ALTER EXTENSION treble_sync UPDATE TO '0.2.0'" to load this file. \quit

-- Bumped by every change of the registration (alter_table, rewind): a cycle
-- that finds it changed when it commits applies nothing.  Existing
-- registrations start at 1, as new ones do.
ALTER TABLE treble_sync.tables ADD COLUMN revision bigint NOT NULL DEFAULT 1;

-- A row already held in quarantine is not kept (or counted against
-- max_bad_row_ratio) again; a later good version of its key resolves it.
-- Rows kept by 0.1.0 get NULL in the new columns and false in failed_run.
ALTER TABLE treble_sync.quarantine
    -- the row's cursor as last pulled: the key-only window check leaves
    -- alone a quarantined key whose warehouse cursor is still this one
    ADD COLUMN cursor_value text,
    -- a row without a key: the SHA-256 (hex) of its values but the cursor,
    -- which tells such rows apart (NULL for a row with a key)
    ADD COLUMN row_digest text,
    -- the run that applied a good version of the key afterwards, if any
    ADD COLUMN resolved_run_id bigint,
    -- the row failed the run that last saw it (on_bad_row 'fail'): kept as
    -- the evidence of that failure, whose error names only its position
    ADD COLUMN failed_run boolean NOT NULL DEFAULT false;
COMMENT ON TABLE treble_sync.quarantine IS 'rows the copy could not take: set aside by on_bad_row quarantine, or the row that failed a run under on_bad_row fail';

-- remove_table('x', NULL) is an error (22004) rather than a silent no-op.
ALTER FUNCTION treble_sync.remove_table(text, boolean) CALLED ON NULL INPUT;

-- A NULL name or cron is answered by the function (nothing), not by
-- pg_cron's internal error.
ALTER FUNCTION treble_sync.schedule(text, text) STRICT;
ALTER FUNCTION treble_sync.unschedule(text) STRICT;

CREATE OR REPLACE FUNCTION treble_sync.schedule_all(cron text, server name DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM treble_sync.require_primary('schedule_all()');
    -- not STRICT: a NULL server is every server; a NULL cron is an error
    -- here rather than pg_cron's internal one
    IF cron IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'cron must not be NULL';
    END IF;
    PERFORM treble_sync.require_pg_cron();
    RETURN cron.schedule('treble_sync: ' OPERATOR(pg_catalog.||) coalesce('all ' OPERATOR(pg_catalog.||) server, 'all'),
                         cron, pg_catalog.format('SELECT treble_sync.sync_all(%L)', server));
END
$$;

-- ---------------------------------------------------------------------------
-- The window advisor (src/advisor.c): how late the corrections and removals
-- each cycle applies are, as a histogram per table, day and kind.
-- ---------------------------------------------------------------------------

-- One row per table, day (the date in UTC when the change was applied),
-- kind and bucket of lateness.  A correction is late by its
-- cursor minus its event time; a removal by the cut minus its event time;
-- a day verify() found different by its cut minus the day's start.
CREATE TABLE treble_sync.lateness (
    table_id        integer NOT NULL REFERENCES treble_sync.tables ON DELETE CASCADE,
    day             date NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('correction', 'removal', 'verify')),
    -- the bucket: at least late_from_hours late (0: under an hour, or
    -- stamped before its event), and less than late_to_hours (NULL: more)
    late_from_hours integer NOT NULL,
    late_to_hours   integer,
    rows            bigint NOT NULL,
    -- of those, the changes whose event lay before the hot window
    outside_window  bigint NOT NULL,
    -- the latest of them
    max_late        interval NOT NULL,
    PRIMARY KEY (table_id, day, kind, late_from_hours)
);
COMMENT ON TABLE treble_sync.lateness IS
    'how late the changes each table''s cycles applied were: a histogram per day (the window advisor)';
REVOKE ALL ON treble_sync.lateness FROM PUBLIC;
GRANT SELECT ON treble_sync.lateness TO PUBLIC;
ALTER TABLE treble_sync.lateness ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON treble_sync.lateness FOR SELECT
    USING (treble_sync.may_read_log(
               (SELECT t.owner FROM treble_sync.tables t WHERE t.table_id OPERATOR(pg_catalog.=) lateness.table_id),
               (SELECT t.name FROM treble_sync.tables t WHERE t.table_id OPERATOR(pg_catalog.=) lateness.table_id),
               false));

-- The corrections a run applied whose event lay before the hot window.
ALTER TABLE treble_sync.runs ADD COLUMN rows_late_outside bigint NOT NULL DEFAULT 0;

-- A table's 'late' incident: open while corrections land before its hot
-- window (the copy gets them through the delta, but would never see such
-- a row removed).
ALTER TABLE treble_sync.incidents DROP CONSTRAINT incidents_kind_check;
ALTER TABLE treble_sync.incidents ADD CONSTRAINT incidents_kind_check
    CHECK (kind IN ('failing', 'stale', 'late'));

-- after_run: the 'late' incident opens on a run that applied a correction
-- before the hot window, and closes on a run after seven days without one
-- (a window made wide enough, or corrections on time again); the advisor's
-- histogram goes with the run rows, after treble_sync.run_retention.
CREATE OR REPLACE FUNCTION treble_sync.after_run(run_id bigint, retention interval)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r treble_sync.runs;
    t treble_sync.tables;
BEGIN
    SELECT * INTO r FROM treble_sync.runs x WHERE x.run_id OPERATOR(pg_catalog.=) after_run.run_id;
    SELECT * INTO t FROM treble_sync.tables x WHERE x.name OPERATOR(pg_catalog.=) r.table_name;
    IF t.table_id IS NULL
       OR r.status OPERATOR(pg_catalog.<>) ALL ('{success,empty,failed}'::pg_catalog.text[]) THEN
        RETURN;
    END IF;
    PERFORM treble_sync.incident(t, 'failing', r.status OPERATOR(pg_catalog.=) 'failed', r);
    PERFORM treble_sync.incident(t, 'stale',
        treble_sync.freshness(t) OPERATOR(pg_catalog.>)
            pg_catalog.current_setting('treble_sync.freshness_alert')::interval, r);
    IF r.rows_late_outside OPERATOR(pg_catalog.>) 0 THEN
        PERFORM treble_sync.incident(t, 'late', true, r);
    ELSIF r.status OPERATOR(pg_catalog.<>) 'failed' AND NOT EXISTS (
            SELECT 1 FROM treble_sync.lateness l
            WHERE l.table_id OPERATOR(pg_catalog.=) t.table_id
              AND l.kind OPERATOR(pg_catalog.<>) 'removal'
              AND l.outside_window OPERATOR(pg_catalog.>) 0
              AND l.day OPERATOR(pg_catalog.>) ((pg_catalog.now() AT TIME ZONE 'UTC')::pg_catalog.date OPERATOR(pg_catalog.-) 7)) THEN
        PERFORM treble_sync.incident(t, 'late', false, r);
    END IF;
    IF retention IS NOT NULL THEN
        DELETE FROM treble_sync.runs x
        WHERE x.table_name OPERATOR(pg_catalog.=) t.name
          AND x.owner OPERATOR(pg_catalog.=) t.owner
          AND x.finished_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) retention);
        DELETE FROM treble_sync.lateness l
        WHERE l.table_id OPERATOR(pg_catalog.=) t.table_id
          AND l.day OPERATOR(pg_catalog.<) ((pg_catalog.now() OPERATOR(pg_catalog.-) retention) AT TIME ZONE 'UTC')::pg_catalog.date;
    END IF;
END
$$;

-- The advice: over the days (UTC) since `since` (30 days back by default), how late
-- the table's corrections were (p50, p99, p99.9 and the latest; a
-- percentile is the upper end of the histogram bucket it falls in, at
-- most the latest seen), how many landed before the hot window and their
-- share, the removals seen, the days verify() found different before the
-- window, and the smallest window in whole days that would have held
-- p99.9 of the corrections and removals.  Reads the histogram with the
-- caller's privileges: a table whose log the caller may not read has no row.
CREATE FUNCTION treble_sync.window_advice(name text DEFAULT NULL, since date DEFAULT NULL)
RETURNS TABLE (table_name text, hot_window interval, corrections bigint, removals bigint,
               late_p50 interval, late_p99 interval, late_p999 interval, late_max interval,
               outside_window bigint, outside_share double precision,
               verify_outside_days bigint, advised_window interval)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH period AS (
        SELECT coalesce(window_advice.since, (pg_catalog.now() AT TIME ZONE 'UTC')::pg_catalog.date OPERATOR(pg_catalog.-) 30) AS since
    ), t AS (
        SELECT x.table_id, x.name, x.hot_window FROM treble_sync.tables x
        WHERE (window_advice.name IS NULL OR x.name OPERATOR(pg_catalog.=) window_advice.name)
          AND x.event_column IS NOT NULL AND x.cursor_kind OPERATOR(pg_catalog.=) 'timestamp'
          AND treble_sync.may_read_log(x.owner, x.name, false)
    ), b AS (
        -- the buckets of corrections and removals, in order of lateness
        SELECT l.table_id, l.late_from_hours, l.late_to_hours,
               pg_catalog.sum(l.rows)::bigint AS rows, pg_catalog.max(l.max_late) AS max_late
        FROM treble_sync.lateness l, period p
        WHERE l.day OPERATOR(pg_catalog.>=) p.since AND l.kind OPERATOR(pg_catalog.<>) 'verify'
        GROUP BY 1, 2, 3
    ), c AS (
        SELECT b.*, pg_catalog.sum(b.rows) OVER (PARTITION BY b.table_id ORDER BY b.late_from_hours)
                    OPERATOR(pg_catalog./) pg_catalog.sum(b.rows) OVER (PARTITION BY b.table_id) AS upto,
               pg_catalog.max(b.max_late) OVER (PARTITION BY b.table_id) AS latest
        FROM b
    ), q AS (
        -- a percentile: the end of the first bucket that reaches it, but
        -- never past the latest change seen
        SELECT c.table_id,
               LEAST(pg_catalog.min(pg_catalog.make_interval(hours => c.late_to_hours))
                                FILTER (WHERE c.upto OPERATOR(pg_catalog.>=) 0.5), pg_catalog.max(c.latest)) AS p50,
               LEAST(pg_catalog.min(pg_catalog.make_interval(hours => c.late_to_hours))
                                FILTER (WHERE c.upto OPERATOR(pg_catalog.>=) 0.99), pg_catalog.max(c.latest)) AS p99,
               LEAST(pg_catalog.min(pg_catalog.make_interval(hours => c.late_to_hours))
                                FILTER (WHERE c.upto OPERATOR(pg_catalog.>=) 0.999), pg_catalog.max(c.latest)) AS p999,
               pg_catalog.max(c.latest) AS latest
        FROM c GROUP BY 1
    ), k AS (
        SELECT l.table_id,
               pg_catalog.sum(l.rows) FILTER (WHERE l.kind OPERATOR(pg_catalog.=) 'correction')::bigint AS corrections,
               pg_catalog.sum(l.rows) FILTER (WHERE l.kind OPERATOR(pg_catalog.=) 'removal')::bigint AS removals,
               pg_catalog.sum(l.outside_window) FILTER (WHERE l.kind OPERATOR(pg_catalog.=) 'correction')::bigint AS outside,
               pg_catalog.sum(l.outside_window) FILTER (WHERE l.kind OPERATOR(pg_catalog.=) 'verify')::bigint AS verify_outside
        FROM treble_sync.lateness l, period p
        WHERE l.day OPERATOR(pg_catalog.>=) p.since
        GROUP BY 1
    )
    SELECT t.name, t.hot_window,
           coalesce(k.corrections, 0), coalesce(k.removals, 0),
           q.p50, q.p99, q.p999, q.latest,
           coalesce(k.outside, 0),
           CASE WHEN coalesce(k.corrections, 0) OPERATOR(pg_catalog.>) 0
                THEN k.outside::double precision OPERATOR(pg_catalog./) k.corrections END,
           coalesce(k.verify_outside, 0),
           -- whole days: a change late by L lies inside a window of
           -- ceil(L / 1 day) days whenever it is applied
           CASE WHEN q.p999 IS NOT NULL THEN pg_catalog.make_interval(days => GREATEST(1,
               pg_catalog.ceil(pg_catalog.date_part('epoch', q.p999) OPERATOR(pg_catalog./) 86400)::integer)) END
    FROM t
    LEFT JOIN q ON q.table_id OPERATOR(pg_catalog.=) t.table_id
    LEFT JOIN k ON k.table_id OPERATOR(pg_catalog.=) t.table_id
    ORDER BY t.name
$$;
COMMENT ON FUNCTION treble_sync.window_advice IS
    'how late corrections and removals came (p50, p99, p99.9, latest), how many landed before the hot window, and the window that would hold p99.9';

-- ---------------------------------------------------------------------------
-- Sync groups (src/group.c): tables published together at one cut, in one
-- commit.
-- ---------------------------------------------------------------------------

-- A group: its members are the registrations whose group_id names it, in
-- group_position order (the order their cuts are frozen in).  They share
-- one owner (the group's) and one server.
CREATE TABLE treble_sync.groups (
    group_id   integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    owner      regrole NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE treble_sync.groups IS 'sync groups: tables cycled together, at one cut, in one commit';
SELECT pg_catalog.pg_extension_config_dump('treble_sync.groups', '');
REVOKE ALL ON treble_sync.groups FROM PUBLIC;
GRANT SELECT ON treble_sync.groups TO PUBLIC;

ALTER TABLE treble_sync.tables
    ADD COLUMN group_id integer REFERENCES treble_sync.groups ON DELETE SET NULL,
    ADD COLUMN group_position integer;

-- One row per group cycle; each member's run row names it (group_run_id).
CREATE TABLE treble_sync.group_runs (
    group_run_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    group_name   text NOT NULL,
    status       text NOT NULL CHECK (status IN ('running', 'success', 'empty', 'failed', 'skipped')),
    started_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at  timestamptz,
    error        text,
    owner        regrole,
    run_by       regrole
);
CREATE INDEX group_runs_group_name_idx ON treble_sync.group_runs (group_name, group_run_id);
COMMENT ON TABLE treble_sync.group_runs IS 'the group run log: one row per group cycle';
REVOKE ALL ON treble_sync.group_runs FROM PUBLIC;
GRANT SELECT ON treble_sync.group_runs TO PUBLIC;
ALTER TABLE treble_sync.group_runs ENABLE ROW LEVEL SECURITY;
-- readable by the roles that may read the run log of one of its tables
-- (the group's owner's, a copy's readers, pg_read_all_stats), as a run's
CREATE POLICY owner_reads ON treble_sync.group_runs FOR SELECT
    USING ((owner IS NOT NULL AND pg_catalog.pg_has_role(owner::pg_catalog.oid, 'USAGE'))
           OR pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
           OR pg_catalog.pg_has_role('pg_read_all_data', 'USAGE')
           OR EXISTS (SELECT 1 FROM treble_sync.groups g JOIN treble_sync.tables t USING (group_id)
                      WHERE g.name OPERATOR(pg_catalog.=) group_runs.group_name
                        AND treble_sync.may_read_log(t.owner, t.name, false)));

ALTER TABLE treble_sync.runs ADD COLUMN group_run_id bigint;

CREATE FUNCTION treble_sync.add_group(name text, tables text[])
RETURNS treble_sync.groups
AS 'MODULE_PATHNAME', 'treble_sync_add_group'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION treble_sync.add_group IS
    'make registered tables a group: cycled together at one cut, in one commit (sync_group)';

CREATE FUNCTION treble_sync.alter_group(name text, tables text[])
RETURNS treble_sync.groups
AS 'MODULE_PATHNAME', 'treble_sync_alter_group'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION treble_sync.alter_group IS
    'replace the members of a group';

CREATE FUNCTION treble_sync.remove_group(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'treble_sync_remove_group'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
COMMENT ON FUNCTION treble_sync.remove_group IS
    'dissolve a group: its tables stay registered and cycle one by one again';

CREATE FUNCTION treble_sync.sync_group(name text)
RETURNS SETOF treble_sync.runs
AS 'MODULE_PATHNAME', 'treble_sync_sync_group'
LANGUAGE C STRICT VOLATILE;
COMMENT ON FUNCTION treble_sync.sync_group IS
    'run one cycle of every member of a group, at one cut, committed once; returns the members'' run rows';

CREATE FUNCTION treble_sync.schedule_group(name text, cron text)
RETURNS bigint LANGUAGE plpgsql STRICT SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM treble_sync.require_primary('schedule_group()');
    PERFORM treble_sync.require_pg_cron();
    IF NOT EXISTS (SELECT 1 FROM treble_sync.groups g WHERE g.name OPERATOR(pg_catalog.=) schedule_group.name) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'undefined_object',
            MESSAGE = pg_catalog.format('group "%s" does not exist', name);
    END IF;
    RETURN cron.schedule('treble_sync: group ' OPERATOR(pg_catalog.||) name, cron,
                         pg_catalog.format('SELECT treble_sync.sync_group(%L)', name));
END
$$;
COMMENT ON FUNCTION treble_sync.schedule_group IS
    'run sync_group() on a pg_cron schedule; returns the job id (unschedule(''group <name>'') removes it)';

-- As add_table and sync_table: treble_sync_admin's, not PUBLIC's.
REVOKE EXECUTE ON FUNCTION treble_sync.add_group(text, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION treble_sync.alter_group(text, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION treble_sync.remove_group(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION treble_sync.sync_group(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION treble_sync.schedule_group(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION treble_sync.add_group(text, text[]) TO treble_sync_admin;
GRANT EXECUTE ON FUNCTION treble_sync.alter_group(text, text[]) TO treble_sync_admin;
GRANT EXECUTE ON FUNCTION treble_sync.remove_group(text) TO treble_sync_admin;
GRANT EXECUTE ON FUNCTION treble_sync.sync_group(text) TO treble_sync_admin;
GRANT EXECUTE ON FUNCTION treble_sync.schedule_group(text, text) TO treble_sync_admin;

-- alter_table's comment: the empty string that clears a text option, lost
-- from the 0.1.0 text when it was written inside a quoted literal.
COMMENT ON FUNCTION treble_sync.alter_table IS
    'change options of a registration; NULL leaves an option as it is, '''' clears a text option';

-- pg_dump and pg_restore: the identity sequences of the configuration
-- tables come back with their rows (pg_extension_config_dump dumps a
-- sequence's state), so that a registration, a check or a group made after
-- a restore takes an id of its own rather than one a restored row holds.
-- The run log is not dumped, but the history tables (the copies' own) name
-- runs by id (ts_opened_by, ts_closed_by, ts_rewound_by): the next run
-- after a restore must not take the id of a run they name.
SELECT pg_catalog.pg_extension_config_dump('treble_sync.tables_table_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('treble_sync.checks_check_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('treble_sync.runs_run_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('treble_sync.groups_group_id_seq', '');


-- ---------------------------------------------------------------------------
-- Warehouse-derived metadata is as private as the run log (docs/security.md,
-- "Warehouse values in errors and logs"): a registration's watermark (the
-- newest warehouse row's cursor), load_cut (a first load's cut) and
-- history_from (its history's first cut) are readable by the roles that
-- may read the table's run log, through the status view, and no longer by
-- every role through treble_sync.tables.  The other columns stay readable
-- by everyone; a column added to treble_sync.tables later must be granted
-- here too.  The extension reads the registration as its owner
-- (src/catalog.c).
-- ---------------------------------------------------------------------------
REVOKE SELECT ON treble_sync.tables FROM PUBLIC;
GRANT SELECT (
    table_id, name, server_name, remote_schema, remote_table, local_table,
    key_columns, columns, mode, cursor_column, cursor_kind, cursor_overlap,
    event_column, hot_window, initial_chunk, parallel, login_timeout,
    query_timeout, max_retries, max_delete_ratio, mask, schema_drift,
    all_columns, remote_columns, on_bad_row, max_bad_row_ratio,
    hot_window_check, enabled, owner, created_at, keep_history,
    history_table, revision, group_id, group_position
) ON treble_sync.tables TO PUBLIC;

-- status: the window advisor's last 30 days, the table's group and the
-- watermark as a time: four columns at the end.  The view reads
-- treble_sync.tables (the watermark among it) and the run log as the view's
-- owner, and shows a row only to those who may read the table's log: a
-- security barrier (in place of 0.1.0's security_invoker), so that no
-- function of the reader's sees a row before that test; the run log's rows
-- are the registration's owner's, as its policy would keep them.
CREATE OR REPLACE VIEW treble_sync.status WITH (security_barrier = true) AS
SELECT t.name AS table_name,
       t.enabled,
       t.mode,
       s.schedule,
       last.status AS last_status,
       last.finished_at AS last_run_at,
       last.finished_at OPERATOR(pg_catalog.-) last.started_at AS last_duration,
       t.watermark,
       CASE WHEN t.cursor_kind OPERATOR(pg_catalog.=) 'timestamp' THEN
           last.cut::timestamp OPERATOR(pg_catalog.-) t.watermark::timestamp END AS lag,
       pg_catalog.round(extract(epoch FROM treble_sync.freshness(t)))::bigint AS freshness_seconds,
       (SELECT pg_catalog.count(*) FROM treble_sync.runs f
        WHERE f.table_name OPERATOR(pg_catalog.=) t.name AND f.owner OPERATOR(pg_catalog.=) t.owner
          AND f.status OPERATOR(pg_catalog.=) 'failed'
          AND f.run_id OPERATOR(pg_catalog.>) coalesce((SELECT pg_catalog.max(ok.run_id) FROM treble_sync.runs ok
                                   WHERE ok.table_name OPERATOR(pg_catalog.=) t.name
                                     AND ok.owner OPERATOR(pg_catalog.=) t.owner
                                     AND ok.status OPERATOR(pg_catalog.=) ANY ('{success,empty}'::pg_catalog.text[])), 0)
       ) AS consecutive_failures,
       CASE WHEN last.status OPERATOR(pg_catalog.=) 'failed' THEN last.error END AS last_error,
       greatest(c.reltuples, 0)::bigint AS rows_estimate,
       a.outside_window AS late_outside_window,
       a.advised_window,
       g.name AS group_name,
       treble_sync.watermark_time(t) AS watermark_time
FROM treble_sync.tables t
LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.local_table
LEFT JOIN LATERAL (SELECT * FROM treble_sync.runs r
                   WHERE r.table_name OPERATOR(pg_catalog.=) t.name
                     AND r.owner OPERATOR(pg_catalog.=) t.owner
                     AND r.status OPERATOR(pg_catalog.=) ANY ('{success,empty,failed}'::pg_catalog.text[])
                   ORDER BY r.run_id DESC LIMIT 1) last ON true
LEFT JOIN LATERAL (SELECT pg_catalog.string_agg(x.schedule, ', ') AS schedule
                   FROM treble_sync.schedules() x
                   WHERE x.job_name OPERATOR(pg_catalog.=) ('treble_sync: ' OPERATOR(pg_catalog.||) t.name)) s ON true
LEFT JOIN LATERAL treble_sync.window_advice(t.name) a ON true
LEFT JOIN treble_sync.groups g ON g.group_id OPERATOR(pg_catalog.=) t.group_id
WHERE treble_sync.may_read_log(t.owner, t.name, false);

-- ---------------------------------------------------------------------------
-- run_checks: a range check compares as numeric, so a bound the column's
-- own type cannot hold (an open end, -Infinity/Infinity, or 2.5 for an
-- integer column) no longer fails every cycle with an input error.  It runs
-- as the registration's owner, who may not read the watermark's columns: it
-- reads only the columns it uses.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION treble_sync.run_checks(p_table_id integer, p_cut text, p_changed bigint)
RETURNS TABLE (check_id bigint, kind text, severity text, passed boolean, observed text,
               failing_keys text[])
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t treble_sync.tables;
    c treble_sync.checks;
    copy text;
    keys text;
    staged boolean := pg_catalog.to_regclass('pg_temp.treble_sync_stage') IS NOT NULL;
    bad bigint;
    total bigint;
    cond text;
    newest timestamp;
    mean numeric;
    n integer;
BEGIN
    -- the columns it uses, not the row: the owner it runs as may not read
    -- the watermark's columns
    SELECT x.table_id, x.name, x.local_table, x.key_columns, x.cursor_column, x.cursor_kind,
           x.event_column
      INTO t.table_id, t.name, t.local_table, t.key_columns, t.cursor_column, t.cursor_kind,
           t.event_column
      FROM treble_sync.tables x WHERE x.table_id OPERATOR(pg_catalog.=) p_table_id;
    copy := t.local_table::pg_catalog.text;
    SELECT pg_catalog.string_agg(pg_catalog.format('s.%I::pg_catalog.text', k),
                                 ' OPERATOR(pg_catalog.||) '', '' OPERATOR(pg_catalog.||) ')
        INTO keys FROM pg_catalog.unnest(t.key_columns) k;
    FOR c IN SELECT * FROM treble_sync.checks x WHERE x.table_id OPERATOR(pg_catalog.=) p_table_id
             ORDER BY x.check_id LOOP
        check_id := c.check_id;
        kind := c.kind;
        severity := c.severity;
        failing_keys := NULL;
        IF c.kind OPERATOR(pg_catalog.=) 'freshness' THEN
            EXECUTE pg_catalog.format('SELECT pg_catalog.max(%I)::timestamp FROM %s',
                           coalesce(c.columns[1], t.event_column, t.cursor_column), copy) INTO newest;
            IF t.cursor_kind OPERATOR(pg_catalog.=) 'timestamp' THEN
                observed := (p_cut::timestamp OPERATOR(pg_catalog.-) newest)::pg_catalog.text;
                passed := newest IS NOT NULL
                          AND (p_cut::timestamp OPERATOR(pg_catalog.-) newest) OPERATOR(pg_catalog.<=) c.max_age;
            ELSE
                observed := (pg_catalog.now()::timestamp OPERATOR(pg_catalog.-) newest)::pg_catalog.text;
                passed := newest IS NOT NULL
                          AND (pg_catalog.now()::timestamp OPERATOR(pg_catalog.-) newest) OPERATOR(pg_catalog.<=) c.max_age;
            END IF;
        ELSIF c.kind OPERATOR(pg_catalog.=) 'volume' THEN
            SELECT pg_catalog.avg(x.rows_inserted OPERATOR(pg_catalog.+) x.rows_updated
                                  OPERATOR(pg_catalog.+) x.rows_deleted),
                   pg_catalog.count(*) INTO mean, n
            FROM (SELECT * FROM treble_sync.runs r
                  WHERE r.table_name OPERATOR(pg_catalog.=) t.name
                    AND r.status OPERATOR(pg_catalog.=) ANY ('{success,empty}'::pg_catalog.text[])
                  ORDER BY r.run_id DESC LIMIT c.last_n) x;
            observed := pg_catalog.format('%s rows changed; mean of the last %s runs %s', p_changed, n,
                                          pg_catalog.round(mean, 1));
            passed := n OPERATOR(pg_catalog.<) c.last_n
                      OR pg_catalog.abs(p_changed OPERATOR(pg_catalog.-) mean)
                         OPERATOR(pg_catalog.<=) (c.within OPERATOR(pg_catalog.*) mean);
        ELSIF NOT staged THEN
            observed := 'no rows pulled';
            passed := true;
        ELSE
            cond := CASE
                WHEN c.kind OPERATOR(pg_catalog.=) 'range' THEN
                    pg_catalog.format('s.%1$I::pg_catalog.numeric OPERATOR(pg_catalog.<) %2$L::pg_catalog.numeric OR s.%1$I::pg_catalog.numeric OPERATOR(pg_catalog.>) %3$L::pg_catalog.numeric',
                                      c.columns[1],
                                      coalesce(c.min_value, '-Infinity'::numeric),
                                      coalesce(c.max_value, 'Infinity'::numeric))
                WHEN c.kind OPERATOR(pg_catalog.=) 'not_null' THEN
                    (SELECT pg_catalog.string_agg(pg_catalog.format('s.%I IS NULL', col), ' OR ')
                     FROM pg_catalog.unnest(c.columns) col)
                WHEN c.kind OPERATOR(pg_catalog.=) 'references' THEN
                    pg_catalog.format('s.%1$I IS NOT NULL AND NOT EXISTS (SELECT 1 FROM %2$s r'
                                      ' WHERE r.%3$I OPERATOR(pg_catalog.=) s.%1$I)',
                                      c.columns[1], c.ref_table, c.ref_column)
                WHEN c.kind OPERATOR(pg_catalog.=) 'unique' THEN
                    pg_catalog.format('EXISTS (SELECT 1 FROM %1$s d WHERE (%2$s) OPERATOR(pg_catalog.=) (%3$s)'
                                      ' AND (%4$s) OPERATOR(pg_catalog.<>) (%5$s))', copy,
                                      (SELECT pg_catalog.string_agg(pg_catalog.format('d.%I', col), ', ')
                                       FROM pg_catalog.unnest(c.columns) col),
                                      (SELECT pg_catalog.string_agg(pg_catalog.format('s.%I', col), ', ')
                                       FROM pg_catalog.unnest(c.columns) col),
                                      (SELECT pg_catalog.string_agg(pg_catalog.format('d.%I', k), ', ')
                                       FROM pg_catalog.unnest(t.key_columns) k),
                                      (SELECT pg_catalog.string_agg(pg_catalog.format('s.%I', k), ', ')
                                       FROM pg_catalog.unnest(t.key_columns) k))
            END;
            EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FILTER (WHERE %s), pg_catalog.count(*)'
                                      ' FROM pg_temp.treble_sync_stage s', cond)
                INTO bad, total;
            EXECUTE pg_catalog.format('SELECT pg_catalog.array_agg(k) FROM (SELECT %s AS k'
                                      ' FROM pg_temp.treble_sync_stage s WHERE %s ORDER BY 1 LIMIT 20) x',
                                      keys, cond) INTO failing_keys;
            observed := pg_catalog.format('%s of %s rows', bad, total);
            passed := bad OPERATOR(pg_catalog.<=) (c.tolerance OPERATOR(pg_catalog.*) total);
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- incident(): the 'late' incident's events (late, on_time), and the table's
-- group in every notification.  A notification no longer carries the copy's
-- freshness (now minus the watermark): every role may LISTEN.
CREATE OR REPLACE FUNCTION treble_sync.incident(t treble_sync.tables, incident_kind text, open boolean,
                                                run treble_sync.runs)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    i treble_sync.incidents;
    event text;
BEGIN
    IF open THEN
        INSERT INTO treble_sync.incidents AS x (table_id, kind, opened_by)
        VALUES (t.table_id, incident_kind, run.run_id)
        ON CONFLICT (table_id, kind) WHERE closed_at IS NULL DO NOTHING
        RETURNING x.* INTO i;
        event := CASE incident_kind WHEN 'failing' THEN 'failed' WHEN 'late' THEN 'late' ELSE 'stale' END;
    ELSE
        UPDATE treble_sync.incidents x SET closed_at = pg_catalog.clock_timestamp(), closed_by = run.run_id
        WHERE x.table_id OPERATOR(pg_catalog.=) t.table_id AND x.kind OPERATOR(pg_catalog.=) incident_kind
          AND x.closed_at IS NULL
        RETURNING x.* INTO i;
        event := CASE incident_kind WHEN 'failing' THEN 'recovered' WHEN 'late' THEN 'on_time' ELSE 'fresh' END;
    END IF;
    IF i.incident_id IS NULL THEN
        RETURN;                     -- already open, or nothing to close
    END IF;
    PERFORM pg_notify('treble_sync', json_build_object(
        'event', event,
        'table', t.name,
        'incident_id', i.incident_id,
        'run_id', run.run_id,
        'status', run.status,
        'at', clock_timestamp(),
        'group', (SELECT g.name FROM treble_sync.groups g WHERE g.group_id OPERATOR(pg_catalog.=) t.group_id)
    )::text);
END
$$;

-- metrics(): the group cycles too, by group and status; and only the tables
-- (and groups) whose log the reader may read, as the documentation said;
-- every table had its rows, all zeroes.
CREATE OR REPLACE FUNCTION treble_sync.metrics()
RETURNS text LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    WITH label AS (
        SELECT t.name, pg_catalog.format('table="%s"',
                   pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(t.name, '\', '\\'), '"', '\"'),
                                      E'\n', '\n')) AS l
        FROM treble_sync.tables t
        WHERE treble_sync.may_read_log(t.owner, t.name, false)
    ), lines AS (
        SELECT 1 AS k, 0 AS o, '# HELP treble_sync_freshness_seconds Seconds since the copy''s watermark (its cut in the warehouse).' AS line
        UNION ALL SELECT 1, 1, '# TYPE treble_sync_freshness_seconds gauge'
        UNION ALL SELECT 1, 2, pg_catalog.format('treble_sync_freshness_seconds{%s} %s', l.l,
                                                 coalesce(st.freshness_seconds::pg_catalog.text, 'NaN'))
            FROM label l JOIN treble_sync.status st ON st.table_name OPERATOR(pg_catalog.=) l.name
        UNION ALL SELECT 2, 0, '# HELP treble_sync_last_run_duration_seconds Duration of the last finished run.'
        UNION ALL SELECT 2, 1, '# TYPE treble_sync_last_run_duration_seconds gauge'
        UNION ALL SELECT 2, 2, pg_catalog.format('treble_sync_last_run_duration_seconds{%s} %s', l.l,
                                      coalesce(pg_catalog.round(extract(epoch FROM st.last_duration), 3)::pg_catalog.text, 'NaN'))
            FROM label l JOIN treble_sync.status st ON st.table_name OPERATOR(pg_catalog.=) l.name
        UNION ALL SELECT 3, 0, '# HELP treble_sync_consecutive_failures Failed runs since the last successful one.'
        UNION ALL SELECT 3, 1, '# TYPE treble_sync_consecutive_failures gauge'
        UNION ALL SELECT 3, 2, pg_catalog.format('treble_sync_consecutive_failures{%s} %s', l.l, st.consecutive_failures)
            FROM label l JOIN treble_sync.status st ON st.table_name OPERATOR(pg_catalog.=) l.name
        UNION ALL SELECT 4, 0, '# HELP treble_sync_rows Rows moved by the runs in the run log.'
        UNION ALL SELECT 4, 1, '# TYPE treble_sync_rows counter'
        UNION ALL SELECT 4, 2, pg_catalog.format('treble_sync_rows_total{%s,kind="%s"} %s', l.l, kind.k,
                                      coalesce(pg_catalog.sum(CASE WHEN kind.k OPERATOR(pg_catalog.=) 'pulled' THEN r.rows_pulled
                                                                   WHEN kind.k OPERATOR(pg_catalog.=) 'inserted' THEN r.rows_inserted
                                                                   WHEN kind.k OPERATOR(pg_catalog.=) 'updated' THEN r.rows_updated
                                                                   ELSE r.rows_deleted END), 0))
            FROM label l CROSS JOIN (VALUES ('pulled'), ('inserted'), ('updated'), ('deleted')) kind(k)
            LEFT JOIN treble_sync.runs r ON r.table_name OPERATOR(pg_catalog.=) l.name
            GROUP BY l.l, kind.k
        UNION ALL SELECT 5, 0, '# HELP treble_sync_runs Runs in the run log, by status.'
        UNION ALL SELECT 5, 1, '# TYPE treble_sync_runs counter'
        UNION ALL SELECT 5, 2, pg_catalog.format('treble_sync_runs_total{%s,status="%s"} %s', l.l, st.s,
                                                 pg_catalog.count(r.run_id))
            FROM label l CROSS JOIN (VALUES ('success'), ('empty'), ('failed'), ('skipped')) st(s)
            LEFT JOIN treble_sync.runs r ON r.table_name OPERATOR(pg_catalog.=) l.name
                                        AND r.status OPERATOR(pg_catalog.=) st.s
            GROUP BY l.l, st.s
        UNION ALL SELECT 6, 0, '# HELP treble_sync_group_runs Group cycles in the group run log, by status.'
        UNION ALL SELECT 6, 1, '# TYPE treble_sync_group_runs counter'
        UNION ALL SELECT 6, 2, pg_catalog.format('treble_sync_group_runs_total{group="%s",status="%s"} %s',
                                                 pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(g.name, '\', '\\'), '"', '\"'),
                                                                    E'\n', '\n'),
                                                 st.s, pg_catalog.count(r.group_run_id))
            FROM (SELECT x.* FROM treble_sync.groups x
                  WHERE EXISTS (SELECT 1 FROM treble_sync.tables t
                                WHERE t.group_id OPERATOR(pg_catalog.=) x.group_id
                                  AND treble_sync.may_read_log(t.owner, t.name, false))) g CROSS JOIN (VALUES ('success'), ('empty'), ('failed'), ('skipped')) st(s)
            LEFT JOIN treble_sync.group_runs r ON r.group_name OPERATOR(pg_catalog.=) g.name
                                              AND r.status OPERATOR(pg_catalog.=) st.s
            GROUP BY g.name, st.s
    )
    SELECT pg_catalog.string_agg(line, E'\n' ORDER BY k, o, line) OPERATOR(pg_catalog.||) E'\n# EOF\n' FROM lines
$$;
COMMENT ON FUNCTION treble_sync.metrics IS 'OpenMetrics text: freshness, last run duration, failures, rows and runs per table; group cycles per group';

-- explain_cycle(): the statements a table's next cycle would send to the
-- warehouse and run on the copy, built by the cycle's own code and run by
-- none; for the registration's owner (and roles with its privileges)
-- among treble_sync_admin.
CREATE FUNCTION treble_sync.explain_cycle(name text)
RETURNS TABLE (side text, step text, statement text)
AS 'MODULE_PATHNAME', 'treble_sync_explain_cycle'
LANGUAGE C STRICT VOLATILE;
COMMENT ON FUNCTION treble_sync.explain_cycle IS
    'the statements the next cycle of a table would send to the warehouse (remote) and run on the copy (local), without running them';
REVOKE EXECUTE ON FUNCTION treble_sync.explain_cycle(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION treble_sync.explain_cycle(text) TO treble_sync_admin;
