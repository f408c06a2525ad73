-- The signature of treble_sync's catalog in the current database, one line
-- per property, sorted, for comparing two databases line by line (upgrade.t
-- compares a database updated from the previous release with a fresh
-- install). Objects are named, never numbered (OIDs differ), and columns
-- are listed by name: ALTER TABLE ADD COLUMN appends, so an upgraded
-- table's column order may differ from a fresh one's, which no query of
-- the extension depends on (none uses SELECT * on a catalog table to
-- insert, or column positions). Bodies and long texts are compared by
-- their md5.
\set QUIET 1
\pset format unaligned
\pset tuples_only on
SET search_path = pg_catalog;
WITH ext AS (
    SELECT oid FROM pg_extension WHERE extname = 'treble_sync'
), members AS (
    SELECT classid, objid, objsubid FROM pg_depend
    WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
      AND refobjid = (SELECT oid FROM ext)
), rels AS (
    SELECT c.oid, c.relname, c.relkind FROM pg_class c
    WHERE c.relnamespace = 'treble_sync'::regnamespace
), sig(line) AS (
-- every object of the extension
SELECT 'member ' || pg_describe_object(classid, objid, objsubid) FROM members
UNION ALL
-- the schema, its owner and grants
SELECT format('schema %s owner=%s acl=%s', nspname, nspowner::regrole, nspacl)
FROM pg_namespace WHERE nspname = 'treble_sync'
UNION ALL
-- columns: type, not null, default, identity, generated, collation, grants
SELECT format('column %s.%s %s notnull=%s default=%s identity=%s generated=%s collation=%s acl=%s',
              r.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
              pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
              CASE WHEN a.attcollation <> 0 THEN a.attcollation::regcollation END, a.attacl)
FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped
UNION ALL
-- relations: kind, owner, grants, row-level security, options
SELECT format('relation %s kind=%s owner=%s acl=%s rls=%s force_rls=%s options=%s persistence=%s',
              c.relname, c.relkind, c.relowner::regrole, c.relacl, c.relrowsecurity,
              c.relforcerowsecurity, c.reloptions, c.relpersistence)
FROM pg_class c WHERE c.relnamespace = 'treble_sync'::regnamespace
UNION ALL
-- sequences (identity columns)
SELECT format('sequence %s type=%s start=%s increment=%s min=%s max=%s cycle=%s',
              c.relname, s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcycle)
FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
WHERE c.relnamespace = 'treble_sync'::regnamespace
UNION ALL
-- functions: the whole definition (arguments and their defaults, result,
-- language, strictness, volatility, security, parallel safety, cost, rows,
-- SET clauses, body) and the owner and grants
SELECT format('function %s owner=%s acl=%s leakproof=%s def=%s',
              p.oid::regprocedure, p.proowner::regrole, p.proacl, p.proleakproof,
              md5(CASE WHEN p.prokind = 'a' THEN p.prosrc ELSE pg_get_functiondef(p.oid) END))
FROM pg_proc p WHERE p.pronamespace = 'treble_sync'::regnamespace
UNION ALL
SELECT format('function %s strict=%s volatile=%s security_definer=%s parallel=%s config=%s',
              p.oid::regprocedure, p.proisstrict, p.provolatile, p.prosecdef, p.proparallel, p.proconfig)
FROM pg_proc p WHERE p.pronamespace = 'treble_sync'::regnamespace
UNION ALL
-- comments on every object of the extension and its columns
SELECT format('comment %s %s', pg_describe_object(d.classoid, d.objoid, d.objsubid), md5(d.description))
FROM pg_description d
WHERE (d.classoid, d.objoid) IN (SELECT classid, objid FROM members)
UNION ALL
-- indexes, constraints, triggers, policies, views, rules
SELECT format('index %s', pg_get_indexdef(i.indexrelid))
FROM pg_index i JOIN rels r ON r.oid = i.indrelid
UNION ALL
SELECT format('constraint %s %s %s deferrable=%s', conrelid::regclass, conname, pg_get_constraintdef(oid),
              condeferrable)
FROM pg_constraint WHERE connamespace = 'treble_sync'::regnamespace
UNION ALL
SELECT format('trigger %s', pg_get_triggerdef(t.oid))
FROM pg_trigger t JOIN rels r ON r.oid = t.tgrelid WHERE NOT t.tgisinternal
UNION ALL
SELECT format('policy %s %s cmd=%s permissive=%s roles=%s using=%s check=%s',
              r.relname, p.polname, p.polcmd, p.polpermissive, p.polroles::regrole[],
              pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
FROM pg_policy p JOIN rels r ON r.oid = p.polrelid
UNION ALL
SELECT format('view %s %s', r.relname, md5(pg_get_viewdef(r.oid)))
FROM rels r WHERE r.relkind IN ('v', 'm')
UNION ALL
SELECT format('rule %s %s', r.relname, md5(pg_get_ruledef(w.oid)))
FROM pg_rewrite w JOIN rels r ON r.oid = w.ev_class WHERE w.rulename <> '_RETURN'
UNION ALL
-- types of the schema other than the row types of its relations
SELECT format('type %s kind=%s owner=%s acl=%s', t.oid::regtype, t.typtype, t.typowner::regrole, t.typacl)
FROM pg_type t WHERE t.typnamespace = 'treble_sync'::regnamespace
  AND (t.typrelid = 0 OR EXISTS (SELECT FROM pg_class c WHERE c.oid = t.typrelid AND c.relkind = 'c'))
UNION ALL
-- the foreign-data wrapper
SELECT format('fdw %s handler=%s validator=%s owner=%s acl=%s options=%s', fdwname, fdwhandler::regproc,
              fdwvalidator::regproc, fdwowner::regrole, fdwacl, fdwoptions)
FROM pg_foreign_data_wrapper WHERE fdwname = 'treble_sync'
UNION ALL
-- what pg_dump keeps of the extension's tables (pg_extension_config_dump),
-- and the extension's own properties
SELECT format('config %s %s', c::regclass, cond)
FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS u(c, cond) WHERE e.extname = 'treble_sync'
UNION ALL
SELECT format('extension %s version=%s schema=%s relocatable=%s owner=%s', extname, extversion,
              extnamespace::regnamespace, extrelocatable, extowner::regrole)
FROM pg_extension WHERE extname = 'treble_sync'
)
-- one line each, whatever newlines a definition holds
SELECT regexp_replace(line, '\s+', ' ', 'g') FROM sig ORDER BY 1;
