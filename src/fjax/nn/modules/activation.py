"""Activation layers (ReLU, GELU, Softmax, PReLU, ...): thin modules over nn.functional."""

from __future__ import annotations

import warnings

from ...creation import empty
from ...ops._checks import ArgumentAssertionError
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..init import constant_, xavier_normal_, xavier_uniform_  # noqa: F401 - torch's module namespace
from ..module import Module
from ..parameter import Parameter
from ._utils import module_error
from .linear import NonDynamicallyQuantizableLinear  # noqa: F401 - at torch.nn.modules.activation, as torch
from .transformer import MultiheadAttention  # noqa: F401 - at torch.nn.modules.activation, as torch


def _inplace_str(inplace: bool, first: bool = False) -> str:
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _Stateless(Module):
    """An activation without arguments: ``forward`` is ``_fn(input)``."""

    _fn = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input)


class _Inplace(Module):
    """An activation whose only argument is ``inplace``."""

    _fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, first=True)


class ReLU(_Inplace):
    """Rectified linear unit: ``max(x, 0)`` elementwise, any shape in and out.

    ``inplace=True`` overwrites the input instead of allocating a result, as in torch.

    Args:
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> x = fjax.tensor([-2., -0.5, 0., 1., 3.])
        >>> nn.ReLU()(x)
        tensor([0., 0., 0., 1., 3.], dtype=fjax.float32)
        >>> nn.ReLU(inplace=True)
        ReLU(inplace=True)
    """

    _fn = staticmethod(F.relu)


class ReLU6(_Inplace):
    """ReLU capped at 6: ``min(max(x, 0), 6)`` elementwise. ``inplace`` as in :class:`ReLU`.

    Args:
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> nn.ReLU6()(fjax.tensor([-1., 3., 8.]))
        tensor([0., 3., 6.], dtype=fjax.float32)
    """

    _fn = staticmethod(F.relu6)


class SELU(_Inplace):
    """Scaled ELU: ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with the fixed
    self-normalizing constants ``alpha ~ 1.6733`` and ``scale ~ 1.0507``. Pair it with
    :class:`AlphaDropout`.

    Args:
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> nn.SELU()(fjax.tensor([-1., 0., 1.]))
        tensor([-1.1113,  0.0000,  1.0507], dtype=fjax.float32)
    """

    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    """Sigmoid linear unit (swish): ``x * sigmoid(x)`` elementwise.

    Args:
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> nn.SiLU()(fjax.tensor([-1., 0., 1.]))
        tensor([-0.2689,  0.0000,  0.7311], dtype=fjax.float32)
    """

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """Mish: ``x * tanh(softplus(x))`` elementwise, a smooth non-monotonic ReLU.

    Args:
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> nn.Mish()(fjax.tensor([-1., 0., 1.]))
        tensor([-0.3034,  0.0000,  0.8651], dtype=fjax.float32)
    """

    _fn = staticmethod(F.mish)


class Hardsigmoid(_Inplace):
    """Piecewise-linear sigmoid: ``relu6(x + 3) / 6``, i.e. 0 below -3, 1 above 3 and linear between.

    Args:
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> nn.Hardsigmoid()(fjax.tensor([-4., -1.5, 0., 1.5, 4.]))
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000], dtype=fjax.float32)
    """

    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Hardswish(_Inplace):
    """Hard swish: ``x * relu6(x + 3) / 6``, i.e. 0 below -3, ``x`` above 3 and quadratic between.

    Args:
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> nn.Hardswish()(fjax.tensor([-1.5, 0., 1.5, 4.]))
        tensor([-0.3750,  0.0000,  1.1250,  4.0000], dtype=fjax.float32)
    """

    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Sigmoid(_Stateless):
    """Logistic sigmoid ``1 / (1 + exp(-x))`` elementwise; values lie in ``(0, 1)``.

    Example::

        >>> nn.Sigmoid()(fjax.tensor([-1., 0., 1.]))
        tensor([0.2689, 0.5000, 0.7311], dtype=fjax.float32)
    """

    _fn = staticmethod(F.sigmoid)


class Tanh(_Stateless):
    """Hyperbolic tangent elementwise; values lie in ``(-1, 1)``.

    Example::

        >>> nn.Tanh()(fjax.tensor([-1., 0., 1.]))
        tensor([-0.7616,  0.0000,  0.7616], dtype=fjax.float32)
    """

    _fn = staticmethod(F.tanh)


class LogSigmoid(_Stateless):
    """``log(sigmoid(x))`` elementwise, computed stably: large negative inputs give ``x``
    rather than ``-inf``.

    Example::

        >>> nn.LogSigmoid()(fjax.tensor([-100., 0., 1.]))
        tensor([-100.0000,   -0.6931,   -0.3133], dtype=fjax.float32)
    """

    _fn = staticmethod(F.logsigmoid)


