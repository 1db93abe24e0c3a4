"""3-D pooling and the transposed 3-D convolution (nn/_convolution.py, nn/pooling.py,
nn/conv.py): values and indices against NumPy float64 loop references written here, gradients
with gradcheck (float64) and against central differences on the device, output shapes, the
modules, and PyTorch's errors; on the CPU and the emulated CUDA device."""

import itertools

import numpy as np
import pytest
from tritongrad.nn import _convolution

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(33)


def one_case_on_cuda(device, case, cases, pick):
    """The Triton interpreter takes tens of milliseconds a launch: on the emulated device the
    value tests run one (the richest) case of each table."""
    if device == "cuda" and case != cases[pick]:
        pytest.skip("one case on the emulated device")


def _triple(v):
    return tuple(v) if isinstance(v, tuple) else (v,) * 3


def _out_len(n, k, s, p, d, ceil):
    """PyTorch's pooling output length: with ceil mode the last window may start in the right
    padding, not past it."""
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


# -- NumPy references: loops over the output positions and the taps of their windows -----------

def max_pool_ref(x, k, s, p, d, ceil):
    """x (N, C, *sizes): the max of each window and its flat index in the unpadded input
    (the first maximum in row-major tap order)."""
    sizes = x.shape[2:]
    out = [_out_len(*a, ceil) for a in zip(sizes, k, s, p, d)]
    val = np.full(x.shape[:2] + tuple(out), -np.inf)
    idx = np.zeros(x.shape[:2] + tuple(out), dtype=np.int64)
    for o in itertools.product(*map(range, out)):
        for t in itertools.product(*map(range, k)):
            pos = [oi * si - pi + ti * di for oi, si, pi, ti, di in zip(o, s, p, t, d)]
            if all(0 <= q < n for q, n in zip(pos, sizes)):
                v = x[(slice(None), slice(None)) + tuple(pos)]
                better = v > val[(...,) + o]
                val[(...,) + o] = np.where(better, v, val[(...,) + o])
                idx[(...,) + o] = np.where(better, np.ravel_multi_index(pos, sizes),
                                           idx[(...,) + o])
    return val, idx


def avg_pool_ref(x, k, s, p, ceil, include_pad, override):
    """PyTorch's average: the window clipped to the padded input; its size (or the size of
    its part inside the input, without ``include_pad``) divides the sum of the input part."""
    sizes = x.shape[2:]
    out = [_out_len(n, kk, ss, pp, 1, ceil) for n, kk, ss, pp in zip(sizes, k, s, p)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*map(range, out)):
        lo = [oi * si - pi for oi, si, pi in zip(o, s, p)]
        hi = [min(a + kk, n + pp) for a, kk, n, pp in zip(lo, k, sizes, p)]
        padded_size = np.prod([b - a for a, b in zip(lo, hi)])
        lo, hi = [max(a, 0) for a in lo], [min(b, n) for b, n in zip(hi, sizes)]
        inside = (...,) + tuple(slice(a, b) for a, b in zip(lo, hi))
        div = override or (padded_size if include_pad else np.prod([b - a for a, b in
                                                                    zip(lo, hi)]))
        y[(...,) + o] = x[inside].sum(axis=(2, 3, 4)) / div
    return y


