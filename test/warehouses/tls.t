#!/usr/bin/env bash
#
# Warehouses as production runs them: only TLS, the certificate verified
# (its chain up to a CA the connection names, and the host name), and a
# login with a password. `.ci/clusters tls` starts a TLS-only server of each
# networked warehouse beside the plain-text ones (see its "TLS-only
# warehouses"): a PostgreSQL cluster with only hostssl lines, a MariaDB
# server with require_secure_transport, and nginx terminating TLS in front
# of the ClickHouse engine, whose login is ClickHouse's own. SQLite is a
# file: it has no network, and no TLS to test.
#
# For each of PostgreSQL (psqlODBC), MariaDB (Connector/ODBC) and ClickHouse
# (its ODBC driver, built with TLS):
#
#   verified    a first load and two cycles over TLS with verify-full (or
#               the driver's equivalent) and the test CA are exact
#   refused     a connection that trusts another CA, and a plain-text one,
#               are refused at add_table with a message that says it is a
#               certificate or TLS problem
#   stops       the warehouse's certificate stops verifying (a certificate
#               for another host name, then one of an untrusted CA), then
#               the server's connection string loses its TLS: each cycle
#               fails at once (one attempt, not retried), says why, pulls
#               nothing, and the copy does not change; back to the good
#               one, the next cycle converges
#   login       a wrong password fails the cycle at once, appearing in no
#               message; the warehouse's password is rotated: the cycle
#               fails at once until ALTER USER MAPPING gives the new one,
#               and the next cycle works
#
# and, for ClickHouse, whose driver sets up TLS once per process (the first
# HTTPS connection's CA and mode stay for every later one): a session that
# connected with one set of TLS settings is refused a connection with
# another, rather than reaching a warehouse unverified; and one sync_all()
# in one worker over two servers with different TLS settings cycles both
# (a cycle needing other settings runs in a fresh worker).
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced. Prints TAP.

set -u

REPO=$(cd "$(dirname "$0")/../.." && pwd)
read -r -a WAREHOUSES <<<"${TS_WAREHOUSES:-postgresql mariadb sqlite clickhouse}"
n=0
# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

"$REPO/.ci/clusters" tls "$TS_DIR" >/dev/null 2>&1 \
    || { echo "1..0 # skip the TLS warehouses could not be started (.ci/clusters tls)"; exit 0; }
# shellcheck disable=SC1091
source "$TS_DIR/env"
CA=$TS_TLS_DIR/ca.crt
OTHER_CA=$TS_TLS_DIR/other-ca.crt
TMP=$(mktemp -d)

# back to the good certificate and the first passwords, whatever happened
restore() {
    "$REPO/.ci/clusters" cert "$TS_DIR" server >/dev/null 2>&1
    if [[ -n ${CH_ROTATED:-} ]]; then
        "$REPO/.ci/clusters" clickhouse-password "$TS_DIR" "$TS_CLICKHOUSE_PASSWORD" >/dev/null 2>&1
    fi
    rm -rf "$TMP"
}
trap restore EXIT

q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "ts_tls_$W" "$@"; }

# SQL on the TLS warehouse $W, as its administrator, over its socket (or,
# for ClickHouse, the engine's own plain-text port)
wh() {
    case $W in
        postgresql)
            PGOPTIONS="-c client_min_messages=warning" \
                psql -X -q -At -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WHTLS_PORT" -U postgres -d wh "$@" ;;
        mariadb)
            mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_TLS_SOCK" -uroot -N -B wh ;;
        clickhouse)
            python3 "$REPO/test/warehouses/clickhouse_sql.py" ;;
    esac
}

