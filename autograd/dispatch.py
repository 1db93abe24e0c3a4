"""The one place where an op meets the backend and the graph.

``apply(Op, inputs, *params)`` runs a ``Primitive``: it picks the backend from the inputs'
device (``kernels.backend``), runs the forward on native arrays, wraps the results as Tensors
and, when grad mode is on and an input requires grad, records a node: its edges, sequence
number, forward stream, saved tensors. ``apply_inplace`` does the same for ``op_`` variants and
rewrites the modified tensor's history (through ``CopySlices`` when it is a view).

A Primitive is a Node subclass named as PyTorch names its backward (``MulBackward0``), with:

    op_name        the forward's name; profiles and NVTX ranges show ``aten::<op_name>`` ("mul")
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
    jvp(ctx, k, primals, tangents, out, *params) -> tangent | tuple of tangents
                   the forward-mode rule (Note [Forward AD]): the tangent of each output, J t,
                   from the inputs' tangents (None for an input that has none), run on Tensors
                   (``k`` is ``ops.traced``) with the forward's ``ctx`` (its state is kept even
                   when nothing records) and outputs ``out``. ``linear_jvp`` (the op applied to
                   the tangents), ``bilinear_jvp`` and ``elementwise_jvp`` (the vjp's terms,
                   as an elementwise op's Jacobian is diagonal) serve most ops; None (the
                   default) means forward AD is refused with PyTorch's error
    fused          True when the rule on arrays is one fused kernel (layer norm,
                   cross-entropy; recorded, it is a composite formula): an observed but
                   unrecorded backward runs it on arrays too, as one kernel
    changes_device True when the rule's gradient is on another device than its input (``to``):
                   the engine then never chains the next node's rule onto it on one backend
    save_inputs    indices of inputs to save (read back through ctx.saved_tensors)
    save_when      per ``save_inputs`` entry, the input whose gradient needs it (None: any);
                   an entry whose input's gradient is not needed is ``saved.UNSAVED`` (it
                   unpacks to None), as PyTorch's ``mul`` saves ``other`` only when ``self``
                   needs a gradient: nothing is kept alive or version-checked for nothing.
                   None (the default): every entry is always saved
    save_output    also save output 0 (after the inputs)
    saves_scalar   the rule reads a number the forward kept (``x * 2``: PyTorch's node saves the
                   wrapped scalar as ``other``): nothing is saved, but the node's saved values
                   count as freed after a backward, so a second one refuses as PyTorch's does
    keep_outputs   indices of further outputs the rule reads (sort's indices, a
                   factorization's factors), saved after the above (Note [Saved indices])
    keep_params    positions among the params of integer tensors the rule reads (gather's
                   index): the op passes the Tensor, its forward gets the array, and the
                   Tensor is saved last (Note [Saved indices])
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
from weakref import ref as _weakref

from ..kernels import _loaded as _backends
from ..kernels import backend
from ..runtime import dtype as _dtypes
from ..runtime import streams
from ..runtime.streams import _default_streams
from ..runtime.streams import _state as _stream_state
from . import anomaly_mode
from .graph import _before_inplace_write
from .node import _ZERO_NRS, FREED, FREED_MSG, MAX_SEQ, AccumulateGrad, Node, _output_nrs
from .saved import UNSAVED, SavedTensor, saved_input, saved_output
from .state import anywhere, state
from .tensor import Tensor, array_meta, make, view_rebase_error

__all__ = ["Primitive", "apply", "apply_inplace", "SINK", "as_shape", "sum_to", "call", "meta",
           "zeros", "check_internal_overlap", "expanded_dims", "linear_jvp", "bilinear_jvp",
           "elementwise_jvp", "zero_jvp", "dual_levels", "dual_masked", "opmath", "array_of"]


class _Sink:
    """The ctx of a forward that records nothing: it forgets whatever it is told."""

    __slots__ = ()

    def __setattr__(self, name, value):
        pass

    def save_for_backward(self, *tensors):
        pass


SINK = _Sink()
_NRS1, _NRS2 = _ZERO_NRS[1], _ZERO_NRS[2]  # the usual output numbers of 1 and 2 edges
_new = object.__new__
# ops/traced.py, installed when it loads (it imports the op modules, which import this one)
traced = None


class Primitive(Node):
    """A built-in differentiable op (see the module docstring for the protocol)."""

    __slots__ = ()
    op_name = "?"
    save_inputs: tuple = ()
    save_when: tuple | None = None
    save_output = False
    saves_scalar = False
    keep_outputs: tuple = ()
    keep_params: tuple = ()
    broadcasts = False
    nondiff_outputs: tuple = ()
    differentiable = True  # False for ops like comparisons: never recorded
    writes_out = False
    expanded_target = None
    fused = False
    changes_device = False
    vjp = None
    complex_vjp = None  # the rule for complex tensors, where ``vjp``'s is not (Note [Complex
    _complex = None     # autograd]); per input, whether it is complex (nodes that touch any)
    jvp = None
    complex_jvp = None  # the forward-mode rule for complex tensors, where ``jvp``'s is not

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.on_arrays = cls.vjp is not None and not cls.changes_device

    @classmethod
    def variant(cls, node: str, op_name: str, **attrs) -> type:
        """A subclass named ``node`` (the grad_fn name users see) running this primitive's
        forward and rules for op ``op_name`` (``TBackward0 = PermuteBackward0.variant(
        "TBackward0", "t")``), with ``attrs`` overriding class attributes."""
        return type(node, (cls,), {"__slots__": (), "op_name": op_name,
                                   "__module__": cls.__module__, **attrs})

    @staticmethod
    def forward(ctx, k, *args):
        raise NotImplementedError

    @property
    def needs_input_grad(self) -> tuple:
        nf = self._next
        if len(nf) == 2:  # (unrolled for the binary rules that ask on every backward)
            return nf[0] is not None, nf[1] is not None
        return tuple([n is not None for n in nf])

    def apply(self, *grads):
        cls = type(self)
        if not state.grad_enabled and (cls.fused or not (anywhere.observers and state.observers)):
            return self._vjp_arrays(grads)
        # Recorded (create_graph) or observed (the profiler and NVTX show each op inside a
        # backward node, as PyTorch's do): the rule runs in Tensor ops.
        if self._complex is None:
            out = cls.vjp(self, traced, self.saved_tensors, *grads)
        else:
            out = _complex_vjp(self, traced, self.saved_tensors, grads)
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
        elif len(saved) == 2:  # (the unrolled forms save ~0.1 us: no comprehension, no *grads)
            saved = (saved[0].unpack_data(self), saved[1].unpack_data(self))
        else:
            saved = [s.unpack_data(self) for s in saved]
        if self._complex is None:
            if len(grads) == 1:
                out = type(self).vjp(self, k, saved, grads[0])
            else:
                out = type(self).vjp(self, k, saved, *grads)
        else:
            out = _complex_vjp(self, k, saved, grads)
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


def opmath(k, *arrays) -> tuple:
    """``(arrays, back)``: the operands of an op's forward or rule as it computes them, and
    the function giving a result back in the first operand's dtype. float16 and bfloat16 are
    computed in float32 and rounded once at the end, as PyTorch's kernels compute in their
    "opmath" type; other dtypes as they are (``back`` returns its argument)."""
    dt = meta(arrays[0])[1]
    if dt is not _dtypes.float16 and dt is not _dtypes.bfloat16:
        return arrays, _as_it_is
    f32 = _dtypes.float32
    return tuple([k.astype(a, f32) for a in arrays]), lambda y: k.astype(y, dt)


def _as_it_is(y):
    return y


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


def _observed(fn, op, inputs, params, shown=None):
    """``fn(op, inputs, params)`` inside an op event for each observer; the observers are told
    ``shown`` (an in-place op's name: ``_inplace_name``) where given, else ``op``."""
    observers = state.observers  # as at entry: an op may add or remove observers
    what = op if shown is None else shown
    tokens = [o.op_enter(what, state.seq, inputs, params) for o in observers]
    try:
        return fn(op, inputs, params)
    finally:
        for o, tok in zip(observers, tokens):
            o.op_exit(tok)


def apply(op: type, inputs: tuple, *params):
    """Runs primitive ``op`` on Tensors ``inputs`` (one device, promoted dtypes) and params."""
    if dual_levels:  # forward AD is on (Note [Forward AD]): one list test otherwise
        return _apply_dual(op, inputs, params)
    if anywhere.observers and state.observers:
        return _observed(_apply, op, inputs, params)
    return _apply(op, inputs, params)


def apply_view(op: type, x: Tensor, params: tuple):
    """``apply(op, (x,), *params)`` for a view op (one input, differentiable, no saved
    indices): the path every ``view``/``unsqueeze``/``transpose``/slice takes, without
    ``apply``'s and ``_apply``'s generic handling, a sixth of a view's host cost."""
    if dual_levels or (anywhere.observers and state.observers):
        return apply(op, (x,), *params)
    dev = x._device
    k = _backends.get(dev.type) or backend(dev)
    if state.grad_enabled and (x._requires_grad
                               or (x._base is not None and x._base._requires_grad)):
        inputs = (x,)
        ctx = _new_node(op, inputs, dev)
    else:
        ctx = None
    out = (op.forward(ctx or SINK, k, x._data, params[0]) if len(params) == 1 else
           op.forward(ctx or SINK, k, x._data, *params))
    if ctx is None:
        return tuple(make(o) for o in out) if type(out) is tuple else make(out)
    return _record(op, ctx, inputs, out)


# Note [Saved indices]
#   A rule that reads an index tensor (gather's index, sort's indices, max_pool's argmax
#   positions) keeps it as PyTorch's node does: saved like any tensor, so saved-tensor hooks
#   pack it (``save_on_cpu`` moves it off the GPU too) and backward refuses it once modified
#   in place (``i.zero_()`` on max's indices then made a silently wrong gradient). It is an
#   input of the op but not an edge of the node (PyTorch's GatherBackward0 has one edge), so
#   it travels among the params: ``keep_params`` names its positions, the forward is handed
#   its array, and after recording its SavedTensor ends ``_saved``. An output index
#   (``keep_outputs``) is saved as the tensor the caller got, so modifying that in place is
#   seen the same way. Nothing here runs for other ops but one class-attribute test.

def _keep_params(op, params):
    """``params`` with the tensors at ``op.keep_params`` (each a tensor, a backend array as a
    rule's ``call`` passes, or a tuple of these and None: advanced indexing's indices)
    replaced by their arrays, and the tensors to save, one per entry (None stays None)."""
    plain = list(params)
    kept = []
    for i in op.keep_params:
        p = plain[i]
        if type(p) is tuple:
            plain[i] = tuple([array_of(q) for q in p])
            kept.extend([_as_tensor(q) for q in p])
        else:
            plain[i] = array_of(p)
            kept.append(_as_tensor(p))
    return tuple(plain), kept


def array_of(p):
    """A saved index as a backend array: a rule reads ``saved`` as arrays, or as Tensors when
    it is recorded (Note [Saved indices])."""
    return p._data if isinstance(p, Tensor) else p


def _as_tensor(p):
    return p if p is None or isinstance(p, Tensor) else make(p)


def _save_kept(node, kept) -> None:
    """Appends the kept index tensors to ``node``'s saved tensors (Note [Saved indices])."""
    extra = [UNSAVED if t is None else SavedTensor(t, False) for t in kept]
    node._saved = extra if node._saved is None else node._saved + extra


def _apply_keeping(op, inputs, params, sink):
    """``_apply`` of an op with ``keep_params`` (Note [Saved indices])."""
    params, kept = _keep_params(op, params)
    out = _apply(op, inputs, params, sink, True)
    first = out[0] if type(out) is tuple else out
    if first._fn is not None:  # (a fresh output with history: this call recorded a node)
        _save_kept(first._fn, kept)
    return out


def _apply(op, inputs, params, sink=SINK, plain=False):
    if op.keep_params and not plain:
        return _apply_keeping(op, inputs, params, sink)
    a = inputs[0]
    dev = a._device
    k = _backends.get(dev.type) or backend(dev)  # (backend()'s call saved once it loaded)
    ctx = sink
    if state.grad_enabled and op.differentiable:
        for t in inputs:
            # (a view requires grad when its base does, Tensor.requires_grad; then its edge
            # may still be None, as PyTorch's for a view made under no_grad)
            if t._requires_grad or (t._base is not None and t._base._requires_grad):
                ctx = _new_node(op, inputs, dev)
                break
    # The forward called with positional arguments for the common arities: a call through
    # ``*params`` costs ~70 ns more, a tenth of a small op's bookkeeping.
    n = len(inputs)
    if n == 1:
        if not params:
            out = op.forward(ctx, k, a._data)
        elif len(params) == 1:
            out = op.forward(ctx, k, a._data, params[0])
        else:
            out = op.forward(ctx, k, a._data, *params)
    elif n == 2:
        if not params:
            out = op.forward(ctx, k, a._data, inputs[1]._data)
        elif len(params) == 1:
            out = op.forward(ctx, k, a._data, inputs[1]._data, params[0])
        else:
            out = op.forward(ctx, k, a._data, inputs[1]._data, *params)
    else:
        out = op.forward(ctx, k, *[t._data for t in inputs], *params)
    if ctx is sink:
        return tuple(make(o) for o in out) if type(out) is tuple else make(out)
    return _record(op, ctx, inputs, out)


def _leaf_node(t):
    """The node of ``t._edge()`` for a non-view without history (its output number is 0):
    its leaf's ``AccumulateGrad`` (made again when the last graph holding it died), or None.
    ``Tensor._edge`` and ``_grad_accumulator`` written out: two calls fewer per leaf input of
    a recorded op."""
    if not t._requires_grad:
        return None
    ref = t._grad_acc
    acc = None if ref is None else ref()
    if acc is None:  # AccumulateGrad(t), its __init__ inline
        acc = _new(AccumulateGrad)
        acc._next = acc._nrs = ()
        acc._saved = None
        acc.variable = t
        acc._seq = MAX_SEQ
        t._grad_acc = _weakref(acc)
    return acc


def _new_node(op, inputs, dev):
    st = state
    node = _new(op)  # no __init__: a node's rarely used fields are class-level defaults
    n = len(inputs)
    # (Tensor._edge inlined below for the usual input, a non-view: the call is a tenth of the
    # node's cost. The edges go to _next/_nrs, Note [Edges as two tuples] in node.py; a
    # leaf's output number is 0.)
    if n == 1:
        a = inputs[0]
        if a._dtype.is_complex:
            node._complex = _complex_inputs(op, inputs)
        if a._base is None:
            fa = a._fn
            if fa is None:
                # (a leaf's live accumulator read here: _leaf_node's call saved on every step
                # but the first; one whose tensor stopped requiring grad is not its edge)
                ra = a._grad_acc
                fa = ra() if ra is not None and a._requires_grad else None
                node._next, node._nrs = (fa or _leaf_node(a),), _NRS1
            else:
                na = a._output_nr
                node._next, node._nrs = (fa,), _NRS1 if na == 0 else (na,)
        else:
            node.next_functions = (a._edge(),)
    elif n == 2:  # (unrolled: binary ops are most of what records)
        a, b = inputs
        if a._dtype.is_complex or b._dtype.is_complex:
            node._complex = _complex_inputs(op, inputs)
        if a._base is None and b._base is None:
            fa, fb = a._fn, b._fn
            if fa is None:  # (as above)
                na, ra = 0, a._grad_acc
                fa = (ra() if ra is not None and a._requires_grad else None) or _leaf_node(a)
            else:
                na = a._output_nr
            if fb is None:
                nb, rb = 0, b._grad_acc
                fb = (rb() if rb is not None and b._requires_grad else None) or _leaf_node(b)
            else:
                nb = b._output_nr
            node._next = (fa, fb)
            node._nrs = _NRS2 if na == 0 and nb == 0 else (na, nb)
        else:
            node.next_functions = (a._edge(), b._edge())
        if op.broadcasts:
            sa, sb = a._data.shape, b._data.shape
            if sa != sb:
                node._shapes = (sa, sb)  # inputs broadcast: backward sums gradients back
    else:  # (addmm, linear's node, and the other ops of three or more inputs)
        nxt, nrs, cplx = [], [], False
        for t in inputs:
            if t._dtype.is_complex:
                cplx = True
            if t._base is None and t._fn is None:  # (a leaf's edge, as above)
                r = t._grad_acc
                nxt.append((r() if r is not None and t._requires_grad else None)
                           or _leaf_node(t))
                nrs.append(0)
            else:
                f, nr = t._edge()
                nxt.append(f)
                nrs.append(nr)
        if cplx:
            node._complex = _complex_inputs(op, inputs)
        node._next, node._nrs = tuple(nxt), _output_nrs(tuple(nrs))
        if op.broadcasts:
            shapes = tuple([t._data.shape for t in inputs])
            if shapes.count(shapes[0]) != n:
                node._shapes = shapes
    seq = st.seq
    node._seq = seq
    st.seq = seq + 1
    node._saved = None
    if dev.type == "cuda":
        index = dev.index
        # (streams.current_stream_at inline for a stream set on the device)
        node._stream = (streams.current_stream(dev) if index is None else
                        _stream_state.streams.get(index) or _default_streams.get(index)
                        or streams.current_stream_at(index))
    if anomaly_mode.enabled:
        node._trace = traceback.format_stack()[:-3]
    return node


# Note [Complex autograd] (docs/autograd.md, "Complex autograd")
#   PyTorch's gradient of a complex tensor z = x + iy is dL/dx + i dL/dy for a real loss L
#   (twice the conjugate Wirtinger derivative: (z.abs() ** 2).sum() gives 2 z). Through an op
#   that is holomorphic in its complex inputs (mul, exp, matmul, sum, views, ...) that is
#   J^H g, the conjugate transpose of its Jacobian applied to the gradient, while the real
#   rules compute J^T g with J written as the same formula: so such an op's complex gradient
#   is conj(vjp(conj(g))), and no rule is written twice. Ops that are not holomorphic (abs,
#   real, imag, conj) give their own ``complex_vjp``. A real input of a node with complex
#   values gets the real part of its gradient (only that direction exists for it). Any other
#   op refuses complex tensors that need gradients, with PyTorch's message, rather than
#   give wrong ones. Forward mode needs no conjugation: a holomorphic op's tangent is
#   f'(z) t, its real ``jvp`` formula applied to complex values; the others give a
#   ``complex_jvp`` (abs: Re(conj(z) t) / |z|) or refuse (``_complex_jvp``). Complex
#   tensors work on both backends (the Triton one computes on pairs of float lanes: Note
#   [complex lanes] in kernels/triton/complex.py).
_HOLOMORPHIC = frozenset((
    "add", "sub", "rsub", "mul", "div", "neg", "reciprocal", "exp", "log", "expm1", "log1p",
    "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt", "pow", "mm", "addmm", "bmm", "sum",
    "mean", "cumsum", "cat",
    "stack", "split", "split_with_sizes", "unbind", "clone", "copy_", "expand", "permute",
    "transpose", "t", "squeeze", "unsqueeze", "view", "slice", "select", "slice_scatter",
    "index", "index_put", "index_select", "index_add", "gather", "scatter", "scatter_add",
    "masked_fill", "where", "tril", "triu", "repeat", "as_strided", "as_strided_scatter", "fill_",
    "zero_",
    "to", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "exp2", "log2",
    "log10", "prod", "logsumexp", "unsafe_split", "unsafe_split_with_sizes", "alias",
    "diagonal_scatter", "select_scatter", "masked_select", "take", "index_fill", "index_copy",
    "_unsafe_view",
))


# Ops whose jvp moves or copies elements without arithmetic: it holds for complex values
_MOVES = frozenset(("flip", "roll", "diagonal", "unfold"))


def _complex_jvp(op):
    """``op``'s forward-mode rule for complex tensors (Note [Complex autograd]): its own
    ``complex_jvp``; or its ``jvp``, which for a holomorphic op is J t with J the same formula
    as for real values (f'(z) t), and for an op that moves elements the same map. Others
    refuse, rather than give a wrong tangent."""
    if op.complex_jvp is not None:
        return op.complex_jvp
    if op.complex_vjp is None and op.op_name in _HOLOMORPHIC or op.op_name in _MOVES:
        return op.jvp
    raise NotImplementedError(f"{op.op_name}: forward-mode AD of complex tensors is not "
                              f"supported by tritongrad for this op (reverse mode is: Note "
                              f"[Complex autograd])")


def _complex_inputs(op, inputs) -> tuple:
    """Per input, whether it is complex, for a node that touches complex tensors; an op with
    no complex rule refuses (Note [Complex autograd])."""
    if op.complex_vjp is None and op.op_name not in _HOLOMORPHIC:
        raise RuntimeError(f"{op.op_name} does not support automatic differentiation for "
                           f"outputs with complex dtype.")
    return tuple([t._dtype.is_complex for t in inputs])


def _complex_vjp(node, k, saved, grads):
    """``node``'s rule for complex values (Note [Complex autograd])."""
    cls = type(node)
    if cls.complex_vjp is not None:
        out = cls.complex_vjp(node, k, saved, *grads)
    else:
        out = cls.vjp(node, k, saved, *[None if g is None else _conj(k, g) for g in grads])
    single = type(out) is not tuple
    out = (out,) if single else out
    fixed = []
    for o, is_complex in zip(out, node._complex):
        if o is not None and meta(o)[1].is_complex:
            if cls.complex_vjp is None:
                o = k.conj(o)
            if not is_complex:
                o = k.real(o)
        fixed.append(o)
    return fixed[0] if single else tuple(fixed)


def _conj(k, a):
    return k.conj(a) if meta(a)[1].is_complex else a


def _record(op, node, inputs, out):
    """Gives the forward's results ``out`` their history (``node``) and saves what the rule
    needs."""
    if type(out) is tuple:
        outs = tuple(make(o) for o in out)
        if outs[0]._dtype.is_complex and node._complex is None:
            node._complex = _complex_inputs(op, inputs)
        node.num_outputs = len(outs)
        for i, t in enumerate(outs):
            if i not in op.nondiff_outputs and (t._dtype.is_floating_point or t._dtype.is_complex):
                t._fn, t._output_nr, t._requires_grad = node, i, True
        result = outs
    else:
        result = make(out)
        dt = result._dtype
        if not dt.is_floating_point:
            if not dt.is_complex:  # integers and bools have no gradient: no history
                return result
            if node._complex is None:
                node._complex = _complex_inputs(op, inputs)
        result._fn, result._requires_grad = node, True
        outs = None
    save = op.save_inputs
    if save:
        when = op.save_when
        if save == (0, 1):  # (unrolled; x * x saves x once, unless hooks must see each save)
            a, b = inputs[0], inputs[1]
            if a is b and not (anywhere.saved_hooks and state.saved_hooks):
                sa = saved_input(a)
                saved = [sa, sa]
            elif when is None:
                saved = [saved_input(a), saved_input(b)]
            elif when == (1, 0):  # (mul's: each input saved for the other's gradient)
                ea, eb = node._next
                saved = [UNSAVED if eb is None else saved_input(a),
                         UNSAVED if ea is None else saved_input(b)]
            else:
                saved = _save_needed(save, when, inputs, node._next)
        elif when is not None:
            saved = _save_needed(save, when, inputs, node._next)
        elif save == (0,):  # (no comprehension: it costs a function call, ~0.1 us)
            saved = [saved_input(inputs[0])]
        else:
            saved = [saved_input(inputs[i]) for i in save]
        if op.save_output:
            saved.append(saved_output(result if outs is None else outs[0]))
        node._saved = saved
    elif op.save_output:
        node._saved = [saved_output(result if outs is None else outs[0])]
    elif op.saves_scalar:  # (an empty record, freed by backward like any)
        node._saved = ()
    if outs is not None and op.keep_outputs:
        _save_outputs(node, outs, op.keep_outputs)
    return result


def _save_outputs(node, outs: tuple, positions: tuple) -> None:
    """Appends the outputs at ``positions`` to ``node``'s saved tensors (Note [Saved indices]):
    an output with history as a saved output (its array; under forward AD the tensor itself,
    whose tangent a forward-over-reverse reads, as ``_apply_dual`` re-saves output 0), an
    index as the tensor the caller got."""
    dual = bool(dual_levels)
    extra = [SavedTensor(t, False) if dual or t._fn is not node else SavedTensor(t, True, i)
             for i, t in ((i, outs[i]) for i in positions)]
    node._saved = extra if node._saved is None else node._saved + extra


def _save_needed(save: tuple, when: tuple, inputs, nodes) -> list:
    """The ``_saved`` entries of an op with ``save_when``: each input saved only when the
    gradient that needs it is (its edge's node, in ``nodes``, is set), ``UNSAVED``
    otherwise."""
    return [UNSAVED if j is not None and nodes[j] is None else saved_input(inputs[i])
            for i, j in zip(save, when)]


# -- in-place ops ------------------------------------------------------------------------------

def check_inplace(t: Tensor, requires_grad: bool | None = None,
                  what: str = "an in-place operation") -> None:
    """Raises the documented errors for in-place ops autograd cannot allow. ``requires_grad``:
    whether any input of the op requires grad (default: whether ``t`` does); the autograd
    checks apply only then, with grad mode on, as PyTorch's check_inplace."""
    if requires_grad is None:
        requires_grad = t.requires_grad
    if requires_grad and state.grad_enabled:
        base = t._base
        if base is not None:  # views autograd cannot rebase (no_grad views, multi-output ...)
            msg = view_rebase_error(t)
            if msg is not None:
                raise RuntimeError(msg)
            if base._fn is None and t.requires_grad:
                raise RuntimeError(f"a view of a leaf Variable that requires grad is being used "
                                   f"in {what}.")
        elif t._requires_grad and t._fn is None:
            raise RuntimeError(f"a leaf Variable that requires grad is being used in {what}.")
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
    if 0 not in strides or 0 in a.shape:  # (the common case: one test; no elements: none)
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


def check_partial_overlap(target: Tensor, others: tuple) -> None:
    """Refuses an in-place write into ``target`` that reads another view of the same memory
    overlapping it in part (``a[1:].copy_(a[:-1])``, ``a[1:].add_(a[:-1])``), PyTorch's rule
    (assert_no_partial_overlap): the result would depend on the order of the writes. The
    same view, or views that do not overlap, are fine. Tensors are compared through their
    bases, one identity test each (views of one tensor share its base); memory shared in
    other ways (``set_``, ``from_numpy``) is not looked for."""
    base = target._base if target._base is not None else target
    for t in others:
        if isinstance(t, Tensor) and t is not target and (
                t._base if t._base is not None else t) is base and _overlap_in_part(target, t):
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. "
                               "Please clone() the tensor before performing the operation.")


