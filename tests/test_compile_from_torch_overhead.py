"""compile_from_torch's fast call (``_Fast``): an inference call that repeats a signature skips
nn.Graph's call path. These check its semantics against torch on fresh random inputs: outputs
equal torch's, a parameter changed on either side between calls is seen, a change of mode,
shape, input kind or AMP leaves the fast entry, and inputs, outputs and parameters cross the
torch/fjax boundary without copies. Timings live in benchmarks/compile_from_torch.py."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch import nn

import fjax
from fjax.framework import infer_compiler as ic


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(self.drop(torch.relu(self.bn(self.conv(x))).mean((2, 3))))


class TwoOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(5, 4)
        self.b = nn.Linear(5, 2)

    def forward(self, x, y):
        h = self.a(x) + y
        return {"h": h, "pair": (self.b(x), h.sum(-1))}


_SEED = [0]


def _rand(*shape):
    _SEED[0] += 1
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1000 + _SEED[0]))


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def _net():
    torch.manual_seed(0)
    tm = Net().eval()
    with torch.no_grad():  # running statistics that are not 0 and 1
        tm.bn.running_mean.uniform_(-0.5, 0.5)
        tm.bn.running_var.uniform_(0.5, 2.0)
    return tm, fjax.compile_from_torch(tm)


class _Spy:
    """Wraps a ``_Fast`` entry's executable call (``_RawStep.execute``), keeping each call's
    argument buffers and output arrays."""

    def __init__(self, fast):
        assert fast.raw is not None, "the entry calls its XLA executable directly"
        self.raw, self.inner, self.calls = fast.raw, fast.raw.execute, []
        fast.raw.execute = self

    def __call__(self, bufs):
        results = self.inner(bufs)
        spy = self

        class Results:
            def consume_with_handlers(self, handlers):
                outs = results.consume_with_handlers(handlers)
                spy.calls.append((list(bufs), outs))
                return outs

        return Results()


def _only_fast(m):
    """The module's one fast entry, with the slow path made to fail (so a call that passes
    proves the fast entry served it)."""
    assert len(m._fast) == 1
    for graph in m._graphs.values():
        graph._executables.call = _fail
    return next(iter(m._fast.values()))


def _fail(*args, **kwargs):
    raise AssertionError("the slow path ran")


def test_fast_calls_match_torch_on_fresh_inputs():
    tm, m = _net()
    with torch.no_grad():
        for _ in range(2):
            x = _rand(2, 3, 6, 6)
            _close(m(x), tm(x))
        _only_fast(m)
        for _ in range(4):
            x = _rand(2, 3, 6, 6)
            out = m(x)
            assert isinstance(out, torch.Tensor) and out.shape == (2, 3) and not out.requires_grad
            _close(out, tm(x))


def test_several_inputs_and_nested_outputs():
    torch.manual_seed(1)
    tm = TwoOut().eval()
    m = fjax.compile_from_torch(tm)
    with torch.no_grad():
        for i in range(4):
            x, y = _rand(3, 5), _rand(3, 4)
            out, ref = m(x, y), tm(x, y)
            if i == 1:
                _only_fast(m)
            assert set(out) == {"h", "pair"} and isinstance(out["pair"], tuple)
            _close(out["h"], ref["h"])
            _close(out["pair"][0], ref["pair"][0])
            _close(out["pair"][1], ref["pair"][1])


@pytest.mark.parametrize(
    "change",
    ["inplace_data", "no_grad_inplace", "no_grad_add_weight", "torch_optimizer", "rebind_data", "load_state_dict"]
    + ["buffer", "buffer_rebind"],
)
def test_a_torch_side_change_between_calls_is_seen(change):
    tm, m = _net()
    x = _rand(2, 3, 6, 6)
    with torch.no_grad():
        m(x)
        m(x)
    _only_fast(m)
    before = m(x).clone()
    if change == "inplace_data":
        tm.fc.weight.data.mul_(-2.0)
    elif change == "no_grad_inplace":
        with torch.no_grad():
            tm.conv.bias.add_(_rand(4))
    elif change == "no_grad_add_weight":
        with torch.no_grad():
            tm.fc.weight.add_(1)
    elif change == "torch_optimizer":
        opt = torch.optim.SGD(tm.parameters(), lr=0.5)
        tm(x).square().sum().backward()
        opt.step()
    elif change == "rebind_data":
        tm.fc.weight.data = _rand(3, 4)
    elif change == "load_state_dict":
        other = Net().eval()
        tm.load_state_dict(other.state_dict())
    elif change == "buffer":
        tm.bn.running_mean.add_(1.0)
    else:
        tm.bn.running_var.data = tm.bn.running_var * 3.0
    with torch.no_grad():
        out = m(x)
        ref = tm(x)
    assert not np.allclose(out.numpy(), before.numpy())
    _close(out, ref)


def test_an_fjax_side_write_between_calls_is_seen_by_both():
    tm, m = _net()
    x = _rand(2, 3, 6, 6)
    with torch.no_grad():
        m(x)
        m(x)
    _only_fast(m)
    with fjax.no_grad():
        m.fc.bias.copy_(fjax.tensor(_rand(3).numpy()))
        m.conv.weight.mul_(0.5)
    with torch.no_grad():
        out, ref = m(x), tm(x)
    _close(out, ref)
    _close(tm.fc.bias.detach(), m.fc.bias.numpy())


def test_alternating_writes_on_both_sides_are_each_seen():
    tm, m = _net()
    x = _rand(2, 3, 6, 6)
    with torch.no_grad():
        m(x)
        m(x)
    _only_fast(m)
    for step in range(6):
        if step % 2:  # torch writes in place (after fjax's write, the fjax tensor held fjax's own buffer)
            with torch.no_grad():
                tm.fc.bias.add_(_rand(3))
                tm.conv.weight.mul_(1.1)
        else:
            with fjax.no_grad():
                m.fc.bias.copy_(fjax.tensor(_rand(3).numpy()))
        x = _rand(2, 3, 6, 6)
        with torch.no_grad():
            _close(m(x), tm(x))


def test_an_fjax_parameter_rebound_to_other_memory_is_read():
    tm, m = _net()
    x = _rand(2, 3, 6, 6)
    with torch.no_grad():
        m(x)
        m(x)
    _only_fast(m)
    new = _rand(3, 4)
    m.fc.weight.data = fjax.tensor(new.numpy())  # fjax's parameter leaves torch's memory
    twin = Net().eval()
    twin.load_state_dict(tm.state_dict())
    with torch.no_grad():
        twin.fc.weight.copy_(new)
        _close(m(x), twin(x))
        assert not np.allclose(tm.fc.weight.numpy(), new.numpy())  # torch's own stays


class Lookup(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 6)
        self.out = nn.Linear(6, 4)

    def forward(self, idx, scale):
        return self.out(self.emb(idx)).sum(1) * scale.sum(1)  # the result in torch's promoted dtype


@pytest.mark.parametrize("scale_dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_integer_and_other_dtype_inputs(scale_dtype):
    torch.manual_seed(2)
    tm = Lookup().eval()
    m = fjax.compile_from_torch(tm)
    with torch.no_grad():
        for i in range(4):
            g = torch.Generator().manual_seed(50 + i)
            idx = torch.randint(0, 50, (3, 5), generator=g)  # int64, as torch makes indices
            scale = (torch.rand(3, 5, 1, generator=g) + 0.5).to(scale_dtype)
            if i == 2:
                _only_fast(m)
            out, ref = m(idx, scale), tm(idx, scale)
            np.testing.assert_allclose(out.double().numpy(), ref.double().numpy(), rtol=2e-2, atol=2e-2)


def test_mode_shape_and_kind_changes_leave_the_fast_entry():
    tm, m = _net()
    with torch.no_grad():
        for shape in [(2, 3, 6, 6), (2, 3, 6, 6), (1, 3, 5, 7), (1, 3, 5, 7), (2, 3, 6, 6)]:
            x = _rand(*shape)
            _close(m(x), tm(x))
        assert len(m._fast) == 2  # one per input signature
        # train mode: dropout draws and batch statistics update (no fast entry), matching torch's
        m.train()
        x = _rand(4, 3, 6, 6)
        m(x)
        assert m.training and tm.training
        m.eval()
        _close(m(x), tm(x))
        # a non-contiguous input, and one that requires grad, take the same step
        xt = _rand(2, 3, 6, 6).transpose(2, 3)
        _close(m(xt), tm(xt))
    xg = _rand(2, 3, 6, 6).requires_grad_()
    with torch.no_grad():
        _close(m(xg), tm(xg))


def test_fjax_inputs_fast_under_no_grad_and_differentiable_otherwise():
    tm, m = _net()
    x = _rand(2, 3, 6, 6)
    fx = fjax.tensor(x.numpy())
    with fjax.no_grad():
        m(fx)
        m(fx)
    assert (False, *[(fx.dtype, fx.shape)]) in m._fast
    with fjax.no_grad():
        x2 = _rand(2, 3, 6, 6)
        out = m(fjax.tensor(x2.numpy()))
    assert isinstance(out, fjax.Tensor) and not out.requires_grad
    with torch.no_grad():
        _close(out.numpy(), tm(x2))
    # with gradients on, the call is taped and backward reaches the shared parameters
    out = m(fjax.tensor(x2.numpy()))
    out.sum().backward()
    tm.zero_grad()
    tm(x2).sum().backward()
    _close(m.fc.weight.grad.numpy(), tm.fc.weight.grad)


def test_autocast_and_profiler_take_the_slow_path():
    tm, m = _net()
    x = _rand(2, 3, 6, 6)
    with torch.no_grad():
        m(x)
        reference = m(x)
    assert m._fast
    seen = []
    for graph in m._graphs.values():
        inner = graph._executables.call

        def call(args, kwargs, inner=inner):
            seen.append(1)
            return inner(args, kwargs)

        graph._executables.call = call
    with torch.no_grad(), fjax.autocast("cpu", dtype=fjax.bfloat16):
        low = m(x)
    assert seen, "autocast must reach nn.Graph's call (its config key changed)"
    np.testing.assert_allclose(low.float().numpy(), reference.numpy(), rtol=5e-2, atol=5e-2)
    seen.clear()
    with torch.no_grad(), fjax.profiler.profile():
        _close(m(x), reference)
    assert seen, "a profiled call goes through nn.Graph's call (its profiler span)"


def test_no_copies_across_the_boundary():
    tm, m = _net()
    x = _rand(2, 3, 6, 6)
    with torch.no_grad():
        m(x)
        m(x)
        fast = _only_fast(m)
        spy = _Spy(fast)
        x = _rand(2, 3, 6, 6)
        out = m(x)
    ((bufs, results),) = spy.calls
    # a small input is copied into the entry's own staging memory, which the step holds an array of
    (staging,) = fast.staged[0]
    assert bufs[fast.template[3]].unsafe_buffer_pointer() == staging.data_ptr()
    assert results[0].unsafe_buffer_pointer() == out.data_ptr()  # the output is jax's memory
    pointers = {a.unsafe_buffer_pointer() for a in bufs}
    assert {p.data_ptr() for p in tm.parameters()} <= pointers  # the parameters are torch's memory
    assert ic._CPU_IMPORT[0] is not None and ic._CPU_EXPORT[0] is not None


def test_a_large_input_is_imported_without_a_copy():
    tm, m = _net()
    big = 2 * ic._STAGE_BYTES // 4 // 3 // 16  # a batch of float32 3x4x4 images over the staging limit
    x = _rand(big, 3, 4, 4)
    with torch.no_grad():
        m(x)
        m(x)
        fast = _only_fast(m)
        assert fast.staged is None and fast.raw is not None
        spy = _Spy(fast)
        x = _rand(big, 3, 4, 4)
        out = m(x)
        _close(out, tm(x))
    ((bufs, _),) = spy.calls
    assert bufs[fast.template[3]].unsafe_buffer_pointer() == x.data_ptr()  # torch's memory, imported


def test_staged_calls_keep_their_outputs_and_a_busy_stage_imports():
    tm, m = _net()
    with torch.no_grad():
        x = _rand(2, 3, 6, 6)
        m(x)
        m(x)
        fast = _only_fast(m)
        assert fast.staged is not None
        xs = [_rand(2, 3, 6, 6) for _ in range(3)]
        outs = [m(x) for x in xs]  # each output its own memory, not the next call's
        for x, out in zip(xs, outs):
            _close(out, tm(x))
        assert fast.lock.acquire(False)  # another thread's call holds the staging memory
        try:
            x = _rand(2, 3, 6, 6)
            _close(m(x), tm(x))  # this one imports its input
        finally:
            fast.lock.release()
        x = _rand(2, 3, 6, 6).transpose(2, 3).contiguous().transpose(2, 3)  # not contiguous: copied by the import
        assert not x.is_contiguous()
        _close(m(x), tm(x))


def test_the_compiled_call_serves_an_entry_whose_executable_check_fails(monkeypatch):
    monkeypatch.setattr(ic, "_same_outputs", lambda a, b: False)
    tm, m = _net()
    with torch.no_grad():
        for _ in range(4):
            x = _rand(2, 3, 6, 6)
            _close(m(x), tm(x))
    fast = _only_fast(m)
    assert fast.raw is None and fast.template is None
    with torch.no_grad():
        for _ in range(2):
            x = _rand(2, 3, 6, 6)
            _close(m(x), tm(x))
            tm.fc.weight.data = _rand(3, 4)  # still checked without the raw step's list of tensors read
            _close(m(x), tm(x))


class Pair(nn.Module):
    """Two same-shape layers (so one's weights can be rebound to the other's) and a parameter
    stored transposed: torch's non-contiguous memory, which the import copies."""

    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(5, 5)
        self.l2 = nn.Linear(5, 5)
        self.t = nn.Parameter(torch.randn(4, 5).t())  # (5, 4), non-contiguous
        self.register_buffer("shift", torch.randn(4))

    def forward(self, x):
        return (self.l2(torch.relu(self.l1(x))) @ self.t) + self.shift


