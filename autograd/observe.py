"""Observers: what the profiler and emit_nvtx hook into.

An observer is told when each op runs (forward, and ops run inside backward) and when the
engine applies each backward node. Observers are per thread (``state.observers``), and while
none is active the dispatch fast path costs one truth test.

Protocol (all four methods required; a returned token is handed back to the matching exit):

    op_enter(name: str, seq: int, inputs: tuple, params: tuple) -> token
        ``seq`` is the sequence number the op's backward node gets if it records one (the
        counter's current value, as docs/profiler.md says). ``inputs`` are Tensors; ``params`` the
        op's non-tensor arguments in order.
    op_exit(token) -> None
    node_enter(node, grads) -> token around ``node.apply`` in the engine; ``grads`` are the
                                     incoming gradients (Tensors or None), one per output
    node_exit(token) -> None

Optional (looked up with getattr; observers without them ignore user ranges):

    range_enter(name: str) -> token  a user range (profiler.record_function)
    range_exit(token) -> None
"""

from __future__ import annotations

from .state import set_mode, state

__all__ = ["add_observer", "remove_observer", "observing"]


def add_observer(obs) -> None:
    """Adds ``obs`` to this thread's observers."""
    set_mode("observers", state.observers + (obs,))


def remove_observer(obs) -> None:
    """Removes ``obs`` from this thread's observers (no error if absent)."""
    set_mode("observers", tuple(o for o in state.observers if o is not obs))


class observing:
    """Context manager that adds an observer for the duration of a ``with`` block."""

    def __init__(self, obs):
        self.obs = obs

    def __enter__(self):
        add_observer(self.obs)
        return self.obs

    def __exit__(self, *exc):
        remove_observer(self.obs)
        return False
