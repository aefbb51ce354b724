"""searchsorted, bucketize, isin, cdist, meshgrid, mode, cov, trapezoid, renorm ... against torch.

Each op's oracle samples run again here on a fresh seed, and the cases samples cannot express
(sorted random sequences, ties, warnings, errors, methods) are checked directly.
"""

from __future__ import annotations

import os
import random
import warnings

import numpy as np
import pytest
import torch

import fjax
from fjax.errors import OpError

from .oracle.helper import run_case
from .oracle.samples_compare import SAMPLES as _COMPARE
from .oracle.samples_elementwise import SAMPLES as _ELEMENTWISE
from .oracle.samples_reduce import SAMPLES as _REDUCE
from .oracle.samples_shape import SAMPLES as _SHAPE

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))

OPS = {
    "compare": ["searchsorted", "bucketize", "isin"],
    "elementwise": ["gcd", "lcm", "heaviside", "ldexp"],
    "reduce": ["mode", "logcumsumexp", "diff", "cov", "corrcoef", "cdist", "trapezoid", "trapz", "renorm"],
    "shape": [
        "meshgrid",
        "tril_indices",
        "triu_indices",
        "diag_embed",
        "diagflat",
        "ravel",
        "clone",
        "atleast_1d",
        "atleast_2d",
        "atleast_3d",
        "column_stack",
        "row_stack",
        "vsplit",
        "hsplit",
        "dsplit",
        "cartesian_prod",
        "block_diag",
    ],
}
_TABLES = {"compare": _COMPARE, "elementwise": _ELEMENTWISE, "reduce": _REDUCE, "shape": _SHAPE}
CASES = [
    pytest.param(name, i, id=f"{name}-{i}")
    for family, names in OPS.items()
    for name in names
    for i in range(len(_TABLES[family][name]))
]


@pytest.mark.parametrize("name, index", CASES)
def test_sample_on_a_fresh_seed(name, index):
    family = next(f for f, names in OPS.items() if name in names)
    run_case(name, _TABLES[family][name][index], "float32", SEED + 7919 + index)


def _rng(offset=0):
    return np.random.default_rng(SEED + offset)


def _t(a, grad=False):
    return fjax.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _same(a, b, rtol=1e-5, atol=1e-6):
    a = a.numpy() if hasattr(a, "numpy") and not isinstance(a, torch.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    a = np.asarray(a)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_random_sorted_rows(side):
    rng = _rng(1)
    seq = np.sort(rng.integers(-5, 5, (3, 4, 9)), axis=-1).astype(np.float64)
    vals = rng.integers(-6, 6, (3, 4, 5)).astype(np.float64)
    (fs, ts), (fv, tv) = _t(seq), _t(vals)
    _same(fjax.searchsorted(fs, fv, side=side), torch.searchsorted(ts, tv, side=side))
    _same(fjax.searchsorted(fs, input=fv, right=side == "right"), torch.searchsorted(ts, input=tv, side=side))
    perm = np.stack([rng.permutation(9) for _ in range(12)]).reshape(3, 4, 9)
    shuffled = np.take_along_axis(seq, perm, -1)
    sorter = np.argsort(shuffled, axis=-1, kind="stable")
    (fu, tu), (fo, to) = _t(shuffled), _t(sorter)
    _same(fjax.searchsorted(fu, fv, sorter=fo, side=side), torch.searchsorted(tu, tv, sorter=to, side=side))


def test_searchsorted_and_bucketize_arguments():
    seq = fjax.tensor([1.0, 2.0, 3.0])
    with pytest.raises(OpError):
        fjax.searchsorted(seq, fjax.tensor([2.0]), right=True, side="left")
    with pytest.raises(OpError):
        fjax.searchsorted(fjax.ones(2, 3), fjax.ones(3, 3))
    with pytest.raises(OpError):
        fjax.bucketize(fjax.ones(3), fjax.ones(2, 2))
    assert fjax.bucketize(fjax.tensor([2.5]), seq, out_int32=True).dtype == fjax.int32
    assert fjax.searchsorted(seq, 2.5).shape == ()


def test_isin_random_and_nan():
    rng = _rng(2)
    a, b = rng.integers(0, 50, (20, 7)), rng.integers(0, 50, (30,))
    (fa, ta), (fb, tb) = _t(a), _t(b)
    _same(fjax.isin(fa, fb), torch.isin(ta, tb))
    _same(fjax.isin(fa, fb, invert=True), torch.isin(ta, tb, invert=True))
    _same(fjax.isin(2, fb), torch.isin(2, tb))
    nan = [1.0, float("nan")]
    _same(fjax.isin(fjax.tensor(nan), fjax.tensor(nan)), torch.isin(torch.tensor(nan), torch.tensor(nan)))


def test_mode_ties_pick_smallest_value_and_its_last_index():
    rng = _rng(3)
    x = rng.integers(0, 4, (50, 11))
    fv, fi = fjax.mode(fjax.tensor(x), 1)
    tv, ti = torch.mode(torch.tensor(x), 1)
    _same(fv, tv)
    _same(fi, ti)
    out = fjax.tensor(x).mode(0, keepdim=True)
    assert out.values.shape == (1, 11) and out.indices.dtype == fjax.int64


def test_mode_gradient_reaches_the_selected_element():
    x = fjax.tensor([[1.0, 2.0, 1.0, 3.0]], requires_grad=True)
    fjax.mode(x).values.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 1.0, 0.0]]


