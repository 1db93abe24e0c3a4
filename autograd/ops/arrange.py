"""Composites that rearrange or place elements: ``ravel adjoint msort narrow_copy diagflat
argwhere nonzero_static hsplit vsplit dsplit``, the view-scatter family (``select_scatter
slice_scatter diagonal_scatter as_strided_scatter``: a copy of the input with a view's region
replaced), and the flat-index writes ``put``/``put_`` (one ``PutBackward0`` node, PyTorch's)
and ``fill_diagonal_``.

The view scatters are one primitive, views.py's ``AsStridedScatterBackward0`` (a copy of the
base with a strided region replaced; its rule sends ``g`` with the region zeroed to the input
and the region of ``g`` to ``src``, PyTorch's derivatives), under each op's grad_fn name: each
op only finds its view's geometry. The others are built from public ops (views, ``sort``,
``diag``, ``nonzero``, ``index_put``), so they have no rules of their own.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ...runtime import dtype as dtypes
from ..checks import check_same_device, checked_index, scalar_type_name, tensor_arg
from ..dispatch import (Primitive, apply, apply_inplace, as_shape, call, expanded_dims,
                        linear_jvp, meta, zeros)
from ..registry import OpInfo, check_exact_out
from ..tensor import Tensor, wrap_dim
from .combinations import diag, diagonal, tensor_split
from .creation import arange, full
from .indexing import IndexBackward0, IndexPutBackward0, nonzero
from .shape import cat, narrow, select
from .sorting import sort
from .views import AsStridedScatterBackward0, as_strided, getitem

# -- reshaping and small composites ---------------------------------------------------------------


def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-D tensor in row-major order: a view when the layout allows, else a
    copy."""
    return tensor_arg(input, "ravel").reshape(-1)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (``x.mH``)."""
    x = tensor_arg(input, "adjoint")
    if x.ndim == 0:
        _warn_0d("adjoint() is deprecated on 0-D tensors. Consider using x.conj().")
        return x.conj()
    if x.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {x.ndim}-D tensor.")
    return x.transpose(-2, -1).conj()


def matrix_T(x: Tensor, conjugate: bool = False) -> Tensor:
    """``x.mT`` (``conjugate``: ``x.mH``), the last two dimensions transposed, a view (of a
    real tensor: conjugation is a copy). On a 0-d tensor, deprecated as in PyTorch: ``x``
    itself (``mH``: ``x.conj()``), with PyTorch's warning."""
    if x.ndim == 0:
        if conjugate:
            _warn_0d("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().")
            return x.conj()
        _warn_0d("Tensor.mT is deprecated on 0-D tensors. This function is the identity in "
                 "these cases.")
        return x
    if x.ndim < 2:
        raise RuntimeError(f"tensor.{'mH' if conjugate else 'mT'} is only supported on matrices "
                           f"or batches of matrices. Got {x.ndim}-D tensor.")
    t = x.transpose(-2, -1)
    return t.conj() if conjugate else t


def _warn_0d(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)


