"""Lazy eager fusion (fjax._lazy): recorded op sequences give eager's numbers and semantics."""

from __future__ import annotations

import threading

import jax
import numpy as np
import pytest
import torch

import fjax
from fjax import _lazy
from fjax.profiler import fusion_stats


def _pending(t):
    return type(t._a) is _lazy.Pending


def _mlp_step(ws, x, lr):
    h = x
    for w in ws[:-1]:
        h = (h @ w).relu()
    loss = ((h @ ws[-1]) ** 2).mean()
    loss.backward()
    with torch.no_grad() if isinstance(x, torch.Tensor) else fjax.no_grad():
        for w in ws:
            w -= lr * w.grad
            w.grad = None
    return loss


def test_a_repeated_step_fuses_and_matches_torch(fused):
    rng = np.random.default_rng(0)
    shapes = [(12, 16), (16, 16), (16, 3)]
    arrays = [rng.standard_normal(s).astype(np.float32) / 4 for s in shapes]
    x = rng.standard_normal((5, 12)).astype(np.float32)
    fw = [fjax.tensor(a, requires_grad=True) for a in arrays]
    tw = [torch.tensor(a, requires_grad=True) for a in arrays]
    before = fusion_stats()
    for _ in range(6):
        fl = _mlp_step(fw, fjax.tensor(x), 0.1)
        tl = _mlp_step(tw, torch.tensor(x), 0.1)
        np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-5)
    after = fusion_stats()
    assert after["segment_hits"] - before["segment_hits"] >= 3
    assert after["ops_fused"] > before["ops_fused"]
    for a, b in zip(fw, tw):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("accumulate", [1, 2])
def test_a_training_step_with_its_optimizer_is_one_program(fused, accumulate):
    """Forward, backward (gradients accumulated over ``accumulate`` micro-batches, up to
    ``_lazy._MAX_BACKWARDS``) and the optimizer's update run as one segment per step, ended by
    the optimizer's step; losses and weights are torch's."""
    rng = np.random.default_rng(3)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    fm = fjax.nn.Sequential(fjax.nn.Linear(6, 16), fjax.nn.Tanh(), fjax.nn.Linear(16, 3))
    fm.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    t_opt, f_opt = torch.optim.Adam(tm.parameters(), lr=0.01), fjax.optim.Adam(fm.parameters(), lr=0.01)
    for step in range(6):
        before = fusion_stats()
        t_opt.zero_grad()
        f_opt.zero_grad()
        for _ in range(accumulate):
            x, y = rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 3, 8)
            fl = fjax.nn.functional.cross_entropy(fm(fjax.tensor(x)), fjax.tensor(y))
            tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
            fl.backward()
            tl.backward()
        assert _pending(fm[0].weight.grad)  # the gradients wait for the update
        f_opt.step()
        t_opt.step()
        assert fm[0].weight._a.seg is None  # the step ran its segment
        after = fusion_stats()
        flushed = (
            after["segments_replayed"] + after["segment_hits"] - before["segments_replayed"] - before["segment_hits"]
        )
        assert flushed == 1, (step, flushed)  # the micro-batches' backwards and the update: one segment
        np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-5)
    for (name, p), q in zip(fm.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_batch_norm_statistics_and_to_device_stay_in_the_step(fused):
    """A batch taken from a dataset tensor and moved with ``.to(device)``, and BatchNorm's
    running statistics, are recorded: a training step is still one segment; the running
    statistics are torch's."""
    rng = np.random.default_rng(4)
    data = rng.standard_normal((6, 8, 5)).astype(np.float32)
    tm = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.BatchNorm1d(7), torch.nn.ReLU(), torch.nn.Linear(7, 2))
    fm = fjax.nn.Sequential(fjax.nn.Linear(5, 7), fjax.nn.BatchNorm1d(7), fjax.nn.ReLU(), fjax.nn.Linear(7, 2))
    fm.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    t_opt, f_opt = torch.optim.SGD(tm.parameters(), lr=0.1), fjax.optim.SGD(fm.parameters(), lr=0.1)
    f_data, t_data = fjax.tensor(data), torch.tensor(data)
    for step in range(6):
        before = fusion_stats()
        fl = fm(f_data[step].to("cpu")).square().mean()
        tl = tm(t_data[step].to("cpu")).square().mean()
        f_opt.zero_grad()
        t_opt.zero_grad()
        fl.backward()
        tl.backward()
        f_opt.step()
        t_opt.step()
        after = fusion_stats()
        flushed = (
            after["segments_replayed"] + after["segment_hits"] - before["segments_replayed"] - before["segment_hits"]
        )
        assert flushed == 1, (step, flushed)
        np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-5)
    for key in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_allclose(fm.state_dict()[key].numpy(), tm.state_dict()[key].numpy(), rtol=1e-5, atol=1e-6)


