"""Creation, copies, casts (the elementwise family's copy op) and views, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import broadcastable_shapes
from kernel_kit import ALL, FLOATS, D, round_bf16, tk

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

LAYOUTS = ["contig", "T", "strided", "sliced", "expanded"]


def _cast_ref(kit, src_ref, src_dtype, dst_dtype):
    """NumPy's astype, with bfloat16 handled through float32 (as the kernels do)."""
    x = src_ref
    if dst_dtype is D.bfloat16:
        return round_bf16(np.asarray(x).astype(np.float32))
    return np.asarray(x).astype(dst_dtype.np)


# -- full -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 257)], ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_full(kit, dtype, shape):
    for value in ([True, False] if dtype is D.bool else [0, 7, 2.75] if dtype is D.uint8
                  else [-3, 0.1, True] if dtype.is_floating_point else [-3, 41, True]):
        got = tk.full(shape, value, dtype)
        want = (round_bf16(np.full(shape, value, np.float32)) if dtype is D.bfloat16
                else kit.nk.full(shape, value, dtype))
        kit.check(got, want, dtype, rtol=0, atol=0)


def test_full_float64_exact_and_special(kit):
    kit.check(tk.full((3,), 0.1, D.float64), np.full(3, 0.1), rtol=0, atol=0)
    kit.check(tk.full((2,), float("inf"), D.float16), np.full(2, np.inf, np.float16))
    kit.check(tk.full((2,), float("nan"), D.bfloat16), np.full(2, np.nan, np.float32),
              D.bfloat16)
    kit.check(tk.full((2,), 2**62 + 1, D.int64), np.full(2, 2**62 + 1, np.int64))
    kit.check(tk.full((2,), 2**70, D.float32), np.full(2, 2.0**70, np.float32))


def test_empty(kit):
    e = tk.empty((2, 3), D.float16)
    assert e.shape == (2, 3) and e.dtype is D.float16 and tk.strides(e) == (3, 1)
    assert tk.storage_offset(e) == 0


# -- astype / casts ---------------------------------------------------------------------------
@pytest.mark.parametrize("dst", ALL, ids=str)
@pytest.mark.parametrize("src", ALL, ids=str)
def test_astype_matrix(kit, rng, src, dst):
    if src is D.bool:
        host = rng.random((5, 7)) < 0.5
    else:
        host = np.round(rng.uniform(0, 120, (5, 7)), 2)
        if src is not D.uint8 and dst is not D.uint8:
            host = host - 60
        host = round_bf16(host) if src is D.bfloat16 else host.astype(src.np)
    a = kit.up(host, src)
    view = tk.permute(a, (1, 0))
    got = tk.astype(view, dst)
    assert got.dtype is dst and tk.strides(got) == (5, 1)
    kit.check(got, _cast_ref(kit, host.T, src, dst), dst, rtol=0, atol=0, check_dtype=False)


def test_astype_rounding(kit):
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, 65519.0, 65520.0, 1e-8, -2.5], dtype=np.float64)
    kit.check(tk.astype(kit.up(x), D.float16), x.astype(np.float16), rtol=0, atol=0)
    kit.check(tk.astype(kit.up(x.astype(np.float32)), D.float16),
              x.astype(np.float32).astype(np.float16), rtol=0, atol=0)
    y = np.array([1 + 2**-8, 1 + 3 * 2**-8, 3.0e38, -0.0, 7.9], dtype=np.float32)
    kit.check(tk.astype(kit.up(y), D.bfloat16), round_bf16(y), D.bfloat16, rtol=0, atol=0)
    t = np.array([-2.7, -0.5, 0.5, 2.7, 1e9], dtype=np.float32)
    kit.check(tk.astype(kit.up(t), D.int32), t.astype(np.int32))  # truncation toward zero
    kit.check(tk.astype(kit.up(t), D.bool), t.astype(bool))
    # anything -> bool is != 0 (Note [bool stores]): a fraction or a multiple of 256 must not
    # truncate to an int8 zero on the way
    for v in (0.5, -0.25, 256, 2**40, 1e9):
        kit.check(tk.full((3,), v, D.bool), np.full(3, True))
    kit.check(tk.astype(kit.up(np.array([256, 512, 0, -256], np.int64)), D.bool),
              np.array([True, True, False, True]))
    w = np.array([2**31 + 5, -(2**31) - 7, 300], dtype=np.int64)
    kit.check(tk.astype(kit.up(w), D.int32), w.astype(np.int32))  # wraps
    kit.check(tk.astype(kit.up(w), D.uint8), w.astype(np.uint8))


