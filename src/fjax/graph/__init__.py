"""nn.Graph: OneFlow's static graph as one compiled JAX step (see graph.py).

``GraphState.of(graph)`` (state.py) is the protocol for code outside this package that needs a
graph's state: its modules, optimizers, state tensors, optimizer groups and mesh shardings.
"""

import os as _os
import sys as _sys

from .compile import ENV_CACHE, enable_persistent_cache, memory_report
from .config import GraphConfig
from .graph import Graph
from .modules import GraphModule, GraphTensor, Proxy
from .state import GraphState

# OneFlow's ``oneflow.nn.graph`` is this package: ``from fjax.nn.graph import GraphModule`` imports it
# (``fjax.nn.graph`` is also the attribute ``fjax.nn`` sets)
_sys.modules.setdefault(__name__.rpartition(".")[0] + ".nn.graph", _sys.modules[__name__])

if _os.environ.get(ENV_CACHE):
    enable_persistent_cache()

__all__ = [
    "Graph",
    "GraphConfig",
    "GraphModule",
    "GraphState",
    "GraphTensor",
    "Proxy",
    "enable_persistent_cache",
    "memory_report",
]
