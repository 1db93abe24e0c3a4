"""Tensor factories: ``tensor``, ``zeros``, ``randn``, ... and the random generator.

Factories take ``dtype=``, ``device=`` and ``requires_grad=`` as PyTorch's do. Random numbers
come from the kernel contract's ``rand``/``randn``/``randint``, drawing from the stream
random.py's ``stream`` picks: on the CPU a NumPy generator (the global one, which
``manual_seed`` reseeds, or a ``Generator``'s), on CUDA a Philox generator on the device, with
no host round trip. A seed reproduces each device's numbers; the CPU's and CUDA's differ.
"""

from __future__ import annotations

import math
import numbers
import operator
import warnings

import numpy as np

from ..registry import OpInfo
from ...kernels import backend, host_array, host_values
from ...kernels.numpy import ranges
from ...kernels.numpy.random import CPUStream
from ...runtime import dtype as dtypes
from ...runtime.device import device as Device
from ..checks import check_memory_format, kernel_not_implemented, scalar_type_name, tensor_arg
from ..layout import format_strides, target_strides
from ..observe import observed_op
from ..state import state
from ..tensor import Size, Tensor, make


_CPU = Device("cpu")
# The device factories use when given none (``tg.set_default_device``, autograd/settings.py);
# None: the CPU. Kept as given ("cuda": whichever CUDA device is current at each call).
default_device = None


def resolve_device(spec) -> Device:
    """A device with an index: ``None`` is the default device (the CPU unless
    ``set_default_device`` says otherwise), ``"cuda"`` the current CUDA device."""
    if spec is None:
        if default_device is None:
            return _CPU
        spec = default_device
    d = spec if isinstance(spec, Device) else Device(spec)
    if d.type == "cuda":
        from ...runtime import cuda_api
        if d.index is None:
            return Device("cuda", cuda_api.current_device())
        cuda_api.check_device(d.index)
    return d


def as_dtype(spec, default=None):
    """A tritongrad dtype from a dtype, a Python type (float -> float64), a NumPy dtype or a
    name."""
    if spec is None:
        return default
    if isinstance(spec, dtypes.dtype):
        return spec
    if spec is float:
        return dtypes.float64
    if spec is int:
        return dtypes.int64
    if spec is bool:
        return dtypes.bool
    if spec is complex:
        return dtypes.complex128
    if isinstance(spec, str):
        name = spec.removeprefix("tritongrad.").removeprefix("torch.")
        d = getattr(dtypes, name, None)
        if isinstance(d, dtypes.dtype):
            return d
    try:
        return dtypes.from_numpy_dtype(spec)
    except TypeError:
        raise TypeError(f"not a dtype: {spec!r}") from None


def _size_arg(op: str, args: tuple, size) -> tuple:
    """A factory's size, given as ``*size`` (ints, or one sequence) or as ``size=`` (PyTorch
    binds both to its one ``size`` argument)."""
    if size is not None:
        if args:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        return _size((size,))
    if not args:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    if len(args) == 1 and (isinstance(args[0], (str, bytes)) or args[0] is None):
        raise TypeError(f"{op}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(args[0]).__name__}")
    return _size(args)


def check_layout(op: str, layout) -> None:
    """``layout=``: tritongrad's factories make dense (``strided``) tensors only."""
    if layout is not None and layout is not dtypes.strided:
        if not isinstance(layout, dtypes.layout):  # (PyTorch's parser: a TypeError)
            raise TypeError(f"{op}(): argument 'layout' must be tritongrad.layout, not "
                            f"{type(layout).__name__}")
        from ..checks import unsupported
        raise unsupported(op, "layout", layout, "strided: tritongrad's factories make dense "
                          "tensors")


def _size(args) -> tuple:
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        if isinstance(args[0], Tensor) and args[0].ndim == 0:
            pass  # one size (an integer 0-d tensor; a float one is refused below)
        else:
            try:
                args = tuple(args[0])
            except TypeError:  # (a float: one size that is no integer)
                raise TypeError(f"size must be a sequence of ints, got {args[0]!r}") from None
    size = []
    for i, s in enumerate(args):
        try:  # integers only (PyTorch refuses 2.0 as a size; a float was truncated here)
            size.append(operator.index(s))
        except TypeError:
            raise TypeError(f"size must be a sequence of ints, but found element of type "
                            f"{type(s).__name__} at pos {i}") from None
    size = tuple(size)
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    return size


# -- Python numbers into a dtype ---------------------------------------------------------------
#
# PyTorch converts a Python number into a tensor's dtype along two paths, and tritongrad takes
# the same two in front of both backends: left to them, NumPy refuses an out-of-range Python
# int with its own OverflowError (NEP 50) where Triton wraps it, so the CPU and CUDA disagreed.
#
# - Checked (c10::checked_convert, behind Scalar::to<T>() and tensor()'s store_scalar): the
#   factories (tensor, full, new_full), fill_, masked_fill, scatter's value, x[i] = number,
#   clamp's bounds, integer pow's exponent. A value the dtype cannot hold raises
#   "RuntimeError: value cannot be converted to type <T> without overflow"; by c10's rule a
#   negative int whose magnitude fits an unsigned type is allowed and wraps (-1 -> 255),
#   infinities fit floating types and NaN fits any floating type.
# - Unchecked (c10::convert of a "wrapped number" operand): binary ops and comparisons with
#   a number (x + 300, x < 256), where, copy_(number). An int wraps modulo 2**bits, as
#   PyTorch's cast does (uint8 + 300 adds 44). The one exception is a float that does not fit
#   an integer dtype: C++ leaves that cast undefined, so there is no value to agree on and it
#   is refused as on the checked path.

_INT_BITS = {dtypes.uint8: 8, dtypes.int8: 8, dtypes.int16: 16, dtypes.int32: 32,
             dtypes.int64: 64, dtypes.uint16: 16, dtypes.uint32: 32, dtypes.uint64: 64}
_FLOAT_MAX = {dtypes.float16: 65504.0, dtypes.bfloat16: float.fromhex("0x1.fep127"),
              dtypes.float32: float.fromhex("0x1.fffffep127"),
              dtypes.float64: float.fromhex("0x1.fffffffffffffp1023")}
# the C++ type names PyTorch's messages use: Scalar::to<T>() names its template argument...
_CPP_NAMES = {dtypes.uint8: "uint8_t", dtypes.int8: "int8_t", dtypes.int16: "int16_t",
              dtypes.int32: "int", dtypes.int64: "int64_t", dtypes.float16: "c10::Half",
              dtypes.bfloat16: "c10::BFloat16", dtypes.float32: "float",
              dtypes.float64: "double", dtypes.complex64: "c10::complex<float>",
              dtypes.complex128: "c10::complex<double>", dtypes.uint16: "uint16_t",
              dtypes.uint32: "uint32_t", dtypes.uint64: "uint64_t",
              **{d: "c10::" + dtypes.CPP_NAMES[d.name] for d in dtypes.FLOAT8_TYPES}}
