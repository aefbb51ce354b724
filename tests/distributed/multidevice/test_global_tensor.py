"""Every sbp conversion on 1-D and 2-D placements against the local computation."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import fjax
from fjax.distributed import broadcast, partial_sum, placement, split

SEED = random.randrange(2**31)
rng = np.random.default_rng(SEED)
P1 = placement("cpu", list(range(8)))
P2 = placement("cpu", [[0, 1, 2, 3], [4, 5, 6, 7]])
SBP1 = [(split(0),), (split(1),), (broadcast,), (partial_sum,)]
SBP2 = [tuple(c) for c in itertools.product([split(0), split(1), broadcast, partial_sum], repeat=2)]


def _local():
    return rng.standard_normal((8, 16)).astype(np.float32)


@pytest.mark.parametrize("src, dst", list(itertools.product(SBP1, SBP1)))
def test_1d_boxing_keeps_values(src, dst):
    a = _local()
    g = fjax.tensor(a).to_global(P1, src)
    assert g.sbp == src and g.placement == P1
    h = g.to_global(P1, dst)
    assert h.sbp == dst
    np.testing.assert_allclose(h.numpy(), a, err_msg=f"seed={SEED}")


@pytest.mark.parametrize("src, dst", [(s, d) for s in SBP2 for d in SBP2 if s != d][::3])
def test_2d_boxing_keeps_values_and_gradients(src, dst):
    a = _local()
    x = fjax.tensor(a, requires_grad=True)
    h = x.to_global(P2, src).to_global(P2, dst)
    assert h.sbp == dst and h.is_global
    np.testing.assert_allclose(h.detach().numpy(), a, err_msg=f"seed={SEED}")
    (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * a, rtol=1e-6, err_msg=f"seed={SEED}")


@pytest.mark.parametrize("sbp", SBP2[:6])
def test_ops_on_global_tensors_equal_local_ops(sbp):
    a, b = _local(), rng.standard_normal((16, 4)).astype(np.float32)
    ga, gb = fjax.tensor(a).to_global(P2, sbp), fjax.tensor(b).to_global(P2, (broadcast, broadcast))
    out = ((ga @ gb).relu() + 1).softmax(-1).sum(0)
    ref = ((fjax.tensor(a) @ fjax.tensor(b)).relu() + 1).softmax(-1).sum(0)
    assert out.is_global
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5)


def test_to_local_gives_this_ranks_piece():
    a = _local()
    assert tuple(fjax.tensor(a).to_global(P1, split(0)).to_local().shape) == (1, 16)
    assert tuple(fjax.tensor(a).to_global(P2, (split(0), split(1))).to_local().shape) == (4, 4)
    np.testing.assert_allclose(fjax.tensor(a).to_global(P1, broadcast).to_local().numpy(), a)
    np.testing.assert_allclose(fjax.tensor(a).to_global(P1, partial_sum).to_local().numpy(), a)  # rank 0 holds it
    assert not fjax.tensor(a).to_global(P1, split(0)).to_local().is_global


def test_placement_and_sbp_reprs_and_errors():
    assert repr(P2) == 'fjax.placement(type="cpu", ranks=[[0, 1, 2, 3], [4, 5, 6, 7]])'
    assert repr(split(1)) == "fjax.sbp.split(dim=1)" and repr(broadcast) == "fjax.sbp.broadcast"
    assert repr(partial_sum) == "fjax.sbp.partial_sum"
    assert placement.all("cuda").hierarchy == (8,)  # no GPU here: "cuda" falls back to the CPU devices
    with pytest.raises(fjax.OpError, match="out of range"):
        placement("cpu", [0, 9])
    with pytest.raises(fjax.OpError, match="not divisible"):
        fjax.ones(6, 3).to_global(P1, split(0))
    with pytest.raises(fjax.OpError, match="2 mesh axes"):
        fjax.ones(8, 8).to_global(P2, split(0))


def test_module_to_global():
    model = fjax.nn.Linear(8, 16)
    x = fjax.randn(8, 8)
    ref = model(x).detach().numpy()
    fjax.distributed.module_to_global(model, P1, broadcast)
    assert model.weight.is_global and model.weight.sbp == (broadcast,)
    np.testing.assert_allclose(model(x.to_global(P1, split(0))).detach().numpy(), ref, rtol=1e-5, atol=1e-6)


def test_graph_recompiles_for_inputs_of_another_sharding():
    """Repeated calls skip building the signature key (``Graph._repeat``), yet the same shape
    with another sbp is another signature: compiled anew, and computed right."""

    class Eval(fjax.nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    model = fjax.nn.Linear(16, 4)
    g = Eval(model)
    local = _local()
    with fjax.no_grad():
        expected = model(fjax.tensor(local)).numpy()
    for sbp in [(split(0),), (split(0),), (broadcast,), (broadcast,)]:
        out = g(fjax.tensor(local).to_global(P1, sbp))
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    assert len(g.compile_report()) == 2


def test_module_to_global_and_to_local_methods():
    """OneFlow's Module.to_global / to_local: in place, the Parameters stay the same objects."""
    model = fjax.nn.Sequential(fjax.nn.Linear(8, 16), fjax.nn.BatchNorm1d(16))
    weight = model[0].weight
    x = fjax.randn(8, 8)
    ref = model(x).detach().numpy()
    assert model.to_global(P1, broadcast) is model
    assert model[0].weight is weight and weight.is_global and weight.sbp == (broadcast,)
    assert model[1].running_mean.is_global
    np.testing.assert_allclose(model(x.to_global(P1, split(0))).to_local().numpy().shape, (1, 16))
    assert model.to_local() is model and not weight.is_global and not model[1].running_mean.is_global
    np.testing.assert_allclose(model.eval()(x).detach().numpy().shape, ref.shape)
