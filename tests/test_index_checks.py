"""Out-of-range indices raise torch's error in eager (XLA would clamp or drop them silently):
fuzzed index values against torch, op by op."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest
import torch

import fjax
import fjax.nn.functional as F


def _pair(a):
    return fjax.tensor(a), torch.tensor(a)


def _idx(rng, shape, n):
    """Indices mostly in range, sometimes just outside it on either side."""
    values = rng.integers(0, n, shape)
    if rng.random() < 0.6:
        flat = values.reshape(-1)
        flat[0 if rng.random() < 0.5 else rng.integers(0, flat.size)] = rng.choice([n, n + 3, -1, -n, -n - 1])
    return values


CASES = {  # i: six indices into a size-6 dim
    "gather": lambda x, i, m: m.gather(x, 1, i.reshape(2, 3)),
    "scatter": lambda x, i, m: x.scatter(1, i.reshape(2, 3), 2.0),
    "scatter_add": lambda x, i, m: x.scatter_add(1, i.reshape(2, 3), x[:2, :3]),
    "index_select": lambda x, i, m: x.index_select(1, i),
    "index_select dim 0": lambda x, i, m: x.T.index_select(0, i),
    "index_add": lambda x, i, m: x.index_add(1, i, x),
    "index_copy": lambda x, i, m: x.index_copy(1, i[:1], x[:, :1]),
    "index_fill": lambda x, i, m: x.index_fill(1, i, -1.0),
    "take": lambda x, i, m: x.take(i * 4),
    "index_put": lambda x, i, m: x.index_put((i % 4, i), m.tensor(5.0)),
    "getitem": lambda x, i, m: x[:, i],
    "setitem": lambda x, i, m: _set(x.clone(), i),
    "embedding": lambda x, i, m: m.nn.functional.embedding(i, x.T),
    "one_hot": lambda x, i, m: m.nn.functional.one_hot(i, 6),
    "nll_loss": lambda x, i, m: m.nn.functional.nll_loss(x.T.log_softmax(1), i),
    "cross_entropy": lambda x, i, m: m.nn.functional.cross_entropy(x.T, i, ignore_index=-1),
}


def _set(x, i):
    x[:, i] = 7.0
    return x


def _outcome(case, x, i, lib):
    try:
        out = case(x, i, lib)
        if lib is fjax:
            fjax.sync()  # under eager fusion a computed index (i * 4) is checked when its ops run
        return "ok", out
    except (IndexError, RuntimeError) as err:
        return type(err), err


@pytest.mark.parametrize("name", list(CASES))
def test_fuzzed_indices_match_torch(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # str hashes vary per process
    x, tx = _pair(rng.standard_normal((4, 6)).astype(np.float32))
    raised = 0
    for _ in range(24):
        i, ti = _pair(_idx(rng, (6,), 6))
        ours, theirs = _outcome(CASES[name], x, i, fjax), _outcome(CASES[name], tx, ti, torch)
        if theirs[0] == "ok":
            assert ours[0] == "ok", f"{name}: fjax raised {ours[1]!r} where torch gave a result for {ti.tolist()}"
            np.testing.assert_allclose(ours[1].numpy(), theirs[1].numpy(), rtol=1e-5, atol=1e-6)
        else:
            raised += 1
            assert ours[0] is not "ok", f"{name}: fjax returned a result where torch raised {theirs[1]!r}"  # noqa: F632
            assert issubclass(ours[0], theirs[0]), f"{name}: {ours[1]!r} vs torch {theirs[1]!r}"
            assert name.split()[0].split("_")[0] in str(ours[1]) or name in ("getitem", "setitem"), str(ours[1])
    assert raised, f"{name}: no trial went out of range"


def test_an_index_that_passed_still_raises_against_a_smaller_dim():
    """An index tensor used every step is read on the host once per range it passed
    (``indexing._passed``): the same tensor against a smaller dim, or a new tensor, still raises
    torch's error, for every op family that checks (getitem, index_select, gather)."""
    idx = fjax.tensor(np.arange(6))
    big, small = fjax.randn(8, 8), fjax.randn(5, 5)
    for _ in range(2):
        assert big[idx].shape == (6, 8) and big.index_select(1, idx).shape == (8, 6)
        assert big.gather(1, idx.expand(8, 6)).shape == (8, 6)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        small[idx]
    with pytest.raises(IndexError, match="out of"):
        small.index_select(1, idx)
    with pytest.raises(IndexError, match="out of"):
        small.gather(1, idx.expand(5, 6))
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        big[fjax.tensor([0, 9])]


