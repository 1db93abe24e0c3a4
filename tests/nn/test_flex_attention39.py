"""``nn.attention.flex_attention`` (Note [flex_attention, eagerly], nn/attention/flex_attention.py):
values against a float64 NumPy attention with the same masks and score changes, gradients by
finite differences, block masks and values against PyTorch 2.13's eager flex_attention where
torch is installed (its CPU backward is not implemented, so gradients are not compared)."""
import warnings

import numpy as np
import pytest
import tritongrad.nn.attention.flex_attention as mine
from tritongrad.nn.attention.flex_attention import (
    AuxRequest,
    BlockMask,
    and_masks,
    create_block_mask,
    create_mask,
    flex_attention,
    noop_mask,
    or_masks,
)

import tritongrad as tg

RNG = np.random.default_rng(0)
Q0, K0, V0 = (RNG.standard_normal((2, 4, 8, 16)) for _ in range(3))
BIAS = RNG.standard_normal((4, 8, 8))


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def window(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= 2


def first_row_empty(b, h, q_idx, kv_idx):
    return (q_idx > 0) & (kv_idx <= q_idx)


def relative(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx) * 0.1


def np_mask(fn, B=2, H=4, L=8, S=8):
    _, _, q, k = np.ogrid[:B, :H, :L, :S]
    return np.broadcast_to({causal: q >= k, window: np.abs(q - k) <= 2,
                            first_row_empty: (q > 0) & (k <= q), None: True}[fn], (B, H, L, S))


def np_attention(q, k, v, mask=None, score_mod=None, scale=None):
    """float64 masked softmax attention; a row with nothing allowed gives zeros, lse -inf."""
    groups = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, groups, 1), np.repeat(v, groups, 1)
    s = q @ np.swapaxes(k, -1, -2) * (scale or 1 / np.sqrt(q.shape[-1]))
    if score_mod is relative:
        # (an int64 index tensor times 0.1 is float32, the default dtype, as in PyTorch)
        s = s + (np.arange(8)[:, None] - np.arange(8)[None, :]).astype(np.float32) \
            * np.float32(0.1)
    s = np.where(np_mask(mask, *s.shape), s, -np.inf)
    top = s.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    e = np.exp(s - top)
    total = e.sum(-1, keepdims=True)
    p = np.where(total > 0, e / np.where(total > 0, total, 1), 0)
    lse = np.where(total[..., 0] > 0, np.log(np.where(total > 0, total, 1))[..., 0]
                   + top[..., 0], -np.inf)
    return p @ v, lse


CASES = {
    "plain": {}, "causal": {"mask": causal}, "window_blocks_of_2": {"mask": window, "bs": 2},
    "relative": {"score_mod": relative},
    "relative_causal": {"score_mod": relative, "mask": causal, "B": 2, "H": 4, "bs": 4},
    "empty_first_row": {"mask": first_row_empty, "bs": 4},
    "gqa": {"gqa": True, "mask": causal},
}


