"""Storage, views and aliasing against torch: every view op x every in-place method, in eager
values, gradients and nn.Graph; torch's geometry (strides, offsets, contiguity, data_ptr); and
the version-counter errors torch raises, and only those.

Each case draws fresh random inputs; the seed is in the test id's parameters.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax

SHAPE = (4, 6)

# name -> view of a (4, 6) tensor, written once for both libraries (lib is fjax or torch)
VIEWS = {
    "view": lambda x, lib: x.view(24),
    "view_3d": lambda x, lib: x.view(2, 3, 4),
    "view_as": lambda x, lib: x.view_as(lib.zeros(3, 8)),
    "reshape": lambda x, lib: x.reshape(6, 4),
    "flatten": lambda x, lib: x.flatten(),
    "unflatten": lambda x, lib: x.unflatten(1, (2, 3)),
    "squeeze": lambda x, lib: x[None].squeeze(0),
    "unsqueeze": lambda x, lib: x.unsqueeze(1),
    "t": lambda x, lib: x.t(),
    "T": lambda x, lib: x.T,
    "mT": lambda x, lib: x.mT,
    "transpose": lambda x, lib: x.transpose(0, 1),
    "swapaxes": lambda x, lib: x.swapaxes(0, 1),
    "permute": lambda x, lib: x.permute(1, 0),
    "movedim": lambda x, lib: x.movedim(0, 1),
    "select": lambda x, lib: x.select(1, 2),
    "narrow": lambda x, lib: x.narrow(1, 1, 3),
    "int_index": lambda x, lib: x[1],
    "step_slice": lambda x, lib: x[:, 1:6:2],
    "none_ellipsis": lambda x, lib: x[None, 2:, ...],
    "last_col": lambda x, lib: x[..., -1],
    "diagonal": lambda x, lib: x.diagonal(),
    "diagonal_offset": lambda x, lib: x.diagonal(1),
    "split": lambda x, lib: x.split(2)[1],
    "chunk": lambda x, lib: x.chunk(3, dim=1)[2],
    "tensor_split": lambda x, lib: x.tensor_split(4, dim=1)[1],
    "unbind": lambda x, lib: x.unbind(0)[2],
    "unfold": lambda x, lib: x.unfold(1, 2, 2),
    "as_strided": lambda x, lib: x.as_strided((2, 2), (6, 1), 1),
    "view_of_view": lambda x, lib: x.t()[1:3].unsqueeze(0),
    "detach": lambda x, lib: x.detach(),
    "data": lambda x, lib: x.data,
}


def _const(v, lib, seed):
    """A deterministic tensor of v's shape (same numbers for both libraries)."""
    a = np.random.default_rng(seed).standard_normal(tuple(v.shape)).astype(np.float32)
    return lib.tensor(a)


INPLACE = {
    "add_": lambda v, lib, s: v.add_(1.5),
    "mul_": lambda v, lib, s: v.mul_(-2.0),
    "copy_": lambda v, lib, s: v.copy_(_const(v, lib, s)),
    "zero_": lambda v, lib, s: v.zero_(),
    "fill_": lambda v, lib, s: v.fill_(3.0),
    "clamp_": lambda v, lib, s: v.clamp_(-0.5, 0.5),
    "masked_fill_": lambda v, lib, s: v.masked_fill_(_const(v, lib, s) > 0, 9.0),
    "index_put_": lambda v, lib, s: v.index_put_((lib.tensor([0]),), lib.tensor(7.0)),
    "setitem": lambda v, lib, s: v.__setitem__(0, -4.0),
}


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach()._data)


@pytest.mark.parametrize("inplace", sorted(INPLACE))
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_inplace_on_view_writes_the_base(view, inplace):
    """The write reaches the base and every other view of it, as in torch."""
    seed = np.random.SeedSequence().entropy % 2**32
    a = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
    results = []
    for lib in (torch, fjax):
        x = lib.tensor(a.copy())
        other = x.t()  # taken before the write: must see it too
        row = x[2]
        v = VIEWS[view](x, lib)
        INPLACE[inplace](v, lib, seed)
        results.append([_np(x), _np(v), _np(other), _np(row)])
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"seed {seed}")


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("method", ["normal_", "uniform_"])
def test_random_fill_of_view_lands_where_the_view_is(view, method):
    """Random in-place fills: by effect, the base holds the view's new values at its positions."""
    seed = np.random.SeedSequence().entropy % 2**32
    a = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
    x = fjax.tensor(a.copy())
    v = VIEWS[view](x, fjax)
    getattr(v, method)()
    new = _np(v)
    assert not np.allclose(new, _np(VIEWS[view](fjax.tensor(a), fjax)))
    want = torch.tensor(a.copy())
    VIEWS[view](want, torch).copy_(torch.tensor(new))
    np.testing.assert_array_equal(_np(x), want.numpy())


