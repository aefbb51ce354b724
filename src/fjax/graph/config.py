"""GraphConfig: OneFlow's ``graph.config`` switches, mapped onto what XLA and JAX provide."""

from __future__ import annotations

from .. import dtypes as _dt


class GraphConfig:
    """Per-graph compile options (``graph.config``).

    ``allow_fuse_*`` and similar fusion switches are accepted and ignored: XLA already fuses
    elementwise chains, casts and scales into their producers, and the optimizer update runs
    inside the same compiled step, so there is nothing left for them to turn on.
    """

    def __init__(self):
        self.amp_dtype = None
        self.grad_acc_steps = 1
        self.cache_size = 9
        self.mesh = None

    def enable_amp(self, mode: bool = True, *, dtype=_dt.bfloat16) -> None:
        """Compute forward/backward in ``dtype`` (bfloat16 or float16); master weights and the
        optimizer stay float32."""
        dtype = _dt.to_dtype(dtype)
        if dtype not in (_dt.bfloat16, _dt.float16):
            raise ValueError(f"enable_amp: expected dtype fjax.bfloat16 or fjax.float16, got {dtype}")
        self.amp_dtype = dtype if mode else None

    def set_gradient_accumulation_steps(self, value: int) -> None:
        """Split inputs on dim 0 into ``value`` micro-batches; one optimizer step per call on the
        mean of the micro-batch gradients (OneFlow scales each by ``1/value``); outputs are
        packed on dim 0 as OneFlow's are (a scalar becomes shape ``(value,)``, ``(b, ...)``
        becomes ``(value * b, ...)``)."""
        if int(value) < 1:
            raise ValueError(f"set_gradient_accumulation_steps: expected a positive int, got {value}")
        self.grad_acc_steps = int(value)

    def set_mesh(self, config) -> None:
        """Compile this graph's step with the shardings of a mesh configuration (a dict, a
        JSON/YAML path or a ``fjax.distributed.MeshConfig``); the model code is unchanged."""
        from ..distributed.mesh import MeshConfig

        self.mesh = MeshConfig.load(config)

    def enable_zero(self, mode: bool = True, *, stage: int = 1, **kwargs) -> None:
        """OneFlow's ZeRO switch: shard optimizer state (1), gradients (2) and parameters (3)
        over the ``data`` axis (all devices when no mesh was set)."""
        import jax

        from ..distributed.mesh import MeshConfig

        if self.mesh is None:
            self.mesh = MeshConfig(axes={"data": jax.device_count()})
        self.mesh.zero_stage = stage if mode else 0
        self.mesh.__post_init__()

    def _accept_fusion_flag(self, mode: bool = True) -> None:
        """XLA performs this fusion on its own; the flag is accepted for OneFlow compatibility."""

    allow_fuse_add_to_output = _accept_fusion_flag
    allow_fuse_model_update_ops = _accept_fusion_flag
    allow_fuse_cast_scale = _accept_fusion_flag
    allow_fuse_embedding_update = _accept_fusion_flag
    enable_fuse_add_to_output = _accept_fusion_flag
    enable_cudnn_conv_heuristic_search_algo = _accept_fusion_flag

    def __repr__(self):
        amp = "off" if self.amp_dtype is None else str(self.amp_dtype)
        return (
            f"GraphConfig(amp={amp}, gradient_accumulation_steps={self.grad_acc_steps}, cache_size={self.cache_size})"
        )
