"""The eager runtime: Python numbers are kernel arguments (a loop over 1,000 values compiles a
constant number of kernels), the kernel cache is a bounded LRU, and fjax.profiler reports ops,
compiles and user ranges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import fjax
import fjax.nn.functional as F
from fjax import dispatch

N = 1000


def _x(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# Each pattern: (fjax function of (x, i), torch function of (t, i)); i runs over N distinct values.
PATTERNS = {
    "x[i]": (lambda x, i: x[i % 64], lambda t, i: t[i % 64]),
    "x[i, j]": (lambda x, i: x[i % 64, i % 7], lambda t, i: t[i % 64, i % 7]),
    "x[i:i+5]": (lambda x, i: x[i % 60 : i % 60 + 5], lambda t, i: t[i % 60 : i % 60 + 5]),
    "x[:, i:i+3:2]": (lambda x, i: x[:, i % 13 : i % 13 + 3 : 2], lambda t, i: t[:, i % 13 : i % 13 + 3 : 2]),
    "narrow": (lambda x, i: x.narrow(0, i % 60, 4), lambda t, i: t.narrow(0, i % 60, 4)),
    "select": (lambda x, i: x.select(1, i % 16), lambda t, i: t.select(1, i % 16)),
    "roll": (lambda x, i: fjax.roll(x, i - 500, 0), lambda t, i: torch.roll(t, i - 500, 0)),
    "roll 2 dims": (lambda x, i: x.roll((i, -i), (0, 1)), lambda t, i: t.roll((i, -i), (0, 1))),
    "x * lr": (lambda x, i: x * (1e-3 * i), lambda t, i: t * (1e-3 * i)),
    "x + 1e-3 * step": (lambda x, i: x + 1e-3 * i, lambda t, i: t + 1e-3 * i),
    "i - x": (lambda x, i: i - x, lambda t, i: i - t),
    "x ** p": (lambda x, i: x.abs() ** (1 + i / N), lambda t, i: t.abs() ** (1 + i / N)),
    "clamp": (lambda x, i: x.clamp(-i / N, i / N), lambda t, i: t.clamp(-i / N, i / N)),
    "clip max": (lambda x, i: fjax.clip(x, max=i / N), lambda t, i: torch.clip(t, max=i / N)),
    "pad value": (
        lambda x, i: F.pad(x, (1, 2), value=i / 7),
        lambda t, i: torch.nn.functional.pad(t, (1, 2), value=i / 7),
    ),
    "fill_": (lambda x, i: x.clone().fill_(i / 3), lambda t, i: t.clone().fill_(i / 3)),
    "masked_fill": (lambda x, i: x.masked_fill(x > 0, i), lambda t, i: t.masked_fill(t > 0, i)),
    "add alpha": (lambda x, i: x.add(x, alpha=i / 9), lambda t, i: t.add(t, alpha=i / 9)),
    "sub_ alpha": (lambda x, i: x.clone().sub_(x, alpha=i / 9), lambda t, i: t.clone().sub_(t, alpha=i / 9)),
    "addmm beta alpha": (
        lambda x, i: fjax.addmm(x[:16], x[:16], x[:16], beta=i / N, alpha=2 - i / N),
        lambda t, i: torch.addmm(t[:16], t[:16], t[:16], beta=i / N, alpha=2 - i / N),
    ),
    "x[i] = v": (lambda x, i: _setitem(x.clone(), i % 64, i / 5), lambda t, i: _setitem(t.clone(), i % 64, i / 5)),
    "x[i:i+2, 1] = v": (
        lambda x, i: _setitem(x.clone(), (slice(i % 60, i % 60 + 2), 1), -i),
        lambda t, i: _setitem(t.clone(), (slice(i % 60, i % 60 + 2), 1), -i),
    ),
    "leaky_relu slope": (lambda x, i: F.leaky_relu(x, i / N), lambda t, i: torch.nn.functional.leaky_relu(t, i / N)),
    "hardtanh": (
        lambda x, i: F.hardtanh(x, -i / N, i / N + 1),
        lambda t, i: torch.nn.functional.hardtanh(t, -i / N, i / N + 1),
    ),
    "lerp weight": (lambda x, i: fjax.lerp(x, x * 2, i / N), lambda t, i: torch.lerp(t, t * 2, i / N)),
}


def _setitem(x, key, value):
    x[key] = value
    return x


@pytest.mark.parametrize("name", list(PATTERNS))
def test_a_loop_over_distinct_values_compiles_a_constant_number_of_kernels(name):
    f, g = PATTERNS[name]
    a = _x(64, 16)
    x, t = fjax.tensor(a), torch.tensor(a)
    for i in (1, 2, 3):  # warm: every kernel the pattern needs, for small and large values
        f(x, i), f(x, N - i)
    fjax.sync()  # (under eager fusion the warm-up's ops run here)
    before = fjax.profiler.compile_count()
    checks = set(np.random.default_rng(len(name)).integers(0, N, 5).tolist())
    for i in range(N):
        y = f(x, i)
        if i in checks:
            np.testing.assert_allclose(y.numpy(), g(t, i).numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{name}, i={i}")
    # eager fusion may compile the loop's recorded segment once (a fused program), never per value
    fused = 2 if fjax.config.eager_fusion else 0
    assert fjax.profiler.compile_count() - before <= fused, f"{name}: compiled per value"


def test_dropout_p_schedule_compiles_once_and_keeps_torch_statistics():
    x = fjax.ones(200, 200)
    fjax.sync()  # (nothing recorded before joins the warm-up's segment)
    for _ in range(2):  # (under eager fusion: a first sight op by op, then the program of key and mask)
        F.dropout(x, p=0.3).numpy()
    before = fjax.profiler.compile_count()
    for i in range(50):
        p = 0.1 + 0.8 * i / 50
        y = F.dropout(x, p=p).numpy()
        kept = y != 0
        np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=1e-6, atol=1e-6)
        sigma = np.sqrt(p * (1 - p) / y.size)
        assert abs((~kept).mean() - p) < 6 * sigma, (p, (~kept).mean())
    assert fjax.profiler.compile_count() == before
    assert (F.dropout(x, p=1.0).numpy() == 0).all()


def test_python_scalars_keep_torch_type_promotion():
    h = fjax.tensor(_x(4, 3, dtype=np.float16))
    i = fjax.tensor(np.arange(12, dtype=np.int32).reshape(4, 3))
    th, ti = torch.tensor(h.numpy()), torch.tensor(i.numpy())
    for k in range(3):
        s = 0.1 + k
        assert (h * s).dtype == fjax.float16 and (th * s).dtype == torch.float16
        # torch rounds the product of a half and a Python float once (in float32); fjax rounds
        # the scalar to half first: at most one half ulp apart (a known gap)
        np.testing.assert_allclose((h * s).numpy(), (th * s).numpy(), rtol=1e-3)
        assert (i * k).dtype == fjax.int32 and (i + s).dtype == fjax.float32
        np.testing.assert_allclose((i + s).numpy(), (ti + s).numpy())
        assert (i.add(i, alpha=k)).dtype == fjax.int32
    with pytest.raises(TypeError, match="alpha"):
        i.add(i, alpha=0.5)


def test_out_of_range_python_indices_raise_index_error_in_a_loop():
    x = fjax.arange(12.0).reshape(4, 3)
    for i in range(4):
        x[i], x[-i - 1], x.select(0, i)
    for bad in (4, 5, -5, 100):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension 0 with size 4"):
            x[bad]
        with pytest.raises(IndexError, match="out of range"):
            x.select(0, bad)
        with pytest.raises(IndexError):
            x[bad] = 1.0
    # slices clamp as torch's do
    t = torch.arange(12.0).reshape(4, 3)
    for lo, hi in [(2, 9), (-9, 2), (5, 7), (3, 1)]:
        np.testing.assert_array_equal(x[lo:hi].numpy(), t[lo:hi].numpy())
    with pytest.raises(RuntimeError, match="exceeds"):
        x.narrow(0, 3, 2)


def test_setitem_is_a_write_through_view_with_torch_aliasing():
    a = _x(6, 4)
    x, t = fjax.tensor(a), torch.tensor(a)
    xv, tv = x[1:4], t[1:4]
    for i in range(3):
        x[i + 1, 1:] = float(i)
        t[i + 1, 1:] = float(i)
    np.testing.assert_array_equal(xv.numpy(), tv.numpy())
    w = fjax.tensor(_x(4), requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    y, ty = fjax.zeros(3, 4), torch.zeros(3, 4)
    y[1] = w * 2
    ty[1] = tw * 2
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- the kernel cache


@pytest.fixture
def small_cache():
    old = fjax.config.eager_cache_size
    fjax.config.eager_cache_size = 8
    yield
    fjax.config.eager_cache_size = old


def test_kernel_cache_is_a_bounded_lru(small_cache, monkeypatch):
    monkeypatch.setattr(fjax.config, "bucketing", False)  # every size its own kernel: the LRU's work
    hot = fjax.tensor(_x(3, 3))
    (hot * 2).tanh()
    xs = [fjax.tensor(_x(n)) for n in range(1, 30)]
    for k, x in enumerate(xs):
        (x * 2).tanh()
        assert dispatch.kernel_cache_size() <= 8
        if k % 2:  # used again within the capacity: never evicted
            before = fjax.profiler.compile_count()
            (hot * 2).tanh()
            assert fjax.profiler.compile_count() == before, f"hot kernel evicted after {k} new shapes"
    before = fjax.profiler.compile_count()
    (xs[0] * 2).tanh()  # long evicted: compiles again
    fjax.sync()  # (eager fusion recorded it: run it)
    assert fjax.profiler.compile_count() > before
    with pytest.raises(ValueError, match="eager_cache_size"):
        fjax.config.eager_cache_size = 0


def test_memory_stays_flat_across_distinct_shapes():
    code = textwrap.dedent(
        """
        import gc, resource, numpy as np, fjax
        fjax.config.eager_cache_size = 16
        def rss():
            gc.collect()
            return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
        xs = [fjax.tensor(np.ones(n, np.float32)) for n in range(1, 150)]
        marks = []
        for n, x in enumerate(xs):
            x.tanh()
            if n in (50, 145):
                marks.append(rss())
        print(marks[1] - marks[0])
        """
    )
    env = dict(os.environ, FJAX_COMPILATION_CACHE="0")  # every shape compiles; none is written to disk
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    growth = float(out.stdout.split()[-1])
    # unbounded, 95 kernels hold ~95-250 MB here; bounded, the RSS moves by allocator noise
    assert growth < 60, f"RSS grew {growth:.0f} MB over 95 new shapes with a 16-kernel cache"


def test_cache_size_from_the_environment():
    code = "import fjax; print(fjax.config.eager_cache_size)"
    env = dict(os.environ, FJAX_EAGER_CACHE_SIZE="77")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.split()[-1] == "77", out.stderr[-2000:]
    env["FJAX_EAGER_CACHE_SIZE"] = "lots"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode != 0 and "FJAX_EAGER_CACHE_SIZE='lots' is not an integer" in out.stderr


# ----------------------------------------------------------------------------- the profiler


class _Net(fjax.nn.Graph):
    def __init__(self):
        super().__init__()
        self.lin = fjax.nn.Linear(5, 3)

    def build(self, x):
        return self.lin(x).relu().sum()


def test_profiler_table_counts_calls_compiles_and_user_ranges(tmp_path):
    x = fjax.tensor(_x(5, 5), requires_grad=True)
    graph = _Net()
    shape = (7, 9 + int.from_bytes(os.urandom(2), "little") % 1000)  # never compiled before
    fresh = fjax.ones(*shape)
    with fjax.profiler.profile(record_shapes=True) as prof:
        with fjax.profiler.record_function("train_step"):
            for i in range(4):
                y = (x @ x).tanh()[i].sum() * i
                y.backward()
        graph(fjax.ones(2, 5))
        fresh.exp()
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["matmul"].count == 4 and rows["tanh"].count == 4 and rows["getitem"].count == 4
    assert rows["train_step"].count == 1
    assert rows["train_step"].cpu_time_total >= sum(rows[k].cpu_time_total for k in ("matmul", "tanh", "getitem"))
    assert rows["train_step"].self_cpu_time_total < rows["train_step"].cpu_time_total
    assert rows["exp"].compile_count == 1 and rows["exp"].compile_time_total > 0
    assert rows["matmulBackward"].count == 4
    assert any(k.startswith("nn.Graph") for k in rows)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    lines = table.splitlines()
    assert "# Compiles" in lines[1] and "# of Calls" in lines[1] and "Self CPU %" in lines[1]
    assert len(lines) == 3 + 3 + 2  # rules and header, 3 rows, rule and total
    shown = [line.split()[0] for line in lines[3:6]]
    # among the largest totals (not always first: the nn.Graph's first call compiles, which on a
    # loaded machine can take longer than the four eager steps)
    assert "train_step" in shown or any(k.startswith("nn.Graph") for k in shown[:1]), shown
    by_shape = prof.key_averages(group_by_input_shape=True).table(sort_by="count")
    assert "Input Shapes" in by_shape and f"[[{shape[0]}, {shape[1]}]]" in by_shape
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="nope")

    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 and "ts" in e for e in events)
    names = [e["name"] for e in events]
    assert names.count("matmul") == 4 and "train_step" in names and "matmulBackward" in names
    compiles = [e for e in events if e["cat"] == "compile"]
    assert {"trace exp", "lower exp", "compile exp"} <= {e["name"] for e in compiles}
    exp_compile = next(e for e in compiles if e["name"] == "compile exp")
    exp_call = next(e for e in events if e["name"] == "exp" and e["cat"] == "op")
    assert exp_call["ts"] - 1e3 <= exp_compile["ts"] <= exp_call["ts"] + exp_call["dur"] + 1e3  # nested in time
    assert exp_call["args"]["compiles"] == 1 and exp_call["args"]["Input Dims"] == [list(shape)]
    step = next(e for e in events if e["name"] == "train_step")
    inside = [e for e in events if e["name"] == "matmul"]
    assert all(step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1 for e in inside)
    assert any(e["cat"] == "graph" for e in events)


def test_profiler_off_records_nothing_and_bad_use_is_clear(tmp_path):
    with fjax.profiler.profile() as prof:
        pass
    fjax.ones(3) + 1  # after the profile: not recorded
    assert prof.events() == []
    with pytest.raises(OSError, match="export_chrome_trace: cannot write"):
        prof.export_chrome_trace(tmp_path / "missing" / "dir" / "trace.json")
    with pytest.raises(NotImplementedError, match="with_stack"):
        fjax.profiler.profile(with_stack=True)
    with fjax.profiler.profile():
        with pytest.raises(RuntimeError, match="already recording"):
            fjax.profiler.profile().start()

    @fjax.profiler.record_function("decorated")
    def f(x):
        return x * 3

    with fjax.profiler.profile() as prof:
        f(fjax.ones(2))
    assert [e.key for e in prof.key_averages()] == ["mul", "decorated"]


def test_log_compiles_names_the_op_its_inputs_and_why(tmp_path):
    code = textwrap.dedent(
        """
        import numpy as np, fjax
        x = fjax.tensor(np.ones((3, 4), np.float32))
        for n in (4, 5):
            y = fjax.tensor(np.ones((3, n), np.float32)).cos()
        print("---")
        y = x.cos()
        y = x.sum(0)
        y = x.sum(1)
        """
    )
    env = dict(os.environ, FJAX_LOG_COMPILES="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stderr.splitlines() if line.startswith("fjax: compiled")]
    cos = [line for line in lines if "compiled cos(" in line]
    assert "cos(float32[3, 4]) in" in cos[0] and "first call of this op" in cos[0]
    assert (
        "cos(float32[3, 5])" in cos[1]
        and "new input shapes/dtypes: input 0: float32[3, 5] (was float32[3, 4])" in cos[1]
    )
    sums = [line for line in lines if "compiled sum(" in line]
    assert "first call of this op" in sums[0] and "new static arguments" in sums[1]
    assert len(cos) == 2  # x.cos() at a seen shape compiled nothing


def test_a_10000_step_loop_with_changing_shapes_keeps_rss_bounded():
    code = textwrap.dedent(
        """
        import gc, numpy as np, fjax
        from fjax import nn
        def rss():
            gc.collect()
            return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        opt = fjax.optim.SGD(model.parameters(), lr=1e-3)
        batches = [fjax.tensor(np.ones((b, 8), np.float32)) for b in range(1, 9)]
        marks = {}
        for step in range(10_000):
            x = batches[step % len(batches)]  # the batch size changes every step
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step in (2_000, 9_999):
                marks[step] = rss()
        print(marks[9_999] - marks[2_000], float(loss))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    growth, loss = (float(v) for v in out.stdout.split()[-2:])
    assert np.isfinite(loss)
    assert growth < 40, f"RSS grew {growth:.0f} MB over 8,000 steps"


