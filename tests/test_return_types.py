"""Ops whose tuple results torch names return named tuples with torch's field names."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

import fjax

CASES = [
    ("max", (1,), {}),
    ("min", (0,), {"keepdim": True}),
    ("sort", (), {"descending": True}),
    ("topk", (2,), {}),
    ("kthvalue", (2, 1), {}),
    ("median", (1,), {}),
    ("nanmedian", (0,), {}),
    ("cummax", (1,), {}),
    ("cummin", (0,), {}),
    ("aminmax", (), {"dim": 1}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_named_like_torch(name, args, kwargs):
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = getattr(torch, name)(torch.tensor(a), *args, **kwargs)
    for got in (getattr(fjax, name)(fjax.tensor(a), *args, **kwargs), getattr(fjax.tensor(a), name)(*args, **kwargs)):
        assert type(got).__name__ == type(want).__name__ and got._fields == type(want).__match_args__
        for field in got._fields:
            np.testing.assert_array_equal(getattr(got, field).numpy(), getattr(want, field).numpy())
        first, second = got  # still a tuple
        assert first is got[0] and second is got[1]
        assert isinstance(got, getattr(fjax.return_types, name))
    assert repr(got).startswith(f"fjax.return_types.{name}(\n{got._fields[0]}=tensor(")
    assert pickle.loads(pickle.dumps(got))._fields == got._fields


def test_whole_tensor_reduction_stays_a_tensor():
    assert isinstance(fjax.tensor([1.0, 3.0]).max(), fjax.Tensor)
    assert isinstance(fjax.max(fjax.tensor([1.0]), fjax.tensor([2.0])), fjax.Tensor)


def test_gradient_flows_through_a_field():
    x = fjax.tensor([[1.0, 4.0], [3.0, 2.0]], requires_grad=True)
    x.max(1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 1.0], [1.0, 0.0]])
