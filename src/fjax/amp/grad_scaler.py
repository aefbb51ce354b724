"""``fjax.amp.GradScaler``: torch's dynamic loss scaling, step skipping and scale updates."""

from __future__ import annotations

import enum
import functools
import warnings
from collections import defaultdict
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from ._state import has_gpu

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    """Where an optimizer is in the current iteration of a ``GradScaler``.

    Example::

        >>> fjax.amp.OptState.READY.value
        0
    """

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


@functools.partial(jax.jit, static_argnums=2)
def _unscale(grads, inv_scale, wide):
    """Every gradient times ``inv_scale`` (computed in at least float32, as torch's opmath), and
    1.0 if any gradient held an inf or NaN before (else 0.0). ``wide``: multiply in float64, for
    a subnormal float32 ``inv_scale`` (passed as float64) that XLA's CPU kernels would flush to
    zero (the float64 product of two float32 values is exact, so rounding it gives the float32
    product torch computes)."""
    found = jnp.zeros((), jnp.float32)
    out = []
    for g in grads:
        found = jnp.where(jnp.all(jnp.isfinite(g)), found, jnp.float32(1.0))
        compute = jnp.float64 if wide else jnp.promote_types(g.dtype, jnp.float32)
        out.append(jnp.where(inv_scale == 1.0, g, (g.astype(compute) * inv_scale.astype(compute)).astype(g.dtype)))
    return out, found


