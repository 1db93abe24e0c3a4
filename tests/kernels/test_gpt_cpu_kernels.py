"""The NumPy kernels the GPT and MLP steps spend their CPU time in, on the paths their speed-ups
added: float32 GELU's tail arithmetic (accuracy over a dense grid and at the extremes) and its
derivative computed with the forward, ReLU's backward as a bit mask, layer norm's backward in
terms of x - mean, and attention's block-wide softmax shift with its per-row fallback, over
strided (B, H, T, D) views. References are float64 (math.erfc, the whole-matrix attention).
Each test runs with the compiled loops (kernels/numpy/nn_loops.py) and with the NumPy forms."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

nn = importlib.import_module("tritongrad.kernels.numpy.nn")
na = importlib.import_module("tritongrad.kernels.numpy.attention")
reference = importlib.import_module("tritongrad.kernels.triton.attention").attention_reference

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("cpu_forms")]

_ERFC = np.vectorize(math.erfc)


def _phi(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF in float64, no cancellation in either tail."""
    return 0.5 * _ERFC(-x / math.sqrt(2.0))


def test_gelu_float32_accuracy_on_a_dense_grid():
    # the A&S 7.1.26 tail is 7.5e-8 off Phi; float32 rounding adds a few 1e-8
    x = np.arange(-10.0, 10.0, 1e-3).astype(np.float32)
    xd = x.astype(np.float64)
    phi = _phi(xd)
    dens = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    y = nn.gelu(x, "none")
    d = nn.gelu_backward(np.ones_like(x), x, "none")
    assert y.dtype == d.dtype == np.float32
    err_y = np.abs(y - xd * phi)
    assert np.all(err_y <= 2e-7 * np.maximum(1.0, np.abs(xd)))
    assert np.abs(d - (phi + xd * dens)).max() <= 3e-7
    # the forward keeps relative accuracy in the negative tail (relu(x) is exactly 0 there)
    tail = xd < -3
    assert np.all(err_y[tail] <= 3e-2 * np.abs(xd * phi)[tail])
    assert np.all(y[tail] < 0)


def test_gelu_float32_extremes_and_non_finite():
    x = np.array([-np.inf, -3.4e38, -1e20, -30.0, -0.0, 0.0, 1e-30, 30.0, 1e20, 3.4e38,
                  np.inf, np.nan], dtype=np.float32)
    y = nn.gelu(x, "none")
    d = nn.gelu_backward(np.ones_like(x), x, "none")
    assert np.isnan(y[0]) and np.isnan(y[-1]) and y[-2] == np.inf
    np.testing.assert_array_equal(y[1:4], 0.0)
    np.testing.assert_array_equal(y[4:6], 0.0)
    np.testing.assert_array_equal(y[7:10], x[7:10])  # relu(x) there, no overflow at 3.4e38
    assert abs(y[6] - 5e-31) <= 1e-37
    # GELU' is Phi + x phi: NaN at both infinities (inf * 0), as PyTorch's
    assert np.isnan(d[0]) and np.isnan(d[-2]) and np.isnan(d[-1])
    np.testing.assert_allclose(d[1:4], 0.0, atol=0)
    np.testing.assert_allclose(d[4:7], 0.5, atol=1e-7)
    np.testing.assert_allclose(d[7:10], 1.0, atol=0)


def test_gelu_float32_strided_input_and_gradient():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((8, 12)).astype(np.float32)
    x, g = base[:, ::2], rng.standard_normal((12, 8)).astype(np.float32).T[:, :6]
    xd = x.astype(np.float64)
    dref = _phi(xd) + xd * np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(nn.gelu(x, "none"), xd * _phi(xd), atol=3e-7)
    np.testing.assert_allclose(nn.gelu_backward(g, x, "none"), g * dref, atol=1e-6)


_EXTREMES = [-np.inf, -3.4e38, -1e20, -30.0, -9.0, -0.0, 0.0, 1e-30, 0.5, 9.0, 1e20, 3.4e38,
             np.inf, np.nan]


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, "bfloat16"])
def test_gelu_derivative_from_the_forward_is_the_backwards(dtype, approximate):
    # gelu(with_grad=True) shares the forward's passes; the derivative it returns must give
    # gelu_backward's result exactly, and the forward must not change
    from tritongrad.kernels.numpy.bf16 import rounded
    rng = np.random.default_rng(3)
    vals = np.concatenate([rng.standard_normal(3000) * 4, _EXTREMES])
    x = rounded(vals) if dtype == "bfloat16" else vals.astype(dtype)
    g = rounded(rng.standard_normal(vals.size)) if dtype == "bfloat16" else \
        rng.standard_normal(vals.size).astype(dtype)
    y, d = nn.gelu(x, approximate, with_grad=True)
    np.testing.assert_array_equal(y, nn.gelu(x, approximate))
    assert type(y) is type(x) and y.dtype == x.dtype
    got = nn.gelu_backward(g, x, approximate, derivative=d)
    want = nn.gelu_backward(g, x, approximate)
    assert type(got) is type(want) and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_gelu_float32_blocks_join_exactly(monkeypatch):
    # Note [GELU in cache-sized blocks]: blocks of 1000 over 4800 strided elements (the last
    # one short, extremes in several) give the single block's bits
    rng = np.random.default_rng(5)
    base = (rng.standard_normal((60, 160)) * 6).astype(np.float32)
    base[::7, ::9] = np.float32(1e30)
    base[3, 11], base[40, 101], base[59, 159] = -np.inf, np.nan, np.inf
    x, g = base[:, ::2], base[:, 1::2].copy()
    whole = nn.gelu(x, "none", with_grad=True) + (nn.gelu_backward(g, x, "none"),)
    monkeypatch.setattr(nn, "GELU_BLOCK", 1000)
    blocked = nn.gelu(x, "none", with_grad=True) + (nn.gelu_backward(g, x, "none"),)
    for a, b in zip(whole, blocked):
        assert a.shape == x.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_relu_backward_bit_mask(dtype):
    # zero where y <= 0 (an inf or NaN gradient there too: a select, not a product), the
    # gradient kept where y > 0 or y is NaN; +0, never -0, where dropped
    ew = importlib.import_module("tritongrad.kernels.numpy.elementwise")
    rng = np.random.default_rng(4)
    y = np.maximum(rng.standard_normal((33, 65)), 0).astype(dtype)
    g = rng.standard_normal((33, 65)).astype(dtype)
    y[0, :6] = [0, 0, -0.0, np.nan, 1, 0]
    g[0, :6] = [np.inf, np.nan, -1, 2, -np.inf, -3]
    got = ew.binary("relu_backward", g, y)
    want = np.array([np.where(yv > 0 or yv != yv, gv, 0.0) for yv, gv in
                     zip(y.ravel().tolist(), g.ravel().tolist())], dtype).reshape(y.shape)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got[y <= 0]).any()
    out = np.empty_like(g)  # out=, a strided gradient and a 0-d pair take the same select
    out_t = out.T
    assert ew.binary("relu_backward", g.T, y.T, out=out_t) is out_t
    np.testing.assert_array_equal(out, want)
    assert ew.binary("relu_backward", np.array(2.0, dtype), np.array(0.0, dtype)) == 0


