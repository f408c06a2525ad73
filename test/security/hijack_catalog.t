#!/usr/bin/env bash
#
# Nothing the extension runs resolves to an object a role planted in a
# schema on the search_path.  A role with CREATE on public plants look-alike
# operators (= <> < > <= >= || + - ~~ on the built-in types, including ones
# that match better than pg_catalog's, like ||(text, bigint)), functions
# (now, clock_timestamp, format, hashtext, encode, split_part, ...),
# aggregates (count(*), max, sum, string_agg) and domains named like
# built-in types (text, date, timestamptz, uuid, bytea), every one of which
# logs a marker and, run by a superuser, makes the planter a superuser.
# Then a superuser runs every entry point with search_path "public,
# pg_catalog" and again with "public" (pg_catalog implicitly first).
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER). Prints TAP.

set -u

DB=hijack
# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
# a session with a clean search_path, to set up and look
q()    { PGOPTIONS='-c search_path=pg_catalog' psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
# a superuser session with the hostile search_path of the round
hq()   { PGOPTIONS="-c search_path=$SP" psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
whq()  { psql -X -q -At -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@"; }
log=$TS_DIR/dest.log

echo "1..13"

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
psql -X -q -d postgres -c "DROP ROLE IF EXISTS ts_mallory" -c "CREATE ROLE ts_mallory" >/dev/null 2>&1
q <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER wh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L, max_retries %L)',
                   current_setting('treble_test.wh_odbc'), '0');
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
GRANT CREATE ON SCHEMA public TO ts_mallory;
SQL

whq -c "DROP TABLE IF EXISTS hj_events" \
    -c "CREATE TABLE hj_events (id int PRIMARY KEY, code text, d date, u uuid, b bytea, tz timestamptz,
                                 amount numeric, event_at timestamp, synced_at timestamp)" \
    -c "INSERT INTO hj_events SELECT g, 'c' || g, date '2026-11-20' + g % 5, gen_random_uuid(),
               decode(md5(g::text), 'hex'), timestamptz '2026-11-20 00:00+00' + g * interval '1 hour',
               g * 1.5, timestamp '2026-11-20' + (g % 8) * interval '1 day', timestamp '2026-11-28 10:00'
        FROM generate_series(1, 60) g" >/dev/null

