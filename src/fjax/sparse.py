"""``fjax.sparse``: torch's sparse COO tensors, stored dense.

A :class:`SparseCOOTensor` keeps torch's COO description (``indices`` ``(sparse_dim, nnz)``,
``values`` ``(nnz, *dense_shape)``, coalesced or not) for ``_indices()``, ``_values()``,
``coalesce()`` and printing, and holds its values as a dense array of its full size: memory is
that of the dense tensor, and every op computes on the dense values (an op's result is an
ordinary dense Tensor, where torch would sometimes give a sparse one). Gradients flow to
``values`` through that dense array; a sparse leaf's ``.grad`` is dense.
"""

from __future__ import annotations

import numpy as np

from .creation import tensor as _tensor
from .creation import zeros
from .dispatch import functions as _f
from .dtypes import int64, sparse_coo
from .tensor import Tensor

__all__ = ["SparseCOOTensor", "addmm", "mm", "sparse_coo", "sparse_coo_tensor", "spmm"]


class SparseCOOTensor(Tensor):
    """A sparse COO tensor (``layout=fjax.sparse.sparse_coo``) whose values are stored dense; made
    by :func:`sparse_coo_tensor`.

    Example::

        >>> s = fjax.sparse.sparse_coo_tensor([[0, 1, 1], [2, 0, 0]], [3., 4., 5.], (2, 3))
        >>> s.is_sparse, s._nnz(), s.is_coalesced()
        (True, 3, False)
        >>> s.to_dense()
        tensor([[0., 0., 3.],
                [9., 0., 0.]], dtype=fjax.float32)
        >>> s.coalesce().values()
        tensor([3., 9.], dtype=fjax.float32)
    """

    is_sparse = True
    layout = sparse_coo

    @classmethod
    def _make(cls, dense: Tensor, indices: Tensor, values: Tensor, coalesced: bool) -> "SparseCOOTensor":
        out = object.__new__(cls)
        Tensor._init(out, dense._data, dense._node, dense._idx)
        out._coo = (indices, values, coalesced)
        return out

    def _indices(self) -> Tensor:
        """The ``(sparse_dim, nnz)`` int64 indices as given (duplicates kept until ``coalesce()``)."""
        return self._coo[0]

    def _values(self) -> Tensor:
        """The ``(nnz, *dense_shape)`` values as given."""
        return self._coo[1]

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor (raises on an uncoalesced one, as torch)."""
        if not self._coo[2]:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._coo[0]

    def values(self) -> Tensor:
        """The values of a coalesced tensor (raises on an uncoalesced one, as torch)."""
        if not self._coo[2]:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._coo[1]

    def is_coalesced(self) -> bool:
        return self._coo[2]

    def _nnz(self) -> int:
        return int(self._coo[0].shape[1])

    def sparse_dim(self) -> int:
        return int(self._coo[0].shape[0])

    def dense_dim(self) -> int:
        return self.ndim - self.sparse_dim()

    def detach(self) -> "SparseCOOTensor":
        """The same sparse tensor without history."""
        indices, values, coalesced = self._coo
        return SparseCOOTensor._make(Tensor.detach(self), indices, values.detach(), coalesced)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense tensor (differentiable, as torch's ``to_dense``)."""
        out = _f.clone(self)
        return out if dtype is None else out.to(dtype)

    def coalesce(self) -> "SparseCOOTensor":
        """Duplicate indices summed into one entry, indices sorted (row-major), as torch's ``coalesce()``."""
        if self._coo[2]:
            return self
        sizes = tuple(self.shape[: self.sparse_dim()])
        idx = np.asarray(self._coo[0]._data)
        if idx.shape[1]:
            flat = np.unique(np.ravel_multi_index(tuple(idx), sizes))
            idx = np.stack(np.unravel_index(flat, sizes)).astype(np.int64).reshape(len(sizes), -1)
        indices = _tensor(idx, dtype=int64)
        values = self[tuple(indices)] if idx.shape[1] else self._coo[1]
        return SparseCOOTensor._make(self, indices, values, True)

    def __repr__(self) -> str:
        i, v = (repr(t).replace("\n", "\n" + " " * 15) for t in self._coo[:2])
        return (
            f"tensor(indices={i},\n       values={v},\n       size={tuple(self.shape)}, nnz={self._nnz()}, "
            f"layout={self.layout})"
        )

    __str__ = __repr__


def _check_bounds(indices: np.ndarray, size: tuple) -> None:
    for d in range(indices.shape[0]):
        if indices.shape[1] and indices[d].min() < 0:
            raise RuntimeError(f"sparse_coo_tensor: found negative index {indices[d].min()} for dim {d}")
        if indices.shape[1] and indices[d].max() >= size[d]:
            raise RuntimeError(
                f"sparse_coo_tensor: size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                f"index {indices[d].max()}"
            )


