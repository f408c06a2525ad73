#!/usr/bin/env bash
#
# A worker of sync_all() runs the cycles of many tables one after another
# and keeps its warehouse connection for the next cycle (src/process.c).
# A kept connection serves only a cycle with the same owner, server and
# user mapping (and the same options of both):
#
#   - two owners whose mappings log in as different warehouse users, their
#     tables interleaved in one worker (treble_sync.max_parallel 1): each
#     copy holds the warehouse's current_user of its own owner's mapping;
#   - an owner whose mapping has a wrong password: only its tables fail,
#     the next ones in the same worker succeed;
#   - a table that fails in the middle of the queue (its warehouse table is
#     gone) does not fail the next one of the same owner, which connects
#     again;
#   - a user mapping changed (ALTER USER MAPPING) between two cycles of one
#     owner in the same worker: the second cycle logs in as the new user;
#   - a role that may not create temporary tables in the database fails its
#     own cycle even after another owner's cycle made the worker's
#     temporary schema;
#   - every run of each sync_all() came from one worker process.

DB=sec_kc
ROLES=(sec_kc_a sec_kc_b sec_kc_c sec_kc_d)
WH_ROLE=sec_kc_wh2
WH_ROLE_PASSWORD='Kc2-pw.x'
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SECRETS+=("$WH_ROLE_PASSWORD")
cleanup() {
    whq -c "DROP VIEW IF EXISTS sec_kc_who" -c "DROP TABLE IF EXISTS sec_kc_gone" >/dev/null 2>&1
    whq -c "DROP ROLE IF EXISTS $WH_ROLE" >/dev/null 2>&1
    finish
}
trap cleanup EXIT
setup_db

# the warehouse: a second login, and a view that says who reads it
whq -c "DROP VIEW IF EXISTS sec_kc_who" -c "DROP ROLE IF EXISTS $WH_ROLE" \
    -c "CREATE ROLE $WH_ROLE LOGIN PASSWORD '$WH_ROLE_PASSWORD'" \
    -c "CREATE VIEW sec_kc_who AS SELECT 1 AS id, current_user::text AS who" \
    -c "GRANT SELECT ON sec_kc_who TO $WH_ROLE, $TS_WH_USER" \
    -c "DROP TABLE IF EXISTS sec_kc_gone" \
    -c "CREATE TABLE sec_kc_gone (id int PRIMARY KEY, who text)" \
    -c "INSERT INTO sec_kc_gone VALUES (1, 'x')" \
    -c "GRANT SELECT ON sec_kc_gone TO $TS_WH_USER" >/dev/null

su_server wh treble_test.wh_odbc >/dev/null
sq >/dev/null <<'SQL'
GRANT treble_sync_admin TO sec_kc_a, sec_kc_b, sec_kc_c, sec_kc_d;
GRANT CREATE ON SCHEMA public TO sec_kc_a, sec_kc_b, sec_kc_c, sec_kc_d;
GRANT USAGE ON FOREIGN SERVER wh TO sec_kc_a, sec_kc_b, sec_kc_c, sec_kc_d;
SQL
map_reader sec_kc_a wh >/dev/null
map_reader sec_kc_c wh >/dev/null
map_reader sec_kc_d wh >/dev/null
as sec_kc_b -c "CREATE USER MAPPING FOR sec_kc_b SERVER wh OPTIONS (user '$WH_ROLE', password '$WH_ROLE_PASSWORD')" >/dev/null

# reg ROLE NAME [REMOTE]: a snapshot copy NAME of the view (or of REMOTE)
reg() {
    as "$1" -c "SET client_min_messages = warning" \
        -c "SELECT name FROM treble_sync.add_table('${3:-sec_kc_who}', 'wh', key_columns => '{id}',
                   cursor_column => NULL, mode => 'snapshot', local_table => 'public.$2', name => '$2')" >/dev/null
}
# enable true|false NAME...: enable or disable the registrations
enable() {
    local on=$1 t
    shift
    for t in "$@"; do
        # as its owner, sec_kc_<the name's last letter>
        as "sec_kc_${t##*_}" -c "SELECT 1 FROM treble_sync.alter_table('$t', enabled => $on)" >/dev/null
    done
}
# runs_since ID NAME...: the runs of those tables since run ID, table=status
runs_since() {
    local mark=$1
    shift
    sq -c "SELECT string_agg(table_name || '=' || status, ' ' ORDER BY table_name) FROM treble_sync.runs
           WHERE run_id > $mark AND table_name = ANY ('{$(IFS=,; echo "$*")}')"
}
last_run() { sq -c "SELECT coalesce(max(run_id), 0) FROM treble_sync.runs"; }
# one sync_all() by the superuser in one worker; OUT: how many workers ran
# it.  Without read-ahead: a first load's rows would be read by a reader
# process of their own, on a connection of its own, and the copies would
# not show which connection the worker used.
sync_all_one_worker() {
    try postgres "SET treble_sync.max_parallel = 1; SET treble_sync.read_ahead = off;
                  SELECT count(DISTINCT worker_pid) FROM treble_sync.sync_all()"
    [[ $RC -ne 0 ]] && diag "$ERR"
}

