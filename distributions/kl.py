"""KL divergences between distributions: ``kl_divergence`` and ``register_kl``."""

from __future__ import annotations

import functools
import math
import warnings

from tritongrad.nn.functional import softplus

import tritongrad as torch
from tritongrad import Tensor

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import _EULER, Gumbel
from .half import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import (LowRankMultivariateNormal, _batch_lowrank_logdet,
                                          _batch_lowrank_mahalanobis)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost
from .weibull import Pareto

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}  # (type_p, type_q) -> function


def register_kl(type_p: type, type_q: type):
    """Decorator to register a pairwise function with ``kl_divergence``. Usage::

        @register_kl(Normal, Normal)
        def kl_normal_normal(p, q):
            # insert implementation here

    Lookup returns the most specific (type, type) match ordered by subclass. If the match is
    ambiguous, a ``RuntimeWarning`` is raised; register the more specific pair to resolve it.

    Args:
        type_p (type): a subclass of ``Distribution``.
        type_q (type): a subclass of ``Distribution``.
    """
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _dispatch_kl.cache_clear()
        return fun

    return decorator


@functools.cache
def _dispatch_kl(type_p: type, type_q: type):
    """The registered function for the most specific pair (by position in each type's MRO,
    ``p`` first; ties broken the other way round must agree, else a warning)."""
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    mro_p, mro_q = type_p.__mro__, type_q.__mro__
    left_p, left_q = min(matches, key=lambda m: (mro_p.index(m[0]), mro_q.index(m[1])))
    right_p, right_q = min(matches, key=lambda m: (mro_q.index(m[1]), mro_p.index(m[0])))
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=3)
    return left_fun


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    r"""Compute Kullback-Leibler divergence :math:`KL(p \| q)` between two distributions.

    .. math::

        KL(p \| q) = \int p(x) \log\frac {p(x)} {q(x)} \,dx

    Args:
        p (Distribution): A ``Distribution`` object.
        q (Distribution): A ``Distribution`` object.

    Returns:
        Tensor: A batch of KL divergences of shape ``batch_shape``.

    Raises:
        NotImplementedError: If the distribution types have not been registered via
            ``register_kl``.
    """
    fun = _dispatch_kl(type(p), type(q))
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


def _infinite_where(mask: Tensor, t: Tensor) -> Tensor:
    return torch.where(mask, torch.full_like(t, math.inf), t)


