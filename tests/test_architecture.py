"""The package's imports run one way: no module of ``src/fjax`` reaches, through any chain of
imports (at module level or inside functions), back to itself.

Layers lend what a lower module needs from a higher one at import time instead
(``tensor._Above``, ``config._cache_size_listeners``); docs/architecture.md draws the layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import fjax

SRC = Path(fjax.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _targets(module: str, is_package: bool, node, modules) -> list[str]:
    """The fjax modules one import statement names (``from .x import y`` names ``x.y`` when
    that is a module, else ``x``)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        source = node.module if not node.level else f"{base}.{node.module}" if node.module else base
        names = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
    found = []
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.append(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        graph[name] = {
            t
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for t in _targets(name, path.name == "__init__.py", node, modules)
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_core_imports():
    graph = import_graph()
    assert "fjax.tensor" in graph["fjax.dispatch"]
    assert "fjax.autograd.engine" in graph["fjax.dispatch"]
    assert "fjax.autograd.grad_mode" in graph["fjax.tensor"]  # an import inside a function counts


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    found = cycles(import_graph())
    assert not found, "import circles in src/fjax: " + "; ".join(" <-> ".join(c) for c in found)


def test_autograd_init_only_reexports():
    tree = ast.parse((SRC / "autograd" / "__init__.py").read_text())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Import", "Assign"}, kinds
