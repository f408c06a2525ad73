# Helpers shared by the security suite (test/security/*.t), sourced by each
# script after it sets DB (its own database) and ROLES (the cluster-wide
# roles it creates, all dropped again when it exits).
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_*, PGHOST/PGPORT/PGUSER=postgres). Prints TAP, with the plan
# at the end. Nothing printed ever holds a password: every diagnostic goes
# through redact.

set -u

SECRETS=("$TS_WH_PASSWORD")

# replace every secret the script knows of (SECRETS) by <secret>
redact() {
    local s=$1 secret
    for secret in "${SECRETS[@]}"; do
        [[ -n $secret ]] && s=${s//"$secret"/<secret>}
    done
    printf '%s' "$s"
}
# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
# diagnostics with every secret replaced (tap.sh's diag, redacted)
diag() { redact "$*" | head -c 2000 | sed 's/^/#   /'; echo; }

# run SQL (stdin or -c ...) in $DB as a role (login), tuples only; fails on
# the first error
as() {
    local role=$1
    shift
    psql -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -U "$role" -d "$DB" "$@"
}
sq() { as postgres "$@"; }

# try ROLE SQL: run one statement (or script) as ROLE; sets RC, OUT, ERR and
# STATE (the SQLSTATE of the first error, empty if none)
try() {
    local role=$1 sql=$2 f
    f=$(mktemp)
    OUT=$(as "$role" 2>"$f" <<<"$sql")
    RC=$?
    ERR=$(cat "$f")
    rm -f "$f"
    STATE=$(sed -n 's/^\(psql:[^ ]* \)\{0,1\}\(ERROR\|FATAL\):  \([0-9A-Z]\{5\}\): .*/\3/p' <<<"$ERR" | head -n 1)
}

# refused NAME ROLE SQL STATES [WORD...]: the statement fails with one of
# STATES (a |-separated list, or "" for any error), and the error names
# every WORD (case-insensitive)
refused() {
    local name=$1 role=$2 sql=$3 states=$4 word bad=""
    shift 4
    try "$role" "$sql"
    if ((RC == 0)); then
        bad="it was accepted"
    elif [[ -n $states && "|$states|" != *"|$STATE|"* ]]; then
        bad="SQLSTATE $STATE, wanted $states"
    else
        for word in "$@"; do
            if [[ ${ERR,,} != *"${word,,}"* ]]; then
                bad="the error does not name '$word'"
                break
            fi
        done
    fi
    if [[ -z $bad ]]; then
        ok "$name"
    else
        nok "$name"
        diag "$bad"
        [[ -n $ERR ]] && diag "$(head -n 3 <<<"$ERR")"
    fi
}

# accepted NAME ROLE SQL: the statement succeeds
accepted() {
    try "$2" "$3"
    if ((RC == 0)); then
        ok "$1"
    else
        nok "$1"
        diag "$(head -n 3 <<<"$ERR")"
    fi
}

is_super() { sq -c "SELECT rolsuper FROM pg_roles WHERE rolname = '$1'"; }

# run SQL on the PostgreSQL warehouse (database wh) as its superuser
whq() {
    PGOPTIONS="-c client_min_messages=warning" \
        psql -X -q -At -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@"
}

# a fresh database with the extension, and fresh roles
setup_db() {
    local r
    psql -X -q -d postgres -c "SET client_min_messages = warning" \
        -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
    for r in "${ROLES[@]}"; do
        psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP ROLE IF EXISTS $r" >/dev/null
    done
    psql -X -q -d postgres -c "CREATE DATABASE $DB" >/dev/null
    sq -c "SET client_min_messages = warning" -c "CREATE EXTENSION treble_sync" >/dev/null
    for r in "${ROLES[@]}"; do
        psql -X -q -d postgres -c "CREATE ROLE $r LOGIN" >/dev/null
    done
}

# the ODBC data sources a script registered (odbcinst -i -s -l), which
# finish removes
DSNS=()
# the views a script made on the PostgreSQL warehouse (wh_view), which
# finish drops
WH_VIEWS=()

# drop the warehouse's views (WH_VIEWS), the database, then the roles
# (cluster-wide) and the data sources (DSNS); the exit status is the
# number of failed tests (capped)
finish() {
    local r
    for r in "${WH_VIEWS[@]}"; do
        whq -c "DROP VIEW IF EXISTS $r" >/dev/null 2>&1
    done
    psql -X -q -d postgres -c "SET client_min_messages = warning" \
        -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
    for r in "${ROLES[@]}"; do
        psql -X -q -d postgres -c "SET client_min_messages = warning" \
            -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1
    done
    for r in "${DSNS[@]}"; do
        odbcinst -u -s -l -n "$r" >/dev/null 2>&1
    done
    echo "1..$n"
    exit $((failed > 0))
}

# the PostgreSQL warehouse's credentials as a user mapping for ROLE on SERVER
# (the password goes through current_setting, never through the command line)
map_reader() {
    local role=$1 server=$2
    as "$role" <<SQL
DO \$\$
BEGIN
    EXECUTE format('CREATE USER MAPPING FOR %I SERVER %I OPTIONS (user %L, password %L)',
                   '$role', '$server', current_setting('treble_test.wh_user'),
                   current_setting('treble_test.wh_password'));
END
\$\$;
SQL
}

# a server of the wrapper owned by the superuser, from a treble_test.* setting
su_server() {
    local server=$1 setting=$2
    sq -c "DO \$\$ BEGIN EXECUTE format('CREATE SERVER $server FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)', current_setting('$setting')); END \$\$"
}

# add_dsn NAME KEY=VALUE...: a system DSN (of psqlODBC unless a Driver=
# is given), replacing any of that name, written through the script's
# TMP; finish removes it
add_dsn() {
    local name=$1 kv
    shift
    odbcinst -u -s -l -n "$name" >/dev/null 2>&1
    {
        echo "[$name]"
        [[ " $* " == *" Driver="* ]] || echo "Driver=PostgreSQL Unicode"
        for kv in "$@"; do echo "$kv"; done
    } >"$TMP/$name.ini"
    odbcinst -i -s -l -f "$TMP/$name.ini" >/dev/null
    DSNS+=("$name")
}

# admins_on_wh ROLE...: the server wh of the PostgreSQL warehouse, owned
# by the superuser; each ROLE a treble_sync_admin that may use it, with the
# warehouse's reader login mapped, and may create in schema public
admins_on_wh() {
    local all r
    all=$(printf '%s, ' "$@")
    all=${all%, }
    su_server wh treble_test.wh_odbc >/dev/null
    sq >/dev/null <<SQL
GRANT treble_sync_admin TO $all;
GRANT CREATE ON SCHEMA public TO $all;
GRANT USAGE ON FOREIGN SERVER wh TO $all;
SQL
    for r in "$@"; do
        map_reader "$r" wh >/dev/null
    done
}

# admin_on_wh OWNER [ROLE...]: admins_on_wh OWNER; each ROLE (no admin, no
# mapping) may create in schema public too
admin_on_wh() {
    local others
    admins_on_wh "$1"
    shift
    (($#)) || return 0
    others=$(printf '%s, ' "$@")
    sq -c "GRANT CREATE ON SCHEMA public TO ${others%, }" >/dev/null
}

# wh_table NAME COLUMNS ROWS: the table NAME (COLUMNS) of the PostgreSQL
# warehouse, made anew, holding ROWS (what follows INSERT INTO NAME: a
# VALUES list or a SELECT)
wh_table() {
    whq -c "DROP TABLE IF EXISTS $1" -c "CREATE TABLE $1 ($2)" -c "INSERT INTO $1 $3"
}

# wh_view NAME: a view NAME of one row (id 1, v 'x') on the PostgreSQL
# warehouse, made anew, which its reader login may read; finish drops it
wh_view() {
    whq -c "DROP VIEW IF EXISTS $1" \
        -c "CREATE VIEW $1 AS SELECT 1 AS id, 'x'::text AS v" \
        -c "GRANT SELECT ON $1 TO $TS_WH_USER" >/dev/null
    WH_VIEWS+=("$1")
}

# add_snapshot ROLE SOURCE NAME: ROLE registers the warehouse's SOURCE (on
# server wh, keyed by id, no cursor) as NAME, a snapshot copy public.NAME
add_snapshot() {
    as "$1" -c "SET client_min_messages = warning" \
        -c "SELECT name FROM treble_sync.add_table('$2', 'wh', key_columns => '{id}',
                   cursor_column => NULL, mode => 'snapshot', local_table => 'public.$3', name => '$3')" >/dev/null
}

# fdw_user ROLE: a treble_sync_admin that may create in schema public and
# create servers of the wrapper itself
fdw_user() {
    sq >/dev/null <<SQL
GRANT treble_sync_admin TO $1;
GRANT CREATE ON SCHEMA public TO $1;
GRANT USAGE ON FOREIGN DATA WRAPPER treble_sync TO $1;
SQL
}

# plant_thief P OWNER THIEF: OWNER's private table P_private, and THIEF's
# loot (P_loot, which anyone may insert into), a sequence counting thefts
# (P_thefts: a rollback does not undo it), P_steal(), which copies the
# private table into the loot when it runs as OWNER and returns true, and
# P_steal_t(), a trigger function (row or statement) that calls it.
# looted P: how many thefts there were.
plant_thief() {
    local p=$1 owner=$2 thief=$3
    sq >/dev/null <<SQL
CREATE TABLE public.${p}_private (s text);
INSERT INTO public.${p}_private VALUES ('private-of-$owner');
ALTER TABLE public.${p}_private OWNER TO $owner;
SQL
    as "$thief" >/dev/null <<SQL
CREATE TABLE public.${p}_loot (who text, s text);
GRANT INSERT ON public.${p}_loot TO PUBLIC;
CREATE SEQUENCE public.${p}_thefts;
GRANT USAGE ON SEQUENCE public.${p}_thefts TO PUBLIC;
CREATE FUNCTION public.${p}_steal() RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
    INSERT INTO public.${p}_loot SELECT current_user, s FROM public.${p}_private;
    PERFORM pg_catalog.nextval('public.${p}_thefts');
    RETURN true;
EXCEPTION WHEN insufficient_privilege THEN
    RETURN true;
END \$\$;
CREATE FUNCTION public.${p}_steal_t() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM public.${p}_steal();
    RETURN coalesce(NEW, OLD);
END \$\$;
SQL
}
looted() {
    sq -c "SELECT (SELECT count(*) FROM public.$1_loot)
                  + (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM public.$1_thefts)"
}
