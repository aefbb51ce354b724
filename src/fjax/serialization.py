"""``fjax.save`` / ``fjax.load``: safetensors checkpoints that never run code from the file.

A checkpoint is one safetensors file: every tensor is a named entry (a flat state_dict's keys
are used as the names, so other safetensors readers see the usual layout) and the
surrounding structure (dicts with any scalar keys, lists, tuples, Python scalars, strings,
None) is JSON in the header's metadata. Writes go to a temporary file in the same directory
that is fsynced and then renamed over the target, so a crash never leaves a partial file.

``fjax.load`` also reads plain safetensors files and checkpoints written by ``torch.save``
(zip format): their ``data.pkl`` is read by an unpickler that allows only torch's tensor-
rebuild functions, storage types, dtypes and ``OrderedDict`` (torch's ``weights_only``
semantics), without importing torch.
"""

from __future__ import annotations

import functools
import io
import json
import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from typing import Any, BinaryIO

import jax
import jax.numpy as jnp
import numpy as np
import safetensors

from . import _atomic
from .device import device as _device
from .dtypes import dtype as _DType
from .dtypes import to_dtype as _to_dtype
from .errors import OpError
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
def save(obj: Any, f: str | os.PathLike | BinaryIO) -> None:
    """Save tensors inside nested dicts/lists/tuples of Python scalars and strings.

    Args:
        obj: e.g. ``model.state_dict()``, ``optimizer.state_dict()`` or a dict of them.
        f: a path (written atomically) or a writable binary file object.

    The file is a safetensors file; the nesting and the non-tensor values are kept in its
    metadata, and ``fjax.load`` rebuilds the object.

    Example::

        >>> import io
        >>> model = nn.Linear(2, 1)
        >>> buf = io.BytesIO()  # or a path such as "ckpt.safetensors"
        >>> fjax.save({"model": model.state_dict(), "epoch": 3}, buf)
        >>> _ = buf.seek(0)
        >>> sorted(fjax.load(buf)["model"])
        ['bias', 'weight']
    """
    arrays: dict[str, np.ndarray] = {}
    structure = _encode(obj, (), arrays)
    metadata = {"format": _FORMAT, "structure": json.dumps(structure, allow_nan=True)}
    if hasattr(f, "write"):
        f.write(safetensors.serialize(_specs(arrays), metadata=metadata))
        return
    _atomic.write_file(os.fspath(f), lambda tmp: _write_file(tmp, arrays, metadata))


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
def load(f: str | os.PathLike | BinaryIO, map_location=None, weights_only: bool = True, mmap: bool | None = None):
    """Load what ``fjax.save`` wrote, a safetensors file, or a ``torch.save`` checkpoint (weights only).

    Args:
        f: a path or a readable binary file object.
        map_location: a device (``"cpu"``, ``"cuda:0"``, ``fjax.device``) to put tensors on.
        weights_only: must be True: fjax never unpickles arbitrary objects.

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
    if not weights_only:
        raise NotImplementedError(
            "fjax.load: weights_only=False is not supported; loading never runs code from the file"
        )
    if mmap:
        raise NotImplementedError("fjax.load: mmap=True is not supported")
    if map_location is not None and not isinstance(map_location, (str, _device)):
        raise NotImplementedError(
            f"fjax.load: map_location must be a device or device string, got {type(map_location).__name__}"
        )
    name = os.fspath(f) if not hasattr(f, "read") else f"<{type(f).__name__}>"
    data = f.read() if hasattr(f, "read") else _read(os.fspath(f), name)
    dev = _device(map_location) if map_location is not None else None
    if data[:4] == b"PK\x03\x04":
        return _load_torch_zip(data, name, dev)
    if len(data) >= 9 and data[8:9] == b"{":
        return _load_safetensors(data, name, dev)
    if data[:2] == b"\x80\x02":
        raise OpError(
            f"fjax.load: {name} is in torch's legacy (pre-1.6) pickle format, which fjax does not read; "
            "re-save it with a current torch.save"
        )
    raise OpError(f"fjax.load: {name} ({len(data)} bytes) is neither a safetensors file nor a torch.save zip file")


def _read(path: str, name: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"fjax.load: no such file {name}") from None


def _tensor(arr: np.ndarray, dev, requires_grad: bool = False, parameter: bool = False) -> Tensor:
    data = jnp.asarray(arr) if dev is None else jax.device_put(arr, dev.jax_device())
    if parameter:
        from .nn.parameter import Parameter

        return Parameter(Tensor._wrap(data), requires_grad=requires_grad)
    t = Tensor._wrap(data)
    if requires_grad:
        t.requires_grad = True
    return t


def _load_safetensors(data: bytes, name: str, dev):
    try:
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + n])
        entries = safetensors.deserialize(data)
    except (safetensors.SafetensorError, ValueError, struct.error) as err:
        raise OpError(f"fjax.load: {name} is a corrupt or truncated safetensors file: {err}") from None
    arrays = {}
    for key, entry in entries:
        if entry["dtype"] not in _SAFETENSORS_DTYPES:
            raise OpError(f"fjax.load: {name}: tensor {key!r} has dtype {entry['dtype']}, which fjax does not support")
        arrays[key] = np.frombuffer(entry["data"], _SAFETENSORS_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    metadata = header.get("__metadata__") or {}
    if metadata.get("format") != _FORMAT:  # a plain safetensors file: name -> tensor, in file order
        order = [k for k in header if k != "__metadata__"]
        return {k: _tensor(arrays[k], dev) for k in order}
    try:
        structure = json.loads(metadata["structure"])
        return _decode(structure, arrays, dev)
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise OpError(f"fjax.load: {name} has a corrupt structure record: {err}") from None


def _decode(node, arrays: dict, dev):
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_decode(v, arrays, dev) for v in node]
    if "$t" in node:
        arr = arrays[node["$t"]]
        if node.get("dtype") == "complex128":
            arr = arr[..., 0] + 1j * arr[..., 1]
        kind = node.get("kind")
        if kind == "numpy":
            return arr.copy()
        if kind == "jax":
            return jnp.asarray(arr) if dev is None else jax.device_put(arr, dev.jax_device())
        return _tensor(arr, dev, node["rg"], node["param"])
    if "$d" in node:
        return {(_decode(k, arrays, dev) if isinstance(k, dict) else k): _decode(v, arrays, dev) for k, v in node["$d"]}
    if "$tu" in node:
        return tuple(_decode(v, arrays, dev) for v in node["$tu"])
    if "$dtype" in node:
        return _to_dtype(node["$dtype"])
    raise ValueError(f"unknown record {sorted(node)}")


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


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    """torch._utils._rebuild_tensor_v2 on a numpy storage, with bounds checked."""
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
    return _LoadedTensor(np.array(view), bool(requires_grad), False)


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


class _WeightsUnpickler(pickle.Unpickler):
    """Allows only what a torch state_dict needs; storages are read from the zip on demand."""

    def __init__(self, file, archive: zipfile.ZipFile, prefix: str, byteorder: str):
        super().__init__(file)
        self._archive, self._prefix, self._byteorder = archive, prefix, byteorder
        self._storages: dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str):
        # Every object handed to the pickle is immutable (C types) or fresh (partials, refs), so
        # a BUILD opcode on it cannot change anything outside this load.
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return functools.partial(_rebuild_tensor)
        if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return functools.partial(_rebuild_parameter)
        if module == "torch" and name in _TORCH_STORAGES:
            return _StorageType(_TORCH_STORAGES[name])
        if module == "torch" and name in _TORCH_DTYPES:
            return _DtypeRef(_TORCH_DTYPES[name])
        if (module, name) == ("torch", "Size"):
            return tuple
        if (module, name) == ("_codecs", "encode"):
            return functools.partial(_encode_latin1)
        raise pickle.UnpicklingError(f"global '{module}.{name}' is not allowed in a weights-only load")

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


def _place(obj, dev):
    if isinstance(obj, _LoadedTensor):
        return _tensor(obj.array, dev, obj.requires_grad, obj.parameter)
    if isinstance(obj, _DtypeRef):
        return _to_dtype(obj.name)
    if isinstance(obj, OrderedDict):
        out = OrderedDict((k, _place(v, dev)) for k, v in obj.items())
        out.__dict__.update(obj.__dict__)
        return out
    if isinstance(obj, dict):
        return {k: _place(v, dev) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_place(v, dev) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_place(v, dev) for v in obj)
    return obj


def _load_torch_zip(data: bytes, name: str, dev):
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        pickles = [n for n in archive.namelist() if n.endswith("data.pkl") and n.count("/") <= 1]
        if len(pickles) != 1:
            raise OpError(f"fjax.load: {name} is a zip file but not a torch.save checkpoint (no single data.pkl)")
        prefix = pickles[0][: -len("data.pkl")]
        declared = sum(info.file_size for info in archive.infolist())
        if declared > 64 * len(data) + 2**24:  # a zip bomb: decompressing would allocate that much
            raise OpError(
                f"fjax.load: {name} declares {declared} bytes of entries in a {len(data)}-byte file; refusing to "
                "decompress it"
            )
        byteorder = "little"
        if f"{prefix}byteorder" in archive.namelist():
            byteorder = archive.read(f"{prefix}byteorder").decode().strip()
        unpickler = _WeightsUnpickler(io.BytesIO(archive.read(pickles[0])), archive, prefix, byteorder)
        obj = unpickler.load()
    except OpError:
        raise
    except Exception as err:  # any failure of a corrupt archive or pickle: name the file
        raise OpError(f"fjax.load: cannot read torch checkpoint {name}: {type(err).__name__}: {err}") from err
    return _place(obj, dev)
