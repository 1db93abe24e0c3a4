"""Element types and PyTorch's type-promotion rules.

A ``dtype`` names an element type for every layer: the NumPy backend maps it to a NumPy dtype,
and Triton reads it from ``str(dtype)`` (``"tritongrad.float32"`` ends in a name Triton knows).
bfloat16 has no NumPy twin: on the CPU its storage is ``uint16`` bit patterns (see
``kernels/numpy``), on the GPU it is native. The float8 types (``float8_e4m3fn`` and friends)
are stored as their one-byte bit patterns: on the CPU under the NumPy dtypes of the
``ml_dtypes`` package, on the GPU as raw bytes (see "float8" in docs/runtime.md).
"""

from __future__ import annotations

import builtins
import numbers
import threading

import numpy as np

try:  # the float8 NumPy dtypes (one byte each; tritongrad computes their bits itself)
    import ml_dtypes as _ml_dtypes
except ImportError:  # float8 tensors then refuse to be made (``_float8_np``)
    _ml_dtypes = None

__all__ = [
    "dtype", "float16", "half", "bfloat16", "float32", "float", "float64", "double",
    "uint8", "int8", "int16", "int32", "int", "int64", "long", "bool",
    "uint16", "uint32", "uint64",
    "complex64", "cfloat", "complex128", "cdouble",
    "get_default_dtype", "set_default_dtype", "promote_types", "result_type", "from_numpy_dtype",
    "get_float32_matmul_precision", "set_float32_matmul_precision",
    "memory_format", "contiguous_format", "preserve_format", "channels_last", "finfo", "iinfo",
    "channels_last_3d", "bfloat16_bits", "bfloat16_values", "layout", "sparse_coo", "strided",
    "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    "float8_bits", "float8_values",
]

_BOOL, _INT, _FLOAT, _COMPLEX = range(4)  # promotion categories, lowest first


class dtype:
    """An element type: ``tritongrad.float32`` and friends (singletons, read-only, as
    PyTorch's: ``tritongrad.dtype(...)`` is refused, and so is setting an attribute).

    Attributes:
        itemsize: bytes per element.
        is_floating_point: True for float16, bfloat16, float32, float64 and the float8
            types.
        is_complex: True for complex64 and complex128.
        is_signed: True unless the type is bool or unsigned.
    """

    __slots__ = ("name", "itemsize", "np", "is_floating_point", "is_complex", "is_signed",
                 "_category", "_rank")

    def __init__(self, *args, **kwargs):
        # the module's singletons are made by _new_dtype; a subclass (the quantized types
        # of tritongrad/ao) by this with _new_dtype's arguments
        if type(self) is dtype:
            raise TypeError("cannot create 'tritongrad.dtype' instances")
        _init_dtype(self, *args, **kwargs)

    def __setattr__(self, name: str, value) -> None:
        # read-only as PyTorch's: ``tg.float32.itemsize = 3`` would corrupt every tensor
        raise AttributeError(f"attribute '{name}' of 'tritongrad.dtype' objects is not "
                             f"writable")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def __repr__(self) -> str:
        return f"tritongrad.{self.name}"

    __str__ = __repr__

    def __reduce__(self):  # dtypes are singletons; pickling keeps them so
        return (_dtype_named, (self.name,))

    def to_complex(self) -> "dtype":
        """The complex dtype whose parts are this floating point dtype (complex64 for
        float32, bfloat16 and float16, which has no complex32 here); a complex dtype itself.

        Raises:
            RuntimeError: an integer, bool or float8 dtype (no complex twin, as PyTorch).
        """
        out = _TO_COMPLEX.get(self)
        if out is None:
            raise RuntimeError(f"Unknown Complex ScalarType for "
                               f"{CPP_NAMES.get(self.name, self.name)}")
        return out

    def to_real(self) -> "dtype":
        """The dtype of a complex dtype's parts; any other dtype itself."""
        return {complex64: float32, complex128: float64}.get(self, self)


