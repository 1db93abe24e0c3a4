"""Convolution and pooling: conv1d/conv2d through the fused convolution primitive
(autograd/ops/conv.py: the kernel contract's ``conv2d``), pooling and ``unfold`` as composites
of differentiable Tensor ops.

conv1d and conv2d check their arguments here (PyTorch's errors, the 'same'/'valid' padding
rules) and hand floating point tensors to the fused op, conv1d as a convolution of height one;
'same' padding's odd totals are the kernel's asymmetric (low, high) padding. The composite
below stays the path of other dtypes (integers) and the reference the fused op is tested
against.

Every composite here starts from the same step, ``_windows``: pad the input, then gather each
output position's receptive field with one ``index_select`` over the flattened spatial dims
(im2col), giving (N, C, K, L) for K kernel taps and L output positions. ``as_strided`` would
make the same view without a copy, but its derivative scatters into overlapping windows by
copy, not by sum, so overlapping windows would lose gradient; ``index_select``'s rule sums.
Then:

* convolution: one (batched, for groups) matmul of the weight (g, O/g, C/g*K) with the
  columns (N, g, C/g*K, L);
* max pooling: ``max`` over K (its gradient goes to the first maximum, as PyTorch's);
* average pooling: a sum over K divided by a per-position divisor computed on the host;
* adaptive average pooling: one matmul with an averaging matrix per spatial dim (windows of
  varying size);
* transposed convolution (conv_transpose3d, and 1-D/2-D integers): the adjoint, a matmul
  then ``_col2im``, which sums the columns back into place with ``index_add`` (as ``fold``).

The spatial code is written once for any number of spatial dims; the 1-D/2-D/3-D functions
only check their arguments and name themselves in errors.
"""

from __future__ import annotations

import functools
import math
import operator
import warnings

import numpy as np

from ..autograd import checks
from ..autograd.autocast import autocast as _autocast
from ..autograd.autocast import is_autocast_enabled as _autocast_enabled
from ..autograd.grad_mode import no_grad as _no_grad
from ..autograd.ops import conv as _fused_conv
from ..autograd.ops.creation import tensor as _tensor
from ..autograd.ops.creation import zeros as _zeros
from ..autograd.ops.pooling import avg_pool as avg_pool_node
from ..autograd.ops.pooling import max_pool_with_indices
from ..kernels.numpy.pool import avg_divisor
from ..autograd.ops.sampling_nodes import (AdaptiveAvgPool2DBackward0, AdaptiveAvgPool3DBackward0,
                                           Col2ImBackward0, Im2ColBackward0, linear_node)
from ..autograd.tensor import Tensor
from ..runtime.dtype import bfloat16, float16, promote_types
from ._padding import _channels_last_like, pad

__all__ = ["adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "avg_pool2d",
           "avg_pool3d", "conv1d", "conv2d", "conv_tbc", "conv_transpose3d", "max_pool2d",
           "max_pool3d", "unfold"]


_WARNED = {"same": False}  # the warnings given once a process


# the positions of the pools' arguments, as PyTorch's argument errors print them
_POSITIONS = {"kernel_size": 2, "output_size": 2, "stride": 3, "padding": 4, "dilation": 5}


def _ints(v, arg: str, op: str) -> tuple:
    """``v`` (an int or a sequence of them) as a tuple of ints; PyTorch's TypeError for
    anything else (a float would otherwise be truncated)."""
    if isinstance(v, int) or hasattr(v, "__index__") and not hasattr(v, "__len__"):
        return (operator.index(v),)  # (an int, a NumPy integer)
    # the position PyTorch's pools print (its avg_pool2d/3d none; the other ops' positions
    # differ, and it prints none for a keyword argument: left out)
    at = f" (position {_POSITIONS[arg]})" if "pool" in op and arg in _POSITIONS and op not in (
        "avg_pool2d", "avg_pool3d") else ""
    if isinstance(v, (str, float)) or not hasattr(v, "__iter__"):  # (conv's 'same' before)
        raise TypeError(f"{op}(): argument '{arg}'{at} must be tuple of ints, not "
                        f"{type(v).__name__}")
    out = tuple(v)
    for i, e in enumerate(out):
        if isinstance(e, (bool, float)) or not hasattr(e, "__index__"):
            raise TypeError(f"{op}(): argument '{arg}'{at} must be tuple of ints, but found "
                            f"element of type {type(e).__name__} at pos {i}")
    return tuple(int(e) for e in out)


def _conv_length_error(v: tuple, n: int, arg: str, op: str) -> str:
    return (f"{op}: expected {arg} to be a single integer value or a list of {n} values to "
            f"match the convolution dimensions, but got {arg}={list(v)}")


def _ntuple(v, n: int, arg: str, op: str, length_error=_conv_length_error) -> tuple:
    """``arg`` as ``n`` ints: an int, or one (or ``n``) ints; another length is a RuntimeError
    worded by ``length_error(v, n, arg, op)`` (a convolution's words unless given)."""
    if isinstance(v, int):
        return (v,) * n
    v = _ints(v, arg, op)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(length_error(v, n, arg, op))
    return v


@functools.lru_cache(maxsize=256)
def _window_index(sizes: tuple, kernel: tuple, stride: tuple, dilation: tuple,
                  out: tuple) -> np.ndarray:
    """(K, L) int64: the flat position, in the (padded) spatial grid ``sizes``, of tap k of the
    window at output position l (both in row-major order)."""
    flat = np.zeros((1, 1), dtype=np.int64)
    for n, k, s, d, o in zip(sizes, kernel, stride, dilation, out):
        pos = np.arange(k)[:, None] * d + np.arange(o)[None, :] * s  # (k, o) along this dim
        flat = (flat[:, None, :, None] * n + pos[None, :, None, :]).reshape(
            flat.shape[0] * k, flat.shape[1] * o)
    return flat


def _windows(x: Tensor, kernel: tuple, stride: tuple, dilation: tuple, out: tuple) -> Tensor:
    """(N, C, *sizes) -> (N, C, K, L): every window's taps, gathered (im2col).

    Windows that tile the input (stride = kernel, no dilation: a 2x2 pool) are a reshape and
    a permutation of its leading ``out * kernel`` rows and columns (the rest is in no window):
    no index is built, and the backward is a copy instead of an accumulating scatter."""
    lead, sizes = tuple(x.shape[:2]), tuple(x.shape[2:])
    if tuple(stride) == tuple(kernel) and all(d == 1 for d in dilation) and all(
            o * k <= n for o, k, n in zip(out, kernel, sizes)):
        nd = len(sizes)
        for dim, (o, k, n) in enumerate(zip(out, kernel, sizes)):
            if o * k < n:
                x = x.narrow(2 + dim, 0, o * k)
        split = lead + tuple(v for o, k in zip(out, kernel) for v in (o, k))  # (.., o1, k1, ..)
        order = (0, 1) + tuple(3 + 2 * i for i in range(nd)) + tuple(2 + 2 * i for i in range(nd))
        return x.reshape(split).permute(order).reshape(lead + (math.prod(kernel), math.prod(out)))
    idx = _window_index(sizes, kernel, stride, dilation, out)
    flat = x.reshape(lead + (math.prod(sizes),))  # (not -1: N or C may be 0)
    taps = flat.index_select(2, _tensor(idx.reshape(-1), device=x.device))
    return taps.reshape(lead + idx.shape)


