"""The attributed memory report of a compiled nn.Graph step (``Graph.memory_report``).

XLA's ``Compiled.memory_analysis()`` gives five totals per device (argument, output, alias, temp
and generated-code bytes) and, in ``serialized_buffer_assignment_proto``, the buffer assignment
behind them: every allocation (entry parameters, outputs, the temporary heap) and the logical
buffers placed in it, each at an offset and defined by an HLO instruction. The optimized HLO
module (``runtime_executable().hlo_modules()``) gives each instruction its schedule position, its
operands and JAX's ``op_name`` metadata: an entry parameter's ``op_name`` is the step argument's
path (``inputs[0]``, ``opt_states[0][1][0].mu``), and an instruction's is the name stack it was
traced under (nn.Graph traces each module call under ``jax.named_scope(<module path>)``, the
optimizer update under ``optimizer``; a backward op's name has ``transpose(``).

The report splits the bytes as follows (all per device):

- arguments, by the step argument each XLA parameter is: parameters, buffers, optimizer state,
  inputs, other (the RNG key and hyper-parameters); donated bytes are those of the state and
  optimizer state the step writes in place (XLA's alias bytes);
- outputs that are not written into a donated argument (``build``'s results);
- the temporary heap: its live buffers at the schedule position where the most temporary bytes
  are live (from the schedule and each buffer's last use), by defining instruction: saved
  activations by module path, gradients (backward values the size of a trainable parameter),
  other backward temporaries, optimizer temporaries, other temporaries; the rest of the heap
  (bytes no buffer occupies at that position: XLA's packing) is ``heap fragmentation``;
- host-offloaded bytes (XLA's ``host_*`` sizes) and generated code.

The protobufs are read with a 30-line wire-format reader (no protobuf dependency); an XLA that
gives no buffer assignment leaves the temporary heap in one ``temporaries`` bucket.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

_OLD_KEYS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "temp_size_in_bytes",
    "generated_code_size_in_bytes",
    "alias_size_in_bytes",
)
_HOST_KEYS = (
    "host_argument_size_in_bytes",
    "host_output_size_in_bytes",
    "host_temp_size_in_bytes",
    "host_alias_size_in_bytes",
)

PARAMETERS, BUFFERS, OPT_STATE, INPUTS, OTHER_ARGS = (
    "parameters",
    "buffers",
    "optimizer state",
    "inputs",
    "other arguments (rng, hyper-parameters)",
)
OUTPUTS, GRADIENTS, BACKWARD, OPTIMIZER_TEMP, TEMP, FRAGMENTATION, UNATTRIBUTED = (
    "outputs",
    "gradients",
    "backward temporaries",
    "optimizer temporaries",
    "temporaries",
    "heap fragmentation",
    "unattributed",
)
ACTIVATIONS = "activations: "  # + module path ("<build>" outside every module)
OPTIMIZER_SCOPE = "optimizer"


# -- the protobuf wire format -------------------------------------------------------------------
def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def _fields(buf: bytes) -> dict:
    """``{field number: [values]}``: varints as ints, length-delimited fields as bytes."""
    out: dict = defaultdict(list)
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"memory_report: unreadable protobuf (wire type {wire})")
        out[key >> 3].append(value)
    return out


def _ints(values) -> list:
    """A repeated int64 field, packed (bytes) or not (ints)."""
    out = []
    for v in values:
        if isinstance(v, int):
            out.append(v)
            continue
        i = 0
        while i < len(v):
            x, i = _varint(v, i)
            out.append(x)
    return out


def _one(fields, number, default=0):
    values = fields.get(number)
    return values[-1] if values else default


# -- the HLO module and its buffer assignment ---------------------------------------------------
class _Hlo:
    """The optimized module: per instruction id its ``op_name``, operands and entry-schedule position."""

    def __init__(self, blob: bytes):
        module = _fields(blob)
        entry_id = _one(module, 6)
        self.op_name, operands, comp_of, calls, by_comp = {}, {}, {}, {}, defaultdict(list)
        for comp_blob in module.get(3, []):
            comp = _fields(comp_blob)
            cid = _one(comp, 5)
            for ins_blob in comp.get(2, []):
                ins = _fields(ins_blob)
                iid = _one(ins, 35)
                meta = _fields(_one(ins, 7, b""))
                self.op_name[iid] = _one(meta, 2, b"").decode("utf-8", "replace")
                operands[iid] = _ints(ins.get(36, []))
                comp_of[iid] = cid
                by_comp[cid].append(iid)
                for called in _ints(ins.get(38, [])):
                    calls[called] = iid
        order = []
        schedule = _fields(_one(module, 7, b""))
        for entry in schedule.get(1, []):
            kv = _fields(entry)
            if _one(kv, 1) == entry_id:
                order = _ints(_fields(_one(kv, 2, b"")).get(1, []))
        if not order:
            order = by_comp[entry_id]
        self.pos = {iid: p for p, iid in enumerate(order)}
        self.end = len(order)

        def entry_pos(iid, depth=0):  # an instruction of a called computation: its entry caller's position
            if iid in self.pos:
                return self.pos[iid]
            caller = calls.get(comp_of.get(iid))
            return None if caller is None or depth > 64 else entry_pos(caller, depth + 1)

        self.at = {iid: entry_pos(iid) for iid in comp_of}
        self.last_use: dict = {}
        for iid, ops in operands.items():
            p = self.at.get(iid)
            if p is None:
                continue
            for o in ops:
                if p > self.last_use.get(o, -1):
                    self.last_use[o] = p


class _Assignment:
    """The buffer assignment: logical buffers (size, defining instruction), aliases, allocations."""

    def __init__(self, blob: bytes):
        ba = _fields(blob)
        self.defined_at, self.size = {}, {}
        for lb_blob in ba.get(1, []):
            lb = _fields(lb_blob)
            bid = _one(lb, 1)
            self.size[bid] = _one(lb, 2)
            self.defined_at[bid] = _one(_fields(_one(lb, 3, b"")), 4)
        self.aliases = defaultdict(list)
        for alias_blob in ba.get(2, []):
            alias = _fields(alias_blob)
            self.aliases[_one(alias, 1)].append(_one(_fields(_one(alias, 2, b"")), 4))
        self.allocations = []
        for alloc_blob in ba.get(3, []):
            a = _fields(alloc_blob)
            assigned = [(_one(x, 1), _one(x, 2), _one(x, 3)) for x in map(_fields, a.get(9, []))]
            self.allocations.append(
                {
                    "size": _one(a, 2),
                    "thread_local": bool(_one(a, 3)),
                    "parameter": bool(_one(a, 5)),
                    "live_out": bool(_one(a, 7)),
                    "color": _one(a, 8),
                    "constant": bool(_one(a, 12)),
                    "assigned": assigned,
                }
            )


# -- attribution ----------------------------------------------------------------------------------
_ARG = re.compile(r"^(\w+)\[(\d+)\]")


def _argument_bucket(op_name: str, arg_kinds: dict) -> str:
    m = _ARG.match(op_name)
    if m is None:
        return UNATTRIBUTED
    group, index = m.group(1), int(m.group(2))
    if group in ("state", "changed_state", "kept_state"):
        return arg_kinds.get((group, index), UNATTRIBUTED)
    return {"opt_states": OPT_STATE, "inputs": INPUTS, "rng": OTHER_ARGS, "hyper": OTHER_ARGS}.get(group, UNATTRIBUTED)


def _temp_bucket(op_name: str, module_paths, grad_sizes, size: int) -> str:
    parts = op_name.split("/")
    if "transpose(" in op_name:
        return GRADIENTS if size in grad_sizes else BACKWARD
    if OPTIMIZER_SCOPE in parts:
        return OPTIMIZER_TEMP
    for part in reversed(parts):
        if part in module_paths:
            return ACTIVATIONS + part
    if "jvp(" in op_name:
        return ACTIVATIONS + "<build>"
    return TEMP


def _heap_at_peak(alloc, hlo: _Hlo, ba: _Assignment):
    """The temporary heap ``alloc`` at the schedule position where most of its bytes are live:
    ``(position, [(buffer id, bytes it alone occupies there)])``."""
    spans = []
    for bid, offset, size in alloc["assigned"]:
        start = hlo.at.get(ba.defined_at.get(bid))
        if start is None:
            spans.append((bid, offset, size, 0, hlo.end))  # not placed in the schedule: live throughout
            continue
        end = start
        for iid in [ba.defined_at.get(bid), *ba.aliases.get(bid, [])]:
            end = max(end, hlo.last_use.get(iid, start))
        spans.append((bid, offset, size, start, end))
    if not spans:
        return 0, []
    delta = np.zeros(hlo.end + 2, np.int64)
    for _, _, size, start, end in spans:
        delta[start] += size
        delta[end + 1] -= size
    peak = int(np.argmax(np.cumsum(delta)))
    live = sorted((s for s in spans if s[3] <= peak <= s[4]), key=lambda s: -s[3])  # the later-defined first
    taken, out = [], []
    for bid, offset, size, _, _ in live:
        lo, hi, own = offset, offset + size, size
        for a, b in taken:  # bytes another live buffer already holds at this position count once
            own -= max(0, min(hi, b) - max(lo, a))
        taken.append((lo, hi))
        out.append((bid, max(own, 0)))
    return peak, out


def analyze(compiled, arg_kinds: dict, module_paths, grad_sizes, devices: int = 1) -> dict:
    """Attribute a compiled step's per-device bytes (see the module docstring).

    Args:
        compiled: a ``jax.stages.Compiled``.
        arg_kinds: ``{(argument name, index): bucket}`` for the state arguments (``state``,
            ``changed_state``, ``kept_state``): ``PARAMETERS`` or ``BUFFERS``.
        module_paths: the module paths used as named scopes while tracing.
        grad_sizes: byte sizes of the trainable parameters (a backward value of one is a gradient).
        devices: how many devices run the step.

    Returns:
        A :class:`MemoryReport`.
    """
    m = compiled.memory_analysis()
    report = MemoryReport()
    if m is None:
        return report
    for k in _OLD_KEYS:
        report[k.replace("_size_in_bytes", "_bytes")] = int(getattr(m, k, 0) or 0)
    host = sum(int(getattr(m, k, 0) or 0) for k in _HOST_KEYS)
    buckets: dict = defaultdict(int)
    activations: dict = defaultdict(int)
    arg_total = report["argument_bytes"]
    temp_total = report["temp_bytes"]
    out_total = report["output_bytes"] - report["alias_bytes"]
    blob = getattr(m, "serialized_buffer_assignment_proto", None)
    peak_at = None
    try:
        hlo = _Hlo(compiled.runtime_executable().hlo_modules()[0].as_serialized_hlo_module_proto())
        ba = _Assignment(blob) if blob else None
    except Exception:  # noqa: BLE001 - an XLA without these protos: the totals only
        hlo = ba = None
    seen_args = seen_temp = 0
    if hlo is not None:
        report["_scopes_seen"] = any(p in module_paths for n in hlo.op_name.values() for p in n.split("/"))
    if ba is not None:
        heap = []
        for alloc in ba.allocations:
            if alloc["parameter"]:
                names = [hlo.op_name.get(ba.defined_at.get(bid), "") for bid, _, _ in alloc["assigned"]]
                name = next((n for n in names if _ARG.match(n)), "")  # the parameter's own buffer
                buckets[_argument_bucket(name, arg_kinds)] += alloc["size"]
                seen_args += alloc["size"]
            elif not (alloc["thread_local"] or alloc["constant"] or alloc["live_out"]):
                heap.append(alloc)
        for alloc in heap:
            peak_at, live = _heap_at_peak(alloc, hlo, ba)
            used = 0
            for bid, nbytes in live:
                bucket = _temp_bucket(hlo.op_name.get(ba.defined_at.get(bid), ""), module_paths, grad_sizes, nbytes)
                if bucket.startswith(ACTIVATIONS):
                    activations[bucket[len(ACTIVATIONS) :]] += nbytes
                else:
                    buckets[bucket] += nbytes
                used += nbytes
            buckets[FRAGMENTATION] += alloc["size"] - used
            seen_temp += alloc["size"]
    # what the buffer assignment did not cover (or all of it, without one) stays visible
    if arg_total - seen_args:
        buckets[UNATTRIBUTED] += arg_total - seen_args
    if temp_total - seen_temp:
        buckets[TEMP if ba is None else UNATTRIBUTED] += temp_total - seen_temp
    buckets[OUTPUTS] += out_total
    total = arg_total + out_total + temp_total
    order = [PARAMETERS, BUFFERS, OPT_STATE, INPUTS, OTHER_ARGS, OUTPUTS, GRADIENTS]
    rows = {k: buckets.pop(k) for k in order if buckets.get(k)}
    for path, nbytes in sorted(activations.items(), key=lambda kv: -kv[1]):
        rows[ACTIVATIONS + path] = nbytes
    for k in (BACKWARD, OPTIMIZER_TEMP, TEMP, FRAGMENTATION, UNATTRIBUTED):
        if buckets.get(k):
            rows[k] = buckets.pop(k)
    rows.update({k: v for k, v in buckets.items() if v})
    report.update(
        {
            "buckets": rows,
            "activations_by_module": dict(activations),
            "donated_bytes": report["alias_bytes"],
            "host_offloaded_bytes": host,
            "total_bytes": total,
            "peak_bytes": total + report["generated_code_bytes"],
            "xla_peak_bytes": int(getattr(m, "peak_memory_in_bytes", 0) or 0),
            "attributed_fraction": 1.0 - rows.get(UNATTRIBUTED, 0) / total if total else 1.0,
            "heap_peak_position": peak_at,
            "devices": devices,
            "per_device": True,
        }
    )
    return report


def _mib(n: int) -> str:
    return f"{n / 2**20:10.3f}"


class MemoryReport(dict):
    """``Graph.memory_report()``'s result: a dict (XLA's totals as ``argument_bytes``,
    ``output_bytes``, ``temp_bytes``, ``generated_code_bytes``, ``alias_bytes``; ``buckets``:
    the attributed bytes by name; ``activations_by_module``; ``donated_bytes``,
    ``host_offloaded_bytes``, ``total_bytes``, ``peak_bytes``, ``attributed_fraction``,
    ``devices``) that prints as a table. Every number is per device.

    Example:
        >>> report = MemoryReport(argument_bytes=8, buckets={"inputs": 8}, total_bytes=8, peak_bytes=8)
        >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
        memory per device (MiB)         MiB        %
        inputs                        0.000    100.0
        total (XLA's bytes)           0.000    100.0
        predicted peak (+ code)       0.000
    """

    def __str__(self) -> str:
        buckets = self.get("buckets", {})
        total = self.get("total_bytes", 0) or 1
        width = max([len(k) for k in buckets] + [26])
        devices = self.get("devices", 1)
        head = "memory per device (MiB)" + (f", {devices} devices" if devices > 1 else "")
        lines = [f"{head:<{width}} {'MiB':>10} {'%':>8}"]
        for name, nbytes in buckets.items():
            lines.append(f"{name:<{width}} {_mib(nbytes)} {100 * nbytes / total:8.1f}")
        lines.append(f"{'total (XLA' + chr(39) + 's bytes)':<{width}} {_mib(self.get('total_bytes', 0))} {100.0:8.1f}")
        for key, label in (("donated_bytes", "donated, updated in place"), ("host_offloaded_bytes", "host-offloaded")):
            if self.get(key):
                lines.append(f"{label:<{width}} {_mib(self[key])}")
        lines.append(f"{'predicted peak (+ code)':<{width}} {_mib(self.get('peak_bytes', 0))}")
        if self.get("checkpointing"):
            lines.append(f"recomputed (memory budget): {', '.join(self['checkpointing']) or 'nothing'}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle):  # IPython shows the table
        printer.text(str(self))


def module_paths(graph) -> list:
    """``[(module, path)]`` for every module of ``graph`` (``<attribute>.<submodule path>``), each once."""
    out, seen = [], set()
    for name, module in graph._modules.items():
        for sub_name, sub in module.named_modules():
            if id(sub) not in seen:
                seen.add(id(sub))
                out.append((sub, f"{name}.{sub_name}" if sub_name else name))
    return out


def _compile_uncached(lowered):
    """``lowered.compile()`` bypassing JAX's persistent compilation cache (whose key ignores op
    names) and its in-memory one (an explicit default compiler option makes a new in-memory key)."""
    import jax

    from .. import _jax_compat

    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    _jax_compat.reset_persistent_cache()  # (JAX reads the setting once per process)
    try:
        return lowered.compile(compiler_options={"xla_dump_hlo_as_text": False})
    finally:
        jax.config.update("jax_enable_compilation_cache", before)
        _jax_compat.reset_persistent_cache()


def report(graph, entry) -> MemoryReport:
    """The attributed report of ``entry`` (an ``Executable`` of ``graph``)."""
    tensors = list(entry.state.tensors)
    changed = list(entry.record["changed"])
    kept = [i for i in range(len(tensors)) if i not in set(changed)]
    layout = entry.state.layout

    def kind(i):
        return PARAMETERS if tensors[i].requires_grad else BUFFERS

    arg_kinds = {("state", i): kind(i) for i in range(len(tensors))}
    arg_kinds.update({("changed_state", k): kind(i) for k, i in enumerate(changed)})
    arg_kinds.update({("kept_state", k): kind(i) for k, i in enumerate(kept)})
    grad_sizes = set()
    for i, t in enumerate(tensors):
        if t.requires_grad:
            shape = tuple(t.shape)
            if layout is not None and layout.grads[i] is not None:
                shape = tuple(layout.grads[i].shard_shape(shape))
            grad_sizes.add(int(np.prod(shape, dtype=np.int64)) * np.dtype(t._data.dtype).itemsize)
    try:
        devices = len(entry.compiled.runtime_executable().local_devices())
    except Exception:  # noqa: BLE001
        devices = 1
    paths = {path for _, path in module_paths(graph)}
    out = analyze(entry.compiled, arg_kinds, paths, grad_sizes, devices)
    if out.pop("_scopes_seen", True) is False and paths:
        # JAX's persistent cache gave an executable compiled from an earlier trace of the same program
        # (its cache key ignores metadata): its op names are that trace's; compile this one afresh
        out = analyze(_compile_uncached(entry.lowered), arg_kinds, paths, grad_sizes, devices)
        out.pop("_scopes_seen", None)
    if "recomputed" in entry.record:
        out["checkpointing"] = list(entry.record["recomputed"])
    return out


# -- checkpoint choices: the policy check and the memory budget -------------------------------------
def _variant(executables, in_tree, statics, arrays, choice: dict):
    """The step compiled with activation checkpointing exactly on the modules of ``choice``
    (``{id(module): policy}``; every other module off); the graph's options are restored after."""
    graph = executables.graph
    paths = dict((id(m), (m, p)) for m, p in module_paths(graph))
    for key in choice:
        m, p = paths[key]
        graph._options_for(m, p)
    options = [o for _, o in graph._module_options.values()]
    before = [o.activation_checkpointing for o in options]
    try:
        for m, o in graph._module_options.values():
            o.activation_checkpointing = choice.get(id(m), False)
        return executables.finish(*executables.lower(in_tree, statics, arrays))
    finally:
        for o, value in zip(options, before):
            o.activation_checkpointing = value


