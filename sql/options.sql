-- Option validation: server and user-mapping options, who may create which
-- servers, what a mapping's values may hold, and the options of a
-- registration (add_table, alter_table).
SET datestyle = ISO;
\set VERBOSITY default
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_WH :wh_dir/wh.db

SELECT $$
CREATE TABLE opt_sends (id INTEGER PRIMARY KEY, session_id TEXT, n INTEGER,
                        scheduled_at TIMESTAMP, synced_at TIMESTAMP);
INSERT INTO opt_sends VALUES (1, 's1', 1, '2026-11-28 00:00:00', '2026-11-28 00:00:00');
$$ \g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"

-- the wrapper validates server and mapping options
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (conection_string 'x');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={SQLite3}', dsn 'x');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', timezone 'Mars/Olympus');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', fetch_size '0');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', slice_rows '-1');
CREATE SERVER ok FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', timezone 'UTC', fetch_size '500', slice_rows '0');
CREATE USER MAPPING FOR CURRENT_USER SERVER ok OPTIONS (username 'x');
CREATE USER MAPPING FOR CURRENT_USER SERVER ok OPTIONS (password_required 'maybe');
DROP SERVER ok;

-- credentials are refused in every server's options, even a superuser's
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={SQLite3};Database=wh.db;PWD=secret');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={SQLite3};Database=wh.db;UID=u');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={SQLite3};Database={wh.db');

-- nobody has USAGE on the wrapper by default; a role granted it may create
-- servers, but not of SQLite (a file driver opens files as the server's OS
-- user), nor name a driver by path or one that is not registered
SELECT count(*) AS wrapper_grants
FROM pg_foreign_data_wrapper w, aclexplode(w.fdwacl) a
WHERE w.fdwname = 'treble_sync' AND a.grantee <> w.fdwowner;
CREATE ROLE regress_srv_owner;
SET ROLE regress_srv_owner;
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={SQLite3};Database=wh.db');
RESET ROLE;
GRANT USAGE ON FOREIGN DATA WRAPPER treble_sync TO regress_srv_owner;
GRANT treble_sync_admin TO regress_srv_owner;
SET ROLE regress_srv_owner;
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={SQLite3};Database=wh.db');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver=SQLite3;Database=wh.db;LoadExt=evil');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver=/usr/lib/x86_64-linux-gnu/odbc/libsqlite3odbc.so;Database=wh.db');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={No Such Driver};Server=127.0.0.1');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Server=127.0.0.1;Port=5432');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'nosuchdsn');
RESET ROLE;

-- ownership moves after validation: checked again at connect
\set conn 'Driver={SQLite3};Database=' :wh_dir /wh.db
CREATE SERVER moved FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'conn');
ALTER SERVER moved OWNER TO regress_srv_owner;
CREATE USER MAPPING FOR CURRENT_USER SERVER moved;
SELECT treble_sync.add_table('opt_sends', 'moved', name => 'opt_moved');
DROP USER MAPPING FOR CURRENT_USER SERVER moved;
DROP SERVER moved;

-- a mapping of a role that is not a superuser must carry a password, and
-- only a superuser may waive that
GRANT USAGE ON FOREIGN SERVER wh TO regress_srv_owner;
GRANT CREATE ON SCHEMA public TO regress_srv_owner;
SET ROLE regress_srv_owner;
CREATE USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (password_required 'false');
CREATE USER MAPPING FOR CURRENT_USER SERVER wh;
SELECT treble_sync.add_table('opt_sends', 'wh', name => 'opt_nopw');
-- an empty one is no password either
ALTER USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (ADD password '');
SELECT treble_sync.add_table('opt_sends', 'wh', name => 'opt_nopw');
-- a password cannot add keys for a driver that ignores braces (SQLite)
ALTER USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (SET password 'x;LoadExt=/tmp/evil.so');
SELECT treble_sync.add_table('opt_sends', 'wh', name => 'opt_nopw');
ALTER USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (SET password ' x');
SELECT treble_sync.add_table('opt_sends', 'wh', name => 'opt_nopw');
RESET ROLE;
-- and a PUBLIC mapping needs one too
DROP USER MAPPING FOR regress_srv_owner SERVER wh;
CREATE USER MAPPING FOR PUBLIC SERVER wh;
SET ROLE regress_srv_owner;
SELECT treble_sync.add_table('opt_sends', 'wh', name => 'opt_nopw');
RESET ROLE;
-- a superuser waives it: the connection goes ahead
ALTER USER MAPPING FOR PUBLIC SERVER wh OPTIONS (ADD password_required 'false');
SET ROLE regress_srv_owner;
SELECT name, owner FROM treble_sync.add_table('opt_sends', 'wh', name => 'opt_nopw');
SELECT treble_sync.remove_table('opt_nopw');
DROP TABLE opt_sends;
RESET ROLE;
DROP USER MAPPING FOR PUBLIC SERVER wh;

