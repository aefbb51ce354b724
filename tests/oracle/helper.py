"""One helper that runs the same call on fjax and torch and compares values, dtypes and grads."""

from __future__ import annotations

import numpy as np
import torch

import fjax
from fjax.dispatch import functions

from .spec import B, D, F, I, L, S

TOLERANCES = {  # (rtol, atol) by output dtype; gradients get 10x both
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-9),
}


def _materialize(spec, dtype, rng):
    """A numpy array (or Python value / list) for one input spec."""
    if isinstance(spec, tuple) and not isinstance(spec, L) and all(isinstance(s, int) for s in spec):
        return np.asarray(rng.standard_normal(spec), dtype)
    if isinstance(spec, F):
        return np.asarray(rng.uniform(spec.lo, spec.hi, spec.shape), dtype)
    if isinstance(spec, I):
        return np.asarray(rng.integers(spec.lo, spec.hi, spec.shape), np.int64)
    if isinstance(spec, B):
        return np.asarray(rng.random(spec.shape) < 0.5)
    if isinstance(spec, D):
        return np.asarray(_materialize(spec.spec, dtype, rng), spec.dtype)
    if isinstance(spec, L):
        return [_materialize(s, dtype, rng) for s in spec]
    return spec


def _convert(value, to_torch, grad, leaves):
    if isinstance(value, list) and value and isinstance(value[0], np.ndarray):
        return [_convert(v, to_torch, grad, leaves) for v in value]
    if not isinstance(value, np.ndarray):
        return value
    needs = grad and value.dtype.kind == "f"
    if to_torch:
        t = torch.from_numpy(value.copy()).requires_grad_(needs)
    else:
        t = fjax.tensor(value, requires_grad=needs)
    if needs:
        leaves.append(t)
    return t


def _outputs(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def _torch_fn(name, sample):
    fn = sample.options.get("_torch")
    if fn is not None:
        return fn
    for ns in (torch, torch.nn.functional, torch.special, torch.linalg):
        if hasattr(ns, name):
            return getattr(ns, name)
    raise AssertionError(f"no torch function for {name!r}: give the sample a _torch=")


def _np(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    a = np.asarray(t._data)
    return a.astype(np.float32) if a.dtype.name == "bfloat16" else a


def _close(a, b, rtol, atol, what, dtype_name=None):
    """Exact for integers; for floats the given tolerance, or the output dtype's when None."""
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    if rtol is None:
        rtol, atol = TOLERANCES.get(dtype_name or a.dtype.name, TOLERANCES["float32"])
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def run_case(name: str, sample: S, dtype: str, seed: int) -> None:
    """Call op ``name`` on fresh random inputs in fjax and torch; compare outputs and gradients."""
    rng = np.random.default_rng(seed)
    opts = sample.options
    grad = opts.get("_grad", True)
    args = [_materialize(a, dtype, rng) for a in sample.args]
    kwargs = {k: _materialize(v, dtype, rng) for k, v in sample.kwargs.items()}
    fj_leaves, th_leaves = [], []
    fj_args = [_convert(a, False, grad, fj_leaves) for a in args]
    fj_kwargs = {k: _convert(v, False, grad, fj_leaves) for k, v in kwargs.items()}
    th_args = [_convert(a, True, grad, th_leaves) for a in args]
    th_kwargs = {k: _convert(v, True, grad, th_leaves) for k, v in kwargs.items()}

    fj_out = _outputs(getattr(functions, name)(*fj_args, **fj_kwargs))
    th_out = _outputs(_torch_fn(name, sample)(*th_args, **th_kwargs))
    where = f"{name}{sample!r} dtype={dtype} seed={seed}"
    assert len(fj_out) == len(th_out), f"{where}: {len(fj_out)} outputs, torch has {len(th_out)}"
    rtol, atol = opts.get("_rtol"), opts.get("_atol")
    if rtol is not None and atol is None:
        atol = TOLERANCES.get(dtype, TOLERANCES["float32"])[1]
    if atol is not None and rtol is None:
        rtol = TOLERANCES.get(dtype, TOLERANCES["float32"])[0]
    cmp = opts.get("_cmp")
    for i, (a, b) in enumerate(zip(fj_out, th_out)):
        if not isinstance(b, torch.Tensor):
            assert a == b, f"{where}: output {i} {a!r} != torch {b!r}"
            continue
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1], (
            f"{where}: output {i} dtype {a.dtype} != torch {b.dtype}"
        )
        if cmp is not None:
            cmp(_np(a), _np(b))
        else:
            _close(_np(a), _np(b), rtol, atol, f"{where}: output {i}", str(a.dtype).split(".")[1])

    if not grad or not fj_leaves:
        return
    pairs = [(a, b) for a, b in zip(fj_out, th_out) if isinstance(b, torch.Tensor) and b.requires_grad]
    if not pairs:
        return
    cts = [rng.standard_normal(tuple(b.shape)).astype(_np(b).dtype) for _, b in pairs]
    fj_grads = fjax.autograd.grad([a for a, _ in pairs], fj_leaves, [fjax.tensor(c) for c in cts], allow_unused=True)
    th_grads = torch.autograd.grad(
        [b for _, b in pairs], th_leaves, [torch.from_numpy(c.copy()) for c in cts], allow_unused=True
    )
    for i, (ga, gb) in enumerate(zip(fj_grads, th_grads)):
        a = np.zeros(fj_leaves[i].shape) if ga is None else _np(ga)
        b = np.zeros(tuple(th_leaves[i].shape)) if gb is None else _np(gb)
        g_rtol, g_atol = (rtol, atol) if rtol is not None else TOLERANCES.get(a.dtype.name, TOLERANCES["float32"])
        _close(a, b, g_rtol * 10, g_atol * 10, f"{where}: grad of float input {i}")
