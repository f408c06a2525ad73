#!/usr/bin/env bash
#
# The value fuzzer, against every warehouse. For each warehouse of
# TS_WAREHOUSES it makes TS_FUZZ_TABLES tables of hostile values, each
# chosen by test/warehouses/fuzz_gen.py from the seed, the warehouse and
# the table's number alone (see there for what it generates): hostile
# table and column names, random column types of that warehouse filled
# with their edge values, keys equal under one type and different as text.
# Each table is written with the warehouse's own client, registered
# (on_bad_row quarantine, skip or fail at random; keep_history now and
# then), loaded, changed and synced for 1 to 3 cycles (new rows,
# corrections in place with a new cursor, second rows of a key, removals
# in the hot window), then verified, one day repaired, and its history
# read. After every cycle:
#   * a failed cycle applied nothing: the watermark and the copy are as
#     before it;
#   * otherwise every warehouse row, read back with the warehouse's own
#     client, either landed exactly in the copy (the newest version of its
#     key under the copy's key equality; compared value by value as
#     canonical text per kind: integers by value, numerics by value and
#     scale (SQLite: by value), floats as their shortest exact text, text
#     and binary as the hex of their bytes, times as instants to the
#     microsecond), or was reported as a bad row: in treble_sync.quarantine
#     (on_bad_row quarantine) or counted in the runs' rows_bad (skip);
#     under fail, a cycle that succeeded must have landed every row;
# after the cycles, on a table whose copy equals the warehouse with no bad
# row, verify finds every day matching (also after repair); repair of a
# day leaves the copy equal to the warehouse (or fails and applies
# nothing); as_of at the watermark equals the copy; and after every table
# the destination server has not crashed (pg_postmaster_start_time() is
# unchanged, and its log has no "terminated by signal", "TRAP:" or
# "server process ... was terminated").
#
#   TS_FUZZ_SEED    the seed (random if unset; printed either way)
#   TS_FUZZ_TABLES  tables per warehouse (3)
#   TS_FUZZ_FIRST   the number of the first table (0): with TS_FUZZ_TABLES=1,
#                   replays one table
#   TS_FUZZ_KNOWN   value classes left out while their fix is pending,
#                   comma-separated (see fuzz_gen.py's GATES); by default
#                   the PENDING list below; none: every class
#   TS_FUZZ_LOG     a file that gets one line per failed check (for a
#                   long run's tally)
#   TS_FUZZ_TAG     a word that keeps this run's databases and warehouse
#                   tables apart from another run's at the same time
#   TS_WAREHOUSES   which warehouses (postgresql mariadb sqlite clickhouse)
#
# Replay one table: TS_FUZZ_SEED=N TS_FUZZ_FIRST=T TS_FUZZ_TABLES=1
#   TS_WAREHOUSES=W prove -v test/warehouses/fuzz.t
# (the failing line prints it). TS_FUZZ_KEEP=1 keeps the generated files
# and the warehouse table.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced. Prints TAP: one line per table.

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
read -r -a WAREHOUSES <<<"${TS_WAREHOUSES:-postgresql mariadb sqlite clickhouse}"
TABLES=${TS_FUZZ_TABLES:-3}
FIRST=${TS_FUZZ_FIRST:-0}
SEED=${TS_FUZZ_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
# The value classes whose known failures are being fixed: left out by
# default until each fix is merged (then its name leaves this list). Every
# one of them fails on its own; TS_FUZZ_KNOWN=none runs them all.
PENDING=
TS_FUZZ_KNOWN=${TS_FUZZ_KNOWN-$PENDING}
[[ $TS_FUZZ_KNOWN == none ]] && TS_FUZZ_KNOWN=
export TS_FUZZ_KNOWN
# another run at once (TS_FUZZ_TAG=x): its own databases and warehouse tables
DBP=ts_fuzz${TS_FUZZ_TAG:+_$TS_FUZZ_TAG}
LOG=${TS_FUZZ_LOG:-/dev/null}
export PGTZ=UTC

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

TMP=$(mktemp -d)
[[ -n ${TS_FUZZ_KEEP:-} ]] || trap 'rm -rf "$TMP"' EXIT

echo "# seed $SEED (replay: TS_FUZZ_SEED=$SEED TS_FUZZ_TABLES=$TABLES TS_FUZZ_FIRST=$FIRST${TS_FUZZ_KNOWN:+ TS_FUZZ_KNOWN=$TS_FUZZ_KNOWN} prove -v test/warehouses/fuzz.t)"
[[ -n $TS_FUZZ_KNOWN ]] && echo "# value classes left out (TS_FUZZ_KNOWN): $TS_FUZZ_KNOWN"

q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "${DBP}_$W" "$@"; }