# ... and tensor()'s store_scalar its own (it checks integer types only: floats it casts)
_DATA_NAMES = {d: d.name for d in _INT_BITS}


def _int_range(dt) -> tuple:
    bits = _INT_BITS[dt]
    return (0, (1 << bits) - 1) if not dt.is_signed else (-(1 << bits - 1), (1 << bits - 1) - 1)


_FLOAT8_LIMITS = {d: (dtypes.finfo(d).min, dtypes.finfo(d).max) for d in dtypes.FLOAT8_TYPES}
_FLOAT_MAX.update({d: hi for d, (lo, hi) in _FLOAT8_LIMITS.items()})


def _overflows(v, dt) -> bool:
    """c10::overflows<dt>(v): whether Python number ``v`` does not fit ``dt``."""
    if dt is dtypes.bool or isinstance(v, (bool, np.bool_)):
        return False  # anything converts to bool, and a bool into anything
    into_complex = dt.is_complex
    if into_complex:
        dt = dt.to_real()  # each part is checked against the part's type
    if isinstance(v, numbers.Integral):
        v = int(v)
        if dt in _INT_BITS:
            lo, hi = _int_range(dt)
            if lo == 0:  # unsigned: a negative wraps when its magnitude fits
                return v > hi or -v > hi
            return v < lo or v > hi
        return abs(v) > _FLOAT_MAX[dt]  # (only float16's range is smaller than int64's)
    if isinstance(v, numbers.Real):
        v = float(v)
        if dt in _INT_BITS:  # NaN and the infinities never fit; else [lowest, 2**digits)
            if math.isnan(v) or math.isinf(v):
                return True
            lo, hi = _int_range(dt)
            return v < lo or v >= hi + 1
        if dt in _FLOAT8_LIMITS:  # c10::overflows: below lowest (e8m0fnu's 2 ** -127) or
            lo, hi = _FLOAT8_LIMITS[dt]  # above max; an infinity only e5m2 holds
            return (dt is not dtypes.float8_e5m2 or not math.isinf(v)) and (v < lo or v > hi)
        return not math.isinf(v) and abs(v) > _FLOAT_MAX[dt]  # (NaN fits: it compares False)
    v = complex(v)
    if v.imag != 0 and not into_complex:
        return True  # into a real type only with a zero imaginary part
    return _overflows(v.real, dt) or _overflows(v.imag, dt)


def _overflow_error(dt, names=_CPP_NAMES) -> RuntimeError:
    return RuntimeError(f"value cannot be converted to type {names[dt]} without overflow")


def _convert(v, dt):
    """``v`` as a Python value of ``dt``'s kind, already known to fit (c10::convert)."""
    if dt is dtypes.bool:
        return bool(v)
    if dt in _INT_BITS:
        if isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real):
            v = v.real
        n = int(v)  # floats truncate toward zero
        lo, hi = _int_range(dt)
        return n if lo <= n <= hi else (n - lo) % (hi - lo + 1) + lo  # two's complement
    if dt.is_complex:
        return complex(v)
    if isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real):
        return float(v.real)
    return float(v)


def checked_scalar(value, dtype):
    """Python number ``value`` converted to ``dtype`` as PyTorch's Scalar::to<T>() does, or
    its RuntimeError when the value does not fit (see the note above)."""
    if _overflows(value, dtype):
        raise _overflow_error(dtype)
    return _convert(value, dtype)


def wrapped_scalar(value, dtype):
    """Python number ``value`` as the operand of a ``dtype`` op: integers wrap into an integer
    dtype as PyTorch's cast of a wrapped number does; other values pass unchanged (the
    backends convert them as PyTorch does)."""
    if dtype not in _INT_BITS or isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, numbers.Integral):
        return _convert(value, dtype)
    if _overflows(value, dtype):  # a float past the type: undefined in C++, refused
        raise _overflow_error(dtype)
    return _convert(value, dtype)


def scalar_tensor(value, dtype, device) -> Tensor:
    """A 0-d ``dtype`` tensor on ``device`` holding number ``value`` as a wrapped operand
    (``wrapped_scalar``: no range check for ints, as where(c, x, 300) or x.copy_(300))."""
    dev = resolve_device(device)
    return make(backend(dev).full((), wrapped_scalar(value, dtype), dtype, dev), dtype)


def _check_data(arr: np.ndarray, dt) -> None:
    """tensor()'s check of Python data bound for an integer dtype: every element must fit by
    the rule above. The allowed values form one interval, so its extremes decide."""
    if dt not in _INT_BITS or not arr.size:
        return
    for v in (arr.min(), arr.max()):
        if _overflows(v.item(), dt):
            raise _overflow_error(dt, _DATA_NAMES)


def host_to(arr: np.ndarray, dtype, device: Device, non_blocking: bool = False) -> Tensor:
    """A tensor holding NumPy array ``arr`` (cast to ``dtype``) on ``device`` (``non_blocking``:
    see ``runtime.memory.to_device``)."""
    if device.type == "cpu":
        return make(host_array(arr, dtype))
    if device.type == "meta":  # (Note [The meta device]: the shape and dtype, no values)
        return make(backend(device).empty(np.shape(arr), dtype))
    from ...runtime import memory
    if dtype is dtypes.bfloat16:
        host = dtypes.bfloat16_bits(host_values(arr))
    else:
        host = np.require(host_values(arr), dtype=dtype.np, requirements="C")
    return make(memory.to_device(host, device, dtype, non_blocking))


_NP_SUPPORTED = ("float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
                 "uint64, uint32, uint16, uint8, and bool")


def check_ndarray(arr: np.ndarray) -> None:
    """Refuses a NumPy array no tensor can hold as PyTorch's converters do: a dtype with no
    tensor equivalent (objects, strings, dates, long double) is a TypeError, a non-native
    byte order a ValueError (the data would be misread, not converted)."""
    dt = arr.dtype
    if dt.kind == "V" and dt.names is None and dt.type.__module__.startswith("ml_dtypes"):
        return  # (ml_dtypes' bfloat16 and float8 types: the converters take them as they are)
    try:
        ok = dt.kind in "biufc" and dtypes.from_numpy_dtype(dt.newbyteorder("="))
    except TypeError:
        ok = False
    if not ok:
        raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype.type.__name__}. "
                        f"The only supported types are: {_NP_SUPPORTED}.")
    if not arr.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        if not (t._dtype.is_floating_point or t._dtype.is_complex):  # (the factories' words)
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad_(True)
    return t


