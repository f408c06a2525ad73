#!/usr/bin/env bash
#
# The owner rule reaches every table a copy's writes reach: its partitions
# and inheritance children, at every level, and those of its history
# table. A row a cycle writes into a partitioned copy is stored in a
# partition, whose row triggers and index expressions run as the writer;
# an UPDATE or DELETE of a parent reaches its inheritance children. So a
# partition or child that changed hands (ALTER TABLE ... OWNER TO) would
# let its new owner act as the registration's owner, as a copy that
# changed hands would (issue of the owner rule in docs/security.md).
#
#   - a partitioned copy whose partitions are all the owner's syncs;
#   - one of its partitions given to a thief, who plants a row trigger that
#     copies the owner's private table: the cycles the owner and a
#     superuser start, and verify, refuse with 42501 naming the partition
#     and its owner, and the trigger never runs as the owner (the loot, and
#     the sequence that counts thefts, stay empty);
#   - a grandchild (a partition of a partition) given away: the same;
#   - an inheritance child of the copy, and of its history table, given
#     away: the same (rewind included, for the history table's);
#   - given back, the cycle runs again.

DB=sec_partitions
ROLES=(sec_part_a sec_part_thief)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

admin_on_wh sec_part_a sec_part_thief
wh_table sec_part_t "id int PRIMARY KEY, v text, synced_at timestamp" \
    "SELECT g, 'v' || g, '2026-11-28' FROM generate_series(1, 20) g"
plant_thief sec_part sec_part_a sec_part_thief
# give TABLE: a superuser gives it to the thief, who plants row triggers
give() {
    sq -c "ALTER TABLE $1 OWNER TO sec_part_thief" >/dev/null
    as sec_part_thief >/dev/null <<SQL
GRANT ALL ON $1 TO sec_part_a;
CREATE TRIGGER sec_part_steal BEFORE INSERT OR UPDATE OR DELETE ON $1
    FOR EACH ROW EXECUTE FUNCTION public.sec_part_steal_t();
SQL
}
take_back() {
    sq -c "DROP TRIGGER sec_part_steal ON $1" -c "ALTER TABLE $1 OWNER TO sec_part_a" >/dev/null
}
# new rows and changed rows in the warehouse, for the next cycle
hours=0
touch_wh() {
    hours=$((hours + 1))
    whq -c "UPDATE sec_part_t SET v = v || 'x', synced_at = '2026-11-28'::timestamp + interval '$hours hours'"
}
# refused_all WHAT NAME: every entry point that acts as the owner refuses
refused_all() {
    local what=$1 name=$2 who
    touch_wh
    for who in sec_part_a postgres; do
        refused "$what: a cycle started by $who is refused" "$who" \
            "SELECT status FROM treble_sync.sync_table('$name')" 42501 "owned by" sec_part_thief
    done
    refused "$what: verify is refused" sec_part_a \
        "SELECT count(*) FROM treble_sync.verify('$name', since => '2026-11-01')" 42501 "owned by" sec_part_thief
    check "$what: and nothing ran as the owner: the thief's loot is empty" 0 "$(looted sec_part)"
}

# --- a partitioned copy, two levels
as sec_part_a >/dev/null <<'SQL'
CREATE TABLE public.sec_part_c (id int, v text, synced_at timestamp, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE public.sec_part_c1 PARTITION OF public.sec_part_c FOR VALUES FROM (0) TO (10);
CREATE TABLE public.sec_part_c2 PARTITION OF public.sec_part_c FOR VALUES FROM (10) TO (1000) PARTITION BY RANGE (id);
CREATE TABLE public.sec_part_c2a PARTITION OF public.sec_part_c2 FOR VALUES FROM (10) TO (1000);
SQL
accepted "the owner registers a partitioned copy" sec_part_a \
    "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_part_t', 'wh', key_columns => '{id}', name => 'sec_part_c', local_table => 'public.sec_part_c')"
try sec_part_a "SELECT status, rows_inserted FROM treble_sync.sync_table('sec_part_c')"
check "its first load succeeds" "success|20" "$OUT"

give public.sec_part_c1
refused_all "a partition given away" sec_part_c
take_back public.sec_part_c1
give public.sec_part_c2a
refused_all "a partition of a partition given away" sec_part_c
take_back public.sec_part_c2a
try sec_part_a "SELECT status FROM treble_sync.sync_table('sec_part_c')"
check "given back, the cycle runs again" success "$OUT"

# --- inheritance children of a copy and of its history table
as sec_part_a >/dev/null <<'SQL'
CREATE TABLE public.sec_part_h (id int PRIMARY KEY, v text, synced_at timestamp);
SQL
accepted "the owner registers a copy that keeps history" sec_part_a \
    "SET client_min_messages = warning; SELECT name FROM treble_sync.add_table('sec_part_t', 'wh', key_columns => '{id}', name => 'sec_part_h', local_table => 'public.sec_part_h', keep_history => '30 days')"
try sec_part_a "SELECT status FROM treble_sync.sync_table('sec_part_h')"
check "its first load succeeds" success "$OUT"
as sec_part_a -c "CREATE TABLE public.sec_part_h_kid () INHERITS (public.sec_part_h)" >/dev/null
give public.sec_part_h_kid
# a row of the thief's in the child, which the cycle's UPDATE of the copy reaches
as sec_part_thief -c "INSERT INTO public.sec_part_h_kid VALUES (1, 'thief', '2026-11-28')" >/dev/null
check "the thief's row is in its child (setting up)" 1 "$(sq -c "SELECT count(*) FROM ONLY public.sec_part_h_kid")"
sq -c "TRUNCATE public.sec_part_loot" -c "SELECT setval('public.sec_part_thefts', 1, false)" >/dev/null
refused_all "an inheritance child of the copy given away" sec_part_h
take_back public.sec_part_h_kid
as sec_part_a -c "DROP TABLE public.sec_part_h_kid" >/dev/null

as sec_part_a -c "CREATE TABLE public.sec_part_hh_kid () INHERITS (public.sec_part_h_history)" >/dev/null
give public.sec_part_hh_kid
refused_all "an inheritance child of the history table given away" sec_part_h
refused "an inheritance child of the history table given away: rewind is refused" sec_part_a \
    "SELECT status FROM treble_sync.rewind('sec_part_h', (SELECT watermark_time FROM treble_sync.status WHERE table_name = 'sec_part_h') - interval '1 hour')" \
    42501 "owned by" sec_part_thief
check "and nothing ran as the owner: the thief's loot is empty" 0 "$(looted sec_part)"
take_back public.sec_part_hh_kid
try sec_part_a "SELECT status FROM treble_sync.sync_table('sec_part_h')"
check "given back, the cycle runs again" success "$OUT"
