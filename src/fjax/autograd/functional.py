"""torch.autograd.functional over JAX: vjp, jvp, vhp, hvp, jacobian, hessian.

Each function validates its arguments as torch does, then goes down the transform pipeline
(``fjax/_transforms/pipeline.py``): the user's Tensor function is traced into a pure program
of arrays (parameters and other captured tensors are its constants) and ``jax.vjp`` /
``jax.jvp`` / ``jax.jacrev`` / ``jax.jacfwd`` of it (``_transforms/front.py``'s builders, which
``fjax.func`` shares) runs compiled, the executable cached by the traced program, so a freshly
created but identical lambda does not recompile. The program is reused while the function's
guards hold, and a repeated call of the same function on inputs of the same signature goes
straight to the compiled call (``pipeline.Repeat``). Signatures, return
structures, validation and ``strict`` behaviour follow torch. With ``create_graph=True`` the
results are one tape node whose VJP is JAX's, so ``autograd.grad``/``backward`` differentiate
them again.

``vectorize`` is accepted and changes nothing (JAX always vectorizes); ``strategy=
"forward-mode"`` works with or without it, with ``strict`` and with ``create_graph``.
A custom ``autograd.Function`` in the function is differentiated through its ``backward``
(a ``jax.custom_vjp``); having no forward-mode rule, it makes forward-mode strategies fall back
to reverse mode and ``jvp``/``hvp`` use torch's double-backward trick.

Example::

    >>> x = fjax.randn(3)
    >>> fjax.autograd.functional.hessian(lambda x: (x**3).sum(), x)   # diag(6 x)
"""

from __future__ import annotations

import math
import operator
from typing import Callable

import jax
import jax.numpy as jnp

from .._transforms import front
from .._transforms import program as _program
from .._transforms.executable import cache_info
from .._transforms.pipeline import cache_clear, finish, repeat
from ..tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp", "cache_info", "cache_clear"]

_STRATEGIES = ("forward-mode", "reverse-mode")


# -- torch's argument handling ------------------------------------------------------------
def _as_tuple(inp, arg_name: str, fn_name: str):
    """``(was_tuple, tuple_of_tensors)``, with torch's TypeError for anything else."""
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = (
                f"the value at index {i} has type {type(el)}"
                if is_tuple
                else f"the given {arg_name} has type {type(el)}"
            )
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but {where}."
            )
    return is_tuple, items


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple`` on (possibly nested) results: torch's return structure."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _check_inputs(inputs, fn_name: str, complex_ok: bool = False) -> None:
    """Floating inputs; complex ones too where ``complex_ok`` (vjp, reverse-mode jacobian)."""
    for i, x in enumerate(inputs):
        if not (x.dtype.is_floating_point or (complex_ok and x.dtype.is_complex)):
            raise RuntimeError(
                f"{fn_name}: input {i} has dtype {x.dtype}; only Tensors of floating point dtype can "
                "require gradients (complex inputs are not supported by fjax's functional transforms)"
            )


def _validate_v(v, shapes, is_other_tuple: bool) -> None:
    if len(shapes) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(shapes)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, shape) in enumerate(zip(v, shapes)):
        if tuple(el_v.shape) != tuple(shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be fjax.Size({list(shape)}) but got "
                f"fjax.Size({list(el_v.shape)})."
            )


def _trace_func(func: Callable, inputs, fn_name: str, scalar: bool = False):
    """Trace ``func(*inputs)`` (or reuse its program): a ``pipeline.Traced`` whose ``side`` says
    whether the function returned a tuple."""
    box = {}

    def call(tensors):
        out = func(*tensors)
        box["tuple"], outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
        if scalar:
            if box["tuple"]:
                raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
            if _numel(outs[0].shape) != 1:
                raise RuntimeError(
                    f"The Tensor returned by the function given to {fn_name} should contain a single element"
                )
        for i, o in enumerate(outs):
            if not (o.dtype.is_floating_point or (fn_name == "vjp" and o.dtype.is_complex)):
                raise RuntimeError(
                    f"{fn_name}: output {i} of the user-provided function has dtype {o.dtype}; fjax's "
                    "functional transforms differentiate floating point outputs only"
                )
        return outs

    avals = [_program.aval(x) for x in inputs]
    where = f"fjax.autograd.functional.{fn_name}"
    return front.trace(where, (func,), (scalar,), call, avals, lambda: box["tuple"])


