"""Session 39's second differential sweep of ``tritongrad.distributions`` against torch 2.13
(shapes under broadcasting and ``expand``, same-seed ``rsample`` gradients, values at the edges of
parameters and supports, ``validate_args`` messages, constraints and ``biject_to``, transforms,
every registered KL pair, sampling statistics). Each check holds without torch against a
mathematical fact or a float64 NumPy reference; where torch is installed it is compared too."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from tritongrad.distributions import constraints
from tritongrad.distributions import transforms as T

import tritongrad as tg
from tests.helpers import host
from tritongrad import distributions as D


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def t(lib, x, dtype="float64", grad=False):
    out = lib.tensor(np.asarray(x, dtype=dtype))
    return out.requires_grad_() if grad else out


def libs():
    """(tritongrad,) or (tritongrad, torch): the libraries a check runs under."""
    torch = _torch()
    return (tg,) if torch is None else (tg, torch)


# -- VonMises.log_prob at large concentrations -----------------------------------------------

def _von_mises_log_prob_np(x, loc, kappa):
    """float64 reference for large kappa: log I0(k) - k = -log(2 pi k) / 2 + log(1 + 1/(8k)
    + 9/(128k^2) + 225/(3072k^3)) (Abramowitz and Stegun 9.7.1, error < 1e-16 at k >= 1e3)."""
    log_i0e = -0.5 * np.log(2 * np.pi * kappa) + np.log1p(
        1 / (8 * kappa) + 9 / (128 * kappa**2) + 225 / (3072 * kappa**3))
    return kappa * (np.cos(x - loc) - 1) - np.log(2 * np.pi) - log_i0e


def test_von_mises_log_prob_float32_keeps_precision_at_large_concentration():
    # kappa cos(d) - log I0(kappa) cancels to ~1 out of ~1e5; written as -2 kappa sin^2(d / 2)
    # - log i0e(kappa) it keeps float32's relative precision (PyTorch's is 7e-3 off here)
    loc, kappa = np.array([1.0, 0.0, -3.0]), np.array([1e5, 3e4, 1e3])
    x = np.array([1.0014282, 0.01, -3.05], dtype=np.float32).astype(np.float64)
    expected = _von_mises_log_prob_np(x, loc, kappa)
    for dtype, tol in (("float64", 1e-9), ("float32", 2e-6)):
        got = D.VonMises(t(tg, loc, dtype), t(tg, kappa, dtype)).log_prob(t(tg, x, dtype))
        np.testing.assert_allclose(host(got), expected, rtol=tol, atol=tol * 5)


def test_von_mises_log_prob_and_gradient_match_torch():
    torch = pytest.importorskip("torch")
    loc, kappa = np.array([0.5, -2.0, 3.0]), np.array([0.3, 2.0, 50.0])
    x = np.array([1.0, 2.5, -3.1])
    out = []
    for lib in (tg, torch):
        params = [t(lib, loc, grad=True), t(lib, kappa, grad=True)]
        lp = lib.distributions.VonMises(*params).log_prob(t(lib, x))
        out.append([host(lp)] + [host(g) for g in lib.autograd.grad(lp.sum(), params)])
    for ours, theirs in zip(*out):  # (PyTorch's log I0 is a polynomial fit, ~1e-8)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


# -- batch/event shapes with broadcast parameters, expand, sample shapes ---------------------

_SHAPED = {  # name: (constructor on a library's distributions module, batch, event)
    "Normal": (lambda M, L: M.Normal(t(L, [[0.0], [1.0]]), t(L, [1.0, 2.0, 0.5])), (2, 3), ()),
    "Gamma": (lambda M, L: M.Gamma(t(L, [[1.0], [2.0]]), t(L, [1.0, 2.0, 0.5])), (2, 3), ()),
    "Binomial": (lambda M, L: M.Binomial(t(L, [[3.0], [5.0]]), t(L, [0.1, 0.5, 0.9])), (2, 3),
                 ()),
    "Dirichlet": (lambda M, L: M.Dirichlet(t(L, [[1.0, 2.0, 0.5], [0.3, 1.0, 4.0]])), (2,),
                  (3,)),
    "Multinomial": (lambda M, L: M.Multinomial(4, t(L, [[0.2, 0.8], [0.5, 0.5]])), (2,), (2,)),
    "LowRankMultivariateNormal": (lambda M, L: M.LowRankMultivariateNormal(
        t(L, [[0.0, 1.0, 2.0], [1.0, 0.0, -1.0]]), t(L, [[1.0], [0.5], [0.2]]),
        t(L, [1.0, 2.0, 0.5])), (2,), (3,)),
    "Independent": (lambda M, L: M.Independent(
        M.Normal(t(L, [[0.0], [1.0]]), t(L, [1.0, 2.0, 0.5])), 1), (2,), (3,)),
    "MixtureSameFamily": (lambda M, L: M.MixtureSameFamily(
        M.Categorical(t(L, [[0.3, 0.7]] * 3)), M.Normal(t(L, [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]),
                                                 t(L, [1.0, 2.0]))), (3,), ()),
    "TransformedDistribution": (lambda M, L: M.TransformedDistribution(
        M.Normal(t(L, [[0.0], [1.0]]), t(L, [1.0, 2.0, 0.5])),
        [M.transforms.TanhTransform(cache_size=1)]), (2, 3), ()),
    "Wishart": (lambda M, L: M.Wishart(t(L, [4.0, 5.0]), t(L, np.eye(3) * 2)), (2,), (3, 3)),
    "LKJCholesky": (lambda M, L: M.LKJCholesky(3, t(L, [0.5, 2.0])), (2,), (3, 3)),
}


@pytest.mark.filterwarnings("ignore:Singular sample detected")  # (torch 2.13 Wishart, docs/distributions.md)
@pytest.mark.parametrize("name", sorted(_SHAPED))
def test_shapes_expand_and_sample_shapes(name):
    make, batch, event = _SHAPED[name]
    flags = []
    for lib in libs():
        m = make(lib.distributions, lib)
        assert (tuple(m.batch_shape), tuple(m.event_shape)) == (batch, event)
        e = m.expand((4,) + batch)
        assert type(e) is type(m) and tuple(e.batch_shape) == (4,) + batch
        lib.manual_seed(0)
        for shape in ((), (2,), (2, 1)):
            assert tuple(m.sample(shape).shape) == shape + batch + event
        x = m.sample((5,))
        # the expanded distribution's log_prob is the original's, broadcast
        np.testing.assert_allclose(host(e.log_prob(x[:, None])),
                                   np.broadcast_to(host(m.log_prob(x))[:, None], (5, 4) + batch),
                                   rtol=1e-12)
        flags.append((m.has_rsample, m.has_enumerate_support, m.support.is_discrete,
                      m.support.event_dim, type(m.support).__name__))
    assert len(set(flags)) == 1, flags


def test_subclass_expand_keeps_the_subclass():
    class MyNormal(D.Normal):
        pass

    e = MyNormal(t(tg, [0.0, 1.0]), t(tg, [1.0, 2.0])).expand((3, 2))
    assert type(e) is MyNormal and tuple(e.batch_shape) == (3, 2)
    np.testing.assert_allclose(host(e.log_prob(t(tg, [0.0, 0.0])))[0],
                               [-0.5 * math.log(2 * math.pi), -math.log(2) - 0.5
                                * math.log(2 * math.pi) - 0.125])


# -- rsample gradients at the same noise -----------------------------------------------------

_RSAMPLE = {  # name: (constructor, parameters)
    "Normal": (lambda M, a, b: M.Normal(a, b), ([[0.0], [1.0]], [1.0, 2.0, 0.5])),
    "Laplace": (lambda M, a, b: M.Laplace(a, b), ([[0.0], [1.0]], [1.0, 2.0, 0.5])),
    "Gumbel": (lambda M, a, b: M.Gumbel(a, b), ([[0.0], [1.0]], [1.0, 2.0, 0.5])),
    "Weibull": (lambda M, a, b: M.Weibull(a, b), ([[1.0], [2.0]], [1.0, 2.0, 0.5])),
    "LowRankMultivariateNormal": (lambda M, a, b, c: M.LowRankMultivariateNormal(a, b, c),
                                  ([0.0, 1.0, 2.0], [[1.0, 0.3], [0.5, -0.2], [0.2, 1.0]],
                                   [1.0, 2.0, 0.5])),
    "RelaxedOneHotCategorical": (lambda M, a, b: M.RelaxedOneHotCategorical(a, b),
                                 (0.7, [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
}


@pytest.mark.parametrize("name", sorted(_RSAMPLE))
def test_rsample_gradients_match_torch_at_the_same_seed(name):
    torch = pytest.importorskip("torch")
    make, params = _RSAMPLE[name]
    out = []
    for lib in (tg, torch):
        leaves = [t(lib, p, grad=True) for p in params]
        lib.manual_seed(11)
        x = make(lib.distributions, *leaves).rsample((5,))
        w = t(lib, np.resize(np.linspace(-1.0, 2.0, 7), tuple(x.shape)))
        out.append([host(x)] + [host(g) for g in lib.autograd.grad((x * w).sum(), leaves)])
    for ours, theirs in zip(*out):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_normal_rsample_gradient_is_the_noise():
    loc, scale = t(tg, [[0.0], [1.0]], grad=True), t(tg, [1.0, 2.0, 0.5], grad=True)
    tg.manual_seed(3)
    x = D.Normal(loc, scale).rsample((4,))
    g_loc, g_scale = tg.autograd.grad(x.sum(), [loc, scale])
    eps = (host(x) - host(loc)) / host(scale)  # dx/dloc = 1, dx/dscale = eps
    np.testing.assert_allclose(host(g_loc), np.full((2, 1), 12.0))
    np.testing.assert_allclose(host(g_scale), eps.sum((0, 1)), rtol=1e-12)


# -- moments and values at the edges of the parameters ---------------------------------------

def test_moments_at_parameter_edges():
    nan, inf = math.nan, math.inf
    df = [0.5, 1.0, 1.5, 2.0, 3.0]
    cases = [  # (constructor, property, expected)
        (lambda M, L: M.StudentT(t(L, df)), "mean", [nan, nan, 0.0, 0.0, 0.0]),
        (lambda M, L: M.StudentT(t(L, df)), "variance", [nan, nan, inf, inf, 3.0]),
        (lambda M, L: M.Pareto(t(L, [1.0] * 5), t(L, df)), "mean", [inf, inf, 3.0, 2.0, 1.5]),
        (lambda M, L: M.Pareto(t(L, [1.0] * 5), t(L, df)), "variance",
         [inf, inf, inf, inf, 0.75]),
        (lambda M, L: M.InverseGamma(t(L, df), t(L, [1.0] * 5)), "mean",
         [inf, inf, 2.0, 1.0, 0.5]),
        (lambda M, L: M.Gamma(t(L, df), t(L, [1.0] * 5)), "mode", [0.0, 0.0, 0.5, 1.0, 2.0]),
        (lambda M, L: M.Poisson(t(L, [0.0, 1.0, 1.5, 2.0, 3.0])), "mode",
         [0.0, 1.0, 1.0, 2.0, 3.0]),
        # (H ~ e^-50 (1 + 50): 0 to 1e-15; at infinite logits both libraries give nan)
        (lambda M, L: M.Bernoulli(logits=t(L, [-50.0, 50.0, 0.0])), "entropy",
         [51 * math.exp(-50), 51 * math.exp(-50), math.log(2)]),
    ]
    for make, prop, expected in cases:
        for lib in libs():
            v = getattr(make(lib.distributions, lib), prop)
            v = v() if callable(v) else v
            np.testing.assert_allclose(host(v), expected, rtol=1e-12, atol=1e-15, err_msg=prop)


# -- validate_args ---------------------------------------------------------------------------

_BAD = [  # (constructor, the message's start)
    (lambda M, L: M.Normal(t(L, [0.0, 1.0]), t(L, [1.0, 0.0])),
     ("Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: {}.Size([2]), "
      "scale: {}.Size([2])) to satisfy the constraint GreaterThan(lower_bound=0.0)")),
    (lambda M, L: M.Geometric(t(L, [0.0])),
     "Expected parameter probs (Tensor of shape (1,)) of distribution Geometric(probs: "),
    (lambda M, L: M.NegativeBinomial(t(L, [1.0]), t(L, [1.0])),
     "Expected parameter probs (Tensor of shape (1,)) of distribution NegativeBinomial("),
    (lambda M, L: M.Exponential(t(L, [1.0])).log_prob(t(L, [-1.0])),
     ("Expected value argument (Tensor of shape (1,)) to be within the support "
      "(GreaterThanEq(lower_bound=0.0)) of the distribution Exponential(rate: ")),
    (lambda M, L: M.Dirichlet(t(L, [1.0, 1.0])).log_prob(t(L, [[0.5, 0.6]])),
     ("Expected value argument (Tensor of shape (1, 2)) to be within the support (Simplex()) of "
      "the distribution Dirichlet(concentration: ")),
    (lambda M, L: M.Poisson(t(L, [1.0])).log_prob(t(L, [1.5])),
     ("Expected value argument (Tensor of shape (1,)) to be within the support "
      "(IntegerGreaterThan(lower_bound=0)) of the distribution Poisson(rate: ")),
    (lambda M, L: M.MixtureSameFamily(M.Categorical(t(L, [0.5, 0.5])),
                                      M.Normal(t(L, [0.0, 1.0, 2.0]), t(L, [1.0] * 3))),
     ("`mixture_distribution component` (2) does not equal `component_distribution.batch_shape"
      "[-1]` (3)")),
    (lambda M, L: M.Normal(t(L, [0.0, 1.0]), t(L, [1.0, 1.0])).expand((3,)),
     ("The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
      "dimension 0")),
]


@pytest.mark.parametrize("case", range(len(_BAD)))
def test_validation_messages(case):
    make, start = _BAD[case]
    for lib in libs():
        name = "torch" if lib is not tg else "tritongrad"
        # (torch.compile, run by an earlier test, turns torch's default validation off)
        dist = lib.distributions.Distribution
        was = dist._validate_args
        dist.set_default_validate_args(True)
        try:
            with pytest.raises((ValueError, RuntimeError), match="^" + re.escape(
                    start.format(name, name))):
                make(lib.distributions, lib)
        finally:
            dist.set_default_validate_args(was)


def test_validate_args_default_off_lets_bad_values_through():
    D.Distribution.set_default_validate_args(False)
    try:
        m = D.Normal(t(tg, [0.0]), t(tg, [-1.0]))
        assert not m._validate_args and math.isnan(float(m.log_prob(t(tg, [0.0]))))
        # (the density's formula, log(rate) - rate x, as PyTorch's)
        assert float(D.Exponential(t(tg, [2.0])).log_prob(t(tg, [-1.0]))) == math.log(2) + 2
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(t(tg, [0.0]), t(tg, [-1.0]))


# -- constraints, biject_to / transform_to ---------------------------------------------------

_CONSTRAINTS = {  # name: (constraint, input shape)
    "real": (constraints.real, (2, 3)),
    "positive": (constraints.positive, (2, 3)),
    "unit_interval": (constraints.unit_interval, (2, 3)),
    "greater_than": (constraints.greater_than(1.5), (2, 3)),
    "less_than": (constraints.less_than(-1.0), (2, 3)),
    "interval": (constraints.interval(-1.0, 2.0), (2, 3)),
    "simplex": (constraints.simplex, (2, 3)),
    "lower_cholesky": (constraints.lower_cholesky, (2, 3, 3)),
    "corr_cholesky": (constraints.corr_cholesky, (2, 3)),
    "positive_definite": (constraints.positive_definite, (2, 3, 3)),
    "independent": (constraints.independent(constraints.positive, 1), (2, 3)),
    "cat": (constraints.cat([constraints.real, constraints.positive], dim=-1, lengths=[1, 2]),
            (2, 3)),
    "stack": (constraints.stack([constraints.real, constraints.positive,
                                 constraints.unit_interval], dim=-1), (2, 3)),
}


def _same_constraint_in(lib, name):
    """The constraint of _CONSTRAINTS[name], rebuilt under ``lib``'s namespace."""
    if lib is tg:
        return _CONSTRAINTS[name][0]
    c = lib.distributions.constraints
    return {"greater_than": lambda: c.greater_than(1.5), "less_than": lambda: c.less_than(-1.0),
            "interval": lambda: c.interval(-1.0, 2.0),
            "independent": lambda: c.independent(c.positive, 1),
            "cat": lambda: c.cat([c.real, c.positive], dim=-1, lengths=[1, 2]),
            "stack": lambda: c.stack([c.real, c.positive, c.unit_interval], dim=-1),
            }.get(name, lambda: getattr(c, name))()


