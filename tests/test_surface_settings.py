"""torch's process-wide settings, dtype utilities, windows, constants and the smaller names of
torch, torch.autograd and torch.func, each against torch itself."""

from __future__ import annotations

import array
import itertools
import math
import warnings

import numpy as np
import pytest
import torch

import fjax
from fjax import _tensor_str

SEED = np.random.SeedSequence().entropy % 2**32
RNG = np.random.default_rng(SEED)

NAMES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
]


def _name(d) -> str:
    return str(d).split(".")[1]


# -- dtypes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_finfo_iinfo_match_torch(name):
    f, t = getattr(fjax, name), getattr(torch, name)
    assert f.is_floating_point == t.is_floating_point and f.is_complex == t.is_complex and f.is_signed == t.is_signed
    assert f.itemsize == t.itemsize
    if t.is_floating_point or t.is_complex:
        a, b = fjax.finfo(f), torch.finfo(t)
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
            assert getattr(a, attr) == getattr(b, attr), (name, attr)
        assert repr(a) == repr(b)
        with pytest.raises(TypeError):
            fjax.iinfo(f)
    elif t is not torch.bool:
        a, b = fjax.iinfo(f), torch.iinfo(t)
        assert (a.bits, a.min, a.max, a.dtype) == (b.bits, b.min, b.max, b.dtype)
        assert repr(a) == repr(b)
        with pytest.raises(TypeError):
            fjax.finfo(f)
    else:
        with pytest.raises(TypeError):
            fjax.iinfo(f)
    assert fjax.finfo().dtype == torch.finfo().dtype == "float32"


def test_promote_types_and_can_cast_grid():
    for a, b in itertools.product(NAMES, NAMES):
        fa, fb, ta, tb = getattr(fjax, a), getattr(fjax, b), getattr(torch, a), getattr(torch, b)
        assert fjax.can_cast(fa, fb) == torch.can_cast(ta, tb), (a, b)
        try:
            expected = _name(torch.promote_types(ta, tb))
        except RuntimeError:
            with pytest.raises(TypeError, match="promote_types"):
                fjax.promote_types(fa, fb)
            continue
        assert fjax.promote_types(fa, fb).name == expected, (a, b)


def test_result_type_grid():
    names = [n for n in NAMES[:15] if n not in ("uint16", "uint32", "uint64")]
    operands = []
    for n in names:
        for shape in ((2,), ()):
            data = RNG.integers(0, 2, size=shape)
            operands.append((fjax.tensor(data, dtype=getattr(fjax, n)), torch.tensor(data, dtype=getattr(torch, n))))
    operands += [(v, v) for v in (True, 3, -2.5, 1 + 2j)]
    for (fa, ta), (fb, tb) in itertools.product(operands, operands):
        if not (isinstance(fa, fjax.Tensor) or isinstance(fb, fjax.Tensor)):
            continue
        expected = torch.result_type(ta, tb)
        if expected == torch.complex32:  # no jax counterpart
            continue
        assert fjax.result_type(fa, fb).name == _name(expected), (fa, fb)
    with pytest.raises(TypeError, match="result_type"):
        fjax.result_type(fjax.ones(1), "x")


def test_constants():
    assert (fjax.e, fjax.pi, fjax.inf) == (torch.e, torch.pi, torch.inf)
    assert math.isnan(fjax.nan) and fjax.newaxis is None is torch.newaxis
    x = fjax.tensor(RNG.standard_normal(3).astype(np.float32))
    assert tuple(x[fjax.newaxis].shape) == (1, 3)
    assert all(isinstance(getattr(fjax, n), bool) for n in ("has_lapack", "has_mkl", "has_openmp", "has_spectral"))


# -- print options --------------------------------------------------------------------------------
@pytest.fixture
def printoptions():
    yield
    fjax.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


def _body(t: fjax.Tensor) -> str:
    r = repr(t)
    return r[len("tensor(") : r.rindex(", dtype=")]


def _torch_body(t: torch.Tensor) -> str:
    s = torch._tensor_str._tensor_str(t, len("tensor("))
    if t.numel() == 0 and t.dim() != 1:
        s += f", size={tuple(t.shape)}"
    return s


