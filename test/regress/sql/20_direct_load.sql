-- A pull into an empty copy goes straight into it, batch by batch (10,000
-- rows); a batch the copy refuses (a key it already holds, a key twice in
-- the batch, a value its types reject) goes through the staging table and
-- is merged: the outcome is the same as through the staging table alone.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS direct;
    CREATE TABLE direct (id bigint, v text, scheduled_at timestamp, synced_at timestamp);
    -- 25,000 keys: the first two batches go straight into the copy
    INSERT INTO direct SELECT g, 'first', timestamp '2026-11-01' + g * interval '1 minute',
                              '2026-11-20' FROM generate_series(1, 25000) g;
    -- second versions of keys of the first batch, in the third: half newer, half older
    INSERT INTO direct SELECT g, CASE WHEN g % 2 = 0 THEN 'newer' ELSE 'older' END,
                              '2026-11-01', CASE WHEN g % 2 = 0 THEN timestamp '2026-11-21'
                                                 ELSE timestamp '2026-11-19' END
                       FROM generate_series(1, 2000) g;
    -- an exact cursor tie: the greater row text wins
    INSERT INTO direct VALUES (3000, 'zzz', '2026-11-01', '2026-11-20');
$$);

-- every write into the copy is logged, to show which path each row took
CREATE TABLE direct_log (op text);
CREATE FUNCTION direct_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.direct_log VALUES (TG_OP);
    RETURN NULL;
END $$;
CREATE TABLE direct (id bigint PRIMARY KEY, v text, scheduled_at timestamp, synced_at timestamp);
CREATE TRIGGER direct_log AFTER INSERT OR UPDATE ON direct
    FOR EACH ROW EXECUTE FUNCTION direct_log();
SELECT name FROM treble_sync.add_table('direct', 'wh', key_columns => '{id}',
    event_column => 'scheduled_at', local_table => 'direct');
SELECT status, rows_pulled, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('direct');
-- 25,000 keys inserted; the 1,000 newer versions and the tie replaced the
-- rows the first batch wrote
SELECT op, count(*) FROM direct_log GROUP BY op ORDER BY op;
SELECT count(*) FROM wh_diff(
    'SELECT DISTINCT ON (id) * FROM direct ORDER BY id, synced_at DESC, v DESC',
    'SELECT * FROM direct');
SELECT v, count(*) FROM direct GROUP BY v ORDER BY v;

-- the next cycle is an ordinary one: nothing changed
TRUNCATE direct_log;
SELECT status, rows_inserted, rows_updated, rows_deleted FROM treble_sync.sync_table('direct');
SELECT count(*) AS writes FROM direct_log;

-- a first load into a copy that already has rows takes the staging table:
-- the copy's rows of pulled keys are updated, the others are left alone
CREATE TABLE direct_full (id bigint PRIMARY KEY, v text, scheduled_at timestamp,
    synced_at timestamp);
INSERT INTO direct_full VALUES (2, 'local', '2026-10-01', '2026-10-01'),
                               (99999, 'stray', '2026-10-01', '2026-10-01');
SELECT name FROM treble_sync.add_table('direct', 'wh', key_columns => '{id}',
    event_column => 'scheduled_at', local_table => 'direct_full', name => 'direct_full');
SELECT status, rows_pulled, rows_inserted, rows_updated, rows_deleted
FROM treble_sync.sync_table('direct_full');
SELECT * FROM direct_full WHERE id IN (1, 2, 3000, 99999) ORDER BY id;
SELECT count(*) FROM wh_diff(
    'SELECT DISTINCT ON (id) * FROM direct ORDER BY id, synced_at DESC, v DESC',
    'SELECT * FROM direct_full WHERE id <> 99999');

-- resync() of an emptied copy goes straight into it too
TRUNCATE direct, direct_log;
SELECT status, rows_inserted, rows_updated, rows_deleted FROM treble_sync.resync('direct');
SELECT op, count(*) FROM direct_log GROUP BY op ORDER BY op;
SELECT count(*) FROM wh_diff(
    'SELECT DISTINCT ON (id) * FROM direct ORDER BY id, synced_at DESC, v DESC',
    'SELECT * FROM direct');

