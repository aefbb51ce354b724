"""Random numbers: a stateful torch-style Generator over jax.random keys.

A Generator is a seed plus a counter; every draw uses ``fold_in(key(seed), counter)`` and
advances the counter, so the same seed gives the same numbers and the state is two integers.
Inside a trace (nn.Graph) the key may be a tracer: draws stay functional.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np

from . import _lazy
from . import dtypes as _dt
from ._config import config
from ._tracing import trace_state
from .creation import (
    _check_global_device,
    _check_layout,
    _global,
    _is_meta_device,
    _like_global,
    _np_dtype,
    _place,
    _size,
    size_keyword,
)
from .device import MetaArray
from .errors import OpError
from .tensor import Tensor

draws = [0]
"""Keys drawn from any generator so far (a traced program that drew one cannot be reused)."""


class _Recording(threading.local):
    draws = None  # a list while ``recording``


_recording = _Recording()


@contextlib.contextmanager
def recording():
    """Within the block (a transform tracing a function), each key an eager-stream generator
    draws is a concrete constant of the traced program, listed as ``(generator, key)`` in the
    yielded list, in order: a call that reuses the program passes keys drawn afresh in the same
    order (``Generator.next_key``), as the function run again would draw them."""
    saved, _recording.draws = _recording.draws, []
    try:
        yield _recording.draws
    finally:
        _recording.draws = saved


class _Stream:
    __slots__ = ("key", "counter", "offset")

    def __init__(self, key=None, counter=0, offset=0):
        self.key, self.counter, self.offset = key, counter, offset


default_generator = None  # the Generator below, made once the class exists


class Generator:
    """``fjax.Generator().manual_seed(0)``: an independent random stream.

    Args:
        device: the device it draws for (``"cpu"``); the stream is the same on every device.

    Example:
        >>> g = fjax.Generator().manual_seed(0)
        >>> a = fjax.rand(3, generator=g)
        >>> b = fjax.rand(3, generator=fjax.Generator().manual_seed(0))
        >>> bool((a == b).all())
        True
    """

    def __init__(self, device="cpu"):
        self.device = device
        self._main = _Stream()
        self._traced = threading.local()  # .stream: this thread's stream while it traces a graph
        self.manual_seed(int(time.time_ns()) % (2**31))

    def manual_seed(self, seed: int) -> "Generator":
        """Restart this stream from ``seed`` and return the generator.

        Args:
            seed: the integer seed; the same seed gives the same draws.

        Example:
            >>> g = fjax.Generator().manual_seed(0)
            >>> a = fjax.rand(2, generator=g)
            >>> bool((fjax.rand(2, generator=g.manual_seed(0)) == a).all())
            True
        """
        if self is default_generator:  # a seeded rerun runs as the first run did: the same bits
            _lazy.restart()
        self._seed = int(seed)
        self._key = None  # made on first use: creating a key starts JAX's backend
        self._key_data = None  # (key, its raw data), for nn.Graph's compiled steps
        self._counter = 0
        self._offset = 0  # nn.Graph sets a traced offset so compiled draws continue this stream
        return self

    def _stream(self) -> "_Stream":
        return getattr(self._traced, "stream", None) or self._main

    _key = property(lambda self: self._stream().key, lambda self, v: setattr(self._stream(), "key", v))
    _counter = property(lambda self: self._stream().counter, lambda self, v: setattr(self._stream(), "counter", v))
    _offset = property(lambda self: self._stream().offset, lambda self, v: setattr(self._stream(), "offset", v))

    @contextlib.contextmanager
    def _tracing(self, key, offset):
        """Within a graph trace in this thread: draws come from ``key`` at the traced ``offset``
        (counted from 0); other threads keep drawing from the eager stream."""
        saved = getattr(self._traced, "stream", None)
        self._traced.stream = _Stream(key, 0, offset)
        try:
            yield
        finally:
            self._traced.stream = saved

    def seed(self) -> int:
        """Reseed this stream from the clock and return the new seed.

        Example:
            >>> g = fjax.Generator()
            >>> g.seed() == g.initial_seed()
            True
        """
        s = int(time.time_ns()) % (2**31)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this stream started from.

        Example:
            >>> fjax.Generator().manual_seed(3).initial_seed()
            3
        """
        return self._seed

    def get_state(self) -> Tensor:
        """The stream's state, ``[seed, draws so far]`` as an int64 tensor, for ``set_state``.

        Example:
            >>> fjax.Generator().manual_seed(3).get_state()
            tensor([3, 0], dtype=fjax.int64)
        """
        return Tensor._wrap(jnp.asarray([self._seed, self._counter], jnp.int64))

    def clone_state(self) -> "Generator":
        """A new generator on the same device in this one's state: both draw the same numbers next.

        Example:
            >>> g = fjax.Generator().manual_seed(5)
            >>> h = g.clone_state()
            >>> bool((fjax.rand(3, generator=g) == fjax.rand(3, generator=h)).all())
            True
        """
        return Generator(self.device).set_state(self.get_state())

    def set_state(self, state: Tensor) -> "Generator":
        """Restore a state from ``get_state``: the draws that followed it repeat.

        Args:
            state: a tensor returned by ``get_state``.

        Example:
            >>> g = fjax.Generator().manual_seed(3)
            >>> state = g.get_state()
            >>> a = fjax.rand(2, generator=g)
            >>> bool((fjax.rand(2, generator=g.set_state(state)) == a).all())
            True
        """
        seed, counter = (int(v) for v in state.tolist())
        self.manual_seed(seed)
        self._counter = counter
        return self

    def base_key(self):
        """The stream's root key (``jax.random.key(seed)``).

        Example:
            >>> fjax.Generator().manual_seed(0).base_key().dtype
            key<fry>
        """
        if self._key is None:
            with jax.ensure_compile_time_eval():  # a concrete key even when first asked for in a trace
                self._key = jax.random.key(self._seed)
        return self._key

    def base_key_data(self):
        """The root key's raw uint32 data (cached: nn.Graph passes it to every step).

        Example:
            >>> data = fjax.Generator().manual_seed(0).base_key_data()
            >>> data.shape, data.dtype
            ((2,), dtype('uint32'))
        """
        key = self.base_key()
        if self._key_data is None or self._key_data[0] is not key:
            self._key_data = (key, jax.random.key_data(key))
        return self._key_data[1]

    def next_key(self):
        """A fresh jax PRNG key; advances the stream.

        Example:
            >>> g = fjax.Generator().manual_seed(0)
            >>> bool((g.next_key() == g.next_key()))
            False
        """
        recorded = _recording.draws
        if recorded is not None and self._traced_stream() is None:  # a transform traces (``recording``)
            with jax.ensure_compile_time_eval():  # a concrete key: a constant of the program
                key = jax.random.fold_in(self.base_key(), self._advance())
            recorded.append((self, key))
        else:
            key = _fold_in(self.base_key(), self._advance())
        return key

    def _advance(self):
        """The position of the stream's next draw; the stream moves past it."""
        at = self._counter + self._offset
        self._counter += 1
        draws[0] += 1
        return at

    def _pending_key(self):
        """``next_key()`` for a kernel that eager fusion records (dropout's mask): under fusion its
        ``fold_in`` is recorded in the thread's segment too, so the draw adds no XLA call of its
        own (one right after a step's program costs ~100 us here) and the key never leaves the
        program. The same key; elsewhere (fusion off, a trace) ``next_key()`` itself."""
        if not config.eager_fusion or trace_state.depth or _recording.draws is not None or self._traced_stream():
            return self.next_key()
        return _lazy.then(_fold_in, [self.base_key(), self._advance()], always=True)

    def _skip(self) -> None:
        """Advance the stream past one draw, as ``next_key()`` would, without making its key."""
        if _recording.draws is not None and self._traced_stream() is None:
            self.next_key()  # (recorded for the transform's replay)
        else:
            self._advance()

    def _traced_stream(self):
        return getattr(self._traced, "stream", None)


