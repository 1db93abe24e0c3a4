"""The KL pairs across families (Note [cross entropies from expectations] in kl.py), Cauchy,
HalfNormal and Wishart: closed forms against seeded Monte-Carlo estimates, the pairs whose
supports do not nest (inf), and the registry against PyTorch 2.13's list of pairs."""

from __future__ import annotations

import numpy as np
import pytest
from tritongrad.distributions.kl import _KL_REGISTRY

import tritongrad as torch
from tritongrad import distributions as D


def t(x, device="cpu"):
    return torch.tensor(np.asarray(x, dtype=np.float64), device=device)


P = {  # p distributions with two batch entries
    "Beta": lambda: D.Beta(t([2.0, 0.5]), t([3.0, 1.5])),
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(t([0.3, 0.8])),
    "Exponential": lambda: D.Exponential(t([0.5, 2.0])),
    "Gamma": lambda: D.Gamma(t([2.0, 0.5]), t([1.5, 3.0])),
    "Gumbel": lambda: D.Gumbel(t([0.5, -1.0]), t([1.0, 2.0])),
    "Laplace": lambda: D.Laplace(t([0.5, -1.0]), t([1.0, 2.0])),
    "Normal": lambda: D.Normal(t([0.5, -1.0]), t([1.0, 2.0])),
    "Pareto": lambda: D.Pareto(t([0.5, 1.0]), t([5.0, 6.5])),
    "Uniform": lambda: D.Uniform(t([0.1, 0.3]), t([0.9, 2.0])),
    "Bernoulli": lambda: D.Bernoulli(t([0.3, 0.6])),
    "Cauchy": lambda: D.Cauchy(t([0.5, -1.0]), t([1.0, 2.0])),
    "HalfNormal": lambda: D.HalfNormal(t([1.0, 2.0])),
}
Q = {**P,  # q distributions: P's, and these
     "Pareto": lambda: D.Pareto(t([0.05, 0.2]), t([3.0, 1.5])),
     "Uniform": lambda: D.Uniform(t([0.0, -1.0]), t([1.0, 9.0])),
     "Poisson": lambda: D.Poisson(t([0.5, 2.0])),
     "Cauchy": lambda: D.Cauchy(t([0.0, 1.0]), t([0.5, 3.0])),
     "HalfNormal": lambda: D.HalfNormal(t([0.7, 3.0])),
     "Gumbel": lambda: D.Gumbel(t([0.0, 1.0]), t([2.0, 0.5]))}

FINITE = [
    ("Beta", "ContinuousBernoulli"), ("Beta", "Exponential"), ("Beta", "Gamma"),
    ("Beta", "Normal"), ("ContinuousBernoulli", "Exponential"),
    ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"),
    ("Exponential", "Gumbel"), ("Exponential", "Normal"), ("Gamma", "Exponential"),
    ("Gamma", "Gumbel"), ("Gamma", "Normal"), ("Gumbel", "Gumbel"), ("Gumbel", "Normal"),
    ("Laplace", "Normal"), ("Normal", "Gumbel"), ("Pareto", "Exponential"),
    ("Pareto", "Gamma"), ("Pareto", "Normal"), ("Pareto", "Pareto"), ("Uniform", "Beta"),
    ("Uniform", "ContinuousBernoulli"), ("Uniform", "Exponential"), ("Uniform", "Gamma"),
    ("Uniform", "Gumbel"), ("Uniform", "Pareto"), ("Bernoulli", "Poisson"),
    ("Cauchy", "Cauchy"), ("HalfNormal", "HalfNormal"),
]


@pytest.mark.parametrize("pair", FINITE, ids="-".join)
def test_kl_matches_a_monte_carlo_estimate(pair):
    p, q = P[pair[0]](), Q[pair[1]]()
    if pair[0] == "Uniform" and pair[1] in ("Beta", "ContinuousBernoulli"):
        p = D.Uniform(t([0.1, 0.3]), t([0.9, 0.8]))  # (inside [0, 1])
    torch.manual_seed(0)
    n = 100000
    x = p.sample((n,))
    terms = (p.log_prob(x) - q.log_prob(x)).numpy()
    estimate, se = terms.mean(0), terms.std(0) / np.sqrt(n)
    kl = D.kl_divergence(p, q).numpy()
    assert kl.shape == (2,)
    np.testing.assert_array_less(np.abs(kl - estimate), 5 * se + 1e-9)


@pytest.mark.parametrize("pair", [("Uniform", "Beta"), ("Uniform", "ContinuousBernoulli"),
                                  ("Uniform", "Exponential"), ("Uniform", "Gamma"),
                                  ("Uniform", "Pareto"), ("Beta", "Uniform"),
                                  ("ContinuousBernoulli", "Uniform")], ids="-".join)
