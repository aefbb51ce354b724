"""Products, contractions and matrix functions with torch's signatures and shape rules."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import _jax_compat
from ._promote import promote
from ._registry import Plan, Rows, _passes, defop


def _same_dtype(op, *xs):
    dtypes = {x.dtype for x in xs if x is not None}
    if len(dtypes) > 1:
        names = ", ".join(str(x.dtype) for x in xs if x is not None)
        raise TypeError(f"{op}: expected tensors of one dtype, got {names}")


def _ndim(op, x, dims, what="input"):
    if x.ndim not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"{op}: expected {what} to be {want}, got shape {x.shape}")


def _contract(op, a, b, ka, kb):
    if a.shape[ka] != b.shape[kb]:
        raise ValueError(f"{op}: shapes {a.shape} and {b.shape} cannot be multiplied")


def _broadcast(op, *shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{op}: shapes {', '.join(map(str, shapes))} do not broadcast") from None


def _matmul_dims(statics, padded, shapes, n, size):
    """A padded batch, row (M) or column (N) dim is the result's; a padded contracted dim (K)
    must be padded in both operands (their padding holds 0: it adds nothing)."""
    if "input" not in shapes or "other" not in shapes:
        return None
    a, b = shapes["input"][0], shapes["other"][0]
    if len(a) < 2 or len(b) < 2:
        return None
    nd = max(len(a), len(b))
    pa, pb = set(padded.get("input", ())), set(padded.get("other", ()))
    if (len(a) - 1 in pa) != (len(b) - 2 in pb):
        return None
    out = set()
    for d in pa - {len(a) - 1}:
        out.add(d + nd - len(a))
    for d in pb - {len(b) - 2}:
        out.add(nd - 1 if d == len(b) - 1 else d + nd - len(b))
    for shape, own in ((a, pa), (b, pb)):
        for o in out:
            d = o - (nd - len(shape))
            if o < nd - 2 and d >= 0 and d not in own and shape[d] != 1:
                return None  # a batch dim of the other operand, not padded
    return Plan(tuple(sorted(out)))


@defop(rows=Rows(("input",), when=lambda s, t: t["input"][0][1:] and len(t["other"][0]) <= 2, dims=_matmul_dims))
def matmul(input, other):
    """Matrix product with torch's rules for the operands' dims: two 1-D tensors give their dot
    product; a 1-D first (second) operand acts as a row (column) vector whose dim is then dropped; beyond
    2-D the leading batch dims broadcast. Both operands must have the same dtype. ``a @ b`` calls this.

    Example::

        >>> a = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> a @ fjax.tensor([1.0, 1.0])
        tensor([3., 7.], dtype=fjax.float32)
        >>> fjax.matmul(fjax.tensor([1.0, 1.0]), a)
        tensor([4., 6.], dtype=fjax.float32)
        >>> fjax.matmul(fjax.ones(10, 1, 3, 4), fjax.ones(5, 4, 2)).shape
        fjax.Size([10, 5, 3, 2])
    """
    _same_dtype("matmul", input, other)
    if input.ndim == 0 or other.ndim == 0:
        raise ValueError(f"matmul: expected operands of at least 1-D, got {input.shape} and {other.shape}")
    _contract("matmul", input, other, -1, 0 if other.ndim == 1 else -2)
    try:
        np.broadcast_shapes(input.shape[:-2], other.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dims of {input.shape} and {other.shape} do not broadcast") from None
    return jnp.matmul(input, other)


@defop()
def mm(input, mat2):
    """Product of the matrices ``input`` ``(n, m)`` and ``mat2`` ``(m, p)``, shape ``(n, p)``; there is no
    broadcasting (``matmul`` has it).

    Example::

        >>> a = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fjax.mm(a, fjax.tensor([[0.0, 1.0], [1.0, 0.0]]))
        tensor([[2., 1.],
                [4., 3.]], dtype=fjax.float32)
    """
    _same_dtype("mm", input, mat2)
    _ndim("mm", input, (2,))
    _ndim("mm", mat2, (2,), "mat2")
    _contract("mm", input, mat2, 1, 0)
    return jnp.matmul(input, mat2)


@defop()
def bmm(input, mat2):
    """Batched matrix product: ``input`` ``(b, n, m)`` times ``mat2`` ``(b, m, p)``, matrix by matrix,
    shape ``(b, n, p)``. The batch sizes must be equal (no broadcasting).

    Example::

        >>> a = fjax.ones(4, 2, 3)
        >>> b = fjax.ones(4, 3, 5)
        >>> fjax.bmm(a, b).shape
        fjax.Size([4, 2, 5])
        >>> fjax.bmm(a, b)[0, 0, 0]
        tensor(3., dtype=fjax.float32)
    """
    _same_dtype("bmm", input, mat2)
    _ndim("bmm", input, (3,))
    _ndim("bmm", mat2, (3,), "mat2")
    if input.shape[0] != mat2.shape[0]:
        raise ValueError(f"bmm: batch sizes differ: {input.shape} and {mat2.shape}")
    _contract("bmm", input, mat2, 2, 1)
    return jnp.matmul(input, mat2)


@defop()
def mv(input, vec):
    """Product of the matrix ``input`` ``(n, m)`` and the vector ``vec`` ``(m,)``, shape ``(n,)``.

    Example::

        >>> fjax.mv(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]), fjax.tensor([1.0, -1.0]))
        tensor([-1., -1.], dtype=fjax.float32)
    """
    _same_dtype("mv", input, vec)
    _ndim("mv", input, (2,))
    _ndim("mv", vec, (1,), "vec")
    _contract("mv", input, vec, 1, 0)
    return jnp.matmul(input, vec)


@defop()
def dot(input, tensor):
    """Inner product of two 1-D tensors of equal length and dtype, as a 0-d tensor. Complex inputs are
    not conjugated (``vdot`` conjugates the first).

    Example::

        >>> fjax.dot(fjax.tensor([1.0, 2.0, 3.0]), fjax.tensor([4.0, 5.0, 6.0]))
        tensor(32., dtype=fjax.float32)
    """
    _same_dtype("dot", input, tensor)
    _ndim("dot", input, (1,))
    _ndim("dot", tensor, (1,), "tensor")
    _contract("dot", input, tensor, 0, 0)
    return jnp.dot(input, tensor)


@defop()
def vdot(input, other):
    """``dot(conj(input), other)`` of two 1-D tensors: the first operand is conjugated, so for complex
    ``a``, ``vdot(a, a)`` is the squared norm.

    Example::

        >>> a = fjax.tensor([1 + 1j, 2 + 0j])
        >>> fjax.vdot(a, a)
        tensor(6.+0.j, dtype=fjax.complex64)
        >>> fjax.dot(a, a)
        tensor(4.+2.j, dtype=fjax.complex64)
    """
    _same_dtype("vdot", input, other)
    _ndim("vdot", input, (1,))
    _ndim("vdot", other, (1,), "other")
    _contract("vdot", input, other, 0, 0)
    return jnp.vdot(input, other)


@defop()
def inner(input, other):
    """Inner product over the last dims: the dot product for 1-D tensors; otherwise the sum over the last
    dim of each, of shape ``input.shape[:-1] + other.shape[:-1]``. A 0-d operand multiplies elementwise.

    Example::

        >>> a = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fjax.inner(a, fjax.tensor([1.0, 1.0]))
        tensor([3., 7.], dtype=fjax.float32)
        >>> fjax.inner(a, a)
        tensor([[ 5., 11.],
                [11., 25.]], dtype=fjax.float32)
    """
    if input.ndim == 0 or other.ndim == 0:
        input, other = promote(input, other)
        return input * other
    _same_dtype("inner", input, other)
    _contract("inner", input, other, -1, -1)
    return jnp.inner(input, other)


@defop(aliases=("ger",))
def outer(input, vec2):
    """Outer product of 1-D tensors: ``out[i][j] = input[i] * vec2[j]``, shape ``(n, m)``; the dtypes
    promote.

    Example::

        >>> fjax.outer(fjax.tensor([1, 2]), fjax.tensor([1, 10, 100]))
        tensor([[  1,  10, 100],
                [  2,  20, 200]], dtype=fjax.int64)
    """
    _ndim("outer", input, (1,))
    _ndim("outer", vec2, (1,), "vec2")
    input, vec2 = promote(input, vec2)
    return input[:, None] * vec2[None, :]


@defop(static=("equation",))
def einsum(equation, operands):
    """Einstein summation; ``operands`` is a list (the Tensor-level wrapper packs varargs).

    Example: ``einsum("bij,bjk->bik", [a, b])``.
    """
    if not isinstance(equation, str):
        raise NotImplementedError("einsum: the sublist form (operand, [dims], ...) is not supported")
    operands = list(operands)
    terms = equation.split("->")[0].count(",") + 1
    if terms != len(operands):
        raise ValueError(f"einsum: equation {equation!r} names {terms} operands, got {len(operands)}")
    _same_dtype("einsum", *operands)
    return jnp.einsum(equation, *operands)


@defop(method=False, rows=Rows(("input",), when=lambda s, t: len(t["input"][0]) >= 2, dims=_passes()))
def linear(input, weight, bias=None):
    """The affine map of a linear layer: ``input @ weight.T + bias``, with ``weight`` of shape
    ``(out_features, in_features)`` (or ``(in_features,)``) and ``input`` of shape ``(..., in_features)``;
    the optional ``bias`` broadcasts over the output.

    Args:
        input: the ``(..., in_features)`` input.
        weight: the ``(out_features, in_features)`` or ``(in_features,)`` weight.
        bias: optional bias broadcast over the output (default None).

    Example::

        >>> x = fjax.tensor([[1.0, 2.0]])
        >>> weight = fjax.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, -1.0]])
        >>> F.linear(x, weight)
        tensor([[ 1.,  3., -2.]], dtype=fjax.float32)
        >>> F.linear(x, weight, fjax.tensor([0.5, 0.5, 0.5]))
        tensor([[ 1.5000,  3.5000, -1.5000]], dtype=fjax.float32)
    """
    _same_dtype("linear", input, weight, bias)
    _ndim("linear", weight, (1, 2), "weight")
    if input.ndim == 0 or input.shape[-1] != weight.shape[-1]:
        raise ValueError(
            f"linear: expected input of shape (..., {weight.shape[-1]}) for weight {weight.shape}, got {input.shape}"
        )
    out = jnp.matmul(input, weight.T)
    return out if bias is None else out + bias


def _scaled_add(op, input, product, beta, alpha):
    """``beta * input + alpha * product``; beta == 0 ignores input (NaN included), as torch.
    beta and alpha are kernel arguments; their literal defaults (1) cost nothing."""
    shape = _broadcast(op, input.shape, product.shape)
    if not (type(alpha) is int and alpha == 1):
        product = (alpha * product).astype(product.dtype)
    if type(beta) is int and beta == 1:
        return product + input
    scaled = jnp.where(beta == 0, jnp.zeros((), input.dtype), (beta * input).astype(input.dtype))
    return product + jnp.broadcast_to(scaled, shape)


@defop()
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``, with ``input`` broadcast to the product's shape. With
    ``beta=0``, ``input`` is ignored (a NaN or inf in it does not propagate), as in torch.

    Example::

        >>> m = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fjax.addmm(fjax.ones(2, 2), m, m)
        tensor([[ 8., 11.],
                [16., 23.]], dtype=fjax.float32)
        >>> fjax.addmm(fjax.tensor([10.0, 20.0]), m, m, beta=0.5, alpha=2)
        tensor([[19., 30.],
                [35., 54.]], dtype=fjax.float32)
    """
    _same_dtype("addmm", input, mat1, mat2)
    return _scaled_add("addmm", input, mm(mat1, mat2), beta, alpha)


