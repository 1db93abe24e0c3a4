"""``torch.nn.modules.rnn``'s import path: the recurrent layers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..rnn import *  # noqa: F403
from ..rnn import __all__ as _star

__all__ = [] + list(_star)
