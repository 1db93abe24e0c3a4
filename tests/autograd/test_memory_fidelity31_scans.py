"""cumprod, logcumsumexp (autograd/ops/scans.py, Note [Scans as one node]), cdist
(autograd/ops/products.py) and pdist (nn/_shuffle_distance.py): one node each, named as
PyTorch's and saving what PyTorch's saves (the input and the result; cdist's two inputs and
the result). Each is checked for values and
gradients against float64 NumPy references, gradcheck with forward AD, gradgradcheck, its
node, an upper bound on the bytes its saved tensors hold (from what the op must keep), both
backends, half precision, the special inputs (zeros for cumprod, -inf for logcumsumexp, equal
points for cdist) and PyTorch's errors. Comparisons with PyTorch under importorskip."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host, saved_bytes
from tritongrad.autograd import gradcheck, gradgradcheck

_rng = np.random.default_rng(31)
_INF = math.inf


def _one_node(out, name):
    assert out.grad_fn.name() == name
    assert {type(n).__name__ for n, _ in out.grad_fn.next_functions if n is not None} <= \
        {"AccumulateGrad"}


def _t(a, device, grad=True, dtype=tg.float64):
    return tg.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=grad)


# -- cumprod ----------------------------------------------------------------------------------

def _cumprod_grad(x, g):
    """sum_(j >= k) g_j prod_(i <= j, i != k) x_i along the last dim, by brute force."""
    n = x.shape[-1]
    out = np.zeros(np.broadcast_shapes(x.shape, g.shape), dtype=np.result_type(x, g))
    for k in range(n):
        for j in range(k, n):
            others = np.delete(x[..., :j + 1], k, axis=-1)
            out[..., k] += g[..., j] * np.prod(others, axis=-1)
    return out


CUMPROD_ROWS = [[2., 0., 3., -1., 0.5, 0., 1.5],   # two zeros
                [0., 1.5, -2., 0.5, 2., 1., 3.],    # a zero first
                [1.5, -0.5, 2., 0.7, 1.1, 3., 0.],  # a zero last
                [1.2, -0.8, 2., 0.7, -1.1, 3., 0.9],  # none
                [0., 0., 0., 2., 0., 1., 0.]]       # mostly zeros


def test_cumprod_values_gradient_node_and_bytes(device):
    xs = np.array(CUMPROD_ROWS)
    x = _t(xs, device)
    nbytes, count, y = saved_bytes(lambda t: tg.cumprod(t, 1), x)
    _one_node(y, "CumprodBackward0")
    assert count == 2 and nbytes <= 2 * xs.size * 8  # the input and the result
    np.testing.assert_allclose(host(y), np.cumprod(xs, 1), rtol=1e-14)
    g = _rng.normal(size=xs.shape)
    y.backward(tg.tensor(g, device=device))
    np.testing.assert_allclose(host(x.grad), _cumprod_grad(xs, g), rtol=1e-12, atol=1e-13)
    # along dim 0 too
    x0 = _t(xs.T, device)
    tg.cumprod(x0, 0).backward(tg.tensor(g.T, device=device))
    np.testing.assert_allclose(host(x0.grad), _cumprod_grad(xs, g).T, rtol=1e-12, atol=1e-13)


def test_cumprod_gradcheck_forward_ad_and_gradgradcheck_with_zeros():
    x = _t(np.array(CUMPROD_ROWS)[:, :5], "cpu")
    f = lambda t: tg.cumprod(t, 1)  # noqa: E731
    assert gradcheck(f, (x,), check_forward_ad=True)
    assert gradgradcheck(f, (x,))


def test_cumprod_dtype_argument_saves_the_input_not_a_copy():
    xs = _rng.normal(size=(3, 6))
    x = _t(xs, "cpu", dtype=tg.float32)
    nbytes, count, y = saved_bytes(lambda t: tg.cumprod(t, 1, dtype=tg.float64), x)
    _one_node(y, "CumprodBackward0")
    assert y.dtype is tg.float64 and count == 2
    assert nbytes <= xs.size * (4 + 8)  # the float32 input and the float64 result
    np.testing.assert_allclose(host(y), np.cumprod(host(x).astype(np.float64), 1), rtol=1e-14)
    g = _rng.normal(size=xs.shape)
    y.backward(tg.tensor(g))
    assert x.grad.dtype is tg.float32
    np.testing.assert_allclose(host(x.grad), _cumprod_grad(host(x).astype(np.float64), g),
                               rtol=1e-5)


def test_cumprod_0d_empty_and_length_one(device):
    s = _t(3.0, device)
    y = tg.cumprod(s, 0)
    assert y.shape == () and y.item() == 3.0 and y.grad_fn.name() == "CumprodBackward0"
    y.backward()
    assert s.grad.item() == 1.0
    e = _t(np.zeros((0, 3)), device)
    ye = tg.cumprod(e, 1)
    assert ye.shape == (0, 3)
    ye.sum().backward()
    assert e.grad.shape == (0, 3)
    one = _t([[2.5], [0.0]], device)
    tg.cumprod(one, 1).backward(tg.tensor([[3.0], [4.0]], dtype=tg.float64, device=device))
    assert host(one.grad).tolist() == [[3.0], [4.0]]
    with pytest.raises(IndexError, match="dimension out of range"):
        tg.cumprod(s, 1)


def test_cumprod_complex_gradient_is_the_conjugate_rule():
    zs = _rng.normal(size=(2, 5)) + 1j * _rng.normal(size=(2, 5))
    zs[0, 2] = 0
    z = tg.tensor(zs, dtype=tg.complex128, requires_grad=True)
    y = tg.cumprod(z, 1)
    assert y.grad_fn.name() == "CumprodBackward0"
    np.testing.assert_allclose(host(y), np.cumprod(zs, 1), rtol=1e-13)
    g = _rng.normal(size=zs.shape) + 1j * _rng.normal(size=zs.shape)
    y.backward(tg.tensor(g, dtype=tg.complex128))
    # PyTorch's convention: the gradient is J^H g for a holomorphic op
    want = np.conj(_cumprod_grad(zs, np.conj(g)))
    np.testing.assert_allclose(host(z.grad), want, rtol=1e-12, atol=1e-13)
    w = tg.tensor(zs[:, :4], dtype=tg.complex128, requires_grad=True)
    assert gradcheck(lambda t: tg.cumprod(t, 1), (w,), check_forward_ad=True)
    assert gradgradcheck(lambda t: tg.cumprod(t, 1), (w,))


def test_cumprod_half_precision_and_integers(device):
    xs = _rng.uniform(0.5, 1.5, size=(3, 9))
    x = tg.tensor(xs, dtype=tg.float16, device=device, requires_grad=True)
    y = tg.cumprod(x, 1)
    assert y.dtype is tg.float16
    ref = np.cumprod(host(x).astype(np.float64), 1)
    np.testing.assert_allclose(host(y).astype(np.float64), ref, rtol=2e-3)
    y.sum().backward()
    assert x.grad.dtype is tg.float16
    want = _cumprod_grad(host(x).astype(np.float64), np.ones(xs.shape))
    np.testing.assert_allclose(host(x.grad).astype(np.float64), want, rtol=5e-3)
    i = tg.tensor([[2, 0, 3], [1, 4, 2]], dtype=tg.int32, device=device)
    assert tg.cumprod(i, 1).dtype is tg.int64
    assert host(tg.cumprod(i, 1)).tolist() == [[2, 0, 0], [1, 4, 8]]


# -- logcumsumexp --------------------------------------------------------------------------------

def _lcse(x):
    return np.logaddexp.accumulate(x, axis=-1)


def _lcse_grad(x, g):
    """sum_(j >= k) g_j exp(x_k - y_j), with y_k = x_k's own term exactly 1 when every
    earlier element is -inf (y_k = x_k there)."""
    y = _lcse(x)
    n = x.shape[-1]
    out = np.zeros(x.shape)
    for k in range(n):
        for j in range(k, n):
            fresh = j == k and (k == 0 or (y[..., k - 1] == -_INF) & (x[..., k] > -_INF))
            with np.errstate(invalid="ignore"):
                w = np.where(fresh, 1.0, np.exp(x[..., k] - y[..., j]))
            out[..., k] += g[..., j] * w
    return out


def test_logcumsumexp_values_gradient_node_and_bytes(device):
    xs = _rng.uniform(-5, 5, size=(4, 9))
    xs[1] = [-1000., 0., 1000., 999., -3., 5., 1001., 0., 2.]  # far apart: no overflow
    x = _t(xs, device)
    nbytes, count, y = saved_bytes(lambda t: tg.logcumsumexp(t, 1), x)
    _one_node(y, "LogcumsumexpBackward0")
    assert count == 2 and nbytes <= 2 * xs.size * 8
    np.testing.assert_allclose(host(y), _lcse(xs), rtol=1e-14)
    g = _rng.normal(size=xs.shape)
    y.backward(tg.tensor(g, device=device))
    np.testing.assert_allclose(host(x.grad), _lcse_grad(xs, g), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("row", [[0., -_INF, 1., -_INF, 2.], [-_INF, 1., -_INF, -_INF, 0.5],
                                 [3., -_INF, -_INF, -_INF, -_INF]])
def test_logcumsumexp_minus_inf_gives_exact_zeros_and_ones(row, device):
    xs = np.array([row])
    x = _t(xs, device)
    g = np.array([[1., 2., 3., 4., 5.]])
    tg.logcumsumexp(x, 1).backward(tg.tensor(g, device=device))
    grad = host(x.grad)
    assert np.isfinite(grad).all()
    np.testing.assert_allclose(grad, _lcse_grad(xs, g), rtol=1e-13)
    if xs[0, 0] > -_INF:  # every -inf comes after a finite element: its share is 0
        assert (grad[xs == -_INF] == 0).all()


def test_logcumsumexp_where_two_minus_infs_meet_is_nan_as_pytorch():
    x = _t([-_INF, -_INF, 0.], "cpu")
    with np.errstate(invalid="ignore"):
        tg.logcumsumexp(x, 0).backward(tg.tensor([1., 2., 3.], dtype=tg.float64))
    grad = host(x.grad)
    assert np.isnan(grad[:2]).all() and grad[2] == 3.0


def test_logcumsumexp_gradcheck_forward_ad_and_gradgradcheck():
    xs = _rng.uniform(-3, 3, size=(2, 6))
    xs[0, 2] = xs[1, 4] = -_INF  # after a finite element: a zero share, to every order
    x = _t(xs, "cpu")
    f = lambda t: tg.logcumsumexp(t, 1)  # noqa: E731
    assert gradcheck(f, (x,), check_forward_ad=True)
    assert gradgradcheck(f, (x,))


def test_logcumsumexp_0d_empty_complex_half_and_errors(device):
    s = _t(-_INF, device)
    y = tg.logcumsumexp(s, -1)
    assert y.shape == () and y.item() == -_INF
    y.backward()
    assert s.grad.item() == 1.0  # y = x
    e = _t(np.zeros((2, 0)), device)
    tg.logcumsumexp(e, 1).sum().backward()
    assert e.grad.shape == (2, 0)
    h = tg.tensor(_rng.uniform(-3, 3, size=(2, 7)), dtype=tg.float16, device=device,
                  requires_grad=True)
    yh = tg.logcumsumexp(h, 1)
    assert yh.dtype is tg.float16
    np.testing.assert_allclose(host(yh).astype(np.float64),
                               _lcse(host(h).astype(np.float64)), atol=4e-3)
    yh.sum().backward()
    np.testing.assert_allclose(host(h.grad).astype(np.float64),
                               _lcse_grad(host(h).astype(np.float64), np.ones((2, 7))),
                               rtol=5e-3, atol=2e-3)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.logcumsumexp(tg.tensor([1, 2], device=device), 0)


def test_logcumsumexp_complex_gradient():
    zs = _rng.normal(size=(2, 5)) + 1j * _rng.normal(size=(2, 5))
    z = tg.tensor(zs, dtype=tg.complex128, requires_grad=True)
    y = tg.logcumsumexp(z, 1)
    np.testing.assert_allclose(np.exp(host(y)), np.cumsum(np.exp(zs), 1), rtol=1e-12)
    g = _rng.normal(size=zs.shape) + 1j * _rng.normal(size=zs.shape)
    y.backward(tg.tensor(g, dtype=tg.complex128))
    # d y_j / d z_k = exp(z_k) / sum_(i <= j) exp(z_i) (branch-free); the gradient is J^H g
    s = np.cumsum(np.exp(zs), 1)
    want = np.zeros(zs.shape, dtype=complex)
    for k in range(5):
        for j in range(k, 5):
            want[:, k] += g[:, j] * np.conj(np.exp(zs[:, k]) / s[:, j])
    np.testing.assert_allclose(host(z.grad), want, rtol=1e-12)
    w = tg.tensor(zs[:, :4], dtype=tg.complex128, requires_grad=True)
    assert gradcheck(lambda t: tg.logcumsumexp(t, 1), (w,), check_forward_ad=True)


# -- cdist ------------------------------------------------------------------------------------

def _cdist(a, b, p):
    d = a[..., :, None, :] - b[..., None, :, :]
    return np.linalg.norm(d, ord=p, axis=-1) if d.shape[-1] else np.zeros(d.shape[:-1])


def _cdist_grads(a, b, p, g):
    """(dx1, dx2) by PyTorch's _cdist_backward terms in float64 (0 where a distance is 0),
    over the broadcast batch."""
    d = a[..., :, None, :] - b[..., None, :, :]
    y = _cdist(a, b, p)[..., None]
    ad, s = np.abs(d), np.sign(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            w = np.zeros(d.shape)
        elif p == 1:
            w = s
        elif math.isinf(p):
            w = s * (ad == y)
        else:
            w = np.where(y == 0, 0.0, s * ad ** (p - 1) / y ** (p - 1))
            if p < 1:
                w = np.where(d == 0, 0.0, w)
    gw = g[..., None] * w
    return gw.sum(-2), -gw.sum(-3)


def _summed_to(x, shape):
    """x summed down to ``shape`` (undoing broadcasting)."""
    while x.ndim > len(shape):
        x = x.sum(0)
    return x.sum(tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1),
                 keepdims=True)


PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, _INF]


@pytest.mark.parametrize("p", PS)
def test_cdist_values_gradients_node_and_bytes(p, device):
    a_np, b_np = _rng.normal(size=(2, 1, 4, 3)), _rng.normal(size=(3, 5, 3))
    a_np[0, 0, 1] = b_np[1, 2]  # a point of x2 in x1: distance 0, gradient 0
    a_np[1, 0, 0, 0] = b_np[0, 0, 0]  # one equal coordinate
    a, b = _t(a_np, device), _t(b_np, device)
    nbytes, count, y = saved_bytes(lambda u, v: tg.cdist(u, v, p), a, b)
    _one_node(y, "CdistBackward0")
    assert y.shape == (2, 3, 4, 5)
    assert count == 3 and nbytes <= (a_np.size + b_np.size + y.numel()) * 8
    np.testing.assert_allclose(host(y), _cdist(a_np, b_np, p), rtol=1e-13, atol=1e-15)
    g = _rng.normal(size=tuple(y.shape))
    y.backward(tg.tensor(g, device=device))
    ga, gb = _cdist_grads(a_np, b_np, p, g)
    np.testing.assert_allclose(host(a.grad), _summed_to(ga, a_np.shape), rtol=1e-12,
                               atol=1e-13)
    np.testing.assert_allclose(host(b.grad), _summed_to(gb, b_np.shape), rtol=1e-12,
                               atol=1e-13)


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0, _INF])
def test_cdist_gradcheck_forward_ad_and_gradgradcheck(p):
    a_np, b_np = _rng.normal(size=(3, 4)), _rng.normal(size=(2, 4))
    a_np[0, 1] = b_np[1, 1]  # an equal coordinate (smooth there for p > 1)
    if p in (1.0, 0.5):  # (|d| has a kink at an equal coordinate)
        a_np[0, 1] += 0.3
    a, b = _t(a_np, "cpu"), _t(b_np, "cpu")
    f = lambda u, v: tg.cdist(u, v, p)  # noqa: E731
    assert gradcheck(f, (a, b), check_forward_ad=True)
    assert gradgradcheck(f, (a, b))


def test_cdist_matrix_product_mode(device):
    # more than 25 rows: PyTorch's matrix-product form and its node, the same saved bytes
    a_np, b_np = _rng.normal(size=(27, 3)), _rng.normal(size=(4, 3))
    a_np[5] = b_np[2] = [1.0, 0.5, 0.25]  # exact in the product form too
    a, b = _t(a_np, device), _t(b_np, device)
    nbytes, count, y = saved_bytes(lambda u, v: tg.cdist(u, v), a, b)
    _one_node(y, "EuclideanDistBackward0")
    assert count == 3 and nbytes <= (a_np.size + b_np.size + 27 * 4) * 8
    np.testing.assert_allclose(host(y), _cdist(a_np, b_np, 2), rtol=1e-12, atol=1e-7)
    assert host(y)[5, 2] == 0.0
    g = _rng.normal(size=(27, 4))
    y.backward(tg.tensor(g, device=device))
    ga, gb = _cdist_grads(a_np, b_np, 2.0, g)
    np.testing.assert_allclose(host(a.grad), ga, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(host(b.grad), gb, rtol=1e-9, atol=1e-9)
    small = tg.cdist(a[:3], b, compute_mode="use_mm_for_euclid_dist")
    assert small.grad_fn.name() == "EuclideanDistBackward0"
    exact = tg.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist")
    assert exact.grad_fn.name() == "CdistBackward0"


def test_cdist_matrix_product_mode_gradcheck_forward_ad_and_gradgradcheck():
    u, v = _t(_rng.normal(size=(3, 2, 4)), "cpu"), _t(_rng.normal(size=(1, 5, 4)), "cpu")
    f = lambda s, t: tg.cdist(s, t, compute_mode="use_mm_for_euclid_dist")  # noqa: E731
    assert gradcheck(f, (u, v), check_forward_ad=True)
    assert gradgradcheck(f, (u, v))


def test_cdist_half_empty_and_errors(device):
    a_np, b_np = _rng.normal(size=(3, 4)), _rng.normal(size=(5, 4))
    a = tg.tensor(a_np, dtype=tg.float16, device=device, requires_grad=True)
    b = tg.tensor(b_np, dtype=tg.float16, device=device)
    y = tg.cdist(a, b)
    assert y.dtype is tg.float16
    np.testing.assert_allclose(host(y).astype(np.float64),
                               _cdist(host(a).astype(np.float64), host(b).astype(np.float64),
                                      2), rtol=2e-3)
    y.sum().backward()
    assert a.grad.dtype is tg.float16
    e = tg.cdist(_t(np.zeros((0, 3)), device), _t(np.zeros((2, 3)), device))
    assert e.shape == (0, 2)
    z1 = _t(np.zeros((2, 0)), device)
    z = tg.cdist(z1, _t(np.zeros((3, 0)), device))
    assert host(z).tolist() == [[0.0] * 3] * 2
    z.sum().backward()
    assert z1.grad.shape == (2, 0)
    ones = tg.ones(2, 3, device=device)
    with pytest.raises(ValueError, match="bad is not a valid value for compute_mode"):
        tg.cdist(ones, ones, compute_mode="bad")
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        tg.cdist(ones, tg.ones(2, 4, device=device))
    with pytest.raises(RuntimeError, match="cdist only supports at least 2D tensors, X1 got: 1D"):
        tg.cdist(tg.ones(3, device=device), ones)
    with pytest.raises(RuntimeError, match="cdist only supports floating-point dtypes, X2 got: "
                                           "Long"):
        tg.cdist(ones, tg.ones(2, 3, dtype=tg.int64, device=device))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        tg.cdist(ones, ones, -1.0)
    with pytest.raises(RuntimeError, match="batch dims"):
        tg.cdist(tg.ones(2, 2, 3, device=device), tg.ones(3, 2, 3, device=device))


# -- pdist (nn/_shuffle_distance.py): cdist's formulas on the pairs i < j --------------------

@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, _INF])
def test_pdist_values_gradients_node_and_bytes(p, device):
    x_np = _rng.normal(size=(6, 3))
    x_np[4] = x_np[1]  # a zero distance: gradient 0
    x = _t(x_np, device)
    nbytes, count, y = saved_bytes(lambda t: tg.nn.functional.pdist(t, p), x)
    _one_node(y, "PdistBackward0")
    i, j = np.triu_indices(6, 1)
    assert y.shape == (15,) and count == 2 and nbytes <= (x_np.size + 15) * 8
    np.testing.assert_allclose(host(y), _cdist(x_np, x_np, p)[i, j], rtol=1e-13, atol=1e-15)
    g = _rng.normal(size=15)
    y.backward(tg.tensor(g, device=device))
    square = np.zeros((6, 6))
    square[i, j] = g
    ga, gb = _cdist_grads(x_np, x_np, p, square)
    np.testing.assert_allclose(host(x.grad), ga + gb, rtol=1e-12, atol=1e-13)
    if device == "cpu" and p:  # (the emulated device: test_double_backward_on_both_backends)
        f = lambda t: tg.nn.functional.pdist(t, p)  # noqa: E731
        u = _t(_rng.normal(size=(4, 3)), device)
        assert gradcheck(f, (u,), check_forward_ad=True)
        assert gradgradcheck(f, (u,))


def test_pdist_small_and_errors():
    assert tg.nn.functional.pdist(_t(np.ones((1, 3)), "cpu")).shape == (0,)
    with pytest.raises(RuntimeError, match="pdist only supports floating-point dtypes"):
        tg.nn.functional.pdist(tg.ones(3, 2, dtype=tg.int64))


# -- the recorded rules on both backends -----------------------------------------------------

DOUBLE = {"cumprod": (lambda x: tg.cumprod(x, 1), [[1.5, 0., -2., 0.5]]),
          "logcumsumexp": (lambda x: tg.logcumsumexp(x, 1), [[0.5, -_INF, 2., -1.]]),
          "cdist": (lambda x: tg.cdist(x, x[:2].detach() * 0.5, 3.0), [[1., 2.], [0., -1.]]),
          "cdist_mm": (lambda x: tg.cdist(x, x[:1].detach() * 0.5,
                                          compute_mode="use_mm_for_euclid_dist"),
                       [[1., 2.], [0., -1.]]),
          "pdist": (lambda x: tg.nn.functional.pdist(x, 2.0), [[1., 2.], [0., -1.], [3., 1.]])}


@pytest.mark.parametrize("name", DOUBLE)
def test_double_backward_on_both_backends(name, device):
    # the rule recorded (create_graph) on this backend, differentiated again, against the
    # CPU's (whose second derivatives gradgradcheck checks against finite differences)
    fn, values = DOUBLE[name]
    results = []
    for dev in ("cpu", device):
        x = _t(values, dev)
        y = fn(x)
        (g,) = tg.autograd.grad(y, x, tg.ones_like(y), create_graph=True)
        (gg,) = tg.autograd.grad((g * g).sum(), x)
        results.append((host(g), host(gg)))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


# -- against PyTorch ---------------------------------------------------------------------------

def _both(torch, fn, arrays):
    """fn's result and its inputs' gradients (summed output) in tritongrad and in PyTorch."""
    out = []
    for m in (tg, torch):
        xs = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
        y = fn(m, *xs)
        y.backward(m.ones_like(y))
        out.append((y.detach().numpy(), [x.grad.numpy() for x in xs]))
    return out


def test_against_pytorch_values_gradients_and_saved_bytes():
    torch = pytest.importorskip("torch")
    rows = np.array(CUMPROD_ROWS)
    cases = [(lambda m, x: m.cumprod(x, 1), [rows]),
             (lambda m, x: m.logcumsumexp(x, 1), [_rng.uniform(-4, 4, size=(3, 8))]),
             (lambda m, x: m.logcumsumexp(x, 1), [np.array([[0., -_INF, 2., -_INF]])])]
    for p in PS:
        cases.append((lambda m, u, v, p=p: m.cdist(u, v, p),
                      [_rng.normal(size=(2, 1, 3, 4)), _rng.normal(size=(2, 5, 4))]))
    cases.append((lambda m, u, v: m.cdist(u, v), [_rng.normal(size=(30, 4)),
                                                  _rng.normal(size=(7, 4))]))
    for p in (1.0, 2.0, _INF):
        cases.append((lambda m, x, p=p: m.nn.functional.pdist(x, p), [_rng.normal(size=(7, 3))]))
    for fn, arrays in cases:
        (yt, gt), (yp, gp) = _both(torch, fn, arrays)
        np.testing.assert_allclose(yt, yp, rtol=1e-10, atol=1e-12)
        for a, b in zip(gt, gp):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    for fn, shapes in [(lambda m, x: x.cumprod(-1), [(64, 32)]),
                       (lambda m, x: x.logcumsumexp(-1), [(64, 32)]),
                       (lambda m, u, v: m.cdist(u, v), [(40, 8), (30, 8)]),
                       (lambda m, u, v: m.cdist(u, v, 1), [(10, 8), (6, 8)]),
                       (lambda m, x: m.nn.functional.pdist(x), [(20, 8)])]:
        arrays = [_rng.normal(size=s).astype(np.float32) for s in shapes]
        sizes = []
        for m in (tg, torch):
            xs = [m.tensor(a, requires_grad=True) for a in arrays]
            seen = {}

            def pack(t, m=m, seen=seen):
                key = t.untyped_storage().data_ptr() if m is torch else id(t)
                seen[key] = max(seen.get(key, 0), t.numel() * t.element_size())
                return t
            with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                fn(m, *xs)
            sizes.append(sum(seen.values()))
        assert sizes[0] <= sizes[1], (shapes, sizes)
