"""Tensor methods and Python operators, bound from the op table."""

from __future__ import annotations

import inspect

import numpy as np

from .creation import size_keyword
from .dispatch import functions as F
from .errors import OpError
from .ops._registry import ALIASES, OPS
from .tensor import Tensor


def _shape_args(args):
    """torch accepts ``x.view(2, 3)`` and ``x.view((2, 3))``."""
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def _kw_shape(name, args, kwargs, keys):
    """The sizes given positionally, as one tuple, or by torch's/OneFlow's keyword (``x.view(size=...)``,
    ``x.reshape(shape=...)``, ``x.permute(dims=...)``)."""
    if not kwargs:
        return _shape_args(args)
    if args or len(kwargs) != 1 or next(iter(kwargs)) not in keys:
        raise TypeError(f"{name}() takes its sizes positionally or as {'= or '.join(keys)}=, got {args} and {kwargs}")
    value = next(iter(kwargs.values()))
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _varargs_methods():
    def view(self, *shape, **kwargs):
        """A view with another shape (sizes as arguments or one tuple), or ``view(dtype)``: a cast.

        Args:
            shape: the new sizes; one of them may be -1.

        Example:
            >>> fjax.arange(6).view(2, 3).shape, fjax.arange(6).view((3, -1)).shape
            (fjax.Size([2, 3]), fjax.Size([3, 2]))
        """
        if "dtype" in kwargs and not shape and len(kwargs) == 1:
            shape = (kwargs.pop("dtype"),)
        if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
            return self.to(shape[0])  # view(dtype)
        return F.view(self, _kw_shape("view", shape, kwargs, ("size", "shape")))

    def reshape(self, *shape, **kwargs):
        """The same values in another shape: a view where the strides allow, else a copy.

        Args:
            shape: the new sizes, as arguments or one tuple; one of them may be -1.

        Example:
            >>> fjax.arange(6).reshape(3, -1).shape
            fjax.Size([3, 2])
        """
        return F.reshape(self, _kw_shape("reshape", shape, kwargs, ("shape",)))

    def permute(self, *dims, **kwargs):
        """A view with the dimensions reordered.

        Args:
            dims: the new order of the dimensions, as arguments or one tuple.

        Example:
            >>> fjax.ones(2, 3, 4).permute(2, 0, 1).shape
            fjax.Size([4, 2, 3])
        """
        return F.permute(self, _kw_shape("permute", dims, kwargs, ("dims",)))

    def expand(self, *size, **kwargs):
        """A view with size-1 dimensions broadcast to ``size`` (-1 keeps a size), without copying.

        Args:
            size: the new sizes, as arguments or one tuple.

        Example:
            >>> fjax.arange(3).expand(2, -1)
            tensor([[0, 1, 2],
                    [0, 1, 2]], dtype=fjax.int64)
        """
        return F.expand(self, _kw_shape("expand", size, kwargs, ("size",)))

    def repeat(self, *repeats, **kwargs):
        """The tensor tiled ``repeats`` times along each dimension (a copy).

        Args:
            repeats: the number of copies per dimension, as arguments or one tuple.

        Example:
            >>> fjax.arange(3).repeat(2)
            tensor([0, 1, 2, 0, 1, 2], dtype=fjax.int64)
        """
        return F.repeat(self, _kw_shape("repeat", repeats, kwargs, ("repeats",)))

    def tile(self, *dims, **kwargs):
        """The tensor tiled along each dimension, like ``repeat`` (``dims`` shorter than ``ndim`` pads with 1s).

        Args:
            dims: the number of copies per dimension, as arguments or one tuple.

        Example:
            >>> fjax.arange(2).tile(2, 2)
            tensor([[0, 1, 0, 1],
                    [0, 1, 0, 1]], dtype=fjax.int64)
        """
        return F.tile(self, _kw_shape("tile", dims, kwargs, ("dims",)))

    def flip(self, *dims, **kwargs):
        """The values reversed along the given dimensions (as arguments, one tuple or ``dims=``).

        Args:
            dims: the dimensions to reverse.

        Example:
            >>> fjax.arange(4).flip(0)
            tensor([3, 2, 1, 0], dtype=fjax.int64)
        """
        if kwargs.keys() - {"dims"} or (dims and kwargs):
            raise TypeError(f"flip() takes the dims positionally or as dims=, got {dims} and {sorted(kwargs)}")
        return F.flip(self, _shape_args(dims) if dims else tuple(kwargs["dims"]))

    return dict(view=view, reshape=reshape, permute=permute, expand=expand, repeat=repeat, tile=tile, flip=flip)


# torch's public in-place Tensor methods, ``[n for n in dir(torch.Tensor) if n.endswith("_") and not
# n.startswith("_")]`` under torch 2.13: an op-table method ``X`` gets an in-place ``X_`` only when torch has one.
_TORCH_INPLACE = frozenset(
    (
        "abs_ absolute_ acos_ acosh_ add_ addbmm_ addcdiv_ addcmul_ addmm_ addmv_ addr_ apply_ arccos_ arccosh_ "
        "arcsin_ arcsinh_ arctan2_ arctan_ arctanh_ as_strided_ asin_ asinh_ atan2_ atan_ atanh_ baddbmm_ bernoulli_ "
        "bitwise_and_ bitwise_left_shift_ bitwise_not_ bitwise_or_ bitwise_right_shift_ bitwise_xor_ cauchy_ ceil_ "
        "clamp_ clamp_max_ clamp_min_ clip_ conj_physical_ copy_ copysign_ cos_ cosh_ cumprod_ cumsum_ deg2rad_ "
        "detach_ digamma_ div_ divide_ eq_ erf_ erfc_ erfinv_ exp2_ exp_ expm1_ exponential_ fill_ fill_diagonal_ "
        "fix_ float_power_ floor_ floor_divide_ fmod_ frac_ gcd_ ge_ geometric_ greater_ greater_equal_ gt_ "
        "heaviside_ hypot_ i0_ igamma_ igammac_ index_add_ index_copy_ index_fill_ index_put_ index_reduce_ lcm_ "
        "ldexp_ le_ lerp_ less_ less_equal_ lgamma_ log10_ log1p_ log2_ log_ log_normal_ logical_and_ logical_not_ "
        "logical_or_ logical_xor_ logit_ lt_ map2_ map_ masked_fill_ masked_scatter_ mul_ multiply_ mvlgamma_ "
        "nan_to_num_ ne_ neg_ negative_ nextafter_ normal_ not_equal_ polygamma_ pow_ put_ rad2deg_ random_ "
        "reciprocal_ relu_ remainder_ renorm_ requires_grad_ resize_ resize_as_ resize_as_sparse_ round_ rsqrt_ "
        "scatter_ scatter_add_ scatter_reduce_ set_ sgn_ share_memory_ sigmoid_ sign_ sin_ sinc_ sinh_ sparse_resize_ "
        "sparse_resize_and_clear_ sqrt_ square_ squeeze_ sub_ subtract_ swapaxes_ swapdims_ t_ tan_ tanh_ transpose_ "
        "tril_ triu_ true_divide_ trunc_ uniform_ unsqueeze_ xlogy_ zero_"
    ).split()
)

# In-place view ops: they change the tensor's geometry, not its values (``Tensor._set_view_``), with the
# arguments and input of their docstring's example.
_INPLACE_VIEW_EXAMPLES = {
    "t": ("", "fjax.ones(2, 3)"),
    "transpose": ("0, 1", "fjax.ones(2, 3)"),
    "swapdims": ("0, 1", "fjax.ones(2, 3)"),
    "swapaxes": ("0, 1", "fjax.ones(2, 3)"),
    "unsqueeze": ("0", "fjax.ones(2, 3)"),
    "squeeze": ("", "fjax.ones(2, 1, 3)"),
}

