"""Global tensors and mesh configurations over jax.sharding (OneFlow's placement + sbp), and torch's
process-group API.

- ``placement``, ``split``/``broadcast``/``partial_sum``, ``Tensor.to_global``/``to_local``, and the
  creation ops' OneFlow keywords ``placement=``/``sbp=`` (``global_tensor.created``; the global mode of
  ``fjax.utils.global_view.global_mode`` lives in ``global_tensor`` too);
- ``strategy``: the sharding strategies as values, ``DataParallel``, ``ZeRO``, ``TensorParallel``,
  ``PipelineParallel`` and ``Rules`` (explicit per-parameter specs);
- ``mesh.MeshConfig``: a mesh and strategies over it, for nn.Graph (``set_mesh``) and global tensors
  (``MeshConfig.sbp``, ``shard_module``);
- ``pipeline``: GPipe/1F1B over a ``pipe`` mesh axis as one SPMD program; ``get_layer_placement`` (LiBai's);
- ``checkpoint``: sharded save/load with orbax (no gathering on one host, reshard on load);
- ``launch``: ``python -m fjax.distributed.launch --nproc_per_node N script.py``;
- torch.distributed's ``init_process_group``, ``get_rank``/``get_world_size``, the collectives
  ``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``, ``reduce``, ``gather``,
  ``scatter``, ``all_to_all``, ``barrier`` and the object ones (``all_gather_object``,
  ``broadcast_object_list``, ...) (``process_group``, ``collectives``); point-to-point ``send``/``recv``
  raise NotImplementedError.

``broadcast`` is both: OneFlow's sbp value (``x.to_global(p, dist.broadcast)``; ``broadcast()`` with no
arguments is the same value, as in OneFlow) and, called with a tensor, torch's collective
``broadcast(tensor, src)``.
"""

from . import checkpoint, mesh, pipeline, strategy
from .collectives import (
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    broadcast_object_list,
    gather,
    gather_object,
    irecv,
    isend,
    monitored_barrier,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
)
from .global_tensor import module_to_global
from .mesh import MeshConfig, shard_module
from .pipeline import get_layer_placement
from .placement import broadcast, partial_sum, placement, split
from .process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    new_group,
)
from .strategy import DataParallel, PipelineParallel, Rules, Strategy, TensorParallel, ZeRO

__all__ = [
    "Backend",
    "DataParallel",
    "GroupMember",
    "MeshConfig",
    "PipelineParallel",
    "ProcessGroup",
    "ReduceOp",
    "Rules",
    "Strategy",
    "TensorParallel",
    "Work",
    "ZeRO",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "checkpoint",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_layer_placement",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "isend",
    "mesh",
    "module_to_global",
    "monitored_barrier",
    "new_group",
    "partial_sum",
    "pipeline",
    "placement",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
    "shard_module",
    "split",
    "strategy",
]
