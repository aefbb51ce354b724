"""``fjax.save`` / ``fjax.load``: safetensors checkpoints that never run code from the file, and
torch's own checkpoint format.

A checkpoint is one safetensors file: every tensor is a named entry (a flat state_dict's keys
are used as the names, so other safetensors readers see the usual layout) and the
surrounding structure (dicts with any scalar keys, lists, tuples, Python scalars, strings,
None) is JSON in the header's metadata. Writes go to a temporary file in the same directory
that is fsynced and then renamed over the target, so a crash never leaves a partial file.

A path named like a torch checkpoint (``.pt``, ``.pth``, ``.pth.tar``, ``.ckpt``, ``.bin``) gets
torch's format instead (what ``torch.save`` writes: a zip of a pickle and the raw storages),
which ``torch.load`` reads and which can hold any picklable object (an argparse Namespace ...).

``fjax.load`` reads all of these, without importing torch. A torch zip file's ``data.pkl`` is
read, by default (``weights_only=True``), by an unpickler that allows only torch's tensor-rebuild
functions, storage types, dtypes, ``OrderedDict`` and a few builtins, plus the globals the user
declared safe (``add_safe_globals``, ``safe_globals``): torch's ``weights_only`` semantics.
``weights_only=False`` unpickles anything (it runs code from the file: only for trusted files),
torch's tensors, Parameters, dtypes, devices and sizes becoming fjax's.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import io
import json
import os
import pickle
import struct
import zipfile
import zlib
from collections import Counter, OrderedDict
from typing import Any, BinaryIO, Callable

import jax
import jax.numpy as jnp
import numpy as np
import safetensors

from . import _artifact, _atomic
from .device import MetaArray
from .device import device as _device
from .dtypes import dtype as _DType
from .dtypes import to_dtype as _to_dtype
from .errors import CorruptArtifactError, OpError
from .tensor import Tensor

_FORMAT = "fjax.checkpoint.v1"
_SAFETENSORS_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "BF16": jnp.bfloat16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
    "C64": np.complex64,
}

_SAVED_DTYPES = {np.dtype(d) for d in _SAFETENSORS_DTYPES.values()}


# -- save -------------------------------------------------------------------------------------
def save(obj: Any, f: str | os.PathLike | BinaryIO, pickle_module=None, pickle_protocol: int = 2) -> None:
    """Save tensors inside nested dicts/lists/tuples of Python scalars and strings.

    Args:
        obj: e.g. ``model.state_dict()``, ``optimizer.state_dict()`` or a dict of them.
        f: a path (written atomically) or a writable binary file object.
        pickle_module: accepted for torch's signature; fjax's own pickler writes torch files.
        pickle_protocol: the pickle protocol of a torch-format file (torch's default, 2).

    The file is a safetensors file; the nesting and the non-tensor values are kept in its
    metadata, and ``fjax.load`` rebuilds the object. A path named like a torch checkpoint
    (``.pt``, ``.pth``, ``.pth.tar``, ``.ckpt``, ``.bin``) gets torch's format instead, which
    ``torch.load`` reads and which holds any picklable object (``fjax.load`` then needs
    ``weights_only=False`` or ``add_safe_globals`` for objects other than tensors and containers).

    Example::

        >>> import io
        >>> model = nn.Linear(2, 1)
        >>> buf = io.BytesIO()  # or a path such as "ckpt.safetensors"
        >>> fjax.save({"model": model.state_dict(), "epoch": 3}, buf)
        >>> _ = buf.seek(0)
        >>> sorted(fjax.load(buf)["model"])
        ['bias', 'weight']
    """
    if hasattr(f, "write"):
        if str(getattr(f, "name", "")).lower().endswith(_TORCH_SUFFIXES):  # open("model.pt", "wb")
            f.write(_torch_zip(obj, pickle_protocol))
            return
    elif os.fspath(f).lower().endswith(_TORCH_SUFFIXES):
        payload = _torch_zip(obj, pickle_protocol)
        _atomic.write_file(os.fspath(f), lambda tmp: _write_bytes(tmp, payload))
        return
    arrays: dict[str, np.ndarray] = {}
    structure = _encode(obj, (), arrays)
    metadata = {"format": _FORMAT, "structure": json.dumps(structure, allow_nan=True)}
    metadata["crc32"] = json.dumps(_checksums(arrays, metadata["structure"]))
    if hasattr(f, "write"):
        f.write(safetensors.serialize(_specs(arrays), metadata=metadata))
        return
    _atomic.write_file(os.fspath(f), lambda tmp: _write_file(tmp, arrays, metadata))


_TORCH_SUFFIXES = (".pt", ".pth", ".tar", ".ckpt", ".bin")


def _write_bytes(path: str, payload: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(payload)


def _host(x: Tensor | jax.Array, where: str) -> np.ndarray:
    data = x._data if isinstance(x, Tensor) else x
    if isinstance(data, jax.core.Tracer):
        raise OpError(f"fjax.save: {where} is a traced tensor (inside nn.Graph or a transform); save concrete values")
    return np.asarray(data)


def _encode(obj, path: tuple, arrays: dict):
    """JSON for ``obj`` (found at ``path`` inside the saved object); arrays go to ``arrays`` under dotted names."""
    where = "obj" + "".join(f"[{k!r}]" for k in path)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (Tensor, jax.Array, np.ndarray)):
        from .nn.parameter import Parameter

        arr = _host(obj, where)
        name = ".".join(map(str, path)) or "tensor"
        while name in arrays:  # keys containing dots can collide with nested names
            name += "#"
        tag = {"$t": name}
        if isinstance(obj, Tensor):
            tag.update(rg=bool(obj.requires_grad), param=isinstance(obj, Parameter))
        else:
            tag["kind"] = "numpy" if isinstance(obj, np.ndarray) else "jax"
        if arr.dtype == np.complex128:  # safetensors has no C128: store (re, im) pairs
            arr = np.stack([arr.real, arr.imag], axis=-1)
            tag["dtype"] = "complex128"
        elif arr.dtype not in _SAVED_DTYPES:
            raise OpError(f"fjax.save: {where} has dtype {arr.dtype}, which fjax checkpoints do not store")
        arrays[name] = arr
        return tag
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, _DType):
        return {"$dtype": obj.name}
    if isinstance(obj, dict):
        pairs = []
        for k, v in obj.items():
            if not (k is None or isinstance(k, (bool, int, float, str, tuple))):
                raise OpError(
                    f"fjax.save: {where} has a key of type {type(k).__name__}; "
                    "keys must be str, int, float, bool, None or tuple"
                )
            key_arrays: dict = {}
            key = _encode(k, (), key_arrays) if isinstance(k, tuple) else k
            if key_arrays:
                raise OpError(f"fjax.save: {where} has a tuple key holding tensors; keys must hold Python scalars")
            pairs.append([key, _encode(v, (*path, k), arrays)])
        return {"$d": pairs}
    if isinstance(obj, tuple):
        return {"$tu": [_encode(v, (*path, i), arrays) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, (*path, i), arrays) for i, v in enumerate(obj)]
    raise OpError(
        f"fjax.save: cannot save {where} of type {type(obj).__module__}.{type(obj).__name__}; supported are "
        "Tensors, numpy/jax arrays, dicts, lists, tuples, str, int, float, bool, None and fjax dtypes"
    )


def _crc32(data) -> int:
    """CRC-32 of an array's bytes (C order) or of bytes."""
    if isinstance(data, np.ndarray):
        data = np.require(data, requirements="C").reshape(-1).view(np.uint8)
    return zlib.crc32(data)


def _checksums(arrays: dict, structure: str) -> dict:
    """What ``fjax.load`` checks an fjax checkpoint against: the CRC-32 of every tensor's bytes and of the
    structure record (safetensors itself has no checksum: a flipped byte would load as a wrong value)."""
    return {"structure": _crc32(structure.encode()), "tensors": {k: _crc32(a) for k, a in arrays.items()}}


def _specs(arrays: dict) -> dict:
    """safetensors' TensorSpecs; ``arrays`` must stay alive until serialization is done."""
    for k, a in arrays.items():
        arrays[k] = np.require(a, requirements="C")  # ascontiguousarray would make 0-d arrays 1-d
    return {
        k: safetensors.TensorSpec(dtype=a.dtype.name, shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
        for k, a in arrays.items()
    }


def _write_file(path: str, arrays: dict, metadata: dict) -> None:
    """Write the safetensors file (``_atomic.write_file`` fsyncs and renames it)."""
    safetensors.serialize_file(_specs(arrays), path, metadata=metadata)


# -- load -------------------------------------------------------------------------------------
def load(
    f: str | os.PathLike | BinaryIO,
    map_location=None,
    pickle_module=None,
    *,
    weights_only: bool = True,
    mmap: bool | None = None,
    **pickle_load_args,
):
    """Load what ``fjax.save`` wrote, a safetensors file, or a ``torch.save`` checkpoint.

    Args:
        f: a path or a readable binary file object.
        map_location: a device (``"cpu"``, ``"cuda:0"``, ``"meta"``, ``fjax.device``) to put
            tensors on.
        pickle_module: for ``weights_only=False``, the module whose ``Unpickler`` reads a torch
            file (default ``pickle``); torch refuses it with ``weights_only=True``, as fjax does.
        weights_only: True (default): a torch file may hold tensors, containers, Python scalars,
            dtypes, devices, sizes and the globals declared safe with ``add_safe_globals``;
            nothing else is imported or called. False: any pickled object is rebuilt (this runs
            code from the file; load only files you trust), torch's tensors, Parameters,
            dtypes, devices and ``torch.Size`` becoming fjax's.
        mmap: accepted for torch's signature; values are copied to device arrays either way.
        pickle_load_args: passed to the unpickler (e.g. ``encoding="latin1"``).

    Returns:
        The saved object, with fjax Tensors (``nn.Parameter`` where a Parameter was saved).

    Example::

        >>> import io
        >>> buf = io.BytesIO()
        >>> fjax.save({"w": fjax.tensor([1.0, 2.0]), "step": 3}, buf)
        >>> _ = buf.seek(0)
        >>> fjax.load(buf)
        {'w': tensor([1., 2.], dtype=fjax.float32), 'step': 3}
    """
    if weights_only is None:
        weights_only = True  # torch's default since 2.6
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    unexpected = set(pickle_load_args) - {"encoding", "errors", "fix_imports"}
    if unexpected:
        raise TypeError(f"fjax.load: unexpected unpickler arguments {sorted(unexpected)}")
    if map_location is not None and not isinstance(map_location, (str, _device)):
        raise NotImplementedError(
            f"fjax.load: map_location must be a device or device string, got {type(map_location).__name__}"
        )
    name = os.fspath(f) if not hasattr(f, "read") else f"<{type(f).__name__}>"
    data = f.read() if hasattr(f, "read") else _read(os.fspath(f), name)
    dev = _device(map_location) if map_location is not None else None
    if data[:4] == b"PK\x03\x04":
        return _load_torch_zip(data, name, dev, weights_only, pickle_module or pickle, pickle_load_args)
    if len(data) >= 9 and data[8:9] == b"{":
        return _load_safetensors(data, name, dev)
    if data[:2] == b"\x80\x02":
        raise CorruptArtifactError(
            f"fjax.load: {name} is in torch's legacy (pre-1.6) pickle format, which fjax does not read; "
            "re-save it with a current torch.save",
            name,
        )
    what = "empty (truncated)" if not data else f"{len(data)} bytes"
    raise CorruptArtifactError(
        f"fjax.load: {name} ({what}) is neither a safetensors file nor a torch.save zip file", name
    )


def _read(path: str, name: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"fjax.load: no such file {name}") from None


def _tensor(arr: np.ndarray, dev, requires_grad: bool = False, parameter: bool = False) -> Tensor:
    if dev is None:
        data = jnp.asarray(arr)
    elif dev.type == "meta":
        data = MetaArray.like(arr)
    else:
        data = jax.device_put(arr, dev.jax_device())
    if parameter:
        from .nn.parameter import Parameter

        return Parameter(Tensor._wrap(data), requires_grad=requires_grad)
    t = Tensor._wrap(data)
    if requires_grad:
        t.requires_grad = True
    return t


def _load_safetensors(data: bytes, name: str, dev):
    (n,) = struct.unpack("<Q", data[:8])  # load() checked there are 9 bytes or more
    if 8 + n > len(data):
        raise CorruptArtifactError(
            f"fjax.load: {name} is a truncated safetensors file: its header says {n} bytes of header, "
            f"the file has {len(data) - 8} after the length",
            name,
        )
    header = _artifact.parse_json("fjax.load", name, data[8 : 8 + n], "safetensors header")
    if not isinstance(header, dict):
        raise CorruptArtifactError(f"fjax.load: {name} is a corrupt safetensors file: header is not an object", name)
    try:
        entries = safetensors.deserialize(data)
    except safetensors.SafetensorError as err:
        problem = f"is a corrupt or truncated safetensors file: {err}"
        raise CorruptArtifactError(f"fjax.load: {name} {problem}", name) from None
    arrays = {}
    for key, entry in entries:
        if entry["dtype"] not in _SAFETENSORS_DTYPES:
            raise CorruptArtifactError(
                f"fjax.load: {name}: tensor {key!r} has dtype {entry['dtype']}, which fjax does not support", name
            )
        arrays[key] = np.frombuffer(entry["data"], _SAFETENSORS_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict) or metadata.get("format") != _FORMAT:  # plain safetensors: name -> tensor
        return {k: _tensor(arrays[k], dev) for k in header if k != "__metadata__"}
    if not isinstance(metadata.get("structure"), str):
        raise CorruptArtifactError(f"fjax.load: {name} has a corrupt structure record: it has none", name)
    if "crc32" in metadata:
        _verify_checksums(name, metadata, entries)
    structure = _artifact.parse_json("fjax.load", name, metadata["structure"], "structure record")
    try:
        return _decode(structure, arrays, dev)
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise CorruptArtifactError(
            f"fjax.load: {name} has a corrupt structure record: {type(err).__name__}: {err}", name
        ) from None


def _verify_checksums(name: str, metadata: dict, entries) -> None:
    sums = _artifact.parse_json("fjax.load", name, metadata["crc32"], "checksum record")
    if not (isinstance(sums, dict) and isinstance(sums.get("tensors"), dict)):
        raise CorruptArtifactError(f"fjax.load: {name} has a corrupt checksum record", name)
    if _crc32(metadata["structure"].encode()) != sums.get("structure"):
        raise CorruptArtifactError(
            f"fjax.load: {name} has a corrupt structure record: it does not match its CRC-32 (edited or overwritten)",
            name,
        )
    held = {key for key, _ in entries}
    if held != set(sums["tensors"]):
        raise CorruptArtifactError(
            f"fjax.load: {name} holds tensors {sorted(held)[:6]}, its checksum record lists "
            f"{sorted(sums['tensors'])[:6]}",
            name,
        )
    for key, entry in entries:
        if _crc32(entry["data"]) != sums["tensors"][key]:
            raise CorruptArtifactError(
                f"fjax.load: {name}: the bytes of tensor {key!r} do not match their CRC-32: the file is corrupt", name
            )


def _decode(root, arrays: dict, dev):
    """The object the structure record ``root`` describes; iterative (a file cannot exhaust the stack)."""
    done: list = []  # finished values, in order
    work: list = [(root, None)]  # (node, None): to visit; (node, n): build from the last n of ``done``
    while work:
        node, n = work.pop()
        if n is not None:
            values = done[len(done) - n :]
            del done[len(done) - n :]
            done.append(_build(node, values))
            continue
        if node is None or isinstance(node, (bool, int, float, str)):
            done.append(node)
            continue
        if not isinstance(node, (list, dict)):
            raise ValueError(f"unknown record of type {type(node).__name__}")
        if isinstance(node, dict) and "$t" in node:
            done.append(_decode_tensor(node, arrays, dev))
            continue
        if isinstance(node, dict) and "$dtype" in node:
            done.append(_to_dtype(node["$dtype"]))
            continue
        children = _children(node)
        work.append((node, len(children)))
        work.extend((child, None) for child in reversed(children))
    (out,) = done
    return out


def _children(node) -> list:
    if isinstance(node, list):
        return node
    if "$d" in node:
        pairs = node["$d"]
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise ValueError("a dict record ($d) must be a list of [key, value] pairs")
        return [item for pair in pairs for item in pair]
    if "$tu" in node:
        if not isinstance(node["$tu"], list):
            raise ValueError("a tuple record ($tu) must be a list")
        return node["$tu"]
    raise ValueError(f"unknown record {sorted(node)[:8]}")


def _build(node, values: list):
    if isinstance(node, list):
        return values
    if "$d" in node:
        return dict(zip(values[0::2], values[1::2]))  # an unhashable key raises TypeError
    return tuple(values)


def _decode_tensor(node: dict, arrays: dict, dev):
    key = node["$t"]
    if not isinstance(key, str) or key not in arrays:
        raise KeyError(f"the record names tensor {key!r:.80}, which the file does not hold")
    arr = arrays[key]
    if node.get("dtype") == "complex128":
        if arr.ndim == 0 or arr.shape[-1] != 2:
            raise ValueError(f"tensor {key!r} is recorded as complex128 (re, im) pairs but has shape {arr.shape}")
        arr = arr[..., 0] + 1j * arr[..., 1]
    kind = node.get("kind")
    if kind == "numpy":
        return arr.copy()
    if kind == "jax":
        return jnp.asarray(arr) if dev is None or dev.type == "meta" else jax.device_put(arr, dev.jax_device())
    if type(node.get("rg")) is not bool or type(node.get("param")) is not bool:
        raise ValueError(f"tensor {key!r}'s record needs true/false 'rg' and 'param', got {node!r:.120}")
    return _tensor(arr, dev, node["rg"], node["param"])


# -- torch.save zip files -----------------------------------------------------------------
_TORCH_STORAGES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "BFloat16Storage": jnp.bfloat16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64,
    "ComplexDoubleStorage": np.complex128,
}
_TORCH_DTYPES = {
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "long": "int64",
    "int32": "int32",
    "int": "int32",
    "int16": "int16",
    "short": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
    "complex64": "complex64",
    "cfloat": "complex64",
    "complex128": "complex128",
    "cdouble": "complex128",
}


class _StorageType:
    def __init__(self, np_dtype):
        self.dtype = np.dtype(np_dtype)


class _DtypeRef:
    """A dtype named in a torch pickle; ``_place`` makes it the fjax dtype. The pickle gets this
    fresh object, never the process's dtype singleton (whose attributes a BUILD could set)."""

    def __init__(self, name):
        self.name = name


_MAX_EXPANSION = 64  # a stride-0 (expanded) tensor may materialize to 64x its storage (+1M elements)


def _strided(storage, storage_offset, size, stride) -> np.ndarray:
    """The elements a torch tensor views in ``storage`` (a numpy array), copied, bounds checked."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or any(s < 0 for s in size + stride) or storage_offset < 0:
        raise pickle.UnpicklingError(f"invalid tensor layout: size {size}, stride {stride}, offset {storage_offset}")
    if 0 not in size:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= storage.size:
            raise pickle.UnpicklingError(f"tensor of size {size} reads past its storage of {storage.size} elements")
    numel = int(np.prod(size, dtype=np.float64))  # float: a hostile size must not overflow the check
    if numel > _MAX_EXPANSION * storage.size + 2**20:
        raise pickle.UnpicklingError(
            f"tensor of size {size} would materialize {numel} elements from a storage of {storage.size}"
        )
    item = storage.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(storage[storage_offset:], size, tuple(s * item for s in stride))
    return np.array(view)


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    """torch._utils._rebuild_tensor_v2 on a numpy storage, with bounds checked."""
    return _LoadedTensor(_strided(storage, storage_offset, size, stride), bool(requires_grad), False)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    return _LoadedTensor(data.array, bool(requires_grad), True)


class _LoadedTensor:
    """A tensor read from a torch file, placed on the device after unpickling."""

    def __init__(self, array, requires_grad, parameter):
        self.array, self.requires_grad, self.parameter = array, requires_grad, parameter


def _encode_latin1(text: str, encoding: str = "latin1") -> bytes:
    if encoding != "latin1":
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r} is not allowed")
    return text.encode("latin1")


# -- globals declared safe for weights_only loads ------------------------------------------------
_safe_globals: list = []


def _global_name(item) -> tuple[str, Any]:
    """(full name as a pickle names it, object) of an ``add_safe_globals`` item."""
    if isinstance(item, tuple):
        if len(item) != 2 or not isinstance(item[1], str):
            raise TypeError(f"add_safe_globals: expected (global, 'module.name'), got {item!r}")
        return item[1], item[0]
    module, qualname = getattr(item, "__module__", None), getattr(item, "__qualname__", None)
    if module is None or qualname is None:
        raise TypeError(f"add_safe_globals: {item!r} has no __module__/__qualname__; pass (obj, 'module.name')")
    return f"{module}.{qualname}", item


def _user_globals() -> dict:
    return dict(_global_name(item) for item in _safe_globals)


def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Mark classes/functions as safe for ``fjax.load(weights_only=True)`` (torch's
    ``torch.serialization.add_safe_globals``): a checkpoint may then name them, to build
    instances and set their state or to call them. An item is the object, or
    ``(object, "module.name")`` where the checkpoint names it differently.

    Example::

        >>> import argparse, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")  # a .pt path: torch's format
        >>> fjax.save({"args": argparse.Namespace(lr=0.1)}, path)
        >>> fjax.serialization.add_safe_globals([argparse.Namespace])
        >>> fjax.load(path)["args"]
        Namespace(lr=0.1)
        >>> fjax.serialization.clear_safe_globals()
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals: expected a list, got {type(safe_globals).__name__}")
    for item in safe_globals:
        _global_name(item)  # check it now, not at load time
    _safe_globals.extend(safe_globals)


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """The globals marked safe for weights_only loads (``add_safe_globals``), as given.

    Example::

        >>> import argparse
        >>> with fjax.serialization.safe_globals([argparse.Namespace]):
        ...     fjax.serialization.get_safe_globals()
        [<class 'argparse.Namespace'>]
    """
    return list(_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global marked safe with ``add_safe_globals``.

    Example::

        >>> fjax.serialization.add_safe_globals([complex])
        >>> fjax.serialization.clear_safe_globals()
        >>> fjax.serialization.get_safe_globals()
        []
    """
    _safe_globals.clear()


class safe_globals:  # noqa: N801 - torch's name
    """Context manager: the given globals are safe for weights_only loads inside the ``with``
    block (torch's ``torch.serialization.safe_globals``); the list is restored afterwards.

    Example::

        >>> import argparse, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
        >>> fjax.save({"args": argparse.Namespace(epochs=3)}, path)
        >>> with fjax.serialization.safe_globals([argparse.Namespace]):
        ...     fjax.load(path)["args"].epochs
        3
    """

    def __init__(self, safe_globals: list[Callable | tuple[Callable, str]]):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = list(_safe_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _safe_globals[:] = self._saved


# -- reading torch zip files --------------------------------------------------------------------
class _ZipStorages:
    """``persistent_load`` for torch's zip format: storages are read from the archive on demand."""

    def __init__(self, file, archive: zipfile.ZipFile, prefix: str, byteorder: str, **kwargs):
        super().__init__(file, **kwargs)
        self._archive, self._prefix, self._byteorder = archive, prefix, byteorder
        self._storages: dict[str, np.ndarray] = {}

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r:.80}")
        _, storage_type, key, _, numel = pid
        if key not in self._storages:
            raw = self._archive.read(f"{self._prefix}data/{key}")
            dtype = storage_type.dtype.newbyteorder("<" if self._byteorder == "little" else ">")
            if len(raw) < numel * dtype.itemsize:
                raise pickle.UnpicklingError(f"storage {key} has {len(raw)} bytes, expected {numel * dtype.itemsize}")
            self._storages[key] = np.frombuffer(raw, dtype, count=numel).astype(storage_type.dtype)
        return self._storages[key]


def _unsupported_global(full: str) -> pickle.UnpicklingError:
    short = full.rpartition(".")[2]
    return pickle.UnpicklingError(
        f"global '{full}' is not allowed in a weights-only load (Unsupported global: GLOBAL {full} was not an "
        f"allowed global by default). Please use `fjax.serialization.add_safe_globals([{short}])` or the "
        f"`fjax.serialization.safe_globals([{short}])` context manager to allowlist this global if you trust "
        "this class/function, or load with weights_only=False if you trust the file (it can run code)"
    )


_Pure = pickle._Unpickler  # the Python unpickler: its opcodes can be checked one by one


class _WeightsUnpickler(_ZipStorages, _Pure):
    """Allows only what a torch state_dict needs, and the globals declared safe; storages are
    read from the zip on demand.

    Every global handed to the pickle is immutable (C types), fresh (partials, refs) or declared
    safe by the user; only those can be called (REDUCE, NEWOBJ, INST/OBJ), and state (BUILD) and
    items (SETITEMS, APPENDS, ADDITEMS) go only into containers and instances of the classes the
    user declared safe, so nothing outside this load can change.
    """

    def __init__(self, file, archive, prefix, byteorder, **kwargs):
        super().__init__(file, archive, prefix, byteorder, **kwargs)
        self._user = _user_globals()
        self._user_types = tuple({v for v in self._user.values() if isinstance(v, type)})
        self._handed: dict[int, Any] = {}

    def find_class(self, module: str, name: str):
        obj = self._allowed_global("builtins" if module == "__builtin__" else module, name)
        self._handed[id(obj)] = obj
        return obj

    def _allowed_global(self, module: str, name: str):
        full = f"{module}.{name}"
        if full in self._user:
            return self._user[full]
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if (module, name) == ("collections", "Counter"):
            return functools.partial(Counter)
        if module == "builtins" and name in ("set", "frozenset", "bytearray", "complex"):
            return getattr(builtins, name)
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return functools.partial(_rebuild_tensor)
        if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return functools.partial(_rebuild_parameter)
        if module == "torch" and name in _TORCH_STORAGES:
            return _StorageType(_TORCH_STORAGES[name])
        if module == "torch" and name in _TORCH_DTYPES:
            return _DtypeRef(_TORCH_DTYPES[name])
        if (module, name) == ("torch", "Size"):
            return functools.partial(_size)
        if (module, name) == ("torch", "device"):
            return functools.partial(_device)
        if (module, name) == ("_codecs", "encode"):
            return functools.partial(_encode_latin1)
        raise _unsupported_global(full)

    def _callable(self, func, opcode: str):
        if self._handed.get(id(func)) is not func:
            raise pickle.UnpicklingError(f"{opcode} on {type(func).__name__}: only allowed globals can be called")

    def _target(self, obj, opcode: str, kinds: tuple) -> None:
        if isinstance(obj, type) or not isinstance(obj, kinds + self._user_types):
            what = f"the class {obj.__qualname__}" if isinstance(obj, type) else type(obj).__name__
            raise pickle.UnpicklingError(
                f"{opcode} on {what}: only containers and instances of the globals declared safe "
                "can take state or items in a weights-only load"
            )

    def load_reduce(self):
        self._callable(self.stack[-2], "REDUCE")
        super().load_reduce()

    def load_newobj(self):
        self._callable(self.stack[-2], "NEWOBJ")
        super().load_newobj()

    def load_newobj_ex(self):
        self._callable(self.stack[-3], "NEWOBJ_EX")
        super().load_newobj_ex()

    def _instantiate(self, klass, args):
        self._callable(klass, "INST/OBJ")
        super()._instantiate(klass, args)

    def load_build(self):
        self._target(self.stack[-2], "BUILD", (OrderedDict, Counter))
        super().load_build()

    def load_setitem(self):
        self._target(self.stack[-3], "SETITEM", (dict,))
        super().load_setitem()

    def load_setitems(self):
        self._target(self.metastack[-1][-1] if self.metastack else None, "SETITEMS", (dict,))
        super().load_setitems()

    def load_append(self):
        self._target(self.stack[-2], "APPEND", (list,))
        super().load_append()

    def load_appends(self):
        self._target(self.metastack[-1][-1] if self.metastack else None, "APPENDS", (list,))
        super().load_appends()

    def load_additems(self):
        self._target(self.metastack[-1][-1] if self.metastack else None, "ADDITEMS", (set,))
        super().load_additems()

    dispatch = dict(_Pure.dispatch)
    for _op, _fn in (
        (pickle.REDUCE, load_reduce),
        (pickle.NEWOBJ, load_newobj),
        (pickle.NEWOBJ_EX, load_newobj_ex),
        (pickle.BUILD, load_build),
        (pickle.SETITEM, load_setitem),
        (pickle.SETITEMS, load_setitems),
        (pickle.APPEND, load_append),
        (pickle.APPENDS, load_appends),
        (pickle.ADDITEMS, load_additems),
    ):
        dispatch[_op[0]] = _fn
    del _op, _fn


def _size(sizes=()):
    from .tensor import Size

    return Size(int(s) for s in sizes)


def _full_unpickler(base: type) -> type:
    """The unpickler of ``weights_only=False``: ``base`` (``pickle_module.Unpickler``) with torch's
    globals mapped to fjax's and tensors built on ``dev`` as they are read."""

    class _FullUnpickler(_ZipStorages, base):
        def __init__(self, file, archive, prefix, byteorder, dev, **kwargs):
            super().__init__(file, archive, prefix, byteorder, **kwargs)
            self._dev = dev

        def find_class(self, module: str, name: str):
            if module == "torch" or module.startswith("torch."):
                return _torch_global(module, name, self._dev)
            return super().find_class(module, name)

    return _FullUnpickler


def _torch_global(module: str, name: str, dev):
    """fjax's counterpart of the torch global ``module.name`` (for ``weights_only=False``)."""
    from .nn.parameter import Parameter
    from .tensor import Size

    if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
        return functools.partial(_full_tensor, dev)
    if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
        return _full_parameter
    if (module, name) == ("torch._tensor", "_rebuild_from_type_v2"):
        return _full_from_type
    if module == "torch" and name in _TORCH_STORAGES:
        return _StorageType(_TORCH_STORAGES[name])
    if module == "torch" and name in _TORCH_DTYPES:
        return _to_dtype(_TORCH_DTYPES[name])
    known = {
        ("torch", "Size"): Size,
        ("torch", "device"): _device,
        ("torch", "Tensor"): Tensor,
        ("torch.nn.parameter", "Parameter"): Parameter,
    }
    if (module, name) in known:
        return known[(module, name)]
    candidates = ["fjax" + module[len("torch") :]]
    if module.startswith(("torch.nn.modules.", "torch.optim.")):  # torch.nn.modules.linear.Linear
        candidates.append(".".join(module.split(".")[:2]).replace("torch", "fjax", 1))
    for candidate in candidates:
        try:
            found = getattr(importlib.import_module(candidate), name)
        except (ImportError, AttributeError):
            continue
        return found
    raise pickle.UnpicklingError(f"the checkpoint names {module}.{name}, which fjax has no counterpart of")


def _full_tensor(dev, storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    return _tensor(_strided(storage, storage_offset, size, stride), dev, bool(requires_grad))


def _set_state(obj, state) -> None:
    """torch's ``_set_obj_state``: ``state`` is a dict of attributes or (dict, slot values)."""
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
        for k, v in (slots or {}).items():
            setattr(obj, k, v)
    for k, v in (state or {}).items():
        setattr(obj, k, v)


def _full_parameter(data, requires_grad, backward_hooks=None, state=None):
    from .nn.parameter import Parameter

    param = Parameter(data, requires_grad=bool(requires_grad))
    _set_state(param, state)
    return param


def _full_from_type(func, new_type, args, state):
    out = func(*args)
    _set_state(out, state)
    return out


def _place(obj, dev, memo: dict | None = None, safe: frozenset | None = None):
    """The unpickled object with its placeholders (``_LoadedTensor``, ``_DtypeRef``) replaced,
    inside containers and instances of the globals declared safe (``safe``: those classes).
    Containers are updated in place (they are this load's own), so shared and self-referencing
    ones stay so."""
    memo = {} if memo is None else memo
    if safe is None:
        safe = frozenset(v for v in _user_globals().values() if isinstance(v, type))
    key = id(obj)
    if key in memo:
        return memo[key]
    if isinstance(obj, _LoadedTensor):
        out = memo[key] = _tensor(obj.array, dev, obj.requires_grad, obj.parameter)
        return out
    if isinstance(obj, _DtypeRef):
        return _to_dtype(obj.name)
    if isinstance(obj, type):
        return obj
    memo[key] = obj
    if isinstance(obj, dict):
        items = [(_place(k, dev, memo, safe), _place(v, dev, memo, safe)) for k, v in obj.items()]
        obj.clear()
        for k, v in items:
            obj[k] = v
        if type(obj) is not dict:
            _place_attributes(obj, dev, memo, safe)
    elif isinstance(obj, list):
        obj[:] = [_place(v, dev, memo, safe) for v in obj]
    elif isinstance(obj, (set, frozenset)):
        items = [_place(v, dev, memo, safe) for v in obj]
        if isinstance(obj, set):
            obj.clear()
            obj.update(items)
        else:
            obj = memo[key] = type(obj)(items)
    elif isinstance(obj, tuple):
        items = [_place(v, dev, memo, safe) for v in obj]
        if any(a is not b for a, b in zip(items, obj)):
            obj = memo[key] = type(obj)(*items) if hasattr(type(obj), "_fields") else type(obj)(items)
    elif type(obj) in safe:
        _place_attributes(obj, dev, memo, safe)
    return obj


def _place_attributes(obj, dev, memo, safe) -> None:
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        for k, v in list(attributes.items()):
            attributes[k] = _place(v, dev, memo, safe)


# what a corrupt torch zip file or pickle raises while being read (the zip reader, the unpickler
# following opcodes and persistent ids from the file, the storages' layouts)
_TORCH_READ_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    pickle.UnpicklingError,
    EOFError,
    KeyError,
    IndexError,
    ValueError,
    TypeError,
    AttributeError,
    struct.error,
    OverflowError,
    NotImplementedError,  # zip features (encryption, unknown compression) a torch file never uses
    RecursionError,
)


def _load_torch_zip(data: bytes, name: str, dev, weights_only: bool = True, pickle_module=pickle, load_args=None):
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        pickles = [n for n in archive.namelist() if n.endswith("data.pkl") and n.count("/") <= 1]
        if len(pickles) != 1:
            raise CorruptArtifactError(
                f"fjax.load: {name} is a zip file but not a torch.save checkpoint (no single data.pkl)", name
            )
        prefix = pickles[0][: -len("data.pkl")]
        declared = sum(info.file_size for info in archive.infolist())
        if declared > 64 * len(data) + 2**24:  # a zip bomb: decompressing would allocate that much
            raise CorruptArtifactError(
                f"fjax.load: {name} declares {declared} bytes of entries in a {len(data)}-byte file; refusing to "
                "decompress it",
                name,
            )
        byteorder = "little"
        if f"{prefix}byteorder" in archive.namelist():
            byteorder = archive.read(f"{prefix}byteorder").decode().strip()
            if byteorder not in ("little", "big"):
                raise CorruptArtifactError(f"fjax.load: {name}: byteorder record {byteorder!r:.40} is corrupt", name)
        file = io.BytesIO(archive.read(pickles[0]))
        if weights_only:
            obj = _WeightsUnpickler(file, archive, prefix, byteorder, **(load_args or {})).load()
            return _place(obj, dev)
        unpickler = _full_unpickler(pickle_module.Unpickler)
        return unpickler(file, archive, prefix, byteorder, dev, **(load_args or {})).load()
    except CorruptArtifactError:
        raise
    except _TORCH_READ_ERRORS as err:  # a corrupt archive or pickle, or a global refused: name the file
        problem = "nests too deeply" if isinstance(err, RecursionError) else f"{type(err).__name__}: {err}"
        raise CorruptArtifactError(f"fjax.load: cannot read torch checkpoint {name}: {problem}", name) from err


# -- writing torch zip files --------------------------------------------------------------------
class _TorchGlobal:
    """A torch global (``torch._utils._rebuild_tensor_v2``, ``torch.float32`` ...) as a pickle
    names it: written as a GLOBAL opcode, without importing torch."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle calls only what it can call; torch does the calling
        raise TypeError(f"{self.module}.{self.name} is a name for a torch pickle, not a function")


_REBUILD_TENSOR = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _TorchGlobal("torch._utils", "_rebuild_parameter")
_TORCH_SIZE = _TorchGlobal("torch", "Size")
_TORCH_DEVICE = _TorchGlobal("torch", "device")
_STORAGE_NAMES = {np.dtype(d): n for n, d in _TORCH_STORAGES.items()}


class _Storage:
    """A tensor's values, written as one storage entry of the zip."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array


class _PlainTensor:
    """A Parameter's data, pickled as the plain tensor torch's ``_rebuild_parameter`` takes."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


class _TorchPickler(pickle._Pickler):
    """Pickles like ``torch.save``: fjax Tensors as torch's tensor rebuilds over storages (kept
    in ``self.storages`` by key), dtypes, devices and sizes as torch's."""

    def __init__(self, file, protocol: int):
        super().__init__(file, protocol)
        self.storages: dict[str, np.ndarray] = {}
        self._keys: dict[int, str] = {}
        self._globals: dict[str, _TorchGlobal] = {}

    def persistent_id(self, obj):
        if type(obj) is not _Storage:
            return None
        key = self._keys.get(id(obj))
        if key is None:
            key = self._keys[id(obj)] = str(len(self.storages))
            self.storages[key] = obj.array
        kind = self._global("torch", _STORAGE_NAMES[obj.array.dtype])
        return ("storage", kind, key, "cpu", int(obj.array.size))

    def _global(self, module: str, name: str) -> _TorchGlobal:
        g = self._globals.get(f"{module}.{name}")
        if g is None:
            g = self._globals[f"{module}.{name}"] = _TorchGlobal(module, name)
        return g

    def _tensor(self, t, requires_grad: bool):
        arr = _host(t, "a tensor")
        if arr.dtype not in _STORAGE_NAMES:
            raise OpError(f"fjax.save: a tensor of dtype {arr.dtype} has no torch storage type")
        arr = np.require(arr, requirements="C").astype(arr.dtype.newbyteorder("<"), copy=False)  # keeps 0-d
        strides = tuple(int(np.prod(arr.shape[i + 1 :], dtype=np.int64)) for i in range(arr.ndim))
        args = (_Storage(arr.reshape(-1)), 0, tuple(arr.shape), strides, bool(requires_grad), OrderedDict())
        return (_REBUILD_TENSOR, args)

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter

            if isinstance(obj, Parameter):
                return (_REBUILD_PARAMETER, (_PlainTensor(obj), bool(obj.requires_grad), OrderedDict()))
            return self._tensor(obj, obj.requires_grad)
        if type(obj) is _PlainTensor:
            return self._tensor(obj.tensor, False)
        if isinstance(obj, _device):
            return (_TORCH_DEVICE, (str(obj),))
        from .tensor import Size

        if type(obj) is Size:
            return (_TORCH_SIZE, (tuple(obj),))
        return NotImplemented

    def _save_global(self, obj: _TorchGlobal) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def _save_dtype(self, obj) -> None:
        self.save(self._global("torch", obj.name))

    dispatch = dict(pickle._Pickler.dispatch)
    dispatch[_TorchGlobal] = _save_global
    dispatch[_DType] = _save_dtype


def _torch_zip(obj, protocol: int = 2) -> bytes:
    """``obj`` in torch's zip checkpoint format (what ``torch.save`` writes): ``data.pkl`` and
    one entry per storage, each aligned to 64 bytes as torch aligns them."""
    buffer = io.BytesIO()
    pickler = _TorchPickler(buffer, protocol)
    pickler.dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:

        def put(name: str, payload: bytes) -> None:
            info = zipfile.ZipInfo(f"archive/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            head = out.tell() + 30 + len(info.filename.encode()) + 4  # local header + an extra field's header
            pad = -head % 64
            info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            zf.writestr(info, payload)

        put("data.pkl", buffer.getvalue())
        put(".format_version", b"1")
        put(".storage_alignment", b"64")
        put("byteorder", b"little")
        for key, arr in pickler.storages.items():
            put(f"data/{key}", arr.tobytes())
        put("version", b"3\n")
        put(".data/serialization_id", str(int.from_bytes(os.urandom(16), "little")).zfill(40).encode())
    return out.getvalue()
