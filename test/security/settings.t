#!/usr/bin/env bash
#
# Settings that cannot reach a cycle (docs/security.md).
#
# A cycle's worker, its chunk helpers and a first load's reader connect as
# the session user of whoever started the cycle, so PostgreSQL applies that
# role's settings (ALTER ROLE ... SET, ALTER ROLE ... IN DATABASE ... SET)
# to them; verify() and rewind() run in the caller's own session.  Roles
# with hostile settings (a caller that may start the owner's cycles, and the
# owner itself) sync and verify a table with a value of every kind whose
# text depends on a setting: dates and times, a time zone, intervals,
# floats, bytes, numbers.  The copy must hold the warehouse's values
# exactly, as a copy made without those settings does; verify must find no
# difference; the cycle must not run in a read-only or serializable
# transaction, nor resolve an operator planted on the caller's search_path;
# and the owner's own trigger on its copy sees the settings the extension
# pins (docs/security.md), not the caller's, and fires (a role's
# session_replication_role = replica would silence it, and the history
# triggers with it).
#
# Settings that name another role: ALTER ROLE ... SET role makes every
# session of the role start as that role, a worker's and a reader's too
# (they connect as the caller's session user); ALTER ROLE ... SET
# session_authorization is stored, and refused with a warning at the login
# of a role that is not a superuser. With both set, on the caller and on
# the owner, to a third role both are members of, a cycle, a first load
# with a reader, and the owner's own cycle still run as the owner, and
# copy the warehouse's values.

DB=sec_set
ROLES=(sec_set_owner sec_set_caller sec_set_other)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'finish' EXIT
setup_db

admin_on_wh sec_set_owner sec_set_caller
sq >/dev/null <<'SQL'
GRANT EXECUTE ON FUNCTION treble_sync.sync_table(text) TO sec_set_caller;
GRANT sec_set_owner TO sec_set_caller;
SQL
map_reader postgres wh >/dev/null

whq >/dev/null <<'SQL'
DROP TABLE IF EXISTS sec_set_vals;
CREATE TABLE sec_set_vals (id int PRIMARY KEY, d date, ts timestamp, tstz timestamptz, iv interval,
                           f8 float8, f4 real, b bytea, n numeric, tm time, t text,
                           scheduled_at timestamp, synced_at timestamp);
INSERT INTO sec_set_vals VALUES
  (1, '2026-01-02', '2026-01-02 03:04:05.123456', '2026-01-02 03:04:05.5+00', '-1 days +02:03:04',
   0.1, 0.1, '\x00ff5c0a', 1234.5678, '23:59:59.999999', 'a', '2026-11-27', '2026-11-28'),
  (2, '1999-12-31', '1999-12-31 23:59:59', '1999-12-31 23:59:59-08', '1 day -02:03:04',
   3.141592653589793, 1e-7, '\x5c5c', -0.001, '00:00:00', 'b', '2026-11-27', '2026-11-28'),
  (3, '0044-03-15', '2026-03-29 01:30:00', '2026-03-29 01:30:00+00', '-1 years -2 mons +3 days -04:05:06.7',
   1.0000000000000002, 3.4e38, '\x', 1e-20, '12:00:00', 'c', '2026-11-27', '2026-11-28'),
  (4, '2026-11-28', '2026-11-28 00:00:00', '2026-11-28 00:00:00+05:45', '-1 mons +1 day',
   -1e-300, -0.5, '\x27', 42, '01:02:03', 'd', '2026-11-27', '2026-11-28');
SQL
# the values as canonical text, read the same way on both sides
canon="SELECT string_agg(concat_ws('|', id, d::text, ts::text, extract(epoch FROM tstz)::text, iv::text,
           f8::text, f4::text, encode(b, 'hex'), n::text, tm::text, t), ';' ORDER BY id)"
want=$(whq -c "SET extra_float_digits = 1; SET IntervalStyle = postgres; $canon FROM sec_set_vals")
have() { sq -c "SET extra_float_digits = 1; SET IntervalStyle = postgres; $canon FROM $1"; }

reg() { echo "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_set_vals', 'wh', key_columns => '{id}', event_column => 'scheduled_at', name => '$1', local_table => 'public.$1')"; }
as sec_set_owner -c "$(reg set_plain)" -c "$(reg set_hostile)" -c "$(reg set_reader)" >/dev/null

# a copy made without any setting of a role
try sec_set_owner "SELECT status FROM treble_sync.sync_table('set_plain')"
check "a copy made without hostile settings succeeds" success "$OUT"
[[ $OUT != success ]] && diag "$(head -n 3 <<<"$ERR") $(sq -c "SELECT error FROM treble_sync.runs WHERE table_name = 'set_plain' ORDER BY run_id DESC LIMIT 1")"
check "and holds the warehouse's values" "$want" "$(have set_plain)"

