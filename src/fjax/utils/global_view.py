"""``fjax.utils.global_view``: OneFlow's helpers for global execution.

- ``to_global(input, placement, sbp)`` / ``to_local(input)``: a tensor, or every tensor of a
  (nested) dict, list or tuple such as a state dict, made global / local;
- ``global_mode(enabled, placement, sbp)``: a context in which the creation ops (``randn``,
  ``zeros``, ``tensor``, ``arange``, ...) make global tensors on ``placement`` with ``sbp``;
- ``current_global_mode()``: the innermost mode of this thread.

fjax runs one controller over all devices (jax), so the rank-0 broadcast OneFlow's
``to_global`` does for a placement that leaves out ranks is not needed: with one process the
local value is the logical value, with several (jax.distributed) it is this process's piece.
"""

from __future__ import annotations

import types
import warnings

from ..distributed import global_tensor as _gt
from ..distributed.placement import as_sbp_tuple
from ..distributed.placement import placement as _placement
from ..tensor import Tensor

__all__ = ["current_global_mode", "global_mode", "to_global", "to_local"]


def _map(input, leaf, warn: bool):
    """``leaf`` applied to every Tensor (and None) of a nested dict/list/tuple; other leaves kept."""
    if isinstance(input, Tensor) or input is None:
        return leaf(input)
    if isinstance(input, dict):
        return type(input)((k, _map(v, leaf, warn)) for k, v in input.items())
    if isinstance(input, (list, tuple)):
        items = [_map(v, leaf, warn) for v in input]
        return type(input)(*items) if hasattr(input, "_fields") else type(input)(items)
    if warn:
        warnings.warn(f"global_view: non-Tensor leaf of type {type(input).__name__} is kept as it is", stacklevel=3)
    return input


def _tensors(input) -> list:
    if isinstance(input, Tensor):
        return [input]
    if isinstance(input, dict):
        return [t for v in input.values() for t in _tensors(v)]
    if isinstance(input, (list, tuple)):
        return [t for v in input for t in _tensors(v)]
    return []


def to_global(input, placement=None, sbp=None, warn_on_non_tensor_leaf: bool = True, **kwargs):
    """``input`` made global: a tensor, or every tensor of a nested dict/list/tuple (a state dict).

    A local tensor needs ``placement`` and ``sbp``; a global one keeps what is not given.
    ``sbp`` may be a function ``sbp(input, tensor)`` choosing each tensor's sbp (a tensor that
    ``split(0)`` cannot divide can be broadcast). The tensors must be all local or all global;
    ``None`` leaves stay ``None``. Other keywords go to ``Tensor.to_global``.

    Example::

        >>> p = fjax.placement("cpu", [0])
        >>> sd = fjax.utils.global_view.to_global(nn.Linear(2, 3).state_dict(), p, fjax.sbp.broadcast)
        >>> [v.is_global for v in sd.values()]
        [True, True]
    """
    tensors = _tensors(input)
    if tensors and any(t.is_global != tensors[0].is_global for t in tensors):
        raise ValueError("global_view.to_global: the tensors of the input must be all local or all global")
    if placement is not None and not isinstance(placement, _placement):
        raise TypeError(f"global_view.to_global: placement must be a fjax.placement, got {type(placement).__name__}")
    if tensors and not tensors[0].is_global and (placement is None or sbp is None):
        raise ValueError("global_view.to_global: local tensors need both placement and sbp")

    def leaf(t):
        if t is None:
            return None
        s = sbp(input, t) if isinstance(sbp, types.FunctionType) else sbp
        return t.to_global(placement, s, **kwargs)

    return _map(input, leaf, warn_on_non_tensor_leaf)


def to_local(input, *, copy: bool = False):
    """The local part of ``input``: a tensor, or every tensor of a nested dict/list/tuple.

    A local tensor is kept as it is (with a warning, as OneFlow); ``copy=True`` copies the pieces.

    Example::

        >>> p = fjax.placement("cpu", [0])
        >>> m = nn.Linear(2, 3).to_global(p, fjax.sbp.broadcast)
        >>> [v.is_global for v in fjax.utils.global_view.to_local(m.state_dict()).values()]
        [False, False]
    """

    def leaf(t):
        if t is None:
            return None
        if not t.is_global:
            warnings.warn("global_view.to_local: the tensor is local and is kept as it is", stacklevel=4)
            return t
        out = _gt.to_local(t)
        return out.clone() if copy else out

    if isinstance(input, Tensor):
        return leaf(input)
    return _map(input, leaf, True)


class global_mode:  # noqa: N801 - OneFlow's name
    """A scope in which source ops make global tensors: ``with global_mode(True, placement=p, sbp=s):``.

    Inside an enabled mode the creation ops (``randn``, ``rand``, ``randint``, ``randperm``,
    ``zeros``, ``ones``, ``empty``, ``full``, ``arange``, ``linspace``, ``eye``, ``tensor`` ...)
    called without ``placement=`` give global tensors on ``placement`` with ``sbp`` (a
    ``device=`` argument is then ignored, as in OneFlow). ``global_mode(False)`` turns an outer
    mode off inside it. Modes nest and belong to the thread that entered them.

    Example::

        >>> from fjax.utils.global_view import global_mode
        >>> with global_mode(True, placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.broadcast):
        ...     x = fjax.zeros(2, 2)
        >>> x.is_global, fjax.zeros(2).is_global
        (True, False)
    """

    def __init__(self, enabled: bool, placement=None, sbp=None) -> None:
        if enabled and (placement is None or sbp is None):
            raise ValueError("global_mode: an enabled global mode needs both placement and sbp")
        if enabled and not isinstance(placement, _placement):
            raise TypeError(f"global_mode: placement must be a fjax.placement, got {type(placement).__name__}")
        self.enabled = bool(enabled)
        self.placement = placement if enabled else None
        self.sbp = as_sbp_tuple(sbp, placement, "global_mode") if enabled else None

    def __enter__(self):
        _gt.push_mode(self.enabled, self.placement, self.sbp)
        return self

    def __exit__(self, exc_type, exc, tb):
        _gt.pop_mode()
        return False


class current_global_mode:  # noqa: N801 - OneFlow's name
    """The innermost global mode of this thread: ``is_enabled``, ``placement`` and ``sbp`` (a tuple;
    both None when no mode is on).

    Example::

        >>> from fjax.utils.global_view import current_global_mode, global_mode
        >>> current_global_mode().is_enabled
        False
        >>> with global_mode(True, placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.split(0)):
        ...     current_global_mode().sbp
        (fjax.sbp.split(dim=0),)
    """

    def __init__(self) -> None:
        self._enabled, self._placement, self._sbp = _gt.current_mode()

    @property
    def is_enabled(self) -> bool:
        return self._enabled

    @property
    def placement(self):
        return self._placement

    @property
    def sbp(self):
        return self._sbp

    def __repr__(self):
        return f"current_global_mode(is_enabled={self._enabled}, placement={self._placement!r}, sbp={self._sbp!r})"
