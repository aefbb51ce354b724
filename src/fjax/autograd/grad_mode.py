"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local, as torch)."""

from __future__ import annotations

import functools
import threading


class _State(threading.local):
    enabled = True
    inference = False  # inside inference_mode() (torch.is_inference_mode_enabled)
    saved_hooks = ()  # (pack_hook, unpack_hook) pairs, innermost last (autograd.graph.saved_tensors_hooks)


_state = _State()


def is_grad_enabled() -> bool:
    """Whether gradient recording is on in this thread, i.e. whether ops on tensors that
    require grad are recorded for ``backward`` (off inside ``fjax.no_grad()``).

    Example::

        >>> fjax.is_grad_enabled()
        True
        >>> with fjax.no_grad():
        ...     fjax.is_grad_enabled()
        False
    """
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode()`` (torch.is_inference_mode_enabled).

    Example::

        >>> with fjax.inference_mode():
        ...     fjax.is_inference_mode_enabled()
        True
        >>> fjax.is_inference_mode_enabled()
        False
    """
    return _state.inference


class set_grad_enabled:  # noqa: N801 - torch's name
    """Turn recording on or off: as a function call, a context manager or a decorator.

    Args:
        mode: whether to record.

    Example:
        >>> x = fjax.ones(2, requires_grad=True)
        >>> with fjax.set_grad_enabled(False):
        ...     y = x * 2  # not recorded
        >>> y.requires_grad, fjax.is_grad_enabled()
        (False, True)
    """

    def __init__(self, mode: bool):
        self.prev = _state.enabled
        self.mode = bool(mode)
        _state.enabled = self.mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev

    def __call__(self, fn):
        _state.enabled = self.prev  # used as a decorator: only calls of fn change the mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(self.mode):
                return fn(*args, **kwargs)

        return wrapper


class _Mode:
    """Base for context managers/decorators that set grad mode to a fixed value."""

    mode = True

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = self.mode
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_Mode):  # noqa: N801
    """Context manager and decorator that disables recording.

    Example:
        >>> x = fjax.ones(2, requires_grad=True)
        >>> with fjax.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    mode = False


class enable_grad(_Mode):  # noqa: N801
    """Context manager and decorator that enables recording.

    Example:
        >>> x = fjax.ones(2, requires_grad=True)
        >>> with fjax.no_grad(), fjax.enable_grad():
        ...     y = x * 2
        >>> y.requires_grad
        True
    """

    mode = True


class inference_mode(_Mode):  # noqa: N801
    """Like no_grad (fjax tensors carry no extra bookkeeping to skip).

    Example:
        >>> x = fjax.ones(2, requires_grad=True)
        >>> with fjax.inference_mode():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __init__(self, mode: bool = True):
        self.mode = not mode

    def __enter__(self):
        self.prev_inference = _state.inference
        _state.inference = not self.mode
        return super().__enter__()

    def __exit__(self, *exc):
        _state.inference = self.prev_inference
        super().__exit__(*exc)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(not self.mode):
                return fn(*args, **kwargs)

        return wrapper
