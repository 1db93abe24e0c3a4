"""``torch.nn.modules.linear``'s import path: the linear layers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..layers import Bilinear, Identity, Linear, NonDynamicallyQuantizableLinear
from ..lazy import LazyLinear

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear", "NonDynamicallyQuantizableLinear"]
