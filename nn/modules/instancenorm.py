"""``torch.nn.modules.instancenorm``'s import path: the instance norms.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..normalization import _InstanceNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from ..lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
