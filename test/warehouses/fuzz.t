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
#   TS_FUZZ_JOBS    tables of each warehouse run at once (1): job j of J
#                   takes the tables T with T % J == j - 1, in a database,
#                   warehouse table names (tag jJ) and SQLite file of its
#                   own; every warehouse's jobs run at the same time
#   (a tagged run writes a SQLite file of its own too)
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
JOBS=${TS_FUZZ_JOBS:-1}
# another run at once (TS_FUZZ_TAG=x): its own databases and warehouse tables
DBP=ts_fuzz${TS_FUZZ_TAG:+_$TS_FUZZ_TAG}
LOG=${TS_FUZZ_LOG:-/dev/null}
export PGTZ=UTC
# the server's own psql, not Debian's wrapper (a Perl start for every call)
PSQL=psql
[[ -x ${TS_PG_BIN:-}/psql ]] && PSQL=$TS_PG_BIN/psql

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

TMP=$(mktemp -d)
[[ -n ${TS_FUZZ_KEEP:-} ]] || trap 'rm -rf "$TMP"' EXIT

echo "# seed $SEED (replay: TS_FUZZ_SEED=$SEED TS_FUZZ_TABLES=$TABLES TS_FUZZ_FIRST=$FIRST${TS_FUZZ_KNOWN:+ TS_FUZZ_KNOWN=$TS_FUZZ_KNOWN} prove -v test/warehouses/fuzz.t)"
[[ -n $TS_FUZZ_KNOWN ]] && echo "# value classes left out (TS_FUZZ_KNOWN): $TS_FUZZ_KNOWN"

q() { "$PSQL" -X -q -At -v ON_ERROR_STOP=1 -d "${DBP}_$W" "$@"; }

wh() {
    case $W in
        postgresql)
            PGOPTIONS="-c client_min_messages=warning" \
                "$PSQL" -X -q -At -F $'\t' -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh ;;
        mariadb)
            mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" \
                -uroot -N -B wh ;;
        sqlite)
            sqlite3 -batch -bail -noheader -separator $'\t' "$SQLITE_DB" ;;
        clickhouse)
            ch ;;
    esac
}

# SQL on stdin to the ClickHouse warehouse's HTTP interface, one statement
# (ending in ";" at the end of a line, as fuzz_gen.py writes them) at a
# time, printing each result: clickhouse_sql.py's settings, through curl,
# which starts many times faster than Python on a busy machine
CH_URL="http://127.0.0.1:${TS_CLICKHOUSE_PORT:-0}/?database=wh&mutations_sync=2&lightweight_deletes_sync=2&default_table_engine=MergeTree&create_table_empty_primary_key_by_default=1&output_format_tsv_crlf_end_of_line=0"
ch() {
    local d f code
    d=$(mktemp -d "$TMP/ch.XXXXXX")
    LC_ALL=C awk -v d="$d" 'BEGIN { RS = ";\n" } /[^ \t\n]/ { n++; printf "%s", $0 > (d "/" sprintf("%06d", n)); close(d "/" sprintf("%06d", n)) }'
    for f in "$d"/0*; do
        [[ -f $f ]] || continue
        code=$(curl -sS -o "$d/out" -w '%{http_code}' --data-binary @"$f" "$CH_URL" 2>&1)
        if [[ $code != 200 ]]; then
            echo "clickhouse: $code $(head -c 2000 "$d/out" 2>/dev/null)" >&2
            echo "  in: $(head -c 300 "$f")" >&2
            rm -rf "$d"
            return 1
        fi
        cat "$d/out"
    done
    rm -rf "$d"
}

# the server must never crash: its start time, and its log from where this run began
START=$("$PSQL" -X -At -d postgres -c "SELECT pg_postmaster_start_time()")
DEST_LOG=${TS_DIR:-${TS_CI_DIR:-}}/dest.log
LOG_FROM=$( [[ -f $DEST_LOG ]] && stat -c %s "$DEST_LOG" || echo 0)
crashed() {
    local now
    now=$("$PSQL" -X -At -d postgres -c "SELECT pg_postmaster_start_time()" 2>&1)
    [[ $now != "$START" ]] && { echo "the server restarted: started $START, now $now"; return 0; }
    if [[ -f $DEST_LOG ]] &&
        tail -c +$((LOG_FROM + 1)) "$DEST_LOG" | grep -E -m 3 'terminated by signal|TRAP:|server process .* was terminated'; then
        return 0
    fi
    return 1
}

