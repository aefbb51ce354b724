"""Generated indexing cases against torch: random index expressions (ints incl. negative and out of
range, slices, None, Ellipsis, bool masks of the right or a wrong shape, integer tensors incl. out of
range, and mixes of basic and advanced indexing) over random shapes, for ``x[idx]`` and
``x[idx] = v``: the same values where torch gives a result, an IndexError where torch raises one;
in eager, and inside an nn.Graph, where an out-of-range index tensor fails the deferred check at
the next synchronization (``fjax.asyncs.wait``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
import fjax.asyncs as asyncs

SEED = 37


def _int(rng, n):
    """An int index into a dim of size ``n``: mostly in range (negative too), sometimes outside."""
    if n == 0 or rng.random() < 0.12:
        return int(rng.choice([n, n + 2, -n - 1, -n - 3]))
    return int(rng.integers(-n, n))


def _slice(rng, n):
    def bound():
        return None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))

    return slice(bound(), bound(), None if rng.random() < 0.5 else int(rng.integers(1, 4)))


def _int_tensor(rng, n, shape):
    """Index values for a dim of size ``n`` (as numpy), mostly in range, sometimes one outside."""
    values = rng.integers(-n, n, shape) if n else np.zeros(shape, np.int64)
    if values.size and (n == 0 or rng.random() < 0.15):
        values.reshape(-1)[rng.integers(values.size)] = rng.choice([n, n + 1, -n - 1])
    return values.astype(np.int64)


def _mask(rng, dims):
    """A bool mask over ``dims``, now and then one size off (torch: IndexError)."""
    dims = list(dims)
    if rng.random() < 0.1:
        k = int(rng.integers(len(dims)))
        dims[k] += 1 if dims[k] == 0 or rng.random() < 0.5 else -1
    return rng.random(dims) < 0.5


def gen_case(rng):
    """(shape, index) where the index is a tuple of ints, slices, None, Ellipsis, numpy bool masks
    and ("int", numpy int array) entries."""
    nd = int(rng.integers(1, 5))
    shape = tuple(int(rng.choice([0, 1, 2, 3, 4], p=[0.04, 0.16, 0.3, 0.3, 0.2])) for _ in range(nd))
    m = int(rng.integers(0, nd + 1)) if rng.random() > 0.05 else nd + 1  # dims addressed (nd + 1: too many)
    ellipsis = m <= nd and rng.random() < 0.4
    before = int(rng.integers(0, m + 1)) if ellipsis else m
    dims = list(range(before)) + list(range(nd - (m - before), nd))
    adv_shape = [(2,), (3,), (2, 1), (1, 3), ()][int(rng.integers(5))]
    entries, k = [], 0
    while k < len(dims):
        if ellipsis and k == before:
            entries.append(Ellipsis)
            ellipsis = False
        d = dims[k]
        n = shape[d] if d < nd else 3
        kind = rng.choice(["int", "slice", "tensor", "mask"], p=[0.3, 0.3, 0.25, 0.15])
        if kind == "mask" and d < nd:
            width = 2 if k + 1 < len(dims) and dims[k + 1] == d + 1 and d + 1 < nd and rng.random() < 0.4 else 1
            entries.append(_mask(rng, shape[d : d + width]))
            k += width
        elif kind == "tensor":
            s = adv_shape if rng.random() > 0.05 else (4,)  # (4,) may not broadcast: IndexError
            entries.append(("int", _int_tensor(rng, n, s)))
            k += 1
        else:
            entries.append(_int(rng, n) if kind == "int" else _slice(rng, n))
            k += 1
        if rng.random() < 0.15:
            entries.append(None)
    if ellipsis:
        entries.append(Ellipsis)
    if rng.random() < 0.15:
        entries.insert(int(rng.integers(len(entries) + 1)), None)
    return shape, tuple(entries)


def _realize(index, lib, inputs=None):
    """The index for ``lib`` (fjax or torch); ``inputs``: graph inputs that replace the int tensors."""
    out, it = [], iter(inputs or ())
    for e in index:
        if isinstance(e, tuple):
            out.append(next(it) if inputs is not None else lib.tensor(e[1]))
        elif isinstance(e, np.ndarray):
            out.append(lib.tensor(e))
        else:
            out.append(e)
    return tuple(out)


def _show(index):
    return tuple(
        e[1].tolist() if isinstance(e, tuple) else e.tolist() if isinstance(e, np.ndarray) else e for e in index
    )


def _torch_get(x, index):
    try:
        return "ok", x[_realize(index, torch)]
    except Exception as err:  # noqa: BLE001 - the class is what is compared
        return type(err), err


def _outcome(f, *args):
    try:
        return "ok", f(*args)
    except Exception as err:  # noqa: BLE001
        return type(err), err


def _agree(theirs, ours, what, selected=None):
    """``selected``: how many elements the index selects (by default: the result's size)."""
    if theirs[0] == "ok":
        if (
            (theirs[1].numel() if selected is None else selected) == 0
            and ours[0] != "ok"
            and issubclass(ours[0], IndexError)
        ):
            return  # torch checks index tensors per selected element: none selected, no check; fjax checks all
        assert ours[0] == "ok", f"{what}: fjax raised {ours[1]!r}, torch gave a result"
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy(), err_msg=what)
    else:
        assert ours[0] != "ok", f"{what}: fjax returned a result where torch raised {theirs[1]!r}"
        if issubclass(theirs[0], IndexError):
            assert issubclass(ours[0], IndexError), f"{what}: fjax raised {ours[1]!r}, torch {theirs[1]!r}"


