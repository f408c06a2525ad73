#!/usr/bin/env bash
#
# The Debian package postgresql-15-treble-sync that .ci/run built (.ci/deb
# build; its path in TS_DEB) and installed (.ci/deb install):
#
#   - its name, version (META.json's, Debian revision after it) and
#     relations: PostgreSQL 15, unixODBC's libraries and unixodbc, one of
#     the Debian ODBC drivers recommended;
#   - it holds the library, the control file and every install and upgrade
#     script of the tree (sql/treble_sync--*.sql, identical: the first
#     release's install script and one upgrade script per release since)
#     where Debian's PostgreSQL 15 looks for them, and the copyright file;
#   - what is installed where the tested PostgreSQL (TS_PG_BIN) looks is
#     exactly the package's files; with Debian's PostgreSQL the package is
#     installed through dpkg, owns them and none was changed since;
#   - CREATE EXTENSION in a new database of the destination gives META.json's
#     version.
#
# The suites after this one (make installcheck first) run against these
# files. Prints TAP.

set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts.sh
source "$ROOT/test/package/scripts.sh"
PKG=postgresql-15-treble-sync
PG_BIN=${TS_PG_BIN:-/usr/lib/postgresql/15/bin}
PSQL=("$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1)
DB=package_check

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

echo "1..16"

VERSION=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$ROOT/META.json")
DEB=${TS_DEB:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1' EXIT

field() { dpkg-deb -f "$DEB" "$1" 2>/dev/null; }

succeeds "TS_DEB ($DEB) is a Debian package" dpkg-deb -I "$DEB"
succeeds "its name is $PKG" test "$(field Package)" = "$PKG"
succeeds "its version is META.json's ($VERSION) with a Debian revision" \
    grep -qx "$(sed 's/\./\\./g' <<<"$VERSION")-[0-9][0-9a-z.~+]*" <<<"$(field Version)"
DEPENDS=$(field Depends | tr -d ' ')
succeeds "it depends on postgresql-15" grep -q '\(^\|,\)postgresql-15\((\|,\|$\)' <<<"$DEPENDS"
succeeds "it depends on unixODBC (libodbc2, libodbcinst2, unixodbc)" \
    bash -c '[[ ,$1, == *,libodbc2* && ,$1, == *,libodbcinst2* && ,$1, == *,unixodbc,* ]]' _ "$DEPENDS"
succeeds "it recommends an ODBC driver: odbc-postgresql | odbc-mariadb | libsqliteodbc" \
    test "$(field Recommends | tr -d ' ')" = "odbc-postgresql|odbc-mariadb|libsqliteodbc"

dpkg-deb -x "$DEB" "$TMP/deb" 2>/dev/null
DEB_LIB=$TMP/deb/usr/lib/postgresql/15/lib
DEB_EXT=$TMP/deb/usr/share/postgresql/15/extension
succeeds "it holds lib/treble_sync.so" test -f "$DEB_LIB/treble_sync.so"
succeeds "it holds extension/treble_sync.control and every sql/treble_sync--*.sql of the tree" \
    same_scripts "$DEB_EXT"
succeeds "it holds its copyright file" test -f "$TMP/deb/usr/share/doc/$PKG/copyright"

# Every file of the package's lib/ and extension/ is installed, identical,
# where the tested PostgreSQL looks for it.
PKGLIBDIR=$("$PG_BIN/pg_config" --pkglibdir)
EXTDIR=$("$PG_BIN/pg_config" --sharedir)/extension
same_files() {
    local from to f bad=0
    for pair in "$DEB_LIB:$PKGLIBDIR" "$DEB_EXT:$EXTDIR"; do
        from=${pair%%:*} to=${pair#*:}
        while IFS= read -r -d '' f; do
            cmp -s "$from/$f" "$to/$f" || { echo "differs or missing: $to/$f"; bad=1; }
        done < <(cd "$from" && find . -type f -print0)
    done
    return $bad
}
succeeds "the installed files ($PKGLIBDIR, $EXTDIR) are the package's" same_files

if [[ $PG_BIN -ef /usr/lib/postgresql/15/bin ]]; then
    succeeds "dpkg has $PKG $(field Version) installed" \
        test "$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$PKG" 2>&1)" = "installed $(field Version)"
    succeeds "dpkg says $PKG owns $PKGLIBDIR/treble_sync.so" \
        bash -c '[[ $(dpkg-query -S "$1" 2>&1) == "$2: $1" ]]' _ "$PKGLIBDIR/treble_sync.so" "$PKG"
    succeeds "none of its files changed since (dpkg --verify)" \
        bash -c '[[ -z $(dpkg --verify "$1" 2>&1) ]]' _ "$PKG"
else
    for i in 1 2 3; do
        skip "TS_PG_BIN ($PG_BIN) is a private copy: the package's files were copied into it, not installed by dpkg"
    done
fi

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
succeeds "a new database of the destination" "${PSQL[@]}" -d postgres -c "CREATE DATABASE $DB"
succeeds "CREATE EXTENSION treble_sync there" "${PSQL[@]}" -d "$DB" -c "CREATE EXTENSION treble_sync"
succeeds "the extension's version is $VERSION" \
    test "$("${PSQL[@]}" -d "$DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'treble_sync'" 2>&1)" = "$VERSION"

((n == 16)) || echo "# planned 16 tests, ran $n"
exit $((failed > 0))
