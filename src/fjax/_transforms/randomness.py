"""vmap's ``randomness`` modes: how random draws behave while a batched function is traced.

fjax's random functions all draw keys from ``Generator.next_key``. While a vmap traces the
per-example function, that method is swapped: ``"error"`` raises (torch's default),
``"different"`` folds the example's index into each key (each example draws its own numbers),
``"same"`` leaves it alone (one draw broadcast over the batch).
"""

from __future__ import annotations

import contextlib

import jax

from ..random import Generator


@contextlib.contextmanager
def random_mode(mode: str, index=None):
    """Within the block, ``Generator.next_key`` follows ``mode`` (index: the traced example index)."""
    if mode == "same":
        yield
        return
    original = Generator.next_key

    def raising(self):
        raise RuntimeError(  # torch's message (its jacfwd is a vmap too)
            "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
            "'different' randomness flags on vmap or perform the randomness operation out of vmap"
        )

    def per_example(self):
        return jax.random.fold_in(original(self), index)

    Generator.next_key = raising if mode == "error" else per_example
    try:
        yield
    finally:
        Generator.next_key = original
