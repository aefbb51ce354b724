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


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` is True for the tensors ``Buffer(...)`` marked, as torch's."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and bool(getattr(instance, "_is_buffer", False))
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A marker for a Tensor that should be a module buffer: ``module.x = nn.Buffer(t)``
    registers ``x`` as a buffer (non-persistent with ``persistent=False``), as ``register_buffer``.
    ``Buffer(t)`` returns ``t`` detached (a plain Tensor), marked.

    Args:
        data: the buffer's tensor (default None: an empty tensor).
        persistent: whether ``state_dict`` includes it (default True).

    Example::

        >>> m = nn.Module()
        >>> m.steps = nn.Buffer(fjax.zeros(1))
        >>> m.cache = nn.Buffer(fjax.zeros(1), persistent=False)
        >>> [name for name, _ in m.named_buffers()], list(m.state_dict())
        (['steps', 'cache'], ['steps'])
    """

    def __new__(cls, data=None, *, persistent: bool = True):
        from ..creation import empty

        if data is None:
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """What an uninitialized parameter or buffer of a lazy module does: hold no values until
    ``materialize(shape)`` gives it a shape and turns it into ``cls_to_become``."""

    __slots__ = ()
    cls_to_become = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor ``shape`` (uninitialized values; ``device``/``dtype`` default to its own) and
        turn it into a plain Parameter (or Tensor).

        Args:
            shape: the shape to take.
            device: the device (default None: the one given at construction).
            dtype: the dtype (default None: the one given at construction).

        Example:
            >>> p = nn.UninitializedParameter()
            >>> p.materialize((2, 3))
            >>> type(p).__name__, tuple(p.shape)
            ('Parameter', (2, 3))
        """
        from ..creation import empty

        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer (of a lazy module).

    Args:
        param: the tensor to check.

    Example:
        >>> from fjax.nn.parameter import is_lazy
        >>> is_lazy(nn.UninitializedParameter()), is_lazy(nn.Parameter(fjax.ones(1)))
        (True, False)
    """
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter without a shape yet, as lazy modules (``nn.LazyLinear``...) create: the first
    forward call materializes it into a regular :class:`Parameter`.

    Args:
        requires_grad: whether the parameter will require grad (default True).
        device: the device it will be materialized on (default None: the default device).
        dtype: the dtype it will have (default None: the default float dtype).

    Example::

        >>> p = nn.UninitializedParameter()
        >>> p
        <UninitializedParameter>
        >>> p.materialize(3)
        >>> p.shape
        fjax.Size([3])
    """

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        from ..creation import empty

        super().__init__(empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer without a shape yet, as lazy modules (``nn.LazyBatchNorm1d``...) create: the first
    forward call materializes it into a regular Tensor.

    Args:
        requires_grad: whether the buffer will require grad (default False).
        device: the device it will be materialized on (default None: the default device).
        dtype: the dtype it will have (default None: the default float dtype).
        persistent: whether the buffer will be part of ``state_dict`` (default True).

    Example::

        >>> b = nn.UninitializedBuffer()
        >>> b.materialize((2,))
        >>> type(b).__name__, tuple(b.shape)
        ('Tensor', (2,))
    """

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True) -> None:
        from ..creation import empty

        Tensor._init(self, None)
        data = empty(0, device=device, dtype=dtype)
        self._share(data)
        self._vc = data._vc
        self.requires_grad = requires_grad
        self.persistent = persistent
        self._is_buffer = True
