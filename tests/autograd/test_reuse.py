"""Functional transforms reuse a traced program only while the function cannot have changed.

Each test calls a transform, changes something the function reads (a captured tensor's value,
a global, a closure, a module), calls again and compares with torch.autograd.functional on the
same values; ``traces`` counts how often the user's function was actually traced.

Set FJAX_TEST_SEED to replay a failure (the seed is in every failure message).
"""

from __future__ import annotations

import collections
import functools
import os
import random

import numpy as np
import pytest
import torch
import torch.autograd.functional as TAF

import fjax
import fjax.autograd.functional as FAF
import fjax.func as FF
from fjax._transforms import pipeline, program

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))
rng = np.random.default_rng(SEED)


@pytest.fixture
def traces(monkeypatch):
    """A list that grows by one each time a transform traces the user's function."""
    calls = []
    original = program.trace

    def counting(*args, **kwargs):
        calls.append(args[-1])
        return original(*args, **kwargs)

    monkeypatch.setattr(program, "trace", counting)
    pipeline.cache_clear()
    return calls


def same(f, t, what=""):
    tol = dict(rtol=1e-5, atol=1e-6) if t.dtype == torch.float32 else dict(rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), **tol, err_msg=f"{what} (seed={SEED})")


def arr(*shape):
    return rng.standard_normal(shape)


SCALE = 2.0
W_GLOBAL = fjax.tensor(arr(3, 3))


def g_global(x):
    return fjax.tanh(W_GLOBAL @ x).sum() * SCALE


def test_repeated_and_fresh_lambdas_trace_once(traces):
    w, x = arr(4, 4), arr(4)
    W, X = fjax.tensor(w), fjax.tensor(x)

    def make():
        return lambda x: fjax.tanh(W @ fjax.tanh(W @ x))

    expected = TAF.jacobian(lambda x: torch.tanh(torch.tensor(w) @ torch.tanh(torch.tensor(w) @ x)), torch.tensor(x))
    for _ in range(3):
        same(FAF.jacobian(make(), X), expected, "jacobian")
    assert len(traces) == 1, traces
    for _ in range(2):  # the same lambda expression evaluated again (a re-run notebook cell)
        FAF.hessian(lambda x: make()(x).sum(), X)
    assert len(traces) == 2, "hessian traces once; jacobian's program is a separate entry"
    FAF.jacobian(lambda x: fjax.tanh(W @ x), fjax.tensor(arr(4, 2)))
    FAF.jacobian(lambda x: fjax.tanh(W @ x), fjax.tensor(arr(4, 3)))
    assert len(traces) == 4, "a new input shape traces again"


def test_captured_tensor_values_are_read_on_every_call(traces):
    w, x = arr(3, 3), arr(3)
    W, X = fjax.tensor(w), fjax.tensor(x)

    def f(x):
        return fjax.tanh(W @ x)

    FAF.jacobian(f, X)
    with fjax.no_grad():
        W.mul_(3.0)  # in place: same Tensor, new array
    same(FAF.jacobian(f, X), TAF.jacobian(lambda x: torch.tanh(torch.tensor(w * 3.0) @ x), torch.tensor(x)), "in place")
    assert len(traces) == 1, traces


def test_globals_and_closures_are_guarded(traces):
    global SCALE, W_GLOBAL
    x = arr(3)
    X, TX = fjax.tensor(x), torch.tensor(x)
    old_scale, old_w = SCALE, W_GLOBAL
    try:
        for scale in (2.0, -0.5):
            SCALE = scale
            W_GLOBAL = fjax.tensor(arr(3, 3))
            tw = torch.tensor(W_GLOBAL.numpy())
            expected = TAF.hessian(lambda x: torch.tanh(tw @ x).sum() * scale, TX)  # noqa: B023 - called here
            same(FAF.hessian(g_global, X), expected, "global")
        assert len(traces) == 2
    finally:
        SCALE, W_GLOBAL = old_scale, old_w

    power = 2

    def h(x):
        return (x**power).sum()

    for power in (2, 3):  # noqa: B007 - h's closure reads it
        same(FAF.hessian(h, X), TAF.hessian(lambda x: (x**power).sum(), TX), f"power={power}")  # noqa: B023


def test_closure_cells_filled_and_emptied_are_seen(traces):
    """A closure variable assigned after the function was traced, then deleted again."""

    def stages():
        def h(x):
            try:
                factor = k
            except NameError:  # k is not assigned (yet, or any more)
                factor = 1.0
            return (x**3).sum() * factor

        yield h, 1.0
        k = 3.0
        yield h, k
        del k
        yield h, 1.0

    x = arr(3)
    X, TX = fjax.tensor(x), torch.tensor(x)
    for h, factor in stages():
        for _ in range(2):  # the second call is a repeat (the fast path)
            want = TAF.hessian(lambda x: (x**3).sum() * factor, TX)  # noqa: B023 - called here
            same(FAF.hessian(h, X), want, f"factor {factor}")
    assert len(traces) == 2, "emptied again, the cell gives the first program back"


