#!/usr/bin/env bash
#
# The randomized differential test, against every warehouse. The scenario
# of test/random.sql (which runs it against the PostgreSQL warehouse
# through dblink) runs here against each warehouse of TS_WAREHOUSES: the
# PostgreSQL one through psqlODBC, MariaDB, the SQLite file and ClickHouse.
#
# A warehouse table whose business key is not a primary key is changed at
# random before each cycle: new rows (now and then one written twice),
# corrections in place and as a second row of the same key, event dates
# moving into and out of the hot window, NULL event dates, odd text
# (quotes, backslashes, tabs, newlines, carriage returns, unicode beyond
# the Basic Multilingual Plane, 2,100 characters), timestamps written with
# and without their fraction, removals. After every cycle:
#   * the cycle succeeds;
#   * the copy equals the warehouse's newest version of every key, value
#     by value (the warehouse read with its own client, every text as
#     UTF-8 hex, loaded into typed columns on the destination);
#   * the warehouse holds exactly the rows the test meant to write (its
#     model), so a change a client or an engine took differently (a
#     ClickHouse mutation, an escape in a literal) cannot go unseen.
# The copy of the first hot_window_check keeps history (keep_history): the test keeps the warehouse's
# deduplicated state at every cut itself, and after the last cycle
#   * as_of at every cut equals the state then, row for row;
#   * changes between any two cuts equals the difference of their states:
#     the keys inserted, updated (old and new rows) and deleted.
#
# The changes are chosen by test/warehouses/random_gen.py from a seeded
# generator, within what treble_sync promises (docs/limits.md; see there).
# The same seed gives the same changes on every warehouse: in their own
# SQL, on ClickHouse a MergeTree holding every version, corrected in place
# with ALTER TABLE ... UPDATE and removed with lightweight DELETE, both
# synchronous (test/warehouses/clickhouse_sql.py).
#
#   TS_RANDOM_SEED    the seed (random if unset; printed either way)
#   TS_RANDOM_CYCLES  cycles per warehouse after the first load (15)
#   TS_WAREHOUSES     which warehouses (postgresql mariadb sqlite clickhouse)
#   TS_HOT_WINDOW_CHECKS  which values of hot_window_check (keys rows): each
#                     is a registration of its own of the same warehouse
#                     table, synced and compared every cycle
#   TS_RANDOM_GROUP   set: those registrations are one sync group, each
#                     cycle is one sync_group() (test/warehouses/random_groups.t)
#
# Replay a run: TS_RANDOM_SEED=N TS_RANDOM_CYCLES=M prove -v test/warehouses/random.t
# A failing cycle prints its differences and its changes; a run of fewer
# cycles with the same seed makes the same first cycles.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced. Prints TAP: one line per warehouse per cycle.

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
read -r -a WAREHOUSES <<<"${TS_WAREHOUSES:-postgresql mariadb sqlite clickhouse}"
read -r -a CHECKS <<<"${TS_HOT_WINDOW_CHECKS:-keys rows}"
# the copy of the first value keeps history (check_history)
HISTORY_CHECK=${CHECKS[0]}
CYCLES=${TS_RANDOM_CYCLES:-15}
SEED=${TS_RANDOM_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
# a warehouse stops after this many failing cycles (the rest would repeat them)
MAX_FAILURES=3

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

REPLAY="TS_RANDOM_SEED=$SEED TS_RANDOM_CYCLES=$CYCLES"
[[ -n ${TS_WAREHOUSES:-} ]] && REPLAY+=" TS_WAREHOUSES='$TS_WAREHOUSES'"
[[ -n ${TS_HOT_WINDOW_CHECKS:-} ]] && REPLAY+=" TS_HOT_WINDOW_CHECKS='$TS_HOT_WINDOW_CHECKS'"
[[ -n ${TS_RANDOM_GROUP:-} ]] && REPLAY+=" TS_RANDOM_GROUP=1"
echo "# seed $SEED (replay: $REPLAY prove -v test/warehouses/random.t)"

# the destination database of one warehouse
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "ts_random_$W" "$@"; }

