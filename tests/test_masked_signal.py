"""``fjax.masked`` and ``fjax.signal.windows`` against torch 2.13 on fresh random inputs: values, dtypes,
gradients (a fully masked-out row, a broadcast mask and ``mask=None`` included), signatures and errors.
torch's OpInfo samples run through ``tests/oracle/test_opinfo.py`` (``masked.*``, ``signal.windows.*``)."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch

import fjax
import fjax.masked
import fjax.signal

SEED = int(np.random.SeedSequence().entropy % 2**32)
RNG = np.random.default_rng(SEED)

# (function, positional args after input, keyword args)
MASKED_CASES = {
    "sum": ("sum", (1,), {}),
    "sum_all_keepdim": ("sum", (), {"keepdim": True}),
    "prod": ("prod", ((0, 1),), {}),
    "cumsum": ("cumsum", (1,), {}),
    "cumprod": ("cumprod", (-1,), {}),
    "amax": ("amax", (1,), {}),
    "amin": ("amin", (1,), {"keepdim": True}),
    "argmax": ("argmax", (1,), {}),
    "argmin": ("argmin", (1,), {"dtype": torch.int64}),
    "mean": ("mean", (1,), {}),
    "median": ("median", (1,), {}),
    "norm": ("norm", (2.0, 1), {}),
    "norm_ninf": ("norm", (-math.inf, 1), {}),
    "var": ("var", (1,), {}),
    "std": ("std", (1,), {"correction": 0, "keepdim": True}),
    "softmax": ("softmax", (1,), {}),
    "log_softmax": ("log_softmax", (1,), {}),
    "softmin": ("softmin", (1,), {}),
    "normalize": ("normalize", (2.0, 1), {}),
    "logsumexp": ("logsumexp", (1,), {}),
}


def _mask(kind: str):
    """A (4, 5) mask with row 2 fully masked out, a (5,) mask broadcast over rows, or None."""
    if kind == "none":
        return None
    if kind == "broadcast":
        m = RNG.random(5) < 0.6
        m[0] = True
        return m
    m = RNG.random((4, 5)) < 0.6
    m[:, 0] = True
    m[2] = False
    return m


def _finite_part(out):
    """The result with its non-finite entries (fully masked-out slices) zeroed, on either side."""
    lib = torch if isinstance(out, torch.Tensor) else fjax
    return lib.where(lib.isfinite(out), out, lib.zeros_like(out))


def _close(ours, theirs, where):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (where, ours.dtype, theirs.dtype)
    torch.testing.assert_close(
        torch.from_numpy(np.array(ours.numpy())), theirs.detach(), equal_nan=True, msg=lambda m: f"{where}: {m}"
    )


@pytest.mark.parametrize("mask_kind", ["row", "broadcast", "none"])
@pytest.mark.parametrize("case", list(MASKED_CASES))
def test_masked_matches_torch(case, mask_kind):
    name, args, kwargs = MASKED_CASES[case]
    where = f"masked.{case} mask={mask_kind} (seed {SEED})"
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    mask = _mask(mask_kind)
    grad = name not in ("argmax", "argmin")
    tx = torch.tensor(x, requires_grad=grad)
    fx = fjax.tensor(x, requires_grad=grad)
    tkw = dict(kwargs, mask=None if mask is None else torch.tensor(mask))
    fkw = {k: getattr(fjax, str(v).split(".")[-1]) if isinstance(v, torch.dtype) else v for k, v in kwargs.items()}
    fkw["mask"] = None if mask is None else fjax.tensor(mask)
    t_out = getattr(torch.masked, name)(tx, *args, **tkw)
    f_out = getattr(fjax.masked, name)(fx, *args, **fkw)
    _close(f_out, t_out, where)
    if grad:
        w = RNG.standard_normal(tuple(t_out.shape)).astype(np.float32)
        (t_grad,) = torch.autograd.grad((_finite_part(t_out) * torch.tensor(w)).sum(), tx)
        (f_grad,) = fjax.autograd.grad((_finite_part(f_out) * fjax.tensor(w)).sum(), fx)
        _close(f_grad, t_grad, f"{where}, gradient")


def test_masked_logaddexp_matches_torch():
    a, b = (RNG.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    ma, mb = RNG.random((3, 4)) < 0.5, RNG.random((3, 4)) < 0.5
    ma[0], mb[0] = False, False  # both masked out: -inf
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    fa, fb = fjax.tensor(a, requires_grad=True), fjax.tensor(b, requires_grad=True)
    t_out = torch.masked.logaddexp(ta, tb, input_mask=torch.tensor(ma), other_mask=torch.tensor(mb))
    f_out = fjax.masked.logaddexp(fa, fb, input_mask=fjax.tensor(ma), other_mask=fjax.tensor(mb))
    _close(f_out, t_out, f"masked.logaddexp (seed {SEED})")
    t_grads = torch.autograd.grad(_finite_part(t_out).sum(), (ta, tb))
    f_grads = fjax.autograd.grad(_finite_part(f_out).sum(), (fa, fb))
    for f_g, t_g in zip(f_grads, t_grads):
        _close(f_g, t_g, f"masked.logaddexp gradient (seed {SEED})")


def test_masked_integer_inputs_follow_torch():
    x = RNG.integers(-5, 5, (3, 4)).astype(np.int32)
    m = RNG.random((3, 4)) < 0.5
    m[1] = False
    for name in ("sum", "prod", "amax", "amin", "argmax"):
        t_out = getattr(torch.masked, name)(torch.tensor(x), 1, mask=torch.tensor(m))
        f_out = getattr(fjax.masked, name)(fjax.tensor(x), 1, mask=fjax.tensor(m))
        _close(f_out, t_out, f"masked.{name} of int32 (seed {SEED})")


def test_masked_errors():
    x = fjax.randn(3, 4)
    with pytest.raises(IndexError):
        fjax.masked.sum(x, 2, mask=fjax.ones(3, 4, dtype=fjax.bool))
    with pytest.raises(ValueError, match="mean"):
        fjax.masked.mean(fjax.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="multiple times"):
        fjax.masked.amax(x, (0, 0))
    with pytest.raises(ValueError, match="unbiased and correction"):
        fjax.masked.var(x, 1, True, correction=0)
    with pytest.raises(TypeError, match="masked.sum"):
        fjax.masked.sum([1.0, 2.0])


WINDOWS = {
    "bartlett": {},
    "blackman": {},
    "cosine": {},
    "exponential": {"tau": 2.5},
    "gaussian": {"std": 1.7},
    "general_cosine": {"a": [0.4, 0.35, 0.25]},
    "general_hamming": {"alpha": 0.6},
    "hamming": {},
    "hann": {},
    "kaiser": {"beta": 7.5},
    "nuttall": {},
}


@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("name", list(WINDOWS))
def test_window_matches_torch(name, sym):
    for M in (0, 1, 2, int(RNG.integers(3, 40))):
        for dtype in ("float32", "float64"):
            ours = getattr(fjax.signal.windows, name)(M, sym=sym, dtype=getattr(fjax, dtype), **WINDOWS[name])
            theirs = getattr(torch.signal.windows, name)(M, sym=sym, dtype=getattr(torch, dtype), **WINDOWS[name])
            _close(ours, theirs, f"signal.windows.{name}({M}, sym={sym}, dtype={dtype})")
    assert fjax.signal.windows.hann(3).dtype == fjax.float32
    assert fjax.signal.windows.hann(3, requires_grad=True).requires_grad


def test_window_periodic_centre():
    ours = fjax.signal.windows.exponential(6, sym=False, center=1.5, tau=0.8)
    _close(ours, torch.signal.windows.exponential(6, sym=False, center=1.5, tau=0.8), "exponential center")


def _int64(windows_module):
    return torch.int64 if windows_module is torch.signal.windows else fjax.int64


@pytest.mark.parametrize(
    "call",
    [
        lambda w: w.hann(-1),
        lambda w: w.hamming(4, dtype=_int64(w)),
        lambda w: w.exponential(4, center=1.0),
        lambda w: w.exponential(4, tau=0.0),
        lambda w: w.gaussian(4, std=-1.0),
        lambda w: w.kaiser(4, beta=-1.0),
        lambda w: w.general_cosine(4, a=[]),
    ],
)
def test_window_errors_match_torch(call):
    with pytest.raises(ValueError):
        call(torch.signal.windows)
    with pytest.raises(ValueError):
        call(fjax.signal.windows)


@pytest.mark.parametrize(
    "ours,theirs",
    [(getattr(fjax.masked, n), getattr(torch.masked, n)) for n in fjax.masked.__all__]
    + [(getattr(fjax.signal.windows, n), getattr(torch.signal.windows, n)) for n in fjax.signal.windows.__all__],
    ids=lambda f: f.__name__,
)
def test_signatures_match_torch(ours, theirs):
    def shape(fn):
        return [
            (p.name, p.kind, p.default if p.name != "layout" else None)
            for p in inspect.signature(fn).parameters.values()
        ]

    assert shape(ours) == shape(theirs)
