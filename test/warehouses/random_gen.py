#!/usr/bin/env python3
"""The changes of test/warehouses/random.t, one cycle at a time.

    random_gen.py DIR SEED CYCLE N_OPS

Cycle 0 starts a new model of the warehouse table in DIR; each later cycle
loads the model DIR/state.pickle that the cycle before it left. A cycle
chooses N_OPS random changes against the model (as test/random.sql does
for the PostgreSQL warehouse alone), applies them to it, and writes:

    DIR/<warehouse>.sql   the changes in that warehouse's SQL, for its own
                          client (postgresql, mariadb, sqlite, clickhouse)
    DIR/model.tsv         every row of the model, normalised as random.t
                          exports the warehouse: text as UTF-8 hex, N for
                          NULL, timestamps as written
    DIR/summary.txt       what the changes so far covered

and prints the number of changes. The randomness of a cycle depends only
on the seed and the cycle, so a run of M cycles replays the first M cycles
of any longer run with the same seed.

The changes stay within what treble_sync promises (docs/limits.md), as in
test/random.sql:
  * the warehouse clock only moves forward: every write gets a synced_at
    greater than any before it, so no row arrives late (a row written twice
    by one statement, as an at-least-once loader does, shares its time);
  * a row is removed only if its event lies in the hot window of the
    coming cycle (date_trunc('day', T) - 3 days, T = max(synced_at));
  * a key's newest version is removed only when it is the key's only row
    and the version the copy holds (the key's newest at the last cycle)
    lies in that window too; older versions inside the window may be
    removed at any time.
"""
import datetime as dt
import os
import pickle
import random
import sys

US = dt.timedelta(microseconds=1)
DAY = dt.timedelta(days=1)
HOT_WINDOW = 3 * DAY
TABLE = 'random_sends'
DIALECTS = ('postgresql', 'mariadb', 'sqlite', 'clickhouse')

NOTES_ODD = ['tab\there', 'line\nbreak', 'cr\rhere', 'back\\slash', '\\N',
             'quote\'s "dq"', 'ñandú ✓ 日本 🦤', 'comma, semi; {brace} =',
             'long ✓ ' * 300, ' lead and trail ', '`back` ticks and ?', '--not a comment',
             'nul-free \x01 control']


def trunc_day(t):
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


class Model:
    def __init__(self, seed):
        self.seed = seed
        self.clock = dt.datetime(2026, 11, 1, 6, 0, 0)
        self.next_id = 1
        self.rows = []          # dicts; 'ts' (synced_at) is unique, 'copies' 1 or 2
        self.synced = {}        # each key's newest event as of the last cycle
        self.kinds = {}         # changes made, by kind (cycles > 0)
        self.edge_keys = 0      # keys across the window's edge at a cycle
        self.null_edge_keys = 0
        self.edge_cycles = 0
        self.cycles = 0


