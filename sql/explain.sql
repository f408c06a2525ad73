-- The statements a cycle runs, pinned as postgres_fdw's expected files pin
-- "Remote SQL:". A cycle runs in a background worker, whose DEBUG1 lines
-- ("treble_sync local SQL: ...", "treble_sync remote SQL: ...") go to the
-- server log, not to the caller; explain_cycle() shows the same statements,
-- built by the cycle's own code, without running any. Identifiers are
-- quoted (a column named "Note's ""x""", a mixed-case table), operators
-- named by their schema, and every value is a parameter: the warehouse's
-- statements bind ?, the copy's $n, and no value of a row appears.
-- Who may call it: the registration's owner among treble_sync_admin.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

SELECT $$
CREATE TABLE "Explain_Sends" (deployment_id INTEGER, "Note's ""x""" TEXT, scheduled_at TIMESTAMP,
    synced_at TIMESTAMP);
INSERT INTO "Explain_Sends" VALUES (1, 'secret value', '2026-11-28 00:00:00', '2026-11-28 00:00:00');
INSERT INTO "Explain_Sends" VALUES (2, 'other value', '2026-11-29 00:00:00', '2026-11-29 00:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

SELECT name FROM treble_sync.add_table('Explain_Sends', 'wh', key_columns => '{deployment_id}',
    event_column => 'scheduled_at', name => 'explain_sends');
-- one statement a line
\pset format unaligned

-- the first cycle: no watermark and an empty copy, so one pull of
-- everything up to the cut, counted first (the SQLite driver cannot stream)
-- and copied straight into the copy; a batch the copy refuses is merged
SELECT side, step, statement FROM treble_sync.explain_cycle('explain_sends');
SELECT status, rows_inserted FROM treble_sync.sync_table('explain_sends');

-- a cycle with a watermark and hot_window_check 'keys': the delta, the
-- window's keys, the comparison of the keys with the copy's, the pull of
-- the keys that differ, the upsert and the refresh of the keys gone, the
-- latter two inside the window advisor's measuring statements
SELECT side, step, statement FROM treble_sync.explain_cycle('explain_sends');

-- hot_window_check 'rows': one pull of the delta and the window, whole
SELECT FROM treble_sync.alter_table('explain_sends', hot_window_check => 'rows');
SELECT side, step, statement FROM treble_sync.explain_cycle('explain_sends');

-- nothing ran: the copy and its watermark are as the one cycle left them
\pset format aligned
SELECT count(*) AS runs FROM treble_sync.runs WHERE table_name = 'explain_sends';
SELECT watermark FROM treble_sync.tables WHERE name = 'explain_sends';
SELECT deployment_id FROM "Explain_Sends" ORDER BY 1;
-- no statement holds a row's value
SELECT count(*) AS statements_with_values FROM treble_sync.explain_cycle('explain_sends')
WHERE statement LIKE '%value%' OR statement LIKE '%2026%';

-- who may call it: not PUBLIC, not an admin without the owner's privileges
CREATE ROLE regress_explain_admin;
CREATE ROLE regress_explain_nobody;
GRANT treble_sync_admin TO regress_explain_admin;
SET ROLE regress_explain_nobody;
SELECT * FROM treble_sync.explain_cycle('explain_sends');
RESET ROLE;
SET ROLE regress_explain_admin;
SELECT * FROM treble_sync.explain_cycle('explain_sends');
SELECT * FROM treble_sync.explain_cycle('no_such_table');
RESET ROLE;
SELECT * FROM treble_sync.explain_cycle(NULL);
DROP ROLE regress_explain_admin, regress_explain_nobody;

SELECT treble_sync.remove_table('explain_sends') IS NOT NULL AS removed;
DROP TABLE "Explain_Sends";