# The connection string of the TLS server of $W; $1: verified (the test CA,
# host name checked), other-ca (a CA that did not sign it), plain (no TLS)
conn() {
    case $W:$1 in
        postgresql:verified) echo "Driver={PostgreSQL Unicode};Server=localhost;Port=$TS_WHTLS_PORT;Database=wh;SSLmode=verify-full;pqopt={sslrootcert=$CA}" ;;
        postgresql:other-ca) echo "Driver={PostgreSQL Unicode};Server=localhost;Port=$TS_WHTLS_PORT;Database=wh;SSLmode=verify-full;pqopt={sslrootcert=$OTHER_CA}" ;;
        postgresql:plain)    echo "Driver={PostgreSQL Unicode};Server=localhost;Port=$TS_WHTLS_PORT;Database=wh;SSLmode=disable" ;;
        mariadb:verified)    echo "Driver={MariaDB Unicode};Server=localhost;Port=$TS_MARIADB_TLS_PORT;Database=wh;SSLVERIFY=1;SSLCA=$CA" ;;
        mariadb:other-ca)    echo "Driver={MariaDB Unicode};Server=localhost;Port=$TS_MARIADB_TLS_PORT;Database=wh;SSLVERIFY=1;SSLCA=$OTHER_CA" ;;
        mariadb:plain)       echo "Driver={MariaDB Unicode};Server=localhost;Port=$TS_MARIADB_TLS_PORT;Database=wh" ;;
        clickhouse:verified) echo "Driver={ClickHouse ODBC Driver (Unicode)};Url=https://localhost:$TS_CLICKHOUSE_TLS_PORT/;Database=wh;CALocation=$CA" ;;
        clickhouse:other-ca) echo "Driver={ClickHouse ODBC Driver (Unicode)};Url=https://localhost:$TS_CLICKHOUSE_TLS_PORT/;Database=wh;CALocation=$OTHER_CA" ;;
        clickhouse:plain)    echo "Driver={ClickHouse ODBC Driver (Unicode)};Url=http://localhost:$TS_CLICKHOUSE_TLS_PORT/;Database=wh" ;;
    esac
}

user() { if [[ $W == clickhouse ]]; then echo "$TS_CLICKHOUSE_USER"; else echo "$TS_WH_USER"; fi; }
password() { if [[ $W == clickhouse ]]; then echo "${CH_ROTATED:-$TS_CLICKHOUSE_PASSWORD}"; else echo "${ROTATED:-$TS_WH_PASSWORD}"; fi; }

# N rows of keys FIRST.. (a version stamped STAMP + key seconds)
insert_rows() {
    local first=$1 count=$2 stamp=$3 tag=$4
    case $W in
        postgresql) wh <<<"INSERT INTO fact SELECT g, '$tag ' || g || ' ✓', timestamp '$stamp' + g * interval '1 second'
                             FROM generate_series($first, $first + $count - 1) g;" ;;
        mariadb) wh <<<"INSERT INTO fact SELECT seq, CONCAT('$tag ', seq, ' ✓'), TIMESTAMP'$stamp' + INTERVAL seq SECOND
                          FROM seq_${first}_to_$((first + count - 1));" ;;
        clickhouse) wh <<<"INSERT INTO fact SELECT number, concat('$tag ', toString(number), ' ✓'),
                             toDateTime64('$stamp', 6) + toIntervalSecond(number)
                             FROM numbers($first, $count);" ;;
    esac
}

create_table() {
    case $W in
        postgresql) wh <<<"DROP TABLE IF EXISTS fact; CREATE TABLE fact (id bigint NOT NULL, v text, synced_at timestamp(6) NOT NULL);" ;;
        mariadb) wh <<<"DROP TABLE IF EXISTS fact; CREATE TABLE fact (id BIGINT NOT NULL, v VARCHAR(100), synced_at DATETIME(6) NOT NULL) CHARACTER SET utf8mb4;" ;;
        clickhouse) wh <<<"DROP TABLE IF EXISTS fact; CREATE TABLE fact (id Int64, v Nullable(String), synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY id;" >/dev/null ;;
    esac
}

# The warehouse's newest version of each key against the copy: the rows
# that differ (empty: the copy is exact)
diff_copy() {
    case $W in
        postgresql) wh -c "COPY (SELECT id, v, to_char(synced_at, 'YYYY-MM-DD HH24:MI:SS.US') FROM fact) TO STDOUT" ;;
        mariadb) wh <<<"SELECT id, v, DATE_FORMAT(synced_at, '%Y-%m-%d %H:%i:%s.%f') FROM fact" ;;
        clickhouse) wh <<<"SELECT id, v, toString(synced_at) FROM fact FORMAT TSV" ;;
    esac >"$TMP/wh.tsv"
    q <<SQL
