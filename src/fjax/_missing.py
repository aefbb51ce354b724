"""torch's public names fjax does not have, and why: the families it will not provide
(``EXCLUDED``), and the errors a program meets when it reaches for one.

Under ``fjax.mock_torch`` a missing name raises ``MissingTorchName`` — a ``NotImplementedError`` that
is also an ``AttributeError``, so ``hasattr(torch, name)`` stays False — naming the torch name and,
for an excluded family, the reason. ``tests/test_public_surface.py`` checks the list against
torch's namespaces. It imports nothing of fjax: the tensor layer and every namespace use it.
"""

from __future__ import annotations

import re
import sys

# Families fjax will not provide: (torch namespace regex, name regex, reason).
EXCLUDED = [
    (
        r"torch(\.Tensor)?",
        r"q_.*|.*quantiz.*|quint.*|qint.*|qscheme|int_repr|dequantize|fake_quantize.*|choose_qparams.*"
        r"|fused_moving_avg_obs_fake_quant|per_(channel|tensor)_\w+",
        "quantization: fjax has no quantized tensors (XLA's int8 paths are reached through dtypes)",
    ),
    (
        r"torch",
        r"Script\w*|\w+Type|CompilationUnit|Graph|Node|Block|Value|Use|Code|FunctionSchema|Argument|AliasDb"
        r"|parse_ir|parse_schema|parse_type_comment|import_ir_module\w*|merge_type_from_type_comment"
        r"|unify_type_list|fork|wait|Future|ConcreteModuleType\w*|ErrorReport|FileCheck|Gradient"
        r"|GraphExecutorState|ExecutionPlan|TracingState|LiteScriptModule|CallStack|DeepCopyMemoTable"
        r"|JITException|ArgumentSpec|CompleteArgumentSpec|InferredType|Capsule|StaticModule|ThroughputBenchmark"
        r"|BenchmarkConfig|BenchmarkExecutionStats|LockingLogger|NoopLogger|AggregationType|AVG|SUM"
        r"|OperatorInfo|PyTorchFileReader|PyTorchFileWriter|ScriptModuleSerializer|SerializationStorageContext"
        r"|DeserializationStorageContext|IODescriptor|cpp|DispatchKey|DispatchKeySet|ExcludeDispatchKeyGuard"
        r"|Tag|DisableTorchFunction|DisableTorchFunctionSubclass|Type|ModuleDict|ParameterDict|BufferDict",
        "TorchScript/JIT and dispatcher internals: fjax compiles with jax.jit, nn.Graph and fjax.compile",
    ),
    (
        r"torch\.Tensor",
        r"index",
        "functorch's first-class dimensions (Tensor.index binds positions to dim objects): fjax has no dim objects",
    ),
    (
        r"torch\.nn\.functional",
        r"BroadcastingList\d|boolean_dispatch|handle_torch_function|has_torch_function\w*|assert_int_or_pair",
        "TorchScript typing helpers and __torch_function__ plumbing",
    ),
    (
        r"torch(\.Tensor)?",
        r"cudnn_\w+|miopen_\w+|mkldnn_\w+|fbgemm_\w+|is_vulkan_available|is_vulkan|to_mkldnn|is_mkldnn|conv_tbc"
        r"|native_\w+|batch_norm_(backward_elemt|backward_reduce|elemt|gather_stats\w*|stats|update_stats)",
        "vendor kernels (cuDNN, MIOpen, oneDNN, FBGEMM, Vulkan) and the native/SyncBatchNorm kernel entry points "
        "under torch's Python ops: XLA chooses kernels",
    ),
    (
        r"torch\.backends",
        r"cusparselt|kleidiai|mha|miopen|mkl|mkldnn|nnpack|openmp|opt_einsum|quantized|python_native|m|xnnpack|xeon",
        "vendor-library switches; fjax provides cpu, cuda, cudnn and mps",
    ),
    (
        r"torch(\.Tensor)?",
        r"sparse_(bsc|bsr|csc|csr)|sparse_(bsc|bsr|csc|csr|compressed)_tensor|\w*(ccol|col|crow|row)_indices(_copy)?|to_sparse_(bsc|bsr|csc|csr)"
        r"|is_sparse_csr|smm|hsmm|dsmm|saddmm|sspaddmm|hspmm|resize_as_sparse_|sparse_resize\w*",
        "compressed sparse layouts (CSR/CSC/BSR/BSC): fjax's sparse tensors are COO (jax.experimental.sparse)",
    ),
    (
        r"torch",
        r"\w*Storage|TypedStorage|UntypedStorage|is_storage|from_file",
        "typed storage classes: fjax tensors live in XLA buffers, not torch storages",
    ),
    (
        r"torch",
        r"SymInt|SymFloat|SymBool|sym_constrain_range\w*|sym_fresh_size",
        "torch.fx symbolic-shape classes: JAX traces shapes itself",
    ),
    (
        r"torch",
        r"bits\w+|bit|int[1-7]|uint[1-7]|float4_e2m1fn_x2|complex32",
        "sub-byte, bit-packed and complex-half dtypes: XLA has no arithmetic for them",
    ),
    (
        r"torch(\.Tensor)?",
        r"hash_tensor",
        "torch's tensor hashing for its compiler's caches (torch.hash_tensor): fjax keys programs by jaxprs",
    ),
    (
        r"torch(\.Tensor)?",
        r"jagged|compiled_with_cxx11_abi|to_padded_tensor",
        "nested (jagged) tensors and torch's C++ build details: fjax has no nested tensors or C++ ABI",
    ),
    (
        r"torch\.nn\.functional",
        r"ScalingType|SwizzleType|scaled_mm|scaled_grouped_mm",
        "FP8 scaled-GEMM CUDA kernels and their scaling-recipe enums: no CPU or XLA counterpart",
    ),
    (
        r"torch\.nn\.utils\.rnn",
        r"PackedSequence_|bind",
        "torch's private namedtuple base of PackedSequence and its method-binding helper",
    ),
    (
        r"torch\.autograd",
        r"NestedIOFunction",
        "the legacy autograd.Function API (pre-0.4 instance-style functions); fjax has the static-method one",
    ),
    (
        r"torch\.accelerator",
        r"Graph",
        "accelerator graph capture and replay (CUDA graphs): fjax compiles steps with nn.Graph and fjax.compile",
    ),
    (
        r"torch\.func",
        r"rearrange",
        "einops' rearrange re-exported by torch.func (needs the einops package)",
    ),
    (
        r"torch\.Tensor",
        r"ipu|is_ipu|mtia|is_mtia|is_maia|xpu|is_xpu_|record_stream|reinforce|volatile|module_load",
        "devices fjax does not target and removed autograd features",
    ),
    (
        r"torch\.cuda",
        r"\w+Tensor|\w+Storage|CUDAPluggableAllocator|change_current_allocator|caching_allocator_\w+|cudart"
        r"|cudaStatus|CudaError|check_error|jiterator|nccl|nvtx|tunable|GreenContext|MemPool|use_mem_pool"
        r"|get_allocator_backend|current_blas_handle|current_solver_handle|get_stream_from_external|ExternalStream"
        r"|host_memory_stats\w*|reset_accumulated_host_memory_stats|reset_peak_host_memory_stats|list_gpu_processes"
        r"|has_magma|get_gencode_flags|sparse|graph|graphs|CUDAGraph|graph_pool_handle|make_graphed_callables"
        r"|is_current_stream_capturing|DeferredCudaCallError|memory_snapshot|power_draw|temperature|clock_rate"
        r"|utilization|device_memory_used|can_device_access_peer|ipc_collect|caching_allocator_disabled",
        "CUDA runtime internals (allocators, CUDA graphs, NVTX, NCCL, legacy typed tensors): XLA owns the device",
    ),
    (
        r"torch\.utils\.data",
        r"\w*DataPipe|DataChunk|functional_datapipe|guaranteed_datapipes_determinism|non_deterministic"
        r"|runtime_validation\w*|argument_validation|_DatasetKind",
        "torchdata's DataPipes (deprecated by torch, removed from torchdata)",
    ),
    (
        r"torch\.utils\.benchmark",
        r"CallgrindStats|CopyIfCallgrind|FunctionCount|FunctionCounts|Fuzz\w+|ParameterAlias",
        "valgrind instruction counts and benchmark fuzzers",
    ),
    (
        r"torch\.nn",
        r"factory_kwargs|attention|grad",
        "torch.nn's own helpers (factory_kwargs) and packages programs import from other paths",
    ),
]


