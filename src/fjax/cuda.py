"""``fjax.cuda``: torch.cuda's queries over JAX's GPU backend.

Every answer comes from JAX: a GPU is available when ``jax.devices("gpu")`` lists one, memory
figures come from the device's XLA allocator statistics. On a machine without a GPU the queries
answer truthfully (``is_available()`` is False, ``device_count()`` is 0) and the functions that
need a GPU raise ``RuntimeError``, as torch's do; the memory queries (``memory_allocated``,
``memory_stats``, ``mem_get_info``, ...) then describe the CPU device fjax's tensors live on.
"""

from __future__ import annotations

import collections
import os
import sys
import time
import warnings

import jax

from . import _lazy, _memory, _nvtx
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
nvtx = sys.modules.setdefault(f"{__name__}.nvtx", _nvtx)  # torch.cuda.nvtx

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
    _lazy.flush()
    jax.block_until_ready(jax.live_arrays())
    jax.effects_barrier()


def empty_cache() -> None:
    """Accepted for torch's API; does nothing. JAX frees an array's device buffer as soon as the
    last reference to it goes, and XLA's GPU allocator has no call to hand its pool back, so
    there is no cache to empty; ``memory_reserved()`` does not fall.

    Example::

        >>> fjax.cuda.empty_cache()
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
# A GPU's figures come from its XLA allocator. Without a GPU the queries describe the CPU device
# fjax's tensors live on: the bytes of its live arrays (``fjax._memory``), so a 64 MB tensor shows
# as 64 MB. There the peak is the largest sample: taken whenever a figure is read and, after
# ``reset_peak_memory_stats``, at the start and end of each backward and after each nn.Graph step.


def _mem_device(device, fn: str):
    """The jax device ``fjax.cuda.<fn>`` reports on: GPU ``device``, or without a GPU the CPU device."""
    if device is None:
        i = _current[0]
    elif isinstance(device, int) and not isinstance(device, bool):
        i = device
    else:
        try:
            d = _device(device)
        except (TypeError, ValueError):
            raise ValueError(
                f"fjax.cuda.{fn}: invalid device {device!r}; expected an index, 'cuda[:i]' or a cuda fjax.device"
            ) from None
        if d.type != "cuda":
            raise ValueError(f"fjax.cuda.{fn}: expected a cuda device, got {device!r}")
        i = _current[0] if d.index is None else d.index
    devices = _gpus() or jax.devices("cpu")
    if not 0 <= i < len(devices):
        have = f"{len(devices)} GPU(s)" if devices[0].platform != "cpu" else f"no GPU and {len(devices)} CPU device(s)"
        raise RuntimeError(f"fjax.cuda.{fn}: invalid device {device!r}; this machine has {have}")
    return devices[i]


def _reserved(dev, stats, used: int, peak: int) -> tuple[int, int]:
    """(current, peak) bytes the allocator holds: XLA's pool on a GPU; on CPU arrays are malloc'ed
    and freed one by one, so what is reserved is what is allocated."""
    if stats is None:
        return used, peak
    cur = next((int(stats[k]) for k in ("pool_bytes", "bytes_reserved") if k in stats), used)
    if _memory.peak_state(dev).xla0 is not None:  # reset: XLA's pool never shrinks, so now is its peak since
        return cur, max(cur, peak)
    return cur, max(int(stats.get("peak_pool_bytes", stats.get("peak_bytes_reserved", cur))), cur, peak)


def _nested(device, fn: str) -> dict:
    dev = _mem_device(device, fn)
    used, count = _memory.current(dev)
    stats = _memory.xla_stats(dev)
    peak = _memory.peak(dev, used, stats)
    reserved, reserved_peak = _reserved(dev, stats, used, peak)
    out = {
        "active_bytes": {"all": {"current": used, "peak": peak}},
        "allocated_bytes": {"all": {"current": used, "peak": peak}},
        "num_alloc_retries": 0,  # XLA's allocators never free a cache and retry, torch's count of that
        "reserved_bytes": {"all": {"current": reserved, "peak": reserved_peak}},
    }
    if count is not None:  # live arrays counted (CPU)
        counts = {"all": {"current": count, "peak": max(_memory.peak_state(dev).count, count)}}
        out["active"] = out["allocation"] = counts
    if stats is not None and "num_allocs" in stats:
        out["allocation"] = {"all": {"allocated": int(stats["num_allocs"]) - _memory.peak_state(dev).allocs0}}
    return out


def memory_allocated(device=None) -> int:
    """Bytes that live tensors occupy on the device: XLA's ``bytes_in_use`` on a GPU; without a GPU,
    the bytes of the live arrays on the CPU device (each buffer once).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> x = fjax.ones(1024)
        >>> fjax.cuda.memory_allocated() >= 4096
        True
    """
    return _memory.current(_mem_device(device, "memory_allocated"))[0]


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` since ``reset_peak_memory_stats`` (or the start). On a GPU it is
    XLA's exact peak; without a GPU it is the largest sample (taken by every memory query, and after a
    reset at each backward's start and end, and before each fused eager segment and nn.Graph step
    with the bytes its compiled program allocates).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> fjax.cuda.max_memory_allocated() >= fjax.cuda.memory_allocated()
        True
    """
    dev = _mem_device(device, "max_memory_allocated")
    used, _ = _memory.current(dev)
    return _memory.peak(dev, used, _memory.xla_stats(dev))


