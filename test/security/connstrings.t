#!/usr/bin/env bash
#
# Native code, files and credentials through connection strings and user
# mapping values, on every tested driver (psqlODBC, MariaDB, SQLite).
#
#   - the wrapper's USAGE is granted to nobody: a treble_sync_admin member
#     cannot create a server;
#   - a role that is not a superuser, even granted USAGE on the wrapper,
#     cannot create a server whose connection string loads code (Driver= a
#     path, LoadExt=), runs statements at connect (ConnSettings=, INITSTMT=),
#     reads or writes files (pqopt={passfile=}, Tracefile=, Database= and
#     NoCreat=0 of SQLite, SSLKEY=, PLUGIN_DIR=, FileDSN=, SaveFile=), logs
#     the password (Debug=1, CommLog=1), or names a DSN that is not a system
#     DSN; the error names the key;
#   - the same strings in a server a superuser created and then gave to such
#     a role are refused at connect: no library is loaded, no file created,
#     no statement run;
#   - credentials are refused in a connection string even from a superuser
#     (Username=, pqopt={password=...}, pqopt={passfile=...}, a ClickHouse
#     Url with a user or password in its userinfo or query, a Path with
#     password=);
#   - a mapping's password cannot add keys: ';LoadExt=...' in the password of
#     a mapping on a superuser's SQLite server loads nothing, and a password
#     with '}' on a psqlODBC loopback server runs no ConnSettings;
#   - the data directory gets no new file;
#   - plain, allow-listed strings of a non-superuser are still accepted.

DB=sec_conn
ROLES=(sec_conn_admin sec_conn_user)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT

TMP=$(mktemp -d /tmp/sec_conn.XXXXXX)
chmod 0777 "$TMP"
trap 'rm -rf "$TMP"; finish' EXIT
MARKER=$TMP/loaded

# A shared library that leaves a file behind when anything loads it.
cat >"$TMP/evil.c" <<C
#include <stdio.h>
__attribute__((constructor)) static void evil(void)
{
    FILE *f = fopen("$MARKER", "a");
    if (f) { fputs("loaded\n", f); fclose(f); }
}
C
gcc -shared -fPIC -o "$TMP/evil.so" "$TMP/evil.c"
chmod 0755 "$TMP/evil.so"
# "loaded" if the library was loaded since the last call
loaded() { if [[ -e $MARKER ]]; then rm -f "$MARKER"; echo loaded; else echo "not loaded"; fi; }

setup_db
ls -A "$TS_DEST_PGDATA" | sort >"$TMP/datadir.before"

PG_CS=$(sq -c "SELECT current_setting('treble_test.wh_odbc')")
LITE_CS=$(sq -c "SELECT current_setting('treble_test.sqlite_odbc')")
MARIA_CS=$(sq -c "SELECT current_setting('treble_test.mariadb_odbc', true)")
LOOP_CS="Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$TS_DEST_PORT;Database=$DB"

sq >/dev/null <<SQL
GRANT treble_sync_admin TO sec_conn_admin, sec_conn_user;
GRANT CREATE ON SCHEMA public TO sec_conn_admin, sec_conn_user;
-- a table of this very database, to read back through a loopback server
CREATE TABLE conn_src (id int PRIMARY KEY, v text, synced_at timestamp);
INSERT INTO conn_src VALUES (1, 'a', '2026-11-28');
GRANT SELECT ON conn_src TO PUBLIC;
SQL
whq -c "DROP TABLE IF EXISTS sec_conn_t" \
    -c "CREATE TABLE sec_conn_t (id int PRIMARY KEY, v text, synced_at timestamp)" \
    -c "INSERT INTO sec_conn_t VALUES (1, 'a', '2026-11-28')"
sqlite3 -batch "$TS_SQLITE_DB" "DROP TABLE IF EXISTS sec_conn_t;
    CREATE TABLE sec_conn_t (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP);
    INSERT INTO sec_conn_t VALUES (1, 'a', '2026-11-28 00:00:00');"
if [[ -n $MARIA_CS ]]; then
    mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" -uroot wh <<'SQL'
DROP TABLE IF EXISTS sec_conn_t;
CREATE TABLE sec_conn_t (id INT PRIMARY KEY, v VARCHAR(10), synced_at DATETIME(6));
INSERT INTO sec_conn_t VALUES (1, 'a', '2026-11-28');
SQL
fi