# --- the planted objects, owned by ts_mallory ----------------------------
q <<'SQL'
SET ROLE ts_mallory;
CREATE TABLE public.trap_log (what text, by_user name, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT, SELECT ON public.trap_log TO PUBLIC;
-- logs a marker (the server log survives a rollback), records itself, and
-- run by a superuser, makes ts_mallory one
CREATE FUNCTION public.trap(what text) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
DECLARE
    stack text;
BEGIN
    GET DIAGNOSTICS stack = PG_CONTEXT;
    RAISE WARNING 'HIJACK-TRAP % run by %', what, current_user
        USING DETAIL = 'query: ' || current_query() || E'\ncontext: ' || stack;
    INSERT INTO public.trap_log (what, by_user) VALUES (what, current_user);
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE ts_mallory SUPERUSER';
    END IF;
    RETURN true;
END
$f$;
GRANT EXECUTE ON FUNCTION public.trap(text) TO PUBLIC;

-- operators: each behaves like pg_catalog's after springing the trap
DO $d$
DECLARE
    o record;
    i integer := 0;
BEGIN
    FOR o IN SELECT * FROM (VALUES
        ('=', 'text', 'text', 'boolean'), ('=', 'integer', 'integer', 'boolean'),
        ('=', 'bigint', 'bigint', 'boolean'), ('=', 'name', 'name', 'boolean'),
        ('=', 'oid', 'oid', 'boolean'), ('=', 'timestamp', 'timestamp', 'boolean'),
        ('=', 'timestamptz', 'timestamptz', 'boolean'), ('=', 'date', 'date', 'boolean'),
        ('=', 'uuid', 'uuid', 'boolean'), ('=', 'oid', 'regclass', 'boolean'),
        ('<>', 'text', 'text', 'boolean'), ('<>', 'tid', 'tid', 'boolean'),
        ('<', 'timestamp', 'timestamp', 'boolean'), ('>', 'timestamp', 'timestamp', 'boolean'),
        ('<=', 'timestamp', 'timestamp', 'boolean'), ('>=', 'timestamp', 'timestamp', 'boolean'),
        ('<', 'timestamptz', 'timestamptz', 'boolean'), ('>', 'timestamptz', 'timestamptz', 'boolean'),
        ('<', 'bigint', 'bigint', 'boolean'), ('>', 'bigint', 'bigint', 'boolean'),
        ('<', 'integer', 'integer', 'boolean'), ('>', 'integer', 'integer', 'boolean'),
        ('>', 'text', 'text', 'boolean'), ('<', 'text', 'text', 'boolean'),
        ('<=', 'interval', 'interval', 'boolean'), ('>', 'interval', 'interval', 'boolean'),
        ('||', 'text', 'text', 'text'), ('||', 'text', 'bigint', 'text'),
        ('||', 'text', 'integer', 'text'), ('||', 'text', 'name', 'text'),
        ('+', 'bigint', 'bigint', 'bigint'), ('+', 'integer', 'integer', 'integer'),
        ('-', 'timestamptz', 'timestamptz', 'interval'), ('-', 'timestamp', 'timestamp', 'interval'),
        ('-', 'date', 'date', 'integer'), ('~~', 'text', 'text', 'boolean')) v(op, l, r, res)
    LOOP
        i := i + 1;
        EXECUTE format('CREATE FUNCTION public.trap_op_%s(a %s, b %s) RETURNS %s LANGUAGE plpgsql'
                       ' SET search_path = pg_catalog AS $b$ BEGIN PERFORM public.trap(%L);'
                       ' RETURN a OPERATOR(pg_catalog.%s) b; END $b$',
                       i, o.l, o.r, o.res, format('%s(%s,%s)', o.op, o.l, o.r), o.op);
        EXECUTE format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = public.trap_op_%s)',
                       o.op, o.l, o.r, i);
    END LOOP;
END
$d$;

-- functions that match the extension's calls as well as or better than pg_catalog's
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('now()'); RETURN pg_catalog.now(); END $f$;
CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('clock_timestamp()'); RETURN pg_catalog.clock_timestamp(); END $f$;
CREATE FUNCTION public.format(text, text) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('format(text,text)'); RETURN pg_catalog.format($1, $2); END $f$;
CREATE FUNCTION public.format(text, text, text) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('format(text,text,text)'); RETURN pg_catalog.format($1, $2, $3); END $f$;
CREATE FUNCTION public.hashtext(text) RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('hashtext'); RETURN pg_catalog.hashtext($1); END $f$;
CREATE FUNCTION public.encode(bytea, text) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('encode'); RETURN pg_catalog.encode($1, $2); END $f$;
CREATE FUNCTION public.split_part(text, text, integer) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('split_part'); RETURN pg_catalog.split_part($1, $2, $3); END $f$;
CREATE FUNCTION public.replace(text, text, text) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('replace'); RETURN pg_catalog.replace($1, $2, $3); END $f$;
CREATE FUNCTION public.round(numeric) RETURNS numeric LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('round(numeric)'); RETURN pg_catalog.round($1); END $f$;
CREATE FUNCTION public.round(numeric, integer) RETURNS numeric LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('round(numeric,int)'); RETURN pg_catalog.round($1, $2); END $f$;
CREATE FUNCTION public.current_setting(text) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('current_setting'); RETURN pg_catalog.current_setting($1); END $f$;
CREATE FUNCTION public.to_regclass(text) RETURNS regclass LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('to_regclass'); RETURN pg_catalog.to_regclass($1); END $f$;
CREATE FUNCTION public.to_regnamespace(text) RETURNS regnamespace LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('to_regnamespace'); RETURN pg_catalog.to_regnamespace($1); END $f$;
CREATE FUNCTION public.unnest(text[]) RETURNS SETOF text LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('unnest(text[])'); RETURN QUERY SELECT pg_catalog.unnest($1); END $f$;
CREATE FUNCTION public.jsonb_each_text(jsonb, OUT key text, OUT value text) RETURNS SETOF record
    LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('jsonb_each_text'); RETURN QUERY SELECT * FROM pg_catalog.jsonb_each_text($1); END $f$;
