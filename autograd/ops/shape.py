"""Joining, splitting and tiling: ``cat stack split chunk unbind narrow select movedim repeat
tile tril triu``.

``split``/``chunk``/``unbind`` return views, made by one multi-output primitive each (one node,
as PyTorch's ``SplitBackward0``); their rule joins the pieces' gradients (zeros for pieces that
got none). ``unsafe_split``/``unsafe_chunk`` run the same primitive but return pieces that are
not views to autograd, which may therefore be modified in place. ``cat``/``stack`` (and
split's rule) join their inputs with the contract's ``cat`` (on CUDA up to four inputs a
launch; ``stack`` views each input with the new dim); their rule slices the gradient back.
``narrow`` and ``select`` are basic-indexing views (views.py).
"""

from __future__ import annotations

from ..registry import OpInfo, composite_inplace, with_jvp
from ...runtime import dtype as D
from ...runtime.dtype import result_type
from ..checks import check_devices_match
from ..dispatch import (Primitive, apply, as_shape, call, expanded_dims, linear_jvp, meta,
                        zeros)
from ..layout import NHWC_PERMUTATIONS, suggest_memory_format
from ..tensor import Tensor, array_meta, int_arg, wrap_dim
from .views import (SliceBackward0, _as_view, _view_apply, getitem, int_tuple, is_size, permute,
                    view_jvp)


def _tensor_list(tensors, op: str) -> list:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors (a "
                        f"sequence of Tensors), not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    dev = tensors[0].device
    for t in tensors[1:]:
        check_devices_match(dev, t.device, op)
    dt = result_type(*tensors) if len(tensors) > 1 else tensors[0].dtype
    return [t if t.dtype is dt else t.to(dt) for t in tensors]


# -- cat / stack ----------------------------------------------------------------------------------

class CatBackward0(Primitive):
    """Each input is copied into its window along dim; its gradient is that window of g."""

    __slots__ = ()
    op_name = "cat"
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, *args):
        *arrays, dim, sizes = args
        ctx.dim, ctx.sizes = dim, sizes
        return _joined(k, arrays, dim)

    @staticmethod
    def vjp(ctx, k, saved, g):
        dim, sizes = ctx.dim, ctx.sizes
        lead = (slice(None),) * dim
        out, start = [], 0
        for need, n in zip(ctx.needs_input_grad, sizes):
            out.append(k.getitem(g, lead + (slice(start, start + n),)) if need else None)
            start += n
        return tuple(out)


class StackBackward0(Primitive):
    """Input i is written at index i of a new dim; its gradient is g selected there."""

    __slots__ = ()
    op_name = "stack"
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, *args):
        *arrays, dim = args
        ctx.dim = dim
        shape = list(arrays[0].shape)
        if dim < len(shape):
            # PyTorch's stack: the inputs joined along ``dim`` (cat's layout rule), the
            # result viewed with the new dim split off (a split is always a view)
            joined = _joined(k, arrays, dim)
            shape[dim:dim + 1] = [len(arrays), shape[dim]]
            return k.view(joined, tuple(shape))
        shape.insert(dim, 1)  # each input with the new last dim, joined along it (unsqueezed
        shape = tuple(shape)  # so, no input suggests channels-last: row-major)
        return k.contiguous(k.cat([_view_or_copy(k, a, shape) for a in arrays], dim))

    @staticmethod
    def vjp(ctx, k, saved, g):
        lead = (slice(None),) * ctx.dim
        return tuple(k.getitem(g, lead + (i,)) if need else None
                     for i, need in enumerate(ctx.needs_input_grad))


def _joined(k, arrays, dim: int):
    """The arrays joined along ``dim`` in the layout PyTorch's ``cat`` gives them
    (``compute_output_memory_format``): channels-last (channels_last_3d) when every input's
    strides suggest it, else row-major (NumPy's concatenate keeps the inputs' layout:
    transposed inputs would give a transposed result, whose ``view`` would then fail where
    PyTorch's succeeds)."""
    orders = NHWC_PERMUTATIONS.get(len(arrays[0].shape))
    if orders is not None and _all_channels_last(k, arrays):
        # joined in NHWC order (each input a permuted view, the result a fresh NHWC array),
        # then viewed back as NCHW: channels-last strides, with no copy but cat's own
        order, back = orders
        nhwc = k.cat([k.permute(a, order) for a in arrays], order.index(dim))
        return k.permute(nhwc, back)
    return k.contiguous(k.cat(arrays, dim))


