"""``torch.nn.modules.fold``'s import path: Fold and Unfold.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..layers import Fold, Unfold

__all__ = ["Fold", "Unfold"]
