-- A trigger on the copy that changes the registration from inside the
-- cycle, which holds the cycle lock itself: remove_table, rewind,
-- alter_table of another option, sync_table of the same table.  The
-- cycle applies nothing, or runs as if nothing happened; the registration
-- is left as it was.
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db
SELECT $$
CREATE TABLE trg (id INTEGER PRIMARY KEY, v TEXT, synced_at TIMESTAMP);
INSERT INTO trg VALUES (1, 'one', '2026-11-28 10:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE trg (id int PRIMARY KEY, v text, synced_at timestamp);
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('trg', 'wh', key_columns => '{id}', local_table => 'trg',
    keep_history => '1 day');
RESET client_min_messages;
SELECT status FROM treble_sync.sync_table('trg');
CREATE TABLE trg_actions (action text);
CREATE FUNCTION trg_action() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE (SELECT action FROM public.trg_actions);
    RETURN NULL;
END
$$;
CREATE TRIGGER trg_action AFTER INSERT OR UPDATE ON trg FOR EACH STATEMENT EXECUTE FUNCTION trg_action();
CREATE FUNCTION cycle() RETURNS TABLE (status text, error text) LANGUAGE sql AS $$
    SELECT r.status, split_part(r.error, E'\n', 1) FROM treble_sync.sync_table('trg') r
$$;
SELECT $$ UPDATE trg SET v = 'two', synced_at = '2026-11-28 11:00:00'; $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
INSERT INTO trg_actions VALUES ($$SELECT treble_sync.remove_table('trg')$$);
SELECT * FROM cycle();
DELETE FROM trg_actions;
INSERT INTO trg_actions VALUES ($$SELECT treble_sync.remove_table('trg', drop_local => true)$$);
SELECT * FROM cycle();
DELETE FROM trg_actions;
INSERT INTO trg_actions VALUES ($$SELECT treble_sync.rewind('trg', '2026-11-28 10:30:00+00')$$);
SELECT * FROM cycle();
DELETE FROM trg_actions;
INSERT INTO trg_actions VALUES ($$SELECT treble_sync.alter_table('trg', mode => 'append')$$);
SELECT * FROM cycle();
DELETE FROM trg_actions;
INSERT INTO trg_actions VALUES ($$SELECT treble_sync.sync_table('trg')$$);
SELECT * FROM cycle();
DELETE FROM trg_actions;
SELECT name, mode, revision, watermark FROM treble_sync.tables WHERE name = 'trg';
SELECT * FROM trg;
DROP TRIGGER trg_action ON trg;
SELECT * FROM cycle();
SELECT * FROM trg;
SELECT treble_sync.remove_table('trg', drop_local => true);
DROP FUNCTION cycle(), trg_action();
DROP TABLE trg_actions;
