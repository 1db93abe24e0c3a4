"""SiLU, Mish, Softplus, LogSigmoid, Hardswish, Hardsigmoid, Hardtanh as one node each
(autograd/ops/activations.py): values and gradients against float64 NumPy formulas and finite
differences, double backward, forward AD, special values, half precision computed in float32,
and what each saves for backward (its input alone, as PyTorch's)."""

import math

import numpy as np
import pytest

import tritongrad as tg
from tests.helpers import host, sigmoid_ref, softplus_ref, t64
from tritongrad.nn import functional as F


_sig, _softplus = sigmoid_ref, softplus_ref


# (name, call, value formula, derivative formula) in float64 NumPy
CASES = {
    "silu": (F.silu, lambda x: x * _sig(x), lambda x: _sig(x) * (1 + x * (1 - _sig(x)))),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus(x)),
             lambda x: np.tanh(_softplus(x))
             + x * _sig(x) * (1 - np.tanh(_softplus(x)) ** 2)),
    "softplus": (lambda x: F.softplus(x, 2.0, 3.0), lambda x: _softplus(x, 2.0, 3.0),
                 lambda x: np.where(2 * x > 3.0, 1.0, _sig(2 * x))),
    "logsigmoid": (F.logsigmoid, lambda x: -_softplus(-x), lambda x: _sig(-x)),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
                  lambda x: np.where(x <= -3, 0.0, np.where(x < 3, x / 3 + 0.5, 1.0))),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6,
                    lambda x: np.where((x > -3) & (x < 3), 1 / 6, 0.0)),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5),
                 lambda x: np.where((x > -0.5) & (x < 1.5), 1.0, 0.0)),
}
NODES = {"silu": "SiluBackward0", "mish": "MishBackward0", "softplus": "SoftplusBackward0",
         "logsigmoid": "LogSigmoidBackward0", "hardswish": "HardswishBackward0",
         "hardsigmoid": "HardsigmoidBackward0", "hardtanh": "HardtanhBackward0"}


def _points(device):
    # random points, and the kinks of the piecewise ones approached but not met
    xs = np.concatenate([np.random.default_rng(3).uniform(-5, 5, 40),
                         [-3.01, -2.99, 2.99, 3.01, -0.51, -0.49, 1.49, 1.51, 1.49, 1.6]])
    return tg.tensor(xs, device=device, requires_grad=True)


