"""The geometric distribution."""

from __future__ import annotations

from tritongrad.nn import functional as F

import tritongrad as torch
from tritongrad import Size, Tensor

from . import constraints
from .distribution import Distribution
from .utils import _ProbsLogits, broadcast_all

__all__ = ["Geometric"]


class Geometric(_ProbsLogits, Distribution):
    r"""Creates a Geometric distribution parameterized by ``probs``, where ``probs`` is the
    probability of success of Bernoulli trials.

    .. math::

        P(X=k) = (1-p)^{k} p, k = 0, 1, ...

    ``sample()`` draws the number of failures before the first success, hence draws samples
    in :math:`\{0, 1, \ldots\}`, with :math:`\mathbb{E}[X] = 1/p - 1`.

    Args:
        probs (Number, Tensor): the probability of sampling `1`. Must be in range (0, 1]
        logits (Number, Tensor): the log-odds of sampling `1`.

    Example::

        >>> m = Geometric(torch.tensor([0.3]))
        >>> m.sample()  # underlying Bernoulli has 30% chance 1; 70% chance 0
        tensor([ 2.])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        is_scalar, _ = self._set_binary_param(probs, logits)
        batch_shape = Size() if is_scalar else self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            # the unit interval's 0 is no geometric distribution: refuse it too
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                invalid_value = value.detach()[~valid]
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{invalid_value}")

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return torch.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        tiny = torch.finfo(self.probs.dtype).tiny
        with torch.no_grad():
            u = torch.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # (p = 1 at k = 0 is probability 1: keep 0 * log(0) out)
        probs = torch.where((probs == 1) & (value == 0), torch.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs
