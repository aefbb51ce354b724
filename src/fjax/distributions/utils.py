"""Helpers shared by the distributions, with torch.distributions.utils' names: parameter
broadcasting, probs/logits conversion and ``lazy_property``."""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import _lazy, creation, dispatch
from .. import dtypes as _dt
from .. import random as _random
from .._tracing import trace_state
from ..autograd.grad_mode import enable_grad
from ..nn import functional as F
from ..tensor import Size, Tensor
from . import constraints as _constraints

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "euler_constant",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
    "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.5772156649015329  # Euler-Mascheroni constant
_NUMBER = (bool, int, float)


def broadcast_all(*values) -> tuple[Tensor, ...]:
    """Broadcast tensors and Python numbers to one shape; numbers become tensors of the first
    tensor's dtype (the default dtype when all are numbers). Dtypes are not promoted, as in torch.

    Example::

        >>> from fjax.distributions.utils import broadcast_all
        >>> loc, scale = broadcast_all(fjax.zeros(2, dtype=fjax.float64), 1.0)
        >>> scale
        tensor([1., 1.], dtype=fjax.float64)
    """
    if not all(isinstance(v, (Tensor, *_NUMBER)) for v in values):
        kinds = ", ".join(type(v).__name__ for v in values)
        raise ValueError(f"Input arguments must all be instances of Number or fjax.Tensor, got ({kinds}).")
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), _dt.get_default_dtype())
    tensors = [v if isinstance(v, Tensor) else creation.tensor(v, dtype=dtype) for v in values]
    shape = Size(np.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: a sigmoid when ``is_binary``, else a softmax over the last dim.

    Example::

        >>> from fjax.distributions.utils import logits_to_probs
        >>> logits_to_probs(fjax.tensor([0.0, 0.0]))
        tensor([0.5000, 0.5000], dtype=fjax.float32)
    """
    if is_binary:
        return logits.sigmoid()
    return F.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` clamped to ``[eps, 1 - eps]`` with ``eps`` its dtype's machine epsilon.

    Example::

        >>> from fjax.distributions.utils import clamp_probs
        >>> clamp_probs(fjax.tensor([0.0, 1.0], dtype=fjax.float64))
        tensor([2.2204e-16, 1.0000e+00], dtype=fjax.float64)
    """
    eps = _finfo(probs).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (clamped first): ``log p - log1p(-p)`` when ``is_binary``, else ``log p``.

    Example::

        >>> from fjax.distributions.utils import probs_to_logits
        >>> probs_to_logits(fjax.tensor([0.5]), is_binary=True)
        tensor([0.], dtype=fjax.float32)
    """
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


def _tril_positions(n: int, diag: int) -> np.ndarray:
    """Flat (row-major) positions in an ``n x n`` matrix of the entries on or below diagonal ``diag``."""
    arange = np.arange(n)
    return np.flatnonzero(arange < arange.reshape(-1, 1) + (diag + 1))


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of ``mat`` (``(..., n, n)``) on or below diagonal ``diag``, row by row, as a vector.

    Args:
        mat: a batch of square matrices.
        diag: the highest diagonal kept (0 the main one, -1 strictly below it).

    Example::

        >>> from fjax.distributions.utils import tril_matrix_to_vec
        >>> tril_matrix_to_vec(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([1., 3., 4.], dtype=fjax.float32)
    """
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"tril_matrix_to_vec: diag ({diag}) provided is outside [{-n}, {n - 1}].")
    index = creation.tensor(_tril_positions(n, diag), dtype=_dt.int64)
    return mat.reshape(tuple(mat.shape[:-2]) + (n * n,)).index_select(-1, index)


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The square matrix whose entries on or below diagonal ``diag`` are ``vec``'s, row by row (zeros above).

    Args:
        vec: a batch of vectors whose length is a triangular number for ``diag``.
        diag: the highest diagonal filled (0 the main one, -1 strictly below it).

    Example::

        >>> from fjax.distributions.utils import vec_to_tril_matrix
        >>> vec_to_tril_matrix(fjax.tensor([1.0, 3.0, 4.0]))
        tensor([[1., 0.],
                [3., 4.]], dtype=fjax.float32)
    """
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > _finfo(vec).eps:
        raise ValueError(f"vec_to_tril_matrix: the size of last dimension ({m}) is not a triangular number")
    n = round(n)
    gather = np.full(n * n, m)  # position m of the padded vector holds a zero
    gather[_tril_positions(n, diag)] = np.arange(m)
    padded = F.pad(vec, [0, 1])
    index = creation.tensor(gather, dtype=_dt.int64)
    return padded.index_select(-1, index).reshape(tuple(vec.shape[:-1]) + (n, n))


class lazy_property:  # noqa: N801 - torch's name
    """A property computed on first access (with grad enabled) and then stored on the instance,
    so later reads are plain attribute reads; distributions use it for ``probs``/``logits``.

    Example::

        >>> from fjax.distributions.utils import lazy_property
        >>> class Circle:
        ...     def __init__(self, r):
        ...         self.r = r
        ...     @lazy_property
        ...     def area(self):
        ...         return 3.0 * self.r**2
        >>> c = Circle(2.0)
        >>> c.area, "area" in vars(c)
        (12.0, True)
    """

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


# -- private helpers -----------------------------------------------------------------------
def _finfo(t: Tensor):
    """The numpy ``finfo`` of a floating tensor's dtype (``eps``, ``tiny``, ``min``)."""
    return jnp.finfo(t.dtype.dtype)


