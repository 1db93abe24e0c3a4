"""``torch.nn.modules.dropout``'s import path: the dropout layers.

A re-export: the classes are defined elsewhere in nn/ (this keeps PyTorch import paths
working).
"""

from ..layers import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d
from .._feature_alpha_dropout import FeatureAlphaDropout

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]
