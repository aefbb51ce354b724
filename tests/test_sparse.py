"""Sparse COO tensors (stored dense) against torch: construction, coalescing, mm and gradients."""

from __future__ import annotations

import doctest
import inspect
import os
import random

import numpy as np
import pytest
import torch

import fjax
import fjax.sparse as sparse

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))


def _random_coo(r, size, nnz, dense=()):
    """Random indices with duplicates (nnz of them) and values (nnz, *dense)."""
    idx = np.stack([r.integers(0, s, nnz) for s in size]).astype(np.int64)
    return idx, r.standard_normal((nnz, *dense)).astype(np.float32)


def _same(a, b, what):
    a = a.detach().numpy() if isinstance(a, fjax.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {a.shape} {a.dtype} vs torch {b.shape} {b.dtype}"
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"{what} (seed={SEED})")


@pytest.mark.parametrize("size,dense", [((4, 5), ()), ((3, 2, 4), ()), ((6,), (3,)), ((3, 4), (2,))])
def test_construction_and_coalesce_match_torch(size, dense):
    r = np.random.default_rng(SEED)
    idx, val = _random_coo(r, size, 7, dense)
    ours = fjax.sparse.sparse_coo_tensor(fjax.tensor(idx), fjax.tensor(val), size + dense)
    theirs = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), size + dense)
    assert ours.is_sparse and not ours.is_coalesced() and repr(ours.layout) == "fjax.sparse_coo"
    assert (ours._nnz(), ours.sparse_dim(), ours.dense_dim()) == (
        theirs._nnz(),
        theirs.sparse_dim(),
        theirs.dense_dim(),
    )
    _same(ours.to_dense(), theirs.to_dense(), "to_dense")
    _same(ours._indices(), theirs._indices(), "_indices")
    _same(ours._values(), theirs._values(), "_values")
    c, tc = ours.coalesce(), theirs.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    _same(c.indices(), tc.indices(), "coalesced indices")
    _same(c.values(), tc.values(), "coalesced values")
    inferred = fjax.sparse.sparse_coo_tensor(idx.tolist(), val.tolist())
    assert tuple(inferred.shape) == tuple(torch.sparse_coo_tensor(idx.tolist(), val.tolist()).shape)


def test_errors_and_empty():
    s = fjax.sparse.sparse_coo_tensor([[0, 1, 0]], [1.0, 2.0, 3.0], (2,))
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()
    with pytest.raises(RuntimeError, match="same nnz"):
        fjax.sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0, 3.0], (2,))
    with pytest.raises(RuntimeError, match="size is 2 but found index 2"):
        fjax.sparse.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (2,))
    with pytest.raises(RuntimeError, match="negative index"):
        fjax.sparse.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (2,))
    with pytest.raises(RuntimeError, match="2-D"):
        fjax.sparse.sparse_coo_tensor([0, 1], [1.0, 2.0], (2,))
    empty = fjax.sparse.sparse_coo_tensor(fjax.zeros(2, 0, dtype=fjax.int64), fjax.zeros(0), (2, 3))
    assert empty._nnz() == 0 and not empty.to_dense().numpy().any() and empty.coalesce()._nnz() == 0


def test_mm_spmm_addmm_and_gradients_match_torch():
    r = np.random.default_rng(SEED)
    idx, val = _random_coo(r, (4, 3), 6)
    d = r.standard_normal((3, 2)).astype(np.float32)
    v, tv = fjax.tensor(val, requires_grad=True), torch.tensor(val, requires_grad=True)
    w, tw = fjax.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    s = fjax.sparse.sparse_coo_tensor(fjax.tensor(idx), v, (4, 3))
    ts = torch.sparse_coo_tensor(torch.tensor(idx), tv, (4, 3))
    out, tout = fjax.sparse.mm(s, w), torch.sparse.mm(ts, tw)
    _same(out, tout, "sparse.mm")
    ct = r.standard_normal((4, 2)).astype(np.float32)
    (out * fjax.tensor(ct)).sum().backward()
    (tout * torch.tensor(ct)).sum().backward()
    _same(v.grad, tv.grad, "grad of values")
    _same(w.grad, tw.grad, "grad of the dense matrix")
    _same(fjax.sparse.spmm(s, w), torch.spmm(ts, tw), "spmm")
    m = r.standard_normal((4, 2)).astype(np.float32)
    ours = fjax.sparse.addmm(fjax.tensor(m), s, w, beta=0.5, alpha=2.0)
    _same(ours, torch.sparse.addmm(torch.tensor(m), ts, tw, beta=0.5, alpha=2.0), "addmm")

    b = fjax.sparse.sparse_coo_tensor([[0, 2], [1, 0]], [2.0, 3.0], (3, 2))
    tb = torch.sparse_coo_tensor([[0, 2], [1, 0]], [2.0, 3.0], (3, 2))
    both, tboth = fjax.sparse.mm(s.detach(), b), torch.sparse.mm(ts.detach(), tb)
    assert both.is_sparse and tboth.is_sparse
    _same(both.to_dense(), tboth.to_dense(), "sparse @ sparse")


def test_sparse_leaf_gets_a_dense_grad():
    s = fjax.sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), requires_grad=True)
    assert s.is_leaf and s.requires_grad
    (s.to_dense() * fjax.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert s.grad.tolist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize("name", [n for n in sparse.__all__ if n != "sparse_coo"])
def test_examples_run(name):
    obj = getattr(sparse, name)
    doc = inspect.getdoc(obj)
    assert ">>>" in doc, f"{name} has no example"
    test = doctest.DocTestParser().get_doctest(doc, {"fjax": fjax}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
