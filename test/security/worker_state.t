#!/usr/bin/env bash
#
# A worker of sync_all() runs the cycles of many owners one after another
# in one process.  Code an owner's copy runs (a trigger, as the owner) must
# leave nothing in the worker for the next owner's cycle: a session-level
# setting changed by set_config(..., false) (TimeZone would shift the next
# owner's times; default_transaction_read_only would fail its cycle; a
# custom setting is a channel between owners), a session advisory lock, a
# temporary table.

DB=sec_ws
ROLES=(sec_ws_a sec_ws_b)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap finish EXIT
setup_db

wh_view sec_ws_src
admins_on_wh sec_ws_a sec_ws_b
# snapshot copies of the warehouse view, whose names sort in the order the
# worker takes them: a's before b's
add_snapshot sec_ws_a sec_ws_src ws_1_a
add_snapshot sec_ws_b sec_ws_src ws_2_b

# a's copy: a trigger that changes session settings and takes a session lock
as sec_ws_a >/dev/null <<'SQL'
CREATE FUNCTION public.ws_leave() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('TimeZone', 'Pacific/Chatham', false);
    PERFORM set_config('sec_ws.mark', 'left by a', false);
    PERFORM set_config('default_transaction_read_only', 'on', false);
    PERFORM set_config('synchronous_commit', 'off', false);
    PERFORM pg_advisory_lock(4242);
    BEGIN
        CREATE TEMP TABLE ws_left AS SELECT 1 AS x;
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
    RETURN NULL;
END
$$;
CREATE TRIGGER ws_leave AFTER INSERT ON public.ws_1_a FOR EACH STATEMENT EXECUTE FUNCTION public.ws_leave();
SQL
# b's copy: a trigger that writes what it finds into b's own table
as sec_ws_b >/dev/null <<'SQL'
CREATE TABLE public.ws_seen (tz text, mark text, ro text, sc text, lock_free boolean, temp_gone boolean);
CREATE FUNCTION public.ws_look() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.ws_seen
    SELECT current_setting('TimeZone'), coalesce(current_setting('sec_ws.mark', true), ''),
           current_setting('default_transaction_read_only'), current_setting('synchronous_commit'),
           pg_try_advisory_xact_lock(4242), to_regclass('pg_temp.ws_left') IS NULL;
    RETURN NULL;
END
$$;
CREATE TRIGGER ws_look AFTER INSERT ON public.ws_2_b FOR EACH STATEMENT EXECUTE FUNCTION public.ws_look();
SQL

tz=$(sq -c "SHOW TimeZone")
try postgres "SET treble_sync.max_parallel = 1; SET treble_sync.read_ahead = off;
              SELECT count(DISTINCT worker_pid) FROM treble_sync.sync_all()"
[[ $RC -ne 0 ]] && diag "$ERR"
check "both owners' cycles ran in one worker" 1 "$OUT"
check "both succeeded" "ws_1_a=success ws_2_b=success" \
    "$(sq -c "SELECT string_agg(table_name || '=' || status, ' ' ORDER BY table_name) FROM treble_sync.runs WHERE table_name IN ('ws_1_a', 'ws_2_b')")"
check "b's cycle did not run with a's TimeZone, custom setting, read-only default, synchronous_commit, lock or temporary table" \
    "$tz||off|on|t|t" "$(sq -c "SELECT tz, mark, ro, sc, lock_free, temp_gone FROM public.ws_seen")"
