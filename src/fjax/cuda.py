"""``fjax.cuda``: torch.cuda's queries over JAX's GPU backend.

Every answer comes from JAX: a GPU is available when ``jax.devices("gpu")`` lists one, memory
figures come from the device's XLA allocator statistics. On a machine without a GPU the queries
answer truthfully (``is_available()`` is False, ``device_count()`` is 0, memory figures are 0) and
the functions that need a GPU raise ``RuntimeError``, as torch's do.
"""

from __future__ import annotations

import sys

import jax

from . import random as _random
from .amp._device import cuda as amp  # fjax.cuda.amp: torch.cuda.amp (autocast, GradScaler)
from .device import device as _device

__all__ = [
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "memory_allocated",
    "memory_reserved",
    "reset_peak_memory_stats",
    "set_device",
    "synchronize",
]

# ``import fjax.cuda.amp`` / ``from torch.cuda.amp import autocast`` (mock_torch): the import system
# wants the parent to look like a package and the submodule in sys.modules
__path__: list = []
sys.modules.setdefault(f"{__name__}.amp", amp)

_current = [0]  # the index set_device chose


def _gpus() -> list:
    try:
        return list(jax.devices("gpu"))
    except RuntimeError:  # no GPU backend in this jaxlib, or none initialised
        return []


def _index(device) -> int:
    if device is None:
        return _current[0]
    if isinstance(device, int):
        return device
    d = _device(device)
    if d.type != "cuda":
        raise ValueError(f"fjax.cuda: expected a cuda device, got {d}")
    return _current[0] if d.index is None else d.index


def _gpu(device=None):
    gpus = _gpus()
    if not gpus:
        raise RuntimeError("fjax.cuda: no GPU is available (JAX has no gpu backend on this machine)")
    i = _index(device)
    if not 0 <= i < len(gpus):
        raise RuntimeError(f"fjax.cuda: invalid device index {i}; {len(gpus)} GPU(s) exist")
    return gpus[i]


def is_available() -> bool:
    """Whether JAX has a GPU backend with at least one device, i.e. whether ``"cuda"`` tensors can
    be made; never raises. The same answer as ``fjax.is_cuda_available()``.

    Example::

        >>> dev = "cuda" if fjax.cuda.is_available() else "cpu"
        >>> fjax.ones(2, device=dev).device.type == dev
        True
    """
    return bool(_gpus())


def is_initialized() -> bool:
    """Whether the GPU backend is up: the same as ``is_available()`` (JAX starts it on first use).

    Example::

        >>> fjax.cuda.is_initialized() == fjax.cuda.is_available()
        True
    """
    return is_available()


def device_count() -> int:
    """The number of GPUs JAX sees on this process (0 without a GPU).

    Example::

        >>> fjax.cuda.device_count() >= 0
        True
    """
    return len(_gpus())


def current_device() -> int:
    """The index of the selected GPU (0 unless ``set_device`` chose another); raises
    ``RuntimeError`` without a GPU, as torch does.

    Example::

        >>> fjax.cuda.current_device() if fjax.cuda.is_available() else 0
        0
    """
    _gpu()
    return _current[0]


def set_device(device) -> None:
    """Select the GPU that ``current_device()`` and the device-less queries refer to (an int,
    ``"cuda:1"`` or a ``fjax.device``); a negative index does nothing, as in torch. fjax's
    ``device="cuda"`` placement still means GPU 0.

    Example::

        >>> fjax.cuda.set_device(-1)  # no-op
    """
    i = _index(device)
    if i >= 0:
        _gpu(i)
        _current[0] = i


def get_device_name(device=None) -> str:
    """The GPU's name as JAX reports it (``device_kind``, e.g. ``"NVIDIA H100 80GB HBM3"``);
    raises ``RuntimeError`` without a GPU.

    Example::

        >>> isinstance(fjax.cuda.get_device_name(), str) if fjax.cuda.is_available() else True
        True
    """
    return _gpu(device).device_kind


