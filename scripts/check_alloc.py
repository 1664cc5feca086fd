#!/usr/bin/env python3
"""check_alloc.py: the raw allocations left beside the one helper (common/xalloc.h, bw_x*alloc;
issue 47). Counts, in every .c file of the source tree (tests, examples and the helper itself
aside), the calls of malloc, calloc, realloc and strdup (comments and strings blanked,
scripts/csrc.py) that have no `raw alloc:` comment on their line or the three above, saying why
not the helper (a setup path that returns its status, a library's own free, ...). Fails when a
file has more than scripts/alloc_baseline.txt allows it (a new raw allocation: use bw_x*alloc,
or say why not), and says so when a file has fewer (lower its line: the count only goes down).

    scripts/check_alloc.py SOURCE_DIR            exit 0, or 1 naming each file over its count
    scripts/check_alloc.py SOURCE_DIR --write    rewrites the baseline from the tree as it is"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csrc  # noqa: E402

CALL = re.compile(r"(?<![\w.>])(malloc|calloc|realloc|strdup)\s*\(")
SKIP = ("tests/", "build", "examples/", "common/xalloc.c")
FOLDERS = ("common", "models", "traces", "policies", "schedules", "plots", "sim")


def count(path):
    text = open(path, errors="replace").read()
    code = csrc.blank(text).split("\n")
    raw = text.split("\n")
    n = 0
    for i, line in enumerate(code):
        for _ in CALL.finditer(line):
            said = any("raw alloc:" in raw[k] for k in range(max(0, i - 3), i + 1))
            n += not said
    return n


def tree(src):
    found = {}
    for top in FOLDERS:
        for d, _, files in os.walk(os.path.join(src, top)):
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(d, f), src)
                if f.endswith(".c") and not any(s in rel for s in SKIP):
                    n = count(os.path.join(src, rel))
                    if n:
                        found[rel] = n
    return found


def main(argv):
    src = argv[0] if argv else "."
    base_path = os.path.join(src, "scripts", "alloc_baseline.txt")
    now = tree(src)
    if "--write" in argv:
        with open(base_path, "w") as f:
            f.write("# scripts/check_alloc.py: raw allocations each file may still hold "
                    "(only ever lowered)\n")
            for rel in sorted(now):
                f.write("%s %d\n" % (rel, now[rel]))
        print("%d raw allocations in %d files written to %s" % (sum(now.values()), len(now),
                                                                  base_path))
        return 0
    base = {}
    for line in open(base_path):
        if line.strip() and not line.startswith("#"):
            rel, n = line.split()
            base[rel] = int(n)
    bad = 0
    for rel in sorted(now):
        if now[rel] > base.get(rel, 0):
            print("%s: %d raw allocations, %d allowed: use bw_x*alloc (common/xalloc.h), or say "
                  "why not in a /* raw alloc: ... */ comment" % (rel, now[rel], base.get(rel, 0)))
            bad += 1
    for rel in sorted(base):
        if now.get(rel, 0) < base[rel]:
            print("note: %s holds %d raw allocations, fewer than its %d: lower its line in "
                  "scripts/alloc_baseline.txt" % (rel, now.get(rel, 0), base[rel]))
    print("%d raw allocations in %d files (baseline %d)" % (sum(now.values()), len(now),
                                                           sum(base.values())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
