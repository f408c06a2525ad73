-- Odd arguments to the functions that take types, rows and names: pseudo-types,
-- composites and domains that are no copy's row type, catalogs' row types,
-- out-of-range OIDs, infinite and huge watermarks in a crafted row, very
-- long names.  Each answers or fails cleanly; the server does not restart.
SELECT pg_postmaster_start_time() AS t0 \gset
\set VERBOSITY terse
CREATE TABLE odd_t (id int);
CREATE TYPE odd_comp AS (a int, b text);
CREATE DOMAIN odd_dom AS int;
SELECT treble_sync.history_query('record'::regtype, 'as_of', now(), now());
SELECT treble_sync.history_query('anyelement'::regtype, 'as_of', now(), now());
SELECT treble_sync.history_query('cstring'::regtype, 'changes', now(), now());
SELECT treble_sync.history_query('odd_comp'::regtype, 'as_of', now(), now());
SELECT treble_sync.history_query('odd_dom'::regtype, 'as_of', now(), now());
SELECT treble_sync.history_query('int4[]'::regtype, 'as_of', now(), now());
SELECT treble_sync.history_query('pg_authid'::regtype, 'as_of', now(), now());
SELECT treble_sync.history_query('treble_sync.tables'::regtype, 'as_of', now(), now());
SELECT treble_sync.history_query('odd_t'::regtype, repeat('x', 70), now(), now());
SELECT treble_sync.history_query('odd_t'::regtype, E'as_of\n', now(), now());
SELECT treble_sync.history_query(4294967295::oid::regtype, 'as_of', now(), now());
SELECT treble_sync.as_of(ROW(1, 'x'), now());
SELECT treble_sync.as_of(ROW(1, 'x')::odd_comp, now());
SELECT treble_sync.as_of(1::odd_dom, now());
SELECT treble_sync.as_of(ARRAY[1], now());
SELECT treble_sync.as_of(NULL::pg_authid, now());
SELECT treble_sync.as_of(NULL::odd_t, 'infinity');
SELECT treble_sync.changes(ROW(1), now(), now());
SELECT treble_sync.changes(NULL::odd_t, '-infinity', 'infinity');
SELECT treble_sync.changes(NULL::treble_sync.quarantine, '-infinity', 'infinity');
SELECT treble_sync.watermark_time(jsonb_populate_record(NULL::treble_sync.tables, '{"cursor_kind": "integer", "watermark": "99999999999999999999", "server_name": "nowhere"}'));
SELECT treble_sync.watermark_time(jsonb_populate_record(NULL::treble_sync.tables, '{"cursor_kind": "timestamp", "watermark": "infinity", "server_name": "nowhere"}'));
-- an infinite watermark: 15 and 16 cannot subtract infinite timestamps
-- (an error), 17 on answer an infinite interval: never a finite freshness
DO $$
BEGIN
    IF NOT isfinite(treble_sync.freshness(jsonb_populate_record(NULL::treble_sync.tables,
            '{"cursor_kind": "timestamp", "watermark": "-infinity", "name": "nowhere"}'))) THEN
        RAISE NOTICE 'freshness of a -infinity watermark: not finite';
    END IF;
EXCEPTION WHEN datetime_field_overflow THEN
    RAISE NOTICE 'freshness of a -infinity watermark: not finite';
END
$$;
SELECT treble_sync.freshness(jsonb_populate_record(NULL::treble_sync.tables, '{"cursor_kind": "integer", "watermark": "-9223372036854775808", "name": "nowhere"}'));
SELECT treble_sync.freshness(NULL::treble_sync.tables);
SELECT treble_sync.sync_table(repeat('x', 70));
SELECT treble_sync.sync_table(E'\\x00');
SELECT treble_sync.alter_table('nowhere', hot_window => NULL);
SELECT treble_sync.remove_table(NULL);
SELECT treble_sync.rewind(NULL, NULL);
SELECT pg_postmaster_start_time() = :'t0' AS same_server;
DROP TABLE odd_t; DROP TYPE odd_comp; DROP DOMAIN odd_dom;
