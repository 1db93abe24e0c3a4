"""Autograd's thread-local state, read on every op: one object, so the hot path pays one lookup.

Grad mode, inference mode, the sequence counter, the active observers (profiler, emit_nvtx)
and the saved-tensor hook stack are all per thread, as in PyTorch: a ``no_grad`` in one thread
does not leak into another.
"""

from __future__ import annotations

import threading


class _State(threading.local):
    grad_enabled = True
    inference = False
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