# Op-table methods torch's Tensor does not have as methods.
_NOT_METHODS = {"einsum"}

# The arguments of the example in an in-place method's docstring, run on ``x = fjax.tensor([0.25, 0.5])``
# or on the input ``_INPLACE_EXAMPLE_INPUTS`` gives; the in-place methods of other ops point at the op's own
# example.
_INPLACE_EXAMPLE_ARGS = {
    **dict.fromkeys(
        (
            "abs acos asin asinh atan atanh ceil conj_physical cos cosh deg2rad digamma erf erfc erfinv exp exp2 expm1 "
            "floor frac i0 lgamma log log10 log1p log2 logical_not logit nan_to_num neg rad2deg reciprocal relu round "
            "rsqrt sgn sigmoid sign sin sinc sinh sqrt square tan tanh trunc"
        ).split(),
        "",
    ),
    **dict.fromkeys(
        (
            "add atan2 clamp clamp_max clamp_min clip copysign div eq floor_divide fmod ge gt heaviside hypot "
            "igamma igammac ldexp le logical_and logical_or logical_xor lt mul ne nextafter pow remainder sub "
            "true_divide xlogy"
        ).split(),
        "fjax.tensor([2.0, 0.75])",
    ),
    **dict.fromkeys(("cumsum", "cumprod"), "0"),
    **dict.fromkeys(("addcmul", "addcdiv"), "fjax.ones(2), fjax.ones(2)"),
    **dict.fromkeys(("index_add", "index_copy", "scatter", "scatter_add"), "0, fjax.tensor([1]), fjax.ones(1)"),
    "float_power": "2",
    "index_fill": "0, fjax.tensor([1]), 0.0",
    "index_put": "(fjax.tensor([1]),), fjax.ones(1)",
    "lerp": "fjax.ones(2), 0.5",
    "masked_fill": "fjax.tensor([True, False]), 0.0",
    "masked_scatter": "fjax.tensor([True, False]), fjax.tensor([9.0])",
    "put": "fjax.tensor([1]), fjax.tensor([9.0])",
    "mvlgamma": "1",
    "renorm": "2, 0, 1.0",
    **dict.fromkeys(("acosh", "bitwise_not", "tril", "triu"), ""),
    **dict.fromkeys(("bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm"), "fjax.tensor([8, 4])"),
    **dict.fromkeys(("bitwise_left_shift", "bitwise_right_shift"), "fjax.tensor([1, 2])"),
    "addmm": "fjax.ones(2, 3), fjax.ones(3, 2)",
    "addmv": "fjax.ones(2, 3), fjax.ones(3)",
    "addr": "fjax.ones(2), fjax.ones(2)",
    "addbmm": "fjax.ones(4, 2, 3), fjax.ones(4, 3, 2)",
    "baddbmm": "fjax.ones(4, 2, 3), fjax.ones(4, 3, 2)",
    "index_reduce": "0, fjax.tensor([1]), fjax.ones(1), 'prod'",
    "scatter_reduce": "0, fjax.tensor([1]), fjax.ones(1), 'sum'",
}
_INPLACE_EXAMPLE_INPUTS = {
    "acosh": "fjax.tensor([1.0, 2.0])",
    **dict.fromkeys(
        "bitwise_and bitwise_or bitwise_xor bitwise_not gcd lcm bitwise_left_shift bitwise_right_shift".split(),
        "fjax.tensor([12, 10])",
    ),
    **dict.fromkeys(("tril", "triu", "addmm", "addr", "addbmm"), "fjax.ones(2, 2)"),
    "addmv": "fjax.ones(2)",
    "baddbmm": "fjax.ones(4, 2, 2)",
}


def _inplace_doc(name: str) -> str:
    """The docstring of ``Tensor.<name>_``: what it does, and an example where one is listed above."""
    doc = f"In-place :func:`fjax.{name}`: ``x.{name}_(...)`` writes ``x.{name}(...)`` into ``x`` and returns ``x``."
    op = ALIASES.get(name, name)  # an alias's example is its op's
    args = _INPLACE_EXAMPLE_ARGS.get(op)
    if args is None:
        return doc + f"\n\nSee :func:`fjax.{name}` for the arguments and an example."
    return (
        doc + f"\n\nSee :func:`fjax.{name}` for the arguments.\n\nExample:\n"
        f"    >>> x = {_INPLACE_EXAMPLE_INPUTS.get(op, 'fjax.tensor([0.25, 0.5])')}\n"
        f"    >>> expected = x.{name}({args})\n"
        f"    >>> x.{name}_({args}) is x, bool((x == expected).all())\n"
        "    (True, True)"
    )


def _inplace_view_doc(name: str) -> str:
    """The docstring of the in-place view op ``Tensor.<name>_``, with an example."""
    args, example_input = _INPLACE_VIEW_EXAMPLES[name]
    return (
        f"In-place :func:`fjax.{name}`: ``x.{name}_(...)`` makes ``x`` the view ``x.{name}(...)`` of its own "
        "storage and returns ``x``.\n\n"
        "Only the shape and strides change: ``x`` keeps aliasing the same storage, and its ``grad_fn`` "
        f"records the view op, as torch's does. See :func:`fjax.{name}` for the arguments.\n\n"
        "Example:\n"
        f"    >>> x = {example_input}\n"
        f"    >>> expected = x.{name}({args}).shape\n"
        f"    >>> x.{name}_({args}) is x, x.shape == expected\n"
        "    (True, True)"
    )


def as_strided_(self, size, stride, storage_offset=None) -> Tensor:
    """Make ``self`` the view ``self.as_strided(size, stride, storage_offset)`` of its own storage, in place.

    Args:
        size: the new sizes.
        stride: the new strides, in elements.
        storage_offset: the first element's offset in the storage; ``self``'s by default.

    Example:
        >>> x = fjax.arange(4)
        >>> x.as_strided_((2, 2), (1, 2)) is x, x
        (True, tensor([[0, 2],
                [1, 3]], dtype=fjax.int64))
    """
    return self._set_view_(self.as_strided(size, stride, storage_offset), "as_strided_")


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

        method.__signature__ = inspect.signature(fn)  # the op's parameters, ``input`` as self
        method.__doc__ = _inplace_doc(name)
        return method

    def inplace_view(name):
        fn = getattr(F, name)

        def method(self, *args, **kwargs):
            return self._set_view_(fn(self, *args, **kwargs), name + "_")

        method.__signature__ = inspect.signature(fn)
        method.__doc__ = _inplace_view_doc(name)
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
        "__div__": binary("div"),
        "__rdiv__": binary("div", True),
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
        "__lshift__": ("bitwise_left_shift", False),
        "__rlshift__": ("bitwise_left_shift", True),
        "__rshift__": ("bitwise_right_shift", False),
        "__rrshift__": ("bitwise_right_shift", True),
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
        ("__ilshift__", "bitwise_left_shift"),
        ("__irshift__", "bitwise_right_shift"),
    ]:
        if hasattr(F, name):
            ops[dunder] = inplace(name)
    # torch's in-place methods: x.add_(y), x.clamp_(min=0), x.t_(), x.unsqueeze_(0) ..., and those of
    # the aliases: x.absolute_(), x.clip_(0, 1), x.swapdims_(0, 1)
    for name, op in _named_ops():
        if op.method and name + "_" in _TORCH_INPLACE:
            view = name in _INPLACE_VIEW_EXAMPLES or op.name in _INPLACE_VIEW_EXAMPLES
            ops[name + "_"] = inplace_view(name) if view else inplace(name)
    return ops


def _named_ops():
    """(name, op) for every op-table entry and each of its aliases (``("absolute", OPS["abs"])``)."""
    for name, op in OPS.items():
        yield name, op
        for alias in op.aliases:
            yield alias, op


