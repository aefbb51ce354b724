"""An optimizer's hyper-parameters, declared once: ``Hyper`` entries from which the constructor's
signature and checks, ``defaults`` (hence ``param_groups`` and the state_dict) and the split of
a step's inputs into traced numbers and static flags (the jit key) are all derived.

A subclass of ``Optimizer`` lists its entries in torch's signature order, ``KW`` marking where
the keyword-only ones start, as ``_hypers = (number("lr", 1e-3), ..., KW, flag("maximize"), ...)``:

- ``number``: a value every step reads as a traced leaf (lr, betas, ...): changing it between
  steps never recompiles; ``static=`` also derives a structural flag from it (``weight_decay != 0``);
- ``flag``: a structural option (``amsgrad``, ``nesterov``): part of the static key, not traced;
- ``accepted``: torch's option that changes nothing here (``foreach``, ``fused``, ``capturable``);
- ``unsupported``: torch's option whose non-default value raises NotImplementedError;
- ``oneflow``: OneFlow's option, a ``param_groups`` key only where it differs from its default,
  so torch's groups stay key-for-key torch's;
- ``fixed``: a ``defaults`` entry that is not a parameter (AdamW's ``decoupled_weight_decay=True``).

The static flags are a named tuple (``static.amsgrad``, ``static.weight_decay`` meaning "weight
decay on"), the traced numbers a dict (``hyper["lr"]``).
"""

from __future__ import annotations

import inspect
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor

KW = "*"  # in ``_hypers``: the entries after it are keyword-only, as in a ``def``
_PLAIN = (bool, int, float, str, type(None))


class Hyper:
    """One hyper-parameter: its name and default, the constructor's check of it, and how a step sees it."""

    __slots__ = ("name", "default", "annotation", "check", "convert", "traced", "static", "role")

    def __init__(self, name, default, annotation, *, check=None, convert=None, traced=None, static=None, role="param"):
        self.name, self.default, self.annotation = name, default, annotation
        self.check: Callable | None = check  # check(optimizer name, name, value) raises on a bad value
        self.convert: Callable | None = convert  # the value as ``defaults`` keeps it (e.g. betas as a tuple)
        self.traced: Callable | None = traced  # value -> traced leaves, or None: not an input of the step
        self.static: Callable | None = static  # value -> hashable flag of the jit key, or None
        self.role = role  # "param", "oneflow" (a group key only where not default) or "fixed" (no parameter)


def _number(value):
    """A hyper-parameter as a traced leaf: Python float, or a Tensor's array."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (tuple, list)):
        return tuple(_number(v) for v in value)
    return float(value)


def _annotation(default) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, tuple):
        return f"tuple[{', '.join(['float'] * len(default))}]"
    return "float"


def nonnegative(opt: str, name: str, value) -> None:
    """torch's constructor check of most numbers: ``value >= 0``."""
    if float(value) < 0.0:
        raise ValueError(f"fjax.optim.{opt}: invalid {name} value: {value}")


def betas(opt: str, name: str, value) -> None:
    """torch's check of Adam-family ``betas``: each in [0, 1)."""
    for i, beta in enumerate(value):
        if not 0.0 <= float(beta) < 1.0:
            raise ValueError(f"fjax.optim.{opt}: invalid beta parameter at index {i}: {beta}")


def nonzero(value) -> bool:
    """The static flag of a number whose zero switches a part of the update off (weight_decay, momentum)."""
    return float(value) != 0


def number(name: str, default, *, check=nonnegative, convert=None, static=None, traced=_number, annotation=None):
    """A traced number (see the module docstring)."""
    annotation = annotation or _annotation(default)
    return Hyper(name, default, annotation, check=check, convert=convert, traced=traced, static=static)


def flag(name: str, default=False, *, static=bool, check=None, annotation=None) -> Hyper:
    """A structural option, part of the static key."""
    return Hyper(name, default, annotation or _annotation(default), check=check, static=static)


def accepted(name: str, default=None) -> Hyper:
    """torch's option that changes nothing in fjax (one XLA update per group, steps on the device)."""
    return Hyper(name, default, "bool | None" if default is None else "bool")