# -- contiguous -------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_contiguous(kit, rng, layout):
    a, ra = kit.pair((3, 4, 5), D.float32, rng, layout=layout)
    c = tk.contiguous(a)
    if layout == "contig":
        assert c is a
    else:
        assert c is not a and tk.strides(c) == (20, 5, 1)
    kit.check(c, kit.nk.contiguous(ra), rtol=0, atol=0)


# -- copy_ ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dst_layout", ["contig", "T", "strided", "sliced"])
@pytest.mark.parametrize("src_layout", LAYOUTS)
def test_copy_layouts(kit, rng, src_layout, dst_layout):
    src, rsrc = kit.pair((4, 6), D.float64, rng, layout=src_layout)
    dst, rdst = kit.pair((4, 6), D.float32, rng, layout=dst_layout)
    rdst = np.array(rdst)
    assert tk.copy_(dst, src) is None
    kit.nk.copy_(rdst, rsrc)
    kit.check(dst, rdst)


def test_copy_broadcast_scalar_and_untouched(kit, rng):
    buf_h = np.zeros((5, 8), np.float32)
    buf = kit.up(buf_h)
    dst = tk.getitem(buf, (slice(1, 4), slice(0, 8, 3)))  # (3, 3), strides (8, 3)
    src, rsrc = kit.pair((3,), D.int32, rng)
    tk.copy_(dst, src)
    kit.nk.copy_(buf_h[1:4, 0:8:3], rsrc)
    kit.check(buf, buf_h)
    tk.copy_(dst, 2.5)
    kit.nk.copy_(buf_h[1:4, 0:8:3], 2.5)
    kit.check(buf, buf_h)
    zero_d, rz = kit.pair((), D.float64, rng)
    tk.copy_(dst, zero_d)
    kit.nk.copy_(buf_h[1:4, 0:8:3], rz)
    kit.check(buf, buf_h)


def test_copy_overlapping(kit, rng):
    h = rng.standard_normal(12)
    a = kit.up(h)
    tk.copy_(tk.getitem(a, (slice(2, 12),)), tk.getitem(a, (slice(0, 10),)))
    h[2:12] = h[0:10].copy()
    kit.check(a, h)
    m = kit.up(np.arange(9.0).reshape(3, 3))
    hm = np.arange(9.0).reshape(3, 3)
    tk.copy_(m, tk.permute(m, (1, 0)))  # in-place transpose: NumPy copies the source first
    kit.nk.copy_(hm, hm.T)
    kit.check(m, hm)


def test_copy_errors(kit):
    dst = tk.empty((3, 4), D.float32)
    with pytest.raises(ValueError, match="copy_"):
        tk.copy_(dst, tk.empty((4, 3), D.float32))


def test_small_blocks_copies(kit, rng, small_blocks):
    a, ra = kit.pair((9, 11), D.float16, rng, layout="T")
    kit.check(tk.astype(a, D.float32), ra.astype(np.float32))
    kit.check(tk.full((50,), 1.5, D.bfloat16), np.full(50, 1.5, np.float32), D.bfloat16)


