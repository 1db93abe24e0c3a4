"""The generalized Pareto distribution (peaks over a threshold)."""

from __future__ import annotations

import math
import numbers

import tritongrad as torch
from tritongrad import Size, Tensor

from . import constraints
from .distribution import Distribution
from .utils import _nan_unless, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    r"""Creates a Generalized Pareto distribution parameterized by ``loc``, ``scale``, and
    ``concentration`` (:math:`\xi`):

    .. math::

        f(x; \mu, \sigma, \xi) = \frac{1}{\sigma} (1 + \xi z)^{-(1/\xi + 1)}, \quad
        z = \frac{x - \mu}{\sigma}

    (:math:`\frac{1}{\sigma} e^{-z}` for :math:`\xi = 0`). The support is :math:`x \ge \mu`
    for :math:`\xi \ge 0` and :math:`\mu \le x \le \mu - \sigma / \xi` for :math:`\xi < 0`.
    Draws are the inverse CDF of uniform ones, so they are reparameterized.

    Args:
        loc (float or Tensor): Location parameter of the distribution
        scale (float or Tensor): Scale parameter of the distribution
        concentration (float or Tensor): Concentration parameter of the distribution

    Example::

        >>> m = GeneralizedPareto(torch.tensor([0.1]), torch.tensor([2.0]), torch.tensor([0.4]))
        >>> m.sample()  # sample from a Generalized Pareto distribution with loc=0.1, scale=2.0, and concentration=0.4
        tensor([ 1.5623])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args: bool | None = None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        numbers_only = all(isinstance(v, numbers.Number) for v in (loc, scale, concentration))
        super().__init__(Size() if numbers_only else self.loc.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(GeneralizedPareto, batch_shape, _instance,
                              ("loc", "scale", "concentration"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        negative = self.concentration < 0
        xi = torch.where(negative, self.concentration, -torch.ones_like(self.concentration))
        upper = torch.where(negative, self.loc - self.scale / xi,
                            torch.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)

    def _zero_and_safe_concentration(self) -> tuple:
        """Where the concentration is (close to) 0, and the concentration with those entries
        replaced by 1, so that the xi != 0 branch stays finite (and its gradient too)."""
        xi = self.concentration
        is_zero = torch.isclose(xi, torch.zeros_like(xi))
        return is_zero, torch.where(is_zero, torch.ones_like(xi), xi)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log P(X > value)``: ``-log1p(xi z) / xi``, or ``-z`` for ``xi = 0``."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        is_zero, xi = self._zero_and_safe_concentration()
        return torch.where(is_zero, -z, -torch.log1p(xi * z) / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log P(X <= value)`` (NaN outside the support)."""
        return torch.log(-torch.expm1(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return torch.exp(self.log_cdf(value))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        is_zero, xi = self._zero_and_safe_concentration()
        log_kernel = torch.where(is_zero, -z, -(1 + xi.reciprocal()) * torch.log1p(xi * z))
        return log_kernel - self.scale.log()

    def icdf(self, value: Tensor) -> Tensor:
        # x = loc + scale ((1 - u)^(-xi) - 1) / xi, or loc - scale log(1 - u) for xi = 0
        log_1mu = torch.log1p(-value)
        is_zero, xi = self._zero_and_safe_concentration()
        return self.loc + self.scale * torch.where(is_zero, -log_1mu,
                                                   torch.expm1(-xi * log_1mu) / xi)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    @property
    def mean(self) -> Tensor:
        xi = self.concentration
        return _nan_unless(xi < 1, self.loc + self.scale / (1 - xi))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        xi = self.concentration
        return _nan_unless(xi < 0.5, self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi)))

    def entropy(self) -> Tensor:
        return self.scale.log() + self.concentration + 1