def adaptive_ref(x, out, reduce):
    """Window i along a dim of n covers [floor(i n / o), ceil((i + 1) n / o)); ``reduce``
    'mean', or 'max' (values and flat indices of the first maximum)."""
    sizes = x.shape[2:]
    val = np.zeros(x.shape[:2] + tuple(out))
    idx = np.zeros(x.shape[:2] + tuple(out), dtype=np.int64)
    for o in itertools.product(*map(range, out)):
        bounds = [((i * n) // m, -(-(i + 1) * n // m)) for i, n, m in zip(o, sizes, out)]
        win = x[(...,) + tuple(slice(a, b) for a, b in bounds)]
        if reduce == "mean":
            val[(...,) + o] = win.mean(axis=(2, 3, 4))
            continue
        flat = win.reshape(x.shape[:2] + (-1,))
        val[(...,) + o] = flat.max(-1)
        local = np.unravel_index(flat.argmax(-1), win.shape[2:])
        idx[(...,) + o] = np.ravel_multi_index(
            tuple(a + li for (a, _), li in zip(bounds, local)), sizes)
    return val, idx


def conv_transpose_ref(x, w, b, stride, pad, out_pad, dilation, groups):
    """Direct transposed convolution: each input position scatters x * w over its window of
    the output, which is then cropped by ``pad`` (``out_pad`` more on the far side).
    x (N, C_in, *sizes), w (C_in, C_out / g, *kernel)."""
    n, c = x.shape[:2]
    og, kernel, sizes = w.shape[1], w.shape[2:], x.shape[2:]
    out = [(i - 1) * s - 2 * p + d * (k - 1) + o + 1 for i, s, p, d, k, o
           in zip(sizes, stride, pad, dilation, kernel, out_pad)]
    y = np.zeros((n, og * groups) + tuple(o + 2 * p for o, p in zip(out, pad)))
    cg = c // groups
    for g in range(groups):
        xs, ws = x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg]
        for i in itertools.product(*map(range, sizes)):
            for t in itertools.product(*map(range, kernel)):
                pos = tuple(ii * s + tt * d for ii, s, tt, d in zip(i, stride, t, dilation))
                y[(slice(None), slice(g * og, (g + 1) * og)) + pos] += \
                    xs[(...,) + i] @ ws[(...,) + t]
    y = y[(...,) + tuple(slice(p, p + o) for p, o in zip(pad, out))]
    return y if b is None else y + b.reshape(1, -1, 1, 1, 1)


# -- max pooling --------------------------------------------------------------------------------

MAX_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),                            # tiling windows, a last row in none
    (3, 2, 1, 1, True),
    ((3, 2, 2), (2, 1, 2), (1, 0, 1), (1, 2, 1), True),
    ((2, 3, 2), (3, 2, 2), (1, 1, 0), 1, False),
    ((1, 2, 3), 2, 0, (3, 1, 1), True),
]


@pytest.mark.parametrize("k, s, p, d, ceil", MAX_CASES)
def test_max_pool3d_values_and_indices(device, k, s, p, d, ceil):
    one_case_on_cuda(device, (k, s, p, d, ceil), MAX_CASES, 2)
    x = rng.standard_normal((2, 3, 5, 6, 7))
    y, idx = F.max_pool3d(tg.tensor(x, device=device), k, s, p, d, ceil_mode=ceil,
                          return_indices=True)
    ref, ref_idx = max_pool_ref(x, _triple(k), _triple(s if s is not None else k), _triple(p),
                                _triple(d), ceil)
    np.testing.assert_array_equal(host(y), ref)
    np.testing.assert_array_equal(host(idx), ref_idx)
    assert idx.dtype is tg.int64
    # unbatched input, through the module
    m = nn.MaxPool3d(k, s, p, d, return_indices=True, ceil_mode=ceil)
    y1, idx1 = m(tg.tensor(x[1], device=device))
    np.testing.assert_array_equal(host(y1), ref[1])
    np.testing.assert_array_equal(host(idx1), ref_idx[1])


def test_max_pool3d_gradients():
    for k, s, p, d, ceil in MAX_CASES[1:3]:
        x = tg.tensor(rng.standard_normal((1, 2, 4, 5, 4)), requires_grad=True)
        assert tg.autograd.gradcheck(
            lambda t, a=(k, s, p, d, ceil): F.max_pool3d(t, *a), (x,))
    # overlapping windows: each window's gradient goes to its (one) maximum
    x = tg.tensor(rng.standard_normal((1, 1, 3, 3, 3)), requires_grad=True)
    F.max_pool3d(x, 2, stride=1).sum().backward()
    _, idx = max_pool_ref(host(x), (2,) * 3, (1,) * 3, (0,) * 3, (1,) * 3, False)
    np.testing.assert_array_equal(host(x.grad).reshape(-1), np.bincount(idx.reshape(-1),
                                                                         minlength=27))


def test_pool3d_gradients_on_device(device):
    x = tg.tensor(rng.standard_normal((1, 2, 3, 4, 5)), device=device)
    assert_grads_match(lambda t: F.max_pool3d(t, 2, 1, 1, ceil_mode=True), [x])
    assert_grads_match(lambda t: F.avg_pool3d(t, (2, 3, 2), (1, 2, 2), 1, True, False), [x])
    assert_grads_match(lambda t: F.adaptive_avg_pool3d(t, (2, 3, 2)), [x])
    assert_grads_match(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2)), [x])


