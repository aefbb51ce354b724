"""Issue 36: fjax.cuda's memory statistics tell the truth; without a GPU they describe the CPU
device (its live arrays), and ``profile(profile_memory=True)`` fills key_averages' memory columns."""

import gc
import warnings

import jax
import numpy as np
import pytest
import torch

import fjax
from fjax import mock_torch, nn

MB = 1024 * 1024
N = 4096  # a 4096 x 4096 float32 tensor: 64 MiB


def _settle():
    gc.collect()


@pytest.fixture(autouse=True)
def _disarmed():
    """``reset_peak_memory_stats`` arms peak sampling for the rest of the process (and with it
    compile_from_torch's slow path): later tests in the same worker start without it."""
    yield
    fjax._memory.armed = False


def test_a_64mb_tensor_raises_memory_allocated_and_freeing_it_lowers_it():
    _settle()
    before = fjax.cuda.memory_allocated()
    x = fjax.randn(N, N, device="cuda" if fjax.cuda.is_available() else "cpu")
    during = fjax.cuda.memory_allocated()
    assert abs((during - before) - 64 * MB) < 2 * MB, (before, during)
    del x
    _settle()
    after = fjax.cuda.memory_allocated()
    assert abs((during - after) - 64 * MB) < 2 * MB, (during, after)


@pytest.mark.skipif(fjax.cuda.is_available(), reason="the CPU device's accounting")
def test_cpu_accounting_counts_each_live_buffer_once():
    _settle()
    arrays = [a for a in jax.live_arrays("cpu") if not a.is_deleted()]
    expected = sum(a.nbytes for a in {a.unsafe_buffer_pointer(): a for a in arrays}.values())
    assert fjax.cuda.memory_allocated() == expected
    x = fjax.ones(1000, dtype=fjax.float64)
    view = x._data.addressable_data(0)  # a second jax array on the same buffer: not counted twice
    assert fjax.cuda.memory_allocated() == expected + 8000
    assert fjax.cuda.memory_stats()["allocation.all.current"] == len({a.unsafe_buffer_pointer() for a in arrays}) + 1
    del x, view


def test_peak_keeps_the_max_until_reset():
    _settle()
    fjax.cuda.reset_peak_memory_stats()
    base = fjax.cuda.memory_allocated()
    assert fjax.cuda.max_memory_allocated() == base
    x = fjax.zeros(N, N)
    high = fjax.cuda.memory_allocated()
    del x
    _settle()
    assert fjax.cuda.memory_allocated() < high
    assert fjax.cuda.max_memory_allocated() == high  # the peak stays
    assert fjax.cuda.max_memory_reserved() >= high
    fjax.cuda.reset_peak_memory_stats()
    now = fjax.cuda.memory_allocated()
    assert fjax.cuda.max_memory_allocated() == now < high
    with pytest.warns(FutureWarning, match="reset_peak_memory_stats"):
        fjax.cuda.reset_max_memory_allocated()
    with pytest.warns(FutureWarning, match="reset_peak_memory_stats"):
        fjax.cuda.reset_max_memory_cached()


def test_after_a_reset_backward_samples_the_peak_of_its_activations(monkeypatch):
    # op by op: eager fusion would run the forward inside backward's program (no live activations)
    monkeypatch.setattr(fjax.config, "eager_fusion", False)
    _settle()
    fjax.manual_seed(0)
    w = fjax.randn(N, 256, requires_grad=True) * 0.1
    w = w.detach().requires_grad_()
    fjax.cuda.reset_peak_memory_stats()
    start = fjax.cuda.memory_allocated()
    # no memory query between here and the end of backward: exp saves its two 4 MiB outputs, alive
    # until backward starts; afterwards only the 4 MiB gradient is left
    loss = (w.exp() * 3).exp().sum()
    loss.backward()
    del loss
    _settle()
    assert fjax.cuda.memory_allocated() < start + 2 * N * 256 * 4
    assert fjax.cuda.max_memory_allocated() >= start + 2 * N * 256 * 4
    wn = w.detach().numpy()
    np.testing.assert_allclose(w.grad.numpy(), np.exp(3 * np.exp(wn)) * 3 * np.exp(wn), rtol=1e-4)


def test_after_a_reset_a_fused_step_counts_the_bytes_its_program_allocates(monkeypatch):
    # eager fusion: the forward's activations live only inside the step's one XLA program
    monkeypatch.setattr(fjax.config, "eager_fusion", True)
    fjax.manual_seed(0)
    w = (fjax.randn(N, 256) * 0.1).requires_grad_()

    def step():
        loss = (w.exp() * 3).exp().sum()
        loss.backward()
        with fjax.no_grad():
            w.sub_(w.grad * 1e-3)
            w.grad = None
        return loss.item()

    for _ in range(3):  # (a segment runs op by op at first sight, fused from the second)
        step()
    _settle()
    fjax.cuda.reset_peak_memory_stats()
    start = fjax.cuda.memory_allocated()
    step()
    _settle()
    assert fjax.cuda.memory_allocated() < start + N * 256 * 4
    # inside the program: exp's two 4 MiB results (saved for the backward), the gradient
    assert fjax.cuda.max_memory_allocated() >= start + 2 * N * 256 * 4


