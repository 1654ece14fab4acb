#!/usr/bin/env python3
"""The import rules of the workspace: no cycle between modules, and the
explorer's layers (kit, planning service, features) import one way.

Run: `python3 scripts/module_graph.py` (all crates; exit 1 on a violation),
`python3 scripts/module_graph.py --self-test` (the parser on small strings),
`python3 scripts/module_graph.py --only explorer` (one part; the parts are
core, cli, profiler, explorer). scripts/test.sh runs both.

Why: data flows one way (model → schedule → simulator → solvers → planner →
CLI/explorer). A cycle between two files means neither can be read, moved or
tested without the other; a layer that calls back up (a vocabulary naming
the algorithms that import it) is how such a circle starts.

What is an edge A → B (A, B files, i.e. modules; inline `mod x { }` blocks
belong to their file):
  * every path that names a module or an item of one, written as a `use`
    line (grouped trees `use a::{b, c::d}` included, `pub use` re-exports
    included) or inline in code (`crate::x::f()`), starting at `crate::`,
    `super::`, `self::` (or `$crate::`), or at the name of a child module
    the current module declares (`api::Budget` in solvers/mod.rs);
  * the path is resolved to the file that DEFINES the item: through the
    module tree, then through the `use` bindings of the module it reaches
    (re-exports and private imports, explicit or glob), so a child naming
    `super::Budget` that its parent merely re-exports from `api.rs` depends
    on api.rs, not on the parent; a child naming an item its parent
    defines (or the parent module itself, `use super::*`) depends on the
    parent;
  * a parent that only declares `mod child;` does not depend on the child
    (declaring is not importing); a parent that names the child's items
    (`pub use child::X`, `child::f()`) does;
  * comments (doc links included) and string literals are not code and
    make no edge; paths into other crates (`remat_core::…`) make none.
  * code under #[cfg(test)] (test modules, test files, test-only `use`
    lines) makes no edge: a test may use any layer to check a lower one
    (schedule's tests run the simulator); what ships has no cycle.
Rules:
  1. no cycle between modules, at every level of the module tree: the
     modules a module declares, each taken with all it owns (a "unit":
     dynamic/ is dynamic/mod.rs and every file under it), form no cycle of
     any length. So two sibling files that name each other fail, and so
     does api.rs → dynamic/ → api.rs whichever file of dynamic/ names
     api.rs. The one kind of file cycle this lets through is a module
     split into files closed through its own parent (hong/mod.rs calls
     hong/chen.rs, which uses a helper hong/mod.rs defines): seen from
     outside it is one module, and its parts are not layers. A cycle is
     printed as a path of units (by their owner's file), each step with
     the file, line and path that made it;
  2. explorer: files under src/kit/ and the planning protocol and service
     (PLANNING below) reach no file under src/features/, directly or
     through other files; nor does the kit reach the app state (src/state/):
     its charts and widgets get what they show as props;
  3. explorer: no file under src/features/<a>/ imports one under
     src/features/<b>/ (b ≠ a);
  4. explorer: the pure folders (PLANNING) reach none of the kit, the
     app state, `io` or the app (WEB): they build and test on the host;
  5. explorer: no file at src/ but lib.rs and main.rs (every concept in a
     named folder), and no two modules with one name (a file's stem, a
     mod.rs by its folder's; `tests` aside), so a name says one place.
Only the explorer has an allow-list (EXPLORER_ALLOWED_EDGES): edges that
close cycles still there until its files are reorganised by feature. An
allowed edge that is gone or no longer on a cycle fails too, so the list
only shrinks.
"""

import os
import re
import sys
from collections import defaultdict, deque

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# Each part: a name and its crate roots (file, crate name). A binary next to
# a library is its own crate: its `crate::` is the binary's root.
PARTS = [
    ("core", [("crates/remat-core/src/lib.rs", "remat_core")]),
    ("cli", [("crates/remat-cli/src/main.rs", "remat")]),
    # src/torch/ only builds with --features torch; the graph reads it all.
    ("profiler", [("crates/remat-profiler/src/main.rs", "remat_profile")]),
    (
        "explorer",
        [
            ("src/lib.rs", "remat_explorer"),
            ("src/main.rs", "remat_explorer_bin"),
            ("src/bin/worker.rs", "worker"),
        ],
    ),
]
# Every .rs file under these folders must be reached from a crate root by
# `mod` declarations, so no file escapes the check unseen.
SOURCE_DIRS = {
    "core": "crates/remat-core/src",
    "cli": "crates/remat-cli/src",
    "profiler": "crates/remat-profiler/src",
    "explorer": "src",
}

# The explorer's pure folders (the planning protocol and service, a
# measured run, what the page teaches, sizing, text): they reach no
# feature (rule 2), nor the kit, the app state, `io` or the app (rule 4).
# Prefixes of paths relative to the repository root.
PLANNING = ("src/planning/", "src/measurement/", "src/teaching/", "src/sizing/", "src/text/")
WEB = ("src/kit/", "src/state/", "src/io/", "src/app/")
# Files that may sit at the explorer's root (rule 5).
ROOT_FILES = ("src/lib.rs", "src/main.rs")
KIT = ("src/kit/",)
FEATURES = "src/features/"
STATE = "src/state/"

