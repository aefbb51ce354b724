"""``fjax.cuda``: torch.cuda's queries over JAX's GPU backend.

Every answer comes from JAX: a GPU is available when ``jax.devices("gpu")`` lists one, memory
figures come from the device's XLA allocator statistics. On a machine without a GPU the queries
answer truthfully (``is_available()`` is False, ``device_count()`` is 0, memory figures are 0) and
the functions that need a GPU raise ``RuntimeError``, as torch's do.
"""

from __future__ import annotations

import collections
import os
import sys
import time
import warnings

import jax

from . import random as _random
from .amp._device import cuda as amp  # fjax.cuda.amp: torch.cuda.amp (autocast, GradScaler)
from .device import device as _device

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_stream",
    "default_stream",
    "device",
    "device_of",
    "get_arch_list",
    "get_device_properties",
    "get_per_process_memory_fraction",
    "get_rng_state",
    "get_rng_state_all",
    "get_sync_debug_mode",
    "has_half",
    "init",
    "initial_seed",
    "is_tf32_supported",
    "max_memory_cached",
    "max_memory_reserved",
    "mem_get_info",
    "memory_cached",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "memory_usage",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "seed",
    "seed_all",
    "set_per_process_memory_fraction",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "set_sync_debug_mode",
    "stream",
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

has_half = True  # torch.cuda.has_half: half precision works wherever a GPU does


class _NoGPUError(RuntimeError, AssertionError):
    """No GPU: a RuntimeError (fjax's convention and torch's with CUDA but no device) and an
    AssertionError (what torch's CPU-only build raises: "Torch not compiled with CUDA enabled")."""


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
        raise _NoGPUError("fjax.cuda: no GPU is available (JAX has no gpu backend on this machine)")
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


# -- streams and events ------------------------------------------------------------------------
# XLA schedules a device's work on its own streams and keeps it in program order, so fjax has one
# stream per GPU: a ``Stream`` names it, ``stream(s)`` contexts are accepted, and waits between
# streams are already satisfied.


