"""The continuous Bernoulli distribution."""

from __future__ import annotations

import math

import tritongrad as torch
from tritongrad import Size, Tensor
from tritongrad.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _one_of, _ProbsLogits, broadcast_all, clamp_probs, lazy_property, \
    logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(_ProbsLogits, ExponentialFamily):
    r"""Creates a continuous Bernoulli distribution parameterized by ``probs`` or ``logits``
    (but not both).

    The distribution is supported in [0, 1] and parameterized by 'probs' (in (0,1)) or
    'logits' (real-valued). Note that, unlike the Bernoulli, 'probs' does not correspond to a
    probability and 'logits' does not correspond to log-odds, but the same names are used due
    to the similarity with the Bernoulli. See [1] for more details.

    Args:
        probs (Number, Tensor): (0,1) valued parameters
        logits (Number, Tensor): real valued parameters whose sigmoid matches 'probs'
        lims (tuple): the interval around 0.5 where the normalizer and moments are computed
            from their Taylor expansions (their closed forms lose precision there)

    Example::

        >>> m = ContinuousBernoulli(torch.tensor([0.3]))
        >>> m.sample()
        tensor([ 0.2538])

    [1] The continuous Bernoulli: fixing a pervasive error in variational autoencoders,
    Loaiza-Ganem G and Cunningham JP, NeurIPS 2019. https://arxiv.org/abs/1907.06845
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims: tuple = (0.499, 0.501),
                 validate_args: bool | None = None):
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        is_scalar = not isinstance(given, Tensor)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            # validated here: the clamp below would make any value pass
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self._lims = lims
        super().__init__(Size() if is_scalar else self._param.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(ContinuousBernoulli, batch_shape, _instance, ("probs", "logits"))
        new._lims = self._lims
        return new

    def _outside_unstable_region(self) -> Tensor:
        return torch.le(self.probs, self._lims[0]) | torch.gt(self.probs, self._lims[1])

    def _cut_probs(self) -> Tensor:
        return torch.where(self._outside_unstable_region(), self.probs,
                           self._lims[0] * torch.ones_like(self.probs))

    def _cont_bern_log_norm(self) -> Tensor:
        """Computes the log normalizing constant as a function of the 'probs' parameter."""
        cut_probs = self._cut_probs()
        cut_probs_below_half = torch.where(torch.le(cut_probs, 0.5), cut_probs,
                                           torch.zeros_like(cut_probs))
        cut_probs_above_half = torch.where(torch.ge(cut_probs, 0.5), cut_probs,
                                           torch.ones_like(cut_probs))
        log_norm = torch.log(torch.abs(torch.log1p(-cut_probs) - torch.log(cut_probs))) \
            - torch.where(torch.le(cut_probs, 0.5), torch.log1p(-2.0 * cut_probs_below_half),
                          torch.log(2.0 * cut_probs_above_half - 1.0))
        x = torch.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return torch.where(self._outside_unstable_region(), log_norm, taylor)

    def _cut_probs_wide(self) -> Tensor:
        """``_cut_probs()`` in float64: the moments' closed forms subtract two terms of
        ~1 / (1 - 2p)^2 that cancel near the window (at probs 0.499 in float32 PyTorch's
        variance is -1.6 and this library's was 0.25, for 0.0833)."""
        cut_probs = self._cut_probs()
        return cut_probs if cut_probs.dtype is torch.float64 else cut_probs.double()

    @property
    def mean(self) -> Tensor:
        cut_probs = self._cut_probs_wide()
        mus = (cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (torch.log1p(-cut_probs)
                                                           - torch.log(cut_probs))
               ).to(self.probs.dtype)
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * torch.pow(x, 2)) * x
        return torch.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return torch.sqrt(self.variance)

    @property
    def variance(self) -> Tensor:
        cut_probs = self._cut_probs_wide()
        variances = (cut_probs * (cut_probs - 1.0) / torch.pow(1.0 - 2.0 * cut_probs, 2)
                     + 1.0 / torch.pow(torch.log1p(-cut_probs) - torch.log(cut_probs), 2)
                     ).to(self.probs.dtype)
        x = torch.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return torch.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def probs(self) -> Tensor:
        # (clamped, unlike a Bernoulli's: the normalizer is singular at 0 and 1)
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def sample(self, sample_shape=()) -> Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = ((torch.pow(cut_probs, value) * torch.pow(1.0 - cut_probs, 1.0 - value)
                 + cut_probs - 1.0) / (2.0 * cut_probs - 1.0))
        unbounded_cdfs = torch.where(self._outside_unstable_region(), cdfs, value)
        return torch.where(torch.le(value, 0.0), torch.zeros_like(value),
                           torch.where(torch.ge(value, 1.0), torch.ones_like(value),
                                       unbounded_cdfs))

    def icdf(self, value: Tensor) -> Tensor:
        cut_probs = self._cut_probs()
        return torch.where(
            self._outside_unstable_region(),
            (torch.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - torch.log1p(-cut_probs))
            / (torch.log(cut_probs) - torch.log1p(-cut_probs)),
            value)

    def entropy(self) -> Tensor:
        log_probs0 = torch.log1p(-self.probs)
        log_probs1 = torch.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x):
        """Computes the log normalizing constant as a function of the natural parameter."""
        out_unst_reg = torch.le(x, self._lims[0] - 0.5) | torch.gt(x, self._lims[1] - 0.5)
        cut_nat_params = torch.where(out_unst_reg, x, (self._lims[0] - 0.5) * torch.ones_like(x))
        log_norm = torch.log(torch.abs(torch.expm1(cut_nat_params))) \
            - torch.log(torch.abs(cut_nat_params))
        taylor = 0.5 * x + torch.pow(x, 2) / 24.0 - torch.pow(x, 4) / 2880.0
        return torch.where(out_unst_reg, log_norm, taylor)