def _infer_array(data, dtype=None) -> np.ndarray:
    """``data`` as a host array; Python floats take the default dtype unless ``dtype`` is
    given (then they convert straight to it: float64 data never passes through float32)."""
    if isinstance(data, Tensor):
        return np.asarray(data.detach().cpu())
    if isinstance(data, np.ndarray):
        return data
    # NumPy scalars, arrays and tensors inside a sequence bring their own dtypes (see
    # _scalars_dtype); read them before the tensors become numbers
    typed = (dtype is None and isinstance(data, (list, tuple))
             and any(isinstance(x, _TYPED) for x in _flat(data)))
    typed_np = _scalars_dtype(data) if typed else None
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        data = _nested_map(data, _tensor_item)
    try:
        arr = np.asarray(data)
    except ValueError:  # NumPy 2 refuses ragged nested sequences
        arr = None
    if arr is not None and arr.dtype.kind in "fO" and arr.size and _is_seq(data) \
            and not typed:
        # Python ints past int64's range (NumPy made float64 or objects of them): PyTorch
        # reads each int as a C long unless a float beside them makes the tensor floating,
        # when every number is read as a double (an empty list is float64 too: left alone)
        if dtype is None and _all_ints(data):
            raise _UNPACK_ERROR
        if arr.dtype.kind == "O" and all(type(v) in (int, float) for v in _flat(data)):
            arr = np.asarray(_nested_map(data, float), dtype=np.float64)
    if (arr is not None and arr.dtype.kind == "O" and dtype is not None
            and (dtypes.promote_types(as_dtype(dtype), dtypes.float16) is as_dtype(dtype)
                 or as_dtype(dtype) is dtypes.bool) and _all_ints(data)):
        # ints past 64 bits bound for a floating (or bool) dtype: PyTorch reads them as
        # doubles (tensor(2**64, dtype=float32) is 1.8447e+19), not as C longs
        return np.asarray(_nested_map(data, float) if _is_seq(data) else float(data),
                          dtype=np.float64)
    if (dtype is dtypes.uint64 and arr is not None and arr.dtype.kind in "fO"
            and isinstance(data, (list, tuple))
            and all(isinstance(v, int) and v >= 0 for v in _flat(data))):
        # ints past int64's range mixed with others make NumPy pick objects or float64:
        # uint64 holds them exactly
        try:
            return np.asarray(data, dtype=np.uint64)
        except OverflowError:
            raise _UNPACK_ERROR from None
    if arr is None or arr.dtype.kind not in "biufc":
        _refuse_data(data, as_dtype(dtype))
    if dtype is not None and arr.dtype.kind in "fc":
        return arr
    if isinstance(data, np.generic):
        return arr.astype(_scalars_dtype(data))
    if typed:
        return arr.astype(typed_np)
    if arr.dtype.kind == "f":
        arr = arr.astype(dtypes.get_default_dtype().np if dtypes.get_default_dtype()
                         is not dtypes.bfloat16 else np.float32)
    elif arr.dtype.kind == "c":
        arr = arr.astype(dtypes.get_default_dtype().to_complex().np)
    elif arr.dtype.kind in "iu" and arr.dtype != np.uint8:
        if arr.dtype == np.uint64 and dtype is dtypes.uint64:
            return arr  # (ints past int64's range, which only uint64 holds)
        if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= 1 << 63:
            if dtype is not None and as_dtype(dtype).is_floating_point:
                return arr.astype(np.float64)  # (read as doubles, as the branch above)
            raise _UNPACK_ERROR  # a Python int past int64 (NumPy made the array uint64)
        arr = arr.astype(np.int64)
    return arr


_TYPED = (np.generic, np.ndarray, Tensor)


def _tensor_item(x):
    """A tensor inside tensor()'s data as the number it holds (PyTorch's item() rule)."""
    if not isinstance(x, Tensor):
        return x
    if x.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    return x.item()


def _all_ints(data) -> bool:
    return all(isinstance(v, numbers.Integral) for v in (_flat(data) if _is_seq(data)
                                                          else (data,)))


def _scalars_dtype(data) -> np.dtype:
    """The NumPy dtype tensor() gives data holding NumPy scalars, NumPy arrays or tensors: as
    PyTorch infers it, each of those brings its own dtype (``tensor(np.float64(1))`` is
    float64, ``tensor([tensor(1, dtype=int8)])`` int8) and each Python number its usual one
    (float: the default dtype, int: int64), promoted together."""
    def kind(x):
        if isinstance(x, (np.generic, np.ndarray)):
            return dtypes.from_numpy_dtype(x.dtype)
        if isinstance(x, Tensor):
            return x.dtype
        if isinstance(x, bool):
            return dtypes.bool
        if isinstance(x, int):
            return dtypes.int64
        default = dtypes.get_default_dtype()
        return default.to_complex() if isinstance(x, complex) else default
    items = [data] if isinstance(data, np.generic) else list(_flat(data))
    dt = kind(items[0])
    for x in items[1:]:
        dt = dtypes.promote_types(dt, kind(x))
    return np.dtype(np.float32) if dt is dtypes.bfloat16 else dt.np


# PyTorch reads a Python int as a C long long before anything else (THPUtils_unpackLong)
_UNPACK_ERROR = ValueError("Overflow when unpacking long long")


def _refuse_data(data, dtype=None) -> None:
    """Raises what torch.tensor raises for ``data`` NumPy could not make a numeric array of,
    in PyTorch's order: the element types first (a string is a TypeError, any other
    non-number a RuntimeError), then the nesting (ragged lengths are a ValueError naming the
    dim; sizes follow the first element at each level, as PyTorch's)."""
    def scan(x):
        if isinstance(x, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
        if _is_seq(x):
            for y in x:
                scan(y)
        elif not isinstance(x, (int, float, complex, np.number, np.bool_)):
            name = type(x).__name__
            if dtype is None:
                raise RuntimeError(f"Could not infer dtype of {name}")
            # with a dtype PyTorch goes straight to converting the element, and Python's
            # conversion refuses it
            if dtype.is_floating_point or dtype.is_complex:
                raise TypeError(f"must be real number, not {name}")
            raise TypeError(f"'{name}' object cannot be interpreted as an integer")

    head = data
    while _is_seq(head) and len(head):
        head = head[0]
    if isinstance(head, str) and head is not data:
        # PyTorch measures the nesting down the first elements and takes a string for one
        # more dimension
        raise ValueError(f"too many dimensions '{type(head).__name__}'")
    scan(data)
    sizes = []
    x = data
    while _is_seq(x):
        sizes.append(len(x))
        if not len(x):
            break
        x = x[0]

    def walk(x, dim):
        if dim == len(sizes):
            if _is_seq(x):
                raise TypeError(f"expected a number at dim {dim}, got a sequence "
                                f"({type(x).__name__})")
            return
        if not _is_seq(x):
            raise TypeError("not a sequence")
        if len(x) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got "
                             f"{len(x)})")
        for y in x:
            walk(y, dim + 1)

    walk(data, 0)
    raise _UNPACK_ERROR  # numbers, evenly nested: NumPy fell back to objects for an int
                         # past 64 bits