class Cycle:
    """One cycle's randomness and statements."""

    def __init__(self, m, cyc):
        self.m = m
        self.cyc = cyc
        self.rng = random.Random('%d/%d' % (m.seed, cyc))
        self.stmts = []         # ('insert', [rows]) | ('update', ts_txt, sets) | ('delete', ts_txt)
        self.changes = 0

    def rint(self, lo, hi):
        return self.rng.randint(lo, hi)

    def pick(self, a):
        return a[self.rng.randrange(len(a))]

    def log(self, kind):
        self.changes += 1
        if self.cyc > 0:
            self.m.kinds[kind] = self.m.kinds.get(kind, 0) + 1

    # timestamps: the value and the text it is written as (SQLite keeps the
    # text; every form here is one treble_sync compares right)
    def ts_text(self, t):
        if t is None:
            return None
        full = t.strftime('%Y-%m-%d %H:%M:%S.%f')
        if t.microsecond == 0:
            return full if self.rng.random() < 0.3 else full[:19]
        return full if self.rng.random() < 0.6 else full.rstrip('0')

    def tick(self):
        self.m.clock += dt.timedelta(seconds=self.rint(1, 120), microseconds=self.rint(0, 999999))
        return self.m.clock

    def bound_now(self):
        return trunc_day(self.m.clock) - HOT_WINDOW

    def span(self, delta):
        return dt.timedelta(microseconds=int(self.rng.random() * (delta / US)))

    def event(self, kind):
        b = self.bound_now()
        c = self.m.clock
        r = self.rng.random()
        if kind == 'in':
            if r < 0.1:
                return b
            return (b + self.span(c + DAY - b)).replace(microsecond=0)
        if kind == 'out':
            if r < 0.1:
                return b - US
            if r < 0.2:
                return None
            return (b - self.span(10 * DAY)).replace(second=0, microsecond=0) - dt.timedelta(minutes=1)
        if r < 0.04:
            return None
        if r < 0.10:
            return b
        if r < 0.13:
            return b - US
        return (c - dt.timedelta(days=6, hours=12) + self.span(8 * DAY)).replace(microsecond=0)

    def vals(self):
        rng = self.rng
        v = {'campaign': self.pick(['spring', 'summer', 'autumn', 'winter', 'black friday', None]),
             'status': self.pick(['queued', 'sent', 'delivered', 'bounced', 'opened'])}
        if rng.random() < 0.05:
            v['cost'] = None
        elif rng.random() < 0.05:
            v['cost'] = '-0.01'
        else:
            digits = self.rint(0, 2)
            v['cost'] = '%.*f' % (digits, round(rng.random() * 1000, digits))
        if rng.random() < 0.6:
            v['note'] = self.pick([None, '', 'plain'])
        else:
            v['note'] = self.pick(NOTES_ODD)
        return v

    # -- changes, applied to the model and recorded as statements
    def insert_row(self, kind, k, ev, copies=1):
        row = dict(self.vals(), id=k, ev=ev, ev_txt=self.ts_text(ev), copies=copies)
        row['ts'] = self.tick()
        row['ts_txt'] = self.ts_text(row['ts'])
        self.m.rows.append(row)
        if self.stmts and self.stmts[-1][0] == 'insert':
            self.stmts[-1][1].append(row)
        else:
            self.stmts.append(('insert', [row]))
        self.log(kind)

    def update_row(self, kind, row, ev, keep_event):
        v = self.vals()
        old = row['ts_txt']
        sets = [('status', 'text', v['status']), ('cost', 'num', v['cost']), ('note', 'text', v['note'])]
        row.update(status=v['status'], cost=v['cost'], note=v['note'])
        if not keep_event:
            row['ev'] = ev
            row['ev_txt'] = self.ts_text(ev)
            sets.append(('scheduled_at', 'ts', row['ev_txt']))
        row['ts'] = self.tick()
        row['ts_txt'] = self.ts_text(row['ts'])
        sets.append(('synced_at', 'ts', row['ts_txt']))
        self.stmts.append(('update', old, sets))
        self.log(kind)

    def delete_row(self, kind, row):
        self.m.rows.remove(row)
        self.stmts.append(('delete', row['ts_txt']))
        self.log(kind)

    def newest(self):
        """Each key's newest row."""
        n = {}
        for r in self.m.rows:
            if r['id'] not in n or r['ts'] > n[r['id']]['ts']:
                n[r['id']] = r
        return n

    def batch(self, n_ops):
        m, rng = self.m, self.rng
        m.clock += dt.timedelta(minutes=20) + self.span(dt.timedelta(hours=6))
        n_del = 0
        for _ in range(n_ops):
            r = rng.random()
            if r < 0.30 or not m.rows:
                k = m.next_id
                m.next_id += 1
                # now and then a row written twice, as an at-least-once
                # loader does (one statement, the same synced_at)
                twice = rng.random() < 0.05
                self.insert_row('new key, written twice' if twice else 'new key', k, self.event('any'),
                                2 if twice else 1)
            elif r < 0.45:
                # a correction written as a second row of an existing key
                k = self.pick(sorted({x['id'] for x in m.rows}))
                if rng.random() < 0.5:
                    ev = self.newest()[k]['ev']
                else:
                    ev = self.event('any')
                self.insert_row('second row', k, ev)
            elif r < 0.65:
                # a correction in place of any row, the newest or an older version
                row = self.pick(sorted(m.rows, key=lambda x: x['ts']))
                self.update_row('in place', row, self.event('any'), rng.random() < 0.6)
            elif r < 0.85:
                # a key's event date moves into the window (or out of it),
                # in place or as a second row
                into = r < 0.75
                b = self.bound_now()
                cands = sorted((x for x in self.newest().values()
                                if (x['ev'] is not None and x['ev'] >= b) != into),
                               key=lambda x: x['id'])
                if cands:
                    row = self.pick(cands)
                    word = 'moves in' if into else 'moves out'
                    ev = self.event('in' if into else 'out')
                    if rng.random() < 0.5:
                        self.update_row(word, row, ev, False)
                    else:
                        self.insert_row(word + ' (row)', row['id'], ev)
            else:
                n_del += 1

        # removals last, chosen against the cut the coming cycle freezes
        # (the greatest synced_at, which they never remove)
        for _ in range(n_del):
            if not m.rows:
                break
            t = max(x['ts'] for x in m.rows)
            b = trunc_day(t) - HOT_WINDOW
            per_key = {}
            for x in m.rows:
                per_key.setdefault(x['id'], []).append(x)
            if rng.random() < 0.7:
                # a key with one row, in the window, whose row in the copy
                # is in the window too (or which the copy does not have yet)
                def held_in_window(k):
                    if k not in m.synced:
                        return True
                    e = m.synced[k]
                    return e is not None and e >= b
                cands = [x for x in m.rows
                         if x['ev'] is not None and x['ev'] >= b and x['ts'] < t
                         and len(per_key[x['id']]) == 1 and held_in_window(x['id'])]
                kind = 'removal'
            else:
                # an older version of a key, in the window
                cands = [x for x in m.rows
                         if x['ev'] is not None and x['ev'] >= b
                         and any(y['ts'] > x['ts'] for y in per_key[x['id']])]
                kind = 'older version removed'
            if cands:
                self.delete_row(kind, self.pick(sorted(cands, key=lambda x: x['ts'])))

    def record_synced(self):
        """What the coming cycle leaves in the copy; and the keys across the
        window's edge: newest version outside the window (or with no event
        date), an older version inside."""
        m = self.m
        newest = self.newest()
        m.synced = {k: r['ev'] for k, r in newest.items()}
        if self.cyc == 0 or not m.rows:
            return
        b = trunc_day(max(x['ts'] for x in m.rows)) - HOT_WINDOW
        inside = {x['id'] for x in m.rows if x['ev'] is not None and x['ev'] >= b}
        edge = [r for k, r in newest.items() if not (r['ev'] is not None and r['ev'] >= b) and k in inside]
        m.edge_keys += len(edge)
        m.null_edge_keys += sum(1 for r in edge if r['ev'] is None)
        m.edge_cycles += bool(edge)


