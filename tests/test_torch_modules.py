"""torch's smaller namespaces that programs import at the top (``torch.jit``, ``torch.hub``,
``torch.version``, ``torch.nn.attention``, ``torch.utils.hooks``, ``torch.utils.dlpack``,
``torch.autograd.profiler``, ``torch.multiprocessing``, ``torch.overrides``, ``torch.types``):
each against real torch where torch's behaviour can run here."""

from __future__ import annotations

import hashlib
import os
import sys
import typing
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
import torch

import fjax
import fjax.mock_torch as mock_torch

sys.path.insert(0, str(Path(__file__).parent))


def _gelu(x):
    return x * 0.5 * (1.0 + (x * 0.70710678).erf())


def test_jit_script_and_trace_give_torchs_numbers():
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    want = torch.jit.script(_gelu)(torch.from_numpy(x)).numpy()
    got = fjax.jit.script(_gelu)(fjax.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    m = fjax.nn.Linear(5, 2)
    assert fjax.jit.trace(m, fjax.tensor(x)) is m and fjax.jit.trace_module(m, {"forward": fjax.tensor(x)}) is m
    with pytest.raises(RuntimeError):  # a model that cannot run its example inputs fails at the trace
        fjax.jit.trace(m, fjax.ones(4, 3))


def test_jit_decorators_and_predicates():
    for decorator in (
        fjax.jit.unused,
        fjax.jit.export,
        fjax.jit.ignore,
        fjax.jit.ignore(drop=True),
        fjax.jit.interface,
    ):
        assert decorator(_gelu) is _gelu
    assert not fjax.jit.is_scripting() and not fjax.jit.is_tracing()
    assert fjax.jit.annotate(typing.List[int], [1]) == [1] and fjax.jit.Final is typing.Final
    for obj, kind in [
        ([1, 2], typing.List[int]),
        ({"a": fjax.ones(1)}, typing.Dict[str, fjax.Tensor]),
        ((1, "a"), typing.Tuple[int, str]),
        ([1, "a"], typing.List[int]),
        (None, typing.Optional[int]),
    ]:
        real_kind = kind if "Tensor" not in str(kind) else typing.Dict[str, torch.Tensor]
        real_obj = obj if not isinstance(obj, dict) else {"a": torch.ones(1)}
        assert fjax.jit.isinstance(obj, kind) == torch.jit.isinstance(real_obj, real_kind), (obj, kind)
    future = fjax.jit.fork(lambda a, b: a + b, 2, b=3)
    assert fjax.jit.wait(future) == 5
    failed = fjax.jit.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failed.wait()
    for fn in (fjax.jit.save, fjax.jit.load):
        with pytest.raises(NotImplementedError, match="TorchScript"):
            fn(fjax.nn.Linear(1, 1), "x.pt") if fn is fjax.jit.save else fn("x.pt")


@pytest.mark.parametrize(
    "a, b",
    [
        ("2.13.0", "2.9"),
        ("2.13.0", (2, 13)),
        ("2.13.0", (2, 14)),
        ("2.13.0+cpu", "2.13.0"),
        ("1.10.0", "1.9.1"),
        ("2.0.0", "2"),
    ],
)
def test_torch_version_compares_as_torchs(a, b):
    from torch.torch_version import TorchVersion

    mine, theirs = fjax.version.TorchVersion(a), TorchVersion(a)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__"):
        assert getattr(mine, op)(b) == getattr(theirs, op)(b), (a, op, b)


def test_torch_version_under_mock_torch_is_the_release_fjax_follows():
    own = fjax.__version__
    with mock_torch.enable():
        import torch as mocked

        assert mocked.__version__ == torch.__version__.split("+")[0] and mocked.__version__ >= "2.0"
        assert mocked.version.cuda is None
    assert fjax.__version__ == own


def test_hub_downloads_once_and_checks_the_hash(tmp_path):
    import fjax.utils.model_zoo

    src = tmp_path / "weights.pt"
    fjax.save({"w": fjax.arange(3.0)}, src)
    cache = tmp_path / "cache"
    sd = fjax.hub.load_state_dict_from_url(src.as_uri(), model_dir=str(cache), progress=False)
    assert sd["w"].tolist() == [0.0, 1.0, 2.0] and (cache / "weights.pt").exists()
    src.unlink()  # cached: no second download
    assert fjax.utils.model_zoo.load_url(src.as_uri(), model_dir=str(cache))["w"].tolist() == [0.0, 1.0, 2.0]
    good = tmp_path / "m-00000000.pt"
    fjax.save({"w": fjax.ones(1)}, good)
    with pytest.raises(RuntimeError, match="invalid hash value"):
        fjax.hub.load_state_dict_from_url(
            good.as_uri(), model_dir=str(tmp_path / "c2"), check_hash=True, progress=False
        )
    assert not (tmp_path / "c2" / good.name).exists()  # nothing half-written is left
    digest = hashlib.sha256(good.read_bytes()).hexdigest()[:8]
    named = tmp_path / f"m-{digest}.pt"
    named.write_bytes(good.read_bytes())
    assert fjax.hub.load_state_dict_from_url(
        named.as_uri(), model_dir=str(tmp_path / "c3"), check_hash=True, progress=False
    )["w"].tolist() == [1.0]
    with pytest.raises(NotImplementedError, match="GitHub"):
        fjax.hub.load("pytorch/vision", "resnet18")


def test_sdpa_kernel_sets_the_switches_for_the_block_as_torch():
    from torch.nn.attention import SDPBackend as TB
    from torch.nn.attention import sdpa_kernel as torch_kernel

    from fjax.nn.attention import SDPBackend, sdpa_kernel

    def switches(mod):
        return [getattr(mod.backends.cuda, f"{n}_sdp_enabled")() for n in ("flash", "mem_efficient", "math", "cudnn")]

    q = np.random.default_rng(1).normal(size=(2, 2, 5, 4)).astype(np.float32)
    with torch_kernel([TB.MATH, TB.CUDNN_ATTENTION]):
        want_switches = switches(torch)
        want = torch.nn.functional.scaled_dot_product_attention(*[torch.from_numpy(q)] * 3).numpy()
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION]):
        got_switches = switches(fjax)
        got = fjax.nn.functional.scaled_dot_product_attention(*[fjax.tensor(q)] * 3).numpy()
    assert got_switches == want_switches and switches(fjax) == switches(torch)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="SDPBackend"):
        with sdpa_kernel(["math"]):
            pass
    with fjax.backends.cuda.sdp_kernel(enable_flash=False, enable_math=True):
        assert switches(fjax) == [False, True, True, True]
    assert switches(fjax) == [True, True, True, True]


