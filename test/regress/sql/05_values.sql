-- Values and identifiers that need care: unicode, quotes, newlines, tabs,
-- backslashes, NULLs, long text, bytea; names with quotes, spaces,
-- semicolons and unicode; a table in a non-public schema on both sides.
SET datestyle = ISO;
SELECT wh($x$
    DROP SCHEMA IF EXISTS "Sales; Ops" CASCADE;
    CREATE SCHEMA "Sales; Ops";
    CREATE TABLE "Sales; Ops"."Sends ""2026""" (
        "Send ID" bigint,
        "note; DROP TABLE x--" text,
        "ñandú" text,
        payload bytea,
        amount double precision,
        flag boolean,
        day date,
        "Created At" timestamp,
        synced_at timestamp);
    INSERT INTO "Sales; Ops"."Sends ""2026""" VALUES
        (1, E'tab\there', 'ñandú 🦤 日本', '\x00ff10', 1.5, true, '2026-11-28', '2026-11-28 10:00', '2026-11-28 10:00:00.000001'),
        (2, E'new\nline and \\ backslash', $$it's "quoted"$$, NULL, -0.25, false, NULL, '2026-11-28 11:00', '2026-11-28 11:00'),
        (3, NULL, NULL, '\x', NULL, NULL, '2026-11-29', '2026-11-29 01:00', '2026-11-29 01:00'),
        (4, repeat('long ✓ ', 20000), E'\\N', NULL, 1e300, NULL, NULL, '2026-11-29 02:00', '2026-11-29 02:00'),
        (5, E'carriage\rreturn', '', NULL, 0, NULL, NULL, '2026-11-29 03:00', '2026-11-29 03:00');
$x$);

CREATE SCHEMA "Local ""Copy""";
SELECT name, remote_schema, remote_table, local_table, key_columns
FROM treble_sync.add_table('"Sales; Ops"."Sends ""2026"""', 'wh', key_columns => '{Send ID}',
                           event_column => 'Created At',
                           local_table => '"Local ""Copy"""."Sends; ✓"', name => 'odd names');
\d "Local ""Copy"""."Sends; ✓"

SELECT status, rows_pulled, rows_inserted, error FROM treble_sync.sync_table('odd names');
SELECT "Send ID", length("note; DROP TABLE x--") AS note_len, "ñandú", payload, amount, flag, day
FROM "Local ""Copy"""."Sends; ✓" ORDER BY 1;
SELECT * FROM wh_diff('SELECT * FROM "Sales; Ops"."Sends ""2026"""',
                      'SELECT * FROM "Local ""Copy"""."Sends; ✓"');

-- a correction to the odd values arrives intact
SELECT wh($x$
    UPDATE "Sales; Ops"."Sends ""2026""" SET "ñandú" = E'tab\tnew\nline\\', synced_at = '2026-11-29 04:00'
    WHERE "Send ID" = 1;
$x$);
SELECT status, rows_updated FROM treble_sync.sync_table('odd names');
SELECT "ñandú" = E'tab\tnew\nline\\' AS exact FROM "Local ""Copy"""."Sends; ✓" WHERE "Send ID" = 1;
SELECT * FROM wh_diff('SELECT * FROM "Sales; Ops"."Sends ""2026"""',
                      'SELECT * FROM "Local ""Copy"""."Sends; ✓"');
