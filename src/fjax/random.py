"""Random numbers: a stateful torch-style Generator over jax.random keys.

A Generator is a seed plus a counter; every draw uses ``fold_in(key(seed), counter)`` and
advances the counter, so the same seed gives the same numbers and the state is two integers.
Inside a trace (nn.Graph) the key may be a tracer: draws stay functional.
"""

from __future__ import annotations

import contextlib
import threading
import time

import jax
import jax.numpy as jnp

from . import dtypes as _dt
from .creation import _np_dtype, _place, _size
from .errors import OpError
from .tensor import Tensor

draws = [0]
"""Keys drawn from any generator so far (a traced program that drew one cannot be reused)."""


class _Stream:
    __slots__ = ("key", "counter", "offset")

    def __init__(self, key=None, counter=0, offset=0):
        self.key, self.counter, self.offset = key, counter, offset


class Generator:
    """``fjax.Generator().manual_seed(0)``: an independent random stream."""

    def __init__(self, device="cpu"):
        self.device = device
        self._main = _Stream()
        self._traced = threading.local()  # .stream: this thread's stream while it traces a graph
        self.manual_seed(int(time.time_ns()) % (2**31))

    def manual_seed(self, seed: int) -> "Generator":
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
        s = int(time.time_ns()) % (2**31)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        return Tensor._wrap(jnp.asarray([self._seed, self._counter], jnp.int64))

    def set_state(self, state: Tensor) -> "Generator":
        seed, counter = (int(v) for v in state.tolist())
        self.manual_seed(seed)
        self._counter = counter
        return self

    def base_key(self):
        """The stream's root key (``jax.random.key(seed)``)."""
        if self._key is None:
            with jax.ensure_compile_time_eval():  # a concrete key even when first asked for in a trace
                self._key = jax.random.key(self._seed)
        return self._key

    def base_key_data(self):
        """The root key's raw uint32 data (cached: nn.Graph passes it to every step)."""
        key = self.base_key()
        if self._key_data is None or self._key_data[0] is not key:
            self._key_data = (key, jax.random.key_data(key))
        return self._key_data[1]

    def next_key(self):
        """A fresh jax PRNG key; advances the stream."""
        key = jax.random.fold_in(self.base_key(), self._counter + self._offset)
        self._counter += 1
        draws[0] += 1
        return key


default_generator = Generator().manual_seed(67280421310721)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (same seed, same numbers)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(state: Tensor) -> None:
    default_generator.set_state(state)


def _key(generator):
    return (generator or default_generator).next_key()


def _float_dtype(dtype, op):
    dt = _np_dtype(dtype) or _dt.float32.dtype
    if not jnp.issubdtype(dt, jnp.floating):
        raise OpError(f"{op}: expected a floating point dtype, got {_dt.to_dtype(dt)}")
    return dt


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1)."""
    arr = jax.random.uniform(_key(generator), _size(size, "rand"), _float_dtype(dtype, "rand"))
    return _place(arr, device, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples."""
    arr = jax.random.normal(_key(generator), _size(size, "randn"), _float_dtype(dtype, "randn"))
    return _place(arr, device, requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform integers in [low, high); ``randint(high, size)`` also works, as in torch."""
    if size is None:
        low, high, size = 0, low, high
    if high is None or size is None:
        raise OpError("randint: expected randint(low=0, high, size)")
    if high <= low:
        raise OpError(f"randint: expected low < high, got low={low}, high={high}")
    dt = _np_dtype(dtype) or _dt.int64.dtype
    arr = jax.random.randint(_key(generator), _size((size,), "randint"), low, high, jnp.int64).astype(dt)
    return _place(arr, device, requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
    """Normal samples; ``mean``/``std`` may be tensors (broadcast) or floats with ``size``."""
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    shape = _size((size,), "normal") if size is not None else jnp.broadcast_shapes(jnp.shape(m), jnp.shape(s))
    dt = _np_dtype(dtype) or jnp.result_type(*(x.dtype for x in (mean, std) if isinstance(x, Tensor)), jnp.float32)
    arr = jnp.asarray(m, dt) + jnp.asarray(s, dt) * jax.random.normal(_key(generator), shape, dt)
    return _place(arr, device)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """1 with probability ``input`` (or ``p``) per element, else 0; same dtype as input."""
    prob = input._data if p is None else jnp.full(input._data.shape, p, input._data.dtype)
    arr = jax.random.bernoulli(_key(generator), prob).astype(input._data.dtype)
    return Tensor._wrap(arr)


def randperm(n: int, *, generator=None, dtype=None, device=None) -> Tensor:
    """A random permutation of 0..n-1 (int64)."""
    dt = _np_dtype(dtype) or _dt.int64.dtype
    return _place(jax.random.permutation(_key(generator), n).astype(dt), device)


def rand_like(input, dtype=None, device=None, generator=None) -> Tensor:
    return rand(*input.shape, dtype=dtype or input.dtype, device=device, generator=generator)


def randn_like(input, dtype=None, device=None, generator=None) -> Tensor:
    return randn(*input.shape, dtype=dtype or input.dtype, device=device, generator=generator)


def randint_like(input, low, high=None, dtype=None, device=None, generator=None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device, generator=generator)


# -- torch's in-place random fills (Tensor methods): ``w.data.normal_(0, 0.02)`` ---------------
def _refill(tensor: Tensor, op: str, generator, draw) -> Tensor:
    """``tensor`` filled in place (through its storage) with ``draw(key, shape, dtype)``."""
    dt = tensor._data.dtype
    if not jnp.issubdtype(dt, jnp.floating):
        raise OpError(f"{op}: expected a floating point tensor, got {tensor.dtype}")
    return tensor._set_(Tensor._wrap(draw(_key(generator), tuple(tensor.shape), dt).astype(dt)), op)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from N(mean, std**2)."""
    return _refill(self, "normal_", generator, lambda k, s, d: mean + std * jax.random.normal(k, s, d))


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with samples from U(a, b) (torch's ``from``/``to``)."""
    return _refill(self, "uniform_", generator, lambda k, s, d: jax.random.uniform(k, s, d, a, b))


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability ``p`` (a float or tensor), else 0."""
    prob = p._data if isinstance(p, Tensor) else p
    return _refill(self, "bernoulli_", generator, lambda k, s, d: jax.random.bernoulli(k, prob, s))


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples from Exp(lambd)."""
    return _refill(self, "exponential_", generator, lambda k, s, d: jax.random.exponential(k, s, d) / lambd)


Tensor.normal_, Tensor.uniform_ = _normal_, _uniform_
Tensor.bernoulli_, Tensor.exponential_ = _bernoulli_, _exponential_