def _overlap_in_part(a: Tensor, b: Tensor) -> bool:
    """Whether two views of one base overlap other than as the same view (the rare case:
    only reached for views of one base). As PyTorch's get_overlap_status, only views that
    fill their memory span (non-overlapping and dense) are compared; interleaved ones
    (``a[::2]``, ``a[1::2]``) are "too hard" and pass."""
    if (a.storage_offset() == b.storage_offset() and a.stride() == b.stride()
            and tuple(a.shape) == tuple(b.shape)):
        return False
    from .ops.shape import _memory_span
    sa, sb = _memory_span(a), _memory_span(b)
    return bool(sa and sb and sa[2] - sa[1] == a.numel() and sb[2] - sb[1] == b.numel()
                and sa[1] < sb[2] and sb[1] < sa[2])


def _forward_into(op, ctx, k, inputs, params) -> None:
    dst = inputs[0]._data
    if op.writes_out:
        op.forward(ctx, k, *[t._data for t in inputs], *params, out=dst)
    else:
        k.copy_(dst, op.forward(ctx, k, *[t._data for t in inputs], *params))


def apply_inplace(op: type, target: Tensor, others: tuple, *params) -> Tensor:
    """Runs ``op`` with ``target`` as input 0 and writes the result into ``target``."""
    if dual_levels:  # (Note [Forward AD])
        return _apply_inplace_dual(op, target, others, params)
    if state.observers:
        _observed(lambda o, i, p: _apply_inplace(o, i[0], i[1:], p), op, (target,) + others,
                  params, _inplace_name(op))
    else:
        _apply_inplace(op, target, others, params)
    return target


