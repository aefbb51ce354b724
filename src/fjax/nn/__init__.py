"""``fjax.nn``: Module, Parameter, containers, layers, ``functional``, ``init``, ``utils`` and ``parallel``.

Mirrors ``torch.nn``: names, constructor arguments, parameter names and default
initialisation match, so a model ports by changing the import. The layers also sit at
torch's ``torch.nn.modules.<family>`` paths (``fjax.nn.modules.batchnorm.BatchNorm2d`` is
``fjax.nn.BatchNorm2d``).
"""

from .. import graph
from ..graph import Graph
from . import common_types, functional, grad, init, parallel, utils  # noqa: F401 - nn.common_types, nn.grad, as torch
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module
from .modules import *  # noqa: F403 - the layer namespace, as torch.nn
from .modules import __all__ as _layers
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    "Buffer",
    "DataParallel",
    "Graph",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "ParameterDict",
    "ParameterList",
    "Sequential",
    "UninitializedBuffer",
    "UninitializedParameter",
    "functional",
    "graph",
    "init",
    "parallel",
    "utils",
    *_layers,
]
