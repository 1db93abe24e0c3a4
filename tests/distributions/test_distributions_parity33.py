"""Regression tests from session 33's differential sweep of ``tritongrad.distributions`` against
torch 2.13's ``torch.distributions`` (every class with scalar, batched and broadcast parameters,
float32 and float64; KL for every registered pair; transforms, constraints, biject_to): the
fixes, checked against float64 NumPy references and finite differences, and where torch is
installed, a compact parity check of values, gradients and same-seed draws."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import distributions as D


def t(x, dtype="float64", grad=False):
    out = tg.tensor(np.asarray(x, dtype=dtype))
    return out.requires_grad_() if grad else out


def _spd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


# -- Wishart ---------------------------------------------------------------------------------

def _wishart_moments_np(df, L):
    """sum(mean) + sum(variance) of Wishart(df, scale_tril=L), broadcast, in NumPy."""
    S = L @ np.swapaxes(L, -1, -2)
    d = np.diagonal(S, axis1=-2, axis2=-1)
    dfm = df[..., None, None]
    return float((dfm * S).sum() + (dfm * (S**2 + d[..., :, None] * d[..., None, :])).sum())


def test_wishart_variance_gradient_with_broadcast_df():
    # df of shape (2, 1) against three scale matrices: the variance's gradient to scale_tril was
    # three times too large on the diagonal terms (a diagonal of the expanded covariance)
    rng = np.random.default_rng(0)
    df = rng.uniform(3.5, 6.0, size=(2, 1))
    L = np.linalg.cholesky(np.stack([_spd(rng, 3) for _ in range(3)]))
    Lt = t(L, grad=True)
    d = D.Wishart(t(df), scale_tril=Lt)
    (d.mean.sum() + d.variance.sum()).backward()
    h = 1e-6
    fd = np.zeros_like(L)
    for idx in np.ndindex(L.shape):
        if idx[-2] >= idx[-1]:
            up, down = L.copy(), L.copy()
            up[idx] += h
            down[idx] -= h
            fd[idx] = (_wishart_moments_np(df, up) - _wishart_moments_np(df, down)) / (2 * h)
    got = np.tril(Lt.grad.numpy())
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-5)


def test_wishart_log_prob_off_support_without_validation_is_finite():
    # PyTorch's log_prob takes log|det value| (slogdet): finite for a value off the support
    # when validation is off, where log det gave NaN
    p = 3
    df, value = 5.0, -np.eye(p)
    d = D.Wishart(t(df), covariance_matrix=t(np.eye(p)), validate_args=False)
    from math import lgamma, log
    mvlgamma = p * (p - 1) / 4 * log(np.pi) + sum(lgamma(df / 2 - j / 2) for j in range(p))
    expected = (0.5 * (df - p - 1) * 0.0 - 0.5 * np.trace(value) - 0.5 * df * p * log(2)
                - mvlgamma)
    np.testing.assert_allclose(d.log_prob(t(value)).item(), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="Expected value argument"):
        D.Wishart(t(df), covariance_matrix=t(np.eye(p))).log_prob(t(value))


# -- Multinomial entropy (PyTorch's rounds lgamma(n + 1) to float32) ------------------------

def test_multinomial_entropy_float64_exact():
    from itertools import product
    from math import lgamma
    probs = np.array([0.2, 0.3, 0.5])
    n = 5
    expected = 0.0
    for x in product(range(n + 1), repeat=3):
        if sum(x) != n:
            continue
        logp = (lgamma(n + 1) - sum(lgamma(k + 1) for k in x)
                + sum(k * np.log(q) for k, q in zip(x, probs)))
        expected -= np.exp(logp) * logp
    got = D.Multinomial(n, t(probs)).entropy().item()
    assert abs(got - expected) < 1e-13


# -- Dirichlet and Beta: PyTorch's implicit reparameterization -----------------------------

def _beta_cdf_alpha_derivative(x, a, b):
    """-(dI_x(a, b)/da) / f(x; a, b), b fixed, by SciPy's incomplete beta function."""
    sp = pytest.importorskip("scipy.special")
    h = 1e-6 * a
    d_cdf = (sp.betainc(a + h, b, x) - sp.betainc(a - h, b, x)) / (2 * h)
    pdf = np.exp((a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - sp.betaln(a, b))
    return -d_cdf / pdf


def test_beta_rsample_gradient_is_the_implicit_reparameterization():
    # x = F^-1(u; a, b) at fixed u: dx/da = -(dF/da)(x) / f(x), and the same for b (the
    # normalized-gamma gradient it had before is unbiased but another estimator)
    c1, c0 = np.array([0.5, 2.0, 7.0]), np.array([1.5, 0.3, 9.0])
    a, b = t(c1, grad=True), t(c0, grad=True)
    tg.manual_seed(5)
    x = D.Beta(a, b).rsample()
    ga, gb = tg.autograd.grad(x.sum(), [a, b])
    xv = x.detach().numpy()
    np.testing.assert_allclose(ga.numpy(), _beta_cdf_alpha_derivative(xv, c1, c0), rtol=1e-5)
    # F(x; a, b) = 1 - F(1 - x; b, a)
    np.testing.assert_allclose(gb.numpy(), -_beta_cdf_alpha_derivative(1 - xv, c0, c1),
                               rtol=1e-5)


def test_dirichlet_rsample_gradient_is_pytorchs_formula():
    # d x_j / d a_i = G_i (delta_ij - x_j), G_i the implicit derivative of x_i's Beta(a_i,
    # total - a_i) marginal divided by 1 - x_i
    conc = np.array([[0.4, 1.0, 3.0], [2.0, 5.0, 0.8]])
    c = t(conc, grad=True)
    tg.manual_seed(9)
    x = D.Dirichlet(c).rsample()
    w = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])
    (g,) = tg.autograd.grad((x * t(w)).sum(), [c])
    xv = x.detach().numpy()
    G = _beta_cdf_alpha_derivative(xv, conc, conc.sum(-1, keepdims=True) - conc) / (1 - xv)
    expected = G * (w - (xv * w).sum(-1, keepdims=True))
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dirichlet_and_beta_rsample_gradients_match_torch(dtype):
    torch = pytest.importorskip("torch")
    conc = np.array([[0.4, 1.0, 3.0], [2.0, 5.0, 0.8]])
    w = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])
    results = []
    for lib, M in ((tg, D), (torch, torch.distributions)):
        c = lib.tensor(conc.astype(dtype), requires_grad=True)
        lib.manual_seed(4)
        x = M.Dirichlet(c).rsample()
        y = M.Beta(c[:, 0], c[:, 1]).rsample((3,))
        results.append([x.detach().numpy(), y.detach().numpy()]
                       + [g.numpy() for g in lib.autograd.grad(
                           (x * lib.tensor(w.astype(dtype))).sum() + y.sum(), [c])])
    for ours, theirs in zip(*results):  # (PyTorch's derivative is approximated to ~5e-4)
        np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=1e-5)