# jitted: the same key (bits) as ``jax.random.fold_in``, which dispatches its few ops one by one
# (~150 us a draw here; jitted ~13 us); inlined where the offset is traced
_fold_in = jax.jit(jax.random.fold_in)

_bernoulli = jax.jit(lambda key, prob: jax.random.bernoulli(key, prob).astype(prob.dtype))

default_generator = Generator().manual_seed(67280421310721)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator, which every random function and dropout draws from unless
    given a ``generator``; the same seed gives the same numbers again. Returns the generator.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> a = fjax.rand(3)
        >>> _ = fjax.manual_seed(0)
        >>> bool((fjax.rand(3) == a).all())
        True
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from the clock (a non-deterministic seed) and return that seed.

    Example::

        >>> s = fjax.seed()
        >>> s == fjax.initial_seed()
        True
        >>> _ = fjax.manual_seed(0)
    """
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with.

    Example::

        >>> _ = fjax.manual_seed(42)
        >>> fjax.initial_seed()
        42
    """
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state as an int64 tensor ``[seed, draws so far]``; pass it to
    ``set_rng_state`` to replay the numbers drawn after this point.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> fjax.get_rng_state()
        tensor([0, 0], dtype=fjax.int64)
        >>> _ = fjax.rand(2)
        >>> fjax.get_rng_state()
        tensor([0, 1], dtype=fjax.int64)
    """
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator to a state returned by ``get_rng_state``.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> state = fjax.get_rng_state()
        >>> a = fjax.randn(2)
        >>> fjax.set_rng_state(state)
        >>> bool((fjax.randn(2) == a).all())
        True
    """
    default_generator.set_state(new_state)


