"""Batched backward: ``grad(..., is_grads_batched=True)``, vmap-style.

Note [Batched gradients]
  Each gradient flowing through the graph carries a leading batch dimension (one
  vector-Jacobian product per batch entry), and each node's rule runs ONCE for the whole
  batch, as PyTorch runs it under vmap:

  - the rule gets ``BatchedArray`` operands, which look like one example (``shape`` without
    the batch dimension, ``meta`` as the array's), and ``Batched(k)``: the kernel contract with
    a batching rule per function, applied to the arrays underneath. Elementwise functions
    line the batched operands up with the others (a batched operand of fewer dims gets unit
    dims after the batch dim, so NumPy-style broadcasting pairs the right dims); reductions,
    softmax, cumsum, permute, view, expand and getitem shift their dims past the batch dim;
    ``matmul`` folds the batch into the rows (or runs as one ``bmm``), ``bmm`` folds it into
    its batch;
  - a contract function with no batching rule runs once per batch entry on views of the
    batched operands and its results are stacked (PyTorch's vmap "fallback"); in-place
    functions write through those views;
  - a node whose rule reaches past the contract (a custom ``Function``'s backward, a rule that
    reads an array directly: the ``BatchedArray`` raises ``Unbatchable``), and every node of a
    batched backward with ``create_graph=True`` (whose rules run on Tensors), runs once per
    batch entry on that entry's gradients, and its input gradients are stacked.

  A rule's result that does not depend on the batched gradients (a zero gradient) is the
  same for every entry, and is broadcast to the batch.
"""

from __future__ import annotations

from ..kernels import backend
from .dispatch import (SINK, Primitive, _apply, _apply_inplace, _forward_into, _keep_params,
                       as_shape)
from .overrides import _disabled_torch_function_impl
from .tensor import Tensor, array_meta, make

__all__ = ["Batched", "BatchedArray", "BatchedTensor", "Unbatchable", "apply_node", "batch",
           "unbatch"]


class Unbatchable(Exception):
    """A rule used a batched operand outside the kernel contract: the node is run once per
    batch entry instead."""


class BatchedArray:
    """A backend array ``data`` of shape ``(B, *shape)`` seen as one example of ``shape``."""

    __slots__ = ("data", "device", "dtype", "shape")

    def __init__(self, data):
        self.data = data
        self.shape = tuple(data.shape[1:])
        self.device, self.dtype = array_meta(data)  # (as a DeviceArray has them: meta() reads)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getattr__(self, name):
        raise Unbatchable(f"a batched gradient's {name!r}")

    def __array__(self, *args, **kwargs):
        raise Unbatchable("a batched gradient as a NumPy array")

    def __getitem__(self, index):
        raise Unbatchable("indexing a batched gradient outside the kernel contract")

    def __len__(self):
        raise Unbatchable("len() of a batched gradient")


def _is_array(x) -> bool:
    return isinstance(x, BatchedArray) or (hasattr(x, "shape") and not isinstance(x, tuple))