def _col2im(cols: Tensor, size: tuple, kernel: tuple, stride: tuple, padding: tuple,
            dilation: tuple, out: tuple) -> Tensor:
    """(N, C, K, L) -> (N, C, *size): the adjoint of ``_windows`` on the input padded by
    ``padding``: each window's taps summed into place (``index_add``) on a padded canvas,
    which is then cropped."""
    n, c = cols.shape[:2]
    padded = tuple(v + 2 * p for v, p in zip(size, padding))
    idx = _window_index(padded, kernel, stride, dilation, out)  # (K, L) flat padded positions
    flat = cols.reshape(n, c, math.prod(cols.shape[2:]))  # (not -1: N or C may be 0)
    canvas = _zeros((n, c, math.prod(padded)), dtype=cols.dtype, device=cols.device).index_add(
        2, _tensor(idx.reshape(-1), device=cols.device), flat)
    y = canvas.reshape((n, c) + padded)
    if not any(padding):
        return y
    for dim, (v, p) in enumerate(zip(size, padding)):
        if p:
            y = y.narrow(2 + dim, p, v)
    return y.contiguous()  # PyTorch's fold and conv_transpose3d give contiguous tensors


def _conv_out(n: int, k: int, s: int, lo: int, hi: int, d: int) -> int:
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _check_conv_input(input: Tensor, weight: Tensor, nd: int, op: str) -> bool:
    """Raises PyTorch's errors for the ranks; True when ``input`` is unbatched."""
    checks.tensor_arg(input, op, "input")
    checks.tensor_arg(weight, op, "weight")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{op}, but got input of size: {list(input.shape)}")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected weight to be {nd + 2}-dimensional (out_channels, "
                           f"in_channels/groups, *kernel_size), but got weight of size "
                           f"{list(weight.shape)}")
    return input.ndim == nd + 1


def _check_conv_operands(x: Tensor, weight: Tensor, bias, out_channels: int, op: str,
                         transposed: bool = False) -> None:
    """PyTorch's checks of a convolution's weight and bias against its input (shapes only): a
    positive kernel, at least one filter, a 1-D bias of ``out_channels`` (the dtypes are
    ``_same_dtypes``')."""
    kernel = tuple(weight.shape[2:])
    if any(k < 1 for k in kernel):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got "
                           f"kernel_size={list(kernel)} (weight of size {list(weight.shape)})")
    if weight.shape[0] == 0:
        raise RuntimeError(f"{op}: expected weight to be at least 1 at dimension 0, but got "
                           f"weight of size {list(weight.shape)} instead")
    if bias is not None:
        checks.tensor_arg(bias, op, "bias")
        if bias.ndim != 1 or bias.shape[0] != out_channels:
            raise RuntimeError(f"{op}: Given {'transposed=1, ' if transposed else ''}weight of "
                               f"size {list(weight.shape)}, expected bias to be 1-dimensional "
                               f"with {out_channels} elements, but got bias of size "
                               f"{list(bias.shape)} instead")


# the C++ types PyTorch's "Input type (float) and bias type (double)" errors print
_CPP_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _types_differ(x: Tensor, other: Tensor, what: str, op: str) -> RuntimeError:
    """PyTorch's error for a convolution's ``what`` (weight, bias) whose dtype is not its
    input's, in its two wordings (its reduced precision and complex inputs reach the check
    that prints the types, the others the kernel's scalar type check), naming the op."""
    a, b = x.dtype, other.dtype
    if what == "bias" or a.is_complex or a is float16 or a is bfloat16:
        return RuntimeError(f"Input type ({_CPP_TYPES.get(a.name, a.name)}) and {what} type "
                            f"({_CPP_TYPES.get(b.name, b.name)}) should be the same ({op})")
    return RuntimeError(f"expected scalar type {checks.scalar_type_name(a)} but found "
                        f"{checks.scalar_type_name(b)} ({op}: {what})")


def _same_dtypes(x: Tensor, weight: Tensor, bias, op: str, transposed: bool = False):
    """PyTorch's dtype rule for a convolution (checked after the shapes, as it does): the
    weight and bias in the input's dtype, no promotion. conv_transpose1d/2d add their bias
    in place into the output instead, so a bias of another dtype is cast to it where that
    cast is allowed (not to a lower category); conv_transpose3d's kernel checks it as the
    weight's. Returns the bias to use."""
    dt = x.dtype
    if weight.dtype is dt and (bias is None or bias.dtype is dt):  # (the hot case: one test)
        return bias
    if not transposed and bias is not None and bias.dtype is not dt:  # (its bias first)
        raise _types_differ(x, bias, "bias", op)
    if weight.dtype is not dt:
        raise _types_differ(x, weight, "weight", op)
    if op == "conv_transpose3d":
        raise RuntimeError(f"expected scalar type {checks.scalar_type_name(dt)} but found "
                           f"{checks.scalar_type_name(bias.dtype)} ({op}: bias)")
    wide = promote_types(dt, bias.dtype)
    if _category(wide) > _category(dt):  # (PyTorch's in-place rule: not to a lower category)
        raise RuntimeError(f"result type {checks.scalar_type_name(wide)} can't be cast to the "
                           f"desired output type {checks.scalar_type_name(dt)} ({op}: bias)")
    return bias.to(dt)


def _category(dt) -> int:
    """bool < integers < floating < complex, the order of PyTorch's casting rule."""
    return 3 if dt.is_complex else 2 if dt.is_floating_point else 0 if dt.name == "bool" else 1


