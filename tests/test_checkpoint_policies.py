"""Checkpoint policies: fjax.utils.checkpoint(..., policy=...) against torch's checkpoint, the
per-module graph option, config.memory_budget, and the warning when a policy saves nothing."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import numpy as np
import pytest
import torch

import fjax
import fjax.nn as nn
import fjax.nn.functional as F
from fjax.errors import OpError
from fjax.utils import checkpoint as ckpt
from fjax.utils.checkpoint import checkpoint, checkpoint_name, save_only_these_names

SEED = int(np.random.default_rng().integers(2**31))
POLICIES = ["nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable", "names", "offload"]


def _policy(name):
    if name == "offload":
        return ckpt.save_and_offload_only_these_names(names_which_can_be_offloaded=["hidden"])
    return save_only_these_names("hidden") if name == "names" else name


def _pair(rng):
    """Two-layer blocks with the same weights in fjax and torch."""
    w1, b1 = rng.standard_normal((32, 8)).astype(np.float32) * 0.3, rng.standard_normal(32).astype(np.float32)
    w2, b2 = rng.standard_normal((4, 32)).astype(np.float32) * 0.3, rng.standard_normal(4).astype(np.float32)
    f1, f2 = nn.Linear(8, 32), nn.Linear(32, 4)
    t1, t2 = torch.nn.Linear(8, 32), torch.nn.Linear(32, 4)
    for fl, tl, w, b in ((f1, t1, w1, b1), (f2, t2, w2, b2)):
        fl.weight.data, fl.bias.data = fjax.tensor(w), fjax.tensor(b)
        with torch.no_grad():
            tl.weight.copy_(torch.tensor(w)), tl.bias.copy_(torch.tensor(b))
    return (f1, f2), (t1, t2)


@pytest.mark.parametrize("name", POLICIES)
def test_eager_policy_matches_torch_checkpoint(name):
    rng = np.random.default_rng(SEED)
    (f1, f2), (t1, t2) = _pair(rng)
    xv = rng.standard_normal((6, 8)).astype(np.float32)

    def f(x):
        return f2(checkpoint_name(F.gelu(f1(x)), "hidden")).tanh()

    def t(x):
        return t2(torch.nn.functional.gelu(t1(x))).tanh()

    x, xt = fjax.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
    y = checkpoint(f, x, policy=_policy(name))
    yt = torch.utils.checkpoint.checkpoint(t, xt, use_reentrant=False)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    for a, b in ((x, xt), (f1.weight, t1.weight), (f1.bias, t1.bias), (f2.weight, t2.weight)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{name} {SEED}")


def test_policies_keep_fewer_residuals():
    rng = np.random.default_rng(SEED)
    w1 = jax.numpy.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    w2 = jax.numpy.asarray(rng.standard_normal((256, 64)).astype(np.float32))

    def fn(x):
        h = jax.ad_checkpoint.checkpoint_name(jax.nn.gelu(x @ w1), "hidden")
        return jax.numpy.tanh(h @ w2)

    x = jax.ShapeDtypeStruct((128, 64), jax.numpy.float32)
    plain = ckpt._saved_bytes(fn, [x])
    kept = {n: ckpt._saved_bytes(jax.checkpoint(fn, policy=ckpt.resolve_policy(_policy(n))), [x]) for n in POLICIES}
    assert kept["nothing_saveable"] < plain
    # the names policy keeps the (128, 256) hidden activation, nothing_saveable does not
    assert kept["names"] >= kept["nothing_saveable"] + 128 * 256 * 4
    assert kept["dots_saveable"] > kept["nothing_saveable"]
    everything = ckpt._saved_bytes(jax.checkpoint(fn, policy=ckpt.resolve_policy("everything_saveable")), [x])
    assert everything >= 0.99 * plain


def test_policy_that_saves_nothing_warns_and_useful_one_does_not():
    lin = nn.Linear(8, 16)

    def block(x):
        return lin(x).relu().sum(dim=1)

    x = fjax.randn(4, 8, requires_grad=True)
    with pytest.warns(UserWarning, match="saves no memory"):
        checkpoint(block, x, policy="everything_saveable")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(block, x, policy="nothing_saveable").sum().backward()
    assert lin.weight.grad is not None


def test_unknown_policy_lists_the_valid_names():
    with pytest.raises(ValueError, match="unknown policy 'dots'.*dots_saveable.*nothing_saveable"):
        checkpoint(lambda x: x * 2, fjax.ones(2, requires_grad=True), policy="dots")
    with pytest.raises(TypeError, match="policy must be"):
        ckpt.resolve_policy(3)
    with pytest.raises(TypeError, match="names must be strings"):
        save_only_these_names("a", 1)
    block = nn.Graph.trace(lambda x: x)  # any graph: GraphModule validates on assignment
    assert block is not None
    gm = fjax.nn.graph.GraphModule("m")
    with pytest.raises(ValueError, match="unknown policy 'save_dots'"):
        gm.activation_checkpointing = "save_dots"
    gm.activation_checkpointing = "dots_saveable"
    assert gm.activation_checkpointing == "dots_saveable"


def test_a_policy_function_writing_outside_tensors_raises_naming_what_to_change():
    counter = fjax.zeros(())

    def counts(x):
        counter.add_(1)  # would run again at every trace and recomputation
        return (x.sin() * 2).sum()

    x = fjax.randn(4, requires_grad=True)
    with pytest.raises(
        OpError,
        match=r"counts\]: the checkpointed function writes in place to a tensor from outside the function "
        r"\(shape \[\], float32\).*Move the update out",
    ):
        checkpoint(counts, x, policy="nothing_saveable")
    assert counter.item() == 0  # nothing written

    def doubles(x):
        x.mul_(2)  # the caller's tensor would not see it
        return x.sum()

    with pytest.raises(OpError, match=r"one of its arguments \(shape \[4\], float32\)"):
        checkpoint(doubles, x * 1, policy="nothing_saveable")

    def local(x):  # in-place ops on the function's own intermediates are fine
        y = x * 2
        y.add_(1)
        return fjax.nn.functional.relu(y, inplace=True).sum()

    out = checkpoint(local, x, policy="nothing_saveable")
    out.backward()
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    torch.relu(tx * 2 + 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_dropout_and_buffers_under_a_policy():
    fjax.manual_seed(SEED % 1000)
    net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Dropout(0.5), nn.Linear(16, 2))
    ref = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Dropout(0.5), nn.Linear(16, 2))
    ref.load_state_dict(net.state_dict())
    x = fjax.randn(10, 8)
    fjax.manual_seed(7)
    y = checkpoint(net, x, policy="nothing_saveable")
    fjax.manual_seed(7)
    y_ref = ref(x)
    np.testing.assert_allclose(y.numpy(), y_ref.numpy(), rtol=1e-5, atol=1e-6)
    y.square().sum().backward()
    y_ref.square().sum().backward()
    for (name, a), b in zip(net.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(net[1].running_mean.numpy(), ref[1].running_mean.numpy(), rtol=1e-6, atol=1e-6)


class Train(nn.Graph):
    def __init__(self, model, policy=None, functional=None):
        super().__init__()
        self.model = model
        self.functional = functional
        self.add_optimizer(fjax.optim.SGD(model.parameters(), lr=0.05))
        if policy is not None:
            for i in range(len(model)):
                self.model[i].to(nn.graph.GraphModule).activation_checkpointing = policy

    def build(self, x, y):
        if self.functional is not None:
            out = checkpoint(self.model, x, policy=self.functional)
        else:
            out = self.model(x)
        loss = F.mse_loss(out, y)
        loss.backward()
        return loss


def _blocks(depth=3, width=16):
    return nn.Sequential(
        *[nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)) for _ in range(depth)]
    )


def _losses(policy=None, functional=None, steps=3):
    fjax.manual_seed(SEED % 1000)
    model = _blocks()
    g = Train(model, policy, functional)
    rng = np.random.default_rng(SEED)
    x = fjax.tensor(rng.standard_normal((32, 16)).astype(np.float32))
    y = fjax.tensor(rng.standard_normal((32, 16)).astype(np.float32))
    return [g(x, y).item() for _ in range(steps)], g


@pytest.mark.parametrize("policy", [True, "dots_saveable", "dots_with_no_batch_dims_saveable"])
def test_graph_module_policy_keeps_the_losses(policy):
    ref, _ = _losses()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # on CPU's default scheduler a policy may save nothing (tested below)
        got, _ = _losses(policy)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-6)


def test_checkpoint_call_inside_a_graph_build():
    ref, _ = _losses()
    got, _ = _losses(functional="nothing_saveable")
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-6)


def test_graph_policy_that_saves_nothing_warns():
    with pytest.warns(UserWarning, match="saves no memory here"):
        _losses("everything_saveable", steps=1)


SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    import numpy as np
    import fjax, fjax.nn as nn, fjax.nn.functional as F
    from fjax.errors import OpError
    seed = int(sys.argv[1])

    def blocks():
        return nn.Sequential(*[nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32)) for _ in range(6)])

    class Listed(nn.Module):  # blocks in a ModuleList, called by their owner (never the list itself)
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(blocks())
            self.head = nn.Linear(32, 32)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.head(x)

    class G(nn.Graph):
        def __init__(self, model, policy=None, budget=None):
            super().__init__()
            self.model = model
            self.add_optimizer(fjax.optim.SGD(model.parameters(), lr=0.01))
            if policy is not None:
                for i in range(6):
                    self.model[i].to(nn.graph.GraphModule).activation_checkpointing = policy
            if budget is not None:
                self.config.memory_budget(budget)

        def build(self, x, y):
            loss = F.mse_loss(self.model(x), y)
            loss.backward()
            return loss

    rng = np.random.default_rng(seed)
    x = fjax.tensor(rng.standard_normal((512, 32)).astype(np.float32))
    y = fjax.tensor(rng.standard_normal((512, 32)).astype(np.float32))

    def run(policy=None, budget=None, model=blocks):
        fjax.manual_seed(seed % 1000)
        g = G(model(), policy, budget)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = [g(x, y).item() for _ in range(2)]
        r = g.memory_report()
        return {"losses": losses, "peak": r["peak_bytes"], "temp": r["temp_bytes"],
                "recomputed": r.get("checkpointing"), "warned": [str(w.message) for w in caught]}

    out = {"none": run(), "full": run(True), "dots": run("dots_saveable")}
    budget = int(out["none"]["peak"] * 0.8)
    out["budget"] = run(budget=budget)
    out["budget_value"] = budget
    out["roomy"] = run(budget=out["none"]["peak"] * 2)
    out["listed"] = run(budget=budget, model=Listed)
    try:
        run(budget=1000)
        out["tiny"] = None
    except OpError as e:
        out["tiny"] = str(e)
    print(json.dumps(out))
    """
)


