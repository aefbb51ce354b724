"""nn.Graph: OneFlow's static graph as one compiled JAX step (see graph.py).

``GraphState.of(graph)`` (state.py) is the protocol for code outside this package that needs a
graph's state: its modules, optimizers, state tensors, optimizer groups and mesh shardings.
"""

import os as _os

from .compile import ENV_CACHE, enable_persistent_cache, memory_report
from .config import GraphConfig
from .graph import Graph
from .modules import GraphModule
from .state import GraphState

if _os.environ.get(ENV_CACHE):
    enable_persistent_cache()

__all__ = ["Graph", "GraphConfig", "GraphModule", "GraphState", "enable_persistent_cache", "memory_report"]
