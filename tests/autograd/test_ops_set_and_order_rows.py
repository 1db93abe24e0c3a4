"""Ops added to the tables for PyTorch parity: atan2, signbit, isin, median/nanmedian,
index_reduce, and scatter_reduce/index_reduce's refusal of prod double backward with repeated
zeros. Values against NumPy float64, gradients against central differences (tests/helpers.py),
on the CPU and the (emulated) CUDA device."""

import math

import numpy as np
import pytest
from tritongrad.autograd import gradcheck, gradgradcheck

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order, t64

NAN = float("nan")


# -- atan2 ---------------------------------------------------------------------------------------

def test_atan2_values_broadcasting_and_gradients(device):
    a, b = t64((3, 4), device), t64((4,), device)
    np.testing.assert_allclose(host(tg.atan2(a, b)), np.arctan2(host(a), host(b)), rtol=1e-12)
    np.testing.assert_allclose(host(a.arctan2(b)), np.arctan2(host(a), host(b)), rtol=1e-12)
    assert_grads_match(tg.atan2, [a, b])
    second_order(tg.atan2, [a, b])


def test_atan2_gradient_is_zero_at_the_origin(device):
    # PyTorch's rule: the angle has no derivative at (0, 0); both gradients are 0, not NaN
    x = tg.tensor([0.0, 1.0], dtype=tg.float64, device=device, requires_grad=True)
    y = tg.tensor([0.0, 2.0], dtype=tg.float64, device=device, requires_grad=True)
    tg.atan2(x, y).sum().backward()
    np.testing.assert_allclose(host(x.grad), [0.0, 2 / 5])
    np.testing.assert_allclose(host(y.grad), [0.0, -1 / 5])


def test_atan2_quadrants_dtypes_and_errors(device):
    y = tg.tensor([1.0, 1.0, -1.0, -1.0, 0.0, -0.0], device=device)
    x = tg.tensor([1.0, -1.0, -1.0, 1.0, -1.0, -1.0], device=device)
    np.testing.assert_allclose(host(tg.atan2(y, x)),
                               np.arctan2(host(y), host(x)), rtol=1e-6)
    ints = tg.atan2(tg.tensor([1, 2], device=device), tg.tensor([3, 4], device=device))
    assert ints.dtype is tg.float32
    with pytest.raises(TypeError, match=r"atan2\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not float"):
        tg.atan2(y, 2.0)
    with pytest.raises(RuntimeError, match="can't be cast"):
        tg.tensor([1, 2], device=device).atan2_(tg.tensor([1, 2], device=device))
    z = tg.tensor([1.0, 2.0], device=device)
    assert z.atan2_(tg.tensor([1.0, 1.0], device=device)) is z
    np.testing.assert_allclose(host(z), np.arctan2([1.0, 2.0], [1.0, 1.0]), rtol=1e-6)


# -- signbit / isin --------------------------------------------------------------------------------

def test_signbit_reads_the_sign_bit(device):
    x = tg.tensor([-0.0, 0.0, 1.0, -2.0, -np.inf, np.inf, NAN], device=device)
    neg_nan = tg.tensor(np.array([np.copysign(np.nan, -1.0)], np.float32), device=device)
    assert tg.signbit(x).tolist() == [True, False, False, True, True, False, False]
    assert tg.signbit(neg_nan).tolist() == [True]
    for dt in (tg.float16, tg.bfloat16, tg.float64):
        assert tg.signbit(x.to(dt)).tolist() == [True, False, False, True, True, False, False]
    assert tg.signbit(tg.tensor([-3, 0, 4], device=device)).tolist() == [True, False, False]
    assert tg.signbit(tg.tensor([True, False], device=device)).tolist() == [False, False]
    leaf = tg.tensor([-1.0, 2.0], device=device, requires_grad=True)
    assert not leaf.signbit().requires_grad


