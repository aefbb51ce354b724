"""torch.utils.data's dataset combinators and samplers, torch.utils.benchmark, and torch.cuda /
torch.accelerator's CPU-machine answers, against real torch."""

from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import fjax
import fjax.utils.data as fdata

# ----------------------------------------------------------------------------------------------
# fjax.utils.data
# ----------------------------------------------------------------------------------------------


def _pair(n, rng):
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.integers(0, 5, n)
    return (
        fdata.TensorDataset(fjax.tensor(x), fjax.tensor(y)),
        tdata.TensorDataset(torch.tensor(x), torch.tensor(y)),
    )


def _same_sample(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same_sample(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same_sample(u, v)
    elif isinstance(a, fjax.Tensor):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    else:
        assert a == b


def test_concat_dataset_matches_torch():
    rng = np.random.default_rng(0)
    (f1, t1), (f2, t2) = _pair(int(rng.integers(2, 6)), rng), _pair(int(rng.integers(2, 6)), rng)
    f, t = fdata.ConcatDataset([f1, f2, range(3)]), tdata.ConcatDataset([t1, t2, range(3)])
    assert len(f) == len(t) and f.cumulative_sizes == t.cumulative_sizes
    for i in range(-len(t), len(t)):
        _same_sample(f[i], t[i])
    with pytest.raises(ValueError, match="absolute value"):
        f[-len(f) - 1]
    with pytest.raises(AssertionError, match="empty"):
        fdata.ConcatDataset([])
    with pytest.raises(AssertionError, match="IterableDataset"):
        fdata.ConcatDataset([f1, fdata.IterableDataset()])
    assert isinstance(f1 + f2, fdata.ConcatDataset) and len(f1 + f2) == len(t1 + t2)
    with pytest.warns(FutureWarning):
        assert f.cummulative_sizes == f.cumulative_sizes
    loader = fdata.DataLoader(f1 + f2, batch_size=3)
    tloader = tdata.DataLoader(t1 + t2, batch_size=3)
    for a, b in zip(loader, tloader, strict=True):
        _same_sample(a, b)


class _FCount(fdata.IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


class _TCount(tdata.IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


def test_chain_dataset_matches_torch():
    rng = np.random.default_rng(1)
    bounds = [tuple(sorted(rng.integers(0, 20, 2))) for _ in range(3)]
    f = fdata.ChainDataset([_FCount(*b) for b in bounds])
    t = tdata.ChainDataset([_TCount(*b) for b in bounds])
    assert list(f) == list(t) and len(f) == len(t)
    assert list(_FCount(0, 2) + _FCount(5, 7)) == list(_TCount(0, 2) + _TCount(5, 7))
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(fdata.ChainDataset([range(3)]))
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        len(fdata.ChainDataset([range(3)]))


def test_stack_dataset_matches_torch():
    rng = np.random.default_rng(2)
    n = int(rng.integers(3, 7))
    (f1, t1), letters = _pair(n, rng), [chr(97 + i) for i in range(n)]
    f, t = fdata.StackDataset(f1, letters), tdata.StackDataset(t1, letters)
    fk, tk = fdata.StackDataset(a=f1, b=letters), tdata.StackDataset(a=t1, b=letters)
    assert len(f) == len(t) == len(fk) == n
    idx = rng.integers(0, n, 4).tolist()
    for i in idx:
        _same_sample(f[i], t[i])
        _same_sample(fk[i], tk[i])
    _same_sample(f.__getitems__(idx), t.__getitems__(idx))
    _same_sample(fk.__getitems__(idx), tk.__getitems__(idx))
    for a, b in zip(fdata.DataLoader(fk, batch_size=2), tdata.DataLoader(tk, batch_size=2), strict=True):
        _same_sample(a, b)
    with pytest.raises(ValueError, match="[Ss]ize mismatch"):
        fdata.StackDataset(range(2), range(3))
    with pytest.raises(ValueError, match="not both"):
        fdata.StackDataset(range(2), b=range(2))
    with pytest.raises(ValueError, match="at least one"):
        fdata.StackDataset()


def test_subset_matches_torch():
    rng = np.random.default_rng(3)
    fd, td = _pair(8, rng)
    idx = rng.permutation(8)[:5].tolist()
    f, t = fdata.Subset(fd, idx), tdata.Subset(td, idx)
    assert len(f) == len(t) == 5
    for i in range(5):
        _same_sample(f[i], t[i])
    _same_sample(list(f.__getitems__([0, 3])), t.__getitems__([0, 3]))
    _same_sample(f[[0, 2]], t[[0, 2]])  # a list of keys: one fetch from the dataset
    for a, b in zip(fdata.DataLoader(f, batch_size=2), tdata.DataLoader(t, batch_size=2), strict=True):
        _same_sample(a, b)

    class Bad(fdata.Subset):
        def __getitem__(self, i):
            return 0

    with pytest.raises(NotImplementedError, match="__getitems__"):
        Bad(fd, idx)


@pytest.mark.parametrize("lengths", [[3, 4, 3], [0.3, 0.3, 0.4], [0.25, 0.75], [0.5, 0.5, 0.0]])
def test_random_split_sizes_match_torch(lengths):
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        t = tdata.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings(record=True) as fw:
        warnings.simplefilter("always")
        f = fdata.random_split(range(10), lengths, generator=fjax.Generator().manual_seed(0))
        again = fdata.random_split(range(10), lengths, generator=fjax.Generator().manual_seed(0))
    assert [len(s) for s in f] == [len(s) for s in t]
    assert len(fw) == 2 * len(tw)
    assert sorted(i for s in f for i in s) == list(range(10))
    assert all(isinstance(s, fdata.Subset) for s in f)
    assert [list(s) for s in again] == [list(s) for s in f]


def test_random_split_errors_and_default_generator():
    with pytest.raises(ValueError, match="does not equal the length"):
        fdata.random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="between 0 and 1"):
        fdata.random_split(range(10), [1.5, -0.5])
    fjax.manual_seed(5)
    a = [list(s) for s in fdata.random_split(range(20), [10, 10])]
    fjax.manual_seed(5)
    assert [list(s) for s in fdata.random_split(range(20), [10, 10])] == a
    # shuffled, not the identity (probability of the identity: 1/20!)
    assert a[0] + a[1] != list(range(20))


def test_subset_random_sampler():
    rng = np.random.default_rng(4)
    idx = rng.choice(100, 12, replace=False).tolist()
    f = fdata.SubsetRandomSampler(idx, generator=fjax.Generator().manual_seed(1))
    t = tdata.SubsetRandomSampler(idx, generator=torch.Generator().manual_seed(1))
    assert len(f) == len(t) == 12
    a, b = list(f), list(f)
    assert sorted(a) == sorted(b) == sorted(list(t)) == sorted(idx)
    assert a != b  # a fresh permutation each epoch
    assert list(fdata.SubsetRandomSampler(idx, generator=fjax.Generator().manual_seed(1))) == a


def test_weighted_random_sampler_distribution_matches_torch():
    rng = np.random.default_rng(5)
    w = rng.random(5) + 0.05
    w[2] = 0.0
    n = 4000
    f = list(fdata.WeightedRandomSampler(w.tolist(), n, generator=fjax.Generator().manual_seed(0)))
    t = list(tdata.WeightedRandomSampler(w.tolist(), n, generator=torch.Generator().manual_seed(0)))
    fc, tc = np.bincount(f, minlength=5) / n, np.bincount(t, minlength=5) / n
    np.testing.assert_allclose(fc, w / w.sum(), atol=0.04)
    np.testing.assert_allclose(fc, tc, atol=0.05)
    assert fc[2] == 0
    no = list(fdata.WeightedRandomSampler(fjax.tensor(w), 4, replacement=False))
    assert len(set(no)) == 4 and 2 not in no
    s = fdata.WeightedRandomSampler(w, 3)
    assert len(s) == 3 and s.weights.dtype == fjax.float64 and s.weights.shape == (5,)
    for bad, match in [((w, 0), "num_samples"), ((w, 2.0), "num_samples"), (([[1.0, 2.0]], 2), "1d")]:
        with pytest.raises(ValueError, match=match):
            fdata.WeightedRandomSampler(*bad)
    with pytest.raises(ValueError, match="replacement"):
        fdata.WeightedRandomSampler(w, 2, replacement=1)
    with pytest.raises(TypeError, match="fjax.Generator"):
        fdata.WeightedRandomSampler(w, 2, generator=torch.Generator())


def _run_examples(objs):
    parser, globs = doctest.DocTestParser(), {"fjax": fjax}
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for name, obj in objs:
        test = parser.get_doctest(obj.__doc__ or "", dict(globs), name, None, 0)
        assert test.examples, f"{name} has no example"
        runner.run(test)
    assert runner.failures == 0


def test_data_examples_run():
    names = "ChainDataset ConcatDataset StackDataset Subset SubsetRandomSampler WeightedRandomSampler random_split"
    _run_examples([(n, getattr(fdata, n)) for n in names.split()] + [("cumsum", fdata.ConcatDataset.cumsum)])


# ----------------------------------------------------------------------------------------------
# fjax.utils.benchmark
# ----------------------------------------------------------------------------------------------

import inspect  # noqa: E402
import re  # noqa: E402

import torch.utils.benchmark as tb  # noqa: E402

import fjax.utils.benchmark as fb  # noqa: E402


def _measurements(b, rng, spread=0.3, env=False, holes=False):
    out = []
    for label in ("conv", "add"):
        for sub in ("float", "int"):
            for desc in ("n=1", "n=16", "n=256"):
                for threads in (1, 2):
                    if holes and rng.random() < 0.25:
                        continue
                    base = 10.0 ** rng.uniform(-7, -2)
                    times = list(base * (1 + spread * rng.random(int(rng.integers(1, 9)))))
                    spec = b.TaskSpec(
                        "f(x)",
                        "x = 1",
                        label=label,
                        sub_label=sub,
                        description=desc,
                        env=(f"env{int(rng.integers(0, 2))}" if env else None),
                        num_threads=threads,
                    )
                    out.append(b.Measurement(int(rng.integers(1, 50)), times, spec))
    return out


def _both(seed, **kw):
    return _measurements(fb, np.random.default_rng(seed), **kw), _measurements(tb, np.random.default_rng(seed), **kw)


def _strip_address(s):
    return re.sub(r"<[\w.]+Measurement object at 0x[0-9a-f]+>", "<Measurement>", s)


def test_measurement_statistics_and_repr_match_torch():
    fs, ts = _both(10, spread=0.5)
    for f, t in zip(fs, ts):
        assert f.times == t.times
        for name in ("median", "mean", "iqr"):
            assert getattr(f, name) == pytest.approx(getattr(t, name), rel=1e-12), name
        assert f.significant_figures == t.significant_figures
        assert f.has_warnings == t.has_warnings and f.meets_confidence(0.2) == t.meets_confidence(0.2)
        assert f.title == t.title and f.as_row_name == t.as_row_name and f.label == t.label
        assert _strip_address(repr(f)) == _strip_address(repr(t))
    multi = "x = f(y)\nz = x + 1"
    for stmt, setup in [(multi, "y = 1\nw = 2"), ("pass", "pass")]:
        f = fb.Measurement(3, [1e-3, 2e-3], fb.TaskSpec(stmt, setup, sub_label="s", description="d"))
        t = tb.Measurement(3, [1e-3, 2e-3], tb.TaskSpec(stmt, setup, sub_label="s", description="d"))
        assert _strip_address(repr(f)) == _strip_address(repr(t))
    merged_f, merged_t = fb.Measurement.merge(fs + fs[:3]), tb.Measurement.merge(ts + ts[:3])
    assert [m.times for m in merged_f] == [m.times for m in merged_t]
    assert all(m.number_per_run == 1 for m in merged_f)


def test_number_helpers_match_torch():
    rng = np.random.default_rng(11)
    for x in [*(10.0 ** rng.uniform(-9, 2, 30)), *(float(v) for v in 10.0 ** rng.uniform(-9, 2, 30)), 1e-6, 1000.0]:
        assert fb.select_unit(x) == tb.select_unit(x)
        for n in (1, 2, 3, 4):
            assert fb.trim_sigfig(x, n) == tb.trim_sigfig(x, n), (x, n)
    for u in ("ns", "us", "ms", "s"):
        assert fb.unit_to_english(u) == tb.unit_to_english(u)
    items = rng.integers(0, 6, 20).tolist()
    assert fb.ordered_unique(items) == tb.ordered_unique(items)
    with pytest.raises(AssertionError, match="integer"):
        fb.trim_sigfig(1.0, 1.5)
    with fb.set_torch_threads(1):
        pass


@pytest.mark.parametrize("seed,env,holes", [(20, False, False), (21, True, False), (22, False, True), (23, True, True)])
def test_compare_output_matches_torch(seed, env, holes):
    fs, ts = _both(seed, env=env, holes=holes)
    f, t = fb.Compare(fs), tb.Compare(ts)
    assert str(f) == str(t)
    f.trim_significant_figures(), t.trim_significant_figures()
    assert str(f) == str(t)
    f.highlight_warnings(), t.highlight_warnings()
    f.colorize(rowwise=seed % 2 == 0), t.colorize(rowwise=seed % 2 == 0)
    assert str(f) == str(t)
    with pytest.raises(ValueError, match="Measurement"):
        f.extend_results([1.0])


def test_timer_signature_matches_torch():
    fsig, tsig = inspect.signature(fb.Timer), inspect.signature(tb.Timer)
    assert list(fsig.parameters) == list(tsig.parameters)
    for name, p in tsig.parameters.items():
        if name not in ("timer", "language"):
            assert fsig.parameters[name].default == p.default, name
    for meth in ("timeit", "blocked_autorange", "adaptive_autorange", "repeat", "autorange"):
        fp, tp = (
            inspect.signature(getattr(fb.Timer, meth)).parameters,
            inspect.signature(getattr(tb.Timer, meth)).parameters,
        )
        assert [(p.name, p.kind, p.default) for p in fp.values()] == [(p.name, p.kind, p.default) for p in tp.values()]
    assert [e.name for e in fb.Language] == [e.name for e in tb.Language]
    assert [e.value for e in fb.Colorize] == [e.value for e in tb.Colorize]


def test_timer_measures_fjax_work():
    x = fjax.randn(384, 384)
    y = x @ x @ x @ x
    fb.timer()
    assert y._data.is_ready()  # the default clock waits for jax's asynchronous dispatch

    calls = []

    def clock():
        calls.append(1)
        return fb.timer()

    big = fb.Timer("y = x @ x @ x", globals={"x": x}, timer=clock, label="mm", sub_label="big", description="384")
    small = fb.Timer("y = x + 1", setup="x = torch.ones(4)", label="mm", sub_label="small", description="384")
    for _ in range(2):  # warm-up: eager fusion compiles a loop's program at its second sight
        big.blocked_autorange(min_run_time=0.05), small.blocked_autorange(min_run_time=0.05)
    mb, ms = big.blocked_autorange(min_run_time=0.05), small.blocked_autorange(min_run_time=0.05)
    assert calls and mb.median > ms.median > 0
    assert sum(mb.raw_times) >= 0.05 and mb.number_per_run >= 1
    one = big.timeit(3)
    assert one.number_per_run == 3 and len(one.times) == 1 and one.median == one.raw_times[0] / 3
    ad = small.adaptive_autorange(threshold=0.5, min_run_time=0.01, max_run_time=0.2)
    assert len(ad.times) >= 1 and ad.task_spec.sub_label == "small"
    lines = str(fb.Compare([mb, ms])).splitlines()
    assert lines[0].startswith("[") and " mm " in lines[0] and "384" in lines[1]
    assert lines[2].startswith("1 threads:") and "big" in lines[3] and "small" in lines[4]
    assert re.match(r"Times are in \w+seconds \((ns|us|ms|s)\)\.", lines[6])


def test_timer_errors():
    with pytest.raises(NotImplementedError, match="cpp"):
        fb.Timer("x", language="cpp")
    with pytest.raises(ValueError, match="global_setup"):
        fb.Timer("x", global_setup="#include <x>")
    with pytest.raises(ValueError, match="str"):
        fb.Timer(lambda: 1)
    with pytest.raises(ValueError, match="language"):
        fb.Timer("x", language="rust")
    for meth in ("repeat", "autorange", "collect_callgrind"):
        with pytest.raises(NotImplementedError):
            getattr(fb.Timer(), meth)()


def test_benchmark_examples_run():
    objs = []
    for n in fb.__all__:
        o = getattr(fb, n)
        objs.append((n, o))
        if isinstance(o, type) and not issubclass(o, Exception):
            for k, v in vars(o).items():
                v = v.__func__ if isinstance(v, staticmethod) else v
                if not k.startswith("_") and callable(v) and not isinstance(v, type(fb.Language.PYTHON)):
                    objs.append((f"{n}.{k}", v))
    _run_examples(objs)


# ----------------------------------------------------------------------------------------------
# fjax.cuda and fjax.accelerator: the answers torch gives on a machine without a GPU
# ----------------------------------------------------------------------------------------------

_NO_GPU = not fjax.cuda.is_available() and not torch.cuda.is_available()
needs_no_gpu = pytest.mark.skipif(not _NO_GPU, reason="compares the answers of a machine without a GPU")

_CUDA_NAMES = (
    "Event Stream StreamContext current_stream default_generators default_stream device device_of get_arch_list "
    "get_device_properties get_per_process_memory_fraction get_rng_state get_rng_state_all get_sync_debug_mode "
    "has_half init initial_seed is_tf32_supported max_memory_cached max_memory_reserved mem_get_info memory_cached "
    "memory_stats memory_stats_as_nested_dict memory_summary memory_usage reset_accumulated_memory_stats "
    "reset_max_memory_allocated reset_max_memory_cached seed seed_all set_per_process_memory_fraction set_rng_state "
    "set_rng_state_all set_stream set_sync_debug_mode stream"
).split()
_ACCEL_NAMES = (
    "current_device_idx current_stream device_index empty_cache empty_host_cache get_device_capability "
    "get_memory_info max_memory_allocated max_memory_reserved memory_allocated memory_reserved memory_stats "
    "reset_accumulated_memory_stats reset_peak_memory_stats set_device_idx set_device_index set_stream"
).split()


def _outcome(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as e:  # noqa: BLE001 - the exception type is what is compared
            return "raises", type(e), [x.category for x in w]
    return "returns", value, [x.category for x in w]


@pytest.mark.parametrize(
    "call",
    [
        "current_stream()",
        "default_stream()",
        "default_generators",
        "get_arch_list()",
        "get_device_properties()",
        "get_device_properties(0)",
        "get_per_process_memory_fraction()",
        "get_rng_state()",
        "get_rng_state_all()",
        "get_sync_debug_mode()",
        "has_half",
        "init()",
        "initial_seed()",
        "is_tf32_supported()",
        # the memory queries differ on purpose: fjax's describe the CPU device (tests/test_memory_stats.py)
        "seed()",
        "seed_all()",
        "set_per_process_memory_fraction(0.5)",
        "set_rng_state(lib.zeros(2, dtype=lib.int64))",
        "set_rng_state_all([])",
        "set_stream(None)",
        "set_sync_debug_mode(0)",
        "set_sync_debug_mode('warn')",
        "stream(None).__enter__()",
        "StreamContext(None).__exit__(None, None, None)",
        "Stream()",
        "Event()",
        "Event(enable_timing=True)",
        "device(0).__enter__()",
        "device(-1).__enter__()",
        "device_of(lib.ones(2)).idx",
        "device_of(lib.ones(2)).__enter__()",
    ],
)
@needs_no_gpu
def test_cuda_without_gpu_matches_torch(call):
    t = _outcome(lambda: eval(f"lib.cuda.{call}", {"lib": torch}))
    f = _outcome(lambda: eval(f"lib.cuda.{call}", {"lib": fjax}))
    assert f[0] == t[0], (call, t, f)
    if t[0] == "raises":
        assert issubclass(f[1], t[1]), (call, t, f)  # fjax's no-GPU error is both RuntimeError and AssertionError
    else:
        assert f[1] == t[1] and type(f[1]) is type(t[1]) and f[2] == t[2], (call, t, f)


@needs_no_gpu
def test_cuda_memory_extras_without_gpu():
    # torch's CPU build crashes here (KeyError / AttributeError / missing NVML); fjax answers cleanly
    with pytest.raises(RuntimeError, match="no GPU"):
        fjax.cuda.memory_usage()
    fjax.cuda.reset_accumulated_memory_stats()
    for fn in (fjax.cuda.reset_max_memory_allocated, fjax.cuda.reset_max_memory_cached):
        with pytest.warns(FutureWarning):
            fn()


def test_cuda_signatures_match_torch():
    for name in _CUDA_NAMES:
        t, f = getattr(torch.cuda, name), getattr(fjax.cuda, name)
        assert type(t) is type(f) or callable(f), name
        if not callable(t) or name in ("Event", "Stream"):  # torch's are built in __new__
            continue
        tp, fp = inspect.signature(t).parameters, inspect.signature(f).parameters
        assert [(p.name, p.kind) for p in fp.values()] == [(p.name, p.kind) for p in tp.values()], name
    for name in ("Event", "Stream"):
        tp = inspect.signature(getattr(torch.cuda, name)).parameters
        fp = inspect.signature(getattr(fjax.cuda, name)).parameters
        assert [(p.name, p.kind, p.default) for p in fp.values()] == [(p.name, p.kind, p.default) for p in tp.values()]
    for name in _ACCEL_NAMES:
        t, f = getattr(torch.accelerator, name), getattr(fjax.accelerator, name)
        tp, fp = inspect.signature(t).parameters, inspect.signature(f).parameters
        assert [(p.name, p.kind, p.default) for p in fp.values()] == [
            (p.name, p.kind, p.default) for p in tp.values()
        ], name


@pytest.mark.parametrize(
    "call",
    [
        "current_device_idx()",
        "current_device_index()",
        "current_stream()",
        "empty_cache()",
        "empty_host_cache()",
        "get_device_capability()",
        "get_memory_info()",
        "max_memory_allocated()",
        "max_memory_reserved()",
        "memory_allocated()",
        "memory_reserved()",
        "memory_stats()",
        "memory_stats(0)",
        "reset_accumulated_memory_stats()",
        "reset_peak_memory_stats()",
        "set_device_idx(0)",
        "set_device_index(0)",
        "set_stream(None)",
        "device_index(None).__enter__()",
        "device_index(0).__enter__()",
    ],
)
@needs_no_gpu
def test_accelerator_without_gpu_matches_torch(call):
    t = _outcome(lambda: eval(f"lib.accelerator.{call}", {"lib": torch}))
    f = _outcome(lambda: eval(f"lib.accelerator.{call}", {"lib": fjax}))
    assert f[0] == t[0] and f[2] == t[2], (call, t, f)
    if t[0] == "raises":
        assert f[1] is t[1], (call, t, f)
    else:
        assert f[1] == t[1], (call, t, f)
    if t[0] == "raises" and t[1] is RuntimeError:
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            eval(f"lib.accelerator.{call}", {"lib": fjax})


@pytest.mark.skipif(not fjax.cuda.is_available(), reason="needs a GPU")
def test_cuda_streams_events_and_memory_on_gpu():
    x = fjax.randn(256, 256, device="cuda")
    s = fjax.cuda.Stream()
    with fjax.cuda.stream(s):
        assert fjax.cuda.current_stream() is s
        y = x @ x
    assert fjax.cuda.current_stream() == fjax.cuda.default_stream()
    start, end = fjax.cuda.Event(enable_timing=True), fjax.cuda.Event(enable_timing=True)
    start.record()
    y = y @ x
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0 and y._data.is_ready()
    p = fjax.cuda.get_device_properties(0)
    assert p.name == fjax.cuda.get_device_name(0) and (p.major, p.minor) == fjax.cuda.get_device_capability(0)
    assert p.multi_processor_count > 0 and p.total_memory > 0
    free, total = fjax.cuda.mem_get_info()
    assert 0 <= free <= total == p.total_memory
    stats = fjax.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == fjax.cuda.memory_allocated() >= x.numel() * 4
    assert fjax.cuda.max_memory_reserved() >= fjax.cuda.memory_reserved() > 0
    assert "Allocated memory" in fjax.cuda.memory_summary()
    assert fjax.accelerator.get_memory_info() == fjax.cuda.mem_get_info()
    assert fjax.float32 in fjax.accelerator.get_device_capability()["supported_dtypes"]
    assert len(fjax.cuda.default_generators) == fjax.cuda.device_count()
    with fjax.accelerator.device_index(0):
        assert fjax.accelerator.current_device_index() == 0


def test_cuda_accelerator_examples_run():
    objs = [(f"cuda.{n}", getattr(fjax.cuda, n)) for n in _CUDA_NAMES if callable(getattr(fjax.cuda, n))]
    objs += [(f"accelerator.{n}", getattr(fjax.accelerator, n)) for n in _ACCEL_NAMES]
    for cls in (fjax.cuda.Stream, fjax.cuda.Event):
        objs += [(f"{cls.__name__}.{k}", v) for k, v in vars(cls).items() if not k.startswith("_") and callable(v)]
    _run_examples(objs)
