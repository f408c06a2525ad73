#!/usr/bin/env python3
"""Objects an upgrade script creates or changes more than once.

usage: defined_once.py SCRIPT

The upgrade script of the version in development creates or replaces each
object once, in its final form (CONTRIBUTING.md, "Scripts"): a second
CREATE OR REPLACE of the same function or view further down leaves the
first one dead text that still runs, and a reader who finds the first takes
it for the definition.  Prints one line per object that two statements
define: what it is and the lines of the statements; nothing when there is
none.  Compared: CREATE [OR REPLACE] of a function (by name and argument
list), procedure, view, table, index, policy (on its table), type, domain,
schema and sequence; ALTER FUNCTION and ALTER VIEW of one signature; ALTER
TABLE ... ADD, DROP or ALTER of one column or constraint; COMMENT ON of one
object.  Statements are split at semicolons outside quotes, dollar-quoted
bodies and comments, which are passed over.
"""

import re
import sys


def args(text):
    """An argument list in one spelling: "(a int, b text)"."""
    return re.sub(r"\s*,\s*", ", ", re.sub(r"\s*([()])\s*", r"\1", text or ""))


def statements(text):
    """Yield (line, statement) for each statement of SCRIPT, its comments,
    quoted strings and dollar-quoted bodies blanked out."""
    out = []
    start_line = None
    line = 1
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            continue
        if c == "\\" and (i == 0 or text[i - 1] == "\n"):
            # a psql meta-command (\echo ... \quit): the rest of the line
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if start_line is None and not c.isspace():
            start_line = line
        m = re.match(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$", text[i:i + 64])
        if m:
            tag = m.group(0)
            j = text.find(tag, i + len(tag))
            j = n if j < 0 else j + len(tag)
            line += text.count("\n", i, j)
            out.append(" $body$ ")
            i = j
            continue
        if c == "'":
            j = i + 1
            while j < n:
                if text[j] == "'" and text.startswith("''", j):
                    j += 2
                    continue
                if text[j] == "'":
                    break
                j += 1
            line += text.count("\n", i, j)
            out.append(" 'literal' ")
            i = j + 1
            continue
        if c == ";":
            yield start_line, " ".join("".join(out).split())
            out = []
            start_line = None
            i += 1
            continue
        out.append(c)
        i += 1
    if "".join(out).strip():
        yield start_line, " ".join("".join(out).split())


NAME = r'((?:"[^"]+"|[A-Za-z_][A-Za-z_0-9$]*)(?:\.(?:"[^"]+"|[A-Za-z_][A-Za-z_0-9$]*))?)'

PATTERNS = [
    # CREATE [OR REPLACE] FUNCTION/PROCEDURE name(args)
    (re.compile(r"^CREATE (?:OR REPLACE )?(FUNCTION|PROCEDURE) " + NAME + r" ?(\([^)]*\))", re.I),
     lambda m: f"{m.group(1).lower()} {m.group(2)}{args(m.group(3))}"),
    # CREATE [OR REPLACE] [MATERIALIZED] VIEW, TABLE, TYPE, DOMAIN, SCHEMA, SEQUENCE
    (re.compile(r"^CREATE (?:OR REPLACE )?(?:MATERIALIZED )?(VIEW|TABLE|TYPE|DOMAIN|SCHEMA|SEQUENCE) "
                r"(?:IF NOT EXISTS )?" + NAME, re.I),
     lambda m: f"{m.group(1).lower()} {m.group(2)}"),
    (re.compile(r"^CREATE (?:UNIQUE )?INDEX (?:CONCURRENTLY )?(?:IF NOT EXISTS )?" + NAME, re.I),
     lambda m: f"index {m.group(1)}"),
    (re.compile(r"^CREATE POLICY " + NAME + r" ON " + NAME, re.I),
     lambda m: f"policy {m.group(1)} on {m.group(2)}"),
    (re.compile(r"^ALTER (FUNCTION|PROCEDURE) " + NAME + r" ?(\([^)]*\))", re.I),
     lambda m: f"alter {m.group(1).lower()} {m.group(2)}{args(m.group(3))}"),
    (re.compile(r"^ALTER (?:MATERIALIZED )?VIEW " + NAME, re.I),
     lambda m: f"alter view {m.group(1)}"),
    (re.compile(r"^COMMENT ON ((?:MATERIALIZED )?[A-Z]+(?: [A-Z]+)?) " + NAME + r" ?(\([^)]*\))?", re.I),
     lambda m: f"comment on {m.group(1).lower()} {m.group(2)}{args(m.group(3))}"),
]

# ALTER TABLE name action[, action...]: each action on a column or a
# constraint is one change of that column or constraint
ALTER_TABLE = re.compile(r"^ALTER TABLE (?:ONLY )?(?:IF EXISTS )?" + NAME + r" (.*)$", re.I)
ACTION = re.compile(r"^(ADD|DROP|ALTER) (?:(COLUMN|CONSTRAINT) )?(?:IF (?:NOT )?EXISTS )?" + NAME, re.I)


def split_actions(rest):
    """The comma-separated actions of an ALTER TABLE, commas inside
    parentheses left alone."""
    depth = 0
    cur = []
    for ch in rest:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            yield "".join(cur).strip()
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        yield "".join(cur).strip()


def objects(stmt):
    """What the statement creates or changes, as comparable keys."""
    for pattern, key in PATTERNS:
        m = pattern.match(stmt)
        if m:
            yield key(m)
            return
    m = ALTER_TABLE.match(stmt)
    if m:
        table = m.group(1)
        for action in split_actions(m.group(2)):
            a = ACTION.match(action)
            if not a or a.group(3).upper() in ("PRIMARY", "UNIQUE", "CHECK", "FOREIGN", "EXCLUDE"):
                continue
            what = (a.group(2) or "column").lower()
            verb = a.group(1).lower()
            # a constraint dropped and added again is one change of it
            if what == "constraint" and verb == "drop":
                continue
            yield f"alter table {table} {verb} {what} {a.group(3)}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    seen = {}
    for line, stmt in statements(text):
        for key in objects(stmt):
            seen.setdefault(key.lower(), []).append(line)
    for key, lines in seen.items():
        if len(lines) > 1:
            print(f"{key}: lines {', '.join(map(str, lines))}")


if __name__ == "__main__":
    main()