def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> SparseCOOTensor:
    """A sparse COO tensor with ``values[k]`` at index ``indices[:, k]`` (duplicates add up), stored dense.

    Args:
        indices: ``(sparse_dim, nnz)`` integer indices.
        values: ``(nnz, *dense_shape)`` values.
        size: the tensor's size; inferred as ``indices.max(1) + 1`` followed by ``values.shape[1:]``.
        requires_grad: make the result a leaf that requires grad (its ``.grad`` is dense).
        is_coalesced: trust that ``indices`` are unique and sorted, as torch does.

    Indices are always checked against ``size`` (torch checks only with ``check_invariants``),
    since the values are written into a dense array.

    Example::

        >>> s = fjax.sparse.sparse_coo_tensor(fjax.tensor([[0, 1], [2, 0]]), fjax.tensor([3., 4.]), (2, 3))
        >>> s
        tensor(indices=tensor([[0, 1],
                               [2, 0]], dtype=fjax.int64),
               values=tensor([3., 4.], dtype=fjax.float32),
               size=(2, 3), nnz=2, layout=fjax.sparse_coo)
        >>> fjax.sparse.mm(s, fjax.ones(3, 1))
        tensor([[3.],
                [4.]], dtype=fjax.float32)
    """
    indices = indices if isinstance(indices, Tensor) else _tensor(indices)
    values = values if isinstance(values, Tensor) else _tensor(values, dtype=dtype)
    if dtype is not None:
        values = values.to(dtype)
    if indices.ndim != 2:
        raise RuntimeError(
            f"sparse_coo_tensor: indices must be a 2-D (sparse_dim, nnz) tensor, got shape {tuple(indices.shape)}"
        )
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(
            f"sparse_coo_tensor: indices and values must have same nnz, but got nnz from indices: {indices.shape[1]}, "
            f"nnz from values: {values.shape[0]}"
        )
    indices = indices.detach().to(int64)
    idx = np.asarray(indices._data)
    sparse_dim, dense_shape = idx.shape[0], tuple(values.shape[1:])
    if size is None:
        size = (tuple(int(m) + 1 for m in idx.max(axis=1)) if idx.shape[1] else (0,) * sparse_dim) + dense_shape
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + len(dense_shape) or size[sparse_dim:] != dense_shape:
        raise RuntimeError(
            f"sparse_coo_tensor: size {size} must be the {sparse_dim} sparse sizes followed by the values' dense "
            f"shape {dense_shape}"
        )
    _check_bounds(idx, size)
    source = values.detach() if requires_grad else values
    dense = zeros(size, dtype=values.dtype, device=device)
    if idx.shape[1]:
        dense = _f.index_put(dense, tuple(indices), source, accumulate=True)
    out = SparseCOOTensor._make(dense, indices, values, bool(is_coalesced))
    if requires_grad:
        out.requires_grad = True
    return out


def _dense(x) -> Tensor:
    return x.to_dense() if isinstance(x, SparseCOOTensor) else x


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    """``mat1 @ mat2`` with a sparse ``mat1``: dense when ``mat2`` is dense, sparse (COO) when both are.

    Example::

        >>> s = fjax.sparse.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
        >>> fjax.sparse.mm(s, fjax.tensor([[1.], [10.]]))
        tensor([[20.],
                [ 3.]], dtype=fjax.float32)
    """
    if reduce != "sum":
        raise NotImplementedError(f"sparse.mm: reduce={reduce!r} is not supported; only 'sum'")
    out = _f.mm(_dense(mat1), _dense(mat2))
    if not (isinstance(mat1, SparseCOOTensor) and isinstance(mat2, SparseCOOTensor)):
        return out
    found = np.argwhere(np.asarray(out._data) != 0).T.astype(np.int64)
    indices = _tensor(found, dtype=int64)
    return SparseCOOTensor._make(out, indices, out[tuple(indices)], True)