GRAD_INPLACE = {
    "copy_": lambda v, s, lib: v.copy_(s * 2),
    "add_": lambda v, s, lib: v.add_(s),
    "mul_": lambda v, s, lib: v.mul_(s),
    "zero_": lambda v, s, lib: v.zero_(),
    "setitem": lambda v, s, lib: v.__setitem__(0, s[0] * 3),
    "masked_fill_": lambda v, s, lib: v.masked_fill_(s > 0, 2.0),
}


@pytest.mark.parametrize("inplace", sorted(GRAD_INPLACE))
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_gradients_flow_through_inplace_on_views(view, inplace):
    """torch's CopySlices: the base's gradient skips overwritten places; the written values'
    gradient flows to their sources; views taken before the write see the new history. Where
    torch refuses (a view of a multi-output op), fjax refuses with torch's message."""
    seed = np.random.SeedSequence().entropy % 2**32
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(SHAPE).astype(np.float32)
    weights = rng.standard_normal(SHAPE).astype(np.float32)
    src = rng.standard_normal(tuple(VIEWS[view](torch.zeros(SHAPE), torch).shape)).astype(np.float32)
    results = []
    for lib in (torch, fjax):
        w = lib.tensor(a.copy(), requires_grad=True)
        s = lib.tensor(src, requires_grad=True)
        x = w * 1.5
        early = x.t()
        v = VIEWS[view](x, lib)
        try:
            GRAD_INPLACE[inplace](v, s, lib)
        except RuntimeError as err:
            # torch names its view node ("Output 0 of Select"); compare what follows
            results.append(str(err).split(". ")[0].split(" is a view")[-1].split(": ", 1)[-1])
            continue
        loss = (x * lib.tensor(weights)).sum() + (early * early).sum() + (v * v).sum()
        loss.backward()
        results.append([_np(w.grad), None if s.grad is None else _np(s.grad)])
    if isinstance(results[0], str):
        assert results[1] == results[0], f"seed {seed}"
        return
    for want, got in zip(*results):
        if want is None:
            assert got is None or not np.any(got), f"seed {seed}"
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"seed {seed}")


