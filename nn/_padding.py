"""``F.pad``: constant padding is one node (``ConstantPadNdBackward0``, PyTorch's), the modes
that copy input elements into the border are composed from ``index_select``.

The border of a non-constant mode is a gather of input elements, so its gradient is a
scatter-add back onto them: ``index_select``'s rule, which sums repeated indices.
"""

from __future__ import annotations

import operator

import numpy as np

from ..autograd import checks
from ..autograd.dispatch import Primitive, apply, call, meta
from ..autograd.layout import (NHWC_PERMUTATIONS, _row_major_strides, channels_last_order,
                               laid_out, suggest_memory_format)
from ..autograd.ops.creation import tensor as _tensor
from ..autograd.tensor import Tensor
from ..runtime.dtype import channels_last, channels_last_3d

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


# the channels-last layout of a 4-D and a 5-D tensor
_LAST = {4: channels_last, 5: channels_last_3d}


def _channels_last_like(y, *inputs, rank: int | None = None):
    """``y`` (a 4-D or 5-D tensor, or a tuple of them) with the exact strides of
    channels_last (channels_last_3d) when the strides of one of ``inputs`` of its rank
    suggest that format (PyTorch's ``suggest_memory_format``, which its convolutions, pools,
    paddings, resamplings, group norm and shuffles give their results in: a sliced or
    cropped channels-last input too, and an (N, 1, H, W) or (N, C, 1, 1) one whose strides
    say channels-last); else ``y`` itself. ``rank``: the only rank relaid (5 for the 3-D
    ops, whose unbatched 4-D results PyTorch leaves contiguous). A row-major input costs one
    strides compare. (Here, not in nn/_convolution.py, which imports ``pad``.)"""
    ndim = (y[0] if isinstance(y, tuple) else y).ndim
    fmt = _LAST.get(ndim) if rank is None or ndim == rank else None
    if fmt is None:  # (unbatched, or another rank: no such layout)
        return y
    for t in inputs:
        if t is None or t.ndim != ndim:
            continue
        shape, strides = tuple(t.shape), t.stride()
        # (the row-major strides remembered per shape: every convolution and pool asks)
        if strides != _row_major_strides(shape) and suggest_memory_format(shape, strides) is fmt:
            if isinstance(y, tuple):
                return tuple(_relaid(v, fmt) for v in y)
            return _relaid(y, fmt)
    return y


def _relaid(y: Tensor, fmt) -> Tensor:
    """The op's own fresh result ``y`` with its values laid out in ``fmt``, exactly its
    strides (a size-1 dim's too, as PyTorch allocates it): its array is replaced, so ``y``
    keeps the op's node (a copy recorded after it would put a CloneBackward0 where PyTorch's
    grad_fn is the op's own, and add a node to backward). A view of another result is copied
    as an op instead (its base fixes its memory)."""
    if y._base is not None:
        return y.contiguous(memory_format=fmt)
    y._data = laid_out(y._k, y._data, NHWC_PERMUTATIONS[y.ndim])
    return y


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


class ConstantPadNdBackward0(Primitive):
    """``pad(x, pad, value=value)`` in constant mode, PyTorch's one node: a new array of the
    padded shape filled with ``value`` (in the memory format x's strides suggest, as
    PyTorch's), x copied into its middle; a negative pad crops x instead. ``pairs``: ((dim,
    lo, hi), ...). Its gradient is the same op on g with the pads negated and zero fill (the
    middle of g, zero where x was cropped), so double backward is this op too; so is the jvp,
    with zero fill (the op is affine in x: the fill has no tangent)."""

    __slots__ = ()
    op_name = "constant_pad_nd"

    @staticmethod
    def forward(ctx, k, x, pairs, value):
        ctx.pairs = pairs
        shape = list(x.shape)
        src, dst = [slice(None)] * len(shape), [slice(None)] * len(shape)
        for dim, lo, hi in pairs:
            n = shape[dim]
            start, stop = max(-lo, 0), n - max(-hi, 0)
            src[dim] = slice(start, stop)
            dst[dim] = slice(max(lo, 0), max(lo, 0) + stop - start)
            shape[dim] = n + lo + hi
        device, dtype = meta(x)
        order = channels_last_order(k, x) if 0 not in shape else None
        if order is None:
            out = k.full(tuple(shape), value, dtype, device)
        else:  # (filled in NHWC order, seen as NCHW: channels-last strides)
            out = k.permute(k.full(tuple(shape[d] for d in order[0]), value, dtype, device),
                            order[1])
        if 0 not in shape:
            k.copy_(k.getitem(out, tuple(dst)), k.getitem(x, tuple(src)))
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        return call(k, ConstantPadNdBackward0, (g,),
                    tuple((d, -lo, -hi) for d, lo, hi in ctx.pairs), 0)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *params):
        return call(k, ConstantPadNdBackward0, (tangents[0],), ctx.pairs, 0)


