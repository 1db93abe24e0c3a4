"""sum(a, dims, keepdim) against the NumPy backend: dims subsets, layouts, dtypes, empty and
0-d inputs, float32 accumulation of halves, split and multi-pass plans, the int64 path."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_kit import ALL, FLOATS, D, round_bf16, tk

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

LAYOUTS = ["contig", "T", "strided", "sliced", "expanded"]
SUM_TOL = {D.float16: (2e-3, 1e-2), D.bfloat16: (1e-2, 5e-2), D.float32: (1e-5, 1e-5),
           D.float64: (1e-12, 1e-12)}


def _ref(kit, ra, dims, keepdim, dtype):
    if dtype is D.bfloat16:
        return round_bf16(np.sum(ra.astype(np.float32), axis=dims, keepdims=keepdim))
    if dtype in (D.uint8, D.bool):
        return np.sum(ra, axis=dims, keepdims=keepdim, dtype=np.int64)  # int64, as PyTorch
    return kit.nk.sum(ra, dims, keepdim)


def _check(kit, got, ref, dtype):
    r, a = SUM_TOL.get(dtype, (0, 0))
    kit.check(got, ref, dtype, rtol=r, atol=a)


CASES = [((), ()), ((7,), (0,)), ((257,), (0,)), ((0,), (0,)), ((3, 0), (1,)), ((3, 0), (0,)),
         ((4, 5), (0,)), ((4, 5), (1,)), ((4, 5), (0, 1)), ((4, 5), ()), ((2, 1, 3, 4), (1,)),
         ((2, 1, 3, 4), (1, 3)), ((1, 1), (0, 1))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}".replace(" ", ""))
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_sum_shapes(kit, rng, dtype, case):
    shape, dims = case
    a, ra = kit.pair(shape, dtype, rng)
    for keepdim in (False, True):
        _check(kit, tk.sum(a, dims, keepdim), _ref(kit, ra, dims, keepdim, dtype), dtype)


@pytest.mark.parametrize("dims", [d for r in range(4) for d in itertools.combinations(range(3), r)],
                         ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sum_layouts_all_dim_subsets(kit, rng, layout, dims):
    a, ra = kit.pair((3, 5, 4), D.float32, rng, layout=layout)
    _check(kit, tk.sum(a, dims, False), kit.nk.sum(ra, dims, False), D.float32)


@pytest.mark.parametrize("dtype", [D.float16, D.bfloat16])
def test_half_accumulates_in_float32(kit, dtype):
    a = kit.up(np.ones(4096, np.float32), dtype)  # float16 accumulation would stop at 2048
    got = kit.down(tk.sum(a, (0,), False))
    assert float(got) == 4096.0
    b = kit.up(np.full((3, 3000), 0.1, np.float32), dtype)
    want = 3000 * float(kit.down(tk.contiguous(tk.getitem(b, (0, 0)))))
    np.testing.assert_allclose(kit.down(tk.sum(b, (1,), True)).ravel(), [want] * 3, rtol=4e-3)


def test_int_sums_are_int64_and_exact(kit):
    x = np.full((3, 5000), 2**20, np.int32)  # overflows int32
    got = tk.sum(kit.up(x), (1,), False)
    assert got.dtype is D.int64
    kit.check(got, x.sum(1, dtype=np.int64))
    b = np.ones((300,), bool)
    kit.check(tk.sum(kit.up(b), (0,), False), np.int64(300))


@pytest.mark.parametrize("case", [((5, 40), (1,)), ((40, 5), (0,)), ((33, 17), (0, 1)),
                                  ((6, 7, 8), (0, 2)), ((4, 6, 5), (1,)), ((3, 4, 5, 6), (0, 3))],
                         ids=str)
@pytest.mark.parametrize("layout", ["contig", "T"])
def test_small_blocks_split_and_multipass(kit, rng, small_blocks, case, layout):
    shape, dims = case
    for dtype in (D.float32, D.int32):
        a, ra = kit.pair(shape, dtype, rng, layout=layout)
        _check(kit, tk.sum(a, dims, True), _ref(kit, ra, dims, True, dtype), dtype)


def test_split_plan_is_used(small_blocks):
    import importlib

    red = importlib.import_module("tritongrad.kernels.triton.reduction")
    steps = red._plan(("sum", (4, 200), (200, 1), (1,), D.float32))[0]
    assert len(steps) == 2 and steps[0][6] > 1  # a split pass, then the pass over partials
    steps = red._plan(("sum", (6, 7, 8), (56, 8, 1), (0, 2), D.float32))[0]
    assert len(steps) >= 2  # dims 0 and 2 do not collapse: one pass each


@pytest.mark.parametrize("shape, dims, passes", [
    ((1024, 128), (0,), 1),     # a GPT step's bias gradient: one launch (SPLIT_MIN)
    ((1024, 512), (0,), 1),
    ((16384, 4096), (0,), 2),   # bench_kernels' column sum: split, then the partials
    ((1 << 24,), (0,), 2),      # a full sum of 16 M elements
])
def test_reductions_split_only_where_a_program_has_enough_to_fold(shape, dims, passes):
    import importlib

    red = importlib.import_module("tritongrad.kernels.triton.reduction")
    strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    steps = red._plan(("sum", shape, strides, dims, D.float32))[0]
    assert len(steps) == passes
    assert (steps[0][6] > 1) == (passes == 2)  # n_split


def test_int64_offsets(kit, rng, monkeypatch):
    from tritongrad.kernels.triton import _launch

    monkeypatch.setattr(_launch, "_INT32_SAFE", 1)
    _launch.clear_plans()
    try:
        a, ra = kit.pair((6, 9), D.float64, rng, layout="T")
        _check(kit, tk.sum(a, (0,), False), ra.sum(0), D.float64)
        _check(kit, tk.sum(a, (0, 1), False), ra.sum(), D.float64)
    finally:
        _launch.clear_plans()


def test_amax_rejects_complex(kit):  # (complex has no order; sum: test_complex_kernels.py)
    with pytest.raises(TypeError, match="amax.*complex64"):
        tk.reduce("amax", kit.up(np.ones(3, np.complex64)), (0,), False)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple),
       data=st.data(), keepdim=st.booleans(),
       dtype=st.sampled_from(FLOATS + [D.int64]), layout=st.sampled_from(LAYOUTS),
       seed=st.integers(0, 2**16))
def test_property_sum(kit, shape, data, keepdim, dtype, layout, seed):
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)),
                                          max_size=len(shape)))))
    rng = np.random.default_rng(seed)
    a, ra = kit.pair(shape, dtype, rng, layout=layout)
    _check(kit, tk.sum(a, dims, keepdim), _ref(kit, ra, dims, keepdim, dtype), dtype)


# -- reduce: prod amax amin all any -----------------------------------------------------------
RCASES = [((7,), (0,)), ((4, 5), (1,)), ((4, 5), (0,)), ((3, 4, 5), (0, 2)), ((2, 3), (0, 1)),
          ((), ())]


@pytest.mark.parametrize("case", RCASES, ids=lambda c: f"{c[0]}-{c[1]}".replace(" ", ""))
@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("op", ["prod", "amax", "amin", "all", "any"])
def test_reduce(kit, rng, op, dtype, case):
    shape, dims = case
    kind = "small" if op == "prod" else "normal"
    a, ra = kit.pair(shape, dtype, rng, layout="T", kind=kind)
    if op == "prod" and dtype in (D.bool, D.uint8):  # int64 products, as PyTorch
        want = np.prod(ra, axis=dims, keepdims=True, dtype=np.int64)
    elif dtype is D.bfloat16:
        want = kit.ref(lambda x: kit.nk.reduce(op, x, dims, True), ra, dtype=dtype)
    else:
        want = kit.nk.reduce(op, ra, dims, True)
    r, t = SUM_TOL.get(dtype, (0, 0)) if op == "prod" else (0, 0)
    kit.check(tk.reduce(op, a, dims, True), want, dtype, rtol=r, atol=t)


def test_reduce_nan_empty_and_errors(kit):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf]], np.float32)
    for op in ["amax", "amin", "prod", "all", "any"]:
        kit.check(tk.reduce(op, kit.up(x), (1,), False), kit.nk.reduce(op, x, (1,), False))
    e = np.zeros((3, 0), np.float32)
    for op in ["prod", "all", "any"]:
        kit.check(tk.reduce(op, kit.up(e), (1,), False), kit.nk.reduce(op, e, (1,), False))
    with pytest.raises(ValueError, match="amax"):
        tk.reduce("amax", kit.up(e), (1,), False)
    with pytest.raises(ValueError, match="reduce: unknown op"):
        tk.reduce("median", kit.up(x), (1,), False)


def test_reduce_small_blocks(kit, rng, small_blocks):
    a, ra = kit.pair((6, 40), D.float32, rng, layout="T", kind="small")
    for op in ["prod", "amax", "amin", "all", "any"]:
        for dims in [(1,), (0,), (0, 1)] if op != "prod" else [(1,)]:
            kit.check(tk.reduce(op, a, dims, False), kit.nk.reduce(op, ra, dims, False),
                      rtol=1e-5, atol=1e-30)


# -- argreduce --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argreduce(kit, rng, op, dtype):
    a, ra = kit.pair((5, 6, 4), dtype, rng, layout="T")
    for dim in (0, 1, 2):
        for keepdim in (False, True):
            got = tk.argreduce(op, a, dim, keepdim)
            assert got.dtype is D.int64
            kit.check(got, kit.nk.argreduce(op, ra, dim, keepdim))


def test_argreduce_ties_and_nans(kit):
    x = np.array([[1, 3, 3, 0], [np.nan, 2, np.nan, 9], [-np.inf, -np.inf, 5, 5],
                  [2, 2, 2, 2]], np.float32)
    for op in ["argmax", "argmin"]:
        kit.check(tk.argreduce(op, kit.up(x), 1, False), kit.nk.argreduce(op, x, 1, False))
        kit.check(tk.argreduce(op, kit.up(x), 0, False), kit.nk.argreduce(op, x, 0, False))


def test_argreduce_split_and_0d(kit, rng, small_blocks):
    a, ra = kit.pair((3, 120), D.float64, rng)
    ra = np.round(ra, 1)  # ties across splits
    a = kit.up(ra)
    for op in ["argmax", "argmin"]:
        kit.check(tk.argreduce(op, a, 1, False), kit.nk.argreduce(op, ra, 1, False))
        kit.check(tk.argreduce(op, a, 0, True), kit.nk.argreduce(op, ra, 0, True))
    z = kit.up(np.float32(3.0))
    kit.check(tk.argreduce("argmax", z, 0, False), np.int64(0))
    with pytest.raises(ValueError, match="argmax"):
        tk.argreduce("argmax", kit.up(np.zeros((2, 0), np.float32)), 1, False)


@pytest.mark.parametrize("shrunk", [False, True], ids=["blocks", "small_blocks"])
def test_argreduce_lanes_on_special_rows(kit, rng, request, shrunk):
    # Note [argmax lanes]: the first pass keeps one index per lane and moves it only on a
    # strictly better value. Rows of ties, -inf/inf only, NaNs anywhere, integer extremes,
    # at lengths that leave lanes empty or split the row (small_blocks): NumPy's first
    # occurrence, NaN counting as the extreme (its first one wins)
    if shrunk:
        request.getfixturevalue("small_blocks")
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 1.0, -2.0], np.float32)
    for n in (1, 3, 17, 40, 129):
        rows = [np.full(n, -np.inf, np.float32), np.full(n, np.inf, np.float32),
                np.full(n, np.nan, np.float32), np.full(n, 2.0, np.float32),
                rng.choice(specials, n), rng.choice(specials[1:], n),
                np.round(rng.standard_normal(n), 0).astype(np.float32)]
        x = np.stack(rows)
        xi = np.stack([np.full(n, np.iinfo(np.int64).min), np.full(n, np.iinfo(np.int64).max),
                       rng.integers(-2, 3, n)]).astype(np.int64)
        for op, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
            for arr in (x, xi):
                got = kit.down(tk.argreduce(op, kit.up(arr), 1, False))
                np.testing.assert_array_equal(got, ref(arr, axis=1), err_msg=f"{op} n={n}")
                got0 = kit.down(tk.argreduce(op, kit.up(arr.T.copy()), 0, False))
                np.testing.assert_array_equal(got0, ref(arr, axis=1), err_msg=f"{op} T n={n}")


@settings(max_examples=80, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=2, max_size=4), n_lead=st.integers(0, 3),
       n_trail=st.integers(0, 3), keepdim=st.booleans(), f64=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_numpy_sum_over_leading_and_trailing_dims(kit, shape, n_lead, n_trail, keepdim, f64,
                                                 seed):
    # the CPU backend sums contiguous float32/float64 arrays over leading dims, trailing
    # dims or both (batch norm's (0, 2, 3)) as BLAS products with ones: same shape, dtype and
    # values (float64 reference) as np.sum, for empty dims and keepdim too; NaN and inf
    # propagate
    nd = len(shape)
    n_lead = min(n_lead, nd - 1)
    n_trail = min(n_trail, nd - 1 - n_lead)
    dims = tuple(range(n_lead)) + tuple(range(nd - n_trail, nd))
    if not dims:
        dims = (0,)
    dt = np.float64 if f64 else np.float32
    a = np.random.default_rng(seed).standard_normal(shape).astype(dt)
    if a.size > 3:
        a.flat[1], a.flat[3] = np.inf, np.nan
    got = kit.nk.sum(a, dims, keepdim)
    want = np.sum(a.astype(np.float64), axis=dims, keepdims=keepdim)
    assert got.shape == want.shape and got.dtype == dt
    np.testing.assert_allclose(got, want, rtol=1e-5 if dt == np.float32 else 1e-12, atol=1e-5)
