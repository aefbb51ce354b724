"""OneFlow-style basics that OneFlow's own tests lean on: ``numpy()`` of a tensor that requires grad,
gradients whose dtype differs from the output's, ``flow.equal``, ``F.depend``, ``flow.nn.common_types``,
``flow.backends``, and the torch namespaces OneFlow code imports, compared with torch where torch has them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax as flow


def test_numpy_of_a_tensor_that_requires_grad():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_array_equal((x * 2).numpy(), [2.0, 4.0])


@pytest.mark.parametrize("gdtype", ["float64", "float16", "int64"])
def test_backward_casts_a_gradient_of_another_dtype(gdtype):
    rng = np.random.default_rng(0)
    x0, g0 = rng.normal(size=(3, 2)).astype(np.float32), rng.integers(-3, 3, size=(3, 2))
    x, xt = flow.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    (x.sin() * 2).backward(flow.tensor(g0.astype(gdtype)))
    (xt.sin() * 2).backward(torch.tensor(g0.astype(gdtype)))
    assert x.grad.dtype == flow.float32
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-6)
    (gx,) = flow.autograd.grad(x.exp().sum(0), x, grad_outputs=flow.tensor(g0[0].astype(gdtype)))
    (gt,) = torch.autograd.grad(xt.exp().sum(0), xt, grad_outputs=torch.tensor(g0[0].astype(gdtype)))
    np.testing.assert_allclose(gx.numpy(), gt.numpy(), rtol=1e-6, atol=1e-6)


def test_equal_depend_common_types_and_backends():
    a, b = flow.tensor([1.0, 2.0]), flow.tensor([1.0, 2.0])
    assert flow.equal(a, b) is True and flow.equal(a, b + 1) is False
    y = flow.nn.functional.depend(a * 2, b)  # ordering only: the value is the first argument's
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    assert flow.nn.common_types._size_2_t is not None
    assert isinstance(flow.backends.cudnn.enabled, bool)
