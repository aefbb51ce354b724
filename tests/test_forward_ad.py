"""``torch.autograd.forward_ad`` on eager tensors: tangents of op results against torch's forward
mode on fresh random inputs, with the primal's backward tape intact, in-place ops, and the
errors torch raises or fjax does not support."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import fjax
import fjax.autograd.forward_ad as fw


def _pair(rng, *shape):
    a = rng.normal(size=shape).astype(np.float32)
    return a, rng.normal(size=shape).astype(np.float32)


# (name, fn(mod, x, y) -> tensor or tuple, x shape, y shape); mod is torch or fjax
CASES = [
    ("sin*exp", lambda m, x, y: x.sin() * x.exp(), (3, 4), None),
    ("add-scalar-pow", lambda m, x, y: (x + 2) ** 3 - x / 4, (5,), None),
    ("matmul", lambda m, x, y: x @ y, (3, 4), (4, 2)),
    ("softmax", lambda m, x, y: m.nn.functional.softmax(x, dim=-1), (2, 5), None),
    ("log_softmax-nll", lambda m, x, y: m.nn.functional.log_softmax(x, 1)[:, 0].sum(), (4, 3), None),
    ("layer_norm", lambda m, x, y: m.nn.functional.layer_norm(x, (4,)), (3, 4), None),
    ("sum-mean-var", lambda m, x, y: x.sum(0) + x.mean(1, keepdim=True) * x.var(), (3, 4), None),
    ("tanh-linear", lambda m, x, y: m.tanh(m.nn.functional.linear(x, y)), (2, 3), (5, 3)),
    ("views", lambda m, x, y: x.t().reshape(-1)[2:7].unsqueeze(0).expand(2, 5) * 2, (3, 4), None),
    ("getitem-cat", lambda m, x, y: m.cat([x[0], x[:, 1], y.flatten()]), (3, 3), (2, 2)),
    ("max-both", lambda m, x, y: m.max(x, dim=1)[0] + m.maximum(x, y).sum(1), (3, 4), (3, 4)),
    ("conv2d", lambda m, x, y: m.nn.functional.conv2d(x, y, padding=1), (1, 2, 5, 5), (3, 2, 3, 3)),
    ("where-relu", lambda m, x, y: m.where(x > 0, x * y, y.relu()), (4, 4), (4, 4)),
    ("norm-atan2", lambda m, x, y: m.linalg.vector_norm(x) * m.atan2(x, y), (3,), (3,)),
]


@pytest.mark.parametrize("name, fn, xs, ys", CASES, ids=[c[0] for c in CASES])
def test_tangents_match_torch(name, fn, xs, ys):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    x, tx = _pair(rng, *xs)
    y, ty = _pair(rng, *ys) if ys else (None, None)
    with tfw.dual_level():
        args = [tfw.make_dual(torch.from_numpy(x), torch.from_numpy(tx))]
        args.append(tfw.make_dual(torch.from_numpy(y), torch.from_numpy(ty)) if ys else None)
        out = fn(torch, *args)
        want_p, want_t = (t.detach().numpy() for t in tfw.unpack_dual(out))
    with fw.dual_level():
        args = [fw.make_dual(fjax.tensor(x), fjax.tensor(tx))]
        args.append(fw.make_dual(fjax.tensor(y), fjax.tensor(ty)) if ys else None)
        out = fn(fjax, *args)
        got_p, got_t = fw.unpack_dual(out)
        got_p, got_t = got_p.numpy(), got_t.numpy()
    np.testing.assert_allclose(got_p, want_p, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_t, want_t, rtol=1e-4, atol=1e-5)


def test_a_tangent_only_on_one_input_and_a_plain_result():
    rng = np.random.default_rng(3)
    x, tx = _pair(rng, 3)
    w = rng.normal(size=3).astype(np.float32)
    with fw.dual_level():
        d = fw.make_dual(fjax.tensor(x), fjax.tensor(tx))
        got = fw.unpack_dual(d * fjax.tensor(w)).tangent.numpy()
        assert fw.unpack_dual(fjax.tensor(w) * 2).tangent is None
        assert fw.unpack_dual(d.argmax()).tangent is None  # an integer result carries none
        assert fw.unpack_dual(d.detach()).tangent is None
    np.testing.assert_allclose(got, tx * w, rtol=1e-6)
    assert fw.unpack_dual(d).tangent is None  # the level closed


def test_the_backward_tape_still_records_through_dual_ops():
    rng = np.random.default_rng(4)
    x, tx = _pair(rng, 4)
    a = fjax.tensor(x, requires_grad=True)
    ta = torch.tensor(x, requires_grad=True)
    with fw.dual_level():
        y = (fw.make_dual(a, fjax.tensor(tx)).sin() ** 2).sum()
        y.backward()
    with tfw.dual_level():
        ty_ = (tfw.make_dual(ta, torch.from_numpy(tx)).sin() ** 2).sum()
        ty_.backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5)


def test_inplace_ops_carry_the_tangent_as_torch():
    rng = np.random.default_rng(5)
    x, tx = _pair(rng, 4)
    with tfw.dual_level():
        t = tfw.make_dual(torch.from_numpy(x).clone(), torch.from_numpy(tx)).clone()
        t.mul_(3).exp_()
        want = tfw.unpack_dual(t).tangent.numpy()
    with fw.dual_level():
        f = fw.make_dual(fjax.tensor(x), fjax.tensor(tx)).clone()
        f.mul_(3).exp_()
        got = fw.unpack_dual(f).tangent.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_errors():
    with pytest.raises(RuntimeError, match="dual_level"):
        fw.make_dual(fjax.ones(2), fjax.ones(2))
    with fw.dual_level():
        with pytest.raises(fjax.OpError, match=r"same shape, got \(2,\) and \(3,\)"):
            fw.make_dual(fjax.ones(2), fjax.ones(3))
        with pytest.raises(fjax.OpError, match="floating"):
            fw.make_dual(fjax.ones(2, dtype=fjax.int64), fjax.ones(2, dtype=fjax.int64))
        with pytest.raises(NotImplementedError, match="nested"):
            fw.enter_dual_level()
        with pytest.raises(NotImplementedError, match="requires grad"):
            fw.make_dual(fjax.ones(2), fjax.ones(2, requires_grad=True))
        base = fjax.zeros(4)
        view = base[:2]
        with pytest.raises(NotImplementedError, match="views"):
            view.copy_(fw.make_dual(fjax.ones(2), fjax.ones(2)))
        buf = fjax.zeros(3, 2)
        with pytest.raises(NotImplementedError, match="views"):  # a row write, too
            buf[1] = fw.make_dual(fjax.ones(2), fjax.ones(2))
        with pytest.raises(NotImplementedError, match="view op"):
            fw.make_dual(fjax.ones(2), fjax.ones(2)).clone().unsqueeze_(0)


def test_under_mock_torch():
    import fjax.mock_torch as mock_torch

    with mock_torch.enable():
        import torch.autograd.forward_ad as mocked

        assert mocked is fw


def test_a_module_with_parameters_as_torch():
    rng = np.random.default_rng(6)
    x, tx = _pair(rng, 5, 3)
    weights = [rng.normal(size=s).astype(np.float32) for s in [(4, 3), (4,), (2, 4), (2,)]]

    def build(m):
        model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 2))
        for p, w in zip(model.parameters(), weights):
            p.data.copy_(m.tensor(w))
        return model

    with tfw.dual_level():
        want = tfw.unpack_dual(build(torch)(tfw.make_dual(torch.from_numpy(x), torch.from_numpy(tx)))).tangent
    with fw.dual_level():
        got = fw.unpack_dual(build(fjax)(fw.make_dual(fjax.tensor(x), fjax.tensor(tx)))).tangent
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_custom_function_uses_its_jvp_and_one_without_raises_as_torch():
    def cube(mod):
        class Cube(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale):
                ctx.save_for_forward(x)
                ctx.scale = scale
                return x**3 * scale

            @staticmethod
            def backward(ctx, g):
                raise AssertionError("not called")

            @staticmethod
            def jvp(ctx, t, t_scale):
                (x,) = ctx.saved_tensors
                assert t_scale is None
                return 3 * x**2 * t * ctx.scale

        return Cube

    class NoJvp(fjax.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    rng = np.random.default_rng(8)
    x, tx = _pair(rng, 3)
    with tfw.dual_level():
        want = tfw.unpack_dual(cube(torch).apply(tfw.make_dual(torch.from_numpy(x), torch.from_numpy(tx)), 2.0)).tangent
    with fw.dual_level():
        got = fw.unpack_dual(cube(fjax).apply(fw.make_dual(fjax.tensor(x), fjax.tensor(tx)), 2.0)).tangent
        with pytest.raises(NotImplementedError, match="implement the jvp"):
            NoJvp.apply(fw.make_dual(fjax.tensor(x), fjax.tensor(tx)))
        assert fw.unpack_dual(NoJvp.apply(fjax.tensor(x))).tangent is None  # no dual input: no jvp needed
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
