"""``torch.nn.modules.transformer``'s import path: the transformer layers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..transformer import *  # noqa: F403
from ..transformer import __all__ as _star

__all__ = [] + list(_star)