def _cases(n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        shape, index = gen_case(rng)
        data = rng.integers(-50, 50, shape).astype(np.float32)
        yield rng, shape, index, data


def test_getitem_fuzz_matches_torch():
    counts = {"ok": 0, "raised": 0}
    for _, shape, index, data in _cases(160, SEED):
        tx, x = torch.tensor(data), fjax.tensor(data)
        theirs = _torch_get(tx, index)
        ours = _outcome(lambda x, index: x[_realize(index, fjax)], x, index)
        _agree(theirs, ours, f"x{list(shape)}[{_show(index)}]")
        counts["ok" if theirs[0] == "ok" else "raised"] += 1
    assert counts["ok"] > 60 and counts["raised"] > 20, counts  # both sides of the check are exercised


def _write(lib, data, index, v):
    x = lib.tensor(data)
    x[_realize(index, lib)] = v
    return x


def _unique_positions(shape, index):
    """Whether ``x[index]`` selects each element at most once (then a tensor value is well defined)."""
    where = torch.arange(int(np.prod(shape))).reshape(shape)[_realize(index, torch)]
    return where.numel() == where.unique().numel()


def test_setitem_fuzz_matches_torch():
    counts = {"ok": 0, "raised": 0}
    for rng, shape, index, data in _cases(90, SEED + 1):
        got = _torch_get(torch.tensor(data), index)
        if got[0] == "ok" and got[1].numel() and _unique_positions(shape, index) and rng.random() < 0.7:
            target = tuple(got[1].shape)
            if rng.random() < 0.3 and target:
                target = target[int(rng.integers(len(target))) :]  # broadcasts over the leading dims
            value = rng.integers(100, 200, target).astype(np.float32)
        else:
            value = float(rng.integers(100, 200))
        tv = torch.tensor(value) if isinstance(value, np.ndarray) else value
        fv = fjax.tensor(value) if isinstance(value, np.ndarray) else value

        theirs = _outcome(_write, torch, data, index, tv)
        ours = _outcome(_write, fjax, data, index, fv)
        selected = got[1].numel() if got[0] == "ok" else None
        _agree(theirs, ours, f"x{list(shape)}[{_show(index)}] = {np.shape(value)}", selected)
        counts["ok" if theirs[0] == "ok" else "raised"] += 1
    assert counts["ok"] > 30 and counts["raised"] > 12, counts


# ----------------------------------------------------------------------------- inside nn.Graph


class _Indexer(fjax.nn.Graph):
    def __init__(self, index, write):
        super().__init__()
        self.index, self.write = index, write

    def build(self, x, *tensors):
        idx = _realize(self.index, fjax, tensors)
        if not self.write:
            return x[idx]
        y = x.clone()
        y[idx] = -1.0
        return y


def _torch_set(x, index):
    x[_realize(index, torch)] = -1.0
    return x


def _graph_outcome(g, x, tensors):
    """The graph's result, or the IndexError raised while tracing or by the deferred check."""
    try:
        out = g(x, *tensors)
        asyncs.wait()
        return "ok", out
    except IndexError as err:
        asyncs.wait()
        return IndexError, err


def _graph_structures(n, seed):
    """Index structures with at least one int tensor (the entries only the deferred check sees) and
    no bool mask (a mask's data-dependent shape cannot be traced)."""
    rng = np.random.default_rng(seed)
    found = []
    while len(found) < n:
        shape, index = gen_case(rng)
        tensors = [e for e in index if isinstance(e, tuple)]
        if not tensors or 0 in shape or any(isinstance(e, np.ndarray) for e in index):  # masks: eager only
            continue
        in_range = tuple(  # the same structure with every index value in range: it must trace
            ("int", np.zeros_like(e[1])) if isinstance(e, tuple) else e for e in index
        )
        if _torch_get(torch.zeros(shape), in_range)[0] != "ok":
            continue
        found.append((rng, shape, index))
    return found


@pytest.mark.parametrize("write", [False, True], ids=["getitem", "setitem"])
def test_graph_index_tensors_out_of_range_raise_at_the_next_sync(write):
    raised = 0
    for rng, shape, index in _graph_structures(5, SEED + 2 + write):
        g = _Indexer(index, write)
        data = rng.standard_normal(shape).astype(np.float32)
        arrays = [e[1] for e in index if isinstance(e, tuple)]
        for trial in range(3):  # one compile, several index values
            if trial:
                arrays = [_int_tensor(rng, 1 + int(np.abs(a).max(initial=0)), a.shape) for a in arrays]
                if trial == 2:  # surely out of range somewhere
                    arrays[-1].reshape(-1)[0] = 99
            case = tuple(("int", arrays.pop(0)) if isinstance(e, tuple) else e for e in index)
            arrays = [e[1] for e in case if isinstance(e, tuple)]
            tx = torch.tensor(data)
            theirs = _outcome(_torch_set, tx, case) if write else _torch_get(tx, case)
            ours = _graph_outcome(g, fjax.tensor(data), [fjax.tensor(a) for a in arrays])
            _agree(theirs, ours, f"graph {'write' if write else 'read'} x{list(shape)}[{_show(case)}]")
            raised += theirs[0] != "ok"
            if ours[0] is IndexError:
                assert isinstance(ours[1], asyncs.CheckError) or "checked inside" not in str(ours[1])
    assert raised >= 5


def test_graph_embedding_lookup_out_of_range_raises_at_the_next_sync():
    rng = np.random.default_rng(SEED + 9)
    emb = fjax.nn.Embedding(6, 3)
    temb = torch.nn.Embedding(6, 3)
    with torch.no_grad():
        temb.weight.copy_(torch.tensor(emb.weight.numpy()))

    class G(fjax.nn.Graph):
        def __init__(self):
            super().__init__()
            self.emb = emb

        def build(self, i):
            return self.emb(i)

    g = G()
    raised = 0
    for trial in range(6):
        i = rng.integers(0, 6, (2, 3))
        if trial % 2:
            i[rng.integers(2), rng.integers(3)] = rng.choice([6, 9, -1, -7])
        theirs = _outcome(lambda i: temb(torch.tensor(i)).detach(), i)
        try:
            out = g(fjax.tensor(i))
            asyncs.wait()
            ours = "ok", out
        except IndexError as err:
            asyncs.wait()
            ours = IndexError, err
        _agree(theirs, ours, f"embedding graph {i.tolist()}")
        if theirs[0] != "ok":
            raised += 1
            assert "embedding" in str(ours[1]) and isinstance(ours[1], asyncs.CheckError)
    assert raised == 3