class Stream:
    """A GPU's work queue. XLA runs each GPU's work in program order on its own streams, so every
    ``Stream`` of a device stands for that one ordered queue: work issued "on" it is ordered with
    all other work, ``synchronize`` waits for all of it. Raises ``RuntimeError`` without a GPU, as torch.

    Args:
        device: the GPU (index, ``"cuda:i"`` or ``fjax.device``); default the current one.
        priority: accepted for torch's signature (XLA chooses the priorities).
        **kwargs: torch's ``stream_id``/``device_index``/``device_type`` are accepted and ignored.

    Example:
        >>> if fjax.cuda.is_available():
        ...     s = fjax.cuda.Stream()
        ...     with fjax.cuda.stream(s):
        ...         y = fjax.ones(2, device="cuda") * 2
        ...     s.synchronize()
    """

    def __init__(self, device=None, priority: int = 0, **kwargs):
        if not is_available():
            raise _NoGPUError("fjax.cuda.Stream requires a GPU (JAX has no gpu backend on this machine)")
        self.device_index = _index(device)
        _gpu(self.device_index)
        self.priority = priority
        self.cuda_stream = 0

    @property
    def device(self):
        """The stream's device, ``fjax.device('cuda', i)``."""
        return _device("cuda", self.device_index)

    def query(self) -> bool:
        """Whether all work issued so far is done.

        Example:
            >>> fjax.cuda.Stream().query() if fjax.cuda.is_available() else True
            True
        """
        return all(a.is_ready() for a in jax.live_arrays())

    def synchronize(self) -> None:
        """Wait for all work issued so far (``fjax.cuda.synchronize``).

        Example:
            >>> fjax.cuda.Stream().synchronize() if fjax.cuda.is_available() else None
        """
        synchronize(self.device_index)

    def wait_event(self, event: "Event") -> None:
        """Make later work wait for ``event``: already so, XLA keeps the device's work in order.

        Args:
            event: the recorded ``Event``.

        Example:
            >>> if fjax.cuda.is_available():
            ...     fjax.cuda.Stream().wait_event(fjax.cuda.Event().record())
        """

    def wait_stream(self, stream: "Stream") -> None:
        """Make later work wait for ``stream``'s: already so, XLA keeps the device's work in order.

        Args:
            stream: the stream to wait for.

        Example:
            >>> if fjax.cuda.is_available():
            ...     fjax.cuda.Stream().wait_stream(fjax.cuda.current_stream())
        """

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record ``event`` (a new ``Event`` if None) at this point of the stream and return it.

        Args:
            event: the event to record.

        Example:
            >>> fjax.cuda.Stream().record_event().query() if fjax.cuda.is_available() else True
            True
        """
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other.device_index == self.device_index

    def __hash__(self) -> int:
        return hash(("cuda", self.device_index))

    def __repr__(self) -> str:
        return f"<fjax.cuda.Stream device=cuda:{self.device_index} cuda_stream=0x0>"


class Event:
    """A marker in a GPU's work: ``record()`` it, then ``elapsed_time`` between two events measures
    the device time in between (``record`` waits for the work issued before it, so the times are
    the work's, not its dispatch's). Raises ``RuntimeError`` without a GPU, as torch.

    Args:
        enable_timing: allow ``elapsed_time``.
        blocking: accepted (``synchronize`` always waits).
        interprocess: sharing events between processes is not supported (``NotImplementedError``).
        external: accepted for torch's signature.

    Example:
        >>> if fjax.cuda.is_available():
        ...     start, end = fjax.cuda.Event(enable_timing=True), fjax.cuda.Event(enable_timing=True)
        ...     start.record()
        ...     y = fjax.ones(64, 64, device="cuda") @ fjax.ones(64, 64, device="cuda")
        ...     end.record()
        ...     end.synchronize()
        ...     ms = start.elapsed_time(end)
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, external=False):
        if not is_available():
            raise _NoGPUError("fjax.cuda.Event requires a GPU (JAX has no gpu backend on this machine)")
        if interprocess:
            raise NotImplementedError("fjax.cuda.Event: interprocess=True (IPC events) is not supported")
        self.enable_timing, self.blocking = enable_timing, blocking
        self._time: float | None = None

    def record(self, stream: Stream | None = None) -> "Event":
        """Mark this point: waits for the work issued so far, then notes the time.

        Args:
            stream: the stream to record on (default the current one).

        Example:
            >>> fjax.cuda.Event().record().query() if fjax.cuda.is_available() else True
            True
        """
        synchronize()
        self._time = time.perf_counter()
        return self

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream``'s later work wait for this event: already so (XLA keeps work in order).

        Args:
            stream: the waiting stream.

        Example:
            >>> fjax.cuda.Event().record().wait() if fjax.cuda.is_available() else None
        """

    def query(self) -> bool:
        """Whether the work before the recorded point is done (always, once recorded).

        Example:
            >>> fjax.cuda.Event().query() if fjax.cuda.is_available() else True
            True
        """
        return True

    def synchronize(self) -> None:
        """Wait for the work before the recorded point (done by ``record`` already).

        Example:
            >>> fjax.cuda.Event().record().synchronize() if fjax.cuda.is_available() else None
        """

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and ``end_event``, both recorded with ``enable_timing``.

        Args:
            end_event: the later event.

        Example:
            >>> if fjax.cuda.is_available():
            ...     a, b = fjax.cuda.Event(enable_timing=True), fjax.cuda.Event(enable_timing=True)
            ...     ms = a.record().elapsed_time(b.record())
        """
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events must be created with enable_timing=True")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Event.elapsed_time: both events must be recorded first")
        return (end_event._time - self._time) * 1000.0

    def ipc_handle(self):
        """Not supported: events cannot be shared between processes.

        Example:
            >>> try:  # NotImplementedError with a GPU, RuntimeError (no Event at all) without one
            ...     fjax.cuda.Event().ipc_handle()
            ... except (NotImplementedError, RuntimeError):
            ...     print("unsupported")
            unsupported
        """
        raise NotImplementedError("fjax.cuda.Event.ipc_handle: IPC events are not supported")

    @classmethod
    def from_ipc_handle(cls, device, handle):
        """Not supported: events cannot be shared between processes.

        Args:
            device: unused.
            handle: unused.

        Example:
            >>> fjax.cuda.Event.from_ipc_handle(0, b"")
            Traceback (most recent call last):
            NotImplementedError: fjax.cuda.Event.from_ipc_handle: IPC events are not supported
        """
        raise NotImplementedError("fjax.cuda.Event.from_ipc_handle: IPC events are not supported")


_streams: dict = {}  # device index -> the Stream set_stream chose


