"""Every public op, functional, layer and optimizer documents itself with an example that runs.

The examples are doctests: ``fjax``, ``nn`` (``fjax.nn``) and ``F`` (``fjax.nn.functional``)
are in scope, as ``torch``/``nn``/``F`` are in torch's own docs. Each public object's examples
run here, and a public object without one fails ``test_every_public_object_has_an_example``.
"""

from __future__ import annotations

import doctest
import inspect

import pytest

import fjax
import fjax.nn.functional as F
from fjax import nn, optim

_PARSER = doctest.DocTestParser()
_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS

# Public names that are not ops or layers: modules' helpers and constants, not documented here.
_NOT_API = {"Tensor", "Size", "Generator", "device", "dtype"}


def _public():
    """(qualified name, object) for every public function of ``fjax`` and
    ``fjax.nn.functional`` and every public class of ``fjax.nn`` and ``fjax.optim``."""
    seen = {}
    for prefix, mod in (("fjax", fjax), ("fjax.nn.functional", F)):
        for name in dir(mod):
            obj = getattr(mod, name)
            if name.startswith("_") or name in _NOT_API or inspect.ismodule(obj) or isinstance(obj, type):
                continue
            if callable(obj):
                seen.setdefault(f"{prefix}.{name}", obj)
    for prefix, mod in (("fjax.nn", nn), ("fjax.optim", optim)):
        for name in dir(mod):
            obj = getattr(mod, name)
            if not name.startswith("_") and isinstance(obj, type) and not issubclass(obj, BaseException):
                seen.setdefault(f"{prefix}.{name}", obj)
    return sorted(seen.items())


PUBLIC = _public()


def _examples(obj):
    return _PARSER.get_examples(inspect.getdoc(obj) or "")


@pytest.mark.parametrize(
    "name,obj", [(n, o) for n, o in PUBLIC if _examples(o)], ids=lambda v: v if isinstance(v, str) else ""
)
def test_example_runs(name, obj):
    test = _PARSER.get_doctest(inspect.getdoc(obj), {"fjax": fjax, "nn": nn, "F": F}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)


def test_every_public_object_has_an_example():
    missing = [name for name, obj in PUBLIC if not _examples(obj)]
    assert not missing, f"{len(missing)} public objects have no runnable example: {missing}"