def test_index_checks_on_computed_indices_wait_for_the_segment(fused):
    """A training step whose targets are a dataset tensor's rows and whose gathered indices are
    computed (an argmax) stays one segment per step: the rows are checked at the call from the
    dataset's values, the computed indices when the step's program runs. A bad computed index
    raises torch's error (an IndexError naming the op) at the next sync, naming the user's line;
    a bad row of the dataset raises at the call, as in torch."""
    fjax.manual_seed(0)  # (forgets the check points earlier tests saw)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 8, 5)).astype(np.float32)
    labels = rng.integers(0, 3, (6, 8))
    labels[5, 2] = 3
    fm, tm = fjax.nn.Linear(5, 3), torch.nn.Linear(5, 3)
    fm.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    f_opt, t_opt = fjax.optim.SGD(fm.parameters(), lr=0.1), torch.optim.SGD(tm.parameters(), lr=0.1)
    f_x, f_y, t_x, t_y = fjax.tensor(x), fjax.tensor(labels), torch.tensor(x), torch.tensor(labels)

    def step(m, opt, xs, ys):
        logits = m(xs)
        picked = logits.gather(1, logits.argmax(1, keepdim=True))  # computed indices
        loss = (
            torch.nn.functional.cross_entropy(logits, ys) if m is tm else fjax.nn.functional.cross_entropy(logits, ys)
        )
        opt.zero_grad()
        (loss + picked.mean()).backward()
        opt.step()
        return loss

    for i in range(5):
        before = fusion_stats()
        fl, tl = step(fm, f_opt, f_x[i], f_y[i]), step(tm, t_opt, t_x[i], t_y[i])
        after = fusion_stats()
        flushed = (
            after["segments_replayed"] + after["segment_hits"] - before["segments_replayed"] - before["segment_hits"]
        )
        assert flushed == (2 if i == 0 else 1), (i, flushed)  # a first sight checks at the call
        np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-5)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        step(fm, f_opt, f_x[5], f_y[5])  # the dataset's row: at the call
    fjax.sync()

    def gathered(k):
        idx = fjax.tensor([[0], [1]]) + 0  # computed: pending
        return fjax.ones(2, 3).gather(1, idx * k).sum()

    with pytest.raises(IndexError, match="gather"):
        gathered(3)  # a first sight: at the call
    assert gathered(2).item() == 2  # the check point repeats: checked at the host read
    out = gathered(3)
    with pytest.raises(IndexError, match="gather") as err:
        out.item()
    assert "test_lazy_fusion.py" in "".join(getattr(err.value, "__notes__", []))
    fjax.sync()  # nothing left to raise


def test_a_check_met_on_computed_values_defers_when_they_are_pending(fused):
    """An index check met once on computed indices (an epoch's short last batch, whose reads ran
    before its step) is noted: met again after the same ops with its indices pending (their
    reads recorded in the step now), it waits for the segment instead of computing them, so
    the step stays one segment; a bad index still raises at the host read."""
    fjax.manual_seed(0)  # (forgets the check points earlier tests saw)
    w = fjax.ones(5, 3)

    def step(idx):
        h = w
        for _ in range(8):  # pending ops before the check (the point: the last 8 ops)
            h = (h * 2).tanh()
        return h.gather(1, idx).sum()

    def flushes(fn):
        before = fusion_stats()
        fn()
        after = fusion_stats()
        return sum(after[k] - before[k] for k in ("segments_replayed", "segment_hits"))

    good = np.array([[0], [1], [2], [0], [1]])
    counts = [flushes(lambda: step(fjax.tensor(good)).item()) for _ in range(2)]
    counts.append(flushes(lambda: step(fjax.tensor(good) + 0).item()))
    assert counts == [1, 1, 1], counts  # computed indices: checked now; pending: deferred
    out = step(fjax.tensor(good) * 3)
    with pytest.raises(IndexError, match="gather"):
        out.item()
    fjax.sync()