def current_stream(device=None) -> Stream:
    """The stream work is issued on (the one ``set_stream``/``stream()`` chose, else the default);
    raises ``RuntimeError`` without a GPU.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> fjax.cuda.current_stream() == fjax.cuda.default_stream() if fjax.cuda.is_available() else True
        True
    """
    i = _index(device)
    return _streams.get(i) or default_stream(i)


def default_stream(device=None) -> Stream:
    """The GPU's default stream; raises ``RuntimeError`` without a GPU.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> fjax.cuda.default_stream().device.type if fjax.cuda.is_available() else "cuda"
        'cuda'
    """
    return Stream(device)


def set_stream(stream: Stream) -> None:
    """Make ``stream`` the current stream of its device; None does nothing (as in torch).

    Args:
        stream: the ``Stream``.

    Example:
        >>> fjax.cuda.set_stream(None)
    """
    if stream is None:
        return
    if not isinstance(stream, Stream):
        raise TypeError(f"fjax.cuda.set_stream: expected a fjax.cuda.Stream, got {type(stream).__name__}")
    _streams[stream.device_index] = stream


class StreamContext:
    """Within the block, ``stream`` is the current stream of its device (restored after); a None
    stream makes it do nothing.

    Args:
        stream: the ``Stream``, or None.

    Example:
        >>> with fjax.cuda.StreamContext(None):
        ...     y = fjax.ones(2) + 1
    """

    def __init__(self, stream: Stream | None):
        self.stream = stream
        self._prior = None

    def __enter__(self):
        if self.stream is not None:
            self._prior = _streams.get(self.stream.device_index)
            set_stream(self.stream)

    def __exit__(self, *exc):
        if self.stream is not None:
            if self._prior is None:
                _streams.pop(self.stream.device_index, None)
            else:
                _streams[self.stream.device_index] = self._prior


def stream(stream: Stream | None) -> StreamContext:
    """``with fjax.cuda.stream(s):`` issues the block's work on ``s`` (a ``StreamContext``); None
    does nothing.

    Args:
        stream: the ``Stream``, or None.

    Example:
        >>> with fjax.cuda.stream(None):
        ...     y = fjax.ones(2) + 1
    """
    return StreamContext(stream)


# -- device selection ----------------------------------------------------------------------------


class device:  # noqa: N801 - torch's name
    """Within the block, ``device`` is the current GPU (``set_device``), restored after; a negative
    index (or None) does nothing. Entering it for a GPU raises ``RuntimeError`` without one.

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``.

    Example:
        >>> with fjax.cuda.device(-1):
        ...     y = fjax.ones(2)
    """

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0:
            set_device(self.prev_idx)
        return False


class device_of(device):  # noqa: N801 - torch's name
    """``fjax.cuda.device`` of the GPU a tensor lives on; for a CPU tensor it does nothing.

    Args:
        obj: the tensor.

    Example:
        >>> with fjax.cuda.device_of(fjax.ones(2)) as d:
        ...     pass
        >>> fjax.cuda.device_of(fjax.ones(2)).idx
        -1
    """

    def __init__(self, obj):
        d = obj.device
        super().__init__((d.index or 0) if d.type == "cuda" else -1)


def init() -> None:
    """Start the GPU backend (JAX starts it on first use, so this only checks there is a GPU);
    raises ``RuntimeError`` without one.

    Example:
        >>> fjax.cuda.init() if fjax.cuda.is_available() else None
    """
    _gpu()


# -- device properties -----------------------------------------------------------------------------


class _CudaDeviceProperties:
    """What ``get_device_properties`` reports about a GPU."""

    def __init__(self, d):
        self.name = d.device_kind
        self.major, self.minor = get_device_capability(d.id)
        self.multi_processor_count = int(getattr(d, "core_count", 0) or 0)
        self.total_memory = int((d.memory_stats() or {}).get("bytes_limit", 0))
        self.is_integrated = False
        self.is_multi_gpu_board = False

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1024 * 1024)}MB, multi_processor_count={self.multi_processor_count})"
        )


def get_device_properties(device=None) -> _CudaDeviceProperties:
    """The GPU's ``name``, compute capability (``major``, ``minor``), ``multi_processor_count`` and
    ``total_memory`` (the bytes XLA's allocator may use); raises ``RuntimeError`` without a GPU.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> p = fjax.cuda.get_device_properties() if fjax.cuda.is_available() else None
        >>> p is None or p.major >= 1
        True
    """
    return _CudaDeviceProperties(_gpu(device))


