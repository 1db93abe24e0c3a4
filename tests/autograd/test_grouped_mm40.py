"""``_grouped_mm`` / ``F.grouped_mm`` (session 40): Note [Grouped matrix products] in
autograd/ops/products.py. Float64 NumPy references per group, gradcheck through the parts,
hypothesis over group boundaries, PyTorch's errors, and torch 2.13's values where installed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg

rng = np.random.default_rng(40)


def _t(*shape, dtype=tg.float64):
    return tg.tensor(rng.standard_normal(shape), dtype=dtype)


def _offs(*ends):
    return tg.tensor(ends, dtype=tg.int32)


def _reference(a, b, ends):
    """Float64 NumPy: one product per group (rows or columns past the last end stay zero)."""
    a, b = a.double().numpy(), b.double().numpy()
    starts = [0, *ends[:-1]]
    if a.ndim == 2 and b.ndim == 3:
        out = np.zeros((a.shape[0], b.shape[2]))
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[s:e] = a[s:e] @ b[g]
        return out
    if a.ndim == 3:
        out = np.zeros((a.shape[1], b.shape[1]))
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[:, s:e] = a[g] @ b[:, s:e]
        return out
    return np.stack([a[:, s:e] @ b[s:e] for s, e in zip(starts, ends)])


@pytest.mark.parametrize("shapes, ends", [
    (((10, 8), (3, 8, 4)), (3, 7, 10)),     # the MoE forward: tokens per expert
    (((10, 8), (3, 8, 4)), (3, 3, 8)),      # an empty group, rows past the end
    (((3, 5, 8), (8, 12)), (4, 8, 12)),     # columns grouped
    (((5, 12), (12, 4)), (4, 8, 10)),       # the contraction grouped (weight gradient)
])
def test_values_against_float64(shapes, ends):
    a, b = _t(*shapes[0]), _t(*shapes[1])
    got = tg._grouped_mm(a, b, offs=_offs(*ends))
    np.testing.assert_allclose(got.numpy(), _reference(a, b, list(ends)), rtol=1e-12,
                               atol=1e-12)


def test_3d_times_3d_is_bmm():
    a, b = _t(3, 5, 8), _t(3, 8, 4)
    np.testing.assert_allclose(tg._grouped_mm(a, b).numpy(), a.numpy() @ b.numpy(), rtol=1e-12)


@pytest.mark.parametrize("shapes, ends", [
    (((7, 3), (2, 3, 2)), (3, 6)), (((2, 4, 3), (3, 5)), (2, 5)), (((4, 6), (6, 3)), (2, 6)),
])
def test_gradcheck(shapes, ends):
    a, b = _t(*shapes[0]).requires_grad_(), _t(*shapes[1]).requires_grad_()
    assert tg.autograd.gradcheck(lambda x, y: tg._grouped_mm(x, y, offs=_offs(*ends)), (a, b))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), st.integers(0, 3))
def test_any_group_sizes(sizes, extra):
    """Group boundaries anywhere (empty groups, rows past the end), the MoE forward."""
    ends = list(np.cumsum(sizes))
    a, b = _t(int(ends[-1]) + extra, 3), _t(len(sizes), 3, 2)
    got = tg._grouped_mm(a, b, offs=_offs(*ends)).numpy()
    np.testing.assert_allclose(got, _reference(a, b, [int(e) for e in ends]), atol=1e-12)


def test_low_precision_and_out_dtype():
    a, b = _t(6, 4, dtype=tg.bfloat16), _t(2, 4, 3, dtype=tg.bfloat16)
    assert tg._grouped_mm(a, b, offs=_offs(2, 6)).dtype == tg.bfloat16
    wide = tg._grouped_mm(a, b, offs=_offs(2, 6), out_dtype=tg.float32)
    assert wide.dtype == tg.float32
    np.testing.assert_allclose(wide.numpy(), _reference(a.float(), b.float(), [2, 6]),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call, message", [
    (lambda: tg._grouped_mm(_t(10, 8), _t(3, 8, 4)), "Have to provide offsets"),
    (lambda: tg._grouped_mm(_t(2, 3, 8), _t(2, 8, 4), offs=_offs(1)), "Have to provide offsets"),
    (lambda: tg._grouped_mm(_t(8), _t(3, 8, 4), offs=_offs(1)), "mat_a has to be 2 or 3d"),
    (lambda: tg._grouped_mm(_t(10, 8), _t(3, 6, 4), offs=_offs(3, 7, 10)),
     "contraction dimension of mat_a and mat_b must match"),
    (lambda: tg._grouped_mm(_t(10, 8), _t(3, 8, 4), offs=tg.tensor([3, 7, 10])),
     "Offsets have to be int32"),
    (lambda: tg._grouped_mm(_t(10, 8), _t(3, 8, 4), offs=_offs(3, 7)),
     "matrix batch sizes have to match"),
    (lambda: tg._grouped_mm(_t(10, 8), _t(3, 8, 4), offs=_offs(7, 3, 10)), "non-decreasing"),
    (lambda: tg._grouped_mm(_t(10, 8), _t(3, 8, 4), offs=_offs(3, 7, 11)), "within mat_a's rows"),
    (lambda: tg._grouped_mm(_t(10, 8), _t(3, 8, 4), offs=_offs(3, 7, 10), bias=_t(4)),
     "Bias not supported yet"),
    (lambda: tg._grouped_mm(_t(2, 3, 4), _t(3, 4, 5)), "matrix batch sizes have to match"),
])
def test_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_against_torch():
    torch = pytest.importorskip("torch")
    a32, b32 = rng.standard_normal((10, 8)).astype(np.float32), \
        rng.standard_normal((3, 8, 4)).astype(np.float32)
    w = rng.standard_normal((10, 4)).astype(np.float32)
    results = []
    for lib in (torch, tg):
        a = lib.tensor(a32, requires_grad=True)
        b = lib.tensor(b32, requires_grad=True)
        out = lib._grouped_mm(a, b, offs=lib.tensor([3, 7, 10], dtype=lib.int32))
        (out * lib.tensor(w)).sum().backward()
        results.append([out.detach().numpy(), a.grad.numpy(), b.grad.numpy()])
    for mine, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5)


def test_on_cuda():
    """The parts run on the CUDA backend (Triton's kernels; the interpreter on the emulated
    device), gradients included."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device (real or emulated)")
    a, b = _t(6, 4, dtype=tg.float32), _t(2, 4, 3, dtype=tg.float32)
    ac, bc = a.cuda().requires_grad_(), b.cuda().requires_grad_()
    out = tg._grouped_mm(ac, bc, offs=_offs(2, 5).cuda())
    out.sum().backward()
    np.testing.assert_allclose(out.cpu().detach().numpy(), _reference(a, b, [2, 5]),
                               rtol=1e-4, atol=1e-4)
    expected_a = np.zeros((6, 4), np.float32)
    expected_a[:2] = b.numpy()[0].sum(1)
    expected_a[2:5] = b.numpy()[1].sum(1)
    np.testing.assert_allclose(ac.grad.cpu().numpy(), expected_a, rtol=1e-5)


def test_functional_form():
    a, b = _t(10, 8), _t(3, 8, 4)
    np.testing.assert_array_equal(
        tg.nn.functional.grouped_mm(a, b, offs=_offs(3, 7, 10)).numpy(),
        tg._grouped_mm(a, b, offs=_offs(3, 7, 10)).numpy())
