"""The compiled loops of the CPU attention's whole-score-matrix path
(kernels/numpy/attention_loops.py) on their own, against float64 NumPy: the attention tests
(test_attention_whole_softmax.py, test_fused_attention.py) run them inside the kernels."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

jit = importlib.import_module("tritongrad.kernels.numpy.jit")
pytestmark = pytest.mark.skipif(not jit.enabled(), reason="the compiled CPU loops are off "
                                "(no Numba, or TRITONGRAD_CPU_JIT=0)")


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("shape", [(3, 7, 7), (2, 9, 5), (2, 5, 9), (1, 1, 257)])
@pytest.mark.parametrize("shift", [0.0, 31.5])
def test_compiled_softmax_rows_against_float64(shape, causal, shift):
    """attention_loops.softmax_rows (Note [Compiled exp in the softmax]): exp(s - shift)
    normalised per row, within a few float32 ulps of the float64 softmax; the keys a causal
    query does not see come out exactly 0 (their exp is never taken: inf or NaN there change
    nothing), and the sums are those of the unnormalised row."""
    loops = jit.loops("attention_loops")
    n, length, source = shape
    rng = np.random.default_rng(6)
    s = (rng.standard_normal(shape) * 4 + shift).astype(np.float32)
    seen = np.tril(np.ones((length, source), bool)) if causal else np.ones((length, source), bool)
    if causal and not seen.all():
        s[:, ~seen] = np.inf  # never read
        s[0, ~seen] = np.nan
    e = np.where(seen, np.exp(np.where(seen, s.astype(np.float64) - shift, 0.0)), 0.0)
    want_total = e.sum(-1)
    got, total = s.copy(), np.empty((n, length), np.float32)
    loops.softmax_rows(got, np.float32(shift), causal, total)
    np.testing.assert_allclose(total, want_total, rtol=2e-6)
    np.testing.assert_allclose(got, e / want_total[..., None], rtol=2e-6, atol=1e-30)
    assert (got[:, ~seen] == 0).all()


def test_compiled_softmax_rows_keep_nan_and_the_exp_range():
    """A NaN score makes its row NaN (as np.exp would); scores far below the shift give 0, not
    a denormal error or garbage, and one at +inf gives inf/inf = NaN, as in the NumPy form."""
    loops = jit.loops("attention_loops")
    s = np.array([[[0.0, np.nan, 1.0], [0.0, -200.0, 1.0], [0.0, np.inf, 1.0]]], np.float32)
    total = np.empty((1, 3), np.float32)
    loops.softmax_rows(s, np.float32(0), False, total)
    assert np.isnan(s[0, 0]).all() and np.isnan(total[0, 0])
    np.testing.assert_allclose(s[0, 1], [1 / (1 + np.e), 0.0, np.e / (1 + np.e)], rtol=1e-6)
    assert np.isinf(total[0, 2]) and np.isnan(s[0, 2, 1])
