#!/usr/bin/env python3
"""The tables of test/warehouses/fuzz.t, one at a time.

    fuzz_gen.py DIR SEED TABLE WAREHOUSE
    fuzz_gen.py DIR SEED FIRST:LAST:STEP WAREHOUSE   (into DIR/<table> each)

Chooses, from random.Random('SEED/WAREHOUSE/TABLE') alone, one warehouse
table of hostile values for WAREHOUSE (postgresql, mariadb, sqlite,
clickhouse): a hostile table name, a key, a timestamp cursor and an event
column (hostile names too), and 1 to 6 columns of random types of that
warehouse, each filled with its edge values (extremes, BC, +-infinity,
far-future and zero times, every fraction precision, NaN, huge and tiny
numerics, -0, quotes, backslashes, tabs, newlines, \\. and \\N, emoji,
combining characters, NUL and invalid UTF-8 where the warehouse keeps
them, empty strings and NULLs), keys equal under one type and different as
text (numeric scale, case). Then the rows of a first load and of 1 to 3
cycles of changes: new rows, corrections in place with a new cursor,
corrections as a second row of a key (the same numeric key with another
scale), deletes of rows in the hot window. Writes into DIR:

    meta.env      shell variables with no hostile text in them: NAME (the
                  registration), POLICY (on_bad_row), HISTORY (0/1),
                  CYCLES, REPAIR_DAY, SUMMARY
    add.sql       the add_table call (destination)
    wh_create.sql the table, in the warehouse's own SQL
    wh_step<i>.sql  the rows of the first load (0) and the changes of cycle i
    wh_dump.sql   reads every row back with the warehouse's own client, one
                  line per row, tab-separated, every column as its
                  canonical text's input (text and binary as hex of their
                  bytes), N for NULL
    compare.sql   on the destination: loads DIR/wh.tsv (the dump's
                  output), keeps the newest version of every key under the
                  copy's key equality, compares the copy with it value by
                  value (canonical text per kind, made by fz_canon and
                  fz_copy, see fuzz.t) and prints the differences and a
                  verdict
    history.sql   as_of at the watermark against the copy, row for row

The canonical kinds: int (value), num (value and scale), numv (value:
SQLite keeps no scale), f4/f8 (shortest exact text of the float), text and
bytes (hex of the bytes), date, ts (an instant, to the microsecond), tstz,
uuid, bool.
"""
import datetime as dt
import os
import random
import sys

DIALECTS = ('postgresql', 'mariadb', 'sqlite', 'clickhouse')
BASE = dt.datetime(2026, 11, 1, 6, 0, 0)

# -- hostile names (no dot, backtick or backslash; never starting with a quote)
NAMES = ['sp ace', 'quo"te', "apo'strophe", 'q?mark', '{fn now()}', '$1', 'Mixed Case',
         'semi;colon', 'dash-name', 'ünïcödé', 'é' * 31 + 'x', 'emoji😀', 'tab\tname',
         'per%cent', '--dash', 'new\nline', 'select', 'a:b=c']
PLAIN = ['k', 'synced_at', 'ev', 'v']

# -- text values, valid UTF-8 without NUL (every warehouse keeps them)
TEXTS = ['', ' ', 'plain', "quo'te", 'dq"uote', 'back\\slash', '\\', 'tab\there', 'line\nbreak',
         'cr\rhere', '\\.', '\\N', 'N', 'NULL', '\\\\N', '\\.\n', 'emoji 🦤😀', 'e\u0301 combining',
         'Z\u0351\u0352\u0353\u0354', '日本語', 'ñandú ✓', '\u200b zero width', '\ufeffbom',
         '\u2028 ls \u2029 ps', '\x01\x02\x1f control', '\x7f del', 'é' * 700, ' lead and trail ',
         '{fn now()}', '?', '$1', "'); DROP TABLE x; --", '%s %n', 'a,b;c', '\U0010ffff max']
BYTES = [b'', b'\x00', b'\xff\xfe', b'\x00\x01\x02\xff', b'\\x00', b'\\', b'text', bytes(range(256)),
         b'\r\n\t', b'\x80', b'\xc3\x28']


# Value classes that TS_FUZZ_KNOWN (comma-separated) leaves out while the
# fix of a known failure is pending; each names what it leaves out.
GATES = {
    'bc': 'PostgreSQL: BC, +-infinity and year 10000+ dates and timestamps',
    'sqlite-bytes': 'SQLite: invalid UTF-8 and NUL in text',
    'null-key': 'NULL keys (verify raises the bad-row error)',
    'money': 'PostgreSQL: money',
    'mariadb-nul': 'MariaDB: NUL in text',
    'mariadb-float': 'MariaDB: FLOAT columns',
    'sqlite-real': 'SQLite: REAL values of 16 and 17 significant digits (bad rows: docs/limits.md)',
    'clickhouse-names': "ClickHouse: names holding a quote, an apostrophe, ? or {fn ...}",
    'sqlite-names': 'SQLite: names holding a character beyond the Basic Multilingual Plane',
    'key-scale': 'a numeric key written again with another scale',
    'clickhouse-decimal-scale': 'ClickHouse: a Decimal whose last fraction digits are zeros',
    'sqlite-plane16': 'SQLite: characters of plane 16 (U+100000..U+10FFFF) in text, numbers, dates and times',
    'clickhouse-text': "ClickHouse: the texts 'NULL' and '\\N', texts that begin with U+FEFF or begin or end with a space",
    'clickhouse-bytes': 'ClickHouse: invalid UTF-8 and NUL in String',
    'clickhouse-nanos': 'ClickHouse: DateTime64 of 7 to 9 fraction digits',
    'mariadb-ci-keys': "MariaDB: text keys equal under the table's collation (case, accents) and different as text",
    'int-cursor': 'integer cursors (from their extremes)',
    'mariadb-zero-date': 'MariaDB: zero dates and dates with a zero month or day',
}
KNOWN = set(x for x in os.environ.get('TS_FUZZ_KNOWN', '').split(',') if x)
for _g in KNOWN - set(GATES):
    sys.exit('fuzz_gen.py: unknown TS_FUZZ_KNOWN class %r (known: %s)' % (_g, ', '.join(sorted(GATES))))


def gated(g):
    return g in KNOWN


def trunc_day(t):
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