def _all_channels_last(k, arrays) -> bool:
    """Whether every array's strides suggest a channels-last memory format."""
    return all(suggest_memory_format(tuple(a.shape), k.strides(a)) is not D.contiguous_format
               for a in arrays)


def _view_or_copy(k, a, shape: tuple):
    """``a`` viewed as ``shape`` (its elements in order), or a contiguous copy so viewed."""
    v = k.view(a, shape)
    return v if v is not None else k.view(k.contiguous(a), shape)


def _check_out(out, inputs, dtype, op: str = "cat") -> None:
    """PyTorch's checks of ``cat``'s ``out=`` made before anything is written: the result's
    dtype must cast to out's (a TypeError, as ``torch.cat()`` raises it), and out may not
    overlap an input's memory."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    from .elementwise import _can_cast
    if not _can_cast(dtype, out.dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{D.CPP_NAMES[out.dtype.name]}")
    span = _memory_span(out)
    for t in inputs:
        other = _memory_span(t)
        if span and other and span[0] == other[0] and span[1] < other[2] and other[1] < span[2]:
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. "
                               "Please clone() the tensor before performing the operation.")


def _memory_span(t: Tensor):
    """(storage pointer, first, one past the last element offset) of ``t``; None if empty."""
    if t.numel() == 0:
        return None
    lo = hi = t.storage_offset()
    for n, st in zip(t.shape, t.stride()):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return t.untyped_storage().data_ptr(), lo, hi + 1


def cat(tensors: list[Tensor] | tuple[Tensor, ...], dim: int = 0, *, out=None) -> Tensor:
    """Concatenates tensors along an existing ``dim`` (dtypes promote; 1-D empty tensors are
    skipped, as in PyTorch, and when all are such, ``dim`` is not checked)."""
    if not isinstance(tensors, Tensor):
        tensors = list(tensors)
        if not tensors:  # PyTorch's cat checks this with TORCH_CHECK_VALUE: a ValueError
            raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    ts = _tensor_list(tensors, "cat")
    if out is not None:
        _check_out(out, tensors, ts[0].dtype)
    nd = max(t.ndim for t in ts)
    if nd > 1:
        ts = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)] or ts[:1]
    elif all(t.ndim == 1 and t.shape[0] == 0 for t in ts):
        dim = 0  # (PyTorch skips every input, and with them the check of dim)
    for i, t in enumerate(ts):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               f"concatenated")
    d = wrap_dim(dim, ts[0].ndim, "cat", "dim", 2)
    ref = ts[0].shape
    for i, t in enumerate(ts[1:], 1):
        if t.ndim != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} "
                               f"and {t.ndim}")
        for j in range(len(ref)):
            if j != d and t.shape[j] != ref[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref[j]} but got size {t.shape[j]} for "
                                   f"tensor number {i} in the list.")
    r = apply(CatBackward0, tuple(ts), d, tuple(t.shape[d] for t in ts))
    if len(ts) < len(tensors) and not r.is_contiguous():
        _row_major(r)  # (a skipped 1-D empty input suggests row-major: PyTorch's result is)
    if out is not None:
        from .elementwise import _result
        return _result(r, out, "cat")
    return r


def _row_major(r: Tensor) -> None:
    """cat's own fresh result ``r`` made row-major in place (it keeps its node)."""
    k = r._k
    r._data = k.contiguous(r._data)


def stack(tensors: list[Tensor] | tuple[Tensor, ...], dim: int = 0, *, out=None) -> Tensor:
    """Stacks equally shaped tensors along a new ``dim``."""
    ts = _tensor_list(tensors, "stack")
    ref = tuple(ts[0].shape)
    for i, t in enumerate(ts[1:], 1):
        if tuple(t.shape) != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(ref)} at entry 0 and {list(t.shape)} at entry {i}")
    d = wrap_dim(dim, len(ref) + 1, "stack", "dim", 2)
    if out is not None:
        _check_out(out, tensors, ts[0].dtype, "stack")
    r = apply(StackBackward0, tuple(ts), d)
    if out is not None:
        from .elementwise import _result
        return _result(r, out, "stack")
    return r


