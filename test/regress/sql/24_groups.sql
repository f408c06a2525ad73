-- Sync groups: tables cycled together, at one cut, committed once.  A
-- member's failure fails the group and applies nothing; members cannot be
-- cycled alone; sync_all() cycles the group whole.
SET datestyle = ISO;

SELECT wh($$
    DROP TABLE IF EXISTS g_dim, g_fact;
    CREATE TABLE g_dim (campaign_id int PRIMARY KEY, title text, created_at timestamp, synced_at timestamp);
    CREATE TABLE g_fact (send_id int PRIMARY KEY, campaign_id int, scheduled_at timestamp, synced_at timestamp);
    INSERT INTO g_dim VALUES (1, 'one', '2026-11-28 08:00', '2026-11-28 08:00');
    INSERT INTO g_fact VALUES (10, 1, '2026-11-28 09:00', '2026-11-28 09:00');
$$);
CREATE TABLE g_dim (campaign_id int PRIMARY KEY, title text, created_at timestamp, synced_at timestamp);
CREATE TABLE g_fact (send_id int PRIMARY KEY, campaign_id int, scheduled_at timestamp, synced_at timestamp);
SELECT name FROM treble_sync.add_table('g_dim', 'wh', key_columns => '{campaign_id}',
    event_column => 'created_at', local_table => 'g_dim');
SELECT name FROM treble_sync.add_table('g_fact', 'wh', key_columns => '{send_id}',
    event_column => 'scheduled_at', local_table => 'g_fact');

-- what a group may be
SELECT treble_sync.add_group(NULL, '{g_fact}');
SELECT treble_sync.add_group('', '{g_fact}');
SELECT treble_sync.add_group('sends', NULL);
SELECT treble_sync.add_group('sends', '{}');
SELECT treble_sync.add_group('sends', '{g_fact, NULL}');
SELECT treble_sync.add_group('sends', '{g_fact, nope}');
SELECT treble_sync.add_group('sends', '{g_fact, g_fact}');
SELECT name, owner = current_user::regrole AS mine FROM treble_sync.add_group('sends', '{g_fact, g_dim}');
SELECT treble_sync.add_group('sends', '{g_dim}');
SELECT treble_sync.add_group('other', '{g_dim}');
SELECT t.name, t.group_position FROM treble_sync.tables t JOIN treble_sync.groups g USING (group_id)
WHERE g.name = 'sends' ORDER BY 2;

-- a member is not cycled alone
SELECT status FROM treble_sync.sync_table('g_fact');
SELECT status FROM treble_sync.resync('g_dim');

-- nor repaired or rewound alone
SELECT treble_sync.repair('g_fact', '2026-11-28');
SELECT count(*) FROM treble_sync.verify('g_fact', repair => true);
SELECT treble_sync.rewind('g_dim', now());

-- the group's cycle: every member, one group run
SELECT table_name, status, rows_inserted, group_run_id IS NOT NULL AS grouped
FROM treble_sync.sync_group('sends') ORDER BY table_name;
SELECT group_name, status, error FROM treble_sync.group_runs ORDER BY group_run_id DESC LIMIT 1;
SELECT count(DISTINCT group_run_id) FROM treble_sync.runs WHERE table_name IN ('g_dim', 'g_fact');
SELECT * FROM wh_diff('SELECT * FROM g_dim', 'SELECT * FROM g_dim');
SELECT * FROM wh_diff('SELECT * FROM g_fact', 'SELECT * FROM g_fact');
SELECT table_name, group_name FROM treble_sync.status WHERE table_name IN ('g_dim', 'g_fact') ORDER BY 1;

-- a new campaign and its sends arrive together
SELECT wh($$
    INSERT INTO g_dim VALUES (2, 'two', '2026-11-28 10:00', '2026-11-28 10:00');
    INSERT INTO g_fact VALUES (20, 2, '2026-11-28 10:05', '2026-11-28 10:05'), (21, 2, '2026-11-28 10:06', '2026-11-28 10:06');
$$);
SELECT table_name, status, rows_inserted FROM treble_sync.sync_group('sends') ORDER BY table_name;
SELECT count(*) AS orphans FROM g_fact f WHERE NOT EXISTS (SELECT 1 FROM g_dim d WHERE d.campaign_id = f.campaign_id);

-- one member's failure (an 'error' check of g_dim, a range with no lower
-- bound on an integer column: every cycle failed on input syntax before)
-- fails the group: the
-- fact rows that arrived are not applied either
SELECT wh($$
    INSERT INTO g_dim VALUES (3, 'three', '2026-11-28 11:00', '2026-11-28 11:00');
    INSERT INTO g_fact VALUES (30, 3, '2026-11-28 11:05', '2026-11-28 11:05');
$$);
SELECT (treble_sync.add_check('g_dim', 'range', column_name => 'campaign_id', max => 2)).kind;
SELECT table_name, status, regexp_replace(error, 'check \d+', 'check N') AS error
FROM treble_sync.sync_group('sends') ORDER BY table_name;
SELECT group_name, status, regexp_replace(error, 'check \d+', 'check N') AS error
FROM treble_sync.group_runs ORDER BY group_run_id DESC LIMIT 1;
SELECT count(*) AS fact_rows, max(send_id) FROM g_fact;
SELECT count(*) AS dim_rows FROM g_dim;
SELECT name, watermark FROM treble_sync.tables WHERE name IN ('g_dim', 'g_fact') ORDER BY 1;
SELECT treble_sync.drop_check(check_id) FROM treble_sync.checks c JOIN treble_sync.tables t USING (table_id)
WHERE t.name = 'g_dim';
SELECT table_name, status, rows_inserted FROM treble_sync.sync_group('sends') ORDER BY table_name;
SELECT * FROM wh_diff('SELECT * FROM g_fact', 'SELECT * FROM g_fact');

-- sync_all() cycles the group whole, after the tables outside groups
SELECT wh($$INSERT INTO g_fact VALUES (31, 3, '2026-11-28 11:30', '2026-11-28 11:30')$$);
SELECT table_name, status, rows_inserted FROM treble_sync.sync_all()
WHERE group_run_id IS NOT NULL ORDER BY table_name;

-- alter_group: g_dim leaves, and is cycled alone again
SELECT name FROM treble_sync.alter_group('sends', '{g_fact}');
SELECT status FROM treble_sync.sync_table('g_dim');
SELECT table_name, status FROM treble_sync.sync_group('sends');
SELECT treble_sync.alter_group('nope', '{g_fact}');

-- who may: treble_sync_admin's functions; and a role that may not manage
-- the members may not group them
CREATE ROLE g_nobody;
GRANT treble_sync_admin TO g_nobody;
SET ROLE g_nobody;
SELECT treble_sync.add_group('theirs', '{g_dim}');
SELECT treble_sync.sync_group('sends');
SELECT treble_sync.remove_group('sends');
RESET ROLE;
DROP ROLE g_nobody;

SELECT treble_sync.remove_group('sends');
SELECT treble_sync.remove_group('sends');
SELECT count(*) FROM treble_sync.tables WHERE group_id IS NOT NULL AND name LIKE 'g\_%';
SELECT treble_sync.remove_table('g_fact', drop_local => true);
SELECT treble_sync.remove_table('g_dim', drop_local => true);
