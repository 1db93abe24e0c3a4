"""The Tensor methods and functions PyTorch programs use that tritongrad added together: the
aliases (multiply, greater, ...), the in-place variants made from the tables
(registry.with_inplace) and PyTorch's top-level in-place functions (torch.exp_), the numeric
family (autograd/ops/numeric.py), the arrange family (autograd/ops/arrange.py), the tensor_info
family and Tensor's attributes. Values against NumPy float64 references, gradients against
central differences (tests/helpers.py), on the CPU and the emulated CUDA device."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tritongrad.autograd import registry
from tritongrad.autograd.ops import FAMILIES

import tritongrad as tg
from tests.helpers import assert_grads_match, host, t64

_rng = np.random.default_rng(7)


def _t(values, device, dtype=None):
    return tg.tensor(values, dtype=dtype, device=device)


# -- names ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("alias, op", [
    ("multiply", "mul"), ("divide", "div"), ("subtract", "sub"), ("negative", "neg"),
    ("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"),
    ("not_equal", "ne")])
def test_aliases_are_their_ops(alias, op):
    assert getattr(tg, alias) is getattr(tg, op)
    assert getattr(tg.Tensor, alias) is getattr(tg.Tensor, op)
    assert getattr(tg.Tensor, alias + "_") is getattr(tg.Tensor, op + "_")


def test_every_listed_inplace_function_is_bound():
    # PyTorch's top-level in-place functions: each is the in-place method of its row
    for name in registry.INPLACE_FUNCTIONS:
        assert name in tg.__all__, name
        assert getattr(tg, name) is getattr(tg.Tensor, name), name
    assert not hasattr(tg, "absolute_") and not hasattr(tg, "multiply_")  # (not PyTorch's)
    x = _t([0.5, 1.0], "cpu", tg.float64)
    assert tg.exp_(x) is x
    np.testing.assert_allclose(host(x), np.exp([0.5, 1.0]))


def test_divide_rounding_modes_in_place(device):
    a = _t([5.0, -7.0], device)
    assert a.divide_(2, rounding_mode="floor") is a
    assert host(a).tolist() == [2.0, -4.0]
    b = _t([5, -7], device)
    assert host(b.divide_(2, rounding_mode="trunc")).tolist() == [2, -3]
    with pytest.raises(RuntimeError, match="can't be cast"):
        _t([5, 7], device).divide_(2)
    with pytest.raises(RuntimeError, match="rounding_mode"):
        _t([5.0], device).divide_(2, rounding_mode="round")


def test_comparison_aliases_in_place_write_self_dtype():
    assert tg.tensor([1.0, 2.0]).greater_(1.5).tolist() == [0.0, 1.0]
    assert tg.tensor([1, 2]).not_equal_(1).tolist() == [0, 1]


# -- in-place variants of composites (registry.with_inplace) --------------------------------------

# name -> (the arguments after self, the input's (low, high))
INPLACE = {
    "erf": ((), (-1, 1)), "erfc": ((), (-1, 1)), "erfinv": ((), (-0.9, 0.9)),
    "lgamma": ((), (0.5, 3)), "digamma": ((), (0.5, 3)), "polygamma": ((1,), (0.5, 3)),
    "mvlgamma": ((2,), (1, 3)), "i0": ((), (-2, 2)), "sinc": ((), (-2, 2)),
    "logit": ((0.1,), (0.2, 0.8)), "frac": ((), (-3, 3)), "reciprocal": ((), (0.5, 2)),
    "rsqrt": ((), (0.5, 2)), "sgn": ((), (-2, 2)), "cumsum": ((0,), (-2, 2)),
    "cumprod": ((0,), (0.5, 2)), "tril": ((), (-2, 2)), "triu": ((1,), (-2, 2)),
    "clamp_min": ((0.2,), (-1, 1)), "clamp_max": ((0.2,), (-1, 1)), "square": ((), (-2, 2)),
    "deg2rad": ((), (-90, 90)), "rad2deg": ((), (-1, 1)), "renorm": ((2, 0, 1.0), (-2, 2)),
}
BINARY_INPLACE = ("xlogy", "hypot", "copysign", "ldexp")
# the mechanism is one (registry.with_inplace), so the emulated device runs a cheap sample: the
# special functions' composites take seconds each through Triton's interpreter
_ON_CUDA = ("frac", "reciprocal", "rsqrt", "cumprod", "triu", "clamp_min", "square", "renorm",
            "logit", "xlogy", "copysign", "ldexp")


@pytest.mark.parametrize("name, device", [(n, "cpu") for n in sorted(INPLACE) +
                                          list(BINARY_INPLACE)] + [(n, "cuda") for n in _ON_CUDA])
def test_inplace_on_a_non_leaf_matches_out_of_place(name, device):
    """The in-place form gives the function's values and gradients through a non-leaf (whose
    old value the function's parts saved: the in-place form must compute from a copy), bumps
    the version and refuses a leaf that requires grad."""
    args, (lo, hi) = INPLACE.get(name, ((), (0.5, 2)))
    shape = (3, 3)
    leaf = t64(shape, device, lo, hi)
    if name in BINARY_INPLACE:
        args = (t64(shape, device, 0.5, 2),)
    method = getattr(tg.Tensor, name)

    def inplace(x):  # (finite differences run on the CPU: the other operand follows x)
        y = x * 1
        v = y._version
        a = tuple(t.to(x.device) if isinstance(t, tg.Tensor) else t for t in args)
        assert getattr(y, name + "_")(*a) is y and y._version > v
        return y
    np.testing.assert_allclose(host(inplace(leaf.detach())), host(method(leaf, *args)),
                               rtol=1e-12, atol=1e-12)
    assert_grads_match(inplace, [leaf])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(leaf.detach().requires_grad_(), name + "_")(*args)


def test_inplace_through_a_view_rewrites_the_base_history(device):
    def f(x):
        y = x * 1
        y[1].erf_()
        return y
    assert_grads_match(f, [t64((3, 2), device)])


def test_inplace_refuses_float_results_in_integer_tensors():
    for name in ("erf_", "reciprocal_", "deg2rad_", "logit_", "ldexp_"):
        args = (tg.tensor([1]),) if name == "ldexp_" else ()
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
            getattr(tg.tensor([1, 2]), name)(*args)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool"):
        tg.tensor([True]).square_()
    assert tg.tensor([1, 5]).clamp_min_(2).tolist() == [2, 5]
    assert tg.tensor([1, 3]).logical_not_().tolist() == [0, 0]
    assert tg.tensor([1, 2]).bitwise_not_().tolist() == [-2, -3]


# -- the numeric family ----------------------------------------------------------------------------

def test_square_keeps_integers(device):
    assert host(tg.square(_t([1, -2, 3], device))).tolist() == [1, 4, 9]
    sq = tg.square(_t([True, False], device))
    assert sq.dtype is tg.int64 and host(sq).tolist() == [1, 0]
    assert_grads_match(tg.square, [t64((4,), device)])


def test_copysign(device):
    a, b = _rng.uniform(-2, 2, (3, 4)), _rng.uniform(-2, 2, (4,))
    b[0] = -0.0
    a[0, 1] = 0.0
    out = tg.copysign(_t(a, device), _t(b, device))
    np.testing.assert_array_equal(host(out), np.copysign(a, b))
    assert host(tg.copysign(_t([1, 2], device), -1)).tolist() == [-1.0, -2.0]
    assert tg.copysign(_t([1, 2], device), -1).dtype is tg.float32
    assert_grads_match(tg.copysign, [t64((3, 4), device), t64((4,), device)])
    # PyTorch's derivative: sign-adjusted for input (0 at 0), zero for other (in the graph)
    x = _t([1.0, 0.0, -2.0], device, tg.float64).requires_grad_()
    y = _t([-1.0, -1.0, 3.0], device, tg.float64).requires_grad_()
    out = tg.copysign(x, y)
    assert type(out.grad_fn).__name__ == "CopysignBackward0"
    gx, gy = tg.autograd.grad(out.sum(), (x, y))
    assert host(gx).tolist() == [-1.0, 0.0, -1.0]
    assert host(gy).tolist() == [0.0, 0.0, 0.0]


def test_heaviside(device):
    x = _t([-1.0, 0.0, 2.0, math.nan], device)
    v = _t([0.5], device)
    expected = np.where(np.isnan(host(x)), 0.0, np.heaviside(host(x), 0.5))
    np.testing.assert_array_equal(host(tg.heaviside(x, v)), expected)
    assert host(tg.heaviside(_t([1, 0, -2], device), _t([7], device))).tolist() == [1, 7, 0]
    with pytest.raises(RuntimeError, match="different dtypes"):
        tg.heaviside(x, _t([1], device))
    assert not tg.heaviside(x.requires_grad_(), v).requires_grad


def test_gcd_lcm(device):
    a = _rng.integers(-60, 60, (4, 5))
    b = _rng.integers(-60, 60, (5,))
    a[0, 0] = b[0] = 0
    np.testing.assert_array_equal(host(tg.gcd(_t(a, device), _t(b, device))), np.gcd(a, b))
    np.testing.assert_array_equal(host(tg.lcm(_t(a, device), _t(b, device))), np.lcm(a, b))
    u = _t([4, 200], device, tg.uint8)
    assert host(u.gcd(_t([6, 150], device, tg.uint8))).tolist() == [2, 50]
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        tg.gcd(_t([1.0], device), _t([2.0], device))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        tg.lcm(_t([True], device), _t([True], device))


def test_ldexp_and_float_power(device):
    x, e = _rng.uniform(-2, 2, 5), _rng.integers(-3, 4, 5)
    np.testing.assert_allclose(host(tg.ldexp(_t(x, device), _t(e, device))), np.ldexp(x, e),
                               rtol=1e-6)
    assert_grads_match(tg.ldexp, [t64((4,), device), t64((4,), device)])
    # the result dtype is the operands' promoted one, integers going to the default float
    ints = _t([1, 2], device, tg.int64)
    for a, want in ((_t([1.0], device, tg.float16), tg.float16), (ints, tg.float32),
                    (_t([1.0], device, tg.bfloat16), tg.bfloat16)):
        assert tg.ldexp(a, ints).dtype is want
    assert tg.ldexp(_t([1.0], device, tg.float32), _t([1.0], device, tg.float64)).dtype \
        is tg.float64
    with pytest.raises(NotImplementedError, match=f"ldexp_{device}_exp.*'Bool'"):
        tg.ldexp(_t([1.0], device), _t([True], device, tg.bool))
    fp = tg.float_power(_t([2, 3], device), 2)
    assert fp.dtype is tg.float64 and host(fp).tolist() == [4.0, 9.0]
    assert host(tg.float_power(2, _t([1.0, 3.0], device))).tolist() == [2.0, 8.0]
    base, ex = _rng.uniform(0.5, 2, 4), _rng.uniform(-2, 2, 4)
    np.testing.assert_allclose(host(tg.float_power(_t(base, device, tg.float32),
                                                   _t(ex, device, tg.float32))),
                               np.float_power(base.astype(np.float32), ex.astype(np.float32)),
                               rtol=1e-14)
    assert tg.float_power(_t([1j], device), 2).dtype is tg.complex128
    with pytest.raises(RuntimeError, match="has dtype Float but the operation's result requires "
                                           "dtype Double"):
        _t([2.0], device).float_power_(2)
    assert_grads_match(tg.float_power, [t64((4,), device, 0.5, 2), t64((4,), device)])


def test_frexp(device):
    for dt, npdt in ((tg.float32, np.float32), (tg.float64, np.float64)):
        v = np.array([0.0, -3.0, 8.0, np.inf, np.nan, -0.0, 0.75, 1 - 2.0 ** -24,
                      np.finfo(npdt).tiny / 3, np.finfo(npdt).max, -np.finfo(npdt).tiny],
                     dtype=npdt)
        m, e = tg.frexp(_t(v, device, dt))
        rm, re = np.frexp(v)
        assert m.dtype is dt and e.dtype is tg.int32
        np.testing.assert_array_equal(host(m), rm)
        np.testing.assert_array_equal(host(e), np.where(np.isfinite(v), re, 0))
    with pytest.raises(RuntimeError, match="only supports floating-point"):
        tg.frexp(_t([1], device))
    assert_grads_match(lambda x: tg.frexp(x).mantissa, [t64((5,), device, -9, 9)])


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_nextafter(dt, device):
    npdt = getattr(np, dt)
    fi = np.finfo(npdt)
    x = np.array([1, 0, -0.0, 1, -1, 2, -2, fi.smallest_subnormal, np.inf, -np.inf, fi.max, 1,
                  np.nan, 5, fi.tiny, -fi.tiny], dtype=npdt)
    y = np.array([2, -1, 1, 0, -2, 0, 3, 0, 0, 0, np.inf, 1, 1, np.nan, 0, 0], dtype=npdt)
    out = tg.nextafter(_t(x, device, getattr(tg, dt)), _t(y, device, getattr(tg, dt)))
    with np.errstate(over="ignore"):  # (max towards inf: inf)
        expected = np.nextafter(x, y)
    np.testing.assert_array_equal(host(out), expected)
    assert np.array_equal(np.signbit(host(out)), np.signbit(expected))


def test_nextafter_gradient_and_errors(device):
    a, b = t64((4,), device), t64((4,), device)
    a.requires_grad_()
    b.requires_grad_()
    out = tg.nextafter(a, b)
    assert type(out.grad_fn).__name__ == "NextafterBackward0"
    ga, gb = tg.autograd.grad(out.sum(), (a, b))  # (b in the graph: a zero gradient)
    assert host(ga).tolist() == [1.0] * 4 and host(gb).tolist() == [0.0] * 4
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.nextafter(_t([1], device), _t([2], device))


def test_angles_and_infinities(device):
    x = _rng.uniform(-360, 360, 5)
    np.testing.assert_allclose(host(tg.deg2rad(_t(x, device, tg.float64))), np.deg2rad(x))
    np.testing.assert_allclose(host(tg.rad2deg(_t(x, device, tg.float64))), np.rad2deg(x))
    assert tg.deg2rad(_t([180], device)).dtype is tg.float32
    v = _t([math.inf, -math.inf, 1.0, math.nan], device)
    assert host(tg.isposinf(v)).tolist() == [True, False, False, False]
    assert host(tg.isneginf(v)).tolist() == [False, True, False, False]
    assert host(tg.isposinf(_t([1, 2], device))).tolist() == [False, False]
    with pytest.raises(RuntimeError, match="does not support complex"):
        tg.isneginf(_t([1j], device))


def _np_shift(a, s, left, bits):
    """PyTorch's shifts as a formula: in range, the two's-complement shift; else 0, or the
    sign for an arithmetic right shift."""
    a, s = np.broadcast_arrays(np.asarray(a, dtype=object), np.asarray(s, dtype=object))
    out = []
    for x, n in zip(a.ravel(), s.ravel()):
        x, n = int(x), int(n)
        if 0 <= n < bits:
            r = x << n if left else x >> n
        else:
            r = 0 if left or x >= 0 else -1
        r &= (1 << bits) - 1  # wrap into the signed range
        out.append(r - (1 << bits) if r >= 1 << (bits - 1) else r)
    return np.array(out).reshape(a.shape)


@pytest.mark.parametrize("dt, bits", [("int64", 64), ("int32", 32), ("int8", 8)])
def test_shifts(dt, bits, device):
    a = _rng.integers(-100, 100, (3, 4))
    s = _rng.integers(-2, bits + 2, (4,))
    s[:2] = (bits - 1, bits - 2)
    ta, ts = _t(a, device, getattr(tg, dt)), _t(s, device, getattr(tg, dt))
    np.testing.assert_array_equal(host(ta << ts), _np_shift(a, s, True, bits))
    np.testing.assert_array_equal(host(ta >> ts), _np_shift(a, s, False, bits))
    for n in (0, 3, bits - 1, bits, -1):
        np.testing.assert_array_equal(host(tg.bitwise_left_shift(ta, n)),
                                      _np_shift(a, n, True, bits))
        np.testing.assert_array_equal(host(tg.bitwise_right_shift(ta, n)),
                                      _np_shift(a, n, False, bits))


def test_shift_operators_and_unsigned(device):
    u = _t([200, 3], device, tg.uint8)
    assert host(u << 1).tolist() == [144, 6] and host(u >> 7).tolist() == [1, 0]
    assert host(u >> 9).tolist() == [0, 0]
    assert host(2 << _t([1, 2], device)).tolist() == [4, 8]
    x = _t([1, 2], device)
    x <<= 2
    assert host(x).tolist() == [4, 8]
    with pytest.raises(NotImplementedError, match="lshift_.* not implemented for 'Float'"):
        _t([1.5], device) << 2


def _np_renorm(x, p, dim, maxnorm):
    axes = tuple(i for i in range(x.ndim) if i != dim)
    norm = (np.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1 / p)
    return x * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


def test_renorm(device):
    x = _rng.uniform(-2, 2, (3, 4))
    x[1] *= 0.01
    for p, dim, maxnorm in ((2, 0, 1.0), (1, 1, 2.0), (3, -1, 1.5)):
        np.testing.assert_allclose(host(tg.renorm(_t(x, device), p, dim, maxnorm)),
                                   _np_renorm(x, p, dim % 2, maxnorm), rtol=1e-12)
        assert_grads_match(lambda t, p=p, dim=dim, m=maxnorm: tg.renorm(t, p, dim, m),
                           [_t(x, device)])
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        tg.renorm(_t(x, device), 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tg.renorm(_t([1.0, 2.0], device), 2, 0, 1.0)


def test_histogram(device):
    x = _rng.normal(size=50)
    w = _rng.uniform(0, 1, 50)
    for kwargs in ({"bins": 7}, {"bins": 4, "range": (-1.0, 1.5)}, {"bins": 5, "density": True}):
        hist, edges = tg.histogram(_t(x, device), **kwargs, weight=_t(w, device))
        rh, re = np.histogram(x, **kwargs, weights=w)
        np.testing.assert_allclose(host(edges), re, rtol=1e-12)
        np.testing.assert_allclose(host(hist), rh, rtol=1e-12)
    bins = np.array([-3.0, -0.5, 0.0, 2.0])
    hist, edges = tg.histogram(_t(x, device), _t(bins, device))
    np.testing.assert_array_equal(host(hist), np.histogram(x, bins)[0])
    hist, edges = tg.histogram(_t([3.0, 3.0], device), bins=2)  # equal min and max: +-0.5
    assert host(edges).tolist() == [2.5, 3.0, 3.5] and host(hist).tolist() == [0.0, 2.0]
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.histogram(_t([1, 2], device), bins=2)
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        tg.histogram(_t([1.0], device), bins=2, range=(2.0, 1.0))
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        tg.histogram(_t([1.0], device), bins=0)


# -- the arrange family ----------------------------------------------------------------------------

def test_reshaping_composites(device):
    a = _rng.uniform(-2, 2, (3, 4))
    x = _t(a, device)
    np.testing.assert_array_equal(host(x.t().ravel()), a.T.ravel())
    np.testing.assert_array_equal(host(tg.msort(x)), np.sort(a, axis=0))
    np.testing.assert_array_equal(host(x.narrow_copy(1, 1, 2)), a[:, 1:3])
    np.testing.assert_array_equal(host(tg.diagflat(x[:2, :2], 1)), np.diagflat(a[:2, :2], 1))
    z = _t(a + 1j * a[::-1], device)
    np.testing.assert_array_equal(host(tg.adjoint(z)), (a + 1j * a[::-1]).conj().T)
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        tg.adjoint(_t([1.0], device))
    m = _t([[1, 0], [0, 3]], device)
    np.testing.assert_array_equal(host(tg.argwhere(m)), np.argwhere(host(m)))
    for fn in (tg.msort, tg.ravel, tg.adjoint, lambda t: tg.diagflat(t, -1),
               lambda t: t.narrow_copy(0, 1, 2)):
        assert_grads_match(fn, [t64((3, 4), device)])


def test_splits(device):
    a = np.arange(24.0).reshape(2, 3, 4)
    x = _t(a, device)
    for ours, theirs, arg in ((tg.hsplit, np.hsplit, 3), (tg.vsplit, np.vsplit, [1]),
                              (tg.dsplit, np.dsplit, 2), (tg.dsplit, np.dsplit, [1, 3])):
        got = ours(x, arg)
        want = theirs(a, arg)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(host(g), w)
    assert [p.shape for p in tg.arange(4.0).hsplit(2)] == [(2,), (2,)]
    with pytest.raises(RuntimeError, match="not divisible by the split_size 3"):
        x.dsplit(3)
    with pytest.raises(RuntimeError, match="at least 3 dimension"):
        tg.arange(4.0).dsplit(2)
    assert_grads_match(lambda t: t.hsplit([1])[1] * 2, [t64((3, 4), device)])


def _scatter_cases(a, s1, s2, s3):
    """(our call, the NumPy reference) of each view scatter, ``a`` a (3, 4) array."""
    def put_ref(region):
        def ref():
            r = a.copy()
            region(r)
            return r
        return ref
    return {
        "select_scatter": (lambda x, s: tg.select_scatter(x, s, 1, -2),
                           put_ref(lambda r: r.__setitem__((slice(None), -2), s1)), s1),
        "slice_scatter": (lambda x, s: tg.slice_scatter(x, s, 1, 0, None, 2),
                          put_ref(lambda r: r.__setitem__((slice(None), slice(0, None, 2)), s2)),
                          s2),
        "diagonal_scatter": (lambda x, s: tg.diagonal_scatter(x, s, 1),
                             put_ref(lambda r: r.__setitem__((np.arange(3), np.arange(3) + 1),
                                                             s3)), s3),
        "as_strided_scatter": (lambda x, s: tg.as_strided_scatter(x, s, (3,), (5,), 0),
                               put_ref(lambda r: r.reshape(-1).__setitem__([0, 5, 10], s3)),
                               s3),
    }


@pytest.mark.parametrize("name", ["select_scatter", "slice_scatter", "diagonal_scatter",
                                  "as_strided_scatter"])
def test_view_scatters(name, device):
    a = _rng.uniform(-2, 2, (3, 4))
    s1, s2, s3 = _rng.uniform(-2, 2, 3), _rng.uniform(-2, 2, (3, 2)), _rng.uniform(-2, 2, 3)
    fn, ref, src = _scatter_cases(a, s1, s2, s3)[name]
    out = fn(_t(a, device).requires_grad_(), _t(src, device))
    np.testing.assert_array_equal(host(out), ref())
    # PyTorch's grad_fn names: SelectScatterBackward0, ...
    assert type(out.grad_fn).__name__ == \
        "".join(p.capitalize() for p in name.split("_")) + "Backward0"
    w = _t(_rng.uniform(-1, 1, (3, 4)), device)  # (a non-uniform grad_output)
    assert_grads_match(lambda x, s: fn(x, s) * w.to("cpu" if x.device.type == "cpu"
                                                   else x.device),
                       [_t(a, device), _t(src, device)])


def test_view_scatter_checks_and_layouts(device):
    base = tg.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"src size = \[2\], slice size = \[3\]"):
        tg.select_scatter(base, _t([1.0, 2.0], device), 0, 1)
    with pytest.raises(IndexError, match="out of range"):
        tg.select_scatter(base, _t([1.0, 2.0], device), 1, 5)
    # a transposed input keeps its values; an expanded one is written densely; src is cast
    t = tg.arange(6.0, device=device).reshape(2, 3).t()
    out = tg.select_scatter(t, _t([7, 8], device), 0, 2)
    assert host(out).tolist() == [[0.0, 3.0], [1.0, 4.0], [7.0, 8.0]]
    e = _t([1.0, 2.0, 3.0], device).expand(2, 3)
    assert host(tg.select_scatter(e, _t([7.0, 8.0, 9.0], device), 0, 0)).tolist() == \
        [[7.0, 8.0, 9.0], [1.0, 2.0, 3.0]]


def test_put(device):
    a = _rng.uniform(-2, 2, (3, 4))
    idx, src = np.array([1, -1, 5]), _rng.uniform(-2, 2, 3)
    ref = a.copy()
    np.put(ref, idx, src)
    x = _t(a, device)
    np.testing.assert_array_equal(host(x.put(_t(idx, device), _t(src, device))), ref)
    acc = x.clone().put_(_t([0, 0], device), _t([1.0, 2.0], device, tg.float64),
                         accumulate=True)
    assert host(acc)[0, 0] == a[0, 0] + 3.0
    np.testing.assert_array_equal(host(x.t().put(_t(idx, device), _t(src, device))),
                                  _np_put_t(a, idx, src))
    with pytest.raises(IndexError, match="tried to access index 12 on a tensor of 12"):
        x.put(_t([12], device), _t([1.0], device, tg.float64))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        x.put(_t([0.0], device), _t([1.0], device, tg.float64))
    with pytest.raises(IndexError, match="same number of elements"):
        x.put(_t([0, 1], device), _t([1.0], device, tg.float64))
    i = _t(idx, device)
    assert_grads_match(lambda t, s: t.put(i.to(t.device), s) * 3, [_t(a, device),
                                                                   _t(src, device)])


def _np_put_t(a, idx, src):
    r = a.T.copy()
    np.put(r, idx, src)
    return r


@pytest.mark.parametrize("shape, wrap", [((5, 3), True), ((5, 3), False), ((3, 5), True),
                                         ((7, 2), True), ((3, 3, 3), False)])
def test_fill_diagonal_(shape, wrap, device):
    ref = np.zeros(shape)
    np.fill_diagonal(ref, 2.0, wrap=wrap)
    x = tg.zeros(*shape, device=device)
    v = x._version
    assert x.fill_diagonal_(2.0, wrap=wrap) is x and x._version > v
    np.testing.assert_array_equal(host(x), ref)


def test_fill_diagonal_errors_and_gradient(device):
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        tg.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        tg.zeros(2, 3, 2).fill_diagonal_(1)
    assert_grads_match(lambda t: (t * 1).fill_diagonal_(0.5, wrap=True) * 2,
                       [t64((4, 3), device)])


# -- the tensor_info family and attributes ----------------------------------------------------------

def test_questions(device):
    assert tg.tensor([1]).is_signed() and not tg.tensor([1], dtype=tg.uint8).is_signed()
    assert not tg.is_signed(tg.tensor([True])) and tg.tensor([1j]).is_signed()
    assert tg.is_nonzero(_t([[3]], device)) and not _t([0.0], device).is_nonzero()
    assert tg.tensor(math.nan).is_nonzero()
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        tg.tensor([]).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        tg.tensor([1, 2]).is_nonzero()
    assert tg.tensor([1.0, 2.0]).is_same_size(tg.tensor([3.0, 4.0]))
    assert not tg.is_same_size(tg.tensor([1.0]), tg.tensor([[1.0]]))
    x = _t([1.0], device)
    assert x.get_device() == tg.get_device(x) == (-1 if device == "cpu" else 0)
    assert tg.tensor([[1, 2]]).ndimension() == 2
    assert not x.is_conj() and not tg.is_neg(x)
    assert tg.resolve_conj(x) is x and x.resolve_neg() is x
    assert x.share_memory_() is x and x.is_shared()  # (CPU: moved to shared memory)


def test_attributes():
    x = tg.tensor([1.0, 2.0])
    assert (x.itemsize, x.nbytes) == (4, 8)
    assert tg.tensor([1, 2]).expand(3, 2).nbytes == 48
    assert x.layout is tg.strided and repr(tg.strided) == "tritongrad.strided"
    assert isinstance(tg.strided, tg.layout)
    import pickle
    assert pickle.loads(pickle.dumps(tg.strided)) is tg.strided
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn",
                 "is_nested", "is_xpu", "is_mps", "is_ipu", "is_xla", "is_vulkan", "is_maia",
                 "is_mtia"):
        assert getattr(x, flag) is False, flag
    with pytest.raises(AttributeError):
        x.is_sparse = True


def test_conversions():
    x = tg.tensor([-1.0, 300.0])
    assert x.byte().dtype is tg.uint8 and x.char().dtype is tg.int8
    assert tg.tensor([1.0]).short().dtype is tg.int16
    assert x.cfloat().dtype is tg.complex64 and x.cdouble().dtype is tg.complex128
    assert x.char().tolist() == [-1, 44]  # (300 wraps, as PyTorch's)
    with pytest.raises(TypeError, match="complex32"):
        x.chalf()
    y = tg.tensor([1.0]).new_empty_strided((2, 3), (1, 2), dtype=tg.int32)
    assert y.stride() == (1, 2) and y.dtype is tg.int32


def test_apply_map_map2():
    x = tg.tensor([1.0, 2.0])
    assert x.apply_(lambda v: v * 10) is x and x.tolist() == [10.0, 20.0]
    assert tg.tensor([1, 2]).apply_(lambda v: v + 0.7).tolist() == [1, 2]
    m = tg.tensor([[1.0, 2.0], [3.0, 4.0]]).map_(tg.tensor([10.0, 20.0]), lambda a, b: a + b)
    assert m.tolist() == [[11.0, 22.0], [13.0, 24.0]]
    m2 = tg.tensor([1.0, 2.0]).map2_(tg.tensor([10.0, 20.0]), tg.tensor([100.0]),
                                     lambda a, b, c: a + b + c)
    assert m2.tolist() == [111.0, 122.0]
    with pytest.raises(RuntimeError, match="Can't call apply_.. on Variable that requires grad"):
        tg.tensor([1.0], requires_grad=True).apply_(lambda v: v)
    with pytest.raises(TypeError, match="expected .*LongTensor"):
        tg.tensor([1, 2]).map_(tg.tensor([1.5, 2.5]), lambda a, b: a + b)


def test_the_families_are_registered():
    names = {r.name for r in FAMILIES["numeric"] + FAMILIES["arrange"] + FAMILIES["tensor_info"]}
    assert {"gcd", "histogram", "select_scatter", "put", "apply_"} <= names
