"""Sets, counts and bins: ``searchsorted bucketize unique unique_consecutive bincount histc``.

Their results are integer positions, counts or histograms: none carries a gradient (as
PyTorch's; ``unique``'s values, and ``bincount``'s with weights, require grad where the input
(the weights) does, with a grad_fn that raises, as PyTorch's). Each is computed by
NumPy on the host and the result put on the input's device:
``unique``'s, ``unique_consecutive``'s and ``bincount``'s output sizes depend on the values,
so even PyTorch's CUDA kernels synchronize with the host to size them, and a sort or a binary
search per element costs the copy's order anyway.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...runtime import dtype as dtypes
from ..checks import kernel_not_implemented, scalar_type_name, tensor_arg
from ..registry import OpInfo
from ..state import state
from ..storage import NotImplementedBackward
from ..tensor import Tensor, int_arg, wrap_dim
from .creation import empty_strided, host_to
from .elementwise import _result


def _host(t: Tensor) -> np.ndarray:
    """``t``'s values as a NumPy array (bfloat16 as float32, which holds each exactly)."""
    t = t.detach()
    if t.dtype is dtypes.bfloat16:
        t = t.to(dtypes.float32)
    return t.cpu().numpy()


def _put(arr: np.ndarray, dtype, like: Tensor) -> Tensor:
    return host_to(np.asarray(arr), dtype, like.device)


# -- binary search -----------------------------------------------------------------------------

def _side(right: bool, side) -> str:
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                           f"{side}")
    if right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                           "got side of left while right was True")
    return side


def _binary_search(s: np.ndarray, v: np.ndarray, right: bool) -> np.ndarray:
    """PyTorch's binary search (cus_lower_bound / cus_upper_bound), run for every value at
    once: row ``i`` of the (R, n) ``s`` serves row ``i`` of the (R, m) ``v``. Its exact steps
    matter where the order is not total: a NaN value goes past every boundary (``!(b >= nan)``
    holds), and unsorted boundaries give PyTorch's answer, not NumPy's."""
    n = s.shape[1]
    lo = np.zeros(v.shape, np.int64)
    hi = np.full(v.shape, n, np.int64)
    with np.errstate(invalid="ignore"):
        while True:
            active = lo < hi
            if not active.any():
                return lo
            mid = (lo + hi) >> 1
            b = np.take_along_axis(s, np.minimum(mid, n - 1), 1)
            up = ~(b > v) if right else ~(b >= v)  # (not b <= v: NaN must go up)
            lo = np.where(active & up, mid + 1, lo)
            hi = np.where(active & ~up, mid, hi)


def _sorted_without_nan(s: np.ndarray) -> bool:
    """Whether the 1-d ``s`` is sorted and holds no NaN: then every value (NaN too: past the
    end) has a single place, which any binary search finds."""
    if s.dtype.kind in "fc" and np.isnan(s).any():
        return False
    return not (s[1:] < s[:-1]).any()