def get_arch_list() -> list[str]:
    """The GPU architectures this process can run code for (``["sm_90"]`` on an H100: XLA compiles
    for the GPUs present); ``[]`` without a GPU, as torch's CPU build answers.

    Example:
        >>> fjax.cuda.get_arch_list() == [] or fjax.cuda.is_available()
        True
    """
    archs = []
    for i in range(device_count()):
        major, minor = get_device_capability(i)
        if f"sm_{major}{minor}" not in archs:
            archs.append(f"sm_{major}{minor}")
    return archs


def is_tf32_supported() -> bool:
    """Whether the GPU has TF32 matmuls (compute capability 8.0, Ampere, or later); False without one.

    Example:
        >>> fjax.cuda.is_tf32_supported() <= fjax.cuda.is_available()
        True
    """
    return is_available() and get_device_capability() >= (8, 0)


# -- random numbers --------------------------------------------------------------------------------
# fjax's GPUs draw from its one default generator (``fjax.default_generator``).


def __getattr__(name):
    if name == "default_generators":  # torch.cuda.default_generators: one per GPU, () without one
        return tuple(_random.default_generator for _ in _gpus())
    from ._missing import missing

    raise missing("torch.cuda", name)  # names the torch name under mock_torch


def seed() -> None:
    """Reseed the GPUs' random numbers from the clock (fjax's shared default generator); without a
    GPU it does nothing, as torch's does.

    Example:
        >>> fjax.cuda.seed()
    """
    if is_available():
        _random.seed()


def seed_all() -> None:
    """``seed`` for every GPU (they share one default generator in fjax).

    Example:
        >>> fjax.cuda.seed_all()
    """
    seed()


def initial_seed() -> int:
    """The seed of the GPUs' random numbers (``fjax.initial_seed()``); raises ``RuntimeError``
    without a GPU.

    Example:
        >>> fjax.cuda.initial_seed() == fjax.initial_seed() if fjax.cuda.is_available() else True
        True
    """
    _gpu()
    return _random.initial_seed()


def get_rng_state(device="cuda"):
    """The GPU's random-number state (``fjax.get_rng_state()``: GPUs share the default generator);
    raises ``RuntimeError`` without a GPU.

    Args:
        device: the GPU.

    Example:
        >>> s = fjax.cuda.get_rng_state() if fjax.cuda.is_available() else None
    """
    _gpu(device)
    return _random.get_rng_state()


