"""Feature alpha dropout (``F.feature_alpha_dropout``, ``nn.FeatureAlphaDropout``): alpha
dropout (``F.alpha_dropout``'s affine correction for SELU networks) with one keep draw per
channel instead of per element."""

from __future__ import annotations

from ..autograd import checks
from ..autograd.tensor import Tensor
from . import functional as F
from .layers import Dropout

__all__ = ["FeatureAlphaDropout", "feature_alpha_dropout"]


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Randomly masks whole channels (dim 1 of an (N, C, *) input; each (sample, channel) one
    draw) with probability ``p``: a masked channel is set to SELU's negative saturation value
    alpha' = -scale * alpha, and the result is affinely corrected as ``alpha_dropout``'s,
    ``a (x keep + alpha' (1 - keep)) + b`` with a = ((1 - p)(1 + p alpha'^2))^(-1/2) and
    b = -a alpha' p, which keeps zero mean and unit variance. The identity when not
    ``training``."""
    F._check_p(p)
    checks.tensor_arg(input, "feature_alpha_dropout")
    return F._dropout_impl(input, p, training, inplace, "feature_alpha_dropout", feature=True,
                           alpha=True)


class FeatureAlphaDropout(Dropout):
    """Randomly masks out entire channels with SELU's negative saturation value in training
    (``F.feature_alpha_dropout``); the identity in eval mode.

    Example:
        >>> m = tg.nn.FeatureAlphaDropout(p=0.2)
        >>> m(tg.randn(20, 16, 4, 32, 32)).shape
        tritongrad.Size([20, 16, 4, 32, 32])
    """

    def forward(self, input: Tensor) -> Tensor:
        return feature_alpha_dropout(input, self.p, self.training, self.inplace)
