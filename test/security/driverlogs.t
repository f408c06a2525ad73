#!/usr/bin/env bash
#
# Driver logs of MariaDB Connector/ODBC and the ClickHouse ODBC driver, as
# psqlODBC's (CommLog, Debug) were closed: a data source cannot turn them
# on; only a superuser's connection string can, by naming the key itself.
#
# MariaDB Connector/ODBC (3.1, always built with its trace) writes every
# call, statement and the connection string it is given to maodbc.log in
# the home directory of the server's OS user when bit 4 of OPTIONS (alias
# OPTION) is set. No key but OPTIONS sets that bit, and a role that is not a
# superuser cannot give OPTIONS; a data source can:
#   - a server (a superuser's, or another role's) whose system DSN sets the
#     bit is refused at connect, naming the entry, and no trace is written;
#     such a role's CREATE SERVER naming it is refused too;
#   - a superuser's connection string that sets OPTIONS itself decides
#     (the driver reads the connection string after the DSN): OPTIONS=0 on
#     that DSN syncs and writes no trace.
# The ClickHouse driver logs to DriverLogFile when DriverLog is on; the
# worker appends DriverLog=off unless a superuser's connection string sets
# DriverLog, and the driver takes the connection string over the DSN:
#   - a DSN with DriverLog=on and a DriverLogFile writes no file;
#   - a connection string naming a DriverLogFile without DriverLog writes
#     none either.

DB=sec_driverlogs
ROLES=(sec_dl_user)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TMP=$(mktemp -d /tmp/sec_driverlogs.XXXXXX)
chmod 0777 "$TMP"
cleanup() {
    rm -rf "$TMP"
    finish
}
trap cleanup EXIT
setup_db

MARIA_CS=$(sq -c "SELECT current_setting('treble_test.mariadb_odbc', true)")
CH_CS=$(sq -c "SELECT current_setting('treble_test.clickhouse_odbc', true)")
fdw_user sec_dl_user

# the size of a file, 0 if it does not exist
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
# the mapping of a role on a server with the warehouse's credentials
map() {
    as "$1" -c "DO \$\$ BEGIN EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER $2 OPTIONS (user %L, password %L)', current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password')); END \$\$" >/dev/null
}

if [[ $(id -u) -ne 0 ]]; then
    skip "system DSNs can only be written by root"
    exit
fi

# --- MariaDB
if [[ -n $MARIA_CS ]]; then
    mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" -uroot wh \
        -e "DROP TABLE IF EXISTS sec_dl_t; CREATE TABLE sec_dl_t (id int PRIMARY KEY, v varchar(20), synced_at datetime);
            INSERT INTO sec_dl_t VALUES (1, 'a', '2026-11-28'), (2, 'b', '2026-11-28')"
    PGHOME=$(getent passwd "$(sq -c "SELECT pg_catalog.current_setting('data_directory')" >/dev/null; stat -c %U "$TS_DIR/dest")" | cut -d: -f6)
    TRACE=$PGHOME/maodbc.log
    D=sec_dl_$TS_DEST_PORT
    add_dsn ${D}_trace "Driver=MariaDB Unicode" "Server=127.0.0.1" "Port=$TS_MARIADB_PORT" "Database=wh" "OPTION=4"
    add_dsn ${D}_trace2 "Driver=MariaDB Unicode" "Server=127.0.0.1" "Port=$TS_MARIADB_PORT" "Database=wh" "OPTIONS=6"

    # a superuser's server on the DSN: the dsn option, and a connection
    # string whose FORWARDONLY=0 leaves OPTIONS to the DSN (the driver reads
    # the DSN's OPTIONS only if the connection string set no option bit)
    i=0
    for spec in "dsn '${D}_trace'" "connection_string 'DSN=${D}_trace2;FORWARDONLY=0'"; do
        i=$((i + 1))
        sq -c "CREATE SERVER m_$i FOREIGN DATA WRAPPER treble_sync OPTIONS ($spec)" >/dev/null
        map postgres "m_$i"
        before=$(size "$TRACE")
        try postgres "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_dl_t', 'm_$i', name => 'm_$i', local_table => 'public.m_$i')"
        if ((RC != 0)) && [[ $STATE == HV024 && $ERR == *OPTION* && $ERR == *trace* ]]; then
            ok "a superuser's server ($spec) on a DSN that turns on MariaDB's trace is refused at connect"
        else
            nok "a superuser's server ($spec) on a DSN that turns on MariaDB's trace is refused at connect"
            diag "$OUT"
            diag "$ERR"
        fi
        check "and no trace was written" "$before" "$(size "$TRACE")"
    done

    # the superuser's connection string decides
    sq -c "CREATE SERVER m_off FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string 'DSN=${D}_trace;OPTIONS=0')" >/dev/null
    map postgres m_off
    before=$(size "$TRACE")
    try postgres "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_dl_t', 'm_off', name => 'm_off', local_table => 'public.m_off');
                  SELECT status FROM treble_sync.sync_table('m_off')"
    check "a superuser's connection string setting OPTIONS=0 on that DSN syncs" success "$(tail -n 1 <<<"$OUT")"
    [[ $RC -ne 0 ]] && diag "$ERR"
    check "and writes no trace" "$before" "$(size "$TRACE")"

    # a role that is not a superuser
    refused "CREATE SERVER by a role that is not a superuser, on that DSN, is refused" sec_dl_user \
        "CREATE SERVER m_user FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn '${D}_trace')" "HV024" OPTION "${D}_trace"
    sq -c "CREATE SERVER m_given FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string 'DSN=${D}_trace2;FORWARDONLY=0');
           ALTER SERVER m_given OWNER TO sec_dl_user" >/dev/null
    map sec_dl_user m_given
    before=$(size "$TRACE")
    refused "a server on that DSN given to such a role is refused at connect" sec_dl_user \
        "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_dl_t', 'm_given', name => 'm_given', local_table => 'public.m_given')" \
        "HV024" OPTION
    check "and no trace was written" "$before" "$(size "$TRACE")"