class Batched:
    """The kernel contract over ``BatchedArray`` operands of batch size ``size``, on backend
    ``k`` (Note [Batched gradients])."""

    def __init__(self, k, size: int):
        self.k, self.size = k, size

    # -- the batch's own arrays ------------------------------------------------------------

    def _lined_up(self, x, nd: int):
        """A batched operand's data with unit dims after the batch dim up to ``nd`` dims per
        example; other operands as they are."""
        if not isinstance(x, BatchedArray):
            return x
        if x.ndim >= nd:
            return x.data
        return as_shape(self.k, x.data, (self.size,) + (1,) * (nd - x.ndim) + x.shape)

    def unbatch(self, a):
        """A rule's result as a (B, *shape) array: a batched one's data, or a result that is
        the same for every entry broadcast to the batch."""
        if isinstance(a, BatchedArray):
            return a.data
        k = self.k
        return k.contiguous(k.expand(a, (self.size,) + tuple(a.shape)))

    def _elementwise(self, name, fn, args, kwargs):
        out = kwargs.get("out")
        if out is not None:  # (an in-place op: the result is computed, then written in)
            if not isinstance(out, BatchedArray):
                raise Unbatchable(f"{name} of a batched value into an unbatched array")
            kwargs = {key: v for key, v in kwargs.items() if key != "out"}
            _copy_(self, self.k.copy_, out, self._elementwise(name, fn, args, kwargs))
            return out
        nd = max(len(a.shape) for a in args if _is_array(a))
        lined = [self._lined_up(a, nd) for a in args]
        if name == "binary" and args[0].endswith("_backward"):
            # the fused derivative kernels take operands of one shape: the others expanded
            shape = max((a.data.shape for a in args if isinstance(a, BatchedArray)), key=len)
            lined = [a if isinstance(b, (BatchedArray, str)) or not _is_array(b)
                     else self.k.expand(a, shape) for a, b in zip(lined, args)]
        return BatchedArray(fn(*lined, **kwargs))

    # A new array a rule makes is given to every entry: rules fill them in place with
    # gradients (a slice's backward copies g into zeros), which one shared array cannot take.
    def full(self, shape, value, dtype, device=None):
        return BatchedArray(self.k.full((self.size,) + tuple(shape), value, dtype, device))

    def empty(self, shape, dtype, device=None):
        return BatchedArray(self.k.empty((self.size,) + tuple(shape), dtype, device))

    # -- the fallback: once per batch entry ----------------------------------------------

    def _each(self, fn, args, kwargs):
        k = self.k
        rows = []
        for i in range(self.size):
            row = [k.getitem(a.data, (i,)) if isinstance(a, BatchedArray) else a for a in args]
            rows.append(fn(*row, **kwargs))
        return self._stack(rows)

    def _stack(self, rows):
        first = rows[0]
        if first is None:
            return None
        if type(first) is tuple:
            return tuple(self._stack([r[j] for r in rows]) for j in range(len(first)))
        if not _is_array(first):  # a plain value (a shape, a stride): the same for all
            if any(r != first for r in rows[1:]):
                raise Unbatchable("a contract function gave a different value per entry")
            return first
        k = self.k
        dev, dt = array_meta(first)
        out = k.empty((self.size,) + tuple(first.shape), dt, dev)
        for i, r in enumerate(rows):
            k.copy_(k.getitem(out, (i,)), r)
        return BatchedArray(out)

    def __getattr__(self, name):
        fn = getattr(self.k, name)

        def run(*args, **kwargs):
            if not any(isinstance(a, BatchedArray) for a in args):
                if name == "cat" and any(isinstance(a, BatchedArray) for a in args[0]):
                    return _cat(self, fn, *args)  # (its arrays come as one list)
                return fn(*args, **kwargs)
            if name.endswith("_") and not isinstance(args[0], BatchedArray):
                # (batched values written into one unbatched array: each entry needs its own)
                raise Unbatchable(f"{name} of a batched value into an unbatched array")
            if name in _ELEMENTWISE:
                return self._elementwise(name, fn, args, kwargs)
            rule = _RULES.get(name)
            if rule is not None:
                return rule(self, fn, *args, **kwargs)
            return self._each(fn, args, kwargs)

        run.__name__ = name
        return run


_ELEMENTWISE = frozenset((
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "gt", "ge", "lt", "le", "eq", "ne",
    "neg", "exp", "log", "relu", "sqrt", "where", "unary", "binary", "astype", "contiguous",
    "conj", "real", "imag",
))


def _shifted(dims) -> tuple:
    return tuple(d + 1 for d in dims)


def _reduction(kb, fn, a, dims, *rest, **kwargs):
    """sum(a, dims, keepdim), reduce(op, ...) and the like: the dims past the batch dim."""
    if not isinstance(a, BatchedArray):
        return kb._each(fn, (a, dims, *rest), kwargs)
    return BatchedArray(fn(a.data, _shifted(dims), *rest, **kwargs))


def _with_op(rule):
    """A rule for functions whose first argument names the op (``reduce(op, a, ...)``)."""
    def run(kb, fn, op, *args, **kwargs):
        return rule(kb, lambda *a, **kw: fn(op, *a, **kw), *args, **kwargs)
    return run


def _along(kb, fn, a, dim, *rest, **kwargs):
    """softmax(a, dim, log), cumsum(a, dim, reverse): ``dim`` past the batch dim."""
    if not isinstance(a, BatchedArray):
        return kb._each(fn, (a, dim, *rest), kwargs)
    return BatchedArray(fn(a.data, dim + 1, *rest, **kwargs))


def _view(kb, fn, a, shape):
    out = fn(a.data, (kb.size,) + tuple(shape))
    return None if out is None else BatchedArray(out)


def _permute(kb, fn, a, dims):
    return BatchedArray(fn(a.data, (0,) + _shifted(dims)))