def _key(generator):
    return (generator or default_generator).next_key()


def _drawn(device, shape, dtype, draw):
    """``draw()``, or on the meta device an array of that shape and dtype with no values (nothing
    is drawn or allocated, and the generator does not advance)."""
    return MetaArray(tuple(shape), np.dtype(dtype)) if _is_meta_device(device) else draw()


def _float_dtype(dtype, op):
    dt = _np_dtype(dtype) or _dt.get_default_dtype().dtype
    if not jnp.issubdtype(dt, jnp.floating):
        raise OpError(f"{op}: expected a floating point dtype, got {_dt.to_dtype(dt)}")
    return dt


def _random_global(op, arr, device, requires_grad, placement, sbp) -> Tensor:
    """A random op's result, global with OneFlow's ``placement=``/``sbp=`` (split or broadcast):
    the whole logical tensor is drawn from one key and each device keeps its piece."""
    device = _check_global_device(op, device, placement)
    return _global(op, _place(arr, device, requires_grad), placement, sbp, device, random=True)


@size_keyword
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, placement=None, sbp=None) -> Tensor:
    """A tensor of the given size (ints or one tuple) with samples drawn uniformly from ``[0, 1)``;
    float32 unless ``dtype`` (a floating dtype) says otherwise. OneFlow's ``placement=`` and
    ``sbp=`` (split or broadcast) make a global tensor with the same values as the local one
    drawn from the same generator state.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.rand(2, 3)
        >>> x.shape, x.dtype
        (fjax.Size([2, 3]), fjax.float32)
        >>> bool(((x >= 0) & (x < 1)).all())
        True
    """
    shape, dt = _size(size, "rand"), _float_dtype(dtype, "rand")
    arr = _drawn(device, shape, dt, lambda: flat(lambda s: jax.random.uniform(_key(generator), s, dt), shape))
    return _random_global("rand", arr, device, requires_grad, placement, sbp)


@size_keyword
def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, placement=None, sbp=None) -> Tensor:
    """A tensor of the given size with samples from the standard normal distribution (mean 0,
    variance 1); float32 unless ``dtype`` (a floating dtype) says otherwise. OneFlow's
    ``placement=`` and ``sbp=`` (split or broadcast) make it global.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> fjax.randn(2, 3, dtype=fjax.float64).dtype
        fjax.float64
        >>> fjax.randn(2, 3, placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.split(0)).sbp
        (fjax.sbp.split(dim=0),)
    """
    shape, dt = _size(size, "randn"), _float_dtype(dtype, "randn")
    arr = _drawn(device, shape, dt, lambda: flat(lambda s: jax.random.normal(_key(generator), s, dt), shape))
    return _random_global("randn", arr, device, requires_grad, placement, sbp)


