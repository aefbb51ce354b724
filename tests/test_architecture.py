"""The package's imports run one way, as docs/architecture.md's layer table says.

- no module of ``src/fjax`` reaches, through any chain of imports (at module level or inside
  functions), back to itself;
- every module is in exactly one layer of ``tests/layers.py``, and no import points from a
  layer to a higher one unless ``layers.ALLOWED`` lists it (importing ``a.b.c`` also runs
  ``a/__init__`` and ``a/b/__init__``, which counts as importing them);
- the module-level imports, package ``__init__`` runs included, form no circle;
- the doc's layer table and its list of upward imports are ``tests/layers.py``'s.

Layers lend what a lower module needs from a higher one at import time instead
(``tensor._Above``, ``config._cache_size_listeners``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import fjax

from .layers import ALLOWED, LAYERS, allowed_row, modules_cell

SRC = Path(fjax.__file__).parent
DOC = SRC.parents[1] / "docs" / "architecture.md"


@functools.cache
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


@functools.cache
def _imports(module: str) -> list[tuple[str, bool]]:
    """(imported module, whether at load time) for each fjax module an import statement of
    ``module`` names; a statement inside a function or lambda runs only when it is called."""
    modules, out = _modules(), []
    path = modules[module]

    def walk(node, deferred):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.extend((t, not deferred) for t in _targets(module, path.name == "__init__.py", child, modules))
            walk(child, deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(ast.parse(path.read_text()), False)
    return out


def _runs(importer: str, imported: str) -> list[str]:
    """What importing ``imported`` runs: it and the ``__init__`` of each package above it,
    except those the importer is inside (already running or done)."""
    parts = imported.split(".")
    above = [".".join(parts[:i]) for i in range(1, len(parts))]
    inits = [p for p in above if p in _modules() and not (importer == p or importer.startswith(p + "."))]
    return inits + [imported]


def import_graph() -> dict[str, set[str]]:
    """Every import statement, at module level or inside functions."""
    modules = _modules()
    return {name: {t for t, _ in _imports(name)} for name in modules}


def load_graph() -> dict[str, set[str]]:
    """The imports that run when a module loads, the package ``__init__``s they run included."""
    modules = _modules()
    return {name: {r for t, at_load in _imports(name) if at_load for r in _runs(name, t)} - {name} for name in modules}


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


def _name(module: str) -> str:
    """A module as layers.py names it: its path under src/fjax without ``.py``."""
    return _modules()[module].relative_to(SRC).with_suffix("").as_posix()


def _covers(entry: str, name: str) -> bool:
    return name.startswith(entry) if entry.endswith("/") else name == entry


def _entries(name: str) -> list[tuple[int, str]]:
    return [(i, e) for i, (_, entries) in enumerate(LAYERS) for e in entries if _covers(e, name)]


def upward_imports(layers=LAYERS) -> dict[tuple[str, str], bool]:
    """(importer, imported) -> whether at load time, for each import from a layer to a higher one."""
    modules = _modules()
    names = {m: _name(m) for m in modules}
    level = {m: i for m in modules for i, (_, entries) in enumerate(layers) for e in entries if _covers(e, names[m])}
    out = {}
    for name in modules:
        for t, at_load in _imports(name):
            for r in _runs(name, t):
                if level.get(r, -1) > level.get(name, len(layers)):  # no layer: the layer test says so
                    key = (names[name], names[r])
                    out[key] = out.get(key, False) or at_load
    return out


def test_the_graph_sees_the_core_imports():
    graph = import_graph()
    assert "fjax.tensor" in graph["fjax.dispatch"]
    assert "fjax.autograd.engine" in graph["fjax.dispatch"]
    assert "fjax.autograd.grad_mode" in graph["fjax.tensor"]  # an import inside a function counts


def test_the_load_graph_sees_package_inits_and_not_function_bodies():
    graph = load_graph()
    assert {"fjax.autograd", "fjax.autograd.engine", "fjax.amp", "fjax.amp._state"} <= graph["fjax.dispatch"]
    assert "fjax.autograd.grad_mode" not in graph["fjax.tensor"]  # inside a function: not at load
    assert "fjax.nn" not in graph["fjax.nn.modules.conv"]  # a package's own __init__ is already running
    assert _runs("fjax.tensor", "fjax.nn.utils.rnn") == ["fjax.nn", "fjax.nn.utils", "fjax.nn.utils.rnn"]
    assert _runs("fjax.nn.module", "fjax.nn.utils.rnn") == ["fjax.nn.utils", "fjax.nn.utils.rnn"]


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    found = cycles(import_graph())
    assert not found, "import circles in src/fjax: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_load_time_circles():
    found = cycles(load_graph())
    assert not found, "load-time import circles (package __init__s included): " + "; ".join(
        " <-> ".join(c) for c in found
    )


def test_every_module_is_in_exactly_one_layer():
    names = [_name(m) for m in _modules()]
    wrong = {n: [e for _, e in _entries(n)] for n in names if len(_entries(n)) != 1}
    assert not wrong, f"modules in no layer or in several (tests/layers.py): {wrong}"
    unused = [e for _, entries in LAYERS for e in entries if not any(_covers(e, n) for n in names)]
    assert not unused, f"tests/layers.py names modules that do not exist: {unused}"


def test_imports_point_down_the_layers():
    found = upward_imports()
    allowed = {(a, b) for a, b, _ in ALLOWED}
    assert len(allowed) == len(ALLOWED), "an upward import is listed twice in tests/layers.py"
    new = sorted(
        (a, b, "at load" if at_load else "in a function") for (a, b), at_load in found.items() if (a, b) not in allowed
    )
    assert not new, f"imports that point up the layers, not in tests/layers.py's ALLOWED: {new}"
    stale = sorted(allowed - set(found))
    assert not stale, f"ALLOWED lists upward imports the code no longer has (remove them): {stale}"
    assert all(why.strip() for _, _, why in ALLOWED)


def test_an_upward_import_is_found():
    """Swapping the tensor and dispatch layers turns dispatch's imports of tensor upward."""
    swapped = list(LAYERS)
    t, d = (
        next(i for i, (n, _) in enumerate(LAYERS) if n == "tensor"),
        next(i for i, (n, _) in enumerate(LAYERS) if n == "dispatch"),
    )
    swapped[t], swapped[d] = swapped[d], swapped[t]
    assert upward_imports(swapped)[("dispatch", "tensor")] is True