def memory_reserved(device=None) -> int:
    """Bytes the allocator holds: XLA's GPU pool (``pool_bytes``, else ``bytes_reserved``); without a
    GPU the CPU's arrays are allocated one by one, so it equals ``memory_allocated``.

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> fjax.cuda.memory_reserved() >= fjax.cuda.memory_allocated()
        True
    """
    return _nested(device, "memory_reserved")["reserved_bytes"]["all"]["current"]


def max_memory_reserved(device=None) -> int:
    """The peak of ``memory_reserved`` since ``reset_peak_memory_stats`` (or the start).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> fjax.cuda.max_memory_reserved() >= fjax.cuda.memory_reserved()
        True
    """
    return _nested(device, "max_memory_reserved")["reserved_bytes"]["all"]["peak"]


def reset_peak_memory_stats(device=None) -> None:
    """Restart the peaks (``max_memory_allocated``, ``max_memory_reserved``, ``*.peak`` of
    ``memory_stats``) at the current figures. Without a GPU it also arms peak sampling at each
    backward's start and end and at each compiled program (fused eager segments, nn.Graph steps),
    within a time budget: 0.1 s after the reset, then 5% of the time since it.

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> fjax.cuda.reset_peak_memory_stats()
        >>> fjax.cuda.max_memory_allocated() == fjax.cuda.memory_allocated()
        True
    """
    _memory.reset_peak(_mem_device(device, "reset_peak_memory_stats"))


def _deprecated_reset(old: str, device) -> None:
    warnings.warn(
        f"torch.cuda.{old} now calls torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
        FutureWarning,
        stacklevel=3,
    )
    _memory.reset_peak(_mem_device(device, old))


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated spelling of ``reset_peak_memory_stats`` (warns ``FutureWarning``, as torch).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.cuda.reset_max_memory_allocated()
    """
    _deprecated_reset("reset_max_memory_allocated", device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated spelling of ``reset_peak_memory_stats`` (warns ``FutureWarning``, as torch).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.cuda.reset_max_memory_cached()
    """
    _deprecated_reset("reset_max_memory_cached", device)


def reset_accumulated_memory_stats(device=None) -> None:
    """Restart the cumulative counters of ``memory_stats`` (``"allocation.all.allocated"``, from XLA's
    ``num_allocs`` on a GPU). The CPU device has no cumulative counters, so there it changes nothing.

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> fjax.cuda.reset_accumulated_memory_stats()
    """
    dev = _mem_device(device, "reset_accumulated_memory_stats")
    stats = _memory.xla_stats(dev)
    if stats is not None:
        _memory.peak_state(dev).allocs0 = int(stats.get("num_allocs", 0))


def memory_stats_as_nested_dict(device=None) -> dict:
    """``memory_stats`` as nested dicts (``{"allocated_bytes": {"all": {"current": ...}}}``).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> fjax.cuda.memory_stats_as_nested_dict()["allocated_bytes"]["all"]["current"] >= 0
        True
    """
    return _nested(device, "memory_stats_as_nested_dict")