def _expand(kb, fn, a, shape):
    shape = tuple(shape)
    return BatchedArray(fn(kb._lined_up(a, len(shape)), (kb.size,) + shape))


def _getitem(kb, fn, a, index):
    # (the contract's index is a normalised tuple of ints, slices and None: basic indexing)
    return BatchedArray(fn(a.data, (slice(None),) + tuple(index)))


def _copy_(kb, fn, dst, src):
    return fn(dst.data, kb._lined_up(src, dst.ndim))


def _cat(kb, fn, arrays, dim):
    """cat(arrays, dim): the unbatched arrays given to every entry, joined past the batch
    dim."""
    k = kb.k
    return BatchedArray(fn([a.data if isinstance(a, BatchedArray)
                            else k.expand(a, (kb.size,) + tuple(a.shape)) for a in arrays],
                           dim + 1))


def _matmul(kb, fn, a, b):
    """2-D ``a @ b`` per entry: a batched ``a`` folds the batch into its rows (one GEMM); a
    batched ``b`` makes it one ``bmm`` with ``a`` broadcast."""
    k, B = kb.k, kb.size
    if isinstance(a, BatchedArray) and not isinstance(b, BatchedArray):
        (n, m), p = a.shape, b.shape[1]
        rows = fn(as_shape(k, a.data, (B * n, m)), b)
        return BatchedArray(as_shape(k, rows, (B, n, p)))
    a3 = a.data if isinstance(a, BatchedArray) else k.expand(a, (B,) + tuple(a.shape))
    b3 = b.data if isinstance(b, BatchedArray) else k.expand(b, (B,) + tuple(b.shape))
    return BatchedArray(k.bmm(a3, b3))


def _bmm(kb, fn, a, b):
    """(s, n, m) @ (s, m, p) per entry: the batch folded into ``bmm``'s own batch."""
    k, B = kb.k, kb.size

    def folded(x):
        if not isinstance(x, BatchedArray):
            x = BatchedArray(k.expand(x, (B,) + tuple(x.shape)))
        s, r, c = x.shape
        return as_shape(k, x.data, (B * s, r, c))

    out = fn(folded(a), folded(b))
    return BatchedArray(as_shape(k, out, (B, a.shape[0]) + tuple(out.shape[1:])))


def _strides(kb, fn, a):
    return tuple(fn(a.data)[1:])


def _storage_offset(kb, fn, a):
    return fn(a.data)  # (entry 0's; entry i's is i batch strides further)


def _as_strided(kb, fn, a, shape, strides, offset):
    """Offsets count from the start of the storage, so one call per entry would put every
    entry at entry 0's memory: the batch becomes one more strided dim instead."""
    step = kb.k.strides(a.data)[0]
    return BatchedArray(fn(a.data, (kb.size,) + tuple(shape), (step,) + tuple(strides), offset))


_RULES = {
    "sum": _reduction, "reduce": _with_op(_reduction), "softmax": _along, "cumsum": _along,
    "view": _view, "permute": _permute, "expand": _expand, "getitem": _getitem,
    "copy_": _copy_, "matmul": _matmul, "bmm": _bmm, "strides": _strides,
    "storage_offset": _storage_offset, "as_strided": _as_strided,
}


# -- nodes -----------------------------------------------------------------------------------

def apply_node(node, grads: list, size: int, create_graph: bool) -> tuple:
    """``node``'s input gradients for a batch of ``size`` output gradients (each (B, *shape)
    or None): its rule run once on the batch where it can be, else once per entry."""
    if not create_graph and isinstance(node, Primitive) and type(node).vjp is not None:
        g0 = next(g for g in grads if g is not None)
        kb = Batched(backend(g0._device), size)
        try:
            outs = node.vjp_on_arrays(kb, *[None if g is None else BatchedArray(g._data)
                                            for g in grads])
        except Unbatchable:
            pass
        else:
            return tuple([None if o is None else make(kb.unbatch(o)) for o in outs])
    return _per_entry(node, grads, size)


def _per_entry(node, grads: list, size: int) -> tuple:
    from .ops.shape import stack
    rows = [node.apply(*[None if g is None else g[i] for g in grads]) for i in range(size)]
    outs = []
    for j in range(len(rows[0])):
        col = [r[j] for r in rows]
        known = next((c for c in col if c is not None), None)
        if known is None:
            outs.append(None)
            continue
        outs.append(stack([known.new_zeros(known.shape) if c is None else c for c in col]))
    return tuple(outs)


