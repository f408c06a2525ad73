#!/usr/bin/env bash
#
# Operator and function hijack: a role with CREATE on public (every
# database upgraded from PostgreSQL 14 or older) plants look-alikes in
# public of the operators, functions and aggregates the extension uses
# (exact signatures of pg_catalog's, and better matches such as
# ||(text, bigint)). Each one, when called, bumps a sequence (outside any
# transaction), logs "HIJACKED <what>" and tries `ALTER ROLE <planter>
# SUPERUSER`, then does the real work, so nothing visibly breaks.
#
# A superuser whose search_path puts public first (in its sessions and in
# the workers that connect as it) then runs every entry point: add_table,
# add_check, sync_table with a failing warn check, sync_all, resync, verify,
# repair, alter_table, status, metrics(), progress, drop_check,
# remove_table. Nothing planted may run.

DB=sec_hijack
ROLES=(sec_hij_planter)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

log=$TS_DIR/dest.log
log_start=$(wc -l <"$log")

su_server wh treble_test.wh_odbc >/dev/null
map_reader postgres wh >/dev/null
sq -c "GRANT CREATE ON SCHEMA public TO sec_hij_planter" >/dev/null
whq -c "DROP TABLE IF EXISTS sec_hij_sends" \
    -c "CREATE TABLE sec_hij_sends (id bigint PRIMARY KEY, code text, amount numeric(12,2), scheduled_at timestamp, synced_at timestamp NOT NULL)" \
    -c "INSERT INTO sec_hij_sends SELECT g, 'c' || g, g * 10, timestamp '2026-11-20' + g * interval '7 hours', timestamp '2026-11-28' + g * interval '1 minute' FROM generate_series(1, 30) g"

