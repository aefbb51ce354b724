"""Pipeline parallelism over a mesh ``pipe`` axis: a repeated block, S stages, M micro-batches.

A model whose middle is ``L`` copies of one block (GPT blocks, LSTM layers) keeps those
blocks' parameters stacked on a leading dim of size ``L``; the ``pipe`` axis splits it, so
stage ``s`` holds layers ``s*L/S .. (s+1)*L/S - 1``. Everything runs as ONE SPMD program:

- stage bodies under ``jax.shard_map`` over the pipe axis (a ``lax.scan`` over the stage's
  layers), activations and gradients passed between neighbouring stages with ``lax.ppermute``,
  the clock ticks in a ``lax.scan`` (compile time does not grow with ``M``);
- a schedule is a table ``(ticks, stages)`` of actions (idle, forward or backward of micro-batch
  ``m``), as ``torch.distributed.pipelining`` lists per-stage actions: the same table drives the
  program, the dry-run checks (``Schedule.check``: every dependency met, no deadlock) and the
  counts (``bubble_fraction``, ``peak_in_flight``);
- ``"gpipe"``: all forwards, then JAX's reverse of that scan (``jax.grad`` through it, as MaxText's
  ``layers/pipeline.py``): every stage keeps the residuals of all ``M`` micro-batches;
- ``"1f1b"`` (PipeDream-flush): after ``S - s`` warm-up forwards, stage ``s`` alternates one
  forward and one backward, so it holds at most ``S - s`` micro-batches' inputs. The backward
  of a micro-batch runs inside the same tick loop, so the loss head runs on the last stage and
  the whole pipeline is a ``jax.custom_vjp`` whose forward returns the loss and keeps the
  gradients (``jax.grad`` through it works). A backward recomputes its stage's forward from the
  stashed input (``jax.vjp``): memory is S stage inputs, not M stages of residuals.
- ``"gpipe_table"``: GPipe's order run by the 1F1B machinery (a check that both executors agree).

Entry points: ``pipeline_loss`` (pure JAX), ``PipelineStack`` (an nn.Module wrapping a stack of
identical fjax blocks: GPipe inside eager code or an nn.Graph on a mesh with a pipe axis).
``Schedule.make`` builds and checks a table.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from ..errors import OpError

IDLE, FORWARD, BACKWARD, BACKWARD_LAST = 0, 1, 2, 3
SCHEDULES = ("gpipe", "1f1b", "gpipe_table")


@dataclass(frozen=True)
class Schedule:
    """A pipeline schedule: ``ops[t, s]`` (IDLE, FORWARD, BACKWARD, BACKWARD_LAST) of micro-batch
    ``micro[t, s]`` on stage ``s`` at tick ``t``; ``stash``/``grad_slots``: ring-buffer sizes the
    executor needs (found by replaying the table).

    Example:
        >>> s = Schedule.make("1f1b", stages=4, microbatches=8)
        >>> s.peak_in_flight(), Schedule.make("gpipe", 4, 8).peak_in_flight()
        (4, 8)
    """

    name: str
    stages: int
    microbatches: int
    ops: np.ndarray
    micro: np.ndarray
    stash: int
    grad_slots: int

    @classmethod
    def make(cls, name: str, stages: int, microbatches: int) -> Schedule:
        """Build the table of ``name`` ("gpipe", "1f1b" or "gpipe_table") by a greedy simulation
        (backward first for 1F1B with ``S - s`` micro-batches in flight on stage ``s``; forward
        first and no limit for GPipe), then check it.

        Args:
            name: the schedule.
            stages: S, the size of the pipe axis.
            microbatches: M.

        Example:
            >>> Schedule.make("gpipe", stages=2, microbatches=2).ops.tolist()
            [[1, 0], [1, 1], [0, 1], [0, 3], [2, 3], [2, 0]]
        """
        if name not in SCHEDULES:
            raise OpError(f"pipeline: unknown schedule {name!r}; expected one of {SCHEDULES}")
        S, M = int(stages), int(microbatches)
        if S < 1 or M < 1:
            raise OpError(f"pipeline: stages and microbatches must be >= 1, got stages={S}, microbatches={M}")
        one_f_one_b = name == "1f1b"
        f_time = np.full((S, M), -1)
        b_time = np.full((S, M), -1)
        f_done, b_done = [0] * S, [0] * S
        rows = []
        t = 0
        while min(b_done) < M:
            row_ops, row_mic = [IDLE] * S, [0] * S
            for s in range(S):
                mb, mf = b_done[s], f_done[s]
                can_b = mb < M and 0 <= f_time[s, mb] < t and (s == S - 1 or 0 <= b_time[s + 1, mb] < t)
                limit = S - s if one_f_one_b else M
                can_f = mf < M and (s == 0 or 0 <= f_time[s - 1, mf] < t) and mf - mb < limit
                if not one_f_one_b and can_f:
                    can_b = False
                if can_b:
                    row_ops[s], row_mic[s] = (BACKWARD_LAST if s == S - 1 else BACKWARD), mb
                    b_time[s, mb], b_done[s] = t, mb + 1
                elif can_f:
                    row_ops[s], row_mic[s] = FORWARD, mf
                    f_time[s, mf], f_done[s] = t, mf + 1
            rows.append((row_ops, row_mic))
            t += 1
            if t > 4 * (M + S) + 8:
                raise OpError(f"pipeline: schedule {name!r} deadlocked with stages={S}, microbatches={M}")
        ops = np.array([r[0] for r in rows], np.int32)
        micro = np.array([r[1] for r in rows], np.int32)
        # the stash slot of micro-batch m on stage s is written at the end of its arrival tick (the
        # previous stage's forward; stage 0: its own) and read last by its backward
        arrive = np.concatenate([f_time[:1], f_time[:-1]], axis=0)
        stash = _ring_size(arrive, b_time)
        grad_slots = _ring_size(b_time[1:], b_time[:-1]) if S > 1 else 1
        schedule = cls(name, S, M, ops, micro, stash, grad_slots)
        schedule.check()
        return schedule

    def check(self) -> None:
        """Replay the table: each micro-batch runs forward then backward once per stage, after its
        neighbours' (raises OpError naming the tick, stage and micro-batch otherwise)."""
        S, M = self.stages, self.microbatches
        f, b = np.full((S, M), -1), np.full((S, M), -1)
        for t, s in zip(*np.nonzero(self.ops)):
            m, op = self.micro[t, s], self.ops[t, s]
            table = f if op == FORWARD else b
            if table[s, m] >= 0:
                raise OpError(f"pipeline schedule {self.name}: stage {s} runs micro-batch {m} twice (tick {t})")
            table[s, m] = t
        for s in range(S):
            for m in range(M):
                deps = [f[s, m] < b[s, m]]
                if s:
                    deps.append(f[s - 1, m] < f[s, m])
                if s < S - 1:
                    deps.append(b[s + 1, m] < b[s, m])
                if min(f[s, m], b[s, m]) < 0 or not all(deps):
                    raise OpError(f"pipeline schedule {self.name}: stage {s}, micro-batch {m} runs out of order")

    @property
    def ticks(self) -> int:
        """How many ticks the table has."""
        return len(self.ops)

    def bubble_fraction(self) -> float:
        """The fraction of (tick, stage) slots with no forward or backward, counting a backward as
        one slot (theory for GPipe and 1F1B with equal forward and backward: (S-1)/(M+S-1))."""
        return float((self.ops == IDLE).mean())

    def peak_in_flight(self) -> int:
        """The most micro-batches any stage has run forward and not yet backward."""
        live = np.cumsum(self.ops == FORWARD, axis=0) - np.cumsum(self.ops >= BACKWARD, axis=0)
        return int(live.max())