def get_rng_state_all() -> list:
    """``get_rng_state`` of every GPU; ``[]`` without one.

    Example:
        >>> len(fjax.cuda.get_rng_state_all()) == fjax.cuda.device_count()
        True
    """
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a state from ``get_rng_state``; without a GPU it does nothing, as torch's does.

    Args:
        new_state: the state tensor.
        device: the GPU.

    Example:
        >>> fjax.cuda.set_rng_state(fjax.get_rng_state())
    """
    if is_available():
        _gpu(device)
        _random.set_rng_state(new_state)


def set_rng_state_all(new_states) -> None:
    """``set_rng_state`` for each GPU in turn.

    Args:
        new_states: one state per GPU.

    Example:
        >>> fjax.cuda.set_rng_state_all(fjax.cuda.get_rng_state_all())
    """
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


_sync_debug = [0]


def get_sync_debug_mode() -> int:
    """The synchronizing-operation debug mode: always 0 (off) in fjax; raises ``RuntimeError``
    without a GPU, as torch.

    Example:
        >>> fjax.cuda.get_sync_debug_mode() if fjax.cuda.is_available() else 0
        0
    """
    _gpu()
    return _sync_debug[0]


def set_sync_debug_mode(debug_mode) -> None:
    """Set the synchronizing-operation debug mode: only 0/``"default"`` (off) is supported (JAX does not
    report which operations synchronize); raises ``RuntimeError`` without a GPU.

    Args:
        debug_mode: 0 or ``"default"``; 1/``"warn"`` and 2/``"error"`` raise ``NotImplementedError``.

    Example:
        >>> fjax.cuda.set_sync_debug_mode(0) if fjax.cuda.is_available() else None
    """
    _gpu()
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(f"set_sync_debug_mode: invalid value of debug_mode, expected one of {list(modes)}")
        debug_mode = modes[debug_mode]
    if debug_mode != 0:
        raise NotImplementedError(f"fjax.cuda.set_sync_debug_mode: debug_mode={debug_mode} (warn/error on syncs)")
    _sync_debug[0] = 0


# -- memory ----------------------------------------------------------------------------------------


def _nested_stats(device) -> dict:
    stats = _stats(device)
    if not stats:
        return {}
    in_use, peak = int(stats.get("bytes_in_use", 0)), int(stats.get("peak_bytes_in_use", 0))
    reserved = memory_reserved(device)
    peak_reserved = int(stats.get("peak_pool_bytes", stats.get("peak_bytes_reserved", max(reserved, peak))))

    def pools(current, peak):
        return {"all": {"current": current, "peak": peak}}

    return {
        "active_bytes": pools(in_use, peak),
        "allocated_bytes": pools(in_use, peak),
        "allocation": {"all": {"allocated": int(stats.get("num_allocs", 0))}},
        "largest_alloc_size": int(stats.get("largest_alloc_size", 0)),
        "num_alloc_retries": 0,
        "num_ooms": 0,
        "reserved_bytes": pools(reserved, peak_reserved),
    }


def memory_stats_as_nested_dict(device=None) -> dict:
    """``memory_stats`` as nested dicts (``{"allocated_bytes": {"all": {"current": ...}}}``);
    ``{}`` without a GPU.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> fjax.cuda.memory_stats_as_nested_dict() == {} or fjax.cuda.is_available()
        True
    """
    return _nested_stats(device)


def memory_stats(device=None) -> dict:
    """The GPU allocator's statistics under torch's flat keys, sorted (``"allocated_bytes.all.current"``,
    ``"allocated_bytes.all.peak"``, ``"reserved_bytes.all.current"``, ``"num_ooms"``, ...), from XLA's
    allocator; an empty ``OrderedDict`` without a GPU, as torch's.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> fjax.cuda.memory_stats() == {} or "allocated_bytes.all.current" in fjax.cuda.memory_stats()
        True
    """
    flat = []

    def walk(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            flat.append((prefix, obj))

    walk("", _nested_stats(device))
    return collections.OrderedDict(sorted(flat))


def max_memory_reserved(device=None) -> int:
    """The peak of ``memory_reserved`` since the process started (XLA cannot reset it); 0 without a GPU.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> fjax.cuda.max_memory_reserved() >= fjax.cuda.memory_reserved()
        True
    """
    return int(memory_stats(device).get("reserved_bytes.all.peak", 0))


def memory_cached(device=None) -> int:
    """Deprecated name of ``memory_reserved`` (warns ``FutureWarning``, as torch).

    Args:
        device: the GPU; default the current one.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.cuda.memory_cached() == fjax.cuda.memory_reserved()
        True
    """
    warnings.warn(
        "`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`", FutureWarning, stacklevel=2
    )
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated name of ``max_memory_reserved`` (warns ``FutureWarning``, as torch).

    Args:
        device: the GPU; default the current one.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.cuda.max_memory_cached() == fjax.cuda.max_memory_reserved()
        True
    """
    warnings.warn(
        "`torch.cuda.max_memory_cached` has been renamed to `torch.cuda.max_memory_reserved`",
        FutureWarning,
        stacklevel=2,
    )
    return max_memory_reserved(device)


def reset_accumulated_memory_stats(device=None) -> None:
    """Accepted for torch's API; does nothing: XLA's allocator counters cannot be reset.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> fjax.cuda.reset_accumulated_memory_stats()
    """


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated spelling of ``reset_peak_memory_stats`` (warns ``FutureWarning``, as torch); XLA's
    peaks cannot be reset, so it changes nothing.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.cuda.reset_max_memory_allocated()
    """
    warnings.warn(
        "torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, which resets /all/ "
        "peak memory stats.",
        FutureWarning,
        stacklevel=2,
    )
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated spelling of ``reset_peak_memory_stats`` (warns ``FutureWarning``, as torch); XLA's
    peaks cannot be reset, so it changes nothing.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.cuda.reset_max_memory_cached()
    """
    warnings.warn(
        "torch.cuda.reset_max_memory_cached now calls torch.cuda.reset_peak_memory_stats, which resets /all/ "
        "peak memory stats.",
        FutureWarning,
        stacklevel=2,
    )
    reset_peak_memory_stats(device)


