"""``fjax.testing``: ``torch.testing``'s ``assert_close`` and ``make_tensor`` for fjax Tensors.

``assert_close`` compares Tensors, numpy arrays, Python numbers, booleans and None, nested in
sequences and mappings, with torch's default tolerances per dtype and torch's failure messages
(dtype and shape reprs are fjax's).
"""

from __future__ import annotations

import collections.abc
import math

import jax
import jax.numpy as jnp
import numpy as np

from . import dtypes as _dt
from .tensor import Tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

_BF16 = np.dtype(jnp.bfloat16)
_TOLERANCES = {  # (rtol, atol), torch's defaults; every other dtype: (0, 0)
    np.dtype(np.float16): (1e-3, 1e-5),
    _BF16: (1.6e-2, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}
_NUMBER_DTYPES = {int: np.dtype(np.int64), float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise and its message."""

    def __init__(self, kind: type, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


def _tolerances(*dtypes, table: dict = _TOLERANCES) -> tuple:
    pairs = [table.get(np.dtype(d), (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_line(kind: str, diff, index, tol, equality: bool) -> str:
    line = (
        f"{kind.title()} difference: {diff}"
        if index is None
        else f"Greatest {kind} difference: {diff} at index {index}"
    )
    return line + ("" if equality else f" (up to {tol} allowed)") + "\n"


def _mismatch_message(identifier, extra, abs_diff, abs_idx, rel_diff, rel_idx, rtol, atol) -> str:
    equality = rtol == 0 and atol == 0
    message = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra}\n"
    message += _diff_line("absolute", abs_diff, abs_idx, atol, equality)
    message += _diff_line("relative", rel_diff, rel_idx, rtol, equality)
    return message.strip()


# -- pairs: one leaf of each input, checked for a supported kind before any value is compared --
_NUMBERS = (int, float, complex, np.number)


def _pair_kind(actual, expected, allow_subclasses: bool) -> str | None:
    if actual is None or expected is None:
        return "none"
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        return "bool"
    if isinstance(actual, _NUMBERS) and isinstance(expected, _NUMBERS):
        return "number"
    for cls in (Tensor, np.ndarray):
        if isinstance(actual, cls) and isinstance(expected, cls):
            if not allow_subclasses and type(actual) is not type(expected):
                return None
            return "tensor"
    return None


def _is_sequence(x) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes))


def _location(path) -> str:
    return "".join(f"[{k!r}]" for k in path)


def _pairs(actual, expected, allow_subclasses: bool, path=()) -> list:
    """Every (kind, actual, expected, path) leaf pair of the two inputs, in order; structure
    mismatches and unsupported inputs raise here, as torch checks them before any value."""
    try:
        if _is_sequence(actual) and _is_sequence(expected):
            if len(actual) != len(expected):
                raise _Mismatch(
                    AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
                )
            out = []
            for i, (a, e) in enumerate(zip(actual, expected)):
                out += _pairs(a, e, allow_subclasses, (*path, i))
            return out
        if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
            keys_a, keys_e = set(actual.keys()), set(expected.keys())
            if keys_a != keys_e:
                missing = sorted(keys_e - keys_a, key=repr)
                extra = sorted(keys_a - keys_e, key=repr)
                raise _Mismatch(
                    AssertionError,
                    "The keys of the mappings do not match:\n"
                    f"Missing keys in the actual mapping: {missing}\n"
                    f"Additional keys in the actual mapping: {extra}",
                )
            try:
                keys = sorted(keys_a)
            except TypeError:
                keys = list(actual.keys())
            out = []
            for k in keys:
                out += _pairs(actual[k], expected[k], allow_subclasses, (*path, k))
            return out
        kind = _pair_kind(actual, expected, allow_subclasses)
        if kind is None:
            raise _Mismatch(
                TypeError,
                f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.",
            )
        return [(kind, actual, expected, path)]
    except _Mismatch as err:
        if path and not getattr(err, "located", False):
            err.message += f"\n\nThe failure occurred for item {_location(path)}"
            err.located = True
        raise


# -- comparisons -------------------------------------------------------------------------------
def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype):
    if isinstance(actual, np.number):
        actual = actual.item()
    if isinstance(expected, np.number):
        expected = expected.item()
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    if rtol is None:
        rtol, atol = _tolerances(_NUMBER_DTYPES[type(actual)], _NUMBER_DTYPES[type(expected)])
    if actual == expected:
        return
    if equal_nan and _isnan(actual) and _isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if math.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol))


def _isnan(x) -> bool:
    if isinstance(x, complex):
        return math.isnan(x.real) or math.isnan(x.imag)
    return isinstance(x, float) and math.isnan(x)


def _scalar_message(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message(
        "Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, rel_diff, None, rtol, atol
    )


def _as_array(x):
    """The values of a Tensor (or numpy array) as a numpy array (bfloat16 as ml_dtypes')."""
    if isinstance(x, Tensor):
        return np.asarray(jax.device_get(x._data))
    return np.asarray(x)


def _dtype_repr(d) -> str:
    return repr(_dt._BY_NP[np.dtype(d)]) if np.dtype(d) in _dt._BY_NP else str(np.dtype(d))


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride):
    a, e = _as_array(actual), _as_array(expected)
    tensors = isinstance(actual, Tensor)

    def attribute(name, x, y):
        if x != y:
            raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {x} != {y}.")

    if a.shape != e.shape:
        shapes = (actual.shape, expected.shape) if tensors else (a.shape, e.shape)
        attribute("shape", repr(shapes[0]), repr(shapes[1]))
    if tensors and check_device:
        attribute("device", str(actual.device), str(expected.device))
    if check_dtype and a.dtype != e.dtype:
        attribute("dtype", _dtype_repr(a.dtype), _dtype_repr(e.dtype))
    if tensors and check_stride and a.size > 0:
        attribute("stride()", tuple(actual.stride()), tuple(expected.stride()))
    if rtol is None:
        rtol, atol = _tolerances(a.dtype, e.dtype)
    if a.dtype != e.dtype:
        common = np.dtype(jnp.promote_types(a.dtype, e.dtype))
        a, e = a.astype(common), e.astype(common)
    matches = _isclose(a, e, rtol, atol, equal_nan)
    if matches.all():
        return
    if a.shape == ():
        raise _Mismatch(AssertionError, _scalar_message(_py(a[()]), _py(e[()]), rtol, atol))
    raise _Mismatch(AssertionError, _tensor_message(a, e, matches, rtol, atol))


def _isclose(a, e, rtol, atol, equal_nan):
    """torch.isclose on numpy arrays of one dtype."""
    close = a == e
    inexact = np.issubdtype(a.dtype, np.inexact) or a.dtype == _BF16
    if equal_nan and inexact:
        close = close | (_nan(a) & _nan(e))
    if rtol == 0 and atol == 0:
        return np.asarray(close)
    with np.errstate(invalid="ignore", over="ignore"):
        if inexact:
            error = np.abs(a - e)
            allowed = (atol + np.abs(rtol * e)).astype(error.dtype)
        else:
            error = np.abs(a.astype(np.float64) - e.astype(np.float64))
            allowed = atol + np.abs(rtol * e.astype(np.float64))
        return np.asarray(close | (np.isfinite(error) & (error <= allowed)))


def _nan(x):
    return np.isnan(x.astype(np.float32)) if x.dtype == _BF16 else np.isnan(x)


def _tensor_message(a, e, matches, rtol, atol) -> str:
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, ok = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    integral = not (np.issubdtype(a.dtype, np.inexact) or a.dtype == _BF16)
    if integral:
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[ok] = 0
        if integral:  # torch divides integer tensors in its default float dtype
            rel_diff = abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)
        else:
            rel_diff = abs_diff / np.abs(e)
        rel_diff[ok] = 0

    def greatest(values):
        flags = _nan(values) if not integral else np.zeros(values.shape, bool)
        i = int(np.argmax(flags)) if flags.any() else int(np.argmax(values))
        return _py(values[i]), np.unravel_index(i, matches.shape)

    abs_max, abs_idx = greatest(abs_diff)
    rel_max, rel_idx = greatest(rel_diff)
    abs_idx = tuple(int(i) for i in abs_idx)
    rel_idx = tuple(int(i) for i in rel_idx)
    return _mismatch_message("Tensor-likes", extra, abs_max, abs_idx, rel_max, rel_idx, rtol, atol)


def _py(x):
    """A numpy scalar as torch's ``.item()`` gives it: a Python bool, int, float or complex."""
    if isinstance(x, (bool, int, float, complex)):
        return x
    kind = np.dtype(type(x)).kind if not isinstance(x, np.generic) else x.dtype.kind
    if kind == "b":
        return bool(x)
    if kind in "iu":
        return int(x)
    return complex(x) if kind == "c" else float(x)


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg=None,
) -> None:
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Inputs may be Tensors, numpy arrays, Python numbers, booleans or None, nested in sequences
    and mappings of the same structure. Tensors must agree in shape and, unless the check is
    turned off, in device, dtype and (``check_stride=True``) strides; then every element must
    satisfy ``|actual - expected| <= atol + rtol * |expected|``. Without ``rtol``/``atol`` (give
    both or neither) the tolerances are torch's defaults for the dtypes: float16 ``(1e-3,
    1e-5)``, bfloat16 ``(1.6e-2, 1e-5)``, float32 ``(1.3e-6, 1e-5)``, float64 ``(1e-7, 1e-7)``
    (complex likewise), integers and bool exact. NaNs are equal only with ``equal_nan=True``.
    ``msg`` replaces the message (a string) or rewrites it (a callable of the message).

    Raises:
        AssertionError: on a mismatch, with torch's message (mismatched element count, the
            greatest absolute and relative differences and where they are).
        TypeError: for inputs of types it cannot compare (a Tensor and a list, say).

    Example::

        >>> fjax.testing.assert_close(fjax.tensor([1.0, 2.0]), fjax.tensor([1.0, 2.0 + 1e-7]))
        >>> try:
        ...     fjax.testing.assert_close(fjax.tensor([1.0, 2.0, 3.0]), fjax.tensor([1.0, 2.5, 3.0]))
        ... except AssertionError as e:
        ...     print(e)
        Tensor-likes are not close!
        <BLANKLINE>
        Mismatched elements: 1 / 3 (33.3%)
        Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
        Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)
        >>> fjax.testing.assert_close([1, {"a": 2.0}], [1, {"a": 2.05}], rtol=0.1, atol=0.0)
    """
    del check_layout  # fjax Tensors are strided only
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    try:
        pairs = _pairs(actual, expected, allow_subclasses)
        for kind, a, e, path in pairs:
            try:
                if kind == "none":
                    if not (a is None and e is None):
                        raise _Mismatch(AssertionError, f"None mismatch: {a} is not {e}")
                elif kind == "bool":
                    if bool(a) != bool(e):
                        raise _Mismatch(AssertionError, f"Booleans mismatch: {a} is not {e}")
                elif kind == "number":
                    _compare_numbers(a, e, rtol, atol, equal_nan, check_dtype)
                else:
                    _compare_tensors(a, e, rtol, atol, equal_nan, check_device, check_dtype, check_stride)
            except _Mismatch as err:
                if path:
                    err.message += f"\n\nThe failure occurred for item {_location(path)}"
                raise
    except _Mismatch as err:
        message = err.message
        if msg is not None:
            message = msg(message) if callable(msg) else msg
        raise err.kind(message) from None


def make_tensor(
    *shape,
    dtype,
    device,
    low=None,
    high=None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format=None,
) -> Tensor:
    """A Tensor of ``shape`` filled with random values, as ``torch.testing.make_tensor``.

    Floating and complex values are uniform in ``[low, high)`` (default ``[-9, 9)``, each part of
    a complex value), integers in ``[low, high)`` (default ``[-9, 10)``, ``[0, 10)`` for uint8),
    bools are random; bounds are clamped to the dtype's range. ``exclude_zero`` replaces zeros
    (by 1 for integers, the smallest normal value for floats); ``noncontiguous`` returns a
    strided view of a larger tensor with the same values semantics.

    Example::

        >>> t = fjax.testing.make_tensor(2, 3, dtype=fjax.float32, device="cpu", low=0, high=1)
        >>> t.shape, t.dtype, bool(((t >= 0) & (t < 1)).all())
        (fjax.Size([2, 3]), fjax.float32, True)
        >>> fjax.testing.make_tensor((4,), dtype=fjax.int64, device="cpu", low=5, high=6)
        tensor([5, 5, 5, 5], dtype=fjax.int64)
    """
    from . import random as _random

    del memory_format
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    dtype = _dt.to_dtype(dtype)
    np_dtype = np.dtype(dtype.dtype)
    if requires_grad and not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(
            f"`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype={dtype}"
        )
    if dtype == _dt.bool:
        out = _random.randint(0, 2, shape, device=device).to(dtype)
    elif not (dtype.is_floating_point or dtype.is_complex):
        info = np.iinfo(np_dtype)
        low = (0 if np_dtype == np.uint8 else -9) if low is None else low
        high = 10 if high is None else high
        _check_bounds(low, high, floating=False)
        low, high = max(math.ceil(low), info.min), min(math.ceil(high), info.max + 1)
        if low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        out = _random.randint(low, high, shape, dtype=dtype, device=device)
    else:
        real = np.dtype(np.float32) if np_dtype == np.complex64 else np.dtype(np.float64)
        bound = float(jnp.finfo(real if dtype.is_complex else np_dtype).max)
        low = -9 if low is None else low
        high = 9 if high is None else high
        _check_bounds(low, high, floating=True)
        low, high = max(float(low), -bound), min(float(high), bound)

        def uniform():
            return _random.rand(*shape, dtype=_dt.float64, device=device) * (high - low) + low

        out = (uniform() + 1j * uniform()) if dtype.is_complex else uniform()
        out = out.to(dtype)
    if exclude_zero:
        if dtype.is_floating_point or dtype.is_complex:
            replacement = float(jnp.finfo(real if dtype.is_complex else np_dtype).tiny)
        else:
            replacement = 1
        out = out.masked_fill(out == 0, replacement)
    if noncontiguous and out.numel() > 1:
        out = out.repeat_interleave(2, dim=-1)[..., ::2]
    if requires_grad:
        out.requires_grad_(True)
    return out


def _check_bounds(low, high, floating: bool) -> None:
    if math.isnan(low) or math.isnan(high):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if (low > high) if floating else (low >= high):
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")


_ALLCLOSE_TOLERANCES = {  # torch's deprecated assert_allclose: its own defaults (rtol, atol)
    np.dtype(np.float16): (1e-3, 1e-3),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float64): (1e-5, 1e-8),
}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan: bool = True, msg: str = "") -> None:
    """torch's deprecated ``assert_allclose``: ``assert_close`` without the dtype check, NaNs equal
    by default, and its older default tolerances (float32: rtol 1e-4, atol 1e-5). Warns that it is
    deprecated, as torch does.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fjax.testing.assert_allclose(fjax.tensor([1.0, 2.0]), [1.0, 2.00001])
    """
    import warnings

    from .tensor import Tensor

    warnings.warn(
        "`fjax.testing.assert_allclose()` is deprecated since torch 1.12; use `fjax.testing.assert_close()`",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, Tensor):
        actual = Tensor._wrap(jnp.asarray(actual))
    if not isinstance(expected, Tensor):
        expected = Tensor._wrap(jnp.asarray(expected, dtype=actual._meta.dtype))
    if rtol is None and atol is None:
        rtol, atol = _tolerances(actual._meta.dtype, expected._meta.dtype, table=_ALLCLOSE_TOLERANCES)
    assert_close(
        actual,
        expected,
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_dtype=False,
        check_stride=False,
        msg=msg or None,
    )
