"""Quantized tensors: the dtypes ``qint8``, ``quint8``, ``qint32``, ``quint4x2``, the
``qscheme`` objects, ``quantize_per_tensor`` / ``quantize_per_channel`` /
``quantize_per_tensor_dynamic`` / ``dequantize`` and the ``QuantizedTensor`` they make.

Note [Quantized tensor layout]
  A ``QuantizedTensor`` is not a Tensor subclass: it holds the integer values (its
  ``int_repr``, a plain ``int8``, ``uint8`` or ``int32`` Tensor; quint4x2 values are kept one
  per byte and packed two per byte only by ``int_repr()``, as PyTorch shows them) and the
  quantization parameters. Its value is ``(int_repr - zero_point) * scale``. The ops PyTorch
  runs on quantized tensors directly (``relu``, ``flatten``, ``reshape``, ``max_pool2d``,
  ``cat``, indexing, ...) are its methods and reach it from ``tg.*`` / ``F.*`` through
  ``__torch_function__``; everything else is a float op on ``dequantize()`` (Note [Quantized
  arithmetic] in ao/nn/quantized). Quantized tensors carry no autograd history.

Note [Quantization rounding]
  The arithmetic is PyTorch's (FBGEMM's) CPU kernels', bit for bit, computed on the host:
  with ``inv = float32(1 / float32(scale))``, ``q = clamp(nearbyint(x * inv + zero_point))``,
  the multiply-add one fused float32 operation (FMA) for qint8 and quint8 per tensor, two
  float32 roundings otherwise (qint32, quint4x2, per channel). ``nearbyint`` rounds half to
  even. The difference shows where ``x * inv`` lies within a rounding error of a half. Dequantizing
  per tensor is ``float32(scale) * float32(q - zero_point)``; per channel (float64 scales)
  ``float32((q - zero_point) * scale)`` in float64; with float qparams all in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tritongrad as tg
from tritongrad.autograd import overrides as _overrides
from tritongrad.autograd.tensor import Tensor
from tritongrad.runtime import dtype as _dt

__all__ = ["qint8", "quint8", "qint32", "quint4x2", "qscheme", "per_tensor_affine",
           "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric",
           "per_channel_affine_float_qparams", "QuantizedTensor", "quantize_per_tensor",
           "quantize_per_channel", "quantize_per_tensor_dynamic", "dequantize",
           "is_quantized", "QUANTIZED_DTYPES", "int_repr", "q_per_channel_axis",
           "q_per_channel_scales", "q_per_channel_zero_points", "q_scale", "q_zero_point"]

class _QuantizedDtype(_dt.dtype):
    """A quantized element type: runtime/dtype.py's ``dtype`` (its constructor takes the
    storage NumPy type, a promotion category and rank), pickled and deep-copied as the
    singleton of its name here (``dtype``'s own lookup knows only the plain types)."""

    __slots__ = ()

    def __reduce__(self):
        return (_quantized_dtype_named, (self.name,))


def _quantized_dtype_named(name: str) -> _QuantizedDtype:
    return globals()[name]


# They promote with nothing: a quantized tensor is never an operand of a promoting op (it is
# dequantized first).
qint8 = _QuantizedDtype("qint8", np.int8, _dt._INT, 1)
quint8 = _QuantizedDtype("quint8", np.uint8, _dt._INT, 1, signed=False)
qint32 = _QuantizedDtype("qint32", np.int32, _dt._INT, 3)
quint4x2 = _QuantizedDtype("quint4x2", np.uint8, _dt._INT, 1, signed=False)
QUANTIZED_DTYPES = (qint8, quint8, qint32, quint4x2)
# each dtype's storage dtype (int_repr's) and full range
_STORAGE = {qint8: _dt.int8, quint8: _dt.uint8, qint32: _dt.int32, quint4x2: _dt.uint8}
_RANGE = {qint8: (-128, 127), quint8: (0, 255), qint32: (-2 ** 31, 2 ** 31 - 1),
          quint4x2: (0, 15)}


class qscheme(_dt._Named):
    """How a quantized tensor maps its integers to real values (PyTorch's ``torch.qscheme``):
    ``per_tensor_affine``, ``per_channel_affine``, ``per_tensor_symmetric``,
    ``per_channel_symmetric`` or ``per_channel_affine_float_qparams``."""

    __slots__ = ()

    def __reduce__(self):  # singletons: pickled by their module-level name
        return self.name


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
_PER_CHANNEL = (per_channel_affine, per_channel_affine_float_qparams)

_f32 = np.float32


def _check_qdtype(op: str, dtype) -> None:
    if dtype not in QUANTIZED_DTYPES:
        name = str(dtype).rsplit(".", 1)[-1]
        raise RuntimeError(f"{op}: ScalarType {name} is not supported in new_qtensor (expected "
                           f"one of qint8, quint8, qint32, quint4x2).")


def _float_input(op: str, x) -> np.ndarray:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.dtype is not _dt.float32:
        name = {"float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                "bfloat16": "BFloat16"}.get(x.dtype.name, x.dtype.name)
        raise RuntimeError(f"Quantize only works on Float Tensor, got {name}")
    return np.asarray(x.detach().cpu().numpy(), dtype=_f32)


def _quantize_np(a: np.ndarray, scale, zero_point, dtype, fused: bool = False,
                 nan_to: int = 0) -> np.ndarray:
    """Note [Quantization rounding]: the integers of float32 ``a`` (``scale``/``zero_point``
    numbers or arrays broadcasting against it); ``fused``: the multiply-add is one float32
    fused operation; ``nan_to``: what a NaN becomes (it differs between PyTorch's kernels)."""
    lo, hi = _RANGE[dtype]
    scale = np.asarray(scale, dtype=_f32)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv = (_f32(1.0) / scale).astype(_f32)
        if fused:
            # (a * inv is exact in float64, so the sum is rounded once more: to float32)
            t = (a.astype(np.float64) * inv.astype(np.float64)
                 + np.asarray(zero_point, dtype=np.float64)).astype(_f32)
        else:
            t = ((a * inv).astype(_f32) + np.asarray(zero_point, dtype=_f32)).astype(_f32)
        q = np.rint(t).astype(np.float64)  # (float64: qint32's bounds are exact there)
    q = np.nan_to_num(q, nan=nan_to, posinf=hi, neginf=lo)
    return np.clip(q, lo, hi).astype(_STORAGE[dtype].np)


class _NoQuantizedKernel(NotImplementedError, TypeError):
    """An op quantized tensors do not support: PyTorch's NotImplementedError, and the
    TypeError a failed ``__torch_function__`` dispatch raises (which it replaces)."""


class QuantizedTensor:
    """A quantized tensor: integers and the parameters mapping them to real values
    (Note [Quantized tensor layout]). Made by :func:`quantize_per_tensor`,
    :func:`quantize_per_channel`, :func:`quantize_per_tensor_dynamic` and the quantized modules;
    not constructed directly.

    Example:
        >>> q = tg.quantize_per_tensor(tg.tensor([-1.0, 0.0, 1.0, 2.0]), 0.1, 10, tg.quint8)
        >>> q.int_repr().tolist(), q.q_scale(), q.q_zero_point()
        ([0, 10, 20, 30], 0.1, 10)
    """

    is_quantized = True
    requires_grad = False
    grad_fn = None
    is_sparse = False
    layout = _dt.strided

    def __init__(self, int_repr: Tensor, dtype, qscheme_: qscheme, scale=None, zero_point=None,
                 axis: int | None = None):
        self._int = int_repr
        self._dtype = dtype
        self._qscheme = qscheme_
        if qscheme_ in _PER_CHANNEL:
            self._scales, self._zero_points, self._axis = scale, zero_point, axis
        else:
            self._scale, self._zero_point = float(scale), int(zero_point)
        if not _overrides.active:  # (Note [Overrides installed on first use])
            _overrides.note_instance(QuantizedTensor)

    # -- what PyTorch's quantized tensors answer --------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self) -> tg.Size:
        return self._int.shape

    @property
    def device(self):
        return self._int.device

    @property
    def ndim(self) -> int:
        return self._int.ndim

    def size(self, dim: int | None = None):
        return self._int.size() if dim is None else self._int.size(dim)

    def dim(self) -> int:
        return self._int.ndim

    def numel(self) -> int:
        return self._int.numel()

    def __len__(self) -> int:
        return len(self._int)

    def element_size(self) -> int:
        return self._dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        return self._int.is_contiguous()

    def qscheme(self) -> qscheme:
        """The quantization scheme (``per_tensor_affine``, ``per_channel_affine`` or
        ``per_channel_affine_float_qparams``)."""
        return self._qscheme

    def _per_tensor_only(self) -> None:
        if self._qscheme in _PER_CHANNEL:
            raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, "
                               "but got false.")

    def _per_channel_only(self) -> None:
        if self._qscheme not in _PER_CHANNEL:
            raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || "
                               "quantizer->qscheme() == kPerChannelAffineFloatQParams to be "
                               "true, but got false.")

    def q_scale(self) -> float:
        """The scale of a per-tensor quantized tensor (a Python float)."""
        self._per_tensor_only()
        return self._scale

    def q_zero_point(self) -> int:
        """The zero point of a per-tensor quantized tensor (a Python int)."""
        self._per_tensor_only()
        return self._zero_point

    def q_per_channel_scales(self) -> Tensor:
        """The scales of a per-channel quantized tensor (float64; float32 for float qparams)."""
        self._per_channel_only()
        return self._scales.clone()

    def q_per_channel_zero_points(self) -> Tensor:
        """The zero points of a per-channel quantized tensor (int64; float32 for float
        qparams)."""
        self._per_channel_only()
        return self._zero_points.clone()

    def q_per_channel_axis(self) -> int:
        """The dimension the per-channel parameters run along."""
        self._per_channel_only()
        return self._axis

    def int_repr(self) -> Tensor:
        """The integers, as a new ``uint8`` (quint8, quint4x2), ``int8`` (qint8) or ``int32``
        (qint32) Tensor. quint4x2 packs two values per byte, the first in the low nibble."""
        if self._dtype is quint4x2:
            a = self._int.cpu().numpy().reshape(-1).astype(np.uint8)
            if a.size % 2:
                a = np.concatenate([a, np.zeros(1, np.uint8)])
            packed = (a[0::2] | (a[1::2] << 4)).astype(np.uint8)
            return tg.as_tensor(packed, device=self.device)
        return self._int.clone()

    def dequantize(self) -> Tensor:
        """The real values, a float32 Tensor (Note [Quantization rounding])."""
        q = self._int.cpu().numpy()
        if self._qscheme is per_channel_affine:
            shape = self._channel_shape()
            s = self._scales.cpu().numpy().astype(np.float64).reshape(shape)
            z = self._zero_points.cpu().numpy().astype(np.float64).reshape(shape)
            out = ((q.astype(np.float64) - z) * s).astype(_f32)
        elif self._qscheme is per_channel_affine_float_qparams:
            shape = self._channel_shape()
            s = self._scales.cpu().numpy().astype(_f32).reshape(shape)
            z = self._zero_points.cpu().numpy().astype(_f32).reshape(shape)
            out = ((q.astype(_f32) - z) * s).astype(_f32)
        else:
            out = _f32(self._scale) * (q.astype(np.int64) - self._zero_point).astype(_f32)
        return tg.as_tensor(np.ascontiguousarray(out, dtype=_f32), device=self.device)

    def _channel_shape(self) -> tuple:
        return tuple(n if d == self._axis else 1 for d, n in enumerate(self.shape))

    # -- ops PyTorch runs on the integers ---------------------------------------------------
    def _like(self, int_repr: Tensor, axis: int | None = None) -> QuantizedTensor:
        """A quantized tensor of ``int_repr`` with this one's parameters."""
        if self._qscheme in _PER_CHANNEL:
            return QuantizedTensor(int_repr, self._dtype, self._qscheme, self._scales,
                                   self._zero_points, self._axis if axis is None else axis)
        return QuantizedTensor(int_repr, self._dtype, self._qscheme, self._scale,
                               self._zero_point)

    def _shape_op(self, op: str, out: Tensor) -> QuantizedTensor:
        if self._qscheme in _PER_CHANNEL and tuple(out.shape) != tuple(self.shape):
            raise RuntimeError(f"{op}: not supported for per-channel quantized tensors whose "
                               f"shape changes ({tuple(self.shape)} -> {tuple(out.shape)})")
        return self._like(out)

    def clone(self, *, memory_format=None) -> QuantizedTensor:
        return self._like(self._int.clone())

    def detach(self) -> QuantizedTensor:
        return self

    def contiguous(self, memory_format=None) -> QuantizedTensor:
        return self._like(self._int.contiguous())

    def cpu(self) -> QuantizedTensor:
        return self.to("cpu")

    def cuda(self, device=None) -> QuantizedTensor:
        return self.to(self._int.cuda(device).device)

    def to(self, *args, **kwargs) -> QuantizedTensor:
        """Moves the integers (and per-channel parameters) to another device; a change of
        dtype is refused (dequantize first)."""
        out = self._int.to(*args, **kwargs)
        if out.dtype is not self._int.dtype:
            raise RuntimeError(f"to: cannot convert a quantized tensor ({self._dtype}) to "
                               f"another dtype; call dequantize() first")
        if self._qscheme in _PER_CHANNEL:
            return QuantizedTensor(out, self._dtype, self._qscheme,
                                   self._scales.to(out.device),
                                   self._zero_points.to(out.device), self._axis)
        return self._like(out)

    def reshape(self, *shape) -> QuantizedTensor:
        return self._shape_op("reshape", self._int.reshape(*shape))

    def view(self, *shape) -> QuantizedTensor:
        return self._shape_op("view", self._int.view(*shape))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> QuantizedTensor:
        return self._shape_op("flatten", self._int.flatten(start_dim, end_dim))

    def squeeze(self, *dim) -> QuantizedTensor:
        return self._shape_op("squeeze", self._int.squeeze(*dim))

    def unsqueeze(self, dim: int) -> QuantizedTensor:
        return self._shape_op("unsqueeze", self._int.unsqueeze(dim))

    def permute(self, *dims) -> QuantizedTensor:
        if self._qscheme in _PER_CHANNEL:
            dims_ = dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
            axis = [d % self.ndim for d in dims_].index(self._axis)
            return self._like(self._int.permute(*dims), axis)
        return self._like(self._int.permute(*dims))

    def transpose(self, dim0: int, dim1: int) -> QuantizedTensor:
        dims = list(range(self.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return self.permute(*dims)

    def t(self) -> QuantizedTensor:
        """The transpose of a tensor of at most 2 dims (``Tensor.t``)."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def __getitem__(self, index) -> QuantizedTensor:
        return self._shape_op("__getitem__", self._int[index])

    def relu(self) -> QuantizedTensor:
        """``max(x, 0)``, computed on the integers: ``max(q, zero_point)``."""
        self._per_tensor_only()
        return self._like(self._int.clamp(min=self._zero_point))

    def equal(self, other) -> bool:
        return equal(self, other)

    def __eq__(self, other):  # (PyTorch compares quantized tensors only through equal())
        return NotImplemented if not isinstance(other, QuantizedTensor) else equal(self, other)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        from tritongrad.autograd.printing import _format_array, _with_suffixes
        body = "tensor(" + _format_array(self.dequantize().numpy(), len("tensor("))
        sfx = []
        if self.device.type != "cpu":
            sfx.append(f"device='{self.device}'")
        sfx += [f"size={tuple(self.shape)}", f"dtype={self._dtype}",
                f"quantization_scheme={self._qscheme}"]
        if self._qscheme in _PER_CHANNEL:
            sfx += [f"scale={self._scales!r}", f"zero_point={self._zero_points!r}",
                    f"axis={self._axis}"]
        else:
            sfx += [f"scale={self._scale!r}", f"zero_point={self._zero_point}"]
        return _with_suffixes(body, sfx, len("tensor("), False)

    # -- dispatch from tg.* / F.* -----------------------------------------------------------
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        handler = _HANDLERS.get(name)
        if handler is None:
            if all(issubclass(t, QuantizedTensor) for t in types):
                # (PyTorch's error for an op without a quantized kernel)
                raise _NoQuantizedKernel(
                    f"Could not run 'aten::{name}' with arguments from the 'QuantizedCPU' "
                    f"backend: quantized tensors support {', '.join(sorted(_HANDLERS))}; "
                    f"dequantize() first")
            return NotImplemented
        return handler(*args, **kwargs)


def is_quantized(obj: Any) -> bool:
    """True if ``obj`` is a quantized tensor."""
    return isinstance(obj, QuantizedTensor)


def equal(a: QuantizedTensor, b: Any) -> bool:
    """``torch.equal`` on quantized tensors: the same dtype, scheme, parameters and integers."""
    if not isinstance(b, QuantizedTensor) or a._dtype is not b._dtype \
            or a._qscheme is not b._qscheme or tuple(a.shape) != tuple(b.shape):
        return False
    if a._qscheme in _PER_CHANNEL:
        if a._axis != b._axis or not bool(tg.equal(a._scales, b._scales)) \
                or not bool(tg.equal(a._zero_points, b._zero_points)):
            return False
    elif (a._scale, a._zero_point) != (b._scale, b._zero_point):
        return False
    return bool(tg.equal(a._int, b._int))


def _relu(input, inplace: bool = False):
    out = input.relu()
    if inplace:
        input._int = out._int
        return input
    return out


def _max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    # max commutes with the increasing map q -> (q - zp) * scale: pool the integers (padding
    # never wins: PyTorch pads max pooling with -inf)
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices is not supported for quantized "
                                  "tensors")
    ints = input._int.to(_dt.float32 if input._dtype is not qint32 else _dt.float64)
    out = tg.nn.functional.max_pool2d(ints, kernel_size, stride, padding, dilation, ceil_mode)
    return input._like(out.to(input._int.dtype))


def _cat(tensors, dim: int = 0, *, out=None):
    # PyTorch's quantized cat requantizes to the first input's parameters
    if out is not None:
        raise NotImplementedError("cat: out= is not supported for quantized tensors")
    first = tensors[0]
    first._per_tensor_only()
    ints = []
    for t in tensors:
        if not isinstance(t, QuantizedTensor) or t._dtype is not first._dtype:
            raise RuntimeError("cat: expected all quantized tensors of the same dtype")
        same = t._qscheme is first._qscheme and (t._scale, t._zero_point) == (
            first._scale, first._zero_point)
        ints.append(t._int if same else quantize_per_tensor(
            t.dequantize(), first._scale, first._zero_point, first._dtype)._int)
    return first._like(tg.cat(ints, dim))


def _handler_table() -> dict:
    def method(name):
        return lambda x, *a, **k: getattr(x, name)(*a, **k)
    table = {n: method(n) for n in ("flatten", "reshape", "squeeze", "unsqueeze", "permute",
                                    "transpose", "clone", "detach", "contiguous",
                                    "dequantize", "int_repr", "q_scale", "q_zero_point",
                                    "q_per_channel_scales", "q_per_channel_zero_points",
                                    "q_per_channel_axis", "numel", "__getitem__", "view",
                                    "size", "dim")}
    table.update(relu=_relu, relu_=lambda x: _relu(x, True), max_pool2d=_max_pool2d,
                 cat=_cat, concat=_cat, concatenate=_cat, equal=equal,
                 is_quantized=is_quantized, is_tensor=lambda x: True, dropout=_dropout)
    for name in ("avg_pool2d", "adaptive_avg_pool2d", "hardtanh", "relu6", "clamp"):
        table[name] = _functional(name)
    return table


def _functional(name: str):
    def run(*args, **kwargs):  # (ao/nn/quantized/functional.py imports this module)
        from .nn.quantized import functional
        return getattr(functional, name)(*args, **kwargs)
    return run


def _dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    if training and p > 0:
        raise RuntimeError("dropout: not supported on quantized tensors in training mode "
                           "(quantized models run in eval mode)")
    return input


_HANDLERS = _handler_table()


# -- quantizing ---------------------------------------------------------------------------------

def _scalar(op: str, v, name: str, kind):
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise RuntimeError(f"{op}: expected a one-element {name} tensor, got {v.numel()} "
                               f"elements")
        v = v.detach().reshape(()).item()
    return kind(v)


def quantize_per_tensor(input: Tensor | Sequence[Tensor], scale: float | Tensor,
                        zero_point: int | Tensor, dtype: _QuantizedDtype
                        ) -> QuantizedTensor | tuple[QuantizedTensor, ...]:
    """Converts a float tensor to a quantized tensor with given scale and zero point:
    ``clamp(round(input / scale + zero_point), qmin, qmax)``, rounding half to even (after the
    shift, as PyTorch's kernels: Note [Quantization rounding]).

    Args:
        input (Tensor or list of Tensors): float tensor(s) to quantize (float32).
        scale (float or Tensor): scale to apply in quantization formula.
        zero_point (int or Tensor): offset in integer value that maps to float zero.
        dtype (tritongrad.dtype): the desired data type of returned tensor; one of
            ``tritongrad.quint8``, ``tritongrad.qint8``, ``tritongrad.qint32``,
            ``tritongrad.quint4x2``.

    Returns:
        QuantizedTensor (a tuple of them for a list input): the newly quantized tensor.

    Example:
        >>> q = tg.quantize_per_tensor(tg.tensor([-1.0, 0.0, 1.0, 2.0]), 0.1, 10, tg.quint8)
        >>> q.int_repr().tolist()
        [0, 10, 20, 30]
    """
    op = "quantize_per_tensor"
    if isinstance(input, (list, tuple)):
        scales = scale if isinstance(scale, Tensor) and scale.numel() > 1 else None
        return tuple(quantize_per_tensor(
            t, scales[i] if scales is not None else scale,
            zero_point[i] if scales is not None else zero_point, dtype)
            for i, t in enumerate(input))
    _check_qdtype(op, dtype)
    a = _float_input(op, input)
    if isinstance(scale, Tensor):  # (the tensor overload reads a float32 scale)
        scale_v = float(_f32(_scalar(op, scale, "scale", float)))
    else:
        scale_v = float(scale)
    zp = _scalar(op, zero_point, "zero_point", int)
    lo, hi = _RANGE[dtype]
    if zp > hi:
        raise RuntimeError(f"quantize_tensor_per_tensor_affine zero_point {zp} is above upper "
                           f"bound.")
    if zp < lo:
        raise RuntimeError(f"quantize_tensor_per_tensor_affine zero_point {zp} is below lower "
                           f"bound.")
    # (NaN: the 8-bit kernel clamps in float and gets the top, qint32's converts to the
    # bottom)
    fused = dtype in (qint8, quint8)
    q = _quantize_np(a, scale_v, zp, dtype, fused=fused, nan_to=hi if fused else lo)
    return QuantizedTensor(tg.as_tensor(q, device=input.device), dtype, per_tensor_affine,
                           scale_v, zp)


def quantize_per_channel(input: Tensor, scales: Tensor, zero_points: Tensor, axis: int,
                         dtype: _QuantizedDtype) -> QuantizedTensor:
    """Converts a float tensor to a per-channel quantized tensor with given scales and zero
    points: each slice along ``axis`` with its own scale and zero point.

    Args:
        input (Tensor): float tensor to quantize (float32).
        scales (Tensor): float 1D tensor of scales to use, size should match
            ``input.size(axis)``.
        zero_points (Tensor): integer 1D tensor of offsets to use, size should match
            ``input.size(axis)`` (float zero points give ``per_channel_affine_float_qparams``).
        axis (int): dimension on which apply per-channel quantization.
        dtype (tritongrad.dtype): the desired data type of returned tensor; one of
            ``tritongrad.quint8``, ``tritongrad.qint8``, ``tritongrad.qint32``.

    Returns:
        QuantizedTensor: A newly quantized tensor.

    Example:
        >>> x = tg.tensor([[-1.0, 0.0], [1.0, 2.0]])
        >>> q = tg.quantize_per_channel(x, tg.tensor([0.1, 0.01]), tg.tensor([10, 0]), 0,
        ...                             tg.quint8)
        >>> q.int_repr().tolist()
        [[0, 10], [100, 200]]
    """
    op = "quantize_per_channel"
    _check_qdtype(op, dtype)
    a = _float_input(op, input)
    for name, t in (("scales", scales), ("zero_points", zero_points)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if t.ndim != 1:
            raise RuntimeError(f"{op}: {name} tensor must be 1-D, got {t.ndim}-D")
    if not -a.ndim <= axis < max(a.ndim, 1):
        # (PyTorch's message; a negative axis, which it refuses too, counts from the end)
        raise RuntimeError(f"{op}: Channel axis out of range in per channel affine "
                           f"quantization. Got: {axis} Expected: [0, {a.ndim})")
    axis = axis % a.ndim
    n = a.shape[axis]
    if scales.numel() != n or zero_points.numel() != n:
        raise RuntimeError(f"{op}: length of scales and zero_points must equal the channel "
                           f"size, expected {n} got {scales.numel()} and "
                           f"{zero_points.numel()}")
    shape = tuple(n if d == axis else 1 for d in range(a.ndim))
    float_zp = zero_points.dtype.is_floating_point
    if float_zp:
        s = scales.detach().cpu().numpy().astype(_f32)
        z = zero_points.detach().cpu().numpy().astype(_f32)
        scheme, s_t, z_t = per_channel_affine_float_qparams, s, z
    else:
        s = scales.detach().cpu().numpy().astype(np.float64)
        z = zero_points.detach().cpu().numpy().astype(np.int64)
        lo, hi = _RANGE[dtype]
        if z.size and (z.min() < lo or z.max() > hi):
            raise RuntimeError(f"{op}: zero_point values must be in [{lo}, {hi}] for {dtype}, "
                               f"got [{z.min()}, {z.max()}]")
        scheme, s_t, z_t = per_channel_affine, s, z
    q = _quantize_np(a, s.reshape(shape), z.reshape(shape), dtype)
    dev = input.device
    return QuantizedTensor(tg.as_tensor(q, device=dev), dtype, scheme,
                           tg.as_tensor(s_t, device=dev), tg.as_tensor(z_t, device=dev), axis)


def _choose_qparams(lo: float, hi: float, qmin: int, qmax: int,
                    preserve_sparsity: bool = False,
                    float32_scale: bool = False) -> tuple[float, int]:
    """PyTorch's C++ ``ChooseQuantizationParams`` (dynamic quantization and the fused
    observer + fake quantize): ``lo``/``hi`` are float32 variables there, the scale a float64
    (made symmetric around 0 when ``preserve_sparsity`` and the range holds both signs), and
    the zero point taken from the end whose rounding error is smaller. ``float32_scale``:
    FBGEMM's copy of it (the fused observer's), whose scale variable is a float32, so that
    the zero point is computed from the rounded scale (-1000..1000 on quint8: 127, not the
    128 of the exact 127.5)."""
    lo, hi = _f32(lo), _f32(hi)
    if lo < 0 < hi and preserve_sparsity:
        sym_min = -((qmax - qmin) // 2 + 1)
        sym_max = (qmax - qmin) // 2
        max_scale = max(abs(float(lo / _f32(sym_min))), abs(float(hi / _f32(sym_max))))
        lo, hi = _f32(max_scale * sym_min), _f32(max_scale * sym_max)
    lo, hi = min(lo, _f32(0)), max(hi, _f32(0))
    scale = (float(hi) - float(lo)) / (qmax - qmin)
    if float32_scale:
        scale = float(_f32(scale))
    with np.errstate(divide="ignore", over="ignore"):
        if float(_f32(scale)) == 0.0 or np.isinf(_f32(1.0) / _f32(scale)):
            scale = 0.1
    small = _f32(6.1e-5)  # (SMALL_SCALE_THRESHOLD: a tiny range is widened to it)
    if scale < small:
        org = _f32(scale)
        scale = float(small)
        if lo == 0:
            hi = _f32(small * _f32(qmax - qmin))
        elif hi == 0:
            lo = _f32(-small * _f32(qmax - qmin))
        else:
            amplifier = _f32(small / org)
            lo, hi = _f32(lo * amplifier), _f32(hi * amplifier)
    lo_f, hi_f = float(lo), float(hi)
    zp_min = qmin - lo_f / scale
    zp_max = qmax - hi_f / scale
    err_min = abs(qmin) - abs(lo_f / scale)
    err_max = abs(qmax) - abs(hi_f / scale)
    initial = zp_min if err_min < err_max else zp_max
    if lo < 0 < hi and preserve_sparsity:
        initial = (qmin + qmax) / 2
    if initial < qmin:
        zp = qmin
    elif initial > qmax:
        zp = qmax
    else:
        zp = int(np.rint(initial))
    return scale, zp


def quantize_per_tensor_dynamic(input: Tensor, dtype: _QuantizedDtype,
                                reduce_range: bool) -> QuantizedTensor:
    """Converts a float tensor to a quantized tensor with scale and zero_point calculated
    dynamically based on the input (its min and max, widened to hold 0).

    Args:
        input (Tensor): float tensor to quantize.
        dtype (tritongrad.dtype): ``tritongrad.quint8`` or ``tritongrad.qint8``.
        reduce_range (bool): whether to reduce the range of quantized data by 1 bit, it's
            required to avoid instruction overflow for some hardwares.

    Example:
        >>> q = tg.quantize_per_tensor_dynamic(tg.tensor([-1.0, 0.0, 3.0]), tg.quint8, False)
        >>> q.q_zero_point()
        64
    """
    op = "quantize_per_tensor_dynamic"
    if dtype not in (quint8, qint8):
        raise RuntimeError(f"{op}: dtype must be tritongrad.quint8 or tritongrad.qint8, got "
                           f"{dtype}")
    a = _float_input(op, input)
    lo, hi = _RANGE[dtype]
    if reduce_range:
        lo, hi = lo // 2, hi // 2
    amin = float(a.min()) if a.size else 0.0
    amax = float(a.max()) if a.size else 0.0
    scale, zp = _choose_qparams(amin, amax, lo, hi)
    return quantize_per_tensor(input, scale, zp, dtype)


def _quantized_method(name: str):
    """``tg.<name>(q)``: the quantized tensor's method, PyTorch's error for another tensor."""
    def fn(input):
        if not isinstance(input, QuantizedTensor):
            raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                      f"'{input.device.type.upper()}' backend: it needs a "
                                      f"quantized tensor")
        return getattr(input, name)()
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}()`` of a quantized tensor ``input``."
    return fn


q_scale, q_zero_point, int_repr = (_quantized_method(n) for n in
                                   ("q_scale", "q_zero_point", "int_repr"))
q_per_channel_axis, q_per_channel_scales, q_per_channel_zero_points = (
    _quantized_method(n) for n in ("q_per_channel_axis", "q_per_channel_scales",
                                   "q_per_channel_zero_points"))


def dequantize(tensor: QuantizedTensor | Tensor | Sequence[QuantizedTensor | Tensor]
               ) -> Tensor | list[Tensor]:
    """Returns an fp32 Tensor by dequantizing a quantized Tensor (a list of them: a list of
    Tensors). Another Tensor is returned as float32, as PyTorch's ``torch.dequantize`` does."""
    if isinstance(tensor, (list, tuple)):
        return [dequantize(t) for t in tensor]
    if isinstance(tensor, QuantizedTensor):
        return tensor.dequantize()
    if isinstance(tensor, Tensor):
        return tensor.dequantize()
    raise TypeError(f"dequantize(): argument 'tensor' must be Tensor, not "
                    f"{type(tensor).__name__}")
