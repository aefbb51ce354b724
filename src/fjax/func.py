"""torch.func over JAX: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call.

Each transform returns a function. Calling it traces the user's Tensor function into a pure
program (every Tensor in the positional arguments is a traced input; other values are static)
and runs ``jax.grad`` / ``jax.vjp`` / ``jax.jvp`` / ``jax.jacrev`` / ``jax.jacfwd`` /
``jax.vmap`` of it compiled, cached by the traced program (see ``fjax.autograd.functional``).
Transforms compose: inside another transform the call traces and nests, so
``vmap(grad(loss), in_dims=(None, 0, 0))`` gives per-example gradients in one executable.
Results are recorded on the tape when an input requires grad, so eager ``backward()`` through
them works as with torch.

Example::

    >>> params = dict(model.named_parameters())
    >>> def loss(p, x, y):
    ...     return fjax.nn.functional.mse_loss(fjax.func.functional_call(model, p, (x,)), y)
    >>> per_example = fjax.func.vmap(fjax.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
"""

from __future__ import annotations

import functools
from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp
from jax import tree_util

from ._tracing import trace_state
from ._transforms import front
from ._transforms import program as _program
from ._transforms.call import Call, argnums_tuple, check_forward_mode, flatten, is_tensor
from ._transforms.pipeline import finish, repeat
from ._transforms.randomness import random_mode
from ._transforms.reparametrize import functional_call
from .autograd.grad_mode import is_grad_enabled
from .tensor import Tensor

__all__ = [
    "debug_unwrap",
    "functional_call",
    "functionalize",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]


def _plan_key(*parts):
    """A repeat plan's key (see ``_transforms.pipeline``): the transform, its options and the
    function's id; None where an option is unhashable (such calls always take the full path)."""
    try:
        hash(parts)
    except TypeError:
        return None
    return parts


def _repeat(key, func, args, kwargs):
    """The result of a call like an earlier one (keyword arguments: never), else None."""
    return None if key is None or kwargs else repeat(key, func, args)


def _again(key, func, args, kwargs):
    """``finish``'s ``repeat`` argument for this call."""
    return None if key is None or kwargs else (key, func, (args,))


# -- grad ----------------------------------------------------------------------------------
def _scalar_output(out) -> None:
    if not is_tensor(out):
        raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
    if out.ndim != 0:
        raise RuntimeError(
            "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
            f"{out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
        )


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``f -> (args -> (grad, value))`` of a scalar function (torch.func.grad_and_value).

    With ``has_aux`` the function returns ``(output, aux)`` and the result is
    ``(grad, (value, aux))``. ``grad`` has the structure of the ``argnums`` arguments.

    Args:
        func: the function to transform, returning a scalar tensor.
        argnums: the positional argument(s) to differentiate with respect to (default 0).
        has_aux: if True, ``func`` returns ``(output, aux)`` and ``aux`` is passed through (default False).

    Example:
        >>> fjax.func.grad_and_value(lambda x: (x ** 3).sum())(fjax.tensor([1.0, 2.0]))
        (tensor([ 3., 12.], dtype=fjax.float32), tensor(9., dtype=fjax.float32))
    """

    def wrapper(*args, **kwargs):
        key = _plan_key("grad_and_value", argnums, has_aux, id(func))
        if (hit := _repeat(key, func, args, kwargs)) is not None:
            return hit
        nums = argnums_tuple(argnums, len(args))
        call = Call("grad_and_value(f)(*args)", func, args, kwargs, nums, has_aux, check=_scalar_output)
        traced, tensors = call.trace()
        diff, n_diff = tuple(call.diff), len(call.diff)

        def transform(program_fn, *xs):
            f, d0 = front.on_inputs(program_fn, xs, diff, 1)
            grads, (value, aux) = front.grad(f, n_diff)(*d0)
            return (*grads, value, *aux)

        def post(res):
            g = call.diff_structure(list(res[:n_diff]), isinstance(argnums, int))
            value = res[n_diff]
            return (g, (value, call.aux(res[n_diff + 1 :]))) if has_aux else (g, value)

        spec, again = ("grad_and_value", diff), _again(key, func, args, kwargs)
        return finish("func.grad_and_value", spec, traced, transform, tensors, record=True, post=post, repeat=again)

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``f -> (args -> grad)`` of a scalar function (torch.func.grad); ``(grad, aux)`` with has_aux.

    Args:
        func: the function to transform, returning a scalar tensor.
        argnums: the positional argument(s) to differentiate with respect to (default 0).
        has_aux: if True, ``func`` returns ``(output, aux)`` and ``aux`` is passed through (default False).

    Example:
        >>> fjax.func.grad(lambda x: (x**3).sum())(fjax.tensor([1.0, 2.0]))
        tensor([ 3., 12.], dtype=fjax.float32)
    """
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


