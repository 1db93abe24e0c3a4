"""Convolution and pooling (nn/_convolution.py, im2col composites): values against plain NumPy
loop references in float64, gradients against central differences, on both backends."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(11)


def _conv_ref(x, w, b, stride, pad, dilation, groups):
    """Direct convolution, loops over output positions: x (N, C, H, W), w (O, C/g, kh, kw)."""
    x = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    per = o // groups
    for oc in range(o):
        g = oc // per
        for i in range(oh):
            for j in range(ow):
                r, s = i * stride[0], j * stride[1]
                patch = x[:, g * cg:(g + 1) * cg, r:r + dilation[0] * (kh - 1) + 1:dilation[0],
                          s:s + dilation[1] * (kw - 1) + 1:dilation[1]]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out + (b.reshape(1, -1, 1, 1) if b is not None else 0)


CONV_CASES = [  # (stride, padding, dilation, groups)
    ((1, 1), (0, 0), (1, 1), 1),
    ((2, 1), (1, 2), (1, 1), 1),
    ((1, 2), (2, 1), (2, 1), 2),
    ((3, 2), (1, 0), (1, 2), 4),
]


@pytest.mark.parametrize("stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_matches_numpy_reference(stride, padding, dilation, groups):
    x = rng.standard_normal((2, 4, 7, 8))
    w = rng.standard_normal((8, 4 // groups, 3, 2))
    b = rng.standard_normal(8)
    y = F.conv2d(tg.tensor(x), tg.tensor(w), tg.tensor(b), stride, padding, dilation, groups)
    np.testing.assert_allclose(host(y), _conv_ref(x, w, b, stride, padding, dilation, groups),
                               rtol=1e-12, atol=1e-12)


def test_conv1d_is_conv2d_of_height_one_and_unbatched_input():
    x, w = rng.standard_normal((3, 4, 11)), rng.standard_normal((6, 2, 3))
    y = F.conv1d(tg.tensor(x), tg.tensor(w), stride=2, padding=1, dilation=2, groups=2)
    ref = _conv_ref(x[:, :, None], w[:, :, None], None, (1, 2), (0, 1), (1, 2), 2)[:, :, 0]
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-12)
    y1 = F.conv1d(tg.tensor(x[0]), tg.tensor(w), groups=2)
    assert y1.shape == (6, 9)
    np.testing.assert_allclose(host(y1), host(F.conv1d(tg.tensor(x[:1]), tg.tensor(w),
                                                       groups=2))[0], rtol=1e-12)


@pytest.mark.parametrize("k,d", [(3, 1), (4, 1), (3, 2), (2, 3)])
def test_padding_same_keeps_the_size_and_splits_odd_totals_right(k, d):
    x, w = rng.standard_normal((1, 2, 7, 6)), rng.standard_normal((3, 2, k, k))
    y = F.conv2d(tg.tensor(x), tg.tensor(w), padding="same", dilation=d)
    assert y.shape == (1, 3, 7, 6)
    total = d * (k - 1)
    xp = np.pad(x, ((0, 0), (0, 0), (total // 2, total - total // 2),
                    (total // 2, total - total // 2)))
    ref = _conv_ref(xp, w, None, (1, 1), (0, 0), (d, d), 1)
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-12)
    assert F.conv2d(tg.tensor(x), tg.tensor(w), padding="valid").shape == \
        (1, 3, 7 - (k - 1), 6 - (k - 1))


def test_conv2d_gradients(device):
    x = tg.tensor(rng.standard_normal((1, 4, 5, 4)), device=device)
    w = tg.tensor(rng.standard_normal((2, 2, 2, 3)), device=device)
    b = tg.tensor(rng.standard_normal(2), device=device)
    assert_grads_match(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2),
                                                groups=2), [x, w, b])


def test_conv1d_gradients_and_gradcheck():
    x = tg.tensor(rng.standard_normal((2, 2, 6)), requires_grad=True)
    w = tg.tensor(rng.standard_normal((3, 2, 3)), requires_grad=True)
    assert tg.autograd.gradcheck(lambda x, w: F.conv1d(x, w, padding="same", dilation=2), (x, w))
    assert tg.autograd.gradgradcheck(lambda x, w: F.conv1d(x, w, stride=2), (x, w))


def test_conv_modules_init_and_padding_modes(device):
    m = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2, device=device)
    assert m.weight.shape == (6, 2, 3, 2) and m.bias.shape == (6,)
    bound = 1 / math.sqrt(2 * 3 * 2)
    assert host(m.weight).max() <= bound and host(m.bias).max() <= bound
    assert repr(m) == ("Conv2d(4, 6, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), "
                       "groups=2)")
    x = rng.standard_normal((1, 2, 5, 5))
    r = nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect", bias=False).double()
    ref = _conv_ref(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"),
                    host(r.weight), None, (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(host(r(tg.tensor(x))), ref, rtol=1e-12, atol=1e-12)
    c1 = nn.Conv1d(2, 4, 3, padding="same", padding_mode="circular").double()
    x1 = rng.standard_normal((2, 2, 7))
    ref1 = _conv_ref(np.pad(x1, ((0, 0), (0, 0), (1, 1)), mode="wrap")[:, :, None],
                     host(c1.weight)[:, :, None], host(c1.bias), (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(host(c1(tg.tensor(x1))), ref1[:, :, 0], rtol=1e-12, atol=1e-12)


def test_conv_errors():
    w = tg.randn(4, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           r"to conv2d, but got input of size: \[2, 3\]"):
        F.conv2d(tg.randn(2, 3), w)
    with pytest.raises(RuntimeError, match="expected input\\[1, 2, 5, 5\\] to have 3 channels"):
        F.conv2d(tg.randn(1, 2, 5, 5), w)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
        F.conv2d(tg.randn(1, 3, 2, 2), w)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        F.conv2d(tg.randn(1, 3, 5, 5), w, stride=2, padding="same")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv1d(3, 4, 3, padding_mode="mirror")


# -- pooling -------------------------------------------------------------------------------------

def _pool_out(n, k, s, p, d, ceil):
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


def _max_pool_ref(x, k, s, p, d, ceil):
    n, c, h, w = x.shape
    oh, ow = _pool_out(h, k[0], s[0], p[0], d[0], ceil), _pool_out(w, k[1], s[1], p[1], d[1], ceil)
    out, idx = np.full((n, c, oh, ow), -np.inf), np.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            for a in range(k[0]):
                for b in range(k[1]):
                    r, q = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= r < h and 0 <= q < w:
                        v = x[:, :, r, q]
                        better = v > out[:, :, i, j]
                        out[:, :, i, j] = np.where(better, v, out[:, :, i, j])
                        idx[:, :, i, j] = np.where(better, r * w + q, idx[:, :, i, j])
    return out, idx


def _avg_pool_ref(x, k, s, p, ceil, include_pad, override):
    n, c, h, w = x.shape
    oh, ow = _pool_out(h, k[0], s[0], p[0], 1, ceil), _pool_out(w, k[1], s[1], p[1], 1, ceil)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, q0 = i * s[0] - p[0], j * s[1] - p[1]
            r1, q1 = min(r0 + k[0], h + p[0]), min(q0 + k[1], w + p[1])
            size = (r1 - r0) * (q1 - q0)
            r0, q0, r1, q1 = max(r0, 0), max(q0, 0), min(r1, h), min(q1, w)
            total = x[:, :, r0:r1, q0:q1].sum(axis=(2, 3))
            div = override or (size if include_pad else (r1 - r0) * (q1 - q0))
            out[:, :, i, j] = total / div
    return out


POOL_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    ((2, 2), (2, 2), (0, 0), (1, 1), False),  # tiling windows; the last row in none
    ((2, 4), (2, 4), (1, 0), (1, 1), True),   # tiling the padded plane (ceil mode)
    ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((3, 2), (2, 1), (1, 1), (2, 1), True),
    ((2, 3), (3, 2), (1, 0), (1, 1), False),
]


@pytest.mark.parametrize("stride, padding, dilation, groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), ((1, 2, 1), (0, 1, 2), (2, 1, 1), 2)])
def test_conv3d_matches_a_window_reference(device, stride, padding, dilation, groups):
    x, w = rng.standard_normal((2, 4, 5, 6, 7)), rng.standard_normal((6, 4 // groups, 3, 2, 3))
    b = rng.standard_normal(6)
    y = F.conv3d(tg.tensor(x, device=device), tg.tensor(w, device=device),
                 tg.tensor(b, device=device), stride, padding, dilation, groups)
    s3, p3, d3 = (v if isinstance(v, tuple) else (v,) * 3 for v in (stride, padding, dilation))
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in p3))
    eff = [d * (k - 1) + 1 for d, k in zip(d3, w.shape[2:])]
    win = np.lib.stride_tricks.sliding_window_view(xp, eff, axis=(2, 3, 4))
    win = win[:, :, ::s3[0], ::s3[1], ::s3[2], ::d3[0], ::d3[1], ::d3[2]]
    cg, og = 4 // groups, 6 // groups
    ref = np.concatenate([np.einsum("ncdhwijk,ocijk->nodhw", win[:, g * cg:(g + 1) * cg],
                                    w[g * og:(g + 1) * og]) for g in range(groups)], 1)
    np.testing.assert_allclose(host(y), ref + b[None, :, None, None, None], rtol=1e-11,
                               atol=1e-11)
    if device == "cpu":
        assert_grads_match(lambda x, w: F.conv3d(x, w, None, stride, padding, dilation, groups),
                           [tg.tensor(x[:1, :, :5, :4, :5]), tg.tensor(w)])
    m = nn.Conv3d(4, 6, (3, 2, 3), stride, padding, dilation, groups)
    assert m.weight.shape == (6, 4 // groups, 3, 2, 3)
    assert m(tg.randn(4, 5, 6, 7)).shape == ref.shape[1:]  # unbatched


# -- transposed convolution -------------------------------------------------------------------------

def _convt_ref(x, w, b, stride, pad, out_pad, dilation, groups):
    """Direct transposed convolution: each input position scatters w * x to the output,
    x (N, C_in, H, W), w (C_in, C_out/g, kh, kw), cropped by ``pad``, ``out_pad`` extra."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    full = ((h - 1) * stride[0] + dilation[0] * (kh - 1) + 1 + out_pad[0],
            (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1 + out_pad[1])
    y = np.zeros((n, og * groups) + tuple(f + p for f, p in zip(full, pad)))
    per = c // groups
    for ic in range(c):
        g = ic // per
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for bb in range(kw):
                        y[:, g * og:(g + 1) * og, i * stride[0] + a * dilation[0],
                          j * stride[1] + bb * dilation[1]] += x[:, ic, i, j, None] * w[ic, :, a, bb]
    oh = (h - 1) * stride[0] - 2 * pad[0] + dilation[0] * (kh - 1) + out_pad[0] + 1
    ow = (wd - 1) * stride[1] - 2 * pad[1] + dilation[1] * (kw - 1) + out_pad[1] + 1
    y = y[:, :, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow]
    return y if b is None else y + b[None, :, None, None]


