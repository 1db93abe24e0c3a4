"""The recurrent cells of the kernel contract (kernels/numpy/recurrent.py, kernels/triton/
recurrent.py): ``lstm_cell``, ``gru_cell`` and their backwards against float64 NumPy references
of the formulas, the backwards against central differences of the forwards (float64), odd
shapes, strided and transposed inputs, with and without bias and incoming gradients; both CPU
forms (the compiled loops and NumPy) and the Triton kernels (through the interpreter without a
GPU) against them, in every float dtype, also on multi-program grids."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_kit import FLOATS, TOL, round_bf16
from tritongrad.kernels import host_array, host_values
from tritongrad.kernels import numpy as nk
from tritongrad.runtime import dtype as D

SHAPES = [(1, 1), (3, 5), (7, 33)]  # (N, H)
# (small_blocks: 8 hidden units by 2 rows a program, so (5, 17) runs a 3 x 3 grid)
TRITON_SHAPES = [(1, 1), (3, 5), (5, 17)]
F32_TOL = {"rtol": 1e-5, "atol": 2e-6}  # float32 math: a few roundings in each result


def _sig(a):
    return 1 / (1 + np.exp(-a))


def ref_lstm(x, rec, b, c):
    """(h, c') in float64, the formulas written out."""
    H = c.shape[1]
    g = x + (rec + (0 if b is None else b))
    i, f, o = (_sig(g[:, k * H:(k + 1) * H]) for k in (0, 1, 3))
    c2 = f * c + i * np.tanh(g[:, 2 * H:3 * H])
    return o * np.tanh(c2), c2


def ref_gru(x, rec, b, h):
    H = h.shape[1]
    rb = rec + (0 if b is None else b)
    r = _sig(x[:, :H] + rb[:, :H])
    z = _sig(x[:, H:2 * H] + rb[:, H:2 * H])
    n = np.tanh(x[:, 2 * H:] + r * rb[:, 2 * H:])
    return (1 - z) * n + z * h


def _inputs(rng, N, H, gates, bias, layout, scale=1.5):
    """x (a step of a (L, N, G H) sequence, or transposed), rec, b, state: float64."""
    G = gates * H
    if layout == "T":
        x = rng.standard_normal((G, N)).T * scale
    else:  # step 1 of 3: rows apart by N G, not contiguous with the other steps
        x = (rng.standard_normal((3, N, G)) * scale)[1]
    rec = rng.standard_normal((N, G)) * scale
    b = rng.standard_normal(G) if bias else None
    s = rng.standard_normal((N + 2, H))[1:-1]  # a window of a taller array
    return x, rec, b, s


def _numeric_grad(f, a, eps=1e-6):
    """Central differences of the scalar f() in each element of a (changed in place)."""
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        v = a[idx]
        a[idx] = v + eps
        hi = f()
        a[idx] = v - eps
        lo = f()
        a[idx] = v
        g[idx] = (hi - lo) / (2 * eps)
    return g


# -- the CPU backend: both forms against the references --------------------------------------
@pytest.mark.parametrize("layout", ["step", "T"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("N", "H"), SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_cell_matches_the_formulas(cpu_forms, dtype, N, H, bias, layout):
    rng = np.random.default_rng(N * 100 + H)
    x, rec, b, c = _inputs(rng, N, H, 4, bias, layout)
    h_ref, c_ref = ref_lstm(x, rec, b, c)
    args = [None if a is None else a.astype(dtype) for a in (x, rec, b, c)]
    h, c2, _ = nk.lstm_cell(*args)
    tol = {"rtol": 1e-12, "atol": 1e-13} if dtype == np.float64 else F32_TOL
    assert h.dtype == dtype and c2.dtype == dtype and h.shape == c2.shape == (N, H)
    np.testing.assert_allclose(h, h_ref, **tol)
    np.testing.assert_allclose(c2, c_ref, **tol)


@pytest.mark.parametrize("layout", ["step", "T"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("N", "H"), SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_cell_matches_the_formulas(cpu_forms, dtype, N, H, bias, layout):
    rng = np.random.default_rng(N * 100 + H + 1)
    x, rec, b, h = _inputs(rng, N, H, 3, bias, layout)
    args = [None if a is None else a.astype(dtype) for a in (x, rec, b, h)]
    h2, _ = nk.gru_cell(*args)
    tol = {"rtol": 1e-12, "atol": 1e-13} if dtype == np.float64 else F32_TOL
    assert h2.dtype == dtype and h2.shape == (N, H)
    np.testing.assert_allclose(h2, ref_gru(x, rec, b, h), **tol)


def test_saturation_and_nan_pass_through(cpu_forms):
    """Large pre-activations saturate (no overflow to NaN); NaN propagates."""
    H = 4
    x = np.array([[-200.0, -30, 0, 30] * 4, [np.nan, 1, 2, 3] * 4], np.float32)
    rec = np.zeros_like(x)
    c = np.array([[1.0, -1, 0.5, 2], [0, 0, 0, 0]], np.float32)
    h, c2, _ = nk.lstm_cell(x, rec, None, c)
    h_ref, c_ref = ref_lstm(x.astype(np.float64), rec.astype(np.float64), None,
                            c.astype(np.float64))
    np.testing.assert_allclose(h, h_ref, atol=2e-6)
    np.testing.assert_allclose(c2, c_ref, atol=2e-6)
    assert np.isnan(h[1, 0]) and not np.isnan(h[0]).any() and not np.isnan(h[1, 1:H]).any()


@pytest.mark.parametrize("incoming", ["both", "dh", "dc"])
@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell_backward_is_the_derivative(cpu_forms, incoming, bias):
    """d(sum(wh h) + sum(wc c')) by the kernel against central differences, in every input."""
    N, H = 3, 5
    rng = np.random.default_rng(7)
    x, rec, b, c = _inputs(rng, N, H, 4, bias, "step", scale=1.0)
    wh = rng.standard_normal((N, H)) if incoming != "dc" else None
    wc = rng.standard_normal((N, H)) if incoming != "dh" else None

    def loss():
        h, c2 = ref_lstm(x, rec, b, c)
        return (0 if wh is None else (wh * h).sum()) + (0 if wc is None else (wc * c2).sum())

    _, _, saved = nk.lstm_cell(x, rec, b, c)
    dgates, dc_prev = nk.lstm_cell_backward(wh, wc, saved, c)
    tol = {"rtol": 1e-6, "atol": 1e-8}
    np.testing.assert_allclose(dgates, _numeric_grad(loss, x), **tol)
    np.testing.assert_allclose(dgates, _numeric_grad(loss, rec), **tol)
    if bias:
        np.testing.assert_allclose(dgates.sum(0), _numeric_grad(loss, b), **tol)
    np.testing.assert_allclose(dc_prev, _numeric_grad(loss, c), **tol)


@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell_backward_is_the_derivative(cpu_forms, bias):
    """d(sum(w h')) by the kernel against central differences: dx of x, drec of rec (and
    summed over rows, of b), dh_direct of h."""
    N, H = 3, 5
    rng = np.random.default_rng(8)
    x, rec, b, h = _inputs(rng, N, H, 3, bias, "T", scale=1.0)
    w = rng.standard_normal((N, H))

    def loss():
        return (w * ref_gru(x, rec, b, h)).sum()

    _, saved = nk.gru_cell(x, rec, b, h)
    dx, drec, dh_direct = nk.gru_cell_backward(w, saved, h)
    tol = {"rtol": 1e-6, "atol": 1e-8}
    np.testing.assert_allclose(dx, _numeric_grad(loss, x), **tol)
    np.testing.assert_allclose(drec, _numeric_grad(loss, rec), **tol)
    if bias:
        np.testing.assert_allclose(drec.sum(0), _numeric_grad(loss, b), **tol)
    np.testing.assert_allclose(dh_direct, _numeric_grad(loss, h), **tol)


def test_loops_and_numpy_forms_agree():
    """The compiled loops against the NumPy forms they replace, float32, every output."""
    from tritongrad.kernels.numpy import jit

    if not jit.enabled():
        pytest.skip("the compiled CPU loops are off")
    rng = np.random.default_rng(9)
    N, H = 7, 33
    x, rec, b, c = (None if a is None else a.astype(np.float32)
                    for a in _inputs(rng, N, H, 4, True, "step"))
    xg, recg, bg, _ = (a.astype(np.float32) for a in _inputs(rng, N, H, 3, True, "T"))
    dh, dc = (rng.standard_normal((N, H)).astype(np.float32) for _ in range(2))

    def run():
        h, c2, saved = nk.lstm_cell(x, rec, b, c)
        h3, gsaved = nk.gru_cell(xg, recg, bg, c)
        return [h, c2, *saved, *nk.lstm_cell_backward(dh, dc, saved, c), h3, *gsaved,
                *nk.gru_cell_backward(dh, gsaved, c)]

    loops = run()
    with jit.disabled():
        forms = run()
    for a, r in zip(loops, forms):
        np.testing.assert_allclose(a, r, **F32_TOL)


@pytest.mark.parametrize("dtype", [D.float16, D.bfloat16])
def test_half_types_compute_in_float32_and_round_once(dtype):
    rng = np.random.default_rng(10)
    N, H = 3, 5
    x, rec, b, c = _inputs(rng, N, H, 4, True, "step")
    host = [host_array(a.astype(np.float32), dtype) for a in (x, rec, b, c)]
    vals = [host_values(a).astype(np.float64) for a in host]
    h, c2, saved = nk.lstm_cell(*host)
    h_ref, c_ref = ref_lstm(*vals)
    r, a = TOL[dtype]
    for got, ref in ((h, h_ref), (c2, c_ref)):
        assert host_values(got).shape == ref.shape
        np.testing.assert_allclose(host_values(got).astype(np.float64), ref, rtol=r,
                                   atol=a)
    assert saved[0].dtype == np.float32  # activations kept in the computing dtype
    dgates, dc_prev = nk.lstm_cell_backward(host[3], None, saved, host[3])
    assert type(dgates) is type(host[0]) and type(dc_prev) is type(host[0])


def test_non_float_arrays_are_refused():
    a = np.zeros((2, 8), np.int64)
    with pytest.raises(TypeError, match="floating-point"):
        nk.lstm_cell(a, a, None, np.zeros((2, 2), np.int64))


def test_shape_errors_name_the_shapes():
    x = np.zeros((2, 8))
    with pytest.raises(ValueError, match=r"lstm_cell: expected x and rec \(2, 4 \* 2\)"):
        nk.lstm_cell(x, np.zeros((2, 12)), None, np.zeros((2, 2)))


# -- the Triton kernels against the CPU backend ----------------------------------------------
def _tol(dtype):
    return F32_TOL if dtype is D.float32 else dict(zip(("rtol", "atol"), TOL[dtype]))


def _rounded(ref, dtype):
    """A float32 (float64) reference rounded once to ``dtype``, as the kernels round."""
    if dtype is D.bfloat16:
        return round_bf16(ref)
    return ref.astype(dtype.np)


@pytest.mark.parametrize("layout", ["T", "strided"])  # (rec is contiguous)
@pytest.mark.parametrize(("N", "H"), TRITON_SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_triton_lstm_cell_matches_numpy(kit, small_blocks, dtype, N, H, layout):
    rng = np.random.default_rng(N * 10 + H)
    x, xh = kit.pair((N, 4 * H), dtype, rng, layout)
    rec, rh = kit.pair((N, 4 * H), dtype, rng)
    b, bh = kit.pair((4 * H,), dtype, rng) if H != 1 else (None, None)
    c, ch = kit.pair((N, H), dtype, rng, "sliced")
    wide = np.float64 if dtype is D.float64 else np.float32
    xh, rh, ch = (a.astype(wide) for a in (xh, rh, ch))
    bh = None if bh is None else bh.astype(wide)
    h, c2, (act, tc) = kit.tk.lstm_cell(x, rec, b, c)
    h_ref, c_ref, (act_ref, tc_ref) = nk.lstm_cell(xh, rh, bh, ch)
    kit.check(h, _rounded(h_ref, dtype), dtype, **_tol(dtype))
    kit.check(c2, _rounded(c_ref, dtype), dtype, **_tol(dtype))
    kit.check(act, act_ref, **F32_TOL if dtype is not D.float64 else {})
    kit.check(tc, tc_ref, **F32_TOL if dtype is not D.float64 else {})
    for with_dh, with_dc in ((True, True), (False, True), (True, False)):
        dh, dhh = kit.pair((N, H), dtype, rng, layout) if with_dh else (None, None)
        dc, dch = kit.pair((N, H), dtype, rng) if with_dc else (None, None)
        got = kit.tk.lstm_cell_backward(dh, dc, (act, tc), c)
        want = nk.lstm_cell_backward(None if dhh is None else dhh.astype(wide),
                                     None if dch is None else dch.astype(wide),
                                     (act_ref, tc_ref), ch)
        for g, w in zip(got, want):
            kit.check(g, _rounded(w, dtype), dtype, **_tol(dtype))


@pytest.mark.parametrize("layout", ["T", "strided"])  # (rec is contiguous)
@pytest.mark.parametrize(("N", "H"), TRITON_SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_triton_gru_cell_matches_numpy(kit, small_blocks, dtype, N, H, layout):
    rng = np.random.default_rng(N * 10 + H + 1)
    x, xh = kit.pair((N, 3 * H), dtype, rng, layout)
    rec, rh = kit.pair((N, 3 * H), dtype, rng, "T")
    b, bh = kit.pair((3 * H,), dtype, rng) if H != 1 else (None, None)
    h, hh = kit.pair((N, H), dtype, rng, "sliced")
    wide = np.float64 if dtype is D.float64 else np.float32
    xh, rh, hh = (a.astype(wide) for a in (xh, rh, hh))
    bh = None if bh is None else bh.astype(wide)
    h2, saved = kit.tk.gru_cell(x, rec, b, h)
    h2_ref, saved_ref = nk.gru_cell(xh, rh, bh, hh)
    kit.check(h2, _rounded(h2_ref, dtype), dtype, **_tol(dtype))
    for s, r in zip(saved, saved_ref):
        kit.check(s, r, **F32_TOL if dtype is not D.float64 else {})
    dh, dhh = kit.pair((N, H), dtype, rng, layout)
    got = kit.tk.gru_cell_backward(dh, saved, h)
    want = nk.gru_cell_backward(dhh.astype(wide), saved_ref, hh)
    for g, w in zip(got, want):
        kit.check(g, _rounded(w, dtype), dtype, **_tol(dtype))


def test_triton_refuses_integers(kit):
    a = kit.up(np.zeros((2, 8), np.int32))
    with pytest.raises(TypeError, match="lstm_cell"):
        kit.tk.lstm_cell(a, a, None, kit.up(np.zeros((2, 2), np.int32)))

