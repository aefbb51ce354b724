"""Reverse-mode autograd on the tape: backward, grad, grad modes, custom Functions.

This package's ``__init__`` only re-exports. ``fjax.autograd.functional`` (jvp, vjp, hvp, vhp,
jacobian, hessian) is imported by ``fjax/__init__.py`` once dispatch exists (it builds on it).
"""

from __future__ import annotations

from . import forward_ad, graph, profiler  # noqa: F401 - torch.autograd.forward_ad, .profiler
from .anomaly_mode import (
    detect_anomaly,
    enforce_grad_layout_policy,
    is_multithreading_enabled,
    is_view_replay_enabled,
    set_detect_anomaly,
    set_multithreading_enabled,
)
from .api import backward, grad
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable

__all__ = [
    "Function",
    "FunctionCtx",
    "Variable",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "enforce_grad_layout_policy",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "is_grad_enabled",
    "is_multithreading_enabled",
    "is_view_replay_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
    "set_multithreading_enabled",
]
