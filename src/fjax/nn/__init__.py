"""``fjax.nn``: Module, Parameter, containers, layers, ``functional``, ``init`` and ``utils``.

Mirrors ``torch.nn``: names, constructor arguments, parameter names and default
initialisation match, so a model ports by changing the import.
"""

from .. import graph
from ..graph import Graph
from . import common_types, functional, init, utils  # noqa: F401 - nn.common_types, as torch
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module
from .modules import *  # noqa: F403 - the layer namespace, as torch.nn
from .modules import __all__ as _layers
from .parameter import Parameter

__all__ = [
    "Graph",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "ParameterDict",
    "ParameterList",
    "Sequential",
    "functional",
    "graph",
    "init",
    "utils",
    *_layers,
]
