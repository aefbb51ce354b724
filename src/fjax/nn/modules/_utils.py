"""Small helpers shared by the layers: torch's _single/_pair/_triple and module-named errors."""

from __future__ import annotations

from ...errors import OpError


def _ntuple(n: int, name: str):
    def parse(x) -> tuple:
        if isinstance(x, (list, tuple)):
            return tuple(x)
        return (x,) * n

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")


def module_error(module, message: str, exc: type = OpError) -> OpError:
    """An OpError that starts with the module as it prints (``Linear(in_features=3, ...): ...``).

    A module whose ``extra_repr`` is empty may describe itself with ``_describe()``. ``exc`` is an
    OpError subclass for checks torch makes with another class (``ArgumentAssertionError``).
    """
    describe = getattr(module, "_describe", module.extra_repr)
    return exc(f"{module._get_name()}({describe()}): {message}")