def _inplace_name(op) -> str:
    """The name observers see for ``op`` run in place: PyTorch's in-place operator, ``mul_``
    for ``mul`` (an op named with its ``_`` already, ``copy_``, is its own in-place form)."""
    name = op.op_name
    return name if name.endswith("_") else name + "_"


def _apply_inplace(op, target, others, params, sink=SINK):
    """The in-place write and its history; returns the forward's ctx (the node, or ``sink``
    when nothing records)."""
    inputs = (target,) + others
    record = False
    if state.grad_enabled:
        for t in inputs:  # (a view requires grad when its base does: Tensor.requires_grad)
            if t._requires_grad or (t._base is not None and t.requires_grad):
                record = True
                break
    check_inplace(target, record)
    check_internal_overlap(op, target)
    if others:
        check_partial_overlap(target, others)
    if anywhere.saved_hooks and state.saved_hooks:  # (allow_mutation_on_saved_tensors clones
        _before_inplace_write(target)                # what was saved from target's storage)
    dev = target._device
    k = backend(dev)
    indices = None
    if op.keep_params:
        params, indices = _keep_params(op, params)
    if not record:
        _forward_into(op, sink, k, inputs, params)
        target._vc[0] += 1
        return sink
    node = _new_node(op, inputs, dev)
    save, when = op.save_inputs, op.save_when
    if when is not None:  # (the inputs whose gradients are needed: their edges are set)
        save = tuple([i for i, j in zip(save, when)
                      if j is None or node._next[j] is not None])
    if 0 in save:
        # the rule needs target's value from before the write: keep a copy of it
        original = target.detach().clone()
        if dual_levels:  # (forward-over-reverse: the saved value keeps the tangent target had
            level = dual_levels[-1]  # before the write, a copy: target's is rewritten in place)
            tangent = _get_tangent(target, level)
            if tangent is not None:
                with dual_masked(batch_of((tangent,))):
                    _set_tangent(original, level, tangent.clone())
        if target._requires_grad:
            original._fn, original._output_nr = target._edge()
            original._requires_grad = True
        saved_inputs = [original if i == 0 else inputs[i] for i in save]
    else:
        saved_inputs = [inputs[i] for i in save]
    saved = [SavedTensor(t, False) for t in saved_inputs]
    if when is not None:  # (back in their places, UNSAVED for the others)
        kept = dict(zip(save, saved))
        saved = [kept.get(i, UNSAVED) for i in op.save_inputs]
    _forward_into(op, node, k, inputs, params)
    target._vc[0] += 1
    from .ops.views import rebase_history
    rebase_history(target, node)
    if op.save_output:
        saved.append(SavedTensor(target, True, target._output_nr))
    if saved:
        node._saved = saved
    if indices:
        _save_kept(node, indices)
    return node


