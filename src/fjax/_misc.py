"""torch's smaller top-level names: asarray, frombuffer, range, the ``sym_*`` helpers, cond,
Stream/Event, and torch's exception classes."""

from __future__ import annotations

import builtins
import math
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util

from . import dtypes as _dt
from .creation import _check_layout, _place, tensor
from .errors import OpError
from .ops._promote import result_type as _result_type
from .tensor import Tensor

__all__ = [
    "AcceleratorError",
    "Event",
    "FatalError",
    "OutOfMemoryError",
    "Stream",
    "asarray",
    "cond",
    "frombuffer",
    "range",
    "sym_float",
    "sym_int",
    "sym_ite",
    "sym_max",
    "sym_min",
    "sym_not",
    "sym_sqrt",
    "sym_sum",
    "thread_safe_generator",
]


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Convert ``obj`` (a Tensor, numpy or jax array, number or nested sequence) to a Tensor
    (torch.asarray). A Tensor that already has the ``dtype`` and ``device`` asked for is
    returned as is unless ``copy=True``; ``copy=False`` where a conversion is needed raises, as
    in torch. Non-Tensor data is always copied into an immutable jax array, so unlike torch the
    result never sees later writes to a numpy array.

    Args:
        obj: the data.
        dtype: the result's dtype (default: the Tensor's or array's own, else inferred as
            ``fjax.tensor`` does).
        device: where the result lives (default: a Tensor's own device).
        copy: True: always a new tensor; False: never copy a Tensor (raise when needed);
            None (default): copy only when needed.
        requires_grad: whether the result records gradients (for a Tensor returned as is,
            torch's rule: it must then be a leaf).

    Example:
        >>> t = fjax.tensor([1.0, 2.0])
        >>> fjax.asarray(t) is t, fjax.asarray([1, 2], dtype=fjax.float64)
        (True, tensor([1., 2.], dtype=fjax.float64))
    """
    from .device import device as _device

    if isinstance(obj, Tensor):
        same_dtype = dtype is None or obj.dtype == _dt.to_dtype(dtype)
        same_device = device is None or obj.device == _device(device)
        if same_dtype and same_device and not copy:
            if requires_grad and not obj.requires_grad:
                obj.requires_grad_(True)
            return obj
        if copy is False:
            raise ValueError(
                f"asarray: can't alias tensor of dtype {obj.dtype} on {obj.device} as dtype {dtype} on {device} "
                "(copy=False)"
            )
        out = obj.detach().to(dtype=_dt.to_dtype(dtype) if dtype is not None else obj.dtype)
        if device is not None:
            out = out.to(device)
        if out is obj or out._data is obj._data:
            out = out.clone()
        if requires_grad:
            out.requires_grad_(True)
        return out
    return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor of the values in an object that exposes the buffer protocol
    (torch.frombuffer): ``count`` elements of ``dtype`` from byte ``offset`` on (-1: all).
    Unlike torch, the tensor holds a copy: later writes to the buffer are not seen.

    Args:
        buffer: a bytes-like object (``bytes``, ``bytearray``, ``array.array``, ...).
        dtype: the element type.
        count: how many elements to read; -1 (default): all after ``offset``.
        offset: bytes to skip at the start.
        requires_grad: whether the result records gradients.

    Example:
        >>> import array
        >>> fjax.frombuffer(array.array("i", [1, 2, 3]), dtype=fjax.int32)
        tensor([1, 2, 3], dtype=fjax.int32)
    """
    dt = _dt.to_dtype(dtype)
    nbytes = memoryview(buffer).nbytes
    if offset < 0 or offset >= nbytes:
        raise ValueError(
            f"frombuffer: offset must be non-negative and smaller than the buffer's {nbytes} bytes, got {offset}"
        )
    if count == 0 or count < -1:
        raise ValueError(f"frombuffer: count must be positive or -1, got {count}")
    if count == -1 and (nbytes - offset) % dt.itemsize:
        raise ValueError(
            f"frombuffer: buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a multiple of "
            f"element size ({dt.itemsize})"
        )
    if count > 0 and offset + count * dt.itemsize > nbytes:
        raise ValueError(
            f"frombuffer: requested buffer length ({count} * {dt.itemsize} bytes) after offset ({offset} bytes) "
            f"must not be greater than actual buffer length ({nbytes} bytes)"
        )
    a = np.frombuffer(buffer, dtype=dt.dtype, count=count, offset=offset)
    return _place(jnp.asarray(a), None, requires_grad)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: A001
    """Values from ``start`` to ``end`` **inclusive**, spaced by ``step`` (torch's deprecated
    ``torch.range``; prefer ``arange``, whose end is exclusive). The dtype is the default dtype
    (float32) unless ``dtype`` is given, as in torch.

    Args:
        start: the first value (default 0).
        end: the last value (reached when ``end - start`` is a multiple of ``step``).
        step: the gap between values (default 1).
        out: not supported.
        dtype: the result's dtype (default: the default dtype).
        layout: only ``fjax.strided``.
        device: where the result lives.
        requires_grad: whether the result records gradients.

    Example:
        >>> import warnings; warnings.simplefilter("ignore", UserWarning)
        >>> fjax.range(1, 4)
        tensor([1., 2., 3., 4.], dtype=fjax.float32)
    """
    warnings.warn(
        "fjax.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        "with Python's range builtin. Instead, use fjax.arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if out is not None:
        raise NotImplementedError("range: out= is not supported by fjax; use the returned tensor")
    _check_layout("range", layout)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if step == 0:
        raise OpError("range: step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise OpError(
            f"range: upper bound and larger bound inconsistent with step sign (start={start}, end={end}, step={step})"
        )
    dt = _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)
    n = math.floor((end - start) / step) + 1
    kind = np.float64 if dt.is_floating_point or dt.is_complex else np.int64
    values = jnp.asarray(start + step * np.arange(n, dtype=kind), dt.dtype)
    return _place(values, device, requires_grad)


_ALL_TYPES = (builtins.int, builtins.float, builtins.bool, np.integer, np.floating, np.bool_)
_FLOAT_TYPES = (builtins.float, np.floating)


def sym_int(a):
    """``int(a)`` (torch.sym_int: symbolic-shape-aware in torch; fjax has no symbolic ints).

    Args:
        a: the number to convert.

    Example:
        >>> fjax.sym_int(2.7)
        2
    """
    return builtins.int(a)


def sym_float(a):
    """``float(a)`` (torch.sym_float).

    Args:
        a: the number to convert.

    Example:
        >>> fjax.sym_float(2)
        2.0
    """
    return builtins.float(a)


def _check_number(op, *values):
    for v in values:
        if not isinstance(v, _ALL_TYPES):
            raise AssertionError(f"{op}: expected an int, float or bool, got {type(v)}")


def sym_max(a, b):
    """``max(a, b)``, a float when either is (torch.sym_max).

    Args:
        a: a number.
        b: a number.

    Example:
        >>> fjax.sym_max(1, 2), fjax.sym_max(1, 2.0)
        (2, 2.0)
    """
    _check_number("sym_max", a, b)
    m = builtins.max(a, b)
    return builtins.float(m) if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES) else m


def sym_min(a, b):
    """``min(a, b)``, a float when either is (torch.sym_min).

    Args:
        a: a number.
        b: a number.

    Example:
        >>> fjax.sym_min(1, 2), fjax.sym_min(1.0, 2)
        (1, 1.0)
    """
    _check_number("sym_min", a, b)
    m = builtins.min(a, b)
    return builtins.float(m) if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES) else m


