"""The engine's fast path hands gradients on as backend arrays (Note [Array gradients],
autograd/engine.py): they are summed in the input buffers as arrays and wrapped as Tensors only
for a node that needs them. Every consumer must still see Tensors with the right values."""

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.autograd import Function
from tritongrad.autograd.tensor import Tensor


def test_many_gradients_summed_into_one_leaf(device):
    # y = y + x, n times: x's accumulator receives n + 1 gradients, summed as arrays
    x0 = np.array([0.5, -1.5, 2.0])
    x = tg.tensor(x0, dtype=tg.float64, device=device, requires_grad=True)
    y = x
    for i in range(40):
        y = y + x * float(i % 3)
    (y * y).sum().backward()
    c = 1 + sum(i % 3 for i in range(40))
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * c * c * x0)
    assert type(x.grad) is Tensor and x.grad.dtype is tg.float64


def test_summed_gradients_reach_a_custom_function_as_one_tensor(device):
    seen = []

    class Scale(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2.0

        @staticmethod
        def backward(ctx, g):
            seen.append((type(g), g.cpu().numpy().copy()))
            return g * 2.0

    x = tg.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = Scale.apply(x.exp())
    (y * 3.0 + y * 4.0 + y.tanh()).sum().backward()
    ty = np.tanh(2 * np.exp([1.0, 2.0]))
    assert seen[0][0] is Tensor
    np.testing.assert_allclose(seen[0][1], 7.0 + (1 - ty ** 2), rtol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.exp([1.0, 2.0]) * seen[0][1],
                               rtol=1e-6)


def test_hooks_see_tensors_of_summed_array_gradients(device):
    seen = {}
    x = tg.tensor([1.0, -2.0], dtype=tg.float64, device=device, requires_grad=True)
    a = x.sin()
    a.register_hook(lambda g: seen.__setitem__("a", g))
    x.register_hook(lambda g: seen.__setitem__("x", g))
    x.register_post_accumulate_grad_hook(lambda p: seen.__setitem__("post", p.grad.clone()))
    ((a * 2.0).sum() + (a * 5.0).sum() + (x * 3.0).sum()).backward()
    assert type(seen["a"]) is Tensor and type(seen["x"]) is Tensor
    np.testing.assert_allclose(seen["a"].cpu().numpy(), [7.0, 7.0])
    expect = 7.0 * np.cos([1.0, -2.0]) + 3.0
    np.testing.assert_allclose(seen["x"].cpu().numpy(), expect)
    np.testing.assert_allclose(seen["post"].cpu().numpy(), expect)


def test_a_root_gradient_and_array_gradients_summed_in_one_slot():
    # y is a root and also feeds z: its buffer holds a Tensor (the root's) and an array
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    z = (y * y).sum()
    tg.autograd.backward([y, z], [tg.tensor([1.0, 10.0]), None])
    expect = 2.0 * (np.array([1.0, 10.0]) + 4.0 * x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), expect)


def test_gradients_of_different_dtypes_in_one_slot_are_promoted():
    # a custom Function's backward may return another dtype; the sum then goes through Tensors
    class Half(Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            return g.to(tg.float64)

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    (Half.apply(y).sum() + (y * 2.0).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert x.grad.dtype is tg.float32


def test_a_fresh_array_gradient_becomes_the_leaf_grad_without_a_copy():
    # the gradient the rule made is adopted as .grad (Note [Gradient stealing]): nothing else
    # holds the array, so .grad is that array, and a second leaf given the same array by
    # add's pass-through rule gets a copy
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0, 4.0], requires_grad=True)
    ((a + b) * 2.0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 2.0])
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.add_(1.0)
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize("retain", [False, True])
def test_graph_with_fan_out_matches_finite_differences(retain):
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal(4)

    def f(t, lib):
        h = lib.tanh(t * 0.7)
        return ((h * h + h * 3.0) * lib.exp(h) + t * h).sum()

    x = tg.tensor(x0, dtype=tg.float64, requires_grad=True)
    out = f(x, tg)
    out.backward(retain_graph=retain)
    eps = 1e-6
    fd = [(f(x0 + eps * e, np) - f(x0 - eps * e, np)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)
    if retain:
        out.backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.array(fd), rtol=1e-6)
