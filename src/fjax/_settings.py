"""torch's process-wide settings over JAX/XLA: threads, determinism, matmul precision, default
device, warnings, and the small introspection helpers that go with them.

Where XLA decides something torch lets a program set (its CPU thread pool, denormal flushing),
the setter records the value, applies it where JAX allows (``XLA_FLAGS`` before the backend
starts), and its docstring says exactly what it changes.
"""

from __future__ import annotations

import os
import warnings

import jax

from . import _jax_compat
from . import dtypes as _dt

__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_default_device",
    "get_deterministic_debug_mode",
    "get_device_module",
    "get_float32_matmul_precision",
    "get_num_interop_threads",
    "get_num_threads",
    "init_num_threads",
    "is_deterministic_algorithms_warn_only_enabled",
    "is_tensor",
    "is_warn_always_enabled",
    "set_default_device",
    "set_default_tensor_type",
    "set_deterministic_debug_mode",
    "set_flush_denormal",
    "set_float32_matmul_precision",
    "set_num_interop_threads",
    "set_num_threads",
    "set_warn_always",
    "typename",
    "use_deterministic_algorithms",
]


def _backend_started() -> bool:
    return _jax_compat.backends_are_initialized()


def _add_xla_flag(flag: str) -> bool:
    """Append ``flag`` to ``XLA_FLAGS`` if the XLA backend has not started; whether it did."""
    if _backend_started():
        return False
    flags = os.environ.get("XLA_FLAGS", "")
    if flag not in flags.split():
        os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()
    return True


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_threads = {"intra": _cores(), "interop": _cores()}