def _extremum(reduce_name: str, pairwise_name: str):
    """torch.max/min: a reduction, or the elementwise maximum/minimum when given a tensor."""
    reduce, pairwise = getattr(F, reduce_name), getattr(F, pairwise_name)

    def extremum(input, dim=None, keepdim=False, *, other=None):
        if isinstance(dim, Tensor):  # max(input, other): torch's elementwise overload
            dim, other = None, dim
        if other is not None:
            return pairwise(input, other)
        return reduce(input, dim, keepdim)

    extremum.__name__ = reduce_name
    extremum.__doc__ = reduce.__doc__
    return extremum


def einsum(equation: str, *operands):
    """Einstein summation: multiply the operands along the subscripts that ``equation`` gives
    them and sum over the subscripts missing from its output (after ``->``; without an arrow the
    output keeps the subscripts that appear once, in alphabetical order).

    Matrix products, traces, outer products, transposes and batched contractions are all one
    ``einsum``. The operands may also be passed as one list, as torch allows; they must share a
    dtype.

    Example::

        >>> a = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fjax.einsum("ij,jk->ik", a, a)
        tensor([[ 7., 10.],
                [15., 22.]], dtype=fjax.float32)
        >>> fjax.einsum("ii", a)
        tensor(5., dtype=fjax.float32)
        >>> fjax.einsum("i,j->ij", [fjax.tensor([1, 2]), fjax.tensor([3, 4])])
        tensor([[3, 4],
                [6, 8]], dtype=fjax.int64)
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return F.einsum(equation, list(operands))


def _where_method(self, condition, other):
    """``x.where(condition, y)``: ``x`` where ``condition`` holds, else ``y``.

    Args:
        condition: a boolean tensor, broadcast with ``self``.
        other: the values where ``condition`` is false.

    Example:
        >>> x = fjax.arange(4.)
        >>> x.where(x > 1, 0.0)
        tensor([0., 0., 2., 3.], dtype=fjax.float32)
    """
    return F.where(condition, self, other)


def _split_method(self, split_size, dim=0):
    """``x.split(split_size, dim=0)``: ``fjax.split`` under torch's method parameter name.

    Args:
        split_size: the size of each piece, or a list of sizes.
        dim: the dimension to split.

    Example:
        >>> fjax.arange(5).split(2)
        (tensor([0, 1], dtype=fjax.int64), tensor([2, 3], dtype=fjax.int64), tensor([4], dtype=fjax.int64))
    """
    return F.split(self, split_size, dim)


max = _extremum("max", "maximum")  # noqa: A001 - torch's name
min = _extremum("min", "minimum")  # noqa: A001 - torch's name
max.__doc__ = """The largest value, in one of three forms, as in torch.

``max(input)`` reduces all elements to a 0-d tensor. ``max(input, dim, keepdim=False)`` reduces
along ``dim`` and returns a ``(values, indices)`` pair, the indices (int64) locating each maximum
along ``dim``. ``max(input, other)`` with a tensor ``other`` is ``fjax.maximum``: the elementwise
maximum, with broadcasting and dtype promotion. NaN propagates: a NaN in a reduced slice gives NaN.

Example::

    >>> x = fjax.tensor([[1.0, 5.0], [4.0, 2.0]])
    >>> fjax.max(x)
    tensor(5., dtype=fjax.float32)
    >>> values, indices = fjax.max(x, dim=1)
    >>> values, indices
    (tensor([5., 4.], dtype=fjax.float32), tensor([1, 0], dtype=fjax.int64))
    >>> fjax.max(x, fjax.tensor([3.0, 3.0]))
    tensor([[3., 5.],
            [4., 3.]], dtype=fjax.float32)
"""
min.__doc__ = """The smallest value, in one of three forms, as in torch.

``min(input)`` reduces all elements to a 0-d tensor. ``min(input, dim, keepdim=False)`` reduces
along ``dim`` and returns a ``(values, indices)`` pair, the indices (int64) locating each minimum
along ``dim``. ``min(input, other)`` with a tensor ``other`` is ``fjax.minimum``: the elementwise
minimum, with broadcasting and dtype promotion. NaN propagates: a NaN in a reduced slice gives NaN.

Example::

    >>> x = fjax.tensor([[1.0, 5.0], [4.0, 2.0]])
    >>> fjax.min(x)
    tensor(1., dtype=fjax.float32)
    >>> fjax.min(x, 0, keepdim=True)
    fjax.return_types.min(
    values=tensor([[1., 2.]], dtype=fjax.float32),
    indices=tensor([[0, 1]], dtype=fjax.int64))
    >>> fjax.min(fjax.tensor([1, 7]), fjax.tensor([2.5, 0.5]))
    tensor([1.0000, 0.5000], dtype=fjax.float32)
"""


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of ``input`` is close to the matching element of ``other``, as a
    Python bool: ``fjax.isclose(input, other, rtol, atol, equal_nan).all()``, i.e.
    ``|input - other| <= atol + rtol * |other|`` elementwise after broadcasting. As in torch both
    tensors must have one dtype, and NaN is close to nothing unless ``equal_nan=True``.

    Example::

        >>> a = fjax.tensor([1.0, 2.0, float("nan")])
        >>> fjax.allclose(a, a + 1e-7)
        False
        >>> fjax.allclose(a, a + 1e-7, equal_nan=True)
        True
        >>> fjax.tensor([1.0, 2.0]).allclose(fjax.tensor([1.0, 2.1]), atol=0.2)
        True
    """
    return bool(F.isclose(input, other, rtol=rtol, atol=atol, equal_nan=equal_nan).all())


def equal(input, other) -> bool:
    """Whether ``input`` and ``other`` have the same shape and the same elements, as a Python
    bool (torch.equal). Values are compared after dtype promotion, so ``[1, 2]`` equals
    ``[1.0, 2.0]``; tensors of different shapes are never equal (no broadcasting), and NaN equals
    nothing.

    Example::

        >>> fjax.equal(fjax.tensor([1, 2]), fjax.tensor([1.0, 2.0]))
        True
        >>> fjax.equal(fjax.tensor([1, 2]), fjax.tensor([[1, 2]]))
        False
        >>> fjax.tensor([float("nan")]).equal(fjax.tensor([float("nan")]))
        False
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"equal(): argument 'other' must be Tensor, not {type(other).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(F.eq(input, other).all())


def _new_place(self, arr, device, requires_grad):
    """``arr`` as a tensor on ``device``, or, without one, on the device ``self`` lives on."""
    import jax

    from .creation import _place

    if device is None and not isinstance(self._data, jax.core.Tracer) and not isinstance(arr, jax.core.Tracer):
        devices = self._data.devices()
        if len(devices) == 1:
            arr = jax.device_put(arr, next(iter(devices)))
    return _place(arr, device, requires_grad)


def _new_filled(self, op, size, value, dtype, device, requires_grad):
    import jax.numpy as jnp

    from .creation import _is_meta_device, _np_dtype, _place, _size
    from .device import MetaArray

    dt = _np_dtype(dtype) or self._data.dtype
    if (device is None and self.is_meta) or _is_meta_device(device):  # no values to allocate
        return _place(MetaArray(_size(size, op), dt), None, requires_grad)
    return _new_place(self, jnp.full(_size(size, op), value, dt), device, requires_grad)


@size_keyword
def new_zeros(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros of the given size (ints or one tuple) with ``self``'s dtype and device
    unless ``dtype``/``device`` say otherwise.

    Example::

        >>> x = fjax.tensor([1, 2])
        >>> x.new_zeros(2, 3).dtype
        fjax.int64
        >>> x.new_zeros((2,), dtype=fjax.float32)
        tensor([0., 0.], dtype=fjax.float32)
    """
    return _new_filled(self, "new_zeros", size, 0, dtype, device, requires_grad)


