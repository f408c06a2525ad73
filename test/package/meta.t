#!/usr/bin/env python3
#
# META.json is valid for PGXN: the fields the PGXN Meta Spec 1.0.0
# (https://pgxn.org/spec/) requires are there with the types it gives,
# the optional ones used have the right types, and the version is the one
# the control file, the Makefile and debian/changelog say; the install and
# upgrade scripts lead to that version from every release, and NEWS.md has
# its section. Prints TAP.
#
# No validator of the spec is packaged for Debian or published on npm
# (PGXN's own, PGXN::Meta::Validator, is a CPAN module), so the rules are
# written out here, each one a test.

import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

tests = []


def check(ok, name, diag=None):
    tests.append((bool(ok), name, diag))
    return bool(ok)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


# Semantic Versioning 1.0.0, as the spec says (a pre-release suffix of
# letters, digits and dashes directly after the patch number).
SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([A-Za-z][0-9A-Za-z-]*)?$")
# A prerequisite's version: 0 (any), a version, or comparisons joined by commas.
VERSION_RANGE = re.compile(
    r"^\s*(0|((==|!=|>=|<=|>|<)\s*)?\d+(\.\d+){0,2}[A-Za-z0-9-]*)"
    r"(\s*,\s*(==|!=|>=|<=|>|<)\s*\d+(\.\d+){0,2}[A-Za-z0-9-]*)*\s*$")
# The spec's license strings.
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd",
    "freebsd", "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1",
    "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5",
    "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
    "restricted", "unrestricted", "unknown",
}
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}


def is_str(v):
    return isinstance(v, str) and v != ""


def is_term(v):
    # a name or tag: no slash, backslash or control character, 2+ characters
    return is_str(v) and len(v) >= 2 and not re.search(r"[/\\\x00-\x1f\x7f]", v)


try:
    meta = json.loads(read("META.json"))
    check(isinstance(meta, dict), "META.json is a JSON object")
except (OSError, ValueError) as e:
    check(False, "META.json is a JSON object", str(e))
    meta = {}

# --- required fields
for field in ("name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"):
    check(field in meta, f"required field {field} is present")

check(is_term(meta.get("name")), "name is a term (no /, \\ or control characters)", repr(meta.get("name")))
check(isinstance(meta.get("version"), str) and SEMVER.match(meta["version"]),
      "version is a semantic version", repr(meta.get("version")))
check(is_str(meta.get("abstract")), "abstract is a non-empty string")
m = meta.get("maintainer")
check(is_str(m) or (isinstance(m, list) and m and all(is_str(x) for x in m)),
      "maintainer is a string or a non-empty list of strings", repr(m))
lic = meta.get("license")
if isinstance(lic, str):
    lic_ok = lic in LICENSES
elif isinstance(lic, list):
    lic_ok = bool(lic) and all(x in LICENSES for x in lic)
elif isinstance(lic, dict):
    lic_ok = bool(lic) and all(is_str(k) and is_str(v) for k, v in lic.items())
else:
    lic_ok = False
check(lic_ok, "license is one of the spec's license strings (or a list, or name => URL)", repr(lic))

spec = meta.get("meta-spec")
check(isinstance(spec, dict) and spec.get("version") == "1.0.0",
      "meta-spec.version is 1.0.0", repr(spec))
check(not isinstance(spec, dict) or "url" not in spec or is_str(spec["url"]),
      "meta-spec.url, if present, is a string")

# --- provides: each extension with its file and version
provides = meta.get("provides")
check(isinstance(provides, dict) and provides, "provides is a non-empty object")
for ext, p in (provides or {}).items() if isinstance(provides, dict) else []:
    check(is_term(ext), f"provides: {ext} is a term")
    check(isinstance(p, dict), f"provides.{ext} is an object")
    if not isinstance(p, dict):
        continue
    check(is_str(p.get("file")) and os.path.isfile(os.path.join(ROOT, p["file"])),
          f"provides.{ext}.file names a file of the distribution", repr(p.get("file")))
    check(isinstance(p.get("version"), str) and SEMVER.match(p["version"]),
          f"provides.{ext}.version is a semantic version", repr(p.get("version")))
    check("abstract" not in p or is_str(p["abstract"]), f"provides.{ext}.abstract, if present, is a string")
    check("docfile" not in p or (is_str(p["docfile"]) and os.path.isfile(os.path.join(ROOT, p["docfile"]))),
          f"provides.{ext}.docfile, if present, names a file of the distribution", repr(p.get("docfile")))
    unknown = set(p) - {"file", "version", "abstract", "docfile"} - {k for k in p if k.startswith(("x_", "X_"))}
    check(not unknown, f"provides.{ext} has no field the spec does not define", repr(sorted(unknown)))

