"""as_strided's gradient when its input reads one storage element through several of its own
elements (an expanded tensor): each aliased element gets the element's gradient divided by
their number, as ATen's as_strided_backward, so the expand's sum gives it back once."""

import numpy as np
import pytest

import tritongrad as tg


def test_diagonal_of_an_expanded_tensor(device):
    x = tg.tensor(np.arange(4.0).reshape(2, 2), device=device, requires_grad=True)
    x.expand((3, 2, 2)).diagonal(dim1=-2, dim2=-1).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), 3 * np.eye(2))


@pytest.mark.parametrize("shape, strides, offset", [((2, 2), (1, 1), 1), ((3,), (1,), 0),
                                                    ((2, 3), (0, 1), 1)])
def test_as_strided_of_an_expanded_tensor_against_finite_differences(shape, strides, offset):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(4)
    w = rng.standard_normal(shape)

    def f(x):
        return (x.expand(3, 4).as_strided(shape, strides, offset) * tg.tensor(w)).sum()

    x = tg.tensor(x0, requires_grad=True)
    f(x).backward()
    # the view reads storage positions offset + sum(i * s); x's storage is x0 itself
    expect = np.zeros(4)
    for idx in np.ndindex(*shape):
        expect[offset + sum(i * s for i, s in zip(idx, strides))] += w[idx]
    np.testing.assert_allclose(x.grad.numpy(), expect)
    assert tg.autograd.gradcheck(f, (tg.tensor(x0, requires_grad=True),))
    assert tg.autograd.gradgradcheck(lambda x: f(x) * f(x), (tg.tensor(x0, requires_grad=True),))
    torch = pytest.importorskip("torch")
    t = torch.tensor(x0, requires_grad=True)
    (t.expand(3, 4).as_strided(shape, strides, offset) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
