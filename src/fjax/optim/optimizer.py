"""Optimizer: torch's param_groups/state/state_dict API over one optax transform per parameter.

Every optimizer is a pure function of ``(params, grads, states, hyper)``. A subclass declares
its hyper-parameters once, as ``_hypers`` (``_hyper.py``): its constructor (torch's signature),
checks and ``defaults`` come from them, and so does the split of a group into traced numbers
(``_hyper``: lr, betas, ... so changing them between steps never recompiles) and structural
flags (``_static``: nesterov, amsgrad, ``momentum != 0``, ... part of the jit key). Its update
is the optax chain of ``_transform``: by default torch's common frame (maximize, L2 or decoupled
weight decay, the learning rate) around the subclass's ``_direction``. Each parameter keeps its
own state ``(step, optax_state)``, so a parameter that had no gradient on some step keeps its
own step count, exactly as in torch. Where the optax state counts updates itself (Adam's
``count``) that count is the step and ``step`` is None: one counter a parameter, not two (each
is an argument and an increment of a compiled step).

Hooks are torch's: ``register_step_pre_hook``/``register_step_post_hook`` (and the global
``register_optimizer_step_*_hook``) run around the outermost ``step`` of any subclass, and the
``state_dict``/``load_state_dict`` pre- and post-hooks around those.

Eager ``step()`` runs each group's update as ONE cached ``jax.jit`` call over the pytree of
that group's params, grads and states. Inside an fjax trace (``_tracing.trace_state.depth >
0``, e.g. nn.Graph) it calls the same pure function directly on tracers.

Protocol for nn.Graph (trace a step that includes ``optimizer.step()``):

- ``optimizer._init_state()`` gives every parameter its state eagerly (call before tracing);
- ``optimizer._state`` maps each parameter to its state pytree ``(step or None, optax_state)``: swap
  its values for tracers before ``build()``, read the updated tracers back after it;
- ``optimizer.step()`` under trace reads ``p._data``/``p.grad._data`` tracers and writes
  ``p._data`` and ``optimizer._state[p]``; hyper-parameters come from ``param_groups`` as
  Python floats (constants of the trace) unless the caller uses ``_functional_step`` with
  traced ``hyper`` (e.g. ``hyper = optimizer._hyper(group)`` with ``lr`` replaced by a tracer);
- ``optimizer._functional_step(group, params, grads, states, hyper)`` is the pure step of one
  group on arrays: it returns ``(new_params, new_states)``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import _lazy
from .._tracing import trace_state
from ..autograd.grad_mode import enable_grad
from ..errors import OpError
from ..nn.module import RemovableHandle
from ..tensor import Tensor
from ._hyper import Spec, spec_init


def _pure_step(cls, static, params, grads, states, hyper):
    """One group's update: per parameter, build the optax chain and apply it."""
    new_params, new_states = [], []
    for p, g, (step, inner) in zip(params, grads, states):
        g = g.astype(p.dtype)
        tx = cls._transform(hyper, static, _step_of(step, inner))
        updates, new_inner = tx.update(g, inner, p)
        new_params.append(optax.apply_updates(p, updates))
        # traced hyper-parameters may be strong float64: keep every state leaf's dtype
        new_inner = jax.tree.map(lambda new, old: new.astype(old.dtype), new_inner, inner)
        new_states.append((None if step is None else step + 1, new_inner))
    return new_params, new_states


def _step_of(step, inner):
    """A parameter's update count: ``step``, or the optax state's own ``count`` when step is None."""
    return optax.tree_utils.tree_get(inner, "count") if step is None else step


def _new_state(step, inner) -> tuple:
    """``(step, inner)`` with ``step`` None where ``inner`` counts its updates itself."""
    if optax.tree_utils.tree_get_all_with_path(inner, "count"):
        inner = optax.tree_utils.tree_set(inner, count=jnp.asarray(step, jnp.int32))
        return None, inner
    return jnp.asarray(step, jnp.int32), inner


@functools.lru_cache(maxsize=256)
def _flat_step(cls, static, tree):
    """``_pure_step`` jitted as a function of its arrays flattened (``tree``: their structure)."""
    return jax.jit(lambda *flat: _pure_step(cls, static, *jax.tree_util.tree_unflatten(tree, flat)))


