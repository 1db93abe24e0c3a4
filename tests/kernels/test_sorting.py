"""sort (kernels/triton/sorting.py) and scatter_reduce_ (kernels/triton/indexing.py) against
the NumPy backend: every dtype, ties, NaN, -0.0, both directions, any dim, strided layouts,
rows longer than one block; exact equality (both are stable and copy values)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_kit import ALL, FLOATS, INTS, D, tk
from tritongrad.kernels import host_array, host_values
from tritongrad.kernels.triton import sorting


def _with_ties(kit, shape, dtype, rng, layout="contig"):
    """Values with many ties (few distinct), and NaN for floats."""
    a, ra = kit.pair(shape, dtype, rng, layout=layout)
    if dtype in FLOATS:
        host = np.round(rng.standard_normal(shape) * 2) / 2
        host.reshape(-1)[::7] = np.nan
        host.reshape(-1)[1::11] = -0.0
        host = host.astype(np.float32 if dtype is D.bfloat16 else dtype.np)
        a = kit.up(host, dtype)
        ra = kit.down(a)
    return a, ra


@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_dtypes(kit, rng, dtype, descending):
    a, ra = _with_ties(kit, (3, 37), dtype, rng)
    v, i = tk.sort(a, 1, descending)
    rv, ri = kit.nk.sort(ra, 1, descending)
    kit.check(i, ri)
    assert v.dtype is dtype
    np.testing.assert_array_equal(kit.down(v), np.asarray(rv))


@pytest.mark.parametrize("layout", ["T", "strided", "sliced", "expanded"])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_sort_layouts_and_dims(kit, rng, layout, dim):
    a, ra = kit.pair((4, 5, 6), D.float32, rng, layout=layout)
    for descending in (False, True):
        v, i = tk.sort(a, dim, descending)
        rv, ri = kit.nk.sort(np.ascontiguousarray(ra), dim, descending)
        kit.check(i, ri)
        kit.check(v, rv, rtol=0, atol=0)


def test_sort_long_rows_and_edges(kit, rng):
    a, ra = _with_ties(kit, (2, 300), D.float32, rng)  # several i- and j-blocks per row
    for descending in (False, True):
        _, i = tk.sort(a, 1, descending)
        _, ri = kit.nk.sort(ra, 1, descending)
        kit.check(i, ri)
    v, i = tk.sort(kit.up(np.float32(2.5)), 0, False)
    assert v.shape == () and kit.down(i) == 0 and kit.down(v) == 2.5
    v, i = tk.sort(kit.up(np.zeros((3, 0), np.float32)), 1, True)
    assert v.shape == (3, 0) and i.dtype is D.int64


def test_sort_limit_is_named(kit, monkeypatch):
    monkeypatch.setattr(sorting, "MAX_N", 8)
    with pytest.raises(RuntimeError, match="row of 9 elements is longer than the Triton "
                                           "backend's limit of 8"):
        tk.sort(kit.up(np.zeros((2, 9), np.float32)), 1, False)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce(kit, rng, dtype, reduce):
    for include_self in (True, False):
        a, ra = kit.pair((4, 5), dtype, rng, kind="positive" if reduce == "prod" else "normal")
        src, rsrc = kit.pair((3, 6), dtype, rng, layout="strided",
                             kind="positive" if reduce == "prod" else "normal")
        idx = rng.integers(0, 4, (3, 5))
        ref = _nk_ref(kit, ra, 0, idx, rsrc, reduce, include_self, dtype)
        tk.scatter_reduce_(a, 0, kit.up(idx), src, reduce, include_self)
        kit.check(a, ref, dtype=dtype)


def _nk_ref(kit, ra, dim, idx, rsrc, reduce, include_self, dtype):
    """The NumPy backend's scatter_reduce_ on CPU arrays of ``dtype`` (bfloat16 included)."""
    ref = host_array(np.array(ra, copy=True), dtype)
    src = host_array(np.ascontiguousarray(rsrc), dtype)
    kit.nk.scatter_reduce_(ref, dim, idx, src, reduce, include_self)
    return host_values(ref)


def test_scatter_reduce_nan_and_dims(kit, rng):
    _, ra = kit.pair((3, 4, 2), D.float32, rng, layout="T")
    src, rsrc = kit.pair((3, 5, 2), D.float32, rng)
    rsrc = np.array(rsrc)
    rsrc[0, 0, 0] = np.nan
    src = kit.up(rsrc)
    idx = rng.integers(0, 4, (2, 5, 2))
    for reduce in ("amax", "amin"):
        dst, rdst = kit.up(np.ascontiguousarray(ra)), np.array(ra)
        tk.scatter_reduce_(dst, 1, kit.up(idx), src, reduce, False)
        kit.nk.scatter_reduce_(rdst, 1, idx, rsrc, reduce, False)
        kit.check(dst, rdst, rtol=0, atol=0)
