"""nn.Graph: OneFlow's static graph as one compiled JAX step (see graph.py)."""

import os as _os

from .compile import ENV_CACHE, enable_persistent_cache, memory_report
from .config import GraphConfig
from .graph import Graph
from .modules import GraphModule

if _os.environ.get(ENV_CACHE):
    enable_persistent_cache()

__all__ = ["Graph", "GraphConfig", "GraphModule", "enable_persistent_cache", "memory_report"]
