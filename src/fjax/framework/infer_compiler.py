"""``fjax.compile_from_torch``: a torch ``nn.Module`` as an fjax module that shares its parameters.

OneFlow v1.0's ``compile_from_torch(torch_module, *, use_graph=True, options={})``, over torch's
own export machinery and fjax's op table:

1. **Capture.** ``torch.export.export`` records the module's forward as an FX graph of ATen ops
   (the training IR: ``aten.conv2d``, ``aten.batch_norm``, ``aten.add_`` on a buffer, ...), once
   per training mode; with ``dynamic=True`` every input dimension is exported as
   ``torch.export.Dim.AUTO``, so one capture serves every input shape.
2. **Mapping.** Each ATen op becomes the fjax function of the same name (``fjax.<name>``, whose
   signatures are torch's, then ``fjax.nn.functional.<name>``, then the Tensor method, which
   covers the in-place ops), or an entry of ``_ATEN`` where ATen's schema differs from torch's
   Python signature. An op with neither is decomposed with torch's own decomposition table
   (``torch.export.default_decompositions``); one without a decomposition raises
   NotImplementedError naming the op and the module path where it occurs.
3. **Running.** The FX graph is interpreted on fjax tensors: eagerly (the tape records it, so
   ``backward`` works), or with ``use_graph=True`` as an ``nn.Graph`` (jax.jit) with an LRU of
   ``size`` compiled input signatures when no gradient is needed.

Parameters and buffers are shared: each is an fjax tensor over a ``_TorchStorage``, whose array
is the torch tensor's memory imported through DLPack (zero-copy on CPU). A write on the fjax side
(an optimizer step, ``load_state_dict``, a running-statistics update) is copied into the torch
tensor at once; a change on the torch side (``p.data.mul_``, torch's optimizers, ``p.data = t``)
is noticed by torch's version counter and data pointer before the next call.
"""

from __future__ import annotations

import itertools
import logging
import operator
import sys
import threading
import time
from collections import OrderedDict

import jax
import numpy as np

from .. import _jax_compat, _memory, nn
from .. import dtypes as _dt
from .._config import config
from .._lazy import Pending
from .._tracing import modules_changed, trace_state
from ..amp import _state as _amp
from ..asyncs import _ops
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..creation import tensor
from ..dispatch import functions as _F
from ..errors import IndexOutOfRange
from ..nn import functional as F
from ..nn.module import _global_call_hooks
from ..ops import indexing as _indexing
from ..profiler import _state as _pstate
from ..random import default_generator
from ..tensor import _GENERATIONS, Storage, Tensor

__all__ = ["compile_from_torch"]

_log = logging.getLogger("fjax.compile_from_torch")
_CAPTURES = itertools.count()
_OPTIONS = {"size": 9, "dynamic": True, "debug": -1}
# torch.export's tracing state (its dispatch-mode stack, fake-tensor mode) is process-wide: two
# threads capturing at once corrupt each other's capture, so captures take turns.
_EXPORT_LOCK = threading.Lock()


# -- shared storage ---------------------------------------------------------------------------
class _TorchStorage(Storage):
    """A storage whose array is a torch tensor's memory: writes are copied into the torch tensor,
    and ``pull`` re-imports it after torch changed it (its version or data pointer moved).

    ``alias``: the array is the torch tensor's memory itself (the usual case: DLPack aliases a
    contiguous, aligned tensor of a dtype jax keeps), so torch's in-place writes reach it with
    nothing to re-import; only a move of that memory (``p.data = t``) needs one. Where the import
    copied (a non-contiguous tensor, a dtype jax canonicalizes), a new torch version needs one too.
    """

    __slots__ = ("torch", "_seen", "alias")

    def __init__(self, torch_tensor):
        self.torch = torch_tensor
        Storage.__init__(self, None)
        self._import()

    def _import(self) -> None:
        arr = _dlpack(self.torch)
        Storage.array.__set__(self, arr)
        self._seen = (self.torch._version, self.torch.data_ptr())
        self.alias = _is_memory_of(arr, self.torch)
        _WRITES[0] += 1

    def pull(self) -> None:
        """Re-import the torch tensor if torch wrote it since the last import or write."""
        if (self.torch._version, self.torch.data_ptr()) != self._seen:
            self._import()
            self.gen = next(_GENERATIONS)

    @property
    def array(self):
        return Storage.array.__get__(self)

    @array.setter
    def array(self, value):
        _WRITES[0] += 1
        if type(value) is Pending:  # an eager-fusion result: torch's memory is written now, so computed now
            value = value.force()
        if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
            import torch

            t = self.torch.detach()
            if not value.is_deleted():
                # Wait with the GIL released: ``unsafe_buffer_pointer`` blocks until the array is
                # ready while holding it, and the XLA threads finishing that computation may need
                # the GIL to drop DLPack-imported torch buffers (torch's deleter decrefs a Python
                # object): a deadlock.
                value.block_until_ready()
                if value.unsafe_buffer_pointer() == t.data_ptr():  # torch's memory already: keep it
                    Storage.array.__set__(self, value)
                    self._seen = (self.torch._version, t.data_ptr())
                    self.alias = True
                    return
                with torch.no_grad():
                    t.copy_(torch.from_dlpack(value))
            self._import()  # the array is torch's memory again (a donated one is deleted)
            return
        Storage.array.__set__(self, value)  # a tracer inside a trace: restored when it ends


def _is_memory_of(arr, torch_tensor) -> bool:
    """Whether the jax array ``arr`` is ``torch_tensor``'s memory (not a copy of it)."""
    try:
        arr.block_until_ready()  # with the GIL released (see ``_TorchStorage.array``): a dtype cast may run
        return arr.unsafe_buffer_pointer() == torch_tensor.data_ptr()
    except Exception:  # noqa: BLE001 - an array over several devices, a deleted one: not torch's memory
        return False


# Bumped by every write or re-import of any shared storage, and by every re-attachment of a shared
# tensor to another storage (``p.data = t`` on the fjax side): ``_Fast`` keeps its state read until then.
_WRITES = [0]


class _SharedTensor(Tensor):
    """A ``TorchModule`` buffer over a ``_TorchStorage``: attaching it to another storage counts as
    a write (``_WRITES``), so the fast call needs no per-tensor check of the storages."""

    __slots__ = ()

    def _attach(self, st, geom, base=None, stop: bool = False) -> None:
        _WRITES[0] += 1
        Tensor._attach(self, st, geom, base, stop)


class _SharedParameter(nn.Parameter):
    """A ``TorchModule`` parameter over a ``_TorchStorage`` (see ``_SharedTensor``)."""

    __slots__ = ()
    _attach = _SharedTensor._attach


_HOOKED = (_SharedTensor, _SharedParameter)  # the types whose re-attachment bumps ``_WRITES``


def _shared(torch_tensor, parameter: bool) -> Tensor:
    t = object.__new__(_SharedTensor)
    Tensor._init(t, None)
    t._attach(_TorchStorage(torch_tensor), None)
    t._arr = t._st.array
    if parameter:
        return _SharedParameter(t, requires_grad=torch_tensor.requires_grad)
    return t


# -- conversions -------------------------------------------------------------------------------
def _from_torch_value(v):
    """A torch constant of the graph (dtype, device, memory format, tensor) as fjax's."""
    import torch

    if isinstance(v, torch.dtype):
        return _dt.to_dtype(str(v).removeprefix("torch."))
    if isinstance(v, torch.device):
        return "cpu"
    if isinstance(v, torch.memory_format):
        return getattr(_dt, str(v).removeprefix("torch."))
    if isinstance(v, torch.layout):
        return None
    if isinstance(v, torch.Tensor):
        return _to_fjax(v.detach().clone())
    return v


