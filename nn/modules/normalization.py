"""``torch.nn.modules.normalization``'s import path: the other normalization layers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..normalization import GroupNorm, LocalResponseNorm, RMSNorm
from ..layers import LayerNorm
from .._legacy_layers import CrossMapLRN2d

__all__ = ["CrossMapLRN2d", "GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]