# -- sampling streams ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bernoulli_sample_of_broadcast_probs_draws_row_major(dtype):
    # probabilities expanded to (sample, batch) take their uniforms in row-major order, as
    # PyTorch's kernel does for an expanded input
    p = np.array([0.6, 0.34, 0.45])
    tg.manual_seed(3)
    got = D.Bernoulli(t(p, dtype)).sample((4,)).numpy()
    tg.manual_seed(3)
    u = tg.rand((4, 3), dtype=getattr(tg, dtype)).numpy()
    np.testing.assert_array_equal(got, (u < p.astype(dtype)).astype(dtype))


def test_von_mises_draws_are_deterministic_and_in_range():
    loc, kappa = t([[0.5], [-2.0]]), t([0.3, 1.0, 8.0])
    tg.manual_seed(7)
    a = D.VonMises(loc, kappa).sample((5,))
    tg.manual_seed(7)
    b = D.VonMises(loc, kappa).sample((5,))
    assert a.shape == (5, 2, 3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert np.all(np.abs(a.numpy()) <= np.pi)


# -- API details -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, module", [
    ("StudentT", "studentT"), ("HalfNormal", "half_normal"), ("HalfCauchy", "half_cauchy"),
    ("Pareto", "pareto"), ("RelaxedBernoulli", "relaxed_bernoulli"),
    ("RelaxedOneHotCategorical", "relaxed_categorical")])
