"""The CPU backend's fast paths against plain NumPy doing the same thing the slow way:
accumulating index_put_/scatter_ through one flat index (``_add_at``) and arg-reductions along
a short axis (``_short_argreduce``). Exact equality: the fast paths reorder no arithmetic
(float32 updates into one place are added in index order either way)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ix = importlib.import_module("tritongrad.kernels.numpy.indexing")
red = importlib.import_module("tritongrad.kernels.numpy.reduction")
bf16 = importlib.import_module("tritongrad.kernels.numpy.bf16")


@pytest.mark.parametrize("case", ["dim2", "adjacent", "split", "full", "broadcast", "sparse"])
def test_index_put_accumulate_matches_ufunc_at(case):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 6, 7)).astype(np.float32)
    i = rng.integers(0, 5, 30)
    j = rng.integers(0, 6, 30)
    k = rng.integers(0, 7, 30)  # duplicates in every case: they must all be summed
    indices, vshape = {
        "dim2": ((None, None, k), (5, 6, 30)),
        "adjacent": ((None, j, k), (5, 30)),
        "split": ((i, None, k), (30, 6)),  # non-adjacent arrays: the result dim goes first
        "full": ((i, j, k), (30,)),
        "broadcast": ((i[:, None], j[None, :4], None), (30, 4, 7)),
        "sparse": ((i[:2], j[:2], k[:2]), (2,)),  # a much larger than the update: slow path
    }[case]
    values = rng.standard_normal(vshape).astype(np.float32)
    want = a.copy()
    np.add.at(want, tuple(slice(None) if x is None else x for x in indices), values)
    got = a.copy()
    ix.index_put_(got, indices, values, True)
    np.testing.assert_array_equal(got, want)
    got = a.copy()  # values broadcast from a row
    ix.index_put_(got, indices, values[..., :1], True)
    want = a.copy()
    np.add.at(want, tuple(slice(None) if x is None else x for x in indices),
              np.broadcast_to(values[..., :1], vshape))
    np.testing.assert_array_equal(got, want)


def test_index_put_accumulate_bfloat16_rounds_once():
    rng = np.random.default_rng(2)
    a = bf16.rounded(rng.standard_normal((8, 9)))
    k = rng.integers(0, 9, 40)
    values = bf16.rounded(rng.standard_normal((8, 40)))
    want = a.view(np.ndarray).copy()
    np.add.at(want, (slice(None), k), values.view(np.ndarray))
    ix.index_put_(a, (None, k), values, True)
    assert type(a) is bf16.BF16Array
    np.testing.assert_array_equal(a.view(np.ndarray), bf16.rounded(want).view(np.ndarray))


def test_scatter_add_matches_ufunc_at():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 6, 5))
    index = rng.integers(0, 6, (4, 3, 5))
    src = rng.standard_normal((4, 4, 5))  # larger than index: only its leading block is used
    want = a.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[1] = index
    np.add.at(want, tuple(grids), src[:, :3])
    got = a.copy()
    ix.scatter_(got, 1, index, src, True)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=80, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=2, max_size=4), data=st.data(),
       dtype=st.sampled_from(["float32", "float64", "float16", "int64", "int8", "bool"]),
       is_max=st.booleans(), keepdim=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_short_argreduce_matches_numpy(shape, data, dtype, is_max, keepdim, seed):
    # ties (a few distinct values), NaN and infinities: the first index among ties, the first
    # NaN, as np.argmax / np.argmin
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(dtype)
    if x.dtype.kind == "f":
        flat = x.reshape(-1)
        flat[rng.random(flat.size) < 0.1] = np.nan
        flat[rng.random(flat.size) < 0.1] = np.inf
        flat[rng.random(flat.size) < 0.1] = -np.inf
    fn = np.argmax if is_max else np.argmin
    want = fn(x, axis=dim, keepdims=keepdim)
    got = red._short_argreduce(is_max, x, dim, keepdim)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_argreduce_takes_the_short_path_for_pooling_windows(monkeypatch):
    calls = []
    short = red._short_argreduce
    monkeypatch.setattr(red, "_short_argreduce", lambda *a: calls.append(a[2]) or short(*a))
    x = np.random.default_rng(4).standard_normal((8, 4, 4, 16)).astype(np.float32)
    np.testing.assert_array_equal(red.argreduce("argmax", x, 2, False), np.argmax(x, axis=2))
    assert calls == [2]
    red.argreduce("argmin", x, 3, True)  # 16 taps: still short
    red.argreduce("argmax", x.reshape(8, 256), 1, False)  # a long axis: NumPy's own loop
    assert calls == [2, 3]


opt = importlib.import_module("tritongrad.kernels.numpy.optim")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_optimizer_updates_in_blocks_are_bit_exact(monkeypatch, dtype, layout):
    """Note [Optimizer updates in cache-sized blocks]: the blocked update equals the update
    over whole arrays to the last bit (a block of 8 over 5 x 13 parameters: a partial last
    block); a non-contiguous parameter takes the whole-array path."""
    rng = np.random.default_rng(4)

    def arrays(k):
        out = []
        for _ in range(k):
            a = rng.standard_normal((13, 5) if layout == "transposed" else (5, 13))
            if len(out) >= 3:  # exp_avg_sq, max_exp_avg_sq: never negative
                a = np.abs(a)
            a = bf16.rounded(a.astype(np.float32)) if dtype == "bfloat16" else a.astype(dtype)
            out.append(a.T if layout == "transposed" else a)
        return out

    def both(fn, k, *scalars, buffers=None):
        xs = arrays(k)
        ys = [x.copy() for x in xs]
        monkeypatch.setattr(opt, "BLOCK", 1 << 30)
        fn(*xs, *scalars)
        monkeypatch.setattr(opt, "BLOCK", 8)
        fn(*ys, *scalars)
        for x, y in zip(xs, ys):
            assert type(x) is type(y)
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))

    for step in (1, 3):
        both(lambda p, g, m, v, vm: opt.adam_step(p, g, m, v, vm, step, 1e-2, 0.9, 0.999,
                                                  1e-8, 0.01, True, False, True), 5)
        both(lambda p, g, m, v: opt.adam_step(p, g, m, v, None, step, 1e-2, 0.9, 0.999, 1e-8,
                                              0.01, False, True, False), 4)
    for first in (True, False):
        both(lambda p, g, b: opt.sgd_step(p, g, b, 0.1, 0.9, 0.1, 0.01, True, False, first), 3)
    both(lambda p, g: opt.sgd_step(p, g, None, 0.1, 0.0, 0.0, 0.0, False, True, False), 2)
