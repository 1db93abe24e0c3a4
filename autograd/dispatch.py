"""The one place where an op meets the backend and the graph.

``apply(Op, inputs, *params)`` runs a ``Primitive``: it picks the backend from the inputs'
device (``kernels.backend``), runs the forward on native arrays, wraps the results as Tensors
and, when grad mode is on and an input requires grad, records a node: its edges, sequence
number, forward stream, saved tensors. ``apply_inplace`` does the same for ``op_`` variants and
rewrites the modified tensor's history (through ``CopySlices`` when it is a view).

A Primitive is a Node subclass named as PyTorch names its backward (``MulBackward0``), with:

    op_name        the forward's name for profiles and NVTX ranges ("mul")
    forward(ctx, k, *arrays, *params) -> array | tuple of arrays
                   ``k`` is the backend module; ``ctx`` the node, or a sink that ignores
                   writes when nothing is recorded. Non-tensor state for backward goes on ctx.
    vjp(ctx, k, saved, *grads) -> grad | tuple of grads (None where not needed)
                   the derivative rule, written once against the kernel contract: when the
                   backward records nothing (create_graph=False, the common case) ``k`` is the
                   backend and ``saved``/``grads`` are its arrays, so no Tensor is made per
                   intermediate; under create_graph (or a profiler) ``k`` is ``ops.traced``,
                   the same contract over differentiable Tensors, so the rule's own gradient
                   comes for free. It is the only form of rule (a custom ``Function``'s
                   ``backward`` is user API, on another class). A rule that needs another
                   primitive (index's rule is index_put, cumsum's is cumsum reversed) runs it
                   through ``call(k, Op, inputs, *params)``: its forward on arrays, recorded
                   on Tensors; ``meta(a)`` and ``zeros(k, shape, like)`` work on both
    fused          True when the rule on arrays is one fused kernel (layer norm,
                   cross-entropy; recorded, it is a composite formula): an observed but
                   unrecorded backward runs it on arrays too, as one kernel
    changes_device True when the rule's gradient is on another device than its input (``to``):
                   the engine then never chains the next node's rule onto it on one backend
    save_inputs    indices of inputs to save (read back through ctx.saved_tensors)
    save_output    also save output 0 (after the inputs)
    broadcasts     the engine-facing apply sums each gradient back to its input's shape, so
                   rules never undo broadcasting themselves
    nondiff_outputs  indices of outputs that never require grad (e.g. argmax indices)
    differentiable False for ops whose outputs never require grad (comparisons)
    writes_out     forward accepts ``out=`` (elementwise ops): ``op_`` variants write in place
    expanded_target  what an ``op_`` variant does when its target's elements share memory
                   (see ``check_internal_overlap``): None refuses (the default), True allows,
                   a string warns it (PyTorch's deprecation warning)
"""

from __future__ import annotations

import traceback
import warnings

from ..kernels import backend
from ..runtime import streams
from . import anomaly_mode
from .node import FREED, FREED_MSG, Node, SavedTensor
from .state import anywhere, state
from .tensor import Tensor, array_meta, make

__all__ = ["Primitive", "apply", "apply_inplace", "SINK", "as_shape", "sum_to", "call", "meta",
           "zeros", "check_internal_overlap", "expanded_dims"]


class _Sink:
    """The ctx of a forward that records nothing: it forgets whatever it is told."""

    __slots__ = ()

    def __setattr__(self, name, value):
        pass

    def save_for_backward(self, *tensors):
        pass


SINK = _Sink()
_new = object.__new__
# ops/traced.py, installed when it loads (it imports the op modules, which import this one)
traced = None


