# TAP checks shared by the bash test suites (test/security, test/replica),
# sourced by their lib.sh after it defines ok NAME, nok NAME and diag TEXT.

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
