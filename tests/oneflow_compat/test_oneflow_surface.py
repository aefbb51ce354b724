"""OneFlow's remaining API surface (``import fjax as flow``), each case compared with torch where
torch defines the same behaviour: autograd.Function ctx methods, Module state-dict hooks,
nn.Graph config options, SGD's nesterov with dampening, OneFlow keyword names, activations on
global tensors and ``flow._C``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax as flow
from fjax import autograd


# -- autograd.Function ctx --------------------------------------------------------------------
def _nondiff_cls(lib, seen):
    class MyModule(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            mul_res = x * y
            add_res = x + y
            ctx.save_for_backward(x, y)
            ctx.mark_non_differentiable(add_res)
            seen.append(tuple(ctx.needs_input_grad))
            return mul_res, add_res

        @staticmethod
        def backward(ctx, mul_grad, add_grad):
            seen.append(add_grad.numpy().copy())
            x, y = ctx.saved_tensors
            return y * mul_grad, x * mul_grad

    return MyModule


def test_mark_non_differentiable_as_torch():
    rs = np.random.RandomState(1)
    a0, b0 = rs.randn(4, 5).astype("f4"), rs.randn(4, 5).astype("f4")
    res = {}
    for lib in (flow, torch):
        seen = []
        a, b = lib.tensor(a0).requires_grad_(), lib.tensor(b0)
        c, d = _nondiff_cls(lib, seen).apply(a, b)
        assert not d.requires_grad and d.grad_fn is None and c.requires_grad
        (c * c).sum().backward()
        res[lib.__name__] = (seen, c.detach().numpy(), d.numpy(), a.grad.numpy())
    (fs, fc, fd, fg), (ts, tc, td, tg) = res["fjax"], res["torch"]
    assert fs[0] == ts[0] == (True, False)
    np.testing.assert_array_equal(fs[1], ts[1])  # zeros for the non-differentiable output
    np.testing.assert_allclose(fc, tc, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fd, td, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fg, tg, rtol=1e-5)


def test_mark_non_differentiable_integer_output_gets_integer_zeros():
    seen = []
    for lib in (flow, torch):
        seen.clear()

        class ArgSort(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = x.argsort()
                ctx.mark_non_differentiable(idx)
                return x.clone(), idx

            @staticmethod
            def backward(ctx, g, g_idx):
                seen.append(g_idx)
                return g

        x = lib.tensor([2.0, 1.0, 3.0], requires_grad=True)
        y, idx = ArgSort.apply(x)
        y.sum().backward()
        assert not idx.requires_grad
        assert seen[0].dtype == lib.int64 and seen[0].sum().item() == 0
        np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


@pytest.mark.parametrize("materialize", [True, False])
def test_set_materialize_grads_as_torch(materialize):
    results, seen = {}, []
    for lib in (flow, torch):
        seen.clear()

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                seen.append((ga is None, gb is None))
                g = 0
                if ga is not None:
                    g = g + ga * 2
                if gb is not None:
                    g = g + gb * 3
                return g

        x = lib.tensor(np.random.RandomState(2).randn(3).astype("f4"), requires_grad=True)
        a, b = Two.apply(x)
        (b * b).sum().backward()
        results[lib.__name__] = (list(seen), x.grad.numpy())
    assert results["fjax"][0] == results["torch"][0] == [(not materialize, False)]
    np.testing.assert_allclose(results["fjax"][1], results["torch"][1], rtol=1e-6, atol=1e-6)


def test_mark_dirty_as_torch():
    x0 = np.random.RandomState(3).randn(4).astype("f4")
    res = {}
    for lib in (flow, torch):

        class Scale_(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = lib.tensor(x0, requires_grad=True)
        z = x.clone()
        v = z._version
        y = Scale_.apply(z)
        assert y is z and z._version > v and z.requires_grad
        assert "Scale_Backward" in repr(z.grad_fn) or type(z.grad_fn).__name__ == "Scale_Backward"
        (y * y).sum().backward()
        res[lib.__name__] = (z.detach().numpy(), x.grad.numpy())
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            Scale_.apply(lib.tensor(x0, requires_grad=True))
    np.testing.assert_allclose(res["fjax"][0], res["torch"][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(res["fjax"][1], res["torch"][1], rtol=1e-5)


def test_needs_input_grad_saved_tensors_and_errors():
    seen = []
    for lib in (flow, torch):
        seen.clear()

        class H(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, k):
                seen.append(ctx.needs_input_grad)
                ctx.save_for_backward(x, None)
                return x + y * k

            @staticmethod
            def backward(ctx, g):
                x, none = ctx.saved_tensors
                seen.append((tuple(x.shape), none))
                return g, g, None

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        H.apply(x, lib.ones(2), 3).sum().backward()
        assert seen == [(True, False, False), ((2,), None)]

        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError, match="argument 1 is of type int"):
            Bad.apply(x)

        class Short(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, z):
                return x + y + z

            @staticmethod
            def backward(ctx, g):
                return None, g

        res = Short.apply(lib.randn(2), lib.randn(2).requires_grad_(), lib.randn(2))
        with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 3, got 2\)"):
            res.sum().backward()


def test_oneflow_instance_call_and_ctx_release():
    global_ctx = None

    class MyModule(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            nonlocal global_ctx
            z = x.clone()
            ctx.save_for_backward(z)
            global_ctx = ctx
            return z

        @staticmethod
        def backward(ctx, out_grad):
            (x,) = ctx.saved_tensors
            return x

    x = flow.randn(5, 5).requires_grad_()
    res = MyModule()(x)  # OneFlow's instance call
    assert global_ctx._is_data_valid()
    res.sum().backward()
    assert not global_ctx._is_data_valid()
    np.testing.assert_allclose(x.grad.numpy(), x.numpy())


def test_non_differentiable_output_inside_a_transform_is_constant():
    class Both(flow.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 3
            ctx.mark_non_differentiable(y)
            return x * 2, y

        @staticmethod
        def backward(ctx, g, gy):
            return g * 2

    def f(x):
        a, b = Both.apply(x)
        return (a + b).sum()

    g = flow.func.grad(f)(flow.ones(3))
    np.testing.assert_allclose(g.numpy(), np.full(3, 2.0))


# -- Module state-dict hooks ----------------------------------------------------------------
def _hooked_tree(lib, log):
    nn = lib.nn
    m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 3)))
    handles = []
    for name, mod in [("root", m), ("0", m[0]), ("1", m[1]), ("1.0", m[1][0])]:
        handles += [
            mod.register_state_dict_pre_hook(lambda mod, prefix, kv, name=name: log.append(("pre", name, prefix, kv))),
            mod.register_state_dict_post_hook(
                lambda mod, sd, prefix, meta, name=name: log.append(("post", name, prefix, sorted(sd), meta))
            ),
            mod.register_load_state_dict_pre_hook(
                lambda mod, sd, prefix, meta, strict, mk, uk, em, name=name: log.append(
                    ("lpre", name, prefix, sorted(sd), meta, strict, list(mk), list(uk))
                )
            ),
            mod.register_load_state_dict_post_hook(
                lambda mod, keys, name=name: log.append(
                    ("lpost", name, list(keys.missing_keys), list(keys.unexpected_keys))
                )
            ),
        ]
    return m, handles


def test_state_dict_hooks_order_prefixes_and_arguments_as_torch():
    logs = {}
    for lib in (flow, torch):
        log = []
        m, handles = _hooked_tree(lib, log)
        sd = m.state_dict(keep_vars=True)
        sd.pop("0.bias")
        sd["extra"] = lib.ones(1)
        sd["1.0.zzz"] = lib.ones(1)
        res = m.load_state_dict(sd, strict=False)
        log.append(("result", list(res.missing_keys), list(res.unexpected_keys)))
        for h in handles:
            assert type(h).__name__ == "RemovableHandle"
            h.remove()
        n = len(log)
        m.state_dict()
        m.load_state_dict(m.state_dict())
        assert len(log) == n  # removed
        logs[lib.__name__] = log
    assert logs["fjax"] == logs["torch"]


def test_state_dict_hooks_edit_values_like_torch():
    rs = np.random.RandomState(4)
    w, b = rs.randn(2, 3).astype("f4"), rs.randn(2).astype("f4")
    out = {}
    for lib in (flow, torch):
        m = lib.nn.Sequential(lib.nn.Linear(3, 2))
        m[0].register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.__delitem__(prefix + "bias"))
        m[0]._register_state_dict_hook(lambda mod, sd, prefix, meta: None)
        keys = list(m.state_dict())
        # old-style hook returning a new dict replaces it
        m2 = lib.nn.Linear(3, 2)
        m2._register_state_dict_hook(lambda mod, sd, prefix, meta: {"renamed." + k: v for k, v in sd.items()})
        keys2 = list(m2.state_dict())
        m3 = lib.nn.Linear(3, 2)
        m3.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
        with pytest.raises(RuntimeError, match="must return None"):
            m3.state_dict()

        # a load pre-hook renames old keys; a post hook forgives a missing key before the strict check
        def rename(sd, prefix, meta, strict, missing, unexpected, errors):
            if prefix + "w" in sd:
                sd[prefix + "weight"] = sd.pop(prefix + "w")

        m4 = lib.nn.Sequential(lib.nn.Linear(3, 2))
        m4[0]._register_load_state_dict_pre_hook(rename)
        m4[0].register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.remove("0.bias"))
        res = m4.load_state_dict({"0.w": lib.tensor(w)})
        m5 = lib.nn.Linear(3, 2)
        m5.register_load_state_dict_post_hook(lambda mod, keys: 1)
        with pytest.raises(Exception, match="not expected to return new values"):
            m5.load_state_dict({"weight": lib.tensor(w), "bias": lib.tensor(b)})
        m6 = lib.nn.Linear(3, 2)
        m6.register_load_state_dict_pre_hook(lambda mod, sd, *a, bias=lib.tensor(b): sd.__setitem__("bias", bias))
        m6.load_state_dict({"weight": lib.tensor(w)})
        out[lib.__name__] = (keys, keys2, repr(res), m4[0].weight.detach().numpy(), m6.bias.detach().numpy())
    f, t = out["fjax"], out["torch"]
    assert f[:3] == t[:3] == (["0.weight"], ["renamed.weight", "renamed.bias"], "<All keys matched successfully>")
    np.testing.assert_array_equal(f[3], w)
    np.testing.assert_array_equal(f[4], t[4])


def test_load_state_dict_strict_errors_with_hooks():
    for lib in (flow, torch):
        m = lib.nn.Linear(3, 2)
        m.register_load_state_dict_post_hook(lambda mod, keys: None)
        with pytest.raises(Exception, match=r'Missing key\(s\) in state_dict: "bias"'):
            m.load_state_dict({"weight": lib.zeros(2, 3)})
        with pytest.raises(Exception, match="size mismatch for weight"):
            m.load_state_dict({"weight": lib.zeros(3, 3), "bias": lib.zeros(2)})


# -- nn.Graph config options ----------------------------------------------------------------
def test_graph_config_options_oneflow_names_and_checks():
    linear = flow.nn.Linear(3, 2)
    opt = flow.optim.SGD(linear.parameters(), lr=0.1)

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.linear = linear
            self.add_optimizer(opt)
            self.config.set_outputs_buffer_size(5)
            self.config.allow_fuse_add_to_output(True)
            self.config.allow_fuse_model_update_ops(True)
            self.config.enable_cudnn_conv_heuristic_search_algo(False)
            self.config.enable_straighten_algorithm("SpeedFirst")
            self.config.enable_compress_memory(True)
            self.config.enable_choose_best_memory_allocation(True)
            self.config.enable_auto_parallel(False)
            self.config.enable_auto_memory("Disable")
            self.config.enable_multi_tensor_update(True)
            self.config.enable_fused_model_update_cast(True)
            self.config.set_auto_parallel_wait_time(1.65e4)

        def build(self, x):
            loss = self.linear(x).sum()
            loss.backward()
            return loss

    g = TrainGraph()
    cfg = g.config
    assert cfg.training and not flow.nn.Graph.trace(lambda x: x).config.training
    assert cfg._outputs_buffer_size == 5
    assert cfg.options["enable_straighten_algorithm"] == "SpeedFirst"
    assert cfg.options["enable_compress_memory"] is True and cfg.options["enable_auto_parallel"] is False
    assert cfg.options["enable_auto_memory"] == "Disable"
    # the switches change nothing numerically: one step equals eager SGD
    x = flow.tensor(np.random.RandomState(5).randn(4, 3).astype("f4"))
    w0, b0 = linear.weight.numpy().copy(), linear.bias.numpy().copy()
    g(x)
    np.testing.assert_allclose(linear.weight.numpy(), w0 - 0.1 * x.numpy().sum(0)[None].repeat(2, 0), rtol=1e-5)
    np.testing.assert_allclose(linear.bias.numpy(), b0 - 0.1 * 4, rtol=1e-5)
    with pytest.raises(ValueError, match="please choose one type among"):
        cfg.enable_straighten_algorithm("Fastest")
    with pytest.raises(ValueError, match="set_outputs_buffer_size"):
        cfg.set_outputs_buffer_size(0)
    with pytest.raises(RuntimeError, match="enable_zero"):
        cfg.set_zero_redundancy_optimizer_mode("distributed_split")


def test_graph_enable_zero_oneflow_signature_and_min_size():
    cfg = flow.nn.Graph.trace(lambda x: x * 2).config
    cfg.enable_zero()
    assert cfg.mesh.zero_stage == 2  # OneFlow's default stage
    cfg.enable_zero(True, stage=1, shard_min_size=10, shard_restore_level=2)
    mesh = cfg.mesh
    assert mesh.zero_stage == 1
    assert "data" not in tuple(mesh.optimizer_state("w", (3,), (3,)).spec)  # under shard_min_size
    assert "data" in tuple(mesh.optimizer_state("w", (4, 4), (4, 4)).spec)
    with pytest.raises(ValueError, match="shard_restore_level"):
        cfg.enable_zero(True, shard_restore_level=3)


# -- SGD: OneFlow's nesterov with dampening / without momentum --------------------------------
def _numpy_oneflow_sgd(x, grads, lr, momentum, dampening, nesterov, weight_decay):
    """OneFlow's momentum_update rule (its test_optim_sgd.py reference)."""
    vt = np.zeros_like(x)
    for grad in grads:
        grad = grad + weight_decay * x
        if momentum > 0.0:
            vt = momentum * vt + (1 - dampening) * grad
            grad = grad + momentum * vt if nesterov else vt
        x = x - lr * grad
    return x


