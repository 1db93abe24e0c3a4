"""``torch.nn.modules.upsampling``'s import path: the upsampling layers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from .._sampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