# the caller's and the owner's hostile settings, for every database and for this one
hostile="SET TimeZone = 'Pacific/Chatham' SET DateStyle = 'SQL, DMY' SET IntervalStyle = 'sql_standard'
         SET extra_float_digits = -15 SET bytea_output = 'escape'
         SET statement_timeout = '1ms' SET lock_timeout = '1ms'
         SET default_transaction_isolation = 'serializable' SET default_transaction_read_only = on
         SET search_path = 'sec_set_evil, pg_catalog' SET xmloption = 'document'
         SET standard_conforming_strings = off SET transform_null_equals = on
         SET timezone_abbreviations = 'India' SET row_security = off SET exit_on_error = on
         SET session_replication_role = 'replica'"
# an operator planted on the caller's search_path, which copies nothing but
# says it ran
sq >/dev/null <<'SQL'
CREATE SCHEMA sec_set_evil AUTHORIZATION sec_set_caller;
CREATE TABLE public.sec_set_ran (who text);
GRANT INSERT ON public.sec_set_ran TO PUBLIC;
SQL
for type in text int; do
    as sec_set_caller >/dev/null <<SQL
CREATE FUNCTION sec_set_evil.eq($type, $type) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
    INSERT INTO public.sec_set_ran VALUES (current_user);
    RETURN \$1 OPERATOR(pg_catalog.=) \$2;