def test_removable_handle_with_an_extra_dict():
    hooks, extra = OrderedDict(), OrderedDict()
    h = fjax.utils.hooks.RemovableHandle(hooks, extra_dict=extra)
    hooks[h.id], extra[h.id] = print, True
    with h:
        pass
    assert not hooks and not extra


def test_dlpack_round_trips_with_numpy_and_torch():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    t = fjax.utils.dlpack.from_dlpack(x)
    x[0, 0] = 99.0  # values are copied: a later write on the other side is not seen
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and t.dtype == fjax.float32
    assert fjax.from_dlpack(torch.arange(4)).tolist() == [0, 1, 2, 3]
    assert torch.from_dlpack(fjax.utils.dlpack.to_dlpack(fjax.arange(3))).tolist() == [0, 1, 2]
    assert np.from_dlpack(fjax.ones(2)[1:]).tolist() == [1.0]
    assert (
        fjax.utils.dlpack.from_dlpack(fjax.utils.dlpack.to_dlpack(fjax.ones(2, dtype=fjax.int32))).dtype == fjax.int32
    )
    with pytest.raises(RuntimeError, match="detach"):
        np.from_dlpack(fjax.ones(2, requires_grad=True))
    with pytest.raises(fjax.OpError, match="from_dlpack"):
        fjax.from_dlpack([1, 2])


def test_autograd_profiler_records_ops_unless_disabled():
    with fjax.autograd.profiler.profile(record_shapes=True) as prof:
        with fjax.autograd.profiler.record_function("block"):
            fjax.ones(4).exp().sum()
    table = prof.table(sort_by="cpu_time_total")
    assert "exp" in table and "block" in table
    with fjax.autograd.profiler.profile(enabled=False) as off:
        fjax.ones(4).exp()
    assert off.events() == []
    with fjax.autograd.profiler.emit_nvtx():
        pass


