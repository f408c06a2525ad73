-- Setup of the self-contained suite. Its warehouse is an SQLite file that
-- this test creates, read through the SQLite ODBC driver ("SQLite3"), so
-- the suite needs nothing but this cluster with the extension installed,
-- the sqlite3 client and that driver: no second cluster, no dblink, no
-- settings.
--
-- The file lives in a fresh directory under /tmp: psql's \! and \g | run
-- as the client's OS user (root in CI), while the server opens the file as
-- its own, so both must reach it. Each test reads the directory back from
-- regress_wh and puts the file's path in the environment variable
-- TS_REGRESS_WH; a change to the warehouse is a query whose text is piped
-- to sqlite3, and the warehouse's rows come back with \copy FROM PROGRAM.
-- The path never appears in the output. cleanup removes the directory.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS treble_sync;
RESET client_min_messages;
SET datestyle = ISO;

\set wh_dir `mktemp -d /tmp/treble_sync_regress_XXXXXX`
\setenv TS_REGRESS_WH :wh_dir/wh.db
CREATE TABLE regress_wh (dir text NOT NULL);
INSERT INTO regress_wh VALUES (:'wh_dir');

-- the file, readable by the server's OS user whatever the client's umask
SELECT $$ CREATE TABLE created_by (note TEXT); $$
\g (format=unaligned tuples_only=on) |sqlite3 -bail -batch "$TS_REGRESS_WH"
\! chmod 755 "$(dirname "$TS_REGRESS_WH")" && chmod 644 "$TS_REGRESS_WH"

-- the warehouse server, owned by a superuser (SQLite servers must be: a
-- file driver opens files as the server's OS user), and a mapping without
-- credentials (a file takes no login)
\set conn 'Driver={SQLite3};Database=' :wh_dir /wh.db
CREATE SERVER wh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string :'conn');
CREATE USER MAPPING FOR CURRENT_USER SERVER wh;
SELECT srvname, (SELECT rolsuper FROM pg_roles WHERE oid = srvowner) AS owner_is_superuser
FROM pg_foreign_server WHERE srvname = 'wh';