def _cases():
    n = RNG.standard_normal
    return [
        n((3, 4)).astype(np.float32),
        (n(7) * 1e5).astype(np.float32),
        (n((2, 3)) * 1e-6).astype(np.float64),
        (n(5) * 1e9).astype(np.float64),
        np.round(n((4, 2)) * 100).astype(np.float32),
        np.array([1.0, np.inf, -np.inf, np.nan, 0.0], np.float32),
        RNG.integers(-1000, 1000, size=(3, 5)),
        RNG.integers(0, 2, size=6).astype(bool),
        (n(4) + 1j * n(4)).astype(np.complex64),
        n((5, 6, 7)).astype(np.float32),
        np.arange(2000, dtype=np.float32),
        np.array(n(), np.float32),
        np.zeros((0, 3), np.float32),
        np.zeros((0,), np.float32),
        n(6).astype(np.float16),
    ]


OPTIONS = [
    {},
    {"precision": 2},
    {"threshold": 5},
    {"edgeitems": 1, "threshold": 10},
    {"linewidth": 30},
    {"sci_mode": True},
    {"sci_mode": False},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "short", "precision": 6},
]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_repr_honours_printoptions(options, printoptions):
    fjax.set_printoptions(**options)
    torch.set_printoptions(**options)
    for a in _cases():
        assert _body(fjax.tensor(a)) == _torch_body(torch.tensor(a)), (options, a.dtype, a.shape, SEED)
    b = RNG.standard_normal(5).astype(np.float32)
    assert _body(fjax.tensor(b).to(fjax.bfloat16)) == _torch_body(torch.tensor(b).to(torch.bfloat16))
    assert _tensor_str.get_printoptions()["sci_mode"] == options.get("sci_mode")


def test_printoptions_errors(printoptions):
    with pytest.raises(ValueError, match="profile"):
        fjax.set_printoptions(profile="long")


# -- settings -------------------------------------------------------------------------------------
def test_threads():
    assert fjax.get_num_threads() >= 1 and fjax.get_num_interop_threads() >= 1
    n = fjax.get_num_threads()
    fjax.set_num_threads(n + 1)
    assert fjax.get_num_threads() == n + 1
    fjax.set_num_threads(n)
    fjax.set_num_interop_threads(fjax.get_num_interop_threads())
    fjax.init_num_threads()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="set_num_threads"):
            fjax.set_num_threads(bad)


def test_deterministic_settings_follow_torch():
    try:
        for mode in (0, 1, 2, "default", "warn", "error"):
            fjax.set_deterministic_debug_mode(mode)
            torch.set_deterministic_debug_mode(mode)
            assert fjax.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
            assert fjax.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
            assert (
                fjax.is_deterministic_algorithms_warn_only_enabled()
                == torch.is_deterministic_algorithms_warn_only_enabled()
            )
        fjax.use_deterministic_algorithms(True, warn_only=True)
        assert fjax.get_deterministic_debug_mode() == 1
        with pytest.raises(TypeError, match="bool"):
            fjax.use_deterministic_algorithms(1)
        with pytest.raises(RuntimeError, match="debug_mode"):
            fjax.set_deterministic_debug_mode("loud")
    finally:
        fjax.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)


def test_float32_matmul_precision():
    import jax

    before = jax.config.jax_default_matmul_precision
    try:
        for p in ("highest", "high", "medium"):
            fjax.set_float32_matmul_precision(p)
            assert fjax.get_float32_matmul_precision() == p
        fjax.set_float32_matmul_precision("highest")
        assert jax.config.jax_default_matmul_precision == "highest"
        assert not fjax.backends.cuda.matmul.allow_tf32
        with pytest.raises(ValueError, match="set_float32_matmul_precision"):
            fjax.set_float32_matmul_precision("low")
    finally:
        jax.config.update("jax_default_matmul_precision", before)


