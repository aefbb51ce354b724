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

from .. import _dims as _padded
from . import _checks
from ._promote import DEFAULT_INT, result_type
from ._registry import Plan, Rows, along, bind, defop


def _wrap(name: str, d: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= d < n:
        raise _checks.IndexOpError(f"{name}: dim {d} is out of range for a tensor of {ndim} dims")
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


# ----------------------------------------------------------------------------- padded dims
# A reduction over a dim padded to a bucket (``fjax._bucket.run_dims``, a growing sequence) runs on
# the bucket array: the padding along the dims it reduces over holds the op's identity (0 for a
# sum, -inf for a max or logsumexp, 1 for a product), or, for a mean or a variance, the op runs
# with a mask of the real elements, whose count is the real one. Padded dims it keeps pass through.


def _lowest(dtype):
    """The identity of a max: -inf, or the dtype's least value."""
    if dtype == np.bool_:
        return False
    return int(np.iinfo(dtype).min) if np.issubdtype(dtype, np.integer) else float("-inf")


def _highest(dtype):
    """The identity of a min: inf, or the dtype's greatest value."""
    if dtype == np.bool_:
        return True
    return int(np.iinfo(dtype).max) if np.issubdtype(dtype, np.integer) else float("inf")


def _over_padded(identity=None, where=None, flat=None):
    """``Rows.dims`` of a reduction over the static ``dim`` (None or (): every dim). Along a padded
    dim it reduces over, the padding holds ``identity(dtype)`` (0 when None; None: not taken),
    or the kernel is ``where`` (the op plus ``padded``, those dims, and ``n``); padded dims it
    keeps pass through. ``flat``: over every dim (``dim=None``) the result is the index ``flat``
    (``jnp.argmax``) gives in the flattened input, counted in the real block (``_flat_index``)."""

    def dims(statics, padded, shapes, n, size):
        if set(padded) != {"input"}:
            return None
        shape, dtype = shapes["input"]
        dim = statics.get("dim")
        if isinstance(dim, bool):
            return None
        if flat is not None and dim is None:
            fill = {"input": dict.fromkeys(padded["input"], identity(np.dtype(dtype)))}
            return Plan((), fill=fill, kernel=bind(_flat_index, find=flat, padded=padded["input"]))
        try:
            axes = _dims("", dim, len(shape))
        except Exception:
            return None
        own = padded["input"]
        reduced = tuple(d for d in own if d in axes)
        keep = statics.get("keepdim")
        out = tuple(d if keep else d - sum(a < d for a in axes) for d in own if d not in axes)
        if not reduced:
            return Plan(out)
        if where is not None:
            return Plan(out, kernel=bind(where, padded=reduced))
        value = 0 if identity is None else identity(np.dtype(dtype))
        return None if value is None else Plan(out, fill={"input": dict.fromkeys(reduced, value)})

    return dims


def _flat_index(input, dim=None, keepdim=False, *, find, padded, n, size):
    """argmax/argmin (``find``) of a bucket array padded along ``padded`` (real length ``n``):
    the flat index of the position it finds, in the real block."""
    coords = jnp.unravel_index(find(input.reshape(-1)), input.shape)
    index = jnp.zeros((), DEFAULT_INT)
    for d, c in enumerate(coords):
        index = index * (n if d in padded else input.shape[d]) + c
    return index.reshape((1,) * input.ndim if keepdim else ())


def _mean_where(input, dim=None, keepdim=False, *, dtype=None, padded, n, size):
    """``mean`` over a bucket array padded along ``padded`` (real length ``n``): the real mean."""
    axes = _dims("mean", dim, input.ndim)
    real = _padded.real_mask(n, input.shape, padded)
    return jnp.mean(input.astype(_mean_dtype(input, dtype)), axis=axes, keepdims=keepdim, where=real)


def _var_where(input, dim=None, unbiased=None, keepdim=False, *, correction=None, padded, n, size, root=False):
    """``var`` (``std``: ``root``) over a bucket array padded along ``padded``: the real count."""
    _need_float("std" if root else "var", input)
    dim, ddof = _correction("var", dim, unbiased, correction)
    axes = _dims("var", dim, input.ndim)
    real = _padded.real_mask(n, input.shape, padded)
    how = jnp.std if root else jnp.var
    return how(input, axis=axes, ddof=ddof, keepdims=keepdim, where=real)


def _std_where(*args, **kwargs):
    return _var_where(*args, root=True, **kwargs)


def _exp_identity(dtype):
    """logsumexp's identity: -inf (a float input; an integer one is cast first: not taken)."""
    return float("-inf") if np.issubdtype(dtype, np.inexact) else None


# ----------------------------------------------------------------------------- sums and means


def _given(dim) -> tuple:
    return () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)


def _total_or_per_row(statics, tensors) -> bool:
    """``Rows.when`` of sum and mean: over every dim or over dims that include dim 0 given as 0
    (padding rows masked out: ``x.sum(0)``), or over dims that leave dim 0 (each row its own)."""
    dim = statics["dim"]
    if dim is None or dim == ():
        return True
    try:
        return 0 not in _dims("", dim, len(tensors["input"][0])) or 0 in _given(dim)
    except Exception:
        return False


def _reduces_rows(dim) -> bool:
    return dim in (None, ()) or 0 in _given(dim)


def _rows_of_a_total(masked, padded):
    return Rows(
        ("input",), when=_total_or_per_row, out=lambda s: not _reduces_rows(s["dim"]), masked=masked, dims=padded
    )


def _real_rows(input, valid):
    """``input`` with its padding rows zeroed (``valid``: the real rows of a bucket)."""
    keep = valid.reshape((-1,) + (1,) * (input.ndim - 1))
    return jnp.where(keep, input, jnp.zeros((), input.dtype))


def _sum_of_real_rows(input, dim=None, keepdim=False, *, dtype=None, valid):
    return sum_(_real_rows(input, valid), dim, keepdim, dtype=dtype)


def _mean_of_real_rows(input, dim=None, keepdim=False, *, dtype=None, valid):
    if not _reduces_rows(dim):
        return mean(input, dim, keepdim, dtype=dtype)
    total = sum_(_real_rows(input, valid), dim, keepdim, dtype=dtype or _mean_dtype(input))
    count = jnp.sum(valid) * math.prod(input.shape[a] for a in _dims("mean", dim, input.ndim) if a)
    return total / count.astype(total.dtype)


