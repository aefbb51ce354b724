"""``fjax.special`` and ``fjax.fft`` against torch 2.13: signatures, ``norm`` modes, ``n``/``s`` padding and
trimming, complex inputs, gradients the op-table oracle does not reach, and errors. The op-by-op values
and gradients on random inputs are in ``tests/oracle/samples_special.py`` and ``samples_fft.py``."""

from __future__ import annotations

import functools
import inspect
import re

import numpy as np
import pytest
import torch

import fjax
import fjax.fft
import fjax.special

RNG = np.random.default_rng(1234)


def _real(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _complex(*shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _close(ours, theirs, rtol=1e-4, atol=1e-5):
    theirs = theirs.detach().resolve_conj() if isinstance(theirs, torch.Tensor) else theirs
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(np.asarray(ours._data), theirs.numpy(), rtol=rtol, atol=atol, equal_nan=True)


# -- signatures ------------------------------------------------------------------------------------


def _split_top(text):
    """``text`` split at the commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [p for p in parts + [cur.strip()] if p]


def _torch_signature(fn, name):
    """(positional, keyword-only) as [(name, default or None)] from torch's documented signature; ``out`` is
    left out (fjax has no output buffers)."""
    match = re.search(rf"(?<![\w.]){name}\((.*?)\)(?:\s*->| *\n)", fn.__doc__ or "", re.S)
    assert match, f"torch documents no signature for {name}"
    positional, keyword, star = [], [], False
    for part in _split_top(match.group(1)):
        if part == "*":
            star = True
            continue
        pname, _, default = part.partition("=")
        if pname != "out":
            (keyword if star else positional).append((pname, default or None))
    return positional, keyword


def _fjax_signature(fn):
    ps = inspect.signature(fn).parameters.values()
    positional = [
        (p.name, None if p.default is p.empty else repr(p.default)) for p in ps if p.kind is p.POSITIONAL_OR_KEYWORD
    ]
    keyword = [(p.name, None if p.default is p.empty else repr(p.default)) for p in ps if p.kind is p.KEYWORD_ONLY]
    return positional, keyword


NAMES = [("special", n) for n in fjax.special.__all__] + [("fft", n) for n in fjax.fft.__all__]


@pytest.mark.parametrize("module,name", NAMES, ids=[f"{m}.{n}" for m, n in NAMES])
def test_signature_is_torchs(module, name):
    ours = getattr(getattr(fjax, module), name)
    theirs = getattr(getattr(torch, module), name)
    (t_pos, t_kw), (f_pos, f_kw) = _torch_signature(theirs, name), _fjax_signature(ours)
    assert f_pos == t_pos, f"{module}.{name}: positional {f_pos} vs torch {t_pos}"
    f_kw = dict(f_kw)
    if name == "round":  # torch.special.round takes decimals= too, undocumented
        assert f_kw.pop("decimals") == "0"
        torch.special.round(torch.ones(1), decimals=1)
    for pname, default in t_kw:
        assert pname in f_kw, f"{module}.{name}: torch's keyword {pname!r} missing"
        if pname != "layout":  # torch.strided; fjax has one layout
            assert f_kw.pop(pname) == default, f"{module}.{name}: {pname}={f_kw.get(pname)} vs torch {default}"
        else:
            f_kw.pop(pname)
    assert not f_kw, f"{module}.{name}: keywords torch lacks: {f_kw}"


def test_the_namespaces_cover_the_brief():
    wanted = (
        "expit logit erf erfc erfinv erfcx exp2 expm1 log1p log_softmax softmax logsumexp gammaln digamma psi "
        "polygamma multigammaln i0 i0e i1 i1e ndtr ndtri log_ndtr sinc round entr xlogy xlog1py zeta bessel_j0 "
        "bessel_j1 gammainc gammaincc airy_ai bessel_y0 bessel_y1 modified_bessel_k0 modified_bessel_k1 "
        "scaled_modified_bessel_k0 scaled_modified_bessel_k1 hermite_polynomial_h hermite_polynomial_he "
        "laguerre_polynomial_l legendre_polynomial_p"
    ).split() + POLYNOMIALS
    assert set(wanted) <= set(fjax.special.__all__)
    public = {n for n in dir(torch.fft) if not n.startswith("_") and inspect.isbuiltin(getattr(torch.fft, n))}
    assert public == set(fjax.fft.__all__), public ^ set(fjax.fft.__all__)
    assert fjax.special.psi is fjax.special.digamma is fjax.digamma
    assert fjax.special.expit is fjax.sigmoid and fjax.special.gammaln is fjax.lgamma


# -- fjax.special beyond the oracle's random draws ---------------------------------------------------


def test_special_reductions_and_aliases_match_torch():
    x = _real(3, 4)
    a, t = fjax.tensor(x), torch.from_numpy(x)
    _close(fjax.special.softmax(a, 1), torch.special.softmax(t, 1))
    _close(fjax.special.log_softmax(a, 0, dtype=fjax.float64), torch.special.log_softmax(t, 0, dtype=torch.float64))
    _close(fjax.special.logsumexp(a, (0, 1), keepdim=True), torch.special.logsumexp(t, (0, 1), keepdim=True))
    _close(fjax.special.expit(a), torch.special.expit(t))
    _close(fjax.special.logit(a.sigmoid(), eps=0.1), torch.special.logit(t.sigmoid(), eps=0.1))
    _close(fjax.special.round(a * 10, decimals=1), torch.special.round(t * 10, decimals=1))


def test_special_edge_values_match_torch():
    x = np.array([0.0, -0.0, -1.0, -2.0, 0.5, np.inf, -np.inf, np.nan], np.float64)
    a, t = fjax.tensor(x), torch.from_numpy(x)
    for n in (0, 1, 2):
        _close(fjax.special.polygamma(n, a), torch.special.polygamma(n, t), rtol=1e-7, atol=1e-9)
    for name in ("entr", "i0", "i0e", "i1", "i1e", "ndtr", "log_ndtr", "erfcx", "bessel_j0", "bessel_j1"):
        _close(getattr(fjax.special, name)(a), getattr(torch.special, name)(t), rtol=1e-7, atol=1e-9)
    p = np.array([0.0, 1.0, 0.5, -0.5, 1.5], np.float64)
    _close(fjax.special.ndtri(fjax.tensor(p)), torch.special.ndtri(torch.from_numpy(p)))
    nan = float("nan")
    x, y = np.array([0.0, 0.0, 1.0, 2.0]), np.array([-1.0, nan, -2.0, 0.5])
    _close(
        fjax.special.xlog1py(fjax.tensor(x), fjax.tensor(y)), torch.special.xlog1py(torch.tensor(x), torch.tensor(y))
    )


def test_bessel_j0_j1_are_accurate():
    scipy_special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-60.0, 60.0, 4001), [1e3, -1e5, 1e-300]])
    for name, ref in (("bessel_j0", scipy_special.j0), ("bessel_j1", scipy_special.j1)):
        ours = np.asarray(getattr(fjax.special, name)(fjax.tensor(x))._data)
        np.testing.assert_allclose(ours, ref(x), rtol=0, atol=2e-12, err_msg=name)
        # torch's own float64 J0/J1 drift from the true values as |x| grows: ~1e-8 off at |x| = 5, ~5e-7 just
        # above; below 4.9 they stay within the oracle's float64 tolerance of ours
        inner = np.linspace(-4.9, 4.9, 99)
        _close(
            getattr(fjax.special, name)(fjax.tensor(inner)),
            getattr(torch.special, name)(torch.from_numpy(inner)),
            rtol=1e-7,
            atol=1e-9,
        )


def _grads(fj_fn, th_fn, *arrays, cotangent=None):
    fj = [fjax.tensor(a, requires_grad=True) for a in arrays]
    th = [torch.tensor(a, requires_grad=True) for a in arrays]
    fo, to = fj_fn(*fj), th_fn(*th)
    c = np.ones(tuple(to.shape), np.float32) if cotangent is None else cotangent
    fg = fjax.autograd.grad([fo], fj, [fjax.tensor(c)])
    tg = torch.autograd.grad([to], th, [torch.tensor(c)])
    return fg, tg


def test_special_gradients_at_edges_match_torch():
    x = np.array([0.0, 0.5, -1.5, 3.0], np.float32)
    for name in ("i0", "i0e", "i1", "i1e", "entr", "erfcx", "log_ndtr"):
        (fg,), (tg,) = _grads(getattr(fjax.special, name), getattr(torch.special, name), x)
        _close(fg, tg, rtol=1e-3, atol=1e-4)
    p = np.array([0.0, 1.0, 0.3, 2.0], np.float32)
    (fg,), (tg,) = _grads(fjax.special.ndtri, torch.special.ndtri, p)
    _close(fg, tg, rtol=1e-3)
    (fg,), (tg,) = _grads(lambda v: fjax.special.polygamma(2, v), lambda v: torch.special.polygamma(2, v), x[1:])
    _close(fg, tg, rtol=1e-3)
    (fg,), (tg,) = _grads(
        lambda v: fjax.special.multigammaln(v, 4), lambda v: torch.special.multigammaln(v, 4), x[3:] + 1
    )
    _close(fg, tg, rtol=1e-3)


def test_gammainc_gradient_in_the_limit_matches_torch():
    a = np.array([0.5, 1.0, 3.0], np.float32)
    x = np.array([0.2, 1.0, 4.0], np.float32)
    for name in ("gammainc", "gammaincc"):
        fx, tx = fjax.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (fg,) = fjax.autograd.grad([getattr(fjax.special, name)(fjax.tensor(a), fx).sum()], [fx])
        (tg,) = torch.autograd.grad([getattr(torch.special, name)(torch.tensor(a), tx).sum()], [tx])
        _close(fg, tg, rtol=1e-3)


def test_special_outputs_torch_leaves_without_gradient():
    x = fjax.tensor([0.5, 1.0], requires_grad=True)
    for fn in (fjax.special.bessel_j0, fjax.special.bessel_j1, fjax.special.modified_bessel_i0):
        assert not fn(x).requires_grad
    assert not fjax.special.zeta(x, 2.0).requires_grad


def test_polygamma_at_negative_inputs_and_poles_matches_torch():
    x = np.concatenate([RNG.uniform(-30.0, 0.0, 200), [-np.inf, -3.0, -1.0, -0.0, 0.0, np.inf, np.nan, -2.5, -1e-30]])
    for dtype, tol in ((np.float32, dict(rtol=1.3e-6, atol=1e-5)), (np.float64, dict(rtol=1e-9, atol=1e-9))):
        a, t = fjax.tensor(x.astype(dtype)), torch.from_numpy(x.astype(dtype))
        for n in range(6):
            _close(fjax.special.polygamma(n, a), torch.special.polygamma(n, t), **tol)
    # the gradients: psi^(n+1), also at negative x; digamma's and lgamma's, to second order
    v = RNG.uniform(-9.0, 9.0, 50).astype(np.float32)
    for n in range(4):
        (fg,), (tg,) = _grads(functools.partial(fjax.polygamma, n), functools.partial(torch.polygamma, n), v)
        _close(fg, tg, rtol=1e-5)
    for fj_fn, th_fn in ((fjax.digamma, torch.digamma), (fjax.lgamma, torch.lgamma)):
        (fg,), (tg,) = _grads(fj_fn, th_fn, v)
        _close(fg, tg, rtol=1e-5)
        f, t = fjax.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        (fg,) = fjax.autograd.grad([fj_fn(f).sum()], [f], create_graph=True)
        (tg,) = torch.autograd.grad([th_fn(t).sum()], [t], create_graph=True)
        _close(fjax.autograd.grad([fg.sum()], [f])[0], torch.autograd.grad([tg.sum()], [t])[0], rtol=1e-5)


POLYNOMIALS = [f"{prefix}chebyshev_polynomial_{kind}" for prefix in ("", "shifted_") for kind in "tuvw"] + [
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_special_cases_match_torch(name):
    # the endpoints (x = +-1, and 0 for the shifted kinds), the trigonometric forms above degree 4..8, negative,
    # fractional, NaN and infinite degrees, degrees past the Hermite limits (128 in float32, 512 in float64)
    x = np.array([-1.5, -1.0, -0.999, -0.5, 0.0, 1e-9, 0.25, 0.5, 0.9999999, 1.0, 1.0000001, 1.5, 3.0, np.inf])
    n = np.array([-3, -0.5, 0, 0.7, 1, 2, 3, 5, 6, 7, 8, 9, 10, 20, 129, 200, 513, np.nan, np.inf, -np.inf, 1e30])
    xs, ns = (g.ravel() for g in np.meshgrid(x, n))
    # float32: a recurrence of 100+ steps rounds differently from torch's compiled loop by up to ~4e-4
    for dtype, tol in ((np.float32, dict(rtol=1e-3, atol=1e-5)), (np.float64, dict(rtol=1e-7, atol=1e-7))):
        a, t = xs.astype(dtype), ns.astype(dtype)
        ours, theirs = getattr(fjax.special, name), getattr(torch.special, name)
        _close(ours(fjax.tensor(a), fjax.tensor(t)), theirs(torch.from_numpy(a), torch.from_numpy(t)), **tol)
        _close(ours(fjax.tensor(a), 7), theirs(torch.from_numpy(a), 7), **tol)
    # a number as the input, an int64 degree, broadcasting
    degrees = np.array([[0], [1], [4]])
    _close(
        getattr(fjax.special, name)(0.5, fjax.tensor(degrees)), getattr(torch.special, name)(0.5, torch.tensor(degrees))
    )
    assert not getattr(fjax.special, name)(fjax.tensor([0.5], requires_grad=True), 3).requires_grad


def test_bessel_second_kind_and_airy_are_accurate_and_match_torch_at_the_edges():
    scipy_special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(1e-6, 60.0, 6001), [1e-300, 1.999, 2.0, 2.001, 11.999, 12.0, 1e3, 1e5]])
    refs = {
        "bessel_y0": scipy_special.y0,
        "bessel_y1": scipy_special.y1,
        "modified_bessel_k0": scipy_special.k0,
        "modified_bessel_k1": scipy_special.k1,
        "scaled_modified_bessel_k0": scipy_special.k0e,
        "scaled_modified_bessel_k1": scipy_special.k1e,
    }
    for name, ref in refs.items():
        ours = np.asarray(getattr(fjax.special, name)(fjax.tensor(x))._data)
        np.testing.assert_allclose(ours, ref(x), rtol=1e-12, atol=2e-12, err_msg=name)  # Y near its zeros: ~1e-12
    xa = np.concatenate([np.linspace(-60.0, 30.0, 9001), [-7.5, -7.4999, 1.0, 1.0001]])
    ours = np.asarray(fjax.special.airy_ai(fjax.tensor(xa))._data)
    np.testing.assert_allclose(ours, scipy_special.airy(xa)[0], rtol=1e-10, atol=1e-10)
    edges = np.array([0.0, -0.0, -1.0, 1e-30, np.inf, -np.inf, np.nan], np.float32)
    for name in [*refs, "airy_ai"]:
        _close(getattr(fjax.special, name)(fjax.tensor(edges)), getattr(torch.special, name)(torch.from_numpy(edges)))
        assert not getattr(fjax.special, name)(fjax.tensor([0.5], requires_grad=True)).requires_grad


def test_special_errors_name_the_function():
    with pytest.raises(ValueError, match=r"special_multigammaln: all elements .*shape \(2,\).*greater than \(p-1\)/2"):
        fjax.special.multigammaln(fjax.tensor([0.2, 3.0]), 2)
    with pytest.raises(ValueError, match="special_multigammaln: p has to be"):
        fjax.special.multigammaln(fjax.tensor([3.0]), 0)
    with pytest.raises(ValueError, match="special_polygamma: .*negative n"):
        fjax.special.polygamma(-1, fjax.tensor([1.0]))
    with pytest.raises(TypeError, match=r"special_i0: complex input .*complex64"):
        fjax.special.i0(fjax.tensor([1 + 1j]))


# -- fjax.fft --------------------------------------------------------------------------------------

NORMS = ("backward", "ortho", "forward")  # None is "backward": every default call checks it


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_1d_norms_and_lengths_match_torch(name):
    real_input = name in ("rfft", "ihfft")
    x = _real(3, 6) if real_input else _complex(3, 6)
    a, t = fjax.tensor(x), torch.from_numpy(x)
    fj, th = getattr(fjax.fft, name), getattr(torch.fft, name)
    for norm in NORMS:
        _close(fj(a, norm=norm), th(t, norm=norm))
    for n, dim in ((4, 1), (5, -2)):  # trimmed, and zero-padded
        _close(fj(a, n, dim, "ortho"), th(t, n, dim, "ortho"))
    if not real_input:
        x64 = _complex(6, dtype=np.complex128)
        _close(fj(fjax.tensor(x64)), th(torch.from_numpy(x64)), 1e-10, 1e-12)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"])
def test_nd_norms_and_shapes_match_torch(name):
    real_input = name in ("rfftn", "ihfftn")
    x = _real(2, 3, 4) if real_input else _complex(2, 3, 4)
    a, t = fjax.tensor(x), torch.from_numpy(x)
    fj, th = getattr(fjax.fft, name), getattr(torch.fft, name)
    for norm in NORMS[1:]:
        _close(fj(a, norm=norm), th(t, norm=norm))
    for s, dim in ((None, (0, 2)), ((5, 2), None), ((-1, 6), (0, 1)), ([3], (-3,))):
        _close(fj(a, s=s, dim=dim), th(t, s=s, dim=dim))


def test_fft_input_dtypes_match_torch():
    for dtype in (np.int64, np.bool_):
        x = (RNG.standard_normal(4) * 3).astype(dtype)
        for name in ("fft", "rfft", "irfft"):
            _close(getattr(fjax.fft, name)(fjax.tensor(x)), getattr(torch.fft, name)(torch.from_numpy(x)), 1e-4, 1e-4)
    _close(fjax.fft.fftn(fjax.tensor(2.5)), torch.fft.fftn(torch.tensor(2.5)))
    x = _real(2, 3)
    _close(fjax.fft.fftn(fjax.tensor(x), dim=()), torch.fft.fftn(torch.from_numpy(x), dim=()))


def test_fftshift_and_frequencies_match_torch():
    x = np.arange(24).reshape(4, 6)
    for dim in (None, 0, (1,), (0, 1), -1):
        for name in ("fftshift", "ifftshift"):
            _close(getattr(fjax.fft, name)(fjax.tensor(x), dim), getattr(torch.fft, name)(torch.from_numpy(x), dim))
    for n in range(8):
        for d in (1.0, 0.1, 3):
            for dtype in (None, "float64", "float16"):
                for name in ("fftfreq", "rfftfreq"):
                    ours = getattr(fjax.fft, name)(n, d, dtype=dtype and getattr(fjax, dtype))
                    theirs = getattr(torch.fft, name)(n, d, dtype=dtype and getattr(torch, dtype))
                    np.testing.assert_array_equal(np.asarray(ours._data).astype(np.float64), theirs.double().numpy())
                    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    _close(fjax.fft.fftfreq(3, 0), torch.fft.fftfreq(3, 0))
    assert fjax.fft.rfftfreq(4, requires_grad=True).requires_grad


def test_gradients_of_real_losses_through_transforms_match_torch():
    x = _real(2, 8)
    w = _complex(5).astype(np.complex64)

    def filtered(fft, v, wv):  # a real signal, filtered in the frequency domain
        return (fft.irfft(fft.rfft(v, norm="ortho") * wv, n=8, norm="ortho") ** 2).sum()

    def hermitian(fft, v, wv):
        return fft.hfft(fft.ihfft(v) * wv, n=8).sum() + fft.irfftn(fft.rfftn(v, s=(3, 6)), s=(3, 6)).pow(2).sum()

    for loss in (filtered, hermitian):
        fx, tx = fjax.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        loss(fjax.fft, fx, fjax.tensor(w)).backward()
        loss(torch.fft, tx, torch.tensor(w)).backward()
        _close(fx.grad, tx.grad, 1e-3, 1e-4)


def test_gradient_of_fft_under_real_cotangents_matches_torch():
    x = _real(3, 5)
    c = _real(3, 4).astype(np.complex64)  # a real cotangent of a complex output: torch and JAX agree
    (fg,), (tg,) = _grads(lambda v: fjax.fft.fft2(v, s=(3, 4)), lambda v: torch.fft.fft2(v, s=(3, 4)), x, cotangent=c)
    _close(fg, tg, 1e-3, 1e-4)


def test_gradient_under_complex_cotangents_matches_torch():
    x = _real(6)
    c = _complex(6)
    (fg,), (tg,) = _grads(fjax.fft.fft, torch.fft.fft, x, cotangent=c)
    _close(fg, tg, 1e-3, 1e-4)


def test_gradient_of_spectrum_magnitude_matches_torch():
    x = _real(6)
    fx, tx = fjax.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fjax.fft.fft(fx).abs().sum().backward()
    torch.fft.fft(tx).abs().sum().backward()
    _close(fx.grad, tx.grad, 1e-3, 1e-4)


def test_fft_errors_name_the_function_and_input():
    x = fjax.ones(4, 6)
    cases = [
        (lambda: fjax.fft.fft(x, norm="bad"), r"fft_fft: Invalid normalization mode: 'bad'"),
        (lambda: fjax.fft.fft(x, n=0), r"fft_fft: Invalid number of data points \(0\).*shape=\(4, 6\)"),
        (lambda: fjax.fft.irfft(fjax.ones(1)), r"fft_irfft: Invalid number of data points \(0\)"),
        (lambda: fjax.fft.rfft(fjax.tensor([1j])), r"fft_rfft: expects a real input tensor.*complex64"),
        (lambda: fjax.fft.fft(x.half()), r"fft_fft: unsupported dtype float16"),
        (lambda: fjax.fft.fft(x, dim=2), r"fft_fft: Dimension out of range .*\[-2, 1\], but got 2"),
        (lambda: fjax.fft.fft(fjax.tensor(1.0)), r"fft_fft: Dimension specified as -1 but tensor has no dimensions"),
        (lambda: fjax.fft.fftn(x, s=(3,), dim=(0, 1)), r"fft_fftn: When given, dim and shape arguments"),
        (lambda: fjax.fft.fftn(x, dim=(0, 0)), r"fft_fftn: FFT dims must be unique"),
        (lambda: fjax.fft.fftn(x, s=(1, 2, 3)), r"fft_fftn: Got shape with 3 values but input tensor only has 2"),
        (lambda: fjax.fft.rfftn(x, dim=()), r"fft_rfftn: must transform at least one axis"),
        (lambda: fjax.fft.fft(x, dim=(0,)), r"fft_fft: argument 'dim' must be int, not tuple"),
    ]
    for call, message in cases:
        with pytest.raises(fjax.OpError, match=message):
            call()
    with pytest.raises(NotImplementedError, match="layout"):
        fjax.fft.fftfreq(4, layout="sparse_coo")
    with pytest.raises(TypeError, match="fft.fftfreq: dtype must be a floating point dtype"):
        fjax.fft.fftfreq(4, dtype=fjax.int64)
