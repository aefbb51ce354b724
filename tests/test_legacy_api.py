"""torch's legacy API that older programs still use, and OneFlow's small helpers, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
import fjax.nn.functional as F

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "ByteTensor", "IntTensor", "LongTensor", "BoolTensor"]


@pytest.mark.parametrize("name", NAMES)
def test_typed_tensor_classes_match_torch(name):
    data = [[1.7, 0.0], [-2.2, 3.0]] if name not in ("ByteTensor", "BoolTensor") else [[1, 0], [2, 3]]
    ours, theirs = getattr(fjax, name)(data), getattr(torch, name)(data)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert tuple(getattr(fjax, name)(2, 3).shape) == tuple(getattr(torch, name)(2, 3).shape)
    assert isinstance(ours, getattr(fjax, name)) and isinstance(ours, fjax.autograd.Variable)
    other = "LongTensor" if name != "LongTensor" else "FloatTensor"
    assert not isinstance(ours, getattr(fjax, other))
    a = np.array([1.5, -2.5 if name != "ByteTensor" else 2.5, 0.0], np.float32)  # (negative to uint8: undefined)
    converted = fjax.tensor(a).type(f"torch.{name}")
    want = torch.tensor(a).type(f"torch.{name}")
    np.testing.assert_array_equal(converted.numpy(), want.numpy())
    assert converted.dtype == fjax.tensor(a).type(getattr(fjax, name)).dtype


def test_type_names():
    assert fjax.tensor([1.0]).type() == "fjax.FloatTensor" and fjax.tensor([1]).type() == "fjax.LongTensor"
    assert fjax.tensor([1.0]).type(fjax.float64).dtype == fjax.float64


def test_variable_is_a_leaf_tensor_like_torch():
    a = np.array([1.0, -2.0, 3.0], np.float32)
    fv = fjax.autograd.Variable(fjax.tensor(a), requires_grad=True)
    tv = torch.autograd.Variable(torch.tensor(a), requires_grad=True)
    (fv * fv).sum().backward()
    (tv * tv).sum().backward()
    np.testing.assert_allclose(fv.grad.numpy(), tv.grad.numpy())
    assert fv.is_leaf and isinstance(fjax.ones(1), fjax.autograd.Variable)
    assert not fjax.autograd.Variable(fjax.tensor(a)).requires_grad


def test_depend_and_common_types():
    x = fjax.ones(2)
    assert F.depend(x, [fjax.zeros(1)]) is x
    assert fjax.nn.common_types._size_2_t is not None
