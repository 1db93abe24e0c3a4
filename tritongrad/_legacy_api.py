"""PyTorch's older top-level names: the per-device autocast functions that
``torch.is_autocast_enabled(device_type)`` and friends replaced (each warns as PyTorch's does,
then calls the new form), and the ``has_*`` build flags."""

from __future__ import annotations

import glob
import os
import sys
import warnings

from .autograd import autocast as _autocast

__all__ = ["get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "has_lapack", "has_mkl",
           "has_openmp", "has_spectral", "is_autocast_cpu_enabled", "set_autocast_cpu_dtype",
           "set_autocast_cpu_enabled", "set_autocast_gpu_dtype"]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated: ``is_autocast_enabled("cpu")``."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _autocast.is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated: ``set_autocast_enabled("cpu", enabled)``."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    _autocast.set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """Deprecated: ``get_autocast_dtype("cpu")``."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _autocast.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    """Deprecated: ``set_autocast_dtype("cpu", dtype)``."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _autocast.set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    """Deprecated: ``get_autocast_dtype("cuda")``."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _autocast.get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    """Deprecated: ``set_autocast_dtype("cuda", dtype)``."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    _autocast.set_autocast_dtype("cuda", dtype)


has_lapack = True  # the linalg factorizations run NumPy's LAPACK
has_spectral = True  # tritongrad.fft (NumPy's pocketfft on the CPU)
# the optional MKL BLAS (kernels/numpy/blas.py) is installed: the mkl wheel puts libmkl_rt in
# the environment's lib/ (a file test: importlib.metadata's scan costs ~0.1-1 s at import)
has_mkl = bool(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*")))
has_openmp = False  # the CPU kernels start no OpenMP threads of their own
