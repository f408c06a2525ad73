#!/usr/bin/env bash
#
# Holes found by reviewing the security model, each an attack that must
# fail:
#
#   - verify() runs the copy's code as its owner in the caller's session:
#     a session-level set_config() made there (in a forced row-level
#     security policy of the copy) must not outlive verify, or the caller's
#     next unqualified call resolves to the owner's schema;
#   - a schema merely named "cron" (in a database without pg_cron) must not
#     be trusted by the status view or schedule(): a planted cron.job view
#     or cron.schedule function would run as whoever reads or schedules;
#   - a non-superuser's server may brace only Driver: MariaDB Connector/ODBC
#     3.1.15 reads braces only for keys it knows, so NO_CACHE={1;INITSTMT=..}
#     would smuggle in a refused key;
#   - log rows follow their registration's owner, not only its name: a
#     name removed by one role and registered again by another does not
#     open the first role's quarantine or runs;
#   - remove_table(drop_local => true) drops only a table the caller owns.

DB=sec_review
ROLES=(sec_rev_evil sec_rev_att sec_rev_vic sec_rev_other sec_rev_srv)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

su_server wh treble_test.wh_odbc >/dev/null
map_reader postgres wh >/dev/null
sq >/dev/null <<'SQL'
GRANT treble_sync_admin TO sec_rev_evil, sec_rev_att, sec_rev_vic;
GRANT CREATE ON SCHEMA public TO sec_rev_att, sec_rev_vic, sec_rev_other;
GRANT USAGE ON FOREIGN SERVER wh TO sec_rev_evil, sec_rev_att, sec_rev_vic;
CREATE SCHEMA evil AUTHORIZATION sec_rev_evil;
SQL
for r in sec_rev_evil sec_rev_att sec_rev_vic; do map_reader $r wh >/dev/null; done
whq -c "DROP TABLE IF EXISTS sec_rev_t1, sec_rev_c, sec_rev_d" \
    -c "CREATE TABLE sec_rev_t1 (id int PRIMARY KEY, v text, synced_at timestamp)" \
    -c "INSERT INTO sec_rev_t1 VALUES (1, 'a', '2026-11-28')" \
    -c "CREATE TABLE sec_rev_c (id int PRIMARY KEY, v text, synced_at timestamp)" \
    -c "INSERT INTO sec_rev_c VALUES (1, 'secret-4111', '2026-11-28'), (2, '7', '2026-11-28')" \
    -c "CREATE TABLE sec_rev_d (id int PRIMARY KEY, v text, synced_at timestamp)" \
    -c "INSERT INTO sec_rev_d VALUES (1, 'x', '2026-11-28')"

# --- verify leaves no setting of the owner's code in the caller's session
as sec_rev_evil >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('sec_rev_t1', 'wh', key_columns => '{id}', local_table => 'evil.sec_rev_t1');
SELECT status FROM treble_sync.sync_table('sec_rev_t1');
CREATE FUNCTION evil.hook() RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'evil, pg_catalog', false);
    PERFORM pg_catalog.set_config('statement_timeout', '4242', false);
    RETURN true;
