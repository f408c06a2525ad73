-- Setup shared by the regression tests: the extension, the warehouse
-- server (a second PostgreSQL cluster reached through psqlODBC), and
-- helpers that change the warehouse directly (dblink) and compare it with
-- the local copy.
SET client_min_messages = warning;
SET datestyle = ISO;
CREATE EXTENSION IF NOT EXISTS treble_sync;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;

-- the wrapper validates options
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (conection_string 'x');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode};PWD=secret');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync
    OPTIONS (connection_string 'Driver={PostgreSQL Unicode}', dsn 'x');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', timezone 'Mars/Olympus');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', fetch_size '0');
CREATE SERVER bad FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', slice_rows '-1');
CREATE SERVER ok FOREIGN DATA WRAPPER treble_sync OPTIONS (dsn 'x', timezone 'UTC', fetch_size '500', slice_rows '0');
CREATE USER MAPPING FOR CURRENT_USER SERVER ok OPTIONS (username 'x');
DROP SERVER ok;

-- the warehouse; the reader's password holds ; { } = " ' \ %
DO $$
BEGIN
    EXECUTE format('CREATE SERVER wh FOREIGN DATA WRAPPER treble_sync OPTIONS (connection_string %L)',
                   current_setting('treble_test.wh_odbc'));
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER wh OPTIONS (user %L, password %L)',
                   current_setting('treble_test.wh_user'), current_setting('treble_test.wh_password'));
END
$$;

-- run SQL on the warehouse as its owner
CREATE FUNCTION wh(sql text) RETURNS void LANGUAGE sql AS $$
    SELECT dblink_exec(current_setting('treble_test.wh_libpq'), sql)
$$;

-- rows that differ between a warehouse query and a local query, compared
-- as row text in ISO style; no rows means the copy is exact
CREATE FUNCTION wh_diff(remote_query text, local_query text)
RETURNS TABLE (side text, row_text text) LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL datestyle = ISO;
    RETURN QUERY EXECUTE format($q$
        WITH r AS (SELECT x FROM dblink(current_setting('treble_test.wh_libpq'),
                                         'SET datestyle = ISO; ' || %L) AS t(x text)),
             l AS (SELECT q::text AS x FROM (%s) q)
        (SELECT 'warehouse only', x FROM (SELECT x FROM r EXCEPT ALL SELECT x FROM l) a)
        UNION ALL
        (SELECT 'copy only', x FROM (SELECT x FROM l EXCEPT ALL SELECT x FROM r) b)
        ORDER BY 1, 2$q$,
        format('SELECT q::text FROM (%s) q', remote_query), local_query);
END
$$;