def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter=None, out=None) -> Tensor:
    """Where each value of ``input`` would go in ``sorted_sequence`` (sorted along its last
    dim; ``sorter``, int64 indices, sorts it) to keep it sorted: the first such index
    (``side="left"``) or the last (``right=True`` / ``side="right"``). A 1-d sequence serves
    every value; else its leading dims must be ``input``'s. The two are compared in their
    promoted dtype, with PyTorch's binary search (a NaN value goes last; unsorted boundaries
    give PyTorch's result). int64 indices (``out_int32``: int32).

    Example:
        >>> tg.searchsorted(tg.tensor([1., 2., 3.]), tg.tensor([2., 2.5]))
        tensor([1, 2])
    """
    op = "torch.searchsorted()"
    seq = tensor_arg(sorted_sequence, "searchsorted", "sorted_sequence")
    scalar = not isinstance(input, Tensor)
    if scalar and not isinstance(input, numbers.Number):
        raise TypeError(f"searchsorted(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    side = _side(right, side)
    dt = dtypes.result_type(seq, input)
    if dt.is_complex or dt is dtypes.bool:  # (no order: PyTorch's kernel has none)
        raise kernel_not_implemented(f"searchsorted_out_{seq.device.type}", dt)
    idx_dt = dtypes.int32 if out_int32 else dtypes.int64
    if isinstance(out, Tensor) and out.dtype is not idx_dt:
        raise RuntimeError(f"{op}: output tensor's dtype is wrong, it can only be Int(int32) or "
                           f"Long(int64) depending on whether out_int32 flag is True, but we got "
                           f"output tensor's dtype {scalar_type_name(out.dtype)} and out_int32 "
                           f"flag is {out_int32}")
    # both in the promoted dtype (bfloat16 as float32, which holds its values exactly)
    np_dt = np.float32 if dt is dtypes.bfloat16 else dt.np
    s = _host(seq).astype(np_dt, copy=False)
    v = (np.asarray(input) if scalar else _host(input)).astype(np_dt, copy=False)
    if scalar and seq.ndim != 1:
        raise RuntimeError(f"{op}: input value can be a scalar only when boundaries tensor "
                           f"dimension is 1, but we got boundaries tensor dim({seq.ndim}) and "
                           f"input value's dim(0) numel(1)")
    if s.ndim == 0 or (s.ndim > 1 and (v.ndim != s.ndim or s.shape[:-1] != v.shape[:-1])):
        raise RuntimeError(f"{op}: boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must "
                           f"match, but we got boundaries tensor {list(s.shape)} and input "
                           f"value tensor {list(v.shape)}")
    if sorter is not None:
        sorter = tensor_arg(sorter, "searchsorted", "sorter")
        if sorter.dtype is not dtypes.int64:
            raise RuntimeError(f"{op}: sorter must be a tensor of long dtype but got dtype "
                               f"{scalar_type_name(sorter.dtype)}")
        order = _host(sorter)
        if order.shape != s.shape:
            raise RuntimeError(f"{op}: boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(s.shape)}and got sorter tensor "
                               f"{list(order.shape)}")
        if order.size and (order.min() < 0 or order.max() >= s.shape[-1]):
            raise RuntimeError(f"{op}: sorter index out of range")
        s = np.take_along_axis(s, order, -1)
    rows = 1 if s.ndim == 1 else math.prod(s.shape[:-1])
    if s.shape[-1] == 0 or v.size == 0:
        r = np.zeros(v.shape, np.int64)
    elif s.ndim == 1 and _sorted_without_nan(s):  # (one answer: NumPy's faster search finds it)
        r = np.searchsorted(s, v, side=side)
    else:
        r = _binary_search(s.reshape(rows, -1), v.reshape(rows, -1),
                           side == "right").reshape(v.shape)
    return _result(_put(r, idx_dt, seq), out, "searchsorted")


def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False, out=None) -> Tensor:
    """The bucket of each value of ``input`` among the 1-d sorted ``boundaries``: the ``i``
    with ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= x <
    boundaries[i]``), as :func:`searchsorted` with the arguments swapped.

    Example:
        >>> tg.bucketize(tg.tensor([1., 2.5, 9.]), tg.tensor([1., 2., 3.]))
        tensor([0, 2, 3])
    """
    b = tensor_arg(boundaries, "bucketize", "boundaries")
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return searchsorted(b, input, out_int32=out_int32, right=right, out=out)


# -- unique values -----------------------------------------------------------------------------

class _NoDerivative(NotImplementedBackward):
    """The grad_fn of unique's values, as PyTorch's (``Unique2Backward0``, ...): the values
    require grad where the input does, but their derivative is not implemented."""

    def __init__(self, op: str, node_name: str):
        super().__init__(op)
        self._node_name = node_name

    def name(self) -> str:
        return self._node_name


def _no_derivative(out: Tensor, source: Tensor, node: NotImplementedBackward) -> None:
    """Gives ``out`` the grad_fn ``node`` (whose backward raises) where ``source`` requires
    grad."""
    if not (state.grad_enabled and source.requires_grad):
        return
    node.next_functions = (source._edge(),)
    node._seq = state.seq
    state.seq += 1
    out._grad_fn, out._output_nr, out._requires_grad = node, 0, True


