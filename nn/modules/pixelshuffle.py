"""``torch.nn.modules.pixelshuffle``'s import path: PixelShuffle and PixelUnshuffle.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..layers import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