class Primitive(Node):
    """A built-in differentiable op (see the module docstring for the protocol)."""

    __slots__ = ()
    op_name = "?"
    save_inputs: tuple = ()
    save_output = False
    broadcasts = False
    nondiff_outputs: tuple = ()
    differentiable = True  # False for ops like comparisons: never recorded
    writes_out = False
    expanded_target = None
    fused = False
    changes_device = False
    vjp = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.on_arrays = cls.vjp is not None and not cls.changes_device

    @staticmethod
    def forward(ctx, k, *args):
        raise NotImplementedError

    @property
    def needs_input_grad(self) -> tuple:
        nf = self.next_functions
        if len(nf) == 2:  # (unrolled for the binary rules that ask on every backward)
            return nf[0][0] is not None, nf[1][0] is not None
        return tuple([e[0] is not None for e in nf])

    def apply(self, *grads):
        cls = type(self)
        if not state.grad_enabled and (cls.fused or not (anywhere.observers and state.observers)):
            return self._vjp_arrays(grads)
        # Recorded (create_graph) or observed (the profiler and NVTX show each op inside a
        # backward node, as PyTorch's do): the rule runs in Tensor ops.
        out = cls.vjp(self, traced, self.saved_tensors, *grads)
        out = out if type(out) is tuple else (out,)
        return out if self._shapes is None else self._unbroadcast(traced, out)

    def _unbroadcast(self, k, grads: tuple) -> tuple:
        """Each gradient summed back to its input's shape (``_shapes``, set only when the
        inputs' shapes differed)."""
        return tuple([g if g is None else sum_to(k, g, s) for g, s in zip(grads, self._shapes)])

    def _vjp_arrays(self, grads) -> tuple:
        """Runs ``vjp`` on the backend's arrays and wraps what it returns."""
        for g in grads:  # (the engine skips nodes whose gradients are all None)
            if g is not None:
                break
        if len(grads) == 1:
            data = g._data
            out = self.vjp_on_arrays(backend(g._device), data)
            if len(out) == 1 and out[0] is data:  # passed through unchanged: the same
                return (g,)                               # tensor goes on
        else:
            out = self.vjp_on_arrays(backend(g._device),
                                     *[None if g is None else g._data for g in grads])
        return tuple([None if o is None else make(o) for o in out])

    def vjp_on_arrays(self, k, *grads) -> tuple:
        """The rule on backend ``k``'s arrays: input gradients (arrays or None), each summed
        back to its input's shape."""
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(FREED_MSG)
        if saved is None:
            saved = ()
        elif len(saved) == 1:
            saved = (saved[0].unpack_data(self),)
        else:
            saved = [s.unpack_data(self) for s in saved]
        out = type(self).vjp(self, k, saved, *grads)
        if type(out) is not tuple:  # one input, so nothing broadcast (_shapes needs two)
            return (out,)
        return out if self._shapes is None else self._unbroadcast(k, out)

# -- helpers for vjp rules (any ``k``: a backend, or ops.traced) ------------------------------

def as_shape(k, a, shape):
    """``a`` in ``shape``: a view where the strides allow, else a contiguous copy."""
    out = k.view(a, shape)
    return out if out is not None else k.view(k.contiguous(a), shape)


def call(k, op: type, inputs, *params):
    """Primitive ``op`` inside a rule: its forward on backend ``k``'s arrays, or recorded (one
    node, as any op) when ``k`` is ``ops.traced``."""
    if k is traced:
        return apply(op, tuple(inputs), *params)
    return op.forward(SINK, k, *inputs, *params)


def meta(a) -> tuple:
    """(device, dtype) of a rule's operand: a Tensor or a backend array."""
    if isinstance(a, Tensor):
        return a._device, a._dtype
    return array_meta(a)


def zeros(k, shape, like):
    """Zeros of ``shape`` with ``like``'s dtype and device, for backend ``k`` (any)."""
    dev, dt = meta(like)
    return k.full(tuple(shape), 0, dt, dev)


def sum_to(k, g, shape):
    """Sums ``g`` down to ``shape`` (undoes broadcasting ``shape`` to ``g``'s shape)."""
    shape = tuple(shape)
    gshape = tuple(g.shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and gshape[lead + i] != 1)
    out = k.sum(g, dims, True) if dims else g
    return as_shape(k, out, shape) if tuple(out.shape) != shape else out


