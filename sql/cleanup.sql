-- Remove what the suite made outside its database: the registrations'
-- servers go with the extension, the warehouse file with its directory.
SELECT dir AS wh_dir FROM regress_wh \gset
\setenv TS_REGRESS_DIR :wh_dir
SELECT count(*) AS runs_left_running FROM treble_sync.runs WHERE status = 'running';
SET client_min_messages = warning;
DROP EXTENSION treble_sync CASCADE;
RESET client_min_messages;
SELECT count(*) AS servers_left FROM pg_foreign_server;
\! rm -rf "$TS_REGRESS_DIR" && test ! -e "$TS_REGRESS_DIR" && echo "warehouse directory removed"
DROP TABLE regress_wh;
-- the roles the tests made are gone
SELECT rolname FROM pg_roles
WHERE rolname IN ('regress_owner', 'regress_syncer', 'regress_other_admin', 'regress_nobody',
                  'regress_srv_owner', 'regress_outsider');
