#!/usr/bin/env python3
"""gen_guide_tables.py: the guide's tables of figures from the commands that print them (issue 48
item 8: docs that can't go stale).

    scripts/gen_guide_tables.py [--check] [--bellows BINARY] [FILE.md ...]

A generated block in docs/guide/*.md (or the FILEs given) is written between two markers:

    <!-- bellows-table: COMMAND -->
    ```
    COMMAND
    what COMMAND printed
    ```
    <!-- /bellows-table -->

    <!-- bellows-table md: COMMAND -->

    what COMMAND printed (a Markdown table it formats itself)

    <!-- /bellows-table -->

COMMAND (it may span lines, up to the `-->`) runs under `bash -o pipefail` in the source root,
`bellows` being BINARY (default build/bellows), with two helpers defined:
`bench_all ARGS...` prints the samples/s in all of `bellows bench ARGS` as bench prints it, with
thousands separated ("2,038", "26.57"), and
`md_row CELL...` prints "| CELL | CELL | ... |". The plain form writes a fenced block whose
first line is COMMAND as the reader would type it; the `md` form writes the output as it is.
Wall-clock figures are not reproducible and are normalised out of every block: "12.3 wall s"
becomes "N wall s" and `"wall_s": 0.25` becomes `"wall_s": N`. A command that fails (exit
status not 0) fails the script, naming the file and line.

Without --check the blocks are rewritten in place. With --check nothing is written: each block
that differs from what the binary prints now is shown as a diff, and the exit status is 1
(tests/CMakeLists: the ctest guide_tables, label once). Exit 2 on bad usage or a malformed
marker.

Only commands of seconds are marked (the ctest runs them all: under 30 s of CPU in all). The
guide's tables NOT generated, and why (they keep their "measured on DATE with COMMAND" lines):
- costs-and-validation.md, the `bellows validate` excerpt: 111 runs, 80 s of wall time;
- costs-and-validation.md, the GRACE, DeepLearningExamples and pytorch#74148 tables: rows of
  `bellows validate` (same), laid out by hand;
- costs-and-validation.md, "the same setting under each profile": its `grace-tf` row is
  validate's means over GRACE's variants of a method (QSGD at 64, 128 and 256 levels, with and
  without memory); its `ideal` and `pytorch-v100` rows are `bench` (cheap) and could be;
- benchmarks.md: wall-clock timings of bellows against PyTorch (tests/perf/run_all.sh), not
  reproducible figures;
- schedules.md, the VGG-16 schedule table: tests/perf/run_schedules.sh, 26 runs of 24 steps,
  parameter servers at the transfer level (minutes);
- diloco.md, the `reproduce diloco` tables: 6.7 wall minutes (--quick: about one);
- several-jobs.md, own-traces.md, reproduce.md, run-and-compare.md, sweep-a-grid.md,
  traces-and-replay.md, clusters.md's platform excerpt: compare, sweep, cluster, replay and
  reproduce runs of minutes, or recordings under PyTorch;
- reliability.md: test-suite and valgrind timings (wall clock);
- policies.md, small-models.md, plots.md, schedules.md's list, clusters.md's `--cloud` presets:
  descriptions written by hand, not figures a command prints.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

OPEN = re.compile(r"<!-- bellows-table( md)?:(.*?)-->", re.S)
CLOSE = "<!-- /bellows-table -->"

PRELUDE = r"""
bench_all() {
  bellows bench "$@" | sed -n 's/.*, \([0-9.]*\) samples\/s in all.*/\1/p' |
    awk '{ s = $1; p = index(s, "."); if (p == 0) p = length(s) + 1; i = substr(s, 1, p - 1); r = "";
           while (length(i) > 3) { r = "," substr(i, length(i) - 2) r; i = substr(i, 1, length(i) - 3) }
           print i r substr(s, p) }'
}
md_row() { local c; printf '|'; for c in "$@"; do printf ' %s |' "$c"; done; printf '\n'; }
"""

WALL = [(re.compile(r"[0-9]+(\.[0-9]+)? wall s\b"), "N wall s"),
        (re.compile(r'("wall[a-z_]*": )[-+0-9.eE]+'), r"\1N")]


def usage(msg):
    print("gen_guide_tables.py: " + msg, file=sys.stderr)
    sys.exit(2)


def run(command, root, bindir, where):
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C")
    p = subprocess.run(["bash", "-o", "pipefail", "-c", PRELUDE + command], cwd=root, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print("gen_guide_tables.py: %s: the command exited with %d:\n%s\n%s" %
              (where, p.returncode, command, p.stderr), file=sys.stderr)
        sys.exit(1)
    out = p.stdout
    for pat, rep in WALL:
        out = pat.sub(rep, out)
    return out if out.endswith("\n") or not out else out + "\n"


def generate(path, root, bindir):
    """The file's text with each block regenerated, and how many blocks it has."""
    text = open(path, encoding="utf-8").read()
    out, pos, n = [], 0, 0
    for m in OPEN.finditer(text):
        if m.start() < pos:
            continue
        line = text.count("\n", 0, m.start()) + 1
        where = "%s:%d" % (os.path.relpath(path, root), line)
        end = text.find(CLOSE, m.end())
        if end < 0:
            usage("%s: a bellows-table marker without its %s" % (where, CLOSE))
        if OPEN.search(text, m.end(), end):
            usage("%s: a bellows-table marker inside another block" % where)
        command = m.group(2).strip()
        if not command:
            usage("%s: a bellows-table marker without a command" % where)
        body = run(command, root, bindir, where)
        if not m.group(1):
            body = "```\n" + command + "\n" + body + "```\n"
        else:  # blank lines: the table is a block of its own, the closing marker none of its rows
            body = "\n" + body + "\n"
        out.append(text[pos:m.end()] + "\n" + body)
        pos = end
        n += 1
    out.append(text[pos:])
    return text, "".join(out), n


def main():
    ap = argparse.ArgumentParser(description="the guide's tables from the commands that print "
                                 "them (see the header)")
    ap.add_argument("--check", action="store_true", help="diff instead of writing; exit 1 if stale")
    ap.add_argument("--bellows", default=None, help="the binary (default: build/bellows)")
    ap.add_argument("files", nargs="*", help="the pages (default: docs/guide/*.md)")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.path.abspath(a.bellows or os.path.join(root, "build", "bellows"))
    if not os.access(binary, os.X_OK):
        usage("--bellows %s: not an executable file" % binary)
    files = a.files or sorted(os.path.join(root, "docs", "guide", f)
                              for f in os.listdir(os.path.join(root, "docs", "guide"))
                              if f.endswith(".md"))
    stale = blocks = 0
    with tempfile.TemporaryDirectory() as bindir:
        os.symlink(binary, os.path.join(bindir, "bellows"))
        for path in files:
            if not os.path.isfile(path):
                usage("%s: no such file" % path)
            old, new, n = generate(os.path.abspath(path), root, bindir)
            blocks += n
            if old == new:
                continue
            stale += 1
            rel = os.path.relpath(path, root)
            if a.check:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True), rel, rel + " (now)"))
            else:
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    f.write(new)
                os.replace(path + ".tmp", path)
                print("gen_guide_tables.py: rewrote %s" % rel)
    if a.check and stale:
        print("FAIL: %d page(s) of docs/guide/ hold tables the binary no longer prints; bring them "
              "up to date:\n  scripts/gen_guide_tables.py" % stale)
        return 1
    print("gen_guide_tables.py: %d generated block(s) in %d page(s)%s" %
          (blocks, len(files), ", as the binary prints them" if a.check else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
