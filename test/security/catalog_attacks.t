#!/usr/bin/env bash
#
# Attacks on the catalog and the copies by roles holding only the documented
# privileges, beyond the other scripts of the suite: each must be refused or
# harmless.
#
#   - a role with LOGIN only: the watermark through a WHERE, an ORDER BY or
#     COPY of treble_sync.tables; freshness() of a forged registration row;
#     the extension's internal functions (incident, after_run); a function
#     of its own in the extension's schema; as_of() and history_query() of
#     a copy it may not read, at a cut before its history (whose error
#     would name the history's first cut);
#   - another treble_sync_admin member: a rule or a publication on the
#     victim's copy; registering the victim's copy as its own; a sync group
#     with the victim's table, or its own group altered to take it; checks,
#     rewind and verify of the victim's registration;
#   - a superuser: a sync group of two owners' tables; a cycle started in a
#     session where a temporary table and a table in public carry the
#     copy's name;
#   - a name the victim removed and the attacker registered again: the
#     status view (which reads the run log as its owner) shows the attacker
#     none of the victim's runs.

DB=sec_catalog_attacks
ROLES=(sec_ca_owner sec_ca_evil sec_ca_plain)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

admins_on_wh sec_ca_owner sec_ca_evil
sq >/dev/null <<SQL
GRANT CREATE ON DATABASE $DB TO sec_ca_evil;
CREATE SCHEMA vs AUTHORIZATION sec_ca_owner;
GRANT USAGE ON SCHEMA vs TO PUBLIC;
SQL
cols="id int PRIMARY KEY, v text, synced_at timestamp"
wh_table sec_ca_v "$cols" "SELECT g, 'private-' || g, timestamp '2026-11-28 10:00' FROM generate_series(1, 5) g"
wh_table sec_ca_e "$cols" "VALUES (1, 'e', '2026-11-28 10:00')"
wh_table sec_ca_r "$cols" "VALUES (1, 'r', '2026-11-28 10:00')"
as sec_ca_owner >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('sec_ca_v', 'wh', key_columns => '{id}', local_table => 'vs.sec_ca_v',
                                       keep_history => '7 days');
SELECT status FROM treble_sync.sync_table('sec_ca_v');
SQL
as sec_ca_evil >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('sec_ca_e', 'wh', key_columns => '{id}', local_table => 'public.sec_ca_e');
SELECT status FROM treble_sync.sync_table('sec_ca_e');
SELECT name FROM treble_sync.add_group('sec_ca_evil_group', '{sec_ca_e}');
CREATE TABLE public.loot (s text);
GRANT INSERT ON public.loot TO PUBLIC;
SQL

# --- a role with LOGIN only
refused "LOGIN only: no watermark through a WHERE on treble_sync.tables" sec_ca_plain \
    "SELECT count(*) FROM treble_sync.tables WHERE watermark > '2026-11-28'" 42501
refused "LOGIN only: nor through an ORDER BY" sec_ca_plain \
    "SELECT name FROM treble_sync.tables ORDER BY watermark" 42501
refused "LOGIN only: nor through COPY" sec_ca_plain \
    "COPY treble_sync.tables TO STDOUT" 42501
check "LOGIN only: freshness() of a forged registration row learns nothing of the victim's runs" "" \
    "$(as sec_ca_plain -c "SELECT treble_sync.freshness(jsonb_populate_record(NULL::treble_sync.tables,
                            '{\"name\": \"sec_ca_v\", \"owner\": \"sec_ca_owner\", \"server_name\": \"wh\"}'))" 2>&1)"
refused "LOGIN only: treble_sync.incident() (forged incidents and notifications) is not callable" sec_ca_plain \
    "SELECT treble_sync.incident(NULL::treble_sync.tables, 'failing', false, NULL::treble_sync.runs)" 42501
refused "LOGIN only: nor after_run()" sec_ca_plain \
    "SELECT treble_sync.after_run(1, NULL)" 42501
refused "LOGIN only: no function of its own in the extension's schema" sec_ca_plain \
    "CREATE FUNCTION treble_sync.may_read_log(text) RETURNS boolean LANGUAGE sql AS 'SELECT true'" 42501
refused "LOGIN only: as_of() of a copy it may not read" sec_ca_plain \
    "SELECT count(*) FROM treble_sync.as_of(NULL::vs.sec_ca_v, '-infinity')" 42501
refused "LOGIN only: history_query() before the history's first cut is refused for the privilege, naming no cut" \
    sec_ca_plain "SELECT treble_sync.history_query('vs.sec_ca_v'::regtype, 'as_of', '1990-01-01', '1990-01-01')" 42501
if [[ $ERR != *2026* ]]; then ok "  (the error names no time)"; else nok "  (the error names no time)"; diag "$ERR"; fi

# --- another treble_sync_admin member
refused "another admin: no rule on the victim's copy" sec_ca_evil \
    "CREATE RULE steal AS ON INSERT TO vs.sec_ca_v DO ALSO INSERT INTO public.loot VALUES (NEW.v)" 42501