def test_armed_sampling_keeps_to_its_time_budget(monkeypatch):
    """A reset early in a long run does not make every later step pay for scanning the live
    arrays: after the reset's allowance, armed samples take at most their share of the time (a
    fake clock: each scan costs 10 ms, each step's own work 2 ms), and a sample that is due still
    finds a peak. Explicit queries always sample."""
    from fjax import _memory

    now = [0.0]
    scans = []
    real_scan = _memory.scan

    def slow_scan(platform):
        scans.append(now[0])
        now[0] += 0.01
        return real_scan(platform)

    monkeypatch.setattr(_memory, "_clock", lambda: now[0])
    monkeypatch.setattr(_memory, "scan", slow_scan)
    monkeypatch.setattr(_memory, "armed", False)
    w = fjax.randn(64, 64, requires_grad=True)
    fjax.cuda.reset_peak_memory_stats()
    for _ in range(200):
        now[0] += 0.002
        (w * 2).sum().backward()
    armed = len(scans) - 1  # (the reset's own)
    spent, elapsed = armed * 0.01, now[0]
    assert armed >= 10, f"the allowance lets the first steps sample: {armed} scans"
    assert spent <= _memory._ALLOWANCE + _memory._SHARE * elapsed + 0.01, (
        f"armed samples took {spent:.2f} s of {elapsed:.2f} s: over the budget"
    )
    assert armed < 2 * 200 / 3, f"without a budget every backward would scan twice: {armed} scans"
    before = len(scans)
    fjax.cuda.max_memory_allocated()
    assert len(scans) == before + 1, "an explicit query samples whatever the budget"


def test_memory_stats_keys_agree_with_the_queries():
    x = fjax.ones(256, 256)
    stats = fjax.cuda.memory_stats()
    assert list(stats) == sorted(stats)
    allocated = fjax.cuda.memory_allocated()
    assert stats["allocated_bytes.all.current"] == stats["active_bytes.all.current"] == allocated
    assert stats["allocated_bytes.all.peak"] >= allocated
    assert stats["reserved_bytes.all.current"] == fjax.cuda.memory_reserved() >= allocated
    assert stats["num_alloc_retries"] == 0
    assert not {"num_ooms", "requested_bytes.all.current", "segment.all.current"} & set(stats)
    nested = fjax.cuda.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == fjax.cuda.memory_allocated()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert fjax.cuda.memory_cached() == fjax.cuda.memory_reserved()
        assert fjax.cuda.max_memory_cached() == fjax.cuda.max_memory_reserved()
    del x


def test_memory_summary_is_a_table_with_the_numbers():
    x = fjax.ones(N, N)
    text = fjax.cuda.memory_summary()
    stats = fjax.cuda.memory_stats()
    cur, peak = stats["allocated_bytes.all.current"], stats["allocated_bytes.all.peak"]
    assert isinstance(text, str) and "Allocated memory" in text and "Peak Usage" in text
    # sizes as torch formats them: KiB below 768 MiB, so ~64 MiB reads " 65536 KiB"
    assert 64 * MB <= cur <= peak < 768 * MB
    row = next(line for line in text.splitlines() if "Allocated memory" in line)
    assert f"| {cur // 1024:6d} KiB | {peak // 1024:6d} KiB |" in row, row
    assert fjax.cuda.memory_summary(0, abbreviated=True) == fjax.cuda.memory_summary("cuda:0")
    del x


def test_mem_get_info_is_free_and_total():
    free, total = fjax.cuda.mem_get_info()
    assert type(free) is int and type(total) is int and 0 <= free <= total and total > 0


@pytest.mark.parametrize("device", [0, "cuda", "cuda:0", fjax.device("cuda", 0)])
def test_device_argument_spellings(device):
    assert fjax.cuda.memory_allocated(device) == fjax.cuda.memory_allocated()
    assert fjax.cuda.memory_stats(device)["allocated_bytes.all.current"] >= 0


def test_a_bad_device_raises_naming_it():
    with pytest.raises(RuntimeError, match=r"memory_allocated: invalid device 'cuda:7'"):
        fjax.cuda.memory_allocated("cuda:7")
    with pytest.raises(RuntimeError, match=r"max_memory_allocated: invalid device 9"):
        fjax.cuda.max_memory_allocated(9)
    with pytest.raises(ValueError, match=r"memory_stats: expected a cuda device, got 'cpu'"):
        fjax.cuda.memory_stats("cpu")
    with pytest.raises(ValueError, match=r"mem_get_info: invalid device 'tpu:0'"):
        fjax.cuda.mem_get_info("tpu:0")


