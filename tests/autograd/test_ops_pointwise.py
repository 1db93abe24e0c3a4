"""Pointwise ops (autograd/ops/pointwise.py): math functions, rounding, clamp, integer division,
logical/bitwise ops, fill_/zero_ and in-place variants. Values against NumPy float64,
gradients against central differences (tests/helpers.py), second derivatives through
create_graph."""

import math
import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd.ops import elementwise, pointwise
from tests.helpers import assert_grads_match, t64, host, second_order

rng = np.random.default_rng(1)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


# The unary rows of the op tables (autograd/ops/elementwise.py and pointwise.py): each needs
# a float64 NumPy reference here, with a domain where its finite differences are good, or a
# place in ROUNDING below (zero gradients); test_every_unary_row_is_tested keeps it so.
UNARY_ROWS = {row.name: row for row in elementwise.OPS + pointwise.OPS if row.node is not None}
REFERENCE = {
    "sin": (np.sin, (-3, 3)),
    "cos": (np.cos, (-3, 3)),
    "tan": (np.tan, (-1.2, 1.2)),
    "tanh": (np.tanh, (-2, 2)),
    "sigmoid": (_sigmoid, (-4, 4)),
    "log1p": (np.log1p, (-0.5, 2)),
    "asin": (np.arcsin, (-0.9, 0.9)),
    "acos": (np.arccos, (-0.9, 0.9)),
    "atan": (np.arctan, (-3, 3)),
    "sinh": (np.sinh, (-3, 3)),
    "cosh": (np.cosh, (-3, 3)),
    "asinh": (np.arcsinh, (-3, 3)),
    "acosh": (np.arccosh, (1.2, 4)),
    "atanh": (np.arctanh, (-0.9, 0.9)),
    "log2": (np.log2, (0.2, 4)),
    "log10": (np.log10, (0.2, 4)),
    "exp2": (np.exp2, (-3, 3)),
    "expm1": (np.expm1, (-2, 2)),
    "abs": (np.abs, (0.1, 2)),  # away from the kink for finite differences
    "rsqrt": (lambda a: 1 / np.sqrt(a), (0.5, 3)),
    "exp": (np.exp, (-2, 2)),
    "log": (np.log, (0.5, 3)),
    "sqrt": (np.sqrt, (0.5, 3)),
    "neg": (np.negative, (-2, 2)),
    "relu": (lambda a: np.maximum(a, 0), (-2, 2)),
}
SMOOTH = {name: (UNARY_ROWS[name].fn, ref, domain) for name, (ref, domain) in REFERENCE.items()}


@pytest.mark.parametrize("name", sorted(SMOOTH))
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (0, 4)])
def test_smooth_unary(name, shape, device):
    fn, ref, (lo, hi) = SMOOTH[name]
    x = t64(shape, device, lo, hi)
    np.testing.assert_allclose(host(fn(x)), ref(host(x)), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(getattr(x, name)()), ref(host(x)), rtol=1e-12)
    if 0 not in shape:
        assert_grads_match(fn, [x])


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_smooth_unary_second_order(name, device):
    fn, _, (lo, hi) = SMOOTH[name]
    x = t64((2, 3), device, lo, hi)
    second_order(fn, x)


def test_abs_negative_side_and_zero(device):
    x = tg.tensor([-2.0, -0.5, 0.0, 1.5], dtype=tg.float64, device=device, requires_grad=True)
    x.abs().sum().backward()
    np.testing.assert_array_equal(host(x.grad), [-1, -1, 0, 1])  # sign(0) = 0, as PyTorch
    assert tg.abs(tg.tensor([-3, 4], device=device)).tolist() == [3, 4]
    assert abs(tg.tensor([-3.5], device=device)).tolist() == [3.5]


@pytest.mark.parametrize("dtype", [tg.float16, tg.float32, tg.bfloat16])
@pytest.mark.parametrize("name", ["sin", "tanh", "sigmoid", "expm1", "log1p"])
def test_smooth_unary_low_precision(name, dtype, device):
    fn, ref, (lo, hi) = SMOOTH[name]
    a = rng.uniform(lo, hi, (4, 9))
    x = tg.tensor(a, dtype=dtype, device=device)
    out = fn(x)
    assert out.dtype is dtype
    tol = {tg.float16: 2e-3, tg.float32: 1e-6, tg.bfloat16: 1e-2}[dtype]
    np.testing.assert_allclose(host(out).astype(np.float64),
                               ref(host(x).astype(np.float64)), rtol=tol, atol=tol)


