"""Integer (and bool) arithmetic against torch, swept over the dtypes and the ops.

For each integer dtype (and bool where torch has a kernel) and each op (add, sub, mul, div in its
three rounding modes, floor_divide, remainder, fmod, pow with scalar and tensor exponents, the
shifts, neg, abs), fresh random values plus the edge values (min, max, 0, -1, 1) run through fjax
and torch: the same values and dtype when torch succeeds, the same error class when it raises
(integer division by zero, negative integer powers, bool kernels torch lacks, Python exponents
that overflow the dtype).

What torch leaves to the platform is documented here, not compared:

- ``min // -1`` (and ``%``, ``fmod``, ``div``) for int32/int64 traps in torch (SIGFPE on x86,
  the process dies); fjax wraps to ``min`` (quotient) and 0 (remainder), as XLA defines it.
- casting a float that is out of the integer dtype's range, NaN or inf (``.to(int)``) is
  undefined behaviour in C++ (torch gives INT_MIN or garbage on x86); fjax saturates to the
  dtype's bounds and maps NaN to 0, as XLA's convert does.
- true division of integers is float division; XLA's CPU backend divides by a broadcast scalar
  through its reciprocal, so results can differ from torch's by one ulp (compared to 2 ulps).
"""

import numpy as np
import pytest
import torch

import fjax

SEED = int(np.random.SeedSequence().entropy % 2**32)
RNG = np.random.default_rng(SEED)
INTS = ["uint8", "int8", "int16", "int32", "int64"]
DTYPES = INTS + ["bool"]
TRAPS = ("int32", "int64")  # min / -1 traps in torch for these


def _values(dt, n_random=6):
    if dt == "bool":
        return np.array([True, False, True, False], dtype=bool)
    info = np.iinfo(dt)
    edge = {info.min, info.max, 0, 1, 2, info.max - 1}
    if info.min < 0:
        edge |= {-1, -2, info.min + 1}
    rand = RNG.integers(info.min, int(info.max) + 1, size=n_random, dtype=dt)
    return np.unique(np.concatenate([np.array(sorted(edge), dtype=dt), rand]))


def _call(lib, fn, *arrays):
    try:
        return "ok", fn(lib, *[lib.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays])
    except Exception as e:  # the comparison needs the class
        return "err", e


def _same(what, ft, tt):
    msg = f"{what} (seed {SEED})"
    assert ft[0] == tt[0], f"{msg}: fjax {ft[0]} {ft[1]!r}, torch {tt[0]} {tt[1]!r}"
    if tt[0] == "err":
        assert isinstance(ft[1], type(tt[1])), f"{msg}: fjax raised {type(ft[1]).__name__}: {ft[1]}, torch {tt[1]!r}"
        return
    f, t = ft[1], tt[1]
    assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"{msg}: dtype {f.dtype} vs {t.dtype}"
    fa, ta = np.asarray(f.numpy()), t.numpy()
    assert fa.shape == ta.shape, msg
    if np.issubdtype(ta.dtype, np.floating):
        np.testing.assert_allclose(fa, ta, rtol=2.5e-7, equal_nan=True, err_msg=msg)
    else:
        np.testing.assert_array_equal(fa, ta, err_msg=msg)


BINARY = {
    "add": lambda L, x, y: L.add(x, y),
    "add_alpha": lambda L, x, y: L.add(x, y, alpha=3),
    "sub": lambda L, x, y: L.sub(x, y),
    "mul": lambda L, x, y: L.mul(x, y),
    "div": lambda L, x, y: L.div(x, y),
    "div_floor": lambda L, x, y: L.div(x, y, rounding_mode="floor"),
    "div_trunc": lambda L, x, y: L.div(x, y, rounding_mode="trunc"),
    "floor_divide": lambda L, x, y: L.floor_divide(x, y),
    "remainder": lambda L, x, y: L.remainder(x, y),
    "fmod": lambda L, x, y: L.fmod(x, y),
    "pow": lambda L, x, y: L.pow(x, y),
    "lshift": lambda L, x, y: L.bitwise_left_shift(x, y),
    "rshift": lambda L, x, y: L.bitwise_right_shift(x, y),
}
DIVISIONS = {"div_floor", "div_trunc", "floor_divide", "remainder", "fmod"}


