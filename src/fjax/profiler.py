"""``fjax.profiler``: which ops ran, how long they took, and what they compiled.

torch.profiler's API, plus what an eager runtime over XLA needs first: compiles. Each op call,
backward node, nn.Graph step and ``record_function`` range is an event; each XLA compile is
one too (its trace, lower and compile stages, as JAX reports them) and counts against the op
that caused it::

    >>> import fjax
    >>> x = fjax.randn(8, 8)
    >>> with fjax.profiler.profile(record_shapes=True) as prof:
    ...     with fjax.profiler.record_function("step"):
    ...         y = (x @ x).relu().sum()
    >>> table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    >>> "matmul" in table and "# Compiles" in table
    True

``prof.export_chrome_trace(path)`` writes a JSON file that Perfetto (ui.perfetto.dev) and
chrome://tracing open. ``profile(with_jax_trace=dir)`` records JAX's own trace for
XProf/TensorBoard as well.

Outside a profile nothing is recorded (one flag test per op). ``compile_count()`` counts XLA
compiles at all times, and ``FJAX_LOG_COMPILES=1`` (or ``fjax.config.log_compiles = True``)
prints one line per compile: the op, its inputs and why the kernel cache missed.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import json
import os
import sys
import threading
import time

import jax
from jax import monitoring

from . import _atomic, _jax_compat, _memory
from ._config import config

__all__ = ["ProfilerActivity", "compile_count", "compile_time", "fusion_stats", "profile", "record_function"]

_STAGES = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}


class ProfilerActivity:
    """torch.profiler.ProfilerActivity: fjax records host-side events for either."""

    CPU = "CPU"
    CUDA = "CUDA"


class ProfilerAction(enum.Enum):
    """What a profile does at a step (torch.profiler.ProfilerAction), as its ``schedule`` says."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0, skip_first_wait: int = 0):
    """torch.profiler.schedule: after ``skip_first`` steps, cycles of ``wait`` steps not recorded,
    ``warmup`` steps not recorded and ``active`` steps recorded, whose last step saves (the
    profile's ``on_trace_ready`` runs); ``repeat`` cycles (0: until the profile stops).
    ``skip_first_wait`` drops the first cycle's wait.

    Example::

        >>> s = fjax.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
        >>> [s(i).name for i in range(5)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(
            f"fjax.profiler.schedule: invalid arguments wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0)"
        )

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError(f"fjax.profiler.schedule: step must be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        k = step % cycle
        if k < wait:
            return ProfilerAction.NONE
        if k < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if k < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(dir_name, worker_name: str | None = None, use_gzip: bool = False):
    """torch.profiler.tensorboard_trace_handler: an ``on_trace_ready`` that writes each saved
    cycle as ``dir_name/<worker_name>.<time in ns>.pt.trace.json`` (``.gz`` with ``use_gzip``),
    the Chrome-trace files TensorBoard's profiler plugin and Perfetto read.

    Example::

        >>> import os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> with fjax.profiler.profile(on_trace_ready=fjax.profiler.tensorboard_trace_handler(d, "w")):
        ...     _ = fjax.ones(2) * 2
        >>> [f.split(".")[0] for f in os.listdir(d)]
        ['w']
    """
    import gzip
    import socket

    dir_name = os.fspath(dir_name)

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                dst.write(src.read())
            os.remove(path)

    return handler


def supported_activities() -> set:
    """The activities a profile can record: the CPU, and CUDA where JAX has a GPU."""
    gpu = any(d.platform == "gpu" for d in jax.devices())
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA} if gpu else {ProfilerActivity.CPU}


def kineto_available() -> bool:
    """False: fjax's profiler records its own events (and JAX's trace), not Kineto's."""
    return False


class _State:
    on = False  # a profile is recording: read by every op call
    inside = False  # an op event is open (its own calls are not events)
    active = None  # the recording profile


_state = _State()
_local = threading.local()  # .stack: open events of this thread; .stages: compile stages so far
_lock = threading.Lock()
_totals = {"count": 0, "seconds": 0.0, "since_sweep": 0, "bytes_since_sweep": 0}
_KERNEL_BYTES_FLOOR = 64 << 10  # the least a compile is counted for (an executable and its cache entry)
_note_compile = None  # dispatch's: called with a compile's estimated bytes (not fused programs')
_RUN_CODE = None  # dispatch.run's code object: a compile inside it belongs to that op
_APPLY_CODE = None  # autograd.engine.Node.apply's


