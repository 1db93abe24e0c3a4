"""Anomaly detection: forward tracebacks for failing backward nodes, and NaN checks.

Global, as in PyTorch (not per thread). While enabled, every recorded node keeps the stack of
the forward call that created it (and, when a backward created it, the node whose backward
that was: Note [Anomaly parents]). When a node's backward raises during a backward run with
anomaly mode enabled, a warning shows those stacks before the error propagates, and a backward
producing NaN raises an error that names the node.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings

__all__ = [
    "detect_anomaly",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "set_detect_anomaly",
]

enabled = False
check_nan = True


# Note [Anomaly parents]
#   A node recorded while another node's backward runs (create_graph=True, or a Function's
#   backward that calls ops) was induced by that node: PyTorch's anomaly mode remembers it as
#   the new node's parent and, when the new node fails in a later backward, reports the
#   forward traceback of each ancestor after the node's own. The engine names the node it is
#   running in this thread (``_running``, only in anomaly mode); Node._trace's setter, which
#   anomaly mode's recording calls, takes it as the parent (``_anomaly_parent``).
class _Running(threading.local):
    node = None


_running = _Running()


def running_node():
    """The node whose backward runs in this thread under anomaly mode, or None."""
    return _running.node


def set_running_node(node):
    """Makes ``node`` the running one (None: none); returns the previous one, to restore."""
    prev, _running.node = _running.node, node
    return prev


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# tritongrad's own op machinery: PyTorch's is C++, so its forward tracebacks end at the
# user's (or torch.nn's) Python frame that called the op
_INTERNAL = tuple(os.path.join(_ROOT, d) + os.sep for d in ("autograd", "kernels", "runtime"))


def _user_frames(trace: list) -> list:
    """``trace`` (``traceback.format_stack`` entries) without its innermost frames inside
    tritongrad's op machinery (dispatch, the op wrappers, kernels)."""
    end = len(trace)
    while end > 1:
        entry = trace[end - 1]
        if not (entry.startswith('  File "') and entry[8:].startswith(_INTERNAL)):
            break
        end -= 1
    return trace[:end]


def report_error(node) -> None:
    """Warns where ``node``, whose backward just raised, was recorded: its forward traceback,
    then that of each ancestor (Note [Anomaly parents]), PyTorch's messages. A warning that
    the filters turn into an error is printed to stderr instead: the backward's own error is
    the one to raise."""
    first = True
    while node is not None:
        trace = node._trace
        if trace is None:
            _warn(f"Error detected in {node.name()}. No forward pass information available. "
                  f"Enable detect anomaly during forward pass for more information.")
            return
        stack = "".join(_user_frames(trace))
        if first:
            _warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{stack}")
        else:
            _warn(f"\n\nPrevious calculation was induced by {node.name()}. Traceback of "
                  f"forward call that induced the previous calculation:\n{stack}")
        first = False
        node = node.__dict__.get("_anomaly_parent")


def _warn(message: str) -> None:
    try:
        warnings.warn(message, UserWarning, stacklevel=4)
    except Warning as err:
        print(f"{type(err).__name__}: {message}", file=sys.stderr)


def is_anomaly_enabled() -> bool:
    return enabled


def is_anomaly_check_nan_enabled() -> bool:
    return check_nan


def _set(mode: bool, nan: bool) -> None:
    """Sets both flags; bools only, as PyTorch's binding (``torch.set_anomaly_enabled``)."""
    global enabled, check_nan
    for name, pos, value in (("enabled", 1, mode), ("check_nan", 2, nan)):
        if type(value) is not bool:
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {pos}) must "
                            f"be bool, not {type(value).__name__}")
    enabled, check_nan = mode, nan


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

    def __enter__(self) -> None:  # (``with detect_anomaly() as v`` binds None, as PyTorch)
        self._prev = (enabled, check_nan)
        _set(True, self.check_nan)

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

    def __enter__(self) -> None:  # (already set by __init__; binds None, as PyTorch)
        pass
