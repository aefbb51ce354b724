"""``fjax.backends.cuda``: torch.backends.cuda's switches.

``matmul.allow_tf32`` is live: it reads and sets JAX's ``jax_default_matmul_precision``, which
governs float32 matmuls and convolutions on GPU (on CPU XLA computes float32 in full precision
whatever it says). Unlike torch, whose default is False, JAX's default lets recent NVIDIA GPUs use
TensorFloat32, so it reads True until set. The scaled-dot-product-attention switches are
recorded only: fjax's attention is one XLA computation with no kernel choice to make.
"""

from __future__ import annotations

import contextlib
import importlib.util

import jax

_FULL = ("highest", "float32", "F32_F32_F32")


class _Matmul:
    """``fjax.backends.cuda.matmul``: float32 matmul precision switches."""

    allow_fp16_reduced_precision_reduction = True  # recorded only: XLA decides its accumulators
    allow_bf16_reduced_precision_reduction = True  # recorded only

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 matmuls and convolutions may use TensorFloat32 on GPU: False only when
        JAX's default matmul precision is full float32 (``"highest"``)."""
        precision = jax.config.jax_default_matmul_precision
        return str(precision) not in _FULL

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if value else "highest")

    def __repr__(self):
        return f"<fjax.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


matmul = _Matmul()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """Whether this installation can run on NVIDIA GPUs: True when a JAX CUDA plugin (e.g.
    ``jax-cuda12-plugin``) is installed or JAX already sees a GPU, else False.

    Example::

        >>> isinstance(fjax.backends.cuda.is_built(), bool)
        True
    """
    from .. import cuda

    if cuda.is_available():
        return True
    names = ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")
    for name in names:
        try:
            if importlib.util.find_spec(name) is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


def _switch(name):
    def enable(enabled: bool) -> None:
        _sdp[name] = bool(enabled)

    def query() -> bool:
        return _sdp[name]

    enable.__name__, query.__name__ = f"enable_{name}_sdp", f"{name}_sdp_enabled"
    enable.__doc__ = f"""Record whether the {name} attention kernel may be used (torch's switch). Recorded
    only: fjax's ``scaled_dot_product_attention`` is one XLA computation, not a kernel choice.

    Example::

        >>> fjax.backends.cuda.enable_{name}_sdp(True)
        >>> fjax.backends.cuda.{name}_sdp_enabled()
        True
    """
    query.__doc__ = f"""What ``enable_{name}_sdp`` last recorded (True by default).

    Example::

        >>> fjax.backends.cuda.{name}_sdp_enabled()
        True
    """
    return enable, query


enable_flash_sdp, flash_sdp_enabled = _switch("flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _switch("mem_efficient")
enable_math_sdp, math_sdp_enabled = _switch("math")
enable_cudnn_sdp, cudnn_sdp_enabled = _switch("cudnn")


@contextlib.contextmanager
def sdp_kernel(
    enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True, enable_cudnn: bool = True
):
    """torch's deprecated ``sdp_kernel``: set the four attention switches for the block, restore
    them after (``fjax.nn.attention.sdpa_kernel`` is the current form).

    Example::

        >>> with fjax.backends.cuda.sdp_kernel(enable_flash=False):
        ...     fjax.backends.cuda.flash_sdp_enabled()
        False
    """
    saved = dict(_sdp)
    try:
        _sdp.update(
            flash=bool(enable_flash),
            math=bool(enable_math),
            mem_efficient=bool(enable_mem_efficient),
            cudnn=bool(enable_cudnn),
        )
        yield
    finally:
        _sdp.update(saved)
