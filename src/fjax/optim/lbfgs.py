"""L-BFGS with torch's closure API; the inverse-Hessian product is ``optax.scale_by_lbfgs``.

The outer loop (evaluations, step length, stopping tests, strong-Wolfe line search) is
torch's, run on the host with Python scalars exactly where torch reads them. The L-BFGS
direction comes from ``optax.scale_by_lbfgs`` on the flattened parameters, fed torch's
pairs: ``s = d*t`` (the step taken) and ``y = g - g_prev``.

Differences from torch, all below float32 rounding in practice:

- torch skips a pair with ``y.s <= 1e-10``; optax would store it. fjax replays the last
  accepted pair instead (the memory and the initial scaling ``H_diag`` stay torch's), which
  reconstructs that pair as ``g - (g - y)``: the direction of such a step differs from
  torch's by that rounding.
- the strong-Wolfe interpolation runs in float64 Python scalars (torch: float32 tensors), so
  a float32 step length can differ from torch's in its last digits.
- ``state_dict()`` has torch's keys except ``al`` (torch's scratch buffer for the two loops).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import optax

from ..autograd.grad_mode import enable_grad
from ..errors import OpError
from ..tensor import Tensor
from ._hyper import nonnegative
from .optimizer import Optimizer, _as_array, _scalar


@functools.partial(jax.jit, static_argnums=(0, 4))
def _direction(memory_size: int, mem, g, s, case: str):
    """The L-BFGS descent direction ``-P g`` and the updated optax memory."""
    tx = optax.scale_by_lbfgs(memory_size)
    zeros = jnp.zeros_like(g)
    if case == "first":  # torch's first direction is -g; optax only records g
        _, mem = tx.update(g, mem, zeros)
        return -g, mem
    if case == "accept":  # state.params = 0 and params = s make optax's pair exactly (s, y)
        u, new = tx.update(g, mem._replace(params=zeros), s)
        return -u, new
    if case == "no_pairs":  # rejected pair, empty memory: torch's H is the identity
        return -g, mem._replace(updates=g)
    last = (mem.count - 2) % memory_size  # "reject": replay the last accepted pair, keep the memory
    replay = mem._replace(count=mem.count - 1, params=zeros, updates=g - mem.diff_updates_memory[last])
    u, new = tx.update(g, replay, mem.diff_params_memory[last])
    return -u, new._replace(
        diff_params_memory=mem.diff_params_memory,
        diff_updates_memory=mem.diff_updates_memory,
        weights_memory=mem.weights_memory,
    )


@jax.jit
def _curvature(g, prev_g, d, t):
    s = d * t
    return s, jnp.vdot(g - prev_g, s)


@jax.jit
def _flatten(arrays):
    return jnp.concatenate([a.reshape(-1) for a in arrays])


@jax.jit
def _moved(arrays, d, t):
    out, offset = [], 0
    for a in arrays:
        out.append((a + t * d[offset : offset + a.size].reshape(a.shape)).astype(a.dtype))
        offset += a.size
    return out


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """Minimiser of the cubic through two points with slopes (torch's ``_cubic_interpolate``)."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square**0.5
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


def _strong_wolfe(obj_func, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """torch's strong-Wolfe line search (bracketing, then cubic zoom).

    Returns:
        ``(f_new, g_new, t, number_of_evaluations)``.
    """
    d_norm = float(jnp.abs(d).max())
    f_new, g_new = obj_func(t)
    evals, gtd_new = 1, float(jnp.vdot(g_new, d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done, ls_iter = False, 0
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket, bf, bg, bgtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bf, bg, bgtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bf, bg, bgtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = obj_func(t)
        evals, gtd_new = evals + 1, float(jnp.vdot(g_new, d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bf, bg, bgtd = [0.0, t], [f, f_new], [g, g_new], [gtd, gtd_new]
    insuf_progress = False
    low, high = (0, 1) if bf[0] <= bf[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bf[0], bgtd[0], bracket[1], bf[1], bgtd[1])
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insuf_progress or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(t)
        evals, gtd_new = evals + 1, float(jnp.vdot(g_new, d))
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bf[low]:
            bracket[high], bf[high], bg[high], bgtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bf[0] <= bf[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bf[high], bg[high], bgtd[high] = bracket[low], bf[low], bg[low], bgtd[low]
            bracket[low], bf[low], bg[low], bgtd[low] = t, f_new, g_new, gtd_new
    return bf[low], bg[low], bracket[low], evals


class LBFGS(Optimizer):
    """L-BFGS, ``torch.optim.LBFGS``: ``step(closure)`` runs up to ``max_iter`` iterations.

    Args:
        params: the parameters (one group only, as torch).
        lr: step length (the first iteration uses ``min(1, 1/|g|_1) * lr``).
        max_iter: iterations per ``step``.
        max_eval: closure evaluations per ``step`` (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when ``max|g| <= tolerance_grad``.
        tolerance_change: stop when the loss or the step changes less than this.
        history_size: number of (s, y) pairs kept.
        line_search_fn: None (fixed step) or ``"strong_wolfe"``.

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.LBFGS([w], lr=1, line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - 3) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)  # returns the first loss
        tensor(29., dtype=fjax.float32, grad_fn=...)
        >>> w.data  # the quadratic's minimum
        tensor([3.0000, 3.0000], dtype=fjax.float32)
    """

    def __init__(
        self,
        params,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ):
        nonnegative("LBFGS", "lr", lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(
                f"fjax.optim.LBFGS: only 'strong_wolfe' is supported as line_search_fn, got {line_search_fn!r}"
            )
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("fjax.optim.LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return _flatten([jnp.zeros_like(p._data) if p.grad is None else p.grad._data for p in self._params])

    def _set(self, arrays) -> None:
        for p, a in zip(self._params, arrays):
            p._data = a
            p._vc[0] += 1

    def _evaluate(self, closure) -> float:
        with enable_grad():
            return float(closure())

    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations; ``closure`` re-evaluates the loss and its gradients.

        Returns:
            The loss of the first closure call.

        Example:
            >>> w = nn.Parameter(fjax.tensor([1.0, -1.0]))
            >>> opt = optim.LBFGS([w], lr=1)
            >>> def closure():
            ...     opt.zero_grad()
            ...     loss = ((w - 3) ** 2).sum()
            ...     loss.backward()
            ...     return loss
            >>> opt.step(closure)  # the loss before the first iteration
            tensor(20., dtype=fjax.float32, grad_fn=<sumBackward>)
            >>> [round(v, 4) for v in w.tolist()]
            [3.0, 3.0]
        """
        if closure is None:
            raise OpError(
                "fjax.optim.LBFGS.step: a closure that re-evaluates the model and returns the loss is required"
            )
        group = self.param_groups[0]
        lr, max_iter, max_eval = _scalar(group["lr"]), group["max_iter"], group["max_eval"]
        tol_grad, tol_change, memory = group["tolerance_grad"], group["tolerance_change"], group["history_size"]
        state = self._state.setdefault(self._params[0], {"func_evals": 0, "n_iter": 0})

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if float(jnp.abs(g).max()) <= tol_grad:
            return orig_loss

        d, t, mem, prev_loss = state.get("d"), state.get("t"), state.get("mem"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                mem = optax.scale_by_lbfgs(memory).init(g)
                d, mem = _direction(memory, mem, g, g, "first")
            else:
                s, ys = _curvature(g, mem.updates, d, t)
                case = "accept" if float(ys) > 1e-10 else "reject" if int(mem.count) >= 2 else "no_pairs"
                d, mem = _direction(memory, mem, g, s, case)
            prev_loss = loss
            t = min(1.0, 1.0 / float(jnp.abs(g).sum())) * lr if state["n_iter"] == 1 else lr
            gtd = float(jnp.vdot(g, d))
            if gtd > -tol_change:
                break

            evals = 0
            if group["line_search_fn"] is not None:
                x0 = [p._data for p in self._params]

                def obj_func(step, x0=x0, d=d):
                    self._set(_moved(x0, d, step))
                    f = self._evaluate(closure)
                    flat = self._flat_grad()
                    self._set(x0)
                    return f, flat

                loss, g, t, evals = _strong_wolfe(obj_func, t, d, loss, g, gtd, max_ls=max_eval - current_evals)
                self._set(_moved([p._data for p in self._params], d, t))
                opt_cond = float(jnp.abs(g).max()) <= tol_grad
            else:
                self._set(_moved([p._data for p in self._params], d, t))
                opt_cond = False
                if n_iter != max_iter:  # as torch: no re-evaluation after the last iteration
                    loss = self._evaluate(closure)
                    g = self._flat_grad()
                    opt_cond = float(jnp.abs(g).max()) <= tol_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(jnp.abs(d * t).max()) <= tol_change or abs(loss - prev_loss) < tol_change:
                break

        state.update(d=d, t=t, mem=mem, prev_loss=prev_loss)
        return orig_loss

    # -- torch-structured state ----------------------------------------------------------
    def _to_torch(self, p: Tensor) -> dict:
        state = self._state[p]
        out = {"func_evals": state["func_evals"], "n_iter": state["n_iter"]}
        mem = state.get("mem")
        if mem is None:
            return out
        m, pairs = mem.weights_memory.shape[0], int(mem.count) - 1
        slots = [(j - 1) % m for j in range(max(1, pairs - m + 1), pairs + 1)]
        old_dirs = [Tensor._wrap(mem.diff_updates_memory[k]) for k in slots]
        old_stps = [Tensor._wrap(mem.diff_params_memory[k]) for k in slots]
        h_diag = 1.0
        if slots:
            s, y = mem.diff_params_memory[slots[-1]], mem.diff_updates_memory[slots[-1]]
            h_diag = Tensor._wrap(jnp.vdot(y, s) / jnp.vdot(y, y))
        out.update(
            d=Tensor._wrap(state["d"]),
            t=state["t"],
            old_dirs=old_dirs,
            old_stps=old_stps,
            ro=[Tensor._wrap(mem.weights_memory[k].astype(mem.updates.dtype)) for k in slots],
            H_diag=h_diag,
            prev_flat_grad=Tensor._wrap(mem.updates),
            prev_loss=state["prev_loss"],
        )
        return out

    def _load_entry(self, p: Tensor, entry: Mapping, group: dict, index: int) -> tuple:
        where = f"fjax.optim.LBFGS.load_state_dict: state of param {index}"
        state = {"func_evals": int(entry.get("func_evals", 0)), "n_iter": int(entry.get("n_iter", 0))}
        if entry.get("d") is None:
            return state, ()
        flat = _flatten([q._data for q in self._params])
        memory = group["history_size"]
        dirs, stps, ro = entry["old_dirs"], entry["old_stps"], entry["ro"]
        if len(dirs) > memory:
            raise OpError(f"{where}: {len(dirs)} stored pairs exceed history_size={memory}")
        mem = optax.scale_by_lbfgs(memory).init(flat)
        slots = [(j - 1) % memory for j in range(1, len(dirs) + 1)]
        dpm, dum, wm = mem.diff_params_memory, mem.diff_updates_memory, mem.weights_memory
        for k, y, s, r in zip(slots, dirs, stps, ro):
            dum = dum.at[k].set(_as_array(y, flat, f"{where}, old_dirs"))
            dpm = dpm.at[k].set(_as_array(s, flat, f"{where}, old_stps"))
            wm = wm.at[k].set(_scalar(r))
        mem = mem._replace(
            count=jnp.asarray(len(dirs) + 1, jnp.int32),
            diff_params_memory=dpm,
            diff_updates_memory=dum,
            weights_memory=wm,
            updates=_as_array(entry["prev_flat_grad"], flat, f"{where}, prev_flat_grad"),
        )
        state.update(
            d=_as_array(entry["d"], flat, f"{where}, d"),
            t=_scalar(entry["t"]),
            mem=mem,
            prev_loss=None if entry.get("prev_loss") is None else float(entry["prev_loss"]),
        )
        return state, ()