# -- average pooling ----------------------------------------------------------------------------

AVG_CASES = [  # kernel, stride, padding, ceil_mode
    (2, None, 0, False),
    (3, 2, 1, True),
    ((3, 2, 2), (2, 1, 2), (1, 0, 1), True),
    ((2, 3, 2), (3, 2, 2), (1, 1, 0), False),
    ((3, 3, 4), (2, 2, 3), 1, True),                   # ceil mode's last window in the padding
]


@pytest.mark.parametrize("k, s, p, ceil", AVG_CASES)
@pytest.mark.parametrize("include_pad, override", [(True, None), (False, None), (True, 5)])
def test_avg_pool3d_values(device, k, s, p, ceil, include_pad, override):
    one_case_on_cuda(device, (k, s, p, ceil, include_pad, override),
                     [AVG_CASES[4] + (False, None)], 0)
    x = rng.standard_normal((2, 3, 5, 6, 7))
    y = F.avg_pool3d(tg.tensor(x, device=device), k, s, p, ceil, include_pad, override)
    ref = avg_pool_ref(x, _triple(k), _triple(s if s is not None else k), _triple(p), ceil,
                       include_pad, override)
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-14)


def test_avg_pool3d_gradients():
    x = tg.tensor(rng.standard_normal((1, 1, 4, 5, 4)), requires_grad=True)
    for (k, s, p, ceil), (include_pad, override) in zip(
            AVG_CASES[1:], itertools.cycle(((True, None), (False, None), (False, 3)))):
        assert tg.autograd.gradcheck(lambda t, a=(k, s, p, ceil, include_pad, override):
                                     F.avg_pool3d(t, *a), (x,))
    assert tg.autograd.gradgradcheck(lambda t: F.avg_pool3d(t, 2, 1, 1) ** 2,
                                     (tg.tensor(rng.standard_normal((1, 1, 3, 3, 3)),
                                                requires_grad=True),))


# -- adaptive pooling ---------------------------------------------------------------------------

ADAPTIVE_CASES = [2, (3, 4, 5), (5, None, 7), (1, 1, 1), (7, 3, None)]


@pytest.mark.parametrize("out", ADAPTIVE_CASES)
def test_adaptive_pool3d_values_and_indices(device, out):
    one_case_on_cuda(device, out, ADAPTIVE_CASES, 1)
    x = rng.standard_normal((2, 3, 5, 6, 7))
    full = (out,) * 3 if isinstance(out, int) else tuple(n if o is None else o
                                                          for n, o in zip((5, 6, 7), out))
    ref_avg, _ = adaptive_ref(x, full, "mean")
    ref_max, ref_idx = adaptive_ref(x, full, "max")
    xt = tg.tensor(x, device=device)
    np.testing.assert_allclose(host(F.adaptive_avg_pool3d(xt, out)), ref_avg, rtol=1e-12,
                               atol=1e-14)
    y, idx = F.adaptive_max_pool3d(xt, out, return_indices=True)
    np.testing.assert_array_equal(host(y), ref_max)
    np.testing.assert_array_equal(host(idx), ref_idx)
    # unbatched, through the modules
    y0 = nn.AdaptiveAvgPool3d(out)(tg.tensor(x[0], device=device))
    np.testing.assert_allclose(host(y0), ref_avg[0], rtol=1e-12, atol=1e-14)
    y0, idx0 = nn.AdaptiveMaxPool3d(out, return_indices=True)(tg.tensor(x[0], device=device))
    np.testing.assert_array_equal(host(y0), ref_max[0])
    np.testing.assert_array_equal(host(idx0), ref_idx[0])


def test_adaptive_pool3d_gradients():
    x = tg.tensor(rng.standard_normal((1, 2, 5, 4, 3)), requires_grad=True)
    for out in ((2, 3, 2), (3, None, 1)):
        assert tg.autograd.gradcheck(lambda t, o=out: F.adaptive_avg_pool3d(t, o), (x,))
        assert tg.autograd.gradcheck(lambda t, o=out: F.adaptive_max_pool3d(t, o), (x,))