def _ring_size(write: np.ndarray, read: np.ndarray) -> int:
    """The smallest K so that slot ``m % K`` of each row holds micro-batch m from the end of tick
    ``write[s, m]`` until tick ``read[s, m]`` without overwriting a live one."""
    M = write.shape[1]
    for k in range(1, M + 1):
        ok = True
        for w, r in zip(write, read):
            for m in range(k, M):
                if w[m] < r[m - k]:  # m's write lands before the previous holder's last read
                    ok = False
                    break
            if not ok:
                break
        if ok:
            return k
    return M


def _stage_fn(block_fn):
    """A stage: the block applied once per local layer (``lax.scan`` over the stacked dim)."""

    def stage(params, h):
        return jax.lax.scan(lambda c, p: (block_fn(p, c), None), h, params)[0]

    return stage


def _check_args(params, x, mesh, axis, target):
    if axis not in mesh.axis_names:
        raise OpError(f"pipeline_loss: the mesh has axes {tuple(mesh.axis_names)}, no pipe axis {axis!r}")
    S = mesh.shape[axis]
    leaves = jax.tree.leaves(params)
    if not leaves:
        raise OpError("pipeline_loss: the block parameters are empty")
    layers = {np.shape(a)[0] if np.ndim(a) else None for a in leaves}
    if len(layers) != 1 or None in layers:
        raise OpError(f"pipeline_loss: every block parameter must be stacked on dim 0 alike, got leading dims {layers}")
    (L,) = layers
    if L < S or L % S:
        raise OpError(f"pipeline_loss: {L} stacked layers cannot split over {S} stages of axis {axis!r}")
    M = np.shape(x)[0]
    if np.shape(target)[:1] != (M,):
        raise OpError(
            f"pipeline_loss: x has {M} micro-batches (dim 0 of shape {np.shape(x)}), "
            f"target has shape {np.shape(target)}"
        )
    return S, M