# Edges (from, to) that close explorer cycles remaining until the by-feature
# reorganisation (issue 26, item 10), which moves these files; each with its
# reason. Nothing else has an allow-list.
EXPLORER_ALLOWED_EDGES = {}

KEYWORDS_ITEM = {"struct", "enum", "fn", "trait", "type", "const", "static", "union", "mod"}


# ---------------------------------------------------------------- lexing


def strip_code(text):
    """Replace comments, string and char literals by spaces (newlines kept,
    so line numbers stay right)."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        return "".join("\n" if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        else:
            m = re.compile(r'b?r(#*)"').match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                end = text.find('"' + m.group(1), m.end())
                end = n if end < 0 else end + 1 + len(m.group(1))
                out.append(blank(text[i:end]))
                i = end
                continue
            if c == '"' or (c == "b" and text.startswith('b"', i) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_"))):
                j = i + (2 if c == "b" else 1)
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                out.append(blank(text[i : j + 1]))
                i = j + 1
                continue
            if c == "'":
                # A char literal ('a', '\n', '\u{1F600}'), not a lifetime ('a).
                m = re.compile(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'").match(text, i)
                if m:
                    out.append(blank(m.group(0)))
                    i = m.end()
                    continue
            out.append(c)
            i += 1
    return "".join(out)


TOKEN = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*|::|\S")


def tokens(text):
    """(token, line) pairs of code with comments and strings removed."""
    code = strip_code(text)
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", code)]
    out = []
    li = 0
    for m in TOKEN.finditer(code):
        while li + 1 < len(line_starts) and line_starts[li + 1] <= m.start():
            li += 1
        out.append((m.group(0), li + 1))
    return out


def is_ident(t):
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t))


# ---------------------------------------------------------------- parsing


class Module:
    """One module: a file, or an inline `mod x { }` block inside one."""

    def __init__(self, path, file, parent):
        self.path = path  # tuple of names from the crate root
        self.file = file  # repository-relative file that holds it
        self.parent = parent
        self.children = {}  # name -> Module
        self.child_decls = []  # (name, line) of `mod name;`
        self.defines = set()  # item names defined at module level
        self.uses = []  # (segments, alias or None, glob, line, public)
        self.refs = []  # (segments, line) paths naming modules
        self.test = parent.test if parent else False  # under #[cfg(test)]


def parse_use_tree(toks, i):
    """Parse a use tree starting at toks[i]; return (list of (segments,
    alias, glob, line)), index after the tree."""
    prefix = []
    line = toks[i][1] if i < len(toks) else 0
    while i < len(toks):
        t = toks[i][0]
        if t == "::":
            i += 1
            continue
        if t == "{":
            i += 1
            out = []
            while i < len(toks) and toks[i][0] != "}":
                if toks[i][0] == ",":
                    i += 1
                    continue
                sub, i = parse_use_tree(toks, i)
                for segs, alias, glob, ln in sub:
                    out.append((prefix + segs, alias, glob, ln))
            return out, i + 1
        if t == "*":
            return [(prefix, None, True, line)], i + 1
        if is_ident(t) or t == "$crate":
            prefix.append(t)
            i += 1
            if i < len(toks) and toks[i][0] == "as":
                alias = toks[i + 1][0]
                return [(prefix, alias, False, line)], i + 2
            if i < len(toks) and toks[i][0] == "::":
                continue
            return [(prefix, None, False, line)], i
        return [(prefix, None, False, line)], i
    return [(prefix, None, False, line)], i


def parse_file(text, module, new_module):
    """Fill `module` (and inline modules, made by new_module(name, parent))
    from the file's text."""
    toks = tokens(text)
    stack = [(module, 0)]  # (module, brace depth of its body)
    depth = 0
    i = 0
    n = len(toks)
    # Code under #[cfg(test)] (an item: up to its `;` or its closing `}`)
    # is left out: tests may use any layer to check a lower one.
    test_at = None  # brace depth of the #[cfg(test)] item being read
    test_open = False  # its body `{` has been seen
    while i < n:
        t, line = toks[i]
        cur, body = stack[-1]
        at_module_level = depth == body
        if t == "#" and i + 1 < n and toks[i + 1][0] == "[":
            j, idents, nest = i + 1, [], 0
            while j < n:
                if toks[j][0] == "[":
                    nest += 1
                elif toks[j][0] == "]":
                    nest -= 1
                    if nest == 0:
                        break
                elif is_ident(toks[j][0]):
                    idents.append(toks[j][0])
                j += 1
            if idents[:1] == ["cfg"] and "test" in idents and "not" not in idents and test_at is None:
                test_at, test_open = depth, False
            i = j + 1
            continue
        in_test = test_at is not None
        if t == "{":
            depth += 1
            if in_test and depth == test_at + 1:
                test_open = True
            i += 1
            continue
        if t == "}":
            depth -= 1
            if len(stack) > 1 and depth < stack[-1][1]:
                stack.pop()
            if in_test and test_open and depth == test_at:
                test_at = None
            i += 1
            continue
        if t == ";" and in_test and not test_open and depth == test_at:
            test_at = None
            i += 1
            continue
        if t == "mod" and i + 2 < n and is_ident(toks[i + 1][0]):
            name, nxt = toks[i + 1][0], toks[i + 2][0]
            if at_module_level:
                cur.defines.add(name)
            if nxt == ";":
                cur.child_decls.append((name, line, in_test))
                if in_test and depth == test_at:
                    test_at = None
                i += 3
                continue
            if nxt == "{":
                child = new_module(name, cur)
                child.test = in_test or cur.test
                depth += 1
                if in_test and depth == test_at + 1:
                    test_open = True
                stack.append((child, depth))
                i += 3
                continue
        if in_test and t != "use" and not (at_module_level and t in KEYWORDS_ITEM):
            i += 1
            continue
        if t == "use" and in_test:
            j = i
            while j < n and toks[j][0] != ";":
                j += 1
            i = j
            continue
        if t == "use" and (i == 0 or toks[i - 1][0] not in ("::",)):
            public = i > 0 and (toks[i - 1][0] == "pub" or (toks[i - 1][0] == ")" and _pub_paren(toks, i - 1)))
            trees, j = parse_use_tree(toks, i + 1)
            for segs, alias, glob, ln in trees:
                cur.uses.append((segs, alias, glob, ln, public))
            i = j
            continue
        if at_module_level and t in KEYWORDS_ITEM and i + 1 < n and is_ident(toks[i + 1][0]):
            name = toks[i + 1][0]
            if name not in KEYWORDS_ITEM and name not in ("unsafe", "extern", "async", "_"):
                cur.defines.add(name)
        if at_module_level and t == "macro_rules" and i + 2 < n and toks[i + 1][0] == "!":
            cur.defines.add(toks[i + 2][0])
        # An inline path: the start of a path (not after `::`) at crate,
        # super, self or a declared child module, followed by `::`.
        if (t in ("crate", "$crate", "super", "self") or is_ident(t)) and i + 1 < n and toks[i + 1][0] == "::" and (i == 0 or toks[i - 1][0] != "::"):
            segs = [t]
            j = i + 1
            while j + 1 < n and toks[j][0] == "::" and is_ident(toks[j + 1][0]):
                segs.append(toks[j + 1][0])
                j += 2
            cur.refs.append((segs, line))
            i = j
            continue
        i += 1


