"""``arange`` and ``linspace`` values as PyTorch's CPU kernels round them.

Note [PyTorch's ranges]
~~~~~~~~~~~~~~~~~~~~~~~
The exact value of ``linspace(-4, 4, 7)[3]`` is 0, but PyTorch's is -1.19e-7 in float32, and
``hardswish``, ``sign`` or a mask built on it see that. Programs print PyTorch's numbers only if
their grids are PyTorch's to the last bit, so these follow ATen's formulas (RangeFactories), the
rounding of each step included; the formulas were checked against torch 2.13 bit for bit
(tests/test_ranges_torch.py holds values it printed):

- ``linspace``: ``step = (end - start) / (steps - 1)`` in the output's type (float64 for an
  integer output); the first ``steps // 2`` values are ``start + step * i`` and the rest
  ``end - step * (steps - 1 - i)`` (so both ends are exact), each a fused multiply-add in that
  type (float32's emulated exactly through float64, float64's by ``_fma64``); float16 and
  bfloat16 round the product and then the sum; integer outputs truncate; complex ones step
  their two parts alike; one step is the start.
- ``arange`` with a float dtype: ``start + step * i`` fused in float64 (float32 for float16),
  then rounded to the dtype; but ATen's vectorized loop computes a base every ``V`` elements
  (32 bytes of the dtype) and adds ``j * step`` to the rounded base, and leaves the last
  ``len % 2V`` elements of each thread's chunk to the scalar formula; ranges over 32768
  elements are split in chunks across PyTorch's threads (``get_num_threads()`` here: PyTorch's
  own values depend on it).

Not emulated: the vectorized loop of float16/bfloat16 ``linspace`` (over ~100 values a few
differ in the last bit) and bfloat16 ``arange``'s scalar remainder (~1% of ranges differ in one
value near zero). Integer dtypes with float arguments and CUDA ranges are computed as before.
"""

from __future__ import annotations

import numpy as np

from ...runtime import dtype as dtypes
from .bf16 import round_
from .random import _fma as _fma32, _fma64

_F32, _F64 = np.float32, np.float64
GRAIN = 32768  # at::internal::GRAIN_SIZE: ranges up to this size run on one thread
_VEC_BYTES = 32  # AVX2's Vectorized<T>: 8 floats, 4 doubles, 16 halves


def _fma(a, b, c, acc):
    """a * b + c in ``acc`` (float32 or float64) rounded once (``b`` a number)."""
    if acc is _F64:
        return _fma64(np.asarray(a, _F64), float(b), np.asarray(c, _F64))
    return _fma32(a, _F32(b), np.asarray(c, _F32))


def _rounder(dtype: dtypes.dtype):
    """Rounds float32 values to ``dtype``'s grid (float32 arrays out)."""
    if dtype is dtypes.float16:
        def to_half(v):
            with np.errstate(over="ignore"):  # past 65504 is inf, as PyTorch's
                return np.asarray(v, _F32).astype(np.float16).astype(_F32)
        return to_half
    if dtype is dtypes.bfloat16:
        return lambda v: round_(np.array(v, _F32))
    return lambda v: np.asarray(v, _F32)


def _acc(dtype: dtypes.dtype):
    """The real type each step is computed in: float32 or float64, None for the half types
    (which round every operation to themselves)."""
    if dtype is dtypes.float32 or dtype is dtypes.float64:
        return dtype.np.type
    return None


def linspace(start, end, steps: int, dtype: dtypes.dtype) -> np.ndarray:
    """``steps`` values from ``start`` to ``end`` as PyTorch's CPU ``linspace``: float64 for
    integer dtypes (before their truncation), float32 values on bfloat16's grid for it."""
    if steps == 1:  # ATen fills the start
        return np.array([start], (complex if dtype.is_complex else float))
    i = np.arange(steps, dtype=_F64)
    first = i < steps // 2
    k = steps - 1 - i  # steps back from the end
    if dtype.is_complex:  # the real and imaginary parts step alike
        out = np.empty(steps, dtype.np)
        out.real, out.imag = (linspace(part(start), part(end), steps, dtype.to_real())
                              for part in (np.real, np.imag))
        return out
    acc = _acc(dtype)
    if acc is not None:
        s, e = acc(start), acc(end)
        step = (e - s) / acc(max(steps - 1, 1))
        return np.where(first, _fma(i, step, s, acc), _fma(k, -step, e, acc))
    if dtype.is_floating_point:  # float16, bfloat16: each operation rounds to the type
        rnd = _rounder(dtype)
        s, e = rnd(start), rnd(end)
        step = rnd(rnd(e - s) / _F32(max(steps - 1, 1)))
        return np.where(first, rnd(s + rnd(step * rnd(i))), rnd(e - rnd(step * rnd(k))))
    # integers and bool: start and end cast to the type, the steps in float64, truncated
    s, e = (float(np.array(v).astype(dtype.np)) for v in (start, end))
    step = (e - s) / max(steps - 1, 1)
    return np.trunc(np.where(first, _fma64(i, step, s), _fma64(k, -step, e)))


def arange(start: float, step: float, n: int, dtype: dtypes.dtype, threads: int) -> np.ndarray:
    """``start + step * i`` for i in [0, n) as PyTorch's CPU ``arange`` of a float ``dtype``
    rounds it with ``threads`` threads: float32 values on the half types' grids for them."""
    acc = _F32 if dtype is dtypes.float16 else _F64
    rnd = (lambda v: v.astype(dtype.np)) if dtype.itemsize >= 4 else _rounder(dtype)
    vec = _VEC_BYTES // dtype.itemsize
    tasks = min(threads, -(-n // GRAIN)) if n > GRAIN else 1
    chunk = -(-n // tasks) if n else 0
    out = np.empty(n, _F64 if dtype is dtypes.float64 else _F32)
    for begin in range(0, n, max(chunk, 1)):
        m = min(chunk, n - begin)
        body = m // (2 * vec) * (2 * vec)  # the vectorized loop's share; the rest is scalar
        base = rnd(_fma(np.arange(begin, begin + body, vec), step, start, acc))
        vals = _fma(np.arange(vec)[None, :], step, base[:, None], acc)
        out[begin:begin + body] = rnd(vals).reshape(-1)
        out[begin + body:begin + m] = rnd(_fma(np.arange(begin + body, begin + m), step,
                                               start, acc))
    return out