# an SQL literal
lit() { printf "'%s'" "${1//\'/\'\'}"; }
# every attempt names a new server: on a build that accepts it, the next
# attempt must not fail merely because the name is taken
create_server() { echo "CREATE SERVER $1 FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string $(lit "$2"))"; }

# --- who may create servers at all
check "treble_sync_admin has no USAGE on the wrapper" f \
    "$(sq -c "SELECT has_foreign_data_wrapper_privilege('treble_sync_admin', 'treble_sync', 'USAGE')")"
refused "a treble_sync_admin member cannot create a server" sec_conn_admin \
    "$(create_server s_admin "$PG_CS")" 42501

# from here on sec_conn_user holds USAGE on the wrapper, as a DBA may grant it
sq -c "GRANT USAGE ON FOREIGN DATA WRAPPER treble_sync TO sec_conn_user" >/dev/null

# --- a non-superuser's connection strings, vetted at CREATE SERVER
# refuse_key NAME KEY CONNECTION_STRING
refuse_key() {
    refused "non-superuser: $1 is refused, naming $2" sec_conn_user "$(create_server s_bad$n "$3")" "HV00D|HV024" "$2"
}
refuse_key "a driver given as a path" Driver "Driver=$TMP/evil.so;Server=127.0.0.1;Port=$TS_WH_PORT"
refuse_key "psqlODBC ConnSettings" ConnSettings "$PG_CS;ConnSettings={SET search_path = public}"
refuse_key "psqlODBC pqopt passfile" pqopt "$PG_CS;pqopt={passfile=$TMP/pgpass}"
refuse_key "psqlODBC Debug=1" Debug "$PG_CS;Debug=1"
refuse_key "psqlODBC CommLog=1" CommLog "$PG_CS;CommLog=1"
refuse_key "psqlODBC Username" Username "$PG_CS;Username=reader"
refuse_key "psqlODBC pqopt password" pqopt "$PG_CS;pqopt={password=x}"
refuse_key "FileDSN" FileDSN "FileDSN=$TMP/evil.dsn"
refuse_key "SaveFile" SaveFile "$PG_CS;SaveFile=$TMP/saved.dsn"
if [[ -n $MARIA_CS ]]; then
    refuse_key "MariaDB INITSTMT" INITSTMT "$MARIA_CS;INITSTMT={SET @a = 1}"
    refuse_key "MariaDB PLUGIN_DIR" PLUGIN_DIR "$MARIA_CS;PLUGIN_DIR=$TMP"
    refuse_key "MariaDB SSLKEY" SSLKEY "$MARIA_CS;SSLKEY=$TMP/key.pem"
else
    skip "MariaDB is not installed"; skip "MariaDB is not installed"; skip "MariaDB is not installed"
fi
# the same keys spelled otherwise: ODBC keys are case-insensitive, spaces
# around them are dropped, and a repeated key must not slip past
refuse_key "a lowercase connsettings" connsettings "$PG_CS;connsettings={SET search_path = public}"
refused "non-superuser: a second Driver= naming a path is refused" sec_conn_user \
    "$(create_server s_bad$n "$PG_CS;Driver=$TMP/evil.so")" HV00D
refused "non-superuser: a key with spaces around it is refused" sec_conn_user \
    "$(create_server s_bad$n "$PG_CS; ConnSettings ={SET search_path = public}")" HV00D
refused "non-superuser: an SQLite driver registered under another name is refused" sec_conn_user \
    "$(create_server s_bad$n "Driver={SQLite};Database=$TS_SQLITE_DB")" ""
refused "non-superuser: an SQLite server is refused, even a plain one" sec_conn_user \
    "$(create_server s_bad$n "$LITE_CS")" ""
refused "non-superuser: SQLite LoadExt is refused" sec_conn_user \
    "$(create_server s_bad$n "$LITE_CS;LoadExt=$TMP/evil.so")" ""
refused "non-superuser: SQLite Database= of a private file with NoCreat=0 is refused" sec_conn_user \
    "$(create_server s_bad$n "Driver={SQLite3};Database=$TS_DEST_PGDATA/sec_conn_new.db;NoCreat=0")" ""
refused "non-superuser: SQLite Tracefile is refused" sec_conn_user \
    "$(create_server s_bad$n "$LITE_CS;Tracefile=$TMP/trace.log")" ""
refused "non-superuser: a DSN= that is not a system DSN is refused" sec_conn_user \
    "$(create_server s_bad$n "DSN=sec_conn_user_dsn")" "" dsn
