"""Build fjax's documentation site: ``python docs/build.py [OUTDIR]`` (default ``build/docs``).

The hand-written pages under ``docs/`` are copied into ``OUTDIR/.source`` together with the
notebooks of ``notebooks/`` (rendered from their stored outputs, never executed) and one API
page per public module, generated here from the module's public names. Sphinx then builds the
HTML into ``OUTDIR`` with warnings as errors, so a broken cross-reference, a malformed
docstring or a public name without a docstring fails the build. Nothing is written to the
repository outside ``OUTDIR``.
"""

from __future__ import annotations

import importlib
import inspect
import shutil
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent

# (page name, module, title): the public modules the API reference covers, in reading order.
MODULES = [
    ("fjax", "fjax", "fjax"),
    ("tensor", "fjax", "fjax.Tensor"),
    ("nn", "fjax.nn", "fjax.nn"),
    ("nn.functional", "fjax.nn.functional", "fjax.nn.functional"),
    ("nn.Graph", "fjax.nn.graph", "fjax.nn.Graph"),
    ("optim", "fjax.optim", "fjax.optim"),
    ("optim.lr_scheduler", "fjax.optim.lr_scheduler", "fjax.optim.lr_scheduler"),
    ("autograd", "fjax.autograd", "fjax.autograd"),
    ("autograd.functional", "fjax.autograd.functional", "fjax.autograd.functional"),
    ("func", "fjax.func", "fjax.func"),
    ("linalg", "fjax.linalg", "fjax.linalg"),
    ("special", "fjax.special", "fjax.special"),
    ("fft", "fjax.fft", "fjax.fft"),
    ("distributions", "fjax.distributions", "fjax.distributions"),
    ("utils.data", "fjax.utils.data", "fjax.utils.data"),
    ("asyncs", "fjax.asyncs", "fjax.asyncs"),
    ("profiler", "fjax.profiler", "fjax.profiler"),
    ("mock_torch", "fjax.mock_torch", "fjax.mock_torch"),
]

# Classes documented with their methods (the others show their constructor and docstring).
_WITH_MEMBERS = {
    "fjax.nn.Module",
    "fjax.nn.Graph",
    "fjax.nn.graph.GraphConfig",
    "fjax.nn.graph.GraphModule",
    "fjax.optim.Optimizer",
    "fjax.autograd.Function",
    "fjax.asyncs.Thread",
    "fjax.optim.lr_scheduler.LRScheduler",
    "fjax.distributions.Distribution",
    "fjax.utils.data.DataLoader",
    "fjax.profiler.profile",
}

# Public names that cannot carry a docstring yet, each with the reason. Keep this list empty.
_NO_DOCSTRING: set = set()


def public_names(module) -> list[str]:
    """The public names of ``module``: its ``__all__``, else every name of ``dir(module)`` not
    starting with ``_``; submodules, ``from __future__`` features and (outside the top-level
    ``fjax``) imported constants are left out."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
        if module.__name__ != "fjax":  # a namespace of functions: its classes and constants are imports
            names = [n for n in names if callable(getattr(module, n)) and not inspect.isclass(getattr(module, n))]
    return sorted(
        n for n in names if not inspect.ismodule(getattr(module, n)) and type(getattr(module, n)).__name__ != "_Feature"
    )


def tensor_pointer_doc(fjax_module, name: str) -> str | None:
    """A one-line docstring for the Tensor method ``name`` that points to the function documenting
    it, or None where the method is documented by its own docstring.

    A method that is the function ``fjax.<name>`` itself (``Tensor.abs``) reads "Method form of
    fjax.abs", as torch's reference does, rather than repeating its docstring; an undocumented
    in-place method (``abs_``) reads "In-place version of" its documented out-of-place op.
    """
    member = inspect.getattr_static(fjax_module.Tensor, name, None)
    if inspect.isfunction(member) and getattr(fjax_module, name, None) is member and inspect.getdoc(member):
        return f"Method form of :func:`fjax.{name}`: ``x.{name}(...)`` is ``fjax.{name}(x, ...)``."
    if inspect.getdoc(member) or not name.endswith("_") or name.startswith("_"):
        return None
    base = name[:-1]
    if inspect.getdoc(getattr(fjax_module.Tensor, base, None)):
        return f"In-place version of :meth:`~fjax.Tensor.{base}`."
    if inspect.getdoc(getattr(fjax_module, base, None)):
        return f"In-place version of :func:`fjax.{base}`."
    return None


def tensor_member_doc(fjax_module, name: str) -> str | None:
    """The documentation of ``Tensor.<name>``: its pointer line, else its docstring."""
    member = inspect.getattr_static(fjax_module.Tensor, name, None)
    return tensor_pointer_doc(fjax_module, name) or inspect.getdoc(member)


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    return "function" if callable(obj) else "data"


def summary(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line (a period inside a
    ````literal```` does not end it)."""
    text = " ".join(doc.split("\n\n")[0].split())
    pieces = text.split("``")
    for i in range(0, len(pieces), 2):
        end = pieces[i].find(". ")
        if end >= 0:
            return "``".join(pieces[:i] + [pieces[i][: end + 1]])
    return text


