#!/usr/bin/env bash
#
# Versions of a copy (keep_history), against the PostgreSQL warehouse
# (psqlODBC), in a destination database of its own:
#
#   capture     the first sync records every row as a version; corrections,
#               removals and new rows close and open versions
#   nothing     a cycle that changes nothing writes nothing to the history
#               (its size and the xmin of every row stay)
#   as_of       the copy at every past cut, row for row
#   changes     inserts, updates (old and new) and deletes between two cuts
#   refused     a change to the copy outside a cycle, as_of and rewind
#               beyond the history, rewind not before the watermark
#   rewind      after a bad cycle: the copy is the state at the cut, the
#               watermark goes back, the run is logged, the bad versions
#               are kept aside; the next cycle converges to the warehouse
#   retention   versions closed before now() - keep_history are pruned,
#               exactly those
#   masking     the history of a masked column holds its hash only
#   privacy     another role reads neither the history nor as_of, and may
#               not rewind; a role with SELECT on the copy still needs it
#               on the history table
#   partitioned a copy partitioned by its event column keeps history too
#   modes       append and snapshot copies, resync and repair record what
#               they change, and only that
#
# (test/warehouses/random.t checks as_of and changes against the
# warehouse's state at every cut, on every warehouse.)
#
# Expects the clusters of .ci/clusters to be running and their env file
# sourced. Prints TAP. TS_KEEP_DB=1 leaves the database ts_history behind.