CREATE FUNCTION public.record_image_eq(record, record) RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('record_image_eq'); RETURN pg_catalog.record_image_eq($1, $2); END $f$;
-- aggregates
CREATE FUNCTION public.trap_count_sf(bigint) RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('count(*)'); RETURN $1 + 1; END $f$;
CREATE AGGREGATE public.count(*) (SFUNC = public.trap_count_sf, STYPE = bigint, INITCOND = '0');
CREATE FUNCTION public.trap_count_any_sf(bigint, anyelement) RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('count(anyelement)'); RETURN $1 + 1; END $f$;
CREATE AGGREGATE public.count(anyelement) (SFUNC = public.trap_count_any_sf, STYPE = bigint, INITCOND = '0');
CREATE FUNCTION public.trap_max_sf(anyelement, anyelement) RETURNS anyelement LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('max'); RETURN greatest($1, $2); END $f$;
CREATE AGGREGATE public.max(timestamp) (SFUNC = public.trap_max_sf, STYPE = timestamp);
CREATE AGGREGATE public.max(timestamptz) (SFUNC = public.trap_max_sf, STYPE = timestamptz);
CREATE AGGREGATE public.max(bigint) (SFUNC = public.trap_max_sf, STYPE = bigint);
CREATE FUNCTION public.trap_sum_sf(bigint, bigint) RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('sum(bigint)'); RETURN coalesce($1, 0) + $2; END $f$;
CREATE AGGREGATE public.sum(bigint) (SFUNC = public.trap_sum_sf, STYPE = bigint);
CREATE FUNCTION public.trap_string_agg_sf(text, text, text) RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN PERFORM public.trap('string_agg'); RETURN coalesce($1 || $3, '') || $2; END $f$;
CREATE AGGREGATE public.string_agg(text, text) (SFUNC = public.trap_string_agg_sf, STYPE = text);
-- domains named like the built-in types: a type name resolved through the
-- search_path gets the domain, whose CHECK springs the trap
CREATE FUNCTION public.trap_check(anyelement) RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog
    AS $f$ BEGIN RETURN public.trap('domain ' || pg_typeof($1)::text); END $f$;
CREATE DOMAIN public.text AS pg_catalog.text CHECK (public.trap_check(VALUE));
CREATE DOMAIN public.date AS pg_catalog.date CHECK (public.trap_check(VALUE));
CREATE DOMAIN public.timestamptz AS pg_catalog.timestamptz CHECK (public.trap_check(VALUE));
CREATE DOMAIN public.uuid AS pg_catalog.uuid CHECK (public.trap_check(VALUE));
CREATE DOMAIN public.bytea AS pg_catalog.bytea CHECK (public.trap_check(VALUE));
RESET ROLE;
SQL
[[ $? -eq 0 ]] && ok "ts_mallory planted its objects in public" || nok "ts_mallory planted its objects in public"

# the planted objects do spring when resolved (the experiment is armed)
armed=$(PGOPTIONS='-c search_path=public,pg_catalog' psql -X -q -At -d "$DB" \
        -c "BEGIN" -c "SELECT 'a' || 1::bigint" -c "SELECT by_user FROM public.trap_log LIMIT 1" -c "ROLLBACK" 2>/dev/null | tail -1)
is "$armed" postgres "a planted operator springs for a superuser's own query (rolled back)"