@pytest.mark.parametrize("stride, padding, out_pad, dilation, groups", [
    ((1, 1), (0, 0), (0, 0), (1, 1), 1), ((2, 2), (1, 1), (1, 1), (1, 1), 1),
    ((3, 2), (0, 1), (2, 0), (1, 1), 2), ((1, 2), (2, 1), (1, 1), (2, 2), 1),
    ((2, 1), (1, 0), (1, 1), (2, 3), 2)])
def test_conv_transpose2d_matches_the_scatter_reference(device, stride, padding, out_pad,
                                                        dilation, groups):
    x, w = rng.standard_normal((2, 4, 4, 5)), rng.standard_normal((4, 3, 3, 2))
    b = rng.standard_normal(3 * groups)
    args = (stride, padding, out_pad, groups, dilation)
    y = F.conv_transpose2d(tg.tensor(x, device=device), tg.tensor(w, device=device),
                           tg.tensor(b, device=device), *args)
    ref = _convt_ref(x, w, b, stride, padding, out_pad, dilation, groups)
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-12)
    # the adjoint of conv2d: <convt(x), v> = <x, conv2d(v)> (conv2d's extra rows cropped)
    v = rng.standard_normal(ref.shape)
    yt = F.conv_transpose2d(tg.tensor(x), tg.tensor(w), None, *args)
    back = F.conv2d(tg.tensor(v), tg.tensor(w), None, stride, padding, dilation, groups)
    lhs = float((yt * tg.tensor(v)).sum())
    rhs = float((tg.tensor(x) * back[:, :, :x.shape[2], :x.shape[3]]).sum())
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_conv_transpose_gradients_first_and_second_order(device):
    x = tg.tensor(rng.standard_normal((1, 2, 3, 3)), device=device)
    w = tg.tensor(rng.standard_normal((2, 2, 2, 3)), device=device)
    b = tg.tensor(rng.standard_normal(2), device=device)
    fn = lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 1, 1)  # noqa: E731
    assert_grads_match(fn, [x, w, b])
    if device == "cpu":  # (second order through the interpreter: a minute of launches)
        leaves = [t.detach().requires_grad_(True) for t in (x, w, b)]
        assert tg.autograd.gradgradcheck(fn, leaves)
    x1 = tg.tensor(rng.standard_normal((2, 3, 5)), device=device)
    w1 = tg.tensor(rng.standard_normal((3, 2, 3)), device=device)
    assert_grads_match(lambda x, w: F.conv_transpose1d(x, w, None, 2, 1, 1), [x1, w1])
    assert F.conv_transpose2d(x, w, b, 2, 1, 1).grad_fn is None
    assert F.conv_transpose2d(x.requires_grad_(), w).grad_fn.name() == "ConvTransposeBackward0"