def _conv(input: Tensor, weight: Tensor, bias, stride, padding, dilation, groups: int,
          nd: int, op: str, fused: bool = True) -> Tensor:
    """conv1d/conv2d (``nd`` spatial dims): the fused op for floating point tensors (unless
    ``fused`` is False), else the im2col composite."""
    unbatched = _check_conv_input(input, weight, nd, op)
    x = input.unsqueeze(0) if unbatched else input
    n, c = x.shape[:2]
    o, cg = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    stride = _ntuple(stride, nd, "stride", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    if groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported (got groups={groups})")
    if any(s < 1 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (got {list(stride)})")
    if any(d < 1 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero (got {list(dilation)})")
    if o % groups:
        raise RuntimeError(f"{op}: out_channels ({o}) must be divisible by groups ({groups})")
    if c != cg * groups:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {cg * groups} channels, but "
                           f"got {c} channels instead")
    _check_conv_operands(x, weight, bias, o, op)
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            # the total d*(k-1) split with the extra element on the right, as PyTorch does
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                    for k, d in zip(kernel, dilation)]
            if not _WARNED["same"] and any(lo != hi for lo, hi in pads):
                _WARNED["same"] = True  # (PyTorch's TORCH_WARN_ONCE)
                warnings.warn("Using padding='same' with even kernel lengths and odd dilation "
                              "may require a zero-padded copy of the input be created",
                              stacklevel=4)
        else:
            raise RuntimeError(f"{op}: Invalid padding string: {padding!r}, should be one of "
                               "['valid', 'same']")
    else:
        pads = [(p, p) for p in _ntuple(padding, nd, "padding", op)]
        if any(p < 0 for p, _ in pads):
            raise RuntimeError(f"{op}: negative padding is not supported (got "
                               f"{[p for p, _ in pads]})")
    out = tuple(_conv_out(sz, k, s, lo, hi, d) for sz, k, s, (lo, hi), d
                in zip(x.shape[2:], kernel, stride, pads, dilation))
    if any(v < 1 for v in out):
        padded = [sz + lo + hi for sz, (lo, hi) in zip(x.shape[2:], pads)]
        eff = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
        raise RuntimeError(f"{op}: Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                           f"actual input size")
    _same_dtypes(x, weight, bias, op)
    if fused and nd <= 2 and x.dtype.is_floating_point:
        if nd == 1:  # a convolution of height one
            y = _fused_conv.conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1,) + stride,
                                   [(0, 0)] + pads, (1,) + dilation, groups, op).squeeze(2)
        else:
            y = _fused_conv.conv2d(x, weight, bias, stride, pads, dilation, groups, op)
        return y.squeeze(0) if unbatched else y
    flat_pad = [v for lo_hi in reversed(pads) for v in lo_hi]
    if any(flat_pad):
        x = pad(x, flat_pad)
    cols = _windows(x, kernel, stride, dilation, out)  # (N, C, K, L)
    k = math.prod(kernel)
    cols = cols.reshape(n, groups, cg * k, math.prod(out))  # (not -1: n or C may be 0)
    # (g, O/g, C/g*K) @ (N, g, C/g*K, L): channel-major, then taps, as weight.reshape orders them
    y = weight.reshape(groups, o // groups, cg * k).matmul(cols).reshape((n, o) + out)
    if bias is not None:
        y = y + bias.reshape((1, o) + (1,) * nd)
    return y.squeeze(0) if unbatched else y


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """Applies a 1D convolution over an input signal composed of several input planes.

    Args:
        input: (minibatch, in_channels, iW) or unbatched (in_channels, iW).
        weight: filters of shape (out_channels, in_channels / groups, kW).
        bias: optional bias of shape (out_channels).
        stride: the stride of the convolving kernel (int or one-element tuple). Default: 1.
        padding: implicit zero padding on both sides: an int, a one-element tuple, ``'valid'``
            (no padding) or ``'same'`` (output as long as the input; stride 1 only). Default: 0.
        dilation: the spacing between kernel elements. Default: 1.
        groups: split input into groups; in_channels must be divisible by it. Default: 1.

    Example:
        >>> F = tg.nn.functional
        >>> F.conv1d(tg.randn(33, 16, 30), tg.randn(20, 16, 5)).shape
        tritongrad.Size([33, 20, 26])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """Applies a 2D convolution over an input image composed of several input planes.

    Args:
        input: (minibatch, in_channels, iH, iW) or unbatched (in_channels, iH, iW).
        weight: filters of shape (out_channels, in_channels / groups, kH, kW).
        bias: optional bias of shape (out_channels).
        stride: the stride of the convolving kernel (int or (sH, sW)). Default: 1.
        padding: implicit zero padding on both sides: an int, (padH, padW), ``'valid'`` or
            ``'same'`` (stride 1 only). Default: 0.
        dilation: the spacing between kernel elements (int or (dH, dW)). Default: 1.
        groups: split input into groups; in_channels must be divisible by it. Default: 1.

    Example:
        >>> F = tg.nn.functional
        >>> F.conv2d(tg.randn(1, 4, 5, 5), tg.randn(8, 4, 3, 3), padding=1).shape
        tritongrad.Size([1, 8, 5, 5])
    """
    return _channels_last_like(
        _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d"), input, weight)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """Applies a 3D convolution over an input image composed of several input planes.

    Arguments as ``conv2d``'s with three spatial dims: input (N, C_in, iD, iH, iW) (or
    unbatched), weight (out_channels, in_channels / groups, kD, kH, kW). Computed as im2col
    (a gather of every window's taps) and one matmul per group; the gradients come through
    them (no fused kernel: the fused convolution primitive is two-dimensional).
    """
    return _channels_last_like(
        _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d"), input, weight,
        rank=5)


def _conv_transpose(input: Tensor, weight: Tensor, bias, stride, padding, output_padding,
                    groups: int, dilation, nd: int, op: str, fused: bool = True) -> Tensor:
    """conv_transpose1d/2d/3d (``nd`` spatial dims): PyTorch's checks, then the fused
    primitive (autograd/ops/conv.py) for floating point tensors of one or two spatial dims
    (unless ``fused`` is False), conv_transpose1d as a transposed convolution of height one;
    else the col2im composite, ``_conv_transpose_cols``.

    In the fused op, output rows past the input's reach (``output_padding`` beyond
    ``padding``: no tap lands there) are zeros appended by ``pad``, with the bias added
    after."""
    checks.tensor_arg(input, op, "input")
    checks.tensor_arg(weight, op, "weight")
    unbatched = input.ndim == nd + 1
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{op}, but got input of size: {list(input.shape)}")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected weight to be {nd + 2}-dimensional (in_channels, "
                           f"out_channels/groups, *kernel_size), but got weight of size "
                           f"{list(weight.shape)}")
    x = input.unsqueeze(0) if unbatched else input
    c_in = weight.shape[0]
    kernel = tuple(weight.shape[2:])
    stride = _ntuple(stride, nd, "stride", op)
    padding = _ntuple(padding, nd, "padding", op)
    output_padding = _ntuple(output_padding, nd, "output_padding", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    if groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported (got groups={groups})")
    if any(v < 1 for v in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (got {list(stride)})")
    if any(v < 1 for v in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero (got {list(dilation)})")
    if any(v < 0 for v in padding):
        raise RuntimeError(f"{op}: negative padding is not supported (got {list(padding)})")
    if any(o < 0 for o in output_padding):
        raise RuntimeError(f"{op}: negative output_padding is not supported (got "
                           f"{list(output_padding)})")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or "
                           f"dilation, but got output_padding {list(output_padding)}, stride "
                           f"{list(stride)} and dilation {list(dilation)}")
    if c_in % groups:
        raise RuntimeError(f"{op}: in_channels ({c_in}) must be divisible by groups ({groups})")
    if x.shape[1] != c_in:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {c_in} channels, but got "
                           f"{x.shape[1]} channels instead")
    _check_conv_operands(x, weight, bias, weight.shape[1] * groups, op, transposed=True)
    size = [(n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, s, p, d, k, o in
            zip(x.shape[2:], stride, padding, dilation, kernel, output_padding)]
    if any(v < 0 for v in size):  # (an empty output is PyTorch's result, not an error)
        given = " x ".join(map(str, x.shape[2:]))
        raise RuntimeError(f"{op}: Given input size per channel: ({given})"
                           f". Calculated output size per channel: "
                           f"({' x '.join(map(str, size))}). Output size is too small")
    bias = _same_dtypes(x, weight, bias, op, transposed=True)
    if not (fused and nd <= 2 and x.dtype.is_floating_point):
        y = _conv_transpose_cols(x, weight, groups, kernel, stride, padding, dilation, size)
        if bias is not None:
            y = y + bias.reshape((1, -1) + (1,) * nd)
        return y.squeeze(0) if unbatched else y
    # the convolution this is the adjoint of pads (p, p - o); rows past p are unreachable
    pads = [(p, max(p - o, 0)) for p, o in zip(padding, output_padding)]
    extra = [max(o - p, 0) for p, o in zip(padding, output_padding)]
    core = [n - e for n, e in zip(size, extra)]
    b = bias if not any(extra) else None
    if nd == 1:
        y = _fused_conv.conv_transpose2d(x.unsqueeze(2), weight.unsqueeze(2), b, (1,) + stride,
                                         [(0, 0)] + pads, (1,) + dilation, groups, [1] + core,
                                         op).squeeze(2)
    else:
        y = _fused_conv.conv_transpose2d(x, weight, b, stride, pads, dilation, groups, core, op)
    if any(extra):
        y = pad(y, [v for e in reversed(extra) for v in (0, e)])
        if bias is not None:
            y = y + bias.reshape((1, -1) + (1,) * nd)
    return y.squeeze(0) if unbatched else y


def _conv_transpose_cols(x: Tensor, weight: Tensor, groups: int, kernel: tuple, stride: tuple,
                         padding: tuple, dilation: tuple, size: list) -> Tensor:
    """The transposed convolution as a composite: one (batched, for groups) matmul gives
    every input position's contribution to its window, (g, O/g*K, C/g) @ (N, g, C/g, L), then
    ``_col2im`` sums the windows into the output (what conv's im2col gathers, scattered)."""
    n, c = x.shape[:2]
    og, k = weight.shape[1], math.prod(kernel)
    length = math.prod(x.shape[2:])  # (not -1: N or C may be 0)
    cols = weight.reshape(groups, c // groups, og * k).transpose(1, 2).matmul(
        x.reshape(n, groups, c // groups, length))
    return _col2im(cols.reshape(n, groups * og, k, length), tuple(size), kernel, stride, padding,
                   dilation, tuple(x.shape[2:]))


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Applies a 1D transposed convolution operator over an input signal composed of several
    input planes, sometimes also called "deconvolution": the adjoint of ``conv1d``.

    Args:
        input: (minibatch, in_channels, iW) or unbatched (in_channels, iW).
        weight: filters of shape (in_channels, out_channels / groups, kW).
        bias: optional bias of shape (out_channels).
        stride, padding, dilation, groups: as the ``conv1d`` this is the adjoint of
            (``dilation * (kernel_size - 1) - padding`` zeros are added to each side).
        output_padding: additional size added to one side of the output shape (smaller
            than stride or dilation). Default: 0.

    Output length: (iW - 1) stride - 2 padding + dilation (kW - 1) + output_padding + 1.
    """
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Applies a 2D transposed convolution operator over an input image composed of several
    input planes, sometimes also called "deconvolution": the adjoint of ``conv2d``.
    Arguments as ``conv_transpose1d``'s, each an int or a pair (height, width); ``weight``
    is (in_channels, out_channels / groups, kH, kW).

    Example:
        >>> F = tg.nn.functional
        >>> F.conv_transpose2d(tg.randn(1, 4, 5, 5), tg.randn(4, 8, 3, 3), stride=2).shape
        tritongrad.Size([1, 8, 11, 11])
    """
    return _channels_last_like(
        _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                        2, "conv_transpose2d"), input, weight)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Applies a 3D transposed convolution operator over an input image composed of several
    input planes, sometimes also called "deconvolution": the adjoint of ``conv3d``.
    Arguments as ``conv_transpose1d``'s, each an int or a triple (depth, height, width);
    input (N, C_in, iD, iH, iW) or unbatched, ``weight`` (in_channels, out_channels / groups,
    kD, kH, kW). Computed as one matmul per group and a col2im (``index_add``) of the
    windows; the gradients come through them (the fused primitive is two-dimensional).

    Example:
        >>> F = tg.nn.functional
        >>> F.conv_transpose3d(tg.randn(1, 4, 3, 4, 5), tg.randn(4, 2, 3, 3, 3), stride=2).shape
        tritongrad.Size([1, 2, 7, 9, 11])
    """
    return _channels_last_like(
        _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                        3, "conv_transpose3d"), input, weight, rank=5)


def _block_params(kernel_size, dilation, padding, stride, op: str):
    """The four 2-d block parameters that unfold and fold share, each checked as a pair (with
    PyTorch's words)."""
    params = tuple(_ntuple(v, 2, name, op) for v, name in
                   ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"),
                    (stride, "stride")))
    for (h, w), what, low in zip(params, ("kernel size", "dilation", "padding", "stride"),
                                 (1, 1, 0, 1)):
        if h < low or w < low:
            name = {"kernel size": "kernel", "padding": "pad"}.get(what, what)
            rule = "be non-negative" if low == 0 else "be greater than zero"
            raise RuntimeError(f"{op}: {what} should {rule}, but got {name}_height: {h} "
                               f"{name}_width: {w}")
    return params


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extracts sliding local blocks from a batched input tensor (im2col).

    (N, C, H, W) -> (N, C * prod(kernel_size), L), L the number of blocks; each column holds
    one block's values, channel-major.
    """
    checks.tensor_arg(input, "unfold")
    _floating_pool(input, "im2col")  # (PyTorch's kernels: floating only)
    if input.ndim < 3:  # (PyTorch's: its size(-3) of the input, out of range)
        n = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {input.ndim}) (unfold: Only 3D or 4D input Tensors are "
                         f"supported, got {input.ndim}D)")
    if input.ndim > 4:
        raise RuntimeError("unfold: Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.ndim}D)")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    kernel, dilation, padding, stride = _block_params(kernel_size, dilation, padding, stride,
                                                      "unfold")
    out = tuple(_conv_out(n, k, s, p, p, d) for n, k, s, p, d
                in zip(x.shape[2:], kernel, stride, padding, dilation))
    if any(v < 1 for v in out):
        raise RuntimeError(f"unfold: the kernel {list(kernel)} (dilation {list(dilation)}) does "
                           f"not fit the padded input of spatial size {list(x.shape[2:])} "
                           f"(padding {list(padding)})")
    # one node saving nothing (linear: its rule is fold, PyTorch's Im2ColBackward0)
    cols = linear_node(Im2ColBackward0, x, _unfold_composite, kernel, dilation, padding, stride,
                       out, transpose=_unfold_t)
    return cols.squeeze(0) if unbatched else cols


def _unfold_composite(x: Tensor, kernel, dilation, padding, stride, out) -> Tensor:
    """im2col of a checked (N, C, H, W) ``x``: (N, C * prod(kernel), L)."""
    if any(padding):
        x = pad(x, (padding[1], padding[1], padding[0], padding[0]))
    cols = _windows(x, kernel, stride, dilation, out)
    return cols.reshape(x.shape[0], x.shape[1] * math.prod(kernel), cols.shape[-1])


def _unfold_t(g: Tensor, shape: tuple, kernel, dilation, padding, stride, out) -> Tensor:
    return _fold_composite(g, tuple(shape[2:]), kernel, dilation, padding, stride, out)


def _fold_composite(x: Tensor, size, kernel, dilation, padding, stride, out) -> Tensor:
    """col2im of a checked (N, C * prod(kernel), L) ``x``: (N, C, *size)."""
    n, ck, length = x.shape
    k = math.prod(kernel)
    return _col2im(x.reshape(n, ck // k, k, length), size, kernel, stride, padding, dilation, out)


def _fold_t(g: Tensor, shape: tuple, size, kernel, dilation, padding, stride, out) -> Tensor:
    return _unfold_composite(g, kernel, dilation, padding, stride, out)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Combines an array of sliding local blocks into a large containing tensor (col2im, the
    adjoint of ``unfold``): (N, C * prod(kernel_size), L) -> (N, C, *output_size), the
    values of overlapping blocks summed."""
    checks.tensor_arg(input, "fold")
    _floating_pool(input, "col2im")
    if input.ndim not in (2, 3):
        raise RuntimeError("fold: Input Error: Only unbatched (2D) or batched (3D) input Tensors "
                           f"are supported (got {input.ndim}D)")
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    size = _ntuple(output_size, 2, "output_size", "fold")
    kernel, dilation, padding, stride = _block_params(kernel_size, dilation, padding, stride,
                                                      "fold")
    k = math.prod(kernel)
    n, ck, length = x.shape
    if ck % k:
        raise RuntimeError("fold: Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={ck} and "
                           f"kernel_size={kernel}")
    out = tuple(_conv_out(s, kk, st, p, p, d) for s, kk, st, p, d
                in zip(size, kernel, stride, padding, dilation))
    if math.prod(out) != length:
        raise RuntimeError(f"fold: Given output_size={size}, kernel_size={kernel}, dilation="
                           f"{dilation}, padding={padding}, stride={stride}, expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {out[0]} * {out[1]} = {math.prod(out)}, but got "
                           f"input.size(2)={length}.")
    # one node saving nothing (linear: its rule is unfold, PyTorch's Col2ImBackward0)
    y = linear_node(Col2ImBackward0, x, _fold_composite, tuple(size), kernel, dilation, padding,
                    stride, out, transpose=_fold_t)
    return y.squeeze(0) if unbatched else y


# -- pooling -------------------------------------------------------------------------------------

def _one_op_to_autocast(fn):
    """``fn`` run with autocast off for its input's device type: to autocast, a pool is one
    op that runs in its input's dtype (PyTorch's kernel; a policy listed at the pool's entry
    in nn.functional applies before), so the sums and matmuls it is made of are not cast.
    ``fn``'s last positional argument is the op's name (for a non-tensor input's error)."""
    @functools.wraps(fn)
    def run(input: Tensor, *args, **kwargs):
        device_type = checks.tensor_arg(input, args[-1]).device.type
        if not _autocast_enabled(device_type):
            return fn(input, *args, **kwargs)
        with _autocast(device_type, enabled=False):
            return fn(input, *args, **kwargs)
    return run


def _pool_out(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: with ``ceil_mode`` the last window may start in the
    right padding but not past it."""
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


_COUNTS = {2: "two", 3: "three"}


def _pool_length_error(v: tuple, nd: int, arg: str, op: str) -> str:
    # PyTorch's words: avg_pool3d's say "must be", the others "must either be"
    either = "" if op == "avg_pool3d" else "either "
    what = {"stride": "omitted, a single int"}.get(arg, "a single int")
    verb = "must be either" if arg == "dilation" else f"must {either}be"
    return f"{op}: {arg} {verb} {what}, or a tuple of {_COUNTS[nd]} ints (got {list(v)})"


def _pool_tuple(v, nd: int, arg: str, op: str) -> tuple:
    """A 2-D or 3-D pool's ``arg``: an int, or one (or ``nd``) ints, with PyTorch's pool words
    for another length."""
    return _ntuple(v, nd, arg, op, _pool_length_error)


def _pool_setup(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
                op: str, dilated: bool, nd: int = 2, fits: bool = False):
    """Checks an ``nd``-dim pool's arguments; returns (x batched, unbatched, kernel, stride,
    padding, dilation, out, pad right extra per dim). ``dilated`` picks PyTorch's wording of
    the padding error; ``fits``: the unpadded input must hold a kernel (avg_pool3d's check)."""
    _check_pool_input(input, nd, op)
    unbatched = input.ndim == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    kernel = _pool_tuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None or (not isinstance(stride, int) and not len(stride)) \
        else _pool_tuple(stride, nd, "stride", op)
    padding = _pool_tuple(padding, nd, "padding", op)
    dilation = _pool_tuple(dilation, nd, "dilation", op)
    names = "THW"[-nd:]  # PyTorch's words (a zero kernel named first, not its stride: a
    # deliberate difference, PyTorch's default stride (the kernel) makes it "stride should
    # not be zero" for a zero kernel_size)
    if any(k < 1 for k in kernel):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got "
                           + " ".join(f"k{a}: {k}" for a, k in zip(names, kernel)))
    if any(s == 0 for s in stride):
        raise RuntimeError(f"{op}: stride should not be zero, but got stride={list(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got "
                           + " ".join(f"d{a}: {s}" for a, s in zip(names, stride)))
    if any(d < 1 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got "
                           + " ".join(f"dilation{a}: {d}" for a, d in zip(names, dilation)))
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0:
            raise RuntimeError(f"{op}: pad must be non-negative, but got pad: {p}")
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(  # PyTorch's two wordings: max pooling has a dilation
                f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}" if dilated else
                f"{op}: pad should be at most half of kernel size, but got pad={p} and "
                f"kernel_size={k}")
    sizes = tuple(x.shape[2:])
    if fits and any(n < k for n, k in zip(sizes, kernel)):
        image = " ".join(f"{a}: {n}" for a, n in zip(names, sizes))
        raise RuntimeError(f"{op}: input image ({image}) "
                           f"smaller than kernel size "
                           f"({' '.join(f'k{a}: {k}' for a, k in zip(names, kernel))})")
    out = tuple(_pool_out(n, k, s, p, d, ceil_mode) for n, k, s, p, d
                in zip(sizes, kernel, stride, padding, dilation))
    if any(o < 1 for o in out):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). "
                           f"Calculated output size: ({'x'.join(map(str, (x.shape[1],) + out))})"
                           f". Output size is too small")
    # with ceil_mode the last window can reach past the right padding: pad that far too
    extra = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - (n + 2 * p)) for n, k, s, p, d, o
                  in zip(sizes, kernel, stride, padding, dilation, out))
    return x, unbatched, kernel, stride, padding, dilation, out, extra