else
    skip "no MariaDB warehouse"
fi

# --- ClickHouse
if [[ -n $CH_CS ]]; then
    clickhouse_q() { curl -sS --data-binary @- "http://127.0.0.1:$TS_CLICKHOUSE_PORT/?database=wh"; }
    echo "DROP TABLE IF EXISTS sec_dl_t" | clickhouse_q
    echo "CREATE TABLE sec_dl_t (id Int32, v String, synced_at DateTime) ENGINE = MergeTree ORDER BY id" | clickhouse_q
    echo "INSERT INTO sec_dl_t VALUES (1, 'a', '2026-11-28 00:00:00'), (2, 'b', '2026-11-28 00:00:00')" | clickhouse_q
    D=sec_dl_$TS_DEST_PORT
    add_dsn ${D}_ch "Driver=ClickHouse ODBC Driver (Unicode)" "Url=http://127.0.0.1:$TS_CLICKHOUSE_PORT/" "Database=wh" \
        "DriverLog=on" "DriverLogFile=$TMP/ch_dsn.log"
    sq -c "CREATE SERVER c_dsn FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn '${D}_ch')" >/dev/null
    sq -c "CREATE USER MAPPING FOR postgres SERVER c_dsn" >/dev/null
    try postgres "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_dl_t', 'c_dsn', key_columns => '{id}', name => 'c_dsn', local_table => 'public.c_dsn');
                  SELECT status FROM treble_sync.sync_table('c_dsn')"
    check "a ClickHouse DSN with DriverLog=on syncs" success "$(tail -n 1 <<<"$OUT")"
    [[ $RC -ne 0 ]] && diag "$ERR"
    check "and writes no driver log" 0 "$(size "$TMP/ch_dsn.log")"

    sq -c "DO \$\$ BEGIN EXECUTE format('CREATE SERVER c_file FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)', current_setting('treble_test.clickhouse_odbc') || ';DriverLogFile=$TMP/ch_cs.log'); END \$\$" >/dev/null
    sq -c "CREATE USER MAPPING FOR postgres SERVER c_file" >/dev/null
    try postgres "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_dl_t', 'c_file', key_columns => '{id}', name => 'c_file', local_table => 'public.c_file');
                  SELECT status FROM treble_sync.sync_table('c_file')"
    check "a ClickHouse connection string naming a DriverLogFile syncs" success "$(tail -n 1 <<<"$OUT")"
    [[ $RC -ne 0 ]] && diag "$ERR"
    check "and writes no driver log" 0 "$(size "$TMP/ch_cs.log")"
else
    skip "no ClickHouse warehouse"
fi