def _peak(entry) -> int:
    m = entry.compiled.memory_analysis()
    if m is None:
        return 0
    return int(m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes + m.temp_size_in_bytes)


def _blocks(graph, activations: dict) -> list:
    """Candidate modules to recompute, the most saved activation bytes first: the modules at the
    shallowest depth below the graph's attributes where two or more hold activations. Only modules
    that are called count: a ``ModuleList``'s blocks are called by its owner, never the list
    (checkpointing it would change nothing)."""
    from ..nn.module import Module  # (nn imports graph at load)

    paths = [(m, p) for m, p in module_paths(graph) if type(m).forward is not Module.forward]
    total = defaultdict(int)
    for path, nbytes in activations.items():
        for _, p in paths:
            if path == p or path.startswith(p + "."):
                total[p] += nbytes
    by_depth = defaultdict(list)
    for m, p in paths:
        if total.get(p) and "." in p:
            by_depth[p.count(".")].append((total[p], p, m))
    for depth in sorted(by_depth):
        if len(by_depth[depth]) >= 2:
            return [(m, p) for _, p, m in sorted(by_depth[depth], key=lambda t: -t[0])]
    for depth in sorted(by_depth):
        return [(m, p) for _, p, m in sorted(by_depth[depth], key=lambda t: -t[0])]
    return [(m, p) for m, p in paths if total.get(p)]


