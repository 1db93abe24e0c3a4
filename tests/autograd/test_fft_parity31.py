"""Fixes from the differential sweep of tg.fft, tg.signal.windows and tg.special against
PyTorch: each against float64 NumPy/math references or finite differences (no torch), and
against torch where it is installed."""

import math

import numpy as np
import pytest

import tritongrad as tg

F64 = tg.float64


def t64(values, requires_grad=False):
    return tg.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def grad_of(fn, x, *args):
    x = t64(x, requires_grad=True)
    fn(x, *args).sum().backward()
    return x.grad.numpy()


def central_difference(fn, x, h=1e-6):
    x = np.asarray(x, dtype=np.float64)
    return (fn(t64(x + h)).numpy() - fn(t64(x - h)).numpy()) / (2 * h)


def polygamma_reference(n, x, terms=2000):
    """(-1)^(n+1) n! sum_k (x + k)^-(n+1), the sum to ``terms`` then Euler-Maclaurin."""
    s = n + 1
    k = np.arange(terms, dtype=np.float64)
    w = x + terms
    head = np.sum((x + k) ** -s)
    tail = w ** (1 - s) / (s - 1) + w ** -s / 2 + s * w ** (-s - 1) / 12
    return (-1) ** (n + 1) * math.factorial(n) * (head + tail)


# -- polygamma / digamma below 0 (the series had been used at x + 10 < 0: wrong values) ----------

NEG = [-10.5, -7.7, -3.3, -0.2, -0.75, -100.25]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma_negative_arguments(n):
    got = tg.special.polygamma(n, t64(NEG)).numpy()
    ref = np.array([polygamma_reference(n, x) for x in NEG])
    np.testing.assert_allclose(got, ref, rtol=1e-9)


def test_digamma_gradient_negative_arguments_matches_finite_differences():
    g = grad_of(tg.special.digamma, NEG[:5])
    np.testing.assert_allclose(g, central_difference(tg.special.digamma, NEG[:5]), rtol=1e-6)


def test_polygamma_poles_and_infinities():
    r = tg.special.polygamma(1, t64([-3.0, 0.0, math.inf])).numpy()
    assert r[0] == math.inf and r[1] == math.inf and r[2] == 0.0


# -- ndtri's tails (2p - 1 lost them: -inf at p = 1e-8 in float32) --------------------------------

def ndtr_reference(x):
    return np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])


def test_ndtri_lower_tail_inverts_ndtr():
    p = np.array([1e-300, 1e-100, 1e-20, 1e-8, 1e-3, 0.0099, 0.01, 0.3])
    x = tg.special.ndtri(t64(p)).numpy()
    np.testing.assert_allclose(ndtr_reference(x), p, rtol=1e-12)


def test_ndtri_upper_tail_and_edges():
    p = np.array([0.99, 1 - 1e-12, 0.0, 1.0, -0.5, 1.5])
    x = tg.special.ndtri(t64(p)).numpy()
    np.testing.assert_allclose(1 - ndtr_reference(x[:2]), 1 - p[:2], rtol=1e-9)
    assert x[2] == -math.inf and x[3] == math.inf and np.isnan(x[4:]).all()


def test_ndtri_float32_small_p_is_finite():
    x = tg.special.ndtri(tg.tensor([1e-8, 1e-30], dtype=tg.float32))
    assert x.dtype is tg.float32
    np.testing.assert_allclose(ndtr_reference(x.numpy().astype(np.float64)), [1e-8, 1e-30],
                               rtol=1e-5)


def test_ndtri_gradient_is_sqrt_2pi_exp_half_x2():
    p = np.array([1e-10, 0.2, 0.9])
    x = tg.special.ndtri(t64(p)).numpy()
    np.testing.assert_allclose(grad_of(tg.special.ndtri, p),
                               np.sqrt(2 * np.pi) * np.exp(x * x / 2), rtol=1e-12)


# -- gradients at the edges --------------------------------------------------------------------

def test_xlog1py_gradient_for_zero_input_is_log1p_other():
    a = t64([0.0, 0.0, 0.0, 2.0], requires_grad=True)
    b = t64([1.0, -1.0, 3.0, 0.5], requires_grad=True)
    y = tg.special.xlog1py(a, b)
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 0.0, 0.0, 2 * math.log1p(0.5)])
    np.testing.assert_allclose(a.grad.numpy(), [math.log(2), 0.0, math.log(4), math.log1p(0.5)])
    np.testing.assert_allclose(b.grad.numpy(), [0.0, 0.0, 0.0, 2 / 1.5])


def test_xlog1py_refuses_complex():
    z = tg.tensor([1 + 1j])
    with pytest.raises(NotImplementedError, match="xlog1py"):
        tg.special.xlog1py(z, z)