def _check_pool_input(input: Tensor, nd: int, op: str) -> None:
    """PyTorch's errors for a max or average pool's input of another rank, or empty along a
    dim other than the batch's (its 2-D and 3-D kernels word them differently)."""
    ndim = checks.tensor_arg(input, op).ndim
    if ndim in (nd + 1, nd + 2) and 0 not in tuple(input.shape[-(nd + 1):]):
        return
    shape = list(input.shape)
    if nd == 2 and (ndim in (3, 4) or op == "avg_pool2d" and ndim > 4):
        raise RuntimeError(f"{op}: Expected 3D or 4D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{shape}")
    if ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor "
                           f"expected for input, but got input of size: {shape}")
    dim = next(d for d in range(ndim - nd - 1, ndim) if shape[d] == 0)
    raise RuntimeError(f"{op}(): Expected input's non-batch dimensions to have positive length, "
                       f"but input has a shape of {shape} and non-batch dimension {dim} has "
                       f"length zero!")


def _pad_nd(x: Tensor, padding: tuple, extra: tuple, value: float) -> Tensor:
    """``padding`` on both sides of each spatial dim and ``extra`` more on the right."""
    flat = [v for p, e in zip(reversed(padding), reversed(extra)) for v in (p, p + e)]
    return pad(x, flat, value=value) if any(flat) else x


