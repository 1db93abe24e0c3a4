"""Pooling layers over their functionals (composites, nn/_convolution.py, nn/_unpool.py,
nn/_fractional_pool.py): MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d,
AdaptiveMaxPool1d/2d/3d, MaxUnpool1d/2d/3d, LPPool1d/2d/3d, FractionalMaxPool2d/3d. Each
family shares one module class; its members name their functional (``_functional``)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import _fractional_pool, _unpool
from . import functional as F
from ._convolution import _ntuple
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


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


class _MaxUnpoolNd(Module):
    """Shared by MaxUnpool1d/2d/3d: the partial inverse of the max pool with the same
    ``kernel_size``, ``stride`` (default ``kernel_size``) and ``padding``.
    ``forward(input, indices, output_size=None)``."""

    _nd = 0
    _functional = None

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = _ntuple(kernel_size, self._nd, "kernel_size", name)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._nd,
                              "stride", name)
        self.padding = _ntuple(padding, self._nd, "padding", name)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return type(self)._functional(input, indices, self.kernel_size, self.stride,
                                      self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Computes a partial inverse of ``MaxPool1d`` (``F.max_unpool1d``): (N, C, L_in) or
    (C, L_in) -> length (L_in - 1) stride - 2 padding + kernel_size, or ``output_size``."""

    _nd = 1
    _functional = staticmethod(_unpool.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """Computes a partial inverse of ``MaxPool2d``: the maxima at their indices, zeros
    elsewhere (``F.max_unpool2d``).

    Example:
        >>> pool, unpool = tg.nn.MaxPool2d(2, return_indices=True), tg.nn.MaxUnpool2d(2)
        >>> out, idx = pool(tg.randn(1, 1, 5, 5))
        >>> unpool(out, idx, output_size=(5, 5)).shape
        tritongrad.Size([1, 1, 5, 5])
    """

    _nd = 2
    _functional = staticmethod(_unpool.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """Computes a partial inverse of ``MaxPool3d`` (``F.max_unpool3d``)."""

    _nd = 3
    _functional = staticmethod(_unpool.max_unpool3d)


class _LPPoolNd(Module):
    """Shared by LPPool1d/2d/3d: ``(sum over the window of x^p)^(1/p)``, p = ``norm_type``."""

    _functional = None

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._functional(input, float(self.norm_type), self.kernel_size,
                                      self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Applies a 1D power-average pooling over an input signal composed of several input
    planes (``F.lp_pool1d``)."""

    _functional = staticmethod(_unpool.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Applies a 2D power-average pooling over an input signal composed of several input
    planes (``F.lp_pool2d``): p = 1 is sum pooling, p = inf max pooling in the limit.

    Example:
        >>> tg.nn.LPPool2d(2, 3, stride=2)(tg.randn(20, 16, 50, 32)).shape
        tritongrad.Size([20, 16, 24, 15])
    """

    _functional = staticmethod(_unpool.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Applies a 3D power-average pooling over an input signal composed of several input
    planes (``F.lp_pool3d``)."""

    _functional = staticmethod(_unpool.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    """Shared by FractionalMaxPool2d/3d: exactly one of ``output_size`` and ``output_ratio``
    (each ratio in (0, 1)); ``_random_samples`` (a buffer) fixes the windows' placement."""

    _nd = 0
    _functional = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = _ntuple(kernel_size, self._nd, "kernel_size", name)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else _ntuple(
            output_size, self._nd, "output_size", name)
        self.output_ratio = None
        if output_ratio is not None:
            self.output_ratio = ((output_ratio,) * self._nd
                                 if isinstance(output_ratio, (int, float))
                                 else tuple(output_ratio))
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        return type(self)._functional(input, self.kernel_size, self.output_size,
                                      self.output_ratio, self.return_indices,
                                      _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Applies a 2D fractional max pooling over an input signal composed of several input
    planes (``F.fractional_max_pool2d``; Graham, 2014).

    Example:
        >>> m = tg.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
        >>> m(tg.randn(20, 16, 50, 32)).shape
        tritongrad.Size([20, 16, 25, 16])
    """

    _nd = 2
    _functional = staticmethod(_fractional_pool.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Applies a 3D fractional max pooling over an input signal composed of several input
    planes (``F.fractional_max_pool3d``)."""

    _nd = 3
    _functional = staticmethod(_fractional_pool.fractional_max_pool3d)