def _pair():
    torch.manual_seed(3)
    tm = Pair().eval()
    m = fjax.compile_from_torch(tm)
    x = _rand(3, 5)
    with torch.no_grad():
        m(x)
        m(x)
    return tm, m, _only_fast(m)


def test_a_write_to_a_copied_import_is_seen_through_its_version():
    tm, m, fast = _pair()
    assert not tm.t.is_contiguous()
    with torch.no_grad():
        m(_rand(3, 5))
    (stale,) = fast.state[2]  # the one tensor whose array is a copy: its version is checked
    assert stale is tm.t
    for _ in range(3):
        with torch.no_grad():
            tm.t.mul_(-1.5)  # torch's in-place write: a new version, not the array's memory
            x = _rand(3, 5)
            _close(m(x), tm(x))


@pytest.mark.parametrize("what", ["parameter", "buffer"])
def test_an_fjax_tensor_rebound_to_another_shared_storage_is_read(what):
    tm, m, _ = _pair()
    with fjax.no_grad():
        if what == "parameter":  # l1 now reads l2's weight (an fjax-side alias of torch's memory)
            m.l1.weight.data = m.l2.weight
        else:
            m.shift.data = m.l2.bias[:4]
    twin = Pair().eval()
    twin.load_state_dict(tm.state_dict())
    with torch.no_grad():
        if what == "parameter":
            twin.l1.weight.copy_(tm.l2.weight)
        else:
            twin.shift.copy_(tm.l2.bias[:4])
        for _ in range(2):
            x = _rand(3, 5)
            _close(m(x), twin(x))


