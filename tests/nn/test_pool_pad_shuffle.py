"""One-dimensional and adaptive max pooling, the padding layers, channel dropout and pixel
shuffling (nn/_convolution.py, nn/padding.py, nn/functional.py): values against NumPy loop
references and np.pad, indices, gradients against central differences, both backends."""

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(21)


def windows_1d(x, k, s, p, d, fill):
    xp = np.pad(x, ((0, 0), (0, 0), (p, p)), constant_values=fill)
    n_out = (x.shape[2] + 2 * p - d * (k - 1) - 1) // s + 1
    return np.stack([xp[:, :, i * s:i * s + d * (k - 1) + 1:d] for i in range(n_out)], 2)


@pytest.mark.parametrize("k, s, p, d", [(3, 1, 0, 1), (3, 2, 1, 1), (2, 3, 1, 2)])
def test_pools_1d(device, k, s, p, d):
    x = rng.standard_normal((2, 3, 11))
    w = windows_1d(x, k, s, p, d, -np.inf)
    y, idx = F.max_pool1d(tg.tensor(x, device=device), k, s, p, d, return_indices=True)
    np.testing.assert_array_equal(host(y), w.max(3))
    np.testing.assert_array_equal(host(idx), np.arange(11)[None, None].repeat(3, 1).repeat(
        2, 0).take(0) + (w.argmax(3) * d + np.arange(w.shape[2])[None, None] * s - p))
    if d == 1:
        a = F.avg_pool1d(tg.tensor(x, device=device), k, s, p)
        np.testing.assert_allclose(host(a), windows_1d(x, k, s, p, 1, 0.0).mean(3), rtol=1e-12)
    assert_grads_match(lambda t: F.max_pool1d(t, k, s, p, d), [tg.tensor(x, device=device)])
    assert nn.MaxPool1d(k, s, p, d)(tg.tensor(x[0])).shape == (3, w.shape[2])  # unbatched
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"


