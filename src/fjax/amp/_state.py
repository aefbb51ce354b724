"""Autocast state (per thread, as torch's) and the cast that op dispatch applies under it.

``dispatch.lift`` binds each op's entry of ``POLICIES`` (None for most ops); a call of an op
with a policy reads the process-wide ``flag.on`` and, only while some thread has autocast on,
passes its arguments through ``cast`` first, so the op (its checks too) sees the cast Tensors,
as in torch. Nothing else of the op call changes: the kernel cache is keyed by the argument
template, and jit specializes on the (cast) dtypes.
"""

from __future__ import annotations

import inspect
import threading

import jax
import jax.numpy as jnp
import numpy as np

from .._tracing import trace_state
from ..autograd.grad_mode import _state as _grad_state
from ..tensor import Tensor, _Above
from ._policy import BANNED, BANNED_MESSAGES, FP32, FP32_OPT, LOWER, LOWER_IF_UNSET, POLICIES, PROMOTE

__all__ = ["POLICIES", "cast", "flag", "state"]

DEVICE_TYPES = ("cpu", "cuda")
_DEFAULT_DTYPES = {"cpu": np.dtype(jnp.bfloat16), "cuda": np.dtype(jnp.float16)}
_ELIGIBLE = frozenset({np.dtype(jnp.float16), np.dtype(jnp.bfloat16), np.dtype(jnp.float32)})
_F32 = np.dtype(np.float32)


class _State(threading.local):
    """One thread's autocast settings; a new thread starts with autocast off, as in torch."""

    def __init__(self):
        self.on = False  # any device type enabled in this thread
        self.enabled = dict.fromkeys(DEVICE_TYPES, False)
        self.dtype = dict(_DEFAULT_DTYPES)
        self.active: dict = {}  # enabled device type -> its autocast dtype (numpy)
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict = {}  # (id(param), grad mode) -> (param, version, its cast)

    def refresh(self):
        self.active = {d: self.dtype[d] for d in DEVICE_TYPES if self.enabled[d]}
        was, self.on = self.on, bool(self.active)
        if self.on != was:
            with _lock:
                flag.on += 1 if self.on else -1


class _Flag:
    """Process-wide: how many threads have autocast on. Op dispatch reads this plain attribute
    (a thread-local one costs ~0.1 us) and looks at the calling thread's state only when > 0."""

    __slots__ = ("on",)

    def __init__(self):
        self.on = 0


flag = _Flag()
_lock = threading.Lock()
state = _State()

_gpu = []  # [whether jax has a GPU], filled on first use


def has_gpu() -> bool:
    """Whether JAX has a GPU (what ``fjax.cuda.is_available()`` answers; this module is below it)."""
    if not _gpu:
        try:
            _gpu.append(bool(jax.devices("gpu")))
        except RuntimeError:
            _gpu.append(False)
    return _gpu[0]


def _device_type(a) -> str:
    """``"cpu"`` or ``"cuda"``: where array ``a`` lives (a tracer: the default device's);
    ``"other"`` for an array that is no jax array (a meta tensor's: never cast, as in torch)."""
    if not _gpu:
        has_gpu()
    if isinstance(a, jax.core.Tracer):  # traced: where jit places it, the default device
        if not _gpu[0]:
            return "cpu"
        d = jax.config.jax_default_device
        platform = getattr(d, "platform", d) if d is not None else jax.default_backend()
        return "cpu" if platform == "cpu" else "cuda"
    if not isinstance(a, jax.Array):
        return "other"
    if not _gpu[0]:
        return "cpu"
    return "cpu" if next(iter(a.devices())).platform == "cpu" else "cuda"


def _argument(op, args, kwargs, param):
    """The value the call passes for ``param`` (None when it passes none)."""
    if param in kwargs:
        return kwargs[param]
    try:
        i = op.params.index(param)
    except ValueError:
        return None
    return args[i] if i < len(args) else None


