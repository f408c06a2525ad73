-- A copy whose own constraints refuse warehouse rows (a UNIQUE index on a
-- column that is not the key, a CHECK): the cycle fails cleanly under
-- every on_bad_row, and its stored error holds none of the rows' values
-- (PostgreSQL's DETAIL, "Key (email)=(...)" or "Failing row contains
-- (...)", is not kept).
SET datestyle = ISO;
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db
SELECT $$
CREATE TABLE rv (id INTEGER PRIMARY KEY, email TEXT, amount INTEGER, synced_at TIMESTAMP);
INSERT INTO rv VALUES (1, 'secret1@example.com', 5, '2026-11-28 10:00:00'),
                      (2, 'secret1@example.com', -7, '2026-11-28 10:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
CREATE TABLE rv_u (id int PRIMARY KEY, email text UNIQUE, amount int, synced_at timestamp);
CREATE TABLE rv_c (id int PRIMARY KEY, email text, amount int CHECK (amount > 0), synced_at timestamp);
SET client_min_messages = warning;
SELECT name FROM treble_sync.add_table('rv', 'wh', key_columns => '{id}', name => 'rv_u', local_table => 'rv_u');
SELECT name FROM treble_sync.add_table('rv', 'wh', key_columns => '{id}', name => 'rv_c', local_table => 'rv_c');
RESET client_min_messages;
SELECT status, split_part(error, E'\n', 1) FROM treble_sync.sync_table('rv_u');
SELECT status, split_part(error, E'\n', 1) FROM treble_sync.sync_table('rv_c');
SELECT on_bad_row FROM treble_sync.alter_table('rv_u', on_bad_row => 'quarantine', max_bad_row_ratio => 1);
SELECT on_bad_row FROM treble_sync.alter_table('rv_c', on_bad_row => 'skip', max_bad_row_ratio => 1);
SELECT status, split_part(error, E'\n', 1) FROM treble_sync.sync_table('rv_u');
SELECT status, split_part(error, E'\n', 1) FROM treble_sync.sync_table('rv_c');
SELECT count(*) AS errors_with_values FROM treble_sync.runs
WHERE table_name IN ('rv_u', 'rv_c') AND (error ~ 'secret1|-7' OR warnings ~ 'secret1|-7');
SELECT count(*) AS copied FROM rv_u, rv_c;
SELECT treble_sync.remove_table('rv_u', drop_local => true);
SELECT treble_sync.remove_table('rv_c', drop_local => true);
