"""nn.functional wrappers whose Tensor-level API differs from the pure op, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fjax
import fjax.nn.functional as F

from .helper import SEED, close, rng


def _both(x):
    x = np.asarray(x, np.float32)
    return fjax.tensor(x), torch.from_numpy(x.copy())


@pytest.mark.parametrize(
    "name,args",
    [("relu", ()), ("relu6", ()), ("elu", (0.5,)), ("selu", ()), ("celu", (2.0,)), ("leaky_relu", (0.2,)),
     ("hardtanh", (-0.5, 0.5)), ("threshold", (0.1, 3.0)), ("hardsigmoid", ()), ("hardswish", ()), ("silu", ()),
     ("mish", ())],
)  # fmt: skip
def test_inplace_flag(name, args):
    a, b = _both(rng().standard_normal((3, 4)))
    close(getattr(F, name)(a, *args), getattr(TF, name)(b, *args), f"F.{name}", 1e-5, 1e-6)
    out = getattr(F, name)(a, *args, True)  # positional inplace, as torch allows
    assert out is a
    close(a, getattr(TF, name)(b, *args, inplace=True), f"F.{name}(inplace=True)", 1e-5, 1e-6)
    if hasattr(F, name + "_"):
        c, d = _both(rng(1).standard_normal((3, 4)))
        assert getattr(F, name + "_")(c, *args) is c
        close(c, getattr(TF, name + "_")(d, *args), f"F.{name}_", 1e-5, 1e-6)


def test_inplace_on_intermediate_keeps_gradients():
    x = rng().standard_normal((3, 4)).astype(np.float32)
    a = fjax.tensor(x, requires_grad=True)
    b = torch.from_numpy(x.copy()).requires_grad_()
    ya = F.leaky_relu(a * 3, 0.1, inplace=True)
    yb = TF.leaky_relu(b * 3, 0.1, inplace=True)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    close(a.grad, b.grad, "grad through in-place leaky_relu", 1e-5, 1e-6)


def test_softmax_family_accepts_stacklevel_and_dtype():
    a, b = _both(rng().standard_normal((3, 4)))
    for name in ("softmax", "softmin", "log_softmax"):
        close(getattr(F, name)(a, 1, 3, fjax.float64), getattr(TF, name)(b, 1, 3, torch.float64), name, 1e-6, 1e-7)
        close(getattr(F, name)(a, dim=0), getattr(TF, name)(b, dim=0), name, 1e-6, 1e-7)


def test_one_hot():
    idx = rng().integers(0, 5, (3, 4))
    close(F.one_hot(fjax.tensor(idx)), TF.one_hot(torch.from_numpy(idx)), "one_hot", 0, 0)
    close(F.one_hot(fjax.tensor(idx), 7), TF.one_hot(torch.from_numpy(idx), 7), "one_hot(7)", 0, 0)
    assert F.one_hot(fjax.tensor(idx)).dtype == fjax.int64


def test_functional_batch_norm_updates_running_stats():
    x = rng().standard_normal((6, 3, 4)).astype(np.float32) * 2 + 1
    w, bias = rng(1).standard_normal(3).astype(np.float32), rng(2).standard_normal(3).astype(np.float32)
    fm, fv = fjax.zeros(3), fjax.ones(3)
    tm, tv = torch.zeros(3), torch.ones(3)
    out = F.batch_norm(fjax.tensor(x), fm, fv, fjax.tensor(w), fjax.tensor(bias), True, 0.3, 1e-4)
    ref = TF.batch_norm(torch.from_numpy(x), tm, tv, torch.from_numpy(w), torch.from_numpy(bias), True, 0.3, 1e-4)
    close(out, ref, "batch_norm output", 1e-5, 1e-5)
    close(fm, tm, "running_mean", 1e-5, 1e-6)
    close(fv, tv, "running_var", 1e-5, 1e-6)
    out = F.batch_norm(fjax.tensor(x), fm, fv, training=False)
    close(out, TF.batch_norm(torch.from_numpy(x), tm, tv, training=False), "eval batch_norm", 1e-5, 1e-5)


def test_functional_instance_norm_running_stats():
    x = rng().standard_normal((4, 3, 5)).astype(np.float32) * 2 + 1
    fm, fv, tm, tv = fjax.zeros(3), fjax.ones(3), torch.zeros(3), torch.ones(3)
    close(
        F.instance_norm(fjax.tensor(x), fm, fv, momentum=0.2),
        TF.instance_norm(torch.from_numpy(x), tm, tv, momentum=0.2),
        "instance_norm",
        1e-5,
        1e-5,
    )
    close(fm, tm, "running_mean", 1e-5, 1e-6)
    close(fv, tv, "running_var", 1e-5, 1e-6)


def test_dropout_functional():
    fjax.manual_seed(SEED)
    x = fjax.ones(100, 100)
    assert F.dropout(x, 0.3, training=False) is x
    y = F.dropout(x, 0.3)
    assert set(np.unique(y.numpy())) <= {0.0, np.float32(1 / 0.7)}
    z = fjax.ones(10, 10) * 2
    assert F.dropout(z, 0.5, True, True) is z
    with pytest.raises(ValueError, match="between 0 and 1, but got -0.1"):
        F.dropout(x, -0.1)
    with pytest.raises(ValueError, match="Expected 2D or 3D input"):
        F.dropout1d(fjax.ones(2, 3, 4, 5))