def matrix_H(x: Tensor) -> Tensor:
    """``x.H``, the conjugate transpose of a matrix (a view of a real one)."""
    if x.ndim == 0:
        _warn_0d("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
        return x.conj()
    if x.ndim != 2:
        hint = " For batches of matrices, consider using tensor.mH" if x.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{x.ndim}-D tensor.{hint}")
    return x.transpose(0, 1).conj()


def msort(input: Tensor, *, out=None) -> Tensor:
    """``input`` sorted along its first dimension (``sort(input, dim=0).values``)."""
    from .elementwise import _result
    r = sort(tensor_arg(input, "msort"), 0).values
    if out is not None:
        check_exact_out(out, r.dtype)  # (PyTorch's msort.out is sort's, which does not cast)
    return _result(r, out, "sort")


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy of ``narrow(input, dim, start, length)``."""
    return narrow(tensor_arg(input, "narrow_copy"), dim, start, length).clone()


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The square matrix with ``input``'s elements (flattened) on its ``offset``-th
    diagonal."""
    return diag(tensor_arg(input, "diagflat").reshape(-1), offset)


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, one row each: an int64 (count, ndim) tensor
    (``nonzero(input)``)."""
    return nonzero(tensor_arg(input, "argwhere"))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1, out=None) -> Tensor:
    """The indices of the nonzero elements as ``nonzero`` gives them, in exactly ``size``
    rows: an int64 (size, ndim) tensor, truncated to the first ``size`` rows, or padded with
    rows of ``fill_value`` (default -1, an invalid index) when there are fewer."""
    x = tensor_arg(input, "nonzero_static")
    for name, v in (("size", size), ("fill_value", fill_value)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"nonzero_static(): argument '{name}' must be int, not "
                            f"{type(v).__name__}")
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = nonzero(x)
    n = found.shape[0]
    if n >= size:
        result = found[:size].contiguous()
    else:
        result = cat([found, full((size - n, x.ndim), fill_value, dtype=dtypes.int64,
                                  device=x.device)])
    if isinstance(out, Tensor) and out.numel() == 0:
        from ..storage import resize_for_output  # (an empty out= is resized, as PyTorch's)
        resize_for_output(out, tuple(result.shape))
    from .elementwise import _result
    return _result(result, out, "nonzero_static")


def _sections_arg(op: str, args: tuple, sections, indices):
    """The one split argument of ``hsplit``/``vsplit``/``dsplit``, by position or by
    PyTorch's keyword for its overload: ``sections=`` (an int) or ``indices=`` (a sequence of
    ints); anything else is PyTorch's TypeError listing the two overloads."""
    given = [*args] + [v for v in (sections, indices) if v is not None]
    if len(given) != 1 or (sections is not None and not isinstance(sections, numbers.Integral)) \
            or (indices is not None and not isinstance(indices, (tuple, list))):
        got = [type(a).__name__ for a in args] + [
            f"{k}={type(v).__name__}" for k, v in (("sections", sections), ("indices", indices))
            if v is not None]
        raise TypeError(f"{op}() received an invalid combination of arguments - got "
                        f"({', '.join(got)}), but expected one of:\n * (int sections)\n"
                        f" * (tuple of ints indices)")
    return given[0]


def _dim_split(input: Tensor, indices_or_sections, dim: int, least: int, op: str) -> tuple:
    x = tensor_arg(input, op)
    if x.ndim < least:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {least} dimension, but "
                           f"got a tensor with {x.ndim} dimensions!")
    if isinstance(indices_or_sections, int):
        size = x.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {indices_or_sections}!")
    return tensor_split(x, indices_or_sections, dim)


def hsplit(input: Tensor, *args, sections: int | None = None, indices=None) -> tuple:
    """hsplit(input, sections) or hsplit(input, indices)

    ``tensor_split`` along dim 1 (dim 0 for a 1-D tensor): into ``sections`` equal parts (an
    int, which must divide the size) or at the listed ``indices``.

    Example:
        >>> [t.shape[1] for t in tg.ones(2, 6).hsplit(indices=[1, 3])]
        [1, 2, 3]
    """
    split = _sections_arg("hsplit", args, sections, indices)
    return _dim_split(input, split, 1 if tensor_arg(input, "hsplit").ndim > 1 else 0, 1,
                      "hsplit")


def vsplit(input: Tensor, *args, sections: int | None = None, indices=None) -> tuple:
    """vsplit(input, sections) or vsplit(input, indices)

    ``tensor_split`` along dim 0 of a tensor of at least 2 dims (``sections`` equal parts, or
    at the listed ``indices``)."""
    return _dim_split(input, _sections_arg("vsplit", args, sections, indices), 0, 2, "vsplit")


def dsplit(input: Tensor, *args, sections: int | None = None, indices=None) -> tuple:
    """dsplit(input, sections) or dsplit(input, indices)

    ``tensor_split`` along dim 2 of a tensor of at least 3 dims (``sections`` equal parts, or
    at the listed ``indices``)."""
    return _dim_split(input, _sections_arg("dsplit", args, sections, indices), 2, 3, "dsplit")


# -- the view-scatter family ---------------------------------------------------------------------

SelectScatterBackward0 = AsStridedScatterBackward0.variant("SelectScatterBackward0",
                                                           "select_scatter")
SliceScatterBackward0 = AsStridedScatterBackward0.variant("SliceScatterBackward0",
                                                          "slice_scatter")
DiagonalScatterBackward0 = AsStridedScatterBackward0.variant("DiagonalScatterBackward0",
                                                             "diagonal_scatter")


