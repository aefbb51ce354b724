"""Parameter: a leaf Tensor that a Module registers and optimizers update."""

from __future__ import annotations

from ..tensor import Tensor


class Parameter(Tensor):
    """``nn.Parameter(tensor, requires_grad=True)``: shares the tensor's values, as a new leaf.

    A Tensor subclass: assigning one as a Module attribute registers it, so it appears in
    ``parameters()`` and ``state_dict()``. It requires grad by default.

    Args:
        data: the tensor (or data for ``fjax.tensor``) whose values it shares (default None: an empty tensor).
        requires_grad: whether the parameter requires grad (default True).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., 2.]))
        >>> w
        Parameter containing:
        tensor([1., 2.], dtype=fjax.float32, requires_grad=True)
        >>> w.is_leaf, isinstance(w, fjax.Tensor)
        (True, True)
        >>> nn.Parameter(fjax.zeros(2), requires_grad=False).requires_grad
        False
    """

    def __init__(self, data=None, requires_grad: bool = True):
        from ..creation import tensor

        if data is None:
            data = tensor([])
        elif not isinstance(data, Tensor):
            data = tensor(data)
        Tensor._init(self, None)
        self._share(data)  # torch: the parameter shares the tensor's storage
        self._vc = data._vc
        self.requires_grad = requires_grad

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        import numpy as np

        return (Parameter, (Tensor._wrap(np.asarray(self._data)), self.requires_grad))
