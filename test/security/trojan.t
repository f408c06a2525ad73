#!/usr/bin/env bash
#
# A trojan trigger: a role owns a copy and puts a trigger on it that tries
# `ALTER ROLE <itself> SUPERUSER` (and records current_user). A superuser
# then runs its cycles: sync_table, sync_all, resync, and a pg_cron job of
# the superuser (if pg_cron is preloaded, as in .ci/clusters). The trigger
# must run as the copy's owner, never as the superuser, so the role stays
# what it was; and a copy handed to another role than the registration's
# owner is not synced at all.

DB=sec_trojan
ROLES=(sec_troj_owner sec_troj_cron)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CRON_DB=$(psql -X -At -d postgres -c "SELECT current_setting('cron.database_name', true)")
JOB=""
cleanup() {
    if [[ -n $JOB ]]; then
        psql -X -q -d "$CRON_DB" -c "SELECT cron.unschedule($JOB)" >/dev/null 2>&1
    fi
    finish
}
trap cleanup EXIT
setup_db

admins_on_wh sec_troj_owner sec_troj_cron
# who the trigger ran as, whatever the transaction around it did
sq -c "CREATE TABLE troj_log (tbl text, who text)" -c "GRANT INSERT ON troj_log TO PUBLIC" >/dev/null
# the superuser has a mapping of its own too (which the cycles of the roles'
# copies must not need)
map_reader postgres wh >/dev/null
for t in sec_troj_sends sec_troj_cron; do
    wh_table $t "id int PRIMARY KEY, v text, synced_at timestamp" "VALUES (1, 'a', '2026-11-28')"
done

# the role registers its table and plants the trigger on its copy
plant() {
    local role=$1 tbl=$2
    as "$role" >/dev/null <<SQL
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('$tbl', 'wh', key_columns => '{id}', name => '$tbl', local_table => '$tbl');
CREATE FUNCTION public.${tbl}_trojan() RETURNS trigger LANGUAGE plpgsql AS \$f\$
BEGIN
    INSERT INTO public.troj_log VALUES ('$tbl', current_user::text);
    BEGIN
        EXECUTE 'ALTER ROLE $role SUPERUSER';
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
    RETURN NULL;
END
\$f\$;
CREATE TRIGGER trojan_row AFTER INSERT OR UPDATE OR DELETE ON public.$tbl
    FOR EACH ROW EXECUTE FUNCTION public.${tbl}_trojan();
CREATE TRIGGER trojan_stmt AFTER INSERT OR UPDATE OR DELETE ON public.$tbl
    FOR EACH STATEMENT EXECUTE FUNCTION public.${tbl}_trojan();
SQL
}
plant sec_troj_owner sec_troj_sends
plant sec_troj_cron sec_troj_cron