def _numel(shape) -> int:
    return math.prod(shape)


def _check_v_inputs(v, inputs, is_inputs_tuple: bool, name: str):
    """jvp/hvp/vhp: ``v`` (shaped like the inputs) as a tuple; None only for a single-element input."""
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        _validate_v(v, [tuple(x.shape) for x in inputs], is_inputs_tuple)
    elif len(inputs) != 1 or _numel(inputs[0].shape) != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
            "single element."
        )
    return v


def _finish(name, spec, traced, transform, args, create_graph, post, raw, plan_key, strict):
    """The pipeline's last step; a call without create_graph or strict leaves a repeat plan
    (``raw``: the inputs and v as given)."""
    again = None if create_graph or strict else (plan_key, traced.roots[0], raw)
    return finish(f"functional.{name}", spec, traced, transform, args, record=create_graph, post=post, repeat=again)


# -- strict mode ---------------------------------------------------------------------------
_INDEPENDENT_INPUT = (
    "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode."
)
_INDEPENDENT_RESULT = (
    "The {what} of the user-provided function is independent of input {i}. This is not allowed in strict mode "
    "when create_graph=True."
)


def _strict_outputs(program, inputs):
    deps = front.depends(front.program_fn(program), inputs)
    for o, row in enumerate(deps):
        if not row.any():
            raise RuntimeError(
                f"Output {o} of the user-provided function does not require gradients. The outputs must be "
                "computed in a differentiable manner from the input when running in strict mode."
            )
    return deps


def _strict_each_input_used(deps, message):
    for i in range(deps.shape[1]):
        if not deps[:, i].any():
            raise RuntimeError(message.format(i=i))


