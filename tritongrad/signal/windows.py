"""``tritongrad.signal.windows``: PyTorch's window functions (SciPy's definitions).

Each window is computed in float64 NumPy from its formula and returned as a tensor of the
requested dtype (float32 or float64), device and ``requires_grad``. A symmetric window
(``sym=True``, for filter design) of length M spans n = 0 .. M - 1 symmetrically; a periodic
one (``sym=False``, for spectral analysis) is the symmetric window of length M + 1 without its
last point, as in SciPy and PyTorch.

Example:
    >>> tg.signal.windows.hann(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _window(name: str, M: int, sym: bool, dtype, layout, device, requires_grad: bool, formula):
    """Checks the arguments as PyTorch, then evaluates ``formula(n, L)`` on n = 0 .. L - 1
    (L = M, or M + 1 for a periodic window, whose last point is dropped)."""
    from ..autograd.ops.creation import tensor
    from ..runtime import dtype as dtypes
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)):
        raise TypeError(f"{name}(): argument 'M' must be int, not {type(M).__name__}")
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not dtypes.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: "
                         f"{str(dtype).replace('tritongrad', 'torch')}")
    if M <= 1:  # PyTorch's: empty, or the single point 1 whatever the formula
        values = np.ones(M)
    else:
        length = M if sym else M + 1
        values = formula(np.arange(length, dtype=np.float64), length)[:M]
    return tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=None,
                   device=None, requires_grad: bool = False):
    """sum_k (-1)^k a_k cos(2 pi k n / (L - 1)): the generalised cosine window."""
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")

    def formula(n, length):
        phase = 2 * math.pi * n / (length - 1)
        return sum((-1) ** k * c * np.cos(k * phase) for k, c in enumerate(a))
    return _window("general_cosine", M, sym, dtype, layout, device, requires_grad, formula)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=None,
                    device=None, requires_grad: bool = False):
    """alpha - (1 - alpha) cos(2 pi n / (L - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
         requires_grad: bool = False):
    """0.5 - 0.5 cos(2 pi n / (L - 1))."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False):
    """0.54 - 0.46 cos(2 pi n / (L - 1))."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False):
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False):
    """0.42 - 0.5 cos(2 pi n / (L - 1)) + 0.08 cos(4 pi n / (L - 1))."""
    def formula(n, length):
        phase = 2 * math.pi * n / (length - 1)
        return 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)
    return _window("blackman", M, sym, dtype, layout, device, requires_grad, formula)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False):
    """The triangle 1 - |2 n / (L - 1) - 1|."""
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad,
                   lambda n, length: 1 - np.abs(2 * n / (length - 1) - 1))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
           requires_grad: bool = False):
    """sin(pi (n + 0.5) / L)."""
    return _window("cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, length: np.sin(math.pi * (n + 0.5) / length))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=None,
             device=None, requires_grad: bool = False):
    """exp(-(n - (L - 1) / 2)^2 / (2 std^2))."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, layout, device, requires_grad,
                   lambda n, length: np.exp(-0.5 * ((n - (length - 1) / 2) / std) ** 2))


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=None, device=None, requires_grad: bool = False):
    """exp(-|n - center| / tau); ``center`` defaults to the middle, (L - 1) / 2, and is only
    allowed for a periodic window."""
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def formula(n, length):
        c = (length - 1) / 2 if center is None else center
        return np.exp(-np.abs(n - c) / tau)
    return _window("exponential", M, sym, dtype, layout, device, requires_grad, formula)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=None,
           device=None, requires_grad: bool = False):
    """I0(beta sqrt(1 - (2 n / (L - 1) - 1)^2)) / I0(beta), I0 the modified Bessel function."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")

    def formula(n, length):
        from ..autograd.ops.creation import tensor
        from ..autograd.ops.special import i0e
        r = 2 * n / (length - 1) - 1
        a = beta * np.sqrt(np.clip(1 - r * r, 0.0, None))
        # as I0e(a) / I0e(beta) exp(a - beta), I0e = exp(-x) I0: I0 alone overflows float64
        # beyond beta = 713 (inf / inf)
        scaled = i0e(tensor(np.stack([a, np.full_like(a, beta)]))).numpy()
        return scaled[0] / scaled[1] * np.exp(a - beta)
    return _window("kaiser", M, sym, dtype, layout, device, requires_grad, formula)