@pytest.mark.parametrize("name", sorted(_CONSTRAINTS))
def test_biject_to_lands_in_the_constraint_and_inverts(name):
    shape = _CONSTRAINTS[name][1]
    z = np.random.default_rng(1).normal(size=shape) * 0.7
    results = []
    for lib in libs():
        c = _same_constraint_in(lib, name)
        for registry in (lib.distributions.biject_to, lib.distributions.transform_to):
            try:  # (lower_cholesky and positive_definite have no bijection registered)
                tr = registry(c)
            except NotImplementedError:
                results.append(None)
                continue
            zt = t(lib, z)
            y = tr(zt)
            assert bool(c.check(y).all()), name
            if registry is lib.distributions.biject_to:
                np.testing.assert_allclose(host(tr.inv(y)), z, rtol=1e-9, atol=1e-12)
            try:  # (SoftmaxTransform, transform_to(simplex), is not bijective: no log det)
                ladj = host(tr.log_abs_det_jacobian(zt, y))
            except NotImplementedError:
                ladj = None
            results.append((host(y), ladj, tuple(tr.forward_shape(shape)),
                            tr.codomain.event_dim))
    assert results[1] is not None, name  # (transform_to covers every constraint here)
    for ours, theirs in zip(results[:2], results[2:]):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, atol=1e-14)
            assert (ours[1] is None) == (theirs[1] is None)
            if ours[1] is not None:
                np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
            assert ours[2:] == theirs[2:]