def test_bool_mask_of_the_wrong_shape_raises():
    x = fjax.zeros(4, 3)
    with pytest.raises(IndexError, match=r"shape of the mask \[2\] at index 0 does not match"):
        x[fjax.tensor([True, False])]
    with pytest.raises(IndexError, match=r"shape of the mask \[2\] at index 0 does not match .* at index 1"):
        x[:, fjax.tensor([True, False])]
    assert x[fjax.tensor([True, False, True, False])].shape == (2, 3)


def test_checks_skip_inside_a_graph_and_valid_indices_cost_no_compile():
    emb = fjax.nn.Embedding(5, 2)

    class G(fjax.nn.Graph):
        def __init__(self):
            super().__init__()
            self.emb = emb

        def build(self, i):
            return self.emb(i)

    assert G()(fjax.tensor([0, 4])).shape == (2, 2)
    i = fjax.tensor([1, 2])
    F.embedding(i, emb.weight)
    before = fjax.profiler.compile_count()
    for _ in range(10):
        F.embedding(i, emb.weight)
    assert fjax.profiler.compile_count() == before


# ----------------------------------------------------------------------------- NaN and edge semantics
NAN_A = np.array([[1.0, np.nan, -2.0, 3.0], [np.nan, np.nan, 0.5, -1.0], [0.0, -0.0, np.inf, -np.inf]], np.float32)
NAN_B = np.array([[np.nan, 2.0, -3.0, 1.0], [1.0, np.nan, np.nan, 2.0], [1.0, 0.0, np.nan, 5.0]], np.float32)
NAN_CASES = {
    "relu": lambda m, x, y: m.relu(x),
    "relu6": lambda m, x, y: m.nn.functional.relu6(x),
    "hardtanh": lambda m, x, y: m.nn.functional.hardtanh(x),
    "leaky_relu": lambda m, x, y: m.nn.functional.leaky_relu(x, 0.1),
    "maximum": lambda m, x, y: m.maximum(x, y),
    "minimum": lambda m, x, y: m.minimum(x, y),
    "clamp scalars": lambda m, x, y: m.clamp(x, -1, 1),
    "clamp tensor min": lambda m, x, y: m.clamp(x, min=y),
    "clamp tensor max": lambda m, x, y: m.clamp(x, max=y),
    "clamp both": lambda m, x, y: m.clamp(x, y - 1, y),
    "max": lambda m, x, y: m.max(x),
    "max dim": lambda m, x, y: m.max(x, 1),
    "min dim": lambda m, x, y: m.min(x, 1),
    "amax": lambda m, x, y: m.amax(x, 1),
    "argmax": lambda m, x, y: m.argmax(x, 1),
    "argmin": lambda m, x, y: m.argmin(x, 1),
    "sort": lambda m, x, y: m.sort(x, 1),
    "sort descending": lambda m, x, y: m.sort(x, 1, descending=True)[0],
    "topk values": lambda m, x, y: m.topk(x, 2, 1)[0],
    "median": lambda m, x, y: m.median(x),
    "median dim": lambda m, x, y: m.median(x, 1),
    "nanmedian": lambda m, x, y: m.nanmedian(x),
    "nanmedian dim": lambda m, x, y: m.nanmedian(x, 0),
    "cummax": lambda m, x, y: m.cummax(x, 1),
    "softshrink": lambda m, x, y: m.nn.functional.softshrink(x - 0.5 * y, 0.75),
    "hardshrink": lambda m, x, y: m.nn.functional.hardshrink(x - 0.5 * y, 0.75),
    "tanhshrink": lambda m, x, y: m.nn.functional.tanhshrink(x),
    "threshold": lambda m, x, y: m.nn.functional.threshold(x, 0.5, 7.0),
}