def _run(T, fa, dtype, mask=None, score_mod=None, B=None, H=None, bs=128, gqa=False,
         grad=False):
    heads = 2 if gqa else 4
    q = T.tensor(Q0, dtype=dtype, requires_grad=grad)
    k = T.tensor(K0[:, :heads], dtype=dtype, requires_grad=grad)
    v = T.tensor(V0[:, :heads], dtype=dtype, requires_grad=grad)
    bm = fa.create_block_mask(mask, B, H, 8, 8, device="cpu", BLOCK_SIZE=bs) if mask else None
    out, aux = fa.flex_attention(q, k, v, score_mod=score_mod, block_mask=bm, enable_gqa=gqa,
                                 return_aux=fa.AuxRequest(lse=True))
    return (q, k, v), out, aux.lse, bm


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_values_against_numpy(name, dtype):
    kw = CASES[name]
    _, out, lse, _ = _run(tg, mine, getattr(tg, dtype), **kw)
    heads = 2 if kw.get("gqa") else 4
    want, want_lse = np_attention(Q0, K0[:, :heads], V0[:, :heads], kw.get("mask"),
                                  kw.get("score_mod"))
    tol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(out.numpy(), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(lse.numpy(), want_lse, rtol=tol, atol=tol)
    assert out.dtype is getattr(tg, dtype)
    assert lse.dtype is (tg.float64 if dtype == "float64" else tg.float32)


@pytest.mark.parametrize("name", ["causal", "relative_causal", "empty_first_row", "gqa"])
def test_gradients_by_finite_differences(name):
    kw = dict(CASES[name])
    heads = 2 if kw.get("gqa") else 4
    bm = (create_block_mask(kw["mask"], None, None, 8, 8, device="cpu",
                            BLOCK_SIZE=kw.get("bs", 128)) if "mask" in kw else None)
    q = tg.tensor(Q0[:1, :, :4, :3], requires_grad=True)  # small: gradcheck is O(n^2)
    k = tg.tensor(K0[:1, :heads, :4, :3], requires_grad=True)
    v = tg.tensor(V0[:1, :heads, :4, :3], requires_grad=True)
    if bm is not None:
        bm = create_block_mask(kw["mask"], None, None, 4, 4, device="cpu", BLOCK_SIZE=2)

    def f(q, k, v):
        out, aux = flex_attention(q, k, v, score_mod=kw.get("score_mod"), block_mask=bm,
                                  enable_gqa=bool(kw.get("gqa")), return_aux=AuxRequest(lse=True))
        return out, aux.lse.masked_fill(aux.lse.isinf(), 0.0)

    assert tg.autograd.gradcheck(f, (q, k, v))


def test_gradient_reaches_a_captured_bias():
    bias = tg.tensor(BIAS, requires_grad=True)
    q, k, v = (tg.tensor(a[:1]) for a in (Q0, K0, V0))

    def with_bias(score, b, h, q_idx, kv_idx):
        return score + bias[h, q_idx, kv_idx]

    out = flex_attention(q, k, v, score_mod=with_bias)
    out.sum().backward()
    # d out.sum() / d bias = d/d s of sum_j p_j (v_j . 1): p (v1 - sum p v1), per (h, q, kv)
    s = Q0[:1] @ np.swapaxes(K0[:1], -1, -2) / 4 + BIAS
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    vs = V0[:1].sum(-1)[:, :, None, :]
    want = (p * (vs - (p * vs).sum(-1, keepdims=True)))[0]
    np.testing.assert_allclose(bias.grad.numpy(), want, rtol=1e-10, atol=1e-12)


def test_causal_is_sdpa_causal():
    q, k, v = (tg.tensor(a, dtype=tg.float32) for a in (Q0, K0, V0))
    bm = create_block_mask(causal, None, None, 8, 8, device="cpu")
    np.testing.assert_allclose(
        flex_attention(q, k, v, block_mask=bm).numpy(),
        tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).numpy(),
        rtol=1e-5, atol=1e-6)


