"""Run unchanged PyTorch programs on fjax: while enabled, ``import torch`` gives ``fjax``.

``enable()`` puts an import hook in front of ``sys.meta_path`` that answers every ``torch`` and
``torch.X.Y`` import with the fjax module of the same dotted path (``fjax.X.Y``): the module a
program gets as ``torch.nn`` *is* ``fjax.nn``. Real torch modules already in ``sys.modules`` are
set aside and come back on ``disable()``::

    import fjax.mock_torch

    with fjax.mock_torch.enable():
        import torch                  # fjax
        import torch.nn.functional as F  # fjax.nn.functional
    import torch                      # the real torch again

A torch module fjax does not have raises an ``ImportError`` naming it; with ``lazy=True`` the
import gives a placeholder whose first attribute access raises that error instead, so scripts
that import such a module without using it still run. ``FJAX_MOCK_TORCH=0`` in the environment
turns ``enable()`` into a no-op. ``python -m fjax.mock_torch script.py [args...]`` runs a script
with the hook on.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

from .. import _public

__all__ = ["MockTorchError", "disable", "enable", "is_enabled"]

_ENV = "FJAX_MOCK_TORCH"


class MockTorchError(ImportError):
    """A torch module (or a name in it) that fjax does not provide."""


def _to_fjax(name: str) -> str:
    return "fjax" + name[len("torch") :] if name == "torch" or name.startswith("torch.") else name


def _message(torch_name: str, used: str | None = None) -> str:
    need = f" (needed for '{used}')" if used else ""
    return (
        f"fjax.mock_torch: fjax does not provide '{torch_name}'{need}: there is no '{_to_fjax(torch_name)}'; "
        "run this part of the program with real PyTorch"
    )


class _Placeholder(types.ModuleType):
    """What ``lazy=True`` imports for a missing torch module: any public attribute raises."""

    def __init__(self, torch_name: str, name: str):
        super().__init__(name)
        self.__path__ = []  # a package, so that its submodules import as placeholders too
        self._fjax_torch_name = torch_name

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # import machinery and introspection probe dunders
        torch_name = self._fjax_torch_name
        raise MockTorchError(_message(torch_name, f"{torch_name}.{attr}"), name=torch_name)

    def __repr__(self) -> str:
        return f"<fjax.mock_torch placeholder for {self._fjax_torch_name!r}>"


class _AliasLoader(importlib.abc.Loader):
    """Loads ``torch.X`` by putting the already-imported ``fjax.X`` under that name.

    ``exec_module`` replaces the fresh module in ``sys.modules``; the import system returns what
    ``sys.modules`` holds, so the fjax module's own ``__spec__`` and ``__name__`` stay untouched.
    """

    def __init__(self, target: str | None, placeholder: _Placeholder | None = None):
        self.target = target
        self.placeholder = placeholder

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        if self.placeholder is not None:
            sys.modules[name] = self.placeholder
            _state.placeholders[name] = self.placeholder
            return
        mod = sys.modules.get(self.target)
        if mod is None:
            try:
                mod = importlib.import_module(self.target)
            except ModuleNotFoundError as exc:  # an attribute that is a module, not a file
                parent, _, child = self.target.rpartition(".")
                if exc.name != self.target or not isinstance(
                    getattr(sys.modules[parent], child, None), types.ModuleType
                ):
                    raise
                mod = getattr(sys.modules[parent], child)
        if "__getattr__" not in vars(mod):  # a torch name fjax lacks raises MissingTorchName naming it
            from .._missing import module_getattr

            mod.__getattr__ = module_getattr(name)
        sys.modules[name] = mod


class _Finder(importlib.abc.MetaPathFinder):
    """Answers ``torch`` / ``torch.*`` imports (and, lazily, missing ``fjax.*`` ones)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            fjax_name = _to_fjax(fullname)
            if _fjax_has(fjax_name):
                return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fjax_name), is_package=True)
            return self._missing(fullname, fullname)
        if fullname.startswith("fjax.") and fullname.rpartition(".")[0] in sys.modules:
            # ``from torch import sparse`` asks for ``fjax.sparse``: torch's module is fjax itself
            if not _fjax_has(fullname, skip=self):
                return self._missing("torch" + fullname[len("fjax") :], fullname)
        return None

    @staticmethod
    def _missing(torch_name: str, fullname: str):
        if not _state.lazy:
            # named after the torch module, so that ``from torch import x`` reports it too
            raise MockTorchError(_message(torch_name), name=torch_name)
        loader = _AliasLoader(None, _Placeholder(torch_name, fullname))
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=True)