def _init_dtype(d: dtype, name: str, np_dtype, category: int, rank: int,
                signed: bool = True) -> None:
    np_dt = np.dtype(np_dtype)
    for k, v in (("name", name), ("np", np_dt), ("itemsize", np_dt.itemsize),
                 ("_category", category), ("_rank", rank), ("is_signed", signed),
                 ("is_floating_point", category == _FLOAT),
                 ("is_complex", category == _COMPLEX)):
        object.__setattr__(d, k, v)


def _new_dtype(name: str, np_dtype, category: int, rank: int, signed: bool = True) -> dtype:
    """One of the module's dtype singletons (``dtype(...)`` itself is refused)."""
    d = object.__new__(dtype)
    _init_dtype(d, name, np_dtype, category, rank, signed)
    return d


# rank orders types inside a category for promotion; uint8/int8 meet at int16 (as in PyTorch).
bool = _new_dtype("bool", np.bool_, _BOOL, 0, signed=False)  # noqa: A001 - PyTorch's name
uint8 = _new_dtype("uint8", np.uint8, _INT, 1, signed=False)
int8 = _new_dtype("int8", np.int8, _INT, 1)
int16 = _new_dtype("int16", np.int16, _INT, 2)
int32 = _new_dtype("int32", np.int32, _INT, 3)
int64 = _new_dtype("int64", np.int64, _INT, 4)
# PyTorch's limited-support unsigned types: creation, conversion, printing, equality; no
# promotion with another dtype except to a floating point one (promote_types refuses).
uint16 = _new_dtype("uint16", np.uint16, _INT, 2, signed=False)
uint32 = _new_dtype("uint32", np.uint32, _INT, 3, signed=False)
uint64 = _new_dtype("uint64", np.uint64, _INT, 4, signed=False)
_LIMITED_UINTS = (uint16, uint32, uint64)
float16 = _new_dtype("float16", np.float16, _FLOAT, 1)
bfloat16 = _new_dtype("bfloat16", np.uint16, _FLOAT, 1)
float32 = _new_dtype("float32", np.float32, _FLOAT, 2)
float64 = _new_dtype("float64", np.float64, _FLOAT, 3)
complex64 = _new_dtype("complex64", np.complex64, _COMPLEX, 2)
complex128 = _new_dtype("complex128", np.complex128, _COMPLEX, 3)



def _float8_np(name: str):
    # the ml_dtypes dtype of the same name; without the package a placeholder that no array
    # is ever made with (from_numpy_dtype does not know it, float8_bits refuses)
    return getattr(_ml_dtypes, name) if _ml_dtypes is not None else np.void


# float8: storage formats (PyTorch's set: conversions, copies, views, a few ops, _scaled_mm).
# e4m3fn: 4 exponent bits, 3 mantissa bits, no infinities, NaN 0x7F/0xFF (max 448); e5m2: IEEE
# style (max 57344, inf, NaN); the "fnuz" pair: no negative zero, 0x80 the only NaN; e8m0fnu:
# an exponent only (2 ** (bits - 127)), unsigned, 0xFF NaN: the scales of MX formats.
float8_e4m3fn = _new_dtype("float8_e4m3fn", _float8_np("float8_e4m3fn"), _FLOAT, 0)
float8_e5m2 = _new_dtype("float8_e5m2", _float8_np("float8_e5m2"), _FLOAT, 0)
float8_e4m3fnuz = _new_dtype("float8_e4m3fnuz", _float8_np("float8_e4m3fnuz"), _FLOAT, 0)
float8_e5m2fnuz = _new_dtype("float8_e5m2fnuz", _float8_np("float8_e5m2fnuz"), _FLOAT, 0)
float8_e8m0fnu = _new_dtype("float8_e8m0fnu", _float8_np("float8_e8m0fnu"), _FLOAT, 0,
                            signed=False)
if _ml_dtypes is None:  # (np.void has no fixed size: the format's is one byte)
    for _d in (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu):
        object.__setattr__(_d, "itemsize", 1)