set -u
# shellcheck source=../tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
DB=ts_history
q()  { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
qe() { psql -X -q -At -d "$DB" "$@" 2>&1; }     # errors as text
wh() { PGOPTIONS="-c client_min_messages=warning" psql -X -q -At -v ON_ERROR_STOP=1 \
           -h "$TS_SOCK" -p "$TS_WH_PORT" -U postgres -d wh "$@"; }
sync() { q -c "SELECT status FROM treble_sync.sync_table('$1')"; }
cut_of_last() { q -c "SELECT (watermark_to::timestamp AT TIME ZONE 'UTC') FROM treble_sync.runs
                      WHERE table_name = '$1' ORDER BY run_id DESC LIMIT 1"; }
# the copy compared with the warehouse's newest version of each key: empty if equal
differs() {
    q -c "CREATE TEMP TABLE w AS SELECT * FROM dblink(current_setting('treble_test.wh_libpq'),
            'SELECT DISTINCT ON (id) id, status, cost, scheduled_at, synced_at FROM hist_sends ORDER BY id, synced_at DESC')
            AS t(id bigint, status text, cost numeric, scheduled_at timestamp, synced_at timestamp);
          SELECT count(*) FROM ((SELECT * FROM w EXCEPT ALL SELECT id, status, cost, scheduled_at, synced_at FROM hist_sends)
                                UNION ALL
                                (SELECT id, status, cost, scheduled_at, synced_at FROM hist_sends EXCEPT ALL SELECT * FROM w)) d;
          DROP TABLE w;"
}

psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" \
    -c "CREATE DATABASE $DB" >/dev/null
psql -X -q -d postgres -c "SET client_min_messages = warning" \
    -c "DROP ROLE IF EXISTS hist_owner" -c "DROP ROLE IF EXISTS hist_other" -c "DROP ROLE IF EXISTS hist_reader" \
    -c "CREATE ROLE hist_owner" -c "CREATE ROLE hist_other" -c "CREATE ROLE hist_reader" >/dev/null
q <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION treble_sync;
CREATE EXTENSION dblink;
DO $$
BEGIN
    EXECUTE format('CREATE SERVER w FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER w OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SQL

# The warehouse clock: cuts an hour apart, in the past of now() so that
# retention (from now()) can be tested with real intervals.
wh <<'SQL'
DROP TABLE IF EXISTS hist_sends;
CREATE TABLE hist_sends (id bigint NOT NULL, status text, cost numeric(10,2), scheduled_at timestamp(6),
                         synced_at timestamp(6) NOT NULL);
INSERT INTO hist_sends
SELECT i, 'queued', i, date_trunc('hour', now() at time zone 'UTC') - interval '10 days' + i * interval '1 minute',
       date_trunc('hour', now() at time zone 'UTC') - interval '10 days'
FROM generate_series(1, 20) i;
SQL

# ---- capture
q -c "SET client_min_messages = warning" -c "SELECT name FROM treble_sync.add_table('hist_sends', 'w',
        key_columns => '{id}', event_column => 'scheduled_at', hot_window => '3 days',
        max_delete_ratio => 1, keep_history => '30 days')" >/dev/null
is "$(q -c "SELECT keep_history, history_table::text FROM treble_sync.tables WHERE name = 'hist_sends'")" \
   "30 days|hist_sends_history" "add_table(keep_history) makes the history table <copy>_history"
is "$(q -c "SELECT tgname FROM pg_trigger WHERE tgrelid = 'hist_sends'::regclass ORDER BY 1" | tr '\n' ' ')" \
   "treble_sync_history_delete treble_sync_history_insert treble_sync_history_truncate treble_sync_history_update " \
   "the copy has the four history triggers"
is "$(sync hist_sends)" "success" "the first sync succeeds"
CUT1=$(cut_of_last hist_sends)
is "$(q -c "SELECT count(*), count(*) FILTER (WHERE ts_valid_from = '$CUT1' AND ts_valid_to IS NULL
                                           AND ts_opened_by IS NOT NULL) FROM hist_sends_history")" \
   "20|20" "the first sync records each row as a version valid from its cut"
q -c "CREATE TABLE state1 AS SELECT * FROM hist_sends"

# ---- a cycle that changes nothing writes nothing
before=$(q -c "SELECT pg_relation_size('hist_sends_history'), (SELECT string_agg(xmin::text || ctid::text, ',' ORDER BY id, ts_valid_from) FROM hist_sends_history)")
is "$(sync hist_sends)" "empty" "a cycle over an unchanged warehouse is empty"
after=$(q -c "SELECT pg_relation_size('hist_sends_history'), (SELECT string_agg(xmin::text || ctid::text, ',' ORDER BY id, ts_valid_from) FROM hist_sends_history)")
is "$after" "$before" "it writes nothing to the history: same size, same xmin and ctid of every row"

# ---- changes: a correction, a removal in the window, a new row (an hour later)
wh <<'SQL'
UPDATE hist_sends SET status = 'sent', synced_at = synced_at + interval '1 hour' WHERE id IN (1, 2);
DELETE FROM hist_sends WHERE id = 3;
INSERT INTO hist_sends SELECT 21, 'queued', 21, scheduled_at, synced_at + interval '1 hour' FROM hist_sends WHERE id = 20;
SQL
is "$(sync hist_sends)" "success" "a cycle with a correction, a removal and a new row"
CUT2=$(cut_of_last hist_sends)
q -c "CREATE TABLE state2 AS SELECT * FROM hist_sends"
is "$(q -c "SELECT count(*) FROM hist_sends_history WHERE ts_valid_to = '$CUT2'")|$(q -c "SELECT count(*) FROM hist_sends_history WHERE ts_valid_from = '$CUT2'")" \
   "3|3" "it closed three versions and opened three at its cut"
is "$(q -c "SELECT count(*) FROM ((TABLE state1 EXCEPT ALL SELECT * FROM treble_sync.as_of(NULL::hist_sends, '$CUT1'))
                                  UNION ALL (SELECT * FROM treble_sync.as_of(NULL::hist_sends, '$CUT1') EXCEPT ALL TABLE state1)) d")" \
   "0" "as_of the first cut is the copy as it was then"
is "$(q -c "SELECT count(*) FROM ((TABLE state2 EXCEPT ALL SELECT * FROM treble_sync.as_of(NULL::hist_sends, '$CUT2'))
                                  UNION ALL (SELECT * FROM treble_sync.as_of(NULL::hist_sends, '$CUT2') EXCEPT ALL TABLE state2)) d")" \
   "0" "as_of the second cut is the copy now"
is "$(q -c "SELECT count(*) FROM treble_sync.as_of(NULL::hist_sends, timestamptz '$CUT2' - interval '1 minute')")" \
   "20" "as_of between two cuts is the state at the earlier one"
is "$(q -c "SELECT string_agg(op || ' ' || coalesce((old_row).id, (new_row).id) || ' ' || coalesce((old_row).status, '-') || '>' || coalesce((new_row).status, '-'), ', ' ORDER BY coalesce((old_row).id, (new_row).id))
            FROM treble_sync.changes(NULL::hist_sends, '$CUT1', '$CUT2')")" \
   "update 1 queued>sent, update 2 queued>sent, delete 3 queued>-, insert 21 ->queued" \
   "changes between the cuts: two updates with old and new rows, a delete, an insert"
is "$(q -c "SELECT count(*) FROM treble_sync.changes(NULL::hist_sends, '$CUT2', '$CUT2')")" "0" \
   "no changes between a cut and itself"

# ---- refused
out=$(qe -c "DELETE FROM hist_sends WHERE id = 4")
[[ $out == *"keeps history: only its cycles change it"* ]] && ok "a DELETE on the copy outside a cycle is refused" \
    || { nok "a DELETE on the copy outside a cycle is refused"; echo "#   $out"; }
out=$(qe -c "TRUNCATE hist_sends")
[[ $out == *"only its cycles change it"* ]] && ok "so is a TRUNCATE" || { nok "so is a TRUNCATE"; echo "#   $out"; }
out=$(qe -c "SELECT count(*) FROM treble_sync.as_of(NULL::hist_sends, now() - interval '31 days')")
[[ $out == *"is beyond its history"* ]] && ok "as_of beyond the history is refused" || { nok "as_of beyond the history is refused"; echo "#   $out"; }
out=$(qe -c "SELECT status FROM treble_sync.rewind('hist_sends', now())")
[[ $out == *"it is not before the watermark"* ]] && ok "rewind to a cut not before the watermark is refused" || { nok "rewind to a cut not before the watermark is refused"; echo "#   $out"; }
out=$(qe -c "SELECT count(*) FROM treble_sync.as_of(NULL::treble_sync.runs, now())")
[[ $out == *"is not the row type of a copy kept by treble_sync"* ]] && ok "as_of of another row type is refused" || { nok "as_of of another row type is refused"; echo "#   $out"; }

# ---- rewind after a bad cycle
wh -c "UPDATE hist_sends SET cost = -1, synced_at = synced_at + interval '2 hours' WHERE id BETWEEN 5 AND 12"
is "$(sync hist_sends)" "success" "a bad cycle: eight rows with a wrong cost"
WM_BAD=$(q -c "SELECT watermark FROM treble_sync.tables WHERE name = 'hist_sends'")
is "$(q -c "SELECT run_id > 0, status, rows_inserted, rows_deleted, watermark_to = (timestamptz '$CUT2' AT TIME ZONE 'UTC')::text, warnings
            FROM treble_sync.rewind('hist_sends', '$CUT2')")" \
   "t|success|8|8|t|rewind to $(q -c "SELECT timestamptz '$CUT2'")" \
   "rewind to the cut before it: logged as a run, watermark back to that cut"
is "$(q -c "SELECT count(*) FROM ((TABLE state2 EXCEPT ALL TABLE hist_sends) UNION ALL (TABLE hist_sends EXCEPT ALL TABLE state2)) d")" \
   "0" "the copy equals its state at that cut"
is "$(q -c "SELECT count(*) FILTER (WHERE ts_rewound_by IS NOT NULL), count(*) FILTER (WHERE ts_valid_to IS NULL AND ts_rewound_by IS NULL)
            FROM hist_sends_history")" "16|20" \
   "the bad versions and how the good ones had closed are kept aside; 20 versions are open again"
is "$(q -c "SELECT count(*) FROM ((TABLE state2 EXCEPT ALL SELECT * FROM treble_sync.as_of(NULL::hist_sends, now()))
                                  UNION ALL (SELECT * FROM treble_sync.as_of(NULL::hist_sends, now()) EXCEPT ALL TABLE state2)) d")" \
   "0" "as_of now is the rewound copy"
wh -c "UPDATE hist_sends SET cost = id, synced_at = synced_at + interval '1 minute' WHERE id BETWEEN 5 AND 8"
is "$(sync hist_sends)" "success" "the next cycle, after the warehouse fixed half the rows"
is "$(differs)" "0" "the copy equals the warehouse (the rows still wrong there are pulled again)"
CUT3=$(cut_of_last hist_sends)
is "$(q -c "SELECT count(*) FROM treble_sync.changes(NULL::hist_sends, '$CUT2', '$CUT3')")" "8" \
   "changes since the rewound cut: the eight rows the warehouse changed"

# ---- masking
q -c "SET client_min_messages = warning" -c "SELECT name FROM treble_sync.add_table('hist_sends', 'w', name => 'hist_masked',
        local_table => 'hist_masked', key_columns => '{id}', event_column => 'scheduled_at',
        mask => '{\"status\": \"sha256\"}', keep_history => '30 days')" >/dev/null
