#!/usr/bin/env python3
"""Run SQL read on stdin against the ClickHouse warehouse's HTTP interface
(port $TS_CLICKHOUSE_PORT, database wh), one statement at a time, printing
each result as TSV. The few statements cycle.t writes in the other
warehouses' SQL are spelled ClickHouse's way first:
  UPDATE t SET ... WHERE ...      ->  ALTER TABLE t UPDATE ... WHERE ... (synchronous)
  ALTER TABLE a RENAME TO b       ->  RENAME TABLE a TO b
and CREATE TABLE without an engine gets a MergeTree without a sorting key."""
import os, re, sys, urllib.parse, urllib.request

def statements(text):
    out, cur, quote = [], [], None
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == '\\' and i + 1 < len(text):
                cur.append(text[i + 1]); i += 1
            elif c == quote:
                if i + 1 < len(text) and text[i + 1] == quote:
                    cur.append(text[i + 1]); i += 1
                else:
                    quote = None
        elif c in "'`\"":
            quote = c; cur.append(c)
        elif c == ';':
            out.append(''.join(cur)); cur = []
        else:
            cur.append(c)
        i += 1
    out.append(''.join(cur))
    return [s.strip() for s in out if s.strip()]

def translate(s):
    m = re.match(r'(?is)^UPDATE\s+(\S+)\s+SET\s+(.*)$', s)
    if m:
        return 'ALTER TABLE %s UPDATE %s' % (m.group(1), m.group(2))
    m = re.match(r'(?is)^ALTER\s+TABLE\s+(\S+)\s+RENAME\s+TO\s+(\S+)$', s)
    if m:
        return 'RENAME TABLE %s TO %s' % (m.group(1), m.group(2))
    return s

settings = {'database': os.environ.get('TS_CLICKHOUSE_DATABASE', 'wh'),
            'mutations_sync': '2', 'lightweight_deletes_sync': '2',
            'default_table_engine': 'MergeTree',
            'create_table_empty_primary_key_by_default': '1',
            'output_format_tsv_crlf_end_of_line': '0'}
url = 'http://127.0.0.1:%s/?%s' % (os.environ['TS_CLICKHOUSE_PORT'], urllib.parse.urlencode(settings))
rc = 0
for s in statements(sys.stdin.read()):
    s = translate(s)
    try:
        with urllib.request.urlopen(url, data=s.encode('utf-8'), timeout=300) as r:
            sys.stdout.write(r.read().decode('utf-8'))
    except urllib.error.HTTPError as e:
        sys.stderr.write('clickhouse: %s\n  in: %s\n' % (e.read().decode('utf-8', 'replace').strip(), s))
        rc = 1
        break
sys.exit(rc)
