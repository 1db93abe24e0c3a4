"""Regression tests from a differential sweep of ``tritongrad.distributions`` against PyTorch's
``torch.distributions``, written without torch: values and gradients against SciPy in float64
(and float32 at a looser tolerance), the reparameterization gradients against the implicit
formula ``dx/dtheta = -(dF/dtheta)(x) / f(x)``, and the points where the sweep found the two
apart (messages, reprs, constraints, KL gradients where the KL is infinite)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tritongrad as torch
from tritongrad import distributions as D
from tritongrad.distributions import constraints

st = pytest.importorskip("scipy.stats")

TOL = {"float64": 1e-7, "float32": 2e-4}


def t(x, dtype="float64", grad=False):
    out = torch.tensor(np.asarray(x, dtype=dtype))
    return out.requires_grad_() if grad else out


def close(actual, expected, tol):
    np.testing.assert_allclose(actual.detach().cpu().numpy().astype(np.float64),
                               np.asarray(expected, dtype=np.float64), rtol=tol, atol=tol)


def close_array(actual, expected, tol):
    np.testing.assert_allclose(actual, np.asarray(expected, dtype=np.float64), rtol=tol, atol=tol)


# name: (parameters, the matching scipy.stats distribution, points of the support, methods)
A = np.array
CASES = {
    "Normal": (dict(loc=A([0.0, 1.5]), scale=A([1.0, 0.5])),
               lambda p: st.norm(p["loc"], p["scale"]), A([0.3, 1.0]), "cdf icdf entropy"),
    "Laplace": (dict(loc=A([0.0, 1.0]), scale=A([1.0, 2.0])),
                lambda p: st.laplace(p["loc"], p["scale"]), A([-0.5, 3.0]), "cdf icdf entropy"),
    "Cauchy": (dict(loc=A([0.0, 1.0]), scale=A([1.0, 2.0])),
               lambda p: st.cauchy(p["loc"], p["scale"]), A([-0.5, 3.0]),
               "cdf icdf entropy no-moments"),
    "Gumbel": (dict(loc=A([0.0, 1.0]), scale=A([1.0, 2.0])),
               lambda p: st.gumbel_r(p["loc"], p["scale"]), A([-0.5, 3.0]), "cdf icdf entropy"),
    "Exponential": (dict(rate=A([0.5, 2.0])), lambda p: st.expon(scale=1 / p["rate"]),
                    A([0.3, 1.7]), "cdf icdf entropy"),
    "Gamma": (dict(concentration=A([0.5, 3.0]), rate=A([1.0, 2.0])),
              lambda p: st.gamma(p["concentration"], scale=1 / p["rate"]), A([0.3, 1.7]),
              "cdf entropy"),
    "Chi2": (dict(df=A([1.0, 3.0])), lambda p: st.chi2(p["df"]), A([0.3, 1.7]), "cdf entropy"),
    "Beta": (dict(concentration1=A([0.5, 2.0]), concentration0=A([1.5, 3.0])),
             lambda p: st.beta(p["concentration1"], p["concentration0"]), A([0.2, 0.7]),
             "entropy"),
    "StudentT": (dict(df=A([3.0, 5.0]), loc=A([0.0, 1.0]), scale=A([1.0, 2.0])),
                 lambda p: st.t(p["df"], p["loc"], p["scale"]), A([-0.5, 3.0]), "entropy"),
    "LogNormal": (dict(loc=A([0.0, 1.0]), scale=A([1.0, 0.5])),
                  lambda p: st.lognorm(p["scale"], scale=np.exp(p["loc"])), A([0.3, 1.7]),
                  "cdf icdf entropy"),
    "HalfNormal": (dict(scale=A([1.0, 2.0])), lambda p: st.halfnorm(scale=p["scale"]),
                   A([0.3, 1.7]), "cdf icdf entropy"),
    "HalfCauchy": (dict(scale=A([1.0, 2.0])), lambda p: st.halfcauchy(scale=p["scale"]),
                   A([0.3, 1.7]), "cdf icdf entropy"),
    "Pareto": (dict(scale=A([1.0, 2.0]), alpha=A([2.5, 3.0])),
               lambda p: st.pareto(p["alpha"], scale=p["scale"]), A([1.3, 2.7]),
               "cdf icdf entropy"),
    "Weibull": (dict(scale=A([1.0, 2.0]), concentration=A([0.5, 3.0])),
                lambda p: st.weibull_min(p["concentration"], scale=p["scale"]), A([0.3, 1.7]),
                "cdf icdf entropy"),
    "InverseGamma": (dict(concentration=A([2.5, 3.0]), rate=A([1.0, 2.0])),
                     lambda p: st.invgamma(p["concentration"], scale=p["rate"]), A([0.3, 1.7]),
                     "cdf entropy"),
    "FisherSnedecor": (dict(df1=A([3.0, 5.0]), df2=A([5.0, 10.0])),
                       lambda p: st.f(p["df1"], p["df2"]), A([0.3, 1.7]), ""),
    "Uniform": (dict(low=A([0.0, -1.0]), high=A([2.0, 3.0])),
                lambda p: st.uniform(p["low"], p["high"] - p["low"]), A([0.3, 1.7]),
                "cdf icdf entropy"),
    "VonMises": (dict(loc=A([0.0, 1.0]), concentration=A([0.5, 3.0])),
                 lambda p: st.vonmises(p["concentration"], p["loc"]), A([0.3, 1.7]),
                 "no-moments"),  # (its variance is the circular one, 1 - I1/I0)
    "GeneralizedPareto": (dict(loc=A([0.0, 1.0]), scale=A([1.0, 2.0]),
                               concentration=A([0.5, -0.25])),
                          lambda p: st.genpareto(p["concentration"], p["loc"], p["scale"]),
                          A([0.3, 1.7]), "cdf icdf entropy"),
    "Poisson": (dict(rate=A([0.5, 4.0])), lambda p: st.poisson(p["rate"]), A([0.0, 3.0]), ""),
    "Binomial": (dict(total_count=A([5.0, 10.0]), probs=A([0.2, 0.7])),
                 lambda p: st.binom(p["total_count"], p["probs"]), A([1.0, 7.0]), ""),
    "Geometric": (dict(probs=A([0.2, 0.7])), lambda p: st.geom(p["probs"], loc=-1),
                  A([0.0, 3.0]), "entropy"),
    "NegativeBinomial": (dict(total_count=A([5.0, 2.5]), probs=A([0.2, 0.7])),
                         lambda p: st.nbinom(p["total_count"], 1 - p["probs"]), A([0.0, 3.0]),
                         ""),
    "Bernoulli": (dict(probs=A([0.2, 0.7])), lambda p: st.bernoulli(p["probs"]), A([0.0, 1.0]),
                  "entropy"),
}


def _scipy_log_prob(ref, x):
    return ref.logpmf(x) if hasattr(ref.dist, "pmf") else ref.logpdf(x)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_scipy(name, dtype):
    params, scipy_dist, x, methods = CASES[name]
    d = getattr(D, name)(**{k: t(v, dtype) for k, v in params.items()})
    ref = scipy_dist(params)
    tol = TOL[dtype]
    out = d.log_prob(t(x, dtype))
    assert out.dtype == getattr(torch, dtype)
    close(out, _scipy_log_prob(ref, x), tol)
    if "no-moments" not in methods:
        close(d.mean, ref.mean(), tol)
        close(d.variance, ref.var(), tol)
        close(d.stddev, ref.std(), tol)
    if "cdf" in methods:
        close(d.cdf(t(x, dtype)), ref.cdf(x), tol)
    if "icdf" in methods:
        q = A([0.25, 0.6])
        close(d.icdf(t(q, dtype)), ref.ppf(q), 10 * tol)
    if "entropy" in methods:
        close(d.entropy(), ref.entropy(), tol)
        close(d.perplexity(), np.exp(ref.entropy()), tol)
    for shape in [(), (2, 3)]:
        s = d.sample(shape)
        assert tuple(s.shape) == shape + (2,) and s.dtype == getattr(torch, dtype)


def _grads(out, leaves) -> list:
    """The gradients of ``out.sum()`` as arrays; 0 for a leaf that ``out`` does not use. (The
    graph is kept: some distributions build part of it in their constructor.)"""
    grads = torch.autograd.grad(out.sum(), leaves, allow_unused=True, retain_graph=True)
    return [np.zeros(tuple(v.shape)) if g is None else g.numpy() for g, v in zip(grads, leaves)]


def _fd(f, params, name, h=1e-6):
    up, down = dict(params), dict(params)
    up[name] = params[name] + h
    down[name] = params[name] - h
    return (f(up) - f(down)) / (2 * h)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Gumbel", "Exponential",
                                  "Gamma", "Beta", "StudentT", "LogNormal", "Pareto",
                                  "Weibull", "InverseGamma", "GeneralizedPareto", "Poisson",
                                  "Binomial", "Geometric", "NegativeBinomial"])
def test_log_prob_and_entropy_gradients_match_finite_differences(name):
    params, scipy_dist, x, methods = CASES[name]
    leaves = {k: t(v, grad=True) for k, v in params.items()}
    d = getattr(D, name)(**leaves)
    wrt = [k for k in params if k != "total_count"]
    for g, k in zip(_grads(d.log_prob(t(x)), [leaves[k] for k in wrt]), wrt):
        close_array(g, _fd(lambda p: _scipy_log_prob(scipy_dist(p), x), params, k), 1e-5)
    if "entropy" in methods:
        for g, k in zip(_grads(d.entropy(), [leaves[k] for k in wrt]), wrt):
            close_array(g, _fd(lambda p: scipy_dist(p).entropy(), params, k), 1e-5)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Gumbel", "Exponential",
                                  "Gamma", "Chi2", "LogNormal", "HalfNormal", "HalfCauchy",
                                  "Pareto", "Weibull", "InverseGamma", "Uniform",
                                  "GeneralizedPareto"])
def test_rsample_gradient_is_the_implicit_reparameterization(name):
    # for x = F^-1(u; theta) at fixed noise u: dx/dtheta = -(dF/dtheta)(x) / f(x)
    params, scipy_dist, _, _ = CASES[name]
    leaves = {k: t(v, grad=True) for k, v in params.items()}
    d = getattr(D, name)(**leaves)
    assert d.has_rsample
    torch.manual_seed(3)
    x = d.rsample()
    xv = x.detach().numpy()
    pdf = scipy_dist(params).pdf(xv)
    for k in params:
        (g,) = torch.autograd.grad(x.sum(), [leaves[k]], retain_graph=True)
        expected = -_fd(lambda p: scipy_dist(p).cdf(xv), params, k) / pdf
        close(g, expected, 1e-5)


# -- validation: PyTorch's messages ------------------------------------------------------------


def test_uniform_bounds_are_checked_as_constraints():
    d = D.Uniform(t([0.0, -1.0]), t([2.0, 3.0]))
    assert repr(d.arg_constraints["low"]).startswith("LessThan(upper_bound=tensor([2., 3.]")
    assert repr(d.arg_constraints["high"]).startswith("GreaterThan(lower_bound=tensor([ 0., -1.]")
    with pytest.raises(ValueError, match=re.escape(
            "Expected parameter low (Tensor of shape (2,)) of distribution Uniform(low: "
            "tritongrad.Size([2]), high: tritongrad.Size([2])) to satisfy the constraint "
            "LessThan(upper_bound=")):
        D.Uniform(t([0.0, 4.0]), t([2.0, 3.0]))
    with pytest.raises(ValueError, match=re.escape(
            "Expected parameter low (Tensor of shape ()) of distribution Uniform(low: 2.0, "
            "high: 1.0) to satisfy the constraint LessThan(upper_bound=1.0), but found invalid "
            "values:\n2.0")):
        D.Uniform(2.0, 1.0)
    D.Uniform(2.0, 1.0, validate_args=False)  # not checked when asked not to
    expanded = d.expand((3, 2))  # the bounds follow the expanded parameters
    assert tuple(expanded.arg_constraints["low"].upper_bound.shape) == (3, 2)


def test_zero_dim_tensors_print_as_numbers():
    # PyTorch formats 0-dim tensors in f-strings as their Python number
    assert repr(D.Normal(t(0.0), t(2.0))) == "Normal(loc: 0.0, scale: 2.0)"
    assert repr(D.Normal(t([0.0]), t([2.0]))).startswith("Normal(loc: tensor([0.]")
    assert repr(D.Uniform(t(0.0), t(1.0)).support) == ("Interval(lower_bound=0.0, "
                                                       "upper_bound=1.0)")
    w = D.Wishart(t(4.0), covariance_matrix=t(np.eye(3)))
    assert repr(w) == "Wishart(covariance_matrix: tritongrad.Size([3, 3]), df: 4.0)"
    with pytest.raises(ValueError, match=r"found invalid values:\n-1.0$"):
        D.Normal(t(0.0), t(-1.0))
    with pytest.raises(ValueError, match=r"found invalid values:\n-1.5$"):
        D.Exponential(t(1.0)).log_prob(t(-1.5))
    with pytest.raises(ValueError, match=re.escape(
            "Value of df=tensor([1., 6.], dtype=tritongrad.float64) expected to be greater "
            "than ndim - 1 = 2.")):
        D.Wishart(t([1.0, 6.0]), covariance_matrix=t(np.eye(3)))
    with pytest.raises(ValueError, match=re.escape("Value of df=1.0 expected")):
        D.Wishart(1.0, covariance_matrix=t(np.eye(3)))


def test_geometric_zero_probs_message():
    with pytest.raises(ValueError, match=re.escape(
            "Expected parameter probs (Tensor of shape (2,)) of distribution Geometric(probs: "
            "tritongrad.Size([2])) to be positive but found invalid values:\ntensor([0.]")):
        D.Geometric(t([0.0, 0.5]))
    with pytest.raises(ValueError, match="to satisfy the constraint Interval"):
        D.Geometric(t([1.5, 0.5]))


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # (inf - inf in the check)
def test_positive_definite_refuses_infinite_matrices():
    pd = constraints.positive_definite
    assert pd.check(t([[2.0, 1.0], [1.0, 2.0]])).item()
    assert pd.check(t(np.full((2, 3, 3), math.inf))).tolist() == [False, False]
    assert pd.check(t([[math.inf, 0.0], [0.0, 1.0]])).item() is False
    with pytest.raises(ValueError, match="to satisfy the constraint PositiveDefinite()"):
        D.MultivariateNormal(t([0.0, 0.0]), t(np.full((2, 2), math.inf)))


def test_mixture_component_message():
    with pytest.raises(ValueError, match="The Component distribution needs to be an instance "
                                         "of torch.distributions.Distribution"):
        D.MixtureSameFamily(D.Categorical(t([0.3, 0.7])), "normal")


# -- KL divergences -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["Beta-Uniform", "Pareto-Exponential", "Pareto-Gamma",
                                  "Pareto-Normal", "Pareto-Pareto", "Uniform-Pareto",
                                  "Uniform-Exponential", "ContinuousBernoulli-Uniform"])
def test_kl_gradient_is_zero_where_the_kl_is_infinite(case):
    # PyTorch assigns inf into the result, which leaves those entries a zero gradient; here the
    # first entry of each batch is infinite (p leaves q's support, or a moment of p that the
    # cross entropy needs is infinite) and the second finite
    a, b = t([0.5, 2.0], grad=True), t([1.5, 3.0], grad=True)
    c, e = t([0.5, 1.0], grad=True), t([0.5, 4.0], grad=True)
    cb = t([0.3, 0.6], grad=True)
    p, q = {
        "Beta-Uniform": lambda: (D.Beta(a, b), D.Uniform(t([0.1, 0.0]), t([0.9, 1.0]))),
        "Pareto-Exponential": lambda: (D.Pareto(c, e), D.Exponential(a)),
        "Pareto-Gamma": lambda: (D.Pareto(c, e), D.Gamma(a, b)),
        "Pareto-Normal": lambda: (D.Pareto(c, b + 0.5), D.Normal(a, b)),
        "Pareto-Pareto": lambda: (D.Pareto(c, e), D.Pareto(t([1.0, 0.5]), a)),
        "Uniform-Pareto": lambda: (D.Uniform(c, 3 * c), D.Pareto(t([1.0, 0.5]), a)),
        "Uniform-Exponential": lambda: (D.Uniform(c - 1, 2 * c), D.Exponential(b)),
        "ContinuousBernoulli-Uniform": lambda: (D.ContinuousBernoulli(cb),
                                                D.Uniform(t([0.1, 0.0]), t([1.0, 1.0]))),
    }[case]()
    kl = D.kl_divergence(p, q)
    assert kl[0].item() == math.inf and math.isfinite(kl[1].item())
    grads = _grads(kl, [a, b, c, e, cb])
    assert all(np.isfinite(g).all() and g[0] == 0.0 for g in grads)
    assert any(g[1] != 0.0 for g in grads)  # (the finite entry does carry a gradient)


def _cb_log_pdf(x, lam):
    # continuous Bernoulli: C(lam) lam^x (1 - lam)^(1 - x), C = 2 artanh(1 - 2 lam) / (1 - 2 lam)
    c = 2 * np.arctanh(1 - 2 * lam) / (1 - 2 * lam)
    return np.log(c) + x * np.log(lam) + (1 - x) * np.log1p(-lam)


def _cb_kl(lp, lq):
    x = np.linspace(0.0, 1.0, 20001)
    f = np.exp(_cb_log_pdf(x[:, None], lp))
    integrand = f * (_cb_log_pdf(x[:, None], lp) - _cb_log_pdf(x[:, None], lq))
    return np.trapezoid(integrand, x, axis=0) if hasattr(np, "trapezoid") else np.trapz(
        integrand, x, axis=0)


def test_continuous_bernoulli_kl_value_and_gradients():
    lp, lq = A([0.3, 0.8]), A([0.6, 0.1])
    p_probs, q_probs = t(lp, grad=True), t(lq, grad=True)
    kl = D.kl_divergence(D.ContinuousBernoulli(p_probs), D.ContinuousBernoulli(q_probs))
    close(kl, _cb_kl(lp, lq), 1e-7)
    gp, gq = torch.autograd.grad(kl.sum(), [p_probs, q_probs])
    h = 1e-5
    close(gp, (_cb_kl(lp + h, lq) - _cb_kl(lp - h, lq)) / (2 * h), 1e-5)
    close(gq, (_cb_kl(lp, lq + h) - _cb_kl(lp, lq - h)) / (2 * h), 1e-5)


def test_shape_messages_use_pytorchs_wording():
    with pytest.raises(ValueError, match="^covariance_matrix must be at least two-dimensional"):
        D.MultivariateNormal(t([0.0, 0.0]), t([1.0, 1.0]))
    with pytest.raises(ValueError, match="^scale_tril matrix must be at least two-dimensional"):
        D.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([1.0, 1.0]))
    with pytest.raises(ValueError, match=re.escape(
            "cov_diag must be a batch of vectors with shape tritongrad.Size([2])")):
        D.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0], [1.0]]), t([1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=re.escape(
            "base_distribution needs to have shape with size at least 1, but got "
            "tritongrad.Size([]).")):
        D.TransformedDistribution(D.Normal(t(0.0), t(1.0)), [D.StickBreakingTransform()])


# -- distributions.utils -------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 4])
def test_tril_matrix_to_vec_and_back(n):
    from tritongrad.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
    mat = np.random.default_rng(n).normal(size=(2, n, n))
    for diag in range(-n, n):
        rows, cols = np.tril_indices(n, diag)  # NumPy's row-major order is PyTorch's
        vec = tril_matrix_to_vec(t(mat), diag)
        close_array(vec.numpy(), mat[:, rows, cols], 0)
        if vec.shape[-1] == 0:
            continue
        expected = np.zeros_like(mat)
        expected[:, rows, cols] = mat[:, rows, cols]
        close_array(vec_to_tril_matrix(vec, diag).numpy(), expected, 0)
    # differentiable: each vector entry receives the weight of the matrix entry it fills
    vec = t(np.arange(1.0, n * (n + 1) // 2 + 1), grad=True)
    weights = np.arange(float(n * n)).reshape(n, n)
    (vec_to_tril_matrix(vec) * t(weights)).sum().backward()
    close_array(vec.grad.numpy(), weights[np.tril_indices(n)], 0)
    with pytest.raises(ValueError, match=re.escape(f"diag ({n}) provided is outside "
                                                   f"[{-n}, {n - 1}].")):
        tril_matrix_to_vec(t(mat), n)


def test_vec_to_tril_matrix_refuses_other_lengths():
    from tritongrad.distributions.utils import vec_to_tril_matrix
    with pytest.raises(ValueError, match="The size of last dimension is 5 which cannot be "
                                         "expressed as the lower triangular part"):
        vec_to_tril_matrix(t(np.zeros(5)))


def test_reshape_transform_shape_message():
    with pytest.raises(ValueError, match=re.escape(
            "Shape mismatch: expected (4, 3) but got tritongrad.Size([3, 1])")):
        D.ReshapeTransform((3,), (3, 1)).inverse_shape((4, 3))