# -- split / chunk / unbind ---------------------------------------------------------------------

class _SplitBackward(Primitive):
    """Views of consecutive windows along dim: the gradient joins the pieces' gradients.
    (split's and split_with_sizes' nodes are siblings: PyTorch's show ``_saved_split_size``
    and ``_saved_split_sizes`` respectively.)"""

    __slots__ = ()
    jvp = staticmethod(view_jvp)  # its outputs are views

    @staticmethod
    def forward(ctx, k, x, dim, sizes):
        ctx.dim, ctx.sizes, ctx.in_shape = dim, sizes, x.shape
        lead = (slice(None),) * dim
        outs, start = [], 0
        for n in sizes:
            outs.append(k.getitem(x, lead + (slice(start, start + n),)))
            start += n
        return tuple(outs)

    @staticmethod
    def vjp(ctx, k, saved, *grads):
        dim, shape = ctx.dim, ctx.in_shape
        like = next(g for g in grads if g is not None)
        parts = []
        for g, n in zip(grads, ctx.sizes):
            if g is None:
                g = zeros(k, shape[:dim] + (n,) + shape[dim + 1:], like)
            parts.append(g)
        return call(k, CatBackward0, parts, dim, ctx.sizes)


_SPLIT_ARGS = {"_saved_dim": property(lambda n: n.dim),
               "_saved_self_sym_sizes": property(lambda n: tuple(n.in_shape))}
_SPLIT_SIZE = {**_SPLIT_ARGS, "_saved_split_size": property(lambda n: n.sizes[0])}
_SPLIT_SIZES = {**_SPLIT_ARGS, "_saved_split_sizes": property(lambda n: tuple(n.sizes))}
SplitBackward0 = _SplitBackward.variant("SplitBackward0", "split")
SplitWithSizesBackward0 = _SplitBackward.variant("SplitWithSizesBackward0", "split_with_sizes",
                                                 **_SPLIT_SIZES)


class UnbindBackward0(Primitive):
    """Views of each index along dim: the gradient stacks the pieces' gradients."""

    __slots__ = ()
    op_name = "unbind"
    jvp = staticmethod(view_jvp)  # its outputs are views

    @staticmethod
    def forward(ctx, k, x, dim):
        ctx.dim, ctx.in_shape = dim, x.shape
        lead = (slice(None),) * dim
        return tuple(k.getitem(x, lead + (i,)) for i in range(x.shape[dim]))

    @staticmethod
    def vjp(ctx, k, saved, *grads):
        dim, shape = ctx.dim, ctx.in_shape
        like = next(g for g in grads if g is not None)
        piece = shape[:dim] + shape[dim + 1:]
        return call(k, StackBackward0, [g if g is not None else zeros(k, piece, like)
                                        for g in grads], dim)


def _multi_view(op, x: Tensor, *params) -> tuple:
    outs = apply(op, (x,), *params)
    if type(outs) is not tuple:
        outs = (outs,)
    return tuple(_as_view(o, x, True) for o in outs)


# unsafe_split's pieces share the input's memory but are not views to autograd (nor share its
# version counter), as PyTorch's: they may be modified in place, at the user's risk.
UnsafeSplitBackward0 = _SplitBackward.variant("UnsafeSplitBackward0", "unsafe_split",
                                              **_SPLIT_SIZE)
UnsafeSplitWithSizesBackward0 = _SplitBackward.variant("UnsafeSplitWithSizesBackward0",
                                                       "unsafe_split_with_sizes", **_SPLIT_SIZES)


def _split_plan(x: Tensor, split_size_or_sections, dim) -> tuple:
    """(dim, sizes, whether sizes were listed) of a split of ``x``, checked as PyTorch's."""
    d = wrap_dim(dim, x.ndim, "split", "dim", 2)
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    n = x.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = int_tuple(split_size_or_sections, "split_with_sizes", "split_sizes", 1)
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={list(sizes)}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={list(sizes)}")
        return d, sizes, True
    size = split_size_or_sections
    if type(size) is not int:
        size = int_arg(size, "split", "split_size", 1)
    if size < 0 or (size == 0 and n != 0):
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                           f"dimension size of {n}" if size == 0 else
                           f"split expects split_size be non-negative, but got split_size={size}")
    return d, ((0,) if n == 0 else tuple(min(size, n - s) for s in range(0, n, size))), False


