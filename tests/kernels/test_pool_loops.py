"""Max pooling's 2x2 loop (nn_loops.max_pool_2x2, Note [2x2 max pool]) against the NumPy
form of kernels/numpy/pool.py, which tests/kernels/test_cpu_loops.py holds to a scan in
Python: the same values and indices, NaN, -inf and ties included."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from tritongrad.kernels.numpy import jit

pool = importlib.import_module("tritongrad.kernels.numpy.pool")

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="the compiled CPU loops are off")


@pytest.mark.parametrize("shape", [(2, 3, 8, 8), (1, 2, 7, 5), (3, 1, 2, 2), (1, 1, 6, 9)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_2x2_loop_is_the_scan(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    for value in (np.nan, -np.inf, 0.5):  # NaNs, -inf windows and ties
        x.flat[rng.integers(0, x.size, 4)] = value
    x[0, 0, :2, :2] = 0.5  # a window of one tie: the first position wins
    out = (shape[2] // 2, shape[3] // 2)
    assert pool._is_2x2(shape[2:], (2, 2), (2, 2), (0, 0), (1, 1), out)
    got = pool.max_pool(x, (2, 2), (2, 2), (0, 0), (1, 1), out)
    with jit.disabled():
        want = pool.max_pool(x, (2, 2), (2, 2), (0, 0), (1, 1), out)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1][0, 0, 0, 0] == 0


def test_2x2_loop_takes_only_its_pools(monkeypatch):
    """The loop runs for MaxPool2d(2) and nothing else (a window past the input, padding,
    dilation, another stride or a 1-D or 3-D pool go to the generic loop)."""
    loops = jit.loops("nn_loops")
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 6)).astype(np.float32)
    with monkeypatch.context() as m:
        m.setattr(loops, "max_pool", None)  # (calling it would fail)
        pool.max_pool(x, (2, 2), (2, 2), (0, 0), (1, 1), (2, 3))
    assert not pool._is_2x2((5, 6), (2, 2), (2, 2), (0, 0), (1, 1), (3, 3))  # ceil_mode
    assert not pool._is_2x2((6, 6), (2, 2), (2, 2), (1, 0), (1, 1), (4, 3))
    assert not pool._is_2x2((6, 6), (2, 2), (2, 2), (0, 0), (2, 1), (2, 3))
    assert not pool._is_2x2((6, 6), (2, 2), (1, 2), (0, 0), (1, 1), (5, 3))
    assert not pool._is_2x2((6,), (2,), (2,), (0,), (1,), (3,))
    assert not pool._is_2x2((4, 4, 4), (2, 2, 2), (2, 2, 2), (0,) * 3, (1,) * 3, (2, 2, 2))
    with monkeypatch.context() as m:
        m.setattr(loops, "max_pool_2x2", None)
        with pytest.raises(TypeError):  # (it is the one called)
            pool.max_pool(x, (2, 2), (2, 2), (0, 0), (1, 1), (2, 3))