@pytest.mark.parametrize("name", CASES)
def test_value_gradient_and_node(device, name):
    fn, value, deriv = CASES[name]
    x = _points(device)
    y = fn(x)
    assert y.grad_fn.name() == NODES[name]
    assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]
    g = tg.linspace(-1, 1, x.numel(), dtype=tg.float64, device=device)
    y.backward(g)
    xs = host(x)
    np.testing.assert_allclose(host(y), value(xs), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(x.grad), host(g) * deriv(xs), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", CASES)
def test_gradcheck_gradgradcheck_and_forward_ad(name):
    fn = CASES[name][0]
    x = t64((3, 5), low=-4.0, high=4.0).requires_grad_()
    if name.startswith("hard"):  # away from the kinks, where finite differences straddle
        x = tg.tensor(np.array([[-3.7, -2.5, -1.2, -0.3, 0.2], [0.7, 1.1, 2.2, 2.8, 3.6],
                                [-0.8, 0.4, 1.3, -2.9, 2.6]]), requires_grad=True)
    assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_special_values(device, dt):
    x = tg.tensor([-math.inf, math.inf, math.nan, -3.0, 3.0, 0.0], dtype=getattr(tg, dt),
                  device=device, requires_grad=True)
    want = {  # PyTorch's values and gradients at these points
        "silu": ([math.nan, math.inf, math.nan], [math.nan, math.nan, math.nan]),
        "mish": ([math.nan, math.inf, math.nan], [math.nan, math.nan, math.nan]),
        "softplus": ([0.0, math.inf, math.nan], [0.0, 1.0, math.nan]),
        "logsigmoid": ([-math.inf, 0.0, math.nan], [1.0, 0.0, math.nan]),
        "hardswish": ([math.nan, math.inf, math.nan], [0.0, 1.0, 1.0]),
        "hardsigmoid": ([0.0, 1.0, math.nan], [0.0, 0.0, 0.0]),
    }
    for name, (values, grads) in want.items():
        x.grad = None
        with np.errstate(all="ignore"):
            y = getattr(F, name)(x)
            y.sum().backward()
        np.testing.assert_array_equal(host(y)[:3], values, err_msg=name)
        np.testing.assert_array_equal(host(x.grad)[:3], grads, err_msg=name)
    x.grad = None
    with np.errstate(all="ignore"):  # (-inf * 0 in the forward)
        F.hardswish(x).sum().backward()  # the gradient at -3 and 3: the outer pieces', 0, 1
    np.testing.assert_array_equal(host(x.grad)[3:5], [0.0, 1.0])


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_computed_in_float32_and_rounded_once(name, dt):
    fn = CASES[name][0]
    x32 = tg.linspace(-4.5, 4.5, 37, dtype=tg.float32)
    x = x32.to(getattr(tg, dt))
    y = fn(x)
    assert y.dtype is x.dtype
    want = fn(x.float()).to(x.dtype)  # the float32 result rounded once
    np.testing.assert_array_equal(host(y.float()), host(want.float()))


@pytest.mark.parametrize("name", CASES)
def test_saves_the_input_alone(name):
    fn = CASES[name][0]
    x = t64((64, 32)).requires_grad_()
    packed = []
    with tg.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        fn(x)
    assert len(packed) == 1 and packed[0].shape == x.shape


def test_errors_name_the_kernel():
    with pytest.raises(NotImplementedError, match='"mish_cpu" not implemented for'):
        F.mish(tg.tensor([1 + 1j]))
    with pytest.raises(NotImplementedError, match='"log_sigmoid_cpu" not implemented for'):
        F.logsigmoid(tg.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex"):
        F.hardtanh(tg.tensor([1 + 1j]))
    with pytest.raises(TypeError, match="silu"):
        F.silu([1.0])
    z = tg.tensor([1 + 1j, -2 + 0.5j])  # complex SiLU computes, without gradients (PyTorch)
    np.testing.assert_allclose(host(F.silu(z)), host(z) / (1 + np.exp(-host(z))), rtol=1e-6)
    with pytest.raises(RuntimeError, match="silu does not support automatic differentiation"):
        F.silu(z.requires_grad_())
    assert F.hardtanh(tg.tensor([-5, 0, 5]), -2.5, 2.5).tolist() == [-2, 0, 2]


def test_against_torch():
    torch = pytest.importorskip("torch")
    xs = np.random.default_rng(0).uniform(-6, 6, 200)
    for name in CASES:
        ours = CASES[name][0]
        theirs = {"softplus": lambda x: torch.nn.functional.softplus(x, 2.0, 3.0),
                  "hardtanh": lambda x: torch.nn.functional.hardtanh(x, -0.5, 1.5)}.get(
            name, getattr(torch.nn.functional, name))
        for dt in ("float32", "float64", "bfloat16"):
            a = tg.tensor(xs, dtype=getattr(tg, dt), requires_grad=True)
            b = torch.tensor(xs, dtype=getattr(torch, dt), requires_grad=True)
            ya, yb = ours(a), theirs(b)
            assert ya.grad_fn.name() == yb.grad_fn.name()
            ya.sum().backward()
            yb.sum().backward()
            tol = {"float64": 1e-12, "float32": 1e-5, "bfloat16": 1e-2}[dt]
            np.testing.assert_allclose(host(ya.float()), yb.detach().float().numpy(), rtol=tol,
                                       atol=tol, err_msg=f"{name} {dt}")
            np.testing.assert_allclose(host(a.grad.float()), b.grad.float().numpy(), rtol=tol,
                                       atol=tol, err_msg=f"{name} {dt} grad")
