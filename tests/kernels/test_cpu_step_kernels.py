"""CPU kernels of the training steps' hot paths (issue 14): cross-entropy's compiled loops
(nn_loops), the convolution's compiled im2col and kept columns (conv_loops, conv.py), batch
norm's loops over short planes (nn_loops), each against the form it replaces or a float64
reference."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

jit = importlib.import_module("tritongrad.kernels.numpy.jit")
nn = importlib.import_module("tritongrad.kernels.numpy.nn")
conv = importlib.import_module("tritongrad.kernels.numpy.conv")
bf16 = importlib.import_module("tritongrad.kernels.numpy.bf16")
onednn = importlib.import_module("tritongrad.kernels.numpy.onednn")

needs_loops = pytest.mark.skipif(not jit.enabled(), reason="the compiled CPU loops are off")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# -- cross-entropy ---------------------------------------------------------------------------

def _ce_both(x, t, g, ignore, eps):
    loss, lse = nn.cross_entropy(x, t, ignore, eps)
    d = nn.cross_entropy_backward(g, x, t, lse, ignore, eps)
    with jit.disabled():
        loss0, lse0 = nn.cross_entropy(x, t, ignore, eps)
        d0 = nn.cross_entropy_backward(g, x, t, lse0, ignore, eps)
    return (loss, lse, d), (loss0, lse0, d0)


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("eps", [0.0, 0.05])
@pytest.mark.parametrize("n,c", [(256, 10), (64, 10), (1024, 96), (7, 1), (5, 3000), (0, 4)])
def test_cross_entropy_loops_match_the_numpy_form(dtype, eps, n, c):
    rng = np.random.default_rng(n * 7 + c)
    x = (rng.standard_normal((n, c)) * 4).astype(dtype)
    t = rng.integers(0, c, n)
    t[::5] = -100
    g = rng.standard_normal(n).astype(dtype)
    got, want = _ce_both(x, t, g, -100, eps)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    # against float64 by hand
    x64 = x.astype(np.float64)
    lse = np.log(np.exp(x64 - x64.max(1, keepdims=True)).sum(1)) + x64.max(1) if c else x64
    if n and c:
        np.testing.assert_allclose(got[1], lse, rtol=tol, atol=tol)


@needs_loops
def test_cross_entropy_loops_non_finite_rows_and_targets():
    x = np.array([[1, np.nan, 2], [np.inf, 1, 2], [-np.inf] * 3, [1, 2, np.inf], [3, 1, 2]],
                 np.float32)
    t = np.array([0, 1, 2, -100, 2])
    g = np.ones(5, np.float32)
    for eps in (0.0, 0.2):
        got, want = _ce_both(x, t, g, -100, eps)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    for form in (jit.disabled, _nothing):
        with form(), pytest.raises(IndexError, match="Target 5 is out of bounds"):
            nn.cross_entropy(x, np.array([0, 5, 1, 1, 0]), -100, 0.0)
        with form(), pytest.raises(IndexError, match="Target -3 is out of bounds"):
            nn.cross_entropy_backward(g, x, np.array([0, 1, -3, 1, 0]), np.zeros(5, np.float32),
                                      -100, 0.0)


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


@needs_loops
def test_cross_entropy_loops_scalar_gradient_and_low_precision():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 7)).astype(np.float32)
    t = rng.integers(0, 7, 32)
    got, want = _ce_both(x, t, np.float32(0.25), -100, 0.1)  # (a mean's broadcast gradient)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    for low in (x.astype(np.float16), bf16.round_(x).view(bf16.BF16Array)):
        g = np.ones(32, np.float32).astype(low.dtype) if low.dtype == np.float16 else \
            bf16.round_(np.ones(32, np.float32)).view(bf16.BF16Array)
        got, want = _ce_both(low, t, g, -100, 0.0)
        for a, b in zip(got, want):
            assert type(a) is type(b) and a.dtype == b.dtype
            np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32),
                                       rtol=1e-2, atol=1e-2)


# -- convolution: compiled im2col, kept columns ----------------------------------------------

CONV_CASES = [
    # (N, C, H, W, O, KH, KW, stride, padding, dilation)
    (4, 1, 8, 8, 16, 3, 3, (1, 1), ((1, 1), (1, 1)), (1, 1)),
    (3, 16, 8, 8, 32, 3, 3, (1, 1), ((1, 1), (1, 1)), (1, 1)),
    (2, 5, 9, 7, 4, 3, 2, (2, 1), ((0, 2), (1, 0)), (1, 1)),
    (2, 3, 11, 10, 6, 3, 3, (1, 2), ((2, 2), (1, 1)), (2, 3)),
    (1, 2, 5, 5, 3, 5, 5, (1, 1), ((0, 0), (0, 0)), (1, 1)),
    (2, 4, 6, 6, 8, 1, 1, (2, 2), ((0, 0), (0, 0)), (1, 1)),
]


def _numpy_columns(x, KH, KW, OH, OW, stride, pd, dilation):
    win = conv._windows(conv._channels_last(x, pd), KH, KW, OH, OW, stride, dilation)
    return conv._columns(win, 1)


def _out_size(size, k, s, pads, d):
    return (size + pads[0] + pads[1] - d * (k - 1) - 1) // s + 1


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_im2col_loop_is_the_numpy_copy(dtype, case):
    N, C, H, W, _, KH, KW, stride, pd, dil = case
    x = np.random.default_rng(N * C + H).standard_normal((N, C, H, W)).astype(dtype)
    OH = _out_size(H, KH, stride[0], pd[0], dil[0])
    OW = _out_size(W, KW, stride[1], pd[1], dil[1])
    loops = jit.loops("conv_loops")

    def im2col(a):
        cols = np.empty((N * OH * OW, KH * KW * C), dtype)
        loops.im2col(a, KH, KW, stride[0], stride[1], dil[0], dil[1], pd[0][0], pd[1][0],
                     H + sum(pd[0]), W + sum(pd[1]), OH, OW, cols)
        return cols[None]

    want = _numpy_columns(x, KH, KW, OH, OW, stride, pd, dil)
    np.testing.assert_array_equal(im2col(x), want)
    # a non-contiguous input reads the same
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    np.testing.assert_array_equal(im2col(xt), want)
    # and the kernel's choice (loop or NumPy by the window row's length) gives the same
    cols = conv._im2col(x, KH, KW, OH, OW, stride, pd, dil, 1)
    assert cols.shape == want.shape and cols.dtype == want.dtype
    np.testing.assert_array_equal(cols, want)


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("groups", [1, 2])
def test_kept_columns_give_the_same_gradients(case, groups, numpy_convs):
    N, C, H, W, O, KH, KW, stride, pd, dil = case
    if C % groups or O % groups:
        pytest.skip("channels not divisible by groups")
    rng = np.random.default_rng(H * W + groups)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((O, C // groups, KH, KW)).astype(np.float32)
    b = rng.standard_normal(O).astype(np.float32)
    padding = (pd[0], pd[1])
    y, cols = conv.conv2d_columns(x, w, b, stride, padding, dil, groups)
    np.testing.assert_array_equal(y, conv.conv2d(x, w, b, stride, padding, dil, groups))
    assert cols is not None and cols.shape[0] == groups
    g = rng.standard_normal(y.shape).astype(np.float32)
    needs = (True, True, True)
    want = conv.conv2d_backward(g, x, w, stride, padding, dil, groups, needs)
    got = conv.conv2d_backward_columns(g, x, w, stride, padding, dil, groups, needs, cols)
    for a, b_ in zip(got, want):
        np.testing.assert_array_equal(a, b_)
    # columns that do not fit this call are gathered again, not read
    wrong = np.zeros((groups, cols.shape[1] + 1, cols.shape[2]), np.float32)
    for bad in (wrong, cols.astype(np.float64), None):
        got = conv.conv2d_backward_columns(g, x, w, stride, padding, dil, groups, needs, bad)
        for a, b_ in zip(got, want):
            np.testing.assert_array_equal(a, b_)


@pytest.fixture
def numpy_convs():
    """The kept columns are the NumPy path's: oneDNN (kernels/numpy/onednn.py) makes none."""
    with onednn.use("off"):
        yield