# -- vjp / jvp -------------------------------------------------------------------------------
def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn[, aux])``; ``vjp_fn(cotangents)`` is a tuple shaped like primals.

    Args:
        func: the function to differentiate.
        *primals: the arguments ``func`` is evaluated at.
        has_aux: if True, ``func`` returns ``(output, aux)`` and ``aux`` is returned last (default False).

    Example:
        >>> x = fjax.zeros(2)
        >>> out, vjp_fn = fjax.func.vjp(fjax.sin, x)
        >>> vjp_fn(fjax.ones_like(out))  # (cos(x),)
        (tensor([1., 1.], dtype=fjax.float32),)
    """
    api = "vjp(f, *primals)"
    call = Call(api, func, primals, {}, tuple(range(len(primals))), has_aux)
    traced, tensors = call.trace()
    call.check_float_outputs(traced.program, "vjp(f, ...)")
    n_out, primals_tree = call.n_out, flatten(tuple(primals))[1]
    res = finish("func.vjp", ("identity",), traced, lambda p, *xs: p(*xs), tensors, record=True)
    out = tree_util.tree_unflatten(call.out_tree, list(res[:n_out]))
    out_tree, transform = call.out_tree, front.vjp_transform(len(tensors), n_out, True, outputs=False)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        """The VJPs for ``cotangents`` (shaped like the outputs); ``create_graph`` (default: grad mode
        on) records them on the tape. ``retain_graph`` changes nothing: the VJP is recomputed."""
        flat, tree = flatten(cotangents)
        if tree != out_tree:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs to the "
                f"function. cotangents: {tree}, primal output: {out_tree}"
            )
        for c, o in zip(flat, res[:n_out]):
            if not is_tensor(c) or tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(
                    f"{api}: expected a cotangent of shape {tuple(o.shape)}, got "
                    f"{tuple(c.shape) if is_tensor(c) else type(c)}"
                )
        # inside a transform's trace (vmap of a vjp, a grad of it) grad mode is off while tracing,
        # yet the outer transform differentiates the result: keep it differentiable there
        record = (is_grad_enabled() or trace_state.depth > 0) if create_graph is None else create_graph
        grads = finish("func.vjp", ("vjp", n_out), traced, transform, [*tensors, *flat], record=record)
        return tree_util.tree_unflatten(primals_tree, list(grads))

    if has_aux:
        return out, vjp_fn, call.aux(res[n_out:])
    return out, vjp_fn


def jvp(func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents[, aux])`` by forward mode (torch.func.jvp).

    Args:
        func: a function of tensors.
        primals: the arguments, a tuple.
        tangents: one tangent per primal, a tuple.
        strict: accepted for torch's signature.
        has_aux: ``func`` returns ``(output, aux)``; ``aux`` is returned last.

    Example:
        >>> fjax.func.jvp(lambda x: x ** 2, (fjax.tensor([1.0, 2.0]),), (fjax.ones(2),))
        (tensor([1., 4.], dtype=fjax.float32), tensor([2., 4.], dtype=fjax.float32))
    """
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_tree = flatten(primals)
    flat_t, t_tree = flatten(tangents)
    if p_tree != t_tree:
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python structure. For example, if primals "
            f"is a tuple of 3 tensors, tangents also must be. Got primals with structure {p_tree} and tangents "
            f"with structure {t_tree}"
        )
    for name, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not is_tensor(x):
                raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got {type(x)}")
    for p, t in zip(flat_p, flat_t):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{api}: tangent of shape {tuple(t.shape)} for a primal of shape {tuple(p.shape)}")
    key = None if strict else _plan_key("jvp", has_aux, id(func))
    if key is not None and (hit := repeat(key, func, primals, tangents)) is not None:
        return hit
    call = Call(api, func, primals, {}, tuple(range(len(primals))), has_aux)
    traced, tensors = call.trace()
    program = traced.program
    check_forward_mode(program, "fjax.func.jvp")
    n_out, n = call.n_out, len(tensors)
    if strict and not front.depends(front.program_fn(program, n_out), tensors).any(axis=1).all():
        raise RuntimeError(
            "jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. This is "
            "not allowed with strict=True."
        )

    def post(res):
        out = tree_util.tree_unflatten(call.out_tree, list(res[:n_out]))
        tan = tree_util.tree_unflatten(call.out_tree, list(res[n_out : 2 * n_out]))
        return (out, tan, call.aux(res[2 * n_out :])) if has_aux else (out, tan)

    again = None if key is None else (key, func, (primals, tangents))
    transform = front.jvp_transform(n, n_out, True)
    return finish(
        "func.jvp", ("jvp", n_out), traced, transform, [*tensors, *flat_t], record=True, post=post, repeat=again
    )


