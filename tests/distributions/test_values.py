"""log_prob, entropy, mean, variance, cdf/icdf of each distribution against float64
closed forms written with NumPy and math (no scipy), on the CPU and the emulated CUDA device."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritongrad as torch
from tritongrad import distributions as D

lgamma = np.vectorize(math.lgamma)


def digamma(x):
    # (a reference independent of the library's: the derivative of math.lgamma)
    h = 1e-5
    return (lgamma(np.asarray(x) + h) - lgamma(np.asarray(x) - h)) / (2 * h)


def erf(x):
    return np.vectorize(math.erf)(x)


def t(x, device="cpu"):
    return torch.tensor(np.asarray(x, dtype=np.float64), device=device)


def close(actual, expected, tol=1e-7):
    np.testing.assert_allclose(actual.cpu().numpy(), expected, rtol=tol, atol=tol)


LOC, SCALE = np.array([0.0, 1.5, -2.0]), np.array([1.0, 0.5, 3.0])
X = np.array([0.3, 1.0, 4.0])


def test_normal(device):
    d = D.Normal(t(LOC, device), t(SCALE, device))
    close(d.log_prob(t(X, device)),
          -((X - LOC) ** 2) / (2 * SCALE**2) - np.log(SCALE) - 0.5 * math.log(2 * math.pi))
    close(d.entropy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log(SCALE))
    close(d.mean, LOC)
    close(d.variance, SCALE**2)
    close(d.stddev, SCALE)
    close(d.cdf(t(X, device)), 0.5 * (1 + erf((X - LOC) / (SCALE * math.sqrt(2)))))
    close(d.icdf(d.cdf(t(X, device))), X, 1e-6)


def test_uniform():
    d = D.Uniform(t([0.0, -1.0]), t([2.0, 3.0]))
    close(d.log_prob(t([1.0, 2.5])), -np.log([2.0, 4.0]))
    outside = D.Uniform(t([0.0, -1.0]), t([2.0, 3.0]), validate_args=False)
    assert outside.log_prob(t([3.0, 0.0]))[0].item() == -math.inf  # outside [low, high)
    close(d.entropy(), np.log([2.0, 4.0]))
    close(d.mean, [1.0, 1.0])
    close(d.variance, np.array([4.0, 16.0]) / 12)
    close(outside.cdf(t([1.0, 5.0])), [0.5, 1.0])
    close(d.icdf(t([0.25, 0.5])), [0.5, 1.0])


def test_exponential_and_laplace(device):
    rate = np.array([0.5, 2.0, 4.0])
    e = D.Exponential(t(rate, device))
    close(e.log_prob(t(X, device)), np.log(rate) - rate * X)
    close(e.entropy(), 1 - np.log(rate))
    close(e.mean, 1 / rate)
    close(e.variance, 1 / rate**2)
    close(e.cdf(t(X, device)), 1 - np.exp(-rate * X))
    close(e.icdf(e.cdf(t(X, device))), X, 1e-6)
    lap = D.Laplace(t(LOC, device), t(SCALE, device))
    close(lap.log_prob(t(X, device)), -np.log(2 * SCALE) - np.abs(X - LOC) / SCALE)
    close(lap.entropy(), 1 + np.log(2 * SCALE))
    close(lap.variance, 2 * SCALE**2)
    z = (X - LOC) / SCALE
    close(lap.cdf(t(X, device)), np.where(z < 0, 0.5 * np.exp(z), 1 - 0.5 * np.exp(-z)))
    close(lap.icdf(lap.cdf(t(X, device))), X, 1e-6)


def test_gamma_beta_dirichlet(device="cpu"):  # (CUDA: test_sampling.py)
    a, b = np.array([0.5, 2.0, 7.0]), np.array([1.5, 0.3, 2.0])
    g = D.Gamma(t(a, device), t(b, device))
    close(g.log_prob(t(X, device)),
          a * np.log(b) + (a - 1) * np.log(X) - b * X - lgamma(a), 1e-6)
    close(g.entropy(), a - np.log(b) + lgamma(a) + (1 - a) * digamma(a), 1e-6)
    close(g.mean, a / b)
    close(g.variance, a / b**2)
    close(g.mode, np.maximum((a - 1) / b, 0))
    u = np.array([0.2, 0.5, 0.9])
    be = D.Beta(t(a, device), t(b, device))
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    close(be.log_prob(t(u, device)), (a - 1) * np.log(u) + (b - 1) * np.log1p(-u) - log_beta,
          1e-6)
    close(be.entropy(), log_beta - (a - 1) * digamma(a) - (b - 1) * digamma(b)
          + (a + b - 2) * digamma(a + b), 1e-6)
    close(be.mean, a / (a + b))
    close(be.variance, a * b / ((a + b) ** 2 * (a + b + 1)))
    conc = np.array([[0.5, 2.0, 3.0], [1.0, 1.0, 1.0]])
    x = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])
    di = D.Dirichlet(t(conc, device))
    a0 = conc.sum(-1)
    close(di.log_prob(t(x, device)), ((conc - 1) * np.log(x)).sum(-1) + lgamma(a0)
          - lgamma(conc).sum(-1), 1e-6)
    close(di.entropy(), lgamma(conc).sum(-1) - lgamma(a0) + (a0 - 3) * digamma(a0)
          - ((conc - 1) * digamma(conc)).sum(-1), 1e-6)
    close(di.mean, conc / a0[:, None])
    close(di.variance, conc * (a0[:, None] - conc) / (a0[:, None] ** 2 * (a0[:, None] + 1)))


def test_lognormal():
    d = D.LogNormal(t(LOC), t(SCALE))
    close(d.log_prob(t(X)), -((np.log(X) - LOC) ** 2) / (2 * SCALE**2) - np.log(SCALE * X)
          - 0.5 * math.log(2 * math.pi))
    close(d.mean, np.exp(LOC + SCALE**2 / 2))
    close(d.variance, np.expm1(SCALE**2) * np.exp(2 * LOC + SCALE**2), 1e-6)
    close(d.entropy(), LOC + 0.5 + 0.5 * math.log(2 * math.pi) + np.log(SCALE))


def test_bernoulli_probs_and_logits(device):
    p = np.array([0.1, 0.5, 0.9])
    for d in (D.Bernoulli(probs=t(p, device)), D.Bernoulli(logits=t(np.log(p / (1 - p)), device))):
        close(d.probs, p)
        close(d.log_prob(t([1.0, 0.0, 0.0], device)), np.log([0.1, 0.5, 0.1]))
        close(d.entropy(), -(p * np.log(p) + (1 - p) * np.log1p(-p)))
        close(d.mean, p)
        close(d.variance, p * (1 - p))
    assert d.enumerate_support().tolist() == [[0.0] * 3, [1.0] * 3]
    assert np.isnan(d.mode[1].item()) and d.mode[2].item() == 1.0


def test_categorical_and_one_hot(device):
    w = np.array([[1.0, 2.0, 7.0], [5.0, 4.0, 1.0]])
    p = w / w.sum(-1, keepdims=True)
    for d in (D.Categorical(probs=t(w, device)), D.Categorical(logits=t(np.log(w) + 3, device))):
        assert d.batch_shape == (2,) and d.event_shape == ()
        close(d.probs, p)
        close(d.log_prob(t([2, 0], device)), np.log([p[0, 2], p[1, 0]]))
        close(d.entropy(), -(p * np.log(p)).sum(-1))
        assert d.mode.tolist() == [2, 0]
        assert d.enumerate_support().shape == (3, 2)
    oh = D.OneHotCategorical(t(w, device))
    assert oh.event_shape == (3,)
    close(oh.log_prob(t([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], device)),
          np.log([p[0, 2], p[1, 0]]))
    close(oh.mean, p)
    close(oh.variance, p * (1 - p))
    assert oh.mode.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    # a category of probability 0 gives entropy, not nan
    close(D.Categorical(t([0.0, 1.0])).entropy(), 0.0)


def test_counts(device="cpu"):  # (CUDA: test_sampling.py)
    n, p = np.array([5.0, 10.0]), np.array([0.3, 0.8])
    k = np.array([2.0, 7.0])
    binom = D.Binomial(t(n, device), t(p, device))
    log_choose = lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)
    close(binom.log_prob(t(k, device)), log_choose + k * np.log(p) + (n - k) * np.log1p(-p))
    close(binom.mean, n * p)
    close(binom.variance, n * p * (1 - p))
    close(binom.mode, np.floor((n + 1) * p))
    b10 = D.Binomial(10, t([0.3], device))
    ks = np.arange(11.0)
    pmf = np.exp(lgamma(11) - lgamma(ks + 1) - lgamma(11 - ks) + ks * np.log(0.3)
                 + (10 - ks) * np.log(0.7))
    close(b10.entropy(), [-(pmf * np.log(pmf)).sum()])
    rate = np.array([0.5, 3.0])
    po = D.Poisson(t(rate, device))
    close(po.log_prob(t(k, device)), k * np.log(rate) - rate - lgamma(k + 1))
    close(po.mean, rate)
    geo = D.Geometric(t(p, device))
    close(geo.log_prob(t(k, device)), k * np.log1p(-p) + np.log(p))
    close(geo.mean, 1 / p - 1)
    close(geo.variance, (1 - p) / p**2)
    close(geo.entropy(), -((1 - p) * np.log1p(-p) + p * np.log(p)) / p)
    pm = np.array([0.2, 0.3, 0.5])
    mult = D.Multinomial(6, t(pm, device))
    counts = np.array([1.0, 2.0, 3.0])
    close(mult.log_prob(t(counts, device)), lgamma(7) - lgamma(counts + 1).sum()
          + (counts * np.log(pm)).sum())
    close(mult.mean, 6 * pm)
    close(mult.variance, 6 * pm * (1 - pm))


def _mvn_reference(x, loc, cov):
    diff = x - loc
    n = loc.shape[-1]
    m = np.einsum("...i,ij,...j->...", diff, np.linalg.inv(cov), diff)
    return -0.5 * (n * math.log(2 * math.pi) + m + np.linalg.slogdet(cov)[1])


@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal(form, device="cpu"):
    L = np.array([[1.0, 0.0, 0.0], [0.5, 2.0, 0.0], [-0.3, 0.2, 0.7]])
    cov = L @ L.T
    loc = np.array([0.1, -0.2, 0.3])
    given = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
             "scale_tril": L}[form]
    d = D.MultivariateNormal(t(loc, device), **{form: t(given, device)})
    x = np.array([[0.3, 0.1, -0.5], [1.0, 2.0, 3.0]])
    close(d.log_prob(t(x, device)), _mvn_reference(x, loc, cov), 1e-6)
    close(d.entropy(), 0.5 * (3 * (1 + math.log(2 * math.pi)) + np.linalg.slogdet(cov)[1]), 1e-6)
    close(d.covariance_matrix, cov, 1e-6)
    close(d.precision_matrix, np.linalg.inv(cov), 1e-6)
    close(d.variance, np.diag(cov), 1e-6)
    # a batch of locations over one covariance
    db = D.MultivariateNormal(t(np.stack([loc, -loc]), device), t(cov, device))
    assert db.batch_shape == (2,) and db.event_shape == (3,)
    close(db.log_prob(t(x[:1], device)), [_mvn_reference(x[0], loc, cov),
                                          _mvn_reference(x[0], -loc, cov)], 1e-6)


def test_independent_mixture_and_transformed():
    normal = D.Normal(t(LOC), t(SCALE))
    ind = D.Independent(normal, 1)
    assert ind.batch_shape == () and ind.event_shape == (3,)
    close(ind.log_prob(t(X)), normal.log_prob(t(X)).sum().item())
    close(ind.entropy(), normal.entropy().sum().item())
    w = np.array([0.3, 0.7])
    mix = D.MixtureSameFamily(D.Categorical(t(w)), D.Normal(t([0.0, 2.0]), t([1.0, 0.5])))
    pdf = sum(wi * np.exp(-((X - m) ** 2) / (2 * s * s)) / (s * math.sqrt(2 * math.pi))
              for wi, m, s in zip(w, (0.0, 2.0), (1.0, 0.5)))
    close(mix.log_prob(t(X)), np.log(pdf))
    close(mix.mean, 0.7 * 2.0)
    close(mix.variance, 0.3 * 1 + 0.7 * 0.25 + 0.3 * 1.4**2 + 0.7 * 0.6**2)
    # logistic(a, b) = a + b logit(U), as PyTorch's docstring builds it
    a, b = 0.5, 2.0
    logistic = D.TransformedDistribution(
        D.Uniform(t(0.0), t(1.0)), [D.transforms.SigmoidTransform().inv,
                                    D.transforms.AffineTransform(loc=a, scale=b)])
    z = (X - a) / b
    close(logistic.log_prob(t(X)), -z - math.log(b) - 2 * np.log1p(np.exp(-z)))
    close(logistic.cdf(t(X)), 1 / (1 + np.exp(-z)))
    tanh_normal = D.TransformedDistribution(D.Normal(t(0.0), t(1.0)),
                                            D.transforms.TanhTransform())
    y = np.array([-0.5, 0.2, 0.9])
    x = np.arctanh(y)
    close(tanh_normal.log_prob(t(y)),
          -x**2 / 2 - 0.5 * math.log(2 * math.pi) - np.log1p(-y * y))
    # a decreasing transform: its cdf is monotonised
    neg_exp = D.TransformedDistribution(D.Normal(t(0.0), t(1.0)),
                                        [D.transforms.ExpTransform(),
                                         D.transforms.AffineTransform(0.0, -1.0)])
    close(neg_exp.cdf(t([-1.0])), [0.5])


def test_relaxed():
    temp, p = 0.5, np.array([0.2, 0.7])
    rb = D.RelaxedBernoulli(t(temp), probs=t(p))
    y = np.array([0.3, 0.9])
    logits = np.log(p / (1 - p))
    x = np.log(y / (1 - y))
    diff = logits - temp * x
    close(rb.log_prob(t(y)), math.log(temp) + diff - 2 * np.log1p(np.exp(diff))
          - np.log(y * (1 - y)))
    s = D.RelaxedOneHotCategorical(t(temp), probs=t([0.2, 0.7, 0.1])).rsample((5,))
    close(s.sum(-1), np.ones(5))


def test_heavy_tailed_and_extreme_value_families():
    df = np.array([0.8, 1.5, 5.0])
    st = D.StudentT(t(df), t(LOC), t(SCALE))
    y = (X - LOC) / SCALE
    close(st.log_prob(t(X)), lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * np.log(df * math.pi)
          - np.log(SCALE) - (df + 1) / 2 * np.log1p(y * y / df), 1e-6)
    close(st.entropy(), (df + 1) / 2 * (digamma((df + 1) / 2) - digamma(df / 2))
          + 0.5 * np.log(df) + lgamma(df / 2) + math.lgamma(0.5) - lgamma((df + 1) / 2)
          + np.log(SCALE), 1e-6)
    assert np.isnan(st.mean[0].item()) and st.variance[1].item() == math.inf
    close(st.variance[2:], SCALE[2:] ** 2 * 5 / 3)
    ca = D.Cauchy(t(LOC), t(SCALE))
    close(ca.log_prob(t(X)), -np.log(math.pi * SCALE * (1 + y * y)))
    close(ca.cdf(t(X)), np.arctan(y) / math.pi + 0.5)
    close(ca.entropy(), np.log(4 * math.pi * SCALE))
    hn = D.HalfNormal(t(SCALE))
    close(hn.log_prob(t(X)), 0.5 * math.log(2 / math.pi) - np.log(SCALE) - X**2 / (2 * SCALE**2))
    close(hn.mean, SCALE * math.sqrt(2 / math.pi))
    close(hn.cdf(t(X)), erf(X / (SCALE * math.sqrt(2))))
    hc = D.HalfCauchy(t(SCALE))
    close(hc.log_prob(t(X)), np.log(2 / (math.pi * SCALE * (1 + (X / SCALE) ** 2))))
    gu = D.Gumbel(t(LOC), t(SCALE))
    z = (X - LOC) / SCALE
    close(gu.log_prob(t(X)), -np.log(SCALE) - z - np.exp(-z))
    close(gu.mean, LOC + SCALE * 0.5772156649015329)
    close(gu.variance, (math.pi * SCALE) ** 2 / 6)
    close(gu.cdf(t(X)), np.exp(-np.exp(-z)), 1e-6)


def test_power_families():
    lam, k = np.array([1.0, 2.0, 0.5]), np.array([0.7, 1.5, 3.0])
    we = D.Weibull(t(lam), t(k))
    close(we.log_prob(t(X)), np.log(k / lam) + (k - 1) * np.log(X / lam) - (X / lam) ** k)
    close(we.mean, lam * np.exp(lgamma(1 + 1 / k)))
    close(we.cdf(t(X)), 1 - np.exp(-((X / lam) ** k)))
    xm, alpha = np.array([0.2, 0.5, 1.0]), np.array([1.5, 3.0, 0.5])
    pa = D.Pareto(t(xm), t(alpha))
    close(pa.log_prob(t(X + 1)), np.log(alpha) + alpha * np.log(xm) - (alpha + 1) * np.log(X + 1))
    close(pa.entropy(), np.log(xm / alpha) + 1 + 1 / alpha)
    a, b = np.array([1.5, 3.0, 0.5]), np.array([2.0, 1.0, 4.0])
    ig = D.InverseGamma(t(a), t(b))
    close(ig.log_prob(t(X)), a * np.log(b) - lgamma(a) - (a + 1) * np.log(X) - b / X, 1e-6)
    close(ig.mode, b / (a + 1))
    assert ig.mean[2].item() == math.inf
    chi = D.Chi2(t([1.0, 4.0]))
    close(chi.log_prob(t([0.5, 3.0])), [-0.5 * math.log(2 * math.pi * 0.5) - 0.25,
                                         math.log(3.0) - 1.5 - 2 * math.log(2)])
    close(chi.df, [1.0, 4.0])
    n, p = np.array([3.0, 2.5]), np.array([0.2, 0.6])
    nb = D.NegativeBinomial(t(n), t(p))
    kk = np.array([2.0, 5.0])
    close(nb.log_prob(t(kk)), lgamma(n + kk) - lgamma(kk + 1) - lgamma(n) + n * np.log1p(-p)
          + kk * np.log(p))
    close(nb.mean, n * p / (1 - p))
    close(nb.variance, n * p / (1 - p) ** 2)


@pytest.mark.parametrize("name", ["real", "positive", "unit_interval", "simplex", "real_vector"])
def test_biject_to_and_transform_to_reach_the_constraint(name):
    c = getattr(D.constraints, name)
    x = t([[0.3, -1.0, 2.0], [5.0, 0.0, -3.0]])
    for registry in (D.biject_to, D.transform_to):
        f = registry(c)
        y = f(x)
        assert bool(c.check(y).all())
        np.testing.assert_allclose(f(f.inv(y)).numpy(), y.numpy(), atol=1e-9)
    np.testing.assert_allclose(D.biject_to(c).inv(D.biject_to(c)(x)).numpy(), x.numpy(),
                               atol=1e-9)
    interval = D.transform_to(D.constraints.interval(-1.0, 3.0))
    assert bool(((interval(x) > -1) & (interval(x) < 3)).all())


def test_stick_breaking_log_det_against_finite_differences():
    f = D.transforms.StickBreakingTransform()
    x = np.array([0.3, -1.0, 2.0])
    y = f(t(x))
    h = 1e-6
    jac = np.stack([(f(t(x + h * e)).numpy()[:-1] - f(t(x - h * e)).numpy()[:-1]) / (2 * h)
                    for e in np.eye(3)], axis=1)
    close(f.log_abs_det_jacobian(t(x), y), np.log(abs(np.linalg.det(jac))), 1e-6)


def test_low_rank_multivariate_normal():
    rng = np.random.default_rng(0)
    loc, W, diag = rng.normal(size=(2, 4)), rng.normal(size=(4, 2)), rng.random(4) + 0.5
    cov = W @ W.T + np.diag(diag)
    d = D.LowRankMultivariateNormal(t(loc), t(W), t(diag))
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    x = rng.normal(size=(3, 2, 4))
    close(d.log_prob(t(x)), _mvn_reference(x, loc, cov), 1e-6)
    close(d.entropy(), np.full(2, 0.5 * (4 * (1 + math.log(2 * math.pi))
                                         + np.linalg.slogdet(cov)[1])), 1e-6)
    close(d.covariance_matrix[0], cov, 1e-9)
    close(d.precision_matrix[0], np.linalg.inv(cov), 1e-6)
    close(d.scale_tril[0] @ d.scale_tril[0].mT, cov, 1e-9)
    close(d.variance[0], np.diag(cov), 1e-9)


def test_continuous_bernoulli():
    lam = np.array([0.2, 0.7, 0.4999])  # (the last inside the Taylor-expanded region)
    d = D.ContinuousBernoulli(t(lam))
    x = np.array([0.3, 0.9, 0.6])
    # C(lam) = 2 artanh(1 - 2 lam) / (1 - 2 lam), and 2 at lam = 1/2
    log_c = np.log(2 * np.arctanh(1 - 2 * lam) / (1 - 2 * lam))
    close(d.log_prob(t(x)), log_c + x * np.log(lam) + (1 - x) * np.log1p(-lam), 1e-6)
    mean = lam / (2 * lam - 1) + 1 / (2 * np.arctanh(1 - 2 * lam))
    close(d.mean, mean, 1e-6)
    # E[X^2] by quadrature of the density
    grid = (np.arange(20000) + 0.5) / 20000
    dens = np.exp(log_c[:, None] + grid * np.log(lam)[:, None]
                  + (1 - grid) * np.log1p(-lam)[:, None])
    close(d.variance, (dens * grid**2).mean(-1) - mean**2, 1e-6)
    close(d.cdf(d.icdf(t([0.1, 0.5, 0.8]))), [0.1, 0.5, 0.8], 1e-9)
    close(d.entropy(), -(dens * np.log(dens)).mean(-1), 1e-6)
