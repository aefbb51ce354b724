"""fjax: a OneFlow/PyTorch-style deep-learning framework over JAX transforms.

``import fjax as flow``: eager tensors with ``.backward()``, ``nn.Module``, ``nn.Graph``,
functional autodiff and global tensors, with JAX/XLA doing differentiation, compilation and
partitioning.
"""

from __future__ import annotations

import jax as _jax

_jax.config.update("jax_enable_x64", True)  # float64/int64 as in torch; defaults stay explicit

from . import _methods, autograd, ops  # noqa: E402
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402
from .creation import (  # noqa: E402
    arange,
    as_tensor,
    empty,
    empty_like,
    empty_permuted,
    empty_strided,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    scalar_tensor,
    tensor,
    zeros,
    zeros_like,
)
from .device import device, is_cuda_available  # noqa: E402
from .dispatch import functions as _functions  # noqa: E402
from .dtypes import (  # noqa: E402
    bfloat16,
    bool,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from .errors import OpError  # noqa: E402
from .random import (  # noqa: E402
    Generator,
    bernoulli,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
)
from .tensor import Size, Tensor  # noqa: E402

__version__ = "0.1.0"  # while mock_torch is on: fjax.version.TORCH, the torch release fjax follows

_methods.install()
globals().update(
    {name: fn for name, fn in vars(_functions).items() if not name.startswith("_") and name not in globals()}
)
max, min = _methods.max, _methods.min  # noqa: A001 - reduction or elementwise, as torch
einsum = _methods.einsum
broadcast_shapes = _methods.broadcast_shapes  # takes shapes, not tensors: no op
zero_, resize_as_ = _methods.zero_, _methods.resize_as_  # in place: Tensor methods
histogram, histogramdd = _methods.histogram, _methods.histogramdd  # shapes from Python values: no ops
globals().update({n: f for n, f in _methods.tensor_functions().items() if n not in globals()})  # fjax.abs_(x) ...
# OneFlow's top-level casts: the Tensor methods as functions
to_global, to_local = Tensor.to_global, Tensor.to_local
local_to_global, global_to_global = Tensor.local_to_global, Tensor.global_to_global
# ATen-level ops torch exposes under a leading underscore
_safe_softmax, _softmax_backward_data = _functions._safe_softmax, _functions._softmax_backward_data
_upsample_bilinear2d_aa = _functions._upsample_bilinear2d_aa
from . import accelerator, amp, backends, cpu, cuda, testing  # noqa: E402
from .amp import (  # noqa: E402 - torch.autocast and torch's top-level autocast state functions
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .random import multinomial  # noqa: E402

allclose, equal = _methods.allclose, _methods.equal

from . import (  # noqa: E402
    asyncs,
    distributed,
    distributions,
    env,
    fft,
    func,
    graph,
    linalg,
    masked,
    nn,
    onnx,
    optim,
    profiler,
    return_types,
    sbp,
    signal,
    sparse,
    special,
    utils,
)
from ._aten_extra import embedding_bag, gru, lstm, rnn_relu, rnn_tanh  # noqa: E402 - ATen's forms
from ._config import config  # noqa: E402
from ._legacy import TYPES as _LEGACY_TYPES  # noqa: E402
from ._lobpcg import lobpcg  # noqa: E402
from ._toplevel import (  # noqa: E402 - torch's top-level ops with ATen's signatures, dropouts, copies of view ops
    _batch_norm_with_update,
    _native_batch_norm_legit,
    affine_grid_generator,
    alpha_dropout,
    alpha_dropout_,
    batch_norm,
    binomial,
    celu_,
    chain_matmul,
    convolution,
    detach_copy,
    dropout,
    dropout_,
    embedding_renorm_,
    feature_alpha_dropout,
    feature_alpha_dropout_,
    feature_dropout,
    feature_dropout_,
    frobenius_norm,
    indices_copy,
    max_pool1d_with_indices,
    native_batch_norm,
    norm_except_dim,
    nuclear_norm,
    poisson,
    poisson_nll_loss,
    rrelu_,
    select_copy,
    selu_,
    slice_copy,
    slice_inverse,
    split_copy,
    threshold_,
    unravel_index,
    values_copy,
    vander,
    view_as_complex_copy,
    view_as_real_copy,
)
from .autograd import functional as _functional  # noqa: E402,F401 - fjax.autograd.functional
from .distributed import placement  # noqa: E402
from .dtypes import (  # noqa: E402
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    memory_format,
    preserve_format,
    sparse_coo,
    strided,
)
from .framework.infer_compiler import compile_from_torch  # noqa: E402 - OneFlow v1.0
from .func import vmap  # noqa: E402 - torch.vmap is torch.func.vmap
from .linalg import pca_lowrank, svd_lowrank  # noqa: E402 - torch's top level has them
from .serialization import load, save  # noqa: E402
from .sparse import sparse_coo_tensor, spmm  # noqa: E402

globals().update(_LEGACY_TYPES)  # FloatTensor, LongTensor, ...: torch's legacy typed tensors

# torch's process-wide settings, dtype utilities, windows and small top-level names
from math import e, inf, nan, pi  # noqa: E402

from ._lazy import sync  # noqa: E402 - run what eager fusion recorded
from ._misc import (  # noqa: E402
    AcceleratorError,
    Event,
    FatalError,
    OutOfMemoryError,
    Stream,
    _assert,
    asarray,
    cond,
    frombuffer,
    range,  # noqa: A004 - torch's deprecated end-inclusive range
    result_type,
    sym_float,
    sym_int,
    sym_ite,
    sym_max,
    sym_min,
    sym_not,
    sym_sqrt,
    sym_sum,
    thread_safe_generator,
)
from ._settings import *  # noqa: E402,F403 - threads, determinism, precision, default device, ...
from ._settings import (  # noqa: E402 - torch's deprecated per-device autocast accessors
    get_autocast_cpu_dtype,
    get_autocast_gpu_dtype,
    get_autocast_ipu_dtype,
    get_autocast_xla_dtype,
    is_autocast_cpu_enabled,
    is_autocast_ipu_enabled,
    is_autocast_xla_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_gpu_dtype,
    set_autocast_ipu_dtype,
    set_autocast_ipu_enabled,
    set_autocast_xla_dtype,
    set_autocast_xla_enabled,
)
from ._tensor_str import set_printoptions  # noqa: E402
from ._windows import bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window  # noqa: E402
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled  # noqa: E402
from .autograd.grad_mode import is_inference_mode_enabled  # noqa: E402
from .dtypes import (  # noqa: E402
    can_cast,
    finfo,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    iinfo,
    promote_types,
    uint16,
    uint32,
    uint64,
)

newaxis = None  # x[fjax.newaxis]: a new dimension, as numpy and torch
# what XLA's CPU backend has: LAPACK (linalg), FFT (spectral); no MKL, no OpenMP (its own thread pool)
has_lapack, has_spectral, has_mkl, has_openmp = True, True, False, False

from . import (  # noqa: E402 - OneFlow's internals namespaces flow._C, flow._oneflow_internal
    _C,
    _oneflow_internal,
    compiler,  # noqa: E402 - torch.compiler
    hub,
    jit,
    multiprocessing,
    overrides,
    types,
    version,
)
from .amp import GradScaler  # noqa: E402 - torch.GradScaler is torch.amp.GradScaler
from .compiler import compile  # noqa: E402 - torch.compile
from .dtypes import legacy_contiguous_format  # noqa: E402
from .nn import attention as _attention  # noqa: E402,F401 - torch.nn.attention is bound after `import torch`
from .utils import hooks as _hooks  # noqa: E402,F401 - and so is torch.utils.hooks
from .utils.dlpack import from_dlpack  # noqa: E402 - torch.from_dlpack
