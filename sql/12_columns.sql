-- Which columns are synced, and as what: a subset of the warehouse's
-- columns (key, cursor and event always included), and local types chosen
-- per column for a table add_table creates.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS wide;
    CREATE TABLE wide (id int PRIMARY KEY, status text, secret_note text, payload json,
        amount numeric(12,4), code varchar(8), scheduled_at timestamp, synced_at timestamp);
    INSERT INTO wide VALUES (1, 'sent', 'do not copy', '{"a": [1, 2]}', 12.5, 'X1', '2026-11-28', '2026-11-28');
$$);

-- bad input
SELECT treble_sync.add_table('wide', 'wh', columns => '{status, nope}');
SELECT treble_sync.add_table('wide', 'wh', column_types => '{"secret_note": "text"}',
    columns => '{status}');
SELECT treble_sync.add_table('wide', 'wh', column_types => '{"payload": "no_such_type"}');
SELECT treble_sync.add_table('wide', 'wh', column_types => '{"payload": "text); DROP TABLE wide; --"}');
SELECT treble_sync.add_table('wide', 'wh', column_types => '["jsonb"]');
CREATE TABLE wide_existing (id int PRIMARY KEY, status text, payload json, amount numeric,
    code text, secret_note text, scheduled_at timestamp, synced_at timestamp);
SELECT treble_sync.add_table('wide', 'wh', local_table => 'wide_existing',
    column_types => '{"payload": "jsonb"}');

-- a subset, with types of our choosing
SELECT name, columns FROM treble_sync.add_table('wide', 'wh', event_column => 'scheduled_at',
    columns => '{status, payload, amount, code}',
    column_types => '{"payload": "jsonb", "amount": "numeric(12,4)", "code": "varchar(8)"}');
\d wide
SELECT status, rows_inserted FROM treble_sync.sync_table('wide');
SELECT * FROM wide;
SELECT payload -> 'a' -> 1 AS second FROM wide;
