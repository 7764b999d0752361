"""No import circle in inferd: lint-imports checks the layers, not circles inside one layer, and a
circle hidden in a function-level import still decides what a spawned process (a training job, a
model process) has to import first. Every import counts here, at module level or in a function."""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

import inferd

PACKAGE = Path(inferd.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(name: str, source: str, is_package: bool, modules: Collection[str]) -> set[str]:
    """The ``modules`` that module ``name`` imports anywhere in its ``source`` (``from x import y``
    counts as importing ``x.y`` when that is a module, ``x`` otherwise)."""
    package = name if is_package else name.rpartition(".")[0]
    targets: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            targets += [f"{base}.{alias.name}" for alias in node.names]
    found = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
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
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_the_graph_sees_imports_inside_functions() -> None:
    """The check would pass vacuously if function-level imports were missed."""
    source = "import p.a\n\ndef f():\n    from . import b\n    from .c import thing\n"
    assert _imported("p.d", source, False, {"p", "p.a", "p.b", "p.c", "p.d"}) == {"p.a", "p.b", "p.c"}
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_in_inferd() -> None:
    modules = _modules()
    graph = {
        name: _imported(name, path.read_text(), path.name == "__init__.py", modules)
        for name, path in modules.items()
    }
    assert _circles(graph) == []