-- a warehouse file that does not exist is an error (and is not created)
\set missing_conn 'Driver={SQLite3};Database=' :wh_dir /missing.db
CREATE SERVER missing FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'missing_conn');
CREATE USER MAPPING FOR CURRENT_USER SERVER missing;
-- (through a notice, with the file's directory as <dir> should the
-- driver's message name the file)
DO $$
BEGIN
    PERFORM treble_sync.add_table('opt_sends', 'missing');
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'refused (%): %', SQLSTATE,
        replace(SQLERRM, (SELECT dir FROM public.regress_wh), '<dir>');
END
$$;
\! test -e "$(dirname "$TS_REGRESS_WH")/missing.db" && echo "missing.db was created" || echo "missing.db is absent"
DROP USER MAPPING FOR CURRENT_USER SERVER missing;
DROP SERVER missing;

-- the options of a registration: the mode and its cursor, intervals with
-- units, neither mixed-sign, absurd nor under a second
SELECT treble_sync.add_table('opt_sends', 'wh', cursor_column => NULL);
SELECT treble_sync.add_table('opt_sends', 'wh', mode => 'replace');
SELECT treble_sync.add_table('opt_sends', 'wh', cursor_column => 'n', cursor_overlap => '1 hour');
SELECT treble_sync.add_table('opt_sends', 'wh', cursor_overlap => '-1 hour');
SELECT treble_sync.add_table('opt_sends', 'wh', cursor_column => 'n', initial_chunk => '1 day');
SELECT treble_sync.add_table('opt_sends', 'wh', mode => 'append', initial_chunk => '1 day');
SELECT treble_sync.add_table('opt_sends', 'wh', hot_window => '-1 day');
SELECT treble_sync.add_table('opt_sends', 'wh', hot_window => '3');
SELECT treble_sync.add_table('opt_sends', 'wh', hot_window => ' -2.5 ');
SELECT treble_sync.add_table('opt_sends', 'wh', hot_window => '1 day -2 hours');
SELECT treble_sync.add_table('opt_sends', 'wh', hot_window => '101 years');
SELECT treble_sync.add_table('opt_sends', 'wh', hot_window => '500 milliseconds');
SELECT treble_sync.add_table('opt_sends', 'wh', hot_window => 'soon');
SELECT treble_sync.add_table('opt_sends', 'wh', initial_chunk => '7');
SELECT treble_sync.add_table('opt_sends', 'wh', initial_chunk => '1000 years');
SELECT treble_sync.add_table('opt_sends', 'wh', cursor_overlap => '1 hour -5 minutes');
SELECT treble_sync.add_table('opt_sends', 'wh', key_columns => '{session_id}', local_table => 'a.b.c');
-- each server option of the table, named in its message
SELECT treble_sync.add_table('opt_sends', 'wh', query_timeout => 86401);
SELECT treble_sync.add_table('opt_sends', 'wh', login_timeout => -1);
-- an explicit NULL is add_table's default (or none, where NULL is a value)
SELECT name, mode, parallel, max_delete_ratio, schema_drift, on_bad_row, max_bad_row_ratio,
       hot_window_check, login_timeout, initial_chunk, enabled
FROM treble_sync.add_table('opt_sends', 'wh', name => 'opt_nulls', local_table => 'opt_nulls',
    mode => NULL, parallel => NULL, max_delete_ratio => NULL, schema_drift => NULL,
    on_bad_row => NULL, max_bad_row_ratio => NULL, hot_window_check => NULL,
    login_timeout => NULL, initial_chunk => NULL);
SELECT treble_sync.remove_table('opt_nulls', drop_local => true);
-- a valid registration, then alter_table with the same rules
SELECT name, mode, hot_window FROM treble_sync.add_table('opt_sends', 'wh',
    event_column => 'scheduled_at', hot_window => '2 days');
SELECT treble_sync.alter_table('opt_sends', hot_window => '3');
SELECT treble_sync.alter_table('opt_sends', hot_window => '200 years');
SELECT treble_sync.alter_table('opt_sends', on_bad_row => 'sometimes');
SELECT treble_sync.alter_table('opt_sends', max_bad_row_ratio => 2);
SELECT treble_sync.alter_table('opt_sends', query_timeout => 86401);
-- in alter_table, a negative server option goes back to the server's
SELECT name, login_timeout, max_retries
FROM treble_sync.alter_table('opt_sends', login_timeout => 30, max_retries => -5);
SELECT treble_sync.alter_table('nope', enabled => false);
SELECT name, hot_window, enabled FROM treble_sync.alter_table('opt_sends', hot_window => '12 hours', enabled => false);
-- a disabled table is skipped by sync_all
SELECT count(*) AS cycles FROM treble_sync.sync_all() WHERE table_name = 'opt_sends';
SELECT treble_sync.remove_table('opt_sends');
DROP TABLE opt_sends;

REVOKE USAGE ON FOREIGN SERVER wh FROM regress_srv_owner;
REVOKE CREATE ON SCHEMA public FROM regress_srv_owner;
DROP OWNED BY regress_srv_owner CASCADE;
DROP ROLE regress_srv_owner;