@pytest.mark.parametrize("name", ["positive", "unit_interval", "greater_than", "interval"])
def test_elementwise_biject_to_log_det_is_the_derivative(name):
    tr = D.biject_to(_CONSTRAINTS[name][0])
    z = t(tg, np.linspace(-2.0, 2.0, 9), grad=True)
    y = tr(z)
    (dy,) = tg.autograd.grad(y.sum(), z)
    np.testing.assert_allclose(host(tr.log_abs_det_jacobian(z, y)), np.log(np.abs(host(dy))),
                               rtol=1e-10, atol=1e-12)


def test_transform_shapes_and_cache():
    rs = T.ReshapeTransform((6,), (2, 3))
    assert tuple(rs.forward_shape((4, 6))) == (4, 2, 3)
    assert tuple(rs.inverse_shape((4, 2, 3))) == (4, 6)
    corr = T.CorrCholeskyTransform()
    assert tuple(corr.forward_shape((5, 6))) == (5, 4, 4)
    assert tuple(corr.inverse_shape((5, 4, 4))) == (5, 6)
    with pytest.raises(ValueError):
        corr.forward_shape((5,))
    with pytest.raises(ValueError):
        T.ExpTransform(cache_size=2)
    tc = T.ExpTransform().with_cache(1)
    z = t(tg, [0.5, -1.0])
    y = tc(z)
    assert tc(z) is y and tc.inv(y) is z


