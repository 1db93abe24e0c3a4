"""Indexing by tensors: advanced ``__getitem__``/``__setitem__``, ``index_put_``, ``gather``,
``scatter``/``scatter_add``, ``index_select``, ``masked_fill``, ``nonzero``, ``masked_select``.

Advanced indexing follows PyTorch: ints, slices, None and Ellipsis are applied first as a view
(views.py), then the index tensors (bool masks become their ``nonzero`` columns) index that
view through the backend's ``index``, NumPy's placement rules for the indexed dims. Its rule is
``index_put`` with ``accumulate=True`` into zeros, so duplicate indices accumulate; and
``index_put``'s rules are ``index`` again, so every order differentiates. ``gather`` and
``scatter_add`` are each other's rules the same way.

Index tensors are checked on the way in: int64 (int32/uint8 converted, float refused), in
range for their dim (``IndexError: __getitem__: index 5 is out of bounds for dimension 0 with
size 3``), negative ones wrapped where PyTorch allows them. The check reads two numbers back from
the device (the smallest and largest index): the price of a clear error instead of a device
assertion.
"""

from __future__ import annotations

import numbers
import operator
import warnings

import numpy as np

from ..registry import OpInfo, with_jvp
from ...kernels import backend
from ...runtime import dtype as dtypes
from ..dispatch import (Primitive, apply, apply_inplace, array_of, as_shape, call,
                        expanded_dims, linear_jvp, meta, sum_to)
from ..dispatch import zeros as _zeros
from .. import dispatch as _dispatch
from ..state import state
from ..tensor import Tensor, array_meta, wrap_dim
from .creation import checked_scalar, full, tensor, zeros
from ..checks import (check_devices_match, check_index_dtype, check_same_device, checked_index,
                      index_out_of_range, out_of_bounds)
from .elementwise import broadcast_shapes
from .pointwise import fill_
from .views import SliceScatterBackward0, is_basic_index, list_as_tuple
from .views import getitem as _basic_getitem


_Number = numbers.Number
_INT = dtypes._INT  # (a dtype's promotion category: the integer types)
# (int16 and int8 refused, as PyTorch's "long, int, byte or bool"; uint8 is a mask)
_INDEX_DTYPES = (dtypes.int64, dtypes.int32, dtypes.uint8)
_UINT8_MASK = ("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
               "instead.")


# -- index checks ---------------------------------------------------------------------------------

def _index_tensor(ix, device, op: str) -> Tensor:
    """An advanced index tensor as an index tensor on ``device``: PyTorch takes one on the
    indexed tensor's device or on the CPU (moved over), and refuses any other device."""
    dt = ix._dtype
    if dt is not dtypes.bool and dt not in _INDEX_DTYPES:
        raise IndexError(f"{op}: tensors used as indices must be long, int, byte or bool "
                         f"tensors (got {dt})")
    if dt is dtypes.uint8:
        warnings.warn(_UINT8_MASK, UserWarning, stacklevel=4)
    if ix._device is device:
        return ix
    if ix._device.type != "cpu":
        raise IndexError(f"indices should be either on cpu or on the same device as the indexed "
                         f"tensor ({device})")
    return ix.to(device)


def _host_index(ix, op: str) -> np.ndarray:
    """A list / NumPy array / Python bool index as a NumPy int64 or bool array. A list of
    floats is truncated to int64, as PyTorch's (it reads an index list as a long tensor); a
    float NumPy array is refused, as PyTorch's (a float tensor)."""
    try:
        arr = np.asarray(ix)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype == object or arr.dtype.kind not in "biuf" or (
            arr.dtype.kind == "f" and arr.size and not isinstance(ix, list)):
        if arr is not None and arr.dtype.kind in "US":
            raise _string_index(op, "str" if arr.dtype.kind == "U" else "bytes")
        what = type(ix).__name__ if arr is None or arr.dtype == object else \
            f"{type(ix).__name__} of {arr.dtype}"
        raise IndexError(f"{op}: only integers, slices (`:`), ellipsis (`...`), None and long "
                         f"or byte Variables are valid indices (got {what})")
    if arr.dtype.kind == "b":
        return arr
    return arr.astype(np.int64, copy=False)  # x[[]] (a float64 empty array) indexes nothing


def _string_index(op: str, kind: str) -> TypeError:
    """PyTorch's error for a string in an index (``x['a']``, ``x[[0, 'a']]``): it reads one
    as a sequence to make an index tensor of, and refuses its data type (a TypeError, not
    the IndexError of other objects)."""
    return TypeError(f"{op}: invalid data type '{kind}' in the index (only integers, slices "
                     f"(`:`), ellipsis (`...`), None and integer or bool tensors index)")


def _type_name(v) -> str:
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _host_checked(arr: np.ndarray, size: int, dim: int, op: str) -> np.ndarray:
    """A host int64 index checked against ``size`` and wrapped, before it is uploaded."""
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if hi >= size or lo < -size:
            raise IndexError(out_of_bounds(hi if hi >= size else lo, dim, size, op))
        if lo < 0:
            arr = np.where(arr < 0, arr + size, arr)
    return arr


# -- parsing an index ---------------------------------------------------------------------------