def pipeline_loss(
    block_fn,
    params,
    x,
    loss_fn,
    loss_params,
    target,
    *,
    mesh,
    axis: str = "pipe",
    schedule: str = "1f1b",
    branch_free: bool | None = None,
):
    """The mean over micro-batches of ``loss_fn(loss_params, blocks(x[m]), target[m])``, pipelined.

    ``blocks`` applies ``block_fn(layer_params, h) -> h`` once per layer of ``params`` (a tree
    whose leaves are stacked on dim 0, one entry per layer). Differentiable in ``params``, ``x``
    and ``loss_params`` with ``jax.grad``; every schedule gives the same numbers.

    Args:
        block_fn: one layer, ``(layer_params, h) -> h`` (same shape in and out).
        params: the layers' parameters, every leaf stacked on dim 0 (``L`` layers, ``L % S == 0``).
        x: micro-batched inputs, shape ``(M, micro_batch, ...)``.
        loss_fn: ``(loss_params, h, target_m) -> scalar``, run on the last stage.
        loss_params: a tree of arrays (the head), replicated.
        target: shape ``(M, ...)``, one entry per micro-batch.
        mesh: a ``jax.sharding.Mesh`` with the pipe axis.
        axis: the pipe axis name.
        schedule: "1f1b" (default), "gpipe" or "gpipe_table".
        branch_free: run every table tick as the same program on every stage (one forward and
            vector-Jacobian product, its parts kept by masks) instead of a ``lax.switch`` per
            stage. Default: on when the mesh has another axis of size > 1, whose collectives
            (data- or tensor-parallel shardings propagated by XLA) must run on every device
            alike; a collective inside one stage's branch waits for the others forever.

    Other mesh axes stay automatic (``shard_map`` is manual over ``axis`` only): place ``params``
    with a tensor-parallel ``NamedSharding`` and ``x``'s micro-batch dim over a data axis, and
    XLA keeps them sharded inside each stage (DP x TP x PP is one program).

    Example:
        >>> import jax, jax.numpy as jnp, numpy as np
        >>> mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("pipe",))
        >>> w = jnp.ones((2, 3, 3)) * 0.1
        >>> x = jnp.ones((4, 2, 3))
        >>> loss = pipeline_loss(lambda p, h: jnp.tanh(h @ p), w, x, lambda lp, h, t: ((h - t) ** 2).mean(),
        ...                      (), jnp.zeros((4, 2, 3)), mesh=mesh)
        >>> round(float(loss), 4)
        0.0076
    """
    S, M = _check_args(params, x, mesh, axis, target)
    if schedule == "gpipe":
        return _gpipe_loss(block_fn, params, x, loss_fn, loss_params, target, mesh, axis, S, M)
    sched = Schedule.make(schedule, S, M)
    if branch_free is None:
        branch_free = any(n != axis and size > 1 for n, size in mesh.shape.items())
    return _table_loss(block_fn, loss_fn, mesh, axis, sched, branch_free)(params, x, loss_params, target)


