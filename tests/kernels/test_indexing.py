"""index, index_put_, gather, scatter_ and nonzero against the NumPy backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_kit import ALL, FLOATS, D, tk

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _idx(kit, rng, high, shape):
    h = rng.integers(0, high, shape).astype(np.int64)
    return kit.up(h), h


INDEX_CASES = [
    ("one array", lambda r: ((0, (4,)),)),
    ("2-d array, middle dim", lambda r: ((None,), (1, (2, 3)))),
    ("adjacent pair", lambda r: ((0, (3, 1)), (1, (1, 2)))),
    ("separated pair -> first", lambda r: ((0, (2,)), (None,), (2, (2,)))),
    ("all three", lambda r: ((0, (5,)), (1, (5,)), (2, (1,)))),
    ("0-d for every dim", lambda r: ((0, ()), (1, ()), (2, ()))),
]


@pytest.mark.parametrize("case", INDEX_CASES, ids=[c[0] for c in INDEX_CASES])
@pytest.mark.parametrize("layout", ["contig", "T", "strided"])
def test_index(kit, rng, case, layout):
    a, ra = kit.pair((5, 6, 4), D.float32, rng, layout=layout)
    dev, host = [], []
    for spec in case[1](rng):
        if spec == (None,):
            dev.append(None)
            host.append(None)
        else:
            d, shape = spec
            x, h = _idx(kit, rng, ra.shape[d], shape)
            dev.append(x)
            host.append(h)
    ref = kit.nk.index(ra, tuple(host))
    assert isinstance(ref, np.ndarray)  # an array even where NumPy's indexing gives a scalar
    kit.check(tk.index(a, tuple(dev)), ref, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_index_dtypes(kit, rng, dtype):
    a, ra = kit.pair((6, 3), dtype, rng)
    i, h = _idx(kit, rng, 6, (2, 4))
    kit.check(tk.index(a, (i,)), kit.nk.index(ra, (h,)), dtype, rtol=0, atol=0)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_index_put(kit, rng, dtype, accumulate):
    a, ra = kit.pair((6, 5), dtype, rng, layout="T")
    ra = np.array(ra)
    # plain stores: distinct rows (duplicates leave an unspecified one: the test below)
    h = rng.integers(0, 6, 7) if accumulate else rng.choice(6, 4, replace=False)
    h = h.astype(np.int64)
    v, rv = kit.pair((len(h), 5), dtype, rng)
    tk.index_put_(a, (kit.up(h),), v, accumulate)
    if dtype is D.bfloat16:
        np.add.at(ra, h, rv) if accumulate else ra.__setitem__(h, rv)
        from kernel_kit import round_bf16
        ra = round_bf16(ra)
    elif dtype is D.bool and accumulate:
        np.logical_or.at(ra, h, rv)
    else:
        kit.nk.index_put_(ra, (h,), rv, accumulate)
    kit.check(a, ra, dtype, check_dtype=False)


@pytest.mark.parametrize("dtype", [D.float32, D.float64, D.float16, D.uint8], ids=str)
def test_index_put_duplicates_leave_one_of_the_values(kit, rng, dtype):
    """Plain stores to a row named more than once leave one of the values aimed at each
    element, unspecified which (PyTorch: undefined); on a GPU not always the last one, nor one
    row's values for the whole row. Rows named once or never are exact."""
    a, ra = kit.pair((6, 5), dtype, rng, layout="T")
    h = np.array([3, 1, 3, 5, 3, 1], np.int64)
    v, rv = kit.pair((len(h), 5), dtype, rng)
    tk.index_put_(a, (kit.up(h),), v, False)
    got = kit.down(a)
    rv = np.asarray(rv)
    for row in range(6):
        aimed = rv[h == row]
        if len(aimed) < 2:
            np.testing.assert_array_equal(got[row], aimed[0] if len(aimed) else ra[row])
            continue
        for col in range(5):
            assert got[row, col] in aimed[:, col], (row, col, got[row, col], aimed[:, col])