def _dlpack(t):
    """A torch tensor's memory as a jax array (zero-copy where DLPack allows; a non-contiguous
    tensor is copied first)."""
    t = t.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.device.type == "cpu" and _CPU_IMPORT[0] is not None:
        return _CPU_IMPORT[0](t)
    return jax.dlpack.from_dlpack(t)


def _cpu_importer():
    """``jax.dlpack.from_dlpack`` for CPU tensors without its per-call Python (device lookups,
    a raised-and-caught UNIMPLEMENTED stream query: about 100 µs of a call's 25): jaxlib's own
    DLPack import, then the same dtype canonicalization. None where this jaxlib differs."""
    try:
        import jax.numpy as jnp

        dtypes, lib = _jax_compat.private("dtypes"), _jax_compat.private("lib")
        _jax, jaxlib_extension_version = lib._jax, lib.jaxlib_extension_version

        device = jax.local_devices(backend="cpu")[0]
        to_buffer = _jax.dlpack_managed_tensor_to_buffer
        if jaxlib_extension_version >= 467:
            extra = (1,)  # DLDeviceType.kDLCPU
        else:
            extra = ()
    except Exception:  # another jax: the public path
        return None
    import torch

    canonical, capsule = {}, torch._C._to_dlpack

    def importer(t):
        arr = to_buffer(capsule(t), device, None, None, *extra)
        dtype = arr.dtype
        want = canonical.get(dtype)
        if want is None:
            want = canonical[dtype] = dtypes.canonicalize_dtype(dtype)
        return arr if want == dtype else jnp.asarray(arr, dtype=want)

    try:  # checked once, on a tiny tensor
        probe = torch.arange(3, dtype=torch.float32)
        if not np.array_equal(np.asarray(importer(probe)), probe.numpy()):
            return None
    except Exception:
        return None
    return importer


def _cpu_exporter():
    """``torch.from_dlpack`` of a ready single-device CPU jax array without jax's ``__dlpack__``
    Python (about 30 µs of 33); None where this jaxlib or torch differs."""
    try:
        import torch

        _jax = _jax_compat.private("lib")._jax

        to_capsule, from_capsule = _jax.buffer_to_dlpack_managed_tensor, torch._C._from_dlpack
        array_impl = _jax.ArrayImpl
        probe = jax.numpy.arange(3.0)
        probe.block_until_ready()
        if not np.array_equal(from_capsule(to_capsule(probe, stream=None)).numpy(), np.arange(3.0)):
            return None
    except Exception:
        return None

    def covers(arr) -> bool:
        """Whether ``exporter`` takes ``arr``: a single-device CPU array."""
        if type(arr) is not array_impl or not arr.is_fully_addressable:
            return False
        devices = arr.devices()
        return len(devices) == 1 and next(iter(devices)).platform == "cpu"

    def exporter(arr):
        """The torch tensor over ``arr``'s memory, or None for an array this does not cover."""
        return from_capsule(to_capsule(arr, stream=None)) if covers(arr) else None

    # ``raw`` skips the checks: for the outputs of an executable whose outputs ``covers`` took
    exporter.covers, exporter.raw = covers, lambda arr: from_capsule(to_capsule(arr, stream=None))
    return exporter


_CPU_IMPORT = [None]  # set on the first TorchModule (torch is imported by then)
_CPU_EXPORT = [None]


def _to_fjax(t) -> Tensor:
    return Tensor._wrap(_dlpack(t))


def _to_torch(v):
    import torch

    if isinstance(v, Tensor):
        data = v._data
        data.block_until_ready()  # with the GIL released (see ``_TorchStorage.array``)
        out = None if _CPU_EXPORT[0] is None else _CPU_EXPORT[0](data)
        return torch.from_dlpack(data) if out is None else out
    if isinstance(v, (list, tuple)):
        out = [_to_torch(x) for x in v]
        return type(v)(out) if not hasattr(v, "_fields") else type(v)(*out)
    if isinstance(v, dict):
        return {k: _to_torch(x) for k, x in v.items()}
    return v


def _example(v):
    """An fjax input as the torch tensor ``torch.export`` traces with (zeros of its shape and dtype
    inside a trace, where there are no values)."""
    import torch

    if not isinstance(v, Tensor):
        return v
    data = v.detach()._data
    if isinstance(data, jax.core.Tracer):
        return torch.zeros(tuple(v.shape), dtype=getattr(torch, v.dtype.name))
    try:
        return torch.from_dlpack(np.array(data))
    except BufferError:  # numpy's bfloat16 (ml_dtypes) has no DLPack code; jax's own export has one
        return _array_to_torch(data).clone()


