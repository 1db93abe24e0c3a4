"""The Kumaraswamy distribution: a Beta-like law on [0, 1] with a closed-form CDF."""

from __future__ import annotations

import tritongrad as torch
from tritongrad import Tensor

from . import constraints
from .gumbel import _EULER
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import _nan_unless, broadcast_all

__all__ = ["Kumaraswamy"]


def _raw_moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[X^n] = b B(1 + n / a, b) of Kumaraswamy(a, b)."""
    arg1 = 1 + n / a
    return torch.exp(b.log() + torch.lgamma(arg1) + torch.lgamma(b) - torch.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    r"""Samples from a Kumaraswamy distribution, with density
    :math:`a b x^{a - 1} (1 - x^a)^{b - 1}` on [0, 1]. Draws are
    :math:`(1 - U^{1/b})^{1/a}` for :math:`U \sim \mathrm{Uniform}(0, 1)`, so they are
    reparameterized.

    Args:
        concentration1 (float or Tensor): 1st concentration parameter of the distribution
            (often referred to as alpha)
        concentration0 (float or Tensor): 2nd concentration parameter of the distribution
            (often referred to as beta)

    Example::

        >>> m = Kumaraswamy(torch.tensor([1.0]), torch.tensor([1.0]))
        >>> m.sample()  # sample from a Kumaraswamy distribution with concentration alpha=1 and beta=1
        tensor([ 0.1729])
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(torch.zeros_like(self.concentration0),
                            torch.ones_like(self.concentration0), validate_args=validate_args)
        # (PyTorch's chain: (1 - U^(1/b))^(1/a), so that a seed gives its samples)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _raw_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        # ((a - 1) / (a b - 1))^(1 / a), defined for a >= 1 and b >= 1 (not both 1); PyTorch
        # 2.13's formula returns NaN for every b > 1 (it takes log1p(-b))
        a, b = self.concentration1, self.concentration0
        mode = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return _nan_unless((a >= 1) & (b >= 1), mode)

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return _raw_moment(a, b, 2) - _raw_moment(a, b, 1).pow(2)

    def entropy(self) -> Tensor:
        # (1 - 1/b) + (1 - 1/a) H_b - log(a b), with the harmonic number H_b = psi(b + 1) + gamma
        a, b = self.concentration1, self.concentration0
        harmonic = torch.digamma(b + 1) + _EULER
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - torch.log(a * b)
