"""cumsum and softmax/log_softmax along one dim against the NumPy backend."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_kit import ALL, FLOATS, D, tk

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

LAYOUTS = ["contig", "T", "strided", "expanded"]
TOL = {D.float16: (2e-3, 2e-3), D.bfloat16: (1e-2, 1e-2), D.float32: (1e-5, 1e-5),
       D.float64: (1e-12, 1e-12)}


def _int_ref(ra, dim, reverse):
    x = np.flip(ra, dim) if reverse else ra
    r = np.cumsum(x, axis=dim, dtype=np.int64)
    return np.flip(r, dim) if reverse else r


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_cumsum(kit, rng, dtype, reverse):
    for layout in ("contig", "T"):
        a, ra = kit.pair((3, 5, 4), dtype, rng, layout=layout)
        for dim in (0, 1, 2, -1):
            got = tk.cumsum(a, dim, reverse)
            if dtype.is_floating_point:
                want = kit.ref(lambda x, d=dim: kit.nk.cumsum(x, d, reverse), ra, dtype=dtype)
                r, t = TOL[dtype]
                kit.check(got, want, dtype, rtol=r, atol=t * 4)
            else:
                kit.check(got, _int_ref(ra, dim, reverse))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cumsum_layouts_and_long_rows(kit, rng, small_blocks, layout):
    a, ra = kit.pair((4, 37), D.float32, rng, layout=layout)
    for reverse in (False, True):
        kit.check(tk.cumsum(a, 1, reverse), kit.nk.cumsum(ra, 1, reverse), atol=1e-5)
        kit.check(tk.cumsum(a, 0, reverse), kit.nk.cumsum(ra, 0, reverse), atol=1e-5)


def test_cumsum_empty_and_0d(kit):
    kit.check(tk.cumsum(kit.up(np.zeros((3, 0), np.float32)), 1), np.zeros((3, 0), np.float32))
    kit.check(tk.cumsum(kit.up(np.float32(2.5)), 0), np.float32(2.5))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax(kit, rng, dtype, log):
    for layout in ("contig", "T", "strided"):
        a, ra = kit.pair((3, 7, 5), dtype, rng, layout=layout)
        for dim in (0, 1, 2):
            got = tk.softmax(a, dim, log)
            want = kit.ref(lambda x, d=dim: kit.nk.softmax(x, d, log), ra, dtype=dtype)
            r, t = TOL[dtype]
            kit.check(got, want, dtype, rtol=r, atol=t)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_long_rows_and_specials(kit, rng, small_blocks, log):
    from tritongrad.kernels.triton import _launch

    assert _launch.SINGLE_MAX == 8  # the looped path
    a, ra = kit.pair((5, 45), D.float32, rng, layout="T")
    kit.check(tk.softmax(a, 1, log), kit.nk.softmax(ra, 1, log), atol=1e-6)
    x = np.array([[-np.inf] * 3, [np.inf, 1, 2], [np.nan, 0, 1], [1000, 0, -1000]], np.float32)
    for d in (0, 1):
        kit.check(tk.softmax(kit.up(x), d, log), kit.nk.softmax(x, d, log), atol=1e-6)


def test_softmax_rejects_ints_and_handles_empty(kit):
    with pytest.raises(TypeError, match="softmax.*int32"):
        tk.softmax(kit.up(np.ones((2, 2), np.int32)), 1)
    kit.check(tk.softmax(kit.up(np.zeros((0, 3), np.float32)), 1), np.zeros((0, 3), np.float32))