wh() {
    case $W in
        postgresql)
            PGOPTIONS="-c client_min_messages=warning" \
                psql -X -q -At -F $'\t' -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh ;;
        mariadb)
            mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" \
                -uroot -N -B wh ;;
        sqlite)
            sqlite3 -batch -bail -noheader -separator $'\t' "$TS_SQLITE_DB" ;;
        clickhouse)
            python3 "$HERE/clickhouse_sql.py" ;;
    esac
}

# the server must never crash: its start time, and its log from where this run began
START=$(psql -X -At -d postgres -c "SELECT pg_postmaster_start_time()")
DEST_LOG=${TS_DIR:-${TS_CI_DIR:-}}/dest.log
LOG_FROM=$( [[ -f $DEST_LOG ]] && stat -c %s "$DEST_LOG" || echo 0)
crashed() {
    local now
    now=$(psql -X -At -d postgres -c "SELECT pg_postmaster_start_time()" 2>&1)
    [[ $now != "$START" ]] && { echo "the server restarted: started $START, now $now"; return 0; }
    if [[ -f $DEST_LOG ]] &&
        tail -c +$((LOG_FROM + 1)) "$DEST_LOG" | grep -E -m 3 'terminated by signal|TRAP:|server process .* was terminated'; then
        return 0
    fi
    return 1
}

