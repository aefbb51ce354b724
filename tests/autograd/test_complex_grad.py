"""Complex gradients in torch's convention (the conjugate of JAX's) against torch.autograd and
torch.func: complex leaves, real -> complex -> real chains, complex seeds, hooks, retain_grad,
create_graph, custom Functions and the functional transforms."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import fjax
import fjax.autograd.functional as fa
import fjax.func as ff

SEED = random.randrange(2**31)
rng = np.random.default_rng(SEED)


def crandn(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def cpair(*shape, requires_grad=True):
    a = crandn(*shape)
    return fjax.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def rpair(*shape, requires_grad=True):
    a = rng.standard_normal(shape)
    return fjax.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def close(f, t):
    assert f is not None and t is not None, (f, t)
    f, t = f.detach().numpy(), t.detach().numpy()
    assert f.dtype == t.dtype, (f.dtype, t.dtype)
    np.testing.assert_allclose(f, t, rtol=1e-9, atol=1e-10, err_msg=f"seed={SEED}")


def mods(z, lib):
    """A real function of a complex tensor that needs no ``real``/``imag``."""
    return lib.abs(z)


CASES = {
    "mul": lambda z, w, lib: mods(z * w, lib).sum(),
    "matmul": lambda z, w, lib: (mods(z @ w, lib) ** 2).sum(),
    "exp": lambda z, w, lib: mods(lib.exp(z) * w, lib).sum(),
    "sum": lambda z, w, lib: mods((z * w).sum(0), lib).sum(),
    "fft": lambda z, w, lib: mods(lib.fft.fft(z * w), lib).sum(),
    "ifft": lambda z, w, lib: mods(lib.fft.ifft(z, dim=0) * w, lib).sum(),
    "irfft": lambda z, w, lib: (lib.fft.irfft(z * w) ** 2).sum(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_complex_leaves_match_torch(case):
    fz, tz = cpair(3, 3)
    fw, tw = cpair(3, 3)
    CASES[case](fz, fw, fjax).backward()
    CASES[case](tz, tw, torch).backward()
    close(fz.grad, tz.grad)
    close(fw.grad, tw.grad)


def test_abs_of_complex_at_zero():
    a = crandn(5)
    a[1] = 0
    fz, tz = fjax.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    fjax.abs(fz).sum().backward()
    torch.abs(tz).sum().backward()
    close(fz.grad, tz.grad)


def test_real_complex_real_chain():
    fx, tx = rpair(8)

    def f(x, lib):
        spec = lib.fft.rfft(x) * lib.tensor(complex(1.5, -0.5))
        return (lib.abs(lib.fft.fft(lib.fft.irfft(spec * spec))) * x).sum()

    f(fx, fjax).backward()
    f(tx, torch).backward()
    close(fx.grad, tx.grad)


def test_complex_gradient_seed_from_real_input():
    # x * (1+2j) seeded with 1+1j: torch gives Re(conj(1+2j) * (1+1j)) = 3 (JAX's convention: -1)
    fx, tx = fjax.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    (fx * (1 + 2j)).backward(fjax.tensor([1 + 1j, 1 + 1j]))
    (tx * (1 + 2j)).backward(torch.tensor([1 + 1j, 1 + 1j]))
    close(fx.grad, tx.grad)
    assert fx.grad.tolist() == [3.0, 3.0]


def test_complex_grad_outputs_backward_and_grad():
    fz, tz = cpair(4, 3)
    fx, tx = rpair(3, 2)
    g = crandn(4, 2)

    def f(z, x, lib):
        return lib.exp(z @ x.to(z.dtype)) * z.sum()

    f(fz, fx, fjax).backward(fjax.tensor(g))
    f(tz, tx, torch).backward(torch.tensor(g))
    close(fz.grad, tz.grad)
    close(fx.grad, tx.grad)
    fgz, fgx = fjax.autograd.grad(f(fz, fx, fjax), (fz, fx), fjax.tensor(g))
    tgz, tgx = torch.autograd.grad(f(tz, tx, torch), (tz, tx), torch.tensor(g))
    close(fgz, tgz)
    close(fgx, tgx)


def test_grad_of_intermediate_and_backward_inputs():
    fz, tz = cpair(3)
    fy, ty = fz * fz, tz * tz
    g = crandn(3)
    (fgy,) = fjax.autograd.grad(fjax.exp(fy), fy, fjax.tensor(g), retain_graph=True)
    (tgy,) = torch.autograd.grad(torch.exp(ty), ty, torch.tensor(g), retain_graph=True)
    close(fgy, tgy)
    fjax.exp(fy).backward(fjax.tensor(g), inputs=[fz])
    torch.exp(ty).backward(torch.tensor(g), inputs=[tz])
    close(fz.grad, tz.grad)


def test_retain_grad_on_complex_intermediate():
    fz, tz = cpair(3)
    fw, tw = cpair(3)
    fy, ty = fz * fw, tz * tw
    fy.retain_grad()
    ty.retain_grad()
    fjax.abs(fjax.exp(fy)).sum().backward()
    torch.abs(torch.exp(ty)).sum().backward()
    close(fy.grad, ty.grad)
    close(fz.grad, tz.grad)


def test_hooks_on_complex_tensors_see_and_return_torch_convention():
    seen = {"fjax": [], "torch": []}

    def run(lib, z, w):
        y = z * w
        y.register_hook(lambda g: seen[lib.__name__].append(g.detach().numpy().copy()))
        y.register_hook(lambda g: g * (2 - 1j))  # a returned gradient is in torch's convention too
        z.register_hook(lambda g: seen[lib.__name__].append(g.detach().numpy().copy()))
        lib.abs(lib.exp(y)).sum().backward()

    fz, tz = cpair(3)
    fw, tw = cpair(3)
    run(fjax, fz, fw)
    run(torch, tz, tw)
    for a, b in zip(seen["fjax"], seen["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10, err_msg=f"seed={SEED}")
    assert len(seen["fjax"]) == len(seen["torch"]) == 2
    close(fz.grad, tz.grad)
    close(fw.grad, tw.grad)


def test_create_graph_double_backward():
    fz, tz = cpair(3)
    fx, tx = rpair(3)
    g = crandn(3)

    def f(z, x, lib):
        return lib.exp(z) * z * x

    (fgz,) = fjax.autograd.grad(f(fz, fx, fjax), fz, fjax.tensor(g), create_graph=True)
    (tgz,) = torch.autograd.grad(f(tz, tx, torch), tz, torch.tensor(g), create_graph=True)
    close(fgz, tgz)
    fjax.abs(fgz * fgz).sum().backward()
    torch.abs(tgz * tgz).sum().backward()
    close(fz.grad, tz.grad)
    close(fx.grad, tx.grad)


def test_create_graph_backward_with_complex_gradient():
    fz, tz = cpair(2, 2)
    g = crandn(2, 2)
    (fz @ fz).backward(fjax.tensor(g), create_graph=True)
    (tz @ tz).backward(torch.tensor(g), create_graph=True)
    close(fz.grad, tz.grad)
    fgrad, tgrad = fz.grad, tz.grad
    fz.grad = tz.grad = None
    fjax.abs(fgrad).sum().backward()
    torch.abs(tgrad).sum().backward()
    close(fz.grad, tz.grad)


def _function(lib):
    class CMul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, z, w):
            ctx.save_for_backward(z, w)
            return z * w

        @staticmethod
        def backward(ctx, g):  # torch's convention: grad * conj(other)
            z, w = ctx.saved_tensors
            return g * w.conj(), g * z.conj()

    return CMul


@pytest.mark.skipif(not hasattr(fjax.Tensor, "conj"), reason="fjax has no Tensor.conj yet")
def test_custom_function_on_complex_inputs():
    fz, tz = cpair(3)
    fw, tw = cpair(3)
    g = crandn(3)
    _function(fjax).apply(fz, fw).backward(fjax.tensor(g))
    _function(torch).apply(tz, tw).backward(torch.tensor(g))
    close(fz.grad, tz.grad)
    close(fw.grad, tw.grad)


def test_custom_function_sees_torch_convention_grad():
    """Without conj: a backward that multiplies by a constant and records what it saw."""
    seen = {}

    def make(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                return z * (1 + 2j)

            @staticmethod
            def backward(ctx, g):
                if not seen.get("traced"):
                    seen[lib.__name__] = g.detach().numpy().copy()
                return g * (3 - 1j)  # not the true gradient: the convention must still match

        return Scale

    fz, tz = cpair(3)
    g = crandn(3)
    fjax.exp(make(fjax).apply(fz)).backward(fjax.tensor(g))
    torch.exp(make(torch).apply(tz)).backward(torch.tensor(g))
    np.testing.assert_allclose(seen["fjax"], seen["torch"], rtol=1e-9, atol=1e-10, err_msg=f"seed={SEED}")
    close(fz.grad, tz.grad)

    # inside a functional transform the same backward runs through jax.custom_vjp
    seen["traced"] = True
    a = crandn(3)
    fgr = ff.grad(lambda z: fjax.abs(make(fjax).apply(z)).sum())(fjax.tensor(a))

    class TorchScale(torch.autograd.Function):  # torch.func needs setup_context
        @staticmethod
        def forward(z):
            return z * (1 + 2j)

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * (3 - 1j)

    tgr = torch.func.grad(lambda z: torch.abs(TorchScale.apply(z)).sum())(torch.tensor(a))
    close(fgr, tgr)


def test_func_grad_of_complex_input():
    a = crandn(4)

    def f(z, lib):
        return lib.abs(lib.exp(z) * z).sum()

    close(ff.grad(lambda z: f(z, fjax))(fjax.tensor(a)), torch.func.grad(lambda z: f(z, torch))(torch.tensor(a)))
    fg, fv = ff.grad_and_value(lambda z: f(z, fjax))(fjax.tensor(a))
    tg, tv = torch.func.grad_and_value(lambda z: f(z, torch))(torch.tensor(a))
    close(fg, tg)
    close(fv, tv)


def test_func_vjp_with_complex_cotangent():
    a, v = crandn(4), crandn(4)
    x = rng.standard_normal(4)

    def f(z, x, lib):
        return lib.exp(z) * z * x

    _, fpull = ff.vjp(lambda z, x: f(z, x, fjax), fjax.tensor(a), fjax.tensor(x))
    _, tpull = torch.func.vjp(lambda z, x: f(z, x, torch), torch.tensor(a), torch.tensor(x))
    for fg, tg in zip(fpull(fjax.tensor(v)), tpull(torch.tensor(v))):
        close(fg, tg)


def test_autograd_functional_vjp_and_jacobian_complex():
    a, v = crandn(4), crandn(4)

    def f(z, lib):
        return lib.exp(z) * z

    close(
        fa.vjp(lambda z: f(z, fjax), fjax.tensor(a), fjax.tensor(v))[1],
        torch.autograd.functional.vjp(lambda z: f(z, torch), torch.tensor(a), torch.tensor(v))[1],
    )
    close(
        fa.jacobian(lambda z: fjax.abs(f(z, fjax)), fjax.tensor(a)),
        torch.autograd.functional.jacobian(lambda z: torch.abs(f(z, torch)), torch.tensor(a)),
    )


def test_real_grads_unchanged_and_real_dtype():
    fx, tx = rpair(3, 3)
    (fjax.tanh(fx @ fx) * 2).sum().backward()
    (torch.tanh(tx @ tx) * 2).sum().backward()
    close(fx.grad, tx.grad)


def test_real_cotangents_pass_through_untouched():
    """The conversion checks the dtype only: a real array is returned as it is (no kernel)."""
    from fjax.autograd.engine import _conj

    a = fjax.tensor([1.0, 2.0])._data
    assert _conj(a) is a
    c = fjax.tensor([1 + 2j])._data
    assert complex(_conj(c)[0]) == 1 - 2j


def test_implicit_gradient_of_complex_scalar_raises_like_torch():
    fz, tz = cpair()
    with pytest.raises(RuntimeError, match="only for real scalar outputs") as ferr:
        (fz * fz).backward()
    with pytest.raises(RuntimeError, match="only for real scalar outputs") as terr:
        (tz * tz).backward()
    assert str(ferr.value) == str(terr.value).replace("torch.", "fjax.")