def test_kept_columns_of_depthwise_and_empty_convolutions():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    y, cols = conv.conv2d_columns(x, w, None, (1, 1), (1, 1), (1, 1), 4)
    assert cols is None
    np.testing.assert_array_equal(y, conv.conv2d(x, w, None, (1, 1), (1, 1), (1, 1), 4))
    y, cols = conv.conv2d_columns(x[:0], np.ones((3, 4, 3, 3), np.float32), None, (1, 1),
                                  (1, 1), (1, 1), 1)
    assert y.shape == (0, 3, 5, 5) and cols is None


def test_kept_columns_of_half_inputs_are_float32(numpy_convs):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float16)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float16)
    y, cols = conv.conv2d_columns(x, w, None, (1, 1), (1, 1), (1, 1), 1)
    assert y.dtype == np.float16 and cols.dtype == np.float32
    g = rng.standard_normal(y.shape).astype(np.float16)
    want = conv.conv2d_backward(g, x, w, (1, 1), (1, 1), (1, 1), 1, (True, True, True))
    got = conv.conv2d_backward_columns(g, x, w, (1, 1), (1, 1), (1, 1), 1, (True, True, True),
                                       cols)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


# -- batch norm over short planes --------------------------------------------------------------

@needs_loops
@pytest.mark.parametrize("shape", [(64, 64, 4, 4), (8, 5, 3, 7), (16, 12), (3, 4, 1, 1),
                                   (0, 3, 2, 2), (5, 2, 7, 9)])
