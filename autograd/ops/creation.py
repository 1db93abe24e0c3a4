"""Tensor factories: ``tensor``, ``zeros``, ``randn``, ... and the random generator.

Factories take ``dtype=``, ``device=`` and ``requires_grad=`` as PyTorch's do. Random numbers
come from one NumPy generator (``manual_seed`` reseeds it) and are drawn on the host, then
copied to the device, so a seed gives the same values on the CPU and on CUDA.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...kernels import backend
from ...kernels.numpy import bf16
from ...runtime import dtype as dtypes
from ...runtime.device import device as Device
from ..tensor import Tensor, make

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full",
           "empty_strided", "zeros_like", "ones_like", "empty_like", "full_like", "rand",
           "randn", "randint", "rand_like", "randn_like", "arange", "linspace", "eye",
           "manual_seed", "seed", "initial_seed", "resolve_device", "as_dtype", "host_to"]

_CPU = Device("cpu")


def resolve_device(spec) -> Device:
    """A device with an index: ``None`` is the CPU, ``"cuda"`` the current CUDA device."""
    if spec is None:
        return _CPU
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


def _size(args) -> tuple:
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        args = tuple(args[0])
    try:
        size = tuple(int(s) for s in args)
    except TypeError:
        raise TypeError(f"size must be a sequence of ints, got {args!r}") from None
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    return size


def host_to(arr: np.ndarray, dtype, device: Device) -> Tensor:
    """A tensor holding NumPy array ``arr`` (cast to ``dtype``) on ``device``."""
    if device.type == "cpu":
        if dtype is dtypes.bfloat16:
            return make(bf16.rounded(arr))  # float32 storage on the bfloat16 grid
        if type(arr) is bf16.BF16Array:
            arr = arr.view(np.ndarray)
        return make(np.require(arr, dtype=dtype.np, requirements="C"))  # keeps 0-d as 0-d
    from ...runtime import memory
    if dtype is dtypes.bfloat16:
        host = bf16.from_float32(arr)
    else:
        host = np.require(arr, dtype=dtype.np, requirements="C")
    return make(memory.to_device(host, device, dtype))


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_array(data, dtype=None) -> np.ndarray:
    """``data`` as a host array; Python floats take the default dtype unless ``dtype`` is
    given (then they convert straight to it: float64 data never passes through float32)."""
    if isinstance(data, Tensor):
        return np.asarray(data.detach().cpu())
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        data = _nested_map(data, lambda x: x.item() if isinstance(x, Tensor) else x)
    try:
        arr = np.asarray(data)
    except ValueError:  # NumPy 2 refuses ragged nested sequences
        arr = np.asarray(data, dtype=object)
    if arr.dtype == object:
        raise TypeError(f"tensor(): could not infer dtype of {type(data).__name__} (ragged "
                        f"nested sequences or non-numeric elements)")
    if dtype is not None and arr.dtype.kind in "fc":
        return arr
    if arr.dtype.kind == "f":
        arr = arr.astype(dtypes.get_default_dtype().np if dtypes.get_default_dtype()
                         is not dtypes.bfloat16 else np.float32)
    elif arr.dtype.kind == "c":
        arr = arr.astype(dtypes.get_default_dtype().to_complex().np)
    elif arr.dtype.kind in "iu" and arr.dtype != np.uint8:
        arr = arr.astype(np.int64)
    return arr


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

    Example:
        >>> tg.tensor([[1., -1.], [1., -1.]])
        tensor([[ 1., -1.],
                [ 1., -1.]])
    """
    arr = _infer_array(data, dtype)
    dt = as_dtype(dtype) or (data.dtype if isinstance(data, Tensor) else
                             dtypes.from_numpy_dtype(arr.dtype))
    out = host_to(np.array(arr, copy=True) if isinstance(data, np.ndarray) else arr, dt,
                  resolve_device(device))
    return _finish(out, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a tensor or a CPU NumPy array when it can."""
    dev = None if device is None else resolve_device(device)
    dt = as_dtype(dtype)
    if isinstance(data, Tensor):
        return data.to(device=dev or data.device, dtype=dt or data.dtype)
    if isinstance(data, np.ndarray) and (dev is None or dev.type == "cpu") and (
            dt is None or dt.np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``ndarray`` (writes to either show in both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
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


def zeros(*size, dtype=None, device=None, requires_grad: bool = False, out=None) -> Tensor:
    """A tensor of zeros of shape ``size``."""
    return _factory(_size(size), 0.0 if dtype is None else 0, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones of shape ``size``."""
    return _factory(_size(size), 1.0 if dtype is None else 1, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False,
          memory_format=None) -> Tensor:
    """An uninitialised tensor of shape ``size``."""
    return _factory(_size(size), None, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value`` (its dtype inferred from it)."""
    if dtype is None and isinstance(fill_value, bool):
        dtype = dtypes.bool
    elif dtype is None and isinstance(fill_value, numbers.Integral):
        dtype = dtypes.int64
    return _factory(_size((size,)), fill_value, dtype, device, requires_grad)


def empty_strided(size, stride, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor with explicit strides (``stride=None``: row-major)."""
    size = _size((size,))
    dev = resolve_device(device)
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    k = backend(dev)
    if stride is None:
        return _finish(make(k.empty(size, dt, dev), dt), requires_grad)
    stride = tuple(int(s) for s in stride)
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    buf = k.empty((extent,), dt, dev)
    return _finish(make(k.as_strided(buf, size, stride, 0), dt), requires_grad)


def _like(fn, t: Tensor, dtype, device, requires_grad, **kw) -> Tensor:
    return fn(tuple(t.shape), dtype=dtype or t.dtype, device=device or t.device,
              requires_grad=requires_grad, **kw)


def zeros_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    return _like(ones, input, dtype, device, requires_grad)


def empty_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    return _like(empty, input, dtype, device, requires_grad)


def full_like(input: Tensor, fill_value, dtype=None, device=None,
              requires_grad: bool = False) -> Tensor:
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype,
                device=device or input.device, requires_grad=requires_grad)


# -- random ------------------------------------------------------------------------------------

_rng = np.random.default_rng()
_initial_seed = None


def manual_seed(seed: int):
    """Seeds the random number generator of every device."""
    global _rng, _initial_seed
    _initial_seed = int(seed)
    _rng = np.random.default_rng(_initial_seed)
    return _rng


def seed() -> int:
    """Seeds the generator with a non-deterministic number and returns it."""
    s = int(np.random.SeedSequence().entropy % (1 << 63))
    manual_seed(s)
    return s


def initial_seed() -> int:
    return _initial_seed if _initial_seed is not None else seed()


def _random(draw, size, dtype, device, requires_grad) -> Tensor:
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"random: dtype {dt} is not a floating point type")
    arr = draw(size)
    return _finish(host_to(arr, dt, resolve_device(device)), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad: bool = False, generator=None) -> Tensor:
    """Uniform random numbers in [0, 1)."""
    return _random(lambda s: _rng.random(s), _size(size), dtype, device, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad: bool = False, generator=None) -> Tensor:
    """Standard normal random numbers."""
    return _random(lambda s: _rng.standard_normal(s), _size(size), dtype, device, requires_grad)