def test_a_training_step_with_dropout_is_one_segment_with_eagers_masks(fused):
    """Dropout's key is drawn inside the step's segment (``Generator._pending_key`` records its
    ``fold_in``, and ``bernoulli``'s draw is recorded too): a training step with dropout layers
    is one program per step, not a segment per dropout, and a seeded run gives op-by-op eager's
    losses and weights."""

    def train(fusion, steps=6):
        fjax.config.eager_fusion = fusion
        fjax.manual_seed(3)
        m = fjax.nn.Sequential(
            fjax.nn.Linear(6, 16),
            fjax.nn.ReLU(),
            fjax.nn.Dropout(0.3),
            fjax.nn.Unflatten(1, (4, 4)),
            fjax.nn.Dropout1d(0.25),  # (channels: a bernoulli mask)
            fjax.nn.Flatten(),
            fjax.nn.Linear(16, 3),
            fjax.nn.Dropout(0.2),
        )
        opt = fjax.optim.Adam(m.parameters(), lr=0.01)
        x, y = fjax.randn(8, 6), fjax.randint(0, 3, (8,))
        losses, flushed = [], []
        for _ in range(steps):
            before = fusion_stats()
            opt.zero_grad()
            loss = fjax.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            after = fusion_stats()
            flushed.append(sum(after[k] - before[k] for k in ("segments_replayed", "segment_hits")))
        return losses, [p.detach().numpy() for p in m.parameters()], flushed

    want, want_params, _ = train(False)
    got, got_params, flushed = train(True)
    assert flushed[2:] == [1] * 4, flushed  # one segment per step
    assert len(set(want)) == len(want)  # (the masks differ step to step)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for g, w in zip(got_params, want_params):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("computed", [True, False], ids=["computed_actions", "host_actions"])
