"""Identity, Linear and Bilinear layers."""

from __future__ import annotations

import math

from ...creation import empty
from ...errors import OpError
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter, UninitializedParameter
from ._utils import module_error
from .lazy import LazyModuleMixin


class Identity(Module):
    """A placeholder layer that returns its input object unchanged. Like torch's, it accepts and
    ignores any constructor arguments, so it can stand in for a layer that takes some.

    Example::

        >>> m = nn.Identity(54, unused='x')
        >>> x = fjax.tensor([1., 2.])
        >>> m(x) is x
        True
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` ``(out_features, in_features)``.

    Both are initialised from U(-1/sqrt(in_features), 1/sqrt(in_features)), as in torch.

    Args:
        in_features: the size of each input's last dim.
        out_features: the size of each output's last dim.
        bias: if True, learn an ``(out_features,)`` bias (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.Linear(in_features=3, out_features=4)
        >>> m.weight.shape, m.bias.shape
        (fjax.Size([4, 3]), fjax.Size([4]))
        >>> m(fjax.ones(2, 3)).shape
        fjax.Size([2, 4])
        >>> nn.Linear(3, 4, bias=False).bias is None
        True
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw a new weight and bias as torch does (Kaiming-uniform weight, uniform bias).

        Example:
            >>> _ = fjax.manual_seed(0)
            >>> m = nn.Linear(3, 2)
            >>> with fjax.no_grad():
            ...     _ = m.weight.fill_(0)
            >>> m.reset_parameters()
            >>> bool((m.weight != 0).all())
            True
        """
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim == 0 or input.shape[-1] != self.in_features:
            raise module_error(self, f"expected input of shape (*, {self.in_features}), got {tuple(input.shape)}")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` under torch's name for ``MultiheadAttention.out_proj`` (which torch's
    quantization treats apart); in fjax it is a plain Linear.

    Args:
        in_features: the size of each input sample.
        out_features: the size of each output sample.
        bias: if True (default), learn an additive bias.
        device: the device of the parameters (default None: the default device).
        dtype: the dtype of the parameters (default None: the default float dtype).

    Example::

        >>> type(nn.MultiheadAttention(4, 2).out_proj).__name__
        'NonDynamicallyQuantizableLinear'
    """


class Bilinear(Module):
    """Bilinear map ``y[..., o] = x1 @ weight[o] @ x2 + bias[o]`` with ``weight`` of shape
    ``(out_features, in1_features, in2_features)``. Inputs are ``(*, in1_features)`` and
    ``(*, in2_features)`` with the same leading dims. Parameters start uniform in
    ``(-1/sqrt(in1_features), 1/sqrt(in1_features))``; ``bias=False`` drops the bias.

    Args:
        in1_features: the last-dim size of the first input.
        in2_features: the last-dim size of the second input.
        out_features: the last-dim size of the output.
        bias: if True, learn an ``(out_features,)`` bias (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.Bilinear(in1_features=2, in2_features=3, out_features=4)
        >>> m.weight.shape
        fjax.Size([4, 2, 3])
        >>> m(fjax.ones(5, 2), fjax.ones(5, 3)).shape
        fjax.Size([5, 4])
        >>> m = nn.Bilinear(2, 2, 1, bias=False)
        >>> _ = m.weight.data.copy_(fjax.tensor([[[1., 0.], [0., 2.]]]))
        >>> m(fjax.tensor([[1., 1.]]), fjax.tensor([[3., 4.]]))  # 1*3 + 2*4
        tensor([[11.]], dtype=fjax.float32, grad_fn=...)
    """

    def __init__(
        self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__()
        if in1_features <= 0:
            raise OpError(f"Bilinear: in1_features must be > 0, but got in1_features={in1_features}")
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw a new weight and bias uniformly in ``[-1/sqrt(in1_features), 1/sqrt(in1_features)]``.

        Example:
            >>> m = nn.Bilinear(2, 3, 4)
            >>> m.reset_parameters()
            >>> bool((m.weight.abs() <= 2 ** -0.5).all())
            True
        """
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        if (
            input1.ndim == 0
            or input1.shape[-1] != self.in1_features
            or tuple(input2.shape) != (tuple(input1.shape[:-1]) + (self.in2_features,))
        ):
            raise module_error(
                self,
                f"expected inputs of shapes (*, {self.in1_features}) and (*, {self.in2_features}) "
                f"with the same leading dims, got {tuple(input1.shape)} and {tuple(input2.shape)}",
            )
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class LazyLinear(LazyModuleMixin, Linear):
    """A :class:`Linear` whose ``in_features`` is the first input's last dim: its weight and bias
    are uninitialized until then, and the layer then becomes a ``Linear``.

    Args:
        out_features: the size of each output sample.
        bias: if True (default), learn an additive bias.
        device: the device of the parameters (default None: the default device).
        dtype: the dtype of the parameters (default None: the default float dtype).

    Example::

        >>> m = nn.LazyLinear(3)
        >>> m.weight
        <UninitializedParameter>
        >>> m(fjax.ones(2, 5)).shape, type(m).__name__, tuple(m.weight.shape)
        (fjax.Size([2, 3]), 'Linear', (3, 5))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Take ``in_features`` from ``input``'s last dim and draw the weight and bias (the first call does it).

        Args:
            input: the first input, ``(*, in_features)``.

        Example:
            >>> m = nn.LazyLinear(3)
            >>> m.initialize_parameters(fjax.ones(2, 5))
            >>> tuple(m.weight.shape), m.in_features
            ((3, 5), 5)
        """
        if not self.has_uninitialized_params():
            if self.in_features == 0:  # the parameters came from a loaded state_dict
                self.in_features = self.weight.shape[-1]
            return
        self.in_features = input.shape[-1]
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        self.reset_parameters()
