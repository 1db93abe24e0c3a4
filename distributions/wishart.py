"""The Wishart distribution over positive-definite matrices."""

from __future__ import annotations

import math
import numbers
import warnings

import tritongrad as torch
from tritongrad import Tensor

from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _one_matrix, _scale_tril_of, _ScaleTrilParams
from .utils import _nan_unless

__all__ = ["Wishart"]


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma function, the derivative of ``mvlgamma(x, p)``:
    ``sum_{i < p} digamma(x - i / 2)``."""
    i = torch.arange(p, dtype=x.dtype, device=x.device)
    return torch.digamma(x.unsqueeze(-1) - i / 2).sum(-1)


def _half_log_det(L: Tensor) -> Tensor:
    """``log det(L L^T) / 2`` of a Cholesky factor."""
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class Wishart(_ScaleTrilParams, ExponentialFamily):
    r"""Creates a Wishart distribution parameterized by a symmetric positive definite matrix
    :math:`\Sigma`, or its Cholesky decomposition :math:`\Sigma = L L^\top`: the law of
    :math:`\sum_{k=1}^{\nu} x_k x_k^\top` for :math:`x_k \sim N(0, \Sigma)` when :math:`\nu`
    (``df``) is an integer, extended to real :math:`\nu > p - 1`.

    Draws use the Bartlett decomposition, :math:`X = L A A^\top L^\top` with :math:`A` lower
    triangular, :math:`A_{ii}^2 \sim \chi^2(\nu - i)` and standard normal entries below the
    diagonal; they are reparameterized through the chi-squared (gamma) draws.

    Example::

        >>> m = Wishart(torch.tensor([2.0]), covariance_matrix=torch.eye(2))
        >>> m.sample()  # Wishart distributed with mean=`df * I` and
        >>> # variance(x_ij)=`df` for i != j and variance(x_ij)=`2 * df` for i == j

    Args:
        df (float or Tensor): real-valued parameter larger than the (dimension of Square
            matrix) - 1
        covariance_matrix (Tensor): positive-definite covariance matrix
        precision_matrix (Tensor): positive-definite precision matrix
        scale_tril (Tensor): lower-triangular factor of covariance, with positive-valued
            diagonal

    Note:
        Only one of ``covariance_matrix`` or ``precision_matrix`` or ``scale_tril`` can be
        specified. Using ``scale_tril`` will be more efficient: all computations internally
        are based on ``scale_tril``.
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None):
        given, name = _one_matrix(covariance_matrix, precision_matrix, scale_tril)
        p = given.shape[-1]
        if isinstance(df, numbers.Number):
            df_tensor = torch.tensor(float(df), dtype=given.dtype, device=given.device)
        else:
            df_tensor = df
        batch_shape = torch.broadcast_shapes(tuple(df_tensor.shape), tuple(given.shape[:-2]))
        self.df = df_tensor.expand(batch_shape)
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{p - 1}.")
        setattr(self, name, given.expand(tuple(batch_shape) + (-1, -1)))
        super().__init__(batch_shape, given.shape[-2:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_of(given, name)
        self._dist_chi2 = self._bartlett_chi2()

    @property
    def arg_constraints(self) -> dict:
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self._event_shape[-1] - 1)}

    def _bartlett_chi2(self) -> Chi2:
        """chi2(df - i) for i < p: the laws of the squared diagonal of Bartlett's factor."""
        p = self._event_shape[-1]
        i = torch.arange(p, dtype=self.df.dtype, device=self.df.device)
        return Chi2(self.df.unsqueeze(-1) - i, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Wishart, batch_shape, _instance,
                             {"df": 0, "covariance_matrix": 2, "precision_matrix": 2,
                              "scale_tril": 2})
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        new._dist_chi2 = new._bartlett_chi2()
        return new

    @property
    def _p(self) -> int:
        """The matrices' size."""
        return self._event_shape[-1]

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(tuple(self.df.shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self._df_matrix() - self._p - 1
        return _nan_unless(factor > 0, factor * self.covariance_matrix)

    @property
    def variance(self) -> Tensor:
        # Var(X_ij) = df (S_ij^2 + S_ii S_jj). (The diagonal of a copy: S may be expanded, and
        # the gradient of an expanded tensor's diagonal is overcounted by tritongrad's autograd.)
        S = self.covariance_matrix
        diag = S.contiguous().diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (S.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sample(self, sample_shape) -> Tensor:
        shape = self._extended_shape(sample_shape)
        noise = torch.randn(shape, dtype=self.df.dtype, device=self.df.device).tril(-1)
        noise = noise + torch.diag_embed(self._dist_chi2.rsample(sample_shape).sqrt())
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None) -> Tensor:
        r"""Draws by the Bartlett decomposition.

        .. warning::
            In some cases (small ``df``, float32), the Bartlett draw rounds to a singular
            matrix. Such draws are redrawn up to ``max_try_correction`` times (3 by default),
            with a warning; one still singular after that is returned as it is, and may get
            ``-inf`` from ``log_prob``. Validate the samples, and raise ``df`` or
            ``max_try_correction`` if that happens.
        """
        tries = 3 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sample(sample_shape)
        singular = ~constraints.positive_definite.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(tries):
                redraw = self._bartlett_sample(sample_shape)
                sample = torch.where(singular.unsqueeze(-1).unsqueeze(-1), redraw, sample)
                singular = ~constraints.positive_definite.check(sample)
                if not bool(singular.any()):
                    break
            else:
                warnings.warn(f"Singular samples remain after {tries} tries to correct them: "
                              "their log_prob may be -inf", stacklevel=2)
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._p
        L = self._unbroadcasted_scale_tril
        # tr(S^-1 X), with S^-1 = cholesky_inverse(L) symmetric
        trace = (torch.cholesky_inverse(L) * value).sum((-2, -1))
        # (log |det|, as PyTorch's: finite for a value off the support with validation off)
        logdet = torch.linalg.slogdet(value).logabsdet
        return (0.5 * (nu - p - 1) * logdet - 0.5 * trace
                - 0.5 * nu * p * math.log(2) - nu * _half_log_det(L)
                - torch.mvlgamma(0.5 * nu, p))

    def entropy(self) -> Tensor:
        nu, p = self.df, self._p
        half_nu = 0.5 * nu
        return ((p + 1) * _half_log_det(self._unbroadcasted_scale_tril)
                + 0.5 * p * (p + 1) * math.log(2) + torch.mvlgamma(half_nu, p)
                - 0.5 * (nu - p - 1) * _mvdigamma(half_nu, p) + half_nu * p)

    @property
    def _natural_params(self) -> tuple:
        # t(X) = (X, log det X): theta = (-S^-1 / 2, df / 2), the carrier -(p+1)/2 log det X
        return (-0.5 * self.precision_matrix, 0.5 * self.df)

    def _log_normalizer(self, x, y):
        p = self._p
        return -y * torch.logdet(-2 * x) + y * p * math.log(2) + torch.mvlgamma(y, p)
