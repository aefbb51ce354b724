"""``torch.nn.modules.container``'s path: the containers (defined in ``fjax.nn.containers``)."""

from ..containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
