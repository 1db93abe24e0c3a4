"""Normalization and embedding against PyTorch 2.13 (sweep 36): batch norm out of training
on float16/bfloat16 inputs with float32 statistics, the running statistics' both-or-neither
rule, the channel-count errors of the batch norm modules, RMS norm's single rounding and
result dtype, layer/RMS norm's shape messages, instance norm on (N, C) inputs and the sparse
embedding's node name. References are float64 NumPy; PyTorch only where it is installed."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(36)


def _np(t) -> np.ndarray:
    t = t.detach()
    if t.dtype in (tg.float16, tg.bfloat16):  # (NumPy has no bfloat16)
        t = t.float()
    return t.cpu().numpy().astype(np.float64)


def _rounded(a: np.ndarray, dtype) -> np.ndarray:
    """float64 ``a`` rounded once to ``dtype`` (through tritongrad's own conversion)."""
    return _np(tg.tensor(a).to(dtype))


def _bn_eval_ref(x, rm, rv, w, b, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return ((x - rm.reshape(shape)) / np.sqrt(rv.reshape(shape) + eps) * w.reshape(shape)
            + b.reshape(shape))


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
def test_batch_norm_eval_half_input_keeps_its_dtype(dtype, device):
    # float32 running statistics and parameters with a half input: computed in float32 and
    # rounded once to the input's dtype (the result was float32)
    x = _rounded(rng.standard_normal((4, 3, 5)), dtype)
    rm, rv = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    rm, rv, w, b = (_rounded(a, tg.float32) for a in (rm, rv, w, b))
    xt = tg.tensor(x, device=device).to(dtype).requires_grad_()
    wt = tg.tensor(w, dtype=tg.float32, device=device, requires_grad=True)
    bt = tg.tensor(b, dtype=tg.float32, device=device, requires_grad=True)
    y = F.batch_norm(xt, tg.tensor(rm, dtype=tg.float32, device=device),
                     tg.tensor(rv, dtype=tg.float32, device=device), wt, bt, training=False)
    assert y.dtype is dtype
    ulp = 2.0 ** (-7 if dtype is tg.bfloat16 else -10)  # (one rounding of float32 values)
    np.testing.assert_allclose(_np(y), _bn_eval_ref(x, rm, rv, w, b), rtol=ulp, atol=1e-5)
    g = rng.standard_normal(y.shape)
    y.backward(tg.tensor(g, device=device).to(dtype))
    g = _rounded(g, dtype)
    xhat = (x - rm[:, None]) / np.sqrt(rv[:, None] + 1e-5)
    assert wt.grad.dtype is tg.float32 and xt.grad.dtype is dtype
    np.testing.assert_allclose(_np(wt.grad), (g * xhat).sum((0, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(bt.grad), g.sum((0, 2)), rtol=1e-5, atol=1e-5)
    tol = 1e-2 if dtype is tg.bfloat16 else 2e-3
    np.testing.assert_allclose(_np(xt.grad), g * (w / np.sqrt(rv + 1e-5))[:, None], rtol=tol,
                               atol=tol)


def test_batch_norm_eval_float64_values_and_gradients():
    x, rm, rv = rng.standard_normal((3, 2, 4)), rng.standard_normal(2), rng.uniform(1, 2, 2)
    w, b = rng.standard_normal(2), rng.standard_normal(2)
    xt, wt, bt = (tg.tensor(a, requires_grad=True) for a in (x, w, b))
    y = F.batch_norm(xt, tg.tensor(rm), tg.tensor(rv), wt, bt, training=False, eps=1e-3)
    np.testing.assert_allclose(_np(y), _bn_eval_ref(x, rm, rv, w, b, 1e-3), rtol=1e-12)
    y.sum().backward()
    rstd = 1 / np.sqrt(rv + 1e-3)
    np.testing.assert_allclose(_np(xt.grad), np.broadcast_to((w * rstd)[:, None], x.shape))
    np.testing.assert_allclose(_np(wt.grad), ((x - rm[:, None]) * rstd[:, None]).sum((0, 2)))
    np.testing.assert_allclose(_np(bt.grad), np.full(2, 12.0))


def test_batch_norm_empty_half_batch_keeps_its_dtype():
    x = tg.zeros((0, 3), dtype=tg.float16)
    y = F.batch_norm(x, None, None, tg.ones(3), tg.zeros(3), training=True)
    assert y.dtype is tg.float16 and tuple(y.shape) == (0, 3)


def test_running_statistics_both_or_neither():
    x = tg.tensor(rng.standard_normal((4, 3)))
    with pytest.raises(ValueError, match="running_mean and running_var must either both be "
                       "None or neither be None"):
        F.batch_norm(x, tg.zeros(3, dtype=tg.float64), None, training=True)
    with pytest.raises(ValueError, match="must either both be None or neither be None"):
        F.instance_norm(tg.tensor(rng.standard_normal((2, 3, 4))), None,
                        tg.ones(3, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="running_var must be defined in evaluation mode"):
        F.batch_norm(x, tg.zeros(3, dtype=tg.float64), None, training=False)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None, training=False)


@pytest.mark.parametrize("cls", [nn.BatchNorm1d, nn.SyncBatchNorm])
def test_batch_norm_module_channel_count(cls):
    x = rng.standard_normal((5, 3))
    # the first per-channel tensor that does not match names the error, as PyTorch's
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        cls(4)(tg.tensor(x, dtype=tg.float32))
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        cls(4, track_running_stats=False)(tg.tensor(x, dtype=tg.float32))
    # nothing per channel: any channel count is normalised with the batch's statistics
    y = cls(4, affine=False, track_running_stats=False)(tg.tensor(x))
    np.testing.assert_allclose(_np(y), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-10)


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
@pytest.mark.parametrize("wdtype", ["same", tg.float32])
def test_rms_norm_half_rounds_once(dtype, wdtype):
    # PyTorch 2.13: normalised and scaled in float32, then rounded once to the input's dtype
    # whatever the weight's (the weight was applied after rounding, in the weight's dtype)
    wdtype = dtype if wdtype == "same" else wdtype
    x = _rounded(rng.standard_normal((3, 8)) * 4, dtype)
    w = _rounded(rng.standard_normal(8) * 3, wdtype)
    y = F.rms_norm(tg.tensor(x).to(dtype), [8], tg.tensor(w).to(wdtype))
    assert y.dtype is dtype
    xf = _rounded(x, tg.float32)
    rstd = 1 / np.sqrt((xf * xf).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
    np.testing.assert_array_equal(_np(y), _rounded(xf * rstd * w, dtype))


def test_rms_norm_result_dtype_and_layout():
    x = rng.standard_normal((4, 3))
    y = F.rms_norm(tg.tensor(x, dtype=tg.float32), [3], tg.ones(3, dtype=tg.float64))
    assert y.dtype is tg.float32  # the input's dtype, as PyTorch's
    xt = tg.tensor(x.T.copy(), requires_grad=True)
    assert F.rms_norm(tg.tensor(x.T.copy()).half().t(), [3]).is_contiguous()
    y = F.rms_norm(xt.t(), [3], eps=1e-6)
    assert y.is_contiguous()
    ref = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(_np(y), ref, rtol=1e-12)
    y.sum().backward()
    r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    dx = r - x * x.sum(-1, keepdims=True) * r ** 3 / 3  # d(sum_i x_i r)/dx_j
    np.testing.assert_allclose(_np(xt.grad), dx.T, rtol=1e-10)


def test_rms_and_layer_norm_shape_errors():
    x = tg.tensor(rng.standard_normal((2, 4)))
    for fn in (F.rms_norm, F.layer_norm):
        with pytest.raises(RuntimeError, match="Expected weight to be of same shape as "
                           r"normalized_shape, but got weight of shape \[3\] and "
                           r"normalized_shape = \[4\]"):
            fn(x, [4], tg.ones(3, dtype=tg.float64))
    with pytest.raises(RuntimeError, match=r"Expected bias to be of same shape as "
                       r"normalized_shape, but got bias of shape \[5\]"):
        F.layer_norm(x, [4], None, tg.zeros(5, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="Expected normalized_shape to be at least "
                       "1-dimensional"):
        F.rms_norm(x, [])
    with pytest.raises(ValueError, match="Input tensor must have at least 3 dimensions, but "
                       "got 2"):
        F.rms_norm(x, [2, 2, 4])


def test_one_dim_input_error_types():
    x, stats = tg.tensor(rng.standard_normal(3)), (tg.zeros(3, dtype=tg.float64),
                                                  tg.ones(3, dtype=tg.float64))
    with pytest.raises(IndexError, match="at least 2 dims"):  # (PyTorch's types)
        F.batch_norm(x, None, None, training=True)
    with pytest.raises(RuntimeError, match="at least 2 dims"):
        F.batch_norm(x, *stats, training=False)
    with pytest.raises(IndexError, match="at least 2 dims"):
        F.instance_norm(x, *stats, use_input_stats=False)


def test_instance_norm_two_dim_input():
    x, rm, rv = rng.standard_normal((2, 3)), rng.standard_normal(3), rng.uniform(1, 2, 3)
    y = F.instance_norm(tg.tensor(x), tg.tensor(rm), tg.tensor(rv), use_input_stats=False)
    np.testing.assert_allclose(_np(y), (x - rm) / np.sqrt(rv + 1e-5), rtol=1e-12)
    for shape in ((2, 3), (3,)):  # one value per instance and channel, as PyTorch's check
        with pytest.raises(ValueError, match="Expected more than 1 spatial element when "
                           "training"):
            F.instance_norm(tg.tensor(rng.standard_normal(shape)))


def test_sparse_embedding_node_name():
    w = tg.tensor(rng.standard_normal((5, 2)), requires_grad=True)
    y = F.embedding(tg.tensor([[0, 3], [3, 4]]), w, sparse=True)
    assert type(y.grad_fn).__name__ == "EmbeddingBackward0"
    y.sum().backward()
    assert w.grad.is_sparse
    ref = np.zeros((5, 2))
    np.add.at(ref, [0, 3, 3, 4], 1.0)
    np.testing.assert_array_equal(w.grad.to_dense().numpy(), ref)


def test_against_torch():
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    stats = rng.standard_normal(3).astype(np.float32), rng.uniform(.5, 2, 3).astype(np.float32)
    for dtype in ("float16", "bfloat16"):
        ours = F.batch_norm(tg.tensor(x).to(getattr(tg, dtype)),
                            *(tg.tensor(s) for s in stats), tg.ones(3), tg.zeros(3))
        theirs = torch.nn.functional.batch_norm(
            torch.tensor(x).to(getattr(torch, dtype)), *(torch.tensor(s) for s in stats),
            torch.ones(3), torch.zeros(3))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        ulp = 2.0 ** (-7 if dtype == "bfloat16" else -10)  # (their sums' order may differ)
        np.testing.assert_allclose(_np(ours), theirs.float().numpy(), rtol=ulp, atol=1e-6)
        ours = F.rms_norm(tg.tensor(x).to(getattr(tg, dtype)), [5], tg.tensor(x[0, 0]))
        theirs = torch.nn.functional.rms_norm(torch.tensor(x).to(getattr(torch, dtype)), [5],
                                              torch.tensor(x[0, 0]))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(_np(ours), theirs.float().numpy(), rtol=ulp, atol=1e-6)


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
def test_layer_norm_half_input_float32_parameters(dtype, device):
    # normalised in float32 and rounded once; the float32 parameters' gradients float32 sums
    # (they were taken through the parameters rounded to the input's dtype). PyTorch's CPU
    # kernel sums them less accurately (errors of 4e-4 (float16) and 1e-2 (bfloat16) here).
    x = _rounded(rng.standard_normal((3, 8)), dtype)
    w, b = _rounded(rng.standard_normal(8), tg.float32), _rounded(rng.standard_normal(8),
                                                                 tg.float32)
    xt = tg.tensor(x, device=device).to(dtype).requires_grad_()
    wt = tg.tensor(w, dtype=tg.float32, device=device, requires_grad=True)
    bt = tg.tensor(b, dtype=tg.float32, device=device, requires_grad=True)
    y = F.layer_norm(xt, [8], wt, bt)
    assert y.dtype is dtype
    xhat = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    ulp = 2.0 ** (-7 if dtype is tg.bfloat16 else -10)  # (one rounding: at most half of it)
    np.testing.assert_allclose(_np(y), xhat * w + b, rtol=ulp / 2, atol=1e-6)
    g = _rounded(rng.standard_normal((3, 8)), dtype)
    y.backward(tg.tensor(g, device=device).to(dtype))
    assert wt.grad.dtype is tg.float32 and bt.grad.dtype is tg.float32
    np.testing.assert_allclose(_np(wt.grad), (g * xhat).sum(0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(bt.grad), g.sum(0), rtol=1e-6, atol=1e-6)
    gw = g * w
    dx = (gw - gw.mean(1, keepdims=True) - xhat * (gw * xhat).mean(1, keepdims=True)) / \
        np.sqrt(x.var(1, keepdims=True) + 1e-5)
    tol = 2e-2 if dtype is tg.bfloat16 else 3e-3
    np.testing.assert_allclose(_np(xt.grad), dx, rtol=tol, atol=tol)


def test_embedding_with_a_weight_of_another_shape_asserts_as_pytorch():
    with pytest.raises(AssertionError, match="Shape of weight does not match num_embeddings"):
        tg.nn.Embedding(3, 2, _weight=tg.zeros(2, 3))


def test_normalize_writes_out_as_pytorch_div():
    x = tg.tensor([[3.0, 4.0], [1.0, 0.0]])
    out = tg.empty(0)
    r = tg.nn.functional.normalize(x, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), [[0.6, 0.8], [1.0, 0.0]], rtol=1e-6)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tg.nn.functional.normalize(x.requires_grad_(), out=tg.empty(2, 2))


def test_embedding_names_its_indices_argument():
    with pytest.raises(TypeError, match="argument 'indices'"):
        tg.nn.functional.embedding([1], tg.ones(2, 2))
