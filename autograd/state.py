"""Autograd's thread-local state, read on every op.

Grad mode, inference mode, the sequence counter, the active observers (profiler, emit_nvtx)
and the saved-tensor hook stack are all per thread, as in PyTorch: a ``no_grad`` in one thread
does not leak into another. The three rarely used ones (observers, saved-tensor hooks,
inference mode) are set through ``set_mode``, which also counts the threads that have each on
(``anywhere``), so an op reads its thread's state for them only when some thread uses them.
"""

from __future__ import annotations

import threading


class _State(threading.local):
    grad_enabled = True
    inference = False
    # enforce_grad_layout_policy: whether accumulated gradients are held to the layout contract
    grad_layout_enforced = True
    # The sequence number the next graph node will get. Forward ranges under emit_nvtx show
    # it ("seq = N"), backward nodes stash it ("stashed seq = N").
    seq = 0
    # Objects notified of every op and every backward node (see autograd/observe.py); empty
    # in the common case, which keeps the dispatch fast path to one truth test.
    observers = ()
    # (pack_hook, unpack_hook) pairs from graph.saved_tensors_hooks, innermost last.
    saved_hooks = ()
    # Set by graph.disable_saved_tensors_hooks: the error that installing hooks raises.
    saved_hooks_disabled = None


state = _State()


class _Anywhere:
    """How many threads have each rarely used mode on. The per-op path reads these plain
    counts and looks at its own thread's ``state`` only when one is nonzero: a thread-local
    read costs three plain ones, and every op would make several."""

    __slots__ = ("observers", "saved_hooks", "inference")

    def __init__(self):
        self.observers = self.saved_hooks = self.inference = 0


anywhere = _Anywhere()
_lock = threading.Lock()


def set_mode(name: str, value) -> None:
    """Sets this thread's ``state.<name>`` (``observers``, ``saved_hooks`` or ``inference``),
    keeping ``anywhere``'s count of the threads where it is on (never below the true count:
    a thread that ends with a mode on leaves the count high, which only costs speed)."""
    was = bool(getattr(state, name))
    setattr(state, name, value)
    if bool(value) != was:
        with _lock:
            setattr(anywhere, name, getattr(anywhere, name) + (1 if value else -1))