def memory_stats(device=None) -> dict:
    """The allocator's statistics under torch's flat keys, sorted: ``"allocated_bytes.all.current"``
    and ``.peak``, the same for ``"active_bytes"`` and ``"reserved_bytes"``, ``"num_alloc_retries"``
    (always 0: XLA never frees a cache and retries). Without a GPU also ``"allocation.all.current"``
    / ``.peak`` and ``"active.all.*"`` (live arrays); on a GPU ``"allocation.all.allocated"`` (XLA's
    ``num_allocs``). Absent, as fjax cannot know them: the ``large_pool``/``small_pool`` splits,
    ``allocated``/``freed`` byte totals, ``requested_bytes``, ``inactive_split*``, ``segment``,
    ``oversize_*``, ``num_ooms``, ``num_sync_all_streams``, ``num_device_alloc``/``num_device_free``
    and ``max_split_size``.

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> stats = fjax.cuda.memory_stats()
        >>> stats["allocated_bytes.all.current"] <= stats["allocated_bytes.all.peak"]
        True
    """
    flat = []

    def walk(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            flat.append((prefix, obj))

    walk("", _nested(device, "memory_stats"))
    return collections.OrderedDict(sorted(flat))


def memory_cached(device=None) -> int:
    """Deprecated name of ``memory_reserved`` (warns ``FutureWarning``, as torch).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

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
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

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


def _host_memory() -> tuple[int, int]:
    """(available, total) bytes of host memory, within this process's cgroup limit if it has one."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    free = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        free = int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit.isdigit() and int(limit) < total:
            total = int(limit)
            free = min(free, max(total - used, 0))
    except (OSError, ValueError):
        pass
    return min(free, total), total


def mem_get_info(device=None) -> tuple[int, int]:
    """``(free, total)`` bytes: of the memory XLA's GPU allocator may use (its ``bytes_limit``, less
    what is in use); without a GPU, of the host's memory (``MemAvailable`` of ``/proc/meminfo`` and
    the physical total, within the process's cgroup limit).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.

    Example:
        >>> free, total = fjax.cuda.mem_get_info()
        >>> 0 <= free <= total
        True
    """
    dev = _mem_device(device, "mem_get_info")
    stats = _memory.xla_stats(dev)
    if stats is None:
        return _host_memory()
    total = int(stats.get("bytes_limit", 0))
    return max(total - int(stats.get("bytes_in_use", 0)), 0), total


def _format_size(sz: int, pref_sz: int) -> str:
    prefixes = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"]
    prefix = prefixes[0]
    for new_prefix in prefixes[1:]:
        if pref_sz < 768 * 1024:
            break
        prefix = new_prefix
        sz //= 1024
        pref_sz /= 1024
    return f"{sz:6d} {prefix}"


def _format_count(cnt: int, pref_cnt: int) -> str:
    prefixes = [" ", "K", "M"]
    prefix = prefixes[0]
    for new_prefix in prefixes[1:]:
        if pref_cnt < 750 * 1000:
            break
        prefix = new_prefix
        cnt //= 1000
        pref_cnt /= 1000
    return f"{cnt:7d} {prefix} "


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A printable table of ``memory_stats`` in torch's layout: current and peak allocated, active and
    reserved bytes, and the allocation counts fjax knows (sizes as torch formats them, e.g.
    ``" 65536 KiB"``, ``"    64 MiB"``).

    Args:
        device: an index, ``"cuda:i"`` or a ``fjax.device``; default the current device.
        abbreviated: accepted for torch's signature: fjax's allocators have no large/small pool split
            to leave out, so the table is always the abbreviated one.

    Example:
        >>> "Allocated memory" in fjax.cuda.memory_summary()
        True
    """
    dev = _mem_device(device, "memory_summary")
    stats = memory_stats(device)
    source = "XLA allocator statistics" if _memory.xla_stats(dev) is not None else f"live arrays on {dev}"
    lines = [
        "=" * 75,
        f" {'fjax CUDA memory summary, device ID ' + str(dev.id):^73} ",
        f" {'(' + source + ')':^73} ",
        "-" * 75,
        f" {'':9} CUDA OOMs: {'n/a':<12} | {'':6} cudaMalloc retries: {stats['num_alloc_retries']:<8d}  ",
        "=" * 75,
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ",
    ]
    rows = [
        ("allocated_bytes", "Allocated memory", _format_size),
        ("active_bytes", "Active memory", _format_size),
        ("reserved_bytes", "GPU reserved memory", _format_size),
        ("allocation", "Allocations", _format_count),
        ("active", "Active allocs", _format_count),
    ]
    for key, title, fmt in rows:
        prefix = f"{key}.all."
        if not any(k.startswith(prefix) for k in stats):
            continue
        cells = []
        for col in ("current", "peak", "allocated", "freed"):
            v = stats.get(prefix + col)
            cells.append(f"{'n/a':>10}" if v is None else fmt(v, v))
        lines.append("-" * 75)
        lines.append(f" {title:<21} | " + " | ".join(cells) + " ")
    lines.append("=" * 75)
    return "|" + "|\n|".join(lines) + "|\n"


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
