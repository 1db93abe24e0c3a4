"""Complex tensors against PyTorch 2.13 (session 34's sweep): isinf/isfinite of complex values,
complex powers with PyTorch's special exponents (z ** 0.5, ** -0.5, ** -1 at infinities), the
dtype checks of ``complex``/``polar``, polar's gradient where abs <= 0 (PyTorch's is wrong
there: finite differences decide), the real/imag setters, branch cuts against float64 NumPy,
Wirtinger gradients with both kinds of real loss, real inputs meeting complex values, and
gradcheck of complex functions in both modes."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import gradcheck
from tritongrad.autograd.ops import complex_parts

inf, nan = float("inf"), float("nan")
SPECIAL = np.array([0j, -1 + 0j, -1 - 0.0j, 1j, 2 + 0j, complex(inf, 0), complex(0, inf),
                    complex(-inf, 1), complex(nan, 0), complex(1, nan), complex(inf, nan),
                    1e308 + 1e308j, 1e-30 + 1e-30j, complex(-1.5, -0.0)])


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("dt", [tg.complex64, tg.complex128])
def test_isinf_isfinite_look_at_both_parts(dt):
    # (each part on its own: |big + big j| overflows, yet the value is finite)
    big = 3e38 if dt is tg.complex64 else 1e308
    want = np.where(SPECIAL == 1e308 + 1e308j, big + big * 1j, SPECIAL).astype(
        np.complex64 if dt is tg.complex64 else np.complex128)
    z = tg.tensor(want)
    assert z.dtype is dt
    np.testing.assert_array_equal(_np(tg.isinf(z)), np.isinf(want))
    np.testing.assert_array_equal(_np(tg.isfinite(z)), np.isfinite(want))
    np.testing.assert_array_equal(_np(tg.isnan(z)), np.isnan(want))
    assert tg.isinf(z).dtype is tg.bool and tg.isfinite(z).shape == z.shape


def test_isinf_isfinite_of_complex_with_grad_are_detached():
    z = tg.tensor(SPECIAL, requires_grad=True)
    assert not tg.isinf(z).requires_grad and not tg.isfinite(z).requires_grad


@pytest.mark.parametrize("e, ref", [
    (0.5, np.sqrt),
    (-0.5, lambda z: 1 / np.sqrt(z)),
    (-1, lambda z: 1 / z),
])
def test_complex_pow_special_exponents_match_sqrt_rsqrt_reciprocal(e, ref):
    # PyTorch computes these as sqrt / rsqrt / reciprocal; exp(e log z) would give NaN at
    # infinities (inf ** -1 must be 0, not nan + nanj)
    with np.errstate(all="ignore"):
        want = ref(SPECIAL)
    got = _np(tg.tensor(SPECIAL) ** e)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0, equal_nan=True)


def test_reciprocal_and_rsqrt_of_complex_infinities():
    z = tg.tensor(np.array([complex(inf, 0), complex(0, inf), complex(-inf, 1), 3 + 4j]))
    np.testing.assert_allclose(_np(z.reciprocal()), [0, 0, 0, (3 - 4j) / 25], atol=0)
    np.testing.assert_allclose(_np(z.rsqrt())[[0, 2, 3]], [0, 0, 1 / np.sqrt(3 + 4j)], atol=0)
    z64 = z.to(tg.complex64)
    assert z64.reciprocal().dtype is tg.complex64 and (z64 ** -1).dtype is tg.complex64


def test_complex_pow_special_exponents_keep_their_gradients():
    zv = np.array([1 + 2j, -0.5 + 0.25j, -3 - 1j])
    v = np.array([0.3 - 1j, 2 + 0.5j, -1 + 1j])
    for e, deriv in [(0.5, lambda z: 0.5 / np.sqrt(z)), (-1, lambda z: -1 / z ** 2),
                     (-0.5, lambda z: -0.5 * z ** -1.5)]:
        z = tg.tensor(zv, requires_grad=True)
        ((z ** e) * tg.tensor(v)).real.sum().backward()
        # L = Re(v f(z)): dL/dx + i dL/dy = conj(v f'(z))
        np.testing.assert_allclose(z.grad.numpy(), np.conj(v * deriv(zv)), rtol=1e-12)


@pytest.mark.parametrize("fn", ["complex", "polar"])
def test_complex_and_polar_check_floating_before_same_dtype(fn):
    f = getattr(tg, fn)
    d, c = tg.ones(2, dtype=tg.float64), tg.ones(2, dtype=tg.complex128)
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double "
                                           "tensors but got Double and ComplexDouble"):
        f(d, c)
    with pytest.raises(RuntimeError, match="but got ComplexDouble and Double"):
        f(c, d)
    with pytest.raises(RuntimeError, match="but got Float and Long"):
        f(tg.ones(2), tg.ones(2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got "
                                           "scalar type Double for second argument"):
        f(tg.ones(2), d)


def test_polar_gradient_is_right_where_abs_is_not_positive():
    # PyTorch's polar_backward uses sgn(result) for d/d abs, which flips its sign where
    # abs < 0 and is 0 at abs = 0; the derivative is e^(i angle) everywhere (finite
    # differences below; PyTorch's own gradcheck fails its polar there)
    r, th = np.array([-1.5, 0.0, 2.0]), np.array([0.3, -1.2, 2.0])
    v = np.array([1 + 2j, -0.5 + 1j, 0.3 - 0.7j])
    a, b = tg.tensor(r, requires_grad=True), tg.tensor(th, requires_grad=True)
    (tg.polar(a, b) * tg.tensor(v)).real.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.real(v * np.exp(1j * th)), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), np.real(v * 1j * r * np.exp(1j * th)),
                               rtol=1e-12, atol=1e-15)
    assert gradcheck(tg.polar, (a, b), fast_mode=False)


def test_set_real_and_set_imag_write_in_place_with_gradient():
    z = tg.tensor([1 + 2j, 3 - 1j])
    complex_parts.set_real(z, tg.tensor([9.0]))
    complex_parts.set_imag(z, 5)
    assert _np(z).tolist() == [9 + 5j, 9 + 5j]
    x = tg.tensor([1.0, 2.0])
    complex_parts.set_real(x, 7)
    assert _np(x).tolist() == [7.0, 7.0]
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        complex_parts.set_imag(x, 1)
    w = tg.tensor([1 + 2j], requires_grad=True).clone()
    v = tg.tensor([4.0], dtype=tg.float64, requires_grad=True)
    complex_parts.set_imag(w, v)
    (w * tg.tensor([2 + 3j])).real.sum().backward()
    assert v.grad.dtype is tg.float64 and v.grad.tolist() == [-3.0]
    assert w.dtype is tg.complex64  # (a float64 part written into complex64)  # Re(c i) = -Im c


def test_real_and_imag_properties_have_setters():
    z = tg.tensor([1 + 2j])
    z.real = tg.tensor([9.0])
    z.imag = 4
    assert _np(z).tolist() == [9 + 4j]


# -- branch cuts, against float64 NumPy -------------------------------------------------------

_CUT = np.array([complex(x, s) for x in (-3.0, -1.5, -0.5, 0.5, 1.5, 3.0) for s in (0.0, -0.0)]
                + [complex(s, y) for y in (-3.0, -1.5, -0.5, 0.5, 1.5, 3.0) for s in (0.0, -0.0)])
_CUT_OPS = {"sqrt": np.sqrt, "log": np.log, "log2": np.log2, "log10": np.log10,
            "log1p": np.log1p, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
            "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
            "rsqrt": lambda z: 1 / np.sqrt(z), "angle": np.angle}


@pytest.mark.parametrize("name", sorted(_CUT_OPS))
@pytest.mark.parametrize("dt", [tg.complex64, tg.complex128])
def test_branch_cuts_follow_the_sign_of_zero_as_numpy(name, dt):
    z = _CUT.astype(np.complex64 if dt is tg.complex64 else np.complex128)
    with np.errstate(all="ignore"):
        want = _CUT_OPS[name](z.astype(np.complex128))
    got = _np(getattr(tg, name)(tg.tensor(z))).astype(want.dtype)
    tol = 1e-5 if dt is tg.complex64 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if np.iscomplexobj(want):  # (the side of the cut: the imaginary part's sign)
        side = want.imag != 0
        np.testing.assert_array_equal(np.signbit(got.imag)[side], np.signbit(want.imag)[side])


def test_complex_power_branch_cut():
    z = np.array([complex(-4, 0.0), complex(-4, -0.0), complex(-1, 0.0), 2j])
    for e in (1 / 3, 1j, 0.5 + 0.5j):
        np.testing.assert_allclose(_np(tg.tensor(z) ** e), z ** e, rtol=1e-12)


# -- Wirtinger gradients, both losses ------------------------------------------------------

ZV = np.array([[0.7 + 0.4j, -1.2 + 0.3j, 0.5 - 0.9j], [-0.3 - 0.6j, 1.1 + 0.2j, 0.2 + 0.8j]])
VV = np.array([[1 - 2j, 0.5 + 0.5j, -1 + 0.3j], [0.2 + 1j, -0.7 - 0.1j, 1.5 - 0.4j]])
_HOLO = {  # f, f'
    "exp": (np.exp, np.exp), "log": (np.log, lambda z: 1 / z), "sin": (np.sin, np.cos),
    "tanh": (np.tanh, lambda z: 1 - np.tanh(z) ** 2), "sqrt": (np.sqrt, lambda z: 0.5 / np.sqrt(z)),
    "asin": (np.arcsin, lambda z: 1 / np.sqrt(1 - z * z)),
    "acosh": (np.arccosh, lambda z: 1 / (np.sqrt(z - 1) * np.sqrt(z + 1))),
    "reciprocal": (lambda z: 1 / z, lambda z: -1 / z ** 2),
    "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda z: np.exp(-z) / (1 + np.exp(-z)) ** 2),
    "square": (lambda z: z * z, lambda z: 2 * z),
}


@pytest.mark.parametrize("name", sorted(_HOLO))
def test_holomorphic_gradients_for_both_kinds_of_loss(name):
    f, df = _HOLO[name]
    z = tg.tensor(ZV, requires_grad=True)
    y = getattr(tg, name)(z)
    np.testing.assert_allclose(_np(y), f(ZV), rtol=1e-12)
    (g_lin,) = tg.autograd.grad((y * tg.tensor(VV)).real.sum(), z)
    np.testing.assert_allclose(g_lin.numpy(), np.conj(VV * df(ZV)), rtol=1e-10)
    (g_abs,) = tg.autograd.grad((getattr(tg, name)(z).abs() ** 2).sum(), z)
    # L = |f|^2: dL/dx + i dL/dy = 2 f conj(f')
    np.testing.assert_allclose(g_abs.numpy(), 2 * f(ZV) * np.conj(df(ZV)), rtol=1e-10)


def test_abs_angle_sgn_gradients_at_zero_are_zero():
    z = tg.tensor([0j, 3 + 4j], dtype=tg.complex128, requires_grad=True)
    for f, at_34 in [(tg.abs, (3 + 4j) / 5), (tg.angle, 1j * (3 + 4j) / 25)]:
        (g,) = tg.autograd.grad(f(z).sum(), z)
        np.testing.assert_allclose(g.numpy(), [0, at_34], rtol=1e-12)
    (g,) = tg.autograd.grad((tg.sgn(z) * tg.tensor([1 + 1j, 1 + 1j])).real.sum(), z)
    assert g[0].item() == 0 and np.isfinite(g.numpy()).all()


@pytest.mark.parametrize("op", ["mul", "div", "matmul", "polar", "where"])
def test_real_input_meeting_complex_values_gets_a_real_gradient(op):
    x = tg.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=tg.float64, requires_grad=True)
    w = tg.tensor(ZV, requires_grad=True)
    xv = x.detach().numpy()
    if op == "mul":
        y, dx = x * w, VV * ZV
    elif op == "div":
        y, dx = w / x, -VV * ZV / xv ** 2
    elif op == "matmul":
        # (PyTorch's matmul refuses mixed dtypes: the cast's gradient is the real part)
        y, dx = x.to(w.dtype) @ w.mT, VV[:, :2] @ ZV
    elif op == "polar":
        y, dx = tg.polar(x, x), VV * (np.exp(1j * xv) + 1j * xv * np.exp(1j * xv))
    else:
        y, dx = tg.where(x > 0, x, w), np.where(xv > 0, VV, 0)
    v = tg.tensor(VV[:, :y.shape[1]])
    gx, gw = tg.autograd.grad((y * v).real.sum(), (x, w), allow_unused=True)
    assert gx.dtype is tg.float64 and gx.shape == x.shape
    np.testing.assert_allclose(gx.numpy(), np.real(dx), rtol=1e-10, atol=1e-14)
    if gw is not None:
        assert gw.dtype is tg.complex128


def test_view_as_complex_and_view_as_real_rules():
    x = tg.zeros(3, 4)
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        tg.view_as_complex(x)
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension with stride 1"):
        tg.view_as_complex(tg.zeros(2, 3).t())
    with pytest.raises(RuntimeError, match="Tensor must have a stride divisible by 2"):
        tg.view_as_complex(tg.zeros(3, 3)[:, :2])
    with pytest.raises(RuntimeError, match="Tensor must have a storage_offset divisible by 2"):
        tg.view_as_complex(tg.zeros(10)[1:9].view(4, 2))
    with pytest.raises(RuntimeError, match="Input tensor must have one or more dimensions"):
        tg.view_as_complex(tg.tensor(1.0))
    with pytest.raises(RuntimeError, match="view_as_complex is only supported for half, "
                                           "float and double tensors"):
        tg.view_as_complex(tg.zeros(3, 2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex"):
        tg.view_as_real(x)
    z = tg.zeros(3, 4, dtype=tg.complex64)
    assert tg.view_as_real(z.t()).stride() == (2, 8, 1)
    assert tg.view_as_real(z[1:, 1:]).storage_offset() == 10
    assert tg.view_as_complex(tg.zeros(3, 4)[1:, 2:]).storage_offset() == 3
    z.real.fill_(2)
    z.imag[1].fill_(5)
    assert _np(z)[:, 0].tolist() == [2, 2 + 5j, 2]
    tg.view_as_real(z)[0, 0, 1] = -1
    assert z[0, 0].item() == 2 - 1j


def test_writes_through_real_and_imag_reach_the_gradient():
    z = tg.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    w = z.clone()
    w.imag.mul_(3)
    v = np.array([1 + 2j, 3 - 1j])
    (g,) = tg.autograd.grad((w * tg.tensor(v)).real.sum(), z)
    # w = x + 3iy: dL/dx = Re v, dL/dy = Re(3 i v) = -3 Im v
    np.testing.assert_allclose(g.numpy(), v.real - 3j * v.imag)


def test_casting_complex_to_real_warns_and_drops_the_imaginary_part():
    z = tg.tensor([1 + 2j])
    with pytest.warns(Warning, match="Casting complex values to real discards the imaginary"):
        r = z.to(tg.float64)
    assert r.tolist() == [1.0]


def test_comparisons_and_orderings_refuse_complex():
    z = tg.tensor([1 + 1j, 2j])
    with pytest.raises(NotImplementedError, match="\"lt_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        z < z  # noqa: B015
    with pytest.raises(RuntimeError, match="Sort does not support complex dtypes"):
        z.sort()
    with pytest.raises(NotImplementedError, match="\"max_all\" not implemented"):
        z.max()
    with pytest.raises(RuntimeError, match="maximum not implemented for complex tensors"):
        tg.maximum(z, z)
    with pytest.raises(RuntimeError, match="argmax\\(\\): does not support complex input"):
        z.argmax()


def test_lazy_conjugation_queries():
    z = tg.tensor([1 + 2j])
    c = z.conj()
    # (tritongrad's conj is eager: no conjugate bit; the values are PyTorch's)
    assert c.tolist() == [1 - 2j] and not c.is_conj() and not z.is_neg()
    assert c.resolve_conj().tolist() == [1 - 2j] and z.resolve_neg() is z
    x = tg.tensor([1.0])
    assert x.conj() is x and tg.conj_physical(x) is x


@pytest.mark.parametrize("fast", [False, True])
def test_gradcheck_of_complex_functions(fast):
    rng = np.random.default_rng(3)
    c = tg.tensor(rng.standard_normal(3) + 1j * rng.standard_normal(3), requires_grad=True)
    c2 = tg.tensor(rng.standard_normal(3) + 1j * rng.standard_normal(3), requires_grad=True)
    r = tg.tensor(rng.standard_normal(3), requires_grad=True)
    for f, ins in [(lambda z: z.sqrt(), (c,)), (lambda z: z ** -1, (c,)),
                   (lambda z: z.abs(), (c,)), (lambda z: z.angle(), (c,)),
                   (lambda z: z.sgn(), (c,)), (lambda a, b: a ** b, (c, c2)),
                   (lambda x, w: x * w, (r, c)), (lambda a, b: tg.polar(a, b), (r, r)),
                   (lambda z: tg.view_as_real(z), (c,)), (lambda z: z.var(), (c,))]:
        assert gradcheck(f, ins, fast_mode=fast)


# -- fixes that were made outside the sweep's files --------------------------------------------

@pytest.mark.parametrize("op", ["masked_select", "take", "index_fill", "index_copy"])
def test_element_moving_ops_differentiate_complex(op):
    z = tg.tensor(ZV, requires_grad=True)
    if op == "masked_select":
        y, back = z.masked_select(tg.tensor(ZV.real > 0)), lambda g: np.where(ZV.real > 0, 1, 0)
    elif op == "take":
        y, back = z.take(tg.tensor([0, 4])), lambda g: np.eye(6)[[0, 4]].sum(0).reshape(2, 3)
    elif op == "index_fill":
        y, back = z.index_fill(1, tg.tensor([0]), 2j), lambda g: np.array([[0, 1, 1]] * 2)
    else:
        y, back = z.index_copy(0, tg.tensor([1, 0]), z * 2), lambda g: np.full((2, 3), 2)
    (g,) = tg.autograd.grad(y.real.sum(), z)  # (Re: each kept element's weight, real)
    np.testing.assert_allclose(g.numpy(), back(None))


def test_reshape_of_a_non_contiguous_complex_tensor_differentiates():
    z = tg.tensor(ZV, requires_grad=True)
    (g,) = tg.autograd.grad((z.t().reshape(-1) * tg.tensor(VV.T.reshape(-1))).real.sum(), z)
    np.testing.assert_allclose(g.numpy(), np.conj(VV))


def test_nan_to_num_of_complex_replaces_each_part():
    z = tg.tensor(np.array([complex(nan, inf), complex(-inf, 1), complex(1, nan)]))
    big = np.finfo(np.float64).max
    np.testing.assert_array_equal(_np(tg.nan_to_num(z)), [complex(0, big), complex(-big, 1), 1])


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    v = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    for f in [lambda T, z: z ** 0.5, lambda T, z: z ** -1, lambda T, z: T.sgn(z),
              lambda T, z: T.angle(z), lambda T, z: z.abs() * z, lambda T, z: T.asin(z),
              lambda T, z: T.view_as_complex(T.view_as_real(z).flip(-1)),
              lambda T, z: z.prod(1, keepdim=True) * z.cumsum(0)]:
        grads = []
        for T in (torch, tg):
            z = T.tensor(a, requires_grad=True)
            y = f(T, z)
            (g,) = T.autograd.grad((y * T.tensor(v)).real.sum() + (y.abs() ** 2).sum(), z)
            grads.append((y.detach().numpy(), g.numpy()))
        np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-10, atol=1e-12)
    for name in ("isinf", "isfinite", "isnan"):
        np.testing.assert_array_equal(_np(getattr(tg, name)(tg.tensor(SPECIAL))),
                                      getattr(torch, name)(torch.tensor(SPECIAL)).numpy())
