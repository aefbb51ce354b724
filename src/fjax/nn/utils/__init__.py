"""``fjax.nn.utils``: gradient clipping, ``skip_init`` and (``utils.rnn``) packed sequences."""

from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .init import skip_init

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn", "skip_init"]
