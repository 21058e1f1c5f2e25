"""No import cycle among forewarn's modules (issue 12): a new one fails CI.

The graph is grimp's (the library import-linter builds on), and it counts imports under
``if TYPE_CHECKING:`` too: a cycle only the type checker sees is still two modules that
cannot be read, moved or tested one without the other (the fabric's ``FabricConfig``
cycle was one of those).
"""

from __future__ import annotations

import grimp


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every group of modules that import each other, directly or not (Tarjan's strongly
    connected components, iteratively: the package is deep), each sorted; a module that
    imports itself counts."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            step = next(imported, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.find_modules_directly_imported_by(step)))))
                elif step in on_stack:
                    low[module] = min(low[module], index[step])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                selfish = graph.direct_import_exists(importer=module, imported=module)
                if len(group) > 1 or selfish:
                    found.append(sorted(group))
    return sorted(found)


def test_forewarn_has_no_import_cycle() -> None:
    graph = grimp.build_graph("forewarn", exclude_type_checking_imports=False, cache_dir=None)
    assert len(graph.modules) > 100  # the whole package was read
    found = cycles(graph)
    explained = []
    for first, second, *_ in (group * 2 for group in found):
        there = graph.find_shortest_chain(importer=first, imported=second) or (first, second)
        back = graph.find_shortest_chain(importer=second, imported=first) or (second, first)
        explained.append(" -> ".join([*there, *back[1:]]))
    assert found == [], "import cycles: " + "; ".join(explained)


def test_a_cycle_is_found_and_named() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [
        ("pkg.a", "pkg.b"), ("pkg.b", "pkg.c"), ("pkg.c", "pkg.a"),  # one cycle of three
        ("pkg.c", "pkg.d"), ("pkg.d", "pkg.e"),  # no cycle beyond it
        ("pkg.f", "pkg.g"), ("pkg.g", "pkg.f"),  # a second one
    ]:  # fmt: skip
        graph.add_import(importer=importer, imported=imported)
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.f", "pkg.g"]]
    graph.remove_import(importer="pkg.g", imported="pkg.f")
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