setup_db() {
    "$PSQL" -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${DBP}_$W" \
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
    -- a job's own SQLite file (TS_FUZZ_JOBS)
    conn := replace(conn, 'Database=$TS_SQLITE_DB', 'Database=$SQLITE_DB');
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
    local t=$1 GEN=$TMP/$W/$1 problems=() clean=1 any_failed=0 out res status err wm0 wm1 d0 d1 i replay
    local began=$EPOCHREALTIME
    mkdir -p "$GEN"
    replay="TS_FUZZ_SEED=$SEED TS_FUZZ_FIRST=$t TS_FUZZ_TABLES=1 TS_WAREHOUSES=$W${TS_FUZZ_KNOWN:+ TS_FUZZ_KNOWN=$TS_FUZZ_KNOWN}${TS_FUZZ_TAG:+ TS_FUZZ_TAG=$TS_FUZZ_TAG}"
    # (run_warehouse makes the tables' files ahead, many in one process)
    if [[ ! -f $GEN/meta.env ]] && ! python3 "$HERE/fuzz_gen.py" "$GEN" "$SEED" "$t" "$W"; then
        nok "$W table $t: the test could not make the table"
        return 1
    fi
    local NAME POLICY HISTORY CYCLES REPAIR_DAY CHECK SUMMARY
    # shellcheck disable=SC1091
    source "$GEN/meta.env"
    problem() { problems+=("$1"); echo "$W table $t: $1 ($replay)" >>"$LOG"; }
    if ! out=$(cat "$GEN/wh_create.sql" "$GEN/wh_step0.sql" | wh 2>&1) || [[ -n $out ]]; then
        nok "$W table $t: the warehouse took the table and its rows"; sed 's/^/#   /' <<<"${out:0:2000}"
        return 1
    fi
    # the warehouse's rows, read back with its own client into wh.tsv
    # (before a cycle: the cycle does not change them)
    dump() {
        wh <"$GEN/wh_dump.sql" >"$GEN/wh.tsv" 2>"$GEN/wh.err" && return 0
        problem "$1: could not read the warehouse: $(head -c 300 "$GEN/wh.err")"
        : >"$GEN/wh.tsv"
        return 1
    }
    # the verdict of compare.sql (its output in res); sets clean=0 when
    # anything was not exact
    verdict() {
        local what=$1 res=$2 verdict
        verdict=$(grep '^VERDICT' <<<"$res")
        if [[ $verdict != VERDICT$'\t'ok$'\t'* ]]; then
            problem "$what: a value changed silently: $(cut -f3 <<<"$verdict")"
            problems+=("$(grep -v '^VERDICT' <<<"$res" | head -n 12 | sed 's/^/      /')")
            clean=0
        elif [[ $(cut -f4 <<<"$verdict") != 0 ]]; then
            clean=0
        fi
    }
    # one session: the watermark and the copy's digest, the call, both
    # again, and compare.sql; the lines WM, DG, RUN, WM, DG, then compare's
    session() {
        local call=$1 wmq="SELECT 'WM', coalesce(watermark, 'none') FROM treble_sync.tables WHERE name = '$NAME'"
        q -F $'\t' -c "$wmq" -f "$GEN/digest.sql" \
            -c "SELECT 'RUN', status, coalesce(replace(split_part(error, E'\n', 1), E'\t', ' '), '') FROM $call" \
            -c "$wmq" -f "$GEN/digest.sql" -f "$GEN/compare.sql" 2>"$GEN/q.err"
    }
    # compare.sql's output ($1) says the warehouse has no row with a cursor
    nothing() {
        [[ $(grep '^VERDICT' <<<"$1") == *", 0 rows without a key the copy can hold, "*", 0 rows compared"* ]]
    }
    # the fields of a session's output: wm0 d0 status err wm1 d1, res (compare's)
    parse() {
        local l
        wm0='' d0='' status='' err='' wm1='' d1='' res=''
        while IFS= read -r l; do
            case $l in
                WM$'\t'*) if [[ -z $status ]]; then wm0=${l#*$'\t'}; else wm1=${l#*$'\t'}; fi ;;
                DG$'\t'*) if [[ -z $status ]]; then d0=${l#*$'\t'}; else d1=${l#*$'\t'}; fi ;;
                RUN$'\t'*) l=${l#*$'\t'}; status=${l%%$'\t'*}; err=${l#*$'\t'} ;;
                *) res+=$l$'\n' ;;
            esac
        done <<<"$1"
    }
    sync() {
        local what=$1 out
        dump "$what"
        out=$(session "treble_sync.sync_table('$NAME')")
        parse "$out"
        if [[ $status == failed ]]; then
            clean=0
            any_failed=1
            echo "$W table $t: $what failed: $err" >>"$LOG.failed"
            echo "#   ($what failed: ${err:0:200})"
            [[ $wm0 == "$wm1" && $d0 == "$d1" ]] ||
                problem "$what failed and applied something: watermark $wm0 -> $wm1, copy changed: $([[ $d0 != "$d1" ]] && echo yes || echo no) ($err)"
        elif [[ $status == success || $status == empty ]] && nothing "$res"; then
            # the warehouse holds no row a cut may take: the watermark
            # stays, a table never loaded stays as it is, and a loaded one
            # loses the rows of its hot window (docs/limits.md, "Empty
            # warehouse table"), which is all of them here (the changes
            # remove rows in the window only)
            [[ $wm0 == "$wm1" ]] ||
                problem "$what on an empty warehouse table moved the watermark: $wm0 -> $wm1"
            [[ $wm0 != none || $d0 == "$d1" ]] ||
                problem "$what on an empty warehouse table changed a copy never loaded"
            verdict "$what" "$res"
        elif [[ $status == success || $status == empty ]]; then
            verdict "$what" "$res"
        else
            problem "$what: sync_table: $(head -c 300 "$GEN/q.err") ${out:0:300}"
            clean=0
        fi
    }

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
        dump "repair of $REPAIR_DAY"
        out=$(session "treble_sync.repair('$NAME', '$REPAIR_DAY')")
        parse "$out"
        if [[ $status == failed ]]; then
            echo "#   (repair failed: $err)"
            [[ $d0 == "$d1" ]] || problem "repair failed and changed the copy: ${err:0:300}"
        elif [[ $any_failed == 1 ]]; then
            # after a failed cycle the copy lacks what that cycle would
            # have brought: repair of one day cannot be compared whole
            :
        elif [[ $status == success || $status == empty ]]; then
            local before=$clean
            verdict "repair of $REPAIR_DAY" "$res"
            if [[ $before == 1 && $clean == 1 ]]; then
                out=$(q -F ' ' -c "SELECT count(*) FILTER (WHERE NOT match), count(*) FROM treble_sync.verify('$NAME')" 2>&1)
                [[ $out == "0 "* ]] || problem "verify after repair: ${out:0:300} (days wrong, days)"
            fi
        else
            problem "repair: $(head -c 300 "$GEN/q.err") ${out:0:300}"
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
    label="$W table $t ($POLICY, $CHECK$( ((HISTORY)) && echo ', history'), $CYCLES cycles: $SUMMARY; $(elapsed "$began") s)"
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

