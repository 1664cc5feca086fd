#!/usr/bin/env python3
"""check_map.py: the house rules the build alone does not see, checked over the source tree.

    scripts/check_map.py [ROOT]      exit 0 when all hold, 1 (each breach on a line) when not

(a) every `#include "..."` of a folder's file reaches only a folder the map allows: the "uses"
    column of docs/ARCHITECTURE.md's table of folders, parsed (the one place the map is
    written), and never another folder's internal header (NAME_impl.h, NAME_internal.h);
(b) no function over MAX_FUNCTION_LINES lines, from its header to its closing brace
    (scripts/csrc.py: brace counting over the file with comments and strings blanked);
(c) no file over MAX_FILE_LINES lines.
(b) and (c) hold for the tests too. tests/ and sim/main.c may include every folder's public
headers; a subfolder belongs to its folder (policies/python/ to policies/)."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csrc  # noqa: E402

MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 800
SOURCE_ROOTS = ["common", "models", "traces", "policies", "schedules", "plots", "sim", "tests"]
LINE_LIMITED = (".c", ".h", ".py", ".sh")
# Breaches kept on purpose, each with its reason: "path" (a file) or "path:function".
ALLOWED = {}
INTERNAL = re.compile(r"_(impl|internal)\.h$")


def read_map(root):
    """{folder: set of folders it may use} from ARCHITECTURE.md's table. A row's first cell
    names the folder (`sim/net/`), its last the uses (`common, SimGrid`); a use is a folder when
    its first word is a folder's last name (net for sim/net/); the others are libraries."""
    rows = []
    for line in open(os.path.join(root, "docs/ARCHITECTURE.md")):
        cells = line.rstrip("\n").split("|")
        m = re.match(r"\s*`([\w/.]+?)/?`", cells[1]) if len(cells) > 3 else None
        if m and line.startswith("|"):
            rows.append((m.group(1), cells[-2]))
    folders = {f for f, _ in rows if not f.endswith(".c")}
    by_name = {f.split("/")[-1]: f for f in folders}
    uses = {}
    for folder, cell in rows:
        if folder.endswith(".c"):  # sim/main.c: all commands
            continue
        used = set()
        for item in re.sub(r"\([^)]*\)", "", cell).split(","):
            word = item.strip().split(" ")[0].strip("`") if item.strip() else ""
            if word in by_name:
                used.add(by_name[word])
        uses[folder] = used
    if not uses:
        sys.exit("check_map.py: no table of folders in docs/ARCHITECTURE.md")
    return uses


def folder_of(path, uses):
    """The map's folder a file belongs to (its deepest one), or None (tests/, sim/main.c)."""
    best = None
    for f in uses:
        if path.startswith(f + "/") and (best is None or len(f) > len(best)):
            best = f
    return best


def sources(root):
    for top in SOURCE_ROOTS:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith("."))
            for f in sorted(files):
                yield os.path.relpath(os.path.join(d, f), root)


def header_index(root, files, uses):
    """{header name: [folders holding one]}"""
    index = {}
    for p in files:
        if p.endswith((".h", ".def")):
            owner = folder_of(p, uses)
            if owner:
                index.setdefault(os.path.basename(p), []).append((owner, os.path.dirname(p)))
    return index


def check_includes(root, p, text, uses, index, breaches):
    mine = folder_of(p, uses)
    here = os.path.dirname(p)
    for n, h in csrc.includes(text):
        if os.path.exists(os.path.join(root, here, h)):  # the file's own folder
            continue
        owners = index.get(os.path.basename(h), [])
        if not owners:
            continue  # generated (build/generated/) or a system header in quotes
        owner, hdir = owners[0]
        if mine and owner != mine and owner not in uses[mine]:
            breaches.append(f"{p}:{n}: includes {h} of {owner}/, which {mine}/ may not use "
                            f"(docs/ARCHITECTURE.md: {mine}/ uses "
                            f"{', '.join(sorted(uses[mine])) or 'no folder'})")
        elif INTERNAL.search(h) and not (mine == owner or p.startswith("tests/")):
            breaches.append(f"{p}:{n}: includes {h}, the internal header of {hdir}/")


def check_lengths(p, text, breaches):
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if lines > MAX_FILE_LINES and p not in ALLOWED:
        breaches.append(f"{p}: {lines} lines, over {MAX_FILE_LINES}")
    if not p.endswith((".c", ".h")):
        return
    for name, first, last, _ in csrc.functions(text):
        n = last - first + 1
        if n > MAX_FUNCTION_LINES and f"{p}:{name}" not in ALLOWED:
            breaches.append(f"{p}:{first}: {name} is {n} lines, over {MAX_FUNCTION_LINES}")


def main(argv):
    root = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    uses = read_map(root)
    files = [p for p in sources(root) if p.endswith(LINE_LIMITED + (".def",))]
    index = header_index(root, files, uses)
    breaches = []
    for p in files:
        if not p.endswith(LINE_LIMITED):
            continue
        text = open(os.path.join(root, p), errors="replace").read()
        if p.endswith((".c", ".h")):
            check_includes(root, p, text, uses, index, breaches)
        check_lengths(p, text, breaches)
    for b in breaches:
        print(b)
    print(f"check_map.py: {len(files)} files, {len(uses)} folders on the map, "
          f"{len(breaches)} breach{'es' if len(breaches) != 1 else ''}")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
