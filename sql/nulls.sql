-- NULL, and odd values, in every argument of every function of the
-- schema: each call either answers or fails with a clear error; none may
-- crash the server.  A crash of any backend or worker restarts the whole
-- server and ends this session, so reaching the end of this file in the
-- same session (same backend pid, same postmaster start time) is the proof.
--
-- The calls are generated from pg_proc, so a function added later is
-- called too: with NULL in each argument position in turn, the arguments
-- before it given valid values (a registered table that keeps history, its
-- copy's row type, a cut inside its history), the optional ones after it
-- left to their defaults.  Each call runs in a subtransaction that is
-- rolled back afterwards (try_call raises RGOK0 after a call that
-- returns), so a call that succeeds changes nothing but what a worker
-- commits on its own.
-- Only the SQLSTATE of each call is printed.  Three callers: a login role
-- with no grant (PUBLIC's rights), an admin that owns the registration,
-- and a superuser, which passes every permission check and reaches the
-- deepest code.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db
SELECT pg_backend_pid() AS pid_before, pg_postmaster_start_time() AS started_before \gset

SELECT $$
CREATE TABLE null_sends (id INTEGER PRIMARY KEY, note TEXT, scheduled_at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO null_sends VALUES (1, 'a', '2026-11-28 00:00:00', '2026-11-28 00:00:00');
INSERT INTO null_sends VALUES (2, 'b', '2026-11-29 00:00:00', '2026-11-29 00:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

CREATE ROLE regress_null_nobody LOGIN;
CREATE ROLE regress_null_owner LOGIN;
GRANT USAGE ON FOREIGN SERVER wh TO regress_null_owner;
GRANT CREATE ON SCHEMA public TO regress_null_owner;
GRANT treble_sync_admin TO regress_null_owner;
CREATE USER MAPPING FOR regress_null_owner SERVER wh OPTIONS (password_required 'false');

-- a registration that keeps history, one that does not, and a first cycle
SET ROLE regress_null_owner;
SELECT name, keep_history FROM treble_sync.add_table('null_sends', 'wh', key_columns => '{id}',
                                                     event_column => 'scheduled_at',
                                                     keep_history => '100 years');
SELECT name, keep_history FROM treble_sync.add_table('null_sends', 'wh', key_columns => '{id}',
                                                     event_column => 'scheduled_at',
                                                     name => 'null_plain', local_table => 'null_plain');
RESET ROLE;
SELECT status, rows_inserted FROM treble_sync.sync_table('null_sends');
SELECT status, rows_inserted FROM treble_sync.sync_table('null_plain');
-- and a group of the second
SET ROLE regress_null_owner;
SELECT name FROM treble_sync.add_group('null_group', '{null_plain}');
RESET ROLE;

-- Valid values of the arguments that have no default (and of a few that
-- have one, where the default would make the call fail early): by
-- function and argument name, or by position for unnamed arguments.
CREATE TABLE null_valid (proname name, arg text, expr text, PRIMARY KEY (proname, arg));
GRANT SELECT ON null_valid TO PUBLIC;
INSERT INTO null_valid VALUES
    ('add_group', 'name', $$'null_group_2'$$),
    ('add_group', 'tables', $$'{null_plain}'$$),
    ('alter_group', 'name', $$'null_group'$$),
    ('alter_group', 'tables', $$'{null_plain}'$$),
    ('remove_group', 'name', $$'null_group'$$),
    ('sync_group', 'name', $$'null_group'$$),
    ('schedule_group', 'name', $$'null_group'$$),
    ('schedule_group', 'cron', $$'0 * * * *'$$),
    ('add_check', 'name', $$'null_sends'$$),
    ('add_check', 'kind', $$'not_null'$$),
    ('add_check', 'column_name', $$'note'$$),
    ('add_table', 'remote_table', $$'null_sends'$$),
    ('add_table', 'server', $$'wh'$$),
    ('add_table', 'key_columns', $$'{id}'$$),
    ('add_table', 'event_column', $$'scheduled_at'$$),
    ('add_table', 'name', $$'null_again'$$),
    ('add_table', 'local_table', $$'null_again'$$),
    ('after_run', 'run_id', $$(SELECT max(run_id) FROM treble_sync.runs)$$),
    ('after_run', 'retention', $$'1 day'$$),
    ('alter_table', 'name', $$'null_sends'$$),
    ('as_of', 'copy', $$NULL::public.null_sends$$),
    ('as_of', 'cut', $$now()$$),
    ('changes', 'copy', $$NULL::public.null_sends$$),
    ('changes', 'from_cut', $$now()$$),
    ('changes', 'to_cut', $$now()$$),
    ('drop_check', 'check_id', $$1$$),
    ('fdw_validator', '1', $$'{fetch_size=10}'$$),
    ('fdw_validator', '2', $$'pg_foreign_server'::regclass$$),
    ('freshness', 't', $$(SELECT t FROM treble_sync.tables t WHERE name = 'null_sends')$$),
    ('history_query', 'copy', $$'public.null_sends'::regtype$$),
    ('history_query', 'kind', $$'as_of'$$),
    ('history_query', 'from_cut', $$now()$$),
    ('history_query', 'to_cut', $$now()$$),
    ('incident', 't', $$(SELECT t FROM treble_sync.tables t WHERE name = 'null_sends')$$),
    ('incident', 'incident_kind', $$'failing'$$),
    ('incident', 'open', $$true$$),
    ('incident', 'run', $$(SELECT r FROM treble_sync.runs r ORDER BY run_id DESC LIMIT 1)$$),
    ('may_read_log', 'owner', $$'regress_null_owner'$$),
    ('may_read_log', 'table_name', $$'null_sends'$$),
    ('may_read_log', 'values_inside', $$true$$),
    ('remove_table', 'name', $$'null_sends'$$),
    ('repair', 'name', $$'null_sends'$$),
    ('repair', 'day', $$'2026-11-28'$$),
    ('require_primary', 'funcname', $$'nulls()'$$),
    ('resync', 'name', $$'null_sends'$$),
    ('rewind', 'name', $$'null_sends'$$),
    ('rewind', 'to', $$(SELECT s.watermark_time - interval '1 microsecond'
                         FROM treble_sync.status s WHERE s.table_name = 'null_sends')$$),
    ('run_checks', 'p_table_id', $$(SELECT table_id FROM treble_sync.tables WHERE name = 'null_sends')$$),
    ('run_checks', 'p_cut', $$'2026-11-29 00:00:00'$$),
    ('run_checks', 'p_changed', $$1$$),
    ('schedule', 'name', $$'null_sends'$$),
    ('schedule', 'cron', $$'0 * * * *'$$),
    ('schedule_all', 'cron', $$'0 * * * *'$$),
    ('sync_table', 'name', $$'null_sends'$$),
    ('unschedule', 'name', $$'null_sends'$$),
    ('verify', 'name', $$'null_sends'$$),
    ('watermark_time', 't', $$(SELECT t FROM treble_sync.tables t WHERE name = 'null_sends')$$);

-- The SQLSTATE of one call ('ok' if it returned), in a subtransaction
-- that is rolled back either way.
CREATE FUNCTION try_call(query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE query;
    RAISE SQLSTATE 'RGOK0';
EXCEPTION WHEN OTHERS THEN
    RETURN CASE WHEN SQLSTATE = 'RGOK0' THEN 'ok' ELSE SQLSTATE END;
END
$$;

-- Every function of the schema, with NULL in each argument position in
-- turn.  Trigger functions are called directly once each (they must
-- refuse).
CREATE FUNCTION null_calls()
RETURNS TABLE (call text, sqlstate text) LANGUAGE plpgsql AS $$
DECLARE
    p record;
    args text[];
    expr text;
    argname text;
    required integer;
BEGIN
    FOR p IN SELECT f.oid, f.proname, f.pronargs, f.pronargdefaults, f.proargnames,
                    string_to_array(f.proargtypes::text, ' ')::oid[] AS types, f.prorettype
             FROM pg_proc f WHERE f.pronamespace = 'treble_sync'::regnamespace
             ORDER BY f.proname, f.oid::regprocedure::text LOOP
        required := p.pronargs - p.pronargdefaults;
        FOR i IN 0 .. greatest(p.pronargs - 1, 0) LOOP
            args := '{}';
            FOR j IN 0 .. p.pronargs - 1 LOOP
                argname := coalesce(nullif(p.proargnames[j + 1], ''), (j + 1)::text);
                IF j = i THEN
                    -- polymorphic arguments take the literal NULL
                    expr := CASE WHEN p.types[j + 1] = 'anyelement'::regtype THEN 'NULL'
                                 ELSE 'NULL::' || format_type(p.types[j + 1], NULL) END;
                ELSE
                    SELECT v.expr INTO expr FROM null_valid v
                    WHERE v.proname = p.proname AND v.arg = argname;
                    IF expr IS NULL AND j < required THEN
                        RAISE EXCEPTION 'no valid value for argument % of %', argname, p.oid::regprocedure;
                    END IF;
                END IF;
                IF expr IS NOT NULL THEN
                    args := args || CASE WHEN j < required THEN expr
                                         ELSE format('%I => %s', argname, expr) END;
                END IF;
            END LOOP;
            call := p.proname || CASE WHEN p.pronargs = 0 THEN '()'
                                      ELSE format('(%s => NULL)',
                                                  coalesce(nullif(p.proargnames[i + 1], ''), (i + 1)::text)) END;
            sqlstate := try_call(format('SELECT treble_sync.%I(%s)', p.proname,
                                        array_to_string(args, ', ')));
            RETURN NEXT;
        END LOOP;
    END LOOP;
END
$$;

-- Odd values: OIDs that are not what the function expects, kinds that do
-- not exist, infinite times, validator input no server would have.
CREATE TABLE null_gone (id integer);
CREATE TABLE null_gone_ids AS SELECT 'null_gone'::regclass::oid AS rel, 'null_gone'::regtype::oid AS typ;
GRANT SELECT ON null_gone_ids TO PUBLIC;
DROP TABLE null_gone;
CREATE FUNCTION odd_calls()
RETURNS TABLE (call text, sqlstate text) LANGUAGE sql AS $$
    SELECT c, try_call('SELECT ' || c) FROM unnest(ARRAY[
        $c$treble_sync.history_query(0, 'as_of', now(), now())$c$,
        $c$treble_sync.history_query('int4', 'as_of', now(), now())$c$,
        $c$treble_sync.history_query('public.regress_wh', 'as_of', now(), now())$c$,
        $c$treble_sync.history_query('public.null_plain', 'as_of', now(), now())$c$,
        $c$treble_sync.history_query((SELECT typ FROM public.null_gone_ids), 'as_of', now(), now())$c$,
        $c$treble_sync.history_query('public.null_sends', 'bogus', now(), now())$c$,
        $c$treble_sync.history_query('public.null_sends', 'changes', now(), now() - interval '1 hour')$c$,
        $c$treble_sync.as_of(NULL::public.null_plain, now())$c$,
        $c$treble_sync.as_of(NULL::public.null_sends, NULL)$c$,
        $c$treble_sync.as_of(NULL::public.null_sends, '-infinity')$c$,
        $c$treble_sync.as_of(1, now())$c$,
        $c$treble_sync.changes(NULL::public.null_sends, NULL, now())$c$,
        $c$treble_sync.changes(NULL::public.null_sends, now(), NULL)$c$,
        $c$treble_sync.history_capture()$c$,
        $c$treble_sync.set_log_owner()$c$,
        $c$treble_sync.fdw_validator('{novalue}', 'pg_foreign_server'::regclass)$c$,
        $c$treble_sync.fdw_validator('{=x}', 'pg_foreign_server'::regclass)$c$,
        $c$treble_sync.fdw_validator('{fetch_size}', 'pg_foreign_server'::regclass)$c$,
        $c$treble_sync.fdw_validator('{timezone=}', 'pg_foreign_server'::regclass)$c$,
        $c$treble_sync.fdw_validator('{fetch_size=10,NULL}', 'pg_foreign_server'::regclass)$c$,
        $c$treble_sync.fdw_validator('{{fetch_size=10},{login_timeout=1}}', 'pg_foreign_server'::regclass)$c$,
        $c$treble_sync.fdw_validator('{fetch_size=99999999999999999999}', 'pg_foreign_server'::regclass)$c$,
        $c$treble_sync.fdw_validator('{connection_string=}', 'pg_foreign_server'::regclass)$c$,
        $c$treble_sync.fdw_validator('{fetch_size=10}', 0)$c$,
        $c$treble_sync.fdw_validator('{fetch_size=10}', 4294967295)$c$,
        $c$treble_sync.fdw_validator('{}', 0)$c$,
        $c$treble_sync.add_check('null_sends', 'references', column_name => 'id', ref_table => 0, ref_column => 'id')$c$,
        $c$treble_sync.add_check('null_sends', 'references', column_name => 'id', ref_table => (SELECT rel FROM public.null_gone_ids), ref_column => 'id')$c$,
        $c$treble_sync.add_check('null_sends', 'references', column_name => 'id', ref_table => 'pg_class_oid_index', ref_column => 'oid')$c$,
        $c$treble_sync.add_check('null_sends', 'not_null', columns => '{NULL}')$c$,
        $c$treble_sync.add_check('null_sends', 'bogus')$c$,
        $c$treble_sync.verify('null_sends', 'infinity')$c$,
        $c$treble_sync.verify('null_sends', '-infinity')$c$,
        $c$treble_sync.repair('null_sends', 'infinity')$c$,
        $c$treble_sync.repair('null_sends', '-infinity')$c$,
        $c$treble_sync.rewind('null_sends', 'infinity')$c$,
        $c$treble_sync.rewind('null_sends', '-infinity')$c$,
        $c$treble_sync.alter_table('null_sends', key_columns => '{NULL}')$c$,
        $c$treble_sync.alter_table('null_sends', key_columns => '{}')$c$,
        $c$treble_sync.add_table('null_sends', 'wh', key_columns => '{NULL}', name => 'null_again')$c$,
        $c$treble_sync.add_table('null_sends', 'wh', columns => '{id,NULL}', name => 'null_again')$c$,
        $c$treble_sync.add_table('null_sends', 'wh', mask => 'null', name => 'null_again')$c$,
        $c$treble_sync.add_table('null_sends', 'wh', column_types => '{"note": null}', name => 'null_again')$c$,
        $c$treble_sync.may_read_log(0, 'null_sends', true)$c$,
        $c$treble_sync.may_read_log(4294967295, 'null_sends', false)$c$,
        $c$treble_sync.watermark_time(jsonb_populate_record(NULL::treble_sync.tables, '{"cursor_kind": "timestamp", "watermark": "x", "server_name": "nowhere"}'))$c$,
        $c$treble_sync.freshness(jsonb_populate_record(NULL::treble_sync.tables, '{"cursor_kind": "integer", "watermark": "x", "name": "nowhere"}'))$c$,
        $c$treble_sync.drop_check(-1)$c$,
        $c$treble_sync.sync_all('')$c$
    ]) WITH ORDINALITY AS u(c, n) ORDER BY n
$$;

-- as a superuser
SELECT * FROM null_calls();
SELECT * FROM odd_calls();

-- as the owner of the registrations, an admin
SET SESSION AUTHORIZATION regress_null_owner;
SELECT * FROM null_calls();
SELECT * FROM odd_calls();
RESET SESSION AUTHORIZATION;

-- as a login role with no grant: PUBLIC's rights only
SET SESSION AUTHORIZATION regress_null_nobody;
SELECT * FROM null_calls();
SELECT * FROM odd_calls();
RESET SESSION AUTHORIZATION;

-- A registration whose copy was dropped (it outlives its copy): every
-- function that takes its name errors cleanly, none reaches for the
-- missing relation.  The history table stays behind with the registration.
SET ROLE regress_null_owner;
SELECT name FROM treble_sync.add_table('null_sends', 'wh', key_columns => '{id}',
                                       event_column => 'scheduled_at', keep_history => '100 years',
                                       name => 'null_dropped', local_table => 'null_dropped');
RESET ROLE;
SELECT status FROM treble_sync.sync_table('null_dropped');
DROP TABLE null_dropped;
CREATE FUNCTION dropped_calls()
RETURNS TABLE (call text, sqlstate text) LANGUAGE sql AS $$
    SELECT c, try_call('SELECT ' || c) FROM unnest(ARRAY[
        $c$treble_sync.sync_table('null_dropped')$c$,
        $c$treble_sync.resync('null_dropped')$c$,
        $c$treble_sync.verify('null_dropped')$c$,
        $c$treble_sync.verify('null_dropped', repair => true)$c$,
        $c$treble_sync.repair('null_dropped', '2026-11-28')$c$,
        $c$treble_sync.rewind('null_dropped', (SELECT s.watermark_time - interval '1 microsecond' FROM treble_sync.status s WHERE s.table_name = 'null_dropped'))$c$,
        $c$treble_sync.alter_table('null_dropped', enabled => false)$c$,
        $c$treble_sync.alter_table('null_dropped', mask => '{"note": "sha256"}')$c$,
        $c$treble_sync.alter_table('null_dropped', keep_history => '')$c$,
        $c$treble_sync.alter_table('null_dropped', keep_history => '2 days')$c$,
        $c$treble_sync.add_check('null_dropped', 'not_null', column_name => 'note')$c$,
        $c$treble_sync.add_check('null_dropped', 'volume')$c$,
        $c$treble_sync.add_check('null_sends', 'references', column_name => 'id', ref_table => 'null_dropped_history', ref_column => 'id')$c$,
        $c$treble_sync.history_query('null_dropped_history', 'as_of', now(), now())$c$,
        $c$treble_sync.remove_table('null_dropped', drop_local => true)$c$,
        $c$treble_sync.remove_table('null_dropped')$c$
    ]) WITH ORDINALITY AS u(c, n) ORDER BY n
$$;
SELECT * FROM dropped_calls();
SET SESSION AUTHORIZATION regress_null_owner;
SELECT * FROM dropped_calls();
RESET SESSION AUTHORIZATION;
-- history is not turned on for a copy that is not there
SELECT keep_history FROM treble_sync.alter_table('null_dropped', keep_history => '');
SELECT keep_history FROM treble_sync.alter_table('null_dropped', keep_history => '2 days');

-- rewind writes the copy as the registration's owner: not a copy that
-- changed hands (its new owner's triggers would run as the old owner)
ALTER TABLE null_sends OWNER TO regress_null_nobody;
SELECT treble_sync.rewind('null_sends', (SELECT treble_sync.watermark_time(t) - interval '1 microsecond'
                                         FROM treble_sync.tables t WHERE name = 'null_sends'));
ALTER TABLE null_sends OWNER TO regress_null_owner;

-- a trigger of an unrelated table refuses the wrong kind of firing, and
-- does nothing on a table that is no copy
CREATE TABLE null_other (id integer);
CREATE TRIGGER null_row AFTER INSERT ON null_other FOR EACH ROW
    EXECUTE FUNCTION treble_sync.history_capture();
INSERT INTO null_other VALUES (1);
DROP TRIGGER null_row ON null_other;
CREATE TRIGGER null_statement AFTER INSERT ON null_other REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION treble_sync.history_capture();
INSERT INTO null_other VALUES (2);
SELECT count(*) FROM null_other;
DROP TABLE null_other;

-- still the same session on the same server: nothing crashed
SELECT pg_backend_pid() = :pid_before AS same_backend,
       pg_postmaster_start_time() = :'started_before' AS same_postmaster;
SELECT 1 AS alive;
-- the registrations are as they were
SELECT name, enabled, keep_history, key_columns FROM treble_sync.tables
WHERE name LIKE 'null%' ORDER BY name;
SELECT count(*) AS checks FROM treble_sync.checks;

SELECT treble_sync.remove_table('null_sends', drop_local => true);
SELECT treble_sync.remove_table('null_plain', drop_local => true);
SELECT treble_sync.remove_table('null_dropped');
DROP TABLE null_dropped_history;
DROP FUNCTION null_calls(), odd_calls(), dropped_calls(), try_call(text);
DROP TABLE null_valid, null_gone_ids;
DROP OWNED BY regress_null_owner, regress_null_nobody;
DROP ROLE regress_null_owner, regress_null_nobody;
