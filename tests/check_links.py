#!/usr/bin/env python3
"""check_links.py: the manual's links, checked (issue 41). Every relative link and image in the
repository's Markdown files (README.md, docs/**, the folders' READMEs; outside code blocks and
code spans) must name a file or folder that exists, and a `#anchor` must be a heading of its page
(GitHub's slugs) or an explicit <a id=...>; every page under docs/ must be reachable from
README.md by following links. Links into runs/ name a command's output folder (docs/
reproduce-report.md is `bellows reproduce`'s report, its plots beside it in runs/) and are
not checked. Prints one line per dead link and exits 1; exit 0 when all are good.
    tests/check_links.py SOURCE_DIR"""
import os
import re
import sys

SKIP_DIRS = {".git", "runs", "__pycache__"}
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
ANCHOR_TAG = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def markdown_files(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not d.startswith("build") and not d.startswith("."))
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.relpath(os.path.join(top, f), root)


def prose_lines(text, blank_code=True):
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None and not blank_code:
            yield n, line
        elif fence is None:
            yield n, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda s: " " * len(s.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading's text: markup dropped, lower case, punctuation but
    hyphens and underscores removed, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line in prose_lines(text, blank_code=False):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                found.add(s if s not in seen else f"{s}-{seen[s]}")
                seen[s] = seen.get(s, 0) + 1
            found.update(ANCHOR_TAG.findall(line))
        cache[path] = found
    return cache[path]


def check(root):
    errors, edges = [], {}
    for page in markdown_files(root):
        full = os.path.join(root, page)
        with open(full, encoding="utf-8") as f:
            text = f.read()
        edges[page] = set()
        for n, line in prose_lines(text):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                where, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(full), where)) if where else full
                rel = os.path.relpath(dest, root)
                if rel == "runs" or rel.startswith("runs" + os.sep):
                    continue
                if rel.startswith(".."):
                    errors.append(f"{page}:{n}: {target}: outside the repository")
                    continue
                if not os.path.exists(dest):
                    errors.append(f"{page}:{n}: {target}: no such file")
                    continue
                if dest.endswith(".md"):
                    edges[page].add(rel)
                if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    errors.append(f"{page}:{n}: {target}: no heading #{anchor} in {rel}")
    # every page of the manual is reachable from the front page
    reached, todo = {"README.md"}, ["README.md"]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in reached:
                reached.add(nxt)
                todo.append(nxt)
    for page in sorted(edges):
        if page.startswith("docs" + os.sep) and page not in reached:
            errors.append(f"{page}: not reachable from README.md by its links")
    return errors


def main():
    if len(sys.argv) != 2:
        print("usage: check_links.py SOURCE_DIR", file=sys.stderr)
        return 2
    errors = check(sys.argv[1])
    for e in errors:
        print(f"dead link: {e}")
    if errors:
        print(f"{len(errors)} dead link(s) in the Markdown files")
        return 1
    print("every relative link and anchor resolves; every page of docs/ is reachable from README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
