"""Copies, casts and moves between devices: ``to``, ``cuda``, ``cpu``, ``clone``, ``copy_``.

Moving a tensor is recorded like any op (``ToCopyBackward0``): ``torch.rand(10,
requires_grad=True).cuda()`` is a non-leaf whose gradient flows back to the CPU leaf, as the
seeds' is_leaf example says.
"""

from __future__ import annotations

import builtins
import numbers
import warnings

import numpy as np

from ..registry import OpInfo, with_jvp
from ...kernels import backend, host_array
from ...runtime import dtype as dtypes
from ...runtime.device import device as Device
from ..checks import check_memory_format, tensor_arg
from ..dispatch import Primitive, apply, apply_inplace, call, linear_jvp, meta, zeros
from ..layout import empty_array, suggest_memory_format, target_strides
from ..tensor import Tensor
from .creation import as_dtype, resolve_device



def _move(k, x, dtype, device, non_blocking=False):
    """Array ``x`` (on ``k``'s device) as ``dtype`` on ``device``: the one cross-device copy
    (asynchronous where ``non_blocking`` and the host side is pinned: Note [pinned memory])."""
    from ...runtime import memory
    src_dev = _array_device(x)
    if src_dev is device:
        return k.astype(x, dtype)
    if device.type == "meta":  # (Note [The meta device]: the shape and dtype, no values)
        return backend(device).empty(x.shape, dtype)
    if src_dev.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    if device.type == "cpu":  # device -> host: cast on the device, then copy down
        arr = memory.to_host(k.astype(x, dtype), non_blocking)
        if dtype is dtypes.bfloat16:  # bit patterns -> the CPU backend's bfloat16 array
            return host_array(dtypes.bfloat16_values(arr), dtype)
        return arr
    if src_dev.type == "cpu":  # host -> device
        from .creation import host_to
        return host_to(x, dtype, device, non_blocking)._data
    out = memory.empty(x.shape, dtype, device)  # device -> other device
    memory.copy_between(out, k.astype(x, dtype))
    return out


def _array_device(x):
    from ..tensor import array_meta
    return array_meta(x)[0]


def _strided_copy(k, x, dtype, device, strides):
    """Array ``x`` (on ``device``, backend ``k``) copied into a new ``dtype`` array with element
    ``strides``: the copies that keep or set a memory format (row-major ones use astype)."""
    out = empty_array(k, x.shape, strides, dtype, device)
    k.copy_(out, x)
    return out


class ToCopyBackward0(Primitive):
    __slots__ = ()
    op_name = "to"
    changes_device = True
    jvp = linear_jvp()  # the tangent converted and moved alike

    @staticmethod
    def forward(ctx, k, x, dtype, device, src_dtype, strides=None, non_blocking=False):
        src_device = _array_device(x)
        ctx.src = (src_dtype, src_device)
        if strides is None:  # row-major, the common case
            return _move(k, x, dtype, device, non_blocking)
        if src_device is device:  # one pass: the cast is the copy into the layout
            return _strided_copy(k, x, dtype, device, strides)
        return _strided_copy(backend(device), _move(k, x, dtype, device, non_blocking), dtype,
                             device, strides)

    @staticmethod
    def vjp(ctx, k, saved, g):
        dtype, device = ctx.src
        g_device, g_dtype = meta(g)
        if g_dtype.is_complex and not dtype.is_complex:  # made complex: the real part's
            g = k.real(g)                                 # gradient (Note [Complex autograd])
            g_dtype = meta(g)[1]
        if dtype is g_dtype and device is g_device:
            return g
        return call(k, ToCopyBackward0, (g,), dtype, device, g_dtype)


class PinMemoryBackward0(Primitive):
    """A copy of a CPU tensor in pinned memory; the gradient passes through."""

    __slots__ = ()
    op_name = "pin_memory"

    @staticmethod
    def forward(ctx, k, x):
        from ...runtime import pinned
        return pinned.copy(x)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return g

    @staticmethod
    def jvp(ctx, k, primals, tangents, out):
        """The tangent as it is: the same values (where it lives does not matter to it)."""
        return tangents[0]


