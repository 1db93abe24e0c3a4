"""More of ``torch``'s factories: ``asarray``, ``scalar_tensor``, ``range``,
``empty_permuted``, ``frombuffer``, and the out-of-place ``fill``.

They build on creation.py's factories and honour the default device
(``tg.set_default_device``) through ``resolve_device`` as those do. ``asarray`` and
``frombuffer`` share memory with their argument where PyTorch does (tensors, NumPy arrays,
Python buffers).
"""

from __future__ import annotations

import builtins
import math
import numbers
import operator
import os
import warnings

import numpy as np

from ...runtime import dtype as dtypes
from ..checks import kernel_not_implemented, scalar_type_name, tensor_arg, unsupported
from ..registry import OpInfo
from ..tensor import Tensor, make
from . import creation
from .creation import (
    _finish,
    _size,
    arange,
    as_dtype,
    check_layout,
    checked_scalar,
    empty,
    from_numpy,
    resolve_device,
    tensor,
)

__all__ = ["asarray", "empty_permuted", "fill", "from_file", "frombuffer", "range",
           "scalar_tensor"]


# -- asarray -----------------------------------------------------------------------------------

def _alias_error(what: str) -> ValueError:
    return ValueError(f"can't alias {what}.")


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """Converts ``obj`` (a tensor, a NumPy array or scalar, a DLPack-capable object, an object
    implementing the buffer protocol, or a number or sequence of them) to a tensor.

    Shares memory with ``obj`` when it can and ``copy`` is not True (tensors, CPU NumPy
    arrays, buffers); ``copy=False`` raises where sharing is impossible (another dtype or
    device, or a Python sequence). A buffer is read as raw bytes of ``dtype`` (default: the
    default dtype), as PyTorch's. ``requires_grad``: None keeps a tensor's (with PyTorch's
    warning when that is True), True or False sets it (on the result; for a tensor returned
    as is, on that tensor, as PyTorch's). ``device`` defaults to the default device for
    non-tensors.

    Example:
        >>> a = np.array([1., 2.])
        >>> t = tg.asarray(a)       # shares a's memory
        >>> tg.asarray(a, copy=True) is not t
        True
    """
    dt = as_dtype(dtype)
    dev = None if device is None else resolve_device(device)
    if isinstance(obj, np.generic):  # a NumPy scalar: its dtype, as an array's
        obj = np.asarray(obj)
    if isinstance(obj, Tensor):
        r = _tensor_asarray(obj, dt, dev, copy)
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        from .interop import from_dlpack
        r = _tensor_asarray(from_dlpack(obj), dt, dev, copy)
    elif isinstance(obj, np.ndarray):
        r = _tensor_asarray(from_numpy(obj) if obj.dtype.kind in "biufc" and all(
            s >= 0 for s in obj.strides) else tensor(obj), dt, dev or resolve_device(None), copy)
    elif isinstance(obj, (bytes, bytearray, memoryview)) or _is_buffer(obj):
        r = _tensor_asarray(frombuffer(obj, dtype=dt or dtypes.get_default_dtype()), None,
                            dev or resolve_device(None), copy)
    else:  # numbers and (nested) sequences: always a new tensor
        if copy is False:
            raise _alias_error("arbitrary sequence into a tensor")
        r = tensor(obj, dtype=dt, device=dev)
    if requires_grad is None:
        if r.requires_grad:
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to "
                          "obj.requires_grad instead of False. Pass requires_grad=False "
                          "explicitly to get the old behavior and silence this warning.",
                          UserWarning, stacklevel=2)
        return r
    if not requires_grad:
        if r.requires_grad:
            r = r.requires_grad_(False) if r is obj and r.is_leaf else r.detach()
        return r
    return r if r.requires_grad else r.requires_grad_(True)