@pytest.mark.parametrize("out", [(3, 4), (1, 1), (7, 9), (10, 2)])
def test_adaptive_max_pool2d(device, out):
    x = rng.standard_normal((2, 3, 7, 9))
    y, idx = F.adaptive_max_pool2d(tg.tensor(x, device=device), out, return_indices=True)
    ref, ref_idx = np.empty((2, 3) + out), np.empty((2, 3) + out, dtype=np.int64)
    for i in range(out[0]):
        h0, h1 = i * 7 // out[0], -(-(i + 1) * 7 // out[0])
        for j in range(out[1]):
            w0, w1 = j * 9 // out[1], -(-(j + 1) * 9 // out[1])
            win = x[:, :, h0:h1, w0:w1].reshape(2, 3, -1)
            ref[:, :, i, j] = win.max(-1)
            a = win.argmax(-1)
            ref_idx[:, :, i, j] = (h0 + a // (w1 - w0)) * 9 + w0 + a % (w1 - w0)
    np.testing.assert_array_equal(host(y), ref)
    np.testing.assert_array_equal(host(idx), ref_idx)
    assert_grads_match(lambda t: F.adaptive_max_pool2d(t, out), [tg.tensor(x, device=device)])
    y1 = F.adaptive_max_pool1d(tg.tensor(x[:, :, 0], device=device), out[1])
    np.testing.assert_array_equal(host(y1), host(F.adaptive_max_pool2d(
        tg.tensor(x[:, :, :1], device=device), (1, out[1])))[:, :, 0])
    a1 = F.adaptive_avg_pool1d(tg.tensor(x[:, :, 0], device=device), 3)
    np.testing.assert_allclose(host(a1), x[:, :, 0].reshape(2, 3, 3, 3).mean(3), rtol=1e-12)


@pytest.mark.parametrize("name, mode", [("Zero", "constant"), ("Constant", "constant"),
                                        ("Reflection", "reflect"), ("Replication", "edge"),
                                        ("Circular", "wrap")])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_padding_layers_match_np_pad(name, mode, nd):
    x = rng.standard_normal((2, 3) + (4, 5, 3)[:nd])
    pads = (1, 2, 2, 0, 1, 1)[:2 * nd]  # (left, right) of the last dim first
    args = (pads, 1.5) if name == "Constant" else (pads,)
    m = getattr(nn, f"{name}Pad{nd}d")(*args)
    widths = [(0, 0), (0, 0)] + [tuple(pads[2 * i:2 * i + 2]) for i in range(nd)][::-1]
    kw = {"constant_values": 1.5} if name == "Constant" else {}
    np.testing.assert_array_equal(host(m(tg.tensor(x))), np.pad(x, widths, mode=mode, **kw))
    assert getattr(nn, f"{name}Pad{nd}d")(1, *args[1:]).padding == (1,) * (2 * nd)
    if name == "Zero":
        assert repr(m) == f"ZeroPad{nd}d({pads})"
    elif name == "Constant":
        assert repr(m) == f"ConstantPad{nd}d(padding={pads}, value=1.5)"


@pytest.mark.parametrize("pads", [(1, 2), (2, 0, 1, 3), (-1, 2, 1, -2), (0, 0), (-1, -1, 0, 0),
                                  (1, 1, 1, 1, 1, 1)])
def test_constant_pad_node(device, pads):
    """Constant padding is PyTorch's one ConstantPadNdBackward0 node; negative pads crop; its
    gradient (finite differences), double backward and forward-mode tangent."""
    x = rng.standard_normal((2, 3, 4, 5))
    t = tg.tensor(x, device=device, requires_grad=True)
    y = F.pad(t, pads, value=-2.5)
    assert type(y.grad_fn).__name__ == "ConstantPadNdBackward0"
    widths = [(0, 0)] * (4 - len(pads) // 2) + [tuple(pads[2 * i:2 * i + 2])
                                                 for i in range(len(pads) // 2)][::-1]
    ref = x[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(widths, x.shape))]
    ref = np.pad(ref, [(max(lo, 0), max(hi, 0)) for lo, hi in widths], constant_values=-2.5)
    np.testing.assert_array_equal(host(y), ref)
    assert y.data_ptr() != t.data_ptr()  # (a new tensor even for zero padding)
    small = tg.tensor(x[:1, :2], device=device, requires_grad=True)
    if device == "cpu":  # (the interpreter would take minutes over the finite differences)
        assert_grads_match(lambda a: F.pad(a, pads, value=-2.5), [tg.tensor(x[:1, :2])])
        assert tg.autograd.gradgradcheck(lambda a: F.pad(a, pads) ** 2, (small,))
    g = tg.tensor(rng.standard_normal(tuple(y.shape)), device=device)
    y.backward(g)  # the gradient: the middle of g, zero where x was cropped
    grad = np.zeros_like(x)
    inner = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(widths, x.shape))
    grad[inner] = host(g)[tuple(slice(max(lo, 0), max(lo, 0) + s.stop - s.start)
                                for (lo, hi), s in zip(widths, inner))]
    np.testing.assert_array_equal(host(t.grad), grad)
    with tg.autograd.forward_ad.dual_level():
        tangent = tg.tensor(rng.standard_normal(x.shape), device=device)
        dual = tg.autograd.forward_ad.make_dual(tg.tensor(x, device=device), tangent)
        out = tg.autograd.forward_ad.unpack_dual(F.pad(dual, pads, value=3.0)).tangent
    np.testing.assert_array_equal(host(out), host(F.pad(tangent, pads)))
    for dtype in (tg.int64, tg.bool):
        r = F.pad(tg.ones(2, 2, dtype=dtype, device=device), (1, 0), value=0)
        assert r.dtype is dtype and r.tolist() == [[0, 1, 1], [0, 1, 1]]


def test_pixel_shuffle_and_unshuffle(device):
    x = rng.standard_normal((2, 12, 3, 4))
    y = F.pixel_shuffle(tg.tensor(x, device=device), 2)
    ref = np.empty((2, 3, 6, 8))
    for c in range(3):
        for i in range(2):
            for j in range(2):
                ref[:, c, i::2, j::2] = x[:, c * 4 + i * 2 + j]
    np.testing.assert_array_equal(host(y), ref)
    np.testing.assert_array_equal(host(F.pixel_unshuffle(y, 2)), x)
    assert nn.PixelShuffle(2)(tg.tensor(x[0])).shape == (3, 6, 8)
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(tg.zeros(1, 6, 2, 2), 2)
    with pytest.raises(RuntimeError, match="height and width to be divisible"):
        F.pixel_unshuffle(tg.zeros(1, 1, 3, 4), 2)


def test_channel_dropout(device):
    tg.manual_seed(0)
    x = tg.ones(8, 16, 3, 3, device=device, requires_grad=True)
    y = F.dropout2d(x, 0.25)
    v = host(y).reshape(8, 16, 9)
    assert set(np.unique(v).tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert (v.min(-1) == v.max(-1)).all()  # whole channels
    assert 0.5 < (v[:, :, 0] > 0).mean() < 0.95
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), host(y))  # d/dx of x * mask is the mask
    m = nn.Dropout1d(0.5).eval()
    z = tg.randn(3, 5)
    assert m(z) is z
    assert F.dropout3d(tg.ones(2, 2, 2, 2, 2), 0.5, training=False).sum().item() == 32
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(tg.ones(2, 2, 2, 2), 0.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"), \
            pytest.warns(UserWarning, match="Received a 1-D input to dropout2d"):
        F.dropout2d(tg.ones(3), 0.5)


@pytest.mark.parametrize("op, shape, drawn", [
    # PyTorch's rules: dropout2d draws per (dim 0, dim 1) at any rank, a 3-D input being
    # (N, C, L); dropout3d and dropout1d take their unbatched ranks as a batch of one
    ("dropout2d", (4, 5, 6), 2), ("dropout2d", (4, 5, 6, 7), 2), ("dropout2d", (30, 40), 2),
    ("dropout3d", (12, 5, 6, 7), 1), ("dropout3d", (4, 5, 6, 7, 8), 2), ("dropout3d", (40, 6), 1),
    ("dropout1d", (12, 50), 1), ("dropout1d", (4, 5, 60), 2)])
def test_channel_dropout_ranks(op, shape, drawn):
    tg.manual_seed(0)
    expect_warning = (op == "dropout2d" and len(shape) != 4) or \
        (op == "dropout3d" and len(shape) not in (4, 5))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        y = getattr(F, op)(tg.ones(*shape), 0.5).numpy()
    assert bool(seen) == expect_warning
    v = y.reshape(int(np.prod(shape[:drawn])), -1)
    assert (v.min(-1) == v.max(-1)).all()  # one draw per leading index...
    assert 0 < (v[:, 0] > 0).sum() < v.shape[0]  # ...and the draws differ
