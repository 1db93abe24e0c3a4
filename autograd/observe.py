"""Observers: what the profiler and emit_nvtx hook into.

An observer is told when each op runs (forward, and ops run inside backward) and when the
engine applies each backward node. Observers are per thread (``state.observers``), and while
none is active the dispatch fast path costs one truth test.

Protocol (the first four methods are required; a returned token is handed back to the
matching exit):

    op_enter(op, seq: int, inputs: tuple, params: tuple) -> token
        ``op`` says what runs: a primitive op class, a custom ``Function`` class, or a str (an
        op's name); ``event_name(op)`` is the name PyTorch's profiler shows for it
        (``aten::mul``, ``MyFunction``, ``aten::linear``). ``seq`` is the sequence number the
        op's backward node gets if it records one (the counter's current value, as
        docs/profiler.md says); -1 for ops that never record one (factory functions).
        ``inputs`` are Tensors; ``params`` the op's non-tensor arguments in order.
    op_exit(token) -> None
    node_enter(node, grads) -> token around ``node.apply`` in the engine; ``grads`` are the
                                     incoming gradients (Tensors or None), one per output
    node_exit(token) -> None

Optional (looked up with getattr; observers without them ignore these):

    range_enter(name: str) -> token  a user range (profiler.record_function)
    range_exit(token) -> None
    evaluate_enter(node) -> token    around the engine's whole handling of one node (hooks,
                                     the node's apply, release): PyTorch's
                                     ``autograd::engine::evaluate_function: <Node>`` event
    evaluate_exit(token) -> None

Ops that do not pass through the dispatcher report themselves with ``observed_op`` (a
decorator: factory functions such as ``randn``, composites such as ``nn.functional.linear``)
or ``op_range`` (a context manager, for the parts of such a function: randn's ``aten::empty``
then ``aten::normal_``). Both cost one truth test while no observer is active.
"""

from __future__ import annotations

import functools

from .state import anywhere, set_mode, state

__all__ = ["add_observer", "remove_observer", "observing", "event_name", "observed_op",
           "op_range", "EVALUATE_PREFIX"]

# PyTorch's engine wraps its handling of each node in a range with this name + the node's name.
EVALUATE_PREFIX = "autograd::engine::evaluate_function: "


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


# -- event names -------------------------------------------------------------------------------

_names: dict = {}  # op (class or str) -> its event name: computed once per op, not per call


def event_name(op) -> str:
    """The name PyTorch's profiler and emit_nvtx give what ``op_enter`` was told runs.

    - a primitive op class: ``aten::<op_name>`` (``aten::mul``), the ATen operator PyTorch
      would dispatch;
    - a custom ``Function`` class: its class name (``MyFunction``), as PyTorch records
      ``Function.apply``;
    - a str (what ``op_range`` and ``observed_op`` pass): a name that has a namespace
      (``aten::linear``) is used as is; a bare name gets ``aten::``.

    The answer is cached per op, so the per-call cost is one dict lookup.

    Example:
        >>> event_name("mul")
        'aten::mul'
        >>> event_name("aten::linear")
        'aten::linear'
    """
    name = _names.get(op)
    if name is None:
        if len(_names) >= 4096:  # (it holds classes: custom Functions made in a loop)
            _names.clear()
        name = _names[op] = _qualify(op)
    return name


def _qualify(op) -> str:
    from .function import Function  # (function.py imports the dispatcher, which imports us)
    if isinstance(op, type):
        if issubclass(op, Function):
            return op.__name__
        return "aten::" + op.op_name
    return op if "::" in op else "aten::" + op


# -- ops outside the dispatcher ----------------------------------------------------------------

def _split_args(args, kwargs) -> tuple[tuple, tuple]:
    from .tensor import Tensor  # (tensor.py imports the dispatcher, which imports us)
    values = args + tuple(kwargs.values()) if kwargs else args
    return (tuple([a for a in values if isinstance(a, Tensor)]),
            tuple([a for a in values if not isinstance(a, Tensor)]))


class op_range:
    """Context manager: an op event named ``name`` (``"aten::empty"``) around a block, for the
    observers of this thread; nothing while none is active.

    Args:
        name: the event's name (see ``event_name``).
        inputs: the op's Tensor arguments (their shapes are recorded with ``record_shapes``).
        params: its other arguments, in order.
        seq: the sequence number to show; -1 (the default) for an op that records no node,
            such as a factory function.
    """

    __slots__ = ("name", "inputs", "params", "seq", "_open")

    def __init__(self, name: str, inputs: tuple = (), params: tuple = (), seq: int = -1):
        self.name, self.inputs, self.params, self.seq = name, inputs, params, seq
        self._open = None

    def __enter__(self):
        if anywhere.observers and state.observers:
            observers = state.observers
            self._open = (observers, [o.op_enter(self.name, self.seq, self.inputs, self.params)
                                      for o in observers])
        return self

    def __exit__(self, *exc):
        opened, self._open = self._open, None
        if opened is not None:
            for o, tok in zip(*opened):
                o.op_exit(tok)
        return False


def observed_op(name: str, seq_from_counter: bool = False):
    """Decorator: a function that runs as one op PyTorch's profiler shows (a factory function,
    ``aten::randn``; a composite, ``aten::linear``) reports an op event ``name`` around its
    body, with its Tensor arguments as inputs and the others as params. While no observer is
    active it costs one truth test.

    Args:
        name: the event's name.
        seq_from_counter: show the sequence counter (as PyTorch does for ops that go through
            autograd, e.g. ``aten::linear``); False shows -1 (factory functions).

    Example:
        >>> @observed_op("aten::linear", seq_from_counter=True)
        ... def linear(input, weight, bias=None): ...
    """
    def wrap(fn):
        @functools.wraps(fn)
        def observed(*args, **kwargs):
            if not (anywhere.observers and state.observers):
                return fn(*args, **kwargs)
            inputs, params = _split_args(args, kwargs)
            seq = state.seq if seq_from_counter and state.grad_enabled else -1
            with op_range(name, inputs, params, seq):
                return fn(*args, **kwargs)
        return observed
    return wrap
