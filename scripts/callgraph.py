#!/usr/bin/env python3
"""callgraph.py: which file of a folder calls a function defined in which other file of it, and
the cycles among them (issue 38: sim/driver/'s files must call each other one way).

    scripts/callgraph.py [FOLDER...]   default sim/driver; exit 0 without a cycle, 1 with one
    scripts/callgraph.py --edges ...   also every edge, with the functions it stands for

ctest `callgraph` passes every folder under sim/ (issue 47: no cycle in any of them).

A file calls another when its code (comments and strings aside, scripts/csrc.py) writes
`name(` for a function defined, not static, in the other. Static inline functions of the
folder's headers belong to no file, and are left out."""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csrc  # noqa: E402


def graph(folder):
    """{file: {callee file: sorted function names}} over the folder's .c files."""
    texts = {os.path.basename(p): open(p, errors="replace").read()
             for p in sorted(glob.glob(os.path.join(folder, "*.c")))}
    owner = {}
    for f, t in texts.items():
        for name, _, _, is_static in csrc.functions(t):
            if not is_static:
                owner[name] = f
    edges = {}
    for f, t in texts.items():
        out = {}
        for name in csrc.calls(t):
            g = owner.get(name)
            if g and g != f:
                out.setdefault(g, set()).add(name)
        edges[f] = {g: sorted(v) for g, v in out.items()}
    return edges


def cycles(edges):
    """The strongly connected components of more than one file (Tarjan), each sorted."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def one_cycle(edges, comp):
    """A closed path through the component's first file, for the message."""
    inside = set(comp)
    start = comp[0]
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges.get(v, {})):
            if w == start:
                path = [v]
                while prev[path[-1]]:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w in inside and w not in prev:
                prev[w] = v
                todo.append(w)
    return comp


def check(folder, show_edges):
    """Prints the folder's cycles (and edges if asked); whether it has any."""
    edges = graph(folder)
    if show_edges:
        for f in sorted(edges):
            for g, names in sorted(edges[f].items()):
                print(f"{f} -> {g}: {' '.join(names)}")
    found = cycles(edges)
    for comp in found:
        path = one_cycle(edges, comp)
        print(f"{folder}: cycle among {len(comp)} files: {' '.join(comp)}")
        for a, b in zip(path, path[1:]):
            print(f"  {a} -> {b}: {' '.join(edges[a][b])}")
    if not found:
        print(f"{folder}: {len(edges)} files, no cycle")
    return bool(found)


def main(argv):
    show_edges = "--edges" in argv
    folders = [a for a in argv if a != "--edges"] or ["sim/driver"]
    bad = [f for f in folders if check(f, show_edges)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