class _Holder(fjax.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.p = fjax.nn.Parameter(fjax.tensor(a))


@pytest.mark.parametrize("inplace", sorted(INPLACE))
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_graph_traces_inplace_on_views_like_torch_eager(view, inplace):
    """nn.Graph: in-place ops on views inside build give torch eager's values."""
    seed = np.random.SeedSequence().entropy % 2**32
    a = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
    xt = torch.tensor(a) * 2
    other_t = xt.t()
    INPLACE[inplace](VIEWS[view](xt, torch), torch, seed)
    want = (xt.numpy(), other_t.numpy())

    holder = _Holder(a)

    class G(fjax.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = holder

        def build(self):
            x = self.m.p * 2
            other = x.t()
            INPLACE[inplace](VIEWS[view](x, fjax), fjax, seed)
            return x, other

    got = G()()
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-6, atol=1e-6, err_msg=f"seed {seed}")


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_geometry_matches_torch(view):
    """stride(), storage_offset(), is_contiguous(), _base and data_ptr() offsets as torch's."""
    a = np.arange(24, dtype=np.float32).reshape(SHAPE)
    xt, xf = torch.tensor(a), fjax.tensor(a)
    vt, vf = VIEWS[view](xt, torch), VIEWS[view](xf, fjax)
    assert tuple(vf.shape) == tuple(vt.shape)
    assert vf.is_contiguous() == vt.is_contiguous()
    assert vf.storage_offset() == vt.storage_offset()
    size_one = [d for d, n in enumerate(vt.shape) if n == 1]
    assert [s for d, s in enumerate(vf.stride()) if d not in size_one] == [
        s for d, s in enumerate(vt.stride()) if d not in size_one
    ]
    assert (vf._base is xf) == (vt._base is xt)
    assert vf.data_ptr() - xf.data_ptr() == vt.data_ptr() - xt.data_ptr()
    assert vf.untyped_storage() is xf.untyped_storage()


def test_advanced_indexing_copies_and_reshape_copies_when_torch_does():
    for lib in (torch, fjax):
        x = lib.zeros(3, 4)
        x[[0, 2]].add_(1)  # a copy
        x[x > 5].add_(1)
        assert float(x.sum()) == 0
        y = x.t().reshape(12)  # not viewable: a copy
        y.add_(1)
        assert float(x.sum()) == 0
        z = x.t().contiguous()
        assert z.is_contiguous() and z.data_ptr() != x.data_ptr()
        assert x.contiguous() is x
    msg = r"view size \[12\] is not compatible with input tensor's size \[4, 3\] and stride \[1, 4\]"
    with pytest.raises(RuntimeError, match=msg):
        fjax.zeros(3, 4).t().view(12)


def test_view_of_changed_base_rereads_and_unchanged_base_costs_nothing():
    x = fjax.arange(6.0)
    v = x.view(2, 3)[1]
    arr = v._data
    assert v._data is arr  # no recomputation while the base is unchanged
    x.add_(10)
    np.testing.assert_array_equal(_np(v), [13.0, 14.0, 15.0])


# -- parameter aliases ------------------------------------------------------------------------


def test_parameter_aliases_see_init_idioms_and_optimizer_steps():
    m = fjax.nn.Linear(3, 2)
    mt = torch.nn.Linear(3, 2)
    with torch.no_grad():
        mt.weight.copy_(torch.tensor(_np(m.weight)))
        mt.bias.copy_(torch.tensor(_np(m.bias)))
    for mod in (m, mt):
        mod.weight.data[0] = 0.5
        mod.bias.data.zero_()
        mod.weight.data.mul_(2)
    np.testing.assert_array_equal(_np(m.weight), _np(mt.weight))
    np.testing.assert_array_equal(_np(m.bias), _np(mt.bias))

    held = [m.weight.detach(), m.state_dict()["weight"], m.weight.data, m.weight[0]]
    opt = fjax.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = fjax.randn(5, 3)
    for _ in range(2):
        opt.zero_grad()
        m(x).sum().backward()
        opt.step()
    for h in held[:3]:
        np.testing.assert_array_equal(_np(h), _np(m.weight))
    np.testing.assert_array_equal(_np(held[3]), _np(m.weight)[0])

    sd = m.state_dict()
    sd["bias"].fill_(1.0)
    np.testing.assert_array_equal(_np(m.bias), [1.0, 1.0])

    with fjax.no_grad():  # the manual-SGD idiom
        w0 = _np(m.weight).copy()
        m.weight.data.sub_(0.1 * m.weight.grad.data)
    np.testing.assert_allclose(_np(m.weight), w0 - 0.1 * _np(m.weight.grad), rtol=1e-6, atol=1e-6)


def test_parameter_of_tensor_shares_storage_and_data_assignment_rebinds():
    t = fjax.zeros(3)
    p = fjax.nn.Parameter(t)
    t.add_(1)
    np.testing.assert_array_equal(_np(p), [1.0, 1.0, 1.0])
    u = fjax.ones(2)
    p.data = u
    u.mul_(5)
    np.testing.assert_array_equal(_np(p), [5.0, 5.0])
    assert p.is_leaf and p.requires_grad


def test_deepcopy_and_clone_do_not_share_but_keep_sharing_within_the_copy():
    import copy

    x = fjax.zeros(2, 3)
    pair = [x, x[1]]
    c = copy.deepcopy(pair)
    c[0].add_(1)
    assert float(x.sum()) == 0
    np.testing.assert_array_equal(_np(c[1]), [1.0, 1.0, 1.0])
    y = x.clone()
    y.add_(1)
    assert float(x.sum()) == 0


def test_module_to_and_load_state_dict_update_aliases():
    m = fjax.nn.Linear(2, 2)
    d = m.weight.detach()
    m.load_state_dict({"weight": fjax.ones(2, 2), "bias": fjax.zeros(2)})
    np.testing.assert_array_equal(_np(d), np.ones((2, 2)))
    m.to(fjax.float64)
    assert d.dtype == fjax.float64


def test_graph_step_updates_aliases_and_never_leaves_deleted_arrays():
    import copy

    model = fjax.nn.Linear(4, 3)
    opt = fjax.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    class Train(fjax.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            return loss

    held = [model.weight.detach(), model.state_dict()["weight"], model.weight.data, model.weight.t()]
    snapshot = copy.deepcopy(model.weight)
    before = _np(model.weight).copy()
    g = Train()
    x = fjax.randn(8, 4)
    g(x)
    opt_state = opt.state_dict()["state"][0]["momentum_buffer"]
    for _ in range(2):
        g(x)
    assert np.isfinite(_np(opt_state)).all()  # a snapshot, never a donated array
    now = _np(model.weight)
    assert not np.allclose(now, before)
    for h in held[:3]:
        np.testing.assert_array_equal(_np(h), now)
    np.testing.assert_array_equal(_np(held[3]), now.T)
    np.testing.assert_array_equal(_np(snapshot), before)


# -- version counter ---------------------------------------------------------------------------


def _raises_like_torch(fn):
    errors = []
    for lib in (torch, fjax):
        try:
            fn(lib)
            errors.append(None)
        except RuntimeError as err:
            errors.append(str(err))
    assert (errors[0] is None) == (errors[1] is None), errors
    return errors[1]


def test_version_errors_where_torch_raises():
    def saved_input_modified(lib):
        a = lib.randn(3, requires_grad=True)
        b = a * 2
        c = b.sin()
        b.mul_(2)
        c.sum().backward()

    msg = _raises_like_torch(saved_input_modified)
    assert "modified by an inplace operation: [fjax.float32 [3]], input #0 of <sinBackward>" in msg
    assert "is at version 1; expected version 0" in msg

    def view_of_saved_modified(lib):
        a = lib.randn(2, 3, requires_grad=True)
        b = a * 2
        c = b[0] * b[0]
        b[1].add_(1)  # shares b's version counter
        c.sum().backward()

    _raises_like_torch(view_of_saved_modified)

    def leaf(lib):
        lib.randn(3, requires_grad=True).add_(1)

    assert "leaf Variable" in _raises_like_torch(leaf)

    def view_of_leaf(lib):
        lib.randn(3, requires_grad=True)[0].add_(1)

    assert "view of a leaf Variable" in _raises_like_torch(view_of_leaf)


def test_no_version_error_where_torch_raises_none():
    def setitem_from_own_slice(lib):
        a = lib.randn(3, 4, requires_grad=True)
        b = a.clone()
        b[:, 0] = b[:, 1] * 2
        b.sum().backward()

    def linear_consumer(lib):
        a = lib.randn(3, requires_grad=True)
        b = a * 1
        c = b + 1  # add saves nothing
        b.add_(1)
        c.sum().backward()

    def detached_alias_of_leaf(lib):
        w = lib.randn(3, requires_grad=True)
        w.detach().zero_()
        (w * 2).sum().backward()

    for fn in (setitem_from_own_slice, linear_consumer, detached_alias_of_leaf):
        assert _raises_like_torch(fn) is None


# -- bad input ---------------------------------------------------------------------------------


def test_inplace_bad_input_names_op_shapes_and_dtypes():
    z = fjax.zeros(2, 3, dtype=fjax.int64)
    with pytest.raises(RuntimeError, match=r"add_: result type fjax.float32 can't be cast.*int64"):
        z[0].add_(1.5)
    with pytest.raises(RuntimeError, match=r"add_: .*\(3,\), \(4,\)"):
        fjax.zeros(2, 3)[0].add_(fjax.ones(4))
    e = fjax.zeros(3, 1).expand(3, 4)
    with pytest.raises(RuntimeError, match="add_: unsupported operation: more than one element"):
        e.add_(1)
    with pytest.raises(RuntimeError, match="as_strided"):
        fjax.zeros(4).as_strided((3,), (2,), 0)


def test_version_counter_is_shared_as_in_torch():
    counts = []
    for lib in (torch, fjax):
        x = lib.zeros(3)
        v, d, data = x[0], x.detach(), x.data
        v.add_(1)
        d.mul_(2)
        data.sub_(1)
        x[1] = 5
        counts.append([t._version for t in (x, v, d, data)])
    assert counts[1] == counts[0]


def test_window_views_at_new_positions_compile_no_new_kernel():
    """``x[i]``, ``x[i:i + 35]``, ``narrow(0, i, 4)``, ``select(1, i)``: the position is a kernel
    argument, so a loop over 50 positions compiles what one position does."""
    from fjax import dispatch

    x = fjax.arange(60 * 40.0).reshape(60, 40)

    def step(i):
        return [x[i], x[i : i + 5], x.narrow(0, i, 4), x.select(1, i % 40), x[:, i % 40]]

    def kernels():
        return {k: e.jit._cache_size() for k, e in dispatch._window_entries.items() if k[0] == (60, 40)}

    dispatch._window_entries.clear()  # counts of this test only
    dispatch._device_ints.clear()
    step(0)
    before = kernels()
    assert len(before) == 4  # select(1, i) and x[:, i] are one kernel
    for i in range(1, 50):
        got = step(i)
    assert kernels() == before
    a = np.arange(60 * 40.0, dtype=np.float32).reshape(60, 40)
    for g, w in zip(got, [a[49], a[49:54], a[49:53], a[:, 9], a[:, 9]]):
        np.testing.assert_array_equal(_np(g), w)
    with pytest.raises(IndexError, match="select: index 40 out of range"):
        x.select(1, 40)
    with pytest.raises(RuntimeError, match="narrow: start 58 \\+ length 4 exceeds dim 0 of size 60"):
        x.narrow(0, 58, 4)


def test_setitem_drops_the_values_leading_size_one_dims_as_torch():
    for index, shape in ((0, (1, 7)), ((slice(None), 0), (1, 3)), ((1, slice(2, 5)), (1, 1, 3))):
        ours, theirs = fjax.zeros(3, 7), torch.zeros(3, 7)
        value = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1
        ours[index] = fjax.tensor(value)
        theirs[index] = torch.tensor(value)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_row_writes_as_torch_for_every_alias_and_version():
    """``buf[i] = row`` (ints, a row of its shape and dtype, no history: a rollout buffer) writes
    the storage directly: views taken before see it, the version bumps as torch's, a saved tensor
    written later fails its backward, negative ints and views of a buffer work, and an expanded
    tensor's rows all see it."""
    rng = np.random.default_rng()
    a = rng.standard_normal((5, 3, 4)).astype(np.float32)
    row = rng.standard_normal(4).astype(np.float32)
    for lib in (fjax, torch):
        buf = lib.tensor(a.copy())
        before, part = buf[1], buf[1:4]
        v0 = buf._version
        buf[1, 2] = lib.tensor(row)
        buf[-1, 0] = lib.tensor(row * 2)
        part[2, 1] = lib.tensor(row * 3)  # buf[3, 1]
        assert buf._version == v0 + 3
        if lib is fjax:
            got = (buf.numpy(), before.numpy(), part.numpy())
        else:
            want = (buf.numpy(), before.numpy(), part.numpy())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    for lib in (fjax, torch):
        w = lib.ones(4, requires_grad=True)
        buf = lib.zeros(2, 4)
        y = (w * buf[0]).sum()
        buf[0] = lib.ones(4)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
        e = lib.zeros(4).expand(3, 4)  # (rows that share memory: every row sees the write)
        e[1] = lib.arange(4.0)
        np.testing.assert_array_equal(e.numpy(), np.tile(np.arange(4.0), (3, 1)))


def test_a_row_write_records_one_op():
    """Under eager fusion ``buf[i] = row`` records the write alone (no read of the view ``buf[i]``
    before it): a rollout loop's writes cost one recorded op each."""
    buf, row = fjax.zeros(6, 8), fjax.ones(8)
    buf.sum().item()
    (buf * 2).sum()  # opens a segment
    seg = fjax._lazy._local.seg
    n = len(seg.ops)
    for i in range(4):
        buf[i] = row
    assert len(seg.ops) - n == 4
    assert buf.sum().item() == 32.0
