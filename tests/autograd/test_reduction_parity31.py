"""Reduction and statistics parity fixes (the differential sweep against PyTorch): gradients
of amax/amin and quantile over NaN slices, ``max(other=)``, ``out=`` for var/std/nansum/
nanmean/all/any/softmax/log_softmax/quantile/aminmax/histc and max(dim)'s dtype checks,
differentiable empty logsumexp, histc's non-finite data ranges, unique's dim checks, and the
error types of empty reductions. Each behaviour is checked against float64 NumPy or central
differences, and against PyTorch where it is installed."""

import numpy as np
import pytest

import tritongrad as tg

NAN = float("nan")
rng = np.random.default_rng(3131)
X = rng.standard_normal((3, 5))
XN = np.array([[1.0, NAN, 3.0, -2.0], [NAN, NAN, NAN, NAN], [0.5, 2.0, -1.0, 4.0]])


def t(a, requires_grad=False, dtype=tg.float64):
    return tg.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def host(x):
    return x.detach().cpu().numpy()


def central_diff(f, a, eps=1e-6):
    """d sum(f(a)) / da by central differences, NumPy only."""
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (np.sum(f(hi)) - np.sum(f(lo))) / (2 * eps)
    return g


def _grad(fn, a):
    x = t(a, requires_grad=True)
    fn(x).sum().backward()
    return host(x.grad)


# -- gradients ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["amax", "amin"])
def test_amax_amin_nan_slice_gradient_is_nan_finite_slices_share_ties(op):
    ties = np.array([[1.0, 3.0, 3.0, 0.0], [NAN, 1.0, 2.0, 2.0], [-1.0, -1.0, 5.0, 5.0]])
    g = _grad(lambda x: getattr(tg, op)(x, 1), ties)
    assert np.isnan(g[1]).all()  # the slice's result is NaN: so is d/dx (finite differences)
    f = np.amax if op == "amax" else np.amin
    mask = ties[[0, 2]] == f(ties[[0, 2]], 1, keepdims=True)
    np.testing.assert_allclose(g[[0, 2]], mask / mask.sum(1, keepdims=True))
    # the finite slices agree with central differences
    x = rng.standard_normal((2, 4))
    np.testing.assert_allclose(_grad(lambda v: getattr(tg, op)(v, 1), x),
                               central_diff(lambda v: f(v, 1), x), atol=1e-6)


def test_full_max_nan_gradient_goes_to_the_nans():
    # max() over all elements keeps PyTorch's evenly_distribute_backward: NaN equals NaN
    g = _grad(lambda x: x.max(), XN)
    np.testing.assert_array_equal(g, np.isnan(XN) / np.isnan(XN).sum())


def test_quantile_nan_slice_routes_gradient_to_a_nan():
    for interp in ("linear", "lower", "higher", "midpoint", "nearest"):
        x = t(XN, requires_grad=True)
        y = tg.quantile(x, 0.3, dim=1, interpolation=interp)
        assert np.isnan(host(y)[:2]).all() and np.isfinite(host(y)[2])
        y.sum().backward()
        g = host(x.grad)
        # row 0: the one NaN (sorted last); row 1: the last of its NaNs (a stable sort)
        np.testing.assert_array_equal(g[0], [0, 1, 0, 0])
        np.testing.assert_array_equal(g[1], [0, 0, 0, 1])
        assert g[2].sum() == pytest.approx(1.0)
    # nanquantile: an all-NaN slice takes rank 0; the others ignore their NaNs
    g = _grad(lambda v: tg.nanquantile(v, 0.3, dim=1), XN)
    np.testing.assert_array_equal(g[1], [1, 0, 0, 0])
    np.testing.assert_allclose(g[0], [0.6, 0, 0, 0.4])
    # finite data: central differences
    np.testing.assert_allclose(_grad(lambda v: tg.quantile(v, 0.3, 1), X),
                               central_diff(lambda v: np.quantile(v, 0.3, 1), X), atol=1e-6)


def test_logsumexp_over_an_empty_dim_is_differentiable():
    x = t(np.zeros((0, 3)), requires_grad=True)
    y = tg.logsumexp(x, 0)
    np.testing.assert_array_equal(host(y), np.full(3, -np.inf))
    assert y.requires_grad
    y.sum().backward()
    assert x.grad.shape == (0, 3)


# -- arguments -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_other_keyword(op):
    a, b = rng.standard_normal((2, 3, 4))
    want = np.maximum(a, b) if op == "max" else np.minimum(a, b)
    np.testing.assert_array_equal(host(getattr(tg, op)(t(a), other=t(b))), want)
    with pytest.raises(TypeError):
        getattr(tg, op)(t(a), 1, other=t(b))