# --- the planter's look-alikes
as sec_hij_planter >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE SEQUENCE public.hijack_hits;
GRANT USAGE, SELECT, UPDATE ON SEQUENCE public.hijack_hits TO PUBLIC;
CREATE FUNCTION public.hijack_hit(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.nextval('public.hijack_hits'::pg_catalog.regclass);
    RAISE LOG 'HIJACKED %', what;
    BEGIN
        EXECUTE 'ALTER ROLE sec_hij_planter SUPERUSER';
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
    RETURN true;
END
$$;

DO $plant$
DECLARE
    r record;
    fn text;
    args text;
    call text;
    i integer := 0;
BEGIN
    -- operators: every concrete-typed pg_catalog operator of these names
    FOR r IN
        SELECT o.oprname, o.oprleft::regtype AS l, o.oprright::regtype AS rt, o.oprresult::regtype AS res
        FROM pg_catalog.pg_operator o
        JOIN pg_catalog.pg_type lt ON lt.oid = o.oprleft
        JOIN pg_catalog.pg_type rtt ON rtt.oid = o.oprright
        WHERE o.oprnamespace = 'pg_catalog'::regnamespace
          AND o.oprname IN ('=', '<>', '<', '>', '<=', '>=', '||', '+', '-', '*', '/', '~~', '!~~', '~', '@>', '<@', '&&', '->>', '->', '?')
          AND lt.typtype <> 'p' AND rtt.typtype <> 'p'
          AND o.oprleft::regtype::text IN ('text', 'bigint', 'integer', 'smallint', 'numeric', 'name', 'oid',
              'timestamp without time zone', 'timestamp with time zone', 'interval', 'date', 'boolean',
              'double precision', 'real', 'jsonb', 'text[]', 'bytea', '"char"', 'regclass', 'regrole')
    LOOP
        i := i + 1;
        fn := 'public.hij_op_' || i;
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION %s(%s, %s) RETURNS %s LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hijack_hit(%L); '
            'RETURN $1 OPERATOR(pg_catalog.%s) $2; END $f$',
            fn, r.l, r.rt, r.res, pg_catalog.format('operator %s(%s, %s)', r.oprname, r.l, r.rt), r.oprname);
        EXECUTE pg_catalog.format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)',
                                  r.oprname, r.l, r.rt, fn);
    END LOOP;
    -- better matches than pg_catalog's polymorphic ||
    FOR r IN SELECT unnest(ARRAY['bigint', 'integer', 'numeric', 'timestamp without time zone',
                                 'timestamp with time zone', 'interval', 'date', 'boolean', 'name', 'oid']) AS t
    LOOP
        i := i + 1;
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION public.hij_cat_%s(text, %s) RETURNS text LANGUAGE plpgsql AS $f$ BEGIN '
            'PERFORM public.hijack_hit(%L); RETURN $1 OPERATOR(pg_catalog.||) $2::text; END $f$',
            i, r.t, 'operator ||(text, ' || r.t || ')');
        EXECUTE pg_catalog.format('CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = %s, FUNCTION = public.hij_cat_%s)', r.t, i);
        i := i + 1;
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION public.hij_cat_%s(%s, text) RETURNS text LANGUAGE plpgsql AS $f$ BEGIN '
            'PERFORM public.hijack_hit(%L); RETURN $1::text OPERATOR(pg_catalog.||) $2; END $f$',
            i, r.t, 'operator ||(' || r.t || ', text)');
        EXECUTE pg_catalog.format('CREATE OPERATOR public.|| (LEFTARG = %s, RIGHTARG = text, FUNCTION = public.hij_cat_%s)', r.t, i);
    END LOOP;
    -- functions: same names and argument types as pg_catalog's, plain ones
    FOR r IN
        SELECT p.proname, p.proretset, p.prorettype::regtype AS ret,
               pg_catalog.pg_get_function_identity_arguments(p.oid) AS sig, p.pronargs
        FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind = 'f' AND p.provariadic = 0
          AND p.proallargtypes IS NULL
          AND p.proname IN ('format', 'md5', 'left', 'right', 'split_part', 'lower', 'upper', 'replace',
              'length', 'round', 'abs', 'now', 'clock_timestamp', 'to_regclass', 'quote_ident',
              'quote_literal', 'quote_nullable', 'encode', 'decode', 'sha256', 'extract', 'date_part',
              'date_trunc', 'pg_notify', 'unnest', 'generate_series', 'array_length', 'cardinality',
              'btrim', 'to_char', 'to_timestamp', 'current_setting', 'set_config', 'jsonb_object_keys',
              'jsonb_typeof', 'jsonb_array_elements_text', 'substr', 'substring', 'strpos',
              'regexp_replace', 'lpad', 'hashtext', 'pg_advisory_xact_lock', 'pg_try_advisory_xact_lock',
              'pg_advisory_lock', 'pg_advisory_unlock', 'string_to_array', 'array_to_string', 'age',
              'timezone', 'octet_length', 'convert_to', 'convert_from', 'floor', 'ceil', 'trunc',
              'pg_get_userbyid', 'has_table_privilege', 'pg_has_role', 'nextval', 'setval',
              'to_json', 'to_jsonb', 'row_to_json', 'justify_interval', 'make_interval', 'random',
              'int8', 'int4', 'text', 'numeric', 'textlen', 'position', 'array_position', 'array_remove',
              'array_append', 'array_cat', 'jsonb_extract_path_text', 'pg_relation_size', 'regclass',
              'pg_stat_get_progress_info', 'record_image_eq', 'jsonb_to_recordset', 'jsonb_each_text')
          AND NOT EXISTS (SELECT 1 FROM unnest(p.proargtypes::oid[]) a
                          JOIN pg_catalog.pg_type t ON t.oid = a WHERE t.typtype = 'p')
          AND (p.prorettype = 'void'::regtype
               OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_type t WHERE t.oid = p.prorettype AND t.typtype = 'p'))
    LOOP
        args := (SELECT pg_catalog.string_agg('$' || g, ', ' ORDER BY g) FROM generate_series(1, r.pronargs) g);
        call := pg_catalog.format('pg_catalog.%I(%s)', r.proname, coalesce(args, ''));
        BEGIN
            EXECUTE pg_catalog.format(
                'CREATE FUNCTION public.%I(%s) RETURNS %s%s LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.hijack_hit(%L); %s END $f$',
                r.proname, r.sig, CASE WHEN r.proretset THEN 'SETOF ' ELSE '' END, r.ret,
                pg_catalog.format('function %s(%s)', r.proname, r.sig),
                CASE WHEN r.proretset THEN 'RETURN QUERY SELECT ' || call || ';'
                     WHEN r.ret = 'void'::regtype THEN 'PERFORM ' || call || ';'
                     ELSE 'RETURN ' || call || ';' END);
        EXCEPTION WHEN OTHERS THEN
            NULL;           -- a signature plpgsql cannot take: not planted
        END;
    END LOOP;
    -- aggregates: each value gathered in an array, the real aggregate at the end
    FOR r IN
        SELECT p.proname, p.prorettype::regtype AS ret, p.proargtypes[0]::regtype AS arg
        FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_type t ON t.oid = p.proargtypes[0]
        WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind = 'a' AND p.pronargs = 1
          AND t.typtype <> 'p'
          AND p.proname IN ('count', 'max', 'min', 'sum', 'avg', 'array_agg', 'bool_and', 'bool_or',
                            'every', 'jsonb_agg', 'json_agg')
    LOOP
        i := i + 1;
        BEGIN
            EXECUTE pg_catalog.format(
                'CREATE FUNCTION public.hij_final_%s(%s[]) RETURNS %s LANGUAGE plpgsql AS $f$ DECLARE r %s; BEGIN '
                'PERFORM public.hijack_hit(%L); SELECT pg_catalog.%I(x) INTO r FROM pg_catalog.unnest($1) x; RETURN r; END $f$',
                i, r.arg, r.ret, r.ret, pg_catalog.format('aggregate %s(%s)', r.proname, r.arg), r.proname);
            EXECUTE pg_catalog.format(
                'CREATE AGGREGATE public.%I(%s) (SFUNC = pg_catalog.array_append, STYPE = %s[], FINALFUNC = public.hij_final_%s)',
                r.proname, r.arg, r.arg, i);
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
    END LOOP;
