"""nn.functional against PyTorch's behaviour, for what a differential sweep found differing:
per-sample ``weight`` of l1/mse/huber losses, 0-d GELU, in-place threshold's gradient, NaN
through softshrink, empty-batch max pooling backward, integer average pooling, p = inf power
pooling, fully masked SDPA rows, NaN grid coordinates, PyTorch's ``multi_head_attention_forward``
signature, ``conv_tbc``, ``native_channel_shuffle``, uint8 bilinear/bicubic resizing, and
errors. Each is checked against NumPy float64 references, finite differences or explicit
expected behaviour; the last tests repeat a selection against PyTorch when it is installed."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import tritongrad as tg

F = tg.nn.functional
RNG = np.random.default_rng(32)


def _t(a, grad=False):
    return tg.tensor(np.asarray(a), requires_grad=grad)


def _np(t):
    return t.detach().numpy()


def _r(*shape):
    return RNG.standard_normal(shape)


# -- per-sample weights of l1 / mse / huber ------------------------------------------------------

def _huber_np(d, delta=1.0):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


@pytest.mark.parametrize("op", ["l1_loss", "mse_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_weighted_elementwise_losses_against_numpy(op, reduction):
    x, y, w = _r(3, 4), _r(3, 4), RNG.uniform(0.1, 2.0, (3, 4))
    per = {"l1_loss": np.abs, "mse_loss": np.square, "huber_loss": _huber_np}[op](x - y) * w
    want = {"none": per, "sum": per.sum(),
            # l1/mse: the weighted sum over the weights' sum; huber: over the element count
            "mean": per.mean() if op == "huber_loss" else per.sum() / w.sum()}[reduction]
    got = getattr(F, op)(_t(x), _t(y), reduction=reduction, weight=_t(w))
    np.testing.assert_allclose(_np(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["l1_loss", "mse_loss", "huber_loss"])
def test_weighted_losses_gradients_by_finite_differences(op):
    x, y = _t(_r(2, 3), True), _t(_r(2, 3) + 3.0, True)  # (away from l1's kink)
    w = _t(RNG.uniform(0.1, 2.0, (2, 3)), True)
    assert tg.autograd.gradcheck(lambda a, b, c: getattr(F, op)(a, b, weight=c), (x, y, w))


@pytest.mark.parametrize("op", ["l1_loss", "mse_loss", "huber_loss"])
def test_weight_of_another_size_is_refused(op):
    # PyTorch compares the weight's size with the input's: no broadcasting
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        getattr(F, op)(_t(_r(3, 4)), _t(_r(3, 4)), weight=_t(np.ones(4)))


def test_l1_loss_has_the_weight_keyword():
    assert list(inspect.signature(F.l1_loss).parameters)[-1] == "weight"


# -- activations ---------------------------------------------------------------------------------

@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_a_0d_tensor(approximate):
    v = 0.37
    if approximate == "none":
        want = v * 0.5 * (1 + math.erf(v / math.sqrt(2)))
    else:
        want = 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    x = _t(v, True)
    y = F.gelu(x, approximate=approximate)
    assert y.shape == () and abs(float(y) - want) < 1e-14
    assert tg.autograd.gradcheck(lambda a: F.gelu(a, approximate=approximate), (x,))
    x32 = tg.tensor(v, dtype=tg.float32, requires_grad=True)
    F.gelu(x32, approximate=approximate).backward()
    h = 1e-6
    fd = (_gelu_ref(v + h, approximate) - _gelu_ref(v - h, approximate)) / (2 * h)
    assert x32.grad.shape == () and abs(float(x32.grad) - fd) < 1e-5


def _gelu_ref(v, approximate):
    if approximate == "none":
        return v * 0.5 * (1 + math.erf(v / math.sqrt(2)))
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))


def test_inplace_threshold_gradient_masks_by_the_input():
    # value (2.0) > threshold (0.1): the result cannot tell replaced values from kept ones
    a = np.array([-1.0, 0.5, 0.05, 2.0])
    x = _t(a, True)
    y = F.threshold(x.clone(), 0.1, 2.0, inplace=True)
    np.testing.assert_array_equal(_np(y), [2.0, 0.5, 2.0, 2.0])
    (y * _t([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [0.0, 2.0, 0.0, 4.0])
    x2 = _t(a, True)  # value <= threshold: the in-place node reading its result
    y2 = F.threshold(x2.clone(), 0.1, -5.0, inplace=True)
    assert y2.grad_fn.name() == "ThresholdBackward1"
    y2.sum().backward()
    np.testing.assert_array_equal(_np(x2.grad), [0.0, 1.0, 0.0, 1.0])


def test_softshrink_keeps_nan():
    y = _np(F.softshrink(_t([math.nan, 0.2, -0.2, 1.0, -1.0]), 0.5))
    assert math.isnan(y[0])
    np.testing.assert_array_equal(y[1:], [0.0, 0.0, 0.5, -0.5])


# -- pooling -------------------------------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_of_an_empty_batch_has_a_zero_gradient(nd):
    x = _t(np.zeros((0, 3) + (4,) * nd), True)
    y = getattr(F, f"max_pool{nd}d")(x, 2)
    assert tuple(y.shape) == (0, 3) + (2,) * nd
    y.sum().backward()
    assert tuple(x.grad.shape) == tuple(x.shape)


def test_integer_average_pooling_truncates_in_its_dtype():
    a = np.array([[[-3, 4, 5, -8, 7, 7]]], dtype=np.int64)
    y = F.avg_pool1d(_t(a), 2)
    assert y.dtype == tg.int64
    np.testing.assert_array_equal(_np(y), np.trunc(a.reshape(1, 1, 3, 2).sum(-1) / 2))
    y = F.avg_pool1d(_t(a), 3, 2, 1, count_include_pad=False)  # windows of 2, 3, 3 values
    np.testing.assert_array_equal(_np(y), [[[0, 0, 2]]])  # 1/2, 6/3, 7/3 truncated
    y = F.avg_pool2d(_t(a[None]), (1, 2), divisor_override=3)
    assert y.dtype == tg.int64
    np.testing.assert_array_equal(_np(y), [[[[0, -1, 4]]]])  # 1/3, -3/3, 14/3 truncated


@pytest.mark.parametrize("nd", [1, 2])
def test_lp_pool_of_infinite_p_is_max_of_magnitudes(nd):
    a = _r(1, 2, *([4] * nd))
    fn = getattr(F, f"lp_pool{nd}d")
    blocks = np.abs(a).reshape((1, 2) + sum(((2, 2),) * nd, ()))
    axes = tuple(range(3, 3 + 2 * nd, 2))
    np.testing.assert_allclose(_np(fn(_t(a), math.inf, 2)), blocks.max(axes))
    np.testing.assert_allclose(_np(fn(_t(a), -math.inf, 2)), blocks.min(axes))


# -- attention -----------------------------------------------------------------------------------

def _sdpa_np(q, k, v, keep):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    s = np.where(keep, s, -np.inf)
    with np.errstate(invalid="ignore"):
        w = np.exp(s - s.max(-1, keepdims=True))
        w = w / w.sum(-1, keepdims=True)
    return np.nan_to_num(w) @ v


def test_sdpa_fully_masked_rows_give_zeros_and_finite_gradients():
    q, k, v = _r(1, 2, 3, 4), _r(1, 2, 5, 4), _r(1, 2, 5, 4)
    keep = RNG.random((3, 5)) > 0.3
    keep[1] = False  # query 1 sees no key
    keep[0, 0] = True
    keep[2, 0] = True
    qt, kt, vt = _t(q, True), _t(k, True), _t(v, True)
    out = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=_t(keep))
    np.testing.assert_allclose(_np(out), _sdpa_np(q, k, v, keep), atol=1e-12)
    assert not _np(out)[..., 1, :].any()
    out.sum().backward()
    for g in (qt.grad, kt.grad, vt.grad):
        assert np.isfinite(_np(g)).all()
    assert not _np(qt.grad)[..., 1, :].any()
    assert tg.autograd.gradcheck(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=_t(keep)),
        (_t(q, True), _t(k, True), _t(v, True)))


def test_sdpa_refuses_an_integer_mask():
    q = _t(_r(1, 1, 3, 4))
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=_t(np.ones((3, 3), dtype=np.int64)))


def _mha_np(q, k, v, wq, wk, wv, bias, wo, bo, heads):
    """Sequence-first (L, N, E) multi-head attention, weights averaged over the heads."""
    bq, bk, bv = np.split(bias, 3)
    qp, kp, vp = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv
    length, n, e = qp.shape
    d = e // heads

    def split(x):  # (S, N, E) -> (N, H, S, D)
        return x.reshape(x.shape[0], n, heads, d).transpose(1, 2, 0, 3)
    s = split(qp) @ np.swapaxes(split(kp), -1, -2) / math.sqrt(d)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    o = (w @ split(vp)).transpose(2, 0, 1, 3).reshape(length, n, e)
    return o @ wo.T + bo, w.mean(1)


def test_multi_head_attention_forward_has_pytorchs_signature():
    names = list(inspect.signature(F.multi_head_attention_forward).parameters)
    assert names[:6] == ["query", "key", "value", "embed_dim_to_check", "num_heads",
                         "in_proj_weight"]
    assert {"use_separate_proj_weight", "q_proj_weight", "static_k", "static_v"} <= set(names)
    q, k, v = _r(3, 2, 8), _r(4, 2, 8), _r(4, 2, 8)
    w, b, wo, bo = _r(24, 8), _r(24), _r(8, 8), _r(8)
    out, weights = F.multi_head_attention_forward(
        _t(q), _t(k), _t(v), 8, 2, _t(w), _t(b), None, None, False, 0.0, _t(wo), _t(bo),
        training=False)
    want, want_w = _mha_np(q, k, v, *np.split(w, 3), b, wo, bo, 2)
    np.testing.assert_allclose(_np(out), want, atol=1e-12)
    np.testing.assert_allclose(_np(weights), want_w, atol=1e-12)
    # separate projections (keys and values of other sizes), the same computation
    wk, wv = _r(8, 6), _r(8, 5)
    k6, v5 = _r(4, 2, 6), _r(4, 2, 5)
    out, _ = F.multi_head_attention_forward(
        _t(q), _t(k6), _t(v5), 8, 2, None, _t(b), None, None, False, 0.0, _t(wo), _t(bo),
        training=False, use_separate_proj_weight=True, q_proj_weight=_t(w[:8]),
        k_proj_weight=_t(wk), v_proj_weight=_t(wv))
    np.testing.assert_allclose(_np(out), _mha_np(q, k6, v5, w[:8], wk, wv, b, wo, bo, 2)[0],
                               atol=1e-12)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6"):
        F.multi_head_attention_forward(_t(q), _t(k), _t(v), 6, 2, _t(w), _t(b), None, None,
                                       False, 0.0, _t(wo), _t(bo))


def test_multi_head_attention_forward_static_keys_and_values():
    q, k, v = _r(3, 2, 8), _r(4, 2, 8), _r(4, 2, 8)
    w, b, wo, bo = _r(24, 8), _r(24), _r(8, 8), _r(8)
    sk, sv = _r(4, 5, 4), _r(4, 5, 4)  # (N * heads, S', head_dim)
    out, weights = F.multi_head_attention_forward(
        _t(q), _t(k), _t(v), 8, 2, _t(w), _t(b), None, None, False, 0.0, _t(wo), _t(bo),
        training=False, static_k=_t(sk), static_v=_t(sv), average_attn_weights=False)
    qp = (q @ w[:8].T + b[:8]).reshape(3, 2, 2, 4).transpose(1, 2, 0, 3)  # (N, H, L, D)
    s = qp @ np.swapaxes(sk.reshape(2, 2, 5, 4), -1, -2) / 2.0
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ sv.reshape(2, 2, 5, 4)).transpose(2, 0, 1, 3).reshape(3, 2, 8) @ wo.T + bo
    np.testing.assert_allclose(_np(out), o, atol=1e-12)
    np.testing.assert_allclose(_np(weights), p, atol=1e-12)
    with pytest.raises(AssertionError, match="expecting static_k.size"):
        F.multi_head_attention_forward(
            _t(q), _t(k), _t(v), 8, 2, _t(w), _t(b), None, None, False, 0.0, _t(wo), _t(bo),
            static_k=_t(_r(3, 5, 4)))


def test_multihead_attention_module_still_runs():
    m = tg.nn.MultiheadAttention(8, 2)
    x = tg.randn(3, 2, 8)
    out, weights = m(x, x, x)
    assert tuple(out.shape) == (3, 2, 8) and tuple(weights.shape) == (2, 3, 3)


# -- sampling ------------------------------------------------------------------------------------

def test_grid_sample_with_nan_coordinates():
    x = _t(np.arange(9.0).reshape(1, 1, 3, 3))
    g = _t(np.array([[[[math.nan, 0.0], [0.0, 0.0]]]]))
    y = _np(F.grid_sample(x, g, mode="bilinear", align_corners=False))
    assert math.isnan(y[0, 0, 0, 0]) and y[0, 0, 0, 1] == 4.0  # NaN weights, as PyTorch
    y = _np(F.grid_sample(x, g, mode="nearest", align_corners=False))
    np.testing.assert_array_equal(y.ravel(), [0.0, 4.0])  # a NaN tap is outside: zeros


def test_uint8_bilinear_and_bicubic_resize_like_images():
    a = RNG.integers(0, 256, (1, 2, 5, 7)).astype(np.uint8)
    for mode in ("bilinear", "bicubic"):
        y = F.interpolate(_t(a), size=(8, 4), mode=mode)
        assert y.dtype == tg.uint8
        ref = F.interpolate(_t(a.astype(np.float64)), size=(8, 4), mode=mode)
        # the float result rounded, within the passes' intermediate rounding (and clamped)
        d = np.abs(_np(y).astype(int) - np.clip(np.round(_np(ref)), 0, 255))
        assert d.max() <= 2
    with pytest.raises(NotImplementedError, match="linear mode needs a floating point"):
        F.interpolate(_t(a[0]), size=4, mode="linear")


def test_interpolate_without_size_or_scale():
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(_t(_r(1, 2, 3)))


def test_affine_grid_batch_mismatch_is_a_clear_error():
    with pytest.raises(RuntimeError, match="asks for 1 matrices, theta holds 2"):
        F.affine_grid(_t(_r(2, 2, 3)), [1, 3, 4, 5], False)


# -- new functions -------------------------------------------------------------------------------

@pytest.mark.parametrize("pad", [0, 1, -1])
def test_conv_tbc_against_numpy(pad):
    x, w, b = _r(6, 2, 3), _r(3, 3, 4), _r(4)
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0))) if pad >= 0 else x[-pad:pad]
    t = xp.shape[0] - 3 + 1
    want = np.stack([sum(xp[i + j] @ w[j] for j in range(3)) for i in range(t)]) + b
    xt, wt, bt = _t(x, True), _t(w, True), _t(b, True)
    np.testing.assert_allclose(_np(F.conv_tbc(xt, wt, bt, pad)), want, atol=1e-12)
    assert tg.autograd.gradcheck(lambda a, c, d: F.conv_tbc(a, c, d, pad), (xt, wt, bt))


def test_conv_tbc_errors():
    with pytest.raises(RuntimeError, match="Input must have 3 dims"):
        F.conv_tbc(_t(_r(6, 3)), _t(_r(3, 3, 4)), _t(_r(4)))
    with pytest.raises(RuntimeError, match="Input dim 2 \\(input channels\\) is not =="):
        F.conv_tbc(_t(_r(6, 2, 2)), _t(_r(3, 3, 4)), _t(_r(4)))
    with pytest.raises(RuntimeError, match="Bias size must equal dim 2"):
        F.conv_tbc(_t(_r(6, 2, 3)), _t(_r(3, 3, 4)), _t(_r(3)))


def test_native_channel_shuffle_is_channel_shuffle():
    a = _r(2, 6, 2)
    np.testing.assert_array_equal(_np(F.native_channel_shuffle(_t(a), 3)),
                                  a.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3).reshape(2, 6, 2))


def test_fractional_pool_with_indices_signature():
    for fn in (F.fractional_max_pool2d_with_indices, F.fractional_max_pool3d_with_indices):
        assert inspect.signature(fn).parameters["return_indices"].default is False
    out = F.fractional_max_pool2d_with_indices(tg.randn(1, 1, 6, 6), 2, 3)
    assert isinstance(out, tuple) and len(out) == 2


# -- errors --------------------------------------------------------------------------------------

def test_linear_errors_in_pytorchs_words():
    x, w = _t(_r(3, 4)), _t(_r(4))
    assert tuple(F.linear(x, w).shape) == (3,)  # (a 1-D weight without a bias: a matmul)
    with pytest.raises(RuntimeError, match="mat2 must be a matrix, got 1-D tensor"):
        F.linear(x, w, _t(_r()))
    w32 = tg.randn(5, 4, dtype=tg.float32)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but "
                                           "got: double != float"):
        F.linear(x, w32)
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype, but got "
                                           "Double and Float"):
        F.linear(x, w32, tg.randn(5, dtype=tg.float32))
    with pytest.raises(RuntimeError, match="both arguments to linear need to be at least 1D"):
        F.linear(_t(1.0), w32)


def test_one_dimensional_pools_name_themselves():
    with pytest.raises(RuntimeError, match="max_pool1d: pad should be at most half"):
        F.max_pool1d(_t(_r(1, 2, 6)), 2, padding=2)
    with pytest.raises(RuntimeError, match="avg_pool1d: pad should be at most half"):
        F.avg_pool1d(_t(_r(1, 2, 6)), 2, padding=2)


def test_unfold_of_too_few_dims_is_an_index_error():
    with pytest.raises(IndexError, match=r"in range of \[-2, 1\], but got 2"):
        F.unfold(_t(_r(3, 4)), 2)
    with pytest.raises(RuntimeError, match="Only 3D or 4D input"):
        F.unfold(_t(_r(1, 1, 3, 4, 5)), 2)


def test_multi_head_attention_heads_must_divide_the_embedding():
    q = _t(_r(3, 2, 8))
    with pytest.raises(AssertionError, match="embed_dim 8 not divisible by num_heads 3"):
        F.multi_head_attention_forward(q, q, q, 8, 3, _t(_r(24, 8)), None, None, None, False,
                                       0.0, _t(_r(8, 8)), None)


# -- against PyTorch -----------------------------------------------------------------------------

TORCH_CASES = {
    "l1_weight_mean": lambda L, a, b, w: L.nn.functional.l1_loss(a, b, weight=w),
    "mse_weight_sum": lambda L, a, b, w: L.nn.functional.mse_loss(a, b, reduction="sum",
                                                                  weight=w),
    "huber_weight_mean": lambda L, a, b, w: L.nn.functional.huber_loss(a, b, delta=0.5,
                                                                       weight=w),
    "gelu_0d": lambda L, a, b, w: L.nn.functional.gelu(a[0, 0]),
    "softshrink": lambda L, a, b, w: L.nn.functional.softshrink(a / (a > 0.5), 0.3),
    "lp_pool_inf": lambda L, a, b, w: L.nn.functional.lp_pool1d(a[None], math.inf, 2),
    "conv_tbc": lambda L, a, b, w: L.nn.functional.conv_tbc(  # (PyTorch's wants contiguous)
        a[None].expand(3, 3, 4).contiguous(), b[:, :, None].expand(3, 4, 2).contiguous(),
        w[0, :2], 1),
    "sdpa_masked_row": lambda L, a, b, w: L.nn.functional.scaled_dot_product_attention(
        a[None], b[None], w[None], attn_mask=(a[:, :3] > 0.3) & (a[:, :1] > -0.5)),
    "mha": lambda L, a, b, w: L.nn.functional.multi_head_attention_forward(
        a[:, None], b[:, None], w[:, None], 4, 2, L.cat([a, b, w, a]), None, None, None,
        False, 0.0, L.cat([a, b[:1]]), None, training=False, average_attn_weights=False),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_torch(name):
    torch = pytest.importorskip("torch", minversion="2.13")
    data = [RNG.standard_normal((3, 4)) for _ in range(3)]
    data[2] = np.abs(data[2]) + 0.1
    outs, grads = [], []
    for L in (torch, tg):
        ts = [L.tensor(d, requires_grad=True) for d in data]
        out = TORCH_CASES[name](L, *ts)
        out = out if isinstance(out, tuple) else (out,)
        outs.append([o.detach().numpy() for o in out])
        loss = sum((o * o).sum() for o in out if o.requires_grad)
        grads.append([None if g is None else g.numpy() for g in
                      L.autograd.grad(loss, ts, allow_unused=True)])
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    for a, b in zip(*grads):
        assert (a is None) == (b is None) or not np.any(a if a is not None else b)
        if a is not None and b is not None:
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def test_cosine_similarity_gradient_by_finite_differences():
    # with the eps clamp active PyTorch's gradient disagrees with finite differences (its
    # gradcheck fails); ours is the derivative of the value both libraries compute
    a, b = _r(3, 4), _r(3, 4)
    assert tg.autograd.gradcheck(lambda x, y: F.cosine_similarity(x, y, eps=10.0),
                                 (_t(a, True), _t(b, True)))


def test_cosine_similarity_clamped_value_against_torch():
    torch = pytest.importorskip("torch", minversion="2.13")
    a, b = _r(3, 4), _r(3, 4)
    fn = torch.nn.functional.cosine_similarity
    np.testing.assert_allclose(
        _np(F.cosine_similarity(_t(a), _t(b), eps=10.0)),
        fn(torch.tensor(a), torch.tensor(b), eps=10.0).numpy(), rtol=1e-12)
