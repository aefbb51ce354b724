"""torch.autograd.gradcheck and gradgradcheck: the tape's gradients against central finite
differences, element by element, as torch's slow (default) mode does."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when a gradient is wrong.

    Example:
        >>> from fjax.autograd.gradcheck import GradcheckError
        >>> issubclass(GradcheckError, RuntimeError)
        True
    """


def _tensors(x) -> tuple:
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _differentiable(outputs) -> list:
    return [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad and o.dtype.is_floating_point]


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _numerical(func, inputs, i, out_indices, eps) -> list:
    """d outputs / d inputs[i] by central differences: one (numel_in, numel_out) array per output."""
    x = inputs[i]
    base = np.array(x.detach().numpy(), dtype=x._data.dtype)
    flat = base.reshape(-1)
    cols = {j: [] for j in out_indices}
    for k in range(flat.size):
        values = []
        for delta in (eps, -eps):
            pert = flat.copy()
            pert[k] = pert[k] + delta
            args = list(inputs)
            args[i] = Tensor._wrap(jnp.asarray(pert.reshape(base.shape))).requires_grad_(x.requires_grad)
            outs = _tensors(func(*args))  # with grad on: gradgradcheck's function differentiates inside
            values.append({j: np.asarray(outs[j].detach().numpy(), np.float64).reshape(-1) for j in out_indices})
        for j in out_indices:
            cols[j].append((values[0][j] - values[1][j]) / (2 * eps))
    return [np.stack(cols[j]) if cols[j] else np.zeros((0, 0)) for j in out_indices]


def _analytical(outputs, inputs, i, out_indices) -> list:
    """d outputs / d inputs[i] from the tape: one backward per output element."""
    from .api import grad

    result = []
    for j in out_indices:
        out = outputs[j]
        n = out.numel()
        jac = np.zeros((inputs[i].numel(), n))
        for k in range(n):
            seed = np.zeros(n, dtype=out._data.dtype)
            seed[k] = 1
            (g,) = grad(
                out,
                inputs[i],
                Tensor._wrap(jnp.asarray(seed.reshape(tuple(out.shape)))),
                retain_graph=True,
                allow_unused=True,
            )
            if g is not None:
                jac[:, k] = np.asarray(g.detach().numpy(), np.float64).reshape(-1)
        result.append(jac)
    return result


def _unsupported(name: str, **flags) -> None:
    for flag, (value, default) in flags.items():
        if value != default:
            raise NotImplementedError(f"{name}: {flag}={value!r} is not supported by fjax (only {default!r})")