class GradScaler:
    """Dynamic loss scaling for mixed-precision training, ``torch.amp.GradScaler``.

    Args:
        device: the device type of the loss and gradients (``"cuda"`` by default, as torch; a
            ``"cuda"`` scaler on a machine without a GPU warns and disables itself).
        init_scale: the first scale factor.
        growth_factor: multiplies the scale after ``growth_interval`` steps in a row without
            inf/NaN gradients (must be > 1).
        backoff_factor: multiplies the scale after a step with inf/NaN gradients (must be < 1).
        growth_interval: the number of consecutive finite steps before the scale grows.
        enabled: False makes every method a pass-through (``scale`` returns its input, ``step``
            just calls ``optimizer.step()``).

    The loop is ``scaler.scale(loss).backward()``, ``scaler.step(optimizer)`` (which unscales the
    gradients, checks them for inf/NaN and skips the optimizer step if any is found), then
    ``scaler.update()`` (which backs the scale off after a skipped step, or grows it after
    ``growth_interval`` good ones). ``unscale_(optimizer)`` may be called before ``step`` (to
    clip gradients); ``state_dict``/``load_state_dict`` save and restore the scale.

    Example::

        >>> w = nn.Parameter(fjax.tensor([1.0, 2.0]))
        >>> opt = fjax.optim.SGD([w], lr=0.1)
        >>> scaler = fjax.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=1)
        >>> scaler.scale((w * w).sum()).backward()
        >>> w.grad
        tensor([2048., 4096.], dtype=fjax.float32)
        >>> scaler.step(opt)
        >>> w.data
        tensor([0.8000, 1.6000], dtype=fjax.float32)
        >>> scaler.update()
        >>> scaler.get_scale()
        2048.0
        >>> opt.zero_grad()
        >>> scaler.scale((w * float("inf")).sum()).backward()
        >>> scaler.step(opt)  # inf gradients: the step is skipped
        >>> scaler.update()
        >>> w.data, scaler.get_scale()
        (tensor([0.8000, 1.6000], dtype=fjax.float32), 1024.0)
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            if not has_gpu():
                warnings.warn("GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None  # made on the first scale(), on the outputs' device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: dict = defaultdict(_refresh_per_optimizer_state)

    # -- the scale and growth tracker ---------------------------------------------------
    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device) -> None:
        from .. import dtypes as _dt
        from ..creation import full

        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = full((), self._init_scale, dtype=_dt.float32, device=device)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dt.int32, device=device)

    def _fill(self, t: Tensor, value) -> None:
        """Overwrite a state scalar in place (a new value of its dtype)."""
        t._data = jnp.full((), value, t._data.dtype)
        t._vc[0] += 1

    # -- the loop -----------------------------------------------------------------------
    def scale(self, outputs):
        """Multiply ``outputs`` (a Tensor, or nested lists/tuples of them) by the scale factor.

        Returns the outputs unchanged when the scaler is disabled.

        Example::

            >>> scaler = fjax.amp.GradScaler("cpu", init_scale=8.0)
            >>> scaler.scale(fjax.tensor(1.5))
            tensor(12., dtype=fjax.float32)
            >>> scaler.scale([fjax.tensor(1.0), (fjax.tensor(2.0),)])
            [tensor(8., dtype=fjax.float32), (tensor(16., dtype=fjax.float32),)]
        """
        if not self._enabled:
            return outputs

        def apply(value):
            if isinstance(value, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(value.device)
                return value * self._scale.to(device=value.device)
            if isinstance(value, (list, tuple)):
                return type(value)(apply(v) for v in value)
            if hasattr(value, "__iter__") and not isinstance(value, (str, bytes)):
                return map(apply, value)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, allow_fp16: bool) -> dict:
        """Unscale every gradient of ``optimizer`` in place; the inf/NaN flag per device."""
        per_device: dict = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad._data.dtype == np.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    per_device[param.grad.device].append(param.grad)
        found_per_device = {}
        inv_host = np.asarray(inv_scale._data)
        wide = bool(0 < abs(float(inv_host)) < np.finfo(np.float32).tiny)
        for device, grads in per_device.items():
            # a subnormal float32 inverse travels as a (normal) float64 of the same value
            inv = jax.device_put(inv_host.astype(np.float64) if wide else inv_host, device.jax_device())
            new, found = _unscale([g._data for g in grads], inv, wide)
            for g, a in zip(grads, new):
                self._fill_grad(g, a)
            found_per_device[device] = Tensor._wrap(found)
        return found_per_device

    @staticmethod
    def _fill_grad(g: Tensor, a) -> None:
        g._data = a
        g._vc[0] += 1

    def unscale_(self, optimizer) -> None:
        """Divide ("unscale") the optimizer's gradients by the scale factor, in place, and record
        whether any holds an inf or NaN. Call it at most once per optimizer between updates,
        before ``step`` (e.g. to clip the true gradients); ``step`` calls it when you did not.

        Example::

            >>> w = nn.Parameter(fjax.tensor([3.0]))
            >>> opt = fjax.optim.SGD([w], lr=1.0)
            >>> scaler = fjax.amp.GradScaler("cpu", init_scale=4.0)
            >>> scaler.scale(w.sum()).backward()
            >>> w.grad
            tensor([4.], dtype=fjax.float32)
            >>> scaler.unscale_(opt)
            >>> w.grad
            tensor([1.], dtype=fjax.float32)
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, then float32, as torch (float32 division may be inexact)
        inv = Tensor._wrap(jnp.asarray(np.float32(1.0 / np.float64(self._scale.item()))))
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args: Any, **kwargs: Any):
        """Unscale the gradients (unless ``unscale_`` did already) and call
        ``optimizer.step(*args, **kwargs)`` if none is inf or NaN; skip it otherwise.

        Returns:
            What ``optimizer.step`` returned, or None when it was skipped.

        Example::

            >>> w = nn.Parameter(fjax.tensor([1.0]))
            >>> opt = fjax.optim.SGD([w], lr=0.5)
            >>> scaler = fjax.amp.GradScaler("cpu")
            >>> scaler.scale(w.sum()).backward()
            >>> scaler.step(opt)
            >>> w.data
            tensor([0.5000], dtype=fjax.float32)
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Update the scale at the end of an iteration: times ``backoff_factor`` if any optimizer
        step was skipped (the growth count restarts), times ``growth_factor`` once
        ``growth_interval`` unskipped iterations ran in a row (unless that overflows). Or set
        it to ``new_scale`` (a float, or a one-element float Tensor).

        Example::

            >>> scaler = fjax.amp.GradScaler("cpu", init_scale=8.0)
            >>> _ = scaler.scale(fjax.tensor(1.0))
            >>> scaler.update(2.0)
            >>> scaler.get_scale()
            2.0
        """
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._fill(scale, new_scale)
            else:
                reason = (
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                    "torch.FloatTensor with requires_grad=False."
                )
                if not isinstance(new_scale, Tensor) or new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                self._fill(scale, np.asarray(new_scale._data).reshape(()))
        else:
            found_infs = [
                float(found.item())
                for opt_state in self._per_optimizer_states.values()
                for found in opt_state["found_inf_per_device"].values()
            ]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(scale, tracker, sum(found_infs))
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, scale: Tensor, tracker: Tensor, found_inf: float) -> None:
        """torch's ``_amp_update_scale_``: the float32 scale times a (double) factor, rounded to
        float32; the int32 count of successful steps."""
        current = np.float32(scale.item())
        if found_inf:
            self._fill(scale, np.float32(np.float64(current) * self._backoff_factor))
            self._fill(tracker, 0)
            return
        successful = int(tracker.item()) + 1
        if successful == self._growth_interval:
            with np.errstate(over="ignore"):
                grown = np.float32(np.float64(current) * self._growth_factor)
            if np.isfinite(grown):
                self._fill(scale, grown)
            self._fill(tracker, 0)
        else:
            self._fill(tracker, successful)

    # -- queries and settings -----------------------------------------------------------
    def _get_scale_async(self) -> Tensor | None:
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled).

        Example::

            >>> fjax.amp.GradScaler("cpu").get_scale()
            65536.0
        """
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        """The scale's growth factor.

        Example::

            >>> fjax.amp.GradScaler("cpu").get_growth_factor()
            2.0
        """
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the scale's growth factor.

        Example::

            >>> s = fjax.amp.GradScaler("cpu")
            >>> s.set_growth_factor(4.0)
            >>> s.get_growth_factor()
            4.0
        """
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The scale's backoff factor.

        Example::

            >>> fjax.amp.GradScaler("cpu").get_backoff_factor()
            0.5
        """
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the scale's backoff factor.

        Example::

            >>> s = fjax.amp.GradScaler("cpu")
            >>> s.set_backoff_factor(0.25)
            >>> s.get_backoff_factor()
            0.25
        """
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The number of consecutive unskipped steps after which the scale grows.

        Example::

            >>> fjax.amp.GradScaler("cpu").get_growth_interval()
            2000
        """
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval.

        Example::

            >>> s = fjax.amp.GradScaler("cpu")
            >>> s.set_growth_interval(10)
            >>> s.get_growth_interval()
            10
        """
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        """Whether the scaler scales (False when built disabled, or for CUDA without a GPU).

        Example::

            >>> fjax.amp.GradScaler("cpu", enabled=False).is_enabled()
            False
        """
        return self._enabled

    def state_dict(self) -> dict:
        """The scaler's state: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval`` and ``_growth_tracker`` (empty when disabled).

        Example::

            >>> fjax.amp.GradScaler("cpu", init_scale=8.0).state_dict()
            {'scale': 8.0, 'growth_factor': 2.0, 'backoff_factor': 0.5, 'growth_interval': 2000, '_growth_tracker': 0}
        """
        if self._enabled:
            return {
                "scale": self.get_scale(),
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker(),
            }
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict()`` (a no-op when disabled).

        Example::

            >>> a = fjax.amp.GradScaler("cpu", init_scale=8.0)
            >>> b = fjax.amp.GradScaler("cpu")
            >>> b.load_state_dict(a.state_dict())
            >>> b.get_scale()
            8.0
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler."
            )
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._fill(self._scale, state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._fill(self._growth_tracker, state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the beginning "
                    "of an iteration, or at the end after scaler.update()."
                )
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer) -> dict:
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        one = Tensor._wrap(jnp.ones((), jnp.float32))
        found = self._unscale_grads_(optimizer, one, True)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = found
        return found

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