@size_keyword
def new_ones(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones of the given size with ``self``'s dtype and device unless given.

    Example::

        >>> fjax.zeros(1, dtype=fjax.float64).new_ones(2)
        tensor([1., 1.], dtype=fjax.float64)
    """
    return _new_filled(self, "new_ones", size, 1, dtype, device, requires_grad)


@size_keyword
def new_empty(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of the given size with ``self``'s dtype and device unless given, whose values are
    not meant to be read (XLA has no uninitialised memory: fjax fills it with zeros).

    Example::

        >>> fjax.zeros(1).new_empty(2, 2).shape
        fjax.Size([2, 2])
    """
    return _new_filled(self, "new_empty", size, 0, dtype, device, requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``new_empty(size)``: fjax's new tensors are row-major, so ``stride`` is checked for length only.

    Example::

        >>> fjax.zeros(1).new_empty_strided((2, 3), (1, 2)).shape
        fjax.Size([2, 3])
    """
    if len(tuple(stride)) != len(tuple(size)):
        raise OpError(f"new_empty_strided: size {tuple(size)} and stride {tuple(stride)} differ in length")
    return _new_filled(self, "new_empty_strided", (size,), 0, dtype, device, requires_grad)


def resize_(self, *size, memory_format=None) -> Tensor:
    """Give ``self`` the shape ``size`` in place, keeping its elements in row-major order: a smaller
    size keeps the first ones, a larger one appends elements that are not meant to be read (fjax
    writes zeros). While the elements fit in its storage, ``self`` stays a view of it.

    Example::

        >>> x = fjax.arange(6.0)
        >>> x.resize_(2, 2)
        tensor([[0., 1.],
                [2., 3.]], dtype=fjax.float32)
    """
    from .creation import _size
    from .dtypes import check_memory_format
    from .ops.views import contiguous_strides

    check_memory_format("resize_", memory_format)
    size = _size(size, "resize_")
    if self.requires_grad:
        raise RuntimeError("resize_: cannot resize a tensor that requires grad")
    n = int(np.prod(size, dtype=np.int64))
    offset, room = self.storage_offset(), int(self._storage().array.size) - self.storage_offset()
    if self.is_contiguous() and n <= room:
        new = self.as_strided(size, contiguous_strides(size), offset)
    else:
        flat = self.detach().reshape(-1)
        flat = flat[:n] if n <= flat.numel() else F.cat([flat, flat.new_zeros(n - flat.numel())])
        new = flat.reshape(size).clone()
    self._share(new)
    return self


def resize_as_(self, the_template, *, memory_format=None) -> Tensor:
    """``self.resize_(the_template.shape)``.

    Example::

        >>> fjax.zeros(4).resize_as_(fjax.zeros(2, 2)).shape
        fjax.Size([2, 2])
    """
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


def zero_(input) -> Tensor:
    """Fill ``input`` with zeros in place (``torch.zero_(x)`` is ``x.zero_()``).

    Example::

        >>> x = fjax.ones(2)
        >>> _ = fjax.zero_(x)
        >>> x
        tensor([0., 0.], dtype=fjax.float32)
    """
    return input.zero_()


def _histogram_edges(x, bins, lo_hi):
    """The bin edges of one dim of ``x`` (a 1-D jax array): ``bins`` edges given as a tensor, or
    ``bins + 1`` evenly spaced ones over ``lo_hi`` (default the data's extremes, widened by 0.5 each
    side when they are equal, [0, 1] when there is no data)."""
    import jax.numpy as jnp

    from .creation import linspace_array

    if isinstance(bins, Tensor):
        return bins._data.astype(x.dtype), False
    if lo_hi is None:
        lo, hi = (jnp.min(x), jnp.max(x)) if x.size else (jnp.asarray(0.0, x.dtype), jnp.asarray(1.0, x.dtype))
    else:
        lo, hi = (jnp.asarray(v, x.dtype) for v in lo_hi)
    same = lo == hi
    lo, hi = jnp.where(same, lo - 0.5, lo), jnp.where(same, hi + 0.5, hi)
    return linspace_array(lo, hi, int(bins) + 1, x.dtype), True


def _histogram_index(x, edges, linear):
    """Each element's bin (edges[i] <= x < edges[i + 1], the last bin closed) and whether it has one."""
    import jax.numpy as jnp

    n = edges.shape[0] - 1
    if linear:  # torch's arithmetic, then a local search so the bin agrees with the edges
        pos = jnp.floor((x - edges[0]) * n / (edges[-1] - edges[0]))
        pos = jnp.clip(jnp.nan_to_num(pos), 0, n - 1).astype(jnp.int32)
        pos = pos - (x < edges[pos])
        pos = jnp.clip(pos, 0, n - 1)
        pos = pos + ((x >= edges[pos + 1]) & (pos < n - 1))
    else:
        pos = jnp.clip(jnp.searchsorted(edges, x, side="right") - 1, 0, n - 1)
    return pos, (x >= edges[0]) & (x <= edges[-1])


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """The D-dimensional histogram of the points in the rows of ``input`` (shape ``(..., D)``): per dim,
    ``bins`` equal-width bins (an int, or one int per dim) over ``range`` (``[lo0, hi0, lo1, hi1, ...]``,
    default the data's extremes) or the bin edges given as 1-D tensors. Points outside are not counted;
    each point counts ``weight`` (default 1); ``density`` normalizes to a density. No gradient.

    Example::

        >>> h = fjax.histogramdd(fjax.tensor([[0.0, 1.0], [1.0, 2.0], [2.0, 2.0]]), bins=[2, 2])
        >>> h.hist
        tensor([[1., 0.],
                [0., 2.]], dtype=fjax.float32)
    """
    import jax.numpy as jnp

    from .return_types import histogramdd as result

    x = input._data
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"histogramdd: expected a floating point input, got {input.dtype}")
    d = x.shape[-1] if x.ndim else 1
    x = x.reshape(-1, d)
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * d
    if len(per_dim) != d:
        raise ValueError(f"histogramdd: expected {d} bin counts or edge tensors (one per dim), got {len(per_dim)}")
    if range is not None and len(range) != 2 * d:
        raise ValueError(f"histogramdd: range must have {2 * d} numbers (lo, hi per dim), got {list(range)}")
    edges, flat, ok = [], jnp.zeros(x.shape[0], jnp.int32), jnp.ones(x.shape[0], bool)
    for i, b in enumerate(per_dim):
        if not isinstance(b, Tensor) and int(b) <= 0:
            raise ValueError(f"histogramdd: bins must be positive, got {b}")
        e, linear = _histogram_edges(x[:, i], b, None if range is None else range[2 * i : 2 * i + 2])
        pos, inside = _histogram_index(x[:, i], e, linear)
        edges.append(e)
        flat, ok = flat * (e.shape[0] - 1) + pos, ok & inside
    shape = tuple(e.shape[0] - 1 for e in edges)
    w = jnp.ones(x.shape[0], x.dtype) if weight is None else weight._data.reshape(-1).astype(x.dtype)
    hist = jnp.zeros(int(np.prod(shape)), x.dtype).at[flat].add(jnp.where(ok, w, 0)).reshape(shape)
    if density:
        volume = jnp.ones(shape, x.dtype)
        for i, e in enumerate(edges):
            volume = volume * jnp.diff(e).reshape((-1,) + (1,) * (d - i - 1))
        hist = hist / (jnp.sum(hist) * volume)
    return result(Tensor._wrap(hist), tuple(Tensor._wrap(e) for e in edges))


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """The histogram of the elements of ``input``: ``bins`` equal-width bins over ``range`` (default the
    data's extremes) or the bin edges given as a 1-D tensor; returns ``(hist, bin_edges)``. Elements
    outside are not counted, the last bin includes its right edge, each element counts ``weight``
    (default 1), and ``density`` normalizes to a density. No gradient.

    Example::

        >>> fjax.histogram(fjax.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
        fjax.return_types.histogram(
        hist=tensor([0., 2., 1., 0.], dtype=fjax.float32),
        bin_edges=tensor([0.0000, 0.7500, 1.5000, 2.2500, 3.0000], dtype=fjax.float32))
    """
    from .return_types import histogram as result

    out = histogramdd(input.reshape(-1, 1), [bins], range=range, weight=weight, density=density)
    return result(out.hist.reshape(-1), out.bin_edges[0])


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``, with ``self``'s dtype (not the
    value's, as in torch: an int tensor truncates ``2.5`` to 2) and device unless given.

    Example::

        >>> fjax.tensor([1, 2]).new_full((3,), 2.5)
        tensor([2, 2, 2], dtype=fjax.int64)
        >>> fjax.tensor([1.0]).new_full((2,), 7)
        tensor([7., 7.], dtype=fjax.float32)
    """
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _new_filled(self, "new_full", (size,), fill_value, dtype, device, requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (not tracked by autograd), converted to ``self``'s
    dtype and placed on its device unless ``dtype``/``device`` are given.

    Example::

        >>> fjax.tensor([0.5]).new_tensor([1, 2])
        tensor([1., 2.], dtype=fjax.float32)
        >>> fjax.tensor([0]).new_tensor([1.7])
        tensor([1], dtype=fjax.int64)
    """
    from .creation import tensor

    arr = tensor(data, dtype=dtype or self.dtype)._data
    return _new_place(self, arr, device, requires_grad)


def type_as(self, tensor) -> Tensor:
    """``self`` converted to ``tensor``'s dtype (and moved to its device type, cpu or cuda, as
    torch's ``self.type(tensor.type())`` does); ``self`` itself when nothing changes.

    Example::

        >>> x = fjax.tensor([1, 2])
        >>> x.type_as(fjax.zeros(1))
        tensor([1., 2.], dtype=fjax.float32)
        >>> x.type_as(x) is x
        True
    """
    out = self.to(tensor.dtype)
    if tensor.device.type != out.device.type:
        out = out.to(tensor.device)
    return out


def polygamma(self, n) -> Tensor:
    """``fjax.polygamma(n, self)``: the ``n``-th derivative of the digamma function, elementwise.

    Example::

        >>> fjax.tensor([1.0]).polygamma(1)
        tensor([1.6449], dtype=fjax.float32)
    """
    return F.polygamma(n, self)


def sum_to_size(self, *size) -> Tensor:
    """The sum of ``self`` down to ``size``, to which ``self`` must broadcast: leading dims are summed away
    and dims of size 1 in ``size`` are summed with keepdim.

    Example::

        >>> fjax.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]], dtype=fjax.float32)
    """
    size = tuple(_shape_args(size))
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s not in (1, n) for s, n in zip(size, shape[lead:])):
        raise RuntimeError(f"sum_to_size: size {list(size)} is not expandable to size {list(shape)}")
    out = self
    if lead:
        out = F.sum(out, tuple(range(lead)))
    keep = tuple(i for i, (s, n) in enumerate(zip(size, shape[lead:])) if s == 1 and n != 1)
    if keep:
        out = F.sum(out, keep, True)
    return out


def _caster(name, dtype_name):
    def cast(self, memory_format=None) -> Tensor:
        from . import dtypes

        return self.to(getattr(dtypes, dtype_name), memory_format=memory_format)

    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"""``self.to(fjax.{dtype_name})``.

    Example::

        >>> fjax.tensor([1.5]).{name}().dtype
        fjax.{dtype_name}
    """
    return cast


byte, char, short = _caster("byte", "uint8"), _caster("char", "int8"), _caster("short", "int16")
cfloat, cdouble = _caster("cfloat", "complex64"), _caster("cdouble", "complex128")


def chalf(self, memory_format=None) -> Tensor:
    """``self.to(torch.complex32)``: fjax has no complex32.

    Example:
        >>> fjax.ones(2).chalf()
        Traceback (most recent call last):
        ...
        NotImplementedError: Tensor.chalf: fjax has no complex32 dtype
    """
    raise NotImplementedError("Tensor.chalf: fjax has no complex32 dtype")


def broadcast_shapes(*shapes):
    """The shape the given shapes (ints, sequences or Sizes) broadcast to, as torch.broadcast_shapes.

    Example::

        >>> fjax.broadcast_shapes((2, 1), (3,))
        fjax.Size([2, 3])
    """
    import numpy as np

    from .tensor import Size

    norm = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return Size(np.broadcast_shapes(*norm))
    except ValueError as err:
        raise RuntimeError(f"broadcast_shapes: shapes {norm} cannot be broadcast together") from err


# -- torch.Tensor's smaller methods and properties ----------------------------------------------


def _flag_property(name: str, doc: str, fget):
    fget.__name__ = name
    fget.__doc__ = doc
    return property(fget)


def _device_flag(kind: str):
    return _flag_property(
        f"is_{kind}",
        f"""Whether the tensor lives on a {kind} device (torch's ``is_{kind}``).

        Example:
            >>> fjax.ones(2).is_{kind}
            {kind == "cpu"}
        """,
        lambda self: self.device.type == kind,
    )


