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
        self._outputs_buffer_size = 2
        self.options = {}  # OneFlow's scheduling/memory switches, recorded (XLA decides these itself)
        self._graph = None  # a weakref to the owning nn.Graph, set by it
        self._memory_budget = None  # bytes per device, or None (``memory_budget``)

    @property
    def training(self) -> bool:
        """OneFlow's ``graph.config.training``: whether the owning graph trains (it has an optimizer).

        Example:
            >>> nn.Graph.trace(lambda x: x * 2).config.training
            False
        """
        graph = self._graph() if self._graph is not None else None
        return bool(graph is not None and graph.training)

    def _record(self, name: str, value):
        self.options[name] = value

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

    def memory_budget(self, nbytes: int | None) -> None:
        """Fit each compiled step in ``nbytes`` per device: when XLA's predicted peak (see
        ``Graph.memory_report``) is larger, nn.Graph turns on activation checkpointing for the
        fewest blocks (the modules holding the most saved activations first) that make it fit,
        and ``memory_report()["checkpointing"]`` lists them. A budget that even recomputing every
        block misses raises an error saying the smallest peak reached. ``None`` turns it off. On
        CPU run with ``XLA_FLAGS=--xla_cpu_enable_concurrency_optimized_scheduler=false`` (see
        ``GraphModule``), or XLA schedules the recomputation early and the savings vanish.

        Args:
            nbytes: the budget in bytes per device (an int > 0), or None.

        Example:
            >>> cfg = nn.Graph.trace(lambda x: x).config
            >>> cfg.memory_budget(2**30)
            >>> cfg._memory_budget
            1073741824
        """
        if nbytes is not None and (not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes <= 0):
            raise ValueError(f"GraphConfig.memory_budget: expected an int number of bytes > 0 or None, got {nbytes!r}")
        self._memory_budget = nbytes

    def set_mesh(self, config) -> None:
        """Compile this graph's step with the shardings of a mesh configuration (a dict, a
        JSON/YAML path or a ``fjax.distributed.MeshConfig`` of strategies); the model code is unchanged."""
        from ..distributed.mesh import MeshConfig

        self.mesh = MeshConfig.load(config)

    def enable_zero(
        self, mode: bool = True, *, stage: int = 2, shard_min_size: int = 1024, shard_restore_level: int = 1
    ) -> None:
        """OneFlow's ZeRO switch: shard optimizer state (1), gradients (2) and parameters (3)
        over the ``data`` axis (all devices when no mesh was set). ``config.mesh`` becomes a new
        ``MeshConfig`` with its ``fjax.distributed.ZeRO`` strategy replaced (or removed).

        Args:
            mode: turn ZeRO on (True) or off.
            stage: 1, 2 or 3 (OneFlow's default: 2).
            shard_min_size: tensors with fewer elements stay unsharded (OneFlow's default: 1024).
            shard_restore_level: OneFlow's choice (1 or 2) of where stage-3 parameters are
                gathered back; accepted and validated, XLA places those all-gathers itself.

        Example:
            >>> cfg = nn.Graph.trace(lambda x: x).config
            >>> cfg.enable_zero(True, stage=1)
            >>> cfg.mesh.zero_stage
            1
        """
        import jax

        from ..distributed.mesh import MeshConfig
        from ..distributed.strategy import ZeRO

        if shard_restore_level not in (1, 2):
            raise ValueError(f"enable_zero: shard_restore_level must be 1 or 2, got {shard_restore_level!r}")
        if self.mesh is None:
            self.mesh = MeshConfig(axes={"data": jax.device_count()})
        # a new configuration with the ZeRO strategy swapped by value (the compile key follows it)
        self.mesh = self.mesh.replace(ZeRO(stage, int(shard_min_size))) if mode else self.mesh.without(ZeRO)
        self._record("shard_restore_level", shard_restore_level)

    def set_zero_redundancy_optimizer_mode(self, mode: str = "distributed_split"):
        """OneFlow's removed ZeRO switch: raises, pointing at :meth:`enable_zero`, as OneFlow does.

        Args:
            mode: ignored.

        Example:
            >>> nn.Graph.trace(lambda x: x).config.set_zero_redundancy_optimizer_mode()
            Traceback (most recent call last):
            ...
            RuntimeError: `set_zero_redundancy_optimizer_mode` has been changed to `enable_zero`, please use `enable_zero(True)` to activate ZeRO optimization.
        """  # noqa: E501
        raise RuntimeError(
            "`set_zero_redundancy_optimizer_mode` has been changed to `enable_zero`, please use `enable_zero(True)` "
            "to activate ZeRO optimization."
        )

    def set_outputs_buffer_size(self, value: int = 2) -> None:
        """OneFlow's outputs buffer (how many calls may run ahead of their results being read).

        Recorded only: an fjax graph call already returns before the device finishes (XLA's
        asynchronous dispatch), so calls pipeline without a buffer to size.

        Args:
            value: a positive int (OneFlow's default: 2).

        Example:
            >>> cfg = nn.Graph.trace(lambda x: x).config
            >>> cfg.set_outputs_buffer_size(4)
            >>> cfg._outputs_buffer_size
            4
        """
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"set_outputs_buffer_size: expected an int >= 1, got {value!r}")
        self._outputs_buffer_size = value

    def _accept_fusion_flag(self, mode: bool = True) -> None:
        """XLA performs this fusion on its own; the flag is accepted for OneFlow compatibility."""

    allow_fuse_add_to_output = _accept_fusion_flag
    allow_fuse_model_update_ops = _accept_fusion_flag
    allow_fuse_cast_scale = _accept_fusion_flag
    allow_fuse_embedding_update = _accept_fusion_flag
    enable_fuse_add_to_output = _accept_fusion_flag
    enable_cudnn_conv_heuristic_search_algo = _accept_fusion_flag
    enable_multi_tensor_update = _accept_fusion_flag
    enable_fused_model_update_cast = _accept_fusion_flag

    def _choice(self, name: str, mode: str, choices: tuple) -> None:
        if mode not in choices:
            raise ValueError(f"{name}: please choose one type among {{{', '.join(choices)}}}, got {mode!r}")
        self._record(name, mode)

    def enable_straighten_algorithm(self, mode: str = "MemoryFirst") -> None:
        """OneFlow's task-graph ordering strategy; recorded only: XLA's scheduler orders the
        compiled step.

        Args:
            mode: ``"Disable"``, ``"SpeedFirst"``, ``"MemoryFirst"``, ``"OverlapCpuGpu"`` or ``"DelayShortGpu"``.

        Example:
            >>> cfg = nn.Graph.trace(lambda x: x).config
            >>> cfg.enable_straighten_algorithm("SpeedFirst")
            >>> cfg.options["enable_straighten_algorithm"]
            'SpeedFirst'
        """
        modes = ("Disable", "SpeedFirst", "MemoryFirst", "OverlapCpuGpu", "DelayShortGpu")
        self._choice("enable_straighten_algorithm", mode, modes)

    def enable_auto_memory(self, mode: str = "AdaptiveMemory") -> None:
        """OneFlow's auto-parallel memory strategy; recorded only (fjax has no auto-parallel search:
        shardings come from the placement/sbp or ``set_mesh``).

        Args:
            mode: ``"Disable"``, ``"SlightMemoryDown"``, ``"ModerateMemoryDown"``, ``"HeavyMemoryDown"``
                or ``"AdaptiveMemory"``.

        Example:
            >>> cfg = nn.Graph.trace(lambda x: x).config
            >>> cfg.enable_auto_memory("Disable")
            >>> cfg.options["enable_auto_memory"]
            'Disable'
        """
        modes = ("Disable", "SlightMemoryDown", "ModerateMemoryDown", "HeavyMemoryDown", "AdaptiveMemory")
        self._choice("enable_auto_memory", mode, modes)

    def _recording(name: str, why: str):  # noqa: N805 - a class-body helper making the switches below
        def method(self, mode: bool = True) -> None:
            self._record(name, bool(mode))

        method.__name__ = method.__qualname__ = name
        method.__doc__ = (
            f"OneFlow's ``graph.config.{name}(mode)``; recorded in ``config.options`` only: {why}.\n\n"
            f"        Args:\n            mode: turn it on (True) or off.\n\n"
            f"        Example:\n            >>> cfg = nn.Graph.trace(lambda x: x).config\n"
            f"            >>> cfg.{name}(True)\n"
            f"            >>> cfg.options[{name!r}]\n            True\n"
        )
        return method

    _MEMORY = "XLA's buffer assignment plans the compiled step's memory itself"
    _AUTO = "fjax has no auto-parallel search (shardings come from placement/sbp or ``set_mesh``)"
    enable_compress_memory = _recording("enable_compress_memory", _MEMORY)
    enable_choose_best_memory_allocation = _recording("enable_choose_best_memory_allocation", _MEMORY)
    enable_auto_parallel = _recording("enable_auto_parallel", _AUTO)
    enable_auto_parallel_ignore_user_sbp_config = _recording("enable_auto_parallel_ignore_user_sbp_config", _AUTO)
    enable_auto_parallel_trunk_algo = _recording("enable_auto_parallel_trunk_algo", _AUTO)
    enable_auto_parallel_sbp_collector = _recording("enable_auto_parallel_sbp_collector", _AUTO)
    del _recording

    def set_auto_parallel_computation_cost_ratio(self, ratio) -> None:
        """OneFlow's auto-parallel computation-cost coefficient; recorded in ``config.options``
        only: fjax has no auto-parallel search.

        Args:
            ratio: the coefficient.

        Example:
            >>> cfg = nn.Graph.trace(lambda x: x).config
            >>> cfg.set_auto_parallel_computation_cost_ratio(0.5)
            >>> cfg.options["set_auto_parallel_computation_cost_ratio"]
            0.5
        """
        self._record("set_auto_parallel_computation_cost_ratio", ratio)

    def set_auto_parallel_wait_time(self, cost) -> None:
        """OneFlow's auto-parallel communication wait time; recorded in ``config.options`` only:
        fjax has no auto-parallel search.

        Args:
            cost: the wait time.

        Example:
            >>> cfg = nn.Graph.trace(lambda x: x).config
            >>> cfg.set_auto_parallel_wait_time(1.65e4)
            >>> cfg.options["set_auto_parallel_wait_time"]
            16500.0
        """
        self._record("set_auto_parallel_wait_time", cost)

    def __repr__(self):
        amp = "off" if self.amp_dtype is None else str(self.amp_dtype)
        return (
            f"GraphConfig(amp={amp}, gradient_accumulation_steps={self.grad_acc_steps}, cache_size={self.cache_size})"
        )
