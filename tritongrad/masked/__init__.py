"""Masked reductions and MaskedTensor (PyTorch's ``torch.masked``).

``tritongrad.masked.sum(input, dim, mask=mask)`` and the other reductions and normalizations
of :mod:`._ops` leave out the elements where ``mask`` is False; :class:`MaskedTensor` (a
prototype in PyTorch too) is a Tensor that carries such a mask through elementwise ops,
reductions and autograd. See docs/masked.md.
"""

from ._ops import (amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logaddexp,
                   logsumexp, mean, median, norm, normalize, prod, softmax, softmin, std, sum,
                   var)
from .maskedtensor.core import MaskedTensor, is_masked_tensor
from .maskedtensor.creation import as_masked_tensor, masked_tensor

__all__ = ["amax", "amin", "argmax", "argmin", "as_masked_tensor", "cumprod", "cumsum",
           "is_masked_tensor", "log_softmax", "logaddexp", "logsumexp", "masked_tensor",
           "MaskedTensor", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]