@defop("sum", static=("dim", "keepdim", "dtype"), rows=_rows_of_a_total(_sum_of_real_rows, _over_padded()))
def sum_(input, dim=None, keepdim=False, *, dtype=None):
    """Sum of the elements over ``dim`` (an int or a tuple of ints; all dims when None); the reduced
    dims are dropped unless ``keepdim``. As in torch, bool and integer inputs accumulate and return int64
    unless ``dtype`` is given, and ``dtype`` casts the input before summing.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.sum()
        tensor(10, dtype=fjax.int64)
        >>> x.sum(dim=0)
        tensor([4, 6], dtype=fjax.int64)
        >>> x.sum(1, keepdim=True)
        tensor([[3],
                [7]], dtype=fjax.int64)
        >>> fjax.tensor([True, True, False]).sum()
        tensor(2, dtype=fjax.int64)
    """
    axes = _dims("sum", dim, input.ndim)
    return jnp.sum(input.astype(_sum_dtype(input, dtype)), axis=axes, keepdims=keepdim)


@defop(static=("dim", "keepdim", "dtype"))
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` like ``sum``, with NaN elements counted as zero; integer inputs sum in int64.

    Example::

        >>> fjax.nansum(fjax.tensor([1.0, float('nan'), 2.0]))
        tensor(3., dtype=fjax.float32)
        >>> fjax.tensor([1.0, float('nan'), 2.0]).sum()
        tensor(nan, dtype=fjax.float32)
    """
    axes = _dims("nansum", dim, input.ndim)
    return jnp.nansum(input.astype(_sum_dtype(input, dtype)), axis=axes, keepdims=keepdim)


def _mean_dtype(input, dtype=None):
    dtype = _as_dtype(dtype) or np.dtype(input.dtype)
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise TypeError(f"mean: expected a floating point input or dtype, got {dtype}")
    return dtype


@defop(static=("dim", "keepdim", "dtype"), rows=_rows_of_a_total(_mean_of_real_rows, _over_padded(where=_mean_where)))
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Arithmetic mean over ``dim`` (all dims when None); ``keepdim`` keeps the reduced dims as size 1.
    The input must be floating point or complex, or ``dtype`` must name such a type: an integer tensor
    raises unless ``dtype`` (for instance ``fjax.float32``) says what to compute in.

    Example::

        >>> x = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.mean()
        tensor(2.5000, dtype=fjax.float32)
        >>> x.mean(dim=1, keepdim=True)
        tensor([[1.5000],
                [3.5000]], dtype=fjax.float32)
        >>> fjax.tensor([1, 2]).mean(dtype=fjax.float32)
        tensor(1.5000, dtype=fjax.float32)
    """
    dtype = _mean_dtype(input, dtype)
    axes = _dims("mean", dim, input.ndim)
    return jnp.mean(input.astype(dtype), axis=axes, keepdims=keepdim)


@defop(static=("dim", "keepdim", "dtype"))
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim`` of the elements that are not NaN (NaN where a slice has no other value).
    Like ``mean``, it needs a floating point input or ``dtype``.

    Example::

        >>> fjax.tensor([1.0, float('nan'), 3.0]).nanmean()
        tensor(2., dtype=fjax.float32)
        >>> fjax.tensor([[1.0, float('nan')], [3.0, 4.0]]).nanmean(dim=1)
        tensor([1.0000, 3.5000], dtype=fjax.float32)
    """
    dtype = _as_dtype(dtype) or np.dtype(input.dtype)
    _need_float("nanmean", jnp.zeros((), dtype))
    axes = _dims("nanmean", dim, input.ndim)
    return jnp.nanmean(input.astype(dtype), axis=axes, keepdims=keepdim)


@defop(static=("dim", "keepdim", "dtype"), rows=along(padded=_over_padded(lambda dtype: 1)))
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product of the elements over ``dim`` (all dims when None); bool and integer inputs multiply in
    int64 unless ``dtype`` says otherwise. torch takes a single int ``dim``; a tuple of dims works here too.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.prod()
        tensor(24, dtype=fjax.int64)
        >>> x.prod(1)
        tensor([ 2, 12], dtype=fjax.int64)
    """
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


@defop(static=("dim", "unbiased", "keepdim", "correction"), rows=along(padded=_over_padded(where=_var_where)))
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` (all dims when None): the sum of squared deviations from the mean divided by
    ``N - correction``. The default ``correction=1`` is the unbiased (Bessel) estimate; ``correction=0``
    or ``unbiased=False`` gives the population variance. Pass one of ``unbiased`` and ``correction``, not
    both. The input must be floating point or complex.

    Example::

        >>> x = fjax.tensor([1.0, 2.0, 3.0, 4.0])
        >>> x.var()
        tensor(1.6667, dtype=fjax.float32)
        >>> x.var(correction=0)
        tensor(1.2500, dtype=fjax.float32)
        >>> x.var(unbiased=False)
        tensor(1.2500, dtype=fjax.float32)
    """
    _need_float("var", input)
    dim, ddof = _correction("var", dim, unbiased, correction)
    return jnp.var(input, axis=_dims("var", dim, input.ndim), ddof=ddof, keepdims=keepdim)


@defop(static=("dim", "unbiased", "keepdim", "correction"), rows=along(padded=_over_padded(where=_std_where)))
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over ``dim``: the square root of ``var`` with the same ``correction`` /
    ``unbiased`` rule (by default the divisor is ``N - 1``).

    Example::

        >>> x = fjax.tensor([[1.0, 2.0], [3.0, 5.0]])
        >>> x.std()
        tensor(1.7078, dtype=fjax.float32)
        >>> x.std(dim=0)
        tensor([1.4142, 2.1213], dtype=fjax.float32)
        >>> x.std(dim=1, correction=0)
        tensor([0.5000, 1.0000], dtype=fjax.float32)
    """
    _need_float("std", input)
    dim, ddof = _correction("std", dim, unbiased, correction)
    return jnp.std(input, axis=_dims("std", dim, input.ndim), ddof=ddof, keepdims=keepdim)


@defop(static=("dim", "unbiased", "keepdim", "correction"))
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance and the mean over ``dim`` in one call, as the tuple ``(var, mean)``;
    ``correction`` and ``unbiased`` apply to the variance as in ``var``.

    Example::

        >>> fjax.var_mean(fjax.tensor([1.0, 2.0, 3.0, 4.0]))
        (tensor(1.6667, dtype=fjax.float32), tensor(2.5000, dtype=fjax.float32))
        >>> fjax.var_mean(fjax.tensor([[1.0, 3.0], [2.0, 6.0]]), dim=1)
        (tensor([2., 8.], dtype=fjax.float32), tensor([2., 4.], dtype=fjax.float32))
    """
    _need_float("var_mean", input)
    dim, ddof = _correction("var_mean", dim, unbiased, correction)
    axes = _dims("var_mean", dim, input.ndim)
    return (jnp.var(input, axis=axes, ddof=ddof, keepdims=keepdim), jnp.mean(input, axis=axes, keepdims=keepdim))


@defop(static=("dim", "unbiased", "keepdim", "correction"))
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation and the mean over ``dim``, as the tuple ``(std, mean)``; ``correction``
    (default 1) and ``unbiased`` apply to the standard deviation as in ``std``.

    Example::

        >>> fjax.std_mean(fjax.tensor([1.0, 2.0, 3.0, 4.0]), correction=0)
        (tensor(1.1180, dtype=fjax.float32), tensor(2.5000, dtype=fjax.float32))
    """
    _need_float("std_mean", input)
    dim, ddof = _correction("std_mean", dim, unbiased, correction)
    axes = _dims("std_mean", dim, input.ndim)
    return (jnp.std(input, axis=axes, ddof=ddof, keepdims=keepdim), jnp.mean(input, axis=axes, keepdims=keepdim))


