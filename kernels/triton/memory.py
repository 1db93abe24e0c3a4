"""Creation, copies, casts and views of DeviceArrays (strides and offsets in elements).

The copies and casts (``full``, ``copy_``, ``astype``, ``contiguous``) are the elementwise
family's ``copy`` op (elementwise.py): one strided load, a conversion at the store; ``arange``
is its ``arange`` op (start + step * index, no host data). Casts follow
Triton's conversions, which match NumPy's ``astype`` wherever NumPy's result is defined:
floats round to nearest even, float -> int truncates toward zero, anything -> bool is ``!= 0``,
int -> narrower int wraps. (Out-of-range float -> int and NaN -> int are undefined in both and
may differ.) float64 -> bfloat16 rounds through float32.

Complex arrays (Note [complex lanes] in complex.py) copy and cast through the same kernel on
their real views: the calls the copy kernel refuses (``_launch.ComplexOperand``) go to
``complex.copy``.

The views are metadata-only methods of ``DeviceArray`` (runtime/array.py); the functions here
are the contract's names for them.
"""

from __future__ import annotations

import math

from ...runtime import memory as _memory
from ...runtime.array import DeviceArray, check_view_bounds, contiguous_strides, view_strides
from ...runtime.device import device as Device
from . import _launch as L
from . import complex as _complex
from .elementwise import launch_arange, launch_copy, span

__all__ = [
    "arange",
    "as_strided",
    "astype",
    "contiguous",
    "copy_",
    "empty",
    "expand",
    "full",
    "getitem",
    "permute",
    "result_array",
    "storage_offset",
    "strides",
    "view",
]

_DEFAULT = Device("cuda", 0)


def _device(device):
    # The contract lets ``device`` default (NumPy ignores it); index None means the current
    # device, which the runtime resolves.
    return _DEFAULT if device is None else device


def empty(shape, dtype, device=None) -> DeviceArray:
    """An uninitialised contiguous array (from the runtime's caching allocator)."""
    return _memory.empty(shape, dtype, _device(device))


def _row_major(a: DeviceArray) -> bool:
    layout = _memory._LAYOUTS.get(a.shape)  # (empty()'s cache of row-major strides)
    return a.strides == (layout[0] if layout is not None else contiguous_strides(a.shape))


def result_array(shape, dtype, device, *xs) -> DeviceArray:
    """A new array for an elementwise result of ``shape`` over ``xs`` (arrays and numbers,
    in argument order), laid out as PyTorch's TensorIterator lays it out: row-major when the
    operands are, else dense in their strides' order (Note [Result layouts] in
    kernels/numpy/elementwise.py; the kernels write any strides, so this costs no copy)."""
    for x in xs:  # (a loop, not all(): the scalar ops ask on every call)
        if type(x) is DeviceArray and not _row_major(x):
            break
    else:
        if 0 not in shape:
            return _memory.empty(shape, dtype, _device(device))
    from ...autograd.layout import elementwise_strides  # (kernels sit below autograd)
    want = elementwise_strides(tuple(shape), [(x.shape, x.strides) if type(x) is DeviceArray
                                              else ((), ()) for x in xs])
    if want is None:
        return _memory.empty(shape, dtype, _device(device))
    extent = 0 if 0 in shape else 1 + sum((n - 1) * w for n, w in zip(shape, want))
    return _memory.new_array(extent * dtype.itemsize, _device(device), tuple(shape), want,
                             dtype)


def empty_in_order_of(a: DeviceArray, shape: tuple, dtype) -> DeviceArray:
    """An uninitialised dense array of ``shape`` (as many dims as ``a``) whose memory runs in
    ``a``'s dimension order, outermost = largest stride, ties in dimension order (PyTorch's
    ``empty_like`` keeps an input's order so; kernels/numpy/attention.py's
    ``_empty_in_layout_of`` is the NumPy backend's twin, which the layouts must match)."""
    key = (shape, a.strides)
    layout = _ORDERED.get(key)  # (a model asks for the same few layouts on every step)
    if layout is None:
        strides = a.strides
        order = sorted(range(len(shape)), key=lambda i: -abs(strides[i]))
        dense = contiguous_strides(tuple(shape[i] for i in order))
        want = [0] * len(shape)
        for position, i in enumerate(order):
            want[i] = dense[position]
        if len(_ORDERED) >= 4096:  # many layouts (dynamic sizes): start over
            _ORDERED.clear()
        layout = _ORDERED[key] = (tuple(want), math.prod(shape))
    want, numel = layout
    return _memory.new_array(numel * dtype.itemsize, a.device, shape, want, dtype)