def _gpipe_loss(block_fn, params, x, loss_fn, loss_params, target, mesh, axis, S, M):
    outs = _gpipe_forward(block_fn, params, x, mesh, axis, S, M)
    losses = jax.vmap(loss_fn, in_axes=(None, 0, 0))(loss_params, outs, target)
    return losses.mean()


def _gpipe_forward(block_fn, params, x, mesh, axis, S, M):
    """The last stage's outputs ``(M, micro_batch, ...)`` of GPipe's forward (autodiff gives its backward)."""
    stage = _stage_fn(block_fn)
    T = M + S - 1
    forward_perm = [(i, i + 1) for i in range(S - 1)]

    def run(p, xs):
        s = jax.lax.axis_index(axis)

        def tick(state, t):
            h = jnp.where(s == 0, xs[jnp.minimum(t, M - 1)], state)
            y = stage(p, h)
            return jax.lax.ppermute(y, axis, forward_perm), y

        _, ys = jax.lax.scan(tick, jnp.zeros_like(xs[0]), jnp.arange(T))
        return ys[S - 1 :][None]

    outs = _manual_over(axis, run, mesh, (P(axis), P()), P(axis))(params, x)
    return outs[S - 1]


def _manual_over(axis, fn, mesh, in_specs, out_specs):
    """``shard_map`` manual over the pipe axis only: the other axes (data, tensor) stay XLA's."""
    return jax.shard_map(
        fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, axis_names=frozenset({axis}), check_vma=False
    )


def _scaled(tree, g):
    return jax.tree.map(lambda a: (a * g).astype(a.dtype) if jnp.issubdtype(a.dtype, jnp.inexact) else a, tree)


def _zero_cotangent(a):
    if jnp.issubdtype(a.dtype, jnp.inexact):
        return jnp.zeros_like(a)
    return np.zeros(a.shape, jax.dtypes.float0)