def _is_seq(x) -> bool:
    return isinstance(x, (list, tuple, np.ndarray)) and not (isinstance(x, np.ndarray)
                                                            and x.ndim == 0)


def _flat(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _nested_map(data, fn):
    if isinstance(data, (list, tuple)):
        return [_nested_map(x, fn) for x in data]
    return fn(data)


def tensor(data, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """Constructs a tensor with no history by copying ``data`` (a number, a nested sequence,
    a NumPy array or a tensor).

    Python floats become the default dtype (float32), ints int64, bools bool.
    ``pin_memory=True`` (CPU tensors, where CUDA is available) puts it in pinned memory.

    Example:
        >>> tg.tensor([[1., -1.], [1., -1.]])
        tensor([[ 1., -1.],
                [ 1., -1.]])
    """
    if isinstance(data, Tensor):
        _warn_copy_construct("tritongrad.tensor(sourceTensor)", 4)  # (through its guard)
    return _tensor(data, dtype, device, requires_grad, pin_memory)


def _warn_copy_construct(how: str, stacklevel: int) -> None:
    warnings.warn(f"To copy construct from a tensor, it is recommended to use "
                  f"sourceTensor.detach().clone() or "
                  f"sourceTensor.detach().clone().requires_grad_(True), rather than {how}.",
                  UserWarning, stacklevel=stacklevel)


def _tensor(data, dtype, device, requires_grad: bool, pin_memory: bool = False) -> Tensor:
    """``tensor()``'s work, without its warning for a tensor ``data``."""
    if isinstance(data, np.ndarray):
        check_ndarray(data)
    if _is_ml_bfloat16(data):  # (held as float32 values on the CPU: converted, exactly)
        data, dtype = np.asarray(data, np.float32), dtype or dtypes.bfloat16
    arr = _infer_array(data, dtype)
    dt = as_dtype(dtype) or (data.dtype if isinstance(data, Tensor) else
                             dtypes.from_numpy_dtype(arr.dtype))
    if not isinstance(data, (np.ndarray, Tensor)):  # Python numbers are range-checked
        if dtype is None and dt is dtypes.float32 and _default_float(data):
            dt = dtypes.get_default_dtype()  # (bfloat16, which NumPy has not: float32 above)
        _check_complex(data, arr, dt)
        _check_data(arr, dt)                        # (arrays and tensors are cast)
    # (an array or a tensor's memory is copied: the new tensor never shares it, as PyTorch's)
    out = host_to(np.array(arr, copy=True, subok=True)
                  if isinstance(data, (np.ndarray, Tensor)) else arr, dt, resolve_device(device))
    return _finish(_pinned(out, pin_memory), requires_grad)


def _is_ml_bfloat16(data) -> bool:
    """Whether ``data`` is a NumPy array or scalar of ml_dtypes' ``bfloat16``: tritongrad's
    CPU bfloat16 is float32 storage on the bfloat16 grid (kernels/numpy/bf16.py), so such an
    array is converted through float32 (exact) rather than shared. (ml_dtypes' float8 arrays
    are a float8 tensor's own storage, shared as they are.)"""
    dt = getattr(data, "dtype", None)
    return (isinstance(data, (np.ndarray, np.generic)) and dt.name == "bfloat16"
            and dt.type.__module__.startswith("ml_dtypes"))


def _default_float(data) -> bool:
    """Whether tensor()'s float data took the default dtype (no NumPy or tensor element
    brought its own)."""
    if isinstance(data, np.generic):
        return False
    return not (_is_seq(data) and any(isinstance(x, _TYPED) for x in _flat(data)))


def _check_complex(data, arr: np.ndarray, dt) -> None:
    """PyTorch converts each element to a real dtype with Python's float() or __index__,
    which refuse a complex number: the imaginary part is never dropped silently (a NumPy
    complex scalar goes to a floating dtype by its own cast, and a Python complex to bool by
    truth value, as PyTorch's)."""
    if arr.dtype.kind != "c" or dt.is_complex:
        return
    x = next(v for v in (_flat(data) if _is_seq(data) else (data,))
             if isinstance(v, (complex, np.complexfloating)))
    if type(x) is complex:
        if dt is dtypes.bool:
            return
        if dt.is_floating_point:
            raise TypeError("must be real number, not complex")
        raise TypeError("'complex' object cannot be interpreted as an integer")
    if not dt.is_floating_point:
        raise TypeError(f"'numpy.{type(x).__name__}' object cannot be interpreted as an "
                        f"integer")


_NO_PINNED_ALLOCATOR = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned "
                        "memory allocator is available on this system.")


def _pinned(t: Tensor, pin_memory: bool) -> Tensor:
    """A new contiguous factory result ``t`` moved to pinned memory when ``pin_memory``."""
    return make(_pinned_array(t._data, t.device, pin_memory), t.dtype) if pin_memory else t


def _pinned_array(arr, device, pin_memory: bool):
    """Backend array ``arr`` copied to pinned memory (laid out alike) when ``pin_memory``."""
    if not pin_memory:
        return arr
    if device.type != "cpu":
        raise RuntimeError("Only dense CPU tensors can be pinned")
    from ...runtime import driver, pinned
    if not driver.is_available():
        raise RuntimeError(_NO_PINNED_ALLOCATOR)
    return pinned.copy(arr)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a tensor or a CPU NumPy array when it can."""
    dev = None if device is None else resolve_device(device)
    dt = as_dtype(dtype)
    if isinstance(data, Tensor):
        return data.to(device=dev or data.device, dtype=dt or data.dtype)
    if isinstance(data, np.ndarray) and (dev or resolve_device(None)).type == "cpu" and (
            dt is None or dt.np == data.dtype) and not _is_ml_bfloat16(data):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray, /) -> Tensor:
    """A CPU tensor sharing memory with ``ndarray`` (writes to either show in both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    check_ndarray(ndarray)
    if _is_ml_bfloat16(ndarray):
        raise TypeError("from_numpy(): an ml_dtypes bfloat16 array cannot share memory with a "
                        "tensor (CPU bfloat16 tensors keep float32 storage); copy it with "
                        "tritongrad.tensor(array) instead")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array with array.copy().)")
    return make(ndarray)


def _factory(shape, value, dtype, device, requires_grad) -> Tensor:
    dev = resolve_device(device)
    k = backend(dev)
    dt = as_dtype(dtype) or (dtypes.get_default_dtype() if value is None or
                             isinstance(value, float) else
                             dtypes.result_type(value))
    arr = k.empty(shape, dt, dev) if value is None else k.full(shape, value, dt, dev)
    return _finish(make(arr, dt), requires_grad)


@observed_op("aten::zeros")
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False, **kw) -> Tensor:
    """A tensor of zeros of shape ``size`` (ints, one sequence, or ``size=``); with ``out=``,
    that tensor resized to ``size`` (as PyTorch's out= functions resize), zeroed in place and
    returned.

    Example:
        >>> tg.zeros(2, 3).shape
        tritongrad.Size([2, 3])
    """
    return _filled("zeros", 0, size, kw, out, dtype, layout, device, requires_grad,
                   pin_memory, None)


