#!/usr/bin/env bash
#
# The wrapper's validator may be called by every role, directly, with any
# options (docs/security.md): it must not let one tie up a backend. A
# connection string is at most 32767 bytes (ODBC passes its length as
# a SQLSMALLINT): a longer one is refused before it is read, whoever gives
# it, and no step of reading or vetting one can run for long without
# answering a cancel.
#
#   - a role with no privileges calls fdw_validator with a connection
#     string of 20,000 distinct keys (about 200 kB): refused as too long
#     (22023), not vetted key by key (which compared every key with every
#     other, minutes for 100,000 keys, deaf to statement_timeout and
#     pg_terminate_backend);
#   - CREATE SERVER by a superuser with such a string is refused the same
#     way;
#   - a string of 32,767 bytes is still read (and refused for what it
#     says, not for its length).

DB=sec_validator
ROLES=(sec_val_nobody)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

long="(SELECT string_agg('k' || g || '=v', ';') FROM generate_series(1, 20000) g)"
refused "a role with no privileges cannot make the validator read a 200 kB connection string" sec_val_nobody \
    "SET statement_timeout = '60s';
     SELECT treble_sync.fdw_validator(ARRAY['connection_string=' || $long], 'pg_foreign_server'::regclass)" \
    22023 "connection string" 32767
refused "nor CREATE SERVER by a superuser" postgres \
    "CREATE SERVER too_long FOREIGN DATA WRAPPER treble_sync
     OPTIONS (connection_string '$(printf 'k%s=v;' $(seq 1 20000))')" \
    22023 "connection string" 32767

# exactly at the limit: read, and judged for what it says
edge="'Driver={none};' || repeat('x', 32767 - 16) || '=1'"
check "a connection string of 32767 bytes is read" 32767 \
    "$(sq -c "SELECT length($edge)")"
refused "and judged for what it says, not for its length" sec_val_nobody \
    "SELECT treble_sync.fdw_validator(ARRAY['connection_string=' || $edge], 'pg_foreign_server'::regclass)" \
    "" "driver"
