"""Constraints: the region a distribution's parameter or sample must lie in, as in
``torch.distributions.constraints``. ``constraint.check(value)`` gives a boolean tensor of
``value``'s shape less the constraint's ``event_dim`` rightmost dims.

Example::

    >>> from fjax.distributions import constraints
    >>> constraints.positive.check(fjax.tensor([1.0, 0.0]))
    tensor([ True, False], dtype=fjax.bool)
    >>> constraints.simplex.check(fjax.tensor([0.25, 0.75]))
    tensor(True, dtype=fjax.bool)
"""

from __future__ import annotations

import jax.numpy as jnp

from .. import creation, linalg
from .. import dtypes as _dt
from ..dispatch import functions as _f

__all__ = [
    "Constraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "MixtureSameFamilyConstraint",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]


class Constraint:
    """A region a value may lie in. ``is_discrete`` says whether it is discrete, ``event_dim``
    how many rightmost dims form one event (``check`` reduces them away).

    Example::

        >>> from fjax.distributions.constraints import Constraint
        >>> class Even(Constraint):
        ...     is_discrete = True
        ...     def check(self, value):
        ...         return value % 2 == 0
        >>> Even().check(fjax.tensor([2, 3]))
        tensor([ True, False], dtype=fjax.bool)
    """

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A boolean tensor: whether each event of ``value`` satisfies the constraint."""
        raise NotImplementedError(f"{type(self).__name__}.check is not implemented")

    def __repr__(self):
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder for a parameter whose valid region depends on other parameters; it cannot
    be checked. ``is_discrete``/``event_dim`` are known only when given."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """A copy with the given static attributes: ``constraints.dependent(is_discrete=True)``."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is a dependent one (which validation skips).

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.is_dependent(constraints.dependent), constraints.is_dependent(constraints.real)
        (True, False)
    """
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """``@constraints.dependent_property``: a property on instances (the support built from the
    parameters) and a dependent constraint on the class.

    Example::

        >>> from fjax.distributions import Uniform, constraints
        >>> constraints.is_dependent(Uniform.support), Uniform(0.0, 2.0).support
        (True, Interval(lower_bound=0.0, upper_bound=2.0))
    """

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with its ``reinterpreted_batch_ndims`` rightmost batch dims folded into
    the event: an event is valid when all its entries are.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.independent(constraints.positive, 1).check(fjax.tensor([[1.0, 2.0], [1.0, -1.0]]))
        tensor([ True, False], dtype=fjax.bool)
    """

    def __init__(self, base_constraint, reinterpreted_batch_ndims: int):
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"independent: base_constraint must be a Constraint, got {type(base_constraint).__name__}")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(
                f"independent: reinterpreted_batch_ndims must be an int >= 0, got {reinterpreted_batch_ndims!r}"
            )
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.ndim < n:
            raise ValueError(f"Expected value.dim() >= {self.base_constraint.event_dim + n} but got {value.ndim}")
        return result.reshape(tuple(result.shape[: result.ndim - n]) + (-1,)).all(-1)

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    """The two values 0 and 1."""

    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors in the last dim."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = ((value == 0) | (value == 1)).all(-1)
        return is_boolean & (value.sum(-1) == 1)


