"""Memory formats: the strides each layout gives a shape, and the questions PyTorch asks of
strides (``is_contiguous(memory_format=)``, ``suggest_memory_format``, ``dim_order``,
non-overlapping and dense, and the dense strides ``preserve_format`` infers for a tensor that
is not).

Every function here works on plain shapes and strides (in elements), so the CPU and Triton
backends share it; ``empty_array`` makes an array with given strides on either backend. A
row-major request is answered with ``None`` rather than its strides: callers keep their
ordinary row-major path (no strides computed, no re-layout) for the common case.
"""

from __future__ import annotations

import itertools

from ..runtime import dtype as dtypes
from ..runtime.array import contiguous_strides

__all__ = ["NHWC_PERMUTATIONS", "channels_last_order", "dim_order", "elementwise_strides",
           "empty_array", "format_strides", "infer_dense_strides", "is_contiguous_as",
           "is_non_overlapping_and_dense", "laid_out", "suggest_memory_format",
           "target_strides"]

# The dimensions of NCHW / NCDHW from the innermost (stride 1: channels) outwards.
_CHANNELS_LAST_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}
_RANK = {"channels_last": 4, "channels_last_3d": 5}
# NCHW / NCDHW permuted into channels-last memory order (N, *, C), and back.
NHWC_PERMUTATIONS = {4: ((0, 2, 3, 1), (0, 3, 1, 2)), 5: ((0, 2, 3, 4, 1), (0, 4, 1, 2, 3))}


def _channels_order(fmt: dtypes.memory_format, ndim: int) -> tuple:
    """The innermost-first dimension order of a channels-last ``fmt``; PyTorch's error when
    the rank does not fit it."""
    rank = _RANK[fmt.name]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    return _CHANNELS_LAST_ORDER[rank]


def format_strides(shape, fmt: dtypes.memory_format) -> tuple | None:
    """The strides ``fmt`` gives ``shape``: None for ``contiguous_format`` (row-major), the
    NHWC / NDHWC order for the channels-last formats (PyTorch's ``get_channels_last_strides``:
    sizes multiply as they are, so a size-0 dimension zeroes the outer strides)."""
    if fmt is dtypes.contiguous_format:
        return None
    if fmt is dtypes.preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    strides = [0] * len(shape)
    step = 1
    for d in _channels_order(fmt, len(shape)):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def _follows(shape, strides, order) -> bool:
    """Whether the dimensions in ``order`` (innermost first) are packed densely in that
    order; size-1 dimensions may have any stride."""
    expected = 1
    for d in order:
        n = shape[d]
        if n != 1:
            if strides[d] != expected:
                return False
            expected *= n
    return True


def is_contiguous_as(shape, strides, fmt: dtypes.memory_format) -> bool:
    """``is_contiguous(memory_format=fmt)`` for a tensor of ``shape`` and ``strides``
    (``preserve_format`` asks for row-major, as in PyTorch; a channels-last format of another
    rank is simply False)."""
    order = _CHANNELS_LAST_ORDER.get(_RANK.get(fmt.name))
    if order is None:
        return 0 in shape or _follows(shape, strides, range(len(shape) - 1, -1, -1))
    return len(shape) == len(order) and _follows(shape, strides, order)


def is_non_overlapping_and_dense(shape, strides) -> bool:
    """Whether the elements fill a block of memory exactly once in some dimension order."""
    if 0 in shape:
        return True
    order = sorted(range(len(shape)), key=lambda d: strides[d])
    return _follows(shape, strides, order)


