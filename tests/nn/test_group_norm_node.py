"""group_norm, and instance_norm with the instances' statistics, as one node
(NativeGroupNormBackward0, nn/_normalization.py): values and gradients against a float64 NumPy
reference, finite differences, forward AD and double backward, half inputs computed in
float32, and what the node saves (the input and the affine parameters alone)."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host
from tritongrad.nn import functional as F

AFFINE = [(True, True), (True, False), (False, True), (False, False)]


def _reference(x, groups, w, b, g, eps=1e-5):
    """(y, dx, dw, db) of group norm in float64 NumPy, for output gradient ``g``."""
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mu = xg.mean(2, keepdims=True)
    rstd = 1 / np.sqrt(((xg - mu) ** 2).mean(2, keepdims=True) + eps)
    xhat = ((xg - mu) * rstd).reshape(x.shape)
    cs = (1, c) + (1,) * (x.ndim - 2)
    wb = np.ones(cs) if w is None else w.reshape(cs)
    y = xhat * wb + (0 if b is None else b.reshape(cs))
    gw = (g * wb).reshape(n, groups, -1)
    xh = xhat.reshape(n, groups, -1)
    dx = (rstd * (gw - gw.mean(2, keepdims=True) - xh * (gw * xh).mean(2, keepdims=True)))
    other = (0,) + tuple(range(2, x.ndim))
    return y, dx.reshape(x.shape), (g * xhat).sum(other), g.sum(other)


@pytest.mark.parametrize("affine", AFFINE)
@pytest.mark.parametrize("shape,groups", [((3, 6, 4, 5), 3), ((2, 4, 7), 4), ((5, 2), 1)])
def test_values_and_gradients(device, affine, shape, groups):
    rng = np.random.default_rng(0)
    x0, g0 = rng.standard_normal(shape) * 3 + 1, rng.standard_normal(shape)
    w0, b0 = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    x = tg.tensor(x0, device=device, requires_grad=True)
    w = tg.tensor(w0, device=device, requires_grad=True) if affine[0] else None
    b = tg.tensor(b0, device=device, requires_grad=True) if affine[1] else None
    y = F.group_norm(x, groups, w, b)
    assert y.grad_fn.name() == "NativeGroupNormBackward0"
    y.backward(tg.tensor(g0, device=device))
    want = _reference(x0, groups, w0 if affine[0] else None, b0 if affine[1] else None, g0)
    np.testing.assert_allclose(host(y), want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(x.grad), want[1], rtol=1e-9, atol=1e-12)
    if w is not None:
        np.testing.assert_allclose(host(w.grad), want[2], rtol=1e-10, atol=1e-12)
    if b is not None:
        np.testing.assert_allclose(host(b.grad), want[3], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("affine", AFFINE)
def test_gradcheck_forward_ad_double_backward(affine):
    rng = np.random.default_rng(1)
    x = tg.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
    params = [tg.tensor(rng.standard_normal(4), requires_grad=True) for on in affine if on]

    def fn(x, *p):
        w = p[0] if affine[0] else None
        b = p[-1] if affine[1] else None
        return F.group_norm(x, 2, w, b)

    assert tg.autograd.gradcheck(fn, (x, *params), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x, *params))
    inst = (lambda x, *p: F.instance_norm(x, weight=p[0] if affine[0] else None,
                                          bias=p[-1] if affine[1] else None))
    assert tg.autograd.gradcheck(inst, (x, *params), check_forward_ad=True)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_computed_in_float32(dt):
    rng = np.random.default_rng(2)
    x = tg.tensor(rng.standard_normal((2, 6, 8)), dtype=getattr(tg, dt), requires_grad=True)
    w = tg.tensor(rng.standard_normal(6), dtype=tg.float32, requires_grad=True)
    y = F.group_norm(x, 3, w)
    assert y.dtype is x.dtype
    x32 = x.detach().float().requires_grad_()
    w32 = w.detach().clone().requires_grad_()
    want = F.group_norm(x32, 3, w32)
    np.testing.assert_array_equal(host(y.float()), host(want.to(x.dtype).float()))
    g = tg.linspace(-1, 1, y.numel()).reshape(y.shape)
    y.backward(g.to(x.dtype))
    want.backward(g.to(x.dtype).float())
    assert x.grad.dtype is x.dtype and w.grad.dtype is tg.float32
    np.testing.assert_array_equal(host(x.grad.float()), host(x32.grad.to(x.dtype).float()))
    np.testing.assert_allclose(host(w.grad), host(w32.grad), rtol=1e-6)


def test_saves_input_and_parameters_alone():
    x = tg.randn(4, 8, 16, 16, dtype=tg.float64, requires_grad=True)
    w, b = tg.ones(8, dtype=tg.float64, requires_grad=True), tg.zeros(8, dtype=tg.float64)
    for fn in (lambda: F.group_norm(x, 4, w, b), lambda: F.instance_norm(x)):
        packed = []
        with tg.autograd.graph.saved_tensors_hooks(lambda s: packed.append(s) or s, lambda s: s):
            fn()
        assert packed[0].shape == x.shape and sum(p.numel() for p in packed[1:]) <= 16


def test_instance_norm_running_statistics_still_updated():
    x = tg.randn(3, 2, 5, dtype=tg.float64, requires_grad=True)
    rm, rv = tg.zeros(2, dtype=tg.float64), tg.ones(2, dtype=tg.float64)
    y = F.instance_norm(x, rm, rv, momentum=0.5)
    xs = host(x)
    np.testing.assert_allclose(host(rm), 0.5 * xs.mean(2).mean(0), rtol=1e-12)
    np.testing.assert_allclose(host(rv), 0.5 + 0.5 * xs.var(2, ddof=1).mean(0), rtol=1e-12)
    assert y.grad_fn.name() == "NativeGroupNormBackward0"


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x0, w0, b0 = rng.standard_normal((2, 6, 3, 4)), rng.standard_normal(6), rng.standard_normal(6)
    for affine in AFFINE[:2] + AFFINE[3:]:  # (torch's backward fails for a bias alone)
        outs = []
        for m in (tg, torch):
            x = m.tensor(x0, requires_grad=True)
            w = m.tensor(w0, requires_grad=True) if affine[0] else None
            b = m.tensor(b0, requires_grad=True) if affine[1] else None
            y = m.nn.functional.group_norm(x, 3, w, b)
            (y * m.tensor(np.cos(x0))).sum().backward()
            outs.append([y.grad_fn.name(), np.asarray(y.tolist()), np.asarray(x.grad.tolist())]
                        + [np.asarray(p.grad.tolist()) for p in (w, b) if p is not None])
        assert outs[0][0] == outs[1][0]
        for a, b in zip(outs[0][1:], outs[1][1:]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
