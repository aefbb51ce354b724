"""Public functions and classes document their arguments in an ``Args:`` section.

The names checked are the public functions of ``fjax.nn.functional`` (not the classes it imports, such as
``Tensor``), the public classes of ``fjax.nn``, ``fjax.optim`` and ``fjax.optim.lr_scheduler``, and the
public functions of ``fjax.autograd``, ``fjax.autograd.functional`` and ``fjax.func``. A name whose signature
has parameters (other than ``self``, and other than only ``*args``/``**kwargs``) needs an ``Args:`` (or ``Arguments:`` /
``Parameters:``) section in its docstring; a class is read through its constructor's signature and
the class docstring. ``_MAX_MISSING`` is a ratchet: it only goes down as sections are written.
"""

from __future__ import annotations

import inspect
import re

import fjax.autograd.functional as AF
import fjax.nn.functional as F
from fjax import autograd, func, nn, optim
from fjax.optim import lr_scheduler

# The number of checked names still without an ``Args:`` section (278 when this test was written). It only
# goes down; at 0, every new public name must come with its ``Args:`` section.
_MAX_MISSING = 0

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.MULTILINE)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _is_ours(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("fjax")


def _public(mod, want_class):
    for name in getattr(mod, "__all__", dir(mod)):
        obj = getattr(mod, name, None)
        if name.startswith("_") or obj is None or not callable(obj) or not _is_ours(obj):
            continue
        is_class = isinstance(obj, type)
        if want_class is not None and is_class != want_class:
            continue
        if is_class and issubclass(obj, BaseException):
            continue
        yield name, obj


def _checked():
    """{qualified name: object} for every name the ratchet covers."""
    groups = (
        ("fjax.nn.functional", F, False),
        ("fjax.nn", nn, True),
        ("fjax.optim", optim, True),
        ("fjax.optim.lr_scheduler", lr_scheduler, True),
        ("fjax.autograd", autograd, False),
        ("fjax.autograd.functional", AF, False),
        ("fjax.func", func, False),
    )
    names, seen = {}, set()
    for prefix, mod, want_class in groups:
        for name, obj in _public(mod, want_class):
            if id(obj) not in seen:
                seen.add(id(obj))
                names[f"{prefix}.{name}"] = obj
    return names


def _takes_arguments(obj) -> bool:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    params = [p for p in sig.parameters.values() if p.name != "self"]
    return any(p.kind not in _VARIADIC for p in params)


def _missing():
    out = []
    for name, obj in sorted(_checked().items()):
        if _takes_arguments(obj) and not _SECTION.search(inspect.getdoc(obj) or ""):
            out.append(name)
    return out


def test_arguments_are_documented():
    missing = _missing()
    print(f"{len(missing)} of {len(_checked())} checked public names have no Args: section")
    assert len(missing) <= _MAX_MISSING, (
        f"{len(missing)} public names take arguments but have no Args: section (ratchet {_MAX_MISSING}); "
        f"first ones: {missing[:20]}"
    )
