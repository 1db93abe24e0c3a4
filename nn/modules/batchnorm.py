"""``torch.nn.modules.batchnorm``'s import path: the batch norms and their bases.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..normalization import (_NormBase, _BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d,
                             SyncBatchNorm)
from ..lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm"]
