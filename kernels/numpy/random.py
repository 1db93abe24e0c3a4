"""Random numbers of the kernel contract on the CPU: ``rand``, ``randn``, ``randint``,
``dropout_mask``, drawn from a NumPy ``Generator`` (PCG64).

``gen`` is the NumPy generator of the stream to draw from (the global one that ``manual_seed``
seeds, or a ``tritongrad.Generator``'s). Each function draws exactly what the CPU factories drew
before the contract had them (float64 draws cast to the dtype, ``integers`` for randint), so
seeded CPU results are unchanged; the CUDA backend's numbers are another stream
(kernels/triton/random.py).
"""

from __future__ import annotations

import numpy as np

from .bf16 import BF16Array, rounded

__all__ = ["dropout_mask", "rand", "randint", "randn"]


def host_array(values, dtype):
    # kernels.host_array, which this package cannot import while kernels/__init__ loads it
    return rounded(values) if dtype.name == "bfloat16" else np.require(values, dtype=dtype.np,
                                                                        requirements="C")


def rand(shape, dtype, device, gen: np.random.Generator):
    """Uniform numbers in [0, 1): float64 draws rounded to ``dtype``."""
    return host_array(gen.random(tuple(shape)), dtype)


def randn(shape, dtype, device, gen: np.random.Generator):
    """Standard normal numbers: float64 draws rounded to ``dtype``."""
    return host_array(gen.standard_normal(tuple(shape)), dtype)


def randint(low, high, shape, dtype, device, gen: np.random.Generator):
    """Integers uniform in [low, high), stored as ``dtype``."""
    return host_array(gen.integers(low, high, tuple(shape)), dtype)


def dropout_mask(shape, p, dtype, device, gen: np.random.Generator):
    """The bool keep mask of dropout: ``rand(shape, dtype) >= p``."""
    u = rand(shape, dtype, device, gen)
    # (asarray: for a 0-d ``u`` the comparison returns a NumPy scalar, no array)
    return np.asarray((u.view(np.ndarray) if type(u) is BF16Array else u) >= p)