def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Splits into views along ``dim``: pieces of ``split_size_or_sections`` (an int; the last
    piece may be smaller) or of the listed sizes (which must sum to the dim's size)."""
    d, sizes, listed = _split_plan(tensor, split_size_or_sections, dim)
    return _multi_view(SplitWithSizesBackward0 if listed else SplitBackward0, tensor, d, sizes)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """Splits into views along ``dim`` of the listed sizes ``split_sizes`` (non-negative, summing
    to the dim's size): :func:`split` with a list, under PyTorch's name and argument names.

    Example:
        >>> tg.split_with_sizes(tg.arange(5), [2, 3])
        (tensor([0, 1]), tensor([2, 3, 4]))
    """
    return split(input, _listed(split_sizes), dim)


def _listed(split_sizes):
    """``split_sizes`` as a list (a TypeError naming split_with_sizes for a single size)."""
    if isinstance(split_sizes, (list, tuple)):
        return split_sizes
    return list(int_tuple(split_sizes, "split_with_sizes", "split_sizes", 2))


def _split_method(self: Tensor, split_size, dim: int = 0) -> tuple:
    """``Tensor.split(split_size, dim=0)``: :func:`split` (PyTorch's method names its size
    argument ``split_size``, the function ``split_size_or_sections``)."""
    return split(self, split_size, dim)


_split_method.__qualname__ = "Tensor.split"  # (what a wrong keyword's TypeError names)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """``split``, whose pieces autograd does not track as views: each may be modified in
    place (the others and the input see the change, unchecked)."""
    d, sizes, listed = _split_plan(input, split_size, dim)
    op = UnsafeSplitWithSizesBackward0 if listed else UnsafeSplitBackward0
    outs = apply(op, (input,), d, sizes)
    return outs if type(outs) is tuple else (outs,)


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split_with_sizes`` whose pieces are not views to autograd (see ``unsafe_split``)."""
    return unsafe_split(input, list(_listed(split_sizes)), dim)


def _chunk_size(input: Tensor, chunks: int, dim: int) -> tuple:
    """(dim, the pieces' size) of ``chunk``; size 0 when the dim is empty."""
    if type(chunks) is not int:
        chunks = int_arg(chunks, "chunk", "chunks", 1)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input.ndim, "chunk", "dim", 2)
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    return d, -(-input.shape[d] // chunks), chunks


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Splits into ``chunks`` views of (nearly) equal size along ``dim``; the last may be
    smaller, and fewer chunks come back when the size does not allow that many."""
    d, size, chunks = _chunk_size(input, chunks, dim)
    if size == 0:  # PyTorch: an empty dim gives `chunks` empty pieces, not one
        return _multi_view(SplitWithSizesBackward0, input, d, (0,) * chunks)
    return split(input, size, d)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunk`` whose pieces are not views to autograd (see ``unsafe_split``)."""
    d, size, chunks = _chunk_size(input, chunks, dim)
    return unsafe_split(input, [0] * chunks if size == 0 else size, d)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """The views ``input.select(dim, i)`` for every i, as a tuple."""
    d = wrap_dim(dim, input.ndim, "unbind", "dim", 1)
    if input.ndim == 0:
        raise IndexError("unbind: Dimension specified as 0 but tensor has no dimensions")
    if input.shape[d] == 0:
        return ()
    return _multi_view(UnbindBackward0, input, d)


# -- narrow / select / movedim ------------------------------------------------------------------

def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """The view ``input[..., start:start + length, ...]`` along ``dim`` (start may be negative
    or a 0-d tensor)."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim, "narrow", "dim", 1)
    n = input.shape[d]
    if type(start) is not int:
        if isinstance(start, Tensor) and (start.ndim or start.dtype.is_floating_point
                                          or start.dtype.is_complex or start.dtype is D.bool):
            raise RuntimeError("narrow(): start must be an 0-dim integral Tensor.")
        start = int_arg(start, "narrow", "start", 2)
    length = length if type(length) is int else int_arg(length, "narrow", "length", 3)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    # PyTorch's narrow is one slice, a SliceBackward0 node even where it covers the whole dim
    # (where x[:, 0:n] is an alias)
    return _view_apply(SliceBackward0, input, (slice(None),) * d + (slice(start, start + length),))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The view at ``index`` along ``dim`` (that dim removed)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim, "select", "dim", 1)
    n = input.shape[d]
    i = index if type(index) is int else int_arg(index, "select", "index", 2)
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    return getitem(input, (slice(None),) * d + (i,))


def movedim(input: Tensor, source, destination) -> Tensor:
    """Moves dims ``source`` to positions ``destination`` (ints or sequences); a view."""
    src = int_tuple((source,) if is_size(source) else source, "movedim", "source")
    dst = int_tuple((destination,) if is_size(destination) else destination, "movedim",
                    "destination", 2)
    nd = input.ndim
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    src = tuple(wrap_dim(s, nd, "movedim") for s in src)
    dst = tuple(wrap_dim(s, nd, "movedim") for s in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source ({list(src)}) or destination "
                           f"({list(dst)})")
    if nd == 0:  # dims 0 and -1 of a 0-d tensor: nothing moves
        return permute(input, ())
    order = [None] * nd
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(i for i in range(nd) if i not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(input, tuple(order))


# -- repeat / tile --------------------------------------------------------------------------------

class RepeatBackward0(Primitive):
    """Tiles x ``reps`` times per dim; the gradient sums the tiles."""

    __slots__ = ()
    op_name = "repeat"
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, x, reps):
        lead = len(reps) - x.ndim
        shape = (1,) * lead + tuple(x.shape)
        ctx.in_shape, ctx.reps, ctx.shape = x.shape, reps, shape
        x = k.view(k.contiguous(x), shape)
        inter, big = [], []
        for r, n in zip(reps, shape):
            inter += [1, n]
            big += [r, n]
        t = k.expand(k.view(x, tuple(inter)), tuple(big))
        if all(r == 1 for r in reps):  # (contiguous would hand back x's own memory)
            t = k.astype(t, meta(t)[1])
        return k.view(k.contiguous(t), tuple(r * n for r, n in zip(reps, shape)))

    @staticmethod
    def vjp(ctx, k, saved, g):
        split_shape = []
        for r, n in zip(ctx.reps, ctx.shape):
            split_shape += [r, n]
        g = as_shape(k, g, tuple(split_shape))
        g = k.sum(g, tuple(range(0, 2 * len(ctx.reps), 2)), False)
        return as_shape(k, g, tuple(ctx.in_shape))


def repeat(input: Tensor, *sizes, repeats=None) -> Tensor:
    """Tiles the tensor ``sizes[i]`` times along each dim (leading new dims allowed; the sizes
    given unpacked or as ``repeats=``); always a copy."""
    if repeats is not None:
        if sizes:
            raise TypeError("repeat() got multiple values for argument 'repeats'")
        sizes = (repeats,)
    reps = sizes[0] if len(sizes) == 1 and not is_size(sizes[0]) else sizes
    reps = int_tuple(reps, "repeat", "repeats")
    if len(reps) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(reps)}")
    return apply(RepeatBackward0, (input,), reps)


def tile(input: Tensor, *args, dims=None) -> Tensor:
    """``repeat`` with missing leading repetitions taken as 1 (``dims`` a sequence, or as the
    method also takes them, unpacked)."""
    if dims is not None and args:
        raise TypeError("tile() got multiple values for argument 'dims'")
    if dims is None:
        if not args:
            raise TypeError("tile() missing 1 required positional arguments: \"dims\"")
        dims = args[0] if len(args) == 1 else args
    dims = (dims,) if is_size(dims) else dims
    dims = int_tuple(dims, "tile", "dims")
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


# -- tril / triu ----------------------------------------------------------------------------------

class TrilBackward0(Primitive):
    """Keeps the elements on and below (tril) or above (triu) the ``diagonal``-th diagonal of
    the last two dims; the gradient is masked the same way."""

    __slots__ = ()
    op_name = "tril"
    jvp = linear_jvp()
    _upper = False

    @classmethod
    def forward(cls, ctx, k, x, diagonal):
        ctx.diagonal = diagonal
        dev, dt = array_meta(x)
        from ...runtime import dtype as dtypes
        n, m = x.shape[-2], x.shape[-1]
        rows = k.view(k.arange(0, 1, n, dtypes.int64, dev), (n, 1))
        cols = k.view(k.arange(0, 1, m, dtypes.int64, dev), (1, m))
        offset = k.sub(cols, rows)
        keep = k.ge(offset, diagonal) if cls._upper else k.le(offset, diagonal)
        # (C-contiguous whatever x's layout, as PyTorch's result: ``x.mT.tril().view(-1)``)
        return k.contiguous(k.where(keep, x, False if dt is dtypes.bool else 0))

    @staticmethod
    def vjp(ctx, k, saved, g):
        return call(k, type(ctx), (g,), ctx.diagonal)


class TriuBackward0(TrilBackward0):
    __slots__ = ()
    op_name = "triu"
    _upper = True


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (on and below the ``diagonal``-th diagonal) of the last two dims."""
    if input.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    if type(diagonal) is not int:
        diagonal = int_arg(diagonal, "tril", "diagonal", 1)
    return apply(TrilBackward0, (input,), diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (on and above the ``diagonal``-th diagonal) of the last two dims."""
    if input.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    if type(diagonal) is not int:
        diagonal = int_arg(diagonal, "triu", "diagonal", 1)
    return apply(TriuBackward0, (input,), diagonal)


def _tri_inplace(upper: bool):
    """tril_ (triu_): composite_inplace's, a copy_ of the result, except into an expanded
    tensor, which copy_ refuses but PyTorch's tril_ allows: it writes only the zeros, so a
    memory location is zeroed when any of its aliases is outside the kept triangle (a masked
    fill on one alias per location, indexing.expanded_fill_target)."""
    name = "triu_" if upper else "tril_"
    plain = composite_inplace(triu if upper else tril, name[:-1])

    def inplace(self, diagonal: int = 0):
        if isinstance(self, Tensor) and self.ndim >= 2 and expanded_dims(self):
            from .creation import ones
            from .indexing import expanded_fill_target
            keep = ones(tuple(self.shape[-2:]), dtype=D.bool, device=self.device)
            drop = (triu if upper else tril)(keep, diagonal).logical_not_()
            target, drop = expanded_fill_target(self, drop, None)
            target.masked_fill_(drop, 0)
            return self
        return plain(self, diagonal)
    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = plain.__doc__
    return inplace


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("cat", cat, method=False, aliases=("concat", "concatenate"), grad="slices of g",
           autocast="promote"),
    OpInfo("stack", stack, method=False, grad="slices of g", autocast="promote"),
    OpInfo("split", split, method=_split_method, grad="cat of the gs"),
    OpInfo("split_with_sizes", split_with_sizes, grad="cat of the gs"),
    OpInfo("unsafe_split", unsafe_split, grad="cat of the gs"),
    OpInfo("unsafe_split_with_sizes", unsafe_split_with_sizes, grad="cat of the gs"),
    OpInfo("chunk", chunk, grad="cat of the gs"),
    OpInfo("unsafe_chunk", unsafe_chunk, grad="cat of the gs"),
    OpInfo("unbind", unbind, grad="stack of the gs"),
    OpInfo("narrow", narrow, grad="g in a zero tensor"),
    OpInfo("select", select, grad="g in a zero tensor"),
    OpInfo("movedim", movedim, aliases=("moveaxis",), grad="g, dims moved back"),
    OpInfo("repeat", repeat, grad="sum over the repeats"),
    OpInfo("tile", tile, grad="sum over the repeats"),
    OpInfo("tril", tril, grad="tril(g)", out="exact", inplace=_tri_inplace(False)),
    OpInfo("triu", triu, grad="triu(g)", out="exact", inplace=_tri_inplace(True)),
)
OPS = with_jvp(OPS)  # every primitive here has a jvp rule
