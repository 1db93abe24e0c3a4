"""Max pooling's fused CPU node (autograd/ops/pooling.py): PyTorch's node names, every float
dtype, first and second derivatives and forward-mode AD, agreement with the composite the
CUDA device runs (windows and a max), and PyTorch's NaN rule (the last NaN of a window)."""

from __future__ import annotations

import numpy as np
import pytest

import tritongrad as tg

F = tg.nn.functional

CASES = [  # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 7, 6), 2, None, 0, 1, False),
    ((1, 2, 9, 8), 3, 2, 1, 1, True),
    ((2, 1, 7, 7), (3, 2), (1, 2), (1, 0), (2, 1), False),
    ((1, 2, 5, 6, 4), 2, 1, 1, 1, False),
    ((2, 1, 6, 5, 7), (3, 2, 2), 2, (1, 0, 1), (1, 2, 1), True),
]


def _pool(x, case, **kw):
    shape, k, s, p, d, ceil = case
    fn = F.max_pool3d if len(shape) == 5 else F.max_pool2d
    return fn(x, k, s, p, d, ceil_mode=ceil, **kw)


def _distinct(shape, seed=0, dtype=np.float64):
    """Values without ties (the gradient of a tie depends on the scan)."""
    rng = np.random.default_rng(seed)
    return (rng.permutation(int(np.prod(shape))).reshape(shape) / 7.0 - 3.0).astype(dtype)


def test_node_names():
    x = tg.randn(2, 3, 8, 8, requires_grad=True)
    assert F.max_pool2d(x, 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    y, i = F.max_pool2d(x, 2, return_indices=True)
    assert y.grad_fn.name() == "MaxPool2DWithIndicesBackward0" and not i.requires_grad
    x3 = tg.randn(1, 2, 4, 4, 4, requires_grad=True)
    assert F.max_pool3d(x3, 2).grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    # PyTorch's max_pool1d: a 2-D pool, squeezed
    y1 = F.max_pool1d(tg.randn(2, 3, 8, requires_grad=True), 2)
    assert y1.grad_fn.next_functions[0][0].name() == "MaxPool2DWithIndicesBackward0"


@pytest.mark.parametrize("case", CASES)
def test_gradients_first_second_and_forward(case):
    x = tg.tensor(_distinct(case[0]), requires_grad=True)
    fn = lambda t: _pool(t, case)  # noqa: E731
    assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("case", CASES)
def test_cpu_node_agrees_with_the_cuda_composite(case):
    x = _distinct(case[0], seed=1, dtype=np.float32)
    g = np.random.default_rng(2).standard_normal(
        tuple(_pool(tg.tensor(x), case).shape)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        xt = tg.tensor(x, device=device, requires_grad=True)
        y, idx = _pool(xt, case, return_indices=True)
        y.backward(tg.tensor(g, device=device))
        results.append((y.detach().cpu().numpy(), idx.cpu().numpy(), xt.grad.cpu().numpy()))
    (y0, i0, g0), (y1, i1, g1) = results
    np.testing.assert_array_equal(y0, y1)
    np.testing.assert_array_equal(i0, i1)
    np.testing.assert_allclose(g0, g1, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16, tg.float32, tg.float64])
def test_dtypes(dtype):
    x64 = _distinct((2, 3, 6, 6), seed=3)
    x = tg.tensor(x64, dtype=dtype, requires_grad=True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    assert y.dtype is dtype and idx.dtype is tg.int64
    want = tg.tensor(x64, dtype=dtype).numpy().astype(np.float64).reshape(2, 3, 3, 2, 3, 2)
    np.testing.assert_array_equal(y.detach().double().numpy(), want.max((3, 5)))
    y.sum().backward()
    assert x.grad.dtype is dtype
    np.testing.assert_array_equal(x.grad.float().numpy().reshape(2, 3, 3, 2, 3, 2).sum((3, 5)),
                                  np.ones((2, 3, 3, 3)))


def test_nan_points_at_the_last_nan_and_ties_at_the_first():
    x = tg.tensor([[[[np.nan, 1.0, np.nan, 2.0], [3.0, 5.0, 5.0, 4.0]]]], requires_grad=True)
    y, idx = F.max_pool2d(x, (1, 4), return_indices=True)
    assert np.isnan(y[0, 0, 0, 0].item()) and y[0, 0, 1, 0].item() == 5.0
    assert idx.flatten().tolist() == [2, 5]  # the last NaN (PyTorch's scan); the first tie
    y.nansum().backward()
    assert x.grad.flatten().tolist() == [0, 0, 0, 0, 0, 1, 0, 0]
