"""take, take_along_dim, index_fill, index_copy, masked_scatter, Tensor.unfold
(autograd/ops/selection.py), inner, matrix_power, addr, addbmm (linalg_ext.py) and
quantile/nanquantile (statistics.py) against NumPy float64; both backends (gradients:
test_registry)."""

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host

rng = np.random.default_rng(37)
X = rng.standard_normal((3, 4, 5))


def t(a, device):
    return tg.tensor(a, device=device)


def test_take_and_take_along_dim(device):
    idx = np.array([[0, -1], [7, 3]])
    np.testing.assert_array_equal(host(tg.take(t(X, device), t(idx, device))),
                                  np.take(X, idx))
    ti = rng.integers(0, 4, (3, 2, 1))
    np.testing.assert_array_equal(host(tg.take_along_dim(t(X, device), t(ti, device), 1)),
                                  np.take_along_axis(X, np.broadcast_to(ti, (3, 2, 5)), 1))
    flat = np.array([5, 0, 59])
    np.testing.assert_array_equal(host(tg.take_along_dim(t(X, device), t(flat, device))),
                                  X.reshape(-1)[flat])
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        tg.take(t(X, device), t(np.array([0.0]), device))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_index_fill_copy_and_masked_scatter(device, dim):
    idx = np.array([0, 2])
    ref = X.copy()
    np.moveaxis(ref, dim, 0)[idx] = -1.5
    np.testing.assert_array_equal(host(t(X, device).index_fill(dim, t(idx, device), -1.5)), ref)
    src = rng.standard_normal(tuple(2 if k == dim else n for k, n in enumerate(X.shape)))
    ref = X.copy()
    np.moveaxis(ref, dim, 0)[idx] = np.moveaxis(src, dim, 0)
    np.testing.assert_array_equal(
        host(t(X, device).index_copy(dim, t(idx, device), t(src, device))), ref)
    x = t(X.copy(), device)
    assert x.index_fill_(dim, t(idx, device), 0.0) is x
    mask = rng.random((4, 5)) > 0.5
    source = rng.standard_normal(60)
    ref = X.copy()
    full = np.broadcast_to(mask, X.shape)
    ref[full] = source[:full.sum()]
    np.testing.assert_array_equal(
        host(t(X, device).masked_scatter(t(mask, device), t(source, device))), ref)


def test_tensor_unfold_is_a_sliding_window_view(device):
    x = t(X, device)
    for dim, size, step in [(0, 2, 1), (1, 2, 2), (2, 3, 1), (-1, 2, 3)]:
        axis = dim % X.ndim
        ref = np.lib.stride_tricks.sliding_window_view(X, size, axis=axis)
        ref = np.take(ref, range(0, ref.shape[axis], step), axis=axis)
        np.testing.assert_array_equal(host(x.unfold(dim, size, step)), ref)
    y = x.unfold(2, 3, 1)
    assert y._base is x or y._base is x._base  # a view: it shares x's storage
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 1 is 4 but "
                                           "size is 5"):
        x.unfold(1, 5, 1)


def test_inner_matrix_power_addr_addbmm(device):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4))
    np.testing.assert_allclose(host(tg.inner(t(a, device), t(b, device))), np.inner(a, b),
                               rtol=1e-12)
    m = rng.standard_normal((2, 3, 3))
    for n in (0, 1, 3, -2):
        np.testing.assert_allclose(host(tg.matrix_power(t(m, device), n)),
                                   np.linalg.matrix_power(m, n), rtol=1e-10, atol=1e-12)
    i, v1, v2 = rng.standard_normal((3, 4)), rng.standard_normal(3), rng.standard_normal(4)
    np.testing.assert_allclose(host(tg.addr(t(i, device), t(v1, device), t(v2, device),
                                            beta=0.5, alpha=2)),
                               0.5 * i + 2 * np.outer(v1, v2), rtol=1e-12)
    b1, b2 = rng.standard_normal((5, 3, 2)), rng.standard_normal((5, 2, 4))
    np.testing.assert_allclose(host(tg.addbmm(t(i, device), t(b1, device), t(b2, device))),
                               i + np.einsum("bij,bjk->ik", b1, b2), rtol=1e-12)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantiles_match_numpy(device, interpolation):
    x = rng.standard_normal((3, 7))
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    got = tg.quantile(t(x, device), t(q, device), 1, interpolation=interpolation)
    np.testing.assert_allclose(host(got), np.quantile(x, q, axis=1, method=interpolation),
                               rtol=1e-12)
    got = tg.quantile(t(x, device), 0.3, None, keepdim=True, interpolation=interpolation)
    assert got.shape == (1, 1)
    np.testing.assert_allclose(host(got)[0, 0], np.quantile(x, 0.3, method=interpolation),
                               rtol=1e-12)
    xn = x.copy()
    xn[1, 2] = np.nan
    xn[2] = np.nan
    got = host(tg.nanquantile(t(xn, device), 0.4, 1, interpolation=interpolation))
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        ref = np.nanquantile(xn, 0.4, axis=1, method=interpolation)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    plain = host(tg.quantile(t(xn, device), 0.4, 1))
    assert np.isnan(plain[1]) and np.isnan(plain[2]) and not np.isnan(plain[0])
    with pytest.raises(RuntimeError, match="q values must be in the range \\[0, 1\\]"):
        tg.quantile(t(x, device), 1.5)


def test_isreal_and_reshape_as():
    assert tg.isreal(tg.tensor([1 + 0j, 2 + 1j])).tolist() == [True, False]
    assert tg.tensor([1.0, 2.0]).isreal().tolist() == [True, True]
    x = tg.arange(6.0)
    assert x.reshape_as(tg.zeros(2, 3)).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