FLOAT8_TYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)

half, float, double = float16, float32, float64  # noqa: A001
int, long = int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128
# (complex32 does not exist here: float16's complex twin is complex64)
_TO_COMPLEX = {float16: complex64, bfloat16: complex64, float32: complex64,
               float64: complex128, complex64: complex64, complex128: complex128}

_all = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
        complex64, complex128, uint16, uint32, uint64) + FLOAT8_TYPES
_by_name = {d.name: d for d in _all}
_by_np = {d.np: d for d in _all if d is not bfloat16 and d.np.type is not np.void}
# dtypes that promote with no other (PyTorch refuses): one set test on promote_types' path
_NO_PROMOTION = frozenset(_LIMITED_UINTS + FLOAT8_TYPES)


def from_numpy_dtype(np_dtype) -> dtype:
    """The tritongrad dtype of a NumPy dtype (``uint16`` storage is never guessed as bfloat16)."""
    try:
        return _by_np[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"NumPy dtype {np.dtype(np_dtype)} has no tritongrad equivalent; "
                        f"supported: {', '.join(sorted(d.name for d in _all))}") from None


class _Default(threading.local):
    dtype = float32
    matmul_precision = "highest"


_default = _Default()


def get_default_dtype() -> dtype:
    """The floating point dtype that factories and Python floats use (float32 unless set)."""
    return _default.dtype


def set_default_dtype(d: dtype) -> None:
    """Sets the default floating point dtype: float32, float64, float16 or bfloat16 (as in
    PyTorch; the float8 types cannot be).

    Raises:
        TypeError: ``d`` is not one of them (PyTorch's words).
    """
    if d not in (float32, float64, float16, bfloat16):
        if not isinstance(d, dtype):
            raise TypeError("invalid dtype object: only floating-point types are supported as "
                            "the default type")
        if d in FLOAT8_TYPES:  # (PyTorch fails looking for their legacy storage class)
            raise TypeError(f"couldn't find storage object {CPP_NAMES[d.name]}Storage")
        raise TypeError("only floating-point types are supported as the default type")
    _default.dtype = d


_NO_TYPE = object()  # finfo()'s default: the default dtype (finfo(None) is refused)
# the Python types PyTorch's dtype arguments take for dtypes
_PY_TYPES = {builtins.float: float64, builtins.int: int64, builtins.bool: bool,
             complex: complex128}