class Col:
    def __init__(self, name, decl, kind, gen, wh_expr=None):
        self.name = name
        self.decl = decl        # the warehouse type
        self.kind = kind        # canonical kind
        self.gen = gen          # rng -> a value (the dialect's literal text, or None)
        self.wh_expr = wh_expr  # the dump expression, {c} for the quoted column


class Gen:
    def __init__(self, seed, table, wh):
        self.rng = random.Random('%d/%s/%d' % (seed, wh, table))
        self.seed, self.table, self.wh = seed, table, wh
        self.used = set()
        self.summary = []

    def pick(self, a):
        return a[self.rng.randrange(len(a))]

    def chance(self, p):
        return self.rng.random() < p

    # -- names
    def name(self, plain):
        if self.chance(0.5):
            cands = [n for n in NAMES if n.lower() not in self.used]
            if self.wh == 'clickhouse' and gated('clickhouse-names'):
                cands = [n for n in cands if not any(x in n for x in '"\'?{')]
            if self.wh == 'mariadb':
                # MariaDB names: no newline or tab, no character beyond the BMP
                cands = [n for n in cands if '\n' not in n and '\t' not in n and max(map(ord, n)) < 0x10000]
            if self.wh == 'sqlite' and gated('sqlite-names'):
                cands = [n for n in cands if max(map(ord, n)) < 0x10000]
            if cands:
                n = self.pick(cands)
                self.used.add(n.lower())
                return n
        n = plain
        i = 1
        while n.lower() in self.used:
            n = '%s_%d' % (plain, i)
            i += 1
        self.used.add(n.lower())
        return n

    def qi(self, n):
        if self.wh in ('mariadb', 'clickhouse'):
            return '`' + n.replace('`', '``') + '`'
        return '"' + n.replace('"', '""') + '"'

    # -- literals
    def lit_text(self, s):
        """s: str (valid text) or bytes (any bytes, for SQLite and ClickHouse)"""
        if s is None:
            return 'NULL'
        b = s if isinstance(s, bytes) else s.encode('utf-8')
        if self.wh == 'postgresql':
            return "convert_from('\\x%s'::bytea, 'UTF8')" % b.hex()
        if self.wh == 'mariadb':
            return "CONVERT(X'%s' USING utf8mb4)" % b.hex() if b else "''"
        if self.wh == 'sqlite':
            return "CAST(X'%s' AS TEXT)" % b.hex()
        return "unhex('%s')" % b.hex()

    def lit_bytes(self, b):
        if b is None:
            return 'NULL'
        if self.wh == 'postgresql':
            return "'\\x%s'::bytea" % b.hex()
        if self.wh == 'clickhouse':
            return "unhex('%s')" % b.hex()
        return "X'%s'" % b.hex()

    def lit(self, col, v):
        if v is None:
            return 'NULL'
        if col.kind == 'text':
            return self.lit_text(v)
        if col.kind == 'bytes':
            return self.lit_bytes(v)
        if self.wh == 'clickhouse':
            return "CAST('%s' AS %s)" % (v, col.decl)
        if self.wh == 'postgresql':
            return "'%s'::%s" % (v, col.decl)
        if self.wh == 'sqlite' and isinstance(v, int):
            return str(v)
        return "'%s'" % v

    # -- value generators per kind
    def ints(self, lo, hi):
        edges = [lo, hi, 0, -1, 1, lo + 1, hi - 1]
        edges = [e for e in edges if lo <= e <= hi]

        def g():
            if self.chance(0.6):
                return str(self.pick(edges))
            return str(self.rng.randint(lo, hi))
        return g

    def nums(self, prec, scale):
        """numeric(prec, scale) values (prec None: unconstrained)"""
        g0 = self.nums0(prec, scale)
        if not (self.wh == 'clickhouse' and gated('clickhouse-decimal-scale') and scale):
            return g0

        def g():
            # the last fraction digit not zero
            v = g0()
            return v[:-1] + str(self.rng.randint(1, 9))
        return g

    def nums0(self, prec, scale):
        def g():
            r = self.rng.random()
            if prec is None:
                if r < 0.1:
                    return self.pick(['NaN', 'Infinity', '-Infinity'])
                if r < 0.2:
                    return self.pick(['9' * self.rng.randint(20, 1000),
                                      '-0.' + '0' * self.rng.randint(20, 900) + '1',
                                      '1' + '0' * 130 + '.' + '0' * 16383,
                                      '0.' + '0' * 16382 + '1'])
                if r < 0.4:
                    return self.pick(['0', '-0', '1.50', '1.5000', '-1.50', '0.000', '100', '1e-5', '-1.0'])
                d = self.rng.randint(0, 20)
                return '%s%d.%s' % (self.pick(['', '-']), self.rng.randint(0, 10 ** 12),
                                    ''.join(str(self.rng.randint(0, 9)) for _ in range(d)))
            ip = prec - scale
            if r < 0.3:
                m = '9' * ip if ip else '0'
                f = '9' * scale
                return self.pick(['', '-']) + m + ('.' + f if scale else '')
            if r < 0.45:
                return '0' if not scale else self.pick(['0.' + '0' * (scale - 1) + '1', '-0.' + '0' * scale])
            i = self.rng.randint(0, 10 ** min(ip, 15) - 1) if ip else 0
            f = ''.join(str(self.rng.randint(0, 9)) for _ in range(scale))
            return self.pick(['', '-']) + str(i) + ('.' + f if scale else '')
        return g

    def floats(self, f4, nan_inf=True, neg_zero=True):
        if f4:
            edges = ['3.4028235e+38', '-3.4028235e+38', '1.1754944e-38', '1.4e-45', '0.1', '16777217', '1.5']
        else:
            edges = ['1.7976931348623157e+308', '-1.7976931348623157e+308', '2.2250738585072014e-308',
                     '5e-324', '0.1', '0.30000000000000004', '9007199254740993', '123456789.123456789']
        if nan_inf:
            edges += ['NaN', 'Infinity', '-Infinity']
        if neg_zero:
            edges += ['-0']
        if self.wh == 'clickhouse':
            edges = [e.replace('Infinity', 'inf').replace('NaN', 'nan') for e in edges]

        def g():
            if self.chance(0.6):
                return self.pick(edges)
            return repr(self.rng.uniform(-1e6, 1e6))
        return g

    def texts(self, maxlen=None, exotic_bytes=False, nul=False):
        def g():
            if exotic_bytes and self.chance(0.15) and not (self.wh == 'sqlite' and gated('sqlite-bytes')) \
                    and not (self.wh == 'clickhouse' and gated('clickhouse-bytes')):
                return self.pick([b'a\xffb', b'\xff', b'\xc3', b'\xed\xa0\x80 surrogate', b'\xc0\x80 overlong',
                                  b'ok \xf4\x90\x80\x80 beyond'])
            if nul and self.chance(0.1) and not (self.wh == 'sqlite' and gated('sqlite-bytes')) \
                    and not (self.wh == 'clickhouse' and gated('clickhouse-bytes')) \
                    and not (self.wh == 'mariadb' and gated('mariadb-nul')):
                return self.pick([b'a\x00b', b'\x00', b'nul at end\x00'])
            s = self.pick(TEXTS)
            while (self.wh == 'clickhouse' and gated('clickhouse-text') and (s in ('NULL', '\\N') or s.startswith('\ufeff') or s.strip(' ') != s)
                   or self.wh == 'sqlite' and gated('sqlite-plane16') and '\U0010ffff' in s):
                s = self.pick(TEXTS)
            if maxlen is not None:
                s = s[:maxlen]
            return s
        return g

    def blobs(self):
        return lambda: self.pick(BYTES)

    def dates(self, edges):
        def g():
            if self.chance(0.6):
                return self.pick(edges)
            d = dt.date(1901, 1, 1) + dt.timedelta(days=self.rng.randint(0, 100000))
            return d.isoformat()
        return g

    def stamps(self, edges, prec):
        def g():
            if self.chance(0.6):
                return self.pick(edges)
            t = dt.datetime(1901, 1, 1) + dt.timedelta(seconds=self.rng.randint(0, 3 * 10 ** 9),
                                                       microseconds=self.rng.randint(0, 999999))
            s = t.strftime('%Y-%m-%d %H:%M:%S')
            if prec:
                s += '.' + ''.join(str(self.rng.randint(0, 9)) for _ in range(prec))
            return s
        return g

    # -- column types per warehouse
    def value_col(self, name):
        w = self.wh
        p = self.rng.randint(0, 6)
        if w == 'postgresql':
            ts_edges = ['4713-01-01 00:00:00 BC', '0001-01-01 00:00:00 BC', '0044-03-15 12:00:00.5 BC',
                        '0001-01-01 00:00:00', '1969-12-31 23:59:59.999999', '1970-01-01 00:00:00',
                        '2000-02-29 12:34:56.789012', '9999-12-31 23:59:59.999999', '10000-01-01 00:00:00',
                        '294276-12-31 23:59:59.999999', 'infinity', '-infinity', '2026-11-01 06:00:00.000001']
            d_edges = ['4713-01-01 BC', '0001-01-01 BC', '0001-01-01', '2000-02-29', '9999-12-31',
                       '10000-01-01', '5874897-12-31', 'infinity', '-infinity']
            if gated('bc'):
                # (9999-12-31 23:59:59.999999 rounds to year 10000 below 6 fraction digits)
                ts_edges = [e for e in ts_edges if not (e.endswith('BC') or e.endswith('infinity') or
                                                        len(e.split('-')[0]) > 4 or e.startswith('9999'))]
                d_edges = [e for e in d_edges if not (e.endswith('BC') or e.endswith('infinity') or
                                                      len(e.split('-')[0]) > 4)]
            opts = [
                ('smallint', 'int', self.ints(-2 ** 15, 2 ** 15 - 1)),
                ('integer', 'int', self.ints(-2 ** 31, 2 ** 31 - 1)),
                ('bigint', 'int', self.ints(-2 ** 63, 2 ** 63 - 1)),
                ('numeric', 'num', self.nums(None, None)),
                ('numeric(12,4)', 'num', self.nums(12, 4)),
                ('numeric(1000,0)', 'num', self.nums(1000, 0)),
                ('real', 'f4', self.floats(True)),
                ('double precision', 'f8', self.floats(False)),
                ('text', 'text', self.texts()),
                ('varchar(10)', 'text', self.texts(10)),
                ('bytea', 'bytes', self.blobs()),
                ('date', 'date', self.dates(d_edges)),
                ('timestamp(%d)' % p, 'ts', self.stamps(ts_edges, p)),
                ('timestamptz(%d)' % p, 'tstz', self.stamps([e if e.endswith('infinity') else
                                                              e.replace(' BC', '+00 BC') if e.endswith(' BC') else e + '+00'
                                                              for e in ts_edges] +
                                                             ['2026-11-01 06:00:00+05:30', '1900-01-01 00:00:00-03:17'], p)),
                ('boolean', 'bool', lambda: self.pick(['true', 'false'])),
                ('uuid', 'uuid', lambda: self.pick(['00000000-0000-0000-0000-000000000000',
                                                    'ffffffff-ffff-ffff-ffff-ffffffffffff',
                                                    '123e4567-e89b-12d3-a456-426614174000'])),
                ('money', 'num', lambda: self.pick(['-92233720368547758.08', '92233720368547758.07',
                                                    '0.01', '1.10', '0.00', '-1.00'])),
            ]
            if gated('money'):
                opts = [o for o in opts if o[0] != 'money']
            exprs = {'text': "encode(convert_to({c}, 'UTF8'), 'hex')", 'bytes': "encode({c}, 'hex')",
                     'money': '{c}::numeric::text'}
        elif w == 'mariadb':
            ts_edges = ['0000-00-00 00:00:00', '1000-01-01 00:00:00', '0001-01-01 00:00:00',
                        '9999-12-31 23:59:59.999999', '1970-01-01 00:00:00', '2024-02-29 23:59:59.5',
                        '2026-00-00 00:00:00']
            opts = [
                ('TINYINT', 'int', self.ints(-128, 127)),
                ('TINYINT UNSIGNED', 'int', self.ints(0, 255)),
                ('SMALLINT', 'int', self.ints(-2 ** 15, 2 ** 15 - 1)),
                ('SMALLINT UNSIGNED', 'int', self.ints(0, 2 ** 16 - 1)),
                ('MEDIUMINT', 'int', self.ints(-2 ** 23, 2 ** 23 - 1)),
                ('INT', 'int', self.ints(-2 ** 31, 2 ** 31 - 1)),
                ('INT UNSIGNED', 'int', self.ints(0, 2 ** 32 - 1)),
                ('BIGINT', 'int', self.ints(-2 ** 63, 2 ** 63 - 1)),
                ('BIGINT UNSIGNED', 'int', self.ints(0, 2 ** 64 - 1)),
                ('DECIMAL(65,30)', 'num', self.nums(65, 30)),
                ('DECIMAL(10,2)', 'num', self.nums(10, 2)),
                ('DECIMAL(65,0)', 'num', self.nums(65, 0)),
                ('FLOAT', 'f4', self.floats(True, False, False)),
                ('DOUBLE', 'f8', self.floats(False, False, False)),
                ('VARCHAR(20)', 'text', self.texts(20, nul=True)),
                ('TEXT', 'text', self.texts(nul=True)),
                ('BLOB', 'bytes', self.blobs()),
                ('VARBINARY(300)', 'bytes', self.blobs()),
                ('DATE', 'date', self.dates(['0000-00-00', '1000-01-01', '0001-01-01', '9999-12-31',
                                             '2024-02-29', '2026-00-00'])),
                ('DATETIME(%d)' % p, 'ts', self.stamps(ts_edges, p)),
            ]
            if gated('mariadb-zero-date'):
                ts_edges = [e for e in ts_edges if '-00' not in e[:10]]
                opts = [(a, b, c) if a != 'DATE' else
                        (a, b, self.dates(['1000-01-01', '0001-01-01', '9999-12-31', '2024-02-29']))
                        for a, b, c in opts]
                opts = [(a, b, c) if not a.startswith('DATETIME') else (a, b, self.stamps(ts_edges, p))
                        for a, b, c in opts]
            if gated('mariadb-float'):
                opts = [o for o in opts if o[0] != 'FLOAT']
            exprs = {'text': 'HEX({c})', 'bytes': 'HEX({c})', 'f4': 'CAST(CAST({c} AS DOUBLE) AS CHAR)'}
        elif w == 'sqlite':
            ts_edges = ['0000-01-01 00:00:00', '0001-01-01 00:00:00', '9999-12-31 23:59:59.999999',
                        '2026-11-01 06:00:00.1', 1700000000, '2026-11-01T06:00:00', '2026-11-01 06:00:00Z',
                        'not a time', '1970-01-01 00:00:00.000000']
            opts = [
                ('INTEGER', 'int', self.ints(-2 ** 63, 2 ** 63 - 1)),
                ('BIGINT', 'int', self.ints(-2 ** 63, 2 ** 63 - 1)),
                ('DECIMAL(10,2)', 'numv', lambda: self.pick(['1.50', '1.5000', '-0.01', '0', '12345678.99',
                                                             'NaN', '0.30000000000000004', '1' + '0' * 40,
                                                             '123456789012345678901234567890.5', 'abc'])),
                ('NUMERIC', 'numv', self.nums(None, None)),
                ('REAL', 'f8', lambda: self.pick(['1.7976931348623157e308', '5e-324', '1e999', '-1e999',
                                                  '0.1', '0.30000000000000004', '-1.5', '2.2250738585072014e-308'])),
                ('TEXT', 'text', self.texts(exotic_bytes=True, nul=True)),
                ('VARCHAR(10)', 'text', self.texts(exotic_bytes=True)),
                ('BLOB', 'bytes', self.blobs()),
                ('DATE', 'date', self.dates(['0001-01-01', '9999-12-31', '2024-02-29', '0000-01-01'])),
                ('TIMESTAMP', 'ts', self.stamps(ts_edges, p)),
            ]
            if not gated('sqlite-plane16'):
                # a character of plane 16 in a number, a date or a time: the
                # driver's UTF-16 conversion would make it a digit (a bad row)
                p16 = {'INTEGER': '1\U00100030', 'NUMERIC': '1.\U00100035', 'DATE': '2024-01-0\U00100031',
                       'TIMESTAMP': '2026-11-01 06:00:0\U00100030'}

                def with_p16(g, v):
                    return lambda: v if self.chance(0.1) else g()
                opts = [(a, b, with_p16(c, p16[a]) if a in p16 else c) for a, b, c in opts]
            if gated('sqlite-real'):
                # 15 significant digits at most
                opts = [(a, b, c) if a != 'REAL' else
                        (a, b, lambda: self.pick(['1.79769313486231e308', '1e-300', '1e999', '-1e999', '0.1',
                                                  '-1.5', '123456789012345']))
                        for a, b, c in opts]
                opts = [(a, b, c) if a != 'DECIMAL(10,2)' else
                        (a, b, lambda: self.pick(['1.50', '1.5000', '-0.01', '0', '12345678.99', 'NaN',
                                                  '1' + '0' * 40, '123456789012345678901234567890.5', 'abc']))
                        for a, b, c in opts]
            exprs = {'text': 'hex({c})', 'bytes': 'hex({c})',
                     # the exact double (SQLite's printf rounds past 15 digits)
                     'f8': "CASE typeof({c}) WHEN 'real' THEN ieee754({c}) ELSE CAST({c} AS TEXT) END",
                     'int': 'CAST({c} AS TEXT)', 'numv': 'CAST({c} AS TEXT)', 'date': 'CAST({c} AS TEXT)',
                     'ts': 'CAST({c} AS TEXT)'}
        else:
            ts_edges = ['1900-01-01 00:00:00', '2299-12-31 23:59:59.999999', '1970-01-01 00:00:00',
                        '2026-11-01 06:00:00.000001', '1969-12-31 23:59:59.999999']
            q = self.rng.randint(0, 6 if gated('clickhouse-nanos') else 9)
            if q == 9:
                # DateTime64(9) ends at 2262-04-11 23:47:16.854775807
                ts_edges = [e if not e.startswith('2299') else '2262-04-11 23:47:16.854775807' for e in ts_edges]
            if q > 6:
                # finer than a microsecond: cut, never rounded (docs/limits.md)
                ts_edges = ts_edges + ['1969-12-31 23:59:59.' + '9' * q, '2026-11-01 06:00:00.' + '0' * 6 + '9' * (q - 6),
                                       '1900-01-01 00:00:00.' + '0' * (q - 1) + '1']
            opts = [
                ('Int8', 'int', self.ints(-128, 127)), ('UInt8', 'int', self.ints(0, 255)),
                ('Int16', 'int', self.ints(-2 ** 15, 2 ** 15 - 1)), ('UInt16', 'int', self.ints(0, 2 ** 16 - 1)),
                ('Int32', 'int', self.ints(-2 ** 31, 2 ** 31 - 1)), ('UInt32', 'int', self.ints(0, 2 ** 32 - 1)),
                ('Int64', 'int', self.ints(-2 ** 63, 2 ** 63 - 1)), ('UInt64', 'int', self.ints(0, 2 ** 64 - 1)),
                ('Int128', 'int', self.ints(-2 ** 127, 2 ** 127 - 1)),
                ('Decimal(9,2)', 'num', self.nums(9, 2)), ('Decimal(38,10)', 'num', self.nums(38, 10)),
                ('Decimal(76,38)', 'num', self.nums(76, 38)),
                ('Float32', 'f4', self.floats(True)), ('Float64', 'f8', self.floats(False)),
                ('String', 'text', self.texts(exotic_bytes=True, nul=True)),
                ('FixedString(8)', 'text', self.texts(8)),
                ('Date', 'date', self.dates(['1970-01-01', '2149-06-06', '2000-02-29'])),
                ('Date32', 'date', self.dates(['1900-01-01', '2299-12-31', '1969-12-31'])),
                ('DateTime', 'ts', self.stamps(['1970-01-01 00:00:00', '2106-02-07 06:28:15'], 0)),
                ('DateTime64(%d)' % q, 'ts', self.stamps(ts_edges, q)),
                ('UUID', 'uuid', lambda: self.pick(['00000000-0000-0000-0000-000000000000',
                                                    '123e4567-e89b-12d3-a456-426614174000'])),
                ('Bool', 'bool', lambda: self.pick(['true', 'false'])),
            ]
            exprs = {'text': 'hex({c})', 'bytes': 'hex({c})'}
        decl, kind, g = self.pick(opts)
        expr = exprs.get('money' if decl == 'money' else kind)
        if w == 'clickhouse':
            # the column as is (TSV: NULL as \\N, decimals with their scale), strings as hex
            expr = expr or '{c}'
        elif w == 'mariadb':
            expr = expr or 'CAST({c} AS CHAR)'
        elif w == 'postgresql':
            expr = expr or '{c}::text'
        self.summary.append(decl)
        return Col(name, decl, kind, g, expr)

    # -- the key, the cursor, the event column
    def key_col(self, name):
        w = self.wh
        kinds = ['int', 'text'] + (['num'] if w == 'postgresql' else []) + (['numv'] if w == 'sqlite' else [])
        kind = self.pick(kinds)
        decl = {('postgresql', 'int'): 'bigint', ('postgresql', 'text'): 'text', ('postgresql', 'num'): 'numeric',
                ('mariadb', 'int'): 'BIGINT', ('mariadb', 'text'): 'VARCHAR(100)',
                ('sqlite', 'int'): 'INTEGER', ('sqlite', 'text'): 'TEXT', ('sqlite', 'numv'): 'NUMERIC',
                ('clickhouse', 'int'): 'Int64', ('clickhouse', 'text'): 'String'}[(w, kind)]
        expr = {'text': {'postgresql': "encode(convert_to({c}, 'UTF8'), 'hex')", 'mariadb': 'HEX({c})',
                         'sqlite': 'hex({c})', 'clickhouse': 'hex({c})'}[w]}.get(kind)
        expr = expr or {'postgresql': '{c}::text', 'mariadb': 'CAST({c} AS CHAR)', 'sqlite': 'CAST({c} AS TEXT)',
                        'clickhouse': '{c}'}[w]
        self.summary.append('key ' + decl)
        return Col(name, decl, kind, None, expr)

    def key_values(self, kind, n):
        """n distinct keys (under the copy's equality), some equal as
        numbers and different as text, or different by case only"""
        out, seen = [], set()
        if kind == 'int':
            pool = [-2 ** 63, 2 ** 63 - 1, 0, -1, 1, 2 ** 31, -2 ** 31 - 1]
        elif kind == 'text':
            pool = TEXTS + ['abc', 'ABC', 'Abc', 'abc ', 'ß', 'SS', 'é', 'e\u0301']
            if self.wh == 'clickhouse' and gated('clickhouse-text'):
                pool = [x for x in pool if x not in ('NULL', '\\N') and not x.startswith('\ufeff') and x.strip(' ') == x]
            if self.wh == 'sqlite' and gated('sqlite-plane16'):
                pool = [x for x in pool if '\U0010ffff' not in x]
        else:
            pool = ['1.50', '-1.50', '0', '-0.001', '1' + '0' * 30, '0.' + '0' * 30 + '1', '1e-3', '12.3400']
        while len(out) < n:
            if self.chance(0.5):
                v = self.pick(pool)
            elif kind == 'int':
                v = self.rng.randint(-2 ** 63, 2 ** 63 - 1)
            elif kind == 'text':
                v = 'k%d%s' % (self.rng.randint(0, 10 ** 6), self.pick(['', ' ', "'", '\t', 'é']))
            else:
                v = '%d.%0*d' % (self.rng.randint(-10 ** 6, 10 ** 6), self.rng.randint(1, 6), self.rng.randint(0, 999))
            ident = self.key_ident(kind, v)
            if kind == 'text' and self.wh == 'mariadb' and gated('mariadb-ci-keys'):
                # one key under MariaDB's case- and accent-insensitive collation
                import unicodedata
                ident = ''.join(c for c in unicodedata.normalize('NFKD', v) if not unicodedata.combining(c)).casefold()
            if ident in seen:
                continue
            if kind == 'text' and self.wh == 'mariadb' and (v.rstrip(' ') != v or '\n' in v):
                continue
            if kind == 'text' and self.wh == 'clickhouse' and gated('clickhouse-text') and v.strip(' ') != v:
                continue
            seen.add(ident)
            out.append(v)
        return out

    @staticmethod
    def key_ident(kind, v):
        if kind in ('num', 'numv'):
            from decimal import Decimal
            return Decimal(v).normalize()
        return v

    def rescale(self, v):
        """the same number written with another scale"""
        if 'e' in v.lower():
            from decimal import Decimal
            v = format(Decimal(v), 'f')  # 1e-3 as 0.001: no fraction after an exponent
        if '.' in v:
            return v + '00'
        return v + '.0'