_PROPERTIES = {
    **{f"is_{kind}": _device_flag(kind) for kind in ("cpu", "mps", "xla", "xpu")},
    "is_nested": _flag_property(
        "is_nested",
        """Whether this is a nested (jagged) tensor: never, fjax has no nested tensors.

        Example:
            >>> fjax.ones(2).is_nested
            False
        """,
        lambda self: False,
    ),
    "itemsize": _flag_property(
        "itemsize",
        """The size of one element in bytes (``element_size()``).

        Example:
            >>> fjax.ones(2).itemsize, fjax.ones(2, dtype=fjax.int16).itemsize
            (4, 2)
        """,
        lambda self: self.element_size(),
    ),
    "nbytes": _flag_property(
        "nbytes",
        """The number of bytes the tensor's elements take: ``numel() * itemsize``.

        Example:
            >>> fjax.ones(2, 3).nbytes
            24
        """,
        lambda self: self.numel() * self.element_size(),
    ),
    "name": _flag_property(
        "name",
        """The tensor's name: None, as for every torch tensor outside named-tensor code.

        Example:
            >>> fjax.ones(2).name is None
            True
        """,
        lambda self: None,
    ),
    "output_nr": _flag_property(
        "output_nr",
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf), as torch's ``output_nr``.

        Example:
            >>> a, b = fjax.ones(4, requires_grad=True).split(2)
            >>> a.output_nr, b.output_nr
            (0, 1)
        """,
        lambda self: self._idx if self._node is not None else 0,
    ),
    "grad_dtype": _flag_property(
        "grad_dtype",
        """The dtype of the gradient ``backward`` accumulates into ``.grad``: the tensor's own.

        Example:
            >>> fjax.ones(2, dtype=fjax.float64).grad_dtype
            fjax.float64
        """,
        lambda self: self.dtype,
    ),
}


def is_conj(self) -> bool:
    """Whether the tensor's conjugate bit is set: never in fjax, whose ``conj()`` gives the conjugated
    values (torch's lazy conjugation is a storage trick).

    Example:
        >>> fjax.tensor([1 + 2j]).conj().is_conj()
        False
    """
    return False


def is_neg(self) -> bool:
    """Whether the tensor's negative bit is set: never in fjax (torch sets it lazily on some views of
    conjugated tensors).

    Example:
        >>> fjax.ones(2).is_neg()
        False
    """
    return False


def is_signed(self) -> bool:
    """Whether the dtype is signed: False for bool and the unsigned integers, True otherwise.

    Example:
        >>> fjax.ones(1).is_signed(), fjax.ones(1, dtype=fjax.uint8).is_signed()
        (True, False)
    """
    kind = self._data.dtype.kind
    return kind not in "bu"


def is_nonzero(self) -> bool:
    """Whether the single value of a one-element tensor is not zero (``bool(x)``).

    Example:
        >>> fjax.tensor([1.5]).is_nonzero(), fjax.tensor(0).is_nonzero()
        (True, False)
    """
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item() != 0)


def is_same_size(self, other) -> bool:
    """Whether ``self`` and ``other`` have the same shape.

    Args:
        other: the tensor to compare with.

    Example:
        >>> fjax.ones(2, 3).is_same_size(fjax.zeros(2, 3)), fjax.ones(2).is_same_size(fjax.ones(3))
        (True, False)
    """
    return tuple(self.shape) == tuple(other.shape)


def is_inference(self) -> bool:
    """Whether this is an inference tensor: fjax's ``inference_mode`` makes ordinary tensors, so False.

    Example:
        >>> fjax.ones(2).is_inference()
        False
    """
    return False


def is_distributed(self) -> bool:
    """Whether this is a (legacy THD) distributed tensor: never.

    Example:
        >>> fjax.ones(2).is_distributed()
        False
    """
    return False


def is_pinned(self, device=None) -> bool:
    """Whether the tensor is in page-locked host memory: never (XLA manages host buffers).

    Args:
        device: the accelerator the memory would be pinned for (ignored).

    Example:
        >>> fjax.ones(2).is_pinned()
        False
    """
    return False


def pin_memory(self, device=None) -> Tensor:
    """A copy in page-locked host memory, for fast transfers to an accelerator; as in torch, an error
    when there is none. XLA transfers from ordinary host buffers, so the copy is a plain one.

    Args:
        device: the accelerator the memory is pinned for.

    Example:
        >>> fjax.ones(2).pin_memory() if fjax.cuda.is_available() else "no accelerator"
        'no accelerator'
    """
    from . import cuda

    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return self.clone()


def share_memory_(self) -> Tensor:
    """Move the storage to shared memory, for other processes (torch.multiprocessing): fjax tensors
    are not shared between processes, so this only marks the tensor; returns ``self``.

    Example:
        >>> x = fjax.ones(2)
        >>> x.share_memory_() is x, x.is_shared()
        (True, True)
    """
    self.__dict__["_shared"] = True
    return self


def is_shared(self) -> bool:
    """Whether ``share_memory_()`` was called on this tensor.

    Example:
        >>> fjax.ones(2).is_shared()
        False
    """
    return self.__dict__.get("_shared", False)


def ndimension(self) -> int:
    """The number of dimensions (``dim()``).

    Example:
        >>> fjax.ones(2, 3).ndimension()
        2
    """
    return self.dim()


def get_device(self) -> int:
    """The index of the accelerator the tensor is on, or -1 on the CPU.

    Example:
        >>> fjax.ones(2).get_device()
        -1
    """
    device = self.device
    return -1 if device.type in ("cpu", "meta") else (device.index or 0)


def const_data_ptr(self) -> int:
    """``data_ptr()``: the address of the first element (torch's read-only variant).

    Example:
        >>> x = fjax.ones(2)
        >>> x.const_data_ptr() == x.data_ptr()
        True
    """
    return self.data_ptr()


def dim_order(self, *, ambiguity_check=False) -> tuple:
    """The dims from outermost to innermost in memory (by decreasing stride; ties keep their order).

    Args:
        ambiguity_check: raise when the order is not unique (dims of size 1 or equal strides).

    Example:
        >>> fjax.ones(2, 3).dim_order(), fjax.ones(2, 3).t().dim_order()
        ((0, 1), (1, 0))
    """
    if not isinstance(ambiguity_check, bool):
        raise NotImplementedError("Tensor.dim_order: ambiguity_check as a list of memory formats")
    strides = self.stride()
    order = tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))
    if ambiguity_check and (1 in tuple(self.shape) or len(set(strides)) < len(strides)):
        raise RuntimeError(
            "The tensor does not have unique dim order, or cannot map to exact one of the given memory formats."
        )
    return order


def new(self, *args, device=None) -> Tensor:
    """torch's legacy constructor: a tensor of ``self``'s dtype (and device) from sizes (ints or a
    ``Size``: values not meant to be read, zeros here), from data (a list, tuple or array), or an
    alias of a tensor of the same dtype; no arguments give an empty tensor.

    Args:
        args: sizes, or one sequence of data, or one tensor.
        device: where to put the result (``self``'s device by default).

    Example:
        >>> x = fjax.ones(1)
        >>> x.new(2, 3).shape, x.new((2, 3)), x.new().shape
        (fjax.Size([2, 3]), tensor([2., 3.], dtype=fjax.float32), fjax.Size([0]))
    """
    from .tensor import Size

    if not args:
        return self.new_empty((0,), device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype != self.dtype:
            raise TypeError(f"new(): expected a tensor of dtype {self.dtype}, got {args[0].dtype}")
        return args[0].detach()
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) or (
        len(args) == 1 and isinstance(args[0], Size)
    ):
        return self.new_empty(_shape_args(args), device=device)
    if len(args) == 1:
        return self.new_tensor(args[0], device=device)
    raise TypeError(f"new(): expected sizes, one sequence of data or one tensor, got {args!r}")


def as_subclass(self, cls) -> Tensor:
    """``self`` as an instance of the Tensor subclass ``cls``: the same values and storage, and a view
    of ``self`` for autograd (writes to either show in both, gradients flow to ``self``).

    Args:
        cls: a subclass of ``fjax.Tensor``.

    Example:
        >>> class Mine(fjax.Tensor):
        ...     pass
        >>> y = fjax.ones(2).as_subclass(Mine)
        >>> type(y).__name__, y
        ('Mine', tensor([1., 1.], dtype=fjax.float32))
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: expected a subclass of Tensor, got {cls!r}")
    out = F.view_as(self, self) if self.requires_grad else self.detach()
    out.__class__ = cls
    return out


def storage(self):
    """The storage this tensor is a view of (``untyped_storage()``; fjax's storage knows its dtype).

    Example:
        >>> fjax.arange(3).storage()
        fjax.Storage(nbytes=24, dtype=int64)
    """
    return self.untyped_storage()


def storage_type(self):
    """The class of this tensor's storage. fjax has one storage class, ``Storage``, for
    every dtype (each storage knows its dtype), so there is no per-dtype legacy class (torch's
    ``FloatStorage``, ``LongStorage``, ...) to return: it is ``type(self.storage())``.

    Example:
        >>> fjax.ones(2).storage_type().__name__
        'Storage'
    """
    return type(self.untyped_storage())


def _unusable_with_grad(self, op):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")


def _map_values(self, op, fn, *others):
    """``fn`` applied elementwise in Python to ``self`` and ``others`` (broadcast to ``self``), in place."""
    import jax.numpy as jnp

    _unusable_with_grad(self, op)
    values = [np.asarray(self._data)] + [np.broadcast_to(np.asarray(o._data), tuple(self.shape)) for o in others]
    dtype = values[0].dtype
    out = np.vectorize(fn, otypes=[dtype])(*values) if values[0].size else values[0]
    return self._set_(Tensor._wrap(jnp.asarray(out, dtype)), op)


def apply_(self, callable) -> Tensor:  # noqa: A002 - torch's name
    """Replace each element ``v`` by ``callable(v)``, in place (a Python call per element: slow, for
    small tensors, as torch's CPU-only ``apply_``).

    Args:
        callable: a function of one number returning a number.

    Example:
        >>> fjax.tensor([1.0, 2.0]).apply_(lambda v: v * 10)
        tensor([10., 20.], dtype=fjax.float32)
    """
    return _map_values(self, "apply_", callable)


def map_(self, other, callable) -> Tensor:  # noqa: A002 - torch's name
    """Replace each element ``a`` by ``callable(a, b)``, ``b`` the matching element of ``other``
    (broadcast to ``self``), in place; a Python call per element.

    Args:
        other: the second operand, broadcastable to ``self``.
        callable: a function of two numbers returning a number.

    Example:
        >>> fjax.tensor([1.0, 2.0]).map_(fjax.tensor([3.0, 4.0]), lambda a, b: a * b)
        tensor([3., 8.], dtype=fjax.float32)
    """
    return _map_values(self, "map_", callable, other)


def map2_(self, x, y, callable) -> Tensor:  # noqa: A002 - torch's name
    """Replace each element ``a`` by ``callable(a, b, c)``, ``b`` and ``c`` the matching elements of ``x``
    and ``y`` (broadcast to ``self``), in place; a Python call per element.

    Args:
        x: the second operand, broadcastable to ``self``.
        y: the third operand, broadcastable to ``self``.
        callable: a function of three numbers returning a number.

    Example:
        >>> fjax.zeros(2).map2_(fjax.tensor([1.0, 2.0]), fjax.tensor([3.0, 4.0]), lambda a, b, c: a + b * c)
        tensor([3., 8.], dtype=fjax.float32)
    """
    return _map_values(self, "map2_", callable, x, y)


def fill_diagonal_(self, fill_value, wrap=False) -> Tensor:
    """Write ``fill_value`` on the main diagonal, in place: of a matrix (for a tall one, ``wrap``
    restarts the diagonal every ``ncols + 1`` rows, as torch and numpy), or of a tensor whose dims are
    all equal (the elements ``x[i, i, ..., i]``).

    Args:
        fill_value: the number to write.
        wrap: restart the diagonal below the square top of a tall matrix.

    Example:
        >>> fjax.zeros(3, 2).fill_diagonal_(5)
        tensor([[5., 0.],
                [0., 5.],
                [0., 0.]], dtype=fjax.float32)
    """
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(shape, bool)
    np.fill_diagonal(mask, True, wrap=wrap)
    return self._set_(F.masked_fill(self, Tensor._wrap(mask), fill_value), "fill_diagonal_")


def polygamma_(self, n) -> Tensor:
    """In-place ``self.polygamma(n)``.

    Args:
        n: the order of the derivative of digamma.

    Example:
        >>> x = fjax.tensor([1.0])
        >>> x.polygamma_(1) is x, x
        (True, tensor([1.6449], dtype=fjax.float32))
    """
    return self._set_(F.polygamma(n, self), "polygamma_")


def cholesky_solve(self, input2, upper=False) -> Tensor:
    """``fjax.cholesky_solve(self, input2, upper)``: solve ``A X = self`` given ``A``'s Cholesky factor ``input2``.

    Args:
        input2: the lower (or, with ``upper``, upper) triangular Cholesky factor of ``A``.
        upper: whether ``input2`` is upper triangular.

    Example:
        >>> fjax.ones(2, 1).cholesky_solve(fjax.eye(2) * 2)
        tensor([[0.2500],
                [0.2500]], dtype=fjax.float32)
    """
    return F.cholesky_solve(self, input2, upper)


def orgqr(input, input2) -> Tensor:
    """The explicit ``Q`` of a QR decomposition from Householder reflectors
    (``fjax.linalg.householder_product(input, input2)``, LAPACK's orgqr).

    Args:
        input: the reflectors below the diagonal, shape ``(*, m, n)``.
        input2: their scale factors ``tau``, shape ``(*, k)``.

    Example:
        >>> fjax.orgqr(fjax.ones(2, 2), fjax.ones(1))
        tensor([[ 0., -1.],
                [-1.,  0.]], dtype=fjax.float32)
    """
    return F.linalg_householder_product(input, input2)


_slogdet_result = None


def slogdet(input):
    """The sign and the log of the absolute value of the determinant of a square matrix (or batch):
    ``(sign, logabsdet)``, as ``fjax.linalg.slogdet``.

    Args:
        input: a tensor of shape ``(*, n, n)``.

    Example:
        >>> fjax.slogdet(fjax.tensor([[2.0, 0.0], [0.0, -3.0]]))
        fjax.return_types.slogdet(
        sign=tensor(-1., dtype=fjax.float32),
        logabsdet=tensor(1.7918, dtype=fjax.float32))
    """
    global _slogdet_result
    if _slogdet_result is None:
        from .ops._registry import _named_tuple

        _slogdet_result = _named_tuple("slogdet", ("sign", "logabsdet"))
    return _slogdet_result(*F.linalg_slogdet(input))


def unsafe_split(self, split_size, dim=0) -> tuple:
    """``self.split(split_size, dim)`` without torch's view-aliasing checks.

    Args:
        split_size: the size of each piece, or a list of sizes.
        dim: the dimension to split.

    Example:
        >>> fjax.arange(5).unsafe_split(2)
        (tensor([0, 1], dtype=fjax.int64), tensor([2, 3], dtype=fjax.int64), tensor([4], dtype=fjax.int64))
    """
    return F.unsafe_split(self, split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0) -> tuple:
    """``fjax.split_with_sizes`` without torch's view-aliasing checks: pieces of the listed sizes.

    Args:
        input: the tensor to split.
        split_sizes: the size of each piece; they add up to the size of ``dim``.
        dim: the dimension to split.

    Example:
        >>> fjax.unsafe_split_with_sizes(fjax.arange(4), [1, 3])
        (tensor([0], dtype=fjax.int64), tensor([1, 2, 3], dtype=fjax.int64))
    """
    return F.split_with_sizes(input, split_sizes, dim)


def resize(self, *sizes) -> Tensor:
    """torch's deprecated out-of-place ``resize``: ``self`` reshaped to ``sizes``, which must hold as
    many elements (differentiable, a copy).

    Args:
        sizes: the new sizes, as arguments or one tuple.

    Example:
        >>> fjax.arange(6.0).resize(2, 3).shape
        fjax.Size([2, 3])
    """
    import warnings

    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    sizes = _shape_args(sizes)
    n = int(np.prod(sizes, dtype=np.int64))
    if n != self.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, sizes))} ({n} elements in total), but the given tensor has a "
            f"size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). autograd's resize can only change "
            "the shape of a given tensor, while preserving the number of elements. "
        )
    return F.reshape(self.contiguous(), tuple(sizes)).clone()


