"""Sampling: shapes (sample_shape + batch_shape + event_shape), seeded moments, reproducibility
under ``manual_seed``, and the gradients of reparameterized samples (``rsample``), including
Gamma's implicit reparameterization gradient."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tritongrad.autograd.ops.sampling import _standard_gamma_grad

import tritongrad as torch
from tritongrad import distributions as D


def t(x, device="cpu", requires_grad=False):
    return torch.tensor(np.asarray(x, dtype=np.float64), device=device,
                        requires_grad=requires_grad)


def _makers(batch):
    """One instance of each distribution with parameters of shape ``batch``."""
    ones = np.ones(batch)
    k = np.ones(tuple(batch) + (3,))
    L = np.broadcast_to(np.eye(3), tuple(batch) + (3, 3))
    return {
        "Normal": (D.Normal(t(ones), t(ones)), ()),
        "Uniform": (D.Uniform(t(0 * ones), t(ones)), ()),
        "Exponential": (D.Exponential(t(ones)), ()),
        "Laplace": (D.Laplace(t(ones), t(ones)), ()),
        "Gamma": (D.Gamma(t(ones), t(ones)), ()),
        "Beta": (D.Beta(t(ones), t(ones)), ()),
        "LogNormal": (D.LogNormal(t(ones), t(ones)), ()),
        "Poisson": (D.Poisson(t(ones)), ()),
        "Bernoulli": (D.Bernoulli(t(0.5 * ones)), ()),
        "Geometric": (D.Geometric(t(0.5 * ones)), ()),
        "Binomial": (D.Binomial(3, t(0.5 * ones)), ()),
        "Categorical": (D.Categorical(t(k)), ()),
        "OneHotCategorical": (D.OneHotCategorical(t(k)), (3,)),
        "Multinomial": (D.Multinomial(4, t(k)), (3,)),
        "Dirichlet": (D.Dirichlet(t(k)), (3,)),
        "MultivariateNormal": (D.MultivariateNormal(t(k), scale_tril=t(L)), (3,)),
        "LowRankMultivariateNormal": (D.LowRankMultivariateNormal(t(k), t(L[..., :2]), t(k)),
                                      (3,)),
        "RelaxedBernoulli": (D.RelaxedBernoulli(t(0.5), t(0.5 * ones)), ()),
        "RelaxedOneHotCategorical": (D.RelaxedOneHotCategorical(t(0.5), t(k)), (3,)),
        "StudentT": (D.StudentT(t(3 * ones)), ()),
        "Cauchy": (D.Cauchy(t(ones), t(ones)), ()),
        "HalfNormal": (D.HalfNormal(t(ones)), ()),
        "Gumbel": (D.Gumbel(t(ones), t(ones)), ()),
        "Weibull": (D.Weibull(t(ones), t(ones)), ()),
        "Pareto": (D.Pareto(t(ones), t(ones)), ()),
        "Chi2": (D.Chi2(t(ones)), ()),
        "ContinuousBernoulli": (D.ContinuousBernoulli(t(0.3 * ones)), ()),
        "InverseGamma": (D.InverseGamma(t(ones), t(ones)), ()),
        "NegativeBinomial": (D.NegativeBinomial(t(ones), t(0.5 * ones)), ()),
        "Independent": (D.Independent(D.Normal(t(k), t(k)), 1), (3,)),
        "MixtureSameFamily": (D.MixtureSameFamily(D.Categorical(t(k)),
                                                  D.Normal(t(k), t(k))), ()),
    }


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


@settings(max_examples=8, deadline=None)
@given(batch=shapes, sample_shape=shapes)
def test_shapes(batch, sample_shape):
    for name, (d, event) in _makers(batch).items():
        assert d.batch_shape == batch, name
        assert d.event_shape == event, name
        x = d.sample(sample_shape)
        assert x.shape == sample_shape + batch + event, name
        assert d.log_prob(x).shape == sample_shape + batch, name
        if d.has_rsample:
            assert d.rsample(sample_shape).shape == sample_shape + batch + event, name
        # expand: a new batch shape in front, the same draws' shape rule
        e = d.expand((2,) + batch)
        assert e.batch_shape == (2,) + batch and e.event_shape == event, name
        assert e.sample().shape == (2,) + batch + event, name
        assert e.log_prob(e.sample()).shape == (2,) + batch, name


N = 40000


@pytest.mark.parametrize("name, make, mean, var", [
    ("Normal", lambda: D.Normal(t([0.5, -2.0]), t([1.0, 3.0])), [0.5, -2.0], [1.0, 9.0]),
    ("Uniform", lambda: D.Uniform(t([0.0]), t([4.0])), [2.0], [16 / 12]),
    ("Exponential", lambda: D.Exponential(t([2.0])), [0.5], [0.25]),
    ("Laplace", lambda: D.Laplace(t([1.0]), t([2.0])), [1.0], [8.0]),
    ("Gamma", lambda: D.Gamma(t([0.3, 5.0]), t([2.0, 0.5])), [0.15, 10.0], [0.075, 20.0]),
    ("Beta", lambda: D.Beta(t([0.5, 3.0]), t([2.0, 1.0])), [0.2, 0.75], [0.0457142857, 0.0375]),
    ("LogNormal", lambda: D.LogNormal(t([0.0]), t([0.5])), [math.exp(0.125)],
     [math.expm1(0.25) * math.exp(0.25)]),
    ("Poisson", lambda: D.Poisson(t([0.5, 7.0])), [0.5, 7.0], [0.5, 7.0]),
    ("Bernoulli", lambda: D.Bernoulli(logits=t([0.0, 2.0])), [0.5, 1 / (1 + math.exp(-2))],
     [0.25, math.exp(-2) / (1 + math.exp(-2)) ** 2]),
    ("Geometric", lambda: D.Geometric(t([0.3])), [7 / 3], [0.7 / 0.09]),
    ("Binomial", lambda: D.Binomial(t([10.0]), t([0.3])), [3.0], [2.1]),
    ("Categorical", lambda: D.Categorical(t([0.2, 0.3, 0.5])), [1.3], [0.61]),
    ("StudentT", lambda: D.StudentT(t([10.0]), t([1.0]), t([2.0])), [1.0], [5.0]),
    ("Chi2", lambda: D.Chi2(t([3.0])), [3.0], [6.0]),
    ("HalfNormal", lambda: D.HalfNormal(t([2.0])), [2 * math.sqrt(2 / math.pi)],
     [4 * (1 - 2 / math.pi)]),
    ("Gumbel", lambda: D.Gumbel(t([1.0]), t([2.0])), [1.0 + 2 * 0.5772156649015329],
     [4 * math.pi**2 / 6]),
    ("Weibull", lambda: D.Weibull(t([2.0]), t([3.0])), [2 * math.gamma(4 / 3)],
     [4 * (math.gamma(5 / 3) - math.gamma(4 / 3) ** 2)]),
    ("Pareto", lambda: D.Pareto(t([1.0]), t([6.0])), [1.2], [6 / (25 * 4)]),
    ("InverseGamma", lambda: D.InverseGamma(t([7.0]), t([3.0])), [0.5], [9 / (36 * 5)]),
    ("NegativeBinomial", lambda: D.NegativeBinomial(t([4.0]), t([0.3])), [4 * 0.3 / 0.7],
     [4 * 0.3 / 0.49]),
])
def test_sample_moments(name, make, mean, var):
    torch.manual_seed(0)
    d = make()
    x = d.sample((N,)).to(torch.float64).numpy()
    mean, var = np.array(mean), np.array(var)
    # within 5 standard errors of the mean and a loose bound on the variance
    np.testing.assert_array_less(np.abs(x.mean(0) - mean), 5 * np.sqrt(var / N) + 1e-12)
    np.testing.assert_allclose(x.var(0), var, rtol=0.08)
    if name not in ("Categorical",):  # (its mean and variance are nan, as PyTorch's)
        np.testing.assert_allclose(d.mean.numpy(), mean, rtol=1e-9)
        np.testing.assert_allclose(d.variance.numpy(), var, rtol=1e-7)


@pytest.mark.parametrize("make", [
    lambda dev: D.MultivariateNormal(t([1.0, -1.0], dev), scale_tril=t([[1.0, 0.0], [0.8, 0.6]],
                                                                       dev)),
    lambda dev: D.Dirichlet(t([0.5, 2.0, 3.0], dev)),
    lambda dev: D.Multinomial(10, t([0.2, 0.3, 0.5], dev)),
    lambda dev: D.Categorical(logits=t([[0.2, 0.3, 0.5]], dev)),
    lambda dev: D.Gamma(t([2.0], dev), t([1.0], dev)),
    lambda dev: D.Bernoulli(t([0.3], dev)),
    lambda dev: D.Uniform(t([0.0], dev), t([2.0], dev)),
    lambda dev: D.Laplace(t([0.0], dev), t([2.0], dev)),
    lambda dev: D.Geometric(t([0.3], dev)),
    lambda dev: D.Poisson(t([3.0], dev)),
])
def test_samples_stay_on_the_device_and_in_the_support(make, device):
    d = make(device)
    x = d.sample((50,))
    assert x.device.type == device
    assert bool(d.support.check(x).all())
    assert d.log_prob(x).shape == (50,) + tuple(d.batch_shape)
    assert bool(torch.isfinite(d.log_prob(x)).all())


def test_vector_sample_moments(device="cpu"):
    torch.manual_seed(1)
    L = np.array([[1.0, 0.0], [0.8, 0.6]])
    mvn = D.MultivariateNormal(t([1.0, -1.0], device), scale_tril=t(L, device))
    x = mvn.sample((N,)).cpu().numpy()
    np.testing.assert_allclose(x.mean(0), [1.0, -1.0], atol=0.03)
    np.testing.assert_allclose(np.cov(x.T), L @ L.T, atol=0.03)
    conc = np.array([0.5, 2.0, 3.0])
    di = D.Dirichlet(t(conc, device)).sample((N,)).cpu().numpy()
    np.testing.assert_allclose(di.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(di.mean(0), conc / conc.sum(), atol=0.01)
    counts = D.Multinomial(10, t([0.2, 0.3, 0.5], device)).sample((2000,)).cpu().numpy()
    assert (counts.sum(-1) == 10).all()
    np.testing.assert_allclose(counts.mean(0), [2.0, 3.0, 5.0], atol=0.15)
    gm = D.Gamma(t([2.0], device), t([1.0], device)).rsample((N,)).cpu().numpy()
    np.testing.assert_allclose(gm.mean(), 2.0, atol=0.05)


def test_manual_seed_reproduces_samples():
    d = D.Gamma(t([0.7, 3.0]), t([1.0, 2.0]))
    torch.manual_seed(123)
    a = d.sample((5,))
    torch.manual_seed(123)
    b = d.sample((5,))
    assert a.tolist() == b.tolist()
    torch.manual_seed(124)
    assert d.sample((5,)).tolist() != a.tolist()


def test_rsample_gradients_of_location_scale_families(device):
    loc = t([0.5, -1.0], device, requires_grad=True)
    scale = t([2.0, 0.5], device, requires_grad=True)
    torch.manual_seed(0)
    x = D.Normal(loc, scale).rsample((3,))
    x.sum().backward()
    # x = loc + eps * scale: d/dloc = 1 per draw, d/dscale = eps = (x - loc) / scale
    np.testing.assert_allclose(loc.grad.cpu().numpy(), [3.0, 3.0])
    eps = (x.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(scale.grad.cpu().numpy(), eps.sum(0).cpu().numpy(), rtol=1e-12)
    rate = t([2.0], device, requires_grad=True)
    y = D.Exponential(rate).rsample((4,))
    y.sum().backward()
    np.testing.assert_allclose(rate.grad.cpu().numpy(), -(y.detach() / rate.detach()).sum(0)
                               .cpu().numpy(), rtol=1e-12)
    assert not D.Poisson(t([1.0], device)).has_rsample


def _gamma_quantile_derivative(alpha, x):
    """dx/dalpha at fixed quantile, by the series of P(alpha, x) (valid for modest x):
    -(dP/dalpha) / pdf, with both from P = sum_n x^(alpha+n) e^-x / Gamma(alpha+n+1)."""
    n = np.arange(400.0)[:, None]
    a = alpha[None, :]
    log_terms = (a + n) * np.log(x) - x - np.vectorize(math.lgamma)(a + n + 1)
    h = 1e-6
    psi = (np.vectorize(math.lgamma)(a + n + 1 + h) - np.vectorize(math.lgamma)(a + n + 1 - h)) \
        / (2 * h)
    dP = (np.exp(log_terms) * (np.log(x) - psi)).sum(0)
    pdf = np.exp((alpha - 1) * np.log(x) - x - np.vectorize(math.lgamma)(alpha))
    return -dP / pdf


def test_gamma_implicit_gradient_against_the_incomplete_gamma_series():
    alpha = np.array([0.05, 0.4, 1.0, 2.5, 4.0, 9.0, 20.0, 3.0, 0.7])
    x = np.array([0.001, 0.3, 1.2, 2.0, 6.5, 8.0, 25.0, 0.2, 3.5])  # both branches
    np.testing.assert_allclose(_standard_gamma_grad(alpha, x),
                               _gamma_quantile_derivative(alpha, x), rtol=1e-6)


def test_gamma_and_beta_rsample_gradients_flow_to_concentrations(device):
    torch.manual_seed(3)
    conc = t([0.5, 2.0, 8.0], device, requires_grad=True)
    rate = t([1.0, 2.0, 0.5], device, requires_grad=True)
    x = D.Gamma(conc, rate).rsample()
    x.sum().backward()
    standard = (x.detach() * rate.detach()).cpu().numpy()
    expect = _gamma_quantile_derivative(conc.detach().cpu().numpy(), standard) / rate.detach(
    ).cpu().numpy()
    np.testing.assert_allclose(conc.grad.cpu().numpy(), expect, rtol=1e-6)
    np.testing.assert_allclose(rate.grad.cpu().numpy(), -x.detach().cpu().numpy()
                               / rate.detach().cpu().numpy(), rtol=1e-9)
    # the pathwise gradient of E[x] = a / b: unbiased over many draws
    a = t([1.5], requires_grad=True)
    D.Gamma(a, t([1.0])).rsample((N,)).mean().backward()
    assert abs(a.grad.item() - 1.0) < 0.03
    c1, c0 = t([2.0], requires_grad=True), t([3.0], requires_grad=True)
    D.Beta(c1, c0).rsample((N,)).mean().backward()
    # d/dc1 of c1 / (c1 + c0) = c0 / (c1 + c0)^2 = 0.12; d/dc0 = -0.08
    assert abs(c1.grad.item() - 0.12) < 0.01 and abs(c0.grad.item() + 0.08) < 0.01
    conc = t([1.0, 2.0, 3.0], requires_grad=True)
    D.Dirichlet(conc).rsample((N,))[..., 0].mean().backward()
    np.testing.assert_allclose(conc.grad.numpy(), [5 / 36, -1 / 36, -1 / 36], atol=0.01)


def test_log_prob_and_entropy_are_differentiable():
    loc = t([0.3], requires_grad=True)
    scale = t([1.5], requires_grad=True)
    d = D.Normal(loc, scale)
    d.log_prob(t([1.0])).sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [(1.0 - 0.3) / 1.5**2])
    np.testing.assert_allclose(scale.grad.numpy(), [-1 / 1.5 + 0.7**2 / 1.5**3])
    logits = t([0.1, 0.5, -0.2], requires_grad=True)
    c = D.Categorical(logits=logits)
    c.entropy().backward()
    p = np.exp(logits.detach().numpy()) / np.exp(logits.detach().numpy()).sum()
    logp = np.log(p)
    entropy = -(p * logp).sum()
    np.testing.assert_allclose(logits.grad.numpy(), -p * (logp + entropy), rtol=1e-9)