is "$(sync hist_masked)" "success" "a masked copy with history syncs"
is "$(q -c "SELECT count(*) FILTER (WHERE h.status = c.status), count(*) FILTER (WHERE h.status IN ('queued', 'sent'))
            FROM hist_masked_history h JOIN hist_masked c USING (id)")" "20|0" \
   "the history of a masked column holds the hashes, never the values"

# ---- privacy
is "$(qe -c "SET ROLE hist_other" -c "SELECT count(*) FROM hist_sends_history" | tail -1)" \
   "ERROR:  permission denied for table hist_sends_history" "another role cannot read the history table"
out=$(qe -c "SET ROLE hist_other" -c "SELECT count(*) FROM treble_sync.as_of(NULL::hist_sends, now())")
[[ $out == *"permission denied for table hist_sends"* ]] && ok "nor the copy as of a cut" || { nok "nor the copy as of a cut"; echo "#   $out"; }
q -c "GRANT SELECT ON hist_sends TO hist_reader"
out=$(qe -c "SET ROLE hist_reader" -c "SELECT count(*) FROM treble_sync.as_of(NULL::hist_sends, now())")
[[ $out == *"permission denied for table hist_sends_history"* ]] && ok "SELECT on the copy alone does not open its history" \
    || { nok "SELECT on the copy alone does not open its history"; echo "#   $out"; }