END
$plant$;

-- count(*) and string_agg(text, text)
CREATE FUNCTION public.hij_count_final(bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN PERFORM public.hijack_hit('aggregate count(*)'); RETURN $1; END $$;
CREATE FUNCTION public.hij_count_step(bigint) RETURNS bigint LANGUAGE sql AS 'SELECT $1 OPERATOR(pg_catalog.+) 1';
CREATE AGGREGATE public.count(*) (SFUNC = public.hij_count_step, STYPE = bigint, INITCOND = '0',
                                  FINALFUNC = public.hij_count_final);
CREATE FUNCTION public.hij_sagg_step(text, text, text) RETURNS text LANGUAGE sql
    AS 'SELECT CASE WHEN $2 IS NULL THEN $1 WHEN $1 IS NULL THEN $2 ELSE pg_catalog.textcat(pg_catalog.textcat($1, $3), $2) END';
CREATE FUNCTION public.hij_sagg_final(text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.hijack_hit('aggregate string_agg(text, text)'); RETURN $1; END $$;
CREATE AGGREGATE public.string_agg(text, text) (SFUNC = public.hij_sagg_step, STYPE = text,
                                                FINALFUNC = public.hij_sagg_final);
SQL
planted=$(PGOPTIONS="-c search_path=pg_catalog" sq -c "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace")

# the superuser puts public first, in its sessions here and in its workers
sq -c "ALTER ROLE postgres IN DATABASE $DB SET search_path = public, pg_catalog" >/dev/null

# checks that use no operator of this database's public
hits() { PGOPTIONS="-c search_path=pg_catalog" sq -c "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM public.hijack_hits"; }
planter_super() { psql -X -At -d postgres -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'sec_hij_planter'"; }
hijacked() {
    sed -n "$((log_start + 1)),\$p" "$log" | grep -o 'HIJACKED .*' | sort | uniq -c | sort -rn | head -n 8
}

# sanity: the plants do run when an ordinary query of the superuser
# resolves to them (otherwise nothing below would prove anything)
PGOPTIONS="-c search_path=pg_catalog" sq -c "SELECT setval('public.hijack_hits', 1, false)" >/dev/null
psql -X -q -At -d "$DB" -c "SELECT 'x' || 1::bigint" >/dev/null
if (($(hits) > 0)); then
    ok "the planted look-alikes ($planted functions) run when a query resolves to them"
else
    nok "the planted look-alikes ($planted functions) run when a query resolves to them"
fi
PGOPTIONS="-c search_path=pg_catalog" sq -c "SELECT setval('public.hijack_hits', 1, false)" >/dev/null
sq -c "ALTER ROLE sec_hij_planter NOSUPERUSER" >/dev/null
log_start=$(wc -l <"$log")

# (the statements below qualify their own operators and aggregates: only
# what the extension runs is under test)
# entry ENTRY_POINT SQL [EXPECTED_OUTPUT]: run it as the superuser with public
# first; nothing planted may run, and it must still work
entry() {
    local what=$1 sql=$2 want=${3:-}
    try postgres "SET search_path = public, pg_catalog; SET client_min_messages = warning; $sql"
    if ((RC != 0)); then
        nok "$what works with public first in search_path"
        diag "$(head -n 3 <<<"$ERR")"
    elif [[ -n $want && $OUT != "$want" ]]; then
        nok "$what works with public first in search_path"
        diag "expected $want, got ${OUT:0:200}"
    else
        ok "$what works with public first in search_path"
    fi
    local h
    h=$(hits)
    if [[ $h == 0 && $(planter_super) == f ]]; then
        ok "$what runs nothing planted in public"
    else
        nok "$what runs nothing planted in public"
        diag "$h calls of planted objects; planter superuser: $(planter_super)"
        diag "$(hijacked)"
        PGOPTIONS="-c search_path=pg_catalog" sq -c "SELECT setval('public.hijack_hits', 1, false)" >/dev/null
        sq -c "ALTER ROLE sec_hij_planter NOSUPERUSER" >/dev/null
    fi
    log_start=$(wc -l <"$log")
}

entry "add_table" "SELECT name FROM treble_sync.add_table('sec_hij_sends', 'wh', key_columns => '{id}', event_column => 'scheduled_at')" sec_hij_sends
entry "add_check" "SELECT pg_catalog.count(*) FROM (
    SELECT treble_sync.add_check('sec_hij_sends', 'range', column_name => 'amount', max => 100, severity => 'warn')
    UNION ALL SELECT treble_sync.add_check('sec_hij_sends', 'not_null', columns => '{code}', severity => 'warn')
    UNION ALL SELECT treble_sync.add_check('sec_hij_sends', 'unique', columns => '{code}', severity => 'warn')
    UNION ALL SELECT treble_sync.add_check('sec_hij_sends', 'freshness', max_age => '1 hour', severity => 'warn')
    UNION ALL SELECT treble_sync.add_check('sec_hij_sends', 'volume', severity => 'warn')) c" 5
entry "sync_table with a failing warn check" "SELECT status FROM treble_sync.sync_table('sec_hij_sends')" success
check "the warn check failed in that cycle (and was recorded)" t \
    "$(PGOPTIONS="-c search_path=pg_catalog" sq -c "SELECT bool_or(NOT passed) FROM treble_sync.check_results WHERE kind = 'range'")"
whq -c "UPDATE sec_hij_sends SET amount = amount + 1, synced_at = synced_at + interval '1 hour' WHERE id <= 5"
entry "sync_all" "SELECT pg_catalog.string_agg(status, ',') FROM treble_sync.sync_all()" success
entry "resync" "SELECT status OPERATOR(pg_catalog.<>) 'failed' FROM treble_sync.resync('sec_hij_sends')" t
entry "verify" "SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 FROM treble_sync.verify('sec_hij_sends', since => '2026-11-01')" t
entry "verify with repair" "SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 FROM treble_sync.verify('sec_hij_sends', since => '2026-11-01', repair => true)" t
entry "repair" "SELECT status FROM treble_sync.repair('sec_hij_sends', '2026-11-21')"
entry "alter_table" "SELECT name FROM treble_sync.alter_table('sec_hij_sends', hot_window => '2 days', max_delete_ratio => 0.9)" sec_hij_sends
entry "the status view" "SELECT pg_catalog.count(*) FROM treble_sync.status" 1
entry "metrics()" "SELECT pg_catalog.length(treble_sync.metrics()) OPERATOR(pg_catalog.>) 0" t
entry "the progress view" "SELECT pg_catalog.count(*) FROM treble_sync.progress" 0
entry "drop_check" "SELECT treble_sync.drop_check(check_id) FROM treble_sync.checks WHERE kind OPERATOR(pg_catalog.=) 'volume'" t
entry "remove_table" "SELECT treble_sync.remove_table('sec_hij_sends', drop_local => true)" ""