# run SQL on the current warehouse $W with its own client
wh() {
    case $W in
        postgresql)
            PGOPTIONS="-c client_min_messages=warning" \
                psql -X -q -At -F $'\t' -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@" ;;
        mariadb)
            mariadb --no-defaults --default-character-set=utf8mb4 -S "$TS_MARIADB_SOCK" \
                -uroot -N -B wh ;;
        sqlite)
            sqlite3 -batch -bail -noheader -separator $'\t' "$TS_SQLITE_DB" ;;
        clickhouse)
            python3 "$HERE/clickhouse_sql.py" ;;
    esac
}

create_table() {
    case $W in
        postgresql) wh <<'SQL'
DROP TABLE IF EXISTS random_sends;
CREATE TABLE random_sends (id bigint NOT NULL, campaign text, status text, cost numeric(10,2),
    note text, scheduled_at timestamp(6), synced_at timestamp(6) NOT NULL);
SQL
            ;;
        # the longest note is 2,100 characters: MariaDB is read in blocks
        # sized from the declared sizes
        mariadb) wh <<'SQL'
DROP TABLE IF EXISTS random_sends;
CREATE TABLE random_sends (id BIGINT NOT NULL, campaign VARCHAR(20), status VARCHAR(20), cost DECIMAL(10,2),
    note VARCHAR(2100), scheduled_at DATETIME(6), synced_at DATETIME(6) NOT NULL);
SQL
            ;;
        sqlite) wh <<'SQL'
DROP TABLE IF EXISTS random_sends;
CREATE TABLE random_sends (id INTEGER NOT NULL, campaign TEXT, status TEXT, cost DECIMAL(10,2),
    note TEXT, scheduled_at TIMESTAMP, synced_at TIMESTAMP NOT NULL);
SQL
            ;;
        clickhouse) wh <<'SQL'
DROP TABLE IF EXISTS random_sends;
CREATE TABLE random_sends (id Int64, campaign Nullable(String), status Nullable(String),
    cost Nullable(Decimal(10,2)), note Nullable(String), scheduled_at Nullable(DateTime64(6)),
    synced_at DateTime64(6)) ENGINE = MergeTree ORDER BY id;
SQL
            ;;
    esac
}

# Every row of the warehouse, one per line, tab-separated: the id, text as
# UTF-8 hex, the cost, timestamps to the microsecond (SQLite: as stored),
# N for NULL. Nothing in it needs escaping in any client's output.
dump_warehouse() {
    case $W in
        postgresql)
            wh -c "SELECT id, coalesce(encode(convert_to(campaign, 'UTF8'), 'hex'), 'N'),
                          coalesce(encode(convert_to(status, 'UTF8'), 'hex'), 'N'), coalesce(cost::text, 'N'),
                          coalesce(encode(convert_to(note, 'UTF8'), 'hex'), 'N'),
                          coalesce(to_char(scheduled_at, 'YYYY-MM-DD HH24:MI:SS.US'), 'N'),
                          to_char(synced_at, 'YYYY-MM-DD HH24:MI:SS.US')
                     FROM random_sends" ;;
        mariadb)
            wh <<<"SELECT id, COALESCE(HEX(campaign), 'N'), COALESCE(HEX(status), 'N'),
                          COALESCE(CAST(cost AS CHAR), 'N'), COALESCE(HEX(note), 'N'),
                          COALESCE(DATE_FORMAT(scheduled_at, '%Y-%m-%d %H:%i:%s.%f'), 'N'),
                          DATE_FORMAT(synced_at, '%Y-%m-%d %H:%i:%s.%f')
                     FROM random_sends" ;;
        sqlite)
            # hex(NULL) is '' in SQLite
            wh <<<"SELECT id, CASE WHEN campaign IS NULL THEN 'N' ELSE hex(campaign) END,
                          CASE WHEN status IS NULL THEN 'N' ELSE hex(status) END,
                          coalesce(CAST(cost AS TEXT), 'N'),
                          CASE WHEN note IS NULL THEN 'N' ELSE hex(note) END,
                          coalesce(scheduled_at, 'N'), synced_at
                     FROM random_sends;" ;;
        clickhouse)
            wh <<<"SELECT id, ifNull(hex(campaign), 'N'), ifNull(hex(status), 'N'), ifNull(toDecimalString(cost, 2), 'N'),
                          ifNull(hex(note), 'N'), ifNull(toString(scheduled_at), 'N'), toString(synced_at)
                     FROM random_sends FORMAT TSV" ;;
    esac
}

