"""Reverse-mode autograd on the tape: backward, grad, grad modes, custom Functions.

This package's ``__init__`` only re-exports. ``fjax.autograd.functional`` (jvp, vjp, hvp, vhp,
jacobian, hessian) is imported by ``fjax/__init__.py`` once dispatch exists (it builds on it).
"""

from __future__ import annotations

from . import graph
from .api import backward, grad
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .variable import Variable

__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "enable_grad",
    "grad",
    "graph",
    "inference_mode",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
    "Variable",
]