def _view_scatter(op: type, input: Tensor, src: Tensor, view_of) -> Tensor:
    """A copy of ``input`` with the region ``view_of(input)`` replaced by ``src`` (cast to
    input's dtype): the view's geometry, applied by ``op``."""
    name = op.op_name
    x = tensor_arg(input, name)
    s = tensor_arg(src, name, "src")
    check_same_device(x, s, "src", name)
    if expanded_dims(x):  # (an expanded input is written densely: its region is one place)
        x = x.contiguous()
    view = view_of(x.detach())
    if tuple(s.shape) != tuple(view.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(s.shape)}, slice size = {list(view.shape)}")
    return apply(op, (x, s if s.dtype is x.dtype else s.to(x.dtype)), tuple(view.shape),
                 view.stride(), view.storage_offset() - x.storage_offset(), x.dtype, x.device)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``input.select(dim, index)`` replaced by ``src``. The gradient
    is ``g`` with that slice zeroed for ``input``, the slice of ``g`` for ``src``."""
    return _view_scatter(SelectScatterBackward0, input, src, lambda x: select(x, dim, index))


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with the slice ``start:end:step`` of dim ``dim`` replaced by
    ``src``. The gradient is ``g`` with the slice zeroed for ``input``, its slice for
    ``src``."""
    if isinstance(step, int) and step <= 0:  # (PyTorch's RuntimeError: indexing's is a ValueError)
        raise RuntimeError(f"slice_scatter: slice step must be positive (got {step})")

    def view_of(x):
        d = wrap_dim(dim, x.ndim, "slice_scatter")
        return getitem(x, (slice(None),) * d + (slice(start, end, step),))
    return _view_scatter(SliceScatterBackward0, input, src, view_of)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``.
    The gradient is ``g`` with that diagonal zeroed for ``input``, its diagonal for
    ``src``."""
    return _view_scatter(DiagonalScatterBackward0, input, src,
                         lambda x: diagonal(x, offset, dim1, dim2))


def as_strided_scatter(input: Tensor, src: Tensor, size, stride,
                       storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` with the region ``input.as_strided(size, stride,
    storage_offset)`` replaced by ``src``. The gradient is ``g`` with the region zeroed for
    ``input``, the region of ``g`` for ``src``."""
    return _view_scatter(AsStridedScatterBackward0, input, src,
                         lambda x: as_strided(x, size, stride, storage_offset))


# -- flat-index writes -----------------------------------------------------------------------------

class PutBackward0(Primitive):
    """input with the elements at ``index`` (positions in the row-major flattened tensor,
    already wrapped into range) set to ``source``'s, or with ``accumulate`` added to them
    (duplicates summed); one node saving ``source`` (for its shape) and the index, not an
    edge (PyTorch's). The result is row-major (PyTorch's keeps input's layout). input's
    gradient is ``g`` with the written places zeroed (all of ``g`` with ``accumulate``);
    source's is ``g`` taken at ``index``."""

    __slots__ = ()
    op_name = "put"
    save_inputs, save_when = (1,), (1,)
    keep_params = (0,)
    saved_names = ("source", "index")
    jvp = linear_jvp(0, 1)
    _saved_accumulate = property(lambda n: n.accumulate)  # (as PyTorch's node shows it)

    @staticmethod
    def forward(ctx, k, x, source, index, accumulate):
        ctx.accumulate, ctx.in_shape = accumulate, x.shape
        out = k.astype(x, meta(x)[1])  # (a row-major copy: its flat view is the positions)
        k.index_put_(as_shape(k, out, (math.prod(x.shape),)), (index,),
                     as_shape(k, source, tuple(index.shape)), accumulate)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        source, index = saved
        need_x, need_s = ctx.needs_input_grad
        n = math.prod(ctx.in_shape)
        flat = as_shape(k, g, (n,))
        gx = gs = None
        if need_x:
            gx = g if ctx.accumulate else as_shape(k, call(
                k, IndexPutBackward0, (flat, zeros(k, (), g)), (index,), False), ctx.in_shape)
        if need_s:
            gs = as_shape(k, call(k, IndexBackward0, (flat,), (index,)), tuple(source.shape))
        return gx, gs

    complex_vjp = vjp  # (it moves elements: the same map for complex values)
    complex_jvp = jvp


