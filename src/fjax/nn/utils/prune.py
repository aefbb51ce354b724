"""Pruning (``torch.nn.utils.prune``): zero out parts of a tensor through a mask.

Pruning ``module.weight`` moves the parameter to ``weight_orig``, adds the buffer
``weight_mask`` and a forward pre-hook (the pruning method itself) that sets
``module.weight = weight_orig * weight_mask`` before every forward, so gradients reach
``weight_orig`` masked. Pruning the same tensor again combines the masks (a
``PruningContainer``). :func:`remove` makes the pruning permanent.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import linalg
from ...autograd.grad_mode import no_grad
from ...creation import ones_like, zeros_like
from ...dispatch import functions as _F
from ...random import rand, rand_like
from ...tensor import Tensor

__all__ = [
    "BasePruningMethod",
    "PruningContainer",
    "Identity",
    "RandomUnstructured",
    "L1Unstructured",
    "RandomStructured",
    "LnStructured",
    "CustomFromMask",
    "identity",
    "random_unstructured",
    "l1_unstructured",
    "random_structured",
    "ln_structured",
    "global_unstructured",
    "custom_from_mask",
    "remove",
    "is_pruned",
]


class BasePruningMethod(ABC):
    """Base class of pruning methods: subclasses define ``compute_mask(t, default_mask)``.

    An instance is the forward pre-hook of a pruned module: calling it recomputes
    ``module.<name>`` from ``<name>_orig`` and ``<name>_mask``.

    Example:
        >>> from fjax.nn.utils import prune
        >>> class Even(prune.BasePruningMethod):
        ...     PRUNING_TYPE = "unstructured"
        ...     def compute_mask(self, t, default_mask):
        ...         mask = default_mask.clone()
        ...         mask.view(-1)[::2] = 0
        ...         return mask
        >>> m = nn.Linear(2, 2)
        >>> _ = Even.apply(m, "weight")
        >>> m.weight_mask
        tensor([[0., 1.],
                [0., 1.]], dtype=fjax.float32)
    """

    _tensor_name: str

    def __call__(self, module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask of ``t``, combined with ``default_mask`` (the mask of earlier prunings).

        Args:
            t: the tensor (or importance scores) to prune.
            default_mask: the mask so far, same shape as ``t``.

        Example:
            >>> from fjax.nn.utils import prune
            >>> prune.L1Unstructured(amount=1).compute_mask(fjax.tensor([3.0, -1.0, 2.0]), fjax.ones(3))
            tensor([1., 0., 1.], dtype=fjax.float32)
        """

    def apply_mask(self, module) -> Tensor:
        """``<name>_orig * <name>_mask`` of ``module``: the pruned tensor.

        Args:
            module: the pruned module.

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = prune.custom_from_mask(nn.Linear(2, 1), "weight", fjax.tensor([[1.0, 0.0]]))
            >>> hook = next(iter(m._forward_pre_hooks.values()))
            >>> bool((hook.apply_mask(m) == m.weight).all())
            True
        """
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with a new ``cls(*args, **kwargs)``, combined with any earlier pruning.

        Args:
            module: the module holding the tensor.
            name: the parameter's name.
            args: the pruning method's arguments.
            importance_scores: scores ranking the entries (default: the tensor itself).
            kwargs: the pruning method's keyword arguments.

        Returns:
            The method now registered as the forward pre-hook (a ``PruningContainer`` after repeated pruning).

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = nn.Linear(3, 2)
            >>> method = prune.L1Unstructured.apply(m, "weight", amount=2)
            >>> int((m.weight_mask == 0).sum())
            2
        """

        def _get_composite_method(cls, module, name, *args, **kwargs):
            old_method = None
            found = 0
            hooks_to_remove = []
            for k, hook in module._forward_pre_hooks.items():
                if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                    old_method = hook
                    hooks_to_remove.append(k)
                    found += 1
            if found > 1:
                raise AssertionError(
                    f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                    "Use a PruningContainer."
                )
            for k in hooks_to_remove:
                del module._forward_pre_hooks[k]
            method = cls(*args, **kwargs)
            method._tensor_name = name
            if old_method is not None:
                if isinstance(old_method, PruningContainer):
                    old_method.add_pruning_method(method)
                    method = old_method
                elif isinstance(old_method, BasePruningMethod):
                    container = PruningContainer(old_method)
                    container.add_pruning_method(method)
                    method = container
            return method

        method = _get_composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter {name} of {module}, "
                    f"got {importance_scores.shape} vs {orig.shape}"
                )
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with no_grad():
                mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.__dict__.pop(name, None)
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times its mask (the module is not touched).

        Args:
            t: the tensor to prune.
            default_mask: the mask of earlier prunings (default: ones).
            importance_scores: scores ranking the entries (default: ``t``).

        Example:
            >>> from fjax.nn.utils import prune
            >>> prune.L1Unstructured(amount=1).prune(fjax.tensor([3.0, 1.0, 2.0]))
            tensor([3., 0., 2.], dtype=fjax.float32)
        """
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(
                    "importance_scores should have the same shape as tensor t, "
                    f"got {importance_scores.shape} vs {t.shape}"
                )
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning of ``module`` permanent: ``<name>`` becomes the parameter ``<name>_orig * mask``.

        ``<name>_orig`` and ``<name>_mask`` are deleted (the hook itself is removed by :func:`remove`).

        Args:
            module: the pruned module.

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=1)
            >>> m = prune.remove(m, "weight")
            >>> sorted(m.state_dict()), int((m.weight == 0).sum())
            (['bias', 'weight'], 1)
        """
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if self._tensor_name in module.__dict__:
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor; its mask combines theirs.

    Each new method prunes only what is left: an unstructured method sees the unpruned entries,
    a structured one the unpruned channels.

    Args:
        args: the pruning methods (all acting on the same tensor).

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.l1_unstructured(nn.Linear(3, 2), "weight", amount=1)
        >>> m = prune.l1_unstructured(m, "weight", amount=2)
        >>> hook = next(iter(m._forward_pre_hooks.values()))
        >>> type(hook).__name__, len(hook), int((m.weight_mask == 0).sum())
        ('PruningContainer', 2, 3)
    """

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Append ``method`` (which must act on the same tensor).

        Args:
            method: a pruning method.

        Example:
            >>> from fjax.nn.utils import prune
            >>> c = prune.PruningContainer()
            >>> c._tensor_name = "weight"
            >>> method = prune.Identity()
            >>> method._tensor_name = "weight"
            >>> c.add_pruning_method(method)
            >>> len(c)
            1
        """
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        elif method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                f"PruningContainer {self}. Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the last method's mask applied to the part of ``t`` still unpruned.

        Args:
            t: the tensor (or importance scores).
            default_mask: the mask so far.

        Example:
            >>> from fjax.nn.utils import prune
            >>> c = prune.PruningContainer()
            >>> c._tensor_name = "w"
            >>> method = prune.L1Unstructured(amount=1)
            >>> method._tensor_name = "w"
            >>> c.add_pruning_method(method)
            >>> c.compute_mask(fjax.tensor([1.0, 2.0, 3.0]), fjax.tensor([0.0, 1.0, 1.0]))
            tensor([0., 0., 1.], dtype=fjax.float32)
        """
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    'Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` defined.'
                )
            n_dims = t.dim()
            dim = method.dim
            if dim < 0:
                dim = n_dims + dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple([slice(None)] * dim + [keep_channel])
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=mask[slc])
        mask = mask.clone()
        mask[slc] = partial_mask.to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """A pruning method that prunes nothing (an all-ones mask): sets up the ``_orig``/``_mask`` machinery.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.identity(nn.Linear(2, 2), "weight")
        >>> bool(m.weight_mask.all())
        True
    """

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` unchanged.

        Args:
            t: the tensor (unused).
            default_mask: the mask so far.

        Example:
            >>> from fjax.nn.utils import prune
            >>> prune.Identity().compute_mask(fjax.ones(2), fjax.tensor([1.0, 0.0]))
            tensor([1., 0.], dtype=fjax.float32)
        """
        return default_mask

    @classmethod
    def apply(cls, module, name: str):
        """Register an identity pruning of ``module.<name>``.

        Args:
            module: the module.
            name: the parameter's name.

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = nn.Linear(2, 2)
            >>> _ = prune.Identity.apply(m, "weight")
            >>> sorted(m.state_dict())
            ['bias', 'weight_mask', 'weight_orig']
        """
        return super().apply(module, name)


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)
    ):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t: Tensor) -> None:
    if len(t.shape) <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
            f"{t.shape} with {len(t.shape)} dims"
        )


def _compute_nparams_toprune(amount, tensor_size: int) -> int:
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t: Tensor, n, dim: int) -> Tensor:
    dims = list(range(t.dim()))
    if dim < 0:
        dim = dims[dim]
    dims.remove(dim)
    if n == "fro":
        n = 2
    return linalg.vector_norm(t, n, dims)


class RandomUnstructured(BasePruningMethod):
    """Prune ``amount`` entries chosen at random (a fraction in [0, 1] or a count).

    Args:
        amount: the fraction (float) or number (int) of entries to prune.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.random_unstructured(nn.Linear(4, 2), "weight", amount=0.5)
        >>> int((m.weight_mask == 0).sum())
        4
    """

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with ``amount`` random entries of ``t`` set to 0.

        Args:
            t: the tensor.
            default_mask: the mask so far.

        Example:
            >>> from fjax.nn.utils import prune
            >>> int(prune.RandomUnstructured(2).compute_mask(fjax.ones(5), fjax.ones(5)).sum())
            3
        """
        tensor_size = t.nelement()
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        mask = default_mask.clone()
        if nparams_toprune != 0:
            topk = _F.topk(rand_like(t).reshape(-1), k=nparams_toprune)
            mask.view(-1)[topk.indices] = 0
        return mask

    @classmethod
    def apply(cls, module, name: str, amount):
        """Prune ``module.<name>`` at random.

        Args:
            module: the module.
            name: the parameter's name.
            amount: the fraction (float) or number (int) of entries to prune.

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = nn.Linear(4, 2)
            >>> _ = prune.RandomUnstructured.apply(m, "weight", 3)
            >>> int((m.weight_mask == 0).sum())
            3
        """
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune the ``amount`` entries of smallest absolute value.

    Args:
        amount: the fraction (float) or number (int) of entries to prune.

    Example:
        >>> from fjax.nn.utils import prune
        >>> prune.L1Unstructured(0.5).compute_mask(fjax.tensor([1.0, -4.0, 2.0, 0.5]), fjax.ones(4))
        tensor([0., 1., 1., 0.], dtype=fjax.float32)
    """

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the ``amount`` entries of smallest ``|t|`` set to 0.

        Args:
            t: the tensor (or importance scores).
            default_mask: the mask so far.

        Example:
            >>> from fjax.nn.utils import prune
            >>> prune.L1Unstructured(1).compute_mask(fjax.tensor([1.0, -0.5]), fjax.ones(2))
            tensor([1., 0.], dtype=fjax.float32)
        """
        tensor_size = t.nelement()
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        mask = default_mask.clone()
        if nparams_toprune != 0:
            topk = _F.topk(t.abs().reshape(-1), k=nparams_toprune, largest=False)
            mask.view(-1)[topk.indices] = 0
        return mask

    @classmethod
    def apply(cls, module, name: str, amount, importance_scores=None):
        """Prune the smallest entries of ``module.<name>`` (or of ``importance_scores``).

        Args:
            module: the module.
            name: the parameter's name.
            amount: the fraction (float) or number (int) of entries to prune.
            importance_scores: scores ranking the entries (default: the tensor itself).

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = nn.Linear(4, 2)
            >>> _ = prune.L1Unstructured.apply(m, "weight", amount=0.25)
            >>> int((m.weight_mask == 0).sum())
            2
        """
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` whole channels along ``dim``, chosen at random.

    Args:
        amount: the fraction (float) or number (int) of channels to prune.
        dim: the dim whose slices are the channels.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.random_structured(nn.Linear(3, 4), "weight", amount=2, dim=0)
        >>> (m.weight_mask.sum(1) == 0).sum().item()
        2
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` times a mask zeroing ``amount`` random channels of ``t`` along ``dim``.

        Args:
            t: the tensor (at least 2-d).
            default_mask: the mask so far.

        Example:
            >>> from fjax.nn.utils import prune
            >>> mask = prune.RandomStructured(1, dim=1).compute_mask(fjax.ones(2, 3), fjax.ones(2, 3))
            >>> (mask.sum(0) == 0).sum().item()
            1
        """
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        if nparams_toprune == 0:
            return default_mask
        prob = rand(tensor_size)
        threshold = _F.kthvalue(prob, k=nparams_toprune).values
        mask = zeros_like(t)
        mask[(slice(None),) * (self.dim % t.dim()) + (prob > threshold,)] = 1
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name: str, amount, dim: int = -1):
        """Prune random channels of ``module.<name>``.

        Args:
            module: the module.
            name: the parameter's name.
            amount: the fraction (float) or number (int) of channels to prune.
            dim: the dim whose slices are the channels.

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = nn.Linear(3, 4)
            >>> _ = prune.RandomStructured.apply(m, "weight", amount=1, dim=1)
            >>> (m.weight_mask.sum(0) == 0).sum().item()
            1
        """
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune the ``amount`` channels along ``dim`` of smallest L``n`` norm.

    Args:
        amount: the fraction (float) or number (int) of channels to prune.
        n: the order of the norm (``int``, ``float``, ``inf``, ``-inf``, ``'fro'``, ``'nuc'`` as ``torch.norm``).
        dim: the dim whose slices are the channels.

    Example:
        >>> from fjax.nn.utils import prune
        >>> prune.LnStructured(1, n=2, dim=0).compute_mask(fjax.tensor([[3.0, 4.0], [1.0, 1.0]]), fjax.ones(2, 2))
        tensor([[1., 1.],
                [0., 0.]], dtype=fjax.float32)
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` times a mask keeping the channels of ``t`` with the largest norms.

        Args:
            t: the tensor (or importance scores), at least 2-d.
            default_mask: the mask so far.

        Example:
            >>> from fjax.nn.utils import prune
            >>> prune.LnStructured(1, n=1, dim=1).compute_mask(fjax.tensor([[1.0, -5.0]]), fjax.ones(1, 2))
            tensor([[0., 1.]], dtype=fjax.float32)
        """
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        nparams_tokeep = tensor_size - nparams_toprune
        _validate_pruning_amount(nparams_toprune, tensor_size)
        if nparams_toprune == 0:
            return default_mask
        norm = _compute_norm(t, self.n, self.dim)
        topk = _F.topk(norm, k=nparams_tokeep, largest=True)
        mask = zeros_like(t)
        mask[(slice(None),) * (self.dim % t.dim()) + (topk.indices,)] = 1
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name: str, amount, n, dim, importance_scores=None):
        """Prune the channels of ``module.<name>`` of smallest norm.

        Args:
            module: the module.
            name: the parameter's name.
            amount: the fraction (float) or number (int) of channels to prune.
            n: the order of the norm.
            dim: the dim whose slices are the channels.
            importance_scores: scores ranking the entries (default: the tensor itself).

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = nn.Linear(3, 4)
            >>> _ = prune.LnStructured.apply(m, "weight", amount=0.5, n=2, dim=0)
            >>> (m.weight_mask.sum(1) == 0).sum().item()
            2
        """
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (0 prunes).

    Args:
        mask: a tensor of the tensor's shape.

    Example:
        >>> from fjax.nn.utils import prune
        >>> prune.CustomFromMask(fjax.tensor([0.0, 1.0])).compute_mask(fjax.ones(2), fjax.ones(2))
        tensor([0., 1.], dtype=fjax.float32)
    """

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask * mask``.

        Args:
            t: the tensor (unused).
            default_mask: the mask so far.

        Example:
            >>> from fjax.nn.utils import prune
            >>> prune.CustomFromMask(fjax.tensor([0.0, 1.0])).compute_mask(fjax.ones(2), fjax.tensor([1.0, 0.0]))
            tensor([0., 0.], dtype=fjax.float32)
        """
        if default_mask.shape != self.mask.shape:
            raise AssertionError(
                f"default_mask shape {default_mask.shape} must match self.mask shape {self.mask.shape}"
            )
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name: str, mask: Tensor):
        """Prune ``module.<name>`` with ``mask``.

        Args:
            module: the module.
            name: the parameter's name.
            mask: the mask (0 prunes).

        Example:
            >>> from fjax.nn.utils import prune
            >>> m = nn.Linear(2, 1)
            >>> _ = prune.CustomFromMask.apply(m, "weight", fjax.tensor([[0.0, 1.0]]))
            >>> m.weight_mask
            tensor([[0., 1.]], dtype=fjax.float32)
        """
        return super().apply(module, name, mask=mask)


def identity(module, name: str):
    """Prune nothing, but reparametrize ``module.<name>`` as ``<name>_orig * <name>_mask`` (mask of ones).

    Args:
        module: the module.
        name: the parameter's name.

    Returns:
        ``module``.

    Example:
        >>> from fjax.nn.utils import prune
        >>> sorted(prune.identity(nn.Linear(2, 2), "bias").state_dict())
        ['bias_mask', 'bias_orig', 'weight']
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount):
    """Prune ``amount`` random entries of ``module.<name>``.

    Args:
        module: the module.
        name: the parameter's name.
        amount: the fraction (float) or number (int) of entries to prune.

    Returns:
        ``module``.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.random_unstructured(nn.Linear(5, 2), "weight", amount=3)
        >>> int((m.weight == 0).sum())
        3
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name: str, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.<name>`` of smallest absolute value (or importance score).

    Args:
        module: the module.
        name: the parameter's name.
        amount: the fraction (float) or number (int) of entries to prune.
        importance_scores: scores ranking the entries (default: the tensor itself).

    Returns:
        ``module``.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = nn.Linear(2, 1)
        >>> with fjax.no_grad():
        ...     _ = m.weight.copy_(fjax.tensor([[0.1, -3.0]]))
        >>> prune.l1_unstructured(m, "weight", amount=1).weight.tolist()
        [[0.0, -3.0]]
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int):
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``.

    Args:
        module: the module.
        name: the parameter's name.
        amount: the fraction (float) or number (int) of channels to prune.
        dim: the dim whose slices are the channels.

    Returns:
        ``module``.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.random_structured(nn.Linear(3, 4), "weight", amount=0.5, dim=0)
        >>> (m.weight_mask.sum(1) == 0).sum().item()
        2
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name: str, amount, n, dim: int, importance_scores=None):
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest L``n`` norm.

    Args:
        module: the module.
        name: the parameter's name.
        amount: the fraction (float) or number (int) of channels to prune.
        n: the order of the norm (as ``torch.norm``'s ``p``).
        dim: the dim whose slices are the channels.
        importance_scores: scores ranking the entries (default: the tensor itself).

    Returns:
        ``module``.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.ln_structured(nn.Conv2d(2, 4, 3), "weight", amount=1, n=2, dim=0)
        >>> (m.weight_mask.sum((1, 2, 3)) == 0).sum().item()
        1
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune several tensors together: ``pruning_method`` ranks all their entries as one vector.

    E.g. with ``L1Unstructured`` and ``amount=0.2`` the 20% smallest entries across every
    tensor are pruned (some tensors lose more than others).

    Args:
        parameters: ``(module, name)`` pairs.
        pruning_method: an unstructured pruning method class (e.g. ``prune.L1Unstructured``).
        importance_scores: ``{(module, name): scores}`` replacing some tensors in the ranking.
        kwargs: the pruning method's arguments (e.g. ``amount``).

    Example:
        >>> from fjax.nn.utils import prune
        >>> net = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
        >>> prune.global_unstructured([(net[0], "weight"), (net[1], "weight")], prune.L1Unstructured, amount=6)
        >>> int((net[0].weight == 0).sum() + (net[1].weight == 0).sum())
        6
    """
    from .convert_parameters import parameters_to_vector

    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    with no_grad():
        relevant_importance_scores = parameters_to_vector(
            [importance_scores.get((module, name), getattr(module, name)) for module, name in parameters]
        )
        masks = []
        for module, name in parameters:
            mask = module._buffers.get(name + "_mask")
            masks.append(ones_like(getattr(module, name)) if mask is None else mask)
        default_mask = parameters_to_vector(masks)
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
            f"Found method {pruning_method} of type {method.PRUNING_TYPE}"
        )
    container.add_pruning_method(method)
    with no_grad():
        final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        param_mask = final_mask[pointer : pointer + num_param].view_as(param)
        custom_from_mask(module, name, mask=param_mask)
        pointer += num_param


def custom_from_mask(module, name: str, mask: Tensor):
    """Prune ``module.<name>`` with the given mask (0 prunes).

    Args:
        module: the module.
        name: the parameter's name.
        mask: a tensor of the parameter's shape.

    Returns:
        ``module``.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.custom_from_mask(nn.Linear(2, 1), "weight", fjax.tensor([[1.0, 0.0]]))
        >>> m.weight[0, 1].item() == 0
        True
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name: str):
    """Make the pruning of ``module.<name>`` permanent: drop ``_orig``, ``_mask`` and the hook.

    ``module.<name>`` becomes a parameter again, holding the pruned values.

    Args:
        module: the pruned module.
        name: the parameter's name.

    Returns:
        ``module``.

    Example:
        >>> from fjax.nn.utils import prune
        >>> m = prune.remove(prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=2), "weight")
        >>> sorted(m.state_dict()), prune.is_pruned(m)
        (['bias', 'weight'], False)
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or one of its descendants has a pruning hook.

    Args:
        module: the module.

    Example:
        >>> from fjax.nn.utils import prune
        >>> net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        >>> prune.is_pruned(net), prune.is_pruned(prune.identity(net[0], "weight"))
        (False, True)
    """
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
