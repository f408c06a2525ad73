# shellcheck shell=bash
# Helpers of the upgrade suite (test/upgrade/*.t), sourced by a script.
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced (TS_* and PGHOST/PGPORT/PGUSER), and the current build of the
# extension installed where TS_PG_BIN's PostgreSQL looks for it. Prints TAP;
# the script prints its plan and ends with `exit $((failed > 0))`.

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_BIN=${TS_PG_BIN:-/usr/lib/postgresql/15/bin}
PG_CONFIG=$PG_BIN/pg_config
PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
# same NAME FILE1 FILE2: the two files are equal, else their diff is shown
same() {
    local d
    if d=$(diff "$2" "$3"); then
        ok "$1"
    else
        nok "$1"
        diag "$d"
    fi
}
# bail NAME TEXT: a step everything after it needs failed: say so and stop
bail() {
    nok "$1"
    diag "$2"
    echo "Bail out! $1"
    exit 1
}

# psql in database $1, tuples only, stopping at the first error
qd()  { local db=$1; shift; "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
# SQL on the PostgreSQL warehouse (database wh) as its superuser
whq() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@"; }

# The previous release: the newest tag v* that is not the version being
# developed (the control file's default_version), else the commit of the
# first release when the clone has no tags (a shallow CI checkout). It is
# never skipped: without it the suite fails.
FIRST_RELEASE_COMMIT=84f17c7
previous_release() {
    local current tag
    current=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$ROOT/treble_sync.control")
    tag=$(git -C "$ROOT" tag --list 'v[0-9]*' --sort=-version:refname | grep -vx "v$current" | head -n 1)
    if [[ -n $tag ]]; then
        echo "$tag"
    elif git -C "$ROOT" cat-file -e "$FIRST_RELEASE_COMMIT^{commit}" 2>/dev/null; then
        echo "$FIRST_RELEASE_COMMIT"
    else
        return 1
    fi
}

# The installed files of the extension (library, control file, scripts),
# saved by save_installed and put back by restore_installed, each replaced
# by a rename so that a process loading the library never reads a file
# half-written.
INSTALLED=()
installed_files() {
    local f
    for f in "$PKGLIBDIR/treble_sync.so" "$EXTDIR/treble_sync.control" "$EXTDIR"/treble_sync--*.sql; do
        [[ -e $f ]] && echo "$f"
    done
}
save_installed() {
    local dir=$1 f
    mkdir -p "$dir"
    mapfile -t INSTALLED < <(installed_files)
    for f in "${INSTALLED[@]}"; do
        cp -p "$f" "$dir/$(basename "$f")" || return 1
    done
}
# put_file SRC DEST: replace DEST by a copy of SRC, atomically
put_file() {
    cp -p "$1" "$2.upgrade-new" && mv -f "$2.upgrade-new" "$2"
}
# install_files DIR: the extension's files become exactly DIR's (a saved set,
# or the lib/ and extension/ of a DESTDIR install flattened into DIR)
install_files() {
    local dir=$1 f
    for f in $(installed_files); do
        [[ -e $dir/$(basename "$f") ]] || rm -f "$f"
    done
    put_file "$dir/treble_sync.so" "$PKGLIBDIR/treble_sync.so" || return 1
    for f in "$dir"/treble_sync.control "$dir"/treble_sync--*.sql; do
        put_file "$f" "$EXTDIR/$(basename "$f")" || return 1
    done
}
