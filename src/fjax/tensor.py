"""Tensor: a view of a shared storage (a jax.Array or tracer) plus autograd metadata.

A tensor that no other tensor aliases holds its array directly (``_a``; ``_st`` is None).
The first alias (a view op, ``detach()``, ``.data``, ``nn.Parameter(t)``, ``data_ptr()``) moves
the array into a ``Storage`` that every alias then shares, each with its torch geometry
(``_geom``: shape, strides, offset; None when it is the whole storage as stored). A write
through any alias replaces the storage's array functionally (``ops.views.write``) and gives the
storage a new generation number; every other alias re-reads its values (``_sync``) the next time
they are used, and not before. See docs/architecture.md, "Storage and views".

Under eager fusion (``fjax._lazy``) ``_a`` and a storage's array may be a ``Pending`` value: its
shape and dtype are known, its array is computed when something reads it (``_data``, ``_arr``).
"""

from __future__ import annotations

import itertools
import math
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from . import _indexing, _jax_compat, _lazy, _public
from . import dtypes as _dt
from ._dims import PaddedDims
from ._lazy import Padded, Pending
from ._lazy import real as _real
from ._tracing import log_inplace, trace_state
from .device import _NO_DATA, MetaArray
from .device import device as _device
from .device import from_jax as _device_of
from .errors import OpError
from .ops import views as _views
from .profiler import _state as _pstate

_GENERATIONS = itertools.count()


class Storage:
    """The array behind a family of aliasing tensors, and its generation (bumped by each write).

    ``Tensor.untyped_storage()`` returns it; ``data_ptr()`` is a made-up address, equal for
    tensors that share a storage position, as torch's.
    """

    __slots__ = ("_array", "gen", "_ptr", "__weakref__")
    _addresses = itertools.count(1)

    def __init__(self, array):
        self._array = array
        self.gen = next(_GENERATIONS)
        self._ptr = next(Storage._addresses) << 40

    @property
    def array(self):
        """The values. A bucketed tensor's storage (a ``Padded`` value: a view of it was taken)
        copies its real block out at the first read, not when the view is made."""
        a = self._array
        if isinstance(a, Padded):
            a = self._array = a.force()
        return a

    @array.setter
    def array(self, value):
        self._array = value

    @property
    def shape(self) -> tuple:
        """The values' shape (a bucketed tensor's real one), read without computing them."""
        return tuple(self._array.shape)

    def data_ptr(self) -> int:
        return self._ptr

    def nbytes(self) -> int:
        return int(self.array.size) * self.array.dtype.itemsize

    size = nbytes

    def __repr__(self):
        return f"fjax.Storage(nbytes={self.nbytes()}, dtype={self.array.dtype})"


class _Above:
    """What the layers above this module lend it when they are imported: this module imports
    none of them (they all import it), so Tensor's methods that need them look them up here.

    ``ops``: the op table's Tensor functions (``dispatch.functions``); ``creation``:
    ``fjax.creation``; ``backward``: ``autograd.backward``; ``grad_state``: grad mode (its
    thread-local ``enabled``); ``global_tensor``:
    ``fjax.distributed.global_tensor``; ``materialize``, ``unpad_edge``, ``real_rows_hook``:
    ``fjax._bucket``'s (a Padded value's real rows; the tape node that takes them; a tensor hook
    that sees them); ``forward_ad``: ``autograd.forward_ad`` (an in-place write carries a tangent).
    """

    ops = creation = backward = grad_state = global_tensor = materialize = unpad_edge = real_rows_hook = None
    forward_ad = None


def _f():
    return _Above.ops


def _dual_level():
    """``autograd.forward_ad`` while one of its levels is open (in-place writes carry tangents), else None."""
    fw = _Above.forward_ad
    return fw if fw is not None and fw.state.level is not None else None