@defop()
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``, with ``input`` broadcast to the product's shape and ignored
    when ``beta=0``.

    Example::

        >>> m = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fjax.addmv(fjax.tensor([1.0, 1.0]), m, fjax.tensor([1.0, 0.0]), alpha=-1)
        tensor([ 0., -2.], dtype=fjax.float32)
    """
    _same_dtype("addmv", input, mat, vec)
    return _scaled_add("addmv", input, mv(mat, vec), beta, alpha)


@defop()
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``, with ``input`` broadcast to the ``(n, m)`` product and
    ignored when ``beta=0``.

    Example::

        >>> fjax.addr(fjax.zeros(2, 3), fjax.tensor([1.0, 2.0]), fjax.tensor([1.0, 0.0, -1.0]))
        tensor([[ 1.,  0., -1.],
                [ 2.,  0., -2.]], dtype=fjax.float32)
    """
    _same_dtype("addr", input, vec1, vec2)
    return _scaled_add("addr", input, outer(vec1, vec2), beta, alpha)


@defop()
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``, with ``input`` broadcast to the ``(b, n, p)``
    product and ignored when ``beta=0``.

    Example::

        >>> b = fjax.ones(3, 2, 4)
        >>> out = fjax.baddbmm(fjax.zeros(3, 2, 2), b, b.transpose(1, 2), alpha=0.5)
        >>> out.shape
        fjax.Size([3, 2, 2])
        >>> out[0]
        tensor([[2., 2.],
                [2., 2.]], dtype=fjax.float32)
    """
    _same_dtype("baddbmm", input, batch1, batch2)
    return _scaled_add("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@defop()
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``: the batch of matrix products is summed
    into one ``(n, p)`` matrix before ``input`` is added (ignored when ``beta=0``).

    Example::

        >>> b = fjax.ones(3, 2, 4)
        >>> fjax.addbmm(fjax.zeros(2, 2), b, b.transpose(1, 2))
        tensor([[12., 12.],
                [12., 12.]], dtype=fjax.float32)
    """
    _same_dtype("addbmm", input, batch1, batch2)
    return _scaled_add("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha)


@defop(method=False)
def bilinear(input1, input2, weight, bias=None):
    """The map of a bilinear layer: ``out[..., o] = input1 @ weight[o] @ input2 + bias[o]``, with
    ``weight`` of shape ``(out, in1, in2)``. ``input1`` ``(..., in1)`` and ``input2`` ``(..., in2)`` have the
    same leading dims; ``bias`` is optional.

    Args:
        input1: the ``(..., in1)`` first input.
        input2: the ``(..., in2)`` second input.
        weight: the ``(out, in1, in2)`` weight.
        bias: optional ``(out,)`` bias (default None).

    Example::

        >>> x1, x2 = fjax.ones(5, 2), fjax.ones(5, 3)
        >>> weight = fjax.ones(4, 2, 3)
        >>> out = F.bilinear(x1, x2, weight, fjax.zeros(4))
        >>> out.shape
        fjax.Size([5, 4])
        >>> out[0]
        tensor([6., 6., 6., 6.], dtype=fjax.float32)
    """
    _same_dtype("bilinear", input1, input2, weight, bias)
    _ndim("bilinear", weight, (3,), "weight")
    if input1.shape[:-1] != input2.shape[:-1] or weight.shape[1:] != (input1.shape[-1], input2.shape[-1]):
        raise ValueError(
            f"bilinear: expected input1 (..., {weight.shape[1]}) and input2 (..., {weight.shape[2]}) "
            f"with equal leading dims for weight {weight.shape}, got {input1.shape} and {input2.shape}"
        )
    out = jnp.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


@defop(static=("dim",))
def cross(input, other, dim=None):
    """Cross product of 3-vectors along ``dim``, the inputs broadcast together. When ``dim`` is None it is
    the first dim of size 3, as torch.cross (torch.linalg.cross uses -1).

    Example::

        >>> a = fjax.tensor([1.0, 0.0, 0.0])
        >>> b = fjax.tensor([0.0, 1.0, 0.0])
        >>> fjax.cross(a, b)
        tensor([0., 0., 1.], dtype=fjax.float32)
        >>> fjax.cross(fjax.ones(3, 2), fjax.ones(3, 2)).shape
        fjax.Size([3, 2])
    """
    _same_dtype("cross", input, other)
    shape = _broadcast("cross", input.shape, other.shape)
    if dim is None:
        dim = next((d for d, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise ValueError(f"cross: no dimension of size 3 in shape {shape}")
    if not -len(shape) <= dim < len(shape) or shape[dim] != 3:
        raise ValueError(f"cross: expected size 3 at dim {dim}, got shapes {input.shape} and {other.shape}")
    input, other = jnp.broadcast_to(input, shape), jnp.broadcast_to(other, shape)
    return jnp.cross(input, other, axis=dim)


@defop(linear=True)
def trace(input):
    """Sum of the main diagonal of a 2-D tensor (which need not be square).

    Example::

        >>> fjax.tensor([[1, 2], [3, 4]]).trace()
        tensor(5, dtype=fjax.int64)
    """
    _ndim("trace", input, (2,))
    return jnp.trace(input)


@defop(static=("diagonal",), linear=True)
def diag(input, diagonal=0):
    """A 1-D input becomes a square matrix with it on diagonal ``diagonal`` (0 the main one, positive
    above it, negative below); a 2-D input gives its ``diagonal``-th diagonal as a 1-D tensor.

    Example::

        >>> fjax.diag(fjax.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]], dtype=fjax.int64)
        >>> m = fjax.tensor([[1, 2, 3], [4, 5, 6]])
        >>> fjax.diag(m)
        tensor([1, 5], dtype=fjax.int64)
        >>> fjax.diag(m, 1)
        tensor([2, 6], dtype=fjax.int64)
    """
    _ndim("diag", input, (1, 2))
    return jnp.diag(input, k=diagonal)


@defop(static=("offset", "dim1", "dim2"), linear=True)
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal with offset ``offset`` of each plane spanned by ``dim1`` and ``dim2``: those two
    dims are removed and the diagonal becomes the last dim. The result shares storage with ``input``.

    Example::

        >>> m = fjax.tensor([[1, 2, 3], [4, 5, 6]])
        >>> m.diagonal()
        tensor([1, 5], dtype=fjax.int64)
        >>> m.diagonal(offset=-1)
        tensor([4], dtype=fjax.int64)
        >>> fjax.zeros(2, 3, 3).diagonal(dim1=1, dim2=2).shape
        fjax.Size([2, 3])
    """
    return jnp.diagonal(input, offset=offset, axis1=dim1, axis2=dim2)


@defop(static=("dims",))
def tensordot(a, b, dims=2):
    """Tensor contraction. With an int ``dims``, sum over the last ``dims`` dims of ``a`` against the
    first ``dims`` of ``b``; with a pair of lists, over dims ``dims[0]`` of ``a`` against ``dims[1]`` of ``b``.
    The remaining dims of ``a`` come first in the result, then those of ``b``.

    Example::

        >>> a, b = fjax.ones(2, 3, 4), fjax.ones(3, 4, 5)
        >>> fjax.tensordot(a, b).shape
        fjax.Size([2, 5])
        >>> fjax.tensordot(a, b, dims=([1], [0])).shape
        fjax.Size([2, 4, 4, 5])
        >>> fjax.tensordot(fjax.tensor([1.0, 2.0]), fjax.tensor([3.0, 4.0]), dims=1)
        tensor(11., dtype=fjax.float32)
    """
    _same_dtype("tensordot", a, b)
    if isinstance(dims, int):
        if not 0 <= dims <= min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: cannot contract {dims} dims of shapes {a.shape} and {b.shape}")
        pairs = (tuple(range(a.ndim - dims, a.ndim)), tuple(range(dims)))
    else:
        pairs = tuple((d,) if isinstance(d, int) else tuple(d) for d in dims)
    if len(pairs[0]) != len(pairs[1]) or any(
        a.shape[i] != b.shape[j] and 1 not in (a.shape[i], b.shape[j]) for i, j in zip(*pairs)
    ):
        raise ValueError(f"tensordot: cannot contract dims {dims} of shapes {a.shape} and {b.shape}")
    for i, j in zip(*pairs):  # torch broadcasts a size-1 dim against the other: sum the other to size 1
        if a.shape[i] == 1 and b.shape[j] != 1:
            b = jnp.sum(b, axis=j, keepdims=True)
        elif b.shape[j] == 1 and a.shape[i] != 1:
            a = jnp.sum(a, axis=i, keepdims=True)
    return jnp.tensordot(a, b, axes=pairs)


@defop()
def kron(input, other):
    """Kronecker product: each element of ``input`` times a whole copy of ``other``, laid out in blocks,
    so the shapes multiply dim by dim; the dtypes promote.

    Example::

        >>> fjax.kron(fjax.tensor([[1, 2], [3, 4]]), fjax.tensor([[1, 1]]))
        tensor([[1, 1, 2, 2],
                [3, 3, 4, 4]], dtype=fjax.int64)
    """
    input, other = promote(input, other)
    return jnp.kron(input, other)


def _square(op, x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: expected a (batch of) square matrices, got shape {x.shape}")
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise TypeError(f"{op}: expected a floating point tensor, got {x.dtype}")


@defop()
def det(input):
    """Determinant of a square matrix, or of each matrix of a batch in the last two dims; the input must
    be floating point.

    Example::

        >>> fjax.det(fjax.tensor([[2.0, 1.0], [0.0, 3.0]]))
        tensor(6., dtype=fjax.float32)
        >>> fjax.det(fjax.eye(3).expand(4, 3, 3))
        tensor([1., 1., 1., 1.], dtype=fjax.float32)
    """
    _square("det", input)
    return _det(input)


def _det(A):
    """The determinant; 1 for a 0x0 matrix (the empty product), as torch."""
    if A.shape[-1] == 0:
        return jnp.ones(A.shape[:-2], A.dtype)
    return jnp.linalg.det(A)


@defop(check=lambda input: _check_invertible(input))
def inverse(input):
    """Inverse of a square matrix, or of each matrix of a batch in the last two dims; the input must
    be floating point.

    Example::

        >>> fjax.inverse(fjax.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]], dtype=fjax.float32)
    """
    _square("inverse", input)
    return jnp.linalg.inv(input)


@defop(static=("n",))
def matrix_power(input, n):
    """``input`` multiplied by itself ``n`` times, for a square matrix or a batch of them: ``n=0``
    gives the identity, and a negative ``n`` raises the inverse to ``-n``.

    Example::

        >>> m = fjax.tensor([[1.0, 1.0], [0.0, 1.0]])
        >>> m.matrix_power(3)
        tensor([[1., 3.],
                [0., 1.]], dtype=fjax.float32)
        >>> m.matrix_power(0)
        tensor([[1., 0.],
                [0., 1.]], dtype=fjax.float32)
        >>> m.matrix_power(-1)
        tensor([[ 1., -1.],
                [ 0.,  1.]], dtype=fjax.float32)
    """
    if n < 0:
        _square("matrix_power", input)
    elif input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise ValueError(f"matrix_power: expected a (batch of) square matrices, got shape {input.shape}")
    return jnp.linalg.matrix_power(input, n)


# ----------------------------------------------------------------------------- torch.linalg
# The ops behind ``fjax.linalg``, registered under torch's native names (``linalg_svd``), so their
# named tuples are ``fjax.return_types.linalg_svd`` as in torch. They are not Tensor methods.


class LinAlgError(RuntimeError):
    """A linear-algebra failure torch reports (singular matrix, not positive-definite): as
    ``torch.linalg.LinAlgError``, a RuntimeError."""


def _float(op, x, what="A"):
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise TypeError(f"{op}: expected a floating point or complex tensor as {what}, got {x.dtype}")


def _matrix(op, x, square=False):
    _float(op, x)
    if x.ndim < 2:
        raise ValueError(f"{op}: expected a (batch of) matrices of at least 2 dims, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: expected a (batch of) square matrices, got shape {x.shape}")


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _mH(x):
    return jnp.conj(_mT(x))


def _hermitian_from(a, uplo, symmetrize=True):
    """The Hermitian matrix torch reads from one triangle of ``a`` (``uplo`` 'L' or 'U'); the
    gradient reaches ``a`` symmetrized (``symmetrize``) as in torch's eigh/cholesky backward, or as is."""
    if uplo not in ("L", "U"):
        raise ValueError(f"expected UPLO to be 'L' or 'U', got {uplo!r}")
    strict = jnp.tril(a, -1) if uplo == "L" else jnp.triu(a, 1)
    diag = jnp.real(jnp.diagonal(a, axis1=-2, axis2=-1)).astype(a.dtype)
    full = strict + _mH(strict) + diag[..., None] * jnp.eye(a.shape[-1], dtype=a.dtype)
    sym = (a + _mH(a)) / 2 if symmetrize else a
    return jax.lax.stop_gradient(full) + (sym - jax.lax.stop_gradient(sym))


def _no_driver(op, driver, allowed=(None,)):
    if driver not in allowed:
        raise NotImplementedError(f"{op}: driver={driver!r} is not supported (supported: {allowed})")


# -- eager checks: torch raises where JAX returns inf/nan ------------------------------------

_lu_diagonal = jax.jit(lambda a: jnp.diagonal(jax.lax.linalg.lu(a)[0], axis1=-2, axis2=-1))
_cholesky_failed = jax.jit(lambda a: jnp.isnan(jnp.linalg.cholesky(a)).any((-2, -1)))


def _first_bad(bad):
    """(batch element, 1-based position) of the first True of ``bad`` (``(*batch, n)``), or None."""
    flat = np.asarray(bad).reshape(-1, bad.shape[-1])
    rows = flat.any(-1)
    if not rows.any():
        return None
    b = int(np.argmax(rows))
    return b, int(np.argmax(flat[b])) + 1


def _batch(a, b):
    return f"(Batch element {b}): " if a.ndim > 2 else ""


def _eager_matrix(a):
    """True where ``a`` is a concrete float square matrix (batch) with elements: the checks run."""
    if not hasattr(a, "dtype") or not jnp.issubdtype(a.dtype, jnp.inexact) or jnp.ndim(a) < 2:
        return False
    if a.shape[-1] != a.shape[-2] or a.size == 0:
        return False
    if isinstance(a, jax.core.Tracer):
        from . import indexing

        if indexing.traced_check is not None:
            ok = jnp.all(_lu_diagonal(a) != 0)
            indexing.traced_check(ok, "linalg: singular matrix (checked inside a compiled graph)")
        return False
    return True


def _check_invertible(A, *args, check_errors=True, **kwargs):
    if not check_errors or not _eager_matrix(A):
        return
    found = _first_bad(_lu_diagonal(A) == 0)
    if found is not None:
        b, i = found
        raise LinAlgError(
            f"linalg.inv: {_batch(A, b)}The diagonal element {i} is zero, the inversion could not be "
            "completed because the input matrix is singular."
        )


def _check_solvable(A, B, *args, **kwargs):
    if not _eager_matrix(A):
        return
    found = _first_bad(_lu_diagonal(A) == 0)
    if found is not None:
        raise LinAlgError(f"linalg.solve: {_batch(A, found[0])}The solver failed because the input matrix is singular.")


def _check_positive_definite(A, *args, upper=False, check_errors=True, **kwargs):
    if not check_errors or not _eager_matrix(A):
        return
    a = _hermitian_from(jnp.asarray(A), "U" if upper else "L")
    failed = np.asarray(_cholesky_failed(a)).reshape(-1)
    if not failed.any():
        return
    b = int(np.argmax(failed))
    from scipy.linalg import lapack

    m = np.asarray(a).reshape((-1,) + a.shape[-2:])[b]
    potrf = lapack.get_lapack_funcs("potrf", (m,))
    order = potrf(m, lower=True)[1]
    raise LinAlgError(
        f"linalg.cholesky: {_batch(A, b)}The factorization could not be completed because the input is not "
        f"positive-definite (the leading minor of order {order} is not positive-definite)."
    )


# -- norms ------------------------------------------------------------------------------------


def _norm_dtype(op, x, dtype):
    _float(op, x, "input")
    if dtype is not None:
        dtype = np.dtype(dtype)
        if not jnp.issubdtype(dtype, jnp.inexact):
            raise TypeError(f"{op}: dtype={dtype} is not a floating point or complex dtype")
        x = x.astype(dtype)
    return x


def _dims(op, dim, ndim):
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    n = max(ndim, 1)
    for d in dims:
        if not -n <= d < n:
            raise ValueError(f"{op}: dim {d} is out of range for a tensor of {ndim} dims")
    out = tuple(d % n for d in dims)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dim {dim} names a dimension twice")
    return out


@defop(static=("ord", "dim", "keepdim", "dtype"), method=False)
def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of the vectors along ``dim`` (all elements when None): ``sum(|x|**ord)**(1/ord)``,
    the max (``inf``) or min (``-inf``) of ``|x|``, or the count of nonzeros (``0``). ``dtype`` casts first.

    Example::

        >>> fjax.linalg.vector_norm(fjax.tensor([3.0, -4.0]))
        tensor(5., dtype=fjax.float32)
        >>> fjax.linalg.vector_norm(fjax.tensor([[1.0, -2.0], [3.0, 0.0]]), ord=1, dim=1)
        tensor([3., 3.], dtype=fjax.float32)
    """
    x = _norm_dtype("linalg.vector_norm", x, dtype)
    axes = None if dim is None else _dims("linalg.vector_norm", dim, x.ndim)
    if x.ndim == 0:
        return _vector_norm(x.reshape(1), ord, None, False)
    return _vector_norm(x, ord, axes, keepdim)


def _vector_norm(x, ord, axes, keepdims):
    """``sum(|x|**ord)**(1/ord)`` over ``axes`` (all when None), with torch's gradient 0 where ``x`` is 0
    (``|x|**ord`` and the root are evaluated away from 0, so no 0 * inf reaches the gradient)."""
    a = jnp.where(x != 0, jnp.abs(x), 0)  # JAX's d|x|/dx at 0 is 1; torch's subgradient is 0
    if ord == float("inf"):
        return jnp.max(a, axis=axes, keepdims=keepdims)
    if ord == float("-inf"):
        return jnp.min(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(a != 0, axis=axes, keepdims=keepdims).astype(a.dtype)
    nonzero = a > 0
    powered = jnp.where(nonzero, jnp.where(nonzero, a, 1) ** ord, 0 if ord > 0 else jnp.inf)
    total = jnp.sum(powered, axis=axes, keepdims=keepdims)
    positive = total > 0
    safe = jnp.where(positive, total, 1)
    return jnp.where(positive, jnp.sqrt(safe) if ord == 2 else safe ** (1 / ord), 0).astype(a.dtype)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf"))


@defop(static=("ord", "dim", "keepdim", "dtype"), method=False)
def linalg_matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The ``ord``-norm of the matrices in dims ``dim``: ``'fro'``, ``'nuc'`` (sum of singular values),
    ``2``/``-2`` (largest/smallest singular value), ``1``/``-1`` (max/min column sum), ``inf``/``-inf`` (rows).

    Example::

        >>> A = fjax.tensor([[1.0, -2.0], [3.0, 4.0]])
        >>> fjax.linalg.matrix_norm(A, ord=1)
        tensor(6., dtype=fjax.float32)
        >>> fjax.linalg.matrix_norm(A, ord=float("inf"))
        tensor(7., dtype=fjax.float32)
    """
    A = _norm_dtype("linalg.matrix_norm", A, dtype)
    if ord not in _MATRIX_ORDS:
        raise ValueError(f"linalg.matrix_norm: ord={ord!r} is not one of {_MATRIX_ORDS}")
    if A.ndim < 2:
        raise ValueError(f"linalg.matrix_norm: expected a tensor of at least 2 dims, got shape {A.shape}")
    axes = _dims("linalg.matrix_norm", dim, A.ndim)
    if len(axes) != 2:
        raise ValueError(f"linalg.matrix_norm: dim must name 2 dims, got {dim}")
    if ord == "fro":
        return _vector_norm(A, 2, axes, keepdim)
    return jnp.linalg.norm(A, ord=ord, axis=axes, keepdims=keepdim)


# -- solving, inverses, determinants ----------------------------------------------------------


def _is_vector_rhs(A, B):
    """torch's rule: B is a (batch of) vectors when 1-D, or when its shape is A's without the last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


@defop(static=("left",), method=False, check=_check_solvable)
def linalg_solve(A, B, *, left=True):
    """The solution ``X`` of ``A @ X = B`` (``X @ A = B`` when ``left=False``) for square invertible ``A``;
    the batch dims broadcast, and ``B`` may be a (batch of) vectors. A singular ``A`` raises LinAlgError.

    Example::

        >>> A = fjax.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> fjax.linalg.solve(A, fjax.tensor([2.0, 3.0]))
        tensor([1., 2.], dtype=fjax.float32)
    """
    _matrix("linalg.solve", A, square=True)
    _float("linalg.solve", B, "B")
    _same_dtype("linalg.solve", A, B)
    vector = _is_vector_rhs(A, B)
    if vector:
        B = B[..., None]
    if not left:
        if vector:
            raise ValueError("linalg.solve: left=False needs B to be a (batch of) matrices")
        A, B = _mT(A), _mT(B)
    if B.shape[-2] != A.shape[-1]:
        raise ValueError(f"linalg.solve: shapes {A.shape} and {B.shape} do not match for solving")
    batch = _broadcast("linalg.solve", A.shape[:-2], B.shape[:-2])
    A = jnp.broadcast_to(A, batch + A.shape[-2:])
    B = jnp.broadcast_to(B, batch + B.shape[-2:])
    X = jnp.linalg.solve(A, B)
    if vector:
        return X[..., 0]
    return X if left else _mT(X)


@defop(method=False, check=_check_invertible)
def linalg_inv(A):
    """The inverse of a square matrix, or of each matrix of a batch; a singular one raises LinAlgError.

    Example::

        >>> fjax.linalg.inv(fjax.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]], dtype=fjax.float32)
    """
    _matrix("linalg.inv", A, square=True)
    return jnp.linalg.inv(A)


@defop(
    static=("check_errors",),
    method=False,
    check=lambda A, *, check_errors=False: _check_invertible(A, check_errors=check_errors),
    returns=("inverse", "info"),
)
def linalg_inv_ex(A, *, check_errors=False):
    """``linalg.inv`` without the error: ``(inverse, info)``, ``info`` (int32, per matrix) 0 when invertible,
    else the 1-based index of the first zero pivot of the LU factorization. ``check_errors=True`` raises.

    Example::

        >>> out = fjax.linalg.inv_ex(fjax.tensor([[1.0, 2.0], [2.0, 4.0]]))
        >>> out.info
        tensor(2, dtype=fjax.int32)
    """
    _matrix("linalg.inv_ex", A, square=True)
    n = A.shape[-1]
    if n == 0 or A.size == 0:
        return A, jnp.zeros(A.shape[:-2], jnp.int32)
    lu, _, perm = jax.lax.linalg.lu(A)
    eye = jnp.broadcast_to(jnp.eye(n, dtype=A.dtype), A.shape)
    rhs = jnp.take_along_axis(eye, jnp.broadcast_to(perm[..., None], A.shape), axis=-2)
    y = jax.lax.linalg.triangular_solve(lu, rhs, left_side=True, lower=True, unit_diagonal=True)
    inverse = jax.lax.linalg.triangular_solve(lu, y, left_side=True, lower=False)
    return inverse, _lu_info(lu)


@defop(method=False)
def linalg_det(A):
    """The determinant of a square matrix, or of each matrix of a batch.

    Example::

        >>> fjax.linalg.det(fjax.tensor([[2.0, 1.0], [0.0, 3.0]]))
        tensor(6., dtype=fjax.float32)
    """
    _matrix("linalg.det", A, square=True)
    return _det(A)


@defop(method=False, returns=("sign", "logabsdet"))
def linalg_slogdet(A):
    """``(sign, logabsdet)`` of the determinant of each square matrix: ``det = sign * exp(logabsdet)``,
    without overflow; a singular matrix gives sign 0 and logabsdet ``-inf``.

    Example::

        >>> fjax.linalg.slogdet(fjax.tensor([[-2.0, 0.0], [0.0, 1.0]])).sign
        tensor(-1., dtype=fjax.float32)
    """
    _matrix("linalg.slogdet", A, square=True)
    if A.shape[-1] == 0:
        return jnp.ones(A.shape[:-2], A.dtype), jnp.zeros(A.shape[:-2], jnp.finfo(A.dtype).dtype)
    return tuple(jnp.linalg.slogdet(A))


# -- LU: factors, unpacking, solves ------------------------------------------------------------
# torch's pivots are LAPACK's: 1-based int32, row i was swapped with row pivots[i] - 1, in order.


def _lu_info(lu):
    """Per matrix, the 1-based index of the first zero on U's diagonal, else 0 (LAPACK's info), int32."""
    zero = jnp.diagonal(lu, axis1=-2, axis2=-1) == 0
    if zero.shape[-1] == 0:
        return jnp.zeros(zero.shape[:-1], jnp.int32)
    return jnp.where(zero.any(-1), jnp.argmax(zero, -1) + 1, 0).astype(jnp.int32)


def _lu(op, A, pivot):
    """``(LU, pivots)`` of ``A`` (``(*, m, n)``): JAX's partial-pivoting LU, pivots 1-based int32."""
    _matrix(op, A)
    if not pivot:
        raise NotImplementedError(f"{op}: pivot=False (LU without pivoting) is not supported, as on torch's CPU")
    m, n = A.shape[-2:]
    if A.size == 0:
        k = min(m, n)
        return A, jnp.broadcast_to(jnp.arange(1, k + 1, dtype=jnp.int32), A.shape[:-2] + (k,))
    lu, pivots, _ = jax.lax.linalg.lu(A)
    return lu, (pivots + 1).astype(jnp.int32)