# -- KL --------------------------------------------------------------------------------------

def test_uniform_to_continuous_bernoulli_kl_is_finite_where_supports_nest():
    # Uniform(0, 1) lives in CB's [0, 1]: KL = -H(U) - E_U[log p_CB] = -E_U[log p_CB], by
    # quadrature; PyTorch 2.13 returns inf for high >= 1 (it treats the closed end as outside)
    lam = 0.3
    x = (np.arange(200000) + 0.5) / 200000
    log_norm = math.log(2 * math.atanh(1 - 2 * lam) / (1 - 2 * lam))
    log_p = x * math.log(lam) + (1 - x) * math.log1p(-lam) + log_norm
    kl = D.kl_divergence(D.Uniform(t(tg, 0.0), t(tg, 1.0)), D.ContinuousBernoulli(t(tg, lam)))
    np.testing.assert_allclose(float(kl), -log_p.mean(), rtol=1e-9)


def test_every_registered_kl_pair_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.distributions.kl import _KL_REGISTRY

    def make(lib, name, i):
        M = lib.distributions
        two = t(lib, [1.0, 1.3])
        a, b = [[1.5, 0.5], [2.5, 3.0]][i]
        return {
            "Bernoulli": lambda: M.Bernoulli(t(lib, [0.3, 0.6][i]) * two / 1.3),
            "Beta": lambda: M.Beta(a * two, b * two), "Binomial": lambda: M.Binomial(
                5, t(lib, [0.3, 0.6][i]) * two / 1.3),
            "Categorical": lambda: M.Categorical(t(lib, [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]][i])),
            "Cauchy": lambda: M.Cauchy(a - 1.0 + 0 * two, b * two),
            "ContinuousBernoulli": lambda: M.ContinuousBernoulli(t(lib, [0.3, 0.6][i]) * two
                                                                 / 1.3),
            "Dirichlet": lambda: M.Dirichlet(t(lib, [[1.0, 2.0, 0.5], [0.7, 1.5, 3.0]][i])),
            "Exponential": lambda: M.Exponential(a * two), "Gamma": lambda: M.Gamma(a * two,
                                                                                    b * two),
            "Geometric": lambda: M.Geometric(t(lib, [0.3, 0.6][i]) * two / 1.3),
            "Gumbel": lambda: M.Gumbel(a - 1.0 + 0 * two, b * two),
            "HalfNormal": lambda: M.HalfNormal(a * two),
            "Independent": lambda: M.Independent(M.Normal(a * two, b * two), 1),
            "Laplace": lambda: M.Laplace(a - 1.0 + 0 * two, b * two),
            "LowRankMultivariateNormal": lambda: M.LowRankMultivariateNormal(
                t(lib, [a, b, 0.0]), t(lib, [[1.0], [0.5], [a]]), t(lib, [1.0, b, 0.5])),
            "MultivariateNormal": lambda: M.MultivariateNormal(t(lib, [a, b, 0.0]), t(
                lib, np.diag([1.0, b, a]) + 0.2)),
            "Normal": lambda: M.Normal(a - 1.0 + 0 * two, b * two),
            "OneHotCategorical": lambda: M.OneHotCategorical(
                t(lib, [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]][i])),
            "Pareto": lambda: M.Pareto(t(lib, [1.0, 0.5][i]) * two, b * two),
            "Poisson": lambda: M.Poisson(a * two),
            "TransformedDistribution": lambda: M.LogNormal(a - 1.0 + 0 * two, b * two),
            "Uniform": lambda: M.Uniform(t(lib, [0.0, -1.0][i]) * two, t(lib, [1.0, 3.0][i])
                                         * two),
            "ExponentialFamily": lambda: M.Wishart(t(lib, a + 3.0), t(lib, np.eye(3) * b)),
        }[name]()

    compared = 0
    for p_type, q_type in _KL_REGISTRY:
        names = (p_type.__name__, q_type.__name__)
        if "Distribution" in names:
            continue
        if names == ("Uniform", "ContinuousBernoulli"):  # (the test above)
            continue
        ours = D.kl_divergence(make(tg, names[0], 0), make(tg, names[1], 1))
        theirs = torch.distributions.kl_divergence(make(torch, names[0], 0),
                                                   make(torch, names[1], 1))
        np.testing.assert_allclose(host(ours), host(theirs), rtol=1e-7, atol=1e-9,
                                   err_msg=str(names))
        compared += 1
    assert compared >= 80


