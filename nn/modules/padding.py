"""``torch.nn.modules.padding``'s import path: the padding layers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..padding import *  # noqa: F403
from ..padding import __all__ as _star

__all__ = [] + list(_star)