def _to_args(args, kwargs):
    """Parses PyTorch's ``to`` overloads into (dtype | None, device | None, non_blocking, copy,
    memory_format | None)."""
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    memory_format = kwargs.pop("memory_format", None)
    check_memory_format("to", memory_format, None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments - got "
                        f"unexpected keyword arguments {sorted(kwargs)}")
    flags, given = [], []
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
            given += ["Tensor"]
        elif isinstance(a, builtins.bool):
            flags.append(a)  # non_blocking, then copy
        elif isinstance(a, (str, Device, numbers.Integral)):
            device = a  # (a string is a device, as PyTorch's: "float32" is no dtype here)
            given += ["device"]
        elif a is not None:
            dtype = a
            given += ["dtype"]
    if len(given) != len(set(given)) or "Tensor" in given and len(given) > 1:
        # (each overload takes one dtype, one device, or one tensor to match)
        raise TypeError(f"to() received an invalid combination of arguments - got "
                        f"({', '.join(given)}); expected (dtype), (device, dtype) or "
                        f"(Tensor other)")
    if flags:
        non_blocking = flags[0]
    if len(flags) > 1:
        copy = flags[1]
    return (as_dtype(dtype), (None if device is None else resolve_device(device)),
            builtins.bool(non_blocking), copy, memory_format)


def to(x: Tensor, *args, **kwargs) -> Tensor:
    """This tensor with another dtype and/or on another device; ``x`` itself when nothing
    changes (unless ``copy=True``).

    Accepts ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)`` and the
    keywords ``dtype=``, ``device=``, ``copy=``, ``non_blocking=``, ``memory_format=``.

    ``non_blocking=True``: a copy between pinned host memory (``pin_memory()``) and a CUDA
    device is queued on the current stream and ``to`` returns at once, as in PyTorch; a copy to
    the CPU then lands in a new pinned tensor, to be read after synchronizing (the stream, or
    ``tg.cuda.synchronize()``). Other copies are complete when ``to`` returns, which is what
    the hint allows (Note [pinned memory] in runtime/pinned.py).

    ``memory_format`` is the copy's layout: by default (``preserve_format``) a
    non-overlapping, dense ``x`` keeps its strides and any other ``x`` gets dense strides in
    its dimension order; ``contiguous_format`` is row-major; ``channels_last`` (4-D) and
    ``channels_last_3d`` (5-D) order the channels innermost. As in PyTorch, ``x`` itself is
    returned when nothing changes and the requested format is the one its strides suggest.
    """
    dtype, device, non_blocking, copy, memory_format = _to_args(args, dict(kwargs))
    dtype = dtype or x.dtype
    device = device or x.device
    if dtype is x.dtype and device is x.device and not copy and (
            memory_format is None or memory_format is dtypes.preserve_format or
            suggest_memory_format(tuple(x.shape), x.stride()) is memory_format):
        return x
    strides = target_strides(x, memory_format)
    if x.dtype.is_complex and not dtype.is_complex and dtype is not dtypes.bool:
        with _discarding_imaginary():
            return apply(ToCopyBackward0, (x,), dtype, device, x.dtype, strides,
                         non_blocking and device is not x.device)
    if non_blocking and device is not x.device:
        return apply(ToCopyBackward0, (x,), dtype, device, x.dtype, strides, True)
    return apply(ToCopyBackward0, (x,), dtype, device, x.dtype, strides)


class _discarding_imaginary(warnings.catch_warnings):
    """Around a complex -> real cast (bool excepted: nothing is discarded): PyTorch's
    UserWarning, in place of NumPy's ComplexWarning from the CPU backend's cast (the GPU's
    says nothing). PyTorch warns once a process; Python's filter, once a calling line."""

    def __enter__(self):
        out = super().__enter__()
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return out

    def __exit__(self, *exc):
        super().__exit__(*exc)
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=3)


