"""``swap_in_optimizer_params_and_state``: step an optimizer on external parameters and state (torch.optim)."""

from __future__ import annotations

import contextlib

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor

_NAME = "swap_in_optimizer_params_and_state"


def _prepare_swap_in(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """torch's checks; returns ``(state by packed id, [(live group, swap-in group, swap-in params)])``."""
    if not optimizer._state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = swapin_optim_state.get("state")
    if not isinstance(state, dict):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids to per-param "
            f"state dicts, got {type(state).__name__}."
        )
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, "
            f"got {type(groups).__name__}."
        )
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    flat = list(swapin_parameters.values())
    offset = 0
    seen: set = set()
    infos = []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(swapin_group, dict):
            raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
        ids = swapin_group.get("params")
        if not isinstance(ids, list) or not all(isinstance(pid, int) for pid in ids):
            raise RuntimeError(
                f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed by packed "
                "parameter ids."
            )
        if len(group["params"]) != len(ids):
            raise RuntimeError(
                f"swapin_optim_state param group {idx} has a different number of params than the live optimizer "
                "param group."
            )
        swapin_only = [k for k in swapin_group if k not in group]
        live_only = [k for k in group if k not in swapin_group]
        if swapin_only or live_only:
            raise RuntimeError(
                f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the live optimizer "
                f"group keys for group {idx}. Keys only in swap-in: {swapin_only}. Keys only in live: {live_only}."
            )
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(
                f"{_NAME} requires the explicit parameter state to match optimizer.param_groups ordering."
            )
        infos.append((group, swapin_group, flat[offset : offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter ids from "
            f"param_groups[*]['params']; got extra keys {extra!r}."
        )
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """Run the optimizer, inside the context, on other parameters and another (state_dict-style) state.

    Inside the context ``optimizer.param_groups`` list the tensors of ``swapin_parameters``
    (in order, group after group) with the hyper-parameters of
    ``swapin_optim_state['param_groups']``, and each parameter's state is its entry of
    ``swapin_optim_state['state']``. ``step()`` updates those parameters in place and, as torch
    mutates the state's tensors in place, the tensors of each state entry receive the updated
    state. On exit the optimizer's own parameters, hyper-parameters and state come back. The
    optimizer must have state already (one step taken).

    Args:
        optimizer: the optimizer.
        swapin_parameters: ``{name: tensor}`` in the order of the optimizer's parameters.
        swapin_optim_state: a dict shaped like ``optimizer.state_dict()`` for those parameters.

    Example:
        >>> w = nn.Parameter(fjax.ones(2))
        >>> opt = optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = fjax.ones(2)
        >>> opt.step()
        >>> other = nn.Parameter(fjax.zeros(2))
        >>> other.grad = fjax.ones(2)
        >>> groups = opt.state_dict()["param_groups"]
        >>> sd = {"state": {0: {"momentum_buffer": fjax.full((2,), 10.0)}}, "param_groups": groups}
        >>> with optim.swap_in_optimizer_params_and_state(opt, {"w": other}, sd):
        ...     opt.step()
        >>> other.tolist(), sd["state"][0]["momentum_buffer"].tolist(), w.tolist()
        ([-1.0, -1.0], [10.0, 10.0], [0.8999999761581421, 0.8999999761581421])
    """
    state, infos = _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state)
    saved = optimizer._state, optimizer._state_static
    snapshots = [dict(g) for g in optimizer.param_groups]
    written = []
    try:
        new_state, new_static = {}, {}
        for live, swapin_group, params in infos:
            live["params"] = params
            for key, value in swapin_group.items():
                if key != "params":
                    live[key] = value
            for p, pid in zip(params, swapin_group["params"]):
                entry = state.get(pid)
                if entry:
                    new_state[p], new_static[p] = optimizer._load_entry(p, entry, live, pid)
                    written.append((p, entry))
        optimizer._state, optimizer._state_static = new_state, new_static
        yield
    finally:
        with no_grad():
            for p, entry in written:
                if p in optimizer._state:
                    new = optimizer._to_torch(p)
                    for key, value in entry.items():
                        if isinstance(value, Tensor) and key in new:
                            value.copy_(new[key])
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer._state, optimizer._state_static = saved
