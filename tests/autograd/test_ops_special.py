"""Special functions (autograd/ops/special.py, tritongrad/special.py): lgamma, digamma,
polygamma, mvlgamma, erf, erfc, erfinv, ndtr, ndtri, log_ndtr, i0, i0e, i1, i1e, hypot,
logaddexp2, sinc, entr, logit, xlog1py, exp2, against Python's math module, NumPy and math
identities in float64, with gradients by finite differences (and the derivative identities:
lgamma' = digamma, digamma' = polygamma(1), erfinv' = sqrt(pi)/2 exp(erfinv^2), i0' = i1)."""

import math
import statistics

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order

SP = tg.special


def f64(values, device="cpu"):
    return tg.tensor(np.asarray(values, dtype=np.float64), dtype=tg.float64, device=device)


def close(t, ref, rtol=1e-13, atol=1e-14):
    np.testing.assert_allclose(host(t), np.asarray(ref, dtype=np.float64), rtol=rtol, atol=atol)


# -- the gamma family --------------------------------------------------------------------------------

X = [-7.3, -2.5, -0.3, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 10.0, 33.3, 171.2, 1e5]


def test_lgamma_matches_math(device):
    x = f64(X, device)
    close(tg.lgamma(x), [math.lgamma(v) for v in X], rtol=2e-14, atol=2e-15)
    close(x.lgamma(), [math.lgamma(v) for v in X], rtol=2e-14, atol=2e-15)
    close(SP.gammaln(x), [math.lgamma(v) for v in X], rtol=2e-14, atol=2e-15)
    edges = tg.lgamma(f64([0., -1., -4., math.inf, -math.inf, math.nan], device))
    assert host(edges)[:5].tolist() == [math.inf] * 5 and math.isnan(host(edges)[5])
    assert tg.lgamma(tg.tensor([1, 2])).dtype is tg.float32
    # float32 inputs are expanded in float64: lgamma(1) = lgamma(2) = 0 to float64's precision
    # (float32 alone would be 1e-7 off)
    assert np.abs(host(tg.lgamma(tg.tensor([1., 2.], device=device)))).max() < 1e-15
    np.testing.assert_allclose(host(tg.digamma(tg.tensor([1.], device=device))),
                               [-0.5772156649015329], rtol=1e-7)


def test_digamma_identities(device):
    x = f64([0.1, 0.5, 1.3, 4.0, 25.0, -0.4, -2.7], device)
    d, d1 = tg.digamma(x), tg.digamma(x + 1)
    close(d1 - d, 1 / host(x), rtol=1e-13)  # psi(x + 1) = psi(x) + 1/x
    close(tg.digamma(f64([1.0, 0.5], device)),
          [-0.5772156649015329, -0.5772156649015329 - 2 * math.log(2)])
    close(SP.psi(f64([2.0], device)), [1 - 0.5772156649015329])
    edges = host(tg.digamma(f64([0., -1., math.inf, -math.inf], device)))
    assert edges[0] == -math.inf and np.isnan(edges[1]) and edges[2] == math.inf
    assert np.isnan(edges[3])


def test_polygamma_identities(device):
    close(tg.polygamma(1, f64([1.0, 0.5], device)), [math.pi ** 2 / 6, math.pi ** 2 / 2])
    # psi^(n)(1) = (-1)^(n+1) n! zeta(n + 1)
    zeta = {3: 1.2020569031595942, 4: math.pi ** 4 / 90}
    for n in (2, 3):
        close(tg.polygamma(n, f64([1.0], device)),
              [(-1) ** (n + 1) * math.factorial(n) * zeta[n + 1]], rtol=1e-13)
    x = f64([0.3, 2.2, 9.0, -1.5], device)
    # psi^(n)(x + 1) = psi^(n)(x) + (-1)^n n! / x^(n+1)
    for n in (1, 2, 3):
        diff = host(tg.polygamma(n, x + 1) - tg.polygamma(n, x))
        np.testing.assert_allclose(diff, (-1) ** n * math.factorial(n) / host(x) ** (n + 1),
                                   rtol=1e-11)
    close(x.polygamma(0), host(tg.digamma(x)))
    assert host(tg.polygamma(2, f64([0., math.inf], device))).tolist() == [-math.inf, 0.]
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n"):
        tg.polygamma(-1, x)


