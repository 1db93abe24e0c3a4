"""Anomaly detection: forward tracebacks for failing backward nodes, and NaN checks.

Global, as in PyTorch (not per thread). While enabled, every recorded node keeps the stack of
the forward call that created it; when its backward raises, that stack is printed first, and a
backward producing NaN raises an error that names the node.
"""

from __future__ import annotations

import functools
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

enabled = False
check_nan = True


def is_anomaly_enabled() -> bool:
    return enabled


def is_anomaly_check_nan_enabled() -> bool:
    return check_nan


def _set(mode: bool, nan: bool) -> None:
    global enabled, check_nan
    enabled, check_nan = bool(mode), bool(nan)


class detect_anomaly:
    """Context manager that enables anomaly detection for the autograd engine.

    Running the forward pass with detection enabled makes the backward pass print the
    traceback of the forward operation that created a failing backward function, and any
    backward computation that generates NaN raises an error. Only for debugging: it slows
    everything down. Also usable as a decorator.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self._prev = (enabled, check_nan)
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _Restore(True, self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class _Restore:
    def __init__(self, mode, nan):
        self.mode, self.nan = mode, nan

    def __enter__(self):
        self._prev = (enabled, check_nan)
        _set(self.mode, self.nan)

    def __exit__(self, *exc):
        _set(*self._prev)
        return False


class set_detect_anomaly(_Restore):
    """Sets anomaly detection on or off: at once as a function, or for a ``with`` block.

    Args:
        mode: whether to enable anomaly detection.
        check_nan: whether to raise an error when backward produces NaN.
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        super().__init__(mode, check_nan)
        self._prev = (enabled, globals()["check_nan"])
        _set(mode, check_nan)

    def __enter__(self):
        return self
