#!/usr/bin/env bash
#
# Hostile values in COPY text. A cycle hands the rows it pulls to COPY's
# text format, where a tab ends a column, a newline a row, a backslash
# starts an escape (\N is NULL, \. the end of the data, \x41 and \101 are
# "A"); a first load's reader (treble_sync.read_ahead) builds that text in
# another process and sends it to the cycle's worker through shared
# memory. A warehouse value holding any of these must land in the copy as
# itself, never add a row, a column or end the data early, nor shift a
# value into the next column.
#
# On the PostgreSQL and the SQLite warehouse, a table whose text key and
# two text columns hold tabs, newlines (one shaped as a whole row of the
# table), carriage returns, \., \N, \x41, \101, a trailing backslash before
# the next column, an empty string and NULL, multibyte and astral
# characters, and a 200 kB value of all of them:
#   - the first load, read by a reader (its log line is checked), makes a
#     copy that equals the warehouse row for row and value for value, with
#     no extra row;
#   - an incremental cycle (read by the worker itself) that changes every
#     value does the same;
#   - SQLite text that is not UTF-8 (0xff) or holds a NUL is a bad row:
#     quarantined, never in the copy, and it adds no row.

DB=sec_copytext
ROLES=()
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; finish' EXIT
setup_db

su_server pgwh treble_test.wh_odbc >/dev/null
su_server litewh treble_test.sqlite_odbc >/dev/null
map_reader postgres pgwh >/dev/null
sq -c "CREATE USER MAPPING FOR postgres SERVER litewh" >/dev/null

lite() { sqlite3 -batch -bail "$TS_SQLITE_DB"; }
hex() { printf '%b' "$1" | od -An -v -tx1 | tr -d ' \n'; }

# the hostile values, as printf %b strings (index = the row's number)
VALUES=(
    ''
    'a\tb'
    'line1\nline2\n999\tinjected\tinjected\t2026-01-01 00:00:00'
    '\\.'
    '\n\\.\n'
    '\\N'
    'ends with a backslash\\'
    '\r\n'
    ''
    'NULL'
    '\\\t\\n'
    '\\x41'
    '\\101'
    'ünï©ødé 😀 𝄞'
    '\t\t\t'
    '\\'
    '.'
    '\\.\n\\.'
)
BIG=$(printf '\\t\\n\\\\.\\\\N\\r%.0s' $(seq 1 20000))   # about 200 kB once decoded

