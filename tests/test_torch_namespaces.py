"""torch's device namespaces (cuda, backends, accelerator) and the Tensor methods published
programs call first (new_*, type_as, in-place random fills, multinomial, allclose, equal),
compared with torch wherever torch's answer is deterministic."""

from __future__ import annotations

import doctest
import inspect
import math

import jax
import numpy as np
import pytest
import torch

import fjax
import fjax.nn.functional as F
from fjax import nn

# -- namespaces -------------------------------------------------------------------------------


def test_cuda_queries_match_torch_on_this_machine():
    has_gpu = any(d.platform == "gpu" for d in jax.devices())
    assert fjax.cuda.is_available() is has_gpu
    assert fjax.cuda.device_count() == len([d for d in jax.devices() if d.platform == "gpu"])
    if not torch.cuda.is_available() and not has_gpu:  # the CPU machine: torch's answers are the oracle
        assert fjax.cuda.is_available() is torch.cuda.is_available()
        assert fjax.cuda.device_count() == torch.cuda.device_count() == 0
        # torch reads 0 here; fjax's memory queries describe the CPU device (tests/test_memory_stats.py)
        assert fjax.cuda.is_bf16_supported() is torch.cuda.is_bf16_supported() is False
        assert fjax.backends.cudnn.is_available() is torch.backends.cudnn.is_available()
        assert fjax.backends.cudnn.version() is torch.backends.cudnn.version() is None
        assert fjax.accelerator.is_available() is torch.accelerator.is_available()
        assert fjax.accelerator.current_accelerator() is torch.accelerator.current_accelerator() is None
        assert fjax.accelerator.device_count() == torch.accelerator.device_count() == 0
        for query in (fjax.cuda.current_device, fjax.cuda.get_device_name, fjax.cuda.get_device_capability):
            with pytest.raises(RuntimeError, match="no GPU"):
                query()
    else:
        assert fjax.cuda.current_device() == 0
        assert isinstance(fjax.cuda.get_device_name(0), str)
        assert fjax.accelerator.current_accelerator() == fjax.device("cuda")
        x = fjax.ones(1024, device="cuda")
        fjax.cuda.synchronize()
        assert fjax.cuda.max_memory_allocated() >= fjax.cuda.memory_allocated() >= x.numel() * 4
    fjax.cuda.synchronize()
    fjax.cuda.empty_cache()
    fjax.accelerator.synchronize()
    fjax.cuda.reset_peak_memory_stats()


def test_cuda_manual_seed_is_a_no_op_without_a_gpu_and_seeds_with_one():
    fjax.manual_seed(5)
    a = fjax.rand(4)
    fjax.manual_seed(5)
    fjax.cuda.manual_seed(123)
    fjax.cuda.manual_seed_all(123)
    b = fjax.rand(4)
    if fjax.cuda.is_available():
        assert fjax.initial_seed() == 123
    else:
        assert fjax.initial_seed() == 5
        assert fjax.equal(a, b)


def test_backends_switches_are_settable_and_read_back():
    import fjax.backends.cudnn as cudnn  # the import form published programs use

    assert cudnn is fjax.backends.cudnn
    for name, torch_default in [
        ("enabled", True),
        ("benchmark", False),
        ("deterministic", False),
        ("allow_tf32", True),
    ]:
        assert getattr(cudnn, name) is torch_default is getattr(torch.backends.cudnn, name)
        setattr(cudnn, name, not torch_default)
        assert getattr(fjax.backends.cudnn, name) is (not torch_default)
        setattr(cudnn, name, torch_default)
    assert fjax.backends.mps.is_available() is fjax.backends.mps.is_built() is False
    assert fjax.backends.mps.is_available() is torch.backends.mps.is_available()
    assert isinstance(fjax.backends.cuda.is_built(), bool)
    fjax.backends.cuda.enable_flash_sdp(False)
    assert fjax.backends.cuda.flash_sdp_enabled() is False
    fjax.backends.cuda.enable_flash_sdp(True)


def test_matmul_allow_tf32_sets_jax_precision():
    saved = jax.config.jax_default_matmul_precision
    try:
        fjax.backends.cuda.matmul.allow_tf32 = False
        assert jax.config.jax_default_matmul_precision == "highest"
        assert fjax.backends.cuda.matmul.allow_tf32 is False
        a = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        assert (a @ a).tolist() == [[7.0, 10.0], [15.0, 22.0]]
        fjax.backends.cuda.matmul.allow_tf32 = True
        assert jax.config.jax_default_matmul_precision == "tensorfloat32"
        assert fjax.backends.cuda.matmul.allow_tf32 is True
        assert (a @ a).tolist() == [[7.0, 10.0], [15.0, 22.0]]  # CPU computes float32 in full regardless
    finally:
        jax.config.update("jax_default_matmul_precision", saved)