# -- Jacobians and Hessians ------------------------------------------------------------------
def _jacobian(name: str, api: str, func, argnums, has_aux: bool, transform_of, spec, depth: int) -> Callable:
    """Shared by jacrev/jacfwd/hessian: ``transform_of(diff, n_out)`` is the ``front`` transform, whose
    results are, per output, ``depth`` levels of argnums blocks, then the aux outputs."""

    def wrapper(*args, **kwargs):
        key = _plan_key(name, spec, argnums, has_aux, id(func))
        if (hit := _repeat(key, func, args, kwargs)) is not None:
            return hit
        nums = argnums_tuple(argnums, len(args))
        call = Call(api, func, args, kwargs, nums, has_aux)
        traced, tensors = call.trace(name)
        program = traced.program
        call.check_float_outputs(program, api.split("(")[0] + "(f, ...)")
        if name != "jacrev":
            check_forward_mode(program, f"fjax.func.{name}")
        diff, n_out, n_diff = tuple(call.diff), call.n_out, len(call.diff)
        transform = transform_of(diff, n_out)

        def post(res):
            single = isinstance(argnums, int)
            per_out, k, step = [], 0, n_diff**depth
            for _ in range(n_out):
                blocks = list(res[k : k + step])
                if depth == 2:
                    blocks = [call.diff_structure(blocks[i * n_diff : (i + 1) * n_diff], single) for i in range(n_diff)]
                per_out.append(call.diff_structure(blocks, single))
                k += step
            jac = tree_util.tree_unflatten(call.out_tree, per_out)
            return (jac, call.aux(res[k:])) if has_aux else jac

        again = _again(key, func, args, kwargs)
        return finish(
            f"func.{name}", (spec, diff, n_out), traced, transform, tensors, record=True, post=post, repeat=again
        )

    return wrapper


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False, chunk_size: int | None = None):
    """``f -> (args -> J)`` by reverse mode (torch.func.jacrev); ``chunk_size`` rows per vectorized pass.

    Args:
        func: a function of tensors.
        argnums: the argument (or arguments) to differentiate.
        has_aux: ``func`` returns ``(output, aux)``; the result is ``(J, aux)``.
        chunk_size: how many rows of J each vectorized pass computes (all by default).

    Example:
        >>> fjax.func.jacrev(lambda x: x ** 2)(fjax.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]], dtype=fjax.float32)
    """
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    def transform_of(diff, n_out):
        return front.jacobian_transform(diff, n_out, False, chunk_size)

    return _jacobian("jacrev", "vjp(f, *primals)", func, argnums, has_aux, transform_of, ("jacrev", chunk_size), 1)


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *, randomness: str = "error"):
    """``f -> (args -> J)`` by forward mode (torch.func.jacfwd).

    ``randomness``: ``"error"`` (random draws inside raise, torch's default) or ``"same"``.

    Args:
        func: the function to transform.
        argnums: the positional argument(s) to differentiate with respect to (default 0).
        has_aux: if True, ``func`` returns ``(output, aux)`` and ``aux`` is passed through (default False).
        randomness: ``'error'`` (random draws inside raise) or ``'same'`` (default 'error').

    Example:
        >>> fjax.func.jacfwd(lambda x: x ** 2)(fjax.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]], dtype=fjax.float32)
    """
    _check_randomness(randomness)
    if randomness == "different":
        raise NotImplementedError("jacfwd: randomness='different' is not supported; use 'same' or 'error'")

    def transform_of(diff, n_out):
        return front.jacobian_transform(diff, n_out, True)

    inner = _jacobian("jacfwd", "jvp(f, primals, tangents)", func, argnums, has_aux, transform_of, ("jacfwd",), 1)

    def wrapper(*args, **kwargs):
        with random_mode(randomness):
            return inner(*args, **kwargs)

    return wrapper


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0):
    """``f -> (args -> H)``: forward-over-reverse Hessian (torch.func.hessian).

    Args:
        func: a function of tensors returning a scalar tensor.
        argnums: the argument (or arguments) to differentiate.

    Example:
        >>> fjax.func.hessian(lambda x: (x ** 3).sum())(fjax.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]], dtype=fjax.float32)
    """

    def transform_of(diff, n_out):
        return front.hessian_transform(diff, n_out, True)

    return _jacobian("hessian", "hessian(f)", func, argnums, False, transform_of, ("hessian",), 2)