def _max_pool(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
              return_indices: bool, nd: int, op: str):
    """max_pool1d/2d/3d: on the CPU one fused node; elsewhere im2col on the -inf padded input
    and one ``max`` over the taps; indices are flat positions in each input plane (volume for
    3-D). A window holding NaNs: the CPU points at its last NaN (PyTorch's kernels), the
    composite at its first."""
    x, unbatched, kernel, stride, padding, dilation, out, extra = _pool_setup(
        input, kernel_size, stride, padding, dilation, ceil_mode, op, True, nd)
    if x.dtype.name == "bool":  # (integers are pooled, as PyTorch's CPU kernels do)
        raise checks.kernel_not_implemented(op, x.dtype)
    if x.device.type == "cpu" and x.dtype.is_floating_point:  # one node (autograd/ops/pooling)
        values, indices = max_pool_with_indices(x, kernel, stride, padding, dilation, out)
        if unbatched:
            values, indices = values.squeeze(0), indices.squeeze(0)
        return (values, indices) if return_indices else values
    xp = _pad_nd(x, padding, extra, -math.inf)
    taps = _windows(xp, kernel, stride, dilation, out)  # (N, C, K, L)
    values, arg = taps.max(dim=2)
    values = values.reshape(tuple(x.shape[:2]) + out)
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    # tap positions in the padded grid, mapped back to flat positions in the unpadded input
    idx = _window_index(tuple(xp.shape[2:]), kernel, stride, dilation, out)
    plane = np.zeros_like(idx)
    for c, p, n in zip(np.unravel_index(idx, tuple(xp.shape[2:])), padding, x.shape[2:]):
        plane = plane * n + (c - p)
    plane_t = _tensor(plane, device=x.device).expand(tuple(x.shape[:2]) + plane.shape)
    indices = plane_t.gather(2, arg.unsqueeze(2)).reshape(tuple(x.shape[:2]) + out)
    return values, indices.squeeze(0) if unbatched else indices


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Applies a 2D max pooling over an input signal composed of several input planes.

    Args:
        kernel_size: size of the pooling region (int or (kH, kW)).
        stride: stride of the pooling operation. Default: ``kernel_size``.
        padding: implicit negative infinity padding on both sides; at most half the effective
            kernel size. Default: 0.
        dilation: the stride between elements within a sliding window. Default: 1.
        ceil_mode: use ceil instead of floor to compute the output shape (a window may start
            in the right padding). Default: False.
        return_indices: also return the argmax positions, as flat indices into each input
            plane (H * W). Default: False.

    The gradient goes to the first maximum of each window, as PyTorch's kernel sends it.
    """
    return _channels_last_like(_max_pool(input, kernel_size, stride, padding, dilation,
                                         ceil_mode, return_indices, 2, "max_pool2d"), input)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Applies a 3D max pooling over an input signal composed of several input planes.

    Arguments as ``max_pool2d``'s, each an int or a triple (kT, kH, kW); input (N, C, D, H, W)
    or unbatched (C, D, H, W). ``return_indices`` gives flat indices into each input volume
    (D * H * W).

    Example:
        >>> F = tg.nn.functional
        >>> F.max_pool3d(tg.randn(2, 3, 8, 9, 10), 3, stride=2, padding=1).shape
        tritongrad.Size([2, 3, 4, 5, 5])
    """
    return _channels_last_like(_max_pool(input, kernel_size, stride, padding, dilation,
                                         ceil_mode, return_indices, 3, "max_pool3d"), input,
                               rank=5)


