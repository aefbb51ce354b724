"""Transforms: invertible maps with the log absolute Jacobian determinant, as in
``torch.distributions.transforms``; ``TransformedDistribution`` pushes a distribution through them.

Example::

    >>> from fjax.distributions.transforms import AffineTransform, ExpTransform
    >>> t = ExpTransform()
    >>> x = fjax.tensor([0.0, 1.0])
    >>> t(x)
    tensor([1.0000, 2.7183], dtype=fjax.float32)
    >>> t.inv(t(x)), t.log_abs_det_jacobian(x, t(x))
    (tensor([0., 1.], dtype=fjax.float32), tensor([0., 1.], dtype=fjax.float32))
"""

from __future__ import annotations

import math

import numpy as np

from .. import creation, linalg
from ..dispatch import functions as _f
from ..nn import functional as F
from ..tensor import Size, Tensor
from . import constraints
from .utils import (
    _NUMBER,
    _finfo,
    _sum_rightmost,
    broadcast_all,
    lazy_property,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]


def _broadcast_shape(*shapes) -> Size:
    return Size(np.broadcast_shapes(*(tuple(s) for s in shapes)))


class Transform:
    """An invertible (``bijective``) or at least computable map ``y = t(x)`` from ``domain`` to
    ``codomain``, with ``t.inv`` its inverse and ``log_abs_det_jacobian(x, y)`` the log of
    ``|dy/dx|``. With ``cache_size=1`` the last ``(x, y)`` pair is remembered, so ``t.inv(t(x))``
    returns ``x`` itself.

    Example::

        >>> from fjax.distributions.transforms import Transform
        >>> from fjax.distributions import constraints
        >>> class Double(Transform):
        ...     domain = codomain = constraints.real
        ...     bijective, sign = True, 1
        ...     def _call(self, x):
        ...         return 2 * x
        ...     def _inverse(self, y):
        ...         return y / 2
        >>> Double().inv(fjax.tensor([4.0]))
        tensor([2.], dtype=fjax.float32)
    """

    bijective = False

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = (None, None)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> "Transform":
        """The inverse transform (``t.inv(y)`` gives ``x``)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self):
        """The sign of the Jacobian determinant (for monotone scalar maps)."""
        raise NotImplementedError(f"{type(self).__name__}.sign is not implemented")

    def with_cache(self, cache_size: int = 1) -> "Transform":
        """This transform with the given ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError(f"{type(self).__name__} does not implement the forward map")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} does not implement the inverse map")

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |dy/dx|`` at the pair ``(x, y = t(x))``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement log_abs_det_jacobian")

    def forward_shape(self, shape):
        """The shape of ``t(x)`` for ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape):
        """The shape of ``t.inv(y)`` for ``y`` of ``shape``."""
        return shape

    def __repr__(self):
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache."""

    def __init__(self, transform: Transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order (``parts[0]`` first); the Jacobian terms add,
    each summed over the dims it shares with the composed event.

    Example::

        >>> from fjax.distributions.transforms import AffineTransform, ComposeTransform, ExpTransform
        >>> t = ComposeTransform([AffineTransform(1.0, 2.0), ExpTransform()])
        >>> x = fjax.tensor([0.0])
        >>> t(x), t.log_abs_det_jacobian(x, t(x))
        (tensor([2.7183], dtype=fjax.float32), tensor([1.6931], dtype=fjax.float32))
    """

    def __init__(self, parts: list, cache_size: int = 0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @lazy_property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @lazy_property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        if self._inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            inv._inv = self
            self._inv = inv
        return self._inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return creation.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total, event_dim = None, self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            term = _sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
            total = term if total is None else total + term
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        return f"{type(self).__name__}(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with its ``reinterpreted_batch_ndims`` rightmost dims made event dims:
    the Jacobian term is summed over them.

    Example::

        >>> from fjax.distributions.transforms import ExpTransform, IndependentTransform
        >>> t = IndependentTransform(ExpTransform(), 1)
        >>> x = fjax.tensor([[0.0, 1.0]])
        >>> t.log_abs_det_jacobian(x, t(x))
        tensor([1.], dtype=fjax.float32)
    """

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.ndim < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.ndim < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ExpTransform(Transform):
    """``y = exp(x)``.

    Example::

        >>> from fjax.distributions.transforms import ExpTransform
        >>> ExpTransform().inv(fjax.tensor([1.0]))
        tensor([0.], dtype=fjax.float32)
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive ``x``.

    Example::

        >>> from fjax.distributions.transforms import PowerTransform
        >>> PowerTransform(fjax.tensor(2.0))(fjax.tensor([3.0]))
        tensor([9.], dtype=fjax.float32)
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return _broadcast_shape(shape, self.exponent.shape)

    def inverse_shape(self, shape):
        return _broadcast_shape(shape, self.exponent.shape)


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``, clipped inside ``(0, 1)``.

    Example::

        >>> from fjax.distributions.transforms import SigmoidTransform
        >>> SigmoidTransform()(fjax.tensor([0.0]))
        tensor([0.5000], dtype=fjax.float32)
    """

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        info = _finfo(x)
        return x.sigmoid().clamp(min=float(info.tiny), max=1.0 - float(info.eps))

    def _inverse(self, y):
        info = _finfo(y)
        y = y.clamp(min=float(info.tiny), max=1.0 - float(info.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``.

    Example::

        >>> from fjax.distributions.transforms import SoftplusTransform
        >>> SoftplusTransform()(fjax.tensor([0.0]))
        tensor([0.6931], dtype=fjax.float32)
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)``; the Jacobian term uses the stable form ``2 (log 2 - x - softplus(-2x))``.

    Example::

        >>> from fjax.distributions.transforms import TanhTransform
        >>> TanhTransform().inv(fjax.tensor([0.5]))
        tensor([0.5493], dtype=fjax.float32)
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not invertible: the inverse returns ``y``).

    Example::

        >>> from fjax.distributions.transforms import AbsTransform
        >>> AbsTransform()(fjax.tensor([-2.0]))
        tensor([2.], dtype=fjax.float32)
    """

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``, elementwise; with ``event_dim`` > 0 the Jacobian term is summed
    over that many rightmost dims.

    Example::

        >>> from fjax.distributions.transforms import AffineTransform
        >>> t = AffineTransform(1.0, fjax.tensor([2.0, -0.5]))
        >>> x = fjax.tensor([1.0, 1.0])
        >>> t(x), t.log_abs_det_jacobian(x, t(x))
        (tensor([3.0000, 0.5000], dtype=fjax.float32), tensor([ 0.6931, -0.6931], dtype=fjax.float32))
    """

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, _NUMBER) and isinstance(b, _NUMBER):
                if a != b:
                    return False
            elif not bool((a == b).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, _NUMBER):
            return 1 if self.scale > 0 else -1 if self.scale < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, _NUMBER):
            result = creation.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[: result.ndim - self.event_dim]) + (-1,)).sum(-1)
            shape = shape[: len(shape) - self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return _broadcast_shape(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))

    def inverse_shape(self, shape):
        return _broadcast_shape(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by a softmax over the last dim (not bijective: the
    inverse is ``log y``, one of many preimages).

    Example::

        >>> from fjax.distributions.transforms import SoftmaxTransform
        >>> SoftmaxTransform()(fjax.tensor([0.0, 0.0]))
        tensor([0.5000, 0.5000], dtype=fjax.float32)
    """

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dims to ``out_shape`` (same number of elements); the
    Jacobian term is zero.

    Args:
        in_shape: the input event shape.
        out_shape: the output event shape.
        cache_size: 0 (no caching) or 1 (remember the last pair).

    Example::

        >>> from fjax.distributions.transforms import ReshapeTransform
        >>> ReshapeTransform((4,), (2, 2))(fjax.zeros(3, 4)).shape
        fjax.Size([3, 2, 2])
    """

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape, self.out_shape = Size(tuple(in_shape)), Size(tuple(out_shape))
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[: x.ndim - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[: y.ndim - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[: x.ndim - len(self.in_shape)]))

    def forward_shape(self, shape):
        if len(shape) < len(self.in_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.in_shape)
        if tuple(shape[cut:]) != tuple(self.in_shape):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(self.in_shape)}")
        return Size(tuple(shape[:cut]) + tuple(self.out_shape))

    def inverse_shape(self, shape):
        if len(shape) < len(self.out_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.out_shape)
        if tuple(shape[cut:]) != tuple(self.out_shape):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(self.out_shape)}")
        return Size(tuple(shape[:cut]) + tuple(self.in_shape))