def test_entr_gradient_is_minus_one_minus_log_x():
    x = [0.5, 2.0, 0.0, -1.0, math.nan, math.inf]
    g = grad_of(tg.special.entr, x)
    np.testing.assert_allclose(g[:2], [-(1 + math.log(0.5)), -(1 + math.log(2.0))])
    assert g[2] == math.inf and np.isnan(g[3]) and np.isnan(g[4]) and g[5] == -math.inf


def test_logit_negative_eps_clamps_nothing():
    x = [-0.5, 0.25, 1.5]
    g = grad_of(lambda t: tg.special.logit(t, eps=-0.1), x)
    assert np.isnan(g[0]) and np.isnan(g[2])
    assert g[1] == pytest.approx(1 / (0.25 * 0.75))
    np.testing.assert_array_equal(np.isnan(g), np.isnan(grad_of(tg.special.logit, x)))


def test_erfcx_gradient():
    x = [-2.0, 0.3, 3.0, 10.0]
    np.testing.assert_allclose(grad_of(tg.special.erfcx, x),
                               central_difference(tg.special.erfcx, x), rtol=1e-6)
    g = grad_of(tg.special.erfcx, [-math.inf, -50.0])
    assert g[0] == -math.inf and g[1] == -math.inf  # 2 x erfcx(x) - 2/sqrt(pi), not NaN


@pytest.mark.parametrize("name", ["i1", "i0e", "i1e"])
def test_bessel_gradients_match_finite_differences(name):
    fn = getattr(tg.special, name)
    x = [-30.0, -2.0, -0.3, 0.4, 3.0, 24.0, 26.0]
    np.testing.assert_allclose(grad_of(fn, x), central_difference(fn, x), rtol=1e-6, atol=1e-9)
    assert grad_of(fn, [0.0])[0] == (0.0 if name == "i0e" else 0.5)


def test_i1_gradient_finite_where_i0_is():
    g = grad_of(tg.special.i1, [700.0])[0]
    i0 = float(np.i0(700.0))
    # i1 / i0 ~ 1 - 1/(2x) - 1/(8x^2): i1' = i0 - i1 / x ~ i0 (1 - 1/x + 1/(2x^2))
    assert math.isfinite(g) and g == pytest.approx(i0 * (1 - 1 / 700 + 0.5 / 700**2), rel=1e-7)


def test_gradcheck_new_nodes():
    for fn in (tg.special.ndtr, tg.special.ndtri, tg.special.entr, tg.special.i1,
               tg.special.i0e, tg.special.i1e, tg.special.erfcx):
        x = t64([0.2, 0.45, 0.7], requires_grad=True)
        assert tg.autograd.gradcheck(fn, (x,))
    for fn in (tg.special.ndtri, tg.special.i1e):  # (the rules record: second derivatives)
        assert tg.autograd.gradgradcheck(fn, (t64([0.2, 0.7], requires_grad=True),))
    x = t64([-2.5, -0.3], requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: tg.special.polygamma(2, t), (x,))


# -- arguments ----------------------------------------------------------------------------------

OUT_FUNCS = ["erf", "erfc", "ndtr", "ndtri", "log_ndtr", "i0e", "i1", "i1e", "sinc", "entr",
             "logit"]


@pytest.mark.parametrize("name", OUT_FUNCS)
def test_special_out(name):
    fn = getattr(tg.special, name)
    x = t64([0.2, 0.7])
    out = tg.empty(0, dtype=F64)
    assert fn(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), fn(x).numpy())
    with pytest.raises(RuntimeError, match="can't be cast"):
        fn(x, out=tg.empty(0, dtype=tg.int64))


def test_xlog1py_and_logsumexp_out():
    out = tg.empty(0, dtype=F64)
    a, b = t64([1.0, 2.0]), t64([0.5, 3.0])
    assert tg.special.xlog1py(a, b, out=out) is out
    np.testing.assert_allclose(out.numpy(), [math.log1p(0.5), 2 * math.log1p(3.0)])
    out = tg.empty(0, dtype=F64)
    assert tg.special.logsumexp(a, 0, out=out) is out
    assert out.item() == pytest.approx(math.log(math.e + math.e ** 2))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_special_softmax_requires_dim(name):
    with pytest.raises(TypeError):
        getattr(tg.special, name)(t64([1.0, 2.0]))
    r = getattr(tg.special, name)(t64([1.0, 2.0]), 0, dtype=tg.float32)
    assert r.dtype is tg.float32


# -- fft ------------------------------------------------------------------------------------------

def test_rfftfreq_sizes_as_pytorch():
    assert np.isnan(tg.fft.rfftfreq(0).numpy()).all() and tg.fft.rfftfreq(0).shape == (1,)
    with pytest.raises(RuntimeError, match="negative dimension"):
        tg.fft.rfftfreq(-5)
    np.testing.assert_allclose(tg.fft.rfftfreq(7, 0.3, dtype=F64).numpy(),
                               np.fft.rfftfreq(7, 0.3))