class Tanhshrink(_Stateless):
    """``x - tanh(x)`` elementwise.

    Example::

        >>> nn.Tanhshrink()(fjax.tensor([-1., 0., 1.]))
        tensor([-0.2384,  0.0000,  0.2384], dtype=fjax.float32)
    """

    _fn = staticmethod(F.tanhshrink)


class Softsign(_Stateless):
    """Softsign: ``x / (1 + |x|)`` elementwise; values lie in ``(-1, 1)``.

    Example::

        >>> nn.Softsign()(fjax.tensor([-3., 0., 1.]))
        tensor([-0.7500,  0.0000,  0.5000], dtype=fjax.float32)
    """

    _fn = staticmethod(F.softsign)


class LeakyReLU(Module):
    """Leaky ReLU: ``x`` where ``x >= 0``, else ``negative_slope * x`` (default ``0.01``).
    ``inplace`` as in :class:`ReLU`.

    Args:
        negative_slope: the slope of the negative half (default 0.01).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> m = nn.LeakyReLU(negative_slope=0.1)
        >>> m
        LeakyReLU(negative_slope=0.1)
        >>> m(fjax.tensor([-2., 0., 3.]))
        tensor([-0.2000,  0.0000,  3.0000], dtype=fjax.float32)
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class ELU(Module):
    """Exponential linear unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``, which
    saturates at ``-alpha``. ``inplace`` as in :class:`ReLU`.

    Args:
        alpha: the value the negative half saturates at, as ``-alpha`` (default 1.0).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> m = nn.ELU(alpha=1.0)
        >>> m(fjax.tensor([-1., 0., 2.]))
        tensor([-0.6321,  0.0000,  2.0000], dtype=fjax.float32)
    """

    _fn = staticmethod(F.elu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.alpha, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(ELU):
    """Continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.
    With ``alpha=1`` it equals :class:`ELU`.

    Args:
        alpha: the scale of the negative half (default 1.0).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> m = nn.CELU(alpha=2.0)
        >>> m(fjax.tensor([-2., 0., 2.]))
        tensor([-1.2642,  0.0000,  2.0000], dtype=fjax.float32)
    """

    _fn = staticmethod(F.celu)


class GELU(Module):
    """Gaussian error linear unit ``x * Phi(x)``, with ``Phi`` the standard normal CDF.
    ``approximate='none'`` (default) uses the exact erf form; ``approximate='tanh'`` uses the
    tanh approximation, as in torch.

    Args:
        approximate: ``'none'`` (the erf form) or ``'tanh'`` (default 'none').

    Example::

        >>> x = fjax.tensor([-2., -0.5, 0., 1., 3.])
        >>> nn.GELU()(x)
        tensor([-0.0455, -0.1543,  0.0000,  0.8413,  2.9960], dtype=fjax.float32)
        >>> nn.GELU(approximate='tanh')(x)
        tensor([-0.0454, -0.1543,  0.0000,  0.8412,  2.9964], dtype=fjax.float32)
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """Smooth ReLU: ``log(1 + exp(beta * x)) / beta`` elementwise. Where ``beta * x > threshold``
    the result is ``x`` itself, for numerical stability (defaults ``beta=1``, ``threshold=20``).

    Args:
        beta: the sharpness (default 1.0).
        threshold: above this value of ``beta * x`` the result is ``x`` (default 20.0).

    Example::

        >>> m = nn.Softplus(beta=2.0, threshold=20.0)
        >>> m(fjax.tensor([-1., 0., 1., 20.]))
        tensor([ 0.0635,  0.3466,  1.0635, 20.0000], dtype=fjax.float32)
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """Clamp every element to ``[min_val, max_val]`` (default ``[-1, 1]``); ``max_val`` must
    exceed ``min_val``. ``inplace`` as in :class:`ReLU`.

    Args:
        min_val: the lower end of the clamp (default -1.0).
        max_val: the upper end of the clamp (default 1.0).
        inplace: if True, overwrite the input with the result (default False).
        min_value: deprecated alias of ``min_val`` (warns) (default None).
        max_value: deprecated alias of ``max_val`` (warns) (default None).

    Example::

        >>> m = nn.Hardtanh(min_val=-1.0, max_val=2.0)
        >>> m(fjax.tensor([-3., 0.5, 5.]))
        tensor([-1.0000,  0.5000,  2.0000], dtype=fjax.float32)
    """

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ):
        super().__init__()
        if min_value is not None:
            warnings.warn("Hardtanh: min_value is deprecated, use min_val", FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("Hardtanh: max_value is deprecated, use max_val", FutureWarning, stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            raise ArgumentAssertionError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class Softshrink(Module):
    """Soft shrinkage: ``x - lambd`` where ``x > lambd``, ``x + lambd`` where ``x < -lambd``,
    else 0 (default ``lambd=0.5``).

    Args:
        lambd: the shrinkage amount (default 0.5).

    Example::

        >>> nn.Softshrink(lambd=0.5)(fjax.tensor([-2., 0.25, 1.]))
        tensor([-1.5000,  0.0000,  0.5000], dtype=fjax.float32)
    """

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """Hard shrinkage: ``x`` where ``|x| > lambd``, else 0 (default ``lambd=0.5``).

    Args:
        lambd: the magnitude at or below which values become 0 (default 0.5).

    Example::

        >>> nn.Hardshrink(lambd=0.5)(fjax.tensor([-2., -0.25, 0.25, 1.]))
        tensor([-2.,  0.,  0.,  1.], dtype=fjax.float32)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold`` (strictly), else ``value``. Both arguments are required.
    ``inplace`` as in :class:`ReLU`.

    Args:
        threshold: elements not above it are replaced.
        value: the replacement value.
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> m = nn.Threshold(threshold=0.5, value=-1.0)
        >>> m(fjax.tensor([0., 0.5, 1., 2.]))
        tensor([-1., -1.,  1.,  2.], dtype=fjax.float32)
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class GLU(Module):
    """Gated linear unit: split the input in two halves ``a, b`` along ``dim`` (default ``-1``,
    whose size must be even) and return ``a * sigmoid(b)``; that dim halves.

    Args:
        dim: the dimension split in halves (default -1).

    Example::

        >>> m = nn.GLU(dim=-1)
        >>> m(fjax.tensor([[1., 2., 0., 100.]]))
        tensor([[0.5000, 2.0000]], dtype=fjax.float32)
    """

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """Leaky ReLU with a learned negative slope ``weight``: ``x`` where ``x >= 0``, else
    ``weight * x``. ``num_parameters=1`` shares one slope; otherwise it must equal the channel
    count (dim 1 of the input). Slopes start at ``init`` (default ``0.25``).

    Args:
        num_parameters: the number of slopes: 1 (shared) or the channel count (default 1).
        init: the initial value of every slope (default 0.25).
        device: the device of the parameters and buffers (None: the default device).
        dtype: the dtype of the parameters and buffers (None: the default float dtype).

    Example::

        >>> m = nn.PReLU(num_parameters=2, init=0.25)
        >>> m.weight.shape
        fjax.Size([2])
        >>> m(fjax.tensor([[[-4., -4.], [1., 2.]]]))
        tensor([[[-1., -1.],
                 [ 1.,  2.]]], dtype=fjax.float32, grad_fn=...)
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fill the weight with ``init`` again (0.25 by default).

        Example:
            >>> m = nn.PReLU()
            >>> m.reset_parameters()
            >>> m.weight.tolist()
            [0.25]
        """
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: in training mode each negative element is multiplied by a slope drawn
    uniformly from ``[lower, upper]``; in eval mode by the fixed slope ``(lower + upper) / 2``.

    Args:
        lower: lower bound of the random slope (default 0.125).
        upper: upper bound of the random slope (default 0.3333333333333333).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> m = nn.RReLU(lower=0.1, upper=0.3).eval()
        >>> m(fjax.tensor([-1., 0., 2.]))
        tensor([-0.2000,  0.0000,  2.0000], dtype=fjax.float32)
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """Softmax ``exp(x) / sum(exp(x))`` along ``dim``, so each slice along ``dim`` sums to 1.
    Pass ``dim`` explicitly, as in torch.

    Args:
        dim: the dimension the softmax is taken along (default None).

    Example::

        >>> m = nn.Softmax(dim=1)
        >>> m(fjax.tensor([[1., 1.], [0., 2.]]))
        tensor([[0.5000, 0.5000],
                [0.1192, 0.8808]], dtype=fjax.float32)
    """

    _fn = staticmethod(F.softmax)