# -- forward AD --------------------------------------------------------------------------------

# Note [Forward AD]
# Forward-mode AD (autograd/forward_ad.py) gives a tensor a tangent per dual level; an op
# propagates them here, in the one place every primitive passes, so the families hold only
# their ``jvp`` rules. ``dual_levels`` is empty unless a level is active: then ``apply`` and
# ``apply_inplace`` cost one list test more, and nothing else changes. With a level active, an
# op whose inputs carry no tangent takes the ordinary path; otherwise:
#
# - the forward runs with a real ctx even when nothing records (an instance of the primitive,
#   never linked into a graph), so ``jvp`` reads what ``forward`` stored (ctx.alpha, ctx.dims);
# - ``jvp`` runs on Tensors (``k`` = ops.traced) with the level masked: the primals' own
#   tangents must not flow into the computation of the outputs' tangents (PyTorch's rules see
#   the primals without their forward grad), and the tangent ops take the plain path. Tangent
#   computations record backward history like any op, so reverse mode can differentiate them,
#   and the backward of a recorded op propagates tangents when its rule runs on Tensors
#   (create_graph): forward-over-reverse, as functional.hessian's forward-mode strategy uses;
# - a tangent whose shape differs from its output's (an input broadcast by the op) is
#   expanded to it, once, here, as reverse mode sums gradients back once;
# - an op that saves its output for backward keeps the output tensor itself (with its
#   tangent) rather than its array, so a backward run on Tensors sees the tangent
#   (forward-over-reverse); the reference cycle this makes is freed by the GC;
# - in place, the rule sees the target's value from before the write (a copy) and the new
#   tangent is written into the target's tangent in place, so that views sharing it (a view's
#   tangent is the same view of its base's) see the change; a view without a tangent whose
#   base has none gives its base a zero tangent first, as PyTorch does, and any other target
#   without one gets a copy of the new tangent in its own layout, never an input's tangent
#   (``write_inplace_tangent``; custom Functions' dirty inputs go through it too);
# - a tangent may be a batch of tangents (Note [Batched forward AD], autograd/batched.py):
#   the rule then runs once for the batch under a ``BatchLevel``, which sends its ops to
#   ``batched.apply_forward`` (``run_batched``).

