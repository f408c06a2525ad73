-- Which columns are synced, and as what: a subset of the warehouse's
-- columns (key, cursor and event always included), and local types chosen
-- per column for a table add_table creates.
SET datestyle = ISO;
SELECT wh($$
    DROP TABLE IF EXISTS wide;
    CREATE TABLE wide (id int PRIMARY KEY, status text, secret_note text, payload json,
        amount numeric(12,4), code varchar(8), scheduled_at timestamp, synced_at timestamp);
    INSERT INTO wide VALUES (1, 'sent', 'do not copy', '{"a": [1, 2]}', 12.5, 'X1', '2026-11-28', '2026-11-28');
$$);

-- bad input
SELECT treble_sync.add_table('wide', 'wh', columns => '{status, nope}');
SELECT treble_sync.add_table('wide', 'wh', column_types => '{"secret_note": "text"}',
    columns => '{status}');
SELECT treble_sync.add_table('wide', 'wh', column_types => '{"payload": "no_such_type"}');
SELECT treble_sync.add_table('wide', 'wh', column_types => '{"payload": "text); DROP TABLE wide; --"}');
SELECT treble_sync.add_table('wide', 'wh', column_types => '["jsonb"]');
CREATE TABLE wide_existing (id int PRIMARY KEY, status text, payload json, amount numeric,
    code text, secret_note text, scheduled_at timestamp, synced_at timestamp);
SELECT treble_sync.add_table('wide', 'wh', local_table => 'wide_existing',
    column_types => '{"payload": "jsonb"}');

-- a subset, with types of our choosing
SELECT name, columns FROM treble_sync.add_table('wide', 'wh', event_column => 'scheduled_at',
    columns => '{status, payload, amount, code}',
    column_types => '{"payload": "jsonb", "amount": "numeric(12,4)", "code": "varchar(8)"}');
\d wide
SELECT status, rows_inserted FROM treble_sync.sync_table('wide');
SELECT * FROM wide;
SELECT payload -> 'a' -> 1 AS second FROM wide;

-- masking at ingest: a salted SHA-256 instead of the value
SELECT wh($$
    DROP TABLE IF EXISTS contacts;
    CREATE TABLE contacts (id int PRIMARY KEY, user_phone text, user_id bigint, synced_at timestamp);
    INSERT INTO contacts VALUES (1, '+34 600 000 001', 42, '2026-11-28'), (2, '+34 600 000 001', 42, '2026-11-28'),
                                (3, '+34 600 000 002', NULL, '2026-11-28');
$$);
SELECT treble_sync.add_table('contacts', 'wh', mask => '{"user_phone": "md5"}');
SELECT treble_sync.add_table('contacts', 'wh', mask => '{"nope": "sha256"}');
SELECT name, mask FROM treble_sync.add_table('contacts', 'wh',
    mask => '{"user_phone": "sha256", "user_id": "sha256"}');
\d contacts
SELECT status FROM treble_sync.sync_table('contacts');
SELECT c.id,
       c.user_phone = encode(sha256(s.salt || convert_to('+34 600 000 00' || (CASE WHEN c.id = 3 THEN 2 ELSE 1 END), 'UTF8')), 'hex') AS phone_hashed,
       c.user_id IS NOT DISTINCT FROM CASE WHEN c.id < 3 THEN encode(sha256(s.salt || convert_to('42', 'UTF8')), 'hex') END AS id_hashed,
       length(c.user_phone) AS len
FROM contacts c, (SELECT salt FROM treble_sync.mask_salt ORDER BY created_at LIMIT 1) s ORDER BY c.id;
SELECT count(DISTINCT user_phone) AS distinct_phones FROM contacts;
SELECT count(*) AS clear_values FROM contacts WHERE user_phone LIKE '+34%';
-- a local table that exists already, with the masked column as text:
-- mask needs no column_types there; a masked column of another type is refused
CREATE TABLE contacts_pre (id int PRIMARY KEY, user_phone text, user_id bigint, synced_at timestamp);
SELECT treble_sync.add_table('contacts', 'wh', name => 'contacts_pre', local_table => 'contacts_pre',
    mask => '{"user_phone": "sha256", "user_id": "sha256"}');
SELECT name, mask FROM treble_sync.add_table('contacts', 'wh', name => 'contacts_pre',
    local_table => 'contacts_pre', mask => '{"user_phone": "sha256"}');
SELECT status, rows_inserted FROM treble_sync.sync_table('contacts_pre');
SELECT id, length(user_phone) AS len, user_id FROM contacts_pre ORDER BY id;
SELECT treble_sync.remove_table('contacts_pre', drop_local => true);
-- nobody but the extension's owner reads the salt
CREATE ROLE regress_curious;
SET ROLE regress_curious;
SELECT salt FROM treble_sync.mask_salt;
RESET ROLE;
DROP ROLE regress_curious;

-- a mask added later reaches the rows already in the copy: the next cycle
-- starts over, and rewrites them hashed
SELECT watermark IS NULL AS starts_over FROM treble_sync.alter_table('wide', mask => '{"status": "sha256"}');
SELECT status, rows_updated FROM treble_sync.sync_table('wide');
SELECT length(status) AS hashed_length FROM wide;
