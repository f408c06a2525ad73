# Helpers shared by the warehouse scripts that run in a database of their
# own (attack_bytes.t, bad_input.t, clickhouse_driver.t), sourced after the
# script sets DB, the name of that database. Brings test/tap.sh with it.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER).

set -u

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

# SQL in $DB, tuples only; fails on the first error
q()  { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
# SQL on the ClickHouse warehouse (stdin)
ch() { python3 "$(dirname "${BASH_SOURCE[0]}")/clickhouse_sql.py"; }
# SQL on the MariaDB warehouse (database wh) as root
my() { mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" -uroot wh "$@"; }

# A fresh $DB with the extension.
fresh_db() {
    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" \
        -c "CREATE DATABASE $DB" >/dev/null
    q -c "SET client_min_messages = warning" -c "CREATE EXTENSION treble_sync"
}

# add_server NAME WAREHOUSE [login]: the server NAME on the connection
# string of the destination's setting treble_test.WAREHOUSE_odbc, and a
# user mapping for the current user, with the warehouses' reader login
# (login) or with none (SQLite, and ClickHouse's default user).
add_server() {
    q -v name="$1" -v setting="treble_test.$2_odbc" -v login="${3:-}" >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT format('CREATE SERVER %I FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
              :'name', current_setting(:'setting')) \gexec
SELECT CASE WHEN :'login' = 'login'
            THEN format('CREATE USER MAPPING FOR CURRENT_USER SERVER %I OPTIONS (user %L, password %L)', :'name',
                        current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'))
            ELSE format('CREATE USER MAPPING FOR CURRENT_USER SERVER %I', :'name') END \gexec
SQL
}