dual_levels: list = []  # the active forward AD levels (forward_ad.py owns it; at most one)
_get_tangent = _set_tangent = None  # forward_ad's tangent slot, installed when it loads


def install_forward_ad(get_tangent, set_tangent) -> None:
    global _get_tangent, _set_tangent
    _get_tangent, _set_tangent = get_tangent, set_tangent


class BatchLevel:
    """The level a jvp rule on batched tangents runs under (Note [Batched forward AD],
    autograd/batched.py): in ``dual_levels`` it sends the rule's ops to
    ``batched.apply_forward``, which batches those that get a batched tangent."""

    __slots__ = ("size",)

    def __init__(self, size: int):
        self.size = size


class dual_masked:  # (a context manager: named as one)
    """Masks the active dual level: ops inside propagate no tangents (the jvp rules' own ops,
    make_dual's and unpack_dual's aliases). A batch level stays (a rule run on batched
    tangents masks inside it too); ``batch``, a batch size, adds one: for a rule given
    batched tangents."""

    __slots__ = ("_batch", "_saved")

    def __init__(self, batch: int | None = None):
        self._batch = batch

    def __enter__(self):
        saved = self._saved = dual_levels[:]
        dual_levels.clear()
        if saved and type(saved[-1]) is BatchLevel:
            dual_levels.append(saved[-1])
        elif self._batch is not None:
            dual_levels.append(BatchLevel(self._batch))
        return self

    def __exit__(self, *exc):
        dual_levels[:] = self._saved


