"""torch's deprecated per-device AMP namespaces, ``torch.cpu.amp`` and ``torch.cuda.amp``: the
same autocast and GradScaler with the device type fixed (each warns that the ``fjax.amp`` form
is preferred, as torch's ``FutureWarning`` does)."""

from __future__ import annotations

import types
import warnings

from .. import dtypes as _dt
from .autocast_mode import autocast as _autocast
from .autocast_mode import custom_bwd as _custom_bwd
from .autocast_mode import custom_fwd as _custom_fwd
from .grad_scaler import GradScaler as _GradScaler


def _deprecated(what: str, device: str) -> None:
    warnings.warn(
        f"`fjax.{device}.amp.{what}(args...)` is deprecated. "
        f"Please use `fjax.amp.{what}('{device}', args...)` instead.",
        FutureWarning,
        stacklevel=3,
    )


class _CpuAutocast(_autocast):
    """``fjax.cpu.amp.autocast(enabled=True, dtype=fjax.bfloat16, cache_enabled=True)``: the same
    as ``fjax.amp.autocast("cpu", ...)`` (deprecated in torch; warns).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with fjax.amp._device.cpu.autocast():
        ...         fjax.mm(fjax.ones(2, 2), fjax.ones(2, 2)).dtype
        fjax.bfloat16
    """

    def __init__(self, enabled: bool = True, dtype=_dt.bfloat16, cache_enabled: bool = True):
        _deprecated("autocast", "cpu")
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class _CudaAutocast(_autocast):
    """``fjax.cuda.amp.autocast(enabled=True, dtype=fjax.float16, cache_enabled=True)``: the same
    as ``fjax.amp.autocast("cuda", ...)`` (deprecated in torch; warns; disabled without a GPU).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ctx = fjax.cuda.amp.autocast()
        >>> ctx.device
        'cuda'
    """

    def __init__(self, enabled: bool = True, dtype=_dt.float16, cache_enabled: bool = True):
        _deprecated("autocast", "cuda")
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class _CpuGradScaler(_GradScaler):
    """``fjax.cpu.amp.GradScaler(...)``: ``fjax.amp.GradScaler("cpu", ...)`` (deprecated in torch).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.amp._device.cpu.GradScaler(init_scale=4.0).get_scale()
        4.0
    """

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        _deprecated("GradScaler", "cpu")
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


class _CudaGradScaler(_GradScaler):
    """``fjax.cuda.amp.GradScaler(...)``: ``fjax.amp.GradScaler("cuda", ...)`` (deprecated in torch;
    disabled, with a warning, on a machine without a GPU).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     s = fjax.cuda.amp.GradScaler()
        >>> s.is_enabled() == fjax.cuda.is_available()
        True
    """

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        _deprecated("GradScaler", "cuda")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def _namespace(device: str, autocast, grad_scaler) -> types.ModuleType:
    module = types.ModuleType(f"fjax.{device}.amp", f"``torch.{device}.amp``: deprecated aliases of ``fjax.amp``.")
    for cls, name in ((autocast, "autocast"), (grad_scaler, "GradScaler")):
        cls.__name__ = cls.__qualname__ = name
        cls.__module__ = module.__name__
        setattr(module, name, cls)
    module.custom_fwd = lambda fwd=None, **kw: _custom_fwd(fwd, device_type=device, **kw)
    module.custom_bwd = lambda bwd=None: _custom_bwd(bwd, device_type=device)
    module.__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
    return module


cpu = _namespace("cpu", _CpuAutocast, _CpuGradScaler)
"""``torch.cpu.amp``'s namespace (``fjax.cpu.amp`` once ``fjax.cpu`` exists)."""
cuda = _namespace("cuda", _CudaAutocast, _CudaGradScaler)
"""``torch.cuda.amp``'s namespace, ``fjax.cuda.amp``."""
