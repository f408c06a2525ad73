-- Sync groups under attack: a group's name is the owner's choice and is
-- shown to others (hints, notifications), and a group must not cycle a
-- member its owner disabled.  Each answer is a boolean that says whether
-- the extension behaved.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

SELECT $$
CREATE TABLE ag_sends (id INTEGER, note TEXT, ev TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO ag_sends VALUES (1, 'a', '2026-11-28 00:00:00', '2026-11-28 00:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

SELECT count(*) FROM (
    SELECT treble_sync.add_table('ag_sends', 'wh', key_columns => '{id}', event_column => 'ev',
                                 name => n, local_table => n)
    FROM unnest('{ag1,ag2,ag3}'::text[]) n) r;

-- the hint that names the group quotes it as a literal: whoever pastes it
-- runs sync_group() and nothing else
SELECT name FROM treble_sync.add_group($$ag'); SELECT 1; --$$, '{ag1}');
DO $$
DECLARE
    hint text;
BEGIN
    PERFORM treble_sync.sync_table('ag1');
    RAISE NOTICE 'sync_table cycled a member alone';
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RAISE NOTICE 'hint quotes the name: %',
        position($h$sync_group('ag''); SELECT 1; --')$h$ IN hint) > 0;
END
$$;

-- sync_all() cycles enabled tables only, members of a group included
SELECT treble_sync.alter_table('ag2', enabled => false) IS NULL AS altered;
SELECT name FROM treble_sync.alter_group($$ag'); SELECT 1; --$$, '{ag1,ag2}');
SELECT count(*) FILTER (WHERE table_name = 'ag2') = 0 AS disabled_member_left_alone
FROM treble_sync.sync_all();

-- a long group name does not make the group's cycles fail (the incident
-- notification must stay under NOTIFY's payload limit), or is refused
SELECT name FROM treble_sync.add_table('ag_sends', 'wh', key_columns => '{id}', event_column => 'ev',
                                     name => 'ag4', local_table => 'ag4');
SET treble_sync.freshness_alert = 1;
DO $$
DECLARE
    failed bigint;
BEGIN
    BEGIN
        PERFORM treble_sync.add_group(repeat('g', 8000), '{ag4}');
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'long name: refused or cycles fine';
        RETURN;
    END;
END
$$;
SELECT coalesce(bool_and(r.status <> 'failed'), true) AS long_name_cycles_fine
FROM treble_sync.groups g, LATERAL treble_sync.sync_group(g.name) r
WHERE g.name = repeat('g', 8000);
RESET treble_sync.freshness_alert;

SELECT treble_sync.remove_group(name) FROM treble_sync.groups
WHERE name IN ($$ag'); SELECT 1; --$$, repeat('g', 8000));
SELECT count(*) FROM (SELECT treble_sync.remove_table(n) FROM unnest('{ag1,ag2,ag3,ag4}'::text[]) n) r;
DROP TABLE ag1, ag2, ag3, ag4;
SELECT $$ DROP TABLE ag_sends; $$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
