# shellcheck shell=bash
# Sourced by deb.t and dist.t, which set ROOT (the tree).

# same_scripts DIR: DIR (an extension directory) holds the control file
# and every install and upgrade script of the tree (sql/treble_sync--*.sql),
# identical, and no other script; what differs is printed
same_scripts() {
    local f bad=0
    [[ -f $1/treble_sync.control ]] || { echo "missing: $1/treble_sync.control"; bad=1; }
    for f in "$ROOT"/sql/treble_sync--*.sql; do
        cmp -s "$f" "$1/$(basename "$f")" || { echo "differs or missing: $1/$(basename "$f")"; bad=1; }
    done
    for f in "$1"/treble_sync--*.sql; do
        [[ -f $ROOT/sql/$(basename "$f") ]] || { echo "not in the tree: $f"; bad=1; }
    done
    return $bad
}