def test_a_policy_step_with_distribution_checks_and_clipping_is_one_program(fused, computed):
    """A Categorical made from a step's logits validates them, ``log_prob`` validates its
    actions (computed in the step, or chosen on the host), ``clip_grad_norm_`` scales the
    gradients: none of them ends the step's segment once the loop repeats, and the numbers are
    torch's. An invalid argument in the repeated loop raises torch's ValueError at the next host
    read; a first sight raises at the call."""
    fjax.manual_seed(0)  # (forgets the check points earlier tests saw)
    rng = np.random.default_rng(6)
    fm, tm = fjax.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    fm.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    f_opt, t_opt = fjax.optim.SGD(fm.parameters(), lr=0.5), torch.optim.SGD(tm.parameters(), lr=0.5)

    def step(lib, m, opt, x, a):
        dist = lib.distributions.Categorical(logits=m(lib.tensor(x)))
        actions = lib.tensor(a) + 0 if computed else lib.tensor(a)
        loss = -(dist.log_prob(actions) * 2).mean() - dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        lib.nn.utils.clip_grad_norm_(m.parameters(), 0.1)
        opt.step()
        return loss

    for i in range(6):
        x, a = rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 3, 6)
        before = fusion_stats()
        fl, tl = step(fjax, fm, f_opt, x, a), step(torch, tm, t_opt, x, a)
        after = fusion_stats()
        flushed = (
            after["segments_replayed"] + after["segment_hits"] - before["segments_replayed"] - before["segment_hits"]
        )
        if i >= 3:  # each of its 3 checks was seen (and ended the segment) once
            assert flushed == 1, (i, flushed)
        np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-5)
    for p, q in zip(fm.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    a[2] = 3  # outside the support
    with pytest.raises(ValueError, match="within the support") as err:
        step(fjax, fm, f_opt, x, a)  # at its segment's flush: the optimizer's step here
    assert "test_lazy_fusion.py" in "".join(getattr(err.value, "__notes__", []))
    fjax.sync()
    with pytest.raises(ValueError, match="within the support"):
        fjax.distributions.Categorical(logits=fjax.zeros(3) * 2).log_prob(fjax.tensor(5) + 0)  # at the call


def test_ops_are_pending_until_read(fused):
    x = fjax.randn(4, 5)
    y = (x.exp() + 1).sum(1)  # recorded at once: a trace gives the shapes, nothing runs
    assert _pending(y)
    assert y.shape == (4,) and y.dtype == fjax.float32 and y.device.type == "cpu"  # no flush for these
    assert _pending(y)
    np.testing.assert_allclose(y.numpy(), (np.exp(x.numpy()) + 1).sum(1), rtol=1e-6, atol=1e-6)
    assert not _pending(y)


def test_a_new_signature_raises_at_the_call(fused):
    x = fjax.randn(3, 4)
    y = (x + 1) * 2
    assert _pending(y)
    with pytest.raises(RuntimeError, match="broadcast"):
        y + fjax.ones(5)
    np.testing.assert_allclose(y.numpy(), (x.numpy() + 1) * 2, rtol=1e-6, atol=1e-6)


def test_views_and_in_place_writes_through_pending_values(fused):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    for _ in range(3):  # the 2nd and 3rd rounds record; the 3rd runs a compiled segment
        x = fjax.tensor(a)
        t = torch.tensor(a)
        fy, ty = x * 2, t * 2
        fv, tv = fy.view(6, 4)[1:3], ty.view(6, 4)[1:3]  # views of a pending value
        fv.mul_(-1)
        tv.mul_(-1)
        fz, tz = fy.t() + 1, ty.t() + 1
        fy.add_(fz.t())
        ty.add_(tz.t())
        np.testing.assert_array_equal(fv.numpy(), tv.numpy())
        np.testing.assert_array_equal(fy.numpy(), ty.numpy())
        np.testing.assert_array_equal(fz.numpy(), tz.numpy())


def test_writes_into_a_buffer_through_views_stay_in_the_segment(fused):
    """A rollout buffer filled row by row (``buf[i].copy_(x)``, ``buf[i] = expr``) is recorded: the
    writes and the reads of the buffer's other views join the segment instead of flushing it at
    every write; every alias sees every write, as torch's."""
    rng = np.random.default_rng(2)
    steps = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(5)]
    for _ in range(3):  # the 1st round runs op by op, the later ones as one program
        fb, tb = fjax.zeros(6, 3, 4), torch.zeros(6, 3, 4)
        f_rows, t_rows = fb[1:], tb[1:]  # a view made before the writes
        for i, s in enumerate(steps):
            fb[i + 1].copy_(fb[i] * 0.5 + fjax.tensor(s))
            tb[i + 1].copy_(tb[i] * 0.5 + torch.tensor(s))
            fb[i, :, 0] = fb[i + 1, :, 1].exp()
            tb[i, :, 0] = tb[i + 1, :, 1].exp()
        assert _pending(fb) and fb._version == tb._version
        before = fusion_stats()
        total = f_rows.sum()
        assert _pending(total)  # nothing has run yet: the writes did not flush
        np.testing.assert_allclose(total.item(), t_rows.sum().item(), rtol=1e-5)
        after = fusion_stats()
        flushed = after["segments_replayed"] + after["segment_hits"]
        assert flushed - before["segments_replayed"] - before["segment_hits"] == 1
        np.testing.assert_allclose(fb.numpy(), tb.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(f_rows.numpy(), t_rows.numpy(), rtol=1e-6, atol=1e-6)


def test_a_row_written_from_host_data_after_a_host_read_joins_the_next_segment(fused):
    """An environment loop's pattern: after each host read nothing is pending, and the next rows
    come from numpy (``buf[t + 1].copy_(torch.from_numpy(obs))``). Each write is recorded, not
    dispatched alone, so it runs with the next step's ops; every alias sees it, as torch's."""
    rng = np.random.default_rng(3)
    fb, tb = fjax.zeros(4, 2, 3), torch.zeros(4, 2, 3)
    f_rows, t_rows = fb[1:], tb[1:]
    for t in range(3):
        obs = rng.standard_normal((2, 3)).astype(np.float32)
        fjax.sync()  # (a host read's flush: nothing pending)
        fb[t + 1].copy_(fjax.from_numpy(obs))
        tb[t + 1].copy_(torch.from_numpy(obs))
        assert type(fb._st.array) is _lazy.Pending  # recorded, not run
        fb[t, :, 0] = 2.0
        tb[t, :, 0] = 2.0
        np.testing.assert_array_equal(f_rows.sum(0).numpy(), t_rows.sum(0).numpy())
    np.testing.assert_array_equal(fb.numpy(), tb.numpy())
    assert fb._version == tb._version


def test_version_counter_errors_still_raise(fused):
    for _ in range(3):
        w = fjax.randn(3, requires_grad=True)
        a = fjax.randn(3) + 0
        y = (w * a).sum()
        a.add_(1)  # mul saved a for w's gradient: backward must refuse
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_gradients_match_unfused(fused):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 7)).astype(np.float32)
    grads = {}
    for mode in (False, True, True, True):
        fjax.config.eager_fusion = mode
        w = fjax.tensor(a, requires_grad=True)
        h = (w.tanh() @ w.t()).softmax(-1)
        loss = (h * h.log()).sum() + w.pow(2).mean()
        loss.backward()
        grads.setdefault(mode, []).append(w.grad.numpy())
    for g in grads[True]:
        np.testing.assert_allclose(g, grads[False][0], rtol=1e-5, atol=1e-6)


