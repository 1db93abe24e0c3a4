"""Session 18's per-op overhead changes: node state in slots (Note [Node state in slots],
autograd/node.py) and the NumPy backend's sigmoid entry (kernels/numpy/elementwise.py).

The nodes that keep their forward's state in slots must behave as before: the same
gradients (against float64 NumPy references), under ``retain_graph`` and ``create_graph``,
forward AD through them, and user annotations still stored on the node.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.kernels.numpy import elementwise as ew


def _x(shape=(3, 4), seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, shape)


@pytest.mark.parametrize("op, expected_grad", [
    (lambda x: x * 1.5, lambda x: np.full_like(x, 1.5)),
    (lambda x: x / 4.0, lambda x: np.full_like(x, 0.25)),
    (lambda x: tg.add(x, x, alpha=3.0), lambda x: np.full_like(x, 4.0)),
    (lambda x: tg.sub(x, x * 2.0, alpha=0.5), lambda x: np.full_like(x, 0.0)),
])
def test_slotted_nodes_keep_no_dict_and_give_the_same_gradients(op, expected_grad):
    a = _x()
    x = tg.tensor(a, requires_grad=True)
    y = op(x)
    node = y.grad_fn
    assert node.__dict__ == {}  # the forward's state went to slots
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), expected_grad(a), rtol=1e-12)
    y.sum().backward()  # the state is still there for a second backward
    np.testing.assert_allclose(x.grad.numpy(), 2 * expected_grad(a), rtol=1e-12)


def test_scalar_node_state_under_create_graph_and_forward_ad():
    a = _x()
    x = tg.tensor(a, requires_grad=True)
    y = (x * x) * 3.0  # d/dx = 6x, d2/dx2 = 6
    (g,) = tg.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 6 * a, rtol=1e-12)
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), np.full_like(a, 6.0), rtol=1e-12)
    import tritongrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor(a), tg.ones(3, 4, dtype=tg.float64))
        out = fwAD.unpack_dual(d / 2.0).tangent
    np.testing.assert_allclose(out.numpy(), np.full_like(a, 0.5), rtol=1e-12)


def test_addmm_node_state_in_slots():
    lin = tg.nn.Linear(4, 3).double()
    a = _x((5, 4), 1)
    x = tg.tensor(a, requires_grad=True)
    y = lin(x)
    node = y.grad_fn
    assert type(node).__name__ == "AddmmBackward0"
    assert "layouts" not in node.__dict__ and "alpha" not in node.__dict__
    g = _x((5, 3), 2)
    y.backward(tg.tensor(g))
    w = lin.weight.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), g @ w, rtol=1e-12)
    np.testing.assert_allclose(lin.weight.grad.numpy(), g.T @ a, rtol=1e-12)
    np.testing.assert_allclose(lin.bias.grad.numpy(), g.sum(0), rtol=1e-12)
    out = tg.addmm(tg.tensor(_x((3,), 3)), x, tg.tensor(_x((4, 3), 4)), beta=0.5, alpha=2.0)
    assert out.grad_fn.beta == 0.5 and out.grad_fn.alpha == 2.0


def test_user_metadata_still_goes_on_a_slotted_node():
    y = tg.ones(2, requires_grad=True) * 2.0
    y.grad_fn.metadata["tag"] = 1
    y.grad_fn.note = "kept"
    assert y.grad_fn.metadata == {"tag": 1} and y.grad_fn.note == "kept"


# -- the NumPy backend's sigmoid entry ----------------------------------------------------------

def _sigmoid64(a):
    return 1 / (1 + np.exp(-np.asarray(a, np.float64)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_sigmoid_entry_against_float64(dtype):
    a = (_x((7, 9), 5) * 6).astype(dtype)
    got = ew.unary("sigmoid", a)
    assert got.dtype == dtype and isinstance(got, np.ndarray)
    tol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-14}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), _sigmoid64(a), rtol=tol, atol=tol)
    out = np.empty_like(a)
    assert ew.unary("sigmoid", a, out=out) is out
    np.testing.assert_array_equal(out, got)
    zero_d = ew.unary("sigmoid", np.asarray(dtype(0.5)))
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == ()


def test_sigmoid_entry_bfloat16_and_silence():
    x = tg.tensor([-3.0, 0.0, 2.5], dtype=tg.bfloat16)
    np.testing.assert_allclose(tg.sigmoid(x).float().numpy(), _sigmoid64([-3.0, 0.0, 2.5]),
                               rtol=1e-2)
    a = np.array([-1000.0, np.nan, -np.inf, np.inf] + [1.0] * 12, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ew.unary("sigmoid", a)
        relu = ew.relu(a)
    assert got[0] == 0 and np.isnan(got[1]) and got[2] == 0 and got[3] == 1
    assert relu[0] == 0 and np.isnan(relu[1]) and relu[3] == np.inf
