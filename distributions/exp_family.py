"""``ExponentialFamily``: the base of distributions whose densities are
``p_F(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``."""

from __future__ import annotations

import tritongrad as torch
from tritongrad import Tensor

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    r"""ExponentialFamily is the abstract base class for probability distributions belonging
    to an exponential family, whose probability mass/density function has the form

    .. math::

        p_{F}(x; \theta) = \exp(\langle t(x), \theta\rangle - F(\theta) + k(x))

    where :math:`\theta` denotes the natural parameters, :math:`t(x)` denotes the sufficient
    statistic, :math:`F(\theta)` is the log normalizer function for a given family and
    :math:`k(x)` is the carrier measure.

    Note:
        This class is an intermediary between the ``Distribution`` class and distributions
        which belong to an exponential family mainly to check the correctness of the
        ``.entropy()`` and analytic KL divergence methods. These methods are computed with
        autograd from the log normalizer (a Bregman divergence, Frank Nielsen and Richard
        Nock, "Entropies and Cross-entropies of Exponential Families").
    """

    @property
    def _natural_params(self) -> tuple:
        """The natural parameters of the distribution, a tuple of Tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params) -> Tensor:
        """The log normalizing function of the distribution, given its natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """The expected carrier measure, needed for computing the entropy."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """Computes the entropy using the Bregman divergence of the log normalizer."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = torch.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
