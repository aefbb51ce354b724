"""The one transform pipeline: repeated calls of fjax.func and autograd.functional transforms.

A repeated call with the same function and inputs of the same structure takes the pipeline's
``Repeat`` (no tracing, no cache lookups); everything that could change the result must send it
back to the full path. Each case compares with torch.func / torch.autograd.functional.
"""

from __future__ import annotations

import ast
import os
import pathlib
import random

import numpy as np
import pytest
import torch
import torch.autograd.functional as TAF
import torch.func as TF

import fjax
import fjax.autograd.functional as FAF
import fjax.func as FF
from fjax._transforms import pipeline, program

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))
rng = np.random.default_rng(SEED)


@pytest.fixture
def traces(monkeypatch):
    calls = []
    original = program.trace

    def counting(*args, **kwargs):
        calls.append(args[-1])
        return original(*args, **kwargs)

    monkeypatch.setattr(program, "trace", counting)
    pipeline.cache_clear()
    return calls


def pair(*shape):
    a = rng.standard_normal(shape).astype(np.float32)
    return fjax.tensor(a), torch.tensor(a)


def same(f, t, what=""):
    np.testing.assert_allclose(
        np.asarray(f.detach().numpy()), t.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{what} (seed={SEED})"
    )


def test_repeated_grad_reuses_the_program_and_reads_new_values(traces):
    (w, tw), (x, tx) = pair(4, 3), pair(3)

    def f(p, x):
        return (p["w"] @ x).tanh().sum()

    def tf(p, x):
        return (p["w"] @ x).tanh().sum()

    g = FF.grad(f)
    for _ in range(3):
        (w, tw), (x, tx) = pair(4, 3), pair(3)
        same(g({"w": w}, x)["w"], TF.grad(tf)({"w": tw}, tx)["w"], "grad")
    assert len(traces) == 1, "the later calls take the repeat plan"
    same(FF.grad(f)({"w": w}, x)["w"], TF.grad(tf)({"w": tw}, tx)["w"], "a new grad(f) of the same f")


def test_dict_arguments_keep_the_users_order_on_repeats():
    (a, ta), (b, tb) = pair(3), pair(3)

    def f(p):
        return (p["a"] * 2 + p["b"] ** 2).sum()

    def tf(p):
        return (p["a"] * 2 + p["b"] ** 2).sum()

    g = FF.grad(f)
    for params, tparams in (({"a": a, "b": b}, {"a": ta, "b": tb}), ({"b": b, "a": a}, {"b": tb, "a": ta})) * 2:
        out, want = g(params), TF.grad(tf)(tparams)
        assert list(out) == list(want) == list(params)
        for k in want:
            same(out[k], want[k], k)


def test_python_values_and_globals_are_part_of_the_plan(traces):
    (x, tx) = pair(5)
    g = FF.grad(lambda x, s: (x * s).sin().sum())
    for s in (1.0, 2.0, -0.0, 2.0):
        same(g(x, s), TF.grad(lambda x, s: (x * s).sin().sum())(tx, s), f"scale {s}")
    assert len(traces) == 3, "one program per distinct Python value (-0.0 is not 0.0)"

    global _POWER
    _POWER = 2
    h = FF.grad(_powered)
    same(h(x), 2 * tx, "x**2")
    _POWER = 3
    same(h(x), 3 * tx**2, "a changed global reaches the repeat")


_POWER = 2


def _powered(x):
    return (x**_POWER).sum()


def test_module_parameters_are_read_afresh_and_shape_changes_retrace():
    model = fjax.nn.Linear(3, 2)
    tmodel = torch.nn.Linear(3, 2)
    x, tx = pair(4, 3)
    g = FF.grad(lambda x: model(x).square().sum())
    for shape in ((2, 3), (2, 3), (5, 3), (5, 3)):
        w = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape[:1]).astype(np.float32)
        model.weight, tmodel.weight = fjax.nn.Parameter(fjax.tensor(w)), torch.nn.Parameter(torch.tensor(w))
        model.bias, tmodel.bias = fjax.nn.Parameter(fjax.tensor(b)), torch.nn.Parameter(torch.tensor(b))
        same(g(x), TF.grad(lambda x: tmodel(x).square().sum())(tx), f"weight {shape}")
    with torch.no_grad():
        tmodel.weight.mul_(2)
    with fjax.no_grad():
        model.weight.mul_(2)
    same(g(x), TF.grad(lambda x: tmodel(x).square().sum())(tx), "in-place change of a captured parameter")