def test_adaptive_avg_pool2d_is_unchanged_by_the_nd_code():
    # the n-dim code runs the 2-D pool as A_h @ x @ A_w^T: compare with that product
    x = rng.standard_normal((2, 3, 7, 8))
    ah, aw = _convolution._adaptive_matrix(7, 3), _convolution._adaptive_matrix(8, 5)
    np.testing.assert_allclose(host(F.adaptive_avg_pool2d(tg.tensor(x), (3, 5))),
                               ah @ x @ aw.T, rtol=1e-12, atol=1e-14)


# -- transposed convolution ---------------------------------------------------------------------

CONVT_CASES = [  # stride, padding, output_padding, dilation, groups
    (1, 0, 0, 1, 1),
    (2, 1, 1, 1, 1),
    ((2, 1, 3), (0, 1, 1), (1, 0, 2), 1, 2),           # output_padding past padding: bias only
    ((1, 2, 2), (2, 1, 0), (0, 1, 1), (2, 2, 1), 4),
    ((2, 1, 1), 1, (1, 0, 0), (1, 3, 2), 2),
]


@pytest.mark.parametrize("stride, padding, out_pad, dilation, groups", CONVT_CASES)
def test_conv_transpose3d_matches_the_scatter_reference(device, stride, padding, out_pad,
                                                        dilation, groups):
    one_case_on_cuda(device, (stride, padding, out_pad, dilation, groups), CONVT_CASES, 2)
    x, w = rng.standard_normal((2, 4, 3, 4, 3)), rng.standard_normal((4, 3, 3, 2, 3))
    b = rng.standard_normal(3 * groups)
    args = (stride, padding, out_pad, groups, dilation)
    y = F.conv_transpose3d(tg.tensor(x, device=device), tg.tensor(w, device=device),
                           tg.tensor(b, device=device), *args)
    ref = conv_transpose_ref(x, w, b, _triple(stride), _triple(padding), _triple(out_pad),
                             _triple(dilation), groups)
    assert y.shape == ref.shape
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-12)
    y0 = F.conv_transpose3d(tg.tensor(x[0], device=device), tg.tensor(w, device=device),
                            None, *args)  # unbatched
    np.testing.assert_allclose(host(y0), ref[0] - b[:, None, None, None], rtol=1e-12,
                               atol=1e-12)
    if device == "cpu":
        # the adjoint of conv3d: <convt(x), v> = <x, conv3d(v)> (conv3d's extra rows cropped)
        v = rng.standard_normal(ref.shape)
        back = F.conv3d(tg.tensor(v), tg.tensor(w), None, stride, padding, dilation, groups)
        lhs = float((F.conv_transpose3d(tg.tensor(x), tg.tensor(w), None, *args)
                     * tg.tensor(v)).sum())
        rhs = float((tg.tensor(x) * back[:, :, :3, :4, :3]).sum())
        assert lhs == pytest.approx(rhs, rel=1e-12)


def test_conv_transpose3d_gradients(device):
    x = tg.tensor(rng.standard_normal((1, 4, 2, 3, 2)), device=device)
    w = tg.tensor(rng.standard_normal((4, 1, 2, 2, 3)), device=device)
    b = tg.tensor(rng.standard_normal(2), device=device)
    fn = lambda x, w, b: F.conv_transpose3d(x, w, b, (2, 1, 2), 1, (1, 0, 1), 2,
                                            (1, 2, 1))
    assert_grads_match(fn, [x, w, b])
    if device == "cpu":
        leaves = tuple(t.detach().requires_grad_(True) for t in (x, w, b))
        assert tg.autograd.gradcheck(fn, leaves)
        assert tg.autograd.gradgradcheck(lambda x, w: F.conv_transpose3d(x, w, None, 2),
                                         leaves[:2])