def compile_count() -> int:
    """XLA compiles in this process so far: eager kernels, nn.Graph steps, transforms (a
    kernel loaded from JAX's persistent cache counts too).

        >>> import fjax
        >>> x = fjax.randn(3)
        >>> before = fjax.profiler.compile_count()
        >>> for i in range(100):
        ...     y = x[i % 3] * i
        >>> fjax.profiler.compile_count() - before <= 2
        True
    """
    return _totals["count"]


_fusion = {
    "hits": 0,
    "compiles": 0,
    "unfused": {},
    "segment_hits": 0,
    "segment_compiles": 0,
    "segments_replayed": 0,
    "ops_fused": 0,
    "donated_bytes": 0,
}


def fusion_stats() -> dict:
    """What eager fusion (``fjax.config.eager_fusion``) did so far: ``hits`` (backward passes run
    as one fused program), ``compiles`` (fused programs built) and ``unfused`` (backward passes
    run node by node, counted by why: ``"hooks"``, ``"custom Function"``, ``"eager node"``,
    ``"not traceable"``, ``"first sight"`` where ``FJAX_EAGER_FUSION_AFTER`` makes fusion wait
    for a structure to repeat, and ``"shapes vary"`` for a new combination of known shapes of a
    structure whose program already compiled for ``FJAX_FUSED_SHAPES_MAX`` (8) of them: routed
    experts' buckets). For
    the forward (``fjax._lazy``): ``segment_hits`` (recorded op sequences run as one program),
    ``segment_compiles`` (such programs built), ``segments_replayed`` (sequences seen for the
    first time, run op by op), ``ops_fused`` (ops that ran inside segment programs) and
    ``donated_bytes`` (the bytes of inputs that segment programs wrote their results into: old
    parameters, gradients and optimizer state that nothing else referenced).

        >>> import fjax
        >>> w = fjax.randn(3, requires_grad=True)
        >>> for _ in range(3):
        ...     (w * w).sum().backward()
        >>> fjax.profiler.fusion_stats()["hits"] >= 1 or not fjax.config.eager_fusion
        True
    """
    return {k: dict(v) if type(v) is dict else v for k, v in _fusion.items()}


_buckets = {"calls": 0, "real_elements": 0, "padded_elements": 0, "pads": 0, "unpads": 0, "ops": {}}


def bucket_stats() -> dict:
    """What bucketing (``fjax.config.bucketing``) did so far: ``calls`` (op calls run on inputs
    padded to a bucket size), ``real_elements`` and ``padded_elements`` (over those calls, the
    elements of their batched inputs that are real rows and that are padding: the waste is
    ``padded_elements / real_elements``), ``pads`` (real arrays padded to a bucket) and
    ``unpads`` (padded results whose real rows were copied out: read, or used by an op that is
    not bucketed), and ``ops`` (``{op name: calls}`` of those padded calls).

        >>> import fjax
        >>> sorted(fjax.profiler.bucket_stats())
        ['calls', 'ops', 'padded_elements', 'pads', 'real_elements', 'unpads']
    """
    return {k: dict(v) if type(v) is dict else v for k, v in _buckets.items()}


def compile_time() -> float:
    """Seconds spent in XLA compiles (the trace and lower stages included) so far."""
    return _totals["seconds"]


# ----------------------------------------------------------------------------- compiles


def _describe(x) -> str:
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None:
        return type(x).__name__
    return f"{str(dtype).rpartition('.')[2]}{list(shape)}"


class _Why:
    """Why an op's kernel cache missed: what each (op, kernel entry, grad) compiled before."""

    def __init__(self):
        self.seen: dict = {}  # (name, id(entry), grad) -> {signature: None} in compile order
        self.ops: set = set()

    def __call__(self, name, entry, grad, sig) -> str:
        key = (name, id(entry), grad)
        if len(self.seen) > 4096:
            self.seen.clear()
        seen = self.seen.setdefault(key, {})
        last = next(reversed(seen), None)
        known = sig in seen
        seen.pop(sig, None)
        seen[sig] = None
        if name not in self.ops:
            self.ops.add(name)
            return "first call of this op" + (" with grad" if grad else "")
        if last is None:
            return "first call with grad" if grad else "new static arguments (a new kernel template)"
        if known:
            return f"recompiled after eviction (fjax.config.eager_cache_size={config.eager_cache_size})"
        changed = [f"input {i}: {new} (was {old})" for i, (old, new) in enumerate(zip(last, sig)) if old != new]
        return "new input shapes/dtypes: " + ", ".join(changed or [str(sig)])


