"""Selecting and placing elements by index or mask, as compositions of the indexing
primitives (``gather``, ``index_put``, ``index_select``, ``masked_select``):
``take_along_dim``, ``index_fill``, ``index_copy``; differentiable through their parts.
``take`` (``TakeBackward0``), ``masked_scatter`` (``MaskedScatterBackward0``, in place too) and
the sliding window view ``Tensor.unfold`` (``UnfoldBackward0``, as_strided's rule) are one node
each, as PyTorch records them."""

from __future__ import annotations

import math

from ...runtime import dtype as dtypes
from ..checks import check_same_device, checked_index, scalar_type_name, tensor_arg
from ..dispatch import Primitive, apply, apply_inplace, as_shape, call, linear_jvp, meta, sum_to
from ..dispatch import zeros as _zeros
from ..registry import OpInfo
from ..tensor import Tensor, wrap_dim
from .creation import zeros
from .elementwise import broadcast_shapes
from .indexing import (IndexPutBackward0, MaskedFillBackward0, MaskedFillBackward1,
                       MaskedSelectBackward0, _masked_fill_args, _masked_places,
                       expanded_fill_target)
from .views import AsStridedBackward0, _as_view

__all__ = ["index_copy", "index_fill", "masked_scatter", "take", "take_along_dim"]


def _int64_index(index: Tensor, op: str) -> Tensor:
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    return index


class TakeBackward0(Primitive):
    """input.take(index): the input's elements read as a 1-D tensor, at ``index``; the
    gradient is put back at index, duplicates summed. The index is saved, not an edge, as
    PyTorch's node (Note [Saved indices])."""

    __slots__ = ()
    op_name = "take"
    keep_params = (0,)
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, x, index):
        ctx.in_shape = x.shape
        return k.index(as_shape(k, x, (math.prod(x.shape),)), (index,))

    @staticmethod
    def vjp(ctx, k, saved, g):
        index, = saved
        flat = _zeros(k, (math.prod(ctx.in_shape),), g)
        return as_shape(k, call(k, IndexPutBackward0, (flat, g), (index,), True), ctx.in_shape)