END \$\$;
CREATE OPERATOR sec_set_evil.= (LEFTARG = $type, RIGHTARG = $type, FUNCTION = sec_set_evil.eq);
SQL
done
# the test's own sessions of these roles must still work: what a client
# sets for its session (PGOPTIONS) reaches no worker
export PGOPTIONS="-c statement_timeout=0 -c lock_timeout=0 -c exit_on_error=off -c row_security=on -c default_transaction_read_only=off -c default_transaction_isolation=read\\ committed"
for role in sec_set_caller sec_set_owner; do
    while read -r setting; do
        [[ -z ${setting// } ]] && continue
        sq -c "ALTER ROLE $role $setting" >/dev/null
        sq -c "ALTER ROLE $role IN DATABASE $DB $setting" >/dev/null
    done < <(sed 's/ SET /\nSET /g' <<<"$hostile" | sed 's/^ *//')
done
check "the hostile settings are in place" 2 \
    "$(sq -c "SELECT count(DISTINCT setrole) FROM pg_db_role_setting WHERE setrole IN ('sec_set_caller'::regrole, 'sec_set_owner'::regrole) AND setdatabase <> 0")"

# what the owner's own trigger on its copies sees of them, as the cycle writes
sq >/dev/null <<'SQL'
CREATE TABLE public.sec_set_seen (copy text, settings text);
GRANT INSERT ON public.sec_set_seen TO sec_set_owner;
SQL
as sec_set_owner >/dev/null <<'SQL'
SET default_transaction_read_only = off;
CREATE FUNCTION public.sec_set_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.sec_set_seen SELECT TG_TABLE_NAME, concat_ws('|',
        current_setting('DateStyle'), current_setting('IntervalStyle'), current_setting('extra_float_digits'),
        current_setting('bytea_output'), current_setting('lc_monetary'), current_setting('timezone_abbreviations'),
        current_setting('xmloption'), current_setting('standard_conforming_strings'),
        current_setting('transform_null_equals'), current_setting('session_replication_role'),
        current_setting('row_security'), current_setting('exit_on_error'), current_setting('transaction_isolation'),
        current_setting('transaction_read_only'), current_setting('statement_timeout'), current_setting('search_path'));
    RETURN NULL;
END $$;
CREATE TRIGGER sec_set_record AFTER INSERT ON public.set_hostile FOR EACH STATEMENT EXECUTE FUNCTION public.sec_set_record();
CREATE TRIGGER sec_set_record AFTER INSERT ON public.set_reader FOR EACH STATEMENT EXECUTE FUNCTION public.sec_set_record();
SQL
pinned="ISO, MDY|postgres|1|hex|C|Default|content|on|off|origin|on|off|read committed|off|0|pg_catalog, pg_temp"

try sec_set_caller "SELECT status FROM treble_sync.sync_table('set_hostile')"
check "a cycle started by a role with hostile settings succeeds" success "$OUT"
[[ $RC -ne 0 || $OUT != success ]] && diag "$(head -n 3 <<<"$ERR") $(sq -c "SELECT error FROM treble_sync.runs WHERE table_name = 'set_hostile' ORDER BY run_id DESC LIMIT 1")"
check "and its copy holds the warehouse's values, as one made without them" "$want" "$(have set_hostile)"
check "the owner's trigger on the copy ran, with the pinned settings, not the caller's" "$pinned" \
    "$(sq -c "SELECT string_agg(DISTINCT settings, ' / ') FROM public.sec_set_seen WHERE copy = 'set_hostile'")"

try sec_set_caller "SET treble_sync.read_ahead = on; SELECT status FROM treble_sync.sync_table('set_reader')"
check "a first load with a reader, started by that role, succeeds" success "$OUT"
check "and its copy holds the warehouse's values" "$want" "$(have set_reader)"
check "and the owner's trigger saw the pinned settings" "$pinned" \
    "$(sq -c "SELECT string_agg(DISTINCT settings, ' / ') FROM public.sec_set_seen WHERE copy = 'set_reader'")"

try sec_set_owner "SELECT count(*) FILTER (WHERE NOT match) FROM treble_sync.verify('set_plain', since => '2026-01-01')"
check "the owner's verify, in a session with its hostile settings, finds no difference" 0 "$OUT"
[[ $RC -ne 0 ]] && diag "$(head -n 3 <<<"$ERR")"
check "no operator planted on a search_path ran" 0 "$(sq -c "SELECT count(*) FROM public.sec_set_ran")"

# --- settings that name another role
as sec_set_owner -c "$(reg set_roles)" -c "$(reg set_roles_reader)" -c "$(reg set_roles_own)" >/dev/null
sq >/dev/null <<'SQL'
CREATE TABLE public.sec_set_who (copy text, who text, session text);
GRANT INSERT ON public.sec_set_who TO sec_set_owner;
GRANT sec_set_other TO sec_set_caller, sec_set_owner;
SQL
as sec_set_owner >/dev/null <<'SQL'
SET default_transaction_read_only = off;
CREATE FUNCTION public.sec_set_who() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.sec_set_who VALUES (TG_TABLE_NAME, current_user, session_user);
    RETURN NULL;
END $$;
CREATE TRIGGER sec_set_who AFTER INSERT ON public.set_roles FOR EACH STATEMENT EXECUTE FUNCTION public.sec_set_who();
CREATE TRIGGER sec_set_who AFTER INSERT ON public.set_roles_reader FOR EACH STATEMENT EXECUTE FUNCTION public.sec_set_who();
CREATE TRIGGER sec_set_who AFTER INSERT ON public.set_roles_own FOR EACH STATEMENT EXECUTE FUNCTION public.sec_set_who();
SQL
for role in sec_set_caller sec_set_owner; do
    for setting in "SET role = 'sec_set_other'" "SET session_authorization = 'sec_set_other'"; do
        sq -c "ALTER ROLE $role $setting" >/dev/null
        sq -c "ALTER ROLE $role IN DATABASE $DB $setting" >/dev/null
    done
done
check "a session of the caller starts as the role its settings name" "sec_set_other|sec_set_caller" \
    "$(PGOPTIONS=${PGOPTIONS//-c role=none/} as sec_set_caller -c "SELECT current_user || '|' || session_user" 2>/dev/null)"
# the test's own sessions of these roles act as themselves, as a client may
# ask: the worker, which connects as the caller, still gets the setting
export PGOPTIONS="$PGOPTIONS -c role=none"
sq -c "ALTER DATABASE $DB SET log_min_messages = debug1" >/dev/null
log_start=$(stat -c %s "$TS_DIR/dest.log")

try sec_set_caller "SELECT status || '|' || run_by || '|' || owner FROM treble_sync.sync_table('set_roles')"
check "a cycle started by a caller whose settings name another role succeeds, by the caller, as the owner" \
    "success|sec_set_caller|sec_set_owner" "$OUT"
[[ $OUT != success* ]] && diag "$(head -n 3 <<<"$ERR") $(sq -c "SELECT error FROM treble_sync.runs WHERE table_name = 'set_roles' ORDER BY run_id DESC LIMIT 1")"
check "and its copy holds the warehouse's values" "$want" "$(have set_roles)"
try sec_set_caller "SET treble_sync.read_ahead = on; SELECT status FROM treble_sync.sync_table('set_roles_reader')"
check "a first load with a reader, started by that caller, succeeds" success "$OUT"
check "and its copy holds the warehouse's values" "$want" "$(have set_roles_reader)"
check "its reader connected to the warehouse" 1 \
    "$(tail -c +$((log_start + 1)) "$TS_DIR/dest.log" | grep -c 'a reader of "set_roles_reader" is connected to the warehouse')"
try sec_set_owner "SELECT status FROM treble_sync.sync_table('set_roles_own')"
check "the owner's own cycle, its settings naming another role, succeeds" success "$OUT"
check "and its copy holds the warehouse's values" "$want" "$(have set_roles_own)"
sq -c "ALTER DATABASE $DB RESET log_min_messages" >/dev/null
check "the owner's trigger on each copy ran as the owner, in a session of the caller that started it" \
    "set_roles=sec_set_owner/sec_set_caller,set_roles_own=sec_set_owner/sec_set_owner,set_roles_reader=sec_set_owner/sec_set_caller" \
    "$(sq -c "SELECT string_agg(DISTINCT copy || '=' || who || '/' || session, ',' ORDER BY copy || '=' || who || '/' || session) FROM public.sec_set_who")"
check "no run of a copy of these is by or as another role" 0 \
    "$(sq -c "SELECT count(*) FROM treble_sync.runs WHERE table_name LIKE 'set_roles%' AND (run_by::text NOT IN ('sec_set_caller', 'sec_set_owner') OR owner::text <> 'sec_set_owner')")"