def _info_arg(op: str, d) -> dtype:
    """finfo's / iinfo's dtype argument: a dtype, or a Python number type as its dtype."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, builtins.type) and d in _PY_TYPES:
        return _PY_TYPES[d]
    if op == "finfo":  # (PyTorch names the argument's type here too; this wording is kept
        # because tests/autograd/test_dtype_info.py pins it for finfo("float32"))
        raise TypeError(_FINFO_KIND)
    raise TypeError(f"{op}(): argument 'type' (position 1) must be tritongrad.dtype, not "
                    f"{builtins.type(d).__name__}")


_FINFO_KIND = ("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
               "'torch.finfo'")


class finfo:
    """Machine limits of a floating point dtype, as ``torch.finfo``.

    Attributes (Python floats, ``bits`` an int, ``dtype`` the name): ``bits``, ``eps`` (the
    gap between 1 and the next value), ``max``, ``min`` (= -max), ``tiny`` and
    ``smallest_normal`` (the smallest positive normal value), ``resolution`` (10 ** -digits).
    A complex dtype gives its real part's limits; no argument, the default dtype's.

    Raises:
        TypeError: ``type`` is not a floating point or complex dtype.
    """

    __slots__ = ("bits", "dtype", "eps", "max", "min", "resolution", "smallest_normal", "tiny")

    def __init__(self, type: dtype = _NO_TYPE):  # noqa: A002 - PyTorch's parameter name
        d = get_default_dtype() if type is _NO_TYPE else _info_arg("finfo", type)
        if not (d.is_floating_point or d.is_complex):
            raise TypeError(_FINFO_KIND)
        d = d.to_real()
        if d in _FLOAT8_LIMITS:
            (self.bits, self.eps, self.max, self.min, self.tiny, self.resolution, self.dtype
             ) = _FLOAT8_LIMITS[d] + (d.name,)
            self.smallest_normal = self.tiny
            return
        if d is bfloat16:  # 8 exponent bits as float32, 8 significand bits (7 stored)
            f32 = np.finfo(np.float32)
            self.bits, self.eps, self.resolution = 16, 2.0 ** -7, 0.01
            self.max = builtins.float(bfloat16_values(np.array([0x7F7F], np.uint16))[0])
            self.tiny = builtins.float(f32.tiny)
        else:
            f = np.finfo(d.np)
            self.bits, self.eps = f.bits, builtins.float(f.eps)
            self.resolution = 10.0 ** -f.precision
            self.max, self.tiny = builtins.float(f.max), builtins.float(f.tiny)
        self.min, self.smallest_normal, self.dtype = -self.max, self.tiny, d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")

    def __eq__(self, other) -> builtins.bool:
        # (PyTorch's: equal limits are equal; a new object each call, so `is` would not do)
        return type(other) is type(self) and all(
            getattr(self, f) == getattr(other, f) for f in self.__slots__)

    __hash__ = None  # (unhashable, as PyTorch's)


class iinfo:
    """Machine limits of an integer dtype, as ``torch.iinfo``: ``bits``, ``min``, ``max``
    (Python ints) and ``dtype`` (the name).

    Raises:
        TypeError: ``type`` is not an integer dtype (bool included, as PyTorch).
    """

    __slots__ = ("bits", "dtype", "max", "min")

    def __init__(self, type: dtype = _NO_TYPE):  # noqa: A002 - PyTorch's parameter name
        if type is _NO_TYPE:  # (PyTorch's words: no default, unlike finfo)
            raise TypeError('iinfo() missing 1 required positional arguments: "type"')
        d = _info_arg("iinfo", type)
        if d is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point or d.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        i = np.iinfo(d.np)
        self.bits, self.dtype = i.bits, d.name
        self.min, self.max = builtins.int(i.min), builtins.int(i.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

    __eq__ = finfo.__eq__
    __hash__ = None


_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """Sets the internal precision of float32 matrix products: ``"highest"`` (full float32,
    the default), ``"high"`` or ``"medium"`` (TensorFloat-32 products allowed: CUDA's float32
    matmul then runs ``tl.dot`` with ``input_precision="tf32"``; the CPU is unaffected)."""
    if precision not in _PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: {precision!r} is not one of "
                         f"'highest', 'high', or 'medium'")
    _default.matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision last set (``"highest"`` by default)."""
    return _default.matmul_precision


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing category or
    range.

    Raises:
        TypeError: an argument is not a dtype.
        RuntimeError: a float8 or uint16/32/64 type with another (PyTorch refuses).
    """
    a, b = type1, type2
    if a is b:  # (the hot case: no type check, promote_types(3, 3) passes 3 through)
        return a
    if a in _NO_PROMOTION or b in _NO_PROMOTION:
        return _promote_limited_uint(a, b)
    try:
        ca, cb = a._category, b._category
    except AttributeError:
        _not_a_dtype(a, b)
    if ca != cb:
        hi, lo = (a, b) if a._category > b._category else (b, a)
        if hi.is_complex and lo.is_floating_point and lo._rank > hi._rank:
            return complex128
        return hi
    if {a, b} == {float16, bfloat16}:
        return float32
    if {a, b} == {uint8, int8}:
        return int16
    if a.is_complex or a.is_floating_point or a._category == _INT:
        return a if a._rank > b._rank else b
    return a


def _not_a_dtype(a, b):
    bad, name, pos = (a, "type1", 1) if not isinstance(a, dtype) else (b, "type2", 2)
    raise TypeError(f"promote_types(): argument '{name}' (position {pos}) must be "
                    f"tritongrad.dtype, not {type(bad).__name__}")


# PyTorch's C++ names of the dtypes, as its error messages print them
CPP_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
             "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
             "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
             "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
             "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
             "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz",
             "float8_e8m0fnu": "Float8_e8m0fnu"}


def _promote_limited_uint(a: dtype, b: dtype) -> dtype:
    if a in FLOAT8_TYPES or b in FLOAT8_TYPES:  # (a is b returned before)
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                           f"{CPP_NAMES[a.name]} and {CPP_NAMES[b.name]}")
    # PyTorch promotes uint16/32/64 only to floating point types
    for other in (a, b):
        if other.is_floating_point:
            return other
    raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                       f"attempted to promote {CPP_NAMES[a.name]} and {CPP_NAMES[b.name]}")


def _category_of_scalar(x) -> int:
    # NumPy's scalars count as the Python numbers they hold, as in PyTorch (np.int64 is no int)
    if isinstance(x, (builtins_bool, np.bool_)):
        return _BOOL
    if isinstance(x, (builtins_int, np.integer)):
        return _INT
    if isinstance(x, (complex, np.complexfloating)):
        return _COMPLEX
    return _FLOAT  # (anything else: the op that was given it refuses it, naming itself)


builtins_bool, builtins_int = type(True), type(1)


def _scalar_dtype(x) -> dtype:
    c = _category_of_scalar(x)
    if c == _BOOL:
        return bool
    if c == _INT:
        return int64
    if c == _FLOAT:
        return get_default_dtype()
    return get_default_dtype().to_complex()


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # c10's combine_categories: a higher-priority group keeps its dtype unless a lower group
    # brings a higher category, in which case the lower group's type decides.
    if higher is None:
        return lower
    if lower is None or higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> dtype:
    """The dtype of an op over ``operands`` (tensors and Python scalars), as PyTorch decides.

    Tensors with dimensions outrank zero-dimensional tensors, which outrank Python scalars; a
    lower-ranked operand only matters when it brings a higher category (bool < int < float <
    complex). ``int tensor * 2.5`` is therefore float32, ``float16 tensor * float64 0-d`` is
    float16.
    """
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            if x.ndim:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        elif x is not None:
            s = _scalar_dtype(x)
            wrapped = s if wrapped is None else promote_types(wrapped, s)
    out = _combine(dim, _combine(zero, wrapped))
    if out is None:
        raise TypeError("result_type: needs at least one tensor or scalar operand")
    return out


_RESULT_TYPE_KEYWORDS = ("tensor", "other", "scalar", "scalar1", "scalar2")


def _is_tensor(x) -> builtins.bool:
    return isinstance(getattr(x, "dtype", None), dtype)


def public_result_type(*args, **kwargs) -> dtype:
    """``torch.result_type``: the dtype an op over two operands gives, each a tensor or a
    number, passed by position or by PyTorch's names (``tensor``/``other``, ``scalar``,
    ``scalar1``/``scalar2``). (The ops call ``result_type``, which takes any number of
    operands and leaves refusing a non-number to the op, which names itself.)

    Raises:
        TypeError: not two operands, or one that is neither a tensor nor a number.
    """
    operands = args + tuple(kwargs[k] for k in _RESULT_TYPE_KEYWORDS if k in kwargs)
    if len(operands) != 2 or len(kwargs) != len(operands) - len(args) or not all(
            _is_tensor(x) or isinstance(x, (numbers.Number, np.bool_)) for x in operands):
        got = ", ".join(["Tensor" if _is_tensor(x) else builtins.type(x).__name__
                         for x in args]
                        + [f"{k}={builtins.type(v).__name__}" for k, v in kwargs.items()])
        raise TypeError(f"result_type() received an invalid combination of arguments - got "
                        f"({got}), but expected one of: (Tensor tensor, Tensor other), "
                        f"(Number scalar, Tensor tensor), (Tensor tensor, Number other), "
                        f"(Number scalar1, Number scalar2)")
    return result_type(*operands)


# (where users meet them: ``tritongrad.dtype``, as PyTorch's ``torch.dtype``)
dtype.__module__ = finfo.__module__ = iinfo.__module__ = "tritongrad"


def bfloat16_bits(values) -> np.ndarray:
    """bfloat16 bit patterns (``uint16``, the format's upper half of a float32) of ``values``,
    rounded to the nearest bfloat16, ties to even; every NaN becomes the quiet NaN 0x7FC0. The
    host form of bfloat16 for device memory and for saved files."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    if f.ndim == 0:
        f = np.asarray(f)
    bits = f.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded)


