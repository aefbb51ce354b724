"""Activation layers (ReLU, GELU, Softmax, PReLU, ...): thin modules over nn.functional."""

from __future__ import annotations

from ...creation import empty
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter


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
    """``max(x, 0)``."""

    _fn = staticmethod(F.relu)


class ReLU6(_Inplace):
    """``min(max(x, 0), 6)``."""

    _fn = staticmethod(F.relu6)


class SELU(_Inplace):
    """Scaled ELU with the self-normalizing constants."""

    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    _fn = staticmethod(F.mish)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Sigmoid(_Stateless):
    """``1 / (1 + exp(-x))``."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Stateless):
    """Hyperbolic tangent."""

    _fn = staticmethod(F.tanh)


class LogSigmoid(_Stateless):
    """``log(sigmoid(x))``, computed stably."""

    _fn = staticmethod(F.logsigmoid)


class Tanhshrink(_Stateless):
    """``x - tanh(x)``."""

    _fn = staticmethod(F.tanhshrink)


class Softsign(_Stateless):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(F.softsign)


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""

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
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    _fn = staticmethod(F.celu)


class GELU(Module):
    """Gaussian error linear unit, exact (``'none'``) or with the tanh approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """Clamp to ``[min_val, max_val]``."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class Softshrink(Module):
    """Shrink towards 0 by ``lambd``."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """``x`` where ``|x| > lambd``, else 0."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

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
    """Gated linear unit over the two halves of ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """Leaky ReLU with a learned slope: one shared, or one per channel (``num_parameters``)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky ReLU with a random slope in ``[lower, upper]`` when training, the mean slope in eval."""

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
    """``exp(x) / sum(exp(x))`` along ``dim``."""

    _fn = staticmethod(F.softmax)


class Softmin(_SoftmaxBase):
    """``softmax(-x)`` along ``dim``."""

    _fn = staticmethod(F.softmin)


class LogSoftmax(_SoftmaxBase):
    """``log(softmax(x))`` along ``dim``."""

    _fn = staticmethod(F.log_softmax)