def _pub_paren(toks, k):
    """toks[k] is ')': is it the end of `pub(crate)`, `pub(super)`, `pub(in …)`?"""
    j = k
    while j >= 0 and toks[j][0] != "(":
        j -= 1
    return j > 0 and toks[j - 1][0] == "pub"


# ---------------------------------------------------------------- crates


class Crate:
    def __init__(self, root_file, read):
        self.read = read  # path -> text
        self.modules = []
        self.files = set()
        self.root = self._load(root_file, (), None)

    def _new_inline(self, name, parent):
        m = Module(parent.path + (name,), parent.file, parent)
        parent.children[name] = m
        self.modules.append(m)
        return m

    def _load(self, file, path, parent, test=False):
        m = Module(path, file, parent)
        m.test = m.test or test
        self.modules.append(m)
        self.files.add(file)
        parse_file(self.read(file), m, self._new_inline)
        self._load_children(m)
        return m

    def _load_children(self, m):
        paths = path_attributes(self.read(m.file) or "") if m.parent is None or m.parent.file != m.file else {}
        for name, line, test in m.child_decls:
            d = _owned_dir(m)
            # `#[path = "p"] mod name;` in a file: p, from the file's folder.
            given = [os.path.normpath(os.path.join(os.path.dirname(m.file), paths[name]))] if name in paths else []
            for cand in given or (os.path.join(d, name + ".rs"), os.path.join(d, name, "mod.rs")):
                if self.read(cand) is not None:
                    child = self._load(cand, m.path + (name,), m, test)
                    m.children[name] = child
                    break
            else:
                raise SystemExit(f"{m.file}:{line}: mod {name}; names no file under {d}")
        for inline in [c for c in m.children.values() if c.file == m.file]:
            self._load_children(inline)


PATH_ATTRIBUTE = re.compile(
    r'#\[\s*path\s*=\s*"([^"]+)"\s*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*;')


def path_attributes(text):
    """{name: path} of the file's `#[path = "path"] mod name;` lines."""
    return {m.group(2): m.group(1) for m in PATH_ATTRIBUTE.finditer(text)}


def _owned_dir(m):
    """The folder where `mod x;` of module m finds x.rs."""
    names = []
    while m.parent is not None and m.parent.file == m.file:
        names.append(m.path[-1])
        m = m.parent
    base = os.path.dirname(m.file)
    stem = os.path.splitext(os.path.basename(m.file))[0]
    if m.parent is None or stem == "mod":
        d = base
    else:
        d = os.path.join(base, stem)
    for name in reversed(names):
        d = os.path.join(d, name)
    return d


