"""``functional_call``: run a module with some parameters/buffers replaced, then restore them.

Values are swapped in the module's ``_parameters``/``_buffers`` registries (as torch does), so
attribute reads and ``named_parameters()`` inside ``forward`` both see them, in eager mode
(gradients flow to the given tensors) and inside transforms (the given tensors are traced).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..tensor import Tensor

_MISSING = object()


def _tied_names(module) -> dict[str, list[str]]:
    """name -> every name of the same tensor (only names that share a tensor)."""
    groups: dict[int, list[str]] = {}
    for name, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        groups.setdefault(id(t), []).append(name)
    return {n: names for names in groups.values() if len(names) > 1 for n in names}


def _untie(module, values: dict) -> dict:
    tied = _tied_names(module)
    out = dict(values)
    for name in [n for n in values if n in tied]:
        names = tied[name]
        given = {id(values[n]) for n in names if n in values}
        if len(given) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, which are tied. Consider using "
                "tie_weights=False"
            )
        for n in names:
            out[n] = values[name]
    return out


def _check_keys(module, keys) -> None:
    valid = {
        n for n, _ in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]
    }
    missing, unexpected = sorted(valid - set(keys)), sorted(set(keys) - valid)
    msgs = []
    if unexpected:
        msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if msgs:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(type(module).__name__, "\n\t".join(msgs)))


def _slot(module, name: str):
    """(registry dict or the submodule, leaf name) holding ``name``."""
    prefix, _, leaf = name.rpartition(".")
    owner = module.get_submodule(prefix) if prefix else module
    for registry in ("_parameters", "_buffers"):
        reg = owner.__dict__.get(registry)
        if reg is not None and leaf in reg:
            return reg, leaf
    return owner, leaf


def functional_call(
    module,
    parameter_and_buffer_dicts: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
    args: Any = None,
    kwargs: dict | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
):
    """``module(*args, **kwargs)`` with the named parameters/buffers replaced (torch.func.functional_call).

    Args:
        module: an ``fjax.nn.Module``.
        parameter_and_buffer_dicts: ``{dotted name: Tensor}`` or a sequence of such dicts.
        args: one positional argument, or a tuple of them.
        kwargs: keyword arguments of the call.
        tie_weights: a value given for one of several tied names replaces all of them.
        strict: the names must be exactly the module's parameters and buffers.

    Example:
        >>> model = nn.Linear(2, 1)
        >>> params = {"weight": fjax.ones(1, 2), "bias": fjax.zeros(1)}
        >>> fjax.func.functional_call(model, params, (fjax.tensor([[1.0, 2.0]]),))
        tensor([[3.]], dtype=fjax.float32)
    """
    if isinstance(parameter_and_buffer_dicts, Mapping):
        values = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
            f"{type(parameter_and_buffer_dicts)}"
        )
    if tie_weights:
        values = _untie(module, values)
    if strict:
        _check_keys(module, values)
    args = args if isinstance(args, tuple) else (() if args is None else (args,))
    saved = []
    try:
        for name, value in values.items():
            holder, leaf = _slot(module, name)
            if isinstance(holder, dict):
                saved.append((holder, leaf, holder[leaf]))
                holder[leaf] = value
            else:
                saved.append((holder, leaf, holder.__dict__.get(leaf, _MISSING)))
                holder.__dict__[leaf] = value
        return module(*args, **(kwargs or {}))
    finally:
        for holder, leaf, old in reversed(saved):
            if isinstance(holder, dict):
                holder[leaf] = old
            elif old is _MISSING:
                del holder.__dict__[leaf]
            else:
                holder.__dict__[leaf] = old
