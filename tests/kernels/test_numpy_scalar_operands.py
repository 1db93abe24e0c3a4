"""The NumPy backend's cached scalar operands (Note [Cached scalar operands] in
kernels/numpy/elementwise.py) and its fused derivative rules give what NumPy's own conversion
and formulas give: the same dtype and the same bits, with or without the compiled loops."""

import math
import warnings

import numpy as np
import pytest
from tritongrad.kernels.numpy import elementwise as ew
from tritongrad.kernels.numpy import jit

VALUES = [1.01, 0.1, -2.5, 1e-30, 3.0, 0.0, -0.0, math.inf, -math.inf, math.nan, 1e300, -1e300,
          3.4028235e38, 1e-320]


def _same(got, want):
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,ufunc", [("add", np.add), ("sub", np.subtract),
                                        ("mul", np.multiply), ("div", np.true_divide)])
@pytest.mark.parametrize("shape", [(16, 16), (), (7,)])
def test_float_operand_gives_numpys_result(dtype, name, ufunc, shape):
    a = np.asarray(np.random.default_rng(0).standard_normal(shape)).astype(dtype)
    op = getattr(ew, name)
    for b in VALUES:
        for _ in range(2):  # the first call fills the cache, the second reads it
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                want = np.asarray(ufunc(a, b))
                got = op(a, b)
            _same(got, want)


def test_cache_holds_only_safe_keys_and_stays_bounded():
    cache = ew._SCALAR_ARRAYS[np.dtype(np.float32)]
    a = np.ones(4, np.float32)
    cache.clear()
    for b in (0.0, -0.0, math.nan, 1e300):
        with np.errstate(over="ignore"):  # (NumPy's own cast of 1e300 to float32 warns)
            ew.mul(a, b)
    assert not cache  # zero (two signs, one key), NaN (never equal) and overflow stay out
    ew.mul(a, 0.0)
    _same(ew.mul(a, -0.0), np.multiply(a, -0.0))  # not 0.0's result
    for i in range(ew._SCALARS_KEPT + 10):
        ew.add(a, 1.0 + i)
    assert 0 < len(cache) <= ew._SCALARS_KEPT
    s = cache[1.0 + ew._SCALARS_KEPT]
    assert s.ndim == 0 and s.dtype == np.float32 and not s.flags.writeable


def test_out_and_other_operands_are_untouched():
    a = np.arange(6, dtype=np.float32)
    out = np.empty(6, np.float64)
    ew.mul(a, 1.01, out)
    _same(out, np.multiply(a, 1.01, out=np.empty(6, np.float64), casting="unsafe"))
    r = ew.add(a, 2.5)
    r += 1  # a fresh, writable result, not the cached operand
    _same(ew.add(a, 2.5), np.add(a, 2.5))
    ints = np.arange(3, dtype=np.int32)
    _same(ew.mul(ints, 1.5), np.multiply(ints, 1.5))  # not cached: NumPy's promotion stands
    half = np.ones(3, np.float16)
    _same(ew.mul(half, 1.01), np.multiply(half, 1.01))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward"])
def test_fused_derivatives_match_their_numpy_forms(dtype, name):
    rng = np.random.default_rng(1)
    g = rng.standard_normal((5, 7)).astype(dtype)
    y = np.tanh(rng.standard_normal((5, 7))).astype(dtype)
    numpy_form = getattr(ew, f"_{name}_numpy")
    want = numpy_form(g, y)
    _same(ew.binary(name, g, y), want)
    with jit.disabled():
        _same(ew.binary(name, g, y), want)
    out = np.empty_like(g)
    assert ew.binary(name, g, y, out) is out
    _same(out, want)
    _same(ew.binary(name, g[::2], y[::2]), numpy_form(g[::2], y[::2]))
    _same(ew.binary(name, g.astype(np.float64), y.astype(np.float32)),
          numpy_form(g.astype(np.float64), y.astype(np.float32)))
