"""matmul(a, b) against the NumPy backend: odd and empty shapes, transposed and sliced views,
every float dtype, IEEE float32, the float64 fallback, multi-tile grids, errors."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_kit import FLOATS, D, round_bf16, tk

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

mm = importlib.import_module("tritongrad.kernels.triton.matmul")


def _ref(kit, ra, rb, dtype):
    if dtype is D.bfloat16:
        return round_bf16(ra.astype(np.float32) @ rb.astype(np.float32))
    return kit.nk.matmul(ra, rb)


def _tol(dtype, k):
    return {D.float16: (2e-3, 2e-3 * max(k, 1) ** 0.5),
            D.bfloat16: (1e-2, 1e-2 * max(k, 1) ** 0.5),
            D.float32: (1e-5, 1e-5 * max(k, 1) ** 0.5),
            D.float64: (1e-12, 1e-12 * max(k, 1))}[dtype]


def _check(kit, got, ref, dtype, k):
    r, a = _tol(dtype, k)
    kit.check(got, ref, dtype, rtol=r, atol=a)


SHAPES = [(1, 1, 1), (7, 13, 5), (16, 16, 16), (33, 17, 65), (1, 64, 3), (20, 0, 4),
          (0, 5, 3), (4, 5, 0)]


@pytest.mark.parametrize("mkn", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_matmul_shapes(kit, rng, dtype, mkn):
    m, k, n = mkn
    a, ra = kit.pair((m, k), dtype, rng)
    b, rb = kit.pair((k, n), dtype, rng)
    _check(kit, tk.matmul(a, b), _ref(kit, ra, rb, dtype), dtype, k)


@pytest.mark.parametrize("la", ["contig", "T", "strided", "sliced", "expanded"])
@pytest.mark.parametrize("lb", ["contig", "T", "strided"])
@pytest.mark.parametrize("dtype", [D.float32, D.float16], ids=str)
def test_matmul_views_without_copies(kit, rng, dtype, la, lb):
    a, ra = kit.pair((9, 20), dtype, rng, layout=la)
    b, rb = kit.pair((20, 11), dtype, rng, layout=lb)
    _check(kit, tk.matmul(a, b), _ref(kit, ra, rb, dtype), dtype, 20)


def test_float32_is_ieee_not_tf32(kit, rng):
    # TF32 keeps 10 mantissa bits: errors near 1e-3 relative; IEEE float32 stays near 1e-6.
    ra = (1 + rng.random((32, 64)) * 2**-12).astype(np.float32)
    rb = (1 + rng.random((64, 32)) * 2**-12).astype(np.float32)
    got = kit.down(tk.matmul(kit.up(ra), kit.up(rb)))
    exact = ra.astype(np.float64) @ rb.astype(np.float64)
    np.testing.assert_allclose(got, exact, rtol=2e-6)
    assert np.abs(got - exact).max() < np.abs(exact - 64).max() * 0.01


def test_float32_precision_setting_reaches_the_kernel(kit, rng, monkeypatch):
    # "high"/"medium" let float32 products use TF32 (tensor cores); the interpreter computes in
    # float32 whatever it is told, so the check here is what the kernel is launched with (the
    # sm_90 compile check compiles the TF32 variant)
    seen = []
    real = mm._precision
    monkeypatch.setattr(mm, "_precision", lambda dt: seen.append(real(dt)) or seen[-1])
    a, ra = kit.pair((8, 16), D.float32, rng)
    b, rb = kit.pair((16, 4), D.float32, rng)
    ref = _ref(kit, ra, rb, D.float32)
    # TF32 keeps 10 mantissa bits of each operand: an error bound from the products' sizes
    tf32_atol = 2.0 ** -9 * float((np.abs(ra) @ np.abs(rb)).max())
    results = {}
    for setting, expected in (("highest", "ieee"), ("high", "tf32"), ("medium", "tf32")):
        monkeypatch.setattr(D, "get_float32_matmul_precision", lambda s=setting: s)
        got = tk.matmul(a, b)
        if expected == "ieee":
            _check(kit, got, ref, D.float32, 16)
        else:  # on a GPU the tensor cores round (seen on an H200, 2026-11-29: 4e-4 relative)
            kit.check(got, ref, D.float32, rtol=0, atol=tf32_atol)
        results[setting] = kit.down(got)
        assert seen[-1] == expected
    if kit.real_gpu:  # the setting reached the kernel: TF32 rounds where IEEE float32 does not
        assert not np.array_equal(results["high"], results["highest"])
    assert real(D.float16) == "tf32" and real(D.float64) == "ieee"


def test_float64_fallback_path(kit, rng, monkeypatch):
    monkeypatch.setattr(mm, "_f64_dot", [False])
    for (m, k, n) in [(7, 13, 5), (33, 17, 40)]:
        a, ra = kit.pair((m, k), D.float64, rng, layout="T")
        b, rb = kit.pair((k, n), D.float64, rng)
        _check(kit, tk.matmul(a, b), ra @ rb, D.float64, k)


def test_small_blocks_tiles_and_k_loop(kit, rng, small_blocks):
    for dtype in FLOATS:
        a, ra = kit.pair((40, 50), dtype, rng, layout="T")
        b, rb = kit.pair((50, 36), dtype, rng)
        _check(kit, tk.matmul(a, b), _ref(kit, ra, rb, dtype), dtype, 50)


def _splits(M, N, K, dtype, B=1) -> int:
    """The number of K splits the cached plan of this product uses."""
    return next(split for key, (_, split) in mm._PLANS.items()
                if key[:4] == (B, M, N, K) and key[6] is dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_split_k(kit, rng, small_blocks, dtype):
    """Note [split-K]: few tiles and a long K split K; the partials add up to the product,
    deterministically, in the input dtype; transposed operands and a ragged last split."""
    a, ra = kit.pair((20, 100), dtype, rng, layout="T")
    b, rb = kit.pair((100, 12), dtype, rng)
    got = tk.matmul(a, b)
    assert got.dtype is dtype and tuple(got.shape) == (20, 12)
    assert _splits(20, 12, 100, dtype) == 4  # 2 tiles; K 100 in chunks of 32 (16-wide steps)
    _check(kit, got, _ref(kit, ra, rb, dtype), dtype, 100)
    again = tk.matmul(a, b)
    np.testing.assert_array_equal(kit.down(again), kit.down(got))  # a fixed order: no atomics


def test_split_k_batched_and_int64(kit, rng, small_blocks, monkeypatch):
    from tritongrad.kernels.triton import _launch

    a, ra = kit.pair((1, 9, 70), D.float32, rng)
    a3 = tk.expand(a, (2, 9, 70))  # batch stride 0
    c, rc = kit.pair((2, 70, 5), D.float32, rng, layout="strided")
    _check(kit, tk.bmm(a3, c), np.broadcast_to(ra, (2, 9, 70)) @ rc, D.float32, 70)
    assert _splits(9, 5, 70, D.float32, B=2) > 1
    monkeypatch.setattr(_launch, "_INT32_SAFE", 1)  # every offset in int64
    _launch.clear_plans()
    _check(kit, tk.bmm(a3, c), np.broadcast_to(ra, (2, 9, 70)) @ rc, D.float32, 70)
    assert _splits(9, 5, 70, D.float32, B=2) > 1


def test_small_blocks_float64_fallback(kit, rng, small_blocks, monkeypatch):
    monkeypatch.setattr(mm, "_f64_dot", [False])
    a, ra = kit.pair((20, 21), D.float64, rng)
    b, rb = kit.pair((21, 18), D.float64, rng, layout="T")
    _check(kit, tk.matmul(a, b), ra @ rb, D.float64, 21)


def test_int64_offsets(kit, rng, monkeypatch):
    from tritongrad.kernels.triton import _launch

    monkeypatch.setattr(_launch, "_INT32_SAFE", 1)
    _launch.clear_plans()
    try:
        a, ra = kit.pair((17, 24), D.float32, rng, layout="T")
        b, rb = kit.pair((24, 9), D.float32, rng)
        _check(kit, tk.matmul(a, b), ra @ rb, D.float32, 24)
    finally:
        _launch.clear_plans()


def test_mixed_dtypes_promote(kit, rng):
    a, ra = kit.pair((3, 4), D.float16, rng)
    b, rb = kit.pair((4, 2), D.float32, rng)
    _check(kit, tk.matmul(a, b), ra.astype(np.float32) @ rb, D.float32, 4)


def test_matmul_errors(kit):
    a = kit.up(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(3, 4\).*4 != 3"):
        tk.matmul(a, a)
    with pytest.raises(ValueError, match="2-D"):
        tk.matmul(kit.up(np.zeros((2, 3, 4), np.float32)), a)
    i = kit.up(np.zeros((3, 3), np.int32))
    with pytest.raises(TypeError, match="matmul.*int32"):
        tk.matmul(i, i)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(0, 20), k=st.integers(0, 20), n=st.integers(0, 20),
       dtype=st.sampled_from(FLOATS), ta=st.booleans(), tb=st.booleans(),
       seed=st.integers(0, 2**16))
def test_property_matmul(kit, m, k, n, dtype, ta, tb, seed):
    rng = np.random.default_rng(seed)
    a, ra = kit.pair((m, k), dtype, rng, layout="T" if ta else "contig")
    b, rb = kit.pair((k, n), dtype, rng, layout="T" if tb else "contig")
    _check(kit, tk.matmul(a, b), _ref(kit, ra, rb, dtype), dtype, k)


# -- bmm --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_bmm(kit, rng, dtype):
    for (b, m, k, n) in [(3, 5, 7, 4), (1, 1, 1, 1), (2, 17, 33, 9), (0, 2, 2, 2), (2, 3, 0, 4)]:
        a, ra = kit.pair((b, m, k), dtype, rng)
        c, rc = kit.pair((b, k, n), dtype, rng, layout="T")
        _check(kit, tk.bmm(a, c), _ref(kit, ra, rc, dtype), dtype, k)


def test_bmm_broadcast_batch_and_views(kit, rng, small_blocks):
    a, ra = kit.pair((1, 20, 18), D.float32, rng)
    a3 = tk.expand(a, (3, 20, 18))  # batch stride 0
    c, rc = kit.pair((3, 18, 21), D.float32, rng, layout="strided")
    _check(kit, tk.bmm(a3, c), np.broadcast_to(ra, (3, 20, 18)) @ rc, D.float32, 18)
    with pytest.raises(ValueError, match="bmm: batch sizes differ"):
        tk.bmm(a, c)


# (the bias's shape, how it is made from a host row of N values): rows the epilogue adds,
# then inputs addmm adds after the product
BIASES = [("row", lambda r, m, n: r), ("one", lambda r, m, n: r[:1]),
          ("(1, N)", lambda r, m, n: r[None, :]), ("full", None)]


@pytest.mark.parametrize("bias", [b[0] for b in BIASES])
@pytest.mark.parametrize("mkn", [(7, 13, 5), (33, 17, 65), (20, 0, 4), (1, 1, 1)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_addmm(kit, rng, dtype, mkn, bias):
    """a @ b + c: a bias row added before the product's rounding (the Triton epilogue) or
    after (any other c, and the NumPy backend), against float64."""
    m, k, n = mkn
    a, ra = kit.pair((m, k), dtype, rng, layout="T")
    b, rb = kit.pair((k, n), dtype, rng)
    make = dict(BIASES)[bias]
    if make is None:
        c, rc = kit.pair((m, n), dtype, rng)
    else:
        row, rrow = kit.pair((n,), dtype, rng)
        rc = make(rrow, m, n)
        c = kit.up(np.ascontiguousarray(rc), dtype)
    want = ra.astype(np.float64) @ rb.astype(np.float64) + np.asarray(rc, np.float64)
    got = tk.addmm(c, a, b)
    assert got.dtype is dtype and tuple(got.shape) == (m, n)
    r, t = _tol(dtype, k)
    # one more rounding of the sum (the NumPy backend's, and the Triton one's after the product)
    kit.check(got, want, dtype, rtol=2 * r, atol=2 * t + (2e-2 if dtype is D.bfloat16 else 0),
              check_dtype=False)


def test_addmm_expanded_bias_and_other_dtypes(kit, rng):
    # a bias row expanded to (M, N) (row stride 0) takes the epilogue too; a bias of another
    # dtype is added after the product, promoted into it as the NumPy backend does
    a, ra = kit.pair((6, 9), D.float32, rng)
    b, rb = kit.pair((9, 4), D.float32, rng)
    row, rrow = kit.pair((4,), D.float32, rng)
    want = ra.astype(np.float64) @ rb + rrow
    kit.check(tk.addmm(tk.expand(row, (6, 4)), a, b), want, D.float32, rtol=2e-5, atol=1e-5,
              check_dtype=False)
    half, rhalf = kit.pair((4,), D.float16, rng)
    got = tk.addmm(half, a, b)
    assert got.dtype is D.float32
    kit.check(got, ra.astype(np.float64) @ rb + rhalf, D.float32, rtol=2e-5, atol=1e-5,
              check_dtype=False)


def test_linear_with_bias_is_one_launch(kit, rng, monkeypatch):
    """Linear's forward on the Triton backend: one product with the bias in its epilogue, no
    separate add."""
    import tritongrad as tg
    from tritongrad.kernels.triton import elementwise_ops

    adds = []
    real = elementwise_ops.add
    monkeypatch.setattr(mm, "_add", lambda *a, **k: adds.append(1) or real(*a, **k))
    lin = tg.nn.Linear(9, 4).to("cuda")
    x = tg.randn(6, 9, device="cuda")
    y = lin(x)
    want = x.cpu().numpy().astype(np.float64) @ lin.weight.detach().cpu().numpy().T \
        + lin.bias.detach().cpu().numpy()
    np.testing.assert_allclose(y.detach().cpu().numpy(), want, rtol=2e-5, atol=1e-5)
    assert adds == []