@_one_op_to_autocast
def _avg_pool(input: Tensor, kernel_size, stride, padding, ceil_mode: bool,
              count_include_pad: bool, divisor_override, nd: int, op: str, *,
              fused: bool = True) -> Tensor:
    """avg_pool1d/2d/3d: on the CPU one node (autograd/ops/pooling.py) for floating inputs;
    elsewhere (or not ``fused``: the pool benchmark's comparison) im2col on the zero padded
    input, a sum over the taps divided by a per-position divisor (kernels/numpy/pool.py's
    ``avg_divisor``, computed on the host)."""
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    # PyTorch's avg_pool3d words the padding error as max pooling does, and wants the
    # unpadded input to hold a kernel
    x, unbatched, kernel, stride, padding, _, out, extra = _pool_setup(
        input, kernel_size, stride, padding, 1, ceil_mode, op, nd == 3, nd, fits=nd == 3)
    if x.dtype.name == "bool":  # (integers are averaged, as PyTorch's CPU kernels do)
        raise checks.kernel_not_implemented(_KERNELS.get(op, op), x.dtype)
    if fused and x.device.type == "cpu" and x.dtype.is_floating_point:  # one node
        y = avg_pool_node(x, kernel, stride, padding, out, count_include_pad, divisor_override)
        return y.squeeze(0) if unbatched else y
    xp = _pad_nd(x, padding, extra, 0.0)
    sums = _windows(xp, kernel, stride, (1,) * nd, out).sum(2).reshape(tuple(x.shape[:2]) + out)
    if divisor_override is not None:
        divisor = divisor_override
    else:
        divisor = _tensor(avg_divisor(tuple(x.shape[2:]), kernel, stride, padding, out,
                                      count_include_pad, None), dtype=x.dtype, device=x.device)
    # integers keep their dtype, the mean truncated toward zero (PyTorch's CPU kernels)
    y = (sums / divisor if x.dtype.is_floating_point else
         sums.div(divisor, rounding_mode="trunc"))
    return y.squeeze(0) if unbatched else y


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Applies 2D average-pooling operation in kH x kW regions by step size sH x sW steps.

    Args:
        kernel_size: size of the pooling region (int or (kH, kW)).
        stride: stride of the pooling operation. Default: ``kernel_size``.
        padding: implicit zero padding on both sides; at most half the kernel size. Default: 0.
        ceil_mode: use ceil instead of floor to compute the output shape. Default: False.
        count_include_pad: include the zero-padding in the averaging calculation. Default:
            True.
        divisor_override: if specified, it will be used as divisor, otherwise the size of the
            pooling region will be used. Default: None.
    """
    return _channels_last_like(_avg_pool(input, kernel_size, stride, padding, ceil_mode,
                                         count_include_pad, divisor_override, 2, "avg_pool2d"),
                               input)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Applies 3D average-pooling operation in kT x kH x kW regions by step size sT x sH x sW
    steps.

    Arguments as ``avg_pool2d``'s, each an int or a triple (kT, kH, kW); input (N, C, D, H, W)
    or unbatched (C, D, H, W). As PyTorch's, the unpadded input must be at least the kernel
    size along each dim.
    """
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 3, "avg_pool3d")


# the kernels PyTorch's dtype errors name, where not the op's own name
_KERNELS = {"adaptive_max_pool1d": "adaptive_max_pool2d", "avg_pool1d": "avg_pool2d",
            "adaptive_max_pool3d": "adaptive_max_pool3d_cpu", "avg_pool3d": "avg_pool3d_out_frame",
            "adaptive_avg_pool3d": "adaptive_avg_pool3d_cpu"}


def _floating_pool(input: Tensor, op: str) -> None:
    """PyTorch's adaptive pools (and max_pool1d without indices) have floating kernels only."""
    if not input.dtype.is_floating_point:
        raise checks.kernel_not_implemented(_KERNELS.get(op, op), input.dtype)


def _adaptive_matrix(n: int, o: int) -> np.ndarray:
    """(o, n): row i averages input positions [floor(i n / o), ceil((i + 1) n / o))."""
    m = np.zeros((o, n))
    for i in range(o):
        lo, hi = (i * n) // o, -((-(i + 1) * n) // o)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def _check_adaptive_input(input: Tensor, nd: int, op: str) -> None:
    """PyTorch's errors for an adaptive pool's input of another rank, or empty along a dim
    other than the batch's."""
    ndim = checks.tensor_arg(input, op).ndim
    shape = list(input.shape)
    if ndim not in (nd + 1, nd + 2):
        if nd == 1:  # (PyTorch's 1-D pools check the rank as an argument)
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {ndim}-dimensional tensor "
                               f"for argument #1 'self' (while checking arguments for {op})")
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {shape}")
    for d in range(ndim - nd - 1, ndim):
        if shape[d] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {shape} with dimension {d} "
                               f"being empty")


