"""Complex autograd (Note [Complex autograd] in autograd/dispatch.py): PyTorch's convention,
the gradient of z = x + iy being dL/dx + i dL/dy for a real loss L. Gradients are checked
against hand-derived values and by gradcheck/gradgradcheck through the real views; ops with no
complex rule refuse with PyTorch's message instead of giving a wrong gradient."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import Function, gradcheck, gradgradcheck
from tritongrad.autograd.gradcheck import GradcheckError

Z = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j])


def z128(values=Z):
    return tg.tensor(values, dtype=tg.complex128, requires_grad=True)


def grad_of(loss_fn, values=Z):
    z = z128(values)
    loss_fn(z).backward()
    return z.grad.numpy()


def test_hand_derived_wirtinger_gradients():
    # |z|^2 = x^2 + y^2: 2x + 2iy = 2z (the example)
    np.testing.assert_allclose(grad_of(lambda z: (z.abs() ** 2).sum()), 2 * Z)
    # |z^2| = |z|^2 again
    np.testing.assert_allclose(grad_of(lambda z: (z * z).abs().sum()), 2 * Z)
    # Re(e^z) = e^x cos y: grad e^x cos y - i e^x sin y = conj(e^z)
    np.testing.assert_allclose(grad_of(lambda z: z.exp().real.sum()), np.conj(np.exp(Z)))
    # Im(z) = y: grad i; Re(conj z) = x: grad 1; Im(conj z) = -y: grad -i
    np.testing.assert_allclose(grad_of(lambda z: z.imag.sum()), np.full(3, 1j))
    np.testing.assert_allclose(grad_of(lambda z: z.conj().real.sum()), np.ones(3))
    np.testing.assert_allclose(grad_of(lambda z: z.conj().imag.sum()), np.full(3, -1j))
    # Re(c z) for a constant c: grad conj(c)
    c = np.array([2 - 1j, 0.5j, -3.0])
    np.testing.assert_allclose(grad_of(lambda z: (z * tg.tensor(c)).real.sum()), np.conj(c))


def test_matmul_and_reductions_follow_the_conjugate_transpose():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    b = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    g = rng.standard_normal((2, 4)) + 1j * rng.standard_normal((2, 4))
    ta = tg.tensor(a, requires_grad=True)
    tb = tg.tensor(b, requires_grad=True)
    (ta @ tb).backward(tg.tensor(g))
    np.testing.assert_allclose(ta.grad.numpy(), g @ b.conj().T, rtol=1e-12)
    np.testing.assert_allclose(tb.grad.numpy(), a.conj().T @ g, rtol=1e-12)


def test_a_real_input_gets_the_real_part():
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    z = tg.tensor(Z)
    (x * z).abs().sum().backward()
    # d|x z|/dx = |z| sign(x)
    np.testing.assert_allclose(x.grad.numpy(), np.abs(Z) * np.sign([0.5, -1.0, 2.0]))
    assert x.grad.dtype == tg.float64
    x.grad = None
    tg.view_as_complex(tg.stack([x, x * 2], -1)).imag.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_gradcheck_and_gradgradcheck_through_the_real_views():
    z = z128()
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    assert gradcheck(lambda z, x: (z * z.exp() + x).abs() * x, (z, x))
    assert gradcheck(lambda z: z.sin() / (z + 3) @ z.conj(), (z,), check_batched_grad=True)
    assert gradgradcheck(lambda z: (z * z.conj()).real * z.tanh(), (z,))
    assert gradcheck(lambda x: tg.view_as_real(tg.view_as_complex(x.view(3, 2)).sqrt()),
                     (tg.rand(6, dtype=tg.float64, requires_grad=True) + 0.5,))


def test_gradcheck_catches_a_complex_rule_without_its_conjugate():
    class NoConj(Function):  # d(cz)/dz = c, but the rule forgets PyTorch's conjugate
        @staticmethod
        def forward(ctx, z):
            return z * (2 - 1j)

        @staticmethod
        def backward(ctx, g):
            return g * (2 - 1j)

    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(NoConj.apply, (z128(),))


def test_ops_without_a_complex_rule_refuse():
    z = z128()
    with pytest.raises(RuntimeError, match="index_reduce does not support automatic "
                                           "differentiation for outputs with complex dtype"):
        z.index_reduce(0, tg.tensor([0, 0, 1]), z, "prod")  # (PyTorch refuses it too)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real "
                                           "scalar outputs"):
        (z * z).sum().backward()


@pytest.mark.parametrize("fn", [
    lambda z: z.asin(), lambda z: z.acos(), lambda z: z.atan(), lambda z: z.asinh(),
    lambda z: (z + 2).acosh(), lambda z: (z * 0.3).atanh(), lambda z: z.sinh(),
    lambda z: z.cosh(), lambda z: z.exp2(), lambda z: z.log2(), lambda z: z.log10(),
    lambda z: z.prod(), lambda z: (z * tg.tensor([1.0, 0.0, 1.0])).prod(),
    lambda z: z.reshape(1, 3).logsumexp(1), lambda z: tg.unsafe_split(z, 2)[0],
    lambda z: tg.unsafe_split_with_sizes(z, [1, 2])[1],
    lambda z: tg.diagonal_scatter(z.reshape(3, 1).repeat(1, 3), z * 2),
    lambda z: tg.select_scatter(z.reshape(1, 3).repeat(2, 1), z * 1j, 0, 1),
])
def test_holomorphic_ops_take_complex_gradients(fn):
    # these refused complex gradients, with PyTorch's message for ops that have none
    assert gradcheck(fn, [z128(Z * 0.4)])


def test_complex_parts_and_their_errors():
    z = tg.tensor(Z)
    np.testing.assert_allclose(z.real.numpy(), Z.real)
    np.testing.assert_allclose(z.imag.numpy(), Z.imag)
    np.testing.assert_allclose(z.conj().numpy(), Z.conj())
    np.testing.assert_allclose(tg.view_as_real(z).numpy(), np.stack([Z.real, Z.imag], -1))
    np.testing.assert_allclose(tg.view_as_complex(tg.view_as_real(z)).numpy(), Z)
    assert z.real.dtype == tg.float64 and tg.tensor([1 + 2j]).real.dtype == tg.float32
    np.testing.assert_allclose(tg.tensor(np.outer(Z, Z)).mH.numpy(), np.outer(Z, Z).conj().T)
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex"):
        tg.view_as_real(tg.ones(2))
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        tg.view_as_complex(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        _ = tg.ones(2).imag


_FORWARD = {
    "exp": tg.exp, "mul": lambda a: a * a, "mm": lambda a: a @ a, "sum": lambda a: a.sum(1),
    "abs": lambda a: a.abs(), "angle": tg.angle, "real": lambda a: a.real * 2,
    "imag": lambda a: a.imag * 2, "conj": lambda a: a.conj() * 1, "sgn": tg.sgn,
    "flip": lambda a: a.flip(0), "sqrt": tg.sqrt, "log": tg.log, "div": lambda a: a / (a + 2),
    "pow": lambda a: a ** 2.5, "cat": lambda a: tg.cat([a, a]), "select": lambda a: a[0],
    "view_as_real": lambda a: tg.view_as_real(a) * 1, "acosh": tg.acosh,
    "view_as_complex": lambda a: tg.view_as_complex(tg.view_as_real(a * 1)),
    "in_place": lambda a: a.clone().mul_(a), "softmax_of_abs": lambda a: a.abs().softmax(0),
}


@pytest.mark.parametrize("name", sorted(_FORWARD))
def test_forward_ad_of_complex_tensors(name):
    # holomorphic ops: f'(z) t from the real jvp formula; abs, angle, conj, view_as_real:
    # their own complex rules (Note [Complex autograd]); both modes against finite differences
    z = tg.tensor(np.array([[0.5 + 0.3j, -0.7 + 1.1j], [1.2 - 0.4j, -0.3 - 0.8j]]),
                  requires_grad=True)
    assert gradcheck(_FORWARD[name], (z,), check_forward_ad=True)


def test_forward_ad_of_a_real_tensor_into_complex_values():
    import tritongrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.ones(2, dtype=tg.float64), tg.tensor([1.0, 2.0], dtype=tg.float64))
        p, t = fwAD.unpack_dual(tg.exp(d * 1j))
        np.testing.assert_allclose(t.numpy(), 1j * np.exp(1j) * np.array([1.0, 2.0]))
        # (rows equal along the whole path: det is 0 there, and so is its tangent)
        r = tg.linalg.det((d * 1j).reshape(1, 2).expand(2, 2))
        np.testing.assert_allclose(fwAD.unpack_dual(r).tangent.numpy(), 0, atol=1e-12)


def test_acosh_gradient_left_of_the_imaginary_axis():
    # d acosh(z) / dz = 1 / (sqrt(z - 1) sqrt(z + 1)); the rule had 1 / sqrt(z^2 - 1), of the
    # wrong sign for Re z < 0. Against central differences of NumPy's arccosh (holomorphic:
    # the gradient of Re sum acosh(z) is conj(acosh'(z)))
    z = np.array([-0.5 + 0.3j, 0.7 - 1.2j, -1.5 - 0.4j, 2 + 0.1j])
    h = 1e-7
    want = (np.arccosh(z + h) - np.arccosh(z - h)) / (2 * h)
    a = tg.tensor(z, requires_grad=True)
    tg.acosh(a).real.sum().backward()
    np.testing.assert_allclose(np.conj(a.grad.numpy()), want, rtol=1e-6)
    assert tg.autograd.gradcheck(lambda t: tg.view_as_real(tg.acosh(t)),
                                 (tg.tensor(z, requires_grad=True),))


def test_normalize_of_complex_vectors():
    # the 2-norm of a complex vector sums |z|^2 (it summed z^2, complex, and clamp refused it)
    z = tg.tensor([[3 + 4j, 0j], [1j, 1 + 0j]], requires_grad=True)
    want = z.detach().numpy() / np.linalg.norm(z.detach().numpy(), axis=1, keepdims=True)
    np.testing.assert_allclose(tg.nn.functional.normalize(z).detach().numpy(), want)
    assert tg.autograd.gradcheck(lambda t: tg.view_as_real(tg.nn.functional.normalize(t)),
                                 (z.detach().to(tg.complex128).requires_grad_(),))