refused "non-superuser: a dsn option that is not a system DSN is refused" sec_conn_user \
    "CREATE SERVER s_bad$n FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'sec_conn_user_dsn')" "" dsn
refused "non-superuser: ALTER SERVER cannot add a refused key either" sec_conn_user \
    "$(create_server s_ok0 "$PG_CS"); ALTER SERVER s_ok0 OPTIONS (SET connection_string $(lit "$PG_CS;ConnSettings={SELECT 1}"))" \
    HV00D ConnSettings
check "non-superuser: no refused server exists" 0 \
    "$(sq -c "SELECT count(*) FROM pg_foreign_server WHERE srvname ~ '^s_bad' OR (srvname = 's_ok0' AND array_to_string(srvoptions, ';') ILIKE '%connsettings%')")"

# the legitimate strings: allow-listed keys only
accepted "non-superuser: a plain psqlODBC string is accepted" sec_conn_user "$(create_server s_ok_pg "$PG_CS")"
if [[ -n $MARIA_CS ]]; then
    accepted "non-superuser: a plain MariaDB string is accepted" sec_conn_user "$(create_server s_ok_maria "$MARIA_CS")"
else
    skip "MariaDB is not installed"
fi

# --- credentials in a connection string: refused whoever creates the server
refused "superuser: Username= in connection_string is refused" postgres \
    "$(create_server s_cred$n "$PG_CS;Username=reader")" HV00D Username
refused "superuser: pqopt={password=...} in connection_string is refused" postgres \
    "$(create_server s_cred$n "$PG_CS;pqopt={password=x}")" HV00D pqopt
refused "superuser: pqopt={passfile=...} in connection_string is refused" postgres \
    "$(create_server s_cred$n "$PG_CS;pqopt={passfile=$TMP/pgpass}")" HV00D pqopt
# the ClickHouse driver takes a user and a password from its Url's userinfo,
# and ClickHouse from the Url's query string
refused "superuser: a ClickHouse Url with a user and password is refused" postgres \
    "$(create_server s_cred$n "Driver={ClickHouse ODBC Driver (Unicode)};Url=http://reader:secret@127.0.0.1:8123/")" HV00D Url
refused "superuser: a ClickHouse Url with a user only is refused" postgres \
    "$(create_server s_cred$n "Driver={ClickHouse ODBC Driver (Unicode)};Url=http://reader@127.0.0.1:8123/")" HV00D Url
refused "superuser: a ClickHouse Url with password= in its query is refused" postgres \
    "$(create_server s_cred$n "Driver={ClickHouse ODBC Driver (Unicode)};Url=http://127.0.0.1:8123/?user=reader&PASSWORD=secret")" HV00D Url
refused "superuser: a ClickHouse Path with password= is refused" postgres \
    "$(create_server s_cred$n "Driver={ClickHouse ODBC Driver (Unicode)};Server=127.0.0.1;Path=/?password=secret")" HV00D Path
accepted "superuser: a ClickHouse Url without credentials is accepted" postgres \
    "$(create_server s_ch_ok "Driver={ClickHouse ODBC Driver (Unicode)};Url=http://127.0.0.1:8123/?database=wh")"

# --- the same strings in servers a superuser created, then gave away:
# refused at connect, with nothing loaded, run or created
# given SERVER CONNECTION_STRING MAPPING_OPTIONS: create it as the superuser,
# give it to sec_conn_user, who maps itself
# (MAPPING_OPTIONS "reader": the warehouse's own credentials)
given() {
    sq -c "$(create_server "$1" "$2")" -c "ALTER SERVER $1 OWNER TO sec_conn_user" >/dev/null
    if [[ $3 == reader ]]; then
        map_reader sec_conn_user "$1" >/dev/null
    else
        as sec_conn_user -c "CREATE USER MAPPING FOR CURRENT_USER SERVER $1 OPTIONS ($3)" >/dev/null
    fi
}
add_as_user() {
    echo "SELECT name FROM treble_sync.add_table('${3:-sec_conn_t}', '$1', key_columns => '{id}', name => '$2', local_table => '$2')"
}
given g_path "Driver=$TMP/evil.so;Server=127.0.0.1;Port=$TS_WH_PORT;Database=wh" reader
refused "given server: a driver path is refused at connect" sec_conn_user "$(add_as_user g_path c_path)" "" Driver
check "given server: the driver path loaded nothing" "not loaded" "$(loaded)"