@pytest.mark.parametrize("nd", [1, 2])
def test_the_col2im_composite_matches_the_fused_transposed_convolution(device, nd):
    one_case_on_cuda(device, nd, [1, 2], 1)
    # the composite that conv_transpose3d uses, on the shapes the fused op takes
    x, w = rng.standard_normal((2, 4) + (4, 5)[:nd]), rng.standard_normal((4, 3) + (3, 2)[:nd])
    b = rng.standard_normal(6)
    args = ((2, 1)[:nd], (1, 0)[:nd], (1, 0)[:nd], 2, (1, 2)[:nd])
    op = f"conv_transpose{nd}d"
    t = [tg.tensor(v, device=device) for v in (x, w, b)]
    fused = _convolution._conv_transpose(*t, *args, nd, op)
    composite = _convolution._conv_transpose(*t, *args, nd, op, fused=False)
    np.testing.assert_allclose(host(composite), host(fused), rtol=1e-12, atol=1e-12)
    # integers take the composite: exact
    xi, wi = rng.integers(-3, 4, (1, 2) + (3, 3)[:nd]), rng.integers(-3, 4, (2, 2) + (2, 2)[:nd])
    yi = getattr(F, op)(tg.tensor(xi), tg.tensor(wi), None, 2, 1, 1)
    ref = conv_transpose_ref(xi.reshape(xi.shape + (1,) * (3 - nd)).astype(float),
                             wi.reshape(wi.shape + (1,) * (3 - nd)).astype(float), None,
                             (2,) * nd + (1,) * (3 - nd), (1,) * nd + (0,) * (3 - nd),
                             (1,) * nd + (0,) * (3 - nd), (1, 1, 1), 1)
    assert yi.dtype is tg.int64
    np.testing.assert_array_equal(host(yi), ref.reshape(yi.shape))


def test_conv_transpose3d_module():
    m = nn.ConvTranspose3d(4, 6, (3, 2, 1), stride=(2, 1, 1), groups=2, output_padding=(1, 0, 0),
                           bias=False)
    assert m.weight.shape == (4, 3, 3, 2, 1) and m.bias is None
    assert repr(m) == ("ConvTranspose3d(4, 6, kernel_size=(3, 2, 1), stride=(2, 1, 1), "
                       "output_padding=(1, 0, 0), groups=2, bias=False)")
    up = nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1)
    bound = 1 / (2 * 27) ** 0.5  # fan_in = out_channels / groups * kernel positions
    assert float(up.weight.abs().max()) <= bound and float(up.bias.abs().max()) <= bound
    x = tg.randn(1, 4, 3, 4, 5)
    assert up(x).shape == (1, 2, 5, 7, 9)
    assert up(x, output_size=[6, 8, 10]).shape == (1, 2, 6, 8, 10)
    assert up(x, output_size=[1, 2, 5, 8, 9]).shape == (1, 2, 5, 8, 9)
    assert up(x[0], output_size=[6, 7, 10]).shape == (2, 6, 7, 10)
    ref = conv_transpose_ref(host(x).astype(float), host(up.weight).astype(float),
                             host(up.bias).astype(float), (2,) * 3, (1,) * 3, (1, 0, 1),
                             (1,) * 3, 1)
    np.testing.assert_allclose(host(up(x, output_size=[6, 7, 10])), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"requested an output size of \[9, 8, 10\], but valid "
                                         r"sizes range from \[5, 7, 9\] to \[6, 8, 10\]"):
        up(x, output_size=[9, 8, 10])
    with pytest.raises(ValueError, match=r"ConvTranspose3D: for 5D input, output_size must have "
                                         r"3 or 5 elements \(got 2\)"):
        up(x, output_size=[6, 8])
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for '
                                         'ConvTranspose3d'):
        nn.ConvTranspose3d(2, 2, 3, padding_mode="reflect")


def test_conv_transpose3d_errors():
    x, w = tg.randn(1, 2, 3, 3, 3), tg.randn(2, 2, 3, 3, 3)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride "
                                           "or dilation"):
        F.conv_transpose3d(x, w, stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size "
                                           r"\[2, 2, 3, 3, 3\], expected input\[1, 3, 3, 3, 3\] "
                                           r"to have 2 channels, but got 3 channels instead"):
        F.conv_transpose3d(tg.randn(1, 3, 3, 3, 3), w)
    with pytest.raises(RuntimeError, match=r"Expected 4D \(unbatched\) or 5D \(batched\) input "
                                           r"to conv_transpose3d, but got input of size: \[3, 3\]"):
        F.conv_transpose3d(tg.randn(3, 3), w)
    with pytest.raises(RuntimeError, match=r"Given input size per channel: \(1 x 1 x 1\)\. "
                                           r"Calculated output size per channel: "
                                           r"\(-3 x -3 x -3\)\. Output size is too small"):
        F.conv_transpose3d(tg.randn(1, 2, 1, 1, 1), w, padding=3)
    with pytest.raises(RuntimeError, match="expected stride to be a single integer value or a "
                                           "list of 3 values"):
        F.conv_transpose3d(x, w, stride=(2, 2))
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        F.conv_transpose3d(x, w, padding=-1)