class _IntegerInterval(Constraint):
    """Integers in ``[lower_bound, upper_bound]``.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.integer_interval(0, 2).check(fjax.tensor([0.0, 1.5, 3.0]))
        tensor([ True, False, False], dtype=fjax.bool)
    """

    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerLessThan(Constraint):
    """Integers in ``(-inf, upper_bound]``."""

    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerLessThan(upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    """Integers in ``[lower_bound, inf)``."""

    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Real(Constraint):
    """The extended real line ``[-inf, inf]`` (anything but NaN)."""

    def check(self, value):
        return value == value


class _GreaterThan(Constraint):
    """``(lower_bound, inf]``.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.greater_than(1.0).check(fjax.tensor([1.0, 2.0]))
        tensor([False,  True], dtype=fjax.bool)
    """

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value > self.lower_bound

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    """``[lower_bound, inf)``.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.greater_than_eq(1.0).check(fjax.tensor([1.0, 0.0]))
        tensor([ True, False], dtype=fjax.bool)
    """

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value >= self.lower_bound

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    """``[-inf, upper_bound)``.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.less_than(1.0).check(fjax.tensor([1.0, 0.0]))
        tensor([False,  True], dtype=fjax.bool)
    """

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """``[lower_bound, upper_bound]``.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.interval(0.0, 1.0).check(fjax.tensor([0.0, 1.0, 1.5]))
        tensor([ True,  True, False], dtype=fjax.bool)
    """

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(Constraint):
    """``[lower_bound, upper_bound)``.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.half_open_interval(0.0, 1.0).check(fjax.tensor([0.0, 1.0]))
        tensor([ True, False], dtype=fjax.bool)
    """

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)

    def __repr__(self):
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    """Non-negative vectors summing to 1 (within 1e-6) in the last dim."""

    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Non-negative vectors summing to at most ``upper_bound`` (torch checks this weaker condition).

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.multinomial(3).check(fjax.tensor([[1.0, 2.0], [2.0, 2.0]]))
        tensor([ True, False], dtype=fjax.bool)
    """

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


class MixtureSameFamilyConstraint(Constraint):
    """The support of a ``MixtureSameFamily``: ``base_constraint`` (the components' support) checked
    with the component dim added back, every component's check required.

    Args:
        base_constraint: the component distribution's support.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.MixtureSameFamilyConstraint(constraints.positive).check(fjax.tensor([1.0, -1.0]))
        tensor([ True, False], dtype=fjax.bool)
    """

    def __init__(self, base_constraint):
        if not isinstance(base_constraint, Constraint):
            raise TypeError(
                "MixtureSameFamilyConstraint: base_constraint must be a Constraint, "
                f"got {type(base_constraint).__name__}"
            )
        self.base_constraint = base_constraint

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        if value.ndim < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.ndim}")
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        keep = value.ndim - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_constraint!r})"


def _is_lower_triangular(value):
    return (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices."""

    event_dim = 2

    def check(self, value):
        return _is_lower_triangular(value)


class _LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value):
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return _is_lower_triangular(value) & positive_diagonal


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: each row has unit length."""

    event_dim = 2

    def check(self, value):
        tol = float(jnp.finfo(value.dtype.dtype).eps) * value.shape[-1] * 10  # torch's fudge factor
        row_norm = linalg.vector_norm(value.detach(), 2, -1)
        unit_rows = ((row_norm - 1.0).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit_rows


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value):
        square = value.shape[-2] == value.shape[-1]
        return creation.full(tuple(value.shape[:-2]), square, dtype=_dt.bool)


class _Symmetric(_Square):
    """Symmetric square matrices (to within ``atol=1e-6``)."""

    def check(self, value):
        if value.shape[-2] != value.shape[-1]:
            return super().check(value)
        return _f.isclose(value, value.mT, atol=1e-6).all(-1).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric matrices with non-negative eigenvalues."""

    def check(self, value):
        sym = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return sym
        return sym & (linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric matrices with positive eigenvalues."""

    def check(self, value):
        sym = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return sym
        return sym & (linalg.eigvalsh(value) > 0).all(-1)


class _Cat(Constraint):
    """The constraints ``cseq`` applied to consecutive slices of ``value`` along ``dim`` (of
    ``lengths``, default 1 each), the results concatenated as ``fjax.cat`` would.

    Example::

        >>> from fjax.distributions import constraints
        >>> c = constraints.cat([constraints.real, constraints.positive], dim=0, lengths=[1, 2])
        >>> c.check(fjax.tensor([-1.0, 2.0, -3.0]))
        tensor([ True,  True, False], dtype=fjax.bool)
    """

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        if not all(isinstance(c, Constraint) for c in self.cseq):
            raise TypeError("cat: every element of cseq must be a Constraint")
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"cat: got {len(self.lengths)} lengths for {len(self.cseq)} constraints")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return _f.cat(checks, self.dim)


class _Stack(Constraint):
    """The constraints ``cseq`` applied to the slices of ``value`` along ``dim``, stacked back.

    Example::

        >>> from fjax.distributions import constraints
        >>> constraints.stack([constraints.real, constraints.positive], dim=-1).check(fjax.tensor([[-1.0, -2.0]]))
        tensor([[ True, False]], dtype=fjax.bool)
    """

    def __init__(self, cseq, dim=0):
        self.cseq = list(cseq)
        if not all(isinstance(c, Constraint) for c in self.cseq):
            raise TypeError("stack: every element of cseq must be a Constraint")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        parts = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return _f.stack([c.check(v) for v, c in zip(parts, self.cseq)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