def test_block_mask_structure():
    bm = create_block_mask(causal, 1, 1, 8, 8, device="cpu", BLOCK_SIZE=4)
    assert bm.shape == (1, 1, 8, 8) and bm.BLOCK_SIZE == (4, 4)
    # blocks (0,0) and (1,1) straddle the diagonal (partial); (1,0) is full; (0,1) skipped
    assert bm.kv_num_blocks.tolist() == [[[1, 1]]]
    assert bm.kv_indices.tolist() == [[[[0, 1], [1, 0]]]]
    assert bm.full_kv_num_blocks.tolist() == [[[0, 1]]]
    assert bm.full_kv_indices.tolist()[0][0][1][0] == 0
    assert bm.q_num_blocks.tolist() == [[[1, 1]]] and bm.full_q_num_blocks.tolist() == [[[1, 0]]]
    assert bm.to_dense().tolist() == [[[[1, 0], [1, 1]]]]
    assert bm.kv_num_blocks.dtype is tg.int32 and bm.kv_indices.dtype is tg.int32
    assert bm.sparsity() == 25.0
    assert str(bm) == "BlockMask(shape=(1, 1, 8, 8), sparsity=25.00%, \n(0, 0)\n██  \n████\n)"
    again = BlockMask.from_kv_blocks(bm.kv_num_blocks, bm.kv_indices, bm.full_kv_num_blocks,
                                     bm.full_kv_indices, BLOCK_SIZE=4, mask_mod=causal)
    for f in ("q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        assert getattr(again, f).tolist() == getattr(bm, f).tolist(), f
    assert again.shape == bm.shape and again.mask_mod is causal


def test_masks_combine():
    both = create_mask(and_masks(causal, window), None, None, 6, 6, device="cpu")
    either = create_mask(or_masks(causal, window), None, None, 6, 6, device="cpu")
    c, w = np_mask(causal, 1, 1, 6, 6), np_mask(window, 1, 1, 6, 6)
    np.testing.assert_array_equal(both.numpy(), c & w)
    np.testing.assert_array_equal(either.numpy(), c | w)
    assert create_mask(noop_mask, 2, 1, 3, 3, device="cpu").all()
    # a score_mod's mask: where it does not give -inf
    minus = create_mask(lambda s, b, h, q, k: s.masked_fill(q < k, float("-inf")), None, None,
                        4, 4, device="cpu")
    np.testing.assert_array_equal(minus.numpy(), np_mask(causal, 1, 1, 4, 4))
    with pytest.raises(RuntimeError, match="All inputs should be callable"):
        and_masks(causal, 3)


def test_errors_and_warnings():
    q, k, v = (tg.tensor(a, dtype=tg.float32) for a in (Q0, K0, V0))
    with pytest.raises(ValueError, match="same number of heads.*enable_gqa=True"):
        flex_attention(q, k[:, :2], v[:, :2])
    with pytest.raises(ValueError, match="multiple of kv heads"):
        flex_attention(q, k[:, :3], v[:, :3], enable_gqa=True)
    with pytest.raises(ValueError, match="same embedding dimension"):
        flex_attention(q, k[..., :8], v)
    small = create_block_mask(causal, None, None, 4, 4, device="cpu")
    with pytest.raises(ValueError, match="smaller length than you're using"):
        flex_attention(q, k, v, block_mask=small)
    with pytest.raises(ValueError, match="Cannot specify both return_lse and return_aux"):
        flex_attention(q, k, v, return_lse=True, return_aux=AuxRequest(lse=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from tritongrad.nn.attention import flex_attention as _flex_attention
        _flex_attention._warned_lse.clear()
        _, lse = flex_attention(q, k, v, return_lse=True)
    assert any(issubclass(w.category, FutureWarning) and "return_lse is deprecated" in
               str(w.message) for w in caught)
    assert lse.shape == (2, 4, 8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_as_torch(name):
    torch = pytest.importorskip("torch")
    from torch.nn.attention import flex_attention as theirs

    kw = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's eager call warns it is unfused)
        _, out_t, lse_t, bm_t = _run(torch, theirs, torch.float32, **kw)
    _, out_g, lse_g, bm_g = _run(tg, mine, tg.float32, **kw)
    np.testing.assert_allclose(out_g.numpy(), out_t.numpy(), rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(lse_g.numpy(), lse_t.numpy(), rtol=1e-5, atol=2e-6)
    if bm_t is not None:
        for f in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                  "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
            assert getattr(bm_g, f).tolist() == getattr(bm_t, f).tolist(), f
        assert str(bm_g) == str(bm_t)
        assert bm_g.sparsity() == pytest.approx(bm_t.sparsity())


# -- nn.attention.bias ---------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["upper_left", "lower_right"])
@pytest.mark.parametrize("lq,lkv", [(3, 5), (4, 4), (5, 3)])
def test_causal_bias(variant, lq, lkv):
    from tritongrad.nn.attention import bias
    make = getattr(bias, f"causal_{variant}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = make(lq, lkv)
    warned = [str(w.message) for w in caught]
    nan_warning = ("Lower right causal bias will produce NaNs in the output when "
                   "seq_len_q > seq_len_kv!")
    assert warned == ([nan_warning] if variant == "lower_right" and lq > lkv else [])
    offset = 0 if variant == "upper_left" else lkv - lq
    mask = np.tril(np.ones((lq, lkv), bool), offset)
    np.testing.assert_array_equal(b._materialize().numpy(), mask)
    assert (b.seq_len_q, b.seq_len_kv) == (lq, lkv)
    q = tg.tensor(Q0[:1, :2, :lq])
    k, v = tg.tensor(K0[:1, :2, :lkv]), tg.tensor(V0[:1, :2, :lkv])
    out = tg.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=b)
    s = Q0[:1, :2, :lq] @ np.swapaxes(K0[:1, :2, :lkv], -1, -2) / 4
    s = np.where(mask, s, -np.inf)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - s.max(-1, keepdims=True))
        want = (p / p.sum(-1, keepdims=True)) @ V0[:1, :2, :lkv]
    rows = mask.any(-1)  # (rows with no key: PyTorch's fused kernels give 0, its math NaN)
    np.testing.assert_allclose(out.numpy()[..., rows, :], want[..., rows, :], rtol=1e-12)
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        tg.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=b, is_causal=True)


def test_causal_bias_as_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.attention import bias as theirs
    from tritongrad.nn.attention import bias as ours
    for name in ("causal_upper_left", "causal_lower_right"):
        for lq, lkv in ((3, 5), (6, 6)):
            t, g = getattr(theirs, name)(lq, lkv), getattr(ours, name)(lq, lkv)
            assert repr(g) == repr(t)
            assert int(g.variant) == int(t.variant)
            q = torch.tensor(Q0[:1, :2, :lq], dtype=torch.float32)
            k = torch.tensor(K0[:1, :2, :lkv], dtype=torch.float32)
            want = torch.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=t)
            got = tg.nn.functional.scaled_dot_product_attention(
                tg.tensor(q.numpy()), tg.tensor(k.numpy()), tg.tensor(k.numpy()), attn_mask=g)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
