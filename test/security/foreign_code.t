#!/usr/bin/env bash
#
# Code of another role that a copy's definition uses: a column's domain
# whose CHECK calls a function of that role, and a trigger of the copy
# whose function that role owns (and may replace at any time). The owner
# chose them, as it chooses the functions any of its queries call; the
# rule the extension keeps is that such code never runs with more than
# the registration owner's privileges: not the privileges of the superuser
# who starts the cycle, nor of a scheduler. The other role's functions
# record the role they run as and try to make their owner a superuser.
# Owned by the copy's owner, the same objects are its own code.
# (docs/security.md, "Code the copy's definition uses".)

DB=sec_foreign_code
ROLES=(sec_fc_owner sec_fc_other sec_fc_sched)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

admin_on_wh sec_fc_owner sec_fc_other
sq -c "GRANT EXECUTE ON FUNCTION treble_sync.sync_table(text) TO sec_fc_sched" >/dev/null
wh_table sec_fc_t "id int PRIMARY KEY, v int, synced_at timestamp" \
    "SELECT g, g, timestamp '2026-11-28 10:00' FROM generate_series(1, 5) g"

# other_code SIGNATURE RESULT MARK RETURN: the other role's function, which
# records MARK and the roles it runs as, tries to make the other role a
# superuser, and returns RETURN (created, or replaced as the other role may
# do at any time)
other_code() {
    as sec_fc_other >/dev/null <<SQL
CREATE OR REPLACE FUNCTION public.$1 RETURNS $2 LANGUAGE plpgsql AS \$f\$
BEGIN
    INSERT INTO public.sec_fc_seen VALUES ('$3', current_user, session_user);
    BEGIN EXECUTE 'ALTER ROLE sec_fc_other SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
    RETURN $4;
END \$f\$;
SQL
}

# the other role's code: a domain with a CHECK that calls its function,
# and a trigger function
as sec_fc_other >/dev/null <<'SQL'
CREATE TABLE public.sec_fc_seen (f text, cur name, sess name);
GRANT INSERT ON public.sec_fc_seen TO PUBLIC;
SQL
other_code "sec_fc_check(int)" boolean check true
as sec_fc_other -c "CREATE DOMAIN public.sec_fc_dom AS int CHECK (public.sec_fc_check(VALUE))" >/dev/null
other_code "sec_fc_trig()" trigger trigger NULL
as sec_fc_owner >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE public.sec_fc_t (id int PRIMARY KEY, v public.sec_fc_dom, synced_at timestamp);
CREATE TRIGGER t AFTER INSERT OR UPDATE ON public.sec_fc_t
    FOR EACH STATEMENT EXECUTE FUNCTION public.sec_fc_trig();
SELECT name FROM treble_sync.add_table('sec_fc_t', 'wh', key_columns => '{id}', local_table => 'public.sec_fc_t');
GRANT SELECT, INSERT, UPDATE, DELETE ON public.sec_fc_t TO sec_fc_sched;
SQL

check "the owner's first cycle (a first load) succeeds" success \
    "$(as sec_fc_owner -c "SELECT status FROM treble_sync.sync_table('sec_fc_t')" 2>&1)"
whq -c "UPDATE sec_fc_t SET v = v + 10, synced_at = '2026-11-28 11:00'"
check "a superuser's cycle succeeds" success \
    "$(sq -c "SELECT status FROM treble_sync.sync_table('sec_fc_t')" 2>&1)"
whq -c "UPDATE sec_fc_t SET v = v + 10, synced_at = '2026-11-28 12:00'"
check "a scheduler's cycle succeeds" success \
    "$(as sec_fc_sched -c "SELECT status FROM treble_sync.sync_table('sec_fc_t')" 2>&1)"
check "the copy holds the warehouse's values" "21|22|23|24|25" \
    "$(sq -c "SELECT string_agg(v::text, '|' ORDER BY id) FROM public.sec_fc_t")"

# the other role replaces its function's body, as it may at any time
other_code "sec_fc_check(int)" boolean "check, replaced" true
whq -c "UPDATE sec_fc_t SET v = v + 10, synced_at = '2026-11-28 13:00'"
check "a superuser's cycle after the replacement succeeds" success \
    "$(sq -c "SELECT status FROM treble_sync.sync_table('sec_fc_t')" 2>&1)"
check "verify() as a superuser runs" t \
    "$(sq -c "SET client_min_messages = warning; SELECT count(*) >= 0 FROM treble_sync.verify('sec_fc_t')" 2>&1)"

check "the other role's domain CHECK and trigger ran in the cycles" t \
    "$(sq -c "SELECT count(*) FILTER (WHERE f = 'check') > 0 AND count(*) FILTER (WHERE f = 'trigger') > 0
                     AND count(*) FILTER (WHERE f = 'check, replaced') > 0 FROM public.sec_fc_seen")"
check "and always as the registration's owner, never as the superuser or the scheduler who started the cycle" \
    "sec_fc_owner" "$(sq -c "SELECT string_agg(DISTINCT cur, ',') FROM public.sec_fc_seen")"
check "the other role did not become a superuser" f "$(is_super sec_fc_other)"