@defop(static=("dim", "keepdim"), rows=along(padded=_over_padded(_exp_identity)))
def logsumexp(input, dim=None, keepdim=False):
    """``log(sum(exp(input)))`` over ``dim``, computed stably by factoring out the maximum, so large
    inputs give a finite result where the naive formula overflows. Integer inputs are computed in float32.

    Example::

        >>> fjax.tensor([0.0, 0.0]).logsumexp(dim=0)
        tensor(0.6931, dtype=fjax.float32)
        >>> fjax.tensor([[1000.0, 1000.0]]).logsumexp(dim=1)
        tensor([1000.6932], dtype=fjax.float32)
    """
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
    """torch.norm: the vector p-norm of the elements over ``dim`` (over all elements when None, whatever
    the shape). ``p`` is a number (``inf``/``-inf`` give the largest/smallest absolute value and 0 counts
    the nonzeros), ``'fro'`` (the default: the 2-norm of the elements) or ``'nuc'`` (the nuclear norm,
    over exactly two dims). ``dtype`` casts the input first; the input must be floating point or complex.

    Example::

        >>> x = fjax.tensor([[3.0, -4.0], [0.0, 0.0]])
        >>> fjax.norm(x)
        tensor(5., dtype=fjax.float32)
        >>> fjax.norm(x, p=1)
        tensor(7., dtype=fjax.float32)
        >>> fjax.norm(x, p=float('inf'), dim=1)
        tensor([4., 0.], dtype=fjax.float32)
    """
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


@defop("max", static=("dim", "keepdim"), returns=("values", "indices"), rows=along(padded=_over_padded(_lowest)))
def max_(input, dim=None, keepdim=False):
    """``max(input)`` is the largest element, a 0-d tensor (tied maxima share the gradient).
    ``max(input, dim, keepdim=False)`` returns the tuple ``(values, indices)`` of the maxima along ``dim``
    and their positions. ``max(input, other)`` with a tensor ``other`` is the elementwise ``maximum``,
    broadcast. A NaN counts as the largest value, as in torch.

    Example::

        >>> x = fjax.tensor([[1, 5], [7, 2]])
        >>> fjax.max(x)
        tensor(7, dtype=fjax.int64)
        >>> x.max(dim=1)
        (tensor([5, 7], dtype=fjax.int64), tensor([1, 0], dtype=fjax.int64))
        >>> fjax.max(x, fjax.tensor([4, 4]))
        tensor([[4, 5],
                [7, 4]], dtype=fjax.int64)
    """
    return _extreme("max", jnp.max, jnp.argmax, input, dim, keepdim)


@defop("min", static=("dim", "keepdim"), returns=("values", "indices"), rows=along(padded=_over_padded(_highest)))
def min_(input, dim=None, keepdim=False):
    """``min(input)`` is the smallest element, a 0-d tensor; ``min(input, dim, keepdim=False)`` returns
    the tuple ``(values, indices)`` of the minima along ``dim`` and their positions; ``min(input, other)``
    with a tensor ``other`` is the elementwise ``minimum``. A NaN counts as the smallest value.

    Example::

        >>> x = fjax.tensor([[1, 5], [7, 2]])
        >>> fjax.min(x)
        tensor(1, dtype=fjax.int64)
        >>> x.min(dim=0, keepdim=True)
        (tensor([[1, 2]], dtype=fjax.int64), tensor([[0, 1]], dtype=fjax.int64))
    """
    return _extreme("min", jnp.min, jnp.argmin, input, dim, keepdim)


@defop(static=("dim", "keepdim"), rows=along(padded=_over_padded(_lowest)))
def amax(input, dim=(), keepdim=False):
    """Maximum over ``dim`` (an int or a tuple; all dims by default), values only. Unlike
    ``max(input, dim)``, the gradient is split evenly among elements that tie for the maximum.

    Example::

        >>> x = fjax.tensor([[1, 5], [7, 2]])
        >>> x.amax()
        tensor(7, dtype=fjax.int64)
        >>> x.amax(dim=0)
        tensor([7, 5], dtype=fjax.int64)
        >>> x.amax(dim=(0, 1), keepdim=True)
        tensor([[7]], dtype=fjax.int64)
    """
    return jnp.max(input, axis=_dims("amax", dim, input.ndim), keepdims=keepdim)


@defop(static=("dim", "keepdim"), rows=along(padded=_over_padded(_highest)))
def amin(input, dim=(), keepdim=False):
    """Minimum over ``dim`` (an int or a tuple; all dims by default), values only; tied elements share
    the gradient evenly.

    Example::

        >>> x = fjax.tensor([[1, 5], [7, 2]])
        >>> x.amin(dim=1)
        tensor([1, 2], dtype=fjax.int64)
        >>> fjax.amin(x, dim=-1, keepdim=True)
        tensor([[1],
                [2]], dtype=fjax.int64)
    """
    return jnp.min(input, axis=_dims("amin", dim, input.ndim), keepdims=keepdim)


@defop(static=("dim", "keepdim"), returns=("min", "max"))
def aminmax(input, *, dim=None, keepdim=False):
    """The minimum and the maximum over ``dim`` (all dims when None) as the tuple ``(min, max)``.
    ``dim`` and ``keepdim`` are keyword-only, as in torch.

    Example::

        >>> fjax.aminmax(fjax.tensor([3, 1, 2]))
        fjax.return_types.aminmax(
        min=tensor(1, dtype=fjax.int64),
        max=tensor(3, dtype=fjax.int64))
        >>> fjax.aminmax(fjax.tensor([[3, 1], [0, 2]]), dim=1)
        fjax.return_types.aminmax(
        min=tensor([1, 0], dtype=fjax.int64),
        max=tensor([3, 2], dtype=fjax.int64))
    """
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