def _put(x: Tensor, index: Tensor, source: Tensor, accumulate: bool, inplace: bool) -> Tensor:
    op = "put_" if inplace else "put"
    tensor_arg(x, op)
    index = tensor_arg(index, op, "index")
    source = tensor_arg(source, op, "source")
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{scalar_type_name(index.dtype)}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {scalar_type_name(x.dtype)} and source.dtype = "
                           f"{scalar_type_name(source.dtype)}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() "
                         f"= {index.numel()}")
    check_same_device(x, index, "index", "put_")
    check_same_device(x, source, "source", "put_")
    n = x.numel()
    if n == 0 and index.numel():
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    index = checked_index(index, max(n, 1), 0, op, allow_negative=True,
                          error=lambda bad: IndexError(f"out of range: tried to access index "
                                                       f"{bad} on a tensor of {n} elements."))
    if inplace:
        return apply_inplace(PutBackward0, x, (source,), index, bool(accumulate))
    return apply(PutBackward0, (x, source), index, bool(accumulate))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with the elements at ``index`` (positions in the row-major
    flattened tensor; negative ones count from the end) set to ``source``'s (or, with
    ``accumulate``, added to them). One ``PutBackward0`` node: the gradient is ``g`` with the
    written positions zeroed (all of ``g`` with ``accumulate``), and ``g`` taken at ``index``
    for ``source``."""
    return _put(input, index, source, accumulate, False)


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place :func:`put`."""
    return _put(self, index, source, accumulate, True)


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fills the main diagonal with ``fill_value`` in place: of a matrix (with ``wrap``, a
    tall matrix's diagonal restarts every ``columns + 1`` rows, as NumPy's), or of a tensor
    whose dims are all equal (the elements ``[i, i, ..., i]``). Differentiable: the diagonal
    gets no gradient."""
    x = tensor_arg(self, "fill_diagonal_")
    if x.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(x.shape)
    if x.ndim > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if x.ndim == 2:
        rows, cols = shape
        end = rows * cols if wrap else min(rows, cols) * (cols + 1)
        flat = arange(0, min(end, rows * cols), cols + 1, device=x.device)
        index = (flat // cols, flat % cols) if cols else (flat, flat)
    else:
        index = (arange(shape[0], device=x.device),) * x.ndim
    return x.index_put_(index, full((), fill_value, dtype=x.dtype, device=x.device))


# -- the table ---------------------------------------------------------------------------------

_SCATTER = "g with the region zeroed, src: the region of g"

OPS = (
    OpInfo("ravel", ravel, dtypes="all", grad="g viewed back"),
    OpInfo("adjoint", adjoint, dtypes="all", grad="adjoint(g)"),
    OpInfo("msort", msort, dtypes="all but complex", grad="sort's"),
    OpInfo("narrow_copy", narrow_copy, dtypes="all", grad="g in a zero tensor", out="exact"),
    OpInfo("diagflat", diagflat, dtypes="all", grad="the diagonal of g"),
    OpInfo("argwhere", argwhere, dtypes="all; int64 result", grad="none"),
    OpInfo("nonzero_static", nonzero_static, dtypes="all; int64 result", grad="none"),
    OpInfo("hsplit", hsplit, dtypes="all", grad="cat of the gs"),
    OpInfo("vsplit", vsplit, dtypes="all", grad="cat of the gs"),
    OpInfo("dsplit", dsplit, dtypes="all", grad="cat of the gs"),
    OpInfo("select_scatter", select_scatter, dtypes="input's", grad=_SCATTER,
           node=SelectScatterBackward0),
    OpInfo("slice_scatter", slice_scatter, dtypes="input's", grad=_SCATTER,
           node=SliceScatterBackward0),
    OpInfo("diagonal_scatter", diagonal_scatter, dtypes="input's", grad=_SCATTER,
           node=DiagonalScatterBackward0),
    OpInfo("as_strided_scatter", as_strided_scatter, dtypes="input's", grad=_SCATTER,
           node=AsStridedScatterBackward0),
    OpInfo("put", put, inplace=put_, dtypes="one dtype; int64 index", node=PutBackward0,
           grad="g with the written positions zeroed, source: g at index"),
    OpInfo("fill_diagonal_", fill_diagonal_, function=False, dtypes="the tensor's",
           grad="g with the diagonal zeroed"),
)