def test_assert_as_torchs():
    for cond in (True, torch.tensor(True)):
        torch._assert(cond, "no")
        fjax._assert(fjax.tensor(True) if isinstance(cond, torch.Tensor) else cond, "no")
    for cond, mine in ((False, False), (torch.tensor(False), fjax.tensor(False))):
        with pytest.raises(AssertionError, match="shape is wrong"):
            torch._assert(cond, "shape is wrong")
        with pytest.raises(AssertionError, match="shape is wrong"):
            fjax._assert(mine, "shape is wrong")


def test_overrides_report_no_torch_function_dispatch():
    assert not fjax.overrides.has_torch_function((fjax.ones(1),)) and fjax.overrides.is_tensor_like(fjax.ones(1))
    assert not fjax.overrides.has_torch_function_variadic(fjax.ones(1), 2)

    class Mode(fjax.overrides.TorchFunctionMode):
        pass

    with pytest.raises(NotImplementedError, match="Mode"):
        with Mode():
            pass
    assert fjax.types.Number == typing.Union[int, float, bool]


def test_multiprocessing_spawn_runs_and_reports_a_failure(tmp_path):
    import _spawn_target

    fjax.multiprocessing.spawn(_spawn_target.write_rank, args=(str(tmp_path),), nprocs=2)
    assert sorted(os.listdir(tmp_path)) == ["rank0", "rank1"]
    with pytest.raises(fjax.multiprocessing.ProcessRaisedException, match="rank one fails"):
        fjax.multiprocessing.spawn(_spawn_target.fail_on_one, nprocs=2)
    assert fjax.multiprocessing.get_sharing_strategy() in fjax.multiprocessing.get_all_sharing_strategies()
    with pytest.raises(ValueError, match="sharing"):
        fjax.multiprocessing.set_sharing_strategy("shared_nothing")


def test_every_namespace_imports_under_mock_torch():
    names = [
        "torch.jit",
        "torch.hub",
        "torch.version",
        "torch.types",
        "torch.overrides",
        "torch.multiprocessing",
        "torch.nn.attention",
        "torch.utils.hooks",
        "torch.utils.dlpack",
        "torch.utils.model_zoo",
        "torch.autograd.profiler",
        "torch.autograd.forward_ad",
        "torch.utils._pytree",
        "torch.nn.grad",
        "torch.cuda.nvtx",
    ]
    import importlib

    with mock_torch.enable():
        for name in names:
            assert importlib.import_module(name) is sys.modules["fjax" + name[len("torch") :]], name


def _scheduled_cycles(mod, name: str, steps: int = 11, **kw):
    """Per saved cycle, how many ``name`` op events it holds; ops run ``i + 1`` times in step ``i``."""
    saved = []

    def ready(p):
        saved.append(sum(1 for e in p.events() if e.name == name))

    with mod.profiler.profile(schedule=mod.profiler.schedule(**kw), on_trace_ready=ready) as prof:
        for i in range(steps):
            for _ in range(i + 1):
                mod.ones(2).add(1)
            prof.step()
    return saved


@pytest.mark.parametrize(
    "kw",
    [
        dict(wait=1, warmup=1, active=2, repeat=2),
        dict(wait=0, warmup=1, active=1),
        dict(wait=2, warmup=0, active=3, skip_first=1),
        dict(wait=3, warmup=1, active=1, skip_first=2, skip_first_wait=1),
    ],
)
def test_profiler_schedule_records_and_saves_the_steps_torch_does(kw):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch: "won't be using warmup", "clears events at the end of each cycle")
        want = _scheduled_cycles(torch, "aten::add", **kw)
        got = _scheduled_cycles(fjax, "add", **kw)
    assert got == want and want