def test_sigmoid_is_stable_at_extremes(device):
    x = tg.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], device=device)
    y = host(tg.sigmoid(x))
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, [0, _sigmoid(-50.0), 0.5, 1, 1], atol=1e-30, rtol=1e-6)
    h = host(tg.sigmoid(tg.tensor([-12.0], dtype=tg.float16, device=device)))
    assert h[0] > 0  # float16: computed in float32, not 0 from exp overflow


def test_sigmoid_is_silent_on_overflow_and_nan(device):
    # PyTorch warns of nothing here; NumPy would ("overflow"/"invalid value encountered"), and
    # the compiled float32 loop raises those flags in its vectorized lanes
    x = tg.tensor([-1000.0, float("nan"), float("-inf"), float("inf")] + [1.0] * 12,
                  device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = host(tg.sigmoid(x))
    assert y[0] == 0 and np.isnan(y[1]) and y[2] == 0 and y[3] == 1
    np.testing.assert_allclose(y[4:], _sigmoid(1.0), rtol=1e-6)


def test_unary_of_ints_promotes_to_default_float(device):
    x = tg.tensor([0, 1, 2], device=device)
    for fn in (tg.sin, tg.cos, tg.tanh, tg.sigmoid, tg.log1p, tg.expm1):
        assert fn(x).dtype is tg.float32
    assert tg.sin(x).tolist() == pytest.approx(np.sin([0, 1, 2]).tolist(), rel=1e-6)


def test_non_contiguous_input(device):
    base = t64((5, 6), device)
    x = base.t()[1:, ::2]
    np.testing.assert_allclose(host(x.tanh()), np.tanh(host(x)), rtol=1e-12)
    assert_grads_match(lambda v: v.t()[1:, ::2].sin(), [base])


# -- rounding ------------------------------------------------------------------------------------

ROUNDING = {"floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
            "sign": np.sign}


def test_every_unary_row_is_tested():
    assert set(UNARY_ROWS) == set(REFERENCE) | set(ROUNDING)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_unary_row_in_place(name, device):
    row = UNARY_ROWS[name]
    if row.inplace is None:
        pytest.skip(f"{name} has no in-place form")
    ref, (lo, hi) = REFERENCE[name]
    leaf = t64((3, 4), device, lo, hi).requires_grad_(True)
    y = leaf * 1
    assert row.inplace(y) is y
    np.testing.assert_allclose(host(y), ref(host(leaf)), rtol=1e-12, atol=1e-14)
    assert_grads_match(lambda v: row.inplace(v * 1), [leaf.detach()])


@pytest.mark.parametrize("name", sorted(ROUNDING))
def test_rounding_values_and_zero_gradient(name, device):
    a = np.array([-2.5, -1.5, -0.7, -0.0, 0.3, 0.5, 1.5, 2.5, 3.7])
    x = tg.tensor(a, dtype=tg.float64, device=device, requires_grad=True)
    y = getattr(tg, name)(x)
    np.testing.assert_array_equal(host(y), ROUNDING[name](a))
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.zeros_like(a))


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc"])
def test_rounding_ints_are_unchanged(name, device):
    x = tg.tensor([-3, 0, 5], device=device)
    y = getattr(x, name)()
    assert y.dtype is tg.int64 and y.tolist() == [-3, 0, 5]


def test_round_decimals_and_sign_nan(device):
    x = tg.tensor([1.2345, -2.5678, 1250.0], dtype=tg.float64, device=device)
    np.testing.assert_allclose(host(x.round(decimals=2)), [1.23, -2.57, 1250.0])
    np.testing.assert_allclose(host(tg.round(x, decimals=-2)), [0.0, -0.0, 1200.0])
    s = tg.sign(tg.tensor([float("nan"), -3.0, 0.0, 2.0], device=device))
    assert host(s).tolist() == [0.0, -1.0, 0.0, 1.0]  # PyTorch: sign(NaN) = 0
    assert tg.sign(tg.tensor([True, False], device=device)).tolist() == [True, False]
    assert tg.sign(tg.tensor([-4, 0, 9], device=device)).tolist() == [-1, 0, 1]