given g_loadext "$LITE_CS;LoadExt=$TMP/evil.so" "user 'u', password 'x'"
refused "given server: SQLite is refused at connect" sec_conn_user "$(add_as_user g_loadext c_loadext)" ""
check "given server: SQLite LoadExt loaded nothing" "not loaded" "$(loaded)"

given g_files "Driver={SQLite3};Database=sec_conn_new.db;NoCreat=0;Tracefile=sec_conn_trace.log" "user 'u', password 'x'"
try sec_conn_user "$(add_as_user g_files c_files)"
if [[ -e $TS_DEST_PGDATA/sec_conn_new.db || -e $TS_DEST_PGDATA/sec_conn_trace.log ]]; then
    nok "given server: SQLite NoCreat=0 and Tracefile created no file in the data directory"
else
    ok "given server: SQLite NoCreat=0 and Tracefile created no file in the data directory"
fi

given g_cs "$LOOP_CS;ConnSettings={ALTER ROLE sec_conn_user SUPERUSER}" "user 'postgres', password 'x'"
refused "given server: psqlODBC ConnSettings is refused at connect" sec_conn_user \
    "$(add_as_user g_cs c_cs conn_src)" "" ConnSettings
check "given server: ConnSettings made nobody a superuser" f "$(is_super sec_conn_user)"
sq -c "ALTER ROLE sec_conn_user NOSUPERUSER" >/dev/null

# (a superuser may not put pqopt={passfile=...} in a string at all: it is a
# credential; pqopt itself is refused on a server a non-superuser owns)
given g_passfile "$PG_CS;pqopt={sslmode=disable}" reader
refused "given server: psqlODBC pqopt is refused at connect" sec_conn_user "$(add_as_user g_passfile c_passfile)" "" pqopt

if [[ -n $MARIA_CS ]]; then
    given g_init "$MARIA_CS;INITSTMT={SET @a = 1}" reader
    refused "given server: MariaDB INITSTMT is refused at connect" sec_conn_user "$(add_as_user g_init c_init)" "" INITSTMT
else
    skip "MariaDB is not installed"
fi

# --- mapping values cannot add keys
sq >/dev/null <<SQL
$(create_server lite "$LITE_CS");
$(create_server loop "$LOOP_CS");
GRANT USAGE ON FOREIGN SERVER lite, loop TO sec_conn_admin;
SQL
SECRETS+=("x;LoadExt=$TMP/evil.so;")
as sec_conn_admin -c "CREATE USER MAPPING FOR CURRENT_USER SERVER lite OPTIONS (user 'u', password $(lit "x;LoadExt=$TMP/evil.so;"))" >/dev/null
try sec_conn_admin "SELECT name FROM treble_sync.add_table('sec_conn_t', 'lite', key_columns => '{id}', name => 'm_lite', local_table => 'm_lite')"
if ((RC != 0)); then
    ok "a password holding ;LoadExt= on an SQLite server is refused"
else
    nok "a password holding ;LoadExt= on an SQLite server is refused"
fi
check "a password holding ;LoadExt= on an SQLite server loaded nothing" "not loaded" "$(loaded)"

BRACE_PW='x};ConnSettings={ALTER ROLE sec_conn_admin SUPERUSER};Pwd={y'
SECRETS+=("$BRACE_PW")
as sec_conn_admin -c "CREATE USER MAPPING FOR CURRENT_USER SERVER loop OPTIONS (user 'postgres', password $(lit "$BRACE_PW"))" >/dev/null
try sec_conn_admin "SELECT name FROM treble_sync.add_table('conn_src', 'loop', key_columns => '{id}', name => 'm_loop', local_table => 'm_loop')"
check "a password holding } and ConnSettings on a psqlODBC server runs no statement" f "$(is_super sec_conn_admin)"
sq -c "ALTER ROLE sec_conn_admin NOSUPERUSER" >/dev/null

# --- files
ls -A "$TS_DEST_PGDATA" | sort >"$TMP/datadir.after"
new=$(comm -13 "$TMP/datadir.before" "$TMP/datadir.after" | tr '\n' ' ')
check "the data directory got no new file" "" "$new"
new=$(cd "$TMP" && ls -A | grep -vxE 'evil\.c|evil\.so|datadir\.(before|after)' | tr '\n' ' ')
check "no file was written or created where the connection strings pointed" "" "$new"