def test_repeats_with_new_input_shapes_or_structure_are_checked_again(traces):
    """A repeated call of the same function takes a fast path; new shapes, a tuple instead of
    a Tensor, a namedtuple, or a bad ``v`` must still give torch's results and errors."""
    w = arr(4, 4)
    W, TW = fjax.tensor(w), torch.tensor(w)

    def f(x):
        return fjax.tanh(W @ x).sum(0)

    def tf(x):
        return torch.tanh(TW @ x).sum(0)

    def f_tuple(x):
        return (f(x),)

    def g(x):
        return f(x).sum()

    for shape in [(4,), (4,), (4, 2), (4, 2), (4,)]:
        x, v = arr(*shape), arr(*shape)
        X, TX, V, TV = fjax.tensor(x), torch.tensor(x), fjax.tensor(v), torch.tensor(v)
        same(FAF.jacobian(f, X), TAF.jacobian(tf, TX), f"jacobian {shape}")
        ((out,),), ((t_out,),) = FAF.jacobian(f_tuple, (X,)), TAF.jacobian(lambda x: (tf(x),), (TX,))
        same(out, t_out, f"jacobian, tuples in and out, {shape}")
        if len(shape) == 1:
            for name in ("hvp", "vhp"):
                got, want = getattr(FAF, name)(g, X, V), getattr(TAF, name)(lambda x: tf(x).sum(), TX, TV)
                same(got[1], want[1], f"{name} {shape}")

    def weighted(a, b):
        return (W @ (a * b)).sum()

    pair = collections.namedtuple("pair", "a b")  # a tuple subclass: the full path every time
    for _ in range(2):
        a, b = arr(4), arr(4)
        got = FAF.hessian(weighted, pair(fjax.tensor(a), fjax.tensor(b)))
        want = TAF.hessian(lambda a, b: (TW @ (a * b)).sum(), pair(torch.tensor(a), torch.tensor(b)))
        for i, j in [(0, 0), (0, 1), (1, 0), (1, 1)]:
            same(got[i][j], want[i][j], f"hessian of a namedtuple, block {i}{j}")

    def h(x):
        return fjax.tanh(W @ x)

    FAF.vjp(h, fjax.tensor(arr(4)), fjax.tensor(arr(4)))
    with pytest.raises(RuntimeError, match="v has invalid size"):
        FAF.vjp(h, fjax.tensor(arr(4)), fjax.tensor(arr(3)))


def test_modules_are_guarded(traces):
    torch.manual_seed(SEED % 2**31)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    m = fjax.nn.Sequential(fjax.nn.Linear(3, 4), fjax.nn.Tanh(), fjax.nn.Linear(4, 2))
    m.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = arr(3)
    X, TX = fjax.tensor(x), torch.tensor(x, dtype=torch.float32)
    same(FAF.jacobian(m, X.float()), TAF.jacobian(tm, TX), "module")
    same(FAF.jacobian(m, X.float()), TAF.jacobian(tm, TX), "module again")
    assert len(traces) == 1
    m[1] = fjax.nn.Sigmoid()  # a structural change
    tm[1] = torch.nn.Sigmoid()
    same(FAF.jacobian(m, X.float()), TAF.jacobian(tm, TX), "after replacing a layer")
    assert len(traces) == 2


def test_constants_converted_in_place_are_seen_by_repeats(traces):
    """``module.double()`` changes its parameters' dtype in place (the same Tensors). A repeated
    call dispatches before it checks its constants: that dispatch fails (its program takes
    float32) or its result is dropped, and the call traces the function again."""
    lin, tlin = fjax.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    lin.weight.data = fjax.tensor(tlin.weight.detach().numpy())
    x, v = arr(3), arr(3)
    X, V = fjax.tensor(x), fjax.tensor(v)
    TX, TV = torch.tensor(x), torch.tensor(v)

    def f(x, W=lin.weight):
        return fjax.tanh(x * W.double().sum()).sum()

    def tf(x, W=tlin.weight):
        return torch.tanh(x * W.double().sum()).sum()

    for dtype in (torch.float32, torch.float32, torch.float64, torch.float64):
        lin.to(fjax.float64 if dtype == torch.float64 else fjax.float32)
        tlin.to(dtype)
        for name in ("hvp", "vhp"):
            (out, got), (t_out, want) = getattr(FAF, name)(f, X, V), getattr(TAF, name)(tf, TX, TV)
            same(got, want, f"{name} with {dtype} parameters")
            same(out, t_out, f"{name}'s value with {dtype} parameters")
    assert len(traces) == 4, "each transform traces once per parameter dtype"


