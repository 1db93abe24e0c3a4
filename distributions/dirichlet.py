"""The Dirichlet distribution."""

from __future__ import annotations

from tritongrad.autograd.ops.sampling import _standard_gamma

import tritongrad as torch
from tritongrad import Tensor

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


def _sample_dirichlet(concentration: Tensor) -> Tensor:
    """Normalized Gamma(concentration, 1) draws: reparameterized through the gamma draws'
    implicit gradients (PyTorch differentiates the Dirichlet draw implicitly as a whole; both
    are unbiased reparameterization gradients of the same distribution). As PyTorch's
    ``_sample_dirichlet``: the gammas drawn and normalized in float64 (so a seed gives its
    numbers on the CPU), then cast and clamped into [tiny, the largest number below 1]."""
    dt = concentration.dtype
    gammas = _standard_gamma(concentration.to(torch.float64))
    finfo = torch.finfo(dt)
    return (gammas / gammas.sum(-1, keepdim=True)).to(dt).clamp(min=finfo.tiny,
                                                                max=1 - finfo.eps / 2)


class Dirichlet(ExponentialFamily):
    r"""Creates a Dirichlet distribution parameterized by concentration ``concentration``.

    Args:
        concentration (Tensor): concentration parameter of the distribution
            (often referred to as alpha)

    Example::

        >>> m = Dirichlet(torch.tensor([0.5, 0.5]))
        >>> m.sample()  # Dirichlet distributed with concentration [0.5, 0.5]
        tensor([ 0.1046,  0.8954])
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Dirichlet, batch_shape, _instance, {"concentration": 1})

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return _sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (torch.xlogy(self.concentration - 1.0, value).sum(-1)
                + torch.lgamma(self.concentration.sum(-1))
                - torch.lgamma(self.concentration).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Tensor:
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, True)
        # where every concentration is below 1 the density peaks at a vertex: the largest one
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = torch.nn.functional.one_hot(self.concentration.argmax(dim=-1),
                                             concm1.shape[-1]).to(mode)
        return torch.where(mask, vertex, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (torch.lgamma(self.concentration).sum(-1) - torch.lgamma(a0)
                - (k - a0) * torch.digamma(a0)
                - ((self.concentration - 1.0) * torch.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - torch.lgamma(x.sum(-1))
