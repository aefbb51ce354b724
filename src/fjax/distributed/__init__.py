"""Global tensors and mesh configurations over jax.sharding (OneFlow's placement + sbp).

- ``placement``, ``split``/``broadcast``/``partial_sum``, ``Tensor.to_global``/``to_local``;
- ``mesh.MeshConfig``: axis names and parameter-name rules for nn.Graph (DP, ZeRO, TP);
- ``checkpoint``: sharded save/load with orbax (no gathering on one host, reshard on load);
- ``launch``: ``python -m fjax.distributed.launch --nproc_per_node N script.py``.
"""

from . import checkpoint, mesh
from .global_tensor import module_to_global
from .mesh import MeshConfig
from .placement import broadcast, partial_sum, placement, split

__all__ = ["MeshConfig", "broadcast", "checkpoint", "mesh", "module_to_global", "partial_sum", "placement", "split"]
