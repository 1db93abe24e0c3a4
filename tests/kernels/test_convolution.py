"""2-D convolution kernels: the NumPy backend (im2col over BLAS; with its compiled loops,
conv_loops.py, and without) against a direct loop in float64, and the Triton implicit-GEMM
kernels (through the interpreter) against the NumPy backend in float64, forward and backward,
over strides, paddings, dilations, groups and odd sizes, every float dtype, strided operands
and multi-program grids."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_kit import FLOATS, D, tk
from tritongrad.kernels import numpy as nk

conv_mod = importlib.import_module("tritongrad.kernels.triton.conv")
jit = importlib.import_module("tritongrad.kernels.numpy.jit")
np_conv = importlib.import_module("tritongrad.kernels.numpy.conv")

# (N, C, H, W, O, KH, KW, stride, padding, dilation, groups)
CASES = [
    (2, 4, 7, 8, 8, 3, 2, (1, 1), (0, 0), (1, 1), 1),
    (2, 4, 7, 8, 8, 3, 2, (2, 1), (1, 2), (1, 1), 1),
    (2, 4, 7, 8, 8, 3, 2, (1, 2), (2, 1), (2, 1), 2),
    (2, 4, 7, 8, 8, 3, 2, (3, 2), ((1, 0), (0, 2)), (1, 2), 4),  # asymmetric padding
    (1, 3, 5, 9, 5, 1, 1, (1, 1), (0, 0), (1, 1), 1),            # 1x1, odd channel counts
    (3, 6, 6, 5, 6, 3, 3, (1, 1), (1, 1), (1, 1), 6),            # depthwise
    (1, 5, 11, 4, 3, 5, 1, (2, 3), (2, 0), (2, 1), 1),           # tall kernel, odd sizes
    (2, 2, 4, 1, 4, 2, 1, (1, 1), ((0, 1), (0, 0)), (1, 1), 2),  # width one (conv1d shape)
    (1, 2, 5, 5, 3, 2, 2, (1, 1), (2, 2), (1, 1), 1),            # padding past the kernel
]
IDS = [f"case{i}" for i in range(len(CASES))]
# the CPU backend's own paths (channels-last columns, the depthwise multiply-adds and their
# col2im): numpy-only, the Triton kernels have no such branches
CPU_CASES = CASES + [
    (2, 6, 9, 7, 6, 3, 3, (2, 1), ((0, 2), (1, 0)), (2, 1), 6),  # depthwise, col2im backward
    (2, 6, 9, 7, 6, 2, 3, (1, 2), (1, 1), (1, 1), 6),            # depthwise, strided columns
    (2, 4, 6, 6, 8, 3, 3, (1, 1), (1, 1), (1, 1), 4),            # channel multiplier 2
    (2, 6, 5, 5, 4, 3, 3, (2, 2), (1, 1), (1, 1), 2),            # groups, col2im
]
CPU_IDS = [f"case{i}" for i in range(len(CPU_CASES))]
TOL = {D.float16: 4e-3, D.bfloat16: 3e-2, D.float32: 2e-5, D.float64: 1e-11}


def _pads(padding):
    return [(p, p) if isinstance(p, int) else tuple(p) for p in padding]


def _direct(x, w, b, stride, padding, dilation, groups):
    """Convolution by a loop over the taps, float64 (the definition, independently coded)."""
    (pt, pb), (pl, pr) = _pads(padding)
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j].astype(np.float64))
    if b is not None:
        out += b.astype(np.float64).reshape(1, -1, 1, 1)
    return out


def _inputs(case, rng):
    n, c, h, w, o, kh, kw, stride, padding, dilation, groups = case
    x = rng.standard_normal((n, c, h, w))
    wt = rng.standard_normal((o, c // groups, kh, kw))
    b = rng.standard_normal(o)
    return x, wt, b, (stride, padding, dilation, groups)


# -- the NumPy backend -------------------------------------------------------------------------
@pytest.mark.parametrize("case", CPU_CASES, ids=CPU_IDS)
def test_numpy_forward_and_backward_match_the_definition(case, rng, cpu_forms):
    x, w, b, args = _inputs(case, rng)
    y = nk.conv2d(x, w, b, *args)
    np.testing.assert_allclose(y, _direct(x, w, b, *args), rtol=1e-12, atol=1e-12)
    assert y.dtype == np.float64 and y.flags.c_contiguous
    g = rng.standard_normal(y.shape)
    dx, dw, db = nk.conv2d_backward(g, x, w, *args, (True, True, True))
    # the backward is the adjoint of the (bilinear) forward: <g, y(x, w)> = <dx, x> = <dw, w>
    yb = y - b.reshape(1, -1, 1, 1)
    assert np.isclose((g * yb).sum(), (dx * x).sum(), rtol=1e-11, atol=1e-11)
    assert np.isclose((g * yb).sum(), (dw * w).sum(), rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(db, g.sum((0, 2, 3)), rtol=1e-12)
    # and each is the derivative: d<g, y>/dx[i] by the definition for one element each
    for arr, grad in ((x, dx), (w, dw)):
        idx = tuple(rng.integers(0, s) for s in arr.shape)
        e = np.zeros_like(arr)
        e[idx] = 1.0
        lin = (g * _direct(*(e, w) if arr is x else (x, e), None, *args)).sum()
        assert np.isclose(grad[idx], lin, rtol=1e-10, atol=1e-10)
    assert nk.conv2d_backward(g, x, w, *args, (False, True, False))[::2] == (None, None)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_numpy_lower_precisions_compute_in_float32(dtype, rng, cpu_forms):
    x, w, b, args = _inputs(CASES[2], rng)
    x, w, b = x.astype(dtype), w.astype(dtype), b.astype(dtype)
    y = nk.conv2d(x, w, b, *args)
    assert y.dtype == dtype
    ref = _direct(x, w, b, *args)
    np.testing.assert_allclose(y, ref, rtol=TOL[D.from_numpy_dtype(np.dtype(dtype))] * 5,
                               atol=TOL[D.from_numpy_dtype(np.dtype(dtype))] * 5)
    dx, dw, db = nk.conv2d_backward(y, x, w, *args, (True, True, True))
    assert dx.dtype == dw.dtype == db.dtype == dtype


def test_numpy_bfloat16(cpu_forms):
    from tritongrad.kernels import host_array, host_values
    rng = np.random.default_rng(3)
    x, w, b, args = _inputs(CASES[1], rng)
    xb, wb, bb = (host_array(a, D.bfloat16) for a in (x, w, b))
    y = nk.conv2d(xb, wb, bb, *args)
    assert type(y) is type(xb)
    ref = _direct(host_values(xb), host_values(wb), host_values(bb), *args)
    np.testing.assert_allclose(host_values(y), ref, rtol=2e-2, atol=5e-2)
    dx, dw, db = nk.conv2d_backward(y, xb, wb, *args, (True, True, True))
    assert all(type(a) is type(xb) for a in (dx, dw, db))


@st.composite
def _geometries(draw):
    """A random valid convolution: any kernel, stride, dilation and (asymmetric) padding up
    to 3, groups with 1-3 channels each way (depthwise included), batches from 0."""
    groups = draw(st.integers(1, 3))
    cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple((draw(st.integers(0, 3)), draw(st.integers(0, 3))) for _ in range(2))
    # the smallest input the dilated kernel fits once padded, plus up to 5
    h = max(1, dilation[0] * (kh - 1) + 1 - sum(pads[0])) + draw(st.integers(0, 5))
    w = max(1, dilation[1] * (kw - 1) + 1 - sum(pads[1])) + draw(st.integers(0, 5))
    n = draw(st.integers(0, 3))
    return (n, groups * cg, h, w, groups * og, kh, kw, stride, pads, dilation, groups)


@settings(max_examples=60, deadline=None)
@given(case=_geometries(), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**16))
def test_numpy_forms_agree_on_random_geometries(case, dtype, seed):
    """The compiled loops (col2im, the channels-first pass) against the NumPy forms they
    replace, and both against the definition in float64."""
    rng = np.random.default_rng(seed)
    x, w, b, args = _inputs(case, rng)
    x, w, b = x.astype(dtype), w.astype(dtype), b.astype(dtype)
    bias = b if seed % 2 else None
    ref = _direct(x, w, bias, *args)
    g = rng.standard_normal(ref.shape).astype(dtype)
    tol = TOL[D.from_numpy_dtype(np.dtype(dtype))] * 10
    results = []
    for form in ("loops", "numpy"):
        if form == "loops" and not jit.enabled():
            continue
        with jit.disabled() if form == "numpy" else _nothing():
            y = nk.conv2d(x, w, bias, *args)
            grads = nk.conv2d_backward(g, x, w, *args, (True, True, True))
        assert y.dtype == dtype and y.flags.c_contiguous
        np.testing.assert_allclose(y, ref, rtol=tol, atol=tol * np.sqrt(w[0].size))
        assert all(a.dtype == dtype and a.flags.c_contiguous for a in grads)
        results.append(grads)
    for a, r in zip(*results) if len(results) == 2 else ():
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol * np.sqrt(g.size + 1))
    # each gradient is the adjoint of the bilinear forward, in float64
    dx, dw, db = results[0]
    g64, y64 = g.astype(np.float64), _direct(x, w, None, *args)
    scale = np.sqrt(g.size + 1) * (1 + np.abs(y64).max(initial=0))
    for arr, grad in ((x, dx), (w, dw)):
        assert np.isclose((g64 * y64).sum(), (grad.astype(np.float64) * arr).sum(),
                          rtol=tol, atol=tol * scale)
    np.testing.assert_allclose(db, g64.sum((0, 2, 3)), rtol=tol, atol=tol * np.sqrt(g.size + 1))


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@pytest.mark.skipif(not jit.enabled(), reason="the compiled CPU loops are off")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("groups", [1, 3])
def test_channels_first_loop_matches_numpy_form(dtype, groups, rng):
    """conv_loops.to_channels_first: the transposing copy with and without bias; without, y's
    -0.0 stays -0.0 (as NumPy's copy keeps it)."""
    n, oh, ow, og = 3, 5, 7, 4
    y = rng.standard_normal((groups, n * oh * ow, og)).astype(dtype)
    y[0, 0, 0] = -0.0
    for bias in (None, rng.standard_normal(groups * og).astype(dtype)):
        outs = []
        for form in ("loops", "numpy"):
            out = np.full((n, groups * og, oh, ow), np.nan, dtype)
            with jit.disabled() if form == "numpy" else _nothing():
                outs.append(np_conv._to_channels_first(y, n, oh, ow, bias, out))
        np.testing.assert_array_equal(outs[0], outs[1])
        if bias is None:
            assert np.signbit(outs[0][0, 0, 0, 0])


def test_errors_name_the_op():
    x, w = np.zeros((1, 4, 5, 5)), np.zeros((2, 3, 3, 3))
    for k in (nk, tk):
        with pytest.raises(ValueError, match="conv2d: .* groups=1"):
            k.conv2d(*(_dev(k, a) for a in (x, w)), None, (1, 1), (0, 0), (1, 1), 1)
        with pytest.raises(ValueError, match="conv2d: the kernel"):
            k.conv2d(*(_dev(k, a) for a in (np.zeros((1, 3, 2, 2)), w)), None, (1, 1), (0, 0),
                     (1, 1), 1)
        with pytest.raises(ValueError, match="conv2d_backward: expected the output gradient"):
            k.conv2d_backward(*(_dev(k, a) for a in (np.zeros((1, 2, 2, 2)),
                                                      np.zeros((1, 3, 5, 5)), w)),
                              (1, 1), (0, 0), (1, 1), 1, (True, True, False))
    with pytest.raises(TypeError, match="conv2d"):
        tk.conv2d(_dev(tk, np.zeros((1, 3, 5, 5), np.int32)),
                  _dev(tk, np.zeros((2, 3, 3, 3), np.int32)), None, (1, 1), (0, 0), (1, 1), 1)


def _dev(k, a):
    if k is nk:
        return a
    from kernel_kit import Kit
    return Kit().up(a)


# -- the Triton kernels ------------------------------------------------------------------------
@pytest.fixture
def conv_small_blocks(monkeypatch):
    """Tiles of 16 (8 for float64) and a split reduction for dw: several programs along
    every grid dimension and several reduction steps, on small inputs."""
    monkeypatch.setattr(conv_mod, "CONFIGS", {"half": (16, 16, 16, 4, 1),
                                              "f32": (16, 16, 16, 4, 1),
                                              "f64": (8, 8, 4, 4, 1)})
    monkeypatch.setattr(conv_mod, "MIN_COLS", 8)
    monkeypatch.setattr(conv_mod, "MIN_SPLIT_STEPS", 1)
    monkeypatch.setattr(conv_mod, "TARGET_PROGRAMS", 64)


def _tol(dtype, k_len):
    t = TOL[dtype] * max(1.0, np.sqrt(k_len) / 2)
    return {"rtol": t, "atol": t}


def _ref_values(kit, host, dtype):
    """Host values on ``dtype``'s grid, as float64 (what the device array holds)."""
    return kit.down(kit.up(host, dtype)).astype(np.float64)


def _check_case(kit, rng, case, dtype, layout="contig"):
    n, c, h, w, o, kh, kw, stride, padding, dilation, groups = case
    args = (stride, padding, dilation, groups)
    x, rx = kit.pair((n, c, h, w), dtype, rng, layout=layout)
    wt, rw = kit.pair((o, c // groups, kh, kw), dtype, rng)
    b, rb = kit.pair((o,), dtype, rng)
    rx, rw, rb = (np.asarray(a, np.float64) for a in (rx, rw, rb))
    y = tk.conv2d(x, wt, b, *args)
    ref = nk.conv2d(rx, rw, rb, *args)
    assert y.dtype is dtype and tuple(y.shape) == ref.shape
    kit.check(y, ref, dtype, check_dtype=False, **_tol(dtype, c // groups * kh * kw))
    g, rg = kit.pair(ref.shape, dtype, rng, layout=layout)
    dx, dw, db = tk.conv2d_backward(g, x, wt, *args, (True, True, True))
    rdx, rdw, rdb = nk.conv2d_backward(np.asarray(rg, np.float64), rx, rw, *args,
                                       (True, True, True))
    assert dx.dtype is dw.dtype is db.dtype is dtype
    kit.check(dx, rdx, dtype, check_dtype=False, **_tol(dtype, o // groups * kh * kw))
    positions = ref.shape[0] * ref.shape[2] * ref.shape[3]
    kit.check(dw, rdw, dtype, check_dtype=False, **_tol(dtype, positions))
    kit.check(db, rdb, dtype, check_dtype=False, **_tol(dtype, positions))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [D.float32, D.float64], ids=str)
def test_triton_matches_numpy(kit, rng, case, dtype):
    _check_case(kit, rng, case, dtype)


@pytest.mark.parametrize("case", CASES[1:4] + CASES[5:7], ids=IDS[1:4] + IDS[5:7])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_triton_multi_program_grids(kit, rng, conv_small_blocks, case, dtype):
    _check_case(kit, rng, case, dtype)


@pytest.mark.parametrize("layout", ["strided", "sliced"])
def test_triton_strided_operands(kit, rng, conv_small_blocks, layout):
    _check_case(kit, rng, CASES[3], D.float32, layout)


def test_triton_larger_reduction_splits_dw(kit, rng, monkeypatch):
    """A batch long enough that dw's reduction is split over programs at the real tiles."""
    monkeypatch.setattr(conv_mod, "MIN_SPLIT_STEPS", 1)
    _check_case(kit, rng, (4, 3, 12, 12, 16, 3, 3, (1, 1), (1, 1), (1, 1), 1), D.float32)


def test_triton_needs_and_empty_batch(kit, rng):
    x, w, b, args = _inputs(CASES[1], rng)
    y = tk.conv2d(kit.up(x), kit.up(w), None, *args)
    g = kit.up(np.ones(y.shape))
    dx, dw, db = tk.conv2d_backward(g, kit.up(x), kit.up(w), *args, (False, True, False))
    assert dx is None and db is None and tuple(dw.shape) == w.shape
    e = tk.conv2d(kit.up(x[:0]), kit.up(w), kit.up(b), *args)
    assert tuple(e.shape) == (0,) + y.shape[1:]
    dx, dw, db = tk.conv2d_backward(kit.up(np.zeros(e.shape)), kit.up(x[:0]), kit.up(w), *args,
                                    (True, True, True))
    assert tuple(dx.shape) == x[:0].shape
    np.testing.assert_array_equal(kit.down(dw), 0)
    np.testing.assert_array_equal(kit.down(db), 0)


def test_triton_int64_offsets(kit, rng, conv_small_blocks, monkeypatch):
    """The int64 index path (arrays past 2**31 elements), forced on small arrays."""
    monkeypatch.setattr(conv_mod, "_int64", lambda *views: True)
    _check_case(kit, rng, CASES[3], D.float32)
