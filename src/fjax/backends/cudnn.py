"""``fjax.backends.cudnn``: torch.backends.cudnn's switches.

XLA chooses and autotunes its GPU kernels itself (cuDNN among them), so ``enabled``,
``benchmark``, ``deterministic`` and ``allow_tf32`` are plain attributes that programs may set and
read back but that change nothing fjax computes:

- ``enabled`` (True): XLA uses cuDNN where it sees fit regardless.
- ``benchmark`` (False): XLA autotunes GPU convolutions and matmuls when it compiles, always.
- ``deterministic`` (False): for deterministic GPU kernels start the process with
  ``XLA_FLAGS=--xla_gpu_deterministic_ops=true``; this attribute does not set it.
- ``allow_tf32`` (True): convolutions follow JAX's default precision, which
  ``fjax.backends.cuda.matmul.allow_tf32`` sets for matmuls and convolutions together.
"""

from __future__ import annotations

from .. import _jax_compat

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN can be used: True when JAX has a GPU backend (XLA's GPU backend links
    cuDNN), False on CPU, as torch's answer on a machine without CUDA.

    Example::

        >>> fjax.backends.cudnn.is_available() == fjax.cuda.is_available()
        True
    """
    from .. import cuda

    return cuda.is_available()


def version():
    """cuDNN's version as torch reports it (e.g. ``90100`` for 9.1.0) when JAX has a GPU backend
    and reports it, else None (torch's answer without cuDNN).

    Example::

        >>> fjax.backends.cudnn.version() is None or fjax.backends.cudnn.version() > 0
        True
    """
    if not is_available():
        return None
    cuda_versions = getattr(_jax_compat.private("lib"), "cuda_versions", None)
    if cuda_versions is None:
        return None
    try:
        return int(cuda_versions.cudnn_get_version())
    except Exception:  # noqa: BLE001 - an optional query; no version is the honest answer
        return None