# Compare, on the destination: the copy $1 with the warehouse's newest
# version of every key (synced_at is unique but for rows written twice,
# which are equal); the warehouse with the model. Prints one line per
# differing row, nothing when all is equal. With a cut $2, keeps the
# warehouse's newest versions as the state at that cut (the last of the
# cycles with that cut wins), for check_history.
compare() {
    local copy=$1 save=""
    [[ -n ${2:-} ]] && save="DELETE FROM states WHERE cut = '$2';
INSERT INTO states (cut, id, campaign, status, cost, note, scheduled_at, synced_at)
SELECT DISTINCT ON (id) '$2', id, campaign, status, cost, note, scheduled_at, synced_at
  FROM typed WHERE src = 'warehouse' ORDER BY id, synced_at DESC;"
    dump_warehouse >"$TMP/wh.tsv" || { echo "could not read the warehouse"; return; }
    q -F ': ' 2>&1 <<SQL
CREATE TEMP TABLE raw (src text DEFAULT 'warehouse', id bigint, campaign text, status text, cost text,
    note text, scheduled_at text, synced_at text);
\\copy raw (id, campaign, status, cost, note, scheduled_at, synced_at) FROM '$TMP/wh.tsv'
ALTER TABLE raw ALTER src SET DEFAULT 'model';
\\copy raw (id, campaign, status, cost, note, scheduled_at, synced_at) FROM '$GEN/model.tsv'
CREATE TEMP TABLE typed AS
SELECT src, id,
       CASE WHEN campaign <> 'N' THEN convert_from(decode(campaign, 'hex'), 'UTF8') END AS campaign,
       CASE WHEN status <> 'N' THEN convert_from(decode(status, 'hex'), 'UTF8') END AS status,
       CASE WHEN cost <> 'N' THEN cost::numeric END AS cost,
       CASE WHEN note <> 'N' THEN convert_from(decode(note, 'hex'), 'UTF8') END AS note,
       CASE WHEN scheduled_at <> 'N' THEN scheduled_at::timestamp END AS scheduled_at,
       synced_at::timestamp AS synced_at
  FROM raw;
WITH wh AS (SELECT id, campaign, status, cost, note, scheduled_at, synced_at FROM typed WHERE src = 'warehouse'),
     model AS (SELECT id, campaign, status, cost, note, scheduled_at, synced_at FROM typed WHERE src = 'model'),
     w AS (SELECT DISTINCT ON (id) * FROM wh ORDER BY id, synced_at DESC),
     l AS (SELECT id::bigint, campaign::text, status::text, cost::numeric, note::text,
                  scheduled_at::timestamp, synced_at::timestamp FROM $copy)
(SELECT 'warehouse only', left(w::text, 300) FROM (SELECT * FROM w EXCEPT ALL SELECT * FROM l) w)
UNION ALL
(SELECT 'copy only', left(l::text, 300) FROM (SELECT * FROM l EXCEPT ALL SELECT * FROM w) l)
UNION ALL
(SELECT 'in the warehouse, not written by the test', left(x::text, 300)
   FROM (SELECT * FROM wh EXCEPT ALL SELECT * FROM model) x)
UNION ALL
(SELECT 'written by the test, not in the warehouse', left(x::text, 300)
   FROM (SELECT * FROM model EXCEPT ALL SELECT * FROM wh) x)
ORDER BY 1, 2;
$save
SQL
}

