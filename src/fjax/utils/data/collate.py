"""Collation: merge samples into a batch (torch's ``default_collate`` / ``default_convert``).

Collation runs in two stages so process workers never touch the device: ``host_collate``
stacks numpy arrays and Python numbers on the host (in the worker), ``to_device`` turns the
numpy leaves into Tensors with one ``jax.device_put`` (on a loader thread of the parent).
"""

from __future__ import annotations

import collections.abc
import copy
from typing import Any

import jax
import numpy as np

from ...dtypes import to_dtype
from ...errors import OpError
from ...tensor import Tensor
from .dataset import _Gathered

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_string_array(a: np.ndarray) -> bool:
    return a.dtype.kind in "SaUO"


def _stack_tensors(batch: list[Tensor]) -> Tensor:
    shapes = {tuple(t.shape) for t in batch}
    if len(shapes) > 1:
        raise OpError(f"default_collate: stack expects each tensor to be equal size, got shapes {sorted(shapes)}")
    from ...dispatch import functions

    return functions.stack(list(batch), 0)


def host_collate(batch) -> Any:
    """Stack a list of samples on the host: numpy arrays and numbers become numpy batches,
    Tensors are stacked, dicts/tuples/lists are collated field by field (torch's rules)."""
    if isinstance(batch, _Gathered):
        return list(batch.columns)
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack_tensors(batch)
    if isinstance(elem, np.ndarray):
        if _is_string_array(elem):
            raise TypeError(_ERR.format(elem.dtype))
        shapes = {b.shape for b in batch}
        if len(shapes) > 1:
            raise OpError(f"default_collate: stack expects each array to be equal size, got shapes {sorted(shapes)}")
        return np.stack(batch)
    if isinstance(elem, (np.bool_, np.number)):
        return np.asarray(batch)
    if isinstance(elem, float):
        return np.asarray(batch, np.float64)
    if isinstance(elem, bool):
        return np.asarray(batch, np.bool_)
    if isinstance(elem, int):
        return np.asarray(batch, np.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: host_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(collated)
            return clone
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(host_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of equal size")
        columns = [host_collate(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        try:
            return type(elem)(columns)
        except TypeError:
            return columns
    raise TypeError(_ERR.format(type(elem)))


def _device_leaf(x) -> bool:
    if isinstance(x, np.ndarray):
        return not _is_string_array(x)
    return isinstance(x, (np.bool_, np.number))


def _collect(data, out: list) -> None:
    if _device_leaf(data):
        out.append(data)
    elif isinstance(data, collections.abc.Mapping):
        for key in data:
            _collect(data[key], out)
    elif isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        for d in data:
            _collect(d, out)


def _rebuild(data, it):
    if _device_leaf(data):
        return next(it)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: _rebuild(data[key], it) for key in data}
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(converted)
            return clone
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(_rebuild(d, it) for d in data))
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return [_rebuild(d, it) for d in data]  # tuples become lists, as in torch
    return data


def to_device(data) -> Any:
    """Turn every numpy array and numpy scalar in ``data`` into a Tensor (one ``jax.device_put``)."""
    leaves: list = []
    _collect(data, leaves)
    for leaf in leaves:
        to_dtype(leaf.dtype)  # an unsupported dtype fails here, naming it
    arrays = jax.device_put(leaves)
    return _rebuild(data, (Tensor._wrap(a) for a in arrays))


def default_convert(data) -> Any:
    """Convert numpy arrays (also inside dicts, tuples, lists) to Tensors; leave the rest as is.

    The collate function when automatic batching is off (``batch_size=None``).
    """
    return to_device(data)


def default_collate(batch: list) -> Any:
    """Merge a list of samples into a batch, as torch's ``default_collate``.

    Tensors and numpy arrays are stacked along a new first dimension, Python floats become a
    float64 tensor, ints int64, bools bool; strings stay a list; dicts, namedtuples, tuples and
    lists are collated field by field (a tuple sample gives a list of batches).

    Example::

        >>> default_collate([(np.zeros(2), 1), (np.ones(2), 0)])
        [tensor([[0., 0.], [1., 1.]], dtype=fjax.float64), tensor([1, 0], dtype=fjax.int64)]
    """
    return to_device(host_collate(batch))