def _filled(op: str, value, size: tuple, kw: dict, out, dtype, layout, device,
            requires_grad: bool, pin_memory: bool, memory_format) -> Tensor:
    """zeros, ones and empty: ``value`` (None: uninitialised) in shape ``size``."""
    shape = _size_arg(op, size, _factory_kwargs(op, kw))
    check_layout(op, layout)
    if out is not None:
        return _factory_out(op, out, lambda dt, dev: _filled(
            op, value, (shape,), {}, None, dt, None, dev, False, False, None),
                            dtype, device, requires_grad)
    if memory_format is not None and memory_format is not dtypes.contiguous_format:
        check_memory_format(op, memory_format, None)
        t = empty_strided(shape, format_strides(shape, memory_format), dtype, device,
                          False, pin_memory)
        return _finish(t if value is None else t.fill_(value), requires_grad)
    if value is not None and dtype is None:
        value = float(value)  # (the default dtype, a floating one)
    return _finish(_pinned(_factory(shape, value, dtype, device, False), pin_memory),
                   requires_grad)


def _factory_kwargs(op: str, kw: dict):
    """``size=`` (PyTorch's name for the shape, also a keyword) out of a factory's extra
    keywords."""
    size = kw.pop("size", None)
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kw))}'")
    return size


def _factory_out(name: str, out, make_it, dtype, device, requires_grad: bool,
                 ranged: bool = False, warn: bool = False) -> Tensor:
    """Factory ``name``'s ``out=`` form: ``make_it(dtype, device)`` (out's by default)
    written into ``out``, resized to it first (silently, as PyTorch's factories). A range
    (``ranged``: arange, linspace) fills an ``out`` of as many elements in its own shape, as
    PyTorch's do, and otherwise resizes it (``warn``: with ``resize_output``'s warning, as
    arange's)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if dtype is not None and as_dtype(dtype) is not out.dtype:
        raise RuntimeError(f"dtype {scalar_type_name(as_dtype(dtype))} does not match dtype of "
                           f"out parameter ({scalar_type_name(out.dtype)})")
    if device is not None and resolve_device(device) is not out.device:
        raise RuntimeError(f"{name}: device {resolve_device(device)} does not match out's "
                           f"device {out.device}")
    if requires_grad or (out.requires_grad and state.grad_enabled):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           f"automatic differentiation, but one of the arguments requires "
                           f"grad.")
    value = make_it(as_dtype(dtype) or out.dtype, device if device is not None else out.device)
    if ranged and out.numel() == value.numel():
        return out.copy_(value.reshape(tuple(out.shape)))
    if warn:
        from .elementwise import resize_output  # (elementwise imports this module)
        resize_output(out, tuple(value.shape))
    else:
        out.resize_(tuple(value.shape))
    return out.copy_(value)


@observed_op("aten::ones")
def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad: bool = False,
         pin_memory: bool = False, **kw) -> Tensor:
    """A tensor of ones of shape ``size`` (ints, one sequence, or ``size=``); with ``out=``,
    that tensor resized to ``size`` and filled with ones."""
    return _filled("ones", 1, size, kw, out, dtype, layout, device, requires_grad,
                   pin_memory, None)


@observed_op("aten::empty")
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False, memory_format=None, **kw) -> Tensor:
    """An uninitialised tensor of shape ``size`` (ints, one sequence, or ``size=``), laid out
    in ``memory_format``: row-major (``contiguous_format``, the default), ``channels_last``
    (4-D) or ``channels_last_3d`` (5-D); ``preserve_format`` has nothing to preserve and
    raises, as in PyTorch. ``pin_memory=True``: in pinned host memory. ``out=``: that tensor,
    resized to ``size``."""
    return _filled("empty", None, size, kw, out, dtype, layout, device, requires_grad,
                   pin_memory, memory_format)


def _check_fill_value(value, op: str) -> None:
    """A fill value is a number or a 0-d tensor (PyTorch's Scalar argument)."""
    if not (isinstance(value, (numbers.Number, np.generic))
            or isinstance(value, Tensor) and value.ndim == 0):
        raise TypeError(f"{op}(): argument 'fill_value' must be Number, not "
                        f"{type(value).__name__}")


@observed_op("aten::full")
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value`` (its dtype inferred from it:
    bool, int64, the default dtype for a float, its complex twin for a complex); ``out=``:
    that tensor, resized to ``size`` and filled.

    Example:
        >>> tg.full((2,), 7)
        tensor([7, 7])
    """
    _check_fill_value(fill_value, "full")
    check_layout("full", layout)
    if out is not None:
        return _factory_out("full", out, lambda dt, dev: full(size, fill_value, dtype=dt,
                                                              device=dev),
                            dtype, device, requires_grad)
    if dtype is None and isinstance(fill_value, bool):
        dtype = dtypes.bool
    elif dtype is None and isinstance(fill_value, numbers.Integral):
        dtype = dtypes.int64
    if isinstance(fill_value, numbers.Number):  # (not a 0-d tensor: that is cast)
        dt = as_dtype(dtype) or (dtypes.get_default_dtype() if isinstance(fill_value, float)
                                 else dtypes.result_type(fill_value))
        fill_value = checked_scalar(fill_value, dt)
    return _finish(_pinned(_factory(_size((size,)), fill_value, dtype, device, False), pin_memory),
                   requires_grad)


@observed_op("aten::empty_strided")
def empty_strided(size, stride, dtype=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False, *, layout=None) -> Tensor:
    """An uninitialised tensor with explicit strides (``stride=None``: row-major)."""
    check_layout("empty_strided", layout)
    size = _size((size,))
    dev = resolve_device(device)
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    k = backend(dev)
    if stride is None:
        return _finish(_pinned(make(k.empty(size, dt, dev), dt), pin_memory), requires_grad)
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(size):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality "
                           f"of strides ({len(stride)})")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    buf = _pinned_array(k.empty((extent,), dt, dev), dev, pin_memory)
    return _finish(make(k.as_strided(buf, size, stride, 0), dt), requires_grad)


def _like(fn, t: Tensor, dtype, device, requires_grad, memory_format=None, layout=None,
          pin_memory: bool = False, **kw) -> Tensor:
    """``fn`` over ``t``'s shape, dtype and device, laid out in ``memory_format``. By default
    (``preserve_format``) a non-overlapping, dense ``t``'s strides are kept and any other
    ``t`` gives dense strides in its dimension order (PyTorch's ``empty_like``); a row-major
    layout takes ``fn``'s own path."""
    check_memory_format(f"{fn.__name__}_like", memory_format, None)
    check_layout(f"{fn.__name__}_like", layout)
    tensor_arg(t, f"{fn.__name__}_like")
    shape, dtype, device = tuple(t.shape), dtype or t.dtype, device or t.device
    strides = target_strides(t, memory_format)
    if strides is None:
        return fn(shape, dtype=dtype, device=device, requires_grad=requires_grad,
                  pin_memory=pin_memory, **kw)
    out = empty_strided(shape, strides, dtype, device, pin_memory=pin_memory)
    if (fn is rand or fn is randn) and out.device.type == "cpu":
        # drawn in memory order, as ATen's rand_like/randn_like fill the new layout
        fill = out.uniform_ if fn is rand else out.normal_
        fill(generator=kw.get("generator"))
    elif fn is not empty:  # the values fn makes, copied into the layout
        out.copy_(fn(shape, dtype=dtype, device=device, **kw))
    return _finish(out, requires_grad)


def zeros_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,
               memory_format=None, *,
               layout=None, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros with ``input``'s size (and, by default, dtype and device)."""
    return _like(zeros, input, dtype, device, requires_grad, memory_format, layout, pin_memory)


def ones_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,
              memory_format=None, *,
              layout=None, pin_memory: bool = False) -> Tensor:
    """A tensor of ones with ``input``'s size (and, by default, dtype and device)."""
    return _like(ones, input, dtype, device, requires_grad, memory_format, layout, pin_memory)


def empty_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,
               memory_format=None, *,
               layout=None, pin_memory: bool = False) -> Tensor:
    """An uninitialized tensor with ``input``'s size (and, by default, dtype and device)."""
    return _like(empty, input, dtype, device, requires_grad, memory_format, layout, pin_memory)