def test_misc_settings():
    assert fjax.set_flush_denormal(True) is False
    try:
        fjax.set_warn_always(True)
        assert fjax.is_warn_always_enabled()
        assert any(f[0] == "always" and getattr(f[3], "pattern", "") == r"fjax(\.|$)" for f in warnings.filters)
    finally:
        fjax.set_warn_always(False)
    assert not fjax.is_warn_always_enabled()
    assert not any(getattr(f[3], "pattern", "") == r"fjax(\.|$)" for f in warnings.filters)
    try:
        for name in ("DoubleTensor", "HalfTensor", "FloatTensor"):
            fjax.set_default_tensor_type(getattr(fjax, name))
            torch.set_default_tensor_type(getattr(torch, name))
            assert fjax.get_default_dtype().name == _name(torch.get_default_dtype())
            assert fjax.tensor([1.5]).dtype.name == _name(torch.tensor([1.5]).dtype)
        fjax.set_default_tensor_type("torch.DoubleTensor")
        assert fjax.get_default_dtype() == fjax.float64
    finally:
        fjax.set_default_tensor_type("torch.FloatTensor")
        torch.set_default_dtype(torch.float32)
    with pytest.raises(TypeError):
        fjax.set_default_tensor_type(fjax.LongTensor)
    with pytest.raises(NotImplementedError, match="CUDA"):
        fjax.set_default_tensor_type("torch.cuda.FloatTensor")


def test_default_device():
    try:
        fjax.set_default_device("cpu")
        assert fjax.get_default_device() == fjax.device("cpu") == fjax.zeros(2).device
    finally:
        fjax.set_default_device(None)
    assert fjax.get_default_device() == fjax.ones(1).device
    with pytest.raises(NotImplementedError, match="meta"):
        fjax.set_default_device("meta")
    assert fjax.get_device_module("cpu") is fjax.cpu and fjax.get_device_module("cuda:0") is fjax.cuda
    assert fjax.get_device_module() is (fjax.cpu if not fjax.cuda.is_available() else fjax.cuda)
    with pytest.raises(RuntimeError, match="xpu"):
        fjax.get_device_module("xpu")


def test_typename_and_is_tensor():
    for obj in (1, 2.5, "s", [1], None, math.sqrt, int, np.float32(1)):
        assert fjax.typename(obj) == torch.typename(obj), obj
    data = RNG.standard_normal(2)
    assert fjax.typename(fjax.tensor(data)) == "fjax.DoubleTensor"
    assert torch.typename(torch.tensor(data)) == "torch.DoubleTensor"
    assert fjax.is_tensor(fjax.tensor(data)) and fjax.is_tensor(fjax.nn.Parameter(fjax.tensor(data)))
    assert not fjax.is_tensor(data) and not fjax.is_tensor(torch.tensor(data))


def test_inference_mode_flag():
    assert not fjax.is_inference_mode_enabled()
    with fjax.inference_mode():
        assert fjax.is_inference_mode_enabled() and not fjax.is_grad_enabled()
        with fjax.inference_mode(False):
            assert not fjax.is_inference_mode_enabled()
        assert fjax.is_inference_mode_enabled()
    with fjax.no_grad():
        assert not fjax.is_inference_mode_enabled()
    assert not fjax.is_inference_mode_enabled()


