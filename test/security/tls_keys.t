#!/usr/bin/env bash
#
# Who may name which TLS setting on a server (src/option.c, tls_settings;
# docs/security.md, "TLS"), against the TLS-only warehouses of
# `.ci/clusters tls`:
#
#   - a role that is not a superuser (USAGE on the wrapper) cannot name a
#     TLS file, under any of a driver's names for it (psqlODBC's pqopt, which
#     carries libpq's sslrootcert, is refused as a whole; MariaDB's SSLCA, SSLCAPATH, SSLCERT, SSLKEY, SSLCRL,
#     SSLCRLPATH, TLSPEERFPLIST and its alias SSLFPLIST): the error says it
#     names a file; nor through a superuser's server given to it (refused at
#     connect, nothing copied);
#   - over a system DSN whose administrator asks for verification
#     (psqlODBC SSLmode=verify-full with a CA in pqopt; MariaDB SSLVERIFY=1,
#     FORCETLS=1, TLSVERSION and SSLCA), such a role's connection string
#     cannot weaken it: SSLmode=disable, require or verify-ca, SSLVERIFY=0,
#     FORCETLS=0, another TLSVERSION are refused at CREATE SERVER and, in a
#     superuser's server given away, at connect; keeping or raising it is
#     accepted, and the DSN server syncs over verified TLS;
#   - a level a driver does not know (SSLmode=verify-fully) is refused;
#   - a superuser's server may name CA files, and syncs.
#
# System DSNs need root (odbcinst -i -s). Prints TAP.

DB=sec_tls
ROLES=(sec_tls_user)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)

TMP=$(mktemp -d /tmp/sec_tls.XXXXXX)
cleanup() {
    rm -rf "$TMP"
    finish
}
trap cleanup EXIT
setup_db

if ! "$REPO/.ci/clusters" tls "$TS_DIR" >/dev/null 2>&1; then
    skip "the TLS warehouses could not be started (.ci/clusters tls)"
    exit 0
fi
source "$TS_DIR/env"
CA=$TS_TLS_DIR/ca.crt

fdw_user sec_tls_user
PGOPTIONS="-c client_min_messages=warning" psql -X -q -At -h "$TS_SOCK" -p "$TS_WHTLS_PORT" -U postgres -d wh \
    -c "DROP TABLE IF EXISTS sec_tls_t" \
    -c "CREATE TABLE sec_tls_t (id int PRIMARY KEY, v text, synced_at timestamp)" \
    -c "INSERT INTO sec_tls_t VALUES (1, 'a', '2026-11-28'), (2, 'b', '2026-11-28')"
if [[ -n $TS_MARIADB_TLS_PORT ]]; then
    mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_TLS_SOCK" -uroot wh <<'SQL'
DROP TABLE IF EXISTS sec_tls_t;
CREATE TABLE sec_tls_t (id INT PRIMARY KEY, v VARCHAR(10), synced_at DATETIME(6));
INSERT INTO sec_tls_t VALUES (1, 'a', '2026-11-28'), (2, 'b', '2026-11-28');
SQL
fi

