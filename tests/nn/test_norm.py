"""BatchNorm1d/2d, GroupNorm, RMSNorm and their functionals (nn/_normalization.py) against
NumPy float64 references: running statistics, momentum=None, eval mode, gradients."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order, t64
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(3)


@pytest.mark.parametrize("momentum", [0.1, 0.3, None])
def test_batch_norm2d_running_statistics(momentum):
    bn = nn.BatchNorm2d(3, momentum=momentum).double()
    nn.init.normal_(bn.weight)
    nn.init.normal_(bn.bias)
    w, b = host(bn.weight), host(bn.bias)
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(1, 4):
        x = rng.standard_normal((4, 3, 2, 3)) * step + step
        y = bn(tg.tensor(x))
        mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
        ref = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
        np.testing.assert_allclose(host(y), ref * w[:, None, None] + b[:, None, None],
                                   rtol=1e-12, atol=1e-12)
        f = 1.0 / step if momentum is None else momentum
        rm = (1 - f) * rm + f * mean
        rv = (1 - f) * rv + f * x.var(axis=(0, 2, 3), ddof=1)  # unbiased
        np.testing.assert_allclose(host(bn.running_mean), rm, rtol=1e-12)
        np.testing.assert_allclose(host(bn.running_var), rv, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    x = rng.standard_normal((2, 3, 2, 2))
    ref = (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5) * w[:, None, None] + \
        b[:, None, None]
    np.testing.assert_allclose(host(bn(tg.tensor(x))), ref, rtol=1e-12, atol=1e-12)
    assert bn.num_batches_tracked.item() == 3


def test_batch_norm1d_without_running_stats_or_affine(device):
    bn = nn.BatchNorm1d(4, affine=False, track_running_stats=False, device=device).double()
    assert bn.weight is None and bn.running_mean is None
    assert list(bn.state_dict()) == []
    x = rng.standard_normal((5, 4, 3))
    ref = (x - x.mean(axis=(0, 2), keepdims=True)) / np.sqrt(x.var(axis=(0, 2), keepdims=True)
                                                             + 1e-5)
    for mode in (bn.train, bn.eval):  # no running statistics: batch statistics both ways
        mode()
        np.testing.assert_allclose(host(bn(tg.tensor(x, device=device))), ref, rtol=1e-11,
                                   atol=1e-12)


def test_batch_norm_gradients_and_state_dict(device):
    x = tg.tensor(rng.standard_normal((4, 3)), device=device)
    w = tg.tensor(rng.uniform(0.5, 1.5, 3), device=device)
    b = tg.tensor(rng.standard_normal(3), device=device)
    assert_grads_match(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                       [x, w, b], atol=1e-5)
    sd = nn.BatchNorm1d(3).state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert sd["num_batches_tracked"].dtype is tg.int64


@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_batch_norm_training_is_one_fused_node(device, affine):
    # NativeBatchNormBackward0 (autograd/ops/nn.py): values and gradients against float64
    # references over (N, C, H, W), second order and forward AD through its rules
    x0 = rng.standard_normal((3, 2, 4, 3)) * 3 + 2
    w0, b0 = rng.uniform(0.5, 1.5, 2), rng.standard_normal(2)
    x = tg.tensor(x0, device=device, requires_grad=True)
    w = tg.tensor(w0, device=device, requires_grad=True) if affine in ("both", "weight") \
        else None
    b = tg.tensor(b0, device=device, requires_grad=True) if affine in ("both", "bias") \
        else None
    y = F.batch_norm(x, None, None, w, b, training=True)
    assert type(y.grad_fn).__name__ == "NativeBatchNormBackward0"
    mean, var = x0.mean(axis=(0, 2, 3), keepdims=True), x0.var(axis=(0, 2, 3), keepdims=True)
    xhat = (x0 - mean) / np.sqrt(var + 1e-5)
    wr = w0.reshape(1, 2, 1, 1) if w is not None else 1.0
    ref = xhat * wr + (b0.reshape(1, 2, 1, 1) if b is not None else 0.0)
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-12)
    g0 = rng.standard_normal(x0.shape)
    y.backward(tg.tensor(g0, device=device))
    n = x0.size // 2
    s, bsum = (g0 * xhat).sum((0, 2, 3), keepdims=True), g0.sum((0, 2, 3), keepdims=True)
    dx = wr / np.sqrt(var + 1e-5) * (g0 - bsum / n - xhat * s / n)
    np.testing.assert_allclose(host(x.grad), dx, rtol=1e-10, atol=1e-12)
    if w is not None:
        np.testing.assert_allclose(host(w.grad), s.reshape(2), rtol=1e-10, atol=1e-12)
    if b is not None:
        np.testing.assert_allclose(host(b.grad), bsum.reshape(2), rtol=1e-10, atol=1e-12)
    args = [t for t in (x, w, b) if t is not None]
    names = [name for name, t in (("x", x), ("w", w), ("b", b)) if t is not None]

    def fn(*ts):
        kw = dict(zip(names, ts))
        return F.batch_norm(kw["x"], None, None, kw.get("w"), kw.get("b"), training=True)

    small = [t.detach()[:2, :, :2, :2].contiguous() if t.ndim == 4 else t.detach()
             for t in args]
    assert tg.autograd.gradcheck(fn, [t.requires_grad_() for t in small],
                                 check_forward_ad=True)
    second_order(fn, small)


def test_batch_norm_half_precision_computes_in_float32():
    x = tg.tensor(rng.standard_normal((16, 3, 5)) * 4 + 100, dtype=tg.float16,
                  requires_grad=True)
    bn = nn.BatchNorm1d(3)
    y = bn(x)
    y.float().pow(2).sum().backward()
    assert y.dtype is tg.float16 and x.grad.dtype is tg.float16
    assert bn.weight.grad.dtype is tg.float32 and bn.running_mean.dtype is tg.float32
    xs = host(x).astype(np.float64)
    ref = (xs - xs.mean((0, 2), keepdims=True)) / np.sqrt(xs.var((0, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(host(y).astype(np.float64), ref, atol=4e-3)
    np.testing.assert_allclose(host(bn.running_mean), 0.1 * xs.mean((0, 2)), rtol=1e-5)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(tg.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(tg.randn(2, 3, 4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(tg.randn(1, 3))
    assert repr(nn.BatchNorm2d(3)) == ("BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, "
                                       "bias=True, track_running_stats=True)")


@pytest.mark.parametrize("make", [lambda **kw: nn.BatchNorm1d(3, **kw),
                                  lambda **kw: nn.InstanceNorm1d(3, affine=True, **kw),
                                  lambda **kw: nn.GroupNorm(1, 3, **kw),
                                  lambda **kw: nn.LazyBatchNorm1d(**kw)])
def test_norm_layers_without_bias(make, device):
    # PyTorch 2.x's bias=False: the scale alone, no shift (and none in the state dict)
    m = make(bias=False, device=device, dtype=tg.float64)
    assert "bias=False" in repr(m) and m.bias is None
    x = t64((4, 3, 5), device)
    with tg.no_grad():
        ref = make(device=device, dtype=tg.float64)
        y = m(x)
        if m.weight is not None:
            m.weight.mul_(2.0)
        ref(x)
        ref.weight.copy_(m.weight)  # same scale, and a zero shift: the same output
    np.testing.assert_allclose(host(m(x)), host(ref(x)), rtol=1e-12, atol=1e-12)
    assert "bias" not in m.state_dict() and y.shape == x.shape
    assert "bias=True" in repr(make(device=device))


def test_group_norm(device):
    x = rng.standard_normal((2, 6, 3, 2))
    gn = nn.GroupNorm(3, 6, device=device).double()
    nn.init.normal_(gn.weight)
    g = x.reshape(2, 3, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    ref = ref.reshape(x.shape) * host(gn.weight)[:, None, None]
    np.testing.assert_allclose(host(gn(tg.tensor(x, device=device))), ref, rtol=1e-11,
                               atol=1e-12)
    xs = tg.tensor(rng.standard_normal((2, 4, 3)), device=device)
    assert_grads_match(lambda x: F.group_norm(x, 2), [xs], atol=1e-5)
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups"):
        nn.GroupNorm(4, 6)


def test_rms_norm(device):
    x = rng.standard_normal((3, 2, 4))
    m = nn.RMSNorm([2, 4], device=device).double()
    nn.init.normal_(m.weight)
    ref = x / np.sqrt((x * x).mean(axis=(1, 2), keepdims=True) + np.finfo(np.float64).eps)
    np.testing.assert_allclose(host(m(tg.tensor(x, device=device))), ref * host(m.weight),
                               rtol=1e-12)
    y = F.rms_norm(tg.tensor(x, dtype=tg.float32), (4,), eps=None)
    ref32 = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
    np.testing.assert_allclose(host(y), ref32, rtol=1e-5)
    assert_grads_match(lambda x: F.rms_norm(x, (4,), eps=1e-3),
                       [tg.tensor(x[0], device=device)])
    assert repr(nn.RMSNorm(8)) == "RMSNorm((8,), eps=None, elementwise_affine=True)"
    with pytest.raises(RuntimeError, match="Given normalized_shape=\\[5\\]"):
        F.rms_norm(tg.randn(2, 4), (5,))


def test_second_order_gradients():
    x = tg.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda x: F.batch_norm(x, None, None, training=True), (x,))
    assert tg.autograd.gradgradcheck(lambda x: F.group_norm(x, 1), (x,))
    assert tg.autograd.gradgradcheck(lambda x: F.rms_norm(x, (2,), eps=1e-3), (x,))
