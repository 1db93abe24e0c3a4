"""Rearranging ops: ``swapaxes swapdims unflatten tensor_split repeat_interleave flip fliplr
flipud roll diagonal diag diag_embed trace triu_indices tril_indices``.

Most are written over views (``as_strided``, ``reshape``, basic indexing), ``cat`` and
``index_select``, so they run on both backends with no kernel of their own and are
differentiable through their parts. ``flip``, ``roll``, ``diagonal``, ``diag_embed`` and
``trace`` are one node each, as PyTorch records them (``FlipBackward0``, ``RollBackward0``,
``DiagonalBackward0``, ``DiagEmbedBackward0``, ``TraceBackward0``), their forwards made of the
contract's ``index``, ``cat``, ``as_strided``, ``copy_`` and ``sum``. ``diagonal``,
``swapaxes``, ``unflatten`` (where ``view`` can) and ``tensor_split``'s pieces are views, as in
PyTorch; the others copy.
"""

from __future__ import annotations

import math

import numpy as np

from ...runtime import dtype as dtypes
from ..checks import kernel_not_implemented, tensor_arg
from ..dispatch import SINK, Primitive, apply, as_shape, call, linear_jvp, meta
from ..layout import channels_last_order, dim_order, laid_out
from ..registry import OpInfo
from ..tensor import Tensor, int_arg, wrap_dim
from .creation import as_dtype, resolve_device, tensor
from .indexing import index_select
from .views import (AsStridedBackward0, _as_view, getitem, inplace_view, int_tuple, is_size,
                    transpose)


def _dims_arg(dims, op: str, name: str = "dims") -> tuple:
    """``dims`` given as one int or a sequence, as a tuple of ints."""
    return (int_arg(dims, op, name),) if is_size(dims) else int_tuple(dims, op, name)


def _unique_dims(dims: tuple, ndim: int, op: str) -> tuple:
    out = tuple(wrap_dim(d, ndim, op) for d in dims)
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


# -- renamed and reshaped views -------------------------------------------------------------------

