"""``torch.nn.modules.adaptive``'s import path: AdaptiveLogSoftmaxWithLoss.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from .._adaptive_softmax import AdaptiveLogSoftmaxWithLoss

__all__ = ["AdaptiveLogSoftmaxWithLoss"]
