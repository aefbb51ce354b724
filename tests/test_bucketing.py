"""Bucketed dimensions (fjax._bucket): an op whose batch met new sizes in three steps runs padded
to a bucket, and its results (values, gradients, shapes, aliasing) are torch's.

Every op whose record declares rows (``OpDef.rows``) has a case below: the test fails if an op
gains rows without one.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
import fjax.nn.functional as F
from fjax.ops._registry import OPS

RNG = np.random.default_rng()


@pytest.fixture(autouse=True)
def _unseen_signatures():
    """Eager fusion's known signatures forgotten too: a call recorded at a signature another
    test taught it is not counted toward padding (its size was counted when it first ran)."""
    fjax._lazy._seen.clear()


def _x(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# op name -> (function of the library (torch or fjax) and the batch size n, returning the inputs), call
CASES = {
    "relu": (lambda n: [_x(n, 5)], lambda L, x: L.relu(x)),
    "leaky_relu": (lambda n: [_x(n, 5)], lambda L, x: L.nn.functional.leaky_relu(x, 0.2)),
    "elu": (lambda n: [_x(n, 5)], lambda L, x: L.nn.functional.elu(x)),
    "gelu": (lambda n: [_x(n, 5)], lambda L, x: L.nn.functional.gelu(x, approximate="tanh")),
    "silu": (lambda n: [_x(n, 5)], lambda L, x: L.nn.functional.silu(x)),
    "softplus": (lambda n: [_x(n, 5)], lambda L, x: L.nn.functional.softplus(x)),
    "exp": (lambda n: [_x(n, 5)], lambda L, x: L.exp(x)),
    "sigmoid": (lambda n: [_x(n, 5)], lambda L, x: L.sigmoid(x)),
    "tanh": (lambda n: [_x(n, 5)], lambda L, x: L.tanh(x)),
    "neg": (lambda n: [_x(n, 5)], lambda L, x: L.neg(x)),
    "add": (lambda n: [_x(n, 5), _x(5)], lambda L, x, b: L.add(x, b, alpha=2)),
    "sub": (lambda n: [_x(n, 1), _x(n, 5)], lambda L, x, y: x - y),
    "mul": (lambda n: [_x(n, 5), _x(1, 5)], lambda L, x, y: x * y * 3.0),
    "div": (lambda n: [_x(n, 5), _x(n, 5) + 4], lambda L, x, y: x / y),
    "softmax": (lambda n: [_x(n, 3, 6)], lambda L, x: L.softmax(x, dim=-1)),
    "log_softmax": (lambda n: [_x(n, 6, 3)], lambda L, x: L.log_softmax(x, dim=1)),
    "matmul": (lambda n: [_x(n, 4, 6), _x(6, 3)], lambda L, x, w: x @ w),
    "linear": (lambda n: [_x(n, 6), _x(4, 6), _x(4)], lambda L, x, w, b: L.nn.functional.linear(x, w, b)),
    "layer_norm": (
        lambda n: [_x(n, 3, 6), _x(6), _x(6)],
        lambda L, x, w, b: L.nn.functional.layer_norm(x, (6,), w, b),
    ),
    "embedding": (
        lambda n: [RNG.integers(0, 7, (n, 3)), _x(7, 4)],
        lambda L, i, w: L.nn.functional.embedding(i, w),
    ),
    "cross_entropy": (
        lambda n: [_x(n, 5), np.where(RNG.random(n) < 0.2, -100, RNG.integers(0, 5, n)), _x(5) ** 2 + 0.5],
        lambda L, x, t, w: L.nn.functional.cross_entropy(x, t, weight=w, label_smoothing=0.1),
    ),
    "index_add": (
        lambda n: [_x(6, 5), RNG.integers(0, 6, n), _x(n, 5)],
        lambda L, x, i, s: x.index_add(0, i, s, alpha=2),
    ),
    "mse_loss": (lambda n: [_x(n, 4), _x(n, 4)], lambda L, x, y: L.nn.functional.mse_loss(x, y, reduction="sum")),
    # a routed expert's rows: a gather by a data-dependent index, with a second index or a mask
    "getitem": (
        lambda n: [_x(7, 4, 3), RNG.integers(0, 7, n), RNG.integers(-4, 4, n)],
        lambda L, x, rows, cols: x[rows] * 2 + x[rows, cols].unsqueeze(1) + x[:, 1:3][rows, 0].unsqueeze(1),
    ),
    "index_select": (
        lambda n: [_x(6, 5), RNG.integers(0, 6, n)],
        lambda L, x, i: L.index_select(x, 0, i),
    ),
    "unsqueeze": (lambda n: [_x(n, 5)], lambda L, x: x.unsqueeze(-1) * x.unsqueeze(1)),
    "transpose": (lambda n: [_x(n, 3, 4)], lambda L, x: x.transpose(1, 2) @ x),
    "_copy": (lambda n: [_x(n, 3)], lambda L, x: L.tanh(x).clone()),
    "permute": (lambda n: [_x(n, 3, 4)], lambda L, x: x.permute(0, 2, 1) @ x),
    "squeeze": (lambda n: [_x(n, 1, 4)], lambda L, x: L.relu(x).squeeze(1) + L.tanh(x).squeeze()),
    "flatten": (lambda n: [_x(n, 2, 3)], lambda L, x: L.flatten(x, 1) * 2),
    # a shape that names the batch size (a padded input: its bucket's kernel)
    "reshape": (lambda n: [_x(n, 6)], lambda L, x: L.tanh(x).reshape(x.shape[0], 2, 3) * 2),
    "view": (lambda n: [_x(n, 2, 3)], lambda L, x: L.tanh(x).view(x.shape[0], -1).view(x.shape[0], 3, 2)),
    # per row, or a total over the batch (padding rows left out)
    "sum": (
        lambda n: [_x(n, 5)],
        lambda L, x: (
            x.sum(-1) + x.sum() + x.sum((1,), keepdim=True).sum(1) + x.sum(0)[1] * x.sum(0, keepdim=True)[0, 2]
        ),
    ),
    "mean": (
        lambda n: [_x(n, 3, 4)],
        lambda L, x: (
            x.mean(1, keepdim=True) * x.mean() + x.mean((), keepdim=True) + x.mean((0, 2))[1] + x.mean(0, keepdim=True)
        ),
    ),
    "rms_norm": (lambda n: [_x(n, 3, 6), _x(6)], lambda L, x, w: L.nn.functional.rms_norm(x, (6,), w, eps=1e-6)),
    "group_norm": (
        lambda n: [_x(n, 4, 5), _x(4), _x(4)],
        lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b),
    ),
    "instance_norm": (lambda n: [_x(n, 3, 7)], lambda L, x: L.nn.functional.instance_norm(x)),
    "batch_norm": (  # training: the real rows' statistics; eval: the running ones
        lambda n: [_x(n, 3, 4), _x(3), _x(3) ** 2 + 0.5, _x(3), _x(3)],
        lambda L, x, m, v, w, b: (
            L.nn.functional.batch_norm(x, None, None, w, b, training=True)
            + L.nn.functional.batch_norm(x, m.detach(), v.detach(), w, b, training=False)
        ),
    ),
}
for _name in ("square", "abs", "reciprocal", "sign", "sin", "cos", "erf", "expm1"):
    CASES[_name] = (lambda n: [_x(n, 5) + 0.1], lambda L, x, name=_name: getattr(L, name)(x))
for _name in ("sqrt", "rsqrt", "log", "log1p"):  # a positive domain
    CASES[_name] = (lambda n: [np.abs(_x(n, 5)) + 0.5], lambda L, x, name=_name: getattr(L, name)(x))
for _name in ("relu6", "mish", "hardswish", "hardsigmoid", "selu", "logsigmoid", "hardtanh", "celu"):
    CASES[_name] = (lambda n: [3 * _x(n, 5)], lambda L, x, name=_name: getattr(L.nn.functional, name)(x))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):  # a bool result, as a factor
    CASES[_name] = (
        lambda n: [_x(n, 5), np.round(_x(n, 1))],
        lambda L, x, y, name=_name: getattr(L, name)(L.round(x), y) * x,
    )
CASES.update(
    {
        "pow": (lambda n: [np.abs(_x(n, 5)) + 0.5, _x(5)], lambda L, x, e: x**e + x**2 + L.pow(2.0, x)),
        "maximum": (lambda n: [_x(n, 5), _x(n, 5)], lambda L, x, y: L.maximum(x, y)),
        "minimum": (lambda n: [_x(n, 5), _x(1, 5)], lambda L, x, y: L.minimum(x, y)),
        "clamp": (lambda n: [_x(n, 5), _x(5) - 1], lambda L, x, lo: L.clamp(x, lo, lo + 1.5) + x.clamp(min=-0.5)),
        "where": (lambda n: [_x(n, 5), _x(n, 5)], lambda L, x, y: L.where(x > 0, x, y) + L.where(y < 0, 1.0, y)),
        "masked_fill": (lambda n: [_x(n, 5)], lambda L, x: x.masked_fill(x < 0, -2.0) * x),
    }
)
CASES.update(  # within each row: reductions, scans, sorts, concatenations and splits along another dim
    {
        "argmax": (lambda n: [_x(n, 5)], lambda L, x: x * L.argmax(x, 1, keepdim=True)),
        "argmin": (lambda n: [_x(n, 5)], lambda L, x: x * x.argmin(-1).unsqueeze(1)),
        "max": (lambda n: [_x(n, 5)], lambda L, x: x.max(1).values + x.max(-1, keepdim=True)[1].squeeze(1)),
        "min": (lambda n: [_x(n, 5)], lambda L, x: x.min(1)[0] * 2),
        "amax": (lambda n: [_x(n, 3, 4)], lambda L, x: L.amax(x, (1, 2))),
        "amin": (lambda n: [_x(n, 3, 4)], lambda L, x: L.amin(x, -1)),
        "logsumexp": (lambda n: [_x(n, 5)], lambda L, x: L.logsumexp(x, 1)),
        "cumsum": (lambda n: [_x(n, 5)], lambda L, x: L.cumsum(x, 1)),
        "cumprod": (lambda n: [_x(n, 5)], lambda L, x: L.cumprod(x, -1)),
        "var": (lambda n: [_x(n, 5)], lambda L, x: L.var(x, 1)),
        "std": (lambda n: [_x(n, 5)], lambda L, x: L.std(x, -1, keepdim=True)),
        "prod": (lambda n: [_x(n, 5)], lambda L, x: (x * 0.1 + 1).prod(1)),
        "topk": (lambda n: [_x(n, 6)], lambda L, x: x.topk(2, dim=1).values * 3),
        "_cast": (lambda n: [_x(n, 5)], lambda L, x: (x > 0).float() * x + x.double().float()),
        "one_hot": (
            lambda n: [RNG.integers(0, 4, n), _x(n, 4)],
            lambda L, i, x: L.nn.functional.one_hot(i, 4) * x,
        ),
        "cat": (lambda n: [_x(n, 2), _x(n, 3)], lambda L, x, y: L.cat([L.tanh(x), y], dim=1)),
        "stack": (lambda n: [_x(n, 2), _x(n, 2)], lambda L, x, y: L.stack([L.tanh(x), y], dim=-1)),
        "split": (lambda n: [_x(n, 6)], lambda L, x: L.tanh(x).split([2, 4], 1)[1] * 2),
        "chunk": (lambda n: [_x(n, 6)], lambda L, x: L.tanh(x).chunk(3, dim=1)[2] * 2),
        "gather": (
            lambda n: [_x(n, 5), RNG.integers(0, 5, (n, 3))],
            lambda L, x, i: L.gather(L.tanh(x), 1, i),
        ),
    }
)
_SPATIAL = {1: (7,), 2: (5, 6), 3: (4, 3, 5)}
for _k, _size in _SPATIAL.items():  # a CNN on a batch of images: convolutions and pooling over the samples
    CASES[f"conv{_k}d"] = (
        lambda n, s=_size, k=_k: [_x(n, 2, *s), _x(3, 2, *(2,) * k), _x(3)],
        lambda L, x, w, b, k=_k: getattr(L.nn.functional, f"conv{k}d")(x, w, b, padding=1),
    )
    CASES[f"conv_transpose{_k}d"] = (
        lambda n, s=_size, k=_k: [_x(n, 2, *s), _x(2, 3, *(2,) * k)],
        lambda L, x, w, k=_k: getattr(L.nn.functional, f"conv_transpose{k}d")(x, w, stride=2),
    )
    CASES[f"max_pool{_k}d"] = (
        lambda n, s=_size: [_x(n, 2, *s)],
        lambda L, x, k=_k: getattr(L.nn.functional, f"max_pool{k}d")(x, 2, ceil_mode=True),
    )
    CASES[f"avg_pool{_k}d"] = (
        lambda n, s=_size: [_x(n, 2, *s)],
        lambda L, x, k=_k: getattr(L.nn.functional, f"avg_pool{k}d")(x, 2, padding=1),
    )
    CASES[f"adaptive_avg_pool{_k}d"] = (
        lambda n, s=_size: [_x(n, 2, *s)],
        lambda L, x, k=_k: getattr(L.nn.functional, f"adaptive_avg_pool{k}d")(x, 2),
    )
    CASES[f"adaptive_max_pool{_k}d"] = (
        lambda n, s=_size: [_x(n, 2, *s)],
        lambda L, x, k=_k: getattr(L.nn.functional, f"adaptive_max_pool{k}d")(x, 3),
    )


RANDOM = {"dropout"}  # no torch numbers to match: checked by what the result must satisfy
# rows for padded dims only (``Rows.dims``; no batch: a window view reads a real batch): their
# cases are in test_bucketing_sequence.py
PADDED_DIMS_ONLY = {"narrow", "select"}


def test_every_op_with_rows_has_a_case():
    assert {name for name, op in OPS.items() if op.rows is not None} == set(CASES) | RANDOM | PADDED_DIMS_ONLY


def test_a_reduction_over_the_batch_pads():
    """``x.sum(0)``, ``x.mean((0, 2))``: a reduction over dim 0 runs on the bucket with its
    padding rows left out (the sum's identity, the mean's count of real rows)."""
    for n in (9, 10, 11, 13, 21, 30):
        data = _x(n, 3, 4)
        x, t = fjax.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        before = fjax.profiler.bucket_stats()["ops"]
        before = before.get("sum", 0) + before.get("mean", 0)
        f_out = [x.sum(0), x.mean((0, 2), keepdim=True)]
        t_out = [t.sum(0), t.mean((0, 2), keepdim=True)]
        (f_out[0].sum() + (f_out[1] ** 2).sum()).backward()
        (t_out[0].sum() + (t_out[1] ** 2).sum()).backward()
        for f, w in zip(f_out, t_out):
            np.testing.assert_allclose(f.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
        after = fjax.profiler.bucket_stats()["ops"]
        if n >= 13:  # the 4th size on: both padded
            assert after.get("sum", 0) + after.get("mean", 0) - before >= 2, n


def test_padded_dropout_keeps_or_scales_each_real_element():
    """Dropout on a bucket draws its mask at the bucket's shape: each real element is zeroed or
    scaled by 1/(1-p), about p of them zeroed, and the gradient is the same mask."""
    fjax.manual_seed(int(RNG.integers(1 << 30)))
    for n in (40, 50, 60, 70, 90):
        data = _x(n, 64) + 3.0  # no zeros of its own
        x = fjax.tensor(data, requires_grad=True)
        before = fjax.profiler.bucket_stats()["ops"].get("dropout", 0)
        y = F.dropout(x * 1.0, p=0.3)
        y.sum().backward()
        out = y.detach().numpy()
        assert out.shape == (n, 64)
        kept = out != 0
        np.testing.assert_allclose(out[kept], data[kept] / 0.7, rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), kept / 0.7, rtol=1e-6)
        assert abs(1 - kept.mean() - 0.3) < 0.05
        if n >= 70:
            assert fjax.profiler.bucket_stats()["ops"].get("dropout", 0) > before, f"dropout did not pad at n={n}"


# class weights, running statistics, what a comparison reads: no gradient
NO_GRAD = {"cross_entropy": {2}, "batch_norm": {1, 2}, **{c: {1} for c in ("eq", "ne", "lt", "le", "gt", "ge")}}


def _run(lib, fn, arrays, no_grad=()):
    """``fn`` on ``arrays`` in ``lib``: its output and the gradients of a weighted sum of it."""
    leaves = [lib.tensor(a, requires_grad=a.dtype.kind == "f" and i not in no_grad) for i, a in enumerate(arrays)]
    out = fn(lib, *leaves)
    weights = np.random.default_rng(out.numel()).standard_normal(tuple(out.shape)).astype(np.float32)
    w = lib.tensor(weights)  # the same for both libraries
    (out * w).sum().backward()
    return out, [t.grad for t in leaves if t.requires_grad]


@pytest.mark.parametrize("name", sorted(CASES))
def test_padded_op_matches_torch(name):
    """Three steps with new sizes make the op pad; every later size runs on a bucket and matches
    torch, forward and gradients, and the result shows the real shape."""
    make, fn = CASES[name]
    for n in (9, 10, 11, 13, 21, 30):
        arrays = make(n)
        before = fjax.profiler.bucket_stats()["ops"].get(name, 0)
        f_out, f_grads = _run(fjax, fn, arrays, NO_GRAD.get(name, ()))
        t_out, t_grads = _run(torch, fn, arrays, NO_GRAD.get(name, ()))
        assert tuple(f_out.shape) == tuple(t_out.shape)
        want = t_out.detach().numpy()
        # (a sum of many terms that cancel, summed in another order on the bucket: its rounding's scale)
        np.testing.assert_allclose(
            f_out.detach().numpy(), want, rtol=1e-5, atol=1e-5 * max(1, np.abs(want).max()), err_msg=f"{name} n={n}"
        )
        for fg, tg in zip(f_grads, t_grads):
            assert tuple(fg.shape) == tuple(tg.shape)
            scale = max(1, np.abs(tg.numpy()).max())  # a sum of large terms that cancel: its rounding's scale
            np.testing.assert_allclose(fg.numpy(), tg.numpy(), rtol=1e-4, atol=1e-5 * scale, err_msg=f"{name} n={n}")
        if n >= 13:  # the 4th size on: padded
            assert fjax.profiler.bucket_stats()["ops"].get(name, 0) > before, f"{name} did not pad at n={n}"


def _mlp_pair(seed):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    f = fjax.nn.Sequential(fjax.nn.Linear(6, 16), fjax.nn.GELU(), fjax.nn.LayerNorm(16), fjax.nn.Linear(16, 4))
    f.load_state_dict({k: fjax.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return f, t


def _train_step_both(pairs, x, y, n):
    """One cross-entropy training step of each (library, model, optimizer) on ``x``, ``y``: their
    losses agree."""
    losses = []
    for lib, model, opt in pairs:
        loss = lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5, err_msg=f"n={n}")


def test_variable_batch_training_matches_torch_and_compiles_per_bucket():
    """A training loop whose batch changes every step: torch's losses and weights at every step;
    once each bucket ran, new sizes compile nothing."""
    f, t = _mlp_pair(int(RNG.integers(1 << 30)))
    f_opt, t_opt = fjax.optim.Adam(f.parameters(), lr=1e-2), torch.optim.Adam(t.parameters(), lr=1e-2)

    def step(n):
        _train_step_both(((fjax, f, f_opt), (torch, t, t_opt)), _x(n, 6), RNG.integers(0, 4, n), n)

    # three steps unpadded, then each bucket from 12 to 48 four times: its kernels compile at the
    # first sight, its fused forward at the second or third (eager fusion compiles a sequence seen
    # twice; kernels other tests ran already are recorded at their first sight here)
    for n in (5, 7, 33, 40, 47, 36, 38, 20, 23, 19, 21, 14, 15, 16, 13, 9, 10, 12, 11):
        step(n)
    before = fjax.profiler.compile_count()
    for n in (34, 41, 18, 17, 22, 45):  # new sizes, known buckets
        step(n)
    assert fjax.profiler.compile_count() == before
    for (name, p), q in zip(f.named_parameters(), t.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_a_new_bucket_borrows_a_larger_one_it_ran_then_gets_its_own(monkeypatch):
    """A size whose bucket never ran runs, for its bucket's first ``_RENT`` calls, at the smallest
    larger bucket the family ran at (at most ``_REUSE`` times as large): a step that compiles
    nothing, with torch's numbers; from then on at its own bucket (one compile)."""
    from fjax import _bucket

    monkeypatch.setattr(_bucket, "_RENT", 2)
    f, t = _mlp_pair(int(RNG.integers(1 << 30)))
    f_opt, t_opt = fjax.optim.SGD(f.parameters(), lr=1e-2), torch.optim.SGD(t.parameters(), lr=1e-2)

    def step(n):
        _train_step_both(((fjax, f, f_opt), (torch, t, t_opt)), _x(n, 6), RNG.integers(0, 4, n), n)

    for n in (5, 7, 33, 40, 47, 36, 38, 45, 44, 41):  # three unpadded, then bucket 48 only
        step(n)
    before, padded = fjax.profiler.compile_count(), fjax.profiler.bucket_stats()["padded_elements"]
    step(20)  # bucket 24: borrows 48 (28 padding rows of 6 at the first Linear)
    step(17)
    assert fjax.profiler.compile_count() == before
    assert fjax.profiler.bucket_stats()["padded_elements"] - padded >= (28 + 31) * 6
    step(23)  # bucket 24's third call: its own bucket
    assert fjax.profiler.compile_count() > before
    step(9)  # bucket 12: 48 is four times as large, 24 is nearer
    for (name, p), q in zip(f.named_parameters(), t.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    key = next(k for k in _bucket._ran if k[0].op.name == "linear")
    assert _bucket._ran[key][24] == -1 and _bucket._ran[key][12] == 1


def test_a_few_fixed_batch_sizes_met_far_apart_never_pad():
    """Code with a few fixed shapes that one op meets in turn (a rollout's batch every step, an
    update's batch of the whole rollout, an evaluation's single row) runs unpadded: its sizes
    do not keep coming, so padding would only add copies."""
    f, t = _mlp_pair(int(RNG.integers(1 << 30)))
    before = fjax.profiler.bucket_stats()["calls"]
    for _ in range(3):
        for _ in range(20):  # the rollout: a host read per step
            x = _x(8, 6)
            np.testing.assert_allclose(f(fjax.tensor(x)).argmax(1).numpy(), t(torch.tensor(x)).argmax(1).numpy())
        x = _x(160, 6)  # the update on the whole rollout
        f(fjax.tensor(x)).sum().backward()
        for _ in range(3):  # the evaluation
            x = _x(1, 6)
            np.testing.assert_allclose(
                f(fjax.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), atol=1e-5
            )
    assert fjax.profiler.bucket_stats()["calls"] == before


def test_padded_results_behave_as_real_tensors():
    """A padded intermediate: its shape, strides, values, views, in-place writes, retained and
    hooked gradients and autograd.grad are those of its real rows."""
    w = _x(6, 4)
    for n in (3, 4, 5):  # three steps (host reads), three sizes: linear and tanh now pad
        F.linear(fjax.tensor(_x(n, 4)), fjax.tensor(w)).tanh().numpy()
    x = _x(11, 4)
    fw, tw = fjax.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    fh, th = F.linear(fjax.tensor(x), fw).tanh(), torch.nn.functional.linear(torch.tensor(x), tw).tanh()
    assert type(fh._a).__name__ == "Padded"
    assert fh.shape == (11, 6) and fh.stride() == th.stride() and fh.size(0) == 11
    seen = []
    fh.register_hook(lambda g: seen.append(tuple(g.shape)))
    fh.retain_grad()
    th.retain_grad()
    fv, tv = fh[2:5], th[2:5]
    f_out, t_out = (fh * fv.sum()).sum() + fh[-1].sum(), (th * tv.sum()).sum() + th[-1].sum()
    f_out.backward()
    t_out.backward()
    assert seen == [(11, 6)]
    np.testing.assert_allclose(fh.grad.numpy(), th.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)
    # autograd.grad with respect to a padded intermediate
    fh2 = F.linear(fjax.tensor(x), fw).tanh()
    (g,) = fjax.autograd.grad((fh2**2).sum(), fh2)
    np.testing.assert_allclose(g.numpy(), 2 * fh2.detach().numpy(), rtol=1e-6, atol=1e-6)
    # in place through a view of a padded result
    with fjax.no_grad():
        fh3 = F.linear(fjax.tensor(x), fw).tanh()
        fh3[0].zero_()
    with torch.no_grad():
        th3 = torch.nn.functional.linear(torch.tensor(x), tw).tanh()
        th3[0].zero_()
    np.testing.assert_allclose(fh3.numpy(), th3.numpy(), rtol=1e-5, atol=1e-6)


def test_bucket_ladder_and_off_switch():
    from fjax._bucket import bucket

    assert [bucket(n) for n in (1, 8, 9, 13, 25, 49, 97)] == [8, 8, 12, 16, 32, 64, 128]
    old = fjax.config.bucket_sizes
    try:
        fjax.config.bucket_sizes = [10, 100]
        assert [bucket(n) for n in (3, 11, 101)] == [10, 100, 101]
    finally:
        fjax.config.bucket_sizes = old
    fjax.config.bucketing = False
    try:
        before = fjax.profiler.bucket_stats()["calls"]
        for n in (3, 4, 5, 6, 7):
            fjax.sigmoid(fjax.tensor(_x(n, 2))).numpy()
        assert fjax.profiler.bucket_stats()["calls"] == before
    finally:
        fjax.config.bucketing = True


def test_fixed_shapes_never_pad():
    """Code whose shapes do not change never pads (two sizes, as train and eval batches, neither)."""
    before = fjax.profiler.bucket_stats()["calls"]
    for n in (17, 17, 17, 5, 17, 5):
        F.softplus(fjax.tensor(_x(n, 3)) * 2).numpy()
    assert fjax.profiler.bucket_stats()["calls"] == before


def test_a_loop_over_parameters_of_several_shapes_never_pads():
    """An optimizer's update loop meets every parameter's shape in each step, and the same ones
    every step: not a changing batch."""
    params = [fjax.randn(*s, requires_grad=True) for s in ((16, 8), (4, 8), (32, 8), (9, 8), (16,), (4,))]
    before = fjax.profiler.bucket_stats()["calls"]
    for _ in range(5):
        sum((p * p).sum() for p in params).backward()
        with fjax.no_grad():
            for p in params:
                p -= 0.1 * p.grad
                p.grad = None
    assert fjax.profiler.bucket_stats()["calls"] == before
    assert all(type(p._a).__name__ != "Padded" for p in params)


def test_gradients_reach_a_padded_result_however_it_was_used():
    """A padded intermediate used by a padded op, then read (its real rows), then hooked and
    differentiated against: torch's gradients, whichever op read it first."""
    w = _x(6, 4)
    for n in (3, 4, 5):
        fjax.exp(F.linear(fjax.tensor(_x(n, 4)), fjax.tensor(w))).numpy()
    x = _x(10, 4)
    fw, tw = fjax.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    results = []
    for lib, lw in ((fjax, fw), (torch, tw)):
        h = lib.nn.functional.linear(lib.tensor(x), lw)
        e = lib.exp(h)  # padded in fjax: reads the bucket rows
        seen = []
        h.register_hook(lambda g, seen=seen: seen.append(g.detach().numpy().copy()))
        total = e.sum() + h.mean() * 3  # mean reads the real rows
        (g,) = lib.autograd.grad(total, h, retain_graph=True)
        total.backward()
        results.append((g.detach().numpy(), seen[-1], lw.grad.numpy()))
    for f, t in zip(*results):  # sums of exp's: an element near 0 carries its sum's rounding
        np.testing.assert_allclose(f, t, rtol=1e-5, atol=1e-6 * max(1, np.abs(t).max()))


def test_a_padded_result_written_in_place_into_a_leaf():
    """An update of a leaf under no_grad from padded ops (an optimizer step in a hook, an
    adversarial step on the input) leaves the leaf real: its next gradient has its shape."""
    for n in (9, 10, 11, 13, 21):
        data = _x(n, 5)
        results = []
        for lib in (fjax, torch):
            x = lib.tensor(data, requires_grad=True)
            for _ in range(2):
                (lib.tanh(x) * 2).sum().backward()
                with lib.no_grad():
                    x.sub_(0.1 * x.grad)
            results.append((x.detach().numpy(), x.grad.numpy()))
        for f, t in zip(*results):
            np.testing.assert_allclose(f, t, rtol=1e-5, atol=1e-6, err_msg=f"n={n}")
    assert fjax.profiler.bucket_stats()["ops"].get("sub", 0) > 0


def test_a_cnn_with_batch_norm_on_changing_batches_matches_torch():
    """Conv, BatchNorm (training: statistics and running buffers of the real rows), ReLU, pooling,
    Linear, on batches of changing size: torch's losses, weights and running statistics, and
    the batch norm pads."""
    torch.manual_seed(int(RNG.integers(1 << 30)))

    def build(nn):
        return nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(2),
            nn.Flatten(),
            nn.Linear(16, 3),
        )

    t = build(torch.nn)
    f = build(fjax.nn)
    f.load_state_dict({k: fjax.tensor(v.numpy()) for k, v in t.state_dict().items()})
    f_opt, t_opt = fjax.optim.SGD(f.parameters(), lr=0.1), torch.optim.SGD(t.parameters(), lr=0.1)
    before = fjax.profiler.bucket_stats()["ops"].get("batch_norm", 0)
    for n in (6, 9, 13, 10, 21, 17, 30):
        _train_step_both(((fjax, f, f_opt), (torch, t, t_opt)), _x(n, 2, 5, 5), RNG.integers(0, 3, n), n)
    assert fjax.profiler.bucket_stats()["ops"].get("batch_norm", 0) > before
    for (name, p), q in zip(f.state_dict().items(), t.state_dict().values()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_batch_norm_cumulative_average_on_a_padded_batch(monkeypatch):
    """BatchNorm with ``momentum=None`` (the running average weighted by 1 / batches seen, a
    pending value under eager fusion) updates its statistics from a padded batch as torch does."""
    monkeypatch.setattr(fjax._bucket, "_NEEDS", 1)  # pad from the second size on
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4, momentum=None))
    fm = fjax.nn.Sequential(fjax.nn.Linear(3, 4), fjax.nn.BatchNorm1d(4, momentum=None))
    fm.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    before = fjax.profiler.bucket_stats()["calls"]
    for n in (5, 7, 9, 11, 13, 6):
        x = _x(n, 3)
        fm(fjax.tensor(x)).sum().backward()
        tm(torch.tensor(x)).sum().backward()
    assert fjax.profiler.bucket_stats()["calls"] > before
    for key in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_allclose(fm.state_dict()[key].numpy(), tm.state_dict()[key].numpy(), rtol=1e-5, atol=1e-6)


