"""``fjax.compile`` (torch.compile): a function, a decorator and a module compiled to one program
whose backward is one tape node, compared with torch eager on fresh random inputs; graph breaks
warn once and match eager, or raise naming the line with ``fullgraph=True``; a torch training
script calling ``torch.compile`` runs under mock_torch with torch's losses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import fjax
import fjax.mock_torch as mock_torch
from fjax import nn


def _net(lib, w):
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.BatchNorm1d(8), lib.nn.Tanh(), lib.nn.Linear(8, 3))
    with lib.no_grad():
        for p, a in zip(m.parameters(), w):
            p.copy_(lib.tensor(a))
    return m


def _weights(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((8, 4), (8,), (8,), (8,), (3, 8), (3,))]


def test_compiled_module_trains_as_torch_eager():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    w, rng = _weights(seed), np.random.default_rng(seed + 1)
    fm, tm = _net(fjax, w), _net(torch, w)
    fast = fjax.compile(fm)
    assert fast._orig_mod is fm and list(fast.state_dict())[0] == "_orig_mod.0.weight"
    fo, to = (
        fjax.optim.SGD(fast.parameters(), lr=0.1, momentum=0.9),
        torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9),
    )
    for _ in range(5):
        x = rng.standard_normal((6, 4)).astype(np.float32)
        y = rng.integers(0, 3, 6)
        fl = nn.functional.cross_entropy(fast(fjax.tensor(x)), fjax.tensor(y))
        tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
        fo.zero_grad(), to.zero_grad()
        fl.backward(), tl.backward()
        fo.step(), to.step()
        np.testing.assert_allclose(float(fl), float(tl), rtol=1e-5)
    for (name, p), q in zip(fm.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    for key in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):  # written back from the program
        np.testing.assert_allclose(fm.state_dict()[key].numpy(), tm.state_dict()[key].numpy(), rtol=1e-5, atol=1e-6)
    fast.eval()
    x = rng.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(
        fast(fjax.tensor(x)).numpy(), tm.eval()(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )


def test_compiled_function_and_decorator_match_eager_with_gradients():
    rng = np.random.default_rng(int(np.random.SeedSequence().entropy % 2**31))
    a, b = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((5,)).astype(np.float32)

    def f(x, y, *, scale=2.0):
        return {"out": (x * y).sin().sum(1) * scale, "n": x.shape[0]}

    g = fjax.compile(f)
    h = fjax.compile(fullgraph=True)(f)  # the decorator form with arguments
    fx, fy = fjax.tensor(a, requires_grad=True), fjax.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    for compiled in (g, h):
        out = compiled(fx, fy, scale=3.0)
        assert out["n"] == 3
        want = (tx * ty).sin().sum(1) * 3.0
        np.testing.assert_allclose(out["out"].numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
        gx, gy = fjax.autograd.grad(out["out"].sum(), (fx, fy))
        tgx, tgy = torch.autograd.grad(want.sum(), (tx, ty))
        np.testing.assert_allclose(gx.numpy(), tgx.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gy.numpy(), tgy.numpy(), rtol=1e-5, atol=1e-6)


def test_no_compiles_after_warm_up():
    net = fjax.compile(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1)))
    opt = fjax.optim.Adam(net.parameters())
    for step in range(6):
        if step == 4:  # (eager fusion compiles a repeated step's segment on its second sight)
            before = fjax.profiler.compile_count()
        loss = net(fjax.randn(3, 4)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert fjax.profiler.compile_count() == before


def test_a_user_defined_module_is_traced_once_and_hooks_retrace(monkeypatch):
    """A module class of the user's (every real model) reuses its traced program on later calls
    (its guards hold); a backward hook registered later runs, as in torch (the call then runs
    uncompiled)."""
    from fjax._transforms import program

    traces = []
    real_trace = program.trace
    monkeypatch.setattr(program, "trace", lambda *a, **k: traces.append(1) or real_trace(*a, **k))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x).tanh()

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x).tanh()

    fm, tm = Net(), TNet()
    fm.load_state_dict({k: fjax.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    fast = fjax.compile(fm)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    for _ in range(3):
        out = fast(fjax.tensor(x))
    assert len(traces) == 1
    np.testing.assert_allclose(out.numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-6, atol=1e-6)
    seen = []
    fm.register_full_backward_hook(lambda mod, gin, gout: seen.append(tuple(gout[0].shape)))
    tm.register_full_backward_hook(lambda mod, gin, gout: seen.append(tuple(gout[0].shape)))
    fx = fjax.tensor(x, requires_grad=True)
    fast(fx).sum().backward()
    tm(torch.tensor(x, requires_grad=True)).sum().backward()
    assert seen == [(2, 3), (2, 3)]


def test_train_every_step_does_not_retrace_but_a_mode_change_does(monkeypatch):
    """``model.train()`` at the top of every step (as most training loops write it) changes
    nothing, so the compiled program is reused; ``eval()`` is a change: a new trace, eval's
    numbers."""
    from fjax._transforms import program

    traces = []
    real_trace = program.trace
    monkeypatch.setattr(program, "trace", lambda *a, **k: traces.append(1) or real_trace(*a, **k))
    w = _weights(3)
    fm, tm = _net(fjax, w), _net(torch, w)
    fast = fjax.compile(fm)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    for _ in range(4):
        fast.train()
        tm.train()
        out = fast(fjax.tensor(x))
        want = tm(torch.tensor(x))
    assert len(traces) == 1
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    fast.eval()
    tm.eval()
    np.testing.assert_allclose(
        fast(fjax.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )
    assert len(traces) == 2


def test_a_compiled_module_that_draws_random_numbers_trains():
    """Dropout (and any random draw) inside a compiled module: its parameters still get their
    gradients (they were dropped from the tape), each call draws a new mask, and the gradient is
    the one of the mask the forward used."""
    lin = nn.Linear(6, 5)
    fast = fjax.compile(nn.Sequential(lin, nn.Dropout(0.5)))
    x = fjax.tensor(np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32))
    masks = []
    for _ in range(3):
        lin.zero_grad()
        out = fast(x)
        assert out.requires_grad
        out.sum().backward()
        kept = (out != 0).float()  # where the mask kept the unit (scaled by 2)
        want = (kept * 2).sum(0)  # d(sum)/d(bias)
        np.testing.assert_allclose(lin.bias.grad.numpy(), want.numpy(), rtol=1e-6)
        np.testing.assert_allclose(lin.weight.grad.numpy(), ((kept * 2).t() @ x).numpy(), rtol=1e-5, atol=1e-6)
        masks.append(kept.numpy())
    assert not all(np.array_equal(masks[0], m) for m in masks[1:]), "every call drew the same mask"


def test_a_compiled_module_that_draws_random_numbers_is_traced_once(monkeypatch):
    """The keys a compiled function draws while traced are constants drawn afresh on each call,
    in the same order: Dropout inside ``fjax.compile`` traces once, and after the same seed gives
    eager's masks call by call and leaves the random stream where eager leaves it."""
    from fjax._transforms import program

    traces = []
    real = program.trace_arrays
    monkeypatch.setattr(program, "trace_arrays", lambda *a, **k: traces.append(1) or real(*a, **k))
    m = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 4), nn.Dropout(0.2))
    x = fjax.tensor(np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32))
    fjax.manual_seed(3)
    eager = [m(x).detach().numpy() for _ in range(4)]
    after_eager = fjax.rand(3).numpy()
    fast = fjax.compile(m)
    fjax.manual_seed(3)
    compiled = [fast(x).detach().numpy() for _ in range(4)]
    after_compiled = fjax.rand(3).numpy()
    assert len(traces) == 1
    for e, c in zip(eager, compiled):
        np.testing.assert_array_equal(e, c)
    assert not np.array_equal(compiled[0], compiled[1])
    np.testing.assert_array_equal(after_eager, after_compiled)


