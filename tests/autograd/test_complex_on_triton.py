"""Complex autograd on the Triton backend (the emulated CUDA device in CI, kernels through
Triton's interpreter): complex tensors move to and from the device exactly, and the gradients
of complex ops there (Note [Complex autograd] in autograd/dispatch.py; the kernels' Note
[complex lanes] in kernels/triton/complex.py) equal the CPU backend's, hand-derived values and
gradcheck's numerical Jacobians."""

from __future__ import annotations

import numpy as np
import pytest
from tritongrad.autograd import gradcheck, gradgradcheck

import tritongrad as tg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

Z = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j])
W = np.array([0.5 - 1j, 2 + 0.5j, 1j])


def _z(values, device, dtype=tg.complex128):
    return tg.tensor(values, dtype=dtype, device=device, requires_grad=True)


LOSSES = {
    "abs2": lambda z, w: (z.abs() ** 2).sum(),
    "mul": lambda z, w: (z * w).abs().sum(),
    "div": lambda z, w: (z / w).real.sum(),
    "exp": lambda z, w: z.exp().real.sum(),
    "log": lambda z, w: z.log().imag.sum(),
    "sin": lambda z, w: z.sin().abs().sum(),
    "cos": lambda z, w: z.cos().real.sum(),
    "tan": lambda z, w: z.tan().real.sum(),
    "tanh": lambda z, w: z.tanh().abs().sum(),
    "sqrt": lambda z, w: z.sqrt().imag.sum(),
    "rsqrt": lambda z, w: z.rsqrt().real.sum(),
    "pow_scalar": lambda z, w: (z ** 2).real.sum(),
    "pow_tensor": lambda z, w: (z ** w).real.sum(),
    "conj": lambda z, w: (z.conj() * w).imag.sum(),
    "mean": lambda z, w: (z * w).mean().abs(),
    "view_as_real": lambda z, w: tg.view_as_real(z * w).sum(),
    "view_as_complex": lambda z, w: tg.view_as_complex(tg.view_as_real(z) * 2).abs().sum(),
    "outer_mm": lambda z, w: (z.reshape(3, 1) @ w.reshape(1, 3)).abs().sum(),
    "where": lambda z, w: tg.where(z.real > 0, z, w).abs().sum(),
    "broadcast_sub": lambda z, w: (z.reshape(3, 1) - w).abs().sum(),
    "python_scalars": lambda z, w: (-z * (2 - 1j) + 1j).abs().sum(),
    "expand_sum": lambda z, w: z.reshape(3, 1).expand(3, 2).sum(1).abs().sum(),
    "slice": lambda z, w: (z[1:] * w[:2]).abs().sum(),
    "cat_stack": lambda z, w: (tg.cat([z, w]).abs().sum() + tg.stack([z, w]).real.sum()),
    "index": lambda z, w: z[tg.tensor([0, 2, 2], device=z.device)].abs().sum(),
    "gather": lambda z, w: z.gather(0, tg.tensor([1, 1, 0], device=z.device)).abs().sum(),
    "scatter_add": lambda z, w: tg.zeros(3, dtype=z.dtype, device=z.device).scatter_add(
        0, tg.tensor([0, 0, 1], device=z.device), z).abs().sum(),
    "cumsum": lambda z, w: z.cumsum(0).abs().sum(),
    "flip_roll": lambda z, w: (z.flip(0) * w.roll(1)).real.sum(),
    "masked_fill": lambda z, w: z.masked_fill(z.real > 0, 0).abs().sum(),
    "bmm": lambda z, w: tg.bmm(z.reshape(1, 3, 1), w.reshape(1, 1, 3)).abs().sum(),
    "log1p_expm1": lambda z, w: (z.log1p() * w.expm1()).real.sum(),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_gradients_equal_the_cpu_backends(name):
    loss = LOSSES[name]
    grads = {}
    for device in ("cpu", "cuda"):
        z, w = _z(Z, device), _z(W, device)
        out = loss(z, w)
        assert out.device.type == device
        out.backward()
        grads[device] = [t.grad.cpu().numpy() for t in (z, w) if t.grad is not None]
        assert all(t.grad.device.type == device for t in (z, w) if t.grad is not None)
    assert len(grads["cpu"]) == len(grads["cuda"])
    for c, g in zip(grads["cpu"], grads["cuda"]):
        assert g.dtype == np.complex128
        np.testing.assert_allclose(g, c, rtol=1e-10, atol=1e-12)


def test_hand_derived_gradients_on_cuda():
    def grad_of(loss):
        z = _z(Z, "cuda")
        loss(z).backward()
        return z.grad.cpu().numpy()

    np.testing.assert_allclose(grad_of(lambda z: (z.abs() ** 2).sum()), 2 * Z)
    np.testing.assert_allclose(grad_of(lambda z: z.exp().real.sum()), np.conj(np.exp(Z)))
    np.testing.assert_allclose(grad_of(lambda z: z.imag.sum()), np.full(3, 1j))
    # sigmoid (the CPU backend lacks its complex kernel): d/dz s = s (1 - s), conjugated
    s = 1 / (1 + np.exp(-Z))
    np.testing.assert_allclose(grad_of(lambda z: z.sigmoid().real.sum()), np.conj(s * (1 - s)))


def test_complex64_matmul_gradients():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    b = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    g = rng.standard_normal((2, 4)) + 1j * rng.standard_normal((2, 4))
    ta, tb = _z(a, "cuda", tg.complex64), _z(b, "cuda", tg.complex64)
    (ta @ tb).backward(tg.tensor(g, dtype=tg.complex64, device="cuda"))
    assert ta.grad.dtype is tg.complex64
    np.testing.assert_allclose(ta.grad.cpu().numpy(), g @ b.conj().T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tb.grad.cpu().numpy(), a.conj().T @ g, rtol=1e-5, atol=1e-5)


def test_a_real_input_gets_the_real_part_on_cuda():
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, device="cuda", requires_grad=True)
    (x * tg.tensor(Z, device="cuda")).abs().sum().backward()
    assert x.grad.dtype is tg.float64
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.abs(Z) * np.sign([0.5, -1.0, 2.0]))


