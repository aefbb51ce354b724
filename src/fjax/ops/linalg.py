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
    """Matrix product with torch's rules for 1-D operands and broadcast batch dims.

    Example: ``matmul((10, 1, 3, 4), (5, 4, 2)) -> (10, 5, 3, 2)``.
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
    """Product of two matrices."""
    _same_dtype("mm", input, mat2)
    _ndim("mm", input, (2,))
    _ndim("mm", mat2, (2,), "mat2")
    _contract("mm", input, mat2, 1, 0)
    return jnp.matmul(input, mat2)


@defop()
def bmm(input, mat2):
    """Batched product of ``(b, n, m)`` and ``(b, m, p)``."""
    _same_dtype("bmm", input, mat2)
    _ndim("bmm", input, (3,))
    _ndim("bmm", mat2, (3,), "mat2")
    if input.shape[0] != mat2.shape[0]:
        raise ValueError(f"bmm: batch sizes differ: {input.shape} and {mat2.shape}")
    _contract("bmm", input, mat2, 2, 1)
    return jnp.matmul(input, mat2)


@defop()
def mv(input, vec):
    """Product of a matrix and a vector."""
    _same_dtype("mv", input, vec)
    _ndim("mv", input, (2,))
    _ndim("mv", vec, (1,), "vec")
    _contract("mv", input, vec, 1, 0)
    return jnp.matmul(input, vec)


@defop()
def dot(input, tensor):
    """Inner product of two 1-D tensors of the same length."""
    _same_dtype("dot", input, tensor)
    _ndim("dot", input, (1,))
    _ndim("dot", tensor, (1,), "tensor")
    _contract("dot", input, tensor, 0, 0)
    return jnp.dot(input, tensor)


@defop()
def vdot(input, other):
    """``dot(conj(input), other)`` of two 1-D tensors."""
    _same_dtype("vdot", input, other)
    _ndim("vdot", input, (1,))
    _ndim("vdot", other, (1,), "other")
    _contract("vdot", input, other, 0, 0)
    return jnp.vdot(input, other)


@defop()
def inner(input, other):
    """Sum over the last dims of both; a 0-d operand multiplies."""
    if input.ndim == 0 or other.ndim == 0:
        input, other = promote(input, other)
        return input * other
    _same_dtype("inner", input, other)
    _contract("inner", input, other, -1, -1)
    return jnp.inner(input, other)


@defop()
def outer(input, vec2):
    """Outer product of two 1-D tensors, ``(n,) x (m,) -> (n, m)``."""
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
    """``input @ weight.T + bias`` (torch.nn.functional.linear); ``weight`` is ``(out, in)`` or ``(in,)``."""
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
    """``beta * input + alpha * (mat1 @ mat2)``."""
    _same_dtype("addmm", input, mat1, mat2)
    return _scaled_add("addmm", input, mm(mat1, mat2), beta, alpha)


@defop()
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    _same_dtype("addmv", input, mat, vec)
    return _scaled_add("addmv", input, mv(mat, vec), beta, alpha)


@defop()
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    _same_dtype("addr", input, vec1, vec2)
    return _scaled_add("addr", input, outer(vec1, vec2), beta, alpha)


@defop()
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    _same_dtype("baddbmm", input, batch1, batch2)
    return _scaled_add("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@defop()
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    _same_dtype("addbmm", input, batch1, batch2)
    return _scaled_add("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha)


@defop(method=False)
def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1 @ weight[o] @ input2 + bias[o]`` (torch.nn.functional.bilinear)."""
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
    """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3, as torch)."""
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
    """Sum of the main diagonal of a matrix."""
    _ndim("trace", input, (2,))
    return jnp.trace(input)


@defop(static=("diagonal",), linear=True)
def diag(input, diagonal=0):
    """A 1-D tensor becomes a diagonal matrix; a matrix gives its ``diagonal``-th diagonal."""
    _ndim("diag", input, (1, 2))
    return jnp.diag(input, k=diagonal)


@defop(static=("offset", "dim1", "dim2"), linear=True)
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the ``(dim1, dim2)`` planes, appended as the last dim."""
    return jnp.diagonal(input, offset=offset, axis1=dim1, axis2=dim2)


@defop(static=("dims",))
def tensordot(a, b, dims=2):
    """Contract the last ``dims`` dims of ``a`` with the first of ``b``, or the listed pairs."""
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
    """Kronecker product."""
    input, other = promote(input, other)
    return jnp.kron(input, other)


def _square(op, x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: expected a (batch of) square matrices, got shape {x.shape}")
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise TypeError(f"{op}: expected a floating point tensor, got {x.dtype}")


@defop()
def det(input):
    """Determinant of a (batch of) square matrices."""
    _square("det", input)
    return jnp.linalg.det(input)


@defop()
def inverse(input):
    """Inverse of a (batch of) square matrices (torch.linalg.inv)."""
    _square("inverse", input)
    return jnp.linalg.inv(input)


@defop(static=("n",))
def matrix_power(input, n):
    """``input`` multiplied by itself ``n`` times; negative ``n`` uses the inverse."""
    if n < 0:
        _square("matrix_power", input)
    elif input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise ValueError(f"matrix_power: expected a (batch of) square matrices, got shape {input.shape}")
    return jnp.linalg.matrix_power(input, n)