def _unique_result(like: Tensor, values: np.ndarray, inverse, counts, return_inverse: bool,
                   return_counts: bool, op: str, node_name: str, dim: int | None = None):
    if dim:  # PyTorch's unique along ``dim`` moves it first and back: those strides (in a
        # tensor of its own, not a view, as PyTorch's)
        moved = _put(np.moveaxis(values, dim, 0), like.dtype, like).movedim(0, dim)
        out = empty_strided(tuple(moved.shape), moved.stride(), dtype=like.dtype,
                            device=like.device).copy_(moved)
    else:
        out = _put(values, like.dtype, like)
    _no_derivative(out, like, _NoDerivative(op, node_name))
    if not (return_inverse or return_counts):
        return out
    extra = [_put(inverse, dtypes.int64, like)] if return_inverse else []
    if return_counts:
        extra.append(_put(counts, dtypes.int64, like))
    return (out, *extra)


def _unique_dim(x: Tensor, dim, op: str) -> int:
    """The ``dim=`` of unique/unique_consecutive, checked as PyTorch's unique_dim checks it."""
    dim = int_arg(dim, op, "dim")
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, x.ndim, op)
    if x.numel() == 0 and x.shape[d] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    return d


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim=None):
    """The distinct elements of ``input`` (``dim``: its distinct slices along ``dim``), sorted
    (always, as PyTorch's kernels do), with, as asked, the index of each element's (slice's)
    value in the result and the count of each value. NaNs are all distinct.

    Example:
        >>> tg.unique(tg.tensor([3, 1, 3, 2]), return_counts=True)
        (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    x = tensor_arg(input, "unique")
    if x.dtype.is_complex:  # (the result is sorted: complex numbers have no order)
        raise kernel_not_implemented("unique" if dim is None else "unique_dim", x.dtype)
    a = _host(x)
    if dim is None:
        values, inverse, counts = np.unique(a.reshape(-1), return_inverse=True,
                                            return_counts=True, equal_nan=False)
        inverse = inverse.reshape(a.shape)
    else:
        d = _unique_dim(x, dim, "unique")
        if a.shape[d] == 0:
            values, inverse, counts = a, np.zeros(0, np.int64), np.zeros(0, np.int64)
        else:
            values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True,
                                                axis=d, equal_nan=False)
            inverse = inverse.reshape(-1)
    op, node = ("_unique2", "Unique2Backward0") if dim is None else ("unique_dim",
                                                                      "UniqueDimBackward0")
    return _unique_result(x, values, inverse, counts, return_inverse, return_counts, op, node,
                          None if dim is None else d)


def unique_consecutive(input: Tensor, return_inverse: bool = False,
                       return_counts: bool = False, dim=None):
    """``input`` with each run of equal consecutive elements (``dim``: slices along ``dim``)
    kept once, with, as asked, each element's run index and each run's length.

    Example:
        >>> tg.unique_consecutive(tg.tensor([1, 1, 2, 1]))
        tensor([1, 2, 1])
    """
    x = tensor_arg(input, "unique_consecutive")
    if x.dtype.is_complex:  # (PyTorch's kernels share unique's dispatch, which refuses it)
        raise kernel_not_implemented("unique", x.dtype)
    a = _host(x)
    if dim is None:
        a, d = a.reshape(-1), 0
    else:
        d = _unique_dim(x, dim, "unique_consecutive")
    moved = np.moveaxis(a, d, 0)
    moved = moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:])))
    n = moved.shape[0]
    starts = np.ones(n, bool)
    if n > 1:
        starts[1:] = (moved[1:] != moved[:-1]).any(axis=1)
    run = np.cumsum(starts) - 1
    values = np.take(a, np.flatnonzero(starts), axis=d)
    counts = np.diff(np.append(np.flatnonzero(starts), n))
    inverse = run.reshape(x.shape) if dim is None else run
    return _unique_result(x, values, inverse, counts, return_inverse, return_counts,
                          "unique_consecutive", "UniqueConsecutiveBackward0",
                          None if dim is None else d)


# -- counts and histograms ----------------------------------------------------------------------

def bincount(input: Tensor, weights=None, minlength: int = 0) -> Tensor:
    """How many times each of ``0 .. max(input)`` occurs in the 1-d non-negative integer
    ``input`` (at least ``minlength`` bins); with ``weights``, their sums per value instead
    (float32 weights sum in float32, others in float64, as PyTorch).

    Example:
        >>> tg.bincount(tg.tensor([1, 1, 3]))
        tensor([0, 2, 0, 1])
    """
    x = tensor_arg(input, "bincount")
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype is dtypes.bool:
        raise kernel_not_implemented(f"bincount_{x.device.type}", x.dtype)
    minlength = int_arg(minlength, "bincount", "minlength")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    a = _host(x)
    if x.ndim == 1 and a.size == 0:  # (PyTorch: int64 zeros, even with weights)
        return _put(np.zeros(minlength, np.int64), dtypes.int64, x)
    if x.ndim != 1 or a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _put(np.bincount(a, minlength=minlength), dtypes.int64, x)
    w = tensor_arg(weights, "bincount", "weights")
    if tuple(w.shape) != tuple(x.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dt = dtypes.float32 if w.dtype is dtypes.float32 else dtypes.float64
    out = _put(np.bincount(a, _host(w).astype(np.float64), minlength), dt, x)
    # weights that require grad: a result that does too, whose backward raises (PyTorch's)
    _no_derivative(out, w, NotImplementedBackward(
        "bincount", RuntimeError, "derivative for aten::bincount is not implemented"))
    return out


def histc(input: Tensor, bins: int = 100, min=0, max=0, *, out=None) -> Tensor:
    """A histogram of ``input``'s values: ``bins`` equal-width bins over ``[min, max]`` (both
    0: the data's range; a single value ``v``: ``[v - 1, v + 1]``); values outside, and
    NaNs, are left out, ``max`` itself falls in the last bin. Floating dtypes only.

    Example:
        >>> tg.histc(tg.tensor([1., 2., 1.]), bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.])
    """
    x = tensor_arg(input, "histc")
    if not x.dtype.is_floating_point:
        raise kernel_not_implemented(f"histogram_{x.device.type}", x.dtype)
    bins = int_arg(bins, "histc", "bins", 2)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           f"dimension 0")
    a = _host(x).reshape(-1).astype(np.float64)
    lo, hi = float(min), float(max)
    if lo == hi and a.size:  # the data's range; a NaN or an infinity in it is refused below
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    a = a[(a >= lo) & (a <= hi)]  # (drops NaNs too)
    idx = np.minimum(((a - lo) * bins / (hi - lo)).astype(np.int64), bins - 1)
    result = _put(np.bincount(idx, minlength=bins).astype(np.float64), x.dtype, x)
    if isinstance(out, Tensor) and out.dtype is not x.dtype:
        raise RuntimeError(f"torch.histogram: input tensor and hist tensor should have the same "
                           f"dtype, but got input {scalar_type_name(x.dtype).lower()} and hist "
                           f"{scalar_type_name(out.dtype).lower()}")
    return _result(result, out, "histc")  # (resized to (bins,) as PyTorch's resize_output)


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("searchsorted", searchsorted, method=False, dtypes="real; int64 (or int32) result",
           grad="none"),
    OpInfo("bucketize", bucketize, method=False, dtypes="real; int64 (or int32) result",
           grad="none"),
    OpInfo("unique", unique, dtypes="all but complex; int64 inverse and counts", grad="none"),
    OpInfo("unique_consecutive", unique_consecutive, dtypes="all; int64 inverse and counts",
           grad="none"),
    OpInfo("bincount", bincount, dtypes="integers; int64 (weights: float) result",
           grad="none"),
    OpInfo("histc", histc, dtypes="floats", grad="none"),
)
