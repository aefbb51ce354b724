"""How an op-table sample is written: one line per case.

``S(*args, **kwargs)`` describes one call. Each positional/keyword value is either a plain
Python value (passed to both frameworks as is) or an input spec below, which the oracle turns
into a fresh random array, then into an fjax Tensor and a torch tensor:

    (3, 4)          a float tensor of that shape, standard normal (tuple = shape)
    F((3, 4), lo, hi)   float tensor, uniform in [lo, hi)  (e.g. positive inputs for log)
    I((3,), lo, hi)     int64 tensor, uniform integers in [lo, hi)
    B((3, 4))           bool tensor
    L(spec, spec, ...)  a Python list of tensors (cat, stack)
    D(spec, dtype)      a spec with a fixed dtype name ("int32", "float16", ...)

Options of S (keywords starting with an underscore):
    _torch=callable    the torch function to compare with (default: torch.<op>, then
                       torch.nn.functional.<op>)
    _dtypes=(...)      float dtypes to run the float specs in (default: float32, plus float64
                       for an op's first sample)
    _grad=False        compare forward only (no gradient exists or torch has none)
    _atol/_rtol        override the tolerance of this case
    _cmp=callable      (fjax_out_np, torch_out_np) -> None, for outputs defined only up to
                       e.g. sign or order; asserts itself
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class F:
    shape: tuple
    lo: float = -1.0
    hi: float = 1.0


@dataclass(frozen=True)
class I:  # noqa: E742 - mirrors the one-letter spec vocabulary
    shape: tuple
    lo: int = 0
    hi: int = 10


@dataclass(frozen=True)
class B:
    shape: tuple


@dataclass(frozen=True)
class D:
    spec: object
    dtype: str


class L(tuple):
    def __new__(cls, *specs):
        return super().__new__(cls, specs)


class S:
    def __init__(self, *args, **kwargs):
        self.options = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith("_")}
        self.args = args
        self.kwargs = kwargs

    def __repr__(self):
        return f"S(args={self.args!r}, kwargs={self.kwargs!r})"
