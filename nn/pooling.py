"""Pooling layers over their functionals (composites, nn/_convolution.py): MaxPool1d/2d/3d,
AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d. Each family shares one
module class; its members name their functional (``_functional``)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "MaxPool1d", "MaxPool2d", "MaxPool3d"]


class _MaxPoolNd(Module):
    """Shared by MaxPool1d/2d/3d."""

    _functional = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor):
        return type(self)._functional(input, self.kernel_size, self.stride, self.padding,
                                      self.dilation, ceil_mode=self.ceil_mode,
                                      return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Applies a 1D max pooling over an input signal composed of several input planes
    (``MaxPool2d``'s arguments, one value each)."""

    _functional = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Applies a 2D max pooling over an input signal composed of several input planes.

    Args:
        kernel_size: the size of the window to take a max over.
        stride: the stride of the window. Default: ``kernel_size``.
        padding: implicit negative infinity padding to be added on both sides.
        dilation: a parameter that controls the stride of elements in the window.
        return_indices: if True, will return the max indices along with the outputs.
        ceil_mode: when True, will use ceil instead of floor to compute the output shape.

    Example:
        >>> m = tg.nn.MaxPool2d(3, stride=2)
        >>> m(tg.randn(20, 16, 50, 32)).shape
        tritongrad.Size([20, 16, 24, 15])
    """

    _functional = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Applies a 3D max pooling over an input signal composed of several input planes:
    (N, C, D, H, W) or (C, D, H, W). Arguments as ``MaxPool2d``'s, each an int or a triple
    (depth, height, width); the indices are flat positions in each input volume (D * H * W).

    Example:
        >>> m = tg.nn.MaxPool3d((3, 2, 2), stride=(2, 1, 2))
        >>> m(tg.randn(20, 16, 50, 44, 31)).shape
        tritongrad.Size([20, 16, 24, 43, 15])
    """

    _functional = staticmethod(F.max_pool3d)


class _AvgPoolNd(Module):
    """Shared by AvgPool2d and AvgPool3d."""

    _functional = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._functional(input, self.kernel_size, self.stride, self.padding,
                                      self.ceil_mode, self.count_include_pad,
                                      self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Applies a 2D average pooling over an input signal composed of several input planes.

    Args:
        kernel_size: the size of the window.
        stride: the stride of the window. Default: ``kernel_size``.
        padding: implicit zero padding to be added on both sides.
        ceil_mode: when True, will use ceil instead of floor to compute the output shape.
        count_include_pad: when True, will include the zero-padding in the averaging.
        divisor_override: if specified, it will be used as divisor, otherwise the size of the
            pooling region will be used.
    """

    _functional = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """Applies a 3D average pooling over an input signal composed of several input planes:
    (N, C, D, H, W) or (C, D, H, W). Arguments as ``AvgPool2d``'s, each an int or a triple
    (depth, height, width).

    Example:
        >>> m = tg.nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False)
        >>> m(tg.randn(2, 4, 8, 9, 10)).shape
        tritongrad.Size([2, 4, 4, 5, 5])
    """

    _functional = staticmethod(F.avg_pool3d)


class AvgPool1d(Module):
    """Applies a 1D average pooling over an input signal composed of several input planes
    (``AvgPool2d``'s arguments, one value each; no divisor_override, as PyTorch's)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()

        def single(v):  # (PyTorch keeps them as 1-tuples)
            return (v,) if isinstance(v, int) else tuple(v)
        self.kernel_size = single(kernel_size)
        self.stride = single(stride if stride is not None else kernel_size)
        self.padding, self.ceil_mode, self.count_include_pad = single(padding), ceil_mode, \
            count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveAvgPoolNd(Module):
    """Shared by AdaptiveAvgPool1d/2d/3d."""

    _functional = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._functional(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Applies a 1D adaptive average pooling over an input signal composed of several input
    planes: output length ``output_size`` for any input length."""

    _functional = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Applies a 2D adaptive average pooling over an input signal composed of several input
    planes: the output is of size H x W, for any input size (``output_size`` an int, or a pair
    whose None entries keep the input's size).

    Example:
        >>> tg.nn.AdaptiveAvgPool2d((5, 7))(tg.randn(1, 64, 8, 9)).shape
        tritongrad.Size([1, 64, 5, 7])
    """

    _functional = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Applies a 3D adaptive average pooling over an input signal composed of several input
    planes: the output is of size D x H x W, for any input size (``output_size`` an int, or a
    triple whose None entries keep the input's size).

    Example:
        >>> tg.nn.AdaptiveAvgPool3d((5, None, 7))(tg.randn(1, 64, 8, 9, 10)).shape
        tritongrad.Size([1, 64, 5, 9, 7])
    """

    _functional = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    """Shared by AdaptiveMaxPool1d/2d/3d (``return_indices``: also the flat positions of the
    maxima in each plane)."""

    _functional = None

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor):
        return type(self)._functional(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Applies a 1D adaptive max pooling over an input signal composed of several input
    planes."""

    _functional = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Applies a 2D adaptive max pooling over an input signal composed of several input
    planes (``return_indices``: also the flat positions of the maxima in each plane)."""

    _functional = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Applies a 3D adaptive max pooling over an input signal composed of several input
    planes (``return_indices``: also the flat positions of the maxima in each volume,
    D * H * W)."""

    _functional = staticmethod(F.adaptive_max_pool3d)
