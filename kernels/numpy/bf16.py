"""bfloat16 on the host.

NumPy has no bfloat16. On the CPU a bfloat16 array is a ``BF16Array``: float32 storage whose
values are always exactly representable in bfloat16. Every ufunc over one (arithmetic,
reductions, matmul: all of them ufuncs in NumPy 2) computes in float32 and rounds its float32
result to the nearest bfloat16 (ties to even) once, which is what PyTorch's CPU bfloat16 kernels
and the GPU ones do (float32 compute and accumulation, one rounding at the store). Comparisons
and other non-float32 results come back as plain arrays.

Functions that are not ufuncs (``np.where``, ``np.concatenate``, fancy indexing, ...) return
plain float32 arrays; the backend tags them back with ``tag`` (their values are already on the
bfloat16 grid). Code that writes float32 values into a BF16Array without a ufunc (``np.copyto``)
rounds the destination with ``round_``.

Moving to a device converts to real bfloat16 bit patterns (``from_float32``), and back
(``from_bits``); ``autograd.tensor.array_meta`` maps a BF16Array to ``tritongrad.bfloat16``.
"""

from __future__ import annotations

import numpy as np

from ...runtime.dtype import bfloat16_bits, bfloat16_values

__all__ = ["BF16Array", "from_float32", "to_float32", "from_bits", "round_", "tag", "rounded"]

_ndarray = np.ndarray
_f32 = np.dtype(np.float32)


def round_(a: np.ndarray) -> np.ndarray:
    """Rounds float32 array ``a`` (any strides) in place to bfloat16 precision; returns it."""
    plain = a.view(_ndarray)
    if plain.size == 0:
        return a
    bits = plain.view(np.uint32)
    nan = np.isnan(plain)
    bits += 0x7FFF + ((bits >> 16) & 1)
    bits &= 0xFFFF0000
    if nan.any():
        plain[nan] = np.nan  # the carry may have run into the sign; NaN stays a quiet NaN
    return a


def tag(a: np.ndarray) -> BF16Array:
    """``a`` (float32 values already on the bfloat16 grid) viewed as a BF16Array."""
    return a.view(BF16Array)


def rounded(a) -> BF16Array:
    """A new BF16Array holding ``a`` rounded to bfloat16 (any input dtype)."""
    out = np.array(a, dtype=np.float32, copy=True, subok=False, order="C")
    return round_(out).view(BF16Array)


class BF16Array(np.ndarray):
    """A float32-backed NumPy array tagged as bfloat16 (see the module docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        plain = [x.view(_ndarray) if isinstance(x, BF16Array) else x for x in inputs]
        if out is not None:
            kwargs["out"] = tuple(o.view(_ndarray) if isinstance(o, BF16Array) else o
                                  for o in out)
        res = getattr(ufunc, method)(*plain, **kwargs)
        if method == "at":
            if isinstance(inputs[0], BF16Array):
                round_(plain[0])
            return None
        if out is not None:
            for o in out:
                if isinstance(o, BF16Array):
                    round_(o)
            return out[0] if len(out) == 1 else out
        if type(res) is tuple:
            return tuple(_wrap(r) for r in res)
        return _wrap(res)

    def __dlpack__(self, *args, **kwargs):
        raise BufferError("bfloat16 CPU arrays cannot be exported through DLPack (NumPy has no "
                          "bfloat16); convert with .float() first")


def _wrap(r):
    if isinstance(r, (_ndarray, np.generic)) and r.dtype == _f32:
        r = np.asarray(r)
        return round_(r).view(BF16Array)
    return r


def from_float32(a) -> np.ndarray:
    """Rounds to the nearest bfloat16 (ties to even) and returns the bit patterns (``uint16``)."""
    return bfloat16_bits(a)


def from_bits(bits) -> BF16Array:
    """A BF16Array from bfloat16 bit patterns (``uint16``), exactly."""
    return bfloat16_values(bits).view(BF16Array)


def to_float32(a) -> np.ndarray:
    """The float32 values of a BF16Array (a plain view, no copy) or of bit patterns (exact)."""
    if isinstance(a, BF16Array):
        return a.view(_ndarray)
    if isinstance(a, _ndarray) and a.dtype == _f32:
        return a
    return bfloat16_values(a)
