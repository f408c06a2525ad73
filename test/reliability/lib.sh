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

# Holding a cycle at a phase (treble_sync.test_pause_at, see CONTRIBUTING):
# hold_cycle TABLE takes, in a session of its own, the lock such a cycle of
# TABLE waits for at its phase, pg_advisory_lock(table_id), and keeps it
# until release_cycle; 1 if it could not take it in 10 s.
hold_cycle() {
    local line
    coproc HOLDER { psql -X -q -At -d "$DB"; }
    echo "SELECT 'held' FROM treble_sync.tables WHERE name = '${1//\'/\'\'}'
          AND pg_advisory_lock(table_id) IS NOT NULL;" >&"${HOLDER[1]}"
    read -r -t 10 line <&"${HOLDER[0]}"
    [[ $line == held ]]
}

# End the session of hold_cycle (it may be gone already, with a cluster
# stopped under it), which lets the held cycle go on.
release_cycle() {
    local pid=$HOLDER_PID
    eval "exec ${HOLDER[1]}>&-"
    wait "$pid" 2>/dev/null
    return 0
}

# wait_held TABLE PHASE: wait until a cycle of TABLE waits for hold_cycle's
# lock at PHASE; prints "run_id|worker_pid", or nothing if it did not get
# there in 300 s (a hang: on a loaded machine a cycle may take a minute to
# reach its merge).
wait_held() {
    local held="SELECT p.run_id || '|' || p.worker_pid FROM treble_sync.progress p
                JOIN pg_locks l ON l.pid = p.worker_pid AND l.locktype = 'advisory' AND NOT l.granted
                WHERE p.table_name = '${1//\'/\'\'}' AND p.phase = '${2//\'/\'\'}'"
    q <<SQL
DO \$\$
BEGIN
    WHILE clock_timestamp() < statement_timestamp() + interval '300 s' LOOP
        PERFORM pg_stat_clear_snapshot();
        EXIT WHEN EXISTS ($held);
        PERFORM pg_sleep(0.01);
    END LOOP;
END
\$\$;
$held;
SQL
}

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