# seconds since $1 (an EPOCHREALTIME), to the tenth
elapsed() {
    local a=${1/[.,]/} b=${EPOCHREALTIME/[.,]/}
    local d=$(((b - a) / 100000))
    echo "$((d / 10)).$((d % 10))"
}

# the tables T of warehouse W with T % step == first % step, from first
run_warehouse() {
    local first=$1 step=$2 t bad=0 count=0 began=$EPOCHREALTIME
    # a tagged run (or job) writes a SQLite file of its own
    SQLITE_DB=${TS_SQLITE_DB:-}
    if [[ $W == sqlite && -n ${TS_FUZZ_TAG:-} ]]; then
        SQLITE_DB=${TS_SQLITE_DB%.sqlite}_$DBP.sqlite
        rm -f "$SQLITE_DB"
        sqlite3 "$SQLITE_DB" 'PRAGMA user_version = 0' &&
            chown --reference="$TS_SQLITE_DB" "$SQLITE_DB" 2>/dev/null
    fi
    setup_db
    for ((t = first; t < FIRST + TABLES; t += step)); do
        # the files of the next 20 tables, in one process
        if (((t - first) / step % 20 == 0)); then
            mkdir -p "$TMP/$W"
            python3 "$HERE/fuzz_gen.py" "$TMP/$W" "$SEED" "$t:$((t + 20 * step < FIRST + TABLES ? t + 20 * step : FIRST + TABLES)):$step" "$W"
        fi
        run_table "$t" || bad=$((bad + 1))
        count=$((count + 1))
    done
    echo "# $W${TS_FUZZ_TAG:+ ($TS_FUZZ_TAG)}: $count tables from $first, $bad failed, in $(elapsed "$began") s; runs: $(q -c "SELECT string_agg(status || ' ' || n, ', ' ORDER BY status)
                            FROM (SELECT status, count(*) AS n FROM treble_sync.runs GROUP BY status) s")"
    [[ -n ${TS_FUZZ_KEEP:-} ]] ||
        "$PSQL" -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${DBP}_$W" >/dev/null
    [[ $SQLITE_DB == "${TS_SQLITE_DB:-}" || -n ${TS_FUZZ_KEEP:-} ]] || rm -f "$SQLITE_DB"
}