def _constant(x: Tensor, pairs: list, value) -> Tensor:
    for dim, lo, hi in pairs:
        n = x.shape[dim]
        if n + min(lo, 0) + min(hi, 0) < 0:  # (PyTorch's narrow fails first, in its words)
            raise RuntimeError(f"narrow(): length must be non-negative. (pad: the input "
                               f"size {n}, plus negative padding {lo} and {hi} "
                               f"resulted in a negative output size along dimension {dim})")
    # a new tensor even where nothing was added (zero or only negative padding), as PyTorch's
    return apply(ConstantPadNdBackward0, (x,), tuple(pairs), value)


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


_SUPPORTED = ("Supported combinations for non-constant padding:\n"
              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _check_copying(x: Tensor, pairs: list, mode: str) -> None:
    """PyTorch's checks of a reflect, replicate or circular padding, in its order and words:
    the supported ranks, then (reflect, replicate) no empty dim but the batch's, the reflected
    border shorter than its dim and an output not empty along every padded dim (its kernels
    test all of them together), or (circular) no wrapping around twice."""
    ndim, k = x.ndim, len(pairs)
    if k not in (1, 2, 3) or not k + 1 <= ndim <= k + 2:
        # (the last line: PyTorch's older words, which tests/nn/test_losses.py matches)
        raise NotImplementedError(f"Padding size {2 * k} is not supported for {ndim}D input "
                                  f"tensor.\n{_SUPPORTED}\n(pad, mode {mode!r}: Only 2D, 3D, 4D, "
                                  f"5D padding with non-constant padding are supported)")
    if x.dtype.name == "bool" and mode != "circular":  # (PyTorch's kernels refuse bool)
        raise checks.kernel_not_implemented(
            f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d", x.dtype)
    if mode == "circular":
        for dim, lo, hi in pairs:
            n = x.shape[dim]
            if lo > n or hi > n:
                raise RuntimeError("pad: Padding value causes wrapping around more than once.")
            if n + lo + hi < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension "
                                   f"(pad: {lo} and {hi} along dimension {dim} of size {n})")
            if n + min(lo, 0) + min(hi, 0) <= 0 < n + lo + hi and x.numel():
                # (PyTorch reads uninitialised memory there; of an empty tensor, nothing)
                raise RuntimeError(f"pad: circular padding ({lo}, {hi}) of dimension {dim} (of "
                                   f"size {n}) crops it away, leaving nothing to wrap around")
        return
    if 0 in (x.shape[1:] if ndim == k + 2 else x.shape):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"{list(x.shape)}")
    for dim, lo, hi in pairs:
        if mode == "reflect" and (lo >= x.shape[dim] or hi >= x.shape[dim]):
            raise RuntimeError("pad: Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                               f"at dimension {dim} of input {list(x.shape)}")
    dims = sorted(pairs)  # (depth, height, width order)
    out = [x.shape[dim] + lo + hi for dim, lo, hi in dims]
    if all(o < 1 for o in out):
        names = "DHW"[-k:]
        sizes = ", ".join(f"{a}: {x.shape[d]}" for a, (d, _, _) in zip(names, dims))
        outs = " ".join(f"{a}: {o}" for a, o in zip(names, out))
        raise RuntimeError(f"input ({sizes}) is too small. Calculated output {outs} (pad, "
                           f"mode {mode!r})")


def _copying(x: Tensor, pairs: list, mode: str) -> Tensor:
    _check_copying(x, pairs, mode)
    source = x
    for dim, lo, hi in pairs:
        n = x.shape[dim]
        if n + lo + hi <= 0 or not x.numel():  # (nothing to copy, whatever crops it)
            x = _constant(x.narrow(dim, 0, 0), [(dim, 0, max(n + lo + hi, 0))], 0.0)
            continue
        if mode == "circular" and (lo < 0 or hi < 0):
            # PyTorch's circular padding crops first, then wraps what is left; its reflect
            # and replicate kernels read position i - lo of the input (mirrored or clamped)
            # for output i, so a negative size only moves where they start
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
        y = _constant(input, pairs, 0.0 if value is None else value)
    else:
        if value is not None and value != 0:
            raise RuntimeError(f'pad: Padding mode "{mode}" doesn\'t take in value argument')
        y = _copying(input, pairs, mode)
        if mode == "circular":  # (PyTorch's circular padding is a composite: contiguous)
            return y
    return _channels_last_like(y, input)