_ORDERED: dict = {}  # (shape, strides) -> (strides in that order, element count)


def full(shape, value, dtype, device=None) -> DeviceArray:
    """A contiguous array of ``shape`` filled with the Python scalar ``value`` cast to ``dtype``."""
    out = _memory.empty(shape, dtype, _device(device))
    try:
        launch_copy(out, value)
    except L.ComplexOperand:
        _complex.copy(out, value)
    return out


def arange(start, step, n, dtype, device=None) -> DeviceArray:
    """``start + step * i`` for i in [0, n): int64 math when start and step are ints, float64
    otherwise, then cast to ``dtype`` (one kernel, no host data)."""
    out = _memory.empty((int(n),), dtype, _device(device))
    launch_arange(out, start, step)
    return out


def astype(a: DeviceArray, dtype) -> DeviceArray:
    """A contiguous copy of ``a`` converted to ``dtype`` (always a new array)."""
    out = _memory.empty(a.shape, dtype, a.device)
    try:
        launch_copy(out, a)
    except L.ComplexOperand:
        _complex.copy(out, a)
    return out


def contiguous(a: DeviceArray) -> DeviceArray:
    """``a`` itself when row-major contiguous, else a contiguous copy."""
    if a.is_contiguous():
        return a
    out = _memory.empty(a.shape, a.dtype, a.device)
    try:
        launch_copy(out, a)
    except L.ComplexOperand:
        _complex.copy(out, a)
    return out


def copy_(dst: DeviceArray, src) -> None:
    """Writes ``src`` (a DeviceArray broadcast to dst's shape, or a Python scalar) into the
    possibly strided ``dst``, converting to dst's dtype. Returns None, as ``np.copyto``.

    Overlapping source and destination (same storage, not the very same view) are handled as
    NumPy does: the source is copied out first.
    """
    if type(src) is DeviceArray and src.storage is dst.storage and not (
            src.offset == dst.offset and src.strides == dst.strides and src.shape == dst.shape):
        lo_s, hi_s = span(src)
        lo_d, hi_d = span(dst)
        if lo_s < hi_d and lo_d < hi_s:
            src = astype(src, src.dtype)
    try:
        launch_copy(dst, src)
    except L.ComplexOperand:
        _complex.copy(dst, src)


_VIEWS = L.plan_cache()  # (shape, strides, new shape) -> the view's strides, or None


def view(a: DeviceArray, shape):
    """The same elements in ``shape`` without copying, or None when the strides forbid it
    (the strides kept per layout: a training step reshapes the same few layouts hundreds of
    times)."""
    shape = tuple(shape)
    key = (a.shape, a.strides, shape)
    try:
        strides = _VIEWS[key]
    except KeyError:
        strides = _VIEWS[key] = view_strides(a.shape, a.strides, shape)
    return None if strides is None else DeviceArray(a.storage, a.offset, shape, strides,
                                                    a.dtype)


def permute(a: DeviceArray, dims) -> DeviceArray:
    return a.permute(dims)


def expand(a: DeviceArray, shape) -> DeviceArray:
    """Broadcasts ``a`` to ``shape`` with zero strides (NumPy's broadcast_to rules)."""
    shape = tuple(shape)
    if L.broadcast_shape("expand", a.shape, shape) != shape:
        raise ValueError(f"expand: shape {a.shape} cannot be broadcast to {shape}")
    return a.expand(shape)


def getitem(a: DeviceArray, index: tuple) -> DeviceArray:
    """Basic indexing (ints, positive-step slices, None, Ellipsis already expanded)."""
    return a.getitem(index)


def as_strided(a: DeviceArray, shape, strides, offset) -> DeviceArray:
    """A view of ``a``'s storage: element ``strides``, starting ``offset`` elements into it;
    PyTorch's RuntimeError if it would reach outside the storage (``check_view_bounds``)."""
    shape, strides = tuple(shape), tuple(strides)
    check_view_bounds(shape, strides, offset, a.itemsize, a.storage.nbytes)
    return a.as_strided(shape, strides, offset)


def strides(a: DeviceArray) -> tuple:
    return tuple(a.strides)


def storage_offset(a: DeviceArray) -> int:
    return a.offset