def _no_jvp(op) -> NotImplementedError:
    # (PyTorch's type; a RuntimeError subclass, so callers catching that still do)
    return NotImplementedError(
        f"Trying to use forward AD with {op.op_name} that does not support it because it has "
        f"not been implemented yet. Please file an issue to tritongrad so that we can "
        f"prioritize its implementation.")


def _input_tangents(op, inputs):
    """(level, tangents) when forward AD applies to ``op`` on ``inputs``, else None."""
    if not op.differentiable:
        return None
    level = dual_levels[-1]
    tangents = tuple([_get_tangent(t, level) for t in inputs])
    for t in tangents:
        if t is not None:
            if op.jvp is None and op.complex_jvp is None:
                raise _no_jvp(op)
            return level, tangents
    return None


def _run_jvp(op, ctx, inputs, tangents, out, params, rule=None) -> tuple:
    """The outputs' tangents (None where an output has none), fitted to their outputs;
    ``rule`` is the jvp to run (by default ``op.jvp``)."""
    rule = rule or op.jvp
    outs = out if type(out) is tuple else (out,)
    size = batch_of(tangents)
    with dual_masked(size):
        if size is None:
            res = rule(ctx, traced, inputs, tangents, out, *params)
        else:
            res = run_batched(lambda ts: rule(ctx, traced, inputs, ts, out, *params),
                              tangents, size)
        res = res if type(res) is tuple else (res,)
        fitted = []
        for i, (o, t) in enumerate(zip(outs, res)):
            if t is None or i in op.nondiff_outputs or not (o._dtype.is_floating_point
                                                            or o._dtype.is_complex):
                fitted.append(None)
                continue
            if tuple(t.shape) != tuple(o.shape):
                t = t.expand(o.shape)
            if t._dtype is not o._dtype:
                t = t.to(o._dtype)
            fitted.append(t)
    return tuple(fitted)


