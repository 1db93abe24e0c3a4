"""``tg.cuda.set_sync_debug_mode``: warn or raise where the host waits for the device without
being asked to.

A training step that reads nothing back runs as far ahead of the GPU as the queue allows; one
``.item()``, ``.tolist()``, ``.cpu()``, ``bool(t)`` or data-dependent shape (``nonzero``,
``masked_select``) stalls the host until every queued kernel has finished. PyTorch's debug
mode flags those implicit synchronisations (its ``memcpy_and_sync`` and
``stream_synchronize``): so does this one, at each blocking device-to-host read
(``memory.to_host``). Explicit waits (``tg.cuda.synchronize()``, ``Stream.synchronize()``,
``Event.synchronize()``) are what the user asked for and are not flagged, as in PyTorch.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["check", "get_sync_debug_mode", "set_sync_debug_mode"]

_NAMES = {"default": 0, "warn": 1, "error": 2}
_mode = 0


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """Set the debug mode for cuda synchronizing operations.

    Args:
        debug_mode(str or int): if "default" or 0, don't error or warn on synchronizing
            operations, if "warn" or 1, warn on synchronizing operations, if "error" or 2,
            error out synchronizing operations.

    Warning:
        This is an experimental feature, and not all synchronizing operations will trigger
        warning or error.
    """
    global _mode
    if isinstance(debug_mode, str):
        if debug_mode not in _NAMES:
            raise RuntimeError('invalid value of debug_mode, expected one of `default`, '
                               '`warn`, `error`')
        debug_mode = _NAMES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected one of 0,1,2")
    _mode = int(debug_mode)


def get_sync_debug_mode() -> int:
    """Return current value of debug mode for cuda synchronizing operations."""
    return _mode


_PACKAGES = ("tritongrad", "tritongrad.autograd", "tritongrad.runtime", "tritongrad.kernels",
             "tritongrad.nn", "tritongrad.optim", "tritongrad.utils", "tritongrad.distributed")


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside tritongrad (the
    user's ``.item()`` line, however deep inside the library the read happens)."""
    dirs = tuple(os.path.dirname(os.path.abspath(sys.modules[n].__file__)) + os.sep
                 for n in _PACKAGES if n in sys.modules)
    frame, level = sys._getframe(2), 3  # (level 1 is check's caller, level 2 its caller...)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(dirs):
        frame, level = frame.f_back, level + 1
    return level - 1


def check() -> None:
    """Called where the host is about to wait for the device implicitly: warns or raises as
    the mode says."""
    if _mode == 1:
        warnings.warn("called a synchronizing CUDA operation", UserWarning,
                      stacklevel=_user_stacklevel())
    elif _mode == 2:
        raise RuntimeError("called a synchronizing CUDA operation")
