"""The multinomial distribution."""

from __future__ import annotations

import math

import tritongrad as torch
from tritongrad import Size, Tensor

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import _OverCategorical, broadcast_all

__all__ = ["Multinomial"]


class Multinomial(_OverCategorical, Distribution):
    r"""Creates a Multinomial distribution parameterized by ``total_count`` and either
    ``probs`` or ``logits`` (but not both). The innermost dimension of ``probs`` indexes over
    categories; all other dimensions index over batches.

    ``total_count`` need not be specified if only ``log_prob`` is called. ``probs`` must be
    non-negative, finite and have a non-zero sum (normalized to sum to 1 along the last
    dimension); ``logits`` are unnormalized log probabilities.

    Args:
        total_count (int): number of trials
        probs (Tensor): event probabilities
        logits (Tensor): event log probabilities (unnormalized)

    Example::

        >>> m = Multinomial(100, torch.tensor([ 1., 1., 1., 1.]))
        >>> x = m.sample()  # equal probability of 0, 1, 2, 3
        tensor([ 21.,  24.,  30.,  25.])
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count: int = 1, probs: Tensor | None = None,
                 logits: Tensor | None = None, validate_args: bool | None = None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs,
                                 validate_args=False)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        sample_shape = Size(sample_shape)
        samples = self._categorical.sample(Size((self.total_count,) + tuple(sample_shape)))
        # (total_count, sample, batch) -> (sample, batch, total_count): count each category
        samples = samples.permute(*range(1, samples.dim()), 0)
        counts = torch.zeros(self._extended_shape(sample_shape), dtype=torch.long,
                             device=samples.device)
        counts.scatter_add_(-1, samples, torch.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self) -> Tensor:
        n = self.total_count
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = torch.exp(self._binomial.log_prob(support))
        weights = torch.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = torch.lgamma(value.sum(-1) + 1)
        log_factorial_xs = torch.lgamma(value + 1).sum(-1)
        # a category of probability 0 drawn 0 times contributes 0, not 0 * -inf
        logits = torch.where((value == 0) & (logits == -math.inf), torch.zeros_like(logits),
                             logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
