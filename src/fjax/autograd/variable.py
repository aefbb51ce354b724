"""torch's legacy ``torch.autograd.Variable``: since torch 0.4 a Variable is a Tensor."""

from __future__ import annotations

from ..tensor import Tensor, _Above


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data, requires_grad: bool = False, volatile: bool = False):
        t = data.detach() if isinstance(data, Tensor) else _Above.creation.as_tensor(data)
        return t.requires_grad_(requires_grad) if requires_grad else t


class Variable(metaclass=_VariableMeta):
    """``Variable(tensor, requires_grad=False)``: the tensor's values as a new leaf (sharing its
    storage) that requires grad if asked; ``isinstance(t, Variable)`` holds for every Tensor.
    ``volatile`` is accepted and ignored, as in torch.

    Example::

        >>> v = fjax.autograd.Variable(fjax.tensor([1.0, 2.0]), requires_grad=True)
        >>> (v * v).sum().backward()
        >>> v.grad, isinstance(v, fjax.autograd.Variable)
        (tensor([2., 4.], dtype=fjax.float32), True)
    """
