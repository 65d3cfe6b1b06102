#!/usr/bin/env python3
"""The zone simulation's module import graph, drawn from the code.

Prints, for `zone-node/src/sim`, each module's imports of its sibling modules
(`super::x`, `crate::sim::x`, `sim::x` inside the sim) and then every circle (strongly
connected component of more than one module), largest first. Usage:

    python3 tests/tools/sim_imports.py [--dot]

`--dot` prints the graph for Graphviz instead. A module is a top-level file or folder of
`sim/` (`items/bag.rs` counts as `items`); comments, unit-test modules
(`#[cfg(test)] mod …` to the end of its file, `tests.rs` files) and the test harness
`sim/testing.rs` are left out: only what the running zone is built from counts.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "zone-node", "src", "sim")


def modules():
    out = {}
    for name in sorted(os.listdir(ROOT)):
        path = os.path.join(ROOT, name)
        if name in ("mod.rs", "testing.rs", "tests.rs"):
            continue
        if name.endswith(".rs"):
            out[name[:-3]] = [path]
        elif os.path.isdir(path):
            files = []
            for d, _, fs in os.walk(path):
                files += [os.path.join(d, f) for f in fs if f.endswith(".rs") and f != "tests.rs"]
            out[name] = sorted(files)
    return out


def imports(mods):
    names = set(mods)
    # `super::x`, `super::super::x` (from a folder module), `crate::sim::x`, `sim::x`.
    pat = re.compile(r"\b(?:(?:super::)+|crate::sim::|sim::)([a-z_][a-z0-9_]*)")
    graph = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            with open(f, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
            for i, line in enumerate(lines):
                if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("mod "):
                    break
                code = line.split("//", 1)[0]
                for target in pat.findall(code):
                    if target in names and target != m:
                        graph[m].add(target)
    return graph


def circles(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out, key=len, reverse=True)


def main():
    graph = imports(modules())
    if "--dot" in sys.argv[1:]:
        print("digraph sim {")
        for m in sorted(graph):
            for t in sorted(graph[m]):
                print(f'  "{m}" -> "{t}";')
        print("}")
        return
    for m in sorted(graph):
        print(f"{m}: {' '.join(sorted(graph[m])) or '-'}")
    cs = circles(graph)
    print()
    if not cs:
        print("no circles")
    for c in cs:
        print(f"circle of {len(c)}: {' '.join(c)}")


if __name__ == "__main__":
    main()
