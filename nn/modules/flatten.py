"""``torch.nn.modules.flatten``'s import path: Flatten and Unflatten.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..layers import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
