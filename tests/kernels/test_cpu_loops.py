"""The compiled CPU loops (kernels/numpy/jit.py, nn_loops.py, elementwise_loops.py): on by default
where Numba imports, off under TRITONGRAD_CPU_JIT=0, and each loop (exp, GELU, ReLU's backward,
sigmoid and the tanh and sigmoid derivatives, layer and batch norm, embedding's backward;
the fused multiply-add they use)
against float64 references and the NumPy form it replaces (the kernels' own tests also run
both forms, through the ``cpu_forms`` fixture)."""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

jit = importlib.import_module("tritongrad.kernels.numpy.jit")
nn = importlib.import_module("tritongrad.kernels.numpy.nn")

needs_loops = pytest.mark.skipif(not jit.enabled(), reason="the compiled CPU loops are off")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def test_loops_are_on_where_numba_imports():
    # Numba is a dependency: where it imports, the loops must run (or CI would test only the
    # NumPy forms without noticing), unless switched off on purpose
    if os.environ.get("TRITONGRAD_CPU_JIT", "1") == "0":
        assert not jit.enabled()
    elif importlib.util.find_spec("numba") is not None:
        assert jit.enabled() and jit.loops("nn_loops") is not None


def test_switch_off_by_environment():
    code = ("import numpy as np, tritongrad.kernels.numpy.jit as jit, sys\n"
            "import tritongrad.kernels.numpy.nn as nn\n"
            "assert not jit.enabled() and jit.loops('nn_loops') is None\n"
            "y = nn.gelu(np.array([1.0, -1.0], np.float32), 'none')\n"
            "assert abs(y[0] - 0.8413447) < 1e-6 and 'numba' not in sys.modules\n")
    env = dict(os.environ, TRITONGRAD_CPU_JIT="0")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


def test_disabled_context_restores():
    before = jit.enabled()
    with jit.disabled():
        assert not jit.enabled() and jit.loops("nn_loops") is None
    assert jit.enabled() == before


@needs_loops
def test_fma_rounds_once():
    loops = jit.loops("nn_loops")
    fma = jit.compile(lambda a, b, c: loops._fma(a, b, c))
    e = np.float32(2.0 ** -13)
    one = np.float32(1)
    # (1 + e)(1 - e) - 1 = -e^2: kept by one rounding, lost (0) when the product is rounded
    assert fma(one + e, one - e, -one) == np.float32(-(2.0 ** -26))
    assert (one + e) * (one - e) - one == 0
    assert fma(2.0 ** -30, 2.0 ** -30 + 1, 1.0) == 1 + 2.0 ** -30 + 2.0 ** -60  # float64 too
    assert np.isnan(fma(np.float32(np.inf), np.float32(0), one))
    assert fma(np.float32(np.inf), one, one) == np.inf


@needs_loops
def test_exp_float32():
    loops = jit.loops("nn_loops")
    exp = np.vectorize(loops._exp, otypes=[np.float32])
    x = np.concatenate([np.linspace(-104, 88.7, 20001), np.linspace(-1, 1, 2001)]).astype(np.float32)
    got = exp(x).astype(np.float64)
    want = np.exp(x.astype(np.float64))
    normal = want > 1.2e-38
    assert np.all(np.abs(got - want)[normal] <= 2.5e-7 * want[normal])  # ~2 ulp
    # denormal results keep their absolute accuracy; below e^-104, 0; NaN stays NaN
    assert np.all(np.abs(got - want)[~normal] <= 2e-45)
    np.testing.assert_array_equal(exp(np.array([-105.0, -1e30, -np.inf], np.float32)), 0.0)
    np.testing.assert_array_equal(exp(np.array([88.8, 1e30, np.inf], np.float32)), np.inf)
    assert np.isnan(exp(np.array([np.nan], np.float32))[0])