def _positive_int(name: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{name}: expected a positive integer, got {n!r}")
    return n


def set_num_threads(int) -> None:  # noqa: A002 - torch's parameter name
    """Set the number of threads for intra-op parallelism on CPU (torch.set_num_threads).

    XLA sizes its CPU thread pool once, when its backend starts (the first fjax operation),
    from the machine's cores. fjax records the value (``get_num_threads`` returns it) and, when
    it is 1 and the backend has not started yet, adds ``--xla_cpu_multi_thread_eigen=false`` to
    ``XLA_FLAGS`` so matmuls and convolutions run single-threaded. Any other value, or any call
    after the first operation, changes nothing XLA does.

    Args:
        int: the number of threads, at least 1.

    Example:
        >>> n = fjax.get_num_threads()
        >>> fjax.set_num_threads(n)
        >>> fjax.get_num_threads() == n
        True
    """
    n = _positive_int("set_num_threads", int)
    _threads["intra"] = n
    if n == 1:
        _add_xla_flag("--xla_cpu_multi_thread_eigen=false")


def get_num_threads() -> int:
    """The number of intra-op CPU threads (torch.get_num_threads): the cores this process may
    use, or what ``set_num_threads`` recorded (see there for what XLA does with it).

    Example:
        >>> fjax.get_num_threads() >= 1
        True
    """
    return _threads["intra"]


def set_num_interop_threads(int) -> None:  # noqa: A002 - torch's parameter name
    """Set the number of threads for inter-op parallelism on CPU (torch.set_num_interop_threads).
    Recorded only: XLA runs one computation at a time per device stream and has no inter-op
    thread pool to size; ``get_num_interop_threads`` returns the value.

    Args:
        int: the number of threads, at least 1.

    Example:
        >>> fjax.set_num_interop_threads(fjax.get_num_interop_threads())
    """
    _threads["interop"] = _positive_int("set_num_interop_threads", int)


def get_num_interop_threads() -> int:
    """The number of inter-op CPU threads (torch.get_num_interop_threads): the cores this
    process may use, or what ``set_num_interop_threads`` recorded.

    Example:
        >>> fjax.get_num_interop_threads() >= 1
        True
    """
    return _threads["interop"]


def init_num_threads() -> None:
    """Initialize the number of parallel threads in the calling thread (torch.init_num_threads).
    Nothing to do on fjax: XLA's thread pool is shared by every thread.

    Example:
        >>> fjax.init_num_threads()
    """


_determinism = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (torch.use_deterministic_algorithms).

    XLA on CPU is deterministic already. On GPU, turning it on before the XLA backend starts
    (the first fjax operation) adds ``--xla_gpu_deterministic_ops=true`` to ``XLA_FLAGS``, which
    makes XLA pick deterministic GPU kernels; after that the setting is recorded only. fjax has
    no op that raises or warns for lack of a deterministic version, so ``warn_only`` is recorded.

    Args:
        mode: whether to use deterministic algorithms.
        warn_only: torch warns instead of raising for ops without a deterministic version.

    Example:
        >>> fjax.use_deterministic_algorithms(True)
        >>> fjax.are_deterministic_algorithms_enabled()
        True
        >>> fjax.use_deterministic_algorithms(False)
    """
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms: warn_only expects a bool, but got {type(warn_only).__name__}")
    _determinism["mode"], _determinism["warn_only"] = mode, warn_only
    if mode:
        _add_xla_flag("--xla_gpu_deterministic_ops=true")


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect.

    Example:
        >>> fjax.are_deterministic_algorithms_enabled()
        False
    """
    return _determinism["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether ``use_deterministic_algorithms`` was called with ``warn_only=True``.

    Example:
        >>> fjax.is_deterministic_algorithms_warn_only_enabled()
        False
    """
    return _determinism["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """``use_deterministic_algorithms`` by level (torch.set_deterministic_debug_mode): 0 or
    ``"default"`` turns it off, 1 or ``"warn"`` turns it on with ``warn_only=True``, 2 or
    ``"error"`` turns it on.

    Args:
        debug_mode: 0, 1, 2, ``"default"``, ``"warn"`` or ``"error"``.

    Example:
        >>> fjax.set_deterministic_debug_mode("warn")
        >>> fjax.get_deterministic_debug_mode()
        1
        >>> fjax.set_deterministic_debug_mode(0)
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                f"set_deterministic_debug_mode: invalid value of debug_mode, expected one of "
                f"{list(_DEBUG_MODES)}, but got {debug_mode!r}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"set_deterministic_debug_mode: debug_mode must be str or int, got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"set_deterministic_debug_mode: invalid value of debug_mode, expected 0, 1, or 2, got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The level ``set_deterministic_debug_mode`` would set for the current setting: 0, 1 or 2.

    Example:
        >>> fjax.get_deterministic_debug_mode()
        0
    """
    if not _determinism["mode"]:
        return 0
    return 1 if _determinism["warn_only"] else 2


_PRECISIONS = {"highest": "highest", "high": "tensorfloat32", "medium": "bfloat16"}


def set_float32_matmul_precision(precision: str) -> None:
    """Set the internal precision of float32 matmuls and convolutions
    (torch.set_float32_matmul_precision), through JAX's ``jax_default_matmul_precision``:
    ``"highest"`` is full float32, ``"high"`` lets GPUs use TensorFloat32, ``"medium"`` lets them
    use bfloat16. XLA on CPU computes float32 in full precision whatever is set.

    Args:
        precision: ``"highest"``, ``"high"`` or ``"medium"``.

    Example:
        >>> fjax.set_float32_matmul_precision("high")
        >>> fjax.get_float32_matmul_precision()
        'high'
        >>> fjax.set_float32_matmul_precision("highest")
    """
    if precision not in _PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: expected one of {list(_PRECISIONS)}, got {precision!r}")
    jax.config.update("jax_default_matmul_precision", _PRECISIONS[precision])


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision JAX uses, in torch's words (torch.get_float32_matmul_precision):
    ``"highest"`` (full float32), ``"medium"`` (bfloat16) or ``"high"``. JAX's own default lets
    GPUs use TensorFloat32, so until one is set this reads ``"high"`` (torch's default is
    ``"highest"``), as ``fjax.backends.cuda.matmul.allow_tf32`` reads True.

    Example:
        >>> fjax.get_float32_matmul_precision() in ("highest", "high", "medium")
        True
    """
    value = str(jax.config.jax_default_matmul_precision)
    if value in ("highest", "float32", "F32_F32_F32"):
        return "highest"
    if value in ("bfloat16", "fastest", "BF16_BF16_F32"):
        return "medium"
    return "high"


def set_flush_denormal(mode: bool) -> bool:
    """Ask the CPU to flush denormal floats to zero (torch.set_flush_denormal). XLA's CPU
    code keeps denormals and fjax cannot change that, so this returns False: torch's answer
    where flushing is not supported.

    Args:
        mode: whether to flush denormals.

    Example:
        >>> fjax.set_flush_denormal(True)
        False
    """
    return False


_warn_always = [False]
_FJAX_MODULES = r"fjax(\.|$)"


def _is_ours(module_regex) -> bool:
    return getattr(module_regex, "pattern", None) == _FJAX_MODULES


def set_warn_always(b: bool, /) -> None:
    """Warn every time instead of once (torch.set_warn_always): fjax's warnings go through
    Python's ``warnings`` module, so True adds an ``"always"`` filter for warnings raised from
    fjax's modules and False removes it.

    Args:
        b: whether every warning from fjax is shown, not only the first of each.

    Example:
        >>> fjax.set_warn_always(True)
        >>> fjax.is_warn_always_enabled()
        True
        >>> fjax.set_warn_always(False)
    """
    warnings.filters[:] = [f for f in warnings.filters if not (f[0] == "always" and _is_ours(f[3]))]
    if b:
        warnings.filterwarnings("always", module=_FJAX_MODULES)
    warnings._filters_mutated()
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether ``set_warn_always(True)`` is in effect.

    Example:
        >>> fjax.is_warn_always_enabled()
        False
    """
    return _warn_always[0]


def set_default_device(device) -> None:
    """Set the device tensors are created on when no ``device=`` is given
    (torch.set_default_device), through JAX's ``jax_default_device``; None restores JAX's
    default (the first accelerator, else the CPU).

    Args:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, an int (a CUDA index), a ``fjax.device``,
            or None.

    Example:
        >>> fjax.set_default_device("cpu")
        >>> fjax.zeros(2).device, fjax.get_default_device()
        (device(type='cpu'), device(type='cpu'))
        >>> fjax.set_default_device(None)
    """
    from .device import device as _device

    if device is None:
        jax.config.update("jax_default_device", None)
        return
    if isinstance(device, int) and not isinstance(device, bool):
        device = _device("cuda", device)
    d = _device(device)
    if d.type == "meta":
        raise NotImplementedError("set_default_device: device='meta' as the default device is not supported by fjax")
    jax.config.update("jax_default_device", d.jax_device())


def get_default_device():
    """The device tensors are created on when no ``device=`` is given (torch.get_default_device).

    Example:
        >>> fjax.get_default_device() == fjax.zeros(1).device
        True
    """
    from .device import from_jax

    d = jax.config.jax_default_device
    if isinstance(d, str):
        d = jax.devices(d)[0]
    return from_jax(d if d is not None else jax.devices()[0])


def set_default_tensor_type(t, /) -> None:
    """Set the default floating tensor type (torch.set_default_tensor_type, deprecated in
    torch): ``set_default_dtype`` of the type's dtype, e.g. ``fjax.DoubleTensor`` (or its name,
    ``"torch.DoubleTensor"``) makes float64 the default. CUDA types (``"torch.cuda.FloatTensor"``)
    raise NotImplementedError: use ``set_default_device``.

    Args:
        t: a floating typed-tensor class or its name.

    Example:
        >>> fjax.set_default_tensor_type(fjax.DoubleTensor)
        >>> fjax.get_default_dtype()
        fjax.float64
        >>> fjax.set_default_tensor_type("torch.FloatTensor")
    """
    from ._legacy import dtype_of

    dtype = dtype_of(t)
    if dtype is None:
        raise TypeError(f"set_default_tensor_type: expected a tensor type or its name, got {t!r}")
    if isinstance(t, str) and ".cuda." in t:
        raise NotImplementedError(
            f"set_default_tensor_type: {t!r} (a CUDA type) is not supported; use set_default_device"
        )
    if not dtype.is_floating_point:
        raise TypeError(
            f"set_default_tensor_type: only floating-point types are supported as the default type, got {t!r}"
        )
    _dt.set_default_dtype(dtype)


def get_device_module(device=None):
    """The module of a device type (torch.get_device_module): ``fjax.cuda`` for ``"cuda"``,
    ``fjax.cpu`` for ``"cpu"``; None: the current accelerator's (``fjax.cpu`` without one).

    Args:
        device: a device, a device string or None.

    Example:
        >>> fjax.get_device_module("cpu") is fjax.cpu
        True
    """
    from . import accelerator, cpu, cuda
    from .device import device as _device

    if device is None:
        acc = accelerator.current_accelerator()
        name = "cpu" if acc is None else acc.type
    elif isinstance(device, _device):
        name = device.type
    elif isinstance(device, str):
        name = device.split(":", 1)[0]
    else:
        raise RuntimeError(f"get_device_module: invalid value of device '{device}', expected a fjax.device or a str")
    module = {"cpu": cpu, "cuda": cuda, "gpu": cuda}.get(name)
    if module is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as 'fjax.{name}'.")
    return module


def typename(obj, /) -> str:
    """The type of ``obj`` as a string (torch.typename): a Tensor's type name
    (``"fjax.FloatTensor"``), else ``module.qualname`` of what it is or its class.

    Args:
        obj: any object.

    Example:
        >>> fjax.typename(fjax.ones(1)), fjax.typename(1), fjax.typename(fjax.nn.Module)
        ('fjax.FloatTensor', 'int', 'fjax.nn.module.Module')
    """
    from .tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def is_tensor(obj, /) -> bool:
    """Whether ``obj`` is a fjax Tensor (torch.is_tensor; a Parameter is one).

    Args:
        obj: any object.

    Example:
        >>> fjax.is_tensor(fjax.ones(1)), fjax.is_tensor([1.0])
        (True, False)
    """
    from .tensor import Tensor

    return isinstance(obj, Tensor)


def _deprecated(name: str, device_type: str) -> None:
    new = name.replace(f"_{device_type}_", "_").replace("_gpu_", "_")
    warnings.warn(
        f"fjax.{name}() is deprecated. Please use fjax.{new}('{_AMP_NAME.get(device_type, device_type)}') instead.",
        DeprecationWarning,
        stacklevel=3,
    )


_AMP_NAME = {"gpu": "cuda"}


def _legacy_autocast(device_type: str):
    """torch's per-device autocast getters and setters (``get_autocast_cpu_dtype`` ...), over
    ``fjax.amp``'s state for cpu and cuda ("gpu")."""
    from . import amp

    amp_type = _AMP_NAME.get(device_type, device_type)

    def is_enabled() -> bool:
        _deprecated(f"is_autocast_{device_type}_enabled", device_type)
        return amp.is_autocast_enabled(amp_type)

    def set_enabled(enabled: bool) -> None:
        _deprecated(f"set_autocast_{device_type}_enabled", device_type)
        amp.set_autocast_enabled(amp_type, enabled)

    def get_dtype():
        _deprecated(f"get_autocast_{device_type}_dtype", device_type)
        return amp.get_autocast_dtype(amp_type)

    def set_dtype(dtype) -> None:
        _deprecated(f"set_autocast_{device_type}_dtype", device_type)
        amp.set_autocast_dtype(amp_type, dtype)

    return is_enabled, set_enabled, get_dtype, set_dtype


def _recorded_autocast(device_type: str, default_dtype):
    """The autocast state of a device type fjax has no device for (IPU, torch_xla's XLA):
    recorded per process; nothing is cast."""
    state = {"enabled": False, "dtype": default_dtype}

    def is_enabled() -> bool:
        _deprecated(f"is_autocast_{device_type}_enabled", device_type)
        return state["enabled"]

    def set_enabled(enabled: bool) -> None:
        _deprecated(f"set_autocast_{device_type}_enabled", device_type)
        state["enabled"] = bool(enabled)

    def get_dtype():
        _deprecated(f"get_autocast_{device_type}_dtype", device_type)
        return state["dtype"]

    def set_dtype(dtype) -> None:
        _deprecated(f"set_autocast_{device_type}_dtype", device_type)
        state["dtype"] = _dt.to_dtype(dtype)

    return is_enabled, set_enabled, get_dtype, set_dtype


def _document(fns, device_type: str, what: str, example_dtype: str):
    is_enabled, set_enabled, get_dtype, set_dtype = fns
    names = [f"is_autocast_{device_type}_enabled", f"set_autocast_{device_type}_enabled"]
    names += [f"get_autocast_{device_type}_dtype", f"set_autocast_{device_type}_dtype"]
    for fn, name in zip(fns, names):
        fn.__name__ = fn.__qualname__ = name
        fn.__module__ = "fjax"
    is_enabled.__doc__ = f"""Whether autocast is enabled for {what} (torch's deprecated ``{names[0]}``).

    Example:
        >>> import warnings; warnings.simplefilter("ignore", DeprecationWarning)
        >>> fjax.{names[0]}()
        False
    """
    set_enabled.__doc__ = f"""Enable or disable autocast for {what} (torch's deprecated ``{names[1]}``).

    Args:
        enabled: whether autocast is on.

    Example:
        >>> import warnings; warnings.simplefilter("ignore", DeprecationWarning)
        >>> fjax.{names[1]}(True); fjax.{names[0]}()
        True
        >>> fjax.{names[1]}(False)
    """
    get_dtype.__doc__ = f"""The dtype autocast casts to for {what} (torch's deprecated ``{names[2]}``).

    Example:
        >>> import warnings; warnings.simplefilter("ignore", DeprecationWarning)
        >>> fjax.{names[2]}()
        fjax.{example_dtype}
    """
    set_dtype.__doc__ = f"""Set the dtype autocast casts to for {what} (torch's deprecated ``{names[3]}``).

    Args:
        dtype: the lower-precision floating dtype.

    Example:
        >>> import warnings; warnings.simplefilter("ignore", DeprecationWarning)
        >>> fjax.{names[3]}(fjax.{example_dtype}); fjax.{names[2]}()
        fjax.{example_dtype}
    """
    return fns


is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype = _document(
    _legacy_autocast("cpu"), "cpu", 'CPU in this thread (``fjax.amp``\'s state for ``"cpu"``)', "bfloat16"
)
is_autocast_gpu_enabled, set_autocast_gpu_enabled, get_autocast_gpu_dtype, set_autocast_gpu_dtype = _document(
    _legacy_autocast("gpu"), "gpu", 'CUDA in this thread (``fjax.amp``\'s state for ``"cuda"``)', "float16"
)
is_autocast_ipu_enabled, set_autocast_ipu_enabled, get_autocast_ipu_dtype, set_autocast_ipu_dtype = _document(
    _recorded_autocast("ipu", _dt.float16), "ipu", "IPUs (recorded only: fjax has no IPU device)", "float16"
)
is_autocast_xla_enabled, set_autocast_xla_enabled, get_autocast_xla_dtype, set_autocast_xla_dtype = _document(
    _recorded_autocast("xla", _dt.bfloat16),
    "xla",
    "torch_xla devices (recorded only: fjax's XLA devices are ``cpu`` and ``cuda``)",
    "bfloat16",
)