def exclusion_reason(namespace: str, name: str) -> str | None:
    """Why fjax does not provide ``<namespace>.<name>`` (a torch path), or None if it should."""
    for ns, pattern, reason in EXCLUDED:
        if re.fullmatch(ns, namespace) and re.fullmatch(pattern, name):
            return reason
    return None


class MissingTorchName(NotImplementedError, AttributeError):
    """A torch name (``torch.quantize_per_tensor``, ``Tensor.int_repr``) that fjax does not provide."""


def missing(namespace: str, name: str) -> AttributeError:
    """The error for ``<namespace>.<name>`` missing from fjax's mirror of torch's ``namespace``."""
    fjax_namespace = "fjax" + namespace[len("torch") :]
    mock = sys.modules.get("fjax.mock_torch")  # read, not imported: this module is below everything
    if mock is None or not mock.is_enabled():
        return AttributeError(f"'{fjax_namespace}' has no attribute '{name}'")
    reason = exclusion_reason(namespace, name)
    why = f": {reason}" if reason else ""
    return MissingTorchName(
        f"fjax.mock_torch: fjax does not provide '{namespace}.{name}'{why}; run this part of the program with "
        "real PyTorch"
    )


def module_getattr(namespace: str):
    """A module ``__getattr__`` (PEP 562) for fjax's mirror of torch's ``namespace``."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)  # import machinery and introspection probe dunders
        raise missing(namespace, name)

    return __getattr__
