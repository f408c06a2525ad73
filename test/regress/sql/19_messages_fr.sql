-- Bad rows are found whatever the language of the server's messages: the
-- bad-row scenario again with French messages.  A cycle's worker takes
-- lc_messages from the database's settings, not from the caller's session,
-- so the database is set too.  Skipped where the locale fr_FR.UTF-8 is not
-- installed (as root, .ci/packages generates it).
SET datestyle = ISO;
CREATE FUNCTION pg_temp.can_set_lc_messages(locale text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('lc_messages', locale, true);
    RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN false;
END
$$;
SELECT pg_temp.can_set_lc_messages('fr_FR.UTF-8') AS have_fr \gset
\if :have_fr
SELECT wh($$
    DROP TABLE IF EXISTS orders_fr;
    CREATE TABLE orders_fr (order_id int, code text, amount numeric, qty text, synced_at timestamp);
    INSERT INTO orders_fr SELECT g, 'c' || g, g, g::text, '2026-11-28 10:00' FROM generate_series(1, 100) g;
    INSERT INTO orders_fr VALUES (101, 'too long a code', 1, '1', '2026-11-28 10:00');
$$);
CREATE TABLE orders_fr (order_id int PRIMARY KEY, code varchar(5), amount numeric(8,2), qty int,
    synced_at timestamp);
SELECT name FROM treble_sync.add_table('orders_fr', 'wh', key_columns => '{order_id}',
                                       local_table => 'orders_fr');
SET lc_messages = 'fr_FR.UTF-8';
ALTER DATABASE :"DBNAME" SET lc_messages = 'fr_FR.UTF-8';

-- fail: the bad row is named with its position in the pull and its
-- column (not its key), and the reason is PostgreSQL's message, in French
SELECT status,
       substring(split_part(error, E'\n', 1) FROM '^bad row in warehouse table "[^"]*": row [0-9]+ of the pull, column "[^"]*"') AS bad_row,
       split_part(error, E'\n', 1) NOT LIKE '%value too long%' AS reason_not_in_english,
       split_part(split_part(error, E'\n', 2), '.', 1) AS detail
FROM treble_sync.sync_table('orders_fr');
SELECT count(*) FROM orders_fr;

-- quarantine: each bad row with the column that holds the bad value
SELECT wh($$
    INSERT INTO orders_fr VALUES (102, 'ok', 1e9, '2', '2026-11-28 10:00'),
                                 (103, 'ok', 3, 'trois', '2026-11-28 10:00');
$$);
SELECT on_bad_row FROM treble_sync.alter_table('orders_fr', on_bad_row => 'quarantine',
                                               max_bad_row_ratio => 0.05);
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('orders_fr');
SELECT key, column_name, raw_value,
       reason NOT IN ('value too long for type character varying(5)', 'numeric field overflow',
                      'invalid input syntax for type integer: "trois"') AS reason_not_in_english
FROM treble_sync.quarantine WHERE table_name = 'orders_fr' ORDER BY key;

-- skip counts the same rows
SELECT wh($$UPDATE orders_fr SET synced_at = '2026-11-28 11:00' WHERE order_id > 100$$);
SELECT on_bad_row FROM treble_sync.alter_table('orders_fr', on_bad_row => 'skip',
                                               max_bad_row_ratio => 1);
SELECT status, rows_pulled, rows_bad FROM treble_sync.sync_table('orders_fr');

ALTER DATABASE :"DBNAME" RESET lc_messages;
RESET lc_messages;
SELECT treble_sync.remove_table('orders_fr', drop_local => true);
\else
\echo skipped: the locale fr_FR.UTF-8 is not installed (as root, .ci/packages generates it)
\endif
