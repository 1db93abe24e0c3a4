"""Kumaraswamy, FisherSnedecor, VonMises, LKJCholesky, Wishart, GeneralizedPareto,
LogisticNormal and OneHotCategoricalStraightThrough: densities and moments against scipy.stats
(or float64 NumPy formulas), seeded samples against their CDFs (Kolmogorov-Smirnov) and
moments, gradients through rsample, shapes, expand and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritongrad as torch
from tritongrad import distributions as D

stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")
integrate = pytest.importorskip("scipy.integrate")


def t(x, device="cpu", requires_grad=False):
    return torch.tensor(np.asarray(x, dtype=np.float64), device=device,
                        requires_grad=requires_grad)


def close(actual, expected, tol=1e-9):
    np.testing.assert_allclose(actual.detach().cpu().numpy(), expected, rtol=tol, atol=tol)


def ks_ok(samples, cdf):
    """The seeded draws pass a Kolmogorov-Smirnov test against ``cdf`` (a wrong law of this
    size fails with p-values far below the 1e-3 bar)."""
    assert stats.kstest(np.asarray(samples).ravel(), cdf).pvalue > 1e-3


N = 20000


# -- values ----------------------------------------------------------------------------------

A, B = np.array([0.5, 2.0, 3.0]), np.array([2.0, 0.5, 4.0])
X01 = np.array([0.3, 0.7, 0.55])


def _kumaraswamy_moment(a, b, n):
    return b * special.beta(1 + n / a, b)


def test_kumaraswamy_values(device):
    d = D.Kumaraswamy(t(A, device), t(B, device))
    close(d.log_prob(t(X01, device)),
          np.log(A * B) + (A - 1) * np.log(X01) + (B - 1) * np.log1p(-(X01**A)))
    close(d.cdf(t(X01, device)), 1 - (1 - X01**A) ** B)
    close(d.icdf(d.cdf(t(X01, device))), X01)
    m1, m2 = _kumaraswamy_moment(A, B, 1), _kumaraswamy_moment(A, B, 2)
    close(d.mean, m1)
    close(d.variance, m2 - m1**2)
    # entropy = -E[log p]: by adaptive quadrature of the density
    for a, b, h in zip(A, B, d.entropy().cpu().numpy()):
        def plogp(x, a=a, b=b):
            logp = np.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-(x**a))
            return np.exp(logp) * logp
        assert abs(h + integrate.quad(plogp, 0, 1, limit=200)[0]) < 1e-7
    mode = D.Kumaraswamy(t([2.0, 3.0, 0.5, 1.0]), t([2.0, 4.0, 2.0, 1.0])).mode
    close(mode, [(1 / 3) ** 0.5, (2 / 11) ** (1 / 3), np.nan, np.nan])


def test_fisher_snedecor_values(device):
    df1, df2 = np.array([1.0, 3.0, 5.0, 6.5]), np.array([1.0, 3.0, 5.0, 9.0])
    x = np.array([0.5, 1.5, 0.2, 3.0])
    d = D.FisherSnedecor(t(df1, device), t(df2, device))
    close(d.log_prob(t(x, device)), stats.f(df1, df2).logpdf(x))
    mean, var = stats.f(df1, df2).stats("mv")
    close(d.mean, np.where(df2 > 2, mean, np.nan))
    close(d.variance, np.where(df2 > 4, var, np.nan))
    close(d.mode, np.where(df1 > 2, (df1 - 2) / df1 * df2 / (df2 + 2), np.nan))
    with pytest.raises(NotImplementedError):
        d.entropy()


def test_von_mises_values(device):
    loc, kappa = np.array([0.5, -1.0, 0.0, 3.0]), np.array([0.01, 2.0, 50.0, 700.0])
    x = np.array([1.0, 5.0, 0.1, -3.0])
    d = D.VonMises(t(loc, device), t(kappa, device))
    close(d.log_prob(t(x, device)),
          kappa * np.cos(x - loc) - np.log(2 * np.pi * special.i0e(kappa)) - kappa)
    close(d.mean, loc)
    close(d.mode, loc)
    close(d.variance, 1 - special.i1e(kappa) / special.i0e(kappa))
    assert not d.has_rsample


GP = (np.array([0.0, 1.0, -1.0, 2.0]), np.array([1.0, 2.0, 0.5, 3.0]),
      np.array([0.4, -0.3, 0.0, 1e-12]))


def test_generalized_pareto_values(device):
    loc, scale, xi = GP
    x = np.array([0.7, 2.5, 0.3, 4.0])
    d = D.GeneralizedPareto(t(loc, device), t(scale, device), t(xi, device))
    ref = stats.genpareto(xi, loc, scale)
    close(d.log_prob(t(x, device)), ref.logpdf(x))
    close(d.cdf(t(x, device)), ref.cdf(x))
    close(d.log_survival_function(t(x, device)), ref.logsf(x))
    u = np.array([0.1, 0.5, 0.9, 0.999])
    close(d.icdf(t(u, device)), ref.ppf(u))
    close(d.entropy(), ref.entropy())
    mean, var = ref.stats("mv")
    close(d.mean, mean)
    close(d.variance, var)
    close(d.mode, loc)
    # moments that do not exist are NaN, as PyTorch's
    heavy = D.GeneralizedPareto(t([0.0, 0.0]), t([1.0, 1.0]), t([1.0, 0.6]))
    assert np.isnan(heavy.mean.numpy()[0]) and np.isnan(heavy.variance.numpy()).all()
    # the support: [loc, loc - scale / xi] for xi < 0, [loc, inf) otherwise
    close(d.support.upper_bound, np.where(xi < 0, loc - scale / np.where(xi < 0, xi, 1),
                                          np.inf))
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(t([0.7, 2.5, 0.3, 1.0], device))  # below loc=2.0
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(t([0.7, 7.7, 0.3, 4.0], device))  # above loc - scale / xi = 7.67


S2 = np.array([[2.0, 0.3], [0.3, 1.0]])
S3 = np.array([[1.5, 0.2, -0.4], [0.2, 1.0, 0.3], [-0.4, 0.3, 2.0]])


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_values(param):
    df = np.array([3.5, 6.0])
    given = {"covariance_matrix": S3, "precision_matrix": np.linalg.inv(S3),
             "scale_tril": np.linalg.cholesky(S3)}[param]
    d = D.Wishart(t(df), **{param: t(given)})
    assert d.batch_shape == (2,) and d.event_shape == (3, 3)
    X = np.array([[2.0, 0.5, 0.1], [0.5, 3.0, -0.2], [0.1, -0.2, 1.5]])
    for i, nu in enumerate(df):
        ref = stats.wishart(nu, S3)
        close(d.log_prob(t(X))[i], ref.logpdf(X))
        close(d.entropy()[i], ref.entropy())
        close(d.mean[i], ref.mean())
        close(d.variance[i], ref.var())
    close(d.mode, (df - 3 - 1)[:, None, None] * S3 * np.where(df > 4, 1, np.nan)[:, None, None])
    close(d.covariance_matrix[0], S3)
    close(d.precision_matrix[1], np.linalg.inv(S3))


def _lkj_density_by_monte_carlo(d, dim: int, n: int) -> float:
    """The integral of exp(log_prob) over the strictly lower triangle's coordinates (row i:
    a point in the unit ball of R^i), by uniform draws in those balls."""
    rng = np.random.default_rng(0)
    L = np.zeros((n, dim, dim))
    volume = 1.0
    for i in range(dim):
        if i:
            direction = rng.standard_normal((n, i))
            direction /= np.linalg.norm(direction, axis=1, keepdims=True)
            radius = rng.random(n) ** (1 / i)  # uniform in the ball
            L[:, i, :i] = direction * radius[:, None]
            volume *= math.pi ** (i / 2) / math.gamma(i / 2 + 1)
        L[:, i, i] = np.sqrt(1 - (L[:, i, :i] ** 2).sum(1))
    return float(np.exp(d.log_prob(t(L)).numpy()).mean() * volume)


@pytest.mark.parametrize("dim, eta", [(2, 0.7), (3, 1.0), (3, 2.5), (4, 1.5)])
def test_lkj_cholesky_density_integrates_to_one(dim, eta):
    d = D.LKJCholesky(dim, eta)
    n = 200000
    assert abs(_lkj_density_by_monte_carlo(d, dim, n) - 1) < 0.02


def test_lkj_cholesky_values():
    # d = 2: L = [[1, 0], [r, sqrt(1 - r^2)]] and p(r) = (1 - r^2)^(eta - 1) / B(eta, eta)
    # / 2^(2 eta - 1) over r (the density of a correlation under LKJ(2, eta))
    r, eta = np.array([0.3, -0.8]), np.array([0.5, 3.0])
    L = np.zeros((2, 2, 2))
    L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1, r, np.sqrt(1 - r**2)
    d = D.LKJCholesky(2, t(eta))
    # p(r) dr with the change of variables r -> L: the density over L's free entry r
    expected = ((eta - 1) * np.log1p(-(r**2)) - special.betaln(eta, eta)
                - (2 * eta - 1) * math.log(2))
    close(d.log_prob(t(L)), expected)
    # PyTorch 2.13's LKJCholesky(3, [0.5, 2.0]).log_prob of one matrix (by hand, in .venv)
    C = np.array([[1.0, 0.3, 0.2], [0.3, 1.0, -0.4], [0.2, -0.4, 1.0]])
    lp = D.LKJCholesky(3, t([0.5, 2.0])).log_prob(t(np.linalg.cholesky(C)))
    close(lp, [-2.3719, -1.0751], 1e-4)


def test_logistic_normal_values():
    loc, scale = np.array([0.1, -0.2]), np.array([1.0, 0.5])
    d = D.LogisticNormal(t(loc), t(scale))
    assert d.batch_shape == () and d.event_shape == (3,)
    x = np.array([0.2, 0.3, 0.5])
    # the inverse stick breaking: z_i = logit(x_i / (1 - sum_{j<i} x_j)) + log(K - 1 - i)
    rem = 1 - np.concatenate([[0.0], np.cumsum(x)[:-1]])[:2]
    frac = x[:2] / rem
    z = np.log(frac / (1 - frac)) + np.log(np.array([2.0, 1.0]))
    # |dx/dz| = prod_i frac_i (1 - frac_i) rem_i
    log_det = np.log(frac * (1 - frac) * rem).sum()
    expected = stats.norm(loc, scale).logpdf(z).sum() - log_det
    close(d.log_prob(t(x)), expected)
    close(d.loc, loc)
    close(d.scale, scale)


# -- samples ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kappa", [0.01, 2.0, 50.0])
def test_von_mises_samples_follow_the_density(kappa):
    torch.manual_seed(0)
    x = D.VonMises(t(0.0), t(kappa)).sample((N,)).numpy()
    assert x.min() >= -math.pi and x.max() < math.pi
    ks_ok(x, stats.vonmises(kappa).cdf)


def test_von_mises_samples_keep_dtype_device_and_loc(device):
    torch.manual_seed(1)
    loc = torch.tensor([3.0, -2.0], dtype=torch.float32, device=device)
    d = D.VonMises(loc, torch.tensor([4.0, 0.5], dtype=torch.float32, device=device))
    n = N if device == "cpu" else 256  # (the emulated device interprets every op)
    x = d.sample((n,))
    assert x.dtype == torch.float32 and x.device.type == device and x.shape == (n, 2)
    x = x.cpu().numpy().astype(np.float64)
    # the circular mean of cos(x - loc) is I1/I0 (1 - the circular variance), sin's is 0;
    # both have standard errors below 1 / sqrt(n)
    c = np.cos(x - np.array([3.0, -2.0])).mean(0)
    s = np.sin(x - np.array([3.0, -2.0])).mean(0)
    np.testing.assert_allclose(c, 1 - d.variance.cpu().numpy(), atol=4 / math.sqrt(n))
    np.testing.assert_allclose(s, 0, atol=4 / math.sqrt(n))


def test_samples_follow_the_cdfs():
    torch.manual_seed(2)
    ks_ok(D.Kumaraswamy(t(2.0), t(3.0)).sample((N,)).numpy(), lambda x: 1 - (1 - x**2) ** 3)
    ks_ok(D.Kumaraswamy(t(0.4), t(0.7)).rsample((N,)).detach().numpy(),
          lambda x: 1 - (1 - x**0.4) ** 0.7)
    ks_ok(D.FisherSnedecor(t(3.0), t(7.0)).sample((N,)).numpy(), stats.f(3, 7).cdf)
    ks_ok(D.FisherSnedecor(t(0.5), t(20.0)).sample((N,)).numpy(), stats.f(0.5, 20).cdf)
    for xi in (0.3, -0.3, 0.0):
        ks_ok(D.GeneralizedPareto(t(1.0), t(2.0), t(xi)).sample((N,)).numpy(),
              stats.genpareto(xi, 1.0, 2.0).cdf)


def test_sample_moments():
    torch.manual_seed(3)
    for d in (D.Kumaraswamy(t([2.0, 0.5]), t([3.0, 1.5])),
              D.FisherSnedecor(t([3.0, 10.0]), t([12.0, 30.0])),
              D.GeneralizedPareto(t([0.0, 1.0]), t([1.0, 2.0]), t([0.2, -0.5]))):
        x = d.sample((N,)).numpy()
        var = d.variance.numpy()
        np.testing.assert_array_less(np.abs(x.mean(0) - d.mean.numpy()), 5 * np.sqrt(var / N))
        np.testing.assert_allclose(x.var(0), var, rtol=0.15)


def test_lkj_cholesky_samples():
    torch.manual_seed(4)
    dim, eta = 4, 1.5
    d = D.LKJCholesky(dim, t([eta, eta]))
    L = d.sample((N // 2,))
    assert L.shape == (N // 2, 2, dim, dim)
    assert bool(D.constraints.corr_cholesky.check(L).all())
    C = (L @ L.mT).numpy().reshape(-1, dim, dim)
    # every off-diagonal correlation r has (r + 1) / 2 ~ Beta(eta - 1 + dim / 2, same)
    a = eta - 1 + dim / 2
    for i, j in ((1, 0), (3, 0), (3, 2)):
        ks_ok((C[:, i, j] + 1) / 2, stats.beta(a, a).cdf)
    assert bool(torch.isfinite(d.log_prob(L)).all())


def test_wishart_sample_moments():
    torch.manual_seed(5)
    d = D.Wishart(t(4.5), t(S2))
    X = d.sample((N,)).numpy()
    var = d.variance.numpy()
    np.testing.assert_array_less(np.abs(X.mean(0) - d.mean.numpy()), 5 * np.sqrt(var / N))
    np.testing.assert_allclose(X.var(0), var, rtol=0.1)
    # the diagonal's law: X_00 / S_00 ~ chi2(df)
    ks_ok(X[:, 0, 0] / S2[0, 0], stats.chi2(4.5).cdf)
    assert bool(D.constraints.positive_definite.check(t(X)).all())


def test_logistic_normal_and_straight_through_samples():
    torch.manual_seed(6)
    ln = D.LogisticNormal(t([[0.1, -0.2]]), t([[1.0, 0.5]]))
    x = ln.rsample((1000,))
    assert x.shape == (1000, 1, 3)
    close(x.sum(-1), np.ones((1000, 1)), 1e-12)
    assert bool(torch.isfinite(ln.log_prob(x)).all())
    probs = np.array([0.2, 0.3, 0.5])
    st = D.OneHotCategoricalStraightThrough(t(probs))
    counts = st.sample((N,)).numpy().mean(0)
    np.testing.assert_allclose(counts, probs, atol=5 * np.sqrt(0.25 / N))


# -- gradients through rsample ---------------------------------------------------------------

def _fd(fn, theta, h=1e-6):
    """Central differences of ``fn`` in each coordinate of ``theta``."""
    grads = []
    for i in range(len(theta)):
        e = np.zeros(len(theta))
        e[i] = h
        grads.append((fn(theta + e) - fn(theta - e)) / (2 * h))
    return grads


def test_kumaraswamy_rsample_gradient_holds_the_uniform_draw_fixed():
    a, b = t([2.0, 0.7], requires_grad=True), t([3.0, 1.3], requires_grad=True)
    torch.manual_seed(7)
    x = D.Kumaraswamy(a, b).rsample()
    x.sum().backward()
    xv = x.detach().numpy()
    av, bv = a.detach().numpy(), b.detach().numpy()
    u = 1 - (1 - xv**av) ** bv  # the base draw (through the inverse CDF)

    def draw(theta):
        return (1 - (1 - u) ** (1 / theta[2:])) ** (1 / theta[:2])

    ga0, ga1, gb0, gb1 = _fd(draw, np.concatenate([av, bv]))
    np.testing.assert_allclose(a.grad.numpy(), [ga0[0], ga1[1]], rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), [gb0[0], gb1[1]], rtol=1e-6)


def test_generalized_pareto_rsample_gradient():
    loc = t([0.5, 0.5], requires_grad=True)
    scale = t([2.0, 1.0], requires_grad=True)
    xi = t([0.3, -0.4], requires_grad=True)
    torch.manual_seed(8)
    d = D.GeneralizedPareto(loc, scale, xi)
    x = d.rsample()
    x.sum().backward()
    u = d.cdf(x.detach()).detach().numpy()

    def draw(s, c):
        return stats.genpareto(c, 0.5, s).ppf(u)

    sv, cv = scale.detach().numpy(), xi.detach().numpy()
    h = 1e-6
    np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(scale.grad.numpy(),
                               (draw(sv + h, cv) - draw(sv - h, cv)) / (2 * h), rtol=1e-6)
    np.testing.assert_allclose(xi.grad.numpy(),
                               (draw(sv, cv + h) - draw(sv, cv - h)) / (2 * h), rtol=1e-6)


def test_pathwise_gradients_are_unbiased():
    # d/d df2 of E[F] = df2 / (df2 - 2) is -2 / (df2 - 2)^2; E[F] does not depend on df1
    df1, df2 = t([5.0], requires_grad=True), t([12.0], requires_grad=True)
    torch.manual_seed(9)
    D.FisherSnedecor(df1, df2).rsample((4 * N,)).mean().backward()
    assert abs(df2.grad.item() + 2 / 100) < 0.004
    assert abs(df1.grad.item()) < 0.004
    # Wishart: E[X_00] = df (L L^T)_00 = df L_00^2, so d/d df = L_00^2, d/d L_00 = 2 df L_00
    df = t(4.5, requires_grad=True)
    L = t(np.linalg.cholesky(S2), requires_grad=True)
    D.Wishart(df, scale_tril=L).rsample((4 * N,))[..., 0, 0].mean().backward()
    L00 = math.sqrt(2.0)
    assert abs(df.grad.item() - L00**2) < 0.05
    assert abs(L.grad.numpy()[0, 0] - 2 * 4.5 * L00) < 0.2


def test_straight_through_gradient_is_that_of_probs():
    probs = t([0.2, 0.3, 0.5], requires_grad=True)
    w = t([1.0, -2.0, 0.5])
    (D.OneHotCategoricalStraightThrough(probs).rsample((7,)) * w).sum().backward()
    # the gradient of the normalized probs p / sum(p) at sum(p) = 1: w - <w, p>
    p = probs.detach().numpy()
    close(probs.grad, 7 * (w.numpy() - w.numpy() @ p))


def test_logistic_normal_rsample_gradient():
    loc, scale = t([0.1, -0.2], requires_grad=True), t([1.0, 0.5], requires_grad=True)
    torch.manual_seed(10)
    D.LogisticNormal(loc, scale).rsample((5,))[..., 0].sum().backward()
    assert np.isfinite(loc.grad.numpy()).all() and abs(loc.grad.numpy()[0]) > 0


# -- shapes, expand, validation --------------------------------------------------------------

def _new_distributions(batch):
    ones = np.ones(batch)
    return {
        "Kumaraswamy": (D.Kumaraswamy(t(2 * ones), t(3 * ones)), ()),
        "FisherSnedecor": (D.FisherSnedecor(t(3 * ones), t(5 * ones)), ()),
        "VonMises": (D.VonMises(t(0 * ones), t(2 * ones)), ()),
        "GeneralizedPareto": (D.GeneralizedPareto(t(0 * ones), t(ones), t(0.2 * ones)), ()),
        "LKJCholesky": (D.LKJCholesky(3, t(2 * ones)), (3, 3)),
        "Wishart": (D.Wishart(t(4 * ones), t(np.broadcast_to(S2, batch + (2, 2)))), (2, 2)),
        "LogisticNormal": (D.LogisticNormal(t(np.zeros(batch + (2,))),
                                            t(np.ones(batch + (2,)))), (3,)),
        "OneHotCategoricalStraightThrough": (
            D.OneHotCategoricalStraightThrough(t(np.ones(batch + (3,)) / 3)), (3,)),
    }


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_shapes_and_expand(batch):
    torch.manual_seed(11)
    for name, (d, event) in _new_distributions(batch).items():
        if name == "LogisticNormal" and batch == ():
            batch_here = ()
        else:
            batch_here = batch
        assert d.batch_shape == batch_here and d.event_shape == event, name
        x = d.sample((4,))
        assert x.shape == (4,) + batch_here + event, name
        assert d.log_prob(x).shape == (4,) + batch_here, name
        if d.has_rsample:
            assert d.rsample((2,)).shape == (2,) + batch_here + event, name
        e = d.expand((5,) + batch_here)
        assert e.batch_shape == (5,) + batch_here and e.event_shape == event, name
        y = e.sample()
        assert y.shape == (5,) + batch_here + event, name
        assert e.log_prob(y).shape == (5,) + batch_here, name


def test_has_rsample_and_supports():
    assert D.Kumaraswamy(1.0, 1.0).has_rsample and D.FisherSnedecor(1.0, 1.0).has_rsample
    assert D.GeneralizedPareto(0.0, 1.0, 0.1).has_rsample and D.Wishart(
        t(3.0), t(S2)).has_rsample
    assert not D.VonMises(0.0, 1.0).has_rsample and not D.LKJCholesky(2).has_rsample
    with pytest.raises(NotImplementedError):
        D.LKJCholesky(2).rsample()
    assert repr(D.LKJCholesky.support) == "CorrCholesky()"
    assert repr(D.Wishart.support) == "PositiveDefinite()"
    assert repr(D.Kumaraswamy.support) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(D.Wishart(t(3.0), t(S2)).arg_constraints["df"]) == "GreaterThan(lower_bound=1)"


def test_validation_messages():
    with pytest.raises(ValueError, match=r"Expected dim to be an integer greater than or "
                                         r"equal to 2. Found dim=1."):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match="Expected parameter concentration .* of distribution "
                                         "LKJCholesky"):
        D.LKJCholesky(3, -1.0)
    with pytest.raises(ValueError, match=r"Value of df=1.0 expected to be greater than ndim "
                                         r"- 1 = 2."):
        D.Wishart(1.0, t(S3))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or "
                                         "precision_matrix or scale_tril may be specified."):
        D.Wishart(t(3.0))
    with pytest.raises(ValueError, match="Exactly one"):
        D.Wishart(t(3.0), t(S2), scale_tril=t(S2))
    with pytest.raises(ValueError, match="to satisfy the constraint PositiveDefinite"):
        D.Wishart(t(3.0), t([[1.0, 2.0], [2.0, 1.0]]))
    for make, param in ((lambda: D.VonMises(0.0, -1.0), "concentration"),
                        (lambda: D.Kumaraswamy(0.0, 1.0), "concentration1"),
                        (lambda: D.GeneralizedPareto(0.0, -1.0, 0.5), "scale"),
                        (lambda: D.FisherSnedecor(1.0, 0.0), "df2")):
        with pytest.raises(ValueError, match=f"Expected parameter {param}"):
            make()
    with pytest.raises(ValueError, match="to be within the support"):
        D.Kumaraswamy(2.0, 2.0).log_prob(t(1.5))
    with pytest.raises(ValueError, match="to be within the support"):
        D.LKJCholesky(2).log_prob(t([[1.0, 0.0], [0.9, 0.9]]))


def test_mixture_same_family_support_checks_every_component():
    m = D.MixtureSameFamily(D.Categorical(t([0.5, 0.5])), D.Uniform(t([0.0, 0.0]),
                                                                    t([1.0, 2.0])))
    assert m.support.check(t([0.5, 1.5, 3.0])).tolist() == [True, False, False]
    assert repr(m.support).startswith("MixtureSameFamilyConstraint(Interval(")


def test_pytorch_module_paths():
    """PyTorch's per-distribution module paths for classes kept in shared modules here."""
    import importlib
    for module, names in {"half_cauchy": ["HalfCauchy"], "half_normal": ["HalfNormal"],
                          "pareto": ["Pareto"], "studentT": ["StudentT"],
                          "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
                          "relaxed_categorical": ["ExpRelaxedCategorical",
                                                  "RelaxedOneHotCategorical"]}.items():
        mod = importlib.import_module(f"tritongrad.distributions.{module}")
        assert mod.__all__ == names
        for name in names:
            assert getattr(mod, name) is getattr(torch.distributions, name)