def test_routed_rows_from_nonzero_are_padded_once_their_counts_keep_changing():
    """An expert's rows (``nonzero`` of the routing, a count only a host read gives): once the
    counts keep changing, nonzero returns them on a bucket, and the gather, the expert's Linear
    and ``index_add`` take them as they are: nothing pads or copies them out again; values and
    gradients are torch's at every step, and a bad index through them still raises."""
    seed = int(RNG.integers(1 << 30))
    torch.manual_seed(seed)
    t_lin = torch.nn.Linear(6, 6)
    f_lin = fjax.nn.Linear(6, 6)
    f_lin.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in t_lin.state_dict().items()})
    padded = []
    for step, n in enumerate((9, 13, 11, 19, 14, 21, 10, 17, 20, 15)):  # new counts, none a bucket size
        x, route = _x(24, 6), RNG.choice([0, 2], (24, 2))
        route.flat[RNG.permutation(48)[:n]] = 1
        before = fjax.profiler.bucket_stats()
        outs, padded_here = [], False
        for L, lin in ((fjax, f_lin), (torch, t_lin)):
            xt = L.tensor(x, requires_grad=True)
            rows, slot = (L.tensor(route) == 1).nonzero(as_tuple=True)
            born = L is fjax and type(rows._meta) is fjax._lazy.Padded  # (before a consumer pads it)
            y = lin(xt[rows]) * (slot.to(L.float32) + 1).unsqueeze(1)
            out = L.zeros(24, 6).index_add(0, rows, y)
            out.square().sum().backward()
            outs.append((out, xt.grad, lin.weight.grad, rows))
            padded_here = padded_here or born
        after = fjax.profiler.bucket_stats()
        if padded_here:
            padded.append((after["pads"] - before["pads"], after["unpads"] - before["unpads"]))
        for f, t, what in zip(outs[0], outs[1], ("out", "x.grad", "weight.grad", "rows")):
            np.testing.assert_allclose(
                f.detach().numpy(),
                t.detach().numpy(),
                rtol=1e-5,
                atol=1e-5,
                err_msg=f"{what}, step {step}, seed {seed}",
            )
        f_lin.weight.grad = t_lin.weight.grad = None
        f_lin.bias.grad = t_lin.bias.grad = None
    assert len(padded) == 8, f"new counts every step: nonzero pads from the third step on (seed {seed})"
    assert all(p == (1, 0) for p in padded), f"(pads, copy-outs) per padded step: nonzero's own, none: {padded}"
    rows = (fjax.tensor(RNG.integers(0, 3, (24, 2))) == 1).nonzero(as_tuple=True)[0]
    with pytest.raises(IndexError, match="out of bounds"):
        fjax.zeros(3, 6)[rows]