def rand_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return rand(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def randn_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return randn(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """Random integers in [low, high)."""
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if low >= high:
        raise RuntimeError(f"randint: expects 'low' to be less than 'high', but got "
                           f"low={low} >= high={high}")
    arr = _rng.integers(low, high, _size((size,)))
    return host_to(arr, as_dtype(dtype) or dtypes.int64, resolve_device(device))


# -- ranges ------------------------------------------------------------------------------------

def arange(start, end=None, step=1, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) in steps of ``step``."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    is_int = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    dt = as_dtype(dtype) or (dtypes.int64 if is_int else dtypes.get_default_dtype())
    n = max(0, math.ceil((end - start) / step))
    if not is_int:
        start, step = float(start), float(step)
    dev = resolve_device(device)
    return _finish(make(backend(dev).arange(start, step, n, dt, dev), dt), requires_grad)


def linspace(start, end, steps: int, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    arr = np.linspace(start, end, int(steps))
    return _finish(host_to(arr, dt, resolve_device(device)), requires_grad)


def eye(n: int, m: int | None = None, dtype=None, device=None,
        requires_grad: bool = False) -> Tensor:
    dt = as_dtype(dtype) or dtypes.get_default_dtype()
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {v}")
    return _finish(host_to(np.eye(n, m), dt, resolve_device(device)), requires_grad)