def test_methods_keyword_defaults_and_partials_are_guarded(traces):
    """Places a repeated call checks by identity: a class's methods, keyword defaults changed
    in place, a partial's keywords, a function's defaults and code."""
    x = arr(3)
    X, TX = fjax.tensor(x), torch.tensor(x)

    class Scaled(fjax.nn.Module):
        def forward(self, x):
            return (x**2).sum() * 2.0

    m = Scaled()
    same(FAF.hessian(m, X), TAF.hessian(lambda x: (x**2).sum() * 2.0, TX), "method")
    Scaled.forward = lambda self, x: (x**3).sum()
    same(FAF.hessian(m, X), TAF.hessian(lambda x: (x**3).sum(), TX), "reassigned method")

    def powered(x, *, p=2):
        return (x**p).sum()

    same(FAF.hessian(powered, X), TAF.hessian(lambda x: (x**2).sum(), TX), "kwdefault")
    powered.__kwdefaults__["p"] = 3
    same(FAF.hessian(powered, X), TAF.hessian(lambda x: (x**3).sum(), TX), "kwdefault changed in place")

    def scaled(x, a=2.0):
        return (x**2).sum() * a

    same(FAF.hessian(scaled, X), TAF.hessian(lambda x: (x**2).sum() * 2.0, TX), "defaults")
    scaled.__defaults__ = (3.0,)
    same(FAF.hessian(scaled, X), TAF.hessian(lambda x: (x**2).sum() * 3.0, TX), "defaults replaced")
    scaled.__code__ = (lambda x, a=2.0: (x**3).sum() * a).__code__
    same(FAF.hessian(scaled, X), TAF.hessian(lambda x: (x**3).sum() * 3.0, TX), "code replaced")

    part = functools.partial(powered, p=2)
    same(FAF.hessian(part, X), TAF.hessian(lambda x: (x**2).sum(), TX), "partial")
    part.keywords["p"] = 4
    same(FAF.hessian(part, X), TAF.hessian(lambda x: (x**4).sum(), TX), "partial's keywords changed in place")


def test_what_cannot_be_guarded_is_traced_every_call(traces):
    x = fjax.ones(4, dtype=fjax.float64)
    factors = [2.0]

    def listy(x):
        return (x * factors[0]).sum()

    first = FAF.hessian(lambda x: listy(x) ** 2, x)
    factors[0] = 3.0  # a list mutated in place: no guard can see it, so it is never reused
    second = FAF.hessian(lambda x: listy(x) ** 2, x)
    np.testing.assert_allclose(second.numpy(), first.numpy() * 9 / 4)
    assert len(traces) == 2

    drop = fjax.nn.Dropout(0.5)
    draws = {float(FAF.jacobian(lambda x: drop(x).sum(), x).sum()) for _ in range(12)}
    assert len(draws) > 1, "random draws are fresh on every call"


def test_func_wrappers_see_the_users_function(traces):
    global SCALE
    x = arr(3)
    X = fjax.tensor(x)

    def inner(x):
        return (x**3).sum() * SCALE

    grad_f = FF.grad(inner)
    first = FAF.jacobian(grad_f, X).numpy()
    np.testing.assert_allclose(first, np.diag(6 * x) * SCALE, rtol=1e-10)
    old = SCALE
    try:
        SCALE = 5.0
        np.testing.assert_allclose(FAF.jacobian(grad_f, X).numpy(), np.diag(6 * x) * 5.0, rtol=1e-10)
    finally:
        SCALE = old
    assert len(traces) >= 2


def test_vmap_of_grad_over_a_module_traces_once(traces):
    torch.manual_seed(SEED % 2**31)
    tm = torch.nn.Linear(3, 1)
    m = fjax.nn.Linear(3, 1)
    m.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    xs, ys = arr(5, 3).astype(np.float32), arr(5, 1).astype(np.float32)

    def loss(p, x, y):
        return ((FF.functional_call(m, p, (x,)) - y) ** 2).sum()

    def tloss(p, x, y):
        return ((torch.func.functional_call(tm, p, (x,)) - y) ** 2).sum()

    params = dict(m.named_parameters())
    tparams = {k: v.detach() for k, v in tm.named_parameters()}
    per_example = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
    expected = per_example(tparams, torch.tensor(xs), torch.tensor(ys))
    for _ in range(3):
        got = FF.vmap(FF.grad(loss), in_dims=(None, 0, 0))(params, fjax.tensor(xs), fjax.tensor(ys))
        for k in expected:
            same(got[k], expected[k], f"per-example grad {k}")
    assert len([t for t in traces if "vmap" in t]) == 1, traces
