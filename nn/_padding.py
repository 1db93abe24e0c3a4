"""``F.pad``, composed from differentiable Tensor ops (``cat`` and ``narrow`` for constant
padding, ``index_select`` for the modes that copy input elements into the border).

The border of a non-constant mode is a gather of input elements, so its gradient is a
scatter-add back onto them: ``index_select``'s rule, which sums repeated indices.
"""

from __future__ import annotations

import operator

import numpy as np

from ..autograd import checks
from ..autograd.ops.creation import full
from ..autograd.ops.creation import tensor as _tensor
from ..autograd.ops.shape import cat
from ..autograd.tensor import Tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _ints(pad) -> list:
    """``pad`` as a list of ints; PyTorch's TypeError for anything else (a float or a bool
    element would otherwise be truncated)."""
    if not isinstance(pad, (list, tuple)) and not (isinstance(pad, Tensor) and pad.ndim == 1):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{checks.type_name(pad)}")
    out = []
    for i, p in enumerate(pad):
        if isinstance(p, (bool, float, complex)) or not hasattr(p, "__index__"):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {checks.type_name(p)} at pos {i}")
        out.append(operator.index(p))
    return out


def _pairs(pad, ndim: int) -> list:
    """``pad`` (last dim first, (left, right) pairs) as [(dim, left, right), ...]."""
    pad = _ints(pad)
    if len(pad) % 2:
        raise RuntimeError("pad: Padding length must be divisible by 2")
    if len(pad) // 2 > ndim:
        raise RuntimeError("pad: Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {ndim}")
    return [(ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def _constant(x: Tensor, pairs: list, value: float) -> Tensor:
    copied = False
    for dim, lo, hi in pairs:
        if lo < 0 or hi < 0:  # negative padding crops, as in PyTorch
            start, stop = max(-lo, 0), x.shape[dim] - max(-hi, 0)
            if stop < start:
                raise RuntimeError(f"The input size {x.shape[dim]}, plus negative padding "
                                   f"{lo} and {hi} resulted in a negative output size, which is "
                                   f"invalid. Check dimension {dim} of your input.")
            x = x.narrow(dim, start, stop - start)
            lo, hi = max(lo, 0), max(hi, 0)
        parts = []
        for n in (lo, None, hi):
            if n is None:
                parts.append(x)
            elif n:
                shape = list(x.shape)
                shape[dim] = n
                parts.append(full(tuple(shape), value, dtype=x.dtype, device=x.device))
        if len(parts) > 1:
            x, copied = cat(parts, dim), True
    # a new tensor even where nothing was added (zero or only negative padding), as PyTorch's
    return x if copied else x.clone()


def _source_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """For each position of a dim of size ``n`` padded by (lo, hi), the input position it
    copies."""
    i = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        return np.mod(i, n)
    period = 2 * (n - 1)  # reflect: mirror about the edge elements, which are not repeated
    i = np.mod(i, period) if period else np.zeros_like(i)
    return np.where(i < n, i, period - i)


def _copying(x: Tensor, pairs: list, mode: str) -> Tensor:
    ndim = x.ndim
    k = len(pairs)
    if not k + 1 <= ndim <= k + 2:
        raise NotImplementedError(
            f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
            f"(mode {mode!r} pads the last {k} dims of a {k + 1}D or {k + 2}D input, got "
            f"{ndim}D of size {list(x.shape)})")
    if x.dtype.name == "bool" and mode != "circular":  # (PyTorch's kernels refuse bool)
        raise checks.kernel_not_implemented(
            f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d", x.dtype)
    source = x
    for dim, lo, hi in pairs:
        n = x.shape[dim]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError("pad: Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) at "
                               f"dimension {dim} of input {list(x.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("pad: Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0 and (lo or hi):
            raise RuntimeError(f"padding: input of size {list(x.shape)} has nothing to "
                               f"replicate along dimension {dim}")
        if lo < 0 or hi < 0:  # crop first; the copying modes then pad what is left
            x = _constant(x, [(dim, min(lo, 0), min(hi, 0))], 0.0)
            n, lo, hi = x.shape[dim], max(lo, 0), max(hi, 0)
        if lo or hi:
            idx = _tensor(_source_index(n, lo, hi, mode), device=x.device)
            x = x.index_select(dim, idx)
    return x.clone() if x is source else x  # (a new tensor always, as PyTorch's)


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pads tensor.

    The padding sizes are described starting from the last dimension and moving forward:
    ``(padding_left, padding_right)`` pads the last dimension, ``(padding_left,
    padding_right, padding_top, padding_bottom)`` the last two, and so on. Negative sizes
    crop.

    Args:
        input: N-dimensional tensor.
        pad: m-element tuple, where m/2 <= input dimensions and m is even.
        mode: ``'constant'`` (any number of dims), ``'reflect'``, ``'replicate'`` or
            ``'circular'`` (the last 1 to 3 dims of a 2D to 5D input). Default ``'constant'``.
        value: fill value for ``'constant'`` padding. Default: 0.

    Example:
        >>> t = tg.ones(1, 2, 3)
        >>> tg.nn.functional.pad(t, (1, 1, 0, 2)).shape
        tritongrad.Size([1, 4, 5])
    """
    checks.tensor_arg(input, "pad")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pairs = _pairs(pad, input.ndim)
    if mode == "constant":
        return _constant(input, pairs, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'pad: Padding mode "{mode}" doesn\'t take in value argument')
    return _copying(input, pairs, mode)
