#!/usr/bin/env bash
#
# The watermark, load_cut and history_from of treble_sync.tables are read
# only through the status view, by those who may read the table's log.
# The statistics ANALYZE keeps of them (pg_stats: most common values,
# histogram bounds) must not show them to anyone else; nor may any role
# but a superuser set treble_sync.test_pause_at (which holds a cycle on
# pg_advisory_lock(table_id), a lock any role may take) by any way a
# setting reaches a session.

DB=sec_sh
ROLES=(sec_sh_login sec_sh_stats sec_sh_a)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

sq >/dev/null <<'SQL'
GRANT pg_read_all_stats TO sec_sh_stats;
GRANT treble_sync_admin TO sec_sh_a;
SQL
# a registration row with a watermark, then statistics of the catalog
su_server wh treble_test.wh_odbc >/dev/null
sq >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE public.sh_copy (id int PRIMARY KEY, synced_at timestamptz);
SQL
tid=$(sq -c "SET client_min_messages = warning" -c "SELECT table_id FROM treble_sync.add_table('treble_test_rows', 'wh', key_columns => '{id}',
                  local_table => 'public.sh_copy', name => 'sh_copy', create_local => false)" 2>/dev/null | tail -n 1)
[[ -z $tid ]] && tid=$(sq -c "SELECT coalesce(max(table_id), 1) FROM treble_sync.tables")
sq -c "SET session_replication_role = replica" -c "UPDATE treble_sync.tables SET watermark = '2031-07-07 07:07:07+00', load_cut = '2031-07-07 07:07:07+00'" >/dev/null 2>&1
sq -c "ANALYZE treble_sync.tables" >/dev/null

for r in sec_sh_login sec_sh_stats sec_sh_a; do
    check "$r reads no statistics of the watermark, load_cut or history_from in pg_stats" 0 \
        "$(as $r -c "SELECT count(*) FROM pg_stats WHERE schemaname = 'treble_sync' AND tablename = 'tables'
                      AND attname IN ('watermark', 'load_cut', 'history_from')")"
    check "$r finds no 2031 in any statistics it reads" 0 \
        "$(as $r -c "SELECT count(*) FROM pg_stats WHERE schemaname = 'treble_sync'
                      AND (most_common_vals::text LIKE '%2031%' OR histogram_bounds::text LIKE '%2031%')")"
    refused "$r cannot read the watermark's histogram through EXPLAIN" $r \
        "EXPLAIN SELECT 1 FROM treble_sync.tables WHERE watermark > '2031-01-01'" 42501
done

# treble_sync.test_pause_at: before the library is loaded, a role's SET
# makes a placeholder; loading it (a C function of the extension) must
# drop a value a non-superuser set, whatever way it came
GRANT_SQL="GRANT treble_sync_admin TO sec_sh_login"
loaded() { printf '%s' "SELECT count(*) FROM treble_sync.sync_all(); SELECT setting FROM pg_settings WHERE name = 'treble_sync.test_pause_at'"; }
sq -c "$GRANT_SQL" >/dev/null
try sec_sh_login "SET treble_sync.test_pause_at = 'committing'; $(loaded)"
check "a placeholder SET by a non-superuser is dropped when the library loads" "0|" "$(tr '\n' '|' <<<"$OUT")"
try sec_sh_login "SELECT set_config('treble_sync.test_pause_at', 'committing', false); $(loaded)"
check "so is one of set_config()" "committing|0|" "$(tr '\n' '|' <<<"$OUT")"
OUT=$(PGOPTIONS="-c treble_sync.test_pause_at=committing" as sec_sh_login -c "$(loaded)" 2>/dev/null)
check "so is one of PGOPTIONS" "0|" "$(tr '\n' '|' <<<"$OUT")"
refused "once loaded, SET is refused" sec_sh_login \
    "SELECT count(*) FROM treble_sync.sync_all(); SET treble_sync.test_pause_at = 'committing'" 42501
refused "a role cannot ALTER ROLE SET it for itself" sec_sh_login \
    "ALTER ROLE sec_sh_login SET treble_sync.test_pause_at = 'committing'" 42501
refused "an admin cannot ALTER DATABASE SET it" sec_sh_a \
    "ALTER DATABASE $DB SET treble_sync.test_pause_at = 'committing'" 42501