class Resolver:
    """Resolves paths to the file defining what they name."""

    def __init__(self, crate):
        self.crate = crate

    def start(self, scope, first):
        if first in ("crate", "$crate"):
            return self.crate.root
        if first == "super":
            return scope.parent
        if first == "self":
            return scope
        return scope.children.get(first)

    def resolve(self, scope, segs, seen=None):
        """The module defining the item `segs` names from `scope` (a
        Module), or None when the path leaves the crate."""
        if not segs:
            return None
        mod = self.start(scope, segs[0])
        if mod is None:
            return None
        return self.walk(mod, segs[1:], seen or set())

    def walk(self, mod, rest, seen):
        i = 0
        while i < len(rest) and rest[i] == "super":
            mod = mod.parent or mod
            i += 1
        rest = rest[i:]
        if not rest:
            return mod
        name = rest[0]
        if name == "self":
            return self.walk(mod, rest[1:], seen)
        if name in mod.children:
            return self.walk(mod.children[name], rest[1:], seen)
        if name in mod.defines:
            return mod
        key = (id(mod), name)
        if key in seen:
            return mod
        seen = seen | {key}
        # Through the module's `use` bindings, named ones first.
        for segs, alias, glob, _, _ in mod.uses:
            if glob:
                continue
            bound = alias or (segs[-1] if segs and segs[-1] != "self" else (segs[-2] if len(segs) > 1 else None))
            if bound == name:
                target_segs = segs[:-1] if segs[-1] == "self" else segs
                target = self.resolve(mod, target_segs, seen)
                if target is None:
                    return None  # an item of another crate: no edge
                return self.walk_item(target, target_segs, rest[1:], seen, mod)
        for segs, alias, glob, _, _ in mod.uses:
            if not glob:
                continue
            src = self.resolve(mod, segs, seen)
            if src is None or src is mod:
                continue
            if self.provides(src, name, seen):
                return self.walk(src, rest, seen)
        return mod  # not found: the module itself (an edge to its file)

    def walk_item(self, target, target_segs, rest, seen, _origin):
        # target is the module that the binding's path resolved to; if the
        # binding named a module, continue inside it.
        return self.walk(target, rest, seen) if rest and target.path[-1:] == tuple(target_segs[-1:]) else target

    def provides(self, mod, name, seen):
        if name in mod.children or name in mod.defines:
            return True
        for segs, alias, glob, _, _ in mod.uses:
            if glob:
                continue
            bound = alias or (segs[-1] if segs else None)
            if bound == name:
                return True
        for segs, alias, glob, _, _ in mod.uses:
            if glob:
                key = (id(mod), "*" + name)
                if key in seen:
                    continue
                src = self.resolve(mod, segs, seen | {key})
                if src is not None and src is not mod and self.provides(src, name, seen | {key}):
                    return True
        return False


def build_graph(crate):
    """edges: {from_file: {to_file: (line, path text)}}, one example each."""
    res = Resolver(crate)
    edges = defaultdict(dict)
    for m in crate.modules:
        if m.test:
            continue
        starts = {"crate", "$crate", "super", "self"} | set(m.children)
        items = [(segs, line) for segs, _, _, line, _ in m.uses]
        items += m.refs
        for segs, line in items:
            if not segs or segs[0] not in starts:
                continue
            target = res.resolve(m, segs)
            if target is None or target.file == m.file:
                continue
            edges[m.file].setdefault(target.file, (line, "::".join(segs)))
    return edges


# ---------------------------------------------------------------- cycles


def sccs(nodes, edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def shortest_cycle_through(node, comp, edges):
    """A shortest cycle node → … → node inside comp (BFS)."""
    comp = set(comp)
    prev = {node: None}
    q = deque([node])
    while q:
        v = q.popleft()
        for w in sorted(edges.get(v, {})):
            if w not in comp:
                continue
            if w == node:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [node]
            if w not in prev:
                prev[w] = v
                q.append(w)
    return None


def cycles(edges):
    """Cycles as file paths: for each strongly connected component of more
    than one file, a shortest cycle through each of its files (duplicates
    removed)."""
    nodes = set(edges) | {t for d in edges.values() for t in d}
    found = []
    for comp in sccs(nodes, edges):
        if len(comp) < 2:
            continue
        seen = set()
        for f in comp:
            cyc = shortest_cycle_through(f, comp, edges)
            key = frozenset(zip(cyc, cyc[1:]))
            if key not in seen:
                seen.add(key)
                found.append((comp, cyc))
    return found


def reach_path(src, targets, edges):
    """A path from src to a file satisfying targets(file), or None."""
    prev = {src: None}
    q = deque([src])
    while q:
        v = q.popleft()
        for w in sorted(edges.get(v, {})):
            if w in prev:
                continue
            prev[w] = v
            if targets(w):
                path = [w]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path))
            q.append(w)
    return None


def show_path(path, edges):
    lines = []
    for a, b in zip(path, path[1:]):
        line, text = edges[a][b]
        lines.append(f"    {a}:{line}  {text}  →  {b}")
    return "\n".join(lines)


# ---------------------------------------------------------------- checks


def feature_of(f):
    if not f.startswith(FEATURES):
        return None
    return f[len(FEATURES) :].split("/")[0]


def unit_cycles(edges, parent_of):
    """Rule 1, at every level of the module tree: the children of one
    module, each taken with all it owns (a unit), form no cycle. Returns
    (unit path, evidence) pairs: units by their owner's file, evidence the
    file edge behind each step."""
    children = defaultdict(list)
    for f, p in parent_of.items():
        if p is not None:
            children[p].append(f)

    def unit_map(owner):
        m = {}
        for c in children[owner]:
            stack = [c]
            while stack:
                f = stack.pop()
                m[f] = c
                stack.extend(children[f])
        return m

    found = []
    for owner in sorted(children):
        unit = unit_map(owner)
        uedges = defaultdict(dict)
        for a, d in edges.items():
            for b, (line, text) in d.items():
                ua, ub = unit.get(a), unit.get(b)
                if ua and ub and ua != ub:
                    uedges[ua].setdefault(ub, (a, line, text, b))
        for comp, cyc in cycles(uedges):
            found.append((cyc, [uedges[u][v] for u, v in zip(cyc, cyc[1:])], children))
    return found


