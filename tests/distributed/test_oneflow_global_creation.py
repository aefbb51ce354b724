"""OneFlow-style global creation: ``flow.randn(..., placement=p, sbp=s)`` and friends, and the sbp values.

Needs 8 virtual CPU devices, which XLA gives only when XLA_FLAGS is set before jax starts: the
one test collected in an ordinary run reruns this file in a fresh pytest process that has them.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

_FLAG = "FJAX_ONEFLOW_GLOBAL_CREATION"

if not os.environ.get(_FLAG):

    def test_in_a_process_with_eight_devices():
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", _FLAG: "1"}
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(pathlib.Path(__file__)),
                "-q",
                "-p",
                "no:cacheprovider",
                "-o",
                "addopts=",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-3000:]

else:
    import itertools
    import random

    import numpy as np
    import torch

    import fjax as flow

    SEED = random.randrange(2**31)
    P1 = flow.placement("cpu", ranks=[0, 1, 2, 3])
    P2 = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    B, S0, S1, PS = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1), flow.sbp.partial_sum

    def _sbps(placement, max_dim, partial=True):
        """OneFlow's all_sbp: every sbp tuple for ``placement`` over dims below ``max_dim``."""
        choices = [flow.sbp.split(d) for d in range(max_dim)] + [B] + ([PS] if partial else [])
        return list(itertools.product(choices, repeat=placement.ranks.ndim))

    CASES = [(P1, s) for s in _sbps(P1, 2)] + [(P2, s) for s in _sbps(P2, 2)]
    RANDOM_CASES = [(P1, s) for s in _sbps(P1, 2, False)] + [(P2, s) for s in _sbps(P2, 2, False)]

    @pytest.fixture(autouse=True)
    def _eight_devices():
        import jax

        assert jax.device_count() == 8

    def _check(x, shape, placement, sbp, dtype=None):
        assert x.is_global and x.placement == placement
        assert x.sbp == tuple(sbp)
        assert tuple(x.shape) == tuple(shape)
        if dtype is not None:
            assert x.dtype == dtype

    @pytest.mark.parametrize("placement, sbp", CASES)
    def test_constant_creation_ops(placement, sbp):
        _check(flow.zeros(4, 8, placement=placement, sbp=sbp), (4, 8), placement, sbp, flow.float32)
        np.testing.assert_array_equal(flow.ones((4, 8), placement=placement, sbp=sbp).numpy(), np.ones((4, 8)))
        y = flow.full((4, 4), 3.5, placement=placement, sbp=sbp)
        _check(y, (4, 4), placement, sbp, flow.float32)
        np.testing.assert_array_equal(y.numpy(), np.full((4, 4), 3.5, np.float32))
        _check(flow.empty(8, 4, dtype=flow.float64, placement=placement, sbp=sbp), (8, 4), placement, sbp, flow.float64)
        e = flow.eye(4, 8, placement=placement, sbp=sbp)
        _check(e, (4, 8), placement, sbp)
        np.testing.assert_array_equal(e.numpy(), torch.eye(4, 8).numpy())

    @pytest.mark.parametrize("placement, sbp", [(P1, (S0,)), (P1, (B,)), (P1, (PS,)), (P2, (S0, B)), (P2, (B, S0))])
    def test_1d_creation_ops_equal_torch(placement, sbp):
        a = flow.arange(8, placement=placement, sbp=sbp)
        _check(a, (8,), placement, sbp, flow.int64)
        np.testing.assert_array_equal(a.numpy(), torch.arange(8).numpy())
        a = flow.arange(1, 5, 0.5, placement=placement, sbp=sbp)
        np.testing.assert_allclose(a.numpy(), torch.arange(1, 5, 0.5).numpy())
        lin = flow.linspace(-1, 3, 8, placement=placement, sbp=sbp)
        _check(lin, (8,), placement, sbp, flow.float32)
        np.testing.assert_allclose(lin.numpy(), torch.linspace(-1, 3, 8).numpy(), rtol=1e-6, atol=1e-6)

    @pytest.mark.parametrize("placement, sbp", CASES[::3])
    def test_tensor_from_data_is_the_logical_value(placement, sbp):
        data = np.random.default_rng(SEED).standard_normal((4, 8)).astype(np.float32)
        for x in (
            flow.tensor(data, placement=placement, sbp=sbp),
            flow.tensor(data.tolist(), placement=placement, sbp=sbp),
        ):
            _check(x, (4, 8), placement, sbp, flow.float32)
            np.testing.assert_array_equal(x.numpy(), data, err_msg=f"seed={SEED}")
        bcast = (B,) * placement.ranks.ndim
        x = flow.tensor([[1, 2, 4, 5], [4, 3, 2, 9]], dtype=flow.int32, placement=placement, sbp=bcast)
        _check(x, (2, 4), placement, bcast, flow.int32)
        np.testing.assert_array_equal(x.numpy(), [[1, 2, 4, 5], [4, 3, 2, 9]])

    @pytest.mark.parametrize("placement, sbp", RANDOM_CASES)
    def test_random_ops_oneflow_style(placement, sbp):
        shape = (8, 8)
        x1 = flow.randn(*shape, placement=placement, sbp=sbp)
        x2 = flow.randn(*shape, placement=placement, sbp=sbp)
        _check(x1, shape, placement, sbp, flow.float32)
        assert not np.allclose(x1.numpy(), x2.numpy(), atol=1e-4)
        x64 = flow.randn(*shape, dtype=flow.float64, placement=placement, sbp=sbp)
        assert x64.dtype == flow.float64 and not np.allclose(x1.numpy(), x64.numpy(), atol=1e-4)
        u = flow.rand(flow.Size(shape), placement=placement, sbp=sbp)
        _check(u, shape, placement, sbp)
        assert ((u.numpy() >= 0) & (u.numpy() < 1)).all()
        r = flow.randint(-100, 100, shape, placement=placement, sbp=sbp)
        _check(r, shape, placement, sbp, flow.int64)
        assert ((r.numpy() >= -100) & (r.numpy() < 100)).all()
        n = flow.normal(2.0, 3.0, size=shape, placement=placement, sbp=sbp)
        _check(n, shape, placement, sbp)

    @pytest.mark.parametrize("placement, sbp", RANDOM_CASES[::2])
    def test_random_backward_and_generator(placement, sbp):
        x = flow.randn(8, 8, placement=placement, sbp=sbp, requires_grad=True)
        assert x.is_leaf and x.requires_grad
        x.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.ones((8, 8)))
        gen = flow.Generator()
        gen.manual_seed(SEED)
        y1 = flow.randn(8, 8, placement=placement, sbp=sbp, generator=gen)
        gen.manual_seed(SEED)
        y2 = flow.randn(8, 8, placement=placement, sbp=sbp, generator=gen)
        np.testing.assert_array_equal(y1.numpy(), y2.numpy())

    def test_random_values_are_drawn_once_whatever_the_sbp():
        """The logical tensor is the local draw of the same generator state, then distributed."""
        values = []
        for placement, sbp in [(None, None), (P1, S0), (P1, B), (P2, (S0, S1)), (P2, (B, S1))]:
            gen = flow.Generator().manual_seed(SEED)
            values.append(flow.randn(8, 8, generator=gen, placement=placement, sbp=sbp).numpy())
        for v in values[1:]:
            np.testing.assert_array_equal(v, values[0], err_msg=f"seed={SEED}")

    @pytest.mark.parametrize("sbp", [(S0,), (B,)])
    def test_randperm_is_one_permutation(sbp):
        for n in (8, 16, 40):
            x = flow.randperm(n, placement=P1, sbp=sbp, dtype=flow.int32)
            _check(x, (n,), P1, sbp, flow.int32)
            np.testing.assert_array_equal(np.sort(x.numpy()), np.arange(n))

    def test_like_ops_keep_the_global_layout():
        x = flow.randn(8, 4, placement=P2, sbp=(S0, S1))
        for y in (flow.zeros_like(x), flow.ones_like(x), flow.empty_like(x), flow.full_like(x, 2)):
            _check(y, (8, 4), P2, (S0, S1))
        for y in (flow.rand_like(x), flow.randn_like(x), flow.randint_like(x, 0, 5)):
            _check(y, (8, 4), P2, (S0, S1))
        _check(flow.zeros_like(x, sbp=(B, B)), (8, 4), P2, (B, B))
        assert not flow.zeros_like(x, device="cpu").is_global

    def test_global_tensors_compute_like_local_ones():
        rng = np.random.default_rng(SEED)
        a, b = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 4)).astype(np.float32)
        ga = flow.tensor(a, placement=P1, sbp=S0, requires_grad=True)
        gb = flow.tensor(b, placement=P1, sbp=B, requires_grad=True)
        out = (ga @ gb).relu().sum()
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        ref = (ta @ tb).relu().sum()
        ref.backward()
        out.backward()
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5)
        np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gb.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-6)
        assert ga.grad.is_global

    def test_sbp_values_oneflow_style():
        assert flow.sbp.split(0) == flow.sbp.split(0)()
        assert flow.sbp.split(1) == flow.sbp.split(1)()
        assert flow.sbp.split(0) != flow.sbp.split(1)
        assert flow.sbp.broadcast == flow.sbp.broadcast() and flow.sbp.broadcast() is flow.sbp.broadcast
        assert flow.sbp.partial_sum == flow.sbp.partial_sum()
        assert all(isinstance(s, flow.sbp.sbp) for s in (S0, B, PS))
        with pytest.warns(UserWarning, match="axis"):
            assert flow.sbp.split(axis=1) == S1
        with pytest.raises(TypeError, match="dim"):
            flow.sbp.split()
        x = flow.randn(8, 8).to_global(P1, flow.sbp.broadcast())
        assert x.sbp == (B,)
        assert x.to_global(sbp=flow.sbp.split(1)()).sbp == (S1,)
        assert flow.sbp.broadcast in {B: 1} and hash(flow.sbp.split(0)) == hash(S0)

    def test_placement_oneflow_style():
        assert isinstance(P2.ranks, np.ndarray) and P2.ranks.shape == (2, 2) and P2.ranks.flat[0] == 0
        assert flow.placement(type="cpu", ranks=range(4)) == P1
        assert flow.placement.all("cpu").ranks.tolist() == list(range(8))
        assert P2 != P1 and len({P1, flow.placement("cpu", [0, 1, 2, 3])}) == 1

    def test_creation_errors_name_the_op():
        with pytest.raises(flow.OpError, match="randn: placement=.* needs sbp="):
            flow.randn(4, placement=P1)
        with pytest.raises(flow.OpError, match="zeros: sbp=.* needs placement="):
            flow.zeros(4, sbp=S0)
        with pytest.raises(flow.OpError, match="ones: give device="):
            flow.ones(4, device="cpu", placement=P1, sbp=B)
        with pytest.raises(flow.OpError, match="rand: a random op .* not partial_sum"):
            flow.rand(4, placement=P1, sbp=PS)
        with pytest.raises(flow.OpError, match="arange: dim 0 of shape \\(6,\\) is not divisible"):
            flow.arange(6, placement=P1, sbp=S0)
        with pytest.raises(flow.OpError, match="eye: .* 2 mesh axes"):
            flow.eye(4, placement=P2, sbp=S0)
        with pytest.raises(flow.OpError, match="placement must be a fjax.placement"):
            flow.zeros(4, placement="cpu", sbp=B)