def test_index_put_broadcast_values_and_scalar(kit, rng):
    a, ra = kit.pair((4, 5, 3), D.float64, rng)
    ra = np.array(ra)
    i, h = _idx(kit, rng, 5, (2,))
    h = np.array([1, 3])
    i = kit.up(h)
    v, rv = kit.pair((3,), D.float64, rng)
    tk.index_put_(a, (None, i), v, False)
    kit.nk.index_put_(ra, (None, h), rv, False)
    kit.check(a, ra)
    tk.index_put_(a, (i,), 2.5, True)
    kit.nk.index_put_(ra, (h,), 2.5, True)
    kit.check(a, ra)


@pytest.mark.parametrize("dtype", FLOATS + [D.int64, D.int32], ids=str)
def test_gather(kit, rng, dtype):
    a, ra = kit.pair((4, 6, 5), dtype, rng, layout="T")
    for dim in (0, 1, 2):
        shape = [3, 4, 2]
        i, h = _idx(kit, rng, ra.shape[dim], tuple(shape))
        kit.check(tk.gather(a, dim, i), kit.nk.gather(ra, dim, h), dtype, rtol=0, atol=0)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", [D.float32, D.float64, D.float16, D.int64, D.int32, D.uint8],
                         ids=str)
def test_scatter(kit, rng, dtype, accumulate):
    for dim in (0, 1):
        a, ra = kit.pair((5, 6), dtype, rng, layout="T")
        ra = np.array(ra)
        if accumulate:
            h = rng.integers(0, ra.shape[dim], (4, 3)).astype(np.int64)
        elif dim == 0:  # distinct targets along dim (duplicates leave an unspecified one)
            h = np.stack([rng.permutation(5)[:4] for _ in range(3)], axis=1).astype(np.int64)
        else:
            h = np.stack([rng.permutation(6)[:3] for _ in range(4)]).astype(np.int64)
        src, rsrc = kit.pair((5, 4), dtype, rng, layout="strided")  # larger than the index
        tk.scatter_(a, dim, kit.up(h), src, accumulate)
        kit.nk.scatter_(ra, dim, h, rsrc, accumulate)
        kit.check(a, ra, dtype, check_dtype=False)
        tk.scatter_(a, dim, kit.up(h), 3, accumulate)
        kit.nk.scatter_(ra, dim, h, 3, accumulate)
        kit.check(a, ra, dtype, check_dtype=False)


def test_scatter_0d_and_small_blocks(kit, rng, small_blocks):
    z = kit.up(np.float32(1.5))
    tk.scatter_(z, 0, kit.up(np.int64(0)), 2.0, True)
    kit.check(z, np.float32(3.5))
    a, ra = kit.pair((40, 7), D.float32, rng)
    ra = np.array(ra)
    h = rng.integers(0, 40, (30, 7)).astype(np.int64)
    src, rsrc = kit.pair((30, 7), D.float32, rng)
    tk.scatter_(a, 0, kit.up(h), src, True)
    kit.nk.scatter_(ra, 0, h, rsrc, True)
    kit.check(a, ra, atol=1e-5)
    kit.check(tk.gather(a, 0, kit.up(h)), kit.nk.gather(ra, 0, h), atol=1e-5)


@pytest.mark.parametrize("dtype", [D.bool, D.float32, D.int32, D.uint8], ids=str)
@pytest.mark.parametrize("layout", ["contig", "T", "strided"])
def test_nonzero(kit, rng, dtype, layout):
    a, ra = kit.pair((4, 5, 3), dtype, rng, layout=layout)
    if dtype is not D.bool:
        a, ra = kit.pair((4, 5, 3), D.bool, rng, layout=layout)
        a, ra = tk.astype(a, dtype), ra.astype(dtype.np)
    got = tk.nonzero(a)
    assert got.dtype is D.int64
    kit.check(got, kit.nk.nonzero(ra))