def test_conv_transpose_unreached_rows_hold_the_bias_and_1d_is_height_one():
    # output_padding 2 > padding 0: the last two rows and columns get no tap, only the bias
    y = F.conv_transpose2d(tg.ones(1, 1, 2, 2), tg.ones(1, 1, 1, 1), tg.tensor([0.5]), 3, 0, 2)
    assert y.shape == (1, 1, 6, 6)
    assert y[0, 0].tolist()[0] == [1.5, 0.5, 0.5, 1.5, 0.5, 0.5]
    assert y[0, 0, 4:].tolist() == [[0.5] * 6] * 2
    x, w = rng.standard_normal((2, 3, 7)), rng.standard_normal((3, 4, 3))
    y1 = F.conv_transpose1d(tg.tensor(x), tg.tensor(w), None, 2, 1, 1)
    y2 = F.conv_transpose2d(tg.tensor(x[:, :, None]), tg.tensor(w[:, :, None]), None, (1, 2),
                            (0, 1), (0, 1))
    np.testing.assert_allclose(host(y1), host(y2)[:, :, 0], rtol=1e-14)
    assert F.conv_transpose1d(tg.tensor(x[0]), tg.tensor(w)).shape == (4, 9)  # unbatched


def test_conv_transpose_modules_and_errors():
    m = nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), groups=2, output_padding=(1, 0),
                           bias=False)
    assert m.weight.shape == (4, 3, 3, 2) and m.bias is None
    assert repr(m) == ("ConvTranspose2d(4, 6, kernel_size=(3, 2), stride=(2, 1), "
                       "output_padding=(1, 0), groups=2, bias=False)")
    up = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1)
    bound = 1 / math.sqrt(8 * 9)  # fan_in = out_channels / groups * kernel positions
    assert float(up.weight.abs().max()) <= bound and float(up.bias.abs().max()) <= bound
    assert up(tg.randn(1, 16, 12, 12)).shape == (1, 8, 23, 23)
    assert up(tg.randn(1, 16, 12, 12), output_size=[1, 8, 24, 24]).shape == (1, 8, 24, 24)
    with pytest.raises(ValueError, match=r"requested an output size of \[30, 30\], but valid "
                                         r"sizes range from \[23, 23\] to \[24, 24\]"):
        up(tg.randn(1, 16, 12, 12), output_size=[30, 30])
    assert nn.ConvTranspose1d(3, 5, 4, stride=2)(tg.randn(2, 3, 10)).shape == (2, 5, 22)
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for '
                                         'ConvTranspose2d'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride "
                                           "or dilation"):
        F.conv_transpose2d(tg.randn(1, 2, 3, 3), tg.randn(2, 2, 3, 3), stride=2,
                           output_padding=2)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[2, 2, 3, 3\], "
                                           r"expected input\[1, 3, 3, 3\] to have 2 channels"):
        F.conv_transpose2d(tg.randn(1, 3, 3, 3), tg.randn(2, 2, 3, 3))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) "
                                           "input to conv_transpose2d"):
        F.conv_transpose2d(tg.randn(3, 3), tg.randn(2, 2, 3, 3))