def _clipped_sigmoid(x):
    info = _finfo(x)
    return x.sigmoid().clamp(min=float(info.tiny), max=1.0 - float(info.eps))


class StickBreakingTransform(Transform):
    """Unconstrained vectors of length ``K - 1`` to the simplex of ``K`` entries by stick breaking
    (an iterated sigmoid): bijective, as for HMC.

    Example::

        >>> from fjax.distributions.transforms import StickBreakingTransform
        >>> StickBreakingTransform()(fjax.tensor([0.0, 0.0]))
        tensor([0.3333, 0.3333, 0.3333], dtype=fjax.float32)
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        z = _clipped_sigmoid(x - offset.log())
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=float(_finfo(y).tiny))
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        x = x - offset.log()
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class CorrCholeskyTransform(Transform):
    """Unconstrained vectors of length ``D(D-1)/2`` to lower Cholesky factors of ``D x D``
    correlation matrices (unit-norm rows, positive diagonal), by a signed stick breaking of
    ``tanh(x)`` row by row. The Jacobian term is that of ``x`` and the strict lower triangle of ``y``.

    Example::

        >>> from fjax.distributions.transforms import CorrCholeskyTransform
        >>> CorrCholeskyTransform()(fjax.tensor([0.0]))
        tensor([[1., 0.],
                [0., 1.]], dtype=fjax.float32)
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        eps = float(_finfo(x).eps)
        x = x.tanh().clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z1m_cumprod_sqrt = (1 - r**2).sqrt().cumprod(-1)
        r = r + creation.eye(r.shape[-1], dtype=r.dtype)
        return r * F.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        y_cumsum = 1 - (y * y).cumsum(-1)
        y_cumsum_shifted = F.pad(y_cumsum[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(y_cumsum_shifted, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum_tril = tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2)
        stick_breaking_logdet = 0.5 * y1m_cumsum_tril.log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrices to lower-triangular ones with a positive diagonal: the strict
    lower triangle is kept and the diagonal exponentiated (not bijective: the upper part is dropped).

    Example::

        >>> from fjax.distributions.transforms import LowerCholeskyTransform
        >>> LowerCholeskyTransform()(fjax.tensor([[0.0, 5.0], [2.0, 0.0]]))
        tensor([[1., 0.],
                [2., 1.]], dtype=fjax.float32)
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrices to positive-definite ones: ``L @ L.mT`` with ``L`` the
    ``LowerCholeskyTransform`` of ``x``; the inverse goes through a Cholesky factorization.

    Example::

        >>> from fjax.distributions.transforms import PositiveDefiniteTransform
        >>> PositiveDefiniteTransform()(fjax.tensor([[0.0, 0.0], [1.0, 0.0]]))
        tensor([[1., 1.],
                [1., 2.]], dtype=fjax.float32)
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


def _check_dim(what: str, name: str, t, dim: int, size: int, expected: str):
    if not -t.ndim <= dim < t.ndim:
        raise ValueError(f"{what}: dim {dim} out of range for {name} with {t.ndim} dimensions")
    if t.shape[dim] != size:
        raise ValueError(f"{what}: {name}.size({dim}) = {t.shape[dim]} must equal {expected} {size}")


class CatTransform(Transform):
    """The transforms ``tseq`` applied to consecutive slices along ``dim`` (of ``lengths``,
    default 1 each), the results concatenated as ``fjax.cat`` would.

    Args:
        tseq: the transforms, one per slice.
        dim: the dim the slices are cut along.
        lengths: the length of each slice (default 1 each).
        cache_size: 0 (no caching) or 1 (remember the last pair).

    Example::

        >>> from fjax.distributions.transforms import CatTransform, ExpTransform, identity_transform
        >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[1, 2])
        >>> t(fjax.tensor([0.0, 1.0, 2.0]))
        tensor([1., 1., 2.], dtype=fjax.float32)
    """

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("CatTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: got {len(self.lengths)} lengths for {len(self.transforms)} transforms")
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, x, inverse: bool):
        _check_dim("CatTransform", "y" if inverse else "x", x, self.dim, self.length, "the total length")
        out, start = [], 0
        for trans, length in zip(self.transforms, self.lengths):
            piece = x.narrow(self.dim, start, length)
            out.append(trans.inv(piece) if inverse else trans(piece))
            start = start + length
        return _f.cat(out, self.dim)

    def _call(self, x):
        return self._map(x, False)

    def _inverse(self, y):
        return self._map(y, True)

    def log_abs_det_jacobian(self, x, y):
        _check_dim("CatTransform", "x", x, self.dim, self.length, "the total length")
        _check_dim("CatTransform", "y", y, self.dim, self.length, "the total length")
        terms, start = [], 0
        for trans, length in zip(self.transforms, self.lengths):
            term = trans.log_abs_det_jacobian(x.narrow(self.dim, start, length), y.narrow(self.dim, start, length))
            if trans.event_dim < self.event_dim:
                term = _sum_rightmost(term, self.event_dim - trans.event_dim)
            terms.append(term)
            start = start + length
        dim = self.dim - x.ndim if self.dim >= 0 else self.dim
        dim = dim + self.event_dim
        return _f.cat(terms, dim) if dim < 0 else sum(terms)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """The transforms ``tseq`` applied to the slices along ``dim`` (one each), the results stacked
    back as ``fjax.stack`` would.

    Args:
        tseq: the transforms, one per slice.
        dim: the dim sliced along.
        cache_size: 0 (no caching) or 1 (remember the last pair).

    Example::

        >>> from fjax.distributions.transforms import ExpTransform, StackTransform, identity_transform
        >>> StackTransform([ExpTransform(), identity_transform], dim=1)(fjax.tensor([[0.0, 3.0]]))
        tensor([[1., 3.]], dtype=fjax.float32)
    """

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("StackTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z, name):
        _check_dim("StackTransform", name, z, self.dim, len(self.transforms), "len(transforms)")
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        return _f.stack([t(v) for v, t in zip(self._slice(x, "x"), self.transforms)], self.dim)

    def _inverse(self, y):
        return _f.stack([t.inv(v) for v, t in zip(self._slice(y, "y"), self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        pieces = zip(self._slice(x, "x"), self._slice(y, "y"), self.transforms)
        return _f.stack([t.log_abs_det_jacobian(a, b) for a, b, t in pieces], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``, into ``[0, 1]``; the inverse is ``icdf`` and the Jacobian term
    ``log_prob(x)`` (e.g. a Gaussian copula from a multivariate normal).

    Args:
        distribution: the distribution whose cdf maps.
        cache_size: 0 (no caching) or 1 (remember the last pair).

    Example::

        >>> from fjax.distributions import Normal
        >>> from fjax.distributions.transforms import CumulativeDistributionTransform
        >>> CumulativeDistributionTransform(Normal(0.0, 1.0))(fjax.tensor([0.0]))
        tensor([0.5000], dtype=fjax.float32)
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