-- a bad value in the second batch: with 'fail' the cycle names it and
-- nothing is applied; with 'quarantine' only that row is set aside
SELECT wh($$
    DROP TABLE IF EXISTS direct_bad;
    CREATE TABLE direct_bad (id bigint, amount text, synced_at timestamp);
    INSERT INTO direct_bad SELECT g, g::text, '2026-11-20' FROM generate_series(1, 15000) g;
    UPDATE direct_bad SET amount = 'twelve' WHERE id = 12000;
$$);
CREATE TABLE direct_bad (id bigint PRIMARY KEY, amount int, synced_at timestamp);
SELECT name FROM treble_sync.add_table('direct_bad', 'wh', key_columns => '{id}',
    local_table => 'direct_bad');
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('direct_bad');
SELECT count(*) FROM direct_bad;
SELECT on_bad_row FROM treble_sync.alter_table('direct_bad', on_bad_row => 'quarantine');
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('direct_bad');
SELECT count(*), sum(amount) FROM direct_bad;
SELECT key, column_name, raw_value FROM treble_sync.quarantine q
WHERE q.table_name = 'direct_bad';

-- a table with checks on the pulled rows takes the staging table, where
-- the checks read them
SELECT wh($$
    DROP TABLE IF EXISTS direct_checked;
    CREATE TABLE direct_checked (id bigint, amount numeric, synced_at timestamp);
    INSERT INTO direct_checked SELECT g, g, '2026-11-20' FROM generate_series(1, 100) g;
$$);
CREATE TABLE direct_checked (id bigint PRIMARY KEY, amount numeric, synced_at timestamp);
SELECT name FROM treble_sync.add_table('direct_checked', 'wh', key_columns => '{id}',
    local_table => 'direct_checked');
SELECT kind FROM treble_sync.add_check('direct_checked', 'range', column_name => 'amount',
    min => 0, max => 50);
SELECT status, regexp_replace(split_part(error, E'\n', 1), 'check [0-9]+', 'check N') AS error
FROM treble_sync.sync_table('direct_checked');
SELECT count(*) FROM direct_checked;

-- row-level security that applies to the copy's owner: COPY would not
-- apply it, so the load takes the staging table and its INSERT, where the
-- policy refuses the rows it does not allow
CREATE ROLE regress_direct_owner;
GRANT USAGE ON FOREIGN SERVER wh TO regress_direct_owner;
GRANT CREATE ON SCHEMA public TO regress_direct_owner;
GRANT treble_sync_admin TO regress_direct_owner;
DO $$
BEGIN
    EXECUTE format('CREATE USER MAPPING FOR regress_direct_owner SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SET ROLE regress_direct_owner;
CREATE TABLE direct_rls (id bigint PRIMARY KEY, amount numeric, synced_at timestamp);
ALTER TABLE direct_rls ENABLE ROW LEVEL SECURITY;
ALTER TABLE direct_rls FORCE ROW LEVEL SECURITY;
CREATE POLICY direct_rls_read ON direct_rls FOR SELECT USING (true);
CREATE POLICY direct_rls_small ON direct_rls FOR INSERT
    WITH CHECK (amount OPERATOR(pg_catalog.<=) 50);
SELECT name FROM treble_sync.add_table('direct_checked', 'wh', key_columns => '{id}',
    local_table => 'direct_rls', name => 'direct_rls');
RESET ROLE;
SELECT status, split_part(error, E'\n', 1) AS error FROM treble_sync.sync_table('direct_rls');
SELECT count(*) FROM direct_rls;
SELECT treble_sync.remove_table('direct_rls', drop_local => true);
DROP OWNED BY regress_direct_owner CASCADE;
DROP ROLE regress_direct_owner;