class Tensor:
    """An n-dimensional array with torch's API; ``.backward()`` runs JAX VJPs recorded on a tape.

    Example::

        >>> x = fjax.tensor([[1.0, 2.0]], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([[2., 4.]], dtype=fjax.float32)
    """

    __slots__ = {  # a dict: each slot's descriptor carries its text as __doc__
        "_a": "the values (for an alias: as of storage generation ``_gen``); maybe Pending or Padded (fjax._lazy)",
        "_st": "the shared Storage, or None while nothing aliases this tensor",
        "_gen": "the storage generation ``_a`` was read at",
        "_geom": "(shape, strides, offset) over the storage; None: the whole storage as stored",
        "_vbase": "the view's base for autograd (torch's ``_base``), or None",
        "_bnode": "the base's grad_fn when this view's grad_fn was derived",
        "_stop": "reads stop JAX gradients (detach/.data aliases inside transforms)",
        "_multi": "(op, output index) of a view from a multi-output op (split, unbind ...)",
        "_node": "the tape node that made this tensor (its grad_fn), or None",
        "_idx": "which output of ``_node`` this tensor is",
        "_requires_grad": "whether autograd tracks this tensor",
        "grad": "The gradient ``backward()`` accumulated into this leaf (None until then), as torch's ``Tensor.grad``.",
        "_vc": "torch's version counter, [count]: shared by a base, its views and detach()",
        "_hooks": "the tensor's gradient hooks",
        "__weakref__": None,
        "__dict__": None,
    }
    __array_priority__ = 1000

    def __init__(self, *args, dtype=None, device=None, placement=None, sbp=None):
        creation = _Above.creation
        kw = dict(dtype=dtype or _dt.float32, device=device, placement=placement, sbp=sbp)
        if len(args) == 1 and not isinstance(args[0], int):
            src = creation.tensor(args[0], **kw)
        else:
            src = creation.zeros(*args, **kw)
        Tensor._init(self, src._data)

    def _init(self, data, node=None, idx=0):
        self._a = data
        self._st = None
        self._node = node
        self._idx = idx
        self._requires_grad = node is not None
        self.grad = None
        self._vc = [0]
        self._hooks = None

    @classmethod
    def _wrap(cls, data, node=None, idx=0) -> "Tensor":
        t = object.__new__(Tensor)
        t._a = data
        t._st = None
        t._node = node
        t._idx = idx
        t._requires_grad = node is not None
        t.grad = None
        t._vc = [0]
        t._hooks = None
        return t

    # -- storage ------------------------------------------------------------------------
    @property
    def _data(self):
        """The current values as a jax array (re-read from the storage after an alias wrote)."""
        st = self._st
        a = self._a if st is None or self._gen == st.gen else self._sync()
        t = type(a)
        if t is Pending:
            a = self._a = a.force()
        elif t is Padded or t is PaddedDims:
            a = _Above.materialize(self)
        return a

    @_data.setter
    def _data(self, value):
        self._write(value)

    @property
    def _meta(self):
        """The current values, or a Pending value: for shape, dtype and device, which need no data."""
        st = self._st
        return self._a if st is None or self._gen == st.gen else self._sync()

    @property
    def _arr(self):
        """The array as of ``_gen`` (``_a``), computed if it is pending."""
        a = self._a
        t = type(a)
        if t is Pending:
            a = self._a = a.force()
        elif t is Padded or t is PaddedDims:
            a = _Above.materialize(self)
        return a

    @_arr.setter
    def _arr(self, value):
        self._a = value

    def _edge(self) -> tuple:
        """Where an op that reads this tensor's values (its real rows) joins the tape: its node,
        or for a bucketed result (``fjax._bucket``) a node taking the real rows of it."""
        node = self._node
        if node.padded:
            return _Above.unpad_edge(node, self._idx, self.shape, self.dtype)
        return node, self._idx

    def _sync(self):
        base = self._vbase
        if base is not None and base._node is not self._bnode:
            self._derive(base)
            return self._arr
        st, g = self._st, self._geom
        arr = st.array
        if g is not None:
            if type(arr) is MetaArray:
                arr = MetaArray(g[0], arr.dtype)
            else:
                arr = _lazy.then(_views.storage_reader(g[0], g[1]), (arr, g[2]))
        if self._stop:
            arr = _stop_gradient(arr)
        self._a, self._gen = arr, st.gen
        return arr

    def _write(self, value) -> None:
        """Replace the values, in the storage every alias shares (no version bump, no tape)."""
        st = self._st
        if st is None:
            if trace_state.depth:
                log_inplace(self, "_a")
            self._a = value
            return
        if isinstance(value, Padded):  # a storage holds the real rows
            value = value.force()
        g = self._geom
        if g is None:
            new = value
        elif type(value) is MetaArray or type(st.array) is MetaArray:
            new = _meta_write(st.array, value, g)
        else:
            new = _lazy.then(_views.storage_writer(g[0], g[1]), (st.array, value, g[2]), always=True)
        if trace_state.depth:
            log_inplace(st, "array", "gen")
            log_inplace(self, "_a", "_gen")
        st.array, st.gen = new, next(_GENERATIONS)
        if g is None or value.dtype == new.dtype:
            self._a, self._gen = value, st.gen  # else the next read casts it

    def _storage(self) -> Storage:
        """The storage, created on the first alias."""
        st = self._st
        if st is None:
            st = Storage(self._a)  # a Padded value: its real block, copied out when read
            self._attach(st, None)
        return st

    def _attach(self, st: Storage, geom, base: "Tensor | None" = None, stop: bool = False) -> None:
        """Alias ``st`` at ``geom``, as a view of ``base`` (for autograd) or of nothing; values
        as of the storage's current generation."""
        self._st, self._gen, self._geom, self._stop = st, st.gen, geom, stop
        self._vbase, self._bnode = base, None if base is None else base._node

    def _geometry(self) -> tuple:
        """(shape, strides, offset) over the storage."""
        if self._st is None:
            shape = tuple(self._a.shape)
        elif self._geom is None:
            shape = self._st.shape
        else:
            return self._geom
        return shape, _views.contiguous_strides(shape), 0

    def _alias(self) -> "Tensor":
        """A new leaf sharing this tensor's storage position and version counter (detach)."""
        t = Tensor._wrap(None)
        t._share(self, stop=True)
        t._vc = self._vc
        return t

    def _share(self, src: "Tensor", stop: bool = False) -> None:
        """From now on, alias ``src``'s storage position (not its history)."""
        st = src._storage()
        self._a = _stop_gradient(src._meta) if stop else src._meta
        self._attach(st, src._geom, stop=stop)

    def _view_from(self, x: "Tensor", geom: tuple) -> None:
        """Make this fresh op output a view of ``x``'s storage at ``geom``."""
        st = x._storage()
        whole = (st.shape, _views.contiguous_strides(st.shape), 0)
        self._attach(st, None if geom == whole else geom, x if x._vbase is None else x._vbase, x._stop)
        self._multi = x._multi if x._vbase is not None else None  # torch: views of them inherit it
        self._vc = x._vc

    def _derive(self, base: "Tensor") -> None:
        """Take this view's grad_fn from its base's current one (after the base was written)."""
        from .autograd.grad_mode import enable_grad

        with enable_grad():
            v = _view_kernel("_view_read", base, self._geometry())
        self._a, self._gen = v._meta, self._st.gen
        self._node, self._idx, self._requires_grad = v._node, v._idx, v._requires_grad
        self._bnode = base._node

    @property
    def _base(self):
        """torch's ``_base``: the tensor this one is a view of, or None."""
        return self._vbase if self._st is not None else None

    def _is_view(self) -> bool:
        return self._base is not None

    def stride(self, dim: int | None = None):
        """Elements to step in the storage per index of each dim (torch's strides).

        Args:
            dim: one dimension; all of them by default.

        Example:
            >>> x = fjax.ones(2, 3)
            >>> x.stride(), x.t().stride(), x.stride(0)
            ((3, 1), (1, 3), 3)
        """
        strides = self._geometry()[1]
        return strides if dim is None else strides[self._dim(dim, "stride")]

    def storage_offset(self) -> int:
        """The offset of this tensor's first element in its storage, in elements.

        Example:
            >>> x = fjax.ones(2, 3)
            >>> x.storage_offset(), x[:, 1].storage_offset()
            (0, 1)
        """
        return self._geometry()[2]

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements lie in the storage in row-major order without gaps.

        Args:
            memory_format: accepted for torch's signature; the row-major layout is checked.

        Example:
            >>> x = fjax.ones(2, 3)
            >>> x.is_contiguous(), x.t().is_contiguous()
            (True, False)
        """
        shape, strides, _ = self._geometry()
        return _views.is_contiguous(shape, strides)

    def contiguous(self, memory_format=None) -> "Tensor":
        """This tensor if it is contiguous, else a contiguous copy.

        Args:
            memory_format: accepted for torch's signature.

        Example:
            >>> x = fjax.ones(2, 3).t()
            >>> x.is_contiguous(), x.contiguous().is_contiguous()
            (False, True)
        """
        return self if self.is_contiguous() else self.clone()

    def data_ptr(self) -> int:
        """The address of the first element: the storage's address plus the offset in bytes.

        Example:
            >>> x = fjax.arange(4)
            >>> x[1:].data_ptr() - x.data_ptr()
            8
        """
        return self._storage().data_ptr() + self.storage_offset() * self.element_size()

    def untyped_storage(self) -> Storage:
        """The storage this tensor is a view of, shared by all its aliases.

        Example:
            >>> fjax.arange(3).untyped_storage()
            fjax.Storage(nbytes=24, dtype=int64)
        """
        return self._storage()

    def is_set_to(self, tensor: "Tensor") -> bool:
        """Whether both tensors are the same storage, offset, sizes and strides.

        Args:
            tensor: the tensor to compare with.

        Example:
            >>> x = fjax.ones(2)
            >>> x.is_set_to(x.detach()), x.is_set_to(x.clone())
            (True, False)
        """
        return self._storage() is tensor._storage() and self._geometry() == tensor._geometry()

    def as_strided(self, size, stride, storage_offset=None) -> "Tensor":
        """A view of this tensor's storage with the given sizes, strides and offset.

        Args:
            size: the sizes of the view.
            stride: the strides of the view, in elements.
            storage_offset: the first element's offset in the storage; this tensor's by default.

        Example:
            >>> fjax.arange(4).as_strided((2, 2), (1, 2))
            tensor([[0, 2],
                    [1, 3]], dtype=fjax.int64)
        """
        base_geom = self._geometry()
        geom = (tuple(size), tuple(stride), base_geom[2] if storage_offset is None else int(storage_offset))
        numel = int(np.prod(geom[0], dtype=np.int64))
        st_size = int(self._storage().array.size)
        last = geom[2] + sum((n - 1) * s for n, s in zip(geom[0], geom[1]))
        if numel and (geom[2] < 0 or last >= st_size or min(geom[1], default=0) < 0):
            raise OpError(
                f"as_strided: size {list(size)}, stride {list(stride)} and offset {geom[2]} reach outside "
                f"a storage of {st_size} elements"
            )
        out = _view_kernel("_view_read", self, geom)
        out._view_from(self, geom)
        return out

    # -- metadata -----------------------------------------------------------------------
    @property
    def data(self) -> "Tensor":
        """The same storage, detached from the tape, with its own version counter (torch's).

        Example:
            >>> w = fjax.ones(2, requires_grad=True)
            >>> d = w.data
            >>> d.requires_grad, d.fill_(3).tolist(), w.tolist()
            (False, [3.0, 3.0], [3.0, 3.0])
        """
        t = self._alias()
        t._vc = [0]
        return t

    @data.setter
    def data(self, value: "Tensor"):
        """``p.data = t``: from now on ``p`` is an alias of ``t``'s storage (torch's set_data)."""
        self._share(value if isinstance(value, Tensor) else _Above.creation.as_tensor(value), stop=True)

    @property
    def dtype(self) -> _dt.dtype:
        """The data type of the elements.

        Example:
            >>> fjax.ones(2).dtype, fjax.arange(2).dtype
            (fjax.float32, fjax.int64)
        """
        return _dt._BY_NP[self._meta.dtype]

    @property
    def shape(self) -> "Size":
        """The size of each dimension, as a :class:`fjax.Size`.

        Example:
            >>> fjax.ones(2, 3).shape
            fjax.Size([2, 3])
        """
        return Size(self._meta.shape)

    def size(self, dim: int | None = None):
        """The shape, or the length of one dimension.

        Args:
            dim: one dimension; the whole shape by default.

        Example:
            >>> x = fjax.ones(2, 3)
            >>> x.size(), x.size(1), x.size(-1)
            (fjax.Size([2, 3]), 3, 3)
        """
        if dim is None:
            return Size(self._meta.shape)
        return self._meta.shape[self._dim(dim, "size")]

    def _dim(self, dim, op):
        n = self._meta.ndim
        if not -max(n, 1) <= dim < max(n, 1):
            raise OpError(f"fjax.{op}: dim {dim} is out of range for a {n}-d tensor of shape {tuple(self.shape)}")
        return dim % max(n, 1)

    @property
    def T(self) -> "Tensor":  # noqa: N802 - torch's name
        """Dimensions reversed.

        Example:
            >>> fjax.ones(2, 3, 4).T.shape
            fjax.Size([4, 3, 2])
        """
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> "Tensor":  # noqa: N802 - torch's name
        """The last two dimensions swapped (batched matrix transpose).

        Example:
            >>> fjax.ones(5, 2, 3).mT.shape
            fjax.Size([5, 3, 2])
        """
        return self.transpose(-2, -1)

    @property
    def mH(self) -> "Tensor":  # noqa: N802 - torch's name
        """The last two dimensions swapped and conjugated (batched conjugate transpose).

        Example:
            >>> fjax.tensor([[1 + 1j, 2j]]).mH
            tensor([[1.-1.j],
                    [0.-2.j]], dtype=fjax.complex64)
        """
        return _f().adjoint(self)

    @property
    def H(self) -> "Tensor":  # noqa: N802 - torch's name
        """The conjugate transpose of a matrix (0-D or 2-D only, as torch).

        Example:
            >>> fjax.tensor([[1 + 1j, 2j]]).H
            tensor([[1.-1.j],
                    [0.-2.j]], dtype=fjax.complex64)
        """
        if self.ndim not in (0, 2):
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors), got {self.ndim}-D")
        return _f().conj(self) if self.ndim == 0 else _f().adjoint(self)

    @property
    def real(self) -> "Tensor":
        """The real part (fjax.real): a copy in fjax, a view in torch.

        Example:
            >>> fjax.tensor([1 + 2j]).real
            tensor([1.], dtype=fjax.float32)
        """
        return _f().real(self)

    @property
    def imag(self) -> "Tensor":
        """The imaginary part of a complex tensor (fjax.imag): a copy in fjax, a view in torch.

        Example:
            >>> fjax.tensor([1 + 2j]).imag
            tensor([2.], dtype=fjax.float32)
        """
        return _f().imag(self)

    @property
    def ndim(self) -> int:
        """The number of dimensions.

        Example:
            >>> fjax.ones(2, 3).ndim
            2
        """
        return self._meta.ndim

    def dim(self) -> int:
        """The number of dimensions (same as ``ndim``).

        Example:
            >>> fjax.ones(2, 3).dim()
            2
        """
        return self._meta.ndim

    def numel(self) -> int:
        """The number of elements (``nelement`` is the same method).

        Example:
            >>> fjax.ones(2, 3).numel(), fjax.ones(2, 3).nelement()
            (6, 6)
        """
        return math.prod(self._meta.shape)

    nelement = numel

    def element_size(self) -> int:
        """The size of one element in bytes.

        Example:
            >>> fjax.ones(2).element_size(), fjax.ones(2).double().element_size()
            (4, 8)
        """
        return self._meta.dtype.itemsize

    @property
    def device(self) -> _device:
        """The device the values live on (``meta`` for a tensor without values).

        Example:
            >>> fjax.ones(2).cpu().device
            device(type='cpu')
        """
        data = self._meta
        if isinstance(data, jax.core.Tracer):
            return _device("cpu") if jax.default_backend() == "cpu" else _device("cuda", 0)
        if type(data) is MetaArray:
            return _device("meta")
        return _device_of(next(iter(data.devices())))

    @property
    def is_meta(self) -> bool:
        """Whether this tensor is on the meta device: a shape and a dtype, no values.

        Example::

            >>> fjax.empty(2, 3, device="meta").is_meta, fjax.empty(2).is_meta
            (True, False)
        """
        return type(self._meta) is MetaArray

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a CUDA (GPU) device.

        Example:
            >>> fjax.ones(2).cpu().is_cuda
            False
        """
        return self.device.type == "cuda"

    is_sparse = False  # fjax.sparse's COO tensors say True
    layout = _dt.strided

    def to_dense(self, dtype=None, *, masked_grad=None) -> "Tensor":
        """The tensor itself (a dense tensor is its own dense form), cast to ``dtype`` if given.

        Args:
            dtype: the dtype of the result; this tensor's by default.
            masked_grad: accepted for torch's signature.

        Example:
            >>> fjax.eye(2).to_dense()
            tensor([[1., 0.],
                    [0., 1.]], dtype=fjax.float32)
        """
        return self if dtype is None else self.to(dtype)

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point type.

        Example:
            >>> fjax.ones(2).is_floating_point(), fjax.arange(2).is_floating_point()
            (True, False)
        """
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        """Whether the dtype is a complex type.

        Example:
            >>> fjax.ones(2).is_complex(), fjax.ones(2, dtype=fjax.complex64).is_complex()
            (False, True)
        """
        return self.dtype.is_complex

    # -- autograd -----------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether autograd records operations on this tensor; settable on leaf tensors.

        Example:
            >>> w = fjax.ones(2)
            >>> w.requires_grad = True
            >>> w.requires_grad, (w * 2).requires_grad
            (True, True)
        """
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        if self._node is not None:
            if not value:
                raise RuntimeError(
                    "requires_grad: you can only change requires_grad flags of leaf tensors; "
                    "use detach() to get a tensor that does not require grad"
                )
            return
        if value and not jnp.issubdtype(self._meta.dtype, jnp.inexact):
            raise OpError(
                f"requires_grad: only tensors of floating point or complex dtype can require "
                f"gradients, got {self.dtype}"
            )
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place and return this tensor.

        Args:
            requires_grad: whether autograd records operations on this tensor.

        Example:
            >>> fjax.ones(2).requires_grad_().requires_grad
            True
        """
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        """The tape node that made this tensor (``None`` for a leaf).

        Example:
            >>> w = fjax.ones(2, requires_grad=True)
            >>> w.grad_fn is None, (w * 2).grad_fn is None
            (True, False)
        """
        return self._node

    @property
    def is_leaf(self) -> bool:
        """Whether this tensor was not made by a recorded operation (its ``.grad`` fills in backward).

        Example:
            >>> w = fjax.ones(2, requires_grad=True)
            >>> w.is_leaf, (w * 2).is_leaf
            (True, False)
        """
        return self._node is None

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (torch semantics).

        Args:
            gradient: d(loss)/d(self), needed unless ``self`` has one element.
            retain_graph: keep the tape for another backward.
            create_graph: record the backward pass, for higher derivatives.
            inputs: accumulate only into these leaves.

        Example:
            >>> x = fjax.tensor([1.0, 2.0], requires_grad=True)
            >>> (x * x).sum().backward()
            >>> x.grad
            tensor([2., 4.], dtype=fjax.float32)
        """
        _Above.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new grad.

        Args:
            hook: a function of the gradient, returning a replacement or None.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> w = fjax.ones(2, requires_grad=True)
            >>> handle = w.register_hook(lambda grad: grad * 10)
            >>> (w * 3).sum().backward()
            >>> w.grad
            tensor([30., 30.], dtype=fjax.float32)
            >>> handle.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't require gradient")
        if self._node is not None and self._node.padded:  # a bucketed result: the hook sees its real rows
            hook = _Above.real_rows_hook(hook, tuple(self.shape))
        if self._node is None:
            hooks = self._hooks = self._hooks or []
        else:
            node_hooks = self._node.hooks = self._node.hooks or {}
            hooks = node_hooks.setdefault(self._idx, [])
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after backward accumulated this leaf's gradient into ``.grad``
        (an optimizer step inside backward, as torch's).

        Args:
            hook: a function of the tensor; its result is ignored.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> w = fjax.ones(2, requires_grad=True)
            >>> handle = w.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(0.5))
            >>> (w * 4).sum().backward()
            >>> w.grad
            tensor([2., 2.], dtype=fjax.float32)
            >>> handle.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._node is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        hooks = self._hooks = self._hooks or []
        hooks.append(PostAccumulateHook(hook))
        return _RemovableHandle(hooks, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward.

        Example:
            >>> y = fjax.ones(2, requires_grad=True) * 2
            >>> y.retain_grad()
            >>> (y * y).sum().backward()
            >>> y.grad
            tensor([4., 4.], dtype=fjax.float32)
        """
        if self._node is None:
            return
        retained = self._node.retained = self._node.retained or {}
        retained[self._idx] = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        """Whether this non-leaf tensor keeps its ``.grad`` after backward (see ``retain_grad``).

        Example:
            >>> y = fjax.ones(2, requires_grad=True) * 2
            >>> y.retain_grad()
            >>> y.retains_grad
            True
        """
        r = self._node.retained if self._node is not None else None
        return bool(r) and self._idx in r

    def detach(self) -> "Tensor":
        """The same storage without history (a new leaf sharing the version counter); inside
        transforms too.

        Example:
            >>> w = fjax.ones(2, requires_grad=True)
            >>> d = (w * 2).detach()
            >>> d.requires_grad, d.is_leaf
            (False, True)
        """
        return self._alias()

    def detach_(self) -> "Tensor":
        """Detach this tensor from the tape in place: it becomes a leaf that does not require grad.

        Example:
            >>> y = fjax.ones(2, requires_grad=True) * 2
            >>> y.detach_().is_leaf, y.requires_grad
            (True, False)
        """
        if self._base is not None:
            raise RuntimeError("detach_: can't detach views in-place; use detach() instead")
        self._node = None
        self._requires_grad = False
        return self

    # -- host values --------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a NumPy array. A tensor that requires grad gives its values too, as
        OneFlow does (torch raises and asks for ``detach().numpy()``; both give the same array).
        ``force`` is accepted for torch's signature.

        Example:
            >>> fjax.arange(3).numpy()
            array([0, 1, 2])
        """
        _lazy.steps += 1
        data = self._data
        if type(data) is MetaArray:
            raise TypeError(_META_NUMPY)
        return np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("Tensor.__array__: a jax array cannot be viewed without a copy")
        data = self._data
        if type(data) is MetaArray:
            raise TypeError(_META_NUMPY)
        return np.array(data, dtype=dtype)  # writable, as numpy expects

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack protocol (``np.from_dlpack(t)``, ``jax.numpy.from_dlpack(t)``): a capsule of
        the values; a tensor that requires grad must be detached first, as in torch."""
        if self._requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        kwargs = {"max_version": max_version} if max_version is not None else {}
        return self._data.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def record_stream(self, stream) -> None:
        """torch's promise that ``stream`` uses this tensor's memory: XLA orders every use of an
        array itself, so there is nothing to record.

        Example::

            >>> fjax.ones(2).record_stream(None)
        """

    def module_load(self, other: "Tensor", assign: bool = False) -> "Tensor":
        """What ``Module.load_state_dict`` loads into this parameter or buffer from ``other``
        (torch's hook for tensor subclasses): ``other`` detached with ``assign``, else ``other``
        copied into this tensor, detached.

        Example::

            >>> fjax.zeros(2).module_load(fjax.ones(2))
            tensor([1., 1.], dtype=fjax.float32)
        """
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def item(self):
        """The value of a one-element tensor as a Python number.

        Example:
            >>> fjax.tensor([1.5]).item()
            1.5
        """
        if self.numel() != 1:
            raise OpError(f"item: a Tensor with {self.numel()} elements cannot be converted to a Python scalar")
        _lazy.steps += 1
        data = self._data
        if type(data) is MetaArray:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return np.asarray(data).reshape(()).item()

    def tolist(self):
        """The values as (nested) Python lists.

        Example:
            >>> fjax.tensor([[1, 2], [3, 4]]).tolist()
            [[1, 2], [3, 4]]
        """
        _lazy.steps += 1
        return np.asarray(self._data).tolist()

    def __bool__(self):
        if self.numel() != 1:
            raise OpError(f"bool: a Tensor with {self.numel()} elements is ambiguous; use .any() or .all()")
        return bool(self.item())

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._meta.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

    __hash__ = object.__hash__  # by identity, in C: optimizers and caches key dicts by Tensors

    def __getattr__(self, name):  # only after normal lookup failed: free on the hot path
        if name.startswith("_"):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        from ._missing import missing

        raise missing("torch.Tensor", name)

    def __repr__(self):
        return _repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self.ndim == 0 and not isinstance(self._data, jax.core.Tracer):
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        return (_Above.creation.tensor, (np.asarray(self._data),), None)

    def __deepcopy__(self, memo):
        """A copy of the values; tensors that shared a storage share the copy's (torch's)."""
        import copy

        t = object.__new__(type(self))
        st = self._st
        if st is None:
            Tensor._init(t, _copy_array(self._data))
        else:
            new = memo.get(id(st))
            if new is None:
                new = memo[id(st)] = Storage(_copy_array(_real(st.array)))
            Tensor._init(t, None)
            t._attach(new, self._geom)
            t._gen = -1  # read from the copy on first use
        t._requires_grad = self._requires_grad
        t.__dict__.update(copy.deepcopy(self.__dict__, memo))
        if self.grad is not None:
            t.grad = copy.deepcopy(self.grad, memo)
        return t

    # -- conversion ---------------------------------------------------------------------
    def to(self, *args, **kwargs) -> "Tensor":
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other_tensor)``, each with
        ``non_blocking=``, ``copy=`` (a new tensor even when nothing changes) and ``memory_format=``
        (accepted; see :class:`fjax.memory_format`).

        Example:
            >>> x = fjax.arange(3)
            >>> x.to(fjax.float32).dtype, x.to("cpu").device, x.to(fjax.ones(1)).dtype
            (fjax.float32, device(type='cpu'), fjax.float32)
        """
        dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        _dt.check_memory_format("Tensor.to", kwargs.pop("memory_format", None))
        bools = []
        if kwargs:
            raise NotImplementedError(f"Tensor.to: unsupported arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (_dt.dtype, np.dtype)) or a in (float, int, bool):
                dtype = a
            elif isinstance(a, _device):
                device = a
            elif isinstance(a, bool):  # to(..., non_blocking, copy) positionally
                bools.append(a)
            elif isinstance(a, str):
                try:
                    device = _device(a)
                except ValueError:
                    raise OpError(f"Tensor.to: expected a dtype, device or Tensor, got {a!r}") from None
            else:
                raise OpError(f"Tensor.to: expected a dtype, device or Tensor, got {a!r}")
        copy = copy or bools[1:2] == [True]
        out = self
        if dtype is not None and _dt.to_dtype(dtype) != self.dtype:
            out = _f()._cast(out, dtype=np.dtype(_dt.to_dtype(dtype)))
        if device is not None:
            device = _device(device)
            a = out._meta  # (a pending value knows its device: nothing to compute)
            if device.type == "meta" or type(a) is MetaArray:
                return _to_meta(out, device)
            dev = device.jax_device()
            if not isinstance(a, jax.core.Tracer) and dev not in a.devices():
                out = _f()._to_device(out, device=dev)
        return out.clone() if copy and out is self else out

    def float(self, memory_format=None):
        """This tensor cast to ``fjax.float32`` (``self.to(fjax.float32)``).

        Args:
            memory_format: accepted for torch's signature (see :class:`fjax.memory_format`).

        Example:
            >>> fjax.arange(3).float().dtype
            fjax.float32
        """
        return self.to(_dt.float32, memory_format=memory_format)

    def double(self, memory_format=None):
        """This tensor cast to ``fjax.float64`` (``self.to(fjax.float64)``).

        Args:
            memory_format: accepted for torch's signature (see :class:`fjax.memory_format`).

        Example:
            >>> fjax.arange(3).double().dtype
            fjax.float64
        """
        return self.to(_dt.float64, memory_format=memory_format)

    def half(self, memory_format=None):
        """This tensor cast to ``fjax.float16`` (``self.to(fjax.float16)``).

        Args:
            memory_format: accepted for torch's signature (see :class:`fjax.memory_format`).

        Example:
            >>> fjax.arange(3).half().dtype
            fjax.float16
        """
        return self.to(_dt.float16, memory_format=memory_format)

    def bfloat16(self, memory_format=None):
        """This tensor cast to ``fjax.bfloat16`` (``self.to(fjax.bfloat16)``).

        Args:
            memory_format: accepted for torch's signature (see :class:`fjax.memory_format`).

        Example:
            >>> fjax.arange(3).bfloat16().dtype
            fjax.bfloat16
        """
        return self.to(_dt.bfloat16, memory_format=memory_format)

    def int(self, memory_format=None):
        """This tensor cast to ``fjax.int32`` (``self.to(fjax.int32)``).

        Args:
            memory_format: accepted for torch's signature (see :class:`fjax.memory_format`).

        Example:
            >>> fjax.arange(3).int().dtype
            fjax.int32
        """
        return self.to(_dt.int32, memory_format=memory_format)

    def long(self, memory_format=None):
        """This tensor cast to ``fjax.int64`` (``self.to(fjax.int64)``).

        Args:
            memory_format: accepted for torch's signature (see :class:`fjax.memory_format`).

        Example:
            >>> fjax.arange(3).long().dtype
            fjax.int64
        """
        return self.to(_dt.int64, memory_format=memory_format)

    def bool(self, memory_format=None):
        """This tensor cast to ``fjax.bool`` (``self.to(fjax.bool)``).

        Args:
            memory_format: accepted for torch's signature (see :class:`fjax.memory_format`).

        Example:
            >>> fjax.arange(3).bool().dtype
            fjax.bool
        """
        return self.to(_dt.bool, memory_format=memory_format)

    def cpu(self):
        """This tensor on the CPU (itself when it is there already).

        Example:
            >>> fjax.ones(2).cpu().device
            device(type='cpu')
        """
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        """This tensor on a CUDA device (``self.to("cuda")``).

        Args:
            device: the CUDA device or its index; the current one by default.
            non_blocking: accepted for torch's signature.

        Example:
            >>> fjax.ones(2).cuda().is_cuda  # doctest: +SKIP
            True
        """
        device = _device("cuda", device) if isinstance(device, int) else device or "cuda"
        return self.to(device, non_blocking=non_blocking)

    def clone(self, *, memory_format=None):
        """A copy with its own storage, recorded on the tape (gradients flow back to ``self``).

        Args:
            memory_format: accepted for torch's signature (see :class:`fjax.memory_format`).

        Example:
            >>> x = fjax.zeros(2)
            >>> y = x.clone()
            >>> y.add_(1)
            tensor([1., 1.], dtype=fjax.float32)
            >>> x
            tensor([0., 0.], dtype=fjax.float32)
        """
        _dt.check_memory_format("Tensor.clone", memory_format)
        return _f()._copy(self)

    # -- in-place -----------------------------------------------------------------------
    def _check_inplace(self, op: str) -> tuple:
        """torch's errors for writing a leaf that requires grad, or a view of one, in place; returns
        whether grad mode is on and the view's base (None for a tensor that is not a view)."""
        grad = _Above.grad_state.enabled
        base = self._vbase if self._st is not None else None
        if grad and self._requires_grad and self._node is None:
            raise RuntimeError(
                f"{op}: a leaf Variable that requires grad is being used in an in-place operation; "
                "wrap it in fjax.no_grad() or use an out-of-place op"
            )
        if grad and base is not None and base._requires_grad and base._node is None:
            raise RuntimeError(
                f"{op}: a view of a leaf Variable that requires grad is being used in an in-place operation; "
                "wrap it in fjax.no_grad() or use an out-of-place op"
            )
        return grad, base

    def _set_view_(self, view: "Tensor", op: str) -> "Tensor":
        """Make ``self`` the view ``view`` of its own storage: torch's in-place view ops (``t_``,
        ``unsqueeze_``, ``as_strided_`` ...), given the same view op applied out of place.

        Only the geometry changes: ``self`` stays an alias of the same storage (and a view of the same
        base, if it was one), its history becomes ``view``'s (the view op recorded on its old one) and
        its version counter is bumped, as in torch. Under no_grad the history stays, as in torch.
        """
        self._check_inplace(op)
        fw = _dual_level()
        if fw is not None and fw.tangent_of(self) is not None:
            raise NotImplementedError(f"forward_ad: {op}: an in-place view op on a dual tensor is not supported")
        if view._st is not self._storage():
            raise OpError(f"{op}: internal error: the view does not alias the tensor's storage")
        if trace_state.depth:
            log_inplace(self, "_a", "_gen", "_geom", "_bnode", "_node", "_idx", "_requires_grad")
        self._a, self._gen, self._geom = view._a, view._gen, view._geom
        if self._vbase is not None:
            self._bnode = view._bnode
        if view._node is not None:
            self._node, self._idx, self._requires_grad = view._node, view._idx, True
        self._vc[0] += 1
        return self

    def _set_(self, result: "Tensor", op: str) -> "Tensor":
        """Make ``self`` hold ``result`` (computed functionally from it): torch's in-place op.

        The values go into the storage, so every alias sees them. On a view whose base (or
        ``result``) requires grad the base's history becomes the write (torch's CopySlices) and
        the view's history a read of it.
        """
        grad, base = self._check_inplace(op)
        fw = _dual_level()
        if fw is not None:
            fw.inplace(self, result, op)
        data = self._meta
        if type(data) is MetaArray or type(result._meta) is MetaArray:
            result = _meta_result(data, result)
        if result._meta.dtype != data.dtype:
            src, dst = _dt._BY_NP[result._meta.dtype], self.dtype
            if _category(src) > _category(dst):
                raise OpError(f"{op}: result type {src} can't be cast to the desired output type {dst}")
            result = _f()._cast(result, dtype=data.dtype)
        if result._meta.shape != data.shape:
            raise OpError(
                f"{op}: output with shape {tuple(self.shape)} doesn't match the broadcast shape {tuple(result.shape)}"
            )
        if self._st is not None and self._geom is not None and _views.overlaps(*self._geom[:2]):
            raise RuntimeError(
                f"{op}: unsupported operation: more than one element of the written-to tensor of shape "
                f"{tuple(self.shape)} (strides {self._geom[1]}) refers to a single memory location. "
                "Please clone() the tensor before performing the operation."
            )
        if trace_state.depth:
            log_inplace(self, "_node", "_idx", "_requires_grad")
        through_base = base is not None and grad and (base._requires_grad or result._requires_grad)
        if not through_base and result._node is None and grad and self._requires_grad:
            # values without history (fill_, zero_, copy_ of a constant) overwrite a tensor with one: as
            # in torch, it keeps requiring grad and the values it replaced get zero gradient
            result = _f().where(Tensor._wrap(jnp.ones(data.shape, bool)), result, self)
        if result._node is not None and result._node.versions:  # the value it replaced can't change later
            result._node.versions = [v for v in result._node.versions if v[0] is not self._vc]
        if through_base:
            if self._multi is not None:
                name, i = self._multi
                raise RuntimeError(
                    f"{op}: Output {i} of {name} is a view and is being modified inplace. This view is the "
                    "output of a function that returns multiple views. Such functions do not allow the output "
                    "views to be modified inplace. You should replace the inplace operation by an out-of-place one."
                )
            if trace_state.depth:
                log_inplace(base, "_node", "_idx", "_requires_grad")
            new_base = _view_kernel("_view_write", base, self._geometry(), result)
            base._write(new_base._meta)
            base._node, base._idx, base._requires_grad = new_base._node, new_base._idx, True
            self._derive(base)
        else:
            value = result._meta
            if isinstance(value, Padded) and self._requires_grad and result._node is None:
                value = value.force()  # its gradient keeps the real rows' history (a leaf's: its shape)
            self._write(value)
            if result._node is not None:
                self._node, self._idx, self._requires_grad = result._node, result._idx, True
        self._vc[0] += 1
        return self

    def copy_(self, src, non_blocking: bool = False) -> "Tensor":
        """Overwrite with ``src``, broadcast to this shape and cast to this dtype (in place).

        Args:
            src: a tensor (or anything ``fjax.tensor`` accepts) broadcastable to this shape.
            non_blocking: accepted for torch's signature.

        Example:
            >>> fjax.zeros(2, 3).copy_(fjax.tensor([1, 2, 3]))
            tensor([[1., 2., 3.],
                    [1., 2., 3.]], dtype=fjax.float32)
        """
        src = _Above.creation.as_tensor(src) if not isinstance(src, Tensor) else src
        m, data = src._meta, self._meta
        if m.shape == data.shape and m.dtype == data.dtype and not src._requires_grad:
            return self._set_(src, "copy_")  # its values as they are (a constant: no history to keep)
        result = _f().broadcast_to(_f()._cast(src, dtype=data.dtype), tuple(self.shape))
        return self._set_(result, "copy_")

    @property
    def _version(self) -> int:
        """torch's ``_version``: in-place writes to this tensor or any alias sharing its counter."""
        return self._vc[0]

    # -- global tensors (fjax.distributed) ------------------------------------------------
    def to_global(self, placement=None, sbp=None, **kwargs) -> "Tensor":
        """This tensor on ``placement`` with ``sbp`` (see fjax.distributed).

        Example::

            >>> g = fjax.ones(4).to_global(fjax.placement("cpu", [0]), fjax.sbp.split(0))
            >>> g.is_global, g.sbp
            (True, (fjax.sbp.split(dim=0),))
        """
        return _Above.global_tensor.to_global(self, placement, sbp, **kwargs)

    def to_local(self, *, copy: bool = False) -> "Tensor":
        """This process's piece of a global tensor (``copy``: never sharing its storage).

        Example::

            >>> g = fjax.ones(2, placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.broadcast)
            >>> g.to_local().is_global
            False
        """
        out = _Above.global_tensor.to_local(self)
        return out.clone() if copy and out is self else out

    def local_to_global(self, placement=None, sbp=None, *, check_meta: bool = True, copy: bool = False) -> "Tensor":
        """OneFlow's ``to_global`` for a local tensor (raises on a global one).

        Example::

            >>> fjax.ones(2).local_to_global(fjax.placement("cpu", [0]), fjax.sbp.broadcast).is_global
            True
        """
        if self.is_global:
            raise RuntimeError("local_to_global: the input is a global tensor; use global_to_global")
        return self.to_global(placement, sbp, check_meta=check_meta, copy=copy)

    def global_to_global(
        self, placement=None, sbp=None, *, grad_sbp=None, check_meta: bool = False, copy: bool = False
    ) -> "Tensor":
        """OneFlow's ``to_global`` between two global layouts (raises on a local tensor).

        Example::

            >>> g = fjax.ones(4, placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.broadcast)
            >>> g.global_to_global(sbp=fjax.sbp.split(0)).sbp
            (fjax.sbp.split(dim=0),)
        """
        if not self.is_global:
            raise RuntimeError("global_to_global: the input is a local tensor; use local_to_global")
        return self.to_global(placement, sbp, grad_sbp=grad_sbp, check_meta=check_meta, copy=copy)

    @property
    def is_global(self) -> bool:
        """Whether this is a global tensor (OneFlow's: placed over devices with an SBP signature).

        Example:
            >>> fjax.ones(2).is_global
            False
        """
        return _Above.global_tensor.is_global(self)

    @property
    def is_local(self) -> bool:
        """Whether this is a local tensor (the opposite of ``is_global``).

        Example:
            >>> fjax.ones(2).is_local
            True
        """
        return not self.is_global

    @property
    def placement(self):
        """The placement of a global tensor (``None`` for a local one).

        Example:
            >>> fjax.ones(2, placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.broadcast).placement
            fjax.placement(type="cpu", ranks=[0])
        """
        return _Above.global_tensor.get_placement(self)

    @property
    def sbp(self):
        """The SBP signature of a global tensor (``None`` for a local one).

        Example:
            >>> fjax.ones(2, placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.broadcast).sbp
            (fjax.sbp.broadcast,)
        """
        return _Above.global_tensor.get_sbp(self)

    def __setitem__(self, index, value):
        arrays, template = _index(self, index, "setitem")
        if not arrays and _write_row(self, template, value):
            return
        if not arrays:  # basic indexing: torch's self[index].copy_(value), at a dynamic offset
            view = _f().getitem(self, arrays, template)
            if view._st is not None and view._st is self._st:
                if isinstance(value, Tensor) and value.ndim > view.ndim:  # torch drops leading 1s here
                    extra = value.ndim - view.ndim
                    if all(d == 1 for d in value.shape[:extra]):
                        value = value.reshape(value.shape[extra:])
                view.copy_(value)
                return
        self._set_(_f().setitem(self, arrays, template, value), "__setitem__")

    def __getitem__(self, index):
        arrays, template = _index(self, index)
        return _f().getitem(self, arrays, template)


def _write_row(t: Tensor, template: tuple, value) -> bool:
    """``t[i, j, ...] = value`` for Python ints and a value of the row's shape and dtype, where
    neither side has history: the value written into the storage at the row's offset (one recorded
    write, as ``copy_`` makes), without building the view ``t[i]`` (a read) first. A rollout
    buffer or a cache filled row by row. False where the general path must run (also under the
    profiler, whose events name the view and the ``copy_``)."""
    if (
        type(value) is not Tensor
        or trace_state.depth
        or _pstate.on
        or t._requires_grad
        or value._requires_grad
        or (t._st is not None and t._vbase is not None and t._vbase._requires_grad)
        or _dual_level() is not None  # (tangents go through _set_)
    ):
        return False
    data, v = t._meta, value._meta
    if type(data) not in _PLAIN or type(v) not in _PLAIN or v.dtype != data.dtype:
        return False
    shape, strides, offset = t._geometry()
    k = len(template)
    if v.shape != shape[k:] or any(type(i) is not int for i in template) or _views.overlaps(shape, strides):
        return False
    for d, i in enumerate(template):
        offset += (i % shape[d]) * strides[d]
    st = t._storage()
    st.array = _lazy.then(_views.storage_writer(shape[k:], strides[k:]), (st.array, v, offset), always=True)
    st.gen = next(_GENERATIONS)
    t._vc[0] += 1
    return True


_PLAIN = (_lazy._ARRAY, Pending)  # values a row write takes as they are (not meta, padded or traced)


def _stop_gradient(data):
    """Inside a JAX transform the tape is not what differentiates: tell JAX too."""
    return jax.lax.stop_gradient(data) if isinstance(data, jax.core.Tracer) else data


def _copy_array(data):
    return data if isinstance(data, (jax.core.Tracer, MetaArray)) else jnp.array(data, copy=True)


# -- the meta device --------------------------------------------------------------------------
_META_NUMPY = (
    "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
)


def _meta_write(storage, value, geom):
    """A storage after writing ``value`` at ``geom`` where either is meta: meta stays meta (no
    values to write); values written into a meta storage make it real, zeros elsewhere."""
    if type(value) is MetaArray:
        return MetaArray.like(storage)
    return _views.storage_writer(geom[0], geom[1])(jnp.zeros(storage.shape, storage.dtype), _real(value), geom[2])


def _meta_result(data, result: Tensor) -> Tensor:
    """The result an in-place op writes where a meta tensor takes part: writes into a meta tensor
    keep it meta (torch's meta kernels write nothing); a meta result has nothing to write into
    a tensor with values."""
    if type(data) is not MetaArray:
        raise NotImplementedError(_NO_DATA)
    if type(result._data) is MetaArray:
        return result
    return Tensor._wrap(MetaArray.like(result._data))


def _to_meta(t: Tensor, device: _device) -> Tensor:
    """``t.to(device)`` where ``t`` or ``device`` is meta. To meta: a meta tensor of ``t``'s shape
    and dtype (a leaf; it requires grad where ``t`` does and grad mode is on). From meta to a real
    device: torch's error, there are no values to copy."""
    data = t._data
    if device.type != "meta":
        raise NotImplementedError(_NO_DATA)
    if type(data) is MetaArray:
        return t
    from .autograd.grad_mode import is_grad_enabled

    out = Tensor._wrap(MetaArray.like(data))
    out._requires_grad = t._requires_grad and is_grad_enabled()
    return out


def _view_kernel(name: str, base: Tensor, geom: tuple, *src: Tensor) -> Tensor:
    """Call the view kernel ``name`` (``_view_read``: the storage elements at ``geom`` as a
    function of ``base``; ``_view_write``: ``base`` after writing ``src`` there, torch's
    CopySlices) with ``base``'s geometry; recorded on the tape when an input requires grad.
    The storage goes along as background only where ``base`` is not all of it."""
    base_shape, base_strides, base_offset = base._geometry()
    background = None
    if base._st is None or base._geom is None:
        base_offset = None
    else:
        background = base._st.array
    return getattr(_f(), name)(
        base,
        *src,
        background,
        base_offset,
        geom[2],
        base_shape=base_shape,
        base_strides=base_strides,
        shape=geom[0],
        strides=geom[1],
    )


class Size(tuple):
    """``Tensor.shape``: a tuple that prints like torch's ``Size``.

    Example:
        >>> fjax.ones(2, 3).shape, fjax.Size([2, 3]) == (2, 3)
        (fjax.Size([2, 3]), True)
    """

    def __repr__(self):
        return f"{_public.NAME}.Size({list(self)})"

    def numel(self) -> int:
        """The number of elements of a tensor of this shape.

        Example:
            >>> fjax.Size([2, 3]).numel()
            6
        """
        return int(np.prod(self, dtype=np.int64))


class PostAccumulateHook:
    """A ``register_post_accumulate_grad_hook`` hook, kept in the leaf's hook list (gradient
    hooks skip it); it runs with the leaf after ``.grad`` was accumulated."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __eq__(self, other):  # the handle removes it by its function
        return self is other or other is self.fn

    __hash__ = object.__hash__


class _RemovableHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _category(d: _dt.dtype) -> int:
    return 0 if d == _dt.bool else 1 if not (d.is_floating_point or d.is_complex) else 2 if d.is_floating_point else 3


def _index(t: Tensor, index, name: str = "getitem"):
    """Split an index into traced integer arrays and a static template (see ops.indexing).

    Every entry is bounds-checked against the dim it addresses (an Ellipsis stands for the dims
    the other entries leave): ints and bool masks at once, integer tensors on their values in
    eager and, inside an nn.Graph, through the deferred check (JAX would clamp them silently;
    torch raises IndexError).
    """
    simple = _simple_index(t, index, name)
    if simple is not None:
        return [], simple
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple(_as_index_tensor(i) if isinstance(i, (list, np.ndarray)) else i for i in index)
    index = _indexing.expand_ellipses(index, t.ndim, sum(_dims_used(i) for i in index))
    used = sum(_dims_used(i) for i in index)
    if used > t.ndim:
        raise IndexError(
            f"{name}: too many indices for tensor of dimension {t.ndim} (got {used} indices for shape {tuple(t.shape)})"
        )
    arrays, template = [], []
    dim = 0  # the input dimension the next index entry addresses
    for i in index:
        if _indexing.is_bool_scalar(i, Tensor):  # torch: a new dim, taken by an index tensor of length 1 or 0
            template.append(f"newtensor:{len(arrays)}")
            arrays.append(Tensor._wrap(_indexing.bool_scalar_index(i, name)))
            continue
        if isinstance(i, Tensor):
            if i.dtype == _dt.bool:
                if isinstance(i._data, jax.core.Tracer):
                    raise NotImplementedError(
                        f"{name}: boolean mask indexing inside a trace has a data-dependent shape; "
                        "use fjax.where or masked_fill"
                    )
                for k, (m, n) in enumerate(zip(i.shape, t.shape[dim:])):
                    if m != n:
                        raise IndexError(
                            f"{name}: The shape of the mask {list(i.shape)} at index {k} does not match the "
                            f"shape of the indexed tensor {list(t.shape)} at index {dim + k}"
                        )
                for nz in np.nonzero(np.asarray(i._data)):
                    template.append(f"tensor:{len(arrays)}")
                    arrays.append(Tensor._wrap(jnp.asarray(nz, jnp.int64)))
                dim += i.ndim
                continue
            if i.dtype.is_floating_point or i.dtype.is_complex:
                from .ops._checks import IndexOpError  # torch: an IndexError; OpError as before

                raise IndexOpError(f"{name}: tensors used as indices must be long, int or bool tensors, got {i.dtype}")
            _check_tensor_bound(t, dim, i, name)
            template.append(f"tensor:{len(arrays)}")
            arrays.append(i)
        elif isinstance(i, slice):
            template.append(("slice", _int_or_none(i.start), _int_or_none(i.stop), _int_or_none(i.step)))
        elif i is None:
            template.append(i)
            continue
        elif i is Ellipsis:
            template.append(i)
            dim += t.ndim - used
            continue
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            _check_bound(t, dim, int(i), name)
            template.append(int(i))
        else:
            raise IndexError(
                f"{name}: only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                f"valid indices (got {type(i).__name__})"
            )
        dim += 1
    if len(arrays) > 1:
        shapes = [tuple(a.shape) for a in arrays]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError(
                f"{name}: shape mismatch: indexing tensors could not be broadcast together with shapes "
                + ", ".join(str(list(s)) for s in shapes)
            ) from None
    return arrays, tuple(template)


def _simple_index(t: Tensor, index, name: str):
    """``_index``'s template of the commonest indices, Python ints and slices of ints or None
    (``x[i]``, ``x[:, j]``, ``x[a:b]``), each int bound-checked; None for any other index."""
    entries = index if type(index) is tuple else (index,)
    if len(entries) > t.ndim:
        return None
    template = []
    for dim, i in enumerate(entries):
        if type(i) is int:
            _check_bound(t, dim, i, name)
            template.append(i)
        elif type(i) is slice:
            start, stop, step = i.start, i.stop, i.step
            if not (
                (start is None or type(start) is int)
                and (stop is None or type(stop) is int)
                and (step is None or type(step) is int)
            ):
                return None
            template.append(("slice", start, stop, step))
        else:
            return None
    return tuple(template)


def _dims_used(i) -> int:
    """How many input dims an index entry addresses."""
    if i is None or i is Ellipsis or isinstance(i, (bool, np.bool_)):
        return 0
    if isinstance(i, Tensor) and i.dtype == _dt.bool:
        return i.ndim
    return 1


def _check_bound(t: Tensor, dim: int, i: int, name: str = "getitem") -> None:
    n = t.shape[dim]
    if not -n <= i < n:
        raise IndexError(f"{name}: index {i} is out of bounds for dimension {dim} with size {n}")


def _check_tensor_bound(t: Tensor, dim: int, i: Tensor, name: str) -> None:
    """An integer index tensor's values against ``t.shape[dim]``: at once in eager; inside an
    nn.Graph (with ``config.graph_index_checks``) deferred to the step's run (``fjax.asyncs``).
    A bucket's rows (``Padded``) are checked on the bucket array, without copying them out."""
    data = i._meta
    if type(data) is not Padded:
        data = i._data
    if isinstance(data, jax.core.Tracer) and not trace_state.graph_checks:
        return  # other traces (functional transforms) cannot report a value error
    if type(data) is MetaArray or not i.numel():
        return
    from .ops import indexing

    n = t.shape[dim]
    indexing._check_range(
        data, -n, n, IndexError, lambda v: f"{name}: index {v} is out of bounds for dimension {dim} with size {n}"
    )


def _int_or_none(v):
    return None if v is None else int(v)


def _as_index_tensor(i):
    a = np.asarray(i)
    if a.dtype == np.bool_:
        return Tensor._wrap(jnp.asarray(a))
    # (a copy: the device array may share the host array's memory, which the caller may write)
    return Tensor._wrap(_jax_compat.host_to_device(np.array(a, np.int64, order="C")))


def _torch_omits_dtype(d) -> bool:
    """torch's repr leaves out the default float dtype, its complex, int64 and bool (OneFlow,
    and fjax, always print the dtype)."""
    default = _dt.get_default_dtype()
    return d in (default, _dt.complex128 if default == _dt.float64 else _dt.complex64, _dt.int64, _dt.bool)


def _repr(t: Tensor) -> str:
    data = t._data
    if isinstance(data, jax.core.Tracer):
        body = f"<traced {t._data.aval.str_short()}>"
    elif type(data) is MetaArray:
        body = f"..., device='meta', size={tuple(data.shape)}"
    else:
        from ._tensor_str import tensor_str

        a = np.asarray(t._data)
        body = tensor_str(a, len("tensor("))
        if a.size == 0 and a.ndim != 1:
            body += f", size={tuple(a.shape)}"
    extra = "" if _public.NAME == "torch" and _torch_omits_dtype(t.dtype) else f", dtype={t.dtype}"
    if not isinstance(data, (jax.core.Tracer, MetaArray)) and t.is_global:  # as OneFlow prints one
        extra = f", placement={t.placement}, sbp={t.sbp}" + extra
    if t._node is not None:
        extra += f", grad_fn={t._node!r}"
    elif t._requires_grad:
        extra += ", requires_grad=True"
    return f"tensor({body}{extra})"
