"""The von Mises distribution: a circular normal law on angles."""

from __future__ import annotations

import math

import tritongrad as torch
from tritongrad import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["VonMises"]


def _proposal_r(kappa: Tensor) -> Tensor:
    r"""Best and Fisher's wrapped-Cauchy envelope parameter r = (1 + rho^2) / (2 rho), with
    :math:`\rho = (\tau - \sqrt{2\tau}) / (2\kappa)` and :math:`\tau = 1 + s`,
    :math:`s = \sqrt{1 + 4\kappa^2}`, rewritten as
    :math:`\rho = 2\kappa\tau / ((1 + s)(\tau + \sqrt{2\tau}))` to keep its precision for small
    :math:`\kappa` (where the first form cancels: rho ~ kappa / 2)."""
    s = torch.sqrt(1 + 4 * kappa.pow(2))
    tau = 1 + s
    rho = 2 * kappa * tau / ((1 + s) * (tau + torch.sqrt(2 * tau)))
    return (1 + rho.pow(2)) / (2 * rho)


def _rejection_sample(kappa: Tensor, r: Tensor) -> Tensor:
    """Angles in [-pi, pi] from VonMises(0, kappa) by Best and Fisher's (1979) rejection
    sampler: a wrapped-Cauchy proposal, accepted with probability at least ~0.66 per round.
    Every round draws for all entries, until each has accepted once; as in PyTorch, an entry
    keeps its latest accepted proposal (given the accept flags, accepted proposals are i.i.d.
    von Mises, so the law is the same), which keeps the draws PyTorch's from one seed."""
    x = torch.zeros_like(kappa)
    done = torch.zeros(kappa.shape, dtype=torch.bool, device=kappa.device)
    while not bool(done.all()):
        u1, u2, u3 = torch.rand((3,) + tuple(kappa.shape), dtype=kappa.dtype,
                                device=kappa.device).unbind(0)
        z = torch.cos(math.pi * u1)
        f = ((1 + r * z) / (r + z)).clamp(min=-1.0, max=1.0)
        c = kappa * (r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        theta = torch.sign(u3 - 0.5) * torch.acos(f)
        x = torch.where(accept, theta, x)
        done = done | accept
    return x


class VonMises(Distribution):
    r"""A circular von Mises distribution, with density
    :math:`\exp(\kappa \cos(x - \mu)) / (2\pi I_0(\kappa))`.

    This implementation uses polar coordinates. The ``loc`` and ``value`` args can be any real
    number (to facilitate unconstrained optimization), but are interpreted as angles modulo
    2 pi. Samples (not reparameterized) are drawn by Best and Fisher's rejection sampler, in
    float64, and lie in [-pi, pi).

    Example::

        >>> m = VonMises(torch.tensor([1.0]), torch.tensor([1.0]))
        >>> m.sample()  # von Mises distributed with loc=1 and concentration=1
        tensor([1.9777])

    Args:
        loc (Tensor): an angle in radians.
        concentration (Tensor): concentration parameter
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args: bool | None = None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        kappa = self.concentration
        # kappa cos(d) - log I0(kappa) written as -2 kappa sin^2(d / 2) - log i0e(kappa): the
        # same value without the cancellation of kappa cos(d) against log I0 ~ kappa, which in
        # float32 costs ~1e-2 at kappa 1e5 (PyTorch's form)
        half_sin = torch.sin((value - self.loc) / 2)
        return (-2 * kappa * half_sin * half_sin - math.log(2 * math.pi)
                - torch.log(torch.special.i0e(kappa)))

    def sample(self, sample_shape=()) -> Tensor:
        """Draws by rejection sampling (in float64; no gradients)."""
        shape = self._extended_shape(sample_shape)
        with torch.no_grad():
            kappa = self.concentration.to(torch.float64)
            x = _rejection_sample(kappa.expand(shape), _proposal_r(kappa).expand(shape))
            angle = torch.remainder(x + math.pi + self.loc.to(torch.float64), 2 * math.pi)
            return (angle - math.pi).to(self.loc.dtype)

    @property
    def mean(self) -> Tensor:
        """The circular mean: ``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """The circular variance ``1 - I1(kappa) / I0(kappa)``."""
        kappa = self.concentration
        return 1 - torch.special.i1e(kappa) / torch.special.i0e(kappa)