def test_namespace_examples_run():
    mods = [fjax.cuda, fjax.accelerator, fjax.backends.cudnn, fjax.backends.mps, fjax.backends.cuda, fjax.backends.cpu]
    objs = [getattr(m, n) for m in mods for n in dir(m) if not n.startswith("_") and inspect.isfunction(getattr(m, n))]
    objs = [o for o in objs if o.__module__.startswith("fjax.")]
    tensor_methods = "new_zeros new_ones new_empty new_full new_tensor type_as random_".split()
    objs += [getattr(fjax.Tensor, n) for n in tensor_methods]
    parser = doctest.DocTestParser()
    for obj in objs:
        doc = inspect.getdoc(obj)
        assert doc and parser.get_examples(doc), f"{obj.__qualname__} has no example"
        test = parser.get_doctest(doc, {"fjax": fjax, "nn": nn, "F": F}, obj.__qualname__, None, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
        out = []
        runner.run(test, out=out.append)
        assert runner.failures == 0, "".join(out)


# -- new_* and type_as ------------------------------------------------------------------------

_DTYPES = [(fjax.float32, torch.float32), (fjax.int64, torch.int64), (fjax.float64, torch.float64)]


@pytest.mark.parametrize("fd,td", _DTYPES, ids=str)
def test_new_factories_match_torch(fd, td):
    x, tx = fjax.tensor([1, 2], dtype=fd), torch.tensor([1, 2], dtype=td)
    cases = [
        ("new_zeros", (2, 3), {}),
        ("new_zeros", ((2, 3),), {}),
        ("new_ones", ((3,),), {}),
        ("new_ones", (2,), {"dtype": "float64"}),
        ("new_empty", (0, 2), {}),
        ("new_full", ((2, 2), 2.5), {}),
        ("new_full", ((1,), 7), {"dtype": "bool"}),
        ("new_tensor", ([1.7, -2.2],), {}),
        ("new_tensor", ([[1, 2]],), {"dtype": "float32"}),
    ]
    for name, args, kw in cases:
        fkw = {k: getattr(fjax, v) for k, v in kw.items()}
        tkw = {k: getattr(torch, v) for k, v in kw.items()}
        got, want = getattr(x, name)(*args, **fkw), getattr(tx, name)(*args, **tkw)
        assert tuple(got.shape) == tuple(want.shape), name
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        if name != "new_empty":
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.device == x.device


def test_new_factories_requires_grad_and_device():
    x = fjax.ones(2)
    y = x.new_zeros(3, requires_grad=True)
    assert y.requires_grad and y.is_leaf
    assert x.new_tensor([1.0], device="cpu").device == fjax.device("cpu")
    src = fjax.ones(2, requires_grad=True)
    copy = x.new_tensor(src)
    assert not copy.requires_grad and copy.tolist() == [1.0, 1.0]


def test_type_as_matches_torch():
    x, tx = fjax.tensor([1, 2]), torch.tensor([1, 2])
    for fd, td in _DTYPES:
        got, want = x.type_as(fjax.zeros(1, dtype=fd)), tx.type_as(torch.zeros(1, dtype=td))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.tolist() == want.tolist()
    assert x.type_as(fjax.zeros(1, dtype=fjax.int64)) is x


def test_element_size_and_nelement_match_torch():
    for fd, td in _DTYPES + [(fjax.float16, torch.float16), (fjax.uint8, torch.uint8), (fjax.bool, torch.bool)]:
        x, tx = fjax.zeros(2, 3, dtype=fd), torch.zeros(2, 3, dtype=td)
        assert x.element_size() == tx.element_size()
        assert x.nelement() == tx.nelement() == 6


# -- allclose / equal -------------------------------------------------------------------------

_NAN, _INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "a,b,kw",
    [
        ([1.0, 2.0], [1.0, 2.0], {}),
        ([1.0, 2.0], [1.0, 2.00001], {}),
        ([1.0, 2.0], [1.0, 2.001], {}),
        ([1.0, 2.0], [1.0, 2.1], {"atol": 0.2}),
        ([1.0, 2.0], [1.0, 2.1], {"rtol": 0.1}),
        ([1.0, _NAN], [1.0, _NAN], {}),
        ([1.0, _NAN], [1.0, _NAN], {"equal_nan": True}),
        ([_INF, -_INF], [_INF, -_INF], {}),
        ([_INF], [-_INF], {}),
        ([[1.0, 2.0], [1.0, 2.0]], [1.0, 2.0], {}),
        ([0.0], [1e-9], {}),
    ],
)
def test_allclose_matches_torch(a, b, kw):
    got = fjax.allclose(fjax.tensor(a), fjax.tensor(b), **kw)
    want = torch.allclose(torch.tensor(a), torch.tensor(b), **kw)
    assert got is want
    assert fjax.tensor(a).allclose(fjax.tensor(b), **kw) is want


