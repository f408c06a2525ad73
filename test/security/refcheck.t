#!/usr/bin/env bash
#
# A references check reads its reference table as the registration's owner,
# in every cycle. Whoever owns that table can put code on it that runs with
# the privileges of whoever reads it (a row-level policy; a view's
# functions). So the reference table must be owned by a role that has the
# privileges of the registration's owner (the owner itself, a role it is
# granted to, a superuser): that role's code gains nothing by running as
# the owner. Checked at add_check and again, under a lock, in every cycle,
# since a table can change hands after the check was added.
#
#   - add_check with a table of another role that the owner may read is
#     refused (42501), naming the table's owner; a table of the owner, of a
#     superuser, and a view the owner owns are accepted;
#   - a reference table given away after add_check (ALTER TABLE ... OWNER
#     TO): the next cycle fails with 42501 naming the new owner, whoever
#     starts it (the owner, a superuser), and the policy the new owner
#     planted never runs as the registration's owner: the thief's loot
#     stays empty;
#   - given back, the cycle succeeds and the check passes.

DB=sec_refcheck
ROLES=(sec_ref_a sec_ref_thief)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

admin_on_wh sec_ref_a sec_ref_thief
wh_table sec_ref_t "id int PRIMARY KEY, dim int, synced_at timestamp" \
    "VALUES (1, 10, '2026-11-28'), (2, 20, '2026-11-28')"
accepted "the owner registers a table" sec_ref_a \
    "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_ref_t', 'wh', key_columns => '{id}')"

# the owner's private table, and the thief's loot and a function that
# steals it into the loot when it runs as the owner
plant_thief sec_ref sec_ref_a sec_ref_thief
# a dimension table of the thief's own, readable by the owner, with a
# policy that steals
as sec_ref_thief >/dev/null <<'SQL'
CREATE TABLE public.sec_ref_theirs (dim int);
INSERT INTO public.sec_ref_theirs VALUES (10), (20);
GRANT SELECT ON public.sec_ref_theirs TO sec_ref_a;
ALTER TABLE public.sec_ref_theirs ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_ref_steal ON public.sec_ref_theirs USING (public.sec_ref_steal());
SQL

# --- add_check
refused "add_check refuses a reference table of another role the owner may read" sec_ref_a \
    "SELECT treble_sync.add_check('sec_ref_t', 'references', column_name => 'dim', ref_table => 'public.sec_ref_theirs', ref_column => 'dim')" \
    42501 sec_ref_thief sec_ref_theirs
check "and nothing ran as the owner" 0 "$(looted sec_ref)"

sq >/dev/null <<'SQL'
CREATE TABLE public.sec_ref_su (dim int);
INSERT INTO public.sec_ref_su VALUES (10), (20);
GRANT SELECT ON public.sec_ref_su TO sec_ref_a;
SQL
as sec_ref_a >/dev/null <<'SQL'
CREATE TABLE public.sec_ref_dim (dim int);
INSERT INTO public.sec_ref_dim VALUES (10), (20);
CREATE VIEW public.sec_ref_view AS SELECT dim FROM public.sec_ref_dim;
SQL
accepted "add_check accepts a reference table of the owner" sec_ref_a \
    "SELECT treble_sync.add_check('sec_ref_t', 'references', column_name => 'dim', ref_table => 'public.sec_ref_dim', ref_column => 'dim')"
accepted "add_check accepts a reference table of a superuser" sec_ref_a \
    "SELECT treble_sync.add_check('sec_ref_t', 'references', column_name => 'dim', ref_table => 'public.sec_ref_su', ref_column => 'dim')"
accepted "add_check accepts a view of the owner" sec_ref_a \
    "SELECT treble_sync.add_check('sec_ref_t', 'references', column_name => 'dim', ref_table => 'public.sec_ref_view', ref_column => 'dim')"
try sec_ref_a "SELECT status, rows_inserted FROM treble_sync.sync_table('sec_ref_t')"
check "the first load with the checks succeeds" "success|2" "$OUT"
check "and its three references checks passed" "3" \
    "$(sq -c "SELECT count(*) FROM treble_sync.check_results r JOIN treble_sync.checks c USING (check_id) WHERE c.kind = 'references' AND r.passed")"

# --- the owner's reference table changes hands, and the thief plants a policy
sq -c "ALTER TABLE public.sec_ref_dim OWNER TO sec_ref_thief" >/dev/null
as sec_ref_thief >/dev/null <<'SQL'
GRANT SELECT ON public.sec_ref_dim TO sec_ref_a;
ALTER TABLE public.sec_ref_dim ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_ref_steal ON public.sec_ref_dim USING (public.sec_ref_steal());
SQL
whq -c "INSERT INTO sec_ref_t VALUES (3, 10, '2026-11-28 01:00')"
for who in sec_ref_a postgres; do
    try "$who" "SELECT status, error FROM treble_sync.sync_table('sec_ref_t')"
    if [[ $OUT == failed* && $OUT == *sec_ref_thief* && $OUT == *sec_ref_dim* ]]; then
        ok "a cycle started by $who fails: its reference table is the thief's"
    else
        nok "a cycle started by $who fails: its reference table is the thief's"
        diag "$OUT"
        diag "$ERR"
    fi
    check "and nothing ran as the owner: the thief's loot is empty" 0 "$(looted sec_ref)"
done
check "the copy did not take the row" 2 "$(sq -c "SELECT count(*) FROM public.sec_ref_t")"

# --- given back, the cycle runs again
sq -c "ALTER TABLE public.sec_ref_dim OWNER TO sec_ref_a" -c "DROP POLICY sec_ref_steal ON public.sec_ref_dim" \
    -c "ALTER TABLE public.sec_ref_dim DISABLE ROW LEVEL SECURITY" >/dev/null
try sec_ref_a "SELECT status, rows_inserted FROM treble_sync.sync_table('sec_ref_t')"
check "given back, the cycle succeeds" "success|1" "$OUT"
check "and nothing was ever stolen" 0 "$(looted sec_ref)"