def full_like(input: Tensor, fill_value, dtype=None, device=None,
              requires_grad: bool = False, memory_format=None, *,
              layout=None, pin_memory: bool = False) -> Tensor:
    """A tensor of ``fill_value`` with ``input``'s size (and, by default, dtype and device)."""
    _check_fill_value(fill_value, "full_like")
    return _like(full, input, dtype, device, requires_grad, memory_format, layout, pin_memory,
                 fill_value=fill_value)


# -- random ------------------------------------------------------------------------------------

# The global stream, seeded from the OS's entropy at start; its seed is kept for initial_seed().
_initial_seed = int(np.random.SeedSequence().entropy % (1 << 63))
_rng = CPUStream(_initial_seed)  # PyTorch's CPU stream (kernels/numpy/random.py)


def manual_seed(seed: int):
    """Seeds the random number generator of every device; returns the global generator
    (``random.default_generator``)."""
    from .random import default_generator  # (random.py builds on this module)
    return default_generator.manual_seed(int(seed))  # (as torch/random.py: 1.5 seeds 1)


def seed() -> int:
    """Seeds the generator with a non-deterministic number and returns it."""
    s = int(np.random.SeedSequence().entropy % (1 << 63))
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The initial seed of the default random number generator."""
    return _initial_seed


def _stream(generator, device: Device, op: str):
    """The contract's ``gen`` for a draw on ``device`` (random.stream: checked, consumed)."""
    from .random import stream  # (random.py builds on this module)
    return stream(generator, device, op)


def _random(name: str, size, dtype, device, requires_grad, generator) -> Tensor:
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    dev = resolve_device(device)
    if not (dt.is_floating_point or dt.is_complex):  # (the error of PyTorch's kernel)
        raise kernel_not_implemented("check_uniform_bounds" if name == "rand"
                                     else f"normal_kernel_{dev.type}", dt)
    k = backend(dev)
    if dt.is_complex:
        return _finish(_random_complex(k, name, size, dt, dev, generator), requires_grad)
    return _finish(make(getattr(k, name)(size, dt, dev, _stream(generator, dev, name))),
                   requires_grad)


def _random_complex(k, name: str, size, dt, dev, generator) -> Tensor:
    """PyTorch's complex samples: the real and imaginary parts drawn independently, on [0, 1)
    each for ``rand``, normal with variance 1/2 each for ``randn`` (so that E|z|^2 = 1)."""
    from .complex_parts import view_as_complex
    prev, state.grad_enabled = state.grad_enabled, False
    try:
        if name == "randn" and dev.type == "cpu":  # ATen's: std 1/sqrt(2) inside the kernel
            return empty(tuple(size), dtype=dt, device=dev).normal_(generator=generator)
        parts = make(getattr(k, name)(tuple(size) + (2,), dt.to_real(), dev,
                                      _stream(generator, dev, name)))
        z = view_as_complex(parts)
        return z * (1 / math.sqrt(2)) if name == "randn" else z  # (ATen's constant)
    finally:
        state.grad_enabled = prev


def _sampler(name: str, doc: str):
    """The public factory ``name`` (``rand`` or ``randn``): a tensor of the given size filled
    with samples of the backend's distribution of that name (the contract's ``rand``/``randn``
    draws), with PyTorch's factory arguments; ``doc`` is its docstring."""

    def sample(*size, generator=None, out=None, dtype=None, layout=None, device=None,
               requires_grad: bool = False, pin_memory: bool = False, **kw) -> Tensor:
        shape = _size_arg(name, size, _factory_kwargs(name, kw))
        check_layout(name, layout)
        if out is not None:
            return _factory_out(name, out, lambda dt, dev: public(
                shape, generator=generator, dtype=dt, device=dev), dtype, device, requires_grad)
        return _finish(_pinned(_random(name, shape, dtype, device, False, generator),
                               pin_memory), requires_grad)

    sample.__name__ = sample.__qualname__ = name
    sample.__doc__ = doc
    # (one event: the kernel draws into a new array in one call, so PyTorch's nested
    # aten::empty and aten::uniform_ / aten::normal_ are no steps of their own here)
    public = observed_op(f"aten::{name}")(sample)
    return public


