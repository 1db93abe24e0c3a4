"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d over ``F.conv1d`` ...
``F.conv_transpose3d`` (the fused convolution primitives for 1-D and 2-D, im2col / col2im
composites for 3-D: nn/_convolution.py). Default initialisation is PyTorch's: weight
kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in the weight's
dimension 1 times prod(kernel): in_channels / groups for a convolution, out_channels / groups
for a transposed one."""

from __future__ import annotations

import math

from ..autograd.tensor import Tensor
from . import functional as F
from . import init
from ._convolution import _ntuple
from .module import Module
from .parameter import affine_parameters

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Shared by the convolution layers: ``_nd`` spatial dims, ``_functional`` the op."""

    _nd = 0
    _functional = None
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__()
        nd, name = self._nd, type(self).__name__
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", name)
        self.stride = _ntuple(stride, nd, "stride", name)
        self.dilation = _ntuple(dilation, nd, "dilation", name)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, nd, "padding", name)
        self.groups, self.padding_mode = groups, padding_mode
        # PyTorch's attributes: ``transposed``, ``output_padding`` (zeros for a convolution;
        # the transposed layers set theirs) and the F.pad argument of a non-zeros padding_mode
        self.transposed = self._transposed
        self.output_padding = (0,) * nd
        explicit = self._explicit_padding()
        self._reversed_padding_repeated_twice = (
            explicit if isinstance(padding, str) else tuple(explicit))
        channels = ((in_channels, out_channels // groups) if self._transposed else
                    (out_channels, in_channels // groups))
        affine_parameters(self, channels + self.kernel_size, ("weight",), True, device, dtype)
        affine_parameters(self, (out_channels,), ("bias",), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        init.fan_in_uniform_(self.bias, self.weight.shape[1] * math.prod(self.kernel_size))

    def _explicit_padding(self) -> list:
        """F.pad's argument (last dim first) for a non-zeros ``padding_mode``."""
        if self.padding == "valid":
            return [0] * (2 * self._nd)
        if self.padding == "same":
            out = []
            for k, d in reversed(list(zip(self.kernel_size, self.dilation))):
                total = d * (k - 1)
                out += [total // 2, total - total // 2]
            return out
        return [p for p in reversed(self.padding) for _ in range(2)]

    def forward(self, input: Tensor) -> Tensor:
        conv = type(self)._functional
        if self.padding_mode != "zeros":
            # the border is made by F.pad in that mode, then a convolution without padding
            x = F.pad(input, self._explicit_padding(), mode=self.padding_mode)
            return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                    self.groups)

    def extra_repr(self) -> str:
        nd = self._nd
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """Applies a 1D convolution over an input signal composed of several input planes:
    (N, C_in, L) or (C_in, L) -> (N, C_out, L_out).

    Args:
        in_channels, out_channels: channels in the input and produced by the convolution.
        kernel_size: size of the convolving kernel.
        stride: stride of the convolution. Default: 1.
        padding: padding added to both sides of the input (int, tuple, ``'valid'`` or
            ``'same'``). Default: 0.
        dilation: spacing between kernel elements. Default: 1.
        groups: number of blocked connections from input channels to output channels.
        bias: adds a learnable bias to the output. Default: True.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Example:
        >>> m = tg.nn.Conv1d(16, 33, 3, stride=2)
        >>> m(tg.randn(20, 16, 50)).shape
        tritongrad.Size([20, 33, 24])
    """

    _nd = 1
    _functional = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """Applies a 2D convolution over an input signal composed of several input planes:
    (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out). Arguments as ``Conv1d``'s,
    each an int or a pair (height, width).

    Example:
        >>> m = tg.nn.Conv2d(16, 33, (3, 5), stride=(2, 1), padding=(4, 2))
        >>> m(tg.randn(2, 16, 10, 12)).shape
        tritongrad.Size([2, 33, 8, 12])
    """

    _nd = 2
    _functional = staticmethod(F.conv2d)


class Conv3d(_ConvNd):
    """Applies a 3D convolution over an input signal composed of several input planes:
    (N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out). Arguments as
    ``Conv1d``'s, each an int or a triple (depth, height, width).

    Example:
        >>> m = tg.nn.Conv3d(4, 8, 3, stride=2, padding=1)
        >>> m(tg.randn(2, 4, 8, 10, 12)).shape
        tritongrad.Size([2, 8, 4, 5, 6])
    """

    _nd = 3
    _functional = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """Shared by ConvTranspose1d/2d/3d (weight (in, out / groups, *kernel))."""

    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {name}')
        if isinstance(padding, str):
            raise ValueError(f"{name}: padding must be an int or a tuple, not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)
        self.output_padding = _ntuple(output_padding, self._nd, "output_padding", name)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """``output_padding``, or what makes the output ``output_size`` (PyTorch's check)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        want = tuple(int(v) for v in output_size)[-nd:]
        if len(output_size) not in (nd, nd + 2):  # (not only its last nd: PyTorch's check)
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must "
                             f"have {nd} or {nd + 2} elements (got {len(output_size)})")
        spatial = tuple(input.shape[-nd:])
        lo = [(n - 1) * s - 2 * p + d * (k - 1) + 1 for n, s, p, d, k in
              zip(spatial, self.stride, self.padding, self.dilation, self.kernel_size)]
        hi = [m + s - 1 for m, s in zip(lo, self.stride)]
        if any(not a <= w <= b for w, a, b in zip(want, lo, hi)):
            raise ValueError(f"requested an output size of {list(want)}, but valid sizes range "
                             f"from {lo} to {hi} (for an input of {list(spatial)})")
        return tuple(w - a for w, a in zip(want, lo))

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        return type(self)._functional(input, self.weight, self.bias, self.stride, self.padding,
                                      self._output_padding(input, output_size), self.groups,
                                      self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Applies a 1D transposed convolution operator over an input signal composed of several
    input planes: the adjoint of ``Conv1d`` (its gradient with respect to the input), often
    used to upsample. (N, C_in, L) -> (N, C_out, (L - 1) stride - 2 padding + dilation
    (kernel_size - 1) + output_padding + 1).

    Args:
        in_channels, out_channels, kernel_size, stride, padding, groups, bias, dilation: as
            Conv1d's (``padding`` is the Conv1d's whose adjoint this is).
        output_padding: additional size added to one side of the output (smaller than stride
            or dilation). Default: 0.
        padding_mode: only ``'zeros'``.

    ``forward(input, output_size=None)``: ``output_size`` picks the output_padding that gives
    that size.
    """

    _nd = 1
    _functional = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Applies a 2D transposed convolution operator over an input image composed of several
    input planes: the adjoint of ``Conv2d``. Arguments as ``ConvTranspose1d``'s, each an int
    or a pair (height, width).

    Example:
        >>> up = tg.nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1)
        >>> up(tg.randn(1, 16, 12, 12), output_size=[1, 8, 24, 24]).shape
        tritongrad.Size([1, 8, 24, 24])
    """

    _nd = 2
    _functional = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Applies a 3D transposed convolution operator over an input image composed of several
    input planes: the adjoint of ``Conv3d``. (N, C_in, D, H, W) or (C_in, D, H, W) ->
    (N, C_out, D_out, H_out, W_out). Arguments as ``ConvTranspose1d``'s, each an int or a
    triple (depth, height, width).

    Example:
        >>> up = tg.nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1)
        >>> up(tg.randn(1, 4, 3, 4, 5), output_size=[6, 8, 10]).shape
        tritongrad.Size([1, 2, 6, 8, 10])
    """

    _nd = 3
    _functional = staticmethod(F.conv_transpose3d)
