"""The LKJ distribution over Cholesky factors of correlation matrices."""

from __future__ import annotations

import math

from tritongrad.nn.functional import pad

import tritongrad as torch
from tritongrad import Tensor

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    r"""LKJ distribution for lower Cholesky factor of correlation matrices. The distribution
    is controlled by the ``concentration`` parameter :math:`\eta` to make the probability of
    the correlation matrix :math:`M` generated from a Cholesky factor proportional to
    :math:`\det(M)^{\eta - 1}`. Because of that, when ``concentration == 1``, we have a
    uniform distribution over Cholesky factors of correlation matrices::

        L ~ LKJCholesky(dim, concentration)
        X = L @ L' ~ LKJCorr(dim, concentration)

    Note that this distribution samples the Cholesky factor of correlation matrices and not
    the correlation matrices themselves and thereby differs slightly from the derivations in
    [1] for the ``LKJCorr`` distribution. For sampling, this uses the Onion method from [1]
    Section 3.

    **The onion method, and the density.** Row 0 of L is ``e_0``; row ``i`` (``i = 1 ..
    dim - 1``) is ``(sqrt(y_i) u_i, sqrt(1 - y_i), 0, ...)`` with ``u_i`` uniform on the unit
    sphere of ``R^i`` and ``y_i ~ Beta(i / 2, eta + (dim - 1 - i) / 2)``. Changing variables
    to the ``i`` off-diagonal entries ``w_i`` of each row (``|w_i|^2 = y_i``,
    ``L_ii^2 = 1 - y_i``) gives the density

    .. math::

        \log p(L) = \sum_{i=1}^{D-1} \Big[(D - i + 2\eta - 3) \log L_{ii}
            + \log\Gamma(\eta + \tfrac{D-1}{2}) - \log\Gamma(\eta + \tfrac{D-1-i}{2})
            - \tfrac{i}{2} \log \pi\Big]

    with respect to the Lebesgue measure on the strictly lower triangle (``i`` zero-based).

    Example::

        >>> l = LKJCholesky(3, 0.5)
        >>> l.sample()  # l @ l.T is a sample of a correlation 3x3 matrix
        tensor([[ 1.0000,  0.0000,  0.0000],
                [ 0.3516,  0.9361,  0.0000],
                [-0.1899,  0.4748,  0.8593]])

    Args:
        dim (int): dimension of the matrices
        concentration (float or Tensor): concentration/shape parameter of the
            distribution (often referred to as eta)

    **References**

    [1] `Generating random correlation matrices based on vines and extended onion method`
    (2009), Daniel Lewandowski, Dorota Kurowicka, Harry Joe. Journal of Multivariate Analysis.
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        super().__init__(self.concentration.size(), (dim, dim), validate_args=validate_args)
        self._beta = self._marginal_beta()

    def _marginal_beta(self) -> Beta:
        """The Beta laws of the rows' squared off-diagonal norms ``y_1 .. y_{dim-1}`` (batch
        ``batch_shape + (dim - 1,)``). Unvalidated: the constructor checked eta."""
        i = torch.arange(1, self.dim, dtype=self.concentration.dtype,
                         device=self.concentration.device)
        eta = self.concentration.unsqueeze(-1)
        return Beta(i / 2 + torch.zeros_like(eta), eta + (self.dim - 1 - i) / 2,
                    validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(LKJCholesky, batch_shape, _instance, ("concentration",))
        new.dim = self.dim
        new._beta = new._marginal_beta()
        return new

    def sample(self, sample_shape=()) -> Tensor:
        """Draws by the onion method (no gradients)."""
        with torch.no_grad():
            y = pad(self._beta.sample(sample_shape), [1, 0])  # (y_0 = 0: row 0 is e_0)
            shape = tuple(y.shape) + (self.dim,)
            u = torch.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = torch.linalg.norm(u, dim=-1, keepdim=True)
            u_hat = u / norm.clamp(min=torch.finfo(y.dtype).tiny)
            diagonal = (1 - y).clamp(min=torch.finfo(y.dtype).tiny).sqrt()
            return u_hat * y.sqrt().unsqueeze(-1) + torch.diag_embed(diagonal)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        d = self.dim
        i = torch.arange(1, d, dtype=value.dtype, device=value.device)
        eta = self.concentration.unsqueeze(-1)
        log_diagonal = value.diagonal(dim1=-2, dim2=-1)[..., 1:].log()
        unnormalized = ((d - i + 2 * eta - 3) * log_diagonal).sum(-1)
        normalizer = (torch.lgamma(eta + (d - 1) / 2) - torch.lgamma(eta + (d - 1 - i) / 2)
                      - i / 2 * math.log(math.pi)).sum(-1)
        return unnormalized + normalizer
