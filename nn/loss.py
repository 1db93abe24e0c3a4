"""Loss modules: thin wrappers over ``nn.functional``'s losses."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss",
           "MSELoss", "NLLLoss", "SmoothL1Loss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = F._reduction(size_average, reduce, reduction)


class MSELoss(_Loss):
    """Mean squared error: mean((input - target)^2) (``reduction`` 'mean' | 'sum' | 'none')."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross-entropy of logits (N, C[, d1, ...]) against class indices (N[, d1, ...]) or
    class probabilities; see ``nn.functional.cross_entropy``.

    Example:
        >>> loss = tg.nn.CrossEntropyLoss()(tg.zeros(2, 4), tg.tensor([1, 3]))
        >>> round(loss.item(), 4)  # log(4)
        1.3863
    """

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of class indices under log-probabilities."""

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error |input - target| (``reduction`` 'mean' | 'sum' | 'none')."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 (x - y)^2 / beta where |x - y| < beta, else |x - y| - 0.5 beta."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 (x - y)^2 where |x - y| < delta, else delta (|x - y| - 0.5 delta)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """The Kullback-Leibler divergence of log-probabilities ``input`` from ``target``
    (probabilities, or log-probabilities with ``log_target=True``); ``reduction`` also takes
    ``'batchmean'`` (the sum divided by the batch size: the mathematical KL divergence)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        Module.__init__(self)
        if reduction != "batchmean":
            reduction = F._reduction(size_average, reduce, reduction)
        self.reduction = reduction
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities ``input`` against ``target`` (logs clamped at
    -100); ``weight`` rescales each element's loss."""

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """A sigmoid layer and binary cross-entropy in one numerically stable expression;
    ``pos_weight`` weighs the positive examples of each class (last dim).

    Example:
        >>> loss = tg.nn.BCEWithLogitsLoss()(tg.zeros(3), tg.ones(3))
        >>> round(loss.item(), 4)  # log(2)
        0.6931
    """

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean", pos_weight: Tensor | None = None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
