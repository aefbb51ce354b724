"""Reductions, scans and sorting: pure functions of jax arrays with torch's signatures.

Dims are static: an int, a tuple of ints, or None (all dims); negative dims count from the
end. Ops that return indices alongside values (``max(dim)``, ``sort``, ``topk`` ...) take the
values back out of ``input`` with the indices, so the gradient flows to exactly the selected
elements, as in torch.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._promote import DEFAULT_INT
from ._registry import defop


def _wrap(name: str, d: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= d < n:
        raise ValueError(f"{name}: dim {d} is out of range for a tensor of {ndim} dims")
    return d % n


def _dims(name: str, dim, ndim: int) -> tuple:
    """Normalize an int / tuple / None dim to a sorted tuple of axes (None or () = all)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ds = (dim,) if isinstance(dim, int) else tuple(dim)
    axes = tuple(sorted({_wrap(name, d, ndim) for d in ds}))
    if len(axes) != len(ds):
        raise ValueError(f"{name}: dim {dim} names a dimension twice")
    return axes if ndim else ()


def _dim1(name: str, dim: int, ndim: int) -> int | None:
    """One dim for a scan/select op; None for a 0-d input (the op is then the identity)."""
    d = _wrap(name, dim, ndim)
    return d if ndim else None


def _as_dtype(dtype):
    """A dtype argument (numpy/jax dtype, name, or a framework dtype object) as numpy."""
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(str(dtype).rsplit(".", 1)[-1])


def _sum_dtype(x, dtype):
    """torch: bool/integer sums accumulate in int64 unless dtype says otherwise."""
    dtype = _as_dtype(dtype)
    if dtype is not None:
        return dtype
    if x.dtype == np.bool_ or jnp.issubdtype(x.dtype, jnp.integer):
        return DEFAULT_INT
    return np.dtype(x.dtype)


def _need_float(name: str, x):
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise TypeError(f"{name}: expected a floating point or complex input, got {x.dtype}")


def _select(x, idx, axis, keepdim):
    """Values of ``x`` at ``idx`` (keepdim shape) along ``axis``; gradient goes to idx only."""
    v = jnp.take_along_axis(x, idx, axis=axis)
    return (v, idx) if keepdim else (jnp.squeeze(v, axis), jnp.squeeze(idx, axis))


# ----------------------------------------------------------------------------- sums and means


