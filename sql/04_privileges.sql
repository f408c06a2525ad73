-- The worker acts with the privileges of the role that called sync_table:
-- without write rights on the local table there is no sync into it.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS priv_sends;
    CREATE TABLE priv_sends (deployment_id int, note text, scheduled_at timestamp, synced_at timestamp);
    INSERT INTO priv_sends VALUES (1, 'a', '2026-11-28', '2026-11-28');
$$);
SELECT name FROM treble_sync.add_table('priv_sends', 'wh', key_columns => '{deployment_id}',
                                       event_column => 'scheduled_at');

CREATE ROLE regress_syncer;
CREATE ROLE regress_reader_only;
CREATE ROLE regress_nobody;
GRANT USAGE ON FOREIGN SERVER wh TO regress_syncer, regress_reader_only;
-- a scheduler role may only run cycles; the reader may configure
GRANT EXECUTE ON FUNCTION treble_sync.sync_table(text), treble_sync.sync_all(name) TO regress_syncer;
GRANT treble_sync_admin TO regress_reader_only;
DO $$
BEGIN
    EXECUTE format('CREATE USER MAPPING FOR regress_syncer SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
    EXECUTE format('CREATE USER MAPPING FOR regress_reader_only SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
GRANT SELECT ON priv_sends TO regress_reader_only;
GRANT SELECT, INSERT, UPDATE, DELETE ON priv_sends TO regress_syncer;

-- only SELECT: refused before any worker starts, nothing logged
SET ROLE regress_reader_only;
SELECT * FROM treble_sync.sync_table('priv_sends');
-- and the catalog is not writable directly
UPDATE treble_sync.tables SET watermark = NULL;
DELETE FROM treble_sync.runs;
-- nor can it register tables it does not own
SELECT treble_sync.add_table('priv_sends', 'wh', key_columns => '{deployment_id}',
                             name => 'stolen', local_table => 'priv_sends');
RESET ROLE;
SELECT count(*) AS runs_logged FROM treble_sync.runs WHERE table_name = 'priv_sends';

-- a role with no grant may not even call the functions
SET ROLE regress_nobody;
SELECT treble_sync.add_table('priv_sends', 'wh', key_columns => '{deployment_id}');
SELECT treble_sync.alter_table('priv_sends', enabled => false);
SELECT treble_sync.remove_table('priv_sends');
SELECT * FROM treble_sync.sync_table('priv_sends');
SELECT * FROM treble_sync.resync('priv_sends');
-- but it may watch
SELECT table_name, last_status FROM treble_sync.status WHERE table_name = 'priv_sends';
RESET ROLE;

-- an admin may not change a registration whose copy it does not own
SET ROLE regress_reader_only;
SELECT treble_sync.alter_table('priv_sends', enabled => false);
SELECT treble_sync.remove_table('priv_sends');
RESET ROLE;

-- the scheduler role may not configure
SET ROLE regress_syncer;
SELECT treble_sync.alter_table('priv_sends', enabled => false);
RESET ROLE;

-- with the rights: the cycle runs as that role
SET ROLE regress_syncer;
SELECT status, rows_inserted, run_by FROM treble_sync.sync_table('priv_sends');
RESET ROLE;

-- rights revoked between registration and the cycle: sync_all logs a
-- failed run for the table (the worker checks again) and goes on
REVOKE DELETE ON priv_sends FROM regress_syncer;
SET ROLE regress_syncer;
SELECT table_name, status, split_part(error, E'\n', 1) AS error
FROM treble_sync.sync_all() WHERE table_name = 'priv_sends';
RESET ROLE;

-- user mapping options stay hidden from other roles, as in core PostgreSQL
SET ROLE regress_reader_only;
SELECT usename, umoptions FROM pg_user_mappings WHERE srvname = 'wh' AND usename = 'regress_syncer';
RESET ROLE;

DROP OWNED BY regress_syncer, regress_reader_only, regress_nobody;
DROP ROLE regress_syncer, regress_reader_only, regress_nobody;
