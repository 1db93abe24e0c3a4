"""kl_divergence: closed forms against Monte-Carlo estimates E_p[log p - log q] (seeded), the
registry's dispatch, and its refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritongrad as torch
from tritongrad import distributions as D


def t(x, device="cpu"):
    return torch.tensor(np.asarray(x, dtype=np.float64), device=device)


PAIRS = {
    "Normal": (lambda: D.Normal(t([0.0, 1.0]), t([1.0, 2.0])),
               lambda: D.Normal(t([1.0, 0.0]), t([0.5, 3.0]))),
    "Gamma": (lambda: D.Gamma(t([0.5, 3.0]), t([1.0, 2.0])),
              lambda: D.Gamma(t([2.0, 1.0]), t([3.0, 0.5]))),
    "Beta": (lambda: D.Beta(t([0.5, 3.0]), t([1.0, 2.0])),
             lambda: D.Beta(t([2.0, 1.0]), t([3.0, 0.5]))),
    "Dirichlet": (lambda: D.Dirichlet(t([[0.5, 3.0, 1.0]])),
                  lambda: D.Dirichlet(t([[2.0, 1.0, 1.0]]))),
    "Exponential": (lambda: D.Exponential(t([0.5, 3.0])), lambda: D.Exponential(t([2.0, 1.0]))),
    "Laplace": (lambda: D.Laplace(t([0.0, 1.0]), t([1.0, 2.0])),
                lambda: D.Laplace(t([1.0, 0.0]), t([0.5, 3.0]))),
    "Poisson": (lambda: D.Poisson(t([0.5, 3.0])), lambda: D.Poisson(t([2.0, 1.0]))),
    "Uniform": (lambda: D.Uniform(t([0.0, 1.0]), t([1.0, 2.0])),
                lambda: D.Uniform(t([-1.0, 0.0]), t([1.5, 3.0]))),
    "Bernoulli": (lambda: D.Bernoulli(t([0.2, 0.7])), lambda: D.Bernoulli(logits=t([0.0, -2.0]))),
    "Categorical": (lambda: D.Categorical(t([[0.2, 0.3, 0.5]])),
                    lambda: D.Categorical(logits=t([[1.0, -1.0, 0.0]]))),
    "OneHotCategorical": (lambda: D.OneHotCategorical(t([[0.2, 0.3, 0.5]])),
                          lambda: D.OneHotCategorical(t([[0.5, 0.1, 0.4]]))),
    "Geometric": (lambda: D.Geometric(t([0.2, 0.7])), lambda: D.Geometric(t([0.5, 0.1]))),
    "Binomial": (lambda: D.Binomial(5, t([0.2, 0.7])), lambda: D.Binomial(5, t([0.5, 0.1]))),
    "LogNormal": (lambda: D.LogNormal(t([0.0, 1.0]), t([1.0, 0.5])),
                  lambda: D.LogNormal(t([1.0, 0.0]), t([0.5, 1.0]))),
    "MultivariateNormal": (
        lambda: D.MultivariateNormal(t([0.1, -0.2]), t([[1.0, 0.3], [0.3, 2.0]])),
        lambda: D.MultivariateNormal(t([0.0, 0.5]), scale_tril=t([[1.5, 0.0], [0.2, 0.7]]))),
    "Independent": (lambda: D.Independent(D.Normal(t([0.0, 1.0]), t([1.0, 2.0])), 1),
                    lambda: D.Independent(D.Normal(t([1.0, 1.0]), t([1.0, 1.0])), 1)),
    "Beta-Uniform": (lambda: D.Beta(t([0.5, 3.0]), t([1.0, 2.0])),
                     lambda: D.Uniform(t([0.0, -1.0]), t([1.0, 2.0]))),
    "Exponential-Gamma": (lambda: D.Exponential(t([0.5, 3.0])),
                          lambda: D.Gamma(t([2.0, 1.0]), t([3.0, 0.5]))),
    "Normal-Laplace": (lambda: D.Normal(t([0.0, 1.0]), t([1.0, 2.0])),
                       lambda: D.Laplace(t([1.0, 0.0]), t([0.5, 3.0]))),
    "Uniform-Normal": (lambda: D.Uniform(t([0.0, 1.0]), t([1.0, 2.0])),
                       lambda: D.Normal(t([1.0, 0.0]), t([0.5, 3.0]))),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_kl_matches_a_monte_carlo_estimate(name):
    torch.manual_seed(0)
    p, q = (make() for make in PAIRS[name])
    kl = D.kl_divergence(p, q)
    assert kl.shape == p.batch_shape
    x = p.sample((50000,))
    diff = (p.log_prob(x) - q.log_prob(x)).numpy()
    estimate, err = diff.mean(0), diff.std(0) / math.sqrt(diff.shape[0])
    np.testing.assert_array_less(np.abs(kl.numpy() - estimate), 5 * err + 1e-9)


def test_kl_of_normals_on_the_device_and_its_gradient(device):
    loc = torch.tensor([0.5], dtype=torch.float64, device=device, requires_grad=True)
    kl = D.kl_divergence(D.Normal(loc, t([1.0], device)), D.Normal(t([0.0], device),
                                                                   t([2.0], device)))
    np.testing.assert_allclose(kl.detach().cpu().numpy(),
                               [0.5 * (0.25 + 0.0625 - 1 - math.log(0.25))])
    kl.sum().backward()
    np.testing.assert_allclose(loc.grad.cpu().numpy(), [0.5 / 4])


def test_kl_infinite_where_supports_differ():
    assert D.kl_divergence(D.Uniform(t(0.0), t(2.0)), D.Uniform(t(0.0), t(1.0))).item() \
        == math.inf
    assert D.kl_divergence(D.Bernoulli(t([0.5])), D.Bernoulli(t([0.0]))).item() == math.inf
    assert D.kl_divergence(D.Bernoulli(t([0.0])), D.Bernoulli(t([0.5]))).item() \
        == pytest.approx(math.log(2))
    assert D.kl_divergence(D.Categorical(t([0.5, 0.5, 0.0])),
                           D.Categorical(t([0.5, 0.25, 0.25]))).item() \
        == pytest.approx(0.5 * math.log(2))


def test_register_kl_and_dispatch():
    class MyNormal(D.Normal):
        pass

    # a subclass finds its parents' pair
    p, q = MyNormal(t(0.0), t(1.0)), D.Normal(t(1.0), t(1.0))
    assert D.kl_divergence(p, q).item() == pytest.approx(0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return torch.zeros(())

    assert D.kl_divergence(p, q).item() == 0.0  # the more specific pair wins
    assert D.kl_divergence(q, MyNormal(t(1.0), t(1.0))).item() == 0.0  # (Normal, Normal)
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p "
                                                  "type Poisson and q type Cauchy"):
        D.kl_divergence(D.Poisson(t(1.0)), D.Cauchy(t(0.0), t(1.0)))
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Binomial(3, t(0.5)), D.Binomial(5, t(0.5)))


def test_exponential_family_bregman_forms_match_the_closed_forms():
    from tritongrad.distributions.kl import _kl_expfamily_expfamily
    for name in ("Normal", "Gamma", "Exponential", "Bernoulli", "Beta", "Dirichlet"):
        p, q = (make() for make in PAIRS[name])
        assert isinstance(p, D.ExponentialFamily), name
        np.testing.assert_allclose(_kl_expfamily_expfamily(p, q).detach().numpy(),
                                   D.kl_divergence(p, q).numpy(), rtol=1e-9, err_msg=name)
        if name not in ("Beta", "Dirichlet"):  # (no carrier measure: their own entropy only)
            np.testing.assert_allclose(D.ExponentialFamily.entropy(p).detach().numpy(),
                                       p.entropy().numpy(), rtol=1e-9, err_msg=name)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        _kl_expfamily_expfamily(D.Normal(t(0.0), t(1.0)), D.Exponential(t(1.0)))


def _dense_gaussian_kl(mp, cp, mq, cq):
    n = mp.shape[-1]
    iq = np.linalg.inv(cq)
    d = mq - mp
    return 0.5 * (np.trace(iq @ cp, axis1=-2, axis2=-1) + np.einsum("...i,...ij,...j", d, iq, d)
                  - n + np.linalg.slogdet(cq)[1] - np.linalg.slogdet(cp)[1])


def test_kl_of_low_rank_and_full_multivariate_normals():
    rng = np.random.default_rng(0)
    la, Wa, da = rng.normal(size=(2, 4)), rng.normal(size=(4, 2)), rng.random(4) + 0.5
    lb, Wb, db = rng.normal(size=4), rng.normal(size=(2, 4, 3)), rng.random(4) + 0.5
    L = np.tril(rng.normal(size=(4, 4))) + 3 * np.eye(4)
    m = rng.normal(size=4)
    dists = {"a": (D.LowRankMultivariateNormal(t(la), t(Wa), t(da)), la, Wa @ Wa.T + np.diag(da)),
             "b": (D.LowRankMultivariateNormal(t(lb), t(Wb), t(db)), lb,
                   Wb @ np.swapaxes(Wb, -1, -2) + np.diag(db)),
             "full": (D.MultivariateNormal(t(m), scale_tril=t(L)), m, L @ L.T)}
    for p_name, q_name in (("a", "b"), ("full", "b"), ("a", "full"), ("b", "a")):
        (p, mp, cp), (q, mq, cq) = dists[p_name], dists[q_name]
        np.testing.assert_allclose(D.kl_divergence(p, q).numpy(),
                                   _dense_gaussian_kl(mp, cp, mq, cq), rtol=1e-9,
                                   err_msg=f"{p_name} {q_name}")