@pytest.mark.parametrize("weighted", [True, False])
def test_layer_norm_backward_with_a_mean_offset(weighted):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((33, 40)) * 0.5 + 7.0).astype(np.float32)
    g = rng.standard_normal((33, 40)).astype(np.float32)
    w = rng.standard_normal(40).astype(np.float32) if weighted else None
    _, mean, rstd = nn.layer_norm(x, w, None, 1e-5)
    dx, dw, db = nn.layer_norm_backward(g, x, w, mean, rstd)
    xd, gd = x.astype(np.float64), g.astype(np.float64)
    mu = xd.mean(1, keepdims=True)
    rs = 1 / np.sqrt(xd.var(1, keepdims=True) + 1e-5)
    xh = (xd - mu) * rs
    gw = gd * w if weighted else gd
    ref = rs * (gw - gw.mean(1, keepdims=True) - xh * (gw * xh).mean(1, keepdims=True))
    np.testing.assert_allclose(dx, ref, rtol=1e-4, atol=1e-5)
    if weighted:
        np.testing.assert_allclose(dw, (gd * xh).sum(0), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(db, gd.sum(0), rtol=1e-5, atol=1e-5)
    else:
        assert dw is None and db is None


def _qkv_views(rng, b, h, t, d, spread):
    """q, k, v as the strided (B, H, T, D) views of one (B, T, 3 H D) projection; the query
    rows of head 0 scaled by ``spread`` (scores far above every other row's)."""
    qkv = rng.standard_normal((b, t, 3 * h * d)).astype(np.float32)
    qkv[:, :, :d] *= spread
    return [qkv[..., i * h * d:(i + 1) * h * d].reshape(b, t, h, d).transpose(0, 2, 1, 3)
            for i in range(3)]


@pytest.mark.parametrize("blocks", [(512, 512), (16, 8)])
@pytest.mark.parametrize("spread", [1.0, 40.0])
@pytest.mark.parametrize("causal", [True, False])
def test_attention_block_shift_and_row_fallback(monkeypatch, blocks, spread, causal):
    # spread 40: head 0's scores reach ~100s, others ~1, so a block-wide shift would leave
    # the other rows' sums far below 1e-9: their query block must be redone with row maxima
    monkeypatch.setattr(na, "BLOCK_Q", blocks[0])
    monkeypatch.setattr(na, "BLOCK_K", blocks[1])
    rng = np.random.default_rng(2)
    q, k, v = _qkv_views(rng, 2, 3, 37, 8, spread)
    # the gradient as it comes back through the output projection: a (B, T, H, D) transpose
    g = rng.standard_normal((2, 37, 3, 8)).astype(np.float32).transpose(0, 2, 1, 3)
    scale = 8 ** -0.5
    out, lse = na.attention(q, k, v, scale, causal)
    r_out, r_lse, r_dq, r_dk, r_dv = reference(q, k, v, scale, causal, g)
    tol = {"rtol": 2e-4, "atol": 2e-5 * spread}
    np.testing.assert_allclose(out, r_out, **tol)
    np.testing.assert_allclose(lse, r_lse, rtol=1e-5, atol=1e-5)
    dq, dk, dv = na.attention_backward(g, q, k, v, out, lse, scale, causal)
    for got, ref in ((dq, r_dq), (dk, r_dk), (dv, r_dv)):
        np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-4 * spread)
        # laid out as the (B, T, H, D) inputs: the way back to the projection views it
        assert got.transpose(0, 2, 1, 3).flags.c_contiguous


def test_attention_row_fallback_is_taken(softmax_block_calls, monkeypatch):
    calls = softmax_block_calls
    rng = np.random.default_rng(3)
    q, k, v = _qkv_views(rng, 1, 2, 16, 8, 40.0)
    na.attention(q, k, v, 8 ** -0.5, True)
    assert calls == [False, True]
    calls.clear()
    q, k, v = _qkv_views(rng, 1, 2, 16, 8, 1.0)
    na.attention(q, k, v, 8 ** -0.5, True)
    assert calls == []  # one block pair: the whole softmax, no online one
    monkeypatch.setattr(na, "BLOCK_K", 8)
    na.attention(q, k, v, 8 ** -0.5, True)
    assert calls == [False]
