"""scaled_dot_product_attention and MultiheadAttention (nn/_attention.py, matmul + softmax
composites) against NumPy float64 references; gradients against central differences."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host
from tritongrad import nn

F = nn.functional
rng = np.random.default_rng(5)


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _sdpa_ref(q, k, v, bias=None, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = np.einsum("...le,...se->...ls", q, k) * scale
    if bias is not None:
        s = s + bias
    return np.einsum("...ls,...sd->...ld", _softmax(s), v)


def _t(a, device="cpu"):
    return tg.tensor(a, device=device)


def test_sdpa_plain_causal_and_masks(device):
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2)))
    y = F.scaled_dot_product_attention(_t(q, device), _t(k, device), _t(v, device))
    np.testing.assert_allclose(host(y), _sdpa_ref(q, k, v), rtol=1e-12, atol=1e-13)
    causal = np.where(np.tril(np.ones((4, 6))) > 0, 0.0, -np.inf)
    y = F.scaled_dot_product_attention(_t(q, device), _t(k, device), _t(v, device),
                                       is_causal=True, scale=0.7)
    np.testing.assert_allclose(host(y), _sdpa_ref(q, k, v, causal, 0.7), rtol=1e-12, atol=1e-13)
    keep = rng.uniform(size=(2, 1, 4, 6)) > 0.4
    keep[..., 0] = True
    y = F.scaled_dot_product_attention(_t(q, device), _t(k, device), _t(v, device),
                                       attn_mask=_t(keep, device))
    ref = _sdpa_ref(q, k, v, np.where(keep, 0.0, -np.inf))
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-13)
    add = rng.standard_normal((4, 6))
    y = F.scaled_dot_product_attention(_t(q, device), _t(k, device), _t(v, device),
                                       attn_mask=_t(add, device))
    np.testing.assert_allclose(host(y), _sdpa_ref(q, k, v, add), rtol=1e-12, atol=1e-13)


def test_sdpa_grouped_query_attention():
    q, k, v = rng.standard_normal((1, 6, 3, 4)), rng.standard_normal((1, 2, 5, 4)), \
        rng.standard_normal((1, 2, 5, 4))
    y = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), enable_gqa=True)
    ref = _sdpa_ref(q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1))
    np.testing.assert_allclose(host(y), ref, rtol=1e-12, atol=1e-13)


def test_sdpa_gradients(device):
    q, k, v = (_t(rng.standard_normal(s), device) for s in ((1, 2, 3, 4), (1, 2, 5, 4),
                                                             (1, 2, 5, 3)))
    mask = _t(rng.standard_normal((3, 5)), device)
    # the differences run on the CPU: the captured mask follows the inputs there
    assert_grads_match(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask.to(q.device)), [q, k, v])
    assert_grads_match(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                       [q, k, v])


def test_sdpa_dropout_and_errors():
    q = tg.randn(2, 3, 4)
    assert F.scaled_dot_product_attention(q, q, q, dropout_p=1.0).abs().sum().item() == 0
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=tg.ones(3, 3).bool(), is_causal=True)
    with pytest.raises(RuntimeError, match="must share the embedding size"):
        F.scaled_dot_product_attention(q, tg.randn(2, 3, 5), q)


def _mha_ref(m, q, k, v, kpm=None, am=None, average=True):
    """Sequence-first (L, N, E) reference from the module's own weights."""
    w = {n: host(p) for n, p in m.named_parameters()}
    e, h = m.embed_dim, m.num_heads
    d = e // h
    wq, wk, wv = np.split(w["in_proj_weight"], 3)
    bq, bk, bv = np.split(w["in_proj_bias"], 3)
    qp, kp, vp = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv  # (L|S, N, E)
    heads = lambda t: t.reshape(t.shape[0], t.shape[1], h, d).transpose(1, 2, 0, 3)
    bias = np.zeros((q.shape[1], h, q.shape[0], k.shape[0]))
    if am is not None:
        bias = bias + np.where(am, -np.inf, 0.0)
    if kpm is not None:
        bias = bias + np.where(kpm, -np.inf, 0.0)[:, None, None, :]
    s = np.einsum("nhld,nhsd->nhls", heads(qp), heads(kp)) / math.sqrt(d) + bias
    a = _softmax(s)
    o = np.einsum("nhls,nhsd->nhld", a, heads(vp)).transpose(2, 0, 1, 3).reshape(q.shape)
    out = o @ w["out_proj.weight"].T + w["out_proj.bias"]
    return out, (a.mean(1) if average else a)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_reference(batch_first):
    tg.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, batch_first=batch_first).double()
    tg.nn.init.normal_(m.in_proj_bias)
    tg.nn.init.normal_(m.out_proj.bias)
    q, k = rng.standard_normal((4, 3, 8)), rng.standard_normal((5, 3, 8))
    kpm = rng.uniform(size=(3, 5)) > 0.7
    kpm[:, 0] = False
    am = rng.uniform(size=(4, 5)) > 0.8
    am[:, 0] = False
    for average in (True, False):
        args = [q, k, k] if not batch_first else [a.transpose(1, 0, 2) for a in (q, k, k)]
        out, weights = m(*map(_t, args), key_padding_mask=_t(kpm), attn_mask=_t(am),
                         average_attn_weights=average)
        ref_out, ref_w = _mha_ref(m, q, k, k, kpm, am, average)
        if batch_first:
            ref_out = ref_out.transpose(1, 0, 2)
        np.testing.assert_allclose(host(out), ref_out, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(host(weights), ref_w, rtol=1e-12, atol=1e-13)
    out2, none = m(*map(_t, args), need_weights=False)
    assert none is None and out2.shape == out.shape


def test_multihead_attention_kdim_bias_kv_unbatched_and_gradients(device):
    tg.manual_seed(1)
    m = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True,
                              batch_first=True).double().to(device)
    assert m.in_proj_weight is None and m.k_proj_weight.shape == (4, 3)
    q, k, v = (_t(rng.standard_normal(s), device) for s in ((2, 3, 4), (2, 2, 3), (2, 2, 5)))
    out, w = m(q, k, v)
    assert out.shape == (2, 3, 4) and w.shape == (2, 3, 4)  # 2 keys + bias_kv + zero attn
    np.testing.assert_allclose(host(w).sum(-1), 1.0, rtol=1e-12)
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    assert_grads_match(lambda q: m(q.to(device), k, v)[0], [q])  # differences on the CPU
    u, uw = m(q[0], k[0], v[0])
    np.testing.assert_allclose(host(u), host(out)[0], rtol=1e-12)
    assert uw.shape == (3, 4)


