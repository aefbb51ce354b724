"""``torch.nn.utils.stateless``: ``functional_call`` (deprecated in torch for ``torch.func.functional_call``)."""

from __future__ import annotations

import warnings
from typing import Any

from ..._transforms.reparametrize import functional_call as _functional_call
from ...tensor import Tensor
from ..module import Module

__all__ = ["functional_call"]


def functional_call(
    module: Module,
    parameters_and_buffers: dict[str, Tensor],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
):
    """``module(*args, **kwargs)`` with some parameters and buffers replaced (torch's deprecated
    ``nn.utils.stateless.functional_call``; use :func:`fjax.func.functional_call`).

    Args:
        module: the module to call.
        parameters_and_buffers: ``{dotted name: Tensor}`` replacing the module's tensors during the call.
        args: one positional argument, or a tuple of them.
        kwargs: keyword arguments of the call.
        tie_weights: a value given for one of several tied names replaces all of them.
        strict: the names must be exactly the module's parameters and buffers.

    Example:
        >>> import warnings
        >>> from fjax.nn.utils import stateless
        >>> params = {"weight": fjax.ones(1, 2), "bias": fjax.zeros(1)}
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     out = stateless.functional_call(nn.Linear(2, 1), params, (fjax.tensor([[1.0, 2.0]]),))
        >>> out
        tensor([[3.]], dtype=fjax.float32)
    """
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a "
        "future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
