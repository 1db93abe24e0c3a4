"""mode (autograd/ops/sorting.py): values and indices against a NumPy float64 reference
written from the definition (the most frequent value, ties to the smallest, the index of its
last occurrence, each NaN a value of its own), with many ties and some NaNs, over dims,
keepdim and dtypes, on the CPU and the (emulated) CUDA device; the gradient (g at the index)
and its tangent; 0-d and empty inputs; PyTorch's errors."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64

rng = np.random.default_rng(17)


def ref_row(row):
    values = [v for v in row if not np.isnan(v)]
    if not values:  # all NaN: each counts once; the first
        return np.nan, 0
    counts = {v: values.count(v) for v in values}
    best = min(v for v in counts if counts[v] == max(counts.values()))
    return best, int(np.nonzero(row == best)[0][-1])


def ref_mode(a, dim, keepdim=False):
    rows = np.moveaxis(a.astype(np.float64), dim, -1)
    out = [ref_row(r) for r in rows.reshape(-1, rows.shape[-1])]
    values = np.array([v for v, _ in out]).reshape(rows.shape[:-1])
    indices = np.array([i for _, i in out], dtype=np.int64).reshape(rows.shape[:-1])
    if keepdim:
        values, indices = np.expand_dims(values, dim), np.expand_dims(indices, dim)
    return values, indices


def ties(shape, nan=True):
    a = rng.integers(-2, 3, shape).astype(np.float64)
    if nan:
        a.reshape(-1)[::7] = np.nan
    return a


@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), (-1, False)])
def test_values_and_indices(device, dim, keepdim):
    a = ties((6, 9))
    a[0] = np.nan  # an all-NaN row
    out = tg.mode(tg.tensor(a, device=device), dim, keepdim)
    assert type(out).__name__ == "mode" and out.indices.dtype is tg.int64
    rv, ri = ref_mode(a, dim, keepdim)
    np.testing.assert_array_equal(host(out.values), rv)
    np.testing.assert_array_equal(host(out.indices), ri)


def test_long_slices_and_a_strided_input(device):
    a = ties((3, 40), nan=False)  # (past the 16 elements PyTorch's CPU sort keeps stable)
    x = tg.tensor(a, device=device)
    for values, dim in ((x, 1), (x.t(), 0)):
        v, i = values.mode(dim)
        rv, ri = ref_mode(a, 1)
        np.testing.assert_array_equal(host(v), rv)
        np.testing.assert_array_equal(host(i), ri)


@pytest.mark.parametrize("dtype", [tg.int64, tg.int32, tg.uint8, tg.float16, tg.bfloat16,
                                   tg.float32, tg.bool], ids=str)
def test_dtypes(device, dtype):
    a = rng.integers(0, 4, (4, 7)) if dtype is not tg.bool else rng.integers(0, 2, (4, 7))
    v, i = tg.tensor(a, device=device).to(dtype).mode(0)
    assert v.dtype is dtype
    rv, ri = ref_mode(a, 0)
    np.testing.assert_array_equal(host(v.to(tg.float64)), rv)
    np.testing.assert_array_equal(host(i), ri)


def test_signed_zeros_count_as_one_value():
    v, i = tg.mode(tg.tensor([0.0, -0.0, 1.0]))  # the value at the last occurrence
    assert v.item() == 0.0 and np.signbit(v.item()) and i.item() == 1


def test_gradient_goes_to_the_index(device):
    x = tg.tensor(ties((4, 6), nan=False), device=device, requires_grad=True)
    v, i = x.mode(1)
    w = rng.uniform(0.5, 1.5, 4)
    v.backward(tg.tensor(w, device=device))
    expected = np.zeros((4, 6))
    expected[np.arange(4), host(i)] = w
    np.testing.assert_array_equal(host(x.grad), expected)
    assert v.grad_fn.name() == "ModeBackward0" and not i.requires_grad
    y = t64((3, 4), device).requires_grad_(True)  # distinct values: a smooth neighbourhood
    assert_grads_match(lambda z: z.mode(0, keepdim=True).values, [y])


def test_forward_ad(device):
    fwAD = tg.autograd.forward_ad
    x, t = tg.tensor(ties((3, 5), nan=False), device=device), t64((3, 5), device)
    with fwAD.dual_level():
        out = tg.mode(fwAD.make_dual(x, t), 1)
        tangent = fwAD.unpack_dual(out.values).tangent
    np.testing.assert_array_equal(host(tangent), host(t)[np.arange(3), host(out.indices)])


def test_zero_dim_empty_and_errors(device):
    v, i = tg.tensor(3.0, device=device).mode()
    assert v.shape == i.shape == () and v.item() == 3.0 and i.item() == 0
    v, i = tg.zeros(0, 2, device=device).mode(1)
    assert v.shape == i.shape == (0,)
    with pytest.raises(IndexError, match=r"^mode\(\): Expected reduction dim 1 to have "
                                         r"non-zero size\.$"):
        tg.zeros(2, 0, device=device).mode()
    with pytest.raises(IndexError, match="dimension out of range"):
        tg.zeros(2, 3).mode(2)
    with pytest.raises(NotImplementedError, match="\"mode_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        tg.zeros(2, dtype=tg.complex64).mode()
