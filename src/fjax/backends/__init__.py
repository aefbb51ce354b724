"""``fjax.backends``: torch.backends' switches, over JAX/XLA.

``import fjax.backends.cudnn as cudnn; cudnn.benchmark = True`` and
``fjax.backends.cuda.matmul.allow_tf32 = True`` work as in torch. Each switch's docstring says
what it changes on fjax: most are accepted and recorded only (XLA picks its own kernels), while
``cuda.matmul.allow_tf32`` sets JAX's default float32 matmul/convolution precision.
"""

from __future__ import annotations

from . import cpu, cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mps"]