@defop(static=("dim", "keepdim"), differentiable=False, rows=along(padded=_over_padded(_lowest, flat=jnp.argmax)))
def argmax(input, dim=None, keepdim=False):
    """Position of the maximum along ``dim``, as int64. With ``dim=None`` the input is flattened and a
    single index into the flattened tensor comes back. When several elements tie, the first one's index is
    returned.

    Example::

        >>> x = fjax.tensor([[1, 9], [9, 2]])
        >>> x.argmax()
        tensor(1, dtype=fjax.int64)
        >>> x.argmax(dim=1)
        tensor([1, 0], dtype=fjax.int64)
        >>> x.argmax(dim=0, keepdim=True)
        tensor([[1, 0]], dtype=fjax.int64)
    """
    return _arg("argmax", jnp.argmax, input, dim, keepdim)


@defop(static=("dim", "keepdim"), differentiable=False, rows=along(padded=_over_padded(_highest, flat=jnp.argmin)))
def argmin(input, dim=None, keepdim=False):
    """Position of the minimum along ``dim``, as int64; with ``dim=None``, an index into the flattened
    input. When several elements tie, the first one's index is returned.

    Example::

        >>> x = fjax.tensor([[4, 0], [0, 2]])
        >>> x.argmin()
        tensor(1, dtype=fjax.int64)
        >>> x.argmin(dim=1)
        tensor([1, 0], dtype=fjax.int64)
    """
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


@defop(static=("dim", "keepdim"), returns=("values", "indices"))
def median(input, dim=None, keepdim=False):
    """The lower median: with an even count, the smaller of the two middle values (torch does not
    average them). ``median(input)`` is a 0-d tensor over all elements; ``median(input, dim, keepdim=False)``
    returns the tuple ``(values, indices)``. A NaN makes its slice's median NaN (its index is the NaN's),
    as torch's; ``nanmedian`` skips NaNs instead.

    Example::

        >>> fjax.tensor([1.0, 4.0, 2.0, 3.0]).median()
        tensor(2., dtype=fjax.float32)
        >>> fjax.tensor([[1.0, 5.0, 3.0], [2.0, float('nan'), 0.0]]).median(dim=1)
        fjax.return_types.median(
        values=tensor([3., nan], dtype=fjax.float32),
        indices=tensor([2, 1], dtype=fjax.int64))
    """
    return _median("median", input, dim, keepdim, False)


@defop(static=("dim", "keepdim"), returns=("values", "indices"))
def nanmedian(input, dim=None, keepdim=False):
    """Like ``median``, but ignoring NaNs: the lower median of the values that are not NaN in each
    slice, NaN only where a slice holds nothing else. A 0-d tensor, or ``(values, indices)`` with ``dim``.

    Example::

        >>> x = fjax.tensor([1.0, float('nan'), 3.0, 2.0])
        >>> x.median()
        tensor(nan, dtype=fjax.float32)
        >>> x.nanmedian()
        tensor(2., dtype=fjax.float32)
    """
    return _median("nanmedian", input, dim, keepdim, True)


# ----------------------------------------------------------------------------- logical


@defop("all", static=("dim", "keepdim"), differentiable=False)
def all_(input, dim=None, keepdim=False):
    """Whether every element over ``dim`` (all dims when None) is nonzero, as a bool tensor, for any
    input dtype. An empty reduction is True.

    Example::

        >>> x = fjax.tensor([[1, 0], [2, 3]])
        >>> x.all()
        tensor(False, dtype=fjax.bool)
        >>> x.all(dim=1)
        tensor([False,  True], dtype=fjax.bool)
    """
    return jnp.all(input != 0, axis=_dims("all", dim, input.ndim), keepdims=keepdim)


@defop("any", static=("dim", "keepdim"), differentiable=False)
def any_(input, dim=None, keepdim=False):
    """Whether some element over ``dim`` (all dims when None) is nonzero, as a bool tensor, for any
    input dtype. An empty reduction is False.

    Example::

        >>> x = fjax.tensor([[0, 0], [0, 3]])
        >>> x.any()
        tensor(True, dtype=fjax.bool)
        >>> x.any(dim=1, keepdim=True)
        tensor([[False],
                [ True]], dtype=fjax.bool)
    """
    return jnp.any(input != 0, axis=_dims("any", dim, input.ndim), keepdims=keepdim)