q -c "GRANT SELECT ON hist_sends_history TO hist_reader"
is "$(qe -c "SET ROLE hist_reader" -c "SELECT count(*) FROM treble_sync.as_of(NULL::hist_sends, now())")" "20" \
   "with SELECT on both, a reader reads as_of"
q -c "GRANT treble_sync_admin TO hist_other"
out=$(qe -c "SET ROLE hist_other" -c "SELECT status FROM treble_sync.rewind('hist_sends', '$CUT2')")
[[ $out == *"permission denied"* || $out == *"must be"* ]] && ok "a treble_sync_admin that is not the owner may not rewind" \
    || { nok "a treble_sync_admin that is not the owner may not rewind"; echo "#   $out"; }

# ---- retention: keep 2 days; the cuts so far are ten days old
q -c "SELECT name FROM treble_sync.alter_table('hist_sends', keep_history => '2 days')" >/dev/null
wh -c "UPDATE hist_sends SET status = 'late', synced_at = date_trunc('second', now() at time zone 'UTC') - interval '1 hour' WHERE id = 9"
expect=$(q -c "SELECT count(*) FROM hist_sends_history WHERE ts_valid_to < now() - interval '2 days'
                                                         OR (ts_rewound_by IS NOT NULL AND ts_valid_from < now() - interval '2 days')")
total=$(q -c "SELECT count(*) FROM hist_sends_history")
is "$(sync hist_sends)" "success" "a cycle an hour ago, with keep_history 2 days"
is "$(q -c "SELECT count(*) FROM hist_sends_history")|$(q -c "SELECT count(*) FROM hist_sends_history WHERE ts_valid_to < now() - interval '2 days'")" \
   "$((total - expect + 1))|0" "it pruned the $expect versions closed (or set aside) before now() - 2 days, and no other"
out=$(qe -c "SELECT status FROM treble_sync.rewind('hist_sends', '$CUT2')")
[[ $out == *"is beyond its history"* ]] && ok "rewind beyond the retention is refused" || { nok "rewind beyond the retention is refused"; echo "#   $out"; }

# ---- partitioned copy
q <<'SQL'
CREATE TABLE hist_parts (id bigint NOT NULL, status text, cost numeric(10,2), scheduled_at timestamp(6) NOT NULL,
                         synced_at timestamp(6) NOT NULL, PRIMARY KEY (id, scheduled_at)) PARTITION BY RANGE (scheduled_at);
CREATE TABLE hist_parts_old PARTITION OF hist_parts FOR VALUES FROM (MINVALUE) TO ('2000-01-01');
CREATE TABLE hist_parts_new PARTITION OF hist_parts FOR VALUES FROM ('2000-01-01') TO (MAXVALUE);
SQL
out=$(q -c "SET client_min_messages = warning" -c "SELECT name FROM treble_sync.add_table('hist_sends', 'w', name => 'hist_parts',
        local_table => 'hist_parts', key_columns => '{id}', event_column => 'scheduled_at', keep_history => '30 days')" 2>&1)
is "$out" "hist_parts" "a partitioned copy registers with history"
is "$(sync hist_parts)" "success" "and syncs"
wh -c "UPDATE hist_sends SET status = 'moved', synced_at = date_trunc('second', now() at time zone 'UTC') - interval '30 minutes' WHERE id = 10"
is "$(sync hist_parts)" "success" "a correction"
is "$(q -c "SELECT count(*), count(*) FILTER (WHERE ts_valid_to IS NOT NULL) FROM hist_parts_history WHERE id = 10")" "2|1" \
   "the history of a partitioned copy has both versions of the corrected row"

# ---- modes, resync, repair
wh -c "DROP TABLE IF EXISTS hist_events" -c "CREATE TABLE hist_events AS SELECT * FROM hist_sends"
for mode in append snapshot; do
    q -c "SET client_min_messages = warning" -c "SELECT name FROM treble_sync.add_table('hist_events', 'w', name => 'hist_$mode',
            local_table => 'hist_$mode', key_columns => '{id}', mode => '$mode', max_delete_ratio => 1,
            keep_history => '30 days')" >/dev/null
    sync "hist_$mode" >/dev/null