CREATE TEMP TABLE w0 (id bigint, v text, synced_at timestamp);
\\copy w0 FROM '$TMP/wh.tsv'
WITH w AS (SELECT DISTINCT ON (id) * FROM w0 ORDER BY id, synced_at DESC),
     l AS (SELECT id, v, synced_at FROM fact)
SELECT 'warehouse only ' || w::text FROM (SELECT * FROM w EXCEPT ALL SELECT * FROM l) w
UNION ALL
SELECT 'copy only ' || l::text FROM (SELECT * FROM l EXCEPT ALL SELECT * FROM w) l;
SQL
}
check_copy() {
    local out
    out=$(diff_copy 2>&1)
    if [[ -z $out ]]; then ok "$1"; else nok "$1"; echo "$out" | head -5 | sed 's/^/#   /'; fi
}

# sync and print "status attempts pulled"; the error in $TMP/error
sync() {
    q -F ' ' -c "SELECT status, attempts, rows_pulled FROM treble_sync.sync_table('fact')"
    q -c "SELECT coalesce(error, '') FROM treble_sync.runs ORDER BY run_id DESC LIMIT 1" >"$TMP/error"
}
fingerprint() { q -c "SELECT count(*) || ' ' || md5(string_agg(t::text, '|' ORDER BY id)) FROM fact t"; }

# add_table on server $1; prints the error (empty if it worked)
add_table_error() {
    q -c "SET client_min_messages = warning" \
      -c "SELECT treble_sync.add_table('fact', '$1', key_columns => '{id}', local_table => 'fact_$1', name => 'fact_$1')" \
      2>&1 >/dev/null
}

make_server() {
    local name=$1 kind=$2
    q -v conn="$(conn "$kind")" -v usr="$(user)" -v pw="$(password)" <<SQL
CREATE SERVER $name FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'conn', max_retries '3');
CREATE USER MAPPING FOR CURRENT_USER SERVER $name OPTIONS (user :'usr', password :'pw');
SQL
}

set_password() {
    q -v pw="$1" <<<"ALTER USER MAPPING FOR CURRENT_USER SERVER verified OPTIONS (SET password :'pw');"
}

# the warehouse's reader gets password $1
rotate() {
    case $W in
        postgresql) wh -v pw="$1" <<<"ALTER ROLE reader PASSWORD :'pw';" ;;
        # the password goes base64-encoded, quoted by the server (as in .ci/clusters)
        mariadb) wh <<<"SET @s = CONCAT('ALTER USER reader@''127.0.0.1'' IDENTIFIED BY ', QUOTE(FROM_BASE64('$(printf %s "$1" | base64 -w0)')));
                        PREPARE s FROM @s; EXECUTE s; DEALLOCATE PREPARE s;" ;;
        clickhouse) "$REPO/.ci/clusters" clickhouse-password "$TS_DIR" "$1" >/dev/null 2>&1 ;;
    esac
}

