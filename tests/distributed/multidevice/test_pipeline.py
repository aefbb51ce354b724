"""Pipeline core (fjax.distributed.pipeline): PP2/PP4, every schedule, same loss and gradients as one device.

Runs with 8 virtual CPU devices (tests/distributed/test_multidevice.py starts it).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh

from fjax.distributed.pipeline import SCHEDULES, Schedule, pipeline_loss, stacked, theory_bubble
from fjax.errors import OpError

M, MB, T, D, V, HEADS = 4, 2, 4, 8, 16, 2


def _layer_norm(p, h):
    mu = h.mean(-1, keepdims=True)
    var = ((h - mu) ** 2).mean(-1, keepdims=True)
    return (h - mu) / jnp.sqrt(var + 1e-5) * p["g"] + p["b"]


def gpt_block(p, h):
    b, t, d = h.shape
    q, k, v = jnp.split(_layer_norm(p["ln1"], h) @ p["qkv"] + p["qkv_b"], 3, axis=-1)
    q, k, v = (z.reshape(b, t, HEADS, d // HEADS).transpose(0, 2, 1, 3) for z in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / float(np.sqrt(d // HEADS))
    scores = jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, -1e9)
    att = (jax.nn.softmax(scores, -1) @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
    h = h + att @ p["proj"]
    return h + jax.nn.gelu(_layer_norm(p["ln2"], h) @ p["fc1"]) @ p["fc2"]


def lstm_layer(p, h):
    def cell(carry, x_t):
        hh, cc = carry
        i, f, g, o = jnp.split(x_t @ p["w_ih"] + hh @ p["w_hh"] + p["b"], 4, axis=-1)
        cc = jax.nn.sigmoid(f) * cc + jax.nn.sigmoid(i) * jnp.tanh(g)
        hh = jax.nn.sigmoid(o) * jnp.tanh(cc)
        return (hh, cc), hh

    zeros = jnp.zeros((h.shape[0], h.shape[2]), h.dtype)
    _, ys = jax.lax.scan(cell, (zeros, zeros), h.transpose(1, 0, 2))
    return h + ys.transpose(1, 0, 2)


def lm_loss(lp, h, target):
    logits = _layer_norm(lp["ln"], h) @ lp["head"]
    logp = jax.nn.log_softmax(logits, -1)
    return -jnp.take_along_axis(logp, target[..., None], -1).mean()


def _ln(rng):
    return {"g": 1 + 0.1 * rng.standard_normal(D), "b": 0.1 * rng.standard_normal(D)}


def _gpt_layer(rng):
    w = lambda *s: rng.standard_normal(s) / np.sqrt(s[0])  # noqa: E731
    return {"ln1": _ln(rng), "qkv": w(D, 3 * D), "qkv_b": 0.1 * rng.standard_normal(3 * D), "proj": w(D, D),
            "ln2": _ln(rng), "fc1": w(D, 4 * D), "fc2": w(4 * D, D)}  # fmt: skip


def _lstm_layer(rng):
    return {"w_ih": rng.standard_normal((D, 4 * D)) / 4, "w_hh": rng.standard_normal((D, 4 * D)) / 4,
            "b": 0.1 * rng.standard_normal(4 * D)}  # fmt: skip


MODELS = {"gpt": (gpt_block, _gpt_layer), "lstm": (lstm_layer, _lstm_layer)}


def _problem(model, layers=4, seed=None):
    seed = np.random.SeedSequence().entropy % 2**32 if seed is None else seed
    rng = np.random.default_rng(seed)
    block, make_layer = MODELS[model]
    f32 = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), tree)  # noqa: E731
    params = f32(stacked([make_layer(rng) for _ in range(layers)]))
    embed = f32(rng.standard_normal((V, D)))
    head = f32({"ln": _ln(rng), "head": rng.standard_normal((D, V)) / 4})
    tokens = jnp.asarray(rng.integers(0, V, (M, MB, T)))
    target = jnp.asarray(rng.integers(0, V, (M, MB, T)))
    return block, params, embed, head, tokens, target, seed


# The tokens and targets are arguments of the jitted steps, not constants they close over: each
# run draws new ones (a new seed), and a program holding them would never be found in JAX's
# persistent compilation cache (tests/conftest.py), compiling again in every run.


def _one_device(block, params, embed, head, tokens, target):
    def total(params, embed, head, tokens, target):
        x = embed[tokens]

        def one(x_m, target_m):
            h = jax.lax.scan(lambda h, layer: (block(layer, h), None), x_m, params)[0]
            return lm_loss(head, h, target_m)

        return jax.vmap(one)(x, target).mean()

    return jax.jit(jax.value_and_grad(total, argnums=(0, 1, 2)))(params, embed, head, tokens, target)


def _pipelined(block, params, embed, head, tokens, target, stages, schedule):
    mesh = Mesh(np.array(jax.devices()[:stages]), ("pipe",))

    def total(params, embed, head, tokens, target):
        return pipeline_loss(block, params, embed[tokens], lm_loss, head, target, mesh=mesh, schedule=schedule)

    return jax.jit(jax.value_and_grad(total, argnums=(0, 1, 2)))(params, embed, head, tokens, target)


@functools.cache
def _case(model, layers=4):
    problem = _problem(model, layers)
    return problem, _one_device(*problem[:-1])


def _assert_close(got, want, seed):
    (loss, grads), (ref_loss, ref_grads) = got, want
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5, err_msg=f"seed {seed}")
    for (path, g), r in zip(jax.tree_util.tree_leaves_with_path(grads), jax.tree.leaves(ref_grads)):
        # (float32 sums in another order over the microbatches: seen 2.5e-5 relative on a 0.07 entry)
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-6, err_msg=f"seed {seed}: {jax.tree_util.keystr(path)}")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("stages", [2, 4])
@pytest.mark.parametrize("model", list(MODELS))
def test_pipeline_matches_one_device(model, stages, schedule):
    layers = 8 if schedule == "interleaved" and stages == 4 else 4  # interleaved: 2 chunks per stage
    problem, want = _case(model, layers)
    got = _pipelined(*problem[:-1], stages, schedule)
    _assert_close(got, want, problem[-1])


def test_pipeline_on_a_mesh_with_other_axes():
    """The pipe axis of a (data, pipe) mesh: the other axis replicates the pipeline."""
    problem, want = _case("gpt")
    block, params, embed, head, tokens, target, seed = problem
    mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "pipe"))

    def total(params, embed, head, tokens, target):
        return pipeline_loss(block, params, embed[tokens], lm_loss, head, target, mesh=mesh, schedule="1f1b")

    step = jax.jit(jax.value_and_grad(total, argnums=(0, 1, 2)))
    _assert_close(step(params, embed, head, tokens, target), want, seed)


def test_schedules_bubble_and_in_flight():
    for stages, micro in [(2, 4), (4, 4), (4, 8), (8, 16)]:
        for name in SCHEDULES:
            sched = Schedule.make(name, stages, micro)
            v = 2 if name == "interleaved" else 1
            assert sched.bubble_fraction() == pytest.approx(theory_bubble(stages, micro, v)), (name, stages, micro)
        assert Schedule.make("1f1b", stages, micro).peak_in_flight() == min(stages, micro)
        assert Schedule.make("gpipe", stages, micro).peak_in_flight() == micro
        for v in (2, 3):  # Megatron's warm-up plus one, in chunk inputs
            sched = Schedule.make("interleaved", stages, micro, virtual_stages=v)
            assert sched.peak_in_flight() == min(v * micro, 2 * (stages - 1) + (v - 1) * stages + 1)
            assert sched.bubble_fraction() == pytest.approx(theory_bubble(stages, micro, v))


def test_pipeline_bad_input():
    block, params, embed, head, tokens, target, _ = _problem("lstm", layers=3, seed=0)
    mesh = Mesh(np.array(jax.devices()[:2]), ("pipe",))
    with pytest.raises(OpError, match="3 stacked layers cannot split over 2 stages"):
        pipeline_loss(block, params, embed[tokens], lm_loss, head, target, mesh=mesh)
    with pytest.raises(OpError, match="no pipe axis 'stage'"):
        pipeline_loss(block, params, embed[tokens], lm_loss, head, target, mesh=mesh, axis="stage")
    params = jax.tree.map(lambda a: a[:2], params)
    with pytest.raises(OpError, match="target has shape"):
        pipeline_loss(block, params, embed[tokens], lm_loss, head, target[:2], mesh=mesh)
    with pytest.raises(OpError, match="unknown schedule 'zb'"):
        Schedule.make("zb", 2, 2)
    with pytest.raises(OpError, match="microbatches=3 is not a multiple of 4"):
        Schedule.make("interleaved", 4, 3)
    with pytest.raises(OpError, match="'1f1b' has one chunk per stage, got virtual_stages=2"):
        Schedule.make("1f1b", 2, 2, virtual_stages=2)
    with pytest.raises(OpError, match=r"2 stacked layers cannot split into 2 chunks on each of the 2 stages"):
        pipeline_loss(block, params, embed[tokens], lm_loss, head, target, mesh=mesh, schedule="interleaved")
