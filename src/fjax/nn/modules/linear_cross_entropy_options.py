"""``torch.nn.modules.linear_cross_entropy_options``: LinearCrossEntropyOptions, torch's chunking
choices for ``F.linear_cross_entropy`` (fjax computes the same values in one XLA computation)."""

from __future__ import annotations

import dataclasses

from ... import dtypes as _dt


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """How torch's chunked ``linear_cross_entropy`` splits the batch to save memory; validated as
    torch validates it, kept on ``nn.LinearCrossEntropyLoss``, and not needed by fjax, whose
    values are the reference path's.

    Args:
        allow_retain_graph: allow a second backward through the chunked path (default False).
        batch_chunk_size: batch rows per chunk, a positive int, or None (default).
        chunking_method: ``"auto"`` (default), ``"aspect_ratio"``, ``"aspect_ratio:<k>"`` or None.
        acc_policy: ``"auto"`` (default), ``"accurate"``, ``"balanced"`` or ``"compact"``.
        acc_dtype: the accumulation dtype (float16, bfloat16, float32, float64) or None (default).

    Example::

        >>> nn.LinearCrossEntropyOptions(batch_chunk_size=64).batch_chunk_size
        64
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (
            self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)
        ):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64):
            raise ValueError(
                "acc_dtype must be one of {None, float16, bfloat16, float32, float64}, "
                f"got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick automatically."
            )


__all__ = ["LinearCrossEntropyOptions"]