_why = _Why()


def _op_of_compile():
    """``(op name, its inputs, kernel entry, grad)`` of the eager op this compile belongs to
    (read off ``dispatch.run``'s frame: this runs only when something compiles), or None."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code is _RUN_CODE:
            loc = f.f_locals
            return loc["name"], loc["leaves"], loc["entry"], bool(loc.get("diff_idx"))
        f = f.f_back
    return None


def _caller():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code is _APPLY_CODE:  # a backward node's VJP
            return f"{f.f_locals['self'].name}Backward"
        mod = f.f_globals.get("__name__", "")
        if mod.startswith("fjax.") and mod != __name__:
            return f"{mod}.{f.f_code.co_name}"
        f = f.f_back
    return "user code"


def _on_span(event, start, end, **kwargs):
    """JAX's compile-stage listener: count, attribute, log and trace each compile."""
    stage = _STAGES.get(event)
    if stage is None:
        return
    last = getattr(_local, "stages", None)
    if last is None:
        last = _local.stages = {}
    last[stage] = (stage, start, end)  # the latest of each: inner jits traced inside an outer
    if stage != "compile":  # trace (nn.Graph's ops) report trace stages of their own
        if getattr(_local, "rss", None) is None:  # the process memory before this compile's lowering
            _local.rss = _rss()
        return
    stages = [last.pop(k) for k in ("trace", "lower", "compile") if k in last]
    seconds = sum(e - s for _, s, e in stages)
    before, _local.rss = getattr(_local, "rss", None), None
    nbytes = max(_rss() - before, _KERNEL_BYTES_FLOOR) if before is not None else _KERNEL_BYTES_FLOOR
    with _lock:
        _totals["count"] += 1
        _totals["seconds"] += seconds
        _totals["since_sweep"] += 1
        _totals["bytes_since_sweep"] += nbytes
        sweep = (
            _totals["since_sweep"] >= max(64, config.eager_cache_size // 2)
            or _totals["bytes_since_sweep"] >= config.eager_cache_bytes // 4
        )
        if sweep:
            _totals["since_sweep"] = _totals["bytes_since_sweep"] = 0
    if _note_compile is not None and kwargs.get("fun_name") != "program":  # not a fused segment or backward
        _note_compile(nbytes)
    if sweep:
        _sweep()
    prof = _state.active
    if prof is None and not config.log_compiles:
        return
    op = _op_of_compile()
    if op is not None:
        name, leaves, entry, grad = op
        described = tuple(_describe(x) for x in leaves)
        inputs = ", ".join(described)
        why = _why(name, entry, grad, described)
        what = f"{name}({inputs})" + (" backward" if grad else "")
    else:
        name = what = f"{kwargs.get('fun_name', 'jit')} (in {_caller()})"
        inputs, why = "", "a jitted function outside the op table"
    if config.log_compiles:
        parts = ", ".join(f"{s} {1e3 * (e - b):.1f}" for s, b, e in stages)
        print(f"fjax: compiled {what} in {1e3 * seconds:.1f} ms ({parts}): {why}", file=sys.stderr, flush=True)
    if prof is not None:
        prof._compiled(name, stages, seconds, inputs, why)


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss() -> int:
    """The process's resident memory in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _sweep():
    """Release what JAX's Python-side caches hold of evicted kernels. The kernel cache itself
    (``dispatch``) is a C++ LRU of executables that this does not touch: live kernels keep
    running without a recompile; only their traces and lowerings are dropped."""
    _jax_compat.clear_jax_caches()


monitoring.register_event_time_span_listener(_on_span)


# ----------------------------------------------------------------------------- events


class _Event:
    __slots__ = (
        "name",
        "cat",
        "start",
        "end",
        "shapes",
        "child",
        "compiles",
        "compile_s",
        "tid",
        "args",
        "mem",
        "child_mem",
    )

    def __init__(self, name, cat, start, shapes=None, args=None):
        self.name, self.cat, self.start, self.shapes, self.args = name, cat, start, shapes, args
        self.end = start
        self.child = 0  # ns spent in nested events
        self.compiles = 0
        self.compile_s = 0.0
        self.tid = threading.get_ident()
        self.mem = None  # profile_memory: (host, device) live bytes at the start, then their change
        self.child_mem = (0, 0)  # the part of that change made in nested events


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def _shapes(args, kwargs):
    out = []
    for a in list(args) + list(kwargs.values()):
        shape = getattr(a, "shape", None)
        out.append(list(shape) if shape is not None else [])
    return out


def _open(name, cat, shapes=None):
    prof = _state.active
    mem = _memory.totals() if prof is not None and prof.profile_memory else None  # before the clock starts
    ev = _Event(name, cat, time.perf_counter_ns(), shapes)
    ev.mem = mem
    _stack().append(ev)
    return ev


def _close(ev):
    ev.end = time.perf_counter_ns()
    stack = _stack()
    stack.pop()
    if stack:
        stack[-1].child += ev.end - ev.start
    if ev.mem is not None:  # the live bytes this event left behind (allocated less freed)
        after = _memory.totals()
        ev.mem = (after[0] - ev.mem[0], after[1] - ev.mem[1])
        if stack:
            parent = stack[-1]
            parent.child_mem = (parent.child_mem[0] + ev.mem[0], parent.child_mem[1] + ev.mem[1])
    prof = _state.active
    if prof is not None:
        prof._events.append(ev)


def op(name, fn, args, kwargs):
    """Run the op call ``fn(*args, **kwargs)`` as one event (dispatch calls this while a
    profile records; the call's own re-entry is not recorded again)."""
    prof = _state.active
    ev = _open(name, "op", _shapes(args, kwargs) if prof is not None and prof.record_shapes else None)
    _state.inside = True
    try:
        return fn(*args, **kwargs)
    finally:
        _state.inside = False
        _close(ev)


@contextlib.contextmanager
def span(name, cat):
    """An event around a block (backward nodes, nn.Graph steps); nothing when not recording."""
    if not _state.on:
        yield
        return
    ev = _open(name, cat)
    try:
        yield
    finally:
        _close(ev)


class record_function(contextlib.ContextDecorator):
    """A named range in the profile (torch.profiler.record_function): a context manager or a
    decorator. Its ops are its children in the trace and its self time excludes theirs.

        >>> import fjax
        >>> with fjax.profiler.profile() as prof:
        ...     with fjax.profiler.record_function("forward"):
        ...         y = fjax.ones(2) + 1
        >>> [e.key for e in prof.key_averages() if e.key == "forward"]
        ['forward']
    """

    def __init__(self, name: str, args: str | None = None):
        self.name, self.args = name, args
        self._ev = None

    def __enter__(self):
        self._ev = _open(self.name, "user_annotation") if _state.on else None
        return self

    def __exit__(self, *exc):
        if self._ev is not None:
            _close(self._ev)
            self._ev = None
        return False


# ----------------------------------------------------------------------------- profile


class profile:
    """Record fjax events (torch.profiler.profile's API).

    Args:
        activities: accepted for torch compatibility (fjax records host-side events).
        record_shapes: record each op call's input shapes (``group_by_input_shape``).
        schedule: a function of the step number (``step()`` advances it) giving a
            ``ProfilerAction`` (``fjax.profiler.schedule``): events are recorded in RECORD steps, and
            at the end of each RECORD_AND_SAVE step ``on_trace_ready`` runs on that cycle's events.
        on_trace_ready: called with the profile when a scheduled cycle ends, or when it stops
            recording.
        profile_memory: record the bytes each event leaves allocated (its live arrays' bytes after less
            before, host and accelerator apart): ``cpu_memory_usage``/``device_memory_usage`` and their
            ``self_`` parts in ``key_averages``. Each event then scans ``jax.live_arrays()`` twice, so
            its times grow with the number of live arrays.
        with_jax_trace: a directory: also record JAX's own trace there (XProf/TensorBoard).

    ``with_stack``, ``with_flops`` and ``with_modules`` raise NotImplementedError.
    """

    def __init__(
        self,
        activities=None,
        *,
        schedule=None,
        on_trace_ready=None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        with_jax_trace: str | os.PathLike | None = None,
        use_cuda=None,
    ):
        for name, value in [
            ("with_stack", with_stack),
            ("with_flops", with_flops),
            ("with_modules", with_modules),
        ]:
            if value:
                raise NotImplementedError(f"fjax.profiler.profile: {name}={value!r} is not supported")
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.on_trace_ready = on_trace_ready
        self.with_jax_trace = None if with_jax_trace is None else os.fspath(with_jax_trace)
        self._events: list[_Event] = []
        self._compiles: list[tuple] = []
        self._perf0 = self._wall0 = None
        self.schedule = schedule if schedule is not None else (lambda step: ProfilerAction.RECORD)
        self.step_num = 0
        self.current_action = None

    def start(self):
        with _lock:
            if _state.active is not None:
                raise RuntimeError("fjax.profiler.profile: another profile is already recording")
            _state.active = self
        self._perf0, self._wall0 = time.perf_counter_ns(), time.time()
        if self.with_jax_trace is not None:
            jax.profiler.start_trace(self.with_jax_trace)
        self.current_action = self.schedule(self.step_num)
        _state.on = self.current_action in _RECORDING

    def stop(self):
        if _state.active is not self:
            return
        _state.on = False
        _state.active = None
        if self.with_jax_trace is not None:
            jax.profiler.stop_trace()
        if self.on_trace_ready is not None and self.current_action in _RECORDING:
            self.on_trace_ready(self)
        self.current_action = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self):
        """The next step begins: the schedule's action for it starts or stops recording; the end
        of a RECORD_AND_SAVE step hands its cycle to ``on_trace_ready``, and the next recorded
        step starts a new cycle."""
        before = self.current_action
        self.step_num += 1
        if _state.active is not self:
            return
        self.current_action = self.schedule(self.step_num)
        if before is ProfilerAction.RECORD_AND_SAVE:
            _state.on = False
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if self.current_action in _RECORDING and (before not in _RECORDING or before is ProfilerAction.RECORD_AND_SAVE):
            self._events, self._compiles = [], []  # a new cycle
        _state.on = self.current_action in _RECORDING

    def _compiled(self, name, stages, seconds, inputs, why):
        if not _state.on:  # (a step the schedule does not record)
            return
        stack = getattr(_local, "stack", None)
        if stack:
            stack[-1].compiles += 1
            stack[-1].compile_s += seconds
        self._compiles.append((name, stages, inputs, why, threading.get_ident()))

    # -- results ------------------------------------------------------------------------

    def events(self) -> list[_Event]:
        """The recorded events (ops, backward nodes, nn.Graph steps, user ranges) in the order
        they ended."""
        return list(self._events)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """Events grouped by name (and input shapes): torch's ``key_averages``."""
        groups: dict = collections.OrderedDict()
        for ev in self._events:
            shapes = str(ev.shapes) if group_by_input_shape and ev.shapes is not None else ""
            avg = groups.get((ev.name, shapes))
            if avg is None:
                avg = groups[(ev.name, shapes)] = FunctionEventAvg(ev.name, shapes)
            avg._add(ev)
        return EventList(groups.values(), group_by_input_shape, self.profile_memory)

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write the events as Chrome trace JSON (Perfetto, chrome://tracing): one ``X`` event
        per op call, backward node, nn.Graph step, user range and compile stage."""
        path = os.fspath(path)
        pid = os.getpid()
        us = lambda ns: (ns - self._perf0) / 1e3  # noqa: E731
        trace = []
        for ev in self._events:
            args = {}
            if ev.shapes is not None:
                args["Input Dims"] = ev.shapes
            if ev.compiles:
                args["compiles"] = ev.compiles
                args["compile ms"] = round(ev.compile_s * 1e3, 3)
            trace.append(
                {
                    "name": ev.name,
                    "cat": ev.cat,
                    "ph": "X",
                    "ts": us(ev.start),
                    "dur": (ev.end - ev.start) / 1e3,
                    "pid": pid,
                    "tid": ev.tid,
                    "args": args,
                }
            )
        for name, stages, inputs, why, tid in self._compiles:
            for stage, start, end in stages:
                trace.append(
                    {
                        "name": f"{stage} {name}",
                        "cat": "compile",
                        "ph": "X",
                        "ts": (start - self._wall0) * 1e6,
                        "dur": (end - start) * 1e6,
                        "pid": pid,
                        "tid": tid,
                        "args": {"stage": stage, "inputs": inputs, "why": why},
                    }
                )
        trace.sort(key=lambda e: (e["ts"], -e["dur"]))
        doc = {"traceEvents": trace, "displayTimeUnit": "ms"}

        def write(tmp):
            with open(tmp, "w") as f:
                json.dump(doc, f)

        try:
            _atomic.write_file(path, write)
        except OSError as err:
            raise type(err)(
                err.errno, f"fjax.profiler.export_chrome_trace: cannot write {path!r}: {err.strerror}"
            ) from None


class FunctionEventAvg:
    """One row of ``key_averages``: times in microseconds, as torch's."""

    def __init__(self, key, input_shapes):
        self.key, self.input_shapes = key, input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.compile_count = 0
        self.compile_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0  # bytes (profile_memory)
        self.device_memory_usage = self.self_device_memory_usage = 0

    @property
    def cuda_memory_usage(self) -> int:
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self) -> int:
        return self.self_device_memory_usage

    def _add(self, ev):
        self.count += 1
        self.cpu_time_total += (ev.end - ev.start) / 1e3
        self.self_cpu_time_total += (ev.end - ev.start - ev.child) / 1e3
        self.compile_count += ev.compiles
        self.compile_time_total += ev.compile_s * 1e6
        if ev.mem is not None:
            self.cpu_memory_usage += ev.mem[0]
            self.self_cpu_memory_usage += ev.mem[0] - ev.child_mem[0]
            self.device_memory_usage += ev.mem[1]
            self.self_device_memory_usage += ev.mem[1] - ev.child_mem[1]

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (
            f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.1f}us "
            f"compiles={self.compile_count}>"
        )


