"""Ops that were compositions of Tensor ops, now one node each, named as PyTorch's and saving
what PyTorch's saves: smooth_l1_loss and huber_loss (nn/functional.py), glu
(autograd/ops/activations.py), erf, erfc, erfinv, lgamma, digamma, polygamma, i0
(autograd/ops/special.py, Note [Composite forwards, one node]), logit, sinc, hypot
(special.py), logaddexp, xlogy, hardshrink and prelu (composite.py). Each is checked for values and gradients against
float64 NumPy references, gradcheck with forward AD, gradgradcheck, its node (name, one
node), an upper bound on the bytes its saved tensors hold (from the op's definition), both
backends, half precision, special values and PyTorch's errors; and nll_loss refuses a weight
that requires grad. Comparisons with PyTorch under importorskip."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host, saved_bytes
from tritongrad.nn import functional as F

_rng = np.random.default_rng(30)


def _one_node(out, name):
    assert out.grad_fn.name() == name
    assert {type(n).__name__ for n, _ in out.grad_fn.next_functions if n is not None} <= \
        {"AccumulateGrad"}


# -- smooth L1 and Huber ---------------------------------------------------------------------

def _smooth_l1(d, beta):  # float64 references, with their derivatives in d
    a = np.abs(d)
    return np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta), \
        np.where(a < beta, d / beta, np.sign(d))


def _huber(d, delta):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)), \
        np.where(a < delta, d, delta * np.sign(d))


LOSSES = {"smooth_l1_loss": (lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.7),
                             lambda d: _smooth_l1(d, 0.7), "SmoothL1LossBackward0"),
          "huber_loss": (lambda x, t, r: F.huber_loss(x, t, reduction=r, delta=0.7),
                         lambda d: _huber(d, 0.7), "HuberLossBackward0")}


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_losses_values_gradients_node(device, name, reduction):
    fn, ref, node = LOSSES[name]
    xs, ts = _rng.normal(size=(6, 7)) * 1.5, _rng.normal(size=(6, 7))
    x = tg.tensor(xs, device=device, requires_grad=True)
    t = tg.tensor(ts, device=device, requires_grad=True)
    nbytes, count, y = saved_bytes(fn, x, t, reduction)
    _one_node(y, node)
    assert count == 2 and nbytes <= 2 * xs.size * 8  # input and target, as PyTorch's
    g = np.ones(()) if reduction != "none" else _rng.normal(size=xs.shape)
    y.backward(tg.tensor(g, device=device))
    value, deriv = ref(xs - ts)
    scale = g / (xs.size if reduction == "mean" else 1)
    want = {"none": value, "sum": value.sum(), "mean": value.mean()}[reduction]
    np.testing.assert_allclose(host(y), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(x.grad), scale * deriv, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(t.grad), -scale * deriv, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_losses_gradcheck_forward_ad_gradgradcheck(name, reduction):
    fn = LOSSES[name][0]
    # |x - t| kept off the kinks at +-0.7, where finite differences straddle two pieces
    d = np.array([[-2.0, -0.9, -0.4, 0.1], [0.3, 0.5, 1.1, 2.5], [-1.5, 0.05, -0.2, 0.95]])
    t = tg.tensor(_rng.normal(size=(3, 4)), requires_grad=True)
    x = (t.detach() + tg.tensor(d)).requires_grad_()
    assert tg.autograd.gradcheck(lambda a, b: fn(a, b, reduction), (x, t), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(lambda a, b: fn(a, b, reduction), (x, t))


@pytest.mark.parametrize("name", LOSSES)
def test_losses_broadcast_special_values_and_errors(name):
    fn, ref, _ = LOSSES[name]
    xs, ts = _rng.normal(size=(5, 4)), _rng.normal(size=(4,))
    x, t = tg.tensor(xs, requires_grad=True), tg.tensor(ts, requires_grad=True)
    with pytest.warns(UserWarning, match="different to the input size"):
        fn(x, t, "sum").backward()
    _, deriv = ref(xs - ts)
    np.testing.assert_allclose(host(t.grad), -deriv.sum(0), rtol=1e-12)  # summed back
    x = tg.tensor([math.nan, math.inf, -math.inf, 0.0], requires_grad=True)
    y = fn(x, tg.zeros(4, dtype=tg.float64), "none")
    y.sum().backward()
    assert math.isnan(host(y)[0]) and host(y)[1] == math.inf and host(y)[2] == math.inf
    assert math.isnan(host(x.grad)[0]) and host(x.grad)[3] == 0.0
    np.testing.assert_allclose(host(x.grad)[1:3], [1.0, -1.0] if name == "smooth_l1_loss"
                               else [0.7, -0.7])
    with pytest.raises(RuntimeError, match="does not support n"):
        if name == "smooth_l1_loss":
            F.smooth_l1_loss(x, x, beta=-1.0)
        else:
            F.huber_loss(x, x, delta=0.0)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="size of tensor a"):
        fn(tg.zeros(3), tg.zeros(4), "mean")


def test_losses_half_precision_and_beta_zero():
    x = tg.tensor(_rng.normal(size=64), dtype=tg.float16, requires_grad=True)
    t = tg.tensor(_rng.normal(size=64), dtype=tg.float16)
    y = F.smooth_l1_loss(x, t)
    y.backward()
    assert y.dtype is tg.float16 and x.grad.dtype is tg.float16
    value, deriv = _smooth_l1(host(x).astype(np.float64) - host(t).astype(np.float64), 1.0)
    np.testing.assert_allclose(host(y).astype(np.float64), value.mean(), rtol=2e-3)
    np.testing.assert_allclose(host(x.grad).astype(np.float64), deriv / 64, rtol=2e-3,
                               atol=1e-6)
    # beta = 0 is the L1 loss (PyTorch's too)
    a = tg.tensor([1.0, -2.0], requires_grad=True)
    assert F.smooth_l1_loss(a, tg.zeros(2), beta=0.0).item() == 1.5


def test_huber_weight():
    xs, ts, ws = (_rng.normal(size=(4, 3)) for _ in range(3))
    x = tg.tensor(xs, requires_grad=True)
    y = F.huber_loss(x, tg.tensor(ts), delta=0.7, weight=tg.tensor(ws))
    y.backward()
    value, deriv = _huber(xs - ts, 0.7)
    np.testing.assert_allclose(host(y), (value * ws).mean(), rtol=1e-12)
    np.testing.assert_allclose(host(x.grad), deriv * ws / xs.size, rtol=1e-12)


# -- GLU -------------------------------------------------------------------------------------

def _sig(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu_values_gradients_node(device, dim):
    xs = _rng.normal(size=(4, 6, 8))
    x = tg.tensor(xs, device=device, requires_grad=True)
    nbytes, count, y = saved_bytes(F.glu, x, dim)
    _one_node(y, "GluBackward0")
    assert count == 1 and nbytes <= xs.size * 8  # the input alone, as PyTorch's
    a, b = np.split(xs, 2, axis=dim)
    np.testing.assert_allclose(host(y), a * _sig(b), rtol=1e-12)
    g = _rng.normal(size=a.shape)
    y.backward(tg.tensor(g, device=device))
    s = _sig(b)
    want = np.concatenate([g * s, g * a * s * (1 - s)], axis=dim)
    np.testing.assert_allclose(host(x.grad), want, rtol=1e-12, atol=1e-15)


def test_glu_gradcheck_forward_ad_gradgradcheck_and_errors():
    x = tg.tensor(_rng.normal(size=(3, 4, 2)), requires_grad=True)
    for dim in (1, 2):
        assert tg.autograd.gradcheck(lambda a: F.glu(a, dim), (x,), check_forward_ad=True)
        assert tg.autograd.gradgradcheck(lambda a: F.glu(a, dim), (x,))
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is "
                                           "size 5"):
        F.glu(tg.zeros(2, 5))
    with pytest.raises(RuntimeError, match="does not support scalars"):
        F.glu(tg.tensor(1.0))
    with pytest.raises(NotImplementedError, match='"glu_cpu" not implemented for \'Long\''):
        F.glu(tg.zeros(2, 4, dtype=tg.int64))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_glu_half_computed_in_float32(dt):
    x = tg.linspace(-4, 4, 48, dtype=tg.float32).reshape(6, 8).to(getattr(tg, dt))
    y = F.glu(x)
    assert y.dtype is x.dtype
    np.testing.assert_array_equal(host(y.float()), host(F.glu(x.float()).to(x.dtype).float()))


# -- special functions ------------------------------------------------------------------------

def _digamma_ref(x):  # central differences of math.lgamma: about 1e-9 absolute
    h = 1e-5
    return np.array([(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x])


def _erfinv_ref(y):  # Newton on math.erf from the bisection's start
    out = []
    for v in y:
        x = 0.0
        for _ in range(60):
            x -= (math.erf(x) - v) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        out.append(x)
    return np.array(out)


def _i1(x):  # I_1 by its series (|x| <= 4 here)
    return np.array([sum((v / 2) ** (2 * k + 1) / (math.factorial(k) * math.factorial(k + 1))
                         for k in range(40)) for v in x])


SPECIAL = {  # name: (call, points, value reference, derivative reference, node, tolerance)
    "erf": (tg.erf, np.linspace(-3, 3, 11), np.vectorize(math.erf),
            lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), "ErfBackward0", 1e-14),
    "erfc": (tg.erfc, np.linspace(-3, 5, 11), np.vectorize(math.erfc),
             lambda x: -2 / math.sqrt(math.pi) * np.exp(-x * x), "ErfcBackward0", 1e-14),
    "erfinv": (tg.erfinv, np.linspace(-0.95, 0.95, 11), _erfinv_ref,
               lambda y: math.sqrt(math.pi) / 2 * np.exp(_erfinv_ref(y) ** 2),
               "ErfinvBackward0", 1e-12),
    "lgamma": (tg.lgamma, np.linspace(-2.65, 6.35, 11), np.vectorize(math.lgamma),
               _digamma_ref, "LgammaBackward0", 1e-6),
    "digamma": (tg.digamma, np.linspace(0.3, 6.3, 11), _digamma_ref, None,
                "DigammaBackward0", 1e-6),
    "i0": (tg.i0, np.linspace(-4, 4, 11), np.i0, _i1, "I0Backward0", 1e-12),
    "polygamma2": (lambda x: tg.polygamma(2, x), np.linspace(0.4, 6.4, 11), None, None,
                   "PolygammaBackward0", None),
}


@pytest.mark.parametrize("name", SPECIAL)
def test_special_values_gradients_node(device, name):
    fn, xs, value, deriv, node, tol = SPECIAL[name]
    x = tg.tensor(xs, device=device, requires_grad=True)
    nbytes, count, y = saved_bytes(fn, x)
    _one_node(y, node)
    # x alone (erfinv: its output): PyTorch's node saves x, 20 to 170 times less than the
    # composites' intermediates did
    assert count == 1 and nbytes <= xs.size * 8
    y.sum().backward()
    if value is not None:
        np.testing.assert_allclose(host(y), value(xs), rtol=tol, atol=tol)
    if deriv is not None:
        np.testing.assert_allclose(host(x.grad), deriv(xs), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", SPECIAL)
def test_special_gradcheck_forward_ad_gradgradcheck(name):
    fn, xs = SPECIAL[name][:2]
    x = tg.tensor(xs[1:-1:2], requires_grad=True)
    assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("name", SPECIAL)
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_special_dtypes_and_vmap(name, dt):
    fn, xs = SPECIAL[name][:2]
    x = tg.tensor(xs, dtype=getattr(tg, dt), requires_grad=True)
    y = fn(x)
    y.sum().backward()
    assert y.dtype is x.dtype and x.grad.dtype is x.dtype
    ref = fn(tg.tensor(xs)).to(x.dtype)  # (the expansions run in float64 inside)
    np.testing.assert_allclose(host(y.float()), host(ref.float()), rtol=1e-2, atol=1e-2)
    v = tg.func.vmap(fn)(x.detach().reshape(-1, 1))
    np.testing.assert_array_equal(host(v.float()).ravel(), host(y.float()))


def test_special_values_at_poles_and_edges():
    y = tg.erfinv(tg.tensor([-1.0, 1.0, 2.0]))
    assert host(y)[0] == -math.inf and host(y)[1] == math.inf and math.isnan(host(y)[2])
    assert host(tg.lgamma(tg.tensor([0.0, -2.0])))[0] == math.inf
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    tg.digamma(x).sum().backward()
    assert host(x.grad)[0] == math.inf  # polygamma(1, 0)
    with pytest.raises(RuntimeError, match="negative n"):
        tg.polygamma(-1, x)


# -- logit, sinc, logaddexp -------------------------------------------------------------------

POINTWISE = {  # name: (call, points, value reference, derivative reference, node)
    "logit": (tg.logit, np.array([0.02, 0.2, 0.5, 0.7, 0.98]), lambda x: np.log(x / (1 - x)),
              lambda x: 1 / (x * (1 - x)), "LogitBackward0"),
    "logit_eps": (lambda x: tg.logit(x, 0.1), np.array([0.02, 0.2, 0.5, 0.7, 0.98]),
                  lambda x: np.log(np.clip(x, 0.1, 0.9) / (1 - np.clip(x, 0.1, 0.9))),
                  lambda x: np.where((x < 0.1) | (x > 0.9), 0.0, 1 / (x * (1 - x))),
                  "LogitBackward0"),
    "sinc": (tg.sinc, np.array([-2.3, -0.4, 0.0, 0.6, 1.0, 3.7]),
             np.sinc, lambda x: np.where(x == 0, 0.0, (np.pi * x * np.cos(np.pi * x)
                                                       - np.sin(np.pi * x))
                                         / (np.pi * np.where(x == 0, 1, x) ** 2)),
             "SincBackward0"),
}


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise_values_gradients_node(device, name):
    fn, xs, value, deriv, node = POINTWISE[name]
    x = tg.tensor(xs, device=device, requires_grad=True)
    nbytes, count, y = saved_bytes(fn, x)
    _one_node(y, node)
    assert count == 1 and nbytes <= xs.size * 8
    y.sum().backward()
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(host(y), value(xs), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(host(x.grad), deriv(xs), rtol=1e-12, atol=1e-14)
    pts = tg.tensor(xs[1:-1] + 0.013, requires_grad=True)  # (off the clamp's corners)
    assert tg.autograd.gradcheck(fn, (pts,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (pts,))


def test_logit_outside_the_unit_interval_and_half():
    x = tg.tensor([-0.5, 1.5, math.nan, 0.05, 0.95], requires_grad=True)
    with np.errstate(all="ignore"):
        tg.logit(x).sum().backward()
    g = host(x.grad)
    assert np.isnan(g[:3]).all() and np.isfinite(g[3:]).all()  # PyTorch's: NaN outside [0, 1]
    x.grad = None
    tg.logit(x, 0.1).sum().backward()
    np.testing.assert_array_equal(host(x.grad)[[0, 1, 3, 4]], 0.0)  # clamped: no gradient
    h = tg.tensor([0.1, 0.4, 0.8], dtype=tg.bfloat16)
    assert tg.logit(h).dtype is tg.bfloat16
    np.testing.assert_array_equal(host(tg.logit(h).float()),
                                  host(tg.logit(h.float()).to(tg.bfloat16).float()))


# (inf - inf in NumPy's subtract warns, tg.sub's too: kernels/numpy/elementwise.py)
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_logaddexp_node_values_gradients(device):
    a = np.array([[0.0, 1000.0, 3.0, -2.0], [-math.inf, math.inf, 0.5, -40.0]])
    b = np.array([0.0, 1000.0, -1.0, 5.0])
    x = tg.tensor(a, device=device, requires_grad=True)
    y_ = tg.tensor(b, device=device, requires_grad=True)
    nbytes, count, out = saved_bytes(tg.logaddexp, x, y_)
    _one_node(out, "LogaddexpBackward0")
    assert count == 2 and nbytes <= (a.size + b.size) * 8
    with np.errstate(all="ignore"):
        want = np.logaddexp(a, b)
        out.sum().backward()
        ga = 1 / (1 + np.exp(b - a))
    np.testing.assert_allclose(host(out), want, rtol=1e-14)
    np.testing.assert_allclose(host(x.grad), ga, rtol=1e-14)
    np.testing.assert_allclose(host(y_.grad), (1 - ga).sum(0), rtol=1e-14)  # summed back
    p, q = (tg.tensor(_rng.normal(size=s), requires_grad=True) for s in ((3, 4), (4,)))
    assert tg.autograd.gradcheck(tg.logaddexp, (p, q), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(tg.logaddexp, (p, q))
    assert tg.logaddexp(tg.tensor([math.inf]), tg.tensor([math.inf])).item() == math.inf


def test_hypot_node_values_gradients(device):
    a = np.array([[3.0, 0.0, 1e200, -2.0], [1.0, -4.0, 2.0, 0.5]])
    b = np.array([4.0, 0.0, 1e200, 3.0])
    x = tg.tensor(a, device=device, requires_grad=True)
    y_ = tg.tensor(b, device=device, requires_grad=True)
    nbytes, count, out = saved_bytes(tg.hypot, x, y_)
    _one_node(out, "HypotBackward0")
    assert count == 3 and nbytes <= (2 * a.size + b.size) * 8  # a, b and the result
    out.sum().backward()
    r = np.hypot(a, b)
    np.testing.assert_allclose(host(out), r, rtol=1e-15)
    with np.errstate(invalid="ignore"):
        ga, gb = np.where(r == 0, 0.0, a / r), np.where(r == 0, 0.0, b / r)
    np.testing.assert_allclose(host(x.grad), ga, rtol=1e-14)
    np.testing.assert_allclose(host(y_.grad), gb.sum(0), rtol=1e-14)  # summed back
    assert host(tg.hypot(tg.tensor([math.inf]), tg.tensor([math.nan])))[0] == math.inf
    p, q = (tg.tensor(_rng.normal(size=s), requires_grad=True) for s in ((3, 4), (4,)))
    assert tg.autograd.gradcheck(tg.hypot, (p, q), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(tg.hypot, (p, q))
    h = tg.tensor([3.0, 5.0], dtype=tg.float16)
    assert tg.hypot(h, h).dtype is tg.float16


# (x / 0 = inf for y's gradient: Triton's interpreter warns on the emulated device)
@pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")
def test_xlogy_node_values_gradients(device):
    a = np.array([[0.0, 0.0, 0.0, 2.0], [-1.5, 0.3, 0.0, 1.0]])
    b = np.array([0.0, -1.0, 2.0, 0.5])
    x = tg.tensor(a, device=device, requires_grad=True)
    y_ = tg.tensor(b, device=device, requires_grad=True)
    nbytes, count, out = saved_bytes(tg.xlogy, x, y_)
    _one_node(out, "XlogyBackward0")
    assert count == 2 and nbytes <= (a.size + b.size) * 8
    out.sum().backward()
    bb = np.broadcast_to(b, a.shape)
    singular = (a == 0) & (bb <= 0)
    with np.errstate(all="ignore"):
        logy = np.log(np.where(singular, 1.0, bb))
        gy = np.where(a == 0, 0.0, a / np.where(a == 0, 1.0, bb))
    np.testing.assert_allclose(host(out), a * logy, rtol=1e-15)
    np.testing.assert_allclose(host(x.grad), logy, rtol=1e-15)  # 0 where x = 0, y <= 0
    np.testing.assert_allclose(host(y_.grad), gy.sum(0), rtol=1e-15)  # summed back
    p = tg.tensor(_rng.uniform(-1, 1, (3, 4)), requires_grad=True)
    q = tg.tensor(_rng.uniform(0.2, 2, 4), requires_grad=True)
    assert tg.autograd.gradcheck(tg.xlogy, (p, q), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(tg.xlogy, (p, q))
    assert math.isnan(tg.xlogy(tg.tensor([0.0]), tg.tensor([math.nan])).item())
    np.testing.assert_allclose(host(tg.xlogy(2, tg.tensor([3.0]))), [2 * math.log(3)], rtol=1e-6)


def test_hardshrink_node_values_gradients(device):
    xs = np.array([-2.0, -0.5, -0.3, 0.0, 0.5, 0.7, math.nan, math.inf, -math.inf])
    x = tg.tensor(xs, device=device, requires_grad=True)
    nbytes, count, y = saved_bytes(F.hardshrink, x, 0.5)
    _one_node(y, "HardshrinkBackward0")
    assert count == 1 and nbytes <= xs.size * 8
    y.sum().backward()
    inside = (xs >= -0.5) & (xs <= 0.5)
    np.testing.assert_array_equal(host(y), np.where(inside, 0.0, xs))  # NaN stays NaN
    # PyTorch's gradient: g where x < -lambd or x > lambd, so 0 for a NaN
    np.testing.assert_array_equal(host(x.grad), ((xs < -0.5) | (xs > 0.5)).astype(float))
    z = tg.tensor([-2.0, -0.2, 0.3, 0.9, 1.5], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(F.hardshrink, (z,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(F.hardshrink, (z,))
    assert tg.ones(2).hardshrink(2.0).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("shape, channels", [((4, 3, 5), 3), ((4, 3), 1), ((6,), 1)])
def test_prelu_node_values_gradients(device, shape, channels):
    xs, ws = _rng.normal(size=shape), _rng.uniform(0.1, 0.9, channels)
    xs.flat[0] = math.nan
    x = tg.tensor(xs, device=device, requires_grad=True)
    w = tg.tensor(ws, device=device, requires_grad=True)
    nbytes, count, y = saved_bytes(F.prelu, x, w)
    assert y.grad_fn.name() == "PreluKernelBackward0"
    assert count == 2 and nbytes <= (xs.size + ws.size) * 8  # x and the weight, as PyTorch's
    g = _rng.normal(size=shape)
    y.backward(tg.tensor(g, device=device))
    wb = ws.reshape((1, channels) + (1,) * (len(shape) - 2)) if channels > 1 else ws
    pos = xs > 0
    np.testing.assert_allclose(host(y), np.where(pos, xs, wb * xs), rtol=1e-15)
    np.testing.assert_allclose(host(x.grad), np.where(pos, g, wb * g), rtol=1e-15)
    gw = np.where(pos, 0.0, g * xs)  # (a NaN x: NaN in its channel's gradient, PyTorch's)
    want = gw.sum(axis=tuple(i for i in range(len(shape)) if i != 1)) if channels > 1 \
        else np.array([gw.sum()])
    np.testing.assert_allclose(host(w.grad), want, rtol=1e-13)
    p = tg.tensor(_rng.normal(size=(4, 3, 5)) + 0.05, requires_grad=True)
    q = tg.tensor(ws if channels == 3 else _rng.uniform(0.1, 0.9, 3), requires_grad=True)
    assert tg.autograd.gradcheck(F.prelu, (p, q), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(F.prelu, (p, q))


# -- nll_loss's weight -----------------------------------------------------------------------

def test_nll_loss_refuses_a_weight_requiring_grad():
    x = tg.tensor(_rng.normal(size=(4, 3)), requires_grad=True)
    t = tg.tensor([0, 1, 2, 1])
    w = tg.tensor([0.2, 0.5, 1.0], dtype=tg.float64, requires_grad=True)
    msg = "The function 'nll_loss_forward' is not differentiable with respect to argument " \
          "'weight'"
    for call in (lambda: F.nll_loss(x, t, weight=w), lambda: F.cross_entropy(x, t, weight=w),
                 lambda: F.cross_entropy(x, t, weight=w, label_smoothing=0.1)):
        with pytest.raises(RuntimeError, match=msg):
            call()
    with tg.no_grad():  # nothing recorded: computes
        y = F.nll_loss(x, t, weight=w)
    xs, ws = host(x), host(w)
    rows = ws[[0, 1, 2, 1]]
    np.testing.assert_allclose(host(y), -(xs[range(4), [0, 1, 2, 1]] * rows).sum() / rows.sum(),
                               rtol=1e-12)


# -- against PyTorch ---------------------------------------------------------------------------

def test_against_torch_nodes_values_and_saved_bytes():
    torch = pytest.importorskip("torch")

    def saved(m, fn, *args):
        sizes = {}
        def pack(t):
            sizes[id(t)] = t.numel() * t.element_size()
            return t
        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = fn(*args)
        return sum(sizes.values()), out

    xs, ts = _rng.normal(size=(64, 32)), _rng.normal(size=(64, 32))
    cases = [("smooth_l1_loss", lambda m, x, t: m.nn.functional.smooth_l1_loss(x, t, beta=0.5)),
             ("huber_loss", lambda m, x, t: m.nn.functional.huber_loss(x, t, delta=0.5)),
             ("glu", lambda m, x, t: m.nn.functional.glu(x, 0)),
             ("erf", lambda m, x, t: m.erf(x)), ("erfc", lambda m, x, t: m.erfc(x)),
             ("erfinv", lambda m, x, t: m.erfinv(m.tanh(x.detach()).requires_grad_())),
             ("lgamma", lambda m, x, t: m.lgamma(x)),
             ("digamma", lambda m, x, t: m.digamma(x.detach().abs().requires_grad_())),
             ("polygamma", lambda m, x, t: m.polygamma(1, x.detach().abs().requires_grad_())),
             ("i0", lambda m, x, t: m.i0(x)),
             ("logit", lambda m, x, t: m.logit(m.sigmoid(x.detach()).requires_grad_(), 1e-3)),
             ("sinc", lambda m, x, t: m.sinc(x)), ("logaddexp", lambda m, x, t: m.logaddexp(x, t)),
             ("hypot", lambda m, x, t: m.hypot(x, t)),
             ("xlogy", lambda m, x, t: m.xlogy(x, t.detach().abs().requires_grad_())),
             ("hardshrink", lambda m, x, t: m.nn.functional.hardshrink(x, 0.3)),
             ("prelu", lambda m, x, t: m.nn.functional.prelu(
                 x, (t[0, :1].detach() * 0.1).requires_grad_()))]
    for name, fn in cases:
        ours = (tg.tensor(xs, requires_grad=True), tg.tensor(ts, requires_grad=True))
        theirs = (torch.tensor(xs, requires_grad=True), torch.tensor(ts, requires_grad=True))
        b_ours, y_ours = saved(tg, fn, tg, *ours)
        b_theirs, y_theirs = saved(torch, fn, torch, *theirs)
        assert y_ours.grad_fn.name() == y_theirs.grad_fn.name(), name
        assert b_ours <= b_theirs, name
        np.testing.assert_allclose(host(y_ours), y_theirs.detach().numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)
        y_ours.sum().backward()
        y_theirs.sum().backward()
        for a, b in zip(ours, theirs):
            if b.grad is not None:
                np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-8, atol=1e-10,
                                           err_msg=name)
