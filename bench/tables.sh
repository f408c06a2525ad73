# bench/tables.sh — the many-tables case of bench/run: what a cycle costs
# when nothing changed, over many small tables. Sourced by bench/run, which
# defines PSQL, TS_WH_PORT, REPEAT, say, section, fail, now_us, secs,
# median, commas and wh_sql (the warehouse, database wh).
#
# For each N of --tables (default 200,1000), REPEAT rounds (default 3),
# each in a fresh destination database "many" (treble_sync, server wh as
# in bench/dest.sql):
#   - N warehouse tables many_1..many_N of 100 rows each (made once, for
#     the largest N), registered with add_table (not timed);
#   - the first sync_all() (every table loads its 100 rows);
#   - an unchanged sync_all();
#   - an unchanged sync_table() of one of them: the client's time and the
#     run's own duration (finished_at - started_at, the server's time);
# each with the time per table. Every figure of the summary is the median
# of its REPEAT rounds. Appends a section to results.md.

# SQL on the many-tables database.
many_sql() { "${PSQL[@]}" -d many "$@"; }
many_val() { many_sql -At -c "$1"; }

# Make warehouse tables many_1..many_$1 of 100 rows each (the warehouse's
# reader login may read them).
many_tables_warehouse() {
    local n=$1
    wh_sql -v n="$n" -v wh_user="$TS_WH_USER" <<'SQL'
SET client_min_messages = warning;
SELECT format('CREATE TABLE IF NOT EXISTS public.many_%s (id integer PRIMARY KEY, v text NOT NULL,
                 event_at timestamptz NOT NULL, synced_at timestamptz NOT NULL)', i)
FROM generate_series(1, :n) i \gexec
SELECT format('TRUNCATE public.many_%s', i) FROM generate_series(1, :n) i \gexec
SELECT format('INSERT INTO public.many_%s SELECT g, md5(g::text), now() - g * interval ''1 hour'',
                 now() - interval ''1 hour'' FROM generate_series(1, 100) g', i)
FROM generate_series(1, :n) i \gexec
SELECT format('GRANT SELECT ON public.many_%s TO %I', i, :'wh_user')
FROM generate_series(1, :n) i \gexec
SQL
}

# A fresh database "many" with tables many_1..many_$1 registered.
many_tables_register() {
    local n=$1
    "${PSQL[@]}" -d postgres <<'SQL'
SET client_min_messages = warning;
DROP DATABASE IF EXISTS many WITH (FORCE);
CREATE DATABASE many;
SQL
    many_sql <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
\set SHOW_CONTEXT never
DO $$
BEGIN
    EXECUTE format('CREATE SERVER wh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'),
                   current_setting('treble_test.wh_password'));
END
$$;
SQL
    # add_table connects to the warehouse (ODBC metadata calls), one by one
    for ((i = 1; i <= n; i++)); do
        echo "SELECT 1 FROM treble_sync.add_table('public.many_$i', 'wh', key_columns => '{id}',
                  event_column => 'event_at', local_table => 'public.many_$i', name => 'many_$i');"
    done | many_sql -o /dev/null
}