_SORT_KEYS = {
    "cpu_time_total": "cpu_time_total",
    "self_cpu_time_total": "self_cpu_time_total",
    "cpu_time": "cpu_time",
    "count": "count",
    "compile_count": "compile_count",
    "compile_time_total": "compile_time_total",
}
_SORT_KEYS.update({k: k for k in ("cpu_memory_usage", "self_cpu_memory_usage")})
_SORT_KEYS.update({k: k.replace("cpu", "device") for k in ("cpu_memory_usage", "self_cpu_memory_usage")})
_SORT_KEYS.update({k.replace("cpu", "cuda"): v for k, v in _SORT_KEYS.items() if "cpu" in k})
_SORT_KEYS.update({k.replace("cpu", "device"): v for k, v in _SORT_KEYS.items() if "cpu" in k})


def _fmt_mem(nbytes: int) -> str:
    """torch's memory cell: ``39.06 KB``, ``4 B``."""
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _fmt(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """``key_averages()``'s rows, with torch's ``table``."""

    def __init__(self, rows, group_by_input_shape=False, profile_memory=False):
        super().__init__(rows)
        self._shapes = group_by_input_shape
        self._memory = profile_memory

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55, **_) -> str:
        """The rows as a text table, sorted by ``sort_by`` (descending) and cut at ``row_limit``."""
        rows = list(self)
        if sort_by is not None:
            attr = _SORT_KEYS.get(sort_by)
            if attr is None:
                raise ValueError(f"fjax.profiler: table(sort_by={sort_by!r}): expected one of {sorted(_SORT_KEYS)}")
            rows.sort(key=lambda r: getattr(r, attr), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        self_total = sum(r.self_cpu_time_total for r in self) or 1.0
        head = [
            "Name",
            "Self CPU %",
            "Self CPU",
            "CPU total %",
            "CPU total",
            "CPU time avg",
            "# of Calls",
            "# Compiles",
            "Compile time",
        ]
        device_mem = self._memory and any(r.device_memory_usage or r.self_device_memory_usage for r in self)
        if self._memory:
            head[6:6] = ["CPU Mem", "Self CPU Mem"] + (["Device Mem", "Self Device Mem"] if device_mem else [])
        if self._shapes:
            head.append("Input Shapes")
        body = []
        for r in rows:
            line = [
                r.key[:max_name_column_width],
                f"{100 * r.self_cpu_time_total / self_total:.2f}%",
                _fmt(r.self_cpu_time_total),
                f"{100 * r.cpu_time_total / self_total:.2f}%",
                _fmt(r.cpu_time_total),
                _fmt(r.cpu_time),
                str(r.count),
                str(r.compile_count),
                _fmt(r.compile_time_total),
            ]
            if self._memory:
                mem = [r.cpu_memory_usage, r.self_cpu_memory_usage]
                mem += [r.device_memory_usage, r.self_device_memory_usage] if device_mem else []
                line[6:6] = [_fmt_mem(m) for m in mem]
            if self._shapes:
                line.append(r.input_shapes)
            body.append(line)
        widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
        rule = "  ".join("-" * w for w in widths)
        fmt = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
        lines = [rule, fmt(head), rule, *(fmt(b) for b in body), rule]
        lines.append(f"Self CPU time total: {_fmt(sum(r.self_cpu_time_total for r in self))}")
        return "\n".join(lines)