def test_isin(device):
    x = tg.tensor([[1, 2], [3, 4.0]], device=device, requires_grad=True)
    out = tg.isin(x, tg.tensor([2, 3], device=device))
    assert out.tolist() == [[False, True], [True, False]] and not out.requires_grad
    assert tg.isin(x, tg.tensor([2, 3], device=device), invert=True).tolist() == \
        [[True, False], [False, True]]
    assert tg.isin(3, tg.tensor([2, 3], device=device)).tolist() is True
    assert tg.isin(tg.tensor([1, 2], device=device), 2).tolist() == [False, True]
    nan = tg.tensor([NAN, 1.0], device=device)
    assert tg.isin(nan, nan).tolist() == [False, True]  # NaN equals nothing
    assert tg.isin(tg.ones(2, device=device), tg.tensor([], device=device)).tolist() == \
        [False, False]
    assert tuple(tg.isin(tg.zeros(0, 2, device=device), nan).shape) == (0, 2)
    with pytest.raises(TypeError, match="isin"):
        tg.isin(1, 2)


def test_isin_in_chunks(monkeypatch):
    from tritongrad.autograd.ops import composite
    monkeypatch.setattr(composite, "_ISIN_CHUNK", 6)  # three test elements: two per chunk
    e = np.arange(11) % 7
    got = tg.isin(tg.tensor(e), tg.tensor([0, 5, 9])).tolist()
    assert got == np.isin(e, [0, 5, 9]).tolist()


# -- median / nanmedian ----------------------------------------------------------------------------