# -- each warehouse's SQL

def lit_text(d, s):
    if s is None:
        return 'NULL'
    if d == 'sqlite':
        # no escapes in SQLite: control characters as char()
        parts, cur = [], []
        for ch in s:
            if ch in '\t\n\r\x01':
                if cur:
                    parts.append("'" + ''.join(cur).replace("'", "''") + "'")
                    cur = []
                parts.append('char(%d)' % ord(ch))
            else:
                cur.append(ch)
        if cur or not parts:
            parts.append("'" + ''.join(cur).replace("'", "''") + "'")
        return '(' + ' || '.join(parts) + ')' if len(parts) > 1 else parts[0]
    esc = (s.replace('\\', '\\\\').replace("'", "\\'").replace('\n', '\\n')
            .replace('\r', '\\r').replace('\t', '\\t'))
    if d == 'postgresql':
        return "E'" + esc + "'"
    return "'" + esc + "'"       # MariaDB, ClickHouse


def lit_num(d, s, in_values=False):
    if s is None:
        return 'NULL'
    if d == 'clickhouse' and not in_values:
        # an expression: a float literal would go through Float64
        return "CAST('%s' AS Nullable(Decimal(10, 2)))" % s
    return s


def lit_ts(d, s):
    return 'NULL' if s is None else "'%s'" % s