def check_batched_outputs(outputs: tuple, grads: tuple) -> int:
    """The batch size of ``grad(..., is_grads_batched=True)``'s ``grad_outputs``, checked as
    PyTorch checks them (the first dim of each is the batch; the rest is its output's
    shape)."""
    sizes = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        if g is None:
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"grad: gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        shape = getattr(t, "shape", None)
        if g.ndim == 0 or (shape is not None and tuple(g.shape[1:]) != tuple(shape)):
            raise RuntimeError(
                f"If `is_grads_batched=True`, we interpret the first dimension of each "
                f"grad_output as the batch dimension. The sizes of the remaining dimensions "
                f"are expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                f"shape of {shape}. If you only want some tensors in `grad_output` to be "
                f"considered batched, consider using vmap.")
        sizes.append(g.shape[0])
    if len(set(sizes)) > 1:
        # (PyTorch's vmap over the batch raises this, naming every batched size in order)
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    size = sizes[0] if sizes else None
    if size is None:
        raise RuntimeError("grad(is_grads_batched=True) needs grad_outputs: the batch of "
                           "vectors, one (B, *output.shape) tensor per output")
    return size


# -- batched forward AD ------------------------------------------------------------------------

# Note [Batched forward AD]
#   Forward AD's counterpart of the above (PyTorch's vmap over jvp, which gradcheck's
#   ``check_batched_forward_grad`` and ``jacobian(strategy="forward-mode", vectorize=True)``
#   use): a tangent may be a ``BatchedTensor``, a Tensor whose data is a ``BatchedArray``
#   (B tangents of one primal), so that ONE forward pass computes B Jacobian-vector products.
#
#   - Primals are never batched: the primal ops run as always. When an op's input tangents
#     include a batched one, dispatch runs its ``jvp`` rule under a ``BatchLevel`` (a marker
#     in ``dispatch.dual_levels``, where the rules' ops would otherwise see no level): every
#     op the rule applies then goes through ``apply_forward``, which runs the op's forward
#     ONCE on the ``Batched`` contract (its functions' batching rules, above) when an input
#     is batched, and as usual otherwise. A custom Function's ``jvp`` runs so too: once, on
#     the batched tangents;
#   - a ``BatchedTensor`` looks like one example (``shape``, ``stride()``, ``dim()``), as
#     the rules are written per example; its ``_k`` is the ``Batched`` contract, so Tensor
#     methods that go to the backend directly batch as well;
#   - an op whose forward reaches past the contract runs once per batch entry and its
#     results are stacked (``op_per_entry``), and a rule that uses a batched tangent outside
#     any op (reading its values) runs once per entry (``jvp_per_entry``): both are the
#     fallback, slower but right; the common rules never take it;
#   - ops on batched tangents record no history: batched tangents are a forward-mode tool
#     (reverse mode over them, which PyTorch's vmap would allow, is not supported).


class BatchedTensor(Tensor):
    """A batch of tangents of one shape seen as one (Note [Batched forward AD]): its data is
    a ``BatchedArray``. Made by ``batch``; ``unbatch`` gives the (B, *shape) Tensor back."""

    __slots__ = ()
    __torch_function__ = _disabled_torch_function_impl

    @property
    def _k(self):
        return Batched(backend(self._device), self._data.data.shape[0])

    def __repr__(self) -> str:
        return f"BatchedTensor(batch_size={self._data.data.shape[0]}, {make(self._data.data)!r})"

    # (the Tensors made from a batched one's data outside the ops stay batched)
    def detach(self) -> BatchedTensor:
        return _batched_class(Tensor.detach(self))

    data = property(lambda self: _batched_class(Tensor.data.fget(self)), Tensor.data.fset)

    def _host_array(self):  # (numpy(), item(), tolist(): one value per entry)
        raise Unbatchable("the values of a batch of tangents")


def _batched_class(t: Tensor) -> Tensor:
    t.__class__ = BatchedTensor
    return t


def _wrap(a) -> Tensor:
    """A forward's result as a Tensor: batched when the array is."""
    return _batched_class(make(a)) if type(a) is BatchedArray else make(a)


def batch(stacked: Tensor) -> BatchedTensor:
    """``stacked`` (B, *shape) as B tangents of ``shape``, sharing its memory."""
    if stacked.ndim == 0:
        raise RuntimeError("a batch of tangents needs a leading batch dimension")
    return _wrap(BatchedArray(stacked._data))