def _observed(fn, op, inputs, params):
    observers = state.observers  # as at entry: an op may add or remove observers
    tokens = [o.op_enter(op.op_name, state.seq, inputs, params) for o in observers]
    try:
        return fn(op, inputs, params)
    finally:
        for o, tok in zip(observers, tokens):
            o.op_exit(tok)


def apply(op: type, inputs: tuple, *params):
    """Runs primitive ``op`` on Tensors ``inputs`` (one device, promoted dtypes) and params."""
    if anywhere.observers and state.observers:
        return _observed(_apply, op, inputs, params)
    return _apply(op, inputs, params)


def _apply(op, inputs, params):
    dev = inputs[0]._device
    k = backend(dev)
    ctx = SINK
    if state.grad_enabled and op.differentiable:
        for t in inputs:
            if t._requires_grad:
                ctx = _new_node(op, inputs, dev)
                break
    n = len(inputs)
    if n == 1:
        out = op.forward(ctx, k, inputs[0]._data, *params)
    elif n == 2:
        out = op.forward(ctx, k, inputs[0]._data, inputs[1]._data, *params)
    else:
        out = op.forward(ctx, k, *[t._data for t in inputs], *params)
    if ctx is SINK:
        return tuple(make(o) for o in out) if type(out) is tuple else make(out)
    return _record(op, ctx, inputs, out)


def _new_node(op, inputs, dev):
    st = state
    node = _new(op)  # no __init__: a node's rarely used fields are class-level defaults
    n = len(inputs)
    if n == 1:
        node.next_functions = (inputs[0]._edge(),)
    elif n == 2:  # (unrolled: binary ops are most of what records)
        a, b = inputs
        node.next_functions = (a._edge(), b._edge())
        if op.broadcasts:
            sa, sb = a._data.shape, b._data.shape
            if sa != sb:
                node._shapes = (sa, sb)  # inputs broadcast: backward sums gradients back
    else:
        node.next_functions = tuple([t._edge() for t in inputs])
        if op.broadcasts:
            shapes = tuple([t._data.shape for t in inputs])
            if shapes.count(shapes[0]) != n:
                node._shapes = shapes
    seq = st.seq
    node._seq = seq
    st.seq = seq + 1
    node._saved = None
    if dev.type == "cuda":
        node._stream = streams.current_stream(dev)
    if anomaly_mode.enabled:
        node._trace = traceback.format_stack()[:-3]
    return node


def _record(op, node, inputs, out):
    """Gives the forward's results ``out`` their history (``node``) and saves what the rule
    needs."""
    if type(out) is tuple:
        outs = tuple(make(o) for o in out)
        node.num_outputs = len(outs)
        for i, t in enumerate(outs):
            if i not in op.nondiff_outputs:
                t._grad_fn, t._output_nr, t._requires_grad = node, i, True
        result = outs
    else:
        result = make(out)
        result._grad_fn, result._requires_grad = node, True
        outs = None
    save = op.save_inputs
    if save or op.save_output:
        if save == (0, 1):  # (unrolled; x * x saves x once, unless hooks must see each save)
            a, b = inputs[0], inputs[1]
            sa = SavedTensor(a, False)
            shared = a is b and not (anywhere.saved_hooks and state.saved_hooks)
            saved = [sa, sa if shared else SavedTensor(b, False)]
        else:
            saved = [SavedTensor(inputs[i], False) for i in save]
        if op.save_output:
            t = result if outs is None else outs[0]
            saved.append(SavedTensor(t, True, t._output_nr))
        node._saved = saved
    return result


# -- in-place ops ------------------------------------------------------------------------------