refused "another admin: no publication of the victim's copy" sec_ca_evil \
    "CREATE PUBLICATION sec_ca_pub FOR TABLE vs.sec_ca_v" 42501
refused "another admin: cannot register the victim's copy as its own" sec_ca_evil \
    "SELECT treble_sync.add_table('sec_ca_v', 'wh', name => 'sec_ca_steal', key_columns => '{id}',
                                  local_table => 'vs.sec_ca_v')" 42501
refused "another admin: no sync group with the victim's table" sec_ca_evil \
    "SELECT treble_sync.add_group('sec_ca_g', '{sec_ca_v}')" 42501
refused "another admin: its own group cannot take the victim's table" sec_ca_evil \
    "SELECT treble_sync.alter_group('sec_ca_evil_group', '{sec_ca_e, sec_ca_v}')" 42501
refused "another admin: no check on the victim's registration" sec_ca_evil \
    "SELECT treble_sync.add_check('sec_ca_v', 'volume')" 42501
refused "another admin: no rewind of it" sec_ca_evil \
    "SELECT treble_sync.rewind('sec_ca_v', '2026-11-28')" 42501
refused "another admin: no verify of it" sec_ca_evil \
    "SELECT count(*) FROM treble_sync.verify('sec_ca_v')" 42501
refused "another admin: no cycle of it" sec_ca_evil \
    "SELECT treble_sync.sync_table('sec_ca_v')" 42501

# --- a superuser
refused "a superuser cannot make one sync group of two owners' tables" postgres \
    "SELECT treble_sync.add_group('sec_ca_mix', '{sec_ca_e, sec_ca_v}')" ""
check "  (and no group was made)" 0 "$(sq -c "SELECT count(*) FROM treble_sync.groups WHERE name = 'sec_ca_mix'")"
as sec_ca_evil >/dev/null <<'SQL'
CREATE TABLE public.sec_ca_v (id int, v text, synced_at timestamp);
GRANT ALL ON public.sec_ca_v TO PUBLIC;
CREATE FUNCTION public.sec_ca_steal() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.loot VALUES (current_user); RETURN NULL; END $f$;
CREATE TRIGGER steal AFTER INSERT OR UPDATE OR DELETE ON public.sec_ca_v
    FOR EACH STATEMENT EXECUTE FUNCTION public.sec_ca_steal();
SQL
whq -c "UPDATE sec_ca_v SET v = v || '+', synced_at = '2026-11-28 11:00'"
try postgres "SET client_min_messages = warning;
CREATE TEMP TABLE sec_ca_v (id int, v text, synced_at timestamp);
SELECT status FROM treble_sync.sync_table('sec_ca_v');
SELECT count(*) FROM treble_sync.verify('sec_ca_v') WHERE NOT match;
SELECT count(*) FROM pg_temp.sec_ca_v;"
check "a superuser's cycle and verify beside a temporary and a public table of the copy's name" "success
0
0" "$OUT"
[[ $RC == 0 ]] || diag "$ERR"
check "  (the copy got the warehouse's rows)" 5 \
    "$(sq -c "SELECT count(*) FROM vs.sec_ca_v WHERE v LIKE '%+'")"
check "  (the look-alike in public was not written)" "0|0" \
    "$(sq -c "SELECT (SELECT count(*) FROM public.sec_ca_v) || '|' || (SELECT count(*) FROM public.loot)")"

# --- a name removed by the victim and registered again by the attacker
as sec_ca_owner >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('sec_ca_r', 'wh', key_columns => '{id}', local_table => 'vs.sec_ca_r');
SQL
whq -c "ALTER TABLE sec_ca_r RENAME TO sec_ca_r_gone"
as sec_ca_owner -c "SELECT status FROM treble_sync.sync_table('sec_ca_r')" >/dev/null 2>&1
as sec_ca_owner -c "SELECT status FROM treble_sync.sync_table('sec_ca_r')" >/dev/null 2>&1
whq -c "ALTER TABLE sec_ca_r_gone RENAME TO sec_ca_r"
check "the victim's status shows its failed runs" 2 \
    "$(as sec_ca_owner -c "SELECT consecutive_failures FROM treble_sync.status WHERE table_name = 'sec_ca_r'" 2>&1)"
as sec_ca_owner -c "SELECT treble_sync.remove_table('sec_ca_r')" >/dev/null
as sec_ca_evil >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('sec_ca_r', 'wh', key_columns => '{id}', local_table => 'public.sec_ca_r');
SQL
check "the attacker's status of the name shows none of the victim's runs" "0||" \
    "$(as sec_ca_evil -c "SELECT consecutive_failures || '|' || coalesce(last_status, '') || '|' || coalesce(last_error, '')
                          FROM treble_sync.status WHERE table_name = 'sec_ca_r'" 2>&1)"
check "nor does its metrics()" 0 \
    "$(as sec_ca_evil -c "SELECT count(*) FROM regexp_split_to_table(treble_sync.metrics(), E'\n') l
                          WHERE l LIKE 'treble_sync_runs_total{table=\"sec_ca_r\",status=\"failed\"} %' AND l NOT LIKE '% 0'" 2>&1)"
