#!/usr/bin/env bash
#
# The warehouse password never shows: not in the server log (even at
# log_min_messages = debug5), not in errors or run rows, not in
# pg_stat_activity, not in the driver's log files, not in pg_dump output
# for a role that is not a superuser.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER). Prints TAP.

set -u

DB=secrets
PW=$TS_WH_PASSWORD
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# how many times the password occurs in a file (0 if it does not exist)
occurrences() { if [[ -f $1 ]]; then grep -cF -- "$PW" "$1"; else echo 0; fi; }

restore_logging() {
    psql -X -q -d postgres -c 'ALTER SYSTEM RESET log_min_messages' \
        -c 'SELECT pg_reload_conf()' >/dev/null 2>&1
}
trap restore_logging EXIT

echo "1..8"

setup_db
q -c "ALTER SERVER wh OPTIONS (ADD max_retries '0')"
whq -c "DROP TABLE IF EXISTS secret_sends" \
    -c "CREATE TABLE secret_sends (id int PRIMARY KEY, v text, synced_at timestamp)" \
    -c "INSERT INTO secret_sends SELECT g, 'v' || g, '2026-11-28' FROM generate_series(1, 100) g"

log=$TS_DIR/dest.log
before=$(occurrences "$log")
find /tmp -maxdepth 1 -name 'psqlodbc_*.log' -newer "$log" -delete 2>/dev/null
touch "$TS_DIR/secrets.start"

# everything that touches the password, at the most verbose log level
psql -X -q -d postgres -c "ALTER SYSTEM SET log_min_messages = 'debug5'" -c 'SELECT pg_reload_conf()' >/dev/null
sleep 0.5
q -c "SELECT name FROM treble_sync.add_table('secret_sends', 'wh')" >/dev/null
is "$(q -c "SELECT status FROM treble_sync.sync_table('secret_sends')")" success "a cycle at debug5 succeeds"
q -c "SELECT status FROM treble_sync.resync('secret_sends')" >/dev/null

# a wrong password: the connection fails; the error must not echo either password
q -c "ALTER USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (SET password 'not-the-password-$$')" >/dev/null
status=$(q -c "SELECT status FROM treble_sync.sync_table('secret_sends')")
is "$status" failed "a cycle with a wrong password fails"
err=$(q -c "SELECT error FROM treble_sync.runs ORDER BY run_id DESC LIMIT 1")
if [[ $err == *"not-the-password-$$"* || $err == *"$PW"* ]]; then
    nok "the failed run's error holds no password"
else
    ok "the failed run's error holds no password"
fi
client_err=$(q -c "SELECT treble_sync.add_table('secret_sends', 'wh', name => 'again')" 2>&1)
if [[ $client_err == *"not-the-password-$$"* ]]; then
    nok "the error of add_table holds no password"
else
    ok "the error of add_table holds no password"
fi
q -c "ALTER USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (SET password '$(printf %s "$PW" | sed "s/'/''/g")')" >/dev/null

# pg_stat_activity, while a cycle is running and after
q -c "SELECT status FROM treble_sync.sync_table('secret_sends')" >/dev/null &
seen=0
for _ in $(seq 1 20); do
    c=$(q -c "SELECT count(*) FROM pg_stat_activity WHERE strpos(query, current_setting('treble_test.wh_password')) > 0")
    seen=$((seen + c))
    sleep 0.02
done
wait
is "$seen" 0 "no pg_stat_activity query text holds the password"

restore_logging
sleep 0.5
is "$(( $(occurrences "$log") - before ))" 0 "the server log at debug5 holds no password"

odbc_hits=0
while IFS= read -r f; do
    odbc_hits=$((odbc_hits + $(occurrences "$f")))
done < <(find /tmp -maxdepth 1 -name 'psqlodbc_*.log' -newer "$TS_DIR/secrets.start" 2>/dev/null)
is "$odbc_hits" 0 "psqlODBC's log files hold no password"

# pg_dump by a role that is not a superuser: user mapping options stay
# hidden. It reads what it dumps: the tables, and the identity sequences
# the extension's configuration dumps with them (as pg_read_all_data could)
psql -X -q -d "$DB" -c "DROP ROLE IF EXISTS regress_dumper" -c "CREATE ROLE regress_dumper LOGIN" \
    -c "GRANT SELECT ON ALL TABLES IN SCHEMA treble_sync, public TO regress_dumper" \
    -c "GRANT SELECT ON ALL SEQUENCES IN SCHEMA treble_sync TO regress_dumper" >/dev/null 2>&1
"$TS_PG_BIN/pg_dump" -h "$TS_SOCK" -p "$TS_DEST_PORT" -U regress_dumper -d "$DB" \
    >"$TS_DIR/secrets.dump" 2>"$TS_DIR/secrets.dump.err"
if grep -q "CREATE USER MAPPING" "$TS_DIR/secrets.dump" && ! grep -qF -- "$PW" "$TS_DIR/secrets.dump"; then
    ok "pg_dump by a non-superuser dumps the user mapping without its password"
else
    nok "pg_dump by a non-superuser dumps the user mapping without its password"
    sed 's/^/# /' "$TS_DIR/secrets.dump.err"
fi
rm -f "$TS_DIR/secrets.dump" "$TS_DIR/secrets.dump.err"

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP ROLE IF EXISTS regress_dumper" >/dev/null 2>&1
rm -f "$TS_DIR/secrets.start"
exit $((failed > 0))