# -- views ------------------------------------------------------------------------------------
def test_views_match_numpy_metadata(kit, rng):
    a, ra = kit.pair((4, 5, 6), D.float32, rng)
    cases = [
        (lambda m, x: m.permute(x, (2, 0, 1))),
        (lambda m, x: m.getitem(x, (1, slice(0, 5, 2), None, slice(None)))),
        (lambda m, x: m.expand(m.getitem(x, (slice(None), slice(0, 1), slice(None))),
                               (4, 3, 6))),
        (lambda m, x: m.view(x, (20, 6))),
    ]
    for f in cases:
        got, ref = f(tk, a), f(kit.nk, ra)
        assert tk.strides(got) == kit.nk.strides(ref)
        assert tk.storage_offset(got) == kit.nk.storage_offset(ref)
        kit.check(tk.contiguous(got), np.ascontiguousarray(ref), rtol=0, atol=0)


def test_as_strided(kit, rng):
    a, ra = kit.pair((4, 5, 6), D.float32, rng)
    v = tk.as_strided(tk.getitem(a, (1,)), (3, 4), (7, 2), 5)
    assert tk.strides(v) == (7, 2) and tk.storage_offset(v) == 5
    want = np.lib.stride_tricks.as_strided(ra.reshape(-1)[5:], (3, 4), (28, 8))
    kit.check(tk.contiguous(v), want, rtol=0, atol=0)


def test_view_none_when_strides_forbid(kit, rng):
    a, ra = kit.pair((4, 6), D.float32, rng, layout="T")
    assert tk.view(a, (24,)) is None and kit.nk.view(ra, (24,)) is None
    v = tk.view(a, (4, 2, 3))
    assert v is not None and tk.strides(v) == kit.nk.strides(kit.nk.view(ra, (4, 2, 3)))


def test_expand_rejects_bad_shape(kit):
    with pytest.raises(ValueError, match="expand"):
        tk.expand(tk.empty((3, 2), D.float32), (3, 4))


# -- property-based ---------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(shapes=broadcastable_shapes(shape=(3, 4, 2), min_dims=0, max_dims=3, max_side=4),
       src_dtype=st.sampled_from([D.float32, D.float16, D.int64, D.bool, D.bfloat16]),
       dst_dtype=st.sampled_from(FLOATS + [D.int32]),
       src_layout=st.sampled_from(LAYOUTS), dst_layout=st.sampled_from(["contig", "T",
                                                                         "strided"]),
       seed=st.integers(0, 2**16))
def test_property_copy(kit, shapes, src_dtype, dst_dtype, src_layout, dst_layout, seed):
    rng = np.random.default_rng(seed)
    src, rsrc = kit.pair(shapes, src_dtype, rng, layout=src_layout)
    dst, _ = kit.pair((3, 4, 2), dst_dtype, rng, layout=dst_layout)
    tk.copy_(dst, src)
    want = _cast_ref(kit, np.broadcast_to(rsrc, (3, 4, 2)), src_dtype, dst_dtype)
    kit.check(dst, want, dst_dtype, check_dtype=False, rtol=0, atol=0)


# -- arange -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_arange(kit, dtype):
    cases = [(0, 1, 7), (3, 2, 5), (0, 1, 0)] if dtype is D.bool else \
        [(0, 1, 7), (3, 2, 5), (0, 1, 0), (2, 3, 40)] if dtype is D.uint8 else \
        [(0, 1, 7), (-3, 2, 5), (0, 1, 0), (1.5, 0.25, 9), (10, -3, 6), (0, 0.1, 30)]
    for start, step, n in cases:
        want = kit.nk.arange(start, step, n, D.float32 if dtype is D.bfloat16 else dtype)
        if dtype is D.bfloat16:
            want = round_bf16(np.asarray(want, np.float32))
        kit.check(tk.arange(start, step, n, dtype), np.asarray(want), dtype, check_dtype=False,
                  rtol=1e-6 if dtype.is_floating_point else 0, atol=0)
        assert tk.arange(start, step, n, dtype).dtype is dtype


def test_arange_int64_exact(kit):
    kit.check(tk.arange(2**40, 2**33, 5, D.int64), 2**40 + 2**33 * np.arange(5))


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
       lead=st.lists(st.integers(1, 3), max_size=2).map(tuple),
       grow=st.lists(st.integers(1, 3), min_size=3, max_size=3),
       layout=st.sampled_from(["contig", "T", "strided", "readonly"]),
       bf16=st.booleans())
