"""Recurrent and attention layers: the fixes of the 35th parity sweep against PyTorch 2.13.

TransformerEncoder's nested-tensor inference path (padded outputs zeroed), F.sdpa with both
``is_causal`` and ``attn_mask`` (PyTorch's CPU flash kernel combines them), the attn_mask dtype
rule, MultiheadAttention's shape checks and PyTorch's error words for RNN/GRU/LSTM; values
against float64 NumPy references, then against torch where it is installed.
"""

import math
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad import nn
from tritongrad.nn import functional as F
from tritongrad.nn.attention import SDPBackend, sdpa_kernel


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def _np_attention(q, k, v, keep, scale=None):
    """float64 softmax(q k^T * scale, masked where ``keep`` is False) v; fully masked rows 0."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    s = np.where(keep, s, -np.inf)
    m = np.max(s, -1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(keep, np.exp(s - m), 0.0)
    den = e.sum(-1, keepdims=True)
    w = np.divide(e, den, out=np.zeros_like(e), where=den > 0)
    return w @ v


def _encoder(batch_first=True, norm_first=False, norm=False, nhead=2, **kw):
    tg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, nhead, 16, dropout=0.0, batch_first=batch_first,
                                       norm_first=norm_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = nn.TransformerEncoder(layer, 2, nn.LayerNorm(8) if norm else None, **kw)
    return enc.eval()


_KPM = np.array([[False] * 5, [False, False, False, True, True]])


# -- TransformerEncoder: PyTorch's nested-tensor path zeroes the padded positions -------------

@pytest.mark.parametrize("norm", [False, True])
def test_encoder_nested_path_zeroes_padding(norm):
    enc = _encoder(norm=norm)
    assert enc.use_nested_tensor
    x = tg.tensor(np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32))
    kpm = tg.tensor(_KPM)
    full = _np(enc(x, src_key_padding_mask=kpm))  # grad enabled, parameters need it: no path
    with tg.no_grad():
        fast = _np(enc(x, src_key_padding_mask=kpm))
    keep = ~_KPM
    np.testing.assert_allclose(fast[keep], full[keep], rtol=1e-5, atol=1e-6)
    expected_pad = _np(enc.norm(tg.zeros(8))) if norm else np.zeros(8, np.float32)
    np.testing.assert_allclose(fast[_KPM], np.broadcast_to(expected_pad, (2, 8)), atol=1e-6)
    assert not np.allclose(full[_KPM], fast[_KPM])
    # a float mask (-inf at padding) reads the same way: logical_not keeps the zeros
    float_kpm = tg.tensor(np.where(_KPM, -np.inf, 0.0).astype(np.float32))
    with tg.no_grad():
        np.testing.assert_allclose(_np(enc(x, src_key_padding_mask=float_kpm)), fast,
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["norm_first", "seq_first", "mask", "no_nested", "train",
                                  "right_aligned", "odd_heads"])
def test_encoder_without_nested_path_keeps_padding_values(case):
    kw = {"norm_first": case == "norm_first", "batch_first": case != "seq_first",
          "nhead": 1 if case == "odd_heads" else 2}
    if case == "no_nested":
        kw["enable_nested_tensor"] = False
    enc = _encoder(**kw)
    if case == "train":
        enc.train()
    shape = (2, 5, 8) if kw["batch_first"] else (5, 2, 8)
    x = tg.tensor(np.random.default_rng(1).standard_normal(shape).astype(np.float32))
    kpm = _KPM[:, ::-1].copy() if case == "right_aligned" else _KPM
    mask = tg.zeros(5, 5) if case == "mask" else None
    with tg.no_grad():
        out = _np(enc(x, mask=mask, src_key_padding_mask=tg.tensor(kpm)))
    if not kw["batch_first"]:
        out = out.swapaxes(0, 1)
    assert np.abs(out[kpm]).min() > 0  # the padded positions keep their computed values


def test_encoder_nested_flag_and_warning():
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=False)
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but "
                      "self.use_nested_tensor is False because encoder_layer.self_attn"
                      ".batch_first was not True"):
        enc = nn.TransformerEncoder(layer, 1)
    assert enc.enable_nested_tensor and not enc.use_nested_tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    assert not enc.use_nested_tensor


def test_encoder_nested_path_matches_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
            8, 2, 16, dropout=0.0, batch_first=True), 2, torch.nn.LayerNorm(8)).eval()
    enc = _encoder(norm=True)
    enc.load_state_dict({k: tg.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((2, 5, 8)).astype(np.float32)
    with torch.no_grad(), tg.no_grad():
        want = ref(torch.tensor(x), src_key_padding_mask=torch.tensor(_KPM)).numpy()
        got = _np(enc(tg.tensor(x), src_key_padding_mask=tg.tensor(_KPM)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- scaled_dot_product_attention ---------------------------------------------------------------

def _qkv(shape_q=(2, 3, 4, 5), shape_k=(2, 3, 6, 5), seed=0, dtype=np.float32):
    r = np.random.default_rng(seed)
    return tuple(r.standard_normal(s).astype(dtype) for s in (shape_q, shape_k, shape_k))


@pytest.mark.parametrize("float_mask", [False, True])
def test_sdpa_causal_with_mask_combines_them(float_mask):
    q, k, v = _qkv()
    r = np.random.default_rng(1)
    keep = r.random((4, 6)) > 0.4
    keep[1] = False  # a fully masked row: zeros
    mask = np.where(keep, 0.0, -np.inf).astype(np.float32) if float_mask else keep
    tq, tk, tv = (tg.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tg.tensor(mask), is_causal=True)
    want = _np_attention(q, k, v, keep & np.tril(np.ones((4, 6), bool)))
    np.testing.assert_allclose(_np(out), want, rtol=1e-5, atol=1e-6)
    assert np.all(_np(out)[:, :, 1] == 0)
    out.sum().backward()
    assert np.isfinite(_np(tq.grad)).all() and np.isfinite(_np(tk.grad)).all()


@pytest.mark.parametrize("shapes", [((3, 4, 5), (3, 6, 5)), ((2, 3, 4, 5), (1, 3, 6, 5))])
def test_sdpa_causal_with_mask_refused_where_torch_refuses(shapes):
    q, k, v = (tg.tensor(a) for a in _qkv(*shapes))
    with pytest.raises(RuntimeError, match="_scaled_dot_product_attention: Explicit attn_mask "
                       "should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=tg.ones(4, 6, dtype=tg.bool),
                                       is_causal=True)


def test_sdpa_causal_with_mask_refused_by_math_kernel():
    q, k, v = (tg.tensor(a) for a in _qkv())
    with sdpa_kernel(SDPBackend.MATH), pytest.raises(RuntimeError, match="Explicit attn_mask"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=tg.ones(4, 6, dtype=tg.bool),
                                       is_causal=True)


def test_sdpa_mask_dtype_rule():
    q, k, v = (tg.tensor(a) for a in _qkv())
    m = np.random.default_rng(3).standard_normal((4, 6))
    for dtype in (tg.float64, tg.float16, tg.int64):
        with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float or "
                           "to match query dtype"):
            F.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(m).to(dtype))
    # float32 ("float") is taken by float64 queries, and the query's own dtype always
    q64, k64, v64 = (t.double() for t in (q, k, v))
    for mask in (tg.tensor(m.astype(np.float32)), tg.tensor(m)):
        out = F.scaled_dot_product_attention(q64, k64, v64, attn_mask=mask)
        assert out.dtype is tg.float64


def test_sdpa_error_words():
    a = tg.randn(5)
    with pytest.raises(RuntimeError, match="Expected query, key, and value to all be at least "
                       "2 dimensional, but got query.dim: 1 key.dim: 1 and value.dim: 1"):
        F.scaled_dot_product_attention(a, a, a)
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide the "
                       "number of heads in query"):
        F.scaled_dot_product_attention(tg.randn(2, 5, 4, 8), tg.randn(2, 2, 6, 8),
                                       tg.randn(2, 2, 6, 8), enable_gqa=True)


# -- MultiheadAttention's shape checks (PyTorch's _mha_shape_check) ------------------------------

@pytest.mark.parametrize("args, words", [
    (dict(key=(5, 8)), "For batched (3-D) `query`, expected `key` and `value` to be 3-D but "
                       "found 2-D and 3-D tensors respectively"),
    (dict(query=(4, 8)), "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D"),
    (dict(kpm=(5,)), "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or "
                     "2-D but found 1-D tensor instead"),
    (dict(kpm=(2, 5, 1)), "expected `key_padding_mask` to be `None` or 2-D but found 3-D"),
    (dict(am=(1, 4, 4, 5)), "expected `attn_mask` to be `None`, 2-D or 3-D but found 4-D"),
    (dict(kpm=(3, 5)), "Expected key_padded_mask.shape[0] to be 2, but got 3"),
    (dict(kpm=(2, 3)), "Expected key_padded_mask.shape[1] to be 5, but got 3"),
    (dict(query=(4, 8), key=(5, 8), value=(5, 8), am=(4, 4, 5)),
     "Expected `attn_mask` shape to be (2, 4, 5) but got"),
])
def test_mha_shape_checks(args, words):
    m = nn.MultiheadAttention(8, 2)
    q = tg.randn(*args.get("query", (4, 2, 8)))
    k = tg.randn(*args.get("key", (5, 2, 8)))
    v = tg.randn(*args.get("value", (5, 2, 8)))
    kpm = tg.zeros(*args["kpm"], dtype=tg.bool) if "kpm" in args else None
    am = tg.zeros(*args["am"], dtype=tg.bool) if "am" in args else None
    with pytest.raises(AssertionError) as info:
        m(q, k, v, key_padding_mask=kpm, attn_mask=am)
    assert words in str(info.value)


def test_mha_unbatched_per_head_mask():
    """An unbatched query takes a (num_heads, L, S) mask: head h masked by its own slice."""
    tg.manual_seed(0)
    m = nn.MultiheadAttention(8, 2).eval()
    r = np.random.default_rng(4)
    x = r.standard_normal((4, 8)).astype(np.float32)
    keep = r.random((2, 4, 4)) > 0.3
    keep[..., 0] = True
    out, w = m(tg.tensor(x), tg.tensor(x), tg.tensor(x), attn_mask=tg.tensor(~keep),
               average_attn_weights=False)
    wq, wk, wv = (_np(t).astype(np.float64) for t in m.in_proj_weight.chunk(3))
    bq, bk, bv = (_np(t).astype(np.float64) for t in m.in_proj_bias.chunk(3))
    heads = [(x @ w_.T + b).reshape(4, 2, 4).transpose(1, 0, 2)
             for w_, b in ((wq, bq), (wk, bk), (wv, bv))]
    o = _np_attention(*heads, keep).transpose(1, 0, 2).reshape(4, 8)
    want = o @ _np(m.out_proj.weight).T.astype(np.float64) + _np(m.out_proj.bias)
    np.testing.assert_allclose(_np(out), want, rtol=1e-5, atol=1e-5)
    assert tuple(w.shape) == (2, 4, 4)


# -- recurrent layers' errors -----------------------------------------------------------------

@pytest.mark.parametrize("cls", [nn.RNN, nn.GRU])
@pytest.mark.parametrize("proj_size", [0, 2])
def test_proj_size_refused_by_rnn_and_gru(cls, proj_size):
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not "
                       "RNN or GRU"):
        cls(3, 4, proj_size=proj_size)


# -- against torch: the recurrent layers on packed input and the attention fixes -----------------

@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_packed_bidirectional_matches_torch(kind):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    kw = dict(num_layers=2, bidirectional=True, bias=kind != "GRU")
    ref = getattr(torch.nn, kind)(3, 4, **kw)
    mod = getattr(nn, kind)(3, 4, **kw)
    mod.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    r = np.random.default_rng(5)
    x, h = r.standard_normal((5, 3, 3)).astype(np.float32), \
        r.standard_normal((4, 3, 4)).astype(np.float32)
    results = []
    for lib, m in ((torch, ref), (tg, mod)):
        xi, hi = lib.tensor(x, requires_grad=True), lib.tensor(h, requires_grad=True)
        packed = lib.nn.utils.rnn.pack_padded_sequence(xi, [2, 5, 3], enforce_sorted=False)
        out, hn = m(packed, (hi, hi * 0.5) if kind == "LSTM" else hi)
        hn = hn[0] + hn[1] if kind == "LSTM" else hn
        pad, _ = lib.nn.utils.rnn.pad_packed_sequence(out, total_length=6, padding_value=-1.0)
        (pad.sin().sum() + hn.cos().sum()).backward()
        grads = [p.grad for _, p in sorted(m.named_parameters())]
        results.append([pad, hn, xi.grad, hi.grad] + grads)
    for a, b in zip(*results):
        np.testing.assert_allclose(_np(b), a.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_sdpa_causal_mask_and_dtype_match_torch():
    torch = pytest.importorskip("torch")
    q, k, v = _qkv()
    keep = np.random.default_rng(6).random((4, 6)) > 0.4
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(keep), is_causal=True)
    got = F.scaled_dot_product_attention(*(tg.tensor(a) for a in (q, k, v)),
                                         attn_mask=tg.tensor(keep), is_causal=True)
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-5, atol=1e-6)
