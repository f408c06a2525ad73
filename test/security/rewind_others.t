#!/usr/bin/env bash
#
# rewind() of one registration stands its own copy's history triggers
# aside while it writes that copy, and only those: a trigger of its owner
# that changes another owner's copy keeping history (which the owner may
# write, as that copy's scheduler) must meet that copy's rule, "only its
# cycles change it", as any statement outside a cycle does, and not
# change the copy behind its history's back.
#
#   - V, a scheduler of W's copy (SELECT, INSERT, UPDATE, DELETE granted
#     by W, as docs/security.md describes), cannot change it outside a
#     cycle: 55000;
#   - V's rewind of its own copy, whose statement trigger deletes and
#     changes rows of W's copy, fails with 55000 and applies nothing: W's
#     copy is unchanged and still equals its history as of now, and V's
#     copy and watermark are as before;
#   - the trigger dropped, the same rewind succeeds.

DB=sec_rewind_others
ROLES=(sec_rwo_v sec_rwo_w)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

admins_on_wh sec_rwo_v sec_rwo_w
wh_table sec_rwo_t "id int PRIMARY KEY, v text, synced_at timestamp" \
    "SELECT g, 'v' || g, '2026-11-28' FROM generate_series(1, 5) g" >/dev/null

# W's copy and V's, both keeping history
for r in w v; do
    as "sec_rwo_$r" -c "CREATE TABLE public.${r}_copy (id int PRIMARY KEY, v text, synced_at timestamp)" >/dev/null
    as "sec_rwo_$r" -c "SET client_min_messages = warning" \
        -c "SELECT name FROM treble_sync.add_table('sec_rwo_t', 'wh', key_columns => '{id}', name => '$r',
                                                   local_table => 'public.${r}_copy', keep_history => '30 days')" >/dev/null
done
whq -c "UPDATE sec_rwo_t SET synced_at = '2026-11-28 01:00'" >/dev/null
try sec_rwo_w "SELECT status FROM treble_sync.sync_table('w')"
check "W's first cycle succeeds" success "$OUT"
try sec_rwo_v "SELECT status FROM treble_sync.sync_table('v')"
check "V's first cycle succeeds" success "$OUT"
whq -c "UPDATE sec_rwo_t SET v = v || 'x', synced_at = '2026-11-28 05:00'" >/dev/null
try sec_rwo_v "SELECT status FROM treble_sync.sync_table('v')"
check "V's second cycle succeeds" success "$OUT"
try sec_rwo_w "SELECT status FROM treble_sync.sync_table('w')"
check "W's second cycle succeeds" success "$OUT"
as sec_rwo_w -c "GRANT SELECT, INSERT, UPDATE, DELETE ON public.w_copy TO sec_rwo_v" >/dev/null

w_copy() { sq -c "SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM public.w_copy"; }
w_history() {
    as sec_rwo_w -c "SELECT string_agg(id || '=' || v, ',' ORDER BY id)
                     FROM treble_sync.as_of(NULL::public.w_copy, pg_catalog.now())"
}
v_state() {
    sq -c "SELECT (SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM public.v_copy)
                  || ' ' || watermark FROM treble_sync.tables WHERE name = 'v'"
}
W_BEFORE=$(w_copy)
V_BEFORE=$(v_state)

refused "V, a scheduler of W's copy, cannot change it outside a cycle" sec_rwo_v \
    "DELETE FROM public.w_copy WHERE id = 1" 55000 "only its cycles"

# V's statement trigger on its own copy changes W's copy
as sec_rwo_v >/dev/null <<'SQL'
CREATE FUNCTION public.sec_rwo_forge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE public.w_copy SET v = 'forged' WHERE id = 2;
    DELETE FROM public.w_copy WHERE id = 1;
    RETURN NULL;
END $$;
CREATE TRIGGER sec_rwo_forge AFTER INSERT OR DELETE ON public.v_copy
    FOR EACH STATEMENT EXECUTE FUNCTION public.sec_rwo_forge();
SQL
refused "V's rewind whose trigger changes W's copy fails: W's copy keeps history" sec_rwo_v \
    "SELECT status FROM treble_sync.rewind('v', '2026-11-28 02:00')" 55000 "only its cycles"
check "W's copy is unchanged" "$W_BEFORE" "$(w_copy)"
check "and still equals its history as of now" "$W_BEFORE" "$(w_history)"
check "V's copy and watermark are as before the rewind" "$V_BEFORE" "$(v_state)"

as sec_rwo_v -c "DROP TRIGGER sec_rwo_forge ON public.v_copy" >/dev/null
try sec_rwo_v "SELECT status FROM treble_sync.rewind('v', '2026-11-28 02:00')"
check "without the trigger, V's rewind succeeds" success "$OUT"
check "and its copy holds the values before the second cycle" "1=v1,2=v2,3=v3,4=v4,5=v5" \
    "$(sq -c "SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM public.v_copy")"
check "W's copy is still unchanged" "$W_BEFORE" "$(w_copy)"