@pytest.mark.parametrize(
    "a,b",
    [
        ([1, 2], [1, 2]),
        ([1, 2], [1, 3]),
        ([1, 2], [1.0, 2.0]),
        ([1.0, 2.0], [[1.0, 2.0]]),
        ([1.0, _NAN], [1.0, _NAN]),
        ([], []),
        ([True, False], [True, False]),
    ],
)
def test_equal_matches_torch(a, b):
    got = fjax.equal(fjax.tensor(a), fjax.tensor(b))
    want = torch.equal(torch.tensor(a), torch.tensor(b))
    assert got is want
    assert fjax.tensor(a).equal(fjax.tensor(b)) is want


# -- multinomial ------------------------------------------------------------------------------


def test_multinomial_without_replacement_draws_distinct_indices():
    fjax.manual_seed(0)
    w = fjax.tensor([[1.0, 0.0, 3.0, 2.0, 4.0], [5.0, 1.0, 1.0, 0.0, 1.0]])
    for n in (1, 3, 4):
        out = fjax.multinomial(w, n)
        want = torch.multinomial(torch.tensor(w.tolist()), n)
        assert tuple(out.shape) == tuple(want.shape) and out.dtype == fjax.int64
        for row, weights in zip(out.tolist(), w.tolist()):
            assert len(set(row)) == n
            assert all(0 <= i < 5 and weights[i] > 0 for i in row)
    assert sorted(w[0].multinomial(4).tolist()) == [0, 2, 3, 4]  # every nonzero category once
    assert sorted(fjax.multinomial(fjax.tensor([1.0, 0.0]), 2).tolist()) == [0, 1]  # torch: zeros come last
    assert fjax.multinomial(fjax.tensor([1.0, 0.0, 0.0]), 2)[0].item() == 0


def test_multinomial_distribution():
    fjax.manual_seed(1)
    p = np.array([0.1, 0.0, 0.2, 0.3, 0.4])
    w = fjax.tensor(p * 7.0)  # unnormalised weights
    draws = fjax.multinomial(w, 20000, replacement=True)
    assert tuple(draws.shape) == (20000,) and draws.dtype == fjax.int64
    freq = np.bincount(draws.numpy(), minlength=5) / 20000
    np.testing.assert_allclose(freq, p, atol=0.015)
    # without replacement the first draw follows the weights too
    rows = fjax.multinomial(fjax.tensor(np.tile(p, (8000, 1))), 2)[:, 0]
    np.testing.assert_allclose(np.bincount(rows.numpy(), minlength=5) / 8000, p, atol=0.02)
    # batched with replacement: each row its own distribution
    two = fjax.multinomial(fjax.tensor([[0.0, 1.0], [1.0, 0.0]]), 50, replacement=True)
    assert tuple(two.shape) == (2, 50) and set(two[0].tolist()) == {1} and set(two[1].tolist()) == {0}


def test_multinomial_rejects_what_torch_rejects():
    for bad, n, repl in [
        ([1.0, -1.0], 1, True),
        ([0.0, 0.0], 1, True),
        ([1.0, 1.0], 3, False),
        ([1.0, _NAN], 1, True),
    ]:
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.tensor(bad), n, repl)
        with pytest.raises(Exception, match="multinomial"):
            fjax.multinomial(fjax.tensor(bad), n, repl)
    with pytest.raises(Exception, match="floating"):
        fjax.multinomial(fjax.tensor([1, 2]), 1)


def test_multinomial_is_reproducible_and_takes_a_generator():
    w = fjax.tensor([1.0, 2.0, 3.0, 4.0])
    fjax.manual_seed(7)
    a = fjax.multinomial(w, 10, True)
    fjax.manual_seed(7)
    assert fjax.equal(a, fjax.multinomial(w, 10, True))
    g1, g2 = fjax.Generator().manual_seed(3), fjax.Generator().manual_seed(3)
    assert fjax.equal(w.multinomial(3, generator=g1), w.multinomial(3, generator=g2))