def test_mvlgamma(device):
    x = f64([2.5, 4.0], device)
    ref = [sum(math.lgamma(v - i / 2) for i in range(3)) + 1.5 * math.log(math.pi)
           for v in (2.5, 4.0)]
    close(tg.mvlgamma(x, 3), ref, rtol=1e-13)
    close(SP.multigammaln(x, 3), ref, rtol=1e-13)
    with pytest.raises(RuntimeError, match=r"All elements must be greater than \(p-1\)/2"):
        tg.mvlgamma(f64([0.5]), 2)


def test_gamma_family_derivatives(device):
    x = f64([0.3, 1.7, 6.0, -1.4], device).requires_grad_()
    # the derivative identities, through the composites' own gradients
    (g,) = tg.autograd.grad(tg.lgamma(x).sum(), x)
    close(g, host(tg.digamma(x)), rtol=1e-11)
    (g,) = tg.autograd.grad(tg.digamma(x).sum(), x)
    close(g, host(tg.polygamma(1, x)), rtol=1e-11)
    assert_grads_match(lambda t: tg.polygamma(2, t), [x])
    second_order(tg.lgamma, [x])


# -- the error function and the normal distribution -----------------------------------------------

E = [-6.0, -2.2, -0.7, -0.2, 0.0, 1e-8, 0.3, 0.5, 1.1, 3.0, 5.5, 26.0]


def test_erf_erfc(device):
    x = f64(E, device)
    close(SP.erf(x), [math.erf(v) for v in E], rtol=1e-14, atol=1e-16)
    close(SP.erfc(x), [math.erfc(v) for v in E], rtol=1e-13, atol=0)  # (eps x^2 at 26)
    assert host(SP.erf(f64([math.inf, -math.inf], device))).tolist() == [1., -1.]
    (g,) = tg.autograd.grad(SP.erf(x.requires_grad_()).sum(), x)
    close(g, 2 / math.sqrt(math.pi) * np.exp(-np.square(E)), rtol=1e-12, atol=1e-300)


def test_erfinv(device):
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 23), [1 - 1e-12, 0.0]])
    x = tg.erfinv(f64(y, device))
    np.testing.assert_allclose([math.erf(v) for v in host(x)], y, rtol=0, atol=4e-15)
    edges = host(tg.erfinv(f64([1., -1., 1.5], device)))
    assert edges[0] == math.inf and edges[1] == -math.inf and np.isnan(edges[2])
    t = f64([-0.9, 0.2, 0.7], device).requires_grad_()
    (g,) = tg.autograd.grad(t.erfinv().sum(), t)
    close(g, math.sqrt(math.pi) / 2 * np.exp(host(tg.erfinv(t)) ** 2), rtol=1e-11)


def test_normal_distribution(device):
    x = [-40.0, -36.0, -10.0, -1.0, 0.0, 2.0, 9.0]
    nd = statistics.NormalDist()
    close(SP.ndtr(f64(x[2:], device)), [0.5 * math.erfc(-v / math.sqrt(2)) for v in x[2:]],
          rtol=1e-13, atol=1e-300)
    ref = [math.log(0.5 * math.erfc(-v / math.sqrt(2))) if v > -37 else
           -v * v / 2 - math.log(-v) - 0.5 * math.log(2 * math.pi)
           + math.log1p(-1 / v ** 2 + 3 / v ** 4 - 15 / v ** 6 + 105 / v ** 8) for v in x]
    ref[-1] = math.log1p(-0.5 * math.erfc(9 / math.sqrt(2)))
    close(SP.log_ndtr(f64(x, device)), ref, rtol=1e-12, atol=1e-300)
    p = [0.001, 0.025, 0.5, 0.9]
    close(SP.ndtri(f64(p, device)), [nd.inv_cdf(v) for v in p], rtol=1e-12, atol=1e-15)


