"""The Fisher-Snedecor (F) distribution."""

from __future__ import annotations

import numbers

import tritongrad as torch
from tritongrad import Size, Tensor

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import _nan_unless, broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    r"""Creates a Fisher-Snedecor distribution parameterized by ``df1`` and ``df2``: the law of
    :math:`(X_1 / d_1) / (X_2 / d_2)` for independent :math:`X_i \sim \chi^2(d_i)`. Draws are
    reparameterized through the two gamma draws.

    Args:
        df1 (float or Tensor): degrees of freedom parameter 1
        df2 (float or Tensor): degrees of freedom parameter 2

    Example::

        >>> m = FisherSnedecor(torch.tensor([1.0]), torch.tensor([2.0]))
        >>> m.sample()  # Fisher-Snedecor-distributed with df1=1 and df2=2
        tensor([ 0.2453])
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args: bool | None = None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        # chi2(d) / d ~ Gamma(d / 2, rate=d / 2) (checked through df1 and df2 below)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1 * 0.5, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2 * 0.5, validate_args=False)
        numbers_only = isinstance(df1, numbers.Number) and isinstance(df2, numbers.Number)
        super().__init__(Size() if numbers_only else self.df1.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        return _nan_unless(self.df2 > 2, self.df2 / (self.df2 - 2))

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _nan_unless(self.df1 > 2, mode)

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        var = (2 * df2.pow(2) * (df1 + df2 - 2)
               / (df1 * (df2 - 2).pow(2) * (df2 - 4)))
        return _nan_unless(df2 > 4, var)

    def rsample(self, sample_shape=()) -> Tensor:
        value = self._gamma1.rsample(sample_shape) / self._gamma2.rsample(sample_shape)
        # (the ratio may underflow: keep samples in the support, as PyTorch's)
        return value.clamp(min=torch.finfo(value.dtype).tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_beta = torch.lgamma(half1) + torch.lgamma(half2) - torch.lgamma(half1 + half2)
        return (half1 * ratio.log() + (half1 - 1) * torch.log(value)
                - (half1 + half2) * torch.log1p(ratio * value) - log_beta)