def _parse(x: Tensor, index, op: str):
    """Splits ``index`` into (basic index applied as a view, [(view dim, index)]): each index
    an int64 tensor (or backend array) already in range."""
    items = index if isinstance(index, tuple) else (index,)
    conv = []
    for ix in items:
        if ix is None or ix is Ellipsis or isinstance(ix, slice):
            conv.append(ix)
        elif isinstance(ix, Tensor):
            conv.append(_index_tensor(ix, x._device, op))
        elif isinstance(ix, (bool, np.bool_, list, np.ndarray)):
            conv.append(_host_index(ix, op))
        else:
            try:
                conv.append(operator.index(ix))
            except TypeError:
                if isinstance(ix, (str, bytes)):
                    raise _string_index(op, type(ix).__name__) from None
                raise IndexError(f"{op}: only integers, slices (`:`), ellipsis (`...`), None and "
                                 f"long or byte Variables are valid indices (got "
                                 f"{_type_name(ix)})") from None
    consumed = 0
    for ix in conv:
        if isinstance(ix, (Tensor, np.ndarray)):
            consumed += ix.ndim if _is_mask(ix) else 1
        elif ix is not None and ix is not Ellipsis:
            consumed += 1
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    basic, adv = [], []
    d_in = d_out = 0
    seen_ellipsis = False
    dev = x._device
    k = x._k
    for ix in conv:
        if ix is Ellipsis:
            if seen_ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            n = x.ndim - consumed
            basic.extend([slice(None)] * n)
            d_in += n
            d_out += n
        elif ix is None:
            basic.append(None)
            d_out += 1
        elif isinstance(ix, slice):
            basic.append(ix)
            d_in += 1
            d_out += 1
        elif isinstance(ix, (Tensor, np.ndarray)) and _is_mask(ix):
            if ix.ndim == 0:
                # x[True]: a new dim of size 1, x[False]: of size 0; a copy either way, as
                # PyTorch's (the new dim indexed by [0] or by nothing)
                basic.append(None)
                n = 1 if bool(ix.item()) else 0
                adv.append((d_out, zeros((n,), dtype=dtypes.int64, device=dev)._data))
                d_out += 1
                continue
            for j in range(ix.ndim):
                if ix.shape[j] != x.shape[d_in + j]:
                    raise IndexError(f"The shape of the mask {list(ix.shape)} at index {j} "
                                     f"does not match the shape of the indexed tensor "
                                     f"{list(x.shape)} at index {d_in + j}")
            if isinstance(ix, np.ndarray):
                cols = [tensor(c, device=dev)._data for c in np.nonzero(ix)]
            else:
                mask = ix if ix._dtype is dtypes.bool else ix.to(dtypes.bool)
                nz = apply(NonzeroOp, (mask,))._data  # in range by construction
                cols = [k.getitem(nz, (slice(None), j)) for j in range(ix.ndim)]
            for c in cols:
                basic.append(slice(None))
                adv.append((d_out, c))
                d_in += 1
                d_out += 1
        elif isinstance(ix, np.ndarray):
            arr = _host_checked(ix, x.shape[d_in], d_in, op)
            basic.append(slice(None))
            adv.append((d_out, tensor(arr, device=dev)._data))
            d_in += 1
            d_out += 1
        elif isinstance(ix, Tensor):
            basic.append(slice(None))
            # (the tensor, so that the node saves it: Note [Saved indices])
            adv.append((d_out, checked_index(ix, x.shape[d_in], d_in, op,
                                             allow_negative=True)))
            d_in += 1
            d_out += 1
        else:  # an int: a basic select, as PyTorch (not a NumPy advanced index)
            basic.append(ix)
            d_in += 1
    return tuple(basic), adv


def _is_mask(ix) -> bool:
    if isinstance(ix, np.ndarray):
        return ix.dtype == np.bool_
    return ix._dtype is dtypes.bool or ix._dtype is dtypes.uint8


def _prepare(x: Tensor, index, op: str = "__getitem__"):
    """(view to index, indices tuple of int64 tensors or backend arrays / None) for an
    advanced index."""
    basic, adv = _parse(x, index, op)
    if all(isinstance(b, slice) and b == slice(None) for b in basic):
        view = x
    else:
        view = _basic_getitem(x, basic)
    if not adv:  # only True among the "advanced" items: a plain view
        return view, None
    last = max(d for d, _ in adv)
    indices: list = [None] * (last + 1)
    shapes = []
    for d, a in adv:
        indices[d] = a
        shapes.append(tuple(a.shape))
    try:
        broadcast_shapes(*shapes)
    except RuntimeError:
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together "
                         f"with shapes {', '.join(str(list(s)) for s in shapes)}") from None
    return view, tuple(indices)


# -- index / index_put primitives -----------------------------------------------------------------

class IndexBackward0(Primitive):
    """x[indices]: the gradient is index_put into zeros with accumulate (duplicates add)."""

    __slots__ = ()
    op_name = "index"
    jvp = linear_jvp()
    keep_params = (0,)  # the indices, one saved tensor each (Note [Saved indices])

    @staticmethod
    def forward(ctx, k, x, indices):
        ctx.in_shape = x.shape
        return k.index(x, indices)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return call(k, IndexPutBackward0, (_zeros(k, ctx.in_shape, g), g), tuple(saved), True)


IndexSelectBackward0 = IndexBackward0.variant("IndexSelectBackward0", "index_select")


class IndexPutBackward0(Primitive):
    """x[indices] = v (or += with accumulate): x's gradient is g, zeroed at the indices unless
    accumulating; v's is g[indices] (summed back to v's shape)."""

    __slots__ = ()
    op_name = "index_put"
    jvp = linear_jvp()
    keep_params = (0,)  # the indices (Note [Saved indices])
    writes_out = True
    expanded_target = ("Use of index_put_ on expanded tensors is deprecated. Please clone() the "
                       "tensor before performing this operation. This also applies to advanced "
                       "indexing e.g. tensor[indices] = tensor")

    @staticmethod
    def forward(ctx, k, x, v, indices, accumulate, out=None):
        # v's shape, not ``broadcasts``: that sums back only when x's and v's shapes differ,
        # but v broadcasts to x[indices], not to x (y[[0, 0]] = v, with x and v both (1,))
        ctx.accumulate, ctx.v_shape = accumulate, v.shape
        if out is None:
            out = k.astype(x, array_meta(x)[1])
        k.index_put_(out, indices, v, accumulate)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        need_x, need_v = ctx.needs_input_grad
        indices = tuple(saved)
        gx = gv = None
        if need_x:
            if ctx.accumulate:
                gx = g
            else:
                gx = call(k, IndexPutBackward0, (g, _zeros(k, (), g)), indices, False)
        if need_v:
            gv = call(k, IndexBackward0, (g,), indices)
            if tuple(gv.shape) != tuple(ctx.v_shape):
                gv = sum_to(k, gv, ctx.v_shape)
        return gx, gv


def _selects(index):
    """``index`` with each 0-d integer tensor (uint8's a mask) as its int: PyTorch indexes by
    one as by the number, a select (``x[t]`` a view, ``x[t] = v`` a copy that casts ``v``),
    not as an index tensor (a copy; its index_put refuses another dtype). ``index`` itself
    when it holds none."""
    items = index if type(index) is tuple else (index,)
    if not any(_is_select(ix) for ix in items):
        return index
    items = tuple(int(ix.item()) if _is_select(ix) else ix for ix in items)
    return items if type(index) is tuple else items[0]


def _is_select(ix) -> bool:
    return isinstance(ix, Tensor) and ix.ndim == 0 and ix._dtype._category == _INT \
        and ix._dtype is not dtypes.uint8


def advanced_getitem(x: Tensor, index) -> Tensor:
    """``x[index]`` with index tensors, lists or bool masks (a copy, not a view)."""
    selects = _selects(index)
    if selects is not index:
        index = selects
        if is_basic_index(index):
            return _basic_getitem(x, index)
    view, indices = _prepare(x, index)
    return view if indices is None else apply(IndexBackward0, (view,), indices)


def _value_tensor(x: Tensor, value, op: str, index=None) -> Tensor:
    """``value`` as a tensor of x's dtype and device. A tensor of another dtype keeps it, for
    ``_index_put_inplace`` to refuse (after the shape check, as PyTorch's index_put), unless
    ``index`` is None (a basic-index copy, which casts) or it may be a masked fill (one
    element written through one bool mask)."""
    if isinstance(value, Tensor):
        if value._device is not x._device:
            value = value.to(x._device)
        if value._dtype is x._dtype or (
                index is not None and not (value.numel() == 1 and _mask_only(index))):
            return value
        return value.to(x._dtype)
    if isinstance(value, _Number):
        return full((), value, dtype=x._dtype, device=x._device)
    try:
        return tensor(value, dtype=x._dtype, device=x._device)
    except TypeError:
        raise TypeError(f"{op}: can't assign a {type(value).__name__} to a tensor") from None


