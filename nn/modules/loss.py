"""``torch.nn.modules.loss``'s import path: the loss modules and their bases.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..loss import *  # noqa: F403
from ..loss import __all__ as _star
from ..loss import _Loss, _WeightedLoss
from .._legacy_layers import NLLLoss2d
from .._linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions", "NLLLoss2d"] + list(_star)