@defop(static=("dim",), differentiable=False)
def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim`` (an int or a tuple; all dims when None), as int64.
    The counted dims are always removed (there is no ``keepdim``).

    Example::

        >>> x = fjax.tensor([[0, 1, 2], [3, 0, 0]])
        >>> fjax.count_nonzero(x)
        tensor(3, dtype=fjax.int64)
        >>> x.count_nonzero(dim=0)
        tensor([1, 1, 1], dtype=fjax.int64)
    """
    axes = _dims("count_nonzero", dim, input.ndim)
    return jnp.sum(input != 0, axis=axes, dtype=DEFAULT_INT)


# ----------------------------------------------------------------------------- scans


@defop(static=("dim", "dtype"), rows=along())
def cumsum(input, dim, *, dtype=None):
    """Running sum along ``dim``: element ``i`` is the sum of elements ``0..i``. Bool and integer
    inputs accumulate in int64 unless ``dtype`` is given, as in torch.

    Example::

        >>> fjax.tensor([1, 2, 3]).cumsum(0)
        tensor([1, 3, 6], dtype=fjax.int64)
        >>> fjax.tensor([[1.0, 2.0], [3.0, 4.0]]).cumsum(dim=1)
        tensor([[1., 3.],
                [3., 7.]], dtype=fjax.float32)
        >>> fjax.tensor([True, False, True]).cumsum(0)
        tensor([1, 1, 2], dtype=fjax.int64)
    """
    x = input.astype(_sum_dtype(input, dtype))
    axis = _dim1("cumsum", dim, x.ndim)
    return x if axis is None else jnp.cumsum(x, axis=axis)


@defop(static=("dim", "dtype"), rows=along())
def cumprod(input, dim, *, dtype=None):
    """Running product along ``dim``: element ``i`` is the product of elements ``0..i``. Bool and
    integer inputs accumulate in int64 unless ``dtype`` is given.

    Example::

        >>> fjax.tensor([1, 2, 3, 4]).cumprod(0)
        tensor([ 1,  2,  6, 24], dtype=fjax.int64)
        >>> fjax.tensor([2.0, 0.5, 3.0]).cumprod(dim=0)
        tensor([2., 1., 3.], dtype=fjax.float32)
    """
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


@defop(static=("dim",), returns=("values", "indices"))
def cummax(input, dim):
    """Running maximum along ``dim``, as the tuple ``(values, indices)``: ``indices[i]`` is where the
    maximum of elements ``0..i`` is. As in torch, a tie takes the later index, and a NaN, once reached,
    stays the maximum.

    Example::

        >>> fjax.tensor([1, 3, 2, 3, 0]).cummax(0)
        fjax.return_types.cummax(
        values=tensor([1, 3, 3, 3, 3], dtype=fjax.int64),
        indices=tensor([0, 1, 1, 3, 3], dtype=fjax.int64))
    """
    return _cum_extreme("cummax", jnp.greater, input, dim)


@defop(static=("dim",), returns=("values", "indices"))
def cummin(input, dim):
    """Running minimum along ``dim``, as the tuple ``(values, indices)``: ``indices[i]`` is where the
    minimum of elements ``0..i`` is. As in torch, a tie takes the later index, and a NaN, once reached,
    stays the minimum.

    Example::

        >>> fjax.tensor([3, 1, 2, 1, 5]).cummin(dim=0)
        fjax.return_types.cummin(
        values=tensor([3, 1, 1, 1, 1], dtype=fjax.int64),
        indices=tensor([0, 1, 1, 3, 3], dtype=fjax.int64))
    """
    return _cum_extreme("cummin", jnp.less, input, dim)


# ----------------------------------------------------------------------------- sorting


def _argsort(x, axis, descending):
    return jnp.argsort(x, axis=axis, stable=True, descending=descending).astype(DEFAULT_INT)


@defop(static=("dim", "descending", "stable"), returns=("values", "indices"))
def sort(input, dim=-1, descending=False, *, stable=False):
    """Sort along ``dim`` (default the last), ascending or, with ``descending=True``, descending; returns
    the tuple ``(values, indices)`` with the original positions. The sort here is always stable (equal
    elements keep their order), one of the orders torch may give, so ``stable`` changes nothing. NaNs sort
    as larger than any number.

    Example::

        >>> x = fjax.tensor([3, 1, 2, 1])
        >>> x.sort()
        fjax.return_types.sort(
        values=tensor([1, 1, 2, 3], dtype=fjax.int64),
        indices=tensor([1, 3, 2, 0], dtype=fjax.int64))
        >>> x.sort(descending=True)
        fjax.return_types.sort(
        values=tensor([3, 2, 1, 1], dtype=fjax.int64),
        indices=tensor([0, 2, 1, 3], dtype=fjax.int64))
        >>> fjax.sort(fjax.tensor([[2, 1], [0, 3]]), dim=0)
        fjax.return_types.sort(
        values=tensor([[0, 1],
                [2, 3]], dtype=fjax.int64),
        indices=tensor([[1, 0],
                [0, 1]], dtype=fjax.int64))
    """
    axis = _dim1("sort", dim, input.ndim)
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    idx = _argsort(input, axis, descending)
    return jnp.take_along_axis(input, idx, axis=axis), idx


@defop(static=("dim", "descending", "stable"), differentiable=False)
def argsort(input, dim=-1, descending=False, *, stable=False):
    """The positions that sort ``input`` along ``dim`` (default the last), as int64: the indices of
    ``sort`` with the same arguments. Always stable: equal elements keep their order.

    Example::

        >>> x = fjax.tensor([3, 1, 2])
        >>> x.argsort()
        tensor([1, 2, 0], dtype=fjax.int64)
        >>> x.argsort(descending=True)
        tensor([0, 2, 1], dtype=fjax.int64)
    """
    axis = _dim1("argsort", dim, input.ndim)
    return jnp.zeros((), DEFAULT_INT) if axis is None else _argsort(input, axis, descending)


@defop()
def msort(input):
    """Sort along dim 0, ascending, values only: ``sort(input, dim=0)[0]``.

    Example::

        >>> fjax.msort(fjax.tensor([[3, 0], [1, 2]]))
        tensor([[1, 0],
                [3, 2]], dtype=fjax.int64)
    """
    return input if input.ndim == 0 else jnp.sort(input, axis=0)


@defop(static=("k", "dim", "largest", "sorted"), returns=("values", "indices"), rows=along())
def topk(input, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest elements along ``dim`` (default the last), or the ``k`` smallest with
    ``largest=False``, as the tuple ``(values, indices)``. The results always come sorted, largest first
    (smallest first with ``largest=False``).

    Example::

        >>> x = fjax.tensor([1.0, 5.0, 3.0, 4.0])
        >>> x.topk(2)
        fjax.return_types.topk(
        values=tensor([5., 4.], dtype=fjax.float32),
        indices=tensor([1, 3], dtype=fjax.int64))
        >>> x.topk(2, largest=False)
        fjax.return_types.topk(
        values=tensor([1., 3.], dtype=fjax.float32),
        indices=tensor([0, 2], dtype=fjax.int64))
    """
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


@defop(static=("k", "dim", "keepdim"), returns=("values", "indices"))
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element along ``dim`` (``k`` counts from 1), as the tuple
    ``(values, indices)``; ``dim`` is removed unless ``keepdim``.

    Example::

        >>> x = fjax.tensor([5.0, 1.0, 4.0, 2.0])
        >>> x.kthvalue(2)
        fjax.return_types.kthvalue(
        values=tensor(2., dtype=fjax.float32),
        indices=tensor(3, dtype=fjax.int64))
        >>> fjax.tensor([[3, 1], [2, 4]]).kthvalue(1, dim=0)
        fjax.return_types.kthvalue(
        values=tensor([2, 1], dtype=fjax.int64),
        indices=tensor([1, 0], dtype=fjax.int64))
    """
    axis = _dim1("kthvalue", dim, input.ndim)
    n = 1 if axis is None else input.shape[axis]
    if not 1 <= k <= n:
        raise ValueError(f"kthvalue: k={k} is out of range for dim {dim} of shape {input.shape}")
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    idx = jax.lax.slice_in_dim(_argsort(input, axis, False), k - 1, k, axis=axis)
    return _select(input, idx, axis, keepdim)


# ----------------------------------------------------------------------------- more statistics


@defop(static=("dim", "keepdim"), returns=("values", "indices"))
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (default the last), as the tuple ``(values, indices)``.
    As in torch, a tie between values goes to the smallest of them, and the index is that of its last
    occurrence. The gradient flows to the selected elements.

    Example::

        >>> x = fjax.tensor([[3, 1, 3, 1, 2], [5, 5, 4, 4, 4]])
        >>> x.mode()
        fjax.return_types.mode(
        values=tensor([1, 4], dtype=fjax.int64),
        indices=tensor([3, 4], dtype=fjax.int64))
        >>> fjax.mode(x, 0, keepdim=True).values
        tensor([[3, 1, 3, 1, 2]], dtype=fjax.int64)
    """
    axis = _dim1("mode", dim, input.ndim)
    if axis is None:
        return input, jnp.zeros((), DEFAULT_INT)
    x = jnp.moveaxis(lax.stop_gradient(input), axis, -1)
    n = x.shape[-1]
    if n == 0:
        raise ValueError(f"mode: cannot take the mode of an empty dim {dim}")
    rows = x.reshape(-1, n)
    order = jnp.argsort(rows, axis=-1, stable=True)
    s = jnp.take_along_axis(rows, order, axis=-1)
    lo = jax.vmap(lambda r: jnp.searchsorted(r, r, side="left"))(s)
    hi = jax.vmap(lambda r: jnp.searchsorted(r, r, side="right"))(s)
    best = jnp.argmax(hi - lo, axis=-1)[:, None]  # the first longest run: the smallest value
    last = jnp.take_along_axis(hi, best, axis=-1) - 1  # its last element in stable order
    idx = jnp.take_along_axis(order, last, axis=-1).astype(DEFAULT_INT)
    idx = jnp.moveaxis(idx.reshape(x.shape[:-1] + (1,)), -1, axis)
    return _select(input, idx, axis, keepdim)