def resize_as(self, tensor) -> Tensor:
    """torch's deprecated out-of-place ``resize_as``: ``self.resize(tensor.size())``.

    Args:
        tensor: the tensor whose shape to take.

    Example:
        >>> fjax.arange(6.0).resize_as(fjax.ones(3, 2)).shape
        fjax.Size([3, 2])
    """
    import warnings

    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, tuple(tensor.shape))


def set_(self, source=None, storage_offset=0, size=None, stride=None) -> Tensor:
    """Make ``self`` alias ``source`` in place: a tensor (its storage and geometry, or ``size``/``stride``
    at ``storage_offset`` of its storage), a storage (``x.untyped_storage()``), or nothing (``self``
    becomes empty). Writes through either then show in both.

    Args:
        source: a tensor, a storage, or None.
        storage_offset: the first element's offset in the storage.
        size: the new sizes (default: the source's, or the whole storage).
        stride: the new strides (default: contiguous).

    Example:
        >>> x, y = fjax.zeros(2), fjax.arange(4.0)
        >>> x.set_(y) is x, x
        (True, tensor([0., 1., 2., 3.], dtype=fjax.float32))
        >>> x.set_(y, 1, (2,)), x.data_ptr() - y.data_ptr()
        (tensor([1., 2.], dtype=fjax.float32), 4)
    """
    from .ops.views import contiguous_strides
    from .tensor import Storage

    if source is None:
        new = self.new_empty((0,))
    elif isinstance(source, Storage):
        if source.array.dtype != self._data.dtype:
            raise RuntimeError(f"set_: expected a storage of dtype {self.dtype}, got {source.array.dtype}")
        base = Tensor._wrap(source.array)
        base._attach(source, None)
        size = (source.array.size,) if size is None else tuple(size)
        new = base.as_strided(size, stride or contiguous_strides(size), storage_offset)
    elif isinstance(source, Tensor):
        if source.dtype != self.dtype:
            raise RuntimeError(f"set_: expected a tensor of dtype {self.dtype}, got {source.dtype}")
        if size is None:
            new = source
        else:
            size = tuple(size)
            new = source.as_strided(size, stride or contiguous_strides(size), storage_offset)
    else:
        raise TypeError(f"set_: source must be a Tensor, a storage or None, got {type(source).__name__}")
    if self.requires_grad and self.is_leaf and _grad_enabled():
        raise RuntimeError("set_: a leaf Variable that requires grad is being used in an in-place operation.")
    self._share(new)
    self._vc[0] += 1
    return self


