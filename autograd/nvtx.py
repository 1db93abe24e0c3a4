"""``emit_nvtx``: an NVTX range around every autograd op, tagged for forward-backward matching.

Ranges (docs/profiler.md, "NVTX naming"), pushed through tritongrad.runtime.nvtx on the
thread that runs the op, named as PyTorch's profiler names its events (observe.event_name):

    forward op (and any op run inside backward)   ``aten::<op>, seq = <N>`` (a custom
                                                  Function: ``<ClassName>, seq = <N>``)
    the engine's handling of one backward node    ``autograd::engine::evaluate_function:
                                                  <NodeName>`` (no number, as PyTorch's)
    that node's apply, inside it                  ``<NodeName>, stashed seq = <N>``
    with ``record_shapes=True``, appended          ``, sizes = [[d0, d1], [], ...]``

``N`` in a forward range is the sequence number the op's backward node gets if it records one
(``autograd.state.seq`` when the op starts); a node's apply shows the number it was created
with (``node._seq``). Nodes made by no op (``AccumulateGrad``, whose number is the "run first"
sentinel) show their name alone, as PyTorch's do.

It hooks into autograd through the observer protocol of autograd/observe.py: the dispatcher
calls ``op_enter``/``op_exit`` around each op, the engine ``node_enter``/``node_exit`` around
each node's apply.
"""

from __future__ import annotations

import threading

from ..runtime import driver as _driver
from ..runtime import nvtx as _nvtx
from ..runtime import streams as _streams
from . import observe
from .node import MAX_SEQ
from .observe import _names as _event_names
from .observe import EVALUATE_PREFIX, event_name
from .tensor import Tensor

__all__ = ["emit_nvtx", "format_range", "format_sizes"]

_ALREADY = "NVTX annotation context manager is already enabled"
_push_once, _pop, _range_push = _nvtx.push_once, _nvtx.pop, _nvtx.range_push


def format_sizes(args) -> str:
    """``[[d0, d1], [], ...]``: one list per argument, a tensor's shape or ``[]`` otherwise.

    Example:
        >>> import tritongrad as tg
        >>> format_sizes((tg.ones(2, 3), None, 0.5))
        '[[2, 3], [], []]'
    """
    return "[" + ", ".join([_shape_strs.get(a.shape) or _shape_str(a.shape)
                            if isinstance(a, Tensor) else "[]" for a in args]) + "]"


_shape_strs: dict = {}  # shape -> "[d0, d1]": shapes repeat, and str() of ints is not free


def _shape_str(shape) -> str:
    if len(_shape_strs) >= 4096:
        _shape_strs.clear()
    s = _shape_strs[shape] = "[" + ", ".join([str(int(d)) for d in shape]) + "]"
    return s


def format_range(name: str, seq: int | None = None, stashed: bool = False,
                 sizes: str | None = None) -> str:
    """The message of one emit_nvtx range.

    Args:
        name: the op's event name (``"aten::mul"``) or the node's (``"MulBackward0"``).
        seq: the sequence number; None (or the AccumulateGrad sentinel) leaves it out.
        stashed: a backward node's range (``stashed seq``) rather than an op's (``seq``).
        sizes: ``format_sizes(...)`` of the arguments, or None for no ``sizes`` part.

    Example:
        >>> format_range("aten::mul", 3, sizes="[[2, 3], []]")
        'aten::mul, seq = 3, sizes = [[2, 3], []]'
        >>> format_range("MulBackward0", 3, stashed=True)
        'MulBackward0, stashed seq = 3'
    """
    msg = name
    if seq is not None and 0 <= seq < MAX_SEQ:
        msg = f"{name}, stashed seq = {seq}" if stashed else f"{name}, seq = {seq}"
    if sizes is not None:
        msg = f"{msg}, sizes = {sizes}"
    return msg


class _Observer:
    """Pushes one range per op and per backward node (observe.py protocol)."""

    __slots__ = ("record_shapes",)

    def __init__(self, record_shapes: bool):
        self.record_shapes = record_shapes

    def op_enter(self, op, seq, inputs, params):
        name = _event_names.get(op) or event_name(op)  # (the cached name, without a call)
        if self.record_shapes:
            _push_once(format_range(name, seq, False, format_sizes((*inputs, *params))))
        else:
            _push_once(format_range(name, seq))

    def op_exit(self, token):
        _pop()

    def node_enter(self, node, grads=None):
        # grads (the incoming gradients, None for an absent one) give the sizes; an engine
        # that does not pass them gets ranges without a sizes part.
        sizes = format_sizes(grads) if self.record_shapes and grads is not None else None
        _push_once(format_range(node.name(), node._seq, True, sizes))

    def node_exit(self, token):
        _pop()

    def evaluate_enter(self, node):
        _push_once(EVALUATE_PREFIX + node.name())

    def evaluate_exit(self, token):
        _pop()

    def range_enter(self, name):
        # a user range (profiler.record_function): its name alone, as in PyTorch
        _range_push(name)

    def range_exit(self, token):
        _pop()


