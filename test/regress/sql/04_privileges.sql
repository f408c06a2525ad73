-- Who may do what.  A registration belongs to the owner of its local
-- table; only roles with that owner's privileges may change it or start
-- its cycles, and a cycle runs as the owner, whoever starts it.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS priv_sends;
    CREATE TABLE priv_sends (deployment_id int, note text, scheduled_at timestamp, synced_at timestamp);
    INSERT INTO priv_sends VALUES (1, 'a', '2026-11-28', '2026-11-28');
$$);

CREATE ROLE regress_owner;
CREATE ROLE regress_syncer;
CREATE ROLE regress_reader_only;
CREATE ROLE regress_nobody;
GRANT USAGE ON FOREIGN SERVER wh TO regress_owner, regress_reader_only;
GRANT CREATE ON SCHEMA public TO regress_owner;
GRANT treble_sync_admin TO regress_owner, regress_reader_only;
-- a scheduler may only run cycles: EXECUTE on them, and (below) the
-- owner's grant of SELECT, INSERT, UPDATE and DELETE on the copy
GRANT EXECUTE ON FUNCTION treble_sync.sync_table(text), treble_sync.sync_all(name) TO regress_syncer;
DO $$
BEGIN
    EXECUTE format('CREATE USER MAPPING FOR regress_owner SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
    EXECUTE format('CREATE USER MAPPING FOR regress_reader_only SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;

-- the owner registers: the copy is created as its own
SET ROLE regress_owner;
SELECT name, owner FROM treble_sync.add_table('priv_sends', 'wh', key_columns => '{deployment_id}',
                                              event_column => 'scheduled_at');
-- a trigger on the copy records whom the cycle's writes run as
CREATE TABLE priv_audit (who name, sec_restricted boolean);
CREATE FUNCTION priv_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.priv_audit VALUES (current_user, NULL);
    RETURN NEW;
END $$;
CREATE TRIGGER priv_note AFTER INSERT ON priv_sends FOR EACH ROW EXECUTE FUNCTION priv_note();
GRANT SELECT, INSERT, UPDATE, DELETE ON priv_sends TO regress_syncer;
RESET ROLE;
SELECT relowner::regrole FROM pg_class WHERE oid = 'priv_sends'::regclass;

-- an admin without the owner's privileges: refused before any worker starts
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
-- it sees the configuration, but not the table's status or run log
SELECT name FROM treble_sync.tables WHERE name = 'priv_sends';
SELECT count(*) AS status_rows FROM treble_sync.status WHERE table_name = 'priv_sends';
RESET ROLE;

-- an admin may not change a registration it does not own
SET ROLE regress_reader_only;
SELECT treble_sync.alter_table('priv_sends', enabled => false);
SELECT treble_sync.remove_table('priv_sends');
RESET ROLE;

-- the scheduler may not configure: alter_table is not granted to it
SET ROLE regress_syncer;
SELECT treble_sync.alter_table('priv_sends', enabled => false);
RESET ROLE;

-- the scheduler starts the cycle; the cycle runs as the owner
SET ROLE regress_syncer;
SELECT status, rows_inserted, run_by, owner FROM treble_sync.sync_table('priv_sends');
-- and it reads the run log of the copy it may read
SELECT count(*) > 0 AS sees_runs FROM treble_sync.runs WHERE table_name = 'priv_sends';
RESET ROLE;
SELECT who FROM priv_audit;

-- a superuser starts it: it still runs as the owner
SELECT wh($$ INSERT INTO priv_sends VALUES (2, 'b', '2026-11-28', '2026-11-28 01:00'); $$);
SELECT status, rows_inserted FROM treble_sync.sync_table('priv_sends');
SELECT who, count(*) FROM priv_audit GROUP BY who;

-- the owner's rights shrink between registration and the cycle: the
-- worker checks again, and sync_all logs a failed run and goes on
REVOKE DELETE ON priv_sends FROM regress_owner;
SET ROLE regress_syncer;
SELECT table_name, status, split_part(error, E'\n', 1) AS error
FROM treble_sync.sync_all() WHERE table_name = 'priv_sends';
RESET ROLE;
GRANT DELETE ON priv_sends TO regress_owner;

-- sync_all of a role that may sync nothing runs nothing and logs nothing
SELECT count(*) AS runs_before FROM treble_sync.runs WHERE table_name = 'priv_sends' \gset
GRANT EXECUTE ON FUNCTION treble_sync.sync_all(name) TO regress_nobody;
SET ROLE regress_nobody;
SELECT count(*) AS cycles FROM treble_sync.sync_all();
RESET ROLE;
SELECT count(*) - :runs_before AS new_runs FROM treble_sync.runs WHERE table_name = 'priv_sends';

-- the copy changes hands: its cycles stop until it is the owner's again
ALTER TABLE priv_sends OWNER TO regress_reader_only;
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('priv_sends');
ALTER TABLE priv_sends OWNER TO regress_owner;

-- the registration outlives its dropped copy, and stays the owner's
SET ROLE regress_owner;
DROP TABLE priv_sends;
RESET ROLE;
SET ROLE regress_reader_only;
SELECT treble_sync.alter_table('priv_sends', enabled => false);
SELECT treble_sync.remove_table('priv_sends');
RESET ROLE;
SET ROLE regress_owner;
SELECT treble_sync.remove_table('priv_sends');
RESET ROLE;

-- user mapping options stay hidden from other roles, as in core PostgreSQL
SET ROLE regress_reader_only;
SELECT usename, umoptions FROM pg_user_mappings WHERE srvname = 'wh' AND usename = 'regress_owner';
RESET ROLE;

DROP OWNED BY regress_owner, regress_syncer, regress_reader_only, regress_nobody;
DROP ROLE regress_owner, regress_syncer, regress_reader_only, regress_nobody;