def test_static_arguments_are_keyed_by_type_too():
    """``True == 1``: std's ``unbiased`` overload must not reuse the kernel cached for ``dim=1``."""
    x = np.random.default_rng(0).standard_normal((5, 5)).astype(np.float32)
    ours, theirs = fjax.tensor(x), torch.tensor(x)
    for args in ((1,), (True,), (1,), (False,), (0,)):
        np.testing.assert_allclose(ours.std(*args).numpy(), theirs.std(*args).numpy(), rtol=1e-5)


# -- library code as one kernel (dispatch.kernel_of) -----------------------------------------
def test_kernel_of_is_one_differentiable_op_per_call_pattern():
    from fjax.dispatch import kernel_of

    def affine(x, w, b, scale):
        return (x @ w + b) * scale, None

    fused = kernel_of("affine", affine)
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 2), (2,)))
    fx, fw, fb = (fjax.tensor(a, requires_grad=True) for a in (x, w, b))
    with fjax.profiler.profile() as prof:
        out, none = fused(fx, fw, fb, 0.5)
        out.sum().backward()
    names = [e.key for e in prof.key_averages()]
    assert none is None and "affine" in names and "matmul" not in names, names
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ((tx @ tw + tb) * 0.5).sum().backward()
    for f, t in ((out, (tx @ tw + tb) * 0.5), (fx.grad, tx.grad), (fw.grad, tw.grad), (fb.grad, tb.grad)):
        np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    # another plain value is another pattern (its own kernel); a bad shape raises fn's own error
    np.testing.assert_allclose(fused(fx, fw, fb, 2.0)[0].detach().numpy(), ((x @ w + b) * 2.0), rtol=1e-5)
    with pytest.raises(Exception, match="matmul"):
        fused(fx, fjax.ones(3, 2), fb, 0.5)