# --- optional fields the file uses
if "description" in meta:
    check(is_str(meta["description"]), "description is a string")
if "generated_by" in meta:
    check(is_str(meta["generated_by"]), "generated_by is a string")
if "tags" in meta:
    t = meta["tags"]
    check(isinstance(t, list) and all(is_str(x) and len(x) <= 255 and not re.search(r"[\x00-\x1f]", x) for x in t),
          "tags is a list of strings of at most 255 characters", repr(t))
if "release_status" in meta:
    check(meta["release_status"] in ("stable", "testing", "unstable"), "release_status is stable, testing or unstable")
if "prereqs" in meta:
    pr = meta["prereqs"]
    ok = isinstance(pr, dict) and set(pr) <= PHASES
    diag = None
    for phase, rels in (pr.items() if isinstance(pr, dict) else []):
        if not isinstance(rels, dict) or not set(rels) <= RELATIONS:
            ok, diag = False, f"{phase}: {rels!r}"
            continue
        for rel, deps in rels.items():
            if not isinstance(deps, dict) or not all(
                    is_str(k) and (isinstance(v, str) and VERSION_RANGE.match(v) or v == 0)
                    for k, v in deps.items()):
                ok, diag = False, f"{phase}.{rel}: {deps!r}"
    check(ok, "prereqs: phases of relations of name => version range", diag)
known = {"name", "version", "abstract", "maintainer", "license", "provides", "meta-spec",
         "description", "generated_by", "tags", "no_index", "prereqs", "release_status", "resources"}
unknown = {k for k in meta if k not in known and not k.startswith(("x_", "X_"))}
check(not unknown, "no top-level field the spec does not define", repr(sorted(unknown)))

# --- the same version everywhere
version = meta.get("version")
control = read("treble_sync.control")
dv = re.search(r"^default_version\s*=\s*'([^']*)'", control, re.M)
check(dv and dv.group(1) == version, "treble_sync.control's default_version is META.json's version",
      dv and dv.group(1))
ev = re.search(r"^EXTVERSION\s*=\s*(\S+)", read("Makefile"), re.M)
check(ev and ev.group(1) == version, "the Makefile's EXTVERSION is META.json's version", ev and ev.group(1))
pv = (provides or {}).get("treble_sync", {}) if isinstance(provides, dict) else {}
check(pv.get("version") == version, "provides.treble_sync.version is META.json's version", pv.get("version"))
cl = re.match(r"^\S+ \(([^)-]+)(-[^)]*)?\)", read("debian/changelog"))
check(cl and cl.group(1) == version, "debian/changelog's upstream version is META.json's version",
      cl and cl.group(1))

# --- the scripts: CREATE EXTENSION and ALTER EXTENSION UPDATE find a path
# to the version from the first release's install script, and from every
# earlier release (its tag v*, when the clone has tags); NEWS.md says what
# the version changed
import glob
import subprocess

installs, upgrades = set(), {}
for path in glob.glob(os.path.join(ROOT, "sql", "treble_sync--*.sql")):
    parts = os.path.basename(path)[len("treble_sync--"):-len(".sql")].split("--")
    if len(parts) == 1:
        installs.add(parts[0])
    elif len(parts) == 2:
        upgrades.setdefault(parts[0], set()).add(parts[1])


def reaches(start, goal):
    seen, todo = {start}, [start]
    while todo:
        v = todo.pop()
        if v == goal:
            return True
        for w in upgrades.get(v, ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return False


check(len(installs) == 1, "sql/ holds one install script (the first release's); every later version is an upgrade script",
      repr(sorted(installs)))
check(all(reaches(v, version) for v in installs),
      "the upgrade scripts lead from the install script to META.json's version", repr(upgrades))
try:
    tags = subprocess.run(["git", "-C", ROOT, "tag", "--list", "v[0-9]*"], capture_output=True,
                          text=True, check=True).stdout.split()
except (OSError, subprocess.CalledProcessError):
    tags = []
released = sorted(t[1:] for t in tags if t[1:] != version)
check(all(reaches(v, version) for v in released),
      "ALTER EXTENSION treble_sync UPDATE leads from every release tagged (v*) to META.json's version",
      repr([v for v in released if not reaches(v, version)]))
try:
    news = read("NEWS.md")
except OSError:
    news = ""
check(re.search(r"^## " + re.escape(str(version)) + r"\b", news, re.M),
      "NEWS.md has a section for META.json's version (## " + str(version) + ")")

print(f"1..{len(tests)}")
for i, (ok, name, diag) in enumerate(tests, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok and diag is not None:
        print(f"# got: {diag}")
sys.exit(0 if all(ok for ok, _, _ in tests) else 1)
