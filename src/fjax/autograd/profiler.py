"""``torch.autograd.profiler``: the older profiler API over ``fjax.profiler``.

``profile(enabled=True, *, record_shapes, profile_memory, ...)`` records the same events as
``fjax.profiler.profile`` (``key_averages().table()``, ``export_chrome_trace``); with
``enabled=False`` it records nothing. ``record_function`` is ``fjax.profiler.record_function``;
``emit_nvtx``/``emit_itt`` (ranges for NVIDIA's and Intel's tools) change nothing here.

Example::

    >>> with fjax.autograd.profiler.profile(record_shapes=True) as prof:
    ...     y = fjax.ones(4).exp().sum()
    >>> "exp" in prof.key_averages().table()
    True
"""

from __future__ import annotations

import contextlib

from .. import profiler as _profiler
from ..profiler import EventList, record_function

__all__ = ["EventList", "emit_itt", "emit_nvtx", "profile", "record_function"]


class profile(_profiler.profile):  # noqa: N801 - torch's name
    """torch.autograd.profiler.profile: ``fjax.profiler.profile`` with the older signature."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device=None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config=None,
        acc_events: bool = False,
        custom_trace_id_callback=None,
    ):
        super().__init__(
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=with_stack,
            with_flops=with_flops,
            with_modules=with_modules,
        )
        self.enabled = bool(enabled)

    def start(self):
        if self.enabled:
            super().start()

    def table(self, *args, **kwargs) -> str:
        """``key_averages().table(...)``, as the older profile object offers it directly."""
        return self.key_averages().table(*args, **kwargs)


@contextlib.contextmanager
def emit_nvtx(enabled: bool = True, record_shapes: bool = False):
    """NVTX ranges for NVIDIA's tools: nothing to emit here (JAX's trace is
    ``fjax.profiler.profile(with_jax_trace=...)``)."""
    yield


@contextlib.contextmanager
def emit_itt(enabled: bool = True, record_shapes: bool = False):
    """ITT ranges for Intel's VTune: nothing to emit here."""
    yield