def _grids(op, dt):
    """(a, b) operand pairs broadcasting to a grid; for int32/int64 divisions the min / -1 pairs
    are left out (torch traps on them)."""
    v = _values(dt)
    if dt == "bool":
        return [(v[:, None], v[None, :])]
    if op in DIVISIONS and dt in TRAPS:
        lo = np.iinfo(dt).min
        return [(v[v != lo][:, None], v[None, :]), (v[v == lo][:, None], v[v != -1][None, :])]
    if op == "pow":  # exponents from -3 to the bit width and past it
        e = np.unique(np.concatenate([np.arange(-3, 12), [15, 16, 31, 32, 63, 64, 65, 100]]))
        e = e[(e >= np.iinfo(dt).min) & (e <= np.iinfo(dt).max)].astype(dt)
        return [(v[:, None], e[None, :])]
    if op in ("lshift", "rshift"):  # shifts from negative to past the width, in the same dtype
        s = np.array([-9, -1, 0, 1, 3, 7, 8, 9, 15, 16, 31, 32, 63, 64, 100])
        s = s[(s >= np.iinfo(dt).min) & (s <= np.iinfo(dt).max)].astype(dt)
        return [(v[:, None], s[None, :])]
    return [(v[:, None], v[None, :])]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_tensor_tensor(op, dt):
    fn = BINARY[op]
    for a, b in _grids(op, dt):
        _same(f"{op}[{dt}] tensor-tensor", _call(fjax, fn, a, b), _call(torch, fn, a, b))
        if op in DIVISIONS or op == "div":
            nz = b[b != 0] if dt != "bool" else np.array([True])  # without the zero divisors
            nz = nz.reshape(1, -1)
            _same(f"{op}[{dt}] nonzero divisors", _call(fjax, fn, a, nz), _call(torch, fn, a, nz))


# Python-number operands: in and out of every dtype's range, zero, negative, past the bit width
SCALARS = [0, -1, 2, -3, 9, 65, 200, 300, True, 2.5]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_tensor_scalar(op, dt):
    fn = BINARY[op]
    v = _values(dt)
    for s in SCALARS:
        a = v[v != np.iinfo(dt).min] if dt in TRAPS and s == -1 and op in DIVISIONS else v
        _same(f"{op}[{dt}] tensor-scalar {s!r}", _call(fjax, fn, a, s), _call(torch, fn, a, s))


REVERSED = {
    "radd": lambda L, s, x: s + x,
    "rsub": lambda L, s, x: s - x,
    "rmul": lambda L, s, x: s * x,
    "rtruediv": lambda L, s, x: s / x,
    "rfloordiv": lambda L, s, x: s // x,
    "rmod": lambda L, s, x: s % x,
    "rpow": lambda L, s, x: s**x,
    "rpow_fn": lambda L, s, x: L.pow(s, x),
    "rlshift": lambda L, s, x: s << x,
    "rrshift": lambda L, s, x: s >> x,
}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", sorted(REVERSED))
def test_scalar_tensor(op, dt):
    fn = REVERSED[op]
    v = _values(dt)
    nonzero = v[v != 0] if dt != "bool" else np.array([True])
    for s in (0, -1, 2, 70, True):
        _same(f"{op}[{dt}] scalar {s!r}", _call(fjax, fn, s, v), _call(torch, fn, s, v))
        if op in ("rtruediv", "rfloordiv", "rmod"):
            _same(f"{op}[{dt}] scalar {s!r} nonzero", _call(fjax, fn, s, nonzero), _call(torch, fn, s, nonzero))