def _refuse(opt: str, name: str, value) -> None:
    if value:
        raise NotImplementedError(f"fjax.optim.{opt}: {name}={value!r} is not supported")


def unsupported(name: str, default=False) -> Hyper:
    """torch's option whose non-default (truthy) value fjax refuses with NotImplementedError."""
    return Hyper(name, default, "bool", check=_refuse)


def oneflow(name: str, default=False, *, static=None) -> Hyper:
    """OneFlow's option: a group key only where it differs from its default."""
    return Hyper(name, default, "bool", static=static, role="oneflow")


def fixed(name: str, value, *, static=None) -> Hyper:
    """A ``defaults`` entry that is not a parameter of the constructor."""
    return Hyper(name, value, None, static=static, role="fixed")


class Spec:
    """What an optimizer class derives from its ``_hypers``: signature, checks, defaults, static/traced split."""

    def __init__(self, owner: str, hypers: tuple):
        self.owner = owner
        kind, params = inspect.Parameter.POSITIONAL_OR_KEYWORD, []
        self.entries: list[Hyper] = []
        for h in hypers:
            if h == KW:
                kind = inspect.Parameter.KEYWORD_ONLY
                continue
            self.entries.append(h)
            if h.role != "fixed":
                params.append(inspect.Parameter(h.name, kind, default=h.default, annotation=h.annotation))
        names = [h.name for h in self.entries]
        if len(set(names)) != len(names):
            raise TypeError(f"fjax.optim.{owner}._hypers: a name is declared twice: {names}")
        lead = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in ("self", "params")]
        self.signature = inspect.Signature(lead + params)
        self.traced = tuple((h.name, h.default, h.traced) for h in self.entries if h.traced is not None)
        self.static = tuple((h.name, h.default, h.static) for h in self.entries if h.static is not None)
        self.Static = namedtuple(f"{owner}Static", [name for name, _, _ in self.static])
        self._static_names = tuple(name for name, _, _ in self.static)
        self._static_defaults = tuple(default for _, default, _ in self.static)
        self._static_memo: dict[tuple, tuple] = {}  # a group's raw flag values -> its static flags

    def defaults(self, opt: str, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The checked ``defaults`` of a constructor call ``(self, params, *args, **kwargs)``."""
        try:
            bound = self.signature.bind(None, None, *args, **kwargs)
        except TypeError as e:
            raise TypeError(f"fjax.optim.{opt}: {e}; expected {self.signature}") from None
        bound.apply_defaults()
        values = bound.arguments
        out = {}
        for h in self.entries:
            value = h.default if h.role == "fixed" else values[h.name]
            if h.check is not None:
                h.check(opt, h.name, value)
            if h.convert is not None:
                value = h.convert(value)
            if h.role != "oneflow" or value != h.default:
                out[h.name] = value
        return out

    def static_of(self, group: dict) -> tuple:
        """The group's static flags (a ``Static`` named tuple); an eager step asks for them every
        time, so those of plain Python values are remembered (a Tensor's value may change in place)."""
        raw = tuple(map(group.get, self._static_names, self._static_defaults))
        try:
            return self._static_memo[raw]
        except (KeyError, TypeError):  # TypeError: an unhashable value
            pass
        static = self.Static._make([fn(value) for (_, _, fn), value in zip(self.static, raw)])
        if all(type(v) in _PLAIN for v in raw):
            if len(self._static_memo) >= 256:  # e.g. a weight-decay schedule: keep the memo small
                self._static_memo.clear()
            self._static_memo[raw] = static
        return static

    def hyper_of(self, group: dict) -> dict:
        get = group.get
        return {name: fn(get(name, default)) for name, default, fn in self.traced}


def spec_init(spec: Spec, base_init: Callable):
    """An ``__init__`` whose signature is ``spec``'s: check the values, then ``base_init(self, params, defaults)``."""

    def __init__(self, params, *args, **kwargs):
        base_init(self, params, spec.defaults(type(self).__name__, args, kwargs))

    __init__.__signature__ = spec.signature
    __init__.__doc__ = f"Check the hyper-parameters of {spec.owner} (its ``_hypers``) and build the groups."
    return __init__
