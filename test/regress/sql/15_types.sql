-- Every type of the mapping, in a table add_table creates: the local types
-- chosen, and the values compared exactly with the warehouse's.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS typed;
    CREATE TABLE typed (
        id bigint PRIMARY KEY, i2 smallint, i4 integer, i8 bigint,
        num numeric, num_ps numeric(12,4), r4 real, r8 double precision, flag boolean,
        ch char(3), vc varchar(10), tx text, d date, t time, ts timestamp(6), tstz timestamptz,
        u uuid, b bytea, j json, jb jsonb, synced_at timestamp);
    INSERT INTO typed VALUES
        (1, -32768, -2147483648, -9223372036854775808, 123456789012345678901234567890.123456789,
         -12345678.1234, 1.5, 2.718281828459045, true, 'ab', 'ten chars!', 'ünïcödé ✓',
         '2026-11-28', '23:59:59.999999', '2026-11-28 12:34:56.789012', '2026-11-28 12:34:56.789012+00',
         'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\xdeadbeef', '{"a": [1, 2.5, null]}',
         '{"b": {"c": true}}', '2026-11-28'),
        (2, 32767, 2147483647, 9223372036854775807, -0.000000001, 0, -0, 1e-300, false,
         'xyz', '', '', '0001-01-01', '00:00', '1970-01-01 00:00:00', '2000-02-29 23:00:00+00',
         '00000000-0000-0000-0000-000000000000', '\x', '[]', '{}', '2026-11-28'),
        (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
         NULL, NULL, NULL, NULL, NULL, '2026-11-28');
$$);
SELECT name FROM treble_sync.add_table('typed', 'wh', column_types => '{"jb": "jsonb"}');
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'typed'::regclass AND attnum > 0 ORDER BY attnum;
SELECT status, rows_inserted FROM treble_sync.sync_table('typed');
-- compared as text, timestamptz in UTC on both sides
SELECT * FROM wh_diff(
    $$SELECT id, i2, i4, i8, num, num_ps, r4, r8, flag, ch, vc, tx, d, t, ts,
             tstz AT TIME ZONE 'UTC', u, b, j::text, jb, synced_at FROM typed$$,
    $$SELECT id, i2, i4, i8, num, num_ps, r4, r8, flag, ch, vc, tx, d, t, ts,
             tstz AT TIME ZONE 'UTC', u, b, j, jb, synced_at FROM typed$$);