def take(input: Tensor, index: Tensor, *, out=None) -> Tensor:
    """The elements of ``input`` read as a 1-D tensor, at ``index`` (any shape; negative
    indices count from the end)."""
    x = tensor_arg(input, "take")
    if out is not None:
        from .elementwise import _result
        if isinstance(out, Tensor) and out.dtype is not x.dtype:  # (PyTorch's: no cast)
            raise RuntimeError(f"take(): self and out expected to have the same dtype, but got "
                               f"self.dtype = {scalar_type_name(x.dtype)} and out.dtype = "
                               f"{scalar_type_name(out.dtype)}")
        return _result(take(x, index), out, "take")
    index = _int64_index(index, "take")
    check_same_device(x, index, "index", "take")
    n = x.numel()
    if n == 0 and index.numel():
        raise IndexError("take(): tried to take from an empty tensor")
    index = checked_index(index, n, 0, "take", allow_negative=True, error=lambda bad: IndexError(
        f"out of range: tried to access index {bad} on a tensor of {n} elements."))
    return apply(TakeBackward0, (x,), index)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` with ``input`` and ``indices`` broadcast against each other except along
    ``dim`` (None: both flattened)."""
    x = tensor_arg(input, "take_along_dim")
    tensor_arg(indices, "take_along_dim", "indices")
    if indices.dtype is not dtypes.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{scalar_type_name(indices.dtype)}")
    if dim is None:
        return x.reshape(-1).gather(0, indices.reshape(-1))
    if x.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {x.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    d = wrap_dim(dim, x.ndim, "take_along_dim", "dim")
    xs, js = list(x.shape), list(indices.shape)
    xs[d] = js[d] = 1
    shape = broadcast_shapes(tuple(xs), tuple(js))
    xb = list(shape)
    xb[d] = x.shape[d]
    ib = list(shape)
    ib[d] = indices.shape[d]
    return x.expand(tuple(xb)).gather(d, indices.expand(tuple(ib)))


# index_fill is masked_fill with a mask along one dim (each slice filled once, however often
# its index repeats: a 0-d value tensor's gradient is g summed over the filled places), and
# index_copy index_put at (:, ..., index); nodes named as PyTorch's.
IndexFillBackward0 = MaskedFillBackward0.variant("IndexFillBackward0", "index_fill",
                                                 contiguous_out=False)
IndexFillBackward1 = MaskedFillBackward1.variant("IndexFillBackward1", "index_fill",
                                                 contiguous_out=False)
# (index_copy_ into an expanded tensor is refused, as PyTorch's: not index_put_'s warning)
IndexCopyBackward0 = IndexPutBackward0.variant("IndexCopyBackward0", "index_copy",
                                               expanded_target=None)


def _index_fill(x: Tensor, dim: int, index: Tensor, value, inplace: bool) -> Tensor:
    tensor_arg(x, "index_fill")
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    d = wrap_dim(dim, max(x.ndim, 1), "index_fill", "dim")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    n = x.shape[d] if x.ndim else 1
    index = checked_index(index.reshape(-1), n, d, None, allow_negative=True)
    # the slices to fill, as a bool mask broadcasting along dim d
    mask = zeros((n,), dtype=dtypes.bool, device=x.device)
    mask.index_put_((index,), True)
    mask = mask.reshape((n,) + (1,) * (x.ndim - d - 1) if x.ndim else ())
    mask, value = _masked_fill_args(x, mask, value, "index_fill_")
    target = x
    if inplace:
        target, mask = expanded_fill_target(x, mask, "index_fill_")
    if isinstance(value, Tensor):
        node, inputs, params = IndexFillBackward1, (value,), (mask,)
    else:
        node, inputs, params = IndexFillBackward0, (), (mask, value)
    if inplace:
        apply_inplace(node, target, inputs, *params)
        return x
    return apply(node, (x,) + inputs, *params)


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a
    number or a 0-d tensor)."""
    return _index_fill(input, dim, index, value, False)


def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In-place ``index_fill``."""
    return _index_fill(self, dim, index, value, True)


def _index_copy(x: Tensor, dim: int, index: Tensor, source: Tensor, inplace: bool) -> Tensor:
    tensor_arg(x, "index_copy")
    tensor_arg(source, "index_copy", "source")
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        got = scalar_type_name(index.dtype) if isinstance(index, Tensor) else \
            type(index).__name__
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {got}")
    if source.dtype is not x.dtype:  # PyTorch copies without promoting, so it refuses
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {scalar_type_name(x.dtype)} and (source) "
                           f"{scalar_type_name(source.dtype)}")
    d = wrap_dim(dim, max(x.ndim, 1), "index_copy", "dim")
    if index.ndim > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index.ndim})")
    if x.ndim and source.ndim and source.shape[d] != index.numel():
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal "
                         f"to source.size(dim) ({source.shape[d]})")
    if x.ndim == 0:  # (no index to check against a dim: PyTorch's copy of the one value)
        if inplace:
            return x.copy_(source.reshape(())) if index.numel() else x
        return source.reshape(()).clone() if index.numel() else x.clone()
    if source.ndim:  # the slices (the shapes without dim d) must match, as PyTorch's
        xs = x.shape[:d] + x.shape[d + 1:]
        ss = source.shape[:d] + source.shape[d + 1:]
        for j, (m, n) in enumerate(zip(xs, ss)):
            if m != n:
                raise RuntimeError(f"index_copy_(): Source/destination tensor must have same "
                                   f"slice shapes. Destination slice shape: {m} at dimension "
                                   f"{j} and source slice shape: {n} at dimension {j}.")
    index = checked_index(index.reshape(-1), x.shape[d], d, "index_copy_", allow_negative=False,
                          error=lambda bad: IndexError(f"index_copy_(): index {bad} is out of "
                                                       f"bounds for dimension {d} with size "
                                                       f"{x.shape[d]}"))
    src = source
    want = x.shape[:d] + (index.shape[0],) + x.shape[d + 1:]
    if tuple(src.shape) != want:  # (a 0-d source for one index, or its dims of 1)
        src = src.reshape(want)
    indices = (None,) * d + (index,)
    if inplace:
        apply_inplace(IndexCopyBackward0, x, (src,), indices, False)
        return x
    return apply(IndexCopyBackward0, (x, src), indices, False)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` replaced by the slices
    of ``source`` in order (the last write wins where an index repeats)."""
    return _index_copy(input, dim, index, source, False)


def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place ``index_copy``."""
    return _index_copy(self, dim, index, source, True)


class MaskedScatterBackward0(Primitive):
    """input with the places where ``mask`` holds (the two broadcast together) filled, in
    row-major order, from the leading elements of ``source``; one node saving the mask, not
    an edge (PyTorch's): input's gradient is ``g`` zeroed at those places (summed back to
    its shape), source's is ``g`` at them, in order, zeros after (source's shape)."""

    __slots__ = ()
    op_name = "masked_scatter"
    keep_params = (0,)
    saved_names = ("mask",)
    jvp = linear_jvp()
    _saved_source_sym_sizes = property(lambda n: tuple(n.src_shape))  # (PyTorch's node's)

    @staticmethod
    def forward(ctx, k, x, source, mask):
        dev, dt = meta(x)
        shape = tuple(mask.shape)  # (the caller expanded it to the broadcast shape)
        ctx.in_shape, ctx.src_shape = tuple(x.shape), tuple(source.shape)
        out = k.full(shape, 0, dt, dev)  # (a new, contiguous result, as PyTorch's)
        k.copy_(out, x)
        if shape:
            places = _masked_places(mask, shape)
        else:  # (0-d: one place or none)
            places = _masked_places(as_shape(k, mask, (1,)), (1,))
            out = as_shape(k, out, (1,))
        count = places[0].shape[0]
        if count:
            flat = as_shape(k, source, (math.prod(source.shape),))
            k.index_put_(out, places, k.getitem(flat, (slice(0, count, 1),)), False)
        return out if shape else as_shape(k, out, ())

    @staticmethod
    def vjp(ctx, k, saved, g):
        mask, = saved
        need_x, need_s = ctx.needs_input_grad
        gx = gs = None
        if need_x:
            gx = sum_to(k, k.where(mask, 0.0, g), ctx.in_shape)
        if need_s:
            n = math.prod(ctx.src_shape)
            picked = call(k, MaskedSelectBackward0, (g,), mask)
            rest = n - picked.shape[0]
            if rest:
                picked = k.cat([picked, _zeros(k, (rest,), g)], 0)
            gs = as_shape(k, picked, ctx.src_shape)
        return gx, gs

    complex_vjp = vjp  # (it moves elements: the same map for complex values)
    complex_jvp = jvp