@pytest.mark.parametrize("momentum,dampening", [(0.9, 0.5), (0.9, 0.0), (0.0, 0.9)])
def test_sgd_nesterov_accepts_oneflow_settings(momentum, dampening):
    rs = np.random.RandomState(6)
    x0 = rs.uniform(size=(10,)).astype("f4")
    grads = [rs.uniform(size=(10,)).astype("f4") for _ in range(6)]
    x = flow.nn.Parameter(flow.tensor(x0))
    sgd = flow.optim.SGD(
        [{"params": [x], "lr": 0.1, "weight_decay": 0.3}], momentum=momentum, dampening=dampening, nesterov=True
    )
    for i, g in enumerate(grads):
        flow.sum(x * flow.tensor(g)).backward()
        sgd.step()
        sgd.zero_grad()
        if i == 2:  # OneFlow's test reloads the state midway
            state = sgd.state_dict()
            sgd = flow.optim.SGD([x])
            sgd.load_state_dict(state)
    want = _numpy_oneflow_sgd(x0, grads, 0.1, momentum, dampening, True, 0.3)
    np.testing.assert_allclose(x.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    if dampening == 0.0 and momentum > 0:  # the case torch allows: torch's numbers too
        tx = torch.nn.Parameter(torch.tensor(x0))
        topt = torch.optim.SGD([tx], lr=0.1, momentum=momentum, nesterov=True, weight_decay=0.3)
        for g in grads:
            torch.sum(tx * torch.tensor(g)).backward()
            topt.step()
            topt.zero_grad()
        np.testing.assert_allclose(x.detach().numpy(), tx.detach().numpy(), rtol=1e-5, atol=1e-6)


# -- keyword names (torch's and OneFlow's) ---------------------------------------------------
def test_tensor_shape_methods_take_keywords_like_torch():
    x0 = np.random.RandomState(7).randn(2, 3, 4).astype("f4")
    calls = [
        ("reshape", dict(shape=(6, 4))),
        ("view", dict(size=(4, 6))),
        ("permute", dict(dims=(2, 0, 1))),
        ("repeat", dict(repeats=(1, 2, 1))),
        ("tile", dict(dims=(2, 1, 1))),
        ("transpose", dict(dim0=0, dim1=2)),
    ]
    for name, kw in calls:
        got = getattr(flow.tensor(x0), name)(**kw)
        want = getattr(torch.tensor(x0), name)(**kw)
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)
    one = np.ones((1, 3), "f4")
    np.testing.assert_array_equal(flow.tensor(one).expand(size=(2, 3)).numpy(), torch.tensor(one).expand(size=(2, 3)))
    # OneFlow's view(shape=) (torch names it size=)
    np.testing.assert_array_equal(flow.tensor(x0).view(shape=(6, 4)).numpy(), x0.reshape(6, 4))
    with pytest.raises(TypeError, match="reshape"):
        flow.tensor(x0).reshape((6, 4), shape=(6, 4))


