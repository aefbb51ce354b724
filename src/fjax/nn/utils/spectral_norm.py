"""The hook-based spectral normalization (``torch.nn.utils.spectral_norm``): parameter ``<name>_orig``,
buffers ``<name>_u`` and ``<name>_v``, and a forward pre-hook computing ``<name>``."""

from __future__ import annotations

from typing import Any

from ...autograd.grad_mode import no_grad
from ...dispatch import functions as _F
from .. import functional as F
from ..module import Module
from ..parameter import Parameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of :func:`spectral_norm`: ``<name> = <name>_orig / sigma``.

    Args:
        name: the name of the normalized parameter.
        n_power_iterations: power iterations per forward in training mode.
        dim: the output dim of the weight.
        eps: the epsilon of the normalisations.

    Example:
        >>> m = nn.utils.spectral_norm(nn.Linear(2, 3))
        >>> [type(h).__name__ for h in m._forward_pre_hooks.values()]
        ['SpectralNorm']
    """

    _version: int = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        """The weight as a matrix: ``dim`` first, the other dims flattened.

        Args:
            weight: the weight.

        Example:
            >>> from fjax.nn.utils.spectral_norm import SpectralNorm
            >>> SpectralNorm(dim=1).reshape_weight_to_matrix(fjax.ones(2, 3, 4)).shape
            fjax.Size([3, 8])
        """
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module: Module, do_power_iteration: bool):
        """``<name>_orig / sigma``, after ``n_power_iterations`` updates of ``u`` and ``v`` if asked.

        Args:
            module: the module holding the parameter and buffers.
            do_power_iteration: update the ``u`` and ``v`` buffers in place first.

        Example:
            >>> m = nn.utils.spectral_norm(nn.Linear(2, 3))
            >>> m._forward_pre_hooks[next(iter(m._forward_pre_hooks))].compute_weight(m, False).shape
            fjax.Size([3, 2])
        """
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(_F.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(_F.mv(weight_mat, v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = _F.dot(u, _F.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Make ``module.<name>`` a plain parameter again, holding its current normalized value.

        Args:
            module: the module.

        Example:
            >>> m = nn.utils.remove_spectral_norm(nn.utils.spectral_norm(nn.Linear(2, 3)))
            >>> sorted(m.state_dict())
            ['bias', 'weight']
        """
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        """Move ``module.<name>`` to ``<name>_orig``, add the ``u``/``v`` buffers and register the hook.

        Args:
            module: the module.
            name: the parameter's name.
            n_power_iterations: power iterations per forward in training mode.
            dim: the output dim of the weight.
            eps: the epsilon of the normalisations.

        Example:
            >>> m = nn.Linear(2, 3)
            >>> from fjax.nn.utils.spectral_norm import SpectralNorm
            >>> fn = SpectralNorm.apply(m, "weight", 1, 0, 1e-12)
            >>> sorted(m.state_dict())
            ['bias', 'weight_orig', 'weight_u', 'weight_v']
        """
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    """Spectral normalization by a forward pre-hook (torch's older API): ``w = w_orig / sigma(w_orig)``.

    ``sigma`` is estimated by power iteration with the buffers ``<name>_u`` and ``<name>_v``,
    ``n_power_iterations`` steps before each forward in training mode (none in eval mode).
    State dict keys are torch's: ``<name>_orig``, ``<name>_u``, ``<name>_v``. torch's state-dict
    version metadata (for checkpoints older than torch 1.1) is not kept.

    Args:
        module: the module.
        name: the parameter's name.
        n_power_iterations: power iterations per forward in training mode.
        eps: the epsilon of the normalisations.
        dim: the output dim (default 0, 1 for ConvTranspose).

    Returns:
        ``module``.

    Example:
        >>> m = nn.utils.spectral_norm(nn.Linear(4, 3))
        >>> sorted(m.state_dict()), m.weight_u.shape
        (['bias', 'weight_orig', 'weight_u', 'weight_v'], fjax.Size([3]))
    """
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``module.<name>`` becomes a parameter holding its normalized value.

    Args:
        module: the module.
        name: the parameter's name.

    Returns:
        ``module``.

    Example:
        >>> m = nn.utils.remove_spectral_norm(nn.utils.spectral_norm(nn.Linear(4, 3)))
        >>> sorted(m.state_dict())
        ['bias', 'weight']
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