def render(d, stmts):
    out = []
    if d == 'mariadb':
        out.append("SET SESSION sql_mode = REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', '')")
    elif d == 'sqlite':
        out.append('.timeout 10000')
    for s in stmts:
        if s[0] == 'insert':
            values = []
            for r in s[1]:
                v = '(%d, %s, %s, %s, %s, %s, %s)' % (
                    r['id'], lit_text(d, r['campaign']), lit_text(d, r['status']),
                    lit_num(d, r['cost'], True), lit_text(d, r['note']),
                    lit_ts(d, r['ev_txt']), lit_ts(d, r['ts_txt']))
                values += [v] * r['copies']
            out.append('INSERT INTO %s VALUES\n  %s' % (TABLE, ',\n  '.join(values)))
        elif s[0] == 'update':
            sets = ', '.join('%s = %s' % (c, lit_text(d, v) if t == 'text' else
                                          lit_num(d, v) if t == 'num' else lit_ts(d, v))
                             for c, t, v in s[2])
            if d == 'clickhouse':
                out.append("ALTER TABLE %s UPDATE %s WHERE synced_at = '%s'" % (TABLE, sets, s[1]))
            else:
                out.append("UPDATE %s SET %s WHERE synced_at = '%s'" % (TABLE, sets, s[1]))
        else:
            out.append("DELETE FROM %s WHERE synced_at = '%s'" % (TABLE, s[1]))
    return ''.join(x + '\n' if x.startswith('.') else x + ';\n' for x in out)


def hexed(s):
    return 'N' if s is None else s.encode('utf-8').hex()


def main():
    d, seed, cyc, n_ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    state = os.path.join(d, 'state.pickle')
    if cyc == 0:
        m = Model(seed)
    else:
        with open(state, 'rb') as f:
            m = pickle.load(f)
        if m.cycles != cyc - 1 or m.seed != seed:
            sys.exit('random_gen.py: the model in %s is not cycle %d of seed %d' % (d, cyc - 1, seed))
    c = Cycle(m, cyc)
    c.batch(n_ops)
    c.record_synced()
    m.cycles = cyc
    for dialect in DIALECTS:
        with open(os.path.join(d, dialect + '.sql'), 'w', encoding='utf-8') as f:
            f.write(render(dialect, c.stmts))
    with open(os.path.join(d, 'model.tsv'), 'w', encoding='utf-8') as f:
        for r in m.rows:
            line = '\t'.join([str(r['id']), hexed(r['campaign']), hexed(r['status']),
                              r['cost'] or 'N', hexed(r['note']), r['ev_txt'] or 'N', r['ts_txt']])
            f.write((line + '\n') * r['copies'])
    with open(os.path.join(d, 'summary.txt'), 'w', encoding='utf-8') as f:
        keys = {}
        for r in m.rows:
            keys[r['id']] = keys.get(r['id'], 0) + 1
        f.write('changes made: %s\n' % ', '.join('%s %d' % kv for kv in sorted(m.kinds.items())))
        f.write("keys across the window's edge at the cycles: %d (%d of them with no event date), in %d of %d cycles\n"
                % (m.edge_keys, m.null_edge_keys, m.edge_cycles, cyc))
        f.write('warehouse: %d rows, %d keys, %d keys with several rows\n'
                % (sum(r['copies'] for r in m.rows), len(keys), sum(1 for n in keys.values() if n > 1)))
    tmp = state + '.new'
    with open(tmp, 'wb') as f:
        pickle.dump(m, f)
    os.replace(tmp, state)
    print(c.changes)


if __name__ == '__main__':
    main()