def test_tensorboard_trace_handler_writes_a_chrome_trace_per_cycle(tmp_path):
    import gzip
    import json

    handler = fjax.profiler.tensorboard_trace_handler(tmp_path, worker_name="w0", use_gzip=True)
    with fjax.profiler.profile(
        schedule=fjax.profiler.schedule(wait=0, warmup=1, active=1, repeat=2), on_trace_ready=handler
    ) as prof:
        for _ in range(5):
            fjax.ones(3).exp()
            prof.step()
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(".pt.trace.json.gz") for f in files)
    trace = json.loads(gzip.open(tmp_path / files[0]).read())
    assert any(e.get("name") == "exp" for e in trace["traceEvents"])
    with pytest.raises(ValueError, match="active"):
        fjax.profiler.schedule(wait=1, warmup=1, active=0)


def test_module_load_and_record_stream_as_torch():
    for assign in (False, True):
        mine, theirs = fjax.zeros(2), torch.zeros(2)
        got = mine.module_load(fjax.ones(2, requires_grad=True), assign=assign)
        want = theirs.module_load(torch.ones(2, requires_grad=True), assign=assign)
        assert got.tolist() == want.tolist() and got.requires_grad == want.requires_grad
        assert mine.tolist() == theirs.tolist()  # written into unless assign
    assert fjax.ones(1).record_stream(None) is None


def test_nvtx_ranges_nest_and_report_their_depth():
    nvtx = fjax.cuda.nvtx
    assert [nvtx.range_push("a"), nvtx.range_push("b"), nvtx.range_pop(), nvtx.range_pop(), nvtx.range_pop()] == [
        0,
        1,
        1,
        0,
        -1,
    ]
    rid = nvtx.range_start("cross-thread")
    nvtx.range_end(rid)
    with nvtx.range("step {}", 1):
        nvtx.mark("here")