def batch_of(tangents) -> int | None:
    """The batch size of the batched tangents among ``tangents``, None if none is batched."""
    for t in tangents:
        if t is not None and type(t._data) is BatchedArray:
            return t._data.data.shape[0]
    return None


def run_batched(rule, tangents: tuple, size: int):
    """``rule(tangents)``, a jvp rule given batched tangents (``size`` per batch), run once on
    the batch, or, when it uses them outside the ops (``Unbatchable``), once per batch entry
    (Note [Batched forward AD])."""
    try:
        with dual_masked(size):
            return rule(tangents)
    except Unbatchable:
        def run(ts):
            with dual_masked():
                res = rule(ts)
            return res if type(res) is tuple else (res,)
        return _batched.jvp_per_entry(run, tangents, size)


def _apply_dual(op, inputs, params):
    level = dual_levels[-1]
    if type(level) is BatchLevel:  # an op of a jvp rule on batched tangents
        if anywhere.observers and state.observers:
            return _observed(lambda o, i, p: _batched.apply_forward(o, i, p, level.size), op,
                             inputs, params)
        return _batched.apply_forward(op, inputs, params, level.size)
    found = _input_tangents(op, inputs)
    ctx = SINK if found is None else _new(op)  # a ctx that keeps the forward's state
    if anywhere.observers and state.observers:
        out = _observed(lambda o, i, p: _apply(o, i, p, ctx), op, inputs, params)
    else:
        out = _apply(op, inputs, params, ctx)
    if found is None:
        return out
    level, tangents = found
    first = out[0] if type(out) is tuple else out
    rule = op.jvp
    if first._dtype.is_complex or any(t._dtype.is_complex for t in inputs):
        rule = _complex_jvp(op)
    elif rule is None:  # (an op with a complex rule only, given real values)
        raise _no_jvp(op)
    node = first._fn if first._fn is not None else ctx  # the recorded node, if any
    touts = _run_jvp(op, node, inputs, tangents, out, params, rule)
    for o, t in zip(out if type(out) is tuple else (out,), touts):
        if t is not None:
            _set_tangent(o, level, t)
    if op.save_output and node is not ctx and touts[0] is not None:
        node._saved[len(op.save_inputs)] = SavedTensor(first, False)
    return out


def _apply_inplace_dual(op, target, others, params):
    level = dual_levels[-1]
    if type(level) is BatchLevel:
        _batched.apply_inplace_forward(op, target, others, params, level.size)
        return target
    inputs = (target,) + others
    found = _input_tangents(op, inputs)
    if found is None:
        if anywhere.observers and state.observers:
            _observed(lambda o, i, p: _apply_inplace(o, i[0], i[1:], p), op, inputs, params,
                      _inplace_name(op))
        else:
            _apply_inplace(op, target, others, params)
        return target
    level, tangents = found
    if tangents[0] is not None and tangents[0].requires_grad:
        # (the rule's ops may save target's tangent for backward, and it is overwritten in
        # place below (write_inplace_tangent): they get a copy)
        with dual_masked(batch_of(tangents[:1])):
            tangents = (tangents[0].clone(),) + tuple(tangents[1:])
    with dual_masked():
        # the rule reads the value from before the write, with its history (reverse mode
        # over the tangent computation differentiates through it)
        before = target.clone()
    ctx = _new(op)
    if anywhere.observers and state.observers:
        box = []
        _observed(lambda o, i, p: box.append(_apply_inplace(o, i[0], i[1:], p, ctx)), op,
                  inputs, params, _inplace_name(op))
        node = box[0]
    else:
        node = _apply_inplace(op, target, others, params, ctx)
    complex_values = target._dtype.is_complex or any(t._dtype.is_complex for t in others)
    t_out, = _run_jvp(op, node, (before,) + others, tangents, target, params,
                      _complex_jvp(op) if complex_values else None)
    write_inplace_tangent(target, level, t_out)
    if op.save_output and node is not ctx and t_out is not None:
        # (as for an out-of-place op: the saved output is the target with its new tangent)
        node._saved[len(op.save_inputs)] = SavedTensor(target, False)
    return target


