"""OneFlow's ``flow._C`` functional namespace: the op functions OneFlow's own code and tests call
directly, with OneFlow's signatures, each forwarding to fjax's public op.

Names defined here are the ones whose signature differs from fjax's public function (OneFlow's
``matmul(a, b, transpose_a, transpose_b, alpha)``, ``bias_add(x, bias, axis)``, the
``*_like`` ops, fused kernels XLA fuses on its own ...). Any other name is looked up on ``fjax``
and then on ``fjax.nn.functional`` (``flow._C.relu``, ``flow._C.softmax``, ``flow._C.exp``),
where OneFlow's functional API and torch's share a signature.
"""

from __future__ import annotations

import math
import sys

from .nn import functional as _functional


def _fjax():
    return sys.modules["fjax"]  # the top-level namespace, read at call time (it imports this module)


def _F():
    return _functional


def relu(x, inplace: bool = False):
    """OneFlow's ``_C.relu(x, inplace=False)``: ``max(x, 0)``.

    Args:
        x: the input tensor.
        inplace: write the result into ``x``.

    Example:
        >>> fjax._C.relu(fjax.tensor([-1.0, 2.0]))
        tensor([0., 2.], dtype=fjax.float32)
    """
    return _F().relu(x, inplace=inplace)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False, generator=None, *, addend=None):
    """OneFlow's ``_C.dropout``: zero each element with probability ``p`` and scale the rest by
    ``1 / (1 - p)`` (in training), then add ``addend`` if given.

    Args:
        input: the input tensor.
        p: the drop probability.
        training: drop only when True.
        inplace: write the result into ``input``.
        generator: the random generator.
        addend: a tensor added to the result (OneFlow's fused residual add).

    Example:
        >>> fjax._C.dropout(fjax.ones(3), p=0.0)
        tensor([1., 1., 1.], dtype=fjax.float32)
    """
    return _F().dropout(input, p, training, inplace, generator, addend=addend)


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False, alpha: float = 1.0):
    """OneFlow's ``_C.matmul``: ``alpha * op(a) @ op(b)``, ``op`` transposing the last two dims when asked.

    Args:
        a: the left operand.
        b: the right operand.
        transpose_a: use ``a`` with its last two dims swapped.
        transpose_b: use ``b`` with its last two dims swapped.
        alpha: a scale of the product.

    Example:
        >>> fjax._C.matmul(fjax.ones(2, 3), fjax.ones(2, 3), transpose_b=True)
        tensor([[3., 3.],
                [3., 3.]], dtype=fjax.float32)
    """
    if transpose_a:
        a = a.transpose(-2, -1)
    if transpose_b:
        b = b.transpose(-2, -1)
    out = _fjax().matmul(a, b)
    return out if alpha == 1.0 else out * alpha


def add(input, other, *, alpha=1, inplace: bool = False):
    """OneFlow's ``_C.add``: ``input + alpha * other`` (written into ``input`` with ``inplace``).

    Args:
        input: a tensor (or a number when ``other`` is a tensor).
        other: a tensor or a number.
        alpha: the scale of ``other``.
        inplace: write the result into ``input``.

    Example:
        >>> fjax._C.add(fjax.ones(2), fjax.ones(2), alpha=2)
        tensor([3., 3.], dtype=fjax.float32)
    """
    if inplace:
        return input.add_(other, alpha=alpha)
    return _fjax().add(input, other, alpha=alpha)


def bias_add(x, bias, axis: int = 1):
    """OneFlow's ``_C.bias_add``: add the 1-D ``bias`` along dim ``axis`` of ``x``.

    Args:
        x: the input tensor.
        bias: a 1-D tensor of size ``x.shape[axis]``.
        axis: the dim ``bias`` runs along.

    Example:
        >>> fjax._C.bias_add(fjax.zeros(2, 3), fjax.tensor([1.0, 2.0, 3.0]), axis=1)
        tensor([[1., 2., 3.],
                [1., 2., 3.]], dtype=fjax.float32)
    """
    axis = axis % x.ndim
    if bias.ndim != 1 or bias.shape[0] != x.shape[axis]:
        raise ValueError(f"_C.bias_add: bias of shape {tuple(bias.shape)} doesn't match dim {axis} of {tuple(x.shape)}")
    return x + bias.reshape([-1 if d == axis else 1 for d in range(x.ndim)])


def identity(x):
    """OneFlow's ``_C.identity``: ``x`` itself, as a new tensor in the graph.

    Args:
        x: the input tensor.

    Example:
        >>> fjax._C.identity(fjax.tensor([1.0]))
        tensor([1.], dtype=fjax.float32)
    """
    return x.view_as(x)


