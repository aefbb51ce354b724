"""``fjax.autograd.graph``: torch.autograd.graph's (and oneflow.autograd.graph's) public pieces.

``Node`` is the type of ``Tensor.grad_fn``. The tape keeps each op's backward residuals inside
its JAX VJP, not as saved Tensors, so hooks on saved tensors (``saved_tensors_hooks``) cannot
run: entering one raises NotImplementedError. ``save_on_cpu`` is the identity where arrays
already live in host memory (the CPU backend) and raises elsewhere.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import jax

from .engine import Node

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]

_state = threading.local()


def _disabled_message():
    stack = getattr(_state, "disabled", None)
    return stack[-1] if stack else None


class saved_tensors_hooks:
    """Pack/unpack hooks for the tensors a backward saves (torch's and OneFlow's context manager).

    fjax's tape stores each op's residuals inside the op's JAX VJP rather than as saved Tensors,
    so there is nothing to hand ``pack_hook``: entering the context raises NotImplementedError
    (inside ``disable_saved_tensors_hooks`` a RuntimeError with its message, as torch).

    Example::

        >>> hooks = fjax.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        >>> try:
        ...     with hooks:
        ...         pass
        ... except NotImplementedError as e:
        ...     print(str(e)[:44])
        saved_tensors_hooks: fjax's tape keeps an op
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError(
                f"saved_tensors_hooks: pack_hook and unpack_hook must be callables, got "
                f"{type(pack_hook).__name__} and {type(unpack_hook).__name__}"
            )
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        message = _disabled_message()
        if message is not None:
            raise RuntimeError(message)
        raise NotImplementedError(
            "saved_tensors_hooks: fjax's tape keeps an op's backward residuals inside its JAX VJP, "
            "not as saved Tensors, so pack/unpack hooks cannot be applied to them; for activation "
            "checkpointing use fjax.utils.checkpoint.checkpoint"
        )

    def __exit__(self, *exc) -> None:
        return None


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors a backward saves in host memory (torch's ``save_on_cpu``).

    On the CPU backend every array already lives in host memory, so this is the identity:
    values and gradients are those of running without it. On an accelerator it would need
    hooks on saved tensors, which fjax's tape does not have: entering raises NotImplementedError.
    ``pin_memory`` and ``device_type`` are accepted.

    Example::

        >>> x = fjax.ones(3, requires_grad=True)
        >>> with fjax.autograd.graph.save_on_cpu(pin_memory=True):
        ...     y = (x * x).sum()
        >>> y.backward()
        >>> x.grad.tolist()
        [2.0, 2.0, 2.0]
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        self.pin_memory, self.device_type = pin_memory, device_type
        super().__init__(lambda t: t, lambda t: t)

    def __enter__(self):
        message = _disabled_message()
        if message is not None:
            raise RuntimeError(message)
        if jax.default_backend() != "cpu":
            raise NotImplementedError(
                f"save_on_cpu: on the {jax.default_backend()} backend moving saved tensors to host memory "
                "needs hooks on saved tensors, which fjax's tape does not have (its residuals live inside "
                "JAX VJPs); use fjax.utils.checkpoint.checkpoint(..., use_reentrant=True) to save memory"
            )
        return self


class disable_saved_tensors_hooks:
    """Within it, entering ``saved_tensors_hooks`` (or ``save_on_cpu``) raises a RuntimeError
    with ``error_message`` (torch's ``disable_saved_tensors_hooks``).

    Example::

        >>> graph = fjax.autograd.graph
        >>> try:
        ...     with graph.disable_saved_tensors_hooks("no hooks here"), graph.save_on_cpu():
        ...         pass
        ... except RuntimeError as e:
        ...     print(e)
        no hooks here
    """

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        stack = getattr(_state, "disabled", None)
        if stack is None:
            stack = _state.disabled = []
        stack.append(self.error_message)
        return self

    def __exit__(self, *exc) -> None:
        _state.disabled.pop()
