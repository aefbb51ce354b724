"""``torch.nn.modules.utils``: tuple helpers for layer arguments and state-dict prefix stripping."""

from __future__ import annotations

from ._utils import _ntuple, _pair, _single, _triple

_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """Reverse ``t`` and repeat each element ``n`` times: a Conv's ``padding`` as ``F.pad`` amounts."""
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that start with it, in place.

    The way to load a ``DistributedDataParallel``/``DataParallel`` checkpoint (keys ``module.*``)
    into the bare model, as in torch.

    Example::

        >>> from fjax.nn.modules.utils import consume_prefix_in_state_dict_if_present
        >>> sd = {"module.weight": 1, "module.bias": 2}
        >>> consume_prefix_in_state_dict_if_present(sd, "module.")
        >>> sorted(sd)
        ['bias', 'weight']
    """
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix) :]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata):
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix) :]] = metadata.pop(key)


__all__ = [
    "_ntuple",
    "_pair",
    "_quadruple",
    "_reverse_repeat_tuple",
    "_single",
    "_triple",
    "consume_prefix_in_state_dict_if_present",
]
