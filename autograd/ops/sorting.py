"""Sorting along a dim: ``sort``, ``argsort``, ``topk``, ``kthvalue``, ``median``,
``nanmedian`` and ``mode``.

One primitive carries all four: the backend's ``sort(a, dim, descending)`` (kernel contract;
stable, NaN the largest value) and a slice of its result along ``dim``: all of it (sort), the
first k (topk: a descending sort for the largest, ascending for the smallest), or the k-th
(kthvalue). topk and kthvalue are therefore a full sort of the dim, O(N log N) on the CPU and
the Triton backend's rank sort on CUDA (kernels/triton/sorting.py). The values' gradient goes
back to the positions the indices name (a scatter into zeros, ``gather_backward``); the
indices are never differentiable.

median and nanmedian pick, per slice, a position of the sorted slice computed on the device
(no host read-back): the lower median ``(n - 1) // 2``; for median a slice holding NaN gives its
first NaN (NaN propagates), for nanmedian the lower median of the non-NaN values (an all-NaN
slice gives NaN). Along a dim the gradient goes to the returned index, as kthvalue's; the
median of all elements shares it evenly among the elements equal to the result (PyTorch's
``evenly_distribute_backward``, as full max/min).

mode counts, on the device, the runs of equal values of the sorted slice (a run starts where a
value differs from the one before it; a cumsum numbers the runs, a scatter-add counts them)
and picks the first longest run, so ties go to the smallest value. The index is the last
occurrence of the value in the slice (the run's last position in the stable sort), as
PyTorch's CPU kernel returns for slices of up to 16 elements (beyond that its unstable sort
returns some occurrence; the CUDA kernel, any). NaN is unequal to itself, so each NaN is a
run of its own, counted once, as PyTorch's kernels count (they sort with ``<``, whose order
of NaN is unspecified; here NaN sorts last): a slice's mode is NaN only when it is all NaN.
The gradient goes to the returned index.

Every sort here is stable, so ``stable=False`` gives a stable order too (an unstable sort may
return any order of equal elements, and this is one), and ``topk(sorted=False)`` returns its
k values sorted (PyTorch leaves their order unspecified); topk's and kthvalue's indices of
equal values are therefore the earliest ones, where PyTorch's partial sorts return some.
sort's results take a dense input's layout (a transposed input gives transposed results), as
PyTorch's ``empty_like``-made outputs.
"""

from __future__ import annotations

import math

from ...runtime import dtype as dtypes
from ..checks import check_ordered, scalar_type_name
from ..dispatch import Primitive, apply, array_of, as_shape, meta
from ..layout import target_strides
from ..registry import OpInfo
from ..tensor import Tensor, int_arg, wrap_dim
from .indexing import gather_backward
from .reduction import _out_dtype_error, _ties_backward, _ties_jvp, return_types, write_pair


class SortBackward0(Primitive):
    """sort along dim, then the slice [start, stop) of the result (squeezed when ``squeeze``):
    the gradient is g written at the indices, zeros elsewhere."""

    __slots__ = ()
    op_name = "sort"
    nondiff_outputs = (1,)
    keep_outputs = (1,)  # the indices (Note [Saved indices])

    @staticmethod
    def forward(ctx, k, x, dim, descending, start, stop, squeeze):
        values, idx = k.sort(x, dim, descending)
        if (start, stop) != (0, x.shape[dim]):
            key = tuple(slice(start, stop) if d == dim else slice(None)
                        for d in range(len(x.shape)))
            values = k.contiguous(k.getitem(values, key))
            idx = k.contiguous(k.getitem(idx, key))
        if squeeze:
            shape = tuple(n for d, n in enumerate(values.shape) if d != dim)
            values, idx = as_shape(k, values, shape), as_shape(k, idx, shape)
        ctx.in_shape, ctx.dim, ctx.squeeze = tuple(x.shape), dim, squeeze
        return values, idx

    @staticmethod
    def vjp(ctx, k, saved, g, _g_indices=None):
        idx, = saved
        return gather_backward(k, g, ctx.in_shape, ctx.dim, array_of(idx), not ctx.squeeze)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        """The tangents at the indices (forward mode)."""
        dim, idx = ctx.dim, out[1]
        picked = tangents[0].gather(dim, idx.unsqueeze(dim) if ctx.squeeze else idx)
        return (picked.squeeze(dim) if ctx.squeeze else picked), None