lit() { printf "'%s'" "${1//\'/\'\'}"; }
create_server() { echo "CREATE SERVER $1 FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string $(lit "$2"))"; }
map() {
    as "$1" <<SQL
DO \$\$
BEGIN
    EXECUTE format('CREATE USER MAPPING FOR %I SERVER %I OPTIONS (user %L, password %L)',
                   '$1', '$2', current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
\$\$;
SQL
}
# syncs NAME ROLE SERVER COPY: the role registers sec_tls_t and syncs it
syncs() {
    try "$2" "SELECT name FROM treble_sync.add_table('sec_tls_t', '$3', key_columns => '{id}', name => '$4', local_table => '$4');
              SELECT status || ' ' || rows_inserted FROM treble_sync.sync_table('$4')"
    check "$1" "success 2" "$(tail -n 1 <<<"$OUT")"
    ((RC != 0)) && diag "$(head -n 3 <<<"$ERR")"
}
# given NAME CONNSTR WORD...: a superuser's server with CONNSTR, given to
# the role: refused at connect, naming every WORD, nothing copied
srv=0
given() {
    local name=$1 cs=$2
    shift 2
    srv=$((srv + 1))
    sq -c "$(create_server g_$srv "$cs")" -c "ALTER SERVER g_$srv OWNER TO sec_tls_user" >/dev/null
    map sec_tls_user g_$srv >/dev/null
    refused "at connect: $name, in a superuser's server given away" sec_tls_user \
        "SELECT name FROM treble_sync.add_table('sec_tls_t', 'g_$srv', key_columns => '{id}', name => 'g_$srv', local_table => 'g_$srv')" \
        "" "$@"
    check "and nothing is copied" "0" "$(sq -c "SELECT count(*) FROM pg_class WHERE relname = 'g_$srv'")"
}

# --- file keys
PG_DRV="Driver={PostgreSQL Unicode};Server=localhost;Port=$TS_WHTLS_PORT;Database=wh;SSLmode=verify-full"
MA_DRV="Driver={MariaDB Unicode};Server=localhost;Port=${TS_MARIADB_TLS_PORT:-1};Database=wh;SSLVERIFY=1"
refused "CREATE SERVER: pqopt={sslrootcert=...} is refused, naming pqopt" sec_tls_user \
    "$(create_server f_pq "$PG_DRV;pqopt={sslrootcert=$CA}")" "HV00D|HV024" pqopt
for key in SSLCA SSLCAPATH SSLCERT SSLKEY SSLCRL SSLCRLPATH TLSPEERFPLIST SSLFPLIST; do
    refused "CREATE SERVER: MariaDB's $key is refused as naming a TLS file" sec_tls_user \
        "$(create_server f_$key "$MA_DRV;$key=$CA")" HV00D "$key" "TLS file"
done
given "MariaDB's SSLCA" "$MA_DRV;SSLCA=$CA" SSLCA "TLS file"

# --- a superuser's servers name their CA
sq -c "$(create_server su_pg "$PG_DRV;pqopt={sslrootcert=$CA}")" >/dev/null
map postgres su_pg >/dev/null
syncs "a superuser's psqlODBC server with verify-full and its CA syncs" postgres su_pg su_pg_copy
if [[ -n $TS_MARIADB_TLS_PORT ]]; then
    sq -c "$(create_server su_ma "$MA_DRV;SSLCA=$CA")" >/dev/null
    map postgres su_ma >/dev/null
    syncs "a superuser's MariaDB server with SSLVERIFY=1 and its CA syncs" postgres su_ma su_ma_copy
else
    skip "no MariaDB"
fi

# --- the administrator's DSNs, and what a role's string may add to them
if [[ $(id -u) -eq 0 ]]; then
    D=sec_tls_$TS_DEST_PORT
    add_dsn ${D}_pg "Driver=PostgreSQL Unicode" "Servername=localhost" "Port=$TS_WHTLS_PORT" \
        "Database=wh" "SSLmode=verify-full" "pqopt=sslrootcert=$CA"
    for mode in disable allow prefer require verify-ca; do
        refused "CREATE SERVER: SSLmode=$mode after a DSN with verify-full is refused" sec_tls_user \
            "$(create_server "w_${mode/-/_}" "DSN=${D}_pg;SSLmode=$mode")" 42501 SSLmode weaken verify-full
    done
    given "SSLmode=disable after a DSN with verify-full" "DSN=${D}_pg;SSLmode=disable" SSLmode weaken
    refused "CREATE SERVER: an SSLmode psqlODBC does not know is refused" sec_tls_user \
        "$(create_server w_unknown "DSN=${D}_pg;SSLmode=verify-fully")" HV024 SSLmode verify-full
    accepted "CREATE SERVER: SSLmode=verify-full after the DSN is accepted" sec_tls_user \
        "$(create_server ok_pg "DSN=${D}_pg;SSLmode=verify-full")"
    map sec_tls_user ok_pg >/dev/null
    syncs "a non-superuser's server on the administrator's DSN syncs over verified TLS" sec_tls_user ok_pg ok_pg_copy

    if [[ -n $TS_MARIADB_TLS_PORT ]]; then
        add_dsn ${D}_ma "Driver=MariaDB Unicode" "SERVER=localhost" "PORT=$TS_MARIADB_TLS_PORT" \
            "DATABASE=wh" "SSLVERIFY=1" "FORCETLS=1" "TLSVERSION=TLSv1.2,TLSv1.3" "SSLCA=$CA"
        refused "CREATE SERVER: SSLVERIFY=0 after a DSN with SSLVERIFY=1 is refused" sec_tls_user \
            "$(create_server w_sv "DSN=${D}_ma;SSLVERIFY=0")" 42501 SSLVERIFY weaken
        refused "CREATE SERVER: FORCETLS=0 after a DSN with FORCETLS=1 is refused" sec_tls_user \
            "$(create_server w_ft "DSN=${D}_ma;FORCETLS=0")" 42501 FORCETLS weaken
        refused "CREATE SERVER: another TLSVERSION than the DSN's is refused" sec_tls_user \
            "$(create_server w_tv "DSN=${D}_ma;TLSVERSION=TLSv1.1")" 42501 TLSVERSION weaken
        refused "CREATE SERVER: SSLVERIFY=false (not 0 or 1) is refused" sec_tls_user \
            "$(create_server w_sf "DSN=${D}_ma;SSLVERIFY=false")" HV024 SSLVERIFY
        given "SSLVERIFY=0 after a DSN with SSLVERIFY=1" "DSN=${D}_ma;SSLVERIFY=0" SSLVERIFY weaken
        accepted "CREATE SERVER: SSLVERIFY=1 after the DSN is accepted" sec_tls_user \
            "$(create_server ok_ma "DSN=${D}_ma;SSLVERIFY=1")"
        map sec_tls_user ok_ma >/dev/null
        syncs "a non-superuser's server on the administrator's MariaDB DSN syncs over verified TLS" sec_tls_user ok_ma ok_ma_copy
    else
        for ((i = 0; i < 9; i++)); do skip "no MariaDB"; done
    fi
else
    for ((i = 0; i < 20; i++)); do skip "system DSNs need root"; done
fi