def test_torch_moving_memory_between_calls_is_seen_each_time():
    tm, m, _ = _pair()
    for step in range(4):
        with torch.no_grad():
            if step % 2:
                tm.l2.weight.data = _rand(5, 5)  # new memory, the version unchanged
            else:
                tm.shift.set_(_rand(4))
            x = _rand(3, 5)
            _close(m(x), tm(x))


def test_the_fast_call_checks_nothing_per_tensor_before_the_dispatch(monkeypatch):
    """Before the step is dispatched, the fast call compares counters only; the one check of
    the torch tensors the step reads (their data pointers) runs after it, while the step does."""
    tm, m, fast = _pair()
    events = []
    inner_pull, inner_ptr = m._pull, ic._DATA_PTR
    object.__setattr__(m, "_pull", lambda: events.append("pull") or inner_pull())
    monkeypatch.setattr(ic, "_DATA_PTR", lambda t: events.append("ptr") or inner_ptr(t))
    spy = _Spy(fast)
    inner_execute = spy.inner
    spy.inner = lambda bufs: events.append("dispatch") or inner_execute(bufs)

    def steps():
        out = [e for i, e in enumerate(events) if i == 0 or e != events[i - 1]]  # runs of "ptr" as one
        events.clear()
        return out

    with torch.no_grad():
        for _ in range(3):
            x = _rand(3, 5)
            _close(m(x), tm(x))
    assert steps() == ["dispatch", "ptr"] * 3
    with torch.no_grad():  # a torch-side move: the first result is dropped, the step rerun on a fresh read
        tm.l1.weight.data = _rand(5, 5)
        x = _rand(3, 5)
        _close(m(x), tm(x))
    assert steps() == ["dispatch", "ptr", "pull", "ptr", "dispatch"]