def test_isinf_isfinite(device):
    x = tg.tensor([1.0, float("inf"), -float("inf"), float("nan")], device=device)
    assert tg.isinf(x).tolist() == [False, True, True, False]
    assert tg.isfinite(x).tolist() == [True, False, False, False]
    assert tg.isfinite(tg.tensor([1, 2], device=device)).tolist() == [True, True]


# -- clamp ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("lo,hi", [(-0.5, 0.7), (None, 0.3), (-0.2, None), (0.5, -0.5)])
def test_clamp_scalar_bounds(lo, hi, device):
    a = np.array([-1.3, -0.6, -0.1, 0.2, 0.45, 0.9, 1.7])
    x = tg.tensor(a, dtype=tg.float64, device=device, requires_grad=True)
    y = x.clamp(lo, hi)
    ref = a
    if lo is not None:
        ref = np.maximum(ref, lo)
    if hi is not None:
        ref = np.minimum(ref, hi)
    np.testing.assert_array_equal(host(y), ref)
    y.sum().backward()
    keep = np.ones_like(a, dtype=bool)
    if lo is not None:
        keep &= a >= lo
    if hi is not None:
        keep &= a <= hi
    np.testing.assert_array_equal(host(x.grad), keep.astype(float))
    np.testing.assert_array_equal(host(tg.clip(x, lo, hi)), ref)


def test_clamp_boundary_gradient_and_nan(device):
    x = tg.tensor([0.0, 1.0, float("nan")], dtype=tg.float64, device=device, requires_grad=True)
    y = x.clamp(0.0, 1.0)
    assert np.isnan(host(y)[2])  # NaN propagates
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [1.0, 1.0, 0.0])  # inclusive bounds


def test_clamp_tensor_bounds_broadcast_and_grads(device):
    x = t64((3, 4), device)
    lo = t64((4,), device, -1.0, -0.2)
    hi = t64((3, 1), device, 0.2, 1.0)
    ref = np.minimum(np.maximum(host(x), host(lo)), host(hi))
    np.testing.assert_allclose(host(tg.clamp(x, lo, hi)), ref)
    assert_grads_match(lambda a, b, c: tg.clamp(a, b, c), [x, lo, hi])
    assert_grads_match(lambda a, b: tg.clamp(a, min=b), [x, lo])
    assert_grads_match(lambda a, c: tg.clamp(a, max=c), [x, hi])


def test_clamp_min_above_max_gives_max(device):
    x = tg.tensor([-1.0, 0.0, 5.0], dtype=tg.float64, device=device, requires_grad=True)
    lo = tg.tensor([2.0], dtype=tg.float64, device=device, requires_grad=True)
    hi = tg.tensor([1.0], dtype=tg.float64, device=device, requires_grad=True)
    y = tg.clamp(x, lo, hi)
    assert host(y).tolist() == [1.0, 1.0, 1.0]
    y.sum().backward()
    assert host(x.grad).tolist() == [0, 0, 0]
    assert host(lo.grad).tolist() == [0.0] and host(hi.grad).tolist() == [3.0]


def test_clamp_dtypes(device):
    i = tg.tensor([-5, 0, 5], device=device)
    assert tg.clamp(i, -2, 3).tolist() == [-2, 0, 3] and tg.clamp(i, -2, 3).dtype is tg.int64
    f = tg.clamp(i, min=0.5)
    assert f.dtype is tg.float32 and f.tolist() == [0.5, 0.5, 5.0]  # promotes, as PyTorch
    h = tg.tensor([-3.0, 0.25, 9.0], dtype=tg.float16, device=device).clamp(-1, 1)
    assert h.dtype is tg.float16 and h.tolist() == [-1.0, 0.25, 1.0]