# --- a pg_cron job of the superuser, scheduled first: it runs at the next
# minute, while the rest goes on
if [[ -n $CRON_DB ]] && [[ -n $(psql -X -At -d postgres -c "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_cron'") ]]; then
    if [[ -z $(psql -X -At -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$CRON_DB'") ]]; then
        psql -X -q -d postgres -c "CREATE DATABASE $CRON_DB" >/dev/null
    fi
    psql -X -q -d "$CRON_DB" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null
    JOB=$(psql -X -At -d "$CRON_DB" -c "SELECT cron.schedule_in_database('sec_trojan', '* * * * *',
              \$\$SELECT status FROM treble_sync.sync_table('sec_troj_cron')\$\$, '$DB')")
fi

# the trigger fired, and as whom
ran_as() { sq -c "SELECT coalesce(string_agg(DISTINCT who, ',' ORDER BY who), '(never ran)') FROM troj_log WHERE tbl = '$1'"; }
new_rows() { whq -c "INSERT INTO $1 SELECT max(id) + 1, 'n', max(synced_at) + interval '1 hour' FROM $1"; }

# --- sync_table by a superuser
try postgres "SELECT status FROM treble_sync.sync_table('sec_troj_sends')"
check "a superuser's sync_table of a copy with a trigger succeeds" success "$OUT"
check "the trigger did not make its owner a superuser (sync_table)" f "$(is_super sec_troj_owner)"
check "the trigger ran as the copy's owner, not as the superuser (sync_table)" sec_troj_owner "$(ran_as sec_troj_sends)"
sq -c "ALTER ROLE sec_troj_owner NOSUPERUSER" >/dev/null

# --- sync_all by a superuser
new_rows sec_troj_sends
try postgres "SELECT string_agg(status, ',') FROM treble_sync.sync_all() WHERE table_name = 'sec_troj_sends'"
check "a superuser's sync_all cycles the copy" success "$OUT"
check "the trigger did not make its owner a superuser (sync_all)" f "$(is_super sec_troj_owner)"
check "the trigger ran as the copy's owner (sync_all)" sec_troj_owner "$(ran_as sec_troj_sends)"
sq -c "ALTER ROLE sec_troj_owner NOSUPERUSER" >/dev/null

# --- resync by a superuser
try postgres "SELECT status FROM treble_sync.resync('sec_troj_sends')"
check "the trigger did not make its owner a superuser (resync)" f "$(is_super sec_troj_owner)"
check "the trigger ran as the copy's owner (resync)" sec_troj_owner "$(ran_as sec_troj_sends)"
sq -c "ALTER ROLE sec_troj_owner NOSUPERUSER" >/dev/null

# --- a copy that is no longer the registration owner's is not synced
sq -c "ALTER TABLE sec_troj_sends OWNER TO sec_troj_cron" >/dev/null
new_rows sec_troj_sends
try postgres "SELECT status || ': ' || coalesce(error, '') FROM treble_sync.sync_table('sec_troj_sends')"
if [[ ( $RC -ne 0 && ${ERR,,} == *"owned by"* ) || ( $OUT == failed:* && ${OUT,,} == *"owned by"* ) ]]; then
    ok "a copy owned by another role than the registration's owner fails its cycle"
else
    nok "a copy owned by another role than the registration's owner fails its cycle"
    diag "${OUT:0:300} $(head -n 2 <<<"$ERR")"
fi
check "and its trigger did not make its author a superuser" f "$(is_super sec_troj_owner)"
sq -c "ALTER TABLE sec_troj_sends OWNER TO sec_troj_owner" -c "ALTER ROLE sec_troj_owner NOSUPERUSER" >/dev/null

# --- the pg_cron job
if [[ -z $JOB ]]; then
    skip "pg_cron is not available"
    skip "pg_cron is not available"
    skip "pg_cron is not available"
else
    for _ in $(seq 1 150); do
        [[ -n $(sq -c "SELECT 1 FROM treble_sync.runs WHERE table_name = 'sec_troj_cron' AND status <> 'running'") ]] && break
        sleep 0.5
    done
    # the job runs every minute: a slow run of this script sees a second
    # run, which finds nothing new ('empty'), or finds the first one (or
    # another cycle of the table) still holding its lock ('skipped')
    check "a superuser's pg_cron job ran the cycle" success \
        "$(sq -c "SELECT coalesce((SELECT status FROM treble_sync.runs WHERE table_name = 'sec_troj_cron' ORDER BY run_id LIMIT 1)
                                  || CASE WHEN bool_and(status IN ('success', 'empty', 'skipped')) THEN '' ELSE ' then ' || string_agg(status, ',') END, '(no run)')
                  FROM treble_sync.runs WHERE table_name = 'sec_troj_cron'")"
    check "the trigger did not make its owner a superuser (pg_cron job)" f "$(is_super sec_troj_cron)"
    check "the trigger ran as the copy's owner (pg_cron job)" sec_troj_cron "$(ran_as sec_troj_cron)"
fi