def reshape_like(x, like):
    """OneFlow's ``_C.reshape_like``: ``x`` reshaped to ``like``'s shape.

    Args:
        x: the input tensor.
        like: a tensor whose shape to take.

    Example:
        >>> fjax._C.reshape_like(fjax.arange(6), fjax.zeros(2, 3)).shape
        fjax.Size([2, 3])
    """
    return x.reshape(tuple(like.shape))


def reduce_sum_like(x, like, axis=None):
    """OneFlow's ``_C.reduce_sum_like``: ``x`` summed over ``axis`` (by default: the dims that
    broadcasting ``like`` to ``x`` added or stretched) down to ``like``'s shape.

    Args:
        x: the input tensor.
        like: a tensor whose shape to reduce to.
        axis: the dims to sum over.

    Example:
        >>> fjax._C.reduce_sum_like(fjax.ones(2, 3), fjax.zeros(3), [0])
        tensor([2., 2., 2.], dtype=fjax.float32)
    """
    if axis is None:
        lead = x.ndim - like.ndim
        axis = list(range(lead)) + [lead + i for i, s in enumerate(like.shape) if s == 1 and x.shape[lead + i] != 1]
    out = x.sum(dim=list(axis)) if len(axis) else x
    return out.reshape(tuple(like.shape))


def gelu_with_approximate(x, approximate: str = "none"):
    """OneFlow's ``_C.gelu_with_approximate``: GELU, exact (``"none"``) or with the tanh approximation.

    Args:
        x: the input tensor.
        approximate: ``"none"`` or ``"tanh"``.

    Example:
        >>> fjax._C.gelu_with_approximate(fjax.tensor([0.0, 1.0]), "tanh")
        tensor([0.0000, 0.8412], dtype=fjax.float32)
    """
    return _F().gelu(x, approximate=approximate)


def quick_gelu(x):
    """OneFlow's ``_C.quick_gelu`` (also ``nn.functional.quick_gelu``): ``x * sigmoid(1.702 * x)``.

    Args:
        x: the input tensor.

    Example:
        >>> fjax._C.quick_gelu(fjax.tensor([0.0, 1.0]))
        tensor([0.0000, 0.8458], dtype=fjax.float32)
    """
    return x * (x * 1.702).sigmoid()


def square_relu(x):
    """OneFlow's ``_C.square_relu`` (also ``nn.functional.square_relu``): ``relu(x) ** 2``.

    Args:
        x: the input tensor.

    Example:
        >>> fjax._C.square_relu(fjax.tensor([-1.0, 3.0]))
        tensor([0., 9.], dtype=fjax.float32)
    """
    return _F().relu(x) ** 2


def rms_norm(x, weight=None, normalized_shape=None, epsilon: float = 1e-6):
    """OneFlow's ``_C.rms_norm``: ``x / sqrt(mean(x ** 2) + epsilon)`` over the trailing
    ``normalized_shape`` dims, times ``weight``.

    Args:
        x: the input tensor.
        weight: the elementwise scale (or None).
        normalized_shape: the trailing dims to normalise over.
        epsilon: added to the mean square.

    Example:
        >>> fjax._C.rms_norm(fjax.tensor([[3.0, 4.0]]), None, (2,), 0.0)
        tensor([[0.8485, 1.1314]], dtype=fjax.float32)
    """
    if normalized_shape is None:
        raise TypeError("_C.rms_norm: normalized_shape is required")
    return _F().rms_norm(x, tuple(normalized_shape), weight, epsilon)


def layer_norm(x, begin_norm_axis: int, begin_params_axis: int, epsilon: float):
    """OneFlow's ``_C.layer_norm``: normalise over the dims from ``begin_norm_axis`` on, without affine.

    Args:
        x: the input tensor.
        begin_norm_axis: the first dim normalised over.
        begin_params_axis: the first dim of the (absent) parameters.
        epsilon: added to the variance.

    Example:
        >>> fjax._C.layer_norm(fjax.tensor([[1.0, 3.0]]), 1, 1, 1e-5)
        tensor([[-1.0000,  1.0000]], dtype=fjax.float32)
    """
    return _F().layer_norm(x, tuple(x.shape[begin_norm_axis % x.ndim :]), eps=epsilon)


def layer_norm_affine(x, gamma, beta, begin_norm_axis: int, begin_params_axis: int, epsilon: float):
    """OneFlow's ``_C.layer_norm_affine``: layer norm over the dims from ``begin_norm_axis`` on,
    then ``* gamma + beta`` (shaped as the dims from ``begin_params_axis`` on).

    Args:
        x: the input tensor.
        gamma: the scale.
        beta: the shift.
        begin_norm_axis: the first dim normalised over.
        begin_params_axis: the first dim the parameters cover.
        epsilon: added to the variance.

    Example:
        >>> fjax._C.layer_norm_affine(fjax.tensor([[1.0, 3.0]]), fjax.ones(2) * 2, fjax.zeros(2), 1, 1, 1e-5)
        tensor([[-2.0000,  2.0000]], dtype=fjax.float32)
    """
    if begin_norm_axis % x.ndim != begin_params_axis % x.ndim:
        raise NotImplementedError("_C.layer_norm_affine: begin_params_axis != begin_norm_axis is not supported")
    return _F().layer_norm(x, tuple(x.shape[begin_norm_axis % x.ndim :]), gamma, beta, epsilon)