def _table_loss(block_fn, loss_fn, mesh, axis, sched: Schedule, branch_free: bool = False):
    """The table executor wrapped as a custom_vjp: the forward computes loss and gradients.

    ``branch_free``: each tick every stage runs one ``jax.vjp`` of (stage, loss head) on its
    input (the stage's forward output and the backward's gradients come from that one call) and
    masks keep what its action needs, so every device runs the same collectives in the same
    order (GSPMD's collectives of the other axes span all stages: inside a ``lax.switch`` where
    stages take different branches they would deadlock)."""
    S, M, K, KG = sched.stages, sched.microbatches, sched.stash, sched.grad_slots
    stage = _stage_fn(block_fn)
    forward_perm = [(i, i + 1) for i in range(S - 1)]
    backward_perm = [(i + 1, i) for i in range(S - 1)]
    ops, micro = jnp.asarray(sched.ops), jnp.asarray(sched.micro)

    def loss_dtype(p, lp, h, t):
        return jax.eval_shape(lambda: loss_fn(lp, stage(p, h), t)).dtype

    def run(p, xs, lp, tgt):
        s = jax.lax.axis_index(axis)
        zero_h = jnp.zeros_like(xs[0])

        def idle(c, m):
            return c, zero_h, False, zero_h, False

        def forward(c, m):
            h = jnp.where(s == 0, xs[m], c["stash"][m % K])
            c = dict(c, stash=c["stash"].at[m % K].set(h))
            return c, stage(p, h), True, zero_h, False

        def backward_with(fn, seed, c, m):
            h = c["stash"][m % K]
            out, vjp = jax.vjp(fn, p, lp, h)
            dp, dlp, dh = vjp(seed(c, m, out))
            c = dict(
                c,
                dp=jax.tree.map(jnp.add, c["dp"], dp),
                dlp=jax.tree.map(jnp.add, c["dlp"], dlp),
                dx=c["dx"].at[m].add(jnp.where(s == 0, dh, 0)),
            )
            return c, out, dh

        def backward(c, m):
            c, _, dh = backward_with(
                lambda p_, lp_, h_: stage(p_, h_), lambda c, m, out: c["ginbox"][m % KG].astype(out.dtype), c, m
            )
            return c, zero_h, False, dh, True

        def backward_last(c, m):
            def with_loss(p_, lp_, h_):
                return loss_fn(lp_, stage(p_, h_), tgt[m]) / M

            c, loss, dh = backward_with(with_loss, lambda c, m, out: jnp.ones_like(out), c, m)
            return dict(c, loss=c["loss"] + loss), zero_h, False, dh, True

        def uniform(c, op, m):
            is_f, is_b, is_last = op == FORWARD, op >= BACKWARD, op == BACKWARD_LAST
            h = jnp.where(is_f & (s == 0), xs[m], c["stash"][m % K])

            def both(p_, lp_, h_):
                y = stage(p_, h_)
                return y, loss_fn(lp_, y, tgt[m]) / M

            (y, loss), vjp = jax.vjp(both, p, lp, h)
            seed_y = jnp.where(is_b & ~is_last, c["ginbox"][m % KG].astype(y.dtype), 0)
            dp, dlp, dh = vjp((seed_y, jnp.where(is_last, 1, 0).astype(loss.dtype)))
            keep = lambda acc, d: acc + jnp.where(is_b, d, 0)  # noqa: E731
            stash = c["stash"]
            c = dict(
                c,
                stash=stash.at[m % K].set(jnp.where(is_f, h, stash[m % K])),
                dp=jax.tree.map(keep, c["dp"], dp),
                dlp=jax.tree.map(keep, c["dlp"], dlp),
                dx=c["dx"].at[m].add(jnp.where(is_b & (s == 0), dh, 0)),
                loss=c["loss"] + jnp.where(is_last, loss, 0),
            )
            return c, y, is_f, dh, is_b

        def tick(c, row):
            op, m = row[0][s], row[1][s]
            if branch_free:
                c, act, act_ok, grad, grad_ok = uniform(c, op, m)
            else:
                c, act, act_ok, grad, grad_ok = jax.lax.switch(op, (idle, forward, backward, backward_last), c, m)
            # neighbours exchange what this tick produced; receivers file it under its micro-batch
            act_in, act_m, act_ok = jax.lax.ppermute((act, m, act_ok), axis, forward_perm)
            grad_in, grad_m, grad_ok = jax.lax.ppermute((grad, m, grad_ok), axis, backward_perm)
            stash = c["stash"]
            stash = stash.at[act_m % K].set(jnp.where(act_ok, act_in, stash[act_m % K]))
            ginbox = c["ginbox"]
            ginbox = ginbox.at[grad_m % KG].set(jnp.where(grad_ok, grad_in, ginbox[grad_m % KG]))
            return dict(c, stash=stash, ginbox=ginbox), None

        init = {
            "stash": jnp.zeros((K,) + xs.shape[1:], xs.dtype),
            "ginbox": jnp.zeros((KG,) + xs.shape[1:], xs.dtype),
            "dp": jax.tree.map(jnp.zeros_like, p),
            "dlp": jax.tree.map(jnp.zeros_like, lp),
            "dx": jnp.zeros_like(xs),
            "loss": jnp.zeros((), loss_dtype(p, lp, xs[0], tgt[0])),
        }
        c, _ = jax.lax.scan(tick, init, (ops, micro))
        first = jax.tree.map(lambda a: a[None], (c["loss"], c["dlp"], c["dx"]))
        return first, c["dp"]

    specs = (P(axis), P(), P(), P())
    program = _manual_over(axis, run, mesh, specs, (P(axis), P(axis)))

    def loss_and_grads(params, x, loss_params, target):
        (loss, dlp, dx), dp = program(params, x, loss_params, target)
        return loss[S - 1], (dp, dx[0], jax.tree.map(lambda a: a[S - 1], dlp))

    @jax.custom_vjp
    def loss(params, x, loss_params, target):
        return loss_and_grads(params, x, loss_params, target)[0]

    def loss_fwd(params, x, loss_params, target):
        value, grads = loss_and_grads(params, x, loss_params, target)
        return value, (grads, target)

    def loss_bwd(res, g):
        (dp, dx, dlp), target = res
        return _scaled(dp, g), _scaled(dx, g), _scaled(dlp, g), jax.tree.map(_zero_cotangent, target)

    loss.defvjp(loss_fwd, loss_bwd)
    return loss


