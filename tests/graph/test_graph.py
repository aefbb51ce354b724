"""nn.Graph: eager/graph parity, compile cache, stage log, save/load, warmup, AMP, accumulation."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fjax
import fjax.nn as nn
import fjax.optim as optim
from fjax.graph import Graph


class TrainGraph(Graph):
    def __init__(self, model, opt, loss_fn, lr_sch=None):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.add_optimizer(opt, lr_sch=lr_sch)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def mlp():
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Dropout(0.2), nn.Linear(32, 4))


def cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False),  # a bias before BatchNorm only gets rounding noise
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.1),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, 4),
    )


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 16)
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.1, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.layer(self.embed(x)).mean(1))


def _data(kind, rng):
    if kind == "mlp":
        return fjax.tensor(rng.standard_normal((16, 12)), dtype=fjax.float32), fjax.tensor(rng.integers(0, 4, 16))
    if kind == "cnn":
        return fjax.tensor(rng.standard_normal((8, 3, 8, 8)), dtype=fjax.float32), fjax.tensor(rng.integers(0, 4, 8))
    return fjax.tensor(rng.integers(0, 20, (8, 6))), fjax.tensor(rng.integers(0, 4, 8))


MODELS = {"mlp": mlp, "cnn": cnn, "transformer": TinyTransformer}


def _assert_graph_trains_like_eager(run, seed):
    """``run(use_graph)`` returns ``(losses, state_dict)``; the graph's must be eager's."""
    eager_losses, eager_state = run(False)
    graph_losses, graph_state = run(True)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=2e-5, atol=2e-6, err_msg=f"seed={seed}")
    for k in eager_state:
        np.testing.assert_allclose(
            graph_state[k].numpy(), eager_state[k].numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{k} seed={seed}"
        )


@pytest.mark.parametrize("kind", ["mlp", "cnn", "transformer"])
def test_eager_and_graph_train_identically(kind):
    seed = np.random.randint(2**31)
    rng = np.random.default_rng(seed)
    batches = [_data(kind, rng) for _ in range(20)]

    def run(use_graph):
        fjax.manual_seed(seed)
        model = MODELS[kind]()
        if kind == "mlp":
            opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        else:  # Adam would amplify rounding noise in gradients that are 0 in exact arithmetic (key bias)
            opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01)
        # a changing lr: the graph must see new hyper-parameter values on every call
        sch = optim.lr_scheduler.ExponentialLR(opt, gamma=0.9) if kind == "mlp" else None
        loss_fn = nn.CrossEntropyLoss()
        graph = TrainGraph(model, opt, loss_fn, lr_sch=sch) if use_graph else None
        losses = []
        for x, y in batches:
            if use_graph:
                losses.append(graph(x, y).item())
            else:
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                if sch is not None:
                    sch.step()
                losses.append(loss.item())
        return losses, model.state_dict()

    _assert_graph_trains_like_eager(run, seed)


@pytest.mark.parametrize("tensor_lr", [False, True])
def test_optimizer_changes_between_graph_calls_match_eager(tensor_lr):
    """Whatever changes the optimizers between calls reaches the compiled step, as in eager:
    a new lr or betas, a Tensor lr changed in place, random draws outside the graph,
    ``load_state_dict`` (new group dicts, no state), a structural flag (SGD momentum 0 -> 0.9:
    recompiles; and back). With float hyper-parameters the graph reuses what it read while nothing
    changed (``Graph._optimizers_now``): that path is the one taken between the changes."""
    seed = np.random.randint(2**31)
    rng = np.random.default_rng(seed)
    batches = [_data("mlp", rng) for _ in range(12)]

    def change(adam, sgd, step):
        if step == 2:
            adam.param_groups[0]["lr"] = 0.05
        elif step == 4:
            adam.param_groups[0]["betas"] = (0.5, 0.999)
        elif step == 5 and tensor_lr:
            sgd.param_groups[0]["lr"].mul_(0.5)  # the same Tensor, a new value
        elif step == 6:
            fjax.rand(5)  # advances the generator the graph's dropout draws from
        elif step == 8:
            saved = adam.state_dict()
            saved["param_groups"][0]["lr"] = 0.002
            saved["state"] = {}  # resume from a checkpoint without moments
            adam.load_state_dict(saved)
        elif step == 9:
            sgd.param_groups[0]["momentum"] = 0.9
        elif step == 11:
            sgd.param_groups[0]["momentum"] = 0.0  # back to the first executable

    def run(use_graph):
        fjax.manual_seed(seed)
        model = mlp()
        params = list(model.parameters())
        adam = optim.Adam(params[:2], lr=0.01)
        sgd = optim.SGD(params[2:], lr=fjax.tensor(0.1) if tensor_lr else 0.1)
        graph = TrainGraph(model, adam, nn.CrossEntropyLoss()) if use_graph else None
        if graph is not None:
            graph.add_optimizer(sgd)
        losses = []
        for step, (x, y) in enumerate(batches):
            change(adam, sgd, step)
            if use_graph:
                losses.append(graph(x, y).item())
                continue
            loss = nn.CrossEntropyLoss()(model(x), y)
            loss.backward()
            for opt in (adam, sgd):
                opt.step()
                opt.zero_grad()
            losses.append(loss.item())
        return losses, model.state_dict()

    _assert_graph_trains_like_eager(run, seed)


def test_repeated_calls_follow_module_modes_and_config():
    """Repeated calls skip building the signature key (``Graph._repeater``), yet a module switched
    to eval, or a config change, between two calls with the same inputs still takes effect."""

    class Eval(Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    model = nn.Sequential(nn.Linear(12, 32), nn.Dropout(0.5), nn.Linear(32, 4))
    g, x = Eval(model), fjax.randn(16, 12)
    g(x)
    g(x)
    model.eval()
    with fjax.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(g(x).numpy(), expected, rtol=1e-5, atol=1e-6)  # no dropout now
    assert len(g.compile_report()) == 2
    g.config.enable_amp(True, dtype=fjax.bfloat16)
    assert g(x).dtype == fjax.bfloat16
    assert len(g.compile_report()) == 3


def test_gradient_accumulation_matches_eager_micro_batches():
    rng = np.random.default_rng(0)
    x = fjax.tensor(rng.standard_normal((16, 12)), dtype=fjax.float32)
    y = fjax.tensor(rng.integers(0, 4, 16))

    def make():
        fjax.manual_seed(1)
        model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 4))
        return model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    model, opt = make()
    eager = []
    for _ in range(3):
        step_losses = []
        for xs, ys in zip(x.chunk(4), y.chunk(4)):
            loss = nn.functional.cross_entropy(model(xs), ys)
            (loss / 4).backward()
            step_losses.append(loss.item())
        opt.step()
        opt.zero_grad()
        eager.append(step_losses)

    model2, opt2 = make()
    graph = TrainGraph(model2, opt2, nn.CrossEntropyLoss())
    graph.config.set_gradient_accumulation_steps(4)
    out = [graph(x, y) for _ in range(3)]
    assert tuple(out[0].shape) == (4,)
    np.testing.assert_allclose([o.numpy() for o in out], eager, rtol=1e-5, atol=1e-6)
    for p1, p2 in zip(model.parameters(), model2.parameters()):
        np.testing.assert_allclose(p2.detach().numpy(), p1.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_compile_cache_compiles_each_shape_once_and_keeps_the_first():
    model = nn.Linear(4, 2)

    class Eval(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    g = Eval().with_dynamic_input_shape(size=3)
    batches = [1, 2, 3, 4, 5]
    for b in batches:
        out = g(fjax.randn(b, 4))
        assert tuple(out.shape) == (b, 2)
    assert len(g.compile_report()) == 5
    for b in [1, 4, 5]:  # the first is never evicted; 4 and 5 are the most recent
        g(fjax.randn(b, 4))
    assert len(g.compile_report()) == 5
    g(fjax.randn(2, 4))  # evicted earlier: compiles again
    assert len(g.compile_report()) == 6
    x = fjax.randn(3, 4)
    np.testing.assert_allclose(g(x).numpy(), model(x).detach().numpy(), rtol=1e-6, atol=1e-6)
    assert not g.training and g.is_compiled

    g = Eval().with_dynamic_input_shape(size=3)
    g(fjax.randn(1, 4))
    g(fjax.randn(2, 4))
    g.warmup((fjax.randn(3, 4),))
    g(fjax.randn(2, 4))  # a repeat of the last call (its fast path) is now the most recent entry
    g(fjax.randn(4, 4))  # so this evicts 3
    compiles = len(g.compile_report())
    g(fjax.randn(2, 4))
    assert len(g.compile_report()) == compiles
    g(fjax.randn(3, 4))
    assert len(g.compile_report()) == compiles + 1


def test_stage_log_and_report(capsys):
    model = nn.Linear(3, 3)

    class Eval(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x).relu()

    g = Eval()
    g.debug(0)
    g(fjax.randn(2, 3))
    out = capsys.readouterr().out
    for stage in ["trace", "lower to StableHLO", "XLA compile", "first run"]:
        assert f"[GraphCompile] {g.name} {stage}:" in out
    stages = g.compile_report()[0]["stages"]
    assert all(v["seconds"] >= 0 and v["rss_mb"] > 0 for v in stages.values())
    assert "(model): Linear(in_features=3, out_features=3, bias=True)" in repr(g)


def test_graph_attribute_rules_and_interleaving_with_eager():
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    g = TrainGraph(model, opt, nn.MSELoss())
    with pytest.raises(AttributeError, match="add_optimizer"):
        g.opt = opt
    with pytest.raises(AttributeError, match="Tensor"):
        g.t = fjax.ones(2)
    x, y = fjax.randn(8, 3), fjax.randn(8, 1)
    w0 = model.weight.detach().numpy().copy()
    g(x, y)
    assert not np.allclose(model.weight.detach().numpy(), w0), "eager module must see graph updates"
    loss = nn.functional.mse_loss(model(x), y)  # eager step between graph steps
    loss.backward()
    opt.step()
    opt.zero_grad()
    w1 = model.weight.detach().numpy().copy()
    g(x, y)
    assert not np.allclose(model.weight.detach().numpy(), w1)


def test_clip_grad_max_norm_in_param_group_matches_eager():
    x, y = fjax.randn(8, 3), fjax.randn(8, 1)

    def make():
        fjax.manual_seed(3)
        model = nn.Linear(3, 1)
        opt = optim.SGD(
            [{"params": model.parameters(), "clip_grad_max_norm": 0.05, "clip_grad_norm_type": 2.0}], lr=0.5
        )
        return model, opt

    m1, o1 = make()
    for _ in range(3):
        nn.functional.mse_loss(m1(x), y * 10).backward()
        nn.utils.clip_grad_norm_(m1.parameters(), 0.05)
        o1.step()
        o1.zero_grad()
    m2, o2 = make()
    g = TrainGraph(m2, o2, lambda a, b: nn.functional.mse_loss(a, b * 10))
    for _ in range(3):
        g(x, y)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(p2.detach().numpy(), p1.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_amp_bfloat16_keeps_float32_masters_and_tracks_float32_losses():
    x = fjax.randn(32, 12)
    y = fjax.randint(0, 4, (32,))

    def losses(amp):
        fjax.manual_seed(4)
        model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 4))
        g = TrainGraph(model, optim.Adam(model.parameters(), lr=1e-2), nn.CrossEntropyLoss())
        if amp:
            g.config.enable_amp(True, dtype=fjax.bfloat16)
        out = [g(x, y) for _ in range(10)]
        assert all(p.dtype == fjax.float32 for p in model.parameters())
        return out

    low, full = losses(True), losses(False)
    assert low[0].dtype == fjax.bfloat16
    np.testing.assert_allclose([v.float().item() for v in low], [v.item() for v in full], rtol=3e-2, atol=3e-2)
    assert low[-1].float().item() < low[0].float().item()


CHECKPOINT_SCRIPT = textwrap.dedent(
    """
    import json
    import fjax, fjax.nn as nn, fjax.optim as optim
    from fjax.graph import Graph, GraphModule

    class G(Graph):
        def __init__(self, model, checkpoint):
            super().__init__()
            self.model = model
            self.add_optimizer(optim.SGD(model.parameters(), lr=0.01))
            if checkpoint:
                for block in self.model:
                    block.to(GraphModule).activation_checkpointing = True

        def build(self, x, y):
            loss = nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            return loss

    depth, width, batch = 8, 32, 1024  # each block keeps 3 wide activations; checkpointed, only its input
    x, y = fjax.randn(batch, width), fjax.randn(batch, width)
    result = {}
    for checkpoint in (False, True):
        fjax.manual_seed(5)
        model = nn.Sequential(
            *[nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)) for _ in range(depth)]
        )
        g = G(model, checkpoint)
        losses = [g(x, y).item() for _ in range(2)]
        result[str(checkpoint)] = (losses, g.memory_report()["temp_bytes"], g.stablehlo().count("optimization_barrier"))
    print(json.dumps(result))
    """
)


def test_activation_checkpointing_lowers_temporaries_and_keeps_results(tmp_path):
    import json

    flags = "--xla_cpu_enable_concurrency_optimized_scheduler=false"  # see GraphModule's docstring
    script = tmp_path / "checkpoint_script.py"
    script.write_text(CHECKPOINT_SCRIPT)
    env = {**os.environ, "XLA_FLAGS": flags}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    (plain_losses, plain_temp, plain_barriers), (ckpt_losses, ckpt_temp, ckpt_barriers) = (
        result["False"],
        result["True"],
    )
    np.testing.assert_allclose(ckpt_losses, plain_losses, rtol=1e-5)
    assert plain_barriers == 0 and ckpt_barriers == 8
    assert ckpt_temp < 0.75 * plain_temp, (plain_temp, ckpt_temp)


def test_warmup_compiles_signatures_in_threads():
    model = nn.Linear(4, 2)
    g = TrainGraph(model, optim.SGD(model.parameters(), lr=0.1), nn.MSELoss())
    sigs = [(fjax.randn(b, 4), fjax.randn(b, 2)) for b in (2, 3, 5)]
    g.warmup(*sigs, threads=3)
    assert len(g.compile_report()) == 3
    for x, y in sigs:
        g(x, y)
    assert len(g.compile_report()) == 3


SCRIPT = textwrap.dedent(
    """
    import sys, time, json
    import numpy as np
    import fjax, fjax.nn as nn, fjax.optim as optim
    from fjax.graph import Graph, enable_persistent_cache
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "cache":
        enable_persistent_cache(path)
    fjax.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    class G(Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
        def build(self, x, y):
            loss = ((self.model(x) - y) ** 2).mean()
            loss.backward()
            return loss
    g = G()
    x = fjax.tensor(np.linspace(-1, 1, 32 * 16, dtype=np.float32).reshape(32, 16))
    y = fjax.tensor(np.cos(np.arange(32, dtype=np.float32)).reshape(32, 1))
    first = g(x, y).item()
    if mode == "save":
        g.save(path)
        print(json.dumps([g(x, y).item() for _ in range(3)]))
    elif mode == "load":
        lg = Graph.load(path)
        print(json.dumps([lg(x, y).item() for _ in range(3)]))
    else:
        print(json.dumps(g.compile_report()[0]["stages"]["XLA compile"]["seconds"]))
    """
)


def _run(tmp_path, mode, path, code=SCRIPT):
    script = tmp_path / "graph_script.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "FJAX_COMPILATION_CACHE"}
    out = subprocess.run(
        [sys.executable, str(script), mode, str(path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_persistent_cache_makes_second_process_compile_5x_faster(tmp_path):
    import json

    cache = tmp_path / "xla-cache"
    first = json.loads(_run(tmp_path, "cache", cache))
    second = json.loads(_run(tmp_path, "cache", cache))
    assert any(cache.iterdir()), "the cache folder stayed empty"
    assert second * 5 <= first, f"compile took {first:.3f} s, then {second:.3f} s with the cache"


def test_saved_graph_runs_in_a_fresh_process_without_model_code(tmp_path):
    import json

    saved = tmp_path / "saved_graph"
    expected = json.loads(_run(tmp_path, "save", saved))
    loader = "import sys, json, numpy as np, fjax\nfrom fjax.graph import Graph\n" + textwrap.dedent(
        """
        x = fjax.tensor(np.linspace(-1, 1, 32 * 16, dtype=np.float32).reshape(32, 16))
        y = fjax.tensor(np.cos(np.arange(32, dtype=np.float32)).reshape(32, 1))
        lg = Graph.load(sys.argv[2])
        print(json.dumps([lg(x, y).item() for _ in range(3)]))
        """
    )
    got = json.loads(_run(tmp_path, "load", saved, code=loader))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_fjax_debug_env_turns_the_stage_log_on(monkeypatch, capsys):
    monkeypatch.setenv("FJAX_DEBUG", "1")
    model = nn.Linear(2, 2)

    class Eval(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    g = Eval()
    g(fjax.randn(1, 2))
    assert f"[GraphCompile] {g.name} XLA compile:" in capsys.readouterr().out