def test_max_dim_out_dtypes_are_checked():
    values, indices = tg.empty(0, dtype=tg.float64), tg.empty(0, dtype=tg.int64)
    r = tg.max(t(X), 1, out=(values, indices))
    np.testing.assert_array_equal(host(values), X.max(1))
    np.testing.assert_array_equal(host(indices), X.argmax(1))
    assert r.values is values
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
        tg.max(t(X), 1, out=(tg.empty(0, dtype=tg.float32), indices))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long"):
        tg.min(t(X), 1, out=(values, tg.empty(0, dtype=tg.float64)))


@pytest.mark.parametrize("op,ref", [
    ("var", lambda a: a.var(1, ddof=1)), ("std", lambda a: a.std(1, ddof=1)),
    ("nansum", lambda a: np.nansum(a, 1)), ("nanmean", lambda a: np.nanmean(a, 1)),
    ("softmax", lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    ("log_softmax", lambda a: a - np.log(np.exp(a).sum(1, keepdims=True))),
])
def test_out_argument(op, ref):
    out = tg.empty(0, dtype=tg.float64)
    r = getattr(tg, op)(t(X), 1, out=out)
    assert r is out
    np.testing.assert_allclose(host(out), ref(X), rtol=1e-12)
    with pytest.raises(RuntimeError, match="out="):
        getattr(tg, op)(t(X, requires_grad=True), 1, out=tg.empty(0, dtype=tg.float64))


def test_out_casting_rules():
    # var/std/nanmean cast into a float out; softmax's out must have the result's dtype
    out32 = tg.empty(0, dtype=tg.float32)
    tg.var(t(X), 1, out=out32)
    np.testing.assert_allclose(host(out32), X.var(1, ddof=1), rtol=1e-6)
    with pytest.raises(RuntimeError, match="can't be cast"):
        tg.std(t(X), 1, out=tg.empty(0, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
        tg.softmax(t(X), 1, out=out32)
    # nansum's out gives the accumulation dtype, as dtype= would
    ints = rng.integers(-5, 5, (3, 4))
    o = tg.empty(0, dtype=tg.float64)
    tg.nansum(t(ints, dtype=tg.int64), 1, out=o)
    np.testing.assert_array_equal(host(o), ints.sum(1).astype(np.float64))


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any_out_must_be_bool(op):
    a = rng.random((3, 4)) > 0.3
    out = tg.empty(0, dtype=tg.bool)
    getattr(tg, op)(t(a, dtype=tg.bool), 1, out=out)
    np.testing.assert_array_equal(host(out), getattr(np, op)(a, 1))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype bool"):
        getattr(tg, op)(t(a, dtype=tg.bool), 1, out=tg.empty(0, dtype=tg.float32))


@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
def test_quantile_out_and_q_checks(op):
    out = tg.empty(0, dtype=tg.float64)
    getattr(tg, op)(t(X), 0.3, 1, out=out)
    np.testing.assert_allclose(host(out), np.quantile(X, 0.3, 1), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
        getattr(tg, op)(t(X), 0.3, 1, out=tg.empty(0, dtype=tg.float32))
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input"):
        getattr(tg, op)(t(X), t([0.5], dtype=tg.float32))
    with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
        getattr(tg, op)(t(X), 1.5)
    with pytest.raises(RuntimeError, match="interpolation must be one of"):
        getattr(tg, op)(t(X), 0.5, interpolation="cubic")


def test_aminmax_out():
    lo, hi = tg.empty(0, dtype=tg.float64), tg.empty(0, dtype=tg.float64)
    r = tg.aminmax(t(X), dim=1, out=(lo, hi))
    assert r.min is lo and r.max is hi
    np.testing.assert_array_equal(host(lo), X.min(1))
    np.testing.assert_array_equal(host(hi), X.max(1))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
        tg.aminmax(t(X), out=(tg.empty(0, dtype=tg.float32), hi))


def test_histc_out_and_non_finite_ranges():
    a = rng.standard_normal(20)
    out = tg.empty(0, dtype=tg.float64)
    tg.histc(t(a), 5, out=out)  # (resized from 0 elements, silently)
    np.testing.assert_array_equal(host(out), np.histogram(a, 5, (a.min(), a.max()))[0])
    with pytest.raises(RuntimeError, match="should have the same dtype"):
        tg.histc(t(a), 5, out=tg.empty(0, dtype=tg.float32))
    for bad in (np.inf, NAN):
        with pytest.raises(RuntimeError, match="is not finite"):
            tg.histc(t([1.0, bad, 2.0]), 3)
    # an explicit finite range ignores the data's infinities
    np.testing.assert_array_equal(host(tg.histc(t([1.0, np.inf, 2.0]), 2, 0, 2)), [0, 2])


# -- errors ------------------------------------------------------------------------------------

def test_empty_reduction_error_types():
    e = t(np.zeros((0, 3)))
    for op in ("amax", "amin"):
        with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
            getattr(tg, op)(e)
        with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero"):
            getattr(tg, op)(e, 0)


def test_nanmean_refuses_an_integer_dtype():
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        tg.nanmean(t(X), 1, dtype=tg.int64)


@pytest.mark.parametrize("op", ["unique", "unique_consecutive"])
def test_unique_dim_checks(op):
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        getattr(tg, op)(t(2.0), dim=0)
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        getattr(tg, op)(t(np.zeros((0, 3))), dim=1)
    r = getattr(tg, op)(t(np.zeros((0, 3))), dim=0)
    assert tuple(r.shape) == (0, 3)


# -- against PyTorch ---------------------------------------------------------------------------

def test_matches_pytorch():
    torch = pytest.importorskip("torch")

    def both(fn, a):
        res = []
        for L in (torch, tg):
            x = L.tensor(a, dtype=L.float64, requires_grad=True)
            y = fn(L, x)
            y.sum().backward()
            res.append((y.detach().numpy(), x.grad.numpy()))
        (yt, gt), (yg, gg) = res
        np.testing.assert_allclose(yg, yt, equal_nan=True, atol=1e-12)
        np.testing.assert_allclose(gg, gt, equal_nan=True, atol=1e-12)

    for op in ("amax", "amin"):
        both(lambda L, x, op=op: getattr(L, op)(x, 1), XN)
        both(lambda L, x, op=op: getattr(L, op)(x), XN)
    both(lambda L, x: x.max(), XN)
    for interp in ("linear", "lower", "higher", "midpoint", "nearest"):
        both(lambda L, x, i=interp: L.quantile(x, 0.3, 1, interpolation=i), XN)
        both(lambda L, x, i=interp: L.nanquantile(x, 0.7, 1, interpolation=i), XN)
    both(lambda L, x: L.logsumexp(x, 0), np.zeros((0, 3)))
    a, b = X[:, :2], X[:, 2:4]
    np.testing.assert_array_equal(host(tg.max(t(a), other=t(b))),
                                  torch.max(torch.tensor(a), other=torch.tensor(b)).numpy())
    for op in ("var", "std", "nansum", "nanmean", "softmax", "log_softmax"):
        o_t, o_g = torch.empty(0, dtype=torch.float64), tg.empty(0, dtype=tg.float64)
        getattr(torch, op)(torch.tensor(X), 1, out=o_t)
        getattr(tg, op)(t(X), 1, out=o_g)
        np.testing.assert_allclose(host(o_g), o_t.numpy(), rtol=1e-12)
    for L in (torch, tg):
        with pytest.raises(RuntimeError):
            L.amax(L.zeros(0, 3))
        with pytest.raises(RuntimeError):
            L.histc(L.tensor([1.0, float("inf")]), 3)
        with pytest.raises(IndexError):
            L.unique(L.tensor(2.0), dim=0)


@pytest.mark.parametrize("op", ["sum", "prod", "cumsum", "nansum"])
def test_integer_dtype_of_a_differentiable_input_is_refused(op):
    # a cast to an integer dtype would cut the graph silently; PyTorch refuses
    x = t(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
        getattr(tg, op)(x, 1, dtype=tg.int64)
    with tg.no_grad():
        r = getattr(tg, op)(x, 1, dtype=tg.int64)
    assert r.dtype is tg.int64
    assert getattr(tg, op)(x.detach(), 1, dtype=tg.int32).dtype is tg.int32


def test_prod_gradient_with_infinities_and_zeros():
    inf = np.inf
    a = np.array([[1.0, inf, -inf, 2.0], [inf, inf, 0.0, 1.0], [0.0, 0.0, 1.0, 2.0],
                  [0.0, 3.0, 1.0, 2.0], [1.0, 2.0, 3.0, 4.0]])
    # d prod / d x_i: the product of the others, written out
    want = np.empty_like(a)
    with np.errstate(invalid="ignore"):
        for r, c in np.ndindex(a.shape):
            want[r, c] = np.prod(np.delete(a[r], c))
    g = _grad(lambda v: tg.prod(v, 1), a)
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(_grad(lambda v: tg.prod(v), a[2:]),
                                  [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    x = rng.standard_normal((3, 4))
    np.testing.assert_allclose(_grad(lambda v: tg.prod(v, 1), x),
                               central_diff(lambda v: np.prod(v, 1), x), atol=1e-6)


def test_prod_gradient_matches_pytorch():
    torch = pytest.importorskip("torch")
    a = np.array([[1.0, np.inf, -np.inf, 2.0], [np.inf, np.inf, 0.0, 1.0], [0.0, 0.0, 1.0, 2.0],
                  [0.0, 3.0, 1.0, 2.0], [1.0, 2.0, 3.0, 4.0]])
    xt = torch.tensor(a, requires_grad=True)
    torch.prod(xt, 1).sum().backward()
    np.testing.assert_array_equal(_grad(lambda v: tg.prod(v, 1), a), xt.grad.numpy())