def unbatch(t: Tensor, size: int) -> Tensor:
    """A tangent as a (B, *shape) Tensor: a batched one's data, an unbatched one (the same
    for every entry) expanded to the batch."""
    if type(t._data) is BatchedArray:
        return make(t._data.data)
    return t.expand((size,) + tuple(t.shape))


def entry(t, i: int):
    """Entry ``i`` of a batched tangent (a view); anything else as it is."""
    if t is None or type(t._data) is not BatchedArray:
        return t
    return make(backend(t._device).getitem(t._data.data, (i,)))


def with_layout(like: Tensor, tangent: Tensor, copy: bool = False) -> BatchedTensor:
    """``tangent`` with each entry laid out as ``like`` is (strides, storage offset): as-is if
    it is so already (and not ``copy``), else a copy in a (B, storage size) buffer whose row i
    holds entry i, so that ``as_strided`` of the batch (one more strided dim:
    ``Batched.as_strided``) reads each entry where it reads ``like``. make_dual's rule for a
    batched tangent."""
    from .storage import storage_numel
    data = tangent._data.data
    k, size = backend(tangent._device), data.shape[0]
    n = storage_numel(like)
    strides, offset = tuple(like.stride()), like.storage_offset()
    if not copy and k.strides(data) == (n,) + strides and k.storage_offset(data) == offset:
        return tangent
    buf = k.empty((size, n), tangent._dtype, tangent._device)
    out = k.as_strided(buf, (size,) + tuple(like.shape), (n,) + strides, offset)
    k.copy_(out, data)
    return _wrap(BatchedArray(out))


def apply_forward(op, inputs: tuple, params: tuple, size: int):
    """Primitive ``op`` applied inside a batched jvp rule: its forward once on the ``Batched``
    contract when an input is batched (no history: Note [Batched forward AD]), else as
    usual."""
    for t in inputs:
        if type(t._data) is BatchedArray:
            break
    else:
        return _apply(op, inputs, params)
    kb = Batched(backend(inputs[0]._device), size)
    if op.keep_params:  # (Note [Saved indices]: the forward takes the index's array)
        params = _keep_params(op, params)[0]
    try:
        out = op.forward(SINK, kb, *[t._data for t in inputs], *params)
    except Unbatchable:
        return op_per_entry(op, inputs, params, size)
    return tuple([_wrap(o) for o in out]) if type(out) is tuple else _wrap(out)


def apply_inplace_forward(op, target: Tensor, others: tuple, params: tuple, size: int) -> None:
    """An in-place ``op`` inside a batched jvp rule (``apply_forward``'s in-place twin). A
    batched result written into an unbatched target raises ``Unbatchable``: the rule then
    runs once per entry."""
    inputs = (target,) + others
    if not any(type(t._data) is BatchedArray for t in inputs):
        _apply_inplace(op, target, others, params)
        return
    if op.keep_params:
        params = _keep_params(op, params)[0]
    _forward_into(op, SINK, Batched(backend(target._device), size), inputs, params)
    target._vc[0] += 1


def op_per_entry(op, inputs: tuple, params: tuple, size: int):
    """The fallback for one op: run on each batch entry, the results stacked."""
    rows = [_apply(op, tuple([entry(t, i) for t in inputs]), params) for i in range(size)]
    return _stack_tensors(rows, size)


def jvp_per_entry(run, tangents: tuple, size: int) -> tuple:
    """The fallback for a whole jvp rule: ``run(tangents)`` (the rule, returning a tuple of
    tangents) once per batch entry, each output's tangents stacked."""
    rows = [run(tuple([entry(t, i) for t in tangents])) for i in range(size)]
    return tuple([_stack_tensors([r[j] for r in rows], size) for j in range(len(rows[0]))])


def _stack_tensors(rows: list, size: int):
    """Per-entry results (Tensors, tuples of them, or None) stacked into batched ones; an
    entry's None is a zero when another entry has a value."""
    first = next((r for r in rows if r is not None), None)
    if first is None:
        return None
    if type(first) is tuple:
        return tuple(_stack_tensors([None if r is None else r[j] for r in rows], size)
                     for j in range(len(first)))
    kb = Batched(backend(first._device), size)
    zero = None
    arrays = []
    for r in rows:
        if r is None:
            if zero is None:
                zero = kb.k.full(tuple(first.shape), 0, first._dtype, first._device)
            arrays.append(zero)
        else:
            arrays.append(r._data)
    return _wrap(kb._stack(arrays))
