"""``fjax.autograd.graph``: torch.autograd.graph's (and oneflow.autograd.graph's) public pieces.

``Node`` is the type of ``Tensor.grad_fn``. ``saved_tensors_hooks`` packs the input tensors an
op's backward reads when the op is recorded and unpacks them (rebuilding the op's VJP) when the
backward runs; ``save_on_cpu`` is such a pair that parks them in host memory.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from .engine import Node
from .grad_mode import _state as _grad_state

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]

_state = threading.local()


def _disabled_message():
    stack = getattr(_state, "disabled", None)
    return stack[-1] if stack else None


class saved_tensors_hooks:
    """Pack/unpack hooks for the tensors a backward saves (torch's and OneFlow's context manager).

    While it is active, every op recorded for backward hands each input tensor its gradient reads
    to ``pack_hook`` (whatever that returns is kept instead of the tensor), and the backward gives
    it back through ``unpack_hook``, which must return a tensor with the saved value. The innermost
    active pair applies. Which tensors an op saves follows its JAX VJP (inputs), which can differ
    from torch's choice (torch's tanh saves its output). Not applied inside nn.Graph and functional
    transforms (XLA keeps what it needs there) nor to ``ctx.save_for_backward`` of a custom
    ``autograd.Function``.

    Example::

        >>> packed = []
        >>> def pack(t):
        ...     packed.append(t.shape)
        ...     return t.numpy()
        >>> x = fjax.tensor([1.0, 2.0], requires_grad=True)
        >>> with fjax.autograd.graph.saved_tensors_hooks(pack, fjax.from_numpy):
        ...     y = (x * x).sum()
        >>> y.backward()
        >>> x.grad.tolist(), len(packed) > 0
        ([2.0, 4.0], True)
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
        _grad_state.saved_hooks = (*_grad_state.saved_hooks, (self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc) -> None:
        _grad_state.saved_hooks = _grad_state.saved_hooks[:-1]


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors a backward saves in host memory until the backward needs them (torch's
    ``save_on_cpu``): each is copied to the CPU when saved and back to its device when used.
    ``pin_memory`` is accepted (JAX manages host buffers).

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
        super().__init__(lambda t: (t.device, t.cpu()), lambda saved: saved[1].to(saved[0]))


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
