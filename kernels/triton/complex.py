"""Complex numbers on the Triton backend, which has no complex dtypes: the contract's conj,
real and imag of real arrays (a copy, a copy, zeros); complex arrays are refused by the
copies' dtype checks."""

from __future__ import annotations

from .memory import astype, full

__all__ = ["conj", "imag", "real"]


def conj(a):
    return astype(a, a.dtype)


def real(a):
    return astype(a, a.dtype)


def imag(a):
    return full(a.shape, 0, a.dtype, a.device)