def cuda(x: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    """A copy of this tensor in CUDA memory (``x`` itself if already there).
    ``non_blocking`` and ``memory_format`` as in ``to``."""
    check_memory_format("cuda", memory_format, None)
    return to(x, resolve_device("cuda" if device is None else
                                device if not isinstance(device, numbers.Integral)
                                else Device("cuda", device)), memory_format=memory_format,
              non_blocking=non_blocking)


def pin_memory(x: Tensor, device=None) -> Tensor:
    """Copies the tensor to pinned (page-locked) host memory, if it's not already pinned:
    copies from it to a CUDA device with ``non_blocking=True`` then run asynchronously.
    Only CPU tensors can be pinned, and only where a CUDA device is available."""
    if x._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{x.type()}' only dense CPU tensors can be pinned")
    if is_pinned(x):
        return x
    from ...runtime import pinned
    pinned.host_allocator()  # (raises PyTorch's error where there is no CUDA device)
    return apply(PinMemoryBackward0, (x,))


def is_pinned(x: Tensor, device=None) -> builtins.bool:
    """Whether the tensor is in pinned host memory (``pin_memory()``)."""
    from ...runtime import pinned
    return x._device.type == "cpu" and pinned.is_pinned(x._data)


def cpu(x: Tensor, memory_format=None) -> Tensor:
    """A copy of this tensor in CPU memory (``x`` itself if already there, in the layout
    asked). ``memory_format`` as in ``to``: ``channels_last`` lays a 4-d copy out so."""
    if memory_format is not None and memory_format is not dtypes.preserve_format:
        check_memory_format("cpu", memory_format, None)
        return to(x, Device("cpu"), memory_format=memory_format)
    if x._device.type == "cpu":
        return x  # the common case, without parsing to()'s overloads
    return to(x, Device("cpu"))


def type_as(x: Tensor, other: Tensor) -> Tensor:
    return to(x, tensor_arg(other, "type_as", "other").dtype)


# -- the legacy typed-tensor classes (torch.FloatTensor, ...) ---------------------------------

class _LegacyTensorType(builtins.type):
    """``torch.FloatTensor`` and its kin: calling one is the legacy constructor of its dtype
    (sizes, or one sequence of values), and ``isinstance(t, torch.FloatTensor)`` asks whether
    ``t`` is a float32 tensor on that device type."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype \
            and obj.device.type == cls.device_type

    def __call__(cls, *args, device=None):
        from .creation import legacy_new
        return legacy_new(args, cls.dtype, device or cls.device_type, cls.__name__)

    def __repr__(cls) -> str:
        return f"<class '{cls.__qualname__}'>"


_LEGACY_DTYPES = {
    "FloatTensor": dtypes.float32, "DoubleTensor": dtypes.float64, "HalfTensor": dtypes.float16,
    "BFloat16Tensor": dtypes.bfloat16, "ByteTensor": dtypes.uint8, "CharTensor": dtypes.int8,
    "ShortTensor": dtypes.int16, "IntTensor": dtypes.int32, "LongTensor": dtypes.int64,
    "BoolTensor": dtypes.bool,
}


def legacy_tensor_types(device_type: str) -> dict:
    """The typed-tensor classes of ``device_type`` by name (``tg.FloatTensor``,
    ``tg.cuda.FloatTensor``)."""
    prefix = "tritongrad." if device_type == "cpu" else "tritongrad.cuda."
    return {name: _LegacyTensorType(name, (), {"dtype": dt, "device_type": device_type,
                                               "__qualname__": prefix + name,
                                               "__module__": prefix.rstrip(".")})
            for name, dt in _LEGACY_DTYPES.items()}


# every dtype's type name: PyTorch's C++ name + "Tensor" ("FloatTensor", "ComplexFloatTensor",
# "Float8_e4m3fnTensor"), the names type(str) reads back
_TYPE_NAMES = {getattr(dtypes, n): cpp + "Tensor" for n, cpp in dtypes.CPP_NAMES.items()}
_TYPES_BY_NAME = {name: dt for dt, name in _TYPE_NAMES.items()}


_TYPE_ASYNC = ("This overload of type is deprecated:\n\ttype(object dtype = None, bool async = "
               "False, *, torch.memory_format memory_format = None)\nConsider using one of the "
               "following signatures instead:\n\ttype(object dtype = None, bool non_blocking = "
               "False, *, torch.memory_format memory_format = None)")


def type(x: Tensor, dtype=None, non_blocking: bool = False, *, memory_format=None,  # noqa: A001
         **kwargs):
    """With no ``dtype``, the tensor's type name (``"tritongrad.FloatTensor"``,
    ``"tritongrad.ComplexFloatTensor"``, or ``"tritongrad.cuda.FloatTensor"``); else ``x``
    converted to ``dtype``: a dtype, a typed-tensor class (``tg.LongTensor``) or its name
    (``"torch.LongTensor"`` is read as ``"tritongrad.LongTensor"``). ``async`` (a Python
    keyword: ``**{"async": True}``) is the deprecated name of ``non_blocking``, as
    PyTorch's."""
    if kwargs:  # (only async: any other keyword is PyTorch's TypeError, not ignored)
        bad = [k for k in kwargs if k != "async"]
        if bad:
            raise TypeError(f"type() got an unexpected keyword argument '{bad[0]}'")
        warnings.warn(_TYPE_ASYNC, UserWarning, stacklevel=2)
    if dtype is None:
        kind = x.device.type
        prefix = "tritongrad." if kind == "cpu" else f"tritongrad.{kind}."
        return prefix + _TYPE_NAMES.get(x.dtype, x.dtype.name)
    device = None
    if isinstance(dtype, str):
        parts = dtype.split(".")
        if parts[-1] not in _TYPES_BY_NAME or parts[0] not in ("torch", "tritongrad"):
            raise ValueError(f"invalid type: {dtype!r}")
        device = "cuda" if "cuda" in parts[1:-1] else "cpu"
        dtype = _TYPES_BY_NAME[parts[-1]]
    elif isinstance(dtype, _LegacyTensorType):
        dtype, device = dtype.dtype, dtype.device_type
    elif not isinstance(dtype, dtypes.dtype):  # (to() would read an int as a device)
        if isinstance(dtype, builtins.type):  # float, np.float32...: PyTorch's words
            raise ValueError(f"invalid type: '{dtype.__name__}'")
        raise TypeError("dtype must be a type, str, or dtype object")
    kw = {} if memory_format is None else {"memory_format": memory_format}  # (to() checks it)
    return to(x, dtype, **kw) if device is None else to(x, device, dtype, **kw)