def bfloat16_values(bits) -> np.ndarray:
    """The float32 values (exact) of bfloat16 bit patterns ``bits`` (``uint16``)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# torch.finfo of the float8 types: (bits, eps, max, min, tiny, resolution); min is -max but
# for the unsigned e8m0fnu, whose min is its smallest value 2 ** -127, as PyTorch reports it
_FLOAT8_LIMITS = {
    float8_e4m3fn: (8, 2.0 ** -3, 448.0, -448.0, 2.0 ** -6, 1.0),
    float8_e5m2: (8, 2.0 ** -2, 57344.0, -57344.0, 2.0 ** -14, 1.0),
    float8_e4m3fnuz: (8, 2.0 ** -3, 240.0, -240.0, 2.0 ** -7, 1.0),
    # (PyTorch's e5m2fnuz eps is 2 ** -3, not its mantissa's 2 ** -2: reported as it is)
    float8_e5m2fnuz: (8, 2.0 ** -3, 57344.0, -57344.0, 2.0 ** -15, 1.0),
    float8_e8m0fnu: (8, 1.0, 2.0 ** 127, 2.0 ** -127, 2.0 ** -127, 1.0),
}


def float8_bits(values, dtype: dtype) -> np.ndarray:
    """``values`` converted to float8 type ``dtype``, as PyTorch converts them, returned as a
    NumPy array of ``dtype.np`` (one byte per element: the bit patterns; ``.view(np.uint8)``).

    Every input goes through float32 first (as PyTorch's casts do), then rounds to the nearest
    representable value, ties to even. Beyond the finite range: ``float8_e4m3fn`` saturates
    to +-448 (infinities too) and keeps NaN as 0x7F/0xFF by sign; ``float8_e5m2`` overflows to
    +-inf, NaN 0x7F/0xFF; the fnuz types give their only NaN 0x80 (negative zero becomes 0);
    ``float8_e8m0fnu`` (a power of two) takes the magnitude and rounds up from 1.5 times a
    power of two (ties up), below 2 ** -126 (float32 subnormals) anything above 2 ** -127 up;
    NaN, infinities and overflow give its NaN 0xFF.
    """
    if dtype.np.type is np.void:
        raise RuntimeError(f"{dtype} tensors need the ml_dtypes package (pip install ml_dtypes)")
    f = np.asarray(values)
    if f.dtype == dtype.np:  # the same format: the bits as they are (NaN payloads included)
        return f.copy()
    if f.dtype != np.float32:
        f = f.astype(np.float32) if f.dtype.kind != "c" else f.real.astype(np.float32)
    if dtype is float8_e8m0fnu:
        return _e8m0_bits(f).view(dtype.np)
    with np.errstate(invalid="ignore", over="ignore"):
        out = f.astype(dtype.np)  # ml_dtypes: round to nearest even, its own overflow rules
    if dtype is float8_e4m3fn or dtype is float8_e5m2:
        bits = out.view(np.uint8)
        sign = (f.view(np.uint32) >> 24).astype(np.uint8) & np.uint8(0x80)
        nan = np.isnan(f)
        if dtype is float8_e4m3fn:  # PyTorch saturates what ml_dtypes makes NaN
            bits[...] = np.where(np.isnan(out) & ~nan, sign | np.uint8(0x7E), bits)
        bits[...] = np.where(nan, sign | np.uint8(0x7F), bits)  # NaN keeps its sign
    return out


def _e8m0_bits(f: np.ndarray) -> np.ndarray:
    # PyTorch's fp8e8m0fnu_from_fp32_value: the float32 exponent field, rounded up by the
    # guard bit unless the rest is zero and the implied bit is (a float32 subnormal: ties to
    # even); NaN and infinity are the exponent 255 already
    b = np.ascontiguousarray(f).view(np.uint32)
    e = (b >> 23) & 0xFF
    up = ((b & 0x400000) != 0) & (((b & 0x3FFFFF) != 0) | (e > 0)) & (e != 0xFF)
    return (e + up).astype(np.uint8).reshape(f.shape)


def float8_values(bits, dtype: dtype) -> np.ndarray:
    """The float32 values (exact) of float8 type ``dtype``'s bit patterns ``bits`` (``uint8``
    or ``dtype.np``)."""
    table = _FLOAT8_DECODE.get(dtype)
    if table is None:
        table = _FLOAT8_DECODE[dtype] = _decode_table(dtype)
    return table[np.asarray(bits).view(np.uint8)]


_FLOAT8_DECODE: dict = {}


def _decode_table(d: dtype) -> np.ndarray:
    # the 256 values, with PyTorch's float32 NaNs (their sign decides a later conversion's NaN
    # code): e4m3fn 0x7FF00000 and e5m2 float16's widening (with the sign); the fnuz types
    # and e8m0fnu 0x7F800001
    if d.np.type is np.void:
        raise RuntimeError(f"{d} tensors need the ml_dtypes package (pip install ml_dtypes)")
    codes = np.arange(256, dtype=np.uint8)
    table = codes.view(d.np).astype(np.float32)
    bits = table.view(np.uint32)
    nan = np.isnan(table)
    sign = np.where(codes >= 0x80, np.uint32(0x80000000), np.uint32(0))
    if d is float8_e5m2:  # as float16's NaNs widen: the payload shifted, the quiet bit set
        payload = np.uint32(0x7FC00000) | ((codes & 3).astype(np.uint32) << 21)
        bits[nan] = sign[nan] | payload[nan]
    elif d is float8_e4m3fn:
        bits[nan] = sign[nan] | np.uint32(0x7FF00000)
    else:
        bits[nan] = np.uint32(0x7F800001)
    return table


class _Named:
    """A named singleton printed as ``tritongrad.<name>`` (memory formats, layouts)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"tritongrad.{self.name}"

    __str__ = __repr__


