"""``view_as_real``, ``view_as_complex``, ``real`` and ``imag`` are views, as PyTorch's: one
memory read as two dtypes (writes through either reach the other), one version counter, and
history rewritten through them after in-place writes (Note [Views across dtypes] in
autograd/ops/views.py). Gradients against hand-derived values and gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import gradcheck

Z = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j])


def test_view_as_real_shares_memory_both_ways(device):
    z = tg.tensor(Z, dtype=tg.complex64, device=device)
    r = tg.view_as_real(z)
    assert r.shape == (3, 2) and r.dtype is tg.float32 and r._base is z
    assert r.stride() == (2, 1) and r.storage_offset() == 0
    r[1, 1] = 7.0
    z[0] = 5 - 5j
    np.testing.assert_array_equal(z.cpu().numpy(), [5 - 5j, 3 + 7j, -0.5 + 0.25j])
    np.testing.assert_array_equal(r.cpu().numpy(), [[5, -5], [3, 7], [-0.5, 0.25]])
    assert r._version == z._version == 2


def test_view_as_real_of_strided_and_offset_views(device):
    base = tg.tensor(np.arange(12) * (1 + 1j), dtype=tg.complex128, device=device)
    z = base.view(3, 4)[1:, ::2]  # offset 4, strides (4, 2)
    r = tg.view_as_real(z)
    assert r.stride() == (8, 4, 1) and r.storage_offset() == 8
    np.testing.assert_array_equal(r.cpu().numpy()[..., 0], [[4, 6], [8, 10]])
    r[..., 1] = 0.0
    np.testing.assert_array_equal(base.cpu().numpy().imag,
                                  [0, 1, 2, 3, 0, 5, 0, 7, 0, 9, 0, 11])


def test_view_as_complex_shares_memory(device):
    x = tg.tensor(np.arange(8.0).reshape(4, 2), dtype=tg.float64, device=device)
    c = tg.view_as_complex(x)
    assert c.dtype is tg.complex128 and c.shape == (4,) and c._base is x
    c[2] = -1 + 10j
    np.testing.assert_array_equal(x.cpu().numpy()[2], [-1, 10])
    x[0, 1] = 3.0
    assert complex(c[0].item()) == 3j
    # an even offset and even strides view too
    y = tg.zeros(3, 4, device=device)[1:, 2:]
    cy = tg.view_as_complex(y)
    assert cy.shape == (2,) and cy.storage_offset() == 3 and cy.stride() == (2,)


def test_real_and_imag_are_views(device):
    z = tg.tensor(Z, dtype=tg.complex64, device=device)
    z.real.zero_()
    z.imag[1] = 9.0
    np.testing.assert_array_equal(z.cpu().numpy(), [2j, 9j, 0.25j])
    assert z.real._base is z and z.imag._base is z
    x = tg.ones(3, device=device)
    assert x.real is x and tg.real(x) is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        x.imag


def test_graph_nodes_are_pytorchs():
    z = tg.tensor(Z, requires_grad=True)
    assert type(tg.view_as_real(z).grad_fn).__name__ == "ViewAsRealBackward0"
    fn = z.real.grad_fn
    assert type(fn).__name__ == "SelectBackward0"
    assert type(fn.next_functions[0][0]).__name__ == "ViewAsRealBackward0"
    x = tg.randn(3, 2, requires_grad=True)
    assert type(tg.view_as_complex(x).grad_fn).__name__ == "ViewAsComplexBackward0"


@pytest.mark.parametrize("make, message", [
    (lambda: tg.zeros(3), "view_as_real is only supported for complex tensors"),
])
def test_view_as_real_errors(make, message):
    with pytest.raises(RuntimeError, match=message):
        tg.view_as_real(make())


@pytest.mark.parametrize("make, err, message", [
    (lambda: tg.zeros(2, dtype=tg.int64), RuntimeError,
     "only supported for half, float and double tensors, but got a tensor of scalar type: "
     "Long"),
    (lambda: tg.zeros(2, dtype=tg.complex64), RuntimeError, "scalar type: ComplexFloat"),
    (lambda: tg.tensor(1.0), RuntimeError, "Input tensor must have one or more dimensions"),
    (lambda: tg.zeros(4, 2).t(), RuntimeError, "Tensor must have a last dimension of size 2"),
    (lambda: tg.zeros(2, 2).t(), RuntimeError,
     "Tensor must have a last dimension with stride 1"),
    (lambda: tg.zeros(4, 3)[:, :2], RuntimeError,
     "Tensor must have a stride divisible by 2 for all but last dimension"),
    (lambda: tg.zeros(9)[1:].view(4, 2), RuntimeError,
     "Tensor must have a storage_offset divisible by 2"),
    (lambda: tg.zeros(2, dtype=tg.float16), NotImplementedError, "complex32"),
])
def test_view_as_complex_errors(make, err, message):
    with pytest.raises(err, match=message):
        tg.view_as_complex(make())


def test_gradcheck_through_the_views():
    z = tg.tensor(Z, dtype=tg.complex128, requires_grad=True)
    x = tg.tensor(np.random.default_rng(0).standard_normal((3, 2)), requires_grad=True)
    assert gradcheck(lambda z: tg.view_as_real(z) * tg.arange(1.0, 7.0).view(3, 2), (z,))
    assert gradcheck(lambda x: tg.view_as_complex(x) * (2 - 1j), (x,))
    assert gradcheck(lambda z: z.real * z.imag, (z,))
    assert gradcheck(lambda x: tg.view_as_real(tg.view_as_complex(x) ** 2), (x,))


def test_in_place_through_real_view_rewrites_history(device):
    z = tg.tensor(Z, dtype=tg.complex128, device=device, requires_grad=True)
    w = z * 1
    w.real.mul_(2)  # w = 2x + iy
    assert type(w.grad_fn).__name__ == "CopySlices"
    w.abs().sum().backward()
    x, y = Z.real, Z.imag
    n = np.hypot(2 * x, y)
    np.testing.assert_allclose(z.grad.cpu().numpy(), 2 * (2 * x) / n + 1j * y / n)


def test_in_place_write_of_a_value_through_imag(device):
    z = tg.tensor(Z, dtype=tg.complex128, device=device, requires_grad=True)
    t = tg.tensor(4.0, dtype=tg.float64, device=device, requires_grad=True)
    w = z * 1
    w.imag[0] = t * 2  # w[0] = x0 + 2t i
    (w * w.conj()).real.sum().backward()  # sum |w|^2
    expect = 2 * Z.copy()
    expect[0] = 2 * Z[0].real
    np.testing.assert_allclose(z.grad.cpu().numpy(), expect)
    assert t.grad.item() == pytest.approx(2 * 2 * (2 * 4.0))


def test_real_view_history_after_the_base_is_modified(device):
    z = tg.tensor(Z, dtype=tg.complex128, device=device, requires_grad=True)
    w = z * 1
    v = tg.view_as_real(w)
    w.mul_(2)
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    v.sum().backward()
    np.testing.assert_allclose(z.grad.cpu().numpy(), np.full(3, 2 + 2j))
    z.grad = None
    w = z * 1
    v = w.imag
    w.mul_(1j)  # w = -y + ix: v reads x now
    (v * v).sum().backward()
    np.testing.assert_allclose(z.grad.cpu().numpy(), 2 * Z.real + 0j)


def test_complex_view_of_real_base_refuses_history_rewrites():
    x = tg.randn(4, 2, requires_grad=True)
    c = tg.view_as_complex(x * 1)
    with pytest.raises(RuntimeError, match="view_as_complex: a complex view of a real tensor"):
        c.mul_(2)
    x1 = x * 1
    c = tg.view_as_complex(x1)
    x1.mul_(2)
    with pytest.raises(RuntimeError, match="Clone the view or its base"):
        c.abs()
    # without autograd the writes are plain memory writes
    with tg.no_grad():
        c = tg.view_as_complex(x)
        c.mul_(1j)
    assert x.requires_grad


def test_leaf_views_refuse_in_place_writes():
    z = tg.tensor(Z, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        z.real.mul_(2)


def test_against_torch():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        z = lib.tensor(Z, dtype=lib.complex128, requires_grad=True)
        w = z * 1
        w.real.mul_(3)
        v = lib.view_as_real(w)
        w.imag.add_(1)
        loss = (v ** 3).sum() + (w.abs() ** 2).sum()
        loss.backward()
        got = z.grad.detach().numpy().copy()
        if lib is tg:
            ours = got
        else:
            np.testing.assert_allclose(ours, got, rtol=1e-12)


@pytest.mark.parametrize("call, name", [
    (lambda z: z < z, "lt"), (lambda z: tg.gt(z, 1), "gt"), (lambda z: z >= 1.0, "ge"),
    (lambda z: z.le(z.real), "le"), (lambda z: tg.ones(3, device=z.device) > z, "gt"),
    (lambda z: tg.searchsorted(z, z), "searchsorted_out"),
    (lambda z: tg.nn.functional.mse_loss(z, z), "mse"),
])
def test_complex_numbers_have_no_order(device, call, name):
    # (PyTorch refuses these; NumPy would order complex numbers lexicographically)
    z = tg.tensor(Z, dtype=tg.complex64, device=device)
    with pytest.raises(NotImplementedError, match=f'"{name}_{device}" not implemented for '
                                                  f"'ComplexFloat'"):
        call(z)
    assert (z == z).all() and not (z != z).any()  # (equality is defined)