def test_graph_break_warns_once_and_matches_eager():
    calls = []

    def f(x):
        calls.append(1)
        if x.sum() > 0:  # a host read: a graph break
            return x * 2
        return x - 1

    g = fjax.compile(f)
    x = fjax.tensor([1.0, 2.0])
    with pytest.warns(UserWarning, match=r"graph break at .*test_compile.py:\d+ \(if x.sum\(\) > 0:"):
        assert fjax.equal(g(x), x * 2)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="fjax.compile")  # once only
        assert fjax.equal(g(-x), -x - 1)
    with pytest.raises(fjax.compiler.GraphBreak, match=r"fullgraph=True.*test_compile.py:\d+ \(if x.sum\(\) > 0:"):
        fjax.compile(f, fullgraph=True)(x)


def test_options_are_checked_as_torch_does():
    f = lambda x: x + 1  # noqa: E731
    assert fjax.compile(f, disable=True) is f and fjax.compile(f, backend="eager") is f
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        fjax.compile(f, backend="nope")
    with pytest.raises(RuntimeError, match="mode"):
        fjax.compile(f, mode="fastest")
    with pytest.raises(NotImplementedError, match="callable backend"):
        fjax.compile(f, backend=lambda gm, ex: gm)
    fjax.compiler.reset()
    assert not fjax.compiler.is_compiling()


_SCRIPT = """
import numpy as np
import torch
import torch._dynamo
from torch import nn

torch._dynamo.config.suppress_errors = True


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=31, d=16, heads=2, layers=2, block=8):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        for b in self.blocks:
            x = b(x, mask)
        logits = self.head(x)
        return nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main(steps=4, seed=0):
    rng = np.random.default_rng(seed)
    model = GPT()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.1))
    model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        idx = torch.tensor(rng.integers(0, 31, (2, 8)))
        loss = model(idx, torch.roll(idx, -1, 1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses
"""


