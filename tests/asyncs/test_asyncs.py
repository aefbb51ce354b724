"""fjax.asyncs: ordering per worker, independence, deferred checks, thread limit, bounded memory."""

from __future__ import annotations

import gc
import io
import subprocess
import sys
import textwrap
import threading
import tracemalloc

import jax
import numpy as np
import pytest

import fjax
import fjax.asyncs as asyncs
import fjax.nn as nn
from fjax.asyncs import _worker
from fjax.graph import Graph


@pytest.fixture
def seed():
    return int(np.random.randint(2**31))


@pytest.fixture(autouse=True)
def _drain():
    """Leave no deferred error for the next test."""
    yield
    try:
        asyncs.wait()
    except Exception:  # noqa: BLE001 - a test that left one already asserted what it needed
        pass


def test_print_runs_in_submission_order(seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((50, 3)).astype(np.float32)
    out = io.StringIO()
    t = asyncs.Thread()
    with asyncs.thread(t):
        for i, v in enumerate(values):
            x = fjax.tensor(v)
            asyncs.print("step", i, (x * 2).sum(), x, file=out)
    asyncs.wait()
    lines = out.getvalue().splitlines()
    expected = [f"step {i} {(v * 2).sum(dtype=np.float32).item()} {v}" for i, v in enumerate(values)]
    assert lines == expected, f"seed={seed}"


def test_log_gets_numpy_values_in_order(seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((40, 2, 3))
    got = []
    for i, v in enumerate(values):
        asyncs.log(lambda step, a, b: got.append((step, a, b)), i, fjax.tensor(v).exp(), "tag")
    asyncs.wait()
    assert [g[0] for g in got] == list(range(len(values)))
    for (_, a, b), v in zip(got, values):
        assert isinstance(a, np.ndarray) and a.dtype == np.float64 and b == "tag"
        np.testing.assert_allclose(a, np.exp(v), rtol=1e-12, err_msg=f"seed={seed}")


def test_workers_are_independent():
    slow, fast = asyncs.Thread(name="slow"), asyncs.Thread(name="fast")
    release = threading.Event()
    order = []
    with asyncs.thread(slow):
        asyncs.log(lambda: release.wait(10))
        asyncs.log(lambda x: order.append(("slow", float(x))), fjax.tensor(1.0))
    with asyncs.thread(fast):
        for i in range(5):
            asyncs.log(lambda x: order.append(("fast", float(x))), fjax.tensor(float(i)))
    fast.wait()  # must not wait for the blocked worker
    assert order == [("fast", float(i)) for i in range(5)]
    release.set()
    slow.wait()
    assert order[-1] == ("slow", 1.0)


def test_thread_context_is_thread_local_and_nestable():
    a, b = asyncs.Thread(), asyncs.Thread()
    seen = {}
    with asyncs.thread(a):
        assert asyncs.current() is a
        with asyncs.thread(b):
            assert asyncs.current() is b
            other = threading.Thread(target=lambda: seen.setdefault("other", asyncs.current()))
            other.start()
            other.join()
        assert asyncs.current() is a
    assert asyncs.current() is not a and asyncs.current() is not b
    assert seen["other"] is not a and seen["other"] is not b
    with pytest.raises(TypeError, match="fjax.asyncs.thread: expected a fjax.asyncs.Thread"):
        asyncs.thread("worker")


def test_decorated_function_runs_on_the_worker_and_returns_a_future():
    t = asyncs.Thread(name="deco-worker")

    @asyncs.thread(t)
    def where(x):
        if x < 0:
            raise ValueError("negative")
        return threading.current_thread().name, x * 2

    futures = [where(i) for i in range(5)]
    assert [f.result(10) for f in futures] == [("deco-worker", 2 * i) for i in range(5)]
    with pytest.raises(ValueError, match="negative"):
        where(-1).result(10)
    asyncs.wait()  # errors of decorated functions stay in their futures


def test_check_raises_at_wait_naming_message_and_step(seed):
    rng = np.random.default_rng(seed)
    bad = int(rng.integers(3, 20))
    losses = rng.uniform(0.1, 1.0, 25)
    losses[bad] = np.nan
    with pytest.raises(asyncs.CheckError) as info:
        for loss in losses:
            x = fjax.tensor(loss, dtype=fjax.float32)
            asyncs.check(x.isfinite(), "loss is not finite")
        asyncs.wait()
    err = info.value
    assert err.step == bad and err.message == "loss is not finite", f"seed={seed}"
    assert f"at step {bad}" in str(err) and "test_asyncs.py:" in str(err) and "loss is not finite" in str(err)
    asyncs.wait()  # raised once, then forgotten


def test_check_passes_silently_and_accepts_explicit_step():
    for i in range(10):
        asyncs.check(fjax.tensor([i, i + 1]) >= 0, "never fails")
    asyncs.wait()
    asyncs.check(fjax.tensor([1.0, -1.0]) > 0, "second element", step=123)
    with pytest.raises(asyncs.CheckError, match="at step 123 .*second element"):
        asyncs.wait()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_finite(bad, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(6)
    asyncs.check_finite(fjax.tensor(v), "finite")
    asyncs.wait()
    v[int(rng.integers(6))] = bad
    asyncs.check_finite(fjax.tensor(v), "grads are not finite")
    with pytest.raises(asyncs.CheckError, match="grads are not finite"):
        asyncs.wait()


def test_error_surfaces_at_the_next_submission():
    t = asyncs.Thread()
    with asyncs.thread(t):
        asyncs.check(fjax.tensor(False), "first")
        t.wait()
        with pytest.raises(asyncs.CheckError, match="first"):
            asyncs.print("next", file=io.StringIO())


def test_callback_errors_and_waiting_on_a_worker_surface_at_wait():
    asyncs.log(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        asyncs.wait()
    asyncs.log(asyncs.wait)
    with pytest.raises(RuntimeError, match="called on a worker thread"):
        asyncs.wait()


def test_bad_arguments():
    with pytest.raises(TypeError, match="fjax.asyncs.check: expected a tensor or a bool"):
        asyncs.check("yes", "msg")
    with pytest.raises(TypeError, match="message must be a str"):
        asyncs.check(fjax.tensor(True), 3)
    with pytest.raises(TypeError, match="fjax.asyncs.check_finite: expected a tensor"):
        asyncs.check_finite(1.0, "msg")
    with pytest.raises(TypeError, match="callback must be callable"):
        asyncs.log(3, fjax.tensor(1.0))
    with pytest.raises(ValueError, match="queue_size must be at least 1"):
        asyncs.Thread(queue_size=0)


def test_thread_limit(monkeypatch):
    gc.collect()
    live = _worker._live_handles
    monkeypatch.setenv("FJAX_WORKER_THREAD_LIMIT", str(live + 2))
    a, b = asyncs.Thread(), asyncs.Thread()
    with pytest.raises(RuntimeError, match=rf"{live + 2} worker threads are alive.*FJAX_WORKER_THREAD_LIMIT"):
        asyncs.Thread()
    name = a.name
    del a
    gc.collect()
    c = asyncs.Thread()  # dropping a handle released its slot
    assert c.name != name and b.name != name
    monkeypatch.setenv("FJAX_WORKER_THREAD_LIMIT", "zero")
    with pytest.raises(ValueError, match="FJAX_WORKER_THREAD_LIMIT='zero' must be a positive integer"):
        asyncs.Thread()


def test_released_thread_finishes_its_queue():
    got = []
    t = asyncs.Thread(queue_size=4)
    thread = t._queue.thread
    release = threading.Event()
    with asyncs.thread(t):
        asyncs.log(lambda: release.wait(10))
        for i in range(3):
            asyncs.log(got.append, i)
    del t
    gc.collect()
    release.set()
    asyncs.wait()
    thread.join(10)
    assert got == [0, 1, 2] and not thread.is_alive()


def test_long_loop_memory_is_bounded():
    """Back-pressure: a producer faster than its worker blocks instead of queueing forever."""
    t = asyncs.Thread(queue_size=8)
    x = fjax.tensor(np.ones(16, np.float32))
    slow = threading.Event()

    def consume(value):
        slow.wait(2e-5)  # a worker slower than the producer

    def run(n):
        with asyncs.thread(t):
            for _ in range(n):
                asyncs.log(consume, x + 1)

    run(500)  # warm caches before measuring
    asyncs.wait()
    tracemalloc.start()
    try:
        run(2000)
        mid, mid_arrays = tracemalloc.get_traced_memory()[0], len(jax.live_arrays())
        run(8000)
        end, end_arrays = tracemalloc.get_traced_memory()[0], len(jax.live_arrays())
    finally:
        tracemalloc.stop()
    asyncs.wait()
    assert t.max_pending <= t.queue_size == 8
    assert end - mid < 64 * 1024, f"traced memory grew by {end - mid} bytes over 8000 more iterations"
    assert end_arrays - mid_arrays <= t.queue_size + 2, (mid_arrays, end_arrays)


def test_check_and_print_inside_a_compiled_graph(seed):
    rng = np.random.default_rng(seed)
    model = nn.Linear(3, 1)
    out = io.StringIO()

    class G(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            loss = self.model(x).square().mean()
            asyncs.print("loss", loss, file=out)
            asyncs.check_finite(loss, "graph loss is not finite")
            return loss

    g = G()
    xs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
    losses = [g(fjax.tensor(x)).item() for x in xs]
    asyncs.wait()
    assert out.getvalue().splitlines() == [f"loss {v}" for v in losses], f"seed={seed}"
    xs[0][1, 2] = np.nan
    g(fjax.tensor(xs[0]))
    with pytest.raises(asyncs.CheckError, match="at step 3 .*graph loss is not finite"):
        asyncs.wait()


def test_pending_output_is_flushed_and_errors_reported_at_exit():
    script = textwrap.dedent(
        """
        import fjax, fjax.asyncs as asyncs
        x = fjax.tensor([1.0, float("nan")])
        for i in range(3):
            asyncs.print("printed", i)
        asyncs.check_finite(x, "left for exit")
        """
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["printed 0", "printed 1", "printed 2"]
    assert "never raised" in res.stderr and "left for exit" in res.stderr