END $f$;
CREATE FUNCTION evil.lower(text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
    BEGIN EXECUTE 'ALTER ROLE sec_rev_evil SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
    RETURN pg_catalog.lower($1);
END $f$;
ALTER TABLE evil.sec_rev_t1 ENABLE ROW LEVEL SECURITY;
ALTER TABLE evil.sec_rev_t1 FORCE ROW LEVEL SECURITY;
CREATE POLICY p ON evil.sec_rev_t1 USING (evil.hook());
SQL
try postgres "SET client_min_messages = warning;
SELECT count(*) > 0 FROM treble_sync.verify('sec_rev_t1');
SELECT current_setting('search_path') || '|' || current_setting('statement_timeout');
SELECT lower('ABC');"
check "after verify, the caller's search_path and settings are its own" \
    "t
\"\$user\", public|0
abc" "$OUT"
check "and the owner's look-alike did not run as the superuser" f "$(is_super sec_rev_evil)"

# --- a planted schema cron is not pg_cron
sq -c "GRANT CREATE ON DATABASE $DB TO sec_rev_att" >/dev/null
as sec_rev_att >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA cron;
CREATE FUNCTION cron.pwn() RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
    BEGIN EXECUTE 'ALTER ROLE sec_rev_att SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
    RETURN true;
END $f$;
CREATE VIEW cron.job AS SELECT 'treble_sync: x'::text AS jobname, 1::bigint AS jobid,
    '* * * * *'::text AS schedule, true AS active, current_database()::name AS database
    WHERE cron.pwn();
CREATE FUNCTION cron.schedule(text, text, text) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN PERFORM cron.pwn(); RETURN 1; END $f$;
SQL
try postgres "SELECT count(*) FROM treble_sync.status"
check "a superuser reads the status with a planted schema cron" 0 "$RC"
check "the planted cron.job ran nothing" f "$(is_super sec_rev_att)"
refused "schedule() does not take a planted schema cron for pg_cron" postgres \
    "SELECT treble_sync.schedule('sec_rev_t1', '0 * * * *')" 0A000 "pg_cron is not installed"
check "the planted cron.schedule ran nothing" f "$(is_super sec_rev_att)"
sq -c "ALTER ROLE sec_rev_att NOSUPERUSER" -c "DROP SCHEMA cron CASCADE" >/dev/null 2>&1

# --- a non-superuser's server braces only Driver
MARIA_CS=$(sq -c "SELECT current_setting('treble_test.mariadb_odbc', true)")
sq -c "GRANT USAGE ON FOREIGN DATA WRAPPER treble_sync TO sec_rev_srv" >/dev/null
if [[ -n $MARIA_CS ]]; then
    refused "a braced value cannot smuggle INITSTMT past the MariaDB allow-list" sec_rev_srv \
        "CREATE SERVER s_brace FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string \$\$$MARIA_CS;NO_CACHE={1;INITSTMT=LOAD DATA LOCAL INFILE 'pg_hba.conf' INTO TABLE loot;Z=}\$\$)" \
        HV024 NO_CACHE
else
    skip "MariaDB is not installed"
fi
refused "a value holding a semicolon is refused too" sec_rev_srv \
    "CREATE SERVER s_semi FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string \$\$Driver={PostgreSQL Unicode};Server=127.0.0.1;Database={wh;ConnSettings=x}\$\$)" \
    HV024 Database

# --- log rows follow the owner: a name registered again opens nothing
as sec_rev_vic >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE public.vic_c (id int PRIMARY KEY, v int, synced_at timestamp);
SELECT name FROM treble_sync.add_table('sec_rev_c', 'wh', key_columns => '{id}', name => 'orders',
    local_table => 'public.vic_c', on_bad_row => 'quarantine', max_bad_row_ratio => 1);
SELECT status FROM treble_sync.sync_table('orders');
SELECT treble_sync.remove_table('orders');
SQL
check "the victim's quarantine holds its bad value" 1 \
    "$(sq -c "SELECT count(*) FROM treble_sync.quarantine WHERE raw_value = 'secret-4111'")"
as sec_rev_att >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('sec_rev_d', 'wh', key_columns => '{id}', name => 'orders', local_table => 'public.att_d');
SELECT status FROM treble_sync.sync_table('orders');
SQL
check "another role registering the freed name reads none of its quarantine" 0 \
    "$(as sec_rev_att -c "SELECT count(*) FROM treble_sync.quarantine")"
check "nor its runs" "sec_rev_att" \
    "$(as sec_rev_att -c "SELECT string_agg(DISTINCT owner::text, ',') FROM treble_sync.runs")"

# --- remove_table drops only a table the caller owns
as sec_rev_vic -c "SET client_min_messages = warning" \
    -c "SELECT name FROM treble_sync.add_table('sec_rev_d', 'wh', key_columns => '{id}', name => 'd_reg', local_table => 'public.vic_d')" >/dev/null
sq -c "ALTER TABLE public.vic_d OWNER TO sec_rev_other" >/dev/null
refused "remove_table(drop_local) does not drop a table the caller no longer owns" sec_rev_vic \
    "SELECT treble_sync.remove_table('d_reg', drop_local => true)" 42501
check "the table is still there, and so is the registration" "1|1" \
    "$(sq -c "SELECT (SELECT count(*) FROM pg_class WHERE relname = 'vic_d') || '|' || (SELECT count(*) FROM treble_sync.tables WHERE name = 'd_reg')")"