def write_inplace_tangent(target: Tensor, level: int, t_out: Tensor | None) -> None:
    """Gives ``target``, just modified in place, the tangent ``t_out`` (None: zero), written
    into its current tangent so that views sharing it see the change (a view without one
    gets its part of its base's). A target without a tangent gets a copy in its own layout,
    never ``t_out`` itself, which may be an input's tangent (copy_'s) or a broadcast view of
    one: the target's tangent is its own, as in PyTorch. A batch of tangents (Note [Batched
    forward AD]) written where there was none gives the target a batch of its own, which the
    base of a view does not see."""
    current = _get_tangent(target, level)
    size = batch_of((t_out, current))
    with dual_masked(size):
        if size is not None and (current is None or type(current._data) is not BatchedArray):
            _set_tangent(target, level, _batched.with_layout(target, t_out, copy=True))
            return
        if current is None and target._base is not None:
            current = _view_tangent(target, level)
        if current is None:
            from .ops.creation import empty_strided
            current = empty_strided(tuple(target.shape), target.stride(), dtype=target._dtype,
                                    device=target._device)
            _set_tangent(target, level, current)
        if t_out is None:
            current.zero_()
        else:
            current.copy_(t_out)


def refuse_out_dual(name: str, result: Tensor, out: Tensor) -> None:
    """Raises PyTorch's error for an out= function (``name``, e.g. "add") under forward AD
    when its result (computed with tangents, so carrying one if an input did) or ``out``
    has a tangent: out= functions have no forward-AD formula in PyTorch either."""
    if dual_levels:
        level = dual_levels[-1]
        if _get_tangent(result, level) is not None or _get_tangent(out, level) is not None:
            raise NotImplementedError(f"Trying to use forward AD with {name}_out that does not "
                                      f"support it because it is an out= function")


def _view_tangent(view_: Tensor, level):
    """The tangent of a view that has none: its part of its base's tangent (a zero tangent
    of the base's layout is made first when the base has none)."""
    base = view_._base
    bt = _get_tangent(base, level)
    if bt is None:
        from .ops.creation import empty_strided
        bt = empty_strided(tuple(base.shape), base.stride(), dtype=base._dtype,
                           device=base._device).zero_()
        _set_tangent(base, level, bt)
    t = bt.as_strided(tuple(view_.shape), view_.stride(),
                      bt.storage_offset() + view_.storage_offset() - base.storage_offset())
    _set_tangent(view_, level, t)
    return t


# -- helpers for jvp rules ------------------------------------------------------------------------

def linear_jvp(*positions: int):
    """The jvp of an op linear in the inputs at ``positions`` (all: no positions given): the
    op itself applied to their tangents (zeros for those without one), the other inputs
    (indices, masks) as they are. A view's tangent is so the same view of its input's."""
    def jvp(ctx, k, primals, tangents, out, *params):
        args = tuple(p if positions and i not in positions else
                     t if t is not None else zeros(k, p.shape, p)
                     for i, (p, t) in enumerate(zip(primals, tangents)))
        return apply(type(ctx), args, *params)
    return staticmethod(jvp)


def bilinear_jvp(ctx, k, primals, tangents, out, *params):
    """The jvp of an op bilinear in its two inputs (mul, mm, bmm): op(ta, b) + op(a, tb)."""
    (a, b), (ta, tb) = primals, tangents
    op = type(ctx)
    left = None if ta is None else apply(op, (ta, b), *params)
    right = None if tb is None else apply(op, (a, tb), *params)
    if left is None or right is None:
        return left if right is None else right
    return k.add(left, right)


class _Asking:
    """The ctx a vjp is run with for one input's term of an elementwise jvp: the forward's
    ctx, except that ``needs_input_grad`` names that input alone."""

    __slots__ = ("_ctx", "needs_input_grad")

    def __init__(self, ctx, needs: tuple):
        self._ctx, self.needs_input_grad = ctx, needs

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def elementwise_jvp(ctx, k, primals, tangents, out, *params):
    """The jvp of an elementwise op (each output element depends only on its inputs' elements
    at the same position): each input's Jacobian is diagonal, so its term of J t is the vjp's
    term for that input with the tangent in place of the output's gradient, and the jvp is
    the sum of the terms. One rule, the vjp, so serves both modes."""
    op = type(ctx)
    saved = [primals[i] for i in op.save_inputs]
    if op.save_output:
        saved.append(out)
    n = len(primals)
    total = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        term = op.vjp(_Asking(ctx, tuple(j == i for j in range(n))), k, saved, t)
        term = term[i] if type(term) is tuple else term
        if term is not None:
            total = term if total is None else k.add(total, term)
    return total


def zero_jvp(ctx, k, primals, tangents, out, *params):
    """A zero tangent (rounding ops, integer division: their derivative is zero)."""
    return zeros(k, out.shape, out)


# (last: batched.py builds on this module)
from . import batched as _batched
from .batched import BatchedArray, Unbatchable
