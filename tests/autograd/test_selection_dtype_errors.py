"""index_copy(_) and masked_scatter(_) copy source into self without type promotion, so, as in
PyTorch, a source of another dtype is an error naming the op and both dtypes (not a silent
cast); with matching dtypes they still agree with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg


@pytest.mark.parametrize("src_dtype, name", [(tg.float32, "Float"), (tg.int64, "Long")])
def test_index_copy_refuses_a_source_of_another_dtype(src_dtype, name):
    x = tg.ones(3, 2, dtype=tg.float64)
    src = tg.zeros(1, 2, dtype=src_dtype)
    msg = (r"index_copy_\(\): self and source expected to have the same dtype, but got "
           rf"\(self\) Double and \(source\) {name}")
    with pytest.raises(RuntimeError, match=msg):
        x.index_copy(0, tg.tensor([1]), src)
    with pytest.raises(RuntimeError, match=msg):
        x.index_copy_(0, tg.tensor([1]), src)
    np.testing.assert_array_equal(x.numpy(), np.ones((3, 2)))  # left unchanged


@pytest.mark.parametrize("src_dtype, name", [(tg.float32, "Float"), (tg.int64, "Long")])
def test_masked_scatter_refuses_a_source_of_another_dtype(src_dtype, name):
    x = tg.ones(2, 3, dtype=tg.float64)
    src = tg.zeros(6, dtype=src_dtype)
    msg = rf"masked_scatter: expected self and source to have same dtypes but got Double and {name}"
    with pytest.raises(RuntimeError, match=msg):
        x.masked_scatter(x > 0, src)
    with pytest.raises(RuntimeError, match=msg):
        x.masked_scatter_(x > 0, src)


def test_matching_dtypes_agree_with_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3))
    src = rng.standard_normal((2, 3))
    expected = a.copy()
    expected[[3, 0]] = src
    got = tg.tensor(a).index_copy(0, tg.tensor([3, 0]), tg.tensor(src))
    np.testing.assert_array_equal(got.numpy(), expected)
    mask = a > 0
    source = rng.standard_normal(12)
    expected = a.copy()
    expected[mask] = source[:mask.sum()]
    got = tg.tensor(a).masked_scatter(tg.tensor(mask), tg.tensor(source))
    np.testing.assert_array_equal(got.numpy(), expected)