def test_legacy_autocast_accessors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert fjax.get_autocast_cpu_dtype() == fjax.amp.get_autocast_dtype("cpu") == fjax.bfloat16
        assert _name(torch.get_autocast_cpu_dtype()) == "bfloat16"
        assert fjax.get_autocast_gpu_dtype() == fjax.float16 and _name(torch.get_autocast_gpu_dtype()) == "float16"
        assert fjax.get_autocast_ipu_dtype().name == _name(torch.get_autocast_ipu_dtype())
        assert fjax.get_autocast_xla_dtype().name == _name(torch.get_autocast_xla_dtype())
        assert fjax.is_autocast_cpu_enabled() is torch.is_autocast_cpu_enabled() is False
        assert fjax.is_autocast_ipu_enabled() is torch.is_autocast_ipu_enabled() is False
        assert fjax.is_autocast_xla_enabled() is torch.is_autocast_xla_enabled() is False
        try:
            fjax.set_autocast_cpu_enabled(True)
            assert fjax.amp.is_autocast_enabled("cpu")
            a = fjax.tensor(RNG.standard_normal((2, 2)).astype(np.float32))
            assert fjax.mm(a, a).dtype == fjax.bfloat16
            fjax.set_autocast_cpu_dtype(fjax.float16)
            assert fjax.amp.get_autocast_dtype("cpu") == fjax.float16
            fjax.set_autocast_gpu_dtype(fjax.bfloat16)
            assert fjax.amp.get_autocast_dtype("cuda") == fjax.bfloat16
            fjax.set_autocast_ipu_enabled(True)
            fjax.set_autocast_xla_dtype(fjax.float16)
            fjax.set_autocast_ipu_dtype(fjax.bfloat16)
            assert fjax.is_autocast_ipu_enabled() and fjax.get_autocast_xla_dtype() == fjax.float16
            assert fjax.get_autocast_ipu_dtype() == fjax.bfloat16
        finally:
            fjax.set_autocast_cpu_enabled(False)
            fjax.set_autocast_cpu_dtype(fjax.bfloat16)
            fjax.set_autocast_gpu_dtype(fjax.float16)
            fjax.set_autocast_ipu_enabled(False)
            fjax.set_autocast_xla_dtype(fjax.bfloat16)
            fjax.set_autocast_ipu_dtype(fjax.float16)
    with pytest.warns(DeprecationWarning, match="get_autocast_dtype"):
        fjax.get_autocast_cpu_dtype()


# -- anomaly mode ---------------------------------------------------------------------------------
def test_detect_anomaly_names_the_nan_op():
    data = np.abs(RNG.standard_normal(3)).astype(np.float32)
    data[1] = 0.0
    with pytest.warns(UserWarning, match="Anomaly Detection"):
        ctx = fjax.autograd.detect_anomaly()
    x = fjax.tensor(data, requires_grad=True)
    with ctx:
        assert fjax.is_anomaly_enabled() and fjax.is_anomaly_check_nan_enabled()
        with pytest.raises(RuntimeError, match=r"Function 'sqrtBackward' returned nan values in its 0th output"):
            fjax.sqrt(x).mul(0.0).sum().backward()
    assert not fjax.is_anomaly_enabled()
    tx = torch.tensor(data, requires_grad=True)
    with torch.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="SqrtBackward0"):
        torch.sqrt(tx).mul(0.0).sum().backward()
    # off: torch's NaN gradient, no error
    fjax.sqrt(x).mul(0.0).sum().backward()
    torch.sqrt(tx).mul(0.0).sum().backward()
    np.testing.assert_array_equal(np.isnan(x.grad.numpy()), np.isnan(tx.grad.numpy()))
    with fjax.autograd.set_detect_anomaly(True, check_nan=False):
        assert fjax.is_anomaly_enabled() and not fjax.is_anomaly_check_nan_enabled()
        fjax.sqrt(x).mul(0.0).sum().backward()
    assert not fjax.is_anomaly_enabled() and fjax.is_anomaly_check_nan_enabled()

    @fjax.autograd.detect_anomaly()
    def step():
        fjax.sqrt(x).mul(0.0).sum().backward()

    with pytest.raises(RuntimeError, match="sqrtBackward"):
        step()
    fjax.set_anomaly_enabled(True)
    try:
        y = fjax.tensor(data + 1, requires_grad=True)
        fjax.sqrt(y).sum().backward()  # finite: no error
        np.testing.assert_allclose(y.grad.numpy(), 0.5 / np.sqrt(data + 1), rtol=1e-6, atol=1e-6)
    finally:
        fjax.set_anomaly_enabled(False)
    with fjax.autograd.set_multithreading_enabled(False), fjax.autograd.enforce_grad_layout_policy(False):
        pass


# -- gradcheck ------------------------------------------------------------------------------------
def _square_functions(lib, wrong: bool):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (3.0 if wrong else 2.0) * x * g

    return Square.apply