def test_multihead_attention_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    m = nn.MultiheadAttention(4, 2)
    x = tg.randn(3, 2, 4)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(2, 2\), but "
                                           r"should be \(3, 3\)"):
        m(x, x, x, attn_mask=tg.ones(2, 2).bool())
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)


def test_sdpa_second_order():
    q, k, v = (tg.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((1, 2, 3), (1, 3, 3), (1, 3, 2)))
    assert tg.autograd.gradgradcheck(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))


def _graph_names(t) -> set:
    """The names of every node behind ``t``."""
    seen, todo = {}, [t.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node.name()
        todo.extend(n for n, _ in node.next_functions)
    return set(seen.values())


@pytest.mark.parametrize("padding", [False, True])
def test_multihead_attention_without_weights_runs_sdpa(device, padding):
    # need_weights=False goes through SDPA as PyTorch's does: the fused kernel when nothing
    # else is asked (no probabilities saved for backward), and the is_causal hint stands for
    # attn_mask unless a key_padding_mask must be merged into it; the same values as the
    # weights path, which applies the mask as given
    tg.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=tg.float64, device=device)
    x = tg.randn(2, 5, 8, dtype=tg.float64, device=device, requires_grad=True)
    causal = nn.Transformer.generate_square_subsequent_mask(5, dtype=tg.float64, device=device)
    kpm = tg.tensor([[False] * 4 + [True], [False] * 5], device=device) if padding else None
    fused, _ = mha(x, x, x, need_weights=False)
    assert "ScaledDotProductFlashAttentionBackward0" in _graph_names(fused)
    plain, _ = mha(x, x, x)
    np.testing.assert_allclose(host(fused), host(plain), rtol=1e-12, atol=1e-14)
    hinted, w = mha(x, x, x, attn_mask=causal, is_causal=True, need_weights=False,
                    key_padding_mask=kpm)
    assert w is None
    masked, _ = mha(x, x, x, attn_mask=causal, key_padding_mask=kpm)
    np.testing.assert_allclose(host(hinted), host(masked), rtol=1e-12, atol=1e-14)
    gh, = tg.autograd.grad(hinted.sum(), x)
    gm, = tg.autograd.grad(masked.sum(), x)
    np.testing.assert_allclose(host(gh), host(gm), rtol=1e-10, atol=1e-13)