def _routing(counts, rows=48, k=2):
    """A (rows, k) routing in which expert e appears exactly ``counts[e]`` times."""
    route = np.empty(rows * k, np.int64)
    order = RNG.permutation(rows * k)
    start = 0
    for e, c in enumerate(counts):
        route[order[start : start + c]] = e
        start += c
    return route.reshape(rows, k)


def test_routed_experts_share_one_bucket_so_a_training_step_compiles_once():
    """Every expert's rows come from one ``nonzero`` site (``(route == e).nonzero()``): once its
    counts keep changing, all of them pad to the highest bucket its counts met lately, and a
    padded input keeps that size through the expert's ops. So the step (each expert's forward,
    the fused backward, the update) is one program whatever the experts' counts, equal ones
    included, instead of one per combination of their buckets: after a warm-up, steps at new
    counts compile nothing. Values and gradients are torch's at every step."""
    seed = int(RNG.integers(1 << 30))
    torch.manual_seed(seed)
    t_experts = [torch.nn.Linear(6, 6) for _ in range(3)]
    f_experts = [fjax.nn.Linear(6, 6) for _ in range(3)]
    for f, t in zip(f_experts, t_experts):
        f.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    t_opt = torch.optim.SGD([p for m in t_experts for p in m.parameters()], lr=0.05)
    f_opt = fjax.optim.SGD([p for m in f_experts for p in m.parameters()], lr=0.05)

    def step(L, experts, opt, x, route):
        x = L.tensor(x)
        out = L.zeros(48, 6)
        for e, expert in enumerate(experts):
            rows, slot = (L.tensor(route) == e).nonzero(as_tuple=True)
            y = expert(x[rows]) * (slot.to(L.float32) + 1).unsqueeze(1)
            out = out.index_add(0, rows, y)
        loss = out.square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    warm = [(26, 30, 40), (35, 29, 32), (44, 26, 26), (31, 33, 32), (40, 28, 28), (27, 38, 31)] * 2
    new = [(30, 30, 36), (41, 27, 28), (28, 34, 34), (33, 33, 30), (46, 25, 25), (29, 36, 31)]
    for i, counts in enumerate(warm + new):
        if i == len(warm):
            compiles = fjax.profiler.compile_count()
        x, route = _x(48, 6), _routing(counts)
        f_loss, t_loss = step(fjax, f_experts, f_opt, x, route), step(torch, t_experts, t_opt, x, route)
        np.testing.assert_allclose(f_loss, t_loss, rtol=1e-5, err_msg=f"loss, counts {counts}, seed {seed}")
    new_compiles = fjax.profiler.compile_count() - compiles
    assert new_compiles == 0, f"steps at new expert counts compiled {new_compiles} programs (seed {seed})"
    for f, t in zip(f_experts, t_experts):
        np.testing.assert_allclose(f.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-4, atol=1e-6)