def test_meshgrid_warns_only_without_indexing():
    a, b = fjax.tensor([1, 2]), fjax.tensor([3, 4, 5])
    with pytest.warns(UserWarning, match="indexing"):
        out = fjax.meshgrid(a, fjax.tensor([7, 8, 9, 10]))
    assert [tuple(o.shape) for o in out] == [(2, 4), (2, 4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fjax.meshgrid(a, b, indexing="ij")
        fjax.meshgrid([a, b], indexing="xy")
    with pytest.raises(OpError):
        fjax.meshgrid(a, fjax.tensor([1.0]), indexing="ij")


def test_cdist_gradient_at_coincident_rows_matches_torch():
    rng = _rng(4)
    x = rng.standard_normal((4, 3))
    for p in (2.0, 1.0, 3.0):
        fx, tx = _t(x, grad=True)
        fy, ty = _t(x[1:3].copy(), grad=True)
        fo, to = fjax.cdist(fx, fy, p), torch.cdist(tx, ty, p)
        _same(fo, to, 1e-6, 1e-8)
        w = rng.standard_normal(to.shape)
        (fo * fjax.tensor(w)).sum().backward()
        (to * torch.tensor(w)).sum().backward()
        _same(fx.grad, tx.grad, 1e-6, 1e-8)
        _same(fy.grad, ty.grad, 1e-6, 1e-8)


def test_cov_weights_and_trapezoid_sample_points_gradients():
    rng = _rng(5)
    x, aw, fw = rng.standard_normal((3, 8)), rng.uniform(0.1, 1, 8), rng.integers(1, 4, 8)
    (fx, tx), (fa, ta) = _t(x, grad=True), _t(aw, grad=True)
    fo = fjax.cov(fx, correction=1, fweights=fjax.tensor(fw), aweights=fa)
    to = torch.cov(tx, correction=1, fweights=torch.tensor(fw), aweights=ta)
    _same(fo, to, 1e-6, 1e-9)
    fo.sum().backward()
    to.sum().backward()
    _same(fx.grad, tx.grad, 1e-6, 1e-9)
    _same(fa.grad, ta.grad, 1e-6, 1e-9)

    y, pts = rng.standard_normal((2, 6)), np.sort(rng.standard_normal((2, 6)), axis=1)
    (fy, ty), (fp, tp) = _t(y, grad=True), _t(pts, grad=True)
    fo, to = fjax.trapezoid(fy, fp), torch.trapezoid(ty, tp)
    _same(fo, to, 1e-6, 1e-9)
    fo.sum().backward()
    to.sum().backward()
    _same(fy.grad, ty.grad, 1e-6, 1e-9)
    _same(fp.grad, tp.grad, 1e-6, 1e-9)


def test_methods_and_top_level_names():
    x = fjax.tensor([[3.0, 4.0], [1.0, 1.0]])
    assert x.diff().tolist() == [[1.0], [0.0]]
    assert x.ravel().tolist() == [3.0, 4.0, 1.0, 1.0]
    assert x.renorm(2, 0, 1.0).shape == (2, 2)
    assert x.diag_embed().shape == (2, 2, 2)
    assert x.diagflat().shape == (4, 4)
    assert len(fjax.hsplit(x, 2)) == 2 and len(fjax.vsplit(x, [1])) == 2
    assert x.logcumsumexp(1).shape == (2, 2)
    assert x.cov().shape == (2, 2) and x.corrcoef().shape == (2, 2)
    assert fjax.tensor([4, 6]).gcd(fjax.tensor([6, 4])).tolist() == [2, 2]
    assert fjax.tensor([4, 6]).lcm(fjax.tensor([6, 4])).tolist() == [12, 12]
    assert x.heaviside(fjax.tensor(0.5)).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert x.ldexp(fjax.tensor([1, 0])).tolist() == [[6.0, 4.0], [2.0, 1.0]]
    for name in ("searchsorted", "bucketize", "isin", "cdist", "meshgrid", "trapezoid", "block_diag", "vsplit"):
        assert hasattr(fjax, name) and hasattr(fjax.Tensor, name) == hasattr(torch.Tensor, name), name


def test_clone_copies_and_passes_the_gradient():
    x = fjax.tensor([1.0, 2.0], requires_grad=True)
    y = fjax.clone(x)
    (y * fjax.tensor([3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]
    z = fjax.clone(x.detach())
    z[0] = 9.0
    assert x.tolist() == [1.0, 2.0]


def test_errors_follow_torch():
    with pytest.raises(OpError):
        fjax.gcd(fjax.tensor([1.0]), fjax.tensor([2.0]))
    with pytest.raises(OpError):
        fjax.heaviside(fjax.tensor([1.0]), fjax.tensor([1]))
    with pytest.raises(OpError):
        fjax.vsplit(fjax.zeros(5, 2), 2)
    with pytest.raises(OpError):
        fjax.dsplit(fjax.zeros(5, 2), 1)
    with pytest.raises(OpError):
        fjax.logcumsumexp(fjax.tensor([1, 2]), 0)
    with pytest.raises(OpError):
        fjax.renorm(fjax.tensor([[1, 2]]), 2, 0, 1.0)
    with pytest.raises(OpError):
        fjax.diff(fjax.ones(3), append=fjax.tensor(1.0))
    with pytest.raises(OpError):
        fjax.cdist(fjax.ones(2, 3), fjax.ones(2, 4))
