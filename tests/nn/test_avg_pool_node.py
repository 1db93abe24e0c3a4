"""Average pooling's fused CPU nodes (autograd/ops/pooling.py): PyTorch's node names, values
and gradients against a float64 reference written from PyTorch's rule, both CPU kernel forms
(compiled loops and NumPy), first and second derivatives and forward-mode AD, agreement with
the composite the CUDA device runs (windows and a sum), every float dtype, channels-last
layouts and an empty batch."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.kernels.numpy import jit

F = tg.nn.functional

CASES = [  # (shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ((2, 3, 7, 6), 2, None, 0, False, True, None),
    ((1, 2, 9, 8), 3, 2, 1, True, True, None),
    ((1, 2, 9, 8), 3, 2, 1, True, False, None),
    ((2, 1, 7, 7), (3, 2), (1, 2), (1, 0), False, False, 5),
    ((2, 3, 10), 4, 3, 2, True, False, None),  # 1-D
    ((1, 2, 5, 6, 4), 2, 1, 1, False, True, None),
    ((2, 1, 6, 5, 7), (3, 2, 2), 2, (1, 0, 1), True, False, None),
    ((1, 1, 5, 5, 5), 3, 2, 1, True, True, 4),
]


def _pool(x, case):
    shape, k, s, p, ceil, include_pad, override = case
    if len(shape) == 3:
        return F.avg_pool1d(x, k, s, p, ceil, include_pad)
    fn = F.avg_pool3d if len(shape) == 5 else F.avg_pool2d
    return fn(x, k, s, p, ceil, include_pad, override)


def _triple(v, nd, default):
    v = default if v is None else v
    return (v,) * nd if isinstance(v, int) else tuple(v)


def _reference(x, case):
    """avg_pool in float64, output by output, from PyTorch's CPU kernel's rule: the window
    clipped to the padded input sets the divisor (``count_include_pad``), clipped to the input
    the taps summed (and the divisor otherwise)."""
    shape, k, s, p, ceil, include_pad, override = case
    nd = len(shape) - 2
    k, p = _triple(k, nd, None), _triple(p, nd, 0)
    s = _triple(s, nd, None) if s is not None else k
    sizes, out = shape[2:], []
    for n, kk, ss, pp in zip(sizes, k, s, p):
        o = (n + 2 * pp - kk + (ss - 1 if ceil else 0)) // ss + 1
        if ceil and (o - 1) * ss >= n + pp:  # the last window must start inside
            o -= 1
        out.append(o)
    y = np.zeros(shape[:2] + tuple(out))
    for pos in itertools.product(*(range(o) for o in out)):
        lo = [o * ss - pp for o, ss, pp in zip(pos, s, p)]
        hi = [min(a + kk, n + pp) for a, kk, n, pp in zip(lo, k, sizes, p)]
        padded = np.prod([b - a for a, b in zip(lo, hi)])
        lo = [max(a, 0) for a in lo]
        hi = [min(b, n) for b, n in zip(hi, sizes)]
        window = x[(Ellipsis,) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        divisor = override or (padded if include_pad else
                               np.prod([b - a for a, b in zip(lo, hi)]))
        y[(Ellipsis,) + pos] = window.sum(axis=tuple(range(2, 2 + nd))) / divisor
    return y


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_against_the_reference(case, compiled):
    rng = np.random.default_rng(0)
    x64 = rng.standard_normal(case[0])
    want = _reference(x64, case)
    g = rng.standard_normal(want.shape)
    # the gradient is the transposed op: <g, pool(e_i)> for each input position i
    eye = np.eye(x64.size).reshape((x64.size,) + case[0])
    want_dx = np.array([(_reference(e, case) * g).sum() for e in eye]).reshape(case[0])
    if compiled and not jit.enabled():
        pytest.skip("the compiled loops do not run here")
    with jit.disabled() if not compiled else contextlib.nullcontext():
        x = tg.tensor(x64, requires_grad=True)
        y = _pool(x, case)
        y.backward(tg.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), want_dx, rtol=1e-12, atol=1e-12)


def test_node_names():
    x = tg.randn(2, 3, 8, 8, requires_grad=True)
    y = F.avg_pool2d(x, 2)
    assert y.grad_fn.name() == "AvgPool2DBackward0"
    (dx,) = tg.autograd.grad(y.sum(), x, create_graph=True)
    assert dx.grad_fn.name() == "AvgPool2DBackwardBackward0"
    x3 = tg.randn(1, 2, 4, 4, 4, requires_grad=True)
    assert F.avg_pool3d(x3, 2).grad_fn.name() == "AvgPool3DBackward0"
    # PyTorch's avg_pool1d: a 2-D pool, squeezed
    y1 = F.avg_pool1d(tg.randn(2, 3, 8, requires_grad=True), 2)
    assert y1.grad_fn.next_functions[0][0].name() == "AvgPool2DBackward0"
    # unbatched input: the pool of the input unsqueezed
    assert F.avg_pool2d(tg.randn(3, 8, 8, requires_grad=True), 2).grad_fn.name() == \
        "SqueezeBackward1"


@pytest.mark.parametrize("case", CASES)
def test_gradients_first_second_and_forward(case):
    x = tg.tensor(np.random.default_rng(1).standard_normal(case[0]), requires_grad=True)
    fn = lambda t: _pool(t, case)  # noqa: E731
    assert tg.autograd.gradcheck(fn, (x,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(fn, (x,), check_fwd_over_rev=True)


@pytest.mark.parametrize("case", CASES)
def test_cpu_node_agrees_with_the_cuda_composite(case):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(case[0]).astype(np.float32)
    g = rng.standard_normal(tuple(_pool(tg.tensor(x), case).shape)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda"):
        xt = tg.tensor(x, device=device, requires_grad=True)
        y = _pool(xt, case)
        y.backward(tg.tensor(g, device=device))
        results.append((y.detach().cpu().numpy(), xt.grad.cpu().numpy()))
    (y0, g0), (y1, g1) = results
    np.testing.assert_allclose(y0, y1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g0, g1, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16, tg.float32, tg.float64])
def test_dtypes(dtype):
    x64 = np.random.default_rng(3).standard_normal((2, 3, 6, 6))
    x = tg.tensor(x64, dtype=dtype, requires_grad=True)
    y = F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)
    assert y.dtype is dtype
    case = ((2, 3, 6, 6), 3, 1, 1, False, False, None)
    xr = tg.tensor(x64, dtype=dtype).double().numpy()  # the input as rounded to dtype
    tol = {tg.float16: 1e-3, tg.bfloat16: 1e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(y.detach().double().numpy(), _reference(xr, case), rtol=tol,
                               atol=tol)
    y.sum().backward()
    assert x.grad.dtype is dtype


def test_channels_last_layouts():
    """A channels-last input gives a channels-last result and input gradient (PyTorch's
    suggest_memory_format); a row-major one keeps row-major."""
    x0 = tg.randn(2, 5, 6, 7)
    for fmt in (tg.channels_last, tg.contiguous_format):
        x = x0.detach().contiguous(memory_format=fmt).requires_grad_()
        y = F.avg_pool2d(x, 3, 2, 1)
        y.backward(tg.randn(tuple(y.shape)).contiguous(memory_format=fmt))
        assert y.is_contiguous(memory_format=fmt)
        assert x.grad.is_contiguous(memory_format=fmt)
        np.testing.assert_allclose(y.detach().numpy(),
                                   F.avg_pool2d(x0, 3, 2, 1).numpy(), rtol=1e-6)
    x3 = tg.randn(1, 3, 4, 5, 6).contiguous(memory_format=tg.channels_last_3d).requires_grad_()
    F.avg_pool3d(x3, 2).sum().backward()
    assert x3.grad.is_contiguous(memory_format=tg.channels_last_3d)


def test_empty_batch():
    x = tg.zeros(0, 3, 6, 6, requires_grad=True)
    y = F.avg_pool2d(x, 2)
    assert tuple(y.shape) == (0, 3, 3, 3)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 6, 6)