# -- Bessel functions -------------------------------------------------------------------------------

B = [0.0, 0.4, -1.0, 3.3, -14.9, 15.1, 24.9, 25.1, 40.0, -120.0]


def test_bessel(device):
    x = f64(B, device)
    close(tg.i0(x), np.i0(B), rtol=1e-13)
    close(SP.i0e(x), np.i0(B) * np.exp(-np.abs(B)), rtol=1e-13)
    # I1 = I0' (through the composite's gradient), and i1e its scaled form
    xg = f64(B, device).requires_grad_()
    (i1,) = tg.autograd.grad(tg.i0(xg).sum(), xg)
    close(SP.i1(x), host(i1), rtol=1e-12)
    close(SP.i1e(x), host(i1) * np.exp(-np.abs(B)), rtol=1e-12)
    close(SP.i1(f64([1.0], device)), [0.5651591039924851], rtol=1e-14)
    assert np.isfinite(host(SP.i0e(f64([1000.0], device)))).all()


# -- small compositions ----------------------------------------------------------------------------

def test_hypot_logaddexp2(device):
    a, b = f64([3., 1e200, 0., -5e-200], device), f64([4., 1e200, 0., 1e-200], device)
    close(tg.hypot(a, b), [5., math.hypot(1e200, 1e200), 0., math.hypot(5e-200, 1e-200)])
    a, b = f64([0.5, -1.2], device).requires_grad_(), f64([2.0, 0.3], device).requires_grad_()
    assert_grads_match(tg.hypot, [a, b])
    close(tg.logaddexp2(a, b), np.logaddexp2(host(a), host(b)))
    assert_grads_match(tg.logaddexp2, [a, b])
    z = f64([0.], device).requires_grad_()
    tg.hypot(z, z).sum().backward()
    assert host(z.grad).tolist() == [0.]
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.hypot(tg.tensor([1]), tg.tensor([2]))


def test_small_special_functions(device):
    x = f64([0.0, 0.25, -1.5, 3.0], device)
    close(SP.sinc(x), np.sinc(host(x)))
    close(SP.entr(f64([0.0, 0.5, 2.0], device)), [0.0, 0.5 * math.log(2), -2 * math.log(2)])
    assert host(SP.entr(f64([-1.0], device))).tolist() == [-math.inf]
    close(SP.logit(f64([0.2, 0.5], device)), [math.log(0.25), 0.0])
    hi = 1 - 1e-6  # (1 - hi is not 1e-6 exactly)
    close(SP.logit(f64([0.0, 1.0], device), eps=1e-6), [math.log(1e-6 / (1 - 1e-6)),
                                                        math.log(hi / (1 - hi))])
    close(SP.xlog1py(f64([0.0, 2.0], device), f64([-1.0, 0.5], device)),
          [0.0, 2 * math.log1p(0.5)])
    close(SP.exp2(f64([3.0, -1.0], device)), [8.0, 0.5])
    close(SP.expit(f64([0.0], device)), [0.5])
    close(SP.gammainc(f64([1.0], device), f64([2.0], device)), [1 - math.exp(-2)])
    t = f64([0.0, 0.3], device).requires_grad_()
    (g,) = tg.autograd.grad(SP.sinc(t).sum(), t)
    assert host(g)[0] == 0.0
    assert_grads_match(SP.sinc, [f64([0.3, -1.2], device).requires_grad_()])


def test_the_namespace_is_torch_specials():
    for name in ("erf", "erfc", "erfinv", "expit", "logit", "xlogy", "xlog1py", "gammaln",
                 "digamma", "psi", "polygamma", "multigammaln", "i0", "i0e", "i1", "i1e",
                 "ndtr", "ndtri", "log_ndtr", "sinc", "entr", "log_softmax", "softmax",
                 "logsumexp", "round", "expm1", "exp2", "log1p", "gammainc", "gammaincc"):
        assert callable(getattr(SP, name)), name