def group_norm(
    x, gamma, beta, affine: bool, num_groups: int, epsilon: float, data_format="channels_first", activation="none"
):
    """OneFlow's ``_C.group_norm``: ``F.group_norm`` with OneFlow's argument order, then an
    optional ``"silu"`` activation.

    Args:
        x: the input tensor, ``(N, C, ...)``.
        gamma: the per-channel scale (with ``affine``).
        beta: the per-channel shift (with ``affine``).
        affine: whether to apply ``gamma`` and ``beta``.
        num_groups: the number of channel groups.
        epsilon: added to the variance.
        data_format: ``"channels_first"`` (``"channels_last"`` is not supported).
        activation: ``"none"`` or ``"silu"``.

    Example:
        >>> fjax._C.group_norm(fjax.tensor([[1.0, 3.0]]), None, None, False, 1, 1e-5)
        tensor([[-1.0000,  1.0000]], dtype=fjax.float32)
    """
    if data_format != "channels_first":
        raise NotImplementedError(f"_C.group_norm: data_format={data_format!r} is not supported")
    if activation not in ("none", "silu"):
        raise ValueError(f"_C.group_norm: activation must be 'none' or 'silu', got {activation!r}")
    out = _F().group_norm(x, num_groups, gamma if affine else None, beta if affine else None, epsilon)
    return _F().silu(out) if activation == "silu" else out


def trunc_divide(input, other):
    """OneFlow's ``_C.trunc_divide``: ``input / other`` rounded toward zero.

    Args:
        input: the dividend.
        other: the divisor.

    Example:
        >>> fjax._C.trunc_divide(fjax.tensor([-7.0, 7.0]), 2)
        tensor([-3.,  3.], dtype=fjax.float32)
    """
    return _fjax().div(input, other, rounding_mode="trunc")


def fused_glu(x, w, b=None, v=None, c=None, activation: str = "none"):
    """OneFlow's ``_C.fused_glu``: ``act(x @ w.T + b) * (x @ v.T + c)``; without ``v`` the two
    halves of ``x @ w.T + b`` (split on the last dim) play both parts.

    Args:
        x: the input, ``(..., in)``.
        w: the weight, ``(out, in)`` (``(2 * out, in)`` without ``v``).
        b: the bias of ``w``.
        v: the weight of the gate, ``(out, in)``.
        c: the bias of ``v``.
        activation: ``"none"``, ``"sigmoid"``, ``"relu"``, ``"gelu"``, ``"fast_gelu"`` or ``"silu"``.

    Example:
        >>> fjax._C.fused_glu(fjax.ones(1, 2), fjax.ones(2, 2)).shape
        fjax.Size([1, 1])
    """
    F = _F()
    acts = {
        "none": lambda t: t,
        "sigmoid": F.sigmoid,
        "relu": F.relu,
        "gelu": F.gelu,
        "fast_gelu": lambda t: F.gelu(t, approximate="tanh"),
        "silu": F.silu,
    }
    if activation not in acts:
        raise ValueError(f"_C.fused_glu: activation must be one of {sorted(acts)}, got {activation!r}")
    h = F.linear(x, w, b)
    if v is None:
        h, g = h.chunk(2, dim=-1)
    else:
        g = F.linear(x, v, c)
    return acts[activation](h) * g


def host_scalar_add_by_tensor(x, scalar):
    """OneFlow's ``_C.host_scalar_add_by_tensor``: ``x + scalar`` for a one-element ``scalar`` tensor.

    Args:
        x: the input tensor.
        scalar: a one-element tensor.

    Example:
        >>> fjax._C.host_scalar_add_by_tensor(fjax.zeros(2), fjax.tensor([3.0]))
        tensor([3., 3.], dtype=fjax.float32)
    """
    if math.prod(scalar.shape) != 1:
        raise ValueError(f"_C.host_scalar_add_by_tensor: scalar must have one element, got shape {tuple(scalar.shape)}")
    return x + scalar.reshape(())


def __getattr__(name: str):
    """Any other ``flow._C.<name>``: fjax's public function of that name (top level, then
    ``nn.functional``), where OneFlow's functional API and torch's share a signature."""
    if name.startswith("__"):
        raise AttributeError(name)
    for namespace in (_fjax(), _F()):
        fn = getattr(namespace, name, None)
        if callable(fn) and not isinstance(fn, type):
            return fn
    raise AttributeError(f"fjax._C has no function {name!r} (OneFlow's functional op is not provided by fjax)")