def main():
    d, seed, tables, wh = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    if ':' not in tables:
        make(d, seed, int(tables), wh)
        return
    # FIRST:LAST:STEP, each table into DIR/<table> (one process for many)
    first, last, step = (int(x) for x in tables.split(':'))
    for t in range(first, last, step):
        os.makedirs(os.path.join(d, str(t)), exist_ok=True)
        make(os.path.join(d, str(t)), seed, t, wh)


def make(d, seed, table, wh):
    """one table's files in d; from (seed, wh, table) alone"""
    g = Gen(seed, table, wh)
    rng = g.rng
    tname = g.name('fz_%d' % table)
    # another run at once against the same warehouses uses other names
    # (the tag at the end, the name cut to stay within 63 bytes)
    tag = os.environ.get('TS_FUZZ_TAG', '')
    if tag:
        while len((tname + tag).encode('utf-8')) > 63:
            tname = tname[:-1]
        tname += tag
    key = g.key_col(g.name('k'))
    cur_name = g.name('synced_at')
    ev_name = g.name('ev')
    cur_decl = {'postgresql': 'timestamp(6)', 'mariadb': 'DATETIME(6)', 'sqlite': 'TIMESTAMP',
                'clickhouse': 'DateTime64(6)'}[wh]
    ev_date = g.chance(0.3)
    ev_decl = {'postgresql': ('timestamp(3)', 'date'), 'mariadb': ('DATETIME(3)', 'DATE'),
               'sqlite': ('TIMESTAMP', 'DATE'), 'clickhouse': ('DateTime64(3)', 'Date')}[wh][ev_date]
    ts_expr = {'postgresql': '{c}::text', 'mariadb': 'CAST({c} AS CHAR)', 'sqlite': 'CAST({c} AS TEXT)',
               'clickhouse': '{c}'}[wh]
    cur = Col(cur_name, cur_decl, 'ts', None, ts_expr)
    ev = Col(ev_name, ev_decl, 'date' if ev_date else 'ts', None, ts_expr)
    vals = [g.value_col(g.name('v%d' % i)) for i in range(rng.randint(1, 6))]
    rng.shuffle(vals)
    order = [key] + vals[:len(vals) // 2] + [ev, cur] + vals[len(vals) // 2:]

    policy = rng.choice(['quarantine', 'quarantine', 'quarantine', 'skip', 'fail'])
    history = g.chance(0.3)
    check = rng.choice(['keys', 'rows'])
    cycles = rng.randint(1, 3)
    name = 'fz_%s_%d' % (wh, table)
    # now and then an integer cursor (no history: it needs a time), from
    # its extremes
    int_cursor = not history and g.chance(0.25) and not gated('int-cursor')
    if int_cursor:
        cur.decl = {'postgresql': 'bigint', 'mariadb': 'BIGINT', 'sqlite': 'INTEGER', 'clickhouse': 'Int64'}[wh]
        cur.kind = 'int'
        cur.wh_expr = {'postgresql': '{c}::text', 'mariadb': 'CAST({c} AS CHAR)', 'sqlite': 'CAST({c} AS TEXT)',
                       'clickhouse': '{c}'}[wh]
        g.summary.append('cursor ' + cur.decl)
    counter = [rng.choice([-2 ** 63, -2 ** 63 + 1, -2 ** 31, 0, 2 ** 63 - 400])]

    # -- rows: dicts column name -> literal value (None = NULL)
    clock = [BASE + dt.timedelta(days=table % 20)]

    def tick():
        clock[0] += dt.timedelta(seconds=rng.randint(1, 600), microseconds=rng.randint(0, 999999))
        if int_cursor:
            v = counter[0]
            counter[0] += rng.randint(1, 3)
            return str(v)
        return clock[0].strftime('%Y-%m-%d %H:%M:%S.%f')

    def curlit(v):
        return v if int_cursor else "'%s'" % v

    def event():
        e = clock[0] - dt.timedelta(seconds=rng.randint(0, 2 * 86400))
        return e.strftime('%Y-%m-%d') if ev_date else e.strftime('%Y-%m-%d %H:%M:%S')

    def values():
        r = {}
        for c in vals:
            if rng.random() < 0.12:
                r[c.name] = None
            else:
                r[c.name] = c.gen()
        return r

    rows = []       # the model: [key, cursor, event, values, sane_event]
    n0 = rng.randint(4, 16)
    keys = g.key_values(key.kind, n0 + 3 * 6)
    fresh = iter(keys)
    steps = []

    def new_row():
        k = next(fresh)
        if g.chance(0.03) and policy != 'fail' and not gated('null-key'):
            k = None        # a NULL key: a bad row
        r = {'k': k, 'ts': tick(), 'ev': event(), 'v': values(), 'sane': True}
        if g.chance(0.05):
            r['ev'] = None
            r['sane'] = False
        rows.append(r)
        # a snapshot: later changes of the row are statements of their own
        return ('insert', dict(r))

    steps.append([new_row() for _ in range(n0)])
    for _ in range(cycles):
        st = []
        for _ in range(rng.randint(1, 6)):
            x = rng.random()
            live = [r for r in rows if r['k'] is not None]
            if x < 0.3 or not live:
                st.append(new_row())
            elif x < 0.6:
                r = g.pick(live)
                old = r['ts']
                r['ts'] = tick()
                r['v'] = values()
                st.append(('update', old, dict(r)))
            elif x < 0.8:
                # a second row of a key; a numeric key written with another scale
                r = g.pick(live)
                k = r['k']
                if key.kind in ('num', 'numv') and g.chance(0.7) and not gated('key-scale'):
                    k = g.rescale(k)
                nr = {'k': k, 'ts': tick(), 'ev': event(), 'v': values(), 'sane': True}
                # the key's older rows stay, under the copy's equality they are one key
                rows.append(nr)
                st.append(('insert', dict(nr)))
            else:
                cands = [r for r in live if r['sane']]
                if check == 'rows' or key.kind in ('num', 'numv'):
                    # not a row of a key that keeps an older row with no
                    # event (outside every hot window): under 'rows', and
                    # under 'keys' with a numeric key (which cannot be sent
                    # back, so the window is pulled whole: docs/design.md,
                    # "Checking the hot window"), the key would leave the
                    # copy until the warehouse writes it again
                    # (docs/limits.md, "Duplicate keys across the window
                    # edge"); under 'keys' otherwise the older row returns
                    def lone(r):
                        i = g.key_ident(key.kind, r['k'])
                        return not any(o is not r and o['k'] is not None and not o['sane']
                                       and g.key_ident(key.kind, o['k']) == i for o in rows)
                    cands = [r for r in cands if lone(r)]
                if cands:
                    r = g.pick(cands)
                    rows.remove(r)
                    st.append(('delete', r['ts']))
        steps.append(st)

    def qc(c):
        return g.qi(c.name)

    def render_row(r):
        out = []
        for c in order:
            if c is key:
                v = r['k']
                out.append('NULL' if v is None else
                           g.lit_text(v) if key.kind == 'text' else
                           ("'%s'" % v if key.kind in ('num', 'numv') else str(v)))
            elif c is cur:
                out.append(curlit(r['ts']))
            elif c is ev:
                out.append('NULL' if r['ev'] is None else "'%s'" % r['ev'])
            else:
                out.append(g.lit(c, r['v'][c.name]))
        return '(' + ', '.join(out) + ')'

    def write(fn, text):
        with open(os.path.join(d, fn), 'w', encoding='utf-8') as f:
            f.write(text)

    # -- the warehouse's SQL
    qt = g.qi(tname)
    defs = []
    for c in order:
        decl = c.decl
        if wh == 'clickhouse' and c is not key and c is not cur:
            decl = 'Nullable(%s)' % decl
        if wh == 'mariadb' and c is cur:
            decl += ' NOT NULL'
        defs.append('%s %s' % (qc(c), decl))
    pre = {'postgresql': '', 'sqlite': '.timeout 10000\n',
           'mariadb': "SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION';\n", 'clickhouse': ''}[wh]
    suffix = {'clickhouse': ' ENGINE = MergeTree ORDER BY tuple()',
              'mariadb': ' DEFAULT CHARSET = utf8mb4'}.get(wh, '')
    write('wh_create.sql', pre + 'DROP TABLE IF EXISTS %s;\nCREATE TABLE %s (%s)%s;\n'
          % (qt, qt, ', '.join(defs), suffix))
    for i, st in enumerate(steps):
        out = [pre]
        ins = [render_row(s[1]) for s in st if s[0] == 'insert']
        for s in st:
            if s[0] == 'update':
                r = s[2]
                sets = ['%s = %s' % (qc(c), g.lit(c, r['v'][c.name])) for c in vals]
                sets.append("%s = %s" % (qc(cur), curlit(r['ts'])))
                if wh == 'clickhouse':
                    out.append("ALTER TABLE %s UPDATE %s WHERE %s = %s;\n" % (qt, ', '.join(sets), qc(cur), curlit(s[1])))
                else:
                    out.append("UPDATE %s SET %s WHERE %s = %s;\n" % (qt, ', '.join(sets), qc(cur), curlit(s[1])))
            elif s[0] == 'delete':
                out.append("DELETE FROM %s WHERE %s = %s;\n" % (qt, qc(cur), curlit(s[1])))
        if ins:
            out.append('INSERT INTO %s (%s) VALUES\n  %s;\n' % (qt, ', '.join(qc(c) for c in order),
                                                              ',\n  '.join(ins)))
        write('wh_step%d.sql' % i, ''.join(out))

    null = {'postgresql': "coalesce(%s, 'N')", 'mariadb': "COALESCE(%s, 'N')",
            'sqlite': "CASE WHEN {c} IS NULL THEN 'N' ELSE %s END", 'clickhouse': '%s'}[wh]
    sel = []
    for c in order:
        e = c.wh_expr.format(c=qc(c))
        if wh == 'sqlite':
            sel.append(null.replace('{c}', qc(c)).replace('%s', e))
        elif wh == 'clickhouse':
            sel.append("ifNull(%s, 'N')" % e if 'hex' in e else e)
        else:
            sel.append(null % e)
    dump = 'SELECT %s FROM %s' % (', '.join(sel), qt)
    if wh == 'clickhouse':
        dump += ' FORMAT TSV SETTINGS output_format_decimal_trailing_zeros = 1'
    write('wh_dump.sql', pre + dump + ';\n')

    # -- the destination's SQL
    def sl(s):
        return "'" + s.replace("'", "''") + "'"

    def pg_qi(s):
        return '"' + s.replace('"', '""') + '"'
    local = pg_qi(tname)
    write('add.sql', "SET client_min_messages = warning;\nSELECT name FROM treble_sync.add_table(%s, 'w', "
          "key_columns => ARRAY[%s], cursor_column => %s, event_column => %s, hot_window => '3 days', "
          "local_table => %s, name => %s, on_bad_row => %s, max_bad_row_ratio => 1, max_delete_ratio => 1, "
          "hot_window_check => %s, keep_history => %s);\n"
          % (sl(pg_qi(tname) if '"' in tname else tname), sl(key.name), sl(cur.name), sl(ev.name), sl(local), sl(name), sl(policy), sl(check),
             "'400 days'" if history else 'NULL'))

    raw_cols = ', '.join('c%d text' % i for i in range(len(order)))
    canon = ', '.join("fz_canon(%s, c%d) AS %s" % (sl(c.kind), i, pg_qi(c.name)) for i, c in enumerate(order))
    typed_key = {'int': 'fz_key_num(fz_canon(\'int\', c0))', 'num': 'fz_key_num(fz_canon(\'num\', c0))',
                 'numv': 'fz_key_num(fz_canon(\'numv\', c0))', 'text': 'fz_key_text(c0)'}[key.kind]
    copy_key = {'int': '%s::numeric', 'num': '%s::numeric', 'numv': '%s::numeric', 'text': '%s::text'}[key.kind] \
        % pg_qi(key.name)
    curi = order.index(cur)
    copy_canon = ', '.join('fz_copy(%s, %s) AS %s' % (sl(c.kind), pg_qi(c.name), pg_qi(c.name)) for c in order)
    cmp_cols = ' UNION ALL '.join(
        "SELECT %s, e.%s, c.%s WHERE e.%s IS DISTINCT FROM c.%s" % (sl(c.name), pg_qi(c.name), pg_qi(c.name),
                                                                 pg_qi(c.name), pg_qi(c.name)) for c in order)
    with open(os.path.join(d, 'compare.sql'), 'w', encoding='utf-8') as f:
        f.write(r"""SET client_min_messages = warning;
CREATE TEMP TABLE raw (%(raw_cols)s);
\copy raw FROM '%(dir)s/wh.tsv'
CREATE TEMP TABLE exp AS
SELECT %(typed_key)s AS tk, (c0 = 'N') AS null_key, fz_canon(%(curkind)s, c%(curi)d) AS cur, %(canon)s FROM raw;
CREATE TEMP TABLE want AS
SELECT DISTINCT ON (tk) * FROM exp WHERE cur IS NOT NULL AND tk IS NOT NULL ORDER BY tk, %(curorder)s DESC;
CREATE TEMP TABLE got AS SELECT %(copy_key)s AS tk, %(copy_canon)s FROM %(local)s;
CREATE TEMP TABLE diff AS
SELECT coalesce(e.tk::text, c.tk::text) AS k, 'row' AS col,
       CASE WHEN e.tk IS NULL THEN 'absent' ELSE 'present' END AS want,
       CASE WHEN c.tk IS NULL THEN 'absent' ELSE 'present' END AS got
  FROM want e FULL JOIN got c ON c.tk = e.tk WHERE e.tk IS NULL OR c.tk IS NULL
UNION ALL
SELECT e.tk::text, x.* FROM want e JOIN got c ON c.tk = e.tk, LATERAL (%(cmp_cols)s) x;
-- rows the copy cannot take at all: a NULL key, a key no local value equals
CREATE TEMP TABLE unkeyed AS SELECT * FROM exp WHERE cur IS NOT NULL AND tk IS NULL;
CREATE TEMP TABLE q AS SELECT key FROM treble_sync.quarantine WHERE table_name = %(name)s;
-- the differences no quarantined row explains (all of them under skip and fail)
SELECT 'DIFF', left(regexp_replace(k, '[\n\r\t]', '~', 'g'), 60), left(regexp_replace(col, '[\n\r\t]', '~', 'g'), 30),
       left(coalesce(want, 'NULL'), 80), left(coalesce(got, 'NULL'), 80)
  FROM diff WHERE NOT EXISTS (SELECT FROM q WHERE q.key = diff.k) ORDER BY 2, 3 LIMIT 12;
WITH bad AS (SELECT DISTINCT k FROM diff),
     unexplained AS (SELECT k FROM bad WHERE NOT EXISTS (SELECT FROM q WHERE q.key = bad.k)),
     spare AS (SELECT count(*) AS n FROM q WHERE q.key IS NULL OR NOT EXISTS (SELECT FROM want WHERE want.tk::text = q.key)),
     skipped AS (SELECT coalesce(sum(rows_bad), 0) AS n FROM treble_sync.runs WHERE table_name = %(name)s)
SELECT 'VERDICT',
       CASE WHEN %(policy)s = 'quarantine'
                 AND (SELECT count(*) FROM unexplained) + (SELECT count(*) FROM unkeyed) <= (SELECT n FROM spare)
                 THEN 'ok'
            WHEN %(policy)s = 'skip'
                 AND (SELECT count(*) FROM bad) + (SELECT count(*) FROM unkeyed) <= (SELECT n FROM skipped)
                 THEN 'ok'
            WHEN (SELECT count(*) FROM bad) + (SELECT count(*) FROM unkeyed) = 0 THEN 'ok'
            ELSE 'bad' END,
       format('%%s keys differ, %%s rows without a key the copy can hold, %%s quarantined, %%s counted bad, %%s rows compared',
              (SELECT count(*) FROM bad), (SELECT count(*) FROM unkeyed), (SELECT count(*) FROM q),
              (SELECT n FROM skipped), (SELECT count(*) FROM want)),
       (SELECT count(*) FROM bad) + (SELECT count(*) FROM unkeyed) + (SELECT count(*) FROM q);
""" % dict(raw_cols=raw_cols, dir=d, typed_key=typed_key, curi=curi, canon=canon, copy_key=copy_key,
           copy_canon=copy_canon, local=local, cmp_cols=cmp_cols, name=sl(name), policy=sl(policy),
           curkind=sl(cur.kind), curorder='fz_key_num(cur)' if int_cursor else 'fz_cur(cur)'))

    cols_sql = ', '.join(pg_qi(c.name) for c in order)
    write('history.sql', """SET client_min_messages = warning;
WITH w AS (SELECT watermark FROM treble_sync.tables WHERE name = %(name)s),
     c AS (SELECT ROW(%(cols)s)::text AS r FROM %(local)s),
     a AS (SELECT ROW(%(cols)s)::text AS r FROM treble_sync.as_of(NULL::%(local)s, (SELECT watermark FROM w)::timestamptz))
SELECT 'copy only', left(r, 200) FROM (SELECT r FROM c EXCEPT ALL SELECT r FROM a) x
UNION ALL
SELECT 'as_of only', left(r, 200) FROM (SELECT r FROM a EXCEPT ALL SELECT r FROM c) y
LIMIT 10;
""" % dict(name=sl(name), cols=cols_sql, local=local))

    write('digest.sql', "SELECT 'DG', md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM %s t;\n" % local)
    write('remove.sql', "SET client_min_messages = warning;\nSELECT treble_sync.remove_table(%s, drop_local => true);\n"
          % sl(name))

    sane = [r for r in rows if r['sane'] and r['k'] is not None]
    repair_day = (sane[0]['ev'][:10] if sane else clock[0].strftime('%Y-%m-%d'))
    write('meta.env', 'NAME=%s\nPOLICY=%s\nHISTORY=%d\nCYCLES=%d\nREPAIR_DAY=%s\nCHECK=%s\nSUMMARY=%s\n'
          % (name, policy, history, cycles, repair_day, check,
             "'%s'" % ', '.join(g.summary).replace("'", '')))


if __name__ == '__main__':
    main()