# Time one sync_all(); sets MANY_US and MANY_SERVER_US (the median run
# duration); records a failure unless every one of the $1 tables gave a
# run of status $2 (success or empty).
many_sync_all() {
    local n=$1 want=$2 t0 row
    t0=$(now_us)
    row=$(many_sql -At -c "CREATE TEMP TABLE r AS SELECT * FROM treble_sync.sync_all()" \
                       -c "SELECT count(*) FILTER (WHERE status = '$want'), count(*),
                                  (1e6 * extract(epoch FROM percentile_cont(0.5) WITHIN GROUP
                                      (ORDER BY finished_at - started_at)))::bigint
                           FROM r")
    MANY_US=$(($(now_us) - t0))
    IFS='|' read -r ok all MANY_SERVER_US <<<"$row"
    if [[ $ok != "$n" || $all != "$n" ]]; then
        fail "many tables, N=$n: sync_all() gave $ok runs of status $want of $all, for $n tables"
    fi
}

# The many-tables benchmark for each N of $1 (comma-separated); appends
# its section to $RESULTS.
many_tables_bench() {
    local list=$1 max=0 n r row t0 out=()
    local -a ns
    IFS=',' read -r -a ns <<<"$list"
    for n in "${ns[@]}"; do
        [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 10000)) || die "--tables: each N must be 1..10000"
        ((n > max)) && max=$n
    done
    section "many tables: $list registered tables of 100 rows, nothing changed"
    t0=$(now_us)
    many_tables_warehouse "$max"
    say "warehouse: $max tables of 100 rows built in $(secs $(($(now_us) - t0))) s"

    for n in "${ns[@]}"; do
        local first_us=() first_srv=() all_us=() all_srv=() one_us=() one_srv=() loads=()
        say "" "N = $n"
        # each round from a fresh registration, so that every round has a
        # first sync_all() of its own
        for ((r = 1; r <= REPEAT; r++)); do
            t0=$(now_us)
            many_tables_register "$n"
            loads+=("$(cut -d' ' -f1 /proc/loadavg)")
            say "  round $r (load average ${loads[-1]}): registered in $(secs $(($(now_us) - t0))) s"

            many_sync_all "$n" success
            first_us+=("$MANY_US") first_srv+=("$MANY_SERVER_US")
            say "    first sync_all       $(secs "$MANY_US") s, $(per_table "$MANY_US" "$n") ms per table (run median $((MANY_SERVER_US / 1000)) ms)"
            many_sync_all "$n" empty
            all_us+=("$MANY_US") all_srv+=("$MANY_SERVER_US")
            say "    unchanged sync_all   $(secs "$MANY_US") s, $(per_table "$MANY_US" "$n") ms per table (run median $((MANY_SERVER_US / 1000)) ms)"
            t0=$(now_us)
            row=$(many_val "SELECT status, (1e6 * extract(epoch FROM finished_at - started_at))::bigint
                            FROM treble_sync.sync_table('many_1')")
            one_us+=($(($(now_us) - t0)))
            one_srv+=("${row##*|}")
            [[ ${row%%|*} == empty ]] || fail "many tables, N=$n: an unchanged sync_table gave ${row%%|*}"
            say "    unchanged sync_table $((one_us[-1] / 1000)) ms from the client, $((one_srv[-1] / 1000)) ms in the run row"
        done
        out+=("| $(commas "$n") | $(secs "$(median "${first_us[@]}")") ($(per_table "$(median "${first_us[@]}")" "$n") ms) | $(($(median "${first_srv[@]}") / 1000)) | $(secs "$(median "${all_us[@]}")") ($(per_table "$(median "${all_us[@]}")" "$n") ms) | $(($(median "${all_srv[@]}") / 1000)) | $(($(median "${one_us[@]}") / 1000)) | $(($(median "${one_srv[@]}") / 1000)) | ${loads[*]} |")
    done
    "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS many WITH (FORCE)" >/dev/null

    {
        echo
        echo "## Many tables, nothing changed"
        echo
        echo "N tables of 100 rows (PostgreSQL warehouse), treble_sync.max_parallel $(dest_val "LOAD 'treble_sync'; SHOW treble_sync.max_parallel");"
        echo "medians of $REPEAT rounds, each from a fresh registration; in parentheses the wall time per table; the load"
        echo "average (1 minute) at the start of each round. Targets: an unchanged table's cycle <= 30 ms in its run row;"
        echo "sync_all() of 1,000 unchanged tables <= 15 s."
        echo
        echo "| tables | first sync_all s | its runs' median ms | unchanged sync_all s | its runs' median ms | unchanged sync_table ms, client | its run ms | load by round |"
        echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        printf '%s\n' "${out[@]}"
    } >>"$RESULTS"
}

# microseconds for n tables -> milliseconds per table, 1 decimal
per_table() { awk -v u="$1" -v n="$2" 'BEGIN { printf "%.1f", u / n / 1000 }'; }
