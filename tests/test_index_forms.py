"""The indexing forms torch defines beyond the basic ones, against torch on generated cases: bool
scalars (``x[True]``, ``x[False]``, 0-d bool tensors: a new dim of size 1 or 0; a ``np.bool_`` is an
IndexError in torch) alone
and mixed with ints, slices, None, Ellipsis and index tensors; 0-d integer tensors (they select as
an int does, which moves the advanced dims differently from numpy); and more than one Ellipsis
(torch advances by the same dims at each one). For ``x[idx]``, ``x[idx] = v`` and gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax

from .test_index_fuzz import _agree, _outcome, _show, gen_case

SEED = 3737


def _bool_scalar(rng):
    b = bool(rng.random() < 0.7)
    return [("pybool", b), ("npbool", b), ("tbool", b)][int(rng.integers(3))]


def gen_form(rng):
    """A case of the index fuzzer with the forms of this file put in: bool scalars, 0-d int tensors
    in place of ints, and now and then a second (or third) Ellipsis."""
    shape, index = gen_case(rng)
    entries = []
    for e in index:
        if isinstance(e, int) and not isinstance(e, bool) and rng.random() < 0.4:
            e = ("int0", e)  # the same int, as a 0-d int64 tensor
        entries.append(e)
    for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
        entries.insert(int(rng.integers(len(entries) + 1)), _bool_scalar(rng))
    if rng.random() < 0.25:
        for _ in range(int(rng.integers(1, 3))):
            entries.insert(int(rng.integers(len(entries) + 1)), Ellipsis)
    return shape, tuple(entries)


def _realize(index, lib):
    out = []
    for e in index:
        if isinstance(e, np.ndarray):
            out.append(lib.tensor(e))
        elif isinstance(e, tuple):
            kind, v = e
            out.append(
                {
                    "int": lambda v: lib.tensor(v),
                    "int0": lambda v: lib.tensor(v, dtype=lib.int64),
                    "pybool": lambda v: v,
                    "npbool": lambda v: np.bool_(v),
                    "tbool": lambda v: lib.tensor(v),
                }[kind](v)
            )
        else:
            out.append(e)
    return tuple(out)


def _get(lib, data, index):
    return lib.tensor(data)[_realize(index, lib)]


def _set(lib, data, index, value):
    x = lib.tensor(data)
    x[_realize(index, lib)] = lib.tensor(value) if isinstance(value, np.ndarray) else value
    return x


def _cases(n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        shape, index = gen_form(rng)
        yield rng, shape, index, rng.integers(-50, 50, shape).astype(np.float32)


def _what(shape, index):
    return f"x{list(shape)}[{_show(tuple(e[1] if isinstance(e, tuple) and e[0] != 'int' else e for e in index))}]"


def test_getitem_forms_match_torch():
    counts = {"ok": 0, "raised": 0, "bool": 0, "ellipses": 0}
    for _, shape, index, data in _cases(220, SEED):
        theirs = _outcome(_get, torch, data, index)
        ours = _outcome(_get, fjax, data, index)
        _agree(theirs, ours, _what(shape, index))
        counts["ok" if theirs[0] == "ok" else "raised"] += 1
        if theirs[0] == "ok":
            counts["bool"] += any(isinstance(e, tuple) and "bool" in e[0] for e in index)
            counts["ellipses"] += sum(e is Ellipsis for e in index) > 1
    assert counts["ok"] > 80 and counts["raised"] > 20 and counts["bool"] > 40 and counts["ellipses"] > 8, counts


def test_setitem_forms_match_torch():
    counts = {"ok": 0, "raised": 0}
    for rng, shape, index, data in _cases(140, SEED + 1):
        got = _outcome(_get, torch, data, index)
        if got[0] == "ok" and got[1].numel() and rng.random() < 0.7:
            where = _get(torch, np.arange(int(np.prod(shape))).reshape(shape), index)
            unique = where.numel() == where.unique().numel()
            target = tuple(got[1].shape) if unique else ()
            if rng.random() < 0.3 and target:
                target = target[int(rng.integers(len(target))) :]  # broadcasts over the leading dims
            value = rng.integers(100, 200, target).astype(np.float32)
        else:
            value = float(rng.integers(100, 200))
        theirs = _outcome(_set, torch, data, index, value)
        ours = _outcome(_set, fjax, data, index, value)
        selected = got[1].numel() if got[0] == "ok" else None
        _agree(theirs, ours, f"{_what(shape, index)} = {np.shape(value)}", selected)
        counts["ok" if theirs[0] == "ok" else "raised"] += 1
    assert counts["ok"] > 50 and counts["raised"] > 12, counts


def test_getitem_forms_gradient_matches_torch():
    """The gradient of ``(x[idx] * w).sum()`` flows back to the selected elements, as in torch."""
    done = 0
    for rng, shape, index, data in _cases(120, SEED + 2):
        got = _outcome(_get, torch, data, index)
        if got[0] != "ok" or not got[1].numel():
            continue
        w = rng.standard_normal(tuple(got[1].shape)).astype(np.float32)
        grads = []
        for lib in (torch, fjax):
            x = lib.tensor(data, requires_grad=True)
            (x[_realize(index, lib)] * lib.tensor(w)).sum().backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, err_msg=_what(shape, index))
        done += 1
    assert done > 20, done


@pytest.mark.parametrize("b", [True, False])
def test_bool_scalar_is_a_new_dim_of_size_one_or_zero(b):
    data = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    for form in [
        lambda lib: b,
        lambda lib: (b, 1),
        lambda lib: (None, ..., b),
        lambda lib: (lib.tensor(b), slice(None), 0),
    ]:
        got, want = fjax.tensor(data)[form(fjax)], torch.tensor(data)[form(torch)]
        assert tuple(got.shape) == tuple(want.shape) and (1 if b else 0) in got.shape
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_bool_scalar_setitem_writes_through():
    data = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    x, tx = fjax.tensor(data), torch.tensor(data)
    x[True, 1] = 5.0
    tx[True, 1] = 5.0
    x[False] = 7.0  # selects nothing
    tx[False] = 7.0
    x[fjax.tensor(True), :, 2] = fjax.tensor([[1.0, 2.0]])
    tx[torch.tensor(True), :, 2] = torch.tensor([[1.0, 2.0]])
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_zero_d_int_tensor_selects_like_an_int():
    """torch selects with a 0-d index tensor first, so the array dims stay where they are."""
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for lib_idx in [
        lambda lib: (lib.tensor(1), slice(None), lib.tensor([0, 3])),
        lambda lib: (lib.tensor([1, 0]), slice(None), lib.tensor(-1)),
        lambda lib: (slice(None), lib.tensor(2), lib.tensor([[0], [3]])),
    ]:
        got, want = fjax.tensor(data)[lib_idx(fjax)], torch.tensor(data)[lib_idx(torch)]
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_several_ellipses_as_torch_walks_them():
    data = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    E = Ellipsis
    for idx in [(E, E), (E, 0, E), (0, E, E), (E, None, E), (0, E, 1, E, 2), (E, slice(1, 3), E, E)]:
        got, want = fjax.tensor(data)[idx], torch.tensor(data)[idx]
        assert tuple(got.shape) == tuple(want.shape), idx
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for idx in [(E, E, 0), (E, 1, E, 1), (None, E, E, None)]:  # past the last dim: torch raises IndexError
        with pytest.raises(IndexError, match="too many indices"):
            fjax.tensor(data)[idx]


def test_bool_scalar_tensor_inside_a_graph_is_refused_clearly():
    class G(fjax.nn.Graph):
        def build(self, x, b):
            return x[b]

    with pytest.raises(NotImplementedError, match="0-d bool tensor index inside a trace"):
        G()(fjax.ones(2), fjax.tensor(True))


def test_python_bool_index_inside_a_graph():
    class G(fjax.nn.Graph):
        def build(self, x, i):
            return x[True, i, None, True]

    data = np.random.default_rng(4).standard_normal((3, 2)).astype(np.float32)
    got = G()(fjax.tensor(data), fjax.tensor([2, 0]))
    want = torch.tensor(data)[True, torch.tensor([2, 0]), None, True]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
