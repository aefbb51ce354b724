"""``set_default_dtype`` as torch's: every factory, Python float/complex, promotion with a Python
float, float-valued function of integers and layer parameter takes the default, compared with
torch under each default; kernels compiled under the old default are not reused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax

CASES = {
    "tensor(float)": lambda L: L.tensor([1.5, 2.0]),
    "tensor(complex)": lambda L: L.tensor([1j]),
    "tensor(int)": lambda L: L.tensor([1, 2]),
    "zeros": lambda L: L.zeros(2),
    "ones": lambda L: L.ones(2, 3),
    "full(float)": lambda L: L.full((2,), 1.0),
    "empty": lambda L: L.empty(3),
    "full(int)": lambda L: L.full((2,), 7),
    "full(complex)": lambda L: L.full((2,), 1 + 2j),
    "rand": lambda L: L.rand(2),
    "randn": lambda L: L.randn(2),
    "arange(float)": lambda L: L.arange(0.5, 3),
    "arange(int)": lambda L: L.arange(3),
    "linspace": lambda L: L.linspace(0, 1, 5),
    "logspace": lambda L: L.logspace(0, 1, 5),
    "int * float": lambda L: L.arange(3) * 1.5,
    "int / int": lambda L: L.arange(3) / 2,
    "int.sqrt": lambda L: L.arange(3).sqrt(),
    "float32 * float": lambda L: L.ones(2, dtype=L.float32) * 2.5,
    "Linear.weight": lambda L: L.nn.Linear(2, 3).weight,
    "Conv1d.bias": lambda L: L.nn.Conv1d(2, 3, 1).bias,
    "scalar_tensor": lambda L: L.scalar_tensor(3),
}


@pytest.fixture
def restore_default():
    yield
    fjax.set_default_dtype(fjax.float32)
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name", ["float64", "float16", "bfloat16", "float32"])
def test_every_default_follows_torch(name, restore_default):
    fjax.tensor([1.0]) * 2.5  # kernels compiled under float32 first: they must not be reused
    fjax.set_default_dtype(getattr(fjax, name))
    torch.set_default_dtype(getattr(torch, name))
    assert str(fjax.get_default_dtype()).split(".")[1] == str(torch.get_default_dtype()).split(".")[1] == name
    for case, make in CASES.items():
        if case in ("tensor(complex)", "full(complex)") and name in ("float16", "bfloat16"):
            continue  # torch: complex32 (which XLA lacks) and an error; fjax: complex64
        got, want = make(fjax), make(torch)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1], case
        if case in ("tensor(float)", "int * float", "int / int", "int.sqrt", "linspace", "arange(float)"):
            np.testing.assert_allclose(  # to the last bit but one (XLA's sqrt is libm's +-1 ulp)
                got.float().numpy() if name == "bfloat16" else got.numpy(),
                want.float().numpy() if name == "bfloat16" else want.numpy(),
                rtol=2 * float(np.finfo(np.float16 if name == "bfloat16" else name).eps),
                err_msg=case,
            )


def test_a_float64_default_trains_as_torch(restore_default):
    rng = np.random.default_rng(int(np.random.SeedSequence().entropy % 2**31))
    x, y = rng.standard_normal((16, 3)), rng.standard_normal((16, 1))
    losses = {}
    for L in (fjax, torch):
        L.set_default_dtype(L.float64)
        net = L.nn.Sequential(L.nn.Linear(3, 8), L.nn.Tanh(), L.nn.Linear(8, 1))
        with L.no_grad():
            for i, p in enumerate(net.parameters()):
                p.copy_(L.tensor(np.random.default_rng(i).standard_normal(tuple(p.shape))))
        opt = L.optim.Adam(net.parameters(), lr=1e-2)
        out = []
        for _ in range(5):
            loss = ((net(L.tensor(x)) - L.tensor(y)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        assert net[0].weight.dtype == L.float64
        losses[L.__name__] = out
    np.testing.assert_allclose(losses["fjax"], losses["torch"], rtol=1e-12)


def test_non_float_default_is_refused_as_torch_does(restore_default):
    with pytest.raises(TypeError, match="only floating-point types"):
        torch.set_default_dtype(torch.int32)
    with pytest.raises(TypeError, match="only floating-point types.*int32"):
        fjax.set_default_dtype(fjax.int32)
    assert fjax.get_default_dtype() is fjax.float32