# One cycle: the changes (cycle 0: the first load), the sync, the checks.
# Prints the TAP line, with diagnostics when it fails.
run_cycle() {
    local cyc=$1 n_ops=$2 changes run out check copy bad=0
    changes=$(python3 "$HERE/random_gen.py" "$GEN" "$SEED" "$cyc" "$n_ops") \
        || { nok "$W: cycle $cyc: the test could not make its changes"; return 1; }
    if ! out=$(wh <"$GEN/$W.sql" 2>&1) || [[ -n $out ]]; then
        nok "$W: cycle $cyc: the warehouse took the changes"
        { echo "$out"; echo "seed $SEED, cycle $cyc; the changes:"; head -c 20000 "$GEN/$W.sql"; } | sed 's/^/#   /'
        return 1
    fi
    # one registration, and one copy, per value of hot_window_check
    if ((cyc == 0)); then
        for check in "${CHECKS[@]}"; do
            copy=random_sends_$check
            # (the mass-delete guard is tested elsewhere: random removals may
            # take a large share of a small window, so it is off here)
            q -c "SET client_min_messages = warning" \
              -c "SELECT name FROM treble_sync.add_table('random_sends', 'w', key_columns => '{id}',
                         event_column => 'scheduled_at', hot_window => '3 days', max_delete_ratio => 1,
                         local_table => '$copy', name => '$copy', hot_window_check => '$check',
                         keep_history => $( [[ $check == "$HISTORY_CHECK" ]] && echo "'400 days'" || echo NULL ))" >/dev/null
            [[ $check == "$HISTORY_CHECK" ]] &&
                q -c "CREATE TABLE states AS SELECT NULL::timestamptz AS cut, * FROM $copy WITH NO DATA" >/dev/null
        done
        # TS_RANDOM_GROUP: the copies are one sync group, cycled together
        [[ -n ${TS_RANDOM_GROUP:-} ]] &&
            q -c "SELECT name FROM treble_sync.add_group('random',
                      ARRAY[$(printf "'random_sends_%s'," "${CHECKS[@]}" | sed 's/,$//')])" >/dev/null
    fi
    local group_runs=""
    [[ -n ${TS_RANDOM_GROUP:-} ]] &&
        group_runs=$(q -F ' ' -c "SELECT table_name, run_id, status FROM treble_sync.sync_group('random')" 2>&1)
    for check in "${CHECKS[@]}"; do
        copy=random_sends_$check
        if [[ -n ${TS_RANDOM_GROUP:-} ]]; then
            run=$(awk -v t="$copy" '$1 == t { print $2, $3 }' <<<"$group_runs")
            [[ -n $run ]] || run=$group_runs    # the error, for the diagnostics
        else
            run=$(q -F ' ' -c "SELECT run_id, status FROM treble_sync.sync_table('$copy')" 2>&1)
        fi
        local cut=""
        if [[ $check == "$HISTORY_CHECK" ]]; then
            # the cut of the history: the watermark after the run (the servers' zone is UTC)
            cut=$(q -c "SELECT watermark::timestamp AT TIME ZONE 'UTC' FROM treble_sync.tables WHERE name = '$copy'")
        fi
        out=$(compare "$copy" "$cut")
        local what="the copy equals the warehouse"
        ((cyc == 0)) && what="the first sync copies the warehouse's newest version of each key"
        if [[ $run =~ ^[0-9]+\ (success|empty)$ && -z $out ]]; then
            ok "$W: cycle $cyc ($changes changes, hot_window_check '$check'): $what"
            continue
        fi
        nok "$W: cycle $cyc ($changes changes, hot_window_check '$check'): $what"
        bad=1
        {
            echo "seed $SEED, cycle $cyc, warehouse $W, hot_window_check '$check'"
            echo "run: $run"
            q -c "SELECT format('cut %s, hot window from %s, error: %s', cut, hot_window_from, coalesce(error, '(none)'))
                    FROM treble_sync.runs WHERE table_name = '$copy' ORDER BY run_id DESC LIMIT 1" 2>&1
            echo "rows that differ (at most 20):"
            head -n 20 <<<"$out"
            echo "the changes of this cycle (as sent to $W):"
            head -c 20000 "$GEN/$W.sql"
        } | sed 's/^/#   /'
    done
    return $bad
}