def _traced(*tensors) -> bool:
    """Whether any tensor holds a tracer (inside fjax.func / nn.Graph): its values are unknown."""
    return any(isinstance(t, Tensor) and isinstance(t._meta, jax.core.Tracer) for t in tensors)


def _all_true(valid: Tensor) -> bool:
    """Whether every entry of a boolean tensor is True; True inside a trace, where it cannot be known."""
    return _traced(valid) or bool(valid.all())


def _check_all(value: Tensor, check, error) -> None:
    """Raise ``error()`` unless every entry of ``check(value)`` is True (nothing inside a
    trace). Under eager fusion, in a loop (a check point seen before), the check is recorded in
    the thread's open segment and tested when it runs (``fjax._lazy.check_later``): validating
    a distribution made from a step's outputs, or a sample given to its ``log_prob`` (an action
    chosen on the host), does not end the step's segment. A constraint's check is one kernel
    (``_check_kernel``), not one op per comparison."""
    tag = getattr(check, "__func__", check)  # (a bound method: its function)
    later = isinstance(value, Tensor) and _lazy.check_point(tag)
    with contextlib.nullcontext() if later else _lazy.aside():  # (read now, in a segment of its own)
        if _traced(value):
            return
        kernel = _check_kernel(check) if isinstance(value, Tensor) else None
        ok = kernel(value) if kernel is not None else check(value).all()
        if _traced(ok):  # (a trace's own value: unknown)
            return
        if later and type(ok._meta) is _lazy.Pending:
            _lazy.check_later(ok._meta, lambda: _raise(error))
            return
        if not bool(ok):
            raise error()


def _raise(error):
    raise error()


_check_kernels: dict = {}  # (check's function, its constraint's state) -> kernel


def _check_kernel(check):
    """``lambda value: check(value).all()`` as one kernel (``dispatch.kernel_of``) where
    ``check`` is a constraint's method and the constraint holds only Python values (bounds,
    nested constraints): the same kernel then serves every constraint of that type and state.
    None for anything else (a constraint holding tensors, a plain function): its ops then run
    one by one."""
    owner = getattr(check, "__self__", None)
    state = _static_state(owner) if isinstance(owner, _constraints.Constraint) else None
    if state is None:
        return None
    key = (check.__func__, state)
    found = _check_kernels.get(key)
    if found is None:
        if len(_check_kernels) >= 4096:
            _check_kernels.clear()
        name = f"{type(owner).__name__.lstrip('_')}.check"
        found = _check_kernels[key] = dispatch.kernel_of(name, lambda value: check(value).all(), False)
    return found


