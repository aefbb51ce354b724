"""OneFlow-style global modules and ``flow.utils.global_view`` (``to_global``/``to_local`` of nested
inputs, ``global_mode``) on 8 virtual CPU devices.

XLA gives virtual devices only when XLA_FLAGS is set before jax starts: the one test collected
in an ordinary run reruns this file in a fresh pytest process that has them.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

_FLAG = "FJAX_ONEFLOW_GLOBAL_MODULE"

if not os.environ.get(_FLAG):

    def test_in_a_process_with_eight_devices():
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", _FLAG: "1"}
        command = [sys.executable, "-m", "pytest", str(pathlib.Path(__file__)), "-q", "-p", "no:cacheprovider"]
        out = subprocess.run([*command, "-o", "addopts="], capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-3000:]

else:
    import random
    import threading

    import numpy as np
    import torch

    import fjax as flow
    from fjax.utils import global_view
    from fjax.utils.global_view import current_global_mode, global_mode

    SEED = random.randrange(2**31)
    P = flow.placement("cpu", ranks=[0, 1])
    P4 = flow.placement("cpu", ranks=[0, 1, 2, 3])
    P22 = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)

    @pytest.fixture(autouse=True)
    def _eight_devices():
        import jax

        assert jax.device_count() == 8

    # -- Module.to_global / to_local ---------------------------------------------------------
    def test_module_to_global_keeps_shared_parameters():
        class ReuseVarModule(flow.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear1 = flow.nn.Linear(3, 4)
                self.linear2 = flow.nn.Linear(3, 4)
                self.linear2.weight = self.linear1.weight

        m = ReuseVarModule()
        assert m.linear1.weight is m.linear2.weight and m.linear1.weight.is_local
        assert m.to_global(placement=P, sbp=B) is m
        assert m.linear1.weight is m.linear2.weight and m.linear1.bias is not m.linear2.bias
        for t in (m.linear1.weight, m.linear1.bias, m.linear2.bias):
            assert t.placement == P and t.sbp[0] == B and isinstance(t, flow.nn.Parameter)

    def test_module_to_local_gives_this_ranks_piece():
        m = flow.nn.Linear(3, 4, bias=False)
        flow.nn.init.uniform_(m.weight)
        m.to_global(placement=P, sbp=B)
        origin = m.weight.numpy()
        m.to_global(placement=P, sbp=S0)
        np.testing.assert_array_equal(m.weight.numpy(), origin)
        assert m.weight.sbp == (S0,)
        m.to_local()
        assert m.weight.is_local
        np.testing.assert_array_equal(m.weight.numpy(), origin[:2])  # rank 0's half
        m.to_global(placement=P, sbp=B)
        m.to_local()
        np.testing.assert_array_equal(m.weight.numpy(), origin[:2])

    def test_global_module_trains_like_torch():
        """DDP the OneFlow way: broadcast parameters, split(0) batch; SGD steps equal torch's."""
        rng = np.random.default_rng(SEED)
        torch_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        model = flow.nn.Sequential(flow.nn.Linear(8, 16), flow.nn.ReLU(), flow.nn.Linear(16, 4))
        model.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in torch_model.state_dict().items()})
        model.to_global(P4, B)
        opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        torch_opt = torch.optim.SGD(torch_model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            x, y = rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal((8, 4)).astype(np.float32)
            loss = flow.nn.functional.mse_loss(
                model(flow.tensor(x, placement=P4, sbp=S0)), flow.tensor(y).to_global(P4, S0)
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_loss = torch.nn.functional.mse_loss(torch_model(torch.tensor(x)), torch.tensor(y))
            torch_opt.zero_grad()
            torch_loss.backward()
            torch_opt.step()
            np.testing.assert_allclose(loss.numpy(), torch_loss.detach().numpy(), rtol=1e-5, err_msg=f"seed={SEED}")
        for (name, p), tp in zip(model.named_parameters(), torch_model.parameters()):
            assert p.is_global and p.sbp == (B,) and p.grad.is_global, name
            np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)

    def test_global_module_state_dict_round_trip():
        model = flow.nn.Sequential(flow.nn.Linear(8, 4), flow.nn.BatchNorm1d(4)).to_global(P4, B)
        sd = model.state_dict()
        assert all(v.is_global and v.placement == P4 for v in sd.values())
        local = global_view.to_local(sd)
        assert all(v.is_local for v in local.values())
        fresh = flow.nn.Sequential(flow.nn.Linear(8, 4), flow.nn.BatchNorm1d(4))
        fresh.load_state_dict(local)
        fresh.to_global(P4, B)
        x = flow.randn(8, 8, placement=P4, sbp=S0)
        np.testing.assert_allclose(fresh.eval()(x).numpy(), model.eval()(x).numpy(), rtol=1e-6, atol=1e-6)

    def test_global_graph_trains_with_global_mode():
        """OneFlow's graph-with-DDP usage: ``x.to(weight.device)`` and ``randn(device=...)`` inside a mode."""
        lin = flow.nn.Linear(16, 8, bias=False).to_global(placement=P4, sbp=B)
        flow.nn.init.constant_(lin.weight, 2.0)
        sgd = flow.optim.SGD([{"params": lin.parameters()}], lr=0.001, momentum=0.9)
        x = flow.ones((8, 16), placement=P4, sbp=S0)

        class TrainGraph(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.lin = lin
                self.add_optimizer(sgd)

            def build(self, x):
                with global_mode(True, placement=P4, sbp=B):
                    device = self.lin.weight.device
                    out = self.lin(x.to(device))
                    sample = flow.randn(out.shape, device="cpu").to(device)
                    out = out + sample * 100
                with global_mode(False, placement=P4, sbp=B):
                    assert not current_global_mode().is_enabled
                    out = out - sample * 100
                out.sum().backward()
                return out

        graph = TrainGraph()
        first = graph(x)
        assert first.is_global and first.sbp == (S0,)
        np.testing.assert_allclose(first.numpy(), np.full((8, 8), 32.0), rtol=1e-4)
        second = graph(x)
        assert lin.weight.is_global and lin.weight.sbp == (B,)
        assert float(second.sum()) < float(first.sum())

    # -- global_mode --------------------------------------------------------------------------
    def test_global_mode_makes_source_ops_global():
        with global_mode(True, placement=P, sbp=B):
            mode = current_global_mode()
            assert mode.is_enabled and mode.placement == P and mode.sbp[0] == B
            outs = {
                "randn": flow.randn((2, 2)),
                "rand": flow.rand((2, 2)),
                "randint": flow.randint(-100, 100, (2, 2)),
                "randperm": flow.randperm(5),
                "arange": flow.arange(10),
                "empty": flow.empty((1, 2)),
                "zeros": flow.zeros(3, device="cpu"),
                "tensor": flow.tensor([[1, 2, 4, 5], [4, 3, 2, 9]], dtype=flow.int32),
                "explicit": flow.ones(4, placement=P4, sbp=S0),
            }
        assert not current_global_mode().is_enabled and not flow.randn(2).is_global
        for name, v in outs.items():
            if name == "explicit":
                assert v.placement == P4 and v.sbp == (S0,)
                continue
            assert v.is_global and v.placement == P and v.sbp == (B,), name
        np.testing.assert_array_equal(outs["tensor"].numpy(), [[1, 2, 4, 5], [4, 3, 2, 9]])
        np.testing.assert_array_equal(np.sort(outs["randperm"].numpy()), np.arange(5))

    def test_global_mode_nests_and_is_per_thread():
        seen = []
        with global_mode(True, placement=P22, sbp=(S0, B)):
            assert flow.zeros(4, 2).sbp == (S0, B)
            with global_mode(False):
                assert not flow.zeros(2).is_global and current_global_mode().placement is None
            with global_mode(True, placement=P, sbp=S1):
                assert flow.zeros(2, 4).placement == P
            assert current_global_mode().placement == P22
            thread = threading.Thread(target=lambda: seen.append(flow.zeros(2).is_global))
            thread.start()
            thread.join()
        assert seen == [False]
        with pytest.raises(RuntimeError):
            with global_mode(True, placement=P, sbp=B):
                raise RuntimeError("leave the mode")
        assert not current_global_mode().is_enabled

    def test_global_mode_errors():
        with pytest.raises(ValueError, match="needs both placement and sbp"):
            global_mode(True, placement=P)
        with pytest.raises(TypeError, match="placement must be a fjax.placement"):
            global_mode(True, placement="cpu", sbp=B)
        with pytest.raises(flow.OpError, match="global_mode: .* 2 mesh axes"):
            global_mode(True, placement=P22, sbp=B)

    # -- global_view.to_global / to_local ----------------------------------------------------
    def test_global_view_to_global_state_dict_with_sbp_function():
        model = flow.nn.Sequential(flow.nn.Linear(8, 4), flow.nn.ReLU(), flow.nn.Linear(4, 3))
        sd = model.state_dict()

        def get_sbp(state_dict, tensor):
            return S0 if tensor.shape[0] % 2 == 0 else B

        gsd = global_view.to_global(sd, placement=P, sbp=get_sbp)
        assert list(gsd) == list(sd)
        for k, v in gsd.items():
            assert v.is_global and v.placement == P
            assert v.sbp == ((S0,) if sd[k].shape[0] % 2 == 0 else (B,)), k
            np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
        back = global_view.to_local(gsd)
        assert tuple(back["0.weight"].shape) == (2, 8) and tuple(back["2.weight"].shape) == (3, 4)

    def test_global_view_nested_inputs():
        a, b = flow.randn(4, 2), flow.randn(2)
        out = global_view.to_global({"x": [a, None, (b,)], "n": 3}, P, B, warn_on_non_tensor_leaf=False)
        assert out["n"] == 3 and out["x"][1] is None and isinstance(out["x"][2], tuple)
        assert out["x"][0].is_global and out["x"][2][0].is_global
        again = global_view.to_global(out, sbp=S0, warn_on_non_tensor_leaf=False)  # global: placement kept
        assert again["x"][0].sbp == (S0,) and again["x"][0].placement == P
        with pytest.warns(UserWarning, match="non-Tensor"):
            global_view.to_global([a, "label"], P, B)
        with pytest.raises(ValueError, match="all local or all global"):
            global_view.to_global([a, out["x"][0]], P, B)
        with pytest.raises(ValueError, match="need both placement and sbp"):
            global_view.to_global(a, P)
        g = global_view.to_global(a, P, S0)
        local = global_view.to_local(g, copy=True)
        np.testing.assert_array_equal(local.numpy(), a.numpy()[:2])
        with pytest.warns(UserWarning, match="local"):
            assert global_view.to_local(a) is a