@needs_loops
def test_gelu_loops_match_the_numpy_form():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(50_000) * 4, np.linspace(-15, 15, 30_001),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e5, -1e5, 3e38, -3e38]])
    x = x.astype(np.float32)
    g = rng.standard_normal(x.size).astype(np.float32)
    y, d = nn.gelu(x, "none", with_grad=True)
    dx = nn.gelu_backward(g, x, "none")
    with jit.disabled():
        y0, d0 = nn.gelu(x, "none", with_grad=True)
        dx0 = nn.gelu_backward(g, x, "none")
    for a, b, tol in ((y, y0, 1e-7), (d, d0, 1e-7), (dx, dx0, 5e-7)):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(a)
        np.testing.assert_allclose(a[ok], b[ok], rtol=1e-6, atol=tol)
    # relative accuracy of the negative tail, as the NumPy form's
    tail = (x < -3) & (x > -13)
    np.testing.assert_allclose(y[tail], y0[tail], rtol=1e-5)


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.int64, np.int32])
def test_embedding_backward_loop(dtype, itype):
    rng = np.random.default_rng(2)
    idx = rng.integers(0, 13, (7, 50)).astype(itype)
    idx[0, :5] = 12  # a row hit many times, one never (0 excluded below)
    idx[idx == 0] = 1
    g = rng.standard_normal((50, 7, 33)).astype(dtype).transpose(1, 0, 2)  # (strided rows)
    want = np.zeros((13, 33))
    np.add.at(want, idx.reshape(-1), g.reshape(-1, 33).astype(np.float64))
    for pad in (None, 12, -1):
        got = nn.embedding_backward(g, idx, 13, pad)
        w = want.copy()
        if pad is not None:
            w[pad] = 0
        assert got.dtype == dtype and got.shape == (13, 33)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, w, rtol=tol, atol=tol)
        assert not got[0].any()
        with jit.disabled():
            np.testing.assert_allclose(nn.embedding_backward(g, idx, 13, pad), got, rtol=tol,
                                       atol=tol)
    with pytest.raises(IndexError):
        nn.embedding_backward(g, np.full_like(idx, 13), 13, None)


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_loop(dtype):
    ew = importlib.import_module("tritongrad.kernels.numpy.elementwise")
    rng = np.random.default_rng(1)
    y = rng.standard_normal((37, 29)).astype(dtype)
    g = rng.standard_normal((37, 29)).astype(dtype)
    y.flat[:7] = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-300, -1e-300]
    g.flat[:7] = [1.0, np.inf, -np.inf, np.nan, 2.0, -3.0, np.nan]
    got = ew._relu_backward(g, y)
    # PyTorch's threshold_backward: +0 where y <= 0, g elsewhere (a NaN y passes g on)
    want = np.where(np.less_equal(y, 0), 0.0, g.astype(np.float64))
    assert got.dtype == dtype and got.shape == g.shape
    np.testing.assert_array_equal(got, want.astype(dtype))
    assert not np.signbit(got[np.less_equal(y, 0)]).any()
    with jit.disabled():
        np.testing.assert_array_equal(ew._relu_backward(g, y), got)
    # strided operands keep the NumPy form, with the same result
    np.testing.assert_array_equal(ew._relu_backward(g.T, y.T), got.T)