round=0
for SP in 'public,pg_catalog' 'public'; do
    round=$((round + 1))
    before=$(grep -c HIJACK-TRAP "$log" 2>/dev/null); before=${before:-0}
    # the worker takes the database's search_path too
    q -c "ALTER DATABASE $DB SET search_path = $SP" >/dev/null
    name=hj$round
    out=$(hq 2>&1 <<SQL
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('hj_events', 'wh', key_columns => '{id}', event_column => 'event_at',
    hot_window => '2 days', name => '$name', local_table => 'public.hj_copy$round');
SELECT status FROM treble_sync.sync_table('$name');
SELECT kind FROM treble_sync.add_check('$name', 'range', column_name => 'amount', min => 0);
SELECT kind FROM treble_sync.add_check('$name', 'not_null', columns => '{code, d}');
SELECT kind FROM treble_sync.add_check('$name', 'unique', columns => '{code}');
SELECT kind FROM treble_sync.add_check('$name', 'freshness', max_age => '10 years');
SELECT kind FROM treble_sync.add_check('$name', 'volume', within => 1000);
SELECT kind FROM treble_sync.add_check('$name', 'references', column_name => 'id',
    ref_table => 'public.hj_copy$round', ref_column => 'id', severity => 'warn');
SELECT status FROM treble_sync.resync('$name');
SELECT status FROM treble_sync.sync_table('$name');
SELECT pg_catalog.count(*) FILTER (WHERE NOT match) FROM treble_sync.verify('$name');
SELECT status FROM treble_sync.repair('$name', '2026-11-21');
SELECT name FROM treble_sync.alter_table('$name', hot_window => '3 days');
SELECT pg_catalog.count(*) FROM treble_sync.sync_all();
SELECT pg_catalog.count(*) FROM treble_sync.status;
SELECT pg_catalog.count(*) FROM treble_sync.progress;
SELECT pg_catalog.length(treble_sync.metrics()) OPERATOR(pg_catalog.>) 0;
SELECT pg_catalog.count(*) FROM treble_sync.schedules();
SELECT treble_sync.drop_check(pg_catalog.max(check_id)) FROM treble_sync.checks;
SQL
)
    echo "$out" | sed 's/^/# /'
    # a later synced_at every round: a correction is written with a new
    # cursor, which the key-only window check relies on
    whq -c "UPDATE hj_events SET code = code || 'x',
                synced_at = '2026-11-29 10:00'::timestamp + interval '$round minutes' WHERE id % 7 = 0" \
        -c "DELETE FROM hj_events WHERE id = 59" >/dev/null
    st=$(hq -c "SELECT status FROM treble_sync.sync_table('$name')" 2>&1)
    is "$st" success "search_path '$SP': a cycle that updates and deletes succeeds"
    is "$(q -c "SELECT count(*) FROM treble_sync.runs WHERE table_name = '$name' AND status <> 'success' AND status <> 'empty'")" 0 \
        "search_path '$SP': every run succeeded"
    is "$(q -c "SELECT count(*) FROM public.trap_log")" 0 "search_path '$SP': no planted object ran (trap_log)"
    q -c "SELECT DISTINCT what || ' run by ' || by_user FROM public.trap_log" | sed 's/^/# sprang: /'
    q -c "DELETE FROM public.trap_log" >/dev/null
    after=$(grep -c HIJACK-TRAP "$log" 2>/dev/null); after=${after:-0}
    is "$((after - before))" 0 "search_path '$SP': no planted object ran (server log)"
    tail -n +$((before + 1)) <(grep HIJACK-TRAP "$log") | sort | uniq -c | sed 's/^/# log: /'
    is "$(q -c "SELECT count(*) FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                   WHERE a.attrelid = 'public.hj_copy$round'::regclass AND a.attnum > 0
                     AND t.typnamespace <> 'pg_catalog'::regnamespace")" 0 \
        "search_path '$SP': the copy's columns have pg_catalog's types"
    q -c "SELECT treble_sync.remove_table('$name', drop_local => true)" >/dev/null 2>&1
    q -c "ALTER DATABASE $DB RESET search_path" >/dev/null
done

is "$(q -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'ts_mallory'")" f "ts_mallory is not a superuser"

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
psql -X -q -d postgres -c "DROP ROLE IF EXISTS ts_mallory" >/dev/null 2>&1
whq -c "DROP TABLE IF EXISTS hj_events" >/dev/null 2>&1
exit $((failed > 0))
