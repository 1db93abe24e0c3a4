"""The multivariate normal distribution."""

from __future__ import annotations

import math

import tritongrad as torch
from tritongrad import Tensor

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix-vector products over broadcast batch dimensions."""
    if bmat.dim() == 2:  # one matrix for every vector: one matrix product
        return torch.matmul(bvec, bmat.mT)
    return torch.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """The squared Mahalanobis distance ``x^T M^-1 x`` for ``M = L L^T``, over the broadcast
    batch shapes of ``bL`` (..., n, n) and ``bx`` (..., n)."""
    n = bx.size(-1)
    if bL.dim() == 2:  # one factor: every vector is a right-hand side of one solve
        m = torch.linalg.solve_triangular(bL, bx.reshape(-1, n).mT, upper=False)
        return m.pow(2).sum(0).reshape(tuple(bx.shape[:-1]))
    batch = torch.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    L = bL.expand(tuple(batch) + (n, n))
    x = bx.expand(tuple(batch) + (n,))
    m = torch.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return m.pow(2).sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    # L with L L^T = P^-1, from the Cholesky factor of P with its rows and columns reversed
    Lf = torch.linalg.cholesky(torch.flip(P, (-2, -1)))
    L_inv = torch.transpose(torch.flip(Lf, (-2, -1)), -2, -1)
    Id = torch.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return torch.linalg.solve_triangular(L_inv, Id.expand(L_inv.shape), upper=False)


def _one_matrix(covariance_matrix, precision_matrix, scale_tril) -> tuple:
    """The one matrix given, and its name; raises unless exactly one is, of 2 or more
    dimensions."""
    if ((covariance_matrix is not None) + (scale_tril is not None)
            + (precision_matrix is not None)) != 1:
        raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                         "scale_tril may be specified.")
    given, name = next((m, n) for m, n in ((scale_tril, "scale_tril"),
                                           (covariance_matrix, "covariance_matrix"),
                                           (precision_matrix, "precision_matrix"))
                       if m is not None)
    if given.dim() < 2:
        shown = "scale_tril matrix" if name == "scale_tril" else name  # (PyTorch's wording)
        raise ValueError(f"{shown} must be at least two-dimensional, with optional leading "
                         "batch dimensions")
    return given, name


def _scale_tril_of(given: Tensor, name: str) -> Tensor:
    """The lower Cholesky factor of the covariance, from the matrix named ``name``."""
    if name == "scale_tril":
        return given
    if name == "covariance_matrix":
        return torch.linalg.cholesky(given)
    return _precision_to_scale_tril(given)


class _ScaleTrilParams:
    """``scale_tril``, ``covariance_matrix`` and ``precision_matrix`` of a distribution
    holding ``_unbroadcasted_scale_tril`` (MultivariateNormal, Wishart), each derived on first
    use and expanded to the batch shape."""

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._unbroadcasted_scale_tril.shape[-2:])

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return torch.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return torch.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            self._matrix_shape())


class MultivariateNormal(_ScaleTrilParams, Distribution):
    r"""Creates a multivariate normal (also called Gaussian) distribution parameterized by a
    mean vector and a covariance matrix.

    The multivariate normal distribution can be parameterized either in terms of a positive
    definite covariance matrix :math:`\mathbf{\Sigma}` or a positive definite precision matrix
    :math:`\mathbf{\Sigma}^{-1}` or a lower-triangular matrix :math:`\mathbf{L}` with
    positive-valued diagonal entries, such that
    :math:`\mathbf{\Sigma} = \mathbf{L}\mathbf{L}^\top`. This triangular matrix can be obtained
    via e.g. Cholesky decomposition of the covariance.

    Args:
        loc (Tensor): mean of the distribution
        covariance_matrix (Tensor): positive-definite covariance matrix
        precision_matrix (Tensor): positive-definite precision matrix
        scale_tril (Tensor): lower-triangular factor of covariance, with positive-valued
            diagonal

    Note:
        Only one of ``covariance_matrix`` or ``precision_matrix`` or ``scale_tril`` can be
        specified. Using ``scale_tril`` will be more efficient: all computations internally
        are based on ``scale_tril``.

    Example::

        >>> m = MultivariateNormal(torch.zeros(2), torch.eye(2))
        >>> m.sample()  # normally distributed with mean=`[0,0]` and covariance_matrix=`I`
        tensor([-0.2102, -0.5429])
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given, name = _one_matrix(covariance_matrix, precision_matrix, scale_tril)
        batch_shape = torch.broadcast_shapes(tuple(given.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, given.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_of(given, name)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(MultivariateNormal, batch_shape, _instance,
                             {"loc": 1, "covariance_matrix": 2, "precision_matrix": 2,
                              "scale_tril": 2})
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self) -> Tensor:
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)