run_warehouse() {
    local out fp bad

    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ts_tls_$W" \
        -c "CREATE DATABASE ts_tls_$W" >/dev/null
    q <<<"SET client_min_messages = warning; CREATE EXTENSION treble_sync;"
    create_table
    insert_rows 1 2000 '2026-11-20 00:00:00' first
    make_server verified verified
    make_server other_ca other-ca
    make_server plain plain

    # --- verified
    q -c "SELECT treble_sync.add_table('fact', 'verified', key_columns => '{id}')" >/dev/null 2>"$TMP/add.err" \
        || { nok "$W: add_table over verified TLS"; sed 's/^/#   /' "$TMP/add.err"; return; }
    check "$W: a first load over verified TLS succeeds" "success 1 2000" "$(sync)"
    check_copy "$W: and the copy is exact"
    insert_rows 1 100 '2026-11-25 00:00:00' second
    insert_rows 2001 50 '2026-11-25 00:00:00' new
    out=$(sync)
    check "$W: a cycle over verified TLS succeeds" "success 1" "${out% *}"
    check_copy "$W: and the copy is exact"
    insert_rows 2051 10 '2026-11-26 00:00:00' third
    out=$(sync)
    check "$W: a second cycle succeeds" "success 1" "${out% *}"
    check_copy "$W: and the copy is exact"

    # --- refused at add_table
    out=$(add_table_error other_ca)
    match "$W: a connection trusting another CA is refused, as a certificate problem" \
        "*certificate*" "$out"
    check "$W: and nothing is registered" "0" "$(q -c "SELECT count(*) FROM treble_sync.tables WHERE name = 'fact_other_ca'")"
    out=$(add_table_error plain)
    case $W in
        postgresql) match "$W: plain text to the TLS-only server is refused, saying no encryption" "*no encryption*" "$out" ;;
        # MariaDB answers a plain-text login to a require_secure_transport
        # server with its usual "Access denied": the hint names TLS
        mariadb) match "$W: plain text to the TLS-only server is refused" "*Access denied*" "$out" ;;
        clickhouse) match "$W: plain text to the TLS port is refused, as HTTP sent to HTTPS" "*plain HTTP request was sent to HTTPS port*" "$out" ;;
    esac
    check "$W: and nothing is registered" "0" "$(q -c "SELECT count(*) FROM treble_sync.tables WHERE name = 'fact_plain'")"

    # --- the certificate stops verifying: not retried, nothing received
    insert_rows 3001 20 '2026-11-27 00:00:00' unseen
    fp=$(fingerprint)
    "$REPO/.ci/clusters" cert "$TS_DIR" wrong-host >/dev/null 2>&1
    out=$(sync)
    check "$W: a certificate for another host name fails the cycle at once, nothing pulled" "failed 1 0" "$out"
    match "$W: and the error says the certificate does not verify" "*ertificate*" "$(cat "$TMP/error")"
    check "$W: and the copy is unchanged" "$fp" "$(fingerprint)"
    "$REPO/.ci/clusters" cert "$TS_DIR" untrusted >/dev/null 2>&1
    out=$(sync)
    check "$W: a certificate of an untrusted CA fails the cycle at once, nothing pulled" "failed 1 0" "$out"
    match "$W: and the error says the certificate does not verify" "*ertificate*" "$(cat "$TMP/error")"
    check "$W: and the copy is unchanged" "$fp" "$(fingerprint)"
    # the server's connection string loses its TLS: plain text to the
    # TLS-only server, refused at once
    q -v conn="$(conn plain)" <<<"ALTER SERVER verified OPTIONS (SET connection_string :'conn');"
    out=$(sync)
    check "$W: plain text to the TLS-only server fails the cycle at once, nothing pulled" "failed 1 0" "$out"
    check "$W: and the copy is unchanged" "$fp" "$(fingerprint)"
    q -v conn="$(conn verified)" <<<"ALTER SERVER verified OPTIONS (SET connection_string :'conn');"
    "$REPO/.ci/clusters" cert "$TS_DIR" server >/dev/null 2>&1
    out=$(sync)
    check "$W: back to the good certificate, the next cycle converges" "success 1" "${out% *}"
    check_copy "$W: and the copy is exact"

    # --- logins
    bad='Wr0ng-pass.word'
    set_password "$bad"
    out=$(sync)
    check "$W: a wrong password fails the cycle at once" "failed 1 0" "$out"
    if grep -q "$bad" "$TMP/error"; then nok "$W: and the password is in no message"; else ok "$W: and the password is in no message"; fi
    set_password "$(password)"
    if [[ $W == clickhouse ]]; then CH_ROTATED='Rotated-pw.2'; new=$CH_ROTATED; else ROTATED='Rotated-pw.2'; new=$ROTATED; fi
    rotate "$new"
    insert_rows 3021 5 '2026-11-27 00:00:00' rotated
    out=$(sync)
    check "$W: after the warehouse's password is rotated, the old one fails at once" "failed 1 0" "$out"
    set_password "$new"
    out=$(sync)
    check "$W: ALTER USER MAPPING takes effect at the next cycle" "success 1" "${out% *}"
    check_copy "$W: and the copy is exact"
    # back to the first password, for the other suites
    if [[ $W == clickhouse ]]; then
        rotate "$TS_CLICKHOUSE_PASSWORD"; CH_ROTATED=
    else
        rotate "$TS_WH_PASSWORD"; ROTATED=
    fi
    set_password "$(password)"

    if [[ $W == clickhouse ]]; then
        # one process, two sets of TLS settings: the driver would keep the
        # first (here: the test CA) for the second (another CA), and reach
        # the warehouse unverified
        out=$(q -c "SET client_min_messages = warning" \
                -c "SELECT treble_sync.add_table('fact', 'verified', key_columns => '{id}', local_table => 'fact_again', name => 'fact_again')" \
                -c "SELECT treble_sync.add_table('fact', 'other_ca', key_columns => '{id}', local_table => 'fact_other_ca', name => 'fact_other_ca')" 2>&1)
        match "$W: a session that used one CA is refused a connection naming another" "*TLS settings*" "$out"
        check "$W: and nothing is registered" "0" "$(q -c "SELECT count(*) FROM treble_sync.tables WHERE name = 'fact_other_ca'")"

        # one sync_all() over two servers whose TLS settings differ (the
        # same CA, one with SSLMode=require), in one worker: a cycle that
        # needs other settings than the worker's driver was set up with
        # goes to a fresh worker, as it would in a process of its own
        q -v conn="$(conn verified);SSLMode=require" -v usr="$(user)" -v pw="$(password)" <<SQL