def _strict_result_depends(program, transform, inputs, v, first: int, what="jacobian", per_row=1):
    """create_graph=True: every result from ``first`` on must still depend on the inputs (torch:
    requires grad); a ``v`` that requires grad makes them so.

    Result ``r`` is reported as index ``r // per_row`` (torch names the output of a Jacobian block).
    """
    if v is not None and any(t.requires_grad for t in v):
        return
    vs = [t._data for t in v or ()]
    deps = front.depends(lambda *xs: transform(front.program_fn(program), *xs, *vs)[first:], inputs)
    for r, row in enumerate(deps):
        if not row.any():
            raise RuntimeError(_INDEPENDENT_RESULT.format(what=what, i=r // per_row))


def _strict_first_order(program, transform, inputs, v, create_graph: bool, n_out: int) -> None:
    """vjp and jvp: every output depends on some input, every input is used, and (create_graph)
    the products depend on the inputs."""
    _strict_each_input_used(_strict_outputs(program, inputs), _INDEPENDENT_INPUT)
    if create_graph:
        _strict_result_depends(program, transform, inputs, v, n_out)


def _strict_jacobian_of_grad(program, inputs, pairs=False):
    """hessian/vhp/hvp: the gradient must depend on the inputs (and, for hessian, pairwise)."""
    grad = front.grad(_scalar(front.program_fn(program)), len(inputs))
    deps = front.depends(lambda *xs: grad(*xs)[0], inputs)
    for i, row in enumerate(deps):
        if not row.any():
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided function with "
                f"respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                "should ensure that your function is twice differentiable and that the jacobian depends on "
                "the inputs (this would be violated by a linear function for example)."
            )
        for j, dep in enumerate(row):
            if pairs and not dep:
                raise RuntimeError(
                    f"Output {i} of the user-provided function is independent of input {j}. This is not "
                    "allowed in strict mode."
                )
    return deps


# -- the second-order transforms (the others are front's) ------------------------------------
def _scalar(program):
    """``xs -> ((value,), output)``: the single-element output as a scalar, and as it is."""

    def fn(*xs):
        out = program(*xs)[0]
        return (out.reshape(()),), out

    return fn


def _second_order_transform(n: int, has_v: bool, hvp: bool, by_vjp: bool):
    """vhp: reverse-over-reverse. hvp: forward-over-reverse, or (``by_vjp``, for custom
    Functions) ``front.transpose_vjp`` of ``u -> u^T H``."""

    def transform(program, *args):
        xs = args[:n]
        vs = args[n:] if has_v else (jnp.ones_like(xs[0]),)
        vs = tuple(v.astype(x.dtype) for v, x in zip(vs, xs))
        grads = front.grad(_scalar(program), n)
        if hvp and not by_vjp:
            _, products, (_, out) = jax.jvp(grads, xs, vs, has_aux=True)
            return (out, *products)
        _, pull, (_, out) = jax.vjp(grads, *xs, has_aux=True)
        if not hvp:
            return (out, *pull(vs))
        return (out, *front.transpose_vjp(pull, xs, vs))

    return transform


_first = operator.itemgetter(0)


def _nest(flat, rows: int, cols: int):
    return tuple(tuple(flat[i * cols : (i + 1) * cols]) for i in range(rows))


# -- public API ----------------------------------------------------------------------------
def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: vector-Jacobian product (torch.autograd.functional.vjp).

    Args:
        func: Tensor function returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors.
        v: cotangent shaped like the outputs; may be None for a single-element output.
        create_graph: put the results on the tape (differentiable again w.r.t. inputs and v).
        strict: raise when an output or input is independent (torch's messages).

    Returns:
        ``(func_output, vjp)``, vjp shaped like ``inputs``.

    Example:
        >>> x = fjax.tensor([1.0, 2.0])
        >>> fjax.autograd.functional.vjp(lambda x: x ** 2, x, fjax.ones(2))
        (tensor([1., 4.], dtype=fjax.float32), tensor([2., 4.], dtype=fjax.float32))
    """
    plan_key, raw = ("vjp", id(func)), (inputs, v)
    if not (create_graph or strict) and (hit := repeat(plan_key, func, inputs, v)) is not None:
        return hit
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    _check_inputs(inputs, "vjp", complex_ok=True)
    traced = _trace_func(func, inputs, "vjp")
    program, is_outputs_tuple = traced.program, traced.side
    shapes = [tuple(o.aval.shape) for o in program.jaxpr.outvars]
    if v is not None:
        _, v = _as_tuple(v, "v", "vjp")
        _validate_v(v, shapes, is_outputs_tuple)
    elif len(shapes) != 1 or _numel(shapes[0]) != 1:
        raise RuntimeError(
            "The vector v can only be None if the user-provided function returns a single Tensor with a single element."
        )
    n, n_out = len(inputs), len(shapes)
    transform = front.vjp_transform(n, n_out, v is not None)
    if strict:
        _strict_first_order(program, transform, inputs, v, create_graph, n_out)

    def post(res):
        return _tuple_postprocess(res[:n_out], is_outputs_tuple), _tuple_postprocess(res[n_out:], is_inputs_tuple)

    if not (is_outputs_tuple or is_inputs_tuple):
        post = None  # (output, vjp): the flat results
    spec, args = ("vjp", n, v is not None), [*inputs, *(v or ())]
    return _finish("vjp", spec, traced, transform, args, create_graph, post, raw, plan_key, strict)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: Jacobian-vector product by forward mode (torch.autograd.functional.jvp).

    Args:
        func: Tensor function returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors.
        v: tangent shaped like ``inputs``; may be None for a single-element input.
        create_graph: put the results on the tape.
        strict: raise when an output or input is independent (torch's messages).

    Returns:
        ``(func_output, jvp)``, jvp shaped like the outputs.

    Example:
        >>> x = fjax.tensor([1.0, 2.0])
        >>> fjax.autograd.functional.jvp(lambda x: x ** 2, x, fjax.ones(2))
        (tensor([1., 4.], dtype=fjax.float32), tensor([2., 4.], dtype=fjax.float32))
    """
    plan_key, raw = ("jvp", id(func)), (inputs, v)
    if not (create_graph or strict) and (hit := repeat(plan_key, func, inputs, v)) is not None:
        return hit
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    _check_inputs(inputs, "jvp")
    v = _check_v_inputs(v, inputs, is_inputs_tuple, "jvp")
    traced = _trace_func(func, inputs, "jvp")
    program, is_outputs_tuple = traced.program, traced.side
    n, n_out = len(inputs), len(program.jaxpr.outvars)
    by_vjp = program.custom_vjp
    transform = front.jvp_transform(n, n_out, v is not None, by_vjp)
    if strict:
        _strict_first_order(program, transform, inputs, v, create_graph, n_out)

    def post(res):
        return _tuple_postprocess(res[:n_out], is_outputs_tuple), _tuple_postprocess(res[n_out:], is_outputs_tuple)

    if not is_outputs_tuple:
        post = None  # (output, jvp): the flat results
    spec, args = ("jvp", n, v is not None, by_vjp), [*inputs, *(v or ())]
    return _finish("jvp", spec, traced, transform, args, create_graph, post, raw, plan_key, strict)


def jacobian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of ``func`` at ``inputs`` (torch.autograd.functional.jacobian).

    Args:
        func: Tensor function returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors.
        create_graph: put the Jacobian on the tape.
        strict: raise when an output is independent of an input (torch's messages).
        vectorize: accepted for torch compatibility; fjax always computes all rows at once.
        strategy: ``"reverse-mode"`` (``jax.jacrev``) or ``"forward-mode"`` (``jax.jacfwd``).

    Returns:
        A Tensor of shape ``output.shape + input.shape``; a tuple when inputs or outputs are
        tuples; ``J[i][j]`` (output i, input j) when both are.

    Example:
        >>> fjax.autograd.functional.jacobian(lambda x: x.exp(), fjax.zeros(2))
        tensor([[1., 0.],
                [0., 1.]], dtype=fjax.float32)
    """
    del vectorize  # every strategy is vectorized by JAX
    if strategy not in _STRATEGIES:
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more '
            'outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use "reverse-mode".'
        )
    plan_key, raw = ("jacobian", strategy, id(func)), (inputs, None)
    if not (create_graph or strict) and (hit := repeat(plan_key, func, inputs, None)) is not None:
        return hit
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    _check_inputs(inputs, "jacobian", complex_ok=strategy == "reverse-mode")
    traced = _trace_func(func, inputs, "jacobian")
    program, is_outputs_tuple = traced.program, traced.side
    n, n_out = len(inputs), len(program.jaxpr.outvars)
    # A custom Function has no forward-mode rule; reverse mode gives the same Jacobian.
    forward = strategy == "forward-mode" and not program.custom_vjp
    transform = front.jacobian_transform(range(n), n_out, forward)
    if strict:
        deps = _strict_outputs(program, inputs)
        for o, row in enumerate(deps):
            for i, dep in enumerate(row):
                if not dep:
                    raise RuntimeError(
                        f"Output {o} of the user-provided function is independent of input {i}. This is not "
                        "allowed in strict mode."
                    )
        if create_graph:
            _strict_result_depends(program, transform, inputs, None, 0, per_row=n)

    def post(flat):
        return _tuple_postprocess(_nest(flat, n_out, n), (is_outputs_tuple, is_inputs_tuple))

    if not (is_outputs_tuple or is_inputs_tuple):
        post = _first
    return _finish(
        "jacobian", ("jacobian", n, forward), traced, transform, inputs, create_graph, post, raw, plan_key, strict
    )


def hessian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The Hessian of a single-element ``func`` at ``inputs`` (torch.autograd.functional.hessian).

    Args:
        func: Tensor function returning a Tensor with one element.
        inputs: a Tensor or a tuple of Tensors.
        create_graph: put the Hessian on the tape.
        strict: raise when the gradient is independent of an input (torch's messages).
        vectorize: accepted for torch compatibility; fjax always computes all rows at once.
        outer_jacobian_strategy: the outer Jacobian (of the reverse-mode gradient) by
            ``"reverse-mode"`` or ``"forward-mode"`` (forward-over-reverse, ``jax.hessian``).

    Returns:
        A Tensor of shape ``input.shape + input.shape``, or ``H[i][j]`` for tuple inputs.

    Example:
        >>> fjax.autograd.functional.hessian(lambda x: (x**3).sum(), fjax.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]], dtype=fjax.float32)
    """
    del vectorize
    plan_key, raw = ("hessian", outer_jacobian_strategy, id(func)), (inputs, None)
    if not (create_graph or strict) and (hit := repeat(plan_key, func, inputs, None)) is not None:
        return hit
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    _check_inputs(inputs, "hessian")
    traced = _trace_func(func, inputs, "hessian", scalar=True)
    program, _ = traced.program, traced.side
    n = len(inputs)
    forward = outer_jacobian_strategy == "forward-mode" and not program.custom_vjp
    transform = front.hessian_transform(range(n), 1, forward, scalar=True)
    if strict:
        _strict_outputs(program, inputs)
        _strict_jacobian_of_grad(program, inputs, pairs=True)
        if create_graph:
            _strict_result_depends(program, transform, inputs, None, 0, per_row=n)

    def post(flat):
        return _tuple_postprocess(_nest(flat, n, n), (is_inputs_tuple, is_inputs_tuple))

    if not is_inputs_tuple:
        post = _first
    return _finish(
        "hessian", ("hessian", n, forward), traced, transform, inputs, create_graph, post, raw, plan_key, strict
    )


def _second_order(name: str, func, inputs, v, create_graph: bool, strict: bool, forward: bool):
    """vhp and hvp, on the full path (their repeats take their plan before calling this)."""
    plan_key, raw = (name, id(func)), (inputs, v)
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    _check_inputs(inputs, name)
    v = _check_v_inputs(v, inputs, is_inputs_tuple, name)
    traced = _trace_func(func, inputs, name, scalar=True)
    program, _ = traced.program, traced.side
    n = len(inputs)
    by_vjp = forward and program.custom_vjp
    transform = _second_order_transform(n, v is not None, forward, by_vjp)
    if strict:
        _strict_each_input_used(_strict_outputs(program, inputs), _INDEPENDENT_INPUT)
        grad_deps = _strict_jacobian_of_grad(program, inputs)
        if not forward:
            _strict_each_input_used(
                grad_deps,
                "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode.",
            )
        if create_graph:
            _strict_result_depends(program, transform, inputs, v, 1, "hessian")

    def post(res):
        return res[0], _tuple_postprocess(res[1:], is_inputs_tuple)

    if not is_inputs_tuple:
        post = None  # (output, product): the flat results
    spec, args = (name, n, v is not None, by_vjp), [*inputs, *(v or ())]
    return _finish(name, spec, traced, transform, args, create_graph, post, raw, plan_key, strict)


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``: vector-Hessian product (torch.autograd.functional.vhp).

    Args:
        func: Tensor function returning a Tensor with one element.
        inputs: a Tensor or a tuple of Tensors.
        v: shaped like ``inputs``; may be None for a single-element input.
        create_graph: put the results on the tape.
        strict: raise when the output or gradient is independent of an input.

    Returns:
        ``(func_output, vhp)``, vhp shaped like ``inputs``.

    Example:
        >>> x = fjax.tensor([1.0, 2.0])
        >>> fjax.autograd.functional.vhp(lambda x: (x ** 3).sum(), x, fjax.ones(2))  # H = diag(6x)
        (tensor(9., dtype=fjax.float32), tensor([ 6., 12.], dtype=fjax.float32))
    """
    if not (create_graph or strict) and (hit := repeat(("vhp", id(func)), func, inputs, v)) is not None:
        return hit  # checked here, not in _second_order: a call less before the dispatch
    return _second_order("vhp", func, inputs, v, create_graph, strict, forward=False)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``: Hessian-vector product, forward-over-reverse (torch.autograd.functional.hvp).

    Args:
        func: Tensor function returning a Tensor with one element.
        inputs: a Tensor or a tuple of Tensors.
        v: shaped like ``inputs``; may be None for a single-element input.
        create_graph: put the results on the tape.
        strict: raise when the output or gradient is independent of an input.

    Returns:
        ``(func_output, hvp)``, hvp shaped like ``inputs``.

    Example:
        >>> x = fjax.tensor([1.0, 2.0])
        >>> fjax.autograd.functional.hvp(lambda x: (x ** 3).sum(), x, fjax.ones(2))  # H = diag(6x)
        (tensor(9., dtype=fjax.float32), tensor([ 6., 12.], dtype=fjax.float32))
    """
    if not (create_graph or strict) and (hit := repeat(("hvp", id(func)), func, inputs, v)) is not None:
        return hit  # checked here, not in _second_order: a call less before the dispatch
    return _second_order("hvp", func, inputs, v, create_graph, strict, forward=True)