def _zero_where(mask: Tensor, t: Tensor) -> Tensor:
    return torch.where(mask, torch.zeros_like(t), t)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _zero_where(p.probs == 0, _infinite_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _zero_where(p.probs == 1, _infinite_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + (sum_params_p).lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + (sum_params_q).lgamma()
    t3 = (p.concentration1 - q.concentration1) * torch.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * torch.digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * torch.digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    # from https://math.stackexchange.com/questions/2214993/
    # kullback-leibler-divergence-for-binomial-distributions-p-and-q
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return _infinite_where(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _zero_where((p.probs == 0).expand_as(t), _infinite_where((q.probs == 0).expand_as(t), t))
    return t.sum(-1)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + torch.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - torch.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    # From http://bariskurt.com/kullback-leibler-divergence-between-two-dirichlet-and-beta-distributions/
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = sum_p_concentration.lgamma() - sum_q_concentration.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p_concentration.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    # the Bregman divergence of the log normalizer between the natural parameters
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams = [np_.detach().requires_grad_() for np_ in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = torch.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        # <theta_q - theta_p, grad F(theta_p)>: summed over the parameter's own event
        # dimensions (Wishart's df has none though its event is a matrix)
        term = (qnp - pnp) * g
        result = result - _sum_rightmost(term, term.dim() - result.dim())
    return result


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    t1 = -rate_ratio.log()
    return t1 + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * torch.log(p.rate / q.rate)
    t2 = torch.lgamma(q.concentration) - torch.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * torch.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - torch.log1p(-q.probs) / p.probs - q.logits


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    # From http://www.mast.queensu.ca/~communications/Papers/gil-msc11.pdf
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * torch.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    # From https://en.wikipedia.org/wiki/Multivariate_normal_distribution#Kullback%E2%80%93Leibler_divergence
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with "
                         "different event shapes cannot be computed")
    half_term1 = (q._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - p._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    combined_batch_shape = torch.broadcast_shapes(
        tuple(q._unbroadcasted_scale_tril.shape[:-2]),
        tuple(p._unbroadcasted_scale_tril.shape[:-2]))
    n = p.event_shape[0]
    q_scale_tril = q._unbroadcasted_scale_tril.expand(tuple(combined_batch_shape) + (n, n))
    p_scale_tril = p._unbroadcasted_scale_tril.expand(tuple(combined_batch_shape) + (n, n))
    # tr(Sigma_q^-1 Sigma_p) = ||L_q^-1 L_p||_F^2
    term2 = _batch_trace_XXT(torch.linalg.solve_triangular(q_scale_tril, p_scale_tril,
                                                           upper=False))
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, (q.loc - p.loc))
    return half_term1 + 0.5 * (term2 + term3 - n)


def _batch_trace_XXT(bmat: Tensor) -> Tensor:
    """The trace of ``X @ X.T`` for each matrix X of a batch: its squared Frobenius norm."""
    return bmat.pow(2).sum((-2, -1))


def _lowrank_parts(p) -> tuple:
    return p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, p._capacitance_tril


def _woodbury_factor(q) -> Tensor:
    """``A = inv(C) @ W.T @ inv(D)`` of q's low-rank covariance (C its capacitance factor), so
    that ``inv(cov) = inv(D) - A.T @ A``."""
    W, D, C = _lowrank_parts(q)
    return torch.linalg.solve_triangular(C, W.mT / D.unsqueeze(-2), upper=False)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Low Rank Multivariate Normals with "
                         "different event shapes cannot be computed")
    pW, pD, pC = _lowrank_parts(p)
    qW, qD, qC = _lowrank_parts(q)
    term1 = _batch_lowrank_logdet(qW, qD, qC) - _batch_lowrank_logdet(pW, pD, pC)
    term3 = _batch_lowrank_mahalanobis(qW, qD, q.loc - p.loc, qC)
    # tr(inv(qcov) @ pcov) with inv(qcov) = inv(qD) - A.T @ A and pcov = pW @ pW.T + pD
    A = _woodbury_factor(q)
    term21 = (pD / qD).sum(-1)
    term22 = _batch_trace_XXT(pW * qD.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_XXT(A * pD.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(A.matmul(pW))
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    qW, qD, qC = _lowrank_parts(q)
    pL = p._unbroadcasted_scale_tril
    term1 = (_batch_lowrank_logdet(qW, qD, qC)
             - 2 * pL.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    term3 = _batch_lowrank_mahalanobis(qW, qD, q.loc - p.loc, qC)
    A = _woodbury_factor(q)
    term21 = _batch_trace_XXT(pL * qD.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_XXT(A.matmul(pL))
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    pW, pD, pC = _lowrank_parts(p)
    qL = q._unbroadcasted_scale_tril
    term1 = 2 * qL.diagonal(dim1=-2, dim2=-1).log().sum(-1) - _batch_lowrank_logdet(pW, pD, pC)
    term3 = _batch_mahalanobis(qL, (q.loc - p.loc))
    batch = tuple(torch.broadcast_shapes(tuple(qL.shape[:-2]), tuple(pW.shape[:-2])))
    n = p.event_shape[0]
    q_scale_tril = qL.expand(batch + (n, n))
    p_cov_factor = pW.expand(batch + (n, pW.size(-1)))
    p_cov_diag = torch.diag_embed(pD.sqrt()).expand(batch + (n, n))
    term21 = _batch_trace_XXT(torch.linalg.solve_triangular(q_scale_tril, p_cov_factor,
                                                            upper=False))
    term22 = _batch_trace_XXT(torch.linalg.solve_triangular(q_scale_tril, p_cov_diag,
                                                            upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (torch.log(p.rate) - torch.log(q.rate)) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    extra_event_dim = len(p.event_shape) - len(p.base_dist.event_shape)
    base_kl_divergence = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(base_kl_divergence, extra_event_dim)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _infinite_where((q.low > p.low) | (q.high < p.high), result)


# -- pairs across families (PyTorch's) ---------------------------------------------------------
#
# Note [cross entropies from expectations]
# Most of these are KL(p || q) = -H(p) + H(p, q), with the cross entropy
# H(p, q) = -E_p[log q(X)] written once per family of q (the _cross_* functions) in terms of a
# few expectations under p (E[X], E[X^2], E[log X], E[log(1 - X)], E[exp(tX)]) given once
# per family of p (the _E* tables). Where p puts mass outside q's support the result is inf;
# the pairs whose supports never nest are listed in _ALWAYS_INFINITE.


def _expect_x2(p) -> Tensor:
    return p.variance + p.mean.pow(2)


def _uniform_expect_log(low, high) -> Tensor:
    # E[log X] for X ~ Uniform(low, high), low >= 0: [x log x - x] / (high - low)
    return (torch.xlogy(high, high) - torch.xlogy(low, low)) / (high - low) - 1


_E_LOG_X = {  # E_p[log X] (p's support in [0, inf))
    Beta: lambda p: torch.digamma(p.concentration1)
    - torch.digamma(p.concentration1 + p.concentration0),
    Exponential: lambda p: -torch.log(p.rate) - _EULER,
    Gamma: lambda p: torch.digamma(p.concentration) - torch.log(p.rate),
    Pareto: lambda p: torch.log(p.scale) + p.alpha.reciprocal(),
    Uniform: lambda p: _uniform_expect_log(p.low, p.high),
}
_E_LOG_1MX = {  # E_p[log(1 - X)] (p's support in [0, 1])
    Uniform: lambda p: _uniform_expect_log(1 - p.high, 1 - p.low),
}
_MGF = {  # E_p[exp(t X)], for t < 0
    Exponential: lambda p, t: p.rate / (p.rate - t),
    Gamma: lambda p, t: (1 - t / p.rate).pow(-p.concentration),
    Gumbel: lambda p, t: torch.exp(torch.lgamma(1 - p.scale * t) + p.loc * t),
    Normal: lambda p, t: torch.exp(p.loc * t + 0.5 * (p.scale * t).pow(2)),
    Uniform: lambda p, t: (torch.exp(t * p.high) - torch.exp(t * p.low))
    / (t * (p.high - p.low)),
}


def _lower(p):
    """The lower end of p's support, as a number or tensor (Uniform's low, Pareto's scale,
    0 for the others used here)."""
    if isinstance(p, Uniform):
        return p.low
    if isinstance(p, Pareto):
        return p.scale
    return 0.0


def _upper(p):
    return p.high if isinstance(p, Uniform) else 1.0


def _inf_outside(p, result: Tensor, low=None, high=None) -> Tensor:
    """``result``, and inf where p's support leaves [low, high] (``None``: unbounded on that
    side)."""
    for outside in (low is not None and _lower(p) < low,
                    high is not None and _upper(p) > high):
        if isinstance(outside, Tensor):
            result = _infinite_where(outside, result)
        elif outside:
            result = torch.full_like(result, math.inf)
    return result


def _cross_normal(p, q):
    return (torch.log(q.scale) + 0.5 * math.log(2 * math.pi)
            + (p.variance + (p.mean - q.loc).pow(2)) / (2 * q.scale.pow(2)))


def _cross_exponential(p, q):
    return _inf_outside(p, q.rate * p.mean - torch.log(q.rate), low=0)


def _cross_gamma(p, q):
    a, b = q.concentration, q.rate
    result = (torch.lgamma(a) - a * torch.log(b) - (a - 1) * _E_LOG_X[_family(p)](p)
              + b * p.mean)
    return _inf_outside(p, result, low=0)


def _cross_gumbel(p, q):
    t = -q.scale.reciprocal()
    return (torch.log(q.scale) + (p.mean - q.loc) / q.scale
            + torch.exp(q.loc / q.scale) * _MGF[_family(p)](p, t))


def _cross_beta(p, q):
    a, b = q.concentration1, q.concentration0
    family = _family(p)
    result = (torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)
              - (a - 1) * _E_LOG_X[family](p) - (b - 1) * _E_LOG_1MX[family](p))
    return _inf_outside(p, result, low=0, high=1)


def _cross_continuous_bernoulli(p, q):
    # log q(x) = x logits - softplus(logits) + log C(probs): linear in x
    result = softplus(q.logits) - p.mean * q.logits - q._cont_bern_log_norm()
    return _inf_outside(p, result, low=0, high=1)


def _cross_uniform(p, q):
    return _inf_outside(p, torch.log(q.high - q.low), low=q.low, high=q.high)


def _cross_pareto(p, q):
    result = ((q.alpha + 1) * _E_LOG_X[_family(p)](p) - torch.log(q.alpha)
              - q.alpha * torch.log(q.scale))
    return _inf_outside(p, result, low=q.scale)


def _family(p) -> type:
    """The key of p's family in the expectation tables."""
    return next(f for f in (Beta, Exponential, Gamma, Gumbel, Normal, Pareto, Uniform,
                            ContinuousBernoulli, Laplace) if isinstance(p, f))


_CROSS_PAIRS = {
    Normal: (Beta, ContinuousBernoulli, Exponential, Gamma, Gumbel, Laplace, Pareto, Uniform),
    Exponential: (Beta, ContinuousBernoulli, Gamma, Pareto, Uniform),
    Gamma: (Beta, Exponential, Pareto, Uniform),
    Gumbel: (Exponential, Gamma, Gumbel, Normal, Uniform),
    Beta: (Uniform,),
    ContinuousBernoulli: (Beta, Uniform),
    Uniform: (Beta, ContinuousBernoulli),
    Pareto: (Pareto, Uniform),
}  # q's family: the families of p with a finite KL to it
_CROSS = {Normal: _cross_normal, Exponential: _cross_exponential, Gamma: _cross_gamma,
          Gumbel: _cross_gumbel, Beta: _cross_beta,
          ContinuousBernoulli: _cross_continuous_bernoulli, Uniform: _cross_uniform,
          Pareto: _cross_pareto}


# the power k of E_p[X^k] that q's cross entropy takes: a Pareto p has it only for alpha > k
_PARETO_MOMENT = {Exponential: 1, Gamma: 1, Normal: 2}


def _register_cross(type_p: type, type_q: type) -> None:
    @register_kl(type_p, type_q)
    def _kl_cross(p, q):
        infinite = None
        if isinstance(p, Pareto) and type_q in _PARETO_MOMENT:
            # Note [gradients of an infinite KL]: where the KL is inf its gradient is 0 (as
            # PyTorch's masked assignment leaves it); the formula is evaluated at a finite
            # stand-in alpha there, so that no 0 * inf = nan flows back through the moments
            k = _PARETO_MOMENT[type_q]
            infinite = p.alpha <= k
            safe_alpha = torch.where(infinite, torch.full_like(p.alpha, k + 1.0), p.alpha)
            p = Pareto(p.scale, safe_alpha, validate_args=False)
        cross = _CROSS[type_q](p, q)
        # (masked after the entropy is subtracted: inf - H(p) would still carry H's gradient)
        outside = cross == math.inf
        return _infinite_where(outside if infinite is None else outside | infinite,
                               cross - p.entropy())


for _q, _ps in _CROSS_PAIRS.items():
    for _p in _ps:
        _register_cross(_p, _q)

_ALWAYS_INFINITE = [  # p's support is never inside q's
    (Beta, Pareto), (ContinuousBernoulli, Pareto), (Exponential, Beta),
    (Exponential, ContinuousBernoulli), (Exponential, Pareto), (Exponential, Uniform),
    (Gamma, Beta), (Gamma, ContinuousBernoulli), (Gamma, Pareto), (Gamma, Uniform),
    (Gumbel, Beta), (Gumbel, ContinuousBernoulli), (Gumbel, Exponential), (Gumbel, Gamma),
    (Gumbel, Pareto), (Gumbel, Uniform), (Laplace, Beta), (Laplace, ContinuousBernoulli),
    (Laplace, Exponential), (Laplace, Gamma), (Laplace, Pareto), (Laplace, Uniform),
    (Normal, Beta), (Normal, ContinuousBernoulli), (Normal, Exponential), (Normal, Gamma),
    (Normal, Pareto), (Normal, Uniform), (Pareto, Beta), (Pareto, ContinuousBernoulli),
    (Pareto, Uniform), (Poisson, Bernoulli), (Poisson, Binomial),
]


def _kl_infinite(p, q):
    shape = torch.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    dtype = p.mean.dtype
    return torch.full(shape, math.inf, dtype=dtype, device=p.mean.device)


for _p, _q in _ALWAYS_INFINITE:
    register_kl(_p, _q)(_kl_infinite)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # log q(x) = x log(rate) - rate - log x!, and log x! = 0 on {0, 1}
    return q.rate - p.probs * torch.log(q.rate) - p.entropy()


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # Chyzak and Nielsen (2019), "A closed-form formula for the Kullback-Leibler divergence
    # between Cauchy distributions"
    numerator = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return torch.log(numerator / (4 * p.scale * q.scale))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (var_ratio - 1 - var_ratio.log())


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = torch.log(scale_ratio)
    t2 = math.sqrt(2 / math.pi) * p.scale * torch.exp(-0.5 * loc_diff_scale_ratio.pow(2))
    t3 = loc_diff * torch.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))