def test_same_program_same_bits_every_run(fused):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 8)).astype(np.float32)

    def run():
        x = fjax.tensor(a)
        for _ in range(3):
            x = (x @ x.t() / 8).sin() + x
        return x.numpy()

    first = run()
    runs = [run() for _ in range(4)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])  # fused runs agree bit for bit
    np.testing.assert_allclose(runs[0], first, rtol=1e-5, atol=1e-6)  # and with the op-by-op first run


def _seeded_training(steps=4):
    fjax.manual_seed(0)
    nn, F = fjax.nn, fjax.nn.functional
    model = nn.Sequential(
        nn.Linear(16, 64), nn.GELU(), nn.LayerNorm(64), nn.Dropout(0.2), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10)
    )
    opt = fjax.optim.Adam(model.parameters(), lr=1e-2)
    x, y = fjax.randn(32, 16), fjax.randint(0, 10, (32,))
    losses = []
    for _ in range(steps):  # the step's segment: op by op at its first sight, its program from then on
        loss = F.cross_entropy(model(x).softmax(-1).log() * 1.3, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), [p.detach().numpy() for p in model.parameters()]


def test_a_seeded_rerun_gives_the_first_runs_bits(fused):
    """manual_seed restarts fusion's history (fjax._lazy.restart): each segment of a rerun runs as
    it ran the first time (a first sight op by op, a repeat as one program), so the same bits,
    though a fused program may round differently from the op-by-op path."""
    first_losses, first_params = _seeded_training()
    for _ in range(2):
        losses, params = _seeded_training()
        np.testing.assert_array_equal(losses, first_losses)
        for p, q in zip(params, first_params):
            np.testing.assert_array_equal(p, q)


def test_pending_values_cross_threads(fused):
    x = fjax.randn(16)
    x.exp() * 3
    y = x.exp() * 3
    assert _pending(y)
    out = {}

    def reader():
        out["v"] = (y + 1).numpy()

    th = threading.Thread(target=reader)
    th.start()
    th.join()
    np.testing.assert_allclose(out["v"], np.exp(x.numpy()) * 3 + 1, rtol=1e-6, atol=1e-6)