class memory_format(_Named):
    """A layout request, as PyTorch's ``torch.memory_format``: ``tritongrad.contiguous_format``
    (row-major), ``preserve_format`` (the source's layout), ``channels_last`` (a 4-D NCHW
    tensor stored NHWC) and ``channels_last_3d`` (5-D NCDHW stored NDHWC). The strides each
    gives are computed in autograd/layout.py."""

    __slots__ = ()

    def __reduce__(self):  # singletons, like dtypes
        return (_format_named, (self.name,))


def _dtype_named(name: str) -> dtype:
    # (a module-level function: a reduce to ``_by_name.__getitem__`` would pickle the dict)
    return _by_name[name]


def _format_named(name: str) -> memory_format:
    return _formats_by_name[name]


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
_formats_by_name = {f.name: f for f in (contiguous_format, preserve_format, channels_last,
                                        channels_last_3d)}


class layout(_Named):
    """How a tensor's elements are stored, as PyTorch's ``torch.layout``:
    ``tritongrad.strided`` (dense, with strides), ``tritongrad.sparse_coo`` (indices and
    values: autograd/sparse.py), or one of the compressed sparse layouts ``sparse_csr``,
    ``sparse_csc``, ``sparse_bsr``, ``sparse_bsc`` (compressed indices, plain indices and
    values)."""

    __slots__ = ()

    def __reduce__(self):  # singletons, like the dtypes (the module-level name)
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")  # (torch.nested's jagged layout: tritongrad/nested)