def _arrays(out):
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _arrays(o)]
    return [out.numpy()]


@pytest.mark.parametrize("name", list(NAN_CASES))
def test_nan_propagation_matches_torch(name):
    f = NAN_CASES[name]
    ours = _arrays(f(fjax, fjax.tensor(NAN_A), fjax.tensor(NAN_B)))
    theirs = _arrays(f(torch, torch.tensor(NAN_A), torch.tensor(NAN_B)))
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o, t, err_msg=name)


def test_float_floor_division_matches_torch_on_every_special_pair():
    """torch (and Python) floor-divide floats through fmod: 1.0 // 0.1 is 9, -1 // inf is -1,
    and a zero quotient keeps the sign of input / other."""
    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.1, 3.0, 7.0], np.float32)
    a, b = (v.ravel() for v in np.meshgrid(vals, vals))
    for f in (lambda m, x, y: m.floor_divide(x, y), lambda m, x, y: m.div(x, y, rounding_mode="floor")):
        ours, theirs = (
            f(fjax, fjax.tensor(a), fjax.tensor(b)).numpy(),
            f(torch, torch.tensor(a), torch.tensor(b)).numpy(),
        )
        np.testing.assert_array_equal(ours, theirs)
        numbers = ~np.isnan(theirs)  # (a NaN's sign bit is not part of torch's contract)
        np.testing.assert_array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]))
    x = fjax.tensor([1.0, 7.5], requires_grad=True)
    fjax.div(x, 0.1, rounding_mode="floor").sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])  # torch's zero gradient


def test_digamma_poles_at_signed_zero_as_torch():
    a = np.array([0.0, -0.0, np.nan, np.inf, -1.0, 1.0, -2.5], np.float32)
    ours, theirs = fjax.digamma(fjax.tensor(a)).numpy(), torch.digamma(torch.tensor(a)).numpy()
    np.testing.assert_array_equal(ours[:5], theirs[:5])  # -inf, inf, nan, inf, nan
    np.testing.assert_allclose(ours[5:], theirs[5:], rtol=1e-5)


def test_softshrink_keeps_the_sign_of_zero_as_torch():
    a = np.array([-0.25, 0.25, 0.0, -0.0, np.nan, 2.0, -2.0], np.float32)
    ours = fjax.nn.functional.softshrink(fjax.tensor(a)).numpy()
    theirs = torch.nn.functional.softshrink(torch.tensor(a)).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours[:4]), np.signbit(theirs[:4]))