def _sampler_like(sampler, doc: str):
    """``<sampler>_like``: ``sampler``'s samples with ``input``'s size (and, by default, dtype
    and device)."""

    def like(input: Tensor, dtype=None, device=None, requires_grad: bool = False, *,
             generator=None, memory_format=None, layout=None,
             pin_memory: bool = False) -> Tensor:
        return _like(sampler, input, dtype, device, requires_grad, memory_format, layout,
                     pin_memory, generator=generator)

    like.__name__ = like.__qualname__ = sampler.__name__ + "_like"
    like.__doc__ = doc
    return like


rand = _sampler("rand", """Returns a tensor filled with random numbers from a uniform
    distribution on the interval [0, 1), drawn from ``generator`` (by default the device's
    default generator, which ``manual_seed`` seeds; on CUDA, drawn on the device).

    Example:
        >>> tg.rand(2, 3).shape
        tritongrad.Size([2, 3])
    """)
randn = _sampler("randn", """Returns a tensor filled with random numbers from a normal
    distribution with mean 0 and variance 1, drawn from ``generator`` (by default the device's
    default generator).

    Example:
        >>> tg.randn(2, 3).shape
        tritongrad.Size([2, 3])
    """)
rand_like = _sampler_like(rand, "Uniform samples on [0, 1) with ``input``'s size (and, by "
                                 "default, dtype and device).")
randn_like = _sampler_like(randn, "Standard normal samples with ``input``'s size (and, by "
                                  "default, dtype and device).")


@observed_op("aten::randint")
def randint(low, high=None, size=None, dtype=None, device=None,
            requires_grad: bool = False, *, generator=None, out=None, layout=None,
            pin_memory: bool = False) -> Tensor:
    """Random integers in [low, high) from ``generator`` (by default the global one);
    ``out=``: written into that tensor, in its dtype (a float ``out`` holds the integers).

    Example:
        >>> tg.randint(0, 10, (3,)).dtype
        tritongrad.int64
    """
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    check_layout("randint", layout)
    if out is not None:
        return _factory_out("randint", out, lambda dt, dev: randint(
            low, high, size, dtype=dt, device=dev, generator=generator), dtype, device,
            requires_grad)
    if pin_memory:
        return _finish(_pinned(randint(low, high, size, dtype=dtype, device=device,
                                       generator=generator), True), requires_grad)
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if low >= high:  # (PyTorch's words: randint is random_ on a new tensor)
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    dev = resolve_device(device)
    dt = as_dtype(dtype) or dtypes.int64
    from .random import check_random_bounds  # (random.py builds on this module)
    check_random_bounds(low, high, dt)  # the range must fit the dtype, as PyTorch's checks
    out = backend(dev).randint(low, high, _size((size,)), dt, dev,
                               _stream(generator, dev, "randint"))
    return _finish(make(out), requires_grad)  # refuses integer dtypes, as PyTorch does


# -- ranges ------------------------------------------------------------------------------------