@defop(static=("dim",))
def logcumsumexp(input, dim):
    """Running ``log(sum(exp(x)))`` along ``dim``, computed without overflow: element ``i`` is the
    log-sum-exp of elements ``0..i``. Floating point inputs only, as in torch.

    Example::

        >>> x = fjax.tensor([0.0, 0.0, 100.0])
        >>> fjax.logcumsumexp(x, dim=0)
        tensor([  0.0000,   0.6931, 100.0000], dtype=fjax.float32)
    """
    _need_float("logcumsumexp", input)
    axis = _dim1("logcumsumexp", dim, input.ndim)
    if axis is None or input.shape[axis] == 0:
        return input
    return lax.cumlogsumexp(input, axis=axis)


def _edge(name, part, input):
    if part.ndim != input.ndim:
        raise ValueError(f"{name}: prepend/append must have {input.ndim} dims like the input, got {part.ndim}")
    return part


@defop(static=("n", "dim"))
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim``: ``out[i] = x[i + 1] - x[i]``, applied ``n`` times,
    so that dim shrinks by ``n``. ``prepend`` and ``append`` are joined to ``input`` along ``dim`` first;
    bool inputs give ``x[i + 1] != x[i]``. Linear: the gradient reaches all inputs.

    Example::

        >>> x = fjax.tensor([1, 3, 7, 15])
        >>> fjax.diff(x)
        tensor([2, 4, 8], dtype=fjax.int64)
        >>> x.diff(n=2, prepend=fjax.tensor([0]))
        tensor([1, 2, 4], dtype=fjax.int64)
    """
    if input.ndim == 0:
        raise ValueError("diff: expected a tensor with at least one dim")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative, got {n}")
    axis = _wrap("diff", dim, input.ndim)
    parts = [p for p in (prepend, input, append) if p is not None]
    dt = result_type(*parts)
    parts = [jnp.asarray(_edge("diff", p, input), dt) for p in parts]
    x = jnp.concatenate(parts, axis=axis) if len(parts) > 1 else parts[0]
    for _ in range(n):
        size = x.shape[axis]
        if size == 0:
            break
        hi, lo = lax.slice_in_dim(x, 1, size, axis=axis), lax.slice_in_dim(x, 0, size - 1, axis=axis)
        x = hi != lo if dt == np.bool_ else hi - lo
    return x


def _as_float(x):
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.float32)


@defop(static=("correction",))
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance matrix of the variables in the rows of ``input`` (observations in its columns; a 1-D
    input is one variable, giving a 0-d variance). ``correction`` is subtracted from the number of
    observations (1: Bessel's unbiased estimate), ``fweights`` are integer repeat counts and ``aweights``
    relative importances of the observations, as in ``numpy.cov``. Integer inputs give float32.

    Example::

        >>> x = fjax.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
        >>> fjax.cov(x)
        tensor([[ 1., -1.],
                [-1.,  1.]], dtype=fjax.float32)
        >>> fjax.cov(x[0], correction=0)
        tensor(0.6667, dtype=fjax.float32)
    """
    if input.ndim > 2:
        raise ValueError(f"cov: expected a tensor of at most 2 dims, got {input.ndim}")
    x = _as_float(input)
    x = x.reshape(1, -1) if x.ndim < 2 else x
    num_obs = x.shape[1]
    w = None
    for name, weights in (("fweights", fweights), ("aweights", aweights)):
        if weights is None:
            continue
        if weights.ndim > 1 or weights.size != num_obs:
            raise ValueError(f"cov: {name} must be 1-D with {num_obs} entries, got shape {weights.shape}")
        if name == "fweights" and jnp.issubdtype(weights.dtype, jnp.inexact):
            raise TypeError("cov: fweights must be integers")
        weights = weights.reshape(-1).astype(x.dtype)
        w = weights if w is None else w * weights
    if w is None:
        w_sum = num_obs
        avg = jnp.mean(x, axis=1, keepdims=True)
    else:
        w_sum = jnp.sum(w)
        avg = jnp.sum(x * w, axis=1, keepdims=True) / w_sum
    if w is None:
        norm = w_sum - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * jnp.sum(w * aweights.reshape(-1).astype(x.dtype)) / w_sum
    norm = jnp.maximum(norm, 0)
    xm = x - avg
    xw = xm if w is None else xm * w
    c = jnp.matmul(xw, jnp.conj(xm).T, precision=lax.Precision.HIGHEST) / norm
    return jnp.squeeze(c)


@defop()
def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input`` (observations in its
    columns): ``cov(input)`` divided by the product of the two variables' standard deviations, clipped
    to [-1, 1]. A 1-D input is one variable and gives a 0-d 1.

    Example::

        >>> x = fjax.tensor([[0.0, 1.0, 2.0], [4.0, 2.0, 0.0], [1.0, 0.0, 1.0]])
        >>> fjax.corrcoef(x)
        tensor([[ 1., -1.,  0.],
                [-1.,  1.,  0.],
                [ 0.,  0.,  1.]], dtype=fjax.float32)
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = jnp.sqrt(jnp.real(jnp.diagonal(c)))
    c = c / std[:, None] / std[None, :]
    if jnp.iscomplexobj(c):
        return c
    # torch's clip_: the gradient passes where -1 <= c <= 1, bounds included
    return jnp.where((c < -1) | (c > 1), lax.stop_gradient(jnp.clip(c, -1, 1)), c)


