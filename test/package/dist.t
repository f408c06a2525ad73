#!/usr/bin/env bash
#
# The release archive (make dist, for PGXN) builds and installs from a
# clean unpack:
#
#   - `make dist` writes treble_sync-<META.json's version>.zip, every file
#     under one directory of the same name;
#   - it holds what git tracks in the committed tree (HEAD) but the paths
#     .gitattributes marks export-ignore, and none of those;
#   - unpacked in an empty directory, it builds (make) and installs
#     (make install DESTDIR=...) with the tested PostgreSQL's pg_config: the
#     library, the control file and every install and upgrade script of the
#     tree (sql/treble_sync--*.sql) land where that PostgreSQL looks for them;
#   - it installs the same files into lib/ and extension/ as the Debian
#     package (TS_DEB, if .ci/run built one).
#
# Nothing is written in the tree, and nothing is installed for real.
# Prints TAP.

set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts.sh
source "$ROOT/test/package/scripts.sh"
PG_BIN=${TS_PG_BIN:-/usr/lib/postgresql/15/bin}
PG_CONFIG=$PG_BIN/pg_config

# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

echo "1..8"

VERSION=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$ROOT/META.json")
NAME=treble_sync-$VERSION
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

succeeds "make dist writes $NAME.zip" \
    bash -c 'make -C "$1" -s dist DIST_DIR="$2" PG_CONFIG="$3" && test -f "$2/$4.zip"' _ "$ROOT" "$TMP" "$PG_CONFIG" "$NAME"

# what the archive holds, and what it must hold: HEAD's files less the
# export-ignore paths (git check-attr reads .gitattributes)
python3 -c 'import sys, zipfile; print("\n".join(sorted(zipfile.ZipFile(sys.argv[1]).namelist())))' \
    "$TMP/$NAME.zip" >"$TMP/listing" 2>/dev/null
succeeds "every file is under $NAME/" bash -c '[[ -s $1 ]] && ! grep -v "^$2/" "$1"' _ "$TMP/listing" "$NAME"
git -C "$ROOT" ls-tree -r --name-only HEAD \
    | git -C "$ROOT" check-attr --stdin export-ignore \
    | sed -n 's/: export-ignore: unspecified$//p' | sort >"$TMP/expected"
sed -n "s|^$NAME/||p" "$TMP/listing" | grep -v -e '/$' -e '^$' | sort >"$TMP/files"
succeeds "it holds HEAD's files less the export-ignore paths of .gitattributes" \
    diff "$TMP/expected" "$TMP/files"
succeeds "it holds no .ci/, debian/, test/ or third_party/" \
    bash -c '! grep -E "^(\.ci|debian|test|third_party)/" "$1"' _ "$TMP/files"

mkdir "$TMP/unpack"
python3 -m zipfile -e "$TMP/$NAME.zip" "$TMP/unpack" 2>/dev/null
succeeds "it builds from a clean unpack (make)" \
    make -C "$TMP/unpack/$NAME" -j2 PG_CONFIG="$PG_CONFIG"
succeeds "it installs (make install DESTDIR=...)" \
    make -C "$TMP/unpack/$NAME" install DESTDIR="$TMP/root" PG_CONFIG="$PG_CONFIG"

PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
installed() { test -f "$TMP/root$PKGLIBDIR/treble_sync.so" && same_scripts "$TMP/root$EXTDIR"; }
succeeds "the library, the control file and every sql/treble_sync--*.sql are installed" installed

# the file lists of lib/ and extension/, each relative to its directory
list_files() { (cd "$1" 2>/dev/null && find . -type f | sort); }
if [[ -n ${TS_DEB:-} && -f ${TS_DEB:-} ]]; then
    dpkg-deb -x "$TS_DEB" "$TMP/deb"
    succeeds "it installs the same files into lib/ and extension/ as the Debian package" \
        diff <(list_files "$TMP/root$PKGLIBDIR"; list_files "$TMP/root$EXTDIR") \
             <(list_files "$TMP/deb/usr/lib/postgresql/15/lib"; list_files "$TMP/deb/usr/share/postgresql/15/extension")
else
    n=$((n + 1))
    echo "ok $n # skip no Debian package to compare with (TS_DEB is not set)"
fi

exit $((failed > 0))