def test_relu_gradient_at_zero_and_nan_is_zero_as_torch():
    a = np.array([-1.0, 0.0, -0.0, 2.0, np.nan], np.float32)
    x, t = fjax.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = x.relu(), t.relu()
    np.testing.assert_array_equal(np.signbit(y.detach().numpy()[:3]), np.signbit(ty.detach().numpy()[:3]))  # -0.0
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("expr", ["x // z", "x % z", "fmod", "div floor", "div trunc", "x //= z"])
def test_integer_division_by_zero_raises(expr):
    x, z = fjax.tensor([3, -4, 5]), fjax.tensor([1, 0, 2])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        if expr == "x // z":
            x // z
        elif expr == "x % z":
            x % z
        elif expr == "fmod":
            fjax.fmod(x, 0)
        elif expr == "div floor":
            fjax.div(x, z, rounding_mode="floor")
        elif expr == "div trunc":
            x.div(0, rounding_mode="trunc")
        else:
            x //= z
    assert x.tolist() == [3, -4, 5]
    assert (x / 0).tolist() == [float("inf"), float("-inf"), float("inf")]  # true division: as torch
    assert (x // 2).tolist() == (torch.tensor([3, -4, 5]) // 2).tolist()


@pytest.mark.parametrize(
    "case",
    [
        ("conv1d", (1, 1, 3), (1, 1, 5), {}),
        ("conv2d", (1, 1, 3, 3), (1, 1, 2, 5), {}),
        ("conv2d", (1, 1, 3, 3), (1, 1, 3, 3), {"dilation": 2}),
    ],
)
def test_conv_with_a_kernel_larger_than_the_input_raises_as_torch(case):
    name, x_shape, w_shape, kwargs = case
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        getattr(torch.nn.functional, name)(torch.ones(x_shape), torch.ones(w_shape), **kwargs)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        getattr(F, name)(fjax.ones(*x_shape), fjax.ones(*w_shape), **kwargs)
    padded = getattr(F, name)(fjax.ones(*x_shape), fjax.ones(*w_shape), padding=3, **kwargs)
    expected = getattr(torch.nn.functional, name)(torch.ones(x_shape), torch.ones(w_shape), padding=3, **kwargs)
    assert tuple(padded.shape) == tuple(expected.shape)


class _EmbedLoss(fjax.nn.Graph):
    def __init__(self, emb):
        super().__init__()
        self.emb = emb

    def build(self, i, t):
        return F.cross_entropy(self.emb(i), t)


def test_inside_a_graph_a_bad_index_raises_at_the_next_sync_naming_the_op():
    g = _EmbedLoss(fjax.nn.Embedding(5, 3))
    g(fjax.tensor([0, 4]), fjax.tensor([1, 2]))
    fjax.asyncs.wait()  # in range: nothing
    g(fjax.tensor([0, 7]), fjax.tensor([1, 2]))
    with pytest.raises(fjax.asyncs.CheckError, match=r"embedding: index \? is out of range for a weight with 5 rows"):
        fjax.asyncs.wait()
    g(fjax.tensor([0, 1]), fjax.tensor([1, -100]))  # ignore_index: allowed
    fjax.asyncs.wait()
    g(fjax.tensor([0, 1]), fjax.tensor([1, 3]))
    with pytest.raises(fjax.asyncs.CheckError, match=r"cross_entropy: Target \? is out of bounds"):
        fjax.asyncs.wait()


def _host_callbacks(graph) -> list:
    text = graph._executables.last("test").compiled.as_text()
    return [t for t in re.findall(r'custom_call_target="([^"]+)"', text) if "callback" in t]


@pytest.mark.parametrize("checkpointed", [False, True])
def test_a_graph_returns_its_index_checks_and_inner_blocks_call_back(checkpointed):
    """The step's own index checks are booleans it returns (a host callback keeps a program out of
    JAX's persistent compilation cache: every process would compile the step again); a check
    inside a checkpointed block (an inner JAX trace) stays a callback. Both raise as torch would."""
    g = _EmbedLoss(fjax.nn.Embedding(5, 3))
    if checkpointed:
        g.emb.to(fjax.nn.graph.GraphModule).activation_checkpointing = True
    g(fjax.tensor([0, 4]), fjax.tensor([1, 2]))
    fjax.asyncs.wait()
    assert len(_host_callbacks(g)) == (1 if checkpointed else 0)
    g(fjax.tensor([0, 5]), fjax.tensor([1, 2]))
    with pytest.raises(IndexError, match=r"embedding: index \? is out of range for a weight with 5 rows"):
        fjax.asyncs.wait()


def test_graph_index_checks_can_be_switched_off():
    old = fjax.config.graph_index_checks
    fjax.config.graph_index_checks = False
    try:
        g = _EmbedLoss(fjax.nn.Embedding(5, 3))
        g(fjax.tensor([0, 7]), fjax.tensor([1, 2]))  # XLA clamps; no check compiled in
        fjax.asyncs.wait()
    finally:
        fjax.config.graph_index_checks = old