def show_unit_cycle(cyc, evidence, children):
    def unit(f):
        return f + (" (and the files it owns)" if children.get(f) else "")

    lines = [" → ".join(unit(f) for f in cyc)]
    for a, line, text, b in evidence:
        lines.append(f"    {a}:{line}  {text}  →  {b}")
    return "\n".join(lines)


def check_part(name, roots, read, allowed=None, out=print, src_dir=None):
    """Check one part; return the number of violations."""
    bad = 0
    edges = defaultdict(dict)
    reached = set()
    parent_of = {}
    for root, _ in roots:
        if read(root) is None:
            continue
        crate = Crate(root, read)
        reached |= crate.files
        for m in crate.modules:
            if m.parent is None or m.parent.file != m.file:
                parent_of[m.file] = m.parent.file if m.parent else None
        for a, d in build_graph(crate).items():
            for b, ev in d.items():
                edges[a].setdefault(b, ev)
    # Fails if a file is not reached from a crate root by `mod` lines (a
    # module the graph would silently skip). Mutation run: an empty
    # crates/remat-core/src/stray.rs made it fail ("reached by no `mod`").
    if src_dir and os.path.isdir(os.path.join(ROOT, src_dir)):
        for dirpath, _, files in os.walk(os.path.join(ROOT, src_dir)):
            for fn in files:
                rel = os.path.relpath(os.path.join(dirpath, fn), ROOT)
                if fn.endswith(".rs") and rel not in reached:
                    out(f"[{name}] {rel}: reached by no `mod` declaration from a crate root")
                    bad += 1
    allowed = allowed or {}

    def without(skip):
        return {a: {b: ev for b, ev in d.items() if (a, b) not in skip} for a, d in edges.items()}

    # Rule 1. Fails on any cycle left once the allowed edges are removed.
    # Mutation run: `pub use super::dynamic::solve as dynamic_solve;` added
    # to solvers/api.rs made it fail (api.rs → dynamic/ → api.rs); units
    # not contracted (`m[f] = f` in unit_cycles) made the self-test fail.
    reported = set()
    for cyc, evidence, children in unit_cycles(without(allowed), parent_of):
        out(f"[{name}] cycle: " + show_unit_cycle(cyc, evidence, children))
        reported.add(tuple(cyc))
        bad += 1
    # The allow-list only shrinks: an allowed edge that is gone, or that
    # closes no cycle when put back alone, fails. Mutation run: the second
    # test replaced by `False` made the self-test fail.
    if allowed:
        base = len(unit_cycles(without(allowed), parent_of))
        for (a, b), why in sorted(allowed.items()):
            if b not in edges.get(a, {}):
                out(f"[{name}] allow-list: {a} → {b} is gone; remove it from EXPLORER_ALLOWED_EDGES")
                bad += 1
            elif len(unit_cycles(without(set(allowed) - {(a, b)}), parent_of)) == base:
                out(f"[{name}] allow-list: {a} → {b} closes no cycle any more; remove it")
                bad += 1
        kept = [c for c in unit_cycles(edges, parent_of) if tuple(c[0]) not in reported]
        if kept:
            out(f"[{name}] cycles kept by EXPLORER_ALLOWED_EDGES (to go with the by-feature reorganisation):")
            for cyc, evidence, children in kept:
                out("    " + show_unit_cycle(cyc, evidence, children).replace("\n", "\n    "))
    if name == "explorer":
        # Rule 2. Fails if the kit or the planning service reaches a feature.
        # Mutation run: `if p:` replaced by `if False:` failed the self-test.
        for f in sorted(reached):
            if f.startswith(KIT) or f.startswith(PLANNING):
                p = reach_path(f, lambda g: feature_of(g) is not None, edges)
                if p:
                    out(f"[{name}] {f} reaches the feature {feature_of(p[-1])}:")
                    out(show_path(p, edges))
                    bad += 1
            # Fails if a kit file reads the app state. Mutation run: the
            # test replaced by `if False:` failed the self-test.
            if f.startswith(KIT):
                p = reach_path(f, lambda g: g.startswith(STATE), edges)
                if p:
                    out(f"[{name}] {f} reaches the app state ({p[-1]}):")
                    out(show_path(p, edges))
                    bad += 1
        # Rule 3. Fails if a feature names another feature's file. Mutation
        # run: its test replaced by `if False:` failed the self-test.
        for a, d in sorted(edges.items()):
            for b, (line, text) in sorted(d.items()):
                fa, fb = feature_of(a), feature_of(b)
                if fa and fb and fa != fb:
                    out(f"[{name}] {a}:{line}: the feature {fa} imports the feature {fb} ({text} → {b})")
                    bad += 1
        # Rule 4. Fails if a pure folder reaches the web side. Mutation
        # run: the test replaced by `if False:` failed the self-test.
        for f in sorted(reached):
            if f.startswith(PLANNING):
                p = reach_path(f, lambda g: g.startswith(WEB), edges)
                if p:
                    out(f"[{name}] {f} is pure but reaches {p[-1]}:")
                    out(show_path(p, edges))
                    bad += 1
        # Rule 5. Fails on a loose file at src/ or two modules of one
        # name. Mutations run: each test replaced by `if False:` failed the
        # self-test.
        by_name = defaultdict(list)
        for f in sorted(reached):
            if f.startswith("src/") and f.count("/") == 1 and f not in ROOT_FILES and not f.startswith("src/bin/"):
                out(f"[{name}] {f}: a loose file at src/; put it in the folder of its concept")
                bad += 1
            stem = os.path.basename(os.path.dirname(f)) if f.endswith("/mod.rs") else os.path.basename(f)[:-3]
            if stem not in ("tests", "lib", "main"):
                by_name[stem].append(f)
        for stem, fs in sorted(by_name.items()):
            if len(fs) > 1:
                out(f"[{name}] two modules named `{stem}`: {', '.join(fs)}")
                bad += 1
    return bad


