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
