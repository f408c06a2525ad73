-- Who may point the worker at what.  A role granted USAGE on the wrapper
-- may create servers, but only of registered drivers of known families,
-- with an allow-list of keys; credentials never go in a server's options;
-- a user mapping's password cannot change the connection string; a
-- mapping of a role that is not a superuser must carry a password.
SET datestyle = ISO;
\set VERBOSITY default
-- nobody has USAGE on the wrapper by default
SELECT count(*) AS wrapper_grants
FROM pg_foreign_data_wrapper w, aclexplode(w.fdwacl) a
WHERE w.fdwname = 'treble_sync' AND a.grantee <> w.fdwowner;
CREATE ROLE regress_srv_owner;
GRANT USAGE ON FOREIGN DATA WRAPPER treble_sync TO regress_srv_owner;
GRANT treble_sync_admin TO regress_srv_owner;
GRANT CREATE ON SCHEMA public TO regress_srv_owner;
SELECT wh($$ DROP TABLE IF EXISTS opt_sends;
             CREATE TABLE opt_sends (id int PRIMARY KEY, synced_at timestamp);
             INSERT INTO opt_sends VALUES (1, '2026-11-28') $$);


-- credentials are refused in every server's options, even a superuser's
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=h;UID=u');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=h;Username=u');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=h;pqopt={passfile=x}');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=h;Database={wh');
-- but a superuser may use any other key
CREATE SERVER su_any FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=127.0.0.1;ConnSettings={SET x=1}');

SET ROLE regress_srv_owner;
-- a driver by path, an unregistered driver, no driver
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver=/usr/lib/x86_64-linux-gnu/odbc/psqlodbcw.so;Server=127.0.0.1');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={No Such Driver};Server=127.0.0.1');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Server=127.0.0.1;Port=5432');
-- keys that load code, run SQL, write logs or hand options to libpq
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=127.0.0.1;ConnSettings={SET x=1}');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=127.0.0.1;pqopt={sslmode=disable}');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=127.0.0.1;CommLog=1');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=127.0.0.1;A6={SET x=1}');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={MariaDB Unicode};Server=127.0.0.1;INITSTMT={SET @x=1}');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={MariaDB Unicode};Server=127.0.0.1;PLUGIN_DIR=x');
-- a socket, no host, a key twice
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=/tmp');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Database=wh');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=a;Server=b');
-- SQLite, whatever its keys
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={SQLite3};Database=wh.sqlite');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver=SQLite3;Database=wh.sqlite;LoadExt=evil');
-- a DSN that is not a system DSN
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'nosuchdsn');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'DSN=nosuchdsn');
-- only a superuser may waive the password
CREATE SERVER mine FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=1;Database=wh;SSLmode=disable');
CREATE USER MAPPING FOR CURRENT_USER SERVER mine OPTIONS (user 'u', password_required 'false');
CREATE USER MAPPING FOR CURRENT_USER SERVER mine OPTIONS (user 'u', password_required 'maybe');
-- a server it owns can point at the warehouse and sync, with a password
DO $$
BEGIN
    EXECUTE format('ALTER SERVER mine OPTIONS (SET connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
END
$$;
-- without a password: refused at connect
CREATE USER MAPPING FOR CURRENT_USER SERVER mine OPTIONS (user 'reader');
SELECT treble_sync.add_table('opt_sends', 'mine');
-- an empty one is no password either
ALTER USER MAPPING FOR CURRENT_USER SERVER mine OPTIONS (ADD password '');
SELECT treble_sync.add_table('opt_sends', 'mine');
DO $$
BEGIN
    EXECUTE format('ALTER USER MAPPING FOR CURRENT_USER SERVER mine OPTIONS (SET user %L, SET password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;
SELECT name FROM treble_sync.add_table('opt_sends', 'mine');
SELECT status, rows_inserted FROM treble_sync.sync_table('opt_sends');
SELECT treble_sync.remove_table('opt_sends');
RESET ROLE;

-- ownership moves after validation: checked again at connect
ALTER SERVER su_any OWNER TO regress_srv_owner;
CREATE USER MAPPING FOR CURRENT_USER SERVER su_any OPTIONS (user 'u', password 'p');
SELECT treble_sync.add_table('opt_sends', 'su_any');

-- a superuser may waive the password for a role
ALTER USER MAPPING FOR regress_srv_owner SERVER mine OPTIONS (DROP password, ADD password_required 'false');
SET ROLE regress_srv_owner;
-- (a role may not change a mapping that waives the password)
ALTER USER MAPPING FOR CURRENT_USER SERVER mine OPTIONS (SET user 'x');
RESET ROLE;

-- a password cannot add keys for a driver that ignores braces: SQLite
DO $$
BEGIN
    EXECUTE format('CREATE SERVER lite FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.sqlite_odbc'));
END
$$;
GRANT USAGE ON FOREIGN SERVER lite TO regress_srv_owner;
CREATE USER MAPPING FOR regress_srv_owner SERVER lite
    OPTIONS (user 'u', password 'x;LoadExt=/tmp/evil.so');
SET ROLE regress_srv_owner;
SELECT treble_sync.add_table('opt_sends', 'lite');
RESET ROLE;
ALTER USER MAPPING FOR regress_srv_owner SERVER lite OPTIONS (SET password ' x');
SET ROLE regress_srv_owner;
SELECT treble_sync.add_table('opt_sends', 'lite');
RESET ROLE;
-- and a PUBLIC mapping needs a password too
DROP USER MAPPING FOR regress_srv_owner SERVER lite;
CREATE USER MAPPING FOR PUBLIC SERVER lite;
SET ROLE regress_srv_owner;
SELECT treble_sync.add_table('opt_sends', 'lite');
RESET ROLE;

-- a superuser may waive it: the connection goes ahead (and finds no table)
ALTER USER MAPPING FOR PUBLIC SERVER lite OPTIONS (ADD password_required 'false');
SET ROLE regress_srv_owner;
SELECT treble_sync.add_table('opt_sends', 'lite');
RESET ROLE;

SELECT wh($$ DROP TABLE opt_sends $$);
DROP TABLE IF EXISTS opt_sends;
DROP SERVER lite CASCADE;
DROP SERVER su_any CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_srv_owner;
DROP OWNED BY regress_srv_owner CASCADE;
DROP ROLE regress_srv_owner;