# names sort in the order the worker takes them: a, b, c interleaved
reg sec_kc_a kc_1_a
reg sec_kc_b kc_2_b
reg sec_kc_c kc_3_c
reg sec_kc_a kc_4_a
reg sec_kc_b kc_5_b
reg sec_kc_c kc_6_c
reg sec_kc_a kc_7_a
# c's mapping breaks once its tables are registered
as sec_kc_c -c "ALTER USER MAPPING FOR sec_kc_c SERVER wh OPTIONS (SET password 'not the password')" >/dev/null

mark=$(last_run)
sync_all_one_worker
check "sync_all() of seven tables of three owners ran in one worker" 1 "$OUT"
check "each owner's copy was read with its own mapping: a and b succeed, c (wrong password) fails alone" \
    "kc_1_a=success kc_2_b=success kc_3_c=failed kc_4_a=success kc_5_b=success kc_6_c=failed kc_7_a=success" "$(runs_since "$mark" kc_1_a kc_2_b kc_3_c kc_4_a kc_5_b kc_6_c kc_7_a)"
check "the copies of owner a were read as the warehouse user of a's mapping" \
    "$TS_WH_USER $TS_WH_USER $TS_WH_USER" "$(sq -c "SELECT who FROM kc_1_a UNION ALL SELECT who FROM kc_4_a UNION ALL SELECT who FROM kc_7_a" | tr '\n' ' ' | sed 's/ $//')"
check "the copies of owner b, taken between them, were read as the user of b's mapping" \
    "$WH_ROLE $WH_ROLE" "$(sq -c "SELECT who FROM kc_2_b UNION ALL SELECT who FROM kc_5_b" | tr '\n' ' ' | sed 's/ $//')"
check "the failed runs of owner c say the login failed" 2 \
    "$(sq -c "SELECT count(*) FROM treble_sync.runs WHERE table_name IN ('kc_3_c', 'kc_6_c') AND status = 'failed' AND error ILIKE '%password%'")"

# --- a table that fails in the middle of the queue, then one of the same
# owner and mapping: the connection is not kept after the error
# (the tables of c, whose mapping fails, and kc_9_d, whose warehouse table
# is gone, cannot be altered: they stay enabled, and keep failing between
# the others in the sync_all() calls below)
enable false kc_1_a kc_2_b kc_4_a kc_5_b kc_7_a
reg sec_kc_d kc_8_d
reg sec_kc_d kc_9_d sec_kc_gone
reg sec_kc_d kc_10_d
whq -c "DROP TABLE sec_kc_gone" >/dev/null
mark=$(last_run)
sync_all_one_worker
check "the next sync_all() ran in one worker too" 1 "$OUT"
check "the table whose warehouse table is gone fails; the ones before and after it succeed" \
    "kc_10_d=success kc_8_d=success kc_9_d=failed" \
    "$(runs_since "$mark" kc_8_d kc_9_d kc_10_d)"

# --- a user mapping changed between two cycles in one worker: the copy's
# trigger changes its owner's mapping as the first cycle writes, which
# commits with it; the next cycle (same owner) must log in as the new user
enable false kc_8_d kc_10_d
reg sec_kc_d kc_11_d
reg sec_kc_d kc_12_d
as sec_kc_d <<SQL >/dev/null
CREATE FUNCTION public.kc_switch() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    ALTER USER MAPPING FOR sec_kc_d SERVER wh OPTIONS (SET user '$WH_ROLE', SET password '$WH_ROLE_PASSWORD');
    RETURN NULL;
END
\$\$;
CREATE TRIGGER kc_switch AFTER INSERT ON public.kc_11_d FOR EACH STATEMENT EXECUTE FUNCTION public.kc_switch();
SQL
mark=$(last_run)
sync_all_one_worker
check "the two cycles ran in one worker" 1 "$OUT"
check "both succeeded" "kc_11_d=success kc_12_d=success" \
    "$(runs_since "$mark" kc_11_d kc_12_d)"
check "the first was read as the mapping's user before the change, the second as the new one" \
    "$TS_WH_USER $WH_ROLE" "$(sq -c "SELECT who FROM kc_11_d UNION ALL SELECT who FROM kc_12_d" | tr '\n' ' ' | sed 's/ $//')"

# --- the TEMPORARY privilege of a later owner is checked even though the
# worker made its temporary schema for an earlier owner's cycle
sq -c "DROP TRIGGER kc_switch ON public.kc_11_d" >/dev/null
enable false kc_11_d kc_12_d
enable true kc_1_a kc_2_b
sq -c "REVOKE TEMPORARY ON DATABASE $DB FROM PUBLIC" -c "GRANT TEMPORARY ON DATABASE $DB TO sec_kc_a" >/dev/null
mark=$(last_run)
sync_all_one_worker
check "the owner with TEMPORARY syncs, the one without fails, in one worker" \
    "kc_1_a=empty kc_2_b=failed" \
    "$(runs_since "$mark" kc_1_a kc_2_b)"
check "its error names the missing privilege" 1 \
    "$(sq -c "SELECT count(*) FROM treble_sync.runs WHERE run_id > $mark AND table_name = 'kc_2_b' AND error LIKE 'permission denied to create temporary tables%'")"
