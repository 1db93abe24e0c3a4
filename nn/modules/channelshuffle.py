"""``torch.nn.modules.channelshuffle``'s import path: ChannelShuffle.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..layers import ChannelShuffle

__all__ = ["ChannelShuffle"]
