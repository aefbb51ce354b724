"""The few ``oneflow._oneflow_internal`` entry points OneFlow code and tests call: the lazy-mode
flag (True while an ``nn.Graph``'s ``build`` runs) and the device synchronisations.

OneFlow's other internals (its C++ session, memory counters, remat/DTR controls, test_api)
have no counterpart in fjax and are not provided.
"""

from __future__ import annotations

from types import SimpleNamespace


def _is_lazy() -> bool:
    """Whether an ``nn.Graph``'s ``build`` is running (OneFlow's lazy mode).

    Example:
        >>> fjax._oneflow_internal.lazy_mode.is_enabled()
        False
    """
    from .graph.graph import _lazy_depth

    return _lazy_depth[0] > 0


def CudaSynchronize() -> None:  # noqa: N802 - OneFlow's name
    """Wait until the work dispatched so far is done (``fjax.cuda.synchronize``).

    Example:
        >>> fjax._oneflow_internal.CudaSynchronize()
    """
    from . import cuda

    cuda.synchronize()


lazy_mode = SimpleNamespace(is_enabled=_is_lazy)
eager = SimpleNamespace(Sync=CudaSynchronize, ClusterSync=CudaSynchronize)
