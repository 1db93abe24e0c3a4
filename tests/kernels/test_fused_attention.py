"""Fused attention: both backends' ``attention`` / ``attention_backward`` against the NumPy
float64 reference (the Triton kernels through the interpreter, with tiles shrunk so that
sequences span several partial tiles), and the autograd op behind
``scaled_dot_product_attention`` (gradcheck, fused against composite, double backward)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from kernel_kit import FLOATS, D, tk
from tritongrad.kernels import HostBFloat16, host_array, host_values
from tritongrad.kernels import numpy as nk
from tritongrad.nn import _attention
from tritongrad.nn import functional as F

import tritongrad as tg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ta = importlib.import_module("tritongrad.kernels.triton.attention")  # the name is shadowed
na = importlib.import_module("tritongrad.kernels.numpy.attention")
reference = ta.attention_reference

# (rtol, atol) against the float64 reference: one rounding of the output plus the products'
# rounding (float16/bfloat16 tiles of P and dS feed tl.dot in the input dtype)
TOL = {D.float16: (2e-2, 4e-3), D.bfloat16: (8e-2, 3e-2), D.float32: (1e-4, 1e-5),
       D.float64: (1e-10, 1e-12)}

# (B, H, L, S, D): sequences that are no multiple of the (shrunk) 16-row tiles, L != S,
# head sizes below, at and between tl.dot's 16 (padded with masked lanes)
SHAPES = [(1, 2, 37, 37, 16), (2, 1, 20, 33, 24), (1, 1, 33, 9, 8), (1, 1, 17, 17, 64)]


@pytest.fixture
def small_tiles(monkeypatch):
    monkeypatch.setattr(ta, "CONFIGS", {k: (16, 16, 4, 1) for k in ta.CONFIGS})


def _inputs(kit, rng, shape, dtype):
    b, h, length, source, d = shape
    shapes = ((b, h, length, d), (b, h, source, d), (b, h, source, d), (b, h, length, d))
    return [kit.values(s, dtype, rng) for s in shapes]


def _close(got, want, dtype, what):
    r, a = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=r, atol=a, err_msg=what)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_triton_attention_matches_reference(kit, rng, small_tiles, dtype, shape, causal):
    q, k, v, g = _inputs(kit, rng, shape, dtype)
    scale = 1 / math.sqrt(shape[-1])
    qa, ka, va, ga = (kit.up(a, dtype) for a in (q, k, v, g))
    out, lse = tk.attention(qa, ka, va, scale, causal)
    assert out.dtype is dtype and tuple(out.shape) == q.shape
    assert lse.dtype is (D.float64 if dtype is D.float64 else D.float32)
    want = reference(q, k, v, scale, causal, g)
    _close(kit.down(out), want[0], dtype, "out")
    _close(kit.down(lse), want[1], D.float32 if dtype is not D.float64 else dtype, "lse")
    grads = tk.attention_backward(ga, qa, ka, va, out, lse, scale, causal)
    for name, got, w in zip(("dq", "dk", "dv"), grads, want[2:]):
        assert got.dtype is dtype and tuple(got.shape) == w.shape, name
        _close(kit.down(got), w, dtype, name)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 29, 23, 12), (1, 2, 11, 30, 8)],
                         ids=["L>S", "L<S"])
def test_numpy_attention_matches_reference(kit, rng, monkeypatch, dtype, causal, shape):
    """The CPU kernel, blocked (small blocks: several query and key blocks, partial ones,
    blocks above the causal diagonal skipped) and not. With more keys than queries the causal
    mask leaves the last keys unseen: their gradients are zeros."""
    q, k, v, g = _inputs(kit, rng, shape, dtype)
    host = [host_array(a, dtype) for a in (q, k, v, g)]
    want = reference(q, k, v, 0.7, causal, g)
    for blocks in ((512, 512), (5, 7)):
        monkeypatch.setattr(na, "BLOCK_Q", blocks[0])
        monkeypatch.setattr(na, "BLOCK_K", blocks[1])
        out, lse = nk.attention(*host[:3], 0.7, causal)
        assert tuple(out.shape) == q.shape
        assert (type(out) is HostBFloat16) == (dtype is D.bfloat16)
        _close(kg(out), want[0], dtype, "out")
        _close(lse, want[1], D.float32 if dtype is not D.float64 else dtype, "lse")
        grads = nk.attention_backward(host[3], *host[:3], out, lse, 0.7, causal)
        for name, got, w in zip(("dq", "dk", "dv"), grads, want[2:]):
            _close(kg(got), w, dtype, name)


def kg(a):
    return np.asarray(host_values(a), np.float64)


def test_numpy_attention_bounds_its_score_blocks(rng, monkeypatch):
    """No matmul result of the CPU kernel is larger than one block pair of scores."""
    monkeypatch.setattr(na, "BLOCK_Q", 64)
    monkeypatch.setattr(na, "BLOCK_K", 32)
    seen = []
    real = np.matmul

    def spy(a, b, *args, **kw):
        r = real(a, b, *args, **kw)
        seen.append(r.shape[-2] * r.shape[-1] if r.ndim > 1 else r.size)  # (1-D: row sums)
        return r

    monkeypatch.setattr(na.np, "matmul", spy)
    q, k, v = (rng.standard_normal((1, 2, 300, 8)) for _ in range(3))
    out, lse = nk.attention(q, k, v, 0.3, True)
    nk.attention_backward(q, q, k, v, out, lse, 0.3, True)
    assert max(seen) <= 64 * 32
    monkeypatch.setattr(na.np, "matmul", real)
    np.testing.assert_allclose(out, reference(q, k, v, 0.3, True)[0], rtol=1e-12, atol=1e-12)


def test_triton_attention_strided_views(kit, rng, small_tiles):
    """Head-split views (B, L, H, D) -> (B, H, L, D) and a transposed gradient: no copies."""
    q, k, v = (rng.standard_normal((2, 19, 3, 16)).astype(np.float32) for _ in range(3))
    g = rng.standard_normal((2, 3, 16, 19)).astype(np.float32)
    views = [tk.permute(kit.up(a), (0, 2, 1, 3)) for a in (q, k, v)]
    gv = tk.permute(kit.up(g), (0, 1, 3, 2))
    qh, kh, vh = (a.transpose(0, 2, 1, 3) for a in (q, k, v))
    gh = g.transpose(0, 1, 3, 2)
    out, lse = tk.attention(*views, 0.25, True)
    want = reference(qh, kh, vh, 0.25, True, gh)
    _close(kit.down(out), want[0], D.float32, "out")
    for name, got, w in zip(("dq", "dk", "dv"),
                            tk.attention_backward(gv, *views, out, lse, 0.25, True), want[2:]):
        _close(kit.down(got), w, D.float32, name)


def _heads(rng, layout):
    """(base, [q, k, v]): a float32 host array and (B, H, T, D) views of it laid out as named
    (Note [attention result layouts])."""
    if layout == "qkv":  # a block's fused projection, split, viewed per head, transposed
        base = rng.standard_normal((2, 17, 3 * 2 * 8)).astype(np.float32)
        return base, [base[..., i * 16:(i + 1) * 16].reshape(2, 17, 2, 8).transpose(0, 2, 1, 3)
                      for i in range(3)]
    shape, axes = {"contiguous": ((3, 2, 3, 17, 8), (0, 1, 2, 3, 4)),
                   "bthd": ((3, 2, 17, 3, 8), (0, 1, 3, 2, 4)),    # (B, T, H, D) transposed
                   "hbtd": ((3, 3, 2, 17, 8), (0, 2, 1, 3, 4))}[layout]  # heads outermost
    base = rng.standard_normal(shape).astype(np.float32)
    return base, list(base.transpose(axes))


@pytest.mark.parametrize("layout", ["contiguous", "qkv", "bthd", "hbtd"])
def test_result_layouts_follow_the_inputs(kit, rng, small_tiles, layout):
    """Both backends lay out the output and each gradient in its input's dimension order, with
    the same strides, and compute the reference (Note [attention result layouts])."""
    base, host = _heads(rng, layout)
    dev = kit.up(base)
    views = [tk.as_strided(dev, a.shape, tuple(s // 4 for s in a.strides),
                           (a.__array_interface__["data"][0] - base.ctypes.data) // 4)
             for a in host]
    g = rng.standard_normal(host[0].shape).astype(np.float32)
    out, lse = tk.attention(*views, 0.3, True)
    want_out, want_lse = nk.attention(*host, 0.3, True)
    grads = tk.attention_backward(kit.up(g), *views, out, lse, 0.3, True)
    wants = nk.attention_backward(g, *host, want_out, want_lse, 0.3, True)
    ref = reference(*host, 0.3, True, g)
    for name, got, want, r in zip(("out", "dq", "dk", "dv"), (out, *grads), (want_out, *wants),
                                  (ref[0], *ref[2:])):
        assert got.strides == tuple(s // 4 for s in want.strides), (name, got.strides)
        _close(kit.down(got), r, D.float32, name)
    if layout == "qkv":  # the block's way back: (B, T, H, D) memory, so a view of (B, T, H D)
        assert tk.view(tk.permute(out, (0, 2, 1, 3)), (2, 17, 16)) is not None


def test_attention_empty_and_refused(kit):
    for k in (nk, tk):
        up = (lambda a: a) if k is nk else kit.up
        down = (lambda a: a) if k is nk else kit.down
        q = up(np.ones((1, 2, 3, 4), np.float32))
        kv = up(np.ones((1, 2, 0, 4), np.float32))
        out, lse = k.attention(q, kv, kv, 0.5, False)
        assert (down(out) == 0).all() and (down(lse) == -np.inf).all()
        with pytest.raises(ValueError, match="attention: expected 4-D"):
            k.attention(up(np.ones((2, 3, 4), np.float32)), kv, kv, 0.5, False)
        with pytest.raises(TypeError, match="attention"):
            i = up(np.ones((1, 1, 2, 4), np.int32))
            k.attention(i, i, i, 0.5, False)
    big = kit.up(np.ones((1, 1, 2, 256), np.float32))
    with pytest.raises(ValueError, match="attention: head size 256 is larger than"):
        tk.attention(big, big, big, 0.5, False)


def test_triton_matches_numpy_backend(kit, rng, small_tiles):
    q, k, v, g = _inputs(kit, rng, (1, 2, 21, 18, 32), D.float32)
    got = tk.attention(*(kit.up(a) for a in (q, k, v)), 0.2, True)
    want = nk.attention(q, k, v, 0.2, True)
    for a, b in zip(got, want):
        kit.check(a, b, D.float32, rtol=1e-5, atol=1e-6)
    gb = tk.attention_backward(kit.up(g), *(kit.up(a) for a in (q, k, v)), *got, 0.2, True)
    for a, b in zip(gb, nk.attention_backward(g, q, k, v, *want, 0.2, True)):
        kit.check(a, b, D.float32, rtol=1e-4, atol=1e-5)


# -- the autograd op -------------------------------------------------------------------------

def _qkv(rng, shapes, device, dtype=tg.float64):
    return [tg.tensor(rng.standard_normal(s), dtype=dtype, device=device, requires_grad=True)
            for s in shapes]


def _composite(q, k, v, causal, scale):
    bias = None
    if causal:
        keep = tg.ones((q.shape[-2], k.shape[-2]), dtype=q.dtype, device=q.device).tril()
        bias = _attention._bias_from_mask(keep.bool(), q.dtype, keep_where_true=True)
    return _attention._attend(q, k, v, bias, 0.0, scale)[0]


def test_sdpa_uses_the_fused_op_where_it_applies(rng):
    q, k, v = _qkv(rng, ((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 8)), "cpu")
    fused = "ScaledDotProductFlashAttentionBackward0"
    assert type(F.scaled_dot_product_attention(q, k, v).grad_fn).__name__ == fused
    assert type(F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               scale=0.1).grad_fn).__name__ == fused
    mask = tg.ones((5, 6)).bool()
    for y in (F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
              F.scaled_dot_product_attention(q, k, v[..., :4]),       # Ev != E
              F.scaled_dot_product_attention(q, k[:1], v[:1]),        # broadcast batch
              F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)):
        assert type(y.grad_fn).__name__ != fused
    wide = _qkv(rng, ((1, 1, 3, 130),) * 3, "cpu")
    assert type(F.scaled_dot_product_attention(*wide).grad_fn).__name__ != fused


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shapes", [((2, 3, 7, 8), (2, 3, 9, 8)), ((5, 4), (5, 4)),
                                    ((3, 6, 8), (3, 6, 8)), ((2, 2, 2, 4, 3), (2, 2, 2, 5, 3))],
                         ids=["4d", "2d", "3d", "5d"])
def test_fused_equals_composite(device, rng, shapes, causal):
    sq, sk = shapes
    q, k, v = _qkv(rng, (sq, sk, sk), device)
    scale = 0.37
    y = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    node = y.grad_fn if len(sq) == 4 else y.grad_fn.next_functions[0][0]
    assert type(node).__name__ == "ScaledDotProductFlashAttentionBackward0"
    want = _composite(q, k, v, causal, scale)
    np.testing.assert_allclose(y.detach().cpu().numpy(), want.detach().cpu().numpy(),
                               rtol=1e-12, atol=1e-12)
    g = tg.tensor(rng.standard_normal(tuple(y.shape)), dtype=tg.float64, device=device)
    got = tg.autograd.grad(y, (q, k, v), g)
    ref = tg.autograd.grad(want, (q, k, v), g)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float16], ids=str)
def test_fused_equals_composite_low_precision(device, rng, dtype):
    q, k, v = _qkv(rng, ((1, 2, 19, 16),) * 3, device, dtype)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    want = _composite(q, k, v, True, 0.25)
    tol = 2e-3 if dtype is tg.float16 else 1e-5
    np.testing.assert_allclose(y.detach().cpu().float().numpy(),
                               want.detach().cpu().float().numpy(), rtol=tol, atol=tol)
    got = tg.autograd.grad(y.sum(), (q, k, v))
    ref = tg.autograd.grad(want.sum(), (q, k, v))
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a.cpu().float().numpy(), b.cpu().float().numpy(),
                                   rtol=10 * tol, atol=10 * tol)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_gradcheck_through_the_fused_op(rng, causal):
    q, k, v = _qkv(rng, ((1, 2, 4, 3), (1, 2, 5, 3), (1, 2, 5, 3)), "cpu")

    def fn(q, k, v):
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert type(y.grad_fn).__name__ == "ScaledDotProductFlashAttentionBackward0"
        return y

    assert tg.autograd.gradcheck(fn, (q, k, v))
    assert tg.autograd.gradgradcheck(fn, (q, k, v))


def test_create_graph_on_the_emulated_device(rng):
    q, k, v = _qkv(rng, ((1, 1, 5, 4), (1, 1, 6, 4), (1, 1, 6, 4)), "cuda")
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    gq, gk, gv = tg.autograd.grad(y.pow(2).sum(), (q, k, v), create_graph=True)
    second = tg.autograd.grad((gq.sum() + gk.pow(2).sum() + gv.sum()), (q, k, v))
    yc = _composite(q, k, v, True, 0.5)
    cq, ck, cv = tg.autograd.grad(yc.pow(2).sum(), (q, k, v), create_graph=True)
    ref = tg.autograd.grad((cq.sum() + ck.pow(2).sum() + cv.sum()), (q, k, v))
    for a, b in zip(second, ref):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-10, atol=1e-12)


def test_forward_ad_through_the_fused_op(rng):
    import tritongrad.autograd.forward_ad as fwAD
    q, k, v = (x.detach() for x in _qkv(rng, ((1, 2, 4, 3), (1, 2, 5, 3), (1, 2, 5, 3)), "cpu"))
    tq, tk_, tv = (tg.tensor(rng.standard_normal(tuple(x.shape))) for x in (q, k, v))
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, t) for x, t in zip((q, k, v), (tq, tk_, tv))]
        jvp = fwAD.unpack_dual(F.scaled_dot_product_attention(*duals, is_causal=True)).tangent
    eps = 1e-6
    plus = F.scaled_dot_product_attention(q + eps * tq, k + eps * tk_, v + eps * tv,
                                          is_causal=True)
    minus = F.scaled_dot_product_attention(q - eps * tq, k - eps * tk_, v - eps * tv,
                                           is_causal=True)
    np.testing.assert_allclose(jvp.numpy(), ((plus - minus) / (2 * eps)).numpy(), rtol=1e-6,
                               atol=1e-8)


def test_gqa_through_the_fused_op(rng):
    q, = _qkv(rng, ((1, 4, 5, 8),), "cpu")
    k, v = _qkv(rng, ((1, 2, 6, 8), (1, 2, 6, 8)), "cpu")
    y = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    want = _composite(q, _attention._repeat_heads(k, 2), _attention._repeat_heads(v, 2), False,
                      1 / math.sqrt(8))
    np.testing.assert_allclose(y.detach().numpy(), want.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