# -- activations on global tensors -------------------------------------------------------------
@pytest.mark.parametrize("sbp", [flow.sbp.split(0), flow.sbp.split(1), flow.sbp.broadcast])
def test_global_activations_keep_placement_and_sbp_with_torch_values(sbp):
    placement = flow.placement("cpu", [0])
    x0 = np.random.RandomState(8).randn(8, 16).astype("f4")
    mods = [
        ("GELU", {}),
        ("LeakyReLU", dict(negative_slope=0.2)),
        ("Softplus", {}),
        ("Softshrink", {}),
        ("ReLU6", {}),
        ("Hardtanh", dict(min_val=-0.5, max_val=0.7)),
        ("Softmax", dict(dim=1)),
        ("Mish", {}),
    ]
    for name, kw in mods:
        x = flow.tensor(x0).to_global(placement, sbp).requires_grad_()
        y = getattr(flow.nn, name)(**kw)(x)
        (y * y).sum().backward()
        assert y.is_global and y.placement == placement and y.sbp == x.sbp, name
        assert x.grad.is_global and x.grad.placement == placement and x.grad.sbp == x.sbp, (name, x.grad.sbp)
        tx = torch.tensor(x0, requires_grad=True)
        ty = getattr(torch.nn, name)(**kw)(tx)
        (ty * ty).sum().backward()
        np.testing.assert_allclose(y.to_local().detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(x.grad.to_local().numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


# -- flow._C and flow._oneflow_internal ------------------------------------------------------
def _t(a, lib, grad=False):
    return lib.tensor(a, requires_grad=grad)


def test_C_functions_match_torch():
    rs = np.random.RandomState(9)
    a, b = rs.randn(2, 3, 4).astype("f4"), rs.randn(2, 5, 4).astype("f4")
    x, bias = rs.randn(3, 4, 2).astype("f4"), rs.randn(4).astype("f4")
    C = flow._C
    pairs = [
        (C.matmul(_t(a, flow), _t(b, flow), transpose_b=True, alpha=0.5), 0.5 * torch.tensor(a) @ torch.tensor(b).mT),
        (
            C.matmul(_t(a, flow), _t(a, flow), transpose_a=True),
            torch.tensor(a).mT @ torch.tensor(a),
        ),
        (C.bias_add(_t(x, flow), _t(bias, flow), axis=1), torch.tensor(x) + torch.tensor(bias)[:, None]),
        (C.relu(_t(x, flow)), torch.relu(torch.tensor(x))),
        (C.add(_t(x, flow), _t(x, flow), alpha=3), torch.add(torch.tensor(x), torch.tensor(x), alpha=3)),
        (C.reduce_sum_like(_t(x, flow), flow.zeros(4, 1)), torch.tensor(x).sum(0).sum(-1, keepdim=True)),
        (C.reshape_like(_t(x, flow), flow.zeros(12, 2)), torch.tensor(x).reshape(12, 2)),
        (C.quick_gelu(_t(x, flow)), torch.tensor(x) * torch.sigmoid(1.702 * torch.tensor(x))),
        (C.square_relu(_t(x, flow)), torch.relu(torch.tensor(x)) ** 2),
        (
            C.gelu_with_approximate(_t(x, flow), "tanh"),
            torch.nn.functional.gelu(torch.tensor(x), approximate="tanh"),
        ),
        (C.trunc_divide(_t(x, flow), 0.3), torch.div(torch.tensor(x), 0.3, rounding_mode="trunc")),
        (
            C.layer_norm_affine(_t(x, flow), _t(x[0], flow), _t(x[1], flow), 1, 1, 1e-5),
            torch.nn.functional.layer_norm(torch.tensor(x), (4, 2), torch.tensor(x[0]), torch.tensor(x[1]), 1e-5),
        ),
        (C.layer_norm(_t(x, flow), -1, -1, 1e-5), torch.nn.functional.layer_norm(torch.tensor(x), (2,))),
        (
            C.rms_norm(_t(x, flow), _t(x[0, 0], flow), (2,), 1e-6),
            torch.nn.functional.rms_norm(torch.tensor(x), (2,), torch.tensor(x[0, 0]), 1e-6),
        ),
        (
            C.group_norm(_t(x, flow), flow.ones(4), flow.zeros(4), True, 2, 1e-5, activation="silu"),
            torch.nn.functional.silu(torch.nn.functional.group_norm(torch.tensor(x), 2)),
        ),
        (C.dropout(_t(x, flow), p=0.0, addend=_t(x, flow)), torch.tensor(x) * 2),
        (C.host_scalar_add_by_tensor(_t(x, flow), flow.tensor([2.0])), torch.tensor(x) + 2),
        (C.softmax(_t(x, flow), dim=1), torch.softmax(torch.tensor(x), dim=1)),  # forwarded to the public op
    ]
    for got, want in pairs:
        np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    # fused_glu: act(x W^T + b) * (x V^T + c)
    w, v = rs.randn(3, 2).astype("f4"), rs.randn(3, 2).astype("f4")
    got = C.fused_glu(_t(x, flow), _t(w, flow), None, _t(v, flow), None, activation="silu")
    want = torch.nn.functional.silu(torch.tensor(x) @ torch.tensor(w).T) * (torch.tensor(x) @ torch.tensor(v).T)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    # gradients flow through the forwards
    xf, xt = _t(x, flow, True), _t(x, torch, True)
    C.quick_gelu(xf).sum().backward()
    (xt * torch.sigmoid(1.702 * xt)).sum().backward()
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(AttributeError, match="not provided"):
        C.one_embedding_id_shuffle  # noqa: B018
    with pytest.raises(ValueError, match="bias_add"):
        C.bias_add(_t(x, flow), _t(bias, flow), axis=0)


def test_oneflow_internal_lazy_mode_flag():
    seen = []

    class G(flow.nn.Graph):
        def build(self, x):
            seen.append(flow._oneflow_internal.lazy_mode.is_enabled())
            return x * 2

    assert not flow._oneflow_internal.lazy_mode.is_enabled()
    G()(flow.ones(2))
    assert seen == [True] and not flow._oneflow_internal.lazy_mode.is_enabled()
    flow._oneflow_internal.eager.Sync()
