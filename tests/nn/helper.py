"""One helper for layer oracle tests: same weights and inputs in fjax and torch, compare
outputs, input gradients, parameter gradients and buffers.

Set FJAX_TEST_SEED to replay a failure (the seed is in every failure message).
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

import fjax

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))
TOL = {"float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}


def rng(salt: int = 0) -> np.random.Generator:
    return np.random.default_rng(SEED + salt)


def copy_weights(fj: fjax.nn.Module, th: torch.nn.Module) -> None:
    """Load torch's state_dict into the fjax module (the path a user porting weights takes)."""
    fj.load_state_dict({k: v.detach().cpu().numpy() for k, v in th.state_dict().items()})


def _np(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    if isinstance(t, fjax.Tensor):
        return np.asarray(t.detach()._data)
    return np.asarray(t)


def close(a, b, what: str, rtol: float, atol: float) -> None:
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape} (seed={SEED})"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{what} (seed={SEED})")


def _flat(out) -> list:
    if isinstance(out, (tuple, list)):
        return [o for o in out if o is not None]
    return [out]


def check_module(
    fj: fjax.nn.Module,
    th: torch.nn.Module,
    inputs: list,
    *,
    train: bool = True,
    dtype: str = "float32",
    tol: tuple | None = None,
    kwargs: dict | None = None,
    copy: bool = True,
    seed_salt: int = 0,
    grad_inputs: tuple | None = None,
) -> None:
    """Run ``fj(*inputs)`` and ``th(*inputs)`` from the same weights and compare everything.

    ``inputs`` are numpy arrays (floating ones get gradients, or only those at the indices
    ``grad_inputs``) or other values passed as-is; ``kwargs`` likewise. Gradients flow from a
    random cotangent on every float output.
    """
    if dtype == "float64":
        fj.double()
        th.double()
    if copy:
        copy_weights(fj, th)
    fj.train(train)
    th.train(train)
    rtol, atol = tol or TOL[dtype]
    what = f"{type(th).__name__}(train={train}, {dtype})"
    kwargs = kwargs or {}

    def convert(x, to_torch, leaves, i=None):
        if not isinstance(x, np.ndarray):
            return x
        if x.dtype.kind == "f":
            x = x.astype(dtype)
        needs = x.dtype.kind == "f" and (grad_inputs is None or i in grad_inputs)
        t = torch.from_numpy(x.copy()).requires_grad_(needs) if to_torch else fjax.tensor(x, requires_grad=needs)
        if needs:
            leaves.append(t)
        return t

    fj_leaves, th_leaves = [], []
    fj_in = [convert(x, False, fj_leaves, i) for i, x in enumerate(inputs)]
    th_in = [convert(x, True, th_leaves, i) for i, x in enumerate(inputs)]
    fj_kw = {k: convert(v, False, fj_leaves) for k, v in kwargs.items()}
    th_kw = {k: convert(v, True, th_leaves) for k, v in kwargs.items()}
    fj_out, th_out = _flat(fj(*fj_in, **fj_kw)), _flat(th(*th_in, **th_kw))
    assert len(fj_out) == len(th_out), f"{what}: {len(fj_out)} outputs, torch has {len(th_out)}"
    for i, (a, b) in enumerate(zip(fj_out, th_out)):
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1], f"{what}: output {i} dtype"
        close(a, b, f"{what}: output {i}", rtol, atol)
    for (name, a), (tname, b) in zip(fj.named_buffers(), th.named_buffers()):
        assert name == tname, f"{what}: buffer {name} != torch {tname}"
        close(a, b, f"{what}: buffer {name} after forward", rtol, atol)

    fj_params = [(n, p) for n, p in fj.named_parameters() if p.requires_grad]
    th_params = [(n, p) for n, p in th.named_parameters() if p.requires_grad]
    assert [n for n, _ in fj_params] == [n for n, _ in th_params], f"{what}: parameter names differ"
    pairs = [(a, b) for a, b in zip(fj_out, th_out) if b.requires_grad]
    if not pairs:
        return
    r = rng(seed_salt + 1)
    cts = [r.standard_normal(tuple(b.shape)).astype(dtype) for _, b in pairs]
    fj_wrt = fj_leaves + [p for _, p in fj_params]
    th_wrt = th_leaves + [p for _, p in th_params]
    fj_grads = fjax.autograd.grad([a for a, _ in pairs], fj_wrt, [fjax.tensor(c) for c in cts], allow_unused=True)
    th_grads = torch.autograd.grad([b for _, b in pairs], th_wrt, [torch.from_numpy(c) for c in cts], allow_unused=True)
    names = [f"input {i}" for i in range(len(fj_leaves))] + [f"parameter {n}" for n, _ in fj_params]
    for name, x, ga, gb in zip(names, fj_wrt, fj_grads, th_grads):
        a = np.zeros(tuple(x.shape), dtype) if ga is None else ga
        b = np.zeros(tuple(x.shape), dtype) if gb is None else gb
        close(a, b, f"{what}: grad of {name}", rtol * 10, atol * 10)