@needs_loops
def test_sigmoid_ufunc_against_float64():
    ew = importlib.import_module("tritongrad.kernels.numpy.elementwise")
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(20_000) * 5, np.linspace(-87, 88, 20_001),
                        [0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30]]).astype(np.float32)
    got = ew._sigmoid(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    normal = want > 1.2e-38
    assert np.all(np.abs(got - want)[normal] <= 2.5e-7 * want[normal])  # ~2 ulp
    assert np.all(np.abs(got - want)[~normal] <= 1.2e-38)
    with jit.disabled():
        np.testing.assert_allclose(ew._sigmoid(x), got, rtol=3e-7, atol=1.2e-38)
    # the ends and NaN; far below, 0 or a denormal (the true values are below 1.2e-38)
    edge = ew._sigmoid(np.array([np.inf, -np.inf, np.nan, 100.0, -100.0], np.float32))
    np.testing.assert_array_equal(edge[:2], [1.0, 0.0])
    assert np.isnan(edge[2]) and edge[3] == 1.0 and 0 <= edge[4] < 1.2e-38
    # 0-d, strided and 3-D inputs come back as arrays of their shape
    assert isinstance(ew._sigmoid(np.float32(0.5)[()] * np.ones((), np.float32)), np.ndarray)
    m = x[:4096].reshape(16, 16, 16)
    np.testing.assert_array_equal(ew._sigmoid(m.transpose(2, 0, 1)), got[:4096].reshape(
        16, 16, 16).transpose(2, 0, 1))


@needs_loops
@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_backward_ufuncs_are_the_numpy_form(name, dtype):
    # one pass with the NumPy form's operations in its order: the same bits, for any layout,
    # broadcast operands and out=; other dtypes (float16) keep the NumPy form
    ew = importlib.import_module("tritongrad.kernels.numpy.elementwise")
    rng = np.random.default_rng(3)
    y = np.tanh(rng.standard_normal((33, 17)) * 2).astype(dtype)
    g = rng.standard_normal((33, 17)).astype(dtype)
    y.flat[:4] = [np.nan, np.inf, -1.0, 0.0]
    g.flat[4:7] = [np.inf, np.nan, -0.0]
    got = ew.binary(name, g, y)
    want = (g * (1 - y * y)) if name == "tanh_backward" else (g * ((1 - y) * y))
    assert got.dtype == dtype and got.shape == g.shape
    np.testing.assert_array_equal(got, want)
    with jit.disabled():
        np.testing.assert_array_equal(ew.binary(name, g, y), got)
    np.testing.assert_array_equal(ew.binary(name, g.T, y.T), got.T)
    np.testing.assert_array_equal(ew.binary(name, g, y[:1]), ew.binary(name, g, np.broadcast_to(
        y[:1], g.shape).copy()))
    out = np.empty((33, 17), np.float64)
    assert ew.binary(name, g, y, out) is out
    np.testing.assert_array_equal(out, got.astype(np.float64))
    h = ew.binary(name, g.astype(np.float16), y.astype(np.float16))
    assert h.dtype == np.float16


def _layer_norm64(x, w, b, eps):
    x = x.astype(np.float64)
    mean = x.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    y = xhat * (1.0 if w is None else w) + (0.0 if b is None else b)
    return y, mean[:, 0], rstd[:, 0], xhat


@needs_loops
@settings(max_examples=40, deadline=None)
@given(m=st.integers(0, 9), n=st.integers(1, 70), affine=st.sampled_from(["wb", "w", "b", ""]),
       offset=st.sampled_from([0.0, 3.0, 1e3]), seed=st.integers(0, 2**16))
def test_layer_norm_loops_against_float64(m, n, affine, offset, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((m, n)) + offset).astype(np.float32)
    g = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32) if "w" in affine else None
    b = rng.standard_normal(n).astype(np.float32) if "b" in affine else None
    y, mean, rstd = nn.layer_norm(x, w, b, 1e-5)
    y64, mean64, rstd64, xhat = _layer_norm64(x, w, b, 1e-5)
    assert y.dtype == mean.dtype == rstd.dtype == np.float32 and y.shape == (m, n)
    scale = 1.0 if w is None else 1.0 + np.abs(w).max()
    # float32 x - mean is off by up to an ulp of the offset (as in any float32 layer norm)
    spread = 2e-5 + offset * 2.4e-7 * rstd64.max(initial=1.0)
    np.testing.assert_allclose(y, y64, atol=spread * scale)
    np.testing.assert_allclose(mean, mean64, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rstd, rstd64, rtol=5e-4 if offset >= 1e3 else 1e-5)
    dx, dw, db = nn.layer_norm_backward(g, x, w, mean, rstd)
    gw = g * (1.0 if w is None else w.astype(np.float64))
    dx64 = rstd64[:, None] * (gw - gw.mean(1, keepdims=True)
                              - xhat * (gw * xhat).mean(1, keepdims=True))
    np.testing.assert_allclose(dx, dx64, atol=(5e-5 + 4 * spread) * scale
                               * rstd64.max(initial=1.0))
    if w is None:
        assert dw is None and db is None
    else:
        np.testing.assert_allclose(dw, (g * xhat).sum(0), atol=(1e-4 + 4 * spread) * max(m, 1))
        np.testing.assert_allclose(db, g.sum(0, dtype=np.float64), atol=1e-5 * max(m, 1))
        with jit.disabled():
            ref = nn.layer_norm_backward(g, x, w, mean, rstd)
        for a, r in zip((dx, dw, db), ref):
            np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)


