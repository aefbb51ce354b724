"""``skip_init``: build a module without running its parameter initialisation."""

from __future__ import annotations

import inspect


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialised parameters and buffers (torch's
    ``nn.utils.skip_init``).

    The module is built on the ``meta`` device, where initialisation has no values to compute,
    then given storage on ``kwargs["device"]`` (default ``"cpu"``) by ``Module.to_empty``. The
    class must take a ``device`` argument that it passes to the tensors it creates, and its
    constructor must compute nothing from them but ``nn.init`` calls. Uninitialised values are
    zeros in fjax (see ``fjax.empty``): initialise them yourself before use.

    Example::

        >>> m = nn.utils.skip_init(nn.Linear, 5, 1)
        >>> m.weight.shape, m.weight.is_meta, m.weight.requires_grad
        (fjax.Size([1, 5]), False, True)
    """
    from ..module import Module

    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    target = kwargs.pop("device", "cpu")
    return module_cls(*args, device="meta", **kwargs).to_empty(device=target)
