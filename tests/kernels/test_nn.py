"""The fused nn ops (GELU, layer norm, cross-entropy, embedding) against the NumPy backend
(its compiled loops and its NumPy forms: the ``cpu_forms`` fixture)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_kit import FLOATS, D, round_bf16, tk

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("cpu_forms")]

TOL = {D.float16: (2e-3, 2e-3), D.bfloat16: (1e-2, 2e-2), D.float32: (2e-5, 2e-6),
       D.float64: (1e-10, 1e-12)}


def _r(dtype, x):
    """A reference computed in float32 for bfloat16, rounded once (else as is)."""
    if dtype is D.bfloat16:
        return round_bf16(np.asarray(x, np.float32))
    return np.asarray(x)


def _check(kit, got, want, dtype, scale=1.0):
    r, a = TOL[dtype]
    kit.check(got, want, dtype, rtol=r, atol=a * scale, check_dtype=False)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gelu(kit, rng, dtype, approximate):
    x, rx = kit.pair((5, 7), dtype, rng, layout="T")
    g, rg = kit.pair((5, 7), dtype, rng)
    y = tk.gelu(x, approximate)
    assert y.dtype is dtype
    _check(kit, y, _r(dtype, kit.nk.gelu(rx, approximate)), dtype)
    _check(kit, tk.gelu_backward(g, x, approximate),
           _r(dtype, kit.nk.gelu_backward(rg, rx, approximate)), dtype)
    with pytest.raises(ValueError, match="approximate"):
        tk.gelu(x, "fast")
    # the GPU keeps no derivative (recomputing it is one pass); one given is multiplied in
    y2, d = tk.gelu(x, approximate, with_grad=True)
    assert d is None
    kit.check(y2, kit.down(y), dtype, rtol=0, atol=0, check_dtype=False)
    rd = kit.values((5, 7), dtype, rng)
    _check(kit, tk.gelu_backward(g, x, approximate, derivative=kit.up(rd, dtype)),
           _r(dtype, rg.astype(np.float32 if dtype is not D.float64 else np.float64) * rd),
           dtype)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_layer_norm(kit, rng, dtype, affine):
    # (70 rows: two programs, the second partial, each adding its own column sums to dweight
    # and dbias)
    for (m, n), layout in [((6, 37), "contig"), ((3, 8), "T"), ((1, 1), "contig"),
                           ((70, 37), "contig")]:
        x, rx = kit.pair((m, n), dtype, rng, layout=layout)
        w, rw = kit.pair((n,), dtype, rng) if affine else (None, None)
        b, rb = kit.pair((n,), dtype, rng) if affine else (None, None)
        y, mean, rstd = tk.layer_norm(x, w, b, 1e-5)
        ey, em, er = kit.nk.layer_norm(rx, rw, rb, 1e-5)
        _check(kit, y, _r(dtype, ey), dtype, scale=4)
        assert mean.dtype is (D.float64 if dtype is D.float64 else D.float32)
        _check(kit, mean, em, D.float32 if dtype is not D.float64 else dtype)
        _check(kit, rstd, er, D.float32 if dtype is not D.float64 else dtype, scale=10)
        g, rg = kit.pair((m, n), dtype, rng, layout="strided")
        dx, dw, db = tk.layer_norm_backward(g, x, w, mean, rstd)
        edx, edw, edb = kit.nk.layer_norm_backward(rg, rx, rw, em, er)
        _check(kit, dx, _r(dtype, edx), dtype, scale=10)
        if affine:
            _check(kit, dw, _r(dtype, edw), dtype, scale=10)
            _check(kit, db, _r(dtype, edb), dtype, scale=10)
            # separate memory: gradients sharing a storage are copied by AccumulateGrad
            assert getattr(dw, "storage", dw) is not getattr(db, "storage", db)
        else:
            assert dw is None and db is None


@pytest.mark.parametrize("affine", ["wb", "w", ""])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_batch_norm(kit, rng, dtype, affine):
    for shape, layout in [((6, 5), "contig"), ((4, 3, 5), "T"), ((3, 4, 2, 3), "strided"),
                          ((1, 2, 1, 1), "contig")]:
        c = shape[1]
        x, rx = kit.pair(shape, dtype, rng, layout=layout)
        w, rw = kit.pair((c,), dtype, rng) if "w" in affine else (None, None)
        b, rb = kit.pair((c,), dtype, rng) if "b" in affine else (None, None)
        y, mean, var = tk.batch_norm(x, w, b, 1e-5)
        ey, em, ev = kit.nk.batch_norm(rx, rw, rb, 1e-5)
        _check(kit, y, _r(dtype, ey), dtype, scale=4)
        assert mean.dtype is var.dtype is (D.float64 if dtype is D.float64 else D.float32)
        acc = D.float32 if dtype is not D.float64 else dtype
        _check(kit, mean, em, acc)
        _check(kit, var, ev, acc, scale=10)
        # and the NumPy backend against float64, by the definition
        x64 = np.asarray(kit.down(x) if dtype is D.bfloat16 else rx, np.float64)
        dims = (0,) + tuple(range(2, x64.ndim))
        m64 = x64.mean(dims, keepdims=True)
        v64 = ((x64 - m64) ** 2).mean(dims, keepdims=True)
        np.testing.assert_allclose(np.asarray(em, np.float64), m64.reshape(c), atol=1e-5)
        np.testing.assert_allclose(np.asarray(ev, np.float64), v64.reshape(c), rtol=1e-4,
                                   atol=1e-5)
        g, rg = kit.pair(shape, dtype, rng, layout="strided")
        dx, dw, db = tk.batch_norm_backward(g, x, w, mean, var, 1e-5)
        edx, edw, edb = kit.nk.batch_norm_backward(rg, rx, rw, em, ev, 1e-5)
        _check(kit, dx, _r(dtype, edx), dtype, scale=10)
        if w is not None:
            _check(kit, dw, _r(dtype, edw), dtype, scale=10)
            _check(kit, db, _r(dtype, edb), dtype, scale=10)
        else:
            assert dw is None and db is None


@pytest.mark.parametrize("order", [None, (0, 2, 3, 1), (0, 1, 3, 2)],
                         ids=["contiguous", "channels-last", "not collapsible"])
@pytest.mark.parametrize("dtype", [D.float32, D.float16], ids=str)
def test_batch_norm_fused_chunks(kit, rng, small_blocks, monkeypatch, dtype, order):
    # Note [fused batch norm]: each channel cut into several chunks of several blocks, the
    # chunks' statistics and sums folded per channel; three launches each way where the dims
    # after the channels collapse (contiguous, channels-last), the composed form where they
    # do not (H and W swapped); against the NumPy backend and float64
    from tritongrad.kernels.triton import launcher, normalization

    shape = (5, 3, 7, 3)
    rx = kit.values(shape, dtype, rng) * 3 + 1
    rg = kit.values(shape, dtype, rng)
    inverse = None if order is None else [order.index(d) for d in range(4)]
    x, g = (kit.up(np.ascontiguousarray(a.transpose(order)) if order else a, dtype)
            for a in (rx, rg))
    if order:
        x, g = x.permute(inverse), g.permute(inverse)
    w, rw = kit.pair((3,), D.float32, rng)
    fused = normalization._fusable(x, g) is not None
    assert fused is (order != (0, 1, 3, 2))
    assert normalization._grid_of(3, 35) == (8, 5)  # (5 chunks of 8 a channel, blocks of 4)
    launches = []
    call = launcher.Launch.__call__
    monkeypatch.setattr(launcher.Launch, "__call__",
                        lambda self, *a: launches.append(self.kernel) or call(self, *a))
    y, mean, var = tk.batch_norm(x, w, w, 1e-5)
    dx, dw, db = tk.batch_norm_backward(g, x, w, mean, var, 1e-5)
    if fused:
        assert len(launches) == 6
    ey, em, ev = kit.nk.batch_norm(rx, rw, rw, 1e-5)
    edx, edw, edb = kit.nk.batch_norm_backward(rg, rx, rw, em, ev, 1e-5)
    _check(kit, mean, em, D.float32)
    _check(kit, var, ev, D.float32, scale=10)
    _check(kit, y, _r(dtype, ey), dtype, scale=4)
    _check(kit, dx, _r(dtype, edx), dtype, scale=10)
    _check(kit, dw, edw, D.float32, scale=10)
    _check(kit, db, edb, D.float32, scale=10)
    assert y.strides == x.strides if fused else True  # (the input's layout, as PyTorch's)
    x64 = np.asarray(kit.down(x), np.float64)
    np.testing.assert_allclose(np.asarray(kit.down(var), np.float64),
                               x64.var((0, 2, 3)), rtol=1e-5)


@pytest.mark.parametrize("max_p", [2048, 1], ids=["one launch", "split reductions"])
@pytest.mark.parametrize("dtype", [D.float32, D.bfloat16], ids=str)
def test_layer_norm_parameter_gradients(kit, rng, small_blocks, monkeypatch, dtype, max_p):
    # dweight and dbias from many programs' partial rows, over two programs' worth of
    # columns: summed in one launch, or (past PARAM_GRADS_MAX_P rows) by the reduction kernel
    # and converted; either way two arrays of the weight's dtype
    from tritongrad.kernels.triton import nn as tnn

    monkeypatch.setattr(tnn, "PARAM_GRADS_MAX_P", max_p)
    x, rx = kit.pair((24, 20), dtype, rng)
    w, rw = kit.pair((20,), dtype, rng)
    y, mean, rstd = tk.layer_norm(x, w, w, 1e-5)
    g, rg = kit.pair((24, 20), dtype, rng)
    dx, dw, db = tk.layer_norm_backward(g, x, w, mean, rstd)
    edx, edw, edb = kit.nk.layer_norm_backward(rg, rx, rw, *kit.nk.layer_norm(rx, rw, rw,
                                                                              1e-5)[1:])
    for got, want in ((dw, edw), (db, edb)):
        assert got.dtype is dtype and got.shape == (20,)
        _check(kit, got, _r(dtype, want), dtype, scale=30)
    assert dw.storage is not db.storage


def test_layer_norm_long_rows(kit, rng, small_blocks):
    x, rx = kit.pair((5, 29), D.float32, rng)
    w, rw = kit.pair((29,), D.float32, rng)
    y, mean, rstd = tk.layer_norm(x, w, None, 1e-5)
    ey, em, er = kit.nk.layer_norm(rx, rw, None, 1e-5)
    kit.check(y, ey, atol=1e-5)
    g, rg = kit.pair((5, 29), D.float32, rng)
    dx, dw, db = tk.layer_norm_backward(g, x, w, mean, rstd)
    edx, edw, edb = kit.nk.layer_norm_backward(rg, rx, rw, em, er)
    kit.check(dx, edx, atol=1e-5)
    kit.check(dw, edw, atol=1e-5)
    kit.check(db, edb, atol=1e-5)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cross_entropy(kit, rng, dtype, smoothing):
    for (n, c), layout in [((6, 11), "contig"), ((4, 5), "T"), ((3, 1), "contig")]:
        x, rx = kit.pair((n, c), dtype, rng, layout=layout)
        t = rng.integers(0, c, n).astype(np.int64)
        t[1 % n] = -100
        loss, lse = tk.cross_entropy(x, kit.up(t), -100, smoothing)
        el, else_ = kit.nk.cross_entropy(rx, t, -100, smoothing)
        _check(kit, loss, _r(dtype, el), dtype, scale=4)
        _check(kit, lse, else_, D.float32 if dtype is not D.float64 else dtype)
        g, rg = kit.pair((n,), dtype, rng)
        _check(kit, tk.cross_entropy_backward(g, x, kit.up(t), lse, -100, smoothing),
               _r(dtype, kit.nk.cross_entropy_backward(rg, rx, t, else_, -100, smoothing)),
               dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_mean_over_targets(kit, rng, dtype):
    # the 'mean' reduction of cross-entropy in one launch: the losses' sum and the count of
    # rows not ignored, each rounded to the dtype, then their quotient; every row ignored
    # gives 0 / 0 (NaN, as PyTorch's); strided operands; more rows than one block holds
    for n, ignored, step in [(1, 0, 1), (7, 2, 1), (5000, 900, 2), (4, 4, 1)]:
        rv = kit.values((n * step,), dtype, rng)
        t = rng.integers(0, 5, n * step).astype(np.int64)
        t[rng.permutation(n)[:ignored] * step] = -100
        rv[t == -100] = 0  # (an ignored row's loss)
        v = kit.up(rv, dtype)
        loss, tt = v.as_strided((n,), (step,), 0), kit.up(t).as_strided((n,), (step,), 0)
        mean, count = tk.mean_over_targets(loss, tt, -100)
        want_mean, want_count = kit.nk.mean_over_targets(rv[::step].copy(), t[::step].copy(),
                                                         -100)
        assert mean.shape == count.shape == () and mean.dtype is dtype is count.dtype
        counted = (round_bf16(np.float32(n - ignored)) if dtype is D.bfloat16 else
                   np.asarray(n - ignored, dtype.np))  # (in the dtype: 4100 is 4096 in bf16)
        assert float(kit.down(count)) == float(counted)
        if dtype is not D.bfloat16:  # (the NumPy backend gets bfloat16 as float32 here)
            assert float(want_count) == float(counted)
        total = float(np.sum(np.asarray(kit.down(loss), dtype=np.float64)))
        if n == ignored:
            assert np.isnan(float(kit.down(mean))) and np.isnan(float(want_mean))
        else:
            rtol = {D.float16: 2e-3, D.bfloat16: 1.6e-2}.get(dtype, 1e-5)
            np.testing.assert_allclose(float(kit.down(mean)), total / (n - ignored), rtol=rtol)
            np.testing.assert_allclose(float(kit.down(mean)), float(want_mean), rtol=rtol)


def test_cross_entropy_long_rows_and_extremes(kit, rng, small_blocks):
    rx = (rng.standard_normal((5, 40)) * 30).astype(np.float32)
    rx[2, :] = -np.inf
    rx[2, 3] = 0.0
    t = rng.integers(0, 40, 5).astype(np.int64)
    t[2] = 3
    loss, lse = tk.cross_entropy(kit.up(rx), kit.up(t), -100, 0.0)
    el, else_ = kit.nk.cross_entropy(rx, t, -100, 0.0)
    kit.check(loss, el, rtol=1e-5, atol=1e-4)
    kit.check(lse, else_, rtol=1e-6, atol=1e-5)
    g = np.ones(5, np.float32)
    kit.check(tk.cross_entropy_backward(kit.up(g), kit.up(rx), kit.up(t), lse, -100, 0.0),
              kit.nk.cross_entropy_backward(g, rx, t, else_, -100, 0.0), atol=1e-6)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_embedding(kit, rng, dtype):
    w, rw = kit.pair((10, 4), dtype, rng)
    ix = rng.integers(0, 10, (3, 5)).astype(np.int64)
    kit.check(tk.embedding(w, kit.up(ix)), kit.nk.embedding(rw, ix), dtype, check_dtype=False,
              rtol=0, atol=0)
    kit.check(tk.embedding(w, kit.up(ix.astype(np.int32))), kit.nk.embedding(rw, ix), dtype,
              check_dtype=False, rtol=0, atol=0)
    g, rg = kit.pair((3, 5, 4), dtype, rng, layout="T")
    for pad in (None, 2, -1):
        got = tk.embedding_backward(g, kit.up(ix), 10, pad)
        assert got.dtype is dtype and got.shape == (10, 4)
        want = kit.nk.embedding_backward(rg, ix, 10, pad)
        _check(kit, got, _r(dtype, want), dtype, scale=4)


@pytest.mark.parametrize("dtype", [D.float32, D.float64], ids=str)
def test_embedding_backward_sums_each_row_in_index_order(kit, rng, dtype, monkeypatch):
    """Note [deterministic embedding backward]: each row's gradients are added in the indices'
    order from zero (the compiled CPU loop's order: the very bits), without atomics; past
    DETERMINISTIC_MAX_N the atomics take over, with the same sums up to rounding."""
    from tritongrad.kernels.triton import nn as tnn
    ix = np.concatenate([rng.integers(0, 6, 200), [5] * 40, [0]]).astype(np.int64)
    # magnitudes 10^-6..10^6: a sum in any other order would differ in its last bits
    rg = (rng.standard_normal((ix.size, 19)) * 10.0 ** rng.uniform(-6, 6, (ix.size, 1))
          ).astype(dtype.np)
    g = kit.up(rg)
    for pad in (None, 5):
        want = np.zeros((9, 19), dtype.np)
        for i, row in enumerate(ix):  # in order, one rounding per addition
            want[row] += rg[i]
        if pad is not None:
            want[pad] = 0
        atomics = []
        monkeypatch.setattr(tnn, "index_put_", lambda *a: atomics.append(a))
        got = kit.down(tk.embedding_backward(g, kit.up(ix), 9, pad))
        assert not atomics and np.array_equal(got, want)  # rows 6-8 and the padding row: 0
        monkeypatch.undo()
        monkeypatch.setattr(tnn, "DETERMINISTIC_MAX_N", ix.size - 1)
        np.testing.assert_allclose(kit.down(tk.embedding_backward(g, kit.up(ix), 9, pad)), want,
                                   rtol=1e-12 if dtype is D.float64 else 1e-5,
                                   atol=1e-12 * np.abs(rg).max())
        monkeypatch.undo()
