"""OneFlow's keyword names for ops torch names otherwise (``OpDef.keyword_aliases``): ``cat(inputs=...)``,
``where(condition, x=, y=)``, ``tensor_split(indices_or_sections=...)``; torch's own names keep working,
the signatures keep showing torch's, and a parameter given under two names is a TypeError naming both."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import fjax


def _pair(*shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return fjax.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["cat", "concat", "stack"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_joining_ops_take_inputs(name, dim):
    (a, ta), (b, tb) = _pair(2, 3, seed=1), _pair(2, 3, seed=2)
    out = getattr(fjax, name)(inputs=[a, b], dim=dim)
    ref = getattr(torch, name)([ta, tb], dim)
    _close(out, ref)
    g = np.random.default_rng(3).standard_normal(tuple(ref.shape)).astype(np.float32)
    out.backward(fjax.tensor(g))
    ref.backward(torch.tensor(g))
    _close(a.grad, ta.grad)
    _close(b.grad, tb.grad)
    # torch's own keyword, and the default dim
    _close(getattr(fjax, name)(tensors=[a, b], dim=dim), ref)
    _close(getattr(fjax, name)(inputs=[a, b]), getattr(torch, name)([ta, tb]))


def test_where_takes_x_and_y():
    (a, ta), (b, tb) = _pair(3, 4, seed=4), _pair(3, 4, seed=5)
    out = fjax.where(a > 0, x=a, y=b)
    ref = torch.where(ta > 0, ta, tb)
    _close(out, ref)
    out.sum().backward()
    ref.sum().backward()
    _close(a.grad, ta.grad)
    _close(b.grad, tb.grad)
    _close(fjax.where(a > 0, a, y=0.5), torch.where(ta > 0, ta, 0.5))
    _close(fjax.where(a > 0, input=a, other=b), ref)


@pytest.mark.parametrize(
    "kw,value",
    [
        ("indices_or_sections", 3),
        ("indices_or_sections", [1, 4]),
        ("sections", 3),
        ("indices", [1, 4]),
        ("tensor_indices_or_sections", [1, 4]),
        ("tensor_indices_or_sections", 3),
    ],
)
def test_tensor_split_keywords(kw, value):
    x, tx = _pair(7, 2, seed=6)
    ref = torch.tensor_split(tx, value, 0)
    tvalue = torch.tensor(value) if kw == "tensor_indices_or_sections" else value
    fvalue = fjax.tensor(value) if kw == "tensor_indices_or_sections" else value
    if kw != "indices_or_sections":  # torch's arg parser takes these names (not its documented one)
        assert [tuple(t.shape) for t in torch.tensor_split(tx, **{kw: tvalue})] == [tuple(t.shape) for t in ref]
    for out in (fjax.tensor_split(x, **{kw: fvalue}, dim=0), x.tensor_split(**{kw: fvalue})):
        assert len(out) == len(ref)
        for o, r in zip(out, ref):
            _close(o, r)
    out = fjax.tensor_split(x, **{kw: fvalue})
    sum(o.sum() * (i + 1) for i, o in enumerate(out)).backward()
    sum(r.sum() * (i + 1) for i, r in enumerate(ref)).backward()
    _close(x.grad, tx.grad)


def test_tensor_split_keyword_along_dim():
    x, tx = _pair(2, 5, seed=7)
    for o, r in zip(fjax.tensor_split(x, indices_or_sections=2, dim=1), torch.tensor_split(tx, 2, dim=1)):
        _close(o, r)


def test_signatures_stay_torchs():
    assert list(inspect.signature(fjax.cat).parameters) == ["tensors", "dim"]
    assert list(inspect.signature(fjax.stack).parameters) == ["tensors", "dim"]
    assert list(inspect.signature(fjax.where).parameters) == ["condition", "input", "other"]
    assert list(inspect.signature(fjax.tensor_split).parameters) == ["input", "sections", "dim"]


def test_a_parameter_named_twice_is_a_type_error():
    a, b = fjax.ones(2), fjax.zeros(2)
    with pytest.raises(TypeError, match=r"inputs=.*tensors="):
        fjax.cat(tensors=[a], inputs=[b])
    with pytest.raises(TypeError, match=r"inputs=.*tensors \(by position\)"):
        fjax.stack([a], inputs=[b])
    with pytest.raises(TypeError, match=r"x=.*input="):
        fjax.where(a > 0, input=a, other=b, x=b)
    with pytest.raises(TypeError, match=r"y=.*other \(by position\)"):
        fjax.where(a > 0, a, b, y=b)
    with pytest.raises(TypeError, match=r"indices_or_sections=.*indices="):
        fjax.tensor_split(a, indices_or_sections=2, indices=[1])
    with pytest.raises(TypeError, match="tensor_split"):
        a.tensor_split(2, indices_or_sections=2)


def test_unknown_keywords_still_fail():
    with pytest.raises(TypeError):
        fjax.cat(input=[fjax.ones(2)])


def test_inside_a_graph_trace():
    a, b = fjax.randn(2, 3), fjax.randn(2, 3)
    f = fjax.compile(lambda u, v: fjax.cat(inputs=[u, v], dim=1) + fjax.where(u > 0, x=u, y=v).repeat(1, 2))
    want = fjax.cat([a, b], dim=1) + fjax.where(a > 0, a, b).repeat(1, 2)
    np.testing.assert_allclose(f(a, b).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