def check_inplace(t: Tensor, what: str = "an in-place operation") -> None:
    """Raises the documented errors for in-place ops autograd cannot allow."""
    if state.grad_enabled and t._requires_grad and t._grad_fn is None and t._base is None:
        raise RuntimeError(f"a leaf Variable that requires grad is being used in {what}.")
    if t._base is not None and state.grad_enabled and t._base._requires_grad \
            and t._base._grad_fn is None:
        raise RuntimeError(f"a view of a leaf Variable that requires grad is being used in "
                           f"{what}.")
    if t._inference and not state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed. You can make a clone to get a normal tensor before doing "
                           "inplace update.")


_OVERLAP_MSG = ("unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.")


def expanded_dims(t: Tensor) -> tuple:
    """The dims along which several elements of ``t`` are one memory location: size > 1 and
    stride 0, as ``expand`` makes them (PyTorch's has_internal_overlap answers "yes" exactly
    then; other overlap, through as_strided, it calls too hard to tell)."""
    a = t._data
    strides = a.strides
    if 0 not in strides:  # (the common case: one test)
        return ()
    return tuple(d for d, (n, s) in enumerate(zip(a.shape, strides)) if s == 0 and n > 1)


def check_internal_overlap(op: type, t: Tensor) -> None:
    """Refuses an in-place write into ``t`` when several of its elements are one memory
    location (``expanded_dims``), PyTorch's rule (assert_no_internal_overlap): the result
    would depend on the order of the writes (b.expand(3).add_(v) left b == b + v[-1], the last
    write winning), so it is refused here, the one place every in-place op passes, the same
    on both backends. PyTorch's exceptions are the op's ``expanded_target``: fill_ and zero_
    store one value however often (allowed), index_put_ writes only the indexed elements
    (deprecated: a warning)."""
    if expanded_dims(t):
        allow = op.expanded_target
        if allow is None:
            raise RuntimeError(_OVERLAP_MSG)
        if allow is not True:
            warnings.warn(allow, UserWarning, stacklevel=4)


def _forward_into(op, ctx, k, inputs, params) -> None:
    dst = inputs[0]._data
    if op.writes_out:
        op.forward(ctx, k, *[t._data for t in inputs], *params, out=dst)
    else:
        k.copy_(dst, op.forward(ctx, k, *[t._data for t in inputs], *params))


def apply_inplace(op: type, target: Tensor, others: tuple, *params) -> Tensor:
    """Runs ``op`` with ``target`` as input 0 and writes the result into ``target``."""
    if state.observers:
        return _observed(lambda o, i, p: _apply_inplace(o, i[0], i[1:], p), op,
                         (target,) + others, params)
    return _apply_inplace(op, target, others, params)


def _apply_inplace(op, target, others, params):
    check_inplace(target)
    check_internal_overlap(op, target)
    inputs = (target,) + others
    dev = target._device
    k = backend(dev)
    record = state.grad_enabled and any(t._requires_grad for t in inputs)
    if record and target._base is not None and not target._requires_grad:
        record = True  # writing grad-requiring values into a view makes its base require grad
    if not record:
        _forward_into(op, SINK, k, inputs, params)
        target._vc[0] += 1
        return target
    node = _new_node(op, inputs, dev)
    if 0 in op.save_inputs:
        # the rule needs target's value from before the write: keep a copy of it
        original = target.detach().clone()
        if target._requires_grad:
            original._grad_fn, original._output_nr = target._edge()
            original._requires_grad = True
        saved_inputs = [original if i == 0 else inputs[i] for i in op.save_inputs]
    else:
        saved_inputs = [inputs[i] for i in op.save_inputs]
    saved = [SavedTensor(t, False) for t in saved_inputs]
    _forward_into(op, node, k, inputs, params)
    target._vc[0] += 1
    from .ops.views import rebase_history
    rebase_history(target, node)
    if op.save_output:
        saved.append(SavedTensor(target, True, target._output_nr))
    if saved:
        node._saved = saved
    return target
