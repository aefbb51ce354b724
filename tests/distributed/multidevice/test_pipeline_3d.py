"""3D parallelism of the pipeline core: DP2 x TP2 x PP2 on 8 devices, a GPT block stack and an LSTM
stack, every schedule, give the one-device loss and gradients (float32, rtol 1e-5).

The mesh is ``(data 2, tensor 2, pipe 2)``: ``pipeline_loss`` is manual over ``pipe`` only, the
block parameters carry Megatron-style ``tensor`` shardings and the micro-batches' rows a ``data``
sharding; XLA keeps both inside each stage (checked: no weight is all-gathered, the weight
gradients come back tensor-sharded). Runs with 8 virtual CPU devices (test_multidevice.py).
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from test_pipeline import D, _assert_close, _case, lm_loss

from fjax.distributed.pipeline import SCHEDULES, pipeline_loss

# column-parallel: the output dim over "tensor"; row-parallel: the input dim (dim 0 is the layer)
TENSOR_PARALLEL = {
    "qkv": P("pipe", None, "tensor"),
    "qkv_b": P("pipe", "tensor"),
    "fc1": P("pipe", None, "tensor"),
    "proj": P("pipe", "tensor", None),
    "fc2": P("pipe", "tensor", None),
    "w_ih": P("pipe", None, "tensor"),
    "w_hh": P("pipe", None, "tensor"),
    "b": P("pipe", "tensor"),
}
WEIGHT_SHAPES = {(D, 3 * D), (D, 4 * D), (4 * D, D)}  # a gathered TP weight would have one of these


def _mesh():
    return Mesh(np.array(jax.devices()).reshape(2, 2, 2), ("data", "tensor", "pipe"))


def _placed(params, mesh):
    def spec(path, _):
        name = jax.tree_util.keystr(path).rsplit("'", 2)[-2]
        return NamedSharding(mesh, TENSOR_PARALLEL.get(name, P("pipe")))

    return jax.device_put(params, jax.tree_util.tree_map_with_path(spec, params))


def _gathered_weights(hlo: str) -> list:
    shapes = re.findall(r"= f32\[([0-9,]+)\]\S* all-gather", hlo)
    return [s for s in shapes if tuple(int(d) for d in s.split(",")[-2:]) in WEIGHT_SHAPES]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("model", ["gpt", "lstm"])
def test_dp2_tp2_pp2_matches_one_device(model, schedule):
    (block, params, embed, head, tokens, target, seed), want = _case(model)
    mesh = _mesh()
    params = _placed(params, mesh)

    def total(params, embed, head, tokens, target):  # (the data as arguments: see test_pipeline._one_device)
        x = jax.lax.with_sharding_constraint(embed[tokens], NamedSharding(mesh, P(None, "data")))
        return pipeline_loss(block, params, x, lm_loss, head, target, mesh=mesh, schedule=schedule)

    step = jax.jit(jax.value_and_grad(total, argnums=(0, 1, 2))).lower(params, embed, head, tokens, target).compile()
    hlo = step.as_text()
    got = step(params, embed, head, tokens, target)
    _assert_close(got, want, seed)
    assert "all-reduce" in hlo  # the data-parallel gradient sum (and the row-parallel partial sums)
    assert not _gathered_weights(hlo), f"{schedule}: TP weights gathered: {_gathered_weights(hlo)}"
    grads = got[1][0]
    column = grads["qkv"] if model == "gpt" else grads["w_ih"]
    assert column.sharding.spec[-1] == "tensor", f"the column-parallel gradient is {column.sharding.spec}"


def test_branch_free_executor_on_the_pipe_axis_alone():
    """The table executor without a lax.switch (forced on a pipe-only mesh) gives the same numbers."""
    (block, params, embed, head, tokens, target, seed), want = _case("lstm")
    mesh = Mesh(np.array(jax.devices()[:2]), ("pipe",))

    def total(params, embed, head, tokens, target):
        return pipeline_loss(
            block, params, embed[tokens], lm_loss, head, target, mesh=mesh, schedule="1f1b", branch_free=True
        )

    step = jax.jit(jax.value_and_grad(total, argnums=(0, 1, 2)))
    _assert_close(step(params, embed, head, tokens, target), want, seed)
