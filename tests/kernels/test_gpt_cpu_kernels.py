"""The NumPy kernels the GPT step spends its CPU time in, on the paths their speed-ups added:
float32 GELU's tail arithmetic (accuracy over a dense grid and at the extremes), layer norm's
backward in terms of x - mean, and attention's block-wide softmax shift with its per-row
fallback, over strided (B, H, T, D) views. References are float64 (math.erfc, the whole-matrix
attention)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

nn = importlib.import_module("tritongrad.kernels.numpy.nn")
na = importlib.import_module("tritongrad.kernels.numpy.attention")
reference = importlib.import_module("tritongrad.kernels.triton.attention").attention_reference

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

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
    g = rng.standard_normal(q.shape).astype(np.float32)
    scale = 8 ** -0.5
    out, lse = na.attention(q, k, v, scale, causal)
    r_out, r_lse, r_dq, r_dk, r_dv = reference(q, k, v, scale, causal, g)
    tol = dict(rtol=2e-4, atol=2e-5 * spread)
    np.testing.assert_allclose(out, r_out, **tol)
    np.testing.assert_allclose(lse, r_lse, rtol=1e-5, atol=1e-5)
    dq, dk, dv = na.attention_backward(g, q, k, v, out, lse, scale, causal)
    for got, ref in ((dq, r_dq), (dk, r_dk), (dv, r_dv)):
        np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-4 * spread)


def test_attention_row_fallback_is_taken(monkeypatch):
    rng = np.random.default_rng(3)
    q, k, v = _qkv_views(rng, 1, 2, 16, 8, 40.0)
    calls = []
    block = na._softmax_block

    def spy(*args, rowwise):
        calls.append(rowwise)
        return block(*args, rowwise=rowwise)

    monkeypatch.setattr(na, "_softmax_block", spy)
    na.attention(q, k, v, 8 ** -0.5, True)
    assert calls == [False, True]
    calls.clear()
    q, k, v = _qkv_views(rng, 1, 2, 16, 8, 1.0)
    na.attention(q, k, v, 8 ** -0.5, True)
    assert calls == [False]