# The history against the states the test kept: as_of at every cut, and
# changes between every two cuts. Two TAP lines; the differing rows (at
# most 20) as diagnostics.
check_history() {
    local out cuts
    cuts=$(q -c "SELECT count(DISTINCT cut) FROM states")
    out=$(q -F ' ' 2>&1 <<SQL
WITH c AS (SELECT DISTINCT cut FROM states)
SELECT c.cut, d.side, left(d.r, 200) FROM c, LATERAL (
    (SELECT 'state only' AS side, ROW(s.id, s.campaign, s.status, s.cost, s.note, s.scheduled_at, s.synced_at)::text AS r
       FROM states s WHERE s.cut = c.cut
     EXCEPT ALL
     SELECT 'state only', ROW(a.id, a.campaign, a.status, a.cost, a.note, a.scheduled_at, a.synced_at)::text
       FROM treble_sync.as_of(NULL::random_sends_$HISTORY_CHECK, c.cut) a)
    UNION ALL
    (SELECT 'as_of only', ROW(a.id, a.campaign, a.status, a.cost, a.note, a.scheduled_at, a.synced_at)::text
       FROM treble_sync.as_of(NULL::random_sends_$HISTORY_CHECK, c.cut) a
     EXCEPT ALL
     SELECT 'as_of only', ROW(s.id, s.campaign, s.status, s.cost, s.note, s.scheduled_at, s.synced_at)::text
       FROM states s WHERE s.cut = c.cut)) d
ORDER BY 1, 2, 3 LIMIT 20;
SQL
)
    if [[ -z $out ]]; then ok "$W: as_of at each of the $cuts cuts equals the warehouse's state then"
    else nok "$W: as_of at each of the $cuts cuts equals the warehouse's state then"; sed 's/^/#   /' <<<"$out"; fi
    out=$(q -F ' ' 2>&1 <<SQL
WITH c AS (SELECT DISTINCT cut FROM states),
pairs AS (SELECT a.cut AS c1, b.cut AS c2 FROM c a JOIN c b ON a.cut < b.cut),
want AS (
    SELECT p.c1, p.c2, x.op, x.o, x.n FROM pairs p, LATERAL (
        SELECT CASE WHEN s1.id IS NULL THEN 'insert' WHEN s2.id IS NULL THEN 'delete' ELSE 'update' END AS op,
               CASE WHEN s1.id IS NOT NULL THEN ROW(s1.id, s1.campaign, s1.status, s1.cost, s1.note, s1.scheduled_at, s1.synced_at)::text END AS o,
               CASE WHEN s2.id IS NOT NULL THEN ROW(s2.id, s2.campaign, s2.status, s2.cost, s2.note, s2.scheduled_at, s2.synced_at)::text END AS n
        FROM (SELECT * FROM states WHERE cut = p.c1) s1
        FULL JOIN (SELECT * FROM states WHERE cut = p.c2) s2 ON s1.id = s2.id
        WHERE s1.id IS NULL OR s2.id IS NULL
           OR (s1.campaign, s1.status, s1.cost, s1.note, s1.scheduled_at, s1.synced_at)
              IS DISTINCT FROM (s2.campaign, s2.status, s2.cost, s2.note, s2.scheduled_at, s2.synced_at)) x),
got AS (
    SELECT p.c1, p.c2, x.op,
           CASE WHEN x.op <> 'insert' THEN ROW((x.old_row).id, (x.old_row).campaign, (x.old_row).status, (x.old_row).cost,
                                               (x.old_row).note, (x.old_row).scheduled_at, (x.old_row).synced_at)::text END,
           CASE WHEN x.op <> 'delete' THEN ROW((x.new_row).id, (x.new_row).campaign, (x.new_row).status, (x.new_row).cost,
                                               (x.new_row).note, (x.new_row).scheduled_at, (x.new_row).synced_at)::text END
    FROM pairs p, LATERAL treble_sync.changes(NULL::random_sends_$HISTORY_CHECK, p.c1, p.c2) x)
SELECT * FROM ((SELECT 'wanted', * FROM (TABLE want EXCEPT ALL TABLE got) w)
               UNION ALL (SELECT 'got', * FROM (TABLE got EXCEPT ALL TABLE want) g)) d
ORDER BY 2, 3, 1 LIMIT 20;
SQL
)
    if [[ -z $out ]]; then ok "$W: changes between any two of the $cuts cuts equal the difference of their states"
    else nok "$W: changes between any two of the $cuts cuts equal the difference of their states"; sed 's/^/#   /' <<<"$out"; fi
}