def _table(names: list[str], modname: str, seen: dict) -> list[str]:
    """A two-column table: each name, linked to its entry (here, or where the same class is
    indexed under another path), and its summary."""
    lines = [".. list-table::", "   :widths: 25 75", ""]
    module = importlib.import_module(modname)
    for n in names:
        obj = getattr(module, n)
        target = seen.get(id(obj), f"{modname}.{n}") if inspect.isclass(obj) else f"{modname}.{n}"
        lines += [f"   * - :py:obj:`{n} <{target}>`", f"     - {summary(inspect.getdoc(obj) or '')}"]
    return lines + [""]


def _rst_page(page: str, modname: str, title: str, seen: dict) -> tuple[str, list[str], list[str]]:
    """(reStructuredText of one API page, the qualified names it documents, those without a docstring)."""
    module = importlib.import_module(modname)
    lines = [title, "=" * len(title), "", f".. currentmodule:: {modname}", ""]
    documented, undocumented = [], []
    if page == "tensor":
        lines += [".. autoclass:: Tensor", "   :members:", "   :undoc-members:", ""]
        names = [n for n in dir(module.Tensor) if not n.startswith("_")]
        documented += [f"fjax.Tensor.{n}" for n in names]
        undocumented += [f"fjax.Tensor.{n}" for n in names if not tensor_member_doc(module, n)]
        return "\n".join(lines), documented, undocumented
    names = public_names(module)
    if page == "fjax":
        names = [n for n in names if n != "Tensor"]
    if page == "nn":
        names = [n for n in names if n != "Graph"]
    if page == "nn.Graph":
        lines += [".. currentmodule:: fjax.nn", "", ".. autoclass:: Graph", "   :members:", ""]
        lines += [f".. currentmodule:: {modname}", ""]
        names = [n for n in names if n != "Graph"]
        documented.append("fjax.nn.Graph")
    data = [n for n in names if _kind(getattr(module, n)) == "data"]
    objs = [n for n in names if n not in data]
    if objs:
        lines += _table(objs, modname, seen)
    for n in objs:
        obj = getattr(module, n)
        qual = f"{modname}.{n}"
        documented.append(qual)
        if not inspect.getdoc(obj):
            undocumented.append(qual)
        kind = _kind(obj)
        directive = {"class": "autoclass", "exception": "autoexception", "function": "autofunction"}[kind]
        lines.append(f".. {directive}:: {n}")
        if qual in _WITH_MEMBERS:
            lines.append("   :members:")
        if kind != "function" and getattr(obj, "__name__", n) == n:
            # A class documented under a second public path: that entry is not a link target
            # (both would register the class's defining path). An alias (another name) is not
            # registered at all and reads "alias of ...".
            if id(obj) in seen:
                lines.append("   :no-index:")
            seen.setdefault(id(obj), qual)
        lines.append("")
    if data:
        lines += ["Constants", "---------", ""]
        for n in data:
            value = getattr(module, n)
            documented.append(f"{modname}.{n}")
            lines += [f".. py:data:: {n}", f"   :value: {value!r}", "", f"   A ``{type(value).__name__}``.", ""]
    return "\n".join(lines), documented, undocumented


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless it already holds it, so Sphinx rebuilds only what changed."""
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def prepare(source: Path) -> list[str]:
    """Fill ``source`` with the pages of ``docs/``, the notebooks and the generated API pages;
    return the qualified public names the API pages document. Raises ``RuntimeError`` listing
    every public name without a docstring."""
    for src in DOCS.rglob("*"):
        rel = src.relative_to(DOCS)
        if src.is_file() and rel.parts[0] not in ("_build", "__pycache__"):
            dst = source / rel
            if not dst.exists() or dst.stat().st_mtime != src.stat().st_mtime:
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        dst = source / "notebooks" / nb.name
        if not dst.exists() or dst.stat().st_mtime != nb.stat().st_mtime:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(nb, dst)
    documented, undocumented = [], []
    toc = [
        "# API reference",
        "",
        "One page per public module, generated by `docs/build.py` from the module's public names (its",
        "`__all__`, else the names of `dir(module)` without a leading underscore) and each object's",
        "signature and docstring.",
        "",
        "```{toctree}",
        ":maxdepth: 1",
        "",
    ]
    seen = {}  # id(class) -> the qualified name its link target is documented under
    for page, modname, title in MODULES:
        text, names, missing = _rst_page(page, modname, title, seen)
        _write_if_changed(source / "api" / f"{page}.rst", text)
        documented += names
        undocumented += missing
        toc.append(page)
    _write_if_changed(source / "api" / "index.md", "\n".join(toc + ["```", ""]))
    undocumented = [n for n in undocumented if n not in _NO_DOCSTRING]
    if undocumented:
        raise RuntimeError(f"{len(undocumented)} public names have no docstring: {undocumented}")
    return documented


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else REPO / "build" / "docs"
    source = out / ".source"
    start = time.perf_counter()
    sys.path.insert(0, str(REPO / "src"))
    names = prepare(source)
    print(f"docs: {len(names)} public names documented")
    from sphinx.cmd.build import build_main

    rc = build_main(["-W", "--keep-going", "-q", "-b", "html", "-d", str(out / ".doctrees"), str(source), str(out)])
    print(f"docs: built {out / 'index.html'} in {time.perf_counter() - start:.1f} s (exit status {rc})")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