def test_property_numpy_expand_is_broadcast_to(shape, lead, grow, layout, bf16):
    # The NumPy backend's expand builds its stride-0 view directly for contiguous inputs;
    # it must agree with np.broadcast_to in values, storage and writability.
    from tritongrad.kernels import numpy as nk
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    if layout == "T":
        a = a.T
    elif layout == "strided" and a.ndim:
        a = np.repeat(a, 2, axis=-1)[..., ::2]
    elif layout == "readonly":
        a.flags.writeable = False
    if bf16:
        a = nk.astype(a, D.bfloat16)
    target = lead + tuple(g if n == 1 else n for n, g in zip(a.shape, grow))
    got = nk.expand(a, target)
    want = np.broadcast_to(a.view(np.ndarray), target)
    assert got.shape == want.shape and type(got) is type(a)
    np.testing.assert_array_equal(got.view(np.ndarray), want)
    assert got.flags.writeable == a.flags.writeable
    if a.size:
        assert nk.storage_offset(got) == nk.storage_offset(a)
        assert np.shares_memory(got, a)


# -- cat (concat.py: up to four inputs a launch) ------------------------------------------------

@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 9])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_cat_counts_and_dims(kit, rng, small_blocks, count, dim):
    # groups of four, then the rest; sizes along dim differ (one of them 0); several programs
    base = (3, 4, 5)
    pairs = []
    for i in range(count):
        shape = list(base)
        shape[dim] = (i % 3) + (0 if i == 1 else 1)
        pairs.append(kit.pair(tuple(shape), D.float32, rng))
    got = tk.cat([a for a, _ in pairs], dim)
    kit.check(got, kit.nk.cat([h for _, h in pairs], dim), rtol=0, atol=0)


@pytest.mark.parametrize("layouts", [("T", "contig", "strided"), ("sliced", "T"),
                                     ("expanded", "contig", "contig")])
def test_cat_layouts(kit, rng, small_blocks, layouts):
    # a transposed or strided input collapses to (outer, dim, inner) strides or is copied alone;
    # an expanded one has zero strides
    pairs = [kit.pair((4, 3 + i, 6), D.float32, rng, layout=lay) for i, lay in enumerate(layouts)]
    got = tk.cat([a for a, _ in pairs], 1)
    kit.check(got, np.concatenate([h for _, h in pairs], 1), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL + [D.complex64], ids=str)
def test_cat_dtypes(kit, rng, dtype):
    if dtype is D.complex64:
        hs = [(rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))).astype(np.complex64)
              for n in (3, 1, 2)]
        got = tk.cat([kit.up(h) for h in hs], 1)
        kit.check(got, np.concatenate(hs, 1), rtol=0, atol=0)
        return
    pairs = [kit.pair((2, n, 3), dtype, rng) for n in (3, 1, 2)]
    got = tk.cat([a for a, _ in pairs], 1)
    kit.check(got, kit.nk.cat([h for _, h in pairs], 1), dtype, rtol=0, atol=0)


def test_cat_plans_serve_new_arrays_of_their_layout(kit, rng, small_blocks):
    # a plan is kept per (dim, dtype, each input's shape and strides): a second call with
    # other arrays of the same layouts (at other offsets) reuses it, another layout gets its own
    from tritongrad.kernels.triton import concat

    concat._PLANS.clear()
    for layouts in (("contig", "T", "strided"), ("sliced", "T", "strided"), ("contig",) * 3):
        for _ in range(2):
            pairs = [kit.pair((4, 2 + i, 5), D.float32, rng, layout=lay)
                     for i, lay in enumerate(layouts)]
            got = tk.cat([a for a, _ in pairs], 1)
            kit.check(got, np.concatenate([h for _, h in pairs], 1), rtol=0, atol=0)
    assert len(concat._PLANS) == 3


def test_cat_empty_result(kit, rng):
    a = kit.up(np.zeros((0, 3), np.float32))
    got = tk.cat([a, a], 0)
    assert tuple(got.shape) == (0, 3)