def _eager_step(cls, static, params, grads, states, hyper):
    """``_pure_step`` compiled; recorded in eager fusion's segment where its inputs are pending
    (the gradients of a fused backward), so a training step's update joins its program."""
    flat, tree = jax.tree_util.tree_flatten((params, grads, states, hyper))
    return _lazy.then(_flat_step(cls, static, tree), flat)


def _scalar(value) -> float:
    """A Python float from a number or one-element Tensor/array."""
    return float(np.asarray(value._data if isinstance(value, Tensor) else value))


def _as_array(value, like, what: str):
    """A state value from a state_dict (Tensor, numpy, jax, torch) as an array like ``like``."""
    arr = value._data if isinstance(value, Tensor) else jnp.asarray(np.asarray(value))
    if arr.shape != like.shape:
        raise OpError(f"{what}: expected shape {tuple(like.shape)}, got {tuple(arr.shape)}")
    return arr.astype(like.dtype)


_global_step_pre_hooks: dict = {}  # torch.optim.optimizer.register_optimizer_step_pre_hook
_global_step_post_hooks: dict = {}


def register_optimizer_step_pre_hook(hook):
    """Register ``hook(optimizer, args, kwargs)``, called before every optimizer's ``step``
    (before its own pre-hooks); it may return new ``(args, kwargs)``. Returns a removable handle.

    Example::

        >>> seen = []
        >>> h = fjax.optim.optimizer.register_optimizer_step_pre_hook(lambda opt, a, k: seen.append(type(opt).__name__))
        >>> w = nn.Parameter(fjax.ones(1)); w.grad = fjax.ones(1)
        >>> optim.SGD([w], lr=0.1).step(); h.remove(); seen
        ['SGD']
    """
    return _add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Register ``hook(optimizer, args, kwargs)``, called after every optimizer's ``step`` (after
    its own post-hooks). Returns a removable handle.

    Example::

        >>> h = fjax.optim.optimizer.register_optimizer_step_post_hook(lambda opt, a, k: None)
        >>> h.remove()
    """
    return _add_hook(_global_step_post_hooks, hook)


def _add_hook(hooks: dict, hook, prepend: bool = False):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        items = list(hooks.items())
        hooks.clear()
        hooks.update([items[-1], *items[:-1]])
    return handle


def _step_with_hooks(step):
    """``step`` running the step pre- and post-hooks (global and the optimizer's, in torch's
    order) around the outermost call: a subclass's step that calls ``super().step`` runs them once."""

    @functools.wraps(step)
    def hooked(self, *args, **kwargs):
        d = self.__dict__
        pre, post = d.get("_step_pre_hooks"), d.get("_step_post_hooks")
        if d.get("_in_step") or not (pre or post or _global_step_pre_hooks or _global_step_post_hooks):
            return step(self, *args, **kwargs)
        args = (self, *args)  # (torch's hooks see the optimizer as the first argument)
        for hook in [*_global_step_pre_hooks.values(), *(pre or {}).values()]:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
                args, kwargs = result
        d["_in_step"] = True
        try:
            out = step(*args, **kwargs)
        finally:
            d["_in_step"] = False
        for hook in [*(post or {}).values(), *_global_step_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    hooked._with_hooks = True
    return hooked


class Optimizer:
    """Base class of fjax optimizers, with ``torch.optim.Optimizer``'s API.

    Args:
        params: an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts (parameter
            groups with their own hyper-parameters under the same keys as ``defaults``).
        defaults: the default hyper-parameters of every group.

    ``step()`` updates the parameters from their ``.grad``; ``zero_grad()`` clears the grads
    (sets them to None by default). ``param_groups`` is a list of dicts whose hyper-parameters
    may be edited between steps; ``state_dict()``/``load_state_dict()`` save and restore.

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., 2.]))
        >>> b = nn.Parameter(fjax.tensor([0.]))
        >>> opt = fjax.optim.SGD([{'params': [w]}, {'params': [b], 'lr': 0.5}], lr=0.1)
        >>> isinstance(opt, fjax.optim.Optimizer), [g['lr'] for g in opt.param_groups]
        (True, [0.1, 0.5])
        >>> (w.sum() + 2 * b.sum()).backward()
        >>> opt.step()
        >>> w.data, b.data
        (tensor([0.9000, 1.9000], dtype=fjax.float32), tensor([-1.], dtype=fjax.float32))
        >>> opt.zero_grad()
        >>> w.grad is None
        True
    """

    _state_names: dict[str, str] = {}  # torch state key -> optax state field
    _has_step = True  # whether torch keeps a 'step' entry in the per-parameter state
    _hypers: tuple = ()  # the hyper-parameters, declared once (see _hyper.py)
    _spec: Spec | None = None
    _state_at_init = False  # create every parameter's state at construction (torch's Adagrad)
    _lr_outside = True  # _transform ends with scale_by_learning_rate(lr) (False: the direction uses lr)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_with_hooks", False):
            cls.step = _step_with_hooks(step)
        if "_hypers" in cls.__dict__:
            cls._spec = spec = Spec(cls.__name__, cls._hypers)
            cls._static, cls._hyper = staticmethod(spec.static_of), staticmethod(spec.hyper_of)
            if "__init__" not in cls.__dict__:
                cls.__init__ = spec_init(cls._spec, Optimizer._init_groups)

    def __init__(self, params, defaults: dict[str, Any]):
        self._init_groups(params, defaults)

    def _init_groups(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        self._state: dict[Tensor, tuple] = {}
        self._state_static: dict[Tensor, tuple] = {}
        if isinstance(params, Tensor):
            raise OpError(
                f"{self._name()}: params argument given to the optimizer should be an iterable of Tensors "
                f"or dicts, but got a Tensor of shape {tuple(params.shape)}"
            )
        if isinstance(params, (set, frozenset)):  # torch only rejects sets inside a group
            params = {"params": params}
        groups = [params] if isinstance(params, dict) else list(params)
        if not groups:
            raise ValueError(f"{self._name()}: optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)
        if self._state_at_init:
            self._init_state()

    # -- subclass interface --------------------------------------------------------------
    @classmethod
    def _static(cls, group: dict) -> tuple:
        """Structural flags of a group (part of the jit key); with ``_hypers``: ``Spec.static_of``."""
        raise NotImplementedError(f"fjax.optim.{cls.__name__} has no per-parameter functional update")

    @classmethod
    def _hyper(cls, group: dict) -> dict:
        """The group's traced hyper-parameters, by name; with ``_hypers``: ``Spec.hyper_of``."""
        raise NotImplementedError(f"fjax.optim.{cls.__name__} has no per-parameter functional update")

    @classmethod
    def _transform(cls, hyper: dict, static: tuple, step) -> optax.GradientTransformation:
        """The optax chain of one parameter's update; ``step`` counts its previous updates.

        torch's frame: negate the gradient for ``maximize``, add the L2 term ``weight_decay * p``
        (or, with ``decoupled_weight_decay``, the decay after the direction), the subclass's
        ``_direction``, then the learning rate (unless ``_lr_outside`` is False)."""
        maximize = getattr(static, "maximize", False)
        decay_on = getattr(static, "weight_decay", False)
        decoupled = getattr(static, "decoupled_weight_decay", False)
        parts = [optax.scale(-1.0)] if maximize else []
        if decay_on and not decoupled:
            parts.append(optax.add_decayed_weights(hyper["weight_decay"]))
        parts.extend(cls._direction(hyper, static, step))
        if decay_on and decoupled:
            parts.append(optax.add_decayed_weights(hyper["weight_decay"]))
        if cls._lr_outside:
            parts.append(optax.scale_by_learning_rate(cls._lr(hyper, step)))
        return optax.chain(*parts)

    @classmethod
    def _direction(cls, hyper: dict, static: tuple, step) -> list:
        """The optax parts of the update between torch's frame (see ``_transform``)."""
        raise NotImplementedError(f"fjax.optim.{cls.__name__} defines neither _direction nor _transform")

    @classmethod
    def _lr(cls, hyper: dict, step):
        """The learning rate of a parameter's next update."""
        return hyper["lr"]

    # -- groups --------------------------------------------------------------------------
    def _name(self) -> str:
        return f"fjax.optim.{type(self).__name__}"

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (with optional per-group hyper-parameters).

        Args:
            param_group: a dict with ``"params"`` (the parameters) and any hyper-parameters that
                differ from the optimizer's defaults.

        Example:
            >>> w, b = nn.Parameter(fjax.ones(2)), nn.Parameter(fjax.zeros(1))
            >>> opt = optim.SGD([w], lr=0.1)
            >>> opt.add_param_group({"params": [b], "lr": 0.01})
            >>> [group["lr"] for group in opt.param_groups]
            [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise OpError(f"{self._name()}: a param group must be a dict, got {type(param_group).__name__}")
        if "params" not in param_group:
            raise OpError(f"{self._name()}: a param group must have a 'params' entry, got keys {sorted(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise OpError(
                f"{self._name()}: optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        if names:
            if len(names) != len(params):
                raise ValueError(f"{self._name()}: all optimizer params should be with/without names")
            params = [p[1] for p in params]
            param_group["param_names"] = names
        if self.param_groups and ("param_names" in param_group) != ("param_names" in self.param_groups[0]):
            raise ValueError(f"{self._name()}: all optimizer param groups should be with/without names")
        for i, p in enumerate(params):
            self._check_param(p, i)
        param_group["params"] = params
        for key, default in self.defaults.items():
            param_group.setdefault(key, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                f"{self._name()}: optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error",
                stacklevel=3,
            )
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError(f"{self._name()}: some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def _check_param(self, p, index: int) -> None:
        from ..nn.parameter import Parameter

        if not isinstance(p, Tensor):
            raise OpError(
                f"{self._name()}: optimizer can only optimize Tensors (fjax.nn.Parameter), but param {index} "
                f"is a {type(p).__module__}.{type(p).__name__}"
            )
        if not p.is_leaf:
            raise OpError(f"{self._name()}: can't optimize a non-leaf Tensor (param {index}, shape {tuple(p.shape)})")
        if p.is_complex():  # torch updates (re, im) as separate reals; optax treats them as one complex
            raise NotImplementedError(
                f"{self._name()}: param {index} is complex ({p.dtype}); complex parameters are not supported"
            )
        if not p.is_floating_point():
            raise OpError(
                f"{self._name()}: param {index} has dtype {p.dtype}; only floating point tensors can be optimized"
            )
        if not p.requires_grad and not isinstance(p, Parameter):
            raise OpError(
                f"{self._name()}: param {index} (shape {tuple(p.shape)}) is a Tensor that does not require grad; "
                "pass Parameters or tensors created with requires_grad=True"
            )

    # -- stepping ------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None, or (``set_to_none=False``) to zeros.

        Args:
            set_to_none: set each ``.grad`` to None instead of zeroing it.

        Example:
            >>> w = nn.Parameter(fjax.ones(2))
            >>> opt = optim.SGD([w], lr=0.1)
            >>> (w * w).sum().backward()
            >>> opt.zero_grad()
            >>> w.grad is None
            True
        """
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g._node, g._requires_grad = None, False
                    g._data = jnp.zeros_like(g._data)
                    g._vc[0] += 1

    @_step_with_hooks
    def step(self, closure=None):
        """Update every parameter that has a gradient; ``closure`` re-evaluates the loss.

        Returns:
            The closure's loss, or None.

        Args:
            closure: a function that clears the gradients, computes the loss, calls ``backward`` and
                returns the loss (needed by ``LBFGS``).

        Example:
            >>> w = nn.Parameter(fjax.tensor([1.0, 2.0]))
            >>> opt = optim.SGD([w], lr=0.1)
            >>> (w * w).sum().backward()  # grad = 2 * w
            >>> opt.step()
            >>> w.tolist()
            [0.800000011920929, 1.600000023841858]
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        stepped = []
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            static, hyper = self._static(group), self._hyper(group)
            states = [self._param_state(p, static, hyper) for p in params]
            grads = [self._grad_of(p) for p in params]
            if trace_state.depth > 0:
                new = _pure_step(type(self), static, [p._data for p in params], grads, states, hyper)
            else:
                new = _eager_step(type(self), static, [p._meta for p in params], grads, states, hyper)
            for p, data in zip(params, new[0]):
                p._data = data
                p._vc[0] += 1
            stepped.append((params, new[1]))
            self._state.update(zip(params, new[1]))  # (before the flush: the old states are then free
            # for the program to write the new ones into)
        states = grads = new = None  # (nothing here holds the old states or gradients at the flush)
        if _lazy.step_end():  # the states hold arrays again, as everything that reads them expects
            for params, states in stepped:
                self._state.update(zip(params, jax.tree_util.tree_map(_lazy.real, states)))
        return loss

    def clip_grad(self, error_if_nonfinite: bool = False) -> None:
        """OneFlow's ``Optimizer.clip_grad``: clip, in place, the gradients of every group that
        sets ``clip_grad_max_norm`` (and ``clip_grad_norm_type``, default 2.0) by their total norm,
        as ``nn.utils.clip_grad_norm_``. As in OneFlow, an eager ``step()`` does not clip by
        itself (call this before it); an nn.Graph step clips such groups itself.

        Args:
            error_if_nonfinite: raise when the total norm is nan or inf.

        Example:
            >>> w = nn.Parameter(fjax.zeros(2))
            >>> opt = optim.SGD([{"params": [w], "clip_grad_max_norm": 1.0}], lr=0.1)
            >>> w.grad = fjax.tensor([3.0, 4.0])
            >>> opt.clip_grad()
            >>> w.grad
            tensor([0.6000, 0.8000], dtype=fjax.float32)
        """
        from ..nn.utils.clip_grad import clip_grad_norm_

        for group in self.param_groups:
            if group.get("clip_grad_max_norm") is None:
                warnings.warn(
                    f"{self._name()}.clip_grad: a parameter group has no 'clip_grad_max_norm' entry; "
                    "its gradients are not clipped",
                    stacklevel=2,
                )
                continue
            params = [p for p in group["params"] if p.grad is not None]
            norm_type = group.get("clip_grad_norm_type", 2.0)
            clip_grad_norm_(params, group["clip_grad_max_norm"], norm_type, error_if_nonfinite)

    def _grad_of(self, p: Tensor):
        """``p``'s gradient array (pending where a fused backward left it so; the step casts it)."""
        g = p.grad._meta if trace_state.depth == 0 else p.grad._data
        if g.shape != p._meta.shape:
            raise OpError(
                f"{self._name()}: a parameter of shape {tuple(p.shape)} has a gradient of shape {tuple(g.shape)}"
            )
        return g

    def _functional_step(self, group: dict, params: list, grads: list, states: list, hyper: dict | None = None):
        """Pure update of one group on arrays (or tracers).

        Args:
            group: the entry of ``param_groups`` the params belong to (gives the static flags).
            params, grads: lists of arrays, one per parameter being updated.
            states: the matching ``optimizer._state[p]`` pytrees.
            hyper: traced hyper-parameters; defaults to the group's current values.

        Returns:
            ``(new_params, new_states)``, lists in the same order.
        """
        hyper = self._hyper(group) if hyper is None else hyper
        return _pure_step(type(self), self._static(group), params, grads, states, hyper)

    def _param_state(self, p: Tensor, static: tuple, hyper: dict):
        """``p``'s state for the given static flags: created, or converted if the flags changed."""
        state = self._state.get(p)
        if state is not None and self._state_static[p] == static:
            return state
        if state is None:
            state = _new_state(0, type(self)._transform(hyper, static, 0).init(p._data))
        else:  # a structural flag changed (e.g. momentum 0 -> 0.9): keep what torch would keep
            state = self._from_torch(p, self._to_torch(p), static, hyper)
        self._state[p], self._state_static[p] = state, static
        return state

    def _init_state(self) -> None:
        """Create the state of every parameter now (nn.Graph needs it before tracing)."""
        for group in self.param_groups:
            static, hyper = self._static(group), self._hyper(group)
            for p in group["params"]:
                self._param_state(p, static, hyper)

    # -- torch-structured state ----------------------------------------------------------
    def _to_torch(self, p: Tensor) -> dict:
        """``p``'s state under torch's names (``step``, ``exp_avg``, ...): copies, since an
        nn.Graph step donates the optimizer's state arrays (a later step is not reflected)."""
        step, inner = self._state[p]
        out = {}
        if self._has_step:
            out["step"] = Tensor._wrap(jnp.asarray(_step_of(step, inner), jnp.float32))
        for tname, oname in self._state_names.items():
            value = optax.tree_utils.tree_get(inner, oname)
            if value is not None:
                out[tname] = Tensor._wrap(jnp.array(value, copy=True))
        return out

    def _from_torch(self, p: Tensor, entry: Mapping, static: tuple, hyper: dict, index=None) -> tuple:
        """A state pytree for ``p`` from torch-named entries; missing entries start fresh."""
        where = f"{self._name()}.load_state_dict: state of param {index}" if index is not None else self._name()
        allowed = set(self._state_names) | ({"step"} if self._has_step else set())
        unexpected = sorted(set(entry) - allowed)
        if unexpected:
            raise OpError(f"{where}: unexpected keys {unexpected}; expected a subset of {sorted(allowed)}")
        inner = type(self)._transform(hyper, static, 0).init(p._data)
        values = {}
        for tname, oname in self._state_names.items():
            like = optax.tree_utils.tree_get(inner, oname)
            if like is not None and entry.get(tname) is not None:
                values[oname] = _as_array(entry[tname], like, f"{where}, key {tname!r}")
        if self._has_step:
            step = int(_scalar(entry.get("step", 0)))
        else:
            step = int(any(entry.get(t) is not None for t in self._state_names))
        if values:
            inner = optax.tree_utils.tree_set(inner, **values)
        return _new_state(step, inner)

    @property
    def state(self) -> Mapping:
        """Per-parameter state under torch's names (a read-only snapshot; use load_state_dict to change it).

        Example:
            >>> w = nn.Parameter(fjax.ones(2))
            >>> opt = optim.Adam([w])
            >>> (w * w).sum().backward()
            >>> opt.step()
            >>> sorted(opt.state[w])
            ['exp_avg', 'exp_avg_sq', 'step']
        """
        entries = ((p, self._to_torch(p)) for p in self._state)
        return MappingProxyType({p: e for p, e in entries if e})

    def _hooks(self, name: str) -> dict:
        return self.__dict__.setdefault(name, {})

    def register_step_pre_hook(self, hook):
        """Register ``hook(optimizer, args, kwargs)``, called before each ``step``; it may return
        new ``(args, kwargs)``. Returns a handle whose ``remove()`` unregisters it.

        Example::

            >>> w = nn.Parameter(fjax.ones(1)); w.grad = fjax.ones(1)
            >>> opt = optim.SGD([w], lr=0.5)
            >>> h = opt.register_step_pre_hook(lambda o, a, k: print("step", o.param_groups[0]["lr"]))
            >>> opt.step()
            step 0.5
        """
        return _add_hook(self._hooks("_step_pre_hooks"), hook)

    def register_step_post_hook(self, hook):
        """Register ``hook(optimizer, args, kwargs)``, called after each ``step`` (an exponential
        moving average of the weights, a log line). Returns a removable handle.

        Example::

            >>> w = nn.Parameter(fjax.ones(1)); w.grad = fjax.ones(1)
            >>> opt = optim.SGD([w], lr=0.5)
            >>> h = opt.register_step_post_hook(lambda o, a, k: print(w.tolist()))
            >>> opt.step()
            [0.5]
        """
        return _add_hook(self._hooks("_step_post_hooks"), hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False):
        """Register ``hook(optimizer)``, called by ``state_dict()`` before it gathers the state.

        Example::

            >>> opt = optim.SGD([nn.Parameter(fjax.ones(1))], lr=0.1)
            >>> h = opt.register_state_dict_pre_hook(lambda o: print("saving"))
            >>> _ = opt.state_dict()
            saving
        """
        return _add_hook(self._hooks("_state_dict_pre_hooks"), hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False):
        """Register ``hook(optimizer, state_dict)``, called by ``state_dict()`` on its result; a
        returned dict replaces it.

        Example::

            >>> opt = optim.SGD([nn.Parameter(fjax.ones(1))], lr=0.1)
            >>> h = opt.register_state_dict_post_hook(lambda o, sd: {**sd, "note": "v2"})
            >>> opt.state_dict()["note"]
            'v2'
        """
        return _add_hook(self._hooks("_state_dict_post_hooks"), hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False):
        """Register ``hook(optimizer, state_dict)``, called by ``load_state_dict`` first; a
        returned dict is loaded instead.

        Example::

            >>> opt = optim.SGD([nn.Parameter(fjax.ones(1))], lr=0.1)
            >>> sd = opt.state_dict()
            >>> h = opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "note"})
            >>> opt.load_state_dict({**sd, "note": "v2"})
        """
        return _add_hook(self._hooks("_load_state_dict_pre_hooks"), hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False):
        """Register ``hook(optimizer)``, called by ``load_state_dict`` after it loaded.

        Example::

            >>> opt = optim.SGD([nn.Parameter(fjax.ones(1))], lr=0.1)
            >>> h = opt.register_load_state_dict_post_hook(lambda o: print("loaded"))
            >>> opt.load_state_dict(opt.state_dict())
            loaded
        """
        return _add_hook(self._hooks("_load_state_dict_post_hooks"), hook, prepend)

    def state_dict(self) -> dict:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}`` as torch.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.ones(2))], lr=0.1)
            >>> sd = opt.state_dict()
            >>> sd["state"], sd["param_groups"][0]["lr"], sd["param_groups"][0]["params"]
            ({}, 0.1, [0])
        """
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        entries = ((index[id(p)], self._to_torch(p)) for p in self._state)
        out = {"state": {i: e for i, e in entries if e}, "param_groups": groups}  # torch keeps no empty entries
        for hook in self.__dict__.get("_state_dict_post_hooks", {}).values():
            result = hook(self, out)
            if result is not None:
                out = result
        return out

    def load_state_dict(self, state_dict: Mapping) -> None:
        """Restore hyper-parameters and state saved by ``state_dict()`` (fjax's or torch's).

        Args:
            state_dict: a dict from ``state_dict()``.

        Example:
            >>> w = nn.Parameter(fjax.ones(2))
            >>> opt = optim.Adam([w], lr=0.1)
            >>> (w * w).sum().backward()
            >>> opt.step()
            >>> fresh = optim.Adam([w], lr=0.5)
            >>> fresh.load_state_dict(opt.state_dict())
            >>> fresh.param_groups[0]["lr"], fresh.state[w]["step"]
            (0.1, tensor(1., dtype=fjax.float32))
        """
        name = f"{self._name()}.load_state_dict"
        for hook in self.__dict__.get("_load_state_dict_pre_hooks", {}).values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        if not isinstance(state_dict, Mapping) or set(state_dict) != {"state", "param_groups"}:
            keys = sorted(state_dict) if isinstance(state_dict, Mapping) else type(state_dict).__name__
            raise OpError(f"{name}: expected a dict with keys ['param_groups', 'state'], got {keys}")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"{name}: loaded state dict has a different number of parameter groups "
                f"({len(saved_groups)}) than the optimizer ({len(self.param_groups)})"
            )
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"{name}: loaded state dict contains a parameter group that doesn't match the size of "
                    f"optimizer's group: group {i} has {len(saved['params'])} params, expected {len(group['params'])}"
                )
        params_of = {}
        for group, saved in zip(self.param_groups, saved_groups):
            params_of.update(zip(saved["params"], group["params"]))
        unknown = sorted(k for k in state_dict["state"] if k not in params_of)
        if unknown:
            raise OpError(f"{name}: state for param indices {unknown} that no parameter group lists")
        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            new = {k: v for k, v in saved.items() if k != "params"}
            new["params"] = group["params"]
            new_groups.append(new)
        group_of = {id(p): g for g in new_groups for p in g["params"]}
        state, state_static = {}, {}
        for idx, entry in state_dict["state"].items():
            p = params_of[idx]
            state[p], state_static[p] = self._load_entry(p, entry, group_of[id(p)], idx)
        self.param_groups = new_groups
        self._state, self._state_static = state, state_static
        for hook in self.__dict__.get("_load_state_dict_post_hooks", {}).values():
            hook(self)

    def _load_entry(self, p: Tensor, entry: Mapping, group: dict, index: int) -> tuple:
        """``(state, static)`` of ``p`` from its torch-named state_dict entry."""
        static = self._static(group)
        return self._from_torch(p, entry, static, self._hyper(group), index), static

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]}" for k in sorted(group) if k != "params")
        return "\n".join(lines) + "\n)"
