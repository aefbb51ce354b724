"""Variable-length sequences for the recurrent layers (``torch.nn.utils.rnn``).

A ``PackedSequence`` holds the valid time steps of a batch, time-major, sorted by decreasing
length (torch's layout). The recurrent layers turn it into a padded batch plus lengths and
mask the padding inside their scan, so packed input costs one gather in and one gather out.
Lengths live on the host (as in torch): the shapes of packed data depend on them.

Example::

    >>> from fjax.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    >>> x = fjax.randn(3, 5, 4)
    >>> packed = pack_padded_sequence(x, [5, 3, 2], batch_first=True)
    >>> out, h = fjax.nn.GRU(4, 8, batch_first=True)(packed)
    >>> padded, lengths = pad_packed_sequence(out, batch_first=True)
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import jax
import numpy as np

from ...creation import full
from ...creation import tensor as _tensor
from ...dispatch import functions as _F
from ...errors import OpError
from ...tensor import Tensor


class PackedSequence(NamedTuple):
    """The valid steps of a batch of sequences: ``data`` ``(sum(lengths), *)``, time-major.

    Attributes:
        data: the packed steps; rows ``[offset_t, offset_t + batch_sizes[t])`` are time step t.
        batch_sizes: ``(T,)`` int64, how many sequences are longer than t.
        sorted_indices: the batch permutation that sorted the lengths, or None.
        unsorted_indices: its inverse, or None.
    """

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> "PackedSequence":
        """A PackedSequence whose ``data`` is ``data.to(*args, **kwargs)``."""
        return self._replace(data=self.data.to(*args, **kwargs))

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def _host_tensor(values: np.ndarray) -> Tensor:
    """An int64 Tensor that stays concrete inside traces (nn.Graph), so its values stay readable."""
    with jax.ensure_compile_time_eval():
        return Tensor._wrap(jax.numpy.asarray(values, jax.numpy.int64))


def _host_ints(name: str, values) -> np.ndarray:
    if isinstance(values, Tensor):
        if isinstance(values._data, jax.core.Tracer):
            raise OpError(
                f"{name}: lengths and batch sizes must be known on the host (a list, an array or a tensor "
                "made outside the trace), got a traced tensor"
            )
        values = np.asarray(values._data)
    out = np.asarray(values)
    if out.ndim != 1 or not (out.dtype.kind in "iu" or out.size == 0):
        raise OpError(f"{name}: expected a 1-d list or tensor of integer lengths, got {out.dtype} of shape {out.shape}")
    return out.astype(np.int64)


def _valid(batch_sizes: np.ndarray, batch: int) -> np.ndarray:
    """``(T, B)`` bool: step t of sequence b is valid (sequences sorted by length)."""
    return np.arange(batch)[None, :] < batch_sizes[:, None]


def packed_batch_sizes(packed: PackedSequence) -> np.ndarray:
    """``batch_sizes`` as host integers."""
    return _host_ints("PackedSequence", packed.batch_sizes)


def packed_to_padded(data: Tensor, batch_sizes: np.ndarray, padding_value: float = 0.0, total_length: int = 0):
    """Packed rows -> ``(T, B, *)`` time-major padded batch (in the packed, sorted order)."""
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    valid = _valid(batch_sizes, batch).ravel()
    rows = np.where(valid, np.cumsum(valid) - 1, data.shape[0])  # the extra row holds the padding
    steps = max(len(batch_sizes), total_length)
    rows = np.concatenate([rows, np.full((steps - len(batch_sizes)) * batch, data.shape[0])])
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype)
    padded = _F.index_select(_F.cat([data, pad], 0), 0, _tensor(rows))
    return padded.reshape(steps, batch, *data.shape[1:])


def padded_to_packed(padded: Tensor, batch_sizes: np.ndarray) -> Tensor:
    """``(T, B, *)`` time-major padded batch (sorted order) -> packed rows."""
    steps, batch = padded.shape[:2]
    rows = np.nonzero(_valid(batch_sizes, batch).ravel())[0]
    return _F.index_select(padded.reshape(steps * batch, *padded.shape[2:]), 0, _tensor(rows))


def packed_lengths(batch_sizes: np.ndarray) -> np.ndarray:
    """Each sequence's length (sorted order) from ``batch_sizes``."""
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    return _valid(batch_sizes, batch).sum(axis=0).astype(np.int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False, enforce_sorted: bool = True):
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` if ``batch_first``) of given lengths.

    Args:
        lengths: each sequence's length (list or 1-d int tensor), all > 0; decreasing
            unless ``enforce_sorted=False``, in which case the batch is sorted here and
            ``sorted_indices`` / ``unsorted_indices`` record the permutation.

    Returns:
        PackedSequence
    """
    name = "pack_padded_sequence"
    lengths = _host_ints(name, lengths)
    batch_dim = 0 if batch_first else 1
    if input.ndim < 2 or lengths.shape[0] != input.shape[batch_dim]:
        raise OpError(
            f"{name}: expected {lengths.shape[0]} sequences along dim {batch_dim} of the input, "
            f"got input of shape {tuple(input.shape)}"
        )
    if lengths.size and lengths.min() <= 0:
        raise OpError(
            f"{name}: Length of all samples has to be greater than 0, but found an element in 'lengths' "
            f"that is <= 0: {lengths.tolist()}"
        )
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise OpError(
                f"{name}: `lengths` array must be sorted in decreasing order when `enforce_sorted` is True, "
                f"got {lengths.tolist()}; pass enforce_sorted=False to sort here"
            )
        order = np.arange(lengths.size)
        sorted_indices = unsorted_indices = None
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices, unsorted_indices = _host_tensor(order), _host_tensor(np.argsort(order))
    steps = input.shape[batch_dim ^ 1]
    if lengths.size and lengths.max() > steps:
        raise OpError(f"{name}: a length of {lengths.max()} exceeds the {steps} steps of the input")
    batch_sizes = (lengths[None, :] > np.arange(lengths.max() if lengths.size else 0)[:, None]).sum(axis=1)
    t, b = np.nonzero(_valid(batch_sizes, lengths.size))
    b = order[b]
    rows = b * steps + t if batch_first else t * lengths.size + b
    flat = input.reshape(steps * lengths.size, *input.shape[2:])
    data = _F.index_select(flat, 0, _tensor(rows))
    return PackedSequence(data, _host_tensor(batch_sizes), sorted_indices, unsorted_indices)


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
):
    """Inverse of :func:`pack_padded_sequence`: ``(padded, lengths)`` in the original batch order.

    ``total_length`` pads the time dimension to that length (at least the longest sequence).
    """
    batch_sizes = packed_batch_sizes(sequence)
    if total_length is not None and total_length < len(batch_sizes):
        raise OpError(
            f"pad_packed_sequence: Expected total_length to be at least the length of the longest sequence "
            f"({len(batch_sizes)}), but got total_length={total_length}"
        )
    padded = packed_to_padded(sequence.data, batch_sizes, padding_value, total_length or 0)
    lengths = packed_lengths(batch_sizes)
    if sequence.unsorted_indices is not None:
        padded = _F.index_select(padded, 1, sequence.unsorted_indices)
        lengths = lengths[_host_ints("pad_packed_sequence", sequence.unsorted_indices)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _host_tensor(lengths)


def pad_sequence(
    sequences: Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"
) -> Tensor:
    """Stack tensors ``(L_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` if ``batch_first``), padded to the longest."""
    name = "pad_sequence"
    if padding_side not in ("left", "right"):
        raise OpError(f"{name}: padding_side must be 'left' or 'right', got {padding_side!r}")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    if not sequences:
        raise OpError(f"{name}: received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        if s.ndim == 0 or tuple(s.shape[1:]) != trailing:
            raise OpError(f"{name}: expected sequences of shape (L, *{trailing}), got {tuple(s.shape)}")
    lengths = np.array([s.shape[0] for s in sequences], np.int64)
    steps = int(lengths.max())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    t = np.arange(steps)[:, None] - (steps - lengths[None, :] if padding_side == "left" else 0)
    valid = (t >= 0) & (t < lengths[None, :])
    rows = np.where(valid, starts[None, :] + t, lengths.sum())  # (T, B); the extra row is padding
    if batch_first:
        rows = rows.T
    pad = full((1, *trailing), padding_value, dtype=sequences[0].dtype)
    out = _F.index_select(_F.cat([*sequences, pad], 0), 0, _tensor(rows.ravel()))
    return out.reshape(*rows.shape, *trailing)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors ``(L_i, *)``: ``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """Inverse of :func:`pad_sequence`: the list of ``(L_i, *)`` tensors."""
    lengths = _host_ints("unpad_sequence", lengths)
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, : int(n)] for i, n in enumerate(lengths)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Inverse of :func:`pack_sequence`: the list of ``(L_i, *)`` tensors."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of ``permutation`` (None stays None): ``out[permutation[i]] = i``.

    Converts between a PackedSequence's ``sorted_indices`` and ``unsorted_indices``.

    Args:
        permutation: a 1-d tensor of indices, or None.

    Example:
        >>> from fjax.nn.utils.rnn import invert_permutation
        >>> invert_permutation(fjax.tensor([2, 0, 1]))
        tensor([1, 2, 0], dtype=fjax.int64)
    """
    if permutation is None:
        return None
    if permutation.ndim != 1:
        raise OpError(f"invert_permutation: expected a 1-d permutation, got shape {tuple(permutation.shape)}")
    from ...creation import arange, zeros_like

    return zeros_like(permutation).scatter_(0, permutation, arange(permutation.numel(), dtype=permutation.dtype))