def _fjax_has(name: str, skip=None) -> bool:
    """Whether fjax has module ``name``: imported, importable, or a module-valued attribute."""
    if name in sys.modules:
        return not isinstance(sys.modules[name], _Placeholder)
    parent_name, _, child = name.rpartition(".")
    parent = sys.modules.get(parent_name) if parent_name else None
    if parent_name and parent is None:
        try:
            parent = importlib.import_module(parent_name)
        except ImportError:
            return False
    if isinstance(parent, _Placeholder):
        return False
    attr = getattr(parent, "__dict__", {}).get(child)
    if isinstance(attr, types.ModuleType):
        return not isinstance(attr, _Placeholder)
    search = getattr(parent, "__path__", None) if parent is not None else None
    if parent is not None and search is None:
        return False
    for finder in sys.meta_path:
        if finder is skip or isinstance(finder, _Finder) or not hasattr(finder, "find_spec"):
            continue
        if finder.find_spec(name, search) is not None:
            return True
    return False


class _State:
    def __init__(self):
        self.finder: _Finder | None = None
        self.lazy = False
        self.saved: dict[str, types.ModuleType] = {}  # the real torch modules set aside
        self.placeholders: dict[str, _Placeholder] = {}
        self.version = None  # fjax.__version__, set aside while torch.__version__ reads torch's


_state = _State()


def _is_torch(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


def is_enabled() -> bool:
    """Whether ``import torch`` currently gives fjax."""
    return _state.finder is not None


class _Enabled:
    """What ``enable()`` returns: usable as ``with enable(): ...``, which restores the state
    before it on exit (off, or on with the earlier ``lazy``)."""

    def __init__(self, was_enabled: bool, was_lazy: bool):
        self._was_enabled = was_enabled
        self._was_lazy = was_lazy

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._was_enabled:
            _state.lazy = self._was_lazy
        else:
            disable()
        return False


class _Noop:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def enable(lazy: bool = False):
    """Make ``import torch`` (and ``torch.X.Y``) give ``fjax`` (and ``fjax.X.Y``).

    Stays on until ``disable()``; used as ``with enable(): ...`` it is undone on exit. With
    ``lazy=True`` a torch module fjax lacks imports as a placeholder that raises
    ``MockTorchError`` when used, instead of failing the import. A no-op when the environment
    sets ``FJAX_MOCK_TORCH=0``.
    """
    if os.environ.get(_ENV, "1").strip().lower() in ("0", "false", "off", "no"):
        return _Noop()
    was_enabled, was_lazy = is_enabled(), _state.lazy
    _state.lazy = bool(lazy)
    if not was_enabled:
        import fjax  # torch's top-level module must exist before the first import

        _state.saved = {name: sys.modules.pop(name) for name in [n for n in sys.modules if _is_torch(n)]}
        _state.finder = _Finder()
        sys.meta_path.insert(0, _state.finder)
        _public.NAME = "torch"  # reprs print torch.float32, torch.Size, torch.FloatTensor
        # a program's version gates take the branches of the torch release fjax follows
        _state.version, fjax.__version__ = fjax.__version__, fjax.version.TORCH
    return _Enabled(was_enabled, was_lazy)


def disable() -> None:
    """Undo ``enable()``: drop the torch aliases and give the real torch modules back."""
    if _state.finder is None:
        return
    if _state.finder in sys.meta_path:
        sys.meta_path.remove(_state.finder)
    _state.finder = None
    _public.NAME = "fjax"
    sys.modules["fjax"].__version__ = _state.version
    for name in [n for n in sys.modules if _is_torch(n)]:
        del sys.modules[name]
    for name, placeholder in _state.placeholders.items():  # the import system bound them on fjax modules
        if sys.modules.get(name) is placeholder:
            del sys.modules[name]
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(_to_fjax(parent_name))
        if parent is not None and getattr(parent, "__dict__", {}).get(child) is placeholder:
            delattr(parent, child)
    _state.placeholders.clear()
    sys.modules.update(_state.saved)
    _state.saved = {}
    _state.lazy = False
