#!/usr/bin/env bash
#
# Odd calls of the registration functions, whose options are read by
# argument name (src/regoption.c), and of explain_cycle(): NULL in every
# position, by a role with LOGIN only and by a treble_sync_admin member;
# explain_cycle() of another owner's table and what it shows of the
# credentials.  Every call must fail with an error or succeed, never crash
# the server.

DB=sec_oc
ROLES=(sec_oc_login sec_oc_a sec_oc_b)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

wh_view sec_oc_src
admins_on_wh sec_oc_a sec_oc_b
add_snapshot sec_oc_a sec_oc_src oc_a

# nulls FUNCTION: the call of FUNCTION with NULL in every position
nulls() {
    local n
    n=$(sq -c "SELECT pronargs FROM pg_proc WHERE oid = '$1'::regproc")
    printf 'SELECT %s(%s)' "$1" "$(printf 'NULL,%.0s' $(seq "$n") | sed 's/,$//')"
}
alive() { check "the server still answers after $1" 1 "$(sq -c 'SELECT 1')"; }

for f in treble_sync.add_table treble_sync.alter_table treble_sync.explain_cycle; do
    refused "$f with NULL everywhere, as a role with LOGIN only" sec_oc_login "$(nulls $f)" 42501
    alive "$f of the LOGIN-only role"
    if [[ $f == treble_sync.explain_cycle ]]; then
        accepted "$f(NULL) as an admin is NULL (strict)" sec_oc_b "$(nulls $f)"
    else
        refused "$f with NULL everywhere, as an admin" sec_oc_b "$(nulls $f)" ""
    fi
    alive "$f of the admin"
done
refused "add_table with only named arguments, each NULL" sec_oc_b \
    "SELECT treble_sync.add_table(name => NULL, server => NULL, key_columns => NULL, remote_table => NULL)" ""
alive "named NULL arguments"
refused "add_table with an empty key array" sec_oc_b \
    "SELECT treble_sync.add_table('sec_oc_src', 'wh', key_columns => '{}', mode => 'snapshot', cursor_column => NULL, name => 'oc_e')" ""
refused "add_table with a NULL element in its key array" sec_oc_b \
    "SELECT treble_sync.add_table('sec_oc_src', 'wh', key_columns => '{NULL}', mode => 'snapshot', cursor_column => NULL, name => 'oc_n')" ""
refused "add_table with a two-dimensional key array" sec_oc_b \
    "SELECT treble_sync.add_table('sec_oc_src', 'wh', key_columns => '{{id},{v}}', mode => 'snapshot', cursor_column => NULL, name => 'oc_2')" 2202E
refused "add_group with a two-dimensional list of tables" sec_oc_a \
    "SELECT treble_sync.add_group('oc_g', '{{oc_a},{oc_a}}')" 2202E
refused "add_check with a NULL among its columns" sec_oc_a \
    "SELECT treble_sync.add_check('oc_a', 'not_null', columns => '{NULL}')" 22004
alive "odd key arrays"
refused "explain_cycle of another owner's table" sec_oc_b "SELECT treble_sync.explain_cycle('oc_a')" 42501
try sec_oc_a "SELECT string_agg(s::text, ' ') FROM treble_sync.explain_cycle('oc_a') s"
check "the owner's explain_cycle succeeds" 0 "$RC"
check "and shows no password" 0 "$(grep -c -F "$TS_WH_PASSWORD" <<<"$OUT")"