def gradcheck(
    func,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked=None,
) -> bool:
    """Check the gradients ``func`` records against finite differences (torch.autograd.gradcheck).

    For every input that requires grad and every floating output, the Jacobian from the tape
    (one backward per output element) must match central differences with step ``eps`` within
    ``|analytical - numerical| <= atol + rtol * |numerical|``. Use float64 inputs: in float32
    the finite differences themselves are too inexact (a warning says so, as torch's).

    Args:
        func: a function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of them (and other values, passed as they are).
        eps: the finite-difference step.
        atol: the absolute tolerance.
        rtol: the relative tolerance.
        raise_exception: True: raise GradcheckError on a mismatch; False: return False.
        nondet_tol: accepted (fjax's backward is deterministic: always 0).
        check_undefined_grad: accepted; fjax gives zeros for unused outputs' gradients.
        check_grad_dtypes: whether each gradient must have its input's dtype.
        check_batched_grad: not supported (only False).
        check_batched_forward_grad: not supported (only False).
        check_forward_ad: not supported (only False).
        check_backward_ad: whether to check reverse mode (the only check fjax makes).
        fast_mode: not supported (only False: torch's default, element-wise check).
        masked: accepted; sparse inputs are not supported.

    Example:
        >>> x = fjax.randn(3, dtype=fjax.float64, requires_grad=True)
        >>> fjax.autograd.gradcheck(fjax.sin, (x,))
        True
    """
    _unsupported(
        "gradcheck",
        check_batched_grad=(check_batched_grad, False),
        check_batched_forward_grad=(check_batched_forward_grad, False),
        check_forward_ad=(check_forward_ad, False),
        fast_mode=(fast_mode, False),
    )
    inputs = _tensors(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have requires_grad=True."
        )
    for i in diff:
        if inputs[i].dtype.is_complex:
            raise NotImplementedError(f"gradcheck: complex input #{i} is not supported by fjax")
        if inputs[i].dtype != _dt.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. "
                "This check will likely fail if all the inputs are not of double precision floating point. ",
                UserWarning,
                stacklevel=2,
            )
    if not check_backward_ad:
        return True
    outputs = _tensors(func(*inputs))
    out_indices = _differentiable(outputs)
    if not out_indices:
        return _fail("gradcheck: none of the outputs is differentiable (requires grad)", raise_exception)
    for i in diff:
        if check_grad_dtypes:
            from .api import grad

            for j in out_indices:
                (g,) = grad(outputs[j].sum(), inputs[i], retain_graph=True, allow_unused=True)
                if g is not None and g.dtype != inputs[i].dtype:
                    return _fail(
                        f"Gradient has dtype mismatch: got {g.dtype} for input #{i} of {inputs[i].dtype}",
                        raise_exception,
                    )
        numerical = _numerical(func, inputs, i, out_indices, eps)
        analytical = _analytical(outputs, inputs, i, out_indices)
        for j, n, a in zip(out_indices, numerical, analytical):
            if not np.all(np.abs(a - n) <= atol + rtol * np.abs(n)):
                return _fail(
                    f"Jacobian mismatch for output {j} with respect to input {i},\n"
                    f"numerical:{Tensor._wrap(jnp.asarray(n))}\nanalytical:{Tensor._wrap(jnp.asarray(a))}\n",
                    raise_exception,
                )
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second-order gradients (torch.autograd.gradgradcheck): ``gradcheck`` of the map
    ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs,
    create_graph=True)``.

    Args:
        func: a function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of them.
        grad_outputs: the vectors of the vector-Jacobian product, one per differentiable
            output (default: random float64 tensors that require grad).
        eps: the finite-difference step.
        atol: the absolute tolerance.
        rtol: the relative tolerance.
        gen_non_contig_grad_outputs: accepted (fjax tensors have no strides to vary).
        raise_exception: True: raise GradcheckError on a mismatch; False: return False.
        nondet_tol: accepted (fjax's backward is deterministic).
        check_undefined_grad: accepted.
        check_grad_dtypes: whether each gradient must have its input's dtype.
        check_batched_grad: not supported (only False).
        check_fwd_over_rev: not supported (only False).
        check_rev_over_rev: whether to check reverse-over-reverse (the only check fjax makes).
        fast_mode: not supported (only False).
        masked: accepted; sparse inputs are not supported.

    Example:
        >>> x = fjax.randn(3, dtype=fjax.float64, requires_grad=True)
        >>> fjax.autograd.gradgradcheck(lambda t: t**3, (x,))
        True
    """
    _unsupported(
        "gradgradcheck",
        check_batched_grad=(check_batched_grad, False),
        check_fwd_over_rev=(check_fwd_over_rev, False),
        fast_mode=(fast_mode, False),
    )
    from .. import random
    from .api import grad

    inputs = _tensors(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if grad_outputs is None:
        outputs = _tensors(func(*inputs))
        grad_outputs = tuple(
            random.randn(*outputs[j].shape, dtype=outputs[j].dtype).requires_grad_(True)
            for j in _differentiable(outputs)
        )
    else:
        grad_outputs = _tensors(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        xs, gos = args[:n_in], args[n_in:]
        outs = _tensors(func(*xs))
        outs = [outs[j] for j in _differentiable(outs)]
        grads = grad(outs, [xs[i] for i in diff], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    if not check_rev_over_rev:
        return True
    return gradcheck(
        first_order,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
    )