def _lower_median(row, ignore_nan):
    vals = row[~np.isnan(row)] if ignore_nan else row
    if not ignore_nan and np.isnan(row).any() or vals.size == 0:
        return np.nan
    return np.sort(vals)[(vals.size - 1) // 2]


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_values_and_indices(name, device):
    a = np.random.default_rng(3).integers(0, 5, (6, 7)).astype(np.float64)  # many ties
    a[1, [2, 5]] = np.nan
    a[4, :] = np.nan
    fn = getattr(tg, name)
    x = tg.tensor(a, device=device)
    ref = np.array([_lower_median(r, name == "nanmedian") for r in a])
    values, idx = fn(x, 1)
    np.testing.assert_array_equal(host(values), ref)
    # the index names an element with the median's value (a NaN for a NaN result)
    picked = np.take_along_axis(a, host(idx)[:, None], 1)[:, 0]
    np.testing.assert_array_equal(picked, ref)
    kept = fn(x, -1, keepdim=True)
    assert tuple(kept.values.shape) == (6, 1) and tuple(kept.indices.shape) == (6, 1)
    flat = a.ravel()
    np.testing.assert_array_equal(host(fn(x)), _lower_median(flat, name == "nanmedian"))
    np.testing.assert_array_equal(host(getattr(x, name)()), host(fn(x)))


def test_median_integers_empty_and_errors(device):
    x = tg.tensor([[5, 1, 4, 2]], device=device)
    assert tg.median(x).tolist() == 2
    assert tg.median(x, 1).values.tolist() == [2] and tg.median(x, 1).indices.tolist() == [3]
    assert np.isnan(tg.median(tg.empty(0, device=device)).item())
    assert tuple(tg.median(tg.empty(3, 0, device=device), 0).values.shape) == (0,)
    assert tg.median(tg.tensor(3.0, device=device), 0).values.tolist() == 3.0
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have "
                                         r"non-zero size"):
        tg.median(tg.empty(0, 3, device=device), 0)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        tg.median(tg.tensor([True, False], device=device))


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_gradients(name, device):
    fn = getattr(tg, name)
    # all elements: shared evenly among the ties (NaNs, when the result is NaN)
    for values, expected in (([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [0, 1 / 3, 0, 1 / 3, 0, 1 / 3]),
                             ([NAN, NAN, NAN], [1 / 3] * 3)):
        x = tg.tensor(values, dtype=tg.float64, device=device, requires_grad=True)
        fn(x).backward()
        np.testing.assert_allclose(host(x.grad), expected)
    # along a dim: to the returned index
    x = t64((4, 5), device)
    assert_grads_match(lambda v: fn(v, 1).values, [x])
    second_order(lambda v: fn(v, 0, True).values, [x])
    x = tg.tensor([[2.0, 2.0, 1.0]], dtype=tg.float64, device=device, requires_grad=True)
    out = fn(x, 1)
    out.values.sum().backward()
    expected = np.zeros(3)
    expected[out.indices.item()] = 1
    np.testing.assert_array_equal(host(x.grad)[0], expected)


# -- index_reduce ----------------------------------------------------------------------------------

def _index_reduce_ref(x, dim, index, src, reduce, include_self):
    out = np.moveaxis(x.copy(), dim, 0)
    s = np.moveaxis(src, dim, 0)
    fold = {"prod": np.prod, "amax": np.max, "amin": np.min, "mean": np.mean}[reduce]
    for j in set(index.tolist()):
        parts = [s[i] for i in range(len(index)) if index[i] == j]
        if include_self:
            parts.append(out[j])
        out[j] = fold(np.stack(parts), axis=0)
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_values_and_gradients(reduce, include_self, device):
    x, src = t64((3, 4), device), t64((3, 5), device)
    index = tg.tensor([1, 3, 1, 0, 1], device=device)
    got = tg.index_reduce(x, 1, index, src, reduce, include_self=include_self)
    ref = _index_reduce_ref(host(x), 1, host(index), host(src), reduce, include_self)
    np.testing.assert_allclose(host(got), ref, rtol=1e-12)
    assert got.grad_fn is None
    assert_grads_match(lambda a, b: tg.index_reduce(a, 1, index.to(a.device), b, reduce,
                                                    include_self=include_self), [x, src])
    y = x.clone()
    assert y.index_reduce_(1, index, src, reduce, include_self=include_self) is y
    np.testing.assert_allclose(host(y), ref, rtol=1e-12)


def test_index_reduce_node_ties_and_errors(device):
    x = t64((2, 3), device).requires_grad_(True)
    out = tg.index_reduce(x, 0, tg.tensor([0, 1], device=device), x.detach().clone(), "amax")
    assert type(out.grad_fn).__name__ == "IndexReduceBackward0"
    src = x.detach().clone().requires_grad_(True)  # every element ties with itself: shared
    assert gradcheck(lambda a, b: tg.index_reduce(a, 0, tg.tensor([0, 1], device=device), b,
                                                  "amin"), (x, src))
    with pytest.raises(RuntimeError, match=r"index_reduce\(\): Expected reduce to be one of "
                                           r"prod, mean, amax or amin but got sum\."):
        tg.index_reduce(x, 0, tg.tensor([0, 1], device=device), src, "sum")
    with pytest.raises(RuntimeError, match="Number of indices"):
        tg.index_reduce(x, 0, tg.tensor([0], device=device), src, "prod")
    with pytest.raises(IndexError, match="index out of range in self"):
        tg.index_reduce(x, 0, tg.tensor([0, 2], device=device), src, "prod")


@pytest.mark.parametrize("op", ["scatter_reduce", "index_reduce"])
def test_prod_double_backward_with_two_zeros_is_refused(op, device):
    fn = getattr(tg, op)
    name = "src" if op == "scatter_reduce" else "source"
    x = tg.tensor([1.0], dtype=tg.float64, device=device, requires_grad=True)
    src = tg.tensor([0.0, 0.0], dtype=tg.float64, device=device, requires_grad=True)
    idx = tg.tensor([0, 0], device=device)
    assert gradcheck(fn, (x, 0, idx, src, "prod"))  # first derivatives are right
    (g,) = tg.autograd.grad(fn(x, 0, idx, src, "prod").sum(), src, create_graph=True)
    np.testing.assert_array_equal(host(g), [0.0, 0.0])
    with pytest.raises(RuntimeError, match=rf"{op}\(\): Double backward is unsupported for "
                                           rf"{name} when >1 zeros in {name} are scattered to "
                                           rf"the same position in self"):
        g.sum().backward()
    with pytest.raises(RuntimeError, match="Double backward is unsupported"):
        gradgradcheck(fn, (x, 0, idx, src, "prod"))
    # one zero per place: double backward works
    src1 = tg.tensor([0.0, 2.0], dtype=tg.float64, device=device, requires_grad=True)
    assert gradgradcheck(fn, (x, 0, idx, src1, "prod"))


# -- igamma / igammac ------------------------------------------------------------------------------

def test_igamma_closed_forms(device):
    # P(1, x) = 1 - e^-x; P(2, x) = 1 - (1 + x) e^-x; P(n + 1/2, ...) through P(1/2, x) =
    # erf(sqrt x), checked against math.erf
    import math
    x = np.array([1e-3, 0.3, 1.0, 2.5, 7.0, 40.0])
    for a, ref in ((1.0, 1 - np.exp(-x)), (2.0, 1 - (1 + x) * np.exp(-x)),
                   (0.5, np.array([math.erf(math.sqrt(v)) for v in x]))):
        p = tg.igamma(tg.full((6,), a, dtype=tg.float64, device=device),
                      tg.tensor(x, device=device))
        np.testing.assert_allclose(host(p), ref, rtol=1e-13, atol=1e-15)
        q = tg.igammac(tg.full((6,), a, dtype=tg.float64, device=device),
                       tg.tensor(x, device=device))
        np.testing.assert_allclose(host(q), 1 - ref, rtol=1e-11, atol=1e-15)


def test_igamma_against_scipy(device):
    special = pytest.importorskip("scipy.special")
    r = np.random.default_rng(4)
    a, x = r.uniform(0.01, 60, 400), r.uniform(0, 90, 400)
    p = tg.igamma(tg.tensor(a, device=device), tg.tensor(x, device=device))
    np.testing.assert_allclose(host(p), special.gammainc(a, x), rtol=1e-11, atol=1e-14)
    q = tg.tensor(a, device=device).igammac(tg.tensor(x, device=device))
    np.testing.assert_allclose(host(q), special.gammaincc(a, x), rtol=1e-11, atol=1e-14)
    p32 = tg.igamma(tg.tensor(a, dtype=tg.float32, device=device),
                    tg.tensor(x, dtype=tg.float32, device=device))
    assert p32.dtype is tg.float32
    np.testing.assert_allclose(host(p32), special.gammainc(a.astype(np.float32),
                                                           x.astype(np.float32)), atol=1e-6)


def test_igamma_edges_gradient_and_refusals(device):
    nan, inf = NAN, float("inf")
    a = tg.tensor([0.0, 0.0, 2.0, -1.0, 2.0, inf, 2.0], device=device)
    x = tg.tensor([0.0, 1.0, 0.0, 1.0, inf, 3.0, -1.0], device=device)
    np.testing.assert_array_equal(host(tg.igamma(a, x)), [nan, 1, 0, nan, 1, 0, nan])
    np.testing.assert_array_equal(host(tg.igammac(a, x)), [nan, 0, 1, nan, 0, 1, nan])
    a = tg.tensor([0.7, 2.0, 5.5], dtype=tg.float64, device=device)
    x = t64((3,), device, 0.2, 6).requires_grad_(True)
    assert_grads_match(lambda v: tg.igamma(a.to(v.device), v), [x])
    assert_grads_match(lambda v: tg.igammac(a.to(v.device), v), [x])
    second_order(lambda v: tg.igamma(a.to(v.device), v), [x])
    assert gradgradcheck(lambda v: tg.igammac(a, v), (x,))
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not "
                                                  "implemented"):
        tg.igamma(a.clone().requires_grad_(True), x).sum().backward()
    with pytest.raises(NotImplementedError, match="\"igamma_.*\" not implemented for 'Long'"):
        tg.igamma(tg.tensor([1, 2], device=device), tg.tensor([1, 2], device=device))
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        tg.igamma(a, 2.0)
    import tritongrad.autograd.forward_ad as fwAD
    # forward AD in x (PyTorch has none; erf, erfc and erfinv get theirs from it), none in a
    aa, xx, tt = tg.rand(3, device=device) + 0.5, tg.rand(3, device=device) + 0.1, \
        tg.rand(3, device=device)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(tg.igamma(aa, fwAD.make_dual(xx, tt))).tangent
        av, xv = host(aa).astype(np.float64), host(xx).astype(np.float64)
        lgam = np.array([math.lgamma(v) for v in av])  # dP/dx = x^(a-1) e^-x / Gamma(a)
        np.testing.assert_allclose(host(tangent), np.exp((av - 1) * np.log(xv) - xv - lgam)
                                   * host(tt), rtol=1e-5)
        with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is "
                                                      "not implemented"):
            tg.igamma(fwAD.make_dual(aa, tt), xx)
    y = tg.tensor([2.0], device=device)
    assert y.igamma_(tg.tensor([1.0], device=device)) is y
    np.testing.assert_allclose(host(y), [1 - 2 * np.exp(-1)], rtol=1e-6)
