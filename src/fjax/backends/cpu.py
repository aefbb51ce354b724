"""``fjax.backends.cpu``: the CPU backend's capability query."""

from __future__ import annotations


def get_cpu_capability() -> str:
    """The CPU vector instruction set torch reports (``"AVX2"``, ``"AVX512"``, ...). XLA compiles
    for the host CPU itself, so fjax reports ``"DEFAULT"`` (no fixed choice) rather than guess.

    Example::

        >>> fjax.backends.cpu.get_cpu_capability()
        'DEFAULT'
    """
    return "DEFAULT"
