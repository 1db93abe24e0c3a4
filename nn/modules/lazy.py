"""``torch.nn.modules.lazy``'s import path: LazyModuleMixin.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..lazy import LazyModuleMixin

__all__ = ["LazyModuleMixin"]