@pytest.mark.parametrize("wrong", [False, True])
def test_gradcheck_custom_function(wrong):
    data = RNG.standard_normal((2, 3))
    x = fjax.tensor(data, dtype=fjax.float64, requires_grad=True)
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    expected = torch.autograd.gradcheck(_square_functions(torch, wrong), (tx,), raise_exception=False)
    assert expected is (not wrong)
    assert fjax.autograd.gradcheck(_square_functions(fjax, wrong), (x,), raise_exception=False) is expected
    if wrong:
        from fjax.autograd.gradcheck import GradcheckError

        with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
            fjax.autograd.gradcheck(_square_functions(fjax, wrong), x)


def test_gradcheck_several_inputs_and_gradgradcheck():
    a, b = RNG.standard_normal((3,)), RNG.standard_normal((3,))

    def f(lib):
        return lambda x, y: (lib.sin(x) * y, (x * y).sum())

    fx, fy = (fjax.tensor(v, dtype=fjax.float64, requires_grad=True) for v in (a, b))
    tx, ty = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a, b))
    assert fjax.autograd.gradcheck(f(fjax), (fx, fy)) is torch.autograd.gradcheck(f(torch), (tx, ty)) is True
    assert fjax.autograd.gradgradcheck(lambda x: x**3, (fx,)) is True
    assert torch.autograd.gradgradcheck(lambda x: x**3, (tx,)) is True
    x32 = fjax.tensor(a.astype(np.float32), requires_grad=True)
    with pytest.warns(UserWarning, match="double precision"):
        fjax.autograd.gradcheck(fjax.sin, (x32,), eps=1e-3, atol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match="requires_grad"):
        fjax.autograd.gradcheck(fjax.sin, (fjax.tensor(a),))
    with pytest.raises(NotImplementedError, match="fast_mode"):
        fjax.autograd.gradcheck(fjax.sin, (fx,), fast_mode=True)


# -- windows --------------------------------------------------------------------------------------
WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
def test_windows_match_torch(name):
    for n, periodic, dtype in itertools.product((0, 1, 2, 5, 8, 13), (True, False), ("float32", "float64")):
        got = getattr(fjax, name)(n, periodic, dtype=getattr(fjax, dtype))
        want = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
        assert got.dtype.name == dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6 if dtype == "float32" else 1e-12)
    assert getattr(fjax, name)(6).dtype == fjax.float32
    with pytest.raises(fjax.OpError, match="floating point"):
        getattr(fjax, name)(4, dtype=fjax.int64)
    with pytest.raises(fjax.OpError, match="non-negative"):
        getattr(fjax, name)(-1)


def test_window_parameters():
    alpha, beta = RNG.uniform(0.3, 0.7), RNG.uniform(0.1, 0.5)
    np.testing.assert_allclose(
        fjax.hamming_window(9, False, alpha, beta).numpy(),
        torch.hamming_window(9, False, alpha, beta).numpy(),
        atol=1e-6,
    )
    kb = RNG.uniform(0, 15)
    np.testing.assert_allclose(
        fjax.kaiser_window(10, True, kb).numpy(), torch.kaiser_window(10, True, kb).numpy(), atol=1e-6
    )
    w = fjax.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf


# -- creation and misc ----------------------------------------------------------------------------
def test_asarray():
    data = RNG.standard_normal((2, 3)).astype(np.float32)
    t = fjax.tensor(data)
    assert fjax.asarray(t) is t and fjax.asarray(t, dtype=fjax.float32) is t
    c = fjax.asarray(t, copy=True)
    assert c is not t and np.array_equal(c.numpy(), data)
    d = fjax.asarray(t, dtype=fjax.float64)
    assert d.dtype == fjax.float64 and np.array_equal(d.numpy(), torch.asarray(torch.tensor(data), dtype=torch.float64))
    with pytest.raises(ValueError, match="copy=False"):
        fjax.asarray(t, dtype=fjax.float64, copy=False)
    for obj in (data, data.tolist(), 3, 2.5, True, [1, 2]):
        got, want = fjax.asarray(obj), torch.asarray(obj)
        assert got.dtype.name == _name(want.dtype) and np.allclose(got.numpy(), want.numpy())
    r = fjax.asarray(data.tolist(), requires_grad=True)
    assert r.requires_grad and r.is_leaf


