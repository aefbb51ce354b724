"""Anomaly detection (torch.autograd.anomaly_mode): with it on, backward checks each node's
input gradients for NaN and raises a RuntimeError naming the node that produced them.

The state is process-wide, as torch's. The engine reads one plain attribute per node
(``state.on``), so with anomaly mode off backward pays nothing else.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np


class _State:
    __slots__ = ("enabled", "check_nan", "on")

    def __init__(self):
        self.enabled = False
        self.check_nan = True
        self.on = False  # enabled and check_nan: what the engine reads


state = _State()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for the whole process (torch.set_anomaly_enabled).

    Args:
        enabled: whether backward checks gradients for NaN.
        check_nan: whether the check looks for NaN (the only check fjax makes); False turns
            it off while ``is_anomaly_enabled()`` still answers True, as torch does.

    Example:
        >>> fjax.set_anomaly_enabled(True)
        >>> fjax.is_anomaly_enabled(), fjax.is_anomaly_check_nan_enabled()
        (True, True)
        >>> fjax.set_anomaly_enabled(False)
    """
    state.enabled = bool(enabled)
    state.check_nan = bool(check_nan)
    state.on = state.enabled and state.check_nan


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (torch.is_anomaly_enabled).

    Example:
        >>> fjax.is_anomaly_enabled()
        False
    """
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN (torch.is_anomaly_check_nan_enabled).

    Example:
        >>> fjax.is_anomaly_check_nan_enabled()
        True
    """
    return state.check_nan


class detect_anomaly:  # noqa: N801 - torch's name
    """Context manager and decorator that turns anomaly detection on: a backward node whose
    gradients contain NaN raises ``RuntimeError: Function 'sqrtBackward' returned nan values in
    its 0th output.``. (torch also prints the forward traceback of that op; fjax names the op.)

    Args:
        check_nan: whether to check gradients for NaN (default True).

    Example:
        >>> x = fjax.tensor([0.0], requires_grad=True)
        >>> import warnings; warnings.simplefilter("ignore", UserWarning)
        >>> with fjax.autograd.detect_anomaly():
        ...     try:
        ...         fjax.sqrt(x).mul(0.0).sum().backward()  # d sqrt(x) / dx at 0 is inf; inf * 0 is nan
        ...     except RuntimeError as e:
        ...         print(e)
        Function 'sqrtBackward' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = state.enabled
        self.check_nan = check_nan
        self.prev_check_nan = state.check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime "
            "and should only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Turn anomaly detection on or off: as a function call, or a context manager that restores
    the previous setting (torch.autograd.set_detect_anomaly).

    Args:
        mode: whether anomaly detection is on.
        check_nan: whether it checks gradients for NaN (default True).

    Example:
        >>> with fjax.autograd.set_detect_anomaly(True):
        ...     fjax.is_anomaly_enabled()
        True
        >>> fjax.is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = state.enabled
        self.prev_check_nan = state.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


def check(node, in_cts) -> None:
    """Raise when a gradient ``node`` returned holds NaN (called by the engine in anomaly mode)."""
    for i, ct in enumerate(in_cts):
        if ct is None or isinstance(ct, jax.core.Tracer) or not jnp.issubdtype(ct.dtype, jnp.inexact):
            continue  # traced (nn.Graph) backward: values unknown here, not checked
        if bool(np.isnan(np.asarray(ct)).any()):
            raise RuntimeError(f"Function '{node.name}Backward' returned nan values in its {i}th output.")


class set_multithreading_enabled:  # noqa: N801 - torch's name
    """Enable or disable multithreaded backward (torch.autograd.set_multithreading_enabled), as a
    function call or a context manager that restores the previous setting. fjax's backward
    always runs on the calling thread (XLA parallelizes inside each step), so the mode is
    recorded only.

    Args:
        mode: whether backward may use worker threads.

    Example:
        >>> with fjax.autograd.set_multithreading_enabled(False):
        ...     pass
    """

    enabled = True

    def __init__(self, mode: bool) -> None:
        self.prev = set_multithreading_enabled.enabled
        self.mode = bool(mode)
        set_multithreading_enabled.enabled = self.mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        set_multithreading_enabled.enabled = self.prev

    def clone(self) -> "set_multithreading_enabled":
        """A copy of this context manager.

        Example:
            >>> fjax.autograd.set_multithreading_enabled(False).clone().mode
            False
        """
        return self.__class__(self.mode)


def is_multithreading_enabled() -> bool:
    """What ``set_multithreading_enabled`` last set (True by default).

    Example:
        >>> fjax.autograd.is_multithreading_enabled()
        True
    """
    return set_multithreading_enabled.enabled


def is_view_replay_enabled() -> bool:
    """False: fjax never replays view ops in backward (views are geometry over one storage).

    Example:
        >>> fjax.autograd.is_view_replay_enabled()
        False
    """
    return False


class enforce_grad_layout_policy:  # noqa: N801 - torch's name
    """Context manager that controls whether accumulated gradients must have their parameters'
    strides (torch.autograd.enforce_grad_layout_policy). fjax's gradients are immutable jax
    arrays whose layout XLA picks, so there is no policy to enforce; recorded only.

    Args:
        enable: whether the gradient layout contract is enforced (default True).

    Example:
        >>> with fjax.autograd.enforce_grad_layout_policy(False):
        ...     pass
    """

    enabled = True

    def __init__(self, enable: bool = True) -> None:
        self.enable = bool(enable)

    def __enter__(self) -> None:
        self.prev = enforce_grad_layout_policy.enabled
        enforce_grad_layout_policy.enabled = self.enable

    def __exit__(self, *args) -> None:
        enforce_grad_layout_policy.enabled = self.prev