def test_only_the_tensors_the_step_reads_are_checked():
    torch.manual_seed(0)
    tm = Net().eval()  # BatchNorm's num_batches_tracked: not read in eval mode
    m = fjax.compile_from_torch(tm)
    with torch.no_grad():
        m(_rand(2, 3, 6, 6))
        m(_rand(2, 3, 6, 6))
    fast = _only_fast(m)
    watched = fast.state[4]
    assert any(t is tm.conv.weight for t in watched) and any(t is tm.bn.running_var for t in watched)
    assert not any(t is tm.bn.num_batches_tracked for t in watched)


class Tok(nn.Module):
    """Token and position lookups as a GPT makes them: the token ids a user input (through a
    reshape), the positions an ``arange``; ``shift`` adds a lookup at computed indices."""

    def __init__(self, vocab=20, block=8, dim=4, shift=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(block, dim)
        self.out = nn.Linear(dim, 3)
        self.shift = shift

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        h = self.wte(idx.reshape(-1)).reshape(*idx.shape, -1) + self.wpe(pos)
        if self.shift:
            h = h + self.wte((idx + 1) % 20)
        return self.out(h)


def _callbacks(m) -> bool:
    """Whether the module's fast entry's compiled step calls back to the host (a custom call
    whose target names a python callback: ``xla_ffi_python_cpu_callback`` on CPU)."""
    (fast,) = m._fast.values()
    targets = re.findall(r'custom_call_target="([^"]+)"', fast.compiled.as_text())
    return any("callback" in t for t in targets)


@pytest.mark.parametrize("inputs", ["torch", "fjax"])
def test_lookups_at_inputs_and_positions_are_checked_on_the_host_not_by_callbacks(inputs):
    torch.manual_seed(4)
    tm = Tok().eval()
    m = fjax.compile_from_torch(tm)
    assert fjax.config.graph_index_checks

    def call(idx):
        if inputs == "torch":
            return m(idx)
        return torch.from_numpy(np.array(m(fjax.tensor(idx.numpy())).numpy()))

    with torch.no_grad(), fjax.no_grad():
        for i in range(4):
            idx = torch.randint(0, 20, (2, 6), generator=torch.Generator().manual_seed(i))
            _close(call(idx), tm(idx))
        assert not _callbacks(m)  # no host callback per call: the step runs as with checks off
        # a few indices are checked in Python, many (here 300) by numpy; int64 and int32 indices
        for bad, shape in ((20, (2, 6)), (-1, (2, 6)), (-1, (50, 6))):
            for dtype in (torch.int64, torch.int32) if shape == (2, 6) else (torch.int64,):
                idx = torch.randint(0, 20, shape, dtype=dtype)
                for _ in range(3):  # (the fast call serves a signature from its second call)
                    _close(call(idx), tm(idx))
                idx[1, 3] = bad
                with pytest.raises(IndexError, match=f"index {bad} is out of range for a weight with 20 rows"):
                    call(idx)  # at the call, as torch's eager lookup raises
                with pytest.raises(IndexError):
                    tm(idx)
        too_long = torch.randint(0, 20, (1, 9))  # positions 0..8 of an 8-row table: raised when traced
        with pytest.raises(IndexError, match="index 8 is out of range for a weight with 8 rows"):
            call(too_long)


def test_lookups_at_computed_indices_keep_the_deferred_check():
    torch.manual_seed(5)
    tm = Tok(shift=True).eval()
    m = fjax.compile_from_torch(tm)
    with torch.no_grad():
        for i in range(3):
            idx = torch.randint(0, 20, (2, 6), generator=torch.Generator().manual_seed(i))
            _close(m(idx), tm(idx))
    # (idx + 1) % 20 is checked inside the step: a boolean the step returns, not a host callback
    # (which would keep the step out of JAX's persistent compilation cache)
    assert not _callbacks(m)
    ((_, error, _),) = next(iter(m._fast.values())).step_checks
    assert issubclass(error, IndexError)
    (program,) = m._programs.values()
    assert program.host_checks == [(0, 20)]


def test_index_checks_off_check_nothing_on_the_host(monkeypatch):
    monkeypatch.setattr(fjax.config, "graph_index_checks", False)
    torch.manual_seed(4)
    tm = Tok().eval()
    m = fjax.compile_from_torch(tm)
    seen = []
    with torch.no_grad():
        idx = torch.randint(0, 20, (2, 6))
        m(idx)
        (program,) = m._programs.values()
        monkeypatch.setattr(program, "check_inputs", lambda arrays: seen.append(1))
        for _ in range(3):
            _close(m(idx), tm(idx))
    assert not seen and not _callbacks(m)