def _masked_scatter_args(x: Tensor, mask, source, op: str) -> Tensor:
    """The mask, checked and expanded to the broadcast shape with ``x``, as PyTorch's."""
    tensor_arg(x, op)
    tensor_arg(mask, op, "mask")
    tensor_arg(source, op, "source")
    if mask.dtype is not dtypes.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {mask.dtype}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {scalar_type_name(x.dtype)} and "
                           f"{scalar_type_name(source.dtype)}")
    check_same_device(x, source, "source", op)
    m = mask.expand(broadcast_shapes(tuple(x.shape), tuple(mask.shape)))
    if mask._device is not x._device:
        m = m.to(x._device)
    if source.numel() < int(m.sum().item()):
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return m


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the positions where ``mask`` (broadcast) is True filled, in
    row-major order, from the leading elements of ``source``. One ``MaskedScatterBackward0``
    node."""
    m = _masked_scatter_args(input, mask, source, "masked_scatter")
    return apply(MaskedScatterBackward0, (input, source), m)


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place :func:`masked_scatter`; ``mask`` broadcasts to ``self``'s shape."""
    tensor_arg(self, "masked_scatter_")
    if isinstance(mask, Tensor):  # (it broadcasts to self, not self to it)
        if mask.ndim > self.ndim:
            raise RuntimeError(f"expand({mask.device.type.upper()}BoolType{{{list(mask.shape)}}}"
                               f", size={list(self.shape)}): the number of sizes provided "
                               f"({self.ndim}) must be greater or equal to the number of "
                               f"dimensions in the tensor ({mask.ndim})")
        mask = mask.expand(tuple(self.shape))
    m = _masked_scatter_args(self, mask, source, "masked_scatter_")
    return apply_inplace(MaskedScatterBackward0, self, (source,), m)


class UnfoldBackward0(AsStridedBackward0):
    """The windows of ``size`` along ``dim``, ``step`` apart, in a new last dim: a view, with
    as_strided's forward and rule (windows that overlap add their gradients) on the geometry
    worked out from the input's strides (a tangent of another layout gets its own windows)."""

    __slots__ = ()
    op_name = "unfold"

    @staticmethod
    def forward(ctx, k, x, d, size, step):
        if not x.shape:  # a 0-d tensor: one window of one element
            return AsStridedBackward0.forward(ctx, k, x, (1,), (1,), 0)
        shape, strides = list(x.shape), list(k.strides(x))
        unit = strides[d]
        shape[d], strides[d] = (shape[d] - size) // step + 1, unit * step
        return AsStridedBackward0.forward(ctx, k, x, tuple(shape) + (size,),
                                          tuple(strides) + (unit,), 0)

    complex_vjp = AsStridedBackward0.vjp  # (it moves elements: the same map for complex)


def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Returns a view of the original tensor which contains all slices of size ``size`` from
    ``self`` in the dimension ``dimension``, ``step`` apart, in a new last dimension
    (``Tensor.unfold``). One ``UnfoldBackward0`` node.

    Example:
        >>> tg.arange(5.).unfold(0, 2, 2).tolist()
        [[0.0, 1.0], [2.0, 3.0]]
    """
    tensor_arg(self, "unfold")
    nd = max(self.ndim, 1)
    d = wrap_dim(dimension, nd, "unfold", "dimension")
    n = self.shape[d] if self.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return _as_view(apply(UnfoldBackward0, (self,), d, size, step), self)


OPS = (
    OpInfo("take", take, dtypes="all", grad="g scattered back"),
    OpInfo("take_along_dim", take_along_dim, dtypes="all", grad="g scattered back",
           out="exact"),
    OpInfo("index_fill", index_fill, inplace=index_fill_, dtypes="all",
           grad="g, zero at the filled slices"),
    OpInfo("index_copy", index_copy, inplace=index_copy_, dtypes="all",
           grad="g, zero at the copied slices; source: g's slices", autocast="promote on cpu"),
    OpInfo("masked_scatter", masked_scatter, inplace=masked_scatter_, dtypes="all",
           node=MaskedScatterBackward0,
           grad="g where not masked; source: g's masked elements"),
    OpInfo("unfold", unfold, function=False, dtypes="all", node=UnfoldBackward0,
           grad="g's windows added back into a zero tensor"),
)