def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """NumPy's name for :func:`transpose`: a view with ``axis0`` and ``axis1`` swapped."""
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Another name for :func:`transpose`: a view with ``dim0`` and ``dim1`` swapped."""
    return transpose(input, dim0, dim1)


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Expands dimension ``dim`` into the dims ``sizes`` (one of which may be -1); a view
    where :func:`view` can make one.

    Example:
        >>> tg.zeros(2, 6).unflatten(1, (3, -1)).shape
        tritongrad.Size([2, 3, 2])
    """
    sizes = _dims_arg(sizes, "unflatten", "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if input.ndim == 0:  # (wrap_dim would take 0 and -1 for a 0-d tensor: PyTorch refuses)
        raise RuntimeError(f"unflatten got an unexpected error: Dimension specified as {dim} "
                           f"but tensor has no dimensions")
    d = wrap_dim(dim, input.ndim, "unflatten")
    n = input.shape[d] if input.ndim else 1
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error: only one dimension can be "
                           "inferred")
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    inferred = sizes.count(-1) == 1 and known and n % known == 0
    if not (inferred or (-1 not in sizes and known == n)):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({n}) in the input tensor")
    sizes = tuple(n // known if s == -1 else s for s in sizes)
    shape = tuple(input.shape)
    return input.reshape(shape[:d] + sizes + shape[d + 1:])


_NO_ARG = object()


def tensor_split(input: Tensor, indices_or_sections=_NO_ARG, dim: int = 0, *,
                 sections=_NO_ARG, indices=_NO_ARG, tensor_indices_or_sections=_NO_ARG
                 ) -> tuple:
    """Splits into views along ``dim``: into ``sections`` pieces (an int; the first
    ``size % sections`` are one longer) or at the listed ``indices`` (a sequence, or a 1-D
    int64 tensor; a 0-d one is a number of sections). Positionally, or by the keyword of
    PyTorch's overload: ``sections=`` (an int), ``indices=`` (a sequence) or
    ``tensor_indices_or_sections=`` (a tensor).

    Example:
        >>> [p.tolist() for p in tg.tensor_split(tg.arange(7), 3)]
        [[0, 1, 2], [3, 4], [5, 6]]
    """
    given = [(n, v) for n, v in (("indices_or_sections", indices_or_sections),
                                  ("sections", sections), ("indices", indices),
                                  ("tensor_indices_or_sections", tensor_indices_or_sections))
             if v is not _NO_ARG]
    if len(given) != 1:
        raise TypeError("tensor_split() expects exactly one of indices_or_sections (positional), "
                        f"sections, indices or tensor_indices_or_sections, got "
                        f"{[n for n, _ in given] or 'none'}")
    name, indices_or_sections = given[0]
    kinds = {"sections": (is_size, "int"), "tensor_indices_or_sections": (
        lambda v: isinstance(v, Tensor), "Tensor"), "indices": (
        lambda v: not is_size(v) and not isinstance(v, Tensor), "tuple of ints")}
    if name in kinds and not kinds[name][0](indices_or_sections):
        raise TypeError(f"tensor_split(): argument '{name}' must be {kinds[name][1]}, not "
                        f"{type(indices_or_sections).__name__}")
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, input.ndim, "tensor_split")
    arg = indices_or_sections
    if isinstance(arg, Tensor):
        if arg.device.type != "cpu" or arg.dtype is not dtypes.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a tensor "
                               f"of long dtype on the CPU, but got {arg.dtype} on {arg.device}")
        if arg.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {arg.ndim} dims")
        arg = arg.item() if arg.ndim == 0 else arg.tolist()
    n = input.shape[d]
    if is_size(arg):
        sections = int_arg(arg, "tensor_split", "sections", 1)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        base, extra = divmod(n, sections)
        bounds, start = [], 0
        for i in range(sections):
            start += base + (i < extra)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = list(int_tuple(arg, "tensor_split", "indices", 1))
    lead = (slice(None),) * d
    starts = [0] + bounds
    ends = bounds + [n]  # (an explicit end: the last piece's node shows it, as PyTorch's)
    # Python slices clip to the dim and give empty pieces for decreasing indices, which is
    # what tensor_split specifies
    return tuple(getitem(input, lead + (slice(a, b),)) for a, b in zip(starts, ends))


# -- repeat_interleave --------------------------------------------------------------------------