def _mask_only(index) -> bool:
    """Whether the only index that is not an int, slice, None or Ellipsis is a bool mask."""
    items = index if isinstance(index, tuple) else (index,)
    adv = [ix for ix in items if not is_basic_index(ix)]
    if len(adv) != 1:
        return False
    ix = adv[0]
    if isinstance(ix, Tensor):
        return ix._dtype is dtypes.bool or ix._dtype is dtypes.uint8
    return isinstance(ix, (list, np.ndarray)) and np.asarray(ix).dtype == np.bool_


def _strip_leading_ones(v):
    """PyTorch's setitem drops a value's leading size-1 dims (x[0] = ones(1, 4) for a row)."""
    if isinstance(v, Tensor) and v.ndim and v.shape[0] == 1:
        shape = tuple(v.shape)
        n = 0
        while n < len(shape) and shape[n] == 1:
            n += 1
        return v.reshape(shape[n:])
    return v


def setitem(x: Tensor, index, value) -> None:
    """``x[index] = value``: basic indices copy into a view (``copy_``); index tensors and masks
    go through ``index_put_``; a full-shape bool mask with a scalar is ``masked_fill_``."""
    value = _strip_leading_ones(value)
    if index is False:  # PyTorch's early return: nothing written, no history, value unused
        if not isinstance(value, Tensor):
            _value_tensor(x, value, "setitem")  # (its type is still checked)
        return
    if type(index) is list:
        index = list_as_tuple(index)
    basic = is_basic_index(index)
    if not basic:
        selects = _selects(index)
        if selects is not index:
            index = selects
            basic = is_basic_index(index)
    if basic:
        view = _basic_getitem(x, index)
        if isinstance(value, _Number):
            if view._requires_grad and state.grad_enabled:
                # (PyTorch copies the number as a 0-d tensor: the CopySlices node has an edge
                # (None) for it, ``x[0] = 1.0; x.grad_fn.next_functions``)
                view.copy_(full((), value, dtype=x._dtype, device=x._device))
                return
            fill_(view, value)
        else:
            if not isinstance(value, Tensor):
                value = _value_tensor(x, value, "setitem")
            if value.shape != view.shape:
                _check_expand(tuple(view.shape), tuple(value.shape))
            view.copy_(value)
        return
    if isinstance(index, Tensor) and index._dtype is dtypes.bool \
            and tuple(index.shape) == tuple(x.shape) and (
            isinstance(value, _Number) or (isinstance(value, Tensor) and value.ndim == 0)):
        # no nonzero (no device sync) for x[mask] = scalar; a number wrapped in a 0-d tensor
        # as PyTorch's (its IndexPutBackward0 has the value's edge, None)
        if not isinstance(value, Tensor):
            value = _value_tensor(x, value, "__setitem__")
        _masked_fill_inplace(x, index, value, _MaskedIndexPutBackward0)
        return
    view, indices = _prepare(x, index, "__setitem__")
    v = _value_tensor(x, value, "__setitem__", index)
    if indices is None:
        view.copy_(v)
        return
    _index_put_inplace(view, indices, v, False, "__setitem__")


def _check_expand(target: tuple, shape: tuple) -> None:
    """PyTorch's errors for a value of ``shape`` that does not expand to ``target`` (the
    basic-index ``x[...] = v``, a copy into the view)."""
    if len(shape) > len(target):
        raise RuntimeError(f"expand(Tensor{{{list(shape)}}}, size={list(target)}): the number "
                           f"of sizes provided ({len(target)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for j, n in enumerate(shape):
        if n != 1 and n != target[lead + j]:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + j]}) must "
                               f"match the existing size ({n}) at non-singleton dimension "
                               f"{lead + j}.  Target sizes: {list(target)}.  Tensor sizes: "
                               f"{list(shape)}")


def _check_value_dtype(x: Tensor, v: Tensor, op: str) -> None:
    if v._dtype is not x._dtype:
        raise RuntimeError(f"{op}: Index put requires the source and destination dtypes match, "
                           f"got {x._dtype} for the destination and {v._dtype} for the source.")


def _check_value_shape(view: Tensor, indices, v: Tensor) -> None:
    target = _indexed_shape(view, indices)
    try:
        ok = broadcast_shapes(target, tuple(v.shape)) == target
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(target)}")


def _index_put_inplace(view: Tensor, indices, v: Tensor, accumulate: bool, op: str) -> Tensor:
    _check_value_shape(view, indices, v)
    _check_value_dtype(view, v, op)
    return apply_inplace(IndexPutBackward0, view, (v,), indices, accumulate)


def _indexed_shape(view: Tensor, indices) -> tuple:
    """The shape of view[indices] (NumPy's placement rules), without computing it."""
    arrays = [(d, a) for d, a in enumerate(indices) if a is not None]
    bshape = broadcast_shapes(*(tuple(a.shape) for _, a in arrays))
    dims = [d for d, _ in arrays]
    shape = list(view.shape)
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    rest_before = shape[:dims[0]] if adjacent else []
    rest = [n for d, n in enumerate(shape) if d not in dims]
    if adjacent:
        return tuple(rest_before) + bshape + tuple(shape[dims[-1] + 1:])
    return bshape + tuple(rest)


def _indices_arg(self: Tensor, indices, op: str):
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): argument 'indices' must be a tuple of Tensors")
    idx = tuple(slice(None) if i is None else i for i in indices)
    view, idx = _prepare(self, idx, op)
    if idx is None:  # (PyTorch fails on this too, with an error about an undefined mask)
        raise RuntimeError(f"{op}(): expected at least one index tensor in indices")
    return view, idx