def _permutation(pivots, m):
    """The row order ``perm`` (``A[perm] = L @ U``) that LAPACK's 1-based ``pivots`` swaps ``arange(m)`` into."""
    rows = jnp.arange(m)
    perm = jnp.broadcast_to(rows, pivots.shape[:-1] + (m,))
    swaps = pivots.astype(jnp.int32) - 1

    def swap(i, perm):
        j = swaps[..., i][..., None]
        at_i = jnp.take_along_axis(perm, jnp.broadcast_to(i, j.shape), axis=-1)
        at_j = jnp.take_along_axis(perm, j, axis=-1)
        return jnp.where(rows == i, at_j, jnp.where(rows == j, at_i, perm))

    return jax.lax.fori_loop(0, pivots.shape[-1], swap, perm)


def _check_pivots(op, LU, pivots):
    if jnp.issubdtype(pivots.dtype, jnp.floating) or pivots.dtype == jnp.bool_:
        raise TypeError(f"{op}: expected integer pivots, got {pivots.dtype}")
    k = min(LU.shape[-2:])
    if pivots.shape[-1:] != (k,):
        raise ValueError(f"{op}: expected pivots of shape (*, {k}) for LU {LU.shape}, got {pivots.shape}")


def _unpack(LU, pivots):
    """``(P, L, U)`` with ``A = P @ L @ U`` from the compact ``LU`` and its pivots."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    L = jnp.tril(LU[..., :, :k], -1) + jnp.eye(m, k, dtype=LU.dtype)
    U = jnp.triu(LU[..., :k, :])
    perm = _permutation(pivots, m)
    P = (perm[..., None, :] == jnp.arange(m)[:, None]).astype(LU.dtype)  # P[perm[i], i] = 1
    batch = jnp.broadcast_shapes(LU.shape[:-2], pivots.shape[:-1])
    return jnp.broadcast_to(P, batch + (m, m)), L, U


@defop(static=("pivot",), method=False, returns=("LU", "pivots"))
def linalg_lu_factor(A, *, pivot=True):
    """``(LU, pivots)``: the compact LU factorization with partial pivoting, ``L`` (unit diagonal, not stored)
    below the diagonal of ``LU`` and ``U`` on and above it; ``pivots`` (int32, 1-based) as LAPACK's getrf.

    Example::

        >>> LU, pivots = fjax.linalg.lu_factor(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> LU
        tensor([[3.0000, 4.0000],
                [0.3333, 0.6667]], dtype=fjax.float32)
        >>> pivots
        tensor([2, 2], dtype=fjax.int32)
    """
    return _lu("linalg.lu_factor", A, pivot)


@defop(static=("pivot", "check_errors"), method=False, returns=("LU", "pivots", "info"))
def linalg_lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``linalg.lu_factor`` plus ``info`` (int32, per matrix): 0, or the 1-based index of the first zero on
    ``U``'s diagonal (a singular matrix still factors). ``check_errors=True`` raises for a singular one.

    Example::

        >>> fjax.linalg.lu_factor_ex(fjax.tensor([[1.0, 2.0], [2.0, 4.0]])).info
        tensor(2, dtype=fjax.int32)
    """
    if check_errors:
        _check_invertible(A)
    LU, pivots = _lu("linalg.lu_factor_ex", A, pivot)
    return LU, pivots, _lu_info(LU)


@defop(static=("pivot",), method=False, returns=("P", "L", "U"))
def linalg_lu(A, *, pivot=True):
    """``(P, L, U)`` with ``A = P @ L @ U``: a permutation matrix, unit lower-triangular ``L`` (``m x k``) and
    upper-triangular ``U`` (``k x n``), ``k = min(m, n)``.

    Example::

        >>> P, L, U = fjax.linalg.lu(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> P
        tensor([[0., 1.],
                [1., 0.]], dtype=fjax.float32)
        >>> U
        tensor([[3.0000, 4.0000],
                [0.0000, 0.6667]], dtype=fjax.float32)
    """
    LU, pivots = _lu("linalg.lu", A, pivot)
    P, L, U = _unpack(LU, pivots)
    return jax.lax.stop_gradient(P), L, U


@defop(static=("unpack_data", "unpack_pivots"), method=False, returns=("P", "L", "U"))
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from ``linalg.lu_factor``'s compact ``LU_data`` and ``LU_pivots``; ``L`` and ``U``
    (``unpack_data=False``) or ``P`` (``unpack_pivots=False``) come back empty when not asked for.

    Example::

        >>> LU, pivots = fjax.linalg.lu_factor(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> fjax.lu_unpack(LU, pivots).L
        tensor([[1.0000, 0.0000],
                [0.3333, 1.0000]], dtype=fjax.float32)
    """
    _matrix("lu_unpack", LU_data)
    _check_pivots("lu_unpack", LU_data, LU_pivots)
    P, L, U = _unpack(LU_data, LU_pivots)
    empty = jnp.zeros((0,), LU_data.dtype)
    return (jax.lax.stop_gradient(P) if unpack_pivots else empty), *((L, U) if unpack_data else (empty, empty))


def _lu_solve(LU, pivots, B, left, adjoint):
    """The solution of ``A X = B`` (``A^H X = B`` when ``adjoint``; ``X A = B`` etc. when not ``left``) for
    ``A = P L U`` given as the compact ``LU`` and pivots; batch dims broadcast."""
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return _mH(_lu_solve(LU, pivots, _mH(B), True, not adjoint))
    n = LU.shape[-1]
    batch = jnp.broadcast_shapes(LU.shape[:-2], pivots.shape[:-1], B.shape[:-2])
    LU = jnp.broadcast_to(LU, batch + LU.shape[-2:])
    B = jnp.broadcast_to(B, batch + B.shape[-2:])
    perm = jnp.broadcast_to(_permutation(pivots, n), batch + (n,))
    solve = functools.partial(jax.lax.linalg.triangular_solve, left_side=True)
    if not adjoint:  # L U X = P^T B
        Y = solve(LU, jnp.take_along_axis(B, perm[..., None], axis=-2), lower=True, unit_diagonal=True)
        return solve(LU, Y, lower=False)
    Y = solve(LU, B, lower=False, transpose_a=True, conjugate_a=True)  # U^H L^H P^T X = B
    Z = solve(LU, Y, lower=True, unit_diagonal=True, transpose_a=True, conjugate_a=True)
    inverse = jnp.argsort(perm, axis=-1)
    return jnp.take_along_axis(Z, inverse[..., None], axis=-2)


def _lu_solve_args(op, LU, pivots, B, left):
    _matrix(op, LU, square=True)
    _float(op, B, "B")
    _same_dtype(op, LU, B)
    _check_pivots(op, LU, pivots)
    if B.ndim < 2 or B.shape[-2 if left else -1] != LU.shape[-1]:
        side = "rows" if left else "columns"
        raise ValueError(f"{op}: B {B.shape} must have as many {side} as LU {LU.shape} has rows")
    _broadcast(op, LU.shape[:-2], pivots.shape[:-1], B.shape[:-2])


@defop(static=("left", "adjoint"), method=False)
def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """The solution ``X`` of ``A @ X = B`` for ``A`` given by ``linalg.lu_factor``'s ``(LU, pivots)``;
    ``adjoint`` solves with ``A.mH``, ``left=False`` solves ``X @ A = B``. Batch dims broadcast.

    Example::

        >>> LU, pivots = fjax.linalg.lu_factor(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> fjax.linalg.lu_solve(LU, pivots, fjax.tensor([[5.0], [11.0]]))
        tensor([[1.],
                [2.]], dtype=fjax.float32)
    """
    _lu_solve_args("linalg.lu_solve", LU, pivots, B, left)
    return _lu_solve(LU, pivots, B, left, adjoint)


@defop()
def lu_solve(b, LU_data, LU_pivots):
    """The solution ``x`` of ``A @ x = b`` for ``A`` given by ``LU_data`` and ``LU_pivots`` of ``fjax.lu``
    (``fjax.linalg.lu_solve`` with torch's legacy argument order).

    Example::

        >>> LU, pivots = fjax.lu(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> fjax.lu_solve(fjax.tensor([[5.0], [11.0]]), LU, pivots)
        tensor([[1.],
                [2.]], dtype=fjax.float32)
    """
    _lu_solve_args("lu_solve", LU_data, LU_pivots, b, True)
    return _lu_solve(LU_data, LU_pivots, b, True, False)


@defop(static=("pivot", "get_infos"), returns=("LU", "pivots", "info"))
def lu(A, pivot=True, get_infos=False):
    """``(A_LU, pivots)``, or ``(A_LU, pivots, infos)`` when ``get_infos``: torch's legacy ``lu``, as
    ``fjax.linalg.lu_factor_ex``.

    Example::

        >>> A_LU, pivots = fjax.lu(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots
        tensor([2, 2], dtype=fjax.int32)
    """
    LU, pivots = _lu("lu", A, pivot)
    return (LU, pivots, _lu_info(LU)) if get_infos else (LU, pivots)  # torch: a named tuple, or a pair


@defop(static=("left", "check_errors"), method=False, returns=("result", "info"))
def linalg_solve_ex(A, B, *, left=True, check_errors=False):
    """``linalg.solve`` without the error: ``(result, info)``, ``info`` (int32, per matrix) 0 when ``A`` is
    invertible, else the 1-based index of the first zero pivot of its LU. ``check_errors=True`` raises.

    Example::

        >>> A = fjax.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> fjax.linalg.solve_ex(A, fjax.tensor([2.0, 3.0])).result
        tensor([1., 2.], dtype=fjax.float32)
    """
    if check_errors:
        _check_solvable(A, B)
    X = linalg_solve(A, B, left=left)
    if A.size == 0:
        return X, jnp.zeros(A.shape[:-2], jnp.int32)
    return X, _lu_info(jax.lax.linalg.lu(A)[0])


def _check_tensorinv(A, ind=2):
    _check_invertible(_tensor_matrix("linalg.tensorinv", A, ind))


@defop(static=("ind",), method=False, check=_check_tensorinv)
def linalg_tensorinv(A, ind=2):
    """The tensor inverse: ``A`` read as the matrix ``prod(A.shape[:ind]) x prod(A.shape[ind:])`` (square),
    inverted and reshaped to ``A.shape[ind:] + A.shape[:ind]``, so ``tensordot(inv, A, ind)`` is an identity.

    Example::

        >>> A = fjax.eye(4).reshape(4, 2, 2) * 2
        >>> fjax.linalg.tensorinv(A, ind=1).shape
        fjax.Size([2, 2, 4])
    """
    matrix = _tensor_matrix("linalg.tensorinv", A, ind)
    return jnp.linalg.inv(matrix).reshape(A.shape[ind:] + A.shape[:ind])


def _tensor_matrix(op, A, ind):
    if not isinstance(ind, int) or ind <= 0:
        raise ValueError(f"{op}: expected a strictly positive integer ind, got {ind!r}")
    _float(op, A)
    rows, cols = int(np.prod(A.shape[:ind])), int(np.prod(A.shape[ind:]))
    if rows != cols:
        raise ValueError(
            f"{op}: expected prod(A.shape[:ind]) == prod(A.shape[ind:]), got {rows} and {cols} for shape {A.shape}"
        )
    return jnp.reshape(A, (rows, cols))


@defop(static=("dims",), method=False)
def linalg_tensorsolve(A, B, dims=None):
    """The ``X`` with ``tensordot(A, X, X.ndim) = B``: ``A`` (its ``dims`` moved to the end first) is read as
    a square matrix of ``prod(B.shape)`` rows, and ``X`` has shape ``A.shape[B.ndim:]``.

    Example::

        >>> A = fjax.eye(6).reshape(2, 3, 6)
        >>> fjax.linalg.tensorsolve(A, fjax.ones(2, 3)).shape
        fjax.Size([6])
    """
    _float("linalg.tensorsolve", A)
    _same_dtype("linalg.tensorsolve", A, B)
    if dims is not None:
        moved = _dims("linalg.tensorsolve", dims, A.ndim)
        A = jnp.moveaxis(A, moved, tuple(range(A.ndim - len(moved), A.ndim)))
    x_shape = A.shape[B.ndim :]
    rows, cols = int(np.prod(B.shape)), int(np.prod(x_shape))
    if int(np.prod(A.shape[: B.ndim])) != rows or rows != cols:
        raise ValueError(
            f"linalg.tensorsolve: A {A.shape} (dims moved) must read as a square {rows} x {rows} matrix for B {B.shape}"
        )
    return jnp.linalg.solve(A.reshape(rows, cols), B.reshape(rows)).reshape(x_shape)


# -- Householder reflectors: geqrf, householder_product, ormqr ---------------------------------


@defop(differentiable=False, returns=("a", "tau"))
def geqrf(input):
    """``(a, tau)``: LAPACK's geqrf QR factorization, ``R`` on and above the diagonal of ``a`` and the
    Householder vectors (implicit unit first entry) below it, with their scales ``tau``.

    Example::

        >>> a, tau = fjax.geqrf(fjax.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> a
        tensor([[-5.0000, -2.2000],
                [ 0.5000,  0.4000]], dtype=fjax.float32)
        >>> tau
        tensor([1.6000, 0.0000], dtype=fjax.float32)
    """
    _matrix("geqrf", input)
    if input.size == 0:
        return input, jnp.zeros(input.shape[:-2] + (min(input.shape[-2:]),), input.dtype)
    return _jax_compat.lapack_geqrf(input)


def _reflect(A, tau, C, reverse, conjugate):
    """``H_1 H_2 ... H_k C`` (``reverse``: ``H_k ... H_1 C``), ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` the
    i-th column of ``A`` below the diagonal and 1 on it; ``conjugate`` uses ``conj(tau_i)`` (``H_i^H``)."""
    m, k = A.shape[-2], tau.shape[-1]
    V = jnp.tril(A[..., :, :k], -1) + jnp.eye(m, k, dtype=A.dtype)
    tau = jnp.conj(tau) if conjugate else tau

    def apply(step, C):
        i = step if reverse else k - 1 - step  # the product acts on C from its last factor
        v = jax.lax.dynamic_index_in_dim(V, i, axis=-1, keepdims=True)
        t = jax.lax.dynamic_index_in_dim(tau, i, axis=-1, keepdims=True)[..., None]
        return C - t * v * (jnp.conj(v).swapaxes(-1, -2) @ C)

    return jax.lax.fori_loop(0, k, apply, C)


def _reflectors(op, A, tau):
    _matrix(op, A)
    _float(op, tau, "tau")
    _same_dtype(op, A, tau)
    m, n = A.shape[-2:]
    k = tau.shape[-1] if tau.ndim else -1
    if tau.ndim != A.ndim - 1 or k > n or tau.shape[:-1] != A.shape[:-2]:
        raise ValueError(f"{op}: expected tau of shape (*, k) with k <= {n} for A {A.shape}, got {tau.shape}")


@defop(method=False)
def linalg_householder_product(A, tau):
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``, from the Householder vectors
    below the diagonal of ``A`` (``m x n``, ``m >= n``; implicit unit diagonal) and the scales ``tau`` (``k <= n``).

    Example::

        >>> a, tau = fjax.geqrf(fjax.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> fjax.linalg.householder_product(a, tau)
        tensor([[-0.6000, -0.8000],
                [-0.8000,  0.6000]], dtype=fjax.float32)
    """
    _reflectors("linalg.householder_product", A, tau)
    m, n = A.shape[-2:]
    if m < n:
        raise ValueError(f"linalg.householder_product: expected A with at least as many rows as columns, got {A.shape}")
    eye = jnp.broadcast_to(jnp.eye(m, n, dtype=A.dtype), A.shape)
    return _reflect(A, tau, eye, reverse=False, conjugate=False)


@defop(static=("left", "transpose"))
def ormqr(input, input2, input3, left=True, transpose=False):
    """``input3`` multiplied by ``Q = H_1 ... H_k`` from geqrf's ``(input, tau=input2)``: ``Q @ input3``
    (``left``) or ``input3 @ Q``, with ``Q.mH`` in place of ``Q`` when ``transpose``. (torch documents the
    arguments as ``tau`` and ``other`` but takes them by the names ``input2`` and ``input3``.)

    Example::

        >>> a, tau = fjax.geqrf(fjax.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> fjax.ormqr(a, tau, fjax.eye(2))
        tensor([[-0.6000, -0.8000],
                [-0.8000,  0.6000]], dtype=fjax.float32)
    """
    tau, other = input2, input3
    _reflectors("ormqr", input, tau)
    _same_dtype("ormqr", input, other)
    m = input.shape[-2]
    if other.ndim < 2 or other.shape[-2 if left else -1] != m or other.shape[:-2] != input.shape[:-2]:
        side = "rows" if left else "columns"
        raise ValueError(f"ormqr: expected other with {m} {side} and batch {input.shape[:-2]}, got {other.shape}")
    if left:  # Q C = H_1 (... (H_k C));  Q^H C = H_k^H (... (H_1^H C))
        return _reflect(input, tau, other, reverse=transpose, conjugate=transpose)
    # C Q = (Q^H C^H)^H;  C Q^H = (Q C^H)^H
    return _mH(_reflect(input, tau, _mH(other), reverse=not transpose, conjugate=not transpose))


# -- LDL^T / LDL^H with Bunch-Kaufman pivoting (LAPACK sytrf/hetrf, lower storage) --------------------
# ``LD`` holds D's 1x1 and 2x2 diagonal blocks on and just below the diagonal and the multipliers of L
# below them; pivots (int32, 1-based): ``p > 0`` a 1x1 block after swapping rows/columns k and p - 1,
# ``p[k] = p[k + 1] < 0`` a 2x2 block after swapping k + 1 and -p - 1. Earlier columns are not swapped.

_BK_ALPHA = (1 + 17**0.5) / 8  # Bunch-Kaufman's threshold: bounds the growth of the entries of L


def _cabs1(x):
    """LAPACK's cheap modulus for pivot choices: ``|re| + |im|`` (``|x|`` for real)."""
    return jnp.abs(jnp.real(x)) + jnp.abs(jnp.imag(x)) if jnp.iscomplexobj(x) else jnp.abs(x)


def _ldl_one(A, hermitian):
    """``(LD, pivots, info)`` of one ``n x n`` matrix read from its lower triangle."""
    n = A.shape[-1]
    rows = jnp.arange(n)
    adj = jnp.conj if hermitian else (lambda x: x)
    lower = jnp.tril(A, -1)
    diag = jnp.diagonal(A)
    W = lower + adj(lower.T) + jnp.diag(jnp.real(diag).astype(A.dtype) if hermitian else diag)

    def step(state):
        k, W, LD, piv, info = state
        col = jnp.where(rows > k, _cabs1(W[:, k]), -1)
        imax = jnp.argmax(col)
        colmax = jnp.maximum(col[imax], 0)
        akk = W[k, k]
        absakk = jnp.abs(jnp.real(akk)) if hermitian else _cabs1(akk)
        rowmax = jnp.max(jnp.where((rows >= k) & (rows != imax), _cabs1(W[imax]), 0))
        zero = jnp.maximum(absakk, colmax) == 0
        keep = zero | (absakk >= _BK_ALPHA * colmax) | (absakk * rowmax >= _BK_ALPHA * colmax * colmax)
        diag_imax = jnp.abs(jnp.real(W[imax, imax])) if hermitian else _cabs1(W[imax, imax])
        two = ~keep & (diag_imax < _BK_ALPHA * rowmax)
        kp = jnp.where(keep, k, imax).astype(jnp.int32)
        kk = k + two.astype(k.dtype)
        swap = jnp.where(rows == kk, kp, jnp.where(rows == kp, kk, rows))
        W = W[swap][:, swap]
        below1, below2 = rows > k, rows > k + 1
        # a 1x1 block: d = W[k, k], L's column W[k+1:, k] / d, Schur complement W -= c c^H / d
        d = jnp.where(zero, 1, W[k, k])
        c = jnp.where(below1, W[:, k], 0)
        W1 = W - jnp.outer(c, adj(c)) / d * (below1[:, None] & below1[None, :])
        col1 = jnp.where(rows == k, W[k, k], jnp.where(below1, c / d, 0))
        LD1 = LD.at[:, k].set(jnp.where(zero, jnp.where(rows >= k, W[:, k], 0), col1))
        # a 2x2 block D = [[a, b^H], [b, e]] at rows k, k+1: L's columns C D^-1, W -= C D^-1 C^H
        k1 = jnp.minimum(k + 1, n - 1)
        a, b, e = W[k, k], W[k1, k], W[k1, k1]
        det = a * e - adj(b) * b
        C = jnp.where(below2[:, None], jnp.stack([W[:, k], W[:, k1]], axis=1), 0)
        L2 = jnp.stack([(C[:, 0] * e - C[:, 1] * b) / det, (C[:, 1] * a - C[:, 0] * adj(b)) / det], axis=1)
        W2 = W - (L2 @ adj(C.T)) * (below2[:, None] & below2[None, :])
        LD2 = LD.at[:, k].set(jnp.where(rows == k, a, jnp.where(rows == k1, b, jnp.where(below2, L2[:, 0], 0))))
        LD2 = LD2.at[:, k1].set(jnp.where(rows == k1, e, jnp.where(below2, L2[:, 1], 0)))
        piv1 = piv.at[k].set(kp + 1)
        piv2 = piv.at[k].set(-(kp + 1)).at[k1].set(-(kp + 1))
        info = jnp.where((info == 0) & zero, k + 1, info)
        pick = lambda x2, x1: jnp.where(two, x2, x1)  # noqa: E731
        return k + 1 + two.astype(k.dtype), pick(W2, W1), pick(LD2, LD1), pick(piv2, piv1), info

    start = (jnp.int32(0), W, jnp.zeros_like(A), jnp.zeros(n, jnp.int32), jnp.int32(0))
    _, _, LD, piv, info = jax.lax.while_loop(lambda state: state[0] < n, step, start)
    return LD, piv, info


def _ldl(op, A, hermitian):
    _matrix(op, A, square=True)
    n = A.shape[-1]
    batch = A.shape[:-2]
    if A.size == 0:
        return A, jnp.zeros(batch + (n,), jnp.int32), jnp.zeros(batch, jnp.int32)
    flat = A.reshape((-1, n, n))
    LD, piv, info = jax.vmap(functools.partial(_ldl_one, hermitian=hermitian))(flat)
    return LD.reshape(A.shape), piv.reshape(batch + (n,)), info.reshape(batch)


_ldl_info = jax.jit(lambda A, hermitian: _ldl("linalg.ldl_factor", A, hermitian)[2], static_argnums=1)


def _check_ldl_ex(A, *, hermitian=False, check_errors=False):
    _check_ldl(A, hermitian=hermitian, check_errors=check_errors)


def _check_ldl(A, *, hermitian=False, check_errors=True):
    if not check_errors or not _eager_matrix(A):
        return
    found = _first_bad(np.asarray(_ldl_info(A, hermitian)).reshape(-1, 1) > 0)
    if found is not None:
        where = _batch(A, found[0])
        raise LinAlgError(f"linalg.ldl_factor: {where}The factorization could not be completed: D is singular.")


@defop(static=("hermitian",), method=False, differentiable=False, check=_check_ldl, returns=("LD", "pivots"))
def linalg_ldl_factor(A, *, hermitian=False):
    """``(LD, pivots)``: the compact ``A = L D L^T`` (``L D L^H`` when ``hermitian``) factorization of a symmetric
    (Hermitian) matrix read from its lower triangle, with Bunch-Kaufman pivoting and D of 1x1 and 2x2 blocks,
    in LAPACK sytrf's format (``LD``'s upper triangle is zero).

    Example::

        >>> fjax.linalg.ldl_factor(fjax.tensor([[4.0, 2.0], [2.0, 3.0]])).LD
        tensor([[4.0000, 0.0000],
                [0.5000, 2.0000]], dtype=fjax.float32)
    """
    LD, pivots, _ = _ldl("linalg.ldl_factor", A, hermitian)
    return LD, pivots


@defop(
    static=("hermitian", "check_errors"),
    method=False,
    differentiable=False,
    check=_check_ldl_ex,
    returns=("LD", "pivots", "info"),
)
def linalg_ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """``linalg.ldl_factor`` plus ``info`` (int32, per matrix): 0, or the 1-based index of the first exactly zero
    diagonal block of D. ``check_errors=True`` raises for a singular D.

    Example::

        >>> fjax.linalg.ldl_factor_ex(fjax.tensor([[0.0, 0.0], [0.0, 1.0]])).info
        tensor(1, dtype=fjax.int32)
    """
    return _ldl("linalg.ldl_factor_ex", A, hermitian)


def _ldl_solve_one(LD, piv, B, hermitian):
    n = LD.shape[-1]
    rows = jnp.arange(n)
    adj = jnp.conj if hermitian else (lambda x: x)

    def swap_rows(B, i, j):
        order = jnp.where(rows == i, j, jnp.where(rows == j, i, rows))
        return B[order]

    def forward(state):  # L D Y = P^T B, one (block) column of L at a time
        k, B = state
        two = piv[k] < 0
        k1 = jnp.minimum(k + 1, n - 1)
        B = swap_rows(B, jnp.where(two, k1, k), jnp.where(two, -piv[k], piv[k]) - 1)
        below1, below2 = rows > k, rows > k + 1
        B1 = B - jnp.where(below1, LD[:, k], 0)[:, None] * B[k][None, :]
        B1 = B1.at[k].set(B1[k] / (jnp.real(LD[k, k]).astype(LD.dtype) if hermitian else LD[k, k]))
        B2 = B - jnp.where(below2, LD[:, k], 0)[:, None] * B[k][None, :]
        B2 = B2 - jnp.where(below2, LD[:, k1], 0)[:, None] * B[k1][None, :]
        a, b, e = LD[k, k], LD[k1, k], LD[k1, k1]
        det = a * e - adj(b) * b
        x0, x1 = B2[k], B2[k1]
        B2 = B2.at[k].set((e * x0 - adj(b) * x1) / det).at[k1].set((a * x1 - b * x0) / det)
        return k + 1 + two.astype(k.dtype), jnp.where(two, B2, B1)

    def backward(state):  # L^T X = Y (L^H when hermitian), undoing the swaps in reverse
        k, B = state
        two = (piv[k] < 0) & (k > 0)
        k0 = jnp.maximum(k - 1, 0)
        below = rows > k
        Lk = jnp.where(below, adj(LD[:, k]), 0)
        Lk0 = jnp.where(below, adj(LD[:, k0]), 0)
        B = B.at[k].add(-(Lk @ B))
        B = jnp.where(two, B.at[k0].add(-(Lk0 @ B)), B)
        B = swap_rows(B, k, jnp.where(piv[k] < 0, -piv[k], piv[k]) - 1)
        return k - 1 - two.astype(k.dtype), B

    _, B = jax.lax.while_loop(lambda s: s[0] < n, forward, (jnp.int32(0), B))
    _, B = jax.lax.while_loop(lambda s: s[0] >= 0, backward, (jnp.int32(n - 1), B))
    return B


@defop(static=("hermitian",), method=False, differentiable=False)
def linalg_ldl_solve(LD, pivots, B, *, hermitian=False):
    """The solution ``X`` of ``A @ X = B`` for ``A`` given by ``linalg.ldl_factor``'s ``(LD, pivots)`` (same
    ``hermitian``). Batch dims broadcast.

    Example::

        >>> LD, pivots = fjax.linalg.ldl_factor(fjax.tensor([[4.0, 2.0], [2.0, 3.0]]))
        >>> fjax.linalg.ldl_solve(LD, pivots, fjax.tensor([[6.0], [5.0]]))
        tensor([[1.],
                [1.]], dtype=fjax.float32)
    """
    _matrix("linalg.ldl_solve", LD, square=True)
    _float("linalg.ldl_solve", B, "B")
    _same_dtype("linalg.ldl_solve", LD, B)
    _check_pivots("linalg.ldl_solve", LD, pivots)
    n = LD.shape[-1]
    if B.ndim < 2 or B.shape[-2] != n:
        raise ValueError(f"linalg.ldl_solve: B {B.shape} must have as many rows as LD {LD.shape}")
    batch = _broadcast("linalg.ldl_solve", LD.shape[:-2], pivots.shape[:-1], B.shape[:-2])
    if n == 0 or B.size == 0 or 0 in batch:
        return jnp.zeros(batch + B.shape[-2:], B.dtype)
    LD = jnp.broadcast_to(LD, batch + LD.shape[-2:]).reshape((-1, n, n))
    pivots = jnp.broadcast_to(pivots, batch + (n,)).reshape((-1, n)).astype(jnp.int32)
    X = jnp.broadcast_to(B, batch + B.shape[-2:]).reshape((-1,) + B.shape[-2:])
    X = jax.vmap(functools.partial(_ldl_solve_one, hermitian=hermitian))(LD, pivots, X)
    return X.reshape(batch + B.shape[-2:])


# -- decompositions ---------------------------------------------------------------------------


@defop(static=("UPLO",), method=False, returns=("eigenvalues", "eigenvectors"))
def linalg_eigh(A, UPLO="L"):
    """Eigenvalues (ascending, real) and eigenvectors (columns) of Hermitian matrices, read from the
    ``UPLO`` triangle of ``A``. Eigenvectors are unique only up to sign (phase).

    Example::

        >>> fjax.linalg.eigh(fjax.tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
        tensor([1., 2.], dtype=fjax.float32)
    """
    _matrix("linalg.eigh", A, square=True)
    w, v = jnp.linalg.eigh(_hermitian_from(A, UPLO), symmetrize_input=False)
    return w, v


@defop(static=("UPLO",), method=False)
def linalg_eigvalsh(A, UPLO="L"):
    """The eigenvalues, ascending, of Hermitian matrices read from the ``UPLO`` triangle of ``A``.

    Example::

        >>> fjax.linalg.eigvalsh(fjax.tensor([[2.0, 1.0], [1.0, 2.0]]))
        tensor([1., 3.], dtype=fjax.float32)
    """
    _matrix("linalg.eigvalsh", A, square=True)
    return jnp.linalg.eigvalsh(_hermitian_from(A, UPLO), symmetrize_input=False)


@defop(static=("full_matrices", "driver"), method=False, returns=("U", "S", "Vh"))
def linalg_svd(A, full_matrices=True, *, driver=None):
    """``A = U @ diag(S) @ Vh`` for each matrix, singular values descending; ``full_matrices=False`` gives
    the reduced factors. ``U`` and ``Vh`` are unique only up to sign (phase) of paired columns/rows.

    Example::

        >>> out = fjax.linalg.svd(fjax.tensor([[3.0, 0.0], [0.0, -4.0]]))
        >>> out.S
        tensor([4., 3.], dtype=fjax.float32)
    """
    _no_driver("linalg.svd", driver)
    _matrix("linalg.svd", A)
    if A.shape[-1] == A.shape[-2]:
        full_matrices = False  # the same factors; JAX differentiates only the reduced form
    U, S, Vh = jnp.linalg.svd(A, full_matrices=full_matrices)
    return U, S, Vh


@defop(static=("driver",), method=False)
def linalg_svdvals(A, *, driver=None):
    """The singular values of each matrix, descending.

    Example::

        >>> fjax.linalg.svdvals(fjax.tensor([[3.0, 0.0], [0.0, -4.0]]))
        tensor([4., 3.], dtype=fjax.float32)
    """
    _no_driver("linalg.svdvals", driver)
    _matrix("linalg.svdvals", A)
    return jnp.linalg.svd(A, compute_uv=False)


@defop(static=("mode",), method=False, returns=("Q", "R"))
def linalg_qr(A, mode="reduced"):
    """``A = Q @ R`` with orthonormal columns in ``Q`` and upper-triangular ``R``; ``mode`` is ``'reduced'``,
    ``'complete'`` (square ``Q``) or ``'r'`` (``R`` only, ``Q`` empty).

    Example::

        >>> Q, R = fjax.linalg.qr(fjax.tensor([[2.0, 0.0], [0.0, 3.0]]))
        >>> (Q @ R).abs()
        tensor([[2., 0.],
                [0., 3.]], dtype=fjax.float32)
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    _matrix("linalg.qr", A)
    if mode == "r":
        return jnp.zeros((0,), A.dtype), jnp.linalg.qr(A, mode="r")
    Q, R = jnp.linalg.qr(A, mode=mode)
    return Q, R


@defop(static=("upper",), method=False, check=_check_positive_definite)
def linalg_cholesky(A, *, upper=False):
    """The Cholesky factor ``L`` (``A = L @ L.mH``) of Hermitian positive-definite matrices, read from
    the lower triangle of ``A``; ``upper=True`` gives ``L.mH``. A matrix not positive-definite raises.

    Example::

        >>> fjax.linalg.cholesky(fjax.tensor([[4.0, 2.0], [2.0, 2.0]]))
        tensor([[2., 0.],
                [1., 1.]], dtype=fjax.float32)
    """
    _matrix("linalg.cholesky", A, square=True)
    L = jnp.linalg.cholesky(_hermitian_from(A, "U" if upper else "L"))
    return _mH(L) if upper else L


_LSTSQ_DRIVERS = (None, "gelsy", "gelsd", "gelss", "gels")


@defop(static=("driver",), method=False, returns=("solution", "residuals", "rank", "singular_values"))
def linalg_lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A @ X = B`` (SVD-based; minimum norm where ``A`` is rank-deficient).
    As torch's CPU drivers: ``residuals`` (m > n, not gelsy), ``rank`` (not gels), ``singular_values``
    (gelsd/gelss); the others are empty.

    Example::

        >>> A = fjax.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> fjax.linalg.lstsq(A, fjax.tensor([[1.0], [2.0], [3.0]])).solution
        tensor([[1.],
                [2.]], dtype=fjax.float32)
    """
    _no_driver("linalg.lstsq", driver, _LSTSQ_DRIVERS)
    _matrix("linalg.lstsq", A)
    _float("linalg.lstsq", B, "B")
    _same_dtype("linalg.lstsq", A, B)
    vector = B.ndim == A.ndim - 1
    if vector:
        B = B[..., None]
    m, n = A.shape[-2:]
    if B.ndim < 2 or B.shape[-2] != m:
        raise ValueError(f"linalg.lstsq: A {A.shape} and B {B.shape} do not have the same number of rows")
    batch = _broadcast("linalg.lstsq", A.shape[:-2], B.shape[:-2])
    A = jnp.broadcast_to(A, batch + A.shape[-2:])
    B = jnp.broadcast_to(B, batch + B.shape[-2:])
    real = jnp.finfo(A.dtype).dtype
    if rcond is None:
        rcond = jnp.finfo(A.dtype).eps * max(m, n)
    S = jnp.linalg.svd(A, compute_uv=False)
    smax = S[..., :1] if min(m, n) else jnp.zeros(batch + (1,), real)
    X = jnp.linalg.pinv(A, rtol=jnp.asarray(rcond, real)) @ B
    rank = jnp.sum(S > rcond * smax, -1).astype(jnp.int64)
    empty_f = jnp.zeros((0,), real)
    residuals = empty_f
    if m > n and driver in ("gelsd", "gelss", "gels"):
        residuals = jnp.sum(jnp.abs(A @ X - B) ** 2, -2)
        if vector:
            residuals = residuals[..., 0]
    if vector:
        X = X[..., 0]
    if driver == "gels":
        rank = jnp.zeros((0,), jnp.int64)
    S = jax.lax.stop_gradient(S) if driver in ("gelsd", "gelss") else empty_f  # torch: not differentiable
    return X, residuals, rank, S


def _tolerance(op, A, S, atol, rtol):
    """torch's cutoff for small singular values: ``max(atol, rtol * S.max())``; with neither given, rtol is
    ``eps * max(m, n)``; with only atol, rtol is 0."""
    real = S.dtype
    if rtol is None:
        rtol = jnp.finfo(real).eps * max(A.shape[-2:]) if atol is None else 0.0
    smax = jnp.max(S, -1, keepdims=True, initial=0.0)
    cut = jnp.asarray(rtol, real)[..., None] * smax if jnp.ndim(rtol) else rtol * smax
    if atol is not None:
        cut = jnp.maximum(jnp.asarray(atol, real)[..., None] if jnp.ndim(atol) else atol, cut)
    return cut


@defop(static=("hermitian",), method=False)
def linalg_pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse, from the singular values above ``max(atol, rtol * largest)``
    (``hermitian=True``: from ``eigh`` of the lower triangle).

    Example::

        >>> fjax.linalg.pinv(fjax.tensor([[2.0, 0.0], [0.0, 0.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.0000]], dtype=fjax.float32)
    """
    _matrix("linalg.pinv", A, square=hermitian)
    if atol is None and (rtol is None or jnp.ndim(rtol) == 0):
        r = None if rtol is None else jnp.asarray(rtol, jnp.finfo(A.dtype).dtype)
        if hermitian:  # the SVD of the Hermitian matrix: the general derivative, as torch's
            return jnp.linalg.pinv(_hermitian_from(A, "L", symmetrize=False), rtol=r)
        return jnp.linalg.pinv(A, rtol=r)
    if hermitian:
        w, V = jnp.linalg.eigh(_hermitian_from(A, "L"), symmetrize_input=False)
        cut = _tolerance("linalg.pinv", A, jnp.abs(w), atol, rtol)
        inv = jnp.where(jnp.abs(w) > cut, 1 / jnp.where(w == 0, 1, w), 0).astype(A.dtype)
        return (V * inv[..., None, :]) @ _mH(V)
    U, S, Vh = jnp.linalg.svd(A, full_matrices=False)
    cut = _tolerance("linalg.pinv", A, S, atol, rtol)
    inv = jnp.where(S > cut, 1 / jnp.where(S == 0, 1, S), 0).astype(A.dtype)
    return (_mH(Vh) * inv[..., None, :]) @ _mH(U)


@defop(static=("hermitian",), method=False, differentiable=False)
def linalg_matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values above ``max(atol, rtol * largest)`` (int64, per matrix).

    Example::

        >>> fjax.linalg.matrix_rank(fjax.tensor([[1.0, 2.0], [2.0, 4.0]]))
        tensor(1, dtype=fjax.int64)
    """
    _matrix("linalg.matrix_rank", A, square=hermitian)
    if hermitian:
        S = jnp.abs(jnp.linalg.eigvalsh(_hermitian_from(A, "L"), symmetrize_input=False))
    else:
        S = jnp.linalg.svd(A, compute_uv=False)
    return jnp.sum(S > _tolerance("linalg.matrix_rank", A, S, atol, rtol), -1).astype(jnp.int64)


@defop(static=("dim",), method=False)
def linalg_vecdot(x, y, *, dim=-1):
    """The dot product ``sum(x.conj() * y)`` of the vectors along ``dim``, the inputs broadcast together.

    Example::

        >>> fjax.linalg.vecdot(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]), fjax.tensor([1.0, 1.0]))
        tensor([3., 7.], dtype=fjax.float32)
    """
    _same_dtype("linalg.vecdot", x, y)
    shape = _broadcast("linalg.vecdot", x.shape, y.shape)
    if not -len(shape) <= dim < max(len(shape), 1) or not shape:
        raise ValueError(f"linalg.vecdot: dim {dim} is out of range for shapes {x.shape} and {y.shape}")
    return jnp.sum(jnp.conj(x) * y, axis=dim)


# -- torch.* legacy linear algebra and the rest of torch.linalg ---------------------------------


def _bcast_batch(a, b):
    """``a`` and ``b`` with their batch dims (all but the last two) broadcast together."""
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:])


def _tri_solve(A, B, *, lower, left=True, trans=False, unit=False):
    """``op(A) X = B`` (``left``) or ``X op(A) = B`` for triangular ``A``; ``op`` transposes when ``trans``."""
    A, B = promote(A, B)
    A, B = _bcast_batch(A, B)
    return jax.lax.linalg.triangular_solve(
        A, B, left_side=left, lower=lower, transpose_a=trans, conjugate_a=False, unit_diagonal=unit
    )


@defop()
def logdet(input):
    """The log of the determinant of each square matrix: NaN for a negative determinant of a real
    matrix, ``-inf`` for a singular one.

    Example::

        >>> fjax.logdet(fjax.tensor([[2.0, 0.0], [0.0, 3.0]]))
        tensor(1.7918, dtype=fjax.float32)
    """
    _matrix("logdet", input, square=True)
    sign, logabs = jnp.linalg.slogdet(input)
    if jnp.issubdtype(input.dtype, jnp.complexfloating):
        return jnp.log(sign) + logabs.astype(input.dtype)
    return jnp.where(sign < 0, jnp.asarray(jnp.nan, logabs.dtype), logabs)


@defop()
def pinverse(input, rcond=1e-15):
    """The Moore-Penrose pseudo-inverse, singular values below ``rcond`` times the largest dropped
    (``fjax.linalg.pinv`` with ``rtol=rcond``).

    Example::

        >>> fjax.pinverse(fjax.tensor([[2.0, 0.0], [0.0, 0.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.0000]], dtype=fjax.float32)
    """
    return linalg_pinv(input, rtol=rcond)


@defop(static=("some",), returns=("Q", "R"))
def qr(input, some=True):
    """``input = Q @ R`` (``fjax.linalg.qr``): the reduced factors when ``some``, else the complete ones.

    Example::

        >>> Q, R = fjax.qr(fjax.tensor([[2.0, 0.0], [0.0, 3.0]]))
        >>> (Q @ R).abs()
        tensor([[2., 0.],
                [0., 3.]], dtype=fjax.float32)
    """
    return linalg_qr(input, "reduced" if some else "complete")


@defop(static=("some", "compute_uv"), returns=("U", "S", "V"))
def svd(input, some=True, compute_uv=True):
    """``input = U @ diag(S) @ V.mH`` (torch's legacy ``svd``: ``V``, not ``Vh``); ``some=False`` gives the
    complete factors; ``compute_uv=False`` gives zero-filled ``U`` (m x m) and ``V`` (n x n).

    Example::

        >>> fjax.svd(fjax.tensor([[3.0, 0.0], [0.0, -4.0]])).S
        tensor([4., 3.], dtype=fjax.float32)
    """
    _matrix("svd", input)
    m, n = input.shape[-2:]
    if not compute_uv:
        S = jnp.linalg.svd(input, compute_uv=False)
        batch = input.shape[:-2]
        return jnp.zeros(batch + (m, m), input.dtype), S, jnp.zeros(batch + (n, n), input.dtype)
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return U, S, _mH(Vh)


@defop(static=("upper",), check=_check_positive_definite)
def cholesky(input, upper=False):
    """The Cholesky factor of Hermitian positive-definite matrices (``fjax.linalg.cholesky``): lower
    triangular ``L`` with ``input = L @ L.mH``, or ``U = L.mH`` when ``upper``.

    Example::

        >>> fjax.cholesky(fjax.tensor([[4.0, 2.0], [2.0, 2.0]]))
        tensor([[2., 0.],
                [1., 1.]], dtype=fjax.float32)
    """
    return linalg_cholesky(input, upper=upper)


@defop(static=("upper",), method=False)
def cholesky_solve(B, L, upper=False):
    """The solution ``X`` of ``A @ X = B`` given the Cholesky factor of ``A``: lower ``L`` (``A = L @ L.mH``)
    or, when ``upper``, ``U`` (``A = U.mH @ U``). Batch dims broadcast.

    Example::

        >>> L = fjax.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> fjax.cholesky_solve(fjax.tensor([[4.0], [2.0]]), L)
        tensor([[1.],
                [0.]], dtype=fjax.float32)
    """
    _matrix("cholesky_solve", B)
    _matrix("cholesky_solve", L, square=True)
    L, B = promote(L, B)
    L, B = _bcast_batch(L, B)
    return _cholesky_solve(B, L, upper)


def _cholesky_solve_fwd_only(B, L, upper):
    if upper:
        L = _mH(L)
    Y = _tri_solve(L, B, lower=True)
    return _tri_solve(_mH(L), Y, lower=False)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _cholesky_solve(B, L, upper):
    """The solve reads one triangle of ``L``; its gradient is torch's, ``-(G X^H + X G^H) L`` with the
    whole ``L`` (``G`` the solve of the incoming gradient), as if ``A = L @ L.mH`` of the full matrix."""
    return _cholesky_solve_fwd_only(B, L, upper)


def _cholesky_solve_fwd(B, L, upper):
    X = _cholesky_solve_fwd_only(B, L, upper)
    return X, (L, X)


def _cholesky_solve_bwd(upper, res, g):
    L, X = res
    G = _cholesky_solve_fwd_only(g, L, upper)
    common = G @ _mH(X) + X @ _mH(G)
    return G, -(L @ common if upper else common @ L)


_cholesky_solve.defvjp(_cholesky_solve_fwd, _cholesky_solve_bwd)


@defop(static=("upper",))
def cholesky_inverse(L, upper=False):
    """The inverse of ``A`` given its Cholesky factor: lower ``L`` (``A = L @ L.mH``) or, when ``upper``,
    ``U`` (``A = U.mH @ U``).

    Example::

        >>> fjax.cholesky_inverse(fjax.tensor([[2.0, 0.0], [0.0, 1.0]]))
        tensor([[0.2500, 0.0000],
                [0.0000, 1.0000]], dtype=fjax.float32)
    """
    _matrix("cholesky_inverse", L, square=True)
    eye = jnp.broadcast_to(jnp.eye(L.shape[-1], dtype=L.dtype), L.shape)
    return cholesky_solve(eye, L, upper)


@defop(static=("upper", "transpose", "unitriangular"), returns=("solution", "cloned_coefficient"))
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """``(X, A)`` with ``X`` solving ``A @ X = b`` (``A.mT @ X = b`` when ``transpose``) for triangular ``A``,
    read from its ``upper`` or lower triangle (a unit diagonal assumed when ``unitriangular``).

    Example::

        >>> A = fjax.tensor([[2.0, 1.0], [0.0, 1.0]])
        >>> fjax.triangular_solve(fjax.tensor([[3.0], [1.0]]), A).solution
        tensor([[1.],
                [1.]], dtype=fjax.float32)
    """
    _matrix("triangular_solve", A, square=True)
    _matrix("triangular_solve", b)
    tri = jnp.triu(A) if upper else jnp.tril(A)
    X = _tri_solve(tri, b, lower=not upper, trans=transpose, unit=unitriangular)
    coef = jnp.broadcast_to(A, X.shape[:-2] + A.shape[-2:])
    return X, coef


@defop(static=("upper", "left", "unitriangular"), method=False)
def linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """The solution ``X`` of ``A @ X = B`` (``X @ A = B`` when not ``left``) for triangular ``A``, read from
    its ``upper`` or lower triangle (a unit diagonal assumed when ``unitriangular``). Batch dims broadcast.

    Example::

        >>> A = fjax.tensor([[2.0, 1.0], [0.0, 1.0]])
        >>> fjax.linalg.solve_triangular(A, fjax.tensor([[3.0], [1.0]]), upper=True)
        tensor([[1.],
                [1.]], dtype=fjax.float32)
    """
    _matrix("linalg.solve_triangular", A, square=True)
    _matrix("linalg.solve_triangular", B)
    tri = jnp.triu(A) if upper else jnp.tril(A)
    return _tri_solve(tri, B, lower=not upper, left=left, unit=unitriangular)


@defop(static=("upper", "check_errors"), method=False, returns=("L", "info"))
def linalg_cholesky_ex(A, *, upper=False, check_errors=False):
    """``(L, info)``: the Cholesky factor (``fjax.linalg.cholesky``) and, per matrix, 0 on success or the
    (1-based) order of a leading minor that is not positive-definite. Raises only when ``check_errors``.

    Example::

        >>> fjax.linalg.cholesky_ex(fjax.tensor([[4.0, 2.0], [2.0, 2.0]])).info
        tensor(0, dtype=fjax.int32)
    """
    _matrix("linalg.cholesky_ex", A, square=True)
    if check_errors:
        _check_positive_definite(A, upper=upper)
    L = jnp.linalg.cholesky(_hermitian_from(A, "U" if upper else "L"))
    bad = jnp.isnan(jnp.real(jnp.diagonal(L, axis1=-2, axis2=-1)))
    if A.shape[-1] == 0:
        info = jnp.zeros(A.shape[:-2], jnp.int32)
    else:
        info = jnp.where(bad.any(-1), jnp.argmax(bad, -1) + 1, 0).astype(jnp.int32)
    return (_mH(L) if upper else L), info


@defop(static=("n",), method=False)
def linalg_matrix_power(A, n):
    """``A`` multiplied by itself ``n`` times (``fjax.matrix_power``): the identity for 0, the inverse's
    power for a negative ``n``.

    Example::

        >>> fjax.linalg.matrix_power(fjax.tensor([[1.0, 1.0], [0.0, 1.0]]), 2)
        tensor([[1., 2.],
                [0., 1.]], dtype=fjax.float32)
    """
    return matrix_power(A, n)


def _complex_of(x):
    return jnp.complex128 if x.dtype in (jnp.float64, jnp.complex128) else jnp.complex64


@defop(method=False, returns=("eigenvalues", "eigenvectors"))
def linalg_eig(A):
    """Eigenvalues and (unit-norm, column) eigenvectors of general square matrices, complex even for a
    real input (LAPACK geev, as torch's CPU kernel). Eigenvectors are unique only up to a phase.

    Example::

        >>> fjax.linalg.eig(fjax.tensor([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
        tensor([2.+0.j, 3.+0.j], dtype=fjax.complex64)
    """
    _matrix("linalg.eig", A, square=True)
    if A.shape[-1] == 0:
        return jnp.zeros(A.shape[:-1], _complex_of(A)), jnp.zeros(A.shape, _complex_of(A))
    w, v = jax.lax.linalg.eig(A, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w.astype(_complex_of(A)), v.astype(_complex_of(A))


@defop(method=False)
def linalg_eigvals(A):
    """The eigenvalues of general square matrices, complex even for a real input.

    Example::

        >>> fjax.linalg.eigvals(fjax.tensor([[2.0, 0.0], [0.0, 3.0]]))
        tensor([2.+0.j, 3.+0.j], dtype=fjax.complex64)
    """
    _matrix("linalg.eigvals", A, square=True)
    if A.shape[-1] == 0:
        return jnp.zeros(A.shape[:-1], _complex_of(A))
    return jnp.linalg.eigvals(A).astype(_complex_of(A))


@defop(static=("p",), method=False)
def linalg_cond(A, p=None):
    """The condition number of each matrix in the norm ``p``: for None/2/-2 the ratio of the largest and
    smallest singular values (inverted for -2), else ``norm(A, p) * norm(inv(A), p)``.

    Example::

        >>> fjax.linalg.cond(fjax.tensor([[2.0, 0.0], [0.0, 0.5]]))
        tensor(4., dtype=fjax.float32)
    """
    _matrix("linalg.cond", A, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        S = jnp.linalg.svd(A, compute_uv=False)
        out = S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
        return out
    return linalg_matrix_norm(A, p) * linalg_matrix_norm(jnp.linalg.inv(A), p)


@defop(static=("N",), method=False)
def linalg_vander(x, N=None):
    """The Vandermonde matrix of ``x`` along a new last dim: ``x ** 0, x ** 1, ..., x ** (N - 1)``
    (``N`` defaults to ``x``'s last dim).

    Example::

        >>> fjax.linalg.vander(fjax.tensor([1.0, 2.0, 3.0]))
        tensor([[1., 1., 1.],
                [1., 2., 4.],
                [1., 3., 9.]], dtype=fjax.float32)
    """
    x = x.reshape(1) if x.ndim == 0 else x  # torch: a 0-d x is one point
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise ValueError(f"linalg.vander: N must be greater than 1, got {n}")
    x = x.astype(jnp.int64) if x.dtype == jnp.bool_ else x
    rep = jnp.broadcast_to(x[..., None], x.shape + (n - 1,))
    return jnp.concatenate([jnp.ones(x.shape + (1,), x.dtype), jnp.cumprod(rep, axis=-1)], axis=-1)


@defop()
def matrix_exp(A):
    """The matrix exponential ``sum_k A^k / k!`` of each square matrix.

    Example::

        >>> fjax.matrix_exp(fjax.tensor([[0.0, 0.0], [0.0, 1.0]]))
        tensor([[1.0000, 0.0000],
                [0.0000, 2.7183]], dtype=fjax.float32)
    """
    _matrix("matrix_exp", A, square=True)
    import jax.scipy.linalg as jsl

    if A.dtype == jnp.float32 and jax.config.jax_enable_x64:  # JAX's float32 Pade is ~1e-3 off at large norms
        return jsl.expm(A.astype(jnp.float64)).astype(A.dtype)
    return jsl.expm(A)