def test_kl_of_a_distribution_with_itself_is_zero():
    for p in (D.Beta(t(tg, [1.5, 0.4]), t(tg, [2.0, 3.0])), D.Gumbel(t(tg, 0.5), t(tg, 2.0)),
              D.Pareto(t(tg, 1.0), t(tg, 3.0)), D.Wishart(t(tg, 4.5), t(tg, np.eye(2) * 2)),
              D.LowRankMultivariateNormal(t(tg, [0.0, 1.0]), t(tg, [[1.0], [0.5]]),
                                          t(tg, [1.0, 2.0]))):
        np.testing.assert_allclose(host(D.kl_divergence(p, p)), 0.0, atol=1e-12)


# -- sampling statistics ---------------------------------------------------------------------

def test_lowrank_mvn_and_mixture_sample_moments():
    m = D.LowRankMultivariateNormal(t(tg, [0.0, 1.0, 2.0]), t(tg, [[1.0, 0.3], [0.5, -0.2],
                                                                   [0.2, 1.0]]),
                                    t(tg, [1.0, 2.0, 0.5]))
    tg.manual_seed(2)
    s = host(m.rsample((40000,)))
    W = np.array([[1.0, 0.3], [0.5, -0.2], [0.2, 1.0]])
    np.testing.assert_allclose(np.cov(s.T), W @ W.T + np.diag([1.0, 2.0, 0.5]), atol=0.06)
    mix = D.MixtureSameFamily(D.Categorical(t(tg, [0.2, 0.8])),
                              D.Normal(t(tg, [0.0, 10.0]), t(tg, [1.0, 2.0])))
    x = host(mix.sample((40000,)))
    np.testing.assert_allclose([x.mean(), x.var()], [8.0, 0.2 * 1 + 0.8 * 4 + 0.16 * 100],
                               rtol=0.03)


