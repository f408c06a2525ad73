-- Schema drift, checked at the start of every cycle: halt (the default)
-- fails the cycle naming each difference; auto_accept adds new columns,
-- keeps dropped ones as NULL and applies widenings; ignore keeps going.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS drifting;
    CREATE TABLE drifting (id int PRIMARY KEY, qty smallint, label varchar(10), note text,
        synced_at timestamp);
    INSERT INTO drifting VALUES (1, 1, 'a', 'n1', '2026-11-28 10:00');
$$);
SELECT name, schema_drift FROM treble_sync.add_table('drifting', 'wh');
SELECT treble_sync.alter_table('drifting', schema_drift => 'sometimes');
SELECT status, drift FROM treble_sync.sync_table('drifting');

-- a column added, one dropped, one widened
SELECT wh($$
    ALTER TABLE drifting ADD COLUMN channel text;
    ALTER TABLE drifting DROP COLUMN note;
    ALTER TABLE drifting ALTER COLUMN qty TYPE bigint;
$$);

-- halt: the cycle fails before pulling, naming each change; nothing applied
SELECT status, split_part(error, E'\n', 1) AS error, drift FROM treble_sync.sync_table('drifting');
SELECT count(*) FROM drifting;

-- ignore: keeps syncing the columns the copy has; the dropped one as NULL
SELECT schema_drift FROM treble_sync.alter_table('drifting', schema_drift => 'ignore');
SELECT wh($$UPDATE drifting SET qty = 7, synced_at = '2026-11-28 11:30' WHERE id = 1$$);
SELECT status, drift IS NOT NULL AS drift_logged FROM treble_sync.sync_table('drifting');
SELECT * FROM drifting ORDER BY id;

-- auto_accept: the new column joins, qty widens, note stays (NULL from now on)
SELECT schema_drift FROM treble_sync.alter_table('drifting', schema_drift => 'auto_accept');
SELECT wh($$UPDATE drifting SET synced_at = '2026-11-28 12:00';
            INSERT INTO drifting VALUES (2, 30000000000, 'b', '2026-11-28 12:00', 'email')$$);
SELECT status, drift FROM treble_sync.sync_table('drifting');
\d drifting
SELECT * FROM drifting ORDER BY id;
SELECT columns FROM treble_sync.tables WHERE name = 'drifting';
-- and the next cycle sees no drift
SELECT wh($$UPDATE drifting SET channel = 'sms', synced_at = '2026-11-28 13:00' WHERE id = 1$$);
SELECT status, drift FROM treble_sync.sync_table('drifting');
SELECT * FROM wh_diff('SELECT id, qty, label, channel, synced_at FROM drifting',
                      'SELECT id, qty, label, channel, synced_at FROM drifting');

-- a change that does not widen is refused even under auto_accept
SELECT wh($$ALTER TABLE drifting ALTER COLUMN qty TYPE text USING qty::text;
            UPDATE drifting SET qty = 'many', synced_at = '2026-11-28 14:00' WHERE id = 1$$);
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('drifting');