def test_classes_carry_pytorchs_module_paths(name, module):
    cls = getattr(D, name)
    assert cls.__module__ == f"tritongrad.distributions.{module}"


def test_module_path_in_messages_and_pickle():
    d = D.RelaxedBernoulli(t(0.5), probs=t([0.3]))
    with pytest.raises(NotImplementedError,
                       match=r"relaxed_bernoulli\.RelaxedBernoulli'> does not implement mode"):
        d.mode
    s = pickle.loads(pickle.dumps(D.StudentT(t(3.0))))
    assert type(s) is D.StudentT


def test_sample_n_warns_future_warning():
    d = D.Normal(t([0.0, 1.0]), t([1.0, 2.0]))
    with pytest.warns(FutureWarning, match=r"`sample_n\(n\)` will be deprecated"):
        assert d.sample_n(3).shape == (3, 2)


def test_int_sample_shape_message():
    with pytest.raises(TypeError, match="^'int' object is not iterable"):
        D.Normal(t(0.0), t(1.0)).sample(3)


def test_non_number_argument_message():
    with pytest.raises(ValueError, match="^Input arguments must all be instances of Number, "):
        D.Normal("a", 1.0)


def test_bernoulli_log_prob_promotes_to_the_values_dtype():
    # float32 probabilities (from a Python number) and float64 values: float64, as PyTorch's
    d = D.Bernoulli(0.3)
    out = d.log_prob(t([1.0, 0.0]))
    assert out.dtype == tg.float64
    np.testing.assert_allclose(out.numpy(), np.log([np.float32(0.3), 1 - np.float32(0.3)]),
                               rtol=1e-6)
    assert d.log_prob(tg.tensor([1, 0])).dtype == tg.float32  # (PyTorch refuses integers)


# -- outside distributions/ (reported; strict xfails mark them) ------------------------------

def test_diagonal_of_expanded_tensor_gradient():
    x = t(np.arange(4.0).reshape(2, 2), grad=True)
    x.expand((3, 2, 2)).diagonal(dim1=-2, dim2=-1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 3 * np.eye(2))


# -- against PyTorch -------------------------------------------------------------------------

