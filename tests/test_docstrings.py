"""Every public name of fjax documents itself, and its examples run.

The public names are the functions and classes of ``fjax``, ``fjax.nn``, ``fjax.nn.functional``,
``fjax.optim``, ``fjax.optim.lr_scheduler``, ``fjax.autograd``, ``fjax.autograd.functional`` and
``fjax.func``, and the public methods and properties each of those classes defines (``Tensor``'s
op-table methods, ``Module``'s, each layer's own, ``Optimizer``'s, the schedulers', ``nn.Graph``'s).
A method that overrides a documented one without a docstring of its own inherits it, as
``inspect.getdoc`` and Sphinx read it.

- ``test_every_public_name_has_a_docstring``: each has a docstring whose first line is a summary.
- ``test_example_runs``: each ``>>>`` example is a doctest; ``fjax``, ``nn`` (``fjax.nn``),
  ``F`` (``fjax.nn.functional``) and ``optim`` (``fjax.optim``) are in scope, as ``torch``/``nn``/``F``
  are in torch's own docs.
- ``test_every_public_name_has_an_example``: a public name without an example fails, except the
  names of ``_NO_EXAMPLE_YET`` below.
"""

from __future__ import annotations

import doctest
import inspect
import types

import pytest

import fjax
import fjax.autograd.functional as AF
import fjax.nn.functional as F
from fjax import autograd, func, nn, optim
from fjax.optim import lr_scheduler

_PARSER = doctest.DocTestParser()
_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
_GLOBALS = {"fjax": fjax, "nn": nn, "F": F, "optim": optim}

_MODULES = (
    ("fjax", fjax),
    ("fjax.nn", nn),
    ("fjax.nn.functional", F),
    ("fjax.optim", optim),
    ("fjax.optim.lr_scheduler", lr_scheduler),
    ("fjax.autograd", autograd),
    ("fjax.autograd.functional", AF),
    ("fjax.func", func),
)

# Public names (``fjax.Tensor.<name>`` ...) that still have a docstring but no ``>>>`` example. The list
# only shrinks: ``test_every_public_name_has_an_example`` fails when a name here gets an example or stops
# being public, so each fix removes its name. It is empty: every public name has an example.
_NO_EXAMPLE_YET: set[str] = set()


def _is_ours(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("fjax")


def _names(mod):
    return [n for n in getattr(mod, "__all__", dir(mod)) if not n.startswith("_")]


def _member_doc(cls, name, value):
    """The docstring of ``cls.name``, or of the method it overrides when it has none."""
    for klass in cls.__mro__:
        own = vars(klass).get(name)
        if own is None:
            continue
        own = own.__func__ if isinstance(own, (staticmethod, classmethod)) else own
        doc = inspect.getdoc(own) if callable(own) or hasattr(type(own), "__get__") else None
        if doc:
            return doc
    return None


def _public():
    """{qualified name: docstring} for every public function, class, method and property."""
    docs, classes = {}, {}
    for prefix, mod in _MODULES:
        for name in _names(mod):
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or not callable(obj) or not _is_ours(obj):
                continue  # submodules, constants, and helpers imported from jax, numpy or typing
            if isinstance(obj, type):
                if issubclass(obj, BaseException) or obj in classes:
                    continue
                classes[obj] = f"{prefix}.{name}"
            docs.setdefault(f"{prefix}.{name}", inspect.getdoc(obj))
    for cls, qualified in classes.items():
        for name, value in vars(cls).items():
            value = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            if name.startswith("_") or isinstance(value, types.MemberDescriptorType):
                continue  # a __slots__ field (``Tensor.grad``, ``dtype.name``) is data: it holds no docstring
            if not (callable(value) or hasattr(type(value), "__get__")):
                continue  # a class attribute that is data; a property or other descriptor is documented
            docs[f"{qualified}.{name}"] = _member_doc(cls, name, value)
    return docs


PUBLIC = _public()


def _has_example(doc) -> bool:
    return bool(_PARSER.get_examples(doc or ""))


def _runs():
    """One (name, docstring) per distinct docstring with an example: an op's docstring is also
    its Tensor method's, and an inherited one is its subclasses', and each runs once."""
    first = {}
    for name, doc in sorted(PUBLIC.items()):
        if _has_example(doc):
            first.setdefault(doc, name)
    return sorted((name, doc) for doc, name in first.items())


def test_every_public_name_has_a_docstring():
    missing = sorted(name for name, doc in PUBLIC.items() if not doc or not doc.splitlines()[0].strip())
    print(f"{len(PUBLIC)} public names, {len(PUBLIC) - len(missing)} with a docstring")
    assert not missing, f"{len(missing)} public names have no docstring with a summary line: {missing}"


@pytest.mark.parametrize("name,doc", _runs(), ids=lambda v: v if isinstance(v, str) and "\n" not in v else "")
def test_example_runs(name, doc):
    test = _PARSER.get_doctest(doc, dict(_GLOBALS), name, None, 0)
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)


def test_every_public_name_has_an_example():
    missing = sorted(name for name, doc in PUBLIC.items() if not _has_example(doc) and name not in _NO_EXAMPLE_YET)
    fixed = sorted(name for name in _NO_EXAMPLE_YET if _has_example(PUBLIC.get(name)))
    gone = sorted(_NO_EXAMPLE_YET - PUBLIC.keys())
    print(f"{len(PUBLIC)} public names; {len(_NO_EXAMPLE_YET)} allowed without an example yet")
    assert not missing, f"{len(missing)} public names have no runnable example: {missing}"
    assert not fixed, f"these names have an example now; remove them from _NO_EXAMPLE_YET: {fixed}"
    assert not gone, f"these names are no longer public; remove them from _NO_EXAMPLE_YET: {gone}"