began_all=$EPOCHREALTIME
if ((JOBS <= 1)); then
    for W in "${WAREHOUSES[@]}"; do
        if [[ $W == mariadb && -z ${TS_MARIADB_PORT:-} ]]; then
            nok "mariadb: no MariaDB warehouse was started (install mariadb-server)"; continue
        fi
        if [[ $W == clickhouse && -z ${TS_CLICKHOUSE_PORT:-} ]]; then
            nok "clickhouse: no ClickHouse warehouse was started (run .ci/clickhouse setup as root)"; continue
        fi
        run_warehouse "$FIRST" 1
    done
else
    # every warehouse's jobs at once, each printing into a file of its
    # own; their TAP lines are numbered again here
    pids=()
    for W in "${WAREHOUSES[@]}"; do
        if [[ $W == mariadb && -z ${TS_MARIADB_PORT:-} ]]; then
            nok "mariadb: no MariaDB warehouse was started (install mariadb-server)"; continue
        fi
        if [[ $W == clickhouse && -z ${TS_CLICKHOUSE_PORT:-} ]]; then
            nok "clickhouse: no ClickHouse warehouse was started (run .ci/clickhouse setup as root)"; continue
        fi
        for ((j = 1; j <= JOBS && FIRST + j - 1 < FIRST + TABLES; j++)); do
            (
                TS_FUZZ_TAG=${TS_FUZZ_TAG:-}j$j
                export TS_FUZZ_TAG
                DBP=ts_fuzz_$TS_FUZZ_TAG
                run_warehouse $((FIRST + j - 1)) "$JOBS"
            ) >"$TMP/out.$W.$j" 2>&1 &
            pids+=($!)
        done
    done
    wait "${pids[@]}"
    for W in "${WAREHOUSES[@]}"; do
        for ((j = 1; j <= JOBS; j++)); do
            [[ -f $TMP/out.$W.$j ]] || continue
            while IFS= read -r l; do
                if [[ $l =~ ^ok\ [0-9]+\ -\ (.*)$ ]]; then
                    ok "${BASH_REMATCH[1]}"
                elif [[ $l =~ ^not\ ok\ [0-9]+\ -\ (.*)$ ]]; then
                    nok "${BASH_REMATCH[1]}"
                else
                    echo "$l"
                fi
            done <"$TMP/out.$W.$j"
        done
    done
fi
echo "# $n tables in $(elapsed "$began_all") s"
echo "# seed $SEED"
echo "1..$n"
exit $((failed > 0))