run_warehouse() {
    local cyc failures=0 started=$SECONDS
    GEN=$TMP/$W
    mkdir -p "$GEN"
    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ts_random_$W" \
        -c "CREATE DATABASE ts_random_$W" >/dev/null
    create_table
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
    -- a file takes no login; ClickHouse's default user has none (its reader has: cycle.t, tls.t)
    IF '$W' IN ('sqlite', 'clickhouse') THEN
        CREATE USER MAPPING FOR CURRENT_USER SERVER w;
    ELSE
        EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER w OPTIONS (user %L, password %L)',
                       current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
    END IF;
END
\$\$;
SQL
    # the first load: 150 changes, mostly new keys, some with several rows;
    # then cycles of 0 to 14 changes each, the same counts on every warehouse
    run_cycle 0 150 || failures=$((failures + 1))
    for ((cyc = 1; cyc <= CYCLES && failures < MAX_FAILURES; cyc++)); do
        run_cycle "$cyc" $(( $(cksum <<<"$SEED/$cyc" | cut -d' ' -f1) % 15 )) || failures=$((failures + 1))
    done
    if ((failures >= MAX_FAILURES && cyc <= CYCLES)); then
        nok "$W: stopped after $failures failing cycles, at cycle $((cyc - 1)) of $CYCLES"
    fi
    check_history
    sed "s/^/# $W: /" "$GEN/summary.txt"
    echo "# $W: runs: $(q -c "SELECT string_agg(table_name || ' ' || status || ' ' || n, ', ' ORDER BY table_name, status)
                            FROM (SELECT table_name, status, count(*) AS n FROM treble_sync.runs
                                   GROUP BY table_name, status) s"); $((cyc - 1)) cycles in $((SECONDS - started)) s"
}

for W in "${WAREHOUSES[@]}"; do
    if [[ $W == mariadb && -z ${TS_MARIADB_PORT:-} ]]; then
        nok "mariadb: no MariaDB warehouse was started (install mariadb-server)"
        continue
    fi
    if [[ $W == clickhouse && -z ${TS_CLICKHOUSE_PORT:-} ]]; then
        nok "clickhouse: no ClickHouse warehouse was started (run .ci/clickhouse setup as root; TS_WAREHOUSES='postgresql mariadb sqlite' leaves it out)"
        continue
    fi
    run_warehouse
done
# only this run's: another run may be testing the other warehouses
for W in "${WAREHOUSES[@]}"; do
    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ts_random_$W" >/dev/null
done
echo "# seed $SEED"
echo "1..$n"
exit $((failed > 0))
