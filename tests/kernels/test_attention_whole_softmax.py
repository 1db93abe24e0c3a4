"""The CPU attention's whole-score-matrix path (kernels/numpy/attention.py, Note [Whole score
matrix]): one block pair holds all the scores, the softmax P is formed whole and, where it is
small, carried from the forward to the backward on the returned lse. Each test runs with the
compiled loops (kernels/numpy/attention_loops.py) and with the NumPy forms; references are
the float64 whole-matrix attention."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

na = importlib.import_module("tritongrad.kernels.numpy.attention")
reference = importlib.import_module("tritongrad.kernels.triton.attention").attention_reference

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("cpu_forms")]


def _qkv_views(rng, b, h, t, d, dtype=np.float32):
    """q, k, v as the strided (B, H, T, D) views of one (B, T, 3 H D) projection, and the
    output gradient as the (B, T, H, D) transpose the output projection hands back."""
    qkv = rng.standard_normal((b, t, 3 * h * d)).astype(dtype)
    views = [qkv[..., i * h * d:(i + 1) * h * d].reshape(b, t, h, d).transpose(0, 2, 1, 3)
             for i in range(3)]
    g = rng.standard_normal((b, t, h, d)).astype(dtype).transpose(0, 2, 1, 3)
    return (*views, g)


def _never_blocked(monkeypatch):
    calls = []
    monkeypatch.setattr(na, "_softmax_block", lambda *a, **kw: calls.append(1))
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_probs_ride_to_the_backward_once(monkeypatch, dtype, causal):
    """The GPT step's shapes (scaled down): P is kept, used by the first backward and dropped;
    a second backward recomputes it and gives the same bits."""
    rng = np.random.default_rng(0)
    q, k, v, g = _qkv_views(rng, 2, 3, 24, 8, dtype)
    blocked = _never_blocked(monkeypatch)
    out, lse = na.attention(q, k, v, 8 ** -0.5, causal)
    assert type(lse) is na._SavedLSE and lse.probs is not None and lse.dtype == dtype
    want = reference(q, k, v, 8 ** -0.5, causal, g)
    tol = {"rtol": 2e-4, "atol": 2e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(out, want[0], **tol)
    np.testing.assert_allclose(lse, want[1], **tol)
    first = na.attention_backward(g, q, k, v, out, lse, 8 ** -0.5, causal)
    assert lse.probs is None
    again = na.attention_backward(g, q, k, v, out, lse, 8 ** -0.5, causal)
    plain = na.attention_backward(g, q, k, v, out, np.asarray(lse), 8 ** -0.5, causal)
    for a, b, c, w in zip(first, again, plain, want[2:]):
        np.testing.assert_allclose(a, w, **{**tol, "rtol": 10 * tol["rtol"]})
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
        assert a.dtype == dtype
        # laid out as the (B, T, H, D) inputs: the way back to the projection views it
        assert a.transpose(0, 2, 1, 3).flags.c_contiguous
    # the output too: the transpose and reshape into the output projection view it
    assert out.transpose(0, 2, 1, 3).flags.c_contiguous
    assert not blocked


def test_large_scores_are_shifted(monkeypatch):
    """Scores around 100 (exp would overflow float32 past 88), within a few of each other:
    shifted by the maximum, still the whole path."""
    rng = np.random.default_rng(1)
    q, k, v, g = _qkv_views(rng, 1, 2, 16, 8)
    q *= 0.3
    q += 5.0
    k *= 0.3
    k += 5.0
    blocked = _never_blocked(monkeypatch)
    out, lse = na.attention(q, k, v, 0.5, True)
    assert not blocked and lse.min() > 20
    want = reference(q, k, v, 0.5, True, g)
    np.testing.assert_allclose(out, want[0], rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(lse, want[1], rtol=1e-5)
    for got, w in zip(na.attention_backward(g, q, k, v, out, lse, 0.5, True), want[2:]):
        np.testing.assert_allclose(got, w, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("masked_only", [True, False])
def test_rows_far_below_the_maximum_take_the_blocked_path(softmax_block_calls, masked_only):
    """A score far above the rest: in a masked position (which the compiled path's first
    maximum also sees) it changes nothing; in a visible one, the rows far below it are redone
    on the blocked path with their own maxima."""
    rng = np.random.default_rng(2)
    q, k, v, g = (a.copy() for a in _qkv_views(rng, 1, 2, 16, 8))
    if masked_only:
        q[0, 0, 0] = k[0, 0, 15] * 20  # query 0 against key 15: masked
    else:
        q[0, 0, 15] = k[0, 0, 3] * 20
    out, lse = na.attention(q, k, v, 0.5, True)
    assert softmax_block_calls == ([] if masked_only else [False, True])
    want = reference(q, k, v, 0.5, True, g)
    np.testing.assert_allclose(out, want[0], rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(lse, want[1], rtol=1e-5, atol=1e-5)
    for got, w in zip(na.attention_backward(g, q, k, v, out, lse, 0.5, True), want[2:]):
        np.testing.assert_allclose(got, w, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("shape", [(1, 2, 9, 5, 4), (1, 2, 5, 9, 4), (2, 1, 40, 40, 4)],
                         ids=["L>S", "L<S", "P larger than q, k, v, out"])
def test_causal_shapes_and_the_memory_bound(shape):
    """Top-left causal masks with L != S (keys no query sees get zero gradients), and P kept
    only while it is no larger than q, k, v and out together."""
    b, h, length, source, d = shape
    rng = np.random.default_rng(3)
    q = rng.standard_normal((b, h, length, d)).astype(np.float32)
    k, v = (rng.standard_normal((b, h, source, d)).astype(np.float32) for _ in range(2))
    g = rng.standard_normal((b, h, length, d)).astype(np.float32)
    out, lse = na.attention(q, k, v, 0.4, True)
    assert (type(lse) is na._SavedLSE) == na._keeps_probs(length, source, d)
    want = reference(q, k, v, 0.4, True, g)
    np.testing.assert_allclose(out, want[0], rtol=2e-4, atol=2e-5)
    for got, w in zip(na.attention_backward(g, q, k, v, out, lse, 0.4, True), want[2:]):
        np.testing.assert_allclose(got, w, rtol=2e-3, atol=2e-4)


def test_nan_scores_propagate():
    rng = np.random.default_rng(4)
    q, k, v, _ = (a.copy() for a in _qkv_views(rng, 1, 1, 8, 4))
    q[0, 0, 3, 1] = np.nan
    out, lse = na.attention(q, k, v, 0.5, True)
    assert np.isnan(lse[0, 0, 3]) and np.isnan(out[0, 0, 3]).all()
    assert not np.isnan(out[0, 0, :3]).any()


def test_retain_graph_backward_twice_gives_the_same_gradients():
    """Through autograd: the first backward uses the forward's P, the second (retain_graph)
    recomputes it; the gradients agree to the bit."""
    from tritongrad.nn import functional as F

    import tritongrad as tg

    rng = np.random.default_rng(5)
    q, k, v, g = _qkv_views(rng, 2, 2, 12, 8)
    q, k, v = (tg.tensor(np.ascontiguousarray(a), requires_grad=True) for a in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    first = tg.autograd.grad(y, (q, k, v), tg.tensor(np.ascontiguousarray(g)),
                             retain_graph=True)
    again = tg.autograd.grad(y, (q, k, v), tg.tensor(np.ascontiguousarray(g)))
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