def test_clamp_inplace(device):
    x = t64((4, 5), device)
    a = host(x).copy()
    v = x._version
    assert x.clamp_(-0.5, 0.5) is x and x._version == v + 1
    np.testing.assert_array_equal(host(x), np.clip(a, -0.5, 0.5))
    leaf = t64((3,), device).requires_grad_(True)
    y = leaf * 1
    y.clamp_(min=0.0)
    y.sum().backward()
    np.testing.assert_array_equal(host(leaf.grad), (host(leaf) >= 0).astype(float))
    with pytest.raises(RuntimeError, match="can't be cast"):
        tg.tensor([1, 2], device=device).clamp_(0.5, 1.5)


def test_clamp_second_order_passes_through(device):
    x = t64((5,), device)
    second_order(lambda v: v.clamp(-1.0, 1.0) * v * v, x)


def test_clamp_errors(device):
    x = tg.ones(3, device=device)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        x.clamp()
    with pytest.raises(TypeError, match="bounds must be numbers or Tensors"):
        x.clamp("a")


# -- integer division and remainder ----------------------------------------------------------

INT_PAIRS = [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (6, 3), (-6, 3)]


def test_floor_divide_and_remainder_ints_match_python(device):
    a = tg.tensor([p for p, _ in INT_PAIRS], device=device)
    b = tg.tensor([q for _, q in INT_PAIRS], device=device)
    assert (a // b).tolist() == [p // q for p, q in INT_PAIRS]
    assert (a % b).tolist() == [p % q for p, q in INT_PAIRS]
    assert (a // b).dtype is tg.int64 and (a % b).dtype is tg.int64
    assert tg.div(a, b, rounding_mode="trunc").tolist() == [int(p / q) for p, q in INT_PAIRS]
    assert tg.div(a, b, rounding_mode="floor").tolist() == [p // q for p, q in INT_PAIRS]
    assert (a // 2).tolist() == [p // 2 for p, _ in INT_PAIRS]
    assert (a % 3).tolist() == [p % 3 for p, _ in INT_PAIRS]
    assert (17 // tg.tensor([5, -5], device=device)).tolist() == [3, -4]
    assert (17 % tg.tensor([5, -5], device=device)).tolist() == [2, -3]


def test_float_floor_divide_remainder(device):
    a = np.array([7.5, -7.5, 7.5, -0.5, 5.0])
    b = np.array([2.0, 2.0, -2.0, 3.0, 0.0])
    x = tg.tensor(a, dtype=tg.float64, device=device)
    y = tg.tensor(b, dtype=tg.float64, device=device)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(host(x // y), np.floor_divide(a, b))
        np.testing.assert_array_equal(host(x % y), np.remainder(a, b))
        np.testing.assert_array_equal(host(tg.div(x, y, rounding_mode="trunc")),
                                      np.trunc(a / b))


def test_integer_division_by_zero_raises(device):
    a = tg.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a % 0
    if device == "cpu":  # the NumPy backend can see a zero divisor tensor
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            a // tg.tensor([1, 0])


def test_remainder_gradients(device):
    a = t64((3, 4), device, 0.3, 5.0)
    b = t64((4,), device, 0.7, 2.0)
    assert_grads_match(lambda x, y: x % y, [a, b])
    assert_grads_match(lambda x: x % 1.5, [a])
    x = a.detach().requires_grad_(True)
    (x // 2.0).sum().backward()
    np.testing.assert_array_equal(host(x.grad), 0.0)  # floor_divide: zero gradient


def test_division_inplace(device):
    a = tg.tensor([7, -7, 9], device=device)
    a //= 2
    assert a.tolist() == [3, -4, 4]
    a %= 3
    assert a.tolist() == [0, 2, 1]
    f = tg.tensor([5.5], device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        tg.tensor([3], device=device).floor_divide_(f)


def test_bad_rounding_mode(device):
    with pytest.raises(RuntimeError, match="rounding_mode"):
        tg.div(tg.ones(2, device=device), 2, rounding_mode="nearest")


# -- logical and bitwise --------------------------------------------------------------------------

def test_bool_operators(device):
    p = tg.tensor([True, True, False, False], device=device)
    q = tg.tensor([True, False, True, False], device=device)
    assert (p & q).tolist() == [True, False, False, False]
    assert (p | q).tolist() == [True, True, True, False]
    assert (p ^ q).tolist() == [False, True, True, False]
    assert (~p).tolist() == [False, False, True, True]
    assert (p & True).tolist() == [True, True, False, False]
    r = p.clone()
    r &= q
    assert r.tolist() == [True, False, False, False]
    r |= p
    assert r.tolist() == [True, True, False, False]


def test_bitwise_ints(device):
    a = tg.tensor([12, -3, 7], device=device)
    b = tg.tensor([10, 5, 1], device=device)
    assert (a & b).tolist() == [12 & 10, -3 & 5, 7 & 1]
    assert (a | b).tolist() == [12 | 10, -3 | 5, 7 | 1]
    assert (a ^ b).tolist() == [12 ^ 10, -3 ^ 5, 7 ^ 1]
    assert (~a).tolist() == [~12, ~-3, ~7]
    # PyTorch's kernel errors (NotImplementedError naming the kernel and the dtype)
    with pytest.raises(NotImplementedError, match=f"bitwise_and_{device}.* for 'Float'"):
        tg.ones(2, device=device) & tg.ones(2, device=device)
    with pytest.raises(NotImplementedError, match=f"bitwise_xor_{device}.* 'ComplexFloat'"):
        tg.ones(2, dtype=tg.int32, device=device) ^ (1 + 2j)
    with pytest.raises(NotImplementedError, match=f"bitwise_not_{device}.* for 'Float'"):
        tg.bitwise_not(tg.ones(2, device=device))
    # ... but the ~ operator refuses floats and complex itself, with a TypeError
    for dtype in (tg.float32, tg.complex64):
        with pytest.raises(TypeError, match=r"^~ \(operator.invert\) is only implemented on "
                                            "integer and Boolean-type tensors$"):
            ~tg.ones(2, dtype=dtype, device=device)
    assert (~tg.tensor([True, False], device=device)).tolist() == [False, True]


def test_logical_ops_any_dtype(device):
    a = tg.tensor([0.0, 1.5, -2.0, 0.0], device=device)
    b = tg.tensor([3, 0, 1, 0], device=device)
    assert tg.logical_and(a, b).tolist() == [False, False, True, False]
    assert tg.logical_or(a, b).tolist() == [True, True, True, False]
    assert tg.logical_xor(a, b).tolist() == [True, True, False, False]
    assert tg.logical_not(a).tolist() == [True, False, False, True]
    assert a.logical_not().dtype is tg.bool
    with pytest.raises(TypeError, match="must be Tensor"):  # (a number: PyTorch refuses it)
        tg.logical_and(a, 1)


def test_logical_broadcasts(device):
    a = tg.tensor([[True], [False]], device=device)
    b = tg.tensor([True, False, True], device=device)
    assert tg.logical_or(a, b).shape == (2, 3)


# -- fill_ / zero_ -------------------------------------------------------------------------------

def test_fill_and_zero(device):
    x = tg.ones(2, 3, device=device)
    v = x._version
    assert x.fill_(2.5) is x and x._version == v + 1
    assert host(x).tolist() == [[2.5] * 3] * 2
    x.zero_()
    assert host(x).sum() == 0
    i = tg.zeros(3, dtype=tg.int64, device=device).fill_(2.9)
    assert i.tolist() == [2, 2, 2]
    b = tg.zeros(2, dtype=tg.bool, device=device).fill_(1)
    assert b.tolist() == [True, True]
    x.fill_(tg.tensor(4.0, device=device))
    assert host(x).tolist() == [[4.0] * 3] * 2


def test_fill_autograd(device):
    leaf = t64((2, 3), device).requires_grad_(True)
    y = leaf * 2
    y[0].fill_(1.0)
    y.sum().backward()
    np.testing.assert_array_equal(host(leaf.grad), [[0, 0, 0], [2, 2, 2]])
    val = tg.tensor(3.0, dtype=tg.float64, device=device, requires_grad=True)
    z = tg.zeros(2, 2, dtype=tg.float64, device=device)
    z.fill_(val)
    assert z.requires_grad
    (z * 2).sum().backward()
    assert host(val.grad) == 8.0
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        z.detach().fill_(tg.ones(2, device=device))


def test_inplace_unary(device):
    x = t64((3, 4), device)
    a = host(x).copy()
    x.sin_()
    np.testing.assert_allclose(host(x), np.sin(a))
    x.abs_().sigmoid_()
    np.testing.assert_allclose(host(x), _sigmoid(np.abs(np.sin(a))))
    leaf = t64((3,), device, 0.1, 1).requires_grad_(True)
    y = leaf.clone()
    y.tanh_()
    y.sum().backward()
    np.testing.assert_allclose(host(leaf.grad), 1 - np.tanh(host(leaf)) ** 2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        tg.tensor([1, 2], device=device).sin_()
    assert tg.tensor([1, 2], device=device).floor_().tolist() == [1, 2]


def test_inplace_on_leaf_requiring_grad_errors(device):
    x = tg.ones(3, device=device, requires_grad=True)
    for fn in (lambda t: t.clamp_(0, 1), lambda t: t.zero_(), lambda t: t.fill_(1.0),
               lambda t: t.sin_()):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            fn(x)


def test_type_errors(device):
    with pytest.raises(TypeError, match="must be Tensor"):
        tg.sin([1.0, 2.0])
    with pytest.raises(RuntimeError, match="not supported for bool"):
        tg.abs(tg.tensor([True], device=device))
    t, z = tg.tensor([True], device=device), tg.tensor([1 + 1j], device=device)
    with pytest.raises(NotImplementedError, match=f'"div_floor_{device}" .* for \'Bool\''):
        t // t
    for fn, kernel in ((tg.floor_divide, "div_floor"), (tg.remainder, "remainder"),
                       (tg.fmod, "fmod")):
        for a, b in ((z, z), (t, 2j), (tg.tensor([2], device=device), z)):
            with pytest.raises(NotImplementedError, match=f"{kernel}_{device}.*'Complex"):
                fn(a, b)
    with pytest.raises(NotImplementedError, match=f"div_trunc_{device}.*'ComplexFloat'"):
        tg.div(z, z, rounding_mode="trunc")
    with pytest.raises(NotImplementedError, match="remainder_.*'Bool'"):
        t.clone().remainder_(t)
    with pytest.raises(NotImplementedError, match=f"atan2_{device}.*'ComplexFloat'"):
        tg.atan2(tg.ones(1, device=device), z)
    with pytest.raises(NotImplementedError, match=f"copysign_{device}.*'ComplexFloat'"):
        tg.copysign(z, 1.0)
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
        z.clone().abs_()  # (|z| is real: it was written back as |z| + 0i)
    with pytest.raises(NotImplementedError, match=f"frac_{device}.*for 'Long'"):
        tg.frac(tg.tensor([1, 2], device=device))
    for x in (tg.tensor([1, 2], device=device), z):  # (an int input gave a float32 result)
        with pytest.raises(NotImplementedError, match=f"hardshrink_{device}"):
            tg.nn.functional.hardshrink(x)


def test_math_constants_exact(device):
    x = tg.tensor([0.0, math.pi / 2], dtype=tg.float64, device=device)
    np.testing.assert_allclose(host(x.sin()), [0.0, 1.0], atol=1e-15)


# -- derivatives at the edges (PyTorch's formulas: derivatives.yaml) -------------------------------

def _grads(fn, *values, device):
    xs = [tg.tensor(v, dtype=tg.float64, device=device, requires_grad=True) for v in values]
    fn(*xs).sum().backward()
    return [host(x.grad) for x in xs]


def test_pow_gradients_at_zero_base(device):
    inf = math.inf
    # d/da is 0 where the exponent is 0 (a ** 0 is constant, 0 ** -1 is not); d/db is 0 where
    # a == 0 and b >= 0 (the limit of a ** b log a) and -inf where b < 0 (inf * log 0)
    ga, gb = _grads(lambda a, b: a ** b, [0.0, 0.0, 0.0, 2.0], [0.0, -1.0, 2.0, 0.0],
                    device=device)
    np.testing.assert_array_equal(ga, [0.0, -inf, 0.0, 0.0])
    np.testing.assert_array_equal(gb, [0.0, -inf, 0.0, math.log(2.0)])
    gb, = _grads(lambda b: 0.0 ** b, [-1.0, 0.0, 2.0], device=device)  # a number base
    np.testing.assert_array_equal(gb, [-inf, 0.0, 0.0])


def test_maximum_minimum_relu_with_nan_and_inf(device):
    nan = math.nan
    for fn in (tg.maximum, tg.minimum):
        ga, gb = _grads(fn, [nan, 1.0, 2.0, 3.0], [1.0, nan, 2.0, 1.0], device=device)
        big_a = fn is tg.maximum
        np.testing.assert_array_equal(ga, [1.0, 1.0, 0.5, 1.0 if big_a else 0.0])
        np.testing.assert_array_equal(gb, [1.0, 1.0, 0.5, 0.0 if big_a else 1.0])
    x = tg.tensor([nan, 0.0, -1.0, 2.0], dtype=tg.float64, device=device, requires_grad=True)
    # NaN passes the gradient (0 only where relu's output is <= 0); inf * "0" stays 0
    (x.relu() * tg.tensor([1.0, math.inf, 1.0, 1.0], dtype=tg.float64, device=device)).sum() \
        .backward()
    np.testing.assert_array_equal(host(x.grad), [1.0, 0.0, 0.0, 1.0])


def test_rsqrt_signed_zero_and_gradient(device):
    x = tg.tensor([-0.0, 0.0, 4.0], dtype=tg.float64, device=device, requires_grad=True)
    y = tg.rsqrt(x)
    assert y.grad_fn.name() == "RsqrtBackward0"
    np.testing.assert_array_equal(host(y), [-math.inf, math.inf, 0.5])
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [math.inf, -math.inf, -0.0625])
    assert_grads_match(tg.rsqrt, [t64((3, 2), device, 0.5, 2.0)])
    second_order(tg.rsqrt, t64((4,), device, 0.5, 2.0))


def test_bool_arithmetic_keeps_bool_as_pytorch(device):
    b = tg.tensor([True, False], device=device)
    for out, want in ((b + True, [True, True]), (b + False, [True, False]),
                      (tg.add(b, b, alpha=2), [True, False]),
                      (tg.add(b, tg.tensor([True, True], device=device), alpha=0),
                       [True, False]),
                      (b ** True, [True, False]), (b ** False, [True, True])):
        assert out.dtype is tg.bool and host(out).tolist() == want
    assert (b + 1).dtype is tg.int64 and (b ** 2).dtype is tg.int64
    with pytest.raises(NotImplementedError, match="pow"):
        b ** b
    f = tg.tensor([1.0, 2.0], device=device)
    for fn in (lambda: b - f, lambda: f - b, lambda: f - True, lambda: b - 1):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
            fn()
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        tg.relu(b)


def test_where_with_the_condition_alone_is_nonzero(device):
    cond = tg.tensor([[True, False], [False, True]], device=device)
    rows, cols = tg.where(cond)
    assert host(rows).tolist() == [0, 1] and host(cols).tolist() == [0, 1]
    with pytest.raises(TypeError, match="condition alone"):
        tg.where(cond, 1.0)


def test_fmod_takes_the_sign_of_the_dividend(device):
    a = np.array([5.5, -5.5, 7.25, -7.25, 1e10, 0.0])
    b = np.array([2.0, 2.0, -3.0, -3.0, 3.3, 1.5])
    got = tg.fmod(tg.tensor(a, device=device), tg.tensor(b, device=device))
    np.testing.assert_array_equal(got.cpu().numpy(), np.fmod(a, b))  # exact, as C's fmod
    i = tg.tensor([7, -7, 7, -7], device=device)
    assert tg.fmod(i, tg.tensor([3, 3, -3, -3], device=device)).cpu().tolist() == [1, -1, 1, -1]
    assert tg.remainder(i, 3).cpu().tolist() == [1, 2, 1, 2]  # (the divisor's sign)
    x = tg.tensor([5.0, -3.0], device=device)
    assert x.fmod_(2).cpu().tolist() == [1.0, -1.0]
    with pytest.raises(RuntimeError, match="integer division by zero in fmod"):
        tg.fmod(tg.tensor([1, 2], device=device), 0)