def _static_state(obj, depth=0):
    """A hashable summary of a constraint's attributes (each plain Python value with its type,
    nested constraints summarized alike), or None if one is anything else (a tensor)."""
    items = [type(obj)]
    for v in vars(obj).values():
        t = type(v)
        if t in _PLAIN:
            items.append((t, v))
        elif depth < 4 and isinstance(v, _constraints.Constraint):
            inner = _static_state(v, depth + 1)
            if inner is None:
                return None
            items.append(inner)
        else:
            return None
    return tuple(items)


_PLAIN = dispatch._PLAIN  # (the plain Python values a kernel's key may hold)


def one_kernel(method):
    """A distribution method of Tensors (``log_prob``, ``entropy``) as ONE kernel
    (``dispatch.kernel_of``) of the distribution's tensors and the method's tensor arguments,
    differentiable: a policy's ``Categorical(logits).log_prob(action)`` is one op instead of six
    (four of them views), and its backward one VJP. A method that checks its first argument
    against the support (it calls ``_validate_sample``) has that check run first, as its own
    kernel.

    Used where the distribution holds only tensors and plain Python values (shapes, counts,
    flags): one holding other objects (a base distribution, transforms with parameters of their
    own), an argument that is not a tensor, validation off (ops' own value checks, such as
    gather's index bounds, must run: a kernel is traced, where they cannot), a trace
    (``fjax.func``, ``nn.Graph``) or a method that reads the host runs op by op, as written."""
    validates = "_validate_sample" in method.__code__.co_names

    @functools.wraps(method)
    def fused(self, *args):
        if trace_state.depth or (validates and not self._validate_args):
            return method(self, *args)
        if not all(isinstance(a, Tensor) for a in args):
            return method(self, *args)
        names, tensors, static = [], [], [type(self), len(args)]
        for k, v in vars(self).items():
            t = type(v)
            if isinstance(v, Tensor):
                names.append(k)
                tensors.append(v)
            elif t in _PLAIN or t is Size:
                static.append((k, t, v))
            else:
                return method(self, *args)
        key = (method, tuple(names), tuple(static))
        kernel = _method_kernels.get(key)
        if kernel is None:
            if len(_method_kernels) >= 4096:
                _method_kernels.clear()
            kernel = _method_kernels[key] = dispatch.kernel_of(method.__qualname__, _on_shell(method, self, names))
        if validates:
            self._validate_sample(args[0])
        return kernel(*tensors, *args)

    return fused


_method_kernels: dict = {}  # (method, tensor attributes, plain attributes) -> kernel


def _on_shell(method, obj, names):
    """``method`` as a function of the values of ``obj``'s tensor attributes ``names`` and of
    its arguments: it runs on a shell of ``obj``'s class holding those values in the tensors'
    places and ``obj``'s plain values (which the kernel's key holds) elsewhere."""
    cls, n = type(obj), len(names)
    plain = {k: v for k, v in vars(obj).items() if k not in names}

    def call(*tensors):
        shell = object.__new__(cls)
        vars(shell).update(plain)
        vars(shell).update(zip(names, tensors[:n]))
        shell._validate_args = False  # (checked before the kernel, on the values)
        return method(shell, *tensors[n:])

    return call


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.ndim - dim]) + (-1,)).sum(-1)


def _size(shape) -> Size:
    return shape if isinstance(shape, Size) else Size(tuple(shape))


def _standard_normal(shape, dtype) -> Tensor:
    """N(0, 1) draws of ``shape`` from fjax's default generator."""
    return _random.randn(*tuple(shape), dtype=dtype)


def _uniform(shape, dtype) -> Tensor:
    """U[0, 1) draws of ``shape`` from fjax's default generator."""
    return _random.rand(*tuple(shape), dtype=dtype)