@pytest.mark.parametrize("fn", [tg.fft.fftshift, tg.fft.ifftshift])
def test_shift_of_0d_tensor_with_dim(fn):
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dim"):
        fn(t64(3.0), 0)
    with pytest.raises(IndexError, match="Dimension specified as -1"):
        fn(t64(3.0), (-1,))


def test_ihfftn_checks_shape_arguments_before_dtype():
    z = tg.tensor(np.ones((3, 4), dtype=np.complex128))
    with pytest.raises(RuntimeError, match="same length"):
        tg.fft.ihfftn(z, s=(3,), dim=(0, 1))
    with pytest.raises(RuntimeError, match="Only supports floating-point dtypes, but found: "
                       "ComplexDouble .ihfftn expects a real input tensor"):
        tg.fft.ihfft2(z)
    with pytest.raises(RuntimeError, match="rfftn expects a real-valued input tensor"):
        tg.fft.rfftn(z)
    with pytest.raises(TypeError, match=r"fft_rfft\(\): argument 'dim' must be int, not tuple"):
        tg.fft.rfft(z, dim=(0,))
    with pytest.raises(TypeError, match=r"fft_ihfft\(\): argument 'n' .*must be int, not float"):
        tg.fft.ihfft(z, n=4.0)


# -- windows ------------------------------------------------------------------------------------

def test_kaiser_large_beta_is_finite():
    beta, m = 800.0, 9
    w = tg.signal.windows.kaiser(m, beta=beta, dtype=F64).numpy()
    n = np.arange(m)
    a = beta * np.sqrt(1 - (2 * n / (m - 1) - 1) ** 2)

    def log_i0(x):  # the asymptotic series, exact to 1e-10 relative for x >= 100
        return x - 0.5 * np.log(2 * np.pi * x) + np.log1p(1 / (8 * x) + 9 / (128 * x * x)
                                                            + 225 / (3072 * x ** 3))
    big = a > 100
    np.testing.assert_allclose(w[big], np.exp(log_i0(a[big]) - log_i0(beta)), rtol=1e-9)
    assert np.isfinite(w).all() and w[m // 2] == 1.0


def test_kaiser_moderate_beta_matches_numpy():
    w = tg.signal.windows.kaiser(7, beta=5.0, sym=False, dtype=F64).numpy()
    np.testing.assert_allclose(w, np.kaiser(8, 5.0)[:7], rtol=1e-13)


def test_window_length_must_be_int():
    with pytest.raises(TypeError, match="argument 'M' must be int, not float"):
        tg.signal.windows.hann(6.0)


# -- against torch ------------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    x = np.array(NEG)
    for n in (1, 2, 3):
        np.testing.assert_allclose(tg.special.polygamma(n, t64(x)).numpy(),
                                   torch.special.polygamma(n, torch.tensor(x)).numpy(),
                                   rtol=1e-8)
    p = np.array([1e-20, 1e-8, 0.3, 0.99, 1 - 1e-12])
    np.testing.assert_allclose(tg.special.ndtri(t64(p)).numpy(),
                               torch.special.ndtri(torch.tensor(p)).numpy(), rtol=1e-9)
    for name in ("ndtr", "ndtri", "entr", "i1", "i0e", "i1e", "erfcx"):
        v = np.array([0.0, 0.2, 0.7, 3.0, -1.0, math.inf])
        a = torch.tensor(v, requires_grad=True)
        getattr(torch.special, name)(a).sum().backward()
        g = grad_of(getattr(tg.special, name), v)
        np.testing.assert_allclose(g, a.grad.numpy(), rtol=1e-9, equal_nan=True)
    a, b = (torch.tensor([0.0, 0.0, 2.0], requires_grad=True),
            torch.tensor([1.0, 3.0, 0.5], requires_grad=True))
    torch.special.xlog1py(a, b).sum().backward()
    ta, tb = t64([0.0, 0.0, 2.0], True), t64([1.0, 3.0, 0.5], True)
    tg.special.xlog1py(ta, tb).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), a.grad.numpy())
    np.testing.assert_allclose(tb.grad.numpy(), b.grad.numpy())
    for n in (0, 1, 5, 6):
        np.testing.assert_array_equal(tg.fft.rfftfreq(n).numpy(), torch.fft.rfftfreq(n).numpy())
    np.testing.assert_allclose(tg.signal.windows.kaiser(9, beta=30.0, dtype=F64).numpy(),
                               torch.signal.windows.kaiser(9, beta=30.0,
                                                           dtype=torch.float64).numpy())
