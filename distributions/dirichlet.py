"""The Dirichlet distribution."""

from __future__ import annotations

import numpy as np
from tritongrad.autograd.function import once_differentiable
from tritongrad.autograd.ops.sampling import _digamma64, _standard_gamma

import tritongrad as torch
from tritongrad import Tensor

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


def _draw_dirichlet(concentration: Tensor) -> Tensor:
    """As PyTorch's ``_sample_dirichlet``: Gamma(concentration, 1) draws made and normalized in
    float64 (so a seed gives PyTorch's numbers on the CPU), then cast and clamped into [tiny,
    the largest number below 1]."""
    dt = concentration.dtype
    gammas = _standard_gamma(concentration.to(torch.float64))
    finfo = torch.finfo(dt)
    return (gammas / gammas.sum(-1, keepdim=True)).to(dt).clamp(min=finfo.tiny,
                                                                max=1 - finfo.eps / 2)


def _beta_alpha_grad(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""``-(dI_x(a, b)/da) / f(x; a, b) / (1 - x)`` with b held fixed (I the regularized
    incomplete beta function, f the Beta density; float64 arrays of one shape): ATen's
    ``_dirichlet_grad`` (which approximates it to ~5e-4), here to ~1e-10.

    With the series :math:`I_x(a, b) = x^a (1 - x)^b S / (a B(a, b))`,
    :math:`S = \sum_n t_n`, :math:`t_{n+1} = t_n x (a + b + n) / (a + 1 + n)`, ``I / f = x (1 -
    x) S / a`` and the result is ``-(x / a) (S (ln x - 1/a + psi(a + b) - psi(a)) + dS/da)``.
    Past the mean (x > (a + 1) / (a + b + 2)) the series of ``I_{1-x}(b, a) = 1 - I_x(a, b)``
    converges faster: there it is ``(x / b) (S' (ln x + psi(a + b) - psi(a)) + dS'/da)``, with
    S' the series in 1 - x with a and b exchanged. dS/da is carried with the terms."""
    flip = x > (a + 1) / (a + b + 2)
    z, p = np.where(flip, 1 - x, x), np.where(flip, b, a)
    s, ds = np.ones_like(x), np.zeros_like(x)
    term, dlog = np.ones_like(x), np.zeros_like(x)  # t_n and d log(t_n) / da
    live = np.arange(x.size)
    for n in range(200000):
        ab, pn = a[live] + b[live] + n, p[live] + 1 + n
        term[live] *= z[live] * ab / pn
        dlog[live] += 1 / ab - np.where(flip[live], 0.0, 1 / pn)  # (p + 1 + n: only p = a)
        s[live] += term[live]
        ds[live] += term[live] * dlog[live]
        live = live[term[live] > 1e-17 * s[live]]
        if not live.size:
            break
    log_x = np.log(x)
    dpsi = _digamma64(a + b) - _digamma64(a)
    return np.where(flip, (x / b) * (s * (log_x + dpsi) + ds),
                    -(x / a) * (s * (log_x - 1 / a + dpsi) + ds))


class _Dirichlet(torch.autograd.Function):
    """A Dirichlet draw differentiated implicitly as PyTorch's: the gradient to
    ``concentration[i]`` is ``G_i (g_i - sum_k x_k g_k)``, with ``G_i`` the implicit derivative
    of x_i's Beta(a_i, total - a_i) marginal (``_beta_alpha_grad``, computed on the host in
    float64), so each per-sample gradient is PyTorch's (to its approximation's ~5e-4)."""

    @staticmethod
    def forward(ctx, concentration):
        x = _draw_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        a = concentration.detach().to(torch.float64).cpu().numpy()
        a, xs = np.broadcast_arrays(a, x.detach().to(torch.float64).cpu().numpy())
        b = a.sum(-1, keepdims=True) - a
        grad = _beta_alpha_grad(xs.ravel(), a.ravel().copy(), b.ravel()).reshape(xs.shape)
        grad = torch.tensor(grad, dtype=concentration.dtype, device=concentration.device)
        return grad * (grad_output - (x * grad_output).sum(-1, keepdim=True))


def _sample_dirichlet(concentration: Tensor) -> Tensor:
    """Dirichlet(concentration) draws (PyTorch's numbers from one seed on the CPU),
    reparameterized as PyTorch's (``_Dirichlet``)."""
    if torch.is_grad_enabled() and concentration.requires_grad:
        return _Dirichlet.apply(concentration)
    return _draw_dirichlet(concentration)


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
