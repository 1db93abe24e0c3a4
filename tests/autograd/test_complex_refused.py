"""Note [Complex autograd]: until the rules follow PyTorch's complex convention, recording an
op on complex tensors refuses with a clear error instead of giving wrong gradients (mul's rule
has no conjugate, so the gradient of |z * z| came out wrong), and complex tensors that need no
gradient compute as before."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg

MESSAGE = "does not support automatic differentiation for {} with complex dtype"


@pytest.mark.parametrize("fn", [lambda z: z * z, lambda z: z.abs(), lambda z: z.exp(),
                                lambda z: z.sum(), lambda z: z + 1, lambda z: z @ z],
                         ids=["mul", "abs", "exp", "sum", "add", "matmul"])
def test_ops_on_complex_tensors_that_require_grad_refuse(fn):
    z = tg.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match=MESSAGE.format("inputs")):
        fn(z)


def test_a_real_tensor_made_complex_refuses_and_in_place_ops_refuse_too():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="to " + MESSAGE.format("outputs")):
        x.to(tg.complex64)
    z = tg.tensor([1 + 2j, 3 - 1j])
    with pytest.raises(RuntimeError, match=MESSAGE.format("(inputs|outputs)")):
        z.mul_(x)


def test_complex_values_without_grad_still_compute():
    z = tg.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    np.testing.assert_allclose((z.detach() * z.detach()).numpy(), [-3 + 4j, 8 - 6j])
    with tg.no_grad():
        np.testing.assert_allclose(z.exp().numpy(), np.exp([1 + 2j, 3 - 1j]), rtol=1e-6)