TopkBackward0 = SortBackward0.variant("TopkBackward0", "topk")


KthvalueBackward0 = SortBackward0.variant("KthvalueBackward0", "kthvalue")


def _sorted_slice(op: type, input: Tensor, dim, descending: bool, start: int, stop, squeeze,
                  name: str):
    """Applies ``op`` along ``dim`` (a 0-d input is sorted as one element, its result 0-d)."""
    check_ordered(input, name)
    d = wrap_dim(dim, input.ndim, name)
    if input.ndim == 0:  # (PyTorch: topk(k=0) of a 0-d tensor still returns its element)
        values, idx = apply(op, (input.reshape(1),), 0, bool(descending), 0, 1, False)
        return values.reshape(()), idx.reshape(())
    if stop is None:  # a full sort: its results take the input's layout, as PyTorch's
        strides = target_strides(input, None)  # (None for a row-major input: no look)
        if strides is not None:
            # sort the view whose dims are in memory order (row-major for a dense input) and
            # permute the results back: they get the input's strides with no extra copy
            perm = sorted(range(input.ndim), key=lambda i: -strides[i])
            values, idx = apply(op, (input.permute(perm),), perm.index(d), bool(descending),
                                0, input.shape[d], False)
            inverse = [perm.index(i) for i in range(input.ndim)]
            return values.permute(inverse), idx.permute(inverse)
    return apply(op, (input,), d, bool(descending), start,
                 input.shape[d] if stop is None else stop, squeeze)


def _int_k(k, name: str) -> int:
    return k if k.__class__ is int else int_arg(k, name, "k", 2)


def _flags(op: str, descending, stable) -> None:
    """sort's and argsort's flags are bools (``stable`` may be None), PyTorch's TypeError
    otherwise, where ``bool()`` would read a string or a number as a flag."""
    for name, value in (("descending", descending), ("stable", stable)):
        if value.__class__ is not bool and not (value is None and name == "stable"):
            raise TypeError(f"{op}(): argument '{name}' must be bool, not "
                            f"{type(value).__name__}")


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False, *,
         out=None):
    """Sorts the elements of ``input`` along ``dim`` in ascending order by value (descending
    when ``descending``). Returns the named tuple ``(values, indices)``, where ``indices`` (int64)
    are the positions of the values in the original ``input``. ``out``: a pair of tensors of
    the values' dtype and int64 (as for ``topk`` and ``kthvalue``), both written.

    The sort is always stable (equal elements keep their order), whatever ``stable`` says; NaN
    sorts as the largest value.

    Example::

        >>> tg.sort(tg.tensor([3., 1., 2.]))
        tritongrad.return_types.sort(values=tensor([1., 2., 3.]), indices=tensor([1, 2, 0]))
    """
    _flags("sort", descending, stable)
    values, idx = _sorted_slice(SortBackward0, input, dim, descending, 0, None, False, "sort")
    if out is not None:  # (values, indices), both written, as PyTorch's out= pair
        return write_pair("sort", values, idx, out, _out_dtype_error)
    return return_types.sort(values, idx)


