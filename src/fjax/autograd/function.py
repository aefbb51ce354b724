"""Custom autograd Functions with torch's API (forward/backward staticmethods and a ctx)."""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from .. import random as _random
from .._tracing import trace_state
from ..device import MetaArray
from ..device import from_jax as _device_of
from . import forward_ad
from .engine import Node, _conj
from .grad_mode import is_grad_enabled, no_grad


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``; attributes may be set freely.

    Example:
        >>> class Square(fjax.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         ctx.factor = 2
        ...         return x * x
        ...
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return g * ctx.factor * x
        >>> x = fjax.tensor([3.0], requires_grad=True)
        >>> Square.apply(x).backward()
        >>> x.grad
        tensor([6.], dtype=fjax.float32)
    """

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()
        self.materialize_grads = True
        self._non_differentiable = ()
        self._dirty = ()

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` for ``backward``, which reads them as ``ctx.saved_tensors``.

        Args:
            tensors: the tensors ``backward`` needs.

        Example:
            >>> class Mul(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, a, b):
            ...         ctx.save_for_backward(a, b)
            ...         return a * b
            ...
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         a, b = ctx.saved_tensors
            ...         return g * b, g * a
            >>> a, b = fjax.tensor([2.0], requires_grad=True), fjax.tensor([5.0], requires_grad=True)
            >>> Mul.apply(a, b).backward()
            >>> a.grad, b.grad
            (tensor([5.], dtype=fjax.float32), tensor([2.], dtype=fjax.float32))
        """
        from ..tensor import Tensor

        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type {type(t).__name__}"
                )
        self.saved_tensors = tensors

    def save_for_forward(self, *tensors):
        """Keep ``tensors`` for ``jvp`` (forward-mode AD), which reads them as ``ctx.saved_tensors``
        (torch's; with ``save_for_backward`` too, ``saved_tensors`` is what was saved last).

        Args:
            tensors: the tensors ``jvp`` needs.

        Example:
            >>> ctx = fjax.autograd.function.FunctionCtx((False,))
            >>> ctx.save_for_forward(fjax.ones(1)); len(ctx.saved_tensors)
            1
        """
        self.save_for_backward(*tensors)

    def mark_non_differentiable(self, *tensors):
        """Mark outputs of ``forward`` as non-differentiable, as torch: they come out with
        ``requires_grad=False`` and no ``grad_fn``, and ``backward`` receives zeros for them (None
        after ``set_materialize_grads(False)``).

        Args:
            tensors: outputs of ``forward`` (the same tensor objects it returns).

        Example:
            >>> class SortOut(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         idx = x.argsort()
            ...         ctx.mark_non_differentiable(idx)
            ...         return x * 2, idx
            ...
            ...     @staticmethod
            ...     def backward(ctx, g, g_idx):
            ...         return g * 2
            >>> x = fjax.tensor([3.0, 1.0], requires_grad=True)
            >>> y, idx = SortOut.apply(x)
            >>> idx.requires_grad, y.requires_grad
            (False, True)
        """
        self._non_differentiable = self._non_differentiable + tensors

    def mark_dirty(self, *tensors):
        """Mark inputs that ``forward`` modified in place, as torch: returned as outputs, the same
        tensor objects then carry this Function's ``grad_fn`` and their version counter moves on.

        Args:
            tensors: the inputs ``forward`` wrote in place (and returns).

        Example:
            >>> class Double_(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         x.mul_(2)
            ...         ctx.mark_dirty(x)
            ...         return x
            ...
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         return g * 2
            >>> a = fjax.ones(2, requires_grad=True)
            >>> b = a.clone()
            >>> Double_.apply(b) is b
            True
            >>> b.sum().backward()
            >>> a.grad
            tensor([2., 2.], dtype=fjax.float32)
        """
        self._dirty = self._dirty + tensors

    def set_materialize_grads(self, value: bool):
        """Whether ``backward`` gets zeros (True, the default, as torch) or None for the gradients
        of outputs that nothing differentiated.

        Args:
            value: False passes None for those gradients.

        Example:
            >>> class Two(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.set_materialize_grads(False)
            ...         return x * 2, x * 3
            ...
            ...     @staticmethod
            ...     def backward(ctx, ga, gb):
            ...         return (ga * 2 if ga is not None else 0) + (gb * 3 if gb is not None else 0)
            >>> x = fjax.ones(2, requires_grad=True)
            >>> a, b = Two.apply(x)
            >>> b.sum().backward()
            >>> x.grad
            tensor([3., 3.], dtype=fjax.float32)
        """
        self.materialize_grads = bool(value)

    def _is_data_valid(self) -> bool:
        """OneFlow's check that the ctx still holds what ``forward`` saved (False once a backward
        without ``retain_graph`` freed it)."""
        return self.saved_tensors is not None


