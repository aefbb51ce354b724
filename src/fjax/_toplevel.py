"""Top-level functions whose torch signature differs from both the op table's and
``torch.nn.functional``'s: ``torch.batch_norm``, ``torch.dropout`` and ``torch.poisson_nll_loss``
take their parameters in their own order (and ``train``, not ``training``); ATen's batch norms
(``native_batch_norm`` & co.) also write their running statistics in place."""

from __future__ import annotations

import functools

from .creation import empty
from .dispatch import functions as _F
from .dtypes import uint8
from .nn import functional as F
from .tensor import Tensor

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}  # torch's Reduction enum, the top-level ops' int


def batch_norm(
    input: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """``F.batch_norm`` in ``torch.batch_norm``'s order: ``weight`` and ``bias`` come before the
    running statistics, which a training step updates in place.

    Example::

        >>> x = fjax.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> mean, var = fjax.zeros(2), fjax.ones(2)
        >>> fjax.batch_norm(x, None, None, mean, var, True, 0.5, 1e-5)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]], dtype=fjax.float32)
        >>> mean
        tensor([ 1., 10.], dtype=fjax.float32)
    """
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def dropout(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.dropout``: ``F.dropout(input, p, training=train)``, drawing from the default generator.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> sorted(set(fjax.dropout(fjax.ones(1000), 0.5, True).tolist()))
        [0.0, 2.0]
        >>> fjax.dropout(fjax.ones(3), 0.5, False)
        tensor([1., 1., 1.], dtype=fjax.float32)
    """
    return F.dropout(input, p, train)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    eps: float = 1e-8,
    reduction: int | str = "mean",
) -> Tensor:
    """``F.poisson_nll_loss`` in ``torch.poisson_nll_loss``'s order, without the legacy
    ``size_average``/``reduce``; ``reduction`` is a name or torch's enum (0 none, 1 mean, 2 sum).

    Example::

        >>> x, t = fjax.tensor([0.0, 1.0]), fjax.tensor([1.0, 2.0])
        >>> fjax.poisson_nll_loss(x, t, True, False, 1e-8, 2)
        tensor(1.7183, dtype=fjax.float32)
    """
    reduction = _REDUCTIONS.get(reduction, reduction) if isinstance(reduction, int) else reduction
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=reduction)


def native_batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """ATen's ``native_batch_norm``: ``(output, save_mean, save_invstd)``. When training, the
    saved statistics are the batch mean and ``1 / sqrt(var + eps)`` per channel and the running
    buffers (if given) move towards the batch's as in ``F.batch_norm``; otherwise both saved
    statistics are empty.

    Example::

        >>> x = fjax.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> mean, var = fjax.zeros(2), fjax.ones(2)
        >>> out, save_mean, save_invstd = fjax.native_batch_norm(x, None, None, mean, var, True, 0.5, 0.0)
        >>> out, mean
        (tensor([[-1., -1.],
                [ 1.,  1.]], dtype=fjax.float32), tensor([ 1., 10.], dtype=fjax.float32))
    """
    stats = (None, None) if training else (running_mean, running_var)  # training reads the batch's
    out = _F._native_batch_norm(input, weight, bias, *stats, training, eps)
    if training and running_mean is not None and running_var is not None and input.numel():
        F._update_running("native_batch_norm", F._batch_stats, input, running_mean, running_var, momentum)
    return out


def _native_batch_norm_legit(input: Tensor, weight: Tensor | None, bias: Tensor | None, *args) -> tuple:
    """ATen's ``_native_batch_norm_legit``: ``native_batch_norm`` with the running buffers
    required, ``(input, weight, bias, running_mean, running_var, training, momentum, eps)``, or
    absent, ``(input, weight, bias, training, momentum, eps)``.

    Example::

        >>> x = fjax.tensor([[1.0], [3.0]])
        >>> fjax._native_batch_norm_legit(x, None, None, True, 0.1, 0.0)[1:]
        (tensor([2.], dtype=fjax.float32), tensor([1.], dtype=fjax.float32))
    """
    if len(args) == 3:
        return native_batch_norm(input, weight, bias, None, None, *args)
    return native_batch_norm(input, weight, bias, *args)


def _batch_norm_with_update(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor,
    running_var: Tensor,
    momentum: float,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """ATen's ``_batch_norm_with_update``: a training-mode ``native_batch_norm`` that updates the
    running buffers, plus cuDNN's reserve space (an empty uint8 tensor here).

    Example::

        >>> x = fjax.tensor([[1.0], [3.0]])
        >>> mean, var = fjax.zeros(1), fjax.ones(1)
        >>> _ = fjax._batch_norm_with_update(x, None, None, mean, var, 0.5, 0.0)
        >>> mean, var
        (tensor([1.], dtype=fjax.float32), tensor([1.5000], dtype=fjax.float32))
    """
    out, save_mean, save_invstd = native_batch_norm(input, weight, bias, running_mean, running_var, True, momentum, eps)
    return out, save_mean, save_invstd, empty(0, dtype=uint8)


# -- torch's top-level dropout variants and in-place activations (train, not training) ------------


def dropout_(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.dropout_``: ``F.dropout(input, p, train, inplace=True)``.

    Args:
        input: the tensor to zero elements of, in place.
        p: the probability of zeroing an element.
        train: drop only when True.

    Example:
        >>> x = fjax.ones(3)
        >>> fjax.dropout_(x, 0.5, False) is x
        True
    """
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.alpha_dropout``: ``F.alpha_dropout(input, p, training=train)`` (SELU-preserving dropout).

    Args:
        input: the input.
        p: the probability of dropping an element.
        train: drop only when True.

    Example:
        >>> fjax.alpha_dropout(fjax.ones(3), 0.5, False)
        tensor([1., 1., 1.], dtype=fjax.float32)
    """
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.alpha_dropout_``: ``alpha_dropout`` in place.

    Args:
        input: the tensor to change in place.
        p: the probability of dropping an element.
        train: drop only when True.

    Example:
        >>> x = fjax.ones(3)
        >>> fjax.alpha_dropout_(x, 0.5, False) is x
        True
    """
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.feature_alpha_dropout``: ``F.feature_alpha_dropout(input, p, training=train)``.

    Args:
        input: the input, ``(N, C, *)``.
        p: the probability of dropping a channel.
        train: drop only when True.

    Example:
        >>> fjax.feature_alpha_dropout(fjax.ones(1, 2, 2), 0.5, False).shape
        fjax.Size([1, 2, 2])
    """
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.feature_alpha_dropout_``: ``feature_alpha_dropout`` in place.

    Args:
        input: the tensor to change in place, ``(N, C, *)``.
        p: the probability of dropping a channel.
        train: drop only when True.

    Example:
        >>> x = fjax.ones(1, 2, 2)
        >>> fjax.feature_alpha_dropout_(x, 0.5, False) is x
        True
    """
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def _feature_mask(input: Tensor, p: float) -> Tensor:
    from .creation import full
    from .random import bernoulli

    if input.ndim < 2:
        raise RuntimeError(
            f"feature_dropout: expected an input of at least 2 dims (N, C, *), got shape {tuple(input.shape)}"
        )
    keep = full(tuple(input.shape[:2]) + (1,) * (input.ndim - 2), 1.0 - p, dtype=input.dtype)
    mask = bernoulli(keep)
    return mask / (1.0 - p) if p < 1 else mask


def feature_dropout(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.feature_dropout``: zero whole channels ``input[n, c]`` with probability ``p`` and scale
    the kept ones by ``1 / (1 - p)`` (``F.dropout2d`` for any number of trailing dims).

    Args:
        input: the input, ``(N, C, *)``.
        p: the probability of zeroing a channel.
        train: drop only when True.

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> y = fjax.feature_dropout(fjax.ones(2, 8, 3), 0.5, True)
        >>> sorted(set(y.flatten().tolist())), bool((y == y[:, :, :1]).all())
        ([0.0, 2.0], True)
    """
    if not 0 <= p <= 1:
        raise ValueError(f"feature_dropout: p must be in [0, 1], got {p}")
    if not train or p == 0:
        return input
    return input * _feature_mask(input, p)


def feature_dropout_(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.feature_dropout_``: ``feature_dropout`` in place.

    Args:
        input: the tensor to change in place, ``(N, C, *)``.
        p: the probability of zeroing a channel.
        train: drop only when True.

    Example:
        >>> x = fjax.ones(2, 3)
        >>> fjax.feature_dropout_(x, 0.5, False) is x
        True
    """
    if not 0 <= p <= 1:
        raise ValueError(f"feature_dropout_: p must be in [0, 1], got {p}")
    if not train or p == 0:
        return input
    return input.mul_(_feature_mask(input, p))


celu_, selu_, rrelu_, threshold_ = F.celu_, F.selu_, F.rrelu_, F.threshold_


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Rescale, in place and without gradient, the rows ``input[indices]`` whose ``norm_type``-norm exceeds
    ``max_norm`` to norm ``max_norm`` (``F.embedding``'s ``max_norm`` step; ``max_norm / (norm + 1e-7)``).

    Args:
        input: the embedding matrix ``(num_embeddings, dim)``, changed in place.
        indices: the rows to check (repeats count once).
        max_norm: the largest norm a row keeps.
        norm_type: the p of the norm.

    Example:
        >>> w = fjax.tensor([[3.0, 4.0], [0.3, 0.4]])
        >>> fjax.embedding_renorm_(w, fjax.tensor([0, 1]), 1.0, 2.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]], dtype=fjax.float32)
    """
    from .autograd import no_grad

    with no_grad():
        rows = _F.unique(indices.reshape(-1))
        if isinstance(rows, tuple):
            rows = rows[0]
        w = input[rows]
        norms = _F.linalg_vector_norm(w, norm_type, -1, True)
        scale = _F.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        input[rows] = w * scale
    return input


# -- copies of torch's view ops -------------------------------------------------------------------


def detach_copy(self: Tensor) -> Tensor:
    """``self.detach()`` as a fresh tensor (not sharing storage).

    Args:
        self: the tensor to copy.

    Example:
        >>> x = fjax.ones(2, requires_grad=True)
        >>> fjax.detach_copy(x).requires_grad
        False
    """
    return self.detach().clone()


def select_copy(self: Tensor, dim: int, index: int) -> Tensor:
    """``self.select(dim, index)`` as a fresh tensor (not a view).

    Args:
        self: the tensor to select from.
        dim: the dimension to remove.
        index: the position along ``dim`` to keep.

    Example:
        >>> fjax.select_copy(fjax.arange(6).reshape(2, 3), 1, 2)
        tensor([2, 5], dtype=fjax.int64)
    """
    return _F.select(self, dim, index).clone()


def slice_copy(self: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    """``self[..., start:end:step, ...]`` along ``dim`` as a fresh tensor (torch's ``slice_copy``).

    Args:
        self: the tensor to slice.
        dim: the dimension to slice.
        start: the first position (default 0).
        end: the position after the last (default the size).
        step: the stride between positions.

    Example:
        >>> fjax.slice_copy(fjax.arange(6).reshape(2, 3), 1, 0, 2)
        tensor([[0, 1],
                [3, 4]], dtype=fjax.int64)
    """
    dim = dim % self.ndim if self.ndim else 0
    return self[(slice(None),) * dim + (slice(start, end, step),)].clone()


def split_copy(self: Tensor, split_size: int | list, dim: int = 0) -> tuple:
    """``self.split(split_size, dim)`` as fresh tensors (not views).

    Args:
        self: the tensor to split.
        split_size: the size of each piece, or a list of sizes.
        dim: the dimension to split.

    Example:
        >>> fjax.split_copy(fjax.arange(5), 2)
        (tensor([0, 1], dtype=fjax.int64), tensor([2, 3], dtype=fjax.int64), tensor([4], dtype=fjax.int64))
    """
    return tuple(t.clone() for t in _F.split(self, split_size, dim))


def view_as_real_copy(self: Tensor) -> Tensor:
    """``fjax.view_as_real(self)`` as a fresh tensor.

    Args:
        self: a complex tensor.

    Example:
        >>> fjax.view_as_real_copy(fjax.tensor([1 + 2j]))
        tensor([[1., 2.]], dtype=fjax.float32)
    """
    return _F.view_as_real(self).clone()


def view_as_complex_copy(self: Tensor) -> Tensor:
    """``fjax.view_as_complex(self)`` as a fresh tensor.

    Args:
        self: a real tensor whose last dim has size 2 (real, imaginary).

    Example:
        >>> fjax.view_as_complex_copy(fjax.tensor([[1.0, 2.0]]))
        tensor([1.+2.j], dtype=fjax.complex64)
    """
    return _F.view_as_complex(self).clone()


def values_copy(self: Tensor) -> Tensor:
    """``self.values()`` of a coalesced sparse COO tensor, as a fresh tensor.

    Args:
        self: a coalesced sparse COO tensor.

    Example:
        >>> fjax.values_copy(fjax.tensor([0.0, 3.0]).to_sparse())
        tensor([3.], dtype=fjax.float32)
    """
    return self.values().clone()


def indices_copy(self: Tensor) -> Tensor:
    """``self.indices()`` of a coalesced sparse COO tensor, as a fresh tensor.

    Args:
        self: a coalesced sparse COO tensor.

    Example:
        >>> fjax.indices_copy(fjax.tensor([0.0, 3.0]).to_sparse())
        tensor([[1]], dtype=fjax.int64)
    """
    return self.indices().clone()


def slice_inverse(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """The inverse of ``slice``: a view of ``input``'s storage with ``src``'s sizes, strides and offset
    (torch's functionalization op: for ``input = src[start:end]``, the base ``src`` again).

    Args:
        input: the sliced tensor, whose storage to view.
        src: the tensor whose geometry to take.
        dim: the sliced dimension (unused: the geometry is ``src``'s).
        start: the slice's start (unused).
        end: the slice's end (unused).
        step: the slice's step (unused).

    Example:
        >>> base = fjax.arange(6.0)
        >>> fjax.slice_inverse(base[1:3], base, 0, 1, 3)
        tensor([0., 1., 2., 3., 4., 5.], dtype=fjax.float32)
    """
    return input.as_strided(tuple(src.shape), src.stride(), src.storage_offset())


# -- small linear-algebra and index helpers ---------------------------------------------------------


Tensor.slice_inverse = slice_inverse  # also torch's Tensor method


def frobenius_norm(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """The Frobenius norm (square root of the sum of squares) over ``dim`` (one or two dims).

    Args:
        input: the input.
        dim: the dim or dims to reduce.
        keepdim: keep the reduced dims with size 1.

    Example:
        >>> fjax.frobenius_norm(fjax.tensor([[3.0, 4.0]]), (0, 1))
        tensor(5., dtype=fjax.float32)
    """
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"frobenius_norm: expected at most 2 dims, got {dims}")
    return _F.linalg_vector_norm(input, 2, dims, keepdim)


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The nuclear norm (sum of singular values) of a matrix, or of the matrices over the two dims ``dim``.

    Args:
        input: the input: a matrix, or a batch when ``dim`` names two dims.
        dim: the two matrix dims (default the only two).
        keepdim: keep the reduced dims with size 1.

    Example:
        >>> fjax.nuclear_norm(fjax.tensor([[2.0, 0.0], [0.0, -3.0]]))
        tensor(5., dtype=fjax.float32)
    """
    if isinstance(dim, bool) and keepdim is False:  # torch's nuclear_norm(input, keepdim) overload
        dim, keepdim = None, dim
    if dim is None:
        if input.ndim != 2:
            raise RuntimeError(f"nuclear_norm: expected a 2-D tensor, got shape {tuple(input.shape)}")
        dim = (0, 1)
    return _F.linalg_matrix_norm(input, "nuc", tuple(dim), keepdim)


def chain_matmul(*matrices) -> Tensor:
    """The product of the 2-D tensors ``matrices`` in the cheapest order (``fjax.linalg.multi_dot``;
    torch deprecates ``chain_matmul`` for it).

    Args:
        matrices: two or more 2-D tensors whose inner sizes match (one is returned as it is).

    Example:
        >>> fjax.chain_matmul(fjax.ones(2, 3), fjax.ones(3, 4), fjax.ones(4, 1))
        tensor([[12.],
                [12.]], dtype=fjax.float32)
    """
    from .linalg import multi_dot

    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        return matrices[0]
    return multi_dot(list(matrices))


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803 - torch's name
    """The Vandermonde matrix of the 1-D ``x``: columns ``x ** (N - 1), ..., x, 1`` (reversed when
    ``increasing``), built by cumulative products as torch does (differentiable, exact for integers).

    Args:
        x: a 1-D tensor.
        N: the number of columns (default ``len(x)``).
        increasing: powers increase from left to right.

    Example:
        >>> fjax.vander(fjax.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]], dtype=fjax.int64)
    """
    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor, got shape {tuple(x.shape)}")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    from .dtypes import int64

    if x.dtype == _bool_dtype():
        x = x.to(int64)
    if n == 0:
        return x.new_zeros((x.shape[0], 0))
    cols = _F.cat([x.new_ones((x.shape[0], 1)), x.unsqueeze(1).expand(-1, n - 1)], 1)
    out = _F.cumprod(cols, 1)
    return out if increasing else out.flip(1)


def _bool_dtype():
    from .dtypes import bool as _bool

    return _bool


def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates in an array of ``shape`` of the flat (row-major) ``indices``: one int64 tensor per
    dim, each of ``indices``' shape. As in torch, indices wrap modulo the number of elements.

    Args:
        indices: an integer tensor of flat indices.
        shape: the array's shape (an int or a sequence).

    Example:
        >>> fjax.unravel_index(fjax.tensor([4, 1]), (2, 3))
        (tensor([1, 0], dtype=fjax.int64), tensor([1, 1], dtype=fjax.int64))
    """
    from .dtypes import int64

    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index: expected 'indices' to be a Tensor, got {type(indices).__name__}")
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype == _bool_dtype():
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    flat = indices.to(int64)
    coords = []
    for size in reversed(shape):
        coords.append(_F.remainder(flat, size) if size else flat * 0)
        flat = _F.floor_divide(flat, size) if size else flat
    return tuple(reversed(coords))


# -- random draws ------------------------------------------------------------------------------------


@functools.cache
def _draws():
    """The jitted Poisson and binomial samplers (their rejection loops compile once per shape)."""
    import jax

    poisson = jax.jit(lambda key, rate: jax.random.poisson(key, rate, rate.shape).astype(rate.dtype))
    binomial = jax.jit(lambda key, n, p: jax.random.binomial(key, n, p, n.shape, dtype=n.dtype))
    return poisson, binomial


def poisson(input: Tensor, generator=None) -> Tensor:
    """A draw from the Poisson distribution of rate ``input`` per element, in ``input``'s dtype (no gradient).

    Args:
        input: the rates (non-negative).
        generator: the generator to draw from (default the global one).

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> fjax.poisson(fjax.tensor([0.0, 4.0])).dtype
        fjax.float32
    """
    from .random import _key

    return Tensor._wrap(_draws()[0](_key(generator), input.detach()._data))


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """A draw from the binomial distribution of ``count`` trials of success probability ``prob`` per
    element, in ``count``'s dtype (no gradient).

    Args:
        count: the numbers of trials.
        prob: the success probabilities, broadcast with ``count``.
        generator: the generator to draw from (default the global one).

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> fjax.binomial(fjax.tensor([5.0, 0.0]), fjax.tensor([1.0, 0.5]))
        tensor([5., 0.], dtype=fjax.float32)
    """
    import jax.numpy as jnp

    from .random import _key

    n, p = jnp.broadcast_arrays(count.detach()._data, prob.detach()._data)
    return Tensor._wrap(_draws()[1](_key(generator), n, p).astype(count._data.dtype))


def convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride,
    padding,
    dilation,
    transposed: bool,
    output_padding,
    groups: int,
) -> Tensor:
    """ATen's convolution: ``conv1d/2d/3d`` (or ``conv_transpose*`` when ``transposed``) by the
    number of spatial dims of ``input``, every argument given as torch's ``aten.convolution`` takes it.

    Args:
        input: ``(N, C_in, *spatial)``.
        weight: the filters (``(C_out, C_in / groups, *kernel)``; transposed: ``(C_in, C_out / groups, *kernel)``).
        bias: ``(C_out,)`` or None.
        stride: one int per spatial dim.
        padding: one int per spatial dim.
        dilation: one int per spatial dim.
        transposed: a transposed convolution.
        output_padding: one int per spatial dim (transposed only).
        groups: the number of groups.

    Example:
        >>> x, w = fjax.ones(1, 1, 4), fjax.ones(1, 1, 2)
        >>> fjax.convolution(x, w, None, [1], [0], [1], False, [0], 1)
        tensor([[[2., 2., 2.]]], dtype=fjax.float32)
    """
    n = input.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D input, got shape {tuple(input.shape)}")
    if transposed:
        conv = getattr(F, f"conv_transpose{n}d")
        return conv(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), groups, tuple(dilation))
    return getattr(F, f"conv{n}d")(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def max_pool1d_with_indices(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False
) -> tuple:
    """1-D max pooling returning ``(values, indices)``, as ``F.max_pool1d(..., return_indices=True)``.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        kernel_size: the window.
        stride: the step (default ``kernel_size``).
        padding: implicit negative-infinity padding on both sides.
        dilation: the spacing of the window's elements.
        ceil_mode: round the output length up.

    Example:
        >>> values, indices = fjax.max_pool1d_with_indices(fjax.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        >>> values, indices
        (tensor([[3., 2.]], dtype=fjax.float32), tensor([[1, 2]], dtype=fjax.int64))
    """
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """ATen's affine grid: ``F.affine_grid(theta, size, align_corners)``.

    Args:
        theta: ``(N, 2, 3)`` or ``(N, 3, 4)`` affine matrices.
        size: the output's ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        align_corners: whether -1 and 1 are the centres of the corner pixels.

    Example:
        >>> fjax.affine_grid_generator(fjax.eye(2, 3)[None], [1, 1, 1, 2], False).shape
        fjax.Size([1, 1, 2, 2])
    """
    return F.affine_grid(theta, list(size), align_corners)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept with size 1 (weight norm's ``g``);
    ``dim=-1`` gives the norm of the whole tensor.

    Args:
        v: the tensor.
        pow: the norm's order.
        dim: the dim kept.

    Example:
        >>> fjax.norm_except_dim(fjax.ones(2, 3), 2, 0)
        tensor([[1.7321],
                [1.7321]], dtype=fjax.float32)
    """
    if dim == -1:
        return _F.linalg_vector_norm(v, pow)
    dim = dim % v.ndim
    return _F.linalg_vector_norm(v, pow, tuple(d for d in range(v.ndim) if d != dim), True)
