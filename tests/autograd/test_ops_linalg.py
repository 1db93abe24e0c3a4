"""Matrix products (autograd/ops/linalg.py): bmm, and matmul's 1-D, folded and batch-broadcast
forms, against NumPy's matmul, with gradients by finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match, t64, host

rng = np.random.default_rng(3)


@pytest.mark.parametrize("b,n,m,p", [(1, 1, 1, 1), (3, 4, 5, 2), (2, 1, 7, 3), (4, 3, 1, 5)])
def test_bmm(b, n, m, p, device):
    x, y = t64((b, n, m), device), t64((b, m, p), device)
    np.testing.assert_allclose(host(tg.bmm(x, y)), host(x) @ host(y), rtol=1e-12)
    np.testing.assert_allclose(host(x.bmm(y)), host(x) @ host(y), rtol=1e-12)
    assert_grads_match(tg.bmm, [x, y])


def test_bmm_transposed_and_expanded_operands(device):
    x, y = t64((3, 5, 4), device), t64((3, 5, 2), device)
    assert_grads_match(lambda a, b: a.transpose(1, 2).bmm(b), [x, y])
    w = t64((1, 4, 2), device)
    assert_grads_match(lambda a, b: a.transpose(1, 2).bmm(b.expand(3, 5, 2)), [x, y])
    assert_grads_match(lambda a, b: tg.bmm(a, b.expand(3, 4, 2)), [x, w])


def test_bmm_second_order(device):
    x, y = t64((2, 3, 4), device), t64((2, 4, 2), device)
    w = rng.uniform(0.5, 1.5, (2, 3, 4))

    def first(a, b):
        a = a if a.requires_grad else a.detach().requires_grad_(True)
        b = b if b.requires_grad else b.detach().requires_grad_(True)
        out = (tg.bmm(a, b) ** 2).sum()
        ga, = tg.autograd.grad(out, a, create_graph=True)
        return (ga * tg.tensor(w, dtype=ga.dtype, device=ga.device)).sum()

    assert_grads_match(first, [x, y], atol=1e-5, rtol=1e-4)


SHAPES = [
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 5)),
    ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (6, 4, 2)), ((5, 1, 2, 3), (4, 3, 6)), ((1, 4), (4, 1)), ((0, 3), (3, 2)),
    ((2, 0, 4), (4, 3)),
]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_shapes(sa, sb, device):
    a, b = t64(sa, device), t64(sb, device)
    out = a @ b
    ref = np.matmul(host(a), host(b))
    assert tuple(out.shape) == ref.shape
    np.testing.assert_allclose(host(out), ref, rtol=1e-12)
    np.testing.assert_allclose(host(tg.matmul(a, b)), ref, rtol=1e-12)
    if a.numel() and b.numel():
        assert_grads_match(lambda x, y: x @ y, [a, b])


def test_matmul_non_contiguous(device):
    a = t64((2, 3, 4), device)
    b = t64((3, 10), device)
    np.testing.assert_allclose(host(a.transpose(1, 2) @ b[:, ::2]),
                               np.matmul(host(a).transpose(0, 2, 1), host(b)[:, ::2]),
                               rtol=1e-12)
    assert_grads_match(lambda x, y: x.transpose(1, 2) @ y[:, ::2], [a, b])


@pytest.mark.parametrize("dtype,tol", [(tg.float32, 1e-5), (tg.float16, 2e-2), (tg.bfloat16, 5e-2)])
def test_matmul_low_precision(dtype, tol, device):
    a = rng.standard_normal((3, 4, 8))
    b = rng.standard_normal((8, 5))
    out = tg.tensor(a, dtype=dtype, device=device) @ tg.tensor(b, dtype=dtype, device=device)
    assert out.dtype is dtype
    np.testing.assert_allclose(host(out).astype(np.float64), a @ b, rtol=tol, atol=tol * 3)
    out = tg.bmm(tg.tensor(a, dtype=dtype, device=device),
                 tg.tensor(np.stack([b] * 3), dtype=dtype, device=device))
    np.testing.assert_allclose(host(out).astype(np.float64), a @ b, rtol=tol, atol=tol * 3)


def test_matmul_errors(device):
    with pytest.raises(RuntimeError, match=r"matmul: shapes \(2, 3, 4\) and \(2, 5, 6\) cannot "
                                           r"be multiplied \(4 != 5\)"):
        tg.ones(2, 3, 4, device=device) @ tg.ones(2, 5, 6, device=device)
    with pytest.raises(RuntimeError, match="batch dimensions"):
        tg.ones(2, 3, 4, device=device) @ tg.ones(3, 4, 6, device=device)
    with pytest.raises(RuntimeError, match="at least 1D"):
        tg.ones((), device=device) @ tg.ones(3, device=device)
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        tg.ones(3, device=device) @ tg.ones(4, device=device)
    with pytest.raises(RuntimeError, match="bmm: expected 3-D tensors"):
        tg.bmm(tg.ones(3, 4, device=device), tg.ones(4, 5, device=device))
    with pytest.raises(RuntimeError, match=r"bmm: shapes \(2, 3, 4\) and \(3, 4, 5\)"):
        tg.bmm(tg.ones(2, 3, 4, device=device), tg.ones(3, 4, 5, device=device))
    with pytest.raises(RuntimeError, match="expected scalar type"):
        tg.bmm(tg.ones(2, 3, 4, device=device),
               tg.ones(2, 4, 5, dtype=tg.float64, device=device))
    with pytest.raises(TypeError, match="must be Tensor"):
        tg.ones(3, device=device) @ [1.0, 2.0, 3.0]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_matmul_broadcast_property(data):
    """Random batch-broadcastable operands (1-D to 4-D): values match NumPy and gradients match
    finite differences."""
    n, m, p = (data.draw(st.integers(1, 3)) for _ in range(3))
    nb = data.draw(st.integers(0, 2))
    batch = [data.draw(st.integers(1, 3)) for _ in range(nb)]

    def operand(core):
        k = data.draw(st.integers(0, nb))
        return tuple(1 if data.draw(st.booleans()) else s for s in batch[nb - k:]) + core

    sa = (m,) if data.draw(st.booleans()) and nb == 0 else operand((n, m))
    sb = (m,) if data.draw(st.booleans()) and len(sa) > 1 else operand((m, p))
    a, b = t64(sa, "cpu"), t64(sb, "cpu")
    np.testing.assert_allclose((a @ b).numpy(), np.matmul(a.numpy(), b.numpy()), rtol=1e-12)
    assert_grads_match(lambda x, y: x @ y, [a, b], atol=1e-5)


def test_cholesky_fails_on_a_nan_pivot_as_lapack():
    # NumPy's cholesky returns NaNs for a NaN pivot; LAPACK's potrf (PyTorch) reports it
    nan, inf = float("nan"), float("inf")
    for a, info in (([[nan, 0.0], [0.0, 1.0]], 1), ([[1.0, 0.0], [0.0, nan]], 2),
                    ([[inf, 0.0], [0.0, 1.0]], 0), ([[4.0, inf], [inf, 1.0]], 2)):
        assert tg.linalg.cholesky_ex(tg.tensor(a, dtype=tg.float64)).info.item() == info
    with pytest.raises(tg.linalg.LinAlgError, match="leading minor of order 2"):
        tg.linalg.cholesky(tg.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, nan]]]))