@defop("sum", static=("dim", "keepdim", "dtype"))
def sum_(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` (all dims by default); integer and bool inputs sum in int64."""
    axes = _dims("sum", dim, input.ndim)
    return jnp.sum(input.astype(_sum_dtype(input, dtype)), axis=axes, keepdims=keepdim)


@defop(static=("dim", "keepdim", "dtype"))
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero."""
    axes = _dims("nansum", dim, input.ndim)
    return jnp.nansum(input.astype(_sum_dtype(input, dtype)), axis=axes, keepdims=keepdim)


@defop(static=("dim", "keepdim", "dtype"))
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Arithmetic mean over ``dim``; needs a float input or a float ``dtype``."""
    dtype = _as_dtype(dtype) or np.dtype(input.dtype)
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise TypeError(f"mean: expected a floating point input or dtype, got {dtype}")
    axes = _dims("mean", dim, input.ndim)
    return jnp.mean(input.astype(dtype), axis=axes, keepdims=keepdim)


@defop(static=("dim", "keepdim", "dtype"))
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over the non-NaN elements."""
    dtype = _as_dtype(dtype) or np.dtype(input.dtype)
    _need_float("nanmean", jnp.zeros((), dtype))
    axes = _dims("nanmean", dim, input.ndim)
    return jnp.nanmean(input.astype(dtype), axis=axes, keepdims=keepdim)


@defop(static=("dim", "keepdim", "dtype"))
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over ``dim`` (torch takes one int dim; a tuple is accepted here too)."""
    axes = _dims("prod", dim, input.ndim)
    return jnp.prod(input.astype(_sum_dtype(input, dtype)), axis=axes, keepdims=keepdim)


def _correction(name, dim, unbiased, correction):
    if isinstance(dim, bool):  # torch's var(input, unbiased) overload
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise ValueError(f"{name}: pass either unbiased or correction, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


@defop(static=("dim", "unbiased", "keepdim", "correction"))
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with ``correction`` degrees of freedom removed (default 1)."""
    _need_float("var", input)
    dim, ddof = _correction("var", dim, unbiased, correction)
    return jnp.var(input, axis=_dims("var", dim, input.ndim), ddof=ddof, keepdims=keepdim)


@defop(static=("dim", "unbiased", "keepdim", "correction"))
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over ``dim`` (``sqrt(var)``)."""
    _need_float("std", input)
    dim, ddof = _correction("std", dim, unbiased, correction)
    return jnp.std(input, axis=_dims("std", dim, input.ndim), ddof=ddof, keepdims=keepdim)


@defop(static=("dim", "unbiased", "keepdim", "correction"))
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim``."""
    _need_float("var_mean", input)
    dim, ddof = _correction("var_mean", dim, unbiased, correction)
    axes = _dims("var_mean", dim, input.ndim)
    return (jnp.var(input, axis=axes, ddof=ddof, keepdims=keepdim), jnp.mean(input, axis=axes, keepdims=keepdim))


@defop(static=("dim", "unbiased", "keepdim", "correction"))
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim``."""
    _need_float("std_mean", input)
    dim, ddof = _correction("std_mean", dim, unbiased, correction)
    axes = _dims("std_mean", dim, input.ndim)
    return (jnp.std(input, axis=axes, ddof=ddof, keepdims=keepdim), jnp.mean(input, axis=axes, keepdims=keepdim))


@defop(static=("dim", "keepdim"))
def logsumexp(input, dim=None, keepdim=False):
    """``log(sum(exp(input)))`` over ``dim``, computed stably; integers become float32."""
    x = input if jnp.issubdtype(input.dtype, jnp.inexact) else input.astype(jnp.float32)
    return jax.nn.logsumexp(x, axis=_dims("logsumexp", dim, x.ndim), keepdims=keepdim)


def _safe_root(s, p):
    """``s ** (1/p)`` with a zero (not NaN) gradient at ``s == 0``, as torch's norm."""
    zero = s == 0
    r = jnp.where(zero, 1, s)
    return jnp.where(zero, 0, jnp.sqrt(r) if p == 2 else r ** (1.0 / p))


def _vector_norm(x, p, axes, keepdim):
    # |x| with torch's subgradient sign(x), i.e. 0 at 0 (jnp.abs has 1 there).
    a = jnp.abs(x) if jnp.iscomplexobj(x) else x * jax.lax.stop_gradient(jnp.sign(x))
    if p == math.inf:
        return jnp.max(a, axis=axes, keepdims=keepdim)
    if p == -math.inf:
        return jnp.min(a, axis=axes, keepdims=keepdim)
    if p == 0:
        return jnp.sum(x != 0, axis=axes, keepdims=keepdim).astype(a.dtype)
    if p == 1:
        return jnp.sum(a, axis=axes, keepdims=keepdim)
    s = jnp.sum(jnp.real(x * jnp.conj(x)) if p == 2 else a**p, axis=axes, keepdims=keepdim)
    return _safe_root(s, p)


@defop(static=("p", "dim", "keepdim", "dtype"))
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: vector p-norm over ``dim`` (all dims by default), 'fro' or 'nuc'."""
    dtype = _as_dtype(dtype)
    x = input if dtype is None else input.astype(dtype)
    _need_float("norm", x)
    axes = _dims("norm", dim, x.ndim)
    if p == "nuc":
        if len(axes) != 2:
            raise ValueError(f"norm: p='nuc' needs exactly two dims, got dim={dim}")
        return jnp.linalg.norm(x, ord="nuc", axis=axes, keepdims=keepdim)
    if p == "fro":
        p = 2
    if isinstance(p, str) or not isinstance(p, (int, float)):
        raise ValueError(f"norm: expected p to be a number, 'fro' or 'nuc', got {p!r}")
    return _vector_norm(x, float(p), axes, keepdim)


# ----------------------------------------------------------------------------- extrema


def _extreme(name, fn, argfn, input, dim, keepdim):
    if dim is None:
        if input.size == 0:
            raise ValueError(f"{name}: expected a non-empty input, got shape {input.shape}")
        return fn(input)
    axis = _dim1(name, dim, input.ndim)
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    if input.shape[axis] == 0:
        raise ValueError(f"{name}: cannot reduce over empty dim {dim} of shape {input.shape}")
    idx = jnp.expand_dims(argfn(input, axis=axis).astype(DEFAULT_INT), axis)
    return _select(input, idx, axis, keepdim)


@defop("max", static=("dim", "keepdim"))
def max_(input, dim=None, keepdim=False):
    """``max(input)`` -> value (ties share the gradient); ``max(input, dim)`` -> (values, indices)."""
    return _extreme("max", jnp.max, jnp.argmax, input, dim, keepdim)


@defop("min", static=("dim", "keepdim"))
def min_(input, dim=None, keepdim=False):
    """``min(input)`` -> value; ``min(input, dim)`` -> (values, indices)."""
    return _extreme("min", jnp.min, jnp.argmin, input, dim, keepdim)


@defop(static=("dim", "keepdim"))
def amax(input, dim=(), keepdim=False):
    """Maximum over ``dim`` (all dims by default); ties share the gradient evenly."""
    return jnp.max(input, axis=_dims("amax", dim, input.ndim), keepdims=keepdim)


@defop(static=("dim", "keepdim"))
def amin(input, dim=(), keepdim=False):
    """Minimum over ``dim``; ties share the gradient evenly."""
    return jnp.min(input, axis=_dims("amin", dim, input.ndim), keepdims=keepdim)


@defop(static=("dim", "keepdim"))
def aminmax(input, *, dim=None, keepdim=False):
    """``(amin, amax)`` over ``dim`` (all dims by default)."""
    axes = _dims("aminmax", dim, input.ndim)
    return jnp.min(input, axis=axes, keepdims=keepdim), jnp.max(input, axis=axes, keepdims=keepdim)


def _arg(name, fn, input, dim, keepdim):
    if dim is None:
        out = fn(input.reshape(-1))
        return out.reshape((1,) * input.ndim if keepdim else ()).astype(DEFAULT_INT)
    axis = _dim1(name, dim, input.ndim)
    if axis is None:
        return jnp.zeros((), DEFAULT_INT)
    return fn(input, axis=axis, keepdims=keepdim).astype(DEFAULT_INT)


@defop(static=("dim", "keepdim"), differentiable=False)
def argmax(input, dim=None, keepdim=False):
    """Index of the (first) maximum, over the flattened input when ``dim`` is None."""
    return _arg("argmax", jnp.argmax, input, dim, keepdim)


@defop(static=("dim", "keepdim"), differentiable=False)
def argmin(input, dim=None, keepdim=False):
    """Index of the (first) minimum."""
    return _arg("argmin", jnp.argmin, input, dim, keepdim)


def _median(name, input, dim, keepdim, skip_nan):
    """Lower median as torch's: ``median`` is NaN where its slice holds a NaN (the index is
    the first NaN's); ``nanmedian`` takes the lower median of the values that are not NaN."""
    if dim is None:
        if input.size == 0:
            raise ValueError(f"{name}: expected a non-empty input, got shape {input.shape}")
        values, _ = _median(name, input.reshape(-1), 0, False, skip_nan)
        return values
    axis = _dim1(name, dim, input.ndim)
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    n = input.shape[axis]
    order = jnp.argsort(input, axis=axis, stable=True).astype(DEFAULT_INT)  # NaNs last
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        idx = lax.slice_in_dim(order, (n - 1) // 2, (n - 1) // 2 + 1, axis=axis)
        return _select(input, idx, axis, keepdim)
    nan = jnp.isnan(input)
    if skip_nan:
        valid = jnp.sum(~nan, axis=axis, keepdims=True)
        pos = jnp.maximum((valid - 1) // 2, 0).astype(DEFAULT_INT)
        idx = jnp.take_along_axis(order, pos, axis=axis)
    else:
        mid = lax.slice_in_dim(order, (n - 1) // 2, (n - 1) // 2 + 1, axis=axis)
        first_nan = jnp.argmax(nan, axis=axis, keepdims=True).astype(DEFAULT_INT)
        idx = jnp.where(jnp.any(nan, axis=axis, keepdims=True), first_nan, mid)
    return _select(input, idx, axis, keepdim)


@defop(static=("dim", "keepdim"))
def median(input, dim=None, keepdim=False):
    """Lower median: ``median(input)`` -> value; ``median(input, dim)`` -> (values, indices).
    A NaN makes its slice's median NaN, as torch's."""
    return _median("median", input, dim, keepdim, False)


@defop(static=("dim", "keepdim"))
def nanmedian(input, dim=None, keepdim=False):
    """``median`` of the values that are not NaN (NaN where a slice has none)."""
    return _median("nanmedian", input, dim, keepdim, True)


# ----------------------------------------------------------------------------- logical


@defop("all", static=("dim", "keepdim"), differentiable=False)
def all_(input, dim=None, keepdim=False):
    """True where every element over ``dim`` is nonzero."""
    return jnp.all(input != 0, axis=_dims("all", dim, input.ndim), keepdims=keepdim)


@defop("any", static=("dim", "keepdim"), differentiable=False)
def any_(input, dim=None, keepdim=False):
    """True where some element over ``dim`` is nonzero."""
    return jnp.any(input != 0, axis=_dims("any", dim, input.ndim), keepdims=keepdim)


@defop(static=("dim",), differentiable=False)
def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim`` (int64)."""
    axes = _dims("count_nonzero", dim, input.ndim)
    return jnp.sum(input != 0, axis=axes, dtype=DEFAULT_INT)


# ----------------------------------------------------------------------------- scans


@defop(static=("dim", "dtype"))
def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along ``dim``; integer and bool inputs accumulate in int64."""
    x = input.astype(_sum_dtype(input, dtype))
    axis = _dim1("cumsum", dim, x.ndim)
    return x if axis is None else jnp.cumsum(x, axis=axis)


@defop(static=("dim", "dtype"))
def cumprod(input, dim, *, dtype=None):
    """Cumulative product along ``dim``."""
    x = input.astype(_sum_dtype(input, dtype))
    axis = _dim1("cumprod", dim, x.ndim)
    return x if axis is None else jnp.cumprod(x, axis=axis)


def _cum_extreme(name, better, input, dim):
    axis = _dim1(name, dim, input.ndim)
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    iota = jax.lax.broadcasted_iota(DEFAULT_INT, input.shape, axis)

    def combine(a, b):
        # torch keeps the later index on ties, and a NaN wins over numbers (the latest NaN).
        take_b = jnp.isnan(b[0]) | (~jnp.isnan(a[0]) & (better(b[0], a[0]) | (b[0] == a[0])))
        return jnp.where(take_b, b[0], a[0]), jnp.where(take_b, b[1], a[1])

    _, idx = jax.lax.associative_scan(combine, (jax.lax.stop_gradient(input), iota), axis=axis)
    return jnp.take_along_axis(input, idx, axis=axis), idx


@defop(static=("dim",))
def cummax(input, dim):
    """Running maximum along ``dim`` -> (values, indices)."""
    return _cum_extreme("cummax", jnp.greater, input, dim)


@defop(static=("dim",))
def cummin(input, dim):
    """Running minimum along ``dim`` -> (values, indices)."""
    return _cum_extreme("cummin", jnp.less, input, dim)


# ----------------------------------------------------------------------------- sorting


def _argsort(x, axis, descending):
    return jnp.argsort(x, axis=axis, stable=True, descending=descending).astype(DEFAULT_INT)


@defop(static=("dim", "descending", "stable"))
def sort(input, dim=-1, descending=False, *, stable=False):
    """Sort along ``dim`` -> (values, indices); always stable here (a valid torch result)."""
    axis = _dim1("sort", dim, input.ndim)
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    idx = _argsort(input, axis, descending)
    return jnp.take_along_axis(input, idx, axis=axis), idx


@defop(static=("dim", "descending", "stable"), differentiable=False)
def argsort(input, dim=-1, descending=False, *, stable=False):
    """Indices that sort ``input`` along ``dim``."""
    axis = _dim1("argsort", dim, input.ndim)
    return jnp.zeros((), DEFAULT_INT) if axis is None else _argsort(input, axis, descending)


@defop()
def msort(input):
    """Sort along dim 0 (values only)."""
    return input if input.ndim == 0 else jnp.sort(input, axis=0)


@defop(static=("k", "dim", "largest", "sorted"))
def topk(input, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest) elements along ``dim`` -> (values, indices)."""
    axis = _dim1("topk", dim, input.ndim)
    n = 1 if axis is None else input.shape[axis]
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} is out of range for dim {dim} of shape {input.shape}")
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    x = jnp.moveaxis(input, axis, -1)
    if largest or jnp.issubdtype(x.dtype, jnp.inexact):
        _, idx = jax.lax.top_k(jax.lax.stop_gradient(x if largest else -x), k)
    else:
        idx = _argsort(x, -1, False)[..., :k]
    idx = jnp.moveaxis(idx.astype(DEFAULT_INT), -1, axis)
    return jnp.take_along_axis(input, idx, axis=axis), idx


@defop(static=("k", "dim", "keepdim"))
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element (1-based) along ``dim`` -> (values, indices)."""
    axis = _dim1("kthvalue", dim, input.ndim)
    n = 1 if axis is None else input.shape[axis]
    if not 1 <= k <= n:
        raise ValueError(f"kthvalue: k={k} is out of range for dim {dim} of shape {input.shape}")
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    idx = jax.lax.slice_in_dim(_argsort(input, axis, False), k - 1, k, axis=axis)
    return _select(input, idx, axis, keepdim)