def test_kl_is_inf_where_p_leaves_qs_support(pair):
    p = {"Uniform": lambda: D.Uniform(t([0.1, -0.5]), t([0.9, 0.5])),
         "Beta": P["Beta"], "ContinuousBernoulli": P["ContinuousBernoulli"]}[pair[0]]()
    q = {"Uniform": lambda: D.Uniform(t([0.0, 0.1]), t([1.0, 1.0]))}.get(pair[1], Q[pair[1]])()
    if pair[1] == "Pareto":
        q = D.Pareto(t([0.05, 0.05]), t([3.0, 3.0]))
    kl = D.kl_divergence(p, q).numpy()
    assert np.isfinite(kl[0]) and kl[1] == np.inf


def test_heavy_tailed_p_gives_inf():
    # Pareto(alpha <= 2) has no variance: its KL to a Normal is inf, as PyTorch's
    kl = D.kl_divergence(D.Pareto(t([1.0, 1.0]), t([3.0, 1.5])), D.Normal(t(0.0), t(1.0)))
    assert np.isfinite(kl.numpy()[0]) and kl.numpy()[1] == np.inf


ALWAYS_INFINITE = [
    ("Beta", "Pareto"), ("ContinuousBernoulli", "Pareto"), ("Exponential", "Beta"),
    ("Exponential", "ContinuousBernoulli"), ("Exponential", "Pareto"),
    ("Exponential", "Uniform"), ("Gamma", "Beta"), ("Gamma", "ContinuousBernoulli"),
    ("Gamma", "Pareto"), ("Gamma", "Uniform"), ("Gumbel", "Beta"),
    ("Gumbel", "ContinuousBernoulli"), ("Gumbel", "Exponential"), ("Gumbel", "Gamma"),
    ("Gumbel", "Pareto"), ("Gumbel", "Uniform"), ("Laplace", "Beta"),
    ("Laplace", "ContinuousBernoulli"), ("Laplace", "Exponential"), ("Laplace", "Gamma"),
    ("Laplace", "Pareto"), ("Laplace", "Uniform"), ("Normal", "Beta"),
    ("Normal", "ContinuousBernoulli"), ("Normal", "Exponential"), ("Normal", "Gamma"),
    ("Normal", "Pareto"), ("Normal", "Uniform"), ("Pareto", "Beta"),
    ("Pareto", "ContinuousBernoulli"), ("Pareto", "Uniform"), ("Poisson", "Bernoulli"),
]


@pytest.mark.parametrize("pair", ALWAYS_INFINITE, ids="-".join)
def test_pairs_whose_supports_never_nest_are_infinite(pair):
    p = Q["Poisson"]() if pair[0] == "Poisson" else P[pair[0]]()
    kl = D.kl_divergence(p, Q[pair[1]]())
    assert kl.shape == (2,) and (kl.numpy() == np.inf).all()


def test_poisson_binomial_is_infinite():
    kl = D.kl_divergence(D.Poisson(t([1.0, 2.0])), D.Binomial(5, t([0.3, 0.6])))
    assert (kl.numpy() == np.inf).all()


def _wishart_kl(nu_p, S_p, nu_q, S_q) -> float:
    """KL between Wisharts, from the closed form (SciPy's multigammaln and digamma)."""
    from scipy.special import digamma, multigammaln
    p = S_p.shape[0]
    mvdigamma = sum(digamma(nu_p / 2 - i / 2) for i in range(p))
    return (nu_q / 2 * (np.linalg.slogdet(S_q)[1] - np.linalg.slogdet(S_p)[1])
            + nu_p / 2 * (np.trace(np.linalg.solve(S_q, S_p)) - p)
            + multigammaln(nu_q / 2, p) - multigammaln(nu_p / 2, p)
            + (nu_p - nu_q) / 2 * mvdigamma)


def test_wishart_kl_batched():
    pytest.importorskip("scipy")
    S_p = np.array([[2.0, 0.3], [0.3, 1.0]])
    L_q = np.array([[1.0, 0.0], [0.2, 1.5]])
    p = D.Wishart(t([4.0, 5.5]), covariance_matrix=t(S_p))
    q = D.Wishart(t([3.0, 6.0]), scale_tril=t(L_q))
    kl = D.kl_divergence(p, q).detach().numpy()
    expected = [_wishart_kl(nu_p, S_p, nu_q, L_q @ L_q.T)
                for nu_p, nu_q in ((4.0, 3.0), (5.5, 6.0))]
    # (PyTorch 2.13 returns [0.4725, 2.9410] here: its Bregman sum reduces Wishart's df term
    # over the batch; unbatched it agrees with these, 1.3287 and 1.6947)
    np.testing.assert_allclose(kl, expected, rtol=1e-9)
    torch.manual_seed(0)
    x = p.sample((50000,))
    terms = (p.log_prob(x) - q.log_prob(x)).numpy()
    np.testing.assert_array_less(np.abs(kl - terms.mean(0)),
                                 5 * terms.std(0) / np.sqrt(len(terms)))