def randint(
    low,
    high=None,
    size=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad=False,
    placement=None,
    sbp=None,
) -> Tensor:
    """A tensor of shape ``size`` with integers drawn uniformly from ``[low, high)`` (``high``
    excluded), int64 unless ``dtype`` says otherwise. ``randint(high, size)`` starts at 0, as in
    torch. OneFlow's ``placement=`` and ``sbp=`` make it global.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> r = fjax.randint(3, 7, (5,))
        >>> r.dtype, bool(((r >= 3) & (r < 7)).all())
        (fjax.int64, True)
        >>> fjax.randint(10, (2, 2)).shape
        fjax.Size([2, 2])
    """
    if size is None:
        low, high, size = 0, low, high
    if high is None or size is None:
        raise OpError("randint: expected randint(low=0, high, size)")
    if high <= low:
        raise OpError(f"randint: expected low < high, got low={low}, high={high}")
    dt = _np_dtype(dtype) or _dt.int64.dtype
    shape = _size((size,), "randint")
    arr = _drawn(
        device,
        shape,
        dt,
        lambda: flat(lambda s: jax.random.randint(_key(generator), s, low, high, jnp.int64), shape).astype(dt),
    )
    return _random_global("randint", arr, device, requires_grad, placement, sbp)


def normal(
    mean=0.0,
    std=1.0,
    size=None,
    *,
    generator=None,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
    placement=None,
    sbp=None,
) -> Tensor:
    """Samples from normal distributions with the given ``mean`` and standard deviation ``std``.

    ``mean`` and ``std`` may be tensors, broadcast against each other (the result has their
    shape), or floats together with ``size``. OneFlow's ``placement=`` and ``sbp=`` make the
    result global.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> fjax.normal(fjax.tensor([0.0, 10.0]), 0.0)
        tensor([ 0., 10.], dtype=fjax.float32)
        >>> fjax.normal(2.0, 3.0, size=(2, 3)).shape
        fjax.Size([2, 3])
    """
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    shape = _size((size,), "normal") if size is not None else jnp.broadcast_shapes(jnp.shape(m), jnp.shape(s))
    given = (x.dtype for x in (mean, std) if isinstance(x, Tensor))
    dt = _np_dtype(dtype) or jnp.result_type(*given, _dt.get_default_dtype().dtype)
    _check_layout("normal", layout)

    def draw():
        return jnp.asarray(m, dt) + jnp.asarray(s, dt) * jax.random.normal(_key(generator), shape, dt)

    arr = _drawn(device, shape, dt, draw)
    return _random_global("normal", arr, device, requires_grad, placement, sbp)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """Draw 1 with probability ``input[i]`` (or with probability ``p`` when given) for each
    element, else 0; the result has ``input``'s shape and dtype.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> fjax.bernoulli(fjax.tensor([0.0, 1.0, 1.0]))
        tensor([0., 1., 1.], dtype=fjax.float32)
    """
    if p is not None:
        prob = jnp.full(tuple(input.shape), p, input.dtype.dtype)
    else:
        prob = input._meta
        if type(prob) is MetaArray:
            return Tensor._wrap(prob)
        if type(prob) is not _lazy.Pending:
            prob = input._data  # (a bucketed value: its real rows)
    # (under eager fusion the key and the draw are recorded: a pending ``input`` stays pending)
    return Tensor._wrap(_lazy.then(_bernoulli, [(generator or default_generator)._pending_key(), prob]))


