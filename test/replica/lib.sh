# Helpers shared by the replica suite (test/replica/*.t), sourced by each
# script after it sets DB (its database on the destination).
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_*, PGHOST/PGPORT/PGUSER=postgres), as .ci/run provides. Each
# script makes a hot standby of the destination with `.ci/clusters standby`
# (DIR/standby, TS_STANDBY_PORT), which it stops and removes when it exits.
# Prints TAP, with the plan at the end.

set -u

# The destination's port may have moved since the caller read the env file
# (a script before this one restarted it on another port).
# shellcheck source=/dev/null
source "$TS_DIR/env"
PSQL=$TS_PG_BIN/psql
CLUSTERS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.ci" && pwd)/clusters
WORK=$(mktemp -d)
CYCLE_TIMEOUT=120       # seconds a cycle may take before it counts as hung
STANDBY_PORT=
n=0

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
# SQL on the primary (the destination) and on the standby, in $DB, tuples
# only, stopping at the first error; and on the warehouse.
primary() { "$PSQL" -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
standby() { "$PSQL" -X -q -At -v ON_ERROR_STOP=1 -p "$STANDBY_PORT" -d "$DB" "$@"; }
wh()      { "$PSQL" -X -q -At -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@"; }

pg_ctl_as() { $TS_AS_PG "$TS_PG_BIN/pg_ctl" "$@"; }
running()   { pg_ctl_as status -D "$1" >/dev/null 2>&1; }

# A fresh hot standby of the destination as it is now.
make_standby() {
    "$CLUSTERS" standby "$TS_DIR" >"$WORK/standby.out" 2>&1 \
        || { cat "$WORK/standby.out" >&2; echo "Bail out! cannot make a standby"; exit 1; }
    STANDBY_PORT=$(sed -n "s/^export TS_STANDBY_PORT=//p" "$TS_DIR/env")
    STANDBY_PGDATA=$TS_DIR/standby
}

# Stop and remove the standby (or the primary it was promoted to).
drop_standby() {
    [[ -n $STANDBY_PORT ]] || return 0
    running "$STANDBY_PGDATA" && pg_ctl_as stop -D "$STANDBY_PGDATA" -m immediate -w -t 60 >/dev/null
    rm -rf "$STANDBY_PGDATA"
    STANDBY_PORT=
}

# Wait (up to 60 s) until the standby has replayed (with "received": only
# received) everything the primary has written so far.
wait_replayed() {
    local lsn i fn=pg_last_wal_replay_lsn
    [[ ${1:-} == received ]] && fn=pg_last_wal_receive_lsn
    lsn=$(primary -c 'SELECT pg_current_wal_lsn()')
    for ((i = 0; i < 600; i++)); do
        [[ $(standby -c "SELECT $fn() >= '$lsn'::pg_lsn" 2>/dev/null) == t ]] && return 0
        sleep 0.1
    done
    return 1
}

# Evaluate a query on a server (primary or standby) every 100 ms until it
# returns a non-empty value; prints it, or nothing after $3 seconds.
wait_for() {    # wait_for primary|standby QUERY [TIMEOUT]
    local out i
    for ((i = 0; i < ${3:-60} * 10; i++)); do
        out=$("$1" -c "$2" 2>/dev/null)
        [[ -n $out ]] && { echo "$out"; return 0; }
        sleep 0.1
    done
}

# The copy and the warehouse table, fingerprinted the same way on both
# sides: rows, distinct ids, and an md5 of every row in id order.
fingerprint() {     # fingerprint primary|standby|wh TABLE
    "$1" <<<"SET datestyle = ISO;
SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || coalesce(md5(string_agg(t::text, ',' ORDER BY id)), '-') FROM $2 t"
}

# Run one cycle on a server (primary or standby: the one it was promoted
# to); prints status|rows_pulled|error.
cycle() {   # cycle primary|standby TABLE
    local port=$PGPORT
    [[ $1 == standby ]] && port=$STANDBY_PORT
    timeout "$CYCLE_TIMEOUT" "$PSQL" -X -q -At -p "$port" -d "$DB" \
        -c "SELECT status || '|' || rows_pulled || '|' || coalesce(error, '')
            FROM treble_sync.sync_table('$2')" 2>&1
}

# The warehouse's newest synced_at, as the watermark text a cycle sets.
wh_cut() { wh -c "SELECT to_char(max(synced_at), 'YYYY-MM-DD HH24:MI:SS') FROM $1"; }
watermark() { "$1" -c "SELECT coalesce(watermark, '<none>') FROM treble_sync.tables WHERE name = '$2'"; }

# A database of our own on the destination, with the extension, the
# PostgreSQL warehouse as server "repwh" and the caller's mapping.
setup_db() {
    "$PSQL" -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL || { echo "Bail out! cannot create database $DB"; exit 1; }
SET client_min_messages = warning;
DROP DATABASE IF EXISTS $DB WITH (FORCE);
CREATE DATABASE $DB;
SQL
    primary >/dev/null <<'SQL' || { echo "Bail out! cannot set up database $DB"; exit 1; }
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER repwh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER repwh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SQL
}

# Start the destination again after a stop or a crash (crash recovery). If
# its port was taken meanwhile (other servers on this machine), let
# .ci/clusters give it another one and follow it there.
restart_dest() {
    running "$TS_DEST_PGDATA" && return 0
    pg_ctl_as start -D "$TS_DEST_PGDATA" -l "$TS_DIR/dest.log" -w -t 60 >/dev/null 2>&1 && return 0
    "$CLUSTERS" start "$TS_DIR" >"$WORK/restart.out" 2>&1 || { cat "$WORK/restart.out" >&2; return 1; }
    # shellcheck source=/dev/null
    source "$TS_DIR/env"
}

# Whatever happened: no standby left, the destination running, our
# database dropped; the plan.
finish() {
    local pid
    for pid in $(jobs -p); do
        kill "$pid" 2>/dev/null
    done
    drop_standby
    restart_dest || echo "# could not restart the destination" >&2
    "$PSQL" -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
    rm -rf "$WORK"
    echo "1..$n"
}
trap finish EXIT
trap 'exit 130' INT TERM