def _caster(dt):
    """``x.float()`` and its kin: ``x.to(dt, memory_format=memory_format)``."""
    def cast(x: Tensor, *, memory_format=None) -> Tensor:
        return to(x, dt, memory_format=memory_format)
    cast.__name__ = cast.__qualname__ = {dtypes.float32: "float", dtypes.float64: "double",
                                         dtypes.float16: "half", dtypes.int64: "long",
                                         dtypes.int32: "int", dtypes.uint8: "byte",
                                         dtypes.int8: "char", dtypes.int16: "short",
                                         dtypes.complex64: "cfloat",
                                         dtypes.complex128: "cdouble"}.get(dt, dt.name)
    cast.__doc__ = f"``self.to({dt}, memory_format=memory_format)``."
    return cast


float = _caster(dtypes.float32)  # noqa: A001
double = _caster(dtypes.float64)
half = _caster(dtypes.float16)
bfloat16 = _caster(dtypes.bfloat16)
long = _caster(dtypes.int64)
int = _caster(dtypes.int32)  # noqa: A001
bool = _caster(dtypes.bool)  # noqa: A001
byte = _caster(dtypes.uint8)
char = _caster(dtypes.int8)
short = _caster(dtypes.int16)
cfloat = _caster(dtypes.complex64)
cdouble = _caster(dtypes.complex128)


def chalf(x: Tensor, memory_format=None) -> Tensor:
    """PyTorch's cast to complex32, a dtype tritongrad does not have: refused."""
    raise TypeError("chalf(): tritongrad has no complex32 (ComplexHalf) dtype; use cfloat() "
                    "(complex64) instead")


class CloneBackward0(Primitive):
    __slots__ = ()
    op_name = "clone"
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, x, strides=None):
        from ..tensor import array_meta
        device, dtype = array_meta(x)[:2]
        if strides is None:
            return k.astype(x, dtype)  # row-major
        return _strided_copy(k, x, dtype, device, strides)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return g


def clone(input: Tensor, *, memory_format=None) -> Tensor:  # noqa: A002 - PyTorch's name
    """A copy of this tensor (recorded: the gradient passes through) in ``memory_format``: by
    default (``preserve_format``) a non-overlapping, dense ``input`` keeps its strides and
    any other ``input`` gets dense strides in its dimension order; ``contiguous_format`` is
    row-major; channels-last formats as in ``to``.

    Example:
        >>> x = tg.ones(2, 3).t()
        >>> tg.clone(x).stride(), x.clone(memory_format=tg.contiguous_format).stride()
        ((1, 3), (2, 1))
    """
    check_memory_format("clone", memory_format, None)
    return apply(CloneBackward0, (input,), target_strides(input, memory_format))