@defop(static=("p", "compute_mode"), method=False)
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between each row of ``x1`` (shape ``(..., P, M)``) and each row of ``x2``
    (``(..., R, M)``), as a ``(..., P, R)`` tensor; the leading batch dims broadcast. ``p`` may be any
    value >= 0 or ``inf``. For ``p = 2`` torch's ``compute_mode`` is followed: when P or R exceeds 25 (or
    with ``'use_mm_for_euclid_dist'``) the distances come from matrix products, faster but less exact.
    The gradient is zero where two rows coincide.

    Example::

        >>> a = fjax.tensor([[0.0, 0.0], [1.0, 1.0]])
        >>> b = fjax.tensor([[3.0, 4.0]])
        >>> fjax.cdist(a, b)
        tensor([[5.0000],
                [3.6056]], dtype=fjax.float32)
        >>> fjax.cdist(a, b, p=1)
        tensor([[7.],
                [5.]], dtype=fjax.float32)
    """
    for x in (x1, x2):
        _need_float("cdist", x)
        if x.ndim < 2:
            raise ValueError(f"cdist: expected tensors of at least 2 dims, got shape {x.shape}")
    if x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"cdist: x1 {x1.shape} and x2 {x2.shape} must have the same number of columns")
    if p < 0:
        raise ValueError(f"cdist: p must be >= 0, got {p}")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"cdist: {compute_mode!r} is not a valid compute_mode")
    x1, x2 = jnp.asarray(x1, jnp.result_type(x1, x2)), jnp.asarray(x2, jnp.result_type(x1, x2))
    batch = jnp.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    x1, x2 = jnp.broadcast_to(x1, batch + x1.shape[-2:]), jnp.broadcast_to(x2, batch + x2.shape[-2:])
    big = x1.shape[-2] > 25 or x2.shape[-2] > 25
    if p == 2 and (compute_mode == modes[1] or (compute_mode == modes[0] and big)):
        n1 = jnp.sum(x1 * x1, axis=-1, keepdims=True)
        n2 = jnp.sum(x2 * x2, axis=-1, keepdims=True)
        d2 = n1 + jnp.swapaxes(n2, -1, -2)
        d2 = d2 - 2 * jnp.matmul(x1, jnp.swapaxes(x2, -1, -2), precision=lax.Precision.HIGHEST)
        return jnp.sqrt(jnp.where(d2 > 1e-30, d2, 1e-30))  # torch's clamp_min(1e-30).sqrt()
    d = x1[..., :, None, :] - x2[..., None, :, :]
    return _vector_norm(d, p, (-1,), False)


def _trapezoid(name, y, x, dx, dim):
    if y.ndim == 0:
        raise ValueError(f"{name}: expected y with at least one dim")
    axis = _wrap(name, dim, y.ndim)
    n = y.shape[axis]
    dt = result_type(y) if x is None else result_type(y, x)
    y = jnp.asarray(y, dt if jnp.issubdtype(dt, jnp.inexact) else np.dtype(np.float32))
    if n == 0:
        return jnp.zeros(y.shape[:axis] + y.shape[axis + 1 :], y.dtype)
    if x is None:
        ends = lax.index_in_dim(y, 0, axis, False) + lax.index_in_dim(y, n - 1, axis, False)
        return (jnp.sum(y, axis=axis) - ends * 0.5) * (1 if dx is None else dx)
    x = jnp.asarray(x, y.dtype)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise ValueError(f"{name}: x has {x.shape[0]} points, y has {n} along dim {dim}")
        x = x.reshape((1,) * axis + (n,) + (1,) * (y.ndim - axis - 1))
    elif x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + x.shape)
    steps = jnp.diff(x, axis=axis)
    pairs = lax.slice_in_dim(y, 1, n, axis=axis) + lax.slice_in_dim(y, 0, n - 1, axis=axis)
    return jnp.sum(steps * pairs, axis=axis) / 2


@defop(static=("dim",), method=False)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule: at the sample points ``x`` (1-D,
    matching ``y`` along ``dim``, or broadcasting with ``y``), else at points ``dx`` apart (default 1).
    Integer samples give float32. The gradient reaches ``y`` and ``x``.

    Example::

        >>> y = fjax.tensor([1.0, 2.0, 5.0])
        >>> fjax.trapezoid(y)
        tensor(5., dtype=fjax.float32)
        >>> fjax.trapezoid(y, fjax.tensor([0.0, 1.0, 3.0]))
        tensor(8.5000, dtype=fjax.float32)
        >>> fjax.trapezoid(y, dx=2)
        tensor(10., dtype=fjax.float32)
    """
    if x is not None and dx is not None:
        raise ValueError("trapezoid: pass either x or dx, not both")
    return _trapezoid("trapezoid", y, x, dx, dim)