def mem_get_info(device=None) -> tuple[int, int]:
    """``(free, total)`` bytes of the GPU memory XLA's allocator manages (its limit, and what live
    arrays leave of it); raises ``RuntimeError`` without a GPU, as torch.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> free, total = fjax.cuda.mem_get_info() if fjax.cuda.is_available() else (0, 0)
        >>> free <= total
        True
    """
    stats = _gpu(device).memory_stats() or {}
    total = int(stats.get("bytes_limit", 0))
    return max(total - int(stats.get("bytes_in_use", 0)), 0), total


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A printable table of the GPU allocator's current and peak figures (``memory_stats``);
    raises ``RuntimeError`` without a GPU.

    Args:
        device: the GPU; default the current one.
        abbreviated: accepted for torch's signature (the table is always short).

    Example:
        >>> "Allocated memory" in fjax.cuda.memory_summary() if fjax.cuda.is_available() else True
        True
    """
    i = _gpu(device).id
    stats = memory_stats(i)

    def fmt(n: int) -> str:
        for unit in ("B", "KiB", "MiB", "GiB"):
            if abs(n) < 1024 or unit == "GiB":
                return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
            n /= 1024
        return str(n)

    rule = "|" + "=" * 60 + "|"
    lines = [
        rule,
        f"| {'fjax CUDA memory summary, device ID ' + str(i):<58} |",
        f"| {'(XLA allocator statistics)':<58} |",
        rule,
        f"| {'Metric':<26}|{'Cur Usage':>15} |{'Peak Usage':>15} |",
        "|" + "-" * 60 + "|",
    ]
    for title, key in (("Allocated memory", "allocated_bytes"), ("GPU reserved memory", "reserved_bytes")):
        cur, peak = stats.get(f"{key}.all.current", 0), stats.get(f"{key}.all.peak", 0)
        lines.append(f"| {title:<26}|{fmt(cur):>15} |{fmt(peak):>15} |")
    lines.append(f"| {'Allocations (total)':<26}|{stats.get('allocation.all.allocated', 0):>15} |{'':>15} |")
    lines.append(rule)
    return "\n".join(lines) + "\n"


def memory_usage(device=None) -> int:
    """The percent of the last sample period during which the GPU's memory was read or written,
    from NVML (``pip install nvidia-ml-py``, as torch requires); raises ``RuntimeError`` without a GPU.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> fjax.cuda.memory_usage() >= 0 if fjax.cuda.is_available() else True  # doctest: +SKIP
        True
    """
    i = _gpu(device).id
    try:
        import pynvml
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError("nvidia-ml-py does not seem to be installed or it can't be imported.") from e
    pynvml.nvmlInit()
    return int(pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(i)).memory)


def set_per_process_memory_fraction(fraction, device=None) -> None:
    """Cap the GPU memory this process may use. XLA fixes its pool when the backend starts, so set
    ``XLA_PYTHON_CLIENT_MEM_FRACTION`` before the first GPU use instead: this validates ``fraction``
    like torch, raises ``RuntimeError`` without a GPU, and ``NotImplementedError`` with one.

    Args:
        fraction: a float in [0, 1].
        device: the GPU; default the current one.

    Example:
        >>> fjax.cuda.set_per_process_memory_fraction(0.5)  # doctest: +SKIP
    """
    _gpu(device)
    if not isinstance(fraction, float):
        raise TypeError("set_per_process_memory_fraction: invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"set_per_process_memory_fraction: invalid fraction value: {fraction}. Allowed range: 0~1")
    raise NotImplementedError(
        "fjax.cuda.set_per_process_memory_fraction: XLA sizes its GPU pool at startup; set the environment "
        f"variable XLA_PYTHON_CLIENT_MEM_FRACTION={fraction} before the first GPU use"
    )


def get_per_process_memory_fraction(device=None) -> float:
    """The share of the GPU's memory XLA's pool may take (``XLA_PYTHON_CLIENT_MEM_FRACTION``, 0.75
    by default); raises ``RuntimeError`` without a GPU.

    Args:
        device: the GPU; default the current one.

    Example:
        >>> 0 < fjax.cuda.get_per_process_memory_fraction() <= 1 if fjax.cuda.is_available() else True
        True
    """
    _gpu(device)
    return float(os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", 0.75))
