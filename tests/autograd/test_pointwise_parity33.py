"""Pointwise math and type promotion against PyTorch's rules (session 33's sweep): gradients at
the special points, in-place refusals of results that cannot be cast back, out= dtype rules,
alpha checks and the kernels' errors. Expected values are computed independently (float64
NumPy, finite differences, explicit numbers); a torch comparison runs where torch is
installed."""

import math

import numpy as np
import pytest

import tritongrad as tg


def _grad(fn, values, dtype=tg.float64):
    x = tg.tensor(values, dtype=dtype, requires_grad=True)
    y = fn(x)
    y = y.real if y.dtype.is_complex else y
    y.backward(tg.ones_like(y))  # (not y.sum(): atanh(-1) + atanh(1) would be inf - inf)
    return x.grad


# -- gradients at the special points ---------------------------------------------------------------

def test_inverse_trig_gradients_at_the_domain_edges_are_the_inner_limits():
    # asin'(x) = 1 / sqrt(1 - x^2) -> +inf at x = +-1 (from inside), acos' = -asin',
    # atanh'(x) = 1 / (1 - x^2) -> +inf; 1 - x^2 must be +0 there, not -0 (which gave -inf)
    edges = [-1.0, 1.0]
    assert _grad(tg.asin, edges).tolist() == [math.inf, math.inf]
    assert _grad(tg.acos, edges).tolist() == [-math.inf, -math.inf]
    assert _grad(tg.atanh, edges).tolist() == [math.inf, math.inf]
    inner = [-0.5, 0.25]
    np.testing.assert_allclose(_grad(tg.asin, inner).numpy(),
                               1 / np.sqrt(1 - np.array(inner) ** 2), rtol=1e-12)


def test_complex_asin_gradient_on_the_branch_cut_follows_the_forward():
    # asin(2 + 0j) is on the cut; the gradient of Re(asin(z)) is conj(f'(z)) with f' the
    # derivative of the forward along the real axis (its finite difference)
    z = np.array([2 + 0j, -2 + 0j, 0.3 + 0.4j])
    h = 1e-6
    fd = (np.arcsin(z + h) - np.arcsin(z - h)) / (2 * h)
    for op, sign in ((tg.asin, 1), (tg.acos, -1)):
        g = _grad(op, z.tolist(), tg.complex128).numpy()
        np.testing.assert_allclose(g, sign * np.conj(fd), rtol=1e-6)


def test_abs_sign_pow_clamp_maximum_gradients_at_special_points():
    assert _grad(tg.abs, [0.0, -0.0, 2.0]).tolist() == [0.0, 0.0, 1.0]
    assert _grad(lambda x: x ** 2, [0.0]).tolist() == [0.0]
    assert _grad(lambda x: x ** 0, [0.0]).tolist() == [0.0]
    assert _grad(lambda x: x.clamp(-1, 1), [-1.0, 1.0, 2.0]).tolist() == [1.0, 1.0, 0.0]
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([1.0, 1.0], requires_grad=True)
    tg.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 1.0] and b.grad.tolist() == [0.5, 0.0]