@pytest.mark.parametrize(
    "dims, x, w, kw",
    [
        (1, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
        (2, (1, 3, 7, 6), (4, 3, 3, 2), dict(padding=(1, 0), dilation=(2, 1))),
        (3, (1, 2, 5, 5, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1))),
    ],
)
def test_nn_grad_convolution_gradients_match_torch(dims, x, w, kw):
    import fjax.nn.grad

    rng = np.random.default_rng(dims)
    xv, wv = rng.normal(size=x).astype(np.float32), rng.normal(size=w).astype(np.float32)
    conv = getattr(torch.nn.functional, f"conv{dims}d")
    out_shape = conv(torch.from_numpy(xv), torch.from_numpy(wv), None, **kw).shape
    gv = rng.normal(size=tuple(out_shape)).astype(np.float32)
    want_x = getattr(torch.nn.grad, f"conv{dims}d_input")(x, torch.from_numpy(wv), torch.from_numpy(gv), **kw)
    want_w = getattr(torch.nn.grad, f"conv{dims}d_weight")(torch.from_numpy(xv), w, torch.from_numpy(gv), **kw)
    got_x = getattr(fjax.nn.grad, f"conv{dims}d_input")(x, fjax.tensor(wv), fjax.tensor(gv), **kw)
    got_w = getattr(fjax.nn.grad, f"conv{dims}d_weight")(fjax.tensor(xv), w, fjax.tensor(gv), **kw)
    np.testing.assert_allclose(got_x.numpy(), want_x.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_w.numpy(), want_w.numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(fjax.OpError, match="grad_output has shape"):
        getattr(fjax.nn.grad, f"conv{dims}d_input")(x, fjax.tensor(wv), fjax.tensor(gv[..., :-1]), **kw)


def test_nn_grad_is_differentiable_in_the_weight():
    import fjax.nn.grad

    rng = np.random.default_rng(7)
    wv, gv = rng.normal(size=(2, 1, 3)).astype(np.float32), rng.normal(size=(1, 2, 4)).astype(np.float32)
    tw, fw_ = torch.tensor(wv, requires_grad=True), fjax.tensor(wv, requires_grad=True)
    (torch.nn.grad.conv1d_input((1, 1, 6), tw, torch.from_numpy(gv)) ** 2).sum().backward()
    (fjax.nn.grad.conv1d_input((1, 1, 6), fw_, fjax.tensor(gv)) ** 2).sum().backward()
    np.testing.assert_allclose(fw_.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "actual, expected, kw",
    [
        ([1.0, 2.0], [1.0, 2.00001], {}),
        ([1.0, 2.0], [1.0, 2.01], {}),
        ([1.0, float("nan")], [1.0, float("nan")], {}),
        ([1.0, float("nan")], [1.0, float("nan")], dict(equal_nan=False)),
        ([1, 2], [1.0, 2.0], {}),
        ([1.0, 2.0], [1.0, 2.5], dict(rtol=0.3, atol=0)),
    ],
)
def test_deprecated_assert_allclose_as_torch(actual, expected, kw):
    import warnings

    def outcome(mod):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                mod.testing.assert_allclose(mod.tensor(actual), expected, **kw)
            except AssertionError:
                return "mismatch"
            return "ok"

    assert outcome(fjax) == outcome(torch)
    with pytest.warns(FutureWarning, match="deprecated"):
        fjax.testing.assert_allclose(fjax.tensor([1.0]), [1.0])


def _modules_with_examples():
    import fjax.autograd.forward_ad
    import fjax.nn.attention
    import fjax.nn.grad
    import fjax.utils._pytree
    import fjax.utils.dlpack
    import fjax.utils.hooks

    return [
        fjax.jit, fjax.hub, fjax.version, fjax.overrides, fjax.multiprocessing, fjax.nn.attention, fjax.nn.grad,
        fjax.utils.hooks, fjax.utils.dlpack, fjax.autograd.profiler, fjax.autograd.forward_ad, fjax.cuda.nvtx,
        fjax.utils._pytree,
    ]  # fmt: skip


@pytest.mark.parametrize("module", _modules_with_examples(), ids=lambda m: m.__name__)
def test_module_examples_run(module):
    """The examples of each module's docstring and of the functions and classes it defines."""
    import doctest
    import inspect

    objs = [module] + [
        o for n, o in sorted(vars(module).items())
        if not n.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o)) and o.__module__ == module.__name__
    ]  # fmt: skip
    parser = doctest.DocTestParser()
    ran = 0
    for obj in objs:
        doc = inspect.getdoc(obj) or ""
        if not parser.get_examples(doc):
            continue
        test = parser.get_doctest(doc, {"fjax": fjax}, getattr(obj, "__qualname__", module.__name__), None, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
        out = []
        runner.run(test, out=out.append)
        assert runner.failures == 0, "".join(out)
        ran += 1
    assert ran, f"{module.__name__} has no example"


def test_dtype_to_complex_and_to_real_as_torch():
    for name in ("float32", "float64", "complex64", "complex128", "int64", "bool", "float16"):
        for method in ("to_complex", "to_real"):
            if name == "float16" and method == "to_complex":
                continue  # torch's complex32: fjax has none (it raises)
            try:
                want = str(getattr(getattr(torch, name), method)()).split(".")[1]
            except RuntimeError:
                with pytest.raises(RuntimeError, match="Unknown Complex ScalarType"):
                    getattr(getattr(fjax, name), method)()
                continue
            assert getattr(getattr(fjax, name), method)().name == want, (name, method)


def test_generator_clone_state_draws_the_same_numbers():
    g = fjax.Generator().manual_seed(11)
    fjax.rand(2, generator=g)
    h = g.clone_state()
    assert fjax.equal(fjax.randn(4, generator=g), fjax.randn(4, generator=h)) and h.device == g.device


def test_autograd_mode_queries_as_torch():
    """(Each mode set explicitly: constructing ``set_multithreading_enabled`` sets it, as torch's,
    and a docstring example elsewhere leaves it off.)"""
    assert fjax.autograd.is_view_replay_enabled() is torch.autograd.is_view_replay_enabled() is False
    with fjax.autograd.set_multithreading_enabled(True), torch.autograd.set_multithreading_enabled(True):
        assert fjax.autograd.is_multithreading_enabled() is torch.autograd.is_multithreading_enabled() is True
        with fjax.autograd.set_multithreading_enabled(False), torch.autograd.set_multithreading_enabled(False):
            assert fjax.autograd.is_multithreading_enabled() is torch.autograd.is_multithreading_enabled() is False
        assert fjax.autograd.is_multithreading_enabled() is True