# -- vmap ------------------------------------------------------------------------------------
def _check_randomness(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


def _flat_dims(dims, tree, fail):
    """Broadcast a (nested tuple) prefix of dims over ``tree``'s leaves (Tensors are leaves)."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(flatten(tree)[0])
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) and len(dims) == len(tree):
        return [d for sub_d, sub_t in zip(dims, tree) for d in _flat_dims(sub_d, sub_t, fail)]
    if isinstance(dims, dict) and isinstance(tree, dict) and set(dims) == set(tree):
        return [d for k in tree for d in _flat_dims(dims[k], tree[k], fail)]
    fail()


def vmap(
    func: Callable,
    in_dims: int | tuple = 0,
    out_dims: int | tuple = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """Vectorize ``func`` over a batch dimension (torch.func.vmap) with ``jax.vmap``.

    Args:
        in_dims: per positional argument, the batch dim (``None``: not batched); a nested
            tuple matches nested inputs. Keyword arguments are never batched.
        out_dims: the batch dim of each output (``None``: the output must not be batched).
        randomness: ``"error"`` (random draws inside raise), ``"different"`` (each example
            draws its own numbers) or ``"same"`` (one draw shared by the batch).
        chunk_size: examples per vectorized pass (``jax.lax.map`` over chunks); None: all.

    ``fjax.vmap`` is this function (as ``torch.vmap`` is ``torch.func.vmap``).

    Example::

        >>> x, w = fjax.ones(5, 3), fjax.arange(3.0)
        >>> fjax.func.vmap(fjax.dot, in_dims=(0, None))(x, w)
        tensor([3., 3., 3., 3., 3.], dtype=fjax.float32)
    """
    _check_randomness(randomness)

    key = None if randomness == "different" else _plan_key("vmap", in_dims, out_dims, randomness, chunk_size)

    def wrapper(*args, **kwargs):
        if (hit := _repeat(key and (*key, id(func)), func, args, kwargs)) is not None:
            return hit
        name = _name(func)
        if not isinstance(in_dims, (int, tuple)):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a (potentially "
                f"nested) tuple matching the structure of inputs, got: {type(in_dims)}."
            )
        leaves, tree = flatten(tuple(args))

        def incompatible():
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
                f"`inputs`. in_dims has structure {tree_util.tree_structure(in_dims)} but inputs has structure {tree}."
            )

        dims = _flat_dims(in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args), tuple(args), incompatible)
        sizes = []
        for x, d in zip(leaves, dims):
            if d is None:
                continue
            if not isinstance(d, int):
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but in_dim must be "
                    "either an integer dimension or None."
                )
            if not is_tensor(x):
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the input is of "
                    f"type {type(x)}. We cannot vmap over non-Tensor arguments, please use None as the respective "
                    "in_dim"
                )
            if not -x.ndim <= d < x.ndim:
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but that input is "
                    f"a Tensor of dimensionality {x.ndim} so expected in_dim to satisfy -{x.ndim} <= in_dim < {x.ndim}."
                )
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if any(s != sizes[0] for s in sizes):
            raise ValueError(
                f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} for "
                "the mapped dimension"
            )
        batch = sizes[0]
        call = Call(f"vmap({name}, ...)", func, args, kwargs, check=partial(_tensor_outputs, name))
        in_axes = tuple(None if dims[k] is None else dims[k] % leaves[k].ndim for k in call.inputs)
        avals = [_example_aval(leaves[k], a) for k, a in zip(call.inputs, in_axes)]
        index = [jax.core.ShapedArray((), jnp.dtype(jnp.uint32))] if randomness == "different" else []

        def traced(ts):
            if randomness != "different":
                with random_mode(randomness):
                    return call(ts)
            with random_mode(randomness, ts[-1]._data):
                return call(ts[:-1])

        traced_call, tensors = call.trace(f"vmap({name})", traced, avals + index, (randomness, in_axes))
        out_axes = _out_axes(out_dims, call, name)
        axes = in_axes + ((0,) if index else ())
        transform = _vmap_transform(axes, out_axes, batch, chunk_size)
        extra = [Tensor._wrap(jnp.arange(batch, dtype=jnp.uint32))] if index else []
        spec, again = ("vmap", axes, out_axes, batch, chunk_size), _again(key and (*key, id(func)), func, args, kwargs)
        return finish(
            "func.vmap",
            spec,
            traced_call,
            transform,
            [*tensors, *extra],
            record=True,
            post=lambda res: tree_util.tree_unflatten(call.out_tree, list(res)),
            repeat=again,
        )

    return wrapper


def _tensor_outputs(name: str, out) -> None:
    for o in flatten(out)[0]:
        if not is_tensor(o):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(o)}. Did you mean to set "
                "out_dims= to None for output?"
            )


def _example_aval(t: Tensor, axis):
    aval = _program.aval(t)
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1 :])


def _out_axes(out_dims, call: Call, name: str) -> tuple:
    tree = tree_util.tree_unflatten(call.out_tree, [0] * call.n_out)

    def incompatible():
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure of "
            f"`outputs`. out_dims has structure {tree_util.tree_structure(out_dims)} but outputs has structure "
            f"{call.out_tree}."
        )

    if call.n_out == 1 and isinstance(out_dims, tuple) and len(out_dims) == 1 and not isinstance(tree, tuple):
        out_dims = out_dims[0]
    dims = _flat_dims(out_dims, tree, incompatible)
    if any(d is not None and not isinstance(d, int) for d in dims):
        incompatible()
    return tuple(dims)


def _vmap_transform(in_axes: tuple, out_axes: tuple, batch: int, chunk_size: int | None):
    def transform(program_fn, *xs):
        vf = jax.vmap(lambda *a: tuple(program_fn(*a)), in_axes=in_axes, out_axes=out_axes, axis_size=batch)
        if not chunk_size or chunk_size >= batch:
            return vf(*xs)
        jax.eval_shape(vf, *xs)  # the unchunked vmap's errors (a batched output with out_dims=None)
        mapped = [i for i, a in enumerate(in_axes) if a is not None]

        def example(batched):
            full = list(xs)
            for i, v in zip(mapped, batched):
                full[i] = v
            return tuple(program_fn(*full))

        stacked = tuple(jnp.moveaxis(xs[i], in_axes[i], 0) for i in mapped)
        outs = jax.lax.map(lambda b: example(b), stacked, batch_size=chunk_size)
        return tuple(o[0] if a is None else jnp.moveaxis(o, 0, a) for o, a in zip(outs, out_axes))

    return transform


# -- model ensembling -------------------------------------------------------------------------
def stack_module_state(models) -> tuple[dict, dict]:
    """``(params, buffers)``: each model's parameters and buffers stacked along a new dim 0, by
    name (torch.func.stack_module_state), for ``vmap`` over an ensemble of same-class models.

    Stacked parameters are new leaves, detached from the models, that require grad where the
    models' parameters do (they must agree per name); buffers are stacked as they are. All
    models must be of one class and in one mode (train/eval).

    Args:
        models: a list of models of one class, in one mode.

    Example::

        >>> import copy
        >>> models = [nn.Linear(3, 2) for _ in range(4)]
        >>> params, buffers = fjax.func.stack_module_state(models)
        >>> params["weight"].shape, params["weight"].is_leaf, params["weight"].requires_grad
        (fjax.Size([4, 2, 3]), True, True)
        >>> base = copy.deepcopy(models[0]).to("meta")  # a stateless copy: shapes, no values
        >>> def fmodel(params, buffers, x):
        ...     return fjax.func.functional_call(base, (params, buffers), (x,))
        >>> fjax.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, fjax.ones(5, 3)).shape
        fjax.Size([4, 5, 2])
    """
    from .autograd.grad_mode import no_grad
    from .dispatch import functions as _ops

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({bool(m.training) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named) -> dict:
        per_model = [dict(named(m)) for m in models]
        out = {}
        for name in per_model[0]:
            tensors = [d[name] for d in per_model]
            flags = {bool(t.requires_grad) for t in tensors}
            if len(flags) != 1:
                raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
            with no_grad():
                leaf = _ops.stack(tensors)
            out[name] = leaf.requires_grad_() if flags == {True} else leaf
        return out

    return stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers())


# -- torch.func's smaller utilities ------------------------------------------------------------
def linearize(func: Callable, *primals):
    """``(func(*primals), jvp_fn)``, where ``jvp_fn(*tangents)`` is the Jacobian-vector product
    of ``func`` at ``primals`` (torch.func.linearize).

    Each ``jvp_fn`` call is ``fjax.func.jvp`` at the saved primals (forward mode, compiled once
    and reused across calls), so it returns what torch's does.

    Args:
        func: a function of Tensors returning a Tensor or a pytree of them.
        *primals: the point to linearize at, Tensors.

    Example:
        >>> x = fjax.tensor([1.0, 2.0])
        >>> out, jvp_fn = fjax.func.linearize(lambda t: t ** 2, x)
        >>> out, jvp_fn(fjax.ones(2))
        (tensor([1., 4.], dtype=fjax.float32), tensor([2., 4.], dtype=fjax.float32))
    """
    primals = tuple(primals)
    flat_p, p_tree = flatten(primals)
    if not flat_p or not all(is_tensor(p) for p in flat_p):
        raise RuntimeError("linearize(func, *primals): expected primals to be Tensors (and at least one)")
    out, _ = jvp(func, primals, tree_util.tree_unflatten(p_tree, [p.detach() * 0 for p in flat_p]))

    def jvp_fn(*tangents):
        flat_t, t_tree = flatten(tuple(tangents))
        if t_tree != p_tree:
            raise RuntimeError(
                f"linearize: jvp_fn expected tangents with the structure of the primals {p_tree}, got {t_tree}"
            )
        for p, t in zip(flat_p, flat_t):
            if not is_tensor(t) or tuple(t.shape) != tuple(p.shape) or t.dtype != p.dtype:
                raise RuntimeError(
                    f"linearize: jvp_fn expected a tangent of shape {tuple(p.shape)} and dtype {p.dtype}, got "
                    f"{(tuple(t.shape), t.dtype) if is_tensor(t) else type(t)}"
                )
        return jvp(func, primals, tuple(tangents))[1]

    return out, jvp_fn


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """``func`` with mutations removed (torch.func.functionalize). fjax is functional
    underneath: in-place Tensor methods already rebind a Tensor to a new jax array, and every
    transform traces that into a pure program, so this returns ``func`` itself (wrapped).

    Args:
        func: the function.
        remove: ``"mutations"`` or ``"mutations_and_views"`` (both mean the same on fjax).

    Example:
        >>> def f(x):
        ...     y = x.clone()
        ...     y.add_(1)
        ...     return y
        >>> fjax.func.functionalize(f)(fjax.zeros(2))
        tensor([1., 1.], dtype=fjax.float32)
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): could not interpret {remove!r} as a valid option for remove. "
            "Expected one of 'mutations' or 'mutations_and_views'"
        )

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def replace_all_batch_norm_modules_(root):
    """Make every batch norm module in ``root`` use batch statistics only, in place
    (``torch.func.replace_all_batch_norm_modules_``): ``running_mean``, ``running_var`` and
    ``num_batches_tracked`` become None and ``track_running_stats`` False. Returns ``root``.

    Args:
        root: an ``nn.Module``.

    Example:
        >>> m = fjax.func.replace_all_batch_norm_modules_(nn.Sequential(nn.BatchNorm1d(3)))
        >>> m[0].running_mean is None, m[0].track_running_stats
        (True, False)
    """
    from .nn.modules.normalization import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """The Tensor under torch.func's wrappers (torch.func.debug_unwrap): fjax's transforms pass
    plain Tensors to the function, so this returns ``tensor`` itself.

    Args:
        tensor: the Tensor.
        recurse: accepted (nothing to unwrap at any level).

    Example:
        >>> x = fjax.ones(2)
        >>> fjax.func.debug_unwrap(x) is x
        True
    """
    return tensor