@needs_loops
def test_layer_norm_loops_non_finite_rows():
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 0.0, 1.0], [1.0, 2.0, 4.0]], np.float32)
    y, mean, _ = nn.layer_norm(x, None, None, 1e-5)
    with jit.disabled():
        y0 = nn.layer_norm(x, None, None, 1e-5)[0]
    np.testing.assert_array_equal(np.isnan(y), np.isnan(y0))
    assert np.isnan(y[:2]).all() and np.isfinite(y[2]).all()
    np.testing.assert_allclose(y[2], y0[2], rtol=1e-6)
    assert math.isclose(float(mean[2]), 7 / 3, rel_tol=1e-6)


@needs_loops
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), c=st.integers(1, 5), spatial=st.sampled_from([(), (3,), (2, 3)]),
       affine=st.sampled_from(["wb", "w", ""]), offset=st.sampled_from([0.0, 3.0]),
       seed=st.integers(0, 2**16))
def test_batch_norm_loops_against_float64(n, c, spatial, affine, offset, seed):
    rng = np.random.default_rng(seed)
    shape = (n, c, *spatial)
    x = (rng.standard_normal(shape) + offset).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(c).astype(np.float32) if "w" in affine else None
    b = rng.standard_normal(c).astype(np.float32) if "b" in affine else None
    y, mean, var = nn.batch_norm(x, w, b, 1e-5)
    dims = (0,) + tuple(range(2, len(shape)))
    x64 = x.astype(np.float64)
    m64 = x64.mean(dims, keepdims=True)
    v64 = ((x64 - m64) ** 2).mean(dims, keepdims=True)
    rstd = 1 / np.sqrt(v64 + 1e-5)
    xhat = (x64 - m64) * rstd
    cshape = (1, c) + (1,) * len(spatial)
    w64 = 1.0 if w is None else w.astype(np.float64).reshape(cshape)
    y64 = xhat * w64 + (0.0 if b is None else b.reshape(cshape))
    assert y.dtype == mean.dtype == var.dtype == np.float32 and y.shape == shape
    np.testing.assert_allclose(mean, m64.reshape(c), atol=1e-6)
    np.testing.assert_allclose(var, v64.reshape(c), rtol=1e-5, atol=1e-6)
    scale = 1.0 if w is None else 1.0 + np.abs(w).max()
    np.testing.assert_allclose(y, y64, atol=2e-5 * scale * max(1.0, rstd.max()))
    dx, dw, db = nn.batch_norm_backward(g, x, w, mean, var, 1e-5)
    gw = g * w64
    count = x.size // c
    dx64 = rstd * (gw - gw.sum(dims, keepdims=True) / count
                   - xhat * (gw * xhat).sum(dims, keepdims=True) / count)
    np.testing.assert_allclose(dx, dx64, atol=5e-5 * scale * max(1.0, rstd.max()))
    if w is None:
        assert dw is None and db is None
    else:
        np.testing.assert_allclose(dw, (g * xhat).sum(dims), atol=1e-4 * count)
        np.testing.assert_allclose(db, g.sum(dims, dtype=np.float64), atol=1e-5 * count)
    with jit.disabled():  # and the NumPy form agrees
        ref = nn.batch_norm(x, w, b, 1e-5) + nn.batch_norm_backward(g, x, w, mean, var, 1e-5)
    for a, r in zip((y, mean, var, dx, dw, db), ref):
        if a is not None:
            np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)


_SGD_CASES = [dict(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False),
              dict(momentum=0.9, dampening=0.1, weight_decay=1e-2, nesterov=False, maximize=True),
              dict(momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=True, maximize=False)]


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(_SGD_CASES)))
def test_sgd_loop_is_the_numpy_form_to_the_bit(dtype, case):
    opt = importlib.import_module("tritongrad.kernels.numpy.optim")
    rng = np.random.default_rng(case)
    runs = []
    for off in (False, True):
        p = rng.standard_normal(70_001).astype(dtype) if not runs else runs[0][2].copy()
        p0 = p.copy()
        buf = np.zeros_like(p)
        for step in range(3):
            g = np.random.default_rng(step).standard_normal(p.size).astype(dtype)
            g[:3] = (np.nan, np.inf, -0.0)
            if off:
                with jit.disabled():
                    opt.sgd_step(p, g, buf, 0.1, first_step=step == 0, **_SGD_CASES[case])
            else:
                opt.sgd_step(p, g, buf, 0.1, first_step=step == 0, **_SGD_CASES[case])
        runs.append((p, buf, p0))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


