"""bfloat16 <-> float32 on the host: NumPy has no bfloat16, so CPU code sees its bit patterns
(``uint16``) only when moving bfloat16 data to or from a device."""

from __future__ import annotations

import numpy as np


def from_float32(a) -> np.ndarray:
    """Rounds to the nearest bfloat16 (ties to even) and returns the bit patterns."""
    f = np.ascontiguousarray(a, dtype=np.float32)
    bits = f.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded)


def to_float32(bits) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