@pytest.mark.parametrize("k,s,p,d,ceil", POOL_CASES)
def test_max_pool2d_values_and_indices(k, s, p, d, ceil):
    x = rng.standard_normal((2, 3, 7, 8))
    y, idx = F.max_pool2d(tg.tensor(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    ref, ref_idx = _max_pool_ref(x, k, s, p, d, ceil)
    np.testing.assert_array_equal(host(y), ref)
    np.testing.assert_array_equal(host(idx), ref_idx)


@pytest.mark.parametrize("k,s,p,_d,ceil", POOL_CASES)
@pytest.mark.parametrize("include_pad,override", [(True, None), (False, None), (True, 5)])
def test_avg_pool2d_values(k, s, p, _d, ceil, include_pad, override):
    x = rng.standard_normal((2, 3, 7, 8))
    y = F.avg_pool2d(tg.tensor(x), k, s, p, ceil, include_pad, override)
    np.testing.assert_allclose(host(y), _avg_pool_ref(x, k, s, p, ceil, include_pad, override),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("out", [(3, 4), (5, None), 1, (7, 8)])
def test_adaptive_avg_pool2d_values(out):
    x = rng.standard_normal((2, 3, 7, 8))
    y = F.adaptive_avg_pool2d(tg.tensor(x), out)
    oh, ow = (out, out) if isinstance(out, int) else (out[0], out[1] or 8)
    ref = np.zeros((2, 3, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, r1 = (i * 7) // oh, -((-(i + 1) * 7) // oh)
            q0, q1 = (j * 8) // ow, -((-(j + 1) * 8) // ow)
            ref[:, :, i, j] = x[:, :, r0:r1, q0:q1].mean(axis=(2, 3))
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-14)


def test_pool_gradients(device):
    x = tg.tensor(rng.standard_normal((1, 2, 5, 5)), device=device)
    assert_grads_match(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [x])
    # windows that tile the plane (a view of it), with and without a last row and column that
    # no window covers, and with ceil mode's padding
    for size, ceil in ((4, False), (5, False), (5, True)):
        xt = tg.tensor(rng.standard_normal((2, 2, size, size)), device=device)
        assert_grads_match(lambda x, c=ceil: F.max_pool2d(x, 2, ceil_mode=c), [xt])
        assert_grads_match(lambda x, c=ceil: F.avg_pool2d(x, 2, ceil_mode=c), [xt])
    assert_grads_match(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                              count_include_pad=False), [x])
    assert_grads_match(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [x])


def test_max_pool_gradient_goes_to_one_maximum_of_overlapping_windows():
    x = tg.tensor([[[[1.0, 5.0, 2.0], [0.0, 3.0, 4.0], [6.0, 1.0, 0.0]]]], requires_grad=True)
    F.max_pool2d(x, 2, stride=1).sum().backward()
    # 5 is the max of both top windows, 6 and 4 of one each: gradient counts how often
    np.testing.assert_array_equal(host(x.grad)[0, 0], [[0, 2, 0], [0, 0, 1], [1, 0, 0]])


def test_pool_modules_unbatched_and_errors():
    x = tg.randn(3, 6, 6)
    assert nn.MaxPool2d(2)(x).shape == (3, 3, 3)
    assert nn.AvgPool2d(3, stride=1, padding=1)(x).shape == (3, 6, 6)
    assert nn.AdaptiveAvgPool2d((2, None))(x).shape == (3, 2, 6)
    assert repr(nn.MaxPool2d(2)) == ("MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, "
                                     "ceil_mode=False)")
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel "
                                           "size, but got pad=2, kernel_size=3 and dilation=1"):
        F.max_pool2d(tg.randn(1, 1, 5, 5), 3, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half of kernel size, but got "
                                           "pad=2 and kernel_size=3"):
        F.avg_pool2d(tg.randn(1, 1, 5, 5), 3, padding=2)
    with pytest.raises(RuntimeError, match="non-empty 3D or 4D"):
        F.avg_pool2d(tg.randn(5, 5), 2)


def test_unfold_matches_windows():
    x = rng.standard_normal((2, 3, 5, 4))
    cols = F.unfold(tg.tensor(x), (2, 3), padding=1, stride=2)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.stack([xp[:, :, i:i + 2, j:j + 3].reshape(2, -1)
                    for i in range(0, 6, 2) for j in range(0, 4, 2)], axis=-1)
    np.testing.assert_array_equal(host(cols), ref)


def test_conv_net_trains_on_cuda(device):
    # the whole path on the device: conv, pooling, batch norm, linear, a loss and a step
    tg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 2)).to(device)
    x, t = tg.randn(3, 1, 4, 4, device=device), tg.tensor([0, 1, 1], device=device)
    loss = F.cross_entropy(model(x), t)
    loss.backward()
    assert all(p.grad is not None and p.grad.device.type == device for p in model.parameters())