# -- the ATen → fjax table -----------------------------------------------------------------------
def _slice(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.dim()
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def _interpolate(mode):
    def upsample(x, output_size=None, *rest):
        if mode == "nearest":
            (scales,) = rest or (None,)
            return F.interpolate(x, size=output_size, scale_factor=scales, mode=mode)
        align_corners, scales = (rest + (None, None))[:2]
        return F.interpolate(x, size=output_size, scale_factor=scales, mode=mode, align_corners=align_corners)

    return upsample


def _recurrent(mode: str):
    """ATen's ``lstm.input`` / ``gru.input``: ``(input, hx, params, has_biases, num_layers, dropout,
    train, bidirectional, batch_first)``, each layer and direction one fjax scan op."""

    def run(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        directions = 2 if bidirectional else 1
        per = 4 if has_biases else 2
        hx = list(hx) if isinstance(hx, (list, tuple)) else [hx]
        finals = [[] for _ in hx]
        for layer in range(num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                w = list(params[k * per : (k + 1) * per])
                w_ih, w_hh = w[:2]
                b_ih, b_hh = w[2:4] if has_biases else (None, None)
                static = dict(reverse=direction == 1, batch_first=batch_first, unroll=1)
                if mode == "LSTM":
                    out, h, c = _F.lstm_layer(x, hx[0][k], hx[1][k], w_ih, w_hh, b_ih, b_hh, None, None, **static)
                    new = (h, c)
                else:
                    out, h = _F.gru_layer(x, hx[0][k], w_ih, w_hh, b_ih, b_hh, None, **static)
                    new = (h,)
                outs.append(out)
                for acc, s in zip(finals, new):
                    acc.append(s)
            x = outs[0] if directions == 1 else _F.cat(outs, -1)
            if dropout and train and layer < num_layers - 1:
                x = F.dropout(x, dropout, True)
        return (x, *(_F.stack(f, 0) for f in finals))

    return run


def _to_copy(x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    return x.to(dtype=dtype, copy=True) if dtype is not None else x.clone()


_REDUCTIONS = ("none", "mean", "sum")


def _loss(fn):
    """ATen's ``(self, target, reduction: int)`` loss schema."""
    return lambda x, y, reduction=1: fn(x, y, reduction=_REDUCTIONS[reduction])


def _batch_norm(x, weight, bias, mean, var, training, momentum, eps, cudnn_enabled=True):
    return F.batch_norm(x, mean, var, weight, bias, training, momentum, eps)


def _instance_norm(x, weight, bias, mean, var, use_input_stats, momentum, eps, cudnn_enabled=True):
    return F.instance_norm(x, mean, var, weight, bias, use_input_stats, momentum, eps)


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    padding_idx = None if padding_idx == -1 else padding_idx
    return F.embedding(indices, weight, padding_idx, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


# ATen ops whose schema is not torch's Python signature of the same name ("name" or "name.overload").
_ATEN = {
    "batch_norm": _batch_norm,
    "instance_norm": _instance_norm,
    "layer_norm": lambda x, shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True: F.layer_norm(
        x, shape, weight, bias, eps
    ),
    "group_norm": lambda x, groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True: F.group_norm(
        x, groups, weight, bias, eps
    ),
    "embedding": _embedding,
    "var.default": lambda x, unbiased=True: x.var(unbiased=unbiased),
    "std.default": lambda x, unbiased=True: x.std(unbiased=unbiased),
    "mse_loss": _loss(F.mse_loss),
    "l1_loss": _loss(F.l1_loss),
    "smooth_l1_loss": lambda x, y, reduction=1, beta=1.0: F.smooth_l1_loss(
        x, y, reduction=_REDUCTIONS[reduction], beta=beta
    ),
    "huber_loss": lambda x, y, reduction=1, delta=1.0: F.huber_loss(
        x, y, reduction=_REDUCTIONS[reduction], delta=delta
    ),
    "nll_loss": lambda x, y, weight=None, reduction=1, ignore_index=-100: F.nll_loss(
        x, y, weight, ignore_index=ignore_index, reduction=_REDUCTIONS[reduction]
    ),
    "cross_entropy_loss": lambda x, y, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0: (
        F.cross_entropy(
            x, y, weight, ignore_index=ignore_index, reduction=_REDUCTIONS[reduction], label_smoothing=label_smoothing
        )
    ),
    "binary_cross_entropy": lambda x, y, weight=None, reduction=1: F.binary_cross_entropy(
        x, y, weight, reduction=_REDUCTIONS[reduction]
    ),
    "binary_cross_entropy_with_logits": lambda x, y, weight=None, pos_weight=None, reduction=1: (
        F.binary_cross_entropy_with_logits(x, y, weight, reduction=_REDUCTIONS[reduction], pos_weight=pos_weight)
    ),
    "sym_size": lambda x, dim: x.shape[dim],
    "sym_numel": lambda x: x.numel(),
    "sym_stride": lambda x, dim: x.stride(dim),
    "slice": _slice,
    # torch's kernels pick output strides (scaled_dot_product_attention's output is stored (B, T, H, D),
    # so its transpose views flat); fjax's outputs are contiguous, so a view that needs torch's
    # strides copies instead (reshape: a view wherever the strides allow one).
    "view.default": lambda x, size: x.reshape(size),
    "alias": lambda x: x.view(x.shape),
    "lift_fresh_copy": lambda x: x.clone(),
    "_to_copy": _to_copy,
    "_assert_tensor_metadata": lambda *a, **k: None,
    "_assert_scalar": lambda *a, **k: None,
    "sym_constrain_range_for_size": lambda *a, **k: None,
    "upsample_nearest1d": _interpolate("nearest"),
    "upsample_nearest2d": _interpolate("nearest"),
    "upsample_nearest3d": _interpolate("nearest"),
    "upsample_bilinear2d": _interpolate("bilinear"),
    "upsample_bicubic2d": _interpolate("bicubic"),
    "upsample_linear1d": _interpolate("linear"),
    "upsample_trilinear3d": _interpolate("trilinear"),
    "lstm": _recurrent("LSTM"),
    "gru": _recurrent("GRU"),
    "scalar_tensor": lambda s, dtype=None, layout=None, device=None, pin_memory=None: tensor(
        s, dtype=dtype or _dt.float32
    ),
}


def _resolve(op):
    """The fjax callable for an ATen ``OpOverload`` (``aten.<name>.<overload>``), or None."""
    fjax = sys.modules["fjax"]  # the top-level namespace (torch's): imported by now, not imported here
    name = op._schema.name.split("::")[-1]
    fn = _ATEN.get(f"{name}.{op._overloadname}", _ATEN.get(name))
    if fn is not None:
        return fn
    for space in (fjax, F):
        fn = getattr(space, name, None)
        if callable(fn) and not isinstance(fn, type):
            return fn
    if callable(getattr(Tensor, name, None)):
        return lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)
    return None


# Keyword arguments ATen records at their defaults that torch's Python signatures lack: dropped.
_ATEN_ONLY = {"pin_memory": ("None", "False"), "layout": ("None", "torch.strided")}


# -- a captured program --------------------------------------------------------------------------
class _Ref:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def _template(arg, convert):
    """A node argument with its FX nodes as ``_Ref`` and torch constants as fjax's."""
    import torch.fx

    if isinstance(arg, torch.fx.Node):
        return _Ref(arg.name)
    if isinstance(arg, (list, tuple)):
        return type(arg)(_template(a, convert) for a in arg)
    if isinstance(arg, dict):
        return {k: _template(a, convert) for k, a in arg.items()}
    return convert(arg)


def _fill(t, env):
    if type(t) is _Ref:
        return env[t.name]
    if isinstance(t, (list, tuple)):
        return type(t)(_fill(a, env) for a in t)
    if isinstance(t, dict):
        return {k: _fill(a, env) for k, a in t.items()}
    return t


def _where(node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "the top-level forward"
    path, kind = list(stack.values())[-1]
    kind = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
    return f"{path or '<root>'} ({kind.rsplit('.', 1)[-1]})"


def _unsupported(ep) -> dict:
    """{OpOverload: first node using it} for the graph's ATen ops without an fjax mapping."""
    import torch

    missing = {}
    for node in ep.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            if _resolve(node.target) is None:
                missing.setdefault(node.target, node)
    return missing


class _Program:
    """An exported program prepared to run on fjax tensors."""

    def __init__(self, ep, debug: int):
        import torch

        missing = _unsupported(ep)
        if missing:
            table = torch.export.default_decompositions()
            decomps = {op: table[op] for op in missing if op in table}
            if decomps:
                _log.info("compile_from_torch: decomposing %s with torch's decompositions", sorted(map(str, decomps)))
                ep = ep.run_decompositions(decomps)
                missing = _unsupported(ep)
        if missing:
            op, node = next(iter(missing.items()))
            others = "" if len(missing) == 1 else f" (also: {', '.join(str(o) for o in list(missing)[1:])})"
            raise NotImplementedError(
                f"compile_from_torch: torch op {op} used in {_where(node)} has no fjax mapping and no "
                f"decomposition{others}"
            )
        self.ep = ep
        sig = ep.graph_signature
        self.inputs = []  # ("state", target) | ("const", tensor) | ("user", None), in placeholder order
        for spec in sig.input_specs:
            kind = spec.kind.name
            if kind in ("PARAMETER", "BUFFER"):
                self.inputs.append(("state", spec.target))
            elif kind == "CONSTANT_TENSOR":
                self.inputs.append(("const", _from_torch_value(ep.constants[spec.target])))
            elif kind == "USER_INPUT":
                self.inputs.append(("user", None))
            else:
                raise NotImplementedError(f"compile_from_torch: exported input of kind {kind} is not supported")
        self.outputs = [(spec.kind.name, spec.target) for spec in sig.output_specs]
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
        users = [n for n, (kind, _) in zip(placeholders, self.inputs) if kind == "user"]
        # (flat input index, dimension, size) of every dimension the capture fixed
        self.guards = [
            (i, d, size)
            for i, node in enumerate(users)
            if isinstance(node.meta.get("val"), torch.Tensor)
            for d, size in enumerate(node.meta["val"].shape)
            if isinstance(size, int)
        ]
        self.in_spec, self.out_spec = ep.call_spec.in_spec, ep.call_spec.out_spec
        self.single_output = self.out_spec.is_leaf()  # forward returns one tensor
        self.placeholders, self.steps, counts = [], [], {}
        # embedding lookups whose indices are a user input (checked on the host before each
        # dispatch: ``host_checks``, (flat input index, rows)) or an ``arange`` (checked when traced)
        marks = _index_marks(ep, {node.name: i for i, node in enumerate(users)})
        self.host_checks = sorted({(m[1], m[2]) for m in marks.values() if m[0] == "user"})
        nodes = list(ep.graph.nodes)
        last_use = {}
        for i, node in enumerate(nodes):
            for used in node.all_input_nodes:
                last_use[used.name] = i
        for i, node in enumerate(nodes):
            if node.op == "placeholder":
                self.placeholders.append(node.name)
                continue
            if node.op == "output":
                self.result = _template(node.args[0], lambda v: v)
                continue
            target = node.target
            if isinstance(target, torch._ops.OpOverload):
                fn = _resolve(target)
                counts[str(target)] = counts.get(str(target), 0) + 1
            elif getattr(target, "__module__", "") in ("_operator", "math", "torch"):  # SymInt arithmetic, getitem
                fn = target
            else:
                raise NotImplementedError(
                    f"compile_from_torch: {getattr(target, '__name__', target)} used in {_where(node)} is not supported"
                )
            free = [n for n, last in last_use.items() if last == i]
            kwargs = {k: v for k, v in node.kwargs.items() if str(v) not in _ATEN_ONLY.get(k, ())}
            args, kwargs = _template(node.args, _from_torch_value), _template(kwargs, _from_torch_value)
            self.steps.append((node.name, fn, args, kwargs, free, marks.get(node.name)))
        if debug >= 1:
            _log.info("compile_from_torch: %d ATen ops mapped: %s", sum(counts.values()), counts)
        if debug >= 2:
            _log.info("compile_from_torch: captured graph\n%s", ep.graph_module.code)

    def accepts(self, flat: list) -> bool:
        """Whether inputs of these shapes fit the capture's static dimensions."""
        return all(flat[i].shape[d] == size for i, d, size in self.guards)

    def run(self, state: dict, user: list, host_checked: bool = False):
        """Interpret the graph; ``state``: the module's tensors by name; ``user``: the flat inputs;
        ``host_checked``: the caller checks ``host_checks`` on the host before each run of this
        trace (``_ForwardGraph``), so those lookups add no deferred check (a host callback per
        call), and lookups at an ``arange`` of known bounds are checked here, once per trace."""
        env, it = {}, iter(user)
        for name, (kind, what) in zip(self.placeholders, self.inputs):
            env[name] = state[what] if kind == "state" else what if kind == "const" else next(it)
        marked = host_checked and trace_state.depth and trace_state.graph_checks
        ranges = {}
        for name, fn, args, kwargs, free, mark in self.steps:
            if mark is not None and marked:
                env[name] = _run_marked(mark, fn, _fill(args, env), _fill(kwargs, env), ranges, name)
            else:
                env[name] = fn(*_fill(args, env), **_fill(kwargs, env))
            for f in free:
                env.pop(f, None)
        flat = _fill(self.result, env)
        users = []
        for (kind, target), value in zip(self.outputs, flat):
            if kind == "USER_OUTPUT":
                users.append(value)
            elif kind == "BUFFER_MUTATION":
                with no_grad():
                    state[target].copy_(value)
            else:
                raise NotImplementedError(f"compile_from_torch: exported output of kind {kind} is not supported")
        return users

    def check_inputs(self, arrays: list) -> None:
        """``host_checks`` on the flat inputs' arrays (numpy views of torch's memory, or jax
        arrays): an index out of range raises as eager's embedding does, at the call (a fast
        call checks while its step runs: an inference step writes nothing)."""
        for i, n in self.host_checks:
            a = arrays[i]
            if type(a) is not np.ndarray:
                if type(a) is Pending:
                    a = a.force()
                a.block_until_ready()  # with the GIL released (see ``_TorchStorage.array``)
                a = np.asarray(a)
            unsigned = _UNSIGNED.get(a.dtype)  # one reduction: a negative index is a huge unsigned one
            if unsigned is None or not a.size:
                continue
            if a.size <= 256 and a.flags.c_contiguous:
                # a few indices (a token batch): Python's max over the bytes as unsigned ints; a
                # numpy reduction costs ~25 us here right after a compiled step ran (~3 us warm)
                largest = max(memoryview(a).cast("B").cast(unsigned.char))
            else:
                largest = a.view(unsigned).max()
            if largest >= n:
                v = _indexing._first_outside(a, 0, n)
                raise IndexOutOfRange(f"embedding: index {v} is out of range for a weight with {n} rows")


_UNSIGNED = {np.dtype(f"{k}{b}"): np.dtype(f"u{b}") for k in "iu" for b in (1, 2, 4, 8)}


# ATen ops whose output holds exactly their first argument's values (rearranged or repeated): an
# index range check of that argument covers theirs.
_SAME_VALUES = frozenset(
    ["view", "reshape", "_unsafe_view", "unsqueeze", "squeeze", "flatten", "alias", "clone", "contiguous"]
    + ["t", "transpose", "permute", "expand", "detach", "lift_fresh_copy"]
)


def _index_marks(ep, user_index: dict) -> dict:
    """``{node: mark}`` for the embedding lookups whose indices come (through ``_SAME_VALUES``
    ops) from a user input, mark ``("user", flat index, rows)`` where the table's rows are static,
    or from an ``arange``, mark ``("arange", its node)``, that ``arange`` marked ``("range",)``."""
    import torch

    def aten(node):
        target = getattr(node, "target", None)
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload):
            return target._schema.name.split("::")[-1]
        return None

    marks = {}
    for node in ep.graph.nodes:
        if aten(node) != "embedding" or len(node.args) < 2:
            continue
        weight, src = node.args[0], node.args[1]
        while isinstance(src, torch.fx.Node) and aten(src) in _SAME_VALUES and src.args:
            src = src.args[0]
        if not isinstance(src, torch.fx.Node):
            continue
        if src.op == "placeholder" and src.name in user_index:
            val = getattr(weight, "meta", {}).get("val")
            if isinstance(val, torch.Tensor) and val.dim() and isinstance(val.shape[0], int):
                marks[node.name] = ("user", user_index[src.name], val.shape[0])
        elif aten(src) == "arange":
            marks[node.name] = ("arange", src.name)
            marks[src.name] = ("range",)
    return marks


def _run_marked(mark, fn, args, kwargs, ranges: dict, name: str):
    """One marked step inside a ``host_checked`` trace (see ``_Program.run``)."""
    kind = mark[0]
    if kind == "range":  # an arange: its bounds, where its arguments are Python ints here
        bounds = args if len(args) > 1 else (0, *args)
        if len(bounds) in (2, 3) and all(type(b) is int for b in bounds):
            r = range(*bounds)
            ranges[name] = (min(r[0], r[-1]), max(r[0], r[-1])) if len(r) else ()
        return fn(*args, **kwargs)
    n = args[0].shape[0]
    if kind == "user":
        if n != mark[2]:  # the table changed shape since the capture: the deferred check
            return fn(*args, **kwargs)
    else:
        bounds = ranges.get(mark[1])
        if bounds is None:
            return fn(*args, **kwargs)
        if bounds and (bounds[0] < 0 or bounds[1] >= n):
            v = bounds[0] if bounds[0] < 0 else bounds[1]
            raise IndexOutOfRange(f"embedding: index {v} is out of range for a weight with {n} rows")
    before = trace_state.graph_checks
    trace_state.graph_checks = False  # checked on the host: no deferred check (a callback per run)
    try:
        return fn(*args, **kwargs)
    finally:
        trace_state.graph_checks = before


# -- the fast call ------------------------------------------------------------------------------
class _RawStep:
    """A compiled step's XLA executable, called without ``jax.stages.Compiled``'s call path.

    ``Compiled.__call__`` (a C++ ``PjitFunction``) flattens its argument tree and builds a
    signature of every leaf (dtype, shape, sharding, layout) on each call; a fast entry's
    arguments are the same state arrays each time and inputs of the built avals, so it calls
    ``execute_sharded`` on the flat list of the arguments the program reads (``kept``: jax drops
    unused ones, such as the RNG key of a step with no draws) and wraps the outputs with the
    executable's own result handlers. On a small model's step that is about half the calling
    thread's time of the dispatch (40 to 100 arguments). Built only where that call is all the
    executable does (no effects, host callbacks, mutable arrays or hoisted constants); the first
    call checks it against ``Compiled`` (``_Fast._run``).
    """

    __slots__ = ("execute", "handlers", "kept", "n_inputs", "leaves", "in_handler")

    def template(self, state, rng, hyper) -> tuple:
        """``(buffers, moves, lo, hi)``: the argument buffers of a call on ``state`` with the
        inputs' places empty; the inputs go to ``buffers[lo:hi]`` in order, or where ``moves``
        (``[(input index, buffer index)]``, None for the contiguous case) says."""
        st, opt_states, kept = state
        head = jax.tree_util.tree_leaves((st, opt_states, rng, hyper))
        tail = [] if kept is None else jax.tree_util.tree_leaves(kept)
        if len(head) + self.n_inputs + len(tail) != self.leaves:
            raise ValueError("the step's arguments are not the compiled ones")
        flat = head + [None] * self.n_inputs + tail
        n = len(head)
        moves = [(pos - n, j) for j, pos in enumerate(self.kept) if n <= pos < n + self.n_inputs]
        bufs = [flat[pos] for pos in self.kept]
        slots = [j for _, j in moves]
        if (
            moves
            and [i for i, _ in moves] == list(range(self.n_inputs))
            and slots == list(range(slots[0], slots[-1] + 1))
        ):
            return bufs, None, slots[0], slots[-1] + 1
        return bufs, moves, 0, 0

    def placed(self, bufs: list) -> bool:
        """Whether the executable takes ``bufs`` as they are (``Compiled``'s call would not move
        or re-lay any of them out)."""
        placed = self.in_handler(bufs)
        return len(placed) == len(bufs) and all(
            p is b or p.unsafe_buffer_pointer() == b.unsafe_buffer_pointer() for p, b in zip(placed, bufs)
        )


def _raw(compiled, n_inputs: int, n_outputs: int):
    """A ``_RawStep`` for a ``jax.stages.Compiled`` inference step, or None where its call does
    more than run the executable (or this JAX lays it out otherwise)."""
    try:
        params = compiled._params
        unsafe = params.executable.unsafe_call
        if (
            type(unsafe).__name__ != "ExecuteReplicated"
            or params.const_args
            or getattr(params, "is_high", False)
            or unsafe.mut is not None
            or unsafe.ordered_effects
            or unsafe.has_unordered_effects
            or unsafe.has_host_callbacks
            or unsafe.pgle_profiler is not None
            or len(unsafe.out_handler.handlers) != n_outputs
            or not n_inputs
        ):
            return None
        raw = _RawStep()
        raw.execute, raw.handlers = unsafe.xla_executable.execute_sharded, unsafe.out_handler.handlers
        raw.kept, raw.n_inputs, raw.leaves = sorted(unsafe.kept_var_idx), n_inputs, params.in_tree.num_leaves
        raw.in_handler = unsafe.in_handler
        return raw
    except Exception:  # noqa: BLE001 - another JAX: the Compiled call
        return None


def _same_outputs(a: list, b: list) -> bool:
    """Whether two output lists hold the same arrays (shape, dtype, values)."""
    try:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            x, y = np.asarray(x), np.asarray(y)
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            if np.issubdtype(x.dtype, np.inexact):
                if not np.allclose(x, y, rtol=1e-6, atol=1e-6, equal_nan=True):
                    return False
            elif not np.array_equal(x, y):
                return False
        return True
    except Exception:  # noqa: BLE001 - a dtype numpy cannot compare: not checked, not taken
        return False


# Inputs of at most this many bytes in all are copied into a fast entry's staging tensors (see
# ``_staging``); larger ones are imported zero-copy each call.
_STAGE_BYTES = 1 << 16


def _staging(signature: tuple):
    """For a fast entry of torch inputs (``((dtype, shape), ...)``) of at most ``_STAGE_BYTES``:
    ``(tensors, arrays, [(pointer, bytes)], views)``, contiguous torch tensors of those dtypes
    and shapes, the jax arrays over their memory, which the entry's calls copy their inputs into
    (``TorchModule._forward_fast``), and numpy views of it (for the host's index checks); None
    otherwise.

    A jax array made per call from a torch tensor (DLPack or a numpy view, both zero-copy) costs
    the calling thread tens of microseconds in the import, the executable's argument handling
    and the array's release; a copy of a few kilobytes into memory the executable already holds
    an array of costs one ``memmove``."""
    import torch

    total = 0
    for dtype, shape in signature:
        total += torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    if total > _STAGE_BYTES or _CPU_IMPORT[0] is None:
        return None
    tensors = [torch.zeros(shape, dtype=dtype) for dtype, shape in signature]
    arrays = [_CPU_IMPORT[0](t) for t in tensors]
    if not all(_is_memory_of(a, t) for a, t in zip(arrays, tensors)):  # a dtype jax changes: imported per call
        return None
    views = [t.numpy() if t.dtype in _NUMPY_DTYPES else None for t in tensors]  # (index checks: integers only)
    return tensors, arrays, [(t.data_ptr(), t.nbytes) for t in tensors], views


def _memmove():
    import ctypes

    return ctypes.memmove


_MEMMOVE = [None]  # ctypes.memmove, set with the first TorchModule


class _Fast:
    """One compiled inference step of a ``TorchModule``, called without ``nn.Graph``'s call path.

    ``nn.Graph``'s call reads its optimizers, RNG stream, schedulers and LRU and writes its state
    back on every call; an inference step (no state written, no random draws, no optimizer,
    outputs all tensors) needs none of it. Built after a graph call (the slow path) served a
    signature: ``(torch or fjax inputs, (dtype, shape) of each)``; valid while the modules, the
    graph's config (AMP included) and the input arrays' avals and shardings are those of that
    call (``call`` checks them, returning None to send the call down the slow path). The graph
    is the ``TorchModule``'s own, so of its config key (``Executables.config_key``) only the
    process-wide autocast state can change from outside: the key is compared while some thread
    has autocast on.

    The step runs as its XLA executable on a held argument list (``_RawStep``: half the
    dispatch's cost of ``Compiled.__call__``); small torch inputs are copied into the entry's
    staging memory, which that list holds an array of (``_staging``), larger ones imported
    zero-copy; outputs leave through DLPack (no copies).
    """

    __slots__ = (
        "version",
        "config",
        "config_key",
        "compiled",
        "read",
        "rng",
        "hyper",
        "avals",
        "program",
        "export",
        "tensors",
        "state",
        "imported",
        "numpy",
        "checks",
        "raw",
        "template",
        "staged",
        "lock",
        "step_checks",
    )

    def __init__(self, graph, program, arrays: list, outputs: list, version: int, key: tuple):
        ex = graph._executables
        imported = key[0] and _CPU_IMPORT[0] is not None
        self.imported = imported  # the inputs were CPU torch tensors through the CPU importer
        # and their dtypes all have numpy's: the step takes ``t.numpy()`` (see ``_forward_fast``)
        self.numpy = imported and all(dtype in _NUMPY_DTYPES for dtype, _ in key[1:])
        entry = ex.cache[ex.last_key]
        self.version, self.config_key, self.config = version, ex.config_key, ex.config_key()
        self.compiled, self.read, self.program = entry.compiled, entry.read, program
        self.checks = bool(program.host_checks)  # index checks of inputs on the host (see ``_Program.run``)
        self.tensors, self.state = list(entry.state.tensors), None
        # a torch tensor over each output (once it is ready): without the exporter's checks where
        # this call's outputs passed them (the next calls' come from the same executable)
        exporter = _CPU_EXPORT[0]
        self.export = exporter.raw if exporter is not None and all(map(exporter.covers, outputs)) else None
        self.avals = [(a.aval, a.sharding) for a in arrays]
        _, counter, hyper = ex.optimizers.now()
        self.rng, self.hyper = (default_generator.base_key_data(), counter), hyper
        # the XLA executable called directly (see ``_raw``), on argument lists from ``template``
        # the step's index checks, its last output (``graph.step.Step``): checked after each call
        self.step_checks = entry.record["checks"]
        self.raw = _raw(entry.compiled, len(arrays), len(outputs) + bool(self.step_checks))
        self.template = None
        # small torch inputs are copied into ``staged`` (see ``stage``); ``lock``: one call at a time
        self.staged, self.lock = None, threading.Lock()
        if self.raw is not None and imported and _MEMMOVE[0] is not None:
            self.staged = _staging(key[1:])

    @staticmethod
    def eligible(graph, version: int) -> bool:
        """Whether ``graph``'s last call was an inference step this class can repeat."""
        ex = graph._executables
        entry = None if ex.last_key is None else ex.cache.get(ex.last_key)
        return (
            entry is not None
            and entry.first_run_done
            and modules_changed[0] == version
            and not graph._optimizers
            and not graph._lr_schedulers
            and entry.state.layout is None
            and not entry.record["changed"]
            and entry.record["draws"] == 0
            and all(s is None for s in entry.record["out_static"])
        )

    def _read(self):
        """The step's state arguments (``Executable.read``), kept (``state``) where every state
        tensor is a shared one over a shared storage (their writes and re-attachments count in
        ``_WRITES``; a plain Storage's writes do not), with the ``_WRITES`` count they were read
        at, the torch tensors whose read array is not torch's memory (an import that copied, or
        the tensor's own array after an fjax write) with their versions (torch's in-place writes
        reach the others without a check), and the torch tensors the step reads with their data
        pointers (``p.data = t`` moves one's memory and keeps its version)."""
        writes, tensors = _WRITES[0], self.tensors
        value = self.read()
        self.state = None
        if all(type(t) in _HOOKED and type(t._st) is _TorchStorage for t in tensors):
            stale = [t._st.torch for t in tensors if not (t._st.alias and t._data is t._st.array)]
            watched = list(dict.fromkeys(tensors[i]._st.torch for i in self._used(value)))
            self.state = (writes, value, stale, list(map(_VERSION, stale)), watched, list(map(_DATA_PTR, watched)))
        return value

    def _used(self, value) -> range | list:
        """The positions in ``tensors`` of those the step reads: all but those jax dropped as
        unused (``_RawStep.kept``), such as BatchNorm's ``num_batches_tracked`` in eval mode.
        An inference step takes every state tensor, in order, as its last argument."""
        raw, n = self.raw, len(self.tensors)
        if raw is None or value[2] is None or len(value[2]) != n:
            return range(n)
        start = raw.leaves - n
        return [pos - start for pos in raw.kept if pos >= start]

    def _run(self, state, arrays: list):
        raw = self.raw
        if raw is not None:
            template = self.template
            if template is None or template[0] is not state:
                template = self._template(state, arrays)
            if template is not None:
                bufs = template[1].copy()
                if template[2] is None:  # every input read, in one run of positions
                    bufs[template[3] : template[4]] = arrays
                else:
                    for i, slot in template[2]:
                        bufs[slot] = arrays[i]
                return raw.execute(bufs).consume_with_handlers(raw.handlers)
        return self._compiled(state, arrays)

    def _compiled(self, state, arrays: list):
        st, opt_states, kept = state
        if kept is None:
            return self.compiled(st, opt_states, self.rng, self.hyper, arrays)[2]
        return self.compiled(st, opt_states, self.rng, self.hyper, arrays, kept)[2]

    def _template(self, state, arrays: list):
        """``_RawStep.template`` for ``state``, kept as ``template``; on the entry's first call also
        checked: the executable takes the arguments as they are and returns what ``Compiled``
        returns on them. None (and ``raw`` dropped: the ``Compiled`` call) where either fails."""
        raw, first = self.raw, self.template is None
        try:
            bufs, moves, lo, hi = raw.template(state, self.rng, self.hyper)
            full = bufs.copy()
            if moves is None:
                full[lo:hi] = arrays
            else:
                for i, slot in moves:
                    full[slot] = arrays[i]
            ok = raw.placed(full)
            if ok and first:
                ok = _same_outputs(raw.execute(full).consume_with_handlers(raw.handlers), self._compiled(state, arrays))
        except Exception:  # noqa: BLE001 - not the layout this expects: the Compiled call
            ok = False
        if not ok:
            self.raw = self.template = None
            return None
        self.template = (state, bufs, moves, lo, hi)
        return self.template

    def call(self, arrays: list, owner, imported: bool = False, host: list | None = None):
        """The step's flat output arrays, or None where this call differs from the built one;
        ``owner``: the ``TorchModule``; ``imported``: the arrays are CPU torch tensors of the
        key's dtypes and shapes through the CPU importer, so their avals and shardings are the
        built ones (not read: a fresh array's ``aval`` costs microseconds).

        Nothing per parameter before the dispatch: the state read at the last call is still right
        if no shared storage was written, re-imported or swapped for another since (``_WRITES``:
        one comparison) and torch moved none of the tensors the step reads, since torch's
        in-place writes are in the arrays already (they are its memory). That last check (one
        comparison of those torch tensors' data pointers, and of the versions of the ``stale``
        few, see ``_read``) runs while the step does; where it fails, that result is dropped and
        the step dispatched again on a fresh read."""
        if (
            modules_changed[0] != self.version
            or trace_state.depth
            or _pstate.on
            or _memory.due()
            or (_amp.flag.on and self.config_key() != self.config)
        ):
            return None
        if not imported:
            for a, (aval, sharding) in zip(arrays, self.avals):
                if (a.aval is not aval and a.aval != aval) or (a.sharding is not sharding and a.sharding != sharding):
                    return None
        # the inputs' index checks run while the step does (it writes nothing, so a failed check
        # that raises after it started is as one that raised before)
        checks = self.checks and config.graph_index_checks
        state = self.state
        if state is not None and state[0] == _WRITES[0]:
            try:
                outs = self._run(state[1], arrays)
            except Exception:  # noqa: BLE001 - a kept array deleted meanwhile (another thread donated it)
                outs = None
            if checks:
                self.program.check_inputs(arrays if host is None else host)
            stale = state[2]
            if (
                list(map(_DATA_PTR, state[4])) == state[5]
                and (not stale or list(map(_VERSION, stale)) == state[3])
                and outs is not None
            ):
                return self._checked(outs)
            # torch changed a tensor: ``outs`` may have read its old memory
        elif checks:
            self.program.check_inputs(arrays if host is None else host)
        owner._pull()
        return self._checked(self._run(self._read(), arrays))

    def _checked(self, outs: list) -> list:
        """A run's outputs without its index checks, which go to the worker (``submit_step_checks``)."""
        if not self.step_checks:
            return outs
        _ops.submit_step_checks(self.step_checks, outs[-1])
        return outs[:-1]


# -- the module --------------------------------------------------------------------------------
class _Mirror(nn.Module):
    """One torch submodule's parameters and buffers (shared), under torch's names."""

    def __init__(self, torch_module, memo: dict):
        super().__init__()
        self._torch_name = type(torch_module).__name__
        for name, child in torch_module.named_children():
            self.add_module(name, _Mirror(child, memo))
        for name, p in torch_module.named_parameters(recurse=False):
            if id(p) not in memo:
                memo[id(p)] = _shared(p, parameter=True)
            self.register_parameter(name, memo[id(p)])
        for name, b in torch_module.named_buffers(recurse=False):
            if id(b) not in memo:
                memo[id(b)] = _shared(b, parameter=False)
            self.register_buffer(name, memo[id(b)], persistent=name not in torch_module._non_persistent_buffers_set)

    def _get_name(self) -> str:
        return self._torch_name


class _ForwardGraph(nn.Graph):
    """One captured program as a compiled forward (no optimizer): its LRU holds ``size`` input
    signatures."""

    def __init__(self, owner, program, size: int):
        super().__init__()
        self.module = owner
        object.__setattr__(self, "_program", program)
        self.config.cache_size = size

    def build(self, *flat):
        return tuple(self._program.run(self.module._state(), list(flat), host_checked=True))


class TorchModule(_Mirror):
    """What ``compile_from_torch`` returns: an fjax ``nn.Module`` running a torch module's
    captured forward on fjax's ops, with the torch module's parameters and buffers shared.

    Call it with torch tensors (returns torch tensors, without autograd history) or fjax tensors
    (returns fjax tensors; ``backward`` reaches the shared parameters).
    """

    def __init__(self, torch_module, use_graph: bool, options: dict):
        super().__init__(torch_module, {})
        object.__setattr__(self, "_torch_module", torch_module)
        self._use_graph = bool(use_graph)
        self._size, self._dynamic, self._debug = options["size"], options["dynamic"], options["debug"]
        self._programs = OrderedDict()
        self._graphs = {}
        self.train(torch_module.training)
        # per-call memos (plain attributes: no module bookkeeping): the shared storages and their
        # torch tensors' versions and pointers, the input spec of n positional tensors, the last
        # program found
        object.__setattr__(self, "_watch", None)
        object.__setattr__(self, "_specs", {})
        object.__setattr__(self, "_last_program", None)
        object.__setattr__(self, "_fast", {})  # input signature -> _Fast
        if _CPU_IMPORT[0] is None:
            _CPU_IMPORT[0], _CPU_EXPORT[0] = _cpu_importer(), _cpu_exporter()
            _MEMMOVE[0] = _memmove()
        if _TORCH[0] is None:
            import torch

            global _DATA_PTR
            _TORCH[:] = torch.Tensor, torch.utils._pytree.tree_unflatten
            _DATA_PTR = torch.Tensor.data_ptr
            _NUMPY_DTYPES.update(
                [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
                + [torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128]
            )

    @property
    def torch_module(self):
        """The torch module this one shares its parameters and buffers with."""
        return self._torch_module

    def train(self, mode: bool = True):
        super().train(mode)
        self._torch_module.train(mode)
        return self

    def _storages(self):
        for t in list(self.parameters()) + list(self.buffers()):
            if isinstance(t._st, _TorchStorage):
                yield t._st

    def _pull(self) -> bool:
        """Re-import every shared tensor torch changed since the last call: one comparison of
        all the torch tensors' versions and data pointers, a storage's ``pull`` only when it fails
        (then True)."""
        watch = self._watch
        if watch is None or watch[0] != modules_changed[0]:
            import torch

            storages = list(dict.fromkeys(self._storages()))
            watch = [modules_changed[0], storages, [st.torch for st in storages], None, torch.Tensor.data_ptr]
            object.__setattr__(self, "_watch", watch)
        tensors, data_ptr = watch[2], watch[4]
        now = list(map(_VERSION, tensors))
        now += map(data_ptr, tensors)
        if now != watch[3]:
            for st in watch[1]:
                st.pull()
            watch[3] = list(map(_VERSION, tensors))
            watch[3] += map(data_ptr, tensors)
            return True
        return False

    def _program(self, flat: list, spec):
        """The captured program for these inputs: one per training mode and input structure whose
        static dimensions match (with ``dynamic=False`` every dimension is static; with
        ``dynamic=True`` those torch specialized, such as a batch of 1), ``size`` at most (LRU)."""
        leaves = tuple((a._data.dtype, a._data.ndim) if isinstance(a, Tensor) else ("value", a) for a in flat)
        last = self._last_program
        if last is not None and last[0] == self.training and last[1] is spec and last[2] == leaves:
            program = last[3]
            if program.accepts(flat):
                return program
        program = self._find_program(flat, spec, leaves)
        object.__setattr__(self, "_last_program", (self.training, spec, leaves, program))
        return program

    def _find_program(self, flat: list, spec, leaves: tuple):
        import torch

        key = (self.training, str(spec), leaves)
        for pkey, program in self._programs.items():
            if pkey[0] == key and program.accepts(flat):
                self._programs.move_to_end(pkey)
                return program
        args, kwargs = torch.utils._pytree.tree_unflatten([_example(a) for a in flat], spec)
        dynamic = None
        if self._dynamic:
            auto = torch.export.Dim.AUTO
            dims = torch.utils._pytree.tree_map(
                lambda a: {i: auto for i in range(a.dim())} if isinstance(a, torch.Tensor) else None, (args, kwargs)
            )
            dynamic = tuple(dims[0]) if not kwargs else {**_by_name(self._torch_module, dims[0]), **dims[1]}
        start = time.perf_counter()
        with _EXPORT_LOCK:
            ep = torch.export.export(self._torch_module, tuple(args), kwargs, dynamic_shapes=dynamic, strict=False)
        if self._debug >= 0:
            what = "every dimension dynamic" if self._dynamic else "static shapes"
            _log.info(
                f"compile_from_torch: captured {self._torch_name} ({what}) in {time.perf_counter() - start:.2f} s"
            )
        program = self._programs[(key, next(_CAPTURES))] = _Program(ep, self._debug)
        while len(self._programs) > self._size:
            self._programs.popitem(last=False)
        return program

    def _state(self) -> dict:
        state = dict(self.named_parameters(remove_duplicate=False))
        state.update(self.named_buffers(remove_duplicate=False))
        return state

    def forward(self, *args, **kwargs):
        if self._fast and not kwargs:
            out = self._forward_fast(args)
            if out is not _MISS:
                return out
        import torch

        self._pull()
        if not kwargs and all(isinstance(a, torch.Tensor) for a in args):  # positional torch tensors
            spec = self._specs.get(len(args))
            if spec is None:
                spec = self._specs[len(args)] = torch.utils._pytree.tree_flatten((args, kwargs))[1]
            flat, from_torch = [_to_fjax(a) for a in args], bool(args)
        else:
            flat, spec = torch.utils._pytree.tree_flatten((args, kwargs))
            from_torch = any(isinstance(a, torch.Tensor) for a in flat)
            flat = [_to_fjax(a) if isinstance(a, torch.Tensor) else a for a in flat]
        program = self._program(flat, spec)
        needs_grad = (
            not from_torch
            and is_grad_enabled()
            and any(t.requires_grad for t in [*self.parameters(), *(a for a in flat if isinstance(a, Tensor))])
        )
        tensors_only = all(isinstance(a, Tensor) for a in flat)
        if self._use_graph and not needs_grad and tensors_only and trace_state.depth == 0:
            graph = self._graphs.get(program)
            if graph is None:
                graph = self._graphs[program] = _ForwardGraph(self, program, self._size)
                if self._debug >= 0:
                    graph.debug(self._debug)
            while len(self._graphs) > self._size:
                self._graphs.pop(next(iter(self._graphs)))
                self._fast.clear()  # its entries may hold the evicted graph's steps
            if program.host_checks and config.graph_index_checks:
                program.check_inputs([a._data for a in flat])
            version = modules_changed[0]  # what the graph's call reads the module modes at
            with no_grad():
                out = list(graph(*flat))
            if not kwargs and (from_torch or not is_grad_enabled()) and _Fast.eligible(graph, version):
                key = self._fast_key(args, from_torch)
                if key is not None:
                    while len(self._fast) >= self._size:
                        self._fast.pop(next(iter(self._fast)))
                    self._fast[key] = _Fast(
                        graph,
                        program,
                        [a._data for a in flat],
                        [o._data for o in out],
                        version,
                        key,
                    )
        elif from_torch:
            with no_grad():
                out = program.run(self._state(), flat)
        else:
            out = program.run(self._state(), flat)
        if program.single_output:
            out = out[0]
        else:
            out = torch.utils._pytree.tree_unflatten(out, program.out_spec)
        return _to_torch(out) if from_torch else out

    @staticmethod
    def _fast_key(args: tuple, from_torch: bool):
        """A fast entry's key for positional ``args``: all plain CPU torch tensors (``from_torch``)
        or all fjax tensors, with the (dtype, shape) of each; None for any other call."""
        if not args:
            return None
        if from_torch:
            torch_tensor = _TORCH[0]
            if not all(type(a) is torch_tensor and a.is_cpu for a in args):
                return None
            return (True, *[(a.dtype, a.shape) for a in args])
        if not all(isinstance(a, Tensor) for a in args):
            return None
        return (False, *[(a.dtype, a.shape) for a in args])

    def __call__(self, *args, **kwargs):
        # a call a fast entry serves skips ``Module.__call__`` and ``forward`` (when the module
        # has no hooks and no graph is tracing it: what ``Module.__call__`` would look at)
        d = self.__dict__
        if (
            d["_fast"]
            and not kwargs
            and not (
                d["_forward_pre_hooks"]
                or d["_forward_hooks"]
                or d.get("_graph_call")
                or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks")
                or _global_call_hooks[0]
            )
        ):
            out = self._forward_fast(args)
            if out is not _MISS:
                return out
        return nn.Module.__call__(self, *args, **kwargs)

    def _forward_fast(self, args: tuple):
        """A call served by a fast entry (see ``_Fast``), or ``_MISS``."""
        torch_tensor = _TORCH[0]
        if args and all(type(a) is torch_tensor for a in args):
            fast = self._fast.get((True, *[(a.dtype, a.shape) for a in args]))
            if fast is None:
                return _MISS
            staged = fast.staged
            if staged is not None:
                for a in args:
                    if not (a.is_cpu and a.is_contiguous()):
                        staged = None
                        break
            if staged is not None and fast.lock.acquire(False):
                # copied into the entry's own input memory (small inputs: see ``_staging``), which
                # the executable reads until the outputs are ready
                try:
                    memmove = _MEMMOVE[0]
                    for (ptr, n), a in zip(staged[2], args):
                        memmove(ptr, a.data_ptr(), n)
                    outs = fast.call(staged[1], self, True, staged[3])
                    if outs is not None:
                        for o in outs:
                            o.block_until_ready()  # with the GIL released (see ``_TorchStorage.array``)
                finally:
                    fast.lock.release()
                if outs is None:
                    return _MISS
                export = fast.export
                outs = [_array_to_torch(o) for o in outs] if export is None else [export(o) for o in outs]
                if fast.program.single_output:
                    return outs[0]
                return _TORCH[1](outs, fast.program.out_spec)
            importer = _CPU_IMPORT[0]
            if importer is not None and all(a.is_cpu and not a.requires_grad and a.is_contiguous() for a in args):
                if fast.raw is not None:  # the executable takes jax arrays only
                    outs = fast.call(list(map(importer, args)), self, fast.imported)
                elif fast.numpy:  # numpy views of torch's memory: jax's CPU client aliases them too, for less
                    outs = fast.call([a.numpy() for a in args], self, True)
                else:
                    outs = fast.call(list(map(importer, args)), self, fast.imported)
            else:
                outs = fast.call([_dlpack(a) for a in args], self)  # (the slow path's import)
            if outs is None:
                return _MISS
            export = fast.export
            if export is None:
                outs = [_array_to_torch(o) for o in outs]
            else:
                for o in outs:
                    o.block_until_ready()  # with the GIL released (see ``_TorchStorage.array``)
                outs = [export(o) for o in outs]
        elif args and all(isinstance(a, Tensor) for a in args) and not is_grad_enabled():
            fast = self._fast.get((False, *[(a.dtype, a.shape) for a in args]))
            if fast is None:
                return _MISS
            outs = fast.call([a._data for a in args], self)
            if outs is None:
                return _MISS
            outs = [Tensor._wrap(o) for o in outs]
        else:
            return _MISS
        if fast.program.single_output:
            return outs[0]
        return _TORCH[1](outs, fast.program.out_spec)


_MISS = object()
_NUMPY_DTYPES = set()  # the torch dtypes ``Tensor.numpy()`` gives, set with the first TorchModule
_TORCH = [None, None]  # torch.Tensor and torch's pytree unflatten, set with the first TorchModule


def _array_to_torch(arr):
    """A jax array (a step's output) as a torch tensor over its memory, once it is ready."""
    arr.block_until_ready()  # with the GIL released (see ``_TorchStorage.array``)
    out = None if _CPU_EXPORT[0] is None else _CPU_EXPORT[0](arr)
    if out is None:
        import torch

        return torch.from_dlpack(arr)
    return out


_VERSION = operator.attrgetter("_version")
_DATA_PTR = None  # torch.Tensor.data_ptr, set with the first TorchModule


def _by_name(torch_module, positional: list) -> dict:
    """``torch.export``'s ``dynamic_shapes`` of positional arguments, keyed by ``forward``'s names."""
    import inspect

    names = [p.name for p in inspect.signature(torch_module.forward).parameters.values()]
    return dict(zip(names, positional))


def compile_from_torch(torch_module, *, use_graph: bool = True, options: dict | None = None) -> TorchModule:
    """Convert a torch ``nn.Module`` into an fjax module that shares its parameters (OneFlow's
    ``oneflow.framework.infer_compiler.compile_from_torch``).

    The forward is captured with ``torch.export`` on the first call (per training mode), its ATen
    ops mapped onto fjax's op table, and run eagerly or, with ``use_graph=True``, as a compiled
    ``nn.Graph`` whenever no gradient is needed. Parameters and buffers share memory with the
    torch module both ways.

    Args:
        torch_module: the ``torch.nn.Module`` instance.
        use_graph: run calls that need no gradient as a compiled ``nn.Graph`` (jax.jit).
        options: ``size`` (the number of compiled input signatures and captures kept, LRU,
            default 9), ``dynamic`` (capture once with every input dimension symbolic, so a new
            input shape costs a trace and an XLA compile but no capture; default True),
            ``debug`` (log level -1..3: -1 silent, 0 capture and compile stage times, 1 the op
            mapping counts, 2 the captured graph, 3 also each compile's details).

    Returns:
        A ``TorchModule`` (an ``fjax.nn.Module``); ``.torch_module`` is the original.

    Example:
        >>> import torch
        >>> _ = torch.manual_seed(6)
        >>> tm = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
        >>> m = fjax.compile_from_torch(tm, use_graph=False)
        >>> x = torch.ones(1, 3)
        >>> m(x)                                   # torch in, torch out
        tensor([[0.9090, 0.0460]])
        >>> bool(torch.allclose(m(x), tm(x)))
        True
        >>> with torch.no_grad():                  # torch writes: the next call sees it
        ...     _ = tm[0].weight.zero_()
        ...     _ = tm[0].bias.fill_(5.0)
        >>> m(fjax.ones(1, 3)).tolist()
        [[5.0, 5.0]]
    """
    import torch

    if not isinstance(torch_module, torch.nn.Module):
        raise TypeError(f"compile_from_torch: expected a torch.nn.Module, got {type(torch_module).__name__}")
    opts = dict(_OPTIONS)
    for key, value in (options or {}).items():
        if key not in _OPTIONS:
            raise NotImplementedError(
                f"compile_from_torch: option {key!r} is not supported (known: size, dynamic, debug)"
            )
        opts[key] = value
    if not isinstance(opts["size"], int) or opts["size"] < 1:
        raise ValueError(f"compile_from_torch: options['size'] must be a positive int, got {opts['size']!r}")
    if opts["debug"] not in (-1, 0, 1, 2, 3):
        raise ValueError(f"compile_from_torch: options['debug'] must be one of -1, 0, 1, 2, 3, got {opts['debug']!r}")
    if opts["debug"] >= 0 and not _log.handlers:
        _log.addHandler(logging.StreamHandler())
        _log.setLevel(logging.INFO)
    return TorchModule(torch_module, use_graph, opts)