def disk_reader(path):
    p = os.path.join(ROOT, path)
    if not os.path.isfile(p):
        return None
    with open(p, encoding="utf-8") as f:
        return f.read()


# ---------------------------------------------------------------- python

# The Python package: its modules import one another without a cycle, and
# no module imports another's private name (`_x`): what crosses a module is
# named as part of it. `_solver` is the compiled extension (a module, not a
# name inside one).
PYTHON_PACKAGE = "python/remat_torch"
PYTHON_PRIVATE_OK = {"_solver"}


def python_edges(files):
    """{module: {imported module: [(line, names)]}} from every `from .x
    import …` and `from . import x`, at any depth (function-level imports
    included), read with `ast`."""
    import ast

    mods = {os.path.basename(f)[:-3] for f in files}
    edges = defaultdict(lambda: defaultdict(list))
    for f, text in files.items():
        a = os.path.basename(f)[:-3]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [n.name for n in node.names]
                if node.module:
                    edges[a][node.module.split(".")[0]].append((node.lineno, names))
                else:
                    for n in names:
                        if n in mods:
                            edges[a][n].append((node.lineno, [n]))
    return edges


def check_python(files, out=print):
    """Fails on an import cycle between the package's modules or a private
    name imported from another module; returns the number of violations."""
    bad = 0
    edges = python_edges(files)
    # Mutation run: `if n.startswith("_")` replaced by `if False` failed
    # the self-test.
    for a, d in sorted(edges.items()):
        for b, uses in sorted(d.items()):
            for line, names in uses:
                for n in names:
                    if n.startswith("_") and n not in PYTHON_PRIVATE_OK and n != "__version__":
                        out(f"[python] {a}.py:{line}: imports the private name {n} of {b}.py")
                        bad += 1
    # A cycle: a module that reaches itself. Mutation run: the search's
    # `return path` replaced by `return None` failed the self-test.
    def find(start):
        stack, seen = [(start, [start])], set()
        while stack:
            m, path = stack.pop()
            for n in sorted(edges.get(m, {})):
                if n == start:
                    return path + [n]
                if n not in seen:
                    seen.add(n)
                    stack.append((n, path + [n]))
        return None

    reported = set()
    for m in sorted(edges):
        path = find(m)
        if path and frozenset(path) not in reported:
            reported.add(frozenset(path))
            steps = " → ".join(f"{x}.py" for x in path)
            out(f"[python] cycle: {steps}")
            for x, y in zip(path, path[1:]):
                line, names = edges[x][y][0]
                out(f"    {x}.py:{line}  from .{y} import {', '.join(names)}")
            bad += 1
    return bad


def python_files():
    d = os.path.join(ROOT, PYTHON_PACKAGE)
    out = {}
    for fn in sorted(os.listdir(d)):
        if fn.endswith(".py"):
            with open(os.path.join(d, fn), encoding="utf-8") as f:
                out[os.path.join(PYTHON_PACKAGE, fn)] = f.read()
    return out


def main(argv):
    only = None
    if "--only" in argv:
        only = argv[argv.index("--only") + 1]
    total = 0
    for name, roots in PARTS:
        if only and name != only:
            continue
        allowed = EXPLORER_ALLOWED_EDGES if name == "explorer" else None
        bad = check_part(name, roots, disk_reader, allowed, src_dir=SOURCE_DIRS[name])
        print(f"[{name}] {'ok' if not bad else f'{bad} violation(s)'}")
        total += bad
    if not only or only == "python":
        bad = check_python(python_files())
        print(f"[python] {'ok' if not bad else f'{bad} violation(s)'}")
        total += bad
    return 1 if total else 0


# ---------------------------------------------------------------- self-test