@needs_loops
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("amsgrad,decoupled,weight_decay,maximize",
                         [(False, False, 0.0, False), (True, False, 1e-2, True),
                          (False, True, 1e-2, False), (True, True, 0.1, False)])
def test_adam_loop_is_the_numpy_form_to_the_bit(dtype, amsgrad, decoupled, weight_decay,
                                                maximize):
    opt = importlib.import_module("tritongrad.kernels.numpy.optim")
    p0 = np.random.default_rng(1).standard_normal(70_001).astype(dtype)
    states = []
    for off in (False, True):
        p, m, v, vmax = p0.copy(), np.zeros_like(p0), np.zeros_like(p0), np.zeros_like(p0)
        for step in range(1, 4):
            g = np.random.default_rng(step).standard_normal(p.size).astype(dtype)
            g[:2] = (np.nan, -0.0)
            args = (p, g, m, v, vmax, step, 1e-3, 0.9, 0.999, 1e-8, weight_decay, amsgrad,
                    maximize, decoupled)
            if off:
                with jit.disabled():
                    opt.adam_step(*args)
            else:
                opt.adam_step(*args)
        states.append((p, m, v, vmax))
    for a, b in zip(*states):
        np.testing.assert_array_equal(a, b)


def _max_pool_reference(x, kernel, stride, padding, dilation, out):
    """PyTorch's scan, element by element: the first strictly greater value, the last NaN, a
    window of -inf at its first position inside the input."""
    n, c, sizes = x.shape[0], x.shape[1], x.shape[2:]
    values = np.empty((n, c) + out, x.dtype)
    index = np.empty((n, c) + out, np.int64)
    for nc in np.ndindex(n, c):
        for o in np.ndindex(*out):
            best, at = None, None
            for t in np.ndindex(*kernel):
                q = [o[i] * stride[i] - padding[i] + t[i] * dilation[i] for i in range(len(o))]
                if any(not 0 <= v < s for v, s in zip(q, sizes)):
                    continue
                v = x[nc + tuple(q)]
                if at is None or v > best or v != v:
                    best, at = v, int(np.ravel_multi_index(q, sizes))
            values[nc + o], index[nc + o] = best, at
    return values, index


@pytest.mark.parametrize("form", ["loops", "numpy"])
@settings(max_examples=25, deadline=None)
@given(nd=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_max_pool_kernels_against_the_scan(form, nd, seed):
    if form == "loops" and not jit.enabled():
        pytest.skip("the compiled CPU loops are off")
    pool = importlib.import_module("tritongrad.kernels.numpy.pool")
    rng = np.random.default_rng(seed)
    sizes = tuple(int(v) for v in rng.integers(2, 7, nd))
    kernel = tuple(int(v) for v in rng.integers(1, 4, nd))
    stride = tuple(int(v) for v in rng.integers(1, 3, nd))
    dilation = tuple(int(v) for v in rng.integers(1, 3, nd))
    padding = tuple(int(rng.integers(0, (d * (k - 1) + 1) // 2 + 1))
                    for k, d in zip(kernel, dilation))
    out = tuple((s + 2 * p - d * (k - 1) - 1) // st_ + 1 for s, k, st_, p, d
                in zip(sizes, kernel, stride, padding, dilation))
    if min(out) < 1:
        return
    x = rng.standard_normal((2, 3) + sizes).astype(np.float32)
    for value in (np.nan, -np.inf, 0.5):  # NaNs, -inf windows and ties
        x.flat[rng.integers(0, x.size, 3)] = value
    want = _max_pool_reference(x, kernel, stride, padding, dilation, out)
    if form == "numpy":
        with jit.disabled():
            got = pool.max_pool(x, kernel, stride, padding, dilation, out)
    else:
        got = pool.max_pool(x, kernel, stride, padding, dilation, out)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    g = rng.standard_normal(want[0].shape).astype(np.float32)
    dx = np.zeros((6, x[0, 0].size))
    np.add.at(dx, (np.arange(6)[:, None], want[1].reshape(6, -1)), g.reshape(6, -1))
    if form == "numpy":
        with jit.disabled():
            got_dx = pool.max_pool_backward(g, got[1], x.shape)
    else:
        got_dx = pool.max_pool_backward(g, got[1], x.shape)
    assert got_dx.dtype == np.float32
    np.testing.assert_allclose(got_dx, dx.reshape(x.shape), rtol=1e-6, atol=1e-6)