setup_db() {
    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${DBP}_$W" \
        -c "CREATE DATABASE ${DBP}_$W" >/dev/null
    q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
DO \$\$
DECLARE
    conn text := current_setting(CASE '$W' WHEN 'sqlite' THEN 'treble_test.sqlite_odbc'
                                           WHEN 'mariadb' THEN 'treble_test.mariadb_odbc'
                                           WHEN 'clickhouse' THEN 'treble_test.clickhouse_odbc'
                                           ELSE 'treble_test.wh_odbc' END);
BEGIN
    EXECUTE format('CREATE SERVER w FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)', conn);
    IF '$W' IN ('sqlite', 'clickhouse') THEN
        CREATE USER MAPPING FOR CURRENT_USER SERVER w;
    ELSE
        EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER w OPTIONS (user %L, password %L)',
                       current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
    END IF;
END
\$\$;
-- A warehouse value's canonical text, from what its own client printed
-- (fuzz_gen.py's dump): '!' and the text when it is no value of its kind
-- (a zero date, invalid UTF-8 stays hex, so it is never equal to a copy's).
CREATE FUNCTION fz_canon(kind text, v text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS \$\$
DECLARE
    m bigint;
    e int;
BEGIN
    IF v IS NULL OR v = 'N' THEN
        RETURN NULL;
    END IF;
    CASE kind
        WHEN 'int' THEN
            IF v !~ '^-?[0-9]+\$' THEN RETURN '!' || v; END IF;
            RETURN v::numeric::text;
        WHEN 'num' THEN RETURN v::numeric::text;
        WHEN 'numv' THEN RETURN trim_scale(v::numeric)::text;
        WHEN 'f4' THEN RETURN v::float8::float4::text;
        WHEN 'f8' THEN
            -- SQLite's ieee754(M,E): the double M * 2^E, exactly
            IF v ~ '^ieee754\(' THEN
                m := split_part(substr(v, 9), ',', 1)::bigint;
                e := rtrim(split_part(v, ',', 2), ')')::int;
                IF m = 0 THEN RETURN '0'; END IF;
                IF e < -1075 THEN RETURN '-0'; END IF;
                IF e >= 972 AND abs(m) = 4503599627370496 THEN
                    RETURN CASE WHEN m > 0 THEN 'Infinity' ELSE '-Infinity' END;
                END IF;
                RETURN (m::float8 * power(2::float8, e))::text;
            END IF;
            RETURN v::float8::text;
        WHEN 'text', 'bytes' THEN RETURN lower(v);
        WHEN 'date' THEN RETURN v::date::text;
        -- finer than microseconds is cut (docs/limits.md), not rounded
        WHEN 'ts' THEN RETURN regexp_replace(v, '^([^.]*\.[0-9]{6})[0-9]+', '\1')::timestamp::text;
        WHEN 'tstz' THEN RETURN regexp_replace(v, '^([^.]*\.[0-9]{6})[0-9]+', '\1')::timestamptz::text;
        WHEN 'uuid' THEN RETURN v::uuid::text;
        WHEN 'bool' THEN RETURN v::boolean::text;
    END CASE;
EXCEPTION WHEN others THEN
    RETURN '!' || v;
END
\$\$;
-- The copy's value as the same canonical text.
CREATE FUNCTION fz_copy(kind text, v anyelement) RETURNS text LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN
    IF v IS NULL THEN
        RETURN NULL;
    END IF;
    CASE kind
        WHEN 'int' THEN RETURN v::text::numeric::text;
        WHEN 'num' THEN RETURN v::text;
        WHEN 'numv' THEN RETURN trim_scale(v::text::numeric)::text;
        WHEN 'f4' THEN RETURN v::text::float4::text;
        WHEN 'f8' THEN RETURN v::text::float8::text;
        WHEN 'text' THEN RETURN encode(convert_to(v::text, 'UTF8'), 'hex');
        WHEN 'bytes' THEN RETURN encode(v::text::bytea, 'hex');
        WHEN 'date' THEN RETURN v::text::date::text;
        WHEN 'ts' THEN RETURN v::text::timestamp::text;
        WHEN 'tstz' THEN RETURN v::text::timestamptz::text;
        ELSE RETURN v::text;
    END CASE;
EXCEPTION WHEN others THEN
    RETURN '?' || v::text;
END
\$\$;
-- keys typed as the copy's, so that rows are one key under its equality
CREATE FUNCTION fz_key_num(v text) RETURNS numeric LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN RETURN v::numeric; EXCEPTION WHEN others THEN RETURN NULL; END
\$\$;
CREATE FUNCTION fz_key_text(v text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN
    IF v = 'N' THEN RETURN NULL; END IF;
    RETURN convert_from(decode(lower(v), 'hex'), 'UTF8');
EXCEPTION WHEN others THEN RETURN NULL;
END
\$\$;
CREATE FUNCTION fz_cur(v text) RETURNS timestamp LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN RETURN v::timestamp; EXCEPTION WHEN others THEN RETURN NULL; END
\$\$;
SQL
}

# one table; its TAP line, with diagnostics; returns 1 when it failed
run_table() {
    local t=$1 GEN=$TMP/$W/$1 problems=() clean=1 any_failed=0 out run status err wm0 wm1 d0 d1 i replay
    mkdir -p "$GEN"
    replay="TS_FUZZ_SEED=$SEED TS_FUZZ_FIRST=$t TS_FUZZ_TABLES=1 TS_WAREHOUSES=$W${TS_FUZZ_KNOWN:+ TS_FUZZ_KNOWN=$TS_FUZZ_KNOWN}"
    if ! python3 "$HERE/fuzz_gen.py" "$GEN" "$SEED" "$t" "$W"; then
        nok "$W table $t: the test could not make the table"
        return 1
    fi
    local NAME POLICY HISTORY CYCLES REPAIR_DAY CHECK SUMMARY
    # shellcheck disable=SC1091
    source "$GEN/meta.env"
    problem() { problems+=("$1"); echo "$W table $t: $1 ($replay)" >>"$LOG"; }
    if ! out=$(wh <"$GEN/wh_create.sql" 2>&1) || [[ -n $out ]]; then
        nok "$W table $t: the warehouse took the table"; sed 's/^/#   /' <<<"${out:0:2000}"
        return 1
    fi
    # compare the copy with the warehouse; sets clean=0 when anything was not exact
    compare() {
        local what=$1 res verdict
        if ! wh <"$GEN/wh_dump.sql" >"$GEN/wh.tsv" 2>"$GEN/wh.err"; then
            problem "$what: could not read the warehouse: $(head -c 300 "$GEN/wh.err")"
            return
        fi
        res=$(q -F $'\t' -f "$GEN/compare.sql" 2>&1)
        verdict=$(grep '^VERDICT' <<<"$res")
        if [[ $verdict != VERDICT$'\t'ok$'\t'* ]]; then
            problem "$what: a value changed silently: $(cut -f3 <<<"$verdict")"
            problems+=("$(grep -v '^VERDICT' <<<"$res" | head -n 12 | sed 's/^/      /')")
            clean=0
        elif [[ $(cut -f4 <<<"$verdict") != 0 ]]; then
            clean=0
        fi
    }
    sync() {
        local what=$1
        wm0=$(q -c "SELECT coalesce(watermark, 'none') FROM treble_sync.tables WHERE name = '$NAME'")
        d0=$(q -f "$GEN/digest.sql")
        run=$(q -F $'\t' -c "SELECT status, coalesce(replace(split_part(error, E'\n', 1), E'\t', ' '), '')
                              FROM treble_sync.sync_table('$NAME')" 2>&1)
        status=${run%%$'\t'*}
        err=${run#*$'\t'}
        if [[ $status == failed ]]; then
            clean=0
            any_failed=1
            wm1=$(q -c "SELECT coalesce(watermark, 'none') FROM treble_sync.tables WHERE name = '$NAME'")
            d1=$(q -f "$GEN/digest.sql")
            echo "$W table $t: $what failed: $err" >>"$LOG.failed"
            echo "#   ($what failed: ${err:0:200})"
            [[ $wm0 == "$wm1" && $d0 == "$d1" ]] ||
                problem "$what failed and applied something: watermark $wm0 -> $wm1, copy changed: $([[ $d0 != "$d1" ]] && echo yes || echo no) ($err)"
        elif [[ $status == success || $status == empty ]]; then
            compare "$what"
        else
            problem "$what: sync_table: ${run:0:300}"
            clean=0
        fi
    }

    if ! out=$(wh <"$GEN/wh_step0.sql" 2>&1) || [[ -n $out ]]; then
        nok "$W table $t: the warehouse took the rows"; sed 's/^/#   /' <<<"${out:0:2000}"
        return 1
    fi
    if ! out=$(q -f "$GEN/add.sql" 2>&1); then
        # a registration refused loudly changes nothing: noted, not a failure
        echo "#   (add_table refused: $(grep -m1 ERROR <<<"$out" | sed 's/.*ERROR: *//' | head -c 200))"
        echo "$W table $t: add_table refused: $(grep -m1 ERROR <<<"$out" | head -c 200)" >>"$LOG.failed"
    else
        sync "first load"
        for ((i = 1; i <= CYCLES; i++)); do
            if ! out=$(wh <"$GEN/wh_step$i.sql" 2>&1) || [[ -n $out ]]; then
                problem "the warehouse took the changes of cycle $i: ${out:0:500}"
                break
            fi
            sync "cycle $i"
        done
        # verify: on a copy equal to the warehouse with no bad row, every day matches
        out=$(q -F ' ' -c "SELECT count(*) FILTER (WHERE NOT match), count(*) FROM treble_sync.verify('$NAME')" 2>&1)
        if [[ $clean == 1 && $out != "0 "* ]]; then
            problem "verify on a copy equal to the warehouse: ${out:0:300} (days wrong, days)"
            q -F ' ' -c "SELECT day, warehouse_rows, local_rows, warehouse_max_cursor, local_max_cursor
                           FROM treble_sync.verify('$NAME') WHERE NOT match LIMIT 3" 2>&1 |
                while IFS= read -r l; do echo "#       $l"; done
        fi
        [[ $out == *ERROR* && $out != *bad\ row* && $out != *cannot* ]] && problem "verify: ${out:0:300}"
        # repair of a day: the copy stays equal (or the run fails and applies nothing)
        d0=$(q -f "$GEN/digest.sql")
        run=$(q -F $'\t' -c "SELECT status, coalesce(replace(split_part(error, E'\n', 1), E'\t', ' '), '')
                              FROM treble_sync.repair('$NAME', '$REPAIR_DAY')" 2>&1)
        if [[ ${run%%$'\t'*} == failed ]]; then
            d1=$(q -f "$GEN/digest.sql")
            echo "#   (repair failed: ${run#*$'\t'})"
            [[ $d0 == "$d1" ]] || problem "repair failed and changed the copy: ${run:0:300}"
        elif [[ $any_failed == 1 ]]; then
            # after a failed cycle the copy lacks what that cycle would
            # have brought: repair of one day cannot be compared whole
            :
        elif [[ ${run%%$'\t'*} == success || ${run%%$'\t'*} == empty ]]; then
            local before=$clean
            compare "repair of $REPAIR_DAY"
            if [[ $before == 1 && $clean == 1 ]]; then
                out=$(q -F ' ' -c "SELECT count(*) FILTER (WHERE NOT match), count(*) FROM treble_sync.verify('$NAME')" 2>&1)
                [[ $out == "0 "* ]] || problem "verify after repair: ${out:0:300} (days wrong, days)"
            fi
        else
            problem "repair: ${run:0:300}"
        fi
        # (after a failed cycle, repair moved the copy past the watermark's state)
        if [[ $HISTORY == 1 && $any_failed == 0 && $(q -c "SELECT watermark IS NOT NULL FROM treble_sync.tables WHERE name = '$NAME'") == t ]]; then
            out=$(q -F ' ' -f "$GEN/history.sql" 2>&1)
            [[ -z $out ]] || problem "as_of at the watermark differs from the copy: ${out:0:500}"
        fi
        q -f "$GEN/remove.sql" >/dev/null 2>&1 || problem "remove_table failed"
    fi
    if out=$(crashed); then
        problem "THE SERVER CRASHED: ${out:0:500}"
    fi
    [[ -n ${TS_FUZZ_KEEP:-} ]] || wh <<<"DROP TABLE IF EXISTS $(sed -n 's/^DROP TABLE IF EXISTS \(.*\);$/\1/p' "$GEN/wh_create.sql");" >/dev/null 2>&1
    local label
    label="$W table $t ($POLICY, $CHECK$( ((HISTORY)) && echo ', history'), $CYCLES cycles: $SUMMARY)"
    if ((${#problems[@]} == 0)); then
        ok "$label"
        [[ -n ${TS_FUZZ_KEEP:-} ]] || rm -rf "$GEN"
        return 0
    fi
    nok "$label"
    printf '%s\n' "${problems[@]}" | sed 's/^/#   /'
    echo "#   replay: $replay prove -v test/warehouses/fuzz.t"
    return 1
}

for W in "${WAREHOUSES[@]}"; do
    if [[ $W == mariadb && -z ${TS_MARIADB_PORT:-} ]]; then
        nok "mariadb: no MariaDB warehouse was started (install mariadb-server)"; continue
    fi
    if [[ $W == clickhouse && -z ${TS_CLICKHOUSE_PORT:-} ]]; then
        nok "clickhouse: no ClickHouse warehouse was started (run .ci/clickhouse setup as root)"; continue
    fi
    started=$SECONDS
    setup_db
    bad=0
    for ((t = FIRST; t < FIRST + TABLES; t++)); do
        run_table "$t" || bad=$((bad + 1))
    done
    echo "# $W: $TABLES tables from $FIRST, $bad failed, in $((SECONDS - started)) s; runs: $(q -c "SELECT string_agg(status || ' ' || n, ', ' ORDER BY status)
                            FROM (SELECT status, count(*) AS n FROM treble_sync.runs GROUP BY status) s")"
done
for W in "${WAREHOUSES[@]}"; do
    [[ -n ${TS_FUZZ_KEEP:-} ]] ||
        psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${DBP}_$W" >/dev/null
done
echo "# seed $SEED"
echo "1..$n"
exit $((failed > 0))
