#!/usr/bin/env bash
#
# One endpoint per server: a role that is not a superuser, granted USAGE on
# the wrapper (as docs/security.md describes), must not make the worker
# reach a Unix socket, where a packaged cluster trusts its own OS user
# (`local all postgres peer`).
#
# The target is a cluster of this script's own, laid out as Debian packages
# one: its socket in libpq's default directory (/var/run/postgresql) and on
# an abstract socket, `local all postgres peer`, and a password (scram)
# for every TCP connection. A server that reaches it over TCP with a made-up
# password is refused by the cluster; one that reaches a socket logs in as
# postgres and copies any table. Every attack below is tried twice: at
# CREATE SERVER by the non-superuser (the validator), and at connect on a
# server a superuser created and gave to it (a server made before the rule,
# or changed hands). Each is refused with an error naming the key, and the
# attacker's copy receives nothing:
#
#   - psqlODBC reads Server and Servername into one field, the last one
#     winning: Server=127.0.0.1;Servername= (empty host: the default
#     socket), in either order and any case;
#   - Server=@name (an abstract socket), Server=,127.0.0.1 (a libpq host
#     list whose empty entry is the socket), Server=/dir (a socket
#     directory), a port that is not a number;
#   - a DSN: one without a Servername (a DSN for local use), one with a host
#     but a Servername= after it in the connection string, and one changed
#     in odbc.ini after the server was created;
#   - MariaDB: SOCKET=, NamedPipe=, TCPIP=0, OPTION= and a SERVERNAME= after
#     SERVER= are refused (the driver forces TCP otherwise, localhost
#     included); as root, a lax MariaDB server of the script's own listens
#     only on the driver's default socket (/run/mysqld/mysqld.sock), where
#     it logs the worker's operating-system user in whatever the password
#     (a superuser's server naming that socket copies its secret, the
#     control): a non-superuser's Server=localhost without a Port goes to
#     TCP port 3306 instead, fails there, and copies nothing;
#   - ClickHouse and SQLite are refused outright for such a server;
#   - characters unixODBC narrows to ; = / and NUL (U+013B, U+013D, U+012F,
#     U+0100) in a mapping's password, on such a server and on a
#     superuser's, or in a connection string's value: they would make the
#     driver manager load another driver (psqlODBC ANSI, SQLite) that reads
#     the added keys and not the vetted host, and run ConnSettings as
#     postgres on the local socket;
#   - psqlODBC's abbreviations (CX, A6 ConnSettings, B2/B3 the logs, D5
#     pqopt, AB, DX, A7), libpq's keys, unixODBC's (FILEDSN, SAVEFILE,
#     DMConnAttr, DMEnvAttr), SQLite's LoadExt, a tab before a key, a key
#     spelled with spaces, a library as Driver, ports and hosts in other
#     forms (+P, "P ", 0x..., 0P, [::1]) are refused; a Database= holding
#     libpq's host=@..., Server=127.1 and passwords holding } ; and keys go
#     over TCP, where the made-up password is refused;
#   - the legitimate servers still work: a driver string and a DSN to the
#     warehouse, which the worker reaches with the host and port appended
#     last.

DB=sec_endpoint
ROLES=(sec_ep_user)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TMP=$(mktemp -d /tmp/sec_endpoint.XXXXXX)
chmod 0777 "$TMP"
LAX=$TMP/lax
cleanup() {
    if [[ -f $LAX/postmaster.pid ]]; then
        $TS_AS_PG "$TS_PG_BIN/pg_ctl" stop -D "$LAX" -m immediate -w >/dev/null 2>&1
    fi
    if [[ -f $MLAX/mariadbd.pid ]]; then
        mariadb-admin --no-defaults -S "$MLAX_SOCK" -uroot shutdown >/dev/null 2>&1 ||
            kill "$(cat "$MLAX/mariadbd.pid")" 2>/dev/null
    fi
    rm -rf "$TMP"
    finish
}
trap cleanup EXIT
setup_db

PG_CS=$(sq -c "SELECT current_setting('treble_test.wh_odbc')")
MARIA_CS=$(sq -c "SELECT current_setting('treble_test.mariadb_odbc', true)")
CH_CS=$(sq -c "SELECT current_setting('treble_test.clickhouse_odbc', true)")
LITE_CS=$(sq -c "SELECT current_setting('treble_test.sqlite_odbc')")