# -- in-place ops whose result cannot be cast back -------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: tg.tensor([1.5]).div_(1j),
     "result type ComplexFloat can't be cast to the desired output type Float"),
    (lambda: tg.tensor([1.5]).mul_(1j),
     "result type ComplexFloat can't be cast to the desired output type Float"),
    (lambda: tg.tensor([4]).pow_(0.5),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: tg.tensor([4]).pow_(tg.tensor([0.5])),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: tg.tensor([True]).pow_(2),
     "result type Long can't be cast to the desired output type Bool"),
    (lambda: tg.tensor([4]).bitwise_and_(2.5),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: tg.tensor([True]).bitwise_or_(2),
     "result type Long can't be cast to the desired output type Bool"),
    (lambda: tg.tensor([4]).exp_(),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: tg.tensor([4]).floor_divide_(tg.tensor([1.5])),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: tg.tensor([4]).clamp_(0.5),
     "result type Float can't be cast to the desired output type Long"),
    (lambda: tg.tensor([3], dtype=tg.uint8).pow_(-1),
     "Integers to negative integer powers are not allowed."),
    (lambda: tg.tensor([1.0]).sub_(True), "Subtraction, the `-` operator, with a bool tensor"),
    (lambda: tg.tensor([True]).sub_(tg.tensor([True])),
     "Subtraction, the `-` operator, with two bool tensors"),
    (lambda: tg.tensor([1, 2]).add(tg.tensor([1, 2]), alpha=0.5),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda: tg.tensor([1.0]).add(1, alpha=True),
     "Boolean alpha only supported for Boolean results."),
    (lambda: tg.tensor([1.0]).add(tg.tensor([1.0]), alpha=1j),
     "For non-complex input tensors, argument alpha must not be a complex number."),
    (lambda: tg.tensor([True]).__ilshift__(2),
     "result type Long can't be cast to the desired output type Bool"),
    (lambda: tg.tensor([True]).gcd_(tg.tensor([2])),
     "result type Long can't be cast to the desired output type Bool"),
    (lambda: tg.float_power(tg.tensor([2.0]), 2, out=tg.empty(0)),
     "the output given to float_power has dtype Float but the operation's result requires "
     "dtype Double"),
    (lambda: tg.heaviside(tg.tensor([1.0]), tg.tensor([0.5]), out=tg.empty(0, dtype=tg.int64)),
     "heaviside is not yet implemented for tensors with different dtypes"),
    (lambda: tg.tensor([1, 2]).eq_(tg.tensor([[1, 2], [3, 4]])),
     r"output with shape \[2\] doesn't match the broadcast shape \[2, 2\]"),
])
def test_inplace_and_alpha_refusals(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_inplace_values_computed_in_the_promoted_dtype():
    # uint8 ** int64: int64 math, then the cast (3 ** -2 is 0), not 3 ** 254 in uint8
    a = tg.tensor([3, 2], dtype=tg.uint8)
    a **= tg.tensor([-2, 3])
    assert a.tolist() == [0, 8] and a.dtype is tg.uint8
    # an int alpha wraps into the tensor's dtype, as a scalar operand does: 1 + 255 * 2 = 255
    b = tg.tensor([1, 10], dtype=tg.uint8).add_(tg.tensor([2, 3], dtype=tg.int8), alpha=-1)
    assert b.tolist() == [255, 7]
    assert tg.add(tg.tensor([1, 10], dtype=tg.uint8), tg.tensor([2, 3], dtype=tg.uint8),
                  alpha=-1).tolist() == [255, 7]
    assert tg.tensor([True, False]).pow_(False).tolist() == [True, True]
    # bool + alpha * bool is a logical or whatever the alpha's value (alpha=-1 gave False)
    t = tg.tensor([True, False, True, False]).add_(tg.tensor([True, True, False, False]),
                                                   alpha=-1)
    assert t.tolist() == [True, True, True, False]
    c = tg.tensor([12, -7])
    c <<= 1
    assert c.tolist() == [24, -14]
    assert c.gcd_(tg.tensor([18, 21])).tolist() == [6, 7]


def test_kernel_errors_name_the_kernel_not_numpy():
    with pytest.raises(NotImplementedError, match="\"abs_cpu\" not implemented for 'Bool'"):
        tg.abs(tg.tensor([True]))
    with pytest.raises(NotImplementedError, match="\"floor_vml_cpu\" not implemented for 'Bool'"):
        tg.tensor([True]).floor_()
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for"):
        tg.tensor([1.0]).bitwise_and_(tg.tensor([1.0]))
    with pytest.raises(TypeError, match="fmod"):
        tg.fmod(2, tg.tensor([3.0]))
    assert tg.remainder(5, tg.tensor([3.0])).tolist() == [2.0]  # (remainder has that overload)


# -- out= ------------------------------------------------------------------------------------------

def test_out_dtype_rules():
    x = tg.tensor([-1.5, 2.0])
    for op in (tg.abs, tg.neg, tg.floor, tg.sign, tg.trunc, tg.sgn, tg.conj_physical):
        with pytest.raises(RuntimeError, match="Found dtype Long but expected Float"):
            op(x, out=tg.empty(0, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Long"):
        tg.bitwise_not(tg.tensor([1]), out=tg.empty(0))
    for op in (tg.signbit, tg.isposinf, tg.isneginf):
        with pytest.raises(RuntimeError, match="does not support non-boolean outputs"):
            op(x, out=tg.empty(0))
    # ops that promote may write into another floating dtype (a cast)
    o = tg.empty(0)
    tg.sin(tg.tensor([0.5], dtype=tg.float64), out=o)
    assert o.dtype is tg.float32 and abs(o.item() - math.sin(0.5)) < 1e-7
    for op, expected in ((tg.rsqrt, [0.5, 1.0]), (tg.reciprocal, [0.25, 1.0])):
        o = tg.empty(0)
        assert op(tg.tensor([4.0, 1.0]), out=o) is o and o.tolist() == expected
    o = tg.empty(0)
    tg.angle(tg.tensor([-1.0, 1.0]), out=o)
    assert o.tolist() == pytest.approx([math.pi, 0.0])
    o = tg.empty(0, dtype=tg.complex64)
    tg.sgn(tg.tensor([3 + 4j]), out=o)
    assert o.tolist() == [pytest.approx(0.6 + 0.8j)]


# -- scalar operands -------------------------------------------------------------------------------

def test_scalar_operands_that_do_not_fit_the_dtype():
    # copysign reads only the sign of a number; 300 << uint8 wraps the number (300 -> 44)
    assert tg.copysign(tg.tensor([1.0, -2.0]), -1e40).tolist() == [-1.0, -2.0]
    r = tg.bitwise_left_shift(300, tg.tensor([1, 2], dtype=tg.uint8))
    assert r.tolist() == [88, 176] and r.dtype is tg.uint8
    # ldexp of an integer or bool input promotes before the kernel: a bool exponent is fine
    assert tg.ldexp(tg.tensor([True, False]), tg.tensor([True, True])).tolist() == [2.0, 0.0]


# -- against torch ---------------------------------------------------------------------------------

def _run(lib, fn):
    try:
        r = fn(lib)
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e).split("\n")[0][:30]
    if isinstance(r, (list, tuple)):
        r = r[0]
    return str(r.dtype).split(".")[-1], np.asarray(r.detach().double().numpy()).tolist()


_CASES = [
    lambda L: L.tensor([1.5]).div_(1j),
    lambda L: L.tensor([4]).pow_(L.tensor([0.5])),
    lambda L: L.tensor([True]).pow_(2),
    lambda L: L.tensor([3, 2], dtype=L.uint8).pow_(L.tensor([-2, 3])),
    lambda L: L.tensor([4]).bitwise_xor_(2.5),
    lambda L: L.tensor([1, 2]).sub(L.tensor([1, 2]), alpha=0.5),
    lambda L: L.tensor([1, 10], dtype=L.uint8).sub_(L.tensor([2, 3], dtype=L.int8), alpha=-1),
    lambda L: L.abs(L.tensor([-1.0]), out=L.empty(0, dtype=L.int64)),
    lambda L: L.signbit(L.tensor([-1.0]), out=L.empty(0)),
    lambda L: L.rsqrt(L.tensor([4.0]), out=L.empty(0, dtype=L.float64)),
    lambda L: L.tensor([True]).abs(),
    lambda L: L.copysign(L.tensor([1.0]), -1e40),
    lambda L: L.bitwise_right_shift(300, L.tensor([1], dtype=L.uint8)),
    lambda L: L.tensor([2]) ** L.tensor([3.0]),
    lambda L: L.tensor([2], dtype=L.uint8) + L.tensor(1, dtype=L.int64),
    lambda L: L.tensor([2.0], dtype=L.float16) * L.tensor(2.0, dtype=L.float64),
]


@pytest.mark.parametrize("i", range(len(_CASES)))
def test_against_torch(i):
    torch = pytest.importorskip("torch")
    assert _run(tg, _CASES[i]) == _run(torch, _CASES[i])


def test_edge_gradients_against_torch():
    torch = pytest.importorskip("torch")
    for name in ("asin", "acos", "atanh", "abs", "sign", "sqrt"):
        vals = [-1.0, 0.0, 0.5, 1.0]
        ours = _grad(getattr(tg, name), vals).tolist()
        x = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
        getattr(torch, name)(x).sum().backward()
        np.testing.assert_allclose(ours, x.grad.tolist(), rtol=1e-15, err_msg=name)


def test_digamma_at_signed_zeros_is_the_limit_from_each_side():
    # psi(x) -> -inf as x -> 0+ and +inf as x -> 0- (SciPy's and PyTorch's)
    got = tg.digamma(tg.tensor([-0.0, 0.0, -2.0], dtype=tg.float64)).tolist()
    assert got[0] == float("inf") and got[1] == float("-inf") and got[2] != got[2]


def test_half_mul_and_div_read_a_number_in_float32_add_and_sub_in_half():
    # PyTorch's mul/div kernels read a number operand in float32 (their opmath type for half)
    # and round once; add/sub round it to float16 first
    x = np.array([1.0, 3.0, 0.3, 1000.0], np.float16)
    t = tg.tensor(x)
    f32 = x.astype(np.float32)
    np.testing.assert_array_equal((t / 0.7).numpy(), (f32 / np.float32(0.7)).astype(np.float16))
    np.testing.assert_array_equal((t * 0.1).numpy(), (f32 * np.float32(0.1)).astype(np.float16))
    np.testing.assert_array_equal((t + 0.1).numpy(), x + np.float16(0.1))
    np.testing.assert_array_equal((t - 0.3).numpy(), x - np.float16(0.3))
    y = t.clone()
    y.div_(0.7)
    assert y.dtype is tg.float16 and y.tolist()[0] == 1.4287109375  # (NumPy's: 1.427734375)
    torch = pytest.importorskip("torch")
    v = np.random.default_rng(0).standard_normal(500).astype(np.float16)
    for op in ("add", "sub", "mul", "div"):
        for s in (0.1, 0.7, 3.3, -2.5):
            np.testing.assert_array_equal(getattr(tg, op)(tg.tensor(v), s).numpy(),
                                          getattr(torch, op)(torch.tensor(v), s).numpy())


def test_fmax_fmin_write_out_and_send_ties_to_input():
    nan = float("nan")
    a = tg.tensor([1.0, 5.0, nan, 2.0, nan], requires_grad=True)
    b = tg.tensor([3.0, 2.0, 1.0, 2.0, nan], requires_grad=True)
    tg.fmax(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, 1.0, 0.0, 1.0, 1.0]  # (the tie at 2 all to input)
    assert b.grad.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]
    a.grad = b.grad = None
    r = tg.fmin(a, b)
    r.sum().backward()
    assert r.detach().tolist()[:4] == [1.0, 2.0, 1.0, 2.0]
    assert a.grad.tolist() == [1.0, 0.0, 0.0, 1.0, 1.0]
    out = tg.empty(2)
    assert tg.fmax(tg.tensor([1.0, 5.0]), tg.tensor([3.0, 2.0]), out=out) is out
    assert out.tolist() == [3.0, 5.0]