def test_kernel_of_runs_a_function_reading_the_host_as_written():
    from fjax.dispatch import kernel_of

    calls = []

    def branchy(x):
        calls.append(1)
        return x * 2 if float(x.sum()) > 0 else -x

    fused = kernel_of("branchy", branchy)
    assert fused(fjax.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert fused(fjax.tensor([-1.0, -2.0])).tolist() == [1.0, 2.0]  # not the first call's branch


def test_functional_multi_head_attention_is_one_op_without_dropout():
    q = fjax.randn(3, 2, 8)
    w_in, w_out = fjax.randn(24, 8) * 0.3, fjax.randn(8, 8) * 0.3
    args = (q, q, q, 8, 2, w_in, None, None, None, False)
    with fjax.profiler.profile() as prof:
        F.multi_head_attention_forward(*args, 0.0, w_out, None)
    names = [e.key for e in prof.key_averages()]
    assert names == ["multi_head_attention_forward"], names
    # with dropout in training each call draws its own mask (op by op): two calls differ
    fjax.manual_seed(0)
    a = F.multi_head_attention_forward(*args, 0.5, w_out, None)[1]
    b = F.multi_head_attention_forward(*args, 0.5, w_out, None)[1]
    assert not np.allclose(a.numpy(), b.numpy())
