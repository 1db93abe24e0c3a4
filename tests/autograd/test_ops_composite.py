"""Pointwise and statistical composites (autograd/ops/composite.py): values against NumPy
float64, gradients by finite differences, PyTorch's dtype rules and errors; and the small
compatibility surfaces that go with them: tritongrad.backends and bool printing."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tritongrad as tg
from tests.helpers import assert_grads_match, host, second_order, t64

NAN, INF = math.nan, math.inf


def close(t, ref, rtol=1e-10, atol=1e-12):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_allclose(host(t), ref, rtol=rtol, atol=atol)


# -- std_mean / var_mean ------------------------------------------------------------------------

@pytest.mark.parametrize("fn,ref", [(tg.std_mean, np.std), (tg.var_mean, np.var)])
def test_stat_mean(fn, ref, device):
    x = t64((3, 4), device)
    a = host(x)
    s, m = fn(x)
    close(s, ref(a, ddof=1))
    close(m, a.mean())
    s, m = fn(x, 1, keepdim=True, correction=0)
    close(s, ref(a, axis=1, keepdims=True))
    close(m, a.mean(1, keepdims=True))
    s, m = fn(x, (0,), False)  # the legacy positional unbiased=False
    close(s, ref(a, axis=0))
    s, _ = fn(x, True)  # fn(x, unbiased)
    close(s, ref(a, ddof=1))
    assert type(fn(x)) is tuple
    assert_grads_match(lambda t: sum(fn(t, 0)), [x])


# -- isclose / allclose ---------------------------------------------------------------------------

def test_isclose_matches_numpy(device):
    a = tg.tensor([1.0, 1.0, NAN, INF, INF, -INF, 0.0, 1e-9], dtype=tg.float64, device=device)
    b = tg.tensor([1.0 + 1e-6, 1.1, NAN, INF, -INF, -INF, 1e-9, 0.0], dtype=tg.float64,
                  device=device)
    for kw in ({}, {"equal_nan": True}, {"rtol": 0, "atol": 0}, {"rtol": 0.2, "atol": 1e-12}):
        same = np.isclose(host(a), host(b), **kw)
        assert host(tg.isclose(a, b, **kw)).tolist() == same.tolist(), kw
        assert tg.allclose(a, b, **kw) is bool(same.all())
    assert a.isclose(a, equal_nan=True).all().item()
    assert tg.allclose(tg.tensor([1, 2]), tg.tensor([1, 3]), atol=1)
    assert tg.isclose(tg.tensor([True, False]), tg.tensor([True, True])).tolist() == [True, False]


def test_isclose_broadcasts_and_errors():
    assert tg.isclose(tg.ones(2, 1), tg.ones(3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        tg.isclose(tg.zeros(3), tg.zeros(3, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got "
                                           "-1"):
        tg.isclose(tg.zeros(3), tg.zeros(3), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        tg.allclose(tg.zeros(3), tg.zeros(3), atol=-1)


# -- nan_to_num -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tg.float32, tg.float64, tg.float16])
def test_nan_to_num(dtype, device):
    vals = [NAN, INF, -INF, 1.5, -2.0]
    x = tg.tensor(vals, dtype=dtype, device=device)
    npx = np.array(vals, dtype=dtype.np)
    close(tg.nan_to_num(x), np.nan_to_num(npx), rtol=0, atol=0)
    close(x.nan_to_num(1.0, 2.0, -3.0), np.nan_to_num(npx, nan=1.0, posinf=2.0, neginf=-3.0))
    y = x.clone()
    assert y.nan_to_num_(posinf=9.0) is y
    close(y, np.nan_to_num(npx, posinf=9.0))


def test_nan_to_num_integers_and_gradient(device):
    i = tg.tensor([1, 2], device=device)
    r = tg.nan_to_num(i)
    assert r.dtype is tg.int64 and r.tolist() == [1, 2] and r is not i
    x = tg.tensor([NAN, 2.0, INF], dtype=tg.float64, device=device, requires_grad=True)
    tg.nan_to_num(x).sum().backward()
    assert host(x.grad).tolist() == [0.0, 1.0, 0.0]
    assert_grads_match(tg.nan_to_num, [t64((4,), device)])


# -- lerp / addcmul / addcdiv -----------------------------------------------------------------------

@pytest.mark.parametrize("weight", [0.25, 0.75, 1.0, -0.5, "tensor"])
def test_lerp(weight, device):
    a, b = t64((2, 3), device), t64((3,), device)
    w = t64((2, 1), device, -1.0, 2.0) if weight == "tensor" else weight
    wv = host(w) if weight == "tensor" else weight
    close(tg.lerp(a, b, w), host(a) + wv * (host(b) - host(a)))
    if weight == 1.0:  # exact at the end point
        assert host(tg.lerp(a, b, 1.0)).tolist() == np.broadcast_to(host(b), (2, 3)).tolist()
    args = [a, b] + ([w] if weight == "tensor" else [])
    assert_grads_match(lambda *t: tg.lerp(t[0], t[1], t[2] if len(t) > 2 else w), args)
    y = a.clone()
    assert y.lerp_(b, w) is y
    close(y, host(a) + wv * (host(b) - host(a)))


def test_lerp_errors():
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        tg.lerp(tg.zeros(3), tg.zeros(3, dtype=tg.float64), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype "
                                           "double"):
        tg.lerp(tg.zeros(3), tg.zeros(3), tg.zeros(3, dtype=tg.float64))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.lerp(tg.zeros(3, dtype=tg.int64), tg.zeros(3, dtype=tg.int64), 0.5)


@pytest.mark.parametrize("value", [1, 0.5, -2])
def test_addcmul_addcdiv(value, device):
    x, a, b = t64((2, 3), device), t64((3,), device), t64((2, 1), device, 0.5, 2.0)
    close(tg.addcmul(x, a, b, value=value), host(x) + value * host(a) * host(b))
    close(x.addcdiv(a, b, value=value), host(x) + value * host(a) / host(b))
    assert_grads_match(lambda *t: tg.addcmul(*t, value=value), [x, a, b])
    assert_grads_match(lambda *t: tg.addcdiv(*t, value=value), [x, a, b])
    second_order(lambda *t: tg.addcdiv(*t, value=value), [x, a, b])
    y = x.clone()
    assert y.addcmul_(a, b, value=value) is y
    close(y, host(x) + value * host(a) * host(b))
    y.addcdiv_(a, b, value=value)
    close(y, host(x) + value * host(a) * host(b) + value * host(a) / host(b))


def test_addc_dtypes_and_errors():
    assert tg.addcmul(tg.zeros(3), tg.ones(3, dtype=tg.int64),
                      tg.ones(3, dtype=tg.float64)).dtype is tg.float64
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer "
                                           "supported"):
        tg.addcdiv(tg.zeros(3), tg.ones(3, dtype=tg.int64), tg.ones(3, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Integer division"):
        tg.zeros(3).addcdiv_(tg.ones(3, dtype=tg.int64), tg.ones(3, dtype=tg.int64))
    with pytest.raises(TypeError, match=r"argument 'tensor1' \(position 2\) must be Tensor"):
        tg.addcmul(tg.zeros(3), 1.0, tg.ones(3))


def test_optimiser_style_update_under_no_grad():
    p = tg.ones(3, requires_grad=True)
    m, v = tg.tensor([0.5, 1.0, 2.0]), tg.tensor([4.0, 1.0, 0.25])
    with tg.no_grad():
        p.addcdiv_(m, v.sqrt(), value=-0.1)
    np.testing.assert_allclose(host(p), 1 - 0.1 * np.array([0.25, 1.0, 4.0]), rtol=1e-6)
    assert p.grad_fn is None and p.requires_grad


# -- xlogy / logaddexp ----------------------------------------------------------------------------

def test_xlogy(device):
    x = tg.tensor([0.0, 0.0, 2.0, 3.0, 0.0], dtype=tg.float64, device=device)
    y = tg.tensor([0.0, NAN, 1.5, 0.0, 4.0], dtype=tg.float64, device=device)
    r = host(tg.xlogy(x, y))
    assert r[0] == 0 and math.isnan(r[1]) and r[3] == -INF and r[4] == 0
    np.testing.assert_allclose(r[2], 2 * np.log(1.5))
    close(x.xlogy(2), host(x) * np.log(2))
    close(tg.xlogy(2, y[2:3]), [2 * np.log(1.5)])
    assert tg.xlogy(tg.tensor([1, 2]), 2).dtype is tg.float32
    assert_grads_match(tg.xlogy, [t64((3,), device), t64((3,), device, 0.5, 2.0)])
    # at x = 0 the gradients are 0, not NaN (log(0) is -inf)
    a = tg.zeros(2, dtype=tg.float64, device=device, requires_grad=True)
    b = tg.tensor([0.0, 2.0], dtype=tg.float64, device=device, requires_grad=True)
    tg.xlogy(a, b).sum().backward()
    assert host(a.grad).tolist() == [0.0, math.log(2.0)]  # as PyTorch
    assert host(b.grad).tolist() == [0.0, 0.0]  # (PyTorch: NaN at 0 / 0)
    close(tg.xlogy(tg.tensor([0.0, 1.0]), tg.tensor([-1.0, -1.0])).isnan(), [False, True])


def test_logaddexp(device):
    a = tg.tensor([0.0, 1000.0, -1000.0, INF, -INF, 1.0], dtype=tg.float64, device=device)
    b = tg.tensor([0.0, 1000.0, -1001.0, INF, -INF, -INF], dtype=tg.float64, device=device)
    close(tg.logaddexp(a, b), np.logaddexp(host(a), host(b)))
    x, y = t64((2, 3), device), t64((3,), device)
    close(x.logaddexp(y), np.logaddexp(host(x), host(y)))
    assert_grads_match(tg.logaddexp, [x, y])
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tg.logaddexp(tg.ones(3, dtype=tg.int64), tg.ones(3, dtype=tg.int64))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=5),
       st.lists(st.floats(-50, 50), min_size=1, max_size=1))
def test_logaddexp_broadcasts_like_numpy(xs, ys):
    a, b = np.array(xs), np.array(ys)
    close(tg.logaddexp(tg.tensor(a), tg.tensor(b)), np.logaddexp(a, b), rtol=1e-12)


# -- tritongrad.backends ------------------------------------------------------------------------

@pytest.fixture
def _precision():
    yield
    tg.set_float32_matmul_precision("highest")


def test_backends_flags(_precision):
    from tritongrad.backends import cudnn
    assert cudnn is tg.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == \
        (True, False, False, True)
    assert cudnn.is_available() is False and tg.backends.mps.is_available() is False
    m = tg.backends.cuda.matmul
    assert m.allow_tf32 is False and tg.get_float32_matmul_precision() == "highest"
    tg.set_float32_matmul_precision("medium")
    assert m.allow_tf32 is True
    m.allow_tf32 = False
    assert tg.get_float32_matmul_precision() == "highest"
    m.allow_tf32 = True
    assert tg.get_float32_matmul_precision() == "high"
    with pytest.raises(ValueError, match="'low' is not one of 'highest', 'high', or 'medium'"):
        tg.set_float32_matmul_precision("low")
    tg.backends.cudnn.benchmark = True  # a plain, settable attribute
    assert cudnn.benchmark is True
    cudnn.benchmark = False


def test_linalg_is_a_module():
    from tritongrad import linalg
    assert linalg is tg.linalg and "linalg" in tg.__all__ and "backends" in tg.__all__
    assert {"matmul", "matrix_norm", "norm", "vecdot", "vector_norm", "inv", "solve", "eigh",
            "svd", "qr", "cholesky"} <= set(linalg.__all__)
    assert all(callable(getattr(linalg, n)) for n in linalg.__all__)
    assert "vector_norm" not in tg.__all__  # torch.linalg only, as in PyTorch


# -- printing -------------------------------------------------------------------------------------

@pytest.mark.parametrize("values,text", [
    ([True, True], "tensor([True, True])"), ([True, False], "tensor([ True, False])"),
    ([False, False], "tensor([False, False])"), ([[True], [False]],
                                                 "tensor([[ True],\n        [False]])"),
    (True, "tensor(True)"), (False, "tensor(False)"),
])
def test_bool_tensors_print_as_pytorch(values, text):
    assert repr(tg.tensor(values)) == text


def test_equal(device):
    a = tg.tensor([1.0, 2.0, float("nan")], device=device)
    assert tg.equal(a[:2], tg.tensor([1, 2], device=device))  # promotes as == does
    assert not tg.equal(a, a)  # NaN is not equal to itself
    assert not tg.equal(a[:2], a[:1]) and a[:2].equal(a[:2].clone())
    with pytest.raises(TypeError,
                       match="equal\\(\\): argument 'other' \\(position 2\\) must be Tensor"):
        tg.equal(a, [1.0])
