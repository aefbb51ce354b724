"""DistributedDataParallel: one model replica per process, gradients averaged over the processes."""

from __future__ import annotations

import contextlib

from ..._config import config
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...distributed.collectives import all_reduce, broadcast
from ...distributed.process_group import ProcessGroup, _group
from ...tensor import Tensor
from ..module import Module
from .reducer import Reducer


class _Alias(Function):
    """``x`` itself (a view) whose backward tells DDP that ``x``'s gradient from the forward is complete."""

    @staticmethod
    def forward(ctx, x, ddp, i):
        ctx.ddp, ctx.i = ddp, i
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        ctx.ddp._alias_ready(ctx.i, grad)
        return grad, None, None


class DistributedDataParallel(Module):
    """torch's ``DistributedDataParallel`` over fjax's process group (``fjax.distributed``).

    Wraps ``module``: ``forward`` calls it, ``.module`` is it and ``state_dict`` keys start with
    ``module.``. It needs ``init_process_group`` first. With several processes it broadcasts rank
    0's parameters and buffers when built (``init_sync``), rank 0's buffers before each forward
    (``forward_sync_buffers``, or the older ``broadcast_buffers``), and each backward averages
    the gradients over the processes as torch's reducer does (``self.reducer``,
    ``nn/parallel/reducer.py``): in buckets of parameters in reverse order, the first of 1 MiB,
    the others of ``bucket_cap_mb`` (25) MB (or ``bucket_cap_mb_list``'s caps), each bucket's
    all-reduce launched asynchronously as soon as its last gradient is ready. Inside
    ``no_sync()`` gradients accumulate locally and join the next synchronized backward's average
    (the whole ``.grad`` is averaged, as in torch). Every process must compute gradients for
    the same parameters; a parameter that a backward leaves out raises at the next forward, as
    in torch, unless ``find_unused_parameters=True`` (then one all-reduce per parameter as it
    accumulates, and one that no rank's backward reaches keeps ``grad`` None everywhere). In a
    world of one process nothing is communicated and the wrapper computes exactly what the
    module computes.

    Overlap (``overlap_grad_reduce``, a fjax attribute: True, False, or None, the default, for
    True exactly when ``fjax.config.eager_fusion`` is off): fjax's backward runs a
    leaf's hooks after the whole walk, so to learn when a gradient is ready during backward the
    forward runs the module with each parameter replaced by an alias (an identity Function over
    ``p.view_as(p)``) whose backward marks the parameter ready; its bucket is launched there,
    while the backward's remaining nodes still run. That backward runs node by node (eager
    fusion does not fuse a backward through a custom Function). Where a gradient also reaches a
    parameter outside DDP's forward (a loss term reading the parameter directly), the leaf's
    hook sees a gradient other than the alias's and launches that bucket again with the whole
    gradient, after the backward. ``overlap_grad_reduce = False`` launches every bucket from
    the post-accumulate-grad hooks after the backward (which eager fusion may fuse into one
    program; each bucket is still dispatched without waiting for the one before). Both give
    bit-identical gradients from the same local gradients. With eager fusion on, the overlap
    gives up the fused backward, which costs more than the overlap saved on CPU
    (``benchmarks/ddp_overlap.py``): hence the default.

    The static-graph, device and mixed-precision arguments are accepted and have no effect;
    ``device_ids``/``output_device``/``dim`` are kept as attributes.
    Inside ``nn.Graph`` the averaging hooks cannot run (they communicate from the host): use a
    mesh there instead.

    Example::

        >>> import fjax.distributed as dist
        >>> from fjax.nn.parallel import DistributedDataParallel as DDP
        >>> dist.init_process_group("gloo")
        >>> model = DDP(nn.Linear(3, 2))
        >>> model(fjax.ones(4, 3)).sum().backward()
        >>> model.module.bias.grad
        tensor([4., 4.], dtype=fjax.float32)
        >>> list(model.state_dict())
        ['module.weight', 'module.bias']
        >>> dist.destroy_process_group()
    """

    def __init__(
        self,
        module: Module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool | None = None,
        init_sync: bool = True,
        process_group: ProcessGroup | None = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params=None,
        param_to_hook_all_reduce=None,
        mixed_precision=None,
        device_mesh=None,
        skip_all_reduce_unused_params: bool = False,
        bucket_cap_mb_list=None,
        batched_grad_copy: bool = False,
        forward_sync_buffers: bool | None = None,
    ) -> None:
        super().__init__()
        pg = _group(process_group)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a "
                "gradient."
            )
        self.module = module
        self.process_group = pg
        self.device_ids = list(device_ids) if device_ids is not None else None
        self.output_device = output_device
        self.dim = dim
        self.forward_sync_buffers = forward_sync_buffers if forward_sync_buffers is not None else broadcast_buffers
        if self.forward_sync_buffers is None:
            self.forward_sync_buffers = True
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._unsynced: set[int] = set()  # ids of parameters whose .grad holds no_sync() gradients
        self._handles = []
        self.reducer: Reducer | None = None
        self.overlap_grad_reduce: bool | None = None
        if pg.size() > 1:
            if init_sync:
                self._broadcast_state(module.parameters())
                self._broadcast_state(module.buffers())
            if find_unused_parameters:
                self._handles = [p.register_hook(self._grad_hook(p)) for p in params]
            else:
                caps = [int(mb * 1024 * 1024) for mb in bucket_cap_mb_list] if bucket_cap_mb_list else None
                self.reducer = Reducer(params, pg.size(), bucket_cap_mb, bucket_caps_bytes=caps)
                index = {id(p): i for i, p in enumerate(params)}
                self._slots = [
                    (m, name, index[id(p)])
                    for m in module.modules()
                    for name, p in m._parameters.items()
                    if p is not None and id(p) in index
                ]
                self._alias_out: dict = {}  # param index -> the gradient array its alias passed on
                self._handles = [
                    p.register_post_accumulate_grad_hook(self._post_accumulate_hook(i)) for i, p in enumerate(params)
                ]
                self._handles += [p.register_hook(self._leaf_hook(i)) for i, p in enumerate(params)]

    @property
    def broadcast_buffers(self) -> bool:
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    def _broadcast_state(self, tensors) -> None:
        for t in tensors:
            broadcast(t, 0, group=self.process_group)

    def _grad_hook(self, param: Tensor):
        def hook(grad: Tensor):
            if not self.require_backward_grad_sync:
                self._unsynced.add(id(param))
                return None
            local = grad
            if id(param) in self._unsynced:
                self._unsynced.discard(id(param))
                if param.grad is not None:  # average the no_sync() steps too; the engine then stores the average
                    local = Tensor._wrap(param.grad._data + grad._data)
                    param.grad = None
            total = Tensor._wrap(local._data)
            all_reduce(total, group=self.process_group)
            return Tensor._wrap(total._data / self.process_group.size())

        return hook

    def _post_accumulate_hook(self, i: int):
        def hook(param: Tensor) -> None:
            if not self.require_backward_grad_sync:
                return
            if not self.reducer.is_ready(i):  # no alias marked it during the backward
                self.reducer.mark_ready(i, param.grad._data)
            self.reducer.accumulated(i)

        return hook

    def _alias_ready(self, i: int, grad: Tensor) -> None:
        """The backward reached parameter ``i``'s alias: the gradient DDP's forward gave it is complete."""
        if self.require_backward_grad_sync:
            param = self.reducer.params[i]
            # the .grad the engine will store after the walk: the same sum, so the same bits
            local = grad._data if param.grad is None else param.grad._data + grad._data
            self.reducer.mark_ready(i, local)
            self._alias_out[i] = grad._data

    def _leaf_hook(self, i: int):
        def hook(grad: Tensor) -> None:
            # the leaf's whole gradient of this backward; when it is not the very array the alias
            # passed on, something outside DDP's forward added to it: its bucket is reduced again
            sent = self._alias_out.pop(i, None)
            if sent is not None and self.require_backward_grad_sync and grad._data is not sent:
                param = self.reducer.params[i]
                local = grad._data if param.grad is None else param.grad._data + grad._data
                self.reducer.mark_ready(i, local, replace=True)

        return hook

    def _forward_overlapped(self, inputs, kwargs):
        params = self.reducer.params
        self._alias_out.clear()
        aliases = {}
        for _, _, i in self._slots:
            if i not in aliases:
                aliases[i] = _Alias.apply(params[i], self, i)
        for m, name, i in self._slots:
            m._parameters[name] = aliases[i]
        try:
            return self.module(*inputs, **kwargs)
        finally:
            for m, name, i in self._slots:
                m._parameters[name] = params[i]

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate local gradients without communicating; the first
        backward after the block averages them with its own.

        Example::

            >>> import fjax.distributed as dist
            >>> from fjax.nn.parallel import DistributedDataParallel as DDP
            >>> dist.init_process_group("gloo")
            >>> model = DDP(nn.Linear(2, 1))
            >>> with model.no_sync():
            ...     model(fjax.ones(1, 2)).sum().backward()
            >>> model(fjax.ones(1, 2)).sum().backward()
            >>> model.module.bias.grad
            tensor([2.], dtype=fjax.float32)
            >>> dist.destroy_process_group()
        """
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def forward(self, *inputs, **kwargs):
        if self.forward_sync_buffers and self.process_group.size() > 1:
            self._broadcast_state(self.module.buffers())
        if self.reducer is not None:
            left = self.reducer.pending()
            if left:
                names = {id(p): n for n, p in self.module.named_parameters()}
                missing = [names.get(id(self.reducer.params[i]), str(i)) for i in left]
                raise RuntimeError(
                    "DistributedDataParallel: Expected to have finished reduction in the prior iteration before "
                    f"starting a new one: parameters that received no gradient: {missing}. Pass "
                    "find_unused_parameters=True to DistributedDataParallel if some parameters take no part in "
                    "the loss."
                )
            overlap = self.overlap_grad_reduce
            if overlap is None:  # auto: a fused backward is worth more than the overlap (benchmarks/ddp_overlap.py)
                overlap = not config.eager_fusion
            if overlap and self.require_backward_grad_sync and is_grad_enabled():
                return self._forward_overlapped(inputs, kwargs)
        return self.module(*inputs, **kwargs)