def _jax_mesh(mesh):
    from .mesh import MeshConfig
    from .placement import placement

    if isinstance(mesh, MeshConfig):
        return mesh.mesh
    if isinstance(mesh, placement):
        return mesh.mesh
    if isinstance(mesh, jax.sharding.Mesh):
        return mesh
    raise TypeError(
        f"PipelineStack: mesh must be a MeshConfig, an fjax.placement or a jax Mesh, got {type(mesh).__name__}"
    )


def _pipeline_stack_class():
    from ..autograd.grad_mode import no_grad
    from ..dispatch import call_pure
    from ..nn.module import Module
    from ..tensor import Tensor

    class PipelineStack(Module):
        """A stack of identical blocks (an ``nn.ModuleList``/``nn.Sequential``) run as a GPipe
        pipeline over the ``axis`` of ``mesh``: the batch splits into ``microbatches`` on dim 0,
        the blocks' parameters stack and split over the stages, and the stack is one SPMD program
        (``shard_map`` + ``ppermute`` + a tick ``scan``); gradients flow as through the plain stack.

        Args:
            blocks: the blocks, called in order, each ``block(h) -> h`` of one shape.
            mesh: a ``MeshConfig`` (as given to ``graph.config.set_mesh``), an ``fjax.placement``
                or a ``jax.sharding.Mesh`` with the pipe axis.
            microbatches: M, how many micro-batches flow through the pipeline.
            axis: the pipe axis name.

        Example:
            >>> from fjax.distributed import MeshConfig
            >>> stack = PipelineStack(nn.ModuleList([nn.Linear(4, 4) for _ in range(2)]),
            ...                       MeshConfig(axes={"pipe": 1}), microbatches=2)
            >>> x = fjax.randn(6, 4)
            >>> y = stack(x)
            >>> bool(fjax.allclose(y, stack.blocks[1](stack.blocks[0](x)), atol=1e-6))
            True
        """

        def __init__(self, blocks, mesh, *, microbatches: int, axis: str = "pipe"):
            super().__init__()
            self.blocks = blocks
            self._jmesh = _jax_mesh(mesh)
            self.microbatches, self.axis = int(microbatches), axis
            if axis not in self._jmesh.axis_names:
                raise OpError(
                    f"PipelineStack: the mesh has axes {tuple(self._jmesh.axis_names)}, no pipe axis {axis!r}"
                )
            S, L = self._jmesh.shape[axis], len(blocks)
            if L < S or L % S:
                raise OpError(f"PipelineStack: {L} blocks cannot split over the {S} stages of pipe axis {axis!r}")
            shapes = [[(n, tuple(p.shape)) for n, p in b.named_parameters()] for b in blocks]
            for i, s in enumerate(shapes[1:], 1):
                if s != shapes[0]:
                    raise OpError(f"PipelineStack: block {i} has parameters {s}, block 0 has {shapes[0]}")
            if any(True for b in blocks for _ in b.buffers()):
                raise NotImplementedError("PipelineStack: blocks with buffers (e.g. BatchNorm) are not supported")
            if self.microbatches < 1:
                raise OpError(f"PipelineStack: microbatches must be >= 1, got {microbatches}")

        def forward(self, x):
            M, B = self.microbatches, x.shape[0]
            if B % M:
                raise OpError(
                    f"PipelineStack: a batch of {B} (input shape {tuple(x.shape)}) does not split into "
                    f"{M} micro-batches"
                )
            template = self.blocks[0]
            slots = [p for _, p in template.named_parameters()]
            params = [p for b in self.blocks for _, p in b.named_parameters()]
            P_, S = len(slots), self._jmesh.shape[self.axis]

            def block_fn(layer, h):
                saved = [(t, t._data, t._node) for t in slots]
                try:
                    for t, a in zip(slots, layer):
                        t._data, t._node = a, None
                    with no_grad():
                        return template(Tensor._wrap(h))._data
                finally:
                    for t, data, node in saved:
                        t._data, t._node = data, node

            def pure(*arrays):
                layers = [jnp.stack(arrays[j : len(params) : P_]) for j in range(P_)]
                h = arrays[-1]
                xs = h.reshape((M, B // M) + h.shape[1:])
                out = _gpipe_forward(block_fn, layers, xs, self._jmesh, self.axis, S, M)
                return out.reshape((B,) + out.shape[2:])

            return call_pure("pipeline_stack", pure, params + [x])

    return PipelineStack


def __getattr__(name):
    if name == "PipelineStack":  # built on first use: nn.Module lives above this module
        cls = _pipeline_stack_class()
        globals()["PipelineStack"] = cls
        return cls
    raise AttributeError(name)


def stacked(trees: list):
    """Stack per-layer parameter trees (one per layer) on a new leading dim, as ``pipeline_loss``
    takes them.

    Args:
        trees: a list of trees of the same structure and shapes.

    Example:
        >>> import jax.numpy as jnp
        >>> stacked([{"w": jnp.ones(2)}, {"w": jnp.zeros(2)}])["w"].shape
        (2, 2)
    """
    if not trees:
        raise OpError("pipeline.stacked: expected at least one layer")
    return jax.tree.map(lambda *a: jnp.stack(a), *trees)


def get_layer_placement(
    layer_idx: int,
    num_layers: int,
    pipeline_parallel_size: int,
    *,
    data_parallel_size: int = 1,
    tensor_parallel_size: int = 1,
    device_type: str = "cuda",
):
    """LiBai's ``dist.get_layer_placement``: the placement of the stage that runs layer ``layer_idx``.

    Layers split into ``pipeline_parallel_size`` contiguous stages (layer ``i`` on stage
    ``i * S // num_layers``; a negative index counts from the end, as LiBai's ``-1`` for the head).
    Stage ``s`` holds ranks ``s*D*T .. (s+1)*D*T - 1`` as a ``(D, T)`` grid (a list when both are 1):
    with 4 layers on 2 stages, layers 0 and 1 get ranks ``[0]``, layers 2 and 3 ranks ``[1]``.

    Args:
        layer_idx: the layer, ``-num_layers <= layer_idx < num_layers``.
        num_layers: how many layers the model has.
        pipeline_parallel_size: S, the number of stages.
        data_parallel_size: D, data-parallel ranks per stage.
        tensor_parallel_size: T, tensor-parallel ranks per stage.
        device_type: ``"cuda"`` or ``"cpu"``.

    Example:
        >>> get_layer_placement(-1, num_layers=4, pipeline_parallel_size=1, device_type="cpu").ranks.tolist()
        [0]
    """
    from .placement import placement

    S, L = int(pipeline_parallel_size), int(num_layers)
    if S < 1 or L < S:
        raise OpError(f"get_layer_placement: {S} pipeline stages need at least {S} layers, got num_layers={L}")
    if not -L <= layer_idx < L:
        raise OpError(f"get_layer_placement: layer_idx {layer_idx} out of range for {L} layers")
    stage = (layer_idx % L) * S // L
    per = data_parallel_size * tensor_parallel_size
    ranks = np.arange(stage * per, (stage + 1) * per)
    if per > 1:
        ranks = ranks.reshape(data_parallel_size, tensor_parallel_size)
    return placement(device_type, ranks.tolist())


def theory_bubble(stages: int, microbatches: int) -> float:
    """GPipe's and 1F1B's idle fraction (S-1)/(M+S-1) with equal forward and backward times.

    Args:
        stages: S.
        microbatches: M.

    Example:
        >>> theory_bubble(4, 8)
        0.2727272727272727
    """
    return (stages - 1) / (microbatches + stages - 1)


__all__ = ["SCHEDULES", "Schedule", "get_layer_placement", "pipeline_loss", "stacked", "theory_bubble"]
