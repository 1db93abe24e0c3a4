"""Correctness gaps against PyTorch, round 19: ``gather`` / ``scatter`` / ``scatter_add`` /
``scatter_reduce`` with a 0-d input beside a 1-d index and the reverse (PyTorch reads the 0-d
one as 1-d; the NumPy backend crashed and the Triton one kept only the first index), and
``linalg.vector_norm`` of float16/bfloat16 computed in float32 and rounded once (PyTorch's
opmath). Values against NumPy references written out by hand, gradients against finite
differences (tests/helpers.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host, numeric_grads


# -- gather / scatter: a 0-d input or index beside a 1-d other -----------------------------

def test_gather_of_a_scalar_by_a_vector_index(device):
    x = tg.tensor(5.0, dtype=tg.float64, device=device, requires_grad=True)
    idx = tg.tensor([0, 0, 0], device=device)
    y = tg.gather(x, 0, idx)
    assert tuple(y.shape) == (3,)
    np.testing.assert_array_equal(host(y), [5.0, 5.0, 5.0])
    w = tg.tensor([1.0, 2.0, 4.0], dtype=tg.float64, device=device)
    (g,) = tg.autograd.grad((y * w).sum(), x)
    assert tuple(g.shape) == ()
    assert float(g) == 7.0  # every index element adds its weight
    (fd,) = numeric_grads(lambda t: (tg.gather(t, 0, idx.cpu()) * w.cpu()).sum(), [x])
    np.testing.assert_allclose(host(g), fd, rtol=1e-6)


def test_gather_of_a_vector_by_a_scalar_index(device):
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, device=device, requires_grad=True)
    y = tg.gather(x, 0, tg.tensor(2, device=device))
    assert tuple(y.shape) == ()
    assert float(y) == 3.0
    (g,) = tg.autograd.grad(y * 3.0, x)
    np.testing.assert_array_equal(host(g), [0.0, 0.0, 3.0])


def test_gather_of_a_complex_scalar_by_a_vector_index(device):
    x = tg.tensor(1.0 - 2.0j, device=device)
    y = tg.gather(x, 0, tg.tensor([0, 0], device=device))
    np.testing.assert_array_equal(host(y), [1.0 - 2.0j, 1.0 - 2.0j])
    z = tg.gather(tg.tensor([1j, 2j], device=device), 0, tg.tensor(1, device=device))
    assert tuple(z.shape) == () and complex(z) == 2j


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.int64, tg.complex64])
def test_scatter_add_into_a_scalar_sums_every_element(device, dtype):
    out = tg.zeros((), dtype=dtype, device=device)
    out.scatter_add_(0, tg.tensor([0, 0, 0], device=device),
                     tg.tensor([1, 2, 4], dtype=dtype, device=device))
    assert tuple(out.shape) == ()
    assert out.item() == 7


def test_scatter_into_a_vector_by_a_scalar_index(device):
    out = tg.zeros(3, device=device)
    out.scatter_(0, tg.tensor(1, device=device), tg.tensor(7.0, device=device))
    np.testing.assert_array_equal(host(out), [0.0, 7.0, 0.0])
    out.scatter_(0, tg.tensor(2, device=device), 5.0)  # a number as the value
    np.testing.assert_array_equal(host(out), [0.0, 7.0, 5.0])


@pytest.mark.parametrize("reduce, want", [("sum", 8.0), ("prod", 8.0), ("amax", 4.0),
                                          ("amin", 1.0), ("mean", 8.0 / 4)])
def test_scatter_reduce_into_a_scalar(device, reduce, want):
    out = tg.ones((), device=device).scatter_reduce(
        0, tg.tensor([0, 0, 0], device=device), tg.tensor([1.0, 2.0, 4.0], device=device), reduce)
    assert tuple(out.shape) == ()
    assert float(out) == pytest.approx(want)  # include_self: the 1 joins the fold


def test_scatter_add_gradient_from_a_scalar(device):
    src = tg.tensor([1.0, 2.0], dtype=tg.float64, device=device, requires_grad=True)
    out = tg.zeros((), dtype=tg.float64, device=device).scatter_add(
        0, tg.tensor([0, 0], device=device), src)
    (g,) = tg.autograd.grad(out * 3.0, src)
    np.testing.assert_array_equal(host(g), [3.0, 3.0])


# -- vector_norm of half precision --------------------------------------------------------

def _norm64(v, p):
    return float(np.sum(np.abs(np.asarray(v, np.float64)) ** p) ** (1.0 / p))


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0])
def test_half_vector_norm_is_computed_in_float32(device, dtype, p):
    vals = [0.5, 2.0, -5.0, 0.375]
    got = tg.linalg.vector_norm(tg.tensor(vals, dtype=dtype, device=device), p)
    assert got.dtype is dtype
    # the float64 norm rounded once to the half type: what float32 arithmetic then one cast gives
    want = float(tg.tensor(_norm64(vals, p), dtype=tg.float32).to(dtype))
    assert float(got) == want


def test_float16_two_norm_does_not_overflow(device):
    x = tg.tensor([300.0, 400.0], dtype=tg.float16, device=device, requires_grad=True)
    n = x.norm()  # 300^2 is past float16's largest value: squares must not be taken in half
    assert float(n) == 500.0
    n.backward()
    np.testing.assert_allclose(host(x.grad).astype(np.float64), [0.6, 0.8], rtol=1e-3)


def test_half_vector_norm_over_a_dim(device):
    v = np.array([[0.5, 2.0], [-5.0, 1.0]])
    got = tg.linalg.vector_norm(tg.tensor(v, dtype=tg.bfloat16, device=device), 3, dim=1,
                                keepdim=True)
    assert tuple(got.shape) == (2, 1) and got.dtype is tg.bfloat16
    want = tg.tensor([[_norm64(r, 3)] for r in v], dtype=tg.float32).to(tg.bfloat16)
    np.testing.assert_array_equal(host(got.float()), host(want.float()))