fdw_user sec_ep_user
whq -c "DROP TABLE IF EXISTS sec_ep_t" \
    -c "CREATE TABLE sec_ep_t (id int PRIMARY KEY, v text, synced_at timestamp)" \
    -c "INSERT INTO sec_ep_t VALUES (1, 'a', '2026-11-28'), (2, 'b', '2026-11-28')"

# --- the lax cluster
# libpq's default socket directory, where the worker's libpq goes for an
# empty host
SOCKDIR=/var/run/postgresql
LAX_PORT=
for ((i = 0; i < 200; i++)); do
    p=$((55000 + RANDOM % 1000))
    if [[ -z $(ss -Hltn "sport = :$p" 2>/dev/null) && ! -e $SOCKDIR/.s.PGSQL.$p ]]; then
        LAX_PORT=$p
        break
    fi
done
LAX_OK=false
if [[ -n $LAX_PORT ]] && $TS_AS_PG test -w "$SOCKDIR" &&
    $TS_AS_PG "$TS_PG_BIN/initdb" -D "$LAX" --no-sync -U postgres --auth-local=peer \
        --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >"$TMP/initdb.log" 2>&1; then
    $TS_AS_PG tee -a "$LAX/postgresql.conf" >/dev/null <<CONF
port = $LAX_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$SOCKDIR, @sec_endpoint_$LAX_PORT'
fsync = off
CONF
    $TS_AS_PG tee "$LAX/pg_hba.conf" >/dev/null <<HBA
local all postgres peer
local all all reject
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
HBA
    if $TS_AS_PG "$TS_PG_BIN/pg_ctl" start -D "$LAX" -l "$TMP/lax.log" -w -t 60 >/dev/null 2>&1; then
        LAX_OK=true
    fi
fi
laxq() { $TS_AS_PG "$TS_PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCKDIR" -p "$LAX_PORT" -U postgres -d postgres "$@"; }
if $LAX_OK; then
    laxq >/dev/null <<SQL
CREATE TABLE lax_secret (id int PRIMARY KEY, secret text, synced_at timestamp);
INSERT INTO lax_secret VALUES (1, 'the crown jewels', '2026-11-28');
SQL
fi