_tls = threading.local()  # .active: an emit_nvtx is entered on this thread


def _synchronize() -> None:
    """Waits for the current device's queued work, as PyTorch does around emit_nvtx, if CUDA
    is in use; a process that has not started CUDA is left alone (no context is created)."""
    if _driver.is_initialized():
        _streams.synchronize()


class emit_nvtx:
    """Context manager that makes every autograd operation emit an NVTX range.

    It is useful when running the program under a profiler that shows NVTX ranges
    (Nsight Systems: ``nsys profile -t cuda,nvtx python train.py``; Nsight Compute:
    ``ncu --nvtx``; or nvprof on GPUs that still support it)::

        nvprof --profile-from-start off -o trace_name.prof -- <regular command here>

    Then the ranges can be inspected on the profiler's timeline, or loaded with
    ``tritongrad.autograd.profiler.load_nvprof()``.

    Ranges are emitted on the thread that enters the context (autograd state is per thread,
    and tritongrad's engine runs backward on the calling thread), in the default NVTX domain.
    With no NVTX tool attached the context manager costs nothing per op.

    Args:
        enabled (bool, optional): ``enabled=False`` makes this context manager a no-op.
            Default: ``True``.
        record_shapes (bool, optional): if ``True``, the range wrapping each autograd op
            appends the sizes of the tensor arguments received by that op, in the format
            ``[[arg0.size(0), arg0.size(1), ...], [arg1.size(0), arg1.size(1), ...], ...]``.
            Non-tensor arguments are represented by ``[]``. Arguments are listed in the order
            the op receives them: its tensor inputs first, then its other arguments (which may
            differ from the order of the Python call). A backward node's range lists the
            gradients it receives. Recording shapes adds to the cost of each range.
            Default: ``False``.

    Raises:
        RuntimeError: "NVTX annotation context manager is already enabled" when entered while
            an emit_nvtx is active on this thread (nesting is refused, as in PyTorch).

    Example:
        >>> import tritongrad as tg
        >>> x = tg.ones(2, 2, requires_grad=True)
        >>> with tg.autograd.profiler.emit_nvtx():
        ...     (x * x).sum().backward()

    .. rubric:: Forward-backward correlation

    When viewing a profile created using :class:`emit_nvtx`, correlating each backward-pass op
    with the corresponding forward-pass op can be difficult. To ease this task,
    :class:`emit_nvtx` appends sequence number information to the ranges it generates.

    During the forward pass, each op's range is decorated with ``seq = <N>``. ``seq`` is a
    running counter, incremented each time a new backward node is created and stashed for
    backward. Thus, the ``seq = <N>`` annotation of a forward op's range tells you that if a
    backward node is created by this op, the node will receive sequence number N. During the
    backward pass, the range wrapping each backward node's ``apply()`` call (inside the
    engine's top-level ``autograd::engine::evaluate_function: <Node>`` range) is decorated
    with ``stashed seq = <M>``. ``M`` is the sequence number that the node was
    created with. By comparing ``stashed seq`` numbers in backward with ``seq`` numbers in
    forward, you can track down which forward op created each backward node.

    Any op executed during the backward pass is also decorated with ``seq = <N>``. During
    default backward (with ``create_graph=False``) this information is irrelevant: only the
    ranges of the backward nodes' ``apply()`` are useful, to correlate the nodes with the
    earlier forward pass.

    Ops are named as PyTorch's profiler names them: ``aten::mul, seq = 3`` (a custom
    Function: its class name).

    .. rubric:: Double-backward

    If, on the other hand, a backward pass with ``create_graph=True`` is underway (in other
    words, if you are setting up for a double-backward), each op's execution during backward
    is given a nonzero, useful ``seq = <N>``. Those ops may themselves create nodes to be
    executed later during double-backward, just as the original ops in the forward pass did.
    The relationship between backward and double-backward is conceptually the same as the
    relationship between forward and backward: the ops still emit current-sequence-number-
    tagged ranges, the nodes they create still stash those sequence numbers, and during the
    eventual double-backward, the nodes' ``apply()`` ranges are still tagged with ``stashed
    seq`` numbers, which can be compared to ``seq`` numbers from the backward pass.
    """

    def __init__(self, enabled: bool = True, record_shapes: bool = False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes
        self._observer = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered or getattr(_tls, "active", False):
            raise RuntimeError(_ALREADY)
        _synchronize()
        # With no tool attached there is nothing to record: skip the per-op hook entirely.
        self._observer = _Observer(bool(self.record_shapes)) if _nvtx.is_enabled() else None
        if self._observer is not None:
            observe.add_observer(self._observer)
        self.entered = _tls.active = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled or not self.entered:
            return False
        try:
            _synchronize()
        finally:
            if self._observer is not None:
                observe.remove_observer(self._observer)
            self._observer = None
            self.entered = _tls.active = False
        return False