def _resolve(policy, op, args, kwargs):
    """A policy as its plain kind for this call (None: no cast)."""
    if type(policy) is tuple and policy[0] == LOWER_IF_UNSET:  # (LOWER_IF_UNSET, params)
        return None if any(_argument(op, args, kwargs, p) is not None for p in policy[1]) else LOWER
    if type(policy) is tuple:  # (FP32_IF, param, values)
        _, param, values = policy
        value = _argument(op, args, kwargs, param)
        if value is None:
            value = inspect.signature(op.fn).parameters[param].default
        return FP32 if value in values else None
    if policy == FP32_OPT:
        return None if _argument(op, args, kwargs, "dtype") is not None else FP32
    return policy


def _cast_to(t: Tensor, dtype, lower: bool):
    """``t`` as ``dtype``, through the tape (grads flow back in ``t``'s dtype). Casts of leaf
    float32 parameters to the autocast dtype are cached until the outermost autocast exits
    (torch's weight cache), but never inside a trace (the cast would leak or go stale)."""
    cast_op = _Above.ops._cast  # dispatch's functions (this module is below dispatch)
    st = state
    if not (lower and st.cache_enabled and t._requires_grad and t._node is None and not trace_state.depth):
        return cast_op(t, dtype=dtype)
    if t._data.dtype != _F32 or t._is_view():
        return cast_op(t, dtype=dtype)
    key = (id(t), _grad_state.enabled)
    hit = st.cache.get(key)
    if hit is not None and hit[0] is t and hit[1] == t._vc[0] and hit[2]._data.dtype == dtype:
        return hit[2]
    out = cast_op(t, dtype=dtype)
    st.cache[key] = (t, t._vc[0], out)
    return out


def _tensors(x, found: list) -> None:
    """Every Tensor in an argument (lists and tuples of them too), in order."""
    if isinstance(x, Tensor):
        found.append(x)
    elif type(x) in (list, tuple):
        for e in x:
            _tensors(e, found)


def _replace(x, casts: dict):
    if isinstance(x, Tensor):
        return casts.get(id(x), x)
    if type(x) in (list, tuple):
        return type(x)(_replace(e, casts) for e in x)
    return x


def cast(policies: dict, op, args: tuple, kwargs: dict) -> tuple:
    """``(args, kwargs)`` with the op's floating Tensor inputs cast as its policy on their device
    type asks (``policies``: the op's ``POLICIES`` entry); the same objects when nothing is cast."""
    if not state.on:  # autocast is on in another thread only
        return args, kwargs
    active = state.active
    found: list = []
    for a in args:
        _tensors(a, found)
    for v in kwargs.values():
        _tensors(v, found)
    eligible = []  # (Tensor, device type)
    for x in found:
        a = x._data
        if a.dtype in _ELIGIBLE:
            device = _device_type(a)
            if device in active and device in policies:
                eligible.append((x, device))
    if not eligible:
        return args, kwargs
    targets: dict = {}
    for device in {d for _, d in eligible}:
        kind = _resolve(policies[device], op, args, kwargs)
        if kind == LOWER:
            targets[device] = (active[device], True)
        elif kind == FP32:
            targets[device] = (_F32, False)
        elif kind == PROMOTE:
            widest = active[device]
            for x, d in eligible:
                if d == device:
                    widest = np.dtype(jnp.promote_types(widest, x._data.dtype))
            targets[device] = (widest, False)
        elif kind == BANNED:
            raise RuntimeError(BANNED_MESSAGES[op.name])
    casts: dict = {}  # id(Tensor) -> its cast: one cast per Tensor (matmul(x, x))
    for x, device in eligible:
        target = targets.get(device)
        if target is None or x._data.dtype == target[0] or id(x) in casts:
            continue
        casts[id(x)] = _cast_to(x, target[0], target[1])
    if not casts:
        return args, kwargs
    args = tuple(_replace(a, casts) for a in args)
    if kwargs:
        kwargs = {k: _replace(v, casts) for k, v in kwargs.items()}
    return args, kwargs


def key() -> tuple:
    """The autocast settings that change what ops compute, as a hashable value (for caches of
    traced programs: a program traced under one setting is stale under another)."""
    st = state
    return tuple(sorted((d, str(t)) for d, t in st.active.items()))