def argsort(input: Tensor, dim: int = -1, descending: bool = False,
            stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``); int64, stable."""
    _flags("argsort", descending, stable)
    return _sorted_slice(SortBackward0, input, dim, descending, 0, None, False, "argsort")[1]


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *,
         out=None):
    """The ``k`` largest elements of ``input`` along ``dim`` (the smallest when ``largest`` is
    False), as the named tuple ``(values, indices)``.

    The values are always returned sorted (largest first, or smallest first), also with
    ``sorted=False``; among equal elements the earlier ones come first.
    """
    k = _int_k(k, "topk")
    if input.dtype is dtypes.bool:
        raise RuntimeError("topk does not support bool dtypes")
    d = wrap_dim(dim, input.ndim, "topk")
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, idx = _sorted_slice(TopkBackward0, input, d, largest, 0, k, False, "topk")
    if out is not None:
        return write_pair("topk", values, idx, out, _out_dtype_error, position=5)
    return return_types.topk(values, idx)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """The ``k``-th smallest element of ``input`` along ``dim`` (k counts from 1), as the named
    tuple ``(values, indices)``; ``keepdim`` keeps ``dim`` with size 1. NaN counts as the
    largest value."""
    k = _int_k(k, "kthvalue")
    if input.dtype is dtypes.bool:
        raise NotImplementedError(f"\"kthvalue_{input.device.type}\" not implemented for "
                                  f"'{scalar_type_name(input.dtype)}'")
    d = wrap_dim(dim, input.ndim, "kthvalue")
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        if n == 0:  # (PyTorch's check of an empty dim comes first, an IndexError)
            raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    values, idx = _sorted_slice(KthvalueBackward0, input, d, False, k - 1, k, not keepdim,
                                "kthvalue")
    if out is not None:
        return write_pair("kthvalue", values, idx, out, _kthvalue_out_error, position=4)
    return return_types.kthvalue(values, idx)


def _kthvalue_out_error(want, got, which: str) -> str:
    if which == "values":
        return "output values must be of same type as input"
    return f"output indices must be of scalar type {scalar_type_name(want)}"


# -- median / nanmedian --------------------------------------------------------------------------

def _median_pick(k, x, dim: int, ignore_nan: bool):
    """(values, indices) of the median along ``dim`` of backend array ``x``, keepdim."""
    values, idx = k.sort(x, dim, False)  # stable, NaN last
    n = x.shape[dim]
    if meta(x)[1].is_floating_point:
        valid = k.sum(k.astype(k.eq(x, x), dtypes.int64), (dim,), True)  # non-NaN per slice
        if ignore_nan:  # (an all-NaN slice: position 0, a NaN)
            pos = k.binary("floor_divide", k.maximum(k.sub(valid, 1), 0), 2)
        else:  # a slice with NaN: its first NaN, which the stable sort puts at ``valid``
            pos = k.where(k.eq(valid, n), (n - 1) // 2, valid)
        return k.gather(values, dim, pos), k.gather(idx, dim, pos)
    key = tuple(slice((n - 1) // 2, (n - 1) // 2 + 1) if d == dim else slice(None)
                for d in range(len(x.shape)))
    return k.contiguous(k.getitem(values, key)), k.contiguous(k.getitem(idx, key))


def _picked(ctx, k, x, dim: int, keepdim: bool, values, idx) -> tuple:
    """(values, indices) picked along ``dim`` (given keepdim), squeezed unless ``keepdim``;
    ctx keeps what the gradient's scatter back to the indices needs, but the indices (saved as
    an output: ``keep_outputs``)."""
    if not keepdim:
        shape = tuple(n for d, n in enumerate(values.shape) if d != dim)
        values, idx = as_shape(k, values, shape), as_shape(k, idx, shape)
    ctx.in_shape, ctx.dim, ctx.squeeze = tuple(x.shape), dim, not keepdim
    return values, idx


class MedianBackward1(Primitive):
    """median(x, dim) -> (values, indices): the gradient goes to the returned index."""

    __slots__ = ()
    op_name = "median"
    nondiff_outputs = (1,)
    keep_outputs = (1,)
    _ignore_nan = False

    @classmethod
    def forward(cls, ctx, k, x, dim, keepdim):
        return _picked(ctx, k, x, dim, keepdim, *_median_pick(k, x, dim, cls._ignore_nan))

    vjp = SortBackward0.vjp
    jvp = SortBackward0.jvp


NanmedianBackward1 = MedianBackward1.variant("NanmedianBackward1", "nanmedian",
                                             _ignore_nan=True)


class MedianBackward0(Primitive):
    """median() of all elements: the gradient is shared evenly among the elements equal to the
    result (the NaNs, when it is NaN)."""

    __slots__ = ()
    op_name = "median"
    save_inputs = (0,)
    save_output = True
    _ignore_nan = False

    @classmethod
    def forward(cls, ctx, k, x):
        flat = as_shape(k, x, (math.prod(x.shape),))
        ctx.dims, ctx.keepdim = tuple(range(len(x.shape))), False
        return as_shape(k, _median_pick(k, flat, 0, cls._ignore_nan)[0], ())

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, out = saved
        return _ties_backward(k, g, x, out, tuple(range(len(x.shape))), False)

    jvp = staticmethod(_ties_jvp)


NanmedianBackward0 = MedianBackward0.variant("NanmedianBackward0", "nanmedian",
                                             _ignore_nan=True)


def _median(name: str, full_op: type, dim_op: type):
    rt = getattr(return_types, name)

    def fn(input: Tensor, dim=None, keepdim: bool = False, *, out=None):
        if out is not None and dim is None:  # (PyTorch's all-elements overload has no out=)
            raise TypeError(f"{name}() missing 1 required positional arguments: \"dim\"")
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        dt = input.dtype
        if dt is dtypes.bool or dt.is_complex:  # (PyTorch's kernel names, nanmedian's too)
            kernel = f"median_{input.device.type}" if dim is None else "median_out"
            raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                      f"'{scalar_type_name(dt)}'")
        if dim is None:
            if input.numel() == 0:  # PyTorch: NaN, cast to the input's dtype
                from .creation import full
                return full((), _empty_median(dt), dtype=dt, device=input.device)
            return apply(full_op, (input,))
        d = wrap_dim(dim, input.ndim, name)
        if input.ndim == 0:
            values, idx = apply(dim_op, (input.reshape(1),), 0, False)
        elif input.shape[d] == 0:
            raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
        else:
            values, idx = apply(dim_op, (input,), d, bool(keepdim))
        if out is None:
            return rt(values, idx)
        return write_pair(name, values, idx, out, _median_out_error)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _empty_median(dt) -> float | int:
    """The median PyTorch gives an empty tensor: NaN, or for an integer dtype what x86's
    conversion of NaN gives (the lowest int32 or int64; 0 in the narrower types, which
    keep its low bits)."""
    if dt.is_floating_point:
        return float("nan")
    return {dtypes.int64: -2 ** 63, dtypes.int32: -2 ** 31}.get(dt, 0)


def _median_out_error(want, got, which: str) -> str:
    """PyTorch's text for an out= tensor of the wrong dtype (nanmedian's names median too)."""
    if which == "values":
        return (f"Expected tensor for 'values' to have the same type as tensor for argument #2 "
                f"'self'; but type {_tensor_type(got)} does not equal {_tensor_type(want)} "
                f"(while checking arguments for median)")
    return (f"Expected tensor for argument #1 'indices' to have scalar type "
            f"{scalar_type_name(want)}; but got {_tensor_type(got)} instead (while checking "
            f"arguments for median)")


def _tensor_type(dt) -> str:
    """The legacy tensor type name of a CPU tensor of dtype ``dt`` (``Tensor.type()``)."""
    return f"tritongrad.{scalar_type_name(dt)}Tensor"


median = _median("median", MedianBackward0, MedianBackward1)
median.__doc__ = (
    """The lower median of all elements of ``input`` (NaN if any element is NaN); or, with
    ``dim``, the named tuple ``(values, indices)`` of the lower medians along ``dim`` (the
    first NaN of a slice holding one). ``keepdim`` keeps ``dim`` with size 1. The gradient
    goes to the returned index (with ``dim``), or is shared evenly among the elements equal to
    the median. ``out`` (with ``dim``): a pair of tensors of the values' dtype and int64, both
    written (and resized) as PyTorch's.""")