def test_frombuffer():
    values = RNG.integers(-100, 100, size=6).tolist()
    buf = array.array("i", values)
    for count, offset in ((-1, 0), (2, 4), (3, 8)):
        got = fjax.frombuffer(buf, dtype=fjax.int32, count=count, offset=offset)
        want = torch.frombuffer(buf, dtype=torch.int32, count=count, offset=offset)
        assert got.tolist() == want.tolist()
    raw = bytes(RNG.integers(0, 256, size=16, dtype=np.uint8))
    assert fjax.frombuffer(raw, dtype=fjax.float32).numpy().tobytes() == raw
    with pytest.raises(ValueError, match="multiple of"):
        fjax.frombuffer(raw[:6], dtype=fjax.float32)
    with pytest.raises(ValueError, match="greater than"):
        fjax.frombuffer(raw, dtype=fjax.float32, count=5)


def test_range():
    start = int(RNG.integers(-5, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cases = [((start, start + 4), {}), ((start, start + 3, 0.5), {}), ((3, -2, -1.5), {})]
        cases += [((1, 6, 2), {"dtype": "int64"})]
        for args, kwargs in cases:
            fk = {"dtype": getattr(fjax, kwargs["dtype"])} if kwargs else {}
            tk = {"dtype": getattr(torch, kwargs["dtype"])} if kwargs else {}
            got, want = fjax.range(*args, **fk), torch.range(*args, **tk)
            assert got.dtype.name == _name(want.dtype)
            np.testing.assert_allclose(got.numpy(), want.numpy())
    with pytest.warns(UserWarning, match="deprecated"):
        fjax.range(0, 2)
    with pytest.raises(TypeError, match="end"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fjax.range(5)
    with pytest.raises(NotImplementedError, match="out="), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fjax.range(0, 2, out=fjax.zeros(3))


def test_sym_functions_match_torch():
    a, b = float(RNG.standard_normal() * 10), int(RNG.integers(-10, 10))
    for x, y in ((a, b), (b, b + 1), (b, a), (True, b)):
        assert fjax.sym_max(x, y) == torch.sym_max(x, y) and type(fjax.sym_max(x, y)) is type(torch.sym_max(x, y))
        assert fjax.sym_min(x, y) == torch.sym_min(x, y) and type(fjax.sym_min(x, y)) is type(torch.sym_min(x, y))
    assert fjax.sym_int(a) == torch.sym_int(a) and fjax.sym_float(b) == torch.sym_float(b)
    assert fjax.sym_not(b > 0) == torch.sym_not(b > 0)
    assert fjax.sym_sqrt(abs(a)) == torch.sym_sqrt(abs(a))
    assert fjax.sym_sum([a, b, 1]) == torch.sym_sum([a, b, 1]) and fjax.sym_sum(b, 2) == torch.sym_sum(b, 2)
    assert fjax.sym_ite(a > 0, 1, 2) == torch.sym_ite(a > 0, 1, 2)
    with pytest.raises(AssertionError):
        fjax.sym_ite(True, 1, 2.0)


def test_cond_eager_and_traced():
    data = RNG.standard_normal((4, 3)).astype(np.float32)

    def branches(lib):
        return lambda t: t * 2, lambda t: lib.sin(t) - 1

    for row in data:
        got = fjax.cond(fjax.tensor(row).sum() > 0, *branches(fjax), (fjax.tensor(row),))
        want = torch.cond(torch.tensor(row).sum() > 0, *branches(torch), (torch.tensor(row),))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert fjax.cond(False, lambda: 1, lambda: 2) == 2
    # traced: under vmap and grad the branch is chosen per value by jax.lax.cond
    batched = fjax.func.vmap(lambda t: fjax.cond(t.sum() > 0, *branches(fjax), (t,)))(fjax.tensor(data))
    expected = [torch.cond(torch.tensor(r).sum() > 0, *branches(torch), (torch.tensor(r),)).numpy() for r in data]
    np.testing.assert_allclose(batched.numpy(), np.stack(expected), rtol=1e-6, atol=1e-6)
    g = fjax.func.grad(lambda t: fjax.cond(t.sum() > 0, lambda u: (u * u).sum(), lambda u: u.sum() * 3, (t,)))
    for row in data:
        want = 2 * row if row.sum() > 0 else np.full_like(row, 3.0)
        np.testing.assert_allclose(g(fjax.tensor(row)).numpy(), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="one-element"):
        fjax.cond(fjax.ones(2) > 0, lambda: 1, lambda: 2)


def test_stream_event_and_exceptions():
    s = fjax.Stream()
    assert s.query() and s.device_type == "cpu" and s.device_index == 0
    s.synchronize()
    e = s.record_event()
    assert isinstance(e, fjax.Event) and e.query()
    start, end = fjax.Event(enable_timing=True), fjax.Event(enable_timing=True)
    start.record()
    fjax.ones(3).sum().item()
    end.record()
    assert end.elapsed_time(start) <= 0 <= start.elapsed_time(end)
    with pytest.raises(ValueError, match="enable_timing"):
        fjax.Event().elapsed_time(end)
    for name in ("OutOfMemoryError", "AcceleratorError", "FatalError"):
        assert issubclass(getattr(fjax, name), RuntimeError) == issubclass(getattr(torch, name), RuntimeError)


# -- torch.func -----------------------------------------------------------------------------------
def test_linearize_matches_torch():
    data, tangent = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))

    def f(lib):
        return lambda x: lib.sin(x) * x.exp()

    out, jvp_fn = fjax.func.linearize(f(fjax), fjax.tensor(data))
    tout, tjvp_fn = torch.func.linearize(f(torch), torch.tensor(data))
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-12)
    np.testing.assert_allclose(jvp_fn(fjax.tensor(tangent)).numpy(), tjvp_fn(torch.tensor(tangent)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(
        jvp_fn(fjax.tensor(-tangent)).numpy(), -tjvp_fn(torch.tensor(tangent)).numpy(), rtol=1e-10
    )
    with pytest.raises(RuntimeError, match="linearize"):
        jvp_fn(fjax.ones(3))


def test_func_utilities():
    data = RNG.standard_normal((4, 3)).astype(np.float32)
    fm = fjax.func.replace_all_batch_norm_modules_(fjax.nn.Sequential(fjax.nn.Linear(3, 3), fjax.nn.BatchNorm1d(3)))
    tm = torch.func.replace_all_batch_norm_modules_(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3)))
    tm[0].load_state_dict({k: torch.tensor(v.numpy()) for k, v in fm[0].state_dict().items()})
    for f, t in ((fm[1], tm[1]),):
        assert (f.running_mean, f.running_var, f.num_batches_tracked) == (None, None, None)
        assert f.track_running_stats is t.track_running_stats is False
    for mode in ("train", "eval"):
        getattr(fm, mode)(), getattr(tm, mode)()
        np.testing.assert_allclose(
            fm(fjax.tensor(data)).detach().numpy(), tm(torch.tensor(data)).detach().numpy(), atol=1e-5
        )

    def mutate(x):
        y = x.clone()
        y.mul_(2)
        return y + 1

    np.testing.assert_allclose(
        fjax.func.functionalize(mutate)(fjax.tensor(data)).numpy(), 2 * data + 1, rtol=1e-6, atol=1e-6
    )
    with pytest.raises(RuntimeError, match="remove"):
        fjax.func.functionalize(mutate, remove="views")
    x = fjax.tensor(data)
    assert fjax.func.debug_unwrap(x) is x


def test_thread_safe_generator():
    assert fjax.thread_safe_generator() is None is torch.thread_safe_generator()
    seen = []

    class Data(fjax.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            seen.append(fjax.thread_safe_generator())
            return fjax.randint(0, 10, (1,), generator=seen[-1])

    assert len(list(fjax.utils.data.DataLoader(Data(), num_workers=1))) == 2
    assert seen == [None, None]