def contiguous(x: Tensor, memory_format=None) -> Tensor:
    """This tensor if it is contiguous in ``memory_format`` (default ``contiguous_format``:
    row-major), else a copy laid out so (PyTorch refuses ``preserve_format`` here)."""
    if memory_format is None or memory_format is dtypes.contiguous_format:
        return x if x.is_contiguous() else clone(x, memory_format=dtypes.contiguous_format)
    check_memory_format("contiguous", memory_format, None)
    if memory_format is dtypes.preserve_format:
        if x.is_contiguous():  # (PyTorch's first check: nothing to lay out)
            return x
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if x.is_contiguous(memory_format=memory_format):
        return x
    return clone(x, memory_format=memory_format)


class CopyBackwards(Primitive):
    """``dst.copy_(src)``: the old values of dst get no gradient; src gets it (summed back
    over broadcast dimensions, cast back to its dtype)."""

    __slots__ = ()
    op_name = "copy_"
    broadcasts = True
    writes_out = True

    def name(self) -> str:
        return "torch::autograd::CopyBackwards"  # (PyTorch's C++ node's name)

    @staticmethod
    def forward(ctx, k, dst, src, src_dtype, out):
        ctx.src_dtype = src_dtype
        k.copy_(out, src)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        dt = ctx.src_dtype
        # dst's old values are overwritten: their gradient is zero (not None: a tensor that
        # flowed only into a copy_'s destination still takes part, as in PyTorch)
        return zeros(k, g.shape, g), (g if meta(g)[1] is dt else k.astype(g, dt))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, src_dtype):
        """src's tangent (cast and broadcast to dst by dispatch); dst's old one is gone."""
        t = tangents[1]
        return zeros(k, out.shape, out) if t is None else t


def copy_(self: Tensor, other, non_blocking: bool = False) -> Tensor:
    """Copies ``other`` (the source: broadcast, cast, moved; PyTorch's binding names it
    ``other``, its documentation ``src``) into this tensor in place and returns it.
    ``non_blocking=True`` as in ``to``: a copy from pinned host memory to a CUDA tensor is
    queued on the current stream and this returns at once."""
    src = other
    if not isinstance(src, Tensor):
        if isinstance(src, numbers.Number):
            # PyTorch wraps the number as a tensor and casts it: not range-checked, an int
            # wraps (zeros(2, dtype=uint8).copy_(300) holds 44); see creation.py's note
            from .creation import scalar_tensor
            src = scalar_tensor(src, self.dtype, self.device)
        else:
            raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not "
                            f"{src.__class__.__name__}")
    from .elementwise import broadcast_shapes
    shape = broadcast_shapes(self.shape, src.shape)
    if shape != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    src_dtype = src.dtype
    if src._device is not self._device:
        src = to(src, self._device, non_blocking=non_blocking)
    if src_dtype.is_complex and not self.dtype.is_complex and self.dtype is not dtypes.bool:
        with _discarding_imaginary():
            return apply_inplace(CopyBackwards, self, (src,), src_dtype)
    return apply_inplace(CopyBackwards, self, (src,), src_dtype)


# -- the table ---------------------------------------------------------------------------------

OPS = (OpInfo("clone", clone, grad="g"),) + tuple(
    OpInfo(n, globals()[n], function=False, grad="g, cast back") for n in (
        "to", "cuda", "cpu", "contiguous", "copy_", "type", "type_as", "float", "double", "half",
        "bfloat16", "long", "int", "bool", "byte", "char", "short"))
# (forward AD: tritongrad has none through complex tensors, Note [Complex autograd])
OPS += tuple(OpInfo(n, globals()[n], function=False, grad="real part of g", jvp=False)
             for n in ("cfloat", "cdouble"))
OPS += (OpInfo("chalf", chalf, function=False, grad="none"),)
OPS += (OpInfo("pin_memory", pin_memory, function=False, grad="g", node=PinMemoryBackward0),
        OpInfo("is_pinned", is_pinned, function=False, grad="none"))
OPS = with_jvp(OPS)  # every primitive here has a jvp rule
