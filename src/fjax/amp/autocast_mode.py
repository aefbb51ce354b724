"""``fjax.amp.autocast``: torch's automatic mixed precision regions over fjax's op dispatch.

The state is per thread and per device type (``"cpu"``, ``"cuda"``), as torch's. While a region
is enabled, ops from torch's autocast lists cast their floating inputs (see ``_policy.py``);
the casts are ordinary taped ops, so gradients reach float32 parameters in float32.
"""

from __future__ import annotations

import collections.abc
import functools
import warnings

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor
from ._state import DEVICE_TYPES, has_gpu, state

__all__ = [
    "autocast",
    "autocast_decrement_nesting",
    "autocast_increment_nesting",
    "clear_autocast_cache",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_cache_enabled",
    "is_autocast_enabled",
    "set_autocast_cache_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used for ``device_type``: True for ``"cpu"`` and ``"cuda"`` (whether
    or not a GPU is present, as torch answers), False for any other device type.

    Example::

        >>> fjax.amp.is_autocast_available("cpu"), fjax.amp.is_autocast_available("meta")
        (True, False)
    """
    return device_type in DEVICE_TYPES


def _device_type(device_type) -> str:
    if device_type not in DEVICE_TYPES:
        raise RuntimeError(f"fjax.amp: unsupported autocast device_type {device_type!r}; expected 'cpu' or 'cuda'")
    return device_type


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is enabled for ``device_type`` in this thread (``None``: ``"cuda"``, as
    torch's legacy form).

    Example::

        >>> with fjax.amp.autocast("cpu"):
        ...     fjax.amp.is_autocast_enabled("cpu"), fjax.amp.is_autocast_enabled()
        (True, False)
        >>> fjax.amp.is_autocast_enabled("cpu")
        False
    """
    return state.enabled[_device_type("cuda" if device_type is None else device_type)]


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Enable or disable autocast for ``device_type`` in this thread (``set_autocast_enabled(flag)``:
    for ``"cuda"``). Prefer the ``autocast`` context manager, which restores the previous state.

    Example::

        >>> fjax.amp.set_autocast_enabled("cpu", True)
        >>> fjax.mm(fjax.ones(2, 2), fjax.ones(2, 2)).dtype
        fjax.bfloat16
        >>> fjax.amp.set_autocast_enabled("cpu", False)
    """
    if enabled is None:
        device_type, enabled = "cuda", device_type
    state.enabled[_device_type(device_type)] = bool(enabled)
    state.refresh()


def get_autocast_dtype(device_type: str) -> _dt.dtype:
    """The dtype autocast casts to for ``device_type`` in this thread: ``fjax.bfloat16`` for CPU
    and ``fjax.float16`` for CUDA unless an ``autocast(dtype=...)`` region or
    ``set_autocast_dtype`` changed it.

    Example::

        >>> fjax.amp.get_autocast_dtype("cpu"), fjax.amp.get_autocast_dtype("cuda")
        (fjax.bfloat16, fjax.float16)
        >>> with fjax.amp.autocast("cpu", dtype=fjax.float16):
        ...     fjax.amp.get_autocast_dtype("cpu")
        fjax.float16
    """
    return _dt._BY_NP[state.dtype[_device_type(device_type)]]


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the dtype autocast casts to for ``device_type`` in this thread.

    Example::

        >>> fjax.amp.set_autocast_dtype("cpu", fjax.float16)
        >>> fjax.amp.get_autocast_dtype("cpu")
        fjax.float16
        >>> fjax.amp.set_autocast_dtype("cpu", fjax.bfloat16)
    """
    state.dtype[_device_type(device_type)] = np.dtype(_dt.to_dtype(dtype).dtype)
    state.refresh()


def is_autocast_cache_enabled() -> bool:
    """Whether casts of float32 leaf parameters are cached inside autocast regions (default True).

    Example::

        >>> fjax.amp.is_autocast_cache_enabled()
        True
    """
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the autocast weight-cast cache on or off in this thread.

    Example::

        >>> fjax.amp.set_autocast_cache_enabled(False)
        >>> fjax.amp.is_autocast_cache_enabled()
        False
        >>> fjax.amp.set_autocast_cache_enabled(True)
    """
    state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts of parameters (the outermost autocast exit does this itself).

    Example::

        >>> fjax.amp.clear_autocast_cache()
    """
    state.cache.clear()


def autocast_increment_nesting() -> int:
    """Count one more open autocast region in this thread; returns the new depth.

    Example::

        >>> fjax.amp.autocast_increment_nesting(), fjax.amp.autocast_decrement_nesting()
        (1, 0)
    """
    state.nesting += 1
    return state.nesting


def autocast_decrement_nesting() -> int:
    """Count one open autocast region less; returns the new depth (0: outside every region).

    Example::

        >>> fjax.amp.autocast_increment_nesting(), fjax.amp.autocast_decrement_nesting()
        (1, 0)
    """
    state.nesting -= 1
    return state.nesting