# -- in-place random fills --------------------------------------------------------------------

_N = 40000


@pytest.mark.parametrize(
    "method,args,mean,var",
    [
        ("normal_", (2.0, 3.0), 2.0, 9.0),
        ("normal_", (), 0.0, 1.0),
        ("uniform_", (-1.0, 3.0), 1.0, 16 / 12),
        ("uniform_", (), 0.5, 1 / 12),
        ("exponential_", (2.0,), 0.5, 0.25),
        ("bernoulli_", (0.3,), 0.3, 0.21),
        ("bernoulli_", (), 0.5, 0.25),
        ("random_", (10,), 4.5, (100 - 1) / 12),
        ("random_", (3, 7), 4.5, (16 - 1) / 12),
    ],
)
def test_inplace_fill_statistics_and_aliasing(method, args, mean, var):
    fjax.manual_seed(0)
    base = fjax.full((2, _N), -100.0)
    view = base[1]
    out = getattr(view, method)(*args)
    assert out is view  # in place, self returned
    assert base[0].tolist() == [-100.0] * _N  # the other row is untouched
    drawn = base[1].numpy()  # the base sees the write
    np.testing.assert_array_equal(drawn, view.numpy())
    se = math.sqrt(var / _N)
    assert abs(drawn.mean() - mean) < 6 * se + 1e-6, (drawn.mean(), mean)
    assert abs(drawn.var() - var) < 0.05 * var + 1e-6, (drawn.var(), var)
    if method == "uniform_":
        lo, hi = args or (0.0, 1.0)
        assert drawn.min() >= lo and drawn.max() < hi
    if method in ("bernoulli_", "random_"):
        assert np.all(drawn == np.round(drawn))
    if method == "exponential_":
        assert drawn.min() >= 0


@pytest.mark.parametrize(
    "method,args",
    [("normal_", (1.0, 2.0)), ("uniform_", ()), ("exponential_", ()), ("bernoulli_", (0.5,)), ("random_", (100,))],
)
def test_inplace_fills_are_reproducible(method, args):
    fjax.manual_seed(11)
    a = getattr(fjax.zeros(64), method)(*args)
    fjax.manual_seed(11)
    b = getattr(fjax.zeros(64), method)(*args)
    assert fjax.equal(a, b)
    assert not fjax.equal(a, getattr(fjax.zeros(64), method)(*args))
    g1, g2 = fjax.Generator().manual_seed(2), fjax.Generator().manual_seed(2)
    assert fjax.equal(
        getattr(fjax.zeros(8), method)(*args, generator=g1), getattr(fjax.zeros(8), method)(*args, generator=g2)
    )


def test_random_and_bernoulli_dtypes_follow_torch():
    fjax.manual_seed(0)
    for fd, td in [
        (fjax.int64, torch.int64),
        (fjax.uint8, torch.uint8),
        (fjax.bool, torch.bool),
        (fjax.float32, torch.float32),
    ]:
        x, tx = fjax.zeros(1000, dtype=fd), torch.zeros(1000, dtype=td)
        assert x.bernoulli_(0.5).dtype == fd and set(x.tolist()) == set(tx.bernoulli_(0.5).tolist())
        assert x.random_(0, 2).dtype == fd and set(x.tolist()) == set(tx.random_(0, 2).tolist())
    u8 = fjax.zeros(2000, dtype=fjax.uint8).random_()
    assert 0 <= int(u8.min()) and int(u8.max()) > 200  # uint8's whole range by default
    f = fjax.zeros(2000).random_()
    assert float(f.max()) <= 2**24 and float(f.max()) > 2**23 and bool((f == f.round()).all())
    assert fjax.zeros(10).random_(**{"from": 5, "to": 6}).tolist() == [5.0] * 10  # torch's keyword ``from``
    assert fjax.zeros(10).random_(5, None).min() >= 5
    with pytest.raises(Exception, match="less than"):
        fjax.zeros(2).random_(3, 3)
    for method in ("normal_", "uniform_", "exponential_"):
        with pytest.raises(RuntimeError):
            getattr(torch.zeros(2, dtype=torch.int64), method)()
        with pytest.raises(Exception, match="floating"):
            getattr(fjax.zeros(2, dtype=fjax.int64), method)()


def test_bernoulli_with_a_tensor_of_probabilities():
    fjax.manual_seed(0)
    p = fjax.tensor([0.0, 1.0, 0.0, 1.0])
    assert fjax.zeros(4).bernoulli_(p).tolist() == [0.0, 1.0, 0.0, 1.0]
