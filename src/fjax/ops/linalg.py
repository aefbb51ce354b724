"""Products, contractions and matrix functions with torch's signatures and shape rules."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._promote import promote
from ._registry import defop


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


@defop()
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


@defop()
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


@defop(method=False)
def linear(input, weight, bias=None):
    """The affine map of a linear layer: ``input @ weight.T + bias``, with ``weight`` of shape
    ``(out_features, in_features)`` (or ``(in_features,)``) and ``input`` of shape ``(..., in_features)``;
    the optional ``bias`` broadcasts over the output.

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
    if any(a.shape[i] != b.shape[j] for i, j in zip(*pairs)) or len(pairs[0]) != len(pairs[1]):
        raise ValueError(f"tensordot: cannot contract dims {dims} of shapes {a.shape} and {b.shape}")
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
    return jnp.linalg.det(input)


@defop()
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
