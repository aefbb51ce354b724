"""``fjax.accelerator``: torch.accelerator's device-agnostic queries. fjax's one accelerator type
is ``cuda`` (JAX's GPU backend); on a machine without one there is no accelerator, as in torch."""

from __future__ import annotations

import warnings

from . import cuda as _cuda
from .device import device as _device

__all__ = [
    "current_accelerator",
    "current_device_idx",
    "current_device_index",
    "current_stream",
    "device_count",
    "device_index",
    "empty_cache",
    "empty_host_cache",
    "get_device_capability",
    "get_memory_info",
    "is_available",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_device_idx",
    "set_device_index",
    "set_stream",
    "synchronize",
]


def _check() -> None:
    """torch's error when an accelerator is asked for on a machine without one."""
    if not _cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def is_available() -> bool:
    """Whether an accelerator (a GPU JAX can use) is present; never raises.

    Example::

        >>> fjax.accelerator.is_available() == fjax.cuda.is_available()
        True
    """
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as a ``fjax.device`` (``device(type='cuda')``), or None when
    there is none (on CPU, as torch answers). ``check_available`` is accepted for torch's
    signature: fjax only reports an accelerator it can use.

    Example::

        >>> acc = fjax.accelerator.current_accelerator()
        >>> acc is None or acc.type == "cuda"
        True
    """
    return _device("cuda") if _cuda.is_available() else None


def device_count() -> int:
    """The number of accelerator devices (GPUs JAX sees); 0 without one.

    Example::

        >>> fjax.accelerator.device_count() == fjax.cuda.device_count()
        True
    """
    return _cuda.device_count()


def current_device_index() -> int:
    """The index of the selected accelerator device (``fjax.cuda.current_device()``); raises
    ``RuntimeError`` when there is no accelerator.

    Example::

        >>> fjax.accelerator.current_device_index() if fjax.accelerator.is_available() else 0
        0
    """
    _check()
    return _cuda.current_device()


def synchronize(device=None, /) -> None:
    """Wait until the work JAX has dispatched asynchronously is done (``fjax.cuda.synchronize``).

    Example::

        >>> fjax.accelerator.synchronize()
    """
    _cuda.synchronize(device)


def current_device_idx() -> int:
    """Deprecated name of ``current_device_index`` (warns ``FutureWarning``, as torch).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.accelerator.current_device_idx() if fjax.accelerator.is_available() else 0
        0
    """
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /) -> None:
    """Select the accelerator device (``fjax.cuda.set_device``); a negative index does nothing.
    Raises ``RuntimeError`` when there is no accelerator.

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``.

    Example:
        >>> fjax.accelerator.set_device_index(0) if fjax.accelerator.is_available() else None
    """
    _check()
    _cuda.set_device(device)


def set_device_idx(device, /) -> None:
    """Deprecated name of ``set_device_index`` (warns ``FutureWarning``, as torch).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.accelerator.set_device_idx(0) if fjax.accelerator.is_available() else None
    """
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:  # noqa: N801 - torch's name
    """Within the block, ``device`` is the current accelerator device (restored after); None does nothing.

    Args:
        device: the device index, or None.

    Example:
        >>> with fjax.accelerator.device_index(None):
        ...     y = fjax.ones(2)
    """

    def __init__(self, device, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def current_stream(device=None, /):
    """The accelerator stream work is issued on (``fjax.cuda.current_stream``); raises
    ``RuntimeError`` when there is no accelerator.

    Args:
        device: the device; default the current one.

    Example:
        >>> s = fjax.accelerator.current_stream() if fjax.accelerator.is_available() else None
    """
    _check()
    return _cuda.current_stream(device)


def set_stream(stream) -> None:
    """Make ``stream`` (a ``fjax.cuda.Stream``) the current stream of its device.

    Args:
        stream: the stream.

    Example:
        >>> if fjax.accelerator.is_available():
        ...     fjax.accelerator.set_stream(fjax.accelerator.current_stream())
    """
    if not isinstance(stream, _cuda.Stream):
        raise TypeError(f"fjax.accelerator.set_stream: expected a fjax.cuda.Stream, got {type(stream).__name__}")
    _check()
    _cuda.set_stream(stream)


def empty_cache() -> None:
    """``fjax.cuda.empty_cache`` (nothing to release under XLA); raises ``RuntimeError`` when there
    is no accelerator, as torch.

    Example:
        >>> fjax.accelerator.empty_cache() if fjax.accelerator.is_available() else None
    """
    _check()
    _cuda.empty_cache()


def empty_host_cache() -> None:
    """Release cached pinned host memory: XLA keeps no such cache, so nothing to do; raises
    ``RuntimeError`` when there is no accelerator, as torch.

    Example:
        >>> fjax.accelerator.empty_host_cache() if fjax.accelerator.is_available() else None
    """
    _check()


def get_device_capability(device=None, /) -> dict:
    """``{"supported_dtypes": {...}}``: the fjax dtypes tensors on the accelerator can have;
    raises ``RuntimeError`` when there is no accelerator.

    Args:
        device: the device; default the current one.

    Example:
        >>> caps = fjax.accelerator.get_device_capability() if fjax.accelerator.is_available() else None
        >>> caps is None or fjax.float32 in caps["supported_dtypes"]
        True
    """
    _check()
    _cuda._gpu(device)
    from . import dtypes

    names = (
        "bool uint8 uint16 uint32 uint64 int8 int16 int32 int64 float16 bfloat16 float32 float64 complex64 "
        "complex128 float8_e4m3fn float8_e5m2"
    )
    return {"supported_dtypes": {getattr(dtypes, n) for n in names.split() if hasattr(dtypes, n)}}


def get_memory_info(device_index=None, /) -> tuple[int, int]:
    """``(free, total)`` bytes of the accelerator's memory (``fjax.cuda.mem_get_info``); raises
    ``RuntimeError`` when there is no accelerator.

    Args:
        device_index: the device; default the current one.

    Example:
        >>> free, total = fjax.accelerator.get_memory_info() if fjax.accelerator.is_available() else (0, 0)
        >>> free <= total
        True
    """
    _check()
    return _cuda.mem_get_info(device_index)


def _memory(name: str, doc_name: str):
    def query(device_index=None, /):
        _check()
        return getattr(_cuda, name)(device_index)

    query.__name__ = query.__qualname__ = doc_name
    query.__doc__ = f"""``fjax.cuda.{name}`` of the accelerator device; raises ``RuntimeError`` when
    there is no accelerator, as torch.

    Args:
        device_index: the device; default the current one.

    Example:
        >>> r = fjax.accelerator.{doc_name}() if fjax.accelerator.is_available() else None
    """
    return query


memory_allocated = _memory("memory_allocated", "memory_allocated")
max_memory_allocated = _memory("max_memory_allocated", "max_memory_allocated")
memory_reserved = _memory("memory_reserved", "memory_reserved")
max_memory_reserved = _memory("max_memory_reserved", "max_memory_reserved")
memory_stats = _memory("memory_stats", "memory_stats")
reset_accumulated_memory_stats = _memory("reset_accumulated_memory_stats", "reset_accumulated_memory_stats")
reset_peak_memory_stats = _memory("reset_peak_memory_stats", "reset_peak_memory_stats")