def randperm(
    n: int, *, generator=None, dtype=None, device=None, requires_grad=False, placement=None, sbp=None
) -> Tensor:
    """A random permutation of the integers ``0 .. n - 1``, int64 unless ``dtype`` says otherwise.
    With OneFlow's ``placement=`` and ``sbp=`` it is a global tensor whose logical value is one
    permutation (each device holds its piece of it under ``split(0)``).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> sorted(fjax.randperm(5).tolist())
        [0, 1, 2, 3, 4]
    """
    dt = _np_dtype(dtype) or _dt.int64.dtype
    arr = _drawn(device, (n,), dt, lambda: jax.random.permutation(_key(generator), n).astype(dt))
    return _random_global("randperm", arr, device, requires_grad, placement, sbp)


def rand_like(
    input, *, generator=None, dtype=None, device=None, requires_grad=False, placement=None, sbp=None
) -> Tensor:
    """``rand`` with the shape of ``input`` and, unless ``dtype`` is given, its dtype.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> fjax.rand_like(fjax.zeros(2, 2, dtype=fjax.float64)).dtype
        fjax.float64
    """
    placement, sbp = _like_global(input, device, placement, sbp)
    return rand(
        *input.shape,
        dtype=dtype or input.dtype,
        device=device,
        generator=generator,
        requires_grad=requires_grad,
        placement=placement,
        sbp=sbp,
    )


def randn_like(
    input, *, generator=None, dtype=None, device=None, requires_grad=False, placement=None, sbp=None
) -> Tensor:
    """``randn`` with the shape of ``input`` and, unless ``dtype`` is given, its dtype.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> fjax.randn_like(fjax.zeros(2, 2)).shape
        fjax.Size([2, 2])
    """
    placement, sbp = _like_global(input, device, placement, sbp)
    return randn(
        *input.shape,
        dtype=dtype or input.dtype,
        device=device,
        generator=generator,
        requires_grad=requires_grad,
        placement=placement,
        sbp=sbp,
    )


def randint_like(
    input, low, high=None, *, generator=None, dtype=None, device=None, requires_grad=False, placement=None, sbp=None
) -> Tensor:
    """``randint(low, high)`` with the shape of ``input`` and, unless ``dtype`` is given, its dtype
    (so a float input gives whole numbers stored as floats); ``randint_like(input, high)`` starts at 0.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> fjax.randint_like(fjax.zeros(3), 1, 2)
        tensor([1., 1., 1.], dtype=fjax.float32)
    """
    if high is None:
        low, high = 0, low
    dtype = dtype or input.dtype
    placement, sbp = _like_global(input, device, placement, sbp)
    return randint(
        low,
        high,
        tuple(input.shape),
        generator=generator,
        dtype=dtype,
        device=device,
        requires_grad=requires_grad,
        placement=placement,
        sbp=sbp,
    )


# -- torch's in-place random fills (Tensor methods): ``w.data.normal_(0, 0.02)`` ---------------
def _refill(tensor: Tensor, op: str, generator, draw, floating=True, elementwise=True) -> Tensor:
    """``tensor`` filled in place (through its storage) with ``draw(key, shape, dtype)``; drawn
    flat (``flat``) where the draw is ``elementwise`` in the shape (no array argument of it)."""
    dt = tensor._data.dtype
    if floating and not jnp.issubdtype(dt, jnp.floating):
        raise OpError(f"{op}: expected a floating point tensor, got {tensor.dtype}")
    if tensor.is_meta:  # no values to fill (nn.init on a model built on the meta device)
        return tensor
    key, shape = _key(generator), tuple(tensor.shape)
    values = flat(lambda s: draw(key, s, dt), shape) if elementwise else draw(key, shape, dt)
    return tensor._set_(Tensor._wrap(values.astype(dt)), op)


