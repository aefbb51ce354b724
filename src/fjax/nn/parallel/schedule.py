"""Where a compiled program's collectives sit relative to its backward ops (read from HLO text)."""

from __future__ import annotations

import re

_COLLECTIVES = ("all-reduce", "all-reduce-start", "reduce-scatter", "all-gather", "all-gather-start")
_NAME = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*")
_OP = re.compile(r"\s*([a-z][\w\-]*)\(")
_ELEMS = re.compile(r"([a-z]+\d*)\[([\d,]*)\]")


def _split(line: str):
    """(shape, opcode) of an HLO instruction line, or None."""
    m = _NAME.match(line)
    if not m:
        return None
    rhs = line[m.end() :]
    if rhs.startswith("("):  # a tuple shape: up to its closing parenthesis
        depth, end = 0, 0
        while end < len(rhs):
            depth += {"(": 1, ")": -1}.get(rhs[end], 0)
            end += 1
            if depth == 0:
                break
        shape, rest = rhs[:end], rhs[end:]
    else:
        shape, _, rest = rhs.partition(" ")
        rest = " " + rest
    op = _OP.match(rest)
    return (shape, op.group(1)) if op else None


def _elements(shape: str) -> int:
    total = 0
    for _, dims in _ELEMS.findall(shape):
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        total += n
    return total


def collective_schedule(hlo_text: str) -> dict:
    """The order of the ENTRY computation of a compiled (scheduled) HLO module: where each
    collective runs relative to the backward ops (instructions whose ``op_name`` holds JAX's
    ``transpose(``).

    Args:
        hlo_text: ``compiled.as_text()`` of a jitted program (its ENTRY computation lists the
            instructions in the order the schedule runs them on a sequential backend).

    Returns:
        ``{"instructions": n, "backward": [positions], "collectives": [{"position", "opcode",
        "elements", "after_backward_ops", "before_backward_ops"}]}``: per collective, how many
        backward ops the schedule runs before it and after it.

    Example:
        >>> from fjax.nn.parallel.schedule import collective_schedule
        >>> text = '''ENTRY %main {
        ...   %a = f32[4]{0} dot(%x, %y), metadata={op_name="jit(f)/transpose(jvp())/dot_general"}
        ...   %r = f32[4]{0} all-reduce(%a), channel_id=1
        ...   ROOT %b = f32[4]{0} add(%r, %r), metadata={op_name="jit(f)/transpose(jvp())/add"}
        ... }'''
        >>> s = collective_schedule(text)
        >>> s["collectives"][0]["after_backward_ops"], s["collectives"][0]["before_backward_ops"]
        (1, 1)
    """
    at = hlo_text.find("ENTRY")
    if at < 0:
        raise ValueError("collective_schedule: no ENTRY computation in the HLO text (pass compiled.as_text())")
    body = hlo_text[at:].split("\n", 1)[1] if "\n" in hlo_text[at:] else ""
    rows = []
    for line in body.splitlines():
        if line.strip() == "}":
            break
        parsed = _split(line)
        if parsed:
            rows.append((parsed[1], parsed[0], line))
    skip = ("get-tuple-element", *_COLLECTIVES)  # a combined collective keeps its operands' op_name
    backward = [i for i, (op, _, line) in enumerate(rows) if "transpose(" in line and op not in skip]
    out = []
    for i, (op, shape, _) in enumerate(rows):
        if op in _COLLECTIVES:
            out.append(
                {
                    "position": i,
                    "opcode": op,
                    "elements": _elements(shape),
                    "after_backward_ops": sum(1 for b in backward if b < i),
                    "before_backward_ops": sum(1 for b in backward if b > i),
                }
            )
    return {"instructions": len(rows), "backward": backward, "collectives": out}
