"""The module name fjax's reprs print: ``fjax``, or ``torch`` while ``fjax.mock_torch`` is on, so a
program that prints or compares ``str(x.dtype)``, ``x.type()`` or ``x.shape`` sees torch's text.

Example::

    >>> import fjax.mock_torch
    >>> with fjax.mock_torch.enable():
    ...     import torch
    ...     str(torch.float32), torch.ones(2).type()
    ('torch.float32', 'torch.FloatTensor')
    >>> str(fjax.float32)
    'fjax.float32'
"""

NAME = "fjax"