def flat(draw, shape):
    """``draw(shape)``, a ``jax.random`` draw, made as one flat vector and reshaped to ``shape``:
    the same numbers (threefry's counters run over the flat index, with
    ``jax_threefry_partitionable`` on or off), but XLA compiles the draw once per size, not per
    shape, and far faster: on the CPU a 4-d uniform draw took 5 s to compile under load, its flat
    one 0.8 s (a DCGAN's first step spent 16 of its 33 s compiling its four weights' draws)."""
    return draw((math.prod(shape),)).reshape(shape)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from N(mean, std**2).

    Args:
        mean, std: the distribution's mean and standard deviation.
        generator: the random stream; the default one if None.

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.zeros(1000).normal_(2.0, 0.5)
        >>> round(x.mean().item(), 1)
        2.0
    """
    return _refill(self, "normal_", generator, lambda k, s, d: mean + std * jax.random.normal(k, s, d))


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with samples from U(a, b) (torch's ``from``/``to``).

    Args:
        a, b: the interval's ends.
        generator: the random stream; the default one if None.

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.zeros(1000).uniform_(-1, 1)
        >>> bool((x >= -1).all() and (x < 1).all())
        True
    """
    return _refill(self, "uniform_", generator, lambda k, s, d: jax.random.uniform(k, s, d, a, b))


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability ``p`` (a float or tensor), else 0.

    Args:
        p: the probability of a 1.
        generator: the random stream; the default one if None.

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.zeros(1000).bernoulli_(0.5)
        >>> x.unique()
        tensor([0., 1.], dtype=fjax.float32)
    """
    prob = p._data if isinstance(p, Tensor) else p
    return _refill(
        self,
        "bernoulli_",
        generator,
        lambda k, s, d: jax.random.bernoulli(k, prob, s),
        floating=False,
        elementwise=jnp.ndim(prob) == 0,
    )


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples from Exp(lambd).

    Args:
        lambd: the rate.
        generator: the random stream; the default one if None.

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.zeros(1000).exponential_(2.0)
        >>> bool((x > 0).all())
        True
    """
    return _refill(self, "exponential_", generator, lambda k, s, d: jax.random.exponential(k, s, d) / lambd)


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with samples from the Cauchy distribution with location ``median`` and scale ``sigma``.

    Args:
        median, sigma: the location and scale.
        generator: the random stream; the default one if None.

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.zeros(1000).cauchy_()
        >>> x.shape
        fjax.Size([1000])
    """
    return _refill(self, "cauchy_", generator, lambda k, s, d: median + sigma * jax.random.cauchy(k, s, d))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with ``exp`` of samples from N(mean, std**2) (torch's defaults: mean 1, std 2).

    Args:
        mean, std: the mean and standard deviation of the underlying normal.
        generator: the random stream; the default one if None.

    Example:
        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.zeros(1000).log_normal_()
        >>> bool((x > 0).all())
        True
    """
    return _refill(self, "log_normal_", generator, lambda k, s, d: jnp.exp(mean + std * jax.random.normal(k, s, d)))


def _geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to and including the first success (1, 2, ...).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.empty(1000).geometric_(0.5)
        >>> bool(x.min() >= 1), abs(float(x.mean()) - 2.0) < 0.2
        (True, True)
    """
    if not 0 < p <= 1:
        raise OpError(f"geometric_: expected 0 < p <= 1, got p={p}")

    def draw(k, s, d):
        u = jax.random.uniform(k, s, jnp.float32, minval=jnp.finfo(jnp.float32).tiny)
        return jnp.ceil(jnp.log(u) / jnp.log1p(-p)) if p < 1 else jnp.ones(s)

    return _refill(self, "geometric_", generator, draw, floating=False)


def _random_bounds(dt) -> tuple:
    """torch's default ``random_`` range for a dtype, as ``[low, high)``: every integer a float's
    mantissa holds exactly (``[0, 2**24]`` for float32), or the integer dtype's whole non-negative range."""
    if dt == jnp.bool_:
        return 0, 2
    if jnp.issubdtype(dt, jnp.floating):
        return 0, 2 ** jnp.finfo(dt).nmant * 2 + 1
    return 0, int(jnp.iinfo(dt).max) + (1 if jnp.iinfo(dt).max < 2**63 - 1 else 0)