def _backward(cls, ctx, cts, args, needs) -> tuple:
    """``cls.backward`` on the output cotangents (arrays): one gradient (or None) per argument.

    ``backward`` is written in torch's convention for complex gradients and the cotangents
    follow JAX's: complex ones are conjugated on the way in and out (``engine._conj``).
    ``args`` are the forward's arguments (arrays for tensors, None for the rest) and ``needs``
    which of them take a gradient. The result is checked as torch's engine checks it: one
    gradient per argument (extra trailing Nones are dropped), tensors or None, None for
    non-tensor arguments, and each gradient of an argument in ``needs`` of a shape the argument
    broadcasts to (summed down to it) and cast to its dtype (see ``_fit``)."""
    from ..tensor import Tensor

    grads = cls.backward(ctx, *[None if c is None else Tensor._wrap(_conj(c)) for c in cts])
    grads = grads if isinstance(grads, tuple) else (grads,)
    n_args = len(args)
    if len(grads) > n_args and all(g is None for g in grads[n_args:]):
        grads = grads[:n_args]  # torch: too many results are fine as long as the extra ones are None
    if len(grads) != n_args:
        raise RuntimeError(
            f"function {cls.__name__}Backward returned an incorrect number of gradients (expected {n_args}, "
            f"got {len(grads)}): one per forward argument, None for non-tensors"
        )
    out, k = [], 0  # k: the position among the tensor arguments (torch's "index")
    for i, (g, arg, need) in enumerate(zip(grads, args, needs)):
        if g is not None and not isinstance(g, Tensor):
            raise RuntimeError(
                f"function {cls.__name__}Backward: expected Variable or None (got {type(g).__name__}) "
                f"as the gradient at position {i + 1}"
            )
        if arg is None:
            if g is not None:
                raise RuntimeError(
                    f"function {cls.__name__}Backward returned a gradient different than None at position {i + 1}, "
                    "but the corresponding forward input was not a Variable"
                )
            out.append(None)
            continue
        out.append(None if g is None or not need else Tensor._wrap(_fit(cls, k, _conj(g._data), arg)))
        k += 1
    return tuple(out)


def _fit(cls, index: int, g, arg):
    """The gradient ``g`` (an array) for the argument ``arg``, as torch's engine admits it: on
    ``arg``'s device (``_device_name``), of the same shape, or one ``arg`` broadcasts to (then
    summed down to ``arg``'s shape); a real
    gradient for a complex argument is fine, a complex one for a real argument is not; the dtype
    becomes ``arg``'s. Anything else raises torch's RuntimeError naming the Function and the
    gradient's ``index`` among the tensor arguments: it is never broadcast into ``.grad``."""
    want, got = _device_name(arg), _device_name(g)
    if want is not None and got is not None and want != got:
        raise RuntimeError(
            f"Function {cls.__name__}Backward returned an invalid gradient at index {index} - expected device "
            f"{want} but got {got}"
        )
    shape, gshape = tuple(arg.shape), tuple(g.shape)
    if gshape != shape:
        lead = len(gshape) - len(shape)
        if lead < 0 or any(s != 1 and s != gs for s, gs in zip(shape, gshape[lead:])):
            raise RuntimeError(
                f"Function {cls.__name__}Backward returned an invalid gradient at index {index} - got "
                f"{list(gshape)} but expected shape compatible with {list(shape)}"
            )
        axes = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(shape) if s == 1 and gshape[lead + d] != 1)
        g = jnp.sum(g, axis=axes, keepdims=False).reshape(shape) if axes else g.reshape(shape)
    if g.dtype != arg.dtype:
        if g.dtype.kind == "c" and arg.dtype.kind != "c":
            from ..dtypes import to_dtype

            raise RuntimeError(
                f"Function {cls.__name__}Backward returned an invalid gradient at index {index} - expected a "
                f"real gradient for the {to_dtype(arg.dtype)} input, got {to_dtype(g.dtype)}"
            )
        g = g.astype(arg.dtype)
    return g