# PyTorch 2.13's torch.distributions.kl._KL_REGISTRY keys, by hand in .venv (87 pairs)
PYTORCH_PAIRS = [
    "Bernoulli-Bernoulli", "Bernoulli-Poisson", "Beta-Beta", "Beta-ContinuousBernoulli",
    "Beta-Exponential", "Beta-Gamma", "Beta-Normal", "Beta-Pareto", "Beta-Uniform",
    "Binomial-Binomial", "Categorical-Categorical", "Cauchy-Cauchy",
    "ContinuousBernoulli-ContinuousBernoulli", "ContinuousBernoulli-Exponential",
    "ContinuousBernoulli-Normal", "ContinuousBernoulli-Pareto", "ContinuousBernoulli-Uniform",
    "Dirichlet-Dirichlet", "Exponential-Beta", "Exponential-ContinuousBernoulli",
    "Exponential-Exponential", "Exponential-Gamma", "Exponential-Gumbel", "Exponential-Normal",
    "Exponential-Pareto", "Exponential-Uniform", "ExponentialFamily-ExponentialFamily",
    "Gamma-Beta", "Gamma-ContinuousBernoulli", "Gamma-Exponential", "Gamma-Gamma",
    "Gamma-Gumbel", "Gamma-Normal", "Gamma-Pareto", "Gamma-Uniform", "Geometric-Geometric",
    "Gumbel-Beta", "Gumbel-ContinuousBernoulli", "Gumbel-Exponential", "Gumbel-Gamma",
    "Gumbel-Gumbel", "Gumbel-Normal", "Gumbel-Pareto", "Gumbel-Uniform",
    "HalfNormal-HalfNormal", "Independent-Independent", "Laplace-Beta",
    "Laplace-ContinuousBernoulli", "Laplace-Exponential", "Laplace-Gamma", "Laplace-Laplace",
    "Laplace-Normal", "Laplace-Pareto", "Laplace-Uniform",
    "LowRankMultivariateNormal-LowRankMultivariateNormal",
    "LowRankMultivariateNormal-MultivariateNormal",
    "MultivariateNormal-LowRankMultivariateNormal", "MultivariateNormal-MultivariateNormal",
    "Normal-Beta", "Normal-ContinuousBernoulli", "Normal-Exponential", "Normal-Gamma",
    "Normal-Gumbel", "Normal-Laplace", "Normal-Normal", "Normal-Pareto", "Normal-Uniform",
    "OneHotCategorical-OneHotCategorical", "Pareto-Beta", "Pareto-ContinuousBernoulli",
    "Pareto-Exponential", "Pareto-Gamma", "Pareto-Normal", "Pareto-Pareto", "Pareto-Uniform",
    "Poisson-Bernoulli", "Poisson-Binomial", "Poisson-Poisson",
    "TransformedDistribution-TransformedDistribution", "Uniform-Beta",
    "Uniform-ContinuousBernoulli", "Uniform-Exponential", "Uniform-Gamma", "Uniform-Gumbel",
    "Uniform-Normal", "Uniform-Pareto", "Uniform-Uniform",
]


def test_every_pytorch_pair_dispatches():
    assert len(PYTORCH_PAIRS) == 87
    ours = {f"{a.__name__}-{b.__name__}" for a, b in _KL_REGISTRY}
    # (ContinuousBernoulli with itself has its own formula: the ExponentialFamily pair's
    # Bregman divergence would also give the value, but no gradient for p's parameters)
    assert set(PYTORCH_PAIRS) <= ours
    p, q = D.ContinuousBernoulli(t([0.3, 0.8])), D.ContinuousBernoulli(t([0.6, 0.1]))
    torch.manual_seed(0)
    x = p.sample((100000,))
    terms = (p.log_prob(x) - q.log_prob(x)).numpy()
    np.testing.assert_array_less(np.abs(D.kl_divergence(p, q).detach().numpy()
                                        - terms.mean(0)), 5 * terms.std(0) / np.sqrt(1e5))


def test_cross_kl_is_differentiable():
    loc = t([0.5], "cpu").requires_grad_()
    kl = D.kl_divergence(D.Gumbel(loc, t([1.0])), D.Normal(t([0.0]), t([2.0])))
    kl.sum().backward()
    # d/dloc of E[(x - 0)^2] / (2 * 4) = 2 E[x] / 8 with E[x] = loc + gamma
    assert abs(loc.grad.item() - (0.5 + 0.5772156649015329) / 4) < 1e-12
