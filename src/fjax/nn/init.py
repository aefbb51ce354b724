"""Parameter initialisation (torch.nn.init): in-place fills drawn from fjax's random generators.

Every function fills ``tensor`` in place (under no_grad, so Parameters can be initialised) and
returns it. Random draws take a key from ``generator`` or from ``fjax.random.default_generator``,
so ``fjax.manual_seed`` makes them reproducible.

Example::

    >>> w = fjax.nn.Parameter(fjax.empty(4, 3))
    >>> fjax.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
"""

from __future__ import annotations

import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd.grad_mode import no_grad
from ..creation import eye as _eye
from ..creation import full_like
from ..errors import OpError
from ..random import Generator, default_generator, flat
from ..tensor import Tensor

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

_LINEAR = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity`` (torch's table).

    Example::

        >>> fjax.nn.init.calculate_gain("leaky_relu", 0.2)
        1.3867504905630728
    """
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _key(generator: Generator | None):
    return (generator or default_generator).next_key()


def _fill(tensor: Tensor, array, name: str) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"init.{name}: expected a fjax Tensor, got {type(tensor).__name__}")
    with no_grad():
        tensor._set_(Tensor._wrap(jnp.asarray(array, tensor._data.dtype)), f"init.{name}")
    return tensor


def _skips_meta(fill):
    """A random fill that leaves a meta tensor as it is: no values, nothing drawn, the generator
    untouched (torch's init on a model built on the meta device)."""

    @functools.wraps(fill)
    def wrapper(tensor, *args, **kwargs):
        if isinstance(tensor, Tensor) and tensor.is_meta:
            _float(tensor, fill.__name__)
            return tensor
        return fill(tensor, *args, **kwargs)

    return wrapper


def _float(tensor: Tensor, name: str):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"init.{name}: expected a fjax Tensor, got {type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise OpError(f"init.{name}: expected a floating point tensor, got {tensor.dtype}")
    return tensor._data.dtype


@_skips_meta
def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples from U(a, b)."""
    dt = _float(tensor, "uniform_")
    return _fill(
        tensor, flat(lambda s: jax.random.uniform(_key(generator), s, dt, a, b), tensor._data.shape), "uniform_"
    )


@_skips_meta
def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples from N(mean, std**2)."""
    dt = _float(tensor, "normal_")
    z = flat(lambda s: jax.random.normal(_key(generator), s, dt), tensor._data.shape)
    return _fill(tensor, mean + std * z, "normal_")


@_skips_meta
def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fill with N(mean, std**2) samples truncated to ``[a, b]`` (absolute bounds, as torch)."""
    dt = _float(tensor, "trunc_normal_")
    key, lo, hi = _key(generator), (a - mean) / std, (b - mean) / std
    z = flat(lambda s: jax.random.truncated_normal(key, lo, hi, s, jnp.float32), tensor._data.shape)
    return _fill(tensor, jnp.clip(mean + std * z, a, b).astype(dt), "trunc_normal_")


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    return _fill(tensor, full_like(tensor, val)._data, "constant_")


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError(f"init.eye_: only 2-d tensors are supported, got shape {tuple(tensor.shape)}")
    return _fill(tensor, _eye(*tensor.shape, dtype=tensor.dtype)._data, "eye_")


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d conv weight so the convolution is the identity (per group)."""
    shape = tuple(tensor.shape)
    if len(shape) not in (3, 4, 5):
        raise ValueError(f"init.dirac_: only 3-, 4- and 5-d tensors are supported, got shape {shape}")
    if shape[0] % groups:
        raise ValueError(f"init.dirac_: dim 0 of shape {shape} must be divisible by groups={groups}")
    out_per_group = shape[0] // groups
    w = np.zeros(shape)
    center = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            w[(g * out_per_group + d, d) + center] = 1
    return _fill(tensor, w, "dirac_")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError(
            f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(got shape {tuple(tensor.shape)})"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init: mode {mode!r} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """U(-b, b) with ``b = gain * sqrt(3 / fan)`` (He et al.); Linear/Conv use ``a=sqrt(5)``."""
    if 0 in tensor.shape:
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """N(0, std**2) with ``std = gain / sqrt(fan)`` (He et al.)."""
    if 0 in tensor.shape:
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


@_skips_meta
def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian one, times ``gain``.

    Tensors with more than 2 dims are flattened to ``(shape[0], -1)`` first, as in torch.
    """
    dt = _float(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(
            f"init.orthogonal_: only tensors with 2 or more dimensions are supported, got shape {tuple(tensor.shape)}"
        )
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = jax.random.normal(_key(generator), (rows, cols), jnp.float32)
    if rows < cols:
        flat = flat.T
    q, r = jnp.linalg.qr(flat)
    q = q * jnp.sign(jnp.diagonal(r))  # makes the distribution uniform (Haar), as torch does
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tensor.shape).astype(dt), "orthogonal_")


@_skips_meta
def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """N(0, std**2) in a 2-d tensor with a ``sparsity`` fraction of each column set to zero."""
    if tensor.ndim != 2:
        raise ValueError(f"init.sparse_: only 2-d tensors are supported, got shape {tuple(tensor.shape)}")
    dt = _float(tensor, "sparse_")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    values = std * jax.random.normal(_key(generator), (rows, cols), dt)
    ranks = jnp.argsort(jnp.argsort(jax.random.uniform(_key(generator), (rows, cols)), axis=0), axis=0)
    return _fill(tensor, jnp.where(ranks < num_zeros, jnp.zeros((), dt), values), "sparse_")


def _make_deprecate(meth):
    """torch's deprecated non-underscore name of an in-place initializer: warns (FutureWarning), then calls it."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    @functools.wraps(meth)
    def deprecated_init(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning, stacklevel=2
        )
        return meth(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated alias of ``{new_name}`` (warns with a FutureWarning, then calls it).\n\n" + (
        meth.__doc__ or ""
    )
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