nanmedian = _median("nanmedian", NanmedianBackward0, NanmedianBackward1)
nanmedian.__doc__ = (
    """``median`` ignoring NaN: the lower median of the non-NaN values (NaN where a slice, or
    the tensor, is all NaN), with the same forms, gradients and ``out=`` as ``median``.""")


# -- mode ----------------------------------------------------------------------------------------

def _mode_pick(k, x, dim: int):
    """(values, indices) of the mode along ``dim`` of backend array ``x`` (non-empty), keepdim:
    the most frequent value (ties: the smallest), at the last index holding it."""
    values, idx = k.sort(x, dim, False)  # stable: a value's occurrences keep their order
    n, shape = x.shape[dim], tuple(x.shape)
    dev = meta(x)[0]

    def part(a, lo, hi):
        return k.getitem(a, tuple(slice(lo, hi) if d == dim else slice(None)
                                  for d in range(len(shape))))
    run = k.full(shape, 0, dtypes.int64, dev)  # the run of equal values each position is in
    if n > 1:
        starts = k.astype(k.ne(part(values, 1, n), part(values, 0, n - 1)), dtypes.int64)
        k.copy_(part(run, 1, n), k.cumsum(starts, dim))
    counts = k.full(shape, 0, dtypes.int64, dev)  # the length of each run (0 past the last)
    k.scatter_(counts, dim, run, 1, True)
    best = k.argreduce("argmax", counts, dim, True)  # the first longest: the smallest value
    last = k.sub(k.gather(k.cumsum(counts, dim), dim, best), 1)  # its last sorted position
    return k.gather(values, dim, last), k.gather(idx, dim, last)