def test_graph_step_after_pending_eager_work(fused):
    lin = fjax.nn.Linear(4, 2)
    opt = fjax.optim.SGD(lin.parameters(), lr=0.1)

    class G(fjax.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.lin(x).sum()
            loss.backward()
            return loss

    g = G()
    x = fjax.randn(3, 4)
    for _ in range(3):
        norm = lin.weight.detach().norm()  # pending, reads the weight the step donates
        norm2 = lin.weight.detach().norm()
        before = lin.weight.detach().numpy().copy()
        g(x)
        np.testing.assert_allclose(norm.item(), np.linalg.norm(before), rtol=1e-5)
        np.testing.assert_allclose(norm2.item(), np.linalg.norm(before), rtol=1e-5)


def test_off_switch_runs_op_by_op():
    saved, fjax.config.eager_fusion = fjax.config.eager_fusion, False
    try:
        x = fjax.randn(3)
        for _ in range(3):
            y = x.exp() + 1
            assert not _pending(y)
    finally:
        fjax.config.eager_fusion = saved


def test_nothing_is_recorded_inside_the_profiler(fused):
    x = fjax.randn(4)
    x.exp() * 2
    with fjax.profiler.profile() as prof:
        y = x.exp() * 2
        assert not _pending(y)
    assert any(e.key == "exp" for e in prof.key_averages())


def test_only_referenced_values_leave_the_program(fused):
    import jax

    x = fjax.randn(64, 64)
    for step in range(4):  # step 0 runs op by op (the segment's first sight); then its program
        h = x
        for _ in range(6):
            h = (h @ x).tanh()
        held = jax.live_arrays()  # held, so a freed array's id cannot be reused by a new one
        before = {id(a) for a in held}
        fjax.sync()
        new = [a for a in jax.live_arrays() if id(a) not in before]
        del held
        if step:
            assert len(new) == 1, [a.shape for a in new]  # h, not its 11 intermediates
        h.numpy()


def test_a_first_sight_run_op_by_op_frees_each_value_after_its_last_use():
    import gc

    import jax
    import jax.numpy as jnp

    live = []

    def step(a):  # (a dropped value is freed by its reference count: no gc.collect, ~2 s each in a full worker)
        live.append(len(jax.live_arrays()))
        return jnp.tanh(a)

    ops = [(step, (0,))] + [(step, (~k,)) for k in range(29)]  # a chain: op k reads op k-1's value
    gc.collect()
    before = len(jax.live_arrays())
    (out,) = _lazy._replay(ops, (29,), [jnp.ones((64, 64))])
    assert max(live) <= before + 2, live  # the input and the value being read, not the whole chain
    v = np.float32(1.0)
    for _ in range(30):
        v = np.tanh(v)
    np.testing.assert_allclose(np.asarray(out), np.full((64, 64), v), rtol=1e-6)


def test_the_same_ops_at_a_new_length_compile_one_program(fused):
    """A decode step at a sequence one longer: the same ops and wiring at new shapes, every kernel
    new. From the second length on it compiles as one program (not a kernel per op), and gives
    the op-by-op values within float tolerance."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 8)).astype(np.float32) / 3

    def step(n, on):  # dim 0 stays 1: nothing bucketed (fjax._bucket pads a changing dim 0)
        x = on.tensor(rng_x[:, :n])
        h = (x @ on.tensor(w)).tanh()
        att = (h @ h.transpose(1, 2)).softmax(-1)
        return (att @ h).sum(1).tolist()

    rng_x = rng.standard_normal((1, 40, 8)).astype(np.float32)
    fjax.manual_seed(0)  # a fresh history
    before = fusion_stats()
    got = [step(n, fjax) for n in range(31, 37)]
    after = fusion_stats()
    assert after["segments_replayed"] - before["segments_replayed"] == 1  # the first length only
    assert after["segment_compiles"] - before["segment_compiles"] == 5
    for n, g in zip(range(31, 37), got):
        np.testing.assert_allclose(g, step(n, torch), rtol=1e-5, atol=1e-5)


def _flushes():
    s = fusion_stats()
    return s["segments_replayed"] + s["segment_hits"]


@pytest.mark.parametrize("how", ["create_graph", "functorch"])
def test_second_order_steps_stay_one_segment(fused, how):
    """A gradient penalty / MAML-style inner step (``autograd.grad(..., create_graph=True)``, or
    ``torch.func.grad`` of a functional call) on a step's pending values records its program in
    the step's segment instead of running what came before: one program per step once the loop
    repeats, torch's numbers."""
    fjax.manual_seed(0)
    rng = np.random.default_rng(7)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    fm = fjax.nn.Sequential(fjax.nn.Linear(3, 8), fjax.nn.Tanh(), fjax.nn.Linear(8, 1))
    fm.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    f_opt, t_opt = fjax.optim.Adam(fm.parameters(), lr=0.01), torch.optim.Adam(tm.parameters(), lr=0.01)

    def step(lib, m, opt, x):
        x = lib.tensor(x) * 1.0  # pending under fusion
        x.requires_grad_(True)
        if how == "create_graph":
            y = m(x).sum()
            (g,) = lib.autograd.grad(y, x, grad_outputs=lib.ones_like(y), create_graph=True)
            loss = (g * g).sum() + y
        else:
            params = dict(m.named_parameters())

            def inner(p, x):
                return lib.func.functional_call(m, p, (x,)).pow(2).mean()

            grads = lib.func.grad(inner)(params, x.detach())
            loss = sum((g * g).sum() for g in grads.values()) + m(x).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for i in range(5):
        x = rng.standard_normal((4, 3)).astype(np.float32)
        before = _flushes()
        fl, tl = step(fjax, fm, f_opt, x), step(torch, tm, t_opt, x)
        flushed = _flushes() - before
        if i >= 2:
            assert flushed == 1, (i, flushed)
        np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-4, atol=1e-6)
    for p, q in zip(fm.parameters(), tm.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_a_step_compiles_once_whatever_its_arguments_are_committed_to(fused):
    """A training step's program compiles once: its parameters start uncommitted (made by
    ``fjax.nn.Linear``) and come back committed to the device from the first update (the batch is
    committed: a ``device_put`` array, as data moved with ``.to(device)`` is), and a Python int
    becomes a cached device scalar after a few uses (``dispatch._device_int``); neither changes
    the segment's key, and neither compiles its program again."""
    fjax.manual_seed(0)
    m = fjax.nn.Sequential(fjax.nn.Linear(6, 8), fjax.nn.Tanh(), fjax.nn.Linear(8, 1))
    opt = fjax.optim.SGD(m.parameters(), lr=0.05)
    assert not m[0].weight._data.committed
    batch = np.random.default_rng(5).standard_normal((3, 4, 6)).astype(np.float32)
    xs = fjax.tensor(jax.device_put(batch, jax.devices()[0]))
    counts = []
    for step in range(30):  # (each position's 8th use makes it a device scalar: steps 21-23)
        before = fjax.profiler.compile_count()
        opt.zero_grad()
        loss = m(xs[step % 3] * (step % 3 + 1)).pow(2).mean()  # Python ints, used again and again
        loss.backward()
        opt.step()
        loss.item()
        counts.append(fjax.profiler.compile_count() - before)
    assert m[0].weight._data.committed
    assert sum(counts[1:]) == 0, counts  # (the first step compiles its program and kernels)


def test_a_long_loop_without_host_reads_repeats_its_segments(fused):
    """A sampler's loop of 1,200 ops with no host read: the segment that reaches ``_MAX_OPS``
    runs op by op and marks where it ended in the loop's body; later segments end at that place
    once ``_LONG`` ops long, so they repeat: later runs compile short programs (not 1,000 ops:
    seconds of XLA), each once. Values are torch's."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 6)).astype(np.float32) / 3
    x0 = rng.standard_normal((3, 6)).astype(np.float32)

    def sample(lib):
        x, wt = lib.tensor(x0), lib.tensor(w)
        for i in range(300):  # 4 ops a step, a new Python float each time
            x = x - (0.001 * (i % 7)) * (x @ wt).tanh()
        return x

    sizes = []
    real = _lazy._execute

    def spy(key, ops, outputs, ext, trains=False, pending=None):
        prog_key = _lazy.program_key(key, outputs, ext)
        if prog_key not in _lazy._programs and prog_key in _lazy._sighted:
            sizes.append(len(ops))  # a program compiles
        return real(key, ops, outputs, ext, trains, pending)

    fjax.manual_seed(0)  # a fresh history
    expected = sample(torch).numpy()
    try:
        _lazy._execute = spy
        for run in range(4):
            sizes.clear()
            got = sample(fjax).numpy()
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
            if run == 1:
                assert sizes, "the repeating segments compile"
            if run:
                assert max(sizes, default=0) <= 2 * _lazy._LONG, sizes
            if run == 3:
                assert sizes == [], sizes
    finally:
        _lazy._execute = real