def self_test():
    """The parser and the rules on small crates held in strings. Each case
    says what a broken parser would do to it."""

    def run(files, name="t", roots=("src/lib.rs",), allowed=None):
        lines = []
        bad = check_part(name, [(r, "t") for r in roots], files.get, allowed, out=lines.append)
        return bad, "\n".join(lines)

    def graph(files):
        return build_graph(Crate("src/lib.rs", files.get))

    # Comments and strings make no edge; nested block comments end right.
    # Fails if strip_code leaves `crate::b` of the comment or string.
    g = graph({
        "src/lib.rs": "mod a; mod b;",
        "src/a.rs": '/* /* crate::b::X */ */ // crate::b::X\nconst S: &str = "crate::b::X"; const R: &str = r#"crate::b"#; fn f() { let c = \'"\'; }',
        "src/b.rs": "pub struct X;",
    })
    assert dict(g) == {}, g

    # A deliberate cycle a → b → c → a, through a grouped use, an inline
    # path and a `super::` path. Fails if any of the three forms is missed.
    # Mutations run, each failed here: inline paths not recorded
    # (`cur.refs.append` dropped); a `{` group read as a glob.
    files = {
        "src/lib.rs": "mod a; mod b; mod c;",
        "src/a.rs": "use crate::{x::y, b::{self, Thing as T}};\npub fn fa() {}",
        "src/b.rs": "pub struct Thing; fn g() { crate::c::fc(); }",
        "src/c.rs": "mod inner { fn h() { super::super::a::fa(); } }\npub fn fc() {}",
    }
    bad, text = run(files)
    assert bad == 1 and "src/a.rs → src/b.rs → src/c.rs → src/a.rs" in text, text

    # Declaring `mod child;` is no edge; a child using its parent's item is
    # one (child → parent); a child using an item its parent re-exports
    # depends on the defining file. Fails if `mod` lines were edges (a
    # cycle parent ↔ child) or if re-exports were not followed.
    files = {
        "src/lib.rs": "mod solvers;",
        "src/solvers/mod.rs": "mod api; mod dynamic; pub use api::*; pub use dynamic::solve;\npub struct Local;",
        "src/solvers/api.rs": "pub struct Budget;",
        "src/solvers/dynamic.rs": "use super::{Budget, Local};\npub fn solve(_: Budget) {}",
    }
    g = graph(files)
    assert set(g["src/solvers/dynamic.rs"]) == {"src/solvers/api.rs", "src/solvers/mod.rs"}, g
    assert set(g["src/solvers/mod.rs"]) == {"src/solvers/api.rs", "src/solvers/dynamic.rs"}, g
    # dynamic → mod (Local) and mod → dynamic (pub use): a module split in
    # files, closed through its own parent: allowed (one unit from outside).
    bad, text = run(files)
    assert bad == 0, text
    # Siblings, or a unit and its parent's sibling, are no such thing: a
    # cycle api → dynamic/ → api, through dynamic's own file dynamic/x.rs.
    # Fails if the units were not contracted (the cycle spans 3 files).
    files = {
        "src/lib.rs": "mod solvers;",
        "src/solvers/mod.rs": "mod api; mod dynamic;",
        "src/solvers/api.rs": "pub struct Budget; pub const ALL: &[fn()] = &[super::dynamic::solve];",
        "src/solvers/dynamic/mod.rs": "mod x; pub use x::solve;",
        "src/solvers/dynamic/x.rs": "use crate::solvers::api::Budget; pub fn solve() {}",
    }
    bad, text = run(files)
    assert bad == 1 and "src/solvers/api.rs → src/solvers/dynamic/mod.rs (and the files it owns) → src/solvers/api.rs" in text, text
    assert "src/solvers/dynamic/x.rs:1  crate::solvers::api::Budget" in text, text
    # Code under #[cfg(test)] makes no edge. Mutation run: a test `use`
    # not ended at its `;` failed the last case. Fails if the test regions
    # were not skipped (or if the skip ran past the test item).
    files["src/solvers/api.rs"] = (
        "pub struct Budget;\n#[cfg(test)]\nmod tests { fn f() { super::super::dynamic::solve(); } }\n"
        "#[cfg(test)]\nuse super::dynamic::solve;\n#[cfg(test)] fn g() { super::dynamic::solve() }\n"
    )
    bad, text = run(files)
    assert bad == 0, text
    files["src/solvers/api.rs"] += "fn after() { super::dynamic::solve() }"
    bad, text = run(files)
    assert bad == 1, text
    # A test-only `use` ends at its `;`: the code right after it counts.
    files["src/solvers/api.rs"] = "#[cfg(test)]\nuse super::dynamic::solve;\nfn after() { super::dynamic::solve() }"
    bad, text = run(files)
    assert bad == 1, text

    # `mod tests { use super::*; }` inline is the same file: no edge.
    g = graph({"src/lib.rs": "pub fn f() {}\n#[cfg(test)]\nmod tests { use super::*; }"})
    assert dict(g) == {}, g

    # The vocabulary naming its users: api → dynamic → api, through `pub
    # use` of a function. Fails if `pub use` lines made no edge.
    bad, text = run({
        "src/lib.rs": "mod api; mod dynamic;",
        "src/api.rs": "pub use crate::dynamic::solve_dynamic; pub struct Budget;",
        "src/dynamic.rs": "use crate::api::Budget; pub fn solve_dynamic(_: Budget) {}",
    })
    assert bad == 1 and "src/api.rs" in text and "src/dynamic.rs" in text, text

    # A file no `mod` line reaches is reported. Fails if the walk of the
    # module tree accepted missing files silently.
    # (checked in check_part against the disk only; here: a missing file
    # named by `mod` stops the run.)
    try:
        graph({"src/lib.rs": "mod gone;"})
        raise AssertionError("mod gone; should name no file")
    except SystemExit as e:
        assert "names no file" in str(e)

    # `#[path = "..."] mod x;` finds its file where the attribute says, and
    # its `use` lines count. Fails if the attribute were ignored (the run
    # stops: "mod oracle; names no file") or its file not walked.
    bad, text = run({
        "src/lib.rs": "mod solver;",
        "src/solver/mod.rs": '#[cfg(test)]\n#[path = "tests/oracle.rs"]\npub mod oracle;',
        "src/solver/tests/oracle.rs": "use crate::solver::oracle::Loop;",
    })
    assert bad == 0, text

    # Explorer rules: the kit reaching a feature (through another file), a
    # feature importing another. Fails if either rule were not checked.
    files = {
        "src/lib.rs": "mod kit; mod features; mod planning;",
        "src/kit/mod.rs": "mod chart; ",
        "src/kit/chart.rs": "use crate::planning::protocol::Plan;",
        "src/planning/mod.rs": "pub mod protocol;",
        "src/planning/protocol.rs": "pub struct Plan; fn f() { crate::features::compare::x(); }",
        "src/features/mod.rs": "pub mod compare; pub mod learn;",
        "src/features/compare/mod.rs": "pub fn x() {}",
        "src/features/learn/mod.rs": "use crate::features::compare::x;",
    }
    bad, text = run(files, name="explorer")
    assert "src/kit/chart.rs reaches the feature compare" in text, text
    assert "src/planning/protocol.rs reaches the feature compare" in text, text
    assert "the feature learn imports the feature compare" in text, text
    assert bad == 3, text

    # The kit reading the app state, through another file. Fails if the
    # kit's state rule were not checked.
    files = {
        "src/lib.rs": "mod kit; mod state; mod shown;",
        "src/kit/mod.rs": "mod hover; ",
        "src/kit/hover.rs": "use crate::shown::current::Current;",
        "src/shown/mod.rs": "pub mod current;",
        "src/shown/current.rs": "pub struct Current; fn f() { crate::state::use_app(); }",
        "src/state/mod.rs": "pub fn use_app() {}",
    }
    bad, text = run(files, name="explorer")
    assert "src/kit/hover.rs reaches the app state (src/state/mod.rs)" in text, text
    assert bad == 1, text

    # A pure folder reaching the web side, a loose file at src/, two
    # modules of one name. Fails if rule 4 or 5 were not checked.
    files = {
        "src/lib.rs": "mod kit; mod planning; mod stray; mod features;",
        "src/kit/mod.rs": "pub fn chart() {}",
        "src/planning/mod.rs": "pub mod current; fn f() { crate::kit::chart(); }",
        "src/planning/current.rs": "pub struct C;",
        "src/stray.rs": "",
        "src/features/mod.rs": "pub mod plan;",
        "src/features/plan/mod.rs": "pub mod current;",
        "src/features/plan/current.rs": "",
    }
    bad, text = run(files, name="explorer")
    assert "src/planning/mod.rs is pure but reaches src/kit/mod.rs" in text, text
    assert "src/stray.rs: a loose file at src/" in text, text
    assert "two modules named `current`: src/features/plan/current.rs, src/planning/current.rs" in text, text
    assert bad == 3, text

    # The allow-list: an allowed edge hides its cycle; a stale one fails.
    files = {
        "src/lib.rs": "mod a; mod b;",
        "src/a.rs": "use crate::b::B; pub struct A;",
        "src/b.rs": "use crate::a::A; pub struct B;",
    }
    bad, text = run(files, allowed={("src/b.rs", "src/a.rs"): "why"})
    assert bad == 0 and "kept by" in text, text
    bad, text = run(files, allowed={("src/b.rs", "src/c.rs"): "why"})
    assert bad == 2 and "is gone" in text, text
    files["src/a.rs"] = "pub struct A;"
    bad, text = run(files, allowed={("src/b.rs", "src/a.rs"): "why"})
    assert bad == 1 and "closes no cycle any more" in text, text

    # Paths into other crates make no edge; `self::` and bare child paths do.
    g = graph({
        "src/lib.rs": "mod a; mod b; use remat_core::a::X; fn f() { a::g(); self::b::h(); }",
        "src/a.rs": "pub fn g() {}",
        "src/b.rs": "pub fn h() {}",
    })
    assert set(g["src/lib.rs"]) == {"src/a.rs", "src/b.rs"}, g
    # The Python package: a cycle through a function-level import and a
    # private name crossing modules. Fails if either were not checked.
    lines = []
    bad = check_python({
        "p/measure.py": "from .batch import leaves\ndef f():\n    from .runtime import _host_buffer\n",
        "p/runtime.py": "from .measure import Meter\nfrom . import _solver\n",
        "p/batch.py": "",
    }, out=lines.append)
    text = "\n".join(lines)
    assert "imports the private name _host_buffer of runtime.py" in text, text
    assert "cycle: measure.py → runtime.py → measure.py" in text, text
    assert bad == 2, text

    print("module_graph self-test: ok")
    return 0


if __name__ == "__main__":
    if "--self-test" in sys.argv:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1:]))