def get_device_capability(device=None) -> tuple:
    """The GPU's CUDA compute capability as ``(major, minor)``, e.g. ``(9, 0)`` for an H100; raises
    ``RuntimeError`` without a GPU.

    Example::

        >>> len(fjax.cuda.get_device_capability()) if fjax.cuda.is_available() else 2
        2
    """
    cc = str(getattr(_gpu(device), "compute_capability", "0.0"))
    major, _, minor = cc.partition(".")
    return int(major or 0), int(minor or 0)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 can be used on the GPU: False without one. XLA runs bfloat16 on any GPU,
    so with ``including_emulation`` any GPU qualifies; without it, compute capability 8.0
    (Ampere) or later is required, as in torch.

    Example::

        >>> fjax.cuda.is_bf16_supported() == fjax.cuda.is_available()
        True
    """
    if not is_available():
        return False
    return including_emulation or get_device_capability() >= (8, 0)


def manual_seed(seed: int) -> None:
    """Seed the random numbers of GPU tensors. fjax has one default generator for every device, so
    with a GPU this seeds it (as ``fjax.manual_seed`` does); without one it does nothing, as
    torch's ``cuda.manual_seed`` silently does when CUDA is absent.

    Example::

        >>> fjax.cuda.manual_seed(0)
    """
    if is_available():
        _random.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """``manual_seed`` for every GPU: fjax's GPUs share one default generator, so this is the same
    as ``fjax.cuda.manual_seed`` (a no-op without a GPU).

    Example::

        >>> fjax.cuda.manual_seed_all(0)
    """
    manual_seed(seed)


def synchronize(device=None) -> None:
    """Wait until the work JAX has dispatched asynchronously is done: blocks on every live array
    (on any backend, so timing code works on CPU too) and on pending effects. ``device`` is
    accepted for torch's signature; all devices are waited for.

    Example::

        >>> y = fjax.ones(3) * 2
        >>> fjax.cuda.synchronize()
    """
    jax.block_until_ready(jax.live_arrays())
    jax.effects_barrier()


def empty_cache() -> None:
    """Accepted for torch's API; does nothing. JAX frees an array's device buffer as soon as the
    last reference to it goes, and XLA's GPU allocator has no call to hand its pool back, so
    there is no cache to empty; ``memory_reserved()`` does not fall.

    Example::

        >>> fjax.cuda.empty_cache()
    """


def _stats(device) -> dict:
    gpus = _gpus()
    if not gpus:
        return {}
    return _gpu(device).memory_stats() or {}


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory that live arrays occupy (XLA's ``bytes_in_use``); 0 without a GPU or
    when the backend reports no statistics.

    Example::

        >>> fjax.cuda.memory_allocated() >= 0
        True
    """
    return int(_stats(device).get("bytes_in_use", 0))


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` since the process started (XLA's ``peak_bytes_in_use``;
    XLA cannot reset it); 0 without a GPU.

    Example::

        >>> fjax.cuda.max_memory_allocated() >= fjax.cuda.memory_allocated()
        True
    """
    return int(_stats(device).get("peak_bytes_in_use", 0))


def memory_reserved(device=None) -> int:
    """Bytes XLA's GPU allocator holds from the device (its pool, ``pool_bytes``, else
    ``bytes_reserved``, else ``bytes_in_use``); 0 without a GPU.

    Example::

        >>> fjax.cuda.memory_reserved() >= 0
        True
    """
    stats = _stats(device)
    for key in ("pool_bytes", "bytes_reserved", "bytes_in_use"):
        if key in stats:
            return int(stats[key])
    return 0


def reset_peak_memory_stats(device=None) -> None:
    """Accepted for torch's API; does nothing: XLA's peak statistics cannot be reset, so
    ``max_memory_allocated`` stays the peak since the process started.

    Example::

        >>> fjax.cuda.reset_peak_memory_stats()
    """