def index_put_(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """``self[indices] = values`` in place (``+=`` with duplicates summed if ``accumulate``);
    ``indices`` is a tuple of index tensors, one per leading dim."""
    view, idx = _indices_arg(self, indices, "index_put_")
    v = _value_tensor(self, values, "index_put_", tuple(indices))
    _index_put_inplace(view, idx, v, bool(accumulate), "index_put_")
    return self


def index_put(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Out-of-place ``index_put_``."""
    view, idx = _indices_arg(self, indices, "index_put")
    if view is not self:
        return index_put_(self.clone(), indices, values, accumulate)
    v = _value_tensor(self, values, "index_put", tuple(indices))
    _check_value_shape(self, idx, v)
    _check_value_dtype(self, v, "index_put")
    return apply(IndexPutBackward0, (self, v), idx, bool(accumulate))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries at ``index`` (a 1-D integer tensor) along ``dim``; a copy."""
    if not isinstance(index, Tensor):
        raise TypeError(f"index_select(): argument 'index' must be Tensor, not "
                        f"{type(index).__name__}")
    check_same_device(input, index, "index", "index_select")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    check_index_dtype(index, "index_select")
    if not input.ndim and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    x = input if input.ndim else input.reshape(1)
    d = wrap_dim(dim, x.ndim, "index_select", "dim", 1)
    # (PyTorch's CPU kernel words it by dim: embedding's message along dim 0, its gather's
    # beyond)
    idx = checked_index(index.reshape(-1), x.shape[d], d, "index_select", allow_negative=False,
                        error=index_out_of_range if d == 0 else lambda bad: RuntimeError(
                            f"INDICES element is out of DATA bounds, id={bad} "
                            f"axis_dim={x.shape[d]}"))
    out = apply(IndexSelectBackward0, (x,), (None,) * d + (idx,))
    return out if input.ndim else out.reshape(())  # PyTorch: a scalar stays a scalar


# -- gather / scatter -----------------------------------------------------------------------------

def _gather_checks(x: Tensor, dim: int, index: Tensor, op: str, src=None):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    check_same_device(x, index, "index", op)  # first, as in PyTorch (its dispatch wrapper)
    if isinstance(src, Tensor):
        check_same_device(x, src, "src", op)
    check_index_dtype(index, op)
    d = wrap_dim(dim, x.ndim, op, "dim", 1)
    if index.ndim != x.ndim and not (index.ndim <= 1 and x.ndim <= 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'self' if src is None else 'input'} tensor")
    xs, ixs = tuple(x.shape) or (1,), tuple(index.shape) or (1,)
    for j, (n, m) in enumerate(zip(xs, ixs)):
        if j != d and m > n:
            raise RuntimeError(f"Size does not match at dimension {j} expected index "
                               f"{list(index.shape)} to be smaller than self {list(x.shape)} "
                               f"apart from dimension {d}")
    if isinstance(src, Tensor):
        ss = tuple(src.shape) or (1,)
        if len(ss) != len(ixs) or any(m > n for n, m in zip(ss, ixs)):
            raise RuntimeError(f"Expected index {list(index.shape)} to be smaller than self "
                               f"{list(x.shape)} apart from dimension {d} and to be smaller "
                               f"size than src {list(src.shape)}")

    def error(bad):  # PyTorch's scatter/gather kernels: a RuntimeError
        return RuntimeError(out_of_bounds(bad, d, xs[d]))

    return d, checked_index(index, xs[d], d, op, allow_negative=False, error=error)


class GatherBackward0(Primitive):
    """out = x.gather(dim, index): the gradient is scatter_add of g into zeros."""

    __slots__ = ()
    op_name = "gather"
    jvp = linear_jvp()
    keep_params = (1,)  # the index (Note [Saved indices])

    @staticmethod
    def forward(ctx, k, x, dim, index):
        ctx.in_shape, ctx.dim = x.shape, dim
        return k.gather(x, dim, index)

    @staticmethod
    def vjp(ctx, k, saved, g):
        index, = saved
        return call(k, ScatterAddBackward0, (_zeros(k, ctx.in_shape, g), g), ctx.dim, index)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` (dim 0; likewise for every dim). The gradient is
    dense, or with ``sparse_grad=True`` a sparse COO tensor with one entry per element of
    ``index`` (autograd/sparse_ops.py, docs/sparse.md)."""
    d, idx = _gather_checks(input, dim, index, "gather")
    if sparse_grad:
        from ..sparse_ops import gather_sparse_grad
        return gather_sparse_grad(input, d, idx)
    return apply(GatherBackward0, (input,), d, idx)


def gather_backward(k, g, in_shape, dim: int, idx, keepdim: bool):
    """zeros(in_shape) with g written at idx (a backend array) along dim, on backend ``k``
    (the rule of value-selecting reductions: max/min along a dim)."""
    if not keepdim:
        shape = list(idx.shape)
        shape.insert(dim, 1)
        k_idx = backend(array_meta(idx)[0])  # (an array even when k is ops.traced)
        g, idx = as_shape(k, g, tuple(shape)), as_shape(k_idx, idx, tuple(shape))
    return call(k, ScatterBackward0, (_zeros(k, in_shape, g), g), dim, idx)


def _pad_to(k, g, shape):
    """g (index-shaped) placed at the start of zeros of ``shape`` (src may be larger)."""
    if tuple(g.shape) == tuple(shape):
        return g
    dev, dt = meta(g)
    return call(k, SliceScatterBackward0, (g,), tuple(shape),
                tuple(slice(0, n) for n in g.shape), dt, dev)


class ScatterBackward0(Primitive):
    """x.scatter(dim, index, src): x's gradient is g with the written places zeroed; src's
    is g gathered at index."""

    __slots__ = ()
    op_name = "scatter"
    jvp = linear_jvp()  # (scatter_add too: linear in self and src)
    writes_out = True
    keep_params = (1,)  # the index (Note [Saved indices])
    _accumulate = False

    @classmethod
    def forward(cls, ctx, k, x, src, dim, index, out=None):
        ctx.dim, ctx.src_shape = dim, src.shape
        if out is None:
            out = k.astype(x, array_meta(x)[1])
        k.scatter_(out, dim, index, src, cls._accumulate)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        need_x, need_src = ctx.needs_input_grad
        index, = saved
        gx = gs = None
        if need_x:
            gx = g if type(ctx)._accumulate else call(k, ScatterBackward1, (g,), ctx.dim,
                                                      index, 0)
        if need_src:
            gs = _pad_to(k, call(k, GatherBackward0, (g,), ctx.dim, index), ctx.src_shape)
        return gx, gs


class ScatterAddBackward0(ScatterBackward0):
    __slots__ = ()
    op_name = "scatter_add"
    _accumulate = True


class ScatterBackward1(Primitive):
    """x.scatter(dim, index, value) for a number: the written places get no gradient."""

    __slots__ = ()
    op_name = "scatter"
    writes_out = True
    keep_params = (1,)  # the index (Note [Saved indices])

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, dim, index, value):
        """The tangent with the filled positions zeroed (their value is a constant)."""
        return apply(type(ctx), (tangents[0],), dim, index, 0)

    @staticmethod
    def forward(ctx, k, x, dim, index, value, out=None):
        ctx.dim = dim
        if out is None:
            out = k.astype(x, array_meta(x)[1])
        k.scatter_(out, dim, index, value, False)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        index, = saved
        return call(k, ScatterBackward1, (g,), ctx.dim, index, 0)


def _scatter_src(self: Tensor, src, op: str):
    if isinstance(src, Tensor):
        if src._dtype is not self._dtype:  # PyTorch refuses to cast src (numbers are cast)
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype (got "
                               f"{self._dtype} and {src._dtype})")
        return src  # (its device is checked with the index's, in _gather_checks)
    if isinstance(src, _Number):  # PyTorch reads the value with Scalar::to<T>(): checked
        return checked_scalar(src, self._dtype)
    raise TypeError(f"{op}(): argument 'src' must be Tensor or Number, not "
                    f"{type(src).__name__}")


def _scatter(self, dim, index, src, value, reduce, op, inplace):
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{op}() missing required argument 'src' or 'value'")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    d, idx = _gather_checks(self, dim, index, op, src)
    if reduce is not None and isinstance(src, Tensor) and op.startswith("scatter") \
            and not op.startswith("scatter_add"):
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and "
                      "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                      "instead for more reduction options.", UserWarning, stacklevel=3)
    src = _scatter_src(self, src, op)
    if reduce == "multiply":  # (the legacy argument: scatter_reduce's "prod", self included)
        if not isinstance(src, Tensor):
            src = full(tuple(index.shape), src, dtype=self._dtype, device=self._device)
        return (scatter_reduce_ if inplace else scatter_reduce)(self, d, index, src, "prod")
    run = apply_inplace if inplace else (lambda o, t, others, *p: apply(o, (t,) + others, *p))
    if isinstance(src, Tensor):
        op_cls = ScatterAddBackward0 if reduce is not None else ScatterBackward0
        return run(op_cls, self, (src,), d, idx)
    if reduce is not None:
        full_src = full(tuple(index.shape), src, dtype=self._dtype, device=self._device)
        return run(ScatterAddBackward0, self, (full_src,), d, idx)
    return run(ScatterBackward1, self, (), d, idx, src)


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None,
            reduce=None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor or a number) written at ``index`` along
    ``dim``: ``out[index[i][j]][j] = src[i][j]`` (dim 0). Duplicate indices: one write wins.
    ``reduce`` ("add" or "multiply", PyTorch's legacy argument) accumulates instead."""
    return _scatter(input, dim, index, src, value, reduce, "scatter", False)


def scatter_(self: Tensor, dim: int, index: Tensor, src=None, *, value=None,
             reduce=None) -> Tensor:
    """In-place ``scatter``."""
    return _scatter(self, dim, index, src, value, reduce, "scatter_", True)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (duplicates sum)."""
    return _scatter(input, dim, index, src, None, "add", "scatter_add", False)


def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place ``scatter_add``."""
    return _scatter(self, dim, index, src, None, "add", "scatter_add_", True)


# -- masked_fill / nonzero / masked_select --------------------------------------------------------

class MaskedFillBackward0(Primitive):
    """where(mask, value, x) for a number value: the filled places get no gradient. The mask
    is a saved param, not an input: one edge, as PyTorch's (Note [Saved indices])."""

    __slots__ = ()
    op_name = "masked_fill"
    keep_params = (0,)
    saved_names = ("mask",)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, mask, value):
        """The tangent with the filled positions zeroed (the value is a constant)."""
        return apply(type(ctx), (tangents[0],), mask, 0)

    contiguous_out = True  # (index_fill's variant keeps x's layout, as PyTorch's)

    @classmethod
    def forward(cls, ctx, k, x, mask, value):
        ctx.in_shape = x.shape
        out = k.where(mask, value, x)
        # contiguous, as PyTorch's (a contiguous clone filled), where where() would keep a
        # transposed x's layout
        return k.contiguous(out) if cls.contiguous_out else out

    @staticmethod
    def vjp(ctx, k, saved, g):
        mask, = saved
        return sum_to(k, k.where(mask, 0, g), ctx.in_shape)


class MaskedFillBackward1(Primitive):
    """where(mask, value, x) for a 0-d tensor value: it gets the sum of g over the mask."""

    __slots__ = ()
    op_name = "masked_fill"
    jvp = linear_jvp()  # in self and the 0-d value
    keep_params = (0,)
    saved_names = ("mask",)

    contiguous_out = True  # (as MaskedFillBackward0's)

    @classmethod
    def forward(cls, ctx, k, x, v, mask):
        ctx.in_shape = x.shape
        out = k.where(mask, v, x)
        return k.contiguous(out) if cls.contiguous_out else out

    @staticmethod
    def vjp(ctx, k, saved, g):
        mask, = saved
        need_x, need_v = ctx.needs_input_grad
        gv = None
        if need_v:
            gv = k.where(mask, g, 0)
            gv = k.sum(gv, tuple(range(len(gv.shape))), False)
        return (sum_to(k, k.where(mask, 0, g), ctx.in_shape) if need_x else None), gv


def _masked_fill_args(x: Tensor, mask, value, op: str):
    # (the messages name masked_fill_ for both forms, as PyTorch's: its masked_fill is
    # clone().masked_fill_())
    if not isinstance(mask, Tensor) or mask._dtype is not dtypes.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if mask._device is not x._device:
        if mask.ndim == 0 or mask._device.type == "cpu":
            mask = mask.to(x._device)
        else:
            check_devices_match(x._device, mask._device, op)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        if value._device is not x._device:
            value = value.to(x._device)
        return mask, (value if value._dtype is x._dtype else value.to(x._dtype))
    if not isinstance(value, _Number):
        raise TypeError(f"{op}(): argument 'value' must be Number or Tensor, not "
                        f"{type(value).__name__}")
    return mask, checked_scalar(value, x._dtype)  # Scalar::to<T>(): checked, as PyTorch


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``input`` with ``value`` (a number or a 0-d tensor) where the bool ``mask`` is True
    (broadcasting)."""
    mask, value = _masked_fill_args(input, mask, value, "masked_fill")
    broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    if isinstance(value, Tensor):
        return apply(MaskedFillBackward1, (input, value), mask)
    return apply(MaskedFillBackward0, (input,), mask, value)


def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    """In-place ``masked_fill`` (the mask must broadcast to this tensor's shape)."""
    return _masked_fill_inplace(self, mask, value, MaskedFillBackward1)


# x[mask] = v for a 0-d tensor v and a mask of x's shape runs as masked_fill_ (no nonzero, no
# device sync) but records PyTorch's node for it, index_put_'s
_MaskedIndexPutBackward0 = MaskedFillBackward1.variant("IndexPutBackward0", "masked_fill")


def _masked_fill_inplace(self: Tensor, mask: Tensor, value, tensor_node: type) -> Tensor:
    """masked_fill_, recording ``tensor_node`` for a 0-d tensor value."""
    mask, value = _masked_fill_args(self, mask, value, "masked_fill_")
    if broadcast_shapes(tuple(self.shape), tuple(mask.shape)) != tuple(self.shape):
        raise RuntimeError(f"masked_fill_: mask of shape {list(mask.shape)} does not broadcast "
                           f"to the tensor's shape {list(self.shape)}")
    target, mask = expanded_fill_target(self, mask, "masked_fill_")
    if isinstance(value, Tensor):
        apply_inplace(tensor_node, target, (value,), mask)
    else:
        apply_inplace(MaskedFillBackward0, target, (), mask, value)
    return self


def expanded_fill_target(self: Tensor, mask: Tensor, op: str | None) -> tuple:
    """(the tensor to fill, the mask) for a masked fill of ``self`` in place: ``self`` and
    ``mask`` as they are, unless ``self`` is expanded (``expanded_dims``). PyTorch allows
    that (masked_fill_ and index_fill_ deprecated: a warning naming ``op``; tril_ and triu_
    silently, ``op`` None) and writes only the masked elements, so a memory location is
    filled when any of its aliases is masked. The forward here writes every element (a
    where), so it runs on one alias per location: the expanded dims cut to size 1 (a view of
    the same memory), the mask reduced over them with any()."""
    dims = expanded_dims(self)
    if not dims:
        return self, mask
    if op is not None:
        warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the "
                      f"tensor before performing this operation. This also applies to advanced "
                      f"indexing e.g. tensor[mask] = scalar", UserWarning, stacklevel=4)
    mask = mask.expand(tuple(self.shape)).any(dims, keepdim=True)
    return _basic_getitem(self, tuple(slice(0, 1) if d in dims else slice(None)
                                      for d in range(self.ndim))), mask


class NonzeroOp(Primitive):
    __slots__ = ()
    op_name = "nonzero"
    differentiable = False

    @staticmethod
    def forward(ctx, k, x):
        return k.nonzero(x)


def nonzero(input: Tensor, *, out: Tensor | None = None, as_tuple: bool = False):
    """The indices of the nonzero elements: an int64 (count, ndim) tensor (written into
    ``out`` when given), or with ``as_tuple=True`` one 1-D tensor per dim."""
    if out is not None:
        if as_tuple:
            raise RuntimeError("nonzero does not support the out kwarg when as_tuple is True")
        from ..registry import write_out
        return write_out(nonzero, "nonzero", "exact", (input,), {}, out)
    out = apply(NonzeroOp, (input,))
    if not as_tuple:
        return out
    if input.ndim == 0:  # (PyTorch reads a 0-d input as 1-d here: index 0 when nonzero)
        return (zeros((out.shape[0],), dtype=dtypes.int64, device=out.device),)
    return tuple(out[:, j] for j in range(input.ndim))


def _masked_places(mask, shape: tuple) -> tuple:
    """The row-major positions where ``mask`` (an array, broadcast to ``shape``) holds: one
    int64 array per dim."""
    k = backend(array_meta(mask)[0])
    if tuple(mask.shape) != shape:
        mask = k.expand(mask, shape)
    nz = k.nonzero(mask)
    return tuple([k.getitem(nz, (slice(None), j)) for j in range(len(shape))])


class MaskedSelectBackward0(Primitive):
    """input.masked_select(mask), the two broadcast together: the elements where the mask
    holds, in row-major order; the gradient is put back at those places (and summed back to
    the input's shape). The mask is saved, not an edge, as PyTorch's node (Note [Saved
    indices]): a bool per element, where the places as int64 indices took 8 bytes per
    selected element and dim."""

    __slots__ = ()
    op_name = "masked_select"
    keep_params = (0,)
    saved_names = ("mask",)
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, x, mask):
        shape = broadcast_shapes(tuple(x.shape), tuple(mask.shape)) or (1,)  # (0-d: 1-D)
        ctx.in_shape, ctx.shape = tuple(x.shape), shape
        if tuple(x.shape) != shape:
            x = k.expand(as_shape(k, x, (1,)) if not x.shape else x, shape)
        return k.index(x, _masked_places(as_shape(k, mask, (1,)) if not mask.shape else mask,
                                         shape))

    @staticmethod
    def vjp(ctx, k, saved, g):
        mask = array_of(saved[0])
        places = _masked_places(as_shape(backend(array_meta(mask)[0]), mask, (1,))
                                if not mask.shape else mask, ctx.shape)
        out = call(k, IndexPutBackward0, (_zeros(k, ctx.shape, g), g), places, True)
        if not ctx.in_shape:  # a 0-d input
            return as_shape(k, sum_to(k, out, (1,)), ())
        return sum_to(k, out, ctx.in_shape)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where the bool ``mask`` (broadcasting with input) is True, as a 1-D
    tensor."""
    if not isinstance(mask, Tensor) or mask._dtype is not dtypes.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    if mask._device is not input._device:  # (as masked_fill: a CPU or 0-d mask moves)
        if mask.ndim == 0 or mask._device.type == "cpu":
            mask = mask.to(input._device)
        else:
            check_devices_match(input._device, mask._device, "masked_select")
    return apply(MaskedSelectBackward0, (input,), mask)



# -- index_add / scatter_reduce -------------------------------------------------------------------

from ..checks import kernel_not_implemented, scalar_type_name  # (this section appended)


class IndexAddBackward0(IndexPutBackward0):
    """x.index_add(dim, index, v): index_put with accumulate at (:, ..., index): x's gradient
    is g, v's is g index-selected along dim."""

    __slots__ = ()
    op_name = "index_add"
    expanded_target = None  # (PyTorch's index_add_ refuses it, unlike index_put_'s warning)


def _index_checks(self: Tensor, dim: int, index: Tensor, source: Tensor, op: str):
    """The checks of index_add and index_reduce: (self and source as at least 1-d, the wrapped
    dim, the index as a checked flat int64 tensor)."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    check_same_device(self, index, "index", op)
    check_same_device(self, source, "source", op)
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.ndim} "
                         f"with type: {scalar_type_name(index.dtype)} and size: "
                         f"{list(index.shape)}")
    if index.dtype is not dtypes.int64 and index.dtype is not dtypes.int32:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: "
                           f"{scalar_type_name(index.dtype)}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"{op}(): self ({scalar_type_name(self.dtype)}) and source "
                           f"({scalar_type_name(source.dtype)}) must have the same scalar type")
    x = self if self.ndim else self.reshape(1)
    src = source if source.ndim else source.reshape(1)
    d = wrap_dim(dim, x.ndim, op)
    if src.ndim != x.ndim:
        raise RuntimeError(f"{op}(): Source/destination tensor must have same number of "
                           f"dimensions, got {source.ndim} and {self.ndim}")
    if index.numel() != src.shape[d]:
        raise RuntimeError(f"{op}(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({src.shape[d]}), for dim: {d}")
    for j, (n, m) in enumerate(zip(x.shape, src.shape)):
        if j != d and n != m:
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding "
                               f"the specified dimension. Got self.shape = {list(self.shape)} "
                               f"source.shape = {list(source.shape)} ({op}(), dim {d})")
    def error(bad):  # (PyTorch's kernels word it apart: index_add of 2+ dims, the rest)
        if op.startswith("index_add") and x.ndim > 1:
            return RuntimeError(f"index {bad} is out of bounds for dimension {d} with size "
                                f"{x.shape[d]}")
        return IndexError("index out of range in self")

    idx = checked_index(index.reshape(-1), x.shape[d], d, op, allow_negative=False, error=error)
    return x, src, d, idx


def _index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, alpha, op: str,
               inplace: bool) -> Tensor:
    x, src, d, idx = _index_checks(self, dim, index, source, op)
    if alpha != 1:
        # alpha in self's dtype first, as PyTorch's Scalar::to<T>() (2.5 is 2 for integers,
        # 300 overflows int8, 1j refused for floats): src * 2.5 would promote, and the sum
        # be rounded instead
        if not self.dtype.is_complex:
            alpha = checked_scalar(alpha, self.dtype)
        src = src * alpha
    indices = (None,) * d + (idx,)
    if inplace:
        apply_inplace(IndexAddBackward0, x, (src,), indices, True)
        return self
    out = apply(IndexAddBackward0, (x, src), indices, True)
    return out if self.ndim else out.reshape(())


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``:
    ``out[index[i]] += alpha * source[i]`` (dim 0; duplicate indices all add).

    Example::

        >>> tg.zeros(3).index_add(0, tg.tensor([0, 0, 2]), tg.tensor([1., 2., 3.]))
        tensor([3., 0., 3.])
    """
    return _index_add(input, dim, index, source, alpha, "index_add_", False)  # PyTorch's name


def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In-place ``index_add``."""
    return _index_add(self, dim, index, source, alpha, "index_add_", True)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_REDUCE_ALIASES = {"max": "amax", "min": "amin"}  # (PyTorch takes these too)


def _lift(k, a):
    """A backend array (a count, computed without history) as an operand of rule ``k``."""
    from ..dispatch import traced
    from ..tensor import make
    return make(a) if k is traced and not isinstance(a, Tensor) else a


def _window(k, s, shape):
    """src's leading ``shape`` (index's): the part of src a scatter reads."""
    if tuple(s.shape) == tuple(shape):
        return s
    return k.getitem(s, tuple(slice(0, n) for n in shape))


class ScatterReduceBackward0(Primitive):
    """x.scatter_reduce(dim, index, src, reduce, include_self): each place folds the src values
    aimed at it (and itself, when include_self). Gradients, with n the number of values a place
    folds and y the result:

    - sum: x: g; src: g gathered.
    - mean: x: g / n (g where nothing is aimed; 0 at aimed places without include_self);
      src: (g / n) gathered.
    - amax/amin: shared evenly among the folded values equal to y (NaN equal to NaN).
    - prod: each folded value gets g times the product of the others, computed without
      dividing by zero (PyTorch's rule); its double backward is refused where two or more
      zeros of src fold into one place (as PyTorch: the rule's 0 there has no derivative).
    """

    __slots__ = ()
    op_name = "scatter_reduce"
    writes_out = True
    save_inputs = (0, 1)
    save_output = True
    keep_params = (1,)  # the index (Note [Saved indices])
    _src = "src"  # the second input's name in messages

    @staticmethod
    def forward(ctx, k, x, src, dim, index, reduce, include_self, out=None):
        ctx.dim, ctx.reduce, ctx.include_self = dim, reduce, include_self
        if out is None:
            out = k.astype(x, array_meta(x)[1])
        k.scatter_reduce_(out, dim, index, src, reduce, include_self)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, src, y, index = saved
        dim, reduce, incl = ctx.dim, ctx.reduce, ctx.include_self
        ishape = tuple(index.shape)
        dt = meta(g)[1]

        def gather(t):
            return call(k, GatherBackward0, (t,), dim, index)

        def scatter_count(mask):  # per place: how many of the values aimed at it pass mask
            return call(k, ScatterAddBackward0, (_zeros(k, x.shape, g), k.astype(mask, dt)),
                        dim, index)

        aimed = k.ne(scatter_count(k.full(ishape, True, dtypes.bool, meta(g)[0])), 0)
        sw = _window(k, src, ishape)
        if reduce == "sum":
            gx, gs = g, gather(g)
        elif reduce == "mean":
            n = k.add(scatter_count(k.full(ishape, True, dtypes.bool, meta(g)[0])),
                      1 if incl else 0)
            n = k.where(k.eq(n, 0), 1, n)
            gx = k.div(g, n) if incl else g
            gs = gather(k.div(g, n))
        elif reduce in ("amax", "amin"):
            yg = gather(y)
            x_hit = k.binary("bitwise_or", k.eq(x, y), k.binary("bitwise_and", k.ne(x, x),
                                                                 k.ne(y, y)))
            s_hit = k.binary("bitwise_or", k.eq(sw, yg), k.binary("bitwise_and", k.ne(sw, sw),
                                                                  k.ne(yg, yg)))
            if not incl:  # a place's own value joins only where nothing is aimed at it
                x_hit = k.binary("bitwise_and", x_hit, k.unary("bitwise_not", aimed))
            n = k.add(scatter_count(s_hit), k.astype(x_hit, dt))
            share = k.div(g, k.where(k.eq(n, 0), 1, n))
            gx = k.where(x_hit, share, 0)
            gs = k.where(s_hit, gather(share), 0)
        else:  # prod (PyTorch's rule, without dividing by zero)
            def prod_into(t, s):
                return call(k, ScatterReduceBackward0, (t, s), dim, index, "prod", incl)

            # x: g times the product of the others folded with it (x's zero replaced by 1)
            safe_x = k.where(k.eq(x, 0), 1, x)
            gx = k.div(k.mul(g, prod_into(safe_x, sw)), safe_x)
            # src: g y / s where s is nonzero; where s is the one zero folded into its place,
            # g times the product with s replaced by 1; where two or more zeros fold, 0 (y)
            s_zero = k.eq(sw, 0)
            src_zeros = scatter_count(s_zero)
            single = k.binary("bitwise_and", s_zero, k.eq(gather(src_zeros), 1))
            gs = k.where(single, gather(k.mul(g, prod_into(x, k.where(single, 1, sw)))),
                         k.div(gather(k.mul(g, y)), k.where(s_zero, 1, sw)))
            if k is _dispatch.traced and ctx.needs_input_grad[1]:  # (create_graph)
                gs = _refuse_double_backward(ctx, k, gs, src_zeros)
        if not incl and reduce != "amax" and reduce != "amin":
            gx = k.where(aimed, 0, gx)
        need_x, need_src = ctx.needs_input_grad
        return (gx if need_x else None), (_pad_to(k, gs, src.shape) if need_src else None)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        """Each element of x and src folds into one place only, so each column of the
        Jacobian has one entry: the rule's gradient for an output gradient of ones. The
        tangent is then x's coefficients times its tangent plus src's scattered-added."""
        from ..dispatch import _Asking  # (the ctx asking for the inputs that have tangents)
        (x, src), (tx, ts) = primals, tangents
        dev, dt = meta(out)
        asking = _Asking(ctx, (tx is not None, ts is not None))
        index = params[1]
        cx, cs = ScatterReduceBackward0.vjp(asking, k, (x, src, out, index),
                                            k.full(tuple(out.shape), 1, dt, dev))
        total = None if tx is None else k.mul(cx, tx)
        if ts is not None:
            moved = call(k, ScatterAddBackward0, (_zeros(k, out.shape, out), k.mul(cs, ts)),
                         ctx.dim, index)
            total = moved if total is None else k.add(total, moved)
        return total


def _refuse_double_backward(ctx, k, gs, src_zeros):
    """src's prod gradient ``gs``, recorded (create_graph), behind a node that refuses to be
    differentiated when two or more zeros of src fold into one place: there the gradient of
    each is the product of the others, 0, whose own derivative the rule does not give (as
    PyTorch, which raises the same error)."""
    if not bool(k.gt(src_zeros, 1).any()):  # (a host read-back, as PyTorch's)
        return gs
    from ..function import DelayedError
    op, name = type(ctx).op_name, type(ctx)._src
    return DelayedError.apply(f"{op}(): Double backward is unsupported for {name} when >1 "
                              f"zeros in {name} are scattered to the same position in self",
                              gs)[0]


def _scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                    include_self: bool, op: str, inplace: bool) -> Tensor:
    reduce = _REDUCE_ALIASES.get(reduce, reduce)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type(src).__name__}")
    d, idx = _gather_checks(self, dim, index, op, src)
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce == "mean" and self.dtype is dtypes.bool:  # (PyTorch's kernel has no bool mean)
        raise kernel_not_implemented(
            f"scatter_gather_tensor_{self.device.type}_reduce_mean", self.dtype)
    if self.dtype.is_complex and reduce in ("amax", "amin"):  # (no ordering of complex values)
        raise kernel_not_implemented(
            f"scatter_gather_tensor_{self.device.type}_reduce_{reduce}", self.dtype)
    params = (d, idx, reduce, bool(include_self))
    if inplace:
        return apply_inplace(ScatterReduceBackward0, self, (src,), *params)
    return apply(ScatterReduceBackward0, (self, src), *params)


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of ``input`` where every place that ``index`` aims ``src`` values at (along
    ``dim``, as ``scatter``) holds their reduction ``reduce`` ("sum", "prod", "mean", "amax",
    "amin"), the place's own value included when ``include_self``. Places nothing is aimed at
    keep their value. An integer mean rounds toward -inf.

    Example::

        >>> x = tg.tensor([1., 2.])
        >>> x.scatter_reduce(0, tg.tensor([0, 0, 1]), tg.tensor([5., 3., 4.]), "amax")
        tensor([5., 4.])
    """
    return _scatter_reduce(input, dim, index, src, reduce, include_self, "scatter_reduce",
                           False)


def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place ``scatter_reduce``."""
    return _scatter_reduce(self, dim, index, src, reduce, include_self, "scatter_reduce_", True)


# -- index_reduce ---------------------------------------------------------------------------------

# index_reduce is scatter_reduce with the index spread along dim over the source's shape (each
# source slice i folds into self's slice index[i]): the same primitive, named as PyTorch's node.
# (forward AD refused, as PyTorch's index_reduce has no forward formula)
IndexReduceBackward0 = ScatterReduceBackward0.variant("IndexReduceBackward0", "index_reduce",
                                                      _src="source", jvp=None)
_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str,
                  include_self: bool, op: str, inplace: bool) -> Tensor:
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"{op}(): Expected reduce to be one of prod, mean, amax or amin but "
                           f"got {reduce}.")
    x, src, d, idx = _index_checks(self, dim, index, source, op)
    if reduce == "mean" and self.dtype is dtypes.bool:  # (PyTorch's kernel has no bool mean)
        raise kernel_not_implemented("index_func_", self.dtype)
    shape = [1] * src.ndim
    shape[d] = src.shape[d]
    spread = idx.reshape(tuple(shape)).expand(tuple(src.shape)).contiguous()
    params = (d, spread._data, reduce, bool(include_self))
    if inplace:
        apply_inplace(IndexReduceBackward0, x, (src,), *params)
        return self
    out = apply(IndexReduceBackward0, (x, src), *params)
    return out if self.ndim else out.reshape(())


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of ``input`` where each slice ``index[i]`` along ``dim`` holds the reduction
    ``reduce`` ("prod", "mean", "amax", "amin") of the source slices ``i`` aimed at it (and of
    itself, when ``include_self``); slices nothing is aimed at keep their values. Gradients as
    ``scatter_reduce``'s (amax/amin: shared evenly among the tied extremes).

    Example::

        >>> tg.zeros(3).index_reduce(0, tg.tensor([0, 0, 2]), tg.tensor([1., 3., 5.]), "amax",
        ...                          include_self=False)
        tensor([3., 0., 5.])
    """
    return _index_reduce(input, dim, index, source, reduce, include_self, "index_reduce", False)


def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place ``index_reduce``."""
    return _index_reduce(self, dim, index, source, reduce, include_self, "index_reduce_", True)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("gather", gather, grad="g scattered-added back", out="exact"),
    OpInfo("scatter", scatter, inplace=scatter_, grad="g masked, src: g gathered"),
    OpInfo("scatter_add", scatter_add, inplace=scatter_add_, grad="g, src: g gathered",
           autocast="promote on cuda"),
    OpInfo("index_select", index_select, grad="g index-added back", out="exact"),
    OpInfo("index_put", index_put, inplace=index_put_, grad="g masked, values: g indexed",
           autocast="promote on cuda"),
    OpInfo("index_put_", index_put_, method=False, grad="g masked, values: g indexed"),
    OpInfo("masked_fill", masked_fill, inplace=masked_fill_, grad="g where not mask"),
    OpInfo("masked_select", masked_select, grad="g scattered back", out="exact"),
    OpInfo("nonzero", nonzero, grad="none"),
    OpInfo("index_add", index_add, inplace=index_add_, grad="g, source: alpha g index-selected"),
    OpInfo("scatter_reduce", scatter_reduce, inplace=scatter_reduce_,
           grad="sum: g; mean: g / n; amax/amin: g shared among the extremes; prod: g times "
                "the others"),
    OpInfo("setitem", setitem, function=False, method=False, operators=("__setitem__",),
           grad="g masked, value: g indexed"),
    OpInfo("index_reduce", index_reduce, inplace=index_reduce_,
           grad="mean: g / n; amax/amin: g shared among the extremes; prod: g times the "
                "others (as scatter_reduce)"),
)
OPS = with_jvp(OPS, without=("index_reduce",))  # every other row: jvp rules