UNARY = {
    "neg": lambda L, x: L.neg(x),
    "minus": lambda L, x: -x,
    "abs": lambda L, x: L.abs(x),
    "abs_method": lambda L, x: x.abs(),
    "bitwise_not": lambda L, x: ~x,
}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, dt):
    v = _values(dt)
    _same(f"{op}[{dt}]", _call(fjax, UNARY[op], v), _call(torch, UNARY[op], v))


@pytest.mark.parametrize("op", ["add", "floor_divide", "remainder", "pow"])
def test_mixed_dtypes(op):
    """Promotion between integer dtypes (and bool), each pair once: the result dtype and values."""
    fn = BINARY[op]
    for da in DTYPES:
        for db in DTYPES:
            if da == db:
                continue
            a = _values(da, 3)
            b = _values(db, 3)
            if op in ("floor_divide", "remainder"):
                b = b[b != 0] if db != "bool" else np.array([True])
                if "int32" in (da, db) or "int64" in (da, db):
                    a = a[a != a.min()] if da != "bool" else a
            if op in ("pow", "lshift"):
                b = b[(b >= 0) & (b < 8)] if db != "bool" else b
            _same(
                f"{op}[{da}, {db}]", _call(fjax, fn, a[:, None], b[None, :]), _call(torch, fn, a[:, None], b[None, :])
            )


@pytest.mark.parametrize("dt", INTS)
def test_divide_min_by_minus_one_wraps(dt):
    """Where torch traps (int32/int64) or promotes through int (int8/int16, where it wraps on
    the cast back), fjax wraps as XLA defines it: the quotient is min, the remainder 0."""
    if dt == "uint8":
        pytest.skip("no -1 in uint8")
    lo = np.iinfo(dt).min
    x = fjax.tensor(np.array([lo], dtype=dt))
    for mode in ("floor", "trunc"):
        assert fjax.div(x, -1, rounding_mode=mode).tolist() == [lo]
    assert fjax.floor_divide(x, -1).tolist() == [lo]
    assert fjax.remainder(x, -1).tolist() == [0] and fjax.fmod(x, -1).tolist() == [0]
    if dt not in TRAPS:  # torch does not trap here: compare
        t = torch.tensor(np.array([lo], dtype=dt))
        assert torch.floor_divide(t, -1).tolist() == [lo] and torch.remainder(t, -1).tolist() == [0]


SPECIAL = np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 3e9, -3e9, 70000.5, -70000.5, 300.7, -300.7])


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dt", DTYPES)
def test_float_to_int_casts(dt, src):
    """In-range floats truncate towards zero as in torch (compared); out-of-range, NaN and inf are
    undefined behaviour in torch (C++ float->int conversion) and saturate in fjax (NaN -> 0)."""
    info = np.iinfo(dt) if dt != "bool" else None
    scale = float(info.max) / 2 if info is not None else 3.0  # clear of the bounds float rounding reaches
    inside = np.concatenate([RNG.uniform(-1, 1, size=8) * scale, [0.0, -0.0, 0.5, -0.5, 1.9, -1.9]])
    if info is not None:
        inside = inside[inside > info.min - 1]
        if info.bits <= 16:  # the bounds themselves are exact floats
            inside = np.concatenate([inside, [info.min, info.max, info.max + 0.5]])
    inside = inside.astype(src)
    _same(
        f"{src}->{dt} in range",
        _call(fjax, lambda L, x: x.to(getattr(L, dt)), inside),
        _call(torch, lambda L, x: x.to(getattr(L, dt)), inside),
    )
    special = SPECIAL.astype(src)
    got = np.asarray(fjax.tensor(special).to(getattr(fjax, dt)).numpy())
    if dt == "bool":  # not undefined: nonzero (NaN included) is True, as torch
        np.testing.assert_array_equal(got, torch.tensor(special).to(torch.bool).numpy())
        return
    want = np.where(np.isnan(special), 0, np.where(special > 0, info.max, info.min)).astype(dt)
    inrange = (special > info.min) & (special < info.max)
    np.testing.assert_array_equal(got[~inrange], want[~inrange].astype(dt))  # saturated
    np.testing.assert_array_equal(got[inrange], np.trunc(special[inrange]).astype(dt))