@defop(static=("dim",), method=False)
def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of ``trapezoid``: the trapezoidal-rule integral of ``y`` along ``dim``, at the points ``x``
    or at points ``dx`` apart (default 1).

    Example::

        >>> fjax.trapz(fjax.tensor([[1.0, 3.0], [2.0, 2.0]]), dim=0)
        tensor([1.5000, 2.5000], dtype=fjax.float32)
    """
    if x is not None and dx is not None:
        raise ValueError("trapz: pass either x or dx, not both")
    return _trapezoid("trapz", y, x, dx, dim)


@defop(static=("p", "dim"))
def renorm(input, p, dim, maxnorm):
    """Rescale each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` so that its norm
    becomes ``maxnorm`` (up to torch's 1e-7 guard); other slices stay as they are. Floating point inputs
    only. The gradient includes the dependence of the scale on the slice.

    Example::

        >>> x = fjax.tensor([[3.0, 4.0], [0.3, 0.4]])
        >>> fjax.renorm(x, 2, 0, 1.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]], dtype=fjax.float32)
    """
    _need_float("renorm", input)
    if input.ndim == 0:
        raise ValueError("renorm: expected a tensor with at least one dim")
    if p < 0:
        raise ValueError(f"renorm: p must be >= 0, got {p}")
    axis = _wrap("renorm", dim, input.ndim)
    axes = tuple(i for i in range(input.ndim) if i != axis)
    norm = _vector_norm(input, p, axes, True)
    factor = jnp.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor.astype(input.dtype)


# ----------------------------------------------------------------------------- torch.* additions


@defop(static=("p",))
def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast together) over all elements.

    Example::

        >>> fjax.dist(fjax.tensor([0.0, 0.0]), fjax.tensor([3.0, 4.0]))
        tensor(5., dtype=fjax.float32)
    """
    from ._promote import promote
    from .linalg import linalg_vector_norm

    x, y = promote(input, other)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise TypeError(f"dist: expected floating point tensors, got {x.dtype}")
    d = x - y
    p = float(p)
    if p == 2:  # torch's gradient at d = 0 is 0, not NaN
        sq = jnp.sum(jnp.real(d * jnp.conj(d)))
        safe = jnp.where(sq == 0, jnp.ones_like(sq), sq)
        return jnp.where(sq == 0, jnp.zeros_like(sq), jnp.sqrt(safe))
    return linalg_vector_norm(d, p)


_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, nan):
    if interpolation not in _QUANTILE_MODES:
        raise ValueError(f"{name}: interpolation must be one of {_QUANTILE_MODES}, got {interpolation!r}")
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise TypeError(f"{name}: input must be a float tensor, got {input.dtype}")
    q = jnp.asarray(q)
    if q.ndim > 1:
        raise ValueError(f"{name}: q must be a scalar or a 1-D tensor, got shape {q.shape}")
    q = q.astype(input.dtype)
    axis = None if dim is None else _wrap(name, dim, input.ndim)
    x = input
    if input.ndim == 0:  # one element: the result has no dim of its own, kept or not
        x, axis, keepdim = input.reshape(1), 0, False
    fn = jnp.nanquantile if nan else jnp.quantile
    return fn(x, q, axis=axis, keepdims=keepdim, method=interpolation).astype(input.dtype)


@defop(static=("dim", "keepdim", "interpolation"))
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantiles (``q`` a number or a 1-D tensor in [0, 1]) of ``input`` along ``dim`` (all
    elements when None), interpolated by ``interpolation``; a 1-D ``q`` adds a leading dim. NaN propagates.

    Example::

        >>> fjax.quantile(fjax.tensor([1.0, 2.0, 3.0, 4.0]), 0.5)
        tensor(2.5000, dtype=fjax.float32)
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@defop(static=("dim", "keepdim", "interpolation"))
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring NaNs (a slice of only NaNs gives NaN).

    Example::

        >>> fjax.nanquantile(fjax.tensor([1.0, float("nan"), 3.0]), 0.5)
        tensor(2., dtype=fjax.float32)
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


@defop(static=("dim",), method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal-rule integral of ``y`` along ``dim`` (one element shorter than ``y`` there), at
    the sample points ``x`` or at points ``dx`` apart (default 1).

    Example::

        >>> fjax.cumulative_trapezoid(fjax.tensor([1.0, 2.0, 5.0]))
        tensor([1.5000, 5.0000], dtype=fjax.float32)
    """
    if x is not None and dx is not None:
        raise ValueError("cumulative_trapezoid: pass either x or dx, not both")
    if y.ndim == 0:
        raise ValueError("cumulative_trapezoid: expected y with at least one dim")
    axis = _wrap("cumulative_trapezoid", dim, y.ndim)
    n = y.shape[axis]
    dt = result_type(y) if x is None else result_type(y, x)
    y = jnp.asarray(y, dt if jnp.issubdtype(dt, jnp.inexact) else np.dtype(np.float32))
    pairs = lax.slice_in_dim(y, 1, n, axis=axis) + lax.slice_in_dim(y, 0, max(n - 1, 0), axis=axis)
    if x is None:
        return jnp.cumsum(pairs, axis=axis) * (0.5 * (1 if dx is None else dx))
    x = jnp.asarray(x, y.dtype)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise ValueError(f"cumulative_trapezoid: x has {x.shape[0]} points, y has {n} along dim {dim}")
        x = x.reshape((1,) * axis + (n,) + (1,) * (y.ndim - axis - 1))
    elif x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + x.shape)
    return jnp.cumsum(jnp.diff(x, axis=axis) * pairs, axis=axis) / 2


def _gradient_1d(f, axis, h, edge_order):
    """d f / d x along ``axis`` by second-order central differences inside and one-sided differences of
    order ``edge_order`` at the ends; ``h`` is a uniform spacing (0-dim) or the coordinates (1-dim)."""
    n = f.shape[axis]

    def take(start, stop):
        return lax.slice_in_dim(f, start, stop, axis=axis)

    def along(v):  # a 1-dim array of per-position factors, broadcast along ``axis``
        return v.reshape((-1,) + (1,) * (f.ndim - axis - 1))

    if h.ndim == 0:
        inner = (take(2, n) - take(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first, last = (take(1, 2) - take(0, 1)) / h, (take(n - 1, n) - take(n - 2, n - 1)) / h
        else:
            first = (-1.5 * take(0, 1) + 2 * take(1, 2) - 0.5 * take(2, 3)) / h
            last = (0.5 * take(n - 3, n - 2) - 2 * take(n - 2, n - 1) + 1.5 * take(n - 1, n)) / h
        return jnp.concatenate([first, inner, last], axis=axis)
    d = jnp.diff(h).astype(f.dtype)
    hl, hr = along(d[:-1]), along(d[1:])
    inner = (hl**2 * take(2, n) - hr**2 * take(0, n - 2) + (hr**2 - hl**2) * take(1, n - 1)) / (hl * hr * (hl + hr))
    if edge_order == 1:
        first, last = (take(1, 2) - take(0, 1)) / d[0], (take(n - 1, n) - take(n - 2, n - 1)) / d[-1]
    else:
        h1, h2 = d[0], d[1]
        first = (
            -(2 * h1 + h2) / (h1 * (h1 + h2)) * take(0, 1)
            + (h1 + h2) / (h1 * h2) * take(1, 2)
            - h1 / (h2 * (h1 + h2)) * take(2, 3)
        )
        h1, h2 = d[-2], d[-1]
        last = (
            h2 / (h1 * (h1 + h2)) * take(n - 3, n - 2)
            - (h1 + h2) / (h1 * h2) * take(n - 2, n - 1)
            + (2 * h2 + h1) / (h2 * (h1 + h2)) * take(n - 1, n)
        )
    return jnp.concatenate([first, inner, last], axis=axis)


@defop(static=("dim", "edge_order"), method=False)
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of the sampled function ``input`` along each of ``dim`` (all dims when None), one
    tensor per dim: second-order central differences inside, one-sided differences of order
    ``edge_order`` (1 or 2) at the ends. ``spacing`` is the distance between samples (a number, one
    number per dim) or the sample coordinates (one 1-D tensor per dim).

    Example::

        >>> fjax.gradient(fjax.tensor([1.0, 4.0, 9.0, 16.0]))
        (tensor([3., 4., 6., 7.], dtype=fjax.float32),)
        >>> fjax.gradient(fjax.tensor([1.0, 4.0, 9.0, 16.0]), spacing=2.0, edge_order=2)
        (tensor([1., 2., 3., 4.], dtype=fjax.float32),)
    """
    dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(_wrap("gradient", d, input.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise ValueError(f"gradient: dim {dim} repeats a dim")
    spacing = 1 if spacing is None else spacing
    spacing = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(spacing) != len(dims):
        raise ValueError(f"gradient: expected spacing of size {len(dims)} (one per dim), got {len(spacing)}")
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    f = input.astype(result_type(input)) if not jnp.issubdtype(input.dtype, jnp.inexact) else input
    out = []
    for d, h in zip(dims, spacing):
        h = jnp.asarray(h, f.dtype) if jnp.ndim(h) == 0 else jnp.asarray(h)
        if f.shape[d] < edge_order + 1:
            raise ValueError(
                f"gradient: each dim differentiated needs at least edge_order + 1 = {edge_order + 1} samples, "
                f"got shape {input.shape}"
            )
        if h.ndim == 1 and h.shape[0] != f.shape[d]:
            raise ValueError(f"gradient: coordinates for dim {d} have {h.shape[0]} entries, input has {f.shape[d]}")
        out.append(_gradient_1d(f, d, h, edge_order))
    return tuple(out)