class Softmin(_SoftmaxBase):
    """Softmin: ``softmax(-x)`` along ``dim``, so the smallest entries get the most weight.

    Args:
        dim: the dimension the softmin is taken along (default None).

    Example::

        >>> m = nn.Softmin(dim=0)
        >>> m(fjax.tensor([1., 2., 3.]))
        tensor([0.6652, 0.2447, 0.0900], dtype=fjax.float32)
    """

    _fn = staticmethod(F.softmin)


class LogSoftmax(_SoftmaxBase):
    """``log(softmax(x))`` along ``dim``, computed stably; the usual input of :class:`NLLLoss`.

    Args:
        dim: the dimension the log-softmax is taken along (default None).

    Example::

        >>> m = nn.LogSoftmax(dim=-1)
        >>> y = m(fjax.tensor([[0., 0.], [0., 1.]]))
        >>> y
        tensor([[-0.6931, -0.6931],
                [-1.3133, -0.3133]], dtype=fjax.float32)
        >>> y.exp().sum(dim=-1)
        tensor([1., 1.], dtype=fjax.float32)
    """

    _fn = staticmethod(F.log_softmax)


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)`` input, at every location.

    Example::

        >>> nn.Softmax2d()(fjax.zeros(1, 2, 1, 1)).flatten()
        tensor([0.5000, 0.5000], dtype=fjax.float32)
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise module_error(self, f"expected input to be 3D or 4D, got {input.ndim}D of shape {tuple(input.shape)}")
        return F.softmax(input, -3)