done
wh <<'SQL'
UPDATE hist_events SET status = 'again', synced_at = date_trunc('second', now() at time zone 'UTC') - interval '20 minutes' WHERE id = 1;
DELETE FROM hist_events WHERE id = 2;
INSERT INTO hist_events VALUES (100, 'new', 1, now() at time zone 'UTC', date_trunc('second', now() at time zone 'UTC') - interval '20 minutes');
SQL
is "$(sync hist_append)|$(q -c "SELECT string_agg(id || ':' || CASE WHEN ts_valid_to IS NULL THEN 'open' ELSE 'closed' END, ',' ORDER BY id, ts_valid_from) FROM hist_append_history WHERE id IN (1, 2, 100)")" \
   "success|1:open,2:open,100:open" "append: the new row is a new version; nothing else changes"
is "$(sync hist_snapshot)|$(q -c "SELECT string_agg(id || ':' || CASE WHEN ts_valid_to IS NULL THEN 'open' ELSE 'closed' END, ',' ORDER BY id, ts_valid_from) FROM hist_snapshot_history WHERE id IN (1, 2, 100)")" \
   "success|1:closed,1:open,2:closed,100:open" "snapshot: a correction closes and opens, a removal closes, a new row opens"
before=$(q -c "SELECT count(*), max(xmin::text::bigint) FROM hist_snapshot_history")
is "$(q -c "SELECT status FROM treble_sync.resync('hist_snapshot')")|$(q -c "SELECT count(*), max(xmin::text::bigint) FROM hist_snapshot_history")" \
   "empty|$before" "resync of an equal copy writes nothing to the history"
wh -c "UPDATE hist_sends SET status = 'repaired' WHERE id = 11"   # a change without a new cursor
day=$(q -c "SELECT scheduled_at::date FROM hist_sends WHERE id = 11")
is "$(q -c "SELECT status, rows_updated FROM treble_sync.repair('hist_sends', '$day')")|$(q -c "SELECT string_agg(status || ':' || CASE WHEN ts_valid_to IS NULL THEN 'open' ELSE 'closed' END, ',' ORDER BY ts_valid_from, ts_valid_to NULLS LAST) FROM hist_sends_history WHERE id = 11 AND ts_rewound_by IS NULL")" \
   "success|2|queued:closed,repaired:open" "repair's change is a version too (and the day's other change, id 10)"

# ---- turning history off, and removing
q -c "SELECT name FROM treble_sync.alter_table('hist_parts', keep_history => '')" >/dev/null
is "$(q -c "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'hist_parts'::regclass AND tgname LIKE 'treble_sync_history%'")|$(q -c "SELECT to_regclass('hist_parts_history') IS NOT NULL")" \
   "0|t" "keep_history => '' drops the triggers and leaves the history table"
q -c "SELECT treble_sync.remove_table('hist_masked', drop_local => true)" >/dev/null
is "$(q -c "SELECT to_regclass('hist_masked') IS NULL AND to_regclass('hist_masked_history') IS NULL")" "t" \
   "remove_table(drop_local) drops the copy and its history table"

[[ -n ${TS_KEEP_DB:-} ]] || psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" \
    -c "DROP ROLE IF EXISTS hist_owner" -c "DROP ROLE IF EXISTS hist_other" -c "DROP ROLE IF EXISTS hist_reader" >/dev/null
echo "1..$n"
exit $((failed > 0))