def test_gradcheck_and_gradgradcheck_on_cuda():
    z, w = _z(Z, "cuda"), _z(W, "cuda")
    assert gradcheck(lambda a, b: (a * b).exp() / (b + 3), (z, w))
    assert gradcheck(lambda a: (a @ a.conj().reshape(3, 1)).tanh(), (z.reshape(1, 3),))
    assert gradgradcheck(lambda a, b: a * b.sin(), (z, w))


def test_forward_only_ops_match_the_cpu():
    z = tg.tensor(Z)
    c = z.cuda()
    np.testing.assert_allclose(c.prod().cpu().numpy(), z.prod().numpy(), rtol=1e-12)
    assert bool((c != 0).all()) and bool(c.any())
    np.testing.assert_array_equal(tg.nonzero(c).cpu().numpy(), tg.nonzero(z).numpy())
    np.testing.assert_allclose(c.pow(c).cpu().numpy(), z.pow(z).numpy(), rtol=1e-12)


def test_transfers_are_exact_and_keep_the_dtype():
    for dtype in (tg.complex64, tg.complex128):
        t = tg.tensor(Z, dtype=dtype)
        c = t.cuda()
        assert c.dtype is dtype and c.is_complex()
        np.testing.assert_array_equal(c.cpu().numpy(), t.numpy())
        np.testing.assert_array_equal(c.real.cpu().numpy(), t.real.numpy())
        np.testing.assert_array_equal(c.to(tg.complex128).cpu().numpy(), Z.astype(dtype.np))
        zeros = tg.zeros((2, 3), dtype=dtype, device="cuda")
        np.testing.assert_array_equal(zeros.cpu().numpy(), np.zeros((2, 3)))