# -- shapes, modules, errors --------------------------------------------------------------------

def test_pool3d_modules_and_shapes():
    x = tg.randn(2, 3, 8, 9, 10)
    assert nn.MaxPool3d(2)(x).shape == (2, 3, 4, 4, 5)
    assert nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True)(x).shape == (2, 3, 5, 5, 6)
    assert nn.MaxPool3d((3, 2, 2), stride=(2, 1, 2), dilation=(1, 2, 1))(x).shape == \
        (2, 3, 3, 7, 5)
    assert nn.AvgPool3d(3, stride=2, padding=1)(x).shape == (2, 3, 4, 5, 5)
    assert nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True)(x[0]).shape == (3, 5, 5, 6)
    assert nn.AdaptiveAvgPool3d((5, None, 7))(x).shape == (2, 3, 5, 9, 7)
    assert nn.AdaptiveMaxPool3d(1)(x[0]).shape == (3, 1, 1, 1)
    assert F.adaptive_avg_pool3d(x, 0).shape == (2, 3, 0, 0, 0)
    assert repr(nn.MaxPool3d(2, 1, 1, 2, ceil_mode=True)) == (
        "MaxPool3d(kernel_size=2, stride=1, padding=1, dilation=2, ceil_mode=True)")
    assert repr(nn.AvgPool3d(3, 2, 1, True, False, 4)) == (
        "AvgPool3d(kernel_size=3, stride=2, padding=1)")
    assert repr(nn.AdaptiveMaxPool3d((2, None, 3))) == "AdaptiveMaxPool3d(output_size=(2, None, 3))"
    # the divisor override and count_include_pad reach the functional from the module
    x1 = tg.tensor(rng.standard_normal((1, 1, 3, 3, 3)))
    np.testing.assert_allclose(host(nn.AvgPool3d(3, padding=1, divisor_override=4)(x1)),
                               avg_pool_ref(host(x1), (3,) * 3, (3,) * 3, (1,) * 3, False,
                                            True, 4), rtol=1e-12)
    np.testing.assert_allclose(host(nn.AvgPool3d(3, padding=1, count_include_pad=False)(x1)),
                               avg_pool_ref(host(x1), (3,) * 3, (3,) * 3, (1,) * 3, False,
                                            False, None), rtol=1e-12)


HALF = "pad should be at most half of effective kernel size, but got pad=2, "
POOL_ERRORS = [  # (the call on a (1, 2, 5, 5, 5) input, PyTorch's message)
    (lambda x: F.max_pool3d(x, 3, padding=2), HALF + "kernel_size=3 and dilation=1"),
    # avg_pool3d words it as max pooling does (dilation 1), unlike avg_pool2d
    (lambda x: F.avg_pool3d(x, 3, padding=2), HALF + "kernel_size=3 and dilation=1"),
    (lambda x: F.max_pool3d(x, 2, dilation=2, padding=(0, 2, 0)),
     HALF + "kernel_size=2 and dilation=2"),
    (lambda x: F.max_pool3d(x, 2, padding=-1), "pad must be non-negative, but got pad: -1"),
    (lambda x: F.max_pool3d(x[0, 0], 2), r"non-empty 4D or 5D \(batch mode\) tensor expected"),
    (lambda x: F.avg_pool3d(x[0, 0], 2), r"non-empty 4D or 5D \(batch mode\) tensor expected"),
    (lambda x: F.max_pool3d(x[:, :, :2], 3),
     r"Given input size: \(2x2x5x5\)\. Calculated output size: \(2x0x1x1\)\. Output size"),
    # avg_pool3d wants the unpadded input to hold a kernel, even where padding would fit one
    (lambda x: F.avg_pool3d(x[:, :, :2], 3, padding=1),
     r"input image \(T: 2 H: 5 W: 5\) smaller than kernel size \(kT: 3 kH: 3 kW: 3\)"),
    (lambda x: F.avg_pool3d(x, 2, divisor_override=0), "divisor must be not zero"),
    (lambda x: F.max_pool3d(x, (2, 2)), "kernel_size"),
    (lambda x: F.max_pool3d(x, 0, 1), "greater than zero"),
    (lambda x: F.adaptive_avg_pool3d(x[0, 0, 0], 2),
     r"adaptive_avg_pool3d\(\): Expected 4D or 5D tensor, but got \[5, 5\]"),
    (lambda x: F.adaptive_max_pool3d(x[0, 0, 0], 2),
     r"adaptive_max_pool3d\(\): Expected 4D or 5D tensor, but got \[5, 5\]"),
    (lambda x: F.adaptive_avg_pool3d(x, (2, 2)), "adaptive_avg_pool3d: output_size must be 3"),
    (lambda x: F.adaptive_max_pool3d(x, (2, 2)), "adaptive_max_pool3d: output_size must be 3"),
    (lambda x: F.adaptive_avg_pool3d(x, (2, 2, -1)),
     "elements of output_size must be greater than or equal to 0"),
]