def _is_buffer(obj) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _tensor_asarray(t: Tensor, dt, dev, copy) -> Tensor:
    """PyTorch's asarray of a tensor: itself unless a copy is asked for or needed."""
    wrong_dtype = dt is not None and dt is not t.dtype
    wrong_device = dev is not None and dev != t.device
    if copy is False:
        if wrong_device:
            raise _alias_error(f"tensor from device '{t.device}' to '{dev}'")
        if wrong_dtype:
            raise _alias_error(f"tensor with dtype '{scalar_type_name(t.dtype)}' into dtype "
                               f"'{scalar_type_name(dt)}'")
        return t
    if wrong_dtype or wrong_device:
        return t.to(device=dev or t.device, dtype=dt or t.dtype, copy=bool(copy))
    return t.clone() if copy else t


# -- scalar_tensor, range, empty_permuted ------------------------------------------------------

def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False, out=None) -> Tensor:
    """A 0-d tensor holding the number ``s``, of the default dtype unless ``dtype`` is given
    (also for an int or a bool, unlike ``tensor``).

    Example:
        >>> tg.scalar_tensor(3)
        tensor(3.)
    """
    check_layout("scalar_tensor", layout)
    if isinstance(s, Tensor):
        s = s.item()
    if not isinstance(s, numbers.Number):
        raise TypeError(f"scalar_tensor(): argument 's' must be Number, not {type(s).__name__}")
    if out is not None:
        from .elementwise import _result
        return _result(creation.full((), checked_scalar(s, out.dtype), dtype=out.dtype,
                                     device=out.device), out, "scalar_tensor")
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    t = creation.full((), checked_scalar(s, dt), dtype=dt, device=device,
                      pin_memory=pin_memory)
    return _finish(t, requires_grad)


def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None,
          requires_grad: bool = False, out=None) -> Tensor:
    """Deprecated (use ``arange``): the values from ``start`` to ``end`` *inclusive* in steps
    of ``step``, ``floor((end - start) / step) + 1`` of them, of the default dtype unless
    ``dtype`` is given (also for int arguments).

    Example:
        >>> tg.range(1, 4)
        tensor([1., 2., 3., 4.])
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    check_layout("range", layout)
    if end is None:  # (PyTorch's range takes both bounds; range(end) is not an overload)
        raise TypeError("range() missing required argument 'end' (pos 2)")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = math.floor((end - start) / step) + 1
    dt = as_dtype(dtype) or (out.dtype if out is not None else dtypes.get_default_dtype())
    if dt is dtypes.bool or dt.is_complex:  # (PyTorch's range kernels take neither)
        dev = resolve_device(out.device if out is not None else device)
        raise kernel_not_implemented(f"range_{dev.type}", dt)
    if not math.isfinite(n):
        raise RuntimeError("unsupported range: " + f"{start} -> {end}")
    integral = not (dt.is_floating_point or dt.is_complex)
    first, stride = (int(start), int(step)) if integral else (float(start), float(step))
    r = arange(0, n, dtype=dtypes.int64 if integral else dtypes.float64,
               device=out.device if out is not None else device)
    r = (r * stride + first).to(dt)
    if out is not None:
        from .elementwise import _result
        return _result(r, out, "range")
    return _finish(r, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialized tensor of shape ``size`` whose dims are laid out in memory in the
    order ``physical_layout`` (outermost first): ``empty_permuted((2, 3, 4), (0, 2, 1))``
    has strides ``(12, 1, 3)``. ``empty(size)`` is ``empty_permuted(size, range(len(size)))``.
    """
    check_layout("empty_permuted", layout)
    size = _size((size,))
    perm = tuple(operator.index(d) for d in physical_layout)
    if len(perm) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(perm)}")
    seen = set()
    for i, d in enumerate(perm):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {d} at index {i}).  NB: negative dims "
                               f"not currently supported; file an issue if you want it.")
        if d in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(d)
    t = empty(tuple(size[d] for d in perm), dtype=dtype, device=device, pin_memory=pin_memory)
    inverse = sorted(builtins.range(len(perm)), key=perm.__getitem__)
    return _finish(t.permute(inverse), requires_grad)


# -- frombuffer --------------------------------------------------------------------------------

