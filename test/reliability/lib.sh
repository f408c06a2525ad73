# Helpers shared by the reliability suite (test/reliability/*.t), sourced
# by a script after it sets DB, the database of its own it runs in.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER). Prints TAP; the script prints its
# plan and ends with finish.

set -u

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

# SQL in $DB, tuples only; fails on the first error
q()   { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
# SQL on the PostgreSQL warehouse (database wh) as its superuser
whq() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@"; }

# A fresh $DB with the extension, the PostgreSQL warehouse as server wh and
# a user mapping for the current user with the warehouse's login.
setup_db() {
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
    q <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER wh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SQL
}

# Drop $DB and exit with the suite's verdict.
finish() {
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
    exit $((failed > 0))
}