def _device_name(a):
    """The torch device name of an array on one device (``meta`` for a meta array), for ``_fit``'s
    check; None for a tracer or an array over several devices (a global tensor's: not compared)."""
    if isinstance(a, MetaArray):
        return "meta"
    if isinstance(a, jax.core.Tracer) or not hasattr(a, "devices"):
        return None
    devices = a.devices()
    if len(devices) != 1:
        return None
    return str(_device_of(next(iter(devices))))


class _FunctionNode(Node):
    """A custom Function's step on the tape. A None gradient from ``backward`` gives that input
    nothing, as in torch (a leaf's ``.grad`` stays None unless another path reaches it): ``apply``
    returns the gradients that are not None and ``diff_inputs`` (which the engine reads right
    after ``apply``) the inputs they belong to."""

    __slots__ = ("cls", "ctx", "args", "_given")
    raw_cts = True  # the engine passes None for outputs nothing differentiated (materialised here)

    def apply(self, cts):
        avals = self.out_avals if self.multi else [self.out_avals]
        if self.ctx.materialize_grads:
            cts = [jnp.zeros(*a) if c is None else c for c, a in zip(cts, avals)]
        grads = _backward(self.cls, self.ctx, cts, self.args, self.ctx.needs_input_grad)
        out, self._given = [], []
        for g, needs in zip(grads, self.ctx.needs_input_grad):
            if needs:
                self._given.append(g is not None)
                if g is not None:
                    out.append(g._data)
        return out

    def diff_inputs(self):
        inputs = super().diff_inputs()
        given = getattr(self, "_given", None)
        if given is None or len(given) != len(inputs):
            return inputs
        self._given = None  # read once, after the apply that set it
        return [x for x, keep in zip(inputs, given) if keep]

    def release(self):
        super().release()
        self.ctx.saved_tensors = None  # frees them, as torch (OneFlow's ctx._is_data_valid() turns False)