def test_mixture_with_shared_weights_samples_each_batch_entry_on_its_own():
    # one Categorical for three batch entries (PyTorch 2.13's sample fails here): each entry
    # draws its own component, so two entries are both "high" with probability 0.7^2
    mix = D.MixtureSameFamily(D.Categorical(t(tg, [0.3, 0.7])),
                              D.Normal(t(tg, [[0.0, 100.0], [200.0, 300.0], [400.0, 500.0]]),
                                       t(tg, [1.0, 2.0])))
    tg.manual_seed(0)
    assert tuple(mix.sample((2, 1)).shape) == (2, 1, 3)
    high = host(mix.sample((40000,))) > np.array([50.0, 250.0, 450.0])
    np.testing.assert_allclose(high.mean(0), 0.7, atol=0.01)
    np.testing.assert_allclose((high[:, 0] & high[:, 1]).mean(), 0.49, atol=0.01)
    np.testing.assert_allclose(host(mix.mean), [70.0, 270.0, 470.0])


def test_lkj_correlation_marginal_variance():
    # off-diagonal correlations of LKJ(d, eta) are 2 Beta(b, b) - 1 with b = eta - 1 + d / 2:
    # variance 1 / (2b + 1) (PyTorch 2.13's sampler gives 0.25 here; docs/distributions.md)
    tg.manual_seed(5)
    chol = D.LKJCholesky(4, t(tg, 2.0)).sample((20000,))
    corr = host(chol @ chol.transpose(-1, -2))
    i, j = np.triu_indices(4, 1)
    np.testing.assert_allclose(corr[:, i, j].var(0), 1 / 7, rtol=0.06)
    np.testing.assert_allclose(np.diagonal(corr, axis1=1, axis2=2), 1.0, atol=1e-12)