def test_mock_torch_reads_the_same_numbers():
    with mock_torch.enable():
        import torch as mocked

        x = mocked.ones(512, 512)
        assert mocked.cuda.memory_allocated is fjax.cuda.memory_allocated
        assert mocked.cuda.memory_allocated(mocked.device("cuda:0")) == fjax.cuda.memory_allocated() > 0
        del x


def test_accelerator_names_follow_torch_without_a_gpu():
    if fjax.accelerator.is_available():
        assert fjax.accelerator.memory_allocated() == fjax.cuda.memory_allocated()
        assert fjax.accelerator.get_memory_info() == fjax.cuda.mem_get_info()
    else:  # no accelerator: torch raises, and so does fjax
        for name in ("memory_allocated", "memory_stats", "get_memory_info", "reset_peak_memory_stats"):
            with pytest.raises(RuntimeError, match="Cannot access accelerator"):
                getattr(fjax.accelerator, name)()
            with pytest.raises(RuntimeError, match="Cannot access accelerator"):
                getattr(torch.accelerator, name)()


def test_profile_memory_matches_torch_per_op():
    a = np.random.default_rng(0).standard_normal((100, 60), dtype=np.float32)
    fx = fjax.tensor(a)
    with fjax.profiler.profile(profile_memory=True) as prof:
        with fjax.profiler.record_function("block"):
            y = (fx @ fx.T).relu()
            s = y.sum()
    got = {e.key: e for e in prof.key_averages()}
    tx = torch.tensor(a)
    with torch.profiler.profile(profile_memory=True) as tprof:
        ty = (tx @ tx.T).relu()
        ts = ty.sum()
    want = {e.key: e for e in tprof.key_averages()}
    assert got["matmul"].self_cpu_memory_usage == want["aten::mm"].self_cpu_memory_usage == 100 * 100 * 4
    assert got["relu"].cpu_memory_usage == want["aten::relu"].cpu_memory_usage
    assert got["sum"].cpu_memory_usage == want["aten::sum"].cpu_memory_usage == 4
    # the block keeps relu's output and the sum; its self part is that less what its ops left (the
    # transpose and the product, freed inside it, count against it)
    block = got["block"]
    assert block.cpu_memory_usage == 100 * 100 * 4 + 4
    children = sum(e.cpu_memory_usage for k, e in got.items() if k != "block")
    assert children == 100 * 60 * 4 + 2 * 100 * 100 * 4 + 4
    assert block.self_cpu_memory_usage == block.cpu_memory_usage - children
    table = prof.key_averages().table(sort_by="self_cpu_memory_usage")
    assert "Self CPU Mem" in table and "39.06 KB" in table
    del y, s, ty, ts


def test_profile_without_memory_leaves_memory_columns_out():
    with fjax.profiler.profile() as prof:
        fjax.ones(8) + 1
    rows = prof.key_averages()
    assert all(r.cpu_memory_usage == 0 for r in rows) and "CPU Mem" not in rows.table()


def test_nn_graph_steps_sample_the_peak_after_a_reset():
    lin = nn.Linear(64, 64)
    graph = nn.Graph.trace(lambda x: lin(x) * 2)
    x = fjax.randn(2048, 64)
    graph(x)  # compile outside the measurement
    _settle()
    fjax.cuda.reset_peak_memory_stats()
    base = fjax.cuda.memory_allocated()
    graph(x)  # its 512 KiB output is dropped at once: only the step's sample sees it
    assert fjax.cuda.max_memory_allocated() >= base + 2048 * 64 * 4


class _FakeGPU:
    """A device whose XLA allocator statistics the test sets (the GPU path without a GPU)."""

    platform = "gpu"

    def __init__(self):
        self.stats = {"bytes_in_use": 100, "peak_bytes_in_use": 1000, "num_allocs": 7}

    def memory_stats(self):
        return dict(self.stats)


def test_gpu_peak_after_reset_is_xla_peak_when_new_else_the_samples():
    from fjax import _memory

    dev = _FakeGPU()
    try:
        used, count = _memory.current(dev)
        assert (used, count) == (100, None)
        assert _memory.peak(dev, used, dev.memory_stats()) == 1000  # never reset: XLA's all-time peak
        _memory.reset_peak(dev)
        assert _memory.peak(dev, 100, dev.memory_stats()) == 100  # XLA still says 1000, from before the reset
        dev.stats["bytes_in_use"] = 400
        used, _ = _memory.current(dev)
        dev.stats["bytes_in_use"] = 200
        used, _ = _memory.current(dev)
        assert _memory.peak(dev, used, dev.memory_stats()) == 400  # below the old peak: the largest sample
        dev.stats.update(bytes_in_use=300, peak_bytes_in_use=1500)
        assert _memory.peak(dev, 300, dev.memory_stats()) == 1500  # a new all-time peak: exact again
    finally:
        _memory._peaks.pop(dev, None)