class ModeBackward0(Primitive):
    """mode(x, dim) -> (values, indices): the gradient goes to the returned index."""

    __slots__ = ()
    op_name = "mode"
    nondiff_outputs = (1,)
    keep_outputs = (1,)

    @staticmethod
    def forward(ctx, k, x, dim, keepdim):
        if math.prod(x.shape) == 0:  # (the reduced dim is not empty: an empty result)
            shape = tuple(1 if d == dim else n for d, n in enumerate(x.shape))
            dev, dt = meta(x)
            return _picked(ctx, k, x, dim, keepdim, k.empty(shape, dt, dev),
                           k.empty(shape, dtypes.int64, dev))
        return _picked(ctx, k, x, dim, keepdim, *_mode_pick(k, x, dim))

    vjp = SortBackward0.vjp
    jvp = SortBackward0.jvp


def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *, out=None):
    """The mode of ``input`` along ``dim``: the named tuple ``(values, indices)`` of the most
    frequent value of each slice (among equally frequent values, the smallest) and the index
    of its last occurrence in the slice. ``keepdim`` keeps ``dim`` with size 1. Each NaN
    counts as a value of its own. The gradient goes to the returned index. ``out``: a pair of
    tensors of the values' dtype and int64, as for :func:`median`.

    Example::

        >>> tg.mode(tg.tensor([3., 1., 3., 1., 2.]))
        tritongrad.return_types.mode(values=tensor(1.), indices=tensor(3))
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"mode(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.is_complex:
        raise NotImplementedError(f"\"mode_{input.device.type}\" not implemented for "
                                  f"'{scalar_type_name(input.dtype)}'")
    d = wrap_dim(dim, input.ndim, "mode")
    if input.ndim == 0:
        values, idx = apply(ModeBackward0, (input.reshape(1),), 0, False)
    elif input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    else:
        values, idx = apply(ModeBackward0, (input,), d, bool(keepdim))
    if out is None:
        return return_types.mode(values, idx)
    return write_pair("mode", values, idx, out, _mode_out_error)


def _mode_out_error(want, got, which: str) -> str:
    return (f"expected scalar type '{scalar_type_name(want)}' but got '{scalar_type_name(got)}' "
            f"for {which} output")


# -- the table ---------------------------------------------------------------------------------

_SCATTERED = "g written at the indices (zeros elsewhere)"

OPS = (
    OpInfo("sort", sort, dtypes="all but complex; int64 indices", grad=_SCATTERED,
           node=SortBackward0),
    OpInfo("argsort", argsort, dtypes="all but complex; int64 result", grad="none"),
    OpInfo("topk", topk, dtypes="all but bool, complex; int64 indices", grad=_SCATTERED,
           node=TopkBackward0),
    OpInfo("kthvalue", kthvalue, dtypes="all but bool, complex; int64 indices", grad=_SCATTERED,
           node=KthvalueBackward0),
    OpInfo("median", median, dtypes="all but bool; int64 indices", node=MedianBackward1,
           grad=_SCATTERED + "; all elements: evenly shared among those equal to the result"),
    OpInfo("nanmedian", nanmedian, dtypes="all but bool; int64 indices",
           node=NanmedianBackward1,
           grad=_SCATTERED + "; all elements: evenly shared among those equal to the result"),
    OpInfo("mode", mode, dtypes="all but complex; int64 indices", grad=_SCATTERED,
           node=ModeBackward0),
)