_warned_readonly = False


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor sharing memory with ``buffer`` (an object implementing Python's buffer
    protocol): ``count`` elements of ``dtype`` (-1: all that follow) from byte ``offset``.
    Writes to either show in both; the buffer must outlive the tensor (it is kept alive).

    Example:
        >>> tg.frombuffer(bytearray(b"\\x01\\x02"), dtype=tg.uint8)
        tensor([1, 2], dtype=tritongrad.uint8)
    """
    global _warned_readonly
    dt = as_dtype(dtype)
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    if dt is dtypes.bfloat16:
        raise unsupported("frombuffer", "dtype", dt, "bfloat16 host tensors are stored as "
                          "float32 and cannot share a buffer's memory")
    length, size = view.nbytes, dt.itemsize
    count, offset = operator.index(count), operator.index(offset)
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    arr = np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view,
                        dtype=dt.np, count=count, offset=offset)
    if view.readonly and not _warned_readonly:
        _warned_readonly = True
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of "
                      "this program.", UserWarning, stacklevel=2)
    return _finish(make(arr), requires_grad)


def from_file(filename, shared: bool | None = None, size: int = 0, *, dtype=None, layout=None,
              device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor of ``size`` elements of ``dtype`` whose storage is the memory-mapped
    file ``filename``. ``shared=True`` maps it shared: writes to the tensor go to the file (it
    is created, or extended, to the size needed); otherwise (``False``/None) the mapping is
    private: the file must hold ``size`` elements and writes stay in the tensor. With
    ``device`` another than the CPU, the mapped tensor is copied there."""
    dt = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    check_layout("from_file", layout)
    size = operator.index(size)
    if pin_memory:
        raise RuntimeError("from_file: tensors backed by a memory-mapped file cannot be created "
                           "in pinned memory")
    if dt is dtypes.bfloat16:
        raise unsupported("from_file", "dtype", dt, "bfloat16 host tensors are stored as "
                          "float32 and cannot map a file's bytes")
    dev = resolve_device(device)
    if dev.type == "meta":
        raise NotImplementedError("aten::from_file: attempted to run this operator with Meta "
                                  "tensors, but there was no fake impl or Meta kernel "
                                  "registered.")
    path, need = os.fspath(filename), size * dt.itemsize
    if shared:
        with builtins.open(path, "ab") as f:  # (created if missing, never shortened)
            if f.tell() < need:
                f.truncate(need)
    try:
        have = os.path.getsize(path)
    except OSError as e:
        raise RuntimeError(f"unable to open file <{path}> in read-only mode: {e.strerror} "
                           f"({e.errno})") from None
    if have < need:
        raise RuntimeError(f"file <{path}> size <{have}> is smaller than the required mapping "
                           f"size <{need}>")
    arr = (np.memmap(path, dtype=dt.np, mode="r+" if shared else "c", shape=(size,))
           if size else np.empty(0, dt.np))
    out = make(arr)
    if dev.type != "cpu":
        out = out.to(dev)
    return _finish(out, requires_grad)


# -- fill --------------------------------------------------------------------------------------

def fill(input: Tensor, value) -> Tensor:
    """A tensor of ``input``'s shape, dtype and device filled with ``value`` (a number or a
    0-d tensor): the out-of-place ``fill_``. Gradient: zero for ``input``, the sum of the
    gradient for a tensor ``value``."""
    from .pointwise import FillBackward0, FillBackward1, fill_with
    tensor_arg(input, "fill")
    return fill_with(input.clone(), value, (FillBackward0, FillBackward1))


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("asarray", asarray, method=False, dtypes="all", grad="none"),
    OpInfo("scalar_tensor", scalar_tensor, method=False, dtypes="the default dtype (dtype= any)",
           grad="none"),
    OpInfo("range", range, method=False, dtypes="the default dtype (dtype= any)", grad="none"),
    OpInfo("empty_permuted", empty_permuted, method=False, dtypes="all", grad="none"),
    OpInfo("frombuffer", frombuffer, method=False, dtypes="all but bfloat16", grad="none"),
    OpInfo("from_file", from_file, method=False, dtypes="all but bfloat16", grad="none"),
    OpInfo("fill", fill, method=False, dtypes="the input's",
           grad="0 for input; value: sum of g"),
)
