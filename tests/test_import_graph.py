"""No import circles in toolproof, between packages or inside them.

The layer contract (import-linter, ``pyproject.toml``) keeps a lower layer from importing
a higher one; it does not see a circle inside one layer or one package (``a`` imports
``b``, ``b`` imports ``a``), which makes a module impossible to read, test or move alone.
This test builds the import graph of every ``toolproof`` module with grimp (the library
import-linter runs on) and fails on any cycle, naming its modules.

What counts: every import grimp finds in the source, at module top and inside functions
(a deferred import is still a dependency: the circle is there, only later), except those
under ``if TYPE_CHECKING:``, which never run. A package counts as the module of its
``__init__.py``.

A second check keeps toolkit knowledge out of the engine: no engine module imports a
toolkit's module (issue 35).
"""

from __future__ import annotations

import itertools

import grimp

ALLOWED: dict[frozenset[str], str] = {
    # Known circles left when this check came in (issue 35), outside the area of the helper
    # who wrote it; each says who fixes it. An entry whose circle is gone is simply unused:
    # delete it then. (engine/executor.py <-> processes.py and scoring/base.py <->
    # scoring/checks were fixed before this check landed, and gateway <-> gateway._server
    # soon after, so they are not here.)
}


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _path(graph: grimp.ImportGraph, component: list[str]) -> str:
    """One circle through the component's first module, as ``a -> b -> a`` with lines."""
    first = component[0]
    inside = set(component)
    for second in sorted(graph.find_modules_directly_imported_by(first) & inside):
        back = graph.find_shortest_chain(importer=second, imported=first)
        if back is not None:
            chain = [first, *back]
            hops = []
            for a, b in itertools.pairwise(chain):
                details = graph.get_import_details(importer=a, imported=b)
                line = details[0]["line_number"] if details else "?"
                hops.append(f"{a}:{line} -> {b}")
            return "\n    ".join(hops)
    return " <-> ".join(component)


def test_no_module_imports_itself_through_others() -> None:
    graph = grimp.build_graph("toolproof", cache_dir=None, exclude_type_checking_imports=True)
    cycles = [c for c in _cycles(graph) if frozenset(c) not in ALLOWED]
    report = "\n".join(f"- {', '.join(c)}:\n    {_path(graph, c)}" for c in cycles)
    assert not cycles, (
        f"{len(cycles)} import circle(s) among toolproof's modules (each module of a circle "
        "can only be loaded, read or tested with all the others): break each one by moving "
        "what both sides share into a module below them, or by passing it in\n" + report
    )


def test_the_check_finds_a_circle_and_names_its_modules() -> None:
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b", line_number=3, line_contents="import b")
    graph.add_import(importer="pkg.b", imported="pkg.c", line_number=4, line_contents="import c")
    graph.add_import(importer="pkg.c", imported="pkg.a", line_number=5, line_contents="import a")
    graph.add_import(importer="pkg", imported="pkg.a", line_number=1, line_contents="import a")
    (cycle,) = _cycles(graph)
    assert cycle == ["pkg.a", "pkg.b", "pkg.c"]
    assert _path(graph, cycle) == "pkg.a:3 -> pkg.b\n    pkg.b:4 -> pkg.c\n    pkg.c:5 -> pkg.a"


ENGINE_TOOLKIT_IMPORTS: dict[tuple[str, str], str] = {
    # (engine module, toolkit module): why it may. None today; keep it that way.
}


def test_the_engine_names_no_toolkit() -> None:
    """What a toolkit needs from a run reaches it through ``ToolContext`` (tools/context.py);
    the engine never imports a toolkit's module (the toolkit registry is fine)."""
    graph = grimp.build_graph("toolproof", cache_dir=None, exclude_type_checking_imports=True)
    engine = {"toolproof.engine", *graph.find_descendants("toolproof.engine")}
    found = sorted(
        (importer, imported)
        for importer in engine
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported.startswith("toolproof.tools.toolkits.")
        and (importer, imported) not in ENGINE_TOOLKIT_IMPORTS
    )
    assert not found, (
        "the engine imports a toolkit (declare what the toolkit needs in "
        f"tools/context.py and read it there): {found}"
    )
