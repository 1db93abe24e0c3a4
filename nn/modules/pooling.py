"""``torch.nn.modules.pooling``'s import path: the pooling layers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..pooling import *  # noqa: F403
from ..pooling import __all__ as _star

__all__ = [] + list(_star)