def _strides_like_channels_last(shape, strides, order) -> bool:
    """PyTorch's ``is_channels_last_strides_2d/3d``: do the strides order the dimensions as
    channels-last (ambiguous cases, such as N111 tensors, default to contiguous)?"""
    if strides[1] == 0:
        return False
    low = 0
    for d in order:
        if shape[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * max(1, shape[d])
    return True


def suggest_memory_format(shape, strides) -> dtypes.memory_format:
    """The memory format a tensor's strides suggest: channels-last when a 4-D (5-D) tensor's
    strides order its dimensions NHWC (NDHWC), else ``contiguous_format``."""
    order = _CHANNELS_LAST_ORDER.get(len(shape))
    if order is not None and _strides_like_channels_last(shape, strides, order):
        return dtypes.channels_last if len(shape) == 4 else dtypes.channels_last_3d
    return dtypes.contiguous_format


def _should_swap(shape, strides, d0, d1) -> int:
    """TensorIterator's comparison of two dimensions (innermost first): 1 if ``d1`` belongs
    inside ``d0``, -1 if not, 0 if the strides cannot tell (a stride 0, or equal strides and
    ``d1`` at least as long)."""
    s0, s1 = strides[d0], strides[d1]
    if s0 == 0 or s1 == 0:
        return 0
    if s0 != s1:
        return -1 if s0 < s1 else 1
    return 1 if shape[d0] > shape[d1] else 0


def _innermost_first(shape, *operands) -> list:
    """The dimensions sorted innermost first by stride (PyTorch's stable insertion sort from
    the row-major order, so dimensions the strides cannot order keep their places). With
    several operands' strides (broadcast to ``shape``), the first operand whose strides order
    a pair decides it, as TensorIterator's ``reorder_dimensions``."""
    perm = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(shape)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = 0
            for strides in operands:
                c = _should_swap(shape, strides, perm[d0], perm[d1])
                if c:
                    break
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def dim_order(shape, strides, check: bool = False) -> tuple | None:
    """The dimensions in memory order, outermost first (``Tensor.dim_order``, PyTorch's
    ``compute_elementwise_output_logical_to_physical_perm``): row-major for a contiguous
    tensor, NHWC for a channels-last one, else sorted by stride. With ``check``, None when the
    strides leave two neighbours in that order unordered (a stride 0, equal strides)."""
    ndim = len(shape)
    if ndim <= 1:
        return tuple(range(ndim))
    rows = is_contiguous_as(shape, strides, dtypes.contiguous_format)
    nhwc = is_contiguous_as(shape, strides, dtypes.channels_last)
    if rows != nhwc:
        return tuple(range(ndim)) if rows else (0, *range(2, ndim), 1)
    perm = _innermost_first(shape, strides)
    if check and any(_should_swap(shape, strides, a, b) != -1
                     for a, b in itertools.pairwise(perm)):
        return None
    return tuple(reversed(perm))


def infer_dense_strides(shape, strides) -> tuple:
    """Dense strides that keep the dimension order of ``strides`` (PyTorch's
    ``infer_dense_strides``, TensorIterator's ordering): dimensions sorted innermost first by
    stride, a stride-0 dimension keeping its row-major place, equal strides ordered by size."""
    ndim = len(shape)
    perm = _innermost_first(shape, strides)
    out = [0] * ndim
    step = 1
    for d in perm:
        out[d] = step
        if shape[d] > 1:
            step *= shape[d]
    return tuple(out)


def _broadcast(shape, op_shape, op_strides) -> tuple:
    """An operand's strides seen from the result's ``shape``: 0 along the dimensions it is
    broadcast over (missing on the left, or of size 1 where the result's is not)."""
    lead = len(shape) - len(op_shape)
    return (0,) * lead + tuple(0 if n == 1 and shape[lead + i] != 1 else s
                               for i, (n, s) in enumerate(zip(op_shape, op_strides)))


def elementwise_strides(shape: tuple, operands) -> tuple | None:
    """The strides of an elementwise op's result of ``shape`` over ``operands`` (``(shape,
    strides)`` pairs in argument order, a number as ``((), ())``), or None for row-major:
    PyTorch's TensorIterator. Operands of the result's shape that are all row-major give
    row-major, all channels-last give channels-last, all alike and dense give those strides;
    otherwise the result is dense in the dimension order of the operands' strides, the first
    operand that orders two dimensions deciding them (``x_channels_last + y_contiguous`` is
    channels-last, ``y_contiguous + x_channels_last`` row-major)."""
    ndim = len(shape)
    if ndim <= 1:
        return None
    row_major = _row_major_strides(shape)
    # the common case first, in tuple compares: numbers cannot order dimensions, and only an
    # empty result's row-major strides can tie with a broadcast operand's
    if 0 not in shape and all(st == row_major for sh, st in operands if sh):
        return None
    if all(sh == shape for sh, _ in operands):
        if all(is_contiguous_as(shape, st, dtypes.contiguous_format) for _, st in operands):
            return None
        if ndim == 4 and all(is_contiguous_as(shape, st, dtypes.channels_last)
                             for _, st in operands):
            return format_strides(shape, dtypes.channels_last)
        first = operands[0][1]
        if all(st == first for _, st in operands) and is_non_overlapping_and_dense(shape, first):
            return first
    perm = _innermost_first(shape, *(_broadcast(shape, sh, st) for sh, st in operands))
    if perm == list(range(ndim - 1, -1, -1)):
        return None
    out = [0] * ndim
    step = 1
    for d in perm:  # (TensorIterator's compatible strides: a size-0 dimension zeroes the rest)
        out[d] = step
        step *= shape[d]
    return tuple(out)


def target_strides(t, fmt) -> tuple | None:
    """The strides a copy of tensor ``t`` made with memory format ``fmt`` gets, or None for
    row-major. ``None`` and ``preserve_format`` keep a non-overlapping, dense ``t``'s strides
    and give any other ``t`` dense strides in its dimension order (PyTorch's ``clone``,
    ``empty_like``, ``to``); a row-major ``t`` answers None without looking further."""
    if fmt is None or fmt is dtypes.preserve_format:
        shape, strides = t._data.shape, t.stride()
        if strides == _row_major_strides(shape):  # (every clone asks: a dict look-up)
            return None
        if is_non_overlapping_and_dense(shape, strides):
            return strides  # exactly, size-1 dimensions' strides included, as PyTorch
        dense = infer_dense_strides(shape, strides)
        return None if dense == _row_major_strides(shape) else dense
    return format_strides(tuple(t.shape), fmt)


_row_major_cache: dict = {}


def _row_major_strides(shape: tuple) -> tuple:
    """The row-major strides of ``shape`` (PyTorch's: a size-0 dimension counts as 1),
    remembered per shape (the cache is dropped when it grows large)."""
    st = _row_major_cache.get(shape)
    if st is None:
        if len(_row_major_cache) > 4096:
            _row_major_cache.clear()
        st = _row_major_cache[shape] = contiguous_strides(shape)
    return st


def empty_array(k, shape, strides, dtype, device):
    """An uninitialised array of ``shape`` with element ``strides`` (dense: its extent is its
    element count) on backend ``k``."""
    extent = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    return k.as_strided(k.empty((extent,), dtype, device), tuple(shape), tuple(strides), 0)




def channels_last_order(k, *arrays, row_major_wins: bool = False):
    """(to NHWC, back) permutations when the strides of one of ``arrays`` (4-D or 5-D, of one
    rank) suggest a channels-last memory format (PyTorch's ``suggest_memory_format``: its
    convolutions, poolings and batch norm give their results and input gradients in it), else
    None (row-major). ``row_major_wins``: an array that is row-major as well (an (N, 1, H, W)
    or (N, C, 1, 1) one can be both) keeps row-major, as PyTorch's batch norm does."""
    orders = NHWC_PERMUTATIONS.get(len(arrays[0].shape))
    if orders is None:
        return None
    for a in arrays:
        shape = tuple(a.shape)
        if 0 in shape:
            continue
        strides = k.strides(a)
        if suggest_memory_format(shape, strides) is not dtypes.contiguous_format and not (
                row_major_wins and is_contiguous_as(shape, strides, dtypes.contiguous_format)):
            return orders
    return None


def laid_out(k, a, order):
    """Array ``a`` with exactly the strides of its memory format: channels-last where
    ``order`` (from ``channels_last_order``) is given, else row-major; ``a`` itself when it
    has them, else a copy (a dense ``a`` whose size-1 dims' strides differ is only restrided,
    as PyTorch's formats give those dims definite strides too)."""
    shape = tuple(a.shape)
    if 0 in shape:
        return a
    fmt = dtypes.contiguous_format if order is None else \
        (dtypes.channels_last if len(shape) == 4 else dtypes.channels_last_3d)
    target = format_strides(shape, fmt) if order is not None else contiguous_strides(shape)
    strides = k.strides(a)
    if strides == target:
        return a
    if not is_contiguous_as(shape, strides, fmt):
        a = k.contiguous(a) if order is None else \
            k.permute(k.contiguous(k.permute(a, order[0])), order[1])
        if k.strides(a) == target:
            return a
    return k.as_strided(a, shape, target, k.storage_offset(a))