class autocast:  # noqa: N801 - torch's name
    """A region where ops run in mixed precision: ``torch.autocast``'s semantics on fjax ops.

    Args:
        device_type: ``"cpu"`` or ``"cuda"``; only Tensors on that device type are cast.
        dtype: the lower-precision dtype (default: ``get_autocast_dtype(device_type)``, i.e.
            ``bfloat16`` on CPU, ``float16`` on CUDA). CPU takes ``bfloat16`` or ``float16``;
            another dtype warns and disables the region, as torch does.
        enabled: False makes a region where autocast is off (nested inside an enabled one, it
            turns autocast off locally).
        cache_enabled: whether the casts of float32 leaf parameters are cached inside the region
            (default: ``is_autocast_cache_enabled()``).

    Inside an enabled region, an op in torch's lower-precision list for the device (``mm``,
    ``matmul``, ``linear``, ``conv*``, ``bmm``, ``baddbmm``, ``addmm``, ...) casts its floating
    inputs (float16/bfloat16/float32; float64 is left alone) to ``dtype``; an op in the float32
    list (losses, ``prod``, ``cdist``, solvers, ... and on CUDA ``exp``, ``log``, ``softmax``,
    ``layer_norm``, ...) runs in float32; ``cat``/``stack`` promote; every other op runs on
    what it is given. The casts are recorded, so gradients of float32 parameters are float32.
    ``autocast`` also decorates functions. Regions nest and restore the outer state on exit.
    A ``"cuda"`` region on a machine without a GPU warns and is disabled, as in torch.

    Example::

        >>> lin = nn.Linear(3, 2)
        >>> x = fjax.randn(4, 3)
        >>> with fjax.amp.autocast("cpu"):
        ...     y = lin(x)
        ...     loss = F.mse_loss(y, fjax.zeros(4, 2))
        >>> y.dtype, loss.dtype
        (fjax.bfloat16, fjax.float32)
        >>> loss.backward()
        >>> lin.weight.grad.dtype
        fjax.float32
        >>> with fjax.amp.autocast("cpu"):
        ...     with fjax.amp.autocast("cpu", enabled=False):
        ...         fjax.mm(x, x.T).dtype
        fjax.float32
        >>> @fjax.amp.autocast("cpu")
        ... def f(a):
        ...     return a @ a.T
        >>> f(x).dtype
        fjax.bfloat16
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else _dt.to_dtype(dtype)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if enabled:
            if device_type == "cuda":
                # (every GPU runs bfloat16 under XLA: torch's "does not support bfloat16" cannot occur)
                if not has_gpu():
                    warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in (_dt.bfloat16, _dt.float16):
                warnings.warn(
                    "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                    "CPU Autocast only supports dtypes of fjax.bfloat16, fjax.float16 currently.",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        st = state
        self._saved = (st.cache_enabled, st.enabled[self.device], st.dtype[self.device])
        st.enabled[self.device] = self._enabled
        st.dtype[self.device] = np.dtype(self.fast_dtype.dtype)
        st.nesting += 1
        st.cache_enabled = self._cache_enabled
        st.refresh()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        st = state
        st.nesting -= 1
        if st.nesting == 0:
            st.cache.clear()
        st.cache_enabled, st.enabled[self.device], st.dtype[self.device] = self._saved
        st.refresh()
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with fjax.autocast(device_type=...):\n"
                "        output = model(input)"
            )

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast

    def __repr__(self):
        return f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, enabled={self._enabled})"


def _cast(value, device_type: str, dtype):
    """Floating Tensors (not float64) on ``device_type`` in ``value`` (nested in lists, tuples,
    dicts) cast to ``dtype``; everything else as it is."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype != _dt.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate a custom ``autograd.Function``'s ``forward``: with ``cast_inputs`` (a dtype), inside
    an enabled autocast region the forward runs with autocast off on its floating inputs cast
    to ``cast_inputs``; without it, the forward runs under the ambient autocast state, which
    ``custom_bwd`` then restores for the backward.

    Example::

        >>> class Square(fjax.autograd.Function):
        ...     @staticmethod
        ...     @fjax.amp.custom_fwd(device_type="cpu", cast_inputs=fjax.float32)
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return fjax.mm(x, x)
        ...     @staticmethod
        ...     @fjax.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return fjax.mm(g, x.T) + fjax.mm(x.T, g)
        >>> with fjax.amp.autocast("cpu"):
        ...     Square.apply(fjax.ones(2, 2, dtype=fjax.bfloat16)).dtype
        fjax.float32
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate a custom ``autograd.Function``'s ``backward`` (see ``custom_fwd``): it runs under the
    autocast state its forward ran under.

    Example::

        >>> @fjax.amp.custom_bwd(device_type="cpu")
        ... def backward(ctx, g):
        ...     return g
        >>> callable(backward)
        True
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