def test_gpt_script_calling_torch_compile_runs_under_mock_torch(tmp_path, monkeypatch):
    path = tmp_path / "train_gpt.py"
    path.write_text(_SCRIPT)
    monkeypatch.setattr(torch, "compile", lambda m, **kw: m)  # the oracle: torch eager, same numbers
    namespace: dict = {}
    exec(compile(_SCRIPT, str(path), "exec"), namespace)  # noqa: S102
    want = namespace["main"]()
    with mock_torch.enable():
        fj: dict = {}
        exec(compile(_SCRIPT, str(path), "exec"), fj)  # noqa: S102
        assert fj["torch"] is fjax
        got = fj["main"]()
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[0] != want[-1]


def test_recompile_limit_falls_back_to_eager_or_raises():
    def f(x):
        return x * 2

    g = fjax.compile(f, recompile_limit=2, name="double")
    g(fjax.ones(1)), g(fjax.ones(2)), g(fjax.ones(2))  # two signatures: compiled
    with pytest.warns(UserWarning, match=r"fjax.compile\(double\): recompile_limit \(2\)"):
        assert fjax.equal(g(fjax.ones(3)), fjax.full((3,), 2.0))
    h = fjax.compile(f, recompile_limit=1, fullgraph=True)
    h(fjax.ones(1))
    with pytest.raises(fjax.compiler.FailOnRecompileLimitHit):
        h(fjax.ones(2))
    with pytest.raises(NotImplementedError, match="shapes_spec"):
        fjax.compile(f, shapes_spec={"x": (None,)})


def test_module_compile_in_place_trains_as_torch_eager_and_keeps_its_keys(monkeypatch):
    seed = int(np.random.SeedSequence().entropy % 2**31)
    w, rng = _weights(seed), np.random.default_rng(seed + 1)
    fm, tm = _net(fjax, w), _net(torch, w)
    keys = list(fm.state_dict())
    traced = []
    real_forward = fm.forward
    monkeypatch.setattr(fm, "forward", lambda *a: traced.append(1) or real_forward(*a))
    assert fm.compile() is None and list(fm.state_dict()) == keys  # the module itself, its own keys
    fo, to = fjax.optim.SGD(fm.parameters(), lr=0.1), torch.optim.SGD(tm.parameters(), lr=0.1)
    for _ in range(4):
        x, y = rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 3, 6)
        fl = nn.functional.cross_entropy(fm(fjax.tensor(x)), fjax.tensor(y))
        tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
        fo.zero_grad(), to.zero_grad()
        fl.backward(), tl.backward()
        fo.step(), to.step()
        np.testing.assert_allclose(float(fl), float(tl), rtol=1e-5, err_msg=f"seed={seed}")
    assert len(traced) == 1  # traced once, then the compiled program ran
    np.testing.assert_allclose(
        fm.state_dict()["1.running_mean"].numpy(), tm.state_dict()["1.running_mean"].numpy(), rtol=1e-5, atol=1e-6
    )


def test_module_compile_breaks_and_options_as_fjax_compile():
    class Reads(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # a host read
                return x * 2
            return x

    m = Reads()
    m.compile(fullgraph=True)
    with pytest.raises(fjax.compiler.GraphBreak, match="fullgraph=True"):
        m(fjax.ones(2))
    m2 = Reads()
    m2.compile()
    with pytest.warns(UserWarning, match="graph break"):
        assert m2(fjax.ones(2)).tolist() == [2.0, 2.0]
    m3 = nn.Linear(2, 2)
    m3.compile(disable=True)
    assert "_graph_call" not in m3.__dict__
    with pytest.raises(ValueError, match="unknown backend"):
        nn.Linear(2, 2).compile(backend="nope")
    assert m3.share_memory() is m3


def test_a_compiled_module_inside_nn_graph_keeps_its_compiled_call():
    net = nn.Linear(3, 2)
    net.compile()
    hook = net.__dict__["_graph_call"]

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.net = net

        def build(self, x):
            return self.net(x)

    x = fjax.randn(4, 3)
    np.testing.assert_allclose(G()(x).numpy(), net(x).numpy(), rtol=1e-6, atol=1e-6)
    assert net.__dict__["_graph_call"] is hook


@pytest.mark.parametrize("in_place", [True, False])
def test_a_copied_compiled_module_runs_its_own_parameters(in_place):
    """``copy.deepcopy`` (``AveragedModel``'s copy of a compiled model) gives a module whose
    compiled calls read the copy's parameters, not the original's."""
    import copy

    net = nn.Linear(3, 2)
    if in_place:
        net.compile()
    else:
        net = fjax.compile(net)
    x = fjax.randn(4, 3)
    before = net(x)
    twin = copy.deepcopy(net)
    with fjax.no_grad():
        twin.weight.mul_(2.0)
    np.testing.assert_allclose(twin(x).numpy(), (x @ twin.weight.T + twin.bias).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(net(x).numpy(), before.numpy(), rtol=0, atol=0)
    ema = fjax.optim.swa_utils.AveragedModel(net, multi_avg_fn=fjax.optim.swa_utils.get_ema_multi_avg_fn(0.9))
    ema.update_parameters(net)
    np.testing.assert_allclose(ema(x).numpy(), before.numpy(), rtol=1e-6, atol=1e-6)