def test_repeats_stay_connected_to_parameters_that_require_grad():
    """A meta-learning step: the inner gradient, taken by a repeated func.grad, is
    differentiated again with respect to the parameters by the outer backward()."""
    w0 = rng.standard_normal((3,)).astype(np.float32)
    w, tw = fjax.tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    g = FF.grad(lambda w, x: (w * x).sin().sum())
    tg = TF.grad(lambda w, x: (w * x).sin().sum())
    for step in range(3):
        x, tx = pair(3)
        inner, tinner = g(w, x), tg(tw, tx)
        (w - 0.1 * inner).square().sum().backward()
        (tw - 0.1 * tinner).square().sum().backward()
        same(w.grad, tw.grad, f"outer gradient, step {step}")


def test_functional_repeats_match_torch_for_new_inputs(traces):
    (a, ta) = pair(4, 4)

    def f(x):
        return (a @ x).tanh().sum()

    def tf(x):
        return (ta @ x).tanh().sum()

    for _ in range(3):
        (x, tx), (v, tv) = pair(4), pair(4)
        for ours, theirs in ((FAF.hvp, TAF.hvp), (FAF.vhp, TAF.vhp)):
            out, prod = ours(f, x, v)
            tout, tprod = theirs(tf, tx, tv)
            same(out, tout, ours.__name__)
            same(prod, tprod, ours.__name__)
        same(FAF.hessian(f, x), TAF.hessian(tf, tx), "hessian")
    assert len(traces) == 3, "hvp, vhp and hessian trace once each"
    (y, ty) = pair(4, 1)
    same(FAF.jacobian(lambda x: (a @ x).sin(), y), TAF.jacobian(lambda x: (ta @ x).sin(), ty), "new input shape")


def test_no_generated_source():
    """The pipeline is plain Python: no module of fjax builds code with exec/eval/compile."""
    root = pathlib.Path(fjax.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("exec", "eval"):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, found


def test_create_graph_replays_compile_once_per_graph():
    """A gradient penalty loop: each step's create_graph=True VJP goes through the pipeline,
    compiled for the first step's graph and reused by the later ones, with torch's numbers."""
    from fjax._transforms import executable

    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    w, tw = fjax.tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    misses = []
    for step in range(4):
        x, tx = pair(5, 4)
        x.requires_grad_(True)
        tx.requires_grad_(True)
        (gx,) = fjax.autograd.grad((x @ w).tanh().sum(), x, create_graph=True)
        (tgx,) = torch.autograd.grad((tx @ tw).tanh().sum(), tx, create_graph=True)
        same(gx, tgx, f"input gradient, step {step}")
        gx.square().sum().backward()
        tgx.square().sum().backward()
        same(w.grad, tw.grad, f"penalty gradient, step {step}")
        misses.append(executable.cache_info().misses)
    assert misses[1:] == misses[:1] * 3, f"one compile for the first step's graph, then reuse: {misses}"


def test_create_graph_replays_trace_once_and_read_new_constants(monkeypatch):
    """The replayed tape is traced once per graph structure: a later step with the same kernels
    and wiring reuses the program, with this step's constants (a Python number, a tensor that
    takes no gradient) as its inputs, not the first step's; another structure traces anew."""
    calls = []
    original = program.trace_arrays

    def counting(fn, avals, where, consts=()):
        calls.append(where)
        return original(fn, avals, where, consts)

    monkeypatch.setattr(program, "trace_arrays", counting)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    w, tw = fjax.tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    for step in range(4):
        (x, tx), (b, tb) = pair(5, 4), pair(3)
        x.requires_grad_(True)
        tx.requires_grad_(True)
        scale = float(rng.uniform(0.5, 2.0))
        (gx,) = fjax.autograd.grad(((x @ w + b).tanh() * scale).sum(), x, create_graph=True)
        (tgx,) = torch.autograd.grad(((tx @ tw + tb).tanh() * scale).sum(), tx, create_graph=True)
        same(gx, tgx, f"input gradient, step {step}")
        gx.square().sum().backward()
        tgx.square().sum().backward()
        same(w.grad, tw.grad, f"penalty gradient, step {step}")
    assert calls == ["GradWithGraph"], f"one trace for four steps of one graph: {calls}"
    (gx,) = fjax.autograd.grad((x @ w + b).sin().sum(), x, create_graph=True)
    (tgx,) = torch.autograd.grad((tx @ tw + tb).sin().sum(), tx, create_graph=True)
    same(gx, tgx, "another graph")
    assert len(calls) == 2, f"another graph (sin, not tanh) traces its own program: {calls}"


def test_autocast_selects_the_program():
    """A program traced under autocast casts; a repeat outside autocast (or the other way)
    must not reuse it."""
    w, x = fjax.randn(3, 3), fjax.randn(3)

    def f(x):
        return w @ x

    for _ in range(2):
        assert FAF.vjp(f, x, fjax.ones(3))[0].dtype == fjax.float32
        with fjax.autocast("cpu"):
            assert FAF.vjp(f, x, fjax.ones(3))[0].dtype == fjax.bfloat16