def test_conv_and_pool_float32_on_device(device):
    # float32 through the device's kernels (index_select, batched matmul, max) against float64
    x, w = rng.standard_normal((2, 4, 6, 5)), rng.standard_normal((6, 2, 3, 3))
    y = F.conv2d(tg.tensor(x, dtype=tg.float32, device=device),
                 tg.tensor(w, dtype=tg.float32, device=device), stride=(1, 2), padding=1,
                 groups=2)
    assert y.dtype is tg.float32 and y.device.type == device
    np.testing.assert_allclose(host(y), _conv_ref(x, w, None, (1, 2), (1, 1), (1, 1), 2),
                               rtol=1e-5, atol=1e-5)
    v, i = F.max_pool2d(tg.tensor(x, dtype=tg.float32, device=device), 3, 2, 1,
                        ceil_mode=True, return_indices=True)
    ref, ref_i = _max_pool_ref(x.astype(np.float32), (3, 3), (2, 2), (1, 1), (1, 1), True)
    np.testing.assert_array_equal(host(v), ref)
    np.testing.assert_array_equal(host(i), ref_i)


def test_pool_second_order():
    x = tg.tensor(rng.standard_normal((1, 1, 4, 4)), requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda x: F.avg_pool2d(x, 2, 1, 1) ** 2, (x,))
    assert tg.autograd.gradgradcheck(lambda x: F.max_pool2d(x, 2) ** 2, (x,))