def _output_size(output_size, lead: tuple, sizes: tuple, op: str) -> tuple:
    """An adaptive pool's ``output_size`` (an int, or one entry per pooled dim, None keeping
    the input's size) for an input of spatial ``sizes`` after dims ``lead``."""
    nd = len(sizes)
    if isinstance(output_size, int) or hasattr(output_size, "__index__") \
            and not hasattr(output_size, "__len__"):  # (an int, a NumPy integer)
        want = (operator.index(output_size),) * nd
    elif isinstance(output_size, (str, float)) or not hasattr(output_size, "__iter__"):
        raise TypeError(f"{op}(): argument 'output_size' (position 2) must be tuple of ints, "
                        f"not {type(output_size).__name__}")
    else:
        want = tuple(output_size)
        for i, o in enumerate(want):
            if o is not None and (isinstance(o, (bool, float)) or not hasattr(o, "__index__")):
                raise TypeError(f"{op}(): argument 'output_size' (position 2) must be tuple of "
                                f"ints, but found element of type {type(o).__name__} at pos {i}")
    if len(want) != nd:
        raise RuntimeError(f"{op}: output_size must be {nd}, got {list(want)}")
    out = tuple(n if o is None else int(o) for n, o in zip(sizes, want))
    if any(o < 0 for o in out):
        if "max" in op:  # (PyTorch's adaptive max pools check nothing: their empty() fails)
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension "
                               f"{min(out)}: {list(lead + out)}")
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(out)}")
    return out


@_one_op_to_autocast
def _adaptive_avg(input: Tensor, output_size, nd: int, op: str) -> Tensor:
    """adaptive_avg_pool2d/3d: one matmul with an averaging matrix per pooled dim (the
    windows differ in size); the last dim as ``x @ A^T``, the others as ``A @ x`` over the
    dims after them flattened."""
    _check_adaptive_input(input, nd, op)
    _floating_pool(input, op)
    out = _output_size(output_size, tuple(input.shape[:-nd]), tuple(input.shape[-nd:]), op)
    # one node saving nothing, as the op is linear (PyTorch's saves the input): the matmuls
    # recorded one by one kept each intermediate and averaging matrix
    node = AdaptiveAvgPool2DBackward0 if nd == 2 else AdaptiveAvgPool3DBackward0
    return linear_node(node, input, _adaptive_avg_composite, out, transpose=_adaptive_avg_t)


def _adaptive_avg_composite(input: Tensor, out: tuple) -> Tensor:
    """The adaptive average pool of ``input`` to ``out`` over its last ``len(out)`` dims."""
    nd = len(out)
    sizes = tuple(input.shape[-nd:])
    if all(o == 1 for o in out):  # the global average pool: one mean (10x the matmuls' speed)
        return input.mean(tuple(range(-nd, 0)), keepdim=True)
    y = input
    for d, (n, o) in enumerate(zip(sizes, out)):
        m = _adaptive_matrix(n, o)
        if d == nd - 1:
            y = y.matmul(_tensor(m.T, dtype=input.dtype, device=input.device))
            continue
        axis = y.ndim - nd + d
        lead, rest = tuple(y.shape[:axis]), tuple(y.shape[axis + 1:])
        y = _tensor(m, dtype=input.dtype, device=input.device).matmul(
            y.reshape(lead + (n, math.prod(rest)))).reshape(lead + (o,) + rest)
    return y


def _adaptive_avg_t(g: Tensor, shape: tuple, out: tuple) -> Tensor:
    """The transpose of ``_adaptive_avg_composite`` (its vjp) applied to ``g``: the averaging
    matrices transposed, applied in the reverse order."""
    nd = len(out)
    sizes = tuple(shape[-nd:])
    if all(o == 1 for o in out):
        return (g / math.prod(sizes)).expand(shape)
    for d in reversed(range(nd)):
        n, o = sizes[d], out[d]
        m = _tensor(_adaptive_matrix(n, o), dtype=g.dtype, device=g.device)
        if d == nd - 1:
            g = g.matmul(m)
            continue
        axis = g.ndim - nd + d
        lead, rest = tuple(g.shape[:axis]), tuple(g.shape[axis + 1:])
        g = m.t().matmul(g.reshape(lead + (o, math.prod(rest)))).reshape(lead + (n,) + rest)
    return g


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Applies a 2D adaptive average pooling over an input signal composed of several input
    planes: output (*, oH, oW) for any input size; ``output_size`` is an int, or a pair whose
    None entries keep the input's size.

    Window i along a dim of size n covers [floor(i n / o), ceil((i + 1) n / o)): windows
    differ in size, so the pool is two matmuls with averaging matrices."""
    return _channels_last_like(_adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d"),
                               input)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Applies a 3D adaptive average pooling over an input signal composed of several input
    planes: output (*, oD, oH, oW) for any input size; ``output_size`` is an int, or a triple
    whose None entries keep the input's size (windows as ``adaptive_avg_pool2d``'s)."""
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


# -- one-dimensional pools: the 2-D ones over a plane of height one ------------------------------

def _as_plane(input: Tensor, op: str) -> Tensor:
    ndim = checks.tensor_arg(input, op).ndim
    if ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {ndim}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for {op})")
    return input.unsqueeze(-2)


def _one_int(v, name: str, op: str) -> int:
    """A 1-D pool's argument ``name``: an int or one int, in PyTorch's words otherwise."""
    v = _ints(v, name, op)
    if len(v) == 1:
        return v[0]
    if op == "max_pool1d":
        what = {"stride": "None, an int, list of ints, or tuple of ints",
                "padding": "an int, list of ints, or tuple of ints"}.get(
                    name, "an int, list of ints or tuple of ints")
        raise RuntimeError(f"max_pool1d() {name} must be {what} of size 1 but got size {len(v)}")
    raise RuntimeError(f"{op}() argument '{name}' should contain one int (got {len(v)})")


def _one(v, op: str, name: str):
    return v if v is None else (1, _one_int(v, name, op))