@pytest.mark.parametrize("affine", [True, False])
def test_short_plane_batch_norm_loops_match_the_channel_loops(shape, affine):
    loops = jit.loops("nn_loops")
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    n, c = shape[:2]
    plane = int(np.prod(shape[2:]))
    x3 = x.reshape(n, c, plane)
    g3 = g.reshape(n, c, plane)
    w = rng.standard_normal(c).astype(np.float32) if affine else np.empty(0, np.float32)
    b = rng.standard_normal(c).astype(np.float32) if affine else np.empty(0, np.float32)
    outs = []
    for fwd, bwd in ((loops.batch_norm, loops.batch_norm_backward),
                     (loops.batch_norm_short, loops.batch_norm_backward_short)):
        y, mean, var = np.empty_like(x3), np.empty(c, np.float32), np.empty(c, np.float32)
        fwd(x3, w, b, 1e-5, y, mean, var)
        dx, s, bs = np.empty_like(x3), np.empty(c), np.empty(c)
        bwd(g3, x3, w, mean, var, 1e-5, dx, s, bs)
        outs.append((y, mean, var, dx, s, bs))
    for a, b_ in zip(*outs):
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-5)
    # the kernel (which picks the short loops below 64 values a plane) against float64
    y, mean, var = nn.batch_norm(x, w if affine else None, b if affine else None, 1e-5)
    if n:
        x64 = x.reshape(n, c, -1).astype(np.float64)
        m64 = x64.mean((0, 2))
        v64 = x64.var((0, 2))
        np.testing.assert_allclose(mean, m64, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(var, v64, rtol=1e-5, atol=1e-5)
        want = (x64 - m64[:, None]) / np.sqrt(v64[:, None] + 1e-5)
        if affine:
            want = want * w[:, None] + b[:, None]
        np.testing.assert_allclose(y.reshape(n, c, -1), want, rtol=1e-4, atol=1e-4)


@needs_loops
def test_short_plane_batch_norm_non_finite_channels():
    x = np.random.default_rng(0).standard_normal((4, 3, 2, 2)).astype(np.float32)
    x[1, 0, 0, 0] = np.nan
    x[2, 1, 1, 1] = np.inf
    y, mean, _ = nn.batch_norm(x, None, None, 1e-5)
    with jit.disabled():
        y0, mean0, _ = nn.batch_norm(x, None, None, 1e-5)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(y0))
    np.testing.assert_allclose(y[:, 2], y0[:, 2], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.isnan(mean), np.isnan(mean0))
