# The TAP helpers every bash test script shares (test/*/*.t, and the lib.sh
# of a suite), sourced once near the top:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
#
# A script prints its plan, "1..N", before its first test (plan N) or after
# its last (done_testing); prove reads the rest. n counts the tests printed,
# failed the ones that failed, so that a script can exit non-zero on one.
# A suite that must keep secrets out of its output defines diag again after
# sourcing this file (test/security/lib.sh).

n=${n:-0}
failed=${failed:-0}

# plan N: the number of tests, printed before the first
plan() { echo "1..$1"; }
# done_testing: the plan, printed after the last test (the tests counted)
done_testing() { echo "1..$n"; }
# skip_all REASON: no test runs here, and why
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

ok()   { n=$((n + 1)); echo "ok $n - $1"; }
nok()  { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # skip $1"; }
# a known hole, reported without failing the suite: todo NAME pass|fail WHY
todo() {
    n=$((n + 1))
    if [[ $2 == pass ]]; then echo "ok $n - $1 # TODO $3"; else echo "not ok $n - $1 # TODO $3"; fi
}
# diag TEXT: a comment for the reader, its first 4000 bytes
diag() { printf '%s\n' "$*" | head -c 4000 | sed 's/^/#   /'; }
# tap STATUS NAME: ok when STATUS (an exit status) is 0
tap() { if [[ $1 == 0 ]]; then ok "$2"; else nok "$2"; fi; }

# check NAME EXPECTED ACTUAL
check() {
    if [[ $2 == "$3" ]]; then
        ok "$1"
    else
        nok "$1"
        diag "expected: $2"
        diag "     got: $3"
    fi
}

# is ACTUAL EXPECTED NAME (check with Test::More's order)
is() { check "$3" "$2" "$1"; }

# like NAME REGEX ACTUAL: ACTUAL matches the extended regular expression
like() {
    if [[ $3 =~ $2 ]]; then
        ok "$1"
    else
        nok "$1"
        diag "expected to match: /$2/"
        diag "              got: $3"
    fi
}

# match NAME PATTERN ACTUAL: ACTUAL matches the glob pattern
match() {
    # shellcheck disable=SC2053
    if [[ $3 == $2 ]]; then
        ok "$1"
    else
        nok "$1"
        diag "expected to match: $2"
        diag "              got: $(head -5 <<<"$3")"
    fi
}

# succeeds NAME COMMAND...: COMMAND exits 0; its output (the last 30
# lines) is shown when it does not
succeeds() {
    local name=$1 out rc=0
    shift
    out=$("$@" 2>&1) || rc=$?
    tap "$rc" "$name"
    ((rc == 0)) || [[ -z $out ]] || diag "$(tail -n 30 <<<"$out")"
}
