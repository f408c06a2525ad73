#!/usr/bin/env python3
#
# The SQL statements the library runs against its own catalog, as written in
# src/*.c: every string literal (adjacent literals joined, as the compiler
# joins them) that is a statement (SELECT, INSERT, UPDATE, DELETE, WITH)
# naming treble_sync.<something>. One per line: "file<TAB>statement", the
# statement's newlines and tabs turned into spaces. upgrade.t prepares each
# against an updated catalog: every table, column and function the C code
# names must exist there, whatever the install and upgrade scripts say.
#
# Statements assembled at run time (psprintf with %s, StringInfo) are seen
# only in their literal parts, and only when a literal part is a statement.

import glob
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
STATEMENT = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b")
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}

for path in sorted(glob.glob(os.path.join(ROOT, "src", "*.c"))):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    # comments out (a quote inside one is no literal), strings kept
    src = re.sub(r'/\*.*?\*/|//[^\n]*|("(?:[^"\\\n]|\\.)*")|(\'(?:[^\'\\\n]|\\.)*\')',
                 lambda m: m.group(1) or m.group(2) or " ", src, flags=re.S)
    literals = [(m.start(), m.end(), m.group(1)) for m in LITERAL.finditer(src)]
    i = 0
    while i < len(literals):
        _, end, text = literals[i]
        parts = [text]
        j = i + 1
        while j < len(literals) and src[end:literals[j][0]].strip() == "":
            parts.append(literals[j][2])
            end = literals[j][1]
            j += 1
        sql = re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(0)), "".join(parts))
        if STATEMENT.match(sql) and "treble_sync." in sql:
            print(os.path.basename(path) + "\t" + re.sub(r"[\n\t]", " ", sql).strip())
        i = j
