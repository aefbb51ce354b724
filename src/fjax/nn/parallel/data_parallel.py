"""DataParallel: torch's single-process multi-device wrapper; fjax runs the module on one device."""

from __future__ import annotations

from ..module import Module


class DataParallel(Module):
    """Wrap ``module`` as torch's ``nn.DataParallel`` does: ``forward`` calls ``module`` and
    ``state_dict`` keys start with ``module.``.

    torch splits each batch along ``dim`` over ``device_ids`` (GPUs) and gathers the outputs on
    ``output_device``; fjax runs the whole batch as one call on the module's device, which gives
    the same values except where a layer looks at the batch a replica sees (BatchNorm statistics
    are over the whole batch here, over each replica's part in torch). For data parallelism over
    several devices use ``nn.Graph`` with a mesh, or DistributedDataParallel over processes.

    Args:
        module: the module to wrap.
        device_ids: torch's replica devices; accepted, the batch runs as one call (default None).
        output_device: torch's gather device; accepted, the output stays where the module puts it (default None).
        dim: torch's scatter dim; accepted, the batch is not split (default 0).

    Example::

        >>> model = nn.DataParallel(nn.Linear(3, 2))
        >>> model(fjax.ones(4, 3)).shape
        fjax.Size([4, 2])
        >>> list(model.state_dict())
        ['module.weight', 'module.bias']
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device if output_device is not None else (self.device_ids or [None])[0]
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0, module_kwargs=None):
    """``module(*inputs, **module_kwargs)``: torch's functional DataParallel, on one device (see DataParallel).

    Example::

        >>> from fjax.nn.parallel import data_parallel
        >>> data_parallel(nn.Linear(3, 2), fjax.ones(4, 3)).shape
        fjax.Size([4, 2])
    """
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