# --- the lax MariaDB server: listening only on the driver's default
# Unix socket (MariaDB Connector/C's MARIADB_UNIX_ADDR), where it logs in
# the operating-system user postgres, which the worker runs as, whatever
# password it is given (unix_socket); no TCP at all. Started only as root,
# when MariaDB is installed and nothing else is on that socket; and by one
# script at a time on the machine (two test runs at once: the second skips
# these tests), under a lock held until the script exits.
MLAX=$TMP/mlax
MLAX_SOCK=/run/mysqld/mysqld.sock
MLAX_OK=false
if [[ -n $MARIA_CS && $(id -u) -eq 0 && -d ${MLAX_SOCK%/*} ]] && exec 9>"${MLAX_SOCK%/*}/treble_sync_endpoint.lock" &&
    flock -n 9 && [[ ! -e $MLAX_SOCK ]] && id mysql >/dev/null 2>&1 &&
    mkdir -p "$MLAX" && chown mysql "$MLAX" &&
    mariadb-install-db --no-defaults --datadir="$MLAX" --user=mysql --auth-root-authentication-method=socket \
        --skip-test-db >"$TMP/mlax.install" 2>&1; then
    setsid /usr/sbin/mariadbd --no-defaults --datadir="$MLAX" --user=mysql --skip-networking \
        --socket="$MLAX_SOCK" --pid-file="$MLAX/mariadbd.pid" --log-error="$TMP/mlax.log" \
        --skip-log-bin --innodb-buffer-pool-size=16M </dev/null >/dev/null 2>&1 &
    for ((i = 0; i < 300; i++)); do
        if mariadb-admin --no-defaults -S "$MLAX_SOCK" -uroot ping >/dev/null 2>&1; then
            MLAX_OK=true
            break
        fi
        sleep 0.1
    done
fi
if $MLAX_OK; then
    mariadb --no-defaults -S "$MLAX_SOCK" -uroot >/dev/null <<'SQL'
CREATE DATABASE wh;
CREATE TABLE wh.lax_secret (id INT PRIMARY KEY, secret VARCHAR(40), synced_at DATETIME(6));
INSERT INTO wh.lax_secret VALUES (1, 'the crown jewels', '2026-11-28');
CREATE USER postgres@localhost IDENTIFIED VIA unix_socket;
GRANT SELECT ON wh.* TO postgres@localhost;
SQL
fi

# an SQL literal
lit() { printf "'%s'" "${1//\'/\'\'}"; }
create_server() { echo "CREATE SERVER $1 FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string $(lit "$2"))"; }
# steal SERVER COPY: register the lax cluster's secret table and pull it
steal() {
    echo "SELECT name FROM treble_sync.add_table('lax_secret', '$1', key_columns => '{id}',
                                                  name => '$2', local_table => '$2');
          SELECT status FROM treble_sync.sync_table('$2')"
}
# how many secret rows the attacker's copy holds
stolen() {
    as sec_ep_user -c "SELECT count(*) FROM $1 WHERE secret = 'the crown jewels'" 2>/dev/null || echo 0
}
nothing_copied() {
    check "$1: the attacker's copy received nothing" 0 "$(stolen "$2")"
}
# syncs NAME SERVER COPY: the non-superuser maps itself to the warehouse's
# real credentials on its SERVER, registers sec_ep_t as COPY and syncs it
syncs() {
    map_reader sec_ep_user "$2" >/dev/null
    try sec_ep_user "SELECT name FROM treble_sync.add_table('sec_ep_t', '$2', key_columns => '{id}', name => '$3', local_table => '$3');
                     SELECT status FROM treble_sync.sync_table('$3')"
    check "$1" success "$(tail -n 1 <<<"$OUT")"
    ((RC != 0)) && diag "$(head -n 3 <<<"$ERR")"
}

# attack NAME KEY CONNECTION_STRING: refused at CREATE SERVER by the
# non-superuser, naming KEY; and refused at connect, naming KEY, on the same
# string in a server a superuser created and gave away, with nothing copied
srv=0
attack() {
    local name=$1 key=$2 cs=$3
    srv=$((srv + 1))
    refused "CREATE SERVER: $name is refused, naming $key" sec_ep_user \
        "$(create_server a_$srv "$cs")" "HV00D|HV024|HV00J" "$key"
    sq -c "$(create_server g_$srv "$cs")" -c "ALTER SERVER g_$srv OWNER TO sec_ep_user" >/dev/null
    as sec_ep_user -c "CREATE USER MAPPING FOR CURRENT_USER SERVER g_$srv OPTIONS (user 'postgres', password 'anything')" >/dev/null
    refused "at connect: $name is refused, naming $key" sec_ep_user \
        "$(steal g_$srv c_$srv)" "HV00D|HV024|HV00J" "$key"
    nothing_copied "$name" c_$srv
}

LAXHOST="Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$LAX_PORT;Database=postgres"
if $LAX_OK; then
    # the control: over TCP the lax cluster wants the real password
    sq -c "$(create_server tcp_only "$LAXHOST")" -c "ALTER SERVER tcp_only OWNER TO sec_ep_user" >/dev/null
    as sec_ep_user -c "CREATE USER MAPPING FOR CURRENT_USER SERVER tcp_only OPTIONS (user 'postgres', password 'anything')" >/dev/null
    refused "control: over TCP a made-up password is refused by the cluster" sec_ep_user \
        "$(steal tcp_only c_tcp)" "" "password"
    nothing_copied "control" c_tcp

    attack "psqlODBC Server=127.0.0.1;Servername= (empty host, the default socket)" Servername \
        "Driver={PostgreSQL Unicode};Server=127.0.0.1;Servername=;Port=$LAX_PORT;Database=postgres"
    attack "psqlODBC Servername=127.0.0.1;Server= (the other order)" Server \
        "Driver={PostgreSQL Unicode};Servername=127.0.0.1;Port=$LAX_PORT;Database=postgres;Server="
    attack "psqlODBC SERVER=127.0.0.1;servername= (other case)" servername \
        "Driver={PostgreSQL Unicode};SERVER=127.0.0.1;Port=$LAX_PORT;Database=postgres;servername="
    attack "psqlODBC Server=@name (an abstract socket)" Server \
        "Driver={PostgreSQL Unicode};Server=@sec_endpoint_$LAX_PORT;Port=$LAX_PORT;Database=postgres"
    attack "psqlODBC Server=,127.0.0.1 (a host list with an empty host)" Server \
        "Driver={PostgreSQL Unicode};Server=,127.0.0.1;Port=$LAX_PORT;Database=postgres"
    attack "psqlODBC Server= a socket directory" Server \
        "Driver={PostgreSQL Unicode};Server=$SOCKDIR;Port=$LAX_PORT;Database=postgres"
    attack "psqlODBC a port list" Port \
        "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$LAX_PORT,$LAX_PORT;Database=postgres"
else
    for ((i = 0; i < 24; i++)); do skip "no lax cluster (needs $SOCKDIR writable by the server's OS user)"; done
fi

# --- characters unixODBC reads as others
# The worker hands its connection string to unixODBC as UTF-16
# (SQLDriverConnectW). To find DRIVER and DSN, unixODBC 2.3.11 narrows every
# UTF-16 unit to its low byte (__parse_connection_string_w passes no
# connection to unicode_to_ansi_copy, so it never uses iconv), and it narrows
# the same way what it hands a driver without wide functions (psqlodbca.so,
# libsqlite3odbc.so) once iconv runs out of room: U+013B is then ';', U+013D
# '=', U+012F '/' and U+0100 ends the string. A value holding them (a
# mapping's password, any value of a connection string) adds keys that
# option.c never saw: the last DRIVER= wins in unixODBC, which loads that
# library, and an ANSI driver reads the added keys and nothing after U+0100
# (so not the vetted host appended last).
# u16 PLAIN TEXT: an SQL literal of PLAIN then TEXT, where TEXT's ; = / and
# \x01 are written as the characters unixODBC narrows to ; = / and NUL
u16() {
    local p=$1 s=$2
    p=${p//\\/\\\\}; p=${p//\'/\'\'}
    s=${s//\\/\\\\}; s=${s//\'/\'\'}
    s=${s//;/\\013B}; s=${s//=/\\013D}; s=${s//\//\\012F}; s=${s//$'\x01'/\\0100}
    printf "U&'%s%s'" "$p" "$s"
}
# lax_has TABLE: whether the lax cluster has that table (something ran SQL
# there as postgres)
lax_has() { laxq -c "SELECT count(*) FROM pg_tables WHERE tablename = '$1'"; }
# narrowed_mapping NAME SERVER LITERAL: sec_ep_user's mapping on SERVER may
# not be given LITERAL as its password; a mapping made before the rule is
# then forced to hold it (a catalog update, by the superuser), so that the
# check at connect is tried too
narrowed_mapping() {
    as sec_ep_user -c "CREATE USER MAPPING FOR CURRENT_USER SERVER $2 OPTIONS (user 'postgres', password 'anything')" >/dev/null
    refused "ALTER USER MAPPING: $1 is refused, naming password" sec_ep_user \
        "ALTER USER MAPPING FOR CURRENT_USER SERVER $2 OPTIONS (SET password $3)" HV024 password
    sq -c "UPDATE pg_catalog.pg_user_mapping SET umoptions = ARRAY['user=postgres', 'password=' || $3]
           WHERE umuser = 'sec_ep_user'::regrole AND umserver = (SELECT oid FROM pg_foreign_server WHERE srvname = '$2')" >/dev/null
}
if $LAX_OK; then
    # a server a non-superuser owns, as vetted: the lax cluster over TCP,
    # where the password is what keeps it out
    as sec_ep_user -c "$(create_server nar_own "$LAXHOST")" >/dev/null
    narrowed_mapping "a password narrowed into DRIVER=PostgreSQL ANSI;Servername=;...;ConnSettings=" nar_own \
        "$(u16 "" "x;DRIVER=PostgreSQL ANSI;Servername=;UID=postgres;ConnSettings=CREATE TABLE sec_ep_pwned_1 (id int)"$'\x01')"
    refused "at connect: a mapping's password that unixODBC narrows into DRIVER=PostgreSQL ANSI;Servername= is refused, naming password" sec_ep_user \
        "$(steal nar_own c_nar1)" HV024 password
    check "... and nothing ran on the local socket as postgres (ConnSettings)" 0 "$(lax_has sec_ep_pwned_1)"
    nothing_copied "a narrowed password on a non-superuser's server" c_nar1

    # a superuser's server, which the documented role only uses: USAGE and
    # a mapping of its own
    sq -c "$(create_server nar_su "$LAXHOST")" -c "GRANT USAGE ON FOREIGN SERVER nar_su TO sec_ep_user" >/dev/null
    narrowed_mapping "on a superuser's server, a password narrowed into DRIVER=PostgreSQL ANSI;Servername=" nar_su \
        "$(u16 "" "x;DRIVER=PostgreSQL ANSI;Servername=;UID=postgres;ConnSettings=CREATE TABLE sec_ep_pwned_2 (id int)"$'\x01')"
    refused "at connect: on a superuser's server, a mapping's password narrowed into DRIVER=PostgreSQL ANSI;Servername= is refused, naming password" sec_ep_user \
        "$(steal nar_su c_nar2)" HV024 password
    check "... and nothing ran on the local socket as postgres (ConnSettings)" 0 "$(lax_has sec_ep_pwned_2)"
    nothing_copied "a narrowed password on a superuser's server" c_nar2

    # the driver manager loads a driver the vetting refuses (SQLite), which
    # creates its database file wherever the narrowed Database= says; the
    # server was made by a superuser and given away
    PWNED=$TMP/sec_ep_pwned_3
    sq -c "CREATE SERVER nar_lite FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string $(u16 "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$LAX_PORT;Database=" "$PWNED"))" \
       -c "ALTER SERVER nar_lite OWNER TO sec_ep_user" >/dev/null
    narrowed_mapping "a password narrowed into DRIVER=SQLite3" nar_lite "$(u16 "" "x;DRIVER=SQLite3")"
    refused "at connect: a Database= and a password narrowed into a path and DRIVER=SQLite3 are refused" sec_ep_user \
        "$(steal nar_lite c_nar3)" HV024
    check "... and the SQLite driver created no file" no "$([[ -e $PWNED ]] && echo yes || echo no)"

    # the vetting itself: a connection string's value holding such characters
    refused "CREATE SERVER: a Database= value holding characters unixODBC narrows to ;DRIVER= is refused, naming Database" sec_ep_user \
        "CREATE SERVER nar_db FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string $(u16 "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$LAX_PORT;Database=" "postgres;DRIVER=SQLite3"))" \
        HV024 Database
    # characters below U+0100 are their own low byte: still accepted
    accepted "CREATE SERVER: a Database= value holding Latin-1 letters is accepted" sec_ep_user \
        "$(create_server nar_latin1 "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$LAX_PORT;Database=caf$(printf '\u00e9')")"
else
    for ((i = 0; i < 13; i++)); do skip "no lax cluster (needs $SOCKDIR writable by the server's OS user)"; done
fi

# --- keys the driver, libpq or unixODBC would read otherwise: every
# abbreviation, alias and layer is off the allow-list
if $LAX_OK; then
    for kv in "CX=1c305008b" "A6=SELECT 1" "B2=1" "B3=1" "D5=host=@x" "AB=0x1" "DX=postgres" "A7=1" \
        "pqopt=host=@x" "ConnSettings=SELECT 1" "Protocol=7.4-1" "sslrootcert=x" "sslkey=x" \
        "FILEDSN=x" "SAVEFILE=x" "DMConnAttr=x" "DMEnvAttr=x" "ODBCINI=x" "LoadExt=x" "Debug=1" "CommLog=1" \
        $'\tServername=x'; do
        refused "CREATE SERVER: psqlODBC ${kv%%=*} is refused" sec_ep_user \
            "$(create_server k_$n "$LAXHOST;$kv")" "HV00D|HV024"
    done
    # a key with spaces around it is the same key: a second host setting
    refused "CREATE SERVER: 'Servername =' after Server= is refused as a second host" sec_ep_user \
        "$(create_server k_$n "$LAXHOST;Servername =")" HV00D Servername
    refused "CREATE SERVER: a second, spaced Driver is refused" sec_ep_user \
        "$(create_server k_$n "$LAXHOST; driver ={SQLite3}")" "HV00A|HV00D"
    # the driver manager keeps a key's spaces: "Driver =" names no driver
    # there (it would fall back to a [Default] data source)
    refused "CREATE SERVER: a Driver key with a space before its = is refused" sec_ep_user \
        "$(create_server k_$n "Driver ={PostgreSQL Unicode};Server=127.0.0.1;Port=$LAX_PORT")" HV00A Driver
    refused "CREATE SERVER: a DSN key with a space before it is refused" sec_ep_user \
        "$(create_server k_$n "Port=$LAX_PORT; DSN=nosuch")" HV00A DSN
    refused "CREATE SERVER: Driver naming the library of a registered driver is refused" sec_ep_user \
        "$(create_server k_$n "Driver=psqlodbcw.so;Server=127.0.0.1;Port=$LAX_PORT")" HV024 psqlodbcw
    for port in "+$LAX_PORT" "$LAX_PORT " "0x1538" "0$LAX_PORT" "65536" "0"; do
        refused "CREATE SERVER: port '$port' is refused" sec_ep_user \
            "$(create_server k_$n "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$port")" HV024 Port
    done
    refused "CREATE SERVER: host [::1] is refused" sec_ep_user \
        "$(create_server k_$n "Driver={PostgreSQL Unicode};Server=[::1];Port=$LAX_PORT")" HV024 Server

    # held at connect: TCP with a made-up password, whatever else is said
    held() {
        local name=$1 cs=$2 pw=$3
        srv=$((srv + 1))
        as sec_ep_user -c "$(create_server h_$srv "$cs")" >/dev/null
        as sec_ep_user -c "CREATE USER MAPPING FOR CURRENT_USER SERVER h_$srv OPTIONS (user 'postgres', password $(lit "$pw"))" >/dev/null
        refused "at connect: $name goes over TCP, where the password is wrong" sec_ep_user \
            "$(steal h_$srv c_h$srv)" "" password
        nothing_copied "$name" c_h$srv
    }
    # psqlODBC gives Database to libpq as dbname, never expanded
    held "Database holding host=@abstract dbname=" \
        "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$LAX_PORT;Database=host=@sec_endpoint_$LAX_PORT dbname=postgres" anything
    held "Server=127.1" "Driver={PostgreSQL Unicode};Server=127.1;Port=$LAX_PORT;Database=postgres" anything
    accepted "CREATE SERVER: Server=localhost. (a trailing dot, a name resolved for TCP) is accepted" sec_ep_user \
        "$(create_server k_$n "Driver={PostgreSQL Unicode};Server=localhost.;Port=$LAX_PORT;Database=postgres")"
    # a password braced with } doubled: nothing in it is a key
    held "a password holding };Servername=@...;{" "$LAXHOST" "x};Servername=@sec_endpoint_$LAX_PORT;UID={postgres}}"
    held "a password holding }}} and a Servername= after a doubled brace" "$LAXHOST" "}}}};Servername=;Debug=1"
else
    for ((i = 0; i < 41; i++)); do skip "no lax cluster (needs $SOCKDIR writable by the server's OS user)"; done
fi

# --- DSNs (system DSNs: root only)
if $LAX_OK && [[ $(id -u) -eq 0 ]]; then
    D=sec_ep_$TS_DEST_PORT
    add_dsn ${D}_local "Port=$LAX_PORT" "Database=postgres"
    add_dsn ${D}_lax "Servername=127.0.0.1" "Port=$LAX_PORT" "Database=postgres"
    add_dsn ${D}_chg "Servername=127.0.0.1" "Port=$LAX_PORT" "Database=postgres"
    attack "a DSN without a Servername (the local socket)" Servername "DSN=${D}_local"
    attack "a DSN with a host and a Servername= after it" Servername "DSN=${D}_lax;Servername="
    refused "CREATE SERVER: a dsn option naming a DSN without a Servername is refused" sec_ep_user \
        "CREATE SERVER d_opt FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn '${D}_local')" "HV00D|HV024|HV00J" Servername

    # libpq keywords in a DSN's pqopt that could name another host
    add_dsn ${D}_pqopt "Servername=127.0.0.1" "Port=$LAX_PORT" "Database=postgres" "pqopt=host=$SOCKDIR"
    attack "a DSN whose pqopt names a host" pqopt "DSN=${D}_pqopt"

    # a DSN changed after the server was created
    accepted "CREATE SERVER: a DSN with a host is accepted" sec_ep_user \
        "CREATE SERVER d_chg FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn '${D}_chg');
         CREATE USER MAPPING FOR CURRENT_USER SERVER d_chg OPTIONS (user 'postgres', password 'anything')"
    add_dsn ${D}_chg "Port=$LAX_PORT" "Database=postgres"
    refused "at connect: a DSN whose Servername was removed in odbc.ini is refused" sec_ep_user \
        "$(steal d_chg c_chg)" "HV00D|HV024|HV00J" Servername
    nothing_copied "a DSN changed in odbc.ini" c_chg

    # the legitimate DSN: the warehouse, with its real credentials
    add_dsn ${D}_wh "Servername=127.0.0.1" "Port=$TS_WH_PORT" "Database=wh"
    as sec_ep_user -c "CREATE SERVER d_wh FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn '${D}_wh')" >/dev/null
    syncs "a non-superuser's DSN server to the warehouse syncs" d_wh ok_dsn
else
    for ((i = 0; i < 13; i++)); do skip "system DSNs need root and the lax cluster"; done
fi

# --- the legitimate driver string: the warehouse, with its real credentials
as sec_ep_user -c "$(create_server s_wh "$PG_CS")" >/dev/null
syncs "a non-superuser's psqlODBC server to the warehouse syncs" s_wh ok_cs
check "its copy holds the warehouse's rows" 2 "$(as sec_ep_user -c "SELECT count(*) FROM ok_cs" 2>&1)"

# localhost is a TCP host for psqlODBC (libpq resolves it; only an empty
# host, a path or @name is a socket)
accepted "CREATE SERVER: psqlODBC Server=localhost is accepted" sec_ep_user \
    "$(create_server s_localhost "Driver={PostgreSQL Unicode};Server=localhost;Port=$TS_WH_PORT;Database=wh")"

# --- MariaDB: TCP unless a socket or pipe is asked for
if [[ -n $MARIA_CS ]]; then
    for extra in "SOCKET=" "SOCKET=mysqld.sock" "NamedPipe=1" "TCPIP=0" "OPTION=8192" "USE_MYCNF=1"; do
        refused "CREATE SERVER: MariaDB $extra is refused, naming ${extra%%=*}" sec_ep_user \
            "$(create_server m_$n "$MARIA_CS;$extra")" "HV00D|HV024|HV00J" "${extra%%=*}"
    done
    refused "CREATE SERVER: MariaDB SERVER=127.0.0.1;SERVERNAME= is refused, naming SERVERNAME" sec_ep_user \
        "$(create_server m_$n "$MARIA_CS;SERVERNAME=")" "HV00D|HV024|HV00J" SERVERNAME
    refused "CREATE SERVER: MariaDB SERVER= empty is refused, naming Server" sec_ep_user \
        "$(create_server m_$n "${MARIA_CS/Server=127.0.0.1/Server=}")" "HV00D|HV024|HV00J" Server
    if [[ $(id -u) -eq 0 ]]; then
        # a MariaDB DSN that names a socket: the driver would use it whatever
        # SERVER says (SOCKET wins over TCP)
        add_dsn sec_ep_${TS_DEST_PORT}_msock "Driver=MariaDB Unicode" "SERVER=127.0.0.1" \
            "PORT=$TS_MARIADB_PORT" "DATABASE=wh" "SOCKET=$TS_MARIADB_SOCK"
        refused "CREATE SERVER: a MariaDB DSN with a SOCKET entry is refused, naming SOCKET" sec_ep_user \
            "CREATE SERVER m_dsock FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'sec_ep_${TS_DEST_PORT}_msock')" \
            "HV00D|HV024|HV00J" SOCKET
        add_dsn sec_ep_${TS_DEST_PORT}_mpipe "Driver=MariaDB Unicode" "SERVER=127.0.0.1" \
            "PORT=$TS_MARIADB_PORT" "DATABASE=wh" "OPTION=8195"
        refused "CREATE SERVER: a MariaDB DSN whose OPTION asks for a named pipe is refused, naming OPTION" sec_ep_user \
            "CREATE SERVER m_dpipe FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'sec_ep_${TS_DEST_PORT}_mpipe')" \
            "HV00D|HV024|HV00J" OPTION
    else
        skip "system DSNs need root"; skip "system DSNs need root"
    fi
    as sec_ep_user -c "$(create_server m_wh "$MARIA_CS")" >/dev/null
    mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" -uroot wh <<'SQL'
DROP TABLE IF EXISTS sec_ep_t;
CREATE TABLE sec_ep_t (id INT PRIMARY KEY, v VARCHAR(10), synced_at DATETIME(6));
INSERT INTO sec_ep_t VALUES (1, 'a', '2026-11-28'), (2, 'b', '2026-11-28');
SQL
    syncs "a non-superuser's MariaDB server to the warehouse syncs" m_wh ok_maria
else
    for ((i = 0; i < 11; i++)); do skip "MariaDB is not installed"; done
fi

# --- MariaDB's localhost without a port is TCP (port 3306), not the
# driver's default socket, where the lax MariaDB server would log the
# worker in as postgres with the made-up password
if $MLAX_OK; then
    check "control: the lax MariaDB server's socket logs postgres in with a made-up password" "the crown jewels" \
        "$($TS_AS_PG mariadb --no-defaults -S "$MLAX_SOCK" -u postgres -pmade-up -N -e "SELECT secret FROM wh.lax_secret" 2>&1)"
    sq -c "$(create_server ml_su "Driver={MariaDB Unicode};Server=localhost;SOCKET=$MLAX_SOCK;Database=wh")" \
       -c "CREATE USER MAPPING FOR sec_ep_user SERVER ml_su OPTIONS (user 'postgres', password 'made-up')" \
       -c "GRANT USAGE ON FOREIGN SERVER ml_su TO sec_ep_user" >/dev/null
    try sec_ep_user "$(steal ml_su c_mlsu)"
    check "control: a superuser's server naming that socket copies the lax server's secret" 1 "$(stolen c_mlsu)"
    ((RC != 0)) && diag "$(head -n 3 <<<"$ERR")"
    as sec_ep_user -c "$(create_server ml_local "Driver={MariaDB Unicode};Server=localhost;Database=wh")" \
        -c "CREATE USER MAPPING FOR CURRENT_USER SERVER ml_local OPTIONS (user 'postgres', password 'made-up')" >/dev/null
    try sec_ep_user "$(steal ml_local c_mlocal)"
    if ((RC != 0)) && [[ $ERR == *"server on 'localhost'"* && $ERR != *socket* ]]; then
        ok "a non-superuser's MariaDB Server=localhost without a Port connects over TCP, not the default socket"
    else
        nok "a non-superuser's MariaDB Server=localhost without a Port connects over TCP, not the default socket"
        diag "RC $RC: $(head -n 3 <<<"$ERR")"
    fi
    nothing_copied "MariaDB Server=localhost" c_mlocal
else
    for ((i = 0; i < 4; i++)); do skip "no lax MariaDB server (needs root, MariaDB, and ${MLAX_SOCK} free)"; done
fi

# --- drivers such a role may not use at all
if [[ -n $CH_CS ]]; then
    CH_DRIVER=${CH_CS%%;*}
    refused "CREATE SERVER: a ClickHouse server is refused, whatever names its host" sec_ep_user \
        "$(create_server ch_$n "$CH_DRIVER;Host=127.0.0.1;Port=$TS_CLICKHOUSE_PORT;Server=;Database=wh")" 42501 ClickHouse
    refused "CREATE SERVER: a ClickHouse server with a Url is refused" sec_ep_user \
        "$(create_server ch_$n "$CH_CS")" "HV024|42501"
else
    skip "ClickHouse is not installed"; skip "ClickHouse is not installed"
fi
refused "CREATE SERVER: an SQLite server is refused" sec_ep_user \
    "$(create_server lite_$n "Driver={SQLite3};Database=wh.sqlite")" 42501 SQLite

check "no refused server exists" 0 \
    "$(sq -c "SELECT count(*) FROM pg_foreign_server WHERE srvname ~ '^(a_|m_[0-9]|m_d|ch_|lite_|d_opt)'")"