def _doc_rows(first_header: str) -> list[list[str]]:
    """The rows of the table in the doc's layer section whose header starts with ``first_header``."""
    text = DOC.read_text()
    section = text.split("## Layers and the direction of imports", 1)[1].split("\n## ", 1)[0]
    rows, inside = [], False
    for line in section.splitlines():
        if not line.startswith("|"):
            inside = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == first_header:
            inside = True
        elif inside and not set(line) <= set("|- "):
            rows.append(cells)
    return rows


def test_the_doc_table_is_the_layer_table():
    doc = [(row[0], row[1]) for row in _doc_rows("layer")]
    want = [(layer, modules_cell(entries)) for layer, entries in LAYERS]
    assert doc == want, "docs/architecture.md's layer table differs from tests/layers.py (python -m tests.layers)"


def test_the_doc_lists_the_allowed_upward_imports():
    doc = ["| " + " | ".join(row) + " |" for row in _doc_rows("importer")]
    want = [allowed_row(*entry) for entry in ALLOWED]
    assert doc == want, "docs/architecture.md's upward imports differ from tests/layers.py (python -m tests.layers)"


def test_autograd_init_only_reexports():
    tree = ast.parse((SRC / "autograd" / "__init__.py").read_text())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Import", "Assign"}, kinds