CREATE SERVER required FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'conn', max_retries '3');
CREATE USER MAPPING FOR CURRENT_USER SERVER required OPTIONS (user :'usr', password :'pw');
SQL
        out=$(q -c "SET client_min_messages = warning" \
                -c "SELECT treble_sync.add_table('fact', 'required', key_columns => '{id}', local_table => 'fact_required', name => 'fact_required')" 2>&1 >/dev/null)
        check "$W: a table on a second server with other TLS settings is added (a session of its own)" "" "$out"
        # and one more on the first server, after it in the queue
        q -c "SET client_min_messages = warning" \
          -c "SELECT treble_sync.add_table('fact', 'verified', key_columns => '{id}', local_table => 'fact_after', name => 'fact_after')" >/dev/null
        out=$(q -c "SET treble_sync.max_parallel = 1" \
                -c "SELECT string_agg(table_name || ' ' || (status IN ('success', 'empty')), ', ' ORDER BY table_name) FROM treble_sync.sync_all()" 2>&1)
        check "$W: one sync_all() in one worker cycles both servers' tables" \
            "fact true, fact_after true, fact_again true, fact_required true" "$out"
        out=$(q -c "SET treble_sync.max_parallel = 1" \
                -c "SELECT count(*) FILTER (WHERE status IN ('success', 'empty')) || ' of ' || count(*) FROM treble_sync.sync_all()" 2>&1)
        check "$W: and again, with the connections kept" "4 of 4" "$out"
        check "$W: both servers' copies are whole" "2085 2085 2085" \
            "$(q -c "SELECT (SELECT count(*) FROM fact_required) || ' ' || (SELECT count(*) FROM fact_again) || ' ' || (SELECT count(*) FROM fact_after)")"
    fi
}

for W in "${WAREHOUSES[@]}"; do
    case $W in
        sqlite) skip "sqlite: a file, no network and no TLS"; continue ;;
        postgresql) [[ -n ${TS_WHTLS_PORT:-} ]] || { nok "postgresql: no TLS warehouse"; continue; } ;;
        mariadb) [[ -n ${TS_MARIADB_TLS_PORT:-} ]] || { nok "mariadb: no TLS warehouse (mariadbd is not installed)"; continue; } ;;
        clickhouse) [[ -n ${TS_CLICKHOUSE_TLS_PORT:-} ]] || { nok "clickhouse: no TLS endpoint (the engine or nginx is missing)"; continue; } ;;
    esac
    run_warehouse
done
echo "1..$n"
