"""``fjax.onnx``: torch.onnx's entry points, so programs that import it run. fjax does not write ONNX:
:func:`export` raises ``NotImplementedError``; :func:`is_in_onnx_export` is always False. To save a
compiled model, ``jax.export`` serializes the StableHLO of a jitted function.

Example::

    >>> fjax.onnx.is_in_onnx_export()
    False
"""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, *unused_args, **unused_kwargs):
    """torch.onnx.export: not supported by fjax; raises ``NotImplementedError``.

    Example::

        >>> fjax.onnx.export(fjax.nn.Linear(2, 2), (fjax.zeros(1, 2),), "model.onnx")
        Traceback (most recent call last):
        ...
        NotImplementedError: fjax.onnx.export: fjax does not write ONNX (jax.export saves StableHLO)
    """
    raise NotImplementedError("fjax.onnx.export: fjax does not write ONNX (jax.export saves StableHLO)")


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is running: never in fjax."""
    return False
