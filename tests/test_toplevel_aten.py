"""torch's top-level ATen-signature functions (convolution, max_pool1d_with_indices,
affine_grid_generator, norm_except_dim) and aliases (GradScaler, legacy_contiguous_format)
against torch on random inputs, with gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax


def _rand(*shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _pair(a):
    return fjax.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize(
    "spatial,transposed,groups",
    [((9,), False, 1), ((7, 6), False, 2), ((5, 4, 4), False, 1), ((6,), True, 1), ((5, 5), True, 2)],
)
def test_convolution_matches_torch(spatial, transposed, groups):
    seed = int(np.random.SeedSequence().entropy % 2**31)
    n = len(spatial)
    cin, cout = 4, 6
    wshape = (cin, cout // groups, *([3] * n)) if transposed else (cout, cin // groups, *([3] * n))
    (x, tx), (w, tw), (b, tb) = (
        _pair(_rand(2, cin, *spatial, seed=seed)),
        _pair(_rand(*wshape, seed=seed + 1)),
        _pair(_rand(cout, seed=seed + 2)),
    )
    args = ([2] * n, [1] * n, [1] * n, transposed, [1 if transposed else 0] * n, groups)
    out, tout = fjax.convolution(x, w, b, *args), torch.convolution(tx, tw, tb, *args)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-4)
    out.square().sum().backward()
    tout.square().sum().backward()
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_max_pool1d_with_indices_affine_grid_norm_except_dim():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    a = _rand(2, 3, 11, seed=seed)
    (v, i), (tv, ti) = (
        fjax.max_pool1d_with_indices(fjax.tensor(a), 3, 2, 1),
        torch.max_pool1d_with_indices(torch.tensor(a), 3, 2, 1),
    )
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    theta = _rand(2, 2, 3, seed=seed + 1)
    for align in (False, True):
        got = fjax.affine_grid_generator(fjax.tensor(theta), [2, 1, 4, 5], align)
        want = torch.affine_grid_generator(torch.tensor(theta), [2, 1, 4, 5], align)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    v = _rand(3, 4, 5, seed=seed + 2)
    for p, dim in ((2, 0), (3, 1), (2, -1), (1, 2)):
        fv, tv = _pair(v)
        got, want = fjax.norm_except_dim(fv, p, dim), torch.norm_except_dim(tv, p, dim)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(fv.grad.numpy(), tv.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_top_level_aliases():
    assert fjax.GradScaler is fjax.amp.GradScaler
    assert fjax.legacy_contiguous_format is fjax.contiguous_format
    assert fjax.zeros(2, 3).is_contiguous(memory_format=fjax.legacy_contiguous_format)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword_as_torch(name):
    for size in ((2, 3), [4], ()):
        got, want = getattr(fjax, name)(size=size), getattr(torch, name)(size=size)
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[5:] == str(want.dtype)[6:]
    x, tx = fjax.ones(2, dtype=fjax.float64), torch.ones(2, dtype=torch.float64)
    new = name.replace("rand", "zeros").replace("zerosn", "zeros")
    got, want = getattr(x, f"new_{new}")(size=(3, 1)), getattr(tx, f"new_{new}")(size=(3, 1))
    assert tuple(got.shape) == tuple(want.shape) == (3, 1) and got.dtype == fjax.float64
    with pytest.raises(TypeError):
        getattr(torch, name)(2, size=(3,))
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        getattr(fjax, name)(2, size=(3,))
