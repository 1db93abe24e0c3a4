"""``torch.nn.modules.conv``'s import path: the convolutions and their bases.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..conv import (_ConvNd, _ConvTransposeNd, Conv1d, Conv2d, Conv3d, ConvTranspose1d,
                     ConvTranspose2d, ConvTranspose3d)
from ..lazy import (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
                     LazyConvTranspose3d)

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d"]
