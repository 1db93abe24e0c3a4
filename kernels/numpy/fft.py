"""Discrete Fourier transforms over NumPy arrays (``numpy.fft``): PyTorch's three FFT
primitives, ``_fft_c2c``, ``_fft_r2c`` and ``_fft_c2r``, for float32/float64 and
complex64/complex128.

These are host kernels, as the factorizations are (kernels/numpy/decompositions.py):
autograd/ops/fft.py runs them on the CPU's arrays directly and, for a CUDA tensor, on a host
copy (there are no Triton FFT kernels). They are not part of the per-backend contract.

``mode`` is PyTorch's ``fft_norm_mode``, the scaling applied to the transform whatever its
direction: ``NONE`` (none), ``BY_ROOT_N`` (``1/sqrt(n)``) or ``BY_N`` (``1/n``), ``n`` the
product of the transformed (signal) sizes. Results keep the input's precision: complex64
for float32/complex64 inputs, complex128 for float64/complex128 (float32/float64 for c2r).
"""

from __future__ import annotations

import numpy as np

from .elementwise import _quiet  # (Note [Silent float errors]: np.fft's warnings)

__all__ = ["BY_N", "BY_ROOT_N", "NONE", "c2c", "c2r", "r2c"]

NONE, BY_ROOT_N, BY_N = 0, 1, 2

# numpy.fft's ``norm`` that scales each direction by a mode: numpy's forward transforms are
# unscaled with "backward", its inverse ones with "forward".
_FORWARD = {NONE: "backward", BY_ROOT_N: "ortho", BY_N: "forward"}
_INVERSE = {NONE: "forward", BY_ROOT_N: "ortho", BY_N: "backward"}


def _complex_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else \
        np.dtype(np.complex128)


@_quiet
def c2c(a: np.ndarray, dims: tuple, mode: int, forward: bool) -> np.ndarray:
    """The complex-to-complex transform of ``a`` over ``dims``: ``sum_j a_j e^(-+2 pi i jk/n)``
    (the minus sign when ``forward``), scaled by ``mode``."""
    if not dims:  # (no axis: NumPy returns ``a`` itself; the result is a new array)
        return a.copy()
    fn, norm = (np.fft.fftn, _FORWARD) if forward else (np.fft.ifftn, _INVERSE)
    return fn(a, axes=dims, norm=norm[mode]).astype(a.dtype, copy=False)


@_quiet
def r2c(a: np.ndarray, dims: tuple, mode: int, onesided: bool) -> np.ndarray:
    """The forward transform of real ``a`` over ``dims``; ``onesided`` keeps the
    ``n // 2 + 1`` non-redundant bins of the last of ``dims`` (the rest follow by hermitian
    symmetry)."""
    fn = np.fft.rfftn if onesided else np.fft.fftn
    return fn(a, axes=dims, norm=_FORWARD[mode]).astype(_complex_of(a.dtype), copy=False)


@_quiet
def c2r(a: np.ndarray, dims: tuple, mode: int, last_dim_size: int) -> np.ndarray:
    """The inverse transform of the onesided hermitian ``a`` over ``dims`` into a real signal
    whose last transformed dim has ``last_dim_size`` points (``a`` holds its
    ``last_dim_size // 2 + 1`` bins; the imaginary parts of the bins that must be real are
    ignored)."""
    s = [a.shape[d] for d in dims[:-1]] + [last_dim_size]
    out = np.fft.irfftn(a, s=s, axes=dims, norm=_INVERSE[mode])
    return out.astype(np.float32 if a.dtype == np.complex64 else np.float64, copy=False)
