"""angle, sgn, complex, polar and complex random numbers (autograd/ops/complex_parts.py,
ops/creation.py): values against NumPy in complex128, gradients against hand-derived
Wirtinger values (PyTorch's convention: dL/dx + i dL/dy) and gradcheck through real views."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import gradcheck, gradgradcheck

Z = np.array([1 + 2j, -3 - 1j, -0.5 + 0.25j, 0j, -2 + 0j])


def z128(values=Z):
    return tg.tensor(values, dtype=tg.complex128, requires_grad=True)


def test_angle_of_complex_values_and_its_gradient():
    z = z128()
    a = tg.angle(z)
    assert a.dtype is tg.float64
    np.testing.assert_allclose(a.detach().numpy(), np.angle(Z))
    a.sum().backward()
    # d angle = (x dy - y dx) / |z|^2: dL/dx + i dL/dy = (-y + i x) / |z|^2 = i z / |z|^2,
    # and 0 at z = 0 as PyTorch
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.where(Z == 0, 0, 1j * Z / np.abs(Z) ** 2)
    np.testing.assert_allclose(z.grad.numpy(), want)


def test_angle_of_real_values_is_piecewise_constant():
    x = tg.tensor([-1.0, -0.0, 0.0, 2.0, float("nan"), float("-inf"), float("inf")],
                  dtype=tg.float64, requires_grad=True)
    a = x.angle()
    got = a.detach().numpy()
    np.testing.assert_array_equal(got[[0, 5]], [np.pi, np.pi])
    np.testing.assert_array_equal(got[[1, 2, 3, 6]], [0.0, 0.0, 0.0, 0.0])
    assert np.isnan(got[4])
    a.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(7))
    assert tg.angle(tg.tensor([1, -2])).dtype is tg.get_default_dtype()


def test_sgn_is_the_unit_phase_and_sign_for_reals():
    z = z128()
    s = tg.sgn(z)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.where(Z == 0, 0, Z / np.abs(Z))
    np.testing.assert_allclose(s.detach().numpy(), want)
    np.testing.assert_array_equal(tg.tensor([-2.0, 0.0, 3.0]).sgn().numpy(), [-1.0, 0.0, 1.0])
    # no NaN from the masked 0/0 reaches the gradient at z = 0
    (s.real + 2 * s.imag).sum().backward()
    assert np.all(np.isfinite(z.grad.numpy()))
    assert z.grad.numpy()[3] == 0


@pytest.mark.parametrize("fn", [
    lambda t: tg.angle(tg.view_as_complex(t)),
    lambda t: tg.view_as_real(tg.sgn(tg.view_as_complex(t))),
])
def test_gradcheck_and_gradgradcheck_away_from_zero(fn):
    t = tg.tensor([[1.0, 2.0], [-3.0, -1.0], [-0.5, 0.25], [2.0, -0.7]], dtype=tg.float64,
                  requires_grad=True)
    assert gradcheck(fn, (t,))
    assert gradgradcheck(fn, (t,))


def test_complex_and_polar_build_complex_tensors():
    r = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64, requires_grad=True)
    m = tg.tensor([0.5, 3.0, -1.0], dtype=tg.float64, requires_grad=True)
    c = tg.complex(r, m)
    assert c.dtype is tg.complex128
    np.testing.assert_allclose(c.detach().numpy(), r.detach().numpy() + 1j * m.detach().numpy())
    # L = Re((2 - 3i) c) = 2 r + 3 m
    (c * (2 - 3j)).real.sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), [2.0] * 3)
    np.testing.assert_allclose(m.grad.numpy(), [3.0] * 3)
    p = tg.polar(tg.tensor([2.0, 1.0]), tg.tensor([np.pi / 2, np.pi]))
    assert p.dtype is tg.complex64
    np.testing.assert_allclose(p.numpy(), [2j, -1], atol=1e-6)
    assert gradcheck(lambda a, b: tg.view_as_real(tg.polar(a, b)),
                     (r.detach().abs().requires_grad_(), m.detach().requires_grad_()))
    with pytest.raises(RuntimeError, match="Expected object of scalar type"):
        tg.complex(tg.ones(2), tg.ones(2, dtype=tg.float64))
    with pytest.raises(TypeError, match=r"complex\(\): argument 'imag' \(position 2\) must be Tensor"):
        tg.complex(tg.ones(2), 1.0)
    # polar takes complex's dtypes, less Half: no silent promotion of mixed or integer parts
    with pytest.raises(RuntimeError, match="scalar type Float but got scalar type Double for "
                                           "second argument"):
        tg.polar(tg.ones(2), tg.ones(2, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="Half, Float or Double tensors but got Long and Long"):
        tg.polar(tg.ones(2, dtype=tg.int64), tg.ones(2, dtype=tg.int64))
    with pytest.raises(NotImplementedError, match="\"polar_cpu\" not implemented for 'Half'"):
        tg.polar(tg.ones(2, dtype=tg.float16), tg.ones(2, dtype=tg.float16))


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_complex_random_numbers_draw_both_parts(name):
    tg.manual_seed(0)
    z = getattr(tg, name)(20000, dtype=tg.complex128)
    assert z.dtype is tg.complex128 and z.shape == (20000,)
    re, im = z.real.numpy(), z.imag.numpy()
    if name == "rand":  # each part uniform on [0, 1)
        for part in (re, im):
            assert part.min() >= 0 and part.max() < 1 and abs(part.mean() - 0.5) < 0.02
    else:  # each part normal with variance 1/2, so E|z|^2 = 1
        for part in (re, im):
            assert abs(part.var() - 0.5) < 0.03 and abs(part.mean()) < 0.03
    assert abs(np.corrcoef(re, im)[0, 1]) < 0.05  # drawn independently


def test_angle_of_reals_on_each_backend(device):
    x = tg.tensor([-1.5, 0.0, 2.0, float("nan")], device=device, requires_grad=True)
    a = tg.angle(x)
    assert a.dtype is tg.float32 and a.device == x.device
    np.testing.assert_allclose(a.detach().cpu().numpy(), [np.pi, 0, 0, np.nan], rtol=1e-6)
    a.sum().backward()
    assert x.grad.cpu().tolist() == [0.0] * 4


def test_complex_sigmoid_and_a_scalar_complex_contraction_on_the_cpu():
    # (found by the Triton complex tests: the CPU backend clipped complex values as reals, and
    # a 0-d complex gradient came back as a NumPy scalar)
    zv = np.array([1 + 2j, -0.5 + 0.1j])
    z = tg.tensor(zv, dtype=tg.complex128)
    np.testing.assert_allclose(z.sigmoid().numpy(), 1 / (1 + np.exp(-zv)))
    assert gradcheck(lambda t: tg.view_as_real(tg.view_as_complex(t).sigmoid()),
                     (tg.tensor([[1.0, 2.0], [-0.5, 0.1]], dtype=tg.float64, requires_grad=True),))
    p, q = (tg.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=tg.float64, requires_grad=True),
            tg.tensor([[-1.0, 0.5], [2.0, 1.0]], dtype=tg.float64, requires_grad=True))
    assert gradcheck(lambda a, b: tg.einsum("i,i->", tg.view_as_complex(a),
                                            tg.view_as_complex(b)).abs(), (p, q))


def test_complex_gradients_through_views_and_in_place_ops(device):
    z0 = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j])
    z = tg.tensor(z0, dtype=tg.complex128, device=device, requires_grad=True)
    w = z.clone()
    w[1:] *= 2 - 1j  # in place, through a view
    v = w[::2]  # a strided view
    ((v.abs() ** 2).sum() + w[1].real).backward()
    # L = |z0|^2 + |(2 - i) z2|^2 + Re((2 - i) z1): 2 z0, conj(2 - i), 2 |2 - i|^2 z2
    np.testing.assert_allclose(z.grad.cpu().numpy(), [2 * z0[0], 2 + 1j, 10 * z0[2]])