@pytest.mark.parametrize("fn, match", POOL_ERRORS)
def test_pool3d_errors(fn, match):
    with pytest.raises(RuntimeError, match=match):
        fn(tg.randn(1, 2, 5, 5, 5))


def test_pool3d_float32_on_device(device):
    # float32 through the device's kernels (gather, max, sum, matmul) against float64
    x = rng.standard_normal((2, 2, 4, 5, 6)).astype(np.float32)
    xt = tg.tensor(x, device=device)
    v, i = F.max_pool3d(xt, 3, 2, 1, ceil_mode=True, return_indices=True)
    ref, ref_i = max_pool_ref(x.astype(np.float64), (3,) * 3, (2,) * 3, (1,) * 3, (1,) * 3, True)
    assert v.dtype is tg.float32 and v.device.type == device
    np.testing.assert_array_equal(host(v), ref)
    np.testing.assert_array_equal(host(i), ref_i)
    a = F.avg_pool3d(xt, 2, 1, 1, count_include_pad=False)
    np.testing.assert_allclose(host(a), avg_pool_ref(x.astype(np.float64), (2,) * 3, (1,) * 3,
                                                     (1,) * 3, False, False, None), rtol=1e-5,
                               atol=1e-6)
    w = rng.standard_normal((2, 3, 2, 2, 2)).astype(np.float32)
    y = F.conv_transpose3d(xt, tg.tensor(w, device=device), None, 2, 1, 1)
    assert y.dtype is tg.float32
    np.testing.assert_allclose(host(y), conv_transpose_ref(
        x.astype(np.float64), w.astype(np.float64), None, (2,) * 3, (1,) * 3, (1,) * 3,
        (1,) * 3, 1), rtol=1e-5, atol=1e-5)


def test_pools_are_one_op_to_autocast(device):
    # the pools' sums and matmuls are not cast on their own: a float32 input stays float32
    # where the pool has no policy (CUDA; 2-D on the CPU), as PyTorch's kernels
    x = tg.tensor(rng.standard_normal((1, 2, 4, 4, 4)), dtype=tg.float32, device=device)
    low = tg.float16 if device == "cuda" else tg.bfloat16
    with tg.autocast(device, dtype=low):
        assert F.adaptive_avg_pool2d(x[0], 2).dtype is tg.float32
        assert F.avg_pool2d(x[0], 2).dtype is tg.float32
        three_d = [F.avg_pool3d(x, 2), F.adaptive_avg_pool3d(x, (2, 1, 3)), F.max_pool3d(x, 2),
                   F.adaptive_max_pool3d(x, 2)]
        assert all(y.dtype is tg.float32 for y in three_d)
        assert F.conv_transpose3d(x, tg.randn(2, 1, 2, 2, 2, device=device)).dtype is low
        if device == "cuda":  # (on the CPU the 3-D pools are float32 ops)
            assert F.avg_pool3d(x.to(low), 2).dtype is low
            assert F.adaptive_avg_pool3d(x.to(low), 2).dtype is low
    ref = adaptive_ref(host(x).astype(np.float64), (2, 1, 3), "mean")[0]
    np.testing.assert_allclose(host(three_d[1]), ref, rtol=1e-6, atol=1e-6)