# expected: N, the key, v and w of each good row, as hex (NULL as -)
# round R changes every value (R is 1 or 2)
rows_for() {
    local round=$1 i v w
    for i in "${!VALUES[@]}"; do
        ((i == 0)) && continue
        v=${VALUES[$i]}
        w=${VALUES[$(((i + round) % ${#VALUES[@]}))]}
        if ((i == 9)); then v=NULL; else v=$(hex "r$round:$v"); fi
        printf '%s %s %s %s\n' "$i" "$(hex "k$i\\t${VALUES[$i]}")" "$v" "$(hex "$w\\t")"
    done
    printf '%s %s %s %s\n' 100 "$(hex 'k100\\tbig')" "$(hex "r$round:$BIG")" "$(hex '\\')"
}

# the expected rows, as a table of the destination
expected() {
    local round=$1 n k v w
    {
        echo "SET client_min_messages = warning; DROP TABLE IF EXISTS expected; CREATE TABLE expected (k text, n int, v text, w text);"
        while read -r n k v w; do
            if [[ $v == NULL ]]; then v=NULL; else v="convert_from('\\x$v'::bytea, 'UTF8')"; fi
            echo "INSERT INTO expected VALUES (convert_from('\\x$k'::bytea, 'UTF8'), $n, $v, convert_from('\\x$w'::bytea, 'UTF8'));"
        done < <(rows_for "$round")
    } | sq >/dev/null
}

# load the rows of round R into the PostgreSQL warehouse and SQLite
load_pg() {
    local round=$1 n k v w
    {
        [[ $round == 1 ]] && echo "DROP TABLE IF EXISTS copytext; CREATE TABLE copytext (k text PRIMARY KEY, n int, v text, w text, synced_at timestamp);"
        while read -r n k v w; do
            if [[ $v == NULL ]]; then v=NULL; else v="convert_from('\\x$v'::bytea, 'UTF8')"; fi
            echo "INSERT INTO copytext VALUES (convert_from('\\x$k'::bytea, 'UTF8'), $n, $v, convert_from('\\x$w'::bytea, 'UTF8'), '2026-11-2$((7 + round))') ON CONFLICT (k) DO UPDATE SET v = excluded.v, w = excluded.w, synced_at = excluded.synced_at;"
        done < <(rows_for "$round")
    } | whq >/dev/null
}
load_lite() {
    local round=$1 n k v w
    {
        [[ $round == 1 ]] && echo "DROP TABLE IF EXISTS copytext; CREATE TABLE copytext (k TEXT PRIMARY KEY, n INTEGER, v TEXT, w TEXT, synced_at TIMESTAMP);"
        while read -r n k v w; do
            if [[ $v == NULL ]]; then v=NULL; else v="CAST(X'$v' AS TEXT)"; fi
            echo "INSERT OR REPLACE INTO copytext VALUES (CAST(X'$k' AS TEXT), $n, $v, CAST(X'$w' AS TEXT), '2026-11-2$((7 + round)) 00:00:00');"
        done < <(rows_for "$round")
        if [[ $round == 1 ]]; then
            # text that is not UTF-8, and text holding a NUL: bad rows
            echo "INSERT INTO copytext VALUES ('k200', 200, CAST(X'ff41' AS TEXT), 'x', '2026-11-28 00:00:00');"
            echo "INSERT INTO copytext VALUES ('k201', 201, 'x', CAST(X'610062' AS TEXT), '2026-11-28 00:00:00');"
        fi
    } | lite
}

# the copy NAME equals the expected rows, value for value
same() {
    local what=$1 table=$2 round=$3
    expected "$round"
    check "$what: as many rows as the warehouse" "$(sq -c "SELECT count(*) FROM expected")" \
        "$(sq -c "SELECT count(*) FROM public.$table")"
    check "$what: every row and value of the warehouse, none shifted" 0 \
        "$(sq -c "SELECT count(*) FROM ((SELECT k, n, v, w FROM public.$table EXCEPT ALL SELECT k, n, v, w FROM expected)
                                         UNION ALL (SELECT k, n, v, w FROM expected EXCEPT ALL SELECT k, n, v, w FROM public.$table)) d")"
    check "$what: the NULL is a NULL and the empty string a string" "1|1" \
        "$(sq -c "SELECT count(*) FILTER (WHERE v IS NULL), count(*) FILTER (WHERE v = 'r$round:') FROM public.$table")"
}

for wh in pgwh litewh; do
    name=copytext_${wh%wh}
    if [[ $wh == pgwh ]]; then load_pg 1; else load_lite 1; fi
    sq -c "ALTER DATABASE $DB SET log_min_messages = debug1" >/dev/null
    log_start=$(stat -c %s "$TS_DIR/dest.log")
    try postgres "SET client_min_messages = warning;
                  SELECT name FROM treble_sync.add_table('copytext', '$wh', key_columns => '{k}', name => '$name', local_table => 'public.$name', on_bad_row => 'quarantine', max_bad_row_ratio => 0.5);
                  SET treble_sync.read_ahead = on;
                  SELECT status FROM treble_sync.sync_table('$name')"
    sq -c "ALTER DATABASE $DB RESET log_min_messages" >/dev/null
    check "$wh: the first load succeeds" success "$(tail -n 1 <<<"$OUT")"
    [[ $RC -ne 0 ]] && diag "$ERR"
    check "$wh: it was read by a reader" 1 \
        "$(tail -c +$((log_start + 1)) "$TS_DIR/dest.log" | grep -c "a reader of \"$name\" is connected to the warehouse")"
    same "$wh, first load" "$name" 1

    if [[ $wh == litewh ]]; then
        check "$wh: the rows not UTF-8 or holding a NUL are quarantined, not copied" "2|0" \
            "$(sq -c "SELECT (SELECT count(*) FROM treble_sync.quarantine WHERE table_name = '$name'),
                             (SELECT count(*) FROM public.$name WHERE n >= 200)")"
    fi

    # an incremental cycle, read by the worker, changes every value
    if [[ $wh == pgwh ]]; then load_pg 2; else load_lite 2; fi
    try postgres "SELECT status, rows_updated FROM treble_sync.sync_table('$name')"
    check "$wh: the next cycle updates every good row" "success|$(rows_for 2 | wc -l)" "$OUT"
    [[ $RC -ne 0 ]] && diag "$ERR"
    same "$wh, next cycle" "$name" 2
done