def _param_sets(rng):
    """name: (constructor taking a module and its tensors, parameter arrays (broadcast shapes),
    a value of the support generator)."""
    pos = lambda *s: rng.uniform(0.5, 2.5, size=s)  # noqa: E731
    real = lambda *s: rng.normal(size=s)  # noqa: E731
    unit = lambda *s: rng.uniform(0.15, 0.85, size=s)  # noqa: E731
    return {
        "Normal": (lambda M, a, b: M.Normal(a, b), (real(2, 1), pos(3)), lambda s: real(*s)),
        "Gumbel": (lambda M, a, b: M.Gumbel(a, b), (real(2, 1), pos(3)), lambda s: real(*s)),
        "Gamma": (lambda M, a, b: M.Gamma(a, b), (pos(2, 1), pos(3)), lambda s: pos(*s)),
        "Beta": (lambda M, a, b: M.Beta(a, b), (pos(2, 1), pos(3)), lambda s: unit(*s)),
        "StudentT": (lambda M, a, b: M.StudentT(a + 2, b), (pos(2, 1), real(3)),
                     lambda s: real(*s)),
        "Weibull": (lambda M, a, b: M.Weibull(a, b), (pos(2, 1), pos(3)), lambda s: pos(*s)),
        "VonMises": (lambda M, a, b: M.VonMises(a, b), (real(2, 1), pos(3)), lambda s: real(*s)),
        "Bernoulli": (lambda M, a: M.Bernoulli(a), (unit(2, 3),),
                      lambda s: (rng.uniform(size=s) < 0.5).astype(float)),
        "Binomial": (lambda M, a, b: M.Binomial(a, b), (np.full((2, 1), 6.0), unit(3)),
                     lambda s: np.floor(rng.uniform(0, 7, size=s))),
        "Poisson": (lambda M, a: M.Poisson(a), (pos(2, 3),),
                    lambda s: np.floor(rng.uniform(0, 5, size=s))),
        "Wishart": (lambda M, a, b: M.Wishart(a, scale_tril=b),
                    (rng.uniform(3.5, 6.0, size=(2, 1)),
                     np.linalg.cholesky(np.stack([_spd(rng, 3) for _ in range(3)]))),
                    lambda s: np.stack([_spd(rng, 3) for _ in range(int(np.prod(s)))]).reshape(
                        tuple(s) + (3, 3))),
    }


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parity_with_torch(dtype):
    torch = pytest.importorskip("torch")
    tol = dict(rtol=1e-9, atol=1e-11) if dtype == "float64" else dict(rtol=2e-4, atol=1e-5)
    gtol = dict(rtol=1e-6, atol=1e-8) if dtype == "float64" else dict(rtol=2e-3, atol=1e-4)
    rng = np.random.default_rng(33)
    for name, (ctor, params, values) in _param_sets(rng).items():
        ours = [t(p, dtype, grad=True) for p in params]
        theirs = [torch.tensor(np.asarray(p, dtype=dtype), requires_grad=True) for p in params]
        a, b = ctor(D, *ours), ctor(torch.distributions, *theirs)
        assert tuple(a.batch_shape) == tuple(b.batch_shape), name
        x = values((2,) + tuple(b.batch_shape))
        pairs = [(a.log_prob(t(x, dtype)), b.log_prob(torch.tensor(x.astype(dtype))))]
        for prop in ("mean", "variance"):
            pairs.append((getattr(a, prop), getattr(b, prop)))
        if name not in ("VonMises", "Wishart", "Poisson"):  # (neither library has these)
            pairs.append((a.entropy(), b.entropy()))
        # (VonMises: PyTorch's polynomial approximations of log I0, I1 / I0 are ~1e-8 off)
        vtol = dict(rtol=1e-5, atol=1e-6) if name == "VonMises" else tol
        for ra, rb in pairs:
            np.testing.assert_allclose(ra.detach().numpy(), rb.detach().numpy(), **vtol,
                                       err_msg=name)
        total_a = sum(r.sum() for r, _ in pairs if r.dtype.is_floating_point)
        total_b = sum(r.sum() for _, r in pairs if r.dtype.is_floating_point)
        for ga, gb in zip(tg.autograd.grad(total_a, ours), torch.autograd.grad(total_b, theirs)):
            if name == "Wishart":  # (PyTorch's has the upper triangle: zero here, by design)
                ga, gb = np.tril(ga.numpy()), np.tril(gb.numpy())
            else:
                ga, gb = ga.numpy(), gb.numpy()
            np.testing.assert_allclose(ga, gb, **(vtol if name == "VonMises" else gtol),
                                       err_msg=name)
        if name != "Wishart":  # (its draws differ on purpose: docs/distributions.md)
            tg.manual_seed(11)
            torch.manual_seed(11)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sa, sb = a.sample((2, 3)), b.sample((2, 3))
            np.testing.assert_allclose(sa.numpy(), sb.numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=name)


def test_continuous_bernoulli_moments_in_float32_near_the_window():
    # the closed forms cancel two terms of ~1 / (1 - 2p)^2: computed in float64 (PyTorch's
    # float32 variance at 0.499 is -1.6); the reference integrates the density
    for p in (0.499, 0.4985, 0.3):
        d = tg.distributions.ContinuousBernoulli(probs=tg.tensor(p, dtype=tg.float32))
        xs = np.linspace(0.0, 1.0, 200001)
        c = 2 * np.arctanh(1 - 2 * p) / (1 - 2 * p)
        pdf = c * p ** xs * (1 - p) ** (1 - xs)
        m = np.trapezoid(xs * pdf, xs)
        v = np.trapezoid((xs - m) ** 2 * pdf, xs)
        assert d.mean.dtype is tg.float32
        np.testing.assert_allclose(d.mean.item(), m, rtol=1e-6)
        np.testing.assert_allclose(d.variance.item(), v, rtol=1e-5)