def _run_script(path, text):
    """Run ``text`` as a script in a fresh process with XLA:CPU's memory-aware scheduling (JAX
    reads XLA_FLAGS once, at import) and return the JSON its last line prints."""
    path.write_text(text)
    env = {**os.environ, "XLA_FLAGS": "--xla_cpu_enable_concurrency_optimized_scheduler=false"}
    proc = subprocess.run([sys.executable, str(path), str(SEED)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_checkpointing_lowers_compiled_memory_and_budget_fits(tmp_path):
    out = _run_script(tmp_path / "budget.py", SCRIPT)
    none, full = out["none"], out["full"]
    assert full["temp"] < 0.8 * none["temp"], (full["temp"], none["temp"])
    assert not full["warned"], full["warned"]
    for key in ("full", "dots", "budget", "roomy"):
        np.testing.assert_allclose(out[key]["losses"], none["losses"], rtol=2e-5, atol=1e-6, err_msg=key)
    # the budget: fits, recomputes some blocks (named), not all of them
    b = out["budget"]
    assert b["peak"] <= out["budget_value"] < none["peak"]
    assert b["recomputed"] and 1 <= len(b["recomputed"]) <= 6
    assert all(p.startswith("model.") for p in b["recomputed"])
    assert out["roomy"]["recomputed"] == [] and out["roomy"]["peak"] == none["peak"]
    # blocks held in a ModuleList: the blocks are recomputed (the list is never called)
    listed = out["listed"]
    assert listed["peak"] <= out["budget_value"], listed
    assert listed["recomputed"] and all(p.startswith("model.layers.") for p in listed["recomputed"]), listed
    assert "too small" in out["tiny"] and "at least" in out["tiny"] and "memory_budget(1000)" in out["tiny"]


LSTM_SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    import numpy as np
    import fjax, fjax.nn as nn, fjax.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.LSTM(32 if i == 0 else 128, 128, batch_first=True) for i in range(2)])
            self.head = nn.Linear(128, 32)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)[0]
            return self.head(x)

    class G(nn.Graph):
        def __init__(self, policy):
            super().__init__()
            fjax.manual_seed(0)
            self.model = Net()
            self.add_optimizer(fjax.optim.Adam(self.model.parameters(), lr=1e-3))
            if policy:
                for i in range(2):
                    self.model.layers[i].to(nn.graph.GraphModule).activation_checkpointing = True

        def build(self, x, y):
            loss = F.mse_loss(self.model(x), y)
            loss.backward()
            return loss

    rng = np.random.default_rng(int(sys.argv[1]))
    x = fjax.tensor(rng.standard_normal((16, 40, 32)).astype(np.float32))
    y = fjax.tensor(rng.standard_normal((16, 40, 32)).astype(np.float32))
    out = {}
    for policy in (False, True):
        g = G(policy)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = [g(x, y).item() for _ in range(2)]
        out[str(policy)] = {"losses": losses, "temp": g.memory_report()["temp_bytes"],
                            "warned": [str(w.message) for w in caught if "saves no memory" in str(w.message)]}
    print(json.dumps(out))
    """
)


def test_checkpointed_lstm_layers_lower_compiled_memory(tmp_path):
    """A recomputed LSTM layer's scan runs in the backward, after its output's gradient exists:
    XLA:CPU drops optimization barriers before CSE and scheduling, so without the cotangent
    dependence (``fjax._order.after``) the recomputation merged with the forward's input
    projection and the step kept every byte (the temporaries were identical, and it warned)."""
    out = _run_script(tmp_path / "lstm.py", LSTM_SCRIPT)
    plain, remat = out["False"], out["True"]
    assert remat["temp"] < 0.92 * plain["temp"], (remat["temp"], plain["temp"])
    assert not remat["warned"], remat["warned"]
    np.testing.assert_allclose(remat["losses"], plain["losses"], rtol=2e-5, atol=1e-6)


def test_memory_budget_validates():
    cfg = nn.Graph.trace(lambda x: x).config
    for bad in (0, -5, 1.5, True, "1GB"):
        with pytest.raises(ValueError, match="memory_budget"):
            cfg.memory_budget(bad)
    cfg.memory_budget(None)
    assert cfg._memory_budget is None


def test_doctests():
    globs = {"fjax": fjax, "nn": nn, "F": F, "jax": jax, **{k: getattr(ckpt, k) for k in ckpt.__all__}}
    globs["checkpoint"] = checkpoint
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    tests = doctest.DocTestFinder().find(ckpt, "fjax.utils.checkpoint", globs=dict(globs))
    tests += doctest.DocTestFinder().find(fjax.graph.config.GraphConfig.memory_budget, "mb", globs=dict(globs))
    assert sum(len(t.examples) for t in tests) >= 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in tests:
            runner.run(t)
    assert runner.failures == 0, f"{runner.failures} doctest failures"
