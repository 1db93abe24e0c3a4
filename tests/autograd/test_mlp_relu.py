"""The ReLU MLP's ops through autograd, with the NumPy backend's compiled loops (ReLU, the
``where`` selects) and without them: PyTorch's gradients (float64 references, finite
differences, NaN and -0.0), the saved output's version check, double backward, forward AD,
the cross-entropy mean's divisor, and one SGD step of a small MLP against float64 NumPy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tritongrad.kernels.numpy import jit

import tritongrad as tg
from tests.helpers import assert_grads_match, second_order


@pytest.fixture(params=["loops", "numpy"])
def forms(request):
    """With the compiled CPU loops and with the NumPy forms they replace."""
    if request.param == "numpy":
        with jit.disabled():
            yield request.param
        return
    if not jit.enabled():
        pytest.skip("the compiled CPU loops are off")
    yield request.param


def _away_from_zero(rng, shape):
    return rng.uniform(0.1, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_relu_matches_float64_reference(forms, dtype):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((7, 257))
    x0.reshape(-1)[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-300]
    g0 = rng.standard_normal((7, 257))
    x = tg.tensor(x0, dtype=dtype, requires_grad=True)
    y = x.relu()
    y.backward(tg.tensor(g0, dtype=dtype))
    x64 = x0.astype(dtype.np).astype(np.float64)
    want = np.where(x64 <= 0, 0.0, g0.astype(dtype.np))  # NaN passes the gradient (PyTorch)
    np.testing.assert_array_equal(x.grad.numpy(), want)
    np.testing.assert_array_equal(y.detach().numpy(), np.where(x64 < 0, 0.0, x64))
    if forms == "loops":  # PyTorch's relu(-0.0) is -0.0
        assert np.signbit(y.detach().numpy()[0, 1])


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.float16])
def test_relu_on_each_backend(device, dtype):
    x0 = np.array([[np.nan, -0.0, 0.0, np.inf, -np.inf, -1.5],
                   [2.5, -3.0, 1e-3, -1e-3, 4.0, 0.5]])
    g0 = np.arange(1.0, 13.0).reshape(2, 6)
    x = tg.tensor(x0, dtype=dtype, device=device, requires_grad=True)
    y = x.relu()
    y.backward(tg.tensor(g0, dtype=dtype, device=device))
    np.testing.assert_array_equal(x.grad.cpu().numpy().astype(np.float64),
                                  np.where(x0 <= 0, 0.0, g0))
    xr = x0.astype(dtype.np).astype(np.float64)  # (the values the dtype holds)
    np.testing.assert_array_equal(y.detach().cpu().numpy().astype(np.float64),
                                  np.where(xr < 0, 0.0, xr))


def test_finite_differences_and_second_order(forms):
    rng = np.random.default_rng(1)
    x = tg.tensor(_away_from_zero(rng, (3, 5)))
    w = tg.tensor(_away_from_zero(rng, (5, 4)))
    assert_grads_match(lambda a, b: (a.relu() @ b).relu() * a.sum(), [x, w])
    second_order(lambda a: a.relu() * a * a, x)
    second_order(lambda a, b: (a @ b).relu() * (a @ b), [x, w])
    # where's selects, both branch kinds, to second order
    m = tg.tensor(rng.random((3, 5)) < 0.5)
    assert_grads_match(lambda a: a.where(m, 0.0) * a + a.where(~m, a * 2), [x])
    second_order(lambda a: a.where(m, 1.5) * a, x)


def test_in_place_change_of_the_output_still_raises(forms):
    x = tg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.relu()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    z = x * 1
    z.relu_()
    assert z.grad_fn.name() == "ReluBackward0"
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    z = x * 1
    z.relu_()
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]


def test_retain_graph_and_create_graph(forms):
    x = tg.tensor([[0.5, -1.0], [2.0, -0.0]], requires_grad=True)
    y = x.relu()
    (y * y).sum().backward(retain_graph=True)
    first = x.grad.numpy().copy()
    (g,) = tg.autograd.grad((y * y).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), first)
    (gg,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(gg.numpy(), [[2.0, 0.0], [2.0, 0.0]])


def test_forward_ad(forms):
    import tritongrad.autograd.forward_ad as fwAD
    x = tg.tensor([1.0, -2.0, 0.0, 3.0])
    t = tg.tensor([10.0, 20.0, 30.0, 40.0])
    with fwAD.dual_level():
        y = fwAD.make_dual(x, t).relu()
        assert fwAD.unpack_dual(y).tangent.tolist() == [10.0, 0.0, 0.0, 40.0]


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.bfloat16])
def test_cross_entropy_mean_divides_by_the_rows_kept(device, dtype):
    rng = np.random.default_rng(2)
    z0 = rng.standard_normal((6, 4))
    t0 = np.array([0, 1, -100, 3, 2, -100])
    z = tg.tensor(z0, dtype=dtype, device=device, requires_grad=True)
    loss = tg.nn.functional.cross_entropy(z, tg.tensor(t0, device=device))
    # one node, the mean inside it (as PyTorch's NllLossBackward0): no sum or div nodes
    assert loss.dtype is dtype and loss.grad_fn.name() == "CrossEntropyLossBackward0"
    # (the target is saved, not an edge: Note [Saved indices])
    assert [type(f).__name__ for f, _ in loss.grad_fn.next_functions] == ["AccumulateGrad"]
    zz = z.detach().cpu().to(tg.float64).numpy()
    lse = np.log(np.exp(zz).sum(1))
    rows = [lse[i] - zz[i, t] for i, t in enumerate(t0) if t != -100]
    tol = 2e-2 if dtype is tg.bfloat16 else 1e-6
    np.testing.assert_allclose(loss.item(), np.mean(rows), rtol=tol)
    loss.backward()
    p = np.exp(zz - lse[:, None])
    want = np.zeros_like(p)
    for i, t in enumerate(t0):
        if t != -100:
            want[i] = p[i]
            want[i, t] -= 1
    np.testing.assert_allclose(z.grad.cpu().to(tg.float64).numpy(), want / 4, atol=tol)
    # every row ignored: 0 / 0 = NaN, with a zero gradient (PyTorch's)
    z.grad = None
    loss = tg.nn.functional.cross_entropy(z, tg.tensor([-100] * 6, device=device))
    assert np.isnan(loss.item())
    loss.backward()
    assert not z.grad.cpu().to(tg.float64).numpy().any()


def test_mlp_step_matches_float64_reference(forms):
    """One SGD step of a small ReLU MLP against hand-written float64 NumPy."""
    rng = np.random.default_rng(3)
    sizes = (13, 17, 9, 4)
    ws = [rng.uniform(-0.5, 0.5, (o, i)) for i, o in itertools.pairwise(sizes)]
    bs = [rng.uniform(-0.5, 0.5, (o,)) for o in sizes[1:]]
    x0 = rng.standard_normal((8, sizes[0]))
    y0 = rng.integers(0, sizes[-1], 8)
    model = tg.nn.Sequential(tg.nn.Linear(13, 17), tg.nn.ReLU(), tg.nn.Linear(17, 9),
                             tg.nn.ReLU(), tg.nn.Linear(9, 4)).to(tg.float64)
    with tg.no_grad():
        for layer, w, b in zip(model[::2], ws, bs):
            layer.weight.copy_(tg.tensor(w))
            layer.bias.copy_(tg.tensor(b))
    opt = tg.optim.SGD(model.parameters(), lr=0.1)
    loss = tg.nn.functional.cross_entropy(model(tg.tensor(x0)), tg.tensor(y0))
    loss.backward()
    opt.step()
    hs, a = [], x0
    for i, (w, b) in enumerate(zip(ws, bs)):
        h = a @ w.T + b
        hs.append((a, h))
        a = np.maximum(h, 0) if i < 2 else h
    z = a - a.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    np.testing.assert_allclose(loss.item(), -np.log(p[np.arange(8), y0]).mean(), rtol=1e-12)
    d = p.copy()
    d[np.arange(8), y0] -= 1
    d /= 8
    for i in (2, 1, 0):
        a_in, h = hs[i]
        layer = model[2 * i]
        np.testing.assert_allclose(layer.weight.detach().numpy(), ws[i] - 0.1 * (d.T @ a_in),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(layer.bias.detach().numpy(), bs[i] - 0.1 * d.sum(0),
                                   rtol=1e-12, atol=1e-14)
        if i:
            d = (d @ ws[i]) * (hs[i - 1][1] > 0)