def _random_(self, *args, generator=None, **kwargs):
    """Fill in place with integers drawn uniformly from ``[from, to)`` (torch's ``random_``):
    ``x.random_(to)`` draws from ``[0, to)``, ``x.random_(from, to)`` from ``[from, to)``, and
    ``x.random_()`` from every integer ``x``'s dtype holds exactly (``[0, 2**24]`` for float32,
    ``[0, 2**63 - 1)`` for int64). Works on float, integer and bool tensors.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.zeros(100).random_(3, 6)
        >>> sorted(set(x.tolist()))
        [3.0, 4.0, 5.0]
    """
    names = ("from", "to")
    if len(args) > 2 or set(kwargs) - set(names):
        raise TypeError(f"random_: expected random_(from=0, to=None, *, generator=None), got {args} {kwargs}")
    bounds = dict(zip(names, args))
    if len(args) == 1 and not kwargs:  # torch's random_(to) overload
        bounds = {"to": args[0]}
    for name in names:
        if name in kwargs:
            if name in bounds:
                raise TypeError(f"random_: got multiple values for argument '{name}'")
            bounds[name] = kwargs[name]
    dt = self._data.dtype
    default_low, default_high = _random_bounds(dt)
    low = int(bounds.get("from") if bounds.get("from") is not None else default_low)
    high = int(bounds["to"]) if bounds.get("to") is not None else default_high
    if low >= high:
        raise OpError(f"random_: expected 'from' to be less than 'to', got from={low} >= to={high}")

    def draw(k, s, d):
        return jax.random.randint(k, s, low, high, jnp.int64).astype(d)

    return _refill(self, "random_", generator, draw, floating=False)


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Draw ``num_samples`` category indices (int64) for each row of ``input``, a 1-D or 2-D
    tensor of non-negative weights (they need not sum to 1), index ``i`` with probability
    ``input[i] / input.sum()``. Without ``replacement`` every row's indices are distinct (drawn one
    after another in proportion to the remaining weights, as torch does; once the nonzero weights
    are used up, zero-weight indices follow), so ``num_samples`` may not exceed the number of
    categories; with it indices repeat.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> w = fjax.tensor([0.0, 10.0, 3.0, 0.0])
        >>> sorted(fjax.multinomial(w, 2).tolist())
        [1, 2]
        >>> r = fjax.multinomial(w, 5, replacement=True)
        >>> r.shape, r.dtype, set(r.tolist()) <= {1, 2}
        (fjax.Size([5]), fjax.int64, True)
    """
    p = input._data
    if p.ndim not in (1, 2):
        raise OpError(f"multinomial: prob_dist must be 1 or 2 dim, got {p.ndim}")
    if not jnp.issubdtype(p.dtype, jnp.floating):
        raise OpError(f"multinomial: only supports floating-point dtypes for input, got {input.dtype}")
    n = p.shape[-1]
    num_samples = int(num_samples)
    if num_samples <= 0:
        raise OpError(f"multinomial: cannot sample n_sample <= 0 samples, got {num_samples}")
    if not replacement and num_samples > n:
        raise OpError(
            f"multinomial: cannot sample {num_samples} > prob_dist.size(-1) = {n} samples without replacement"
        )
    if not isinstance(p, jax.core.Tracer):
        if bool(jnp.any(p < 0)) or not bool(jnp.all(jnp.isfinite(p))):
            raise OpError("multinomial: probability tensor contains either inf, nan or element < 0")
        if bool(jnp.any(jnp.sum(p, axis=-1) <= 0)):
            raise OpError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    dt = jnp.promote_types(p.dtype, jnp.float32)
    logits = jnp.log(p.astype(dt))
    key = _key(generator)
    if replacement:
        out = jax.random.categorical(key, logits[..., None, :], axis=-1, shape=p.shape[:-1] + (num_samples,))
    else:  # Gumbel top-k: sequential sampling without replacement in one draw
        out = jax.lax.top_k(logits + jax.random.gumbel(key, p.shape, dt), num_samples)[1]
    return Tensor._wrap(out.astype(jnp.int64))


Tensor.normal_, Tensor.uniform_ = _normal_, _uniform_
Tensor.bernoulli_, Tensor.exponential_ = _bernoulli_, _exponential_
Tensor.random_, Tensor.multinomial = _random_, multinomial
Tensor.cauchy_, Tensor.log_normal_, Tensor.geometric_ = _cauchy_, _log_normal_, _geometric_
Tensor.bernoulli = bernoulli
