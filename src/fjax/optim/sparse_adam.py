"""SparseAdam: present under torch's name, refused, since fjax has no sparse gradients."""

from __future__ import annotations

from .optimizer import Optimizer


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam`` is not supported: constructing one raises NotImplementedError.

    torch's SparseAdam only accepts sparse gradients (those of ``nn.Embedding(sparse=True)``,
    which fjax also refuses) and updates the moments and values of the entries present in
    them, leaving every other entry untouched; a dense gradient is an error there. fjax's
    gradients are always dense and cannot say which entries are "present", so no dense
    update would reproduce torch's numbers. Use :class:`Adam` (dense), or mask the update
    yourself.

    Args:
        params: torch's parameters (construction raises NotImplementedError).
        lr: torch's learning rate (default 0.001).
        betas: torch's moment decay rates (default (0.9, 0.999)).
        eps: torch's stability term (default 1e-08).
        maximize: torch's maximize flag (default False).

    Example::

        >>> emb = nn.Embedding(10, 3)
        >>> fjax.optim.SparseAdam(emb.parameters())
        Traceback (most recent call last):
            ...
        NotImplementedError: fjax.optim.SparseAdam: fjax has no sparse gradients ...
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ):
        raise NotImplementedError(
            "fjax.optim.SparseAdam: fjax has no sparse gradients (nn.Embedding(sparse=True) is not supported "
            "either), and torch's SparseAdam only updates the entries present in a sparse gradient; "
            "use fjax.optim.Adam for dense gradients"
        )