def test_nonzero_edges(kit, rng, small_blocks):
    x = (rng.random(100) < 0.3)
    kit.check(tk.nonzero(kit.up(x)), kit.nk.nonzero(x))  # many blocks
    kit.check(tk.nonzero(kit.up(np.zeros(5, bool))), np.zeros((0, 1), np.int64))
    kit.check(tk.nonzero(kit.up(np.zeros((0, 3), np.float32))), np.zeros((0, 2), np.int64))
    kit.check(tk.nonzero(kit.up(np.float32(2))), kit.nk.nonzero(np.float32(2)))
    kit.check(tk.nonzero(kit.up(np.float32(0))), kit.nk.nonzero(np.float32(0)))


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       k=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_property_index(kit, shape, k, seed):
    rng = np.random.default_rng(seed)
    a, ra = kit.pair(shape, D.float32, rng, layout="T")
    ishape = tuple(rng.integers(1, 4, rng.integers(1, 3)))
    host = tuple(rng.integers(0, n, ishape).astype(np.int64) if rng.random() < 0.7 else None
                 for n in shape[:k])
    if all(h is None for h in host):
        host = (rng.integers(0, shape[0], ishape).astype(np.int64),) + host[1:]
    dev = tuple(None if h is None else kit.up(h) for h in host)
    kit.check(tk.index(a, dev), kit.nk.index(ra, host), rtol=0, atol=0)


I64 = np.iinfo(np.int64)


@pytest.mark.parametrize("n", [1, 7, 2500])  # 2500: three programs folding one slot
@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("ignore", [None, -100])
@pytest.mark.parametrize("record", [False, True])
def test_index_guard(kit, rng, n, wrap, ignore, record):
    # the user's indices, some out of range on both sides, some ignored: the safe indices and
    # the folded extremes as the NumPy backend computes them, the slot's earlier values kept
    size = 13
    h = rng.integers(-30, 30, n).astype(np.int64)
    if ignore is not None:
        h[rng.random(n) < 0.3] = ignore
    slot = np.array([5, 6], np.int64)  # an earlier fold into the slot: min 5, max 6
    ext = kit.up(slot) if record else None
    got = tk.index_guard(kit.up(h), size, -size if wrap else 0, ignore, ext)
    ref_ext = slot.copy()
    ref = kit.nk.index_guard(h, size, -size if wrap else 0, ignore,
                             ref_ext if record else None)
    kit.check(got, ref, rtol=0, atol=0)
    kept = h if ignore is None else h[h != ignore]
    want = (h + size * ((h < 0) & wrap)).clip(0, size - 1)
    if ignore is not None:
        want = np.where(h == ignore, h, want)
    np.testing.assert_array_equal(ref, want)
    if record:
        expected = [min(5, kept.min(initial=I64.max)), max(6, kept.max(initial=I64.min))]
        np.testing.assert_array_equal(ref_ext, expected)
        np.testing.assert_array_equal(kit.down(ext), expected)


def test_index_guard_strided_and_empty(kit, rng):
    h = rng.integers(-5, 20, (6, 4)).astype(np.int64)
    a = tk.permute(kit.up(h), (1, 0))  # a transposed (non-contiguous) index array
    ext = kit.up(np.array([I64.max, I64.min], np.int64))
    got = tk.index_guard(a, 10, 0, None, ext)
    kit.check(got, h.T.clip(0, 9), rtol=0, atol=0)
    np.testing.assert_array_equal(kit.down(ext), [h.min(), h.max()])
    narrow = tk.index_guard(kit.up(np.array([3, 250], np.uint8)), 10, 0, None, None)
    kit.check(narrow, np.array([3, 9], np.int64), rtol=0, atol=0)  # widened to int64
    empty = tk.index_guard(kit.up(np.zeros((0, 3), np.int64)), 10, 0, None, ext)
    assert tuple(empty.shape) == (0, 3)
    np.testing.assert_array_equal(kit.down(ext), [h.min(), h.max()])  # untouched