def _check_max_pool1d(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
                      return_indices: bool) -> None:
    """PyTorch's max_pool1d checks, in its words (the 2-D pool it runs as would name a
    plane's height and width). With ``return_indices`` PyTorch runs the 2-D pool, whose
    checks of the padding and the output size are left to it."""
    op = "max_pool1d"
    ndim = checks.tensor_arg(input, op).ndim
    if ndim not in (2, 3) or 0 in tuple(input.shape[-2:]):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(input.shape)}")
    k = _one_int(kernel_size, "kernel_size", op)
    s = k if stride is None else _one_int(stride, "stride", op)
    p = _one_int(padding, "padding", op)
    d = _one_int(dilation, "dilation", op)
    for name, v in (("kernel_size", k), ("stride", s)):
        if v < 1:
            raise RuntimeError(f"max_pool1d() {name} must be greater than zero, but got {v}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if return_indices:
        if d < 1:
            raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
        return
    if p > k // 2:  # (its kernel's rule: the kernel size, not the dilated one; "pad", not
        # PyTorch's "padding", the word tests/nn/test_functional_parity32.py matches)
        raise RuntimeError(f"max_pool1d: pad should be at most half of kernel size, but got "
                           f"padding={p} and kernel_size={k}")
    if d < 1:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    o = _pool_out(input.shape[-1], k, s, p, d, ceil_mode)
    if o < 1:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {o}")
    _floating_pool(input, "max_pool1d_impl")  # (PyTorch's 1-D kernel without indices)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Applies a 1D max pooling over an input signal composed of several input planes
    (``max_pool2d``'s arguments, one value each; indices are positions along the signal)."""
    stride = None if stride is None or (not isinstance(stride, int) and not len(stride)) else stride
    _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    # max_pool2d's computation over (N, C, 1, L), its errors naming max_pool1d
    r = _max_pool(input.unsqueeze(-2), _one(kernel_size, "max_pool1d", "kernel_size"),
                  _one(stride, "max_pool1d", "stride"),
                  (0, _one_int(padding, "padding", "max_pool1d")),
                  _one(dilation, "max_pool1d", "dilation"), ceil_mode, return_indices, 2,
                  "max_pool1d")
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Applies a 1D average pooling over an input signal composed of several input planes
    (``avg_pool2d``'s arguments, one value each)."""
    stride = None if stride is None or (not isinstance(stride, int) and not len(stride)) else stride
    return _avg_pool(_as_plane(input, "avg_pool1d"), _one(kernel_size, "avg_pool1d",
                                                          "kernel_size"),
                     _one(stride, "avg_pool1d", "stride"),
                     (0, _one_int(padding, "padding", "avg_pool1d")), ceil_mode,
                     count_include_pad, None, 2, "avg_pool1d").squeeze(-2)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Applies a 1D adaptive average pooling over an input signal composed of several input
    planes: output (*, L_out) for any input length."""
    o = _one_int(output_size, "output_size", "adaptive_avg_pool1d")
    return adaptive_avg_pool2d(_as_plane(input, "adaptive_avg_pool1d"), (1, o)).squeeze(-2)


def _adaptive_windows(n: int, o: int) -> tuple[np.ndarray, np.ndarray]:
    """(o, L) input positions of each adaptive window (the longest has L; shorter ones repeat
    their last position) and (o, L) whether each position is the window's own."""
    starts = [(i * n) // o for i in range(o)]
    ends = [-((-(i + 1) * n) // o) for i in range(o)]
    if not o:  # an empty output: no windows
        return np.zeros((0, 1), np.int64), np.zeros((0, 1), bool)
    length = max(e - b for b, e in zip(starts, ends))
    pos = np.array([[min(b + j, e - 1) for j in range(length)] for b, e in zip(starts, ends)])
    own = np.array([[b + j < e for j in range(length)] for b, e in zip(starts, ends)])
    return pos.astype(np.int64), own


def _adaptive_max(input: Tensor, output_size, nd: int, return_indices: bool, op: str):
    """Adaptive max pooling over the last ``nd`` dims: each window gathered into a padded
    block (positions past a short window repeat its last one, so they never change the
    maximum, nor which position is the last NaN), then one max, each window holding a NaN
    pointing at its last one (``_last_nan``); indices are flat positions in the pooled plane
    (volume)."""
    _check_adaptive_input(input, nd, op)
    _floating_pool(input, op)
    sizes = tuple(input.shape[-nd:])
    lead = tuple(input.shape[:-nd])
    out = _output_size(output_size, lead, sizes, op)
    x, flat = input, np.zeros((1,) * (2 * nd), dtype=np.int64)
    for d, (n, o) in enumerate(zip(sizes, out)):
        pos, _ = _adaptive_windows(n, o)
        axis = len(lead) + 2 * d  # dims so far: lead, then (o, L) per pooled dim
        x = x.index_select(axis, _tensor(pos.reshape(-1), device=x.device))
        x = x.reshape(tuple(x.shape[:axis]) + pos.shape + tuple(x.shape[axis + 1:]))
        shape = [1] * (2 * nd)
        shape[2 * d:2 * d + 2] = pos.shape
        flat = flat * n + pos.reshape(shape)
    # (lead, o1, L1, o2, L2, ..) -> (lead, o1, o2, .., L1 * L2 * ..)
    order = (tuple(range(len(lead))) + tuple(len(lead) + 2 * d for d in range(nd))
             + tuple(len(lead) + 2 * d + 1 for d in range(nd)))
    window = math.prod(x.shape[len(lead) + 2 * d + 1] for d in range(nd))  # (not -1: empty)
    x = x.permute(order).reshape(lead + out + (window,))
    values, arg = x.max(dim=-1)
    if _holds_nan(x, values):  # PyTorch's pick: the last NaN (``_last_nan``)
        arg = _last_nan(x, arg)
        values = x.gather(-1, arg.unsqueeze(-1)).squeeze(-1)  # (its gradient goes to ``arg``)
    if not return_indices:
        return values
    flat = np.transpose(flat, tuple(range(0, 2 * nd, 2)) + tuple(range(1, 2 * nd, 2)))
    table = _tensor(flat.reshape(out + (window,)), device=input.device).expand(
        lead + out + (window,))
    return values, table.gather(-1, arg.unsqueeze(-1)).squeeze(-1)


def _holds_nan(x: Tensor, values: Tensor) -> bool:
    """Whether a window of ``x`` (its last dim) may hold a NaN, given its maxima ``values``:
    on the CPU a look at them (a NaN maximum is a window with one); elsewhere True for
    floating tensors, so no device sync is added."""
    if not x.dtype.is_floating_point or not values.numel():
        return False
    if x.device.type != "cpu":
        return True
    with _no_grad():
        return bool(values.isnan().any())


def _last_nan(x: Tensor, arg: Tensor) -> Tensor:
    """``arg`` (each window's first maximum, ``max``'s pick) with each window of ``x`` (its
    last dim) holding NaNs pointing at its last NaN instead, as PyTorch's adaptive max pools
    (their kernels keep ``val > max || isnan(val)``): the largest (tap + 1) among NaN taps,
    0 where there is none."""
    with _no_grad():
        taps = _tensor(np.arange(1, x.shape[-1] + 1), device=x.device)
        last = (x.detach().isnan() * taps).amax(-1)
        return arg.where(last == 0, last - 1)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Applies a 2D adaptive max pooling over an input signal composed of several input
    planes (windows as ``adaptive_avg_pool2d``'s); indices are flat positions in each plane."""
    return _channels_last_like(
        _adaptive_max(input, output_size, 2, return_indices, "adaptive_max_pool2d"), input)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Applies a 3D adaptive max pooling over an input signal composed of several input
    planes (windows as ``adaptive_avg_pool3d``'s); indices are flat positions in each input
    volume (D * H * W)."""
    return _adaptive_max(input, output_size, 3, return_indices, "adaptive_max_pool3d")


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Applies a 1D adaptive max pooling over an input signal composed of several input
    planes."""
    o = _one_int(output_size, "output_size", "adaptive_max_pool1d")
    return _adaptive_max(input, (o,), 1, return_indices, "adaptive_max_pool1d")


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """Applies a 1-dimensional sequence convolution over an input sequence. Input and output
    dimensions are (Time, Batch, Channels) - hence TBC.

    Args:
        input: (sequence length, batch, in_channels).
        weight: filter of shape (kernel width, in_channels, out_channels).
        bias: (out_channels).
        pad: number of timesteps to pad on both ends (a negative one crops). Default: 0.

    Returns:
        (sequence length + 2 pad - kernel width + 1, batch, out_channels): ``conv1d`` over
        the time axis, with the weight read as (out_channels, in_channels, kernel width).
    """
    for name, t in (("input", input), ("weight", weight), ("bias", bias)):
        checks.tensor_arg(t, "conv_tbc", name)
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    pad = int(pad)
    length = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if length < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {length}: "
                           f"[{length}, {input.shape[1]}, {weight.shape[2]}]")
    x = input.permute(1, 2, 0)  # (B, C_in, T)
    if pad < 0:  # (conv1d takes no negative padding: the crop first)
        x, pad = x.narrow(2, -pad, input.shape[0] + 2 * pad), 0
    y = conv1d(x, weight.permute(2, 1, 0), bias, padding=pad)
    return y.permute(2, 0, 1).contiguous()  # (PyTorch's result is contiguous)