def checkpoint_choice(executables, entry, in_tree, statics, arrays):
    """After a compile: with ``config.memory_budget``, the step recomputing the fewest blocks that
    fits (``entry.record["recomputed"]`` names them); else, when some module is checkpointed,
    a warning if that leaves the step's memory where it is without checkpointing."""
    import warnings

    from ..errors import OpError

    graph = executables.graph
    budget = graph.config._memory_budget
    on = {id(m): o.activation_checkpointing for m, o in graph._module_options.values() if o.activation_checkpointing}
    if budget is None:
        if on and graph.training:  # (an inference step keeps nothing for a backward: nothing to compare)
            plain = _peak(_variant(executables, in_tree, statics, arrays, {}))
            mine = _peak(entry)
            if mine >= plain:
                options = [o for _, o in graph._module_options.values() if o.activation_checkpointing]
                names = ", ".join(f"{o.path}={o.activation_checkpointing!r}" for o in options)
                warnings.warn(
                    f"nn.Graph {graph.name}: activation checkpointing ({names}) leaves the compiled step at {mine} "
                    f"bytes per device, {plain} without it: it saves no memory here. Checkpoint larger blocks, "
                    "pick a policy that saves less, or on CPU set "
                    "XLA_FLAGS=--xla_cpu_enable_concurrency_optimized_scheduler=false",
                    stacklevel=4,
                )
        return entry
    peak = _peak(entry)
    if peak <= budget:
        options = graph._module_options.values()
        entry.record["recomputed"] = tuple(o.path for _, o in options if o.activation_checkpointing)
        return entry
    base = entry if not on else _variant(executables, in_tree, statics, arrays, {})
    candidates = _blocks(graph, report(graph, base)["activations_by_module"])  # (stale op names: see report)
    tried = {}

    def attempt(k):
        if k not in tried:
            variant = _variant(executables, in_tree, statics, arrays, {id(m): True for m, _ in candidates[:k]})
            tried[k] = (_peak(variant), variant)
        return tried[k]

    n = len(candidates)
    if n == 0 or attempt(n)[0] > budget:
        best = attempt(n)[0] if n else peak
        raise OpError(
            f"nn.Graph {graph.name}: config.memory_budget({budget}) is too small: the step needs {peak} bytes per "
            f"device, and {best} recomputing every block ({', '.join(p for _, p in candidates) or 'none found'}); "
            f"raise the budget to at least {best} bytes, use a smaller batch, or shard the step (config.set_mesh)"
        )
    lo, hi = 1, n  # the fewest blocks that fit: attempt(hi) fits
    while lo < hi:
        mid = (lo + hi) // 2
        if attempt(mid)[0] <= budget:
            hi = mid
        else:
            lo = mid + 1
    chosen = candidates[:hi]
    for m, p in module_paths(graph):
        graph._options_for(m, p).activation_checkpointing = any(m is c for c, _ in chosen)
    entry = attempt(hi)[1]
    entry.record["recomputed"] = tuple(p for _, p in chosen)
    return entry