def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeats each element ``repeats`` times along ``dim`` (the flattened input when ``dim``
    is None). ``repeats`` is an int, or a 1-D tensor with one count per element along
    ``dim``. ``repeat_interleave(counts)`` alone gives the indices ``0, 1, ...`` each repeated
    its count (the index vector of the general form).

    Example:
        >>> tg.repeat_interleave(tg.tensor([[1, 2], [3, 4]]), 2, dim=0).tolist()
        [[1, 2], [1, 2], [3, 4], [3, 4]]
    """
    if repeats is None:  # repeat_interleave(repeats): the indices themselves
        counts = _counts(input, input.shape[0] if input.ndim else 1)
        return tensor(np.repeat(np.arange(counts.size), counts), dtype=input.dtype,
                      device=input.device)  # (in the counts' dtype, as PyTorch's)
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, x.ndim, "repeat_interleave")
    if x.ndim == 0:
        x = x.reshape(1)
    n = x.shape[d]
    if isinstance(repeats, Tensor) and repeats.numel() != 1:
        counts = _counts(repeats, n)
        total = int(counts.sum())
        _check_output_size(output_size, total)
        index = tensor(np.repeat(np.arange(n), counts), device=x.device)
        return index_select(x, d, index)
    r = int_arg(repeats.item() if isinstance(repeats, Tensor) else repeats,
                "repeat_interleave", "repeats", 1)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    _check_output_size(output_size, n * r)
    shape = tuple(x.shape)
    # a new axis of r broadcast copies right after dim, folded into it: each element then
    # sits next to its repeats (the gradient sums them back through expand)
    tiled = x.unsqueeze(d + 1).expand(shape[:d + 1] + (r,) + shape[d + 1:])
    # (a contiguous copy viewed, as PyTorch's: CloneBackward0 then a ViewBackward0 view)
    return tiled.contiguous().view(shape[:d] + (n * r,) + shape[d + 1:])


def _counts(repeats: Tensor, n: int) -> np.ndarray:
    """The host copy of a 1-D tensor of repeat counts for a dim of size ``n``, checked."""
    if repeats.dtype not in (dtypes.int32, dtypes.int64):  # (PyTorch's kernel takes no other)
        raise kernel_not_implemented(f"repeat_interleave_{repeats.device.type}", repeats.dtype)
    if repeats.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    counts = repeats.reshape(-1).cpu().numpy().astype(np.int64)
    if counts.size != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.size} and input.size(0) = {n}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    return counts


def _check_output_size(output_size, total: int) -> None:
    if output_size is not None and output_size != total:
        raise RuntimeError(f"repeat_interleave: allocated size does not match required size "
                           f"(output_size={output_size}, required {total})")


# -- flip / roll ----------------------------------------------------------------------------------

def _copy(k, x):
    """A new row-major copy of array ``x`` (``contiguous`` may return ``x`` itself)."""
    return k.astype(x, meta(x)[1])


class FlipBackward0(Primitive):
    """The elements in reverse order along ``dims``: the gradient is ``g`` flipped back."""

    __slots__ = ()
    op_name = "flip"
    jvp = linear_jvp()
    _saved_dims = property(lambda n: tuple(n.dims))  # (as PyTorch's node shows them)

    @staticmethod
    def forward(ctx, k, x, dims):
        ctx.dims = dims
        # PyTorch's flip keeps x's layout (dense in x's dimension order): flipped in that
        # order, row-major there, and permuted back
        order = dim_order(x.shape, k.strides(x)) if len(x.shape) > 1 else None
        if order is None or order == tuple(range(len(order))):
            return FlipBackward0._flipped(k, x, dims)
        out = FlipBackward0._flipped(k, k.permute(x, order), [order.index(d) for d in dims])
        return k.permute(out, tuple(order.index(d) for d in range(len(order))))

    @staticmethod
    def _flipped(k, x, dims):
        """``x`` flipped along ``dims``, a new row-major array."""
        dev, _ = meta(x)
        out = x
        for d in dims:  # (one gather per flipped dim of more than one element)
            n = x.shape[d]
            if n > 1:
                out = k.index(out, (None,) * d + (k.arange(n - 1, -1, n, dtypes.int64, dev),))
        # (NumPy's gather along a dim other than the first lays its result out with that dim
        # first: made row-major here)
        return _copy(k, x) if out is x else k.contiguous(out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return call(k, FlipBackward0, (g,), ctx.dims)

    complex_vjp = vjp  # (a permutation of the elements: the same map for complex values)


def flip(input: Tensor, *args, dims=None) -> Tensor:
    """Reverse the order of an n-D tensor along the given axis in ``dims`` (an int or a
    sequence, positionally or as ``dims=``; the method also takes them unpacked); a copy,
    one ``FlipBackward0`` node.

    Example:
        >>> tg.tensor([[1, 2], [3, 4]]).flip(0, 1).tolist()
        [[4, 3], [2, 1]]
        >>> tg.flip(tg.tensor([1, 2, 3]), dims=[0]).tolist()
        [3, 2, 1]
    """
    if dims is not None and args:
        raise TypeError("flip() got multiple values for argument 'dims'")
    if dims is None:
        if not args:
            raise TypeError("flip() missing 1 required positional argument: 'dims'")
        dims = args[0] if len(args) == 1 else args
    tensor_arg(input, "flip")
    dims = _unique_dims(_dims_arg(dims, "flip"), input.ndim, "flip")
    return apply(FlipBackward0, (input,), dims if input.ndim else ())


def fliplr(input: Tensor) -> Tensor:
    """Flips the columns (dim 1) of a tensor of at least 2 dims."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """Flips the rows (dim 0) of a tensor of at least 1 dim."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class RollBackward0(Primitive):
    """The elements rolled by ``shifts`` along ``dims`` (one shift per dim; no dims: the
    flattened tensor, by one shift): the gradient is ``g`` rolled back."""

    __slots__ = ()
    op_name = "roll"
    jvp = linear_jvp()
    _saved_shifts = property(lambda n: tuple(n.shifts))
    _saved_dims = property(lambda n: tuple(n.dims))

    @staticmethod
    def forward(ctx, k, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        if not dims:  # the flattened tensor, rolled, in the input's shape
            flat = as_shape(k, x, (math.prod(x.shape),))
            return as_shape(k, RollBackward0.forward(SINK, k, flat, shifts, (0,)), x.shape)
        out = x
        for s, d in zip(shifts, dims):
            n = x.shape[d]
            s = s % n if n else 0
            if s:  # the last s elements, then the first n - s
                lead = (slice(None),) * d
                out = k.cat([k.getitem(out, lead + (slice(n - s, n),)),
                             k.getitem(out, lead + (slice(0, n - s),))], d)
        # (in the memory format x's strides suggest, as PyTorch's result: channels-last or
        # row-major; cat keeps a permuted one's layout)
        out = _copy(k, x) if out is x else out
        return laid_out(k, out, channels_last_order(k, x))

    @staticmethod
    def vjp(ctx, k, saved, g):
        return call(k, RollBackward0, (g,), tuple(-s for s in ctx.shifts), ctx.dims)

    complex_vjp = vjp  # (a permutation of the elements: the same map for complex values)


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Roll the tensor ``input`` along the given dimension(s) (ints or matching sequences):
    elements that are shifted beyond the last position are re-introduced at the first
    position. If ``dims`` is None, the tensor is flattened before rolling and then restored
    to the original shape. A copy, one ``RollBackward0`` node.

    Example:
        >>> tg.roll(tg.arange(5), 2).tolist()
        [3, 4, 0, 1, 2]
    """
    tensor_arg(input, "roll")
    shifts = _dims_arg(shifts, "roll", "shifts")
    dims = () if dims is None else _dims_arg(dims, "roll")
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return apply(RollBackward0, (input,), shifts, ())
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    return apply(RollBackward0, (input,), shifts,
                 tuple(wrap_dim(d, input.ndim, "roll") for d in dims))


# -- diagonals ------------------------------------------------------------------------------------

class DiagonalBackward0(AsStridedBackward0):
    """The ``offset``-th diagonal of the planes (``dim1``, ``dim2``), a view: as_strided's
    forward and rule with the geometry worked out from the input's strides (so that a
    tangent of another layout gets its own diagonal, forward AD)."""

    __slots__ = ()
    op_name = "diagonal"
    _saved_offset = property(lambda n: n.diag[0])  # (as PyTorch's node shows them)
    _saved_dim1 = property(lambda n: n.diag[1])
    _saved_dim2 = property(lambda n: n.diag[2])
    _saved_self_sym_sizes = property(lambda n: tuple(n.layout[0]))

    @staticmethod
    def forward(ctx, k, x, offset, d1, d2):
        ctx.diag = (offset, d1, d2)
        shape, strides = x.shape, k.strides(x)
        if offset >= 0:
            n = max(0, min(shape[d1], shape[d2] - offset))
            start = offset * strides[d2]
        else:
            n = max(0, min(shape[d1] + offset, shape[d2]))
            start = -offset * strides[d1]
        keep = [i for i in range(len(shape)) if i not in (d1, d2)]
        # element i of the diagonal is (i, i + offset) in the plane: one step moves both dims
        return AsStridedBackward0.forward(
            ctx, k, x, tuple(shape[i] for i in keep) + (n,),
            tuple(strides[i] for i in keep) + (strides[d1] + strides[d2],), start if n else 0)

    complex_vjp = AsStridedBackward0.vjp  # (it moves elements: the same map for complex)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """Returns a partial view of ``input`` with its diagonal elements with respect to ``dim1``
    and ``dim2`` appended as a dimension at the end of the shape (the ``offset``-th diagonal:
    above the main one for ``offset > 0``). One ``DiagonalBackward0`` node.

    Example:
        >>> tg.arange(9.).reshape(3, 3).diagonal(1).tolist()
        [1.0, 5.0]
    """
    tensor_arg(input, "diagonal")
    nd = input.ndim
    d1, d2 = wrap_dim(dim1, nd, "diagonal"), wrap_dim(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int_arg(offset, "diagonal", "offset", 1)
    return _as_view(apply(DiagonalBackward0, (input,), offset, d1, d2), input)


_diagonal = diagonal  # (diag's argument of that name hides the function)


class DiagEmbedBackward0(Primitive):
    """x's last dim on the ``offset``-th diagonal of the planes (``dim1``, ``dim2``) of a zero
    tensor, one node (PyTorch's): the zeros written, then x copied into their diagonal view.
    The gradient is that diagonal of ``g`` (a ``DiagonalBackward0`` when recorded, as
    PyTorch's). ``sizes`` gives the planes' sides where they are not square (trace's
    gradient); by default both are ``n + |offset|``."""

    __slots__ = ()
    op_name = "diag_embed"
    jvp = linear_jvp()
    _saved_offset = property(lambda n: n.diag[0])  # (as PyTorch's node shows them)
    _saved_dim1 = property(lambda n: n.diag[1])
    _saved_dim2 = property(lambda n: n.diag[2])

    @staticmethod
    def forward(ctx, k, x, offset, d1, d2, sizes=None):
        ctx.diag = (offset, d1, d2)
        dev, dt = meta(x)
        n = x.shape[-1]
        rows, cols = sizes or (n + abs(offset),) * 2
        shape = list(x.shape[:-1])
        for d, side in sorted(((d1, rows), (d2, cols))):
            shape.insert(d, side)
        out = k.full(tuple(shape), 0, dt, dev)
        if n:
            k.copy_(DiagonalBackward0.forward(SINK, k, out, offset, d1, d2), x)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        return call(k, DiagonalBackward0, (g,), *ctx.diag)

    complex_vjp = vjp  # (it moves elements: the same map for complex values)
    complex_jvp = jvp


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose planes (``dim1``, ``dim2``) hold the last dim of ``input`` on their
    ``offset``-th diagonal, zeros elsewhere; the planes are of side ``n + |offset|``. One
    ``DiagEmbedBackward0`` node.

    Example:
        >>> tg.diag_embed(tg.tensor([1, 2])).tolist()
        [[1, 0], [0, 2]]
    """
    tensor_arg(input, "diag_embed")
    nd = input.ndim + 1
    for d in (dim1, dim2):  # (PyTorch's message names no op here)
        if type(d) is int and not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                             f"{nd - 1}], but got {d})")
    d1, d2 = wrap_dim(dim1, nd, "diag_embed"), wrap_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int_arg(offset, "diag_embed", "offset", 1)
    return apply(DiagEmbedBackward0, (input,), offset, d1, d2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """For a 1-D input, the square matrix with it on its ``diagonal``-th diagonal; for a 2-D
    input, a copy of that diagonal (1-D).

    Example:
        >>> tg.diag(tg.tensor([1., 2.]), 1).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
    """
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return _diagonal(input, diagonal).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


class TraceBackward0(Primitive):
    """The sum of a matrix's main diagonal, one node (PyTorch's; integers sum in int64): the
    gradient is ``g`` on the diagonal of a zero matrix of the input's shape (diag_embed's
    forward, so recorded it is a ``DiagEmbedBackward0``)."""

    __slots__ = ()
    op_name = "trace"
    _saved_self_sym_sizes = property(lambda n: tuple(n.in_shape))  # (as PyTorch's node)

    @staticmethod
    def forward(ctx, k, x):
        ctx.in_shape = x.shape
        dt = meta(x)[1]
        d = DiagonalBackward0.forward(SINK, k, x, 0, 0, 1)
        if not (dt.is_floating_point or dt.is_complex) and dt is not dtypes.int64:
            d = k.astype(d, dtypes.int64)  # (PyTorch's sum of integers: int64)
        return k.sum(d, (0,), False)

    @staticmethod
    def vjp(ctx, k, saved, g):
        rows, cols = ctx.in_shape
        diag = k.expand(as_shape(k, g, (1,)), (min(rows, cols),))
        return call(k, DiagEmbedBackward0, (diag,), 0, 0, 1, (rows, cols))

    complex_vjp = vjp  # (linear: the same map for complex values)
    jvp = linear_jvp()
    complex_jvp = jvp


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-D tensor (of any shape, as PyTorch's); integers
    sum in int64. One ``TraceBackward0`` node.

    Example:
        >>> tg.trace(tg.arange(6.).view(2, 3))
        tensor(4.)
    """
    if tensor_arg(input, "trace").dtype is dtypes.bool:
        raise kernel_not_implemented("trace", dtypes.bool)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return apply(TraceBackward0, (input,))


def _triangle_indices(upper: bool, row: int, col: int, offset: int, dtype, device,
                      layout) -> Tensor:
    op = "triu_indices" if upper else "tril_indices"
    row, col, offset = (int_arg(v, op, n, i) for i, (v, n) in
                        enumerate(((row, "row"), (col, "col"), (offset, "offset"))))
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row must be non-negative, got {row}" if row < 0 else
                           f"{op}: col must be non-negative, got {col}")
    if layout is not None and str(layout) != "torch.strided":
        raise RuntimeError(f"{op}: only the strided layout is supported, got {layout}")
    dt = as_dtype(dtype, dtypes.int64)
    if dt.is_floating_point or dt is dtypes.bool:
        raise RuntimeError(f'"{op}" not implemented for \'{dt}\'')
    make = np.triu_indices if upper else np.tril_indices
    r, c = make(row, offset, col) if row and col else (np.zeros(0, int), np.zeros(0, int))
    return tensor(np.stack([r, c]), dtype=dt, device=resolve_device(device))


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (2, N) row and column indices of the upper triangle (on and above the
    ``offset``-th diagonal) of a ``row`` x ``col`` matrix, in row-major order.

    Example:
        >>> tg.triu_indices(2, 3, 1).tolist()
        [[0, 0, 1], [1, 2, 2]]
    """
    return _triangle_indices(True, row, col, offset, dtype, device, layout)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (2, N) row and column indices of the lower triangle (on and below the
    ``offset``-th diagonal) of a ``row`` x ``col`` matrix, in row-major order."""
    return _triangle_indices(False, row, col, offset, dtype, device, layout)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("swapaxes", swapaxes, inplace=inplace_view(swapaxes), grad="g, axes swapped back"),
    OpInfo("swapdims", swapdims, inplace=inplace_view(swapdims), grad="g, dims swapped back"),
    OpInfo("unflatten", unflatten, grad="g reshaped back"),
    OpInfo("tensor_split", tensor_split, grad="the gs in a zero tensor"),
    OpInfo("repeat_interleave", repeat_interleave, grad="sum over the repeats"),
    OpInfo("flip", flip, node=FlipBackward0, grad="flip(g)"),
    OpInfo("fliplr", fliplr, node=FlipBackward0, grad="fliplr(g)"),
    OpInfo("flipud", flipud, node=FlipBackward0, grad="flipud(g)"),
    OpInfo("roll", roll, node=RollBackward0, grad="roll(g, -shifts)"),
    OpInfo("diagonal", diagonal, node=DiagonalBackward0,
           grad="g on the diagonal of a zero tensor"),
    OpInfo("diag_embed", diag_embed, node=DiagEmbedBackward0, grad="diagonal(g)"),
    OpInfo("diag", diag, grad="diag(g)", out="exact"),
    OpInfo("trace", trace, flops="elementwise", node=TraceBackward0,
           grad="g on the diagonal of a zero tensor",
           autocast="float32 on cpu"),
    OpInfo("triu_indices", triu_indices, method=False, dtypes="integers (int64)", grad="none"),
    OpInfo("tril_indices", tril_indices, method=False, dtypes="integers (int64)", grad="none"),
)
