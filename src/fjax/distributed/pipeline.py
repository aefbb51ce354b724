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
- ``"interleaved"`` (Megatron's interleaved 1F1B, praxis's circular pipeline): ``V`` chunks of
  layers per device (chunk ``c`` on device ``c % S``), activations going round the pipe axis's
  ring ``V`` times; bubble (S-1)/(V M + S-1) at the memory of Megatron's longer warm-up.
- On a mesh with other axes (data, tensor) the stages are ``shard_map``-manual over the pipe
  axis only, so their shardings stay XLA's (DP x TP x PP is one program), and the table runs
  branch-free (every stage the same ops each tick, masked): collectives XLA adds inside one
  stage's branch would wait forever for the stages on the others.

Entry points: ``pipeline_loss`` (pure JAX), ``PipelineStack`` (an nn.Module wrapping a stack of
identical fjax blocks: GPipe inside eager code or an nn.Graph on a mesh with a pipe axis).
``Schedule.make`` builds and checks a table.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from ..errors import OpError
from .strategy import SCHEDULES  # (the schedules Schedule.make builds)

IDLE, FORWARD, BACKWARD, BACKWARD_LAST = 0, 1, 2, 3


@dataclass(frozen=True)
class Schedule:
    """A pipeline schedule: ``ops[t, s]`` (IDLE, FORWARD, BACKWARD, BACKWARD_LAST) of micro-batch
    ``micro[t, s]`` on device ``s`` at tick ``t``, for its chunk ``virtual[t, s]`` (the device's
    ``v``-th group of layers, global chunk ``v * S + s``; always 0 unless interleaved);
    ``stash``/``grad_slots``: ring-buffer sizes the executor needs (found by replaying the table).

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
    virtual: np.ndarray | None = None
    virtual_stages: int = 1

    @classmethod
    def make(cls, name: str, stages: int, microbatches: int, virtual_stages: int | None = None) -> Schedule:
        """Build the table of ``name`` by a greedy simulation, then check it.

        - ``"gpipe"``/``"gpipe_table"``: forward first, no limit on micro-batches in flight;
        - ``"1f1b"``: backward first, at most ``S - s`` micro-batches in flight on stage ``s``;
        - ``"interleaved"`` (Megatron's interleaved 1F1B): each device holds ``V`` chunks of layers
          (chunk ``c`` on device ``c % S``), a micro-batch goes round the devices ``V`` times;
          forwards in groups of ``S`` micro-batches chunk by chunk, backwards the same with the
          chunks reversed; forward first while fewer than Megatron's warm-up plus one,
          ``2 (S - s - 1) + (V - 1) S + 1`` chunk inputs, are in flight, then one forward, one
          backward. Its bubble is ``(S-1)/(V M + S-1)`` ticks of a chunk (1/V of a stage).

        Args:
            name: the schedule, one of ``SCHEDULES``.
            stages: S, the size of the pipe axis.
            microbatches: M (a multiple of S when interleaved, as Megatron requires).
            virtual_stages: V, chunks per device (interleaved only; default 2).

        Example:
            >>> Schedule.make("gpipe", stages=2, microbatches=2).ops.tolist()
            [[1, 0], [1, 1], [0, 1], [0, 3], [2, 3], [2, 0]]
            >>> Schedule.make("interleaved", stages=2, microbatches=2).bubble_fraction()
            0.2
        """
        if name not in SCHEDULES:
            raise OpError(f"pipeline: unknown schedule {name!r}; expected one of {SCHEDULES}")
        S, M = int(stages), int(microbatches)
        if S < 1 or M < 1:
            raise OpError(f"pipeline: stages and microbatches must be >= 1, got stages={S}, microbatches={M}")
        interleaved = name == "interleaved"
        V = (2 if virtual_stages is None else int(virtual_stages)) if interleaved else 1
        if not interleaved and virtual_stages not in (None, 1):
            raise OpError(f"pipeline: schedule {name!r} has one chunk per stage, got virtual_stages={virtual_stages}")
        if V < 1:
            raise OpError(f"pipeline: virtual_stages must be >= 1, got {V}")
        if interleaved and M % S:
            raise OpError(
                f"pipeline: the interleaved schedule runs micro-batches in groups of the {S} stages; "
                f"microbatches={M} is not a multiple of {S}"
            )
        C = S * V
        groups = [range(g, min(g + S, M)) for g in range(0, M, S)] if interleaved else [range(M)]
        forward_order = [(v, m) for g in groups for v in range(V) for m in g]
        backward_order = [(v, m) for g in groups for v in reversed(range(V)) for m in g]
        backward_first = name == "1f1b"

        def limit(s):
            if interleaved:
                return 2 * (S - s - 1) + (V - 1) * S + 1
            return S - s if backward_first else C * M

        f_time = np.full((C, M), -1)
        b_time = np.full((C, M), -1)
        f_done, b_done = [0] * S, [0] * S
        rows = []
        t = 0
        while min(b_done) < C * M // S:
            row_ops, row_mic, row_v = [IDLE] * S, [0] * S, [0] * S
            for s in range(S):
                can_f = can_b = False
                if b_done[s] < len(backward_order):
                    vb, mb = backward_order[b_done[s]]
                    c = vb * S + s
                    can_b = 0 <= f_time[c, mb] < t and (c == C - 1 or 0 <= b_time[c + 1, mb] < t)
                if f_done[s] < len(forward_order) and f_done[s] - b_done[s] < limit(s):
                    vf, mf = forward_order[f_done[s]]
                    c = vf * S + s
                    can_f = c == 0 or 0 <= f_time[c - 1, mf] < t
                if can_b and (backward_first or not can_f):
                    c = vb * S + s
                    row_ops[s], row_mic[s], row_v[s] = (BACKWARD_LAST if c == C - 1 else BACKWARD), mb, vb
                    b_time[c, mb], b_done[s] = t, b_done[s] + 1
                elif can_f:
                    row_ops[s], row_mic[s], row_v[s] = FORWARD, mf, vf
                    f_time[vf * S + s, mf], f_done[s] = t, f_done[s] + 1
            rows.append((row_ops, row_mic, row_v))
            t += 1
            if t > 4 * (V * M + C) + 8:
                raise OpError(f"pipeline: schedule {name!r} deadlocked with stages={S}, microbatches={M}")
        ops = np.array([r[0] for r in rows], np.int32)
        micro = np.array([r[1] for r in rows], np.int32)
        virtual = np.array([r[2] for r in rows], np.int32)
        # the stash slot of micro-batch m for chunk c is written at the end of its arrival tick (the
        # previous chunk's forward; chunk 0: its own) and read last by its backward
        arrive = np.concatenate([f_time[:1], f_time[:-1]], axis=0)
        stash = _ring_size(arrive, b_time)
        grad_slots = _ring_size(b_time[1:], b_time[:-1]) if C > 1 else 1
        schedule = cls(name, S, M, ops, micro, stash, grad_slots, virtual, V)
        schedule.check()
        return schedule

    def check(self) -> None:
        """Replay the table: each micro-batch runs forward then backward once per chunk of layers,
        after its neighbours' (raises OpError naming the tick, stage and micro-batch otherwise)."""
        S, M, V = self.stages, self.microbatches, self.virtual_stages
        virtual = np.zeros_like(self.ops) if self.virtual is None else self.virtual
        C = S * V
        f, b = np.full((C, M), -1), np.full((C, M), -1)
        for t, s in zip(*np.nonzero(self.ops)):
            m, op, c = self.micro[t, s], self.ops[t, s], virtual[t, s] * S + s
            table = f if op == FORWARD else b
            if table[c, m] >= 0:
                raise OpError(f"pipeline schedule {self.name}: stage {s} runs micro-batch {m} twice (tick {t})")
            if (op == BACKWARD_LAST) != (op >= BACKWARD and c == C - 1):
                raise OpError(f"pipeline schedule {self.name}: tick {t}, stage {s}: the loss belongs to the last chunk")
            table[c, m] = t
        for c in range(C):
            for m in range(M):
                deps = [f[c, m] < b[c, m]]
                if c:
                    deps.append(f[c - 1, m] < f[c, m])
                if c < C - 1:
                    deps.append(b[c + 1, m] < b[c, m])
                if min(f[c, m], b[c, m]) < 0 or not all(deps):
                    raise OpError(
                        f"pipeline schedule {self.name}: stage {c % S} (chunk {c}), micro-batch {m} runs out of order"
                    )

    @property
    def ticks(self) -> int:
        """How many ticks the table has."""
        return len(self.ops)

    def bubble_fraction(self) -> float:
        """The fraction of (tick, stage) slots with no forward or backward, counting a backward as
        one slot (theory for GPipe and 1F1B with equal forward and backward: (S-1)/(M+S-1); a slot
        of the interleaved schedule is one chunk, 1/V of a stage's layers)."""
        return float((self.ops == IDLE).mean())

    def peak_in_flight(self) -> int:
        """The most micro-batches any stage has run forward and not yet backward (interleaved: chunk
        inputs, each 1/V of a stage's activations)."""
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


def _check_args(params, x, mesh, axis, target, virtual_stages=1):
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
    if L % (S * virtual_stages):
        raise OpError(
            f"pipeline_loss: {L} stacked layers cannot split into {virtual_stages} chunks on each of the {S} stages "
            f"of axis {axis!r} ({S * virtual_stages} chunks)"
        )
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
    virtual_stages: int | None = None,
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
        schedule: "1f1b" (default), "gpipe", "gpipe_table" or "interleaved".
        branch_free: run every table tick as the same program on every stage (one forward and
            vector-Jacobian product, its parts kept by masks) instead of a ``lax.switch`` per
            stage. Default: on when the mesh has another axis of size > 1, whose collectives
            (data- or tensor-parallel shardings propagated by XLA) must run on every device
            alike; a collective inside one stage's branch waits for the others forever.
        virtual_stages: V, chunks of layers per device for "interleaved" (default 2; ``L`` must
            split into ``S * V`` chunks, chunk ``c`` on device ``c % S``).

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
    if schedule not in SCHEDULES:
        raise OpError(f"pipeline_loss: unknown schedule {schedule!r}; expected one of {SCHEDULES}")
    V = (2 if virtual_stages is None else int(virtual_stages)) if schedule == "interleaved" else 1
    S, M = _check_args(params, x, mesh, axis, target, V)
    if schedule == "gpipe":
        return _gpipe_loss(block_fn, params, x, loss_fn, loss_params, target, mesh, axis, S, M)
    sched = Schedule.make(schedule, S, M, virtual_stages)
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

    Device ``s`` holds chunks ``s, s + S, ...`` (``V`` of them; one unless interleaved): the
    stacked layers are viewed as ``(V, S, layers per chunk)`` and the pipe axis splits dim 1
    (interleaved, that is not a contiguous split of the layers: XLA moves them into place).
    With ``V > 1`` activations go round the devices (device ``S - 1`` sends chunk ``v``'s output
    to device 0's chunk ``v + 1``, gradients the other way).

    ``branch_free``: each tick every stage runs one ``jax.vjp`` of (stage, loss head) on its
    input (the stage's forward output and the backward's gradients come from that one call) and
    masks keep what its action needs, so every device runs the same collectives in the same
    order (GSPMD's collectives of the other axes span all stages: inside a ``lax.switch`` where
    stages take different branches they would deadlock)."""
    S, M, K, KG = sched.stages, sched.microbatches, sched.stash, sched.grad_slots
    V = sched.virtual_stages
    C = S * V
    stage = _stage_fn(block_fn)
    if V == 1:
        forward_perm = [(i, i + 1) for i in range(S - 1)]
        backward_perm = [(i + 1, i) for i in range(S - 1)]
    else:  # a ring: the last device feeds device 0's next chunk
        forward_perm = [(i, (i + 1) % S) for i in range(S)]
        backward_perm = [((i + 1) % S, i) for i in range(S)]
    virtual = np.zeros_like(sched.ops) if sched.virtual is None else sched.virtual
    ops, micro, chunk = jnp.asarray(sched.ops), jnp.asarray(sched.micro), jnp.asarray(virtual)

    def run(p, xs, lp, tgt):
        s = jax.lax.axis_index(axis)
        p = jax.tree.map(lambda a: a[:, 0], p)  # (V, 1, layers per chunk, ...) -> this device's chunks
        zero_h = jnp.zeros_like(xs[0])

        def at(v):
            return jax.tree.map(lambda a: a[v], p)

        def add_at(acc, v, d):
            return jax.tree.map(lambda a, g: a.at[v].add(g), acc, d)

        def first(v):  # this device runs chunk 0 (its input is x)
            return (s == 0) & (v == 0)

        def idle(c, m, v):
            return c, zero_h, False, zero_h, False

        def forward(c, m, v):
            h = jnp.where(first(v), xs[m], c["stash"][v, m % K])
            c = dict(c, stash=c["stash"].at[v, m % K].set(h))
            return c, stage(at(v), h), v * S + s < C - 1, zero_h, False

        def backward_with(fn, seed, c, m, v):
            h = c["stash"][v, m % K]
            out, vjp = jax.vjp(fn, at(v), lp, h)
            dp, dlp, dh = vjp(seed(c, m, out))
            c = dict(
                c,
                dp=add_at(c["dp"], v, dp),
                dlp=jax.tree.map(jnp.add, c["dlp"], dlp),
                dx=c["dx"].at[m].add(jnp.where(first(v), dh, 0)),
            )
            return c, out, dh

        def backward(c, m, v):
            c, _, dh = backward_with(
                lambda p_, lp_, h_: stage(p_, h_), lambda c, m, out: c["ginbox"][v, m % KG].astype(out.dtype), c, m, v
            )
            return c, zero_h, False, dh, ~first(v)

        def backward_last(c, m, v):
            def with_loss(p_, lp_, h_):
                return loss_fn(lp_, stage(p_, h_), tgt[m]) / M

            c, loss, dh = backward_with(with_loss, lambda c, m, out: jnp.ones_like(out), c, m, v)
            return dict(c, loss=c["loss"] + loss), zero_h, False, dh, ~first(v)

        def uniform(c, op, m, v):
            is_f, is_b, is_last = op == FORWARD, op >= BACKWARD, op == BACKWARD_LAST
            h = jnp.where(is_f & first(v), xs[m], c["stash"][v, m % K])

            def both(p_, lp_, h_):
                y = stage(p_, h_)
                return y, loss_fn(lp_, y, tgt[m]) / M

            (y, loss), vjp = jax.vjp(both, at(v), lp, h)
            seed_y = jnp.where(is_b & ~is_last, c["ginbox"][v, m % KG].astype(y.dtype), 0)
            dp, dlp, dh = vjp((seed_y, jnp.where(is_last, 1, 0).astype(loss.dtype)))
            keep = lambda d: jnp.where(is_b, d, 0)  # noqa: E731
            stash = c["stash"]
            c = dict(
                c,
                stash=stash.at[v, m % K].set(jnp.where(is_f, h, stash[v, m % K])),
                dp=add_at(c["dp"], v, jax.tree.map(keep, dp)),
                dlp=jax.tree.map(lambda a, d: a + keep(d), c["dlp"], dlp),
                dx=c["dx"].at[m].add(jnp.where(is_b & first(v), dh, 0)),
                loss=c["loss"] + jnp.where(is_last, loss, 0),
            )
            return c, y, is_f & (v * S + s < C - 1), dh, is_b & ~first(v)

        def tick(c, row):
            op, m, v = row[0][s], row[1][s], row[2][s]
            if branch_free:
                c, act, act_ok, grad, grad_ok = uniform(c, op, m, v)
            else:
                branches = (idle, forward, backward, backward_last)
                c, act, act_ok, grad, grad_ok = jax.lax.switch(op, branches, c, m, v)
            # neighbours exchange what this tick produced; receivers file it under its chunk and
            # micro-batch (device 0 receives the last device's chunk v as its chunk v + 1)
            act_in, act_m, act_v, act_ok = jax.lax.ppermute((act, m, v, act_ok), axis, forward_perm)
            grad_in, grad_m, grad_v, grad_ok = jax.lax.ppermute((grad, m, v, grad_ok), axis, backward_perm)
            act_v = act_v + (s == 0).astype(act_v.dtype) if V > 1 else act_v
            grad_v = grad_v - (s == S - 1).astype(grad_v.dtype) if V > 1 else grad_v
            act_v, grad_v = jnp.clip(act_v, 0, V - 1), jnp.clip(grad_v, 0, V - 1)
            stash = c["stash"]
            slot = stash[act_v, act_m % K]
            stash = stash.at[act_v, act_m % K].set(jnp.where(act_ok, act_in, slot))
            ginbox = c["ginbox"]
            slot = ginbox[grad_v, grad_m % KG]
            ginbox = ginbox.at[grad_v, grad_m % KG].set(jnp.where(grad_ok, grad_in, slot))
            return dict(c, stash=stash, ginbox=ginbox), None

        init = {
            "stash": jnp.zeros((V, K) + xs.shape[1:], xs.dtype),
            "ginbox": jnp.zeros((V, KG) + xs.shape[1:], xs.dtype),
            "dp": jax.tree.map(jnp.zeros_like, p),
            "dlp": jax.tree.map(jnp.zeros_like, lp),
            "dx": jnp.zeros_like(xs),
            "loss": jnp.zeros((), jax.eval_shape(lambda: loss_fn(lp, stage(at(0), xs[0]), tgt[0])).dtype),
        }
        c, _ = jax.lax.scan(tick, init, (ops, micro, chunk))
        first_out = jax.tree.map(lambda a: a[None], (c["loss"], c["dlp"], c["dx"]))
        return first_out, jax.tree.map(lambda a: a[:, None], c["dp"])

    # layers as (V, S, layers per chunk): chunk v * S + s is [v, s], so the pipe axis on dim 1 gives
    # device s its chunks (V = 1: the plain split of dim 0; a reshape, no data moves)
    specs = (P(None, axis), P(), P(), P())
    program = _manual_over(axis, run, mesh, specs, (P(axis), P(None, axis)))

    def loss_and_grads(params, x, loss_params, target):
        chunked = jax.tree.map(lambda a: a.reshape((V, S, a.shape[0] // C) + a.shape[1:]), params)
        (loss, dlp, dx), dp = program(chunked, x, loss_params, target)
        dp = jax.tree.map(lambda g, a: g.reshape(a.shape), dp, params)
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


def stack_outputs(block_fn, layers, xs, mesh, axis: str = "pipe", schedule: str = "gpipe", virtual_stages=None):
    """The last stage's outputs ``(M, micro_batch, ...)`` of the layers (every leaf of ``layers``
    stacked on dim 0) applied to each micro-batch of ``xs``, pipelined over ``axis``; differentiable
    in ``layers`` and ``xs``. Here the loss comes after the stack (an nn.Graph's head), so the
    table schedules run in the backward: ``"gpipe"`` is ``_gpipe_forward`` under autodiff (every
    micro-batch's residuals kept); ``"1f1b"``, ``"gpipe_table"`` and ``"interleaved"`` run GPipe's
    forward keeping only the inputs, then their table with the output gradients as the last
    stage's seeds (``_table_loss`` with loss ``sum(h * g)``): one more forward, each stage holding
    at most its schedule's stage inputs.

    Example:
        >>> import jax, jax.numpy as jnp, numpy as np
        >>> mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("pipe",))
        >>> ys = stack_outputs(lambda p, h: jnp.tanh(h @ p), jnp.ones((2, 3, 3)) * 0.1, jnp.ones((4, 2, 3)),
        ...                    mesh, schedule="1f1b")
        >>> ys.shape
        (4, 2, 3)
    """
    S, M = mesh.shape[axis], xs.shape[0]
    if schedule == "gpipe":
        return _gpipe_forward(block_fn, layers, xs, mesh, axis, S, M)
    sched = Schedule.make(schedule, S, M, virtual_stages)
    branch_free = any(n != axis and size > 1 for n, size in mesh.shape.items())
    seeded = _table_loss(block_fn, lambda lp, h, g: jnp.sum(h * g) * M, mesh, axis, sched, branch_free)

    @jax.custom_vjp
    def outputs(layers, xs):
        return _gpipe_forward(block_fn, layers, xs, mesh, axis, S, M)

    def outputs_fwd(layers, xs):
        return outputs(layers, xs), (layers, xs)

    def outputs_bwd(res, g):
        return jax.grad(lambda p, x: seeded(p, x, (), g), argnums=(0, 1))(*res)

    outputs.defvjp(outputs_fwd, outputs_bwd)
    return outputs(layers, xs)


def check_split(name: str, layers: int, stages: int, virtual_stages: int = 1) -> None:
    """Raise an OpError (prefixed by ``name``) unless ``layers`` split evenly over the stages
    (times ``virtual_stages`` chunks per stage)."""
    if layers < stages:
        raise OpError(f"{name}: the pipe axis has {stages} stages, more than the {layers} repeated layers")
    if layers % (stages * virtual_stages):
        what = f"{stages} stages" if virtual_stages == 1 else f"{stages} stages x {virtual_stages} chunks"
        raise OpError(
            f"{name}: {layers} layers cannot split evenly over the {what} of the pipe axis; "
            f"use a number of layers divisible by {stages * virtual_stages} or another pipe size"
        )


def run_units(units, x, mesh, *, microbatches: int, axis: str = "pipe", schedule: str = "gpipe",
              virtual_stages=None, name: str = "pipeline", around=contextlib.nullcontext):  # fmt: skip
    """``x`` through ``units`` in order (each a list of fjax modules called one after the other;
    every unit built alike), pipelined over ``axis`` of ``mesh``: the units' parameters and
    buffers stack (unit ``i`` is layer ``i``) and split over the stages, dim 0 of ``x`` splits into
    ``microbatches``; recorded as one tape node, so gradients reach each unit's own parameters.
    The first unit's modules run every layer, with each layer's tensors swapped in. A unit may
    read its buffers, not write them, and draws no random numbers (dropout would repeat one
    mask); each break of that raises naming ``name``. ``around()``: a context entered around each
    trace of a layer (nn.Graph's pipe axis lets the first unit's modules run as themselves there).

    Example:
        >>> from fjax.distributed import MeshConfig
        >>> units = [[nn.Linear(4, 4), nn.Tanh()] for _ in range(2)]
        >>> y = run_units(units, fjax.ones(4, 4), MeshConfig(axes={"pipe": 1}).mesh, microbatches=2)
        >>> y.shape
        fjax.Size([4, 4])
    """
    from ..autograd.grad_mode import no_grad
    from ..dispatch import call_pure
    from ..random import default_generator
    from ..tensor import Tensor

    mesh = _jax_mesh(mesh)
    S, M, L = mesh.shape[axis], int(microbatches), len(units)
    V = (2 if virtual_stages is None else int(virtual_stages)) if schedule == "interleaved" else 1
    check_split(name, L, S, V)
    shape = tuple(x.shape)
    if M < 1 or not shape or shape[0] % M:
        raise OpError(f"{name}: a batch of {shape[0] if shape else 0} (input shape {shape}) does not split into "
                      f"{M} micro-batches")  # fmt: skip

    def tensors(unit):
        return [t for m in unit for t in list(m.parameters()) + list(m.buffers())]

    slots = tensors(units[0])
    buffers = {id(b) for m in units[0] for b in m.buffers()}
    arrays = [t for u in units for t in tensors(u)]
    K = len(slots)

    def block_fn(layer, h):
        saved = [(t, t._data, t._node) for t in slots]
        drawn = default_generator._counter
        try:
            for t, a in zip(slots, layer):
                t._data, t._node = a, None
            with no_grad(), around():
                y = Tensor._wrap(h)
                for m in units[0]:
                    y = m(y)
            if any(id(t) in buffers and t._data is not a for t, a in zip(slots, layer)):
                raise NotImplementedError(f"{name}: a pipelined layer writes a buffer (e.g. BatchNorm's statistics)")
            if default_generator._counter != drawn:
                raise NotImplementedError(f"{name}: a pipelined layer draws random numbers (dropout); use p=0 or eval")
            if not isinstance(y, Tensor) or tuple(y.shape) != tuple(h.shape) or y.dtype != h.dtype:
                raise OpError(
                    f"{name}: a pipelined layer must give a tensor of its input's shape and dtype, got "
                    f"{tuple(getattr(y, 'shape', ()))} {getattr(y, 'dtype', type(y).__name__)} from {tuple(h.shape)} "
                    f"{h.dtype}"
                )
            return y._data
        finally:
            default_generator._counter = drawn
            for t, data, node in saved:
                t._data, t._node = data, node

    def pure(*leaves):
        layers = [jnp.stack(leaves[j : len(arrays) : K]) for j in range(K)]
        h = leaves[-1]
        xs = h.reshape((M, shape[0] // M) + h.shape[1:])
        out = stack_outputs(block_fn, layers, xs, mesh, axis, schedule, virtual_stages)
        return out.reshape(h.shape)

    return call_pure("pipeline_stack", pure, arrays + [x])


def _pipeline_stack_class():
    from ..nn.module import Module

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
            return run_units([[b] for b in self.blocks], x, self._jmesh, microbatches=self.microbatches,
                             axis=self.axis, name="PipelineStack")  # fmt: skip

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


def theory_bubble(stages: int, microbatches: int, virtual_stages: int = 1) -> float:
    """GPipe's and 1F1B's idle fraction (S-1)/(M+S-1) with equal forward and backward times;
    with ``V`` chunks per device (interleaved) (S-1)/(V M + S-1).

    Args:
        stages: S.
        microbatches: M.
        virtual_stages: V.

    Example:
        >>> theory_bubble(4, 8)
        0.2727272727272727
        >>> round(theory_bubble(4, 8, virtual_stages=2), 4)
        0.1579
    """
    return (stages - 1) / (virtual_stages * microbatches + stages - 1)


__all__ = [
    "SCHEDULES",
    "Schedule",
    "check_split",
    "get_layer_placement",
    "pipeline_loss",
    "run_units",
    "stack_outputs",
    "stacked",
    "theory_bubble",
]
