"""``torch.nn.modules.activation``'s import path: the activations (MultiheadAttention among
them, as in PyTorch).

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..activation import *  # noqa: F403
from ..activation import __all__ as _star
from ..attention import MultiheadAttention

__all__ = ["MultiheadAttention"] + list(_star)
