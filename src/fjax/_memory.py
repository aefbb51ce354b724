"""Memory accounting behind ``fjax.cuda.memory_*`` and ``profile(profile_memory=True)``.

A GPU's figures come from its XLA allocator (``Device.memory_stats()``: ``bytes_in_use``,
``peak_bytes_in_use``, ...). The CPU backend keeps no statistics, so there fjax counts the live
arrays: the on-device bytes of ``jax.live_arrays()`` on that device, each buffer once. No op pays
for this: the CPU peak is the largest of the samples taken when a figure is read, and, once
``reset_peak_memory_stats`` has armed it, at the start and end of every backward, after every
nn.Graph step, and before every compiled program of several ops (a fused eager segment, an
nn.Graph step), counted with the bytes that program allocates while it runs (``program``).
Armed sampling has a time budget (``due``): after a reset it may take 0.1 s, and from then on 5%
of the time since the reset, so a reset early in a long run does not slow every later step
(a scan costs about as much as the number of live arrays).
"""

from __future__ import annotations

import functools
import time

import jax
from jax.sharding import SingleDeviceSharding

armed = False  # reset_peak_memory_stats was called: backward and nn.Graph steps sample while due()
_ALLOWANCE = 0.1  # seconds of armed sampling always allowed after a reset
_SHARE = 0.05  # then at most this share of the time since the reset
_clock = time.perf_counter
_since = 0.0  # when the last reset armed sampling
_spent = 0.0  # seconds armed sampling took since then


class _Peak:
    __slots__ = ("bytes", "count", "xla0", "allocs0")

    def __init__(self):
        self.bytes = self.count = 0  # the largest sampled current figures since the last reset
        self.xla0 = None  # XLA's peak_bytes_in_use at the last reset (None: never reset)
        self.allocs0 = 0  # XLA's num_allocs at the last reset_accumulated_memory_stats


_peaks: dict = {}  # jax device -> _Peak


def scan(platform: str) -> dict:
    """``{jax device: [bytes, count]}`` of the live arrays of one backend, each buffer once."""
    try:
        arrays = jax.live_arrays(platform)
    except RuntimeError:  # no such backend
        return {}
    out: dict = {}
    seen = set()
    keep = []  # shard views made below stay alive, so their ids are not reused while we scan
    for a in arrays:
        try:
            if a.is_deleted():
                continue
            sharding = a.sharding
            dev = getattr(sharding, "_device", None) if isinstance(sharding, SingleDeviceSharding) else None
            pieces = [(dev, a)] if dev is not None else [(s.device, s.data) for s in a.addressable_shards]
            keep.append(pieces)
            for dev, piece in pieces:
                # a ready buffer's address finds aliases (addressable_data, shard views); asking a
                # pending one would wait for its computation, so it counts as itself
                key = piece.unsafe_buffer_pointer() if piece.is_ready() else ("id", id(piece))
                if key in seen:
                    continue
                seen.add(key)
                entry = out.setdefault(dev, [0, 0])
                entry[0] += int(piece.on_device_size_in_bytes())
                entry[1] += 1
        except (RuntimeError, ValueError):  # deleted or donated while we looked
            continue
    return out


def xla_stats(dev) -> dict | None:
    """The device's XLA allocator statistics, or None where the backend keeps none (CPU)."""
    try:
        return dev.memory_stats() or None
    except (RuntimeError, NotImplementedError):
        return None


def peak_state(dev) -> _Peak:
    p = _peaks.get(dev)
    if p is None:
        p = _peaks[dev] = _Peak()
    return p


def current(dev) -> tuple[int, int | None]:
    """(bytes in use, live allocations or None) of ``dev`` now; updates its sampled peak."""
    stats = xla_stats(dev)
    if stats is not None:
        used, count = int(stats.get("bytes_in_use", 0)), None
    else:
        used, count = scan(dev.platform).get(dev, (0, 0))
    p = peak_state(dev)
    p.bytes = max(p.bytes, used)
    if count is not None:
        p.count = max(p.count, count)
    return used, count


def peak(dev, used: int, stats: dict | None) -> int:
    """The peak bytes of ``dev`` since the last reset (the process start if none); call after
    ``current`` so ``used`` is already sampled."""
    p = peak_state(dev)
    if stats is None:
        return p.bytes
    xla_peak = int(stats.get("peak_bytes_in_use", used))
    if p.xla0 is None or xla_peak > p.xla0:  # XLA's all-time peak was reached since the reset: exact
        return xla_peak
    return max(p.bytes, used)  # below the pre-reset peak: the samples are what we know


def due() -> bool:
    """Whether an armed sample should be taken now: ``reset_peak_memory_stats`` armed sampling and
    it stays within its time budget."""
    return armed and _spent <= _ALLOWANCE + _SHARE * (_clock() - _since)


def reset_peak(dev) -> None:
    """Restart ``dev``'s peak at its current figures and arm sampling at backward and nn.Graph steps."""
    global armed, _since, _spent
    stats = xla_stats(dev)
    p = peak_state(dev)
    p.bytes = p.count = 0
    p.xla0 = int(stats.get("peak_bytes_in_use", 0)) if stats is not None else None
    current(dev)
    armed, _since, _spent = True, _clock(), 0.0


def _budgeted(fn):
    """``fn``, an armed sample, its time counted against the budget (``due``)."""

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        global _spent
        start = _clock()
        try:
            return fn(*args, **kwargs)
        finally:
            _spent += _clock() - start

    return timed


@_budgeted
def sample_armed() -> None:
    """Sample every device whose peak was reset (backward start and end, after nn.Graph steps)."""
    for dev in list(_peaks):
        current(dev)


@_budgeted
def before_program() -> dict:
    """``{device: live bytes}`` of the armed devices now: ``program``'s ``before``."""
    return {dev: current(dev)[0] for dev in list(_peaks)}


@_budgeted
def program(compiled, devices, before: dict | None = None) -> None:
    """Sample the armed CPU-like devices among ``devices`` before ``compiled`` runs: their live
    bytes plus what the program allocates while it runs (XLA's temporaries, and its results not
    written into donated inputs: on the CPU, as on a GPU, results are allocated when a program
    starts). ``before``: ``{device: live bytes}`` sampled before the program ran, when this is
    called after it. A backend with allocator statistics measures this itself."""
    if not armed:
        return
    m = compiled.memory_analysis()
    extra = 0 if m is None else max(0, m.temp_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes)
    for dev in devices:
        if dev in _peaks and xla_stats(dev) is None:
            used = before[dev] if before is not None and dev in before else current(dev)[0]
            p = _peaks[dev]
            p.bytes = max(p.bytes, used + extra)


def totals() -> tuple[int, int]:
    """(host bytes, accelerator bytes) of all live arrays now: what the profiler diffs around an event."""
    cpu = sum(b for b, _ in scan("cpu").values())
    dev = 0
    if jax.default_backend() != "cpu":
        for d in jax.devices():
            stats = xla_stats(d)
            dev += int(stats.get("bytes_in_use", 0)) if stats is not None else scan(d.platform).get(d, (0, 0))[0]
    return cpu, dev