def spmm(input: Tensor, mat2: Tensor, out_dtype=None) -> Tensor:
    """``input @ mat2`` for a sparse ``input`` and dense ``mat2`` (torch.spmm): a dense result
    (cast to ``out_dtype`` if given).

    Example::

        >>> s = fjax.sparse.sparse_coo_tensor([[0], [1]], [5.], (2, 2))
        >>> fjax.sparse.spmm(s, fjax.eye(2))
        tensor([[0., 5.],
                [0., 0.]], dtype=fjax.float32)
    """
    out = _f.mm(_dense(input), _dense(mat2))
    return out if out_dtype is None else out.to(out_dtype)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0, alpha: float = 1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1``: a dense result.

    Example::

        >>> s = fjax.sparse.sparse_coo_tensor([[0, 1], [0, 1]], [1., 2.], (2, 2))
        >>> fjax.sparse.addmm(fjax.ones(2, 2), s, fjax.ones(2, 2), alpha=2.)
        tensor([[3., 3.],
                [5., 5.]], dtype=fjax.float32)
    """
    return _f.addmm(_dense(mat), _dense(mat1), _dense(mat2), beta=beta, alpha=alpha)


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None, dense_dim=None):
    """This dense tensor as a coalesced sparse COO tensor whose first ``sparse_dim`` dims (default all)
    are sparse: one entry per index with a nonzero value (differentiable, as torch's ``to_sparse``).

    Example::

        >>> fjax.tensor([[0.0, 2.0], [0.0, 0.0]]).to_sparse().indices()
        tensor([[0],
                [1]], dtype=fjax.int64)
    """
    if layout not in (None, sparse_coo) or blocksize is not None or dense_dim is not None:
        raise NotImplementedError("Tensor.to_sparse: only the COO layout (no layout/blocksize/dense_dim) is supported")
    d = self.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= d <= self.ndim:
        raise ValueError(f"Tensor.to_sparse: sparse_dim must be in [0, {self.ndim}], got {sparse_dim}")
    data = np.asarray(self.detach()._data)
    nonzero = data.reshape(data.shape[:d] + (-1,)).any(axis=-1) if d < data.ndim else data != 0
    indices = _tensor(np.stack(np.nonzero(nonzero)).astype(np.int64).reshape(d, -1), dtype=int64)
    values = self[tuple(indices)] if d else self.unsqueeze(0)
    return SparseCOOTensor._make(_f.clone(self), indices, values, True)


def to_sparse_coo(self: Tensor) -> SparseCOOTensor:
    """This tensor as a coalesced sparse COO tensor (``to_sparse()``; a sparse one comes back as it is).

    Example:
        >>> fjax.tensor([0.0, 2.0]).to_sparse_coo().values()
        tensor([2.], dtype=fjax.float32)
    """
    return self if isinstance(self, SparseCOOTensor) else to_sparse(self)


def sparse_mask(self: Tensor, mask: SparseCOOTensor) -> SparseCOOTensor:
    """A sparse COO tensor with ``self``'s values at the indices of the sparse tensor ``mask`` (its
    values are ignored; an uncoalesced mask's duplicate indices repeat the value, as in torch).
    Differentiable in ``self``.

    Args:
        mask: a sparse COO tensor of ``self``'s shape.

    Example:
        >>> mask = fjax.sparse.sparse_coo_tensor([[0, 1]], [1.0, 1.0], (3,))
        >>> fjax.tensor([5.0, 6.0, 7.0]).sparse_mask(mask).to_dense()
        tensor([5., 6., 0.], dtype=fjax.float32)
    """
    if not isinstance(mask, SparseCOOTensor):
        raise RuntimeError(f"sparse_mask: expected mask to be a sparse COO tensor, got layout {mask.layout}")
    if tuple(mask.shape) != tuple(self.shape):
        raise RuntimeError(
            f"sparse_mask(): operands have incompatible sizes; self has size {tuple(self.shape)} but mask has size "
            f"{tuple(mask.shape)}"
        )
    indices = mask._indices()
    values = self[tuple(indices)] if indices.shape[1] else self.new_zeros((0,) + tuple(self.shape[indices.shape[0] :]))
    dense = zeros(tuple(self.shape), dtype=self.dtype)
    if indices.shape[1]:
        dense = _f.index_put(dense, tuple(indices), values, accumulate=True)
    return SparseCOOTensor._make(dense, indices, values, mask.is_coalesced())


def _strided_only(op: str, layout: str):
    def method(self):
        raise RuntimeError(f"{op} expected {layout} layout but got Strided")

    method.__name__ = method.__qualname__ = op
    method.__doc__ = f"""The {op.replace("_", " ")} of a sparse COO tensor; a dense one raises, as in torch.

    Example:
        >>> fjax.sparse.sparse_coo_tensor([[1]], [2.0], (3,)).coalesce().{op}()
        {_EXAMPLES[op]}
    """
    return method


_EXAMPLES = {
    "values": "tensor([2.], dtype=fjax.float32)",
    "indices": "tensor([[1]], dtype=fjax.int64)",
    "coalesce": (
        "tensor(indices=tensor([[1]], dtype=fjax.int64),\n"
        "               values=tensor([2.], dtype=fjax.float32),\n"
        "               size=(3,), nnz=1, layout=fjax.sparse_coo)"
    ),
    "is_coalesced": "True",
}


def _sparse_dim(self) -> int:
    """The number of sparse dims: 0 for a dense tensor.

    Example:
        >>> fjax.ones(2, 3).sparse_dim(), fjax.ones(2, 3).to_sparse(1).sparse_dim()
        (0, 1)
    """
    return 0


def _dense_dim(self) -> int:
    """The number of dense dims: all of them for a dense tensor.

    Example:
        >>> fjax.ones(2, 3).dense_dim(), fjax.ones(2, 3).to_sparse(1).dense_dim()
        (2, 1)
    """
    return self.ndim


Tensor.to_sparse = to_sparse
Tensor.to_sparse_coo, Tensor.sparse_mask = to_sparse_coo, sparse_mask
Tensor.sparse_dim, Tensor.dense_dim = _sparse_dim, _dense_dim
Tensor.values = _strided_only("values", "sparse tensor")
for _op in ("indices", "coalesce", "is_coalesced"):
    setattr(Tensor, _op, _strided_only(_op, "sparse coordinate tensor"))