def sym_not(a):
    """``not a`` (torch.sym_not).

    Args:
        a: a bool.

    Example:
        >>> fjax.sym_not(True)
        False
    """
    return not a


def sym_sqrt(a):
    """``math.sqrt(a)`` (torch.sym_sqrt).

    Args:
        a: a number.

    Example:
        >>> fjax.sym_sqrt(4)
        2.0
    """
    return math.sqrt(a)


def sym_sum(*args):
    """The sum of numbers, given as ``sym_sum(a, b, c)`` or ``sym_sum([a, b, c])`` (torch.sym_sum).

    Args:
        args: the numbers, or one list or tuple of them.

    Example:
        >>> fjax.sym_sum([1, 2, 3]), fjax.sym_sum(1, 2.5)
        (6, 3.5)
    """
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_ite(b, t, f):
    """``t if b else f`` (torch.sym_ite); ``t`` and ``f`` must be of one type.

    Args:
        b: the condition, a bool.
        t: the value when ``b`` is true.
        f: the value when ``b`` is false.

    Example:
        >>> fjax.sym_ite(False, 1, 2)
        2
    """
    if not isinstance(b, (builtins.bool, np.bool_)):
        raise AssertionError(f"sym_ite: expected a bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"sym_ite: type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def _arrays(op, tree):
    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=lambda x: isinstance(x, Tensor))
    for leaf in leaves:
        if not isinstance(leaf, (Tensor, builtins.int, builtins.float, builtins.bool)):
            raise TypeError(f"{op}: branch outputs must be Tensors or numbers, got {type(leaf).__name__}")
    return [x._data if isinstance(x, Tensor) else x for x in leaves], treedef


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (torch.cond).

    Eagerly (``pred`` a Python bool or number, or a one-element Tensor with a value) only the
    chosen branch runs, on the tape like any code. Inside a trace (``nn.Graph``, ``fjax.func``
    transforms), where a Tensor ``pred`` has no value yet, both branches are traced and
    ``jax.lax.cond`` picks one when the program runs; they must then return Tensors of the same
    shapes and dtypes, as torch.cond requires.

    Args:
        pred: the condition: a bool, a number or a one-element Tensor.
        true_fn: called with ``*operands`` when ``pred`` is true.
        false_fn: called with ``*operands`` when ``pred`` is false.
        operands: a tuple or list of the branches' inputs.

    Example:
        >>> x = fjax.tensor([1.0, -2.0])
        >>> fjax.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))
        tensor([ 0., -3.], dtype=fjax.float32)
    """
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"cond: expected operands to be a tuple or list, got {type(operands).__name__}")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("cond: expected true_fn and false_fn to be callable")
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(
                f"cond: expected pred to be a bool or a one-element tensor, got shape {list(pred.shape)}"
            )
        if not isinstance(pred._data, jax.core.Tracer):
            pred = builtins.bool(pred.item())
    if not isinstance(pred, Tensor):
        return true_fn(*operands) if pred else false_fn(*operands)
    leaves, treedef = tree_util.tree_flatten(list(operands), is_leaf=lambda x: isinstance(x, Tensor))
    is_tensor = [isinstance(x, Tensor) for x in leaves]
    out_tree = []

    def branch(fn):
        def run(arrays):
            it = iter(arrays)
            args = [Tensor._wrap(next(it)) if t else x for x, t in zip(leaves, is_tensor)]
            out = fn(*tree_util.tree_unflatten(treedef, args))
            flat, tree = _arrays("cond", out)
            out_tree.append(tree)
            return flat

        return run

    arrays = [x._data for x, t in zip(leaves, is_tensor) if t]
    flat = jax.lax.cond(jnp.reshape(pred._data, ()).astype(bool), branch(true_fn), branch(false_fn), arrays)
    if out_tree[0] != out_tree[1]:
        raise RuntimeError(f"cond: true_fn and false_fn returned different structures: {out_tree[0]} vs {out_tree[1]}")
    return tree_util.tree_unflatten(out_tree[0], [Tensor._wrap(a) for a in flat])


class Stream:
    """An execution stream (torch.Stream). XLA orders each device's work itself and fjax has
    no user streams, so a Stream is a handle that names a device: work is never queued on it,
    ``query()`` is True and ``synchronize()`` waits for nothing beyond what reading a result
    waits for.

    Args:
        device: the device (default: the current default device).
        priority: accepted and recorded (0, torch's default).

    Example:
        >>> s = fjax.Stream()
        >>> s.query(), s.device_type
        (True, 'cpu')
    """

    def __init__(self, device=None, *, priority=0):
        from ._settings import get_default_device
        from .device import device as _device

        self.device = get_default_device() if device is None else _device(device)
        self.priority = priority
        self.stream_id = 0

    @property
    def device_type(self) -> str:
        """The device's type, e.g. ``"cpu"``.

        Example:
            >>> fjax.Stream().device_type
            'cpu'
        """
        return self.device.type

    @property
    def device_index(self) -> int:
        """The device's index (0 without one).

        Example:
            >>> fjax.Stream().device_index
            0
        """
        return self.device.index or 0

    def query(self) -> bool:
        """Whether all work on the stream is done: always True.

        Example:
            >>> fjax.Stream().query()
            True
        """
        return True

    def synchronize(self) -> None:
        """Wait for the stream's work: there is none to wait for.

        Example:
            >>> fjax.Stream().synchronize()
        """

    def wait_event(self, event) -> None:
        """Make future work on the stream wait for ``event``: nothing to order on fjax.

        Example:
            >>> fjax.Stream().wait_event(fjax.Event())
        """

    def wait_stream(self, stream) -> None:
        """Make future work on the stream wait for ``stream``: nothing to order on fjax.

        Example:
            >>> fjax.Stream().wait_stream(fjax.Stream())
        """

    def record_event(self, event=None):
        """Record ``event`` (a new Event if None) on the stream and return it.

        Example:
            >>> isinstance(fjax.Stream().record_event(), fjax.Event)
            True
        """
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.device, self.stream_id) == (other.device, other.stream_id)

    def __hash__(self):
        return hash((self.device, self.stream_id))

    def __repr__(self):
        return (
            f"fjax.Stream device_type={self.device_type}, device_index={self.device_index}, stream_id={self.stream_id}"
        )


class Event:
    """A marker in a stream (torch.Event). With fjax's streams being handles (see ``Stream``),
    ``record()`` notes the host time, ``query()`` is True, ``synchronize()`` and ``wait()``
    return at once, and ``elapsed_time`` is the host time between two records in milliseconds
    (``enable_timing=True``); to time device work, read a result (which waits for it) before
    recording.

    Args:
        device: the device (default: the current default device).
        enable_timing: whether ``elapsed_time`` may be asked of this event.
        blocking: accepted and recorded.
        interprocess: accepted and recorded.

    Example:
        >>> start, end = fjax.Event(enable_timing=True), fjax.Event(enable_timing=True)
        >>> start.record(); end.record()
        >>> start.elapsed_time(end) >= 0
        True
    """

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        from ._settings import get_default_device
        from .device import device as _device

        self.device = get_default_device() if device is None else _device(device)
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess
        self._time = None

    @property
    def device_type(self) -> str:
        """The device's type, e.g. ``"cpu"``.

        Example:
            >>> fjax.Event().device_type
            'cpu'
        """
        return self.device.type

    @property
    def device_index(self) -> int:
        """The device's index (0 without one).

        Example:
            >>> fjax.Event().device_index
            0
        """
        return self.device.index or 0

    def record(self, stream=None) -> None:
        """Record the event (now, on the host).

        Example:
            >>> fjax.Event().record()
        """
        self._time = time.perf_counter()

    def wait(self, stream=None) -> None:
        """Make ``stream`` wait for the event: nothing to order on fjax.

        Example:
            >>> fjax.Event().wait()
        """

    def query(self) -> bool:
        """Whether the event's work is done: always True.

        Example:
            >>> fjax.Event().query()
            True
        """
        return True

    def synchronize(self) -> None:
        """Wait for the event: returns at once.

        Example:
            >>> fjax.Event().synchronize()
        """

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event's record and ``end_event``'s.

        Example:
            >>> a, b = fjax.Event(enable_timing=True), fjax.Event(enable_timing=True)
            >>> a.record(); b.record()
            >>> a.elapsed_time(b) >= 0
            True
        """
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Event.elapsed_time: both events need enable_timing=True")
        if self._time is None or end_event._time is None:
            raise ValueError("Event.elapsed_time: both events must be recorded first")
        return (end_event._time - self._time) * 1000.0

    def __repr__(self):
        return f"fjax.Event device_type={self.device_type}, device_index={self.device_index}"


class OutOfMemoryError(RuntimeError):
    """A device ran out of memory (torch.OutOfMemoryError; also ``torch.cuda.OutOfMemoryError``).
    fjax raises it nowhere itself: XLA reports running out as ``jax.errors.JaxRuntimeError``;
    it is here for programs that catch or raise torch's class.

    Example:
        >>> issubclass(fjax.OutOfMemoryError, RuntimeError)
        True
    """


class AcceleratorError(RuntimeError):
    """An error reported by an accelerator's runtime (torch.AcceleratorError).

    Example:
        >>> issubclass(fjax.AcceleratorError, RuntimeError)
        True
    """


class FatalError(Exception):
    """An unrecoverable internal error (torch.FatalError).

    Example:
        >>> issubclass(fjax.FatalError, RuntimeError)
        False
    """


def _assert(condition, message):
    """torch._assert: ``assert condition, message`` that also runs under ``python -O`` (a tensor
    condition is read on the host).

    Example::

        >>> fjax._assert(fjax.tensor(True), "never raised")
    """
    if type(condition) is not bool and hasattr(condition, "item"):
        condition = bool(condition)
    if not condition:
        raise AssertionError(message)


def thread_safe_generator():
    """The random generator for code running in a DataLoader worker thread
    (torch.thread_safe_generator): torch gives thread workers their own Generator and returns
    None elsewhere, so that functions fall back to the default generator. fjax's DataLoader
    workers carry no Generator of their own (a worker's ``get_worker_info().seed`` is there to
    build one), so this returns None everywhere: pass it as ``generator=`` and the default
    generator is used.

    Example:
        >>> g = fjax.thread_safe_generator()
        >>> fjax.randint(0, 10, (3,), generator=g).shape
        fjax.Size([3])
    """
    from .utils.data import get_worker_info

    info = get_worker_info()
    rng = getattr(info, "rng", None)
    if info is not None and getattr(info, "worker_method", None) == "thread" and rng is not None:
        return rng.torch_generator
    return None


def _promotion_operand(x):
    """A Tensor or Python number as what ``ops._promote.result_type`` reads: dtype, ndim and
    whether it is weakly typed (a Python scalar)."""
    if isinstance(x, Tensor):
        return jax.ShapeDtypeStruct(tuple(x.shape), x._data.dtype)
    for py, np_dtype in ((builtins.bool, np.bool_), (builtins.int, np.int64), (builtins.float, np.float32)):
        if isinstance(x, py):
            return jax.ShapeDtypeStruct((), np_dtype, weak_type=True)
    if isinstance(x, complex):
        return jax.ShapeDtypeStruct((), np.complex64, weak_type=True)
    raise TypeError(f"result_type: expected a Tensor or a Python number, got {type(x).__name__}")


def result_type(tensor1, tensor2) -> _dt.dtype:
    """The dtype an arithmetic op on the two operands returns, by torch's promotion rules
    (torch.result_type): tensors with dimensions outrank 0-d tensors, which outrank Python
    numbers, within a category (bool < integer < floating < complex).

    Args:
        tensor1: a Tensor or a Python number.
        tensor2: a Tensor or a Python number.

    Example:
        >>> fjax.result_type(fjax.tensor([1, 2], dtype=fjax.int32), 1.0)
        fjax.float32
        >>> fjax.result_type(fjax.tensor([1, 2], dtype=fjax.uint8), fjax.tensor(1))
        fjax.uint8
    """
    return _dt._BY_NP[np.dtype(_result_type(_promotion_operand(tensor1), _promotion_operand(tensor2)))]
