-- Values of the PostgreSQL warehouse that review changed how they cross:
-- money at both ends of its range read under a warehouse session whose
-- lc_monetary writes it another way; a numeric key rewritten with other
-- scales, in the hot window, converging; numeric keys equal as numbers
-- and different as text.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS attack_money;
    CREATE TABLE attack_money (id int PRIMARY KEY, m money, synced_at timestamp);
    INSERT INTO attack_money VALUES (1, '92233720368547758.07', '2026-11-28 10:00:00'),
        (2, '-92233720368547758.08', '2026-11-28 10:00:00'), (3, '0.01', '2026-11-28 10:00:00'),
        (4, NULL, '2026-11-28 10:00:00');
$$);
-- the warehouse login writes money the French way
SELECT wh($$ ALTER ROLE reader SET lc_monetary = 'fr_FR.utf8' $$);
SELECT name FROM treble_sync.add_table('attack_money', 'wh', key_columns => '{id}');
SELECT status, rows_pulled, rows_inserted, rows_bad FROM treble_sync.sync_table('attack_money');
SELECT id, m, pg_typeof(m) FROM attack_money ORDER BY id;
SELECT wh($$ ALTER ROLE reader RESET lc_monetary $$);
SELECT treble_sync.remove_table('attack_money', drop_local => true);

SELECT wh($$
    DROP TABLE IF EXISTS attack_scale;
    CREATE TABLE attack_scale (k numeric PRIMARY KEY, v text, happened_at timestamp, synced_at timestamp);
    INSERT INTO attack_scale VALUES (-1.50, 'a', now() - interval '1 hour', '2026-11-28 10:00:00'),
        (1e-20, 'tiny', now() - interval '1 hour', '2026-11-28 10:00:00'),
        (123456789012345678901234567890.5, 'huge', now() - interval '1 hour', '2026-11-28 10:00:00'),
        (0.0, 'zero', now() - interval '1 hour', '2026-11-28 10:00:00');
$$);
SELECT name FROM treble_sync.add_table('attack_scale', 'wh', key_columns => '{k}',
    event_column => 'happened_at');
SELECT status, rows_inserted FROM treble_sync.sync_table('attack_scale');
SELECT k, v FROM attack_scale ORDER BY k;
-- every key rewritten with another scale, the same cursor
SELECT wh($$
    UPDATE attack_scale SET k = -1.5000 WHERE k = -1.5;
    UPDATE attack_scale SET k = 0.00000000000000000001000 WHERE v = 'tiny';
    UPDATE attack_scale SET k = 123456789012345678901234567890.50000 WHERE v = 'huge';
    UPDATE attack_scale SET k = 0 WHERE v = 'zero';
$$);
SELECT status, rows_pulled, rows_updated, rows_deleted FROM treble_sync.sync_table('attack_scale');
SELECT status, rows_pulled, rows_updated, rows_deleted FROM treble_sync.sync_table('attack_scale');
SELECT k, v FROM attack_scale ORDER BY k;
SELECT match, warehouse_rows, local_rows FROM treble_sync.verify('attack_scale');
SELECT treble_sync.remove_table('attack_scale', drop_local => true);
SELECT wh($$ DROP TABLE attack_money; DROP TABLE attack_scale $$);