@observed_op("aten::arange")
def arange(start=None, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Values from ``start`` (default 0) to ``end`` (exclusive) in steps of ``step``
    (``out=``: written into that tensor, in its dtype). ``arange(n)`` is ``arange(0, n)``.
    Integer arguments give int64, any float the default dtype.

    Example:
        >>> tg.arange(1, 4)
        tensor([1, 2, 3])
    """
    check_layout("arange", layout)
    if start is None and end is None:
        raise TypeError('arange() missing 1 required positional arguments: "end"')
    if pin_memory and out is None:
        return _finish(_pinned(arange(start, end, step, dtype=dtype, device=device), True),
                       requires_grad)
    if out is not None:
        return _factory_out("arange", out,
                            lambda dt, dev: arange(start, end, step, dtype=dt, device=dev),
                            dtype, device, requires_grad, ranged=True, warn=True)
    if end is None:
        start, end = 0, start
    elif start is None:  # (arange(end=n))
        start = 0
    # (0-d tensors as their numbers: arange(tensor(3)) is an int64 range, as PyTorch's; any
    # other tensor is no number, even of one element, PyTorch's TypeError)
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, Tensor) and v.ndim:
            raise TypeError(f"arange(): argument '{name}' must be Number, not Tensor (a "
                            f"tensor of {v.ndim} dimension(s): only a 0-d one is a number)")
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    is_int = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    dt = as_dtype(dtype) or (dtypes.int64 if is_int else dtypes.get_default_dtype())
    if dt is dtypes.bool or dt.is_complex:
        raise kernel_not_implemented(f"arange_{resolve_device(device).type}", dt)
    for v in (start, end, step):
        if not isinstance(v, numbers.Real):  # (a complex bound has no double value)
            raise RuntimeError("value cannot be converted to type double without overflow")
    for v in (start, end):
        if not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError(f"step must be nonzero (arange: start={start}, end={end})")
    if not dt.is_floating_point:  # PyTorch reads the bounds as integers
        start, end, step = int(start), int(end), int(step)
        if step == 0:  # (a fractional step that an integer dtype truncates to 0: PyTorch's
            raise ValueError(f"step must be nonzero (arange: the step truncates to 0 in "  # type)
                             f"{dt})")
    if (end - start) / step < 0:
        raise RuntimeError(f"upper bound and lower bound inconsistent with step sign "
                           f"(arange: start={start}, end={end}, step={step})")
    n = max(0, math.ceil((end - start) / step))
    if not is_int:
        start, step = float(start), float(step)
    dev = resolve_device(device)
    if dev.type == "cpu" and dt.is_floating_point:  # PyTorch's rounding: Note [PyTorch's ranges]
        from ..settings import get_num_threads
        threads = get_num_threads() if n > ranges.GRAIN else 1
        return _finish(host_to(ranges.arange(start, step, n, dt, threads), dt, dev),
                       requires_grad)
    return _finish(make(backend(dev).arange(start, step, n, dt, dev), dt), requires_grad)


def _c10_name(dt) -> str:
    """A complex dtype as PyTorch's C++ messages name it (``c10::complex<float>``)."""
    return f"c10::complex<{'double' if dt is dtypes.complex128 else 'float'}>"


def check_range_bounds(op: str, start, end) -> None:
    """linspace's and logspace's ``start`` and ``end``: numbers or 0-d tensors. PyTorch
    refuses a tensor of any other rank, even of one element (which ``.item()`` would read)."""
    bad = [f"{name} with {v.ndim} dimension(s)" for name, v in (("start", start), ("end", end))
           if isinstance(v, Tensor) and v.ndim]
    if bad:
        raise RuntimeError(f"{op} only supports 0-dimensional start and end tensors, but got "
                           f"{' and '.join(bad)}.")


@observed_op("aten::linspace")
def linspace(start, end, steps: int, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """``steps`` values evenly spaced from ``start`` to ``end``, both included (``out=``:
    written into that tensor, in its dtype)."""
    check_layout("linspace", layout)
    if out is not None:
        return _factory_out("linspace", out,
                            lambda dt, dev: linspace(start, end, steps, dtype=dt, device=dev),
                            dtype, device, requires_grad, ranged=True)
    check_range_bounds("linspace", start, end)
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if isinstance(steps, Tensor) and steps.numel() == 1 and not (
            steps.dtype.is_floating_point or steps.dtype.is_complex):
        steps = steps.item()  # (a one-element integer tensor is an int, as PyTorch's)
    if not isinstance(steps, numbers.Integral):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    if isinstance(start, complex) or isinstance(end, complex):  # (a complex range)
        inferred = dtypes.get_default_dtype().to_complex()
        if dtype is None:
            dt = inferred
        elif not dt.is_complex:
            raise RuntimeError(f"linspace(): inferred dtype {_c10_name(inferred)} can't be "
                               f"safely cast to passed dtype {scalar_type_name(dt)}")
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative (linspace: got {steps})")
    dev = resolve_device(device)
    if dt is dtypes.bool:
        raise kernel_not_implemented(f"linspace_{dev.type}", dt)
    arr = ranges.linspace(start, end, int(steps), dt)  # Note [PyTorch's ranges]
    return _finish(_pinned(host_to(arr, dt, dev), pin_memory), requires_grad)


@observed_op("aten::eye")
def eye(n: int, m: int | None = None, *, out=None, dtype=None, layout=None, device=None,
        requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal and zeros elsewhere, ``n`` rows by ``m``
    (default ``n``) columns, of the default dtype unless ``dtype`` is given; ``out=``: that
    tensor, resized to ``(n, m)`` and filled.

    Example:
        >>> tg.eye(2)
        tensor([[1., 0.],
                [0., 1.]])
    """
    check_layout("eye", layout)
    if n is None:  # (m=None is "square"; n has no default)
        raise TypeError("eye(): argument 'n' (position 1) must be int, not NoneType")
    for pos, (name, v) in enumerate((("n", n), ("m", m)), 1):
        if v is not None:
            try:
                v = operator.index(v)
            except TypeError:
                raise TypeError(f"eye(): argument '{name}' (position {pos}) must be int, not "
                                f"{type(v).__name__}") from None
            if v < 0:
                raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
        if name == "n":
            n = v
        else:
            m = v
    if out is not None:
        return _factory_out("eye", out, lambda dt, dev: eye(n, m, dtype=dt, device=dev),
                            dtype, device, requires_grad)
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    return _finish(_pinned(host_to(np.eye(n, m), dt, resolve_device(device)), pin_memory),
                   requires_grad)


# -- the table ---------------------------------------------------------------------------------

def _new(factory):
    """``x.new_<factory>(...)``: the factory, with ``x``'s dtype and device by default."""
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        return factory(*size, dtype=dtype or self.dtype, device=device or self.device,
                       requires_grad=requires_grad, **kw)
    method.__name__ = f"new_{factory.__name__}"
    method.__doc__ = f"A new tensor from ``{factory.__name__}``, by default of this tensor's " \
                     f"dtype and device."
    return method


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
              layout=None, pin_memory: bool = False) -> Tensor:
    """A new tensor filled with ``fill_value``, by default of this tensor's dtype and device
    (``layout`` and ``pin_memory`` as :func:`full`'s)."""
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor of ``data``, by default of this tensor's dtype and device."""
    if isinstance(data, Tensor):
        _warn_copy_construct("tensor.new_tensor(sourceTensor)", 3)
    return _tensor(data, dtype or self.dtype, device or self.device, requires_grad)


def legacy_new(args: tuple, dtype, device, op: str) -> Tensor:
    """PyTorch's legacy constructor ``x.new(...)`` / ``torch.FloatTensor(...)``: sizes give
    an uninitialised tensor, one sequence (or array, or Tensor) of values a tensor of them,
    nothing an empty tensor."""
    if len(args) == 1 and isinstance(args[0], Size):  # a shape (0-d too), not values
        return empty(tuple(args[0]), dtype=dtype, device=device)
    if len(args) == 1 and not isinstance(args[0], (int, np.integer)) and args[0] is not None:
        return tensor(args[0].tolist() if isinstance(args[0], Tensor) else args[0],
                      dtype=dtype, device=device)
    if not all(isinstance(a, (int, np.integer)) for a in args):
        raise TypeError(f"{op}(): expected sizes (ints) or one sequence of values, got "
                        f"{', '.join(type(a).__name__ for a in args)}")
    return empty(*args if args else (0,), dtype=dtype, device=device)


def _legacy_new_method(self, *args, dtype=None, device=None) -> Tensor:
    """``x.new(...)``, the legacy constructor with this tensor's dtype and device: sizes give
    an uninitialised tensor, one sequence of values a tensor of them (prefer ``new_empty``,
    ``new_tensor``)."""
    return legacy_new(args, dtype or self.dtype, device or self.device, "new")


OPS = tuple(OpInfo(n, globals()[n], method=False, grad="none") for n in (
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "empty_strided",
    "zeros_like", "ones_like", "empty_like", "full_like", "rand", "randn", "randint",
    "rand_like", "randn_like", "arange", "linspace", "eye", "manual_seed", "seed",
    "initial_seed")) + (
    OpInfo("new_zeros", _new(zeros), function=False, grad="none"),
    OpInfo("new_ones", _new(ones), function=False, grad="none"),
    OpInfo("new_empty", _new(empty), function=False, grad="none"),
    OpInfo("new_empty_strided", _new(empty_strided), function=False, grad="none"),
    OpInfo("new_full", _new_full, function=False, grad="none"),
    OpInfo("new_tensor", _new_tensor, function=False, grad="none"),
    OpInfo("new", _legacy_new_method, function=False, grad="none"),
)