def _grad_enabled() -> bool:
    from .autograd.grad_mode import _state

    return _state.enabled


def _removed(name, message, params):
    def removed(self, *args, **kwargs):
        raise RuntimeError(message)

    removed.__name__ = removed.__qualname__ = name
    removed.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d) for p, d in params]
    )
    removed.__doc__ = f"""Removed from torch in 1.9: raises torch's RuntimeError, which names the replacement.

    Example:
        >>> fjax.eye(2).{name}({"fjax.eye(2)" if name in ("solve", "lstsq") else ""})
        Traceback (most recent call last):
        ...
        RuntimeError: This function was deprecated since version 1.9 and is now removed. ...
    """
    return removed


_REMOVED = {
    "solve": (
        "This function was deprecated since version 1.9 and is now removed. "
        "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
        "`torch.linalg.solve` has its arguments reversed and does not return the LU factorization.\n\n"
        "To get the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\n"
        "X = torch.solve(B, A).solution "
        "should be replaced with:\n"
        "X = torch.linalg.solve(A, B)",
        [("other", inspect.Parameter.empty)],
    ),
    "lstsq": (
        "This function was deprecated since version 1.9 and is now removed. "
        "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
        "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in "
        "the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
        "The returned solution in `torch.lstsq` stored the residuals of the solution in the "
        "last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, "
        "the residuals are in the field 'residuals' of the returned named tuple.\n\n"
        "The unpacking of the solution, as in\n"
        "X, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
        "should be replaced with:\n"
        "X = torch.linalg.lstsq(A, B).solution",
        [("other", inspect.Parameter.empty)],
    ),
    "symeig": (
        "This function was deprecated since version 1.9 and is now removed. "
        "The default behavior has changed from using the upper triangular portion of the matrix by default "
        "to using the lower triangular portion.\n\n"
        "L, _ = torch.symeig(A, upper=upper) "
        "should be replaced with:\n"
        "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\n"
        "and\n\n"
        "L, V = torch.symeig(A, eigenvectors=True) "
        "should be replaced with:\n"
        "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
        [("eigenvectors", False)],
    ),
    "eig": (
        "This function was deprecated since version 1.9 and is now removed. "
        "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
        "mimicking complex tensors.\n\n"
        "L, _ = torch.eig(A) "
        "should be replaced with:\n"
        "L_complex = torch.linalg.eigvals(A)\n\n"
        "and\n\n"
        "L, V = torch.eig(A, eigenvectors=True) "
        "should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)",
        [("eigenvectors", False)],
    ),
}

_TENSOR_METHODS = (
    is_conj,
    is_neg,
    is_signed,
    is_nonzero,
    is_same_size,
    is_inference,
    is_distributed,
    is_pinned,
    pin_memory,
    share_memory_,
    is_shared,
    ndimension,
    get_device,
    const_data_ptr,
    dim_order,
    new,
    as_subclass,
    storage,
    storage_type,
    apply_,
    map_,
    map2_,
    fill_diagonal_,
    polygamma_,
    cholesky_solve,
    orgqr,
    slogdet,
    unsafe_split,
    unsafe_split_with_sizes,
    resize,
    resize_as,
    set_,
)

# torch's top-level functions that are its Tensor methods under the same name: ``torch.abs_(x)`` is
# ``x.abs_()``, ``torch.numel(x)`` is ``x.numel()``.
_METHODS_AS_FUNCTIONS = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ as_strided_ asin_ asinh_ atan_ "
    "atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ conj_physical_ cos_ cosh_ deg2rad_ detach_ erf_ erfc_ exp2_ "
    "exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ index_put_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ "
    "nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ "
    "tan_ tanh_ trunc_ xlogy_ "
    "as_strided chalf detach get_device is_complex is_conj is_distributed is_floating_point is_inference is_neg "
    "is_nonzero is_same_size is_signed numel"
).split()


def _method_as_function(name: str):
    """``Tensor.<name>`` as the top-level function ``fjax.<name>(input, ...)``."""
    method = getattr(Tensor, name)
    params = list(inspect.signature(method).parameters.values())
    if params and params[0].name == "input":
        return method  # an op's method is already the function (``input`` is ``self``)

    def function(input, *args, **kwargs):
        return method(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__signature__ = inspect.Signature([params[0].replace(name="input")] + params[1:])
    function.__doc__ = f"``fjax.{name}(input, ...)`` is ``input.{name}(...)``.\n\n{inspect.getdoc(method) or ''}"
    return function


def tensor_functions() -> dict:
    """{name: function} of torch's top-level functions that are Tensor methods (``fjax.abs_``,
    ``fjax.numel``, ``fjax.slogdet``, ...), for ``fjax/__init__.py``; after ``install()``."""
    out = {name: _method_as_function(name) for name in _METHODS_AS_FUNCTIONS}
    out.update(slogdet=slogdet, orgqr=orgqr, unsafe_split_with_sizes=unsafe_split_with_sizes)
    return out


def install() -> None:
    """Bind every op-table method, the varargs shape methods and the operators onto Tensor."""
    for name, op in _named_ops():
        if op.method and name not in _NOT_METHODS and not hasattr(Tensor, name):
            setattr(Tensor, name, getattr(F, name))
    for name, fn in {**_varargs_methods(), **_operators()}.items():
        setattr(Tensor, name, fn)
    Tensor.max, Tensor.min = max, min
    Tensor.where = _where_method
    Tensor.split = _split_method

    def fill_(self, value):
        """Fill this tensor with ``value`` in place and return it.

        Args:
            value: a number, or a one-element tensor.

        Example:
            >>> fjax.zeros(3).fill_(2)
            tensor([2., 2., 2.], dtype=fjax.float32)
        """
        from .creation import full_like

        return self._set_(full_like(self, value.item() if isinstance(value, Tensor) else value), "fill_")

    def zero_(self):
        """Fill this tensor with zeros in place and return it.

        Example:
            >>> fjax.ones(3).zero_()
            tensor([0., 0., 0.], dtype=fjax.float32)
        """
        return fill_(self, 0)

    Tensor.fill_ = fill_
    Tensor.zero_ = zero_
    Tensor.resize_, Tensor.resize_as_, Tensor.as_strided_ = resize_, resize_as_, as_strided_
    Tensor.histogram = histogram
    for fn in (polygamma, sum_to_size, byte, char, short, cfloat, cdouble, chalf):
        setattr(Tensor, fn.__name__, fn)

    for fn in (new_zeros, new_ones, new_empty, new_empty_strided, new_full, new_tensor, type_as, allclose, equal):
        setattr(Tensor, fn.__name__, fn)
    for fn in _TENSOR_METHODS:
        setattr(Tensor, fn.__name__, fn)
    for name, prop in _PROPERTIES.items():
        setattr(Tensor, name, prop)
    for name, (message, params) in _REMOVED.items():
        setattr(Tensor, name, _removed(name, message, params))