class Function:
    """Subclass with ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``; call ``apply``.

    Example:
        >>> class Exp(fjax.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp()
        ...         ctx.save_for_backward(y)
        ...         return y
        ...
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (y,) = ctx.saved_tensors
        ...         return g * y
        >>> x = fjax.zeros(2, requires_grad=True)
        >>> Exp.apply(x).sum().backward()
        >>> x.grad
        tensor([1., 1.], dtype=fjax.float32)
    """

    @staticmethod
    def forward(ctx, *args):
        """Compute the outputs from the inputs; a subclass defines it as a ``@staticmethod``.

        Args:
            ctx: a :class:`FunctionCtx` for saving what ``backward`` needs.
            args: the arguments given to ``apply``.

        Example:
            >>> class Double(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         return x * 2
            ...
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         return g * 2
            >>> x = fjax.ones(2, requires_grad=True)
            >>> y = Double.apply(x)
            >>> y.sum().backward()
            >>> y, x.grad
            (tensor([2., 2.], dtype=fjax.float32, grad_fn=<DoubleBackward>), tensor([2., 2.], dtype=fjax.float32))
        """
        raise NotImplementedError("Function subclasses must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Compute the gradients of the inputs from those of the outputs; a subclass defines it as a
        ``@staticmethod``, returning one gradient (or None) per argument of ``forward``.

        Args:
            ctx: the :class:`FunctionCtx` that ``forward`` filled.
            grad_outputs: one gradient per output of ``forward``.

        Example:
            >>> class Double(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         return x * 2
            ...
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         return g * 2
            >>> x = fjax.ones(2, requires_grad=True)
            >>> y = Double.apply(x)
            >>> y.sum().backward()
            >>> y, x.grad
            (tensor([2., 2.], dtype=fjax.float32, grad_fn=<DoubleBackward>), tensor([2., 2.], dtype=fjax.float32))
        """
        raise NotImplementedError("Function subclasses must implement backward(ctx, *grad_outputs)")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode AD (``autograd.forward_ad``): the outputs' tangents from the inputs'
        (one per ``forward`` argument: a tensor's tangent, zeros where it has none, None for a
        non-tensor); a subclass defines it as a ``@staticmethod`` to be applied to dual tensors.

        Example:
            >>> import fjax.autograd.forward_ad as fwAD
            >>> class Cube(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.save_for_forward(x)
            ...         return x**3
            ...
            ...     @staticmethod
            ...     def jvp(ctx, t):
            ...         (x,) = ctx.saved_tensors
            ...         return 3 * x**2 * t
            >>> with fwAD.dual_level():
            ...     y = Cube.apply(fwAD.make_dual(fjax.tensor([2.0]), fjax.ones(1)))
            ...     fwAD.unpack_dual(y).tangent
            tensor([12.], dtype=fjax.float32)
        """
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )

    @classmethod
    def apply(cls, *args):
        """Run ``forward`` on ``args`` and record ``backward`` on the tape for the outputs.

        Args:
            args: the arguments of ``forward`` (after ``ctx``).

        Example:
            >>> class Double(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         return x * 2
            ...
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         return g * 2
            >>> x = fjax.ones(2, requires_grad=True)
            >>> y = Double.apply(x)
            >>> y.sum().backward()
            >>> y, x.grad
            (tensor([2., 2.], dtype=fjax.float32, grad_fn=<DoubleBackward>), tensor([2., 2.], dtype=fjax.float32))
        """
        from ..tensor import Tensor

        record = is_grad_enabled()
        needs = tuple(isinstance(a, Tensor) and a.requires_grad and record for a in args)
        if not any(needs) and trace_state.depth and any(isinstance(a, Tensor) for a in args):
            return _custom_vjp_apply(cls, args)  # a functional transform: JAX differentiates it
        ctx = FunctionCtx(needs)
        dual = forward_ad.state.level is not None and forward_ad.needs(args)
        if dual and cls.jvp is Function.jvp:
            Function.jvp(ctx)  # raises, as torch: a Function's forward mode is its own jvp
        with no_grad(), forward_ad.muted() if dual else contextlib.nullcontext():
            out = cls.forward(ctx, *args)
        if dual:
            _apply_jvp(cls, ctx, args, out)
        if not any(needs):
            return out
        multi = isinstance(out, tuple)
        outs = out if multi else (out,)
        dirty = {id(t) for t in ctx._dirty}
        for a in args:
            if isinstance(a, Tensor) and id(a) in dirty and a._node is None and a.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        inputs = tuple(
            (a._edge() if a._node is not None else a) if n else a._data
            for a, n in zip(args, needs)
            if isinstance(a, Tensor)
        )
        avals = [(o._data.shape, o._data.dtype) for o in outs]
        node = _FunctionNode(cls.__name__, None, None, inputs, avals if multi else avals[0])
        node.cls, node.ctx = cls, ctx
        node.args = [a._data if isinstance(a, Tensor) else None for a in args]
        nondiff = {id(t) for t in ctx._non_differentiable}
        wrapped = []
        for i, o in enumerate(outs):
            if id(o) in nondiff:  # torch: no history, and backward gets zeros (or None) for it
                wrapped.append(Tensor._wrap(o._data) if id(o) not in dirty else o)
            elif id(o) in dirty:  # the input written in place takes this Function as its history
                o._node, o._idx, o._requires_grad = node, i, True
                o._vc[0] += 1
                wrapped.append(o)
            else:
                wrapped.append(Tensor._wrap(o._data, node, i))
        return tuple(wrapped) if multi else wrapped[0]

    def __call__(self, *args):
        """OneFlow's ``Function()(*args)``: the same as ``apply`` (torch refuses instance calls).

        Args:
            args: the arguments of ``forward`` (after ``ctx``).

        Example:
            >>> class Double(fjax.autograd.Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         return x * 2
            ...
            ...     @staticmethod
            ...     def backward(ctx, g):
            ...         return g * 2
            >>> Double()(fjax.ones(2))
            tensor([2., 2.], dtype=fjax.float32)
        """
        return self.apply(*args)


def _apply_jvp(cls, ctx, args, out) -> None:
    """Attach to ``out`` the tangents ``cls.jvp`` gives for the dual ``args``."""
    from ..tensor import Tensor

    tangents = []
    for a in args:
        if not isinstance(a, Tensor):
            tangents.append(None)
            continue
        t = forward_ad.tangent_of(a)
        tangents.append(Tensor._wrap(t if t is not None else jnp.zeros(a.shape, a._meta.dtype)))
    with forward_ad.muted():
        result = cls.jvp(ctx, *tangents)
    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    if len(results) != len(outs):
        raise RuntimeError(f"{cls.__name__}.jvp returned {len(results)} tangents for {len(outs)} outputs of forward")
    for o, t in zip(outs, results):
        if isinstance(o, Tensor) and isinstance(t, Tensor):
            forward_ad.attach(o, t._data)


def _custom_vjp_apply(cls, args):
    """``cls.apply(*args)`` inside a JAX transform (fjax.func, autograd.functional): a
    ``jax.custom_vjp`` whose backward is ``cls.backward``, so transforms differentiate through
    the user's backward as torch does, not through ``forward``.

    Tensors the forward leaves on ``ctx`` (saved or as attributes) travel as residuals; other
    attributes are carried over as they are. (Forward-mode transforms such as ``jvp`` and
    ``jacfwd`` cannot go through it: torch needs a ``jvp`` staticmethod there too.)
    """
    from ..tensor import Tensor

    pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    needs = tuple(isinstance(a, Tensor) and jnp.issubdtype(a._data.dtype, jnp.inexact) for a in args)
    box: dict = {}

    def forward(arrays, ctx):
        full = list(args)
        for i, a in zip(pos, arrays):
            full[i] = Tensor._wrap(a)
        with no_grad():
            out = cls.forward(ctx, *full)
        box["multi"] = isinstance(out, tuple)
        outs = out if box["multi"] else (out,)
        nondiff = {id(t) for t in ctx._non_differentiable}
        box["nondiff"] = [i for i, o in enumerate(outs) if id(o) in nondiff]
        return tuple(o._data for o in outs)

    @jax.custom_vjp
    def fn(*arrays):
        return forward(arrays, FunctionCtx(needs))

    def fwd(*arrays):
        ctx = FunctionCtx(needs)
        draws = _random.draws[0]
        outs = forward(arrays, ctx)
        if _random.draws[0] == draws:
            # The outputs through ``fn`` again, so that an enclosing differentiation (a Hessian)
            # also uses ``backward`` for them, as torch does; XLA merges the two forward passes.
            # Not when forward draws random numbers: the outputs must match what ctx saved.
            outs = fn(*arrays)
        tensors = {k: v._data for k, v in vars(ctx).items() if isinstance(v, Tensor)}
        saved = tuple(None if t is None else t._data for t in ctx.saved_tensors)
        skip = ("saved_tensors", "_non_differentiable", "_dirty")
        box["ctx"] = {k: v for k, v in vars(ctx).items() if k not in tensors and k not in skip}
        return outs, (saved, tensors)

    def bwd(residuals, cts):
        saved, tensors = residuals
        ctx = FunctionCtx(needs)
        vars(ctx).update(box["ctx"])
        vars(ctx).update({k: Tensor._wrap(v) for k, v in tensors.items()})
        ctx.saved_tensors = tuple(None if t is None else Tensor._wrap(t) for t in saved)
        with no_grad():
            grads = _backward(cls, ctx, cts, [a._data if isinstance(a, Tensor) else None for a in args], needs)
        out = []
        for i in pos:
            x, g = args[i]._data, grads[i]
            if not needs[i]:  # an integer input: no gradient
                out.append(np.zeros(x.shape, jax.dtypes.float0))
            else:
                out.append(jnp.zeros(x.shape, x.dtype) if g is None else g._data)
        return tuple(out)

    fn.defvjp(fwd, bwd)
    outs = fn(*[args[i]._data for i in pos])
    outs = [jax.lax.stop_gradient(o) if i in box["nondiff"] else o for i, o in enumerate(outs)]
    wrapped = tuple(Tensor._wrap(o) for o in outs)
    return wrapped if box["multi"] else wrapped[0]
