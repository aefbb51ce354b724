"""Complex numbers: parts, conjugates, angles and the real <-> complex views, with torch's signatures.

torch's ``real``, ``imag``, ``view_as_real``, ``view_as_complex`` and ``conj`` return views (``conj`` a
lazily conjugated one); fjax returns new arrays with the same values (writing into the result does not
change the input). ``resolve_conj``/``resolve_neg`` have nothing lazy to resolve: they return copies.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from ._promote import to_float
from ._registry import defop


def _is_complex(x) -> bool:
    return jnp.issubdtype(x.dtype, jnp.complexfloating)


@defop(method=False, linear=True)
def real(input):
    """The real part of each element (``input`` itself, as a copy, for a real tensor). torch's is a
    view; fjax's a copy.

    Example::

        >>> fjax.real(fjax.tensor([1.0 + 2.0j, -3.0 + 0.5j]))
        tensor([ 1., -3.], dtype=fjax.float32)
    """
    return jnp.real(input) if _is_complex(input) else input


@defop(method=False, linear=True)
def imag(input):
    """The imaginary part of each element of a complex tensor (a real tensor raises, as torch). torch's
    is a view; fjax's a copy.

    Example::

        >>> fjax.imag(fjax.tensor([1.0 + 2.0j, -3.0 + 0.5j]))
        tensor([2.0000, 0.5000], dtype=fjax.float32)
    """
    if not _is_complex(input):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return jnp.imag(input)


@defop(linear=True)
def conj(input):
    """The complex conjugate (``input`` unchanged for a real tensor). torch's is a lazily conjugated
    view; fjax conjugates at once.

    Example::

        >>> fjax.conj(fjax.tensor([1.0 + 2.0j]))
        tensor([1.-2.j], dtype=fjax.complex64)
    """
    return jnp.conj(input) if _is_complex(input) else input


@defop(linear=True)
def conj_physical(input):
    """The complex conjugate, computed eagerly (``input`` unchanged for a real tensor).

    Example::

        >>> fjax.conj_physical(fjax.tensor([1.0 - 1.0j, 2.0]))
        tensor([1.+1.j, 2.-0.j], dtype=fjax.complex64)
    """
    return jnp.conj(input) if _is_complex(input) else input


@defop(linear=True)
def resolve_conj(input):
    """``input``'s values: fjax has no lazily conjugated tensors, so there is nothing to resolve.

    Example::

        >>> fjax.resolve_conj(fjax.tensor([1.0 + 1.0j]).conj())
        tensor([1.-1.j], dtype=fjax.complex64)
    """
    return input


@defop(linear=True)
def resolve_neg(input):
    """``input``'s values: fjax has no lazily negated tensors, so there is nothing to resolve.

    Example::

        >>> fjax.resolve_neg(fjax.tensor([1.0, -2.0]))
        tensor([ 1., -2.], dtype=fjax.float32)
    """
    return input


@defop()
def angle(input):
    """The argument (phase) of each element in radians, in ``(-pi, pi]``; for a real tensor 0 where
    ``input >= 0`` and pi where negative (NaN stays NaN); integers give floats.

    Example::

        >>> fjax.angle(fjax.tensor([1.0, -2.0, 0.0]))
        tensor([0.0000, 3.1416, 0.0000], dtype=fjax.float32)
        >>> fjax.angle(fjax.tensor([1.0j]))
        tensor([1.5708], dtype=fjax.float32)
    """
    if _is_complex(input):
        return jnp.angle(input)
    x = to_float(input)
    pi = jnp.asarray(jnp.pi, x.dtype)
    zero = jnp.zeros_like(x)
    out = jnp.where(x < 0, pi, zero)
    out = jnp.where(jnp.isnan(x), x, out)
    return out + lax.stop_gradient(zero * x)  # torch: the gradient of a real input's angle is 0


@defop()
def sgn(input):
    """``input / |input|`` elementwise (0 where ``input`` is 0): the sign of a real tensor, the unit-modulus
    direction of a complex one.

    Example::

        >>> fjax.sgn(fjax.tensor([3.0 + 4.0j, 0.0]))
        tensor([0.6000+0.8000j, 0.0000+0.0000j], dtype=fjax.complex64)
        >>> fjax.sgn(fjax.tensor([-2.0, 0.0, 5.0]))
        tensor([-1.,  0.,  1.], dtype=fjax.float32)
    """
    if not _is_complex(input):
        if input.dtype == jnp.bool_:
            return input
        return jnp.sign(input)
    a = jnp.abs(input)
    safe = jnp.where(a == 0, jnp.ones_like(a), a)
    return jnp.where(a == 0, jnp.zeros_like(input), input / safe.astype(input.dtype))


def _float_pair(op, x, y):
    if x.dtype != y.dtype:
        raise RuntimeError(f"{op}: expected both inputs to have the same dtype, got {x.dtype} and {y.dtype}")
    if x.dtype not in (jnp.float32, jnp.float64, jnp.float16):
        raise RuntimeError(f"{op}: expected float or double tensors, got {x.dtype}")
    return jnp.broadcast_arrays(x, y)


@defop(method=False)
def complex(real, imag):  # noqa: A001 - torch's name
    """The complex tensor ``real + 1j * imag`` of two float tensors of the same dtype (broadcast
    together); float32 gives complex64, float64 complex128.

    Example::

        >>> fjax.complex(fjax.tensor([1.0, 2.0]), fjax.tensor([3.0, -1.0]))
        tensor([1.+3.j, 2.-1.j], dtype=fjax.complex64)
    """
    re, im = _float_pair("complex", real, imag)
    if re.dtype == jnp.float16:
        raise NotImplementedError("complex: float16 parts (complex32) are not supported")
    return lax.complex(re, im)


@defop(method=False)
def polar(abs, angle):  # noqa: A002 - torch's names
    """The complex tensor ``abs * (cos(angle) + 1j * sin(angle))`` of two float tensors of the same dtype.

    Example::

        >>> fjax.polar(fjax.tensor([2.0]), fjax.tensor([0.0]))
        tensor([2.+0.j], dtype=fjax.complex64)
    """
    r, t = _float_pair("polar", abs, angle)
    if r.dtype == jnp.float16:
        raise NotImplementedError("polar: float16 parts (complex32) are not supported")
    return lax.complex(r * jnp.cos(t), r * jnp.sin(t))


@defop(method=False, linear=True)
def view_as_real(input):
    """A complex tensor's real and imaginary parts as a trailing dim of size 2 (a copy in fjax, a view in
    torch).

    Example::

        >>> fjax.view_as_real(fjax.tensor([1.0 + 2.0j]))
        tensor([[1., 2.]], dtype=fjax.float32)
    """
    if not _is_complex(input):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return jnp.stack([jnp.real(input), jnp.imag(input)], axis=-1)


@defop(method=False, linear=True)
def view_as_complex(input):
    """A float tensor whose last dim (of size 2) holds real and imaginary parts, as a complex tensor
    without that dim (a copy in fjax, a view in torch).

    Example::

        >>> fjax.view_as_complex(fjax.tensor([[1.0, 2.0], [3.0, -4.0]]))
        tensor([1.+2.j, 3.-4.j], dtype=fjax.complex64)
    """
    if input.dtype not in (jnp.float32, jnp.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, got {input.dtype}")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2, got shape {tuple(input.shape)}")
    return lax.complex(input[..., 0], input[..., 1])


@defop(differentiable=False)
def isreal(input):
    """Whether each element is real: True everywhere for a real tensor, ``imag == 0`` for a complex one.

    Example::

        >>> fjax.isreal(fjax.tensor([1.0 + 0.0j, 1.0 + 1.0j]))
        tensor([ True, False], dtype=fjax.bool)
    """
    if _is_complex(input):
        return jnp.imag(input) == 0
    return jnp.ones(input.shape, jnp.bool_)


@defop()
def adjoint(input):
    """The conjugate transpose of the last two dims (``input.mT.conj()``).

    Example::

        >>> fjax.adjoint(fjax.tensor([[1.0 + 1.0j, 2.0]]))
        tensor([[1.-1.j],
                [2.-0.j]], dtype=fjax.complex64)
    """
    if input.ndim < 2:
        raise RuntimeError(f"adjoint: tensor must have at least 2 dimensions, got {input.ndim}")
    out = jnp.swapaxes(input, -1, -2)
    return jnp.conj(out) if _is_complex(out) else out
