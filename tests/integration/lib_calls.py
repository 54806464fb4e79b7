#!/usr/bin/env python3
"""lib_calls.py - the call graph between the files of each module, read from the
built objects (nm): file A calls file B when A.o has an undefined symbol that B.o,
in the same folder, defines. Used by layout_wall.sh.

  python3 lib_calls.py BUILDDIR circles   one line per call circle:
                                          "MODULE: a,b,c  a->b(sym) b->a(sym) ..."

A circle is a strongly connected set of two or more files. Objects whose source
file is gone (stale builds) are left out. Exit 0; the caller judges the lines.
"""
import os
import subprocess
import sys


def modules(build):
    mods = {}
    for d, _, files in os.walk(build):
        src = os.path.relpath(d, build)
        objs = [f for f in files if f.endswith('.o')
                and os.path.exists(os.path.join(src, f[:-2] + '.c'))]
        if len(objs) > 1:
            mods[src] = [os.path.join(d, f) for f in sorted(objs)]
    return mods


def symbols(objs):
    """{object: nm lines} from one nm run over all of them (nm -A prefixes each line
    with its object; one process per object took over a minute on a loaded machine)."""
    out = subprocess.run(['nm', '-A'] + objs, capture_output=True, text=True, check=True).stdout
    lines = {o: [] for o in objs}
    for line in out.splitlines():
        o, _, rest = line.partition('.o:')
        if o + '.o' in lines:
            lines[o + '.o'].append(rest)
    return lines


def graph(objs, lines):
    defs, uses = {}, {}
    for o in objs:
        name = os.path.basename(o)[:-2]
        uses[name] = set()
        for line in lines[o]:
            f = line.split()
            if len(f) == 3 and f[1] in 'TDRB':
                defs[f[2]] = name
            elif len(f) == 2 and f[0] == 'U':
                uses[name].add(f[1])
    edges = {a: {} for a in uses}
    for a, syms in uses.items():
        for s in syms:
            b = defs.get(s)
            if b and b != a:
                edges[a].setdefault(b, []).append(s)
    return edges


def circles(edges):
    """Tarjan's strongly connected components with more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    build, what = sys.argv[1], sys.argv[2]
    if what != 'circles':
        sys.exit('usage: lib_calls.py BUILDDIR circles')
    mods = modules(build)
    lines = symbols([o for objs in mods.values() for o in objs])
    for mod, objs in sorted(mods.items()):
        edges = graph(objs, lines)
        for comp in circles(edges):
            ties = ['%s->%s(%s)' % (a, b, ','.join(sorted(edges[a][b])[:3]))
                    for a in comp for b in sorted(edges[a]) if b in comp]
            print('%s: %s  %s' % (mod, ','.join(comp), ' '.join(ties)))


if __name__ == '__main__':
    main()
