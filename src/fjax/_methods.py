"""Tensor methods and Python operators, bound from the op table."""

from __future__ import annotations

from .dispatch import functions as F
from .errors import OpError
from .ops._registry import OPS
from .tensor import Tensor


def _shape_args(args):
    """torch accepts ``x.view(2, 3)`` and ``x.view((2, 3))``."""
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def _varargs_methods():
    def view(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
            return self.to(shape[0])  # view(dtype)
        return F.view(self, _shape_args(shape))

    def reshape(self, *shape):
        return F.reshape(self, _shape_args(shape))

    def permute(self, *dims):
        return F.permute(self, _shape_args(dims))

    def expand(self, *sizes):
        return F.expand(self, _shape_args(sizes))

    def repeat(self, *sizes):
        return F.repeat(self, _shape_args(sizes))

    def tile(self, *dims):
        return F.tile(self, _shape_args(dims))

    def flip(self, *dims):
        return F.flip(self, _shape_args(dims))

    return dict(view=view, reshape=reshape, permute=permute, expand=expand, repeat=repeat, tile=tile, flip=flip)


def _operators():
    def binary(name, reflected=False):
        fn = getattr(F, name)
        if reflected:
            return lambda self, other: fn(other, self)
        return fn  # the op itself: ``self`` is its first argument

    def inplace(name):
        fn = getattr(F, name)

        def method(self, *args, **kwargs):
            try:
                result = fn(self, *args, **kwargs)
            except OpError as err:
                raise OpError(f"{name}_: {err}") from None
            return self._set_(result, name + "_")

        return method

    ops = {
        "__add__": binary("add"),
        "__radd__": binary("add", True),
        "__sub__": binary("sub"),
        "__rsub__": binary("sub", True),
        "__mul__": binary("mul"),
        "__rmul__": binary("mul", True),
        "__truediv__": binary("div"),
        "__rtruediv__": binary("div", True),
        "__neg__": F.neg,
        "__pos__": lambda self: self,
    }
    optional = {
        "__floordiv__": ("floor_divide", False),
        "__rfloordiv__": ("floor_divide", True),
        "__mod__": ("remainder", False),
        "__rmod__": ("remainder", True),
        "__pow__": ("pow", False),
        "__rpow__": ("pow", True),
        "__matmul__": ("matmul", False),
        "__rmatmul__": ("matmul", True),
        "__and__": ("bitwise_and", False),
        "__rand__": ("bitwise_and", True),
        "__or__": ("bitwise_or", False),
        "__ror__": ("bitwise_or", True),
        "__xor__": ("bitwise_xor", False),
        "__rxor__": ("bitwise_xor", True),
        "__eq__": ("eq", False),
        "__ne__": ("ne", False),
        "__lt__": ("lt", False),
        "__le__": ("le", False),
        "__gt__": ("gt", False),
        "__ge__": ("ge", False),
    }
    for dunder, (name, reflected) in optional.items():
        if hasattr(F, name):
            ops[dunder] = binary(name, reflected)
    if hasattr(F, "abs"):
        ops["__abs__"] = lambda self: F.abs(self)
    if hasattr(F, "bitwise_not"):
        ops["__invert__"] = lambda self: F.bitwise_not(self)
    for dunder, name in [
        ("__iadd__", "add"),
        ("__isub__", "sub"),
        ("__imul__", "mul"),
        ("__itruediv__", "div"),
        ("__ifloordiv__", "floor_divide"),
        ("__imod__", "remainder"),
        ("__ipow__", "pow"),
        ("__iand__", "bitwise_and"),
        ("__ior__", "bitwise_or"),
        ("__ixor__", "bitwise_xor"),
    ]:
        if hasattr(F, name):
            ops[dunder] = inplace(name)
    # torch's in-place methods: x.add_(y), x.clamp_(min=0), x.zero_(), x.fill_(v) ...
    for name, op in OPS.items():
        if op.method and not name.startswith("_"):
            ops[name + "_"] = inplace(name)
    return ops


def _extremum(reduce_name: str, pairwise_name: str):
    """torch.max/min: a reduction, or the elementwise maximum/minimum when given a tensor."""
    reduce, pairwise = getattr(F, reduce_name), getattr(F, pairwise_name)

    def extremum(input, *args, **kwargs):
        other = args[0] if args else kwargs.get("other")
        if isinstance(other, Tensor):
            return pairwise(input, other)
        return reduce(input, *args, **kwargs)

    extremum.__name__ = reduce_name
    extremum.__doc__ = reduce.__doc__
    return extremum


def einsum(equation: str, *operands):
    """``einsum("ij,jk->ik", a, b)``; operands may also come as one list, as torch allows."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return F.einsum(equation, list(operands))


def _where_method(self, condition, other):
    """``x.where(condition, y)``: ``x`` where ``condition`` holds, else ``y``."""
    return F.where(condition, self, other)


max = _extremum("max", "maximum")  # noqa: A001 - torch's name
min = _extremum("min", "minimum")  # noqa: A001 - torch's name


def install() -> None:
    """Bind every op-table method, the varargs shape methods and the operators onto Tensor."""
    for name, op in OPS.items():
        if op.method and not hasattr(Tensor, name):
            setattr(Tensor, name, getattr(F, name))
    for name, fn in {**_varargs_methods(), **_operators()}.items():
        setattr(Tensor, name, fn)
    Tensor.max, Tensor.min = max, min
    Tensor.where = _where_method

    def fill_(self, value):
        from .creation import full_like

        return self._set_(full_like(self, value.item() if isinstance(value, Tensor) else value), "fill_")

    def zero_(self):
        return fill_(self, 0)

    Tensor.fill_ = fill_
    Tensor.zero_ = zero_
